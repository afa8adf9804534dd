/* Helpers shared by the Check test programs. */
#ifndef QK_TESTUTIL_H
#define QK_TESTUTIL_H

#include <check.h>
#include <math.h>
#include <stdlib.h>

/* Runs one suite and returns the process exit status. */
static inline int qk_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Relative closeness for sums compared against truth files. */
#define ck_assert_rel(a, b, tol)                                               \
    do {                                                                       \
        double _a = (a), _b = (b);                                             \
        double _s = fabs(_b) > 1.0 ? fabs(_b) : 1.0;                           \
        ck_assert_msg(fabs(_a - _b) <= (tol) * _s,                             \
                      "%s = %.17g, expected %.17g", #a, _a, _b);              \
    } while (0)

#endif
