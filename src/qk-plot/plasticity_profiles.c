/* Figures 05-07 (per-head plasticity profiles; inputs "profile" =
 * head_bucket_plasticity.csv, "mean" = model_bucket_plasticity.csv) and 08
 * (component weights; input "weights" = head_component_weights.csv) of the
 * plasticity study; both take "registry" for labels and context lengths. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plasticity_fig.h"

/* ---- 05-07: profiles ------------------------------------------------------------- */

typedef struct profile {
    int n_bins;       /* bins of the mean profile */
    int *bin;         /* their indices q_bin, ascending */
    double *centre;   /* bin centres */
    double *ap;       /* mean across heads */
    double width;     /* bin width in tokens */
} profile;

static void load_mean_profile(const fig_ctx *ctx, const char *model, profile *pr)
{
    const qk_table *t = fig_input(ctx, "mean");
    int c_bin = fig_column(ctx, t, "q_bin"), c_start = fig_column(ctx, t, "bin_start");
    int c_centre = fig_column(ctx, t, "bin_centre"), c_ap = fig_column(ctx, t, "ap");
    int n;
    int *rows = plast_model_rows(ctx, t, model, &n);
    pr->bin = qk_malloc((size_t)n * sizeof *pr->bin);
    pr->centre = qk_malloc((size_t)n * sizeof *pr->centre);
    pr->ap = qk_malloc((size_t)n * sizeof *pr->ap);
    pr->n_bins = 0;
    pr->width = 0;
    for (int i = 0; i < n; i++) {
        int r = rows[i];
        double b = fig_number_at(ctx, t, r, c_bin), ap = fig_number_at(ctx, t, r, c_ap);
        double start = fig_number_at(ctx, t, r, c_start);
        double centre = fig_number_at(ctx, t, r, c_centre);
        if (!(b >= 0 && b == floor(b) && b < 1e7) || (pr->n_bins && b <= pr->bin[pr->n_bins - 1]))
            qk_die(QK_EXIT_DATA, fig_path(ctx, t),
                   "line %d: q_bin %g out of order (bins must ascend per model)", r + 2, b);
        if (!isfinite(ap))
            continue;
        pr->bin[pr->n_bins] = (int)b;
        pr->centre[pr->n_bins] = centre;
        pr->ap[pr->n_bins++] = ap;
        pr->width = 2 * (centre - start);
    }
    free(rows);
    if (pr->n_bins == 0 || !(pr->width > 0))
        qk_die(QK_EXIT_DATA, fig_path(ctx, t), "model '%s' has no profile bin with a value",
               model);
}

static void free_profile(profile *pr)
{
    free(pr->bin);
    free(pr->centre);
    free(pr->ap);
}

/* Writes the head lines into data block $heads (a blank line between heads
 * and at gaps) and returns the number of heads with a value; per head, the
 * means over the first and the last fifth of the model's bin range go to
 * first[] and last[] (NaN when the head has no bin there). */
static int head_lines(const fig_ctx *ctx, qk_plot *p, const char *model, const profile *pr,
                      double **first, double **last)
{
    const qk_table *t = fig_input(ctx, "profile");
    int c_l = fig_column(ctx, t, "layer"), c_q = fig_column(ctx, t, "q_head");
    int c_k = fig_column(ctx, t, "k_head");
    int c_bin = fig_column(ctx, t, "q_bin"), c_ap = fig_column(ctx, t, "ap");
    int n;
    int *rows = plast_model_rows(ctx, t, model, &n);
    int lo = pr->bin[0], hi = pr->bin[pr->n_bins - 1];
    *first = qk_malloc((size_t)n * sizeof **first);
    *last = qk_malloc((size_t)n * sizeof **last);
    double s_first = 0, s_last = 0;
    int n_first = 0, n_last = 0, heads = 0, prev_bin = -2, has_value = 0;
    qk_plot_data_begin(p, "heads");
    for (int i = 0; i < n; i++) {
        int r = rows[i];
        int new_head = i == 0 || strcmp(qk_table_cell(t, r, c_l), qk_table_cell(t, rows[i - 1], c_l)) ||
                       strcmp(qk_table_cell(t, r, c_q), qk_table_cell(t, rows[i - 1], c_q)) ||
                       strcmp(qk_table_cell(t, r, c_k), qk_table_cell(t, rows[i - 1], c_k));
        if (new_head && i > 0 && has_value) {
            (*first)[heads] = n_first ? s_first / n_first : NAN;
            (*last)[heads++] = n_last ? s_last / n_last : NAN;
        }
        if (new_head) {
            s_first = s_last = 0;
            n_first = n_last = has_value = 0;
            prev_bin = -2;
            if (i > 0)
                qk_plot_printf(p, "\n");
        }
        double b = fig_number_at(ctx, t, r, c_bin), ap = fig_number_at(ctx, t, r, c_ap);
        if (!isfinite(ap))
            continue;
        if (ap < 0 || ap > 1)
            qk_die(QK_EXIT_DATA, fig_path(ctx, t), "line %d: ap %g outside [0, 1]", r + 2, ap);
        if (b < lo || b > hi)
            qk_die(QK_EXIT_DATA, fig_path(ctx, t),
                   "line %d: bin %g has a value but is outside the model profile", r + 2, b);
        if (prev_bin >= 0 && (int)b != prev_bin + 1)
            qk_plot_printf(p, "\n"); /* a dropped bin: break the line */
        qk_plot_printf(p, "%.2f %.6f\n", (b + 0.5) * pr->width, ap);
        prev_bin = (int)b;
        has_value = 1;
        /* fifths of the bin range as the model's first/last 20 % */
        int seg = hi > lo ? (int)(5.0 * (b - lo) / (hi - lo)) : 0;
        if (seg == 0) {
            s_first += ap;
            n_first++;
        }
        if (seg >= 4) {
            s_last += ap;
            n_last++;
        }
    }
    if (n > 0 && has_value) {
        (*first)[heads] = n_first ? s_first / n_first : NAN;
        (*last)[heads++] = n_last ? s_last / n_last : NAN;
    }
    qk_plot_data_end(p);
    free(rows);
    return heads;
}

/* Mean and standard deviation (divisor n - 1) of the finite values. */
static void mean_sd(const double *v, int n, double *mean, double *sd)
{
    double s = 0, ss = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            s += v[i];
            k++;
        }
    *mean = k ? s / k : NAN;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]))
            ss += (v[i] - *mean) * (v[i] - *mean);
    *sd = k > 1 ? sqrt(ss / (k - 1)) : NAN;
}

/* Segment means of the mean profile over fifths of its bin range. */
static void profile_fifths(const profile *pr, double *first, double *last)
{
    int lo = pr->bin[0], hi = pr->bin[pr->n_bins - 1], nf = 0, nl = 0;
    double sf = 0, sl = 0;
    for (int i = 0; i < pr->n_bins; i++) {
        int seg = hi > lo ? (int)(5.0 * (pr->bin[i] - lo) / (hi - lo)) : 0;
        if (seg == 0) {
            sf += pr->ap[i];
            nf++;
        }
        if (seg >= 4) {
            sl += pr->ap[i];
            nl++;
        }
    }
    *first = nf ? sf / nf : NAN;
    *last = nl ? sl / nl : NAN;
}

/* x tics every eighth of the context, labelled in K tokens. */
static void position_axis(qk_plot *p, double context)
{
    qk_plot_printf(p, "set xrange [0:%.0f]\nset xtics (", context);
    for (int i = 0; i <= 8; i++) {
        char lab[32];
        plast_tokens(context * i / 8, lab, sizeof lab);
        qk_plot_printf(p, "\"%s\" %.3f%s", lab, context * i / 8, i < 8 ? ", " : ")\n");
    }
}

static int draw_profile(fig_ctx *ctx, const char *model, qk_err *err)
{
    profile pr;
    load_mean_profile(ctx, model, &pr);
    const char *label = fig_registry(ctx, model, "label", model);
    double context = strtod(fig_registry(ctx, model, "context_length", "0"), NULL);
    double edge = (pr.bin[pr.n_bins - 1] + 1) * pr.width;
    if (!(context >= edge))
        context = edge;
    qk_plot p;
    plast_begin(&p, 2000, 1200, 17);
    double *first, *last;
    int heads = head_lines(ctx, &p, model, &pr, &first, &last);
    qk_plot_data_begin(&p, "mean");
    for (int i = 0; i < pr.n_bins; i++) {
        if (i > 0 && pr.bin[i] != pr.bin[i - 1] + 1)
            qk_plot_printf(&p, "\n");
        qk_plot_printf(&p, "%.2f %.6f\n", pr.centre[i], pr.ap[i]);
    }
    qk_plot_data_end(&p);
    /* Alpha 0.2 as in the thesis for a few hundred heads; fewer heads get
     * more opaque lines so that the bundle stays visible. */
    double alpha = fmin(0.5, fmax(0.2, 30.0 / (heads > 0 ? heads : 1)));
    char title[256];
    snprintf(title, sizeof title, "Per-bin attention plasticity — %s", label);
    qk_plot_printf(&p, "set title ");
    fig_text(&p, title);
    qk_plot_printf(&p,
        " font \",20\"\n"
        "set xlabel \"Position (tokens; query bins of %.1f)\"\n"
        "set ylabel \"Attention plasticity\"\n"
        "set yrange [0:1]\nset ytics 0.2\nset format y \"%%.1f\"\n"
        "set grid xtics ytics lc rgb '#e6e6e6'\n"
        "set key top right reverse Left opaque box lc rgb '#cccccc' samplen 3 width 1\n",
        pr.width);
    position_axis(&p, context);
    qk_plot_printf(&p,
        "plot $heads using 1:2 with lines lw 1.5 lc rgb '#%02X808080' "
        "title \"Single heads (n = %d)\", \\\n"
        "     $mean using 1:2 with lines lw 5 lc rgb '%s' title \"Mean across heads\"\n",
        (int)lround(255 * (1 - alpha)), heads, FIG_VERMILLION);
    double mf, ml, sd_first, sd_last, m_first, m_last;
    profile_fifths(&pr, &mf, &ml);
    mean_sd(first, heads, &m_first, &sd_first);
    mean_sd(last, heads, &m_last, &sd_last);
    fig_key(ctx, "model", "%s", label);
    fig_key(ctx, "heads with a profile", "%d", heads);
    fig_key(ctx, "bins of the mean profile", "%d (width %.1f tokens)", pr.n_bins, pr.width);
    fig_key(ctx, "first and last bin centre", "%.1f, %.1f", pr.centre[0],
            pr.centre[pr.n_bins - 1]);
    fig_key(ctx, "mean at the first and the last bin", "%.4f, %.4f", pr.ap[0],
            pr.ap[pr.n_bins - 1]);
    fig_key(ctx, "mean over the first 20 % of bins", "%.4f", mf);
    fig_key(ctx, "mean over the last 20 % of bins", "%.4f", ml);
    fig_key(ctx, "spread of the heads (sd of head means), first 20 %", "%.4f", sd_first);
    fig_key(ctx, "spread of the heads (sd of head means), last 20 %", "%.4f", sd_last);
    free(first);
    free(last);
    free_profile(&pr);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

int plast_draw_profile_ministral3_3b(fig_ctx *ctx, qk_err *err)
{
    return draw_profile(ctx, "ministral3-3b", err);
}

int plast_draw_profile_qwen3_4b(fig_ctx *ctx, qk_err *err)
{
    return draw_profile(ctx, "qwen3-4b", err);
}

int plast_draw_profile_llama3_2_3b(fig_ctx *ctx, qk_err *err)
{
    return draw_profile(ctx, "llama3.2-3b", err);
}

/* ---- 08: component weights --------------------------------------------------------- */

/* Mean weight per head dimension over the heads of the model; returns d. */
static int mean_weights(const fig_ctx *ctx, const char *model, double **mean, int *heads)
{
    const qk_table *t = fig_input(ctx, "weights");
    int c_comp = fig_column(ctx, t, "component"), c_w = fig_column(ctx, t, "component_weight");
    int n;
    int *rows = plast_model_rows(ctx, t, model, &n);
    int d = 0;
    for (int i = 0; i < n; i++) {
        double c = fig_number_at(ctx, t, rows[i], c_comp);
        if (!(c >= 0 && c < 65536 && c == floor(c)))
            qk_die(QK_EXIT_DATA, fig_path(ctx, t), "line %d: bad component %g", rows[i] + 2, c);
        if (c + 1 > d)
            d = (int)c + 1;
    }
    double *sum = qk_calloc((size_t)d, sizeof *sum);
    int *count = qk_calloc((size_t)d, sizeof *count);
    for (int i = 0; i < n; i++) {
        int c = (int)fig_number_at(ctx, t, rows[i], c_comp);
        double w = fig_number_at(ctx, t, rows[i], c_w);
        if (!isfinite(w))
            qk_die(QK_EXIT_DATA, fig_path(ctx, t), "line %d: component_weight is not finite",
                   rows[i] + 2);
        sum[c] += w;
        count[c]++;
    }
    for (int c = 0; c < d; c++)
        if (count[c] != count[0])
            qk_die(QK_EXIT_DATA, fig_path(ctx, t),
                   "model '%s': %d rows for component %d but %d for component 0", model,
                   count[c], c, count[0]);
    for (int c = 0; c < d; c++)
        sum[c] /= count[c];
    *heads = count[0];
    *mean = sum;
    free(count);
    free(rows);
    return d;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static void weight_keys(fig_ctx *ctx, const char *label, const double *w, int d, int heads)
{
    int half = d / 2, peak[2] = {0, half};
    double share[2] = {0, 0}, total = 0;
    int small = 0;
    for (int c = 0; c < d; c++) {
        int h = c >= half;
        share[h] += w[c];
        total += w[c];
        if (w[c] > w[peak[h]])
            peak[h] = c;
        small += w[c] < 1e-3;
    }
    double *sorted = qk_malloc((size_t)d * sizeof *sorted);
    memcpy(sorted, w, (size_t)d * sizeof *sorted);
    qsort(sorted, (size_t)d, sizeof *sorted, cmp_desc);
    int n90 = 0;
    for (double acc = 0; n90 < d && acc < 0.9 * total; n90++)
        acc += sorted[n90];
    free(sorted);
    fig_key(ctx, "model", "%s", label);
    fig_key(ctx, "heads", "%d", heads);
    fig_key(ctx, "head dimension d", "%d", d);
    fig_key(ctx, "sum of the mean weights", "%.6f", total);
    fig_key(ctx, "share in coordinates 0 to d/2 - 1", "%.4f", share[0]);
    fig_key(ctx, "share in coordinates d/2 to d - 1", "%.4f", share[1]);
    fig_key(ctx, "peak of the first half (component, weight)", "%d, %.4f", peak[0], w[peak[0]]);
    fig_key(ctx, "peak of the second half (component, weight)", "%d, %.4f", peak[1], w[peak[1]]);
    fig_key(ctx, "components holding 90 % of the weight", "%d", n90);
    fig_key(ctx, "components with mean weight below 0.001", "%d", small);
}

static int draw_weights(fig_ctx *ctx, const char *model, qk_err *err)
{
    double *w;
    int heads;
    int d = mean_weights(ctx, model, &w, &heads);
    const char *label = fig_registry(ctx, model, "label", model);
    double top = 0;
    for (int c = 0; c < d; c++)
        top = fmax(top, w[c]);
    top = top > 0 ? 1.22 * top : 1; /* room for the labels of the halves */
    qk_plot p;
    plast_begin(&p, 2000, 800, 15);
    qk_plot_data_begin(&p, "w");
    for (int c = 0; c < d; c++)
        qk_plot_printf(&p, "%d %.8f\n", c, w[c]);
    qk_plot_data_end(&p);
    char title[256];
    snprintf(title, sizeof title, "%s: positional information by head dimension", label);
    qk_plot_printf(&p, "set title ");
    fig_text(&p, title);
    int step = d >= 32 ? d / 16 : 1;
    /* enough decimals for the tick labels of small shares */
    int decimals = top < 0.02 ? 3 : 2;
    qk_plot_printf(&p,
        " font \",18\"\n"
        "set xlabel \"Component index (head dimension of the query)\"\n"
        "set ylabel \"Share of positional information\"\n"
        "set xrange [-1:%d]\nset yrange [0:%.6g]\nset format y \"%%.%df\"\n"
        "set xtics 0, %d, %d out scale 0.6\nset xtics add (\"%d\" %d)\n"
        "set grid noxtics ytics lc rgb '#e6e6e6'\nunset key\n"
        "set boxwidth 0.8 relative\nset style fill solid 1.0 noborder\n",
        d, top, decimals, step, d - 2, d - 1, d - 1);
    if (d >= 4)
        qk_plot_printf(&p,
            "set arrow from %.1f, graph 0 to %.1f, graph 1 nohead dt 2 lw 1.2 lc rgb '%s' back\n"
            "set label \"{/*0.85 coordinates 0 to %d}\" at %.1f, graph 0.95 center tc rgb '#555555'\n"
            "set label \"{/*0.85 coordinates %d to %d (RoPE partners of 0 to %d)}\" at %.1f, "
            "graph 0.95 center tc rgb '#555555'\n",
            d / 2 - 0.5, d / 2 - 0.5, PLAST_REF, d / 2 - 1, d / 4 - 0.5, d / 2, d - 1, d / 2 - 1,
            0.75 * d - 0.5);
    qk_plot_printf(&p, "plot $w using 1:2 with boxes lc rgb '%s' notitle\n", FIG_BLUE);
    weight_keys(ctx, label, w, d, heads);
    free(w);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

int plast_draw_weights_qwen3_14b(fig_ctx *ctx, qk_err *err)
{
    return draw_weights(ctx, "qwen3-14b", err);
}
