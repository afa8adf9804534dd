/* Writing and mapping the per-dataset binary store (include/qk/store.h). */
#include "qk/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(qk_store_header) == QK_STORE_HEADER_SIZE, "header layout");
_Static_assert(sizeof(qk_store_record) == 64, "record layout");
_Static_assert(sizeof(qk_store_pair) == 8, "pair layout");
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the store format is little-endian; this host is not"
#endif

static const uint8_t zeros[QK_STORE_ALIGN];

/* Appends bytes to the output, hashing them. */
static int put(qk_store_writer *w, const void *data, size_t n, qk_err *err)
{
    if (n && fwrite(data, 1, n, w->out.fp) != n)
        return qk_fail(err, "cannot write %s: %s", w->out.final_path, strerror(errno));
    qk_hash_update(&w->hash, data, n);
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
    qk_hash_init(&w->hash, 0);
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
    if (put_section(w, position, n * 4, &r.position_offset, err) != 0 ||
        put_section(w, example_id, n * 4, &r.example_id_offset, err) != 0 ||
        put_section(w, bucket, n * 4, &r.bucket_offset, err) != 0 ||
        put_section(w, vector, n * w->header.dim * sizeof(float), &r.vector_offset, err) != 0)
        return -1;
    w->records = qk_realloc(w->records, (size_t)(w->n_records + 1) * sizeof r);
    w->records[w->n_records++] = r;
    return 0;
}

int qk_store_writer_finish(qk_store_writer *w, const qk_store_pair *pairs,
                           int n_pairs, qk_err *err)
{
    w->header.n_configs = (uint32_t)w->n_records;
    w->header.n_pairs = (uint32_t)n_pairs;
    if (put_section(w, w->records, (size_t)w->n_records * sizeof *w->records,
                    &w->header.table_offset, err) != 0 ||
        put(w, pairs, (size_t)n_pairs * sizeof *pairs, err) != 0 ||
        pad_to_alignment(w, err) != 0)
        goto fail;
    w->header.file_size = w->offset;
    w->header.checksum = qk_hash_final(&w->hash);
    if (fseek(w->out.fp, 0, SEEK_SET) != 0 ||
        fwrite(&w->header, 1, sizeof w->header, w->out.fp) != sizeof w->header) {
        qk_fail(err, "cannot write %s: %s", w->out.final_path, strerror(errno));
        goto fail;
    }
    free(w->records);
    w->records = NULL;
    return qk_atomic_commit(&w->out, err);
fail:
    qk_store_writer_abort(w);
    return -1;
}

void qk_store_writer_abort(qk_store_writer *w)
{
    qk_atomic_abort(&w->out);
    free(w->records);
    w->records = NULL;
}

static int section_ok(const qk_store *s, uint64_t off, uint64_t bytes)
{
    return off % QK_STORE_ALIGN == 0 && off >= QK_STORE_HEADER_SIZE &&
           off <= s->map_size && bytes <= s->map_size - off;
}

/* Checks the header against the file and the records against the header. */
static int check_layout(qk_store *s, qk_err *err)
{
    const qk_store_header *h = &s->header;
    if (memcmp(h->magic, QK_STORE_MAGIC, 8) != 0)
        return qk_fail(err, "not a qkreport store (bad magic)");
    if (h->version != QK_STORE_VERSION)
        return qk_fail(err, "store version %u, this program reads version %u",
                       h->version, QK_STORE_VERSION);
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
            !section_ok(s, rec[i].bucket_offset, rows * 4) ||
            !section_ok(s, rec[i].vector_offset, rows * h->dim * 4))
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
        c->vector = (const float *)(base + rec[i].vector_offset);
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
        qk_hash64((const char *)s->map + QK_STORE_HEADER_SIZE,
                  s->map_size - QK_STORE_HEADER_SIZE, 0) != s->header.checksum)
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
