/* The dataset registry: workflow/datasets.tsv and qkreport.conf files. */
#include "qk/registry.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int qk_dataset_group(const qk_dataset *d) { return d->n_q_heads / d->n_kv_heads; }

int qk_dataset_kv_head(const qk_dataset *d, int q_head)
{
    return q_head / qk_dataset_group(d);
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_layer_list(const char *s, unsigned char *flags)
{
    memset(flags, 0, QK_MAX_LAYERS);
    if (strcmp(s, "-") == 0 || *s == '\0')
        return 0;
    char buf[512];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int layer;
        if (parse_int(tok, 0, QK_MAX_LAYERS - 1, &layer) != 0)
            return -1;
        flags[layer] = 1;
    }
    return 0;
}

static int copy_text(char *dst, size_t cap, const char *src)
{
    if (strlen(src) >= cap || *src == '\0')
        return -1;
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* The text columns: where each goes in a qk_dataset, and its room. */
typedef struct text_field {
    const char *name;
    size_t offset, cap;
} text_field;
#define TEXT_FIELD(f) {#f, offsetof(qk_dataset, f), sizeof ((qk_dataset *)0)->f}
static const text_field text_fields[] = {TEXT_FIELD(id), TEXT_FIELD(study), TEXT_FIELD(family),
                                         TEXT_FIELD(label), TEXT_FIELD(revision),
                                         TEXT_FIELD(rope_scaling)};

static const text_field *find_text(const char *key)
{
    for (size_t i = 0; i < sizeof text_fields / sizeof text_fields[0]; i++)
        if (strcmp(key, text_fields[i].name) == 0)
            return &text_fields[i];
    return NULL;
}

/* Sets one field of d from its registry column name; -1 if the value is
 * malformed, -2 if the key is unknown. */
static int set_field(qk_dataset *d, const char *key, const char *val)
{
    struct { const char *name; int *dst; int lo, hi; } ints[] = {
        {"n_layers", &d->n_layers, 1, QK_MAX_LAYERS},
        {"n_q_heads", &d->n_q_heads, 1, 4096},
        {"n_kv_heads", &d->n_kv_heads, 1, 4096},
        {"head_dim", &d->head_dim, 1, 65536},
        {"max_position_embeddings", &d->max_position_embeddings, 1, 1 << 30},
        {"context_length", &d->context_length, 1, 1 << 30},
        {"bucket_size", &d->bucket_size, 1, 1 << 30},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (strcmp(key, ints[i].name) == 0)
            return parse_int(val, ints[i].lo, ints[i].hi, ints[i].dst);
    const text_field *t = find_text(key);
    if (t)
        return copy_text((char *)d + t->offset, t->cap, val);
    if (strcmp(key, "rope_theta") == 0) {
        char *end;
        d->rope_theta = strtod(val, &end);
        return (end == val || *end || !(d->rope_theta >= 0)) ? -1 : 0;
    }
    if (strcmp(key, "nope_layers") == 0)
        return parse_layer_list(val, d->nope);
    if (strcmp(key, "cross_attention_layers") == 0)
        return parse_layer_list(val, d->cross);
    return -2;
}

int qk_dataset_validate(const qk_dataset *d, qk_err *err)
{
    if (!d->id[0])
        return qk_fail(err, "dataset has no id");
    if (d->n_layers <= 0 || d->n_q_heads <= 0 || d->n_kv_heads <= 0 ||
        d->head_dim <= 0 || d->context_length <= 0 || d->bucket_size <= 0)
        return qk_fail(err, "dataset %s: n_layers, n_q_heads, n_kv_heads, head_dim, "
                            "context_length and bucket_size must all be set", d->id);
    if (d->n_q_heads % d->n_kv_heads != 0)
        return qk_fail(err, "dataset %s: n_q_heads %d is not a multiple of n_kv_heads %d",
                       d->id, d->n_q_heads, d->n_kv_heads);
    return 0;
}

static const char *const columns[] = {
    "id", "study", "family", "label", "revision", "n_layers", "n_q_heads",
    "n_kv_heads", "head_dim", "rope_theta", "rope_scaling",
    "max_position_embeddings", "context_length", "bucket_size", "nope_layers",
    "cross_attention_layers"};
enum { NCOLS = sizeof columns / sizeof columns[0] };

/* Splits a line at tabs in place; returns the number of fields. */
static int split_tabs(char *line, char **fields, int max)
{
    int n = 0;
    fields[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') {
            *p = '\0';
            fields[n++] = p + 1;
        }
    return n;
}

static int parse_registry_row(char *line, int lineno, qk_dataset *d, qk_err *err)
{
    char *fields[NCOLS + 1];
    int n = split_tabs(line, fields, NCOLS + 1);
    if (n != NCOLS)
        return qk_fail(err, "line %d: %d columns, expected %d", lineno, n, NCOLS);
    memset(d, 0, sizeof *d);
    for (int i = 0; i < NCOLS; i++)
        if (set_field(d, columns[i], fields[i]) != 0)
            return qk_fail(err, "line %d: bad %s '%s'", lineno, columns[i], fields[i]);
    return qk_dataset_validate(d, err);
}

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

/* The next line into buf, without its end: 1, 0 at the end of the file,
 * -1 for a line that does not fit (its tail must not pass for a line of
 * its own: the end of a long comment would be read as data). */
static int read_line(FILE *fp, char *buf, int size, int lineno, qk_err *err)
{
    if (!fgets(buf, size, fp))
        return 0;
    size_t n = strlen(buf);
    if (n == (size_t)size - 1 && buf[n - 1] != '\n') {
        int next = getc(fp); /* a full buffer: the line fits if it ends here */
        if (next != EOF && next != '\n')
            return qk_fail(err, "line %d: longer than %d bytes", lineno, size - 1);
    }
    chomp(buf);
    return 1;
}

int qk_registry_load(const char *path, qk_registry *reg, qk_err *err)
{
    memset(reg, 0, sizeof *reg);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return qk_fail(err, "cannot open registry: %s", strerror(errno));
    char line[4096];
    int lineno = 0, seen_header = 0, rc = 0, got;
    while (rc == 0 && (got = read_line(fp, line, sizeof line, lineno + 1, err)) != 0) {
        lineno++;
        if (got < 0) {
            rc = -1;
            break;
        }
        if (line[0] == '#' || line[0] == '\0')
            continue;
        if (!seen_header) {
            seen_header = 1;
            if (strncmp(line, "id\tstudy\t", 9) != 0)
                rc = qk_fail(err, "line %d: expected the header line", lineno);
            continue;
        }
        reg->items = qk_realloc(reg->items, (size_t)(reg->n + 1) * sizeof *reg->items);
        rc = parse_registry_row(line, lineno, &reg->items[reg->n], err);
        if (rc == 0 && qk_registry_find(reg, reg->items[reg->n].id))
            rc = qk_fail(err, "line %d: duplicate id %s", lineno, reg->items[reg->n].id);
        if (rc == 0)
            reg->n++;
    }
    fclose(fp);
    if (rc != 0)
        qk_registry_free(reg);
    return rc;
}

void qk_registry_free(qk_registry *reg)
{
    free(reg->items);
    memset(reg, 0, sizeof *reg);
}

const qk_dataset *qk_registry_find(const qk_registry *reg, const char *id)
{
    for (int i = 0; i < reg->n; i++)
        if (strcmp(reg->items[i].id, id) == 0)
            return &reg->items[i];
    return NULL;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

#define QK_STR_(x) #x
#define QK_STR(x) QK_STR_(x)

/* The first byte of text that is not printable UTF-8: a control character
 * (C0, DEL or C1; a tab too) gives 'c', a malformed, overlong or surrogate
 * sequence 'u'; 0 if there is none. */
static char unprintable(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        unsigned c = *s, n = c < 0x80 ? 0 : c >= 0xc2 && c < 0xe0 ? 1 : c >= 0xe0 && c < 0xf0 ? 2
                             : c >= 0xf0 && c < 0xf5 ? 3 : 9;
        if (n == 9)
            return 'u';
        unsigned cp = n ? c & (0x3f >> n) : c;
        for (unsigned k = 1; k <= n; k++) {
            if ((s[k] & 0xc0) != 0x80)
                return 'u';
            cp = cp << 6 | (s[k] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 'u';
        if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
            return 'c';
        s += n + 1;
    }
    return 0;
}

/* A value set_field refuses, as a message: what the key takes. */
static int bad_value(qk_err *err, int lineno, const char *key, const char *val)
{
    const text_field *t = find_text(key);
    if (t)
        return qk_fail(err, "line %d: %s is longer than %zu bytes", lineno, key, t->cap - 1);
    const char *want = strcmp(key, "rope_theta") == 0 ? "a number, 0 or more"
                       : strcmp(key, "nope_layers") == 0 ||
                               strcmp(key, "cross_attention_layers") == 0
                           ? "layer numbers below " QK_STR(QK_MAX_LAYERS) ", comma-separated, or -"
                           : "a whole number, 1 or more";
    /* the value last: a long one is what a message too long loses */
    return qk_fail(err, "line %d: %s takes %s, not '%s'", lineno, key, want, val);
}

/* One "key = value" line (trimmed, not a comment) into d: every way the
 * line can be wrong gives its own message. */
static int conf_line(char *s, int lineno, qk_dataset *d, qk_err *err)
{
    char *eq = strchr(s, '=');
    if (!eq)
        return qk_fail(err, "line %d: expected 'key = value'", lineno);
    *eq = '\0';
    char *key = trim(s), *val = trim(eq + 1);
    qk_dataset probe = *d;
    if (set_field(&probe, key, "") == -2)
        return qk_fail(err, "line %d: unknown key '%s'", lineno, key);
    if (*val == '\0')
        return qk_fail(err, "line %d: %s is empty", lineno, key);
    char bad = unprintable(val);
    if (bad)
        return qk_fail(err, "line %d: %s %s", lineno, key,
                       bad == 'c' ? "holds a control character" : "is not valid UTF-8");
    if (strcmp(key, "label") == 0 && qk_utf8_chars(val) > QK_LABEL_CHARS)
        return qk_fail(err, "line %d: label is longer than %d characters (figures draw it in "
                       "legends and on axes)", lineno, QK_LABEL_CHARS);
    return set_field(d, key, val) != 0 ? bad_value(err, lineno, key, val) : 0;
}

int qk_dataset_conf_load(const char *path, qk_dataset *d, qk_err *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return qk_fail(err, "cannot open: %s", strerror(errno));
    char line[1024];
    int lineno = 0, rc = 0, got;
    while (rc == 0 && (got = read_line(fp, line, sizeof line, lineno + 1, err)) != 0) {
        lineno++;
        if (got < 0) {
            rc = -1;
            break;
        }
        char *s = trim(line);
        if (*s != '#' && *s != '\0')
            rc = conf_line(s, lineno, d, err);
    }
    fclose(fp);
    return rc;
}

int qk_dataset_conf_check(const char *path, qk_err *err)
{
    qk_dataset d;
    memset(&d, 0, sizeof d);
    return qk_dataset_conf_load(path, &d, err);
}
