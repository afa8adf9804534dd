/* What went into each run, from its record (report/run.tsv) or, for an
 * archive without one, its MANIFEST: the suite version, the parameters,
 * the programs and, per dataset, where its vectors came from and its input
 * files. */
#include <stdlib.h>
#include <string.h>

#include "diff.h"

/* Calls found(name, value in a, value in b) for every name of kind that
 * is in one side only or has two values, in name order; returns how
 * many. */
typedef void (*found_fn)(diff_out *o, int *shown, const char *name, const char *a,
                         const char *b);

static int each_difference(const diff_items *a, const diff_items *b, const char *kind,
                           diff_out *o, int *shown, found_fn found)
{
    int i = 0, j = 0, n = 0;
    for (;;) {
        while (i < a->n && strcmp(a->items[i].kind, kind) != 0)
            i++;
        while (j < b->n && strcmp(b->items[j].kind, kind) != 0)
            j++;
        if (i >= a->n && j >= b->n)
            return n;
        const diff_item *x = i < a->n ? &a->items[i] : NULL;
        const diff_item *y = j < b->n ? &b->items[j] : NULL;
        int c = !x ? 1 : !y ? -1 : strcmp(x->name, y->name);
        if (c < 0) {
            found(o, shown, x->name, x->value, NULL), n++, i++;
        } else if (c > 0) {
            found(o, shown, y->name, NULL, y->value), n++, j++;
        } else {
            if (strcmp(x->value, y->value) != 0)
                found(o, shown, x->name, x->value, y->value), n++;
            i++, j++;
        }
    }
}

static void html_row(diff_out *o, const char *name, const char *a, const char *b)
{
    fputs("<tr><td>", o->html);
    qk_html_text(o->html, name);
    fputs("</td><td>", o->html);
    qk_html_text(o->html, a ? a : "(none)");
    fputs("</td><td>", o->html);
    qk_html_text(o->html, b ? b : "(none)");
    fputs("</td></tr>\n", o->html);
}

/* "pca.PCA_TAX_HIGH": the parameter, then its group */
static void found_param(diff_out *o, int *shown, const char *name, const char *a, const char *b)
{
    const char *dot = strchr(name, '.');
    const char *var = dot ? dot + 1 : name;
    int group_len = dot ? (int)(dot - name) : 0;
    diff_say(o, shown, "  %s %s -> %s%s%.*s%s", var, a ? a : "(none)", b ? b : "(none)",
             dot ? " (" : "", group_len, name, dot ? ")" : "");
    html_row(o, name, a, b);
}

static void found_program(diff_out *o, int *shown, const char *name, const char *a,
                          const char *b)
{
    diff_say(o, shown, "  %s %s", name, !a ? "added" : !b ? "removed" : "changed");
    html_row(o, name, a, b);
}

static void found_origin(diff_out *o, int *shown, const char *name, const char *a,
                         const char *b)
{
    diff_say(o, shown, "  %s: %s -> %s", name, a ? a : "(not in the run)",
             b ? b : "(not in the run)");
    html_row(o, name, a, b);
}

/* The file lines of one dataset ("DS/lLLhHHk/data.parquet"): the last
 * dataset seen, with its counts, is said when the next begins. */
typedef struct file_tally {
    char dataset[256];
    int added, removed, changed;
    char example[512];
} file_tally;

static file_tally tally;

static void tally_say(diff_out *o, int *shown)
{
    if (!tally.added && !tally.removed && !tally.changed)
        return;
    diff_say(o, shown, "  %s: %d files added, %d removed, %d changed (%s)", tally.dataset,
             tally.added, tally.removed, tally.changed, tally.example);
    memset(&tally, 0, sizeof tally);
}

/* "SIZE HASH" of a file line: what of the two changed */
static const char *file_change(const char *a, const char *b)
{
    size_t na = strcspn(a, " "), nb = strcspn(b, " ");
    int size = na != nb || strncmp(a, b, na) != 0;
    int footer = strcmp(a + na, b + nb) != 0;
    return size && footer ? "size and footer changed" : size ? "size changed" : "footer changed";
}

static void found_file(diff_out *o, int *shown, const char *name, const char *a, const char *b)
{
    const char *slash = strchr(name, '/');
    int ds_len = slash ? (int)(slash - name) : (int)strlen(name);
    if ((int)strlen(tally.dataset) != ds_len || strncmp(tally.dataset, name, (size_t)ds_len) != 0) {
        tally_say(o, shown);
        snprintf(tally.dataset, sizeof tally.dataset, "%.*s", ds_len, name);
    }
    const char *what = !a ? "added" : !b ? "removed" : file_change(a, b);
    if (!a)
        tally.added++;
    else if (!b)
        tally.removed++;
    else
        tally.changed++;
    if (!tally.example[0])
        snprintf(tally.example, sizeof tally.example, "%s: %s", slash ? slash + 1 : name, what);
    html_row(o, name, a, b);
}

static void table_head(diff_out *o, const char *what)
{
    fprintf(o->html, "<table><tr><th>%s</th><th>A</th><th>B</th></tr>\n", what);
}

static void section(diff_out *o, const diff_side *a, const diff_side *b, const char *kind,
                    const char *title, const char *column, found_fn found)
{
    int shown = 0;
    fprintf(o->html, "<h3>%s</h3>\n", title);
    /* the rows go to a buffer: a table without any is not shown */
    FILE *page = o->html;
    char *rows = NULL;
    size_t len = 0;
    o->html = open_memstream(&rows, &len);
    int n = each_difference(&a->record, &b->record, kind, o, &shown, found);
    if (found == found_file)
        tally_say(o, &shown);
    fclose(o->html);
    o->html = page;
    if (n == 0) {
        fprintf(o->html, "<p>The same on both sides.</p>\n");
    } else {
        table_head(o, column);
        fputs(rows, o->html);
        fputs("</table>\n", o->html);
    }
    free(rows);
    diff_say_rest(o, &shown, "more");
    o->differences += n;
}

void diff_records(const diff_side *a, const diff_side *b, diff_out *o)
{
    diff_html_section(o, "runs", "The runs: parameters, programs and data");
    if (!a->record.n || !b->record.n) {
        fprintf(o->html, "<p>%s has no run record (report/run.tsv or MANIFEST): its "
                "parameters, programs and data are not known.</p>\n",
                !a->record.n ? "A" : "B");
        fprintf(o->text, "runs: %s has no run record; parameters and data not compared\n",
                !a->record.n ? "A" : "B");
        return;
    }
    const char *va = diff_record_value(&a->record, "version", "-");
    const char *vb = diff_record_value(&b->record, "version", "-");
    const char *ia = diff_record_value(&a->record, "run_id", "-");
    const char *ib = diff_record_value(&b->record, "run_id", "-");
    fprintf(o->html, "<p>Suite version: A ");
    qk_html_text(o->html, va ? va : "?");
    fprintf(o->html, ", B ");
    qk_html_text(o->html, vb ? vb : "?");
    fprintf(o->html, ". Run id: A ");
    qk_html_text(o->html, ia ? ia : "?");
    fprintf(o->html, ", B ");
    qk_html_text(o->html, ib ? ib : "?");
    fprintf(o->html, ".</p>\n");
    if (va && vb && strcmp(va, vb) != 0) {
        fprintf(o->text, "suite version: %s -> %s\n", va, vb);
        o->differences++;
    }
    o->heading = "parameters:";
    section(o, a, b, "param", "Parameters", "parameter (group.name)", found_param);
    o->heading = "programs:";
    section(o, a, b, "program", "Programs (SHA-256 of the stripped binary)", "program",
            found_program);
    o->heading = "data sources:";
    section(o, a, b, "data", "Where each dataset's vectors came from", "dataset", found_origin);
    section(o, a, b, "file", "Input files (size and Parquet footer hash)", "file", found_file);
}
