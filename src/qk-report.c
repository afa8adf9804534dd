/* qk-report: renders a template (the report page, figure READMEs) with the
 * values and tables the pipeline produced, and writes the same values for
 * LaTeX: report/numbers.tex (\qkdef lines), a key list in Markdown and
 * booktabs table fragments. Every number is typeset once here, from the raw
 * values of the numbers files (include/qk/numbers.h), so the page and the
 * LaTeX files cannot disagree. A reference to a value or table that no stage
 * produced is an error. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "qk/blas.h"
#include "qk/cli.h"
#include "qk/common.h"
#include "qk/numbers.h"
#include "qk/plasticity.h"
#include "qk/simd.h"
#include "qk/table.h"
#include "qk/values.h"

#include "figure_blocks.h" /* report_figures, generated from workflow/figures.rec */

enum {
    OPT_MARKDOWN = QK_KEY_FIRST,
    OPT_TEX,
    OPT_MD,
    OPT_LATEX_TABLE,
    OPT_BLAS_INFO,
    OPT_KERNELS_INFO,
    OPT_NUMBERS_HTML
};

static const qk_option options_table[] = {
    {'t', "template", "FILE", "template to render"},
    QK_OPTION_OUTPUT("result (written atomically)"),
    {'v', "values", "FILE", "a numbers file (qk-summary) or key<TAB>value lines (may repeat)"},
    {'T', "table", "NAME=FILE", "a TSV table with a header line (may repeat)"},
    {'s', "set", "KEY=VALUE", "one plain value (may repeat)"},
    {OPT_MARKDOWN, "markdown", NULL, "render tables as Markdown (default HTML)"},
    {OPT_TEX, "numbers-tex", "FILE", "every value of the numbers files as \\qkdef{KEY}{VALUE}, "
                                     "typeset as the page shows it, with the \\qk macro"},
    {OPT_MD, "numbers-md", "FILE", "the keys with their values, meanings and sources (Markdown)"},
    {OPT_NUMBERS_HTML, "numbers-html", "FILE", "the same as a page, a row per key with the id "
     "n-KEY, which a click on a number in the report opens"},
    {OPT_LATEX_TABLE, "latex-table", "NAME=FILE", "a table of the numbers files as a booktabs "
                                                  "tabular"},
    {OPT_BLAS_INFO, "blas-info", NULL, "print the BLAS in use as values (blas_library, "
     "blas_core) and fail when OPENBLAS_CORETYPE names another kernel"},
    {OPT_KERNELS_INFO, "kernels-info", NULL, "print the instruction sets of the stages' vector "
     "code as values: isa (the level of all of it: avx512, avx2 or scalar; QK_ISA lowers it), "
     "isa_best (the best this CPU runs), simd (the build the other stages' loops take at that "
     "level: avx2 or baseline)"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-report",
    "qk-report --template FILE --output FILE [--values FILE]... [--table NAME=TSV]...\n"
    "          [--set KEY=VALUE]... [--markdown] [--numbers-tex FILE]\n"
    "          [--numbers-md FILE] [--numbers-html FILE] [--latex-table NAME=FILE]...\n"
    "qk-report --blas-info\n"
    "qk-report --kernels-info",
    "Renders a template. Directives, written {{...}}:\n"
    "  {{key}}                    a value: from a numbers file (typeset by its kind; in\n"
    "                             HTML inside <span data-qk=\"key\">), or from a plain\n"
    "                             key<TAB>value file or --set\n"
    "  {{table:NAME}}             a table of a numbers file, or the TSV table NAME, as\n"
    "                             an HTML (or Markdown) table\n"
    "  {{if COND}} {{elif COND}} {{else}} {{end}}\n"
    "                             show a part or another by the values. COND is a key\n"
    "                             (true when present and not 0 or empty) or A OP B with\n"
    "                             OP one of < <= > >= == != and A, B keys or numbers,\n"
    "                             or such parts joined by 'and' (or by 'or'); a\n"
    "                             comparison with a missing value is false. Hidden\n"
    "                             parts are checked like shown ones.\n"
    "  {{count:NAME}}             the rows of a TSV table\n"
    "  {{sum:NAME.COLUMN}}        the sum of a numeric column of a TSV table\n"
    "  {{...|FILTER}}             format a plain number: int (digit groups), mb (bytes\n"
    "                             as MB), gib, f1 f2 f3 f4 (fixed decimals), pct1 (x100)\n"
    "  {{include:PATH}}           another template rendered in place (nested up to 8 deep)\n"
    "  {{figure ID}}              the block of figure ID (qk-pca/05) of the registry\n"
    "                             workflow/figures.rec: its image and caption, linked to\n"
    "                             its folder, where the run draws it, else a paragraph\n"
    "                             saying it is not drawn (HTML only)\n",
    options_table, "an unknown key, table, column or filter among them",
    "qk-report --template templates/report.html.in --output report/index.html \\\n"
    "  --values build/report/pca.numbers --set suite_version=0.1.0", NULL};

typedef struct renderer {
    qk_kv values;       /* plain values */
    qk_nset numbers;    /* typed values and tables */
    int n_tables;       /* plain tables */
    char **table_names;
    qk_table *tables;
    int markdown;
    const char *template_path;
} renderer;

static void add_table(renderer *r, const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        qk_die(QK_EXIT_USAGE, NULL, "--table takes NAME=FILE, got '%s'", spec);
    r->table_names = qk_realloc(r->table_names, (size_t)(r->n_tables + 1) * sizeof(char *));
    r->tables = qk_realloc(r->tables, (size_t)(r->n_tables + 1) * sizeof(qk_table));
    r->table_names[r->n_tables] = qk_strdup(spec);
    r->table_names[r->n_tables][eq - spec] = '\0';
    qk_err err;
    if (qk_table_load(eq + 1, &r->tables[r->n_tables], &err) != 0)
        qk_die(QK_EXIT_DATA, eq + 1, "%s", err.msg);
    r->n_tables++;
}

static const qk_table *find_table(const renderer *r, const char *name)
{
    for (int i = 0; i < r->n_tables; i++)
        if (strcmp(r->table_names[i], name) == 0)
            return &r->tables[i];
    return NULL;
}

/* How a value is written: as it is (Markdown text, where a command in a
 * code block must read as typed), in a Markdown table cell (qk_md_cell) or
 * as HTML text. */
enum escape { AS_TEXT, AS_MD_CELL, AS_HTML };

static void put_escaped(FILE *fp, const char *s, enum escape how)
{
    if (how == AS_HTML)
        qk_html_text(fp, s);
    else if (how == AS_MD_CELL)
        qk_md_cell(fp, s);
    else
        fputs(s, fp);
}

/* A cell aligned as a number: all of it a finite number (a version such as
 * "21e2213" overflows and stays text). */
static int looks_numeric(const char *s)
{
    char *end;
    if (!*s)
        return 0;
    double x = strtod(s, &end);
    return *end == '\0' && isfinite(x);
}

/* ---- tables ---------------------------------------------------------------------------- */

/* The class attribute of a table cell: a number is right-aligned ("num");
 * a long text (a source description) may wrap anywhere ("long"), so that a
 * wide table fits the page; a shorter one of several words (a label such
 * as "<b>My</b> & \"M\"") may wrap between them ("words"); one word (a
 * label, an id, which a break at a hyphen would mangle) stays on one
 * line. */
#define LONG_CELL_BYTES 32
static const char *cell_class(int number, const char *text)
{
    if (number)
        return " class=\"num\"";
    if (strlen(text) > LONG_CELL_BYTES)
        return " class=\"long\"";
    return strchr(text, ' ') ? " class=\"words\"" : "";
}

static void render_table_html(FILE *fp, const qk_table *t)
{
    fputs("<div class=\"table\"><table>\n<thead><tr>", fp);
    for (int c = 0; c < t->n_cols; c++) {
        fputs("<th>", fp);
        put_escaped(fp, t->header[c], AS_HTML);
        fputs("</th>", fp);
    }
    fputs("</tr></thead>\n<tbody>\n", fp);
    for (int r = 0; r < t->n_rows; r++) {
        fputs("<tr>", fp);
        for (int c = 0; c < t->n_cols; c++) {
            const char *cell = qk_table_cell(t, r, c);
            fprintf(fp, "<td%s>", cell_class(looks_numeric(cell), cell));
            put_escaped(fp, cell, AS_HTML);
            fputs("</td>", fp);
        }
        fputs("</tr>\n", fp);
    }
    fputs("</tbody>\n</table></div>", fp);
}

static void render_table_markdown(FILE *fp, const qk_table *t)
{
    for (int c = 0; c < t->n_cols; c++) {
        fputs("| ", fp);
        put_escaped(fp, t->header[c], AS_MD_CELL);
        fputc(' ', fp);
    }
    fputs("|\n", fp);
    for (int c = 0; c < t->n_cols; c++)
        fputs("|---", fp);
    fputs("|\n", fp);
    for (int r = 0; r < t->n_rows; r++) {
        for (int c = 0; c < t->n_cols; c++) {
            fputs("| ", fp);
            put_escaped(fp, qk_table_cell(t, r, c), AS_MD_CELL);
            fputc(' ', fp);
        }
        fputs("|\n", fp);
    }
}

/* A typed value as plain text into fp, escaped as put_escaped does (in_table
 * also chooses the table form of the number). */
static void put_plain_value(FILE *fp, const qk_nvalue *v, int in_table, enum escape how)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    qk_number_put(mem, v, QK_AS_PLAIN, in_table);
    fclose(mem);
    put_escaped(fp, buf, how);
    free(buf);
}

/* Before a value's data-qk attribute (which stays last, next to the
 * value): its key and source as a hover text, ' title="..."' (a value
 * without a known source gets none). */
static void put_source_title(FILE *fp, const qk_nvalue *v)
{
    char *text = qk_nsource_text(v);
    if (*text) {
        fputs(" title=\"", fp);
        qk_html_text(fp, v->key);
        fputs(" \xe2\x80\x94 ", fp); /* an em dash */
        qk_html_text(fp, text);
        fputc('"', fp);
    }
    free(text);
}

static void render_ntable(FILE *fp, const renderer *r, const qk_ntable *t)
{
    if (r->markdown) {
        for (int c = 0; c < t->n_cols; c++) {
            fputs("| ", fp);
            qk_plain_markup(fp, t->headers[c]);
            fputc(' ', fp);
        }
        fputs("|\n", fp);
        for (int c = 0; c < t->n_cols; c++)
            fputs("|---", fp);
        fputs("|\n", fp);
        for (int row = 0; row < t->n_rows; row++) {
            for (int c = 0; c < t->n_cols; c++) {
                fputs("| ", fp);
                put_plain_value(fp, qk_nset_cell(&r->numbers, t, row, c), 1, AS_MD_CELL);
                fputc(' ', fp);
            }
            fputs("|\n", fp);
        }
        return;
    }
    fputs("<div class=\"table\"><table>\n<thead><tr>", fp);
    for (int c = 0; c < t->n_cols; c++)
        fprintf(fp, "<th>%s</th>", t->headers[c]); /* light HTML written by qk-summary */
    fputs("</tr></thead>\n<tbody>\n", fp);
    for (int row = 0; row < t->n_rows; row++) {
        fputs("<tr>", fp);
        for (int c = 0; c < t->n_cols; c++) {
            const qk_nvalue *v = qk_nset_cell(&r->numbers, t, row, c);
            fprintf(fp, "<td%s", cell_class(qk_format_is_number(&v->format), v->raw ? v->raw : ""));
            put_source_title(fp, v);
            fputs(" data-qk=\"", fp);
            qk_html_text(fp, v->key);
            fputs("\">", fp);
            qk_number_put(fp, v, QK_AS_HTML, 1);
            fputs("</td>", fp);
        }
        fputs("</tr>\n", fp);
    }
    fputs("</tbody>\n</table></div>", fp);
}

/* ---- values ------------------------------------------------------------------------------- */

/* Formats a number with a filter; returns -1 for an unknown filter. */
static int apply_filter(const char *filter, double v, char *out, size_t cap)
{
    if (filter[0] == 'f' && filter[1] >= '0' && filter[1] <= '9' && !filter[2])
        snprintf(out, cap, "%.*f", filter[1] - '0', v);
    else if (strcmp(filter, "pct1") == 0)
        snprintf(out, cap, "%.1f", 100.0 * v);
    else if (strcmp(filter, "mb") == 0)
        snprintf(out, cap, "%.1f", v / 1e6);
    else if (strcmp(filter, "gib") == 0)
        snprintf(out, cap, "%.2f", v / (1024.0 * 1024.0 * 1024.0));
    else if (strcmp(filter, "int") == 0) {
        char digits[64];
        snprintf(digits, sizeof digits, "%.0f", v);
        size_t n = strlen(digits), o = 0;
        int neg = digits[0] == '-';
        for (size_t i = 0; i < n && o + 2 < cap; i++) {
            out[o++] = digits[i];
            size_t left = n - i - 1;
            if (left && left % 3 == 0 && !(neg && i == 0))
                out[o++] = ',';
        }
        out[o] = '\0';
    } else
        return -1;
    return 0;
}

static void fail_directive(const renderer *r, int line, const char *what, const char *name)
{
    qk_die(QK_EXIT_DATA, r->template_path, "line %d: %s '%s' was not produced by any stage",
           line, what, name);
}

/* Resolves an aggregate ("count:T", "sum:T.C") or a plain key to text. */
static void resolve_plain(const renderer *r, int line, char *expr, char *out, size_t cap,
                          int *is_num, double *num)
{
    *is_num = 0;
    if (strncmp(expr, "count:", 6) == 0) {
        const qk_table *t = find_table(r, expr + 6);
        if (!t)
            fail_directive(r, line, "table", expr + 6);
        *is_num = 1;
        *num = t->n_rows;
        snprintf(out, cap, "%d", t->n_rows);
        return;
    }
    if (strncmp(expr, "sum:", 4) == 0) {
        char *dot = strchr(expr + 4, '.');
        if (!dot)
            qk_die(QK_EXIT_DATA, r->template_path, "line %d: sum needs TABLE.COLUMN", line);
        *dot = '\0';
        const qk_table *t = find_table(r, expr + 4);
        if (!t)
            fail_directive(r, line, "table", expr + 4);
        int col = qk_table_column(t, dot + 1);
        if (col < 0)
            fail_directive(r, line, "column", dot + 1);
        double total = 0;
        for (int i = 0; i < t->n_rows; i++)
            total += strtod(qk_table_cell(t, i, col), NULL);
        *is_num = 1;
        *num = total;
        snprintf(out, cap, "%.17g", total);
        return;
    }
    const char *v = qk_kv_get(&r->values, expr);
    if (!v)
        fail_directive(r, line, "value", expr);
    snprintf(out, cap, "%s", v);
    char *end;
    *num = strtod(v, &end);
    *is_num = *v && *end == '\0';
}

/* ---- conditions ------------------------------------------------------------------------------- */

/* One side of a condition: a number literal, a typed value or a plain one. */
typedef struct operand {
    int missing, numeric;
    double x;
    const char *text;
} operand;

static operand eval_operand(const renderer *r, int line, const char *s)
{
    operand o = {0, 0, 0, ""};
    char *end;
    double x = strtod(s, &end);
    if (end != s && *end == '\0') {
        o.numeric = 1;
        o.x = x;
        return o;
    }
    const qk_nvalue *v = qk_nset_value(&r->numbers, s);
    if (v) {
        o.missing = v->missing;
        o.numeric = qk_format_is_number(&v->format) || v->format.kind == QK_KIND_FLAG;
        o.x = v->x;
        o.text = v->raw;
        return o;
    }
    const char *p = qk_kv_get(&r->values, s);
    if (!p)
        fail_directive(r, line, "value", s);
    o.text = p;
    o.x = strtod(p, &end);
    o.numeric = *p && *end == '\0';
    return o;
}

/* Splits "A OP B" at its operator; returns the operator or NULL. */
static const char *split_condition(char *cond, char **a, char **b)
{
    static const char *const ops[] = {"<=", ">=", "==", "!=", "<", ">"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char *p = strstr(cond, ops[i]);
        if (!p)
            continue;
        *p = '\0';
        *a = cond;
        *b = p + strlen(ops[i]);
        return ops[i];
    }
    return NULL;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int eval_comparison(const renderer *r, int line, char *cond)
{
    char *a, *b;
    const char *op = split_condition(cond, &a, &b);
    if (!op) {
        operand o = eval_operand(r, line, trim(cond));
        if (o.missing)
            return 0;
        return o.numeric ? o.x != 0 : o.text[0] != '\0';
    }
    a = trim(a);
    b = trim(b);
    if (!*a || !*b)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: condition needs A %s B", line, op);
    operand x = eval_operand(r, line, a), y = eval_operand(r, line, b);
    if (x.missing || y.missing)
        return 0;
    if (!x.numeric || !y.numeric)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: '%s %s %s' compares text", line, a, op, b);
    if (strcmp(op, "<") == 0)
        return x.x < y.x;
    if (strcmp(op, "<=") == 0)
        return x.x <= y.x;
    if (strcmp(op, ">") == 0)
        return x.x > y.x;
    if (strcmp(op, ">=") == 0)
        return x.x >= y.x;
    if (strcmp(op, "==") == 0)
        return x.x == y.x;
    return x.x != y.x;
}

/* A condition: comparisons joined by " and " or by " or " (not both).
 * Every part is evaluated, so an unknown key is an error wherever it is. */
static int eval_condition(const renderer *r, int line, char *cond)
{
    int has_and = strstr(cond, " and ") != NULL, has_or = strstr(cond, " or ") != NULL;
    if (has_and && has_or)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: a condition mixes 'and' and 'or'", line);
    const char *sep = has_and ? " and " : " or ";
    int result = has_and;
    for (char *part = cond;;) {
        char *next = has_and || has_or ? strstr(part, sep) : NULL;
        if (next)
            *next = '\0';
        int v = eval_comparison(r, line, part);
        result = has_and ? result && v : result || v;
        if (!next)
            break;
        part = next + strlen(sep);
    }
    return result;
}

/* ---- rendering ------------------------------------------------------------------------------- */

/* The open {{if}} blocks of one template file. */
#define MAX_DEPTH 32
typedef struct block {
    int parent_shown, shown, taken, has_else, line;
} block;

typedef struct state {
    FILE *fp;
    int depth, n_blocks;
    block blocks[MAX_DEPTH];
    int in_tag; /* inside an HTML tag: values go into attributes, without spans */
} state;

static int shown(const state *st)
{
    return st->n_blocks == 0 || st->blocks[st->n_blocks - 1].shown;
}

static void render(const renderer *r, const char *tpl, FILE *fp, int depth, int emit);

static void render_include(const renderer *r, state *st, int line, const char *path)
{
    if (st->depth >= 8)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: includes nested too deep", line);
    uint8_t *text;
    size_t len;
    qk_err err;
    if (qk_read_file(path, &text, &len, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s (included at %s line %d)", err.msg, r->template_path, line);
    renderer sub = *r;
    sub.template_path = path;
    render(&sub, (const char *)text, st->fp, st->depth + 1, shown(st));
    free(text);
}

/* ---- figures ------------------------------------------------------------------------------- */

static const report_figure *find_figure(const char *id)
{
    for (const report_figure *f = report_figures; f->id; f++)
        if (strcmp(f->id, id) == 0)
            return f;
    return NULL;
}

/* text into fp with every mark in it replaced by with. */
static void put_replacing(FILE *fp, const char *text, const char *mark, const char *with)
{
    size_t n = strlen(mark);
    for (const char *hit; (hit = strstr(text, mark)) != NULL; text = hit + n) {
        fwrite(text, 1, (size_t)(hit - text), fp);
        fputs(with, fp);
    }
    fputs(text, fp);
}

/* The image of a figure whose folder the page links as dir, as its embed
 * field says: picture (the SVG, the PNG where SVG is not shown), object
 * (the SVG as an object) or img (the PNG alone). */
static void put_figure_image(FILE *fp, const report_figure *f, const char *dir)
{
    if (strcmp(f->embed, "picture") == 0)
        fprintf(fp, "<picture><source srcset=\"%s/figure.svg\" type=\"image/svg+xml\">", dir);
    else if (strcmp(f->embed, "object") == 0)
        fprintf(fp, "<object data=\"%s/figure.svg\" type=\"image/svg+xml\" width=\"%s\">", dir,
                f->width);
    fprintf(fp, "<img src=\"%s/figure.png\" alt=\"%s\" width=\"%s\">", dir, f->alt, f->width);
    if (strcmp(f->embed, "picture") == 0)
        fputs("</picture>", fp);
    else if (strcmp(f->embed, "object") == 0)
        fputs("</object>", fp);
}

/* The template text of a figure's block: its image and caption where the
 * run draws it (the flag figure.<study>.<NN> of the figures section), else
 * the paragraph that says it is not. The registry's texts are templates
 * themselves; {links} in the caption stands for the links to the README
 * (and, for a figure shown as its PNG, the SVG), {dir} in the absent text
 * for the figure's folder. */
static char *figure_block(const report_figure *f)
{
    char *dir, *links, *flag, *text;
    size_t len;
    int study = (int)strcspn(f->id, "/");
    if (asprintf(&dir, "../figures/%.*s/%s", study, f->id, f->folder) < 0 ||
        asprintf(&links, "<a href=\"%s/README.md\">README</a>%s%s%s", dir,
                 strcmp(f->embed, "img") == 0 ? " <a href=\"" : "",
                 strcmp(f->embed, "img") == 0 ? dir : "",
                 strcmp(f->embed, "img") == 0 ? "/figure.svg\">SVG</a>" : "") < 0 ||
        asprintf(&flag, "figure.%.*s.%s", study, f->id, f->id + study + 1) < 0)
        qk_die(QK_EXIT_DATA, NULL, "out of memory");
    FILE *fp = open_memstream(&text, &len);
    if (!fp)
        qk_die(QK_EXIT_DATA, NULL, "out of memory");
    fprintf(fp, "{{if %s}}\n<figure>\n<a href=\"%s/README.md\">", flag, dir);
    put_figure_image(fp, f, dir);
    fputs("</a>\n<figcaption>", fp);
    if (f->number)
        fprintf(fp, "Figure %s. ", f->number);
    put_replacing(fp, f->caption, "{links}", links);
    fputs("</figcaption>\n</figure>\n{{else}}\n<p class=\"absent\">", fp);
    if (f->absent)
        put_replacing(fp, f->absent, "{dir}", dir);
    else
        fprintf(fp, "(Figure %s is not drawn in this run: <a href=\"%s/README.md\">its README</a> "
                    "says what it lacks.)", f->number, dir);
    fputs("</p>\n{{end}}", fp);
    fclose(fp);
    free(dir);
    free(links);
    free(flag);
    return text;
}

/* {{figure ID}}: the figure's block, rendered in place like an include. */
static void render_figure(const renderer *r, state *st, int line, const char *id)
{
    if (r->markdown)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: {{figure %s}} is for HTML pages", line, id);
    const report_figure *f = find_figure(id);
    if (!f)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: no figure '%s' in workflow/figures.rec",
               line, id);
    if (st->depth >= 8)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: includes nested too deep", line);
    char *block = figure_block(f), *where;
    if (asprintf(&where, "%s line %d, figure %s", r->template_path, line, id) < 0)
        qk_die(QK_EXIT_DATA, NULL, "out of memory");
    renderer sub = *r;
    sub.template_path = where;
    render(&sub, block, st->fp, st->depth + 1, shown(st));
    free(where);
    free(block);
}

/* {{if}}, {{elif}}, {{else}}, {{end}}; returns 0 if inner is none of them. */
static int block_directive(const renderer *r, state *st, int line, char *inner)
{
    block *top = st->n_blocks ? &st->blocks[st->n_blocks - 1] : NULL;
    if (strncmp(inner, "if ", 3) == 0) {
        if (st->n_blocks == MAX_DEPTH)
            qk_die(QK_EXIT_DATA, r->template_path, "line %d: {{if}} nested too deep", line);
        int parent = shown(st), cond = eval_condition(r, line, inner + 3);
        st->blocks[st->n_blocks++] = (block){parent, parent && cond, cond, 0, line};
        return 1;
    }
    int is_elif = strncmp(inner, "elif ", 5) == 0;
    if (!is_elif && strcmp(inner, "else") != 0 && strcmp(inner, "end") != 0)
        return 0;
    if (!top)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: {{%s}} without {{if}}", line,
               is_elif ? "elif" : inner);
    if (strcmp(inner, "end") == 0) {
        st->n_blocks--;
        return 1;
    }
    if (top->has_else)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: {{%s}} after {{else}}", line,
               is_elif ? "elif" : "else");
    int cond = is_elif ? eval_condition(r, line, inner + 5) : 1;
    top->shown = top->parent_shown && !top->taken && cond;
    top->taken |= cond;
    top->has_else = !is_elif;
    return 1;
}

static void render_value(const renderer *r, state *st, int line, char *inner)
{
    char *bar = strchr(inner, '|');
    if (bar)
        *bar++ = '\0';
    const qk_nvalue *v = qk_nset_value(&r->numbers, inner);
    if (v) {
        if (bar)
            qk_die(QK_EXIT_DATA, r->template_path,
                   "line %d: '%s' is typeset by its kind; no filter", line, inner);
        if (v->format.kind == QK_KIND_FLAG)
            qk_die(QK_EXIT_DATA, r->template_path, "line %d: '%s' is a flag, for {{if}} only",
                   line, inner);
        if (!shown(st))
            return;
        if (r->markdown || st->in_tag) {
            /* Markdown, or an HTML attribute: plain text, escaped */
            put_plain_value(st->fp, v, 0, r->markdown ? AS_TEXT : AS_HTML);
            return;
        }
        fputs("<span", st->fp);
        put_source_title(st->fp, v);
        fputs(" data-qk=\"", st->fp);
        qk_html_text(st->fp, v->key);
        fputs("\">", st->fp);
        qk_number_put(st->fp, v, QK_AS_HTML, 0);
        fputs("</span>", st->fp);
        return;
    }
    char text[4096], name[512];
    int is_num;
    double num;
    snprintf(name, sizeof name, "%s", inner); /* resolving cuts sum:T.C at the dot */
    resolve_plain(r, line, inner, text, sizeof text, &is_num, &num);
    if (bar) {
        if (!is_num)
            qk_die(QK_EXIT_DATA, r->template_path, "line %d: filter %s on non-number '%s'",
                   line, bar, text);
        if (apply_filter(bar, num, text, sizeof text) != 0)
            qk_die(QK_EXIT_DATA, r->template_path, "line %d: unknown filter '%s'", line, bar);
    }
    if (!shown(st))
        return;
    /* a plain value in the page is marked too, so that a check can tell
     * it from the typeset numbers */
    int span = !r->markdown && !st->in_tag;
    if (span) {
        fputs("<span data-qv=\"", st->fp);
        qk_html_text(st->fp, name);
        fputs("\">", st->fp);
    }
    put_escaped(st->fp, text, r->markdown ? AS_TEXT : AS_HTML);
    if (span)
        fputs("</span>", st->fp);
}

static void render_directive(const renderer *r, state *st, int line, char *inner)
{
    inner = trim(inner);
    if (block_directive(r, st, line, inner))
        return;
    if (strncmp(inner, "include:", 8) == 0) {
        render_include(r, st, line, inner + 8);
        return;
    }
    if (strncmp(inner, "figure ", 7) == 0) {
        render_figure(r, st, line, trim(inner + 7));
        return;
    }
    if (strncmp(inner, "table:", 6) == 0) {
        const qk_ntable *nt = qk_nset_table(&r->numbers, inner + 6);
        const qk_table *t = nt ? NULL : find_table(r, inner + 6);
        if (!nt && !t)
            fail_directive(r, line, "table", inner + 6);
        if (!shown(st))
            return;
        if (nt)
            render_ntable(st->fp, r, nt);
        else
            (r->markdown ? render_table_markdown : render_table_html)(st->fp, t);
        return;
    }
    render_value(r, st, line, inner);
}

/* Copies one character of template text, following whether it opens or
 * closes an HTML tag. */
static void put_text(state *st, const char *p)
{
    if (*p == '<' && (isalpha((unsigned char)p[1]) || p[1] == '/' || p[1] == '!'))
        st->in_tag = 1;
    else if (*p == '>')
        st->in_tag = 0;
    if (shown(st))
        fputc(*p, st->fp);
}

static void render(const renderer *r, const char *tpl, FILE *fp, int depth, int emit)
{
    state st = {fp, depth, 0, {{0}}, 0};
    if (!emit) /* a hidden include: checked, not written */
        st.blocks[st.n_blocks++] = (block){0, 0, 1, 1, 0};
    int line = 1, base = st.n_blocks;
    for (const char *p = tpl; *p;) {
        if (p[0] == '{' && p[1] == '{') {
            const char *end = strstr(p + 2, "}}");
            if (!end)
                qk_die(QK_EXIT_DATA, r->template_path, "line %d: unclosed {{", line);
            size_t len = (size_t)(end - p - 2);
            char *inner = qk_malloc(len + 1);
            memcpy(inner, p + 2, len);
            inner[len] = '\0';
            if (strchr(inner, '\n'))
                qk_die(QK_EXIT_DATA, r->template_path, "line %d: directive spans lines", line);
            render_directive(r, &st, line, inner);
            if (st.n_blocks < base)
                qk_die(QK_EXIT_DATA, r->template_path, "line %d: {{end}} without {{if}}", line);
            free(inner);
            p = end + 2;
            continue;
        }
        if (*p == '\n')
            line++;
        put_text(&st, p++);
    }
    if (st.n_blocks > base)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: {{if}} not closed by {{end}}",
               st.blocks[st.n_blocks - 1].line);
}

/* ---- LaTeX and the key list ------------------------------------------------------------------ */


/* --latex-table NAME=FILE options. */
typedef struct latex_table {
    char *name, *path;
} latex_table;

static void write_numbers_md(const renderer *r, FILE *fp, int n_latex, const latex_table *latex)
{
    qk_nset_write_md(&r->numbers, fp);
    if (n_latex > 0) {
        fputs("\n## Tables\n\nbooktabs `tabular` fragments, for `\\input` inside a `table` "
              "environment (`\\usepackage{booktabs}`):\n\n| file | table |\n|---|---|\n", fp);
        for (int i = 0; i < n_latex; i++) {
            const qk_ntable *t = qk_nset_table(&r->numbers, latex[i].name);
            fprintf(fp, "| `%s` | ", qk_shown_path(latex[i].path));
            put_escaped(fp, t->caption, AS_MD_CELL);
            fputs(" |\n", fp);
        }
    }
}

/* ---- main ----------------------------------------------------------------------------------- */

/* The BLAS in use, as --values lines. A kernel asked for through
 * OPENBLAS_CORETYPE that OpenBLAS does not run (unknown name, or a CPU
 * without its instructions) is an error: the results would silently come
 * from another kernel than the one recorded. */
static int print_blas_info(void)
{
    const char *want = getenv("OPENBLAS_CORETYPE");
    const char *core = qk_blas_core();
    if (want && *want && strcasecmp(want, core) != 0)
        qk_die(QK_EXIT_DATA, NULL, "OPENBLAS_CORETYPE=%s asked for, but OpenBLAS runs %s "
                                   "(set BLAS_CORE to a kernel this CPU has)", want, core);
    printf("blas_library\t%s\nblas_core\t%s\n", qk_blas_config(), core);
    return QK_EXIT_OK;
}

/* The instruction sets the stages' vector code runs, as --values lines (the
 * benchmarks name them beside their figures). It comes before the end of
 * the options, where every program refuses a QK_ISA that names no
 * instruction set: refused here the same way. */
static int print_kernels_info(void)
{
    qk_err err;
    int isa = qk_isa_check(&err);
    if (isa < 0)
        qk_die(QK_EXIT_USAGE, NULL, "%s", err.msg);
    printf("isa\t%s\nisa_best\t%s\nsimd\t%s\n", qk_isa_name(isa),
           qk_isa_name(qk_isa_best()), qk_simd_avx2() ? "avx2" : "baseline");
    return QK_EXIT_OK;
}

static void load_values(renderer *r, const char *path)
{
    qk_err err;
    int rc = qk_numbers_file(path) ? qk_nset_load(&r->numbers, path, &err)
                                   : qk_kv_load(&r->values, path, &err);
    if (rc != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
}

/* A key must not be both a typed and a plain value. */
static void check_keys(const renderer *r)
{
    for (int i = 0; i < r->values.n; i++)
        if (qk_nset_value(&r->numbers, r->values.keys[i]))
            qk_die(QK_EXIT_DATA, NULL, "value '%s' is defined twice", r->values.keys[i]);
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-report");
    renderer r;
    memset(&r, 0, sizeof r);
    const char *numbers_tex = NULL, *numbers_md = NULL, *numbers_html = NULL, *value;
    latex_table *latex = NULL;
    int n_latex = 0;
    qk_args a;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case 't': r.template_path = value; break;
        case 'v': load_values(&r, value); break;
        case 'T': add_table(&r, value); break;
        case 's':
            if (qk_kv_set_arg(&r.values, value) != 0)
                qk_die(QK_EXIT_USAGE, NULL, "--set takes KEY=VALUE, got '%s'", value);
            break;
        case OPT_MARKDOWN: r.markdown = 1; break;
        case OPT_TEX: numbers_tex = value; break;
        case OPT_MD: numbers_md = value; break;
        case OPT_NUMBERS_HTML: numbers_html = value; break;
        case OPT_LATEX_TABLE:
            if (!strchr(value, '=') || value[0] == '=')
                qk_die(QK_EXIT_USAGE, NULL, "--latex-table takes NAME=FILE, got '%s'", value);
            latex = qk_realloc(latex, (size_t)(n_latex + 1) * sizeof *latex);
            latex[n_latex].name = qk_strdup(value);
            *strchr(latex[n_latex].name, '=') = '\0';
            latex[n_latex].path = strchr(value, '=') + 1;
            n_latex++;
            break;
        case OPT_BLAS_INFO: return print_blas_info();
        case OPT_KERNELS_INFO: return print_kernels_info();
        }
    }
    const char *output = a.output;
    if (!r.template_path || !output)
        qk_usage_error(&program);
    qk_args_operands(&a, 0, 0);
    check_keys(&r);
    for (int i = 0; i < n_latex; i++)
        if (!qk_nset_table(&r.numbers, latex[i].name))
            qk_die(QK_EXIT_DATA, NULL, "--latex-table: table '%s' was not produced by any stage",
                   latex[i].name);
    uint8_t *tpl;
    size_t len;
    qk_err err;
    if (qk_read_file(r.template_path, &tpl, &len, &err) != 0)
        qk_die(QK_EXIT_DATA, r.template_path, "%s", err.msg);
    /* every output made in memory, then written all or none: an error
     * exits before any output is touched */
    qk_text *out = qk_calloc((size_t)(4 + n_latex), sizeof *out);
    int n_out = 0;
    qk_text_open(&out[n_out], output);
    render(&r, (const char *)tpl, out[n_out++].fp, 0, 1);
    free(tpl);
    if (numbers_tex) {
        qk_text_open(&out[n_out], numbers_tex);
        qk_nset_write_tex(&r.numbers, out[n_out++].fp);
    }
    if (numbers_md) {
        qk_text_open(&out[n_out], numbers_md);
        write_numbers_md(&r, out[n_out++].fp, n_latex, latex);
    }
    if (numbers_html) {
        qk_text_open(&out[n_out], numbers_html);
        qk_nset_write_html(&r.numbers, out[n_out++].fp);
    }
    for (int i = 0; i < n_latex; i++) {
        qk_text_open(&out[n_out], latex[i].path);
        qk_ntable_write_latex(&r.numbers, qk_nset_table(&r.numbers, latex[i].name),
                              out[n_out++].fp);
    }
    qk_texts_close(out, n_out);
    free(out);
    return QK_EXIT_OK;
}
