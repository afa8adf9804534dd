/* Shared helpers of the qkreport library: error messages, atomic output
 * files, checked allocation, progress lines and a fast content hash. */
#ifndef QK_COMMON_H
#define QK_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qk/defaults.h"

#define QK_VERSION_STRING "0.1.0"

/* Exit statuses shared by every program. */
enum { QK_EXIT_OK = 0, QK_EXIT_USAGE = 1, QK_EXIT_DATA = 2 };

/* A library error: functions return -1 and fill msg with one line that
 * does not name the file; the caller prefixes the file name. */
typedef struct qk_err {
    char msg[512];
} qk_err;

/* Formats into err->msg (if err is not NULL) and returns -1.  Control
 * characters in the result (from names or text of a file) are written as
 * \xNN, so the message stays one printable line. */
int qk_fail(qk_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int qk_vfail(qk_err *err, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* The program name used in messages ("qk-load"); set once in main. */
void qk_set_progname(const char *name);
const char *qk_progname(void);

/* "prog: error: PATH: MSG" on stderr; path may be NULL. */
void qk_report_error(const char *path, const char *msg);
/* "prog: warning: ..." on stderr. */
void qk_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Allocation that never returns NULL: when memory runs out it calls
 * qk_out_of_memory, which does not return. */
void *qk_malloc(size_t n);
void *qk_calloc(size_t count, size_t size);
void *qk_realloc(void *p, size_t n);
char *qk_strdup(const char *s);
/* The characters of UTF-8 text (the bytes that start one). */
size_t qk_utf8_chars(const char *s);

/* What a failed allocation does. The library itself ends no program: the
 * program layer (qk_args_init, src/lib/cli) installs a handler that
 * reports "out of memory (allocating N bytes)" and exits with status 2.
 * Without a handler the message is printed and the process aborts. A
 * handler must not return. */
typedef void (*qk_out_of_memory_fn)(size_t bytes);
void qk_set_out_of_memory_handler(qk_out_of_memory_fn handler);
void qk_out_of_memory(size_t bytes) __attribute__((noreturn));

/* Removes the temporary files of the outputs not yet committed (the
 * program layer calls it before it exits on an error). */
void qk_remove_pending_outputs(void);

/* Progress on stderr: printed only when stderr is a terminal and quiet is
 * off.  One line per call, so logs stay readable. */
void qk_progress_set_quiet(int quiet);
int qk_progress_quiet(void);
void qk_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A one-line meter "LABEL DONE/TOTAL UNIT   N s left", redrawn in place on
 * stderr when the program runs under workflow/qk-step on a terminal (the
 * label comes from QK_STEP); silent otherwise. Thread-safe callers only
 * (the head runner calls it under its lock). */
void qk_meter(long done, long total, const char *unit);
/* Erases the meter's line before the step prints its summary. */
void qk_meter_clear(void);

/* An output written to PATH.tmp.XXXXXX in the same directory and renamed
 * into place on commit, so a reader never sees a half-written file. A
 * symbolic link is followed (the file it names is replaced, the link
 * stays); a device, FIFO or socket (-o /dev/stdout) is written in place
 * (tmp_path NULL), as renaming over it would replace it. */
typedef struct qk_atomic {
    char *final_path;
    char *tmp_path;
    FILE *fp;
} qk_atomic;

int qk_atomic_open(qk_atomic *a, const char *path, qk_err *err);
/* Flushes, fsyncs and closes the temporary (a no-op the second time);
 * returns 0 or -1 (the temporary is removed). */
int qk_atomic_sync(qk_atomic *a, qk_err *err);
/* qk_atomic_sync, then renames into place; returns 0 or -1 (the temporary
 * is removed). */
int qk_atomic_commit(qk_atomic *a, qk_err *err);
/* Like qk_atomic_commit, but keeps the existing file (and its mtime) when
 * the new content is the same: for records that Make compares by mtime. */
int qk_atomic_commit_if_changed(qk_atomic *a, qk_err *err);
/* Removes the temporary file; safe to call after a failed commit. */
void qk_atomic_abort(qk_atomic *a);
/* A temporary file or directory tree, removed if the program stops (an
 * error through qk_die, or SIGINT, SIGTERM, SIGHUP, SIGPIPE) between
 * qk_temp_begin and qk_temp_end; path must stay allocated until then.
 * qk_atomic registers its temporary files itself. */
void qk_temp_begin(char *path);
void qk_temp_end(char *path);
/* Removes a directory tree (up to 8 levels deep), with system calls only,
 * as the removal of temporaries on a signal does. */
void qk_remove_tree(const char *path);
/* 0 if the file system of a's file has room for bytes more and still keeps
 * the free space set by qk_set_min_free; else -1 and "cannot write PATH:
 * not enough disk space (...)". A writer of large files calls it before
 * each large piece, so a full disk stops it before the disk fills. A
 * minimum of 0 turns the check off. */
int qk_atomic_reserve(qk_atomic *a, uint64_t bytes, qk_err *err);
/* The free space writers keep (--min-free); default QK_MIN_FREE_MB. */
#define QK_MIN_FREE_MB QK_DEFAULT_MIN_FREE
void qk_set_min_free(uint64_t bytes);

/* Creates DIR and its parents (like mkdir -p). */
int qk_mkdirs(const char *dir, qk_err *err);

/* Reads a whole file into memory (a trailing NUL is added, not counted). */
int qk_read_file(const char *path, uint8_t **data, size_t *len, qk_err *err);

/* 1 when both files can be read and hold the same bytes, else 0. */
int qk_same_file(const char *a, const char *b);

/* Joins two path components with one '/'; the result is malloc'ed. */
char *qk_path_join(const char *a, const char *b);
/* The directory of path ("." when it has no '/'); malloc'ed. */
char *qk_path_dir(const char *path);
/* NAME in the directory of path: path up to its last '/', then name (name
 * alone when path has no '/'); malloc'ed. */
char *qk_path_beside(const char *path, const char *name);
/* path as the user knows it: an output the pipeline builds in its stage
 * (the folder QK_STAGE names, "build/stage/") before publishing it is named
 * by its published path, so that the texts written about it say that;
 * any other path as it is. */
const char *qk_shown_path(const char *path);

/* Seconds on the monotonic clock, for timing. */
double qk_now(void);
/* CPU seconds used by the calling thread (CLOCK_THREAD_CPUTIME_ID): a time
 * that other processes on the machine do not stretch. */
double qk_thread_cpu(void);

/* Writes a double so that it reads back to the same bits (%.17g),
 * with "nan"/"inf" spelled as such. */
void qk_fprint_double(FILE *fp, double v);
/* A number cell of a TSV row: a tab, then v as qk_fprint_double writes it. */
void qk_put_num(FILE *fp, double v);

#endif
