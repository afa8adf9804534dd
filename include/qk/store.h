/* The binary store qk-load writes for one dataset and later stages map
 * into memory. Format (all integers little-endian; docs/store-format.md):
 *
 *   header        128 bytes, see qk_store_header
 *   data sections for each config in table order: position[rows] int32,
 *                 example_id[rows] int32, bucket[rows] int32,
 *                 vector[rows*dim] float32; each section starts on a
 *                 64-byte boundary, gaps are zero
 *   config table  n_configs records of 64 bytes (qk_store_record)
 *   pair table    n_pairs records of 8 bytes: u32 q index, u32 k index
 *
 * checksum = qk_hash64 of every byte after the header (seed 0). */
#ifndef QK_STORE_H
#define QK_STORE_H

#include <stdint.h>

#include "qk/common.h"

#define QK_STORE_MAGIC "QKSTORE\0"
#define QK_STORE_VERSION 1u
#define QK_STORE_HEADER_SIZE 128u
#define QK_STORE_ALIGN 64u
/* Largest vector length a store may declare: it keeps rows * dim * 4 far
 * from overflowing and dim within an int. */
#define QK_STORE_MAX_DIM 65536u

typedef struct qk_store_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint32_t n_configs;
    uint32_t n_pairs;
    uint32_t dim;
    uint32_t n_layers;
    uint32_t n_q_heads;
    uint32_t n_kv_heads;
    uint32_t context_length;
    uint32_t bucket_size;
    uint64_t table_offset; /* config table; the pair table follows it */
    uint64_t file_size;
    uint64_t checksum;
    char dataset_id[56];
} qk_store_header;

typedef struct qk_store_record {
    uint16_t layer;
    uint16_t head;
    uint8_t kind; /* 'q' or 'k' */
    uint8_t pad[3];
    uint64_t rows;
    uint64_t position_offset;
    uint64_t example_id_offset;
    uint64_t bucket_offset;
    uint64_t vector_offset;
    uint64_t source_bytes; /* bytes of the Parquet file(s) it came from */
    uint64_t reserved;
} qk_store_record;

/* One config as seen through an open store (pointers into the mapping). */
typedef struct qk_store_config {
    int layer;
    int head;
    char kind;
    int64_t rows;
    uint64_t source_bytes;
    const int32_t *position;
    const int32_t *example_id;
    const int32_t *bucket;
    const float *vector; /* rows * dim, row-major */
} qk_store_config;

typedef struct qk_store_pair {
    uint32_t q;
    uint32_t k;
} qk_store_pair;

typedef struct qk_store {
    qk_store_header header;
    int dim;
    int n_configs;
    qk_store_config *configs;
    int n_pairs;
    const qk_store_pair *pairs;
    void *map;
    size_t map_size;
    int mapped; /* map is the file's mapping, unmapped by qk_store_close */
} qk_store;

/* Maps a store and checks its structure; verify_checksum also rehashes the
 * payload (reads every byte). */
int qk_store_open(const char *path, qk_store *s, int verify_checksum, qk_err *err);
/* The same checks on a store held in memory (8-byte aligned; it must stay
 * valid and unchanged until qk_store_close, which does not free it). */
int qk_store_open_memory(const void *data, size_t size, qk_store *s, int verify_checksum,
                         qk_err *err);
void qk_store_close(qk_store *s);

/* Streaming writer: configs are appended one by one, then the pairs. */
typedef struct qk_store_writer {
    qk_atomic out;
    qk_store_header header;
    qk_store_record *records;
    int n_records;
    uint64_t offset;
    qk_hash hash;
} qk_store_writer;

int qk_store_writer_open(qk_store_writer *w, const char *path,
                         const qk_store_header *meta, qk_err *err);
int qk_store_writer_add(qk_store_writer *w, int layer, int head, char kind,
                        int64_t rows, const int32_t *position,
                        const int32_t *example_id, const int32_t *bucket,
                        const float *vector, uint64_t source_bytes, qk_err *err);
/* Writes the tables and the header, then renames into place. */
int qk_store_writer_finish(qk_store_writer *w, const qk_store_pair *pairs,
                           int n_pairs, qk_err *err);
void qk_store_writer_abort(qk_store_writer *w);

#endif
