/* What the programs share around the library's computations: option
 * values that exit with status 1 (usage) when malformed, and stores and
 * output files that exit with status 2 and the standard one-line message
 * naming the file when they cannot be opened or written. */
#ifndef QK_CLI_H
#define QK_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "qk/common.h"
#include "qk/store.h"

/* An integer option value in [lo, hi]; else "OPT: expected an integer in
 * [LO, HI], got 'S'" and exit 1. */
long long qk_opt_int(const char *opt, const char *s, long long lo, long long hi);
/* A number option value in [0, 1]; else "OPT: expected a number in [0, 1],
 * got 'S'" and exit 1. */
double qk_opt_fraction(const char *opt, const char *s);
/* 0 for first, 1 for second; else "OPT: expected FIRST or SECOND, got 'S'"
 * and exit 1. */
int qk_opt_choice(const char *opt, const char *s, const char *first, const char *second);

/* Opens a store (qk_store_open) or exits 2 naming it. */
void qk_open_store(const char *path, qk_store *s, int verify_checksum);
/* The vectors of config c (qk_store_vectors) or exit 2 naming the store at
 * path. */
const float *qk_store_vectors_or_die(const qk_store *s, const char *path, int c,
                                     qk_store_buf *buf);

/* qk_atomic_open and qk_atomic_commit that exit 2 naming the file. */
void qk_output_open(qk_atomic *out, const char *path);
void qk_output_commit(qk_atomic *out);
/* Writes the file at path atomically: fill(fp, arg) writes its contents. */
void qk_write_table(const char *path, void (*fill)(FILE *fp, const void *arg), const void *arg);
/* Writes len bytes of text to path atomically. */
void qk_write_text(const char *path, const char *text, size_t len);

#endif
