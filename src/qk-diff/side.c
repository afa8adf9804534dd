/* The two sides of a comparison: a folder, an archive (extracted into a
 * temporary folder, after its MANIFEST is checked) or a numbers.tex; their
 * run records and numbers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diff.h"
#include "qk/archive.h"
#include "qk/cli.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- record lines ---------------------------------------------------------------------- */

static void add_item(diff_items *r, const char *kind, const char *name, const char *value)
{
    r->items = qk_realloc(r->items, (size_t)(r->n + 1) * sizeof *r->items);
    r->items[r->n++] = (diff_item){qk_strdup(kind), qk_strdup(name), qk_strdup(value)};
}

static int item_order(const void *x, const void *y)
{
    const diff_item *a = x, *b = y;
    int c = strcmp(a->kind, b->kind);
    return c ? c : strcmp(a->name, b->name);
}

const char *diff_record_value(const diff_items *r, const char *kind, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->items[i].kind, kind) == 0 && strcmp(r->items[i].name, name) == 0)
            return r->items[i].value;
    return NULL;
}

/* report/run.tsv: "kind<TAB>name<TAB>value" lines under a header */
static void load_run_record(diff_side *s, const char *path)
{
    uint8_t *text;
    size_t len;
    qk_err err;
    if (qk_read_file(path, &text, &len, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    char *save = NULL;
    int line_no = 0;
    for (char *line = strtok_r((char *)text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line_no++ == 0)
            continue; /* the header */
        char *name = strchr(line, '\t');
        char *value = name ? strchr(name + 1, '\t') : NULL;
        if (!value)
            qk_die(QK_EXIT_DATA, path, "line %d: expected kind, name and value", line_no);
        *name++ = '\0';
        *value++ = '\0';
        add_item(&s->record, line, name, value);
    }
    free(text);
}

/* An archive's MANIFEST: the suite version and the parameters
 * ("GROUP.NAME=VALUE"), for an archive made before runs had a record. */
static void load_manifest(diff_side *s, const char *path)
{
    uint8_t *text;
    size_t len;
    qk_err err;
    if (qk_read_file(path, &text, &len, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    qk_manifest m;
    if (qk_manifest_parse((const char *)text, len, &m, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    if (!diff_record_value(&s->record, "version", "-"))
        add_item(&s->record, "version", "-", m.suite_version);
    for (int i = 0; i < m.n_params; i++) {
        char *eq = strchr(m.params[i], '=');
        *eq = '\0';
        if (!diff_record_value(&s->record, "param", m.params[i]))
            add_item(&s->record, "param", m.params[i], eq + 1);
    }
    qk_manifest_free(&m);
    free(text);
}

/* ---- numbers.tex -------------------------------------------------------------------------- */

/* The argument of a \qkdef or \qkrawdef line: KEY and VALUE of
 * "\CMD{KEY}{VALUE}" (VALUE up to the last '}'), or 0. */
static int definition(char *line, const char *cmd, char **key, char **value)
{
    size_t n = strlen(cmd);
    if (strncmp(line, cmd, n) != 0 || line[n] != '{')
        return 0;
    char *close = strchr(line + n + 1, '}');
    char *last = strrchr(line, '}');
    if (!close || close[1] != '{' || last <= close + 1)
        return 0;
    *close = '\0';
    *last = '\0';
    *key = line + n + 1;
    *value = close + 2;
    return 1;
}

static diff_number *number_slot(diff_side *s, const char *key)
{
    for (int i = s->n_numbers - 1; i >= 0; i--)
        if (strcmp(s->numbers[i].key, key) == 0)
            return &s->numbers[i];
    s->numbers = qk_realloc(s->numbers, (size_t)(s->n_numbers + 1) * sizeof *s->numbers);
    diff_number *d = &s->numbers[s->n_numbers++];
    *d = (diff_number){qk_strdup(key), NULL, NAN, 0};
    return d;
}

static int number_order(const void *x, const void *y)
{
    return strcmp(((const diff_number *)x)->key, ((const diff_number *)y)->key);
}

static void load_numbers(diff_side *s, const char *path)
{
    uint8_t *text;
    size_t len;
    qk_err err;
    if (qk_read_file(path, &text, &len, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    char *save = NULL, *key, *value;
    for (char *line = strtok_r((char *)text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (definition(line, "\\qkdef", &key, &value)) {
            diff_number *d = number_slot(s, key);
            free(d->shown);
            d->shown = qk_strdup(value);
        } else if (definition(line, "\\qkrawdef", &key, &value)) {
            char *end;
            double x = strtod(value, &end);
            diff_number *d = number_slot(s, key);
            d->has_raw = end != value && !*end;
            d->raw = d->has_raw ? x : NAN;
        }
    }
    free(text);
    for (int i = 0; i < s->n_numbers; i++)
        if (!s->numbers[i].shown)
            s->numbers[i].shown = qk_strdup("");
    qsort(s->numbers, (size_t)s->n_numbers, sizeof *s->numbers, number_order);
}

const diff_number *diff_side_number(const diff_side *s, const char *key)
{
    diff_number probe = {(char *)key, NULL, 0, 0};
    return bsearch(&probe, s->numbers, (size_t)s->n_numbers, sizeof *s->numbers, number_order);
}

/* ---- archives ------------------------------------------------------------------------------ */

static void print_problem(void *ctx, const char *entry, const char *problem)
{
    const char *path = ctx;
    char *name = entry ? qk_archive_printable(entry) : NULL;
    fprintf(stderr, "%s: error: %s: %s%s%s\n", qk_progname(), path, name ? name : "",
            name ? ": " : "", problem);
    free(name);
}

/* Extracts the archive into a new temporary folder (removed at the end,
 * also when qk-diff stops on an error) and returns it. */
static char *extract_archive(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        qk_die(QK_EXIT_DATA, path, "cannot read the archive: %s",
               fd < 0 ? strerror(errno) : "not a regular file with data");
    void *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED)
        qk_die(QK_EXIT_DATA, path, "cannot map: %s", strerror(errno));
    const char *tmp = getenv("TMPDIR");
    char *dir = qk_path_join(tmp && *tmp ? tmp : "/tmp", "qk-diff.XXXXXX");
    if (!mkdtemp(dir))
        qk_die(QK_EXIT_DATA, dir, "cannot make a temporary folder: %s", strerror(errno));
    qk_temp_begin(dir);
    int extracted;
    int problems = qk_archive_extract(data, (size_t)st.st_size, dir, print_problem, (void *)path,
                                      &extracted);
    munmap(data, (size_t)st.st_size);
    if (problems)
        qk_die(QK_EXIT_DATA, path, "the archive is damaged (%d problems); nothing compared",
               problems);
    return dir;
}

/* ---- a side -------------------------------------------------------------------------------- */

void diff_side_open(diff_side *s, const char *arg, const char *name)
{
    memset(s, 0, sizeof *s);
    s->arg = arg;
    size_t n = strlen(name) + strlen(arg) + 4;
    s->label = qk_malloc(n);
    snprintf(s->label, n, "%s (%s)", name, arg);
    if (is_dir(arg)) {
        s->root = qk_strdup(arg);
    } else if (is_file(arg) && (ends_with(arg, ".tar.gz") || ends_with(arg, ".tgz") ||
                                ends_with(arg, ".tar"))) {
        s->temp = extract_archive(arg);
        s->root = qk_strdup(s->temp);
    } else if (is_file(arg) && ends_with(arg, ".tex")) {
        s->numbers_tex = qk_strdup(arg);
    } else {
        qk_die(QK_EXIT_USAGE, NULL,
               "%s: neither a folder, an archive (.tar.gz) nor a numbers.tex", arg);
    }
    if (s->root) {
        char *tex = qk_path_join(s->root, "report/numbers.tex");
        char *run = qk_path_join(s->root, "report/run.tsv");
        char *manifest = qk_path_join(s->root, QK_MANIFEST_NAME);
        char *results = qk_path_join(s->root, "results");
        if (!is_file(tex) && !is_dir(results))
            qk_die(QK_EXIT_USAGE, NULL, "%s holds neither report/numbers.tex nor results/", arg);
        free(results);
        s->numbers_tex = is_file(tex) ? tex : (free(tex), NULL);
        if (is_file(run))
            load_run_record(s, run);
        if (is_file(manifest))
            load_manifest(s, manifest);
        free(run);
        free(manifest);
    }
    qsort(s->record.items, (size_t)s->record.n, sizeof *s->record.items, item_order);
    if (s->numbers_tex)
        load_numbers(s, s->numbers_tex);
}

void diff_side_close(diff_side *s)
{
    if (s->temp) {
        qk_remove_tree(s->temp);
        qk_temp_end(s->temp);
    }
    for (int i = 0; i < s->record.n; i++) {
        free(s->record.items[i].kind);
        free(s->record.items[i].name);
        free(s->record.items[i].value);
    }
    free(s->record.items);
    for (int i = 0; i < s->n_numbers; i++) {
        free(s->numbers[i].key);
        free(s->numbers[i].shown);
    }
    free(s->numbers);
    free(s->numbers_tex);
    free(s->label);
    free(s->root);
    free(s->temp);
}

/* ---- files ------------------------------------------------------------------------------- */

static int suffix_listed(const char *name, const char *suffixes)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", suffixes);
    char *save = NULL;
    for (char *s = strtok_r(copy, " ", &save); s; s = strtok_r(NULL, " ", &save))
        if (ends_with(name, s))
            return 1;
    return 0;
}

static void walk(const char *root, const char *rel, const char *suffixes, char ***list, int *n)
{
    char *dir = qk_path_join(root, rel);
    DIR *d = opendir(dir);
    free(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue; /* also the temporaries of a publication */
        char *sub = qk_path_join(rel, e->d_name);
        char *full = qk_path_join(root, sub);
        if (is_dir(full)) {
            walk(root, sub, suffixes, list, n);
            free(sub);
        } else if (suffix_listed(e->d_name, suffixes)) {
            *list = qk_realloc(*list, (size_t)(*n + 1) * sizeof **list);
            (*list)[(*n)++] = sub;
        } else {
            free(sub);
        }
        free(full);
    }
    closedir(d);
}

static int string_order(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

char **diff_list_files(const char *root, const char *sub, const char *suffixes, int *n)
{
    char **list = NULL;
    *n = 0;
    if (root)
        walk(root, sub, suffixes, &list, n);
    qsort(list, (size_t)*n, sizeof *list, string_order);
    return list;
}

void diff_free_list(char **list, int n)
{
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

