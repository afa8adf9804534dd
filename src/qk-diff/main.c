/* qk-diff: compares two runs of the pipeline, or the published findings
 * with a run, and says what moved (docs/diff.md). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "qk/cli.h"

/* the findings of a section printed on the terminal without --verbose */
#define SAY_FIRST 12

enum { OPT_PUBLISHED = QK_KEY_FIRST, OPT_THESIS };

static const qk_option options_table[] = {
    QK_OPTION_OUTPUT("the page (HTML; default build/diff/diff.html); the figures' images go "
                     "beside it"),
    {OPT_THESIS, "thesis", "PATH", "only the numbers the .tex files use (a file or a folder; "
     "may repeat), each with its file:line"},
    {OPT_PUBLISHED, "published", "TABLE", "compare the published findings (workflow/"
     "published.tsv) with the run B, instead of two runs"},
    {'v', "verbose", NULL, "every finding on the terminal, not the first 12 of each kind"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-diff",
    "qk-diff [--thesis PATH]... [--output PAGE] [--verbose] A B\n"
    "qk-diff --published TABLE [--output PAGE] B",
    "Says what differs between two runs, A and B: each a folder holding results/,\n"
    "figures/ and report/ (a tree, an extracted archive, build/publish/previous), an\n"
    "archive of make archive (.tar.gz), or a numbers.tex. It compares the run records\n"
    "(parameters, programs, the datasets' input files), every number of\n"
    "report/numbers.tex (sorted by relative change), the cells of results/ beyond the\n"
    "BLAS-kernel tolerance, the heads whose taxonomy class or sign of bias changed,\n"
    "and the figure images (A, B and their difference in the page). It prints a short\n"
    "summary, or one line when the two sides are the same, and writes the page.\n",
    options_table, NULL,
    "qk-diff dist/qkreport-results-a.tar.gz dist/qkreport-results-b.tar.gz\n"
    "qk-diff --thesis templates/thesis-example.tex build/publish/previous .\n"
    "qk-diff --published workflow/published.tsv .",
    NULL};

/* ---- output helpers --------------------------------------------------------------------- */


void diff_html_section(diff_out *o, const char *id, const char *title)
{
    fprintf(o->html, "<h2 id=\"%s\">", id);
    qk_html_text(o->html, title);
    fputs("</h2>\n", o->html);
}

void diff_say(diff_out *o, int *shown, const char *fmt, ...)
{
    o->said++;
    if (!o->verbose && *shown >= SAY_FIRST)
        return;
    if (o->heading) {
        fprintf(o->text, "%s\n", o->heading);
        o->heading = NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(o->text, fmt, ap);
    va_end(ap);
    fputc('\n', o->text);
    (*shown)++;
}

void diff_say_rest(diff_out *o, int *shown, const char *what)
{
    if (o->said > *shown)
        fprintf(o->text, "  ... and %d %s (the page lists them)\n", o->said - *shown, what);
    o->said = 0;
    *shown = 0;
    o->heading = NULL;
}

/* ---- the page ---------------------------------------------------------------------------- */

static void page_head(FILE *fp, const char *title, const char *a, const char *b)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>", fp);
    qk_html_text(fp, title);
    fputs("</title>\n<style>body{font-family:sans-serif;max-width:84em;margin:1em auto;"
          "padding:0 1em}table{border-collapse:collapse;margin:.5em 0}td,th{border-bottom:1px "
          "solid #ddd;padding:.15em .6em;text-align:left;vertical-align:top}td.n{text-align:"
          "right;font-variant-numeric:tabular-nums}.fig{display:flex;gap:.5em;flex-wrap:wrap}"
          "figure{margin:0;flex:1 1 30%}figure img{width:100%;border:1px solid #ccc}"
          "</style></head><body>\n<h1>", fp);
    qk_html_text(fp, title);
    fputs("</h1>\n<p>A: ", fp);
    qk_html_text(fp, a);
    fputs("<br>B: ", fp);
    qk_html_text(fp, b);
    fputs("</p>\n", fp);
}

static void page_end(FILE *fp, int differences)
{
    if (!differences)
        fputs("<p><b>No differences.</b></p>\n", fp);
    fputs("</body></html>\n", fp);
}

/* ---- main --------------------------------------------------------------------------------- */

typedef struct options {
    const char *page, *published;
    int n_thesis;
    const char **thesis;
    int verbose;
} options;

static char **parse(int argc, char **argv, options *opt, int *n_operands)
{
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case OPT_PUBLISHED: opt->published = value; break;
        case OPT_THESIS:
            opt->thesis = qk_realloc(opt->thesis, (size_t)(opt->n_thesis + 1) * sizeof(char *));
            opt->thesis[opt->n_thesis++] = value;
            break;
        case 'v': opt->verbose = 1; break;
        }
    }
    opt->page = a.output ? a.output : "build/diff/diff.html";
    int want = opt->published ? 1 : 2;
    qk_args_operands(&a, want, want);
    *n_operands = a.n_operands;
    return a.operands;
}

/* The terminal's lines, kept until the end: two sides that are the same
 * say so in one line. */
static void summary(const diff_out *o, char *text, const diff_side *a, const diff_side *b,
                    const char *page)
{
    if (o->differences == 0) {
        printf("qk-diff: no differences between %s and %s\n", a->arg, b->arg);
        return;
    }
    fputs(text, stdout);
    printf("qk-diff: %d differences between %s and %s; the page: %s\n", o->differences, a->arg,
           b->arg, page);
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-diff");
    options opt = {0};
    int n;
    char **operands = parse(argc, argv, &opt, &n);
    char *text = NULL;
    size_t text_len = 0;
    diff_out o = {0};
    o.text = open_memstream(&text, &text_len);
    o.dir = qk_path_dir(opt.page);
    o.verbose = opt.verbose;
    qk_err err;
    if (qk_mkdirs(o.dir, &err) != 0)
        qk_die(QK_EXIT_DATA, o.dir, "%s", err.msg);
    qk_atomic page;
    qk_output_open(&page, opt.page);
    o.html = page.fp;
    diff_side a, b;
    if (opt.published) {
        diff_side_open(&b, operands[0], "the run");
        page_head(o.html, "The published findings and this run", opt.published, b.label);
        diff_published(opt.published, &b, &o);
        page_end(o.html, 1);
        qk_output_commit(&page);
        fclose(o.text);
        fputs(text, stdout);
        diff_side_close(&b);
        free(text);
        return QK_EXIT_OK;
    }
    diff_side_open(&a, operands[0], "A");
    diff_side_open(&b, operands[1], "B");
    diff_thesis thesis = {0};
    for (int i = 0; i < opt.n_thesis; i++)
        diff_thesis_scan(&thesis, opt.thesis[i]);
    page_head(o.html, "What differs between two runs", a.label, b.label);
    diff_records(&a, &b, &o);
    diff_numbers(&a, &b, opt.n_thesis ? &thesis : NULL, &o);
    diff_tables(&a, &b, &o);
    diff_figures(&a, &b, &o);
    page_end(o.html, o.differences);
    qk_output_commit(&page);
    fclose(o.text);
    summary(&o, text, &a, &b, opt.page);
    diff_side_close(&a);
    diff_side_close(&b);
    diff_thesis_free(&thesis);
    free(text);
    free(opt.thesis);
    return QK_EXIT_OK;
}
