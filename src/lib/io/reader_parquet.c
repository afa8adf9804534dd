/* The Parquet input format (include/qk/reader.h): one data.parquet per
 * config directory, as the capture tool writes it. */
#include "qk/reader.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qk/parquet.h"

static int has_parquet_suffix(const char *name)
{
    size_t n = strlen(name);
    return n >= 8 && strcmp(name + n - 8, ".parquet") == 0;
}

/* The rows of a decoded table, which hands its arrays over. */
static void take_table(qk_pq_table *t, qk_rows *rows)
{
    rows->rows = t->rows;
    rows->dim = t->dim;
    rows->bucket = t->bucket;
    rows->example_id = t->example_id;
    rows->position = t->position;
    rows->vector = t->vector;
    memset(t, 0, sizeof *t);
}

static int parquet_read_file(const char *path, qk_rows *rows, qk_err *err)
{
    qk_pq_table t;
    if (qk_parquet_read_file(path, &t, err) != 0)
        return -1;
    take_table(&t, rows);
    struct stat st;
    if (stat(path, &st) == 0)
        rows->bytes = (uint64_t)st.st_size;
    return 0;
}

/* Whether a config directory of root holds a Parquet file. */
static int parquet_detect(const char *root)
{
    qk_revision rev;
    if (qk_revision_scan(root, &rev, NULL) != 0)
        return 0;
    int found = rev.n > 0;
    qk_revision_free(&rev);
    return found;
}

static int parquet_claims_file(const char *path) { return has_parquet_suffix(path); }

static int parquet_open(const char *root, qk_input *in, qk_err *err)
{
    return qk_revision_scan_files(root, &qk_parquet_config_files, &in->rev, err);
}

/* A config's file: the one qk_revision_scan allows. */
static int parquet_read_config(qk_input *in, int config, qk_rows *rows, qk_err *err)
{
    return parquet_read_file(in->rev.configs[config].paths[0], rows, err);
}

static void parquet_close(qk_input *in) { qk_revision_free(&in->rev); }

const qk_input_format qk_input_parquet = {
    .name = "parquet",
    .noun = "Parquet",
    .detect = parquet_detect,
    .claims_file = parquet_claims_file,
    .open = parquet_open,
    .read_config = parquet_read_config,
    .read_file = parquet_read_file,
    .close = parquet_close,
};
