/* Internal pieces of the Parquet reader shared by src/lib/parquet*.c:
 * enums of the format, the parsed footer, page headers, the hybrid
 * RLE/bit-packed decoder and decompression. */
#ifndef QK_PARQUET_INTERNAL_H
#define QK_PARQUET_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "qk/common.h"
#include "qk/parquet.h"

enum pq_type {
    PQ_BOOLEAN = 0, PQ_INT32 = 1, PQ_INT64 = 2, PQ_INT96 = 3,
    PQ_FLOAT = 4, PQ_DOUBLE = 5, PQ_BYTE_ARRAY = 6, PQ_FIXED_LEN_BYTE_ARRAY = 7
};
enum pq_repetition { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };
enum pq_encoding {
    PQ_PLAIN = 0, PQ_PLAIN_DICTIONARY = 2, PQ_RLE = 3, PQ_BIT_PACKED = 4,
    PQ_DELTA_BINARY_PACKED = 5, PQ_DELTA_LENGTH_BYTE_ARRAY = 6,
    PQ_DELTA_BYTE_ARRAY = 7, PQ_RLE_DICTIONARY = 8, PQ_BYTE_STREAM_SPLIT = 9
};
enum pq_codec {
    PQ_UNCOMPRESSED = 0, PQ_SNAPPY = 1, PQ_GZIP = 2, PQ_LZO = 3,
    PQ_BROTLI = 4, PQ_LZ4 = 5, PQ_ZSTD = 6, PQ_LZ4_RAW = 7
};
enum pq_page_type {
    PQ_DATA_PAGE = 0, PQ_INDEX_PAGE = 1, PQ_DICTIONARY_PAGE = 2,
    PQ_DATA_PAGE_V2 = 3
};

const char *pq_type_name(int32_t type);
const char *pq_encoding_name(int32_t encoding);
const char *pq_codec_name(int32_t codec);

/* A byte string inside the file buffer (not NUL-terminated). */
typedef struct pq_str {
    const uint8_t *data;
    uint32_t len;
} pq_str;

int pq_str_eq(pq_str s, const char *text);

/* Puts a formatted prefix and ": " before the message already in err
 * (if err is not NULL); returns -1. */
int pq_prefix_error(qk_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

typedef struct pq_schema_node {
    pq_str name;
    int has_type;
    int32_t type;
    int32_t repetition;
    int32_t num_children;
} pq_schema_node;

typedef struct pq_column_meta {
    int32_t type;
    int32_t codec;
    int64_t num_values;
    int64_t total_compressed_size;
    int64_t data_page_offset;
    int64_t dictionary_page_offset; /* 0 when absent */
    pq_str path0;                   /* first component of path_in_schema */
} pq_column_meta;

typedef struct pq_chunk {
    int has_file_path;
    int has_meta;
    pq_column_meta meta;
} pq_chunk;

typedef struct pq_row_group {
    pq_chunk *chunks;
    uint32_t nchunks;
    int64_t num_rows;
} pq_row_group;

typedef struct pq_file_meta {
    pq_schema_node *schema;
    uint32_t nschema;
    int64_t num_rows;
    pq_row_group *row_groups;
    uint32_t nrow_groups;
    pq_str arrow_schema; /* value of the ARROW:schema key, if any */
} pq_file_meta;

/* A top-level field of the schema and its (first) leaf column. */
typedef struct pq_field {
    pq_str name;
    const pq_schema_node *leaf;
    int nleaves;
    int is_leaf;        /* the field itself is a primitive column */
    int max_def;
    int max_rep;
    int def_before_rep; /* definition level of the list's parent */
} pq_field;

typedef struct pq_schema {
    pq_field *fields;
    int nfields;
} pq_schema;

/* Checks the magic numbers and footer length and parses FileMetaData. */
int pq_read_footer(const uint8_t *buf, size_t len, pq_file_meta *meta,
                   size_t *data_end, qk_err *err);
void pq_file_meta_free(pq_file_meta *meta);
int pq_build_schema(const pq_file_meta *meta, pq_schema *schema,
                    qk_err *err);
void pq_schema_free(pq_schema *schema);
const pq_field *pq_schema_find(const pq_schema *schema, const char *name);
/* The chunk of the named top-level field in a row group, or NULL. */
const pq_chunk *pq_find_chunk(const pq_row_group *rg, const char *name);
/* Byte range [start, start + size) of a column chunk, checked against the
 * data area before the footer. */
int pq_chunk_range(const pq_column_meta *m, size_t data_end, uint64_t *start,
                   uint64_t *size, qk_err *err);

/* listSize of the FixedSizeList type of the named field in the base64
 * Arrow IPC schema of ARROW:schema, or 0 when it has none. */
int pq_arrow_list_size(pq_str arrow_schema, const char *field);

typedef struct pq_page_header {
    int32_t type;
    int32_t uncompressed_size;
    int32_t compressed_size;
    int has_sub_header;   /* the header matching the page type was read */
    int32_t num_values;
    int32_t encoding;
    int32_t def_encoding;
    int32_t rep_encoding;
    /* DATA_PAGE_V2 only */
    int32_t def_length;
    int32_t rep_length;
    int is_compressed;
} pq_page_header;

/* Parses a PageHeader from [buf, buf + len); *header_len gets its size. */
int pq_read_page_header(const uint8_t *buf, size_t len, pq_page_header *h,
                        size_t *header_len, qk_err *err);

/* Decompression state reused across the pages of a file: the output
 * buffer (with 8 spare bytes so bit unpacking may load whole words at its
 * end) and a ZSTD context. */
typedef struct pq_decompressor {
    uint8_t *data;
    size_t cap;
    struct ZSTD_DCtx_s *zstd;
} pq_decompressor;

/* Decompresses src into exactly dst_len bytes; *out points at the result
 * (into the decompressor's buffer, or at src itself for UNCOMPRESSED). */
int pq_decompress(pq_decompressor *d, int32_t codec, const uint8_t *src,
                  size_t src_len, size_t dst_len, const uint8_t **out,
                  qk_err *err);
void pq_decompressor_free(pq_decompressor *d);

/* Decoder of the RLE/bit-packed hybrid encoding.  pq_hybrid_next hands
 * out the values piece by piece: an RLE piece as (value, count), or up to
 * PQ_HYBRID_BLOCK bit-unpacked values. */
#define PQ_HYBRID_BLOCK 512

typedef struct pq_hybrid {
    const uint8_t *pos;
    const uint8_t *end;
    int bit_width;
    int64_t rle_left;
    uint32_t rle_value;
    const uint8_t *packed;  /* next group of the bit-packed run */
    int64_t packed_left;    /* values left in the bit-packed run */
    int block_pos;          /* unpacked values not yet handed out */
    int block_len;
    uint32_t block[PQ_HYBRID_BLOCK];
} pq_hybrid;

int pq_hybrid_init(pq_hybrid *h, const uint8_t *data, size_t len,
                   int bit_width, qk_err *err);
/* Next piece of at most `want` (> 0) values: returns its length, 0 at the
 * end of the stream, -1 on a corrupt run header.  For an RLE piece *values
 * is NULL and *rle_value holds the value; otherwise *values points at the
 * unpacked values (valid until the next call). */
int64_t pq_hybrid_next(pq_hybrid *h, int64_t want, const uint32_t **values,
                       uint32_t *rle_value, qk_err *err);

/* Hands whole groups of the current bit-packed run straight to the
 * caller: at most max_groups groups starting at *packed, all at least 8
 * bytes before the end of the stream (so words may be loaded past them).
 * Returns 0 when the next values must come through pq_hybrid_next (an RLE
 * run, a partial group, the end of the stream), -1 on a corrupt header. */
int64_t pq_hybrid_take_groups(pq_hybrid *h, int64_t max_groups,
                              const uint8_t **packed, qk_err *err);

/* Widest dictionary index that pq_gather_groups handles. */
#define PQ_GATHER_MAX_WIDTH 18

/* Writes dict[index] (4 bytes) to out for 8 * ngroups bit-packed indices
 * of width 1..PQ_GATHER_MAX_WIDTH.  dict must have 2^bit_width entries.
 * Returns the largest index. */
uint32_t pq_gather_groups(int bit_width, const uint8_t *packed,
                          int64_t ngroups, const uint32_t *dict, void *out);

/* Smallest bit width that holds max_value. */
int pq_bit_width(uint32_t max_value);

#endif
