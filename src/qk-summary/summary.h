/* The section framework of qk-summary: each report section is a function
 * that reads its input tables and writes its numbers (qk/numbers.h). A
 * section is one row of the table in main.c: {id, inputs, params,
 * description, write}. */
#ifndef QK_SUMMARY_SUMMARY_H
#define QK_SUMMARY_SUMMARY_H

#include "qk/common.h"
#include "qk/numbers.h"
#include "qk/table.h"

typedef struct sum_ctx {
    const char *section;
    int n_inputs;
    char **input_names;
    qk_table_file *inputs;
    int n_params;
    char **param_names, **param_values;
    qk_numbers *out;
    char user[64]; /* "section pca": who needs the inputs, for messages */
} sum_ctx;

typedef void (*sum_fn)(sum_ctx *ctx);

typedef struct sum_section {
    const char *id;
    /* input names; a trailing '?' marks an optional one (a study the run
     * may lack) */
    const char *inputs;
    const char *params;      /* parameter names */
    const char *description; /* what the section writes */
    sum_fn write;
} sum_section;

/* The sections (inventory.c, figures.c, pca.c, rotation.c, plasticity.c,
 * extra.c). */
void sum_inventory(sum_ctx *ctx);
void sum_figures(sum_ctx *ctx);
void sum_pca(sum_ctx *ctx);
void sum_rotation(sum_ctx *ctx);
void sum_plasticity(sum_ctx *ctx);
void sum_extra(sum_ctx *ctx);
void sum_run(sum_ctx *ctx);

/* An input table, or NULL when an optional input is not given. */
const qk_src *sum_input(const sum_ctx *ctx, const char *name);
/* A parameter's value, or fallback when it is not given. */
const char *sum_param(const sum_ctx *ctx, const char *name, const char *fallback);
/* A numeric parameter in [lo, hi], from the run's record (--params): a
 * missing or bad value is a usage error. */
double sum_param_num(const sum_ctx *ctx, const char *name, double lo, double hi);

/* The dataset id of a registry row (the key of a model's numbers), or
 * fallback when row is -1. */
const char *sum_dataset_id(const qk_src *registry, int row, const char *fallback);

/* One format per quantity: a quantity the report prints in more than one
 * place (a section's text, its tables, another section's tables) has one
 * unit and one precision wherever it appears, the format here; its keys
 * carry the unit in their name (bias_x1e3: bias strength times 10^3). */
#define SUM_FMT_BIAS_X1E3 "number.2"    /* bias strength, score per token, x 10^3 */
#define SUM_FMT_ALPHA_K_X1E3 "number.2" /* |alpha_K|, per token, x 10^3 */
#define SUM_FMT_PLANE "fraction.3"      /* share of a head's variance in the {a, b} plane */

/* Where the values set next come from (qk_numbers_source): the table
 * (its published path), columns, rows and aggregation; the stages and
 * parameter groups behind the table follow from its name (main.c). */
void sum_source(qk_numbers *w, const qk_src *table, const char *columns, const char *rows,
                const char *aggregation);
/* The same for values computed from several tables (NULL entries, inputs
 * the run lacks, are left out). */
void sum_source_tables(qk_numbers *w, const qk_src *const *tables, int n, const char *columns,
                       const char *rows, const char *aggregation);
/* The same for values read from a parameter record (build/params/GROUP.txt). */
void sum_source_params(qk_numbers *w, const char *group, const char *names);

/* Share in percent (NAN when n is 0). */
double sum_pct(int count, int n);

#endif
