/* What the programs share around the library's computations: their
 * options, declared once in a table from which both the command-line
 * parsing and the --help text come; option values that exit with status 1
 * (usage) when malformed; and stores and output files that exit with
 * status 2 and the standard one-line message naming the file when they
 * cannot be opened or written. */
#ifndef QK_CLI_H
#define QK_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qk/common.h"
#include "qk/die.h"
#include "qk/store.h"

/* ---- options ---------------------------------------------------------------------- */

/* How the parser sets the variable of an option row (value): a row of
 * type QK_OPT_OWN leaves its value to the program's own code. */
typedef enum qk_opt_type {
    QK_OPT_OWN = 0,
    QK_OPT_INT,       /* int in [min, max] (qk_opt_int) */
    QK_OPT_INT64,     /* int64_t in [min, max] */
    QK_OPT_UINT64,    /* uint64_t in [min, max] */
    QK_OPT_FRACTION,  /* double in [0, 1] (qk_opt_fraction) */
    QK_OPT_OPEN_UNIT, /* double strictly between 0 and 1 */
    QK_OPT_SHARE,     /* double in [0, 1], said as a share ("takes a number from 0 to 1") */
    QK_OPT_CHOICE,    /* int: 0 for the first of the two words, 1 for the second */
} qk_opt_type;

/* One option of a program. A program's table lists them in the order its
 * help shows them and ends with QK_OPTIONS_END. A row may also carry the
 * variable it sets (value), how (type, min and max, words) and the
 * default (def, the one place the default is written): the parser then
 * sets the variable to def first and to the given value after, and the
 * help adds "(default DEF)". */
typedef struct qk_option {
    int key;          /* its short letter, or QK_KEY_FIRST + n for a long-only one */
    const char *name; /* long name without "--"; NULL: short only */
    const char *arg;  /* the value's name in the help ("FILE"); NULL: a flag */
    const char *help; /* one line or more, wrapped to fit */
    qk_opt_type type;
    void *value;       /* the variable the parser sets; NULL: the program sets it */
    long long min, max; /* the range of an integer */
    const char *words; /* QK_OPT_CHOICE: the two words, "diag full" */
    const char *def;   /* the default as typed on the command line; NULL: none */
} qk_option;

/* Rows that set a variable, its type checked: p must point to the type
 * the parser writes. DEF is the default as typed ("32"). */
#define QK_OPT_PTR_(T, p) ((void *)(1 ? (p) : (T *)0))
#define QK_OPTION_INT(key, name, arg, p, lo, hi, def, help) \
    {key, name, arg, help, QK_OPT_INT, QK_OPT_PTR_(int, p), lo, hi, NULL, def}
#define QK_OPTION_INT64(key, name, arg, p, lo, hi, def, help) \
    {key, name, arg, help, QK_OPT_INT64, QK_OPT_PTR_(int64_t, p), lo, hi, NULL, def}
#define QK_OPTION_UINT64(key, name, arg, p, lo, hi, def, help) \
    {key, name, arg, help, QK_OPT_UINT64, QK_OPT_PTR_(uint64_t, p), lo, hi, NULL, def}
#define QK_OPTION_REAL(type, key, name, arg, p, def, help) \
    {key, name, arg, help, type, QK_OPT_PTR_(double, p), 0, 0, NULL, def}
#define QK_OPTION_CHOICE(key, name, arg, p, words, def, help) \
    {key, name, arg, help, QK_OPT_CHOICE, QK_OPT_PTR_(int, p), 0, 0, words, def}

/* Keys of the long-only options: a program's own count up from
 * QK_KEY_FIRST; the shared ones are far above. */
enum { QK_KEY_FIRST = 256, QK_KEY_NO_VERIFY = 0x10000, QK_KEY_VERSION, QK_KEY_MIN_FREE,
       QK_KEY_CHECK_OPTIONS, QK_KEY_PRINT_DEFAULTS, QK_KEY_HELP = 'h' };

/* The shared options, with one meaning in every program: a program lists
 * those it takes in its table, where its help shows them; the parser
 * handles them itself (qk_args). -h/--help and --version belong to every
 * program, come last in its help and need no entry. */
#define QK_OPTION_OUTPUT(help) {'o', "output", "FILE", help} /* the primary output */
#define QK_OPTION_THREADS \
    {'j', "threads", "N", "worker threads (default 2); the output does not depend on N"}
#define QK_OPTION_QUIET {'q', "quiet", NULL, "no progress lines"}
#define QK_OPTION_NO_VERIFY \
    {QK_KEY_NO_VERIFY, "no-verify", NULL, "do not check the store's checksum and rows"}
#define QK_OPTION_MIN_FREE \
    {QK_KEY_MIN_FREE, "min-free", "MB", "stop with an error, removing the partial file, " \
     "rather than leave less than MB megabytes free on the disk written to (0: no check)", \
     QK_OPT_OWN, NULL, 0, 0, NULL, QK_STR(QK_DEFAULT_MIN_FREE)}
#define QK_OPTIONS_END {0, NULL, NULL, NULL, QK_OPT_OWN, NULL, 0, 0, NULL, NULL}

/* A program's command line and help. The help is: "Usage: " and the usage
 * lines, about, "Options:" and the options aligned with their help, the
 * exit statuses (with exit_note after status 2), "Example: " and the
 * example lines, then more_help's text. usage, about and example are
 * printed as written (lines after the first of usage and example get the
 * indentation of the first). */
typedef struct qk_program {
    const char *name;     /* "qk-pca" */
    const char *usage;    /* "qk-pca [OPTIONS] STORE", one line per form */
    const char *about;    /* the description, its lines broken by hand */
    const qk_option *options;
    const char *exit_note; /* NULL, or what status 2 covers */
    const char *example;   /* NULL, or one command (or more, one a line) */
    void (*more_help)(FILE *fp);
} qk_program;

/* The shared options as parsed, and the operands once the options are
 * read. */
typedef struct qk_args {
    const qk_program *prog;
    const char *output; /* -o FILE; NULL if not given */
    int threads;        /* -j N; 2 if not given */
    int verify;         /* 0 after --no-verify */
    int check_only;     /* --check: qk_args_operands exits 0 */
    char **operands;    /* the arguments that are no options (after the last qk_args_next) */
    int n_operands;
    int argc;
    char **argv;
    void *getopt_tables; /* the parser's */
} qk_args;

/* Starts parsing argv with the options of prog's table, and sets every
 * row's variable to its default. --print-defaults (every program has it)
 * prints "name<TAB>default" for each row with one and exits 0. */
void qk_args_init(qk_args *a, const qk_program *prog, int argc, char **argv);
/* The next of the program's own options that the table does not set
 * itself: its key, with its value (NULL for a flag) in *value. The shared options are handled on the way (-h
 * and --version print and exit 0; an unknown option or a missing value is
 * a usage error). -1 when the options are read: operands are then set. */
int qk_args_next(qk_args *a, const char **value);
/* Usage error unless the operands number min to max (max < 0: no limit).
 * After --check (every program has it: the options are parsed and
 * their values checked, and nothing is done, for a pipeline that checks
 * what the user typed before any work) it exits 0 instead: a program calls
 * it once its options are read and checked together. */
void qk_args_operands(const qk_args *a, int min, int max);

/* The help text (stdout for --help). */
void qk_program_help(FILE *fp, const qk_program *prog);
/* The help on stderr, then exit 1. */
void qk_usage_error(const qk_program *prog) __attribute__((noreturn));

/* An integer option value in [lo, hi]; else "OPT: expected an integer in
 * [LO, HI], got 'S'" and exit 1. */
long long qk_opt_int(const char *opt, const char *s, long long lo, long long hi);
/* A number option value in [0, 1]; else "OPT: expected a number in [0, 1],
 * got 'S'" and exit 1. */
double qk_opt_fraction(const char *opt, const char *s);
/* A finite number strictly between 0 and 1; else "OPT: expected a number,
 * got 'S'" or "OPT: expected a number in (0, 1), got 'S'" and exit 1. */
double qk_opt_open_unit(const char *opt, const char *s);
/* A share in [0, 1]; else "OPT takes a number from 0 to 1, got 'S'" and
 * exit 1. */
double qk_opt_share(const char *opt, const char *s);
/* A name written into table cells or headers (a family, a column): s
 * itself; else "OPT: 'S' is empty or holds a tab, comma or quote" and exit
 * 1. */
const char *qk_opt_label(const char *opt, const char *s);
/* A query head named as in the per-head targets, "lLLhHH" (layer LL,
 * head HH, at least two digits each); else "OPT: expected a head lLLhHH,
 * got 'S'" and exit 1. */
void qk_opt_head(const char *opt, const char *s, int *layer, int *head);
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

/* One of a program's output files and what writes it: fill, or, for a
 * writer that can fail, fill_checked (-1 with a message in err). */
typedef struct qk_output {
    const char *path;
    void (*fill)(FILE *fp, const void *arg);
    int (*fill_checked)(FILE *fp, const void *arg, qk_err *err);
} qk_output;

/* Writes n files from arg, each atomically, and renames none into place
 * before all are written: a writer that fails, or a file that cannot be
 * created, leaves no new output and exits 2 naming that file. */
void qk_write_outputs(const qk_output *outputs, int n, const void *arg);
/* Writes n closed texts (their buffers, include/qk/values.h) to their
 * paths like qk_write_outputs: all or none. (values.c calls it: the
 * struct is named here, not included, so the two headers do not include
 * each other.) */
struct qk_text;
void qk_write_texts(const struct qk_text *texts, int n);
/* Commits n files opened with qk_atomic_open (and written) like
 * qk_write_outputs: all into place, or none and exit 2 naming the file. */
void qk_output_commit_all(qk_atomic *files, int n);

/* Exits 1 when two of the n output paths name one file (the second would
 * replace the first): "NAME1 and NAME2 name one file (PATH)", with names
 * the options that gave them, or "PATH: given for two outputs" without
 * (names NULL). qk_write_outputs, qk_write_texts and qk_output_commit_all
 * check their outputs so; a program checks its own before its work
 * (qk_outputs_check). */
void qk_outputs_distinct(const char *const *paths, const char *const *names, int n);
/* qk_outputs_distinct, then whether each output can be written, before a
 * program's work rather than after it, creating nothing: its directory must
 * exist and be writable, or, with makes_dirs (the program makes its
 * outputs' directories before it writes), the nearest directory on the way
 * that exists. Exits 2 naming the file that cannot be written. */
void qk_outputs_check(const char *const *paths, const char *const *names, int n,
                      int makes_dirs);

#endif
