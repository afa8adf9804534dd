/* qk-heads: every analysed query head in one table and one page.
 *
 * Table mode joins, per study, the per-head tables of the three analyses
 * (results/<study>/qk_heads.csv of the PCA, rotated.csv of the rotation
 * model, head_metrics.csv of attention plasticity) into results/heads.csv,
 * one row a query head, every value copied as its study table prints it.
 * Page mode renders report/heads.html from that table, the heads'
 * plasticity profiles and the column meanings (workflow/columns.tsv): the
 * page sorts and filters in the browser, with its data inline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/study.h"
#include "qk/table.h"
#include "qk/values.h"

enum { OPT_PAGE = QK_KEY_FIRST, OPT_TEMPLATE, OPT_COLUMNS, OPT_PROFILE };

static const qk_option options_table[] = {
    {'r', "registry", "FILE", "the run's dataset registry (id, study, label columns)"},
    {OPT_PAGE, "page", "HEADS_CSV", "page mode: render the page of the heads of HEADS_CSV "
                                    "(a table this program wrote) to --output"},
    {OPT_TEMPLATE, "template", "FILE", "page mode: the page's template (templates/heads.html.in)"},
    {OPT_COLUMNS, "columns", "FILE", "page mode: the column meanings (workflow/columns.tsv)"},
    {OPT_PROFILE, "profile", "STUDY=FILE", "page mode: a study's head_bucket_plasticity.csv "
                                           "(repeatable)"},
    QK_OPTION_OUTPUT("table or page to write (written atomically)"),
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-heads",
    "qk-heads -r REGISTRY -o heads.csv QK_HEADS ROTATED HEAD_METRICS [...]\n"
    "qk-heads --page heads.csv --template FILE --columns FILE [--profile STUDY=FILE ...] -o PAGE",
    "Table mode: joins each study's per-head tables, given as triples (qk_heads.csv,\n"
    "rotated.csv, head_metrics.csv of one study), on (model, layer, query head) and\n"
    "writes one CSV row a query head: dataset, study, family, key head, taxonomy\n"
    "class, PC0 r_q and r_k, |r_q^a| and |r_k^a|, bias and separation strength,\n"
    "plane variance fraction, AP overall and AP drop. Values are copied as the study\n"
    "tables print them; |r^a| is r^a without its sign. A head one analysis skipped\n"
    "(the PCA skips a head with too few rows) has that analysis' cells empty.\n"
    "Page mode: renders the page of those heads from the template, with the table,\n"
    "the column meanings and each head's plasticity profile inline.\n",
    options_table,
    "a key head the tables disagree on, a missing column, a cell that is not a number",
    "qk-heads -r build/sets/registry.tsv -o heads.csv results/extra/qk_heads.csv \\\n"
    "  results/extra/rotated.csv results/extra/head_metrics.csv", NULL};

#define MAX_PROFILES 64

typedef struct options {
    const char *registry, *page, *template, *columns, *output;
    const char *profile_study[MAX_PROFILES], *profile_path[MAX_PROFILES];
    int n_profiles;
    char **triples;
    int n_triples;
} options;

static void add_profile(options *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1] || o->n_profiles == MAX_PROFILES)
        qk_die(QK_EXIT_USAGE, NULL, "--profile: expected STUDY=FILE (at most %d), got '%s'",
               MAX_PROFILES, arg);
    char *study = qk_strdup(arg);
    study[eq - arg] = 0;
    o->profile_study[o->n_profiles] = study;
    o->profile_path[o->n_profiles++] = eq + 1;
}

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case 'r': o->registry = value; break;
        case OPT_PAGE: o->page = value; break;
        case OPT_TEMPLATE: o->template = value; break;
        case OPT_COLUMNS: o->columns = value; break;
        case OPT_PROFILE: add_profile(o, value); break;
        }
    }
    o->output = a.output;
    if (!o->output || (o->page ? !o->template || !o->columns : !o->registry))
        qk_usage_error(&program);
    if (o->page) {
        qk_args_operands(&a, 0, 0);
        return;
    }
    if (a.n_operands % 3 != 0)
        qk_die(QK_EXIT_USAGE, NULL, "expected the tables in triples (qk_heads.csv rotated.csv "
                                    "head_metrics.csv), got %d", a.n_operands);
    qk_args_operands(&a, 3, -1);
    o->triples = a.operands;
    o->n_triples = a.n_operands / 3;
}

/* ---- table mode ------------------------------------------------------------------ */

/* The analyses' tables of one study, and where their heads are. */
enum { T_PCA, T_ROT, T_PLAST, N_TABLES };

typedef struct study_tables {
    qk_table_file file[N_TABLES];
    int model[N_TABLES], layer[N_TABLES], head[N_TABLES], k_head[N_TABLES];
} study_tables;

/* The names of the head columns in each table (they differ). */
static const char *const head_column[N_TABLES] = {"head", "head", "q_head"};
static const char *const k_head_column[N_TABLES] = {"k_head", "kv_head", "k_head"};

/* An output column, the table it comes from and its column there; abs:
 * written without its sign (|r|, digits as printed). */
typedef struct field {
    const char *name;
    int table;
    const char *column;
    int abs;
} field;

static const field fields[] = {
    {"category", T_PCA, "category", 0},
    {"r_q0", T_PCA, "r_q0", 0},
    {"r_k0", T_PCA, "r_k0", 0},
    {"abs_r_q_a", T_ROT, "r_q_a", 1},
    {"abs_r_k_a", T_ROT, "r_k_a", 1},
    {"bias_strength", T_ROT, "bias_strength", 0},
    {"separation_strength", T_ROT, "separation_strength", 0},
    {"plane_var_fraction", T_ROT, "plane_var_fraction", 0},
    {"ap_overall", T_PLAST, "ap_overall", 0},
    {"ap_drop", T_PLAST, "ap_drop", 0},
};
#define N_FIELDS (int)(sizeof fields / sizeof fields[0])

static void load_study(study_tables *s, char *const *paths)
{
    for (int t = 0; t < N_TABLES; t++) {
        qk_table_file_load(&s->file[t], paths[t]);
        const qk_src *src = &s->file[t].src;
        s->model[t] = qk_src_col(src, "model");
        s->layer[t] = qk_src_col(src, "layer");
        s->head[t] = qk_src_col(src, head_column[t]);
        s->k_head[t] = qk_src_col(src, k_head_column[t]);
    }
}

static int same_head(const study_tables *s, int t, int row, const char *model, int layer,
                     int head)
{
    const qk_src *src = &s->file[t].src;
    return qk_src_int(src, row, s->layer[t]) == layer &&
           qk_src_int(src, row, s->head[t]) == head &&
           strcmp(qk_table_cell(src->t, row, s->model[t]), model) == 0;
}

/* The row of table t holding the head, or -1: row hint when it does (the
 * tables list heads in one order), else the first that does. */
static int find_head(const study_tables *s, int t, int hint, const char *model, int layer,
                     int head)
{
    const qk_src *src = &s->file[t].src;
    if (hint < src->t->n_rows && same_head(s, t, hint, model, layer, head))
        return hint;
    for (int r = 0; r < src->t->n_rows; r++)
        if (same_head(s, t, r, model, layer, head))
            return r;
    return -1;
}

/* A numeric cell as printed (dies unless a number), without its sign when
 * abs is set. */
static const char *value_cell(const qk_src *src, int row, int col, int abs)
{
    qk_src_num(src, row, col);
    const char *cell = qk_table_cell(src->t, row, col);
    return abs && cell[0] == '-' ? cell + 1 : cell;
}

static void write_header(FILE *fp)
{
    fputs("head_id,dataset,model,label,study,family,layer,head,k_head", fp);
    for (int f = 0; f < N_FIELDS; f++)
        fprintf(fp, ",%s", fields[f].name);
    fputc('\n', fp);
}

/* A head as row r of table t0 names it: its row in each table, -1 where
 * that analysis has no row for it (the PCA skips a head with too few
 * rows); the key head must agree wherever the head has a row. */
typedef struct head_rows {
    const char *model;
    int layer, head, k_head, row[N_TABLES];
} head_rows;

static head_rows locate_head(const study_tables *s, int t0, int r)
{
    const qk_src *src = &s->file[t0].src;
    head_rows h = {qk_table_cell(src->t, r, s->model[t0]), qk_src_int(src, r, s->layer[t0]),
                   qk_src_int(src, r, s->head[t0]), qk_src_int(src, r, s->k_head[t0]), {0}};
    for (int t = 0; t < N_TABLES; t++) {
        h.row[t] = t == t0 ? r : find_head(s, t, r, h.model, h.layer, h.head);
        if (h.row[t] >= 0 && qk_src_int(&s->file[t].src, h.row[t], s->k_head[t]) != h.k_head)
            qk_die(QK_EXIT_DATA, s->file[t].src.path, "head %s l%02dh%02d: key head %d, %s says %d",
                   h.model, h.layer, h.head, qk_src_int(&s->file[t].src, h.row[t], s->k_head[t]),
                   src->path, h.k_head);
    }
    return h;
}

/* The row of one head; an analysis without a row for it leaves its cells
 * empty. */
static void write_head(FILE *fp, const study_tables *s, const head_rows *h, const qk_src *reg)
{
    int reg_row = qk_registry_row(reg, h->model);
    const char *dataset =
        reg_row >= 0 ? qk_table_cell(reg->t, reg_row, qk_src_col(reg, "id")) : h->model;
    const qk_src *rot = &s->file[T_ROT].src;
    fprintf(fp, "%s/l%02dh%02d,", dataset, h->layer, h->head);
    qk_csv_put(fp, dataset);
    fputc(',', fp);
    qk_csv_put(fp, h->model);
    fputc(',', fp);
    qk_csv_put(fp, qk_registry_cell(reg, dataset, "label", h->model));
    fputc(',', fp);
    qk_csv_put(fp, qk_registry_cell(reg, dataset, "study", "extra"));
    fputc(',', fp);
    qk_csv_put(fp, h->row[T_ROT] >= 0
                       ? qk_table_cell(rot->t, h->row[T_ROT], qk_src_col(rot, "family"))
                       : qk_registry_cell(reg, dataset, "family", ""));
    fprintf(fp, ",%d,%d,%d", h->layer, h->head, h->k_head);
    for (int f = 0; f < N_FIELDS; f++) {
        const qk_src *src = &s->file[fields[f].table].src;
        int col = qk_src_col(src, fields[f].column), rr = h->row[fields[f].table];
        fputc(',', fp);
        if (rr < 0)
            continue;
        if (strcmp(fields[f].name, "category") == 0)
            qk_csv_put(fp, qk_table_cell(src->t, rr, col));
        else
            fputs(value_cell(src, rr, col, fields[f].abs), fp);
    }
    fputc('\n', fp);
}

/* Every head any of a study's tables holds, once: the PCA's in its order,
 * then those only the later tables hold. */
static void write_study(FILE *fp, const study_tables *s, const qk_src *reg)
{
    for (int t0 = 0; t0 < N_TABLES; t0++)
        for (int r = 0; r < s->file[t0].src.t->n_rows; r++) {
            head_rows h = locate_head(s, t0, r);
            int seen = 0;
            for (int t = 0; t < t0; t++)
                seen |= h.row[t] >= 0;
            if (!seen)
                write_head(fp, s, &h, reg);
        }
}

static void write_table(const options *o)
{
    qk_table_file reg;
    qk_table_file_load(&reg, o->registry);
    qk_text out;
    qk_text_open(&out, o->output);
    write_header(out.fp);
    for (int i = 0; i < o->n_triples; i++) {
        study_tables s;
        load_study(&s, o->triples + 3 * i);
        write_study(out.fp, &s, &reg.src);
        for (int t = 0; t < N_TABLES; t++)
            qk_table_file_free(&s.file[t]);
    }
    qk_text_close(&out);
    qk_table_file_free(&reg);
}

/* ---- page mode ------------------------------------------------------------------- */

/* A JSON string; "<" is escaped so that no "</script>" can close the block. */
static void json_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < 0x20 || c == '<' || c == '>' || c == '&')
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

/* The columns of heads.csv with their type, unit and meaning from the
 * column table (rows of table "heads.csv"); a column it lacks is an error,
 * so the page never shows a number without its meaning. */
static void write_columns(FILE *fp, const qk_src *heads, const qk_src *cols)
{
    int c_table = qk_src_col(cols, "table"), c_name = qk_src_col(cols, "column");
    static const char *const parts[] = {"type", "unit", "meaning"};
    fputs("\"columns\":[", fp);
    for (int c = 0; c < heads->t->n_cols; c++) {
        const char *name = heads->t->header[c];
        int row = -1;
        for (int r = 0; r < cols->t->n_rows && row < 0; r++)
            if (strcmp(qk_table_cell(cols->t, r, c_table), "heads.csv") == 0 &&
                strcmp(qk_table_cell(cols->t, r, c_name), name) == 0)
                row = r;
        if (row < 0)
            qk_die(QK_EXIT_DATA, cols->path, "no row for column '%s' of heads.csv", name);
        fputs(c ? ",{\"name\":" : "{\"name\":", fp);
        json_string(fp, name);
        for (int p = 0; p < 3; p++) {
            fprintf(fp, ",\"%s\":", parts[p]);
            json_string(fp, qk_table_cell(cols->t, row, qk_src_col(cols, parts[p])));
        }
        fputc('}', fp);
    }
    fputs("],\n", fp);
}

static void write_rows(FILE *fp, const qk_src *heads)
{
    fputs("\"rows\":[\n", fp);
    for (int r = 0; r < heads->t->n_rows; r++) {
        fputs(r ? ",[" : "[", fp);
        for (int c = 0; c < heads->t->n_cols; c++) {
            if (c)
                fputc(',', fp);
            json_string(fp, qk_table_cell(heads->t, r, c));
        }
        fputs("]\n", fp);
    }
    fputs("]", fp);
}

/* The profile of each head, one line a head in the table's order, for the
 * page to draw (so rounded, and short: a page of thousands of heads holds
 * them all): per bin of head_bucket_plasticity "POSITION AP" separated by
 * ";", the position (the bin's mean query position) in whole tokens, as
 * the step from the bin before after the first, and AP in thousandths,
 * "n" where it has no value. A head without bins has an empty line. */
typedef struct profile_line {
    char *buf;
    size_t len;
    FILE *fp;
    long last_position;
} profile_line;

static void add_bin(profile_line *l, double position, double ap)
{
    long at = lround(position);
    if (!l->fp && !(l->fp = open_memstream(&l->buf, &l->len)))
        qk_die(QK_EXIT_DATA, NULL, "out of memory");
    int first = ftell(l->fp) == 0;
    fprintf(l->fp, "%s%ld ", first ? "" : ";", first ? at : at - l->last_position);
    if (isnan(ap))
        fputc('n', l->fp);
    else
        fprintf(l->fp, "%ld", lround(ap * 1000.0));
    l->last_position = at;
}

static void add_profile_rows(profile_line *lines, const qk_src *heads, const char *study,
                             const qk_src *prof)
{
    int h_study = qk_src_col(heads, "study"), h_model = qk_src_col(heads, "model");
    int h_layer = qk_src_col(heads, "layer"), h_head = qk_src_col(heads, "head");
    int p_model = qk_src_col(prof, "model"), p_layer = qk_src_col(prof, "layer");
    int p_head = qk_src_col(prof, "q_head"), p_pos = qk_src_col(prof, "bin_position");
    int p_ap = qk_src_col(prof, "ap");
    int at = 0; /* the head of the last row: the next row's is usually it or the next */
    for (int r = 0; r < prof->t->n_rows; r++) {
        const char *model = qk_table_cell(prof->t, r, p_model);
        int layer = qk_src_int(prof, r, p_layer), head = qk_src_int(prof, r, p_head);
        int found = -1;
        for (int k = 0; k < heads->t->n_rows && found < 0; k++) {
            int h = (at + k) % heads->t->n_rows;
            if (qk_src_int(heads, h, h_layer) == layer && qk_src_int(heads, h, h_head) == head &&
                strcmp(qk_table_cell(heads->t, h, h_model), model) == 0 &&
                strcmp(qk_table_cell(heads->t, h, h_study), study) == 0)
                found = h;
        }
        if (found < 0)
            continue; /* a head of another run's table: not on the page */
        at = found;
        add_bin(&lines[found], qk_src_num(prof, r, p_pos), qk_src_num(prof, r, p_ap));
    }
}

static void write_profiles(FILE *fp, const options *o, const qk_src *heads)
{
    int n = heads->t->n_rows;
    profile_line *lines = qk_calloc((size_t)(n ? n : 1), sizeof *lines);
    for (int i = 0; i < o->n_profiles; i++) {
        qk_table_file prof;
        qk_table_file_load(&prof, o->profile_path[i]);
        add_profile_rows(lines, heads, o->profile_study[i], &prof.src);
        qk_table_file_free(&prof);
    }
    for (int r = 0; r < n; r++) {
        if (lines[r].fp) {
            fclose(lines[r].fp);
            fwrite(lines[r].buf, 1, lines[r].len, fp);
            free(lines[r].buf);
        }
        fputc('\n', fp);
    }
    free(lines);
}

/* The template with its one marker {{heads.data}} replaced by the data
 * blocks. */
static void write_page(const options *o)
{
    uint8_t *tpl;
    size_t tpl_len;
    qk_err err;
    if (qk_read_file(o->template, &tpl, &tpl_len, &err) != 0)
        qk_die(QK_EXIT_DATA, o->template, "%s", err.msg);
    static const char marker[] = "{{heads.data}}";
    char *at = strstr((char *)tpl, marker);
    if (!at)
        qk_die(QK_EXIT_DATA, o->template, "no %s marker", marker);
    qk_table_file heads, cols;
    qk_table_file_load(&heads, o->page);
    qk_table_file_load(&cols, o->columns);
    qk_text out;
    qk_text_open(&out, o->output);
    fwrite(tpl, 1, (size_t)(at - (char *)tpl), out.fp);
    fputs("<script type=\"application/json\" id=\"heads-data\">{", out.fp);
    write_columns(out.fp, &heads.src, &cols.src);
    write_rows(out.fp, &heads.src);
    fputs("}</script>\n<script type=\"text/plain\" id=\"heads-profiles\">\n", out.fp);
    write_profiles(out.fp, o, &heads.src);
    fputs("</script>", out.fp);
    fputs(at + strlen(marker), out.fp);
    qk_text_close(&out);
    qk_table_file_free(&heads);
    qk_table_file_free(&cols);
    free(tpl);
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-heads");
    options o;
    parse_args(argc, argv, &o);
    if (o.page)
        write_page(&o);
    else
        write_table(&o);
    return QK_EXIT_OK;
}
