/* The figures whose image differs: both PNGs side by side in the page and
 * an image of where their pixels differ (libpng). */
#include <png.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "qk/cli.h"

typedef struct image {
    png_image info;
    png_bytep pixels; /* RGBA, 8 bits a channel */
} image;

static int read_png(const char *path, image *im)
{
    memset(im, 0, sizeof *im);
    im->info.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&im->info, path))
        return -1;
    im->info.format = PNG_FORMAT_RGBA;
    im->pixels = qk_malloc(PNG_IMAGE_SIZE(im->info));
    if (!png_image_finish_read(&im->info, NULL, im->pixels, 0, NULL)) {
        free(im->pixels);
        im->pixels = NULL;
        return -1;
    }
    return 0;
}

/* The difference image: A faded to light grey where the pixels agree,
 * red where they differ. Returns the pixels that differ. */
static long difference(const image *a, const image *b, png_bytep out)
{
    long n = 0, size = (long)a->info.width * a->info.height;
    for (long i = 0; i < size; i++) {
        const png_byte *p = a->pixels + 4 * i, *q = b->pixels + 4 * i;
        png_bytep d = out + 4 * i;
        if (memcmp(p, q, 4) != 0) {
            d[0] = 220, d[1] = 20, d[2] = 20, d[3] = 255;
            n++;
        } else {
            int grey = (p[0] + p[1] + p[2]) / 3;
            d[0] = d[1] = d[2] = (png_byte)(255 - (255 - grey) / 5);
            d[3] = 255;
        }
    }
    return n;
}

static void copy_file(const char *from, const char *to)
{
    uint8_t *data;
    size_t len;
    qk_err err;
    if (qk_read_file(from, &data, &len, &err) != 0)
        qk_die(QK_EXIT_DATA, from, "%s", err.msg);
    qk_atomic out;
    qk_output_open(&out, to);
    fwrite(data, 1, len, out.fp);
    qk_output_commit(&out);
    free(data);
}

/* A figure's folder ("figures/qk-pca/05_explained_variance") in the page's
 * folder: its two images and their difference; returns the pixels that
 * differ (-1: the sizes differ or an image cannot be read). */
static long compare_figure(const char *fa, const char *fb, const char *folder, diff_out *o,
                           char *note, size_t note_size)
{
    char *dir = qk_path_join(o->dir, folder);
    qk_err err;
    if (qk_mkdirs(dir, &err) != 0)
        qk_die(QK_EXIT_DATA, dir, "%s", err.msg);
    char *to_a = qk_path_join(dir, "a.png"), *to_b = qk_path_join(dir, "b.png");
    char *to_d = qk_path_join(dir, "difference.png");
    copy_file(fa, to_a);
    copy_file(fb, to_b);
    image a, b;
    long n = -1;
    if (read_png(fa, &a) != 0 || read_png(fb, &b) != 0) {
        snprintf(note, note_size, "an image cannot be read");
    } else if (a.info.width != b.info.width || a.info.height != b.info.height) {
        snprintf(note, note_size, "sizes differ: %ux%u and %ux%u", a.info.width, a.info.height,
                 b.info.width, b.info.height);
    } else {
        png_bytep d = qk_malloc(PNG_IMAGE_SIZE(a.info));
        n = difference(&a, &b, d);
        png_image w = a.info;
        if (!png_image_write_to_file(&w, to_d, 0, d, 0, NULL))
            qk_die(QK_EXIT_DATA, to_d, "cannot write: %s", w.message);
        free(d);
        snprintf(note, note_size, "%ld of %ld pixels differ (%.2f%%)", n,
                 (long)a.info.width * a.info.height,
                 100.0 * (double)n / ((double)a.info.width * a.info.height));
    }
    free(a.pixels);
    free(b.pixels);
    free(dir);
    free(to_a);
    free(to_b);
    free(to_d);
    return n;
}

static void html_figure(diff_out *o, const char *folder, const char *note, int has_difference)
{
    fputs("<h3>", o->html);
    qk_html_text(o->html, folder);
    fputs("</h3>\n<p>", o->html);
    qk_html_text(o->html, note);
    fputs("</p>\n<div class=fig>", o->html);
    const char *names[] = {"a.png", "b.png", "difference.png"};
    const char *captions[] = {"A", "B", "difference (red: pixels that differ)"};
    for (int i = 0; i < (has_difference ? 3 : 2); i++) {
        fprintf(o->html, "<figure><img src=\"%s/%s\" alt=\"%s\"><figcaption>%s</figcaption>"
                "</figure>", folder, names[i], captions[i], captions[i]);
    }
    fputs("</div>\n", o->html);
}

void diff_figures(const diff_side *a, const diff_side *b, diff_out *o)
{
    diff_html_section(o, "figures", "Figures whose image differs");
    if (!a->root || !b->root)
        return;
    int na, nb, shown = 0, n = 0;
    char **la = diff_list_files(a->root, "figures", "figure.png", &na);
    char **lb = diff_list_files(b->root, "figures", "figure.png", &nb);
    o->heading = "figures whose image differs:";
    for (int i = 0, j = 0; i < na || j < nb;) {
        int c = i >= na ? 1 : j >= nb ? -1 : strcmp(la[i], lb[j]);
        const char *rel = c <= 0 ? la[i] : lb[j];
        char folder[1024];
        snprintf(folder, sizeof folder, "%.*s", (int)(strrchr(rel, '/') - rel), rel);
        if (c) {
            diff_say(o, &shown, "  %s: only in %s", folder, c < 0 ? "A" : "B");
            fprintf(o->html, "<p>%s: only in %s</p>\n", folder, c < 0 ? "A" : "B");
            n++;
            c < 0 ? i++ : j++;
            continue;
        }
        char *fa = qk_path_join(a->root, rel), *fb = qk_path_join(b->root, rel);
        if (!qk_same_file(fa, fb)) {
            char note[160];
            long pixels = compare_figure(fa, fb, folder, o, note, sizeof note);
            diff_say(o, &shown, "  %s: %s", folder, note);
            html_figure(o, folder, note, pixels >= 0);
            n++;
        }
        free(fa);
        free(fb);
        i++, j++;
    }
    if (!n)
        fputs("<p>None: every figure.png is the same.</p>\n", o->html);
    diff_say_rest(o, &shown, "more figures");
    o->heading = NULL;
    o->differences += n;
    diff_free_list(la, na);
    diff_free_list(lb, nb);
}
