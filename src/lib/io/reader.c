/* Reading the captures of one revision through its input format
 * (include/qk/reader.h). */
#include "qk/reader.h"

#include <stdlib.h>
#include <string.h>

/* The input formats, the default first: a new format is one line here. */
static const qk_input_format *const formats[] = {
    &qk_input_parquet,
};
#define N_FORMATS ((int)(sizeof formats / sizeof formats[0]))

void qk_rows_free(qk_rows *rows)
{
    if (!rows)
        return;
    free(rows->bucket);
    free(rows->example_id);
    free(rows->position);
    free(rows->vector);
    memset(rows, 0, sizeof *rows);
}

void qk_rows_stats(const qk_rows *rows, qk_row_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    stats->rows = rows->rows;
    stats->dim = rows->dim;
    for (int64_t i = 0; i < rows->rows; i++) {
        stats->position_sum += rows->position[i];
        stats->example_id_sum += rows->example_id[i];
    }
    size_t n = (size_t)rows->rows * (size_t)rows->dim;
    for (size_t i = 0; i < n; i++) {
        double v = rows->vector[i];
        stats->vector_sum += v;
        stats->vector_abs_sum += v < 0 ? -v : v;
    }
}

int qk_input_open(const char *root, qk_input *in, qk_err *err)
{
    memset(in, 0, sizeof *in);
    in->format = formats[0];
    for (int i = 0; i < N_FORMATS; i++)
        if (formats[i]->detect(root)) {
            in->format = formats[i];
            break;
        }
    if (in->format->open(root, in, err) != 0) {
        memset(in, 0, sizeof *in);
        return -1;
    }
    return 0;
}

int qk_input_read(qk_input *in, int config, qk_rows *rows, qk_err *err)
{
    memset(rows, 0, sizeof *rows);
    return in->format->read_config(in, config, rows, err);
}

const char *qk_input_config_path(const qk_input *in, int config)
{
    const qk_config_file *c = &in->rev.configs[config];
    return c->n_paths ? c->paths[0] : c->name;
}

void qk_input_close(qk_input *in)
{
    if (in->format)
        in->format->close(in);
    memset(in, 0, sizeof *in);
}

int qk_input_read_file(const char *path, qk_rows *rows, qk_err *err)
{
    const qk_input_format *format = formats[0];
    for (int i = 0; i < N_FORMATS; i++)
        if (formats[i]->claims_file(path)) {
            format = formats[i];
            break;
        }
    memset(rows, 0, sizeof *rows);
    return format->read_file(path, rows, err);
}
