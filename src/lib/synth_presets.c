/* Presets of the synthetic generator: per dataset, the means the planted
 * heads are drawn around, and the family law of their spread. */
#include "qk/synth.h"

#include <string.h>

/* Family laws of (separation, mu_Q^a) per head, spec/rotation.md 7.4:
 * separation normal (sd) and clipped, or logistic(c + sd z); mu_Q^a normal
 * with coefficient of variation, or lognormal with that sigma; latent
 * correlation of the two; lognormal sigma of alpha_K over key heads
 * (rotation.md 7.3 for SmolLM3); the share of query heads whose mu_Q^a is
 * flipped negative (rotation.md 5.2: mu_q_a > 0 in 98.7%, bias > 0 in 99%).
 *                        sep_logistic sep_sd mu_lognormal mu_spread corr alpha_k_sd neg_frac */
#define LAW_LLAMA         0, 0.10, 0, 0.48, -0.68, 0.15, 0.000
#define LAW_QWEN          1, 1.00, 1, 0.78, 0.97, 0.15, 0.008
#define LAW_MINISTRAL     0, 0.08, 0, 0.33, -0.11, 0.15, 0.008
#define LAW_MISTRAL       0, 0.09, 0, 0.40, 0.00, 0.15, 0.008
#define LAW_SMOLLM3_PRE   0, 0.07, 1, 0.20, 0.00, 0.45, 0.010
#define LAW_SMOLLM3_LC    0, 0.10, 1, 0.20, 0.00, 0.30, 0.010

#define SMOL "HuggingFaceTB/SmolLM3-3B-checkpoints"

/* Columns: id, lineage, model_name, then the generator inputs:
 *   r_q r_k       median planted r of the u coordinate with position
 *   alpha_k       mean K drift per token
 *   ratio         median alpha_K / alpha_Q
 *   bias          mean mu_Q^a alpha_K as planted
 *   mu_k_a        mean K cluster position on u
 *   lean          correlation of the Q content noise on u and on s
 *   sep           separation centre of the family law
 *   t_perp        mean complement content variance per kind
 *   cv_q          Q content sd on s per unit of its content sd on u
 *   cv_k          mean K content variance on s
 *   depth_bias    log ratio of mu_Q^a, first to last layer
 *   depth_cv      log ratio of cv_k, last to first layer
 *   family law (above).
 * The inputs were calibrated so that the means over the 300 sampled heads
 * of the population truth land on the figures each comment cites (the
 * rotation planes, the noise lean and the spread move them a little away
 * from the planted values); docs/synth.md lists what comes out. */
static const qk_synth_preset presets[] = {
    /* rotation.md 5.1: |r| .592/.926, var .087/.356, ratio 7.84, bias 1.4e-3;
     * 5.3: bias falls with depth; pca.md 9.2: PC0 r_q .767, r_k .257 */
    {"qwen3-0.6b", "qwen3-0.6b", "Qwen/Qwen3-0.6B",
     0.5815, 0.9342, 0.00023, 8.528, 0.001733, -4, -0.933, 0.4793, 456.6, 0.3, 124.3, 0.6, 0, LAW_QWEN},
    /* rotation.md 5.1: |r| .596/.928, var .085/.344, ratio 7.44, bias 1.3e-3;
     * pca.md 9.2: PC0 .761/.252 */
    {"qwen3-1.7b", "qwen3-1.7b", "Qwen/Qwen3-1.7B",
     0.5944, 0.9333, 0.00022, 7.992, 0.001311, -4, -0.95, 0.4244, 437.6, 0.3, 115.5, 0.6, 0, LAW_QWEN},
    /* rotation.md 5.1: |r| .750/.894, var .110/.217, ratio 2.07, bias 1.0e-3;
     * pca.md 9.2: PC0 .785/.532 */
    {"qwen3-4b", "qwen3-4b", "Qwen/Qwen3-4B",
     0.7497, 0.8979, 0.00017, 2.096, 0.001077, -4, -0.6994, 0.2831, 380, 0.3, 38.26, 0.6, 0, LAW_QWEN},
    /* rotation.md 5.1 and the 7.1 preset: |r| .754/.895, var .110/.207,
     * ratio 2.10, bias 0.9e-3; pca.md 9.2: PC0 .774/.531 */
    {"qwen3-8b", "qwen3-8b", "Qwen/Qwen3-8B",
     0.77, 0.9012, 0.00015, 2.104, 0.0009686, -4, -0.5818, 0.2599, 332.3, 0.3, 37.36, 0.6, 0, LAW_QWEN},
    /* rotation.md 5.1: |r| .750/.882, var .103/.192, ratio 1.77, bias 0.8e-3;
     * pca.md 9.2: PC0 .793/.560 */
    {"qwen3-14b", "qwen3-14b", "Qwen/Qwen3-14B",
     0.7636, 0.8889, 0.00013, 1.948, 0.0008221, -4, -0.8184, 0.2455, 348.6, 0.3, 20.85, 0.6, 0, LAW_QWEN},
    /* rotation.md 5.1: |r| .732/.897, var .150/.307, ratio 2.47, bias 0.6e-3
     * (head_dim 64); pca.md 9.2-9.3: PC0 .820/.550, r_k falling with depth */
    {"llama3.2-1b", "llama3.2-1b", "meta-llama/Llama-3.2-1B",
     0.7422, 0.9106, 8.6e-05, 2.342, 0.0006097, -7, -0.7934, 0.4155, 209.2, 0.3, 8.926, 0, 0.5, LAW_LLAMA},
    /* rotation.md 5.1 and the 7.1 preset: |r| .814/.898, var .148/.285,
     * ratio 1.61, bias 0.6e-3; pca.md 9.2: PC0 .834/.627 */
    {"llama3.2-3b", "llama3.2-3b", "meta-llama/Llama-3.2-3B",
     0.8058, 0.9094, 8.6e-05, 1.614, 0.000594, -7, -0.5218, 0.4003, 237.8, 0.3, 5.745, 0, 0.5, LAW_LLAMA},
    /* rotation.md 5.1: |r| .677/.837, var .118/.258, ratio 2.45, bias 0.7e-3
     * (239 heads); pca.md 9.2: PC0 .834/.512 */
    {"llama3.2-11b", "llama3.2-11b", "meta-llama/Llama-3.2-11B-Vision",
     0.6719, 0.835, 0.0001, 2.341, 0.0006936, -7, -0.95, 0.3756, 353.1, 0.3, 13.11, 0, 0.5, LAW_LLAMA},
    /* rotation.md 5.1: |r| .855/.813 (the family with |r_q| > |r_k|),
     * var .103/.265, ratio 0.92, bias 0.3e-3; pca.md 9.2: PC0 .785/.462 */
    {"ministral3-3b", "ministral3-3b", "mistralai/Ministral-3-3B-Base-2512",
     0.8538, 0.8217, 6e-05, 0.9072, 0.0002944, -5, 0.1537, 0.3926, 222.9, 0.3, 5.099, 0, 0.5, LAW_MINISTRAL},
    /* rotation.md 5.1 and the 7.1 preset: |r| .860/.834, var .108/.232,
     * ratio 1.00, bias 0.3e-3; pca.md 9.2: PC0 .787/.541 */
    {"ministral3-8b", "ministral3-8b", "mistralai/Ministral-3-8B-Base-2512",
     0.8652, 0.8337, 6e-05, 1.013, 0.0003059, -5, 0.2857, 0.3444, 207.7, 0.3, 4.205, 0, 0.5, LAW_MINISTRAL},
    /* rotation.md 5.1: |r| .782/.743, var .154/.210, ratio 0.92, bias 0.3e-3;
     * pca.md 9.2: PC0 .786/.478 */
    {"ministral3-14b", "ministral3-14b", "mistralai/Ministral-3-14B-Base-2512",
     0.7867, 0.7553, 6e-05, 0.9488, 0.0002973, -5, -0.4134, 0.3107, 159.2, 0.3, 8.644, 0, 0.5, LAW_MINISTRAL},
    /* rotation.md 5.1 predecessors: |alpha_K| 1.67e-4, bias 7.83e-4,
     * |r| .704/.843, sep .370, plane .369 */
    {"llama3.1-8b", "llama3.1-8b", "meta-llama/Llama-3.1-8B",
     0.698, 0.8507, 0.000167, 2, 0.000807, -7, -0.7, 0.369, 423.8, 0.3, 3, 0, 0.5, LAW_LLAMA},
    /* rotation.md 5.1 predecessors: |alpha_K| 3.69e-4, bias 1.57e-3,
     * |r| .719/.855, sep .475, plane .410 (L = 32768) */
    {"mistral-v0.2-7b", "mistral-v0.2-7b", "mistralai/Mistral-7B-Instruct-v0.2",
     0.7288, 0.8646, 0.000369, 2, 0.001672, -5, -0.7, 0.48, 269.7, 0.3, 5, 0, 0.5, LAW_MISTRAL},
    /* SmolLM3-3B checkpoints, one lineage (a head keeps its draws across
     * checkpoints): rotation.md 5.4 (bias, |alpha_K|, mu_Q^a, |r_k|, sep,
     * plane, IQRs), 7.3 (alpha_K L = 13.07 ... 17.63, alpha_K and mu_Q^a
     * spreads), 5.6 (alpha_K L about constant); pca.md 9.4 (PC0 r_q, r_k,
     * EV0); r_q and the ratio 1.8 are assumed (7.1 preset). */
    /* S1 40K: bias .0092, |r_k| .861, sep .233, plane .237; PC0 .671/.458, EV0 .186 */
    {"smollm3-3b-stage1-step-40000", "smollm3-3b", SMOL,
     0.7, 0.8729, 0.00319, 1.8, 0.009232, -4, -0.1907, 0.2323, 269.3, 0.3, 17.09, 0, 0, LAW_SMOLLM3_PRE},
    /* S1 1.2M: bias .0160, |r_k| .886, sep .299, plane .333; PC0 .811/.526 */
    {"smollm3-3b-stage1-step-1200000", "smollm3-3b", SMOL,
     0.8, 0.8967, 0.00323, 1.8, 0.01606, -4, -0.4592, 0.2982, 182.1, 0.3, 15.15, 0, 0, LAW_SMOLLM3_PRE},
    /* S1 2.4M: bias .0165, |r_k| .893, sep .301, plane .335; PC0 .811/.519 */
    {"smollm3-3b-stage1-step-2400000", "smollm3-3b", SMOL,
     0.8, 0.9033, 0.00332, 1.8, 0.01656, -4, -0.4597, 0.3004, 185.5, 0.3, 16.68, 0, 0, LAW_SMOLLM3_PRE},
    /* S1 3.44M: bias .0166, |r_k| .894, sep .302, plane .334; PC0 .807/.526 */
    {"smollm3-3b-stage1-step-3440000", "smollm3-3b", SMOL,
     0.8, 0.9043, 0.00334, 1.8, 0.01666, -4, -0.4308, 0.3015, 188.1, 0.3, 15.93, 0, 0, LAW_SMOLLM3_PRE},
    /* S2 4.2M: bias .0168, |r_k| .893, sep .297, plane .334; PC0 .815/.540 */
    {"smollm3-3b-stage2-step-4200000", "smollm3-3b", SMOL,
     0.8, 0.9033, 0.00333, 1.8, 0.01686, -4, -0.4893, 0.2963, 184.2, 0.3, 15.27, 0, 0, LAW_SMOLLM3_PRE},
    /* S3 4.72M: bias .0194, |r_k| .918, sep .317, plane .344; PC0 .844/.544 */
    {"smollm3-3b-stage3-step-4720000", "smollm3-3b", SMOL,
     0.82, 0.9267, 0.00408, 1.8, 0.01947, -4, -0.5717, 0.3184, 211.7, 0.3, 19.11, 0, 0, LAW_SMOLLM3_PRE},
    /* LC 4K->32K +4K: bias .0032 (6x below S3), |r_k| .911, sep .348,
     * plane .382; PC0 .866/.462, EV0 .336 */
    {"smollm3-3b-lc-4k-to-32k-step-4000", "smollm3-3b", SMOL,
     0.85, 0.9198, 0.000501, 1.8, 0.0032, -4, -0.5513, 0.3474, 220.7, 0.3, 33.44, 0, 0, LAW_SMOLLM3_LC},
    /* LC 4K->32K +20K: bias .0032, |r_k| .913, sep .347, plane .380;
     * PC0 .868/.464 */
    {"smollm3-3b-lc-4k-to-32k-step-20000", "smollm3-3b", SMOL,
     0.85, 0.9217, 0.000507, 1.8, 0.0032, -4, -0.5663, 0.3466, 223.1, 0.3, 33.59, 0, 0, LAW_SMOLLM3_LC},
    /* LC 32K->64K +4K: bias .0018 (1.8x below LC1), |r_k| .906,
     * sep .347, plane .388; PC0 .870/.466 */
    {"smollm3-3b-lc-32k-to-64k-step-4000", "smollm3-3b", SMOL,
     0.85, 0.9152, 0.000268, 1.8, 0.0018, -4, -0.5815, 0.3469, 231.5, 0.3, 38.26, 0, 0, LAW_SMOLLM3_LC},
    /* LC 32K->64K +20K: bias .0018, |r_k| .905, sep .347, plane .387;
     * PC0 .868/.466, EV0 .338 */
    {"smollm3-3b-lc-32k-to-64k-step-20000", "smollm3-3b", SMOL,
     0.85, 0.9143, 0.000269, 1.8, 0.0018, -4, -0.5669, 0.3469, 233.5, 0.3, 38.23, 0, 0, LAW_SMOLLM3_LC},
};

/* Datasets the table does not name (a qkreport.conf model) get a middle-of-
 * the-road head: the Llama-3.2-3B row (the 7.1 preset of rotation.md). */
static const qk_synth_preset fallback = {
    "", "", "",
    0.8058, 0.9094, 8.6e-05, 1.614, 0.000594, -7, -0.5218, 0.4003, 237.8, 0.3, 5.745, 0, 0.5, LAW_LLAMA};

const qk_synth_preset *qk_synth_preset_find(const char *id)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].id, id) == 0)
            return &presets[i];
    return &fallback;
}

const char *qk_synth_model_name(const qk_dataset *ds)
{
    const qk_synth_preset *p = qk_synth_preset_find(ds->id);
    return p->model_name[0] ? p->model_name : NULL;
}
