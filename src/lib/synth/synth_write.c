/* Writing one synthetic dataset in the sniffed-qk layout: config
 * directories with data.parquet, truth.json per query config, README.md and
 * _saver_state.json as the capture tool writes them, and synth-truth.tsv,
 * all in a temporary directory renamed into place when complete. */
#include "qk/synth.h"
#include "qk/source.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qk/pqwrite.h"
#include "qk/rng.h"

static const char *mode_name(int mode)
{
    return mode == QK_SYNTH_PLANTED_LINEAR ? "planted-linear" : "population";
}

/* ---- small writers ------------------------------------------------------- */

static void json_array(FILE *fp, const double *v, int n)
{
    fputc('[', fp);
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", fp);
        qk_fprint_double(fp, v[i]);
    }
    fputc(']', fp);
}

static void json_number(FILE *fp, const char *indent, const char *key, double v, int last)
{
    fprintf(fp, "%s\"%s\": ", indent, key);
    qk_fprint_double(fp, v);
    fputs(last ? "\n" : ",\n", fp);
}

static void json_kind(FILE *fp, const char *name, const qk_synth_kind *k, int n_planes)
{
    const char *in = "      ";
    fprintf(fp, "    \"%s\": {\n", name);
    json_number(fp, in, "mu_a", k->mu_a, 0);
    json_number(fp, in, "alpha", k->alpha, 0);
    json_number(fp, in, "r", k->r, 0);
    json_number(fp, in, "sd_a", k->sd_a, 0);
    json_number(fp, in, "lean", k->lean, 0);
    json_number(fp, in, "mu_b", k->mu_b, 0);
    json_number(fp, in, "cv_b", k->cv_b, 0);
    json_number(fp, in, "t_perp", k->t_perp, 0);
    json_number(fp, in, "ramp", k->ramp, 0);
    json_number(fp, in, "doc_share", k->doc_share, 0);
    fprintf(fp, "%s\"plane_radius\": ", in);
    json_array(fp, k->radius, n_planes);
    fputc('\n', fp);
    fputs("    },\n", fp);
}

static void json_planes(FILE *fp, const qk_synth_model *m)
{
    fputs("    \"planes\": [", fp);
    for (int p = 0; p < m->n_planes; p++) {
        const qk_synth_plane *pl = &m->plane[p];
        fprintf(fp, "%s\n      {\"basis_columns\": [%d, %d], \"rope_index\": %d, \"frequency\": ",
                p ? "," : "", pl->col, pl->col + 1, pl->rope_index);
        qk_fprint_double(fp, pl->freq);
        fputs(", \"turns\": ", fp);
        qk_fprint_double(fp, pl->turns);
        fputs(", \"phase\": ", fp);
        qk_fprint_double(fp, pl->phase);
        fputs(", \"slope\": ", fp);
        qk_fprint_double(fp, pl->slope);
        fputs(", \"radius_q\": ", fp);
        qk_fprint_double(fp, m->kind[QK_SYNTH_Q].radius[p]);
        fputs(", \"radius_k\": ", fp);
        qk_fprint_double(fp, m->kind[QK_SYNTH_K].radius[p]);
        fputc('}', fp);
    }
    fputs(m->n_planes ? "\n    ],\n" : "],\n", fp);
}

/* Sum, largest and smallest of the complement variances (basis columns
 * 2 .. d-1) of one kind. */
static void json_complement(FILE *fp, const qk_synth_model *m)
{
    fputs("    \"complement\": {", fp);
    for (int k = 0; k < 2; k++) {
        const double *nv = m->noise_var[k];
        double sum = 0, lo = nv[2], hi = nv[2];
        for (int j = 2; j < m->d; j++) {
            sum += nv[j];
            lo = nv[j] < lo ? nv[j] : lo;
            hi = nv[j] > hi ? nv[j] : hi;
        }
        const char *kind = k == QK_SYNTH_Q ? "q" : "k";
        fprintf(fp, "%s\"%s_noise_total\": ", k ? ", " : "", kind);
        qk_fprint_double(fp, sum);
        fprintf(fp, ", \"%s_noise_max\": ", kind);
        qk_fprint_double(fp, hi);
        fprintf(fp, ", \"%s_noise_min\": ", kind);
        qk_fprint_double(fp, lo);
    }
    fputs(", \"pair_decay_exponent\": ", fp);
    qk_fprint_double(fp, QK_SYNTH_SPECTRUM_DECAY);
    fputs("},\n", fp);
}

static void json_population(FILE *fp, const qk_synth_truth *t)
{
    const char *in = "    ";
    fputs("  \"population\": {\n    \"a_pop\": ", fp);
    json_array(fp, t->a, t->d);
    fputs(",\n    \"b_pop\": ", fp);
    json_array(fp, t->b, t->d);
    fputs(",\n", fp);
    json_number(fp, in, "alpha_q", t->alpha_q, 0);
    json_number(fp, in, "alpha_k", t->alpha_k, 0);
    json_number(fp, in, "mu_q_a", t->mu_q_a, 0);
    json_number(fp, in, "mu_k_a", t->mu_k_a, 0);
    json_number(fp, in, "mu_q_b", t->mu_q_b, 0);
    json_number(fp, in, "mu_k_b", t->mu_k_b, 0);
    json_number(fp, in, "r_q_a", t->r_q_a, 0);
    json_number(fp, in, "r_k_a", t->r_k_a, 0);
    json_number(fp, in, "position_r", t->position_r, 0);
    json_number(fp, in, "bias_strength", t->bias_strength, 0);
    json_number(fp, in, "var_frac_a", t->var_frac_a, 0);
    json_number(fp, in, "var_frac_b", t->var_frac_b, 0);
    json_number(fp, in, "plane_var_fraction", t->plane_var_fraction, 0);
    json_number(fp, in, "separation_strength", t->separation_strength, 0);
    json_number(fp, in, "content_var_b", t->content_var_b, 0);
    json_number(fp, in, "total_var", t->total_var, 0);
    json_number(fp, in, "pc0_explained_variance", t->pc0_ev, 0);
    json_number(fp, in, "pc0_r_q", t->pc0_r_q, 0);
    json_number(fp, in, "pc0_r_k", t->pc0_r_k, 1);
    fputs("  }\n", fp);
}

/* The statistics the fixtures' truth files carry, in row order. */
static void json_file_stats(FILE *fp, const qk_synth_rows *rows, const float *vector, int d)
{
    int64_t pos_sum = 0, id_sum = 0;
    double vsum = 0, vabs = 0;
    for (int64_t i = 0; i < rows->n; i++) {
        pos_sum += rows->position[i];
        id_sum += rows->example_id[i];
    }
    for (int64_t i = 0; i < rows->n * d; i++) {
        vsum += vector[i];
        vabs += vector[i] < 0 ? -(double)vector[i] : vector[i];
    }
    fprintf(fp, "  \"rows\": %lld,\n  \"position_sum\": %lld,\n  \"example_id_sum\": %lld,\n",
            (long long)rows->n, (long long)pos_sum, (long long)id_sum);
    fputs("  \"vector_sum\": ", fp);
    qk_fprint_double(fp, vsum);
    fputs(",\n  \"vector_abs_sum\": ", fp);
    qk_fprint_double(fp, vabs);
    fputs(",\n", fp);
}

void qk_synth_write_truth_json(FILE *fp, const qk_dataset *ds,
                               const qk_synth_options *o,
                               const qk_synth_model *m,
                               const qk_synth_truth *t,
                               const qk_synth_rows *rows, const float *vector)
{
    int d = m->d;
    double *u = qk_malloc((size_t)d * sizeof *u), *s = qk_malloc((size_t)d * sizeof *s);
    for (int i = 0; i < d; i++) {
        u[i] = m->basis[i * d + 0];
        s[i] = m->basis[i * d + 1];
    }
    fprintf(fp, "{\n  \"generator\": \"qk-synth %s\",\n", QK_VERSION_STRING);
    fprintf(fp, "  \"dataset\": \"%s\",\n", ds->id);
    fprintf(fp, "  \"config\": \"l%02dh%02dq\",\n  \"key_config\": \"l%02dh%02dk\",\n",
            m->layer, m->q_head, m->layer, m->kv_head);
    fprintf(fp, "  \"layer\": %d,\n  \"q_head\": %d,\n  \"kv_head\": %d,\n", m->layer,
            m->q_head, m->kv_head);
    fprintf(fp, "  \"dim\": %d,\n  \"context_length\": %d,\n  \"bucket_size\": %d,\n", d,
            m->context, ds->bucket_size);
    fprintf(fp, "  \"mode\": \"%s\",\n  \"stratified\": %s,\n  \"seed\": %llu,\n",
            mode_name(o->mode), o->stratified ? "true" : "false",
            (unsigned long long)o->seed);
    json_file_stats(fp, rows, vector, d);
    fputs("  \"planted\": {\n    \"u\": ", fp);
    json_array(fp, u, d);
    fputs(",\n    \"s\": ", fp);
    json_array(fp, s, d);
    fputs(",\n", fp);
    json_kind(fp, "q", &m->kind[QK_SYNTH_Q], m->n_planes);
    json_kind(fp, "k", &m->kind[QK_SYNTH_K], m->n_planes);
    json_planes(fp, m);
    json_complement(fp, m);
    fprintf(fp, "    \"nope_layer\": %s\n  },\n", ds->nope[m->layer] ? "true" : "false");
    json_population(fp, t);
    fputs("}\n", fp);
    free(u);
    free(s);
}

/* ---- synth-truth.tsv ---------------------------------------------------------- */

static const char *tsv_header =
    "dataset\tconfig\tlayer\tq_head\tkv_head\tmode\tn_planes"
    "\tplanted_mu_q_a\tplanted_mu_k_a\tplanted_alpha_q\tplanted_alpha_k"
    "\tplanted_r_q\tplanted_r_k\tplanted_lean_q\tplanted_mu_q_b\tplanted_mu_k_b"
    "\tplanted_cv_b_q\tplanted_cv_b_k\tplanted_t_perp_q\tplanted_t_perp_k"
    "\tpop_alpha_q\tpop_alpha_k\tpop_mu_q_a\tpop_mu_k_a\tpop_mu_q_b\tpop_mu_k_b"
    "\tpop_r_q_a\tpop_r_k_a\tpop_position_r\tpop_bias_strength\tpop_var_frac_a"
    "\tpop_var_frac_b\tpop_plane_var_fraction\tpop_separation_strength"
    "\tpop_content_var_b\tpop_total_var\tpop_pc0_ev\tpop_pc0_r_q\tpop_pc0_r_k\n";

static void tsv_values(FILE *fp, const double *v, int n)
{
    for (int i = 0; i < n; i++) {
        fputc('\t', fp);
        qk_fprint_double(fp, v[i]);
    }
}

static void tsv_row(FILE *fp, const qk_dataset *ds, const qk_synth_model *m,
                    const qk_synth_truth *t)
{
    const qk_synth_kind *q = &m->kind[QK_SYNTH_Q], *k = &m->kind[QK_SYNTH_K];
    fprintf(fp, "%s\tl%02dh%02dq\t%d\t%d\t%d\t%s\t%d", ds->id, m->layer, m->q_head, m->layer,
            m->q_head, m->kv_head, mode_name(m->mode), m->n_planes);
    const double planted[] = {q->mu_a, k->mu_a, q->alpha, k->alpha, q->r, k->r, q->lean,
                              q->mu_b, k->mu_b, q->cv_b, k->cv_b, q->t_perp, k->t_perp};
    const double pop[] = {t->alpha_q, t->alpha_k, t->mu_q_a, t->mu_k_a, t->mu_q_b,
                          t->mu_k_b, t->r_q_a, t->r_k_a, t->position_r, t->bias_strength,
                          t->var_frac_a, t->var_frac_b, t->plane_var_fraction,
                          t->separation_strength, t->content_var_b, t->total_var,
                          t->pc0_ev, t->pc0_r_q, t->pc0_r_k};
    tsv_values(fp, planted, (int)(sizeof planted / sizeof planted[0]));
    tsv_values(fp, pop, (int)(sizeof pop / sizeof pop[0]));
    fputc('\n', fp);
}

/* ---- _saver_state.json and README.md --------------------------------------------- */

typedef struct meta_entry {
    const char *key;
    char value[160]; /* already formatted: a JSON string or number */
} meta_entry;

static int compare_entries(const void *x, const void *y)
{
    return strcmp(((const meta_entry *)x)->key, ((const meta_entry *)y)->key);
}

/* Distinct (layer, key head) pairs among the capture tool's 300 draws,
 * cross-attention layers included, as its metadata counts them. */
static int sampled_key_heads(const qk_dataset *ds)
{
    int n = ds->n_layers * ds->n_q_heads;
    int k = n < QK_SYNTH_SAMPLED_HEADS ? n : QK_SYNTH_SAMPLED_HEADS;
    int *picks = qk_malloc((size_t)k * sizeof *picks);
    unsigned char *seen = qk_calloc((size_t)ds->n_layers * ds->n_kv_heads, 1);
    qk_python_sample(0, n, k, picks);
    int count = 0, group = ds->n_q_heads / ds->n_kv_heads;
    for (int i = 0; i < k; i++) {
        int layer = picks[i] / ds->n_q_heads, kv = picks[i] % ds->n_q_heads / group;
        if (!seen[layer * ds->n_kv_heads + kv]++)
            count++;
    }
    free(picks);
    free(seen);
    return count;
}

static void meta_str(meta_entry *e, int *n, const char *key, const char *value)
{
    e[*n].key = key;
    snprintf(e[*n].value, sizeof e[*n].value, "\"%s\"", value);
    (*n)++;
}

static void meta_int(meta_entry *e, int *n, const char *key, long long value)
{
    e[*n].key = key;
    snprintf(e[*n].value, sizeof e[*n].value, "%lld", value);
    (*n)++;
}

/* The metadata keys of the capture tool's saver state
 * (viktor-shcherb/qk-sniffer) with the values of a production run, plus
 * the synthetic_* keys of the generator. Sorted. */
static int metadata(const qk_dataset *ds, const qk_synth_options *o, int n_heads,
                    meta_entry *e)
{
    int n = 0, k = ds->n_layers * ds->n_q_heads;
    k = k < QK_SYNTH_SAMPLED_HEADS ? k : QK_SYNTH_SAMPLED_HEADS;
    char generator[64];
    snprintf(generator, sizeof generator, "qk-synth %s", QK_VERSION_STRING);
    meta_str(e, &n, "attention_scope", "full_only");
    meta_str(e, &n, "dataset_branch", ds->revision);
    meta_str(e, &n, "dataset_name", "");
    meta_str(e, &n, "dataset_repo", "viktoroo/sniffed-qk");
    meta_str(e, &n, "dataset_split", "test");
    meta_int(e, &n, "head_sampling_full_attention_only", 1);
    meta_int(e, &n, "head_sampling_full_layer_count", ds->n_layers);
    meta_int(e, &n, "head_sampling_num_key_heads", ds->n_kv_heads);
    meta_int(e, &n, "head_sampling_num_layers", ds->n_layers);
    meta_int(e, &n, "head_sampling_num_query_heads", ds->n_q_heads);
    meta_int(e, &n, "head_sampling_requested_query_heads", QK_SYNTH_SAMPLED_HEADS);
    meta_int(e, &n, "head_sampling_seed", 0);
    meta_int(e, &n, "head_sampling_selected_key_heads", sampled_key_heads(ds));
    meta_int(e, &n, "head_sampling_selected_query_heads", k);
    meta_int(e, &n, "head_sampling_sliding_candidates_excluded", 0);
    meta_int(e, &n, "head_sampling_sliding_layer_count", 0);
    meta_str(e, &n, "head_sampling_strategy", "random_query");
    meta_int(e, &n, "sampling_bucket_size", ds->bucket_size);
    meta_str(e, &n, "sampling_strategy", "uniform");
    meta_str(e, &n, "source_dataset", "synthetic:qk-synth");
    meta_str(e, &n, "synthetic_generator", generator);
    meta_str(e, &n, "synthetic_mode", mode_name(o->mode));
    meta_int(e, &n, "synthetic_query_heads_written", n_heads);
    meta_int(e, &n, "synthetic_seed", (long long)o->seed);
    meta_int(e, &n, "synthetic_stratified", o->stratified);
    qsort(e, (size_t)n, sizeof *e, compare_entries);
    return n;
}

static int compare_bucket_keys(const void *x, const void *y)
{
    char a[16], b[16];
    snprintf(a, sizeof a, "%d", *(const int *)x);
    snprintf(b, sizeof b, "%d", *(const int *)y);
    return strcmp(a, b);
}

static void write_saver_state(FILE *fp, const qk_dataset *ds, const char *model,
                              const int64_t *counts, int n_buckets, const meta_entry *e,
                              int n_meta)
{
    /* json.dumps(indent=2, sort_keys=True): bucket keys are strings, so
     * "10" sorts before "2" */
    int *order = qk_malloc((size_t)n_buckets * sizeof *order);
    for (int i = 0; i < n_buckets; i++)
        order[i] = i;
    qsort(order, (size_t)n_buckets, sizeof *order, compare_bucket_keys);
    fputs("{\n  \"bucket_counts\": {", fp);
    int first = 1;
    for (int i = 0; i < n_buckets; i++) {
        if (!counts[order[i]])
            continue;
        fprintf(fp, "%s\n    \"%d\": %lld", first ? "" : ",", order[i],
                (long long)counts[order[i]]);
        first = 0;
    }
    fputs(first ? "},\n" : "\n  },\n", fp);
    fputs("  \"model_metadata\": {", fp);
    for (int i = 0; i < n_meta; i++)
        fprintf(fp, "%s\n    \"%s\": %s", i ? "," : "", e[i].key, e[i].value);
    fprintf(fp, "\n  },\n  \"model_name\": \"%s\"\n}\n", model);
    (void)ds;
    free(order);
}

static int compare_strings(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static void write_readme(FILE *fp, const qk_dataset *ds, const qk_synth_options *o,
                         const char *model, char **configs, int n_configs,
                         int64_t captured_rows, const int64_t *counts, int n_buckets,
                         const meta_entry *e, int n_meta)
{
    fputs("# sniffed-qk (model specialization)\n\n## Branching\n\n", fp);
    fprintf(fp, "Branch `%s` holds one model's captures. This branch is synthetic: "
                "it was written by qk-synth, with planted query/key geometry "
                "(see truth.json and synth-truth.tsv).\n\n", ds->revision);
    fputs("## Current Specialization Metadata\n\n", fp);
    fprintf(fp, "- `model`: `%s`\n- `source_dataset`: `synthetic:qk-synth`\n", model);
    fputs("- `dataset_name`: ``\n- `dataset_split`: `test`\n- `attention_scope`: `full_only`\n"
          "- `sampling_strategy`: `uniform`\n- `distributed_world_size`: `unknown`\n", fp);
    fprintf(fp, "- `captured_configs`: `%d`\n- `captured_rows`: `%lld`\n- `bucket_counts`: ",
            n_configs, (long long)captured_rows);
    for (int b = 0, first = 1; b < n_buckets; b++) {
        if (!counts[b])
            continue;
        fprintf(fp, "%sb%d=%lld", first ? "" : ", ", b, (long long)counts[b]);
        first = 0;
    }
    fprintf(fp, "\n\n## Bucket Parameters\n\n- `sampling_bucket_size`: `%d`\n\n", ds->bucket_size);
    fputs("## Captured Configs\n\n", fp);
    for (int i = 0; i < n_configs; i++)
        fprintf(fp, "- `%s`\n", configs[i]);
    fputs("\n## Dataset Layout\n\n"
          "One directory per config: `lLLhHHq/data.parquet` for query head HH of layer LL, "
          "`lLLhKKk/data.parquet` for key head KK = HH / (n_q / n_kv). Query directories also "
          "hold truth.json; synth-truth.tsv lists every query head.\n\n"
          "## Dataset Columns\n\n"
          "- `bucket` (int32): position // sampling_bucket_size\n"
          "- `example_id` (int32): opaque example id\n"
          "- `position` (int32): token index, 0-based\n"
          "- `vector` (list<float32>, head_dim): query or key vector, bf16-exact values\n"
          "- `sliding_window` (null)\n\n"
          "## Generation Code\n\n", fp);
    fprintf(fp, "`qk-synth --dataset %s --seed %llu --mode %s%s` (qkreport %s)\n\n", ds->id,
            (unsigned long long)o->seed, mode_name(o->mode),
            o->stratified ? " --stratified" : "", QK_VERSION_STRING);
    fputs("## Loading Data\n\n"
          "Select files by exact config name, e.g. "
          "`load_dataset(\"parquet\", data_files=\"l00h00q/*.parquet\")`.\n\n"
          "## Additional Captured Metadata\n\n", fp);
    for (int i = 0; i < n_meta; i++) {
        if (strcmp(e[i].key, "dataset_name") == 0 || strcmp(e[i].key, "attention_scope") == 0 ||
            strcmp(e[i].key, "dataset_split") == 0 || strcmp(e[i].key, "sampling_strategy") == 0 ||
            strcmp(e[i].key, "source_dataset") == 0 || strcmp(e[i].key, "sampling_bucket_size") == 0)
            continue; /* already listed above */
        const char *v = e[i].value;
        size_t len = strlen(v);
        if (v[0] == '"')
            fprintf(fp, "- `%s`: `%.*s`\n", e[i].key, (int)(len - 2), v + 1);
        else
            fprintf(fp, "- `%s`: `%s`\n", e[i].key, v);
    }
}

/* ---- the dataset ------------------------------------------------------------------ */

typedef struct dataset_writer {
    const qk_dataset *ds;
    const qk_synth_options *o;
    char *dir;          /* the temporary directory */
    int64_t *bucket_counts;
    int n_buckets;
    int64_t captured_rows;
    char **configs;
    int n_configs;
    FILE *tsv;          /* memory stream, written out last */
    char *tsv_text;
    size_t tsv_len;
} dataset_writer;

static char *config_path(const char *dir, int layer, int head, char kind, const char *file)
{
    char name[64];
    snprintf(name, sizeof name, "l%02dh%02d%c", layer, head, kind);
    char *sub = qk_path_join(dir, name);
    if (!file)
        return sub;
    char *path = qk_path_join(sub, file);
    free(sub);
    return path;
}

static int write_config(dataset_writer *w, int layer, int head, char kind,
                        const qk_synth_rows *rows, const float *vector, qk_err *err)
{
    char *sub = config_path(w->dir, layer, head, kind, NULL);
    if (mkdir(sub, 0755) != 0 && errno != EEXIST) {
        qk_fail(err, "cannot create directory %s: %s", sub, strerror(errno));
        free(sub);
        return -1;
    }
    char *path = qk_path_join(sub, "data.parquet");
    qk_pq_write_opts opts;
    qk_pq_write_opts_default(&opts);
    opts.dictionary_vectors = 1;
    int rc = qk_parquet_write_file(path, &opts, rows->n, w->ds->head_dim, rows->bucket,
                                   rows->example_id, rows->position, vector, err);
    free(path);
    free(sub);
    if (rc != 0)
        return -1;
    for (int64_t i = 0; i < rows->n; i++)
        if (rows->bucket[i] >= 0 && rows->bucket[i] < w->n_buckets)
            w->bucket_counts[rows->bucket[i]]++;
    w->captured_rows += rows->n;
    char name[64];
    snprintf(name, sizeof name, "l%02dh%02d%c", layer, head, kind);
    w->configs = qk_realloc(w->configs, (size_t)(w->n_configs + 1) * sizeof *w->configs);
    w->configs[w->n_configs++] = qk_strdup(name);
    return 0;
}

static int write_text_file(const char *dir, const char *name, const char *text, size_t len,
                           qk_err *err)
{
    char *path = qk_path_join(dir, name);
    qk_atomic a;
    int rc = qk_atomic_open(&a, path, err);
    if (rc == 0) {
        fwrite(text, 1, len, a.fp);
        rc = qk_atomic_commit(&a, err);
    }
    free(path);
    return rc;
}

/* Runs fn(fp, arg) into a memory buffer and writes it atomically. */
typedef void (*text_fn)(FILE *fp, void *arg);

static int write_generated(const char *dir, const char *name, text_fn fn, void *arg, qk_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    if (!fp)
        return qk_fail(err, "cannot open a memory stream: %s", strerror(errno));
    fn(fp, arg);
    fclose(fp);
    int rc = write_text_file(dir, name, text, len, err);
    free(text);
    return rc;
}

typedef struct truth_args {
    const dataset_writer *w;
    const qk_synth_model *m;
    const qk_synth_truth *t;
    const qk_synth_rows *rows;
    const float *vector;
} truth_args;

static void truth_fn(FILE *fp, void *arg)
{
    truth_args *a = arg;
    qk_synth_write_truth_json(fp, a->w->ds, a->w->o, a->m, a->t, a->rows, a->vector);
}

static int write_query_head(dataset_writer *w, int layer, int q_head, const qk_synth_rows *rows,
                            float *vector, qk_err *err)
{
    qk_synth_model m;
    if (qk_synth_model_init(&m, w->ds, w->o, layer, q_head, err) != 0)
        return -1;
    qk_synth_truth t;
    int rc = qk_synth_population(&m, &t, err);
    if (rc == 0) {
        qk_synth_vectors(&m, QK_SYNTH_Q, rows, vector);
        rc = write_config(w, layer, q_head, 'q', rows, vector, err);
    }
    if (rc == 0) {
        char *sub = config_path(w->dir, layer, q_head, 'q', NULL);
        truth_args args = {w, &m, &t, rows, vector};
        rc = write_generated(sub, "truth.json", truth_fn, &args, err);
        free(sub);
        tsv_row(w->tsv, w->ds, &m, &t);
        qk_synth_truth_free(&t);
    }
    qk_synth_model_free(&m);
    return rc;
}

static int write_key_head(dataset_writer *w, int layer, int q_head, const qk_synth_rows *rows,
                          float *vector, qk_err *err)
{
    /* the key side of any query head of the group is the same */
    qk_synth_model m;
    if (qk_synth_model_init(&m, w->ds, w->o, layer, q_head, err) != 0)
        return -1;
    qk_synth_vectors(&m, QK_SYNTH_K, rows, vector);
    int rc = write_config(w, layer, m.kv_head, 'k', rows, vector, err);
    qk_synth_model_free(&m);
    return rc;
}

/* All heads of one layer: the Q rows are shared by the layer's query heads,
 * the K rows by its key heads. */
static int write_layer(dataset_writer *w, int layer, const int *heads, int n, qk_err *err)
{
    const qk_dataset *ds = w->ds;
    int group = ds->n_q_heads / ds->n_kv_heads;
    qk_synth_rows qrows, krows;
    qk_synth_positions(ds, w->o, layer, QK_SYNTH_Q, &qrows);
    qk_synth_positions(ds, w->o, layer, QK_SYNTH_K, &krows);
    int64_t most = qrows.n > krows.n ? qrows.n : krows.n;
    float *vector = qk_malloc((size_t)(most ? most : 1) * ds->head_dim * sizeof *vector);
    int rc = 0;
    /* the capture tool writes no file (and no directory) for a config that
     * kept no rows */
    for (int i = 0; i < n && rc == 0 && qrows.n > 0; i++)
        rc = write_query_head(w, layer, heads[i], &qrows, vector, err);
    for (int i = 0; i < n && rc == 0 && krows.n > 0; i++)
        if (i == 0 || heads[i] / group != heads[i - 1] / group)
            rc = write_key_head(w, layer, heads[i], &krows, vector, err);
    free(vector);
    qk_synth_rows_free(&qrows);
    qk_synth_rows_free(&krows);
    return rc;
}

typedef struct meta_args {
    const dataset_writer *w;
    const char *model;
    const meta_entry *e;
    int n_meta;
} meta_args;

static void saver_fn(FILE *fp, void *arg)
{
    meta_args *a = arg;
    write_saver_state(fp, a->w->ds, a->model, a->w->bucket_counts, a->w->n_buckets, a->e,
                      a->n_meta);
}

static void readme_fn(FILE *fp, void *arg)
{
    meta_args *a = arg;
    const dataset_writer *w = a->w;
    write_readme(fp, w->ds, w->o, a->model, w->configs, w->n_configs, w->captured_rows,
                 w->bucket_counts, w->n_buckets, a->e, a->n_meta);
}

static int write_contents(dataset_writer *w, qk_err *err)
{
    const qk_dataset *ds = w->ds;
    int cap = ds->n_layers * ds->n_q_heads;
    int *layers = qk_malloc((size_t)cap * sizeof *layers);
    int *heads = qk_malloc((size_t)cap * sizeof *heads);
    int n = qk_synth_select_heads(ds, w->o, layers, heads, cap);
    fputs(tsv_header, w->tsv);
    int rc = 0;
    for (int i = 0; i < n && rc == 0;) {
        int j = i;
        while (j < n && layers[j] == layers[i])
            j++;
        rc = write_layer(w, layers[i], heads + i, j - i, err);
        i = j;
    }
    if (rc == 0) {
        qsort(w->configs, (size_t)w->n_configs, sizeof *w->configs, compare_strings);
        const char *model = qk_synth_model_name(ds);
        meta_entry e[32];
        meta_args args = {w, model ? model : ds->id, e, metadata(ds, w->o, n, e)};
        rc = write_generated(w->dir, "_saver_state.json", saver_fn, &args, err);
        if (rc == 0)
            rc = write_generated(w->dir, "README.md", readme_fn, &args, err);
    }
    if (rc == 0 && w->o->key)
        rc = write_text_file(w->dir, ".synth-key", (const char *)w->o->key, w->o->key_len, err);
    if (rc == 0) {
        /* what it wrote, so that files changed by hand are told from it
         * (the mtimes survive the rename of the folder into place) */
        char *lines = qk_source_file_lines(w->dir, err);
        rc = lines ? write_text_file(w->dir, QK_SYNTH_FILES, lines, strlen(lines), err) : -1;
        free(lines);
    }
    if (rc == 0) {
        /* the last file: its presence marks the dataset as complete */
        fflush(w->tsv);
        rc = write_text_file(w->dir, "synth-truth.tsv", w->tsv_text, w->tsv_len, err);
    }
    free(layers);
    free(heads);
    return rc;
}


/* Moves the finished temporary directory to out_dir/id. An older dataset
 * there is first renamed away and deleted only after the new one is in. */
static int swap_into_place(const char *out_dir, const char *id, const char *tmp, qk_err *err)
{
    char *final = qk_path_join(out_dir, id);
    struct stat st;
    int rc = 0;
    if (lstat(final, &st) == 0) {
        size_t n = strlen(out_dir) + strlen(id) + 16;
        char *old = qk_malloc(n);
        snprintf(old, n, "%s/.%s.old-XXXXXX", out_dir, id);
        if (!S_ISDIR(st.st_mode))
            rc = qk_fail(err, "%s exists and is not a directory", final);
        else if (!mkdtemp(old) || rename(final, old) != 0)
            rc = qk_fail(err, "cannot move the old %s away: %s", final, strerror(errno));
        else if (rename(tmp, final) != 0) {
            rc = qk_fail(err, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
            rename(old, final); /* put the old one back */
        } else
            qk_remove_tree(old);
        free(old);
    } else if (rename(tmp, final) != 0) {
        rc = qk_fail(err, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
    }
    free(final);
    return rc;
}

int qk_synth_write_dataset(const char *out_dir, const qk_dataset *ds,
                           const qk_synth_options *o, qk_err *err)
{
    if (qk_dataset_validate(ds, err) != 0)
        return -1;
    if (qk_mkdirs(out_dir, err) != 0)
        return -1;
    size_t n = strlen(out_dir) + strlen(ds->id) + 16;
    char *tmp = qk_malloc(n);
    snprintf(tmp, n, "%s/.%s.tmp-XXXXXX", out_dir, ds->id);
    if (!mkdtemp(tmp)) {
        qk_fail(err, "cannot create a directory in %s: %s", out_dir, strerror(errno));
        free(tmp);
        return -1;
    }
    chmod(tmp, 0755);
    qk_temp_begin(tmp);
    dataset_writer w = {0};
    w.ds = ds;
    w.o = o;
    w.dir = tmp;
    w.n_buckets = (ds->context_length + ds->bucket_size - 1) / ds->bucket_size;
    w.bucket_counts = qk_calloc((size_t)w.n_buckets, sizeof *w.bucket_counts);
    w.tsv = open_memstream(&w.tsv_text, &w.tsv_len);
    int rc = w.tsv ? write_contents(&w, err)
                   : qk_fail(err, "cannot open a memory stream: %s", strerror(errno));
    if (w.tsv)
        fclose(w.tsv);
    if (rc == 0)
        rc = swap_into_place(out_dir, ds->id, tmp, err);
    if (rc != 0)
        qk_remove_tree(tmp);
    qk_temp_end(tmp);
    for (int i = 0; i < w.n_configs; i++)
        free(w.configs[i]);
    free(w.configs);
    free(w.bucket_counts);
    free(w.tsv_text);
    free(tmp);
    return rc;
}
