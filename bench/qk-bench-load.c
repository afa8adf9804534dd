/* qk-bench-load: decoding throughput of the Parquet reader against its
 * floor, the time plain ZSTD_decompress takes on the same compressed pages.
 * Files are read into memory first, so disk speed is not measured. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "../src/lib/io/parquet_internal.h"
#include "qk/cli.h"
#include "qk/common.h"
#include "qk/parquet.h"
#include "qk/revision.h"

/* A reusable output buffer for decompressed pages. */
typedef struct page_buffer {
    uint8_t *data;
    size_t cap;
} page_buffer;

typedef struct file_buf {
    const char *path;
    uint8_t *data;
    size_t len;
} file_buf;

/* Decompresses every ZSTD page of one chunk; returns the decompressed bytes. */
static size_t zstd_chunk(const uint8_t *file, uint64_t start, uint64_t size,
                         ZSTD_DCtx *dctx, page_buffer *out, const char *path)
{
    size_t total = 0;
    uint64_t off = start;
    while (off < start + size) {
        pq_page_header h;
        size_t hlen;
        qk_err err;
        if (pq_read_page_header(file + off, start + size - off, &h, &hlen, &err) != 0)
            qk_die(QK_EXIT_DATA, path, "%s", err.msg);
        const uint8_t *payload = file + off + hlen;
        size_t levels = h.type == PQ_DATA_PAGE_V2 ? (size_t)(h.def_length + h.rep_length) : 0;
        size_t dst_len = (size_t)h.uncompressed_size - levels;
        if (out->cap < dst_len + 8) {
            out->cap = dst_len + 8;
            out->data = qk_realloc(out->data, out->cap);
        }
        if (dst_len > 0) {
            size_t got = ZSTD_decompressDCtx(dctx, out->data, dst_len, payload + levels,
                                             (size_t)h.compressed_size - levels);
            if (ZSTD_isError(got) || got != dst_len)
                qk_die(QK_EXIT_DATA, path, "not a ZSTD page");
        }
        total += dst_len;
        off += hlen + (uint64_t)h.compressed_size;
    }
    return total;
}

/* The floor: ZSTD_decompress of every page of every column of the file. */
static size_t zstd_file(const file_buf *f, ZSTD_DCtx *dctx, page_buffer *out)
{
    pq_file_meta meta;
    size_t data_end, total = 0;
    qk_err err;
    if (pq_read_footer(f->data, f->len, &meta, &data_end, &err) != 0)
        qk_die(QK_EXIT_DATA, f->path, "%s", err.msg);
    for (uint32_t g = 0; g < meta.nrow_groups; g++)
        for (uint32_t c = 0; c < meta.row_groups[g].nchunks; c++) {
            const pq_column_meta *m = &meta.row_groups[g].chunks[c].meta;
            if (m->codec != PQ_ZSTD)
                qk_die(QK_EXIT_DATA, f->path, "the benchmark needs ZSTD pages");
            uint64_t start, size;
            if (pq_chunk_range(m, data_end, &start, &size, &err) != 0)
                qk_die(QK_EXIT_DATA, f->path, "%s", err.msg);
            total += zstd_chunk(f->data, start, size, dctx, out, f->path);
        }
    pq_file_meta_free(&meta);
    return total;
}

static double time_floor(const file_buf *files, int n, size_t *bytes)
{
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    page_buffer out = {NULL, 0};
    double t0 = qk_now();
    *bytes = 0;
    for (int i = 0; i < n; i++)
        *bytes += zstd_file(&files[i], dctx, &out);
    double t = qk_now() - t0;
    free(out.data);
    ZSTD_freeDCtx(dctx);
    return t;
}

static double time_decode(const file_buf *files, int n, size_t *vectors)
{
    double t0 = qk_now();
    *vectors = 0;
    for (int i = 0; i < n; i++) {
        qk_pq_table t;
        qk_err err;
        if (qk_parquet_decode(files[i].data, files[i].len, &t, &err) != 0)
            qk_die(QK_EXIT_DATA, files[i].path, "%s", err.msg);
        *vectors += (size_t)t.rows;
        qk_pq_table_free(&t);
    }
    return qk_now() - t0;
}

enum { OPT_REPEAT = QK_KEY_FIRST };

static const qk_option options_table[] = {
    {OPT_REPEAT, "repeat", "N", "timings of each; the fastest counts (default 3)"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-bench-load", "qk-bench-load [OPTIONS] DIR",
    "Reads every Parquet file of the revision DIR into memory, then times\n"
    "ZSTD_decompress of all their pages (the floor) and the full decode by the\n"
    "suite's reader, and prints both and their ratio.\n",
    options_table, NULL, "qk-bench-load build/bench/data/llama3.2-3b", NULL};

int main(int argc, char **argv)
{
    qk_set_progname("qk-bench-load");
    int repeat = 3;
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;)
        if (key == OPT_REPEAT)
            repeat = (int)qk_opt_int("--repeat", value, 1, 1000);
    qk_args_operands(&a, 1, 1);
    const char *dir = a.operands[0];
    qk_revision rev;
    qk_err err;
    if (qk_revision_scan(dir, &rev, &err) != 0)
        qk_die(QK_EXIT_DATA, dir, "%s", err.msg);
    file_buf *files = qk_calloc((size_t)rev.n, sizeof *files);
    size_t compressed = 0;
    for (int i = 0; i < rev.n; i++) {
        files[i].path = rev.configs[i].paths[0];
        if (qk_read_file(files[i].path, &files[i].data, &files[i].len, &err) != 0)
            qk_die(QK_EXIT_DATA, files[i].path, "%s", err.msg);
        compressed += files[i].len;
    }
    double best_floor = 1e30, best_decode = 1e30;
    size_t page_bytes = 0, vectors = 0;
    for (int r = 0; r < repeat; r++) {
        double tf = time_floor(files, rev.n, &page_bytes);
        double td = time_decode(files, rev.n, &vectors);
        best_floor = tf < best_floor ? tf : best_floor;
        best_decode = td < best_decode ? td : best_decode;
    }
    printf("files: %d, %.1f MB Parquet, %.1f MB decompressed pages, %zu vectors\n", rev.n,
           compressed / 1e6, page_bytes / 1e6, vectors);
    printf("floor  (ZSTD_decompress of every page): %.3f s  %.0f MB/s of Parquet\n", best_floor,
           compressed / 1e6 / best_floor);
    printf("decode (qk_parquet_decode, all columns): %.3f s  %.0f MB/s of Parquet\n",
           best_decode, compressed / 1e6 / best_decode);
    printf("decode speed / floor speed: %.2f (target >= 0.70)\n", best_floor / best_decode);
    for (int i = 0; i < rev.n; i++)
        free(files[i].data);
    free(files);
    qk_revision_free(&rev);
    return QK_EXIT_OK;
}
