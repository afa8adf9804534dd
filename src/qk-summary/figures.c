/* Section "figures": which figures this run draws, as flags the report's
 * templates test ({{if figure.qk-pca.06}}). The input "list" is the output
 * of qk-plot --list (one figure a line: its id, then its title); the
 * parameter "drawn" names the figures the run makes. */
#include <stdlib.h>
#include <string.h>

#include "summary.h"

#include "qk/die.h"

/* The figure id at the start of a --list line ("qk-pca/06"), into out. */
static int line_id(const char *line, char *out, size_t cap)
{
    while (*line == ' ')
        line++;
    size_t n = strcspn(line, " \t");
    if (n == 0 || n >= cap || !strchr(line, '/') || strchr(line, '/') > line + n)
        return -1;
    snprintf(out, cap, "%.*s", (int)n, line);
    return 0;
}

static int drawn(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = list; (p = strstr(p, id)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
            return 1;
    return 0;
}

/* The number of space-separated words of a list. */
static int count_words(const char *list)
{
    int n = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, " ");
        n += len > 0;
        p += len;
        while (*p == ' ')
            p++;
    }
    return n;
}

void sum_figures(sum_ctx *ctx)
{
    const qk_src *list = sum_input(ctx, "list");
    const char *made = sum_param(ctx, "drawn", "");
    /* qk-plot --list has no header: its first line was read as one */
    int n = list->t->n_rows + 1, found = 0;
    qk_key *keys = qk_calloc((size_t)n + 1, sizeof *keys);
    int *flag = qk_calloc((size_t)n, sizeof *flag);
    for (int r = -1; r < list->t->n_rows; r++) {
        const char *line = r < 0 ? list->t->header[0] : qk_table_cell(list->t, r, 0);
        char id[64], *key, *meaning;
        if (line_id(line, id, sizeof id) != 0)
            qk_die(QK_EXIT_DATA, list->path, "line %d: no figure id", r + 2);
        flag[r + 1] = drawn(made, id);
        found += flag[r + 1];
        if (asprintf(&meaning, "1 when figure %s is drawn in this run", id) < 0 ||
            asprintf(&key, "figure.%s", id) < 0)
            qk_die(QK_EXIT_DATA, NULL, "out of memory");
        *strchr(key, '/') = '.'; /* figure.qk-pca.06 */
        keys[r + 1] = (qk_key){key, "flag", meaning};
    }
    /* every drawn figure must be one qk-plot knows */
    if (found != count_words(made))
        qk_die(QK_EXIT_USAGE, NULL, "--param drawn names a figure that %s does not list",
               list->path);
    qk_numbers_declare(ctx->out, keys);
    sum_source(ctx->out, list, "the figure id (the first word of a line)",
               "the figure's line of qk-plot --list",
               "1 when the parameter 'drawn' (the figures the run draws) names the id, else 0");
    for (int i = 0; i < n; i++) {
        qk_numbers_set(ctx->out, keys[i].name, flag[i]);
        free((char *)keys[i].name);
        free((char *)keys[i].meaning);
    }
    free(keys);
    free(flag);
}
