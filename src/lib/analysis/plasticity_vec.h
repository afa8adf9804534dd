/* Vectors of doubles for the plain loops of the plasticity stage: GCC does
 * not vectorise them at -O2 by itself. The arithmetic is lane-wise, so
 * every value is the one of the scalar loop.
 *
 * v2d: two doubles (SSE2 on x86-64, the native pair elsewhere).
 * v8d: eight doubles, for the loops over whole rows of a head; a function
 * marked QK_WIDE is compiled for AVX-512, for AVX2 and for the x86-64
 * baseline, and the best the machine runs is picked when the program
 * starts. Lanes never mix and no multiply-add is fused (the suite builds
 * with -ffp-contract=off), so every build gives the same bits. */
#ifndef QK_PLASTICITY_VEC_H
#define QK_PLASTICITY_VEC_H

#include <string.h>

typedef double v2d __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));
typedef double v8d __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__)
#define QK_WIDE __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define QK_WIDE
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
#define store8(p, v)                                                                         \
    do {                                                                                     \
        v8d store8_ = (v);                                                                   \
        memcpy((p), &store8_, sizeof store8_);                                               \
    } while (0)
/* eight floats, widened */
#define load8f(p)                                                                            \
    ({                                                                                       \
        v8f load8f_;                                                                         \
        memcpy(&load8f_, (p), sizeof load8f_);                                               \
        __builtin_convertvector(load8f_, v8d);                                               \
    })
#define splat8(x) ((v8d){0} + (double)(x))
/* the sum of the lanes of a, in a fixed order */
#define lanes_sum8(a)                                                                        \
    ({                                                                                       \
        v8d sum8_ = (a);                                                                     \
        ((sum8_[0] + sum8_[4]) + (sum8_[2] + sum8_[6])) +                                    \
            ((sum8_[1] + sum8_[5]) + (sum8_[3] + sum8_[7]));                                 \
    })

/* x . y over d values: eight partial sums, then the rest. */
static inline double dot8(const double *x, const double *y, int d)
{
    v8d acc = splat8(0.0);
    int c = 0;
    for (; c + 8 <= d; c += 8)
        acc += load8(x + c) * load8(y + c);
    double s = lanes_sum8(acc);
    for (; c < d; c++)
        s += x[c] * y[c];
    return s;
}

/* out = x H = x - 2 (x . w) w for one row of d (the Householder reflection
 * H = I - 2 w w^T; out may be x). */
static inline void reflect_row(const double *x, const double *w, int d, double *out)
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
