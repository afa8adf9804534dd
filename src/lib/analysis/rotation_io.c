/* The axes file qk-rotate writes and qk-complement reads
 * (build/<ds>/rotation_axes.bin; format in include/qk/rotation.h and
 * docs/rotation.md): per head the axes a, b and the pooled moments, in
 * binary so that they read back to the same doubles. */
#include "qk/rotation.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define ID_BYTES 16     /* layer, head, kv_head, 0 */
#define SCALAR_COUNT 3  /* rows (as i64), pos_mean, pos_var */

static size_t record_doubles(int dim)
{
    size_t d = (size_t)dim;
    return SCALAR_COUNT + 4 * d + d * (d + 1) / 2;
}

static size_t record_bytes(int dim)
{
    return ID_BYTES + record_doubles(dim) * sizeof(double);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void header_bytes(uint8_t h[QK_ROT_AXES_HEADER], int dim, uint32_t n_heads,
                         uint64_t checksum)
{
    memset(h, 0, QK_ROT_AXES_HEADER);
    memcpy(h, QK_ROT_AXES_MAGIC, sizeof QK_ROT_AXES_MAGIC);
    put_u32(h + 8, QK_ROT_AXES_VERSION);
    put_u32(h + 12, (uint32_t)dim);
    put_u32(h + 16, n_heads);
    put_u64(h + 24, checksum);
}

static int write_bytes(qk_rot_axes_writer *w, const void *p, size_t n, qk_err *err)
{
    if (fwrite(p, 1, n, w->fp) != n)
        return qk_fail(err, "write failed: %s", strerror(errno));
    XXH3_64bits_update(w->hash, p, n);
    return 0;
}

int qk_rot_axes_begin(qk_rot_axes_writer *w, FILE *fp, int dim, qk_err *err)
{
    memset(w, 0, sizeof *w);
    w->fp = fp;
    w->dim = dim;
    if (!(w->hash = XXH3_createState()) || XXH3_64bits_reset(w->hash) != XXH_OK)
        return qk_fail(err, "cannot create a hash state");
    w->buffer = qk_doubles(record_doubles(dim));
    uint8_t h[QK_ROT_AXES_HEADER];
    header_bytes(h, dim, 0, 0);
    if (fwrite(h, 1, sizeof h, fp) != sizeof h) {
        XXH3_freeState(w->hash);
        w->hash = NULL;
        free(w->buffer);
        w->buffer = NULL;
        return qk_fail(err, "write failed: %s", strerror(errno));
    }
    return 0;
}

/* The doubles of a record are written as the machine holds them: the
 * format is little-endian, like the store, and so is every supported
 * machine. */
int qk_rot_axes_add(qk_rot_axes_writer *w, int layer, int head, int kv_head, const double *a,
                    const double *b, const qk_moments *pooled, qk_err *err)
{
    size_t d = (size_t)w->dim;
    uint8_t id[ID_BYTES];
    put_u32(id, (uint32_t)layer);
    put_u32(id + 4, (uint32_t)head);
    put_u32(id + 8, (uint32_t)kv_head);
    put_u32(id + 12, 0);
    double *r = w->buffer;
    int64_t rows = pooled->n;
    memcpy(&r[0], &rows, sizeof rows);
    r[1] = pooled->pos_mean;
    r[2] = pooled->pos_var;
    double *v = r + SCALAR_COUNT;
    memcpy(v, a, d * sizeof(double));
    memcpy(v + d, b, d * sizeof(double));
    memcpy(v + 2 * d, pooled->mean, d * sizeof(double));
    memcpy(v + 3 * d, pooled->cov_pos, d * sizeof(double));
    double *tri = v + 4 * d;
    for (size_t i = 0; i < d; i++)
        for (size_t j = i; j < d; j++)
            *tri++ = pooled->cov[i * d + j];
    if (write_bytes(w, id, sizeof id, err) != 0 ||
        write_bytes(w, r, record_doubles(w->dim) * sizeof(double), err) != 0)
        return -1;
    w->n_heads++;
    return 0;
}

int qk_rot_axes_finish(qk_rot_axes_writer *w, qk_err *err)
{
    uint8_t h[QK_ROT_AXES_HEADER];
    header_bytes(h, w->dim, w->n_heads, XXH3_64bits_digest(w->hash));
    XXH3_freeState(w->hash);
    w->hash = NULL;
    free(w->buffer);
    w->buffer = NULL;
    if (fseek(w->fp, 0, SEEK_SET) != 0 || fwrite(h, 1, sizeof h, w->fp) != sizeof h ||
        fseek(w->fp, 0, SEEK_END) != 0)
        return qk_fail(err, "write failed: %s", strerror(errno));
    return 0;
}

/* ---- reading ------------------------------------------------------------------ */

static int check_header(const uint8_t *data, size_t len, int *dim, int *n_heads, qk_err *err)
{
    if (len < QK_ROT_AXES_HEADER || memcmp(data, QK_ROT_AXES_MAGIC, sizeof QK_ROT_AXES_MAGIC))
        return qk_fail(err, "not an axes file written by qk-rotate (bad magic)");
    if (get_u32(data + 8) != QK_ROT_AXES_VERSION)
        return qk_fail(err, "axes file version %u, expected %u", get_u32(data + 8),
                       QK_ROT_AXES_VERSION);
    uint32_t d = get_u32(data + 12), n = get_u32(data + 16);
    if (d < 2 || d > 65536 || n > 1000000)
        return qk_fail(err, "implausible axes header (dim %u, %u heads)", d, n);
    size_t want = QK_ROT_AXES_HEADER + (size_t)n * record_bytes((int)d);
    if (len != want)
        return qk_fail(err, "%s: %zu bytes, the header announces %zu",
                       len < want ? "truncated" : "trailing bytes", len, want);
    if (XXH3_64bits(data + QK_ROT_AXES_HEADER, len - QK_ROT_AXES_HEADER) != get_u64(data + 24))
        return qk_fail(err, "checksum mismatch (the file is corrupt)");
    *dim = (int)d;
    *n_heads = (int)n;
    return 0;
}

static void read_record(const uint8_t *p, qk_rot_axes_file *f, int h)
{
    size_t d = (size_t)f->dim;
    f->layer[h] = (int)get_u32(p);
    f->head[h] = (int)get_u32(p + 4);
    f->kv_head[h] = (int)get_u32(p + 8);
    const uint8_t *v = p + ID_BYTES;
    qk_moments *m = &f->pooled[h];
    qk_moments_init(m, f->dim);
    memcpy(&m->n, v, sizeof m->n);
    memcpy(&m->pos_mean, v + 8, sizeof(double));
    memcpy(&m->pos_var, v + 16, sizeof(double));
    v += SCALAR_COUNT * sizeof(double);
    memcpy(f->a + h * d, v, d * sizeof(double));
    memcpy(f->b + h * d, v + d * 8, d * sizeof(double));
    memcpy(m->mean, v + 2 * d * 8, d * sizeof(double));
    memcpy(m->cov_pos, v + 3 * d * 8, d * sizeof(double));
    const uint8_t *tri = v + 4 * d * 8;
    for (size_t i = 0; i < d; i++)
        for (size_t j = i; j < d; j++, tri += 8) {
            memcpy(&m->cov[i * d + j], tri, sizeof(double));
            m->cov[j * d + i] = m->cov[i * d + j];
        }
}

int qk_rot_axes_load(const char *path, qk_rot_axes_file *f, qk_err *err)
{
    memset(f, 0, sizeof *f);
    uint8_t *data;
    size_t len;
    if (qk_read_file(path, &data, &len, err) != 0)
        return -1;
    int dim = 0, n = 0;
    if (check_header(data, len, &dim, &n, err) != 0) {
        free(data);
        return -1;
    }
    f->dim = dim;
    f->n_heads = n;
    size_t slots = (size_t)(n ? n : 1);
    f->layer = qk_malloc(slots * sizeof(int));
    f->head = qk_malloc(slots * sizeof(int));
    f->kv_head = qk_malloc(slots * sizeof(int));
    f->a = qk_doubles(slots * (size_t)dim);
    f->b = qk_doubles(slots * (size_t)dim);
    f->pooled = qk_calloc(slots, sizeof(qk_moments));
    for (int h = 0; h < n; h++)
        read_record(data + QK_ROT_AXES_HEADER + (size_t)h * record_bytes(dim), f, h);
    free(data);
    return 0;
}

void qk_rot_axes_free(qk_rot_axes_file *f)
{
    for (int h = 0; f->pooled && h < f->n_heads; h++)
        qk_moments_free(&f->pooled[h]);
    free(f->pooled);
    free(f->layer);
    free(f->head);
    free(f->kv_head);
    free(f->a);
    free(f->b);
    memset(f, 0, sizeof *f);
}

int qk_rot_axes_find(const qk_rot_axes_file *f, int layer, int head)
{
    for (int h = 0; h < f->n_heads; h++)
        if (f->layer[h] == layer && f->head[h] == head)
            return h;
    return -1;
}
