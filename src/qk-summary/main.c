/* qk-summary: the numbers of one report section, from the study tables.
 * Every value goes through qk/numbers.h, which knows each key's kind and
 * meaning; qk-report typesets them once for the page, numbers.tex and the
 * LaTeX tables. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "summary.h"

/* The optional inputs of one single-model plasticity figure: its model's
 * report and the figure's table, from the model's study. */
#define FIGURE_TABLES(nn, table) " fig" nn ".report? fig" nn "." table "?"

static const sum_section sections[] = {
    {"inventory", "inventory", "",
     "the data inventory: datasets, heads and vectors in all, and one row per dataset",
     sum_inventory},
    {"figures", "list", "drawn",
     "one flag per figure of qk-plot --list (the input 'list'): 1 when the figure is among "
     "the parameter 'drawn' (ids separated by spaces), else 0",
     sum_figures},
    {"pca", "registry components? heads? training-heads?", "PCA_TAX_HIGH PCA_TAX_LOW",
     "the combined QK PCA: means by component, PC0 numbers and taxonomy shares over all heads, "
     "by family and by model (components and heads: qk.csv and qk_heads.csv of the cross-model "
     "study), and by training checkpoint (training-heads); PCA_TAX_HIGH and PCA_TAX_LOW are the "
     "taxonomy thresholds of the run",
     sum_pca},
    {"rotation", "registry summary? heads? training-summary? training-heads?", "ROT_ACTIVE_TAU",
     "the planar rotation model: drift correlations, recency bias, the {a, b} plane, slope "
     "ratios, bias and separation by family, the complement (summary and heads: "
     "model_summary.csv and rotated.csv of the cross-model study), and the SmolLM3-3B "
     "trajectory (training-summary, training-heads); ROT_ACTIVE_TAU is the complement's "
     "activity threshold of the run",
     sum_rotation},
    {"plasticity", "registry benchmarks? report? pair2d? weights? profile? joint?"
     FIGURE_TABLES("01", "pair2d") FIGURE_TABLES("02", "pair2d") FIGURE_TABLES("03", "pair2d")
     FIGURE_TABLES("04", "pair2d") FIGURE_TABLES("05", "profile") FIGURE_TABLES("06", "profile")
     FIGURE_TABLES("07", "profile") FIGURE_TABLES("08", "weights"),
     "heatmaps profiles weights heatmap_scale",
     "attention plasticity: model scalars, deciles, quintiles and per-length means by model "
     "and family (report: model_report.csv), the heatmap cells (pair2d), the component weights "
     "(weights) and the spread of the head profiles (profile: head_bucket_plasticity.csv) of the "
     "figure models, the fit against published LongBench-Pro scores (benchmarks), and the "
     "SmolLM3-3B comparison (joint: joint_rotation_plasticity.csv). The figure models are "
     "parameters: heatmaps, profiles, weights as 'NN=model ...'; figure NN takes its model's "
     "scalars and table from figNN.report and figNN.pair2d, .profile or .weights (the tables "
     "of the model's study), else from the cross-model ones",
     sum_plasticity},
    {"extra", "registry benchmarks? report? profile?", "",
     "the extra models (report: model_report.csv, profile: model_bucket_plasticity.csv of the "
     "extra study) against their published per-length RULER scores (benchmarks): plasticity "
     "scalars, AP at each RULER length, the first model whose captures cover every length and "
     "the first whose captures end before the longest",
     sum_extra},
    {"run", "record", "",
     "the run's id and suite version, from its record (record: report/run.tsv)", sum_run},
};
#define N_SECTIONS (int)(sizeof sections / sizeof sections[0])

static const qk_option options_table[] = {
    {'s', "section", "ID", "the section (see --list)"},
    {'i', "input", "NAME=F", "an input table (may repeat)"},
    {'p', "param", "NAME=V", "a parameter (may repeat)"},
    {'P', "params", "FILE", "the parameters of a run's record, NAME=V a line "
     "(build/params/GROUP.txt; may repeat)"},
    QK_OPTION_OUTPUT("the numbers file (written atomically)"),
    {'l', "list", NULL, "list the sections with their inputs and parameters"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-summary",
    "qk-summary --section ID [--input NAME=TABLE]... [--param NAME=VALUE]...\n"
    "           [--params RECORD]... --output FILE",
    "Writes the numbers of one report section (a numbers file, include/qk/numbers.h):\n"
    "every value with its key, kind and meaning, raw; qk-report typesets them. A study\n"
    "the run lacks (an optional input not given) leaves its values missing ('n/a' in\n"
    "the report) and its tables empty. TABLE files ending in .csv are comma-separated,\n"
    "others tab-separated.\n",
    options_table, NULL,
    "qk-summary --section pca --input registry=workflow/datasets.tsv \\\n"
    "  --input components=results/attention_plasticity/qk.csv \\\n"
    "  --input heads=results/attention_plasticity/qk_heads.csv \\\n"
    "  --params build/params/pca.txt --output build/report/pca.numbers", NULL};

static void list_sections(FILE *fp)
{
    for (int i = 0; i < N_SECTIONS; i++)
        fprintf(fp, "%s\n  inputs: %s\n  parameters: %s\n  %s\n", sections[i].id,
                sections[i].inputs, *sections[i].params ? sections[i].params : "-",
                sections[i].description);
}

/* ---- inputs and parameters ----------------------------------------------------------- */

const qk_src *sum_input(const sum_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->n_inputs; i++)
        if (strcmp(ctx->input_names[i], name) == 0)
            return &ctx->inputs[i].src;
    return NULL;
}

const char *sum_param(const sum_ctx *ctx, const char *name, const char *fallback)
{
    for (int i = ctx->n_params - 1; i >= 0; i--) /* the last given wins */
        if (strcmp(ctx->param_names[i], name) == 0)
            return ctx->param_values[i];
    return fallback;
}

double sum_param_num(const sum_ctx *ctx, const char *name, double lo, double hi)
{
    const char *v = sum_param(ctx, name, NULL);
    if (!v)
        qk_die(QK_EXIT_USAGE, NULL, "section %s needs the parameter %s (--params RECORD)",
               ctx->section, name);
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi))
        qk_die(QK_EXIT_USAGE, NULL, "--param %s: '%s' is not a number from %g to %g", name, v,
               lo, hi);
    return x;
}

const char *sum_dataset_id(const qk_src *registry, int row, const char *fallback)
{
    if (!registry || row < 0)
        return fallback;
    return qk_table_cell(registry->t, row, qk_src_col(registry, "id"));
}

double sum_pct(int count, int n) { return n ? 100.0 * count / n : NAN; }

/* The stages and parameter groups behind each kind of table, by its file
 * name: what made it (workflow/<stage>.mk), so that a number's entry says
 * which steps and parameters it depends on. */
static const struct {
    const char *file, *stages;
} table_stages[] = {
    {"qk.csv", "qk-load, qk-pca, qk-merge; parameters pca-fit, blas"},
    {"qk_heads.csv", "qk-load, qk-pca, qk-taxonomy, qk-merge; parameters pca-fit, pca, blas"},
    {"rotated.csv", "qk-load, qk-rotate, qk-complement, qk-merge; parameters rotation, "
                    "rotation-complement, blas"},
    {"model_summary.csv", "qk-load, qk-rotate, qk-complement, qk-merge, qk-rotate --summary; "
                          "parameters rotation, rotation-complement, blas"},
    {"joint_rotation_plasticity.csv", "qk-rotate, qk-plasticity, qk-joint; parameters rotation, "
                                      "plasticity, blas"},
    {"inventory.tsv", "qk-synth or the downloads, qk-load; parameters run, synth"},
    {"registry.tsv", "workflow/datasets.tsv and the runs' qkreport.conf files"},
    {"benchmarks.tsv", "published scores, typed in from their papers (no stage computes them)"},
    {"run.tsv", "the run's records (workflow/run-record.sh)"},
    {"list.txt", "qk-plot --list and the figures drawn; parameters figures"},
    {".csv", "qk-load, qk-plasticity, qk-merge; parameters plasticity, blas"},
    {"", "its stage (workflow/*.mk)"}};

static const char *stages_of(const char *path)
{
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof table_stages / sizeof table_stages[0]; i++) {
        size_t m = strlen(table_stages[i].file);
        if (table_stages[i].file[0] != '.' ? strcmp(name, table_stages[i].file) == 0
                                          : n >= m && strcmp(name + n - m, table_stages[i].file) == 0)
            return table_stages[i].stages;
    }
    return table_stages[sizeof table_stages / sizeof table_stages[0] - 1].stages;
}

void sum_source_tables(qk_numbers *w, const qk_src *const *tables, int n, const char *columns,
                       const char *rows, const char *aggregation)
{
    char *paths = NULL, *stages = NULL;
    size_t pl = 0, sl = 0;
    FILE *fp = open_memstream(&paths, &pl), *fs = open_memstream(&stages, &sl);
    int given = 0;
    for (int i = 0; i < n; i++)
        given += tables[i] != NULL;
    for (int i = 0; i < n; i++) {
        if (!tables[i])
            continue;
        const char *path = qk_shown_path(tables[i]->path);
        fprintf(fp, "%s%s", ftell(fp) ? ", " : "", path);
        if (given > 1) /* which stages made which table */
            fprintf(fs, "%s%s: %s", ftell(fs) ? "; " : "", path, stages_of(path));
        else
            fprintf(fs, "%s", stages_of(path));
    }
    fclose(fp);
    fclose(fs);
    qk_numbers_source(w, *paths ? paths : "-", columns, rows, aggregation, *stages ? stages : "-");
    free(paths);
    free(stages);
}

void sum_source(qk_numbers *w, const qk_src *table, const char *columns, const char *rows,
                const char *aggregation)
{
    sum_source_tables(w, &table, 1, columns, rows, aggregation);
}

void sum_source_params(qk_numbers *w, const char *group, const char *names)
{
    char path[128];
    snprintf(path, sizeof path, "build/params/%s.txt", group);
    qk_numbers_source(w, path, names, "-", "the run's value", "make; parameter group");
}

/* 1 if word (up to a '?') is one of the space-separated names in list;
 * *optional tells whether it is marked '?'. */
static int listed(const char *list, const char *word, int *optional)
{
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, " ");
        size_t name_len = len && p[len - 1] == '?' ? len - 1 : len;
        if (name_len == n && strncmp(p, word, n) == 0) {
            if (optional)
                *optional = name_len != len;
            return 1;
        }
        p += len;
        while (*p == ' ')
            p++;
    }
    return 0;
}

static void split_spec(const char *spec, const char *option, char **name, char **value)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        qk_die(QK_EXIT_USAGE, NULL, "%s takes NAME=VALUE, got '%s'", option, spec);
    *name = qk_strdup(spec);
    (*name)[eq - spec] = '\0';
    *value = qk_strdup(eq + 1);
}

static void add_input(sum_ctx *ctx, const char *spec)
{
    int n = ctx->n_inputs++;
    ctx->input_names = qk_realloc(ctx->input_names, (size_t)(n + 1) * sizeof(char *));
    ctx->inputs = qk_realloc(ctx->inputs, (size_t)(n + 1) * sizeof *ctx->inputs);
    char *path;
    split_spec(spec, "--input", &ctx->input_names[n], &path);
    for (int i = 0; i < n; i++)
        if (strcmp(ctx->input_names[i], ctx->input_names[n]) == 0)
            qk_die(QK_EXIT_USAGE, NULL, "--input %s given twice", ctx->input_names[n]);
    qk_table_file_load(&ctx->inputs[n], path);
    /* the path stays alive with the table: it is named in messages */
}

static void add_param(sum_ctx *ctx, const char *spec)
{
    int n = ctx->n_params++;
    ctx->param_names = qk_realloc(ctx->param_names, (size_t)(n + 1) * sizeof(char *));
    ctx->param_values = qk_realloc(ctx->param_values, (size_t)(n + 1) * sizeof(char *));
    split_spec(spec, "--param", &ctx->param_names[n], &ctx->param_values[n]);
}

/* The NAME=VALUE lines of a parameter record, each a parameter. */
static void add_record(sum_ctx *ctx, const char *path)
{
    uint8_t *text;
    size_t len;
    qk_err err;
    if (qk_read_file(path, &text, &len, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    char *s = qk_malloc(len + 1);
    memcpy(s, text, len);
    s[len] = '\0';
    free(text);
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n"))
        if (strcmp(line, "-") != 0) /* the line of an empty record */
            add_param(ctx, line);
    free(s);
}

/* Every input and parameter is one the section knows; the required inputs
 * are there. */
static void check_args(const sum_ctx *ctx, const sum_section *s)
{
    for (int i = 0; i < ctx->n_inputs; i++)
        if (!listed(s->inputs, ctx->input_names[i], NULL))
            qk_die(QK_EXIT_USAGE, NULL, "section %s has no input '%s' (inputs: %s)", s->id,
                   ctx->input_names[i], s->inputs);
    for (int i = 0; i < ctx->n_params; i++)
        if (!listed(s->params, ctx->param_names[i], NULL))
            qk_die(QK_EXIT_USAGE, NULL, "section %s has no parameter '%s' (parameters: %s)",
                   s->id, ctx->param_names[i], *s->params ? s->params : "none");
    for (const char *p = s->inputs; *p;) {
        size_t len = strcspn(p, " ");
        if (p[len - 1] != '?') {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)len, p);
            if (!sum_input(ctx, name))
                qk_die(QK_EXIT_USAGE, NULL, "section %s needs --input %s=FILE", s->id, name);
        }
        p += len;
        while (*p == ' ')
            p++;
    }
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-summary");
    sum_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case 's': ctx.section = value; break;
        case 'i': add_input(&ctx, value); break;
        case 'p': add_param(&ctx, value); break;
        case 'P': add_record(&ctx, value); break;
        case 'l': list_sections(stdout); return QK_EXIT_OK;
        }
    }
    const char *output = a.output;
    if (!ctx.section || !output)
        qk_usage_error(&program);
    qk_args_operands(&a, 0, 0);
    const sum_section *s = NULL;
    for (int i = 0; i < N_SECTIONS && !s; i++)
        if (strcmp(sections[i].id, ctx.section) == 0)
            s = &sections[i];
    if (!s)
        qk_die(QK_EXIT_USAGE, NULL, "unknown section '%s' (see --list)", ctx.section);
    check_args(&ctx, s);
    snprintf(ctx.user, sizeof ctx.user, "section %s", s->id);
    for (int i = 0; i < ctx.n_inputs; i++) {
        /* the array moved while it grew: point the sources at their tables */
        ctx.inputs[i].src.t = &ctx.inputs[i].table;
        ctx.inputs[i].src.user = ctx.user;
    }
    /* each section names the source of its values before it sets them
     * (sum_source): a value set before any is an error of the writer */
    ctx.out = qk_numbers_open(output);
    s->write(&ctx);
    qk_numbers_close(ctx.out);
    return QK_EXIT_OK;
}
