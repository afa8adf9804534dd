/* Head taxonomy (include/qk/taxonomy.h). */
#include "qk/taxonomy.h"

#include <math.h>

qk_category qk_taxonomy_classify(double r_q, double r_k, double high, double low)
{
    /* r_q stays signed: after canonicalisation it is >= -0.05, and a
     * slightly negative r_q is as "low" as a slightly positive one */
    double ak = fabs(r_k);
    if (r_q > high && ak > high)
        return QK_POSITION_DOMINATED;
    if (r_q > high && ak < low)
        return QK_Q_POSITIONAL;
    if (r_q < low && ak > high)
        return QK_K_POSITIONAL;
    if (r_q < low && ak < low)
        return QK_CONTENT_FOCUSED;
    return QK_MIXED;
}

const char *qk_category_name(qk_category c)
{
    static const char *const names[QK_N_CATEGORIES] = {
        "position-dominated", "q-positional", "k-positional", "content-focused", "mixed"};
    return c >= 0 && c < QK_N_CATEGORIES ? names[c] : "unknown";
}
