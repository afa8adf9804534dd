/* Text outputs built in memory, value lines and n/a cells (include/qk/values.h). */
#include "qk/values.h"

#include <math.h>
#include <stdarg.h>
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

void qk_value(qk_text *o, const char *key, const char *fmt, ...)
{
    fprintf(o->fp, "%s\t", key);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(o->fp, fmt, ap);
    va_end(ap);
    fputc('\n', o->fp);
}

const char *qk_format_num(char *buf, size_t cap, const char *fmt, double x)
{
    if (isfinite(x))
        snprintf(buf, cap, fmt, x);
    else
        snprintf(buf, cap, "n/a");
    return buf;
}

void qk_value_num(qk_text *o, const char *key, const char *fmt, double x)
{
    char buf[400]; /* room for %.3f of 1e300 */
    qk_value(o, key, "%s", qk_format_num(buf, sizeof buf, fmt, x));
}

void qk_value_missing(qk_text *o, const char *const *keys)
{
    for (; *keys; keys++)
        qk_value(o, *keys, "n/a");
}

void qk_cell_num(qk_text *o, const char *fmt, double x)
{
    char buf[400]; /* room for %.3f of 1e300 */
    fprintf(o->fp, "\t%s", qk_format_num(buf, sizeof buf, fmt, x));
}
