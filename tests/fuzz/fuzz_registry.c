/* Fuzz target: the dataset registry parser (workflow/datasets.tsv format)
 * on arbitrary bytes.  Every dataset it accepts must be consistent: the
 * GQA helpers are called for every query head, as qk-load does. */
#include "fuzz.h"
#include "qk/registry.h"

static void check_dataset(const qk_dataset *d)
{
    qk_err err;
    FUZZ_REQUIRE(qk_dataset_validate(d, &err) == 0, "accepted dataset fails validation: %s",
                 err.msg);
    FUZZ_REQUIRE(memchr(d->id, '\0', sizeof d->id) != NULL, "id not terminated");
    FUZZ_REQUIRE(d->n_layers <= QK_MAX_LAYERS, "%d layers", d->n_layers);
    for (int h = 0; h < d->n_q_heads; h++) {
        int kv = qk_dataset_kv_head(d, h);
        FUZZ_REQUIRE(kv >= 0 && kv < d->n_kv_heads, "query head %d -> key head %d", h, kv);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qk_registry reg;
    qk_err err;
    if (qk_registry_load(fuzz_file(data, size), &reg, &err) != 0) {
        fuzz_check_message(&err);
        return 0;
    }
    fuzz_note("registry: %d datasets", reg.n);
    for (int i = 0; i < reg.n; i++) {
        check_dataset(&reg.items[i]);
        FUZZ_REQUIRE(qk_registry_find(&reg, reg.items[i].id) == &reg.items[i], "ids repeat");
    }
    qk_registry_free(&reg);
    return 0;
}
