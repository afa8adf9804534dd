/* Tests of the archive pieces: SHA-256 through libarchive against the FIPS
 * 180-2 examples, the MANIFEST text (write, parse back, and every malformed
 * variant refused with its line), and the path and parameter rules. */
#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <string.h>

#include "qk/archive.h"
#include "testutil.h"

/* ---- SHA-256 ------------------------------------------------------------- */

START_TEST(test_sha256_known_values)
{
    char hex[QK_SHA256_HEX_LEN + 1];
    qk_err err;
    ck_assert_int_eq(qk_sha256_buffer("", 0, hex, &err), 0);
    ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    ck_assert_int_eq(qk_sha256_buffer("abc", 3, hex, &err), 0);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    ck_assert_int_eq(qk_sha256_buffer(two_blocks, strlen(two_blocks), hex, &err), 0);
    ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

START_TEST(test_sha256_streamed_million_a)
{
    /* one million 'a' fed in uneven pieces */
    static char chunk[7919];
    memset(chunk, 'a', sizeof chunk);
    qk_sha256 h;
    qk_err err;
    ck_assert_int_eq(qk_sha256_begin(&h, 1000000, &err), 0);
    size_t left = 1000000;
    while (left > 0) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        ck_assert_int_eq(qk_sha256_update(&h, chunk, n, &err), 0);
        left -= n;
    }
    char hex[QK_SHA256_HEX_LEN + 1];
    ck_assert_int_eq(qk_sha256_end(&h, hex, &err), 0);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

START_TEST(test_sha256_size_must_match)
{
    qk_sha256 h;
    qk_err err;
    char hex[QK_SHA256_HEX_LEN + 1];
    ck_assert_int_eq(qk_sha256_begin(&h, 4, &err), 0);
    ck_assert_int_eq(qk_sha256_update(&h, "abc", 3, &err), 0);
    ck_assert_int_eq(qk_sha256_end(&h, hex, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "3 bytes"));
    ck_assert_int_eq(qk_sha256_begin(&h, 2, &err), 0);
    ck_assert_int_eq(qk_sha256_update(&h, "abc", 3, &err), -1);
    qk_sha256_discard(&h); /* already freed: harmless */
}
END_TEST

/* ---- MANIFEST ------------------------------------------------------------ */

static const char *digest_a = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb";
static const char *digest_b = "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d";

static qk_manifest sample(void)
{
    qk_manifest m = {0};
    m.suite_version = strdup("v1.2-3-gabc");
    m.n_params = 3;
    m.params = malloc(3 * sizeof *m.params);
    m.params[0] = strdup("SEED=20260215");
    m.params[1] = strdup("DATASETS=a b");
    m.params[2] = strdup("DATA=");
    m.n_files = 2;
    m.files = calloc(2, sizeof *m.files);
    m.files[0] = (qk_manifest_file){strdup("results/x y.csv"), 1, ""};
    m.files[1] = (qk_manifest_file){strdup("figures/01/figure.png"), 12345, ""};
    strcpy(m.files[0].sha256, digest_a);
    strcpy(m.files[1].sha256, digest_b);
    return m;
}

static const char *sample_text =
    "qkreport-manifest 1\n"
    "suite-version v1.2-3-gabc\n"
    "param DATA=\n"
    "param DATASETS=a b\n"
    "param SEED=20260215\n"
    "files 2\n"
    "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d 12345 figures/01/figure.png\n"
    "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb 1 results/x y.csv\n";

START_TEST(test_manifest_format_sorted)
{
    qk_manifest m = sample();
    qk_err err;
    ck_assert_int_eq(qk_manifest_normalize(&m, &err), 0);
    size_t len;
    char *text = qk_manifest_format(&m, &len);
    ck_assert_str_eq(text, sample_text);
    ck_assert_uint_eq(len, strlen(sample_text));
    free(text);
    qk_manifest_free(&m);
}
END_TEST

START_TEST(test_manifest_parse_round_trip)
{
    qk_manifest m;
    qk_err err;
    ck_assert_int_eq(qk_manifest_parse(sample_text, strlen(sample_text), &m, &err), 0);
    ck_assert_str_eq(m.suite_version, "v1.2-3-gabc");
    ck_assert_int_eq(m.n_params, 3);
    ck_assert_str_eq(m.params[1], "DATASETS=a b");
    ck_assert_int_eq(m.n_files, 2);
    ck_assert_int_eq(qk_manifest_find(&m, "results/x y.csv"), 1);
    ck_assert_int_eq(m.files[0].size, 12345);
    ck_assert_int_eq(qk_manifest_find(&m, "results/x"), -1);
    size_t len;
    char *again = qk_manifest_format(&m, &len);
    ck_assert_str_eq(again, sample_text);
    free(again);
    qk_manifest_free(&m);
}
END_TEST

/* Replaces the first occurrence of old in the sample text and expects the
 * parser to refuse the result with a message containing want. */
static void expect_refused(const char *old, const char *new_text, const char *want)
{
    const char *at = strstr(sample_text, old);
    ck_assert_ptr_nonnull(at);
    size_t head = (size_t)(at - sample_text);
    char *text = malloc(strlen(sample_text) + strlen(new_text) + 1);
    memcpy(text, sample_text, head);
    strcpy(text + head, new_text);
    strcat(text, at + strlen(old));
    qk_manifest m;
    qk_err err;
    ck_assert_msg(qk_manifest_parse(text, strlen(text), &m, &err) == -1, "accepted: %s", text);
    ck_assert_msg(strstr(err.msg, want) != NULL, "message '%s' lacks '%s'", err.msg, want);
    free(text);
}

START_TEST(test_manifest_refuses_malformed)
{
    expect_refused("qkreport-manifest 1", "qkreport-manifest 2", "line 1");
    expect_refused("suite-version ", "version ", "line 2");
    expect_refused("param DATA=\nparam DATASETS=a b\n", "param DATASETS=a b\nparam DATA=\n",
                   "line 4: parameters not sorted");
    expect_refused("param SEED=20260215", "param DATA=x", "line 5");
    expect_refused("param SEED=20260215", "param Z!=1", "KEY must");
    expect_refused("files 2", "files 3", "'files 3' but 2 lines follow");
    expect_refused("files 2", "files 1", "line 8: more lines");
    expect_refused("files 2", "files 02", "line 6");
    expect_refused("12345 figures", "-5 figures", "line 7");
    expect_refused("12345 figures", "012345 figures", "line 7");
    expect_refused("3e23e8", "3E23E8", "not 64 lowercase hex");
    expect_refused("figures/01/figure.png", "results/x y.csv", "line 8: paths not sorted");
    expect_refused("figures/01/figure.png", "../figure.png", "'..' component");
    expect_refused("figures/01/figure.png", "/figure.png", "absolute path");
    expect_refused("figures/01/figure.png", "MANIFEST", "reserved");
    expect_refused("results/x y.csv\n", "results/x y.csv", "final newline");
}
END_TEST

START_TEST(test_manifest_without_files)
{
    const char *text = "qkreport-manifest 1\nsuite-version 0.1.0\nfiles 0\n";
    qk_manifest m;
    qk_err err;
    ck_assert_int_eq(qk_manifest_parse(text, strlen(text), &m, &err), 0);
    ck_assert_int_eq(m.n_params, 0);
    ck_assert_int_eq(m.n_files, 0);
    ck_assert_int_eq(qk_manifest_find(&m, "x"), -1);
    qk_manifest_free(&m);
}
END_TEST

START_TEST(test_manifest_normalize_refuses_repeats)
{
    qk_manifest m = sample();
    free(m.params[0]);
    m.params[0] = strdup("DATA=other");
    qk_err err;
    ck_assert_int_eq(qk_manifest_normalize(&m, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "DATA given twice"));
    qk_manifest_free(&m);
    m = sample();
    free(m.files[1].path);
    m.files[1].path = strdup("results/x y.csv");
    ck_assert_int_eq(qk_manifest_normalize(&m, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "listed twice"));
    qk_manifest_free(&m);
}
END_TEST

/* ---- reading archives from memory ----------------------------------------- */

/* A gzip'ed tar of MANIFEST and three files, written with libarchive as
 * qk-archive create writes it (malloc'ed). */
static const char *const member_paths[3] = {"a.txt", "b/data.bin", "c.txt"};

static uint8_t *small_archive(size_t *len)
{
    static char data[3][3000];
    size_t sizes[3] = {12, sizeof data[1], 0};
    memcpy(data[0], "first file\n", 12);
    uint32_t x = 2463534242u; /* xorshift32: bytes gzip cannot shrink */
    for (size_t i = 0; i < sizeof data[1]; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data[1][i] = (char)(x >> 24);
    }
    qk_manifest m = {0};
    m.suite_version = strdup("t");
    m.n_files = 3;
    m.files = calloc(3, sizeof *m.files);
    qk_err err;
    for (int i = 0; i < 3; i++) {
        m.files[i].path = strdup(member_paths[i]);
        m.files[i].size = (int64_t)sizes[i];
        ck_assert_int_eq(qk_sha256_buffer(data[i], sizes[i], m.files[i].sha256, &err), 0);
    }
    size_t text_len;
    char *text = qk_manifest_format(&m, &text_len);
    size_t cap = 64 * 1024;
    uint8_t *out = malloc(cap);
    struct archive *a = archive_write_new();
    archive_write_add_filter_gzip(a);
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_in_last_block(a, 1);
    ck_assert_int_eq(archive_write_open_memory(a, out, cap, len), ARCHIVE_OK);
    for (int i = -1; i < 3; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, i < 0 ? "MANIFEST" : member_paths[i]);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, (la_int64_t)(i < 0 ? text_len : sizes[i]));
        ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
        archive_write_data(a, i < 0 ? text : data[i], i < 0 ? text_len : sizes[i]);
        archive_entry_free(e);
    }
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    free(text);
    qk_manifest_free(&m);
    return out;
}

typedef struct problems {
    int n;
    char first_entry[64];
} problems;

static void collect(void *ctx, const char *entry, const char *problem)
{
    problems *p = ctx;
    ck_assert_ptr_null(strchr(problem, '\n'));
    if (p->n++ == 0)
        snprintf(p->first_entry, sizeof p->first_entry, "%s", entry ? entry : "");
}

START_TEST(test_verify_from_memory)
{
    size_t len;
    uint8_t *gz = small_archive(&len);
    problems p = {0};
    int verified;
    ck_assert_int_eq(qk_archive_verify(gz, len, collect, &p, &verified), 0);
    ck_assert_int_eq(verified, 3);
    /* every cut of the gzip'ed archive is damage, named at its member:
     * MANIFEST up front, the 3000 random bytes of b/data.bin in the middle */
    int named_data = 0;
    for (size_t cut = 0; cut < len; cut++) {
        memset(&p, 0, sizeof p);
        ck_assert_int_eq(qk_archive_verify(gz, cut, collect, &p, &verified), p.n);
        ck_assert_msg(p.n == 1, "cut at %zu: %d problems", cut, p.n);
        named_data += strcmp(p.first_entry, "b/data.bin") == 0;
        if (cut >= 2 && cut < 100) /* one byte is not yet gzip */
            ck_assert_msg(strcmp(p.first_entry, "MANIFEST") == 0, "cut %zu: '%s'", cut, p.first_entry);
    }
    ck_assert_int_gt(named_data, 1000);
    free(gz);
}
END_TEST

/* ---- paths and parameters ------------------------------------------------ */

START_TEST(test_path_rules)
{
    ck_assert_ptr_null(qk_archive_path_problem("results/study/qk.csv"));
    ck_assert_ptr_null(qk_archive_path_problem("a..b/.hidden/x y"));
    ck_assert_ptr_null(qk_archive_path_problem("caf\xc3\xa9"));
    ck_assert_str_eq(qk_archive_path_problem(""), "empty path");
    ck_assert_str_eq(qk_archive_path_problem("/etc/passwd"), "absolute path");
    ck_assert_str_eq(qk_archive_path_problem(".."), "'..' component in path");
    ck_assert_str_eq(qk_archive_path_problem("a/../b"), "'..' component in path");
    ck_assert_str_eq(qk_archive_path_problem("a/.."), "'..' component in path");
    ck_assert_str_eq(qk_archive_path_problem("./a"), "'.' component in path");
    ck_assert_ptr_nonnull(strstr(qk_archive_path_problem("a//b"), "empty component"));
    ck_assert_ptr_nonnull(strstr(qk_archive_path_problem("a/"), "trailing"));
    ck_assert_ptr_nonnull(strstr(qk_archive_path_problem("a\nb"), "control"));
    ck_assert_ptr_nonnull(strstr(qk_archive_path_problem("a\xff"), "UTF-8"));
    ck_assert_ptr_nonnull(strstr(qk_archive_path_problem("a\xc0\xaf"), "UTF-8"));    /* overlong '/' */
    ck_assert_ptr_nonnull(strstr(qk_archive_path_problem("a\xed\xa0\x80"), "UTF-8")); /* surrogate */
}
END_TEST

START_TEST(test_param_rules)
{
    ck_assert_ptr_null(qk_archive_param_problem("SEED=1"));
    ck_assert_ptr_null(qk_archive_param_problem("DATA="));
    ck_assert_ptr_null(qk_archive_param_problem("_x.y-z=a=b c"));
    ck_assert_ptr_null(qk_archive_param_problem("figure-models.qk-pca/06=llama3.2-3b"));
    ck_assert_ptr_nonnull(qk_archive_param_problem("/x=1"));
    ck_assert_ptr_nonnull(qk_archive_param_problem("SEED"));
    ck_assert_ptr_nonnull(qk_archive_param_problem("=1"));
    ck_assert_ptr_nonnull(qk_archive_param_problem("1X=1"));
    ck_assert_ptr_nonnull(qk_archive_param_problem("A B=1"));
    ck_assert_ptr_nonnull(qk_archive_param_problem("A=1\n2"));
    ck_assert_ptr_null(qk_archive_version_problem("v1-dirty"));
    ck_assert_ptr_nonnull(qk_archive_version_problem(""));
    ck_assert_ptr_nonnull(qk_archive_version_problem("v1\n"));
}
END_TEST

static Suite *archive_suite(void)
{
    Suite *s = suite_create("archive");
    TCase *sha = tcase_create("sha256");
    tcase_add_test(sha, test_sha256_known_values);
    tcase_add_test(sha, test_sha256_streamed_million_a);
    tcase_add_test(sha, test_sha256_size_must_match);
    suite_add_tcase(s, sha);
    TCase *manifest = tcase_create("manifest");
    tcase_add_test(manifest, test_manifest_format_sorted);
    tcase_add_test(manifest, test_manifest_parse_round_trip);
    tcase_add_test(manifest, test_manifest_refuses_malformed);
    tcase_add_test(manifest, test_manifest_without_files);
    tcase_add_test(manifest, test_manifest_normalize_refuses_repeats);
    suite_add_tcase(s, manifest);
    TCase *reading = tcase_create("reading");
    tcase_add_test(reading, test_verify_from_memory);
    suite_add_tcase(s, reading);
    TCase *rules = tcase_create("rules");
    tcase_add_test(rules, test_path_rules);
    tcase_add_test(rules, test_param_rules);
    suite_add_tcase(s, rules);
    return s;
}

int main(void)
{
    return qk_test_run(archive_suite());
}
