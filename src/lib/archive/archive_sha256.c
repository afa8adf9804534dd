/* SHA-256 through libarchive: the mtree writer, asked for the "sha256"
 * keyword only, digests the data of each regular-file entry and prints
 * "sha256digest=<hex>" when the archive is closed.  The mtree text goes to
 * a small buffer in memory, from which the digest is read back. */
#include "qk/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <string.h>

static int writer_fail(qk_sha256 *h, const char *what, qk_err *err)
{
    struct archive *a = h->writer;
    qk_fail(err, "SHA-256 (libarchive mtree writer): %s: %s", what,
            a && archive_error_string(a) ? archive_error_string(a) : "failed");
    qk_sha256_discard(h);
    return -1;
}

int qk_sha256_begin(qk_sha256 *h, int64_t size, qk_err *err)
{
    memset(h, 0, sizeof *h);
    if (size < 0)
        return qk_fail(err, "SHA-256 of a negative size");
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();
    if (!a || !e) {
        if (a)
            archive_write_free(a);
        archive_entry_free(e);
        return qk_fail(err, "SHA-256: out of memory");
    }
    h->writer = a;
    h->entry = e;
    h->declared = size;
    if (archive_write_set_format_mtree(a) != ARCHIVE_OK ||
        archive_write_set_options(a, "!all,sha256") != ARCHIVE_OK ||
        archive_write_set_bytes_per_block(a, 0) != ARCHIVE_OK)
        return writer_fail(h, "setup", err);
    if (archive_write_open_memory(a, h->out, sizeof h->out - 1, &h->used) != ARCHIVE_OK)
        return writer_fail(h, "open", err);
    archive_entry_set_pathname(e, "d");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, size);
    if (archive_write_header(a, e) != ARCHIVE_OK)
        return writer_fail(h, "header", err);
    return 0;
}

int qk_sha256_update(qk_sha256 *h, const void *data, size_t len, qk_err *err)
{
    if ((int64_t)len > h->declared - h->fed) {
        qk_sha256_discard(h);
        return qk_fail(err, "more data than the %lld bytes expected", (long long)h->declared);
    }
    const char *p = data;
    while (len > 0) {
        la_ssize_t n = archive_write_data(h->writer, p, len);
        if (n <= 0)
            return writer_fail(h, "data", err);
        p += n;
        len -= (size_t)n;
        h->fed += n;
    }
    return 0;
}

static int parse_digest(const char *text, char hex[QK_SHA256_HEX_LEN + 1])
{
    const char *key = strstr(text, "sha256digest=");
    if (!key)
        return -1;
    const char *d = key + strlen("sha256digest=");
    for (int i = 0; i < QK_SHA256_HEX_LEN; i++) {
        char c = d[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return -1;
        hex[i] = c;
    }
    hex[QK_SHA256_HEX_LEN] = '\0';
    return 0;
}

int qk_sha256_end(qk_sha256 *h, char hex[QK_SHA256_HEX_LEN + 1], qk_err *err)
{
    if (h->fed != h->declared) {
        long long fed = (long long)h->fed, declared = (long long)h->declared;
        qk_sha256_discard(h);
        return qk_fail(err, "%lld bytes of data, %lld expected", fed, declared);
    }
    if (archive_write_finish_entry(h->writer) != ARCHIVE_OK ||
        archive_write_close(h->writer) != ARCHIVE_OK)
        return writer_fail(h, "close", err);
    h->out[h->used < sizeof h->out ? h->used : sizeof h->out - 1] = '\0';
    int rc = parse_digest(h->out, hex);
    qk_sha256_discard(h);
    if (rc != 0)
        return qk_fail(err, "SHA-256: libarchive wrote no sha256digest (built without SHA-256?)");
    return 0;
}

void qk_sha256_discard(qk_sha256 *h)
{
    if (h->writer)
        archive_write_free(h->writer);
    if (h->entry)
        archive_entry_free(h->entry);
    h->writer = NULL;
    h->entry = NULL;
}

int qk_sha256_buffer(const void *data, size_t len, char hex[QK_SHA256_HEX_LEN + 1],
                     qk_err *err)
{
    qk_sha256 h;
    if (qk_sha256_begin(&h, (int64_t)len, err) != 0 ||
        qk_sha256_update(&h, data, len, err) != 0)
        return -1;
    return qk_sha256_end(&h, hex, err);
}
