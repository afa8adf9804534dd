/* qk-diff: what differs between two runs of the pipeline (docs/diff.md).
 * A side is a folder holding results/, figures/ and report/ (a tree, an
 * extracted archive, the previous published generation), an archive of
 * `make archive`, or a numbers.tex alone. Each comparison writes its
 * findings twice: a few lines for the terminal and a section of the HTML
 * page. Everything is listed in a fixed order, so two runs of qk-diff on
 * the same sides write the same bytes. */
#ifndef QK_DIFF_DIFF_H
#define QK_DIFF_DIFF_H

#include <stdio.h>

#include "qk/common.h"
#include "qk/numbers.h"

/* A table cell differs when the two numbers differ by more than this,
 * times the larger magnitude when that is above 1: the spread that
 * another BLAS kernel gives the tables (README, "The same numbers on every
 * machine": at most 1.7e-9 absolute on the demo data). */
#define DIFF_TOLERANCE 2e-9

/* One "kind<TAB>name<TAB>value" line of a run record (report/run.tsv) or a
 * parameter of an archive's MANIFEST. */
typedef struct diff_item {
    char *kind, *name, *value;
} diff_item;

typedef struct diff_items {
    int n;
    diff_item *items;
} diff_items;

/* A number of numbers.tex: its key, its value as typeset for LaTeX and its
 * raw value (NAN when none or not a number). */
typedef struct diff_number {
    char *key, *shown;
    double raw;
    int has_raw;
} diff_number;

typedef struct diff_side {
    const char *arg;   /* as given */
    char *label;       /* "A (dist/x.tar.gz)" */
    char *root;        /* the folder holding results/ figures/ report/, or NULL */
    char *temp;        /* a folder qk-diff made (an extracted archive), removed at the end */
    char *numbers_tex; /* the side's numbers.tex, or NULL */
    diff_items record; /* run record and MANIFEST lines, sorted by kind and name */
    int n_numbers;
    diff_number *numbers; /* sorted by key */
} diff_side;

/* Where the findings go: the terminal summary and the page. */
typedef struct diff_out {
    FILE *text, *html;
    const char *dir; /* the page's folder (figure images go under it) */
    int differences; /* findings in all */
    int verbose;     /* every finding on the terminal, not the first few */
    int said;        /* findings of the section so far */
    const char *heading; /* printed before the next finding on the terminal, once */
} diff_out;

/* The keys a thesis uses, with where (file:line). */
typedef struct diff_use {
    char *key, *where;
} diff_use;

typedef struct diff_thesis {
    int n;
    diff_use *uses; /* sorted by key, then by place */
} diff_thesis;

/* side.c */
void diff_side_open(diff_side *s, const char *arg, const char *name);
void diff_side_close(diff_side *s);
const diff_number *diff_side_number(const diff_side *s, const char *key);
/* A record line, or NULL. */
const char *diff_record_value(const diff_items *r, const char *kind, const char *name);
/* The files under root/sub (relative to root, sorted) whose names end in
 * one of the suffixes (space-separated). */
char **diff_list_files(const char *root, const char *sub, const char *suffixes, int *n);
void diff_free_list(char **list, int n);

/* records.c: parameters, programs, data sources */
void diff_records(const diff_side *a, const diff_side *b, diff_out *o);

/* numbers.c */
void diff_thesis_scan(diff_thesis *t, const char *path);
void diff_thesis_free(diff_thesis *t);
void diff_numbers(const diff_side *a, const diff_side *b, const diff_thesis *thesis, diff_out *o);
/* workflow/published.tsv against a run's numbers */
void diff_published(const char *table, const diff_side *b, diff_out *o);

/* tables.c: table cells, and heads whose class or sign changed */
void diff_tables(const diff_side *a, const diff_side *b, diff_out *o);

/* figures.c */
void diff_figures(const diff_side *a, const diff_side *b, diff_out *o);

/* html helpers (main.c; text through qk_html_text) */
/* "<h2 id=ID>TITLE</h2>" */
void diff_html_section(diff_out *o, const char *id, const char *title);
/* A finding on the terminal: the first few of a section, or all with
 * --verbose; shown counts what was printed, o->said what was found. */
void diff_say(diff_out *o, int *shown, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "  ... and N more WHAT" for the findings not printed; starts the count
 * of the next section. */
void diff_say_rest(diff_out *o, int *shown, const char *what);

#endif
