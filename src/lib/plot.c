/* gnuplot driving (include/qk/plot.h). */
#include "qk/plot.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

void qk_plot_quoted(qk_plot *p, const char *text)
{
    fputc('"', p->mem);
    for (; *text; text++) {
        if (*text == '"' || *text == '\\')
            fputc('\\', p->mem);
        fputc(*text, p->mem);
    }
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
                    "#   gnuplot -e 'set terminal pngcairo size %d,%d; set output \"x.png\"' figure.gp\n",
            p->width, p->height);
    if (style_path) {
        uint8_t *style;
        size_t n;
        if (qk_read_file(style_path, &style, &n, err) != 0) {
            qk_atomic_abort(&out);
            return -1;
        }
        fwrite(style, 1, n, out.fp);
        free(style);
    }
    fwrite(p->script, 1, p->len, out.fp);
    return qk_atomic_commit(&out, err);
}

/* Runs gnuplot on the saved script for both terminals, into temporaries. */
static int run_gnuplot(const qk_plot *p, const char *gp, const char *png, const char *svg,
                       qk_err *err)
{
    FILE *pipe = popen("gnuplot", "w");
    if (!pipe)
        return qk_fail(err, "cannot start gnuplot: %s", strerror(errno));
    fprintf(pipe,
            "set terminal pngcairo size %d,%d font \"DejaVu Sans,10\" enhanced\n"
            "set output \"%s\"\nload \"%s\"\nunset output\nreset\n"
            "set terminal svg size %d,%d font \"DejaVu Sans,10\" enhanced fontscale 1.3333\n"
            "set output \"%s\"\nload \"%s\"\nunset output\n",
            p->width, p->height, png, gp, p->width, p->height, svg, gp);
    int status = pclose(pipe);
    if (status != 0)
        return qk_fail(err, "gnuplot failed on %s (status %d)", gp, status);
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

static int check_complete(const char *png, const char *svg, const char *dir, qk_err *err)
{
    static const char png_end[] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', (char)0xae, 0x42, 0x60,
                                   (char)0x82};
    if (!ends_with(png, png_end, sizeof png_end, 0) || !ends_with(svg, "</svg>", 6, 1))
        return qk_fail(err, "cannot write the figure in %s: gnuplot's output is incomplete "
                            "(disk full or file size limit)", dir);
    return 0;
}

int qk_plot_render(qk_plot *p, const char *dir, const char *style_path, qk_err *err)
{
    fclose(p->mem);
    p->mem = NULL;
    int rc = qk_mkdirs(dir, err);
    char *gp = qk_path_join(dir, "figure.gp");
    char *png = qk_path_join(dir, "figure.png"), *svg = qk_path_join(dir, "figure.svg");
    char *png_tmp = qk_path_join(dir, ".figure.png.tmp"), *svg_tmp = qk_path_join(dir, ".figure.svg.tmp");
    if (rc == 0)
        rc = write_script(p, gp, style_path, err);
    if (rc == 0)
        rc = run_gnuplot(p, gp, png_tmp, svg_tmp, err);
    if (rc == 0)
        rc = check_complete(png_tmp, svg_tmp, dir, err);
    if (rc == 0 && (rename(png_tmp, png) != 0 || rename(svg_tmp, svg) != 0))
        rc = qk_fail(err, "cannot write %s: %s", dir, strerror(errno));
    if (rc != 0) {
        unlink(png_tmp);
        unlink(svg_tmp);
    }
    free(gp);
    free(png);
    free(svg);
    free(png_tmp);
    free(svg_tmp);
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
