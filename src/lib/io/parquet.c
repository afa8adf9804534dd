/* Decoding of sniffed-qk Parquet files: the four used columns (bucket,
 * example_id, position as int32, vector as a list of float) of every row
 * group, read page by page into flat arrays.  Other columns are not
 * touched.  docs/parquet-subset.md lists what is supported. */
#include "parquet_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Limits that keep corrupt row counts from asking for absurd memory. */
#define PQ_MAX_ROWS (INT64_C(1) << 28)
#define PQ_MAX_VECTOR_VALUES (INT64_C(1) << 30)
/* Values a file may claim beyond PQ_FREE_VALUES: at most this many per
 * byte of its data, far more than any compression of real captures gives
 * (about one value a byte), so that a damaged footer cannot size
 * gigabytes of output before its pages prove it wrong. */
#define PQ_MAX_VALUES_PER_BYTE 4096
#define PQ_FREE_VALUES (INT64_C(1) << 22)

/* State shared by every column chunk of one file. */
typedef struct pq_reader {
    const uint8_t *file;
    size_t data_end;
    pq_decompressor page; /* decompressed page data, reused */
    uint32_t *dict;       /* dictionary values as raw 4-byte words */
    size_t dict_cap;
    uint32_t dict_n;
    size_t dict_padded; /* entries valid to read: dict_n, then zeros */
    int has_dict;
    qk_err *err;
} pq_reader;

/* One output column: 4-byte values and, for the list column, the rows
 * assembled from repetition levels. */
typedef struct pq_column {
    const char *name;
    const pq_field *field;
    int32_t expected_type;
    uint8_t *out;
    int64_t out_cap;
    int64_t out_len;
    int64_t rows;    /* rows started so far, over all row groups */
    int64_t row_len; /* values in the current (last started) row */
    int in_row;
    int64_t dim; /* length of the first row; 0 until known */
} pq_column;

/* ---- Definition and repetition levels ---- */

/* Checks that the n levels of a stream all equal max_def.  Returns 0, 1
 * with *bad_index and *bad_level at the first other level, or -1. */
static int check_def_levels(pq_reader *r, pq_hybrid *h, int64_t n,
                            uint32_t max_def, int64_t *bad_index,
                            uint32_t *bad_level)
{
    int64_t done = 0;
    while (done < n) {
        const uint32_t *values;
        uint32_t value;
        int64_t k = pq_hybrid_next(h, n - done, &values, &value, r->err);
        if (k < 0)
            return -1;
        if (k == 0)
            return qk_fail(r->err,
                           "level count mismatch: definition levels end "
                           "after %lld of %lld values",
                           (long long)done, (long long)n);
        for (int64_t i = 0; i < k; i++) {
            uint32_t level = values ? values[i] : value;
            if (level != max_def) {
                *bad_index = done + i;
                *bad_level = level;
                return 1;
            }
            if (!values)
                break;
        }
        done += k;
    }
    return 0;
}

static int finish_row(pq_reader *r, pq_column *c)
{
    if (!c->in_row)
        return 0;
    c->in_row = 0;
    if (c->dim == 0) {
        c->dim = c->row_len;
        return 0;
    }
    if (c->row_len != c->dim)
        return qk_fail(r->err, "row %lld has %lld values, expected %lld",
                       (long long)(c->rows - 1), (long long)c->row_len,
                       (long long)c->dim);
    return 0;
}

static int start_rows(pq_reader *r, pq_column *c, int64_t count,
                      int64_t row_limit)
{
    if (c->rows + count > row_limit)
        return qk_fail(r->err,
                       "list structure mismatch: repetition levels hold "
                       "more rows than the row group");
    for (int64_t i = 0; i < count; i++) {
        if (finish_row(r, c) != 0)
            return -1;
        c->rows++;
        c->in_row = 1;
        c->row_len = 1;
    }
    return 0;
}

static int continue_row(pq_reader *r, pq_column *c, int64_t count,
                        uint32_t level)
{
    if (level > (uint32_t)c->field->max_rep)
        return qk_fail(r->err, "repetition level %u over the maximum %d", level,
                       c->field->max_rep);
    if (!c->in_row)
        return qk_fail(r->err,
                       "list structure mismatch: the column chunk starts "
                       "inside a row");
    c->row_len += count;
    return 0;
}

/* Ones (continuations of the current row) and zeros (row starts) among
 * the low `count` levels of a bit-packed byte, in order. */
static int rows_from_bits(pq_reader *r, pq_column *c, uint32_t bits, int count,
                          int64_t row_limit)
{
    uint32_t zeros = ~bits & ((1u << count) - 1);
    int pos = 0;
    while (zeros) {
        int z = __builtin_ctz(zeros);
        if (z > pos && continue_row(r, c, z - pos, 1) != 0)
            return -1;
        if (start_rows(r, c, 1, row_limit) != 0)
            return -1;
        pos = z + 1;
        zeros &= zeros - 1;
    }
    if (count > pos)
        return continue_row(r, c, count - pos, 1);
    return 0;
}

static int all_ones64(const uint8_t *p)
{
    uint64_t word;
    memcpy(&word, p, 8);
    return word == ~(uint64_t)0;
}

/* Counts rows with the n repetition levels of a page (rep 0 starts a
 * row).  The list column has one repeated level, so the levels are 1 bit
 * wide and are read straight from the hybrid stream, a byte of eight
 * levels at a time.  row_limit is the row count the row group allows. */
static int assemble_rows(pq_reader *r, pq_column *c, const uint8_t *p,
                         size_t len, int64_t n, int64_t row_limit)
{
    const uint8_t *end = p + len;
    int64_t done = 0;
    while (done < n) {
        uint64_t header = 0;
        for (int shift = 0;; shift += 7) {
            if (p >= end || shift > 35)
                return qk_fail(r->err,
                               "level count mismatch: repetition levels "
                               "end after %lld of %lld values",
                               (long long)done, (long long)n);
            header |= (uint64_t)(*p & 0x7f) << shift;
            if (!(*p++ & 0x80))
                break;
        }
        uint64_t count = header >> 1;
        if (header & 1) {
            /* count groups of 8 levels = count bytes (padding past n).
             * Inside a long row the bytes are all ones: those are taken
             * 64 levels at a time. */
            uint64_t i = 0;
            while (i < count && p < end && done < n) {
                if (i + 8 <= count && end - p >= 8 && n - done >= 64 &&
                    all_ones64(p)) {
                    if (continue_row(r, c, 64, 1) != 0)
                        return -1;
                    p += 8;
                    i += 8;
                    done += 64;
                    continue;
                }
                int k = n - done < 8 ? (int)(n - done) : 8;
                if (rows_from_bits(r, c, *p++, k, row_limit) != 0)
                    return -1;
                done += k;
                i++;
            }
            continue;
        }
        if (p >= end)
            return qk_fail(r->err, "truncated RLE run");
        uint32_t level = *p++;
        int64_t k = count < (uint64_t)(n - done) ? (int64_t)count : n - done;
        int rc = level == 0 ? start_rows(r, c, k, row_limit)
                            : continue_row(r, c, k, level);
        if (rc != 0)
            return -1;
        done += k;
    }
    return 0;
}

/* The row holding level `index` of a page whose repetition levels are in
 * rep (for the list column, c->rows rows were started before the page). */
static int64_t row_of_level(pq_reader *r, const pq_column *c,
                            const uint8_t *rep, size_t rep_len, int64_t index)
{
    int64_t row = c->rows - 1;
    if (c->field->max_rep == 0)
        return c->out_len + index;
    pq_hybrid h;
    int bw = pq_bit_width((uint32_t)c->field->max_rep);
    if (pq_hybrid_init(&h, rep, rep_len, bw, r->err) != 0)
        return row;
    for (int64_t done = 0; done <= index;) {
        const uint32_t *values;
        uint32_t value;
        int64_t k =
            pq_hybrid_next(&h, index + 1 - done, &values, &value, r->err);
        if (k <= 0)
            break;
        for (int64_t i = 0; i < k; i++)
            row += (values ? values[i] : value) == 0;
        done += k;
    }
    return row;
}

static int null_error(pq_reader *r, const pq_column *c, int64_t row,
                      uint32_t level)
{
    const pq_field *f = c->field;
    if (f->max_rep == 0 || level < (uint32_t)f->def_before_rep)
        return qk_fail(r->err, "null value in row %lld", (long long)row);
    if (level == (uint32_t)f->def_before_rep)
        return qk_fail(r->err, "row %lld is an empty list", (long long)row);
    return qk_fail(r->err, "null element in row %lld", (long long)row);
}

/* ---- Values ---- */

static int decode_plain(pq_reader *r, pq_column *c, const uint8_t *data,
                        size_t len, int64_t n)
{
    if ((uint64_t)n * 4 > len)
        return qk_fail(r->err, "PLAIN page holds %zu bytes for %lld values",
                       len, (long long)n);
    memcpy(c->out + c->out_len * 4, data, (size_t)n * 4);
    return 0;
}

static int index_error(pq_reader *r, uint32_t index)
{
    return qk_fail(r->err,
                   "dictionary index %u out of range (dictionary has %u "
                   "values)",
                   index, r->dict_n);
}

/* Writes dictionary values for a piece of indices into out. */
static int gather(pq_reader *r, const uint32_t *idx, int64_t k, uint8_t *out)
{
    const uint32_t *dict = r->dict;
    const uint32_t n = r->dict_n;
    for (int64_t i = 0; i < k; i++) {
        uint32_t j = idx[i];
        if (j >= n)
            return index_error(r, j);
        memcpy(out + 4 * i, &dict[j], 4);
    }
    return 0;
}

static int fill(pq_reader *r, uint32_t j, int64_t k, uint8_t *out)
{
    if (j >= r->dict_n)
        return index_error(r, j);
    for (int64_t i = 0; i < k; i++)
        memcpy(out + 4 * i, &r->dict[j], 4);
    return 0;
}

/* Pads the dictionary with zeros to 2^bw entries, so the gather of
 * bit-packed indices may read any index of that width; indices past the
 * real size are still reported as errors afterwards. */
static void pad_dictionary(pq_reader *r, int bw)
{
    size_t need = (size_t)1 << bw;
    if (need <= r->dict_padded)
        return;
    if (need > r->dict_cap) {
        r->dict = qk_realloc(r->dict, need * sizeof *r->dict);
        r->dict_cap = need;
    }
    memset(r->dict + r->dict_padded, 0,
           (need - r->dict_padded) * sizeof *r->dict);
    r->dict_padded = need;
}

static int decode_dictionary_indices(pq_reader *r, pq_column *c,
                                     const uint8_t *data, size_t len, int64_t n)
{
    if (!r->has_dict)
        return qk_fail(r->err,
                       "dictionary-encoded page without a dictionary page");
    if (n == 0)
        return 0;
    if (len < 1)
        return qk_fail(r->err, "dictionary-encoded page without a bit width");
    int bw = data[0];
    pq_hybrid h;
    if (pq_hybrid_init(&h, data + 1, len - 1, bw, r->err) != 0)
        return -1;
    int fast = bw >= 1 && bw <= PQ_GATHER_MAX_WIDTH;
    if (fast)
        pad_dictionary(r, bw);
    uint8_t *out = c->out + c->out_len * 4;
    uint32_t max_index = 0;
    int64_t done = 0;
    while (done < n) {
        const uint8_t *packed;
        int64_t groups =
            fast ? pq_hybrid_take_groups(&h, (n - done) / 8, &packed, r->err)
                 : 0;
        if (groups < 0)
            return -1;
        if (groups > 0) {
            uint32_t m =
                pq_gather_groups(bw, packed, groups, r->dict, out + 4 * done);
            max_index = m > max_index ? m : max_index;
            done += 8 * groups;
            continue;
        }
        const uint32_t *values;
        uint32_t value;
        int64_t k = pq_hybrid_next(&h, n - done, &values, &value, r->err);
        if (k < 0)
            return -1;
        if (k == 0)
            return qk_fail(r->err,
                           "dictionary indices end after %lld of %lld "
                           "values",
                           (long long)done, (long long)n);
        int rc = values ? gather(r, values, k, out + 4 * done)
                        : fill(r, value, k, out + 4 * done);
        if (rc != 0)
            return -1;
        done += k;
    }
    if (done > 0 && max_index >= r->dict_n)
        return index_error(r, max_index);
    return 0;
}

static int decode_values(pq_reader *r, pq_column *c, int32_t encoding,
                         const uint8_t *data, size_t len, int64_t n)
{
    if (n > c->out_cap - c->out_len)
        return qk_fail(r->err,
                       "level count mismatch: pages hold more values than "
                       "the column chunk metadata says");
    uint8_t *out = c->out + c->out_len * 4;
    int rc;
    switch (encoding) {
    case PQ_PLAIN:
        rc = decode_plain(r, c, data, len, n);
        break;
    case PQ_BYTE_STREAM_SPLIT:
        rc = qk_pq_byte_stream_split_decode(data, len, 4, out, n, r->err);
        break;
    case PQ_DELTA_BINARY_PACKED:
        rc = qk_pq_delta_decode_i32(data, len, (int32_t *)(void *)out, n,
                                    NULL, r->err);
        break;
    default:
        rc = decode_dictionary_indices(r, c, data, len, n);
        break;
    }
    if (rc == 0)
        c->out_len += n;
    return rc;
}

/* ---- Pages ---- */

static int load_dictionary(pq_reader *r, const pq_column_meta *m,
                           const pq_page_header *ph, const uint8_t *payload)
{
    if (r->has_dict)
        return qk_fail(r->err,
                       "more than one dictionary page in a column chunk");
    if (ph->encoding != PQ_PLAIN && ph->encoding != PQ_PLAIN_DICTIONARY)
        return qk_fail(r->err, "unsupported dictionary encoding %s",
                       pq_encoding_name(ph->encoding));
    const uint8_t *data;
    if (pq_decompress(&r->page, m->codec, payload, (size_t)ph->compressed_size,
                      (size_t)ph->uncompressed_size, &data, r->err) != 0)
        return -1;
    uint64_t n = (uint64_t)ph->num_values;
    if (n * 4 > (uint64_t)ph->uncompressed_size)
        return qk_fail(r->err,
                       "dictionary page of %d bytes cannot hold %d values",
                       ph->uncompressed_size, ph->num_values);
    if (n > r->dict_cap) {
        free(r->dict);
        r->dict = qk_malloc(n * sizeof *r->dict);
        r->dict_cap = n;
    }
    if (n > 0)
        memcpy(r->dict, data, n * 4);
    r->dict_n = (uint32_t)n;
    r->dict_padded = n;
    r->has_dict = 1;
    return 0;
}

/* The level streams and values of one data page. */
typedef struct page_parts {
    const uint8_t *rep, *def, *values;
    size_t rep_len, def_len, values_len;
} page_parts;

/* A v1 level stream: u32 little-endian byte length, then the stream. */
static int take_levels(pq_reader *r, const uint8_t **p, size_t *left,
                       const uint8_t **stream, size_t *stream_len)
{
    if (*left < 4)
        return qk_fail(r->err, "data page too short for its level lengths");
    const uint8_t *q = *p;
    uint32_t n = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                 (uint32_t)q[3] << 24;
    if (n > *left - 4)
        return qk_fail(r->err, "level data of %u bytes runs past the page", n);
    *stream = q + 4;
    *stream_len = n;
    *p = q + 4 + n;
    *left -= 4 + (size_t)n;
    return 0;
}

static int split_page_v1(pq_reader *r, const pq_column *c,
                         const pq_column_meta *m, const pq_page_header *ph,
                         const uint8_t *payload, page_parts *parts)
{
    const pq_field *f = c->field;
    if (f->max_rep > 0 && ph->rep_encoding != PQ_RLE)
        return qk_fail(r->err, "unsupported level encoding %s",
                       pq_encoding_name(ph->rep_encoding));
    if (f->max_def > 0 && ph->def_encoding != PQ_RLE)
        return qk_fail(r->err, "unsupported level encoding %s",
                       pq_encoding_name(ph->def_encoding));
    const uint8_t *p;
    size_t left = (size_t)ph->uncompressed_size;
    if (pq_decompress(&r->page, m->codec, payload, (size_t)ph->compressed_size,
                      left, &p, r->err) != 0)
        return -1;
    if (f->max_rep > 0 &&
        take_levels(r, &p, &left, &parts->rep, &parts->rep_len) != 0)
        return -1;
    if (f->max_def > 0 &&
        take_levels(r, &p, &left, &parts->def, &parts->def_len) != 0)
        return -1;
    parts->values = p;
    parts->values_len = left;
    return 0;
}

static int split_page_v2(pq_reader *r, const pq_column_meta *m,
                         const pq_page_header *ph, const uint8_t *payload,
                         page_parts *parts)
{
    size_t levels = (size_t)ph->rep_length + (size_t)ph->def_length;
    parts->rep = payload;
    parts->rep_len = (size_t)ph->rep_length;
    parts->def = payload + ph->rep_length;
    parts->def_len = (size_t)ph->def_length;
    const uint8_t *src = payload + levels;
    size_t src_len = (size_t)ph->compressed_size - levels;
    size_t dst_len = (size_t)ph->uncompressed_size - levels;
    int32_t codec = ph->is_compressed ? m->codec : PQ_UNCOMPRESSED;
    parts->values_len = dst_len;
    return pq_decompress(&r->page, codec, src, src_len, dst_len, &parts->values,
                         r->err);
}

static int check_page_levels(pq_reader *r, pq_column *c,
                             const page_parts *parts, int64_t n,
                             int64_t row_limit)
{
    const pq_field *f = c->field;
    pq_hybrid h;
    if (f->max_def > 0) {
        int64_t bad_index = 0;
        uint32_t bad_level = 0;
        if (pq_hybrid_init(&h, parts->def, parts->def_len,
                           pq_bit_width((uint32_t)f->max_def), r->err) != 0)
            return -1;
        int rc = check_def_levels(r, &h, n, (uint32_t)f->max_def, &bad_index,
                                  &bad_level);
        if (rc < 0)
            return -1;
        if (rc > 0)
            return null_error(
                r, c, row_of_level(r, c, parts->rep, parts->rep_len, bad_index),
                bad_level);
    }
    if (f->max_rep == 0)
        return 0;
    return assemble_rows(r, c, parts->rep, parts->rep_len, n, row_limit);
}

/* The value encodings read for the 4-byte columns: DELTA_BINARY_PACKED
 * is defined for integers only. */
static int value_encoding_supported(int32_t encoding, int32_t type)
{
    switch (encoding) {
    case PQ_PLAIN:
    case PQ_PLAIN_DICTIONARY:
    case PQ_RLE_DICTIONARY:
    case PQ_BYTE_STREAM_SPLIT:
        return 1;
    case PQ_DELTA_BINARY_PACKED:
        return type == PQ_INT32;
    default:
        return 0;
    }
}

static int decode_data_page(pq_reader *r, pq_column *c, const pq_column_meta *m,
                            const pq_page_header *ph, const uint8_t *payload,
                            int64_t row_limit)
{
    int32_t enc = ph->encoding;
    if (!value_encoding_supported(enc, c->expected_type))
        return qk_fail(r->err, "unsupported encoding %s for %s",
                       pq_encoding_name(enc), pq_type_name(c->expected_type));
    page_parts parts;
    memset(&parts, 0, sizeof parts);
    int rc = ph->type == PQ_DATA_PAGE
                 ? split_page_v1(r, c, m, ph, payload, &parts)
                 : split_page_v2(r, m, ph, payload, &parts);
    if (rc != 0)
        return -1;
    int64_t n = ph->num_values;
    if (check_page_levels(r, c, &parts, n, row_limit) != 0)
        return -1;
    return decode_values(r, c, enc, parts.values, parts.values_len, n);
}

/* ---- Column chunks ---- */

static int check_chunk_meta(pq_reader *r, const pq_column *c,
                            const pq_column_meta *m)
{
    if (m->type < 0 || m->codec < 0 || m->num_values < 0 ||
        m->total_compressed_size < 0 || m->data_page_offset < 0)
        return qk_fail(r->err, "column chunk metadata lacks required fields");
    if (m->type != c->expected_type)
        return qk_fail(r->err,
                       "column chunk has physical type %s, schema says %s",
                       pq_type_name(m->type), pq_type_name(c->expected_type));
    switch (m->codec) {
    case PQ_UNCOMPRESSED:
    case PQ_SNAPPY:
    case PQ_GZIP:
    case PQ_ZSTD:
    case PQ_LZ4_RAW:
        return 0;
    default:
        return qk_fail(r->err, "unsupported compression %s",
                       pq_codec_name(m->codec));
    }
}

static int read_page(pq_reader *r, pq_column *c, const pq_column_meta *m,
                     const uint8_t **pos, const uint8_t *end,
                     int64_t *levels_done, int64_t row_limit)
{
    pq_page_header ph;
    size_t header_len;
    size_t offset = (size_t)(*pos - r->file);
    if (pq_read_page_header(*pos, (size_t)(end - *pos), &ph, &header_len,
                            r->err) != 0) {
        return pq_prefix_error(r->err, "page at byte %zu", offset);
    }
    *pos += header_len;
    if ((size_t)ph.compressed_size > (size_t)(end - *pos))
        return qk_fail(r->err,
                       "page size mismatch: page at byte %zu (%d bytes) "
                       "runs past the column chunk",
                       offset, ph.compressed_size);
    const uint8_t *payload = *pos;
    *pos += ph.compressed_size;
    switch (ph.type) {
    case PQ_DICTIONARY_PAGE:
        if (*levels_done > 0)
            return qk_fail(r->err, "dictionary page after data pages");
        return load_dictionary(r, m, &ph, payload);
    case PQ_DATA_PAGE:
    case PQ_DATA_PAGE_V2:
        if (ph.num_values > m->num_values - *levels_done)
            return qk_fail(r->err,
                           "level count mismatch: pages hold more than the "
                           "%lld values of the column chunk",
                           (long long)m->num_values);
        if (decode_data_page(r, c, m, &ph, payload, row_limit) != 0)
            return -1;
        *levels_done += ph.num_values;
        return 0;
    case PQ_INDEX_PAGE:
        return 0;
    default:
        return qk_fail(r->err, "unsupported page type %d", ph.type);
    }
}

static int decode_chunk(pq_reader *r, pq_column *c, const pq_column_meta *m,
                        int64_t rg_rows)
{
    uint64_t start, size;
    if (check_chunk_meta(r, c, m) != 0 ||
        pq_chunk_range(m, r->data_end, &start, &size, r->err) != 0)
        return -1;
    const uint8_t *pos = r->file + start;
    const uint8_t *end = pos + size;
    int64_t levels_done = 0;
    int64_t rows_before = c->rows;
    r->has_dict = 0;
    while (levels_done < m->num_values) {
        if (pos >= end)
            return qk_fail(r->err,
                           "column chunk ends after %lld of its %lld values",
                           (long long)levels_done, (long long)m->num_values);
        if (read_page(r, c, m, &pos, end, &levels_done,
                      rows_before + rg_rows) != 0)
            return -1;
    }
    if (c->field->max_rep == 0)
        return 0;
    if (finish_row(r, c) != 0)
        return -1;
    if (c->rows - rows_before != rg_rows)
        return qk_fail(r->err,
                       "list structure mismatch: %lld rows from repetition "
                       "levels, the row group has %lld",
                       (long long)(c->rows - rows_before), (long long)rg_rows);
    return 0;
}

/* ---- The file ---- */

enum { COL_BUCKET, COL_EXAMPLE_ID, COL_POSITION, COL_VECTOR, NCOLS };

static const char *const column_names[NCOLS] = {"bucket", "example_id",
                                                "position", "vector"};

static int check_field(pq_reader *r, pq_column *c)
{
    const pq_field *f = c->field;
    int is_vector = c->expected_type == PQ_FLOAT;
    const pq_schema_node *leaf = f->leaf;
    if (!leaf || !leaf->has_type)
        return qk_fail(r->err, "no physical type in the schema");
    int32_t t = leaf->type;
    if (t != PQ_INT32 && t != PQ_INT64 && t != PQ_FLOAT && t != PQ_BYTE_ARRAY)
        return qk_fail(r->err, "unsupported physical type %s", pq_type_name(t));
    if (t != c->expected_type)
        return qk_fail(r->err, "wrong physical type %s (expected %s)",
                       pq_type_name(t), pq_type_name(c->expected_type));
    if (!is_vector)
        return f->is_leaf && f->max_rep == 0
                   ? 0
                   : qk_fail(r->err, "expected a flat column, found a "
                                     "nested one");
    if (f->nleaves != 1 || f->max_rep != 1)
        return qk_fail(r->err,
                       "unsupported list layout (%d leaves, maximum "
                       "repetition level %d)",
                       f->nleaves, f->max_rep);
    if (!pq_str_eq(leaf->name, "element") && !pq_str_eq(leaf->name, "item") &&
        f->is_leaf == 0)
        return qk_fail(r->err,
                       "unsupported list layout (leaf is neither element "
                       "nor item)");
    return 0;
}

static int setup_columns(pq_reader *r, const pq_schema *schema, pq_column *cols)
{
    for (int i = 0; i < NCOLS; i++) {
        pq_column *c = &cols[i];
        c->name = column_names[i];
        c->expected_type = i == COL_VECTOR ? PQ_FLOAT : PQ_INT32;
        c->field = pq_schema_find(schema, c->name);
        if (!c->field)
            return qk_fail(r->err, "missing column %s", c->name);
        if (check_field(r, c) != 0)
            return pq_prefix_error(r->err, "column %s", c->name);
    }
    return 0;
}

/* Row counts agree across the footer and every used column chunk is
 * present, in the file, with a row count the outputs can be sized by. */
static int check_row_groups(pq_reader *r, const pq_file_meta *meta,
                            int64_t *vector_values)
{
    int64_t rows = 0;
    *vector_values = 0;
    for (uint32_t g = 0; g < meta->nrow_groups; g++) {
        const pq_row_group *rg = &meta->row_groups[g];
        if (rg->num_rows < 0 || rg->num_rows > PQ_MAX_ROWS - rows)
            return qk_fail(r->err, "row group %u has a bad row count %lld", g,
                           (long long)rg->num_rows);
        rows += rg->num_rows;
        for (uint32_t i = 0; i < rg->nchunks; i++)
            if (rg->chunks[i].has_file_path)
                return qk_fail(r->err,
                               "external column files are not supported "
                               "(ColumnChunk.file_path is set)");
        for (int i = 0; i < NCOLS; i++) {
            const pq_chunk *ch = pq_find_chunk(rg, column_names[i]);
            if (!ch)
                return qk_fail(r->err, "missing column %s in row group %u",
                               column_names[i], g);
            int64_t nv = ch->meta.num_values;
            if (i != COL_VECTOR && nv != rg->num_rows)
                return qk_fail(r->err,
                               "column %s: %lld values in row group %u, "
                               "which has %lld rows",
                               column_names[i], (long long)nv, g,
                               (long long)rg->num_rows);
            if (i == COL_VECTOR &&
                (nv < 0 || nv > PQ_MAX_VECTOR_VALUES - *vector_values))
                return qk_fail(r->err,
                               "column vector: bad value count %lld in row "
                               "group %u",
                               (long long)nv, g);
            if (i == COL_VECTOR)
                *vector_values += nv;
        }
    }
    if (rows != meta->num_rows)
        return qk_fail(r->err,
                       "row groups hold %lld rows, file metadata says %lld",
                       (long long)rows, (long long)meta->num_rows);
    int64_t most = PQ_FREE_VALUES + PQ_MAX_VALUES_PER_BYTE * (int64_t)r->data_end;
    if (*vector_values > most || rows > most)
        return qk_fail(r->err,
                       "%lld rows and %lld vector values claimed by %lld bytes of "
                       "data (damaged metadata?)",
                       (long long)rows, (long long)*vector_values,
                       (long long)r->data_end);
    return 0;
}

static int alloc_outputs(pq_reader *r, pq_column *cols, int64_t rows,
                         int64_t vector_values)
{
    for (int i = 0; i < NCOLS; i++) {
        int64_t n = i == COL_VECTOR ? vector_values : rows;
        cols[i].out = malloc(n > 0 ? (size_t)n * 4 : 1);
        if (!cols[i].out)
            return qk_fail(r->err, "out of memory for column %s (%lld values)",
                           cols[i].name, (long long)n);
        cols[i].out_cap = n;
    }
    return 0;
}

static int decode_row_groups(pq_reader *r, const pq_file_meta *meta,
                             pq_column *cols)
{
    for (uint32_t g = 0; g < meta->nrow_groups; g++) {
        const pq_row_group *rg = &meta->row_groups[g];
        for (int i = 0; i < NCOLS; i++) {
            const pq_chunk *ch = pq_find_chunk(rg, cols[i].name);
            if (decode_chunk(r, &cols[i], &ch->meta, rg->num_rows) != 0)
                return pq_prefix_error(r->err, "column %s", cols[i].name);
        }
    }
    return 0;
}

static int finish_table(pq_reader *r, const pq_file_meta *meta, pq_column *cols,
                        qk_pq_table *out)
{
    pq_column *v = &cols[COL_VECTOR];
    int64_t rows = meta->num_rows;
    if (rows > 0 && v->dim == 0)
        return qk_fail(r->err, "column vector: every row is an empty list");
    if (v->dim > INT32_MAX || v->out_len != rows * v->dim)
        return qk_fail(
            r->err, "column vector: %lld values for %lld rows of %lld",
            (long long)v->out_len, (long long)rows, (long long)v->dim);
    out->rows = rows;
    out->dim = (int)v->dim;
    if (rows == 0)
        out->dim = pq_arrow_list_size(meta->arrow_schema, "vector");
    out->bucket = (int32_t *)(void *)cols[COL_BUCKET].out;
    out->example_id = (int32_t *)(void *)cols[COL_EXAMPLE_ID].out;
    out->position = (int32_t *)(void *)cols[COL_POSITION].out;
    out->vector = (float *)(void *)v->out;
    for (int i = 0; i < NCOLS; i++)
        cols[i].out = NULL;
    return 0;
}

int qk_parquet_decode(const uint8_t *buf, size_t len, qk_pq_table *out,
                      qk_err *err)
{
    pq_file_meta meta;
    pq_schema schema = {NULL, 0};
    pq_reader r;
    pq_column cols[NCOLS];
    int64_t vector_values;
    int rc = -1;
    memset(out, 0, sizeof *out);
    memset(&r, 0, sizeof r);
    memset(cols, 0, sizeof cols);
    r.file = buf;
    r.err = err;
    if (pq_read_footer(buf, len, &meta, &r.data_end, err) != 0 ||
        pq_build_schema(&meta, &schema, err) != 0 ||
        setup_columns(&r, &schema, cols) != 0 ||
        check_row_groups(&r, &meta, &vector_values) != 0 ||
        alloc_outputs(&r, cols, meta.num_rows, vector_values) != 0 ||
        decode_row_groups(&r, &meta, cols) != 0 ||
        finish_table(&r, &meta, cols, out) != 0)
        goto done;
    rc = 0;
done:
    for (int i = 0; i < NCOLS; i++)
        free(cols[i].out);
    pq_decompressor_free(&r.page);
    free(r.dict);
    pq_schema_free(&schema);
    pq_file_meta_free(&meta);
    return rc;
}

int qk_parquet_read_file(const char *path, qk_pq_table *out, qk_err *err)
{
    uint8_t *data;
    size_t len;
    memset(out, 0, sizeof *out);
    if (qk_read_file(path, &data, &len, err) != 0)
        return -1;
    int rc = qk_parquet_decode(data, len, out, err);
    free(data);
    return rc;
}

void qk_pq_table_free(qk_pq_table *t)
{
    if (!t)
        return;
    free(t->bucket);
    free(t->example_id);
    free(t->position);
    free(t->vector);
    memset(t, 0, sizeof *t);
}

void qk_pq_table_stats(const qk_pq_table *t, qk_pq_stats *s)
{
    const qk_rows rows = {t->rows, t->dim, t->bucket, t->example_id, t->position, t->vector, 0};
    qk_rows_stats(&rows, s);
}
