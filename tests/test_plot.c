/* How text reaches a gnuplot script (src/lib/report/plot.c): markup kept, or
 * drawn as written (in a string or a quoted field of inline data, and in
 * the label of a tic list, which gnuplot reads as a format). */
#include <string.h>

#include "qk/plot.h"
#include "testutil.h"

static const char *put(const char *text, int how)
{
    static char out[1024];
    FILE *fp = fmemopen(out, sizeof out, "w");
    qk_plot_put_text(fp, text, strlen(text), how);
    fclose(fp);
    return out;
}

#define ODD "<b>My</b> & \"Model\" 'x' 50% $x_1$ {a}#^~\\ @"

START_TEST(test_put_text)
{
    /* markup: only what ends or escapes the string */
    ck_assert_str_eq(put("{/:Italic r}_q \"a\" \\n", QK_PLOT_MARKUP),
                     "{/:Italic r}_q \\\"a\\\" \\\\n");
    /* literal: every markup character escaped for the enhanced-text mode
     * (\\_ in the script, \_ in the string, _ drawn); a quote as \042,
     * which a field of inline data reads too; a backslash drawn as one */
    ck_assert_str_eq(put(ODD, QK_PLOT_LITERAL),
                     "<b>My</b> \\\\& \\042Model\\042 'x' 50% $x\\\\_1$ \\\\{a\\\\}#\\\\^\\\\~"
                     "\\\\\\\\ \\\\@");
    ck_assert_str_eq(put(ODD, QK_PLOT_LITERAL | QK_PLOT_FORMAT),
                     "<b>My</b> \\\\& \\042Model\\042 'x' 50%% $x\\\\_1$ \\\\{a\\\\}#\\\\^\\\\~"
                     "\\\\\\\\ \\\\@");
    /* text without markup is written as it is */
    ck_assert_str_eq(put("Llama-3.2-3B (n = 3) S1-40K \xe2\x86\x92", QK_PLOT_LITERAL),
                     "Llama-3.2-3B (n = 3) S1-40K \xe2\x86\x92");
    /* at most n bytes */
    FILE *fp;
    char out[32];
    fp = fmemopen(out, sizeof out, "w");
    qk_plot_put_text(fp, "a_b_c", 3, QK_PLOT_LITERAL);
    fclose(fp);
    ck_assert_str_eq(out, "a\\\\_b");
}
END_TEST

START_TEST(test_enhanced_escape)
{
    char out[64];
    ck_assert_uint_eq(qk_plot_enhanced_escape(out, sizeof out, "x_1 {a}^~&@\\"), 20);
    ck_assert_str_eq(out, "x\\_1 \\{a\\}\\^\\~\\&\\@\\\\");
    /* cut to fit, never inside a character or between a backslash and
     * what it escapes */
    ck_assert_uint_eq(qk_plot_enhanced_escape(out, 4, "ab\xc3\xa9z"), 2);
    ck_assert_str_eq(out, "ab");
    ck_assert_uint_eq(qk_plot_enhanced_escape(out, 4, "ab_c"), 2);
    ck_assert_str_eq(out, "ab");
}
END_TEST

START_TEST(test_typeset)
{
    char text[64];
    /* a spaced hyphen is a minus sign; a hyphen in a name or a number stays */
    snprintf(text, sizeof text, "layer / (layers - 1), S1-40K");
    qk_plot_typeset(text, sizeof text);
    ck_assert_str_eq(text, "layer / (layers \xe2\x88\x92 1), S1-40K");
    /* a percent sign stands a space after its number, once */
    snprintf(text, sizeof text, "%s", "12.5%, 5 %, (%), AP_{first 20%}");
    qk_plot_typeset(text, sizeof text);
    ck_assert_str_eq(text, "12.5 %, 5 %, (%), AP_{first 20 %}");
    /* no room: the text is left whole rather than cut inside a change */
    char small[6] = "5%";
    qk_plot_typeset(small, 3);
    ck_assert_str_eq(small, "5%");
}
END_TEST

START_TEST(test_label_text)
{
    char text[64];
    snprintf(text, sizeof text, "mean r (d - 2)");
    qk_plot_label_text(text, sizeof text);
    ck_assert_str_eq(text, "Mean r (d \xe2\x88\x92 2)");
    /* a label that starts with a symbol keeps it as the notation writes it */
    snprintf(text, sizeof text, "%s (PC0)", QK_SYM_R_Q);
    qk_plot_label_text(text, sizeof text);
    ck_assert_str_eq(text, "{/:Italic r}_{/*1.2 q} (PC0)");
    char out[32];
    ck_assert_str_eq(qk_plot_percent(out, sizeof out, 12.46, 1), "12.5 %");
    ck_assert_str_eq(qk_plot_percent(out, sizeof out, -3, 0), "\xe2\x88\x92" "3 %");
    /* numbers in figure text follow the same typography */
    ck_assert_str_eq(qk_plot_format(out, sizeof out, "%.1f%% of %d", 57.4, -2),
                     "57.4 % of \xe2\x88\x92" "2");
}
END_TEST

START_TEST(test_newline)
{
    /* a line break of a label is written as gnuplot's \n, in both modes */
    ck_assert_str_eq(put("a\nb", QK_PLOT_MARKUP), "a\\nb");
    ck_assert_str_eq(put("a\nb", QK_PLOT_LITERAL), "a\\nb");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plot");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_put_text);
    tcase_add_test(tc, test_enhanced_escape);
    tcase_add_test(tc, test_typeset);
    tcase_add_test(tc, test_label_text);
    tcase_add_test(tc, test_newline);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
