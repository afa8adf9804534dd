/* The five-way head taxonomy (docs/pca.md, taxonomy.tsv), from the canonical PC0
 * correlations of a head: signed r_q, |r_k|, strict inequalities against
 * HIGH and LOW, tested in the order of the enum. */
#ifndef QK_TAXONOMY_H
#define QK_TAXONOMY_H

#include "qk/defaults.h"

#define QK_TAXONOMY_HIGH QK_DEFAULT_PCA_TAX_HIGH
#define QK_TAXONOMY_LOW QK_DEFAULT_PCA_TAX_LOW

typedef enum qk_category {
    QK_POSITION_DOMINATED = 0, /* r_q > HIGH and |r_k| > HIGH */
    QK_Q_POSITIONAL,           /* r_q > HIGH and |r_k| < LOW */
    QK_K_POSITIONAL,           /* r_q < LOW  and |r_k| > HIGH */
    QK_CONTENT_FOCUSED,        /* r_q < LOW  and |r_k| < LOW */
    QK_MIXED,                  /* everything else */
    QK_N_CATEGORIES
} qk_category;

qk_category qk_taxonomy_classify(double r_q, double r_k, double high, double low);

/* The name written to the tables: "position-dominated", "q-positional",
 * "k-positional", "content-focused", "mixed". */
const char *qk_category_name(qk_category c);

#endif
