/* Discovery of config directories in a revision and GQA pairing. */
#include "qk/revision.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int qk_parse_config_name(const char *name, int *layer, int *head, char *kind)
{
    const char *p = name;
    long vals[2];
    const char tags[2] = {'l', 'h'};
    for (int i = 0; i < 2; i++) {
        if (*p++ != tags[i] || !isdigit((unsigned char)*p))
            return -1;
        vals[i] = 0;
        for (int digits = 0; isdigit((unsigned char)*p); p++, digits++) {
            if (digits >= 4)
                return -1;
            vals[i] = vals[i] * 10 + (*p - '0');
        }
    }
    if ((*p != 'q' && *p != 'k') || p[1] != '\0')
        return -1;
    *layer = (int)vals[0];
    *head = (int)vals[1];
    *kind = *p;
    return 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Sorted names of the entries of dir (dot entries skipped). */
static int list_dir(const char *dir, char ***names, int *n, qk_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return qk_fail(err, "cannot read directory %s: %s", dir, strerror(errno));
    *names = NULL;
    *n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        *names = qk_realloc(*names, (size_t)(*n + 1) * sizeof **names);
        (*names)[(*n)++] = qk_strdup(e->d_name);
    }
    closedir(d);
    if (*n > 1)
        qsort(*names, (size_t)*n, sizeof **names, cmp_str);
    return 0;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static int count_config_dirs(const char *dir)
{
    char **names;
    int n, count = 0;
    if (list_dir(dir, &names, &n, NULL) != 0)
        return 0;
    int layer, head;
    char kind;
    for (int i = 0; i < n; i++)
        if (qk_parse_config_name(names[i], &layer, &head, &kind) == 0)
            count++;
    free_names(names, n);
    return count;
}

/* A commit as a ref holds it: one non-empty file name of printable ASCII
 * ('/', "." and ".." excluded), as the cache names its snapshots. */
static int is_commit_name(const char *text, size_t len)
{
    if (len == 0 || strlen(text) != len || strcmp(text, ".") == 0 || strcmp(text, "..") == 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] <= ' ' || text[i] > '~' || text[i] == '/')
            return 0;
    return 1;
}

/* A cache root "datasets--owner--name": refs/<revision> holds the commit
 * whose snapshot is the tree. */
static char *resolve_cache_root(const char *root, const char *revision, qk_err *err)
{
    char *refs = qk_path_join(root, "refs");
    char *ref = qk_path_join(refs, revision);
    free(refs);
    uint8_t *text;
    size_t len;
    qk_err e2;
    if (qk_read_file(ref, &text, &len, &e2) != 0) {
        qk_fail(err, "revision %s not in this cache (%s: %s)", revision, ref, e2.msg);
        free(ref);
        return NULL;
    }
    free(ref);
    while (len && isspace(text[len - 1]))
        text[--len] = '\0';
    /* the ref holds a commit: one name inside snapshots/, never a path */
    if (!is_commit_name((const char *)text, len)) {
        qk_fail(err, "revision %s: refs/%s does not hold a commit name", revision, revision);
        free(text);
        return NULL;
    }
    char *snapshots = qk_path_join(root, "snapshots");
    char *snap = qk_path_join(snapshots, (char *)text);
    free(snapshots);
    free(text);
    if (!is_dir(snap)) {
        qk_fail(err, "snapshot %s is missing", snap);
        free(snap);
        return NULL;
    }
    return snap;
}

/* The folder of the legacy layout, or of one dataset in a folder of
 * several (DATA=<dir> holds <dir>/<dataset id>/...): the sub-directory
 * named dataset when there is one, else the only sub-directory holding
 * configs. Several candidates and none named so is an error naming them:
 * picking one would load another dataset under the wrong name. */
static char *resolve_subfolder(const char *path, const char *dataset, qk_err *err)
{
    char **names;
    int n;
    if (list_dir(path, &names, &n, err) != 0)
        return NULL;
    int n_found = 0;
    char list[512] = "";
    char *found = NULL, *named = NULL;
    for (int i = 0; i < n; i++) {
        char *sub = qk_path_join(path, names[i]);
        int is_named = dataset && strcmp(names[i], dataset) == 0 && is_dir(sub);
        if (is_dir(sub) && count_config_dirs(sub) > 0) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", n_found ? ", " : "", names[i]);
            n_found++;
            if (!found)
                found = qk_strdup(sub);
            if (is_named)
                named = qk_strdup(sub);
        } else if (is_named) {
            qk_fail(err, "its folder %s holds no config directories (lLLhHHq / lLLhHHk)",
                    names[i]);
            n_found = -1;
        }
        free(sub);
        if (n_found < 0)
            break;
    }
    free_names(names, n);
    if (named) {
        free(found);
        return named;
    }
    if (n_found == 1)
        return found;
    free(found);
    if (n_found == 0)
        qk_fail(err, "no config directories (lLLhHHq / lLLhHHk) found");
    else if (n_found > 1)
        qk_fail(err, "%d folders hold configs (%s)%s%s%s: name one (DIR/<dataset>)", n_found,
                list, dataset ? " and none is named '" : "", dataset ? dataset : "",
                dataset ? "'" : "");
    return NULL;
}

char *qk_revision_resolve(const char *path, const char *revision, const char *dataset,
                          qk_err *err)
{
    if (!is_dir(path)) {
        qk_fail(err, "not a directory");
        return NULL;
    }
    if (revision && *revision)
        return resolve_cache_root(path, revision, err);
    if (count_config_dirs(path) > 0)
        return qk_strdup(path);
    return resolve_subfolder(path, dataset, err);
}

/* Collects the data files (their names ending in files->suffix) of one
 * config directory. */
static int scan_config(const char *dir, const qk_config_files *files, qk_config_file *c,
                       qk_err *err)
{
    char **names;
    int n;
    if (list_dir(dir, &names, &n, err) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (!has_suffix(names[i], files->suffix))
            continue;
        c->paths = qk_realloc(c->paths, (size_t)(c->n_paths + 1) * sizeof *c->paths);
        c->paths[c->n_paths++] = qk_path_join(dir, names[i]);
    }
    free_names(names, n);
    if (c->n_paths > 1)
        return qk_fail(err, "%s holds %d %s files (%s, %s%s); the capture tool writes "
                       "one per config, remove the stray copies", c->name, c->n_paths,
                       files->noun,
                       strrchr(c->paths[0], '/') + 1, strrchr(c->paths[1], '/') + 1,
                       c->n_paths > 2 ? ", ..." : "");
    return 0;
}

static int cmp_config(const void *pa, const void *pb)
{
    const qk_config_file *a = pa, *b = pb;
    if (a->layer != b->layer)
        return a->layer - b->layer;
    if (a->head != b->head)
        return a->head - b->head;
    return a->kind - b->kind;
}

const qk_config_files qk_parquet_config_files = {".parquet", "Parquet"};

int qk_revision_scan(const char *root, qk_revision *rev, qk_err *err)
{
    return qk_revision_scan_files(root, &qk_parquet_config_files, rev, err);
}

int qk_revision_scan_files(const char *root, const qk_config_files *files, qk_revision *rev,
                           qk_err *err)
{
    memset(rev, 0, sizeof *rev);
    rev->root = qk_strdup(root);
    char **names;
    int n;
    if (list_dir(root, &names, &n, err) != 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        qk_config_file c;
        memset(&c, 0, sizeof c);
        if (qk_parse_config_name(names[i], &c.layer, &c.head, &c.kind) != 0)
            continue;
        char *dir = qk_path_join(root, names[i]);
        if (!is_dir(dir)) {
            free(dir);
            continue;
        }
        snprintf(c.name, sizeof c.name, "l%02dh%02d%c", c.layer, c.head, c.kind);
        rc = scan_config(dir, files, &c, err);
        free(dir);
        if (rc == 0 && c.n_paths == 0) {
            if (rev->n_empty++ == 0) /* a directory without data is not a config */
                snprintf(rev->first_empty, sizeof rev->first_empty, "%s", names[i]);
            free(c.paths);
            continue;
        }
        rev->configs = qk_realloc(rev->configs, (size_t)(rev->n + 1) * sizeof c);
        rev->configs[rev->n++] = c;
    }
    free_names(names, n);
    if (rc == 0) {
        if (rev->n > 1)
            qsort(rev->configs, (size_t)rev->n, sizeof *rev->configs, cmp_config);
        for (int i = 1; i < rev->n && rc == 0; i++)
            if (cmp_config(&rev->configs[i - 1], &rev->configs[i]) == 0)
                rc = qk_fail(err, "config %s appears twice (differently padded names)",
                             rev->configs[i].name);
    }
    if (rc != 0)
        qk_revision_free(rev);
    return rc;
}

void qk_revision_free(qk_revision *rev)
{
    for (int i = 0; i < rev->n; i++) {
        for (int j = 0; j < rev->configs[i].n_paths; j++)
            free(rev->configs[i].paths[j]);
        free(rev->configs[i].paths);
    }
    free(rev->configs);
    free(rev->root);
    memset(rev, 0, sizeof *rev);
}

static int find_config(const qk_revision *rev, int layer, int head, char kind)
{
    for (int i = 0; i < rev->n; i++)
        if (rev->configs[i].layer == layer && rev->configs[i].head == head &&
            rev->configs[i].kind == kind)
            return i;
    return -1;
}

/* Checks a config against the model's shape. */
static int check_shape(const qk_config_file *c, const qk_dataset *ds, qk_err *err)
{
    int heads = c->kind == 'q' ? ds->n_q_heads : ds->n_kv_heads;
    if (c->layer >= ds->n_layers)
        return qk_fail(err, "%s: layer %d outside the model's %d layers", c->name,
                       c->layer, ds->n_layers);
    if (c->head >= heads)
        return qk_fail(err, "%s: head %d outside the model's %d %s heads", c->name,
                       c->head, heads, c->kind == 'q' ? "query" : "key");
    return 0;
}

int qk_revision_pair(const qk_revision *rev, const qk_dataset *ds,
                     qk_head_pair **pairs, int *n_pairs, qk_err *err)
{
    *pairs = NULL;
    *n_pairs = 0;
    for (int i = 0; i < rev->n; i++) {
        const qk_config_file *c = &rev->configs[i];
        if (check_shape(c, ds, err) != 0)
            goto fail;
        if (c->kind != 'q')
            continue;
        int kv = qk_dataset_kv_head(ds, c->head);
        int k = find_config(rev, c->layer, kv, 'k');
        if (k < 0) /* a partial download without the key file: left out */
            continue;
        *pairs = qk_realloc(*pairs, (size_t)(*n_pairs + 1) * sizeof **pairs);
        (*pairs)[(*n_pairs)++] = (qk_head_pair){i, k};
    }
    return 0;
fail:
    free(*pairs);
    *pairs = NULL;
    *n_pairs = 0;
    return -1;
}
