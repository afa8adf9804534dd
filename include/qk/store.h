/* The binary store qk-load writes for one dataset and later stages map
 * into memory. Format version 3 (all integers little-endian;
 * docs/store-format.md):
 *
 *   header        128 bytes, see qk_store_header
 *   data sections each starts on a 64-byte boundary, gaps are zero:
 *                 position[rows], example_id[rows], bucket[rows] as int32
 *                 (a section with the contents of an earlier one is not
 *                 written again: both records point at it), and the
 *                 vectors of the config in its encoding (QK_STORE_BF16 or
 *                 QK_STORE_F32)
 *   config table  n_configs records of 64 bytes (qk_store_record)
 *   pair table    n_pairs records of 8 bytes: u32 q index, u32 k index
 *
 * checksum = XXH3-64 (xxHash, seed 0) of every byte after the header,
 * followed by the header's bytes but the checksum field's: it covers the
 * whole file. */
#ifndef QK_STORE_H
#define QK_STORE_H

#include <stdint.h>

#include "qk/common.h"

#define QK_STORE_MAGIC "QKSTORE\0"
#define QK_STORE_VERSION 3u
#define QK_STORE_HEADER_SIZE 128u
#define QK_STORE_ALIGN 64u
/* Largest vector length a store may declare: it keeps rows * dim * 4 far
 * from overflowing and dim within an int. */
#define QK_STORE_MAX_DIM 65536u

/* How a config's vectors are stored. */
enum {
    /* every value is bfloat16-exact (low 16 bits zero): the low bytes of
     * the bf16 values (rows * dim bytes, row-major), then one zstd frame
     * of their high bytes */
    QK_STORE_BF16 = 1,
    /* any other config: rows * dim float32, row-major */
    QK_STORE_F32 = 2
};

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
    uint8_t kind;     /* 'q' or 'k' */
    uint8_t encoding; /* QK_STORE_BF16 or QK_STORE_F32 */
    uint8_t pad[2];
    uint64_t rows;
    uint64_t position_offset;
    uint64_t example_id_offset;
    uint64_t bucket_offset;
    uint64_t vector_offset;
    uint64_t source_bytes; /* bytes of the Parquet file(s) it came from */
    uint64_t vector_bytes; /* length of the vector section */
} qk_store_record;

/* One config as seen through an open store: the integer columns point
 * into the mapping; the vectors come from qk_store_vectors. */
typedef struct qk_store_config {
    int layer;
    int head;
    char kind;
    int encoding;
    int64_t rows;
    uint64_t source_bytes;
    const int32_t *position;
    const int32_t *example_id;
    const int32_t *bucket;
    const uint8_t *vector_data; /* the encoded vector section */
    uint64_t vector_bytes;
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

/* Maps a store and checks its structure: the header's fields against the
 * file and each other, every record's sections, every pair's configs and
 * heads. verify_checksum also rehashes the whole file (reads every byte,
 * about 20 GB/s) and checks every row's position and bucket against
 * context_length and bucket_size. */
int qk_store_open(const char *path, qk_store *s, int verify_checksum, qk_err *err);
/* The same checks on a store held in memory (8-byte aligned; it must stay
 * valid and unchanged until qk_store_close, which does not free it). */
int qk_store_open_memory(const void *data, size_t size, qk_store *s, int verify_checksum,
                         qk_err *err);
void qk_store_close(qk_store *s);

/* A caller's space for the vectors of one config at a time (one per
 * thread): zero-initialise it, release it with qk_store_buf_free. It
 * remembers the config it holds, so asking for it again costs nothing. */
typedef struct qk_store_buf {
    float *vector;
    uint8_t *plane;
    size_t cap; /* values vector and plane have room for */
    const void *map;
    int config;
    void *dctx; /* zstd decompression context */
} qk_store_buf;

/* The vectors of config c as rows * dim float32, row-major, exactly as
 * qk-load read them: decoded into buf (QK_STORE_BF16), or straight from
 * the mapping (QK_STORE_F32). Valid until the next call with buf. NULL
 * with a message in err when the section does not decode (a corrupted
 * store). */
const float *qk_store_vectors(const qk_store *s, int c, qk_store_buf *buf, qk_err *err);
void qk_store_buf_free(qk_store_buf *buf);

/* Streaming writer: configs are appended one by one, then the pairs. */
typedef struct qk_store_section qk_store_section;

typedef struct qk_store_writer {
    qk_atomic out;
    qk_store_header header;
    qk_store_record *records;
    int n_records;
    uint64_t offset;
    void *hash;                 /* XXH3 state of the bytes after the header (the
                                   header's are added last) */
    qk_store_section *sections; /* integer sections written, for sharing */
    int n_sections;
    uint8_t *planes; /* scratch: the high and low byte planes */
    size_t planes_cap;
    void *cctx;      /* zstd compression context */
} qk_store_writer;

int qk_store_writer_open(qk_store_writer *w, const char *path,
                         const qk_store_header *meta, qk_err *err);
/* Appends one config; its vectors are stored as QK_STORE_BF16 when every
 * value is bfloat16-exact, else as QK_STORE_F32. It first checks the disk
 * has room for the config (qk_atomic_reserve). The writer's messages name
 * the store. */
int qk_store_writer_add(qk_store_writer *w, int layer, int head, char kind,
                        int64_t rows, const int32_t *position,
                        const int32_t *example_id, const int32_t *bucket,
                        const float *vector, uint64_t source_bytes, qk_err *err);
/* Writes the tables and the header, then renames into place. */
int qk_store_writer_finish(qk_store_writer *w, const qk_store_pair *pairs,
                           int n_pairs, qk_err *err);
/* Like qk_store_writer_finish, but leaves the whole store in its temporary
 * file w->out for the caller to commit with its other outputs (or abort);
 * w->header then holds its file size and checksum. */
int qk_store_writer_seal(qk_store_writer *w, const qk_store_pair *pairs, int n_pairs,
                         qk_err *err);
void qk_store_writer_abort(qk_store_writer *w);

#endif
