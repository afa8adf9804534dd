/* Encoders of the Parquet format 2 value encodings (DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT) for the
 * writer's test options and for round-trip tests of the reader's
 * decoders (src/lib/io/parquet_encodings.c describes the layouts). */
#include "qk/pqwrite.h"

#include <stdlib.h>
#include <string.h>

/* (here rather than in pqwrite.c, which uses these encoders: the writer
 * depends on its encodings, not the other way round) */
size_t qk_pq_put_uleb128(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static size_t put_zigzag(uint8_t *out, int64_t v)
{
    return qk_pq_put_uleb128(out, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static int bits_needed(uint64_t v)
{
    int bw = 0;
    while (bw < 64 && (v >> bw) != 0)
        bw++;
    return bw;
}

/* Packs count values of bw bits LSB-first into padded values (the rest
 * zeros): padded * bw / 8 bytes. */
static size_t pack_bits(const uint64_t *v, size_t count, size_t padded, int bw,
                        uint8_t *out)
{
    size_t bytes = padded * (size_t)bw / 8;
    memset(out, 0, bytes);
    for (size_t i = 0; i < count; i++)
        for (int b = 0; b < bw; b++)
            if ((v[i] >> b) & 1) {
                size_t bit = i * (size_t)bw + (size_t)b;
                out[bit >> 3] |= (uint8_t)(1u << (bit & 7));
            }
    return bytes;
}

size_t qk_pq_delta_bound(size_t n, int block_size, int miniblocks)
{
    size_t blocks = n / (size_t)block_size + 1;
    return 40 + blocks * (10 + (size_t)miniblocks + (size_t)block_size * 8);
}

/* The delta of b after a, as the writer of the given width takes it. */
static int64_t delta_of(int64_t a, int64_t b, int value_bits)
{
    uint64_t d = (uint64_t)b - (uint64_t)a;
    return value_bits == 32 ? (int64_t)(int32_t)(uint32_t)d : (int64_t)d;
}

/* One block of k deltas (k <= block_size) after values[first - 1]. */
static size_t put_block(const int64_t *values, size_t first, size_t k,
                        int value_bits, int block_size, int miniblocks,
                        uint64_t *scratch, uint8_t *out)
{
    int64_t min = INT64_MAX;
    for (size_t j = 0; j < k; j++) {
        int64_t d = delta_of(values[first + j - 1], values[first + j],
                             value_bits);
        min = d < min ? d : min;
    }
    size_t o = put_zigzag(out, min);
    uint8_t *widths = out + o;
    o += (size_t)miniblocks;
    size_t per_mini = (size_t)(block_size / miniblocks);
    for (int m = 0; m < miniblocks; m++) {
        size_t start = (size_t)m * per_mini;
        widths[m] = 0; /* miniblocks past the values take no bytes */
        if (start >= k)
            continue;
        size_t count = k - start < per_mini ? k - start : per_mini;
        uint64_t max = 0;
        for (size_t j = 0; j < count; j++) {
            size_t at = first + start + j;
            uint64_t u = (uint64_t)delta_of(values[at - 1], values[at],
                                            value_bits) -
                         (uint64_t)min;
            scratch[j] = value_bits == 32 ? (uint32_t)u : u;
            max = scratch[j] > max ? scratch[j] : max;
        }
        int bw = bits_needed(max);
        widths[m] = (uint8_t)bw;
        o += pack_bits(scratch, count, per_mini, bw, out + o);
    }
    return o;
}

size_t qk_pq_delta_encode(const int64_t *values, size_t n, int value_bits,
                          int block_size, int miniblocks, uint8_t *out)
{
    size_t o = qk_pq_put_uleb128(out, (uint64_t)block_size);
    o += qk_pq_put_uleb128(out + o, (uint64_t)miniblocks);
    o += qk_pq_put_uleb128(out + o, n);
    int64_t first = n > 0 ? values[0] : 0;
    if (value_bits == 32)
        first = (int32_t)first;
    o += put_zigzag(out + o, first);
    uint64_t *scratch = qk_malloc((size_t)block_size * sizeof *scratch);
    for (size_t i = 1; i < n; i += (size_t)block_size) {
        size_t k = n - i < (size_t)block_size ? n - i : (size_t)block_size;
        o += put_block(values, i, k, value_bits, block_size, miniblocks,
                       scratch, out + o);
    }
    free(scratch);
    return o;
}

void qk_pq_byte_stream_split_encode(const void *values, size_t n, int width,
                                    uint8_t *out)
{
    const uint8_t *in = values;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < width; k++)
            out[(size_t)k * n + i] = in[i * (size_t)width + (size_t)k];
}

size_t qk_pq_byte_array_bound(size_t n, size_t data_len)
{
    return 2 * qk_pq_delta_bound(n, 128, 4) + data_len;
}

/* Lengths as DELTA_BINARY_PACKED, then the bytes of every value. */
static size_t put_length_byte_array(const uint8_t *data, const int64_t *offsets,
                                    const int64_t *starts, size_t n,
                                    uint8_t *out)
{
    int64_t *lengths = qk_calloc(n ? n : 1, sizeof *lengths);
    for (size_t i = 0; i < n; i++)
        lengths[i] = offsets[i + 1] - starts[i];
    size_t o = qk_pq_delta_encode(lengths, n, 32, 128, 4, out);
    for (size_t i = 0; i < n; i++) {
        memcpy(out + o, data + starts[i], (size_t)lengths[i]);
        o += (size_t)lengths[i];
    }
    free(lengths);
    return o;
}

size_t qk_pq_delta_length_byte_array_encode(const uint8_t *data,
                                            const int64_t *offsets, size_t n,
                                            uint8_t *out)
{
    return put_length_byte_array(data, offsets, offsets, n, out);
}

size_t qk_pq_delta_byte_array_encode(const uint8_t *data,
                                     const int64_t *offsets, size_t n,
                                     uint8_t *out)
{
    int64_t *prefix = qk_calloc(n ? n : 1, sizeof *prefix);
    int64_t *suffix_start = qk_calloc(n ? n : 1, sizeof *suffix_start);
    for (size_t i = 0; i < n; i++) {
        int64_t p = 0;
        if (i > 0) {
            int64_t prev_len = offsets[i] - offsets[i - 1];
            int64_t len = offsets[i + 1] - offsets[i];
            while (p < prev_len && p < len &&
                   data[offsets[i - 1] + p] == data[offsets[i] + p])
                p++;
        }
        prefix[i] = p;
        suffix_start[i] = offsets[i] + p;
    }
    size_t o = qk_pq_delta_encode(prefix, n, 32, 128, 4, out);
    o += put_length_byte_array(data, offsets, suffix_start, n, out + o);
    free(prefix);
    free(suffix_start);
    return o;
}
