/* Fuzz target: the MANIFEST parser of qk-archive on arbitrary bytes.  The
 * format is canonical, so a MANIFEST that parses must be written back to
 * the same bytes, and every file in it must be found by its path. */
#include "fuzz.h"
#include "qk/archive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qk_manifest m;
    qk_err err;
    if (qk_manifest_parse((const char *)data, size, &m, &err) != 0) {
        fuzz_check_message(&err);
        return 0;
    }
    fuzz_note("manifest: %d params, %d files", m.n_params, m.n_files);
    size_t len;
    char *text = qk_manifest_format(&m, &len);
    FUZZ_REQUIRE(len == size && memcmp(text, data, size) == 0,
                 "MANIFEST of %zu bytes written back as %zu different bytes", size, len);
    free(text);
    for (int i = 0; i < m.n_files; i++) {
        FUZZ_REQUIRE(qk_archive_path_problem(m.files[i].path) == NULL, "unsafe path accepted");
        FUZZ_REQUIRE(qk_manifest_find(&m, m.files[i].path) == i, "file %d not found", i);
    }
    qk_manifest_free(&m);
    return 0;
}
