/* The report's numbers (report/numbers.tex): every key whose value moved,
 * sorted by how much; the keys a thesis uses; the published values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "qk/cli.h"
#include "qk/table.h"

/* ---- the keys a thesis uses --------------------------------------------------------------- */

static void add_use(diff_thesis *t, const char *key, size_t len, const char *path, int line)
{
    t->uses = qk_realloc(t->uses, (size_t)(t->n + 1) * sizeof *t->uses);
    diff_use *u = &t->uses[t->n++];
    u->key = qk_malloc(len + 1);
    memcpy(u->key, key, len);
    u->key[len] = '\0';
    size_t n = strlen(path) + 16;
    u->where = qk_malloc(n);
    snprintf(u->where, n, "%s:%d", path, line);
}

/* \qk{KEY} and \qkraw{KEY} of one .tex file, with their lines ('%' starts
 * a comment, "\%" does not) */
static void scan_file(diff_thesis *t, const char *path)
{
    uint8_t *text;
    size_t len;
    qk_err err;
    if (qk_read_file(path, &text, &len, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    int line = 1;
    for (char *p = (char *)text; *p; p++) {
        if (*p == '\n') {
            line++;
        } else if (*p == '%' && (p == (char *)text || p[-1] != '\\')) {
            while (p[1] && p[1] != '\n')
                p++;
        } else if (strncmp(p, "\\verb", 5) == 0 && p[5] && p[5] != '\n') {
            char *end = strchr(p + 6, p[5]); /* \verb|...|: text, not a use */
            if (end)
                p = end;
        } else if (strncmp(p, "\\qk{", 4) == 0 || strncmp(p, "\\qkraw{", 7) == 0) {
            char *key = strchr(p, '{') + 1;
            size_t n = strcspn(key, "}\n");
            if (key[n] == '}' && n > 0)
                add_use(t, key, n, path, line);
            p = key + n - 1;
        }
    }
    free(text);
}

static int use_order(const void *x, const void *y)
{
    const diff_use *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : strcmp(a->where, b->where);
}

void diff_thesis_scan(diff_thesis *t, const char *path)
{
    int n;
    char **files = diff_list_files(path, "", ".tex", &n);
    if (n == 0 && strstr(path, ".tex"))
        scan_file(t, path); /* a file, not a folder */
    for (int i = 0; i < n; i++) {
        char *full = qk_path_join(path, files[i]);
        scan_file(t, full);
        free(full);
    }
    diff_free_list(files, n);
    qsort(t->uses, (size_t)t->n, sizeof *t->uses, use_order);
}

void diff_thesis_free(diff_thesis *t)
{
    for (int i = 0; i < t->n; i++) {
        free(t->uses[i].key);
        free(t->uses[i].where);
    }
    free(t->uses);
}

/* the places of a key, "a.tex:3, a.tex:9" (malloc'ed), or NULL if unused */
static char *places(const diff_thesis *t, const char *key)
{
    char *out = NULL;
    size_t len = 0;
    for (int i = 0; i < t->n; i++) {
        if (strcmp(t->uses[i].key, key) != 0)
            continue;
        size_t add = strlen(t->uses[i].where) + 2;
        out = qk_realloc(out, len + add + 1);
        len += (size_t)sprintf(out + len, "%s%s", len ? ", " : "", t->uses[i].where);
    }
    return out;
}

/* ---- values as text -------------------------------------------------------------------------- */

/* A value typeset for LaTeX as plain text: "$-$0.52" -> "-0.52",
 * "3{,}239" -> "3,239", "12\,\%" -> "12%". */
static void plain_value(char *out, size_t size, const char *tex)
{
    size_t o = 0;
    for (const char *p = tex; *p && o + 1 < size; p++) {
        if (*p == '$' || *p == '{' || *p == '}')
            continue;
        if (*p == '\\' && p[1] == ',') {
            p++;
            continue;
        }
        if (*p == '\\' && ((p[1] >= 'a' && p[1] <= 'z') || (p[1] >= 'A' && p[1] <= 'Z'))) {
            while ((p[1] >= 'a' && p[1] <= 'z') || (p[1] >= 'A' && p[1] <= 'Z'))
                p++; /* a command such as \ensuremath: its argument stays */
            continue;
        }
        if (*p == '\\' && (p[1] == '%' || p[1] == '_' || p[1] == '&' || p[1] == '#')) {
            out[o++] = *++p;
            continue;
        }
        out[o++] = *p;
    }
    out[o] = '\0';
}

/* ---- changed numbers ------------------------------------------------------------------------- */

typedef struct change {
    const char *key;
    const diff_number *a, *b; /* NULL: not on that side */
    double abs_change, rel_change; /* NAN for text */
} change;

/* 1 when the two values are the same within the table tolerance */
static int same_value(const diff_number *a, const diff_number *b)
{
    if (a->has_raw && b->has_raw) {
        if (isnan(a->raw) || isnan(b->raw))
            return isnan(a->raw) && isnan(b->raw);
        double scale = fmax(1.0, fmax(fabs(a->raw), fabs(b->raw)));
        return fabs(a->raw - b->raw) <= DIFF_TOLERANCE * scale;
    }
    return strcmp(a->shown, b->shown) == 0;
}

static double moved(const change *c)
{
    if (!c->a || !c->b)
        return -1; /* keys on one side: listed apart */
    if (isnan(c->rel_change))
        return isnan(c->abs_change) ? 0 : INFINITY;
    return fabs(c->rel_change);
}

/* most moved first, then by absolute change, then by key */
static int change_order(const void *x, const void *y)
{
    const change *a = x, *b = y;
    double ma = moved(a), mb = moved(b);
    if (ma != mb)
        return ma > mb ? -1 : 1;
    double aa = isnan(a->abs_change) ? 0 : fabs(a->abs_change);
    double ab = isnan(b->abs_change) ? 0 : fabs(b->abs_change);
    if (aa != ab)
        return aa > ab ? -1 : 1;
    return strcmp(a->key, b->key);
}

static void fill_change(change *c)
{
    c->abs_change = c->rel_change = NAN;
    if (c->a && c->b && c->a->has_raw && c->b->has_raw && !isnan(c->a->raw) && !isnan(c->b->raw)) {
        c->abs_change = c->b->raw - c->a->raw;
        c->rel_change = c->a->raw != 0 ? c->abs_change / fabs(c->a->raw)
                        : c->abs_change != 0 ? INFINITY : 0;
    }
}

/* the keys compared: all but the run's own id, or those a thesis uses */
static int compared(const char *key, const diff_thesis *thesis)
{
    if (strncmp(key, "run.", 4) == 0)
        return 0;
    if (!thesis)
        return 1;
    for (int i = 0; i < thesis->n; i++)
        if (strcmp(thesis->uses[i].key, key) == 0)
            return 1;
    return 0;
}

static int collect(const diff_side *a, const diff_side *b, const diff_thesis *thesis,
                   change **out)
{
    change *list = NULL;
    int n = 0, i = 0, j = 0;
    while (i < a->n_numbers || j < b->n_numbers) {
        const diff_number *x = i < a->n_numbers ? &a->numbers[i] : NULL;
        const diff_number *y = j < b->n_numbers ? &b->numbers[j] : NULL;
        int c = !x ? 1 : !y ? -1 : strcmp(x->key, y->key);
        change ch = {c <= 0 ? x->key : y->key, c <= 0 ? x : NULL, c >= 0 ? y : NULL, 0, 0};
        i += c <= 0;
        j += c >= 0;
        if (!compared(ch.key, thesis) || (ch.a && ch.b && same_value(ch.a, ch.b)))
            continue;
        fill_change(&ch);
        list = qk_realloc(list, (size_t)(n + 1) * sizeof *list);
        list[n++] = ch;
    }
    qsort(list, (size_t)n, sizeof *list, change_order);
    *out = list;
    return n;
}

static void format_change(char *out, size_t size, const change *c)
{
    if (isnan(c->abs_change)) {
        snprintf(out, size, "text");
    } else if (isinf(c->rel_change)) {
        snprintf(out, size, "%+.4g, from 0", c->abs_change);
    } else {
        snprintf(out, size, "%+.4g, %+.2f%%", c->abs_change, 100 * c->rel_change);
    }
}

static void html_change(diff_out *o, const change *c, const char *where)
{
    char va[256], vb[256], how[96];
    plain_value(va, sizeof va, c->a ? c->a->shown : "");
    plain_value(vb, sizeof vb, c->b ? c->b->shown : "");
    format_change(how, sizeof how, c);
    fputs("<tr><td><code>", o->html);
    qk_html_text(o->html, c->key);
    fputs("</code></td><td class=n>", o->html);
    qk_html_text(o->html, c->a ? va : "(none)");
    fputs("</td><td class=n>", o->html);
    qk_html_text(o->html, c->b ? vb : "(none)");
    fputs("</td><td class=n>", o->html);
    qk_html_text(o->html, c->a && c->b ? how : "");
    fputs("</td>", o->html);
    if (where) {
        fputs("<td>", o->html);
        qk_html_text(o->html, where);
        fputs("</td>", o->html);
    }
    fputs("</tr>\n", o->html);
}

static void say_change(diff_out *o, int *shown, const change *c, const char *where)
{
    char va[256], vb[256], how[96];
    plain_value(va, sizeof va, c->a ? c->a->shown : "");
    plain_value(vb, sizeof vb, c->b ? c->b->shown : "");
    format_change(how, sizeof how, c);
    if (c->a && c->b)
        diff_say(o, shown, "  %s: %s -> %s (%s)%s%s", c->key, va, vb, how, where ? "  " : "",
                 where ? where : "");
    else
        diff_say(o, shown, "  %s: only in %s (%s)%s%s", c->key, c->a ? "A" : "B",
                 c->a ? va : vb, where ? "  " : "", where ? where : "");
}

void diff_numbers(const diff_side *a, const diff_side *b, const diff_thesis *thesis, diff_out *o)
{
    diff_html_section(o, "numbers", "The report's numbers (report/numbers.tex)");
    if (!a->numbers_tex || !b->numbers_tex) {
        fprintf(o->html, "<p>%s has no report/numbers.tex.</p>\n", a->numbers_tex ? "B" : "A");
        fprintf(o->text, "numbers: %s has no report/numbers.tex\n", a->numbers_tex ? "B" : "A");
        return;
    }
    change *list;
    int n = collect(a, b, thesis, &list);
    int moved_n = 0, one_side = 0;
    for (int i = 0; i < n; i++)
        (list[i].a && list[i].b) ? moved_n++ : one_side++;
    if (thesis)
        fprintf(o->html, "<p>Only the %d keys the thesis uses (with their places).</p>\n",
                thesis->n);
    fprintf(o->html, "<p>%d numbers changed, %d on one side only, sorted by relative change."
            "</p>\n<table><tr><th>key</th><th>A</th><th>B</th><th>change</th>%s</tr>\n",
            moved_n, one_side, thesis ? "<th>used at</th>" : "");
    int shown = 0;
    if (n)
        o->heading = thesis ? "numbers the thesis uses that changed (most moved first):"
                            : "numbers that changed (most moved first):";
    for (int i = 0; i < n; i++) {
        char *where = thesis ? places(thesis, list[i].key) : NULL;
        html_change(o, &list[i], thesis ? (where ? where : "") : NULL);
        say_change(o, &shown, &list[i], where);
        free(where);
    }
    fputs("</table>\n", o->html);
    diff_say_rest(o, &shown, "more numbers");
    o->heading = NULL;
    o->differences += n;
    free(list);
}

/* ---- the published values --------------------------------------------------------------------- */

/* 1 when the run's data are synthetic (its record, else its inventory
 * numbers say so). */
static int synthetic_run(const diff_side *b)
{
    for (int i = 0; i < b->record.n; i++)
        if (strcmp(b->record.items[i].kind, "data") == 0)
            return strncmp(b->record.items[i].value, "synthetic", 9) == 0;
    for (int i = 0; i < b->n_numbers; i++) {
        const char *k = b->numbers[i].key;
        size_t n = strlen(k);
        if (strncmp(k, "inventory.", 10) == 0 && n > 7 && strcmp(k + n - 7, ".source") == 0)
            return strncmp(b->numbers[i].shown, "synthetic", 9) == 0;
    }
    return 0;
}

void diff_published(const char *path, const diff_side *b, diff_out *o)
{
    qk_table_file f;
    qk_table_file_load(&f, path);
    int c_key = qk_src_col(&f.src, "key"), c_value = qk_src_col(&f.src, "published");
    int c_tol = qk_src_col(&f.src, "tolerance"), c_what = qk_src_col(&f.src, "what");
    int c_where = qk_src_col(&f.src, "where");
    int synthetic = synthetic_run(b), reproduced = 0, n = f.table.n_rows;
    diff_html_section(o, "published", "The published findings against this run");
    if (synthetic)
        fprintf(o->html, "<p><b>The run's data are synthetic:</b> its values are planted by "
                "qk-synth, so whether they match says nothing about the thesis. Every "
                "published value is still listed beside the run's.</p>\n");
    fprintf(o->html, "<table><tr><th>finding</th><th>key</th><th>published</th><th>run</th>"
            "<th>tolerance</th><th>reproduced</th><th>where</th></tr>\n");
    for (int r = 0; r < n; r++) {
        const char *key = qk_table_cell(&f.table, r, c_key);
        double pub = qk_src_finite(&f.src, r, c_value), tol = qk_src_finite(&f.src, r, c_tol);
        const diff_number *v = diff_side_number(b, key);
        int ok = v && v->has_raw && fabs(v->raw - pub) <= tol;
        reproduced += ok;
        char run[256] = "(no such key)";
        if (v)
            plain_value(run, sizeof run, v->shown);
        fprintf(o->text, "  %-4s %-44s published %-10s run %-12s (%s, tolerance %s)\n",
                ok ? "yes" : "no", qk_table_cell(&f.table, r, c_what),
                qk_table_cell(&f.table, r, c_value), run, key, qk_table_cell(&f.table, r, c_tol));
        const char *cells[] = {qk_table_cell(&f.table, r, c_what), key,
                               qk_table_cell(&f.table, r, c_value), run,
                               qk_table_cell(&f.table, r, c_tol), ok ? "yes" : "no",
                               qk_table_cell(&f.table, r, c_where)};
        fputs("<tr>", o->html);
        for (int i = 0; i < 7; i++) {
            fputs(i == 2 || i == 3 || i == 4 ? "<td class=n>" : "<td>", o->html);
            qk_html_text(o->html, cells[i]);
            fputs("</td>", o->html);
        }
        fputs("</tr>\n", o->html);
    }
    fputs("</table>\n", o->html);
    fprintf(o->text, "published findings: %d of %d reproduced within their tolerance%s\n",
            reproduced, n,
            synthetic ? "; the run's data are synthetic: its values are planted, not measured"
                      : "");
    qk_table_file_free(&f);
}
