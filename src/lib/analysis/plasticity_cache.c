/* What a thread of the plasticity stage keeps between heads: its work
 * buffers, the layout of the last head and the keys of its key head
 * (plasticity_internal.h). */
#include <stdlib.h>

#include "plasticity_internal.h"

double *qk_plast_raw_doubles(size_t n)
{
    size_t bytes = ((n ? n : 1) * sizeof(double) + 63) / 64 * 64;
    double *p = aligned_alloc(64, bytes);
    if (!p)
        qk_out_of_memory(bytes);
    return p;
}

qk_plast_cache *qk_plast_cache_new(void)
{
    return qk_calloc(1, sizeof(qk_plast_cache));
}

void qk_plast_cache_forget_keys(qk_plast_cache *c)
{
    free(c->sign);
    free(c->scale);
    free(c->keys);
    c->sign = NULL;
    c->scale = NULL;
    c->keys = NULL;
    c->key_source = NULL;
    c->key_layout = NULL;
}

double *qk_plast_cache_buffer(qk_plast_cache *c, int which, size_t n)
{
    if (c->buf_size[which] < n) {
        free(c->buf[which]);
        c->buf[which] = qk_plast_raw_doubles(n);
        c->buf_size[which] = n;
    }
    return c->buf[which];
}

void qk_plast_cache_free(qk_plast_cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < QK_PLAST_N_BUFS; i++)
        free(c->buf[i]);
    qk_plast_cache_forget_keys(c);
    qk_plast_layout_free(c->layout);
    free(c);
}
