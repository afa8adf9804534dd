/* The per-model summary of the rotation tables (rotation.md 3.3,
 * docs/rotation.md): the means, medians, fractions and quartiles the
 * figures aggregate, from the merged per-head table. */
#include "qk/rotation.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/table.h"

/* The per-head columns the summary reads. */
enum {
    C_MODEL, C_FAMILY, C_R_Q, C_R_K, C_VAR_A, C_VAR_B, C_PLANE, C_SEP, C_BIAS, C_ALPHA_K,
    C_MU_Q_A, C_POS_R, C_N_ACTIVE, C_ACTIVE_VAR, C_RING_ACC, C_SLOPE_RATIO, C_BIAS_RANGE,
    N_INPUT
};
static const char *const input_names[N_INPUT] = {
    "model", "family", "r_q_a", "r_k_a", "var_frac_a", "var_frac_b", "plane_var_fraction",
    "separation_strength", "bias_strength", "alpha_k", "mu_q_a", "position_r",
    "n_active_planes", "active_var_frac", "ring_cls_acc", "slope_ratio", "bias_range"};

typedef struct summary_input {
    const qk_table *t;
    int col[N_INPUT];
} summary_input;

static double cell(const summary_input *in, int row, int which)
{
    const char *s = qk_table_cell(in->t, row, in->col[which]);
    char *end;
    double v = strtod(s, &end);
    return end == s || *end ? NAN : v;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The values of one column over the given rows, NaN dropped, optionally
 * as magnitudes; returns the count. */
static int gather(const summary_input *in, const int *rows, int n, int which, int magnitude,
                  double *out)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        double v = cell(in, rows[i], which);
        if (!isnan(v))
            out[k++] = magnitude ? fabs(v) : v;
    }
    return k;
}

static double mean_of(const double *v, int n)
{
    if (n == 0)
        return NAN;
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s / n;
}

/* Quantile with linear interpolation between order statistics (numpy's
 * default); v is sorted in place. */
static double quantile_of(double *v, int n, double p)
{
    if (n == 0)
        return NAN;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    double h = (n - 1) * p;
    int lo = (int)floor(h);
    if (lo >= n - 1)
        return v[n - 1];
    double frac = h - lo;
    return frac == 0.0 ? v[lo] : v[lo] + frac * (v[lo + 1] - v[lo]);
}

/* Share of the defined values that pass the test (> 0). */
static double frac_positive(const double *v, int n)
{
    if (n == 0)
        return NAN;
    int k = 0;
    for (int i = 0; i < n; i++)
        k += v[i] > 0.0;
    return (double)k / n;
}

/* Pearson r of bias_strength with separation_strength over the rows. */
static double bias_sep_r(const summary_input *in, const int *rows, int n)
{
    double sx = 0, sy = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        double x = cell(in, rows[i], C_SEP), y = cell(in, rows[i], C_BIAS);
        if (isfinite(x) && isfinite(y)) {
            sx += x;
            sy += y;
            k++;
        }
    }
    if (k < 2)
        return NAN;
    double mx = sx / k, my = sy / k, sxx = 0, syy = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        double x = cell(in, rows[i], C_SEP), y = cell(in, rows[i], C_BIAS);
        if (isfinite(x) && isfinite(y)) {
            sxx += (x - mx) * (x - mx);
            syy += (y - my) * (y - my);
            sxy += (x - mx) * (y - my);
        }
    }
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

static void put_text(FILE *fp, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

static void put_num(FILE *fp, double v)
{
    fputc(',', fp);
    qk_fprint_double(fp, v);
}

static const char summary_header[] =
    "model,family,n_heads,mean_abs_r_q_a,mean_abs_r_k_a,mean_var_frac_a,mean_var_frac_b,"
    "mean_plane_var_fraction,mean_separation_strength,mean_bias_strength,mean_abs_alpha_k,"
    "mean_mu_q_a,mean_position_r,mean_n_active_planes,mean_active_var_frac,"
    "mean_ring_cls_acc,median_slope_ratio,frac_bias_positive,frac_mu_q_a_positive,"
    "frac_var_b_gt_a,p25_abs_r_k_a,p75_abs_r_k_a,p25_separation_strength,"
    "p75_separation_strength,p25_bias_strength,p75_bias_strength,p25_plane_var_fraction,"
    "p75_plane_var_fraction,mean_bias_range,family_bias_sep_r,overall_bias_sep_r\n";

/* One output row for the model's rows. */
static void model_row(FILE *fp, const summary_input *in, const int *rows, int n,
                      const int *family_rows, int n_family, double overall_r, double *v)
{
    static const struct { int col, magnitude; } means[] = {
        {C_R_Q, 1}, {C_R_K, 1}, {C_VAR_A, 0}, {C_VAR_B, 0}, {C_PLANE, 0}, {C_SEP, 0},
        {C_BIAS, 0}, {C_ALPHA_K, 1}, {C_MU_Q_A, 0}, {C_POS_R, 0}, {C_N_ACTIVE, 0},
        {C_ACTIVE_VAR, 0}, {C_RING_ACC, 0}};
    put_text(fp, qk_table_cell(in->t, rows[0], in->col[C_MODEL]));
    fputc(',', fp);
    put_text(fp, qk_table_cell(in->t, rows[0], in->col[C_FAMILY]));
    fprintf(fp, ",%d", n);
    for (size_t i = 0; i < sizeof means / sizeof means[0]; i++)
        put_num(fp, mean_of(v, gather(in, rows, n, means[i].col, means[i].magnitude, v)));
    put_num(fp, quantile_of(v, gather(in, rows, n, C_SLOPE_RATIO, 0, v), 0.5));
    put_num(fp, frac_positive(v, gather(in, rows, n, C_BIAS, 0, v)));
    put_num(fp, frac_positive(v, gather(in, rows, n, C_MU_Q_A, 0, v)));
    int k = 0, defined = 0;
    for (int i = 0; i < n; i++) {
        double a = cell(in, rows[i], C_VAR_A), b = cell(in, rows[i], C_VAR_B);
        if (!isnan(a) && !isnan(b)) {
            defined++;
            k += b > a;
        }
    }
    put_num(fp, defined ? (double)k / defined : NAN);
    static const struct { int col, magnitude; } quartiles[] = {
        {C_R_K, 1}, {C_SEP, 0}, {C_BIAS, 0}, {C_PLANE, 0}};
    for (size_t i = 0; i < sizeof quartiles / sizeof quartiles[0]; i++) {
        int m = gather(in, rows, n, quartiles[i].col, quartiles[i].magnitude, v);
        put_num(fp, quantile_of(v, m, 0.25));
        put_num(fp, quantile_of(v, m, 0.75));
    }
    put_num(fp, mean_of(v, gather(in, rows, n, C_BIAS_RANGE, 0, v)));
    put_num(fp, bias_sep_r(in, family_rows, n_family));
    put_num(fp, overall_r);
    fputc('\n', fp);
}

/* The rows whose column col equals value, in table order. */
static int rows_with(const summary_input *in, int which, const char *value, int *rows)
{
    int n = 0;
    for (int r = 0; r < in->t->n_rows; r++)
        if (strcmp(qk_table_cell(in->t, r, in->col[which]), value) == 0)
            rows[n++] = r;
    return n;
}

int qk_rot_model_summary(const char *table_path, FILE *fp, qk_err *err)
{
    qk_table t;
    if (qk_table_load(table_path, &t, err) != 0)
        return -1;
    summary_input in = {.t = &t};
    for (int c = 0; c < N_INPUT; c++)
        if ((in.col[c] = qk_table_column(&t, input_names[c])) < 0) {
            qk_table_free(&t);
            return qk_fail(err, "no column '%s'", input_names[c]);
        }
    size_t cap = (size_t)(t.n_rows ? t.n_rows : 1);
    int *all = qk_malloc(cap * sizeof(int)), *rows = qk_malloc(cap * sizeof(int));
    int *family = qk_malloc(cap * sizeof(int));
    double *v = qk_malloc(cap * sizeof(double));
    for (int r = 0; r < t.n_rows; r++)
        all[r] = r;
    double overall_r = bias_sep_r(&in, all, t.n_rows);
    fputs(summary_header, fp);
    for (int r = 0; r < t.n_rows; r++) {
        const char *model = qk_table_cell(&t, r, in.col[C_MODEL]);
        int first = 1; /* a model's row is written at its first appearance */
        for (int p = 0; p < r && first; p++)
            first = strcmp(qk_table_cell(&t, p, in.col[C_MODEL]), model) != 0;
        if (!first)
            continue;
        int n = rows_with(&in, C_MODEL, model, rows);
        int n_family = rows_with(&in, C_FAMILY, qk_table_cell(&t, r, in.col[C_FAMILY]), family);
        model_row(fp, &in, rows, n, family, n_family, overall_r, v);
    }
    free(all);
    free(rows);
    free(family);
    free(v);
    qk_table_free(&t);
    return 0;
}
