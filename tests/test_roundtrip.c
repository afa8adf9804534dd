/* qk-synth -> Parquet -> qk-load -> store: every stored row equals the
 * values the generator plants, bit for bit, and the pairing follows GQA.
 * The generator's bf16-exact vectors are stored as bf16; a config that is
 * not bf16-exact falls back to float32, just as exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/parquet.h"
#include "qk/pqwrite.h"
#include "qk/registry.h"
#include "qk/store.h"
#include "qk/synth.h"
#include "testutil.h"

#define OUT "build/tests/tmp/roundtrip"

static void check_dataset(const char *id, int n_heads, int n_examples)
{
    qk_registry reg;
    qk_err err;
    ck_assert_msg(qk_registry_load("workflow/datasets.tsv", &reg, &err) == 0, "%s", err.msg);
    const qk_dataset *ds = qk_registry_find(&reg, id);
    ck_assert_ptr_nonnull(ds);
    qk_synth_options o;
    qk_synth_options_default(&o);
    o.n_heads = n_heads;
    o.n_examples = n_examples;
    o.seed = 11;
    ck_assert_int_eq(qk_mkdirs(OUT, NULL), 0);
    ck_assert_msg(qk_synth_write_dataset(OUT, ds, &o, &err) == 0, "%s", err.msg);

    char cmd[512], store_path[256];
    snprintf(store_path, sizeof store_path, OUT "/%s.qks", id);
    snprintf(cmd, sizeof cmd, "bin/qk-load --quiet --dataset %s " OUT "/%s -o %s", id, id,
             store_path);
    ck_assert_int_eq(system(cmd), 0);
    qk_store s;
    ck_assert_msg(qk_store_open(store_path, &s, 1, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.n_pairs, n_heads);
    qk_store_buf buf = {0};
    ck_assert_int_eq(s.dim, ds->head_dim);

    for (int p = 0; p < s.n_pairs; p++) {
        const qk_store_config *q = &s.configs[s.pairs[p].q], *k = &s.configs[s.pairs[p].k];
        ck_assert_int_eq(q->kind, 'q');
        ck_assert_int_eq(k->kind, 'k');
        ck_assert_int_eq(k->layer, q->layer);
        ck_assert_int_eq(k->head, q->head / qk_dataset_group(ds));
        qk_synth_model m;
        ck_assert_msg(qk_synth_model_init(&m, ds, &o, q->layer, q->head, &err) == 0, "%s",
                      err.msg);
        const qk_store_config *cfg[2] = {q, k};
        const int index[2] = {(int)s.pairs[p].q, (int)s.pairs[p].k};
        for (int kind = 0; kind < 2; kind++) {
            qk_synth_rows rows;
            qk_synth_positions(ds, &o, q->layer, kind, &rows);
            ck_assert_int_eq(rows.n, cfg[kind]->rows);
            float *vec = malloc((size_t)rows.n * s.dim * sizeof(float));
            qk_synth_vectors(&m, kind, &rows, vec);
            ck_assert_mem_eq(cfg[kind]->position, rows.position, (size_t)rows.n * 4);
            ck_assert_mem_eq(cfg[kind]->example_id, rows.example_id, (size_t)rows.n * 4);
            ck_assert_mem_eq(cfg[kind]->bucket, rows.bucket, (size_t)rows.n * 4);
            ck_assert_int_eq(cfg[kind]->encoding, QK_STORE_BF16);
            const float *stored = qk_store_vectors(&s, index[kind], &buf, &err);
            ck_assert_msg(stored != NULL, "%s", err.msg);
            ck_assert_mem_eq(stored, vec, (size_t)rows.n * s.dim * 4);
            free(vec);
            qk_synth_rows_free(&rows);
        }
        qk_synth_model_free(&m);
    }
    qk_store_buf_free(&buf);
    qk_store_close(&s);
    qk_registry_free(&reg);
}

START_TEST(llama_group_3) { check_dataset("llama3.2-3b", 6, 12); }
END_TEST

START_TEST(qwen_group_5) { check_dataset("qwen3-14b", 6, 12); }
END_TEST

START_TEST(llama_head_dim_64) { check_dataset("llama3.2-1b", 4, 10); }
END_TEST

START_TEST(smollm3_nope_layers) { check_dataset("smollm3-3b-lc-32k-to-64k-step-20000", 8, 8); }
END_TEST

/* One config rewritten with values that are not bf16-exact (a low bit
 * set in every other value): qk-load stores it as float32, the others
 * stay bf16, and every config reads back exactly as the Parquet files
 * hold it. */
START_TEST(float32_fallback)
{
    const char *id = "llama3.2-1b";
    qk_registry reg;
    qk_err err;
    ck_assert_msg(qk_registry_load("workflow/datasets.tsv", &reg, &err) == 0, "%s", err.msg);
    const qk_dataset *ds = qk_registry_find(&reg, id);
    ck_assert_ptr_nonnull(ds);
    qk_synth_options o;
    qk_synth_options_default(&o);
    o.n_heads = 3;
    o.n_examples = 6;
    o.seed = 12;
    ck_assert_int_eq(qk_mkdirs(OUT "/fallback", NULL), 0);
    ck_assert_msg(qk_synth_write_dataset(OUT "/fallback", ds, &o, &err) == 0, "%s", err.msg);
    char store_path[256], cmd[512];
    snprintf(store_path, sizeof store_path, OUT "/fallback/%s.qks", id);
    snprintf(cmd, sizeof cmd, "bin/qk-load --quiet --dataset %s " OUT "/fallback/%s -o %s", id,
             id, store_path);
    ck_assert_int_eq(system(cmd), 0);
    qk_store s;
    ck_assert_msg(qk_store_open(store_path, &s, 1, &err) == 0, "%s", err.msg);
    const qk_store_config *q = &s.configs[s.pairs[0].q];
    char path[512];
    snprintf(path, sizeof path, OUT "/fallback/%s/l%02dh%02dq/data.parquet", id, q->layer,
             q->head);
    qk_store_close(&s);

    qk_pq_table t;
    ck_assert_msg(qk_parquet_read_file(path, &t, &err) == 0, "%s", err.msg);
    size_t values = (size_t)t.rows * (size_t)t.dim;
    for (size_t i = 0; i < values; i += 2) {
        uint32_t u;
        memcpy(&u, &t.vector[i], 4);
        u |= 1u;
        memcpy(&t.vector[i], &u, 4);
    }
    qk_pq_write_opts wo;
    qk_pq_write_opts_default(&wo);
    ck_assert_msg(qk_parquet_write_file(path, &wo, t.rows, t.dim, t.bucket, t.example_id,
                                        t.position, t.vector, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_msg(qk_store_open(store_path, &s, 1, &err) == 0, "%s", err.msg);
    qk_store_buf buf = {0};
    int fallbacks = 0;
    for (int c = 0; c < s.n_configs; c++) {
        const qk_store_config *cfg = &s.configs[c];
        char file[512];
        snprintf(file, sizeof file, OUT "/fallback/%s/l%02dh%02d%c/data.parquet", id,
                 cfg->layer, cfg->head, cfg->kind);
        qk_pq_table in;
        ck_assert_msg(qk_parquet_read_file(file, &in, &err) == 0, "%s", err.msg);
        int is_patched = strcmp(file, path) == 0;
        ck_assert_int_eq(cfg->encoding, is_patched ? QK_STORE_F32 : QK_STORE_BF16);
        fallbacks += is_patched;
        const float *stored = qk_store_vectors(&s, c, &buf, &err);
        ck_assert_msg(stored != NULL, "%s", err.msg);
        ck_assert_int_eq(cfg->rows, in.rows);
        ck_assert_mem_eq(stored, in.vector, (size_t)in.rows * (size_t)in.dim * 4);
        ck_assert_mem_eq(cfg->position, in.position, (size_t)in.rows * 4);
        qk_pq_table_free(&in);
    }
    ck_assert_int_eq(fallbacks, 1);
    qk_store_buf_free(&buf);
    qk_store_close(&s);
    qk_pq_table_free(&t);
    qk_registry_free(&reg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("roundtrip");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, llama_group_3);
    tcase_add_test(tc, qwen_group_5);
    tcase_add_test(tc, llama_head_dim_64);
    tcase_add_test(tc, smollm3_nope_layers);
    tcase_add_test(tc, float32_fallback);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
