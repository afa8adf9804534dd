/* The pieces of qk-archive that are worth testing on their own: SHA-256
 * through libarchive, the MANIFEST text format, the rules for entry paths,
 * and reading archives (verify, extract, list).  The format is described
 * in docs/archive.md. */
#ifndef QK_ARCHIVE_H
#define QK_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "qk/common.h"

/* ---- SHA-256 ------------------------------------------------------------
 * libarchive's mtree writer computes the digest of each entry it is given;
 * one digest is one mtree "archive" written to memory.  The byte count must
 * be known up front (it is the entry size); feeding more or fewer bytes than
 * declared is an error.  The state holds the buffer libarchive writes to,
 * so it must stay at one address from begin to end. */

#define QK_SHA256_HEX_LEN 64

typedef struct qk_sha256 {
    void *writer;        /* struct archive * (mtree format, in memory) */
    void *entry;         /* struct archive_entry * */
    int64_t declared;    /* bytes announced to qk_sha256_begin */
    int64_t fed;         /* bytes given so far */
    size_t used;         /* bytes of mtree text in out */
    char out[1024];      /* the mtree text: "#mtree\n./d sha256digest=...\n" */
} qk_sha256;

int qk_sha256_begin(qk_sha256 *h, int64_t size, qk_err *err);
int qk_sha256_update(qk_sha256 *h, const void *data, size_t len, qk_err *err);
/* Writes 64 lowercase hex digits and a NUL into hex; frees the state. */
int qk_sha256_end(qk_sha256 *h, char hex[QK_SHA256_HEX_LEN + 1], qk_err *err);
/* Frees the state without a result (after an error); safe to repeat. */
void qk_sha256_discard(qk_sha256 *h);
/* The digest of one buffer. */
int qk_sha256_buffer(const void *data, size_t len, char hex[QK_SHA256_HEX_LEN + 1],
                     qk_err *err);

/* ---- MANIFEST -------------------------------------------------------------
 *   qkreport-manifest 1
 *   suite-version VERSION
 *   param KEY=VALUE          (zero or more, sorted by KEY bytewise)
 *   files N
 *   SHA256 SIZE PATH         (N lines, sorted by PATH bytewise)
 */

#define QK_MANIFEST_NAME "MANIFEST"
#define QK_MANIFEST_MAGIC "qkreport-manifest 1"

typedef struct qk_manifest_file {
    char *path;
    int64_t size;
    char sha256[QK_SHA256_HEX_LEN + 1];
} qk_manifest_file;

typedef struct qk_manifest {
    char *suite_version;
    int n_params;
    char **params;           /* "KEY=VALUE" */
    int n_files;
    qk_manifest_file *files;
} qk_manifest;

/* Sorts params by key and files by path, and checks every field: returns -1
 * with a message on a bad key, value, version or path, or a repeated key or
 * path. */
int qk_manifest_normalize(qk_manifest *m, qk_err *err);
/* The MANIFEST text of a normalized manifest (malloc'ed, NUL-terminated). */
char *qk_manifest_format(const qk_manifest *m, size_t *len);
/* Parses and checks a MANIFEST; messages name the line ("line 4: ..."). */
int qk_manifest_parse(const char *text, size_t len, qk_manifest *m, qk_err *err);
/* The file entry for path, or -1 (binary search; files must be sorted). */
int qk_manifest_find(const qk_manifest *m, const char *path);
void qk_manifest_free(qk_manifest *m);

/* ---- paths and parameters ---------------------------------------------- */

/* Why path cannot be an entry of a qkreport archive ("absolute path",
 * "'..' component", ...), or NULL if it is a canonical relative path:
 * components separated by single '/', none empty, "." or "..", valid
 * UTF-8 and no control characters. */
const char *qk_archive_path_problem(const char *path);

/* Why "KEY=VALUE" is not a valid parameter, or NULL.  KEY: a letter or '_'
 * then letters, digits, '_', '.', '-', '/'; VALUE: anything but control
 * characters (it may be empty). */
const char *qk_archive_param_problem(const char *param);

/* Why a suite version is not valid (empty, control characters), or NULL. */
const char *qk_archive_version_problem(const char *version);

/* ---- reading archives ------------------------------------------------------
 * An archive is read from memory (qk-archive maps the file): a tar,
 * gzip-compressed as create writes it, or plain.  Every problem found is
 * handed to report(ctx, entry, problem): entry is the member it is about
 * (its raw name, which may hold any byte), or NULL for the archive as a
 * whole; problem is one printable line.  A damaged or truncated archive is
 * reported once, naming the member the damage is in, or the member that
 * should have followed.  Each function returns the number of problems
 * reported (0: the archive is intact). */

typedef void (*qk_archive_report_fn)(void *ctx, const char *entry, const char *problem);

/* Checks MANIFEST and every member against it: altered, missing, extra,
 * repeated and unsafe members are each reported.  *verified gets the
 * number of members whose size and SHA-256 match. */
int qk_archive_verify(const void *data, size_t len, qk_archive_report_fn report, void *ctx,
                      int *verified);

/* Refuses an archive with any unsafe entry (absolute path, '..', link,
 * device, directory ...), verifies it, and only then writes MANIFEST and
 * the members under dir (created if missing), digesting them again as they
 * are written.  The working directory is dir during the call and restored
 * before it returns.  *extracted gets the number of members written. */
int qk_archive_extract(const void *data, size_t len, const char *dir,
                       qk_archive_report_fn report, void *ctx, int *extracted);

/* Calls entry(ctx, path, size, problem) for every entry in order; problem
 * is why extract would refuse the entry, or NULL. */
typedef void (*qk_archive_entry_fn)(void *ctx, const char *path, int64_t size,
                                    const char *problem);
int qk_archive_list(const void *data, size_t len, qk_archive_entry_fn entry,
                    qk_archive_report_fn report, void *ctx);

/* A name made safe to print on one line: control bytes become \xNN
 * (malloc'ed). */
char *qk_archive_printable(const char *name);

#endif
