/* Text outputs built in memory (include/qk/values.h). */
#include "qk/values.h"

#include <stdlib.h>

#include "qk/cli.h"
#include "qk/common.h"

void qk_text_open(qk_text *o, const char *path)
{
    o->buf = NULL;
    o->len = 0;
    o->path = path ? qk_strdup(path) : NULL;
    o->fp = open_memstream(&o->buf, &o->len);
    if (!o->fp)
        qk_die(QK_EXIT_DATA, NULL, "out of memory");
}

void qk_texts_close(qk_text *o, int n)
{
    const char **paths = qk_calloc((size_t)(n ? n : 1), sizeof *paths);
    const char **texts = qk_calloc((size_t)(n ? n : 1), sizeof *texts);
    size_t *lens = qk_calloc((size_t)(n ? n : 1), sizeof *lens);
    for (int i = 0; i < n; i++) {
        fclose(o[i].fp);
        o[i].fp = NULL;
        paths[i] = o[i].path;
        texts[i] = o[i].buf;
        lens[i] = o[i].len;
    }
    qk_write_texts(paths, texts, lens, n);
    for (int i = 0; i < n; i++) {
        free(o[i].buf);
        free(o[i].path);
        o[i].buf = o[i].path = NULL;
    }
    free(paths);
    free(texts);
    free(lens);
}

void qk_text_close(qk_text *o)
{
    if (o->path) {
        qk_texts_close(o, 1);
        return;
    }
    fclose(o->fp);
    o->fp = NULL;
    free(o->buf);
    o->buf = NULL;
}

