/* Source records: what a dataset's store is made from (include/qk/source.h). */
#include "qk/source.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "qk/revision.h"

/* The footer is what identifies a Parquet file cheaply: it holds every
 * column chunk's offsets, sizes and statistics. Files that are no Parquet
 * (LFS pointers, truncated downloads) are identified by their last bytes. */
#define FOOTER_MAX (64u << 20)
#define TAIL_BYTES 4096u

static uint64_t read_at_hash(int fd, off_t offset, size_t len, int *ok)
{
    uint8_t *buf = qk_malloc(len ? len : 1);
    ssize_t got = pread(fd, buf, len, offset);
    *ok = got == (ssize_t)len;
    uint64_t h = XXH3_64bits_withSeed(buf, *ok ? len : 0, 0x5157534f55524345ull);
    free(buf);
    return h;
}

static uint64_t footer_hash(int fd, off_t size)
{
    int ok = 0;
    uint8_t tail[8];
    if (size >= 12 && pread(fd, tail, 8, size - 8) == 8 && memcmp(tail + 4, "PAR1", 4) == 0) {
        uint32_t footer_len = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 |
                              (uint32_t)tail[2] << 16 | (uint32_t)tail[3] << 24;
        if (footer_len <= FOOTER_MAX && (off_t)footer_len + 8 <= size) {
            uint64_t h = read_at_hash(fd, size - 8 - footer_len, footer_len + 8, &ok);
            if (ok)
                return h;
        }
    }
    size_t n = size < (off_t)TAIL_BYTES ? (size_t)size : TAIL_BYTES;
    return read_at_hash(fd, size - (off_t)n, n, &ok);
}

static int write_file_line(FILE *fp, const char *root, const char *path, qk_err *err)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return qk_fail(err, "cannot read %s: %s", path, strerror(e));
    }
    uint64_t h = footer_hash(fd, st.st_size);
    close(fd);
    size_t n = strlen(root);
    const char *rel = strncmp(path, root, n) == 0 && path[n] == '/' ? path + n + 1 : path;
    fprintf(fp, "file\t%s\t%lld\t%lld%09ld\t%016" PRIx64 "\n", rel, (long long)st.st_size,
            (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, h);
    return 0;
}

/* The registry row of id, verbatim, or "-". */
static void write_registry_row(FILE *fp, const char *registry, const char *id)
{
    FILE *in = fopen(registry, "r");
    char line[4096];
    size_t n = strlen(id);
    const char *row = "-";
    while (in && fgets(line, sizeof line, in)) {
        if (strncmp(line, id, n) == 0 && line[n] == '\t') {
            line[strcspn(line, "\r\n")] = '\0';
            row = line;
            break;
        }
    }
    fprintf(fp, "registry\t%s\n", row);
    if (in)
        fclose(in);
}

static void write_conf_hash(FILE *fp, const char *dir)
{
    char *conf = qk_path_join(dir, "qkreport.conf");
    uint8_t *data;
    size_t len;
    qk_err err;
    if (qk_read_file(conf, &data, &len, &err) == 0) {
        fprintf(fp, "conf\t%016" PRIx64 "\n", XXH3_64bits(data, len));
        free(data);
    } else {
        fputs("conf\t-\n", fp);
    }
    free(conf);
}

/* One "key=value" word of the synthetic description. */
static void synth_value(const char *spec, const char *key, char *out, size_t cap)
{
    size_t n = strlen(key);
    for (const char *p = spec; p && *p; p += strspn(p, " ")) {
        size_t len = strcspn(p, " ");
        if (len > n && strncmp(p, key, n) == 0 && p[n] == '=') {
            snprintf(out, cap, "%.*s", (int)(len - n - 1), p + n + 1);
            return;
        }
        p += len;
    }
    snprintf(out, cap, "?");
}

int qk_source_synthetic_ok(const char *spec)
{
    static const char *const keys[] = {"seed", "scale", "mode"};
    for (int i = 0; i < 3; i++) {
        char value[64];
        synth_value(spec, keys[i], value, sizeof value);
        if (strcmp(value, "?") == 0 || !*value)
            return 0;
    }
    return 1;
}

/* One file line per input file of the capture folder root. */
static int write_file_lines(FILE *fp, const char *root, qk_err *err)
{
    qk_revision rev;
    if (qk_revision_scan(root, &rev, err) != 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < rev.n; i++)
        for (int j = 0; rc == 0 && j < rev.configs[i].n_paths; j++)
            rc = write_file_line(fp, root, rev.configs[i].paths[j], err);
    qk_revision_free(&rev);
    return rc;
}

char *qk_source_file_lines(const char *root, qk_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    int rc = write_file_lines(mem, root, err);
    fclose(mem);
    if (rc != 0) {
        free(text);
        return NULL;
    }
    return text;
}

int qk_source_files_as_written(const char *root, const char *lines)
{
    char *path = qk_path_join(root, QK_SYNTH_FILES);
    uint8_t *held = NULL;
    size_t len = 0;
    int same = qk_read_file(path, &held, &len, NULL) == 0 && len == strlen(lines) &&
               memcmp(held, lines, len) == 0;
    free(held);
    free(path);
    return same;
}

/* The "listed" line of the record: the configs the capture in root lists. */
static void write_listed(FILE *fp, const char *root)
{
    qk_config_list l;
    if (qk_capture_configs(root, &l) != 0) {
        fputs("listed\t-\n", fp);
        return;
    }
    uint64_t h = 0;
    for (int i = 0; i < l.n; i++)
        h = XXH3_64bits_withSeed(l.names[i], strlen(l.names[i]) + 1, h);
    fprintf(fp, "listed\t%d\t%s\t%016" PRIx64 "\n", l.n, l.from, h);
    qk_config_list_free(&l);
}

/* The synthetic description, and with an input folder (the data qk-synth
 * wrote) its files too, so that a file edited or replaced there by hand
 * reloads the dataset as it would a download's; the origin then says that
 * the files are no longer those qk-synth wrote. */
static int write_synthetic(FILE *fp, const qk_source_spec *spec, qk_err *err)
{
    char seed[64], scale[64], mode[64];
    synth_value(spec->synthetic, "seed", seed, sizeof seed);
    synth_value(spec->synthetic, "scale", scale, sizeof scale);
    synth_value(spec->synthetic, "mode", mode, sizeof mode);
    char *lines = NULL, *root = NULL;
    if (spec->input) {
        root = qk_revision_resolve(spec->input, NULL, spec->dataset, err);
        if (!root)
            return -1;
        lines = qk_source_file_lines(root, err);
        if (!lines) {
            free(root);
            return -1;
        }
        if (!qk_source_files_as_written(root, lines))
            snprintf(mode + strlen(mode), sizeof mode - strlen(mode),
                     "; files changed since qk-synth wrote them");
    }
    fprintf(fp, "source\tsynthetic\norigin\tsynthetic (qk-synth, seed %s, scale %s, mode %s)\n"
                "revision\t-\n", seed, scale, mode);
    if (root)
        write_listed(fp, root);
    fputs(lines ? lines : "", fp);
    free(lines);
    free(root);
    return 0;
}

static int write_directory(FILE *fp, const qk_source_spec *spec, qk_err *err)
{
    char *root = qk_revision_resolve(spec->input, spec->revision, spec->dataset, err);
    if (!root)
        return -1;
    char *abs = realpath(root, NULL);
    char revision[256];
    qk_source_capture_revision(root, revision, sizeof revision);
    /* data that qk-synth wrote and a user copied are named as such */
    const char *note = qk_source_is_synthetic_capture(root) ? " (written by qk-synth)" : "";
    fprintf(fp, "source\tdirectory\norigin\t%s%s\nrevision\t%s\n", abs ? abs : root, note,
            revision);
    write_listed(fp, root);
    free(abs);
    write_conf_hash(fp, spec->input);
    if (strcmp(root, spec->input) != 0)
        write_conf_hash(fp, root);
    int rc = write_file_lines(fp, root, err);
    free(root);
    return rc;
}

int qk_source_write_record(const qk_source_spec *spec, const char *path, qk_err *err)
{
    qk_atomic out;
    if (qk_atomic_open(&out, path, err) != 0)
        return -1;
    fprintf(out.fp, "dataset\t%s\n", spec->dataset);
    int rc = spec->synthetic ? write_synthetic(out.fp, spec, err)
                             : write_directory(out.fp, spec, err);
    if (rc == 0)
        write_registry_row(out.fp, spec->registry, spec->dataset);
    if (rc != 0) {
        qk_atomic_abort(&out);
        return -1;
    }
    return qk_atomic_commit_if_changed(&out, err);
}

/* ---- the capture revision -------------------------------------------------- */

/* Whether a name read from a user's file can go into a record line and a
 * report: printable, no tab, no control byte. */
static int plain_text(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

/* The string value of "key": "value" in a JSON text (the capture tool writes
 * flat, sorted keys; escapes other than \" and \\ are kept verbatim). */
static int json_string_value(const char *text, const char *key, char *out, size_t cap)
{
    char pattern[128];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    const char *p = strstr(text, pattern);
    if (!p)
        return -1;
    p += strlen(pattern);
    p += strspn(p, " \t\r\n");
    if (*p++ != ':')
        return -1;
    p += strspn(p, " \t\r\n");
    if (*p++ != '"')
        return -1;
    size_t n = 0;
    for (; *p && *p != '"' && n + 1 < cap; p++) {
        if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
            p++;
        if ((unsigned char)*p < 0x20)
            return -1;
        out[n++] = *p;
    }
    out[n] = '\0';
    return *p == '"' && n > 0 && plain_text(out) ? 0 : -1;
}

/* The text between the backquotes at p ("`NAME`"), on one line. */
static int backquoted(const char *p, char *out, size_t cap)
{
    if (*p++ != '`')
        return -1;
    size_t n = strcspn(p, "`\r\n");
    if (n == 0 || p[n] != '`' || n >= cap)
        return -1;
    memcpy(out, p, n);
    out[n] = '\0';
    return plain_text(out) ? 0 : -1;
}

/* The branch named by the capture README: its metadata item
 * "- `dataset_branch`: `NAME`" (the capture tool's), else the sentence
 * "Branch `NAME` holds ..." (qk-synth's). */
static int readme_branch(const char *text, char *out, size_t cap)
{
    static const char item[] = "- `dataset_branch`: ";
    for (const char *p = strstr(text, item); p; p = strstr(p + 1, item))
        if ((p == text || p[-1] == '\n') && backquoted(p + strlen(item), out, cap) == 0)
            return 0;
    const char *p = strstr(text, "Branch `");
    return p ? backquoted(p + 7, out, cap) : -1;
}

/* The snapshot name of a Hugging Face cache path ".../snapshots/NAME". */
static int snapshot_name(const char *root, char *out, size_t cap)
{
    const char *p = strstr(root, "/snapshots/");
    if (!p)
        return -1;
    p += 11;
    size_t n = strcspn(p, "/");
    if (n == 0 || n >= cap)
        return -1;
    memcpy(out, p, n);
    out[n] = '\0';
    return plain_text(out) ? 0 : -1;
}

static int from_file(const char *root, const char *name, char *out, size_t cap,
                     int (*pick)(const char *text, char *out, size_t cap))
{
    char *path = qk_path_join(root, name);
    uint8_t *data;
    size_t len;
    qk_err err;
    int rc = -1;
    if (qk_read_file(path, &data, &len, &err) == 0) {
        rc = pick((const char *)data, out, cap);
        free(data);
    }
    free(path);
    return rc;
}

static int saver_branch(const char *text, char *out, size_t cap)
{
    return json_string_value(text, "dataset_branch", out, cap);
}

static int saver_source(const char *text, char *out, size_t cap)
{
    return json_string_value(text, "source_dataset", out, cap);
}

int qk_source_is_synthetic_capture(const char *root)
{
    char source[256];
    return from_file(root, "_saver_state.json", source, sizeof source, saver_source) == 0 &&
           strncmp(source, "synthetic:", 10) == 0;
}

void qk_source_capture_revision(const char *root, char *out, size_t cap)
{
    if (from_file(root, "_saver_state.json", out, cap, saver_branch) == 0 ||
        from_file(root, "README.md", out, cap, readme_branch) == 0 ||
        snapshot_name(root, out, cap) == 0)
        return;
    snprintf(out, cap, "-");
}

/* ---- the configs a capture lists --------------------------------------------- */

void qk_config_list_free(qk_config_list *l)
{
    free(l->names);
    memset(l, 0, sizeof *l);
}

/* Adds a config name (of len bytes at p) in its canonical form; -1 if it
 * is none. */
static int list_add(qk_config_list *l, const char *p, size_t len)
{
    char name[16];
    int layer, head;
    char kind;
    if (len == 0 || len >= sizeof name)
        return -1;
    memcpy(name, p, len);
    name[len] = '\0';
    if (qk_parse_config_name(name, &layer, &head, &kind) != 0)
        return -1;
    l->names = qk_realloc(l->names, (size_t)(l->n + 1) * sizeof *l->names);
    snprintf(l->names[l->n++], sizeof *l->names, "l%02dh%02d%c", layer, head, kind);
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Sorts the list and drops duplicates; an empty list lists nothing (-1).
 * On -1 (rc, or nothing listed) the list is freed. */
static int list_finish(qk_config_list *l, int rc, const char *from)
{
    if (rc == 0 && l->n > 0) {
        qsort(l->names, (size_t)l->n, sizeof *l->names, cmp_name);
        int n = 1;
        for (int i = 1; i < l->n; i++)
            if (strcmp(l->names[i], l->names[n - 1]) != 0)
                memmove(l->names[n++], l->names[i], sizeof *l->names);
        l->n = n;
        l->from = from;
        return 0;
    }
    qk_config_list_free(l);
    return -1;
}

/* The elements of a JSON array of strings at p ("[" ... "]"). */
static int json_names(const char *p, qk_config_list *l)
{
    if (*p++ != '[')
        return -1;
    p += strspn(p, " \t\r\n");
    if (*p == ']')
        return 0;
    for (;;) {
        if (*p++ != '"')
            return -1;
        size_t len = strcspn(p, "\"\\");
        if (p[len] != '"' || list_add(l, p, len) != 0)
            return -1;
        p += len + 1;
        p += strspn(p, " \t\r\n");
        if (*p == ']')
            return 0;
        if (*p++ != ',')
            return -1;
        p += strspn(p, " \t\r\n");
    }
}

int qk_capture_configs_json(const char *text, qk_config_list *out)
{
    memset(out, 0, sizeof *out);
    /* the first "configs" that is a key: followed by a colon */
    for (const char *p = strstr(text, "\"configs\""); p; p = strstr(p + 1, "\"configs\"")) {
        const char *q = p + 9;
        q += strspn(q, " \t\r\n");
        if (*q != ':')
            continue;
        q += 1 + strspn(q + 1, " \t\r\n");
        return list_finish(out, json_names(q, out), "_saver_state.json");
    }
    return list_finish(out, -1, NULL);
}

/* The end of the line at p, and the start of the next one in *next. */
static size_t line_length(const char *p, const char **next)
{
    size_t n = strcspn(p, "\n");
    *next = p[n] ? p + n + 1 : p + n;
    while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return n;
}

/* The "- `NAME`" lines from p to the next heading. */
static int readme_names(const char *p, qk_config_list *l)
{
    for (const char *next; *p && *p != '#'; p = next) {
        size_t n = line_length(p, &next);
        if (n == 0)
            continue;
        if (n < 5 || strncmp(p, "- `", 3) != 0 || p[n - 1] != '`' ||
            list_add(l, p + 3, n - 4) != 0)
            return -1;
    }
    return 0;
}

int qk_capture_configs_readme(const char *text, qk_config_list *out)
{
    static const char heading[] = "## Captured Configs";
    memset(out, 0, sizeof *out);
    for (const char *p = text, *next; *p; p = next) {
        size_t n = line_length(p, &next);
        if (n == sizeof heading - 1 && strncmp(p, heading, n) == 0)
            return list_finish(out, readme_names(next, out), "README.md");
    }
    return list_finish(out, -1, NULL);
}

static int configs_from(const char *root, const char *name, qk_config_list *out,
                        int (*parse)(const char *text, qk_config_list *out))
{
    char *path = qk_path_join(root, name);
    uint8_t *data;
    size_t len;
    int rc = -1;
    if (qk_read_file(path, &data, &len, NULL) == 0) {
        rc = parse((const char *)data, out);
        free(data);
    }
    free(path);
    return rc;
}

int qk_capture_configs(const char *root, qk_config_list *out)
{
    memset(out, 0, sizeof *out);
    if (configs_from(root, "_saver_state.json", out, qk_capture_configs_json) == 0 ||
        configs_from(root, "README.md", out, qk_capture_configs_readme) == 0)
        return 0;
    return -1;
}

int qk_config_list_has(const qk_config_list *l, const char *name)
{
    return l->n > 0 && bsearch(name, l->names, (size_t)l->n, sizeof *l->names, cmp_name) != NULL;
}

int qk_source_record_value(const char *path, const char *key, char *out, size_t cap,
                           qk_err *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return qk_fail(err, "cannot read %s: %s", path, strerror(errno));
    char line[8192];
    size_t n = strlen(key);
    int rc = -1;
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, key, n) == 0 && line[n] == '\t') {
            line[strcspn(line, "\r\n")] = '\0';
            snprintf(out, cap, "%s", line + n + 1);
            rc = 0;
            break;
        }
    }
    fclose(fp);
    if (rc != 0)
        qk_fail(err, "source record has no '%s' line", key);
    return rc;
}
