/* The input reader interface (include/qk/reader.h) with its Parquet
 * format: the configs of a revision, their rows, a file read alone. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/parquet.h"
#include "qk/reader.h"
#include "testutil.h"

#define MINI "tests/data/sniffed-mini"

START_TEST(lists_the_configs_of_a_revision)
{
    qk_input in;
    qk_err err;
    ck_assert_msg(qk_input_open(MINI, &in, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(in.format->name, "parquet");
    qk_revision rev;
    ck_assert_int_eq(qk_revision_scan(MINI, &rev, &err), 0);
    ck_assert_int_eq(in.rev.n, rev.n);
    for (int i = 0; i < rev.n; i++)
        ck_assert_str_eq(in.rev.configs[i].name, rev.configs[i].name);
    qk_revision_free(&rev);
    qk_input_close(&in);
    ck_assert_ptr_null(in.format);
}
END_TEST

/* Every config's rows are the rows of its Parquet file, and bytes its size. */
START_TEST(reads_the_rows_of_each_config)
{
    qk_input in;
    qk_err err;
    ck_assert_msg(qk_input_open(MINI, &in, &err) == 0, "%s", err.msg);
    for (int i = 0; i < in.rev.n; i++) {
        qk_rows rows;
        ck_assert_msg(qk_input_read(&in, i, &rows, &err) == 0, "%s", err.msg);
        const char *path = qk_input_config_path(&in, i);
        qk_pq_table t;
        ck_assert_int_eq(qk_parquet_read_file(path, &t, &err), 0);
        ck_assert_int_eq(rows.rows, t.rows);
        ck_assert_int_eq(rows.dim, t.dim);
        ck_assert_mem_eq(rows.position, t.position, (size_t)t.rows * sizeof *t.position);
        ck_assert_mem_eq(rows.vector, t.vector, (size_t)t.rows * t.dim * sizeof *t.vector);
        FILE *fp = fopen(path, "rb");
        ck_assert_ptr_nonnull(fp);
        fseek(fp, 0, SEEK_END);
        ck_assert_int_eq((long)rows.bytes, ftell(fp));
        fclose(fp);
        qk_pq_table_free(&t);
        qk_rows_free(&rows);
    }
    qk_input_close(&in);
}
END_TEST

START_TEST(reads_a_file_alone_and_reports_errors)
{
    qk_rows rows;
    qk_err err;
    ck_assert_msg(qk_input_read_file(MINI "/l00h00q/data.parquet", &rows, &err) == 0, "%s",
                  err.msg);
    qk_row_stats s;
    qk_rows_stats(&rows, &s);
    ck_assert_int_eq(s.rows, rows.rows);
    ck_assert_int_gt(s.rows, 0);
    qk_rows_free(&rows);
    ck_assert_int_eq(qk_input_read_file(MINI "/README.md", &rows, &err), -1);
    ck_assert_int_gt((int)strlen(err.msg), 0);
    qk_input in;
    ck_assert_int_eq(qk_input_open("build/tests/tmp/no-such-revision", &in, &err), -1);
}
END_TEST

/* The first row with a NaN or an infinite value, whichever value and
 * wherever it lies: in the first, a middle or the last whole block of 4096
 * values, at either end of one, or after the last whole block; none among
 * the finite extremes. */
START_TEST(finds_the_first_non_finite_value)
{
    const int dim = 3;
    const int64_t counts[] = {0, 1, 1365, 1366, 2731, 4000}; /* rows: 0 to 12000 values */
    const float bad[] = {NAN, -NAN, INFINITY, -INFINITY};
    const float finite[] = {FLT_MAX, -FLT_MAX, FLT_MIN, 1e-45f, -0.0f, 0.0f, 1.5f};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = (size_t)counts[c] * dim;
        float *v = malloc((n > 0 ? n : 1) * sizeof *v);
        for (size_t i = 0; i < n; i++)
            v[i] = finite[i % (sizeof finite / sizeof finite[0])];
        qk_rows rows = {.rows = counts[c], .dim = dim, .vector = v};
        ck_assert_int_eq(qk_rows_first_non_finite(&rows), -1);
        const size_t places[] = {0, 1, 4095, 4096, 4097, 8191, 8192, 11999};
        for (size_t p = 0; p < sizeof places / sizeof places[0]; p++) {
            size_t at = places[p];
            if (at >= n)
                continue;
            float keep = v[at];
            v[at] = bad[p % 4];
            ck_assert_int_eq(qk_rows_first_non_finite(&rows), (int64_t)(at / dim));
            if (at + 5 < n) { /* a second one later changes nothing */
                float later = v[at + 5];
                v[at + 5] = NAN;
                ck_assert_int_eq(qk_rows_first_non_finite(&rows), (int64_t)(at / dim));
                v[at + 5] = later;
            }
            v[at] = keep;
        }
        free(v);
    }
}
END_TEST

int main(void)
{
    qk_mkdirs("build/tests/tmp", NULL);
    Suite *s = suite_create("reader");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, lists_the_configs_of_a_revision);
    tcase_add_test(tc, reads_the_rows_of_each_config);
    tcase_add_test(tc, reads_a_file_alone_and_reports_errors);
    tcase_add_test(tc, finds_the_first_non_finite_value);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
