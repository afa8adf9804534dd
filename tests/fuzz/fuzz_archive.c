/* Fuzz target: qk-archive verify, extract and list on an archive given as
 * bytes (gzip'ed tar or plain tar), through the library functions the
 * program calls.  Extraction goes into a fresh temporary directory that is
 * removed afterwards; nothing may appear beside it, verify and extract must
 * agree, and every problem must be one printable line. */
#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "qk/archive.h"

static char base[64]; /* holds "out", the extraction directory, and nothing else */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_base(void)
{
    nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Extraction happens in memory (/dev/shm) where there is one. */
static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    if (access("/dev/shm", W_OK) == 0)
        tmp = "/dev/shm";
    snprintf(base, sizeof base, "%s/qk-fuzz-archive.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    FUZZ_REQUIRE(mkdtemp(base) != NULL, "mkdtemp failed");
    atexit(remove_base);
}

static void check_problem(void *ctx, const char *entry, const char *problem)
{
    int *count = ctx;
    (*count)++;
    fuzz_check_text(problem, 4096);
    if (entry) {
        char *name = qk_archive_printable(entry);
        fuzz_note("%s: %s", name, problem);
        free(name);
    } else {
        fuzz_note("%s", problem);
    }
}

static void check_listed(void *ctx, const char *path, int64_t size, const char *problem)
{
    (void)ctx;
    (void)size;
    FUZZ_REQUIRE(path != NULL, "entry without a path");
    if (problem)
        fuzz_check_text(problem, 4096);
}

/* Only base/out may exist next to the extraction. */
static void check_base(void)
{
    DIR *d = opendir(base);
    FUZZ_REQUIRE(d != NULL, "the temporary directory is gone");
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        FUZZ_REQUIRE(!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
                         !strcmp(e->d_name, "out"),
                     "extraction wrote %s outside its directory", e->d_name);
    closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!base[0])
        setup();
    int reported = 0, verified = 0, extracted = 0;
    int problems = qk_archive_verify(data, size, check_problem, &reported, &verified);
    FUZZ_REQUIRE(problems == reported && (problems > 0 || verified >= 0), "verify count");
    int verify_ok = problems == 0;
    fuzz_note("verify: %d problems, %d files verified", problems, verified);

    char *out = qk_path_join(base, "out");
    char cwd[4096];
    FUZZ_REQUIRE(getcwd(cwd, sizeof cwd) != NULL, "getcwd failed");
    reported = 0;
    problems = qk_archive_extract(data, size, out, check_problem, &reported, &extracted);
    FUZZ_REQUIRE(problems == reported, "extract count");
    fuzz_note("extract: %d problems, %d files extracted", problems, extracted);
    char after[4096];
    FUZZ_REQUIRE(getcwd(after, sizeof after) && !strcmp(cwd, after), "working directory moved");
    FUZZ_REQUIRE((problems == 0) == verify_ok, "verify %s but extract %s",
                 verify_ok ? "passes" : "fails", problems ? "fails" : "passes");
    FUZZ_REQUIRE(problems > 0 || extracted == verified, "%d verified, %d extracted", verified,
                 extracted);
    check_base();
    remove_base();
    mkdir(base, 0700);
    free(out);

    reported = 0;
    problems = qk_archive_list(data, size, check_listed, check_problem, &reported);
    FUZZ_REQUIRE(problems == reported, "list count");
    return 0;
}
