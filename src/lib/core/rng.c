/* Random numbers: xoshiro256** keyed streams for the synthetic data, and a
 * replay of CPython's Mersenne Twister and random.sample for the capture
 * tool's head selection. */
#include "qk/rng.h"

#include "qk/common.h"

#include <math.h>
#include <stdlib.h>

/* ---- xoshiro256** seeded through SplitMix64 --------------------------- */

static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void qk_rng_seed(qk_rng *r, const uint64_t *keys, int nkeys)
{
    /* Fold the keys one at a time through the SplitMix64 output function,
     * so (1, 2) and (2, 1) and (1, 2, 0) all give different states. */
    uint64_t h = 0x243F6A8885A308D3ULL ^ (uint64_t)nkeys;
    for (int i = 0; i < nkeys; i++) {
        uint64_t mix = h ^ keys[i];
        h = splitmix64_next(&mix);
    }
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64_next(&h);
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0)
        r->s[0] = 1; /* the all-zero state is the one fixed point */
    r->has_spare = 0;
    r->spare = 0.0;
}

uint64_t qk_rng_u64(qk_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

double qk_rng_uniform(qk_rng *r)
{
    return (double)(qk_rng_u64(r) >> 11) * 0x1.0p-53;
}

uint64_t qk_rng_below(qk_rng *r, uint64_t n)
{
    if (n <= 1)
        return 0;
    /* Reject the lowest 2^64 mod n values so every residue is equally
     * likely. */
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t x = qk_rng_u64(r);
        if (x >= threshold)
            return x % n;
    }
}

double qk_rng_normal(qk_rng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u, v, s;
    do {
        u = 2.0 * qk_rng_uniform(r) - 1.0;
        v = 2.0 * qk_rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double f = sqrt(-2.0 * log(s) / s);
    r->spare = v * f;
    r->has_spare = 1;
    return u * f;
}

/* ---- MT19937 as in CPython's _randommodule.c --------------------------- */

#define MT_N 624
#define MT_M 397

static void mt_init_genrand(qk_mt *m, uint32_t s)
{
    m->mt[0] = s;
    for (int i = 1; i < MT_N; i++)
        m->mt[i] = 1812433253U * (m->mt[i - 1] ^ (m->mt[i - 1] >> 30)) + (uint32_t)i;
    m->index = MT_N;
}

static void mt_init_by_array(qk_mt *m, const uint32_t *key, int key_length)
{
    mt_init_genrand(m, 19650218U);
    int i = 1, j = 0;
    for (int k = MT_N > key_length ? MT_N : key_length; k; k--) {
        m->mt[i] = (m->mt[i] ^ ((m->mt[i - 1] ^ (m->mt[i - 1] >> 30)) * 1664525U))
                   + key[j] + (uint32_t)j;
        i++;
        j++;
        if (i >= MT_N) {
            m->mt[0] = m->mt[MT_N - 1];
            i = 1;
        }
        if (j >= key_length)
            j = 0;
    }
    for (int k = MT_N - 1; k; k--) {
        m->mt[i] = (m->mt[i] ^ ((m->mt[i - 1] ^ (m->mt[i - 1] >> 30)) * 1566083941U))
                   - (uint32_t)i;
        i++;
        if (i >= MT_N) {
            m->mt[0] = m->mt[MT_N - 1];
            i = 1;
        }
    }
    m->mt[0] = 0x80000000U; /* MSB is 1, assuring a non-zero initial array */
    m->index = MT_N;
}

void qk_mt_seed_python(qk_mt *m, uint32_t seed)
{
    /* random.seed(n) for a non-negative int n < 2^32 uses the key [n];
     * n = 0 gives the key [0], not an empty key. */
    uint32_t key[1] = {seed};
    mt_init_by_array(m, key, 1);
}

static void mt_regenerate(qk_mt *m)
{
    static const uint32_t mag01[2] = {0U, 0x9908B0DFU};
    uint32_t *mt = m->mt;
    int kk;
    uint32_t y;
    for (kk = 0; kk < MT_N - MT_M; kk++) {
        y = (mt[kk] & 0x80000000U) | (mt[kk + 1] & 0x7FFFFFFFU);
        mt[kk] = mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1U];
    }
    for (; kk < MT_N - 1; kk++) {
        y = (mt[kk] & 0x80000000U) | (mt[kk + 1] & 0x7FFFFFFFU);
        mt[kk] = mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1U];
    }
    y = (mt[MT_N - 1] & 0x80000000U) | (mt[0] & 0x7FFFFFFFU);
    mt[MT_N - 1] = mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1U];
    m->index = 0;
}

uint32_t qk_mt_u32(qk_mt *m)
{
    if (m->index >= MT_N)
        mt_regenerate(m);
    uint32_t y = m->mt[m->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9D2C5680U;
    y ^= (y << 15) & 0xEFC60000U;
    y ^= (y >> 18);
    return y;
}

/* ---- random.sample(range(n), k) ---------------------------------------- */

static int bit_length(uint32_t n)
{
    int k = 0;
    while (n) {
        k++;
        n >>= 1;
    }
    return k;
}

/* Random._randbelow_with_getrandbits: getrandbits(bit_length(n)) until the
 * draw is below n.  getrandbits(k) for k <= 32 is one output >> (32 - k). */
static uint32_t python_randbelow(qk_mt *m, uint32_t n)
{
    int k = bit_length(n);
    if (k == 0)
        return 0;
    uint32_t r;
    do {
        r = qk_mt_u32(m) >> (32 - k);
    } while (r >= n);
    return r;
}

/* Random.sample's switch between its two methods: the pool method when the
 * population is no larger than a set of k picks would be. CPython computes
 * the exponent with floating-point logarithms; so do we. */
static long python_sample_setsize(int k)
{
    long setsize = 21;
    if (k > 5)
        setsize += lround(pow(4.0, ceil(log(3.0 * k) / log(4.0))));
    return setsize;
}

static void sample_by_pool(qk_mt *m, int n, int k, int *picks)
{
    int *pool = qk_malloc((size_t)n * sizeof *pool);
    for (int i = 0; i < n; i++)
        pool[i] = i;
    for (int i = 0; i < k; i++) {
        uint32_t j = python_randbelow(m, (uint32_t)(n - i));
        picks[i] = pool[j];
        pool[j] = pool[n - i - 1];
    }
    free(pool);
}

static void sample_by_rejection(qk_mt *m, int n, int k, int *picks)
{
    unsigned char *chosen = qk_calloc((size_t)n, 1);
    for (int i = 0; i < k; i++) {
        uint32_t j;
        do {
            j = python_randbelow(m, (uint32_t)n);
        } while (chosen[j]);
        chosen[j] = 1;
        picks[i] = (int)j;
    }
    free(chosen);
}

int qk_python_sample(uint32_t seed, int n, int k, int *picks)
{
    if (k < 0 || n < 0 || k > n)
        return -1;
    qk_mt m;
    qk_mt_seed_python(&m, seed);
    if (n <= python_sample_setsize(k))
        sample_by_pool(&m, n, k, picks);
    else
        sample_by_rejection(&m, n, k, picks);
    return 0;
}
