/* The dataset registry (workflow/datasets.tsv) and per-directory
 * qkreport.conf files that describe models the registry lacks. */
#ifndef QK_REGISTRY_H
#define QK_REGISTRY_H

#include "qk/common.h"

#define QK_MAX_LAYERS 128
/* A label's most characters: figures draw it in legends, keys and on axes,
 * where a longer one would leave the canvas. A dataset without a label is
 * labelled by its id, shortened in the middle to as many (one "..."
 * character; workflow/run-registry.awk reads this line). */
#define QK_LABEL_CHARS 20

typedef struct qk_dataset {
    char id[56];        /* directory name, e.g. "llama3.2-3b" */
    char study[64];     /* attention_plasticity | smollm3_training_progress | extra */
    char family[32];    /* llama | qwen | ministral | mistral | smollm3 | ... */
    char label[64];     /* short display name, e.g. "Llama-3.2-3B", "S1-40K" */
    char revision[128]; /* hub revision (branch) name */
    int n_layers;
    int n_q_heads;
    int n_kv_heads;
    int head_dim;
    double rope_theta;
    char rope_scaling[64]; /* "none", "llama3:32:1:4:8192", "yarn:16:16384", ... */
    int max_position_embeddings;
    int context_length;    /* capture truncation: positions are < this */
    int bucket_size;       /* sampling bucket size B */
    unsigned char nope[QK_MAX_LAYERS];  /* 1 for NoPE layers */
    unsigned char cross[QK_MAX_LAYERS]; /* 1 for cross-attention layers (no data) */
} qk_dataset;

typedef struct qk_registry {
    int n;
    qk_dataset *items;
} qk_registry;

/* The GQA group n_q / n_kv. */
int qk_dataset_group(const qk_dataset *d);
/* The key head that serves query head h. */
int qk_dataset_kv_head(const qk_dataset *d, int q_head);

/* Parses the TSV registry (header line with the column names below, '#'
 * comments allowed). Columns: id study family label revision n_layers
 * n_q_heads n_kv_heads head_dim rope_theta rope_scaling
 * max_position_embeddings context_length bucket_size nope_layers
 * cross_attention_layers; layer lists are comma-separated or "-". */
int qk_registry_load(const char *path, qk_registry *reg, qk_err *err);
void qk_registry_free(qk_registry *reg);
const qk_dataset *qk_registry_find(const qk_registry *reg, const char *id);

/* Parses a qkreport.conf ("key = value" lines with the registry's column
 * names, '#' comments, blanks around keys and values); fields not given
 * keep their values in *d. The first line that is wrong stops it with
 * "line N: ...": no '=', an unknown key, an empty value, a control
 * character (a tab too) or bytes that are not UTF-8 in the value, a value
 * of the wrong type (a number where a number is expected) or too long.
 * Text values (a label) may hold any other printable UTF-8: every output
 * escapes them. */
int qk_dataset_conf_load(const char *path, qk_dataset *d, qk_err *err);
/* The check of a qkreport.conf alone: qk_dataset_conf_load into a
 * scratch dataset (qk-load --check-conf). */
int qk_dataset_conf_check(const char *path, qk_err *err);

/* Checks internal consistency (positive sizes, n_q divisible by n_kv ...). */
int qk_dataset_validate(const qk_dataset *d, qk_err *err);

#endif
