/* Error reporting, allocation, atomic output files and hashing. */
#include "qk/common.h"

#include <errno.h>
#include <signal.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static const char *progname = "qkreport";
static mode_t output_umask = 022; /* the outputs' permissions: 0666 without it */
static int progress_quiet = 0;

/* The temporary files of the outputs being written. A program that stops
 * before their commit, on an error (the program layer's exit, src/lib/cli)
 * or on a signal (make stopped, Ctrl-C), removes them, so that nothing half-written stays beside the
 * outputs. The slots are written by the thread that opens or ends an output
 * and only read by the exit and signal paths (unlink is async-signal-safe). */
#define MAX_PENDING 256
static char *volatile pending[MAX_PENDING];
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

static void pending_set(char *old_path, char *new_path)
{
    pthread_mutex_lock(&pending_lock);
    for (int i = 0; i < MAX_PENDING; i++)
        if (pending[i] == old_path) {
            pending[i] = new_path;
            break;
        }
    pthread_mutex_unlock(&pending_lock);
}

/* Removes a directory tree with system calls only (no allocation), so
 * that a signal handler may call it; returns 0 once it is gone. */
static int remove_tree_raw(int parent, const char *name, int depth)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    ssize_t got;
    int progress = 1;
    /* entries are removed while the directory is read: read it again until
     * a pass removes nothing */
    while (progress) {
        progress = 0;
        lseek(fd, 0, SEEK_SET);
        while ((got = getdents64(fd, buf, sizeof buf)) > 0)
            for (ssize_t at = 0; at < got;) {
                struct dirent64 *e = (struct dirent64 *)(buf + at);
                at += e->d_reclen;
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                    continue;
                if (unlinkat(fd, e->d_name, 0) == 0 ||
                    ((errno == EISDIR || errno == EPERM) && depth < 8 &&
                     remove_tree_raw(fd, e->d_name, depth + 1) == 0))
                    progress = 1;
            }
    }
    close(fd);
    return unlinkat(parent, name, AT_REMOVEDIR);
}

void qk_remove_pending_outputs(void)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        const char *path = pending[i];
        if (path && unlink(path) != 0 && (errno == EISDIR || errno == EPERM))
            remove_tree_raw(AT_FDCWD, path, 0);
    }
}

void qk_remove_tree(const char *path) { remove_tree_raw(AT_FDCWD, path, 0); }

void qk_temp_begin(char *path) { pending_set(NULL, path); }
void qk_temp_end(char *path) { pending_set(path, NULL); }

static void stop_on_signal(int sig)
{
    qk_remove_pending_outputs();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Ignoring SIGXFSZ turns a write past the file size limit (ulimit -f) into
 * an EFBIG error that the output code reports, instead of a silent death. */
void qk_set_progname(const char *name)
{
    progname = name;
    output_umask = umask(0); /* read while the program has one thread */
    umask(output_umask);
    signal(SIGXFSZ, SIG_IGN);
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        struct sigaction old;
        /* a signal ignored by the caller (nohup) stays ignored */
        if (sigaction(stops[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            signal(stops[i], stop_on_signal);
    }
}
const char *qk_progname(void) { return progname; }

/* Control bytes become \xNN in place (the message is cut to fit), so text
 * taken from a file cannot split or overwrite the error line. */
static void escape_controls(qk_err *err)
{
    char copy[sizeof err->msg];
    memcpy(copy, err->msg, sizeof copy);
    char *msg = err->msg;
    size_t cap = sizeof err->msg, out = 0;
    for (const unsigned char *p = (const unsigned char *)copy; *p; p++) {
        int control = *p < 0x20 || *p == 0x7f;
        size_t need = control ? 4 : 1;
        if (out + need >= cap)
            break;
        if (control)
            out += (size_t)snprintf(msg + out, cap - out, "\\x%02x", *p);
        else
            msg[out++] = (char)*p;
    }
    msg[out] = '\0';
}

int qk_vfail(qk_err *err, const char *fmt, va_list ap)
{
    if (!err)
        return -1;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    for (const char *p = err->msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            escape_controls(err);
            break;
        }
    return -1;
}

int qk_fail(qk_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    qk_vfail(err, fmt, ap);
    va_end(ap);
    return -1;
}

static int meter_on(void);

/* A warning or an error starts on a clean line: over the progress line of
 * this or another step (make -j), which is drawn again below it. The
 * clearing goes out in the line's own write, so that no progress line of
 * another step comes between them. */
static const char *progress_clear(void)
{
    return meter_on() ? "\r\033[K" : "";
}

void qk_report_error(const char *path, const char *msg)
{
    if (path)
        fprintf(stderr, "%s%s: error: %s: %s\n", progress_clear(), progname, path, msg);
    else
        fprintf(stderr, "%s%s: error: %s\n", progress_clear(), progname, msg);
}

/* Writes "PROGRAM: KIND: TEXT" and a newline to stderr (over a progress
 * line on a terminal: progress_clear) in one write, so
 * that the lines of steps running side by side (make -j) never interleave
 * (stderr is unbuffered: one fprintf call is one write, three calls are
 * three). A text too long for the buffer is cut. */
static void put_line(const char *kind, const char *fmt, va_list ap)
{
    char text[4096];
    vsnprintf(text, sizeof text, fmt, ap);
    fprintf(stderr, "%s%s: %s%s\n", progress_clear(), progname, kind, text);
}

void qk_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_line("warning: ", fmt, ap);
    va_end(ap);
}

static qk_out_of_memory_fn out_of_memory_handler;

void qk_set_out_of_memory_handler(qk_out_of_memory_fn handler)
{
    out_of_memory_handler = handler;
}

void qk_out_of_memory(size_t n)
{
    if (out_of_memory_handler)
        out_of_memory_handler(n);
    /* no program layer to end the program with its status: stop here, as
     * the handler would, without returning a NULL no caller expects */
    char msg[96];
    snprintf(msg, sizeof msg, "out of memory (allocating %zu bytes)", n);
    qk_report_error(NULL, msg);
    qk_remove_pending_outputs();
    abort();
}

void *qk_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        qk_out_of_memory(n);
    return p;
}

void *qk_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        qk_out_of_memory(count * size);
    return p;
}

void *qk_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        qk_out_of_memory(n);
    return q;
}

size_t qk_utf8_chars(const char *s)
{
    size_t n = 0;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        n += (*c & 0xc0) != 0x80;
    return n;
}

char *qk_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = qk_malloc(n);
    memcpy(d, s, n);
    return d;
}

void qk_progress_set_quiet(int quiet) { progress_quiet = quiet; }
int qk_progress_quiet(void) { return progress_quiet; }

void qk_progress(const char *fmt, ...)
{
    if (progress_quiet || !isatty(STDERR_FILENO))
        return;
    va_list ap;
    va_start(ap, fmt);
    put_line("", fmt, ap);
    va_end(ap);
}

/* The meter: one updating line on a terminal, for a program run by
 * workflow/qk-step, which puts the step's label in QK_STEP only when its
 * stderr is a terminal. Updates come at most four times a second. */
static struct {
    int state; /* 0 unknown, 1 on, -1 off */
    const char *label;
    double start, last;
} meter;

static int meter_on(void)
{
    if (meter.state == 0) {
        meter.label = getenv("QK_STEP");
        meter.state = meter.label && *meter.label && isatty(STDERR_FILENO) ? 1 : -1;
        meter.start = qk_now();
    }
    return meter.state > 0;
}

void qk_meter(long done, long total, const char *unit)
{
    if (!meter_on() || total <= 0)
        return;
    double now = qk_now();
    if (done < total && now - meter.last < 0.25)
        return;
    meter.last = now;
    double elapsed = now - meter.start;
    /* the label without the padding of the step lines, so that the line
     * stays within 80 columns (a wrapped line could not be redrawn) */
    int label_len = (int)strlen(meter.label);
    while (label_len > 0 && meter.label[label_len - 1] == ' ')
        label_len--;
    fprintf(stderr, "\r\033[K%.*s  %ld/%ld %s", label_len, meter.label, done, total, unit);
    if (done > 0 && done < total)
        fprintf(stderr, "   %.0f s left", elapsed / (double)done * (double)(total - done));
    fflush(stderr);
}

void qk_meter_clear(void)
{
    if (meter.state > 0) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

/* An output that is not a regular file (a device, a FIFO): opened for
 * writing in place. */
static int open_in_place(qk_atomic *a, const char *path, qk_err *err)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return qk_fail(err, "cannot open %s: %s", path, strerror(errno));
    a->fp = fdopen(fd, "wb");
    if (!a->fp) {
        close(fd);
        return qk_fail(err, "cannot open %s: %s", path, strerror(errno));
    }
    a->final_path = qk_strdup(path);
    return 0;
}

int qk_atomic_open(qk_atomic *a, const char *path, qk_err *err)
{
    memset(a, 0, sizeof *a);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return open_in_place(a, path, err);
    /* through a symbolic link to its file, so that the link stays */
    char *target = realpath(path, NULL);
    const char *where = target ? target : path;
    size_t n = strlen(where) + 16;
    a->final_path = qk_strdup(where);
    a->tmp_path = qk_malloc(n);
    snprintf(a->tmp_path, n, "%s.tmp.XXXXXX", where);
    free(target);
    int fd = mkstemp(a->tmp_path);
    if (fd < 0) {
        int e = errno;
        free(a->final_path);
        free(a->tmp_path);
        memset(a, 0, sizeof *a);
        return qk_fail(err, "cannot create %s: %s", path, strerror(e));
    }
    fchmod(fd, 0666 & ~output_umask);
    pending_set(NULL, a->tmp_path);
    a->fp = fdopen(fd, "wb");
    if (!a->fp) {
        close(fd);
        qk_atomic_abort(a);
        return qk_fail(err, "cannot open %s: %s", path, strerror(errno));
    }
    return 0;
}

int qk_atomic_sync(qk_atomic *a, qk_err *err)
{
    if (!a->fp)
        return 0;
    int bad = ferror(a->fp) || fflush(a->fp) != 0;
    int e = errno;
    if (!bad && fsync(fileno(a->fp)) != 0 && errno != EINVAL) {
        bad = 1;
        e = errno;
    }
    if (fclose(a->fp) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    a->fp = NULL;
    if (bad) {
        qk_fail(err, "cannot write %s: %s", a->final_path, strerror(e));
        qk_atomic_abort(a);
        return -1;
    }
    return 0;
}

int qk_atomic_commit(qk_atomic *a, qk_err *err)
{
    if (qk_atomic_sync(a, err) != 0)
        return -1;
    if (a->tmp_path && rename(a->tmp_path, a->final_path) != 0) {
        qk_fail(err, "cannot write %s: %s", a->final_path, strerror(errno));
        qk_atomic_abort(a);
        return -1;
    }
    pending_set(a->tmp_path, NULL);
    free(a->tmp_path);
    free(a->final_path);
    memset(a, 0, sizeof *a);
    return 0;
}

/* Whether two files have the same bytes. */
static int same_contents(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    char ba[65536], bb[65536];
    while (same) {
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        same = na == nb && memcmp(ba, bb, na) == 0;
        if (na < sizeof ba)
            break;
    }
    same = same && !ferror(fa) && !ferror(fb);
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

int qk_atomic_commit_if_changed(qk_atomic *a, qk_err *err)
{
    if (fflush(a->fp) != 0 || ferror(a->fp)) {
        qk_fail(err, "cannot write %s: %s", a->final_path, strerror(errno));
        qk_atomic_abort(a);
        return -1;
    }
    if (!a->tmp_path || !same_contents(a->tmp_path, a->final_path))
        return qk_atomic_commit(a, err);
    qk_atomic_abort(a);
    return 0;
}

/* bytes as "12.3 MB" or "45.6 GB" into buf[32] */
static const char *size_text(uint64_t bytes, char *buf)
{
    if (bytes < 1000000000)
        snprintf(buf, 32, "%.1f MB", bytes / 1e6);
    else
        snprintf(buf, 32, "%.1f GB", bytes / 1e9);
    return buf;
}

static uint64_t min_free_bytes = (uint64_t)QK_MIN_FREE_MB * 1000000;

void qk_set_min_free(uint64_t bytes) { min_free_bytes = bytes; }

int qk_atomic_reserve(qk_atomic *a, uint64_t bytes, qk_err *err)
{
    struct statvfs fs;
    /* no check asked for, or a file system that gives no figures (some
     * FUSE ones report size 0): the writes themselves will tell */
    if (min_free_bytes == 0 || !a->tmp_path || fstatvfs(fileno(a->fp), &fs) != 0 ||
        fs.f_blocks == 0)
        return 0;
    uint64_t avail = (uint64_t)fs.f_bavail * fs.f_frsize;
    if (avail >= min_free_bytes && avail - min_free_bytes >= bytes)
        return 0;
    char free_s[32], more_s[32], keep_s[32];
    return qk_fail(err, "cannot write %s: not enough disk space (%s free, up to %s more to "
                        "write, %s to keep free: --min-free)", a->final_path,
                   size_text(avail, free_s), size_text(bytes, more_s),
                   size_text(min_free_bytes, keep_s));
}

void qk_atomic_abort(qk_atomic *a)
{
    if (a->fp)
        fclose(a->fp);
    if (a->tmp_path) {
        unlink(a->tmp_path);
        pending_set(a->tmp_path, NULL);
    }
    free(a->tmp_path);
    free(a->final_path);
    memset(a, 0, sizeof *a);
}

int qk_mkdirs(const char *dir, qk_err *err)
{
    char *p = qk_strdup(dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            qk_fail(err, "cannot create directory %s: %s", p, strerror(e));
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
        rc = qk_fail(err, "cannot create directory %s: %s", p, strerror(errno));
    free(p);
    return rc;
}

int qk_read_file(const char *path, uint8_t **data, size_t *len, qk_err *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return qk_fail(err, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return qk_fail(err, "not a regular file");
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = qk_malloc(size + 1);
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            close(fd);
            free(buf);
            return qk_fail(err, "read failed: %s", strerror(e));
        }
        got += (size_t)r;
    }
    close(fd);
    buf[size] = 0;
    *data = buf;
    *len = size;
    return 0;
}

int qk_same_file(const char *a, const char *b)
{
    uint8_t *x, *y;
    size_t nx, ny;
    qk_err err;
    if (qk_read_file(a, &x, &nx, &err) != 0)
        return 0;
    if (qk_read_file(b, &y, &ny, &err) != 0) {
        free(x);
        return 0;
    }
    int same = nx == ny && memcmp(x, y, nx) == 0;
    free(x);
    free(y);
    return same;
}

char *qk_path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    while (la > 1 && a[la - 1] == '/')
        la--;
    char *s = qk_malloc(la + lb + 2);
    memcpy(s, a, la);
    s[la] = '/';
    memcpy(s + la + 1, b, lb + 1);
    return s;
}

char *qk_path_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return qk_strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path); /* "/x" is in "/" */
    char *dir = qk_malloc(n + 1);
    memcpy(dir, path, n);
    dir[n] = '\0';
    return dir;
}

char *qk_path_beside(const char *path, const char *name)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) + 1 : 0;
    char *out = qk_malloc(n + strlen(name) + 1);
    memcpy(out, path, n);
    strcpy(out + n, name);
    return out;
}

const char *qk_shown_path(const char *path)
{
    const char *stage = getenv("QK_STAGE");
    size_t n = stage ? strlen(stage) : 0;
    return n && strncmp(path, stage, n) == 0 ? path + n : path;
}

double qk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double qk_thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void qk_fprint_double(FILE *fp, double v)
{
    if (v != v)
        fputs("nan", fp);
    else if (v == 1.0 / 0.0)
        fputs("inf", fp);
    else if (v == -1.0 / 0.0)
        fputs("-inf", fp);
    else
        fprintf(fp, "%.17g", v);
}

void qk_put_num(FILE *fp, double v)
{
    fputc('\t', fp);
    qk_fprint_double(fp, v);
}
