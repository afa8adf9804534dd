/* The tables of results/: cells that differ beyond the tolerance, by table
 * and column; and the heads whose taxonomy class or sign of recency bias
 * changed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "qk/table.h"

/* 1 when two cells differ beyond the tolerance (numbers) or as text */
static int cells_differ(const char *x, const char *y, double *gap)
{
    if (strcmp(x, y) == 0)
        return 0;
    char *ex, *ey;
    double a = strtod(x, &ex), b = strtod(y, &ey);
    if (ex == x || *ex || ey == y || *ey)
        return 1;
    if (isnan(a) || isnan(b))
        return !(isnan(a) && isnan(b));
    double d = fabs(a - b);
    if (d > *gap)
        *gap = d;
    return d > DIFF_TOLERANCE * fmax(1.0, fmax(fabs(a), fabs(b)));
}


/* One table's differing cells per column, said in one line and one row
 * of the page; returns the cells that differ (a table whose shape changed
 * counts as one). */
static int compare_table(const char *path, const qk_table *a, const qk_table *b, diff_out *o,
                         int *shown)
{
    if (!qk_table_same_header(a, b)) {
        diff_say(o, shown, "  %s: its columns differ", path);
        fprintf(o->html, "<tr><td>%s</td><td colspan=3>the columns differ</td></tr>\n", path);
        return 1;
    }
    int rows = a->n_rows < b->n_rows ? a->n_rows : b->n_rows;
    size_t cols = a->n_cols > 0 ? (size_t)a->n_cols : 1;
    int *count = qk_calloc(cols, sizeof *count);
    double *gap = qk_calloc(cols, sizeof *gap);
    int total = 0;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < a->n_cols; c++)
            if (cells_differ(qk_table_cell(a, r, c), qk_table_cell(b, r, c), &gap[c]))
                count[c]++, total++;
    char line[1024] = "";
    size_t len = 0;
    for (int c = 0; c < a->n_cols; c++) {
        if (!count[c])
            continue;
        len += (size_t)snprintf(line + len, len < sizeof line ? sizeof line - len : 0, "%s%s %d",
                                len ? ", " : "", a->header[c], count[c]);
        fprintf(o->html, "<tr><td>%s</td><td>", path);
        qk_html_text(o->html, a->header[c]);
        fprintf(o->html, "</td><td class=n>%d of %d</td><td class=n>%.3g</td></tr>\n", count[c],
                rows, gap[c]);
    }
    if (a->n_rows != b->n_rows) {
        fprintf(o->html, "<tr><td>%s</td><td colspan=3>rows: %d in A, %d in B</td></tr>\n", path,
                a->n_rows, b->n_rows);
        total++;
    }
    if (total)
        diff_say(o, shown, "  %s: %s%s%d rows -> %d", path, line, len ? "; " : "", a->n_rows,
                 b->n_rows);
    free(count);
    free(gap);
    return total;
}

/* ---- heads ---------------------------------------------------------------------------------- */

typedef struct head_value {
    char key[160]; /* "model L3 H7" */
    const char *value;
} head_value;

static int head_order(const void *x, const void *y)
{
    return strcmp(((const head_value *)x)->key, ((const head_value *)y)->key);
}

/* the table's heads with the value of column name, sorted; NULL when the
 * table has no such column or no model, layer and head */
static head_value *heads_of(const qk_table *t, const char *name)
{
    int cv = qk_table_column(t, name), cm = qk_table_column(t, "model");
    int cl = qk_table_column(t, "layer"), ch = qk_table_column(t, "head");
    if (cv < 0 || cm < 0 || cl < 0 || ch < 0)
        return NULL;
    head_value *h = qk_malloc((size_t)(t->n_rows + 1) * sizeof *h);
    for (int r = 0; r < t->n_rows; r++) {
        snprintf(h[r].key, sizeof h[r].key, "%s L%s H%s", qk_table_cell(t, r, cm),
                 qk_table_cell(t, r, cl), qk_table_cell(t, r, ch));
        h[r].value = qk_table_cell(t, r, cv);
    }
    qsort(h, (size_t)t->n_rows, sizeof *h, head_order);
    return h;
}

/* the sign of a bias: "+", "-" or "0" (text that is no number: itself) */
static const char *sign_of(const char *v)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || isnan(x))
        return v;
    return x > 0 ? "+" : x < 0 ? "-" : "0";
}

/* Heads of both tables whose column changed (as text, or its sign);
 * returns how many. */
static int changed_heads(const char *path, const qk_table *a, const qk_table *b,
                         const char *column, int by_sign, diff_out *o, int *shown)
{
    head_value *ha = heads_of(a, column), *hb = heads_of(b, column);
    int n = 0;
    for (int i = 0, j = 0; ha && hb && i < a->n_rows && j < b->n_rows;) {
        int c = strcmp(ha[i].key, hb[j].key);
        if (c) {
            c < 0 ? i++ : j++;
            continue;
        }
        const char *va = by_sign ? sign_of(ha[i].value) : ha[i].value;
        const char *vb = by_sign ? sign_of(hb[j].value) : hb[j].value;
        if (strcmp(va, vb) != 0) {
            n++;
            diff_say(o, shown, "  %s %s: %s %s -> %s", path, ha[i].key, column, va, vb);
            fprintf(o->html, "<tr><td>%s</td><td>%s</td><td>%s</td><td>", path, ha[i].key,
                    by_sign ? "sign of bias_strength" : column);
            qk_html_text(o->html, va);
            fputs("</td><td>", o->html);
            qk_html_text(o->html, vb);
            fputs("</td></tr>\n", o->html);
        }
        i++, j++;
    }
    free(ha);
    free(hb);
    return n;
}

/* ---- all tables ------------------------------------------------------------------------------- */

typedef struct loaded {
    char *path;
    qk_table a, b;
} loaded;

static void only_one_side(diff_out *o, int *shown, const char *path, const char *side)
{
    diff_say(o, shown, "  %s: only in %s", path, side);
    fprintf(o->html, "<tr><td>%s</td><td colspan=3>only in %s</td></tr>\n", path, side);
}

/* Loads the tables that differ in bytes; lists the rest's differences. */
static int load_pairs(const diff_side *a, const diff_side *b, loaded **out, diff_out *o,
                      int *shown, int *findings)
{
    int na, nb, n = 0;
    char **la = diff_list_files(a->root, "results", ".csv .tsv", &na);
    char **lb = diff_list_files(b->root, "results", ".csv .tsv", &nb);
    loaded *pairs = NULL;
    for (int i = 0, j = 0; i < na || j < nb;) {
        int c = i >= na ? 1 : j >= nb ? -1 : strcmp(la[i], lb[j]);
        if (c) {
            only_one_side(o, shown, c < 0 ? la[i] : lb[j], c < 0 ? "A" : "B");
            (*findings)++;
            c < 0 ? i++ : j++;
            continue;
        }
        char *pa = qk_path_join(a->root, la[i]), *pb = qk_path_join(b->root, lb[j]);
        qk_err err;
        loaded l = {qk_strdup(la[i])};
        if (!qk_same_file(pa, pb) && qk_table_load(pa, &l.a, &err) == 0) {
            if (qk_table_load(pb, &l.b, &err) == 0) {
                pairs = qk_realloc(pairs, (size_t)(n + 1) * sizeof *pairs);
                pairs[n++] = l;
            } else {
                qk_table_free(&l.a);
                free(l.path);
            }
        } else {
            free(l.path);
        }
        free(pa);
        free(pb);
        i++, j++;
    }
    diff_free_list(la, na);
    diff_free_list(lb, nb);
    *out = pairs;
    return n;
}

void diff_tables(const diff_side *a, const diff_side *b, diff_out *o)
{
    diff_html_section(o, "tables", "Table cells (results/)");
    if (!a->root || !b->root) {
        fprintf(o->html, "<p>%s is a numbers.tex alone: no tables compared.</p>\n",
                a->root ? "B" : "A");
        return;
    }
    fprintf(o->html, "<p>Cells that differ by more than %g (times the larger magnitude above "
            "1: the spread another BLAS kernel gives), by table and column, with the largest "
            "difference of a number.</p>\n<table><tr><th>table</th><th>column</th>"
            "<th>cells</th><th>largest</th></tr>\n", DIFF_TOLERANCE);
    int shown = 0, findings = 0, tables = 0;
    o->heading = "tables (cells beyond the tolerance, by column):";
    loaded *pairs;
    int n = load_pairs(a, b, &pairs, o, &shown, &findings);
    for (int i = 0; i < n; i++) {
        int cells = compare_table(pairs[i].path, &pairs[i].a, &pairs[i].b, o, &shown);
        findings += cells;
        tables += cells > 0;
    }
    fputs("</table>\n", o->html);
    diff_say_rest(o, &shown, "more tables");
    o->differences += findings;

    diff_html_section(o, "heads", "Heads whose taxonomy class or sign of bias changed");
    fputs("<table><tr><th>table</th><th>head</th><th>what</th><th>A</th><th>B</th></tr>\n",
          o->html);
    shown = 0;
    int heads = 0;
    o->heading = "heads whose class or sign of bias changed:";
    for (int i = 0; i < n; i++) {
        heads += changed_heads(pairs[i].path, &pairs[i].a, &pairs[i].b, "category", 0, o, &shown);
        heads += changed_heads(pairs[i].path, &pairs[i].a, &pairs[i].b, "bias_strength", 1, o,
                               &shown);
        qk_table_free(&pairs[i].a);
        qk_table_free(&pairs[i].b);
        free(pairs[i].path);
    }
    fputs("</table>\n", o->html);
    if (!heads)
        fputs("<p>None.</p>\n", o->html);
    diff_say_rest(o, &shown, "more heads");
    o->heading = NULL;
    free(pairs);
}
