/* Fuzz target: the qkreport.conf parser on arbitrary bytes, over a
 * dataset that starts empty and over one that starts complete (a conf
 * overrides some fields of a registry entry).  A dataset that then
 * validates is used the way qk-load uses it. */
#include "fuzz.h"
#include "qk/registry.h"

static void complete_dataset(qk_dataset *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->id, sizeof d->id, "base");
    d->n_layers = 4;
    d->n_q_heads = 8;
    d->n_kv_heads = 2;
    d->head_dim = 16;
    d->context_length = 1024;
    d->bucket_size = 64;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    for (int start = 0; start < 2; start++) {
        qk_dataset d;
        qk_err err;
        if (start)
            complete_dataset(&d);
        else
            memset(&d, 0, sizeof d);
        if (qk_dataset_conf_load(path, &d, &err) != 0) {
            fuzz_check_message(&err);
            continue;
        }
        FUZZ_REQUIRE(memchr(d.id, '\0', sizeof d.id) && memchr(d.label, '\0', sizeof d.label) &&
                         memchr(d.rope_scaling, '\0', sizeof d.rope_scaling),
                     "a text field is not terminated");
        if (qk_dataset_validate(&d, &err) != 0) {
            fuzz_check_message(&err);
            continue;
        }
        fuzz_note("conf: %s, %d layers, %d/%d heads", d.id, d.n_layers, d.n_q_heads, d.n_kv_heads);
        for (int h = 0; h < d.n_q_heads; h++) {
            int kv = qk_dataset_kv_head(&d, h);
            FUZZ_REQUIRE(kv >= 0 && kv < d.n_kv_heads, "query head %d -> key head %d", h, kv);
        }
    }
    return 0;
}
