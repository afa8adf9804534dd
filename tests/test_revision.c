/* Config discovery in a revision directory and GQA pairing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qk/revision.h"
#include "qk/source.h"
#include "testutil.h"

static char root[256];

/* A fresh empty directory under build/tests/tmp. */
static void fresh_dir(const char *name)
{
    snprintf(root, sizeof root, "build/tests/tmp/rev-%s", name);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(qk_mkdirs(root, NULL), 0);
}

static void touch_config(const char *base, const char *config)
{
    char dir[512], file[600];
    snprintf(dir, sizeof dir, "%s/%s", base, config);
    ck_assert_int_eq(qk_mkdirs(dir, NULL), 0);
    snprintf(file, sizeof file, "%s/data.parquet", dir);
    FILE *fp = fopen(file, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("PAR1", fp);
    fclose(fp);
}

static qk_dataset shape(int layers, int nq, int nkv)
{
    qk_dataset d;
    memset(&d, 0, sizeof d);
    snprintf(d.id, sizeof d.id, "shape");
    d.n_layers = layers;
    d.n_q_heads = nq;
    d.n_kv_heads = nkv;
    d.head_dim = 16;
    d.context_length = 4096;
    d.bucket_size = 256;
    return d;
}

START_TEST(config_names)
{
    int l, h;
    char k;
    ck_assert_int_eq(qk_parse_config_name("l03h07q", &l, &h, &k), 0);
    ck_assert(l == 3 && h == 7 && k == 'q');
    ck_assert_int_eq(qk_parse_config_name("l3h123k", &l, &h, &k), 0);
    ck_assert(l == 3 && h == 123 && k == 'k');
    ck_assert_int_eq(qk_parse_config_name("l03h07", &l, &h, &k), -1);
    ck_assert_int_eq(qk_parse_config_name("l03h07qq", &l, &h, &k), -1);
    ck_assert_int_eq(qk_parse_config_name("L03h07q", &l, &h, &k), -1);
    ck_assert_int_eq(qk_parse_config_name("lh07q", &l, &h, &k), -1);
    ck_assert_int_eq(qk_parse_config_name("l03h07v", &l, &h, &k), -1);
}
END_TEST

/* Every query head of every layer pairs with key head q / group. */
static void check_group(int nq, int nkv)
{
    char name[64];
    snprintf(name, sizeof name, "group-%d-%d", nq, nkv);
    fresh_dir(name);
    qk_dataset d = shape(2, nq, nkv);
    char config[32];
    for (int layer = 0; layer < 2; layer++) {
        for (int h = 0; h < nq; h++) {
            snprintf(config, sizeof config, "l%02dh%02dq", layer, h);
            touch_config(root, config);
        }
        for (int h = 0; h < nkv; h++) {
            snprintf(config, sizeof config, "l%02dh%02dk", layer, h);
            touch_config(root, config);
        }
    }
    qk_revision rev;
    qk_err err;
    ck_assert_msg(qk_revision_scan(root, &rev, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(rev.n, 2 * (nq + nkv));
    qk_head_pair *pairs;
    int n;
    ck_assert_msg(qk_revision_pair(&rev, &d, &pairs, &n, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(n, 2 * nq);
    for (int i = 0; i < n; i++) {
        const qk_config_file *q = &rev.configs[pairs[i].q], *k = &rev.configs[pairs[i].k];
        ck_assert_int_eq(q->kind, 'q');
        ck_assert_int_eq(k->kind, 'k');
        ck_assert_int_eq(q->layer, k->layer);
        ck_assert_int_eq(k->head, q->head / (nq / nkv));
    }
    free(pairs);
    qk_revision_free(&rev);
}

START_TEST(gqa_groups_1_2_3_4_5)
{
    check_group(8, 8);
    check_group(16, 8);
    check_group(24, 8);
    check_group(32, 8);
    check_group(40, 8);
}
END_TEST

START_TEST(missing_key_head_is_left_out)
{
    fresh_dir("missing-key");
    touch_config(root, "l00h05q"); /* key head 1: missing */
    touch_config(root, "l00h02q"); /* key head 0 */
    touch_config(root, "l00h00k");
    qk_dataset d = shape(2, 24, 8);
    qk_revision rev;
    qk_err err;
    ck_assert_int_eq(qk_revision_scan(root, &rev, &err), 0);
    qk_head_pair *pairs;
    int n;
    ck_assert_int_eq(qk_revision_pair(&rev, &d, &pairs, &n, &err), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(rev.configs[pairs[0].q].name, "l00h02q");
    ck_assert_str_eq(rev.configs[pairs[0].k].name, "l00h00k");
    free(pairs);
    qk_revision_free(&rev);
}
END_TEST

START_TEST(heads_outside_the_shape_are_errors)
{
    fresh_dir("shape");
    touch_config(root, "l00h16q");
    touch_config(root, "l00h08k");
    qk_dataset d = shape(2, 16, 8);
    qk_revision rev;
    qk_err err;
    ck_assert_int_eq(qk_revision_scan(root, &rev, &err), 0);
    qk_head_pair *pairs;
    int n;
    ck_assert_int_eq(qk_revision_pair(&rev, &d, &pairs, &n, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "outside the model's 8 key heads"));
    qk_revision_free(&rev);
}
END_TEST

START_TEST(scan_skips_dot_dirs_and_other_files)
{
    fresh_dir("skip");
    touch_config(root, "l00h00q");
    touch_config(root, "l00h00k");
    touch_config(root, ".cache/l00h01q");
    char path[512];
    snprintf(path, sizeof path, "%s/l00h02q", root);
    qk_mkdirs(path, NULL); /* a config directory without Parquet data */
    snprintf(path, sizeof path, "%s/README.md", root);
    FILE *fp = fopen(path, "w");
    fclose(fp);
    qk_revision rev;
    qk_err err;
    ck_assert_int_eq(qk_revision_scan(root, &rev, &err), 0);
    ck_assert_int_eq(rev.n, 2);
    ck_assert_str_eq(rev.configs[0].name, "l00h00k");
    ck_assert_str_eq(rev.configs[1].name, "l00h00q");
    ck_assert_int_eq(rev.n_empty, 1); /* counted for the warning */
    ck_assert_str_eq(rev.first_empty, "l00h02q");
    qk_revision_free(&rev);
    /* config directories without data: no config at all */
    fresh_dir("nodata");
    snprintf(path, sizeof path, "%s/l00h00q", root);
    qk_mkdirs(path, NULL);
    ck_assert_int_eq(qk_revision_scan(root, &rev, &err), 0);
    ck_assert_int_eq(rev.n, 0);
    qk_revision_free(&rev);
    fresh_dir("skip");
    touch_config(root, "l00h00q");
    touch_config(root, "l00h00k");
    touch_config(root, "l0h0q");
    ck_assert_int_eq(qk_revision_scan(root, &rev, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "appears twice"));
}
END_TEST

START_TEST(hugging_face_cache_and_legacy_layouts)
{
    fresh_dir("hfcache");
    /* datasets--o--n/{blobs,refs/<rev>,snapshots/<commit>/l00h00q/data.parquet -> blob} */
    char path[512], target[512];
    const char *commit = "0123456789abcdef0123456789abcdef01234567";
    snprintf(path, sizeof path, "%s/blobs", root);
    qk_mkdirs(path, NULL);
    snprintf(path, sizeof path, "%s/blobs/abc", root);
    FILE *fp = fopen(path, "w");
    fputs("PAR1", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/refs", root);
    qk_mkdirs(path, NULL);
    snprintf(path, sizeof path, "%s/refs/qwen3-8b-longbench-pro-128k-plus", root);
    fp = fopen(path, "w");
    fprintf(fp, "%s", commit);
    fclose(fp);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/snapshots/%s/l00h00%c", root, commit, "qk"[i]);
        qk_mkdirs(path, NULL);
        snprintf(path, sizeof path, "%s/snapshots/%s/l00h00%c/data.parquet", root, commit,
                 "qk"[i]);
        snprintf(target, sizeof target, "../../../blobs/abc");
        ck_assert_int_eq(symlink(target, path), 0);
    }
    qk_err err;
    char *snap = qk_revision_resolve(root, "qwen3-8b-longbench-pro-128k-plus", NULL, &err);
    ck_assert_msg(snap != NULL, "%s", err.msg);
    qk_revision rev;
    ck_assert_int_eq(qk_revision_scan(snap, &rev, &err), 0);
    ck_assert_int_eq(rev.n, 2);
    qk_revision_free(&rev);
    free(snap);
    ck_assert_ptr_null(qk_revision_resolve(root, "no-such-rev", NULL, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "not in this cache"));
    /* a ref leads to one snapshot, never elsewhere: "..", a path, nothing */
    const char *bad_refs[] = {"../..", "..", ".", "", "../blobs", "a/b", "\n"};
    for (size_t i = 0; i < sizeof bad_refs / sizeof bad_refs[0]; i++) {
        snprintf(path, sizeof path, "%s/refs/bad", root);
        fp = fopen(path, "w");
        fputs(bad_refs[i], fp);
        fclose(fp);
        ck_assert_ptr_null(qk_revision_resolve(root, "bad", NULL, &err));
        ck_assert_str_eq(err.msg, "revision bad: refs/bad does not hold a commit name");
    }

    fresh_dir("legacy");
    snprintf(path, sizeof path, "%s/Qwen_Qwen3_8B", root);
    touch_config(path, "l00h00q");
    char *resolved = qk_revision_resolve(root, NULL, NULL, &err);
    ck_assert_ptr_nonnull(resolved);
    ck_assert_str_eq(resolved, path);
    free(resolved);
}
END_TEST

/* A second Parquet file in a config (a stray copy) would double its rows. */
START_TEST(second_parquet_file_is_an_error)
{
    fresh_dir("two-files");
    touch_config(root, "l00h00k");
    touch_config(root, "l00h00q");
    char path[512];
    snprintf(path, sizeof path, "%s/l00h00q/data.old.parquet", root);
    FILE *fp = fopen(path, "w");
    fputs("PAR1", fp);
    fclose(fp);
    qk_revision rev;
    qk_err err;
    ck_assert_int_eq(qk_revision_scan(root, &rev, &err), -1);
    ck_assert_str_eq(err.msg, "l00h00q holds 2 Parquet files (data.old.parquet, data.parquet); "
                              "the capture tool writes one per config, remove the stray copies");
    /* one file of another name is the config's file */
    unlink(path);
    snprintf(path, sizeof path, "%s/l00h00q/data.parquet", root);
    char other[512];
    snprintf(other, sizeof other, "%s/l00h00q/train-00000.parquet", root);
    ck_assert_int_eq(rename(path, other), 0);
    ck_assert_int_eq(qk_revision_scan(root, &rev, &err), 0);
    ck_assert_int_eq(rev.n, 2);
    ck_assert_int_eq(rev.configs[1].n_paths, 1);
    ck_assert_str_eq(rev.configs[1].paths[0], other);
    qk_revision_free(&rev);
}
END_TEST

/* A folder of several datasets' folders (DATA=<dir>): the one named after
 * the dataset, never the first that sorts. */
START_TEST(several_dataset_folders)
{
    fresh_dir("several");
    char a[512], b[512], empty[600];
    snprintf(a, sizeof a, "%s/llama3.1-8b", root);
    snprintf(b, sizeof b, "%s/qwen3-8b", root);
    touch_config(a, "l00h00q");
    touch_config(b, "l00h00q");
    qk_err err;
    char *resolved = qk_revision_resolve(root, NULL, "qwen3-8b", &err);
    ck_assert_msg(resolved != NULL, "%s", err.msg);
    ck_assert_str_eq(resolved, b);
    free(resolved);
    ck_assert_ptr_null(qk_revision_resolve(root, NULL, "qwen3-4b", &err));
    ck_assert_str_eq(err.msg, "2 folders hold configs (llama3.1-8b, qwen3-8b) and none is "
                              "named 'qwen3-4b': name one (DIR/<dataset>)");
    ck_assert_ptr_null(qk_revision_resolve(root, NULL, NULL, &err));
    ck_assert_str_eq(err.msg, "2 folders hold configs (llama3.1-8b, qwen3-8b): name one "
                              "(DIR/<dataset>)");
    /* the named folder without configs: an error, not the other folder */
    snprintf(empty, sizeof empty, "rm -rf '%s'", b);
    ck_assert_int_eq(system(empty), 0);
    ck_assert_int_eq(qk_mkdirs(b, NULL), 0);
    ck_assert_ptr_null(qk_revision_resolve(root, NULL, "qwen3-8b", &err));
    ck_assert_str_eq(err.msg, "its folder qwen3-8b holds no config directories "
                              "(lLLhHHq / lLLhHHk)");
    /* the lone folder with configs (the legacy layout) for another name */
    resolved = qk_revision_resolve(root, NULL, "Qwen_Qwen3_8B", &err);
    ck_assert_msg(resolved != NULL, "%s", err.msg);
    ck_assert_str_eq(resolved, a);
    free(resolved);
}
END_TEST

/* ---- the configs a capture lists, and its revision ---------------------------- */

static void assert_list(const qk_config_list *l, const char *joined)
{
    char got[512] = "";
    for (int i = 0; i < l->n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", l->names[i]);
    ck_assert_str_eq(got, joined);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(text, fp);
    fclose(fp);
}

static void copy_fixture(const char *name)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp tests/data/capture-metadata/%s '%s/'", name, root);
    ck_assert_int_eq(system(cmd), 0);
}

/* A "configs" array of names in _saver_state.json: canonical, sorted, once. */
START_TEST(configs_listed_in_saver_state)
{
    qk_config_list l;
    ck_assert_int_eq(qk_capture_configs_json(
        "{\"model_name\": \"mini/tiny-test-model\", \"configs\": [\"l01h01q\",\"l00h00k\", "
        "\"l0h0q\",\n  \"l00h00q\"]}", &l), 0);
    assert_list(&l, "l00h00k l00h00q l01h01q");
    ck_assert_str_eq(l.from, "_saver_state.json");
    ck_assert(qk_config_list_has(&l, "l01h01q") && !qk_config_list_has(&l, "l01h00k"));
    qk_config_list_free(&l);
    /* the capture tool's own state lists none (its metadata counts are no
     * list: Llama-3.2-11B's say 300 query heads, 239 have files) */
    uint8_t *text;
    size_t len;
    ck_assert_int_eq(qk_read_file("tests/data/capture-metadata/_saver_state.json", &text, &len,
                                  NULL), 0);
    ck_assert_int_eq(qk_capture_configs_json((char *)text, &l), -1);
    ck_assert_int_eq(l.n, 0);
    free(text);
    /* not a list, or not one of config names: nothing listed */
    static const char *const bad[] = {
        "{\"configs\": []}", "{\"configs\": [\"l00h00q\"", "{\"configs\": [\"l00h00q\",]}",
        "{\"configs\": [\"l00h00q\" \"l00h01q\"]}", "{\"configs\": [\"l00h00x\"]}",
        "{\"configs\": [\"l00h\\u0030q\"]}", "{\"configs\": \"l00h00q\"}", "{\"configs\": [1]}",
        "{\"captured_configs\": [\"l00h00q\"]}", "{\"configs\"", "\"configs\": [\"l00h00000q\"]",
        ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(qk_capture_configs_json(bad[i], &l) == -1, "listed: %s", bad[i]);
        ck_assert(l.n == 0 && l.names == NULL);
    }
    /* a "configs" that is no key (in a string) is passed over */
    ck_assert_int_eq(qk_capture_configs_json("{\"a\": \"\\\"configs\\\" \", \"configs\": "
                                             "[\"l02h00k\"]}", &l), 0);
    assert_list(&l, "l02h00k");
    qk_config_list_free(&l);
}
END_TEST

/* The "## Captured Configs" section of the README, in the capture tool's
 * form and in qk-synth's (one "- `NAME`" line each, then another section). */
START_TEST(configs_listed_in_readme)
{
    qk_config_list l;
    uint8_t *text;
    size_t len;
    ck_assert_int_eq(qk_read_file("tests/data/capture-metadata/README.md", &text, &len, NULL), 0);
    ck_assert_int_eq(qk_capture_configs_readme((char *)text, &l), 0);
    assert_list(&l, "l00h01k l00h05q l03h04k l03h17q l15h30q");
    ck_assert_str_eq(l.from, "README.md");
    qk_config_list_free(&l);
    free(text);
    /* qk-synth's README, with CRLF line ends and the list at the end */
    ck_assert_int_eq(qk_capture_configs_readme(
        "# sniffed-qk (model specialization)\r\n\r\n## Captured Configs\r\n\r\n"
        "- `l00h03q`\r\n- `l00h01k`\r\n- `l00h03q`", &l), 0);
    assert_list(&l, "l00h01k l00h03q");
    qk_config_list_free(&l);
    static const char *const bad[] = {
        "## Captured Configs\n\n## Dataset Layout\n- `l00h00q`\n",
        "## Captured Configs\n- `l00h00q`\n- l00h01q\n",
        "## Captured Configs\n- `l00h00q`\n- `l00h01q` and more\n",
        "## Captured Configs\n- `l00h00q`\n- `notaconfig`\n",
        "## Captured Configs\n- ``\n", "## Captured Configs\n- `\n",
        "## Captured Configs: 3\n- `l00h00q`\n", "### Captured Configs\n- `l00h00q`\n",
        "- `l00h00q`\n", "## Captured Configs", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(qk_capture_configs_readme(bad[i], &l) == -1, "listed: %s", bad[i]);
        ck_assert(l.n == 0 && l.names == NULL);
    }
}
END_TEST

/* A download's list: _saver_state.json's, else the README's; neither lists
 * any: none. */
START_TEST(configs_listed_by_a_download)
{
    fresh_dir("listed");
    qk_config_list l;
    ck_assert_int_eq(qk_capture_configs(root, &l), -1);
    copy_fixture("_saver_state.json");
    ck_assert_int_eq(qk_capture_configs(root, &l), -1);
    copy_fixture("README.md");
    ck_assert_int_eq(qk_capture_configs(root, &l), 0);
    ck_assert_int_eq(l.n, 5);
    ck_assert_str_eq(l.from, "README.md");
    qk_config_list_free(&l);
    write_text(root, "_saver_state.json", "{\"configs\": [\"l00h00q\", \"l00h00k\"]}\n");
    ck_assert_int_eq(qk_capture_configs(root, &l), 0);
    assert_list(&l, "l00h00k l00h00q");
    ck_assert_str_eq(l.from, "_saver_state.json");
    qk_config_list_free(&l);
}
END_TEST

/* The revision read from the test folder is want. */
static void expect_revision(const char *want)
{
    char rev[256];
    qk_source_capture_revision(root, rev, sizeof rev);
    ck_assert_str_eq(rev, want);
}

/* The revision with README.md holding readme is want. */
static void expect_readme_revision(const char *readme, const char *want)
{
    write_text(root, "README.md", readme);
    expect_revision(want);
}

/* The revision: dataset_branch of _saver_state.json, else the README's
 * item "- `dataset_branch`: `NAME`" (the capture tool's) or sentence
 * "Branch `NAME` holds" (qk-synth's), else "-". */
START_TEST(revision_from_either_readme_form)
{
    fresh_dir("capture-revision");
    expect_revision("-");
    copy_fixture("README.md");
    expect_revision("llama3.2-1b-longbench-pro-128k-plus");
    expect_readme_revision("# sniffed-qk\n\n## Branching\n\nBranch `qwen3-8b-x` holds "
                           "one model's captures.\n",
                           "qwen3-8b-x");
    /* the item wins over the sentence; an item not at a line start, or
     * with an empty or unterminated value, is no item */
    expect_readme_revision("Branch `from-sentence` holds\n- `dataset_branch`: `from-item`\n",
                           "from-item");
    expect_readme_revision("x - `dataset_branch`: `a`\n- `dataset_branch`: ``\n"
                           "- `dataset_branch`: `b\n`\n",
                           "-");
    expect_readme_revision("- `dataset_branch`: `x\x01y`\nBranch `z` holds\n", "z");
    /* the state's dataset_branch comes first */
    write_text(root, "README.md", "- `dataset_branch`: `from-readme`\n");
    write_text(root, "_saver_state.json",
               "{\"model_metadata\": {\"dataset_branch\": \"from-state\"}}");
    expect_revision("from-state");
}
END_TEST

int main(void)
{
    qk_mkdirs("build/tests/tmp", NULL);
    Suite *s = suite_create("revision");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, config_names);
    tcase_add_test(tc, gqa_groups_1_2_3_4_5);
    tcase_add_test(tc, missing_key_head_is_left_out);
    tcase_add_test(tc, heads_outside_the_shape_are_errors);
    tcase_add_test(tc, scan_skips_dot_dirs_and_other_files);
    tcase_add_test(tc, hugging_face_cache_and_legacy_layouts);
    tcase_add_test(tc, second_parquet_file_is_an_error);
    tcase_add_test(tc, several_dataset_folders);
    tcase_add_test(tc, configs_listed_in_saver_state);
    tcase_add_test(tc, configs_listed_in_readme);
    tcase_add_test(tc, configs_listed_by_a_download);
    tcase_add_test(tc, revision_from_either_readme_form);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
