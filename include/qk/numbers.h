/* The numbers of the report: every value a report section quotes, with its
 * key, its kind (how it is typeset) and its meaning, and the tables made of
 * such values. qk-summary writes them as raw numbers; qk-report reads them
 * and typesets each one once, for the HTML page, the Markdown key list and
 * LaTeX (numbers.tex and the table fragments), so the three cannot differ.
 * The conventions are in docs/report-numbers.md.
 *
 * The file ("numbers file") is tab-separated, one record a line:
 *   #qk-numbers 1                                  (first line)
 *   value   KEY    FORMAT  RAW  MEANING             a value (RAW empty: missing)
 *   table   NAME   PREFIX  CAPTION                  a table of records
 *   column  NAME   FIELD   HEADER                   a column (HEADER in light HTML)
 *   row     NAME   ID                               a row: the values PREFIX.ID.FIELD
 *   source  KEY    TABLE COLUMNS ROWS AGGREGATION STAGES
 *                                                  where the value KEY comes from
 * Numbers are written with 17 significant digits, so they read back
 * exactly. */
#ifndef QK_NUMBERS_H
#define QK_NUMBERS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "qk/common.h"

#define QK_NUMBERS_MAGIC "#qk-numbers 1"

/* ---- kinds ------------------------------------------------------------------------ */

/* How a value is typeset, written KIND or KIND.DIGITS in a format:
 *   count        an integer, with thousands separators (3,239)
 *   number.N     N decimals            fraction.N  a share of 1, N decimals
 *   ratio.N      "times", N decimals   percent.N   a value in percent, N decimals
 *   signed.N     N decimals with an explicit + (correlations)
 *   change.N     a change in percent, N decimals, explicit +
 *   sig.N        N significant digits (an exponent below 1e-4 or from 1e6 on)
 *   sci.N        mantissa with N decimals times a power of ten
 *   text         text as is;  flag  1 or 0 (for {{if}}, not typeset)
 * A value of a kind with fixed decimals beyond them (more than 15 digits in
 * all, or not 0 but below 1e-20) is typeset as sci.2. */
typedef enum {
    QK_KIND_TEXT, QK_KIND_FLAG, QK_KIND_COUNT, QK_KIND_NUMBER, QK_KIND_FRACTION,
    QK_KIND_RATIO, QK_KIND_PERCENT, QK_KIND_SIGNED, QK_KIND_CHANGE, QK_KIND_SIG, QK_KIND_SCI
} qk_kind;

typedef struct qk_format {
    qk_kind kind;
    int digits;
} qk_format;

/* Parses "number.3", "count", ...; returns -1 on an unknown kind or a
 * missing or extra digit count. */
int qk_format_parse(const char *spec, qk_format *f);
/* 1 for the kinds that hold numbers. */
int qk_format_is_number(const qk_format *f);

/* ---- writing (qk-summary) ------------------------------------------------------------ */

/* A key or a record field: its name, its format and what it means (with
 * the unit where there is one). Lists end with an entry whose name is NULL. */
typedef struct qk_key {
    const char *name;
    const char *format;
    const char *meaning;
} qk_key;

typedef struct qk_numbers qk_numbers;

/* A numbers file to be written to path on close (NULL: built and dropped). */
qk_numbers *qk_numbers_open(const char *path);

/* Declares scalar keys: each is written on close, missing unless set. */
void qk_numbers_declare(qk_numbers *w, const qk_key *keys);
/* Sets a declared key (a number: NaN and infinities are missing). Setting
 * an undeclared key, a key twice or a key before any qk_numbers_source is a
 * programming error (exit 2). */
void qk_numbers_set(qk_numbers *w, const char *key, double x);
void qk_numbers_set_text(qk_numbers *w, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Where the values set from now on come from (until the next call): the
 * table they are computed from (its path, or a parameter record), its
 * columns, which rows, the aggregation, and the stages and parameter
 * groups that make the table. Each value set afterwards carries it, and
 * numbers.md and the page's hover texts show it. A value set (a key or a
 * record field) needs a source: call this first. */
void qk_numbers_source(qk_numbers *w, const char *table, const char *columns, const char *rows,
                       const char *aggregation, const char *stages);

/* A record: the values PREFIX.ID.FIELD for every field of the list, each
 * missing unless set; about (a model's label, say) completes each meaning.
 * Returns its handle; asking again for the same PREFIX.ID returns it. */
int qk_numbers_record(qk_numbers *w, const char *prefix, const char *id, const qk_key *fields,
                      const char *about);
void qk_numbers_field(qk_numbers *w, int record, const char *field, double x);
void qk_numbers_field_text(qk_numbers *w, int record, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A table of records under prefix: columns name fields, rows name record
 * ids (both checked on close). */
int qk_numbers_table(qk_numbers *w, const char *name, const char *prefix, const char *caption);
void qk_numbers_column(qk_numbers *w, int table, const char *field, const char *header);
void qk_numbers_row(qk_numbers *w, int table, const char *id);

/* Writes the file atomically and frees the writer. */
void qk_numbers_close(qk_numbers *w);

/* ---- reading (qk-report) ----------------------------------------------------------- */

/* Where a value comes from (qk_numbers_source); all NULL when not known. */
typedef struct qk_nsource {
    char *table, *columns, *rows, *aggregation, *stages;
} qk_nsource;

typedef struct qk_nvalue {
    char *key, *raw, *meaning;
    qk_format format;
    int missing;
    double x; /* the number, for the number kinds */
    qk_nsource source;
} qk_nvalue;

typedef struct qk_ntable {
    char *name, *prefix, *caption;
    int n_cols, n_rows;
    char **fields, **headers;
    char **ids;
} qk_ntable;

/* Values and tables of one or more numbers files. */
typedef struct qk_nset {
    int n_values, cap_values;
    qk_nvalue *values;
    int n_tables;
    qk_ntable *tables;
} qk_nset;

/* 1 when the file starts with QK_NUMBERS_MAGIC. */
int qk_numbers_file(const char *path);
/* Adds the records of a numbers file; a key or table defined twice, a
 * table whose cells are not values or a malformed line is an error. */
int qk_nset_load(qk_nset *s, const char *path, qk_err *err);
const qk_nvalue *qk_nset_value(const qk_nset *s, const char *key);
const qk_ntable *qk_nset_table(const qk_nset *s, const char *name);
/* The value of a table cell (NULL if absent). */
const qk_nvalue *qk_nset_cell(const qk_nset *s, const qk_ntable *t, int row, int col);
void qk_nset_free(qk_nset *s);

/* ---- typesetting ---------------------------------------------------------------------- */

typedef enum { QK_AS_PLAIN, QK_AS_HTML, QK_AS_LATEX } qk_typeset;

/* Writes a value as the report shows it: rounded to its digits, a true
 * minus sign, thousands separators, "+" for the signed kinds; a missing
 * value is "n/a" in running text and an em dash in a table cell. */
void qk_number_put(FILE *fp, const qk_nvalue *v, qk_typeset as, int in_table);
/* numbers.tex: the definitions of \qkdef and \qk (an unknown key stops
 * LaTeX with an error naming it), then one line \qkdef{KEY}{VALUE} per
 * value, typeset for LaTeX; flags are left out. */
void qk_nset_write_tex(const qk_nset *s, FILE *fp);
/* The key list in Markdown: key, value (plain text), meaning, and where
 * each value comes from. */
void qk_nset_write_md(const qk_nset *s, FILE *fp);
/* A value's source in one line of plain text: "TABLE: COLUMNS; ROWS;
 * AGGREGATION (STAGES)", or "" when it is not known (malloc'ed). */
char *qk_nsource_text(const qk_nvalue *v);
/* The numbers' entries as an HTML page (report/numbers.html): one row per
 * key with its value, meaning and source, the row's id "n-KEY". */
void qk_nset_write_html(const qk_nset *s, FILE *fp);
/* A table as a booktabs tabular: light-HTML headers as LaTeX, the cells
 * typeset for LaTeX, numbers right-aligned. */
void qk_ntable_write_latex(const qk_nset *s, const qk_ntable *t, FILE *fp);

/* Text for LaTeX: the special characters escaped, a few Unicode signs
 * (minus, arrows, dashes, times) as LaTeX. */
void qk_latex_text(FILE *fp, const char *s);
/* A column header in light HTML (<sub>, <sup>, <i>, <b>, &entity;) as LaTeX. */
void qk_latex_markup(FILE *fp, const char *s);
/* Text for HTML: < > & " escaped. */
void qk_html_text(FILE *fp, const char *s);
/* Text for a Markdown table cell, shown as it is: a backslash before '|'
 * and before each character where Markdown would read it as markup
 * (emphasis, code, a tag, an entity, a link, strikethrough, math); text
 * without markup ("r_q", "r < 0.3") stays as it is. */
void qk_md_cell(FILE *fp, const char *s);
/* A header in light HTML as plain text (tags dropped, entities decoded). */
void qk_plain_markup(FILE *fp, const char *s);

#endif
