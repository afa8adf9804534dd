/* Small tab-separated tables and key/value files, the form in which
 * stages hand numbers to the report. */
#ifndef QK_TABLE_H
#define QK_TABLE_H

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
/* Index of a named column, or -1. */
int qk_table_column(const qk_table *t, const char *name);

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
