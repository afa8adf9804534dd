/* A small Parquet writer for the sniffed-qk layout, used by qk-synth and by
 * tests that need files the reader must handle (rows spanning pages, codecs,
 * page versions, the DELTA and BYTE_STREAM_SPLIT encodings). By default it
 * writes the same schema and encodings pyarrow writes for the capture tool:
 * bucket, example_id, position (INT32, dictionary-encoded), vector
 * (three-level LIST of FLOAT) and the all-null sliding_window column. */
#ifndef QK_PQWRITE_H
#define QK_PQWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "qk/common.h"

enum qk_pq_codec {
    QK_CODEC_UNCOMPRESSED = 0,
    QK_CODEC_SNAPPY = 1,
    QK_CODEC_GZIP = 2,
    QK_CODEC_ZSTD = 6,
    QK_CODEC_LZ4_RAW = 7
};

/* Encodings of the three int32 columns. */
enum qk_pq_int_encoding {
    QK_INTS_DICTIONARY = 0,       /* dictionary page + RLE_DICTIONARY */
    QK_INTS_PLAIN = 1,
    QK_INTS_DELTA = 2,            /* DELTA_BINARY_PACKED */
    QK_INTS_BYTE_STREAM_SPLIT = 3
};

typedef struct qk_pq_write_opts {
    int codec;               /* enum qk_pq_codec; default ZSTD */
    int zstd_level;          /* default 1, as pyarrow */
    int dictionary_vectors;  /* 1: RLE_DICTIONARY vector pages (falls back to
                                PLAIN past 65536 distinct values); 0: PLAIN */
    int data_page_v2;        /* 1: DATA_PAGE_V2 pages; 0: v1 (default) */
    int64_t rows_per_group;  /* 0: one row group */
    int64_t values_per_page; /* vector leaf values per data page; 0 or
                                default: 262144 (1 MiB of floats). Not a
                                multiple of dim makes rows span pages. */
    /* Options for files as other writers make them (tests). */
    int int_encoding;        /* enum qk_pq_int_encoding; default DICTIONARY */
    int64_t rows_per_int_page; /* int32 column rows per data page; 0: one
                                  page per chunk */
    int byte_stream_split_vectors; /* 1: vector pages that are not
                                      dictionary-encoded (all of them, or
                                      those after a fallback) use
                                      BYTE_STREAM_SPLIT instead of PLAIN */
    int v2_raw_values;       /* DATA_PAGE_V2: values stored uncompressed,
                                is_compressed false (dictionary pages are
                                still compressed) */
} qk_pq_write_opts;

void qk_pq_write_opts_default(qk_pq_write_opts *o);

/* Writes rows x dim vectors with their columns to path, atomically. */
int qk_parquet_write_file(const char *path, const qk_pq_write_opts *opts,
                          int64_t rows, int dim, const int32_t *bucket,
                          const int32_t *example_id, const int32_t *position,
                          const float *vector, qk_err *err);

/* The RLE/bit-packed hybrid encoding of values of bit_width bits: an upper
 * bound of its size, and the encoder (returns the bytes written). */
/* Writes v as an unsigned LEB128 varint (Thrift, RLE headers, the delta
 * encodings); returns the bytes written (at most 10). */
size_t qk_pq_put_uleb128(uint8_t *out, uint64_t v);
size_t qk_pq_hybrid_bound(size_t n, int bit_width);
size_t qk_pq_hybrid_encode(const uint32_t *values, size_t n, int bit_width, uint8_t *out);

/* DELTA_BINARY_PACKED of n values in blocks of block_size values (a
 * multiple of 128) cut into `miniblocks` miniblocks (of a multiple of 32
 * values).  value_bits 32 takes the deltas modulo 2^32 as INT32 writers
 * do; 64 takes them in 64 bits, which for int32 values may need 33-bit
 * widths (as DuckDB writes).  out must hold qk_pq_delta_bound(n,
 * block_size, miniblocks) bytes; returns the bytes written. */
size_t qk_pq_delta_bound(size_t n, int block_size, int miniblocks);
size_t qk_pq_delta_encode(const int64_t *values, size_t n, int value_bits,
                          int block_size, int miniblocks, uint8_t *out);

/* BYTE_STREAM_SPLIT of n values of `width` bytes: n * width bytes. */
void qk_pq_byte_stream_split_encode(const void *values, size_t n, int width,
                                    uint8_t *out);

/* DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY of n strings (value i is
 * data[offsets[i] .. offsets[i + 1])), with the delta streams in blocks
 * of 128 values and 4 miniblocks.  out must hold
 * qk_pq_byte_array_bound(n, offsets[n]) bytes; returns the bytes written. */
size_t qk_pq_byte_array_bound(size_t n, size_t data_len);
size_t qk_pq_delta_length_byte_array_encode(const uint8_t *data,
                                            const int64_t *offsets, size_t n,
                                            uint8_t *out);
size_t qk_pq_delta_byte_array_encode(const uint8_t *data,
                                     const int64_t *offsets, size_t n,
                                     uint8_t *out);

#endif
