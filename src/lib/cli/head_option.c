/* The option that names one query head (qk_opt_head, include/qk/cli.h),
 * in a file of its own: only the programs that take it link it, so the
 * others' identity, and the cache of their stages, stay as they were. */
#include <stdio.h>
#include <string.h>

#include "qk/cli.h"

void qk_opt_head(const char *opt, const char *s, int *layer, int *head)
{
    int used = 0;
    if (sscanf(s, "l%5dh%5d%n", layer, head, &used) != 2 || s[used] || used < 6 || *layer < 0 ||
        *head < 0 || strchr(s, '+') || strchr(s, ' '))
        qk_die(QK_EXIT_USAGE, NULL, "%s: expected a head lLLhHH, got '%s'", opt, s);
}
