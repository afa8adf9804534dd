/* The dataset registry and qkreport.conf parsing. */
#include <stdio.h>
#include <string.h>

#include "qk/registry.h"
#include "testutil.h"

START_TEST(registry_lists_the_23_datasets)
{
    qk_registry reg;
    qk_err err;
    ck_assert_msg(qk_registry_load("workflow/datasets.tsv", &reg, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(reg.n, 23);
    int per_study[3] = {0, 0, 0};
    for (int i = 0; i < reg.n; i++) {
        const qk_dataset *d = &reg.items[i];
        per_study[0] += strcmp(d->study, "attention_plasticity") == 0;
        per_study[1] += strcmp(d->study, "smollm3_training_progress") == 0;
        per_study[2] += strcmp(d->study, "extra") == 0;
        ck_assert_int_eq(d->n_q_heads % d->n_kv_heads, 0);
        ck_assert_int_eq(d->context_length / d->bucket_size, strcmp(d->id, "mistral-v0.2-7b") ? 16 : 4);
    }
    ck_assert_int_eq(per_study[0], 11);
    ck_assert_int_eq(per_study[1], 10);
    ck_assert_int_eq(per_study[2], 2);
    /* GQA groups come from the shape (n_q_heads / n_kv_heads), not from a table */
    ck_assert_int_eq(qk_dataset_group(qk_registry_find(&reg, "llama3.2-3b")), 3);
    ck_assert_int_eq(qk_dataset_group(qk_registry_find(&reg, "qwen3-14b")), 5);
    ck_assert_int_eq(qk_dataset_group(qk_registry_find(&reg, "qwen3-0.6b")), 2);
    ck_assert_int_eq(qk_dataset_kv_head(qk_registry_find(&reg, "qwen3-14b"), 39), 7);
    const qk_dataset *v = qk_registry_find(&reg, "llama3.2-11b");
    ck_assert_int_eq(v->cross[3] + v->cross[8] + v->cross[38], 3);
    ck_assert_int_eq(v->cross[4], 0);
    const qk_dataset *s = qk_registry_find(&reg, "smollm3-3b-lc-32k-to-64k-step-20000");
    ck_assert_int_eq(s->bucket_size, 4096);
    ck_assert_int_eq(s->nope[35], 1);
    ck_assert_int_eq(s->nope[34], 0);
    ck_assert(s->rope_theta == 5e6);
    ck_assert_ptr_null(qk_registry_find(&reg, "gpt2"));
    qk_registry_free(&reg);
}
END_TEST

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(text, fp);
    fclose(fp);
}

START_TEST(conf_describes_an_unlisted_model)
{
    qk_mkdirs("build/tests/tmp", NULL);
    const char *path = "build/tests/tmp/qkreport.conf";
    write_text(path, "# a model the registry lacks\nid = tiny\nn_layers = 2\n"
                     "n_q_heads = 6\nn_kv_heads = 2\nhead_dim = 16\n"
                     "context_length = 4096\nbucket_size = 256\nrope_theta = 10000\n"
                     "nope_layers = 1\n");
    qk_dataset d;
    memset(&d, 0, sizeof d);
    qk_err err;
    ck_assert_msg(qk_dataset_conf_load(path, &d, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(qk_dataset_validate(&d, &err), 0);
    ck_assert_str_eq(d.id, "tiny");
    ck_assert_int_eq(qk_dataset_group(&d), 3);
    ck_assert_int_eq(d.nope[1], 1);

    write_text(path, "n_layers = two\n");
    ck_assert_int_eq(qk_dataset_conf_load(path, &d, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "n_layers"));
    write_text(path, "colour = blue\n");
    ck_assert_int_eq(qk_dataset_conf_load(path, &d, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown key 'colour'"));
    /* text of the file in a message: control bytes escaped, one printable line */
    write_text(path, "col\033[2Jour\r = blue\x01\n");
    ck_assert_int_eq(qk_dataset_conf_load(path, &d, &err), -1);
    ck_assert_str_eq(err.msg, "line 1: unknown key 'col\\x1b[2Jour\\x0d'");
    /* a line longer than the parser reads at once is an error: its tail
     * (here "n_layers = 99") must not be read as a line of its own */
    char long_line[1100];
    memset(long_line, '#', sizeof long_line);
    memcpy(long_line + 1023, "n_layers = 99\n", 15);
    write_text(path, long_line);
    d.n_layers = 2;
    ck_assert_int_eq(qk_dataset_conf_load(path, &d, &err), -1);
    ck_assert_str_eq(err.msg, "line 1: longer than 1023 bytes");
    ck_assert_int_eq(d.n_layers, 2);
    memset(long_line, '#', 1022);
    memcpy(long_line + 1022, "\nn_layers = 3\n", 15); /* 1022 bytes and '\n': fits */
    write_text(path, long_line);
    ck_assert_msg(qk_dataset_conf_load(path, &d, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(d.n_layers, 3);
    /* a layer list longer than the parser's buffer is refused, not cut */
    char list[700] = "nope_layers = ";
    for (int i = 0; strlen(list) < 600; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%d,", i % 100);
    strcat(list, "127\n");
    write_text(path, list);
    ck_assert_int_eq(qk_dataset_conf_load(path, &d, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "line 1: nope_layers takes layer numbers below 128, "
                                          "comma-separated, or -, not '0,1,2,"));
    d.n_kv_heads = 4;
    ck_assert_int_eq(qk_dataset_validate(&d, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a multiple"));
}
END_TEST

/* Each kind of wrong line of a qkreport.conf: one message naming its line
 * (qk-load prefixes the file). */
START_TEST(conf_check_names_the_wrong_line)
{
    static const struct {
        const char *line, *msg;
    } cases[] = {
        {"n_layers 28", "expected 'key = value'"},
        {"colour = blue", "unknown key 'colour'"},
        {"label =", "label is empty"},
        {"family =   ", "family is empty"},
        {"label = My\tModel", "label holds a control character"},
        {"label = My\x7fModel", "label holds a control character"},
        {"label = My\xc2\x85Model", "label holds a control character"}, /* U+0085, C1 */
        {"label = My\x1b[2JModel", "label holds a control character"},
        {"label = caf\xe9", "label is not valid UTF-8"},           /* Latin-1 */
        {"label = \xc0\xaf", "label is not valid UTF-8"},          /* overlong '/' */
        {"label = \xed\xa0\x80", "label is not valid UTF-8"},      /* a surrogate */
        {"label = \xe2\x82", "label is not valid UTF-8"},          /* cut short */
        {"n_layers = 28.5", "n_layers takes a whole number, 1 or more, not '28.5'"},
        {"context_length = 8K", "context_length takes a whole number, 1 or "
                                "more, not '8K'"},
        {"n_q_heads = 0", "n_q_heads takes a whole number, 1 or more, not '0'"},
        {"rope_theta = fast", "rope_theta takes a number, 0 or more, not 'fast'"},
        {"nope_layers = 3,x", "nope_layers takes layer numbers below 128, "
                              "comma-separated, or -, not '3,x'"},
        {"label = 012345678901234567890",
         "label is longer than 20 characters (figures draw it in legends and on axes)"},
        /* 20 characters of four bytes each: within 20 characters, not within 63 bytes */
        {"label = \xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
         "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
         "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
         "\xf0\x9f\x98\x80\xf0\x9f\x98\x80",
         "label is longer than 63 bytes"},
    };
    qk_mkdirs("build/tests/tmp", NULL);
    const char *path = "build/tests/tmp/qkreport.conf";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256], want[256];
        snprintf(text, sizeof text, "# line 1\nfamily = mine\n%s\nn_layers = 2\n", cases[i].line);
        write_text(path, text);
        qk_err err;
        ck_assert_int_eq(qk_dataset_conf_check(path, &err), -1);
        snprintf(want, sizeof want, "line 3: %s", cases[i].msg);
        ck_assert_str_eq(err.msg, want);
    }
    /* any printable UTF-8 is a label (of at most 20 characters): quotes,
     * markup of HTML, Markdown, LaTeX and gnuplot, and letters beyond
     * ASCII; blanks around it are not part of it (a tab among them too) */
    const char *odd[] = {"<b>My</b> & \"Model\"", "'x' 50% $x_1$ {a}#^~",
                         "\\|*`@ \xc3\xa9\xe2\x86\x92\xf0\x9f\x99\x82"};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "label\t=  %s \t\r\nfamily = f\xc3\xbcr\n", odd[i]);
        write_text(path, text);
        qk_dataset d;
        memset(&d, 0, sizeof d);
        qk_err err;
        ck_assert_msg(qk_dataset_conf_check(path, &err) == 0, "%s", err.msg);
        ck_assert_msg(qk_dataset_conf_load(path, &d, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(d.label, odd[i]);
        ck_assert_str_eq(d.family, "f\xc3\xbcr");
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, registry_lists_the_23_datasets);
    tcase_add_test(tc, conf_describes_an_unlisted_model);
    tcase_add_test(tc, conf_check_names_the_wrong_line);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
