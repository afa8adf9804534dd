/* The small numerical pieces of the plasticity stage: the normal CDF,
 * orientation, the Householder reflection, component weights and sample
 * skewness/kurtosis (docs/plasticity.md, "Per head" steps 2-6 and the
 * diagnostics). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/moments.h"
#include "qk/plasticity.h"
#include "plasticity_internal.h"
#include "plasticity_vec.h"

double qk_plast_phi(double z)
{
    return 0.5 * qk_plast_erfc(-z * M_SQRT1_2);
}

double qk_plast_pp_z(double z)
{
    return qk_plast_pp(z, 1.0);
}

/* ---- orientation (step 2) -------------------------------------------------------- */

static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int64_t qk_plast_bucket_slots(const int32_t *bucket, int64_t n, int64_t *slot)
{
    int32_t *ids = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    memcpy(ids, bucket, (size_t)n * sizeof *ids);
    qsort(ids, (size_t)n, sizeof *ids, cmp_int32);
    int64_t nb = 0;
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || ids[i] != ids[nb - 1])
            ids[nb++] = ids[i];
    for (int64_t i = 0; i < n; i++) {
        const int32_t *hit = bsearch(&bucket[i], ids, (size_t)nb, sizeof *ids, cmp_int32);
        slot[i] = hit - ids;
    }
    free(ids);
    return nb;
}

void qk_plast_orientation_sign(const double *part, const int64_t *count, int64_t nb, int d,
                               double *sign)
{
    double *total = qk_calloc((size_t)(d > 0 ? d : 1), sizeof *total);
    for (int64_t b = 0; b < nb; b++) {
        double inv = 1.0 / (double)count[b];
        for (int c = 0; c < d; c++)
            total[c] += part[b * d + c] * inv;
    }
    for (int c = 0; c < d; c++)
        sign[c] = total[c] < 0.0 ? -1.0 : 1.0;
    free(total);
}

void qk_plast_orientation(const double *k, int64_t n, int d, const int32_t *bucket,
                          double *sign)
{
    int64_t *slot = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *slot);
    int64_t nb = qk_plast_bucket_slots(bucket, n, slot);
    double *part = qk_calloc((size_t)(nb > 0 ? nb : 1) * (size_t)d, sizeof *part);
    int64_t *count = qk_calloc((size_t)(nb > 0 ? nb : 1), sizeof *count);
    for (int64_t i = 0; i < n; i++) {
        for (int c = 0; c < d; c++)
            part[slot[i] * d + c] += k[i * d + c];
        count[slot[i]]++;
    }
    qk_plast_orientation_sign(part, count, nb, d, sign);
    free(count);
    free(part);
    free(slot);
}

/* ---- Householder basis (step 4) ------------------------------------------------------- */

int qk_plast_householder(const double *beta, int d, double *w)
{
    double norm = cblas_dnrm2(d, beta, 1);
    if (!(norm >= 1e-12))
        return 0;
    /* w = (u - e1) / |u - e1| with u = beta / |beta| */
    double len2 = 0.0;
    for (int c = 0; c < d; c++) {
        double v = beta[c] / norm - (c == 0 ? 1.0 : 0.0);
        len2 += v * v;
    }
    double len = sqrt(len2);
    if (!(len >= 1e-12))
        return 0;
    for (int c = 0; c < d; c++)
        w[c] = (beta[c] / norm - (c == 0 ? 1.0 : 0.0)) / len;
    return 1;
}

QK_WIDE_BODY void qk_plast_reflect_rows_body(const double *x, int64_t n, int d, const double *w,
                                             double *out)
{
    for (int64_t i = 0; i < n; i++)
        reflect_row(x + i * d, w, d, out + i * d);
}
QK_WIDE_CLONES(, void, qk_plast_reflect_rows,
               (const double *x, int64_t n, int d, const double *w, double *out),
               (x, n, d, w, out))

/* ---- component weights (step 6) --------------------------------------------------------- */

void qk_plast_component_weights(const double *r2, int d, double *w)
{
    double sum = 0.0;
    for (int c = 0; c < d; c++)
        sum += r2[c] > 0.0 ? r2[c] : 0.0;
    for (int c = 0; c < d; c++)
        w[c] = sum > 0.0 ? (r2[c] > 0.0 ? r2[c] : 0.0) / sum : 1.0 / d;
}

/* ---- skewness and kurtosis ---------------------------------------------------------------- */

/* Skewness and kurtosis from n, the mean and the sums of the 2nd to 4th
 * powers of the deviations. */
void qk_plast_skew_kurt_finish(int64_t n, double mean, double m2, double m3, double m4,
                               double *skew, double *kurt)
{
    *skew = *kurt = NAN;
    if (n < 3)
        return;
    m2 /= (double)n;
    m3 /= (double)n;
    m4 /= (double)n;
    /* a constant column (up to rounding) has no shape */
    double tiny = 1e-15 * fabs(mean);
    if (!(m2 > tiny * tiny) || m2 == 0.0)
        return;
    double nn = (double)n;
    /* the adjusted Fisher-Pearson G1 and the unbiased excess kurtosis G2 */
    *skew = sqrt(nn * (nn - 1.0)) / (nn - 2.0) * m3 / pow(m2, 1.5);
    if (n >= 4)
        *kurt = ((nn * nn - 1.0) * m4 / (m2 * m2) - 3.0 * (nn - 1.0) * (nn - 1.0)) /
               ((nn - 2.0) * (nn - 3.0));
}

void qk_plast_skew_kurt(const double *x, int64_t n, double *skew, double *kurt)
{
    *skew = *kurt = NAN;
    if (n < 3)
        return;
    double mean = 0.0;
    for (int64_t i = 0; i < n; i++)
        mean += x[i];
    mean /= (double)n;
    double m2 = 0.0, m3 = 0.0, m4 = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double dev = x[i] - mean, dev2 = dev * dev;
        m2 += dev2;
        m3 += dev2 * dev;
        m4 += dev2 * dev2;
    }
    qk_plast_skew_kurt_finish(n, mean, m2, m3, m4, skew, kurt);
}

