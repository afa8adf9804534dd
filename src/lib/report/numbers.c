/* Writing and reading numbers files (include/qk/numbers.h). */
#include "qk/numbers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/die.h"
#include "qk/values.h"

/* ---- kinds ------------------------------------------------------------------------ */

static const struct {
    const char *name;
    qk_kind kind;
    int has_digits;
} kinds[] = {{"text", QK_KIND_TEXT, 0},         {"flag", QK_KIND_FLAG, 0},
             {"count", QK_KIND_COUNT, 0},       {"number", QK_KIND_NUMBER, 1},
             {"fraction", QK_KIND_FRACTION, 1}, {"ratio", QK_KIND_RATIO, 1},
             {"percent", QK_KIND_PERCENT, 1},   {"signed", QK_KIND_SIGNED, 1},
             {"change", QK_KIND_CHANGE, 1},     {"sig", QK_KIND_SIG, 1},
             {"sci", QK_KIND_SCI, 1}};

int qk_format_parse(const char *spec, qk_format *f)
{
    const char *dot = strchr(spec, '.');
    size_t n = dot ? (size_t)(dot - spec) : strlen(spec);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strlen(kinds[i].name) != n || strncmp(kinds[i].name, spec, n) != 0)
            continue;
        if (!dot != !kinds[i].has_digits)
            return -1;
        f->kind = kinds[i].kind;
        f->digits = 0;
        if (dot) {
            char *end;
            long d = strtol(dot + 1, &end, 10);
            if (end == dot + 1 || *end || d < 0 || d > 12 ||
                (d == 0 && (f->kind == QK_KIND_SIG)))
                return -1;
            f->digits = (int)d;
        }
        return 0;
    }
    return -1;
}

int qk_format_is_number(const qk_format *f)
{
    return f->kind != QK_KIND_TEXT && f->kind != QK_KIND_FLAG;
}

/* Tabs and line breaks would break the file's lines: spaces instead. */
static char *clean_text(const char *s)
{
    char *c = qk_strdup(s ? s : "");
    for (char *p = c; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r')
            *p = ' ';
    return c;
}

/* ---- the writer ------------------------------------------------------------------------ */

typedef struct wvalue {
    char *key, *meaning, *raw;
    int source; /* index in the writer's sources, or -1 */
    const char *format;
    qk_format fmt;
    int set;
} wvalue;

typedef struct wrecord {
    char *name; /* PREFIX.ID */
    const qk_key *fields;
    int first; /* index of its first value */
} wrecord;

/* Frees what a table holds (not the table itself). */
static void ntable_free(qk_ntable *tb)
{
    for (int c = 0; c < tb->n_cols; c++) {
        free(tb->fields[c]);
        free(tb->headers[c]);
    }
    for (int r = 0; r < tb->n_rows; r++)
        free(tb->ids[r]);
    free(tb->fields);
    free(tb->headers);
    free(tb->ids);
    free(tb->name);
    free(tb->prefix);
    free(tb->caption);
}

static void nsource_free(qk_nsource *src)
{
    free(src->table);
    free(src->columns);
    free(src->rows);
    free(src->aggregation);
    free(src->stages);
    memset(src, 0, sizeof *src);
}

struct qk_numbers {
    char *path;
    int n_sources;
    qk_nsource *sources; /* the last is the current one */
    int n_values;
    wvalue *values;
    int n_records;
    wrecord *records;
    int n_tables;
    qk_ntable *tables;
};

static void bug(const qk_numbers *w, const char *fmt, const char *what)
{
    /* a summary that writes a key it did not declare is a bug of the
     * program, not of the data; still one line and status 2 */
    char msg[512];
    snprintf(msg, sizeof msg, fmt, what);
    qk_die(QK_EXIT_DATA, w->path, "%s", msg);
}

qk_numbers *qk_numbers_open(const char *path)
{
    qk_numbers *w = qk_calloc(1, sizeof *w);
    w->path = path ? qk_strdup(path) : NULL;
    return w;
}

static int find_value(const qk_numbers *w, const char *key)
{
    for (int i = w->n_values - 1; i >= 0; i--)
        if (strcmp(w->values[i].key, key) == 0)
            return i;
    return -1;
}

static void add_value(qk_numbers *w, const char *key, const char *format, const char *meaning)
{
    if (find_value(w, key) >= 0)
        bug(w, "key '%s' declared twice", key);
    if (strchr(key, '\t') || strchr(key, '\n') || strchr(key, '}') || strchr(key, '{') ||
        strchr(key, ' ') || !*key)
        bug(w, "bad key '%s'", key);
    w->values = qk_realloc(w->values, (size_t)(w->n_values + 1) * sizeof *w->values);
    wvalue *v = &w->values[w->n_values++];
    memset(v, 0, sizeof *v);
    v->key = qk_strdup(key);
    v->source = -1;
    v->format = format;
    v->meaning = clean_text(meaning);
    if (qk_format_parse(format, &v->fmt) != 0)
        bug(w, "bad format '%s'", format);
}

void qk_numbers_declare(qk_numbers *w, const qk_key *keys)
{
    for (; keys->name; keys++)
        add_value(w, keys->name, keys->format, keys->meaning);
}

static wvalue *value_to_set(qk_numbers *w, int i, const char *key, int text)
{
    if (i < 0)
        bug(w, "key '%s' was not declared", key);
    wvalue *v = &w->values[i];
    if (v->set)
        bug(w, "key '%s' set twice", key);
    if (text != (v->fmt.kind == QK_KIND_TEXT))
        bug(w, text ? "key '%s' holds a number, not text" : "key '%s' holds text, not a number",
            key);
    /* every value the report quotes names where it comes from */
    if (w->n_sources == 0)
        bug(w, "key '%s' set before any source (qk_numbers_source)", key);
    v->set = 1;
    v->source = w->n_sources - 1;
    return v;
}

void qk_numbers_source(qk_numbers *w, const char *table, const char *columns, const char *rows,
                       const char *aggregation, const char *stages)
{
    w->sources = qk_realloc(w->sources, (size_t)(w->n_sources + 1) * sizeof *w->sources);
    w->sources[w->n_sources++] = (qk_nsource){clean_text(table), clean_text(columns),
                                              clean_text(rows), clean_text(aggregation),
                                              clean_text(stages)};
}

static void set_number(wvalue *v, double x)
{
    char buf[64];
    if (isfinite(x))
        snprintf(buf, sizeof buf, "%.17g", x);
    else
        buf[0] = '\0';
    v->raw = qk_strdup(buf);
}

static void set_text(wvalue *v, const char *fmt, va_list ap)
{
    char *s;
    if (vasprintf(&s, fmt, ap) < 0)
        qk_die(QK_EXIT_DATA, NULL, "out of memory");
    v->raw = clean_text(s);
    free(s);
}

void qk_numbers_set(qk_numbers *w, const char *key, double x)
{
    set_number(value_to_set(w, find_value(w, key), key, 0), x);
}

void qk_numbers_set_text(qk_numbers *w, const char *key, const char *fmt, ...)
{
    wvalue *v = value_to_set(w, find_value(w, key), key, 1);
    va_list ap;
    va_start(ap, fmt);
    set_text(v, fmt, ap);
    va_end(ap);
}

int qk_numbers_record(qk_numbers *w, const char *prefix, const char *id, const qk_key *fields,
                      const char *about)
{
    char *name;
    if (asprintf(&name, "%s.%s", prefix, id) < 0)
        qk_die(QK_EXIT_DATA, NULL, "out of memory");
    for (int r = 0; r < w->n_records; r++)
        if (strcmp(w->records[r].name, name) == 0) {
            if (w->records[r].fields != fields)
                bug(w, "record '%s' made with two field lists", name);
            free(name);
            return r;
        }
    w->records = qk_realloc(w->records, (size_t)(w->n_records + 1) * sizeof *w->records);
    wrecord *rec = &w->records[w->n_records];
    rec->name = name;
    rec->fields = fields;
    rec->first = w->n_values;
    for (const qk_key *f = fields; f->name; f++) {
        char *key, *meaning;
        if (asprintf(&key, "%s.%s", name, f->name) < 0 ||
            asprintf(&meaning, about && *about ? "%s (%s)" : "%s", f->meaning, about) < 0)
            qk_die(QK_EXIT_DATA, NULL, "out of memory");
        add_value(w, key, f->format, meaning);
        free(key);
        free(meaning);
    }
    return w->n_records++;
}

static int field_index(const wrecord *rec, const char *field)
{
    for (int i = 0; rec->fields[i].name; i++)
        if (strcmp(rec->fields[i].name, field) == 0)
            return i;
    return -1;
}

static wvalue *field_to_set(qk_numbers *w, int record, const char *field, int text)
{
    const wrecord *rec = &w->records[record];
    int i = field_index(rec, field);
    char key[512];
    snprintf(key, sizeof key, "%s.%s", rec->name, field);
    return value_to_set(w, i < 0 ? -1 : rec->first + i, key, text);
}

void qk_numbers_field(qk_numbers *w, int record, const char *field, double x)
{
    set_number(field_to_set(w, record, field, 0), x);
}

void qk_numbers_field_text(qk_numbers *w, int record, const char *field, const char *fmt, ...)
{
    wvalue *v = field_to_set(w, record, field, 1);
    va_list ap;
    va_start(ap, fmt);
    set_text(v, fmt, ap);
    va_end(ap);
}

int qk_numbers_table(qk_numbers *w, const char *name, const char *prefix, const char *caption)
{
    for (int t = 0; t < w->n_tables; t++)
        if (strcmp(w->tables[t].name, name) == 0)
            bug(w, "table '%s' made twice", name);
    w->tables = qk_realloc(w->tables, (size_t)(w->n_tables + 1) * sizeof *w->tables);
    qk_ntable *t = &w->tables[w->n_tables];
    memset(t, 0, sizeof *t);
    t->name = qk_strdup(name);
    t->prefix = qk_strdup(prefix);
    t->caption = clean_text(caption);
    return w->n_tables++;
}

void qk_numbers_column(qk_numbers *w, int table, const char *field, const char *header)
{
    qk_ntable *t = &w->tables[table];
    t->fields = qk_realloc(t->fields, (size_t)(t->n_cols + 1) * sizeof(char *));
    t->headers = qk_realloc(t->headers, (size_t)(t->n_cols + 1) * sizeof(char *));
    t->fields[t->n_cols] = qk_strdup(field);
    t->headers[t->n_cols++] = clean_text(header);
}

void qk_numbers_row(qk_numbers *w, int table, const char *id)
{
    qk_ntable *t = &w->tables[table];
    t->ids = qk_realloc(t->ids, (size_t)(t->n_rows + 1) * sizeof(char *));
    t->ids[t->n_rows++] = clean_text(id);
}

/* Every cell of every table must be a field of a record. */
static void check_tables(const qk_numbers *w)
{
    for (int t = 0; t < w->n_tables; t++) {
        const qk_ntable *tb = &w->tables[t];
        for (int r = 0; r < tb->n_rows; r++) {
            char name[512];
            snprintf(name, sizeof name, "%s.%s", tb->prefix, tb->ids[r]);
            int rec = -1;
            for (int i = 0; i < w->n_records && rec < 0; i++)
                if (strcmp(w->records[i].name, name) == 0)
                    rec = i;
            if (rec < 0)
                bug(w, "table row '%s' is no record", name);
            for (int c = 0; c < tb->n_cols; c++)
                if (field_index(&w->records[rec], tb->fields[c]) < 0)
                    bug(w, "table column '%s' is no field of its rows", tb->fields[c]);
        }
    }
}

void qk_numbers_close(qk_numbers *w)
{
    check_tables(w);
    qk_text out;
    qk_text_open(&out, w->path);
    fprintf(out.fp, "%s\n", QK_NUMBERS_MAGIC);
    for (int i = 0; i < w->n_values; i++) {
        const wvalue *v = &w->values[i];
        fprintf(out.fp, "value\t%s\t%s\t%s\t%s\n", v->key, v->format, v->raw ? v->raw : "",
                v->meaning);
    }
    for (int i = 0; i < w->n_values; i++) {
        const wvalue *v = &w->values[i];
        if (v->source < 0)
            continue;
        const qk_nsource *src = &w->sources[v->source];
        fprintf(out.fp, "source\t%s\t%s\t%s\t%s\t%s\t%s\n", v->key, src->table, src->columns,
                src->rows, src->aggregation, src->stages);
    }
    for (int t = 0; t < w->n_tables; t++) {
        const qk_ntable *tb = &w->tables[t];
        fprintf(out.fp, "table\t%s\t%s\t%s\n", tb->name, tb->prefix, tb->caption);
        for (int c = 0; c < tb->n_cols; c++)
            fprintf(out.fp, "column\t%s\t%s\t%s\n", tb->name, tb->fields[c], tb->headers[c]);
        for (int r = 0; r < tb->n_rows; r++)
            fprintf(out.fp, "row\t%s\t%s\n", tb->name, tb->ids[r]);
    }
    qk_text_close(&out);
    for (int i = 0; i < w->n_values; i++) {
        free(w->values[i].key);
        free(w->values[i].meaning);
        free(w->values[i].raw);
    }
    for (int i = 0; i < w->n_sources; i++)
        nsource_free(&w->sources[i]);
    free(w->sources);
    for (int r = 0; r < w->n_records; r++)
        free(w->records[r].name);
    for (int t = 0; t < w->n_tables; t++)
        ntable_free(&w->tables[t]);
    free(w->values);
    free(w->records);
    free(w->tables);
    free(w->path);
    free(w);
}

/* ---- the reader -------------------------------------------------------------------------- */

int qk_numbers_file(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    char line[64] = "";
    int yes = fgets(line, sizeof line, fp) != NULL &&
              strncmp(line, QK_NUMBERS_MAGIC "\n", strlen(QK_NUMBERS_MAGIC) + 1) == 0;
    fclose(fp);
    return yes;
}

/* Splits a line at tabs into at most max fields; returns their number. */
static int split_tabs(char *line, char **field, int max)
{
    int n = 0;
    field[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') {
            *p = '\0';
            field[n++] = p + 1;
        }
    return n;
}

static qk_ntable *table_of(qk_nset *s, const char *name)
{
    return (qk_ntable *)qk_nset_table(s, name);
}

static int load_value(qk_nset *s, char **f, int n, qk_err *err)
{
    if (n != 5)
        return qk_fail(err, "a value line has 5 fields");
    qk_format fmt;
    if (qk_format_parse(f[2], &fmt) != 0)
        return qk_fail(err, "unknown format '%s'", f[2]);
    if (qk_nset_value(s, f[1]))
        return qk_fail(err, "key '%s' defined twice", f[1]);
    double x = NAN;
    if (*f[3] && (qk_format_is_number(&fmt) || fmt.kind == QK_KIND_FLAG)) {
        char *end;
        x = strtod(f[3], &end);
        if (*end || !isfinite(x))
            return qk_fail(err, "key '%s': '%s' is not a number", f[1], f[3]);
    }
    if (s->n_values == s->cap_values) {
        s->cap_values = s->cap_values ? 2 * s->cap_values : 256;
        s->values = qk_realloc(s->values, (size_t)s->cap_values * sizeof *s->values);
    }
    s->values[s->n_values++] = (qk_nvalue){qk_strdup(f[1]), qk_strdup(f[3]), qk_strdup(f[4]), fmt,
                                           *f[3] == '\0', x, {NULL, NULL, NULL, NULL, NULL}};
    return 0;
}

/* "source KEY TABLE COLUMNS ROWS AGGREGATION STAGES", after the key's value */
static int load_source(qk_nset *s, char **f, int n, qk_err *err)
{
    if (n != 7)
        return qk_fail(err, "a source line has 7 fields");
    qk_nvalue *v = (qk_nvalue *)qk_nset_value(s, f[1]);
    if (!v)
        return qk_fail(err, "source of an undefined key '%s'", f[1]);
    if (v->source.table)
        return qk_fail(err, "key '%s' has two sources", f[1]);
    v->source = (qk_nsource){qk_strdup(f[2]), qk_strdup(f[3]), qk_strdup(f[4]), qk_strdup(f[5]),
                             qk_strdup(f[6])};
    return 0;
}

static int load_table_line(qk_nset *s, char **f, int n, qk_err *err)
{
    if (strcmp(f[0], "table") == 0) {
        if (n != 4)
            return qk_fail(err, "a table line has 4 fields");
        if (qk_nset_table(s, f[1]))
            return qk_fail(err, "table '%s' defined twice", f[1]);
        s->tables = qk_realloc(s->tables, (size_t)(s->n_tables + 1) * sizeof *s->tables);
        s->tables[s->n_tables++] = (qk_ntable){qk_strdup(f[1]), qk_strdup(f[2]), qk_strdup(f[3]),
                                               0, 0, NULL, NULL, NULL};
        return 0;
    }
    qk_ntable *t = n >= 2 ? table_of(s, f[1]) : NULL;
    if (!t)
        return qk_fail(err, "%s line of an undefined table", f[0]);
    if (strcmp(f[0], "column") == 0 && n == 4) {
        t->fields = qk_realloc(t->fields, (size_t)(t->n_cols + 1) * sizeof(char *));
        t->headers = qk_realloc(t->headers, (size_t)(t->n_cols + 1) * sizeof(char *));
        t->fields[t->n_cols] = qk_strdup(f[2]);
        t->headers[t->n_cols++] = qk_strdup(f[3]);
        return 0;
    }
    if (strcmp(f[0], "row") == 0 && n == 3) {
        t->ids = qk_realloc(t->ids, (size_t)(t->n_rows + 1) * sizeof(char *));
        t->ids[t->n_rows++] = qk_strdup(f[2]);
        return 0;
    }
    return qk_fail(err, "malformed %s line", f[0]);
}

int qk_nset_load(qk_nset *s, const char *path, qk_err *err)
{
    uint8_t *data;
    size_t len;
    if (qk_read_file(path, &data, &len, err) != 0)
        return -1;
    int first_table = s->n_tables, rc = 0, line_no = 0;
    char *save = NULL;
    for (char *line = strtok_r((char *)data, "\n", &save); line && rc == 0;
         line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        if (line_no == 1) {
            if (strcmp(line, QK_NUMBERS_MAGIC) != 0)
                rc = qk_fail(err, "not a numbers file (no '%s' line)", QK_NUMBERS_MAGIC);
            continue;
        }
        char *f[8];
        int n = split_tabs(line, f, 8);
        if (strcmp(f[0], "value") == 0)
            rc = load_value(s, f, n, err);
        else if (strcmp(f[0], "source") == 0)
            rc = load_source(s, f, n, err);
        else if (!strcmp(f[0], "table") || !strcmp(f[0], "column") || !strcmp(f[0], "row"))
            rc = load_table_line(s, f, n, err);
        else
            rc = qk_fail(err, "unknown record '%s'", f[0]);
        if (rc != 0) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            qk_fail(err, "line %d: %s", line_no, msg);
        }
    }
    free(data);
    for (int t = first_table; t < s->n_tables && rc == 0; t++)
        for (int r = 0; r < s->tables[t].n_rows && rc == 0; r++)
            for (int c = 0; c < s->tables[t].n_cols && rc == 0; c++)
                if (!qk_nset_cell(s, &s->tables[t], r, c))
                    rc = qk_fail(err, "table '%s': no value %s.%s.%s", s->tables[t].name,
                                 s->tables[t].prefix, s->tables[t].ids[r], s->tables[t].fields[c]);
    return rc;
}

const qk_nvalue *qk_nset_value(const qk_nset *s, const char *key)
{
    for (int i = 0; i < s->n_values; i++)
        if (strcmp(s->values[i].key, key) == 0)
            return &s->values[i];
    return NULL;
}

const qk_ntable *qk_nset_table(const qk_nset *s, const char *name)
{
    for (int i = 0; i < s->n_tables; i++)
        if (strcmp(s->tables[i].name, name) == 0)
            return &s->tables[i];
    return NULL;
}

const qk_nvalue *qk_nset_cell(const qk_nset *s, const qk_ntable *t, int row, int col)
{
    char key[1024];
    snprintf(key, sizeof key, "%s.%s.%s", t->prefix, t->ids[row], t->fields[col]);
    return qk_nset_value(s, key);
}

void qk_nset_free(qk_nset *s)
{
    for (int i = 0; i < s->n_values; i++) {
        free(s->values[i].key);
        free(s->values[i].raw);
        free(s->values[i].meaning);
        nsource_free(&s->values[i].source);
    }
    for (int t = 0; t < s->n_tables; t++)
        ntable_free(&s->tables[t]);
    free(s->values);
    free(s->tables);
    memset(s, 0, sizeof *s);
}
