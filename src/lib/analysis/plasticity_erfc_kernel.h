/* The body of the vectorised erfc of plasticity_erfc.c, included
 * once per x86 instruction set. The includer defines KERNEL_ATTR (a target
 * attribute or nothing), KERNEL_SUFFIX, the vector type V of KERNEL_LANES
 * doubles and the operations on it (V_LOAD, V_STORE, V_SET1, V_ADD, V_SUB,
 * V_MUL, V_DIV, V_AND, V_ANDNOT, V_OR, V_GE, V_LT,
 * V_NAN, V_ANY, V_SHL52). Each lane goes through exactly the operations of
 * erfc_scalar, in the same order:
 * every instruction set gives their bits. UNROLL vectors are evaluated side
 * by side, so that the long dependency chains of the polynomials overlap. */

#define KNAME2(a, b) a##_##b
#define KNAME(a, b) KNAME2(a, b)
#define KERNEL_INLINE KERNEL_ATTR static inline __attribute__((always_inline))
#define UNROLL 4
#define STEP (UNROLL * KERNEL_LANES)
#define SELECT(mask, a, b) V_OR(V_AND(mask, a), V_ANDNOT(mask, b))
#define EACH for (int u = 0; u < UNROLL; u++)

KERNEL_INLINE void KNAME(horner, KERNEL_SUFFIX)(const double *c, int n, const V *s, V *out)
{
    V r[UNROLL];
    _Pragma("GCC unroll 4") EACH r[u] = V_SET1(c[n - 1]);
    for (int i = n - 2; i >= 0; i--) {
        V ci = V_SET1(c[i]);
        _Pragma("GCC unroll 4") EACH r[u] = V_ADD(V_MUL(r[u], s[u]), ci);
    }
    _Pragma("GCC unroll 4") EACH out[u] = r[u];
}
#define HORNER KNAME(horner, KERNEL_SUFFIX)

/* Two polynomials at once, c1 (n1 coefficients) at s1 and c2 (n2 <= n1) at
 * s2, each by Horner's rule as above: the two chains of multiply-adds are
 * independent, so they overlap. */
KERNEL_INLINE void KNAME(horner2, KERNEL_SUFFIX)(const double *c1, int n1, const V *s1, V *out1,
                                                const double *c2, int n2, const V *s2, V *out2)
{
    V r1[UNROLL], r2[UNROLL];
    _Pragma("GCC unroll 4") EACH r1[u] = V_SET1(c1[n1 - 1]);
    int i = n1 - 2;
    for (; i > n2 - 2; i--) {
        V ci = V_SET1(c1[i]);
        _Pragma("GCC unroll 4") EACH r1[u] = V_ADD(V_MUL(r1[u], s1[u]), ci);
    }
    _Pragma("GCC unroll 4") EACH r2[u] = V_SET1(c2[n2 - 1]);
    for (; i >= 0; i--) {
        V ci = V_SET1(c1[i]), di = V_SET1(c2[i]);
        _Pragma("GCC unroll 4") EACH
        {
            r1[u] = V_ADD(V_MUL(r1[u], s1[u]), ci);
            r2[u] = V_ADD(V_MUL(r2[u], s2[u]), di);
        }
    }
    _Pragma("GCC unroll 4") EACH
    {
        out1[u] = r1[u];
        out2[u] = r2[u];
    }
}
#define HORNER2 KNAME(horner2, KERNEL_SUFFIX)

/* erfc of UNROLL vectors of x >= 0 (+inf allowed; NaN gives NaN). */
KERNEL_INLINE void KNAME(erfc_pos, KERNEL_SUFFIX)(const V *x, V *out)
{
    V xc[UNROLL], beyond[UNROLL], high[UNROLL], sl[UNROLL], sh[UNROLL], g[UNROLL];
    int any_high = 0;
    _Pragma("GCC unroll 4") EACH
    {
        beyond[u] = V_GE(x[u], V_SET1(ERFC_TOP));
        xc[u] = SELECT(beyond[u], V_SET1(ERFC_TOP), x[u]);
        V t = V_DIV(V_SET1(1.0), V_ADD(V_SET1(1.0), V_MUL(xc[u], V_SET1(ERFC_T_SCALE))));
        high[u] = V_GE(xc[u], V_SET1(ERFC_SPLIT));
        any_high |= V_ANY(high[u]);
        sl[u] = V_MUL(V_SUB(t, V_SET1(ERFC_LOW_CENTRE)), V_SET1(ERFC_LOW_WIDTH));
        sh[u] = V_MUL(V_SUB(t, V_SET1(ERFC_HIGH_CENTRE)), V_SET1(ERFC_HIGH_WIDTH));
    }
    /* exp(-x^2) = 2^-k exp(-r), x^2 = xh^2 + xl (xh + x) with xh^2 exact */
    V r[UNROLL], k[UNROLL], e[UNROLL];
    _Pragma("GCC unroll 4") EACH
    {
        V xh = V_AND(xc[u], V_HALF_MASK);
        V yh = V_MUL(xh, xh);
        k[u] = V_SUB(V_ADD(V_MUL(yh, V_SET1(ERFC_LOG2E)), V_SET1(ERFC_MAGIC)),
                     V_SET1(ERFC_MAGIC));
        r[u] = V_ADD(V_SUB(V_SUB(yh, V_MUL(k[u], V_SET1(ERFC_LN2_HI))),
                           V_MUL(k[u], V_SET1(ERFC_LN2_LO))),
                     V_MUL(V_SUB(xc[u], xh), V_ADD(xh, xc[u])));
    }
    /* G of the low range with exp(-r), then the high range if a lane needs
     * it (rare in the data) */
    HORNER2(erfc_low, ERFC_N_LOW, sl, g, erfc_exp, ERFC_N_EXP, r, e);
    if (any_high) {
        V gh[UNROLL];
        HORNER(erfc_high, ERFC_N_HIGH, sh, gh);
        _Pragma("GCC unroll 4") EACH g[u] = SELECT(high[u], gh[u], g[u]);
    }
    _Pragma("GCC unroll 4") EACH
    {
        /* 2^-k from its exponent bits: (1023 - k) + 1.5 2^52 holds 1023 - k
         * in its low bits, shifted into the exponent field */
        V scale = V_SHL52(V_ADD(V_SUB(V_SET1(1023.0), k[u]), V_SET1(ERFC_MAGIC)));
        V y = V_MUL(V_MUL(g[u], e[u]), scale);
        y = V_ANDNOT(beyond[u], y);
        out[u] = SELECT(V_NAN(x[u]), x[u], y);
    }
}
#define ERFC_POS KNAME(erfc_pos, KERNEL_SUFFIX)

/* n: a multiple of STEP */
KERNEL_ATTR static void KNAME(erfc_run, KERNEL_SUFFIX)(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i += STEP) {
        V a[UNROLL], neg[UNROLL], r[UNROLL];
        _Pragma("GCC unroll 4") EACH
        {
            V v = V_LOAD(x + i + u * KERNEL_LANES);
            neg[u] = V_LT(v, V_SET1(0.0));
            a[u] = SELECT(neg[u], V_SUB(V_SET1(0.0), v), v);
        }
        ERFC_POS(a, r);
        _Pragma("GCC unroll 4") EACH
        {
            V out = SELECT(neg[u], V_SUB(V_SET1(2.0), r[u]), r[u]);
            V_STORE(y + i + u * KERNEL_LANES, out);
        }
    }
}

#undef HORNER
#undef ERFC_POS
#undef EACH
#undef SELECT
#undef STEP
#undef UNROLL
#undef KERNEL_INLINE
#undef KNAME
#undef KNAME2
