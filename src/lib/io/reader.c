/* Reading the captures of one revision through its input format
 * (include/qk/reader.h). */
#include "qk/reader.h"

#include <math.h>
#include <stdint.h>
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

/* A float is NaN or infinite when its exponent bits are all set. Whole
 * blocks are tested without an early exit, in a loop of fixed length that
 * the compiler turns into vector code; a block with such a value, and the
 * values after the last whole block, are searched one by one. */
#define FINITE_BLOCK 4096

static int block_has_non_finite(const float *v)
{
    uint32_t all_set = 0;
    for (size_t i = 0; i < FINITE_BLOCK; i++) {
        uint32_t u;
        memcpy(&u, &v[i], sizeof u);
        all_set |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return all_set != 0;
}

int64_t qk_rows_first_non_finite(const qk_rows *rows)
{
    size_t n = (size_t)rows->rows * (size_t)rows->dim;
    for (size_t at = 0; at < n; at += FINITE_BLOCK) {
        size_t end = n - at < FINITE_BLOCK ? n : at + FINITE_BLOCK;
        if (end == at + FINITE_BLOCK && !block_has_non_finite(rows->vector + at))
            continue;
        for (size_t i = at; i < end; i++)
            if (!isfinite(rows->vector[i]))
                return (int64_t)(i / (size_t)rows->dim);
    }
    return -1;
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
