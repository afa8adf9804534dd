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
    for (int i = 0; i < n; i++) {
        fclose(o[i].fp);
        o[i].fp = NULL;
    }
    qk_write_texts(o, n);
    for (int i = 0; i < n; i++) {
        free(o[i].buf);
        free(o[i].path);
        o[i].buf = o[i].path = NULL;
    }
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

