/* Tests of the Parquet reader: the hybrid decoder on hand-built streams,
 * every fixture against its truth.json, error paths on patched fixtures
 * and on small files built here, and a fuzz pass. */
#include <fcntl.h>
#include <lz4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qk/parquet.h"
#include "qk/pqwrite.h"
#include "qk/thrift.h"
#include "testutil.h"

/* ---- Test data ---- */

static const char *data_dir(void)
{
    const char *d = getenv("QK_TEST_DATA");
    return d && *d ? d : "tests/data";
}

static uint8_t *load(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir(), rel);
    uint8_t *data;
    qk_err err;
    ck_assert_msg(qk_read_file(path, &data, len, &err) == 0, "%s: %s", path,
                  err.msg);
    return data;
}

static const char *const fixtures[] = {
    "parquet-variants/base",           "parquet-variants/snappy",
    "parquet-variants/gzip",           "parquet-variants/none",
    "parquet-variants/v2",             "parquet-variants/fallback",
    "parquet-variants/multirg",        "parquet-variants/tokens",
    "parquet-variants/sw64",           "parquet-variants/empty",
    "parquet-variants/d64",            "parquet-variants/d128-8000",
    "sniffed-mini/l00h00q/data",       "sniffed-mini/l00h03q/data",
    "sniffed-mini/l01h01q/data",       "sniffed-mini/l00h00k/data",
    "sniffed-mini/l00h01k/data",       "sniffed-mini/l01h00k/data",
    "parquet-encodings/arrow-v2-delta-lz4raw",
    "parquet-encodings/arrow-v2-dict-zstd",
    "parquet-encodings/arrow-v2-none",
    "parquet-encodings/duckdb-v2-lz4raw",
    "parquet-encodings/duckdb-v2-zstd"};
#define NFIXTURES ((int)(sizeof fixtures / sizeof fixtures[0]))

/* truth.json beside X.parquet is X.truth.json, or truth.json beside
 * data.parquet in a config directory. */
static void truth_path(const char *fixture, char *out, size_t size)
{
    const char *slash = strrchr(fixture, '/');
    if (strcmp(slash + 1, "data") == 0)
        snprintf(out, size, "%.*s/truth.json", (int)(slash - fixture),
                 fixture);
    else
        snprintf(out, size, "%s.truth.json", fixture);
}

/* ---- A tiny JSON reader for the truth files ---- */

static const char *json_value(const char *json, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *p = strstr(json, pattern);
    ck_assert_msg(p != NULL, "truth file lacks %s", key);
    p += strlen(pattern);
    while (*p == ' ')
        p++;
    return p;
}

static int json_is_null(const char *p) { return strncmp(p, "null", 4) == 0; }

static int64_t json_int(const char *json, const char *key)
{
    return strtoll(json_value(json, key), NULL, 10);
}

static double json_double(const char *json, const char *key)
{
    return strtod(json_value(json, key), NULL);
}

static int json_array(const char *json, const char *key, double *out,
                      int max)
{
    const char *p = json_value(json, key);
    if (json_is_null(p))
        return -1;
    ck_assert(*p == '[');
    p++;
    int n = 0;
    while (*p && *p != ']') {
        char *end;
        double v = strtod(p, &end);
        ck_assert(end != p && n < max);
        out[n++] = v;
        p = end;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return n;
}

/* ---- Fixtures against their truth files ---- */

static void check_vector_row(const qk_pq_table *t, int64_t row,
                             const char *json, const char *key)
{
    double expect[1024];
    int n = json_array(json, key, expect, 1024);
    ck_assert_int_eq(n, t->dim);
    for (int i = 0; i < n; i++)
        ck_assert_msg((double)t->vector[row * t->dim + i] == expect[i],
                      "%s[%d] = %.9g, expected %.9g", key, i,
                      (double)t->vector[row * t->dim + i], expect[i]);
}

START_TEST(t_fixture_matches_truth)
{
    const char *fixture = fixtures[_i];
    char rel[512], truth_rel[512];
    snprintf(rel, sizeof rel, "%s.parquet", fixture);
    truth_path(fixture, truth_rel, sizeof truth_rel);
    size_t len, json_len;
    uint8_t *data = load(rel, &len);
    char *json = (char *)load(truth_rel, &json_len);

    qk_pq_table t;
    qk_err err;
    ck_assert_msg(qk_parquet_decode(data, len, &t, &err) == 0, "%s: %s", rel,
                  err.msg);
    qk_pq_stats s;
    qk_pq_table_stats(&t, &s);
    ck_assert_int_eq(s.rows, json_int(json, "rows"));
    ck_assert_int_eq(s.dim, json_int(json, "dim"));
    ck_assert_int_eq(s.position_sum, json_int(json, "position_sum"));
    ck_assert_int_eq(s.example_id_sum, json_int(json, "example_id_sum"));
    ck_assert_rel(s.vector_sum, json_double(json, "vector_sum"), 1e-9);
    ck_assert_rel(s.vector_abs_sum, json_double(json, "vector_abs_sum"),
                  1e-9);
    if (t.rows > 0) {
        ck_assert_int_eq(t.position[0], json_int(json, "first_position"));
        ck_assert_int_eq(t.position[t.rows - 1],
                         json_int(json, "last_position"));
        check_vector_row(&t, 0, json, "first_vector");
        check_vector_row(&t, t.rows - 1, json, "last_vector");
    } else {
        ck_assert(json_is_null(json_value(json, "first_position")));
    }
    qk_pq_table_free(&t);
    free(json);
    free(data);
}
END_TEST

START_TEST(t_read_file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/parquet-variants/d64.parquet",
             data_dir());
    qk_pq_table t;
    qk_err err;
    ck_assert_int_eq(qk_parquet_read_file(path, &t, &err), 0);
    ck_assert_int_eq(t.rows, 500);
    ck_assert_int_eq(t.dim, 64);
    /* bucket = position / 8192 in the fixtures' sampling */
    for (int64_t i = 0; i < t.rows; i++)
        ck_assert_int_eq(t.bucket[i], t.position[i] / 8192);
    qk_pq_table_free(&t);
    snprintf(path, sizeof path, "%s/no-such-file.parquet", data_dir());
    ck_assert_int_eq(qk_parquet_read_file(path, &t, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot open"));
}
END_TEST

/* ---- The re-encoded fixtures value by value ---- */

/* parquet-encodings/: one planted table saved by arrow-rs (parquet-wasm)
 * and DuckDB with DELTA_BINARY_PACKED, BYTE_STREAM_SPLIT, DELTA_(LENGTH_)
 * BYTE_ARRAY, DATA_PAGE_V2 and LZ4_RAW; truth.tsv holds every value. */
static const char *const encoding_fixtures[] = {
    "arrow-v2-delta-lz4raw", "arrow-v2-dict-zstd", "arrow-v2-none",
    "duckdb-v2-lz4raw", "duckdb-v2-zstd"};
#define NENCODING_FIXTURES \
    ((int)(sizeof encoding_fixtures / sizeof encoding_fixtures[0]))

enum { TRUTH_ROWS = 300, TRUTH_DIM = 16 };

typedef struct truth_table {
    int32_t bucket[TRUTH_ROWS], example_id[TRUTH_ROWS], position[TRUTH_ROWS];
    uint32_t vector[TRUTH_ROWS * TRUTH_DIM]; /* float bits */
    char *token[TRUTH_ROWS];                 /* NULL for a null */
    char *text;
} truth_table;

/* Parses truth.tsv: bucket, example_id, position, token_str (\N: null)
 * and the vector as comma-separated hex float bits. */
static truth_table *load_truth(void)
{
    truth_table *t = calloc(1, sizeof *t);
    size_t len;
    t->text = (char *)load("parquet-encodings/truth.tsv", &len);
    t->text = realloc(t->text, len + 1);
    t->text[len] = '\0';
    int row = 0;
    char *save = NULL;
    for (char *line = strtok_r(t->text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        ck_assert_int_lt(row, TRUTH_ROWS);
        char *p = line;
        t->bucket[row] = (int32_t)strtol(p, &p, 10);
        t->example_id[row] = (int32_t)strtol(p + 1, &p, 10);
        t->position[row] = (int32_t)strtol(p + 1, &p, 10);
        char *tab = strchr(p + 1, '\t');
        ck_assert_ptr_nonnull(tab);
        *tab = '\0';
        t->token[row] = strcmp(p + 1, "\\N") == 0 ? NULL : p + 1;
        p = tab;
        for (int k = 0; k < TRUTH_DIM; k++)
            t->vector[row * TRUTH_DIM + k] = (uint32_t)strtoul(p + 1, &p, 16);
        ck_assert_int_eq(*p, '\0');
        row++;
    }
    ck_assert_int_eq(row, TRUTH_ROWS);
    return t;
}

static void free_truth(truth_table *t)
{
    free(t->text);
    free(t);
}

START_TEST(t_encodings_every_value)
{
    truth_table *truth = load_truth();
    char rel[256];
    snprintf(rel, sizeof rel, "parquet-encodings/%s.parquet",
             encoding_fixtures[_i]);
    size_t len;
    uint8_t *data = load(rel, &len);
    qk_pq_table t;
    qk_err err;
    ck_assert_msg(qk_parquet_decode(data, len, &t, &err) == 0, "%s: %s", rel,
                  err.msg);
    ck_assert_int_eq(t.rows, TRUTH_ROWS);
    ck_assert_int_eq(t.dim, TRUTH_DIM);
    for (int r = 0; r < TRUTH_ROWS; r++) {
        ck_assert_int_eq(t.bucket[r], truth->bucket[r]);
        ck_assert_int_eq(t.example_id[r], truth->example_id[r]);
        ck_assert_int_eq(t.position[r], truth->position[r]);
    }
    for (int i = 0; i < TRUTH_ROWS * TRUTH_DIM; i++) {
        uint32_t bits;
        memcpy(&bits, &t.vector[i], 4);
        ck_assert_msg(bits == truth->vector[i],
                      "%s: vector[%d] = %08x, not %08x", rel, i, bits,
                      truth->vector[i]);
    }
    qk_pq_table_free(&t);
    free(data);
    free_truth(truth);
}
END_TEST

/* ---- Byte buffers and a reference bit packer ---- */

typedef struct buf {
    uint8_t *data;
    size_t len, cap;
} buf;

static void put(buf *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->data = realloc(b->data, b->cap);
        ck_assert_ptr_nonnull(b->data);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_u8(buf *b, uint8_t v) { put(b, &v, 1); }

static void put_u32(buf *b, uint32_t v)
{
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                     (uint8_t)(v >> 24)};
    put(b, le, 4);
}

static void put_varint(buf *b, uint64_t v)
{
    while (v >= 0x80) {
        put_u8(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put_u8(b, (uint8_t)v);
}

/* One bit-packed run of n values (padded with zeros to groups of 8),
 * written bit by bit, LSB first. */
static void put_packed(buf *b, const uint32_t *v, int n, int bw)
{
    int groups = (n + 7) / 8;
    put_varint(b, (uint64_t)groups << 1 | 1);
    uint64_t acc = 0;
    int bits = 0;
    for (int i = 0; i < groups * 8; i++) {
        uint64_t value = i < n ? v[i] : 0;
        for (int k = 0; k < bw; k++) {
            acc |= ((value >> k) & 1) << bits;
            if (++bits == 8) {
                put_u8(b, (uint8_t)acc);
                acc = 0;
                bits = 0;
            }
        }
    }
}

static void put_rle(buf *b, uint32_t value, int count, int bw)
{
    put_varint(b, (uint64_t)count << 1);
    for (int i = 0; i < (bw + 7) / 8; i++)
        put_u8(b, (uint8_t)(value >> (8 * i)));
}

/* ---- The hybrid decoder ---- */

START_TEST(t_hybrid_spec_example)
{
    /* values 0..7 at 3 bits: the example of the Parquet encoding spec */
    static const uint8_t stream[] = {0x03, 0x88, 0xc6, 0xfa};
    uint32_t out[8];
    qk_err err;
    ck_assert_int_eq(qk_pq_hybrid_decode(stream, sizeof stream, 3, out, 8,
                                         &err),
                     0);
    for (uint32_t i = 0; i < 8; i++)
        ck_assert_uint_eq(out[i], i);
    /* the same group read for 5 values: the rest is padding */
    ck_assert_int_eq(qk_pq_hybrid_decode(stream, sizeof stream, 3, out, 5,
                                         &err),
                     0);
    ck_assert_uint_eq(out[4], 4);
    /* asking for more than the stream holds is an error */
    ck_assert_int_eq(qk_pq_hybrid_decode(stream, sizeof stream, 3, out, 9,
                                         &err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "ends after 8 of 9"));
}
END_TEST

START_TEST(t_hybrid_rle_runs)
{
    /* 100 ones at 1 bit, then 3 x 0xabc at 12 bits, 2 x 0xdeadbeef at 32 */
    static const uint8_t ones[] = {0xc8, 0x01, 0x01};
    static const uint8_t w12[] = {0x06, 0xbc, 0x0a};
    static const uint8_t w32[] = {0x04, 0xef, 0xbe, 0xad, 0xde};
    uint32_t out[100];
    qk_err err;
    ck_assert_int_eq(qk_pq_hybrid_decode(ones, sizeof ones, 1, out, 100,
                                         &err),
                     0);
    for (int i = 0; i < 100; i++)
        ck_assert_uint_eq(out[i], 1);
    ck_assert_int_eq(qk_pq_hybrid_decode(w12, sizeof w12, 12, out, 3, &err),
                     0);
    ck_assert_uint_eq(out[2], 0xabc);
    ck_assert_int_eq(qk_pq_hybrid_decode(w32, sizeof w32, 32, out, 2, &err),
                     0);
    ck_assert_uint_eq(out[1], 0xdeadbeefu);
    /* an RLE run whose value bytes are missing */
    ck_assert_int_eq(qk_pq_hybrid_decode(w32, 3, 32, out, 2, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "truncated RLE run"));
}
END_TEST

START_TEST(t_hybrid_width_zero)
{
    /* RLE run of 10 and one bit-packed group, neither with value bytes */
    static const uint8_t stream[] = {0x14, 0x03};
    uint32_t out[18];
    memset(out, 0xff, sizeof out);
    qk_err err;
    ck_assert_int_eq(qk_pq_hybrid_decode(stream, sizeof stream, 0, out, 18,
                                         &err),
                     0);
    for (int i = 0; i < 18; i++)
        ck_assert_uint_eq(out[i], 0);
}
END_TEST

START_TEST(t_hybrid_mixed_runs)
{
    /* RLE 5 x 7, packed 11 values (padded to 16), RLE 3 x 2, at 3 bits */
    uint32_t packed[11] = {1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3};
    buf b = {0};
    put_rle(&b, 7, 5, 3);
    put_packed(&b, packed, 11, 3);
    put_rle(&b, 2, 3, 3);
    uint32_t expect[5 + 16 + 3];
    int n = 0;
    for (int i = 0; i < 5; i++)
        expect[n++] = 7;
    for (int i = 0; i < 16; i++)
        expect[n++] = i < 11 ? packed[i] : 0;
    for (int i = 0; i < 3; i++)
        expect[n++] = 2;
    uint32_t out[24];
    qk_err err;
    ck_assert_int_eq(qk_pq_hybrid_decode(b.data, b.len, 3, out, n, &err), 0);
    for (int i = 0; i < n; i++)
        ck_assert_uint_eq(out[i], expect[i]);
    free(b.data);
}
END_TEST

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

START_TEST(t_hybrid_every_width)
{
    /* long bit-packed runs (past one 512-value block, and ending close to
     * the end of the stream) against the bit-by-bit packer */
    uint64_t x = 12345;
    enum { N = 1203 };
    uint32_t *values = malloc(N * sizeof *values);
    uint32_t *out = malloc(N * sizeof *out);
    for (int bw = 0; bw <= 32; bw++) {
        uint64_t mask = bw == 32 ? 0xffffffffu : (1ull << bw) - 1;
        for (int i = 0; i < N; i++)
            values[i] = (uint32_t)(xorshift(&x) & mask);
        buf b = {0};
        put_packed(&b, values, 704, bw);
        put_rle(&b, values[704], 3, bw);
        put_packed(&b, values + 707, N - 707, bw);
        qk_err err;
        ck_assert_msg(qk_pq_hybrid_decode(b.data, b.len, bw, out, N, &err) ==
                          0,
                      "width %d: %s", bw, err.msg);
        for (int i = 0; i < N; i++) {
            uint32_t expect = i >= 704 && i < 707 ? values[704] : values[i];
            ck_assert_msg(out[i] == expect, "width %d value %d", bw, i);
        }
        free(b.data);
    }
    qk_err err;
    ck_assert_int_eq(qk_pq_hybrid_decode(NULL, 0, 33, out, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "bit width 33 over 32"));
    free(values);
    free(out);
}
END_TEST

/* ---- A minimal Parquet writer for files the fixtures do not cover ---- */

typedef struct tw {
    buf *b;
    int16_t last[16];
    int depth;
} tw;

static void tw_begin(tw *w) { w->last[w->depth++] = 0; }

static void tw_end(tw *w)
{
    put_u8(w->b, 0);
    w->depth--;
}

static void tw_field(tw *w, int16_t id, int type)
{
    int delta = id - w->last[w->depth - 1];
    if (delta > 0 && delta <= 15) {
        put_u8(w->b, (uint8_t)(delta << 4 | type));
    } else {
        put_u8(w->b, (uint8_t)type);
        put_varint(w->b, (uint64_t)((id << 1) ^ (id >> 15)) & 0xffff);
    }
    w->last[w->depth - 1] = id;
}

static void tw_i64(tw *w, int16_t id, int64_t v)
{
    tw_field(w, id, QK_THRIFT_I64);
    put_varint(w->b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void tw_i32(tw *w, int16_t id, int32_t v)
{
    tw_field(w, id, QK_THRIFT_I32);
    put_varint(w->b, ((uint64_t)(int64_t)v << 1) ^ (uint64_t)(v >> 31));
}

static void tw_str(tw *w, int16_t id, const char *s)
{
    tw_field(w, id, QK_THRIFT_BINARY);
    put_varint(w->b, strlen(s));
    put(w->b, s, strlen(s));
}

static void tw_list(tw *w, int16_t id, int elem_type, int n)
{
    tw_field(w, id, QK_THRIFT_LIST);
    if (n < 15) {
        put_u8(w->b, (uint8_t)(n << 4 | elem_type));
    } else {
        put_u8(w->b, (uint8_t)(0xf0 | elem_type));
        put_varint(w->b, (uint64_t)n);
    }
}

static void tw_struct(tw *w, int16_t id)
{
    tw_field(w, id, QK_THRIFT_STRUCT);
    tw_begin(w);
}

enum { PLAIN = 0, RLE_DICTIONARY = 8 };
enum { FLAT_OPTIONAL, FLAT_REQUIRED, LIST };

typedef struct tpage {
    int type; /* 0 DATA_PAGE, 2 DICTIONARY_PAGE */
    int32_t num_values;
    int32_t encoding;
    buf body;
} tpage;

typedef struct tcol {
    const char *name;
    int32_t type;
    int shape;
    const char *leaf; /* list leaf name */
    int32_t codec;
    int64_t num_values;
    int file_path;
    tpage pages[8];
    int npages;
} tcol;

static void write_page_header(tw *w, const tpage *p)
{
    tw_begin(w);
    tw_i32(w, 1, p->type);
    tw_i32(w, 2, (int32_t)p->body.len);
    tw_i32(w, 3, (int32_t)p->body.len);
    tw_struct(w, p->type == 2 ? 7 : 5);
    tw_i32(w, 1, p->num_values);
    tw_i32(w, 2, p->encoding);
    if (p->type == 0) {
        tw_i32(w, 3, 3);
        tw_i32(w, 4, 3);
    }
    tw_end(w);
    tw_end(w);
}

static void write_schema(tw *w, const tcol *cols, int ncols)
{
    int n = 1;
    for (int i = 0; i < ncols; i++)
        n += cols[i].shape == LIST ? 3 : 1;
    tw_list(w, 2, QK_THRIFT_STRUCT, n);
    tw_begin(w);
    tw_str(w, 4, "schema");
    tw_i32(w, 5, ncols);
    tw_end(w);
    for (int i = 0; i < ncols; i++) {
        const tcol *c = &cols[i];
        tw_begin(w);
        if (c->shape != LIST)
            tw_i32(w, 1, c->type);
        tw_i32(w, 3, c->shape == FLAT_REQUIRED ? 0 : 1);
        tw_str(w, 4, c->name);
        if (c->shape == LIST) {
            tw_i32(w, 5, 1);
            tw_i32(w, 6, 3);
            tw_end(w);
            tw_begin(w);
            tw_i32(w, 3, 2);
            tw_str(w, 4, "list");
            tw_i32(w, 5, 1);
            tw_end(w);
            tw_begin(w);
            tw_i32(w, 1, c->type);
            tw_i32(w, 3, 1);
            tw_str(w, 4, c->leaf ? c->leaf : "element");
        }
        tw_end(w);
    }
}

static void write_column_chunk(tw *w, const tcol *c, int64_t size,
                               int64_t dict_offset, int64_t data_offset)
{
    tw_begin(w);
    if (c->file_path)
        tw_str(w, 1, "other.parquet");
    tw_i64(w, 2, 0);
    tw_struct(w, 3);
    tw_i32(w, 1, c->type);
    tw_list(w, 2, QK_THRIFT_I32, 3);
    put_varint(w->b, 0);
    put_varint(w->b, 6);
    put_varint(w->b, 16);
    tw_list(w, 3, QK_THRIFT_BINARY, c->shape == LIST ? 3 : 1);
    const char *path[3] = {c->name, "list", c->leaf ? c->leaf : "element"};
    for (int k = 0; k < (c->shape == LIST ? 3 : 1); k++) {
        put_varint(w->b, strlen(path[k]));
        put(w->b, path[k], strlen(path[k]));
    }
    tw_i32(w, 4, c->codec);
    int64_t nv = c->num_values;
    if (nv < 0)
        for (int k = nv = 0; k < c->npages; k++)
            nv += c->pages[k].type == 0 ? c->pages[k].num_values : 0;
    tw_i64(w, 5, nv);
    tw_i64(w, 6, size);
    tw_i64(w, 7, size);
    tw_i64(w, 9, data_offset);
    if (dict_offset > 0)
        tw_i64(w, 11, dict_offset);
    tw_end(w);
    tw_end(w);
}

/* A file with one row group of the given columns. */
static buf build_file(const tcol *cols, int ncols, int64_t num_rows)
{
    buf out = {0};
    tw w = {&out, {0}, 0};
    int64_t start[16], dict_off[16], data_off[16];
    put(&out, "PAR1", 4);
    for (int i = 0; i < ncols; i++) {
        start[i] = (int64_t)out.len;
        dict_off[i] = data_off[i] = 0;
        for (int k = 0; k < cols[i].npages; k++) {
            const tpage *p = &cols[i].pages[k];
            if (p->type == 2 && dict_off[i] == 0)
                dict_off[i] = (int64_t)out.len;
            if (p->type == 0 && data_off[i] == 0)
                data_off[i] = (int64_t)out.len;
            write_page_header(&w, p);
            put(&out, p->body.data, p->body.len);
        }
    }
    size_t footer = out.len;
    tw_begin(&w);
    tw_i32(&w, 1, 2);
    write_schema(&w, cols, ncols);
    tw_i64(&w, 3, num_rows);
    tw_list(&w, 4, QK_THRIFT_STRUCT, 1);
    tw_begin(&w);
    tw_list(&w, 1, QK_THRIFT_STRUCT, ncols);
    for (int i = 0; i < ncols; i++) {
        int64_t end = i + 1 < ncols ? start[i + 1] : (int64_t)footer;
        write_column_chunk(&w, &cols[i], end - start[i], dict_off[i],
                           data_off[i]);
    }
    tw_i64(&w, 2, 0);
    tw_i64(&w, 3, num_rows);
    tw_end(&w);
    tw_end(&w);
    put_u32(&out, (uint32_t)(out.len - footer));
    put(&out, "PAR1", 4);
    return out;
}

static void free_cols(tcol *cols, int ncols)
{
    for (int i = 0; i < ncols; i++)
        for (int k = 0; k < cols[i].npages; k++)
            free(cols[i].pages[k].body.data);
}

/* A v1 level section: u32 length, then one bit-packed run. */
static void put_levels(buf *b, const uint32_t *levels, int n, int bw)
{
    buf s = {0};
    put_packed(&s, levels, n, bw);
    put_u32(b, (uint32_t)s.len);
    put(b, s.data, s.len);
    free(s.data);
}

/* An optional int32 column in one PLAIN page; row null_row (if >= 0) is
 * null. */
static void flat_column(tcol *c, const char *name, const int32_t *v, int n,
                        int null_row)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    c->type = 1;
    c->shape = FLAT_OPTIONAL;
    c->num_values = -1;
    tpage *p = &c->pages[c->npages++];
    p->num_values = n;
    p->encoding = PLAIN;
    uint32_t *def = calloc((size_t)n, sizeof *def);
    for (int i = 0; i < n; i++)
        def[i] = i != null_row;
    put_levels(&p->body, def, n, 1);
    for (int i = 0; i < n; i++)
        if (i != null_row)
            put_u32(&p->body, (uint32_t)v[i]);
    free(def);
}

/* The vector column: values of rows with the given lengths, cut into
 * pages at level indices cuts[] (first 0), each page PLAIN or
 * dictionary-encoded at its own bit width. */
typedef struct vspec {
    const float *values;
    const int *row_lens;
    int rows;
    const int *cuts;
    int npages;
    const int *page_enc;
    const int *page_bw;
    int dict_keep;     /* dictionary entries written; -1 for all */
    int extra_levels;  /* levels claimed beyond those written */
} vspec;

static int dict_index(float *dict, int *n, float v)
{
    for (int i = 0; i < *n; i++)
        if (memcmp(&dict[i], &v, 4) == 0)
            return i;
    dict[*n] = v;
    return (*n)++;
}

static void vector_page(tpage *p, const vspec *s, const uint32_t *rep,
                        int from, int to, int enc, int bw,
                        const uint32_t *idx)
{
    int n = to - from;
    p->num_values = n;
    p->encoding = enc;
    put_levels(&p->body, rep + from, n, 1);
    /* definition levels: one RLE run of 3 (a value in every slot) */
    buf def = {0};
    put_rle(&def, 3, n, 2);
    put_u32(&p->body, (uint32_t)def.len);
    put(&p->body, def.data, def.len);
    free(def.data);
    if (enc == PLAIN) {
        put(&p->body, s->values + from, (size_t)n * 4);
    } else {
        put_u8(&p->body, (uint8_t)bw);
        put_packed(&p->body, idx + from, n, bw);
    }
}

static void vector_column(tcol *c, const vspec *s)
{
    memset(c, 0, sizeof *c);
    c->name = "vector";
    c->type = 4;
    c->shape = LIST;
    c->num_values = -1;
    int total = 0;
    for (int r = 0; r < s->rows; r++)
        total += s->row_lens[r];
    uint32_t *rep = malloc((size_t)total * sizeof *rep);
    uint32_t *idx = malloc((size_t)total * sizeof *idx);
    float *dict = malloc((size_t)total * sizeof *dict);
    int ndict = 0, k = 0, uses_dict = 0;
    for (int r = 0; r < s->rows; r++)
        for (int j = 0; j < s->row_lens[r]; j++, k++)
            rep[k] = j > 0;
    for (int i = 0; i < total; i++)
        idx[i] = (uint32_t)dict_index(dict, &ndict, s->values[i]);
    for (int pg = 0; pg < s->npages; pg++)
        uses_dict |= s->page_enc[pg] != PLAIN;
    if (uses_dict) {
        tpage *d = &c->pages[c->npages++];
        d->type = 2;
        d->num_values = s->dict_keep >= 0 ? s->dict_keep : ndict;
        d->encoding = PLAIN;
        put(&d->body, dict, (size_t)d->num_values * 4);
    }
    for (int pg = 0; pg < s->npages; pg++) {
        int to = pg + 1 < s->npages ? s->cuts[pg + 1] : total;
        vector_page(&c->pages[c->npages++], s, rep, s->cuts[pg], to,
                    s->page_enc[pg], s->page_bw ? s->page_bw[pg] : 0, idx);
    }
    c->pages[c->npages - 1].num_values += s->extra_levels;
    c->num_values = total + s->extra_levels;
    free(rep);
    free(idx);
    free(dict);
}

/* A small table: rows x dim with values i * 0.25 - 3 (bf16-exact). */
enum { ROWS = 5, DIM = 4 };
static const int32_t bucket_v[ROWS] = {0, 0, 1, 2, 2};
static const int32_t example_v[ROWS] = {-7, -7, 11, 11, 12};
static const int32_t position_v[ROWS] = {3, 9000, 9100, 20000, 20001};
static const int row_lens_ok[ROWS] = {DIM, DIM, DIM, DIM, DIM};

static float table_value(int i) { return (float)i * 0.25f - 3.0f; }

/* The four columns of the small table; vs may shape the vector. */
static void small_table(tcol *cols, const vspec *vs, int null_position_row)
{
    flat_column(&cols[0], "bucket", bucket_v, ROWS, -1);
    flat_column(&cols[1], "example_id", example_v, ROWS, -1);
    flat_column(&cols[2], "position", position_v, ROWS, null_position_row);
    vector_column(&cols[3], vs);
}

static float *small_values(int n)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = table_value(i % 13);
    return v;
}

static void check_small_table(const qk_pq_table *t, const float *values)
{
    ck_assert_int_eq(t->rows, ROWS);
    ck_assert_int_eq(t->dim, DIM);
    for (int i = 0; i < ROWS; i++) {
        ck_assert_int_eq(t->bucket[i], bucket_v[i]);
        ck_assert_int_eq(t->example_id[i], example_v[i]);
        ck_assert_int_eq(t->position[i], position_v[i]);
    }
    for (int i = 0; i < ROWS * DIM; i++)
        ck_assert_msg(t->vector[i] == values[i], "vector[%d] = %g, not %g", i,
                      (double)t->vector[i], (double)values[i]);
}

static int decode_cols(tcol *cols, int ncols, int64_t rows, qk_pq_table *t,
                       qk_err *err)
{
    buf file = build_file(cols, ncols, rows);
    int rc = qk_parquet_decode(file.data, file.len, t, err);
    free(file.data);
    free_cols(cols, ncols);
    return rc;
}

START_TEST(t_written_plain)
{
    float *values = small_values(ROWS * DIM);
    static const int cuts[1] = {0};
    static const int enc[1] = {PLAIN};
    vspec vs = {values, row_lens_ok, ROWS, cuts, 1, enc, NULL, -1, 0};
    tcol cols[4];
    small_table(cols, &vs, -1);
    qk_pq_table t;
    qk_err err;
    ck_assert_msg(decode_cols(cols, 4, ROWS, &t, &err) == 0, "%s", err.msg);
    check_small_table(&t, values);
    qk_pq_stats s;
    qk_pq_table_stats(&t, &s);
    ck_assert_int_eq(s.position_sum, 3 + 9000 + 9100 + 20000 + 20001);
    ck_assert_int_eq(s.example_id_sum, -7 - 7 + 11 + 11 + 12);
    double sum = 0, abs_sum = 0;
    for (int i = 0; i < ROWS * DIM; i++) {
        sum += values[i];
        abs_sum += fabs(values[i]);
    }
    ck_assert(s.vector_sum == sum && s.vector_abs_sum == abs_sum);
    qk_pq_table_free(&t);
    free(values);
}
END_TEST

START_TEST(t_row_spans_pages_mixed_encodings)
{
    /* rows of 4 values cut into pages at levels 6 and 13 (inside rows 1
     * and 3): a dictionary page at 4 bits, a PLAIN page after fallback,
     * and a dictionary page at 7 bits */
    float *values = small_values(ROWS * DIM);
    static const int cuts[3] = {0, 6, 13};
    static const int enc[3] = {RLE_DICTIONARY, PLAIN, RLE_DICTIONARY};
    static const int bw[3] = {4, 0, 7};
    vspec vs = {values, row_lens_ok, ROWS, cuts, 3, enc, bw, -1, 0};
    tcol cols[4];
    small_table(cols, &vs, -1);
    qk_pq_table t;
    qk_err err;
    ck_assert_msg(decode_cols(cols, 4, ROWS, &t, &err) == 0, "%s", err.msg);
    check_small_table(&t, values);
    qk_pq_table_free(&t);
    free(values);
}
END_TEST

START_TEST(t_required_columns_and_item_leaf)
{
    float *values = small_values(ROWS * DIM);
    static const int cuts[1] = {0};
    static const int enc[1] = {PLAIN};
    vspec vs = {values, row_lens_ok, ROWS, cuts, 1, enc, NULL, -1, 0};
    tcol cols[4];
    small_table(cols, &vs, -1);
    cols[3].leaf = "item";
    /* bucket as a REQUIRED column: no definition levels */
    free(cols[0].pages[0].body.data);
    memset(&cols[0].pages[0].body, 0, sizeof(buf));
    for (int i = 0; i < ROWS; i++)
        put_u32(&cols[0].pages[0].body, (uint32_t)bucket_v[i]);
    cols[0].shape = FLAT_REQUIRED;
    qk_pq_table t;
    qk_err err;
    ck_assert_msg(decode_cols(cols, 4, ROWS, &t, &err) == 0, "%s", err.msg);
    check_small_table(&t, values);
    qk_pq_table_free(&t);
    free(values);
}
END_TEST

START_TEST(t_empty_dictionary_then_plain)
{
    /* a dictionary page of 0 entries (size 0) before a PLAIN data page */
    float *values = small_values(ROWS * DIM);
    static const int cuts[1] = {0};
    static const int enc[1] = {PLAIN};
    vspec vs = {values, row_lens_ok, ROWS, cuts, 1, enc, NULL, -1, 0};
    tcol cols[4];
    small_table(cols, &vs, -1);
    tcol *c = &cols[2];
    memmove(&c->pages[1], &c->pages[0], sizeof c->pages[0]);
    memset(&c->pages[0], 0, sizeof c->pages[0]);
    c->pages[0].type = 2;
    c->npages = 2;
    qk_pq_table t;
    qk_err err;
    ck_assert_msg(decode_cols(cols, 4, ROWS, &t, &err) == 0, "%s", err.msg);
    check_small_table(&t, values);
    qk_pq_table_free(&t);
    free(values);
}
END_TEST

/* Decodes the columns and checks the error message contains `expect`. */
static void expect_error(tcol *cols, int ncols, int64_t rows,
                         const char *expect)
{
    qk_pq_table t;
    qk_err err;
    ck_assert_int_eq(decode_cols(cols, ncols, rows, &t, &err), -1);
    ck_assert_msg(strstr(err.msg, expect) != NULL,
                  "message \"%s\" lacks \"%s\"", err.msg, expect);
    ck_assert_ptr_null(t.vector);
}

static void plain_table(tcol *cols, float **values)
{
    static const int cuts[1] = {0};
    static const int enc[1] = {PLAIN};
    *values = small_values(ROWS * DIM);
    vspec vs = {*values, row_lens_ok, ROWS, cuts, 1, enc, NULL, -1, 0};
    small_table(cols, &vs, -1);
}

START_TEST(t_error_dictionary_index)
{
    float *values = small_values(ROWS * DIM);
    static const int cuts[1] = {0};
    static const int enc[1] = {RLE_DICTIONARY};
    static const int bw[1] = {4};
    vspec vs = {values, row_lens_ok, ROWS, cuts, 1, enc, bw, 3, 0};
    tcol cols[4];
    small_table(cols, &vs, -1);
    expect_error(cols, 4, ROWS, "column vector: dictionary index ");
    small_table(cols, &vs, -1);
    expect_error(cols, 4, ROWS, "out of range (dictionary has 3 values)");
    free(values);
}
END_TEST

START_TEST(t_error_bit_width)
{
    float *values = small_values(ROWS * DIM);
    static const int cuts[1] = {0};
    static const int enc[1] = {RLE_DICTIONARY};
    static const int bw[1] = {40};
    vspec vs = {values, row_lens_ok, ROWS, cuts, 1, enc, bw, -1, 0};
    tcol cols[4];
    small_table(cols, &vs, -1);
    expect_error(cols, 4, ROWS, "column vector: bit width 40 over 32");
    free(values);
}
END_TEST

START_TEST(t_error_list_rows)
{
    /* the vector holds 4 rows, the row group and flat columns 5 */
    float *values = small_values(ROWS * DIM);
    static const int cuts[1] = {0};
    static const int enc[1] = {PLAIN};
    vspec vs = {values, row_lens_ok, ROWS - 1, cuts, 1, enc, NULL, -1, 0};
    tcol cols[4];
    small_table(cols, &vs, -1);
    expect_error(cols, 4, ROWS,
                 "column vector: list structure mismatch: 4 rows from "
                 "repetition levels, the row group has 5");
    free(values);
}
END_TEST

START_TEST(t_error_row_length)
{
    static const int lens[ROWS] = {DIM, DIM - 1, DIM, DIM, DIM};
    float *values = small_values(ROWS * DIM);
    static const int cuts[1] = {0};
    static const int enc[1] = {PLAIN};
    vspec vs = {values, lens, ROWS, cuts, 1, enc, NULL, -1, 0};
    tcol cols[4];
    small_table(cols, &vs, -1);
    expect_error(cols, 4, ROWS,
                 "column vector: row 1 has 3 values, expected 4");
    free(values);
}
END_TEST

START_TEST(t_error_level_count)
{
    /* the page claims 16 more levels than its level streams hold */
    float *values = small_values(ROWS * DIM);
    static const int cuts[1] = {0};
    static const int enc[1] = {PLAIN};
    vspec vs = {values, row_lens_ok, ROWS, cuts, 1, enc, NULL, -1, 16};
    tcol cols[4];
    small_table(cols, &vs, -1);
    expect_error(cols, 4, ROWS,
                 "column vector: level count mismatch: definition levels "
                 "end after 20 of 36 values");
    free(values);
}
END_TEST

START_TEST(t_error_null_value)
{
    float *values = small_values(ROWS * DIM);
    static const int cuts[1] = {0};
    static const int enc[1] = {PLAIN};
    vspec vs = {values, row_lens_ok, ROWS, cuts, 1, enc, NULL, -1, 0};
    tcol cols[4];
    small_table(cols, &vs, 2);
    expect_error(cols, 4, ROWS, "column position: null value in row 2");
    free(values);
}
END_TEST

START_TEST(t_error_missing_column)
{
    float *values;
    tcol cols[4];
    plain_table(cols, &values);
    free_cols(&cols[2], 1);
    cols[2] = cols[3];
    expect_error(cols, 3, ROWS, "missing column position");
    free(values);
}
END_TEST

START_TEST(t_error_unsupported)
{
    float *values;
    tcol cols[4];
    plain_table(cols, &values);
    cols[3].codec = 5;
    expect_error(cols, 4, ROWS, "column vector: unsupported compression LZ4");
    free(values);

    plain_table(cols, &values);
    cols[3].codec = 4;
    expect_error(cols, 4, ROWS, "column vector: unsupported compression "
                                "BROTLI");
    free(values);

    /* encodings of other types, and an unknown one */
    plain_table(cols, &values);
    cols[2].pages[0].encoding = 6;
    expect_error(cols, 4, ROWS,
                 "column position: unsupported encoding "
                 "DELTA_LENGTH_BYTE_ARRAY for INT32");
    free(values);

    plain_table(cols, &values);
    cols[3].pages[0].encoding = 5;
    expect_error(cols, 4, ROWS,
                 "column vector: unsupported encoding DELTA_BINARY_PACKED "
                 "for FLOAT");
    free(values);

    /* a PLAIN page read as DELTA_BINARY_PACKED: block size 3 */
    plain_table(cols, &values);
    cols[2].pages[0].encoding = 5;
    expect_error(cols, 4, ROWS,
                 "column position: bad DELTA_BINARY_PACKED header (block "
                 "size 3, 0 miniblocks)");
    free(values);

    /* BYTE_STREAM_SPLIT values one byte short */
    plain_table(cols, &values);
    cols[3].pages[0].encoding = 9;
    cols[3].pages[0].body.len--;
    expect_error(cols, 4, ROWS,
                 "column vector: BYTE_STREAM_SPLIT data of 79 bytes is not a "
                 "multiple of the value width 4");
    free(values);

    plain_table(cols, &values);
    cols[0].pages[0].encoding = 10;
    expect_error(cols, 4, ROWS,
                 "column bucket: unsupported encoding (unknown encoding)");
    free(values);

    plain_table(cols, &values);
    cols[2].type = 3;
    expect_error(cols, 4, ROWS,
                 "column position: unsupported physical type INT96");
    free(values);

    plain_table(cols, &values);
    cols[2].type = 2;
    expect_error(cols, 4, ROWS,
                 "column position: wrong physical type INT64 (expected "
                 "INT32)");
    free(values);

    plain_table(cols, &values);
    cols[1].file_path = 1;
    expect_error(cols, 4, ROWS, "external column files are not supported");
    free(values);
}
END_TEST

START_TEST(t_extra_columns_ignored)
{
    /* an int64 sliding_window and an unknown column are not decoded */
    float *values;
    tcol cols[6];
    plain_table(cols, &values);
    flat_column(&cols[4], "sliding_window", bucket_v, ROWS, -1);
    cols[4].type = 2;
    flat_column(&cols[5], "mystery", bucket_v, ROWS, -1);
    cols[5].type = 3;
    qk_pq_table t;
    qk_err err;
    ck_assert_msg(decode_cols(cols, 6, ROWS, &t, &err) == 0, "%s", err.msg);
    check_small_table(&t, values);
    qk_pq_table_free(&t);
    free(values);
}
END_TEST

/* ---- Errors on patched fixtures ---- */

static void expect_decode_error(const uint8_t *data, size_t len,
                                const char *expect)
{
    qk_pq_table t;
    qk_err err;
    ck_assert_int_eq(qk_parquet_decode(data, len, &t, &err), -1);
    ck_assert_msg(strstr(err.msg, expect) != NULL,
                  "message \"%s\" lacks \"%s\"", err.msg, expect);
    ck_assert_int_eq(t.rows, 0);
    ck_assert_ptr_null(t.vector);
}

START_TEST(t_error_container)
{
    size_t len;
    uint8_t *data = load("parquet-variants/base.parquet", &len);
    uint8_t *copy = malloc(len);

    memcpy(copy, data, len);
    copy[0] = 'X';
    expect_decode_error(copy, len, "not a Parquet file (no PAR1 magic at "
                                   "the start)");
    memcpy(copy, data, len);
    copy[len - 1] = 'X';
    expect_decode_error(copy, len, "no PAR1 magic at the end");
    expect_decode_error(data, len / 2, "no PAR1 magic at the end");

    /* a footer length larger than the file */
    memcpy(copy, data, len);
    copy[len - 8] = 0xff;
    copy[len - 7] = 0xff;
    copy[len - 6] = 0xff;
    expect_decode_error(copy, len, "truncated footer (footer length");
    /* PAR1 at both ends with no room for a footer length */
    expect_decode_error((const uint8_t *)"PAR1PAR1", 8, "truncated footer");

    /* a bad type code in the first field header of FileMetaData */
    memcpy(copy, data, len);
    uint32_t footer = (uint32_t)data[len - 8] | (uint32_t)data[len - 7] << 8 |
                      (uint32_t)data[len - 6] << 16;
    copy[len - 8 - footer] = 0x1d;
    expect_decode_error(copy, len, "corrupt file metadata: bad field type "
                                   "code at byte 0");
    free(copy);
    free(data);
}
END_TEST

START_TEST(t_error_lfs_empty_random)
{
    char path[] = "/tmp/qk-test-parquet-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *pointer =
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d"
        "17e2393\nsize 1503566\n";
    ck_assert(write(fd, pointer, strlen(pointer)) == (ssize_t)strlen(pointer));
    close(fd);
    qk_pq_table t;
    qk_err err;
    ck_assert_int_eq(qk_parquet_read_file(path, &t, &err), -1);
    ck_assert_str_eq(err.msg,
                     "Git LFS pointer, not Parquet data: run git lfs pull");
    fd = open(path, O_WRONLY | O_TRUNC);
    close(fd);
    ck_assert_int_eq(qk_parquet_read_file(path, &t, &err), -1);
    ck_assert_str_eq(err.msg, "empty file (0 bytes)");
    unlink(path);

    uint8_t random[4096];
    uint64_t x = 77;
    for (size_t i = 0; i < sizeof random; i++)
        random[i] = (uint8_t)xorshift(&x);
    expect_decode_error(random, sizeof random, "not a Parquet file");
}
END_TEST

/* Offset and length of the varint value of field `id` of the PageHeader
 * at `off`, or of field `sub` of its struct field `id` when sub > 0. */
static void find_header_field(const uint8_t *data, size_t len, size_t off,
                              int16_t id, int16_t sub, size_t *voff,
                              size_t *vlen)
{
    qk_err err;
    qk_thrift t;
    qk_thrift_init(&t, data + off, len - off, &err);
    ck_assert_int_eq(qk_thrift_struct_begin(&t), 0);
    for (;;) {
        int16_t fid;
        int type;
        ck_assert_int_eq(qk_thrift_field(&t, &fid, &type), 1);
        if (fid == id && sub > 0) {
            ck_assert_int_eq(qk_thrift_struct_begin(&t), 0);
            id = sub;
            sub = 0;
            continue;
        }
        size_t before = qk_thrift_offset(&t);
        if (fid == id) {
            int32_t v;
            ck_assert_int_eq(qk_thrift_read_i32(&t, &v), 0);
            *voff = off + before;
            *vlen = qk_thrift_offset(&t) - before;
            return;
        }
        ck_assert_int_eq(qk_thrift_skip(&t, type), 0);
    }
}

/* Rewrites the varint at off (len bytes) to hold zigzag(value) in the
 * same number of bytes (non-minimal encodings are valid). */
static void patch_varint(uint8_t *data, size_t off, size_t len, int32_t value)
{
    uint64_t z = ((uint64_t)(int64_t)value << 1) ^ (uint64_t)(value >> 31);
    for (size_t i = 0; i < len; i++) {
        data[off + i] = (uint8_t)((z & 0x7f) | (i + 1 < len ? 0x80 : 0));
        z >>= 7;
    }
    ck_assert_msg(z == 0, "value %d does not fit %zu varint bytes", value,
                  len);
}

static int32_t varint_value(const uint8_t *data, size_t off, size_t len)
{
    uint64_t z = 0;
    for (size_t i = 0; i < len; i++)
        z |= (uint64_t)(data[off + i] & 0x7f) << (7 * i);
    return (int32_t)((z >> 1) ^ -(z & 1));
}

/* Offset of the last page header of a column chunk. */
static size_t last_page(const uint8_t *data, size_t len, uint64_t start,
                        uint64_t size)
{
    size_t off = (size_t)start, last = off;
    while (off < start + size) {
        size_t voff, vlen;
        qk_err err;
        qk_thrift t;
        qk_thrift_init(&t, data + off, len - off, &err);
        ck_assert_int_eq(qk_thrift_skip(&t, QK_THRIFT_STRUCT), 0);
        find_header_field(data, len, off, 3, 0, &voff, &vlen);
        last = off;
        off += qk_thrift_offset(&t) +
               (size_t)varint_value(data, voff, vlen);
    }
    ck_assert_uint_eq(off, start + size);
    return last;
}

START_TEST(t_error_pages)
{
    size_t len;
    uint8_t *data = load("parquet-variants/base.parquet", &len);
    uint8_t *copy = malloc(len);
    uint64_t start, size;
    qk_err err;
    ck_assert_int_eq(qk_parquet_chunk_range(data, len, 0, "vector", &start,
                                            &size, &err),
                     0);
    size_t voff, vlen;

    /* a bad type code in the first page header of the chunk */
    memcpy(copy, data, len);
    copy[start] = 0x1d;
    expect_decode_error(copy, len, "column vector: page at byte");
    expect_decode_error(copy, len, "corrupt page header: bad field type");

    /* uncompressed_page_size larger than the ZSTD data */
    memcpy(copy, data, len);
    find_header_field(copy, len, start, 2, 0, &voff, &vlen);
    patch_varint(copy, voff, vlen, varint_value(copy, voff, vlen) + 2);
    expect_decode_error(copy, len, "column vector: page size mismatch");

    /* the last page's compressed_page_size running past the chunk */
    memcpy(copy, data, len);
    find_header_field(copy, len, last_page(copy, len, start, size), 3, 0,
                      &voff, &vlen);
    patch_varint(copy, voff, vlen, varint_value(copy, voff, vlen) + 2);
    expect_decode_error(copy, len, "column vector: page size mismatch: page "
                                   "at byte");
    expect_decode_error(copy, len, "runs past the column chunk");

    /* a dictionary of 1 value for indices up to the real size */
    memcpy(copy, data, len);
    find_header_field(copy, len, start, 7, 1, &voff, &vlen);
    patch_varint(copy, voff, vlen, 1);
    expect_decode_error(copy, len, "column vector: dictionary index");
    expect_decode_error(copy, len, "out of range (dictionary has 1 values)");
    free(copy);
    free(data);
}
END_TEST

START_TEST(t_error_uncompressed_page_size)
{
    size_t len;
    uint8_t *data = load("parquet-variants/none.parquet", &len);
    uint64_t start, size;
    qk_err err;
    ck_assert_int_eq(qk_parquet_chunk_range(data, len, 0, "position", &start,
                                            &size, &err),
                     0);
    size_t voff, vlen;
    find_header_field(data, len, start, 2, 0, &voff, &vlen);
    patch_varint(data, voff, vlen, varint_value(data, voff, vlen) - 1);
    expect_decode_error(data, len, "column position: page size mismatch: "
                                   "uncompressed page has");
    free(data);
}
END_TEST

/* ---- Parquet 2 value encodings ---- */

/* A DELTA_BINARY_PACKED header: block size 128, 4 miniblocks. */
static void put_delta_header(buf *b, uint64_t count, int64_t first)
{
    put_varint(b, 128);
    put_varint(b, 4);
    put_varint(b, count);
    put_varint(b, ((uint64_t)first << 1) ^ (uint64_t)(first >> 63));
}

START_TEST(t_delta_spec_examples)
{
    qk_err err;
    size_t used;
    int32_t out[8];
    /* 1..5: every delta is the minimum 1, all widths 0, no packed bytes */
    buf b = {0};
    put_delta_header(&b, 5, 1);
    put_varint(&b, 2); /* zigzag(1) */
    put(&b, "\0\0\0\0", 4);
    ck_assert_int_eq(qk_pq_delta_decode_i32(b.data, b.len, out, 5, &used,
                                            &err),
                     0);
    ck_assert_uint_eq(used, b.len);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(out[i], i + 1);
    free(b.data);

    /* 7 5 3 1 2 3 4 5: minimum delta -2, the rest 0 0 0 3 3 3 3 at 2 bits
     * in a miniblock of 32 values (8 bytes); the widths of the unused
     * miniblocks are arbitrary and their bodies absent */
    static const int32_t expect[8] = {7, 5, 3, 1, 2, 3, 4, 5};
    memset(&b, 0, sizeof b);
    put_delta_header(&b, 8, 7);
    put_varint(&b, 3); /* zigzag(-2) */
    put(&b, "\x02\x63\xff\x07", 4);
    put(&b, "\xc0\x3f\0\0\0\0\0\0", 8);
    put(&b, "trailing", 8);
    ck_assert_int_eq(qk_pq_delta_decode_i32(b.data, b.len, out, 8, &used,
                                            &err),
                     0);
    ck_assert_uint_eq(used, b.len - 8);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(out[i], expect[i]);
    /* padding of the last miniblock cut short: the 7 deltas fit 2 bytes */
    ck_assert_int_eq(qk_pq_delta_decode_i32(b.data, b.len - 8 - 6, out, 8,
                                            &used, &err),
                     0);
    ck_assert_int_eq(out[7], 5);
    free(b.data);
}
END_TEST

/* Values of every width: random, sorted, constant, and the extremes. */
static void delta_values(int64_t *v, int n, int kind, int bits, uint64_t *x)
{
    for (int i = 0; i < n; i++) {
        uint64_t r = xorshift(x);
        int64_t value = kind == 0   ? (int64_t)r
                        : kind == 1 ? (int64_t)i * 1000 + (int64_t)(r % 7)
                        : kind == 2 ? -42
                                    : (i % 2 ? INT64_MIN : INT64_MAX);
        if (kind == 0 && i % 3 == 0) /* narrower runs too */
            value >>= (int)(r % 64);
        v[i] = bits == 32 ? (int64_t)(int32_t)value : value;
        if (bits == 32 && kind == 3)
            v[i] = i % 2 ? INT32_MIN : INT32_MAX;
    }
}

START_TEST(t_delta_roundtrip)
{
    static const int sizes[] = {0, 1, 2, 31, 32, 33, 127, 128, 129, 1000};
    static const int blocks[3][2] = {{128, 4}, {256, 8}, {1024, 1}};
    uint64_t x = 77;
    int64_t v[1000], back64[1000];
    int32_t back32[1000];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int kind = 0; kind < 4; kind++)
            for (int bk = 0; bk < 3; bk++)
                for (int bits = 32; bits <= 64; bits += 32) {
                    int n = sizes[s];
                    delta_values(v, n, kind, bits, &x);
                    size_t cap = qk_pq_delta_bound((size_t)n, blocks[bk][0],
                                                   blocks[bk][1]);
                    uint8_t *enc = malloc(cap);
                    size_t len = qk_pq_delta_encode(v, (size_t)n, bits,
                                                    blocks[bk][0],
                                                    blocks[bk][1], enc);
                    ck_assert_uint_le(len, cap);
                    size_t used;
                    qk_err err;
                    int rc = bits == 64
                                 ? qk_pq_delta_decode_i64(enc, len, back64, n,
                                                          &used, &err)
                                 : qk_pq_delta_decode_i32(enc, len, back32, n,
                                                          &used, &err);
                    ck_assert_msg(rc == 0, "n %d kind %d: %s", n, kind,
                                  err.msg);
                    ck_assert_uint_eq(used, len);
                    for (int i = 0; i < n; i++)
                        ck_assert_msg(bits == 64 ? back64[i] == v[i]
                                                 : back32[i] == v[i],
                                      "n %d kind %d bits %d: value %d", n,
                                      kind, bits, i);
                    /* int32 values with 64-bit deltas (up to 33 bits) */
                    if (bits == 32) {
                        len = qk_pq_delta_encode(v, (size_t)n, 64,
                                                 blocks[bk][0], blocks[bk][1],
                                                 enc);
                        ck_assert_int_eq(qk_pq_delta_decode_i32(
                                             enc, len, back32, n, &used, &err),
                                         0);
                        for (int i = 0; i < n; i++)
                            ck_assert_int_eq(back32[i], v[i]);
                    }
                    free(enc);
                }
}
END_TEST

static void expect_delta_error(const buf *b, int64_t count, const char *msg)
{
    int64_t out[300];
    qk_err err;
    ck_assert_int_eq(qk_pq_delta_decode_i64(b->data, b->len, out, count,
                                            NULL, &err),
                     -1);
    ck_assert_msg(strstr(err.msg, msg) != NULL, "message \"%s\" lacks \"%s\"",
                  err.msg, msg);
}

START_TEST(t_delta_errors)
{
    static const uint64_t bad_blocks[][2] = {
        {0, 1}, {100, 1}, {128, 0}, {128, 3}, {128, 8}, {1u << 21, 1}};
    for (size_t k = 0; k < sizeof bad_blocks / sizeof bad_blocks[0]; k++) {
        buf b = {0};
        put_varint(&b, bad_blocks[k][0]);
        put_varint(&b, bad_blocks[k][1]);
        put_varint(&b, 1);
        put_varint(&b, 0);
        expect_delta_error(&b, 1, "bad DELTA_BINARY_PACKED header");
        free(b.data);
    }
    buf b = {0};
    put_delta_header(&b, 3, 5);
    expect_delta_error(&b, 4, "DELTA_BINARY_PACKED data holds 3 values, the "
                              "page 4");
    expect_delta_error(&b, 3, "data ends inside a varint"); /* no block */
    put_varint(&b, 0);
    put(&b, "\x41\0", 2);
    expect_delta_error(&b, 3, "block lacks its bit widths");
    put(&b, "\0\0", 2);
    expect_delta_error(&b, 3, "bit width 65 over 64");
    b.data[b.len - 4] = 64;
    expect_delta_error(&b, 3, "miniblock runs past the data");
    b.data[b.len - 4] = 3; /* 2 values of 3 bits need one byte */
    expect_delta_error(&b, 3, "miniblock runs past the data");
    put_u8(&b, 0x11);
    int64_t out[3];
    qk_err err;
    ck_assert_int_eq(qk_pq_delta_decode_i64(b.data, b.len, out, 3, NULL, &err),
                     0);
    ck_assert(out[0] == 5 && out[1] == 6 && out[2] == 8);
    free(b.data);
    /* a truncated header */
    static const uint8_t cut[] = {0x80};
    ck_assert_int_eq(qk_pq_delta_decode_i64(cut, 1, out, 1, NULL, &err), -1);
}
END_TEST

START_TEST(t_byte_stream_split)
{
    /* two int32s: byte k of each value in stream k */
    static const uint8_t split[] = {1, 5, 2, 6, 3, 7, 4, 8};
    uint32_t u[2];
    qk_err err;
    ck_assert_int_eq(qk_pq_byte_stream_split_decode(split, 8, 4, u, 2, &err),
                     0);
    ck_assert_uint_eq(u[0], 0x04030201u);
    ck_assert_uint_eq(u[1], 0x08070605u);
    /* doubles and floats through the encoder, odd counts */
    uint64_t x = 5;
    double d[37], dback[37];
    float f[37], fback[37];
    for (int i = 0; i < 37; i++) {
        uint64_t r = xorshift(&x);
        memcpy(&d[i], &r, 8);
        uint32_t r32 = (uint32_t)r;
        memcpy(&f[i], &r32, 4);
    }
    uint8_t enc[37 * 8];
    qk_pq_byte_stream_split_encode(d, 37, 8, enc);
    ck_assert_int_eq(enc[36], ((const uint8_t *)&d[36])[0]);
    ck_assert_int_eq(enc[37], ((const uint8_t *)&d[0])[1]);
    ck_assert_int_eq(
        qk_pq_byte_stream_split_decode(enc, 37 * 8, 8, dback, 37, &err), 0);
    ck_assert(memcmp(d, dback, sizeof d) == 0);
    qk_pq_byte_stream_split_encode(f, 37, 4, enc);
    ck_assert_int_eq(
        qk_pq_byte_stream_split_decode(enc, 37 * 4, 4, fback, 37, &err), 0);
    ck_assert(memcmp(f, fback, sizeof f) == 0);
    /* sizes that do not fit */
    ck_assert_int_eq(qk_pq_byte_stream_split_decode(enc, 10, 4, fback, 2,
                                                    &err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a multiple of the value width"));
    ck_assert_int_eq(qk_pq_byte_stream_split_decode(enc, 8, 4, fback, 3,
                                                    &err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "holds 2 values, the page 3"));
}
END_TEST

/* n strings as data + offsets. */
typedef struct strings {
    uint8_t data[4096];
    int64_t offsets[257];
    int n;
} strings;

static void add_string(strings *s, const char *text, size_t len)
{
    int64_t at = s->offsets[s->n];
    memcpy(s->data + at, text, len);
    s->offsets[++s->n] = at + (int64_t)len;
}

static void check_strings(const qk_pq_byte_arrays *a, const strings *s)
{
    ck_assert_int_eq(a->count, s->n);
    for (int i = 0; i < s->n; i++) {
        int64_t len = s->offsets[i + 1] - s->offsets[i];
        ck_assert_int_eq(a->offsets[i + 1] - a->offsets[i], len);
        ck_assert_msg(memcmp(a->data + a->offsets[i], s->data + s->offsets[i],
                             (size_t)len) == 0,
                      "string %d", i);
    }
}

/* The examples of the Parquet spec and random strings with shared
 * prefixes, through the encoders and the decoders. */
START_TEST(t_delta_byte_arrays)
{
    strings s = {.n = 0};
    static const char *const words[] = {"axis", "axle", "babble", "babyhood"};
    for (int i = 0; i < 4; i++)
        add_string(&s, words[i], strlen(words[i]));
    /* DELTA_BYTE_ARRAY: prefixes 0 2 0 3, then the suffixes
     * "axis" "le" "babble" "yhood" as DELTA_LENGTH_BYTE_ARRAY */
    static const int64_t prefix[4] = {0, 2, 0, 3}, suffix[4] = {4, 2, 6, 5};
    uint8_t expect[512], enc[512];
    size_t n = qk_pq_delta_encode(prefix, 4, 32, 128, 4, expect);
    n += qk_pq_delta_encode(suffix, 4, 32, 128, 4, expect + n);
    memcpy(expect + n, "axislebabbleyhood", 17);
    n += 17;
    size_t len = qk_pq_delta_byte_array_encode(s.data, s.offsets, 4, enc);
    ck_assert_uint_eq(len, n);
    ck_assert(memcmp(enc, expect, n) == 0);
    qk_pq_byte_arrays a;
    qk_err err;
    ck_assert_int_eq(qk_pq_delta_byte_array_decode(enc, len, 4, &a, &err), 0);
    check_strings(&a, &s);
    qk_pq_byte_arrays_free(&a);
    /* DELTA_LENGTH_BYTE_ARRAY: the lengths, then the bytes */
    static const int64_t lengths[4] = {4, 4, 6, 8};
    n = qk_pq_delta_encode(lengths, 4, 32, 128, 4, expect);
    memcpy(expect + n, "axisaxlebabblebabyhood", 22);
    n += 22;
    len = qk_pq_delta_length_byte_array_encode(s.data, s.offsets, 4, enc);
    ck_assert_uint_eq(len, n);
    ck_assert(memcmp(enc, expect, n) == 0);
    ck_assert_int_eq(
        qk_pq_delta_length_byte_array_decode(enc, len, 4, &a, &err), 0);
    check_strings(&a, &s);
    qk_pq_byte_arrays_free(&a);

    /* 200 strings (more than one delta block), empty ones included */
    uint64_t x = 99;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < 200; i++) {
        char text[16];
        size_t k = xorshift(&x) % 16;
        for (size_t j = 0; j < k; j++)
            text[j] = (char)('a' + xorshift(&x) % 3);
        add_string(&s, text, k);
    }
    uint8_t *big = malloc(qk_pq_byte_array_bound(200, 4096));
    for (int delta = 0; delta < 2; delta++) {
        len = delta ? qk_pq_delta_byte_array_encode(s.data, s.offsets, 200, big)
                    : qk_pq_delta_length_byte_array_encode(s.data, s.offsets,
                                                           200, big);
        int rc = delta
                     ? qk_pq_delta_byte_array_decode(big, len, 200, &a, &err)
                     : qk_pq_delta_length_byte_array_decode(big, len, 200, &a,
                                                            &err);
        ck_assert_msg(rc == 0, "%s", err.msg);
        check_strings(&a, &s);
        qk_pq_byte_arrays_free(&a);
    }
    free(big);
}
END_TEST

START_TEST(t_delta_byte_array_errors)
{
    qk_pq_byte_arrays a;
    qk_err err;
    uint8_t enc[512];
    /* lengths asking for more bytes than follow */
    static const int64_t lengths[2] = {3, 9};
    size_t n = qk_pq_delta_encode(lengths, 2, 32, 128, 4, enc);
    memcpy(enc + n, "abcdefghijk", 11);
    ck_assert_int_eq(
        qk_pq_delta_length_byte_array_decode(enc, n + 11, 2, &a, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "lengths add up to 12 bytes, 11"));
    ck_assert_ptr_null(a.data);
    ck_assert_int_eq(
        qk_pq_delta_length_byte_array_decode(enc, n + 12, 2, &a, &err), 0);
    ck_assert_int_eq(a.offsets[2], 12);
    qk_pq_byte_arrays_free(&a);
    /* a negative length */
    static const int64_t negative[2] = {3, -1};
    n = qk_pq_delta_encode(negative, 2, 32, 128, 4, enc);
    ck_assert_int_eq(
        qk_pq_delta_length_byte_array_decode(enc, n + 3, 2, &a, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "negative length -1 of value 1"));
    /* a prefix longer than the value before it */
    static const int64_t prefix[2] = {0, 4}, suffix[2] = {3, 1};
    n = qk_pq_delta_encode(prefix, 2, 32, 128, 4, enc);
    n += qk_pq_delta_encode(suffix, 2, 32, 128, 4, enc + n);
    memcpy(enc + n, "abcd", 4);
    ck_assert_int_eq(qk_pq_delta_byte_array_decode(enc, n + 4, 2, &a, &err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "prefix of 4 bytes for value 1, "
                                          "the value before it has 3"));
    ck_assert_ptr_null(a.offsets);
}
END_TEST

/* token_str of the re-encoded fixtures, page by page through the byte
 * array decoders: arrow-rs writes DELTA_BYTE_ARRAY in uncompressed v2
 * pages, DuckDB DELTA_LENGTH_BYTE_ARRAY in an LZ4_RAW v1 page. */
static int32_t header_field(const uint8_t *data, size_t len, size_t off,
                            int16_t id, int16_t sub)
{
    size_t voff, vlen;
    find_header_field(data, len, off, id, sub, &voff, &vlen);
    return varint_value(data, voff, vlen);
}

/* Checks the n levels (and values) of one page against rows from row. */
static void check_token_page(const truth_table *truth, int row,
                             const uint8_t *def, size_t def_len,
                             const uint8_t *values, size_t values_len,
                             int32_t n, int32_t encoding)
{
    uint32_t *levels = malloc((size_t)n * sizeof *levels);
    qk_err err;
    ck_assert_int_eq(qk_pq_hybrid_decode(def, def_len, 1, levels, n, &err), 0);
    int nonnull = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(levels[i], truth->token[row + i] != NULL);
        nonnull += levels[i] == 1;
    }
    qk_pq_byte_arrays a;
    int rc = encoding == 7 ? qk_pq_delta_byte_array_decode(values, values_len,
                                                           nonnull, &a, &err)
                           : qk_pq_delta_length_byte_array_decode(
                                 values, values_len, nonnull, &a, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    for (int i = 0, v = 0; i < n; i++) {
        const char *expect = truth->token[row + i];
        if (!expect)
            continue;
        int64_t len = a.offsets[v + 1] - a.offsets[v];
        ck_assert_msg(len == (int64_t)strlen(expect) &&
                          memcmp(a.data + a.offsets[v], expect, (size_t)len) ==
                              0,
                      "row %d: \"%.*s\", expected \"%s\"", row + i, (int)len,
                      (const char *)a.data + a.offsets[v], expect);
        v++;
    }
    qk_pq_byte_arrays_free(&a);
    free(levels);
}

START_TEST(t_token_str_byte_arrays)
{
    truth_table *truth = load_truth();
    static const char *const files[2] = {
        "parquet-encodings/arrow-v2-none.parquet",
        "parquet-encodings/duckdb-v2-lz4raw.parquet"};
    for (int f = 0; f < 2; f++) {
        size_t len;
        uint8_t *data = load(files[f], &len);
        uint64_t start, size;
        qk_err err;
        ck_assert_int_eq(qk_parquet_chunk_range(data, len, 0, "token_str",
                                                &start, &size, &err),
                         0);
        int row = 0, pages = 0;
        for (size_t off = (size_t)start; off < start + size; pages++) {
            qk_thrift t;
            qk_thrift_init(&t, data + off, len - off, &err);
            ck_assert_int_eq(qk_thrift_skip(&t, QK_THRIFT_STRUCT), 0);
            const uint8_t *body = data + off + qk_thrift_offset(&t);
            int32_t type = header_field(data, len, off, 1, 0);
            size_t stored = (size_t)header_field(data, len, off, 3, 0);
            size_t full = (size_t)header_field(data, len, off, 2, 0);
            int32_t n, encoding;
            if (type == 3) { /* v2, UNCOMPRESSED: levels then values */
                n = header_field(data, len, off, 8, 1);
                encoding = header_field(data, len, off, 8, 4);
                size_t def_len = (size_t)header_field(data, len, off, 8, 5);
                ck_assert_int_eq(header_field(data, len, off, 8, 6), 0);
                ck_assert_uint_eq(stored, full);
                check_token_page(truth, row, body, def_len, body + def_len,
                                 stored - def_len, n, encoding);
            } else { /* v1, LZ4_RAW: u32 level length, levels, values */
                ck_assert_int_eq(type, 0);
                n = header_field(data, len, off, 5, 1);
                encoding = header_field(data, len, off, 5, 2);
                uint8_t *page = malloc(full);
                ck_assert_int_eq(LZ4_decompress_safe((const char *)body,
                                                     (char *)page, (int)stored,
                                                     (int)full),
                                 (int)full);
                uint32_t def_len = (uint32_t)page[0] | (uint32_t)page[1] << 8 |
                                   (uint32_t)page[2] << 16;
                check_token_page(truth, row, page + 4, def_len,
                                 page + 4 + def_len, full - 4 - def_len, n,
                                 encoding);
                free(page);
            }
            ck_assert_int_eq(encoding, f == 0 ? 7 : 6);
            row += n;
            off = (size_t)(body - data) + stored;
        }
        ck_assert_int_eq(row, TRUTH_ROWS);
        ck_assert_int_eq(pages, 1);
        free(data);
    }
    free_truth(truth);
}
END_TEST

START_TEST(t_error_lz4_raw_page_size)
{
    size_t len;
    uint8_t *data = load("parquet-encodings/duckdb-v2-lz4raw.parquet", &len);
    uint64_t start, size;
    qk_err err;
    ck_assert_int_eq(qk_parquet_chunk_range(data, len, 0, "position", &start,
                                            &size, &err),
                     0);
    size_t voff, vlen;
    find_header_field(data, len, start, 2, 0, &voff, &vlen);
    int32_t full = varint_value(data, voff, vlen);
    patch_varint(data, voff, vlen, full + 2);
    char expect[128];
    snprintf(expect, sizeof expect,
             "column position: page size mismatch: LZ4_RAW data holds %d "
             "bytes, header says %d",
             full, full + 2);
    expect_decode_error(data, len, expect);
    patch_varint(data, voff, vlen, full - 2);
    expect_decode_error(data, len, "column position: corrupt LZ4_RAW page "
                                   "data");
    free(data);
}
END_TEST

/* ---- Fuzzing: truncations and flipped bytes never crash ---- */

static int try_decode(const uint8_t *data, size_t len)
{
    qk_pq_table t;
    qk_err err;
    int rc = qk_parquet_decode(data, len, &t, &err);
    ck_assert(rc == 0 || rc == -1);
    if (rc == 0) {
        ck_assert(t.rows == 0 || (t.position && t.vector));
        qk_pq_table_free(&t);
    } else {
        ck_assert(strlen(err.msg) > 0 && strchr(err.msg, '\n') == NULL);
    }
    return rc;
}

START_TEST(t_fuzz)
{
    static const char *const names[] = {
        "parquet-variants/base.parquet", "parquet-variants/v2.parquet",
        "parquet-variants/multirg.parquet", "parquet-variants/tokens.parquet",
        "parquet-variants/snappy.parquet", "parquet-variants/gzip.parquet",
        "parquet-encodings/arrow-v2-delta-lz4raw.parquet",
        "parquet-encodings/duckdb-v2-lz4raw.parquet"};
    uint64_t x = 2024;
    int failures = 0, runs = 0;
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        size_t len;
        uint8_t *data = load(names[f], &len);
        for (size_t cut = 0; cut < len; cut += 97, runs++)
            failures += try_decode(data, cut) != 0;
        uint8_t *copy = malloc(len);
        for (int iter = 0; iter < 600; iter++, runs++) {
            memcpy(copy, data, len);
            int flips = 1 + (int)(xorshift(&x) % 4);
            for (int k = 0; k < flips; k++) {
                /* half of the flips land in the footer */
                size_t tail = len < 1200 ? len : 1200;
                size_t pos = xorshift(&x) % 2 ? len - 1 - xorshift(&x) % tail
                                              : xorshift(&x) % len;
                copy[pos] ^= (uint8_t)(1 + xorshift(&x) % 255);
            }
            failures += try_decode(copy, len) != 0;
        }
        free(copy);
        free(data);
    }
    /* most damaged files are rejected, and the rest decode */
    ck_assert_int_gt(failures, runs / 2);
    ck_assert_int_lt(failures, runs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("parquet");
    TCase *tc = tcase_create("hybrid");
    tcase_add_test(tc, t_hybrid_spec_example);
    tcase_add_test(tc, t_hybrid_rle_runs);
    tcase_add_test(tc, t_hybrid_width_zero);
    tcase_add_test(tc, t_hybrid_mixed_runs);
    tcase_add_test(tc, t_hybrid_every_width);
    suite_add_tcase(s, tc);

    tc = tcase_create("fixtures");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, t_fixture_matches_truth, 0, NFIXTURES);
    tcase_add_test(tc, t_read_file);
    tcase_add_loop_test(tc, t_encodings_every_value, 0, NENCODING_FIXTURES);
    suite_add_tcase(s, tc);

    tc = tcase_create("written");
    tcase_add_test(tc, t_written_plain);
    tcase_add_test(tc, t_row_spans_pages_mixed_encodings);
    tcase_add_test(tc, t_required_columns_and_item_leaf);
    tcase_add_test(tc, t_extra_columns_ignored);
    tcase_add_test(tc, t_empty_dictionary_then_plain);
    tcase_add_test(tc, t_error_dictionary_index);
    tcase_add_test(tc, t_error_bit_width);
    tcase_add_test(tc, t_error_list_rows);
    tcase_add_test(tc, t_error_row_length);
    tcase_add_test(tc, t_error_level_count);
    tcase_add_test(tc, t_error_null_value);
    tcase_add_test(tc, t_error_missing_column);
    tcase_add_test(tc, t_error_unsupported);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, t_error_container);
    tcase_add_test(tc, t_error_lfs_empty_random);
    tcase_add_test(tc, t_error_pages);
    tcase_add_test(tc, t_error_uncompressed_page_size);
    tcase_add_test(tc, t_error_lz4_raw_page_size);
    suite_add_tcase(s, tc);

    tc = tcase_create("encodings");
    tcase_add_test(tc, t_delta_spec_examples);
    tcase_add_test(tc, t_delta_roundtrip);
    tcase_add_test(tc, t_delta_errors);
    tcase_add_test(tc, t_byte_stream_split);
    tcase_add_test(tc, t_delta_byte_arrays);
    tcase_add_test(tc, t_delta_byte_array_errors);
    tcase_add_test(tc, t_token_str_byte_arrays);
    suite_add_tcase(s, tc);

    tc = tcase_create("fuzz");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, t_fuzz);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
