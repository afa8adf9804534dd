/* The synthetic sniffed-qk generator (qk-synth): per-head query/key
 * geometry with a planted drift axis, separation axis and RoPE rings,
 * token positions sampled as the capture tool samples them, presets
 * per model family and checkpoint, and the exact population values of the
 * rotation and PCA metrics of every planted head (docs/synth.md). */
#ifndef QK_SYNTH_H
#define QK_SYNTH_H

#include <stdint.h>

#include "qk/common.h"
#include "qk/registry.h"

enum qk_synth_mode {
    QK_SYNTH_POPULATION = 0,     /* drift, separation, RoPE rings */
    QK_SYNTH_PLANTED_LINEAR = 1  /* linear drift only: closed-form truth */
};

enum qk_synth_scale { QK_SYNTH_DEMO = 0, QK_SYNTH_THESIS = 1 };

enum { QK_SYNTH_Q = 0, QK_SYNTH_K = 1 };

#define QK_SYNTH_SAMPLED_HEADS 300 /* query heads the capture tool samples */
#define QK_SYNTH_DEMO_HEADS 24
#define QK_SYNTH_DEMO_ROWS 1000    /* rows per file aimed at by the demo scale */
#define QK_SYNTH_THESIS_EXAMPLES 500
#define QK_SYNTH_MAX_PLANES 8
/* Complement spectrum: the content-noise pair k of the complement (after
 * the ring planes, which lead it) holds a variance proportional to
 * (k + 1)^-QK_SYNTH_SPECTRUM_DECAY, both directions alike, so the pairs
 * have distinct variances. */
#define QK_SYNTH_SPECTRUM_DECAY 0.5

typedef struct qk_synth_options {
    uint64_t seed;
    int mode;       /* enum qk_synth_mode */
    int scale;      /* enum qk_synth_scale */
    int stratified; /* 1: K rows take the Q positions (identical multisets) */
    int n_heads;    /* query heads per dataset; 0: by scale */
    int n_examples; /* examples (documents); 0: by scale */
    /* what the dataset is made from (the caller's record), written to its
     * folder as .synth-key; NULL: none */
    const uint8_t *key;
    size_t key_len;
} qk_synth_options;

void qk_synth_options_default(qk_synth_options *o);

/* ---- heads and positions ------------------------------------------------ */

/* The query heads written for a dataset, sorted by (layer, head): the
 * capture tool's sample (random.Random(0).sample over layer-major
 * candidates, 300 heads) without cross-attention layers, thinned to evenly
 * spaced heads when fewer are asked for. Returns the count (<= cap). */
int qk_synth_select_heads(const qk_dataset *ds, const qk_synth_options *o,
                          int *layers, int *heads, int cap);

/* Number of examples: --examples, else 500 (thesis) or about
 * 1000 / (context_length / bucket_size) (demo). */
int qk_synth_n_examples(const qk_dataset *ds, const qk_synth_options *o);

/* The opaque int32 id of example number i (distinct for distinct i; some
 * are negative). The same for every dataset, as the corpus is shared. */
int32_t qk_synth_example_id(uint64_t seed, int example);

/* The sampled rows of one (layer, kind): every position of every example
 * kept with probability 1/B, in example order then ascending position.
 * example holds each row's example number (for the noise streams). */
typedef struct qk_synth_rows {
    int64_t n;
    int32_t *bucket;
    int32_t *example_id;
    int32_t *position;
    int32_t *example;
} qk_synth_rows;

void qk_synth_positions(const qk_dataset *ds, const qk_synth_options *o,
                        int layer, int kind, qk_synth_rows *rows);
void qk_synth_rows_free(qk_synth_rows *rows);

/* ---- the planted model of one (query head, key head) pair --------------- */

/* Parameters of one kind, in the coordinates of the head's basis: column 0
 * is the drift axis u, column 1 the separation axis s. The kind's mean
 * moves by alpha * (t - (L-1)/2) along u; its content noise on u and s may
 * be correlated (lean), which tilts the noise ellipse in the {u, s} plane. */
typedef struct qk_synth_kind {
    double mu_a;   /* mean on u */
    double alpha;  /* drift per token */
    double r;      /* Pearson r of the u coordinate with position */
    double sd_a;   /* content sd on u: |alpha| sd_t sqrt(1/r^2 - 1) */
    double lean;   /* correlation of the content noise on u and on s; 0 for
                      keys and in planted-linear mode */
    double mu_b;   /* mean on s */
    double cv_b;   /* content variance on s */
    double t_perp; /* total content variance of the complement (ring
                      planes included) */
    double ramp;   /* content variance of the complement scales with
                      position as 1 + ramp (2t / (L-1) - 1), mean 1 over
                      the positions; 0 for keys and in planted-linear mode */
    double doc_share; /* share of the content variance on s shared by the
                         rows of one example (document); 0 for queries
                         and in planted-linear mode */
    double radius[QK_SYNTH_MAX_PLANES]; /* rotation-plane mean radius */
} qk_synth_kind;

/* A RoPE rotation plane (a ring, about 2 to 10 turns over the context):
 * spanned by basis columns col and col + 1, the kind's mean turns as
 *   radius * [(cos, sin)(freq t + phase) - slope (-sin, cos)(phase') s],
 * s = t - (L-1)/2, phase' = phase + freq (L-1)/2: the ring without its
 * linear trend over the positions 0 .. L-1 (slope = sum_s s sin(freq s) /
 * (L var_t)), which would otherwise tilt the drift axis into the plane. */
typedef struct qk_synth_plane {
    int col;
    int rope_index; /* freq = rope_theta^(-2 rope_index / d) */
    double freq;    /* radians per token */
    double turns;   /* freq * L / (2 pi) */
    double phase;   /* shared by Q and K */
    double slope;   /* linear trend removed, per unit radius and token */
} qk_synth_plane;

typedef struct qk_synth_model {
    int d;
    int layer, q_head, kv_head;
    int context;   /* L: positions are 0 .. L-1 */
    int mode;
    uint64_t seed;
    uint64_t data_key;    /* hash of the dataset id: noise streams */
    uint64_t lineage_key; /* hash of the lineage: basis and parameters */
    double *basis;        /* d x d row-major; column j is basis vector j */
    qk_synth_kind kind[2];
    double *noise_var[2]; /* d content variances per kind, basis coords */
    int n_planes;
    qk_synth_plane plane[QK_SYNTH_MAX_PLANES];
} qk_synth_model;

/* Builds the model of query head q_head of layer and of its key head. The
 * key side depends only on (layer, key head), so every query head of a GQA
 * group sees the same keys. */
int qk_synth_model_init(qk_synth_model *m, const qk_dataset *ds,
                        const qk_synth_options *o, int layer, int q_head,
                        qk_err *err);
void qk_synth_model_free(qk_synth_model *m);

/* The vectors of one kind at the given rows (rows->n x d floats, row-major,
 * bf16-exact). Noise comes from streams keyed by (seed, dataset, layer,
 * head, kind, example), so it does not depend on which heads are made. */
void qk_synth_vectors(const qk_synth_model *m, int kind,
                      const qk_synth_rows *rows, float *out);

/* Rounds to bfloat16 (nearest, ties to even), kept as a float. */
float qk_synth_bf16(double x);

/* ---- population truth ---------------------------------------------------- */

/* The metrics of the rotation model's {a, b} plane (docs/rotation.md) and
 * the PC0 metrics of the combined PCA (docs/pca.md), computed from the
 * exact per-kind moments of the model over positions 0 .. L-1 with equal
 * Q and K weight. */
typedef struct qk_synth_truth {
    int d;
    double *a; /* d, original coordinates */
    double *b;
    double alpha_q, alpha_k;
    double mu_q_a, mu_k_a, mu_q_b, mu_k_b;
    double r_q_a, r_k_a;
    double position_r;
    double bias_strength;
    double var_frac_a, var_frac_b, plane_var_fraction;
    double separation_strength;
    double content_var_b;
    double total_var;
    double pc0_ev, pc0_r_q, pc0_r_k; /* PC0 after sign canonicalization */
} qk_synth_truth;

int qk_synth_population(const qk_synth_model *m, qk_synth_truth *t,
                        qk_err *err);

/* Standard deviation of a position uniform on 0 .. L-1. */
double qk_synth_sd_t(int L);

/* Over the L centred positions s = t - (L-1)/2: the sum of cos(w s) (the
 * Dirichlet kernel) and the sum of s sin(w s), in closed form. */
void qk_synth_dirichlet(double w, int L, double *sum_cos, double *sum_s_sin);
void qk_synth_truth_free(qk_synth_truth *t);

/* The same metrics from per-kind moments given in basis coordinates:
 * means mu[kind] (d), covariances S[kind] (d x d row-major), covariances
 * with position g[kind] (d) and the variance of position var_t. Shared with
 * the tests, which feed it sample moments. a and b are returned in basis
 * coordinates when basis is NULL. */
int qk_synth_metrics_from_moments(int d, const double *basis,
                                  double *const mu[2], double *const S[2],
                                  double *const g[2], double var_t,
                                  qk_synth_truth *t, qk_err *err);

/* ---- presets ------------------------------------------------------------- */

/* The means a dataset's heads are drawn around and the family law of their
 * spread (src/lib/synth/synth_presets.c cites the thesis values of every row). */
typedef struct qk_synth_preset {
    const char *id;
    const char *lineage;    /* datasets of one lineage share per-head draws */
    const char *model_name; /* Hugging Face model id */
    double r_q, r_k;        /* median planted r of the u coordinate */
    double alpha_k;         /* mean K drift per token */
    double slope_ratio;     /* median alpha_K / alpha_Q */
    double bias;            /* mean mu_Q^a alpha_K */
    double mu_k_a;          /* mean K cluster position on u */
    double lean;            /* Q noise correlation between u and s */
    double sep;             /* centre of the separation law */
    double t_perp;          /* mean complement content variance per kind */
    double cv_q;            /* Q content sd on s per unit of its sd on u */
    double cv_k;            /* mean K content variance on s */
    double depth_bias;      /* log ratio of mu_Q^a, first to last layer */
    double depth_cv;        /* log ratio of cv_k, last to first layer */
    int sep_logistic;       /* 0: normal, clipped; 1: logistic(logit + sd z) */
    double sep_sd;
    int mu_lognormal;       /* 0: normal with CV mu_spread; 1: lognormal */
    double mu_spread;
    double corr;            /* latent correlation of separation and mu_Q^a */
    double alpha_k_sd;      /* lognormal sigma of alpha_K over key heads */
    double neg_frac;        /* share of heads with mu_Q^a flipped negative */
    double q_b;             /* mean Q cluster position on s, per unit of the
                               typical Q-K offset on s (K sits that offset
                               below) */
    double q_ramp;          /* Q content variance ramp over the context
                               (qk_synth_kind.ramp) */
    double k_doc;           /* K's content variance on s shared within a
                               document (qk_synth_kind.doc_share) */
} qk_synth_preset;

/* The row of a dataset id, or a generic row for ids the table lacks. */
const qk_synth_preset *qk_synth_preset_find(const char *id);

/* ---- whole datasets ------------------------------------------------------ */

/* Writes DIR/<id> (config directories, README.md, _saver_state.json,
 * truth.json per query config, synth-truth.tsv last) through a temporary
 * directory renamed into place when complete. */
int qk_synth_write_dataset(const char *out_dir, const qk_dataset *ds,
                           const qk_synth_options *o, qk_err *err);

/* The Hugging Face model id recorded as model_name (NULL if unknown). */
const char *qk_synth_model_name(const qk_dataset *ds);

/* Writes truth.json of one query config (planted parameters and population
 * truth) to fp; rows/vector give the file statistics of its Parquet file. */
void qk_synth_write_truth_json(FILE *fp, const qk_dataset *ds,
                               const qk_synth_options *o,
                               const qk_synth_model *m,
                               const qk_synth_truth *t,
                               const qk_synth_rows *rows, const float *vector);

#endif
