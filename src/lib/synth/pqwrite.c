/* Parquet writer for the sniffed-qk layout of the capture tool
 * (viktor-shcherb/qk-sniffer; the subset docs/parquet-subset.md reads).
 *
 * A file is written as pyarrow 22 writes it for the capture tool: one row
 * group (or several when rows_per_group is set), and in every column chunk
 * a PLAIN dictionary page followed by RLE_DICTIONARY data pages.  The vector
 * column may instead use PLAIN pages, and falls back to PLAIN for the rest
 * of a chunk once its dictionary is full.  Data pages of a chunk are
 * buffered in memory because the dictionary page, written first, is only
 * complete after the last data page has been encoded.
 *
 * Options make files as other writers do, for tests of the reader: the
 * int columns PLAIN, DELTA_BINARY_PACKED or BYTE_STREAM_SPLIT in pages of
 * a chosen size, BYTE_STREAM_SPLIT instead of PLAIN vector pages,
 * DATA_PAGE_V2 pages with uncompressed values, and LZ4_RAW.
 *
 * The footer is Thrift compact protocol, produced by the small encoder
 * below.  Output depends only on the inputs and options. */
#include "qk/pqwrite.h"

#include <lz4.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

/* Parquet enums (parquet.thrift). */
enum { PT_INT32 = 1, PT_FLOAT = 4 };
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1, REP_REPEATED = 2 };
enum {
    ENC_PLAIN = 0, ENC_RLE = 3, ENC_DELTA_BINARY_PACKED = 5,
    ENC_RLE_DICTIONARY = 8, ENC_BYTE_STREAM_SPLIT = 9, NUM_ENCODINGS = 10
};
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3 };
enum { CONVERTED_LIST = 3 };

/* The vector dictionary holds at most this many entries (16-bit indices);
 * a chunk whose values need more writes its remaining pages PLAIN. */
#define VECTOR_DICT_LIMIT 65536
#define DEFAULT_VALUES_PER_PAGE (1048576 / 4)
#define GZIP_LEVEL 6

#define NUM_COLUMNS 5

/* ------------------------------------------------------------------ */
/* Growable byte buffer                                                */

typedef struct pq_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} pq_buf;

static void buf_reserve(pq_buf *b, size_t extra)
{
    if (b->cap - b->len >= extra)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra)
        cap *= 2;
    b->data = qk_realloc(b->data, cap);
    b->cap = cap;
}

static void buf_put(pq_buf *b, const void *src, size_t n)
{
    if (n == 0)
        return;
    buf_reserve(b, n);
    memcpy(b->data + b->len, src, n);
    b->len += n;
}

static void buf_byte(pq_buf *b, uint8_t v)
{
    buf_put(b, &v, 1);
}

static void buf_u32le(pq_buf *b, uint32_t v)
{
    uint8_t s[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                    (uint8_t)(v >> 24)};
    buf_put(b, s, 4);
}

static void buf_varint(pq_buf *b, uint64_t v)
{
    buf_reserve(b, 10);
    b->len += qk_pq_put_uleb128(b->data + b->len, v);
}

static void buf_free(pq_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------ */
/* Thrift compact protocol encoder                                     */

enum {
    TC_TRUE = 1, TC_FALSE = 2, TC_I16 = 4, TC_I32 = 5, TC_I64 = 6,
    TC_BINARY = 8, TC_LIST = 9, TC_STRUCT = 12
};

#define TC_MAX_DEPTH 16

/* Field ids are written as deltas from the previous field of the same
 * struct, so each open struct keeps its last id on a stack. */
typedef struct tc_writer {
    pq_buf *out;
    int depth;
    int16_t last_id[TC_MAX_DEPTH];
} tc_writer;

static void tc_init(tc_writer *w, pq_buf *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
}

static uint64_t zigzag64(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void tc_field(tc_writer *w, int16_t id, int type)
{
    int delta = id - w->last_id[w->depth];
    if (delta > 0 && delta <= 15) {
        buf_byte(w->out, (uint8_t)(delta << 4 | type));
    } else {
        buf_byte(w->out, (uint8_t)type);
        buf_varint(w->out, zigzag64(id));
    }
    w->last_id[w->depth] = id;
}

/* Opens a struct: as a field (id > 0) or as a list element (id == 0). */
static void tc_struct_begin(tc_writer *w, int16_t id)
{
    if (id > 0)
        tc_field(w, id, TC_STRUCT);
    w->depth++;
    w->last_id[w->depth] = 0;
}

static void tc_struct_end(tc_writer *w)
{
    buf_byte(w->out, 0);
    w->depth--;
}

static void tc_i16(tc_writer *w, int16_t id, int16_t v)
{
    tc_field(w, id, TC_I16);
    buf_varint(w->out, zigzag64(v));
}

static void tc_i32(tc_writer *w, int16_t id, int32_t v)
{
    tc_field(w, id, TC_I32);
    buf_varint(w->out, zigzag64(v));
}

static void tc_i64(tc_writer *w, int16_t id, int64_t v)
{
    tc_field(w, id, TC_I64);
    buf_varint(w->out, zigzag64(v));
}

static void tc_bool(tc_writer *w, int16_t id, int v)
{
    tc_field(w, id, v ? TC_TRUE : TC_FALSE);
}

static void tc_binary_raw(tc_writer *w, const char *s)
{
    size_t n = strlen(s);
    buf_varint(w->out, n);
    buf_put(w->out, s, n);
}

static void tc_string(tc_writer *w, int16_t id, const char *s)
{
    tc_field(w, id, TC_BINARY);
    tc_binary_raw(w, s);
}

static void tc_list_begin(tc_writer *w, int16_t id, int elem_type, int n)
{
    tc_field(w, id, TC_LIST);
    if (n < 15) {
        buf_byte(w->out, (uint8_t)(n << 4 | elem_type));
    } else {
        buf_byte(w->out, (uint8_t)(0xF0 | elem_type));
        buf_varint(w->out, (uint64_t)n);
    }
}

/* An i32 list element (no field header). */
static void tc_elem_i32(tc_writer *w, int32_t v)
{
    buf_varint(w->out, zigzag64(v));
}

/* ------------------------------------------------------------------ */
/* RLE / bit-packed hybrid encoder                                     */

/* The encoding has no length prefix and no bit-width byte; out must hold
 * qk_pq_hybrid_bound(n, bit_width) bytes. */
size_t qk_pq_hybrid_bound(size_t n, int bit_width)
{
    /* Every RLE run covers >= 8 values and is preceded by at most one
     * literal run: two headers (<= 10 bytes each) plus a value of <= 4
     * bytes per 8 values, plus the packed groups themselves. */
    return (n / 8 + 2) * ((size_t)bit_width + 24);
}

/* Packs count (<= 8) values, zero-padded to 8, LSB first: bit_width bytes. */
static size_t pack_group(const uint32_t *v, size_t count, int bit_width,
                         uint8_t *out)
{
    uint64_t acc = 0;
    int nbits = 0;
    size_t o = 0;
    for (size_t i = 0; i < 8; i++) {
        acc |= (uint64_t)(i < count ? v[i] : 0) << nbits;
        nbits += bit_width;
        while (nbits >= 8) {
            out[o++] = (uint8_t)acc;
            acc >>= 8;
            nbits -= 8;
        }
    }
    return o;
}

static size_t put_literal_run(const uint32_t *v, size_t n, int bit_width,
                              uint8_t *out)
{
    if (n == 0)
        return 0;
    size_t groups = (n + 7) / 8;
    size_t o = qk_pq_put_uleb128(out, (uint64_t)groups << 1 | 1);
    for (size_t g = 0; g < groups; g++) {
        size_t left = n - g * 8;
        o += pack_group(v + g * 8, left < 8 ? left : 8, bit_width, out + o);
    }
    return o;
}

static size_t put_rle_run(uint32_t value, size_t count, int bit_width,
                          uint8_t *out)
{
    size_t o = qk_pq_put_uleb128(out, (uint64_t)count << 1);
    for (int b = 0; b < (bit_width + 7) / 8; b++)
        out[o++] = (uint8_t)(value >> (8 * b));
    return o;
}

size_t qk_pq_hybrid_encode(const uint32_t *values, size_t n, int bit_width,
                           uint8_t *out)
{
    size_t o = 0;
    size_t lit_start = 0; /* values [lit_start, i) await a literal run */
    size_t i = 0;
    while (i < n) {
        size_t run = 1;
        while (i + run < n && values[i + run] == values[i])
            run++;
        /* Literal runs hold whole groups of 8 unless they end the stream,
         * so the first values of a run may go to fill the last group. */
        size_t pad = (8 - (i - lit_start) % 8) % 8;
        if (run >= pad + 8) {
            o += put_literal_run(values + lit_start, i + pad - lit_start,
                                 bit_width, out + o);
            o += put_rle_run(values[i], run - pad, bit_width, out + o);
            lit_start = i + run;
        }
        i += run;
    }
    o += put_literal_run(values + lit_start, n - lit_start, bit_width, out + o);
    return o;
}

static void buf_hybrid(pq_buf *b, const uint32_t *values, size_t n,
                       int bit_width)
{
    buf_reserve(b, qk_pq_hybrid_bound(n, bit_width));
    b->len += qk_pq_hybrid_encode(values, n, bit_width, b->data + b->len);
}

/* ceil(log2(entries)), with 1 for a single entry and 0 for none. */
static int dict_bit_width(size_t entries)
{
    if (entries == 0)
        return 0;
    int bw = 1;
    while (bw < 32 && ((size_t)1 << bw) < entries)
        bw++;
    return bw;
}

/* ------------------------------------------------------------------ */
/* Dictionary: distinct 32-bit patterns in first-seen order             */

typedef struct pq_dict {
    uint32_t *keys;  /* entries in insertion order */
    size_t count;
    size_t keys_cap;
    int32_t *slots;  /* open addressing: entry index + 1, 0 = empty */
    size_t mask;     /* slot count - 1 (a power of two) */
} pq_dict;

static void dict_reset(pq_dict *d)
{
    if (!d->slots) {
        d->mask = 1023;
        d->slots = qk_calloc(d->mask + 1, sizeof *d->slots);
    } else {
        memset(d->slots, 0, (d->mask + 1) * sizeof *d->slots);
    }
    d->count = 0;
}

static void dict_free(pq_dict *d)
{
    free(d->keys);
    free(d->slots);
    memset(d, 0, sizeof *d);
}

static size_t dict_slot(const pq_dict *d, uint32_t key)
{
    /* Fibonacci hashing: the high product bits depend on every key bit,
     * which matters for bf16 floats whose low 16 bits are all zero. */
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 32) & d->mask;
}

static void dict_grow(pq_dict *d)
{
    free(d->slots);
    d->mask = d->mask * 2 + 1;
    d->slots = qk_calloc(d->mask + 1, sizeof *d->slots);
    for (size_t e = 0; e < d->count; e++) {
        size_t s = dict_slot(d, d->keys[e]);
        while (d->slots[s])
            s = (s + 1) & d->mask;
        d->slots[s] = (int32_t)(e + 1);
    }
}

/* Index of key, inserting it if new; -1 when it is new and the dictionary
 * already holds limit entries. */
static int64_t dict_index(pq_dict *d, uint32_t key, size_t limit)
{
    size_t s = dict_slot(d, key);
    while (d->slots[s]) {
        size_t e = (size_t)d->slots[s] - 1;
        if (d->keys[e] == key)
            return (int64_t)e;
        s = (s + 1) & d->mask;
    }
    if (d->count >= limit)
        return -1;
    if (d->count == d->keys_cap) {
        d->keys_cap = d->keys_cap ? d->keys_cap * 2 : 1024;
        d->keys = qk_realloc(d->keys, d->keys_cap * sizeof *d->keys);
    }
    d->keys[d->count] = key;
    d->slots[s] = (int32_t)(++d->count);
    if (d->count * 2 > d->mask + 1)
        dict_grow(d);
    return (int64_t)d->count - 1;
}

/* ------------------------------------------------------------------ */
/* Writer state                                                        */

/* What the footer needs to know about one column chunk. */
typedef struct chunk_meta {
    int64_t num_values;
    int64_t uncompressed;   /* page headers + uncompressed page bodies */
    int64_t compressed;     /* page headers + stored page bodies */
    int64_t dict_offset;    /* -1: no dictionary page */
    int64_t data_offset;
    int dict_pages;
    int data_pages[NUM_ENCODINGS]; /* data pages by value encoding */
} chunk_meta;

typedef struct row_group_meta {
    int64_t rows;
    int64_t offset;
    chunk_meta cols[NUM_COLUMNS];
} row_group_meta;

/* One page to emit: header fields besides the sizes. */
typedef struct page_desc {
    int type;          /* PAGE_DATA, PAGE_DICTIONARY or PAGE_DATA_V2 */
    int32_t num_values;
    int32_t num_nulls; /* v2 only */
    int32_t num_rows;  /* v2 only */
    int encoding;
    int32_t def_len;   /* v2 only: level byte lengths */
    int32_t rep_len;
    int empty_stats;   /* write an empty Statistics struct */
} page_desc;

typedef struct pq_writer {
    const qk_pq_write_opts *opts;
    ZSTD_CCtx *zstd;
    pq_buf pages;    /* data pages of the chunk being written */
    pq_buf raw;      /* an uncompressed page body */
    pq_buf values;   /* the values part of a v2 page */
    pq_buf packed;   /* a compressed body */
    pq_buf header;   /* a page header */
    uint32_t *scratch; /* levels or dictionary indices */
    size_t scratch_cap;
    pq_dict dict;
} pq_writer;

static uint32_t *scratch(pq_writer *w, size_t n)
{
    if (n > w->scratch_cap) {
        w->scratch_cap = n;
        free(w->scratch);
        w->scratch = qk_malloc(n * sizeof *w->scratch);
    }
    return w->scratch;
}

/* ------------------------------------------------------------------ */
/* Compression                                                         */

static int gzip_compress(const uint8_t *src, size_t n, pq_buf *dst, qk_err *err)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    /* windowBits 16 + MAX_WBITS writes a gzip wrapper (mtime 0, fixed OS
     * byte), so the output depends only on the input. */
    if (deflateInit2(&z, GZIP_LEVEL, Z_DEFLATED, 16 + MAX_WBITS, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return qk_fail(err, "gzip: cannot initialise the compressor");
    size_t bound = deflateBound(&z, (uLong)n);
    buf_reserve(dst, bound);
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)n;
    z.next_out = dst->data + dst->len;
    z.avail_out = (uInt)bound;
    int rc = deflate(&z, Z_FINISH);
    size_t out = bound - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END)
        return qk_fail(err, "gzip: compression failed (%d)", rc);
    dst->len += out;
    return 0;
}

/* Appends the compressed form of src to dst. */
static int compress_append(pq_writer *w, const uint8_t *src, size_t n,
                           pq_buf *dst, qk_err *err)
{
    switch (w->opts->codec) {
    case QK_CODEC_UNCOMPRESSED:
        buf_put(dst, src, n);
        return 0;
    case QK_CODEC_ZSTD: {
        size_t bound = ZSTD_compressBound(n);
        buf_reserve(dst, bound);
        size_t r = ZSTD_compressCCtx(w->zstd, dst->data + dst->len, bound,
                                     src, n, w->opts->zstd_level);
        if (ZSTD_isError(r))
            return qk_fail(err, "zstd: %s", ZSTD_getErrorName(r));
        dst->len += r;
        return 0;
    }
    case QK_CODEC_SNAPPY: {
        size_t out = snappy_max_compressed_length(n);
        buf_reserve(dst, out);
        if (snappy_compress((const char *)src, n,
                            (char *)dst->data + dst->len, &out) != SNAPPY_OK)
            return qk_fail(err, "snappy: compression failed");
        dst->len += out;
        return 0;
    }
    case QK_CODEC_GZIP:
        return gzip_compress(src, n, dst, err);
    case QK_CODEC_LZ4_RAW: {
        if (n > LZ4_MAX_INPUT_SIZE)
            return qk_fail(err, "lz4: page of %zu bytes is too large", n);
        int bound = LZ4_compressBound((int)n);
        buf_reserve(dst, (size_t)bound);
        int out = LZ4_compress_default((const char *)src,
                                       (char *)dst->data + dst->len, (int)n,
                                       bound);
        if (out <= 0)
            return qk_fail(err, "lz4: compression failed");
        dst->len += (size_t)out;
        return 0;
    }
    }
    return qk_fail(err, "unsupported codec %d", w->opts->codec);
}

/* ------------------------------------------------------------------ */
/* Pages                                                               */

static void write_page_header(pq_buf *out, const page_desc *p,
                              int32_t uncompressed, int32_t compressed,
                              int is_compressed)
{
    tc_writer t;
    tc_init(&t, out);
    tc_i32(&t, 1, p->type);
    tc_i32(&t, 2, uncompressed);
    tc_i32(&t, 3, compressed);
    if (p->type == PAGE_DICTIONARY) {
        tc_struct_begin(&t, 7);
        tc_i32(&t, 1, p->num_values);
        tc_i32(&t, 2, ENC_PLAIN);
        tc_bool(&t, 3, 0);
        tc_struct_end(&t);
    } else if (p->type == PAGE_DATA) {
        tc_struct_begin(&t, 5);
        tc_i32(&t, 1, p->num_values);
        tc_i32(&t, 2, p->encoding);
        tc_i32(&t, 3, ENC_RLE);
        tc_i32(&t, 4, ENC_RLE);
        if (p->empty_stats) {
            tc_struct_begin(&t, 5);
            tc_struct_end(&t);
        }
        tc_struct_end(&t);
    } else {
        tc_struct_begin(&t, 8);
        tc_i32(&t, 1, p->num_values);
        tc_i32(&t, 2, p->num_nulls);
        tc_i32(&t, 3, p->num_rows);
        tc_i32(&t, 4, p->encoding);
        tc_i32(&t, 5, p->def_len);
        tc_i32(&t, 6, p->rep_len);
        tc_bool(&t, 7, is_compressed);
        if (p->empty_stats) {
            tc_struct_begin(&t, 8);
            tc_struct_end(&t);
        }
        tc_struct_end(&t);
    }
    buf_byte(out, 0);
}

/* Appends one page to out.  prefix (v2 levels) is stored as is; body is
 * compressed unless raw (v2 only).  Sizes are added to the chunk totals. */
static int emit_page(pq_writer *w, pq_buf *out, const page_desc *p,
                     const pq_buf *prefix, const pq_buf *body, int raw,
                     chunk_meta *m, qk_err *err)
{
    size_t prefix_len = prefix ? prefix->len : 0;
    w->packed.len = 0;
    if (raw)
        buf_put(&w->packed, body->data, body->len);
    else if (compress_append(w, body->data, body->len, &w->packed, err) != 0)
        return -1;
    size_t uncompressed = prefix_len + body->len;
    size_t compressed = prefix_len + w->packed.len;
    if (uncompressed > INT32_MAX || compressed > INT32_MAX)
        return qk_fail(err, "page of %zu bytes is too large", uncompressed);
    w->header.len = 0;
    write_page_header(&w->header, p, (int32_t)uncompressed,
                      (int32_t)compressed,
                      !raw && w->opts->codec != QK_CODEC_UNCOMPRESSED);
    buf_put(out, w->header.data, w->header.len);
    if (prefix)
        buf_put(out, prefix->data, prefix->len);
    buf_put(out, w->packed.data, w->packed.len);
    m->uncompressed += (int64_t)(w->header.len + uncompressed);
    m->compressed += (int64_t)(w->header.len + compressed);
    return 0;
}

static int level_bit_width(int max_level)
{
    return dict_bit_width((size_t)max_level + 1);
}

/* Appends the levels of a page: in v1 each stream has a u32 LE length
 * prefix; in v2 the streams are bare and their lengths go to the header. */
static void put_levels(pq_writer *w, pq_buf *out, const uint32_t *levels,
                       size_t n, int max_level, int32_t *len_out)
{
    int bw = level_bit_width(max_level);
    size_t start = out->len;
    if (!w->opts->data_page_v2)
        buf_u32le(out, 0);
    size_t stream = out->len;
    buf_hybrid(out, levels, n, bw);
    size_t len = out->len - stream;
    if (!w->opts->data_page_v2) {
        for (int b = 0; b < 4; b++)
            out->data[start + b] = (uint8_t)(len >> (8 * b));
    }
    *len_out = (int32_t)len;
}

/* Levels of n leaf values starting at leaf index first of a row group. */
static void put_vector_levels(pq_writer *w, pq_buf *out, int64_t first,
                              size_t n, int dim, page_desc *p)
{
    uint32_t *lv = scratch(w, n);
    int32_t rows = 0;
    int in_row = (int)(first % dim); /* index of the value within its row */
    for (size_t i = 0; i < n; i++) {
        lv[i] = in_row != 0;
        rows += in_row == 0;
        if (++in_row == dim)
            in_row = 0;
    }
    put_levels(w, out, lv, n, 1, &p->rep_len);
    for (size_t i = 0; i < n; i++)
        lv[i] = 3;
    put_levels(w, out, lv, n, 3, &p->def_len);
    p->num_rows = rows;
}

/* Levels of a flat column: n values, all with definition level def. */
static void put_flat_levels(pq_writer *w, pq_buf *out, size_t n, uint32_t def,
                            page_desc *p)
{
    uint32_t *lv = scratch(w, n);
    for (size_t i = 0; i < n; i++)
        lv[i] = def;
    put_levels(w, out, lv, n, 1, &p->def_len);
    p->rep_len = 0;
    p->num_rows = (int32_t)n;
}

/* Emits a data page whose levels were put in w->raw and whose values are
 * in w->values (v2) or also appended to w->raw (v1). */
static int emit_data_page(pq_writer *w, page_desc *p, chunk_meta *m,
                          qk_err *err)
{
    p->type = w->opts->data_page_v2 ? PAGE_DATA_V2 : PAGE_DATA;
    m->data_pages[p->encoding]++;
    if (w->opts->data_page_v2)
        return emit_page(w, &w->pages, p, &w->raw, &w->values,
                         w->opts->v2_raw_values, m, err);
    return emit_page(w, &w->pages, p, NULL, &w->raw, 0, m, err);
}

/* The buffer the values of a data page go to (see emit_data_page). */
static pq_buf *values_buf(pq_writer *w)
{
    if (w->opts->data_page_v2) {
        w->values.len = 0;
        return &w->values;
    }
    return &w->raw;
}

static void put_dict_indices(pq_buf *out, const uint32_t *idx, size_t n,
                             size_t dict_size)
{
    int bw = dict_bit_width(dict_size);
    buf_byte(out, (uint8_t)bw);
    if (n > 0)
        buf_hybrid(out, idx, n, bw);
}

/* Writes the dictionary page, then the buffered data pages, to fp. */
static int flush_chunk(pq_writer *w, FILE *fp, int64_t *offset,
                       const pq_dict *dict, chunk_meta *m, qk_err *err)
{
    pq_buf dict_page = {0};
    page_desc p = {.type = PAGE_DICTIONARY, .num_values = (int32_t)dict->count};
    w->raw.len = 0;
    for (size_t e = 0; e < dict->count; e++)
        buf_u32le(&w->raw, dict->keys[e]);
    if (emit_page(w, &dict_page, &p, NULL, &w->raw, 0, m, err) != 0) {
        buf_free(&dict_page);
        return -1;
    }
    m->dict_pages = 1;
    m->dict_offset = *offset;
    m->data_offset = *offset + (int64_t)dict_page.len;
    fwrite(dict_page.data, 1, dict_page.len, fp);
    fwrite(w->pages.data, 1, w->pages.len, fp);
    *offset += (int64_t)(dict_page.len + w->pages.len);
    buf_free(&dict_page);
    return 0;
}

/* Writes buffered data pages without a dictionary page. */
static void flush_pages(pq_writer *w, FILE *fp, int64_t *offset, chunk_meta *m)
{
    m->dict_offset = -1;
    m->data_offset = *offset;
    fwrite(w->pages.data, 1, w->pages.len, fp);
    *offset += (int64_t)w->pages.len;
}

static void chunk_begin(pq_writer *w, chunk_meta *m)
{
    memset(m, 0, sizeof *m);
    w->pages.len = 0;
    dict_reset(&w->dict);
}

/* ------------------------------------------------------------------ */
/* Column chunks                                                       */

/* The values of n int32s in the encoding the options ask for. */
static int put_int_values(pq_writer *w, pq_buf *out, const int32_t *v,
                          size_t n)
{
    switch (w->opts->int_encoding) {
    case QK_INTS_PLAIN:
        for (size_t i = 0; i < n; i++)
            buf_u32le(out, (uint32_t)v[i]);
        return ENC_PLAIN;
    case QK_INTS_BYTE_STREAM_SPLIT:
        buf_reserve(out, n * 4);
        qk_pq_byte_stream_split_encode(v, n, 4, out->data + out->len);
        out->len += n * 4;
        return ENC_BYTE_STREAM_SPLIT;
    case QK_INTS_DELTA: {
        int64_t *wide = qk_malloc((n ? n : 1) * sizeof *wide);
        for (size_t i = 0; i < n; i++)
            wide[i] = v[i];
        buf_reserve(out, qk_pq_delta_bound(n, 128, 4));
        out->len += qk_pq_delta_encode(wide, n, 32, 128, 4,
                                       out->data + out->len);
        free(wide);
        return ENC_DELTA_BINARY_PACKED;
    }
    default: {
        uint32_t *idx = scratch(w, n);
        for (size_t i = 0; i < n; i++)
            idx[i] = (uint32_t)dict_index(&w->dict, (uint32_t)v[i], SIZE_MAX);
        put_dict_indices(out, idx, n, w->dict.count);
        return ENC_RLE_DICTIONARY;
    }
    }
}

/* A non-null INT32 column: a dictionary page and RLE_DICTIONARY data
 * pages, or data pages of another encoding; one data page unless
 * rows_per_int_page is set. */
static int write_int_chunk(pq_writer *w, FILE *fp, int64_t *offset,
                           const int32_t *v, int64_t rows, chunk_meta *m,
                           qk_err *err)
{
    chunk_begin(w, m);
    m->num_values = rows;
    int64_t per_page = w->opts->rows_per_int_page > 0
                           ? w->opts->rows_per_int_page
                           : rows;
    for (int64_t first = 0; first < rows; first += per_page) {
        size_t n = (size_t)(rows - first < per_page ? rows - first : per_page);
        page_desc p = {.num_values = (int32_t)n};
        w->raw.len = 0;
        put_flat_levels(w, &w->raw, n, 1, &p);
        p.encoding = put_int_values(w, values_buf(w), v + first, n);
        if (emit_data_page(w, &p, m, err) != 0)
            return -1;
    }
    if (w->opts->int_encoding == QK_INTS_DICTIONARY)
        return flush_chunk(w, fp, offset, &w->dict, m, err);
    flush_pages(w, fp, offset, m);
    return 0;
}

/* The all-null sliding_window column: an empty dictionary and one data
 * page of zero definition levels and a zero bit width. */
static int write_null_chunk(pq_writer *w, FILE *fp, int64_t *offset,
                            int64_t rows, chunk_meta *m, qk_err *err)
{
    chunk_begin(w, m);
    m->num_values = rows;
    page_desc p = {.num_values = (int32_t)rows, .num_nulls = (int32_t)rows,
                   .encoding = ENC_RLE_DICTIONARY, .empty_stats = 1};
    w->raw.len = 0;
    put_flat_levels(w, &w->raw, (size_t)rows, 0, &p);
    put_dict_indices(values_buf(w), NULL, 0, 0);
    if (emit_data_page(w, &p, m, err) != 0)
        return -1;
    return flush_chunk(w, fp, offset, &w->dict, m, err);
}

static void put_plain_floats(pq_buf *out, const float *v, size_t n)
{
    buf_reserve(out, n * 4);
    uint8_t *dst = out->data + out->len;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        dst[4 * i] = (uint8_t)u;
        dst[4 * i + 1] = (uint8_t)(u >> 8);
        dst[4 * i + 2] = (uint8_t)(u >> 16);
        dst[4 * i + 3] = (uint8_t)(u >> 24);
    }
    out->len += n * 4;
}

/* Dictionary indices of n floats; returns 0, or -1 when the dictionary
 * overflows (the page must then be written PLAIN). */
static int vector_indices(pq_writer *w, const float *v, size_t n,
                          uint32_t *idx)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        int64_t e = dict_index(&w->dict, u, VECTOR_DICT_LIMIT);
        if (e < 0)
            return -1;
        idx[i] = (uint32_t)e;
    }
    return 0;
}

/* One data page of the vector leaf: n values starting at leaf index first
 * of the row group.  *plain is set once the dictionary has overflowed. */
static int write_vector_page(pq_writer *w, const float *v, int64_t first,
                             size_t n, int dim, int *plain, chunk_meta *m,
                             qk_err *err)
{
    page_desc p = {.num_values = (int32_t)n};
    w->raw.len = 0;
    put_vector_levels(w, &w->raw, first, n, dim, &p);
    pq_buf *vals = values_buf(w);
    if (!*plain) {
        /* The level scratch is reused for the indices: levels are done. */
        uint32_t *idx = scratch(w, n);
        if (vector_indices(w, v + first, n, idx) == 0) {
            p.encoding = ENC_RLE_DICTIONARY;
            put_dict_indices(vals, idx, n, w->dict.count);
            return emit_data_page(w, &p, m, err);
        }
        *plain = 1;
    }
    if (w->opts->byte_stream_split_vectors) {
        p.encoding = ENC_BYTE_STREAM_SPLIT;
        buf_reserve(vals, n * 4);
        qk_pq_byte_stream_split_encode(v + first, n, 4, vals->data + vals->len);
        vals->len += n * 4;
    } else {
        p.encoding = ENC_PLAIN;
        put_plain_floats(vals, v + first, n);
    }
    return emit_data_page(w, &p, m, err);
}

static int write_vector_chunk(pq_writer *w, FILE *fp, int64_t *offset,
                              const float *v, int64_t rows, int dim,
                              chunk_meta *m, qk_err *err)
{
    chunk_begin(w, m);
    int64_t total = rows * dim;
    int64_t per_page = w->opts->values_per_page > 0
                           ? w->opts->values_per_page
                           : DEFAULT_VALUES_PER_PAGE;
    int plain = !w->opts->dictionary_vectors;
    m->num_values = total;
    for (int64_t first = 0; first < total; first += per_page) {
        size_t n = (size_t)(total - first < per_page ? total - first : per_page);
        if (write_vector_page(w, v, first, n, dim, &plain, m, err) != 0)
            return -1;
    }
    if (w->opts->dictionary_vectors)
        return flush_chunk(w, fp, offset, &w->dict, m, err);
    flush_pages(w, fp, offset, m);
    return 0;
}

static int write_row_group(pq_writer *w, FILE *fp, int64_t *offset,
                           int64_t first_row, int64_t rows, int dim,
                           const int32_t *const ints[3], const float *vector,
                           row_group_meta *g, qk_err *err)
{
    g->rows = rows;
    g->offset = *offset;
    for (int c = 0; c < 3; c++) {
        if (write_int_chunk(w, fp, offset, ints[c] + first_row, rows,
                            &g->cols[c], err) != 0)
            return -1;
    }
    if (write_vector_chunk(w, fp, offset, vector + first_row * dim, rows, dim,
                           &g->cols[3], err) != 0)
        return -1;
    return write_null_chunk(w, fp, offset, rows, &g->cols[4], err);
}

/* ------------------------------------------------------------------ */
/* Footer                                                              */

static const char *const column_names[NUM_COLUMNS] = {
    "bucket", "example_id", "position", "vector", "sliding_window"};

static void write_schema(tc_writer *t)
{
    tc_list_begin(t, 2, TC_STRUCT, 8); /* root + 7 */
    tc_struct_begin(t, 0);
    tc_i32(t, 3, REP_REQUIRED);
    tc_string(t, 4, "schema");
    tc_i32(t, 5, NUM_COLUMNS);
    tc_struct_end(t);
    for (int c = 0; c < 3; c++) {
        tc_struct_begin(t, 0);
        tc_i32(t, 1, PT_INT32);
        tc_i32(t, 3, REP_OPTIONAL);
        tc_string(t, 4, column_names[c]);
        tc_struct_end(t);
    }
    tc_struct_begin(t, 0); /* vector: LIST group */
    tc_i32(t, 3, REP_OPTIONAL);
    tc_string(t, 4, "vector");
    tc_i32(t, 5, 1);
    tc_i32(t, 6, CONVERTED_LIST);
    tc_struct_begin(t, 10);
    tc_struct_begin(t, 3); /* LogicalType.LIST */
    tc_struct_end(t);
    tc_struct_end(t);
    tc_struct_end(t);
    tc_struct_begin(t, 0);
    tc_i32(t, 3, REP_REPEATED);
    tc_string(t, 4, "list");
    tc_i32(t, 5, 1);
    tc_struct_end(t);
    tc_struct_begin(t, 0);
    tc_i32(t, 1, PT_FLOAT);
    tc_i32(t, 3, REP_OPTIONAL);
    tc_string(t, 4, "element");
    tc_struct_end(t);
    tc_struct_begin(t, 0); /* sliding_window: INT32 with the Null type */
    tc_i32(t, 1, PT_INT32);
    tc_i32(t, 3, REP_OPTIONAL);
    tc_string(t, 4, "sliding_window");
    tc_struct_begin(t, 10);
    tc_struct_begin(t, 11); /* LogicalType.UNKNOWN ("Null") */
    tc_struct_end(t);
    tc_struct_end(t);
    tc_struct_end(t);
}

static void write_encoding_stat(tc_writer *t, int page_type, int encoding,
                                int count)
{
    tc_struct_begin(t, 0);
    tc_i32(t, 1, page_type);
    tc_i32(t, 2, encoding);
    tc_i32(t, 3, count);
    tc_struct_end(t);
}

/* Encodings in the order parquet-cpp lists them: the dictionary page's,
 * RLE for the levels, then the data pages' in enum order. */
static void write_encodings(tc_writer *t, const chunk_meta *m)
{
    int32_t enc[NUM_ENCODINGS + 2];
    int n = 0;
    if (m->dict_pages)
        enc[n++] = ENC_PLAIN;
    enc[n++] = ENC_RLE;
    for (int e = 0; e < NUM_ENCODINGS; e++)
        if (m->data_pages[e] && !(e == ENC_PLAIN && m->dict_pages))
            enc[n++] = e;
    tc_list_begin(t, 2, TC_I32, n);
    for (int i = 0; i < n; i++)
        tc_elem_i32(t, enc[i]);
}

static void write_column_meta(tc_writer *t, int col, const chunk_meta *m,
                              int data_page_type, int codec)
{
    static const char *const vector_path[3] = {"vector", "list", "element"};
    tc_struct_begin(t, 3);
    tc_i32(t, 1, col == 3 ? PT_FLOAT : PT_INT32);
    write_encodings(t, m);
    tc_list_begin(t, 3, TC_BINARY, col == 3 ? 3 : 1);
    for (int i = 0; i < (col == 3 ? 3 : 1); i++)
        tc_binary_raw(t, col == 3 ? vector_path[i] : column_names[col]);
    tc_i32(t, 4, codec);
    tc_i64(t, 5, m->num_values);
    tc_i64(t, 6, m->uncompressed);
    tc_i64(t, 7, m->compressed);
    tc_i64(t, 9, m->data_offset);
    if (m->dict_offset >= 0)
        tc_i64(t, 11, m->dict_offset);
    int kinds = m->dict_pages;
    for (int e = 0; e < NUM_ENCODINGS; e++)
        kinds += m->data_pages[e] > 0;
    tc_list_begin(t, 13, TC_STRUCT, kinds);
    if (m->dict_pages)
        write_encoding_stat(t, PAGE_DICTIONARY, ENC_PLAIN, m->dict_pages);
    for (int e = 0; e < NUM_ENCODINGS; e++)
        if (m->data_pages[e])
            write_encoding_stat(t, data_page_type, e, m->data_pages[e]);
    tc_struct_end(t);
}

static void write_row_group_meta(tc_writer *t, const row_group_meta *g,
                                 int ordinal, const qk_pq_write_opts *o)
{
    int64_t uncompressed = 0, compressed = 0;
    tc_struct_begin(t, 0);
    tc_list_begin(t, 1, TC_STRUCT, NUM_COLUMNS);
    for (int c = 0; c < NUM_COLUMNS; c++) {
        tc_struct_begin(t, 0);
        tc_i64(t, 2, 0); /* file_offset: deprecated, 0 as parquet-cpp */
        write_column_meta(t, c, &g->cols[c],
                          o->data_page_v2 ? PAGE_DATA_V2 : PAGE_DATA,
                          o->codec);
        tc_struct_end(t);
        uncompressed += g->cols[c].uncompressed;
        compressed += g->cols[c].compressed;
    }
    tc_i64(t, 2, uncompressed);
    tc_i64(t, 3, g->rows);
    tc_i64(t, 5, g->offset);
    tc_i64(t, 6, compressed);
    tc_i16(t, 7, (int16_t)ordinal);
    tc_struct_end(t);
}

static void write_footer(pq_buf *out, int64_t rows, const row_group_meta *groups,
                         int ngroups, const qk_pq_write_opts *o)
{
    tc_writer t;
    tc_init(&t, out);
    tc_i32(&t, 1, 2);
    write_schema(&t);
    tc_i64(&t, 3, rows);
    tc_list_begin(&t, 4, TC_STRUCT, ngroups);
    for (int g = 0; g < ngroups; g++)
        write_row_group_meta(&t, &groups[g], g, o);
    tc_string(&t, 6, "qkreport qk-synth " QK_VERSION_STRING);
    tc_list_begin(&t, 7, TC_STRUCT, NUM_COLUMNS);
    for (int c = 0; c < NUM_COLUMNS; c++) {
        tc_struct_begin(&t, 0);
        tc_struct_begin(&t, 1); /* ColumnOrder.TYPE_ORDER */
        tc_struct_end(&t);
        tc_struct_end(&t);
    }
    buf_byte(out, 0);
}

/* ------------------------------------------------------------------ */
/* Entry points                                                        */

void qk_pq_write_opts_default(qk_pq_write_opts *o)
{
    memset(o, 0, sizeof *o);
    o->codec = QK_CODEC_ZSTD;
    o->zstd_level = 1;
    o->dictionary_vectors = 1;
    o->data_page_v2 = 0;
    o->rows_per_group = 0;
    o->values_per_page = DEFAULT_VALUES_PER_PAGE;
}

static int check_args(const qk_pq_write_opts *o, int64_t rows, int dim,
                      const int32_t *const ints[3], const float *vector,
                      qk_err *err)
{
    if (o->codec != QK_CODEC_UNCOMPRESSED && o->codec != QK_CODEC_SNAPPY &&
        o->codec != QK_CODEC_GZIP && o->codec != QK_CODEC_ZSTD &&
        o->codec != QK_CODEC_LZ4_RAW)
        return qk_fail(err, "unsupported codec %d", o->codec);
    if (o->int_encoding < QK_INTS_DICTIONARY ||
        o->int_encoding > QK_INTS_BYTE_STREAM_SPLIT)
        return qk_fail(err, "unsupported int encoding %d", o->int_encoding);
    if (rows < 0 || o->rows_per_group < 0 || o->values_per_page < 0 ||
        o->rows_per_int_page < 0)
        return qk_fail(err, "negative row or page size");
    if (rows == 0)
        return 0;
    if (dim < 1)
        return qk_fail(err, "vector length %d is not positive", dim);
    if (!ints[0] || !ints[1] || !ints[2] || !vector)
        return qk_fail(err, "missing column data");
    int64_t group = o->rows_per_group > 0 && o->rows_per_group < rows
                        ? o->rows_per_group
                        : rows;
    if (group > INT32_MAX || group > INT64_MAX / dim ||
        o->values_per_page > INT32_MAX)
        return qk_fail(err, "row group of %lld rows is too large",
                       (long long)group);
    /* RowGroup.ordinal is an i16. */
    if ((rows + group - 1) / group > INT16_MAX)
        return qk_fail(err, "more than %d row groups", INT16_MAX);
    return 0;
}

static int write_body(pq_writer *w, FILE *fp, int64_t rows, int dim,
                      const int32_t *const ints[3], const float *vector,
                      qk_err *err)
{
    const qk_pq_write_opts *o = w->opts;
    int64_t group = o->rows_per_group > 0 ? o->rows_per_group : rows;
    int ngroups = rows == 0 ? 0 : (int)((rows + group - 1) / group);
    row_group_meta *groups = qk_calloc((size_t)ngroups + 1, sizeof *groups);
    int64_t offset = 4;
    int rc = 0;
    fwrite("PAR1", 1, 4, fp);
    for (int g = 0; g < ngroups && rc == 0; g++) {
        int64_t first = (int64_t)g * group;
        int64_t n = rows - first < group ? rows - first : group;
        rc = write_row_group(w, fp, &offset, first, n, dim, ints, vector,
                             &groups[g], err);
    }
    if (rc == 0) {
        pq_buf footer = {0};
        write_footer(&footer, rows, groups, ngroups, o);
        fwrite(footer.data, 1, footer.len, fp);
        uint8_t tail[8] = {(uint8_t)footer.len, (uint8_t)(footer.len >> 8),
                           (uint8_t)(footer.len >> 16),
                           (uint8_t)(footer.len >> 24), 'P', 'A', 'R', '1'};
        fwrite(tail, 1, 8, fp);
        buf_free(&footer);
    }
    free(groups);
    return rc;
}

int qk_parquet_write_file(const char *path, const qk_pq_write_opts *opts,
                          int64_t rows, int dim, const int32_t *bucket,
                          const int32_t *example_id, const int32_t *position,
                          const float *vector, qk_err *err)
{
    qk_pq_write_opts defaults;
    if (!opts) {
        qk_pq_write_opts_default(&defaults);
        opts = &defaults;
    }
    const int32_t *const ints[3] = {bucket, example_id, position};
    if (check_args(opts, rows, dim, ints, vector, err) != 0)
        return -1;
    pq_writer w;
    memset(&w, 0, sizeof w);
    w.opts = opts;
    w.zstd = ZSTD_createCCtx();
    if (!w.zstd)
        return qk_fail(err, "zstd: cannot create a compression context");
    qk_atomic out;
    int rc = qk_atomic_open(&out, path, err);
    /* twice the plain encoding: more than any encoding of these rows needs */
    uint64_t most = 2 * (uint64_t)rows * ((uint64_t)dim * sizeof(float) + 3 * sizeof(int32_t)) +
                    (1u << 20);
    if (rc == 0 && qk_atomic_reserve(&out, most, err) != 0) {
        qk_atomic_abort(&out);
        rc = -1;
    }
    if (rc == 0) {
        rc = write_body(&w, out.fp, rows, dim, ints, vector, err);
        if (rc == 0)
            rc = qk_atomic_commit(&out, err);
        else
            qk_atomic_abort(&out);
    }
    ZSTD_freeCCtx(w.zstd);
    buf_free(&w.pages);
    buf_free(&w.raw);
    buf_free(&w.values);
    buf_free(&w.packed);
    buf_free(&w.header);
    free(w.scratch);
    dict_free(&w.dict);
    return rc;
}
