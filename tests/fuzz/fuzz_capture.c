/* Fuzz target: the capture metadata a download carries, as the source
 * record reads it (src/lib/source.c): the input is written both as
 * _saver_state.json and as README.md of a revision directory, then the
 * capture revision and the synthetic-source test are read from each, and
 * the directory's source record is written as qk-load --source-record
 * writes it. The revision must be one printable, non-empty line. */
#include <ftw.h>
#include <sys/stat.h>

#include "fuzz.h"
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/qk-fuzz-capture-XXXXXX");
        FUZZ_REQUIRE(mkdtemp(dir) != NULL, "mkdtemp failed");
        atexit(remove_dir);
    }
    char *readme = qk_path_join(dir, "README.md"), *state = qk_path_join(dir, "_saver_state.json");
    put("_saver_state.json", data, size);
    unlink(readme);
    check_revision();
    unlink(state);
    put("README.md", data, size);
    check_revision();
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
