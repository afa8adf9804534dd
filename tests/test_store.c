/* The binary store: round trip, layout checks and checksum. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qk/store.h"
#include "testutil.h"

#define STORE "build/tests/tmp/test.qks"

typedef struct config_data {
    int layer, head;
    char kind;
    int rows;
    int32_t *pos, *ex, *bucket;
    float *vec;
} config_data;

static const int dim = 5;

static void make_config(config_data *c, int layer, int head, char kind, int rows, int seed)
{
    c->layer = layer;
    c->head = head;
    c->kind = kind;
    c->rows = rows;
    c->pos = malloc((size_t)rows * 4 + 4);
    c->ex = malloc((size_t)rows * 4 + 4);
    c->bucket = malloc((size_t)rows * 4 + 4);
    c->vec = malloc((size_t)rows * dim * 4 + 4);
    for (int i = 0; i < rows; i++) {
        c->pos[i] = seed * 1000 + i * 7;
        c->ex[i] = -seed * 31 + i / 3;
        c->bucket[i] = c->pos[i] / 256;
        for (int j = 0; j < dim; j++)
            c->vec[i * dim + j] = (float)(seed + 0.25 * i - 0.5 * j);
    }
}

static void free_config(config_data *c)
{
    free(c->pos);
    free(c->ex);
    free(c->bucket);
    free(c->vec);
}

static config_data cfg[3];

static void write_store(void)
{
    make_config(&cfg[0], 0, 0, 'k', 13, 1);
    make_config(&cfg[1], 0, 1, 'q', 17, 2);
    make_config(&cfg[2], 0, 0, 'q', 1, 3);
    qk_store_header meta;
    memset(&meta, 0, sizeof meta);
    meta.dim = dim;
    meta.n_layers = 2;
    meta.n_q_heads = 4;
    meta.n_kv_heads = 2;
    meta.context_length = 4096;
    meta.bucket_size = 256;
    snprintf(meta.dataset_id, sizeof meta.dataset_id, "unit");
    qk_store_writer w;
    qk_err err;
    ck_assert_msg(qk_store_writer_open(&w, STORE, &meta, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(qk_store_writer_add(&w, cfg[i].layer, cfg[i].head, cfg[i].kind,
                                             cfg[i].rows, cfg[i].pos, cfg[i].ex,
                                             cfg[i].bucket, cfg[i].vec, 1000 + i, &err), 0);
    qk_store_pair pairs[2] = {{1, 0}, {2, 0}};
    ck_assert_msg(qk_store_writer_finish(&w, pairs, 2, &err) == 0, "%s", err.msg);
}

START_TEST(round_trip)
{
    write_store();
    qk_store s;
    qk_err err;
    ck_assert_msg(qk_store_open(STORE, &s, 1, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.dim, dim);
    ck_assert_int_eq(s.n_configs, 3);
    ck_assert_int_eq(s.n_pairs, 2);
    ck_assert_str_eq(s.header.dataset_id, "unit");
    ck_assert_int_eq(s.header.bucket_size, 256);
    ck_assert_int_eq(s.pairs[0].q, 1);
    ck_assert_int_eq(s.pairs[1].k, 0);
    for (int i = 0; i < 3; i++) {
        const qk_store_config *c = &s.configs[i];
        ck_assert_int_eq(c->layer, cfg[i].layer);
        ck_assert_int_eq(c->head, cfg[i].head);
        ck_assert_int_eq(c->kind, cfg[i].kind);
        ck_assert_int_eq(c->rows, cfg[i].rows);
        ck_assert_int_eq((int)c->source_bytes, 1000 + i);
        ck_assert_int_eq((uintptr_t)c->vector % 64, 0);
        ck_assert_mem_eq(c->position, cfg[i].pos, (size_t)cfg[i].rows * 4);
        ck_assert_mem_eq(c->example_id, cfg[i].ex, (size_t)cfg[i].rows * 4);
        ck_assert_mem_eq(c->bucket, cfg[i].bucket, (size_t)cfg[i].rows * 4);
        ck_assert_mem_eq(c->vector, cfg[i].vec, (size_t)cfg[i].rows * dim * 4);
    }
    qk_store_close(&s);
    for (int i = 0; i < 3; i++)
        free_config(&cfg[i]);
}
END_TEST

static void patch_byte(long offset, int delta)
{
    FILE *fp = fopen(STORE, "r+b");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, offset, SEEK_SET);
    int c = fgetc(fp);
    fseek(fp, offset, SEEK_SET);
    fputc((c + delta) & 0xff, fp);
    fclose(fp);
}

START_TEST(corruption_is_detected)
{
    write_store();
    qk_store s;
    qk_err err;
    /* one flipped data byte: structure fine, checksum not */
    patch_byte(QK_STORE_HEADER_SIZE + 5, 1);
    ck_assert_int_eq(qk_store_open(STORE, &s, 0, &err), 0);
    qk_store_close(&s);
    ck_assert_int_eq(qk_store_open(STORE, &s, 1, &err), -1);
    ck_assert_str_eq(err.msg, "store checksum mismatch (file corrupted)");
    /* bad magic */
    patch_byte(0, 1);
    ck_assert_int_eq(qk_store_open(STORE, &s, 0, &err), -1);
    ck_assert_str_eq(err.msg, "not a qkreport store (bad magic)");
    /* truncated */
    write_store();
    ck_assert_int_eq(truncate(STORE, 400), 0);
    ck_assert_int_eq(qk_store_open(STORE, &s, 0, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "truncated"));
    for (int i = 0; i < 3; i++)
        free_config(&cfg[i]);
}
END_TEST

/* The store read from memory: the same configs as through the file, and
 * the header checks apply (a dim that would overflow the sizes). */
START_TEST(open_from_memory)
{
    write_store();
    uint8_t *bytes;
    size_t len;
    qk_err err;
    ck_assert_int_eq(qk_read_file(STORE, &bytes, &len, &err), 0);
    qk_store s;
    ck_assert_msg(qk_store_open_memory(bytes, len, &s, 1, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.n_configs, 3);
    ck_assert_int_eq(s.n_pairs, 2);
    ck_assert_int_eq(s.configs[1].rows, 17);
    ck_assert_mem_eq(s.configs[1].vector, cfg[1].vec, (size_t)17 * dim * 4);
    qk_store_close(&s);
    ck_assert_int_eq(bytes[0], 'Q'); /* closing leaves the caller's bytes alone */
    uint32_t big_dim = QK_STORE_MAX_DIM + 1;
    memcpy(bytes + offsetof(qk_store_header, dim), &big_dim, 4);
    ck_assert_int_eq(qk_store_open_memory(bytes, len, &s, 0, &err), -1);
    ck_assert_str_eq(err.msg, "corrupt store header (dim 65537, expected 1 to 65536)");
    ck_assert_int_eq(qk_store_open_memory(bytes, 100, &s, 0, &err), -1);
    ck_assert_str_eq(err.msg, "not a qkreport store (too short)");
    free(bytes);
    for (int i = 0; i < 3; i++)
        free_config(&cfg[i]);
}
END_TEST

START_TEST(an_aborted_write_leaves_the_old_store)
{
    write_store();
    qk_store_header meta;
    memset(&meta, 0, sizeof meta);
    meta.dim = dim;
    qk_store_writer w;
    qk_err err;
    ck_assert_int_eq(qk_store_writer_open(&w, STORE, &meta, &err), 0);
    ck_assert_int_eq(qk_store_writer_add(&w, 0, 0, 'q', 2, cfg[0].pos, cfg[0].ex,
                                         cfg[0].bucket, cfg[0].vec, 1, &err), 0);
    qk_store_writer_abort(&w);
    qk_store s;
    ck_assert_int_eq(qk_store_open(STORE, &s, 1, &err), 0);
    ck_assert_int_eq(s.n_configs, 3);
    qk_store_close(&s);
    ck_assert_int_eq(system("ls build/tests/tmp | grep -c 'test.qks.tmp' >/dev/null"), 256);
    for (int i = 0; i < 3; i++)
        free_config(&cfg[i]);
}
END_TEST

START_TEST(hash_is_incremental)
{
    uint8_t data[100];
    for (int i = 0; i < 100; i++)
        data[i] = (uint8_t)(i * 37 + 1);
    qk_hash h;
    qk_hash_init(&h, 0);
    qk_hash_update(&h, data, 13);
    qk_hash_update(&h, data + 13, 3);
    qk_hash_update(&h, data + 16, 51);
    qk_hash_update(&h, data + 67, 33);
    ck_assert_uint_eq(qk_hash_final(&h), qk_hash64(data, 100, 0));
    ck_assert_uint_ne(qk_hash64(data, 100, 0), qk_hash64(data, 99, 0));
    data[50] ^= 1;
    qk_hash_init(&h, 0);
    qk_hash_update(&h, data, 100);
    ck_assert_uint_ne(qk_hash_final(&h), qk_hash64(data + 0, 64, 0));
}
END_TEST

int main(void)
{
    qk_mkdirs("build/tests/tmp", NULL);
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, corruption_is_detected);
    tcase_add_test(tc, open_from_memory);
    tcase_add_test(tc, an_aborted_write_leaves_the_old_store);
    tcase_add_test(tc, hash_is_incremental);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
