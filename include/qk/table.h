/* Small tab-separated tables and key/value files, the form in which
 * stages hand numbers to the report. */
#ifndef QK_TABLE_H
#define QK_TABLE_H

#include <stdio.h>

#include "qk/common.h"

/* A TSV file with a header line; cells are strings. */
typedef struct qk_table {
    int n_cols;
    int n_rows;
    char **header;
    char **cells; /* n_rows * n_cols, row-major */
    char *text;   /* the file contents the pointers point into */
} qk_table;

/* Loads a TSV (or, for a name ending in .csv, a comma-separated table);
 * every row must have as many fields as the header. */
int qk_table_load(const char *path, qk_table *t, qk_err *err);
void qk_table_free(qk_table *t);
const char *qk_table_cell(const qk_table *t, int row, int col);
/* 1 when both tables have the same columns in the same order. */
int qk_table_same_header(const qk_table *a, const qk_table *b);
/* Index of a named column, or -1. */
int qk_table_column(const qk_table *t, const char *name);

/* A loaded table and the file it came from, for messages. user, if not
 * NULL, names who needs the table ("figure qk-pca/05") in a missing-column
 * message. */
typedef struct qk_src {
    const qk_table *t;
    const char *path;
    const char *user;
} qk_src;

/* Column index by name; else "PATH: no column 'NAME' (needed by USER)" and
 * exit 2. */
int qk_src_col(const qk_src *s, const char *name);
/* Numeric cell ("nan" and "inf" are numbers); else "PATH: line N, column
 * C: 'X' is not a number" and exit 2. */
double qk_src_num(const qk_src *s, int row, int col);
/* A finite numeric cell (a parameter, a scale); else "... is not a finite
 * number" and exit 2. */
double qk_src_finite(const qk_src *s, int row, int col);
/* Integer cell (a count, a layer, an index); else "PATH: line N, column
 * C: 'X' is not an integer" and exit 2. */
int qk_src_int(const qk_src *s, int row, int col);
/* A count that may pass INT_MAX (bytes, vectors): a whole number >= 0 below
 * 2^53; else "PATH: line N, column C: 'X' is not a count" and exit 2. */
double qk_src_count(const qk_src *s, int row, int col);
/* The numeric column NAME for every row of the table (malloc'd). */
double *qk_src_values(const qk_src *s, const char *name);
/* The first row whose column col holds key, or -1. */
int qk_src_find(const qk_src *s, int col, const char *key);

/* A table read from a file, with its source (src.t points into it). */
typedef struct qk_table_file {
    qk_table table;
    qk_src src;
} qk_table_file;

/* Loads path (qk_table_load) or exits 2 naming it. */
void qk_table_file_load(qk_table_file *f, const char *path);
void qk_table_file_free(qk_table_file *f);

/* Writes a CSV field: as is, or in double quotes (inner quotes doubled)
 * when it holds a comma, a quote or a line break. */
void qk_csv_put(FILE *fp, const char *text);

/* key<TAB>value pairs; a later definition of a key is an error. */
typedef struct qk_kv {
    int n;
    char **keys;
    char **vals;
} qk_kv;

int qk_kv_load(qk_kv *kv, const char *path, qk_err *err);
/* Adds "KEY=VALUE"; returns -1 if malformed or the key exists. */
int qk_kv_set_arg(qk_kv *kv, const char *arg);
const char *qk_kv_get(const qk_kv *kv, const char *key);
void qk_kv_free(qk_kv *kv);

#endif
