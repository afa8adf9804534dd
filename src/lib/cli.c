/* Option values, stores and output files for the programs (include/qk/cli.h). */
#include "qk/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

long long qk_opt_int(const char *opt, const char *s, long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        qk_die(QK_EXIT_USAGE, NULL, "%s: expected an integer in [%lld, %lld], got '%s'", opt,
               lo, hi, s);
    return v;
}

double qk_opt_fraction(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0.0 && v <= 1.0))
        qk_die(QK_EXIT_USAGE, NULL, "%s: expected a number in [0, 1], got '%s'", opt, s);
    return v;
}

int qk_opt_choice(const char *opt, const char *s, const char *first, const char *second)
{
    if (strcmp(s, first) == 0)
        return 0;
    if (strcmp(s, second) == 0)
        return 1;
    qk_die(QK_EXIT_USAGE, NULL, "%s: expected %s or %s, got '%s'", opt, first, second, s);
}

void qk_open_store(const char *path, qk_store *s, int verify_checksum)
{
    qk_err err;
    if (qk_store_open(path, s, verify_checksum, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
}

const float *qk_store_vectors_or_die(const qk_store *s, const char *path, int c,
                                     qk_store_buf *buf)
{
    qk_err err;
    const float *vector = qk_store_vectors(s, c, buf, &err);
    if (!vector)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    return vector;
}

void qk_output_open(qk_atomic *out, const char *path)
{
    qk_err err;
    if (qk_atomic_open(out, path, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
}

void qk_output_commit(qk_atomic *out)
{
    char *path = qk_strdup(out->final_path); /* the commit frees it */
    qk_err err;
    if (qk_atomic_commit(out, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    free(path);
}

void qk_write_table(const char *path, void (*fill)(FILE *fp, const void *arg), const void *arg)
{
    qk_atomic out;
    qk_output_open(&out, path);
    fill(out.fp, arg);
    qk_output_commit(&out);
}

void qk_write_text(const char *path, const char *text, size_t len)
{
    qk_atomic out;
    qk_output_open(&out, path);
    fwrite(text, 1, len, out.fp);
    qk_output_commit(&out);
}
