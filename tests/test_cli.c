/* Declarative options (src/lib/cli/cli.c): one table gives the parsing and the
 * --help text. The shared options are handled by the parser, the
 * program's own come back with their values, operands may stand anywhere;
 * the help aligns and wraps the options; --help, --version, an unknown
 * option, a bad --threads and a wrong number of operands exit as the
 * programs must; a table giving a shared key another meaning is refused; a
 * program stopped by an error or a signal leaves no temporary behind. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qk/cli.h"
#include "testutil.h"

enum { OPT_ALPHA = QK_KEY_FIRST, OPT_LONG_NAMED };

static const qk_option test_options[] = {
    QK_OPTION_OUTPUT("the table"),
    {OPT_ALPHA, "alpha", "N", "a number"},
    {'x', "extra", NULL, "a flag with a short letter"},
    {OPT_LONG_NAMED, "a-rather-long-option-name", "VALUE",
     "its help starts on the next line, and it is long enough to be wrapped onto a second one"},
    {'V', NULL, NULL, "short only"},
    QK_OPTION_THREADS,
    QK_OPTION_NO_VERIFY,
    QK_OPTION_QUIET,
    QK_OPTIONS_END};

static const qk_program test_program = {
    "qk-test", "qk-test [OPTIONS] STORE...\nqk-test --alpha N",
    "A program of the test.\n", test_options, "a note",
    "qk-test -o out.tsv \\\n  s.qks", NULL};

/* Parses argv (NULL-terminated); the program's options are recorded in
 * keys/values. */
static int parse(qk_args *a, char **argv, int *keys, const char **values)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    qk_args_init(a, &test_program, argc, argv);
    int n = 0;
    const char *value;
    for (int key; (key = qk_args_next(a, &value)) != -1; n++) {
        keys[n] = key;
        values[n] = value;
    }
    return n;
}

START_TEST(shared_options_are_handled_and_own_ones_returned)
{
    char *argv[] = {"qk-test", "-o", "out.tsv", "s1", "--alpha", "7", "-x", "-j", "3",
                    "--no-verify", "s2", NULL};
    qk_args a;
    int keys[8];
    const char *values[8];
    ck_assert_int_eq(parse(&a, argv, keys, values), 2);
    ck_assert_int_eq(keys[0], OPT_ALPHA);
    ck_assert_str_eq(values[0], "7");
    ck_assert_int_eq(keys[1], 'x');
    ck_assert_ptr_null(values[1]);
    ck_assert_str_eq(a.output, "out.tsv");
    ck_assert_int_eq(a.threads, 3);
    ck_assert_int_eq(a.verify, 0);
    ck_assert_int_eq(a.n_operands, 2);
    ck_assert_str_eq(a.operands[0], "s1");
    ck_assert_str_eq(a.operands[1], "s2");
    ck_assert_ptr_null(a.getopt_tables);

    char *plain[] = {"qk-test", "--output=o2", "--threads=5", "--a-rather-long-option-name",
                     "v", "-V", "s", NULL};
    ck_assert_int_eq(parse(&a, plain, keys, values), 2);
    ck_assert_int_eq(keys[0], OPT_LONG_NAMED);
    ck_assert_str_eq(values[0], "v");
    ck_assert_int_eq(keys[1], 'V');
    ck_assert_str_eq(a.output, "o2");
    ck_assert_int_eq(a.threads, 5);
    ck_assert_int_eq(a.verify, 1);
    ck_assert_int_eq(a.n_operands, 1);

    char *none[] = {"qk-test", NULL};
    ck_assert_int_eq(parse(&a, none, keys, values), 0);
    ck_assert_ptr_null(a.output);
    ck_assert_int_eq(a.threads, 2);
    ck_assert_int_eq(a.verify, 1);
    ck_assert_int_eq(a.n_operands, 0);
}
END_TEST

static const char expected_help[] =
    "Usage: qk-test [OPTIONS] STORE...\n"
    "       qk-test --alpha N\n"
    "\n"
    "A program of the test.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE  the table\n"
    "      --alpha N      a number\n"
    "  -x, --extra        a flag with a short letter\n"
    "      --a-rather-long-option-name VALUE\n"
    "                     its help starts on the next line, and it is long enough to\n"
    "                     be wrapped onto a second one\n"
    "  -V                 short only\n"
    "  -j, --threads N    worker threads (default 2); the output does not depend on N\n"
    "      --no-verify    do not check the store's checksum and rows\n"
    "  -q, --quiet        no progress lines\n"
    "  -h, --help         this text\n"
    "      --version      print the version\n"
    "      --check        check the options, then exit 0 doing nothing\n"
    "\n"
    "Exit status: 0 success, 1 usage error, 2 bad or unreadable data (a note).\n"
    "Example: qk-test -o out.tsv \\\n"
    "           s.qks\n";

START_TEST(help_aligns_and_wraps_the_options)
{
    char *text;
    size_t len;
    FILE *fp = open_memstream(&text, &len);
    qk_program_help(fp, &test_program);
    fclose(fp);
    ck_assert_str_eq(text, expected_help);
    free(text);
}
END_TEST

/* Runs body(arg) in a child named qk-test; returns its exit status (128 +
 * signal when killed) and what it wrote on stdout and stderr together. */
static int in_child(void (*body)(const void *arg), const void *arg, char *out, size_t cap)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        dup2(fd[1], STDERR_FILENO);
        close(fd[0]);
        /* the signals as a terminal gives them: under nohup, or as a
         * background job of a script, the tests inherit an ignored SIGHUP or
         * SIGINT, which qk_set_progname rightly leaves ignored */
        signal(SIGHUP, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        qk_set_progname("qk-test");
        body(arg);
        fflush(NULL);
        _exit(0);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t got;
    while (len + 1 < cap && (got = read(fd[0], out + len, cap - 1 - len)) > 0)
        len += (size_t)got;
    out[len] = '\0';
    close(fd[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A parse of argv (NULL-terminated) taking one operand. */
static void parse_one(const void *arg)
{
    qk_args a;
    int keys[8];
    const char *values[8];
    parse(&a, (char **)arg, keys, values);
    qk_args_operands(&a, 1, 1);
}

static int run_child(char **argv, char *out, size_t cap)
{
    return in_child(parse_one, argv, out, cap);
}

START_TEST(help_version_and_usage_errors_exit)
{
    char out[4096];
    char *help[] = {"qk-test", "--help", NULL};
    ck_assert_int_eq(run_child(help, out, sizeof out), QK_EXIT_OK);
    ck_assert_str_eq(out, expected_help);
    char *h[] = {"qk-test", "s", "-h", NULL};
    ck_assert_int_eq(run_child(h, out, sizeof out), QK_EXIT_OK);
    ck_assert_str_eq(out, expected_help);
    char *version[] = {"qk-test", "--version", NULL};
    ck_assert_int_eq(run_child(version, out, sizeof out), QK_EXIT_OK);
    ck_assert_str_eq(out, "qk-test " QK_VERSION_STRING "\n");

    char *unknown[] = {"qk-test", "--bogus", "s", NULL};
    ck_assert_int_eq(run_child(unknown, out, sizeof out), QK_EXIT_USAGE);
    ck_assert_ptr_nonnull(strstr(out, "Usage: qk-test"));
    char *missing[] = {"qk-test", "s", "--alpha", NULL};
    ck_assert_int_eq(run_child(missing, out, sizeof out), QK_EXIT_USAGE);
    char *threads[] = {"qk-test", "-j", "0", "s", NULL};
    ck_assert_int_eq(run_child(threads, out, sizeof out), QK_EXIT_USAGE);
    ck_assert_str_eq(out, "qk-test: error: --threads: expected an integer in [1, 256], got '0'\n");
    char *two[] = {"qk-test", "s1", "s2", NULL};
    ck_assert_int_eq(run_child(two, out, sizeof out), QK_EXIT_USAGE);
    char *one[] = {"qk-test", "s1", NULL};
    ck_assert_int_eq(run_child(one, out, sizeof out), QK_EXIT_OK);
    ck_assert_str_eq(out, "");
}
END_TEST

/* -o taken for a directory: the parser refuses the table. */
static const qk_option misuse_options[] = {{'o', "out-dir", "DIR", "a directory"},
                                           QK_OPTIONS_END};

/* The parser's check of a table that gives -o another meaning. */
static void init_misused(const void *arg)
{
    (void)arg;
    qk_program p = test_program;
    p.options = misuse_options;
    char *argv[] = {"qk-test", "s", NULL};
    qk_args a;
    qk_args_init(&a, &p, 2, argv);
}

START_TEST(a_shared_key_keeps_its_meaning)
{
    char out[1024];
    ck_assert_int_eq(in_child(init_misused, NULL, out, sizeof out), 128 + SIGABRT);
}
END_TEST

static void fill_line(FILE *fp, const void *arg)
{
    fputs(arg, fp);
}

/* qk_write_outputs of two files, paths[0] and paths[1]. */
static void write_two_files(const void *arg)
{
    const char *const *paths = arg;
    const qk_output outputs[] = {{paths[0], fill_line, NULL}, {paths[1], fill_line, NULL}};
    qk_write_outputs(outputs, 2, "x\n");
}

/* The exit status of writing two files to a and b in a child (its stderr
 * into msg). */
static int write_two(const char *a, const char *b, char *msg, size_t cap)
{
    const char *paths[] = {a, b};
    return in_child(write_two_files, paths, msg, cap);
}

/* Two outputs that name one file, however spelled: a usage error, and
 * neither written (the second would have replaced the first). */
START_TEST(two_outputs_on_one_file_are_a_usage_error)
{
    const char *path = "build/tests/tmp/cli-one.tsv";
    ck_assert_int_eq(qk_mkdirs("build/tests/tmp", NULL), 0);
    unlink(path);
    char msg[512];
    ck_assert_int_eq(write_two(path, "build/tests/tmp/../tmp/./cli-one.tsv", msg, sizeof msg),
                     QK_EXIT_USAGE);
    ck_assert_str_eq(msg, "qk-test: error: build/tests/tmp/../tmp/./cli-one.tsv: given for "
                          "two outputs: each needs its own file\n");
    ck_assert_int_ne(access(path, F_OK), 0);
    ck_assert_int_eq(write_two(path, "build/tests/tmp/cli-two.tsv", msg, sizeof msg),
                     QK_EXIT_OK);
    ck_assert_int_eq(access(path, F_OK), 0);
    const char *paths[] = {"cli-one.tsv", "./cli-two.tsv", "/cli-one.tsv"};
    qk_outputs_distinct(paths, NULL, 3); /* returns: all distinct */
    unlink(path);
    unlink("build/tests/tmp/cli-two.tsv");
}
END_TEST

/* Entries of a directory other than . and .. */
static int entries_of(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* How a program is stopped while it writes (stop_writing). */
typedef struct stop_how {
    const char *dir;
    int signal; /* 0: qk_die */
} stop_how;

/* A program stopped while it writes an output (half a table in its
 * temporary file) and a temporary tree (a dataset being written), by
 * qk_die or by a signal. */
static void stop_writing(const void *arg)
{
    const stop_how *how = arg;
    char path[64], tree[64], file[160];
    snprintf(path, sizeof path, "%s/out.tsv", how->dir);
    qk_atomic out;
    qk_output_open(&out, path);
    fputs("half a table\n", out.fp);
    fflush(out.fp);
    snprintf(tree, sizeof tree, "%s/.dataset.tmp", how->dir);
    mkdir(tree, 0755);
    qk_temp_begin(tree);
    for (int i = 0; i < 40; i++) { /* more than one read of the directory */
        snprintf(file, sizeof file, "%s/l%02dh00q-with-a-long-name-of-a-config", tree, i);
        mkdir(file, 0755);
        snprintf(file, sizeof file, "%s/l%02dh00q-with-a-long-name-of-a-config/data.parquet",
                 tree, i);
        FILE *fp = fopen(file, "w");
        fputs("PAR1", fp);
        fclose(fp);
    }
    if (how->signal == 0)
        qk_die(QK_EXIT_DATA, path, "bad data");
    raise(how->signal);
}

START_TEST(a_stopped_program_leaves_no_temporaries)
{
    static const int hows[] = {0, SIGTERM, SIGINT, SIGHUP};
    for (int i = 0; i < 4; i++) {
        char dir[] = "/tmp/qk-test-stop-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        stop_how how = {dir, hows[i]};
        char out[1024];
        int status = in_child(stop_writing, &how, out, sizeof out);
        ck_assert_int_eq(status, hows[i] ? 128 + hows[i] : QK_EXIT_DATA);
        ck_assert_int_eq(entries_of(dir), 0);
        rmdir(dir);
    }
}
END_TEST

/* Writes "table\n" to path through qk_atomic; returns the commit's result. */
static int write_table_to(const char *path)
{
    qk_atomic out;
    qk_err err;
    if (qk_atomic_open(&out, path, &err) != 0)
        return -1;
    fputs("table\n", out.fp);
    return qk_atomic_commit(&out, &err);
}

START_TEST(an_output_that_is_a_device_fifo_or_link_stays_one)
{
    char dir[] = "/tmp/qk-test-out-XXXXXX", path[96], real[96];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    /* a FIFO (as a device, -o /dev/stdout, which the test must not risk
     * replacing): its reader gets the table, the FIFO stays */
    struct stat st;
    snprintf(path, sizeof path, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char got[16] = "";
        FILE *fp = fopen(path, "r");
        size_t n = fp ? fread(got, 1, sizeof got - 1, fp) : 0;
        _exit(n == 6 && strcmp(got, "table\n") == 0 ? 0 : 1);
    }
    ck_assert_int_eq(write_table_to(path), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    unlink(path);
    /* a symbolic link: the file it names is replaced, the link stays */
    snprintf(real, sizeof real, "%s/real.tsv", dir);
    snprintf(path, sizeof path, "%s/link.tsv", dir);
    FILE *fp = fopen(real, "w");
    fputs("old\n", fp);
    fclose(fp);
    ck_assert_int_eq(symlink(real, path), 0);
    ck_assert_int_eq(write_table_to(path), 0);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    char got[16] = "";
    fp = fopen(real, "r");
    ck_assert_uint_eq(fread(got, 1, sizeof got - 1, fp), 6);
    fclose(fp);
    ck_assert_str_eq(got, "table\n");
    unlink(path);
    unlink(real);
    ck_assert_int_eq(entries_of(dir), 0);
    rmdir(dir);
}
END_TEST

/* Several threads failing at once (out of memory in every worker): one
 * error line, the error's exit status. */
static void *fail_now(void *arg)
{
    (void)arg;
    qk_die(QK_EXIT_DATA, "store.qks", "out of memory");
    return NULL;
}

/* Eight threads calling fail_now. */
static void fail_in_threads(const void *arg)
{
    (void)arg;
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, fail_now, NULL);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
}

START_TEST(threads_failing_together_stop_the_program_once)
{
    for (int round = 0; round < 20; round++) {
        char out[4096];
        ck_assert_int_eq(in_child(fail_in_threads, NULL, out, sizeof out), QK_EXIT_DATA);
        ck_assert_str_eq(out, "qk-test: error: store.qks: out of memory\n");
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, shared_options_are_handled_and_own_ones_returned);
    tcase_add_test(tc, help_aligns_and_wraps_the_options);
    tcase_add_test(tc, help_version_and_usage_errors_exit);
    tcase_add_test(tc, a_shared_key_keeps_its_meaning);
    tcase_add_test(tc, a_stopped_program_leaves_no_temporaries);
    tcase_add_test(tc, an_output_that_is_a_device_fifo_or_link_stays_one);
    tcase_add_test(tc, threads_failing_together_stop_the_program_once);
    tcase_add_test(tc, two_outputs_on_one_file_are_a_usage_error);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
