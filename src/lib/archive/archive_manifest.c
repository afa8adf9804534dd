/* The MANIFEST of a qkreport archive: building, writing and parsing it, and
 * the rules every entry path and parameter follows (docs/archive.md). */
#include "qk/archive.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/die.h"

/* ---- paths, parameters, versions ----------------------------------------- */

static int has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 1;
    return 0;
}

/* Length of the UTF-8 sequence at s (shortest form, no surrogates, at most
 * U+10FFFF), or 0 if it is not one. */
static int utf8_length(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    int n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4)
        return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

static int is_utf8(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        int n = utf8_length(s);
        if (n == 0)
            return 0;
        s += n;
    }
    return 1;
}

const char *qk_archive_path_problem(const char *path)
{
    if (!*path)
        return "empty path";
    if (path[0] == '/')
        return "absolute path";
    if (has_control(path))
        return "control character in path";
    if (!is_utf8(path))
        return "path is not valid UTF-8";
    const char *c = path;
    for (;;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return "'..' component in path";
        if (n == 1 && c[0] == '.')
            return "'.' component in path";
        if (n == 0)
            return c[0] ? "empty component ('//') in path" : "trailing '/' in path";
        if (!c[n])
            return NULL;
        c += n + 1;
    }
}

static int key_char(char c, int first)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_')
        return 1;
    /* '/': a figure's id, "figure-models.qk-pca/06" */
    return !first && ((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '/');
}

const char *qk_archive_param_problem(const char *param)
{
    const char *eq = strchr(param, '=');
    if (!eq)
        return "expected KEY=VALUE";
    if (eq == param)
        return "empty KEY in KEY=VALUE";
    for (const char *p = param; p < eq; p++)
        if (!key_char(*p, p == param))
            return "KEY must be a letter or '_' followed by letters, digits, '_', '.', '-', '/'";
    if (has_control(eq + 1))
        return "control character in VALUE";
    return NULL;
}

const char *qk_archive_version_problem(const char *version)
{
    if (!*version)
        return "empty suite version";
    if (has_control(version))
        return "control character in suite version";
    return NULL;
}

/* ---- sorting and checks ---------------------------------------------------- */

/* Compares the KEY parts of two "KEY=VALUE" strings bytewise. */
static int key_cmp(const char *a, const char *b)
{
    size_t na = strcspn(a, "="), nb = strcspn(b, "=");
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c)
        return c;
    return na < nb ? -1 : na > nb;
}

static int param_sort_cmp(const void *a, const void *b)
{
    return key_cmp(*(char *const *)a, *(char *const *)b);
}

static int file_sort_cmp(const void *a, const void *b)
{
    return strcmp(((const qk_manifest_file *)a)->path, ((const qk_manifest_file *)b)->path);
}

static int is_hex_digest(const char *s)
{
    for (int i = 0; i < QK_SHA256_HEX_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[QK_SHA256_HEX_LEN] == '\0';
}

static int check_file(const qk_manifest_file *f, qk_err *err)
{
    const char *why = qk_archive_path_problem(f->path);
    if (why)
        return qk_fail(err, "%s: %s", f->path, why);
    if (strcmp(f->path, QK_MANIFEST_NAME) == 0)
        return qk_fail(err, "%s: the name is reserved for the manifest itself", f->path);
    if (f->size < 0)
        return qk_fail(err, "%s: negative size", f->path);
    if (!is_hex_digest(f->sha256))
        return qk_fail(err, "%s: sha256 is not 64 lowercase hex digits", f->path);
    return 0;
}

static int check_params(const qk_manifest *m, qk_err *err)
{
    for (int i = 0; i < m->n_params; i++) {
        const char *why = qk_archive_param_problem(m->params[i]);
        if (why)
            return qk_fail(err, "parameter '%s': %s", m->params[i], why);
        if (i > 0 && key_cmp(m->params[i - 1], m->params[i]) == 0)
            return qk_fail(err, "parameter %.*s given twice",
                           (int)strcspn(m->params[i], "="), m->params[i]);
    }
    return 0;
}

static int check_files(const qk_manifest *m, qk_err *err)
{
    for (int i = 0; i < m->n_files; i++) {
        if (check_file(&m->files[i], err) != 0)
            return -1;
        if (i > 0 && strcmp(m->files[i - 1].path, m->files[i].path) == 0)
            return qk_fail(err, "%s: listed twice", m->files[i].path);
    }
    return 0;
}

int qk_manifest_normalize(qk_manifest *m, qk_err *err)
{
    const char *why = qk_archive_version_problem(m->suite_version ? m->suite_version : "");
    if (why)
        return qk_fail(err, "%s", why);
    if (m->n_params > 0)
        qsort(m->params, (size_t)m->n_params, sizeof *m->params, param_sort_cmp);
    if (m->n_files > 0)
        qsort(m->files, (size_t)m->n_files, sizeof *m->files, file_sort_cmp);
    if (check_params(m, err) != 0)
        return -1;
    return check_files(m, err);
}

/* ---- writing ----------------------------------------------------------------- */

char *qk_manifest_format(const qk_manifest *m, size_t *len)
{
    char *text = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&text, &n);
    if (!fp)
        qk_die(QK_EXIT_DATA, NULL, "out of memory (MANIFEST text)");
    fprintf(fp, "%s\nsuite-version %s\n", QK_MANIFEST_MAGIC, m->suite_version);
    for (int i = 0; i < m->n_params; i++)
        fprintf(fp, "param %s\n", m->params[i]);
    fprintf(fp, "files %d\n", m->n_files);
    for (int i = 0; i < m->n_files; i++)
        fprintf(fp, "%s %lld %s\n", m->files[i].sha256, (long long)m->files[i].size,
                m->files[i].path);
    if (fclose(fp) != 0)
        qk_die(QK_EXIT_DATA, NULL, "out of memory (MANIFEST text)");
    *len = n;
    return text;
}

/* ---- parsing ------------------------------------------------------------------- */

typedef struct line_reader {
    char *next;     /* start of the next line in the mutable copy */
    char *end;
    int number;     /* number of the line last returned (1-based) */
} line_reader;

/* The next line without its '\n' (NUL-terminated in place), or NULL at the end. */
static char *next_line(line_reader *r)
{
    if (r->next >= r->end)
        return NULL;
    char *line = r->next;
    char *nl = memchr(line, '\n', (size_t)(r->end - line));
    *nl = '\0'; /* the text is known to end with '\n' */
    r->next = nl + 1;
    r->number++;
    return line;
}

static int expect_line(line_reader *r, char **line, qk_err *err)
{
    *line = next_line(r);
    if (!*line)
        return qk_fail(err, "line %d: unexpected end of the manifest", r->number + 1);
    return 0;
}

static const char *after_word(const char *line, const char *word)
{
    size_t n = strlen(word);
    return strncmp(line, word, n) == 0 && line[n] == ' ' ? line + n + 1 : NULL;
}

static int parse_count(const char *s, long long *out)
{
    if (!*s || (*s == '0' && s[1]) || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18)
        return -1;
    errno = 0;
    *out = strtoll(s, NULL, 10);
    return errno ? -1 : 0;
}

static int parse_header(line_reader *r, qk_manifest *m, long long *n_files, qk_err *err)
{
    char *line;
    if (expect_line(r, &line, err) != 0)
        return -1;
    if (strcmp(line, QK_MANIFEST_MAGIC) != 0)
        return qk_fail(err, "line 1: not a qkreport manifest (expected '%s')", QK_MANIFEST_MAGIC);
    if (expect_line(r, &line, err) != 0)
        return -1;
    const char *version = after_word(line, "suite-version");
    if (!version)
        return qk_fail(err, "line 2: expected 'suite-version VERSION'");
    m->suite_version = qk_strdup(version);
    for (;;) {
        if (expect_line(r, &line, err) != 0)
            return -1;
        const char *param = after_word(line, "param");
        if (!param)
            break;
        m->params = qk_realloc(m->params, (size_t)(m->n_params + 1) * sizeof *m->params);
        m->params[m->n_params++] = qk_strdup(param);
    }
    const char *count = after_word(line, "files");
    if (!count || parse_count(count, n_files) != 0)
        return qk_fail(err, "line %d: expected 'param KEY=VALUE' or 'files N'", r->number);
    return 0;
}

static int parse_file_line(char *line, qk_manifest_file *f, int number, qk_err *err)
{
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp2)
        return qk_fail(err, "line %d: expected 'SHA256 SIZE PATH'", number);
    *sp1 = *sp2 = '\0';
    long long size;
    if (sp1 - line != QK_SHA256_HEX_LEN || parse_count(sp1 + 1, &size) != 0)
        return qk_fail(err, "line %d: expected 'SHA256 SIZE PATH'", number);
    memcpy(f->sha256, line, QK_SHA256_HEX_LEN + 1);
    f->size = size;
    f->path = qk_strdup(sp2 + 1);
    return 0;
}

/* Order and uniqueness, with the line number of the first offending line. */
static int check_order(const qk_manifest *m, qk_err *err)
{
    for (int i = 1; i < m->n_params; i++)
        if (key_cmp(m->params[i - 1], m->params[i]) >= 0)
            return qk_fail(err, "line %d: parameters not sorted by key or repeated", 3 + i);
    for (int i = 1; i < m->n_files; i++)
        if (strcmp(m->files[i - 1].path, m->files[i].path) >= 0)
            return qk_fail(err, "line %d: paths not sorted or repeated", 4 + m->n_params + i);
    return 0;
}

static int parse_body(line_reader *r, qk_manifest *m, qk_err *err)
{
    long long n_files;
    if (parse_header(r, m, &n_files, err) != 0)
        return -1;
    long long lines_left = 0;
    for (const char *p = r->next; p < r->end; p++)
        lines_left += *p == '\n';
    if (n_files > lines_left)
        return qk_fail(err, "line %d: 'files %lld' but %lld lines follow", r->number, n_files,
                       lines_left);
    m->files = qk_calloc((size_t)(n_files ? n_files : 1), sizeof *m->files);
    for (long long i = 0; i < n_files; i++) {
        char *line;
        if (expect_line(r, &line, err) != 0 ||
            parse_file_line(line, &m->files[i], r->number, err) != 0)
            return -1;
        m->n_files++;
    }
    if (next_line(r))
        return qk_fail(err, "line %d: more lines than 'files %lld' announces", r->number, n_files);
    if (check_order(m, err) != 0)
        return -1;
    return qk_manifest_normalize(m, err);
}

int qk_manifest_parse(const char *text, size_t len, qk_manifest *m, qk_err *err)
{
    memset(m, 0, sizeof *m);
    if (len == 0 || text[len - 1] != '\n')
        return qk_fail(err, "empty or missing its final newline");
    if (memchr(text, '\0', len))
        return qk_fail(err, "contains a NUL byte");
    char *copy = qk_malloc(len);
    memcpy(copy, text, len);
    line_reader r = {copy, copy + len, 0};
    int rc = parse_body(&r, m, err);
    free(copy);
    if (rc != 0)
        qk_manifest_free(m);
    return rc;
}

int qk_manifest_find(const qk_manifest *m, const char *path)
{
    int lo = 0, hi = m->n_files - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(m->files[mid].path, path);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

void qk_manifest_free(qk_manifest *m)
{
    free(m->suite_version);
    for (int i = 0; i < m->n_params; i++)
        free(m->params[i]);
    free(m->params);
    for (int i = 0; i < m->n_files; i++)
        free(m->files[i].path);
    free(m->files);
    memset(m, 0, sizeof *m);
}
