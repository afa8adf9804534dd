/* Writing and mapping the per-dataset binary store (include/qk/store.h). */
#include "qk/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

_Static_assert(sizeof(qk_store_header) == QK_STORE_HEADER_SIZE, "header layout");
_Static_assert(sizeof(qk_store_record) == 64, "record layout");
_Static_assert(sizeof(qk_store_pair) == 8, "pair layout");
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the store format is little-endian; this host is not"
#endif

static const uint8_t zeros[QK_STORE_ALIGN];

/* An integer section already in the file, kept to share it with later
 * configs of the same contents. */
struct qk_store_section {
    uint64_t hash;
    uint64_t bytes;
    uint64_t offset;
    void *copy;
};

/* Appends bytes to the output, hashing them. */
static int put(qk_store_writer *w, const void *data, size_t n, qk_err *err)
{
    if (n && fwrite(data, 1, n, w->out.fp) != n)
        return qk_fail(err, "cannot write %s: %s", w->out.final_path, strerror(errno));
    XXH3_64bits_update(w->hash, data, n);
    w->offset += n;
    return 0;
}

static int pad_to_alignment(qk_store_writer *w, qk_err *err)
{
    size_t rem = (size_t)(w->offset % QK_STORE_ALIGN);
    return rem ? put(w, zeros, QK_STORE_ALIGN - rem, err) : 0;
}

/* Writes one aligned section and returns its offset in *at. */
static int put_section(qk_store_writer *w, const void *data, size_t n,
                       uint64_t *at, qk_err *err)
{
    if (pad_to_alignment(w, err) != 0)
        return -1;
    *at = w->offset;
    return put(w, data, n, err);
}

/* An int32 section: the offset of an earlier one with the same contents,
 * else a new section. All query configs of a layer share their positions,
 * example ids and buckets, as do all key configs of a layer. */
static int put_int_section(qk_store_writer *w, const int32_t *data, size_t rows,
                           uint64_t *at, qk_err *err)
{
    size_t bytes = rows * sizeof *data;
    uint64_t hash = XXH3_64bits(data, bytes);
    for (int i = 0; i < w->n_sections; i++) {
        const qk_store_section *s = &w->sections[i];
        if (s->hash == hash && s->bytes == bytes && memcmp(s->copy, data, bytes) == 0) {
            *at = s->offset;
            return 0;
        }
    }
    if (put_section(w, data, bytes, at, err) != 0)
        return -1;
    w->sections = qk_realloc(w->sections, (size_t)(w->n_sections + 1) * sizeof *w->sections);
    qk_store_section *s = &w->sections[w->n_sections++];
    *s = (qk_store_section){hash, bytes, *at, qk_malloc(bytes ? bytes : 1)};
    memcpy(s->copy, data, bytes);
    return 0;
}

/* Loops over blocks of a fixed length vectorise (gcc -O2). */
#define BLOCK 64

static uint32_t bits_of(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* Splits n float32 values into the planes of the high and the low bytes
 * of their bf16 halves; returns the OR of the discarded low 16 bits (0:
 * every value is bf16-exact and the planes hold it whole). */
static uint32_t split_planes(const float *restrict v, size_t n, uint8_t *restrict high,
                             uint8_t *restrict low)
{
    uint32_t rest = 0;
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK)
        for (size_t j = 0; j < BLOCK; j++) {
            uint32_t u = bits_of(v[i + j]);
            rest |= u & 0xffffu;
            low[i + j] = (uint8_t)(u >> 16);
            high[i + j] = (uint8_t)(u >> 24);
        }
    for (; i < n; i++) {
        uint32_t u = bits_of(v[i]);
        rest |= u & 0xffffu;
        low[i] = (uint8_t)(u >> 16);
        high[i] = (uint8_t)(u >> 24);
    }
    return rest;
}

/* The high bytes (sign and exponent) hold under 3 bits of information a
 * value but almost no repeated strings, so zstd's match finder is kept
 * to its minimum (fast strategy, 7-byte matches, 64-entry table) and its
 * time goes to Huffman-coding the literals: measured on thesis-scale data
 * this gives smaller frames than level 1, compressed 2.5x and decoded 1.7x
 * as fast (docs/store-format.md). */
static int make_cctx(qk_store_writer *w, qk_err *err)
{
    if (!(w->cctx = ZSTD_createCCtx()))
        return qk_fail(err, "cannot write %s: cannot create a zstd context", w->out.final_path);
    const int params[][2] = {{ZSTD_c_compressionLevel, 1}, {ZSTD_c_strategy, ZSTD_fast},
                             {ZSTD_c_minMatch, 7}, {ZSTD_c_hashLog, 6}};
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        size_t rc = ZSTD_CCtx_setParameter(w->cctx, (ZSTD_cParameter)params[i][0], params[i][1]);
        if (ZSTD_isError(rc))
            return qk_fail(err, "cannot write %s: zstd: %s", w->out.final_path,
                           ZSTD_getErrorName(rc));
    }
    return 0;
}

/* Writes n values as QK_STORE_BF16 when every one is bf16-exact: the
 * plane of low bytes (mantissa bits, nearly random) as it is, the plane
 * of high bytes as a zstd frame; else as QK_STORE_F32. */
static int put_vectors(qk_store_writer *w, const float *v, size_t n, qk_store_record *r,
                       qk_err *err)
{
    size_t bound = ZSTD_compressBound(n);
    if (w->planes_cap < 2 * n + bound) {
        w->planes_cap = 2 * n + bound;
        w->planes = qk_realloc(w->planes, w->planes_cap);
    }
    uint8_t *low = w->planes, *high = low + n, *frame = high + n;
    if (split_planes(v, n, high, low) != 0) {
        r->encoding = QK_STORE_F32;
        r->vector_bytes = n * sizeof(float);
        return put_section(w, v, r->vector_bytes, &r->vector_offset, err);
    }
    if (!w->cctx && make_cctx(w, err) != 0)
        return -1;
    size_t framed = ZSTD_compress2(w->cctx, frame, bound, high, n);
    if (ZSTD_isError(framed))
        return qk_fail(err, "cannot write %s: zstd: %s", w->out.final_path,
                       ZSTD_getErrorName(framed));
    r->encoding = QK_STORE_BF16;
    r->vector_bytes = n + framed;
    if (put_section(w, low, n, &r->vector_offset, err) != 0)
        return -1;
    return put(w, frame, framed, err);
}

int qk_store_writer_open(qk_store_writer *w, const char *path,
                         const qk_store_header *meta, qk_err *err)
{
    memset(w, 0, sizeof *w);
    if (qk_atomic_open(&w->out, path, err) != 0)
        return -1;
    w->header = *meta;
    memcpy(w->header.magic, QK_STORE_MAGIC, 8);
    w->header.version = QK_STORE_VERSION;
    w->header.header_size = QK_STORE_HEADER_SIZE;
    if (!(w->hash = XXH3_createState()) || XXH3_64bits_reset(w->hash) != XXH_OK) {
        qk_fail(err, "cannot write %s: cannot create a hash state", path);
        qk_store_writer_abort(w);
        return -1;
    }
    /* placeholder header, rewritten by finish once the tables are known */
    if (fwrite(&w->header, 1, sizeof w->header, w->out.fp) != sizeof w->header) {
        qk_fail(err, "cannot write %s: %s", path, strerror(errno));
        qk_store_writer_abort(w);
        return -1;
    }
    w->offset = QK_STORE_HEADER_SIZE;
    return 0;
}

int qk_store_writer_add(qk_store_writer *w, int layer, int head, char kind,
                        int64_t rows, const int32_t *position,
                        const int32_t *example_id, const int32_t *bucket,
                        const float *vector, uint64_t source_bytes, qk_err *err)
{
    qk_store_record r;
    memset(&r, 0, sizeof r);
    r.layer = (uint16_t)layer;
    r.head = (uint16_t)head;
    r.kind = (uint8_t)kind;
    r.rows = (uint64_t)rows;
    r.source_bytes = source_bytes;
    size_t n = (size_t)rows;
    /* at most: three int32 sections, float32 vectors, the alignment gaps */
    uint64_t most = (uint64_t)n * (3 * sizeof(int32_t) + w->header.dim * sizeof(float)) +
                    4 * QK_STORE_ALIGN;
    if (qk_atomic_reserve(&w->out, most, err) != 0 ||
        put_int_section(w, position, n, &r.position_offset, err) != 0 ||
        put_int_section(w, example_id, n, &r.example_id_offset, err) != 0 ||
        put_int_section(w, bucket, n, &r.bucket_offset, err) != 0 ||
        put_vectors(w, vector, n * w->header.dim, &r, err) != 0)
        return -1;
    w->records = qk_realloc(w->records, (size_t)(w->n_records + 1) * sizeof r);
    w->records[w->n_records++] = r;
    return 0;
}

/* The writer's memory, whether it finished or not. */
static void free_writer(qk_store_writer *w)
{
    free(w->records);
    w->records = NULL;
    for (int i = 0; i < w->n_sections; i++)
        free(w->sections[i].copy);
    free(w->sections);
    w->sections = NULL;
    w->n_sections = 0;
    free(w->planes);
    w->planes = NULL;
    w->planes_cap = 0;
    ZSTD_freeCCtx(w->cctx);
    w->cctx = NULL;
    XXH3_freeState(w->hash);
    w->hash = NULL;
}

/* Adds the header to a hash of the bytes after it: every header byte but
 * those of the checksum field, in file order. */
static void hash_header(XXH3_state_t *hash, const qk_store_header *h)
{
    const char *bytes = (const char *)h;
    size_t at = offsetof(qk_store_header, checksum), after = at + sizeof h->checksum;
    XXH3_64bits_update(hash, bytes, at);
    XXH3_64bits_update(hash, bytes + after, sizeof *h - after);
}

int qk_store_writer_finish(qk_store_writer *w, const qk_store_pair *pairs,
                           int n_pairs, qk_err *err)
{
    if (qk_store_writer_seal(w, pairs, n_pairs, err) != 0)
        return -1;
    return qk_atomic_commit(&w->out, err);
}

int qk_store_writer_seal(qk_store_writer *w, const qk_store_pair *pairs, int n_pairs,
                         qk_err *err)
{
    w->header.n_configs = (uint32_t)w->n_records;
    w->header.n_pairs = (uint32_t)n_pairs;
    if (put_section(w, w->records, (size_t)w->n_records * sizeof *w->records,
                    &w->header.table_offset, err) != 0 ||
        put(w, pairs, (size_t)n_pairs * sizeof *pairs, err) != 0 ||
        pad_to_alignment(w, err) != 0)
        goto fail;
    w->header.file_size = w->offset;
    hash_header(w->hash, &w->header);
    w->header.checksum = XXH3_64bits_digest(w->hash);
    if (fseek(w->out.fp, 0, SEEK_SET) != 0 ||
        fwrite(&w->header, 1, sizeof w->header, w->out.fp) != sizeof w->header) {
        qk_fail(err, "cannot write %s: %s", w->out.final_path, strerror(errno));
        goto fail;
    }
    free_writer(w);
    return qk_atomic_sync(&w->out, err);
fail:
    qk_store_writer_abort(w);
    return -1;
}

void qk_store_writer_abort(qk_store_writer *w)
{
    qk_atomic_abort(&w->out);
    free_writer(w);
}

static int section_ok(const qk_store *s, uint64_t off, uint64_t bytes)
{
    return off % QK_STORE_ALIGN == 0 && off >= QK_STORE_HEADER_SIZE &&
           off <= s->map_size && bytes <= s->map_size - off;
}

/* The vector section of a record: in the file, of the length its
 * encoding implies; a bf16 frame must announce the plane's size. */
static int vectors_ok(const qk_store *s, const qk_store_record *r)
{
    uint64_t values = r->rows * s->header.dim;
    if (!section_ok(s, r->vector_offset, r->vector_bytes))
        return 0;
    if (r->encoding == QK_STORE_F32)
        return r->vector_bytes == values * sizeof(float);
    if (r->encoding != QK_STORE_BF16 || r->vector_bytes <= values)
        return 0;
    const uint8_t *frame = (const uint8_t *)s->map + r->vector_offset + values;
    return ZSTD_getFrameContentSize(frame, r->vector_bytes - values) == values;
}

/* The header's own fields: the format, the file's size and a model shape
 * the stages can work with. */
static int check_header(const qk_store *s, qk_err *err)
{
    const qk_store_header *h = &s->header;
    if (memcmp(h->magic, QK_STORE_MAGIC, 8) != 0)
        return qk_fail(err, "not a qkreport store (bad magic)");
    if (h->version != QK_STORE_VERSION)
        return qk_fail(err, "store version %u, this program reads version %u (rebuild the "
                       "store: make load, or run qk-load again)", h->version, QK_STORE_VERSION);
    if (h->header_size != QK_STORE_HEADER_SIZE)
        return qk_fail(err, "corrupt store header (header_size %u, expected %u)",
                       h->header_size, QK_STORE_HEADER_SIZE);
    if (h->file_size != s->map_size)
        return qk_fail(err, "store is %zu bytes, header says %llu (truncated?)",
                       s->map_size, (unsigned long long)h->file_size);
    if (h->dim == 0 || h->dim > QK_STORE_MAX_DIM)
        return qk_fail(err, "corrupt store header (dim %u, expected 1 to %u)", h->dim,
                       QK_STORE_MAX_DIM);
    if (h->n_layers == 0 || h->n_q_heads == 0 || h->n_kv_heads == 0 ||
        h->n_q_heads % h->n_kv_heads != 0)
        return qk_fail(err, "corrupt store header (n_layers %u, n_q_heads %u, n_kv_heads %u: "
                       "expected positive numbers, n_q_heads a multiple of n_kv_heads)",
                       h->n_layers, h->n_q_heads, h->n_kv_heads);
    if (h->context_length == 0 || h->context_length > INT32_MAX || h->bucket_size == 0 ||
        h->bucket_size > INT32_MAX)
        return qk_fail(err, "corrupt store header (context_length %u, bucket_size %u)",
                       h->context_length, h->bucket_size);
    if (!memchr(h->dataset_id, '\0', sizeof h->dataset_id))
        return qk_fail(err, "corrupt store header (dataset_id not terminated)");
    return 0;
}

/* The tables end the file: after the pair table only the zero bytes that
 * pad the file to the alignment. So n_configs, n_pairs and table_offset
 * agree with the file's size. */
static int check_tables_end_file(const qk_store *s, qk_err *err)
{
    const qk_store_header *h = &s->header;
    uint64_t table_bytes = (uint64_t)h->n_configs * sizeof(qk_store_record) +
                           (uint64_t)h->n_pairs * sizeof(qk_store_pair);
    if (h->n_configs > INT32_MAX || h->n_pairs > INT32_MAX ||
        !section_ok(s, h->table_offset, table_bytes))
        return qk_fail(err, "corrupt store header (n_configs %u, n_pairs %u, table_offset "
                       "%llu: the tables are not an aligned section of the file)",
                       h->n_configs, h->n_pairs, (unsigned long long)h->table_offset);
    uint64_t end = h->table_offset + table_bytes;
    const uint8_t *tail = (const uint8_t *)s->map + end;
    uint64_t tail_bytes = s->map_size - end;
    int padding = tail_bytes < QK_STORE_ALIGN && s->map_size % QK_STORE_ALIGN == 0;
    for (uint64_t i = 0; padding && i < tail_bytes; i++)
        padding = tail[i] == 0;
    if (!padding)
        return qk_fail(err, "corrupt store header (n_configs %u, n_pairs %u, table_offset "
                       "%llu: the tables end %llu bytes before the end of the file)",
                       h->n_configs, h->n_pairs, (unsigned long long)h->table_offset,
                       (unsigned long long)tail_bytes);
    return 0;
}

/* A record's sections lie in the file, and its layer and head in the
 * model the header describes. */
static int record_ok(const qk_store *s, const qk_store_record *r)
{
    const qk_store_header *h = &s->header;
    uint64_t rows = r->rows;
    uint32_t heads = r->kind == 'q' ? h->n_q_heads : h->n_kv_heads;
    return rows <= ((uint64_t)1 << 40) && (r->kind == 'q' || r->kind == 'k') &&
           r->layer < h->n_layers && r->head < heads &&
           section_ok(s, r->position_offset, rows * 4) &&
           section_ok(s, r->example_id_offset, rows * 4) &&
           section_ok(s, r->bucket_offset, rows * 4) && vectors_ok(s, r);
}

/* A pair joins a query config to the key config of its layer that serves
 * it: k_head = q_head / (n_q_heads / n_kv_heads). */
static int pair_ok(const qk_store *s, const qk_store_record *rec, const qk_store_pair *p)
{
    const qk_store_header *h = &s->header;
    if (p->q >= h->n_configs || p->k >= h->n_configs)
        return 0;
    const qk_store_record *q = &rec[p->q], *k = &rec[p->k];
    return q->kind == 'q' && k->kind == 'k' && q->layer == k->layer &&
           k->head == q->head / (h->n_q_heads / h->n_kv_heads);
}

/* Checks the header against the file and the records against the header. */
static int check_layout(qk_store *s, qk_err *err)
{
    const qk_store_header *h = &s->header;
    if (check_header(s, err) != 0 || check_tables_end_file(s, err) != 0)
        return -1;
    const qk_store_record *rec = (const void *)((const char *)s->map + h->table_offset);
    for (uint32_t i = 0; i < h->n_configs; i++)
        if (!record_ok(s, &rec[i]))
            return qk_fail(err, "corrupt store record %u", i);
    const qk_store_pair *pairs = (const void *)(rec + h->n_configs);
    for (uint32_t i = 0; i < h->n_pairs; i++)
        if (!pair_ok(s, rec, &pairs[i]))
            return qk_fail(err, "corrupt store pair %u", i);
    return 0;
}

/* XXH3-64 of the bytes after the header, then of the header without its
 * checksum field (the order the writer hashes them in). */
static int store_checksum(const qk_store *s, uint64_t *sum, qk_err *err)
{
    XXH3_state_t *hash = XXH3_createState();
    if (!hash || XXH3_64bits_reset(hash) != XXH_OK) {
        XXH3_freeState(hash);
        return qk_fail(err, "cannot create a hash state");
    }
    XXH3_64bits_update(hash, (const char *)s->map + QK_STORE_HEADER_SIZE,
                       s->map_size - QK_STORE_HEADER_SIZE);
    hash_header(hash, &s->header);
    *sum = XXH3_64bits_digest(hash);
    XXH3_freeState(hash);
    return 0;
}

/* The first row of n whose position is outside [0, context) or whose bucket
 * is not position / bucket_size; n when all fit. Without a division, so the
 * loop vectorises: bucket = p / B exactly when bucket * B <= p < bucket * B + B. */
static int64_t first_misfit(const int32_t *position, const int32_t *bucket, int64_t n,
                            int64_t context, int64_t bucket_size)
{
    for (int64_t i0 = 0; i0 < n; i0 += BLOCK) {
        int64_t len = n - i0 < BLOCK ? n - i0 : BLOCK;
        int misfits = 0;
        for (int64_t i = i0; i < i0 + len; i++) {
            int64_t p = position[i], low = (int64_t)bucket[i] * bucket_size;
            misfits += (p < 0) | (p >= context) | (p < low) | (p >= low + bucket_size);
        }
        if (misfits)
            for (int64_t i = i0; i < i0 + len; i++)
                if (position[i] < 0 || position[i] >= context ||
                    bucket[i] != position[i] / bucket_size)
                    return i;
    }
    return n;
}

/* Every row's position lies in the context and its bucket is the
 * position's: what qk-load checked before writing the store. Sections
 * shared by the configs of a layer are read once. */
static int check_rows(const qk_store *s, qk_err *err)
{
    const int64_t context = s->header.context_length, bucket_size = s->header.bucket_size;
    const int32_t *checked_position[2] = {NULL, NULL}, *checked_bucket[2] = {NULL, NULL};
    int64_t checked_rows[2] = {-1, -1};
    for (int c = 0; c < s->n_configs; c++) {
        const qk_store_config *cfg = &s->configs[c];
        int kind = cfg->kind == 'q';
        if (cfg->position == checked_position[kind] && cfg->bucket == checked_bucket[kind] &&
            cfg->rows == checked_rows[kind])
            continue;
        int64_t i = first_misfit(cfg->position, cfg->bucket, cfg->rows, context, bucket_size);
        if (i < cfg->rows)
            return qk_fail(err, "store config l%02dh%02d%c, row %lld: position %d, bucket "
                           "%d do not fit context_length %lld, bucket_size %lld", cfg->layer,
                           cfg->head, cfg->kind, (long long)i, cfg->position[i], cfg->bucket[i],
                           (long long)context, (long long)bucket_size);
        checked_position[kind] = cfg->position;
        checked_bucket[kind] = cfg->bucket;
        checked_rows[kind] = cfg->rows;
    }
    return 0;
}

static void fill_configs(qk_store *s)
{
    const char *base = s->map;
    const qk_store_record *rec = (const void *)(base + s->header.table_offset);
    s->dim = (int)s->header.dim;
    s->n_configs = (int)s->header.n_configs;
    s->configs = qk_calloc((size_t)s->n_configs, sizeof *s->configs);
    for (int i = 0; i < s->n_configs; i++) {
        qk_store_config *c = &s->configs[i];
        c->layer = rec[i].layer;
        c->head = rec[i].head;
        c->kind = (char)rec[i].kind;
        c->rows = (int64_t)rec[i].rows;
        c->source_bytes = rec[i].source_bytes;
        c->position = (const int32_t *)(base + rec[i].position_offset);
        c->example_id = (const int32_t *)(base + rec[i].example_id_offset);
        c->bucket = (const int32_t *)(base + rec[i].bucket_offset);
        c->encoding = rec[i].encoding;
        c->vector_data = (const uint8_t *)(base + rec[i].vector_offset);
        c->vector_bytes = rec[i].vector_bytes;
    }
    s->n_pairs = (int)s->header.n_pairs;
    s->pairs = (const qk_store_pair *)(rec + s->n_configs);
}

/* Checks the store at s->map (s->map_size bytes) and fills the configs;
 * closes s on failure. */
static int attach(qk_store *s, int verify_checksum, qk_err *err)
{
    if (s->map_size < QK_STORE_HEADER_SIZE) {
        qk_store_close(s);
        return qk_fail(err, "not a qkreport store (too short)");
    }
    memcpy(&s->header, s->map, sizeof s->header);
    int rc = check_layout(s, err);
    uint64_t sum = 0;
    if (rc == 0 && verify_checksum && (rc = store_checksum(s, &sum, err)) == 0 &&
        sum != s->header.checksum)
        rc = qk_fail(err, "store checksum mismatch (file corrupted)");
    if (rc == 0)
        fill_configs(s);
    if (rc == 0 && verify_checksum)
        rc = check_rows(s, err);
    if (rc != 0) {
        qk_store_close(s);
        return -1;
    }
    return 0;
}

int qk_store_open(const char *path, qk_store *s, int verify_checksum, qk_err *err)
{
    memset(s, 0, sizeof *s);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return qk_fail(err, "cannot open store: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)QK_STORE_HEADER_SIZE) {
        close(fd);
        return qk_fail(err, "not a qkreport store (too short)");
    }
    s->map_size = (size_t)st.st_size;
    s->map = mmap(NULL, s->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (s->map == MAP_FAILED) {
        s->map = NULL;
        return qk_fail(err, "cannot map store: %s", strerror(errno));
    }
    s->mapped = 1;
    return attach(s, verify_checksum, err);
}

int qk_store_open_memory(const void *data, size_t size, qk_store *s, int verify_checksum,
                         qk_err *err)
{
    memset(s, 0, sizeof *s);
    if ((uintptr_t)data % 8 != 0)
        return qk_fail(err, "store bytes are not 8-byte aligned");
    s->map = (void *)(uintptr_t)data;
    s->map_size = size;
    return attach(s, verify_checksum, err);
}

void qk_store_close(qk_store *s)
{
    if (s->map && s->mapped)
        munmap(s->map, s->map_size);
    free(s->configs);
    memset(s, 0, sizeof *s);
}

/* ---- vectors ------------------------------------------------------------------------ */

static void join_planes(const uint8_t *restrict high, const uint8_t *restrict low, size_t n,
                        float *restrict out)
{
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK)
        for (size_t j = 0; j < BLOCK; j++) {
            uint32_t u = (uint32_t)high[i + j] << 24 | (uint32_t)low[i + j] << 16;
            memcpy(&out[i + j], &u, sizeof u);
        }
    for (; i < n; i++) {
        uint32_t u = (uint32_t)high[i] << 24 | (uint32_t)low[i] << 16;
        memcpy(&out[i], &u, sizeof u);
    }
}

static void reserve(qk_store_buf *buf, size_t n)
{
    if (buf->cap >= n && buf->vector)
        return;
    free(buf->vector);
    free(buf->plane);
    buf->cap = n;
    buf->vector = qk_malloc((n ? n : 1) * sizeof(float));
    buf->plane = qk_malloc(n ? n : 1);
}

const float *qk_store_vectors(const qk_store *s, int c, qk_store_buf *buf, qk_err *err)
{
    const qk_store_config *cfg = &s->configs[c];
    if (cfg->encoding == QK_STORE_F32)
        return (const float *)cfg->vector_data;
    if (buf->map == s->map && buf->config == c)
        return buf->vector;
    size_t n = (size_t)cfg->rows * (size_t)s->dim;
    reserve(buf, n);
    buf->map = NULL; /* holds nothing until the decoding succeeds */
    if (!buf->dctx && !(buf->dctx = ZSTD_createDCtx())) {
        qk_fail(err, "cannot create a zstd context");
        return NULL;
    }
    size_t got = ZSTD_decompressDCtx(buf->dctx, buf->plane, n, cfg->vector_data + n,
                                     cfg->vector_bytes - n);
    if (ZSTD_isError(got) || got != n) {
        qk_fail(err, "store config l%02dh%02d%c: corrupt vector data (%s)", cfg->layer,
                cfg->head, cfg->kind, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
        return NULL;
    }
    join_planes(buf->plane, cfg->vector_data, n, buf->vector);
    buf->map = s->map;
    buf->config = c;
    return buf->vector;
}

void qk_store_buf_free(qk_store_buf *buf)
{
    free(buf->vector);
    free(buf->plane);
    ZSTD_freeDCtx(buf->dctx);
    memset(buf, 0, sizeof *buf);
}
