/* Options, option values, stores and output files for the programs
 * (include/qk/cli.h). */
#include "qk/cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qk/heads.h"
#include "qk/simd.h"
#include "qk/values.h"

/* ---- the help text ------------------------------------------------------------------- */

#define HELP_WIDTH 80    /* no generated help line is longer */
#define HELP_LEFT_MAX 30 /* an option column wider than this puts its help on the next line */

static const qk_option help_options[] = {
    {QK_KEY_HELP, "help", NULL, "this text"},
    {QK_KEY_VERSION, "version", NULL, "print the version"},
    {QK_KEY_CHECK_OPTIONS, "check", NULL,
     "check the options, then exit 0 doing nothing"},
    {QK_KEY_PRINT_DEFAULTS, "print-defaults", NULL,
     "print each option that has a default and its default, tab-separated"},
};
enum { N_HELP_OPTIONS = sizeof help_options / sizeof help_options[0] };

static int has_defaults(const qk_option *options)
{
    for (const qk_option *o = options; o->key; o++)
        if (o->def)
            return 1;
    return 0;
}

/* The shared options the help lists: --print-defaults only where a row
 * has a default (the parser takes it everywhere). */
static size_t help_options_shown(const qk_program *prog)
{
    return N_HELP_OPTIONS - !has_defaults(prog->options);
}

static int has_short(const qk_option *o)
{
    return o->key > 0 && o->key < QK_KEY_FIRST && isalnum(o->key);
}

/* "  -o, --output FILE", "      --no-verify" or "  -V" into buf; its length. */
static int option_left(const qk_option *o, char *buf, size_t cap)
{
    char letter[8] = "    ";
    if (has_short(o))
        snprintf(letter, sizeof letter, "-%c%s", o->key, o->name ? ", " : "");
    return snprintf(buf, cap, "  %s%s%s%s%s", letter, o->name ? "--" : "",
                    o->name ? o->name : "", o->arg ? " " : "", o->arg ? o->arg : "");
}

/* Writes text from column col on, breaking it between words so that no
 * line passes HELP_WIDTH (a longer word gets a line of its own); lines
 * after the first start at column indent. A newline in text breaks the
 * line there. */
static void put_wrapped(FILE *fp, const char *text, int col, int indent)
{
    int at_line_start = 1;
    for (const char *p = text; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        if (*p == '\n') {
            fprintf(fp, "\n%*s", indent, "");
            col = indent;
            at_line_start = 1;
            p++;
            continue;
        }
        int len = (int)strcspn(p, " \n");
        if (!at_line_start && col + 1 + len > HELP_WIDTH) {
            fprintf(fp, "\n%*s", indent, "");
            col = indent;
            at_line_start = 1;
        }
        if (!at_line_start) {
            fputc(' ', fp);
            col++;
        }
        fwrite(p, 1, (size_t)len, fp);
        col += len;
        at_line_start = 0;
        p += len;
    }
    fputc('\n', fp);
}

/* Lines of text after a label: the first after it, the others indented
 * by the label's width. */
static void put_labelled(FILE *fp, const char *label, const char *text)
{
    int indent = (int)strlen(label);
    fputs(label, fp);
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        if (p != text)
            fprintf(fp, "%*s", indent, "");
        fwrite(p, 1, len, fp);
        fputc('\n', fp);
        p += len + (p[len] == '\n');
    }
}

static void put_option(FILE *fp, const qk_option *o, int col)
{
    char left[128];
    int len = option_left(o, left, sizeof left);
    fputs(left, fp);
    if (len <= col - 2)
        fprintf(fp, "%*s", col - len, "");
    else
        fprintf(fp, "\n%*s", col, "");
    if (!o->def) {
        put_wrapped(fp, o->help, col, col);
        return;
    }
    char *help = qk_malloc(strlen(o->help) + strlen(o->def) + 16);
    sprintf(help, "%s (default %s)", o->help, o->def);
    put_wrapped(fp, help, col, col);
    free(help);
}

void qk_program_help(FILE *fp, const qk_program *prog)
{
    put_labelled(fp, "Usage: ", prog->usage);
    fprintf(fp, "\n%s%s\nOptions:\n", prog->about,
            prog->about[0] && prog->about[strlen(prog->about) - 1] != '\n' ? "\n" : "");
    size_t n_help = help_options_shown(prog);
    int widest = 0;
    char left[128];
    for (const qk_option *o = prog->options; o->key; o++) {
        int len = option_left(o, left, sizeof left);
        if (len <= HELP_LEFT_MAX && len > widest)
            widest = len;
    }
    for (size_t i = 0; i < n_help; i++) {
        int len = option_left(&help_options[i], left, sizeof left);
        if (len > widest)
            widest = len;
    }
    int col = widest + 2;
    for (const qk_option *o = prog->options; o->key; o++)
        put_option(fp, o, col);
    for (size_t i = 0; i < n_help; i++)
        put_option(fp, &help_options[i], col);
    char status[512];
    snprintf(status, sizeof status, "Exit status: 0 success, 1 usage error, 2 bad or unreadable "
             "data%s%s%s.", prog->exit_note ? " (" : "", prog->exit_note ? prog->exit_note : "",
             prog->exit_note ? ")" : "");
    fputc('\n', fp);
    put_wrapped(fp, status, 0, 0);
    if (prog->example)
        put_labelled(fp, "Example: ", prog->example);
    if (prog->more_help)
        prog->more_help(fp);
}

void qk_usage_error(const qk_program *prog)
{
    qk_program_help(stderr, prog);
    exit(QK_EXIT_USAGE);
}

/* ---- parsing ------------------------------------------------------------------------- */

typedef struct getopt_tables {
    struct option *longopts;
    char *shortopts;
} getopt_tables;

/* The shared keys mean the same in every program. */
static void check_shared(const qk_program *prog, const qk_option *o)
{
    static const qk_option shared[] = {QK_OPTION_OUTPUT(""), QK_OPTION_THREADS, QK_OPTION_QUIET,
                                       QK_OPTION_NO_VERIFY, {QK_KEY_HELP, "help", NULL, ""},
                                       {QK_KEY_VERSION, "version", NULL, ""}};
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
        int same_key = o->key == shared[i].key;
        int same_name = o->name && strcmp(o->name, shared[i].name) == 0;
        if (same_key != same_name || (same_key && i >= 4)) {
            fprintf(stderr, "%s: option table: -%c/--%s is a shared option\n", prog->name,
                    o->key < QK_KEY_FIRST ? o->key : '-', o->name ? o->name : "");
            abort();
        }
    }
}

static getopt_tables *make_tables(const qk_program *prog)
{
    size_t n = 0;
    for (const qk_option *o = prog->options; o->key; o++, n++)
        check_shared(prog, o);
    size_t n_help = N_HELP_OPTIONS;
    getopt_tables *t = qk_calloc(1, sizeof *t);
    t->longopts = qk_calloc(n + n_help + 1, sizeof *t->longopts);
    t->shortopts = qk_calloc(2 * (n + n_help) + 1, 1);
    struct option *l = t->longopts;
    char *s = t->shortopts;
    for (size_t i = 0; i < n + n_help; i++) {
        const qk_option *o = i < n ? &prog->options[i] : &help_options[i - n];
        if (o->name)
            *l++ = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
                                   o->key};
        if (has_short(o)) {
            *s++ = (char)o->key;
            if (o->arg)
                *s++ = ':';
        }
    }
    return t;
}

static void free_tables(qk_args *a)
{
    getopt_tables *t = a->getopt_tables;
    if (!t)
        return;
    free(t->longopts);
    free(t->shortopts);
    free(t);
    a->getopt_tables = NULL;
}

/* Sets the row's variable from text, with the messages of qk_opt_int and
 * the others; opt is "--name". */
static void set_row_value(const qk_option *o, const char *opt, const char *text)
{
    switch (o->type) {
    case QK_OPT_INT: *(int *)o->value = (int)qk_opt_int(opt, text, o->min, o->max); break;
    case QK_OPT_INT64: *(int64_t *)o->value = qk_opt_int(opt, text, o->min, o->max); break;
    case QK_OPT_UINT64: *(uint64_t *)o->value = (uint64_t)qk_opt_int(opt, text, o->min, o->max);
        break;
    case QK_OPT_FRACTION: *(double *)o->value = qk_opt_fraction(opt, text); break;
    case QK_OPT_OPEN_UNIT: *(double *)o->value = qk_opt_open_unit(opt, text); break;
    case QK_OPT_SHARE: *(double *)o->value = qk_opt_share(opt, text); break;
    case QK_OPT_CHOICE: {
        char first[64];
        size_t len = strcspn(o->words, " ");
        snprintf(first, sizeof first, "%.*s", (int)len, o->words);
        *(int *)o->value = qk_opt_choice(opt, text, first, o->words + len + 1);
        break;
    }
    case QK_OPT_OWN: break;
    }
}

static void set_row(const qk_option *o, const char *text)
{
    char opt[128];
    snprintf(opt, sizeof opt, "--%s", o->name ? o->name : "");
    if (!o->name)
        snprintf(opt, sizeof opt, "-%c", o->key);
    set_row_value(o, opt, text);
}

/* The row of key in the table when the parser sets its variable; else NULL. */
static const qk_option *row_setting(const qk_option *options, int key)
{
    for (const qk_option *o = options; o->key; o++)
        if (o->key == key)
            return o->value && o->type != QK_OPT_OWN ? o : NULL;
    return NULL;
}

static void set_defaults(const qk_option *options)
{
    for (const qk_option *o = options; o->key; o++)
        if (o->value && o->def)
            set_row(o, o->def);
}

static void print_defaults(const qk_option *options)
{
    for (const qk_option *o = options; o->key; o++)
        if (o->def && o->name)
            printf("%s\t%s\n", o->name, o->def);
}

void qk_args_init(qk_args *a, const qk_program *prog, int argc, char **argv)
{
    qk_die_on_out_of_memory();
    memset(a, 0, sizeof *a);
    a->prog = prog;
    a->threads = 2;
    a->verify = 1;
    a->argc = argc;
    a->argv = argv;
    a->getopt_tables = make_tables(prog);
    set_defaults(prog->options);
    optind = 0; /* getopt starts afresh (glibc) */
}

int qk_args_next(qk_args *a, const char **value)
{
    const getopt_tables *t = a->getopt_tables;
    for (;;) {
        int c = getopt_long(a->argc, a->argv, t->shortopts, t->longopts, NULL);
        *value = optarg;
        switch (c) {
        case -1: {
            a->operands = a->argv + optind;
            a->n_operands = a->argc - optind;
            free_tables(a);
            /* the level of the vector code: refused before any work (not by
             * --check, which checks the options alone: Make's check of a
             * parameter would blame the parameter) */
            qk_err err;
            if (!a->check_only && qk_isa_check(&err) < 0)
                qk_die(QK_EXIT_USAGE, NULL, "%s", err.msg);
            return -1;
        }
        case 'o': a->output = optarg; break;
        case 'j': a->threads = (int)qk_opt_int("--threads", optarg, 1, QK_MAX_THREADS); break;
        case 'q': qk_progress_set_quiet(1); break;
        case QK_KEY_NO_VERIFY: a->verify = 0; break;
        case QK_KEY_MIN_FREE:
            qk_set_min_free((uint64_t)qk_opt_int("--min-free", optarg, 0, 1000000000) * 1000000);
            break;
        case QK_KEY_HELP:
            qk_program_help(stdout, a->prog);
            exit(QK_EXIT_OK);
        case QK_KEY_VERSION:
            printf("%s %s\n", a->prog->name, QK_VERSION_STRING);
            exit(QK_EXIT_OK);
        case QK_KEY_CHECK_OPTIONS: a->check_only = 1; break;
        case QK_KEY_PRINT_DEFAULTS:
            print_defaults(a->prog->options);
            exit(QK_EXIT_OK);
        case '?': qk_usage_error(a->prog);
        default: {
            const qk_option *row = row_setting(a->prog->options, c);
            if (!row)
                return c;
            set_row(row, optarg);
        }
        }
    }
}

void qk_args_operands(const qk_args *a, int min, int max)
{
    if (a->check_only)
        exit(QK_EXIT_OK);
    if (a->n_operands < min || (max >= 0 && a->n_operands > max))
        qk_usage_error(a->prog);
}

/* ---- option values ------------------------------------------------------------------- */

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

double qk_opt_open_unit(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        qk_die(QK_EXIT_USAGE, NULL, "%s: expected a number, got '%s'", opt, s);
    if (!(v > 0.0 && v < 1.0))
        qk_die(QK_EXIT_USAGE, NULL, "%s: expected a number in (0, 1), got '%s'", opt, s);
    return v;
}

double qk_opt_share(const char *opt, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0 && v <= 1))
        qk_die(QK_EXIT_USAGE, NULL, "%s takes a number from 0 to 1, got '%s'", opt, s);
    return v;
}

const char *qk_opt_label(const char *opt, const char *s)
{
    if (!*s || strpbrk(s, "\t\n\r,\""))
        qk_die(QK_EXIT_USAGE, NULL, "%s: '%s' is empty or holds a tab, comma or quote", opt, s);
    return s;
}

int qk_opt_choice(const char *opt, const char *s, const char *first, const char *second)
{
    if (strcmp(s, first) == 0)
        return 0;
    if (strcmp(s, second) == 0)
        return 1;
    qk_die(QK_EXIT_USAGE, NULL, "%s: expected %s or %s, got '%s'", opt, first, second, s);
}

/* ---- stores and outputs -------------------------------------------------------------- */

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
    qk_output out = {path, fill, NULL};
    qk_write_outputs(&out, 1, arg);
}

/* What names the file path will be: its directory's real path and its
 * name, so "x.tsv", "./x.tsv" and "dir/../x.tsv" compare equal (the file
 * need not exist yet). As given when the directory cannot be resolved. */
static char *output_identity(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? qk_strdup(slash == path ? "/" : path) : qk_strdup(".");
    if (slash && slash != path)
        dir[slash - path] = '\0';
    char *real = realpath(dir, NULL);
    free(dir);
    if (!real)
        return qk_strdup(path);
    char *id = qk_path_join(real, slash ? slash + 1 : path);
    free(real);
    return id;
}

void qk_outputs_distinct(const char *const *paths, const char *const *names, int n)
{
    char **ids = qk_calloc((size_t)(n ? n : 1), sizeof *ids);
    for (int i = 0; i < n; i++) {
        ids[i] = output_identity(paths[i]);
        for (int j = 0; j < i; j++) {
            if (strcmp(ids[i], ids[j]) != 0)
                continue;
            if (names)
                qk_die(QK_EXIT_USAGE, NULL, "%s and %s name one file (%s%s%s): each output "
                       "needs its own", names[j], names[i], paths[j],
                       strcmp(paths[i], paths[j]) ? ", " : "",
                       strcmp(paths[i], paths[j]) ? paths[i] : "");
            qk_die(QK_EXIT_USAGE, paths[i], "given for two outputs: each needs its own file");
        }
    }
    for (int i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* Whether a file could be written at path, creating nothing, as
 * qk_atomic_open writes it: a device or a FIFO in place; any other file
 * through a temporary beside it (beside the file a symbolic link names),
 * so its directory must be one this process may write into, or, with
 * makes_dirs (the program makes its outputs' directories), the nearest
 * directory on the way that exists; and a file of another user in a
 * sticky directory (/tmp) cannot be replaced. */
static int can_create(const char *path, int makes_dirs, qk_err *err)
{
    struct stat st, dst;
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return qk_fail(err, "cannot create %s: it is a directory", path);
    if (exists && !S_ISREG(st.st_mode))
        return access(path, W_OK) == 0 ? 0
                                       : qk_fail(err, "cannot open %s: %s", path, strerror(errno));
    char *target = realpath(path, NULL);
    char *dir = qk_path_dir(target ? target : path);
    free(target);
    /* up through the directories that would be made (not a broken link) */
    while (makes_dirs && stat(dir, &dst) != 0 && lstat(dir, &dst) != 0 && errno == ENOENT &&
           strcmp(dir, "/") != 0 && strcmp(dir, ".") != 0) {
        char *up = qk_path_dir(dir);
        free(dir);
        dir = up;
    }
    uid_t me = geteuid();
    int rc = 0;
    if (stat(dir, &dst) != 0)
        rc = qk_fail(err, "cannot create %s: %s: %s", path, dir, strerror(errno));
    else if (!S_ISDIR(dst.st_mode))
        rc = qk_fail(err, "cannot create %s: %s is not a directory", path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        rc = qk_fail(err, "cannot create %s: %s: %s", path, dir, strerror(errno));
    else if (exists && (dst.st_mode & S_ISVTX) && me != 0 && st.st_uid != me && dst.st_uid != me)
        rc = qk_fail(err, "cannot replace %s: %s (another user's file in a sticky directory)",
                     path, strerror(EPERM));
    free(dir);
    return rc;
}

void qk_outputs_check(const char *const *paths, const char *const *names, int n, int makes_dirs)
{
    qk_outputs_distinct(paths, names, n);
    for (int i = 0; i < n; i++) {
        qk_err err;
        if (can_create(paths[i], makes_dirs, &err) != 0)
            qk_die(QK_EXIT_DATA, paths[i], "%s", err.msg);
    }
}

static void abort_outputs(qk_atomic *files, int from, int to)
{
    for (int i = from; i < to; i++)
        qk_atomic_abort(&files[i]);
}

/* Renames n written files into place: first every file whole on disk and
 * every place free for it, so that a failure replaces none of the earlier
 * outputs; exit 2 naming the file that failed. */
static void commit_outputs(qk_atomic *files, const char *const *paths, int n)
{
    qk_err err;
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (qk_atomic_sync(&files[i], &err) != 0 ||
            (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode) &&
             qk_fail(&err, "is a directory") != 0)) {
            abort_outputs(files, 0, n);
            qk_die(QK_EXIT_DATA, paths[i], "%s", err.msg);
        }
    }
    for (int i = 0; i < n; i++)
        if (qk_atomic_commit(&files[i], &err) != 0) {
            abort_outputs(files, i + 1, n);
            qk_die(QK_EXIT_DATA, paths[i], "%s", err.msg);
        }
}

void qk_output_commit_all(qk_atomic *files, int n)
{
    char **paths = qk_calloc((size_t)(n ? n : 1), sizeof *paths);
    for (int i = 0; i < n; i++)
        paths[i] = qk_strdup(files[i].final_path); /* a commit frees final_path */
    qk_outputs_distinct((const char *const *)paths, NULL, n);
    commit_outputs(files, (const char *const *)paths, n);
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

void qk_write_outputs(const qk_output *outputs, int n, const void *arg)
{
    qk_atomic *files = qk_calloc((size_t)(n ? n : 1), sizeof *files);
    const char **paths = qk_calloc((size_t)(n ? n : 1), sizeof *paths);
    for (int i = 0; i < n; i++)
        paths[i] = outputs[i].path;
    qk_outputs_distinct(paths, NULL, n);
    qk_err err;
    for (int i = 0; i < n; i++) {
        const qk_output *o = &outputs[i];
        if (qk_atomic_open(&files[i], o->path, &err) == 0) {
            if (o->fill) {
                o->fill(files[i].fp, arg);
                continue;
            }
            if (o->fill_checked(files[i].fp, arg, &err) == 0)
                continue;
        }
        abort_outputs(files, 0, i + 1);
        qk_die(QK_EXIT_DATA, o->path, "%s", err.msg);
    }
    commit_outputs(files, paths, n);
    free(files);
    free(paths);
}

void qk_write_texts(const qk_text *texts, int n)
{
    qk_atomic *files = qk_calloc((size_t)(n ? n : 1), sizeof *files);
    const char **paths = qk_calloc((size_t)(n ? n : 1), sizeof *paths);
    for (int i = 0; i < n; i++)
        paths[i] = texts[i].path;
    qk_outputs_distinct(paths, NULL, n);
    qk_err err;
    for (int i = 0; i < n; i++) {
        if (qk_atomic_open(&files[i], paths[i], &err) != 0) {
            abort_outputs(files, 0, i);
            qk_die(QK_EXIT_DATA, paths[i], "%s", err.msg);
        }
        fwrite(texts[i].buf, 1, texts[i].len, files[i].fp);
    }
    commit_outputs(files, paths, n);
    free(files);
    free(paths);
}
