/* Deterministic random numbers for qk-synth and seeded sampling:
 * xoshiro256** seeded through SplitMix64, plus Gaussian draws. The same seed
 * gives the same stream on every platform. */
#ifndef QK_RNG_H
#define QK_RNG_H

#include <stdint.h>

typedef struct qk_rng {
    uint64_t s[4];
    int has_spare;
    double spare;
} qk_rng;

/* Seeds from a list of 64-bit keys (e.g. seed, dataset hash, layer, head),
 * so independent streams come from distinct key tuples. */
void qk_rng_seed(qk_rng *r, const uint64_t *keys, int nkeys);
uint64_t qk_rng_u64(qk_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double qk_rng_uniform(qk_rng *r);
/* Uniform integer in [0, n), unbiased. */
uint64_t qk_rng_below(qk_rng *r, uint64_t n);
/* Standard normal (polar Box-Muller). */
double qk_rng_normal(qk_rng *r);

/* MT19937 as CPython's random module uses it, for replaying the capture
 * tool's head sampling: random.Random(seed).sample(range(n), k). */
typedef struct qk_mt {
    uint32_t mt[624];
    int index;
} qk_mt;

void qk_mt_seed_python(qk_mt *m, uint32_t seed);
uint32_t qk_mt_u32(qk_mt *m);
/* Fills picks[0..k-1] with CPython's random.Random(seed).sample(range(n), k)
 * (k <= n); returns 0, or -1 if k > n. */
int qk_python_sample(uint32_t seed, int n, int k, int *picks);

#endif
