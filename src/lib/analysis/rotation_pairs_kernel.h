/* The passes over the rows of the complement pairs
 * (src/lib/analysis/rotation_complement.c), for PAIR_LANES pairs at a time, one in
 * each lane of a vector: included twice, for AVX2 (VEC of four doubles, the
 * lanes in one vector) and for the x86-64 baseline (two doubles, the lanes
 * in two halves taken one after the other). Each lane does exactly the
 * arithmetic of a lone pair, in the same order, without fused
 * multiply-adds, so both builds give the same bits; the angles come from
 * SLEEF's atan2 variants without fused multiply-adds (AVX-512, AVX and
 * SSE2), which agree bit for bit.
 *
 * Expects: PAIR_LANES, CUTS, pair_lanes, cut_index_in, angles_avx512 (where
 * QK_VECTOR_BUILDS), and VEC, VEC_MASK, VEC_WIDTH, VEC_ATAN2(y, x),
 * VEC_SQRT(x), VEC_ANY(mask) (non-zero when a lane is set), KERNEL(name),
 * KERNEL_ATTR. */

/* The lanes of chunk c of row r. */
#define LANE_X(r) (*(const VEC *)(L->x + (size_t)(r) * PAIR_LANES + c))
#define LANE_Y(r) (*(const VEC *)(L->y + (size_t)(r) * PAIR_LANES + c))

/* The cut intervals (cut_index_in, as doubles) of the angles a: from the
 * angle alone where that is safe, else from the cut values. The guess is
 * off only for an angle within the roundings (below 1e-12 of an interval)
 * of a cut, so only lanes within 1e-9 of one take the slow way, which also
 * covers the clamped ends. */
static inline KERNEL_ATTR VEC KERNEL(cut_intervals)(VEC a, const double *bound)
{
    const VEC zero = {0}, ends = zero + (double)CUTS, one = zero + 1.0;
    VEC q = (a + M_PI) * (CUTS / (2.0 * M_PI));
    q = (VEC)((VEC_MASK)q & (q > zero)); /* below 0 (or NaN): 0 */
    VEC_MASK inside = q < ends;
    q = (VEC)(((VEC_MASK)q & inside) | ((VEC_MASK)ends & ~inside)); /* above: CUTS */
    VEC j = (q + 0x1p52) - 0x1p52;       /* q rounded to an integer (0 <= q <= CUTS) */
    j += (VEC)((VEC_MASK)one & (j < q)); /* rounded up */
    VEC gap = j - q;
    VEC_MASK near = (gap < zero + 1e-9) | (gap > zero + (1.0 - 1e-9));
    if (VEC_ANY(near))
        for (int f = 0; f < VEC_WIDTH; f++)
            if (near[f])
                j[f] = cut_index_in(bound, a[f]);
    return j;
}

/* Rows [from, to) of one class (cls) for the lanes of chunk c: the angle
 * sums and cut intervals, the radii and the class sums, a block of rows at
 * a time in three short loops (the angles; their sums and intervals; the
 * rest), so that the sums stay in registers. */
static inline KERNEL_ATTR void KERNEL(class_pass)(pair_lanes *L, int c, int cls, int64_t from,
                                                 int64_t to, double bins[][3][CUTS + 1])
{
    enum { BLOCK = 128 };
    if (to <= from)
        return;
    VEC x0 = LANE_X(from), y0 = LANE_Y(from), rho0, th, th2, th_t, sr, srr;
    for (int f = 0; f < VEC_WIDTH; f++) {
        rho0[f] = L->rho0[c + f];
        th[f] = L->th[c + f];
        th2[f] = L->th2[c + f];
        th_t[f] = L->th_t[c + f];
        sr[f] = L->sr[c + f];
        srr[f] = L->srr[c + f];
    }
    VEC sx = {0}, sy = {0}, sxx = {0}, sxy = {0}, syy = {0};
    typedef int lane_ints __attribute__((vector_size(VEC_WIDTH * sizeof(int))));
    VEC as[BLOCK];
    lane_ints js[BLOCK]; /* the cut intervals, as integers (one conversion a vector) */
    for (int64_t start = from; start < to; start += BLOCK) {
        int nb = (int)(to - start < BLOCK ? to - start : BLOCK);
        const double *tc = L->tc + start;
        /* atan2(SVD_2i+1, SVD_2i): the angle of pair i is atan2(w, u) */
#if VEC_WIDTH == PAIR_LANES && QK_VECTOR_BUILDS
        if (L->eight) /* a vector's rows follow each other: two vectors at a time */
            angles_avx512(L->x + start * PAIR_LANES, L->y + start * PAIR_LANES,
                          (int64_t)nb * PAIR_LANES, (double *)as);
        else
#endif
            for (int r = 0; r < nb; r++)
                as[r] = VEC_ATAN2(LANE_Y(start + r), LANE_X(start + r));
        for (int r = 0; r < nb; r++) {
            th += as[r];
            th2 += as[r] * as[r];
            th_t += as[r] * tc[r];
            js[r] = __builtin_convertvector(KERNEL(cut_intervals)(as[r], L->bound), lane_ints);
        }
        /* the interval sums with the radii and the class sums: the square
         * roots (the divider) run beside the loads and stores of the
         * interval sums */
        for (int r = 0; r < nb; r++) {
            for (int f = 0; f < VEC_WIDTH; f++) {
                int j = js[r][f];
                bins[f][0][j] += 1.0;
                bins[f][1][j] += tc[r];
                bins[f][2][j] += as[r][f];
            }
            VEC x = LANE_X(start + r), y = LANE_Y(start + r);
            VEC dr = VEC_SQRT(x * x + y * y) - rho0; /* shifted radius */
            sr += dr;
            srr += dr * dr;
            VEC dx = x - x0, dy = y - y0;
            sx += dx;
            sy += dy;
            sxx += dx * dx;
            sxy += dx * dy;
            syy += dy * dy;
        }
    }
    for (int f = 0; f < VEC_WIDTH; f++) {
        L->th[c + f] = th[f];
        L->th2[c + f] = th2[f];
        L->th_t[c + f] = th_t[f];
        L->sr[c + f] = sr[f];
        L->srr[c + f] = srr[f];
        L->cls[cls][c + f] = (class_sums){to - from, x0[f], y0[f], sx[f], sy[f], sxx[f], sxy[f],
                                          syy[f]};
    }
}

/* The first pass: every sum of the lanes, queries then keys. */
static KERNEL_ATTR void KERNEL(pair_pass)(pair_lanes *L)
{
    for (int c = 0; c < PAIR_LANES; c += VEC_WIDTH) {
        double bins[VEC_WIDTH][3][CUTS + 1];
        memset(bins, 0, sizeof bins);
        KERNEL(class_pass)(L, c, 0, 0, L->n_q, bins);
        KERNEL(class_pass)(L, c, 1, L->n_q, L->n, bins);
        for (int f = 0; f < VEC_WIDTH; f++)
            memcpy(L->bins[c + f], bins[f], sizeof bins[f]);
    }
}

/* The second pass: the rows of each class on the positive side of each
 * lane's discriminant, w_f.x > cut. */
static KERNEL_ATTR void KERNEL(pair_hits)(pair_lanes *L)
{
    for (int c = 0; c < PAIR_LANES; c += VEC_WIDTH) {
        VEC w0, w1, cut;
        for (int f = 0; f < VEC_WIDTH; f++) {
            w0[f] = L->wf[c + f][0];
            w1[f] = L->wf[c + f][1];
            cut[f] = L->cut[c + f];
        }
        for (int cls = 0; cls < 2; cls++) {
            VEC_MASK above = {0};
            for (int64_t r = cls ? L->n_q : 0; r < (cls ? L->n : L->n_q); r++)
                above -= w0 * LANE_X(r) + w1 * LANE_Y(r) > cut; /* a true lane is -1 */
            for (int f = 0; f < VEC_WIDTH; f++)
                L->above[cls][c + f] = above[f];
        }
    }
}

#undef LANE_X
#undef LANE_Y
