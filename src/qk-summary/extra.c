/* Section "extra": the models analysed beside the cross-model study (the
 * registry's study "extra": Llama-3.1-8B and Mistral-7B-v0.2 in the thesis)
 * against their published RULER scores per context length
 * (spec/plasticity.md 12.5). Their plasticity scalars, the AP at each RULER
 * length beside the published score, and two cases chosen by rule: the
 * first model whose captures reach the longest RULER length ("covered": do
 * AP and RULER fall together?) and the first whose captures end before it
 * ("truncated": the lengths where a benchmark can fail and plasticity has
 * no data). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/plasticity_tables.h"
#include "qk/plot.h"
#include "qk/stats.h"
#include "summary.h"

#define AP "number.3"
#define RULER "number.1"
#define BENCHMARK "ruler"

/* The lengths of the per-length tables: those of the RULER paper's table. */
static const double ruler_lengths[] = {4096, 8192, 16384, 32768, 65536, 131072};
static const char *const length_fields[] = {"l4k", "l8k", "l16k", "l32k", "l64k", "l128k"};
#define N_LENGTHS (int)(sizeof ruler_lengths / sizeof ruler_lengths[0])

static const qk_key extra_keys[] = {
    {"extra.models", "count", "models of the extra study"},
    {"extra.heads", "count", "query heads of the extra study"},
    {"extra.scored", "count", "extra models with published per-length RULER scores"},
    {"extra.covered.label", "text", "the first scored model whose captures reach the longest RULER length"},
    {"extra.covered.length_first", "text", "the shortest RULER length where it has an AP (K = 1024 tokens)"},
    {"extra.covered.length_last", "text", "the longest RULER length where it has an AP (K = 1024 tokens)"},
    {"extra.covered.ruler_first", RULER, "its published RULER score at the first of them"},
    {"extra.covered.ruler_last", RULER, "its published RULER score at the last of them"},
    {"extra.covered.ruler_change_pct", "change.1", "change of its RULER score from the first to the last of them (%)"},
    {"extra.covered.ap_first", AP, "its AP at the first of them"},
    {"extra.covered.ap_last", AP, "its AP at the last of them"},
    {"extra.covered.ap_change_pct", "change.1", "change of its AP from the first to the last of them (%)"},
    {"extra.covered.r_ruler_ap", "signed.2", "Pearson r of AP and RULER score over the lengths"},
    {"extra.truncated.label", "text", "the first scored model whose captures end before the longest RULER length"},
    {"extra.truncated.context", "text", "its captured context (K = 1024 tokens)"},
    {"extra.truncated.length_captured", "text", "the longest RULER length its captures reach"},
    {"extra.truncated.ruler_captured", RULER, "its published RULER score at that length"},
    {"extra.truncated.ap_captured", AP, "its AP at that length"},
    {"extra.truncated.length_last", "text", "the longest RULER length"},
    {"extra.truncated.ruler_last", RULER, "its published RULER score at the longest length"},
    {"extra.truncated.lengths_beyond", "count", "RULER lengths beyond its captures"},
    {NULL, NULL, NULL}};

static const qk_key model_fields[] = {
    {"label", "text", "model"},
    {"heads", "count", "query heads"},
    {"context", "count", "captured context length (tokens)"},
    {"ap", AP, "ap_overall"},
    {"ap_first", AP, "AP over the first 20 % of positions"},
    {"ap_last", AP, "AP over the last 20 % of positions"},
    {"ap_drop", AP, "AP_drop, first minus last 20 %"},
    {"ruler_mean", RULER, "mean published RULER score over its lengths (not computed here)"},
    {"lengths", "count", "RULER lengths with an AP (inside the captured context)"},
    {"r_ruler_ap", "signed.2", "Pearson r of AP and RULER score over those lengths"},
    {NULL, NULL, NULL}};

static const qk_key ruler_fields[] = {
    {"label", "text", "model"},
    {"l4k", RULER, "published RULER score at 4K tokens"},
    {"l8k", RULER, "published RULER score at 8K tokens"},
    {"l16k", RULER, "published RULER score at 16K tokens"},
    {"l32k", RULER, "published RULER score at 32K tokens"},
    {"l64k", RULER, "published RULER score at 64K tokens"},
    {"l128k", RULER, "published RULER score at 128K tokens"},
    {NULL, NULL, NULL}};

static const qk_key aplen_fields[] = {
    {"label", "text", "model"},
    {"l4k", AP, "AP of the bins in [0, 4K)"},
    {"l8k", AP, "AP of the bins in [0, 8K)"},
    {"l16k", AP, "AP of the bins in [8K, 16K)"},
    {"l32k", AP, "AP of the bins in [16K, 32K)"},
    {"l64k", AP, "AP of the bins in [32K, 64K)"},
    {"l128k", AP, "AP of the bins in [64K, 128K)"},
    {NULL, NULL, NULL}};

/* One model beside its published scores. */
typedef struct scored {
    const plast_model *m;
    double score[N_LENGTHS]; /* published RULER score, NAN where none */
    double ap[N_LENGTHS];    /* AP at the length, NAN beyond the captures */
    int n_scored, n_both;
} scored;

static void score_model(const plast_model *m, const qk_src *bench, const qk_src *profile,
                        scored *s)
{
    double length[64], score[64];
    int n = plast_published_lengths(bench, m->id, BENCHMARK, length, score, 64);
    s->m = m;
    s->n_scored = s->n_both = 0;
    for (int i = 0; i < N_LENGTHS; i++) {
        s->score[i] = NAN;
        for (int k = 0; k < n; k++)
            if (length[k] == ruler_lengths[i])
                s->score[i] = score[k];
        int bins = 0;
        s->ap[i] = profile ? plast_ap_at_length(profile, m->id, ruler_lengths[i], &bins) : NAN;
        s->n_scored += isfinite(s->score[i]);
        s->n_both += isfinite(s->score[i]) && isfinite(s->ap[i]);
    }
}

/* Pearson r of AP and score over the lengths that have both. */
static double ruler_ap_r(const scored *s)
{
    double x[N_LENGTHS], y[N_LENGTHS];
    int n = 0;
    for (int i = 0; i < N_LENGTHS; i++)
        if (isfinite(s->score[i]) && isfinite(s->ap[i]))
            x[n] = s->ap[i], y[n] = s->score[i], n++;
    return n >= 3 ? qk_pearson(x, y, n) : NAN;
}

static double change_pct(double from, double to) { return 100.0 * (to - from) / from; }

static void length_text(qk_numbers *w, const char *key, double tokens)
{
    char text[32];
    qk_plot_tokens(tokens, text, sizeof text);
    qk_numbers_set_text(w, key, "%s", text);
}

/* The first and last lengths with both a score and an AP. */
static void both_ends(const scored *s, int *a, int *b)
{
    *a = *b = -1;
    for (int i = 0; i < N_LENGTHS; i++)
        if (isfinite(s->score[i]) && isfinite(s->ap[i])) {
            if (*a < 0)
                *a = i;
            *b = i;
        }
}

/* The inputs of the section: the extra study's model report and model
 * profile, and the published scores. */
typedef struct inputs {
    const qk_src *report, *profile, *bench;
} inputs;

/* What the AP at a RULER length is (plast_ap_at_length). */
#define AP_AT_LENGTH                                                                         \
    "the unweighted mean ap of the model's bins whose bin_centre lies in [length/2, length), " \
    "or in [0, length) up to 8K"

static void covered_values(qk_numbers *w, const scored *s, const inputs *in)
{
    int a, b;
    both_ends(s, &a, &b);
    const char *rows = "the first scored model whose context_length reaches 128K and that "
                       "has an AP and a score at two lengths at least";
    sum_source(w, in->report, "model, context_length; label from the registry", rows,
               "its label");
    qk_numbers_set_text(w, "extra.covered.label", "%s", s->m->label);
    sum_source(w, in->bench, "length, score", "the model's rows of benchmark ruler",
               "the shortest and longest length with a score and an AP, as K tokens; their "
               "published scores; change from the first to the last (%)");
    length_text(w, "extra.covered.length_first", ruler_lengths[a]);
    length_text(w, "extra.covered.length_last", ruler_lengths[b]);
    qk_numbers_set(w, "extra.covered.ruler_first", s->score[a]);
    qk_numbers_set(w, "extra.covered.ruler_last", s->score[b]);
    qk_numbers_set(w, "extra.covered.ruler_change_pct", change_pct(s->score[a], s->score[b]));
    sum_source(w, in->profile, "ap, bin_centre", "the model's bins",
               "at the first and the last of those lengths " AP_AT_LENGTH
               "; change from the first to the last (%)");
    qk_numbers_set(w, "extra.covered.ap_first", s->ap[a]);
    qk_numbers_set(w, "extra.covered.ap_last", s->ap[b]);
    qk_numbers_set(w, "extra.covered.ap_change_pct", change_pct(s->ap[a], s->ap[b]));
    const qk_src *both[2] = {in->profile, in->bench};
    sum_source_tables(w, both, 2, "ap, bin_centre; length, score",
                      "the model's bins and its rows of benchmark ruler",
                      "Pearson r of the AP at a length (" AP_AT_LENGTH ") and the published "
                      "score, over the lengths with both (three at least)");
    qk_numbers_set(w, "extra.covered.r_ruler_ap", ruler_ap_r(s));
}

static void truncated_values(qk_numbers *w, const scored *s, const inputs *in)
{
    int captured = -1, beyond = 0;
    for (int i = 0; i < N_LENGTHS; i++) {
        if (isfinite(s->ap[i]))
            captured = i;
        else if (isfinite(s->score[i]) && ruler_lengths[i] > s->m->context)
            beyond++;
    }
    const char *rows = "the first scored model whose context_length ends before 128K";
    sum_source(w, in->report, "model, context_length; label from the registry", rows,
               "its label and context_length (K tokens)");
    qk_numbers_set_text(w, "extra.truncated.label", "%s", s->m->label);
    length_text(w, "extra.truncated.context", s->m->context);
    if (captured >= 0) {
        sum_source(w, in->profile, "ap, bin_centre", "the model's bins",
                   "the longest RULER length with an AP (K tokens) and the AP there: "
                   AP_AT_LENGTH);
        length_text(w, "extra.truncated.length_captured", ruler_lengths[captured]);
        qk_numbers_set(w, "extra.truncated.ap_captured", s->ap[captured]);
        sum_source(w, in->bench, "length, score", "the model's rows of benchmark ruler",
                   "the published score at the longest RULER length with an AP");
        qk_numbers_set(w, "extra.truncated.ruler_captured", s->score[captured]);
    }
    sum_source(w, in->bench, "length, score", "the model's rows of benchmark ruler",
               "the published score at 128K, the longest RULER length (length_last)");
    length_text(w, "extra.truncated.length_last", ruler_lengths[N_LENGTHS - 1]);
    qk_numbers_set(w, "extra.truncated.ruler_last", s->score[N_LENGTHS - 1]);
    const qk_src *both[2] = {in->report, in->bench};
    sum_source_tables(w, both, 2, "context_length; length, score",
                      "the model's row and its rows of benchmark ruler",
                      "RULER lengths with a score beyond context_length counted");
    qk_numbers_set(w, "extra.truncated.lengths_beyond", beyond);
}

static void write_model(qk_numbers *w, const int tables[3], const scored *s, const inputs *in)
{
    const plast_model *m = s->m;
    int rec = qk_numbers_record(w, "extra.model", m->id, model_fields, m->label);
    sum_source(w, in->report, "heads n_heads, context context_length, ap ap_overall, ap_first "
               "ap_first_20pct, ap_last ap_last_20pct, ap_drop ap_drop; label from the registry",
               "the model's row", "as written");
    qk_numbers_field_text(w, rec, "label", "%s", m->label);
    qk_numbers_field(w, rec, "heads", m->n_heads);
    qk_numbers_field(w, rec, "context", m->context);
    qk_numbers_field(w, rec, "ap", m->ap);
    qk_numbers_field(w, rec, "ap_first", m->first);
    qk_numbers_field(w, rec, "ap_last", m->last);
    qk_numbers_field(w, rec, "ap_drop", m->drop);
    double sum = 0.0;
    for (int i = 0; i < N_LENGTHS; i++)
        sum += isfinite(s->score[i]) ? s->score[i] : 0.0;
    sum_source(w, in->bench, "length, score", "the model's rows of benchmark ruler at the "
               "lengths of the RULER table (4K ... 128K)", "mean of the published scores");
    qk_numbers_field(w, rec, "ruler_mean", s->n_scored ? sum / s->n_scored : NAN);
    const qk_src *both[2] = {in->profile, in->bench};
    sum_source_tables(w, both, 2, "ap, bin_centre; length, score",
                      "the model's bins and its rows of benchmark ruler",
                      "lengths: RULER lengths with a score and an AP (" AP_AT_LENGTH ") counted; "
                      "r_ruler_ap: Pearson r of the two over those lengths (three at least)");
    qk_numbers_field(w, rec, "lengths", s->n_both);
    qk_numbers_field(w, rec, "r_ruler_ap", ruler_ap_r(s));
    qk_numbers_row(w, tables[0], m->id);
    if (!s->n_scored)
        return;
    int ruler = qk_numbers_record(w, "extra.ruler", m->id, ruler_fields, m->label);
    int aplen = qk_numbers_record(w, "extra.aplen", m->id, aplen_fields, m->label);
    sum_source(w, in->bench, "length, score; label from the registry",
               "the model's row of benchmark ruler at the field's length",
               "as written (published, not computed here)");
    qk_numbers_field_text(w, ruler, "label", "%s", m->label);
    for (int i = 0; i < N_LENGTHS; i++)
        qk_numbers_field(w, ruler, length_fields[i], s->score[i]);
    sum_source(w, in->profile, "ap, bin_centre; label from the registry", "the model's bins",
               AP_AT_LENGTH " of the field");
    qk_numbers_field_text(w, aplen, "label", "%s", m->label);
    for (int i = 0; i < N_LENGTHS; i++)
        qk_numbers_field(w, aplen, length_fields[i], s->ap[i]);
    qk_numbers_row(w, tables[1], m->id);
    qk_numbers_row(w, tables[2], m->id);
}

static void make_tables(qk_numbers *w, int tables[3])
{
    static const char *const model_cols[][2] = {
        {"label", "Model"}, {"context", "Captured context"}, {"heads", "Heads"},
        {"ap", "AP overall"}, {"ap_first", "AP<sub>first 20&nbsp;%</sub>"},
        {"ap_last", "AP<sub>last 20&nbsp;%</sub>"},
        {"ap_drop", "AP<sub>drop</sub>"}, {"ruler_mean", "RULER mean (published)"}};
    static const char *const headers[N_LENGTHS] = {"4K", "8K", "16K", "32K", "64K", "128K"};
    tables[0] = qk_numbers_table(w, "extra.models", "extra.model",
                                 "Plasticity of the extra models beside their published RULER average");
    for (size_t i = 0; i < sizeof model_cols / sizeof model_cols[0]; i++)
        qk_numbers_column(w, tables[0], model_cols[i][0], model_cols[i][1]);
    tables[1] = qk_numbers_table(w, "extra.ruler", "extra.ruler",
                                 "Published RULER scores by context length (RULER paper; not computed here)");
    tables[2] = qk_numbers_table(w, "extra.aplen", "extra.aplen",
                                 "Attention plasticity at the same lengths (the doubling range ending there)");
    for (int t = 1; t <= 2; t++) {
        qk_numbers_column(w, tables[t], "label", "Model");
        for (int i = 0; i < N_LENGTHS; i++)
            qk_numbers_column(w, tables[t], length_fields[i], headers[i]);
    }
}

void sum_extra(sum_ctx *ctx)
{
    const qk_src *registry = sum_input(ctx, "registry"), *report = sum_input(ctx, "report");
    const qk_src *bench = sum_input(ctx, "benchmarks"), *profile = sum_input(ctx, "profile");
    qk_numbers *w = ctx->out;
    qk_numbers_declare(w, extra_keys);
    int tables[3];
    make_tables(w, tables);
    if (!report)
        return;
    plast_table t;
    plast_table_load(&t, report, registry, bench);
    const inputs in = {report, profile, bench};
    int heads = 0, n_scored = 0, covered = 0, truncated = 0;
    for (int i = 0; i < t.n_models; i++) {
        scored s;
        score_model(&t.models[i], bench, profile, &s);
        heads += t.models[i].n_heads;
        write_model(w, tables, &s, &in);
        if (!s.n_scored)
            continue;
        n_scored++;
        int reaches = t.models[i].context >= ruler_lengths[N_LENGTHS - 1];
        if (!covered && reaches && s.n_both >= 2)
            covered = 1, covered_values(w, &s, &in);
        else if (!truncated && !reaches)
            truncated = 1, truncated_values(w, &s, &in);
    }
    sum_source(w, report, "model", "every model of the extra study (one row each)",
               "rows counted");
    qk_numbers_set(w, "extra.models", t.n_models);
    sum_source(w, report, "n_heads", "every model of the extra study", "sum");
    qk_numbers_set(w, "extra.heads", heads);
    sum_source(w, bench, "score", "the rows of benchmark ruler of the extra study's models",
               "models with a score at a RULER length counted");
    qk_numbers_set(w, "extra.scored", n_scored);
    plast_table_free(&t);
}
