/* The defaults of the pipeline's parameters, each written once: the
 * programs' option rows show and apply them (QK_STR(...) as the row's
 * default, include/qk/cli.h), the library's defaults are these macros, and
 * Make reads this file for the parameters' defaults (workflow/config.mk:
 * each "#define" line below gives the parameter named after the prefix its
 * default). Keep one definition a line: NAME, then the value, one word,
 * as typed on a command line. `PROGRAM --print-defaults` lists them per
 * program. */
#ifndef QK_DEFAULTS_H
#define QK_DEFAULTS_H

/* A numeric macro's value as a string literal, for help texts:
 * "(default " QK_STR(QK_ROT_OMEGA_GRID) ")". */
#define QK_STR(x) QK_STR_(x)
#define QK_STR_(x) #x

/* qk-synth */
#define QK_DEFAULT_SCALE demo
#define QK_DEFAULT_SYNTH_MODE population

/* qk-taxonomy: the HIGH and LOW thresholds on the PC0 correlations */
#define QK_DEFAULT_PCA_TAX_HIGH 0.7
#define QK_DEFAULT_PCA_TAX_LOW 0.3

/* qk-pca-collage */
#define QK_DEFAULT_PCA_COLLAGE_SEED 42
#define QK_DEFAULT_PCA_COLLAGE_PANELS 4
#define QK_DEFAULT_PCA_COLLAGE_POINTS 2000

/* qk-rotate, qk-complement */
#define QK_DEFAULT_ROT_B_MODE eigen
#define QK_DEFAULT_ROT_B_SIGN canonical
#define QK_DEFAULT_ROT_OMEGA_GRID 400
#define QK_DEFAULT_ROT_OMEGA_REFINE 20
#define QK_DEFAULT_ROT_ACTIVE_TAU 0.1

/* qk-rotation-points */
#define QK_DEFAULT_ROT_FIG_SEED 42
#define QK_DEFAULT_ROT_FIG_PANELS 4
#define QK_DEFAULT_ROT_FIG_POINTS 2000
#define QK_DEFAULT_ROT_FIG_COMPLEMENT_POINTS 1000

/* qk-plasticity (docs/plasticity.md, "Parameters") */
#define QK_DEFAULT_PLAST_COV diag
#define QK_DEFAULT_PLAST_BIN_FACTOR 10
#define QK_DEFAULT_PLAST_MIN_PAIRS 32
#define QK_DEFAULT_PLAST_PAIR2D_MIN 32
#define QK_DEFAULT_PLAST_PAIRS exact
#define QK_DEFAULT_PLAST_PAIRS_PER_BIN 256
#define QK_DEFAULT_PLAST_SEED 0
#define QK_DEFAULT_PLAST_MAX_TOKENS 50000
#define QK_DEFAULT_PLAST_NORMALITY_DIMS 64
#define QK_DEFAULT_PLAST_P_ALPHA 0.01

/* qk-plot: the share of heads a mean over heads is drawn in full from */
#define QK_DEFAULT_FIG_MIN_SHARE 0.5
/* qk-plot: one colour scale for the plasticity heatmaps (shared) or one each (own) */
#define QK_DEFAULT_FIG_HEATMAP_SCALE shared

/* qk-synth, qk-load: the megabytes a writer leaves free on its disk */
#define QK_DEFAULT_MIN_FREE 256

#endif
