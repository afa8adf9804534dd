/* TSV tables and key/value files (include/qk/table.h). */
#include "qk/table.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/die.h"

/* Splits text into lines in place, dropping '\r' and empty last lines. */
static char **split_lines(char *text, int *n)
{
    char **lines = NULL;
    *n = 0;
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        size_t len = strlen(p);
        if (len && p[len - 1] == '\r')
            p[len - 1] = '\0';
        lines = qk_realloc(lines, (size_t)(*n + 1) * sizeof *lines);
        lines[(*n)++] = p;
        if (!nl)
            break;
        p = nl + 1;
    }
    while (*n && lines[*n - 1][0] == '\0')
        (*n)--;
    return lines;
}

static int count_fields(const char *line, char sep)
{
    int n = 1;
    for (; *line; line++)
        n += *line == sep;
    return n;
}

static void split_fields(char *line, char **out, char sep)
{
    int i = 0;
    out[i++] = line;
    for (char *p = line; *p; p++)
        if (*p == sep) {
            *p = '\0';
            out[i++] = p + 1;
        }
}

/* Tables named *.csv are comma-separated (fields never quote commas in
 * the suite's tables), everything else tab-separated. */
static char separator_for(const char *path)
{
    size_t n = strlen(path);
    return n > 4 && strcmp(path + n - 4, ".csv") == 0 ? ',' : '\t';
}

int qk_table_load(const char *path, qk_table *t, qk_err *err)
{
    memset(t, 0, sizeof *t);
    uint8_t *data;
    size_t len;
    if (qk_read_file(path, &data, &len, err) != 0)
        return -1;
    t->text = (char *)data;
    int n_lines;
    char **lines = split_lines(t->text, &n_lines);
    /* '#' lines are comments (the registry and benchmark tables have some) */
    int kept = 0;
    for (int i = 0; i < n_lines; i++)
        if (lines[i][0] != '#')
            lines[kept++] = lines[i];
    n_lines = kept;
    if (n_lines == 0) {
        free(lines);
        qk_table_free(t);
        return qk_fail(err, "empty table (no header line)");
    }
    char sep = separator_for(path);
    t->n_cols = count_fields(lines[0], sep);
    t->n_rows = n_lines - 1;
    t->header = qk_malloc((size_t)t->n_cols * sizeof(char *));
    t->cells = qk_malloc((size_t)t->n_rows * (size_t)t->n_cols * sizeof(char *));
    split_fields(lines[0], t->header, sep);
    for (int r = 0; r < t->n_rows; r++) {
        if (count_fields(lines[r + 1], sep) != t->n_cols) {
            int fields = count_fields(lines[r + 1], sep), header = t->n_cols;
            free(lines);
            qk_table_free(t);
            return qk_fail(err, "line %d has %d fields, the header has %d", r + 2, fields,
                           header);
        }
        split_fields(lines[r + 1], t->cells + (size_t)r * t->n_cols, sep);
    }
    free(lines);
    return 0;
}

void qk_table_free(qk_table *t)
{
    free(t->header);
    free(t->cells);
    free(t->text);
    memset(t, 0, sizeof *t);
}

const char *qk_table_cell(const qk_table *t, int row, int col)
{
    return t->cells[(size_t)row * t->n_cols + col];
}

int qk_table_same_header(const qk_table *a, const qk_table *b)
{
    if (a->n_cols != b->n_cols)
        return 0;
    for (int c = 0; c < a->n_cols; c++)
        if (strcmp(a->header[c], b->header[c]) != 0)
            return 0;
    return 1;
}

int qk_table_column(const qk_table *t, const char *name)
{
    for (int c = 0; c < t->n_cols; c++)
        if (strcmp(t->header[c], name) == 0)
            return c;
    return -1;
}

int qk_src_col(const qk_src *s, const char *name)
{
    int c = qk_table_column(s->t, name);
    if (c >= 0)
        return c;
    if (s->user)
        qk_die(QK_EXIT_DATA, s->path, "no column '%s' (needed by %s)", name, s->user);
    qk_die(QK_EXIT_DATA, s->path, "no column '%s'", name);
}

double qk_src_num(const qk_src *s, int row, int col)
{
    const char *cell = qk_table_cell(s->t, row, col);
    char *end;
    double v = strtod(cell, &end);
    if (end == cell || *end)
        qk_die(QK_EXIT_DATA, s->path, "line %d, column %s: '%s' is not a number", row + 2,
               s->t->header[col], cell);
    return v;
}

double qk_src_finite(const qk_src *s, int row, int col)
{
    double v = qk_src_num(s, row, col);
    if (!isfinite(v))
        qk_die(QK_EXIT_DATA, s->path, "line %d, column %s: '%s' is not a finite number",
               row + 2, s->t->header[col], qk_table_cell(s->t, row, col));
    return v;
}

int qk_src_int(const qk_src *s, int row, int col)
{
    double v = qk_src_num(s, row, col);
    if (!(v >= INT_MIN && v <= INT_MAX) || v != floor(v))
        qk_die(QK_EXIT_DATA, s->path, "line %d, column %s: '%s' is not an integer", row + 2,
               s->t->header[col], qk_table_cell(s->t, row, col));
    return (int)v;
}

double qk_src_count(const qk_src *s, int row, int col)
{
    double v = qk_src_num(s, row, col);
    if (!(v >= 0 && v < 9007199254740992.0) || v != floor(v))
        qk_die(QK_EXIT_DATA, s->path, "line %d, column %s: '%s' is not a count", row + 2,
               s->t->header[col], qk_table_cell(s->t, row, col));
    return v;
}

double *qk_src_values(const qk_src *s, const char *name)
{
    int c = qk_src_col(s, name), n = s->t->n_rows;
    double *x = qk_malloc((size_t)(n ? n : 1) * sizeof *x);
    for (int r = 0; r < n; r++)
        x[r] = qk_src_num(s, r, c);
    return x;
}

int qk_src_find(const qk_src *s, int col, const char *key)
{
    for (int r = 0; r < s->t->n_rows; r++)
        if (strcmp(qk_table_cell(s->t, r, col), key) == 0)
            return r;
    return -1;
}

void qk_table_file_load(qk_table_file *f, const char *path)
{
    qk_err err;
    if (qk_table_load(path, &f->table, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    f->src = (qk_src){&f->table, path, NULL};
}

void qk_table_file_free(qk_table_file *f)
{
    qk_table_free(&f->table);
}

void qk_csv_put(FILE *fp, const char *text)
{
    if (!strpbrk(text, ",\"\r\n")) {
        fputs(text, fp);
        return;
    }
    fputc('"', fp);
    for (; *text; text++) {
        if (*text == '"')
            fputc('"', fp);
        fputc(*text, fp);
    }
    fputc('"', fp);
}

static int kv_add(qk_kv *kv, const char *key, const char *val)
{
    if (!*key || qk_kv_get(kv, key))
        return -1;
    kv->keys = qk_realloc(kv->keys, (size_t)(kv->n + 1) * sizeof(char *));
    kv->vals = qk_realloc(kv->vals, (size_t)(kv->n + 1) * sizeof(char *));
    kv->keys[kv->n] = qk_strdup(key);
    kv->vals[kv->n] = qk_strdup(val);
    kv->n++;
    return 0;
}

int qk_kv_load(qk_kv *kv, const char *path, qk_err *err)
{
    uint8_t *data;
    size_t len;
    if (qk_read_file(path, &data, &len, err) != 0)
        return -1;
    int n_lines, rc = 0;
    char **lines = split_lines((char *)data, &n_lines);
    for (int i = 0; i < n_lines && rc == 0; i++) {
        if (lines[i][0] == '\0' || lines[i][0] == '#')
            continue;
        char *tab = strchr(lines[i], '\t');
        if (!tab) {
            rc = qk_fail(err, "line %d: expected key<TAB>value", i + 1);
            break;
        }
        *tab = '\0';
        if (kv_add(kv, lines[i], tab + 1) != 0)
            rc = qk_fail(err, "line %d: key '%s' defined twice", i + 1, lines[i]);
    }
    free(lines);
    free(data);
    return rc;
}

int qk_kv_set_arg(qk_kv *kv, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq)
        return -1;
    char *key = qk_strdup(arg);
    key[eq - arg] = '\0';
    int rc = kv_add(kv, key, eq + 1);
    free(key);
    return rc;
}

const char *qk_kv_get(const qk_kv *kv, const char *key)
{
    for (int i = 0; i < kv->n; i++)
        if (strcmp(kv->keys[i], key) == 0)
            return kv->vals[i];
    return NULL;
}

void qk_kv_free(qk_kv *kv)
{
    for (int i = 0; i < kv->n; i++) {
        free(kv->keys[i]);
        free(kv->vals[i]);
    }
    free(kv->keys);
    free(kv->vals);
    memset(kv, 0, sizeof *kv);
}
