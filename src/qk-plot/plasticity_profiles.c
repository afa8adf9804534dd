/* Figures 05-07 (per-head plasticity profiles; inputs "profile" =
 * head_bucket_plasticity.csv, "mean" = model_bucket_plasticity.csv) and 08
 * (component weights; input "weights" = head_component_weights.csv) of the
 * plasticity study; both take "registry" for labels and context lengths. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plasticity_fig.h"
#include "qk/die.h"
#include "qk/stats.h"

/* ---- 05-07: profiles ------------------------------------------------------------- */

typedef struct profile {
    int n_bins;       /* bins of the mean profile */
    int *bin;         /* their indices q_bin, ascending */
    double *centre;   /* bin centres */
    double *ap;       /* mean across heads */
    int *heads;       /* heads behind each bin */
    double width;     /* bin width in tokens */
    uint64_t *set;    /* per bin, a signature of which heads have a value
                         (head_lines): equal for equal sets of heads */
} profile;

/* The model's mean profile from the rows of "mean"; n_bins = 0 when the
 * table holds no value for the model. */
static void load_mean_profile(const fig_ctx *ctx, const int *rows, int n, profile *pr)
{
    const qk_table *t = fig_input(ctx, "mean");
    int c_bin = fig_column(ctx, t, "q_bin"), c_start = fig_column(ctx, t, "bin_start");
    int c_centre = fig_column(ctx, t, "bin_centre"), c_ap = fig_column(ctx, t, "ap");
    int c_heads = fig_column(ctx, t, "n_heads");
    size_t cap = (size_t)(n > 0 ? n : 1);
    pr->bin = qk_malloc(cap * sizeof *pr->bin);
    pr->centre = qk_malloc(cap * sizeof *pr->centre);
    pr->ap = qk_malloc(cap * sizeof *pr->ap);
    pr->heads = qk_malloc(cap * sizeof *pr->heads);
    pr->set = qk_calloc(cap, sizeof *pr->set);
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
        pr->heads[pr->n_bins] = (int)fig_number_at(ctx, t, r, c_heads);
        pr->ap[pr->n_bins++] = ap;
        pr->width = 2 * (centre - start);
    }
    if (pr->n_bins > 0 && !(pr->width > 0))
        qk_die(QK_EXIT_DATA, fig_path(ctx, t), "model '%s': bins without a width", ctx->model);
}

static void free_profile(profile *pr)
{
    free(pr->bin);
    free(pr->centre);
    free(pr->ap);
    free(pr->heads);
    free(pr->set);
}

/* The index of bin b among the profile's bins, or -1. */
static int bin_index(const profile *pr, int b)
{
    int lo = 0, hi = pr->n_bins - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (pr->bin[mid] == b)
            return mid;
        if (pr->bin[mid] < b)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* A head's term in a bin's set signature (splitmix64 of its number):
 * sums of these differ, but by a negligible chance, for different sets. */
static uint64_t head_term(int head)
{
    uint64_t z = (uint64_t)head * 0x9e3779b97f4a7c15u + 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Writes the head lines into data block $heads (a blank line between heads
 * and at gaps) and returns the number of heads with a value; per head, the
 * means over the first and the last fifth of the model's bin range go to
 * first[] and last[] (NaN when the head has no bin there); each bin's set
 * signature (pr->set) takes the heads with a value in it. */
static int head_lines(const fig_ctx *ctx, qk_plot *p, const int *rows, int n, profile *pr,
                      double **first, double **last)
{
    const qk_table *t = fig_input(ctx, "profile");
    int c_l = fig_column(ctx, t, "layer"), c_q = fig_column(ctx, t, "q_head");
    int c_k = fig_column(ctx, t, "k_head");
    int c_bin = fig_column(ctx, t, "q_bin"), c_ap = fig_column(ctx, t, "ap");
    int lo = pr->bin[0], hi = pr->bin[pr->n_bins - 1];
    *first = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof **first);
    *last = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof **last);
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
        int at = bin_index(pr, (int)b);
        if (at >= 0)
            pr->set[at] += head_term(heads);
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
    qk_plot_printf(p, "NaN NaN\n");
    qk_plot_data_end(p);
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

/* Segment means of the mean profile over fifths of its bin range, and the
 * fewest and most heads behind the bins of the first fifth. */
static void profile_fifths(const profile *pr, double *first, double *last, int *few, int *most)
{
    int lo = pr->bin[0], hi = pr->bin[pr->n_bins - 1], nf = 0, nl = 0;
    double sf = 0, sl = 0;
    *few = INT32_MAX, *most = 0;
    for (int i = 0; i < pr->n_bins; i++) {
        int seg = hi > lo ? (int)(5.0 * (pr->bin[i] - lo) / (hi - lo)) : 0;
        if (seg == 0) {
            sf += pr->ap[i];
            nf++;
            *few = pr->heads[i] < *few ? pr->heads[i] : *few;
            *most = pr->heads[i] > *most ? pr->heads[i] : *most;
        }
        if (seg >= 4) {
            sl += pr->ap[i];
            nl++;
        }
    }
    *first = nf ? sf / nf : NAN;
    *last = nl ? sl / nl : NAN;
}

/* The mean line in two blocks: $full, the bins with at least min_heads
 * heads, and $thin, the others joined to their full neighbours; both break
 * at missing bins. Returns the number of thin bins. */
static int mean_blocks(qk_plot *p, const profile *pr, int min_heads)
{
    int n_thin = 0;
    qk_plot_data_begin(p, "full");
    for (int i = 0; i < pr->n_bins; i++) {
        if (pr->heads[i] < min_heads)
            continue;
        if (i > 0 && (pr->bin[i] != pr->bin[i - 1] + 1 || pr->heads[i - 1] < min_heads))
            qk_plot_printf(p, "\n");
        qk_plot_printf(p, "%.2f %.6f\n", pr->centre[i], pr->ap[i]);
    }
    qk_plot_printf(p, "NaN NaN\n");
    qk_plot_data_end(p);
    qk_plot_data_begin(p, "thin");
    int prev = -1; /* the last bin written */
    for (int i = 0; i < pr->n_bins; i++) {
        int thin = pr->heads[i] < min_heads;
        int next_to_thin = (i > 0 && pr->bin[i - 1] + 1 == pr->bin[i] && pr->heads[i - 1] < min_heads) ||
                           (i + 1 < pr->n_bins && pr->bin[i + 1] == pr->bin[i] + 1 &&
                            pr->heads[i + 1] < min_heads);
        n_thin += thin;
        if (!thin && !next_to_thin)
            continue;
        if (prev >= 0 && (pr->bin[prev] + 1 != pr->bin[i] ||
                          (pr->heads[prev] >= min_heads && !thin)))
            qk_plot_printf(p, "\n");
        qk_plot_printf(p, "%.2f %.6f\n", pr->centre[i], pr->ap[i]);
        prev = i;
    }
    qk_plot_printf(p, "NaN NaN\n");
    qk_plot_data_end(p);
    /* the heads of each bin as a step over the bin's own interval, from its
     * lower to its upper edge (adjacent bins meet in a vertical line);
     * broken at missing bins, as the lines are */
    qk_plot_data_begin(p, "count");
    for (int i = 0; i < pr->n_bins; i++) {
        if (i > 0 && pr->bin[i] != pr->bin[i - 1] + 1)
            qk_plot_printf(p, "\n");
        qk_plot_printf(p, "%.2f %d\n%.2f %d\n", pr->centre[i] - pr->width / 2, pr->heads[i],
                       pr->centre[i] + pr->width / 2, pr->heads[i]);
    }
    qk_plot_data_end(p);
    return n_thin;
}

/* Whether the set of heads behind bin i of the mean differs from that of
 * the bin before it (adjacent; after a gap the line breaks anyway). */
static int set_changes(const profile *pr, int i)
{
    return i > 0 && pr->bin[i] == pr->bin[i - 1] + 1 && pr->set[i] != pr->set[i - 1];
}

/* Data block $change: the bins of the mean whose set of heads differs from
 * the bin before (a head dropped out or joined: the mean may jump there
 * without any head changing). Returns their number. */
static int change_block(qk_plot *p, const profile *pr)
{
    int n = 0;
    qk_plot_data_begin(p, "change");
    for (int i = 0; i < pr->n_bins; i++)
        if (set_changes(pr, i)) {
            qk_plot_printf(p, "%.2f %.6f\n", pr->centre[i], pr->ap[i]);
            n++;
        }
    qk_plot_printf(p, "NaN NaN\n");
    qk_plot_data_end(p);
    return n;
}

/* x tics every eighth of the context, labelled in K tokens. */
static void position_axis(qk_plot *p, double context)
{
    qk_plot_printf(p, "set xrange [0:%.0f]\nset xtics (", context);
    for (int i = 0; i <= 8; i++) {
        char lab[32];
        fig_tokens(context * i / 8, lab, sizeof lab);
        qk_plot_printf(p, "\"%s\" %.3f%s", lab, context * i / 8, i < 8 ? ", " : ")\n");
    }
}

static void profile_keys(fig_ctx *ctx, const profile *pr, int heads, int min_heads,
                         const double *first, const double *last)
{
    double mf, ml, sd_first, sd_last, m_first, m_last;
    int few, most;
    profile_fifths(pr, &mf, &ml, &few, &most);
    mean_sd(first, heads, &m_first, &sd_first);
    mean_sd(last, heads, &m_last, &sd_last);
    int full = 0, a = -1, b = -1;
    for (int i = 0; i < pr->n_bins; i++)
        if (pr->heads[i] >= min_heads) {
            full++;
            b = i;
            a = a < 0 ? i : a;
        }
    fig_key(ctx, "model", "%s (%s)", ctx->model_label, ctx->model);
    fig_key(ctx, "heads with a profile", "%d", heads);
    fig_key(ctx, "heads a bin needs for the full mean line", "%d (%.0f%% of %d)", min_heads,
            100 * ctx->min_share, heads);
    fig_key(ctx, "bins of the mean profile (with enough heads)", "%d (%d); width %.1f tokens",
            pr->n_bins, full, pr->width);
    if (full) {
        fig_key(ctx, "first and last bin centre with enough heads", "%.1f, %.1f", pr->centre[a],
                pr->centre[b]);
        fig_key(ctx, "mean at the first and the last bin with enough heads", "%.4f, %.4f",
                pr->ap[a], pr->ap[b]);
    }
    fig_key(ctx, "mean over the first 20 % of bins", "%.4f", mf);
    fig_key(ctx, "heads behind the bins of the first 20 % (fewest, most)", "%d, %d", few, most);
    fig_key(ctx, "mean over the last 20 % of bins", "%.4f", ml);
    fig_key(ctx, "spread of the heads (sd of head means), first 20 %", "%.4f", sd_first);
    fig_key(ctx, "spread of the heads (sd of head means), last 20 %", "%.4f", sd_last);
}

int plast_draw_profile(fig_ctx *ctx, qk_err *err)
{
    const char *model = fig_model(ctx);
    const qk_table *mean = fig_input(ctx, "mean"), *per_head = fig_input(ctx, "profile");
    int n_mean, n_head;
    int *mean_rows = plast_model_rows(ctx, mean, model, &n_mean);
    int *head_rows = plast_model_rows(ctx, per_head, model, &n_head);
    profile pr;
    load_mean_profile(ctx, mean_rows, n_mean, &pr);
    free(mean_rows);
    if (pr.n_bins == 0 || n_head == 0) {
        /* rows of the model's heads, none with a value: every bin fell
         * below the stage's minimum of key pairs */
        int c_ap = fig_column(ctx, per_head, "ap"), valued = 0;
        for (int i = 0; i < n_head && !valued; i++)
            valued = isfinite(fig_number_at(ctx, per_head, head_rows[i], c_ap));
        if (n_head > 0 && !valued) {
            free(head_rows);
            free_profile(&pr);
            return plast_filtered_out(ctx, "query bin", "PLAST_MIN_PAIRS eligible key pairs", err);
        }
        free(head_rows);
        free_profile(&pr);
        if (n_mean == 0 || n_head == 0)
            return plast_lacks_model(ctx, n_mean ? per_head : mean, err);
        return fig_not_drawn(ctx, err, "The table %s holds no profile bin with a value for %s.",
                             fig_path(ctx, mean), ctx->model_label);
    }
    double context = strtod(fig_registry(ctx, model, "context_length", "0"), NULL);
    double edge = (pr.bin[pr.n_bins - 1] + 1) * pr.width;
    if (!(context >= edge))
        context = edge;
    qk_plot p;
    plast_begin(&p, 2000, 1300, 17);
    double *first, *last;
    int heads = head_lines(ctx, &p, head_rows, n_head, &pr, &first, &last);
    free(head_rows);
    int min_heads = (int)ceil(ctx->min_share * heads);
    if (min_heads < 1)
        min_heads = 1;
    int n_thin = mean_blocks(&p, &pr, min_heads);
    int n_change = change_block(&p, &pr);
    /* Alpha 0.2 as in the thesis for a few hundred heads; fewer heads get
     * more opaque lines so that the bundle stays visible. */
    double alpha = fmin(0.5, fmax(0.2, 30.0 / (heads > 0 ? heads : 1)));
    char title[256], sub[320], width[32];
    fig_tokens(pr.width, width, sizeof width);
    fig_title_text(ctx, title, sizeof title);
    int at = snprintf(sub, sizeof sub, "n = %d heads; query bins of %s tokens; the mean is over "
                      "the heads with a value in each bin (lower panel), thick where at least %d "
                      "contribute", heads, width, min_heads);
    if (n_change)
        snprintf(sub + at, sizeof sub - (size_t)at, "; ○: the set of heads changes");
    double top = fig_multiplot_title(&p, title, sub, 20);
    /* in print, where the canvas is narrower in font units, the key in two
     * columns and the panels placed in characters (ch) from the bottom */
    int print = fig_print(&p);
    double ch = 17.0 / p.height;
    double lower_bottom = print ? 5.5 * ch : 0.09, lower_top = print ? 11.5 * ch : 0.28;
    double upper_bottom = print ? 15.0 * ch : 0.33;
    int entries = 2 + (n_thin > 0) + (n_change > 0);
    top = fig_key_top(&p, 15, print || entries > 3 ? 2 : 3, entries, top);
    double left = print ? 6.0 * 17 / p.width : 0.07;
    qk_plot_printf(&p,
        "set lmargin at screen %.4g\nset rmargin at screen 0.97\n"
        "set tmargin at screen %.4f\nset bmargin at screen %.4g\n"
        "set yrange [0:1]\nset ytics 0.2\nset format y \"%%.1f\"\nset format x \"\"\n"
        "set grid xtics ytics lc rgb '#e6e6e6'\n", left, top - 0.01, upper_bottom);
    fig_axis_label(&p, "y", "Attention plasticity", NULL);
    position_axis(&p, context);
    qk_plot_printf(&p, "plot $heads using 1:2 with lines lw 1.5 lc rgb '#%02X808080' "
                       "title \"single heads (n = %d)\"", (int)lround(255 * (1 - alpha)), heads);
    if (n_thin < pr.n_bins)
        qk_plot_printf(&p, ", \\\n     $full using 1:2 with lines lw 5 lc rgb '%s' "
                           "title \"mean across heads (≥ %d heads)\"", FIG_BLACK, min_heads);
    if (n_thin)
        qk_plot_printf(&p, ", \\\n     $thin using 1:2 with lines lw 2.5 dt (6,4) lc rgb '%s' "
                           "title \"mean from fewer heads\"", FIG_NEUTRAL);
    /* open circles on the mean where its set of heads changes */
    if (n_change)
        qk_plot_printf(&p, ", \\\n     $change using 1:2 with points pt 7 ps %.1f*qk_ps lc rgb 'white' "
                           "notitle, \\\n     $change using 1:2 with points pt 6 ps %.1f*qk_ps lw 1.5 "
                           "lc rgb '%s' title \"the set of heads changes\"", print ? 0.7 : 1.0,
                           print ? 0.7 : 1.0, FIG_BLACK);
    qk_plot_printf(&p, "\n");
    /* the lower panel: heads behind each bin of the mean */
    qk_plot_printf(&p,
        "unset key\nunset title\nset tmargin at screen %.4g\nset bmargin at screen %.4g\n"
        "set yrange [0:%d]\nset ytics %d\nset format y \"%%.0f\"\nset format x \"%% h\"\n",
        lower_top, lower_bottom, heads + (heads > 4 ? heads / 8 : 1),
        heads > 8 ? (heads + 3) / 4 : 1);
    fig_axis_label(&p, "y", print ? "heads" : "heads per bin", NULL);
    fig_axis_label(&p, "x", "Query position (tokens, K = 1024)", NULL);
    position_axis(&p, context);
    qk_plot_printf(&p,
        "set arrow from graph 0, first %d to graph 1, first %d nohead dt 2 lw 1.2 lc rgb '%s' front\n"
        "plot $count using 1:2 with lines lw 2 lc rgb '#555555' notitle\n"
        "unset multiplot\n",
        min_heads, min_heads, PLAST_REF);
    profile_keys(ctx, &pr, heads, min_heads, first, last);
    fig_key(ctx, "bins where the set of heads changes (marked)", "%d of %d", n_change, pr.n_bins);
    free(first);
    free(last);
    free_profile(&pr);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 08: component weights --------------------------------------------------------- */

/* Mean weight per head dimension over the model's rows of "weights";
 * returns d (0 when there are no rows). */
static int mean_weights(const fig_ctx *ctx, const int *rows, int n, double **mean, int *heads)
{
    const qk_table *t = fig_input(ctx, "weights");
    int c_comp = fig_column(ctx, t, "component"), c_w = fig_column(ctx, t, "component_weight");
    int d = 0;
    for (int i = 0; i < n; i++) {
        double c = fig_number_at(ctx, t, rows[i], c_comp);
        if (!(c >= 0 && c < 65536 && c == floor(c)))
            qk_die(QK_EXIT_DATA, fig_path(ctx, t), "line %d: bad component %g", rows[i] + 2, c);
        if (c + 1 > d)
            d = (int)c + 1;
    }
    double *sum = qk_calloc((size_t)(d ? d : 1), sizeof *sum);
    int *count = qk_calloc((size_t)(d ? d : 1), sizeof *count);
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
                   "model '%s': %d rows for component %d but %d for component 0", ctx->model,
                   count[c], c, count[0]);
    for (int c = 0; c < d; c++)
        sum[c] /= count[c];
    *heads = d ? count[0] : 0;
    *mean = sum;
    free(count);
    return d;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* Pearson r of the two halves of w, coordinate i against i + d/2 (the
 * summary's qk_pearson, so that the text quotes the r drawn). */
static double halves_r(const double *w, int d)
{
    int h = d / 2;
    return h >= 3 ? qk_pearson(w, w + h, h) : NAN;
}

/* Components holding 90 % of the weight. */
static int components_for_90(const double *w, int d, double total)
{
    double *sorted = qk_malloc((size_t)d * sizeof *sorted);
    memcpy(sorted, w, (size_t)d * sizeof *sorted);
    qsort(sorted, (size_t)d, sizeof *sorted, cmp_desc);
    int n90 = 0;
    for (double acc = 0; n90 < d && acc < 0.9 * total; n90++)
        acc += sorted[n90];
    free(sorted);
    return n90;
}

static void weight_keys(fig_ctx *ctx, const double *w, int d, int heads, double r,
                        const fig_range *range)
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
    int n90 = components_for_90(w, d, total);
    fig_key(ctx, "model", "%s (%s)", ctx->model_label, ctx->model);
    fig_key(ctx, "heads", "%d", heads);
    fig_key(ctx, "head dimension d", "%d", d);
    fig_key(ctx, "sum of the mean weights", "%.6f", total);
    fig_key(ctx, "share in coordinates 0 to d/2 - 1", "%.4f", share[0]);
    fig_key(ctx, "share in coordinates d/2 to d - 1", "%.4f", share[1]);
    fig_key(ctx, "peak of the first half (component, weight)", "%d, %.4f", peak[0], w[peak[0]]);
    fig_key(ctx, "peak of the second half (component, weight)", "%d, %.4f", peak[1], w[peak[1]]);
    fig_key(ctx, "Pearson r of the halves (coordinate i against i + d/2)", "%.3f", r);
    fig_key(ctx, "the halves mirror each other (r >= 0.5)", "%s",
            isnan(r) ? "n/a" : r >= 0.5 ? "yes" : "no");
    fig_key(ctx, "components holding 90 % of the weight", "%d of %d", n90, d);
    fig_key(ctx, "the weight is concentrated (90 % in at most half of the components)", "%s",
            2 * n90 <= d ? "yes" : "no");
    fig_key(ctx, "components with mean weight below 0.001", "%d", small);
    fig_key(ctx, "components above the drawn scale", "%d", range->above);
}

/* $w: component, weight clipped to the range; $off: the cut bars. */
static void weight_blocks(qk_plot *p, const double *w, int d, const fig_range *r)
{
    qk_plot_data_begin(p, "w");
    for (int c = 0; c < d; c++) {
        int side;
        qk_plot_printf(p, "%d %.8f\n", c, fig_clip(r, w[c], &side));
    }
    qk_plot_data_end(p);
    qk_plot_data_begin(p, "off");
    for (int c = 0; c < d; c++) {
        char value[32];
        if (w[c] > r->hi)
            qk_plot_printf(p, "%d %.8f \"%s\"\n", c, r->hi, fig_fmt(value, sizeof value, "%.3f", w[c]));
    }
    qk_plot_printf(p, "NaN NaN \"\"\n");
    qk_plot_data_end(p);
    qk_plot_data_begin(p, "halves");
    for (int i = 0; i < d / 2; i++)
        qk_plot_printf(p, "%d %.8f %.8f\n", i, w[i], w[i + d / 2]);
    qk_plot_data_end(p);
}

int plast_draw_weights(fig_ctx *ctx, qk_err *err)
{
    const char *model = fig_model(ctx);
    const qk_table *t = fig_input(ctx, "weights");
    int n, heads;
    int *rows = plast_model_rows(ctx, t, model, &n);
    double *w;
    int d = mean_weights(ctx, rows, n, &w, &heads);
    free(rows);
    if (d == 0) {
        free(w);
        return plast_lacks_model(ctx, t, err);
    }
    fig_range range = fig_robust_range(w, d);
    range.lo = 0;
    double top = range.hi > 0 ? 1.12 * range.hi : 1;
    double r = halves_r(w, d);
    qk_plot p;
    plast_begin(&p, 2000, fig_printing ? 1650 : 1150, 15); /* print: taller panels */
    weight_blocks(&p, w, d, &range);
    char title[256], sub[160], rtext[32];
    fig_title_text(ctx, title, sizeof title);
    snprintf(sub, sizeof sub, "mean component weight over n = %d heads; d = %d", heads, d);
    double top_y = fig_multiplot_title(&p, title, sub, 18);
    /* in print, where the canvas is narrower in font units: half as many
     * tick labels, shorter labels, the key above the lower panel and the
     * panels placed in characters (ch) */
    int print = fig_print(&p);
    int step = d >= 32 ? d / (print ? 8 : 16) : 1;
    /* enough decimals for the tick labels of small shares */
    int decimals = top < 0.02 ? 3 : 2;
    double ch = 15.0 / p.height;
    double upper_top = print ? top_y - 3.2 * ch : top_y - 0.04;
    double lower_bottom = print ? 5.5 * ch : 0.08;
    double panel = (upper_top - lower_bottom - 9.5 * ch) / 2;
    double upper_bottom = print ? lower_bottom + panel + 9.5 * ch : 0.50;
    double lower_top = print ? lower_bottom + panel : 0.33;
    double left = print ? 8.5 * 15 / p.width : 0.07, right = print ? 0.97 : 0.86;
    qk_plot_printf(&p,
        "set lmargin at screen %.4g\nset rmargin at screen %.4g\n"
        "set tmargin at screen %.4f\nset bmargin at screen %.*f\n"
        "set title \"By head dimension (dashed: the two halves of rotate-half RoPE)\" font \",15\"\n"
        "set xrange [-1:%d]\nset yrange [0:%.6g]\nset format y \"%%.%df\"\n"
        "set xtics 0, %d, %d out scale 0.6\nset xtics add (\"%d\" %d)\n"
        "set grid noxtics ytics lc rgb '#e6e6e6'\nunset key\n"
        "set boxwidth 0.8 relative\nset style fill solid 1.0 noborder\n",
        left, right, upper_top, print ? 4 : 2, upper_bottom, d, top, decimals, step, d - 2,
        d - 1, d - 1);
    fig_axis_label(&p, "x", "component index (head dimension of the query)", NULL);
    fig_axis_label(&p, "y", print ? "mean weight" : "share of positional information", NULL);
    if (d >= 4)
        qk_plot_printf(&p, "set arrow from %.1f, graph 0 to %.1f, graph 1 nohead dt 2 lw 1.2 "
                           "lc rgb '%s' back\n", d / 2 - 0.5, d / 2 - 0.5, PLAST_REF);
    fig_offscale_labels(&p, &range, "%.3f", 1, 12);
    qk_plot_printf(&p, "plot $w using 1:2 with boxes lc rgb '%s' notitle", FIG_BLUE);
    if (range.above)
        qk_plot_printf(&p, ", \\\n     $off using 1:2:(\"▲\") with labels offset 0,0.6 "
                           "tc rgb '#333333' font \",10\" notitle");
    qk_plot_printf(&p, "\n");
    /* the halves overlaid by pair index */
    fig_fmt(rtext, sizeof rtext, "%+.2f", r);
    qk_plot_printf(&p,
        "unset arrow\nunset label\n"
        "set tmargin at screen %.4g\nset bmargin at screen %.4g\n"
        "set title \"%s by pair index i: coordinate i and %s partner i + %d "
        "(Pearson r = %s, n = %d pairs)\" font \",15\"%s\n"
        "set xlabel \"Pair index i\"\nset xrange [-1:%d]\nset xtics 0, %d, %d out scale 0.6\n"
        "set yrange [0:%.6g]\nset grid xtics ytics lc rgb '#e6e6e6'\n",
        lower_top, lower_bottom, print ? "Halves" : "The two halves", print ? "its" : "its RoPE",
        d / 2, isnan(r) ? "n/a" : rtext, d / 2, print ? " offset 0, 0.6" : "", d / 2,
        step > 1 ? step / 2 : 1, d / 2 - 1, top);
    if (print)
        qk_plot_printf(&p, "set key at screen 0.5, screen %.4f center center horizontal reverse "
                           "Left samplen 2 width 2 font \",13\" nobox\n", lower_top + 1.1 * ch);
    else
        qk_plot_printf(&p, "set key at screen 0.87, graph 1 top left vertical reverse Left "
                           "samplen 2 font \",13\" nobox\n");
    /* (black and grey: vermillion means keys, and these are both query
     * coordinates) */
    qk_plot_printf(&p,
        "plot $halves using 1:2 with linespoints lw 2 pt 7 ps 0.8*qk_ps lc rgb '%s' "
        "title \"i (first half)\", \\\n"
        "     $halves using 1:3 with linespoints lw 2 dt 2 pt 5 ps 0.8*qk_ps lc rgb '%s' "
        "title \"i + %d (second half)\"\nunset multiplot\n",
        FIG_BLACK, FIG_NEUTRAL, d / 2);
    weight_keys(ctx, w, d, heads, r, &range);
    free(w);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
