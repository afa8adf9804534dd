/* Finding the configs of one downloaded revision and pairing each query
 * head with its key head. */
#ifndef QK_REVISION_H
#define QK_REVISION_H

#include "qk/common.h"
#include "qk/registry.h"

typedef struct qk_config_file {
    int layer;
    int head;
    char kind;    /* 'q' or 'k' */
    char name[32]; /* canonical name lLLhHH[qk] */
    int n_paths;  /* its Parquet file: 1 (the capture tool writes one per config) */
    char **paths;
} qk_config_file;

typedef struct qk_revision {
    char *root; /* the directory that holds the config directories */
    int n;
    qk_config_file *configs; /* sorted by layer, head, kind ('k' before 'q') */
    int n_empty;             /* config directories without a Parquet file (not in configs) */
    char first_empty[32];    /* the first of them in lexical order, or "" */
} qk_revision;

/* Parses a config directory name (^l(\d+)h(\d+)([qk])$). */
int qk_parse_config_name(const char *name, int *layer, int *head, char *kind);

/* Resolves what a user may point at: a plain download, a Hugging Face cache
 * snapshot, a "datasets--owner--name" cache root with a revision name (read
 * through refs/), a legacy folder holding one model sub-directory, or a
 * folder of several datasets' folders, of which the one named dataset
 * (NULL: none) is taken. Several sub-directories with configs and none
 * named dataset is an error naming them. The result is malloc'ed. */
char *qk_revision_resolve(const char *path, const char *revision, const char *dataset,
                          qk_err *err);

/* Lists the config directories under root (dot-directories skipped,
 * symlinks followed). A directory without a Parquet file (an interrupted
 * download) is no config; it is counted in n_empty. A directory with more
 * than one is an error: the capture tool writes one file per config, so a
 * second is a stray copy whose rows would count twice. An error names the
 * offending entry. */
int qk_revision_scan(const char *root, qk_revision *rev, qk_err *err);

/* The data files of a config directory in one input format: their names
 * end in suffix; noun names the format in messages ("Parquet"). */
typedef struct qk_config_files {
    const char *suffix;
    const char *noun;
} qk_config_files;
extern const qk_config_files qk_parquet_config_files;
/* qk_revision_scan for the files of another format (qk_revision_scan is
 * this with qk_parquet_config_files); the messages name files->noun. */
int qk_revision_scan_files(const char *root, const qk_config_files *files, qk_revision *rev,
                           qk_err *err);
void qk_revision_free(qk_revision *rev);

/* A query config and the key config that serves it (indices into rev). */
typedef struct qk_head_pair {
    int q;
    int k;
} qk_head_pair;

/* Pairs every query config with key head q_head / (n_q / n_kv) of the same
 * layer. A query config without its key file (a partial download) is in
 * no pair; unused key configs are allowed too. Fails on heads outside the
 * model's shape. */
int qk_revision_pair(const qk_revision *rev, const qk_dataset *ds,
                     qk_head_pair **pairs, int *n_pairs, qk_err *err);

#endif
