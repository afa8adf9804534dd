/* Section "run": the run's id and suite version, from its record
 * (report/run.tsv, workflow/run-record.sh), so that numbers.tex, and the
 * thesis PDF made from it, name the run its numbers come from. */
#include <string.h>

#include "summary.h"

static const qk_key run_keys[] = {
    {"run.id", "text", "the id of the run that wrote these numbers (report/run.tsv)"},
    {"run.version", "text", "the suite version of the run (git describe)"},
    {NULL, NULL, NULL}};

void sum_run(sum_ctx *ctx)
{
    const qk_src *record = sum_input(ctx, "record");
    int c_kind = qk_src_col(record, "kind"), c_value = qk_src_col(record, "value");
    qk_numbers_declare(ctx->out, run_keys);
    sum_source(ctx->out, record, "value", "the line run_id or version", "as written");
    for (int r = 0; r < record->t->n_rows; r++) {
        const char *kind = qk_table_cell(record->t, r, c_kind);
        const char *value = qk_table_cell(record->t, r, c_value);
        if (strcmp(kind, "run_id") == 0)
            qk_numbers_set_text(ctx->out, "run.id", "%s", value);
        else if (strcmp(kind, "version") == 0)
            qk_numbers_set_text(ctx->out, "run.version", "%s", value);
    }
}
