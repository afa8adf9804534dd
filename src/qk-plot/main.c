/* qk-plot: renders one figure of the report through gnuplot (PNG and SVG)
 * and writes the tables its README is made from. */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "figure.h"
#include "figure_table.h" /* fig_table, generated from workflow/figures.rec */
#include "qk/cli.h"
#include "qk/values.h"

static const fig_def *find_figure(const char *id)
{
    for (const fig_def *f = fig_table; f->id; f++)
        if (strcmp(f->id, id) == 0)
            return f;
    return NULL;
}

static void list_figures(FILE *fp)
{
    for (const fig_def *f = fig_table; f->id; f++)
        fprintf(fp, "  %-22s %s\n", f->id, f->title);
}

/* After the help: the figures. */
static void help_figures(FILE *fp)
{
    fputs("\nFigures:\n", fp);
    list_figures(fp);
}

enum { OPT_OUT = QK_KEY_FIRST, OPT_VALUE, OPT_HEATMAP_SCALE };

/* --min-share and --heatmap-scale, as their rows set them */
static double min_share;
static int own_heatmap_scale;

static const qk_option options_table[] = {
    {'f', "figure", "ID", "the figure (see --list)"},
    {OPT_OUT, "out", "DIR", "output directory (created)"},
    {'i', "input", "NAME=F", "an input table (may repeat)"},
    {'a', "absent", "NAME[=F]", "an input this run does not make (may repeat)"},
    {'m', "model", "ID", "the model a one-model figure shows"},
    {OPT_VALUE, "value", "NAME=TEXT", "a value the figure's texts quote as {NAME} (may repeat)"},
    {'r', "run-datasets", "L", "the run's datasets (space-separated), for the canvas of a "
                               "figure it lacks the data of"},
    QK_OPTION_REAL(QK_OPT_SHARE, 'n', "min-share", "F", &min_share,
                   QK_STR(QK_DEFAULT_FIG_MIN_SHARE), "draw a mean over heads in full only where "
                   "at least this share of the heads contribute"),
    QK_OPTION_CHOICE(OPT_HEATMAP_SCALE, "heatmap-scale", "MODE", &own_heatmap_scale, "shared own",
                     QK_STR(QK_DEFAULT_FIG_HEATMAP_SCALE), "the plasticity heatmaps' colour "
                     "scale: shared (one for the models of --value scale_models) or own (each "
                     "its model's)"),
    {'s', "style", "FILE", "house style prepended to the script (default "
                           "templates/gnuplot/style.gp)"},
    {'l', "list", NULL, "list the figures"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-plot",
    "qk-plot --figure STUDY/NN --out DIR [--input NAME=TABLE]... [--style FILE]\n"
    "qk-plot --list",
    "Renders one figure into DIR: figure.png, figure.svg, figure.pdf (16 cm\n"
    "wide, fonts embedded, dated SOURCE_DATE_EPOCH or else 1970-01-01), the\n"
    "gnuplot script figure.gp, and the README's tables (readme.tsv: title,\n"
    "description; numbers.tsv: key numbers; inputs.tsv: input files and their\n"
    "checksums).\n"
    "TABLE files ending in .csv are comma-separated, others tab-separated.\n"
    "A figure whose data the run lacks (an input given as --absent, a model\n"
    "its tables do not hold, too few values) is a canvas that says so.\n",
    options_table, NULL,
    "qk-plot --figure qk-pca/01 --out figures/qk-pca/01_pc_roles \\\n"
    "  --input qk=results/attention_plasticity/qk.csv",
    help_figures};

const qk_table *fig_input(const fig_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->n_inputs; i++)
        if (strcmp(ctx->input_names[i], name) == 0 && ctx->input_paths[i])
            return &ctx->inputs[i];
    qk_die(QK_EXIT_USAGE, NULL, "figure %s needs --input %s=FILE", ctx->id, name);
}

const char *fig_value(const fig_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->n_values; i++)
        if (strcmp(ctx->value_names[i], name) == 0)
            return ctx->value_texts[i];
    return NULL;
}

int fig_has_input(const fig_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->n_inputs; i++)
        if (strcmp(ctx->input_names[i], name) == 0)
            return ctx->input_paths[i] != NULL;
    return 0;
}

const char *fig_model(const fig_ctx *ctx)
{
    if (!ctx->model)
        qk_die(QK_EXIT_USAGE, NULL, "figure %s needs --model ID", ctx->id);
    return ctx->model;
}

/* The text a placeholder "{NAME}" at s stands for (the model's label, a
 * --value), its length in *len; NULL if s starts none. */
static const char *placeholder(const fig_ctx *ctx, const char *s, size_t *len)
{
    if (strncmp(s, "{model}", 7) == 0) {
        *len = 7;
        return ctx->model ? ctx->model_label : "the chosen model";
    }
    for (int i = 0; *s == '{' && i < ctx->n_values; i++) {
        size_t n = strlen(ctx->value_names[i]);
        if (strncmp(s + 1, ctx->value_names[i], n) == 0 && s[n + 1] == '}') {
            *len = n + 2;
            return ctx->value_texts[i];
        }
    }
    return NULL;
}

void fig_expand(const fig_ctx *ctx, const char *text, char *out, size_t cap)
{
    size_t used = 0, len;
    out[0] = '\0';
    for (const char *s = text; *s && used + 1 < cap;) {
        const char *value = placeholder(ctx, s, &len);
        if (value) {
            snprintf(out + used, cap - used, "%s", value);
            s += len;
        } else {
            out[used] = *s++;
            out[used + 1] = '\0';
        }
        used = strlen(out);
    }
}

/* One piece of a registry title at s as enhanced text into piece: a
 * value, a subscript "_word" or one character; returns its length in the
 * title. */
static size_t title_piece(const fig_ctx *ctx, const char *s, char *piece, size_t cap)
{
    size_t len = 1;
    const char *value = placeholder(ctx, s, &len);
    if (value) {
        qk_plot_enhanced_escape(piece, cap, value);
        return len;
    }
    if (s[0] == '_' && isalnum((unsigned char)s[1])) {
        while (isalnum((unsigned char)s[len]))
            len++;
        snprintf(piece, cap, QK_SUB("%.*s"), (int)len - 1, s + 1);
        return len;
    }
    while ((s[len] & 0xc0) == 0x80) /* the rest of a UTF-8 character */
        len++;
    char c[8];
    snprintf(c, sizeof c, "%.*s", (int)len, s);
    qk_plot_enhanced_escape(piece, cap, c);
    return len;
}

void fig_title_text(const fig_ctx *ctx, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (const char *s = ctx->def->title; *s && used + 1 < cap; used = strlen(out)) {
        char piece[256];
        s += title_piece(ctx, s, piece, sizeof piece);
        snprintf(out + used, cap - used, "%s", piece);
    }
}

const char *fig_path(const fig_ctx *ctx, const qk_table *t)
{
    for (int i = 0; i < ctx->n_inputs; i++)
        if (&ctx->inputs[i] == t)
            return ctx->input_paths[i];
    return "(table)";
}

qk_src fig_src(const fig_ctx *ctx, const char *name)
{
    const qk_table *t = fig_input(ctx, name);
    return (qk_src){t, fig_path(ctx, t), ctx->user};
}

int fig_column(const fig_ctx *ctx, const qk_table *t, const char *name)
{
    qk_src s = {t, fig_path(ctx, t), ctx->user};
    return qk_src_col(&s, name);
}

double fig_number_at(const fig_ctx *ctx, const qk_table *t, int row, int col)
{
    qk_src s = {t, fig_path(ctx, t), ctx->user};
    return qk_src_num(&s, row, col);
}

/* Length of a printf rendering of a non-finite number ("nan", "-nan",
 * "+nan" of a "%+f", "inf", ...) standing as a word at s, else 0. */
static size_t non_finite_word(const char *start, const char *s)
{
    static const char *const words[] = {"-nan", "+nan", "nan", "-inf", "+inf", "inf"};
    if (s > start && (isalnum((unsigned char)s[-1]) || s[-1] == '-'))
        return 0;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i]);
        if (strncmp(s, words[i], n) == 0 && !isalnum((unsigned char)s[n]))
            return n;
    }
    return 0;
}

/* A key number as the README shows it: a value without a number (a mean
 * over heads that have none) reads "n/a", never "nan". */
void fig_key(fig_ctx *ctx, const char *name, const char *fmt, ...)
{
    va_list ap;
    char *text;
    va_start(ap, fmt);
    if (vasprintf(&text, fmt, ap) < 0)
        qk_die(QK_EXIT_DATA, NULL, "out of memory");
    va_end(ap);
    fprintf(ctx->numbers, "%s\t", name);
    for (const char *s = text; *s;) {
        size_t n = non_finite_word(text, s);
        if (n) {
            fputs("n/a", ctx->numbers);
            s += n;
        } else {
            fputc(*s++, ctx->numbers);
        }
    }
    free(text);
    fputc('\n', ctx->numbers);
}

/* One more input slot; its table is zeroed. */
static int new_input(fig_ctx *ctx)
{
    int n = ctx->n_inputs++;
    ctx->input_names = qk_realloc(ctx->input_names, (size_t)(n + 1) * sizeof(char *));
    ctx->input_paths = qk_realloc(ctx->input_paths, (size_t)(n + 1) * sizeof(char *));
    ctx->absent_files = qk_realloc(ctx->absent_files, (size_t)(n + 1) * sizeof(char *));
    ctx->inputs = qk_realloc(ctx->inputs, (size_t)(n + 1) * sizeof(qk_table));
    memset(&ctx->inputs[n], 0, sizeof ctx->inputs[n]);
    ctx->absent_files[n] = NULL;
    return n;
}

static void add_input(fig_ctx *ctx, const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        qk_die(QK_EXIT_USAGE, NULL, "--input takes NAME=FILE, got '%s'", spec);
    int n = new_input(ctx);
    ctx->input_names[n] = qk_strdup(spec);
    ctx->input_names[n][eq - spec] = '\0';
    ctx->input_paths[n] = qk_strdup(eq + 1);
    qk_err err;
    if (qk_table_load(eq + 1, &ctx->inputs[n], &err) != 0)
        qk_die(QK_EXIT_DATA, eq + 1, "%s", err.msg);
}

static void add_absent(fig_ctx *ctx, const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!*spec || eq == spec)
        qk_die(QK_EXIT_USAGE, NULL, "--absent takes NAME or NAME=FILE, got '%s'", spec);
    int n = new_input(ctx);
    ctx->input_names[n] = qk_strdup(spec);
    if (eq) {
        ctx->input_names[n][eq - spec] = '\0';
        ctx->absent_files[n] = qk_strdup(qk_shown_path(eq + 1));
    }
    ctx->input_paths[n] = NULL;
}

static void add_value(fig_ctx *ctx, const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        qk_die(QK_EXIT_USAGE, NULL, "--value takes NAME=TEXT, got '%s'", spec);
    int n = ctx->n_values++;
    ctx->value_names = qk_realloc(ctx->value_names, (size_t)(n + 1) * sizeof(char *));
    ctx->value_texts = qk_realloc(ctx->value_texts, (size_t)(n + 1) * sizeof(char *));
    ctx->value_names[n] = qk_strdup(spec);
    ctx->value_names[n][eq - spec] = '\0';
    ctx->value_texts[n] = qk_strdup(eq + 1);
}

/* The model's display label from the registry input, if given. */
static void resolve_model(fig_ctx *ctx)
{
    if (!ctx->model)
        return;
    snprintf(ctx->model_label, sizeof ctx->model_label, "%s", ctx->model);
    if (fig_has_input(ctx, "registry"))
        snprintf(ctx->model_label, sizeof ctx->model_label, "%s",
                 fig_registry(ctx, ctx->model, "label", ctx->model));
}

static int any_absent(const fig_ctx *ctx)
{
    for (int i = 0; i < ctx->n_inputs; i++)
        if (!ctx->input_paths[i])
            return 1;
    return 0;
}

/* Opens DIR/NAME as a text output (qk/values.h). */
static void open_text(qk_text *out, const char *dir, const char *name)
{
    char *path = qk_path_join(dir, name);
    qk_text_open(out, path);
    free(path);
}

static void write_inputs_table(const fig_ctx *ctx)
{
    qk_text out;
    open_text(&out, ctx->out_dir, "inputs.tsv");
    fputs("input\tfile\tbytes\tchecksum\n", out.fp);
    for (int i = 0; i < ctx->n_inputs; i++) {
        if (!ctx->input_paths[i]) {
            fprintf(out.fp, "%s\t%s (not made by this run)\t0\t-\n", ctx->input_names[i],
                    ctx->absent_files[i] ? ctx->absent_files[i] : "-");
            continue;
        }
        uint8_t *data;
        size_t n;
        qk_err err;
        if (qk_read_file(ctx->input_paths[i], &data, &n, &err) != 0)
            qk_die(QK_EXIT_DATA, ctx->input_paths[i], "%s", err.msg);
        fprintf(out.fp, "%s\t%s\t%zu\t%016" PRIx64 "\n", ctx->input_names[i],
                qk_shown_path(ctx->input_paths[i]), n, XXH3_64bits(data, n));
        free(data);
    }
    qk_text_close(&out);
}

static void write_readme_values(const fig_ctx *ctx, const fig_def *f)
{
    char title[256], description[4096];
    fig_expand(ctx, f->title, title, sizeof title);
    fig_expand(ctx, f->description, description, sizeof description);
    qk_text out;
    open_text(&out, ctx->out_dir, "readme.tsv");
    fprintf(out.fp, "figure_id\t%s\nfigure_title\t%s\nfigure_description\t%s\n", f->id,
            title, description);
    qk_text_close(&out);
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-plot");
    fig_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.style = "templates/gnuplot/style.gp";
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case 'f': ctx.id = value; break;
        case OPT_OUT: ctx.out_dir = value; break;
        case 'i': add_input(&ctx, value); break;
        case 'a': add_absent(&ctx, value); break;
        case 'm': ctx.model = value; break;
        case OPT_VALUE: add_value(&ctx, value); break;
        case 'r': ctx.run_datasets = value; break;
        case 's': ctx.style = value; break;
        case 'l': list_figures(stdout); return QK_EXIT_OK;
        }
    }
    ctx.min_share = min_share;
    ctx.own_heatmap_scale = own_heatmap_scale;
    qk_args_operands(&a, 0, 0);
    if (!ctx.id || !ctx.out_dir)
        qk_usage_error(&program);
    const fig_def *f = find_figure(ctx.id);
    if (!f)
        qk_die(QK_EXIT_USAGE, NULL, "unknown figure '%s' (see --list)", ctx.id);
    snprintf(ctx.user, sizeof ctx.user, "figure %s", ctx.id);
    ctx.def = f;
    resolve_model(&ctx);
    qk_err err;
    char pdf_date[15];
    if (qk_plot_pdf_date(pdf_date, &err) != 0) /* before any drawing */
        qk_die(QK_EXIT_USAGE, NULL, "%s", err.msg);
    if (qk_mkdirs(ctx.out_dir, &err) != 0)
        qk_die(QK_EXIT_DATA, ctx.out_dir, "%s", err.msg);
    qk_text numbers;
    open_text(&numbers, ctx.out_dir, "numbers.tsv");
    ctx.numbers = numbers.fp;
    fputs("quantity\tvalue\n", ctx.numbers);
    /* the screen layout, then, for a figure that has one, the print layout
     * (figure.h), whose key numbers are the same and are dropped */
    fig_print_pass = f->print_layout;
    int rc = any_absent(&ctx) ? fig_not_drawn_absent(&ctx, &err) : f->draw(&ctx, &err);
    if (rc == 0 && fig_print_pass) {
        char *dropped = NULL;
        size_t dropped_len = 0;
        ctx.numbers = open_memstream(&dropped, &dropped_len);
        if (!ctx.numbers)
            qk_die(QK_EXIT_DATA, NULL, "out of memory");
        fig_printing = 1;
        rc = any_absent(&ctx) ? fig_not_drawn_absent(&ctx, &err) : f->draw(&ctx, &err);
        fclose(ctx.numbers);
        free(dropped);
        ctx.numbers = numbers.fp;
    }
    if (rc != 0)
        qk_die(QK_EXIT_DATA, ctx.out_dir, "%s", err.msg);
    qk_text_close(&numbers);
    write_inputs_table(&ctx);
    write_readme_values(&ctx, f);
    return QK_EXIT_OK;
}
