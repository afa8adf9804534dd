/* Fuzz target: the store reader (qk_store_open's checks, through
 * qk_store_open_memory) on arbitrary bytes, with and without the checksum.
 * A store that opens is read the way the analysis programs read it: every
 * value of every config (decoded by qk_store_vectors) and both ends of
 * every pair. */
#include "fuzz.h"
#include "qk/store.h"

static void walk(const qk_store *s)
{
    FUZZ_REQUIRE(s->dim > 0 && s->n_configs >= 0 && s->n_pairs >= 0, "dim %d, %d configs, %d pairs",
                 s->dim, s->n_configs, s->n_pairs);
    volatile double sink = 0;
    qk_store_buf buf = {0};
    for (int i = 0; i < s->n_configs; i++) {
        const qk_store_config *c = &s->configs[i];
        FUZZ_REQUIRE(c->rows >= 0 && (c->kind == 'q' || c->kind == 'k'), "config %d", i);
        int64_t ints = 0;
        for (int64_t r = 0; r < c->rows; r++)
            ints += (int64_t)c->position[r] + c->example_id[r] + c->bucket[r];
        qk_err err;
        const float *vector = qk_store_vectors(s, i, &buf, &err);
        if (!vector) { /* a damaged frame, found without the checksum */
            fuzz_check_message(&err);
            continue;
        }
        double sum = 0;
        for (int64_t v = 0; v < c->rows * s->dim; v++)
            sum += vector[v];
        sink += (double)ints + sum;
    }
    qk_store_buf_free(&buf);
    for (int i = 0; i < s->n_pairs; i++) {
        FUZZ_REQUIRE((int64_t)s->pairs[i].q < s->n_configs && (int64_t)s->pairs[i].k < s->n_configs,
                     "pair %d", i);
        sink += s->configs[s->pairs[i].q].rows + s->configs[s->pairs[i].k].rows;
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size heap copy: a read one byte past the store is caught */
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    for (int verify = 0; verify < 2; verify++) {
        qk_store s;
        qk_err err;
        if (qk_store_open_memory(copy, size, &s, verify, &err) == 0) {
            fuzz_note("store: %d configs, %d pairs, dim %d", s.n_configs, s.n_pairs, s.dim);
            walk(&s);
            qk_store_close(&s);
        } else {
            fuzz_check_message(&err);
        }
    }
    free(copy);
    return 0;
}
