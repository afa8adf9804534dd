/* The sums of the omega fit for one batch of LANES frequencies
 * (src/lib/analysis/rotation_omega.c), written once for a vector type VEC of
 * VEC_WIDTH doubles: rotation_omega.c includes this file twice, for AVX2
 * (four doubles, the batch in one vector) and for the x86-64 baseline
 * (SSE2, two, the batch in two halves taken one after the other). Each
 * lane does exactly the arithmetic of a lone frequency in the same order,
 * without fused multiply-adds, so both builds give the same bits.
 *
 * Expects: LANES, ENTRY (doubles per table entry: 4 * LANES), ANCHOR_EVERY,
 * fit_state and kind_rows, and VEC, VEC_WIDTH, KERNEL(name), KERNEL_ATTR. */

/* tab[j][0..3][f] = cos(j step_f), sin(j step_f), cos(2 j step_f),
 * sin(2 j step_f) for j < n and the lanes f of chunk c: a rotation
 * recurrence anchored on exact values every ANCHOR_EVERY entries, the
 * double angle from the single one. */
static inline KERNEL_ATTR void KERNEL(phase_chunk)(const double *step, int32_t n, int c,
                                                  double *tab)
{
    VEC cs, sn;
    for (int f = 0; f < VEC_WIDTH; f++) {
        cs[f] = cos(step[c + f]);
        sn[f] = sin(step[c + f]);
    }
    for (int32_t j = 0; j < n; j++) {
        double *e = tab + ENTRY * (size_t)j + c;
        VEC *e0 = (VEC *)e, *e1 = (VEC *)(e + LANES);
        if (j % ANCHOR_EVERY == 0) {
            for (int f = 0; f < VEC_WIDTH; f++) {
                (*e0)[f] = cos(step[c + f] * j);
                (*e1)[f] = sin(step[c + f] * j);
            }
        } else {
            VEC co = *(const VEC *)(e - ENTRY), si = *(const VEC *)(e - ENTRY + LANES);
            *e0 = co * cs - si * sn;
            *e1 = si * cs + co * sn;
        }
        *(VEC *)(e + 2 * LANES) = (*e0 - *e1) * (*e0 + *e1);
        *(VEC *)(e + 3 * LANES) = 2.0 * *e0 * *e1;
    }
}

/* The table entry of row i, component comp, at chunk c. */
#define TAB(i, comp) (*(const VEC *)(lo + ENTRY * (size_t)k->lo[i] + (comp) * LANES))

/* Over the rows of one hi: the sums of e^{i w lo} (0, 1) and e^{2 i w lo}
 * (2, 3), which depend on the positions alone and are skipped when the
 * caller has them (when positions is 0), and y e^{i w lo} (4, 5). Two rows per
 * iteration into two sets of accumulators (even and odd rows), so that
 * consecutive additions do not wait for each other. The y sums take a
 * second pass over the rows: both together would need more vector
 * registers than there are. */
static inline KERNEL_ATTR void KERNEL(group_sums)(const kind_rows *k, int64_t from, int64_t to,
                                                 const double *lo, int positions, VEC out[6])
{
    int64_t i;
    if (positions) {
        VEC a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
        for (i = from; i + 2 <= to; i += 2) {
            a0 += TAB(i, 0);
            b0 += TAB(i + 1, 0);
            a1 += TAB(i, 1);
            b1 += TAB(i + 1, 1);
            a2 += TAB(i, 2);
            b2 += TAB(i + 1, 2);
            a3 += TAB(i, 3);
            b3 += TAB(i + 1, 3);
        }
        if (i < to) {
            a0 += TAB(i, 0);
            a1 += TAB(i, 1);
            a2 += TAB(i, 2);
            a3 += TAB(i, 3);
        }
        out[0] = a0 + b0;
        out[1] = a1 + b1;
        out[2] = a2 + b2;
        out[3] = a3 + b3;
    }

    VEC a4 = {0}, a5 = {0}, b4 = {0}, b5 = {0};
    for (i = from; i + 2 <= to; i += 2) {
        double y0 = k->y[i], y1 = k->y[i + 1];
        a4 += y0 * TAB(i, 0);
        b4 += y1 * TAB(i + 1, 0);
        a5 += y0 * TAB(i, 1);
        b5 += y1 * TAB(i + 1, 1);
    }
    if (i < to) {
        a4 += k->y[i] * TAB(i, 0);
        a5 += k->y[i] * TAB(i, 1);
    }
    out[4] = a4 + b4;
    out[5] = a5 + b5;
}

#undef TAB

/* The sums over one kind's rows of cos, sin (sc, ss), cos 2, sin 2 (dc, ds)
 * and y cos, y sin (syc, sys) of w t', for the lanes of chunk c into
 * s[0..5][c ..]: each hi's group sums turned by e^{i w hi stride}. When
 * positions is 0 only the y sums (s[4], s[5]) are made. */
static inline KERNEL_ATTR void KERNEL(kind_sums)(const kind_rows *k, const fit_state *st, int c,
                                                int positions, double s[6][LANES])
{
    VEC sc = {0}, ss = {0}, dc = {0}, ds = {0}, syc = {0}, sys = {0};
    for (int32_t h = 0; h < st->n_hi; h++) {
        if (k->start[h] == k->start[h + 1])
            continue;
        VEC g[6];
        KERNEL(group_sums)(k, k->start[h], k->start[h + 1], st->lo_tab + c, positions, g);
        const double *e = st->hi_tab + ENTRY * (size_t)h + c;
        VEC e0 = *(const VEC *)e, e1 = *(const VEC *)(e + LANES);
        if (positions) {
            VEC e2 = *(const VEC *)(e + 2 * LANES), e3 = *(const VEC *)(e + 3 * LANES);
            sc += e0 * g[0] - e1 * g[1];
            ss += e1 * g[0] + e0 * g[1];
            dc += e2 * g[2] - e3 * g[3];
            ds += e3 * g[2] + e2 * g[3];
        }
        syc += e0 * g[4] - e1 * g[5];
        sys += e1 * g[4] + e0 * g[5];
    }
    const VEC all[6] = {sc, ss, dc, ds, syc, sys};
    for (int q = positions ? 0 : 4; q < 6; q++)
        for (int f = 0; f < VEC_WIDTH; f++)
            s[q][c + f] = all[q][f];
}

/* The tables of the frequencies w[] and the sums of both kinds (when
 * positions is 0, the y sums alone). */
static KERNEL_ATTR void KERNEL(batch_sums)(fit_state *st, const double w[LANES], int positions,
                                           double sums[2][6][LANES])
{
    double w_hi[LANES];
    for (int f = 0; f < LANES; f++)
        w_hi[f] = w[f] * st->stride;
    for (int c = 0; c < LANES; c += VEC_WIDTH) {
        KERNEL(phase_chunk)(w, st->stride, c, st->lo_tab);
        KERNEL(phase_chunk)(w_hi, st->n_hi, c, st->hi_tab);
        KERNEL(kind_sums)(&st->kind[0], st, c, positions, sums[0]);
        KERNEL(kind_sums)(&st->kind[1], st, c, positions, sums[1]);
    }
}
