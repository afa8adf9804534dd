/* Writes the seed files of the fuzz targets that the library's own writers
 * can produce: small Parquet files in every layout the writer knows
 * (codecs, dictionary or PLAIN vectors, page versions, row groups, rows
 * spanning pages) and small stores.  Small seeds keep the fuzzers fast;
 * tests/fuzz/seeds.sh adds the test fixtures.
 *
 * Usage: make-seeds CORPUS_DIR  (writes CORPUS_DIR/parquet/, .../store/) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/common.h"
#include "qk/pqwrite.h"
#include "qk/store.h"

static void die_on(int rc, const qk_err *err)
{
    if (rc != 0) {
        fprintf(stderr, "make-seeds: %s\n", err->msg);
        exit(2);
    }
}

/* Columns of rows x dim, with repeats so dictionaries stay small. */
typedef struct columns {
    int32_t *bucket, *example_id, *position;
    float *vector;
} columns;

static void make_columns(columns *c, int64_t rows, int dim)
{
    c->bucket = qk_malloc((size_t)rows * 4 + 4);
    c->example_id = qk_malloc((size_t)rows * 4 + 4);
    c->position = qk_malloc((size_t)rows * 4 + 4);
    c->vector = qk_malloc((size_t)rows * (size_t)dim * 4 + 4);
    for (int64_t i = 0; i < rows; i++) {
        c->position[i] = (int32_t)(i * 37 % 500);
        c->bucket[i] = c->position[i] / 128;
        c->example_id[i] = (int32_t)(i / 3);
        for (int j = 0; j < dim; j++)
            c->vector[i * dim + j] = (float)((i * 7 + j * 3) % 11) * 0.25f - 1.0f;
    }
}

static void free_columns(columns *c)
{
    free(c->bucket);
    free(c->example_id);
    free(c->position);
    free(c->vector);
}

static void write_parquet(const char *dir, const char *name, const qk_pq_write_opts *o,
                          int64_t rows, int dim)
{
    columns c;
    make_columns(&c, rows, dim);
    char *path = qk_path_join(dir, name);
    qk_err err;
    die_on(qk_parquet_write_file(path, o, rows, dim, c.bucket, c.example_id, c.position,
                                 c.vector, &err), &err);
    free(path);
    free_columns(&c);
}

static void parquet_seeds(const char *dir)
{
    static const struct { int codec; const char *name; } codecs[] = {
        {QK_CODEC_UNCOMPRESSED, "none"}, {QK_CODEC_SNAPPY, "snappy"},
        {QK_CODEC_GZIP, "gzip"}, {QK_CODEC_ZSTD, "zstd"}};
    char name[96];
    for (int c = 0; c < 4; c++)
        for (int dict = 0; dict < 2; dict++)
            for (int v2 = 0; v2 < 2; v2++) {
                qk_pq_write_opts o;
                qk_pq_write_opts_default(&o);
                o.codec = codecs[c].codec;
                o.dictionary_vectors = dict;
                o.data_page_v2 = v2;
                snprintf(name, sizeof name, "%s-%s-v%d.parquet", codecs[c].name,
                         dict ? "dict" : "plain", v2 ? 2 : 1);
                write_parquet(dir, name, &o, 12, 4);
            }
    qk_pq_write_opts o;
    qk_pq_write_opts_default(&o);
    o.codec = QK_CODEC_UNCOMPRESSED;
    o.rows_per_group = 5;
    write_parquet(dir, "row-groups.parquet", &o, 13, 3);
    o.rows_per_group = 0;
    o.values_per_page = 7; /* rows of 3 values span pages */
    write_parquet(dir, "spanning-pages.parquet", &o, 10, 3);
    o.data_page_v2 = 1;
    write_parquet(dir, "spanning-pages-v2.parquet", &o, 10, 3);
    qk_pq_write_opts_default(&o);
    o.codec = QK_CODEC_UNCOMPRESSED;
    write_parquet(dir, "one-row.parquet", &o, 1, 1);
    write_parquet(dir, "no-rows.parquet", &o, 0, 2);
    write_parquet(dir, "long-rows.parquet", &o, 3, 150); /* runs of ones in levels */
}

static void write_store(const char *dir, const char *name, int dim, int n_configs,
                        int64_t rows, int n_pairs)
{
    columns c;
    make_columns(&c, rows, dim);
    qk_store_header meta;
    memset(&meta, 0, sizeof meta);
    meta.dim = (uint32_t)dim;
    meta.n_layers = 2;
    meta.n_q_heads = 4;
    meta.n_kv_heads = 4; /* key head h serves query head h, as the pairs say */
    meta.context_length = 4096;
    meta.bucket_size = 128;
    snprintf(meta.dataset_id, sizeof meta.dataset_id, "fuzz-seed");
    char *path = qk_path_join(dir, name);
    qk_store_writer w;
    qk_err err;
    die_on(qk_store_writer_open(&w, path, &meta, &err), &err);
    for (int i = 0; i < n_configs; i++)
        die_on(qk_store_writer_add(&w, i / 4, i % 4 / 2, i % 2 ? 'q' : 'k', rows - i % 2,
                                   c.position, c.example_id, c.bucket, c.vector,
                                   (uint64_t)(1000 + i), &err), &err);
    qk_store_pair pairs[4];
    for (int i = 0; i < n_pairs; i++)
        pairs[i] = (qk_store_pair){(uint32_t)(2 * i + 1), (uint32_t)(2 * i)};
    die_on(qk_store_writer_finish(&w, pairs, n_pairs, &err), &err);
    free(path);
    free_columns(&c);
}

static void store_seeds(const char *dir)
{
    write_store(dir, "empty.qks", 2, 0, 0, 0);
    write_store(dir, "one.qks", 3, 1, 2, 0);
    write_store(dir, "pairs.qks", 4, 4, 5, 2);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make-seeds CORPUS_DIR\n");
        return 1;
    }
    qk_err err;
    char *parquet = qk_path_join(argv[1], "parquet");
    char *store = qk_path_join(argv[1], "store");
    die_on(qk_mkdirs(parquet, &err), &err);
    die_on(qk_mkdirs(store, &err), &err);
    parquet_seeds(parquet);
    store_seeds(store);
    free(parquet);
    free(store);
    return 0;
}
