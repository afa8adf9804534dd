/* Reading qkreport archives held in memory: verify, extract and list
 * (include/qk/archive.h, docs/archive.md).
 *
 * gzip is inflated here with zlib and the tar stream handed to libarchive
 * through a read callback, rather than through libarchive's gzip filter:
 * the filter hands out nothing of a stream that is cut short, while zlib
 * yields every byte before the damage.  So a truncated or corrupt archive
 * still shows every member before the damage, and the member it lies in
 * can be named. */
#include "qk/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "qk/die.h"

#define CHUNK (64 * 1024)
#define MANIFEST_MAX_BYTES ((int64_t)256 << 20)
#define ZLIB_MAX_INPUT ((size_t)1 << 30) /* avail_in is 32 bits wide */

char *qk_archive_printable(const char *name)
{
    char *out = qk_malloc(4 * strlen(name) + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            o += sprintf(o, "\\x%02x", *p);
        else
            *o++ = (char)*p;
    }
    *o = '\0';
    return out;
}

/* ======================================================================= */
/* the tar bytes: the archive itself, or its gzip stream inflated           */
/* ======================================================================= */

typedef struct source {
    const uint8_t *data;
    size_t len;
    size_t fed;          /* bytes given to zlib so far */
    int gzip;
    int zlib_ready;
    int ended;           /* every byte handed out (plain) or the gzip data ended */
    z_stream zs;
    uint8_t *out;        /* inflated bytes, handed to libarchive */
    char error[192];     /* why the bytes stop early; "" while they do not */
} source;

static void source_error(source *s, const char *what)
{
    snprintf(s->error, sizeof s->error, "%s", what);
}

static void source_init(source *s, const uint8_t *data, size_t len)
{
    memset(s, 0, sizeof *s);
    s->data = data;
    s->len = len;
    s->gzip = len >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    if (!s->gzip)
        return;
    s->out = qk_malloc(CHUNK);
    if (inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK) /* 16: gzip framing */
        source_error(s, "cannot initialise zlib");
    else
        s->zlib_ready = 1;
}

static void source_free(source *s)
{
    if (s->zlib_ready)
        inflateEnd(&s->zs);
    free(s->out);
    memset(s, 0, sizeof *s);
}

/* Gives zlib the next piece of input when it has used the last one. */
static void source_feed(source *s)
{
    if (s->zs.avail_in > 0 || s->fed == s->len)
        return;
    size_t n = s->len - s->fed < ZLIB_MAX_INPUT ? s->len - s->fed : ZLIB_MAX_INPUT;
    s->zs.next_in = (Bytef *)(uintptr_t)(s->data + s->fed);
    s->zs.avail_in = (uInt)n;
    s->fed += n;
}

/* After the end of one gzip member: another member, or the end. */
static void source_member_end(source *s)
{
    source_feed(s);
    size_t left = s->zs.avail_in + (s->len - s->fed);
    if (left == 0) {
        s->ended = 1;
        return;
    }
    if (s->zs.avail_in >= 2 && s->zs.next_in[0] == 0x1f && s->zs.next_in[1] == 0x8b) {
        inflateReset(&s->zs);
        return;
    }
    snprintf(s->error, sizeof s->error, "%zu bytes of something else after the gzip data",
             left);
}

/* Inflates the next piece into s->out: its length, 0 at the end, -1 when
 * the data stops early (s->error says why). */
static la_ssize_t source_inflate(source *s)
{
    while (!s->ended && !s->error[0]) {
        source_feed(s);
        s->zs.next_out = s->out;
        s->zs.avail_out = CHUNK;
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        size_t produced = CHUNK - s->zs.avail_out;
        if (rc == Z_STREAM_END)
            source_member_end(s);
        else if (rc == Z_BUF_ERROR)
            source_error(s, "the gzip data ends early");
        else if (rc != Z_OK)
            snprintf(s->error, sizeof s->error, "corrupt gzip data: %s",
                     s->zs.msg ? s->zs.msg : "inflate failed");
        if (produced > 0) /* bytes before an error still count */
            return (la_ssize_t)produced;
    }
    return s->error[0] ? -1 : 0;
}

static la_ssize_t source_read(struct archive *a, void *ctx, const void **buf)
{
    source *s = ctx;
    if (!s->gzip) {
        *buf = s->data;
        if (s->ended)
            return 0;
        s->ended = 1;
        return (la_ssize_t)s->len;
    }
    *buf = s->out;
    la_ssize_t n = source_inflate(s);
    if (n < 0)
        archive_set_error(a, EIO, "%s", s->error);
    return n < 0 ? ARCHIVE_FATAL : n;
}

/* Reads the rest of the gzip data after the tar's end: a damaged trailer
 * or trailing bytes are damage too. */
static int source_drain(source *s)
{
    la_ssize_t n;
    if (!s->gzip)
        return 0;
    while ((n = source_inflate(s)) > 0)
        ;
    return n < 0 ? -1 : 0;
}

/* ======================================================================= */
/* one pass over the archive                                                */
/* ======================================================================= */

typedef struct check {
    const uint8_t *data;
    size_t len;
    qk_archive_report_fn report;
    void *ctx;
    int problems;
    int quiet;                   /* safety pass: damage is left to the next pass */
    source src;
    struct archive *a;           /* the open pass */
    int have_manifest;
    qk_manifest manifest;
    char *manifest_text;
    int64_t manifest_size;
    unsigned char *seen;         /* per MANIFEST file */
    char *last;                  /* path of the last member after MANIFEST */
    int files;                   /* members whose size and digest matched */
    struct archive *disk;        /* extract: where members are written */
    const char *disk_dir;
} check;

static void report(check *c, const char *entry, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(check *c, const char *entry, const char *fmt, ...)
{
    qk_err err;
    va_list ap;
    va_start(ap, fmt);
    qk_vfail(&err, fmt, ap);
    va_end(ap);
    c->report(c->ctx, entry, err.msg);
    c->problems++;
}

/* Why reading stopped: the source's own reason, else libarchive's. */
static const char *damage(check *c)
{
    if (c->src.error[0])
        return c->src.error;
    const char *why = archive_error_string(c->a);
    return why ? why : "damaged or truncated data";
}

static int broken_between(check *c);

static int open_pass(check *c)
{
    source_init(&c->src, c->data, c->len);
    c->a = archive_read_new();
    if (!c->a)
        qk_die(QK_EXIT_DATA, NULL, "out of memory (libarchive reader)");
    archive_read_support_format_tar(c->a);
    if (archive_read_open(c->a, &c->src, NULL, source_read, NULL) != ARCHIVE_OK) {
        if (c->src.error[0]) /* gzip data that breaks off before a tar header */
            return broken_between(c);
        if (!c->quiet)
            report(c, NULL, "not a readable tar.gz archive: %s", damage(c));
        return -1;
    }
    return 0;
}

static void close_pass(check *c)
{
    if (c->a)
        archive_read_free(c->a);
    c->a = NULL;
    source_free(&c->src);
}

static int unreached(const check *c)
{
    int n = 0;
    for (int i = 0; c->have_manifest && i < c->manifest.n_files; i++)
        n += !c->seen[i];
    return n;
}

/* The archive breaks off inside the data of a member. */
static int broken_inside(check *c, const char *entry)
{
    if (c->quiet)
        return -1;
    int left = unreached(c);
    if (left > 0)
        report(c, entry,
               "damaged or truncated archive inside this member (%s); %d more file%s of "
               "MANIFEST not reached",
               damage(c), left, left == 1 ? "" : "s");
    else
        report(c, entry, "damaged or truncated archive inside this member (%s)", damage(c));
    return -1;
}

/* The file of MANIFEST that should come next: the first one not seen that
 * sorts after the last member read (members are in MANIFEST's order). */
static const char *expected_next(const check *c)
{
    for (int i = 0; c->have_manifest && i < c->manifest.n_files; i++)
        if (!c->seen[i] && (!c->last || strcmp(c->manifest.files[i].path, c->last) > 0))
            return c->manifest.files[i].path;
    return NULL;
}

/* The archive breaks off between members (or in a member's header). */
static int broken_between(check *c)
{
    if (c->quiet)
        return -1;
    const char *next = c->have_manifest ? expected_next(c) : QK_MANIFEST_NAME;
    const char *after = c->last ? c->last : QK_MANIFEST_NAME;
    int left = unreached(c);
    if (next && left > 1)
        report(c, next,
               "damaged or truncated archive where this member should start, after '%s' (%s); "
               "%d more file%s of MANIFEST not reached",
               after, damage(c), left - 1, left == 2 ? "" : "s");
    else if (next && c->have_manifest)
        report(c, next,
               "damaged or truncated archive where this member should start, after '%s' (%s)",
               after, damage(c));
    else if (next)
        report(c, next, "damaged or truncated archive at the first member (%s)", damage(c));
    else
        report(c, NULL, "damaged or truncated archive after its last member '%s' (%s)", after,
               damage(c));
    return -1;
}

/* The next entry: 1, 0 at the end of the archive, -1 when reading stops. */
static int next_entry(check *c, struct archive_entry **e)
{
    int rc = archive_read_next_header(c->a, e);
    if (rc == ARCHIVE_EOF)
        return 0;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
        return broken_between(c);
    if (!archive_entry_pathname(*e)) {
        if (!c->quiet)
            report(c, NULL, "the entry after '%s' has no readable path name",
                   c->last ? c->last : QK_MANIFEST_NAME);
        return -1;
    }
    return 1;
}

static int skip_data(check *c, const char *entry)
{
    return archive_read_data_skip(c->a) == ARCHIVE_OK ? 0 : broken_inside(c, entry);
}

/* Why an entry may not be in a qkreport archive, or NULL. */
static const char *entry_problem(struct archive_entry *e)
{
    if (archive_entry_hardlink(e))
        return "hard link entry";
    switch (archive_entry_filetype(e)) {
    case AE_IFREG: return qk_archive_path_problem(archive_entry_pathname(e));
    case AE_IFLNK: return "symbolic link entry";
    case AE_IFCHR:
    case AE_IFBLK: return "device entry";
    case AE_IFIFO: return "fifo entry";
    case AE_IFSOCK: return "socket entry";
    case AE_IFDIR: return "directory entry (qkreport archives hold regular files only)";
    default: return "entry of unknown type";
    }
}

/* ---- MANIFEST ---------------------------------------------------------------- */

/* Reads size bytes of the current entry, growing the buffer as they come
 * (a header may claim more than the archive holds): 0, -1 when the
 * archive breaks off (reported), 1 when the entry ends early. */
static int read_text(check *c, int64_t size, char **text)
{
    size_t cap = 0, got = 0;
    char *buf = NULL;
    while ((int64_t)got < size) {
        if (got == cap) {
            cap = cap ? 2 * cap : CHUNK;
            if ((int64_t)cap > size)
                cap = (size_t)size;
            buf = qk_realloc(buf, cap);
        }
        la_ssize_t n = archive_read_data(c->a, buf + got, cap - got);
        if (n < 0 || (n == 0 && (int64_t)got < size)) {
            free(buf);
            return n < 0 ? broken_inside(c, QK_MANIFEST_NAME) : 1;
        }
        got += (size_t)n;
    }
    *text = buf;
    return 0;
}

/* Reads and parses the first entry, which must be MANIFEST. */
static int read_manifest(check *c)
{
    struct archive_entry *e;
    int r = next_entry(c, &e);
    if (r <= 0) {
        if (r == 0)
            report(c, NULL, "empty archive (no MANIFEST)");
        return -1;
    }
    const char *name = archive_entry_pathname(e);
    if (strcmp(name, QK_MANIFEST_NAME) != 0) {
        report(c, NULL, "first entry is '%s', not MANIFEST (not an archive of qk-archive create)",
               name);
        return -1;
    }
    if (entry_problem(e)) {
        report(c, QK_MANIFEST_NAME, "not a regular file");
        return -1;
    }
    int64_t size = archive_entry_size(e);
    if (size <= 0 || size > MANIFEST_MAX_BYTES) {
        report(c, QK_MANIFEST_NAME, "size %lld is out of range", (long long)size);
        return -1;
    }
    char *text;
    int r_text = read_text(c, size, &text);
    if (r_text != 0) {
        if (r_text > 0)
            report(c, QK_MANIFEST_NAME, "shorter than its header says");
        return -1;
    }
    qk_err err;
    if (qk_manifest_parse(text, (size_t)size, &c->manifest, &err) != 0) {
        free(text);
        report(c, QK_MANIFEST_NAME, "%s", err.msg);
        return -1;
    }
    c->have_manifest = 1;
    c->manifest_text = text;
    c->manifest_size = size;
    c->seen = qk_calloc((size_t)(c->manifest.n_files ? c->manifest.n_files : 1), 1);
    return 0;
}

static void forget_manifest(check *c)
{
    if (c->have_manifest)
        qk_manifest_free(&c->manifest);
    c->have_manifest = 0;
    free(c->seen);
    free(c->manifest_text);
    free(c->last);
    c->seen = NULL;
    c->manifest_text = NULL;
    c->last = NULL;
}

/* ---- member data: digest, and for extract a copy on disk ---------------------- */

static int disk_check(check *c, int rc, const char *entry)
{
    if (rc == ARCHIVE_OK)
        return 0;
    const char *why = archive_error_string(c->disk);
    report(c, entry, "cannot write it into %s: %s", c->disk_dir, why ? why : "failed");
    return -1;
}

/* A fresh header for the disk: path, regular file, 0644; nothing else of
 * the archive's entry (owner, mode bits, times) reaches the disk. */
static int disk_begin(check *c, const char *path, int64_t size)
{
    struct archive_entry *out = archive_entry_new();
    if (!out)
        qk_die(QK_EXIT_DATA, NULL, "out of memory (libarchive entry)");
    archive_entry_set_pathname(out, path);
    archive_entry_set_filetype(out, AE_IFREG);
    archive_entry_set_perm(out, 0644);
    archive_entry_set_size(out, size);
    int rc = disk_check(c, archive_write_header(c->disk, out), path);
    archive_entry_free(out);
    return rc;
}

static int disk_write(check *c, const char *path, const char *data, size_t len)
{
    while (len > 0) {
        la_ssize_t n = archive_write_data(c->disk, data, len);
        if (n <= 0)
            return disk_check(c, ARCHIVE_FATAL, path);
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Streams the current member through the digest (and onto the disk). */
static int member_digest(check *c, const char *path, int64_t size,
                         char hex[QK_SHA256_HEX_LEN + 1])
{
    static char buf[CHUNK];
    qk_sha256 h;
    qk_err err;
    if (qk_sha256_begin(&h, size, &err) != 0) {
        report(c, path, "%s", err.msg);
        return -1;
    }
    if (c->disk && disk_begin(c, path, size) != 0) {
        qk_sha256_discard(&h);
        return -1;
    }
    for (;;) {
        la_ssize_t n = archive_read_data(c->a, buf, sizeof buf);
        if (n == 0)
            break;
        int rc = n < 0 ? broken_inside(c, path) : 0;
        if (rc == 0 && qk_sha256_update(&h, buf, (size_t)n, &err) != 0) {
            report(c, path, "more data than its header says (%s)", err.msg);
            return -1; /* the update freed the digest */
        }
        if (rc == 0 && c->disk)
            rc = disk_write(c, path, buf, (size_t)n);
        if (rc != 0) {
            qk_sha256_discard(&h);
            return -1;
        }
    }
    if (qk_sha256_end(&h, hex, &err) != 0) {
        report(c, path, "less data than its header says (%s)", err.msg);
        return -1;
    }
    return c->disk ? disk_check(c, archive_write_finish_entry(c->disk), path) : 0;
}

static int compare_member(check *c, struct archive_entry *e, const qk_manifest_file *want)
{
    int64_t size = archive_entry_size(e);
    char hex[QK_SHA256_HEX_LEN + 1];
    if (member_digest(c, want->path, size, hex) != 0)
        return -1;
    if (size != want->size)
        report(c, want->path, "size differs from MANIFEST (%lld bytes, MANIFEST says %lld)",
               (long long)size, (long long)want->size);
    else if (strcmp(hex, want->sha256) != 0)
        report(c, want->path, "content differs from MANIFEST (sha256 %s, MANIFEST says %s)", hex,
               want->sha256);
    else
        c->files++;
    return 0;
}

/* The last member read, for naming where damage starts. */
static void remember(check *c, const char *path)
{
    if (strcmp(path, QK_MANIFEST_NAME) == 0)
        return;
    free(c->last);
    c->last = qk_strdup(path);
}

/* Checks one entry after MANIFEST: safe, regular, listed once, intact. */
static int check_entry(check *c, struct archive_entry *e)
{
    const char *path = archive_entry_pathname(e);
    const char *why = entry_problem(e);
    int listed = -1;
    if (why)
        report(c, path, "%s", why);
    else if (strcmp(path, QK_MANIFEST_NAME) == 0)
        report(c, path, "a second MANIFEST entry");
    else if ((listed = qk_manifest_find(&c->manifest, path)) < 0)
        report(c, path, "not listed in MANIFEST (extra file)");
    else if (c->seen[listed]) {
        report(c, path, "appears twice in the archive");
        listed = -1;
    }
    int rc;
    if (listed < 0) {
        rc = skip_data(c, path);
    } else {
        c->seen[listed] = 1;
        rc = compare_member(c, e, &c->manifest.files[listed]);
    }
    remember(c, path);
    return rc;
}

static void report_missing(check *c)
{
    for (int i = 0; i < c->manifest.n_files; i++)
        if (!c->seen[i])
            report(c, c->manifest.files[i].path,
                   "listed in MANIFEST but missing from the archive");
}

static int write_manifest(check *c)
{
    if (disk_begin(c, QK_MANIFEST_NAME, c->manifest_size) != 0 ||
        disk_write(c, QK_MANIFEST_NAME, c->manifest_text, (size_t)c->manifest_size) != 0)
        return -1;
    return disk_check(c, archive_write_finish_entry(c->disk), QK_MANIFEST_NAME);
}

/* One full pass: MANIFEST, every member, then the files never seen.  With
 * c->disk set, MANIFEST and the members are written as they are read. */
static void check_pass(check *c)
{
    int rc = open_pass(c);
    if (rc == 0)
        rc = read_manifest(c);
    if (rc == 0 && c->disk)
        rc = write_manifest(c);
    struct archive_entry *e;
    int r = 0;
    while (rc == 0 && (r = next_entry(c, &e)) == 1)
        rc = check_entry(c, e);
    if (rc == 0 && r < 0)
        rc = -1;
    if (rc == 0 && source_drain(&c->src) != 0) {
        report(c, NULL, "damaged archive after its last member (%s)", c->src.error);
        rc = -1;
    }
    if (rc == 0)
        report_missing(c);
    close_pass(c);
}

static void check_init(check *c, const void *data, size_t len, qk_archive_report_fn report_fn,
                       void *ctx)
{
    memset(c, 0, sizeof *c);
    c->data = data;
    c->len = len;
    c->report = report_fn;
    c->ctx = ctx;
}

int qk_archive_verify(const void *data, size_t len, qk_archive_report_fn report_fn, void *ctx,
                      int *verified)
{
    check c;
    check_init(&c, data, len, report_fn, ctx);
    check_pass(&c);
    forget_manifest(&c);
    *verified = c.files;
    return c.problems;
}

/* ---- extract ---------------------------------------------------------------- */

/* Headers only: names every entry that extraction must never write.
 * Damage is left to the verifying pass, which names it. */
/* What on disk would stop a member from being written to dir/path: a file
 * where one of its folders goes, or a folder where it goes. Found before
 * anything is written, so that extraction never stops half-way. */
static const char *disk_conflict(const char *dir, const char *path, char *why, size_t cap)
{
    char *full = qk_path_join(dir, path);
    size_t skip = strlen(full) - strlen(path);
    struct stat st;
    const char *found = NULL;
    for (char *slash = strchr(full + skip, '/'); slash && !found; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (lstat(full, &st) == 0 && !S_ISDIR(st.st_mode)) {
            snprintf(why, cap, "%s is not a directory", full);
            found = why;
        }
        *slash = '/';
    }
    if (!found && lstat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(why, cap, "%s is a directory", full);
        found = why;
    }
    free(full);
    return found;
}

static void safety_pass(check *c)
{
    c->quiet = 1;
    if (open_pass(c) == 0) {
        struct archive_entry *e;
        while (next_entry(c, &e) == 1) {
            char conflict[512];
            const char *why = entry_problem(e);
            if (!why && c->disk_dir)
                why = disk_conflict(c->disk_dir, archive_entry_pathname(e), conflict,
                                    sizeof conflict);
            if (why)
                report(c, archive_entry_pathname(e), "refusing to extract: %s", why);
            if (skip_data(c, archive_entry_pathname(e)) != 0)
                break;
        }
    }
    close_pass(c);
    c->quiet = 0;
}

static struct archive *open_disk(check *c)
{
    struct archive *disk = archive_write_disk_new();
    if (!disk)
        qk_die(QK_EXIT_DATA, NULL, "out of memory (libarchive disk writer)");
    int flags = ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS;
#ifdef ARCHIVE_EXTRACT_SAFE_WRITES
    flags |= ARCHIVE_EXTRACT_SAFE_WRITES;
#endif
    if (archive_write_disk_set_options(disk, flags) != ARCHIVE_OK) {
        report(c, NULL, "libarchive: %s", archive_error_string(disk));
        archive_write_free(disk);
        return NULL;
    }
    return disk;
}

/* The writing pass, run inside dir; the working directory is restored. */
static void write_pass(check *c, const char *dir)
{
    qk_err err;
    int home = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (home < 0) {
        report(c, NULL, "cannot open the working directory: %s", strerror(errno));
        return;
    }
    if (qk_mkdirs(dir, &err) != 0)
        report(c, NULL, "%s", err.msg);
    else if (chdir(dir) != 0)
        report(c, NULL, "cannot enter %s: %s", dir, strerror(errno));
    else if ((c->disk = open_disk(c)) != NULL) {
        check_pass(c);
        if (!c->problems)
            disk_check(c, archive_write_close(c->disk), ".");
        archive_write_free(c->disk);
        c->disk = NULL;
    }
    if (fchdir(home) != 0)
        qk_die(QK_EXIT_DATA, NULL, "cannot return to the working directory: %s",
               strerror(errno));
    close(home);
}

int qk_archive_extract(const void *data, size_t len, const char *dir,
                       qk_archive_report_fn report_fn, void *ctx, int *extracted)
{
    check c;
    check_init(&c, data, len, report_fn, ctx);
    c.disk_dir = dir;
    *extracted = 0;
    safety_pass(&c);
    if (!c.problems)
        check_pass(&c); /* verify everything before writing anything */
    forget_manifest(&c);
    if (!c.problems) {
        c.files = 0;
        write_pass(&c, dir); /* write, digesting again what is written */
        forget_manifest(&c);
        *extracted = c.files;
    }
    return c.problems;
}

/* ---- list ------------------------------------------------------------------- */

int qk_archive_list(const void *data, size_t len, qk_archive_entry_fn entry,
                    qk_archive_report_fn report_fn, void *ctx)
{
    check c;
    check_init(&c, data, len, report_fn, ctx);
    if (open_pass(&c) == 0) {
        struct archive_entry *e;
        int r;
        while ((r = next_entry(&c, &e)) == 1) {
            const char *path = archive_entry_pathname(e);
            entry(ctx, path, archive_entry_size(e), entry_problem(e));
            if (skip_data(&c, path) != 0)
                break;
            remember(&c, path);
        }
        if (r == 0 && source_drain(&c.src) != 0)
            report(&c, NULL, "damaged archive after its last member (%s)", c.src.error);
    }
    close_pass(&c);
    free(c.last);
    return c.problems;
}
