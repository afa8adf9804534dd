/* Fuzz target: the capture metadata a download carries, as the source
 * record reads it (src/lib/io/source.c): the input is written both as
 * _saver_state.json and as README.md of a revision directory, then the
 * capture revision, the synthetic-source test and the configs the capture
 * lists are read from each, and the directory's source record is written
 * as qk-load --source-record writes it. The revision must be one
 * printable, non-empty line; a config list is config names, sorted and
 * distinct, or empty. */
#include <ftw.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "qk/revision.h"
#include "qk/source.h"

static char dir[64];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_dir(void)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void put(const char *name, const uint8_t *data, size_t size)
{
    char *path = qk_path_join(dir, name);
    FILE *fp = fopen(path, "wb");
    FUZZ_REQUIRE(fp != NULL, "cannot write %s", path);
    fwrite(data, 1, size, fp);
    fclose(fp);
    free(path);
}

static void check_revision(void)
{
    char rev[256];
    qk_source_capture_revision(dir, rev, sizeof rev);
    size_t n = strnlen(rev, sizeof rev);
    FUZZ_REQUIRE(n > 0 && n < sizeof rev, "empty or unterminated revision");
    for (size_t i = 0; i < n; i++)
        FUZZ_REQUIRE((unsigned char)rev[i] >= 0x20 && rev[i] != 0x7f && rev[i] != '\t',
                     "control byte 0x%02x in revision", (unsigned char)rev[i]);
    fuzz_note("revision %s, synthetic %d", rev, qk_source_is_synthetic_capture(dir));
}

static void check_list(int rc, qk_config_list *l, const char *what)
{
    FUZZ_REQUIRE(rc == 0 || (l->n == 0 && l->names == NULL), "%s: -1 with a list", what);
    FUZZ_REQUIRE(rc != 0 || (l->n > 0 && l->from != NULL), "%s: an empty list", what);
    for (int i = 0; i < l->n; i++) {
        int layer, head;
        char kind;
        FUZZ_REQUIRE(qk_parse_config_name(l->names[i], &layer, &head, &kind) == 0,
                     "%s: '%s' is no config name", what, l->names[i]);
        FUZZ_REQUIRE(i == 0 || strcmp(l->names[i - 1], l->names[i]) < 0,
                     "%s: not sorted and distinct at '%s'", what, l->names[i]);
        FUZZ_REQUIRE(qk_config_list_has(l, l->names[i]), "%s: '%s' not found", what,
                     l->names[i]);
    }
    if (rc == 0)
        fuzz_note("%s: %d configs listed in %s", what, l->n, l->from);
    qk_config_list_free(l);
}

/* The configs listed by the input as either file's text, and by the
 * directory as it is. */
static void check_configs(const uint8_t *data, size_t size)
{
    char *text = qk_malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    qk_config_list l;
    check_list(qk_capture_configs_json(text, &l), &l, "json");
    check_list(qk_capture_configs_readme(text, &l), &l, "readme");
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/qk-fuzz-capture-XXXXXX");
        FUZZ_REQUIRE(mkdtemp(dir) != NULL, "mkdtemp failed");
        atexit(remove_dir);
    }
    char *readme = qk_path_join(dir, "README.md"), *state = qk_path_join(dir, "_saver_state.json");
    qk_config_list l;
    check_configs(data, size);
    put("_saver_state.json", data, size);
    unlink(readme);
    check_revision();
    check_list(qk_capture_configs(dir, &l), &l, "state");
    unlink(state);
    put("README.md", data, size);
    check_revision();
    check_list(qk_capture_configs(dir, &l), &l, "readme file");
    char *record = qk_path_join(dir, "source.txt");
    qk_source_spec spec = {"fuzz", dir, NULL, "/dev/null", NULL};
    qk_err err;
    if (qk_source_write_record(&spec, record, &err) != 0)
        fuzz_check_message(&err);
    unlink(readme);
    free(record);
    free(readme);
    free(state);
    return 0;
}
