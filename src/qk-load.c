/* qk-load: reads one revision directory of sniffed-qk Parquet files,
 * validates it and writes the binary store that later stages map. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/reader.h"
#include "qk/registry.h"
#include "qk/revision.h"
#include "qk/source.h"
#include "qk/store.h"

enum { OPT_DATASET = QK_KEY_FIRST, OPT_REGISTRY, OPT_REVISION, OPT_INVENTORY, OPT_SOURCE,
       OPT_SOURCE_RECORD, OPT_SYNTHETIC, OPT_STATS, OPT_VERIFY, OPT_CHECK_CONF };

static const qk_option options_table[] = {
    QK_OPTION_OUTPUT("store file to write (written atomically)"),
    {OPT_DATASET, "dataset", "ID", "registry id of the model (default: DIR's name); "
                                   "DIR/qkreport.conf, if present, describes the model"},
    {OPT_REGISTRY, "registry", "FILE", "dataset registry (default workflow/datasets.tsv)"},
    {OPT_REVISION, "revision", "REV", "revision name inside a Hugging Face cache root"},
    {OPT_INVENTORY, "inventory", "FILE", "also write a one-row TSV summary of the store"},
    {OPT_SOURCE, "source", "FILE", "the dataset's source record: its origin and revision go "
                                   "into the inventory"},
    {OPT_SOURCE_RECORD, "source-record", "FILE", "write the source record of DIR (what its store "
     "is made from: every input file's size, mtime and footer hash) and nothing else; the file "
     "is replaced only when its content changes (docs/cache.md)"},
    {OPT_SYNTHETIC, "synthetic", "SPEC", "with --source-record: the data are qk-synth's, made "
                                         "with SPEC = \"seed=S scale=C mode=M\""},
    {OPT_STATS, "stats", "PATH", "print one JSON object per config of PATH (a revision "
     "directory or one Parquet file): config, rows, dim, position_sum, example_id_sum, "
     "vector_sum, vector_abs_sum; nothing is written"},
    {OPT_VERIFY, "verify", "STORE", "check a store's structure and checksum and decode every "
                                    "config's vectors"},
    {OPT_CHECK_CONF, "check-conf", "FILE", "check a qkreport.conf (every key, value and label) "
     "and nothing else: silent if it is right, else one line naming the file and line (exit "
     "status 2)"},
    QK_OPTION_MIN_FREE,
    QK_OPTION_QUIET,
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-load",
    "qk-load [OPTIONS] DIR -o STORE\n"
    "qk-load --stats PATH\n"
    "qk-load --check-conf FILE\n"
    "qk-load --source-record FILE [--synthetic SPEC] [--dataset ID] DIR",
    "Reads the query/key configs (lLLhHHq, lLLhHHk) of one downloaded revision of\n"
    "the sniffed-qk dataset, pairs each query head with its key head (GQA),\n"
    "validates every file and writes a binary store (docs/store-format.md).\n"
    "DIR may be a plain download, a Hugging Face cache snapshot, the cache's\n"
    "datasets--viktoroo--sniffed-qk folder together with --revision, or a folder\n"
    "of datasets' folders, of which the one named by --dataset is loaded.\n",
    options_table, NULL,
    "qk-load --dataset llama3.2-3b data/llama3.2-3b -o build/llama3.2-3b/store.qks", NULL};

typedef struct options {
    const char *input;
    const char *output;
    const char *dataset;
    const char *registry;
    const char *revision;
    const char *inventory;
    const char *stats;
    const char *verify;
    const char *check_conf;
    const char *source;
    const char *source_record;
    const char *synthetic;
} options;

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->registry = "workflow/datasets.tsv";
    /* where the value of option OPT_DATASET + k goes (the order of the enum) */
    const char **field[] = {&o->dataset, &o->registry, &o->revision, &o->inventory, &o->source,
                            &o->source_record, &o->synthetic, &o->stats, &o->verify,
                            &o->check_conf};
    const char *value;
    qk_args a;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;)
        *field[key - OPT_DATASET] = value;
    o->output = a.output;
    if (o->stats || o->verify || o->check_conf) {
        if (a.n_operands != 0)
            qk_die(QK_EXIT_USAGE, NULL, "--stats, --verify and --check-conf take no other "
                                        "arguments");
        return;
    }
    if (o->synthetic && !qk_source_synthetic_ok(o->synthetic))
        qk_die(QK_EXIT_USAGE, NULL, "--synthetic takes \"seed=S scale=C mode=M\", got '%s'",
               o->synthetic);
    if (o->source_record && o->synthetic && a.n_operands == 0)
        return;
    qk_args_operands(&a, 1, 1);
    if (!o->output && !o->source_record)
        qk_usage_error(&program);
    o->input = a.operands[0];
}

/* ---- --stats ------------------------------------------------------------ */

static void print_stats(const char *config, const qk_row_stats *s)
{
    printf("{\"config\":\"%s\",\"rows\":%" PRId64 ",\"dim\":%d,\"position_sum\":%" PRId64
           ",\"example_id_sum\":%" PRId64 ",\"vector_sum\":",
           config, s->rows, s->dim, s->position_sum, s->example_id_sum);
    qk_fprint_double(stdout, s->vector_sum);
    fputs(",\"vector_abs_sum\":", stdout);
    qk_fprint_double(stdout, s->vector_abs_sum);
    fputs("}\n", stdout);
}

/* The config name of a lone file: its parent directory when that is a
 * config name, else the file name without ".parquet". */
static void lone_file_config_name(const char *path, char *out, size_t cap)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    const char *file = slash ? slash + 1 : buf;
    int layer, head;
    char kind;
    if (slash) {
        *slash = '\0';
        char *parent = strrchr(buf, '/');
        parent = parent ? parent + 1 : buf;
        if (qk_parse_config_name(parent, &layer, &head, &kind) == 0) {
            snprintf(out, cap, "%.*s", (int)cap - 1, parent);
            return;
        }
    }
    snprintf(out, cap, "%.*s", (int)cap - 1, file);
    size_t n = strlen(out);
    if (n > 8 && strcmp(out + n - 8, ".parquet") == 0)
        out[n - 8] = '\0';
}

/* The stats of rows just read, or the error naming path. */
static int print_rows_stats(int read_rc, qk_rows *rows, const char *config, const char *path,
                            const qk_err *err)
{
    if (read_rc != 0) {
        qk_report_error(path, err->msg);
        return -1;
    }
    qk_row_stats s;
    qk_rows_stats(rows, &s);
    print_stats(config, &s);
    qk_rows_free(rows);
    return 0;
}

static int stats_one_file(const char *path, const char *config)
{
    qk_rows rows;
    qk_err err;
    int rc = qk_input_read_file(path, &rows, &err);
    return print_rows_stats(rc, &rows, config, path, &err);
}

static int run_stats(const char *path, const char *dataset)
{
    struct stat st;
    if (stat(path, &st) != 0)
        qk_die(QK_EXIT_DATA, path, "no such file or directory");
    if (!S_ISDIR(st.st_mode)) {
        char name[256];
        lone_file_config_name(path, name, sizeof name);
        return stats_one_file(path, name) == 0 ? QK_EXIT_OK : QK_EXIT_DATA;
    }
    qk_err err;
    char *root = qk_revision_resolve(path, NULL, dataset, &err);
    if (!root)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    qk_input in;
    if (qk_input_open(root, &in, &err) != 0)
        qk_die(QK_EXIT_DATA, root, "%s", err.msg);
    free(root);
    int status = QK_EXIT_OK;
    for (int i = 0; i < in.rev.n && status == QK_EXIT_OK; i++) {
        qk_rows rows;
        int rc = qk_input_read(&in, i, &rows, &err);
        if (print_rows_stats(rc, &rows, in.rev.configs[i].name, qk_input_config_path(&in, i),
                             &err) != 0)
            status = QK_EXIT_DATA;
    }
    qk_input_close(&in);
    return status;
}

/* ---- loading -------------------------------------------------------------- */

/* A folder of DIR taken for the data (legacy layout) must not be the
 * folder of another dataset of the registry. */
static void check_subfolder(const options *o, const char *root, const qk_registry *reg,
                            const char *id)
{
    if (strcmp(root, o->input) == 0 || o->revision)
        return;
    const char *name = strrchr(root, '/') ? strrchr(root, '/') + 1 : root;
    if (strcmp(name, id) != 0 && reg->n && qk_registry_find(reg, name))
        qk_die(QK_EXIT_DATA, o->input, "its only folder with configs is %s (another "
               "dataset), not %s", name, id);
}

/* The model description: DIR/qkreport.conf if present, else the registry. */
static void load_dataset_facts(const options *o, const char *root, qk_dataset *ds)
{
    memset(ds, 0, sizeof *ds);
    char *conf = qk_path_join(o->input, "qkreport.conf");
    struct stat st;
    int have_conf = stat(conf, &st) == 0;
    if (!have_conf) {
        free(conf);
        conf = qk_path_join(root, "qkreport.conf");
        have_conf = stat(conf, &st) == 0;
    }
    char id[sizeof ds->id];
    if (o->dataset) {
        snprintf(id, sizeof id, "%.*s", (int)sizeof id - 1, o->dataset);
    } else {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", o->input);
        size_t n = strlen(buf);
        while (n > 1 && buf[n - 1] == '/')
            buf[--n] = '\0';
        const char *slash = strrchr(buf, '/');
        snprintf(id, sizeof id, "%.*s", (int)sizeof id - 1, slash ? slash + 1 : buf);
    }
    qk_registry reg;
    qk_err err;
    if (qk_registry_load(o->registry, &reg, &err) != 0 && !have_conf)
        qk_die(QK_EXIT_DATA, o->registry, "%s", err.msg);
    const qk_dataset *found = reg.n ? qk_registry_find(&reg, id) : NULL;
    check_subfolder(o, root, &reg, id);
    if (found)
        *ds = *found;
    else
        snprintf(ds->id, sizeof ds->id, "%s", id);
    qk_registry_free(&reg);
    if (have_conf && qk_dataset_conf_load(conf, ds, &err) != 0)
        qk_die(QK_EXIT_DATA, conf, "%s", err.msg);
    /* a SmolLM3-3B checkpoint the registry lacks is of its model's family,
     * as in the run's registry (workflow/run-registry.awk) */
    if (!ds->family[0] && strncmp(ds->id, "smollm3-3b-", 11) == 0)
        snprintf(ds->family, sizeof ds->family, "smollm3");
    if (!found && !have_conf)
        qk_die(QK_EXIT_DATA, o->input,
               "dataset '%s' is not in %s and the directory has no qkreport.conf",
               id, o->registry);
    if (qk_dataset_validate(ds, &err) != 0)
        qk_die(QK_EXIT_DATA, have_conf ? conf : o->registry, "%s", err.msg);
    free(conf);
}

/* The checks a capture must pass before any analysis trusts it. */
static int validate_config(const qk_rows *t, const qk_dataset *ds, qk_err *err)
{
    if (t->rows == 0)
        return qk_fail(err, "no rows (the capture tool never writes empty configs)");
    if (t->dim != ds->head_dim)
        return qk_fail(err, "vectors have %d values, %s has head_dim %d", t->dim,
                       ds->id, ds->head_dim);
    for (int64_t i = 0; i < t->rows; i++) {
        int32_t p = t->position[i];
        if (p < 0 || p >= ds->context_length)
            return qk_fail(err, "row %" PRId64 ": position %d outside the context [0, %d)",
                           i, p, ds->context_length);
        if (t->bucket[i] != p / ds->bucket_size)
            return qk_fail(err, "row %" PRId64 ": bucket %d, expected position %d / %d = %d",
                           i, t->bucket[i], p, ds->bucket_size, p / ds->bucket_size);
    }
    int64_t bad = qk_rows_first_non_finite(t);
    if (bad >= 0)
        return qk_fail(err, "row %" PRId64 ": non-finite vector value", bad);
    return 0;
}

typedef struct load_totals {
    int q_configs, k_configs;
    int64_t q_rows, k_rows;
    uint64_t input_bytes; /* the size of the files read */
    int listed, listed_present; /* the configs the capture lists, and of them
                                   those present; -1 when it lists none */
} load_totals;

/* The origin and revision of the data from the source record (--source);
 * without one, the input directory as given. */
static void data_provenance(const options *o, char *origin, size_t ocap, char *revision,
                            size_t rcap)
{
    qk_err err;
    if (!o->source) {
        snprintf(origin, ocap, "%s", o->input);
        snprintf(revision, rcap, "-");
        return;
    }
    if (qk_source_record_value(o->source, "origin", origin, ocap, &err) != 0 ||
        qk_source_record_value(o->source, "revision", revision, rcap, &err) != 0)
        qk_die(QK_EXIT_DATA, o->source, "%s", err.msg);
}

/* The inventory row of the store sealed in w, into the open file fp. */
static void write_inventory(FILE *fp, const qk_dataset *ds, const load_totals *tot,
                            const qk_store_header *h, const char *origin, const char *revision)
{
    fprintf(fp, "dataset\tlabel\tstudy\tfamily\tq_heads\tk_heads\tvectors_q\tvectors_k"
                    "\thead_dim\tparquet_bytes\tstore_bytes\tstore_checksum\tsource"
                    "\trevision\tconfigs_present\tconfigs_captured\n");
    fprintf(fp, "%s\t%s\t%s\t%s\t%d\t%d\t%" PRId64 "\t%" PRId64 "\t%d\t%" PRIu64
                    "\t%zu\t%016" PRIx64 "\t%s\t%s\t",
            ds->id, ds->label[0] ? ds->label : ds->id, ds->study[0] ? ds->study : "extra",
            ds->family[0] ? ds->family : "other", tot->q_configs, tot->k_configs,
            tot->q_rows, tot->k_rows, h->dim, tot->input_bytes, (size_t)h->file_size,
            h->checksum, origin, revision);
    if (tot->listed < 0)
        fputs("-\t-\n", fp);
    else
        fprintf(fp, "%d\t%d\n", tot->listed_present, tot->listed);
}

static void fill_header(qk_store_header *h, const qk_dataset *ds)
{
    memset(h, 0, sizeof *h);
    h->dim = (uint32_t)ds->head_dim;
    h->n_layers = (uint32_t)ds->n_layers;
    h->n_q_heads = (uint32_t)ds->n_q_heads;
    h->n_kv_heads = (uint32_t)ds->n_kv_heads;
    h->context_length = (uint32_t)ds->context_length;
    h->bucket_size = (uint32_t)ds->bucket_size;
    snprintf(h->dataset_id, sizeof h->dataset_id, "%s", ds->id);
}

/* Which configs the store holds (1 per config of rev): every key config,
 * and the query configs with their key file. The others (a partial
 * download) are named in one warning; none paired is an error. */
static int *mark_paired(const qk_revision *rev, const qk_dataset *ds, const qk_head_pair *pairs,
                        int n_pairs, const char *root)
{
    int *paired = qk_calloc((size_t)rev->n + 1, sizeof *paired);
    for (int i = 0; i < rev->n; i++)
        paired[i] = rev->configs[i].kind != 'q';
    for (int i = 0; i < n_pairs; i++)
        paired[pairs[i].q] = 1;
    int left_out = 0, first = -1;
    for (int i = 0; i < rev->n; i++)
        if (!paired[i] && left_out++ == 0)
            first = i;
    char example[96] = "";
    if (first >= 0) {
        const qk_config_file *c = &rev->configs[first];
        snprintf(example, sizeof example, "%s needs l%02dh%02dk", c->name, c->layer,
                 qk_dataset_kv_head(ds, c->head));
    }
    if (n_pairs == 0)
        qk_die(QK_EXIT_DATA, root, left_out ? "no query config has its key file (%s)"
                                            : "no query configs (lLLhHHq) found%s", example);
    if (left_out)
        qk_warn("%s: %d query head%s without %s key file left out (%s%s)", root, left_out,
                left_out == 1 ? "" : "s", left_out == 1 ? "its" : "their", example,
                left_out > 1 ? ", ..." : "");
    return paired;
}

/* Config directories without a data file (an interrupted download):
 * one warning naming the first, as for missing key files. */
static void warn_empty_configs(const qk_input *in, const char *root)
{
    const qk_revision *rev = &in->rev;
    if (rev->n_empty)
        qk_warn("%s: %d config director%s without a %s file left out (%s%s)", root,
                rev->n_empty, rev->n_empty == 1 ? "y" : "ies", in->format->noun,
                rev->first_empty, rev->n_empty > 1 ? ", ..." : "");
}

/* The configs the capture lists (_saver_state.json, README.md) against
 * those present: one warning when some are missing (a partial download,
 * which the inventory says too); nothing when the capture lists none. */
static void count_listed(const qk_revision *rev, const char *root, load_totals *tot)
{
    qk_config_list l;
    tot->listed = tot->listed_present = -1;
    if (qk_capture_configs(root, &l) != 0)
        return;
    tot->listed = l.n;
    tot->listed_present = 0;
    for (int i = 0; i < rev->n; i++)
        tot->listed_present += qk_config_list_has(&l, rev->configs[i].name);
    int missing = l.n - tot->listed_present;
    const char *first = NULL;
    for (int i = 0; i < l.n && !first; i++) {
        int found = 0;
        for (int j = 0; j < rev->n && !found; j++)
            found = strcmp(rev->configs[j].name, l.names[i]) == 0;
        if (!found)
            first = l.names[i];
    }
    if (missing > 0)
        qk_warn("%s: %d of %d captured configs present (%s lists them; %s%s missing)", root,
                tot->listed_present, l.n, l.from, first, missing > 1 ? ", ..." : "");
    qk_config_list_free(&l);
}

/* Decodes, validates and appends every config the store holds (paired) to
 * the store being written to output; on error the partial store is removed
 * and the message names the file. */
static void load_configs(qk_input *in, const int *paired, const char *output,
                         const qk_dataset *ds, qk_store_writer *w, load_totals *tot)
{
    for (int i = 0; i < in->rev.n; i++) {
        const qk_config_file *c = &in->rev.configs[i];
        if (!paired[i])
            continue;
        qk_rows t;
        qk_err err;
        if (qk_input_read(in, i, &t, &err) != 0 || validate_config(&t, ds, &err) != 0) {
            qk_store_writer_abort(w);
            qk_die(QK_EXIT_DATA, qk_input_config_path(in, i), "%s", err.msg);
        }
        if (qk_store_writer_add(w, c->layer, c->head, c->kind, t.rows, t.position,
                                t.example_id, t.bucket, t.vector, t.bytes, &err) != 0) {
            qk_store_writer_abort(w);
            qk_die(QK_EXIT_DATA, output, "%s", err.msg);
        }
        if (c->kind == 'q') {
            tot->q_configs++;
            tot->q_rows += t.rows;
        } else {
            tot->k_configs++;
            tot->k_rows += t.rows;
        }
        tot->input_bytes += t.bytes;
        qk_rows_free(&t);
    }
}

/* Writes the store and the inventory (--inventory) and puts them into
 * place together: an inventory that cannot be written leaves no new
 * store either. */
static void write_outputs(const options *o, qk_input *in, const int *paired,
                          const qk_head_pair *pairs, int n_pairs, const qk_dataset *ds,
                          load_totals *tot)
{
    const qk_revision *rev = &in->rev;
    /* the source record is read first: a bad one stops before the work */
    char origin[4096], revision[256];
    data_provenance(o, origin, sizeof origin, revision, sizeof revision);
    qk_store_header meta;
    fill_header(&meta, ds);
    qk_store_writer w;
    qk_err err;
    if (qk_store_writer_open(&w, o->output, &meta, &err) != 0)
        qk_die(QK_EXIT_DATA, o->output, "%s", err.msg);
    load_configs(in, paired, o->output, ds, &w, tot);
    /* the store's config index of each config of rev (the left-out ones
     * are not in the store) */
    int *at = qk_calloc((size_t)rev->n + 1, sizeof *at);
    for (int i = 0, n = 0; i < rev->n; i++)
        at[i] = paired[i] ? n++ : -1;
    qk_store_pair *sp = qk_malloc((size_t)(n_pairs ? n_pairs : 1) * sizeof *sp);
    for (int i = 0; i < n_pairs; i++)
        sp[i] = (qk_store_pair){(uint32_t)at[pairs[i].q], (uint32_t)at[pairs[i].k]};
    free(at);
    if (qk_store_writer_seal(&w, sp, n_pairs, &err) != 0)
        qk_die(QK_EXIT_DATA, o->output, "%s", err.msg);
    free(sp);
    qk_atomic files[2] = {w.out};
    int n_files = 1;
    if (o->inventory) {
        qk_output_open(&files[1], o->inventory);
        write_inventory(files[1].fp, ds, tot, &w.header, origin, revision);
        n_files = 2;
    }
    qk_output_commit_all(files, n_files);
    qk_progress("%s: %d query + %d key configs, %" PRId64 " + %" PRId64
                " vectors, %.1f MB %s -> %.1f MB store (%.2fx)",
                ds->id, tot->q_configs, tot->k_configs, tot->q_rows, tot->k_rows,
                tot->input_bytes / 1e6, in->format->noun, w.header.file_size / 1e6,
                (double)w.header.file_size /
                    (double)(tot->input_bytes ? tot->input_bytes : 1));
}

static int run_load(const options *o)
{
    qk_err err;
    char *root = qk_revision_resolve(o->input, o->revision, o->dataset, &err);
    if (!root)
        qk_die(QK_EXIT_DATA, o->input, "%s", err.msg);
    qk_dataset ds;
    load_dataset_facts(o, root, &ds);
    qk_input in;
    if (qk_input_open(root, &in, &err) != 0)
        qk_die(QK_EXIT_DATA, root, "%s", err.msg);
    warn_empty_configs(&in, root);
    if (in.rev.n == 0)
        qk_die(QK_EXIT_DATA, root, "no config directories with %s files", in.format->noun);
    load_totals tot = {0};
    count_listed(&in.rev, root, &tot);
    qk_head_pair *pairs;
    int n_pairs;
    if (qk_revision_pair(&in.rev, &ds, &pairs, &n_pairs, &err) != 0)
        qk_die(QK_EXIT_DATA, root, "%s", err.msg);
    int *paired = mark_paired(&in.rev, &ds, pairs, n_pairs, root);
    write_outputs(o, &in, paired, pairs, n_pairs, &ds, &tot);
    free(paired);
    free(pairs);
    qk_input_close(&in);
    free(root);
    return QK_EXIT_OK;
}

/* Checks the checksum and decodes every config's vectors. */
static int run_verify(const char *path)
{
    qk_store s;
    qk_open_store(path, &s, 1);
    qk_store_buf buf = {0};
    int bf16 = 0;
    for (int i = 0; i < s.n_configs; i++) {
        qk_store_vectors_or_die(&s, path, i, &buf);
        bf16 += s.configs[i].encoding == QK_STORE_BF16;
    }
    qk_store_buf_free(&buf);
    printf("%s: %s, %d configs (%d bf16, %d float32), %d pairs, dim %d, %zu bytes, "
           "checksum %016" PRIx64 " ok\n", path, s.header.dataset_id, s.n_configs, bf16,
           s.n_configs - bf16, s.n_pairs, s.dim, s.map_size, s.header.checksum);
    qk_store_close(&s);
    return QK_EXIT_OK;
}

static int run_source_record(const options *o)
{
    qk_source_spec spec = {o->dataset, o->input, o->revision, o->registry, o->synthetic};
    char id[256];
    if (!spec.dataset) {
        snprintf(id, sizeof id, "%s", o->input);
        size_t n = strlen(id);
        while (n > 1 && id[n - 1] == '/')
            id[--n] = '\0';
        const char *slash = strrchr(id, '/');
        spec.dataset = slash ? slash + 1 : id;
    }
    qk_err err;
    if (qk_source_write_record(&spec, o->source_record, &err) != 0)
        qk_die(QK_EXIT_DATA, o->input ? o->input : o->source_record, "%s", err.msg);
    return QK_EXIT_OK;
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-load");
    options o;
    parse_args(argc, argv, &o);
    if (o.source_record)
        return run_source_record(&o);
    if (o.stats)
        return run_stats(o.stats, o.dataset);
    if (o.verify)
        return run_verify(o.verify);
    if (o.check_conf) {
        qk_err err;
        if (qk_dataset_conf_check(o.check_conf, &err) != 0)
            qk_die(QK_EXIT_DATA, o.check_conf, "%s", err.msg);
        return QK_EXIT_OK;
    }
    return run_load(&o);
}
