/* Text outputs built in memory and written atomically at the end, so that
 * an error leaves no partial file (the numbers files, figure tables and the
 * rendered report). */
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
/* Writes n texts, each to its path, all or none (qk_write_texts). */
void qk_texts_close(qk_text *o, int n);

#endif
