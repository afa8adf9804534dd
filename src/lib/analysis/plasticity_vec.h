/* Vectors of doubles for the plain loops of the plasticity stage: GCC does
 * not vectorise them at -O2 by itself. The arithmetic is lane-wise, so
 * every value is the one of the scalar loop.
 *
 * v2d: two doubles (SSE2 on x86-64, the native pair elsewhere).
 * v8d: eight doubles, for the loops over whole rows of a head. Such a loop
 * is the body of a QK_WIDE_BODY function, which QK_WIDE_CLONES compiles for
 * AVX-512, for AVX2 and for the x86-64 baseline; each call runs the build of
 * the instruction set the kernels use (qk_isa: the best the machine
 * runs, or the lower one QK_ISA asks for). Lanes never mix and no
 * multiply-add is fused (the suite builds with -ffp-contract=off), so every
 * build gives the same bits. */
#ifndef QK_PLASTICITY_VEC_H
#define QK_PLASTICITY_VEC_H

#include <string.h>

#include "plasticity_internal.h"

typedef double v2d __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));
typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));

#define QK_WIDE_BODY static inline __attribute__((always_inline))

/* The three builds of the QK_WIDE_BODY function name##_body and the function
 * `linkage type name params` that calls the one of qk_isa() (args:
 * the names of params, in parentheses). The body is inlined into each. */
#if defined(__x86_64__) && defined(__GNUC__)
#define QK_WIDE_CLONES(linkage, type, name, params, args)                                     \
    __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))) static type       \
        name##_avx512 params { return name##_body args; }                                    \
    __attribute__((target("avx2,fma"))) static type name##_avx2 params                       \
    {                                                                                        \
        return name##_body args;                                                             \
    }                                                                                        \
    linkage type name params                                                                 \
    {                                                                                        \
        int isa_ = qk_isa();                                                                 \
        if (isa_ == QK_ISA_AVX512)                                                           \
            return name##_avx512 args;                                                       \
        if (isa_ == QK_ISA_AVX2)                                                             \
            return name##_avx2 args;                                                         \
        return name##_body args;                                                             \
    }
#else
#define QK_WIDE_CLONES(linkage, type, name, params, args)                                     \
    linkage type name params { return name##_body args; }
#endif

static inline v2d load2(const double *p)
{
    v2d v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store2(double *p, v2d v)
{
    memcpy(p, &v, sizeof v);
}

/* two floats, widened */
static inline v2d load2f(const float *p)
{
    v2f v;
    memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, v2d);
}

/* The v8d helpers are macros, not functions: no vector of 8 doubles is
 * passed or returned through a call, which a build without AVX-512 would
 * do differently (clang refuses it, GCC warns). */
#define load8(p)                                                                             \
    ({                                                                                       \
        v8d load8_;                                                                          \
        memcpy(&load8_, (p), sizeof load8_);                                                 \
        load8_;                                                                              \
    })
/* Where a vector of 8 doubles takes two registers (AVX2, the baseline),
 * GCC 12 copies one that is stored, or that lives from one iteration of a
 * loop to the next, through the stack: with that a head took a quarter
 * longer on AVX2, its passes over the rows four times as long. So a v8d is
 * stored in halves (the AVX-512 build joins them again into one store), and
 * a sum over a loop is an acc8, two halves. lo4 and hi4 take a variable. */
#define lo4(v) ((v4d){(v)[0], (v)[1], (v)[2], (v)[3]})
#define hi4(v) ((v4d){(v)[4], (v)[5], (v)[6], (v)[7]})
#define store8(p, v)                                                                         \
    do {                                                                                     \
        v8d store8_ = (v);                                                                   \
        v4d store8_lo_ = lo4(store8_), store8_hi_ = hi4(store8_);                            \
        memcpy((p), &store8_lo_, sizeof store8_lo_);                                         \
        memcpy((double *)(p) + 4, &store8_hi_, sizeof store8_hi_);                           \
    } while (0)
#define load4(p)                                                                             \
    ({                                                                                       \
        v4d load4_;                                                                          \
        memcpy(&load4_, (p), sizeof load4_);                                                 \
        load4_;                                                                              \
    })

/* eight running sums: lanes 0-3 and 4-7 */
typedef struct acc8 {
    v4d lo, hi;
} acc8;
#define acc8_zero() ((acc8){{0.0}, {0.0}})
#define acc8_add(a, v)                                                                       \
    do {                                                                                     \
        v8d acc8_v_ = (v);                                                                   \
        (a).lo += lo4(acc8_v_);                                                              \
        (a).hi += hi4(acc8_v_);                                                              \
    } while (0)
/* the sum of the eight lanes of a, in a fixed order */
#define acc8_sum(a)                                                                          \
    ((((a).lo[0] + (a).hi[0]) + ((a).lo[2] + (a).hi[2])) +                                   \
     (((a).lo[1] + (a).hi[1]) + ((a).lo[3] + (a).hi[3])))
/* eight floats, widened */
#define load8f(p)                                                                            \
    ({                                                                                       \
        v8f load8f_;                                                                         \
        memcpy(&load8f_, (p), sizeof load8f_);                                               \
        __builtin_convertvector(load8f_, v8d);                                               \
    })
#define splat8(x) ((v8d){0} + (double)(x))

/* x . y over d values: eight partial sums (c mod 8), then the rest. */
QK_WIDE_BODY double dot8(const double *x, const double *y, int d)
{
    acc8 acc = acc8_zero();
    int c = 0;
    for (; c + 8 <= d; c += 8) {
        acc.lo += load4(x + c) * load4(y + c);
        acc.hi += load4(x + c + 4) * load4(y + c + 4);
    }
    double s = acc8_sum(acc);
    for (; c < d; c++)
        s += x[c] * y[c];
    return s;
}

/* out = x H = x - 2 (x . w) w for one row of d (the Householder reflection
 * H = I - 2 w w^T; out may be x). */
QK_WIDE_BODY void reflect_row(const double *x, const double *w, int d, double *out)
{
    double two_dot = 2.0 * dot8(x, w, d);
    v8d two = splat8(two_dot);
    int c = 0;
    for (; c + 8 <= d; c += 8)
        store8(out + c, load8(x + c) - two * load8(w + c));
    for (; c < d; c++)
        out[c] = x[c] - two_dot * w[c];
}

#endif
