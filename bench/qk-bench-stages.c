/* qk-bench-stages: the per-head stages qk-pca, qk-rotate and qk-complement
 * on a store, each beside its floor (docs/performance.md): the stage
 * program is run as it is, on one thread, and its CPU time (user + sys)
 * taken; then the work the stage cannot avoid is timed alone at the same
 * shapes, in the same process run: reading the store's vectors once
 * (converted to double), the BLAS and LAPACK calls of the moments, the
 * eigenproblems and the projections, and for the complement one atan2 per
 * row and pair with the fastest vectorised SLEEF variant the CPU runs.
 * Prints one TSV line per stage. */
#include <cblas.h>
#include <errno.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/heads.h"
#include "qk/moments.h"
#include "qk/pca.h"
#include "qk/plasticity.h"
#include "qk/rotation.h"
#include "qk/simd.h"
#include "qk/store.h"

void openblas_set_num_threads(int);

#if defined(__x86_64__) && defined(__GNUC__)
/* SLEEF's fixed-width atan2 variants (libsleef), declared here because
 * sleef.h declares the AVX ones only when the whole file is built for AVX. */
__m128d Sleef_atan2d2_u35sse2(__m128d, __m128d);
__m256d Sleef_atan2d4_u35avx2(__m256d, __m256d);
__m512d Sleef_atan2d8_u35avx512f(__m512d, __m512d);
#endif

/* read is no program: the floor every stage shares, reading the rows, alone
 * (what make bench-e2e adds to qk-plasticity's own floor) */
enum { STAGE_PCA, STAGE_ROTATE, STAGE_COMPLEMENT, STAGE_READ, N_STAGES };
static const char *const stage_name[N_STAGES] = {"pca", "rotate", "complement", "read"};
static const char *const stage_prog[N_STAGES] = {"qk-pca", "qk-rotate", "qk-complement", NULL};

enum { OPT_STAGES = QK_KEY_FIRST, OPT_FLOOR_ONLY, OPT_BINDIR, OPT_TMPDIR, OPT_REPEAT, OPT_PRINT };

static const qk_option options_table[] = {
    {OPT_STAGES, "stages", "LIST", "comma-separated stages (default pca,rotate,complement; "
     "read: the reading of the rows alone, a floor without a stage)"},
    {OPT_FLOOR_ONLY, "floor-only", NULL, "time the floors only (seconds and ratio are nan)"},
    QK_OPTION_THREADS,
    {OPT_BINDIR, "bindir", "DIR", "where the stage programs are (default: beside this one)"},
    {OPT_TMPDIR, "tmpdir", "DIR", "where their outputs go, removed afterwards (default $TMPDIR "
                                  "or /tmp)"},
    {OPT_REPEAT, "repeat", "R", "repetitions of each timing; the fastest counts (default 1)"},
    {OPT_PRINT, "print", "WHAT", "table (default: the header and one line per stage) or floor "
     "(one line \"floor<TAB>SECONDS\", the sum of the floors of the stages, as make bench-e2e "
     "reads it)"},
    QK_OPTION_QUIET,
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-bench-stages", "qk-bench-stages [OPTIONS] STORE",
    "Runs the per-head stages qk-pca, qk-rotate and qk-complement on STORE with\n"
    "their default parameters (those of the workflow) and takes the CPU time\n"
    "(user + sys) of each, then times each stage's floor alone in this process\n"
    "on one thread: reading the store's vectors once as doubles, the BLAS and\n"
    "LAPACK calls the stage cannot avoid, and for the complement one atan2 per\n"
    "row and pair with the fastest SLEEF vector variant of this CPU\n"
    "(docs/performance.md). Prints a header and one TSV line per stage:\n"
    "stage, heads, seconds, floor_seconds, ratio.\n",
    options_table, "or a failed stage", "qk-bench-stages --threads 1 build/qwen3-8b/store.qks",
    NULL};

typedef struct options {
    const char *store;
    int stage_on[N_STAGES];
    int floor_only;
    int threads;
    char *bindir;
    const char *tmpdir;
    int repeat;
    int print_floor; /* --print floor */
} options;

static void parse_stages(const char *list, options *o)
{
    memset(o->stage_on, 0, sizeof o->stage_on);
    char *copy = qk_strdup(list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int i = 0; i < N_STAGES; i++)
            if (strcmp(tok, stage_name[i]) == 0)
                o->stage_on[i] = found = 1;
        if (!found)
            qk_die(QK_EXIT_USAGE, NULL, "--stages: unknown stage '%s' (pca, rotate, "
                   "complement, read)", tok);
    }
    free(copy);
}

/* The directory of this program, where make puts the others. */
static char *own_dir(void)
{
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return qk_strdup(".");
    buf[n] = '\0';
    return qk_path_dir(buf);
}

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < N_STAGES; i++)
        o->stage_on[i] = stage_prog[i] != NULL;
    o->repeat = 1;
    o->tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    const char *bindir = NULL, *value;
    qk_args a;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case OPT_STAGES: parse_stages(value, o); break;
        case OPT_FLOOR_ONLY: o->floor_only = 1; break;
        case OPT_BINDIR: bindir = value; break;
        case OPT_TMPDIR: o->tmpdir = value; break;
        case OPT_REPEAT: o->repeat = (int)qk_opt_int("--repeat", value, 1, 100); break;
        case OPT_PRINT: o->print_floor = qk_opt_choice("--print", value, "table", "floor"); break;
        }
    }
    qk_args_operands(&a, 1, 1);
    o->threads = a.threads;
    o->store = a.operands[0];
    o->bindir = bindir ? qk_strdup(bindir) : own_dir();
}

/* ---- the stage programs ------------------------------------------------------------- */

/* Runs argv[0] (a path) and returns its CPU time, user + sys, in seconds;
 * exits 2 if it fails. */
static double run_program(char *const argv[])
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        qk_die(QK_EXIT_DATA, NULL, "fork: %s", strerror(errno));
    if (pid == 0) {
        execv(argv[0], argv);
        fprintf(stderr, "%s: error: %s: %s\n", qk_progname(), argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR)
            qk_die(QK_EXIT_DATA, NULL, "wait: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        qk_die(QK_EXIT_DATA, argv[0], "failed (status %d)", status);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* The outputs of one run of the stages, in a temporary directory. */
typedef struct stage_files {
    char *dir;
    char *path[9];
} stage_files;

enum { F_PCA, F_PCA_HEADS, F_ROTATION, F_AXES, F_PAIRS, F_CHEADS, F_ROTATED, F_COUNT };
static const char *const file_name[F_COUNT] = {
    "pca.tsv", "pca_heads.tsv", "rotation.tsv", "rotation_axes.bin",
    "complement_pairs.tsv", "complement_heads.tsv", "rotated.tsv"};

static void files_open(const options *o, stage_files *f)
{
    char *tmpl = qk_path_join(o->tmpdir, "qk-bench-stages.XXXXXX");
    if (!mkdtemp(tmpl))
        qk_die(QK_EXIT_DATA, tmpl, "cannot create the directory: %s", strerror(errno));
    f->dir = tmpl;
    for (int i = 0; i < F_COUNT; i++)
        f->path[i] = qk_path_join(f->dir, file_name[i]);
}

static void files_close(stage_files *f)
{
    for (int i = 0; i < F_COUNT; i++) {
        unlink(f->path[i]);
        free(f->path[i]);
    }
    rmdir(f->dir);
    free(f->dir);
}

/* CPU seconds of one run of the stage program. */
static double time_stage(const options *o, int stage, const stage_files *f)
{
    char *prog = qk_path_join(o->bindir, stage_prog[stage]);
    char threads[16];
    snprintf(threads, sizeof threads, "%d", o->threads);
    char *store = (char *)o->store;
    char *const *p = f->path;
    double secs;
    if (stage == STAGE_PCA) {
        char *argv[] = {prog, "--quiet", "--threads", threads, "--output", p[F_PCA],
                        "--heads-output", p[F_PCA_HEADS], store, NULL};
        secs = run_program(argv);
    } else if (stage == STAGE_ROTATE) {
        char *argv[] = {prog, "--quiet", "--threads", threads, "--output", p[F_ROTATION],
                        "--axes-output", p[F_AXES], store, NULL};
        secs = run_program(argv);
    } else {
        char *argv[] = {prog, "--quiet", "--threads", threads, "--axes", p[F_AXES],
                        "--rotation", p[F_ROTATION], "--pairs-output", p[F_PAIRS],
                        "--heads-output", p[F_CHEADS], "--rotated-output", p[F_ROTATED],
                        store, NULL};
        secs = run_program(argv);
    }
    free(prog);
    return secs;
}

/* ---- the floors ------------------------------------------------------------------ */

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef void (*atan2_fn)(const double *y, const double *x, size_t n, double *out);

static void atan2_libm(const double *y, const double *x, size_t n, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = atan2(y[i], x[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static void atan2_avx512(const double *y, const double *x,
                                                            size_t n, double *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm512_storeu_pd(out + i, Sleef_atan2d8_u35avx512f(_mm512_loadu_pd(y + i),
                                                           _mm512_loadu_pd(x + i)));
    atan2_libm(y + i, x + i, n - i, out + i);
}

__attribute__((target("avx2,fma"))) static void atan2_avx2(const double *y, const double *x,
                                                           size_t n, double *out)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(out + i, Sleef_atan2d4_u35avx2(_mm256_loadu_pd(y + i),
                                                        _mm256_loadu_pd(x + i)));
    atan2_libm(y + i, x + i, n - i, out + i);
}

static void atan2_sse2(const double *y, const double *x, size_t n, double *out)
{
    size_t i = 0;
    for (; i + 2 <= n; i += 2)
        _mm_storeu_pd(out + i, Sleef_atan2d2_u35sse2(_mm_loadu_pd(y + i), _mm_loadu_pd(x + i)));
    atan2_libm(y + i, x + i, n - i, out + i);
}
#endif

/* The widest SLEEF atan2 (3.5 ulp) of the instruction set the kernels run
 * (qk_isa: the best the CPU has, or lower with QK_ISA), so that a run
 * with QK_ISA=avx2 times the floor an AVX2 machine has. */
static atan2_fn best_atan2(const char **name)
{
#if defined(__x86_64__) && defined(__GNUC__)
    int isa = qk_isa();
    if (isa == QK_ISA_AVX512) {
        *name = "Sleef_atan2d8_u35avx512f";
        return atan2_avx512;
    }
    if (isa == QK_ISA_AVX2) {
        *name = "Sleef_atan2d4_u35avx2";
        return atan2_avx2;
    }
    *name = "Sleef_atan2d2_u35sse2";
    return atan2_sse2;
#else
    *name = "libm atan2";
    return atan2_libm;
#endif
}

/* Rows per block: the block's doubles stay in the cache between the
 * conversion and the BLAS call (whole configs at once are slower: BLAS
 * then packs them from memory). */
#define FLOOR_BLOCK 256

/* Buffers of the floor passes. */
typedef struct floor_work {
    int dim;
    double *block;     /* [FLOOR_BLOCK * dim] rows as doubles */
    double *tblock;    /* [FLOOR_BLOCK] their positions */
    double *scatter;   /* [dim*dim] */
    double *moment;    /* [dim] */
    double *matrix;    /* [dim*dim] a symmetric matrix for the eigensolver */
    double *vectors;   /* [dim*dim] eigenvectors */
    double *values;    /* [dim] */
    double *dirs;      /* [dim*dim] projection directions, one a row */
    double *proj;      /* projections of a block */
    double *theta;     /* [FLOOR_BLOCK] */
    atan2_fn atan2_vec;
} floor_work;

static void work_init(floor_work *w, int dim)
{
    size_t d = (size_t)dim, dd = d * d;
    w->dim = dim;
    w->block = qk_doubles(FLOOR_BLOCK * d);
    w->tblock = qk_doubles(FLOOR_BLOCK);
    w->scatter = qk_doubles(dd);
    w->moment = qk_doubles(d);
    w->matrix = qk_doubles(dd);
    w->vectors = qk_doubles(dd);
    w->values = qk_doubles(d);
    w->dirs = qk_doubles(dd);
    w->proj = qk_doubles(FLOOR_BLOCK * (d > 2 * QK_ROT_MAX_PAIRS ? d : 2 * QK_ROT_MAX_PAIRS));
    w->theta = qk_doubles(FLOOR_BLOCK);
}

static void work_free(floor_work *w)
{
    free(w->block);
    free(w->tblock);
    free(w->scatter);
    free(w->moment);
    free(w->matrix);
    free(w->vectors);
    free(w->values);
    free(w->dirs);
    free(w->proj);
    free(w->theta);
}

/* Reads rows [start, start + nb) of a config as doubles into w->block, and
 * their positions into w->tblock. */
static void read_block(floor_work *w, const qk_store_config *c, const float *vec, int64_t start,
                       int nb)
{
    const float *x = vec + (size_t)start * w->dim;
    for (size_t i = 0; i < (size_t)nb * w->dim; i++)
        w->block[i] = x[i];
    for (int i = 0; i < nb; i++)
        w->tblock[i] = c->position[start + i];
}

static int block_rows(const qk_store_config *c, int64_t start)
{
    return (int)(c->rows - start < FLOOR_BLOCK ? c->rows - start : FLOOR_BLOCK);
}

/* The moments' unavoidable products of one config, X^T X (dsyrk) and
 * X^T t (dgemv), summed over the blocks. */
static void floor_moments(floor_work *w, const qk_store_config *c, const float *vec)
{
    int d = w->dim;
    for (int64_t start = 0; start < c->rows; start += FLOOR_BLOCK) {
        int nb = block_rows(c, start);
        double beta = start ? 1.0 : 0.0;
        read_block(w, c, vec, start, nb);
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, nb, 1.0, w->block, d, beta,
                    w->scatter, d);
        cblas_dgemv(CblasRowMajor, CblasTrans, nb, d, 1.0, w->block, d, w->tblock, 1, beta,
                    w->moment, 1);
    }
}

/* The top n_keep eigenpairs (n_keep = dim: all) of the scatter matrix of
 * the last config plus the identity: a covariance-like matrix, so that the
 * solver meets the kind of spectrum it meets in the stage. The leading
 * eigenvectors become the projection directions. */
static void floor_eigen(floor_work *w, int dim, int n_keep)
{
    for (int i = 0; i < dim; i++)
        for (int j = 0; j < dim; j++)
            w->matrix[(size_t)i * dim + j] =
                w->scatter[(size_t)(i < j ? i : j) * w->dim + (i < j ? j : i)] + (i == j);
    lapack_int found;
    lapack_int *isuppz = qk_malloc(2 * (size_t)dim * sizeof(lapack_int));
    lapack_int info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', n_keep == dim ? 'A' : 'I', 'L', dim,
                                     w->matrix, dim, 0.0, 0.0, dim - n_keep + 1, dim,
                                     LAPACKE_dlamch('S'), &found, w->values, w->vectors, dim,
                                     isuppz);
    free(isuppz);
    if (info != 0)
        qk_die(QK_EXIT_DATA, NULL, "floor: dsyevr failed (info %d)", (int)info);
    memcpy(w->dirs, w->vectors, (size_t)dim * n_keep * sizeof(double));
}

/* The projections of a config's rows on n_dir directions (rows of
 * w->dirs), a block at a time: one dgemv per direction when there are at
 * most two (dgemm would pack the block for nothing), else one dgemm giving
 * each direction's coordinates contiguous; then, with pairs > 0, one atan2
 * per row and pair on them. */
static void floor_project(floor_work *w, const qk_store_config *c, const float *vec, int n_dir,
                          int pairs)
{
    int d = w->dim;
    for (int64_t start = 0; start < c->rows; start += FLOOR_BLOCK) {
        int nb = block_rows(c, start);
        read_block(w, c, vec, start, nb);
        if (n_dir <= 2)
            for (int j = 0; j < n_dir; j++)
                cblas_dgemv(CblasRowMajor, CblasNoTrans, nb, d, 1.0, w->block, d,
                            w->dirs + (size_t)j * d, 1, 0.0, w->proj + (size_t)j * nb, 1);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_dir, nb, d, 1.0, w->dirs, d,
                        w->block, d, 0.0, w->proj, nb);
        for (int p = 0; p < pairs; p++)
            w->atan2_vec(w->proj + (size_t)(2 * p + 1) * nb, w->proj + (size_t)(2 * p) * nb,
                         (size_t)nb, w->theta);
    }
}

static int stage_usable(int stage, int64_t n_q, int64_t n_k)
{
    return stage == STAGE_READ  ? 1
           : stage == STAGE_PCA ? qk_pca_head_usable(n_q, n_k)
                                : qk_rot_head_usable(n_q, n_k);
}

/* Every row of a config read as doubles, a block at a time: the part of
 * every floor that reads. */
static void floor_read(floor_work *w, const qk_store_config *c, const float *vec)
{
    for (int64_t start = 0; start < c->rows; start += FLOOR_BLOCK)
        read_block(w, c, vec, start, block_rows(c, start));
}

/* The floor work of one head, once the key config's moments are done. */
static void floor_head(int stage, floor_work *w, const qk_store_config *cq, const float *vq,
                       const qk_store_config *ck, const float *vk)
{
    int d = w->dim;
    if (stage == STAGE_READ) {
        floor_read(w, cq, vq);
        return;
    }
    if (stage == STAGE_PCA || stage == STAGE_ROTATE) {
        floor_moments(w, cq, vq);
        int n_dir = stage == STAGE_PCA ? (d < 2 ? d : 2) : 1;
        floor_eigen(w, d, stage == STAGE_PCA ? (d < QK_PCA_N_PC ? d : QK_PCA_N_PC) : 1);
        floor_project(w, cq, vq, n_dir, 0);
        floor_project(w, ck, vk, n_dir, 0);
        return;
    }
    int pairs = d >= 4 ? (d - 2) / 2 : 0;
    pairs = pairs < QK_ROT_MAX_PAIRS ? pairs : QK_ROT_MAX_PAIRS;
    if (d > 2)
        floor_eigen(w, d - 2, d - 2);
    if (pairs == 0)
        return;
    /* the eigenvectors have d - 2 entries; as directions in d dimensions
     * any unit vectors do: pad them */
    for (int j = 2 * pairs - 1; j >= 0; j--) {
        memmove(w->dirs + (size_t)j * d, w->vectors + (size_t)j * (d - 2),
                (size_t)(d - 2) * sizeof(double));
        w->dirs[(size_t)j * d + d - 2] = w->dirs[(size_t)j * d + d - 1] = 0.0;
    }
    floor_project(w, cq, vq, 2 * pairs, pairs);
    floor_project(w, ck, vk, 2 * pairs, pairs);
}

/* The floor of one stage over every head it analyses, in CPU seconds (the
 * store opened without the checksum pass, mapped afresh so that the page
 * faults count once, as in the stage); *heads gets their number. */
static double time_floor(const options *o, int stage, atan2_fn atan2_vec, int *heads)
{
    double start = cpu_now();
    qk_store s;
    qk_open_store(o->store, &s, 0);
    qk_head_job *jobs;
    int n_jobs;
    qk_err err;
    if (qk_head_jobs(&s, &jobs, &n_jobs, &err) != 0)
        qk_die(QK_EXIT_DATA, o->store, "%s", err.msg);
    floor_work w;
    work_init(&w, s.dim);
    w.atan2_vec = atan2_vec;
    *heads = 0;
    /* every key config once, then its query heads (the stages group so);
     * reading includes decoding the store's vectors, as in the stages */
    qk_store_buf bq = {0}, bk = {0};
    int *done = qk_calloc((size_t)(n_jobs ? n_jobs : 1), sizeof(int));
    for (int g = 0; g < n_jobs; g++) {
        if (done[g])
            continue;
        const qk_store_config *ck = &s.configs[jobs[g].k_config];
        const float *vk = qk_store_vectors(&s, jobs[g].k_config, &bk, &err);
        if (!vk)
            qk_die(QK_EXIT_DATA, o->store, "%s", err.msg);
        int key_read = 0;
        for (int j = g; j < n_jobs; j++) {
            if (done[j] || jobs[j].k_config != jobs[g].k_config)
                continue;
            done[j] = 1;
            const qk_store_config *cq = &s.configs[jobs[j].q_config];
            if (!stage_usable(stage, cq->rows, ck->rows))
                continue;
            const float *vq = qk_store_vectors(&s, jobs[j].q_config, &bq, &err);
            if (!vq)
                qk_die(QK_EXIT_DATA, o->store, "%s", err.msg);
            if (!key_read && stage == STAGE_READ)
                floor_read(&w, ck, vk);
            else if (!key_read && stage != STAGE_COMPLEMENT)
                floor_moments(&w, ck, vk);
            key_read = 1;
            floor_head(stage, &w, cq, vq, ck, vk);
            ++*heads;
        }
    }
    free(done);
    qk_store_buf_free(&bq);
    qk_store_buf_free(&bk);
    work_free(&w);
    free(jobs);
    qk_store_close(&s);
    return cpu_now() - start;
}

/* ---- main ------------------------------------------------------------------------ */

static double fastest(double a, double b)
{
    return isnan(a) || b < a ? b : a;
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-bench-stages");
    options o;
    parse_args(argc, argv, &o);
    openblas_set_num_threads(1);
    const char *atan2_name;
    atan2_fn atan2_vec = best_atan2(&atan2_name);
    qk_progress("%s, floor atan2 %s, %d repetition(s)", o.store, atan2_name, o.repeat);

    double secs[N_STAGES], floor[N_STAGES];
    int heads[N_STAGES] = {0};
    for (int i = 0; i < N_STAGES; i++)
        secs[i] = floor[i] = NAN;
    stage_files files;
    files_open(&o, &files);
    /* the complement alone still needs the rotation's axes */
    if (o.stage_on[STAGE_COMPLEMENT] && !o.stage_on[STAGE_ROTATE] && !o.floor_only)
        (void)time_stage(&o, STAGE_ROTATE, &files);
    /* stages and floors take turns, so that a change of the machine's load
     * during the run weighs on both */
    for (int r = 0; r < o.repeat; r++) {
        for (int i = 0; i < N_STAGES; i++)
            if (o.stage_on[i] && !o.floor_only && stage_prog[i])
                secs[i] = fastest(secs[i], time_stage(&o, i, &files));
        for (int i = 0; i < N_STAGES; i++)
            if (o.stage_on[i])
                floor[i] = fastest(floor[i], time_floor(&o, i, atan2_vec, &heads[i]));
    }
    files_close(&files);

    if (o.print_floor) {
        double sum = 0.0;
        for (int i = 0; i < N_STAGES; i++)
            if (o.stage_on[i])
                sum += floor[i];
        printf("floor\t%.4f\n", sum);
        free(o.bindir);
        return QK_EXIT_OK;
    }
    printf("stage\theads\tseconds\tfloor_seconds\tratio\n");
    for (int i = 0; i < N_STAGES; i++)
        if (o.stage_on[i])
            printf("%s\t%d\t%.3f\t%.3f\t%.2f\n", stage_name[i], heads[i], secs[i], floor[i],
                   secs[i] / floor[i]);
    free(o.bindir);
    return QK_EXIT_OK;
}
