/* Fuzz target: the Parquet reader on a whole file given as bytes, through
 * its public entry points only, so every decoder the reader dispatches to
 * is covered: the footer (Thrift metadata, schema tree, Arrow schema),
 * page headers, decompression, levels and values. A decoded table is read
 * to its last value. */
#include "fuzz.h"
#include "qk/parquet.h"

static void check_table(const qk_pq_table *t)
{
    FUZZ_REQUIRE(t->rows >= 0 && t->dim >= 0, "rows %lld, dim %d", (long long)t->rows, t->dim);
    FUZZ_REQUIRE(t->rows == 0 || t->dim > 0, "%lld rows of dim 0", (long long)t->rows);
    qk_pq_stats s;
    qk_pq_table_stats(t, &s); /* touches every value of every column */
    FUZZ_REQUIRE(s.rows == t->rows, "stats rows");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qk_pq_table t;
    qk_err err;
    if (qk_parquet_decode(data, size, &t, &err) == 0) {
        fuzz_note("decoded: %lld rows, dim %d", (long long)t.rows, t.dim);
        check_table(&t);
        qk_pq_table_free(&t);
    } else {
        fuzz_check_message(&err);
    }
    static const char *const columns[] = {"bucket", "example_id", "position", "vector"};
    for (int i = 0; i < 4; i++) {
        uint64_t start, len;
        if (qk_parquet_chunk_range(data, size, 0, columns[i], &start, &len, &err) == 0)
            FUZZ_REQUIRE(start <= size && len <= size - start, "chunk range outside the file");
        else
            fuzz_check_message(&err);
    }
    return 0;
}
