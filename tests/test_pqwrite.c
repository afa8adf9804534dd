/* Tests of the Parquet writer: the hybrid encoder, the file structure
 * (checked by a small independent decoder kept in this file), read-back
 * through the library's reader for every codec, page version and
 * dictionary setting, determinism, dictionary fallback and the write speed
 * of a production-sized file. */
#include <errno.h>
#include <lz4.h>
#include <snappy-c.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "qk/common.h"
#include "qk/parquet.h"
#include "qk/pqwrite.h"
#include "testutil.h"

#define TMP_DIR "build/tests/tmp/pqwrite"

/* ------------------------------------------------------------------ */
/* Test data                                                           */

typedef struct table {
    int64_t rows;
    int dim;
    int32_t *bucket;
    int32_t *example_id;
    int32_t *position;
    float *vector;
} table;

static uint64_t lcg_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* A bf16-exact float, roughly normal (sum of four uniforms). */
static float bf16_value(uint64_t *s)
{
    double x = 0;
    for (int k = 0; k < 4; k++)
        x += (double)lcg_next(s) / 2147483648.0 - 0.5;
    return bits_to_float(float_bits((float)(x * 1.7)) & 0xFFFF0000u);
}

/* rows x dim table; the vector takes values from a pool of `distinct`
 * bf16-exact floats, each of which occurs when rows * dim >= distinct
 * (0: free draws).  Positions ascend, buckets are
 * position / 64, example ids change every 5 rows (some negative). */
static table make_table(int64_t rows, int dim, int distinct, uint64_t seed)
{
    table t = {.rows = rows, .dim = dim};
    size_t n = rows > 0 ? (size_t)rows : 1;
    t.bucket = qk_malloc(n * sizeof(int32_t));
    t.example_id = qk_malloc(n * sizeof(int32_t));
    t.position = qk_malloc(n * sizeof(int32_t));
    t.vector = qk_malloc(n * (size_t)(dim > 0 ? dim : 1) * sizeof(float));
    uint64_t s = seed;
    float *pool = NULL;
    if (distinct > 0) {
        pool = qk_malloc((size_t)distinct * sizeof *pool);
        for (int k = 0; k < distinct; k++) /* distinct bf16 patterns */
            pool[k] = bits_to_float(0x3F800000u + ((uint32_t)k << 16));
    }
    int32_t pos = 0;
    for (int64_t r = 0; r < rows; r++) {
        pos += 1 + (int32_t)(lcg_next(&s) % 7);
        t.position[r] = pos;
        t.bucket[r] = pos / 64;
        t.example_id[r] = (int32_t)(r / 5) * 1000003 - 7;
        for (int d = 0; d < dim; d++) {
            /* The pool is used in order first, so every entry occurs. */
            int64_t i = r * dim + d;
            float v = !pool          ? bf16_value(&s)
                      : i < distinct ? pool[i]
                                     : pool[lcg_next(&s) % (uint64_t)distinct];
            t.vector[r * dim + d] = v;
        }
    }
    free(pool);
    return t;
}

static void free_table(table *t)
{
    free(t->bucket);
    free(t->example_id);
    free(t->position);
    free(t->vector);
}

static char *tmp_path(const char *name)
{
    qk_err err;
    ck_assert_msg(qk_mkdirs(TMP_DIR, &err) == 0, "%s", err.msg);
    return qk_path_join(TMP_DIR, name);
}

static void write_table(const char *path, const qk_pq_write_opts *o,
                        const table *t)
{
    qk_err err = {{0}};
    int rc = qk_parquet_write_file(path, o, t->rows, t->dim, t->bucket,
                                   t->example_id, t->position, t->vector,
                                   &err);
    ck_assert_msg(rc == 0, "write %s: %s", path, err.msg);
}

/* ------------------------------------------------------------------ */
/* Independent hybrid decoder                                          */

static int get_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= len)
            return -1;
        uint8_t b = p[(*pos)++];
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* Decodes n values; returns the bytes consumed or -1. */
static long hybrid_decode(const uint8_t *p, size_t len, int bw, uint32_t *out,
                          size_t n)
{
    size_t pos = 0, got = 0;
    while (got < n) {
        uint64_t h;
        if (get_varint(p, len, &pos, &h) != 0)
            return -1;
        if (h & 1) {
            size_t count = (size_t)(h >> 1) * 8;
            if (pos + (size_t)(h >> 1) * (size_t)bw > len)
                return -1;
            for (size_t i = 0; i < count; i++) {
                uint64_t v = 0;
                for (int b = 0; b < bw; b++) {
                    size_t bit = i * (size_t)bw + (size_t)b;
                    v |= (uint64_t)((p[pos + bit / 8] >> (bit % 8)) & 1) << b;
                }
                if (got < n)
                    out[got++] = (uint32_t)v;
            }
            pos += (size_t)(h >> 1) * (size_t)bw;
        } else {
            size_t count = (size_t)(h >> 1);
            uint32_t v = 0;
            int bytes = (bw + 7) / 8;
            if (count == 0 || pos + (size_t)bytes > len || got + count > n)
                return -1;
            for (int b = 0; b < bytes; b++)
                v |= (uint32_t)p[pos++] << (8 * b);
            for (size_t i = 0; i < count; i++)
                out[got++] = v;
        }
    }
    return (long)pos;
}

/* ------------------------------------------------------------------ */
/* Independent Thrift compact decoder (to a tree)                      */

typedef struct tnode {
    int type;
    int id;
    int64_t i;
    const uint8_t *bin;
    size_t len;
    int n;
    struct tnode *kids;
} tnode;

typedef struct tcur {
    const uint8_t *p;
    size_t len;
    size_t pos;
} tcur;

static int t_value(tcur *c, int type, tnode *out, int depth);

static int t_struct(tcur *c, tnode *out, int depth)
{
    int last = 0;
    out->type = 12;
    while (1) {
        if (c->pos >= c->len)
            return -1;
        uint8_t b = c->p[c->pos++];
        if (b == 0)
            return 0;
        int type = b & 15, delta = b >> 4, id;
        if (delta) {
            id = last + delta;
        } else {
            uint64_t z;
            if (get_varint(c->p, c->len, &c->pos, &z) != 0)
                return -1;
            id = (int)((z >> 1) ^ -(z & 1));
        }
        last = id;
        out->kids = qk_realloc(out->kids, (size_t)(out->n + 1) * sizeof(tnode));
        tnode *k = &out->kids[out->n++];
        memset(k, 0, sizeof *k);
        k->id = id;
        if (type == 1 || type == 2) {
            k->type = 1;
            k->i = type == 1;
        } else if (t_value(c, type, k, depth + 1) != 0) {
            return -1;
        }
    }
}

static int t_value(tcur *c, int type, tnode *out, int depth)
{
    uint64_t v;
    if (depth > 32)
        return -1;
    out->type = type;
    switch (type) {
    case 3:
        if (c->pos >= c->len)
            return -1;
        out->i = (int8_t)c->p[c->pos++];
        return 0;
    case 4:
    case 5:
    case 6:
        if (get_varint(c->p, c->len, &c->pos, &v) != 0)
            return -1;
        out->i = (int64_t)((v >> 1) ^ -(v & 1));
        return 0;
    case 8:
        if (get_varint(c->p, c->len, &c->pos, &v) != 0 || v > c->len - c->pos)
            return -1;
        out->bin = c->p + c->pos;
        out->len = (size_t)v;
        c->pos += (size_t)v;
        return 0;
    case 9: {
        if (c->pos >= c->len)
            return -1;
        uint8_t h = c->p[c->pos++];
        uint64_t n = h >> 4;
        if (n == 15 && get_varint(c->p, c->len, &c->pos, &n) != 0)
            return -1;
        if (n > 1000000)
            return -1;
        out->n = (int)n;
        out->kids = qk_calloc(n ? n : 1, sizeof(tnode));
        for (uint64_t k = 0; k < n; k++)
            if (t_value(c, h & 15, &out->kids[k], depth + 1) != 0)
                return -1;
        return 0;
    }
    case 12:
        return t_struct(c, out, depth);
    }
    return -1;
}

static void t_free(tnode *t)
{
    for (int k = 0; k < t->n; k++)
        t_free(&t->kids[k]);
    free(t->kids);
    t->kids = NULL;
    t->n = 0;
}

static const tnode *t_get(const tnode *s, int id)
{
    for (int k = 0; k < s->n; k++)
        if (s->kids[k].id == id)
            return &s->kids[k];
    return NULL;
}

static int64_t t_int(const tnode *s, int id, int64_t dflt)
{
    const tnode *k = t_get(s, id);
    return k ? k->i : dflt;
}

static int t_str_eq(const tnode *k, const char *s)
{
    return k && k->type == 8 && k->len == strlen(s) &&
           memcmp(k->bin, s, k->len) == 0;
}

/* ------------------------------------------------------------------ */
/* Independent file decoder                                            */

#define MAX_PAGES 256

/* What one column chunk looked like on disk. */
typedef struct chunk_info {
    int npages;
    int page_type[MAX_PAGES];
    int encoding[MAX_PAGES];    /* data pages: value encoding */
    int bit_width[MAX_PAGES];   /* RLE_DICTIONARY pages */
    int num_values[MAX_PAGES];
    int mid_row[MAX_PAGES];     /* data page starting inside a row */
    int compressed[MAX_PAGES];  /* v2 data pages: is_compressed */
    int dict_entries;
    int32_t dict_uncompressed;
    int nencodings;
    int encodings[8];
    int has_statistics;
} chunk_info;

typedef struct decoded {
    int64_t rows;
    int dim;
    int ngroups;
    int32_t *cols[3];
    float *vector;
    int64_t nvector;
    chunk_info chunk[8][5]; /* first 8 row groups */
    const tnode *footer;
} decoded;

typedef struct raw_file {
    uint8_t *data;
    size_t len;
} raw_file;

static size_t decompress(int codec, const uint8_t *src, size_t n,
                         uint8_t *dst, size_t cap)
{
    if (codec == 0) {
        ck_assert_uint_eq(n, cap);
        memcpy(dst, src, n);
        return n;
    }
    if (codec == 6) {
        size_t r = ZSTD_decompress(dst, cap, src, n);
        ck_assert_msg(!ZSTD_isError(r), "zstd: %s", ZSTD_getErrorName(r));
        return r;
    }
    if (codec == 1) {
        size_t out = cap;
        ck_assert(snappy_uncompress((const char *)src, n, (char *)dst,
                                    &out) == SNAPPY_OK);
        return out;
    }
    if (codec == 7) {
        int r = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n,
                                    (int)cap);
        ck_assert_int_ge(r, 0);
        return (size_t)r;
    }
    ck_assert_int_eq(codec, 2);
    z_stream z;
    memset(&z, 0, sizeof z);
    ck_assert(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK);
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)cap;
    ck_assert(inflate(&z, Z_FINISH) == Z_STREAM_END);
    size_t out = cap - z.avail_out;
    inflateEnd(&z);
    return out;
}

/* Reads the levels of a v1 page (u32 length + stream) or a v2 page (bare
 * stream of the given length). */
static size_t read_levels(const uint8_t *p, size_t len, int v2,
                          size_t v2_len, int max_level, uint32_t *out,
                          size_t n)
{
    int bw = max_level >= 2 ? 2 : 1;
    size_t stream_len = v2_len, skip = 0;
    if (!v2) {
        ck_assert_uint_ge(len, 4);
        stream_len = p[0] | p[1] << 8 | p[2] << 16 | (size_t)p[3] << 24;
        skip = 4;
    }
    ck_assert_uint_le(skip + stream_len, len);
    long used = hybrid_decode(p + skip, stream_len, bw, out, n);
    ck_assert_msg(used == (long)stream_len, "level stream %ld of %zu bytes",
                  used, stream_len);
    return skip + stream_len;
}

typedef struct chunk_ctx {
    int col;           /* 0..4 */
    int codec;
    uint32_t *dict;
    int dict_n;
    int64_t leaf_seen; /* vector: leaf values so far in this chunk */
    int64_t ints_seen; /* int columns: values so far in this chunk */
} chunk_ctx;

static void decode_values(decoded *d, chunk_ctx *cx, const uint8_t *p,
                          size_t len, int encoding, size_t count,
                          chunk_info *ci)
{
    uint32_t *v = qk_malloc((count ? count : 1) * sizeof *v);
    if (encoding == 8) {
        ck_assert_uint_ge(len, 1);
        int bw = p[0];
        ci->bit_width[ci->npages] = bw;
        long used = hybrid_decode(p + 1, len - 1, bw, v, count);
        ck_assert_msg(used == (long)len - 1, "index stream %ld of %zu", used,
                      len - 1);
        for (size_t i = 0; i < count; i++) {
            ck_assert_uint_lt(v[i], (uint32_t)cx->dict_n);
            v[i] = cx->dict[v[i]];
        }
    } else if (encoding == 5) { /* DELTA_BINARY_PACKED: the reader's */
        size_t used;
        qk_err err;
        ck_assert_msg(qk_pq_delta_decode_i32(p, len, (int32_t *)v,
                                             (int64_t)count, &used, &err) == 0,
                      "%s", err.msg);
        ck_assert_uint_eq(used, len);
    } else if (encoding == 9) { /* BYTE_STREAM_SPLIT */
        ck_assert_uint_eq(len, count * 4);
        uint8_t *dst = (uint8_t *)v;
        for (size_t i = 0; i < count; i++)
            for (int k = 0; k < 4; k++)
                dst[4 * i + k] = p[(size_t)k * count + i];
    } else {
        ck_assert_int_eq(encoding, 0);
        ck_assert_uint_eq(len, count * 4);
        memcpy(v, p, count * 4);
    }
    if (cx->col < 3) {
        memcpy(d->cols[cx->col] + d->rows + cx->ints_seen, v, count * 4);
        cx->ints_seen += (int64_t)count;
    } else if (cx->col == 3) {
        memcpy(d->vector + d->nvector, v, count * 4);
        d->nvector += (int64_t)count;
    } else {
        ck_assert_uint_eq(count, 0);
        ck_assert_uint_eq(len, 1); /* the bit-width byte 0 and nothing */
        ck_assert_int_eq(p[0], 0);
    }
    free(v);
}

/* Checks the levels of a page against the layout the writer promises. */
static void check_levels(decoded *d, chunk_ctx *cx, const uint32_t *rep,
                         const uint32_t *def, size_t n, chunk_info *ci)
{
    for (size_t i = 0; i < n; i++) {
        if (cx->col == 3) {
            int64_t leaf = cx->leaf_seen + (int64_t)i;
            ck_assert_uint_eq(rep[i], leaf % d->dim == 0 ? 0 : 1);
            ck_assert_uint_eq(def[i], 3);
        } else {
            ck_assert_uint_eq(def[i], cx->col == 4 ? 0 : 1);
        }
    }
    if (cx->col == 3) {
        ci->mid_row[ci->npages] = cx->leaf_seen % d->dim != 0;
        cx->leaf_seen += (int64_t)n;
    }
}

static void decode_data_page(decoded *d, chunk_ctx *cx, const tnode *ph,
                             const uint8_t *body, size_t body_len,
                             chunk_info *ci)
{
    int v2 = t_int(ph, 1, -1) == 3;
    const tnode *h = t_get(ph, v2 ? 8 : 5);
    ck_assert_ptr_nonnull(h);
    size_t n = (size_t)t_int(h, 1, -1);
    int encoding = (int)t_int(h, v2 ? 4 : 2, -1);
    size_t usize = (size_t)t_int(ph, 2, -1);
    size_t rep_len = v2 ? (size_t)t_int(h, 6, -1) : 0;
    size_t def_len = v2 ? (size_t)t_int(h, 5, -1) : 0;
    int compressed = v2 ? (int)t_int(h, 7, 1) : 1;
    uint8_t *page = qk_malloc(usize + 1);
    size_t prefix = rep_len + def_len;
    memcpy(page, body, prefix);
    size_t got = compressed ? decompress(cx->codec, body + prefix,
                                         body_len - prefix, page + prefix,
                                         usize - prefix)
                            : (memcpy(page + prefix, body + prefix,
                                      body_len - prefix),
                               body_len - prefix);
    ck_assert_uint_eq(got + prefix, usize);
    if (!v2)
        ck_assert_int_eq(t_int(h, 3, -1), 3);
    uint32_t *rep = qk_calloc(n + 1, sizeof *rep);
    uint32_t *def = qk_calloc(n + 1, sizeof *def);
    size_t pos = 0;
    if (cx->col == 3)
        pos += read_levels(page, usize, v2, rep_len, 1, rep, n);
    pos += read_levels(page + pos, usize - pos, v2, def_len, cx->col == 3 ? 3 : 1,
                       def, n);
    check_levels(d, cx, rep, def, n, ci);
    size_t nonnull = cx->col == 4 ? 0 : n;
    if (v2) {
        ck_assert_int_eq(t_int(h, 2, -1), cx->col == 4 ? (int64_t)n : 0);
        int64_t rows = 0;
        for (size_t i = 0; i < n; i++)
            rows += rep[i] == 0;
        ck_assert_int_eq(t_int(h, 3, -1), rows);
    }
    ci->encoding[ci->npages] = encoding;
    ci->num_values[ci->npages] = (int)n;
    ci->compressed[ci->npages] = compressed;
    decode_values(d, cx, page + pos, usize - pos, encoding, nonnull, ci);
    free(rep);
    free(def);
    free(page);
}

static void decode_dict_page(chunk_ctx *cx, const tnode *ph,
                             const uint8_t *body, size_t body_len,
                             chunk_info *ci)
{
    const tnode *h = t_get(ph, 7);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(t_int(h, 2, -1), 0); /* PLAIN */
    int n = (int)t_int(h, 1, -1);
    size_t usize = (size_t)t_int(ph, 2, -1);
    ck_assert_uint_eq(usize, (size_t)n * 4);
    cx->dict = qk_malloc(usize + 4);
    decompress(cx->codec, body, body_len, (uint8_t *)cx->dict, usize);
    cx->dict_n = n;
    ci->dict_entries = n;
    ci->dict_uncompressed = (int32_t)usize;
}

/* Walks the pages of one column chunk and appends its values to d. */
static void decode_chunk(decoded *d, const raw_file *f, const tnode *cc,
                         int col, int64_t rg_rows, chunk_info *ci)
{
    ck_assert_int_eq(t_int(cc, 2, -1), 0); /* file_offset */
    ck_assert_ptr_null(t_get(cc, 1));
    const tnode *md = t_get(cc, 3);
    ck_assert_ptr_nonnull(md);
    chunk_ctx cx = {.col = col, .codec = (int)t_int(md, 4, -1)};
    const tnode *enc = t_get(md, 2);
    ci->nencodings = enc->n;
    for (int k = 0; k < enc->n && k < 8; k++)
        ci->encodings[k] = (int)enc->kids[k].i;
    ci->has_statistics = t_get(md, 12) != NULL;
    int64_t dict_off = t_int(md, 11, -1);
    int64_t data_off = t_int(md, 9, -1);
    int64_t start = dict_off >= 0 ? dict_off : data_off;
    int64_t end = start + t_int(md, 7, -1);
    ck_assert_int_le(end, (int64_t)f->len - 8);
    int64_t usum = 0, values = 0;
    size_t pos = (size_t)start;
    while ((int64_t)pos < end) {
        ck_assert_int_lt(ci->npages, MAX_PAGES);
        if (ci->npages == 1 && dict_off >= 0)
            ck_assert_int_eq((int64_t)pos, data_off);
        tcur c = {f->data, (size_t)end, pos};
        tnode ph = {0};
        ck_assert_int_eq(t_struct(&c, &ph, 0), 0);
        size_t hlen = c.pos - pos;
        size_t clen = (size_t)t_int(&ph, 3, -1);
        ck_assert_uint_le(c.pos + clen, (size_t)end);
        int type = (int)t_int(&ph, 1, -1);
        ci->page_type[ci->npages] = type;
        if (type == 2) {
            ck_assert_int_eq(ci->npages, 0);
            decode_dict_page(&cx, &ph, f->data + c.pos, clen, ci);
        } else {
            decode_data_page(d, &cx, &ph, f->data + c.pos, clen, ci);
            values += ci->num_values[ci->npages];
        }
        usum += (int64_t)hlen + t_int(&ph, 2, -1);
        ci->npages++;
        pos = c.pos + clen;
        t_free(&ph);
    }
    ck_assert_int_eq((int64_t)pos, end);
    ck_assert_int_eq(usum, t_int(md, 6, -1));
    ck_assert_int_eq(values, t_int(md, 5, -1));
    ck_assert_int_eq(values, col == 3 ? rg_rows * d->dim : rg_rows);
    free(cx.dict);
}

static void check_schema(const tnode *fm)
{
    static const char *names[7] = {"schema", "bucket", "example_id", "position",
                                   "vector", "list", "element"};
    const tnode *schema = t_get(fm, 2);
    ck_assert_int_eq(schema->n, 8);
    for (int k = 0; k < 7; k++)
        ck_assert_msg(t_str_eq(t_get(&schema->kids[k], 4), names[k]),
                      "schema element %d", k);
    const tnode *root = &schema->kids[0], *vec = &schema->kids[4];
    const tnode *list = &schema->kids[5], *elem = &schema->kids[6];
    const tnode *sw = &schema->kids[7];
    ck_assert(t_str_eq(t_get(sw, 4), "sliding_window"));
    ck_assert_int_eq(t_int(root, 3, -1), 0);
    ck_assert_int_eq(t_int(root, 5, -1), 5);
    for (int k = 1; k <= 3; k++) {
        ck_assert_int_eq(t_int(&schema->kids[k], 1, -1), 1);
        ck_assert_int_eq(t_int(&schema->kids[k], 3, -1), 1);
        ck_assert_ptr_null(t_get(&schema->kids[k], 10));
        ck_assert_ptr_null(t_get(&schema->kids[k], 6));
    }
    ck_assert_int_eq(t_int(vec, 3, -1), 1);
    ck_assert_int_eq(t_int(vec, 5, -1), 1);
    ck_assert_int_eq(t_int(vec, 6, -1), 3);
    ck_assert_ptr_nonnull(t_get(t_get(vec, 10), 3));
    ck_assert_int_eq(t_int(list, 3, -1), 2);
    ck_assert_int_eq(t_int(list, 5, -1), 1);
    ck_assert_int_eq(t_int(elem, 1, -1), 4);
    ck_assert_int_eq(t_int(elem, 3, -1), 1);
    ck_assert_int_eq(t_int(sw, 1, -1), 1);
    ck_assert_int_eq(t_int(sw, 3, -1), 1);
    ck_assert_ptr_nonnull(t_get(t_get(sw, 10), 11));
    ck_assert_ptr_null(t_get(sw, 6));
}

/* Decodes a file written by the writer, checking its structure on the way. */
static void decode_file(const char *path, int dim, decoded *d, raw_file *f,
                        tnode *fm)
{
    qk_err err;
    memset(d, 0, sizeof *d);
    memset(fm, 0, sizeof *fm);
    ck_assert_msg(qk_read_file(path, &f->data, &f->len, &err) == 0, "%s",
                  err.msg);
    ck_assert_uint_ge(f->len, 12);
    ck_assert(memcmp(f->data, "PAR1", 4) == 0);
    ck_assert(memcmp(f->data + f->len - 4, "PAR1", 4) == 0);
    const uint8_t *t = f->data + f->len - 8;
    size_t flen = t[0] | t[1] << 8 | t[2] << 16 | (size_t)t[3] << 24;
    ck_assert_uint_le(flen + 12, f->len);
    tcur c = {f->data + f->len - 8 - flen, flen, 0};
    ck_assert_int_eq(t_struct(&c, fm, 0), 0);
    ck_assert_uint_eq(c.pos, flen);
    ck_assert_int_eq(t_int(fm, 1, -1), 2);
    ck_assert(t_str_eq(t_get(fm, 6), "qkreport qk-synth " QK_VERSION_STRING));
    ck_assert_int_eq(t_get(fm, 7)->n, 5);
    check_schema(fm);
    d->footer = fm;
    d->dim = dim;
    int64_t rows = t_int(fm, 3, -1);
    for (int k = 0; k < 3; k++)
        d->cols[k] = qk_malloc((size_t)(rows + 1) * 4);
    d->vector = qk_malloc((size_t)(rows * dim + 1) * 4);
    const tnode *rgs = t_get(fm, 4);
    d->ngroups = rgs->n;
    for (int g = 0; g < rgs->n; g++) {
        const tnode *rg = &rgs->kids[g];
        int64_t rg_rows = t_int(rg, 3, -1);
        const tnode *cols = t_get(rg, 1);
        ck_assert_int_eq(cols->n, 5);
        ck_assert_int_eq(t_int(rg, 7, -1), g);
        int64_t usum = 0;
        for (int k = 0; k < 5; k++) {
            chunk_info scratch_ci;
            chunk_info *ci = g < 8 ? &d->chunk[g][k] : &scratch_ci;
            memset(ci, 0, sizeof *ci);
            decode_chunk(d, f, &cols->kids[k], k, rg_rows, ci);
            usum += t_int(t_get(&cols->kids[k], 3), 6, -1);
        }
        ck_assert_int_eq(usum, t_int(rg, 2, -1));
        d->rows += rg_rows;
    }
    ck_assert_int_eq(d->rows, rows);
    ck_assert_int_eq(d->nvector, rows * dim);
}

static void free_decoded(decoded *d, raw_file *f, tnode *fm)
{
    for (int k = 0; k < 3; k++)
        free(d->cols[k]);
    free(d->vector);
    free(f->data);
    t_free(fm);
}

static void assert_same_bits(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(float_bits(a[i]) == float_bits(b[i]),
                      "value %lld: %08x != %08x", (long long)i,
                      float_bits(a[i]), float_bits(b[i]));
}

static void assert_ints(const int32_t *a, const int32_t *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(a[i] == b[i], "row %lld: %d != %d", (long long)i, a[i],
                      b[i]);
}

static void check_decoded(const decoded *d, const table *t)
{
    ck_assert_int_eq(d->rows, t->rows);
    assert_ints(d->cols[0], t->bucket, t->rows);
    assert_ints(d->cols[1], t->example_id, t->rows);
    assert_ints(d->cols[2], t->position, t->rows);
    assert_same_bits(d->vector, t->vector, t->rows * t->dim);
}

/* Reads path with the library reader and compares every value. */
static void check_reader(const char *path, const table *t)
{
    qk_pq_table r;
    qk_err err = {{0}};
    int rc = qk_parquet_read_file(path, &r, &err);
    ck_assert_msg(rc == 0, "reader on %s: %s", path, err.msg);
    ck_assert_int_eq(r.rows, t->rows);
    if (t->rows > 0) {
        ck_assert_int_eq(r.dim, t->dim);
        assert_ints(r.bucket, t->bucket, t->rows);
        assert_ints(r.example_id, t->example_id, t->rows);
        assert_ints(r.position, t->position, t->rows);
        assert_same_bits(r.vector, t->vector, t->rows * t->dim);
    }
    qk_pq_table_free(&r);
}

/* ------------------------------------------------------------------ */
/* Hybrid encoder                                                      */

static void hybrid_roundtrip(const uint32_t *v, size_t n, int bw,
                             size_t expect_len)
{
    size_t bound = qk_pq_hybrid_bound(n, bw);
    uint8_t *buf = qk_malloc(bound);
    size_t len = qk_pq_hybrid_encode(v, n, bw, buf);
    ck_assert_uint_le(len, bound);
    if (expect_len)
        ck_assert_uint_eq(len, expect_len);
    uint32_t *back = qk_calloc(n + 1, sizeof *back);
    ck_assert_int_eq(hybrid_decode(buf, len, bw, back, n), (long)len);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(back[i] == v[i], "value %zu: %u != %u (bw %d)", i,
                      back[i], v[i], bw);
    free(back);
    free(buf);
}

START_TEST(test_hybrid_exact_bytes)
{
    uint32_t v[1000];
    uint8_t out[512];
    /* 1000 equal values: one RLE run, header varint(2000), value byte. */
    for (int i = 0; i < 1000; i++)
        v[i] = 5;
    ck_assert_uint_eq(qk_pq_hybrid_encode(v, 1000, 5, out), 3);
    ck_assert_int_eq(out[0], 0xD0);
    ck_assert_int_eq(out[1], 0x0F);
    ck_assert_int_eq(out[2], 5);
    /* 0,1,0,1,... x16 at width 1: two bit-packed groups 0xAA 0xAA. */
    for (int i = 0; i < 16; i++)
        v[i] = (uint32_t)(i & 1);
    ck_assert_uint_eq(qk_pq_hybrid_encode(v, 16, 1, out), 3);
    ck_assert_int_eq(out[0], 0x05);
    ck_assert_int_eq(out[1], 0xAA);
    ck_assert_int_eq(out[2], 0xAA);
    /* 1,2,3 then twenty 7s at width 3: a group of 8 filled with five 7s,
     * then an RLE run of the remaining fifteen. */
    v[0] = 1, v[1] = 2, v[2] = 3;
    for (int i = 3; i < 23; i++)
        v[i] = 7;
    ck_assert_uint_eq(qk_pq_hybrid_encode(v, 23, 3, out), 6);
    ck_assert_int_eq(out[0], 0x03);
    /* 1|2<<3|3<<6|7<<9|... LSB first */
    ck_assert_int_eq(out[1], (1 | 2 << 3 | 3 << 6) & 0xFF);
    ck_assert_int_eq(out[4], 0x1E);
    ck_assert_int_eq(out[5], 7);
    /* A two-byte RLE value at width 9. */
    for (int i = 0; i < 8; i++)
        v[i] = 300;
    ck_assert_uint_eq(qk_pq_hybrid_encode(v, 8, 9, out), 3);
    ck_assert_int_eq(out[0], 16);
    ck_assert_int_eq(out[1], 300 & 0xFF);
    ck_assert_int_eq(out[2], 300 >> 8);
}
END_TEST

START_TEST(test_hybrid_roundtrip_edges)
{
    enum { N = 5000 };
    uint32_t *v = qk_malloc(N * sizeof *v);
    uint64_t s = 42;
    /* All equal, at several widths including 0 and 32. */
    for (int bw = 0; bw <= 32; bw += 8) {
        for (int i = 0; i < N; i++)
            v[i] = bw == 0 ? 0 : (uint32_t)((1ull << bw) - 1);
        hybrid_roundtrip(v, N, bw, 0);
    }
    /* Alternating, odd lengths (last group padded). */
    for (int i = 0; i < N; i++)
        v[i] = (uint32_t)(i & 1);
    for (size_t n = 1; n <= 17; n++)
        hybrid_roundtrip(v, n, 1, 0);
    hybrid_roundtrip(v, 4999, 1, 2 + (4999 + 7) / 8);
    /* Dictionaries of 1, 2^k and 2^k + 1 entries at their bit widths. */
    static const int sizes[] = {1, 2, 3, 16, 17, 256, 257, 4096, 4097, 65536};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int entries = sizes[k], bw = 1;
        while ((1 << bw) < entries)
            bw++;
        for (int i = 0; i < N; i++)
            v[i] = (uint32_t)(lcg_next(&s) % (uint64_t)entries);
        v[N / 2] = (uint32_t)entries - 1; /* the largest index occurs */
        hybrid_roundtrip(v, N, bw, 0);
    }
    /* Runs of every length 1..20 around the group boundary. */
    size_t n = 0;
    for (uint32_t len = 1; n < N - 20; len = len % 20 + 1)
        for (uint32_t i = 0; i < len; i++)
            v[n++] = len;
    hybrid_roundtrip(v, n, 5, 0);
    /* Random 32-bit values. */
    for (int i = 0; i < N; i++)
        v[i] = (uint32_t)(lcg_next(&s) << 1 ^ lcg_next(&s));
    hybrid_roundtrip(v, N, 32, 0);
    hybrid_roundtrip(v, 0, 7, 0);
    free(v);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Whole files                                                         */

static const int codecs[4] = {QK_CODEC_UNCOMPRESSED, QK_CODEC_SNAPPY,
                              QK_CODEC_GZIP, QK_CODEC_ZSTD};

/* 30 rows of dim 8 in row groups of 7 rows, 13 values per page: rows
 * span pages, and the last group has 2 rows. */
START_TEST(test_variants_structure_and_values)
{
    table t = make_table(30, 8, 40, 7);
    int combo = _i; /* codec x v2 x dictionary */
    qk_pq_write_opts o;
    qk_pq_write_opts_default(&o);
    o.codec = codecs[combo % 4];
    o.data_page_v2 = (combo / 4) % 2;
    o.dictionary_vectors = combo / 8;
    o.rows_per_group = 7;
    o.values_per_page = 13;
    char name[64];
    snprintf(name, sizeof name, "variant-%d.parquet", combo);
    char *path = tmp_path(name);
    write_table(path, &o, &t);

    decoded d;
    raw_file f;
    tnode fm;
    decode_file(path, 8, &d, &f, &fm);
    check_decoded(&d, &t);
    ck_assert_int_eq(d.ngroups, 5);
    int spanning = 0;
    for (int g = 0; g < 5; g++) {
        int rows = g < 4 ? 7 : 2;
        const chunk_info *vc = &d.chunk[g][3];
        int data_pages = (rows * 8 + 12) / 13;
        ck_assert_int_eq(vc->npages, data_pages + o.dictionary_vectors);
        for (int p = o.dictionary_vectors; p < vc->npages; p++) {
            ck_assert_int_eq(vc->page_type[p], o.data_page_v2 ? 3 : 0);
            ck_assert_int_eq(vc->encoding[p], o.dictionary_vectors ? 8 : 0);
            spanning += vc->mid_row[p];
        }
        if (o.dictionary_vectors) {
            ck_assert_int_eq(vc->nencodings, 3);
            ck_assert_int_eq(vc->encodings[0], 0);
            ck_assert_int_eq(vc->encodings[1], 3);
            ck_assert_int_eq(vc->encodings[2], 8);
        } else {
            ck_assert_int_eq(vc->nencodings, 2);
            ck_assert_int_eq(vc->encodings[0], 3);
            ck_assert_int_eq(vc->encodings[1], 0);
        }
        for (int c = 0; c < 3; c++) {
            const chunk_info *ic = &d.chunk[g][c];
            ck_assert_int_eq(ic->npages, 2);
            ck_assert_int_eq(ic->page_type[0], 2);
            ck_assert_int_eq(ic->encoding[1], 8);
            ck_assert_int_eq(ic->nencodings, 3);
        }
        const chunk_info *sw = &d.chunk[g][4];
        ck_assert_int_eq(sw->npages, 2);
        ck_assert_int_eq(sw->dict_entries, 0);
        ck_assert_int_eq(sw->dict_uncompressed, 0);
        ck_assert_int_eq(sw->bit_width[1], 0);
        ck_assert_int_eq(sw->has_statistics, 0);
    }
    /* 7 * 8 = 56 values per group cut at 13: pages start at 0, 13, 26, 39,
     * 52 within a group, of which 13, 26, 39 and 52 are mid-row; the last
     * group (16 values) has one mid-row page. */
    ck_assert_int_eq(spanning, 4 * 4 + 1);
    free_decoded(&d, &f, &fm);
    check_reader(path, &t);
    unlink(path);
    free(path);
    free_table(&t);
}
END_TEST

/* Page forms (v1, v2, v2 with raw values), int encodings and vector
 * encodings of the test options in every combination, each under one
 * codec; the codecs cycle so that each meets every page form. */
static const int all_codecs[5] = {QK_CODEC_UNCOMPRESSED, QK_CODEC_SNAPPY,
                                  QK_CODEC_GZIP, QK_CODEC_ZSTD,
                                  QK_CODEC_LZ4_RAW};
enum { VEC_DICTIONARY, VEC_PLAIN, VEC_BSS };
#define ENCODING_COMBOS (3 * 4 * 3)

/* Parquet's value encoding of the int pages for each qk_pq_int_encoding. */
static const int int_page_encoding[4] = {8, 0, 5, 9};

static void check_int_chunk(const chunk_info *ic, const qk_pq_write_opts *o,
                            int rows)
{
    int dict = o->int_encoding == QK_INTS_DICTIONARY;
    int data_pages = (rows + 3) / 4; /* rows_per_int_page 4 */
    ck_assert_int_eq(ic->npages, dict + data_pages);
    ck_assert_int_eq(ic->page_type[0], dict ? 2 : o->data_page_v2 ? 3 : 0);
    for (int p = dict; p < ic->npages; p++)
        ck_assert_int_eq(ic->encoding[p], int_page_encoding[o->int_encoding]);
    /* the encodings list: [PLAIN of the dictionary], RLE, the data pages' */
    ck_assert_int_eq(ic->nencodings, 2 + dict);
    ck_assert_int_eq(ic->encodings[dict], 3);
    ck_assert_int_eq(ic->encodings[dict + 1],
                     int_page_encoding[o->int_encoding]);
}

static void check_vector_chunk(const chunk_info *vc, const qk_pq_write_opts *o,
                               int vectors, int rows)
{
    int dict = vectors == VEC_DICTIONARY;
    int expect = dict ? 8 : vectors == VEC_BSS ? 9 : 0;
    ck_assert_int_eq(vc->npages, dict + (rows * 8 + 12) / 13);
    for (int p = dict; p < vc->npages; p++) {
        ck_assert_int_eq(vc->page_type[p], o->data_page_v2 ? 3 : 0);
        ck_assert_int_eq(vc->encoding[p], expect);
        if (o->data_page_v2)
            ck_assert_int_eq(vc->compressed[p],
                             !o->v2_raw_values &&
                                 o->codec != QK_CODEC_UNCOMPRESSED);
    }
}

START_TEST(test_encoding_variants)
{
    int combo = _i;
    int pages = combo % 3, vectors = combo / 12;
    table t = make_table(30, 8, 40, 7 + (uint64_t)combo);
    /* neighbours whose 32-bit delta wraps around */
    t.example_id[3] = INT32_MAX;
    t.example_id[4] = INT32_MIN;
    t.example_id[5] = INT32_MAX;
    qk_pq_write_opts o;
    qk_pq_write_opts_default(&o);
    o.codec = all_codecs[combo % 5];
    o.data_page_v2 = pages > 0;
    o.v2_raw_values = pages == 2;
    o.int_encoding = combo / 3 % 4;
    o.rows_per_int_page = 4;
    o.dictionary_vectors = vectors == VEC_DICTIONARY;
    o.byte_stream_split_vectors = vectors != VEC_PLAIN;
    o.rows_per_group = 7;
    o.values_per_page = 13;
    char name[64];
    snprintf(name, sizeof name, "encoding-%d.parquet", combo);
    char *path = tmp_path(name);
    write_table(path, &o, &t);

    decoded d;
    raw_file f;
    tnode fm;
    decode_file(path, 8, &d, &f, &fm);
    check_decoded(&d, &t);
    ck_assert_int_eq(d.ngroups, 5);
    for (int g = 0; g < 5; g++) {
        int rows = g < 4 ? 7 : 2;
        for (int c = 0; c < 3; c++)
            check_int_chunk(&d.chunk[g][c], &o, rows);
        check_vector_chunk(&d.chunk[g][3], &o, vectors, rows);
    }
    free_decoded(&d, &f, &fm);
    check_reader(path, &t);
    unlink(path);
    free(path);
    free_table(&t);
}
END_TEST

/* Dictionary sizes of 1, 2^k and 2^k + 1 entries give bit widths 1, k,
 * k + 1 in the data pages; the position dictionary grows with the rows. */
START_TEST(test_dictionary_bit_widths)
{
    static const int distinct[] = {1, 2, 256, 257};
    static const int expect_bw[] = {1, 1, 8, 9};
    int k = _i;
    table t = make_table(17, 128, distinct[k], 11);
    qk_pq_write_opts o;
    qk_pq_write_opts_default(&o);
    char name[64];
    snprintf(name, sizeof name, "dict-%d.parquet", distinct[k]);
    char *path = tmp_path(name);
    write_table(path, &o, &t);
    decoded d;
    raw_file f;
    tnode fm;
    decode_file(path, 128, &d, &f, &fm);
    check_decoded(&d, &t);
    ck_assert_int_eq(d.chunk[0][3].dict_entries, distinct[k]);
    ck_assert_int_eq(d.chunk[0][3].bit_width[1], expect_bw[k]);
    ck_assert_int_eq(d.chunk[0][2].dict_entries, 17); /* positions */
    ck_assert_int_eq(d.chunk[0][2].bit_width[1], 5);
    free_decoded(&d, &f, &fm);
    check_reader(path, &t);
    unlink(path);
    free(path);
    free_table(&t);
}
END_TEST

START_TEST(test_position_dictionary_power_of_two)
{
    table t = make_table(16, 4, 3, 5);
    char *path = tmp_path("pos16.parquet");
    write_table(path, NULL, &t);
    decoded d;
    raw_file f;
    tnode fm;
    decode_file(path, 4, &d, &f, &fm);
    check_decoded(&d, &t);
    ck_assert_int_eq(d.chunk[0][2].dict_entries, 16);
    ck_assert_int_eq(d.chunk[0][2].bit_width[1], 4);
    ck_assert_int_eq(d.chunk[0][1].dict_entries, 4); /* example ids */
    ck_assert_int_eq(d.chunk[0][1].bit_width[1], 2);
    free_decoded(&d, &f, &fm);
    check_reader(path, &t);
    unlink(path);
    free(path);
    free_table(&t);
}
END_TEST

START_TEST(test_deterministic_bytes)
{
    table t = make_table(300, 64, 0, 3);
    char *a = tmp_path("det-a.parquet"), *b = tmp_path("det-b.parquet");
    for (int c = 0; c < 4; c++) {
        qk_pq_write_opts o;
        qk_pq_write_opts_default(&o);
        o.codec = codecs[c];
        o.values_per_page = 1000;
        write_table(a, &o, &t);
        write_table(b, &o, &t);
        uint8_t *da, *db;
        size_t la, lb;
        qk_err err;
        ck_assert(qk_read_file(a, &da, &la, &err) == 0);
        ck_assert(qk_read_file(b, &db, &lb, &err) == 0);
        ck_assert_uint_eq(la, lb);
        ck_assert(memcmp(da, db, la) == 0);
        free(da);
        free(db);
    }
    unlink(a);
    unlink(b);
    free(a);
    free(b);
    free_table(&t);
}
END_TEST

/* 600 x 128 distinct floats: the dictionary fills up at 65536 entries in
 * the seventh page of 10000 values; that page and the last are PLAIN, or
 * BYTE_STREAM_SPLIT (then in v2 pages with LZ4_RAW). */
START_TEST(test_dictionary_fallback)
{
    int bss = _i;
    table t = make_table(600, 128, 1, 9);
    for (int64_t i = 0; i < 600 * 128; i++)
        t.vector[i] = bits_to_float(0x3F800000u + (uint32_t)(i * 37 % 76800));
    qk_pq_write_opts o;
    qk_pq_write_opts_default(&o);
    o.values_per_page = 10000;
    if (bss) {
        o.byte_stream_split_vectors = 1;
        o.data_page_v2 = 1;
        o.codec = QK_CODEC_LZ4_RAW;
    }
    char *path = tmp_path("fallback.parquet");
    write_table(path, &o, &t);
    decoded d;
    raw_file f;
    tnode fm;
    decode_file(path, 128, &d, &f, &fm);
    check_decoded(&d, &t);
    const chunk_info *vc = &d.chunk[0][3];
    static const int bw[6] = {14, 15, 15, 16, 16, 16};
    ck_assert_int_eq(vc->npages, 9);
    ck_assert_int_eq(vc->dict_entries, 65536);
    for (int p = 1; p <= 6; p++) {
        ck_assert_int_eq(vc->encoding[p], 8);
        ck_assert_int_eq(vc->bit_width[p], bw[p - 1]);
    }
    ck_assert_int_eq(vc->encoding[7], bss ? 9 : 0);
    ck_assert_int_eq(vc->encoding[8], bss ? 9 : 0);
    ck_assert_int_eq(vc->num_values[8], 6800);
    ck_assert_int_eq(vc->nencodings, 3 + bss);
    ck_assert_int_eq(vc->encodings[2], 8);
    if (bss)
        ck_assert_int_eq(vc->encodings[3], 9);
    free_decoded(&d, &f, &fm);
    check_reader(path, &t);
    unlink(path);
    free(path);
    free_table(&t);
}
END_TEST

START_TEST(test_empty_file)
{
    table t = make_table(0, 128, 0, 1);
    char *path = tmp_path("empty.parquet");
    write_table(path, NULL, &t);
    decoded d;
    raw_file f;
    tnode fm;
    decode_file(path, 128, &d, &f, &fm);
    ck_assert_int_eq(d.rows, 0);
    ck_assert_int_eq(d.ngroups, 0);
    free_decoded(&d, &f, &fm);
    check_reader(path, &t);
    unlink(path);
    free(path);
    free_table(&t);
}
END_TEST

START_TEST(test_bad_arguments)
{
    table t = make_table(4, 8, 0, 1);
    char *path = tmp_path("bad.parquet");
    unlink(path);
    qk_pq_write_opts o;
    qk_pq_write_opts_default(&o);
    qk_err err = {{0}};
    o.codec = 3; /* LZO */
    ck_assert_int_eq(qk_parquet_write_file(path, &o, 4, 8, t.bucket,
                                           t.example_id, t.position, t.vector,
                                           &err),
                     -1);
    ck_assert_str_eq(err.msg, "unsupported codec 3");
    qk_pq_write_opts_default(&o);
    o.int_encoding = 4;
    ck_assert_int_eq(qk_parquet_write_file(path, &o, 4, 8, t.bucket,
                                           t.example_id, t.position, t.vector,
                                           &err),
                     -1);
    ck_assert_str_eq(err.msg, "unsupported int encoding 4");
    qk_pq_write_opts_default(&o);
    ck_assert_int_eq(qk_parquet_write_file(path, &o, 4, 0, t.bucket,
                                           t.example_id, t.position, t.vector,
                                           &err),
                     -1);
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_int_eq(qk_parquet_write_file(TMP_DIR "/no/such/dir/x.parquet",
                                           &o, 4, 8, t.bucket, t.example_id,
                                           t.position, t.vector, &err),
                     -1);
    free(path);
    free_table(&t);
}
END_TEST

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A production-sized file: 8000 rows x 128 bf16-exact floats. */
START_TEST(test_production_size)
{
    table t = make_table(8000, 128, 0, 2024);
    char *path = tmp_path("d128-8000.parquet");
    double t0 = now_seconds();
    write_table(path, NULL, &t);
    double secs = now_seconds() - t0;
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    double per_value = (double)st.st_size / (8000.0 * 128.0);
    printf("pqwrite: 8000x128 bf16 zstd-1: %lld bytes (%.3f bytes/value), "
           "written in %.1f ms\n",
           (long long)st.st_size, per_value, secs * 1e3);
    /* 12-14 bit indices, ZSTD on top: clearly under 2 bytes a value. */
    ck_assert(per_value < 2.0);
    decoded d;
    raw_file f;
    tnode fm;
    decode_file(path, 128, &d, &f, &fm);
    check_decoded(&d, &t);
    /* 1,024,000 values in pages of 262,144: four data pages. */
    ck_assert_int_eq(d.chunk[0][3].npages, 5);
    free_decoded(&d, &f, &fm);
    check_reader(path, &t);
    unlink(path);
    free(path);
    free_table(&t);
}
END_TEST

static Suite *pqwrite_suite(void)
{
    Suite *s = suite_create("pqwrite");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_hybrid_exact_bytes);
    tcase_add_test(tc, test_hybrid_roundtrip_edges);
    tcase_add_loop_test(tc, test_variants_structure_and_values, 0, 16);
    tcase_add_loop_test(tc, test_encoding_variants, 0, ENCODING_COMBOS);
    tcase_add_loop_test(tc, test_dictionary_bit_widths, 0, 4);
    tcase_add_test(tc, test_position_dictionary_power_of_two);
    tcase_add_test(tc, test_deterministic_bytes);
    tcase_add_loop_test(tc, test_dictionary_fallback, 0, 2);
    tcase_add_test(tc, test_empty_file);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_production_size);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qk_test_run(pqwrite_suite());
}
