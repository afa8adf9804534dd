/* qk-archive: reproducible .tar.gz archives of the report's outputs, with a
 * MANIFEST of SHA-256 digests as the first entry; verification against that
 * MANIFEST, and extraction that never writes outside its target directory.
 * The archive format is described in docs/archive.md. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qk/archive.h"
#include "qk/cli.h"
#include "qk/common.h"

#define IO_CHUNK (64 * 1024)
#define MANIFEST_MAX_BYTES ((int64_t)256 << 20)

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-archive create --output FILE [--param KEY=VALUE]... [--suite-version V]\n"
        "                         [--root DIR] PATH...\n"
        "       qk-archive verify FILE\n"
        "       qk-archive extract FILE DIR\n"
        "       qk-archive list FILE\n"
        "\n"
        "create   packs the regular files under each PATH (a file or a directory, taken\n"
        "         recursively, relative to DIR or the current directory) into a gzip'ed\n"
        "         pax tar archive.  The first entry is MANIFEST: the suite version, the\n"
        "         parameters (sorted by KEY) and one line 'SHA256 SIZE PATH' per file.\n"
        "         Entries are sorted by path; mtime 0, owner 0:0, mode 0644, no directory\n"
        "         entries: the same files give the same bytes.  Symbolic links, devices,\n"
        "         fifos and sockets are refused.  The output is written atomically.\n"
        "verify   recomputes the size and SHA-256 of every file and compares them with\n"
        "         MANIFEST; every altered, missing or extra file is named on stderr.\n"
        "extract  refuses an archive holding an absolute path, a '..' component, a\n"
        "         link, a device or any other non-regular entry, verifies it, then\n"
        "         restores MANIFEST and the files into DIR (created if missing).\n"
        "list     prints the size and path of every entry.\n"
        "\n"
        "Options of create:\n"
        "  -o, --output FILE         archive to write (.tar.gz)\n"
        "  -p, --param KEY=VALUE     a parameter recorded in MANIFEST (repeatable)\n"
        "      --suite-version V     suite version recorded in MANIFEST (default %s)\n"
        "  -C, --root DIR            directory the PATHs are relative to\n"
        "  -h, --help                this text\n"
        "      --version             print the version\n"
        "\n"
        "Exit status: 0 success, 1 usage error, 2 bad data (unreadable input, corrupt\n"
        "archive, a file that differs from MANIFEST, an unsafe entry).\n"
        "Example: qk-archive create -o dist/r.tar.gz -p SEED=1 results figures report\n",
        QK_VERSION_STRING);
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: error: %s (see qk-archive --help)\n", qk_progname(), msg);
    exit(QK_EXIT_USAGE);
}

/* Options shared by every command: -h/--help and --version. */
enum { OPT_VERSION = 256, OPT_SUITE_VERSION };

static void common_option(int c)
{
    if (c == 'h') {
        usage(stdout);
        exit(QK_EXIT_OK);
    }
    if (c == OPT_VERSION) {
        printf("qk-archive %s\n", QK_VERSION_STRING);
        exit(QK_EXIT_OK);
    }
    usage(stderr);
    exit(QK_EXIT_USAGE);
}

/* An archive entry name made safe to print on one line: control bytes
 * become \xNN.  Returns a malloc'ed string. */
static char *printable(const char *s)
{
    char *out = qk_malloc(4 * strlen(s) + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            o += sprintf(o, "\\x%02x", *p);
        else
            *o++ = (char)*p;
    }
    *o = '\0';
    return out;
}

/* Exits with status 2 and one line naming a file whose name may hold any
 * byte (it is printed escaped). */
static void die_at(const char *fs, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
static void die_at(const char *fs, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    qk_report_error(printable(fs), msg);
    exit(QK_EXIT_DATA);
}

/* ======================================================================= */
/* create                                                                   */
/* ======================================================================= */

typedef struct create_options {
    const char *output;
    const char *root;            /* NULL: the current directory */
    qk_manifest manifest;        /* suite version and parameters so far */
    char **paths;
    int n_paths;
} create_options;

static void add_param(qk_manifest *m, const char *param)
{
    const char *why = qk_archive_param_problem(param);
    if (why)
        usage_error("--param '%s': %s", param, why);
    m->params = qk_realloc(m->params, (size_t)(m->n_params + 1) * sizeof *m->params);
    m->params[m->n_params++] = qk_strdup(param);
}

/* "./results//x/" -> "results/x"; "." -> "" (the root itself). */
static char *normalize_arg(const char *arg)
{
    if (arg[0] == '/')
        usage_error("%s: PATH must be relative (use --root for another directory)", arg);
    char *out = qk_malloc(strlen(arg) + 1), *o = out;
    const char *c = arg;
    while (*c) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            usage_error("%s: PATH must not contain '..'", arg);
        if (n > 0 && !(n == 1 && c[0] == '.')) {
            if (o > out)
                *o++ = '/';
            memcpy(o, c, n);
            o += n;
        }
        c += n + (c[n] == '/');
    }
    *o = '\0';
    return out;
}

static void parse_create_args(int argc, char **argv, create_options *o)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"param", required_argument, NULL, 'p'},
        {"suite-version", required_argument, NULL, OPT_SUITE_VERSION},
        {"root", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->manifest.suite_version = qk_strdup(QK_VERSION_STRING);
    int c;
    while ((c = getopt_long(argc, argv, "o:p:C:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case 'p': add_param(&o->manifest, optarg); break;
        case 'C': o->root = optarg; break;
        case OPT_SUITE_VERSION:
            free(o->manifest.suite_version);
            o->manifest.suite_version = qk_strdup(optarg);
            break;
        default: common_option(c);
        }
    }
    if (!o->output)
        usage_error("create: --output FILE is required");
    if (optind >= argc)
        usage_error("create: no PATH to archive");
    qk_err err;
    if (qk_manifest_normalize(&o->manifest, &err) != 0)
        usage_error("create: %s", err.msg);
    o->n_paths = argc - optind;
    o->paths = qk_malloc((size_t)o->n_paths * sizeof *o->paths);
    for (int i = 0; i < o->n_paths; i++)
        o->paths[i] = normalize_arg(argv[optind + i]);
}

/* ---- collecting the files ------------------------------------------------ */

typedef struct walk {
    const char *root;
    int skip_output;             /* the output exists: do not pack it */
    dev_t output_dev;
    ino_t output_ino;
    qk_manifest_file *files;
    int n_files, cap_files;
} walk;

/* The file-system path of an archive path (rel "" is the root). */
static char *fs_path(const walk *w, const char *rel)
{
    if (!w->root)
        return qk_strdup(*rel ? rel : ".");
    return *rel ? qk_path_join(w->root, rel) : qk_strdup(w->root);
}

static char *child_path(const char *rel, const char *name)
{
    return *rel ? qk_path_join(rel, name) : qk_strdup(name);
}

static void add_file(walk *w, const char *rel, const char *fs, const struct stat *st)
{
    if (w->skip_output && st->st_dev == w->output_dev && st->st_ino == w->output_ino)
        return;
    const char *why = qk_archive_path_problem(rel);
    if (why)
        die_at(fs, "cannot be archived: %s", why);
    if (strcmp(rel, QK_MANIFEST_NAME) == 0)
        die_at(fs, "cannot be archived: the name %s is reserved for the manifest",
               QK_MANIFEST_NAME);
    if (w->n_files == w->cap_files) {
        w->cap_files = w->cap_files ? 2 * w->cap_files : 64;
        w->files = qk_realloc(w->files, (size_t)w->cap_files * sizeof *w->files);
    }
    memset(&w->files[w->n_files], 0, sizeof w->files[0]);
    w->files[w->n_files++].path = qk_strdup(rel);
}

static void add_path(walk *w, const char *rel);

static void add_directory(walk *w, const char *rel, const char *fs)
{
    DIR *d = opendir(fs);
    if (!d)
        die_at(fs, "cannot open directory: %s", strerror(errno));
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            char *child = child_path(rel, de->d_name);
            add_path(w, child);
            free(child);
        }
        errno = 0;
    }
    if (errno)
        die_at(fs, "cannot read directory: %s", strerror(errno));
    closedir(d);
}

static void add_path(walk *w, const char *rel)
{
    char *fs = fs_path(w, rel);
    struct stat st;
    if (lstat(fs, &st) != 0)
        die_at(fs, "cannot stat: %s", strerror(errno));
    if (S_ISREG(st.st_mode))
        add_file(w, rel, fs, &st);
    else if (S_ISDIR(st.st_mode))
        add_directory(w, rel, fs);
    else if (S_ISLNK(st.st_mode))
        die_at(fs, "symbolic link: archives hold regular files only "
               "(replace the link by a copy of its target)");
    else
        die_at(fs, "not a regular file or directory (device, fifo or socket)");
    free(fs);
}

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const qk_manifest_file *)a)->path, ((const qk_manifest_file *)b)->path);
}

/* Sorts the files and drops repeats (PATHs that overlap, like "a a/b"). */
static void sort_unique(walk *w)
{
    if (w->n_files == 0)
        return;
    qsort(w->files, (size_t)w->n_files, sizeof *w->files, file_cmp);
    int kept = 1;
    for (int i = 1; i < w->n_files; i++) {
        if (strcmp(w->files[i].path, w->files[kept - 1].path) == 0)
            free(w->files[i].path);
        else
            w->files[kept++] = w->files[i];
    }
    w->n_files = kept;
}

static void collect(walk *w, const create_options *o)
{
    memset(w, 0, sizeof *w);
    w->root = o->root;
    struct stat st;
    if (o->root && (stat(o->root, &st) != 0 || !S_ISDIR(st.st_mode)))
        qk_die(QK_EXIT_DATA, o->root, "--root is not a directory");
    if (stat(o->output, &st) == 0) {
        w->skip_output = 1;
        w->output_dev = st.st_dev;
        w->output_ino = st.st_ino;
    }
    for (int i = 0; i < o->n_paths; i++)
        add_path(w, o->paths[i]);
    sort_unique(w);
}

/* ---- reading a file --------------------------------------------------------- */

/* Opens a regular file without following a link; its size goes to *size. */
static int open_regular(const char *fs, int64_t *size)
{
    int fd = open(fs, O_RDONLY | O_NOFOLLOW);
    if (fd < 0)
        die_at(fs, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        die_at(fs, "no longer a regular file");
    *size = (int64_t)st.st_size;
    return fd;
}

typedef void (*chunk_sink)(const void *data, size_t len, void *ctx);

/* Streams a file of known size through the digest and an optional sink. */
static void read_file_digest(const char *fs, int fd, int64_t size, chunk_sink sink, void *ctx,
                             char hex[QK_SHA256_HEX_LEN + 1])
{
    static char buf[IO_CHUNK];
    qk_sha256 h;
    qk_err err;
    if (qk_sha256_begin(&h, size, &err) != 0)
        die_at(fs, "%s", err.msg);
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0)
            die_at(fs, "cannot read: %s", strerror(errno));
        if (n == 0)
            break;
        if (qk_sha256_update(&h, buf, (size_t)n, &err) != 0)
            die_at(fs, "changed while being archived (%s)", err.msg);
        if (sink)
            sink(buf, (size_t)n, ctx);
    }
    if (qk_sha256_end(&h, hex, &err) != 0)
        die_at(fs, "changed while being archived (%s)", err.msg);
}

static void digest_files(walk *w)
{
    for (int i = 0; i < w->n_files; i++) {
        qk_manifest_file *f = &w->files[i];
        char *fs = fs_path(w, f->path);
        int fd = open_regular(fs, &f->size);
        read_file_digest(fs, fd, f->size, NULL, NULL, f->sha256);
        close(fd);
        free(fs);
    }
}

/* ---- writing the archive ------------------------------------------------------ */

static qk_atomic *pending_output; /* removed at exit unless committed */

static void remove_pending_output(void)
{
    if (pending_output)
        qk_atomic_abort(pending_output);
}

typedef struct writer {
    struct archive *a;
    const char *path;            /* the output, for messages */
} writer;

static void writer_check(const writer *wr, int rc, const char *what)
{
    if (rc != ARCHIVE_OK)
        qk_die(QK_EXIT_DATA, wr->path, "%s: %s", what, archive_error_string(wr->a));
}

static void open_writer(writer *wr, FILE *fp, const char *path)
{
    wr->path = path;
    wr->a = archive_write_new();
    if (!wr->a)
        qk_die(QK_EXIT_DATA, path, "out of memory (libarchive writer)");
    writer_check(wr, archive_write_add_filter_gzip(wr->a), "gzip filter");
    writer_check(wr, archive_write_set_format_pax_restricted(wr->a), "pax format");
    /* no time in the gzip header: the same tar gives the same .gz */
    writer_check(wr, archive_write_set_options(wr->a, "gzip:!timestamp,gzip:compression-level=9"),
                 "gzip options");
    /* the .gz ends with its gzip trailer, not zeros up to a 10240-byte block */
    writer_check(wr, archive_write_set_bytes_in_last_block(wr->a, 1), "block size");
    writer_check(wr, archive_write_open_FILE(wr->a, fp), "open");
}

/* A header with nothing that depends on the machine, the user or the time. */
static void write_header(writer *wr, const char *path, int64_t size)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, size);
    archive_entry_set_mtime(e, 0, 0);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    writer_check(wr, archive_write_header(wr->a, e), path);
    archive_entry_free(e);
}

static void write_data(const void *data, size_t len, void *ctx)
{
    writer *wr = ctx;
    const char *p = data;
    while (len > 0) {
        la_ssize_t n = archive_write_data(wr->a, p, len);
        if (n <= 0)
            qk_die(QK_EXIT_DATA, wr->path, "cannot write: %s", archive_error_string(wr->a));
        p += n;
        len -= (size_t)n;
    }
}

static void write_manifest(writer *wr, const qk_manifest *m)
{
    size_t len;
    char *text = qk_manifest_format(m, &len);
    write_header(wr, QK_MANIFEST_NAME, (int64_t)len);
    write_data(text, len, wr);
    writer_check(wr, archive_write_finish_entry(wr->a), QK_MANIFEST_NAME);
    free(text);
}

/* Packs one file, digesting it again: a file that changed since MANIFEST
 * was computed stops the run. */
static void write_file(writer *wr, const walk *w, const qk_manifest_file *f)
{
    char *fs = fs_path(w, f->path);
    int64_t size;
    int fd = open_regular(fs, &size);
    if (size != f->size)
        die_at(fs, "changed while being archived (size %lld, then %lld)",
               (long long)f->size, (long long)size);
    write_header(wr, f->path, size);
    char hex[QK_SHA256_HEX_LEN + 1];
    read_file_digest(fs, fd, size, write_data, wr, hex);
    if (strcmp(hex, f->sha256) != 0)
        die_at(fs, "changed while being archived (sha256 differs)");
    writer_check(wr, archive_write_finish_entry(wr->a), f->path);
    close(fd);
    free(fs);
}

static void write_archive(const create_options *o, const walk *w, const qk_manifest *m)
{
    static qk_atomic out;
    qk_output_open(&out, o->output);
    pending_output = &out;
    writer wr;
    open_writer(&wr, out.fp, o->output);
    write_manifest(&wr, m);
    for (int i = 0; i < w->n_files; i++)
        write_file(&wr, w, &w->files[i]);
    writer_check(&wr, archive_write_close(wr.a), "close");
    archive_write_free(wr.a);
    qk_output_commit(&out);
    pending_output = NULL;
}

static int cmd_create(int argc, char **argv)
{
    create_options o;
    parse_create_args(argc, argv, &o);
    walk w;
    collect(&w, &o);
    digest_files(&w);
    qk_manifest *m = &o.manifest;
    m->files = w.files;
    m->n_files = w.n_files;
    qk_err err;
    if (qk_manifest_normalize(m, &err) != 0)
        qk_die(QK_EXIT_DATA, o.output, "%s", err.msg);
    atexit(remove_pending_output);
    write_archive(&o, &w, m);
    printf("%d files archived in %s\n", m->n_files, o.output);
    qk_manifest_free(m);
    for (int i = 0; i < o.n_paths; i++)
        free(o.paths[i]);
    free(o.paths);
    return QK_EXIT_OK;
}

/* ======================================================================= */
/* reading archives: verify, extract, list                                  */
/* ======================================================================= */

/* Parses the options of a command taking exactly n_args operands. */
static char **parse_plain_args(int argc, char **argv, int n_args, const char *synopsis)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
        common_option(c);
    if (argc - optind != n_args)
        usage_error("expected '%s'", synopsis);
    return argv + optind;
}

/* The archive file, opened once: every pass reads the same file. */
static int open_archive_file(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        qk_die(QK_EXIT_DATA, path, "cannot open: %s", strerror(errno));
    return fd;
}

/* libarchive's message for the last failure (it sets none for some). */
static const char *read_error(struct archive *a)
{
    const char *why = archive_error_string(a);
    return why ? why : "damaged or truncated data";
}

static struct archive *open_reader(int fd, const char *path)
{
    if (lseek(fd, 0, SEEK_SET) != 0)
        qk_die(QK_EXIT_DATA, path, "cannot seek: %s", strerror(errno));
    struct archive *a = archive_read_new();
    if (!a)
        qk_die(QK_EXIT_DATA, path, "out of memory (libarchive reader)");
    archive_read_support_filter_gzip(a);
    archive_read_support_format_tar(a);
    if (archive_read_open_fd(a, fd, IO_CHUNK) != ARCHIVE_OK)
        qk_die(QK_EXIT_DATA, path, "not a readable tar.gz archive: %s", read_error(a));
    return a;
}

static void die_corrupt(struct archive *a, const char *path)
{
    qk_die(QK_EXIT_DATA, path, "corrupt or truncated archive: %s", read_error(a));
}

/* The next entry (1) or the end (0); a damaged archive ends the run. */
static int next_entry(struct archive *a, struct archive_entry **e, const char *path)
{
    int rc = archive_read_next_header(a, e);
    if (rc == ARCHIVE_EOF)
        return 0;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
        die_corrupt(a, path);
    if (!archive_entry_pathname(*e))
        qk_die(QK_EXIT_DATA, path, "an entry has no readable path name");
    return 1;
}

static void close_reader(struct archive *a, const char *path)
{
    if (archive_read_close(a) != ARCHIVE_OK)
        die_corrupt(a, path);
    archive_read_free(a);
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

/* ---- checking entries against MANIFEST ------------------------------------- */

typedef struct check {
    const char *path;            /* the archive, for messages */
    qk_manifest manifest;
    char *manifest_text;         /* MANIFEST's bytes */
    int64_t manifest_size;
    unsigned char *seen;         /* per manifest file */
    int problems;
    int verified;                /* files whose size and digest matched */
    struct archive *disk;        /* extract: where entries are written, else NULL */
    const char *disk_dir;
} check;

static void report(check *c, const char *entry, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(check *c, const char *entry, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *name = printable(entry);
    fprintf(stderr, "%s: error: %s: %s: %s\n", qk_progname(), c->path, name, msg);
    free(name);
    c->problems++;
}

static void read_all(struct archive *a, const char *path, char *buf, int64_t size)
{
    int64_t got = 0;
    while (got < size) {
        la_ssize_t n = archive_read_data(a, buf + got, (size_t)(size - got));
        if (n < 0)
            die_corrupt(a, path);
        if (n == 0)
            qk_die(QK_EXIT_DATA, path, "MANIFEST shorter than its header says");
        got += n;
    }
}

/* Reads and parses the first entry, which must be MANIFEST. */
static void read_manifest(check *c, struct archive *a)
{
    struct archive_entry *e;
    if (!next_entry(a, &e, c->path))
        qk_die(QK_EXIT_DATA, c->path, "empty archive (no MANIFEST)");
    const char *name = archive_entry_pathname(e);
    if (strcmp(name, QK_MANIFEST_NAME) != 0)
        qk_die(QK_EXIT_DATA, c->path, "first entry is '%s', not MANIFEST "
               "(not an archive of qk-archive create)", printable(name));
    if (entry_problem(e))
        qk_die(QK_EXIT_DATA, c->path, "MANIFEST is not a regular file");
    int64_t size = archive_entry_size(e);
    if (size <= 0 || size > MANIFEST_MAX_BYTES)
        qk_die(QK_EXIT_DATA, c->path, "MANIFEST size %lld is out of range", (long long)size);
    char *text = qk_malloc((size_t)size);
    read_all(a, c->path, text, size);
    qk_err err;
    if (qk_manifest_parse(text, (size_t)size, &c->manifest, &err) != 0)
        qk_die(QK_EXIT_DATA, c->path, "MANIFEST %s", err.msg);
    c->manifest_text = text;
    c->manifest_size = size;
    c->seen = qk_calloc((size_t)(c->manifest.n_files ? c->manifest.n_files : 1), 1);
}

/* ---- entry data: digest, and for extract a copy on disk -------------------- */

static void disk_check(check *c, int rc, const char *entry)
{
    if (rc != ARCHIVE_OK) {
        char *name = printable(entry);
        qk_die(QK_EXIT_DATA, c->disk_dir, "%s: cannot extract: %s", name, read_error(c->disk));
    }
}

/* A fresh header for the disk: path, regular file, 0644; nothing else of
 * the archive's entry (owner, mode bits, times) reaches the disk. */
static void disk_begin(check *c, const char *path, int64_t size)
{
    struct archive_entry *out = archive_entry_new();
    archive_entry_set_pathname(out, path);
    archive_entry_set_filetype(out, AE_IFREG);
    archive_entry_set_perm(out, 0644);
    archive_entry_set_size(out, size);
    disk_check(c, archive_write_header(c->disk, out), path);
    archive_entry_free(out);
}

static void disk_write(check *c, const char *path, const char *data, size_t len)
{
    while (len > 0) {
        la_ssize_t n = archive_write_data(c->disk, data, len);
        if (n <= 0)
            disk_check(c, ARCHIVE_FATAL, path);
        data += n;
        len -= (size_t)n;
    }
}

/* Reads the current entry's data into the digest (and onto the disk). */
static void entry_digest(check *c, struct archive *a, const char *path, int64_t size,
                         char hex[QK_SHA256_HEX_LEN + 1])
{
    static char buf[IO_CHUNK];
    qk_sha256 h;
    qk_err err;
    if (qk_sha256_begin(&h, size, &err) != 0)
        qk_die(QK_EXIT_DATA, c->path, "%s", err.msg);
    if (c->disk)
        disk_begin(c, path, size);
    for (;;) {
        la_ssize_t n = archive_read_data(a, buf, sizeof buf);
        if (n < 0)
            die_corrupt(a, c->path);
        if (n == 0)
            break;
        if (qk_sha256_update(&h, buf, (size_t)n, &err) != 0)
            qk_die(QK_EXIT_DATA, c->path, "corrupt archive: entry data: %s", err.msg);
        if (c->disk)
            disk_write(c, path, buf, (size_t)n);
    }
    if (qk_sha256_end(&h, hex, &err) != 0)
        qk_die(QK_EXIT_DATA, c->path, "corrupt or truncated archive: entry data: %s", err.msg);
    if (c->disk)
        disk_check(c, archive_write_finish_entry(c->disk), path);
}

static void compare_entry(check *c, struct archive *a, struct archive_entry *e,
                          const qk_manifest_file *want)
{
    int64_t size = archive_entry_size(e);
    char hex[QK_SHA256_HEX_LEN + 1];
    entry_digest(c, a, want->path, size, hex);
    if (size != want->size)
        report(c, want->path, "size differs from MANIFEST (%lld bytes, MANIFEST says %lld)",
               (long long)size, (long long)want->size);
    else if (strcmp(hex, want->sha256) != 0)
        report(c, want->path, "content differs from MANIFEST (sha256 %s, MANIFEST says %s)",
               hex, want->sha256);
    else
        c->verified++;
}

/* Checks one entry after MANIFEST: safe, regular, listed once, intact. */
static void check_entry(check *c, struct archive *a, struct archive_entry *e)
{
    const char *path = archive_entry_pathname(e);
    const char *why = entry_problem(e);
    if (why) {
        report(c, path, "%s", why);
        return;
    }
    if (strcmp(path, QK_MANIFEST_NAME) == 0) {
        report(c, path, "a second MANIFEST entry");
        return;
    }
    int i = qk_manifest_find(&c->manifest, path);
    if (i < 0) {
        report(c, path, "not listed in MANIFEST (extra file)");
        return;
    }
    if (c->seen[i]++) {
        report(c, path, "appears twice in the archive");
        return;
    }
    compare_entry(c, a, e, &c->manifest.files[i]);
}

static void report_missing(check *c)
{
    for (int i = 0; i < c->manifest.n_files; i++)
        if (!c->seen[i])
            report(c, c->manifest.files[i].path, "listed in MANIFEST but missing from the archive");
}

static void free_check(check *c)
{
    qk_manifest_free(&c->manifest);
    free(c->seen);
    free(c->manifest_text);
    c->seen = NULL;
    c->manifest_text = NULL;
}

/* One full pass: MANIFEST, every entry, the files never seen.  With
 * c->disk set, MANIFEST and the files are written there as they are read. */
static void check_pass(check *c, int fd)
{
    struct archive *a = open_reader(fd, c->path);
    read_manifest(c, a);
    if (c->disk) {
        disk_begin(c, QK_MANIFEST_NAME, c->manifest_size);
        disk_write(c, QK_MANIFEST_NAME, c->manifest_text, (size_t)c->manifest_size);
        disk_check(c, archive_write_finish_entry(c->disk), QK_MANIFEST_NAME);
    }
    struct archive_entry *e;
    while (next_entry(a, &e, c->path))
        check_entry(c, a, e);
    report_missing(c);
    close_reader(a, c->path);
}

static int cmd_verify(int argc, char **argv)
{
    char **args = parse_plain_args(argc, argv, 1, "qk-archive verify FILE");
    check c = {.path = args[0]};
    int fd = open_archive_file(c.path);
    check_pass(&c, fd);
    close(fd);
    free_check(&c);
    if (c.problems)
        return QK_EXIT_DATA;
    printf("%d files verified\n", c.verified);
    return QK_EXIT_OK;
}

/* ---- extract --------------------------------------------------------------- */

/* Headers only: names every entry that extraction must never write. */
static void safety_pass(check *c, int fd)
{
    struct archive *a = open_reader(fd, c->path);
    struct archive_entry *e;
    while (next_entry(a, &e, c->path)) {
        const char *why = entry_problem(e);
        if (why)
            report(c, archive_entry_pathname(e), "refusing to extract: %s", why);
    }
    close_reader(a, c->path);
}

static struct archive *open_disk(const char *dir)
{
    struct archive *disk = archive_write_disk_new();
    if (!disk)
        qk_die(QK_EXIT_DATA, dir, "out of memory (libarchive disk writer)");
    int flags = ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS;
#ifdef ARCHIVE_EXTRACT_SAFE_WRITES
    flags |= ARCHIVE_EXTRACT_SAFE_WRITES;
#endif
    if (archive_write_disk_set_options(disk, flags) != ARCHIVE_OK)
        qk_die(QK_EXIT_DATA, dir, "libarchive: %s", archive_error_string(disk));
    return disk;
}

static void enter_directory(const char *dir)
{
    qk_err err;
    if (qk_mkdirs(dir, &err) != 0)
        qk_die(QK_EXIT_DATA, dir, "%s", err.msg);
    if (chdir(dir) != 0)
        qk_die(QK_EXIT_DATA, dir, "cannot enter: %s", strerror(errno));
}

static int cmd_extract(int argc, char **argv)
{
    char **args = parse_plain_args(argc, argv, 2, "qk-archive extract FILE DIR");
    check c = {.path = args[0], .disk_dir = args[1]};
    int fd = open_archive_file(c.path);
    safety_pass(&c, fd);
    if (c.problems)
        return QK_EXIT_DATA;
    check_pass(&c, fd); /* verify everything before writing anything */
    free_check(&c);
    if (c.problems)
        return QK_EXIT_DATA;
    enter_directory(c.disk_dir);
    c.disk = open_disk(c.disk_dir);
    c.verified = 0;
    check_pass(&c, fd); /* write, digesting again what is written */
    disk_check(&c, archive_write_close(c.disk), ".");
    archive_write_free(c.disk);
    close(fd);
    free_check(&c);
    if (c.problems)
        return QK_EXIT_DATA;
    printf("%d files extracted into %s and verified\n", c.verified, c.disk_dir);
    return QK_EXIT_OK;
}

/* ---- list ------------------------------------------------------------------ */

static int cmd_list(int argc, char **argv)
{
    char **args = parse_plain_args(argc, argv, 1, "qk-archive list FILE");
    const char *path = args[0];
    int fd = open_archive_file(path);
    struct archive *a = open_reader(fd, path);
    struct archive_entry *e;
    while (next_entry(a, &e, path)) {
        char *name = printable(archive_entry_pathname(e));
        const char *why = entry_problem(e);
        printf("%12lld  %s%s%s\n", (long long)archive_entry_size(e), name, why ? "  # " : "",
               why ? why : "");
        free(name);
    }
    close_reader(a, path);
    close(fd);
    return QK_EXIT_OK;
}

/* ======================================================================= */

/* Entry names are UTF-8 in the archive (pax "path" records) and bytes on
 * disk; a UTF-8 character type makes libarchive's conversion between the two
 * the identity, whatever the user's locale, so the archive bytes do not
 * depend on it.  Paths that are not UTF-8 are refused before they reach
 * libarchive. */
static void use_utf8_names(void)
{
    if (!setlocale(LC_CTYPE, "C.UTF-8") && !setlocale(LC_CTYPE, "C.utf8"))
        qk_warn("no C.UTF-8 locale: names outside ASCII cannot be archived or extracted");
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-archive");
    use_utf8_names();
    if (argc < 2)
        usage_error("expected a command: create, verify, extract or list");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
        common_option('h');
    if (!strcmp(cmd, "--version"))
        common_option(OPT_VERSION);
    if (!strcmp(cmd, "create"))
        return cmd_create(argc - 1, argv + 1);
    if (!strcmp(cmd, "verify"))
        return cmd_verify(argc - 1, argv + 1);
    if (!strcmp(cmd, "extract"))
        return cmd_extract(argc - 1, argv + 1);
    if (!strcmp(cmd, "list"))
        return cmd_list(argc - 1, argv + 1);
    usage_error("unknown command '%s' (expected create, verify, extract or list)", cmd);
}
