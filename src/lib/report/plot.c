/* gnuplot driving (include/qk/plot.h). */
#include "qk/plot.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qk/die.h"

void qk_plot_begin(qk_plot *p, int width, int height)
{
    memset(p, 0, sizeof *p);
    p->width = width;
    p->height = height;
    p->mem = open_memstream(&p->script, &p->len);
    if (!p->mem)
        qk_die(QK_EXIT_DATA, NULL, "out of memory");
}

void qk_plot_printf(qk_plot *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->mem, fmt, ap);
    va_end(ap);
}

void qk_plot_data_begin(qk_plot *p, const char *name) { fprintf(p->mem, "$%s << EOD\n", name); }

void qk_plot_data_end(qk_plot *p) { fputs("EOD\n", p->mem); }

/* The characters the enhanced-text mode reads as markup. */
#define ENHANCED_SPECIALS "_^{}@&~\\"

void qk_plot_put_text(FILE *fp, const char *text, size_t n, int how)
{
    for (size_t i = 0; i < n && text[i]; i++) {
        char c = text[i];
        if ((how & QK_PLOT_LITERAL) && strchr(ENHANCED_SPECIALS, c))
            fputs("\\\\", fp); /* "\\_": the string holds \_, drawn as _ */
        if ((how & QK_PLOT_LITERAL) && c == '"')
            fputs("\\042", fp); /* a quote ends a field of inline data, even after \ */
        else if (c == '%' && (how & QK_PLOT_FORMAT))
            fputs("%%", fp);
        else if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", fp); /* a line break of a multi-line label */
        else
            fputc(c, fp);
    }
}

size_t qk_plot_enhanced_escape(char *out, size_t cap, const char *text)
{
    size_t len = 0;
    while (*text) {
        /* a character: one byte, or a UTF-8 lead byte and its continuations */
        size_t n = 1;
        while ((text[n] & 0xc0) == 0x80)
            n++;
        size_t need = n + (strchr(ENHANCED_SPECIALS, *text) != NULL);
        if (len + need >= cap)
            break;
        if (need > n)
            out[len++] = '\\';
        memcpy(out + len, text, n);
        len += n;
        text += n;
    }
    if (cap > 0)
        out[len] = '\0';
    return len;
}

void qk_plot_quoted(qk_plot *p, const char *text)
{
    fputc('"', p->mem);
    qk_plot_put_text(p->mem, text, strlen(text), QK_PLOT_MARKUP);
    fputc('"', p->mem);
}

void qk_plot_discard(qk_plot *p)
{
    if (p->mem)
        fclose(p->mem);
    free(p->script);
    memset(p, 0, sizeof *p);
}

/* The saved script: style and figure, without terminal or output lines,
 * so it can be loaded under any terminal. */
static int write_script(const qk_plot *p, const char *path, const char *style_path,
                        qk_err *err)
{
    qk_atomic out;
    if (qk_atomic_open(&out, path, err) != 0)
        return -1;
    fprintf(out.fp, "# gnuplot script of this figure; render with e.g.\n"
                    "#   gnuplot -d -e 'set terminal pngcairo size %d,%d; set output \"x.png\"' figure.gp\n",
            p->width, p->height);
    if (style_path) {
        uint8_t *style;
        size_t n;
        if (qk_read_file(style_path, &style, &n, err) != 0) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            qk_atomic_abort(&out);
            return qk_fail(err, "style file %s: %s", style_path, why);
        }
        fwrite(style, 1, n, out.fp);
        free(style);
    }
    fwrite(p->script, 1, p->len, out.fp);
    return qk_atomic_commit(&out, err);
}

/* figure.pdf is for a thesis page: PDF_WIDTH_CM wide, the aspect of the
 * canvas. Its script lays out a canvas of p->width pixels as the 16 cm, and
 * a font point (a pixel of pngcairo) prints at 16 cm over p->width; for
 * QK_PLOT_PRINT, qk-plot chooses that canvas so that its base font prints
 * at 7 pt (src/qk-plot/figure_draw.c): text prints at the size the layout
 * was made for. Lines and points take the same scale, so they keep their
 * proportion to the text. pdfcairo's line width unit is half a point,
 * hence the factor 2 on lines. */
#define PDF_WIDTH_CM 16.0
#define POINTS_PER_CM (72.0 / 2.54)

/* What gnuplot said when it failed, as one line: its first error line
 * ('"DIR/.figure.gp.tmp" line 58: Can't plot ...') without the script's
 * temporary name, else its first non-blank line. */
static void gnuplot_error(const char *said, char *out, size_t cap)
{
    const char *at = strstr(said, ".gp.tmp\" line ");
    const char *line = at ? at + strlen(".gp.tmp\"") : said + strspn(said, " \t\n");
    size_t n = strcspn(line, "\n");
    snprintf(out, cap, "%s%.*s", at ? "figure.gp" : "", (int)n, line);
}

/* Runs gnuplot on the saved script for the terminals of p->media, into
 * temporaries (NULL for a terminal not wanted). TZ=UTC0 makes cairo write
 * the PDF date as D:...Z, the one form stamp_pdf_dates rewrites; -d keeps
 * the user's ~/.gnuplot (a decimal sign, line colours) out of the figure.
 * gnuplot's messages go to a file: its warnings are passed on, a failure
 * becomes one line. */
static int run_gnuplot(const qk_plot *p, const char *gp, const char *png, const char *svg,
                       const char *pdf, const char *said_path, qk_err *err)
{
    /* the path reaches the shell as a variable, so no quoting can break it */
    setenv("QK_GNUPLOT_SAID", said_path, 1);
    /* a gnuplot that is gone (not installed, crashed) closes the pipe: the
     * writes then fail instead of stopping the program, and its status
     * says what happened */
    struct sigaction ignore = {.sa_handler = SIG_IGN}, before;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &before);
    FILE *pipe = popen("TZ=UTC0 gnuplot -d 2>\"$QK_GNUPLOT_SAID\"", "w");
    if (!pipe) {
        sigaction(SIGPIPE, &before, NULL);
        return qk_fail(err, "cannot start gnuplot: %s", strerror(errno));
    }
    if (png)
        fprintf(pipe,
                "set terminal pngcairo size %d,%d font \"DejaVu Sans,10\" enhanced\n"
                "set output \"%s\"\nload \"%s\"\nunset output\nreset\n"
                "set terminal svg size %d,%d font \"DejaVu Sans,10\" enhanced fontscale 1.3333\n"
                "set output \"%s\"\nload \"%s\"\nunset output\nreset\n",
                p->width, p->height, png, gp, p->width, p->height, svg, gp);
    if (pdf) {
        double ink = PDF_WIDTH_CM * POINTS_PER_CM / p->width;
        fprintf(pipe,
                "set terminal pdfcairo size %.4fcm,%.4fcm font \"DejaVu Sans,10\" enhanced "
                "fontscale %.4f linewidth %.4f pointscale %.4f\n"
                "set output \"%s\"\nload \"%s\"\nunset output\n",
                PDF_WIDTH_CM, PDF_WIDTH_CM * p->height / p->width, ink, 2 * ink, ink, pdf, gp);
    }
    int status = pclose(pipe);
    sigaction(SIGPIPE, &before, NULL);
    uint8_t *said = NULL;
    size_t len = 0;
    qk_err read_err;
    if (qk_read_file(said_path, &said, &len, &read_err) != 0)
        said = NULL;
    unlink(said_path);
    int rc = 0;
    if (status != 0) {
        char line[512];
        gnuplot_error(said ? (const char *)said : "", line, sizeof line);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            rc = qk_fail(err, "cannot run gnuplot (not on the PATH? Debian package "
                              "gnuplot-nox): %s", line);
        else if (WIFEXITED(status))
            rc = qk_fail(err, "gnuplot failed (exit status %d): %s", WEXITSTATUS(status), line);
        else
            rc = qk_fail(err, "gnuplot failed (status %d): %s", status, line);
    } else if (said && len > 0) {
        fwrite(said, 1, len, stderr); /* warnings stay visible */
    }
    free(said);
    return rc;
}

int qk_plot_pdf_date(char digits[15], qk_err *err)
{
    const char *env = getenv("SOURCE_DATE_EPOCH");
    long long epoch = 0;
    if (env && *env) {
        char *end;
        errno = 0;
        epoch = strtoll(env, &end, 10);
        if (errno || *end || epoch < 0 || epoch > 253402300799LL) /* until 9999 */
            return qk_fail(err, "SOURCE_DATE_EPOCH '%s' is not a time in seconds", env);
    }
    time_t t = (time_t)epoch;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(digits, 15, "%Y%m%d%H%M%S", &tm) != 14)
        return qk_fail(err, "SOURCE_DATE_EPOCH '%s' is not a time in seconds", env);
    return 0;
}

/* Two repairs of gnuplot's SVG. (1) In enhanced text it writes a part's
 * font-size only where it differs from the part before, but in SVG a part
 * (tspan) takes its size from the whole text, not from the part before:
 * in a subtitle (0.78 of the font), an italic symbol and the text after it were drawn at
 * the full size. Each such part gets the size gnuplot meant, the last one
 * written in its text. (2) The SVG with values on hover ("mouse") frames
 * its canvas in black (the box that catches the mouse), which no other
 * figure has: the frame's stroke is turned off. */
static char *repair_svg(const char *in, size_t len, size_t *out_len)
{
    static const char frame[] = "stroke=\"black\" stroke-width=\"1\"\n"
                                "onclick=\"gnuplot_svg.toggleCoordBox(evt)\"";
    char size[32] = "";
    size_t parts = 0; /* each may gain ' font-size="SIZE"' */
    for (const char *p = in; (p = memmem(p, len - (size_t)(p - in), "<tspan", 6)); p += 6)
        parts++;
    char *out = qk_malloc(len + parts * (sizeof size + 16) + 1), *o = out;
    for (size_t i = 0; i < len;) {
        const char *p = in + i;
        size_t rest = len - i;
        if (rest >= 5 && memcmp(p, "<text", 5) == 0) {
            size[0] = '\0'; /* a text starts at its own size */
        } else if (rest >= 6 && memcmp(p, "<tspan", 6) == 0) {
            const char *end = memchr(p, '>', rest);
            const char *at = end ? memmem(p, (size_t)(end - p), "font-size=\"", 11) : NULL;
            const char *close = at ? memchr(at + 11, '"', (size_t)(end - at - 11)) : NULL;
            if (close && (size_t)(close - at - 11) < sizeof size) {
                memcpy(size, at + 11, (size_t)(close - at - 11));
                size[close - at - 11] = '\0';
            } else if (end && !at && size[0]) {
                o += sprintf(o, "<tspan font-size=\"%s\"", size);
                i += 6;
                continue;
            }
        } else if (rest >= sizeof frame - 1 && memcmp(p, frame, sizeof frame - 1) == 0) {
            memcpy(o, "stroke=\"none\"", 13);
            o += 13;
            i += 14;
            continue;
        }
        *o++ = in[i++];
    }
    *out_len = (size_t)(o - out);
    return out;
}

static int repair_svg_file(const char *svg, const char *dir, qk_err *err)
{
    uint8_t *data;
    size_t len, out_len;
    if (qk_read_file(svg, &data, &len, err) != 0)
        return -1;
    char *out = repair_svg((const char *)data, len, &out_len);
    free(data);
    FILE *fp = fopen(svg, "wb");
    int rc = fp && fwrite(out, 1, out_len, fp) == out_len ? 0 : -1;
    free(out);
    if ((fp && fclose(fp) != 0) || rc != 0)
        return qk_fail(err, "cannot write %s: %s", dir, strerror(errno));
    return 0;
}

/* Replaces the time cairo writes into the PDF's /CreationDate (and
 * /ModDate) by qk_plot_pdf_date's, in place and with the same length, so
 * that the cross-reference offsets stay right and two renderings are
 * byte-identical. */
static int stamp_pdf_dates(const char *pdf, const char *dir, qk_err *err)
{
    char digits[15];
    if (qk_plot_pdf_date(digits, err) != 0)
        return -1;
    uint8_t *data;
    size_t len;
    if (qk_read_file(pdf, &data, &len, err) != 0)
        return -1;
    static const char *const names[] = {"CreationDate", "ModDate"};
    long at[2] = {-1, -1};
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        char key[32];
        size_t n = (size_t)snprintf(key, sizeof key, "/%s (D:", names[k]);
        const uint8_t *hit = memmem(data, len, key, n);
        if (!hit)
            continue;
        size_t off = (size_t)(hit - data) + n;
        int digits_ok = off + 16 <= len && data[off + 14] == 'Z' && data[off + 15] == ')';
        for (size_t i = 0; digits_ok && i < 14; i++)
            digits_ok = isdigit(data[off + i]);
        if (!digits_ok)
            rc = qk_fail(err, "cannot write the figure in %s: gnuplot's PDF has a /%s of "
                              "an unknown form", dir, names[k]);
        at[k] = (long)off;
    }
    free(data);
    if (rc != 0)
        return rc;
    if (at[0] < 0)
        return qk_fail(err, "cannot write the figure in %s: gnuplot's PDF has no /CreationDate",
                       dir);
    FILE *fp = fopen(pdf, "r+b");
    if (!fp)
        return qk_fail(err, "cannot write %s: %s", dir, strerror(errno));
    for (int k = 0; k < 2; k++)
        if (at[k] >= 0 && (fseek(fp, at[k], SEEK_SET) != 0 || fwrite(digits, 1, 14, fp) != 14))
            rc = -1;
    if (fclose(fp) != 0 || rc != 0)
        return qk_fail(err, "cannot write %s: %s", dir, strerror(errno));
    return 0;
}

/* Whether the file at path ends with tail (after trailing whitespace when
 * skip_space): gnuplot reports no write errors, so a full disk or a file
 * size limit would otherwise leave a cut-off picture that looks complete. */
static int ends_with(const char *path, const char *tail, size_t n, int skip_space)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return 0;
    char buf[64];
    long size = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    size_t want = sizeof buf < (size_t)(size > 0 ? size : 0) ? sizeof buf : (size_t)(size > 0 ? size : 0);
    int ok = size > 0 && fseek(fp, size - (long)want, SEEK_SET) == 0 &&
             fread(buf, 1, want, fp) == want;
    fclose(fp);
    while (ok && skip_space && want > 0 && isspace((unsigned char)buf[want - 1]))
        want--;
    return ok && want >= n && memcmp(buf + want - n, tail, n) == 0;
}

static int check_complete(const char *png, const char *svg, const char *pdf, const char *dir,
                          qk_err *err)
{
    static const char png_end[] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', (char)0xae, 0x42, 0x60,
                                   (char)0x82};
    if ((png && !ends_with(png, png_end, sizeof png_end, 0)) ||
        (svg && !ends_with(svg, "</svg>", 6, 1)) || (pdf && !ends_with(pdf, "%%EOF", 5, 1)))
        return qk_fail(err, "cannot write the figure in %s: gnuplot's output is incomplete "
                            "(disk full or file size limit)", dir);
    return 0;
}

int qk_plot_render(qk_plot *p, const char *dir, const char *style_path, qk_err *err)
{
    fclose(p->mem);
    p->mem = NULL;
    static const char *const names[3] = {"figure.png", "figure.svg", "figure.pdf"};
    int want[3] = {p->media != QK_PLOT_PRINT, p->media != QK_PLOT_PRINT,
                   p->media != QK_PLOT_SCREEN};
    char *final[3], *tmp[3];
    for (int i = 0; i < 3; i++) {
        char hidden[32];
        snprintf(hidden, sizeof hidden, ".%s.tmp", names[i]);
        final[i] = want[i] ? qk_path_join(dir, names[i]) : NULL;
        tmp[i] = want[i] ? qk_path_join(dir, hidden) : NULL;
    }
    /* figure.gp is the screen media's script, put in place with the
     * pictures; the print script is a temporary of its own */
    int keep_gp = p->media != QK_PLOT_PRINT;
    char *gp = qk_path_join(dir, keep_gp ? ".figure.gp.tmp" : ".figure.print.gp.tmp");
    char *gp_final = qk_path_join(dir, "figure.gp");
    char *said = qk_path_join(dir, ".gnuplot.said.tmp");
    /* removed if the program is stopped (Ctrl-C) while they exist */
    char *temps[5] = {tmp[0], tmp[1], tmp[2], gp, said};
    for (int i = 0; i < 5; i++)
        if (temps[i])
            qk_temp_begin(temps[i]);
    int rc = qk_mkdirs(dir, err);
    if (rc == 0)
        rc = write_script(p, gp, style_path, err);
    if (rc == 0)
        rc = run_gnuplot(p, gp, tmp[0], tmp[1], tmp[2], said, err);
    if (rc == 0)
        rc = check_complete(tmp[0], tmp[1], tmp[2], dir, err);
    if (rc == 0 && want[1])
        rc = repair_svg_file(tmp[1], dir, err);
    if (rc == 0 && want[2])
        rc = stamp_pdf_dates(tmp[2], dir, err);
    for (int i = 0; i < 3 && rc == 0; i++)
        if (want[i] && rename(tmp[i], final[i]) != 0)
            rc = qk_fail(err, "cannot write %s: %s", dir, strerror(errno));
    if (rc == 0 && keep_gp && rename(gp, gp_final) != 0)
        rc = qk_fail(err, "cannot write %s: %s", dir, strerror(errno));
    for (int i = 0; i < 5; i++)
        if (temps[i])
            qk_temp_end(temps[i]);
    for (int i = 0; i < 3; i++) {
        if (rc != 0 && tmp[i])
            unlink(tmp[i]);
        free(final[i]);
        free(tmp[i]);
    }
    if (rc != 0 || !keep_gp)
        unlink(gp);
    free(gp);
    free(gp_final);
    free(said);
    free(p->script);
    memset(p, 0, sizeof *p);
    return rc;
}

/* ---- text conventions ------------------------------------------------------------ */

void qk_plot_minus(char *text, size_t cap)
{
    static const char minus[] = "\xe2\x88\x92"; /* U+2212 in UTF-8 */
    size_t len = strlen(text);
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '-' || !(isdigit((unsigned char)text[i + 1]) || text[i + 1] == '.'))
            continue;
        if (i > 0 && (isalnum((unsigned char)text[i - 1]) || text[i - 1] == '_'))
            continue;
        if (len + 2 >= cap) /* no room for two more bytes: keep the hyphen */
            break;
        memmove(text + i + 3, text + i + 1, len - i); /* with the terminator */
        memcpy(text + i, minus, 3);
        len += 2;
        i += 2;
    }
}

char *qk_plot_format(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    qk_plot_minus(out, cap);
    qk_plot_typeset(out, cap);
    return out;
}

void qk_plot_tokens(double tokens, char *out, size_t cap)
{
    double r = round(tokens);
    int whole = fabs(r - tokens) < 1e-6;
    if (whole && r != 0 && fmod(r, 1048576.0) == 0)
        snprintf(out, cap, "%.0fM", r / 1048576.0);
    else if (whole && r != 0 && fmod(r, 1024.0) == 0)
        snprintf(out, cap, "%.0fK", r / 1024.0);
    else if (whole)
        snprintf(out, cap, "%.0f", r);
    else
        snprintf(out, cap, "%.1f", tokens);
}

/* Inserts text ins (n bytes) at position at of text, if it fits cap. */
static int insert_at(char *text, size_t cap, size_t at, const char *ins, size_t n)
{
    size_t len = strlen(text);
    if (len + n >= cap)
        return 0;
    memmove(text + at + n, text + at, len - at + 1); /* with the terminator */
    memcpy(text + at, ins, n);
    return 1;
}

void qk_plot_typeset(char *text, size_t cap)
{
    static const char minus[] = "\xe2\x88\x92"; /* U+2212 */
    for (size_t i = 0; text[i]; i++) {
        if (text[i] == '-' && i > 0 && text[i - 1] == ' ' && text[i + 1] == ' ') {
            if (!insert_at(text, cap, i + 1, minus + 1, 2))
                break;
            text[i] = minus[0];
            i += 2;
        } else if (text[i] == '%' && i > 0 && isdigit((unsigned char)text[i - 1])) {
            if (!insert_at(text, cap, i, " ", 1))
                break;
            i++;
        }
    }
}

void qk_plot_label_text(char *text, size_t cap)
{
    qk_plot_typeset(text, cap);
    if (islower((unsigned char)text[0]))
        text[0] = (char)toupper((unsigned char)text[0]);
}

char *qk_plot_percent(char *out, size_t cap, double value, int decimals)
{
    return qk_plot_format(out, cap, "%.*f %%", decimals, value);
}
