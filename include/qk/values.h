/* Text outputs built in memory and written atomically at the end, so that
 * an error leaves no partial file: the key<TAB>value files and small tables
 * through which the summary programs hand numbers to the report, with "n/a"
 * for a number that is not there. */
#ifndef QK_VALUES_H
#define QK_VALUES_H

#include <stddef.h>
#include <stdio.h>

/* Write to fp; qk_text_close writes everything to the path given to
 * qk_text_open (a copy is kept). With a NULL path the text is built and
 * dropped (an output nobody asked for). */
typedef struct qk_text {
    FILE *fp;
    char *buf;
    size_t len;
    char *path;
} qk_text;

void qk_text_open(qk_text *o, const char *path);
/* Writes the text to path atomically (exit 2 naming it on failure). */
void qk_text_close(qk_text *o);

/* A value line: key<TAB>value, the value formatted by fmt. */
void qk_value(qk_text *o, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A value line of a number: x in fmt, or "n/a" when x is not finite. */
void qk_value_num(qk_text *o, const char *key, const char *fmt, double x);
/* key<TAB>n/a for each key of a NULL-terminated list. */
void qk_value_missing(qk_text *o, const char *const *keys);

/* A table cell: a tab, then x in fmt, or "n/a" when x is not finite. */
void qk_cell_num(qk_text *o, const char *fmt, double x);
/* x in fmt into buf, or "n/a" when x is not finite; returns buf. */
const char *qk_format_num(char *buf, size_t cap, const char *fmt, double x);

#endif
