/* Reading the captures of one revision, whatever their file format.
 *
 * A revision is a dataset folder whose config directories are named
 * lLLhHHq (queries of layer LL, head HH) and lLLhHHk (keys). An input
 * format reads it in four steps, through the function pointers of its
 * qk_input_format:
 *
 *   open         lists the configs of the folder into in->rev (sorted by
 *                layer, head, kind; each with its data files) and keeps
 *                what reading needs in in->state
 *   read_config  decodes the rows of config i of in->rev: every vector with
 *                its position, example id and bucket (qk_rows)
 *   read_file    decodes one file of the format given alone (qk-load --stats)
 *   close        frees what open made
 *
 * Each returns -1 with a one-line message in err that does not name the
 * file (the caller does) and never exits. Parquet (reader_parquet.c) is the
 * first format. A second one is a file defining its qk_input_format and one
 * line in the list of formats of reader.c. qk-load reads only through this
 * interface. */
#ifndef QK_READER_H
#define QK_READER_H

#include <stdint.h>

#include "qk/common.h"
#include "qk/revision.h"

/* The rows of one config, in file order; the arrays are malloc'd. */
typedef struct qk_rows {
    int64_t rows;
    int dim;                /* values per vector */
    int32_t *bucket;        /* position / bucket_size, as the capture wrote it */
    int32_t *example_id;
    int32_t *position;      /* the token position */
    float *vector;          /* rows * dim values, row after row */
    uint64_t bytes;         /* the size of the files read (the inventory's input bytes) */
} qk_rows;

void qk_rows_free(qk_rows *rows);

/* The row of the first vector value that is NaN or infinite, or -1 when
 * every value is finite. */
int64_t qk_rows_first_non_finite(const qk_rows *rows);

/* Sums in float64 accumulated in row order (qk-load --stats, the form of
 * the fixtures' truth.json). */
typedef struct qk_row_stats {
    int64_t rows;
    int dim;
    int64_t position_sum;
    int64_t example_id_sum;
    double vector_sum;
    double vector_abs_sum;
} qk_row_stats;

void qk_rows_stats(const qk_rows *rows, qk_row_stats *stats);

typedef struct qk_input qk_input;

typedef struct qk_input_format {
    const char *name;   /* "parquet" */
    const char *noun;   /* in messages: "no config directories with Parquet files" */
    /* 1 when the config directories of the folder root hold this
     * format's files, 0 otherwise */
    int (*detect)(const char *root);
    /* 1 when path, a file given alone, is of this format */
    int (*claims_file)(const char *path);
    int (*open)(const char *root, qk_input *in, qk_err *err);
    int (*read_config)(qk_input *in, int config, qk_rows *rows, qk_err *err);
    int (*read_file)(const char *path, qk_rows *rows, qk_err *err);
    void (*close)(qk_input *in);
} qk_input_format;

/* One open revision. */
struct qk_input {
    const qk_input_format *format;
    qk_revision rev; /* the configs (rev.n_empty: directories without a data file) */
    void *state;     /* the format's own */
};

/* Opens the revision folder root (a resolved one: qk_revision_resolve)
 * with the first format whose detect claims it, else with the first
 * format of the list (whose messages then say what is missing). */
int qk_input_open(const char *root, qk_input *in, qk_err *err);
/* The rows of config i of in->rev, and the path to name in a message
 * about them (its data file). */
int qk_input_read(qk_input *in, int config, qk_rows *rows, qk_err *err);
const char *qk_input_config_path(const qk_input *in, int config);
void qk_input_close(qk_input *in);

/* Decodes one file given alone, with the first format that claims it
 * (else the first format). */
int qk_input_read_file(const char *path, qk_rows *rows, qk_err *err);

/* The formats, first the default (reader.c). */
extern const qk_input_format qk_input_parquet;

#endif
