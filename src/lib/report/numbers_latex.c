/* The numbers of the report for LaTeX and as a key list: numbers.tex,
 * numbers.md and booktabs table fragments (include/qk/numbers.h). */
#include "qk/numbers.h"

#include <stdio.h>
#include <stdlib.h>

void qk_nset_write_tex(const qk_nset *s, FILE *fp)
{
    fputs("% The numbers of the report, typeset as report/index.html shows them (written by\n"
          "% qk-report from the same values). \\input{numbers.tex}, then \\qk{KEY}; the keys\n"
          "% and their meanings are listed in numbers.md. An unknown key stops LaTeX.\n"
          "\\makeatletter\n"
          "\\providecommand\\qkdef[2]{\\expandafter\\def\\csname qk@#1\\endcsname{#2}}\n"
          "\\providecommand\\qk[1]{\\@ifundefined{qk@#1}{\\PackageError{qk}{Unknown number key "
          "`#1'}{numbers.tex defines no key #1 (see numbers.md)}}{\\@nameuse{qk@#1}}}\n"
          "%% \\qkif{CONDITION}{TRUE}{FALSE}: the report's rules in a text, with \\qkraw{KEY}, a\n"
          "%% number or a flag (1 or 0) as a plain decimal (nan when the run lacks it, so that\n"
          "%% a comparison with it is false), in an \\fpeval expression:\n"
          "%% \\qkif{\\qkraw{rotation.rk_mean} > \\qkraw{rotation.rq_mean}}{keys}{queries}\n"
          "\\providecommand\\qkrawdef[2]{\\expandafter\\def\\csname qkraw@#1\\endcsname{#2}}\n"
          "\\ExplSyntaxOn\n"
          "\\msg_set:nnn{qk}{unknown}{no~key~#1}\n"
          "\\cs_set:Npn\\qk@unknownraw#1{\\msg_expandable_error:nnn{qk}{unknown}{#1}nan}\n"
          "\\ExplSyntaxOff\n"
          "\\providecommand\\qkraw[1]{\\ifcsname qkraw@#1\\endcsname\\csname qkraw@#1\\expandafter"
          "\\endcsname\\else\\qk@unknownraw{#1}\\fi}\n"
          "\\providecommand\\qkif[1]{\\ifnum\\fpeval{#1}=1 \\expandafter\\@firstoftwo\\else"
          "\\expandafter\\@secondoftwo\\fi}\n"
          "\\makeatother\n", fp);
    for (int i = 0; i < s->n_values; i++) {
        const qk_nvalue *v = &s->values[i];
        if (v->format.kind == QK_KIND_FLAG)
            continue;
        fprintf(fp, "\\qkdef{%s}{", v->key);
        qk_number_put(fp, v, QK_AS_LATEX, 0);
        fputs("}\n", fp);
    }
    for (int i = 0; i < s->n_values; i++) {
        const qk_nvalue *v = &s->values[i];
        if (qk_format_is_number(&v->format) || v->format.kind == QK_KIND_FLAG)
            fprintf(fp, "\\qkrawdef{%s}{%s}\n", v->key, v->missing ? "nan" : v->raw);
    }
}

void qk_nset_write_md(const qk_nset *s, FILE *fp)
{
    fputs("# The numbers of the report\n\n"
          "Written by qk-report with `report/index.html` and `report/numbers.tex`, from the same\n"
          "values. In LaTeX, `\\input{numbers.tex}` and write `\\qk{KEY}`: the value is typeset as\n"
          "the report shows it (conventions: `docs/report-numbers.md`). Percentages come without\n"
          "the `%` sign, values named `..._x1e3` are shown times 10^3.\n\n"
          "Each value's source: the table it is computed from, its columns, the rows, how they\n"
          "are aggregated, and the stages and parameter groups behind the table.\n\n"
          "| key | value | meaning | table | columns | rows | aggregation | stages and parameters |\n"
          "|---|---|---|---|---|---|---|---|\n", fp);
    for (int i = 0; i < s->n_values; i++) {
        const qk_nvalue *v = &s->values[i];
        if (v->format.kind == QK_KIND_FLAG)
            continue;
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        qk_number_put(mem, v, QK_AS_PLAIN, 0);
        fclose(mem);
        fprintf(fp, "| `%s` | ", v->key);
        qk_md_cell(fp, text);
        fputs(" | ", fp);
        qk_md_cell(fp, v->meaning);
        const qk_nsource *src = &v->source;
        const char *parts[] = {src->table, src->columns, src->rows, src->aggregation, src->stages};
        for (int k = 0; k < 5; k++) {
            fputs(" | ", fp);
            if (parts[k] && k == 0)
                fprintf(fp, "`%s`", parts[k]);
            else if (parts[k])
                qk_md_cell(fp, parts[k]);
        }
        fputs(" |\n", fp);
        free(text);
    }
}

char *qk_nsource_text(const qk_nvalue *v)
{
    const qk_nsource *src = &v->source;
    char *text;
    if (!src->table)
        return qk_strdup("");
    if (asprintf(&text, "%s: %s; %s; %s (%s)", src->table, src->columns, src->rows,
                 src->aggregation, src->stages) < 0)
        qk_out_of_memory(0);
    return text;
}

void qk_nset_write_html(const qk_nset *s, FILE *fp)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<title>The numbers of the report</title>\n<style>body{font-family:sans-serif;"
          "margin:1em}table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;"
          "padding:.15em .5em;text-align:left;vertical-align:top;max-width:24em;"
          "overflow-wrap:anywhere}tr:target{background:#ffe9a8}"
          "</style></head><body>\n<h1>The numbers of the report</h1>\n<p>Every number of "
          "<a href=\"index.html\">the report</a>: its key (<code>\\qk{KEY}</code> in LaTeX), "
          "its value, what it means, and where it comes from: the table, its columns, the rows, "
          "how they are aggregated, and the stages and parameter groups behind the table.</p>\n"
          "<table><thead><tr><th>key</th><th>value</th><th>meaning</th><th>table</th>"
          "<th>columns</th><th>rows</th><th>aggregation</th><th>stages and parameters</th></tr>"
          "</thead>\n<tbody>\n", fp);
    for (int i = 0; i < s->n_values; i++) {
        const qk_nvalue *v = &s->values[i];
        if (v->format.kind == QK_KIND_FLAG)
            continue;
        fputs("<tr id=\"n-", fp);
        qk_html_text(fp, v->key);
        fputs("\"><td><code>", fp);
        qk_html_text(fp, v->key);
        fputs("</code></td><td>", fp);
        qk_number_put(fp, v, QK_AS_HTML, 0);
        fputs("</td><td>", fp);
        qk_html_text(fp, v->meaning);
        const qk_nsource *src = &v->source;
        const char *parts[] = {src->table, src->columns, src->rows, src->aggregation, src->stages};
        for (int k = 0; k < 5; k++) {
            fputs("</td><td>", fp);
            qk_html_text(fp, parts[k] ? parts[k] : "");
        }
        fputs("</td></tr>\n", fp);
    }
    fputs("</tbody></table>\n</body></html>\n", fp);
}

void qk_ntable_write_latex(const qk_nset *s, const qk_ntable *t, FILE *fp)
{
    fputs("% ", fp);
    qk_latex_text(fp, t->caption);
    fputs(".\n% Written by qk-report from the values of the report; needs \\usepackage{booktabs}.\n"
          "\\begin{tabular}{", fp);
    /* numbers right-aligned, text left (a table without rows: all left) */
    for (int c = 0; c < t->n_cols; c++) {
        const qk_nvalue *v = t->n_rows > 0 ? qk_nset_cell(s, t, 0, c) : NULL;
        fputc(v && qk_format_is_number(&v->format) ? 'r' : 'l', fp);
    }
    fputs("}\n\\toprule\n", fp);
    for (int c = 0; c < t->n_cols; c++) {
        fputs(c ? " & " : "", fp);
        qk_latex_markup(fp, t->headers[c]);
    }
    fputs(" \\\\\n\\midrule\n", fp);
    for (int row = 0; row < t->n_rows; row++) {
        for (int c = 0; c < t->n_cols; c++) {
            fputs(c ? " & " : "", fp);
            qk_number_put(fp, qk_nset_cell(s, t, row, c), QK_AS_LATEX, 1);
        }
        fputs(" \\\\\n", fp);
    }
    /* a table the run has no rows of says so, not a bare header */
    if (t->n_rows == 0)
        fprintf(fp, "\\multicolumn{%d}{l}{\\emph{not in this run}} \\\\\n", t->n_cols);
    fputs("\\bottomrule\n\\end{tabular}\n", fp);
}
