/* qk-synth -> Parquet -> qk-load -> store: every stored row equals the
 * values the generator plants, bit for bit, and the pairing follows GQA. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        for (int kind = 0; kind < 2; kind++) {
            qk_synth_rows rows;
            qk_synth_positions(ds, &o, q->layer, kind, &rows);
            ck_assert_int_eq(rows.n, cfg[kind]->rows);
            float *vec = malloc((size_t)rows.n * s.dim * sizeof(float));
            qk_synth_vectors(&m, kind, &rows, vec);
            ck_assert_mem_eq(cfg[kind]->position, rows.position, (size_t)rows.n * 4);
            ck_assert_mem_eq(cfg[kind]->example_id, rows.example_id, (size_t)rows.n * 4);
            ck_assert_mem_eq(cfg[kind]->bucket, rows.bucket, (size_t)rows.n * 4);
            ck_assert_mem_eq(cfg[kind]->vector, vec, (size_t)rows.n * s.dim * 4);
            free(vec);
            qk_synth_rows_free(&rows);
        }
        qk_synth_model_free(&m);
    }
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

int main(void)
{
    Suite *s = suite_create("roundtrip");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, llama_group_3);
    tcase_add_test(tc, qwen_group_5);
    tcase_add_test(tc, llama_head_dim_64);
    tcase_add_test(tc, smollm3_nope_layers);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
