/* Unit tests of the report's numbers (src/lib/report/numbers.c,
 * src/lib/report/numbers_typeset.c): formats, the file round trip, and the
 * typesetting conventions for HTML, plain text and LaTeX. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qk/numbers.h"
#include "testutil.h"

/* The value typeset into a static buffer. */
static const char *typeset(const char *format, const char *raw, qk_typeset as, int in_table)
{
    static char out[512];
    qk_nvalue v = {(char *)"k", (char *)raw, (char *)"", {0, 0}, raw[0] == '\0', NAN};
    ck_assert_int_eq(qk_format_parse(format, &v.format), 0);
    if (!v.missing && (qk_format_is_number(&v.format) || v.format.kind == QK_KIND_FLAG))
        v.x = strtod(raw, NULL);
    FILE *fp = fmemopen(out, sizeof out, "w");
    qk_number_put(fp, &v, as, in_table);
    fclose(fp);
    return out;
}

#define MINUS "\xe2\x88\x92"

START_TEST(test_formats)
{
    qk_format f;
    ck_assert_int_eq(qk_format_parse("number.3", &f), 0);
    ck_assert(f.kind == QK_KIND_NUMBER && f.digits == 3);
    ck_assert_int_eq(qk_format_parse("count", &f), 0);
    ck_assert_int_eq(qk_format_parse("count.2", &f), -1);
    ck_assert_int_eq(qk_format_parse("percent", &f), -1);
    ck_assert_int_eq(qk_format_parse("sig.0", &f), -1);
    ck_assert_int_eq(qk_format_parse("percentage.1", &f), -1);
    ck_assert_int_eq(qk_format_parse("number.x", &f), -1);
}
END_TEST

START_TEST(test_typeset_numbers)
{
    ck_assert_str_eq(typeset("count", "3239", QK_AS_HTML, 0), "3,239");
    ck_assert_str_eq(typeset("count", "3239", QK_AS_LATEX, 0), "3{,}239");
    ck_assert_str_eq(typeset("count", "1234567", QK_AS_PLAIN, 0), "1,234,567");
    ck_assert_str_eq(typeset("count", "999", QK_AS_HTML, 0), "999");
    ck_assert_str_eq(typeset("number.3", "0.47351", QK_AS_HTML, 0), "0.474");
    ck_assert_str_eq(typeset("number.2", "-0.5549", QK_AS_HTML, 0), MINUS "0.55");
    ck_assert_str_eq(typeset("number.2", "-0.5549", QK_AS_LATEX, 0), "\\ensuremath{-}0.55");
    ck_assert_str_eq(typeset("number.3", "-0.0001", QK_AS_HTML, 0), "0.000");
    ck_assert_str_eq(typeset("number.1", "-1234.56", QK_AS_LATEX, 0), "\\ensuremath{-}1{,}234.6");
    ck_assert_str_eq(typeset("signed.2", "0.3412", QK_AS_HTML, 0), "+0.34");
    ck_assert_str_eq(typeset("signed.2", "-0.001", QK_AS_HTML, 0), "0.00");
    ck_assert_str_eq(typeset("change.0", "-91.2", QK_AS_PLAIN, 0), MINUS "91");
    ck_assert_str_eq(typeset("change.0", "125.3", QK_AS_LATEX, 0), "+125");
    ck_assert_str_eq(typeset("percent.1", "98.48", QK_AS_HTML, 0), "98.5");
    ck_assert_str_eq(typeset("sig.3", "0.0086612", QK_AS_HTML, 0), "0.00866");
    ck_assert_str_eq(typeset("sig.3", "0.7", QK_AS_HTML, 0), "0.7");
    ck_assert_str_eq(typeset("sig.2", "0.0000123", QK_AS_HTML, 0), "1.2\xc3\x97" "10<sup>" MINUS "5</sup>");
    ck_assert_str_eq(typeset("sci.1", "4.34e-16", QK_AS_LATEX, 0), "\\ensuremath{4.3\\times10^{-16}}");
    ck_assert_str_eq(typeset("sci.1", "-4.34e-16", QK_AS_PLAIN, 0), MINUS "4.3\xc3\x97" "10^" MINUS "16");
    ck_assert_str_eq(typeset("sci.2", "12345", QK_AS_HTML, 0), "1.23\xc3\x97" "10<sup>4</sup>");
}
END_TEST

/* Values beyond what fixed decimals show (vectors scaled by 1e30 or 1e-30)
 * as powers of ten with three significant digits, in every output; values
 * of the usual sizes, and the rounding noise about 0, as before. */
START_TEST(test_typeset_extreme)
{
    ck_assert_str_eq(typeset("number.3", "4.8673584801e+56", QK_AS_HTML, 0), "4.87\xc3\x97" "10<sup>56</sup>");
    ck_assert_str_eq(typeset("number.3", "4.8673584801e+56", QK_AS_LATEX, 0), "\\ensuremath{4.87\\times10^{56}}");
    ck_assert_str_eq(typeset("number.1", "1.2790445236e-29", QK_AS_HTML, 0), "1.28\xc3\x97" "10<sup>" MINUS "29</sup>");
    ck_assert_str_eq(typeset("number.1", "1.2790445236e-29", QK_AS_PLAIN, 0), "1.28\xc3\x97" "10^" MINUS "29");
    ck_assert_str_eq(typeset("number.1", "-1.2790445236e-29", QK_AS_LATEX, 1), "\\ensuremath{-1.28\\times10^{-29}}");
    ck_assert_str_eq(typeset("number.4", "-3.2e-63", QK_AS_HTML, 0), MINUS "3.20\xc3\x97" "10<sup>" MINUS "63</sup>");
    ck_assert_str_eq(typeset("signed.2", "3.5e-25", QK_AS_HTML, 0), "+3.50\xc3\x97" "10<sup>" MINUS "25</sup>");
    ck_assert_str_eq(typeset("signed.2", "3.5e-25", QK_AS_LATEX, 0), "\\ensuremath{+3.50\\times10^{-25}}");
    ck_assert_str_eq(typeset("change.0", "-7.25e40", QK_AS_PLAIN, 0), MINUS "7.25\xc3\x97" "10^40");
    ck_assert_str_eq(typeset("count", "1.5e15", QK_AS_HTML, 0), "1.50\xc3\x97" "10<sup>15</sup>");
    ck_assert_str_eq(typeset("number.3", "1e12", QK_AS_HTML, 0), "1.00\xc3\x97" "10<sup>12</sup>");
    ck_assert_str_eq(typeset("number.3", "1e-21", QK_AS_HTML, 0), "1.00\xc3\x97" "10<sup>" MINUS "21</sup>");
    /* the usual sizes keep their fixed decimals */
    ck_assert_str_eq(typeset("count", "999999999999999", QK_AS_PLAIN, 0), "999,999,999,999,999");
    ck_assert_str_eq(typeset("number.3", "123456789012.345", QK_AS_PLAIN, 0), "123,456,789,012.345");
    ck_assert_str_eq(typeset("number.3", "4.2626709301705901e-08", QK_AS_HTML, 0), "0.000");
    ck_assert_str_eq(typeset("number.3", "1.1102230246251565e-16", QK_AS_LATEX, 0), "0.000");
    ck_assert_str_eq(typeset("signed.2", "-2.7e-17", QK_AS_HTML, 0), "0.00");
    ck_assert_str_eq(typeset("number.1", "0", QK_AS_HTML, 0), "0.0");
}
END_TEST

START_TEST(test_typeset_missing_and_text)
{
    ck_assert_str_eq(typeset("number.3", "", QK_AS_HTML, 0), "n/a");
    ck_assert_str_eq(typeset("number.3", "", QK_AS_HTML, 1), "\xe2\x80\x94");
    ck_assert_str_eq(typeset("text", "", QK_AS_LATEX, 1), "---");
    ck_assert_str_eq(typeset("text", "A & <B>", QK_AS_HTML, 0), "A &amp; &lt;B&gt;");
    ck_assert_str_eq(typeset("text", "LC 4k\xe2\x86\x92" "32k_x 5% #1", QK_AS_LATEX, 0),
                     "LC 4k\\ensuremath{\\rightarrow}32k\\_x 5\\% \\#1");
    ck_assert_str_eq(typeset("flag", "1", QK_AS_PLAIN, 0), "yes");
    ck_assert_str_eq(typeset("flag", "0", QK_AS_PLAIN, 0), "no");
}
END_TEST

START_TEST(test_markup)
{
    char out[256];
    FILE *fp = fmemopen(out, sizeof out, "w");
    qk_latex_markup(fp, "mean |<i>r</i><sub>q</sub><sup>a</sup>| &times; 10<sup>3</sup>, AP_drop (%)");
    fclose(fp);
    ck_assert_str_eq(out, "mean \\textbar{}\\textit{r}\\textsubscript{q}\\textsuperscript{a}\\textbar{} "
                          "\\ensuremath{\\times} 10\\textsuperscript{3}, AP\\_drop (\\%)");
    fp = fmemopen(out, sizeof out, "w");
    qk_plain_markup(fp, "&alpha;<sub>K</sub> &amp; x");
    fclose(fp);
    ck_assert_str_eq(out, "\xce\xb1K & x");
}
END_TEST

/* An escaper's output for s, into a static buffer. */
static const char *escaped(void (*put)(FILE *, const char *), const char *s)
{
    static char out[1024];
    FILE *fp = fmemopen(out, sizeof out, "w");
    put(fp, s);
    fclose(fp);
    return out;
}

/* A label of any printable text, escaped for each output so that it shows
 * as written; text without markup stays as it is. */
#define ODD "<b>My</b> & \"Model\" 'x' 50% $x_1$ {a}#^~\\ [l](u) *e* _u_ `c` &amp; |"
START_TEST(test_escapers)
{
    ck_assert_str_eq(escaped(qk_html_text, ODD),
                     "&lt;b&gt;My&lt;/b&gt; &amp; &quot;Model&quot; 'x' 50% $x_1$ {a}#^~\\ "
                     "[l](u) *e* _u_ `c` &amp;amp; |");
    ck_assert_str_eq(escaped(qk_latex_text, ODD),
                     "\\textless{}b\\textgreater{}My\\textless{}/b\\textgreater{} \\& \"Model\" "
                     "'x' 50\\% \\$x\\_1\\$ \\{a\\}\\#\\textasciicircum{}\\textasciitilde{}"
                     "\\textbackslash{} [l](u) *e* \\_u\\_ `c` \\&amp; \\textbar{}");
    ck_assert_str_eq(escaped(qk_md_cell, ODD),
                     "\\<b>My\\</b> & \"Model\" 'x' 50% \\$x_1\\$ {a}#^\\~\\\\ [l\\](u) \\*e\\* "
                     "\\_u\\_ \\`c\\` \\&amp; \\|");
    /* as before: text of the tables without markup */
    static const char *const plain[] = {"mean |r_q_a|, r_k < -0.3 (heads)", "A & B", "x > 1",
                                        "[0, 1]", "10^3", "S1-40K", "Llama-3.2-3B", "a_b"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        char want[128];
        snprintf(want, sizeof want, "%s", plain[i]);
        if (i == 0)
            snprintf(want, sizeof want, "mean \\|r_q_a\\|, r_k < -0.3 (heads)");
        ck_assert_str_eq(escaped(qk_md_cell, plain[i]), want);
    }
}
END_TEST

static const qk_key scalars[] = {{"s.count", "count", "heads"},
                                 {"s.r", "signed.2", "Pearson r"},
                                 {"s.name", "text", "a label"},
                                 {"s.unset", "percent.1", "never set"},
                                 {NULL, NULL, NULL}};
static const qk_key fields[] = {{"label", "text", "model label"},
                                {"ap", "number.3", "ap_overall"},
                                {NULL, NULL, NULL}};

/* Written values read back exactly; unset keys and fields are missing;
 * tables list their cells. */
START_TEST(test_round_trip)
{
    char path[] = "/tmp/qk-test-numbers-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    qk_numbers *w = qk_numbers_open(path);
    qk_numbers_declare(w, scalars);
    qk_numbers_source(w, "build/report/inventory.tsv", "q_heads", "every row", "sum", "qk-load");
    qk_numbers_set(w, "s.count", 3239);
    qk_numbers_source(w, "results/x/t.csv", "r_q0", "all heads", "mean", "qk-pca; pca");
    qk_numbers_set(w, "s.r", 0.1 + 0.2);
    qk_numbers_set_text(w, "s.name", "a\tb");
    int t = qk_numbers_table(w, "s.models", "s", "Models");
    qk_numbers_column(w, t, "label", "Model");
    qk_numbers_column(w, t, "ap", "AP");
    int r1 = qk_numbers_record(w, "s", "m1", fields, "M1");
    qk_numbers_field_text(w, r1, "label", "M1");
    qk_numbers_field(w, r1, "ap", NAN);
    int r2 = qk_numbers_record(w, "s", "m2", fields, "M2");
    qk_numbers_field(w, r2, "ap", 0.25);
    ck_assert_int_eq(qk_numbers_record(w, "s", "m1", fields, "M1"), r1);
    qk_numbers_row(w, t, "m1");
    qk_numbers_row(w, t, "m2");
    qk_numbers_close(w);
    ck_assert(qk_numbers_file(path));

    qk_nset s = {0};
    qk_err err;
    ck_assert_msg(qk_nset_load(&s, path, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.n_values, 4 + 2 * 2);
    ck_assert(qk_nset_value(&s, "s.r")->x == 0.1 + 0.2);
    ck_assert_str_eq(qk_nset_value(&s, "s.name")->raw, "a b");
    ck_assert(qk_nset_value(&s, "s.unset")->missing);
    ck_assert_str_eq(qk_nset_value(&s, "s.m1.ap")->meaning, "ap_overall (M1)");
    ck_assert(qk_nset_value(&s, "s.m1.ap")->missing);
    ck_assert(qk_nset_value(&s, "s.m2.label")->missing);
    const qk_ntable *tb = qk_nset_table(&s, "s.models");
    ck_assert(tb && tb->n_rows == 2 && tb->n_cols == 2);
    ck_assert(qk_nset_cell(&s, tb, 1, 1)->x == 0.25);
    /* each value set after a source carries it, until the next source;
     * a value never set has none */
    ck_assert_str_eq(qk_nset_value(&s, "s.count")->source.columns, "q_heads");
    ck_assert(qk_nset_value(&s, "s.unset")->source.table == NULL);
    const qk_nvalue *r = qk_nset_value(&s, "s.r");
    ck_assert_str_eq(r->source.table, "results/x/t.csv");
    ck_assert_str_eq(r->source.rows, "all heads");
    ck_assert_str_eq(qk_nset_value(&s, "s.m2.ap")->source.aggregation, "mean");
    char *text = qk_nsource_text(r);
    ck_assert_str_eq(text, "results/x/t.csv: r_q0; all heads; mean (qk-pca; pca)");
    free(text);
    /* a second file defining the same key is an error */
    ck_assert_int_eq(qk_nset_load(&s, path, &err), -1);
    ck_assert_msg(strstr(err.msg, "defined twice") != NULL, "%s", err.msg);
    qk_nset_free(&s);
    unlink(path);
}
END_TEST

/* A value set before any source is an error of the writer (status 2):
 * every number of the report names where it comes from. */
START_TEST(test_value_needs_source)
{
    qk_numbers *w = qk_numbers_open(NULL);
    qk_numbers_declare(w, scalars);
    qk_numbers_set(w, "s.r", 0.5);
}
END_TEST

START_TEST(test_field_needs_source)
{
    qk_numbers *w = qk_numbers_open(NULL);
    int r = qk_numbers_record(w, "s", "m1", fields, "M1");
    qk_numbers_field(w, r, "ap", 0.5);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("numbers");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_formats);
    tcase_add_test(tc, test_typeset_numbers);
    tcase_add_test(tc, test_typeset_extreme);
    tcase_add_test(tc, test_typeset_missing_and_text);
    tcase_add_test(tc, test_markup);
    tcase_add_test(tc, test_escapers);
    tcase_add_test(tc, test_round_trip);
    tcase_add_exit_test(tc, test_value_needs_source, QK_EXIT_DATA);
    tcase_add_exit_test(tc, test_field_needs_source, QK_EXIT_DATA);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
