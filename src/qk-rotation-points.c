/* qk-rotation-points: the data of the two point-cloud figures of the
 * rotation study (figures/qk-rotation/01 and 08). A few query heads
 * of one store are drawn as the thesis drew them (Python
 * random.Random(seed).sample of the heads qk-rotate analysed, sorted by
 * (layer, head)); the queries and keys of each are projected on the axes a
 * and b qk-rotate found (raw coordinates, figure 01), and those of the first
 * head drawn on the principal pairs of the complement of {a, b} (centred
 * coordinates, figure 08), with the basis qk-complement uses. */
#include <cblas.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/moments.h"
#include "qk/rng.h"
#include "qk/rotation.h"
#include "qk/store.h"

#define MAX_PANELS 16

enum { OPT_AXES = QK_KEY_FIRST, OPT_AB, OPT_COMPLEMENT, OPT_PANELS_OUT, OPT_MAX_POINTS,
       OPT_COMPLEMENT_POINTS, OPT_HEAD };

typedef struct options {
    const char *store;
    char *axes;
    const char *ab_output, *complement_output, *panels_output;
    int64_t seed;
    int panels;
    int64_t max_points, complement_max_points;
    int verify;
    int head_layer, head; /* --head: this head alone (head_layer -1: the draw) */
} options;

/* What the command line sets, the draw by its rows. */
static options opts;

static const qk_option options_table[] = {
    {OPT_AXES, "axes", "FILE", "axes from qk-rotate (default: rotation_axes.bin beside STORE)"},
    {OPT_AB, "ab-output", "FILE", "panel, kind, position, a, b"},
    {OPT_COMPLEMENT, "complement-output", "FILE", "pair, kind, position, u, w (first drawn "
                                                  "head)"},
    {OPT_PANELS_OUT, "panels-output", "FILE", "one row per drawn head (panel = place in the "
                                              "(layer, head) order, draw = place in the draw)"},
    QK_OPTION_INT64('s', "seed", "N", &opts.seed, 0, 4294967295L,
                    QK_STR(QK_DEFAULT_ROT_FIG_SEED), "seed of the head draw"),
    QK_OPTION_INT('n', "panels", "N", &opts.panels, 1, MAX_PANELS,
                  QK_STR(QK_DEFAULT_ROT_FIG_PANELS), "heads to draw (at most " QK_STR(MAX_PANELS) ")"),
    QK_OPTION_INT64(OPT_MAX_POINTS, "max-points", "N", &opts.max_points, 0, 2147483647L,
                    QK_STR(QK_DEFAULT_ROT_FIG_POINTS),
                    "at most N vectors per kind and head on {a, b} (0 = all)"),
    QK_OPTION_INT64(OPT_COMPLEMENT_POINTS, "complement-max-points", "N",
                    &opts.complement_max_points, 0, 2147483647L,
                    QK_STR(QK_DEFAULT_ROT_FIG_COMPLEMENT_POINTS),
                    "at most N vectors per kind and pair (0 = all)"),
    {OPT_HEAD, "head", "lLLhHH", "draw this query head alone, not the seed's sample (the "
                                 "per-head figures, make heads/DATASET/lLLhHH)"},
    QK_OPTION_NO_VERIFY,
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-rotation-points",
    "qk-rotation-points [OPTIONS] --ab-output FILE --complement-output FILE\n"
    "                   --panels-output FILE STORE",
    "Draws query heads of a store as Python's random.Random(SEED).sample(heads, N)\n"
    "does on the list of the heads qk-rotate analysed, sorted by (layer, head).\n"
    "Writes the raw projections of each drawn head's query and key vectors on its\n"
    "drift axis a and separation axis b, and the pooled-centred coordinates of the\n"
    "first drawn head's vectors on each principal pair of the complement of {a, b}\n"
    "(the basis of qk-complement). Rows beyond the maximum are thinned to evenly\n"
    "spaced ones in store order.\n",
    options_table, NULL,
    "qk-rotation-points --ab-output ab.tsv --complement-output c.tsv \\\n"
    "  --panels-output p.tsv build/llama3.2-3b/store.qks", NULL};

static void parse_option(options *o, int key, const char *value, const char **axes)
{
    switch (key) {
    case OPT_AXES: *axes = value; break;
    case OPT_AB: o->ab_output = value; break;
    case OPT_COMPLEMENT: o->complement_output = value; break;
    case OPT_PANELS_OUT: o->panels_output = value; break;
    case OPT_HEAD: qk_opt_head("--head", value, &o->head_layer, &o->head); break;
    }
}

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->head_layer = -1;
    const char *axes = NULL, *value;
    qk_args a;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;)
        parse_option(o, key, value, &axes);
    qk_args_operands(&a, 1, 1);
    if (!o->ab_output || !o->complement_output || !o->panels_output)
        qk_usage_error(&program);
    o->store = a.operands[0];
    o->verify = a.verify;
    o->axes = axes ? qk_strdup(axes) : qk_path_beside(o->store, "rotation_axes.bin");
}

/* ---- the heads ---------------------------------------------------------------------- */

/* A head of the axes file with its two configs in the store. */
typedef struct head_ref {
    int axes_index;
    int layer, head, kv_head;
    const qk_store_config *q, *k;
} head_ref;

static int cmp_head(const void *a, const void *b)
{
    const head_ref *x = a, *y = b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return (x->head > y->head) - (x->head < y->head);
}

static const qk_store_config *find_config(const qk_store *s, int layer, int head, char kind)
{
    for (int i = 0; i < s->n_configs; i++)
        if (s->configs[i].layer == layer && s->configs[i].head == head &&
            s->configs[i].kind == kind)
            return &s->configs[i];
    return NULL;
}

/* Every head of the axes file, sorted by (layer, head), with its rows
 * checked against the store. */
static head_ref *axes_heads(const qk_store *s, const qk_rot_axes_file *ax, const options *o)
{
    if (ax->dim != s->dim)
        qk_die(QK_EXIT_DATA, o->axes, "dimension %d, the store has %d", ax->dim, s->dim);
    head_ref *heads = qk_calloc((size_t)(ax->n_heads ? ax->n_heads : 1), sizeof *heads);
    for (int h = 0; h < ax->n_heads; h++) {
        head_ref *r = &heads[h];
        *r = (head_ref){h, ax->layer[h], ax->head[h], ax->kv_head[h], NULL, NULL};
        r->q = find_config(s, r->layer, r->head, 'q');
        r->k = find_config(s, r->layer, r->kv_head, 'k');
        if (!r->q || !r->k)
            qk_die(QK_EXIT_DATA, o->axes, "head l%02dh%02d (key head %d) is not in %s",
                   r->layer, r->head, r->kv_head, o->store);
        if (ax->pooled[h].n != r->q->rows + r->k->rows)
            qk_die(QK_EXIT_DATA, o->axes, "head l%02dh%02d: %" PRId64 " rows, the store has %"
                   PRId64 " (the axes are from another store)", r->layer, r->head,
                   ax->pooled[h].n, r->q->rows + r->k->rows);
    }
    qsort(heads, (size_t)ax->n_heads, sizeof *heads, cmp_head);
    return heads;
}

/* ---- projections ---------------------------------------------------------------------- */

/* The rows kept of a config: all, or max_points evenly spread ones (row
 * k * rows / max_points for k = 0, 1, ...). */
static int64_t kept_rows(int64_t rows, int64_t max_points)
{
    return max_points <= 0 || rows <= max_points ? rows : max_points;
}

static int64_t kept_row(int64_t k, int64_t rows, int64_t kept)
{
    return kept == rows ? k : k * rows / kept;
}

/* Row i of a config's vectors in double, minus centre (NULL: no centring). */
static void row_of(const float *vector, int64_t i, int dim, const double *centre, double *out)
{
    const float *x = vector + i * dim;
    for (int j = 0; j < dim; j++)
        out[j] = (double)x[j] - (centre ? centre[j] : 0.0);
}

/* The raw projections on a and b of the kept rows of one kind;
 * returns their number. */
static int64_t write_ab(FILE *fp, int panel, char kind, const qk_store_config *c,
                        const float *vector, int dim, const double *a, const double *b,
                        int64_t max_points, double *x)
{
    int64_t kept = kept_rows(c->rows, max_points);
    for (int64_t k = 0; k < kept; k++) {
        int64_t i = kept_row(k, c->rows, kept);
        row_of(vector, i, dim, NULL, x);
        fprintf(fp, "%d\t%c\t%d\t%.9g\t%.9g\n", panel, kind, (int)c->position[i],
                cblas_ddot(dim, x, 1, a, 1) + 0.0, cblas_ddot(dim, x, 1, b, 1) + 0.0);
    }
    return kept;
}

/* The centred coordinates of the kept rows of one kind on each
 * complement pair; returns their number (per pair). */
static int64_t write_pairs(FILE *fp, char kind, const qk_store_config *c, const float *vector,
                           int dim, const qk_comp_work *w, int n_pairs, int64_t max_points,
                           double *x)
{
    int64_t kept = kept_rows(c->rows, max_points);
    for (int p = 0; p < n_pairs; p++) {
        const double *v0 = w->basis + (size_t)(2 * p) * dim;
        const double *v1 = w->basis + (size_t)(2 * p + 1) * dim;
        for (int64_t k = 0; k < kept; k++) {
            int64_t i = kept_row(k, c->rows, kept);
            row_of(vector, i, dim, w->pooled.mean, x);
            fprintf(fp, "%d\t%c\t%d\t%.9g\t%.9g\n", p, kind, (int)c->position[i],
                    cblas_ddot(dim, x, 1, v0, 1) + 0.0, cblas_ddot(dim, x, 1, v1, 1) + 0.0);
        }
    }
    return kept;
}

/* ---- main ------------------------------------------------------------------------------ */

typedef struct panel {
    head_ref ref;
    int draw;
    int64_t plotted_q, plotted_k;
} panel;

static int cmp_panel(const void *a, const void *b)
{
    return cmp_head(&((const panel *)a)->ref, &((const panel *)b)->ref);
}

static void write_ab_points(const options *o, const qk_store *s, const qk_rot_axes_file *ax,
                            panel *panels, int n)
{
    int d = ax->dim;
    double *x = qk_doubles((size_t)d);
    qk_store_buf buf = {0};
    qk_atomic out;
    qk_output_open(&out, o->ab_output);
    fputs("panel\tkind\tposition\ta\tb\n", out.fp);
    for (int i = 0; i < n; i++) {
        const head_ref *r = &panels[i].ref;
        const double *a = ax->a + (size_t)r->axes_index * d, *b = ax->b + (size_t)r->axes_index * d;
        const float *q = qk_store_vectors_or_die(s, o->store, (int)(r->q - s->configs), &buf);
        panels[i].plotted_q = write_ab(out.fp, i, 'q', r->q, q, d, a, b, o->max_points, x);
        const float *k = qk_store_vectors_or_die(s, o->store, (int)(r->k - s->configs), &buf);
        panels[i].plotted_k = write_ab(out.fp, i, 'k', r->k, k, d, a, b, o->max_points, x);
    }
    qk_output_commit(&out);
    qk_store_buf_free(&buf);
    free(x);
}

/* The complement of the first drawn head (NULL: none, the header alone);
 * returns its pair count. */
static int write_complement_points(const options *o, const qk_store *s,
                                   const qk_rot_axes_file *ax, const head_ref *r,
                                   int64_t *plotted_q, int64_t *plotted_k)
{
    qk_atomic out;
    qk_output_open(&out, o->complement_output);
    fputs("pair\tkind\tposition\tu\tw\n", out.fp);
    *plotted_q = *plotted_k = 0;
    if (!r) {
        qk_output_commit(&out);
        return 0;
    }
    int d = ax->dim, h = r->axes_index;
    qk_comp_work w;
    qk_comp_work_init(&w, d);
    qk_comp_head basis;
    qk_err err;
    if (qk_comp_basis(&ax->pooled[h], ax->a + (size_t)h * d, ax->b + (size_t)h * d, &w, &basis,
                      &err) != 0)
        qk_die(QK_EXIT_DATA, o->axes, "head l%02dh%02d: %s", r->layer, r->head, err.msg);
    double *x = qk_doubles((size_t)d);
    qk_store_buf buf = {0};
    const float *q = qk_store_vectors_or_die(s, o->store, (int)(r->q - s->configs), &buf);
    *plotted_q = write_pairs(out.fp, 'q', r->q, q, d, &w, basis.n_pairs,
                             o->complement_max_points, x);
    const float *k = qk_store_vectors_or_die(s, o->store, (int)(r->k - s->configs), &buf);
    *plotted_k = write_pairs(out.fp, 'k', r->k, k, d, &w, basis.n_pairs,
                             o->complement_max_points, x);
    qk_output_commit(&out);
    qk_store_buf_free(&buf);
    free(x);
    qk_comp_work_free(&w);
    return basis.n_pairs;
}

static void write_panels(const options *o, const qk_store *s, const panel *p, int n,
                         int available, int n_pairs, int64_t comp_q, int64_t comp_k)
{
    qk_atomic out;
    qk_output_open(&out, o->panels_output);
    fputs("panel\tdraw\tdataset\tlayer\thead\tkv_head\tdim\tn_q\tn_k\tplotted_q\tplotted_k"
          "\tcomplement_pairs\tcomplement_plotted_q\tcomplement_plotted_k\theads_available"
          "\tseed\n", out.fp);
    for (int i = 0; i < n; i++) {
        const head_ref *r = &p[i].ref;
        int first = p[i].draw == 0;
        fprintf(out.fp, "%d\t%d\t%.56s\t%d\t%d\t%d\t%d\t%" PRId64 "\t%" PRId64 "\t%" PRId64
                "\t%" PRId64 "\t%d\t%" PRId64 "\t%" PRId64 "\t%d\t%" PRId64 "\n", i, p[i].draw,
                s->header.dataset_id, r->layer, r->head, r->kv_head, s->dim, r->q->rows,
                r->k->rows, p[i].plotted_q, p[i].plotted_k, first ? n_pairs : 0,
                first ? comp_q : 0, first ? comp_k : 0, available, o->seed);
    }
    qk_output_commit(&out);
}

/* --head: the one head asked for (its index in picks[0]); dies when the
 * axes file has no such head. */
static int pick_head(const head_ref *heads, int n_heads, const options *o, int *picks)
{
    for (int i = 0; i < n_heads; i++)
        if (heads[i].layer == o->head_layer && heads[i].head == o->head) {
            picks[0] = i;
            return 1;
        }
    qk_die(QK_EXIT_DATA, o->axes, "no query head l%02dh%02d", o->head_layer, o->head);
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-rotation-points");
    parse_args(argc, argv, &opts);
    options o = opts;
    openblas_set_num_threads(1);
    qk_store s;
    qk_open_store(o.store, &s, o.verify);
    qk_rot_axes_file ax;
    qk_err err;
    if (qk_rot_axes_load(o.axes, &ax, &err) != 0)
        qk_die(QK_EXIT_DATA, o.axes, "%s", err.msg);
    /* no head fitted (a partial or tiny capture): empty tables, from which
     * the figures draw canvases that say so */
    if (ax.n_heads == 0)
        qk_warn("%s: no head: the point tables list none", o.axes);
    head_ref *heads = axes_heads(&s, &ax, &o);
    int n = o.panels < ax.n_heads ? o.panels : ax.n_heads;
    int picks[MAX_PANELS];
    if (o.head_layer >= 0)
        n = pick_head(heads, ax.n_heads, &o, picks);
    else if (n > 0 && qk_python_sample((uint32_t)o.seed, ax.n_heads, n, picks) != 0)
        qk_die(QK_EXIT_DATA, o.axes, "cannot draw %d of %d heads", n, ax.n_heads);
    panel panels[MAX_PANELS];
    for (int i = 0; i < n; i++)
        panels[i] = (panel){heads[picks[i]], i, 0, 0};
    /* the complement figure shows the first head drawn; the {a, b} figure
     * shows the drawn heads in (layer, head) order */
    int64_t comp_q, comp_k;
    int n_pairs = write_complement_points(&o, &s, &ax, n ? &panels[0].ref : NULL, &comp_q,
                                          &comp_k);
    qsort(panels, (size_t)n, sizeof *panels, cmp_panel);
    write_ab_points(&o, &s, &ax, panels, n);
    write_panels(&o, &s, panels, n, ax.n_heads, n_pairs, comp_q, comp_k);
    free(heads);
    free(o.axes);
    qk_rot_axes_free(&ax);
    qk_store_close(&s);
    return QK_EXIT_OK;
}
