/* The RLE/bit-packed hybrid encoding of Parquet levels and dictionary
 * indices.  A stream is a sequence of runs, each starting with a varint
 * header h: if h & 1, (h >> 1) groups of 8 values bit-packed LSB-first at
 * bit_width bits each; otherwise h >> 1 copies of one value stored in
 * ceil(bit_width / 8) little-endian bytes. */
#include "parquet_internal.h"

#include <string.h>

int pq_bit_width(uint32_t max_value)
{
    int width = 0;
    while (width < 32 && (max_value >> width) != 0)
        width++;
    return width;
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Unpacks ngroups groups of 8 values.  Each value is one unaligned 64-bit
 * load, shift and mask, so the input must have bw + 8 readable bytes past
 * the start of the last group.  Instantiated below for every constant
 * width so the compiler can fold the shifts. */
static inline __attribute__((always_inline)) void
unpack_groups(const uint8_t *in, int64_t ngroups, const int bw, uint32_t *out)
{
    const uint64_t mask = bw == 32 ? 0xffffffffu : (1ull << bw) - 1;
    for (int64_t g = 0; g < ngroups; g++, in += bw, out += 8) {
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            const int bit = i * bw;
            out[i] = (uint32_t)((load_le64(in + (bit >> 3)) >> (bit & 7)) &
                                mask);
        }
    }
}

typedef void (*unpack_fn)(const uint8_t *in, int64_t ngroups, uint32_t *out);

static void unpack_0(const uint8_t *in, int64_t ngroups, uint32_t *out)
{
    (void)in;
    memset(out, 0, (size_t)ngroups * 8 * sizeof *out);
}

#define DEFINE_UNPACK(B)                                                       \
    static void unpack_##B(const uint8_t *in, int64_t ngroups, uint32_t *out)  \
    {                                                                          \
        unpack_groups(in, ngroups, B, out);                                    \
    }
DEFINE_UNPACK(1) DEFINE_UNPACK(2) DEFINE_UNPACK(3) DEFINE_UNPACK(4)
DEFINE_UNPACK(5) DEFINE_UNPACK(6) DEFINE_UNPACK(7) DEFINE_UNPACK(8)
DEFINE_UNPACK(9) DEFINE_UNPACK(10) DEFINE_UNPACK(11) DEFINE_UNPACK(12)
DEFINE_UNPACK(13) DEFINE_UNPACK(14) DEFINE_UNPACK(15) DEFINE_UNPACK(16)
DEFINE_UNPACK(17) DEFINE_UNPACK(18) DEFINE_UNPACK(19) DEFINE_UNPACK(20)
DEFINE_UNPACK(21) DEFINE_UNPACK(22) DEFINE_UNPACK(23) DEFINE_UNPACK(24)
DEFINE_UNPACK(25) DEFINE_UNPACK(26) DEFINE_UNPACK(27) DEFINE_UNPACK(28)
DEFINE_UNPACK(29) DEFINE_UNPACK(30) DEFINE_UNPACK(31) DEFINE_UNPACK(32)

static const unpack_fn unpackers[33] = {
    unpack_0,  unpack_1,  unpack_2,  unpack_3,  unpack_4,  unpack_5,
    unpack_6,  unpack_7,  unpack_8,  unpack_9,  unpack_10, unpack_11,
    unpack_12, unpack_13, unpack_14, unpack_15, unpack_16, unpack_17,
    unpack_18, unpack_19, unpack_20, unpack_21, unpack_22, unpack_23,
    unpack_24, unpack_25, unpack_26, unpack_27, unpack_28, unpack_29,
    unpack_30, unpack_31, unpack_32};

/* Unpacks groups of dictionary indices and writes the dictionary values
 * they select straight to out (4 bytes each), without an index buffer.
 * The dictionary must have 2^bw entries (padded); returns the largest
 * index seen so the caller can check it against the real size. */
static inline __attribute__((always_inline)) uint32_t
gather_groups(const uint8_t *in, int64_t ngroups, const int bw,
              const uint32_t *dict, uint8_t *out)
{
    const uint64_t mask = bw == 32 ? 0xffffffffu : (1ull << bw) - 1;
    uint32_t max_index = 0;
    for (int64_t g = 0; g < ngroups; g++, in += bw, out += 32) {
        uint32_t j[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            const int bit = i * bw;
            j[i] = (uint32_t)((load_le64(in + (bit >> 3)) >> (bit & 7)) &
                              mask);
            memcpy(out + 4 * i, &dict[j[i]], 4);
        }
        /* A tree of maxima keeps the dependency chain short. */
        uint32_t m01 = MAX(j[0], j[1]), m23 = MAX(j[2], j[3]);
        uint32_t m45 = MAX(j[4], j[5]), m67 = MAX(j[6], j[7]);
        uint32_t m = MAX(MAX(m01, m23), MAX(m45, m67));
        max_index = MAX(max_index, m);
    }
    return max_index;
}

typedef uint32_t (*gather_fn)(const uint8_t *in, int64_t ngroups,
                              const uint32_t *dict, uint8_t *out);

#define DEFINE_GATHER(B)                                                       \
    static uint32_t gather_##B(const uint8_t *in, int64_t ngroups,             \
                               const uint32_t *dict, uint8_t *out)             \
    {                                                                          \
        return gather_groups(in, ngroups, B, dict, out);                       \
    }
DEFINE_GATHER(1) DEFINE_GATHER(2) DEFINE_GATHER(3) DEFINE_GATHER(4)
DEFINE_GATHER(5) DEFINE_GATHER(6) DEFINE_GATHER(7) DEFINE_GATHER(8)
DEFINE_GATHER(9) DEFINE_GATHER(10) DEFINE_GATHER(11) DEFINE_GATHER(12)
DEFINE_GATHER(13) DEFINE_GATHER(14) DEFINE_GATHER(15) DEFINE_GATHER(16)
DEFINE_GATHER(17) DEFINE_GATHER(18)

static const gather_fn gatherers[PQ_GATHER_MAX_WIDTH + 1] = {
    NULL,      gather_1,  gather_2,  gather_3,  gather_4,  gather_5,
    gather_6,  gather_7,  gather_8,  gather_9,  gather_10, gather_11,
    gather_12, gather_13, gather_14, gather_15, gather_16, gather_17,
    gather_18};

uint32_t pq_gather_groups(int bit_width, const uint8_t *packed,
                          int64_t ngroups, const uint32_t *dict, void *out)
{
    return gatherers[bit_width](packed, ngroups, dict, out);
}

int pq_hybrid_init(pq_hybrid *h, const uint8_t *data, size_t len,
                   int bit_width, qk_err *err)
{
    if (bit_width < 0 || bit_width > 32)
        return qk_fail(err, "bit width %d over 32", bit_width);
    h->pos = data;
    h->end = data + len;
    h->bit_width = bit_width;
    h->rle_left = 0;
    h->rle_value = 0;
    h->packed = NULL;
    h->packed_left = 0;
    h->block_pos = h->block_len = 0;
    return 0;
}

/* Reads a run header; returns 1, 0 at the end of the stream, or -1. */
static int read_run(pq_hybrid *h, qk_err *err)
{
    if (h->pos >= h->end)
        return 0;
    uint64_t header = 0;
    int shift = 0;
    for (;;) {
        if (h->pos >= h->end || shift > 35)
            return qk_fail(err, "corrupt RLE/bit-packed run header");
        uint8_t b = *h->pos++;
        header |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            break;
    }
    size_t avail = (size_t)(h->end - h->pos);
    int bw = h->bit_width;
    if (header & 1) {
        /* A writer may cut the padding of the last run short, so a run
         * longer than the stream keeps the values that fit. */
        uint64_t groups = header >> 1;
        uint64_t bytes = groups * (uint64_t)bw;
        uint64_t values = groups * 8;
        if (bytes > avail) {
            bytes = avail;
            values = (uint64_t)avail * 8 / (uint64_t)bw;
        }
        h->packed = h->pos;
        h->packed_left = (int64_t)values;
        h->pos += bytes;
    } else {
        size_t nbytes = ((size_t)bw + 7) / 8;
        if (nbytes > avail)
            return qk_fail(err, "truncated RLE run");
        uint32_t value = 0;
        for (size_t i = 0; i < nbytes; i++)
            value |= (uint32_t)h->pos[i] << (8 * i);
        h->pos += nbytes;
        h->rle_value = value;
        h->rle_left = (int64_t)(header >> 1);
    }
    return 1;
}

/* Unpacks the next block of the current bit-packed run into h->block. */
static void unpack_block(pq_hybrid *h)
{
    int bw = h->bit_width;
    int64_t groups = (h->packed_left + 7) / 8;
    if (groups > PQ_HYBRID_BLOCK / 8)
        groups = PQ_HYBRID_BLOCK / 8;
    /* Groups far enough from the end of the stream are unpacked in place;
     * the rest through a zero-padded copy. */
    size_t avail = (size_t)(h->end - h->packed);
    int64_t fast = 0;
    if (bw == 0)
        fast = groups;
    else if (avail >= (size_t)bw + 8)
        fast = (int64_t)((avail - 8) / (size_t)bw);
    if (fast > groups)
        fast = groups;
    unpackers[bw](h->packed, fast, h->block);
    for (int64_t g = fast; g < groups; g++) {
        uint8_t tmp[32 + 8] = {0};
        size_t offset = (size_t)g * (size_t)bw;
        size_t n = avail > offset ? avail - offset : 0;
        if (n > 0)
            memcpy(tmp, h->packed + offset, n < (size_t)bw ? n : (size_t)bw);
        unpackers[bw](tmp, 1, h->block + 8 * g);
    }
    int64_t produced = groups * 8;
    if (produced > h->packed_left)
        produced = h->packed_left;
    h->packed += (size_t)groups * (size_t)bw;
    h->packed_left -= produced;
    h->block_pos = 0;
    h->block_len = (int)produced;
}

int64_t pq_hybrid_take_groups(pq_hybrid *h, int64_t max_groups,
                              const uint8_t **packed, qk_err *err)
{
    if (h->block_pos < h->block_len || h->rle_left > 0 || max_groups <= 0)
        return 0;
    if (h->packed_left == 0) {
        int r = read_run(h, err);
        if (r <= 0)
            return r;
    }
    int bw = h->bit_width;
    size_t avail = (size_t)(h->end - h->packed);
    if (bw == 0 || h->packed_left < 8 || avail < (size_t)bw + 8)
        return 0;
    int64_t groups = (int64_t)((avail - 8) / (size_t)bw);
    if (groups > h->packed_left / 8)
        groups = h->packed_left / 8;
    if (groups > max_groups)
        groups = max_groups;
    *packed = h->packed;
    h->packed += (size_t)groups * (size_t)bw;
    h->packed_left -= groups * 8;
    return groups;
}

int64_t pq_hybrid_next(pq_hybrid *h, int64_t want, const uint32_t **values,
                       uint32_t *rle_value, qk_err *err)
{
    for (;;) {
        if (h->block_pos < h->block_len) {
            int64_t k = h->block_len - h->block_pos;
            if (k > want)
                k = want;
            *values = h->block + h->block_pos;
            h->block_pos += (int)k;
            return k;
        }
        if (h->rle_left > 0) {
            int64_t k = h->rle_left < want ? h->rle_left : want;
            h->rle_left -= k;
            *values = NULL;
            *rle_value = h->rle_value;
            return k;
        }
        if (h->packed_left > 0) {
            unpack_block(h);
            continue;
        }
        int r = read_run(h, err);
        if (r <= 0)
            return r;
    }
}

int qk_pq_hybrid_decode(const uint8_t *data, size_t len, int bit_width,
                        uint32_t *out, int64_t count, qk_err *err)
{
    pq_hybrid h;
    if (pq_hybrid_init(&h, data, len, bit_width, err) != 0)
        return -1;
    int64_t done = 0;
    while (done < count) {
        const uint32_t *values;
        uint32_t value;
        int64_t k = pq_hybrid_next(&h, count - done, &values, &value, err);
        if (k < 0)
            return -1;
        if (k == 0)
            return qk_fail(err, "RLE/bit-packed data ends after %lld of "
                                "%lld values",
                           (long long)done, (long long)count);
        if (values)
            memcpy(out + done, values, (size_t)k * sizeof *out);
        else
            for (int64_t i = 0; i < k; i++)
                out[done + i] = value;
        done += k;
    }
    return 0;
}
