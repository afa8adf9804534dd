/* qk-archive: reproducible .tar.gz archives of the report's outputs, with a
 * MANIFEST of SHA-256 digests as the first entry; verification against that
 * MANIFEST, and extraction that never writes outside its target directory.
 * The archive format is described in docs/archive.md. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qk/archive.h"
#include "qk/cli.h"
#include "qk/common.h"

#define IO_CHUNK (64 * 1024)

enum { OPT_SUITE_VERSION = QK_KEY_FIRST };

/* The options of create; the other commands take none but -h and --version. */
static const qk_option options_table[] = {
    QK_OPTION_OUTPUT("archive to write (.tar.gz)"),
    {'p', "param", "KEY=VALUE", "a parameter recorded in MANIFEST (repeatable)"},
    {OPT_SUITE_VERSION, "suite-version", "V", "suite version recorded in MANIFEST (default "
                                              QK_VERSION_STRING ")"},
    {'C', "root", "DIR", "directory the PATHs are relative to"},
    {'q', "quiet", NULL, "no count of the files archived or verified"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-archive",
    "qk-archive create --output FILE [--param KEY=VALUE]... [--suite-version V]\n"
    "                  [--root DIR] PATH...\n"
    "qk-archive verify [--quiet] FILE\n"
    "qk-archive extract FILE DIR\n"
    "qk-archive list FILE",
    "create   packs the regular files under each PATH (a file or a directory, taken\n"
    "         recursively, relative to DIR or the current directory) into a gzip'ed\n"
    "         pax tar archive.  The first entry is MANIFEST: the suite version, the\n"
    "         parameters (sorted by KEY) and one line 'SHA256 SIZE PATH' per file.\n"
    "         Entries are sorted by path; mtime 0, owner 0:0, mode 0644, no directory\n"
    "         entries: the same files give the same bytes.  Symbolic links, devices,\n"
    "         fifos and sockets are refused.  The output is written atomically.\n"
    "verify   recomputes the size and SHA-256 of every file and compares them with\n"
    "         MANIFEST; every altered, missing or extra file is named on stderr, and\n"
    "         a truncated or damaged archive names the member the damage is in.\n"
    "extract  refuses an archive holding an absolute path, a '..' component, a\n"
    "         link, a device or any other non-regular entry, verifies it, then\n"
    "         restores MANIFEST and the files into DIR (created if missing).\n"
    "list     prints the size and path of every entry.\n"
    "\n"
    "The options below but -h, --version and --quiet are those of create.\n",
    options_table,
    "a corrupt archive, a file that differs from MANIFEST, an unsafe entry",
    "qk-archive create -o dist/r.tar.gz -p SEED=1 results figures report", NULL};

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
    char *name = qk_archive_printable(fs);
    qk_report_error(name, msg);
    free(name);
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
    memset(o, 0, sizeof *o);
    o->manifest.suite_version = qk_strdup(QK_VERSION_STRING);
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case 'p': add_param(&o->manifest, value); break;
        case 'C': o->root = value; break;
        case OPT_SUITE_VERSION:
            free(o->manifest.suite_version);
            o->manifest.suite_version = qk_strdup(value);
            break;
        }
    }
    o->output = a.output;
    if (!o->output)
        usage_error("create: --output FILE is required");
    if (a.n_operands == 0)
        usage_error("create: no PATH to archive");
    qk_err err;
    if (qk_manifest_normalize(&o->manifest, &err) != 0)
        usage_error("create: %s", err.msg);
    o->n_paths = a.n_operands;
    o->paths = qk_malloc((size_t)o->n_paths * sizeof *o->paths);
    for (int i = 0; i < o->n_paths; i++)
        o->paths[i] = normalize_arg(a.operands[i]);
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
    qk_atomic out; /* its temporary is removed if the program stops (qk_die) */
    qk_output_open(&out, o->output);
    writer wr;
    open_writer(&wr, out.fp, o->output);
    write_manifest(&wr, m);
    for (int i = 0; i < w->n_files; i++)
        write_file(&wr, w, &w->files[i]);
    writer_check(&wr, archive_write_close(wr.a), "close");
    archive_write_free(wr.a);
    qk_output_commit(&out);
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
    write_archive(&o, &w, m);
    if (!qk_progress_quiet())
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

/* Parses the options of a command taking exactly n_args operands and no
 * option but -h and --version. */
static char **parse_plain_args(int argc, char **argv, int n_args, const char *synopsis)
{
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    int own = 0;
    while (qk_args_next(&a, &value) != -1)
        own = 1;
    if (own || a.output)
        usage_error("only create takes options (%s)", synopsis);
    if (a.n_operands != n_args)
        usage_error("expected '%s'", synopsis);
    return a.operands;
}

/* The archive file, mapped into memory: every pass reads the same bytes. */
typedef struct mapped {
    const char *path;
    const uint8_t *data;
    size_t len;
} mapped;

static void map_archive(mapped *m, const char *path)
{
    m->path = path;
    m->data = (const uint8_t *)"";
    m->len = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        qk_die(QK_EXIT_DATA, path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        qk_die(QK_EXIT_DATA, path, "not a regular file");
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
            qk_die(QK_EXIT_DATA, path, "cannot map: %s", strerror(errno));
        m->data = p;
        m->len = (size_t)st.st_size;
    }
    close(fd);
}

static void unmap_archive(mapped *m)
{
    if (m->len > 0)
        munmap((void *)(uintptr_t)m->data, m->len);
}

/* One error line per problem: the archive, the member (escaped), what. */
static void print_problem(void *ctx, const char *entry, const char *problem)
{
    const mapped *m = ctx;
    if (!entry) {
        qk_report_error(m->path, problem);
        return;
    }
    char *name = qk_archive_printable(entry);
    fprintf(stderr, "%s: error: %s: %s: %s\n", qk_progname(), m->path, name, problem);
    free(name);
}

static int cmd_verify(int argc, char **argv)
{
    char **args = parse_plain_args(argc, argv, 1, "qk-archive verify FILE");
    mapped m;
    map_archive(&m, args[0]);
    int verified;
    int problems = qk_archive_verify(m.data, m.len, print_problem, &m, &verified);
    unmap_archive(&m);
    if (problems)
        return QK_EXIT_DATA;
    if (!qk_progress_quiet())
        printf("%d files verified\n", verified);
    return QK_EXIT_OK;
}

static int cmd_extract(int argc, char **argv)
{
    char **args = parse_plain_args(argc, argv, 2, "qk-archive extract FILE DIR");
    mapped m;
    map_archive(&m, args[0]);
    int extracted;
    int problems = qk_archive_extract(m.data, m.len, args[1], print_problem, &m, &extracted);
    unmap_archive(&m);
    if (problems)
        return QK_EXIT_DATA;
    printf("%d files extracted into %s and verified\n", extracted, args[1]);
    return QK_EXIT_OK;
}

static void print_entry(void *ctx, const char *path, int64_t size, const char *problem)
{
    (void)ctx;
    char *name = qk_archive_printable(path);
    printf("%12lld  %s%s%s\n", (long long)size, name, problem ? "  # " : "",
           problem ? problem : "");
    free(name);
}

static int cmd_list(int argc, char **argv)
{
    char **args = parse_plain_args(argc, argv, 1, "qk-archive list FILE");
    mapped m;
    map_archive(&m, args[0]);
    int problems = qk_archive_list(m.data, m.len, print_entry, print_problem, &m);
    unmap_archive(&m);
    return problems ? QK_EXIT_DATA : QK_EXIT_OK;
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
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "--version")) {
        qk_args a;
        const char *value;
        qk_args_init(&a, &program, 2, argv);
        qk_args_next(&a, &value); /* prints and exits */
    }
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
