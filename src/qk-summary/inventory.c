/* Section "inventory": the datasets of the run (build/report/inventory.tsv,
 * one row per dataset as qk-load describes it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "summary.h"

#include "qk/die.h"

static const qk_key inventory_keys[] = {
    {"inventory.datasets", "count", "datasets (models and training checkpoints) in the run"},
    {"inventory.heads_total", "count", "query heads of all datasets"},
    {"inventory.vectors_q", "count", "query vectors captured, all datasets"},
    {"inventory.vectors_k", "count", "key vectors captured, all datasets"},
    {"inventory.parquet_mb", "number.1", "Parquet data read, all datasets (MB, 10^6 bytes)"},
    {"inventory.partial_datasets", "count",
     "datasets whose capture lists configs that are not in the data (partial downloads)"},
    {"inventory.partial", "text",
     "the partial downloads, each with the configs present of those its capture lists"},
    {NULL, NULL, NULL}};

/* The columns of inventory.tsv, as fields of each dataset's record. */
static const qk_key dataset_fields[] = {
    {"dataset", "text", "dataset id (workflow/datasets.tsv)"},
    {"label", "text", "model label"},
    {"study", "text", "study of the dataset"},
    {"family", "text", "model family"},
    {"q_heads", "count", "query heads"},
    {"k_heads", "count", "key heads serving them"},
    {"vectors_q", "count", "query vectors captured"},
    {"vectors_k", "count", "key vectors captured"},
    {"head_dim", "count", "head dimension"},
    {"parquet_bytes", "count", "Parquet bytes read"},
    {"store_bytes", "count", "bytes of the validated store"},
    {"store_checksum", "text", "checksum of the validated store"},
    {"source", "text", "where the vectors came from"},
    {"revision", "text", "capture revision"},
    {NULL, NULL, NULL}};

/* The table's column headers; NULL: a field the table leaves out, so that
 * it fits the page (the study and the family: figure 1.1 groups the rows
 * by study, the label names the family). */
static const char *const headers[] = {
    "Dataset", "Model", NULL, NULL, "Query heads", "Key heads", "Query vectors",
    "Key vectors", "Head dim.", "Parquet bytes", "Store bytes", "Store checksum", "Source",
    "Revision"};

/* The partial downloads: datasets of which fewer configs are present than
 * their capture lists ("-": it lists none). */
static void sum_partial(sum_ctx *ctx, const qk_src *in)
{
    int c_id = qk_src_col(in, "dataset"), c_present = qk_src_col(in, "configs_present");
    int c_captured = qk_src_col(in, "configs_captured"), n = 0;
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    if (!fp)
        qk_die(QK_EXIT_DATA, NULL, "cannot open a memory stream");
    for (int r = 0; r < in->t->n_rows; r++) {
        if (strcmp(qk_table_cell(in->t, r, c_captured), "-") == 0)
            continue;
        double present = qk_src_count(in, r, c_present);
        double captured = qk_src_count(in, r, c_captured);
        if (present < captured)
            fprintf(fp, "%s%s (%.0f of %.0f captured configs present)", n++ ? ", " : "",
                    qk_table_cell(in->t, r, c_id), present, captured);
    }
    fclose(fp);
    sum_source(ctx->out, in, "dataset, configs_present, configs_captured",
               "the datasets whose capture lists its configs (configs_captured not '-')",
               "the datasets with configs_present < configs_captured: counted, and listed by "
               "dataset with both counts");
    qk_numbers_set(ctx->out, "inventory.partial_datasets", n);
    if (n)
        qk_numbers_set_text(ctx->out, "inventory.partial", "%s", text);
    free(text);
}

void sum_inventory(sum_ctx *ctx)
{
    const qk_src *in = sum_input(ctx, "inventory");
    qk_numbers_declare(ctx->out, inventory_keys);
    int n_fields = (int)(sizeof headers / sizeof headers[0]);
    int table = qk_numbers_table(ctx->out, "inventory", "inventory",
                                 "One row per dataset: heads, vectors, head dimension, bytes "
                                 "read and the validated store");
    int col[sizeof headers / sizeof headers[0]];
    for (int f = 0; f < n_fields; f++) {
        if (headers[f])
            qk_numbers_column(ctx->out, table, dataset_fields[f].name, headers[f]);
        col[f] = qk_src_col(in, dataset_fields[f].name);
    }
    int c_heads = qk_src_col(in, "q_heads"), c_vq = qk_src_col(in, "vectors_q");
    int c_vk = qk_src_col(in, "vectors_k"), c_bytes = qk_src_col(in, "parquet_bytes");
    double heads = 0, vq = 0, vk = 0, bytes = 0;
    sum_source(ctx->out, in, "the column named as the field (dataset, label, study, family, "
               "q_heads, k_heads, vectors_q, vectors_k, head_dim, parquet_bytes, store_bytes, "
               "store_checksum, source, revision)", "the dataset's row", "as written");
    for (int r = 0; r < in->t->n_rows; r++) {
        const char *id = qk_table_cell(in->t, r, col[0]);
        int rec = qk_numbers_record(ctx->out, "inventory", id, dataset_fields,
                                    qk_table_cell(in->t, r, col[1]));
        for (int f = 0; f < n_fields; f++) {
            if (strcmp(dataset_fields[f].format, "text") == 0)
                qk_numbers_field_text(ctx->out, rec, dataset_fields[f].name, "%s",
                                      qk_table_cell(in->t, r, col[f]));
            else /* every number of a dataset row is a count */
                qk_numbers_field(ctx->out, rec, dataset_fields[f].name,
                                 qk_src_count(in, r, col[f]));
        }
        qk_numbers_row(ctx->out, table, id);
        heads += qk_src_count(in, r, c_heads);
        vq += qk_src_count(in, r, c_vq);
        vk += qk_src_count(in, r, c_vk);
        bytes += qk_src_count(in, r, c_bytes);
    }
    sum_source(ctx->out, in, "dataset", "every row (one a dataset)", "rows counted");
    qk_numbers_set(ctx->out, "inventory.datasets", in->t->n_rows);
    sum_source(ctx->out, in, "q_heads", "every row (one a dataset)", "sum");
    qk_numbers_set(ctx->out, "inventory.heads_total", heads);
    sum_source(ctx->out, in, "vectors_q", "every row (one a dataset)", "sum");
    qk_numbers_set(ctx->out, "inventory.vectors_q", vq);
    sum_source(ctx->out, in, "vectors_k", "every row (one a dataset)", "sum");
    qk_numbers_set(ctx->out, "inventory.vectors_k", vk);
    sum_source(ctx->out, in, "parquet_bytes", "every row (one a dataset)",
               "sum, in MB (10^6 bytes)");
    qk_numbers_set(ctx->out, "inventory.parquet_mb", bytes / 1e6);
    sum_partial(ctx, in);
}
