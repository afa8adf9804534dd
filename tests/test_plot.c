/* How text reaches a gnuplot script (src/lib/report/plot.c): markup kept, or
 * drawn as written (in a string or a quoted field of inline data, and in
 * the label of a tic list, which gnuplot reads as a format). */
#include <string.h>

#include "qk/plot.h"
#include "testutil.h"

static const char *put(const char *text, int how)
{
    static char out[1024];
    FILE *fp = fmemopen(out, sizeof out, "w");
    qk_plot_put_text(fp, text, strlen(text), how);
    fclose(fp);
    return out;
}

#define ODD "<b>My</b> & \"Model\" 'x' 50% $x_1$ {a}#^~\\ @"

START_TEST(test_put_text)
{
    /* markup: only what ends or escapes the string */
    ck_assert_str_eq(put("{/:Italic r}_q \"a\" \\n", QK_PLOT_MARKUP),
                     "{/:Italic r}_q \\\"a\\\" \\\\n");
    /* literal: every markup character escaped for the enhanced-text mode
     * (\\_ in the script, \_ in the string, _ drawn); a quote as \042,
     * which a field of inline data reads too; a backslash drawn as one */
    ck_assert_str_eq(put(ODD, QK_PLOT_LITERAL),
                     "<b>My</b> \\\\& \\042Model\\042 'x' 50% $x\\\\_1$ \\\\{a\\\\}#\\\\^\\\\~"
                     "\\\\\\\\ \\\\@");
    ck_assert_str_eq(put(ODD, QK_PLOT_LITERAL | QK_PLOT_FORMAT),
                     "<b>My</b> \\\\& \\042Model\\042 'x' 50%% $x\\\\_1$ \\\\{a\\\\}#\\\\^\\\\~"
                     "\\\\\\\\ \\\\@");
    /* text without markup is written as it is */
    ck_assert_str_eq(put("Llama-3.2-3B (n = 3) S1-40K \xe2\x86\x92", QK_PLOT_LITERAL),
                     "Llama-3.2-3B (n = 3) S1-40K \xe2\x86\x92");
    /* at most n bytes */
    FILE *fp;
    char out[32];
    fp = fmemopen(out, sizeof out, "w");
    qk_plot_put_text(fp, "a_b_c", 3, QK_PLOT_LITERAL);
    fclose(fp);
    ck_assert_str_eq(out, "a\\\\_b");
}
END_TEST

START_TEST(test_enhanced_escape)
{
    char out[64];
    ck_assert_uint_eq(qk_plot_enhanced_escape(out, sizeof out, "x_1 {a}^~&@\\"), 20);
    ck_assert_str_eq(out, "x\\_1 \\{a\\}\\^\\~\\&\\@\\\\");
    /* cut to fit, never inside a character or between a backslash and
     * what it escapes */
    ck_assert_uint_eq(qk_plot_enhanced_escape(out, 4, "ab\xc3\xa9z"), 2);
    ck_assert_str_eq(out, "ab");
    ck_assert_uint_eq(qk_plot_enhanced_escape(out, 4, "ab_c"), 2);
    ck_assert_str_eq(out, "ab");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plot");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_put_text);
    tcase_add_test(tc, test_enhanced_escape);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
