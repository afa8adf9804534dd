/* The level of the vector code (include/qk/simd.h). */
#include "qk/simd.h"

#include <stdlib.h>
#include <string.h>

/* QK_ISA_*, or -1 before the first call */
static int isa_choice = -1;

static const char *const isa_names[] = {
    [QK_ISA_SCALAR] = "scalar", [QK_ISA_AVX2] = "avx2", [QK_ISA_AVX512] = "avx512"};

static int best_isa(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
        return QK_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return QK_ISA_AVX2;
#endif
    return QK_ISA_SCALAR;
}

/* The level the environment variable QK_ISA names: -1 when it is unset or
 * empty, -2 when it names none. */
static int env_isa(void)
{
    const char *name = getenv("QK_ISA");
    if (!name || !*name)
        return -1;
    for (int level = 0; level < (int)(sizeof isa_names / sizeof *isa_names); level++)
        if (strcmp(name, isa_names[level]) == 0)
            return level;
    return -2;
}

const char *qk_isa_name(int level)
{
    return level >= 0 && level <= QK_ISA_AVX512 ? isa_names[level] : "unknown";
}

int qk_isa_best(void)
{
    return best_isa();
}

int qk_isa_check(qk_err *err)
{
    if (env_isa() == -2)
        return qk_fail(err, "QK_ISA=%s: not an instruction set (avx512, avx2 or scalar)",
                       getenv("QK_ISA"));
    return qk_isa();
}

int qk_isa(void)
{
    int c = __atomic_load_n(&isa_choice, __ATOMIC_RELAXED);
    if (c < 0) {
        /* the best the CPU has, or the lower level QK_ISA asks for (an
         * unknown name, which the programs refuse, asks for nothing) */
        c = best_isa();
        int want = env_isa();
        if (want >= 0 && want < c)
            c = want;
        __atomic_store_n(&isa_choice, c, __ATOMIC_RELAXED);
    }
    return c;
}

void qk_isa_reread(void)
{
    __atomic_store_n(&isa_choice, -1, __ATOMIC_RELAXED);
}

int qk_isa_use(int want)
{
    int before = qk_isa();
    int best = best_isa();
    __atomic_store_n(&isa_choice, want < best ? want : best, __ATOMIC_RELAXED);
    return before;
}

int qk_simd_avx2(void)
{
    return qk_isa() >= QK_ISA_AVX2;
}
