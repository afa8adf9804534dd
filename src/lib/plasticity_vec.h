/* Two doubles side by side for the plain loops of the plasticity stage
 * (SSE2 on x86-64, the native pair elsewhere): GCC does not vectorise them
 * at -O2 by itself. The arithmetic is lane-wise, so every value is the one
 * of the scalar loop. */
#ifndef QK_PLASTICITY_VEC_H
#define QK_PLASTICITY_VEC_H

#include <string.h>

typedef double v2d __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));

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

#endif
