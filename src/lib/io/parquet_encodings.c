/* The value encodings of Parquet format 2 that other writers choose when
 * a dictionary does not pay (DuckDB with PARQUET_VERSION V2, pyarrow with
 * column_encoding or use_byte_stream_split):
 *
 * - DELTA_BINARY_PACKED (INT32, INT64): a header of ULEB128 varints
 *   (block size, miniblocks per block, value count) and the zigzag first
 *   value; then blocks of a zigzag minimum delta, one bit-width byte per
 *   miniblock and the miniblocks' (delta - minimum) values bit-packed
 *   LSB-first.  Arithmetic wraps at the width of the type.
 * - DELTA_LENGTH_BYTE_ARRAY: the lengths as DELTA_BINARY_PACKED, then the
 *   bytes of all values back to back.
 * - DELTA_BYTE_ARRAY: prefix lengths (shared with the previous value) as
 *   DELTA_BINARY_PACKED, then the suffixes as DELTA_LENGTH_BYTE_ARRAY.
 * - BYTE_STREAM_SPLIT: byte k of every value in stream k, the streams
 *   back to back. */
#include "parquet_internal.h"

#include <stdlib.h>
#include <string.h>

/* Limits that keep a corrupt header from asking for absurd work. */
#define DELTA_MAX_BLOCK_SIZE (UINT64_C(1) << 20)
#define DELTA_MAX_BYTE_ARRAY_DATA (UINT64_C(1) << 31)

/* ---- DELTA_BINARY_PACKED ---- */

typedef struct delta_input {
    const uint8_t *pos;
    const uint8_t *end;
} delta_input;

static int read_uleb(delta_input *in, uint64_t *value, qk_err *err)
{
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        if (in->pos >= in->end)
            return qk_fail(err, "DELTA_BINARY_PACKED data ends inside a "
                                "varint");
        if (shift > 63)
            return qk_fail(err, "DELTA_BINARY_PACKED varint longer than 10 "
                                "bytes");
        uint8_t b = *in->pos++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    *value = v;
    return 0;
}

static int read_zigzag(delta_input *in, uint64_t *value, qk_err *err)
{
    uint64_t u;
    if (read_uleb(in, &u, err) != 0)
        return -1;
    *value = (u >> 1) ^ (0 - (u & 1)); /* the two's complement bits */
    return 0;
}

/* bw (1..64) bits starting at bit `bit` of p, LSB-first; reads only the
 * bytes that hold them. */
static uint64_t read_bits(const uint8_t *p, uint64_t bit, int bw)
{
    const uint8_t *q = p + (bit >> 3);
    int skip = (int)(bit & 7);
    uint64_t v = (uint64_t)(*q++ >> skip);
    int got = 8 - skip;
    while (got < bw) {
        v |= (uint64_t)*q++ << got;
        got += 8;
    }
    return bw == 64 ? v : v & ((UINT64_C(1) << bw) - 1);
}

static void store_value(void *out, int width, int64_t i, uint64_t v)
{
    if (width == 4) {
        uint32_t u = (uint32_t)v;
        memcpy((uint8_t *)out + 4 * i, &u, 4);
    } else {
        memcpy((uint8_t *)out + 8 * i, &v, 8);
    }
}

/* One miniblock: n deltas of bw bits added to *value and stored from
 * out[done] on.  The miniblock occupies `bytes` bytes; only the bytes of
 * the n values must be present (the padding of a last miniblock may be
 * cut short).  *value carries the running value across miniblocks. */
static int decode_miniblock(delta_input *in, int bw, uint64_t bytes,
                            int64_t n, uint64_t min_delta, uint64_t *value,
                            void *out, int width, int64_t done, qk_err *err)
{
    size_t avail = (size_t)(in->end - in->pos);
    if (((uint64_t)n * (uint64_t)bw + 7) / 8 > avail)
        return qk_fail(err, "DELTA_BINARY_PACKED miniblock runs past the "
                            "data");
    uint64_t v = *value;
    if (bw == 0) {
        for (int64_t i = 0; i < n; i++) {
            v += min_delta;
            store_value(out, width, done + i, v);
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            v += min_delta + read_bits(in->pos, (uint64_t)i * (uint64_t)bw, bw);
            store_value(out, width, done + i, v);
        }
    }
    *value = v;
    in->pos += bytes < avail ? bytes : avail;
    return 0;
}

/* Decodes exactly count values (4 or 8 bytes wide) and leaves in->pos
 * after the stream. */
static int delta_decode(delta_input *in, int width, void *out, int64_t count,
                        qk_err *err)
{
    uint64_t block_size, nmini, total, value;
    if (read_uleb(in, &block_size, err) != 0 ||
        read_uleb(in, &nmini, err) != 0 || read_uleb(in, &total, err) != 0 ||
        read_zigzag(in, &value, err) != 0)
        return -1;
    if (block_size == 0 || block_size % 128 != 0 ||
        block_size > DELTA_MAX_BLOCK_SIZE || nmini == 0 ||
        block_size % nmini != 0 || (block_size / nmini) % 32 != 0)
        return qk_fail(err,
                       "bad DELTA_BINARY_PACKED header (block size %llu, "
                       "%llu miniblocks)",
                       (unsigned long long)block_size,
                       (unsigned long long)nmini);
    if (total != (uint64_t)count)
        return qk_fail(err,
                       "DELTA_BINARY_PACKED data holds %llu values, the "
                       "page %lld",
                       (unsigned long long)total, (long long)count);
    if (count == 0)
        return 0;
    uint64_t per_mini = block_size / nmini;
    store_value(out, width, 0, value);
    int64_t done = 1;
    while (done < count) {
        uint64_t min_delta;
        if (read_zigzag(in, &min_delta, err) != 0)
            return -1;
        if ((uint64_t)(in->end - in->pos) < nmini)
            return qk_fail(err, "DELTA_BINARY_PACKED block lacks its bit "
                                "widths");
        const uint8_t *widths = in->pos;
        in->pos += nmini;
        /* Miniblocks the last values do not reach take no bytes. */
        for (uint64_t m = 0; m < nmini && done < count; m++) {
            int bw = widths[m];
            if (bw > 8 * width)
                return qk_fail(err,
                               "DELTA_BINARY_PACKED bit width %d over %d",
                               bw, 8 * width);
            int64_t n = count - done < (int64_t)per_mini ? count - done
                                                         : (int64_t)per_mini;
            if (decode_miniblock(in, bw, per_mini * (uint64_t)bw / 8, n,
                                 min_delta, &value, out, width, done,
                                 err) != 0)
                return -1;
            done += n;
        }
    }
    return 0;
}

/* INT32 streams may carry widths up to 64: a writer that takes the
 * deltas of 32-bit values in 64 bits (DuckDB) needs 33 bits for the
 * widest ones.  The low 32 bits of the 64-bit sums are the values. */
static int delta_decode_i32(delta_input *in, int32_t *out, int64_t count,
                            qk_err *err)
{
    if (count <= 0)
        return delta_decode(in, 4, out, count, err);
    /* Decoded 8 bytes wide into a scratch copy, then narrowed. */
    int64_t *wide = malloc((size_t)count * sizeof *wide);
    if (!wide)
        return qk_fail(err, "out of memory for %lld values",
                       (long long)count);
    int rc = delta_decode(in, 8, wide, count, err);
    for (int64_t i = 0; rc == 0 && i < count; i++)
        out[i] = (int32_t)(uint32_t)(uint64_t)wide[i];
    free(wide);
    return rc;
}

int qk_pq_delta_decode_i32(const uint8_t *data, size_t len, int32_t *out,
                           int64_t count, size_t *consumed, qk_err *err)
{
    delta_input in = {data, data + len};
    if (delta_decode_i32(&in, out, count, err) != 0)
        return -1;
    if (consumed)
        *consumed = (size_t)(in.pos - data);
    return 0;
}

int qk_pq_delta_decode_i64(const uint8_t *data, size_t len, int64_t *out,
                           int64_t count, size_t *consumed, qk_err *err)
{
    delta_input in = {data, data + len};
    if (delta_decode(&in, 8, out, count, err) != 0)
        return -1;
    if (consumed)
        *consumed = (size_t)(in.pos - data);
    return 0;
}

/* ---- BYTE_STREAM_SPLIT ---- */

int qk_pq_byte_stream_split_decode(const uint8_t *data, size_t len, int width,
                                   void *out, int64_t count, qk_err *err)
{
    if (width < 1 || width > 16)
        return qk_fail(err, "BYTE_STREAM_SPLIT value width %d", width);
    if (len % (size_t)width != 0)
        return qk_fail(err,
                       "BYTE_STREAM_SPLIT data of %zu bytes is not a "
                       "multiple of the value width %d",
                       len, width);
    /* Each stream holds one byte of every value of the page. */
    size_t stride = len / (size_t)width;
    if (count < 0 || (uint64_t)count > stride)
        return qk_fail(err,
                       "BYTE_STREAM_SPLIT data holds %zu values, the page "
                       "%lld",
                       stride, (long long)count);
    uint8_t *dst = out;
    if (width == 4) {
        const uint8_t *s0 = data, *s1 = data + stride, *s2 = s1 + stride,
                      *s3 = s2 + stride;
        for (int64_t i = 0; i < count; i++) {
            dst[4 * i] = s0[i];
            dst[4 * i + 1] = s1[i];
            dst[4 * i + 2] = s2[i];
            dst[4 * i + 3] = s3[i];
        }
        return 0;
    }
    for (int64_t i = 0; i < count; i++)
        for (int k = 0; k < width; k++)
            dst[(size_t)i * (size_t)width + (size_t)k] =
                data[(size_t)k * stride + (size_t)i];
    return 0;
}

/* ---- DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY ---- */

void qk_pq_byte_arrays_free(qk_pq_byte_arrays *a)
{
    if (!a)
        return;
    free(a->data);
    free(a->offsets);
    memset(a, 0, sizeof *a);
}

/* Lengths of count values from a DELTA_BINARY_PACKED stream, checked to
 * be non-negative; what sets `what` apart in messages. */
static int32_t *decode_lengths(delta_input *in, int64_t count,
                               const char *what, qk_err *err)
{
    int32_t *lengths = malloc(count > 0 ? (size_t)count * sizeof *lengths : 1);
    if (!lengths) {
        qk_fail(err, "out of memory for %lld lengths", (long long)count);
        return NULL;
    }
    if (delta_decode_i32(in, lengths, count, err) != 0) {
        free(lengths);
        return NULL;
    }
    for (int64_t i = 0; i < count; i++) {
        if (lengths[i] < 0) {
            qk_fail(err, "negative %s %d of value %lld", what, lengths[i],
                    (long long)i);
            free(lengths);
            return NULL;
        }
    }
    return lengths;
}

static int alloc_byte_arrays(qk_pq_byte_arrays *a, int64_t count,
                             uint64_t bytes, qk_err *err)
{
    a->count = count;
    a->offsets = malloc(((size_t)count + 1) * sizeof *a->offsets);
    a->data = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (!a->offsets || !a->data) {
        qk_pq_byte_arrays_free(a);
        return qk_fail(err, "out of memory for %lld byte arrays",
                       (long long)count);
    }
    return 0;
}

/* The suffixes (or whole values) of a DELTA_LENGTH_BYTE_ARRAY stream:
 * *lengths_out and *bytes_out point into the input, *total gets the sum. */
static int split_length_byte_array(delta_input *in, int64_t count,
                                   int32_t **lengths_out,
                                   const uint8_t **bytes_out, uint64_t *total,
                                   qk_err *err)
{
    int32_t *lengths = decode_lengths(in, count, "length", err);
    if (!lengths)
        return -1;
    uint64_t sum = 0;
    for (int64_t i = 0; i < count; i++)
        sum += (uint64_t)lengths[i];
    if (sum > (uint64_t)(in->end - in->pos)) {
        free(lengths);
        return qk_fail(err,
                       "DELTA_LENGTH_BYTE_ARRAY lengths add up to %llu "
                       "bytes, %zu follow them",
                       (unsigned long long)sum, (size_t)(in->end - in->pos));
    }
    *lengths_out = lengths;
    *bytes_out = in->pos;
    *total = sum;
    in->pos += sum;
    return 0;
}

int qk_pq_delta_length_byte_array_decode(const uint8_t *data, size_t len,
                                         int64_t count, qk_pq_byte_arrays *out,
                                         qk_err *err)
{
    memset(out, 0, sizeof *out);
    if (count < 0)
        return qk_fail(err, "negative value count %lld", (long long)count);
    delta_input in = {data, data + len};
    int32_t *lengths;
    const uint8_t *bytes;
    uint64_t total;
    if (split_length_byte_array(&in, count, &lengths, &bytes, &total, err) !=
        0)
        return -1;
    int rc = alloc_byte_arrays(out, count, total, err);
    if (rc == 0) {
        if (total > 0)
            memcpy(out->data, bytes, (size_t)total);
        out->offsets[0] = 0;
        for (int64_t i = 0; i < count; i++)
            out->offsets[i + 1] = out->offsets[i] + lengths[i];
    }
    free(lengths);
    return rc;
}

/* Total size of the values a DELTA_BYTE_ARRAY stream rebuilds, checking
 * that every prefix fits the value before it. */
static int rebuilt_size(const int32_t *prefix, const int32_t *suffix,
                        int64_t count, uint64_t *total, qk_err *err)
{
    uint64_t sum = 0, prev = 0;
    for (int64_t i = 0; i < count; i++) {
        if ((uint64_t)prefix[i] > prev)
            return qk_fail(err,
                           "DELTA_BYTE_ARRAY prefix of %d bytes for value "
                           "%lld, the value before it has %llu",
                           prefix[i], (long long)i, (unsigned long long)prev);
        prev = (uint64_t)prefix[i] + (uint64_t)suffix[i];
        sum += prev;
        if (sum > DELTA_MAX_BYTE_ARRAY_DATA)
            return qk_fail(err, "DELTA_BYTE_ARRAY values exceed %llu bytes",
                           (unsigned long long)DELTA_MAX_BYTE_ARRAY_DATA);
    }
    *total = sum;
    return 0;
}

int qk_pq_delta_byte_array_decode(const uint8_t *data, size_t len,
                                  int64_t count, qk_pq_byte_arrays *out,
                                  qk_err *err)
{
    memset(out, 0, sizeof *out);
    if (count < 0)
        return qk_fail(err, "negative value count %lld", (long long)count);
    delta_input in = {data, data + len};
    int32_t *prefix = decode_lengths(&in, count, "prefix length", err);
    if (!prefix)
        return -1;
    int32_t *suffix = NULL;
    const uint8_t *bytes;
    uint64_t suffix_total, total = 0;
    int rc = split_length_byte_array(&in, count, &suffix, &bytes,
                                     &suffix_total, err);
    if (rc == 0)
        rc = rebuilt_size(prefix, suffix, count, &total, err);
    if (rc == 0)
        rc = alloc_byte_arrays(out, count, total, err);
    if (rc == 0) {
        int64_t at = 0; /* write position; the previous value ends here */
        out->offsets[0] = 0;
        for (int64_t i = 0; i < count; i++) {
            int64_t prev_start = i > 0 ? out->offsets[i - 1] : 0;
            memmove(out->data + at, out->data + prev_start, (size_t)prefix[i]);
            memcpy(out->data + at + prefix[i], bytes, (size_t)suffix[i]);
            bytes += suffix[i];
            at += prefix[i] + suffix[i];
            out->offsets[i + 1] = at;
        }
    }
    free(prefix);
    free(suffix);
    return rc;
}
