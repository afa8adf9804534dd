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

void qk_text_close(qk_text *o)
{
    fclose(o->fp);
    o->fp = NULL;
    if (o->path)
        qk_write_text(o->path, o->buf, o->len);
    free(o->buf);
    free(o->path);
    o->buf = NULL;
    o->path = NULL;
}

