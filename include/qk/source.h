/* The source record of a dataset (build/<dataset>/source.txt): what its
 * store is made from. Make reruns qk-load exactly when the record changes,
 * and the record is rewritten only when its content changes, so a record
 * is a cache key (docs/cache.md).
 *
 * The record is "key<TAB>value" lines:
 *   dataset   the dataset id
 *   source    "synthetic" or "directory"
 *   origin    human-readable provenance: "synthetic (qk-synth, seed S, scale
 *             C, mode M)" or the resolved absolute input directory (with
 *             " (written by qk-synth)" when its capture metadata say so)
 *   revision  the capture revision: the dataset_branch of _saver_state.json,
 *             else the branch named by README.md (its "- `dataset_branch`:
 *             `NAME`" item or qk-synth's "Branch `NAME` holds" sentence),
 *             else the Hugging Face snapshot name, else "-"
 *   listed    (with an input folder) the configs the capture lists (see
 *             qk_capture_configs): their number, the file that lists them
 *             and a hash of the list; or "-"
 *   registry  the dataset's registry row (tabs kept), or "-"
 *   conf      a hash of DIR/qkreport.conf, or "-"
 *   file      (directory sources, and synthetic ones given the folder
 *             qk-synth wrote) relative path, size, mtime in ns and a hash
 *             of the Parquet footer, one line per input file */
#ifndef QK_SOURCE_H
#define QK_SOURCE_H

#include <stddef.h>

#include "qk/common.h"

typedef struct qk_source_spec {
    const char *dataset;   /* dataset id */
    const char *input;     /* input directory (directory sources) */
    const char *revision;  /* revision inside a Hugging Face cache root, or NULL */
    const char *registry;  /* registry file */
    const char *synthetic; /* "seed=S scale=C mode=M" for synthetic data, or NULL */
} qk_source_spec;

/* Writes the record to path, replacing the file only when its content
 * changes (so its mtime tells Make whether the source changed). */
int qk_source_write_record(const qk_source_spec *spec, const char *path, qk_err *err);

/* The capture revision of a revision directory (see above); "-" if none. */
void qk_source_capture_revision(const char *root, char *out, size_t cap);

/* Whether the capture's _saver_state.json names a synthetic source (data
 * written by qk-synth and copied like a download). */
int qk_source_is_synthetic_capture(const char *root);
/* Whether a --synthetic description names its seed, scale and mode
 * ("seed=S scale=C mode=M"). */
int qk_source_synthetic_ok(const char *spec);

/* The "file" lines of the capture folder root, one per input file (as in
 * the record), in a string to free; NULL on error. */
char *qk_source_file_lines(const char *root, qk_err *err);
/* qk-synth keeps the file lines of the data it wrote in ROOT/.synth-files:
 * whether they are lines, so that data edited by hand are told from its. */
#define QK_SYNTH_FILES ".synth-files"
int qk_source_files_as_written(const char *root, const char *lines);

/* ---- the configs a capture lists ------------------------------------------------- */

/* Canonical config names (lLLhHH[qk]), sorted, without duplicates. */
typedef struct qk_config_list {
    int n;
    char (*names)[16];
    const char *from; /* the file that lists them */
} qk_config_list;

/* The configs listed by the text of _saver_state.json (a "configs" array of
 * names) or of README.md (the "## Captured Configs" section, one
 * "- `lLLhHHq`" line per config, as the capture tool writes it). 0 and the
 * list; -1 (an empty list) when the text lists none or its list is not
 * well formed, which says nothing about missing configs. */
int qk_capture_configs_json(const char *text, qk_config_list *out);
int qk_capture_configs_readme(const char *text, qk_config_list *out);
/* The configs the capture in root lists: _saver_state.json's, else
 * README.md's; -1 when neither lists any. */
int qk_capture_configs(const char *root, qk_config_list *out);
void qk_config_list_free(qk_config_list *l);
/* Whether name (canonical) is in the list. */
int qk_config_list_has(const qk_config_list *l, const char *name);

/* Reads the value of key from a record (first occurrence); -1 if absent. */
int qk_source_record_value(const char *path, const char *key, char *out, size_t cap,
                           qk_err *err);

#endif
