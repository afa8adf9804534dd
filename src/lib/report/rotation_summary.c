/* The per-model summary of the rotation tables (docs/rotation.md,
 * model_summary.csv): the means, medians, fractions and quartiles the
 * figures aggregate, from the merged per-head table. */
#include "qk/rotation_tables.h"

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

/* The per-head table: its model and family cells, the numeric columns
 * (NaN where the stages wrote "nan": an undefined value). */
typedef struct summary_input {
    const qk_table *t;
    int col[N_INPUT];
    double *x[N_INPUT]; /* [n_rows] numbers of the columns from C_R_Q on */
} summary_input;

/* A cell that is no number (empty, a word) is an error naming the file,
 * line and column, as in every reader of the tables (qk_src_num): taken
 * as missing, it would change the means silently. */
static void load_numbers(summary_input *in, const char *path)
{
    const qk_src src = {in->t, path, NULL};
    for (int c = C_R_Q; c < N_INPUT; c++) {
        in->x[c] = qk_malloc((size_t)(in->t->n_rows ? in->t->n_rows : 1) * sizeof(double));
        for (int r = 0; r < in->t->n_rows; r++)
            in->x[c][r] = qk_src_num(&src, r, in->col[c]);
    }
}

/* Share of the defined values over the rows that are > 0. */
static double frac_positive(const double *x, const rot_rows *r)
{
    int defined = rot_count_defined(x, r);
    return defined ? (double)rot_count_positive(x, r) / defined : NAN;
}

/* Share of the rows with both defined where var_frac_b > var_frac_a. */
static double frac_b_above_a(const summary_input *in, const rot_rows *r)
{
    int k = 0, defined = 0;
    for (int i = 0; i < r->n; i++) {
        double a = in->x[C_VAR_A][r->index[i]], b = in->x[C_VAR_B][r->index[i]];
        if (!isnan(a) && !isnan(b)) {
            defined++;
            k += b > a;
        }
    }
    return defined ? (double)k / defined : NAN;
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
static void model_row(FILE *fp, const summary_input *in, const rot_rows *rows,
                      const rot_rows *family, double overall_r)
{
    static const struct { int col, magnitude; } means[] = {
        {C_R_Q, 1}, {C_R_K, 1}, {C_VAR_A, 0}, {C_VAR_B, 0}, {C_PLANE, 0}, {C_SEP, 0},
        {C_BIAS, 0}, {C_ALPHA_K, 1}, {C_MU_Q_A, 0}, {C_POS_R, 0}, {C_N_ACTIVE, 0},
        {C_ACTIVE_VAR, 0}, {C_RING_ACC, 0}};
    qk_csv_put(fp, qk_table_cell(in->t, rows->index[0], in->col[C_MODEL]));
    fputc(',', fp);
    qk_csv_put(fp, qk_table_cell(in->t, rows->index[0], in->col[C_FAMILY]));
    fprintf(fp, ",%d", rows->n);
    for (size_t i = 0; i < sizeof means / sizeof means[0]; i++)
        put_num(fp, rot_mean(in->x[means[i].col], rows, means[i].magnitude));
    put_num(fp, rot_quantile(in->x[C_SLOPE_RATIO], rows, 0.5, 0));
    put_num(fp, frac_positive(in->x[C_BIAS], rows));
    put_num(fp, frac_positive(in->x[C_MU_Q_A], rows));
    put_num(fp, frac_b_above_a(in, rows));
    static const struct { int col, magnitude; } quartiles[] = {
        {C_R_K, 1}, {C_SEP, 0}, {C_BIAS, 0}, {C_PLANE, 0}};
    for (size_t i = 0; i < sizeof quartiles / sizeof quartiles[0]; i++) {
        put_num(fp, rot_quantile(in->x[quartiles[i].col], rows, 0.25, quartiles[i].magnitude));
        put_num(fp, rot_quantile(in->x[quartiles[i].col], rows, 0.75, quartiles[i].magnitude));
    }
    put_num(fp, rot_mean(in->x[C_BIAS_RANGE], rows, 0));
    put_num(fp, rot_pearson(in->x[C_SEP], in->x[C_BIAS], family));
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
    load_numbers(&in, table_path);
    size_t cap = (size_t)(t.n_rows ? t.n_rows : 1);
    rot_rows all = {t.n_rows, qk_malloc(cap * sizeof(int))};
    rot_rows rows = {0, qk_malloc(cap * sizeof(int))}, family = {0, qk_malloc(cap * sizeof(int))};
    for (int r = 0; r < t.n_rows; r++)
        all.index[r] = r;
    double overall_r = rot_pearson(in.x[C_SEP], in.x[C_BIAS], &all);
    fputs(summary_header, fp);
    for (int r = 0; r < t.n_rows; r++) {
        const char *model = qk_table_cell(&t, r, in.col[C_MODEL]);
        int first = 1; /* a model's row is written at its first appearance */
        for (int p = 0; p < r && first; p++)
            first = strcmp(qk_table_cell(&t, p, in.col[C_MODEL]), model) != 0;
        if (!first)
            continue;
        rows.n = rows_with(&in, C_MODEL, model, rows.index);
        family.n = rows_with(&in, C_FAMILY, qk_table_cell(&t, r, in.col[C_FAMILY]), family.index);
        model_row(fp, &in, &rows, &family, overall_r);
    }
    rot_rows_free(&all);
    rot_rows_free(&rows);
    rot_rows_free(&family);
    for (int c = C_R_Q; c < N_INPUT; c++)
        free(in.x[c]);
    qk_table_free(&t);
    return 0;
}
