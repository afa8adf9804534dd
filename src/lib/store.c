/* Writing and mapping the per-dataset binary store (include/qk/store.h). */
#include "qk/store.h"

#include <errno.h>
#include <fcntl.h>
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

/* Checks the header against the file and the records against the header. */
static int check_layout(qk_store *s, qk_err *err)
{
    const qk_store_header *h = &s->header;
    if (memcmp(h->magic, QK_STORE_MAGIC, 8) != 0)
        return qk_fail(err, "not a qkreport store (bad magic)");
    if (h->version != QK_STORE_VERSION)
        return qk_fail(err, "store version %u, this program reads version %u (run qk-load "
                       "again)", h->version, QK_STORE_VERSION);
    if (h->file_size != s->map_size)
        return qk_fail(err, "store is %zu bytes, header says %llu (truncated?)",
                       s->map_size, (unsigned long long)h->file_size);
    if (h->dim == 0 || h->dim > QK_STORE_MAX_DIM)
        return qk_fail(err, "corrupt store header (dim %u, expected 1 to %u)", h->dim,
                       QK_STORE_MAX_DIM);
    uint64_t table_bytes = (uint64_t)h->n_configs * sizeof(qk_store_record) +
                           (uint64_t)h->n_pairs * sizeof(qk_store_pair);
    if (h->n_configs > INT32_MAX || h->n_pairs > INT32_MAX ||
        !section_ok(s, h->table_offset, table_bytes))
        return qk_fail(err, "corrupt store header");
    const qk_store_record *rec = (const void *)((const char *)s->map + h->table_offset);
    for (uint32_t i = 0; i < h->n_configs; i++) {
        uint64_t rows = rec[i].rows;
        if (rows > ((uint64_t)1 << 40) || (rec[i].kind != 'q' && rec[i].kind != 'k') ||
            !section_ok(s, rec[i].position_offset, rows * 4) ||
            !section_ok(s, rec[i].example_id_offset, rows * 4) ||
            !section_ok(s, rec[i].bucket_offset, rows * 4) || !vectors_ok(s, &rec[i]))
            return qk_fail(err, "corrupt store record %u", i);
    }
    const qk_store_pair *pairs = (const void *)(rec + h->n_configs);
    for (uint32_t i = 0; i < h->n_pairs; i++)
        if (pairs[i].q >= h->n_configs || pairs[i].k >= h->n_configs)
            return qk_fail(err, "corrupt store pair %u", i);
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
    if (rc == 0 && verify_checksum &&
        XXH3_64bits((const char *)s->map + QK_STORE_HEADER_SIZE,
                    s->map_size - QK_STORE_HEADER_SIZE) != s->header.checksum)
        rc = qk_fail(err, "store checksum mismatch (file corrupted)");
    if (rc != 0) {
        qk_store_close(s);
        return -1;
    }
    fill_configs(s);
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
