/* qk-synth: writes synthetic datasets in the sniffed-qk layout, with planted
 * query/key geometry and its exact population truth (docs/synth.md). */
#include <cblas.h>
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/registry.h"
#include "qk/synth.h"
#include "qk/source.h"

enum { OPT_OUT = QK_KEY_FIRST, OPT_KEY };

static const qk_option options_table[] = {
    {OPT_OUT, "out", "DIR", "output directory (created if missing)"},
    {'r', "registry", "PATH", "dataset registry (default workflow/datasets.tsv)"},
    {'d', "dataset", "ID", "dataset to write; may be repeated"},
    {'a', "all", NULL, "write every dataset of the registry"},
    /* (scale and mode keep their own parsing and messages; the rows give
     * their defaults, which qk_synth_options_default applies) */
    {'s', "scale", "SCALE", "demo (24 query heads, about 1000 rows per file) or thesis (all "
     "sampled heads, 500 examples)", QK_OPT_OWN, NULL, 0, 0, NULL, QK_STR(QK_DEFAULT_SCALE)},
    {'H', "heads", "N", "query heads per dataset (overrides the scale)"},
    {'e', "examples", "N", "examples per dataset (overrides the scale)"},
    {'S', "seed", "N", "seed of every random draw (default 0)"},
    {'m', "mode", "MODE", "population (drift, separation, RoPE rings in the complement) or "
     "planted-linear (linear drift only, closed-form truth)", QK_OPT_OWN, NULL, 0, 0, NULL,
     QK_STR(QK_DEFAULT_SYNTH_MODE)},
    {'t', "stratified", NULL, "give keys the query positions (identical multisets)"},
    {OPT_KEY, "key", "FILE", "what the datasets are made from (the build's record): a complete "
                             "dataset whose .synth-key holds the same bytes is kept as it is "
                             "(its synth-truth.tsv touched), others are written with a copy"},
    QK_OPTION_MIN_FREE,
    QK_OPTION_QUIET,
    {'V', NULL, NULL, "the same as --version"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-synth", "qk-synth --out DIR (--dataset ID... | --all) [OPTION]...",
    "Writes synthetic datasets in the sniffed-qk layout: DIR/<ID>/lLLhHH{q,k}/data.parquet,\n"
    "README.md, _saver_state.json, truth.json per query config and DIR/<ID>/synth-truth.tsv\n"
    "(written last; it marks the dataset as complete).\n",
    options_table, "a failed write",
    "qk-synth --out data/synth --all\n"
    "qk-synth --out /tmp/s --dataset llama3.2-3b --scale thesis --seed 7", NULL};

static int parse_count(const char *arg, const char *what, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "qk-synth: error: %s must be an integer in %ld..%ld, not '%s'\n", what,
                lo, hi, arg);
        return -1;
    }
    *out = v;
    return 0;
}

typedef struct cli {
    const char *out;
    const char *registry;
    const char **ids;
    int n_ids;
    int all;
    const char *key_path;
    qk_synth_options opts;
} cli;

/* One of the program's options; -1 (after the message) on a bad value. */
static int parse_option(cli *c, int key, const char *value)
{
    long v;
    switch (key) {
    case OPT_OUT: c->out = value; break;
    case 'r': c->registry = value; break;
    case 'd':
        c->ids = qk_realloc(c->ids, (size_t)(c->n_ids + 1) * sizeof *c->ids);
        c->ids[c->n_ids++] = value;
        break;
    case 'a': c->all = 1; break;
    case 's':
        if (strcmp(value, "demo") == 0)
            c->opts.scale = QK_SYNTH_DEMO;
        else if (strcmp(value, "thesis") == 0)
            c->opts.scale = QK_SYNTH_THESIS;
        else {
            fprintf(stderr, "qk-synth: error: --scale must be demo or thesis, not '%s'\n", value);
            return -1;
        }
        break;
    case 'H':
        if (parse_count(value, "--heads", 1, 100000, &v) != 0)
            return -1;
        c->opts.n_heads = (int)v;
        break;
    case 'e':
        if (parse_count(value, "--examples", 1, 1000000, &v) != 0)
            return -1;
        c->opts.n_examples = (int)v;
        break;
    case 'S': {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(value, &end, 10);
        if (*value == '\0' || *value == '-' || *end != '\0' || errno == ERANGE) {
            fprintf(stderr, "qk-synth: error: --seed must be an integer from 0 to "
                            "18446744073709551615, not '%s'\n", value);
            return -1;
        }
        c->opts.seed = s;
        break;
    }
    case 'm':
        if (strcmp(value, "population") == 0)
            c->opts.mode = QK_SYNTH_POPULATION;
        else if (strcmp(value, "planted-linear") == 0)
            c->opts.mode = QK_SYNTH_PLANTED_LINEAR;
        else {
            fprintf(stderr, "qk-synth: error: --mode must be population or planted-linear, "
                    "not '%s'\n", value);
            return -1;
        }
        break;
    case 't': c->opts.stratified = 1; break;
    case OPT_KEY: c->key_path = value; break;
    case 'V': printf("qk-synth %s\n", QK_VERSION_STRING); exit(QK_EXIT_OK);
    }
    return 0;
}

static int parse_args(int argc, char **argv, cli *c)
{
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;)
        if (parse_option(c, key, value) != 0)
            return -1;
    qk_args_operands(&a, 0, -1);
    if (a.n_operands > 0) {
        fprintf(stderr, "qk-synth: error: unexpected argument '%s'\n", a.operands[0]);
        return -1;
    }
    if (!c->out) {
        fprintf(stderr, "qk-synth: error: --out DIR is required\n");
        return -1;
    }
    if (!c->all && c->n_ids == 0) {
        fprintf(stderr, "qk-synth: error: name datasets with --dataset ID or use --all\n");
        return -1;
    }
    return 0;
}

/* Whether the dataset's folder is complete, holds the key and its files are
 * those qk-synth wrote (none edited, replaced or removed by hand); if so its
 * synth-truth.tsv is touched, so that the build takes it as just made. */
static int kept(const cli *c, const qk_dataset *ds)
{
    char *dir = qk_path_join(c->out, ds->id);
    char *truth = qk_path_join(dir, "synth-truth.tsv"), *key = qk_path_join(dir, ".synth-key");
    uint8_t *held = NULL;
    size_t len = 0;
    int same = c->opts.key && access(truth, F_OK) == 0 &&
               qk_read_file(key, &held, &len, NULL) == 0 && len == c->opts.key_len &&
               memcmp(held, c->opts.key, len) == 0;
    char *lines = same ? qk_source_file_lines(dir, NULL) : NULL;
    same = same && lines && qk_source_files_as_written(dir, lines) &&
           utimensat(AT_FDCWD, truth, NULL, 0) == 0;
    free(lines);
    free(held);
    free(key);
    free(truth);
    free(dir);
    return same;
}

static int write_one(const cli *c, const qk_dataset *ds, int index, int total)
{
    qk_err err;
    if (kept(c, ds)) {
        qk_progress("%s: kept (made from the same key)", ds->id);
        return 0;
    }
    qk_progress("%s: writing (%d/%d, %d examples)", ds->id, index + 1, total,
                qk_synth_n_examples(ds, &c->opts));
    if (qk_synth_write_dataset(c->out, ds, &c->opts, &err) != 0) {
        char *path = qk_path_join(c->out, ds->id);
        qk_report_error(path, err.msg);
        free(path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-synth");
    cli c = {0};
    c.registry = "workflow/datasets.tsv";
    qk_synth_options_default(&c.opts);
    if (parse_args(argc, argv, &c) != 0) {
        free(c.ids);
        return QK_EXIT_USAGE;
    }
    /* one BLAS thread: the matrices are small, and the build runs datasets
     * side by side instead */
    openblas_set_num_threads(1);
    qk_err err;
    uint8_t *key = NULL;
    if (c.key_path && qk_read_file(c.key_path, &key, &c.opts.key_len, &err) != 0)
        qk_die(QK_EXIT_DATA, c.key_path, "%s", err.msg);
    c.opts.key = key;
    qk_registry reg;
    if (qk_registry_load(c.registry, &reg, &err) != 0)
        qk_die(QK_EXIT_DATA, c.registry, "%s", err.msg);
    for (int i = 0; i < c.n_ids; i++) {
        if (!qk_registry_find(&reg, c.ids[i])) {
            char msg[160];
            snprintf(msg, sizeof msg, "no dataset '%.100s' in the registry", c.ids[i]);
            qk_report_error(c.registry, msg);
            qk_registry_free(&reg);
            free(c.ids);
            return QK_EXIT_USAGE;
        }
    }
    int status = QK_EXIT_OK;
    int total = c.all ? reg.n : c.n_ids;
    for (int i = 0; i < total && status == QK_EXIT_OK; i++) {
        const qk_dataset *ds = c.all ? &reg.items[i] : qk_registry_find(&reg, c.ids[i]);
        if (write_one(&c, ds, i, total) != 0)
            status = QK_EXIT_DATA;
    }
    qk_registry_free(&reg);
    free(c.ids);
    free(key);
    return status;
}
