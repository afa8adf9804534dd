/* The binary store: round trip of both vector encodings, shared integer
 * sections, layout and header checks and the checksum over the whole file. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qk/store.h"
#include "testutil.h"

#define STORE "build/tests/tmp/test.qks"
#define STORE_B "build/tests/tmp/test-b.qks"

typedef struct config_data {
    int layer, head;
    char kind;
    int rows;
    int32_t *pos, *ex, *bucket;
    float *vec;
} config_data;

static const int dim = 5;

/* Values are bf16-exact (a few significant bits) unless exact is 0, when
 * every one has bits below the bf16 half. */
static void make_config(config_data *c, int layer, int head, char kind, int rows, int seed,
                        int exact)
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
        c->pos[i] = 1000 + i * 7;
        c->ex[i] = -31 + i / 3;
        c->bucket[i] = c->pos[i] / 256;
        for (int j = 0; j < dim; j++) {
            float v = (float)(seed + 0.25 * i - 0.5 * j);
            c->vec[i * dim + j] = exact ? v : v + 0.001f * (float)(j + 1);
        }
    }
}

static void free_config(config_data *c)
{
    free(c->pos);
    free(c->ex);
    free(c->bucket);
    free(c->vec);
}

#define N_CFG 4
static config_data cfg[N_CFG];

/* Configs 0 and 1 (a key and a query config of layer 0) have the same
 * integer columns, config 2 has one row, config 3 is not bf16-exact. */
static void make_configs(void)
{
    make_config(&cfg[0], 0, 0, 'k', 13, 1, 1);
    make_config(&cfg[1], 0, 1, 'q', 13, 2, 1);
    make_config(&cfg[2], 0, 0, 'q', 1, 3, 1);
    make_config(&cfg[3], 1, 0, 'q', 17, 4, 0);
}

static void free_configs(void)
{
    for (int i = 0; i < N_CFG; i++)
        free_config(&cfg[i]);
}

/* A store of the configs of make_configs whose header says the context
 * and bucket size given (the rows are made for 4096 and 256). */
static void write_store_claiming(const char *path, uint32_t context_length,
                                 uint32_t bucket_size)
{
    qk_store_header meta;
    memset(&meta, 0, sizeof meta);
    meta.dim = dim;
    meta.n_layers = 2;
    meta.n_q_heads = 4;
    meta.n_kv_heads = 2;
    meta.context_length = context_length;
    meta.bucket_size = bucket_size;
    snprintf(meta.dataset_id, sizeof meta.dataset_id, "unit");
    qk_store_writer w;
    qk_err err;
    ck_assert_msg(qk_store_writer_open(&w, path, &meta, &err) == 0, "%s", err.msg);
    for (int i = 0; i < N_CFG; i++)
        ck_assert_int_eq(qk_store_writer_add(&w, cfg[i].layer, cfg[i].head, cfg[i].kind,
                                             cfg[i].rows, cfg[i].pos, cfg[i].ex,
                                             cfg[i].bucket, cfg[i].vec, 1000 + i, &err), 0);
    qk_store_pair pairs[2] = {{1, 0}, {2, 0}};
    ck_assert_msg(qk_store_writer_finish(&w, pairs, 2, &err) == 0, "%s", err.msg);
}

static void write_store(const char *path)
{
    write_store_claiming(path, 4096, 256);
}

static long file_size(const char *path)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fclose(fp);
    return n;
}

START_TEST(round_trip)
{
    make_configs();
    write_store(STORE);
    qk_store s;
    qk_err err;
    ck_assert_msg(qk_store_open(STORE, &s, 1, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.header.version, 3);
    ck_assert_int_eq(s.dim, dim);
    ck_assert_int_eq(s.n_configs, N_CFG);
    ck_assert_int_eq(s.n_pairs, 2);
    ck_assert_str_eq(s.header.dataset_id, "unit");
    ck_assert_int_eq(s.header.bucket_size, 256);
    ck_assert_int_eq(s.pairs[0].q, 1);
    ck_assert_int_eq(s.pairs[1].k, 0);
    ck_assert_int_eq((long)s.map_size, file_size(STORE));
    qk_store_buf buf = {0};
    const int encoding[N_CFG] = {QK_STORE_BF16, QK_STORE_BF16, QK_STORE_BF16, QK_STORE_F32};
    for (int i = 0; i < N_CFG; i++) {
        const qk_store_config *c = &s.configs[i];
        size_t values = (size_t)cfg[i].rows * dim;
        ck_assert_int_eq(c->layer, cfg[i].layer);
        ck_assert_int_eq(c->head, cfg[i].head);
        ck_assert_int_eq(c->kind, cfg[i].kind);
        ck_assert_int_eq(c->rows, cfg[i].rows);
        ck_assert_int_eq((int)c->source_bytes, 1000 + i);
        ck_assert_int_eq(c->encoding, encoding[i]);
        ck_assert_int_eq((uintptr_t)c->vector_data % 64, 0);
        ck_assert_mem_eq(c->position, cfg[i].pos, (size_t)cfg[i].rows * 4);
        ck_assert_mem_eq(c->example_id, cfg[i].ex, (size_t)cfg[i].rows * 4);
        ck_assert_mem_eq(c->bucket, cfg[i].bucket, (size_t)cfg[i].rows * 4);
        if (c->encoding == QK_STORE_F32)
            ck_assert_uint_eq(c->vector_bytes, values * 4);
        else /* the low plane, then a frame of the high plane */
            ck_assert_uint_gt(c->vector_bytes, values);
        const float *v = qk_store_vectors(&s, i, &buf, &err);
        ck_assert_msg(v != NULL, "%s", err.msg);
        ck_assert_mem_eq(v, cfg[i].vec, values * 4);
    }
    /* the float32 config comes straight from the mapping */
    ck_assert_ptr_eq(qk_store_vectors(&s, 3, &buf, &err), (const void *)s.configs[3].vector_data);
    qk_store_buf_free(&buf);
    qk_store_close(&s);
    free_configs();
}
END_TEST

START_TEST(equal_integer_columns_are_stored_once)
{
    make_configs();
    write_store(STORE);
    qk_store s;
    qk_err err;
    ck_assert_msg(qk_store_open(STORE, &s, 1, &err) == 0, "%s", err.msg);
    const qk_store_config *c = s.configs;
    ck_assert_ptr_eq(c[0].position, c[1].position);
    ck_assert_ptr_eq(c[0].example_id, c[1].example_id);
    ck_assert_ptr_eq(c[0].bucket, c[1].bucket);
    /* config 2's single row equals the first row of config 0: a different
     * length is a different section */
    ck_assert_int_eq(c[2].position[0], c[0].position[0]);
    ck_assert_ptr_ne(c[2].position, c[0].position);
    ck_assert_ptr_ne(c[3].position, c[0].position);
    qk_store_close(&s);
    free_configs();
}
END_TEST

START_TEST(the_buffer_keeps_the_last_config)
{
    make_configs();
    write_store(STORE);
    qk_store s;
    qk_err err;
    ck_assert_msg(qk_store_open(STORE, &s, 0, &err) == 0, "%s", err.msg);
    qk_store_buf buf = {0};
    const float *a = qk_store_vectors(&s, 1, &buf, &err);
    ck_assert_ptr_nonnull(a);
    ck_assert_float_eq(a[0], 2.0f);
    /* a second request for the same config is not decoded again: the
     * marked value stays */
    buf.vector[0] = -7.0f;
    ck_assert_ptr_eq(qk_store_vectors(&s, 1, &buf, &err), a);
    ck_assert_float_eq(a[0], -7.0f);
    /* another config, then config 1 again: decoded afresh */
    ck_assert_ptr_nonnull(qk_store_vectors(&s, 0, &buf, &err));
    const float *b = qk_store_vectors(&s, 1, &buf, &err);
    ck_assert_mem_eq(b, cfg[1].vec, (size_t)cfg[1].rows * dim * 4);
    qk_store_buf_free(&buf);
    qk_store_close(&s);
    free_configs();
}
END_TEST

START_TEST(the_same_input_gives_the_same_bytes)
{
    make_configs();
    write_store(STORE);
    write_store(STORE_B);
    ck_assert_int_eq(system("cmp -s " STORE " " STORE_B), 0);
    free_configs();
}
END_TEST

START_TEST(bf16_vectors_take_less_than_half_the_float32_bytes)
{
    /* 2000 rows of 16 values spread over a few octaves, rounded to bf16 */
    enum { ROWS = 2000, D = 16 };
    float *v = malloc(sizeof(float) * ROWS * D);
    int32_t *t = malloc(sizeof(int32_t) * ROWS);
    qk_rng rng;
    const uint64_t key = 5;
    qk_rng_seed(&rng, &key, 1);
    for (int i = 0; i < ROWS; i++) {
        t[i] = i;
        for (int j = 0; j < D; j++) {
            float x = (float)qk_rng_normal(&rng);
            uint32_t u;
            memcpy(&u, &x, 4);
            u &= 0xffff0000u;
            memcpy(&v[i * D + j], &u, 4);
        }
    }
    qk_store_header meta;
    memset(&meta, 0, sizeof meta);
    meta.dim = D;
    meta.n_layers = meta.n_q_heads = meta.n_kv_heads = 1;
    meta.context_length = ROWS;
    meta.bucket_size = 1; /* so that the bucket column may equal the positions */
    qk_store_writer w;
    qk_err err;
    ck_assert_int_eq(qk_store_writer_open(&w, STORE, &meta, &err), 0);
    ck_assert_int_eq(qk_store_writer_add(&w, 0, 0, 'k', ROWS, t, t, t, v, 0, &err), 0);
    ck_assert_int_eq(qk_store_writer_finish(&w, NULL, 0, &err), 0);
    qk_store s;
    ck_assert_msg(qk_store_open(STORE, &s, 1, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.configs[0].encoding, QK_STORE_BF16);
    /* the high bytes of normal values hold about 3 bits: the frame is
     * well under half the plane */
    uint64_t plane = (uint64_t)ROWS * D;
    ck_assert_uint_lt(s.configs[0].vector_bytes - plane, plane / 2);
    ck_assert_uint_lt(s.map_size, plane * 4 / 2);
    qk_store_buf buf = {0};
    const float *back = qk_store_vectors(&s, 0, &buf, &err);
    ck_assert_ptr_nonnull(back);
    ck_assert_mem_eq(back, v, sizeof(float) * ROWS * D);
    /* the integer columns were one section */
    ck_assert_ptr_eq(s.configs[0].position, s.configs[0].bucket);
    qk_store_buf_free(&buf);
    qk_store_close(&s);
    free(v);
    free(t);
}
END_TEST

static void patch_byte(const char *path, long offset, int delta)
{
    FILE *fp = fopen(path, "r+b");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, offset, SEEK_SET);
    int c = fgetc(fp);
    fseek(fp, offset, SEEK_SET);
    fputc((c + delta) & 0xff, fp);
    fclose(fp);
}

/* Where config i's record and vector section are in the file at STORE. */
static void locate(int i, long *record, long *vectors, long *values)
{
    qk_store s;
    qk_err err;
    ck_assert_msg(qk_store_open(STORE, &s, 1, &err) == 0, "%s", err.msg);
    *record = (long)(s.header.table_offset + (uint64_t)i * sizeof(qk_store_record));
    *vectors = (long)(s.configs[i].vector_data - (const uint8_t *)s.map);
    *values = (long)(s.configs[i].rows * s.dim);
    qk_store_close(&s);
}

START_TEST(corruption_is_detected)
{
    make_configs();
    write_store(STORE);
    qk_store s;
    qk_err err;
    /* one flipped data byte: structure fine, checksum not */
    patch_byte(STORE, QK_STORE_HEADER_SIZE + 5, 1);
    ck_assert_int_eq(qk_store_open(STORE, &s, 0, &err), 0);
    qk_store_close(&s);
    ck_assert_int_eq(qk_store_open(STORE, &s, 1, &err), -1);
    ck_assert_str_eq(err.msg, "store checksum mismatch (file corrupted)");
    /* bad magic */
    patch_byte(STORE, 0, 1);
    ck_assert_int_eq(qk_store_open(STORE, &s, 0, &err), -1);
    ck_assert_str_eq(err.msg, "not a qkreport store (bad magic)");
    /* truncated */
    write_store(STORE);
    ck_assert_int_eq(truncate(STORE, 400), 0);
    ck_assert_int_eq(qk_store_open(STORE, &s, 0, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "truncated"));
    free_configs();
}
END_TEST

START_TEST(a_damaged_vector_section_is_detected)
{
    make_configs();
    long record, vectors, values;
    /* a byte of the bf16 frame: the checksum says so */
    write_store(STORE);
    locate(1, &record, &vectors, &values);
    patch_byte(STORE, vectors + values + 9, 0x55);
    qk_store s;
    qk_err err;
    ck_assert_int_eq(qk_store_open(STORE, &s, 1, &err), -1);
    ck_assert_str_eq(err.msg, "store checksum mismatch (file corrupted)");
    /* the frame's magic number: no frame, so no declared size */
    write_store(STORE);
    patch_byte(STORE, vectors + values, 1);
    ck_assert_int_eq(qk_store_open(STORE, &s, 0, &err), -1);
    ck_assert_str_eq(err.msg, "corrupt store record 1");
    /* an unknown encoding */
    write_store(STORE);
    patch_byte(STORE, record + 5, 7);
    ck_assert_int_eq(qk_store_open(STORE, &s, 0, &err), -1);
    ck_assert_str_eq(err.msg, "corrupt store record 1");
    /* a float32 section whose length is not rows * dim * 4 */
    write_store(STORE);
    locate(3, &record, &vectors, &values);
    patch_byte(STORE, record + 56, -4);
    ck_assert_int_eq(qk_store_open(STORE, &s, 0, &err), -1);
    ck_assert_str_eq(err.msg, "corrupt store record 3");
    /* garbage in place of the frame's blocks, checksum not checked: an
     * error naming the config, never a crash */
    write_store(STORE);
    locate(1, &record, &vectors, &values);
    FILE *fp = fopen(STORE, "r+b");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, vectors + values + 6, SEEK_SET);
    for (int i = 0; i < 6; i++)
        fputc(0xff, fp);
    fclose(fp);
    ck_assert_msg(qk_store_open(STORE, &s, 0, &err) == 0, "%s", err.msg);
    qk_store_buf buf = {0};
    ck_assert_ptr_null(qk_store_vectors(&s, 1, &buf, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "store config l00h01q: corrupt vector data"));
    qk_store_buf_free(&buf);
    qk_store_close(&s);
    free_configs();
}
END_TEST

/* The store at STORE in memory (8-byte aligned, as a mapping is). */
static uint8_t *read_store(size_t *len)
{
    uint8_t *bytes;
    qk_err err;
    ck_assert_msg(qk_read_file(STORE, &bytes, len, &err) == 0, "%s", err.msg);
    return bytes;
}

/* The message of opening bytes with one u32 of the header replaced, or ""
 * when it opens. */
static const char *open_with_u32(const uint8_t *bytes, size_t len, size_t offset,
                                 uint32_t value, int verify, qk_err *err)
{
    uint8_t *copy = malloc(len);
    memcpy(copy, bytes, len);
    memcpy(copy + offset, &value, 4);
    qk_store s;
    int rc = qk_store_open_memory(copy, len, &s, verify, err);
    if (rc == 0) {
        qk_store_close(&s);
        err->msg[0] = '\0';
    }
    free(copy);
    return err->msg;
}

/* The checksum covers the header: any one bit of it changed, the store
 * is refused, whatever the field (the model shape, the dataset id, the
 * bytes after its terminating NUL, the checksum itself). */
START_TEST(every_header_bit_is_covered)
{
    make_configs();
    write_store(STORE);
    size_t len;
    uint8_t *bytes = read_store(&len);
    qk_store s;
    qk_err err;
    ck_assert_msg(qk_store_open_memory(bytes, len, &s, 1, &err) == 0, "%s", err.msg);
    qk_store_close(&s);
    for (size_t at = 0; at < QK_STORE_HEADER_SIZE; at++)
        for (int bit = 0; bit < 8; bit++) {
            bytes[at] ^= (uint8_t)(1u << bit);
            int rc = qk_store_open_memory(bytes, len, &s, 1, &err);
            if (rc == 0)
                qk_store_close(&s);
            ck_assert_msg(rc == -1, "header byte %zu, bit %d changed: store accepted", at, bit);
            bytes[at] ^= (uint8_t)(1u << bit);
        }
    free(bytes);
    free_configs();
}
END_TEST

/* The header's values that disagree with what the store holds are
 * refused even without the checksum, each with its own message. */
START_TEST(header_fields_are_checked_against_the_store)
{
    make_configs();
    write_store(STORE);
    size_t len;
    uint8_t *b = read_store(&len);
    qk_err e;
#define AT(field) offsetof(qk_store_header, field)
    ck_assert_str_eq(open_with_u32(b, len, AT(version), 2, 0, &e),
                     "store version 2, this program reads version 3 (rebuild the store: make "
                     "load, or run qk-load again)");
    ck_assert_str_eq(open_with_u32(b, len, AT(header_size), 4096, 0, &e),
                     "corrupt store header (header_size 4096, expected 128)");
    /* the pair table holds 2 records; 1 leaves the second in the padding,
     * 3 reads the padding as a pair, 9 runs past the end */
    uint32_t table_offset;
    memcpy(&table_offset, b + AT(table_offset), 4);
    char want[256];
    snprintf(want, sizeof want, "corrupt store header (n_configs 4, n_pairs 1, table_offset "
             "%u: the tables end 56 bytes before the end of the file)", table_offset);
    ck_assert_str_eq(open_with_u32(b, len, AT(n_pairs), 1, 0, &e), want);
    ck_assert_str_eq(open_with_u32(b, len, AT(n_pairs), 3, 0, &e), "corrupt store pair 2");
    snprintf(want, sizeof want, "corrupt store header (n_configs 4, n_pairs 9, table_offset "
             "%u: the tables are not an aligned section of the file)", table_offset);
    ck_assert_str_eq(open_with_u32(b, len, AT(n_pairs), 9, 0, &e), want);
    snprintf(want, sizeof want, "corrupt store header (n_configs 3, n_pairs 2, table_offset "
             "%u: the tables end 112 bytes before the end of the file)", table_offset);
    ck_assert_str_eq(open_with_u32(b, len, AT(n_configs), 3, 0, &e), want);
    snprintf(want, sizeof want, "corrupt store header (n_configs 4, n_pairs 2, table_offset "
             "%u: the tables end 112 bytes before the end of the file)", table_offset - 64);
    ck_assert_str_eq(open_with_u32(b, len, AT(table_offset), table_offset - 64, 0, &e), want);
    /* the model shape: config 3 is of layer 1; query head 1 is served by
     * key head 0, which takes a group of 2 */
    ck_assert_str_eq(open_with_u32(b, len, AT(n_layers), 1, 0, &e), "corrupt store record 3");
    ck_assert_str_eq(open_with_u32(b, len, AT(n_q_heads), 2, 0, &e), "corrupt store pair 0");
    ck_assert_str_eq(open_with_u32(b, len, AT(n_kv_heads), 4, 0, &e), "corrupt store pair 0");
    ck_assert_str_eq(open_with_u32(b, len, AT(n_kv_heads), 3, 0, &e),
                     "corrupt store header (n_layers 2, n_q_heads 4, n_kv_heads 3: expected "
                     "positive numbers, n_q_heads a multiple of n_kv_heads)");
    ck_assert_str_eq(open_with_u32(b, len, AT(bucket_size), 0, 0, &e),
                     "corrupt store header (context_length 4096, bucket_size 0)");
    ck_assert_str_eq(open_with_u32(b, len, AT(context_length), 0, 0, &e),
                     "corrupt store header (context_length 0, bucket_size 256)");
    ck_assert_str_eq(open_with_u32(b, len, AT(dataset_id) + 4, 0x41414141, 0, &e), "");
    memset(b + AT(dataset_id), 'x', sizeof ((qk_store_header *)0)->dataset_id);
    ck_assert_str_eq(open_with_u32(b, len, AT(dataset_id), 0x41414141, 0, &e),
                     "corrupt store header (dataset_id not terminated)");
    /* values the structure cannot contradict: only the checksum tells */
    write_store(STORE);
    free(b);
    b = read_store(&len);
    ck_assert_str_eq(open_with_u32(b, len, AT(n_layers), 3, 0, &e), "");
    ck_assert_str_eq(open_with_u32(b, len, AT(n_layers), 3, 1, &e),
                     "store checksum mismatch (file corrupted)");
    ck_assert_str_eq(open_with_u32(b, len, AT(n_kv_heads), 1, 0, &e), "");
    ck_assert_str_eq(open_with_u32(b, len, AT(n_kv_heads), 1, 1, &e),
                     "store checksum mismatch (file corrupted)");
    ck_assert_str_eq(open_with_u32(b, len, AT(bucket_size), 4096, 0, &e), "");
    ck_assert_str_eq(open_with_u32(b, len, AT(bucket_size), 4096, 1, &e),
                     "store checksum mismatch (file corrupted)");
#undef AT
    free(b);
    free_configs();
}
END_TEST

/* A header whose context or bucket size does not fit the rows, with a
 * checksum that matches (as a writer given wrong facts would make): the
 * verification reads the rows and refuses it. */
START_TEST(rows_are_checked_against_context_and_bucket_size)
{
    make_configs();
    qk_store s;
    qk_err err;
    /* positions of config 0 run from 1000 to 1084 */
    write_store_claiming(STORE, 1050, 256);
    ck_assert_int_eq(qk_store_open(STORE, &s, 0, &err), 0);
    qk_store_close(&s);
    ck_assert_int_eq(qk_store_open(STORE, &s, 1, &err), -1);
    ck_assert_str_eq(err.msg, "store config l00h00k, row 8: position 1056, bucket 4 do not fit "
                              "context_length 1050, bucket_size 256");
    write_store_claiming(STORE, 4096, 128);
    ck_assert_int_eq(qk_store_open(STORE, &s, 1, &err), -1);
    ck_assert_str_eq(err.msg, "store config l00h00k, row 0: position 1000, bucket 3 do not fit "
                              "context_length 4096, bucket_size 128");
    /* the largest position (config 3's last row) is context_length - 1 */
    write_store_claiming(STORE, 1113, 256);
    ck_assert_msg(qk_store_open(STORE, &s, 1, &err) == 0, "%s", err.msg);
    qk_store_close(&s);
    free_configs();
}
END_TEST

/* The store read from memory: the same configs as through the file, and
 * the header checks apply (a dim that would overflow the sizes). */
START_TEST(open_from_memory)
{
    make_configs();
    write_store(STORE);
    uint8_t *bytes;
    size_t len;
    qk_err err;
    ck_assert_int_eq(qk_read_file(STORE, &bytes, &len, &err), 0);
    qk_store s;
    ck_assert_msg(qk_store_open_memory(bytes, len, &s, 1, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.n_configs, N_CFG);
    ck_assert_int_eq(s.n_pairs, 2);
    ck_assert_int_eq(s.configs[3].rows, 17);
    qk_store_buf buf = {0};
    for (int i = 0; i < N_CFG; i++) {
        const float *v = qk_store_vectors(&s, i, &buf, &err);
        ck_assert_msg(v != NULL, "%s", err.msg);
        ck_assert_mem_eq(v, cfg[i].vec, (size_t)cfg[i].rows * dim * 4);
    }
    qk_store_buf_free(&buf);
    qk_store_close(&s);
    ck_assert_int_eq(bytes[0], 'Q'); /* closing leaves the caller's bytes alone */
    uint32_t big_dim = QK_STORE_MAX_DIM + 1;
    memcpy(bytes + offsetof(qk_store_header, dim), &big_dim, 4);
    ck_assert_int_eq(qk_store_open_memory(bytes, len, &s, 0, &err), -1);
    ck_assert_str_eq(err.msg, "corrupt store header (dim 65537, expected 1 to 65536)");
    ck_assert_int_eq(qk_store_open_memory(bytes, 100, &s, 0, &err), -1);
    ck_assert_str_eq(err.msg, "not a qkreport store (too short)");
    free(bytes);
    free_configs();
}
END_TEST

START_TEST(an_aborted_write_leaves_the_old_store)
{
    make_configs();
    write_store(STORE);
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
    ck_assert_int_eq(s.n_configs, N_CFG);
    qk_store_close(&s);
    ck_assert_int_eq(system("ls build/tests/tmp | grep -c 'test.qks.tmp' >/dev/null"), 256);
    free_configs();
}
END_TEST

int main(void)
{
    qk_mkdirs("build/tests/tmp", NULL);
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, equal_integer_columns_are_stored_once);
    tcase_add_test(tc, the_buffer_keeps_the_last_config);
    tcase_add_test(tc, the_same_input_gives_the_same_bytes);
    tcase_add_test(tc, bf16_vectors_take_less_than_half_the_float32_bytes);
    tcase_add_test(tc, corruption_is_detected);
    tcase_add_test(tc, a_damaged_vector_section_is_detected);
    tcase_add_test(tc, every_header_bit_is_covered);
    tcase_add_test(tc, header_fields_are_checked_against_the_store);
    tcase_add_test(tc, rows_are_checked_against_context_and_bucket_size);
    tcase_add_test(tc, open_from_memory);
    tcase_add_test(tc, an_aborted_write_leaves_the_old_store);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
