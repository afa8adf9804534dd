/* qk-report: renders a template (the report page, figure READMEs) with
 * values and tables produced by the pipeline. A reference to a value or
 * table that no stage produced is an error, so no number in the output is
 * typed by hand. */
#include <ctype.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "qk/blas.h"
#include "qk/common.h"
#include "qk/table.h"
#include "qk/values.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-report --template FILE --output FILE [--values TSV]... [--table NAME=TSV]...\n"
        "                 [--set KEY=VALUE]... [--html|--markdown]\n"
        "       qk-report --blas-info\n"
        "\n"
        "Renders a template. Directives, written {{...}}:\n"
        "  {{key}}                    a value from --values files (key<TAB>value lines)\n"
        "                             or --set\n"
        "  {{table:NAME}}             the whole TSV table NAME as an HTML (or Markdown) table\n"
        "  {{count:NAME}}             its number of rows\n"
        "  {{sum:NAME.COLUMN}}        the sum of a numeric column\n"
        "  {{...|FILTER}}             format: int (digit groups), mb (bytes as MB), gib,\n"
        "                             f1 f2 f3 f4 (fixed decimals), pct1 (x100, 1 decimal)\n"
        "  {{include:PATH}}           another template rendered in place (nested up to 8 deep)\n"
        "Unknown keys, tables, columns or filters are errors (exit 2).\n"
        "\n"
        "Options:\n"
        "  -t, --template FILE   template to render\n"
        "  -o, --output FILE     result (written atomically)\n"
        "  -v, --values FILE     TSV of key<TAB>value (may repeat)\n"
        "  -T, --table NAME=FILE a TSV table with a header line (may repeat)\n"
        "  -s, --set KEY=VALUE   one value (may repeat)\n"
        "      --markdown        render tables as Markdown (default HTML)\n"
        "      --blas-info       print the BLAS in use as values (blas_library, blas_core)\n"
        "                        and fail when OPENBLAS_CORETYPE names another kernel\n"
        "  -h, --help            this text\n"
        "      --version         print the version\n");
}

typedef struct renderer {
    qk_kv values;
    int n_tables;
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

static void put_escaped(FILE *fp, const char *s, int html)
{
    for (; *s; s++) {
        if (html && *s == '<')
            fputs("&lt;", fp);
        else if (html && *s == '>')
            fputs("&gt;", fp);
        else if (html && *s == '&')
            fputs("&amp;", fp);
        else if (html && *s == '"')
            fputs("&quot;", fp);
        else if (!html && *s == '|')
            fputs("\\|", fp);
        else
            fputc(*s, fp);
    }
}

static int looks_numeric(const char *s)
{
    char *end;
    if (!*s)
        return 0;
    strtod(s, &end);
    return *end == '\0';
}

static void render_table_html(FILE *fp, const qk_table *t)
{
    fputs("<div class=\"table\"><table>\n<thead><tr>", fp);
    for (int c = 0; c < t->n_cols; c++) {
        fputs("<th>", fp);
        put_escaped(fp, t->header[c], 1);
        fputs("</th>", fp);
    }
    fputs("</tr></thead>\n<tbody>\n", fp);
    for (int r = 0; r < t->n_rows; r++) {
        fputs("<tr>", fp);
        for (int c = 0; c < t->n_cols; c++) {
            const char *cell = qk_table_cell(t, r, c);
            fputs(looks_numeric(cell) ? "<td class=\"num\">" : "<td>", fp);
            put_escaped(fp, cell, 1);
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
        put_escaped(fp, t->header[c], 0);
        fputc(' ', fp);
    }
    fputs("|\n", fp);
    for (int c = 0; c < t->n_cols; c++)
        fputs("|---", fp);
    fputs("|\n", fp);
    for (int r = 0; r < t->n_rows; r++) {
        for (int c = 0; c < t->n_cols; c++) {
            fputs("| ", fp);
            put_escaped(fp, qk_table_cell(t, r, c), 0);
            fputc(' ', fp);
        }
        fputs("|\n", fp);
    }
}

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
static void resolve(const renderer *r, int line, char *expr, char *out, size_t cap, int *is_num,
                    double *num)
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

static void render(const renderer *r, const char *tpl, FILE *fp, int depth);

static void render_include(const renderer *r, FILE *fp, int line, const char *path, int depth)
{
    if (depth >= 8)
        qk_die(QK_EXIT_DATA, r->template_path, "line %d: includes nested too deep", line);
    uint8_t *text;
    size_t len;
    qk_err err;
    if (qk_read_file(path, &text, &len, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s (included at %s line %d)", err.msg, r->template_path, line);
    renderer sub = *r;
    sub.template_path = path;
    render(&sub, (const char *)text, fp, depth + 1);
    free(text);
}

static void render_directive(const renderer *r, FILE *fp, int line, char *inner, int depth)
{
    while (isspace((unsigned char)*inner))
        inner++;
    size_t n = strlen(inner);
    while (n && isspace((unsigned char)inner[n - 1]))
        inner[--n] = '\0';
    if (strncmp(inner, "include:", 8) == 0) {
        render_include(r, fp, line, inner + 8, depth);
        return;
    }
    if (strncmp(inner, "table:", 6) == 0) {
        const qk_table *t = find_table(r, inner + 6);
        if (!t)
            fail_directive(r, line, "table", inner + 6);
        (r->markdown ? render_table_markdown : render_table_html)(fp, t);
        return;
    }
    char *bar = strchr(inner, '|');
    if (bar)
        *bar++ = '\0';
    char text[4096];
    int is_num;
    double num;
    resolve(r, line, inner, text, sizeof text, &is_num, &num);
    if (bar) {
        if (!is_num)
            qk_die(QK_EXIT_DATA, r->template_path, "line %d: filter %s on non-number '%s'",
                   line, bar, text);
        if (apply_filter(bar, num, text, sizeof text) != 0)
            qk_die(QK_EXIT_DATA, r->template_path, "line %d: unknown filter '%s'", line, bar);
    }
    put_escaped(fp, text, !r->markdown);
}

static void render(const renderer *r, const char *tpl, FILE *fp, int depth)
{
    int line = 1;
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
            render_directive(r, fp, line, inner, depth);
            free(inner);
            p = end + 2;
            continue;
        }
        if (*p == '\n')
            line++;
        fputc(*p++, fp);
    }
}

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

int main(int argc, char **argv)
{
    qk_set_progname("qk-report");
    static const struct option longopts[] = {
        {"template", required_argument, NULL, 't'}, {"output", required_argument, NULL, 'o'},
        {"values", required_argument, NULL, 'v'},   {"table", required_argument, NULL, 'T'},
        {"set", required_argument, NULL, 's'},      {"markdown", no_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},           {"version", no_argument, NULL, 'V'},
        {"blas-info", no_argument, NULL, 'B'},
        {NULL, 0, NULL, 0}};
    renderer r;
    memset(&r, 0, sizeof r);
    const char *output = NULL;
    qk_err err;
    int c;
    while ((c = getopt_long(argc, argv, "t:o:v:T:s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 't': r.template_path = optarg; break;
        case 'o': output = optarg; break;
        case 'v':
            if (qk_kv_load(&r.values, optarg, &err) != 0)
                qk_die(QK_EXIT_DATA, optarg, "%s", err.msg);
            break;
        case 'T': add_table(&r, optarg); break;
        case 's':
            if (qk_kv_set_arg(&r.values, optarg) != 0)
                qk_die(QK_EXIT_USAGE, NULL, "--set takes KEY=VALUE, got '%s'", optarg);
            break;
        case 'm': r.markdown = 1; break;
        case 'h': usage(stdout); return QK_EXIT_OK;
        case 'V': printf("qk-report %s\n", QK_VERSION_STRING); return QK_EXIT_OK;
        case 'B': return print_blas_info();
        default: usage(stderr); return QK_EXIT_USAGE;
        }
    }
    if (!r.template_path || !output || optind != argc) {
        usage(stderr);
        return QK_EXIT_USAGE;
    }
    uint8_t *tpl;
    size_t len;
    if (qk_read_file(r.template_path, &tpl, &len, &err) != 0)
        qk_die(QK_EXIT_DATA, r.template_path, "%s", err.msg);
    /* render in memory first: an error exits before the output is touched */
    qk_text out;
    qk_text_open(&out, output);
    render(&r, (const char *)tpl, out.fp, 0);
    qk_text_close(&out);
    free(tpl);
    return QK_EXIT_OK;
}
