/* The choice of the vectorised build (include/qk/simd.h). */
#include "qk/simd.h"

#include <stdlib.h>
#include <string.h>

int qk_simd_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const char *force = getenv("QK_SIMD");
    if (force && strcmp(force, "generic") == 0)
        return 0;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}
