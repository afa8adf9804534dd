/* Fuzz target: reading a downloaded revision (src/lib/io/revision.c), the
 * parts that come from files and names a user downloads.  The input is
 * lines: the first is the content of refs/main in a Hugging Face cache
 * root, the others are entries of the snapshot it should name (a config
 * directory holding data.parquet, or with a leading '!' an empty
 * directory; "model/l00h00q" nests one level, the legacy layout).  The tree is built in a temporary directory, then resolved,
 * scanned and paired as qk-load does; every line is also parsed as a config
 * name. */
#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "qk/revision.h"

#define SNAPSHOT "0123abcd"

static char base[64]; /* the cache root: base/refs, base/snapshots */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void remove_base(void)
{
    remove_tree(base);
}

/* A name usable as one directory entry. */
static int plain_name(const char *name)
{
    return *name && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
           strlen(name) < 200;
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *fp = fopen(path, "wb");
    FUZZ_REQUIRE(fp != NULL, "cannot write %s", path);
    fwrite(text, 1, len, fp);
    fclose(fp);
}

/* An entry of the snapshot: a directory (one level of nesting allowed,
 * "model/l00h00q" for the legacy layout) holding data.parquet, or empty. */
static void add_entry(const char *snapshot, const char *line)
{
    int empty = line[0] == '!';
    char *name = qk_strdup(line + empty);
    char *slash = strchr(name, '/');
    if (slash)
        *slash = '\0';
    if (!plain_name(name) || (slash && !plain_name(slash + 1))) {
        free(name);
        return;
    }
    char *dir = qk_path_join(snapshot, name);
    int made = mkdir(dir, 0755) == 0 || slash;
    if (slash) {
        char *sub = qk_path_join(dir, slash + 1);
        free(dir);
        dir = sub;
        made = mkdir(dir, 0755) == 0;
    }
    if (made && !empty) {
        char *file = qk_path_join(dir, "data.parquet");
        write_file(file, "", 0);
        free(file);
    }
    free(dir);
    free(name);
}

/* A valid config name is canonical after one round trip. */
static void check_config_name(const char *line)
{
    int layer, head;
    char kind;
    if (qk_parse_config_name(line, &layer, &head, &kind) != 0)
        return;
    FUZZ_REQUIRE(layer >= 0 && head >= 0 && (kind == 'q' || kind == 'k'), "%s", line);
    char canon[32];
    snprintf(canon, sizeof canon, "l%02dh%02d%c", layer, head, kind);
    int l2, h2;
    char k2;
    FUZZ_REQUIRE(qk_parse_config_name(canon, &l2, &h2, &k2) == 0 && l2 == layer && h2 == head &&
                     k2 == kind,
                 "%s -> %s", line, canon);
}

static void check_revision(const char *root)
{
    qk_revision rev;
    qk_err err;
    if (qk_revision_scan(root, &rev, &err) != 0) {
        fuzz_check_message(&err);
        return;
    }
    fuzz_note("scan: %d configs", rev.n);
    for (int i = 0; i < rev.n; i++) {
        FUZZ_REQUIRE(rev.configs[i].n_paths > 0, "config without files");
        if (i > 0) {
            const qk_config_file *a = &rev.configs[i - 1], *b = &rev.configs[i];
            FUZZ_REQUIRE(a->layer < b->layer || (a->layer == b->layer && a->head < b->head) ||
                             (a->layer == b->layer && a->head == b->head && a->kind < b->kind),
                         "configs not sorted or repeated");
        }
    }
    qk_dataset ds = {.id = "fuzz", .n_layers = 4, .n_q_heads = 8, .n_kv_heads = 2,
                     .head_dim = 16, .context_length = 1024, .bucket_size = 64};
    qk_head_pair *pairs;
    int n_pairs;
    if (qk_revision_pair(&rev, &ds, &pairs, &n_pairs, &err) == 0) {
        for (int i = 0; i < n_pairs; i++)
            FUZZ_REQUIRE(pairs[i].q >= 0 && pairs[i].q < rev.n && pairs[i].k >= 0 &&
                             pairs[i].k < rev.n && rev.configs[pairs[i].k].kind == 'k',
                         "pair %d", i);
        free(pairs);
    } else {
        fuzz_check_message(&err);
    }
    qk_revision_free(&rev);
}

/* The tree lives in memory (/dev/shm) where there is one: each input
 * builds and removes it, ten times faster than on a disk. */
static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    if (access("/dev/shm", W_OK) == 0)
        tmp = "/dev/shm";
    snprintf(base, sizeof base, "%s/qk-fuzz-revision.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    FUZZ_REQUIRE(mkdtemp(base) != NULL, "mkdtemp failed");
    atexit(remove_base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!base[0])
        setup();
    char *text = qk_malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    char *refs = qk_path_join(base, "refs");
    char *snapshots = qk_path_join(base, "snapshots");
    char *snapshot = qk_path_join(snapshots, SNAPSHOT);
    mkdir(refs, 0755);
    mkdir(snapshots, 0755);
    mkdir(snapshot, 0755);
    char *ref = qk_path_join(refs, "main");
    char *nl = strchr(text, '\n');
    size_t ref_len = nl ? (size_t)(nl - text) + 1 : size;
    write_file(ref, text, ref_len);
    for (char *line = nl ? nl + 1 : NULL; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        add_entry(snapshot, line);
        check_config_name(line);
        line = end ? end + 1 : NULL;
    }
    qk_err err;
    char *root = qk_revision_resolve(base, "main", NULL, &err);
    if (root) {
        /* the ref names a snapshot of this cache, nothing outside it */
        size_t n = strlen(snapshots);
        FUZZ_REQUIRE(strncmp(root, snapshots, n) == 0 && root[n] == '/' && root[n + 1] &&
                         !strchr(root + n + 1, '/'),
                     "refs/main leads to %s", root);
        fuzz_note("refs/main: %s", root + strlen(base) + 1);
        check_revision(root);
        free(root);
    } else {
        fuzz_check_message(&err);
    }
    root = qk_revision_resolve(snapshot, NULL, NULL, &err);
    if (root) {
        check_revision(root);
        free(root);
    } else
        fuzz_check_message(&err);
    remove_tree(base);
    mkdir(base, 0700);
    free(ref);
    free(snapshot);
    free(snapshots);
    free(refs);
    free(text);
    return 0;
}
