/* Typesetting the report's numbers for HTML, plain text and LaTeX
 * (include/qk/numbers.h, conventions in docs/report-numbers.md). */
#include "qk/numbers.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The signs and separators of each output. */
static const char *minus_sign(qk_typeset as)
{
    return as == QK_AS_LATEX ? "\\ensuremath{-}" : "\xe2\x88\x92"; /* U+2212 */
}

static const char *group_separator(qk_typeset as) { return as == QK_AS_LATEX ? "{,}" : ","; }

/* Digits with a separator between groups of three before the point. */
static void put_grouped(FILE *fp, const char *digits, qk_typeset as)
{
    size_t whole = strcspn(digits, ".");
    for (size_t i = 0; digits[i]; i++) {
        if (i > 0 && i < whole && (whole - i) % 3 == 0 && whole >= 4)
            fputs(group_separator(as), fp);
        fputc(digits[i], fp);
    }
}

static int all_zero(const char *digits)
{
    for (; *digits; digits++)
        if (*digits >= '1' && *digits <= '9')
            return 0;
    return 1;
}

/* mantissa times ten to the exponent, after the sign ('-', '+' or 0) */
static void put_power(FILE *fp, char sign, const char *mantissa, int exponent, qk_typeset as)
{
    if (as == QK_AS_LATEX) {
        fprintf(fp, "\\ensuremath{%s%s\\times10^{%d}}", sign == '-' ? "-" : sign == '+' ? "+" : "",
                mantissa, exponent);
        return;
    }
    if (sign == '-')
        fputs(minus_sign(as), fp);
    else if (sign == '+')
        fputc('+', fp);
    fprintf(fp, "%s\xc3\x97" "10", mantissa); /* U+00D7 */
    if (as == QK_AS_HTML)
        fputs("<sup>", fp);
    else
        fputc('^', fp);
    if (exponent < 0)
        fputs(minus_sign(as), fp);
    fprintf(fp, "%d", abs(exponent));
    if (as == QK_AS_HTML)
        fputs("</sup>", fp);
}

/* A value of a kind with fixed decimals is written as a power of ten, with
 * POWER_DECIMALS decimals of the mantissa, when its fixed form would hold
 * more digits than a double carries (FIXED_DIGITS_MAX) or when it is below
 * FIXED_TINY but not 0: its decimals would all be zeros. (The floor is far
 * below the rounding noise of the report's sums, whose near-zero results
 * still read 0.000.) */
#define FIXED_DIGITS_MAX 15
#define FIXED_TINY 1e-20
#define POWER_DECIMALS 2

static int beyond_fixed(const qk_format *f, double x)
{
    if (f->kind == QK_KIND_SIG || f->kind == QK_KIND_SCI)
        return 0;
    double size = fabs(x);
    return (size > 0 && size < FIXED_TINY && size < 0.5 * pow(10, -f->digits)) ||
           size >= pow(10, FIXED_DIGITS_MAX - f->digits);
}

static void put_number(FILE *fp, const qk_format *f, double x, qk_typeset as)
{
    char buf[400]; /* room for %.12f of 1e300 */
    if (beyond_fixed(f, x))
        snprintf(buf, sizeof buf, "%.*e", POWER_DECIMALS, x);
    else
        switch (f->kind) {
        case QK_KIND_COUNT: snprintf(buf, sizeof buf, "%.0f", x); break;
        case QK_KIND_SIG: snprintf(buf, sizeof buf, "%.*g", f->digits, x); break;
        case QK_KIND_SCI: snprintf(buf, sizeof buf, "%.*e", f->digits, x); break;
        default: snprintf(buf, sizeof buf, "%.*f", f->digits, x); break;
        }
    int negative = buf[0] == '-';
    char *digits = buf + negative;
    char *e = strchr(digits, 'e');
    int exponent = 0;
    if (e) {
        exponent = atoi(e + 1);
        *e = '\0';
    }
    if (all_zero(digits))
        negative = 0; /* a value that rounds to zero has no sign */
    int plus = !negative && (f->kind == QK_KIND_SIGNED || f->kind == QK_KIND_CHANGE) &&
               !all_zero(digits);
    if (e) {
        put_power(fp, negative ? '-' : plus ? '+' : 0, digits, exponent, as);
        return;
    }
    if (negative)
        fputs(minus_sign(as), fp);
    else if (plus)
        fputc('+', fp);
    put_grouped(fp, digits, as);
}

void qk_number_put(FILE *fp, const qk_nvalue *v, qk_typeset as, int in_table)
{
    if (v->missing) {
        if (!in_table)
            fputs("n/a", fp);
        else
            fputs(as == QK_AS_LATEX ? "---" : "\xe2\x80\x94", fp); /* em dash */
        return;
    }
    if (v->format.kind == QK_KIND_TEXT) {
        if (as == QK_AS_HTML)
            qk_html_text(fp, v->raw);
        else if (as == QK_AS_LATEX)
            qk_latex_text(fp, v->raw);
        else
            fputs(v->raw, fp);
        return;
    }
    if (v->format.kind == QK_KIND_FLAG) {
        fputs(v->x != 0 ? "yes" : "no", fp);
        return;
    }
    put_number(fp, &v->format, v->x, as);
}

void qk_html_text(FILE *fp, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '&': fputs("&amp;", fp); break;
        case '"': fputs("&quot;", fp); break;
        default: fputc(*s, fp);
        }
    }
}

static int is_word(char c) { return isalnum((unsigned char)c) || (unsigned char)c >= 0x80; }

/* Whether the character at s[i] would be read as Markdown (GitHub's,
 * CommonMark with tables, strikethrough and math) in a table cell: where
 * it is, not only what it is, so that text without such markup ("r_q",
 * "r < 0.3", "A & B") is written as it is. */
static int md_special(const char *s, size_t i)
{
    char c = s[i], next = s[i + 1];
    switch (c) {
    case '|': case '\\': case '`': case '*': case '~': case '$':
        return 1;
    case '_': /* emphasis only at a word's edge */
        return !(i > 0 && is_word(s[i - 1]) && is_word(next));
    case '<': /* a tag, comment or autolink */
        return isalpha((unsigned char)next) || next == '/' || next == '!' || next == '?';
    case '&': /* an entity */
        return isalnum((unsigned char)next) || next == '#';
    case ']': /* the end of a link's text */
        return next == '(' || next == '[';
    default:
        return 0;
    }
}

void qk_md_cell(FILE *fp, const char *s)
{
    for (size_t i = 0; s[i]; i++) {
        if (md_special(s, i))
            fputc('\\', fp);
        fputc(s[i], fp);
    }
}

/* Unicode signs that LaTeX's default input does not typeset, and what to
 * write instead. */
static const struct {
    const char *utf8, *latex, *plain, *entity;
} signs[] = {{"\xe2\x88\x92", "\\ensuremath{-}", "\xe2\x88\x92", "minus"},
             {"\xe2\x86\x92", "\\ensuremath{\\rightarrow}", "\xe2\x86\x92", "rarr"},
             {"\xe2\x80\x94", "---", "\xe2\x80\x94", "mdash"},
             {"\xe2\x80\x93", "--", "\xe2\x80\x93", "ndash"},
             {"\xc3\x97", "\\ensuremath{\\times}", "\xc3\x97", "times"},
             {"\xc2\xb7", "\\ensuremath{\\cdot}", "\xc2\xb7", "middot"},
             {"\xe2\x89\xa5", "\\ensuremath{\\geq}", "\xe2\x89\xa5", "ge"},
             {"\xe2\x89\xa4", "\\ensuremath{\\leq}", "\xe2\x89\xa4", "le"},
             {"\xc2\xb1", "\\ensuremath{\\pm}", "\xc2\xb1", "plusmn"},
             {"\xce\xb1", "\\ensuremath{\\alpha}", "\xce\xb1", "alpha"},
             {"\xce\xbc", "\\ensuremath{\\mu}", "\xce\xbc", "mu"},
             {"\xe2\x80\xa6", "\\dots{}", "\xe2\x80\xa6", "hellip"},
             {"\xc2\xa0", "~", " ", "nbsp"},
             {"&", "\\&", "&", "amp"},
             {"<", "\\textless{}", "<", "lt"},
             {">", "\\textgreater{}", ">", "gt"}};
#define N_SIGNS (sizeof signs / sizeof signs[0])

/* One character (or UTF-8 sign) of text as LaTeX; returns the bytes used. */
static size_t put_latex_char(FILE *fp, const char *s)
{
    for (size_t i = 0; i < N_SIGNS; i++) {
        size_t n = strlen(signs[i].utf8);
        if (strncmp(s, signs[i].utf8, n) == 0) {
            fputs(signs[i].latex, fp);
            return n;
        }
    }
    switch (*s) {
    case '\\': fputs("\\textbackslash{}", fp); break;
    case '{': case '}': case '$': case '%': case '#': case '_':
        fputc('\\', fp);
        fputc(*s, fp);
        break;
    case '~': fputs("\\textasciitilde{}", fp); break;
    case '^': fputs("\\textasciicircum{}", fp); break;
    case '|': fputs("\\textbar{}", fp); break;
    default: fputc(*s, fp);
    }
    return 1;
}

void qk_latex_text(FILE *fp, const char *s)
{
    while (*s)
        s += put_latex_char(fp, s);
}

/* The entity at s ("&alpha;"): its index in signs, and its length. */
static int entity_at(const char *s, size_t *len)
{
    const char *semi = strchr(s, ';');
    if (s[0] != '&' || !semi || semi - s > 10)
        return -1;
    for (size_t i = 0; i < N_SIGNS; i++)
        if (strlen(signs[i].entity) == (size_t)(semi - s - 1) &&
            strncmp(s + 1, signs[i].entity, (size_t)(semi - s - 1)) == 0) {
            *len = (size_t)(semi - s + 1);
            return (int)i;
        }
    return -1;
}

/* The light HTML tags of headers and their LaTeX. */
static const struct {
    const char *open, *close, *latex;
} tags[] = {{"<sub>", "</sub>", "\\textsubscript{"},
            {"<sup>", "</sup>", "\\textsuperscript{"},
            {"<i>", "</i>", "\\textit{"},
            {"<b>", "</b>", "\\textbf{"}};

static void put_markup(FILE *fp, const char *s, qk_typeset as)
{
    while (*s) {
        size_t len = 0;
        int e = entity_at(s, &len);
        if (e >= 0) {
            fputs(as == QK_AS_LATEX ? signs[e].latex : signs[e].plain, fp);
            s += len;
            continue;
        }
        int tag = 0;
        for (size_t i = 0; i < sizeof tags / sizeof tags[0] && !tag; i++) {
            if (strncmp(s, tags[i].open, strlen(tags[i].open)) == 0) {
                if (as == QK_AS_LATEX)
                    fputs(tags[i].latex, fp);
                s += strlen(tags[i].open);
                tag = 1;
            } else if (strncmp(s, tags[i].close, strlen(tags[i].close)) == 0) {
                if (as == QK_AS_LATEX)
                    fputc('}', fp);
                s += strlen(tags[i].close);
                tag = 1;
            }
        }
        if (tag)
            continue;
        if (as == QK_AS_LATEX)
            s += put_latex_char(fp, s);
        else
            fputc(*s++, fp);
    }
}

void qk_latex_markup(FILE *fp, const char *s) { put_markup(fp, s, QK_AS_LATEX); }

void qk_plain_markup(FILE *fp, const char *s) { put_markup(fp, s, QK_AS_PLAIN); }
