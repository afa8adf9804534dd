/* Parquet page headers, decompression of page data, and names of the
 * format's enum values for messages. */
#include "parquet_internal.h"

#include <lz4.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "qk/thrift.h"

const char *pq_type_name(int32_t type)
{
    static const char *const names[] = {
        "BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE",
        "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return type >= 0 && type <= 7 ? names[type] : "(unknown type)";
}

const char *pq_encoding_name(int32_t encoding)
{
    static const char *const names[] = {
        "PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
        "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
        "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return encoding >= 0 && encoding <= 9 ? names[encoding]
                                          : "(unknown encoding)";
}

const char *pq_codec_name(int32_t codec)
{
    static const char *const names[] = {
        "UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD",
        "LZ4_RAW"};
    return codec >= 0 && codec <= 7 ? names[codec] : "(unknown codec)";
}

static int data_page_field(qk_thrift *t, int16_t id, int type, void *ctx)
{
    pq_page_header *h = ctx;
    switch (id) {
    case 1:
        return qk_thrift_field_i32(t, type, &h->num_values);
    case 2:
        return qk_thrift_field_i32(t, type, &h->encoding);
    case 3:
        return qk_thrift_field_i32(t, type, &h->def_encoding);
    case 4:
        return qk_thrift_field_i32(t, type, &h->rep_encoding);
    default:
        return qk_thrift_skip(t, type);
    }
}

static int dictionary_page_field(qk_thrift *t, int16_t id, int type,
                                 void *ctx)
{
    pq_page_header *h = ctx;
    switch (id) {
    case 1:
        return qk_thrift_field_i32(t, type, &h->num_values);
    case 2:
        return qk_thrift_field_i32(t, type, &h->encoding);
    default:
        return qk_thrift_skip(t, type);
    }
}

static int data_page_v2_field(qk_thrift *t, int16_t id, int type, void *ctx)
{
    pq_page_header *h = ctx;
    int32_t ignored;
    switch (id) {
    case 1:
        return qk_thrift_field_i32(t, type, &h->num_values);
    case 2:
    case 3:
        return qk_thrift_field_i32(t, type, &ignored);
    case 4:
        return qk_thrift_field_i32(t, type, &h->encoding);
    case 5:
        return qk_thrift_field_i32(t, type, &h->def_length);
    case 6:
        return qk_thrift_field_i32(t, type, &h->rep_length);
    case 7:
        return qk_thrift_field_bool(t, type, &h->is_compressed);
    default:
        return qk_thrift_skip(t, type);
    }
}

/* The sub-header matching the page type; the others are skipped. */
static int page_sub_header(qk_thrift *t, int type, pq_page_header *h,
                           int32_t page_type, qk_thrift_field_fn body)
{
    if (h->type != page_type)
        return qk_thrift_skip(t, type);
    if (qk_thrift_field_struct(t, type) != 0)
        return -1;
    h->has_sub_header = 1;
    return qk_thrift_read_struct(t, body, h);
}

static int page_header_field(qk_thrift *t, int16_t id, int type, void *ctx)
{
    pq_page_header *h = ctx;
    switch (id) {
    case 1:
        return qk_thrift_field_i32(t, type, &h->type);
    case 2:
        return qk_thrift_field_i32(t, type, &h->uncompressed_size);
    case 3:
        return qk_thrift_field_i32(t, type, &h->compressed_size);
    case 5:
        return page_sub_header(t, type, h, PQ_DATA_PAGE, data_page_field);
    case 7:
        return page_sub_header(t, type, h, PQ_DICTIONARY_PAGE,
                               dictionary_page_field);
    case 8:
        return page_sub_header(t, type, h, PQ_DATA_PAGE_V2,
                               data_page_v2_field);
    default:
        return qk_thrift_skip(t, type);
    }
}

static int check_page_header(const pq_page_header *h, qk_err *err)
{
    if (h->type < 0)
        return qk_fail(err, "page header has no page type");
    if (h->uncompressed_size < 0 || h->compressed_size < 0)
        return qk_fail(err, "page header has no or negative page sizes");
    int needs_sub = h->type == PQ_DATA_PAGE || h->type == PQ_DATA_PAGE_V2 ||
                    h->type == PQ_DICTIONARY_PAGE;
    if (needs_sub && !h->has_sub_header)
        return qk_fail(err, "page header lacks its %s header",
                       h->type == PQ_DICTIONARY_PAGE ? "dictionary page"
                                                     : "data page");
    if (needs_sub && h->num_values < 0)
        return qk_fail(err, "page header has no or a negative value count");
    if (h->type == PQ_DATA_PAGE_V2 &&
        (h->def_length < 0 || h->rep_length < 0 ||
         (int64_t)h->def_length + h->rep_length > h->compressed_size ||
         (int64_t)h->def_length + h->rep_length > h->uncompressed_size))
        return qk_fail(err, "DATA_PAGE_V2 level lengths (%d + %d) do not "
                            "fit the page",
                       h->rep_length, h->def_length);
    return 0;
}

int pq_read_page_header(const uint8_t *buf, size_t len, pq_page_header *h,
                        size_t *header_len, qk_err *err)
{
    memset(h, 0, sizeof *h);
    h->type = h->uncompressed_size = h->compressed_size = -1;
    h->num_values = -1;
    h->encoding = PQ_PLAIN;
    h->def_encoding = h->rep_encoding = PQ_RLE;
    h->def_length = h->rep_length = -1;
    h->is_compressed = 1;
    qk_thrift t;
    qk_thrift_init(&t, buf, len, err);
    if (qk_thrift_struct_begin(&t) != 0 ||
        qk_thrift_read_struct(&t, page_header_field, h) != 0)
        return pq_prefix_error(err, "corrupt page header");
    *header_len = qk_thrift_offset(&t);
    return check_page_header(h, err);
}

static void buffer_reserve(pq_decompressor *b, size_t n)
{
    /* 8 spare bytes let the bit unpacker load whole words at the end. */
    if (n + 8 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < n + 8)
            cap *= 2;
        free(b->data);
        b->data = qk_malloc(cap);
        b->cap = cap;
    }
}

static int inflate_gzip(const uint8_t *src, size_t src_len, uint8_t *dst,
                        size_t dst_len, qk_err *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        return qk_fail(err, "cannot initialise zlib");
    zs.next_in = (Bytef *)(uintptr_t)src;
    zs.avail_in = (uInt)src_len;
    zs.next_out = dst;
    zs.avail_out = (uInt)dst_len;
    int rc = inflate(&zs, Z_FINISH);
    size_t produced = zs.total_out;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END)
        return qk_fail(err, "corrupt GZIP page data (%s)",
                       rc == Z_BUF_ERROR ? "longer than uncompressed_page_size"
                                         : "inflate failed");
    if (produced != dst_len)
        return qk_fail(err, "page size mismatch: GZIP data inflates to %zu "
                            "bytes, header says %zu",
                       produced, dst_len);
    return 0;
}

static int uncompress_snappy(const uint8_t *src, size_t src_len, uint8_t *dst,
                             size_t dst_len, qk_err *err)
{
    size_t n;
    if (snappy_uncompressed_length((const char *)src, src_len, &n) !=
        SNAPPY_OK)
        return qk_fail(err, "corrupt SNAPPY page data");
    if (n != dst_len)
        return qk_fail(err, "page size mismatch: SNAPPY data holds %zu "
                            "bytes, header says %zu",
                       n, dst_len);
    if (snappy_uncompress((const char *)src, src_len, (char *)dst, &n) !=
        SNAPPY_OK)
        return qk_fail(err, "corrupt SNAPPY page data");
    return 0;
}

/* LZ4_RAW is a bare LZ4 block, without the frame or the Hadoop size
 * prefixes of the deprecated LZ4 codec. */
static int uncompress_lz4_raw(const uint8_t *src, size_t src_len, uint8_t *dst,
                              size_t dst_len, qk_err *err)
{
    if (src_len > INT32_MAX || dst_len > INT32_MAX)
        return qk_fail(err, "LZ4_RAW page of %zu bytes is too large",
                       src_len > dst_len ? src_len : dst_len);
    int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len,
                                (int)dst_len);
    if (n < 0)
        return qk_fail(err, "corrupt LZ4_RAW page data (or longer than "
                            "uncompressed_page_size)");
    if ((size_t)n != dst_len)
        return qk_fail(err, "page size mismatch: LZ4_RAW data holds %d "
                            "bytes, header says %zu",
                       n, dst_len);
    return 0;
}

static int decompress_zstd(pq_decompressor *d, const uint8_t *src,
                           size_t src_len, size_t dst_len, qk_err *err)
{
    if (!d->zstd) {
        d->zstd = ZSTD_createDCtx();
        if (!d->zstd)
            return qk_fail(err, "cannot create a ZSTD context");
    }
    size_t n = ZSTD_decompressDCtx(d->zstd, d->data, dst_len, src, src_len);
    if (ZSTD_isError(n))
        return qk_fail(err, "corrupt ZSTD page data (%s)",
                       ZSTD_getErrorName(n));
    if (n != dst_len)
        return qk_fail(err, "page size mismatch: ZSTD data holds %zu bytes, "
                            "header says %zu",
                       n, dst_len);
    return 0;
}

int pq_decompress(pq_decompressor *d, int32_t codec, const uint8_t *src,
                  size_t src_len, size_t dst_len, const uint8_t **out,
                  qk_err *err)
{
    if (codec == PQ_UNCOMPRESSED) {
        if (src_len != dst_len)
            return qk_fail(err, "page size mismatch: uncompressed page has "
                                "%zu bytes, header says %zu",
                           src_len, dst_len);
        *out = src;
        return 0;
    }
    buffer_reserve(d, dst_len);
    int rc;
    switch (codec) {
    case PQ_ZSTD:
        rc = decompress_zstd(d, src, src_len, dst_len, err);
        break;
    case PQ_SNAPPY:
        rc = uncompress_snappy(src, src_len, d->data, dst_len, err);
        break;
    case PQ_GZIP:
        rc = inflate_gzip(src, src_len, d->data, dst_len, err);
        break;
    case PQ_LZ4_RAW:
        rc = uncompress_lz4_raw(src, src_len, d->data, dst_len, err);
        break;
    default:
        return qk_fail(err, "unsupported compression %s",
                       pq_codec_name(codec));
    }
    if (rc != 0)
        return -1;
    memset(d->data + dst_len, 0, 8);
    *out = d->data;
    return 0;
}

void pq_decompressor_free(pq_decompressor *d)
{
    free(d->data);
    ZSTD_freeDCtx(d->zstd);
    memset(d, 0, sizeof *d);
}
