/* Reader for the Parquet subset that sniffed-qk files use (see
 * docs/parquet-subset.md): one table of bucket, example_id, position and a
 * fixed-length float vector per row. */
#ifndef QK_PARQUET_H
#define QK_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "qk/common.h"
#include "qk/reader.h"

/* The decoded columns of one sniffed-qk file. Arrays have `rows` entries;
 * vector holds rows * dim floats, row-major. dim is the common list length
 * of every row (0 only when the file has no rows and declares no size). */
typedef struct qk_pq_table {
    int64_t rows;
    int dim;
    int32_t *bucket;
    int32_t *example_id;
    int32_t *position;
    float *vector;
} qk_pq_table;

/* Decodes a Parquet file held in memory.  On bad or unsupported input
 * returns -1 with a one-line message in err (the caller adds the file
 * name), e.g. "column vector: unsupported compression BROTLI".
 * Null values in the four used columns are errors; token_str and
 * sliding_window are read over and ignored. */
int qk_parquet_decode(const uint8_t *buf, size_t len, qk_pq_table *out,
                      qk_err *err);

/* Reads and decodes the file at path (errors as above, plus I/O). A Git
 * LFS pointer gets "Git LFS pointer, not Parquet data: run git lfs pull". */
int qk_parquet_read_file(const char *path, qk_pq_table *out, qk_err *err);

void qk_pq_table_free(qk_pq_table *t);

/* Statistics in the form of the fixtures' truth.json: sums in float64
 * accumulated in row order (qk_rows_stats of the table's rows). */
typedef qk_row_stats qk_pq_stats;

void qk_pq_table_stats(const qk_pq_table *t, qk_pq_stats *s);

/* Lower-level pieces, exposed for tests and diagnostics. */

/* Decodes exactly count values of an RLE/bit-packed hybrid stream (no
 * length prefix) of the given bit width (0..32). */
int qk_pq_hybrid_decode(const uint8_t *data, size_t len, int bit_width,
                        uint32_t *out, int64_t count, qk_err *err);

/* Decodes a DELTA_BINARY_PACKED stream whose header must count exactly
 * `count` values; *consumed (if not NULL) gets the stream's length in
 * bytes.  The INT32 decoder accepts bit widths up to 64 (writers that
 * take 32-bit deltas in 64 bits need 33) and keeps the low 32 bits. */
int qk_pq_delta_decode_i32(const uint8_t *data, size_t len, int32_t *out,
                           int64_t count, size_t *consumed, qk_err *err);
int qk_pq_delta_decode_i64(const uint8_t *data, size_t len, int64_t *out,
                           int64_t count, size_t *consumed, qk_err *err);

/* Decodes count values of `width` bytes (4 for INT32/FLOAT, 8 for
 * INT64/DOUBLE) from BYTE_STREAM_SPLIT data of len bytes, which holds
 * len / width values per stream. */
int qk_pq_byte_stream_split_decode(const uint8_t *data, size_t len, int width,
                                   void *out, int64_t count, qk_err *err);

/* count byte strings: value i is data[offsets[i] .. offsets[i + 1]). */
typedef struct qk_pq_byte_arrays {
    int64_t count;
    uint8_t *data;
    int64_t *offsets; /* count + 1 entries */
} qk_pq_byte_arrays;

/* Decode exactly count values of DELTA_LENGTH_BYTE_ARRAY or
 * DELTA_BYTE_ARRAY data (the non-null values of a BYTE_ARRAY page). */
int qk_pq_delta_length_byte_array_decode(const uint8_t *data, size_t len,
                                         int64_t count, qk_pq_byte_arrays *out,
                                         qk_err *err);
int qk_pq_delta_byte_array_decode(const uint8_t *data, size_t len,
                                  int64_t count, qk_pq_byte_arrays *out,
                                  qk_err *err);
void qk_pq_byte_arrays_free(qk_pq_byte_arrays *a);

/* Byte range [*start, *start + *size) of the column chunk of the named
 * top-level column in a row group, from the file's footer. */
int qk_parquet_chunk_range(const uint8_t *buf, size_t len, int row_group,
                           const char *column, uint64_t *start,
                           uint64_t *size, qk_err *err);

#endif
