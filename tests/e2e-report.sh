#!/bin/bash
# qk-report: values, tables, aggregates, filters, includes and {{if}} blocks
# render from the pipeline's files; numbers files are typeset by their kinds
# the same way on the page, in numbers.tex and in the LaTeX tables; and a
# template that references anything no stage produced fails with one line
# naming the template, the line and the name.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

T=build/tests/tmp/report
rm -rf "$T" && mkdir -p "$T"
printf 'answer\t42\nshare\t0.1234\n' > "$T/values.tsv"
printf 'model\tn\tbytes\nA\t2\t1500000\nB\t3\t2500000\n' > "$T/t.tsv"
printf '<p>{{answer}} {{share|pct1}} {{share|f2}}</p>\n' > "$T/part.html.in"
cat > "$T/page.html.in" <<'TPL'
<h1>{{title}}</h1>
{{count:t}} rows, {{sum:t.n}} heads, {{sum:t.bytes|mb}} MB, {{sum:t.bytes|int}} bytes
{{include:build/tests/tmp/report/part.html.in}}
{{table:t}}
TPL
run bin/qk-report --template "$T/page.html.in" --output "$T/page.html" --values "$T/values.tsv" \
    --table t="$T/t.tsv" --set 'title=A & B'
expect_status 0 "render"
for want in '<h1><span data-qv="title">A &amp; B</span></h1>' \
            '<span data-qv="count:t">2</span> rows, <span data-qv="sum:t.n">5</span> heads' \
            '<span data-qv="sum:t.bytes">4.0</span> MB, <span data-qv="sum:t.bytes">4,000,000</span> bytes' \
            '<p><span data-qv="answer">42</span> <span data-qv="share">12.3</span> <span data-qv="share">0.12</span></p>' \
            '<td class="num">1500000</td>'; do
    if grep -qF -- "$want" "$T/page.html"; then ok; else bad "page has '$want'"; fi
done

# Markdown: a value goes into the text as it is (a command in a code block
# reads as typed); '|' is escaped in table cells only
printf 'cmd\tx|y\n' > "$T/pipe.tsv"
printf '```sh\nmake {{cmd}}\n```\n\n{{table:p}}\n' > "$T/pipe.md.in"
run bin/qk-report --markdown --template "$T/pipe.md.in" --output "$T/pipe.md" \
    --table p="$T/pipe.tsv" --set 'cmd=report DATA=/d/a|b'
expect_status 0 "Markdown render with '|' in a value"
expect_same "$(sed -n 2p "$T/pipe.md")" "make report DATA=/d/a|b" "Markdown: a command keeps its '|'"
expect_same "$(grep -F 'cmd' "$T/pipe.md" | tail -1)" '| cmd | x\|y |' "Markdown: '|' escaped in a table cell"

# ---- a numbers file: kinds, missing values, tables, blocks, LaTeX ---------------------------
# (written by hand in the format of include/qk/numbers.h)
tab=$'\t'
{
    echo '#qk-numbers 1'
    while IFS='|' read -r key fmt raw meaning; do
        echo "value${tab}${key}${tab}${fmt}${tab}${raw}${tab}${meaning}"
    done <<'VALUES'
s.heads|count|3239|query heads
s.r|signed.2|-0.5549|Pearson r
s.share|percent.1|98.45|heads with a recency bias (%)
s.tiny|sci.1|4.34e-16|largest residual
s.gone|number.3||not in this run
s.flag|flag|1|figure drawn
s.noflag|flag|0|figure not drawn
s.label|text|LC 4k→32k_x & 5%|a label
s.m1.label|text|M1|model
s.m1.ap|number.3|0.25|ap (M1)
s.m2.label|text|M2|model
s.m2.ap|number.3||ap (M2)
VALUES
    echo "table${tab}s.models${tab}s${tab}Scalars by model"
    echo "column${tab}s.models${tab}label${tab}Model"
    echo "column${tab}s.models${tab}ap${tab}AP<sub>drop</sub> (%)"
    echo "row${tab}s.models${tab}m1"
    echo "row${tab}s.models${tab}m2"
} > "$T/s.numbers"
cat > "$T/typed.html.in" <<'TPL'
<p>{{s.heads}} heads, r = {{s.r}}, {{s.share}}%, {{s.tiny}}, {{s.gone}}, {{s.label}}.</p>
<img alt="{{s.label}} {{s.r}}">
{{if s.flag}}shown-flag{{else}}hidden-flag{{end}}
{{if s.noflag}}shown-noflag{{else}}hidden-noflag{{end}}
{{if s.share >= 95}}nearly-all{{elif s.share >= 50}}most{{else}}few{{end}}
{{if s.r > 0 or s.share > 99}}wrong-or{{elif s.r < 0 and s.heads > 1000}}right-and{{end}}
{{if s.gone}}wrong-missing{{elif s.gone < 1}}wrong-compare{{else}}missing-is-false{{end}}
{{if s.r < s.share}}{{if s.heads == 3239}}nested{{end}}{{end}}
{{if s.gone}}{{no_such_key_here}}{{end}}
{{table:s.models}}
TPL
run bin/qk-report --template "$T/typed.html.in" --output "$T/typed.html" --values "$T/s.numbers" \
    --numbers-tex "$T/numbers.tex" --numbers-md "$T/numbers.md" --latex-table s.models="$T/models.tex"
expect_status 2 "a key unknown in a hidden branch is still an error"
expect_out_contains_err "no_such_key_here" "the error names the hidden key"
sed -i '/no_such_key_here/d' "$T/typed.html.in"
run bin/qk-report --template "$T/typed.html.in" --output "$T/typed.html" --values "$T/s.numbers" \
    --numbers-tex "$T/numbers.tex" --numbers-md "$T/numbers.md" --latex-table s.models="$T/models.tex"
expect_status 0 "render typed values"
M=$'\xe2\x88\x92'
for want in '<span data-qk="s.heads">3,239</span> heads' "r = <span data-qk=\"s.r\">${M}0.55</span>" \
            '<span data-qk="s.share">98.5</span>%' \
            "<span data-qk=\"s.tiny\">4.3"$'\xc3\x97'"10<sup>${M}16</sup></span>" \
            '<span data-qk="s.gone">n/a</span>' '<span data-qk="s.label">LC 4k→32k_x &amp; 5%</span>' \
            "<img alt=\"LC 4k→32k_x &amp; 5% ${M}0.55\">" \
            shown-flag hidden-noflag nearly-all right-and missing-is-false nested \
            '<th>AP<sub>drop</sub> (%)</th>' '<td class="num" data-qk="s.m1.ap">0.250</td>' \
            '<td class="num" data-qk="s.m2.ap">'$'\xe2\x80\x94''</td>'; do
    if grep -qF -- "$want" "$T/typed.html"; then ok; else bad "typed page has '$want'"; fi
done
for unwanted in hidden-flag shown-noflag most few wrong-or wrong-missing wrong-compare; do
    if grep -qw -- "$unwanted" "$T/typed.html"; then bad "typed page shows '$unwanted'"; else ok; fi
done
for want in '\qkdef{s.heads}{3{,}239}' '\qkdef{s.r}{\ensuremath{-}0.55}' '\qkdef{s.share}{98.5}' \
            '\qkdef{s.tiny}{\ensuremath{4.3\times10^{-16}}}' '\qkdef{s.gone}{n/a}' \
            '\qkdef{s.label}{LC 4k\ensuremath{\rightarrow}32k\_x \& 5\%}' '\qkdef{s.m1.ap}{0.250}'; do
    if grep -qxF -- "$want" "$T/numbers.tex"; then ok; else bad "numbers.tex has '$want'"; fi
done
if grep -q '^\\qkdef{s.flag}' "$T/numbers.tex"; then bad "flags are not typeset numbers"; else ok; fi
# every number and flag also as the plain decimal of \qkif conditions (nan: missing); text not
for want in '\qkrawdef{s.heads}{3239}' '\qkrawdef{s.r}{-0.5549}' '\qkrawdef{s.gone}{nan}' \
            '\qkrawdef{s.flag}{1}' '\qkrawdef{s.noflag}{0}'; do
    if grep -qxF -- "$want" "$T/numbers.tex"; then ok; else bad "numbers.tex has '$want'"; fi
done
if grep -q '^\\qkrawdef{s.label}' "$T/numbers.tex"; then bad "a text has no plain decimal"; else ok; fi
expect_same "$(grep -c '^\\qkdef{' "$T/numbers.tex")" 10 "one \\qkdef line per value"
if grep -qF '| `s.r` | '"${M}"'0.55 | Pearson r |' "$T/numbers.md"; then ok; else bad "numbers.md lists s.r"; fi
for want in '\begin{tabular}{lr}' 'Model & AP\textsubscript{drop} (\%) \\' 'M1 & 0.250 \\' \
            'M2 & --- \\' '\bottomrule'; do
    if grep -qxF -- "$want" "$T/models.tex"; then ok; else bad "table fragment has '$want'"; fi
done
fails() { # template text, expected message part, name
    printf '%s\n' "$1" > "$T/bad.html.in"
    run bin/qk-report --template "$T/bad.html.in" --output "$T/bad.html" --values "$T/values.tsv" \
        --values "$T/s.numbers" --table t="$T/t.tsv"
    expect_status 2 "$3: exit status"
    expect_one_line_naming "$T/bad.html.in" "$2" "$3: message"
    expect_missing "$T/bad.html" "$3: no output"
}
fails 'x {{no_such_value}}' "value 'no_such_value' was not produced by any stage" "unknown value"
fails '{{table:nothing}}' "table 'nothing' was not produced" "unknown table"
fails '{{sum:t.nope}}' "column 'nope' was not produced" "unknown column"
fails '{{answer|weird}}' "unknown filter" "unknown filter"
fails 'open {{answer' "unclosed" "unclosed directive"
fails '{{if s.flag}} no end' "not closed by {{end}}" "unclosed block"
fails 'x {{else}}' "without {{if}}" "else without if"
fails '{{if s.flag}}a{{else}}b{{elif s.flag}}c{{end}}' "after {{else}}" "elif after else"
fails '{{if s.label > 1}}x{{end}}' "compares text" "comparing text"
fails '{{s.heads|int}}' "typeset by its kind" "filter on a typed value"
fails '{{s.flag}}' "for {{if}} only" "a flag shown"
fails '{{if s.r > 0 and s.r < 1 or s.flag}}x{{end}}' "mixes 'and' and 'or'" "mixed and/or"
fails '{{figure qk-pca/99}}' "no figure 'qk-pca/99' in workflow/figures.rec" "unknown figure"

# ---- {{figure ID}}: a figure's block from the registry ----------------------------------------
# (qk-pca/05 drawn, qk-pca/01 not: its paragraph instead; the caption's template
# text rendered as the page's)
figure_flags "$T/figures.numbers" qk-pca/05
printf 'A\n{{figure qk-pca/05}}\nB\n{{figure qk-pca/01}}\nC\n' > "$T/fig.html.in"
run bin/qk-report --template "$T/fig.html.in" --output "$T/fig.html" --values "$T/figures.numbers"
expect_status 0 "figure blocks render"
folder() { echo "../figures/$(awk -f workflow/figures.awk -v emit=folders workflow/figures.rec | grep "^$1_")"; }
d05=$(folder qk-pca/05) d01=$(folder qk-pca/01)
for want in "<a href=\"$d05/README.md\"><picture><source srcset=\"$d05/figure.svg\" type=\"image/svg+xml\"><img src=\"$d05/figure.png\" alt=\"" \
            "<figcaption>Figure 2.5. " "<a href=\"$d05/README.md\">README</a></figcaption>" \
            "<p class=\"absent\">(Figure 2.1 is not drawn in this run: <a href=\"$d01/README.md\">its README</a> says what it lacks.)</p>"; do
    if grep -qF -- "$want" "$T/fig.html"; then ok; else bad "figure blocks: '$want'"; fi
done
expect_same "$(grep -c '<figure>' "$T/fig.html")" 1 "figure blocks: one figure drawn"
expect_same "$(head -3 "$T/fig.html")" $'A\n\n<figure>' "figure blocks: the block between blank lines, as a hand-written {{if}} block"
expect_same "$(grep -c '{{\|{links}' "$T/fig.html")" 0 "figure blocks: no directive or placeholder left"
run bin/qk-report --markdown --template "$T/fig.html.in" --output "$T/fig.md" --values "$T/figures.numbers"
expect_status 2 "{{figure}} in Markdown"

run bin/qk-report --template "$T/page.html.in"
expect_status 1 "usage error"
run bin/qk-report --template "$T/typed.html.in" --output "$T/x.html" --values "$T/s.numbers" \
    --latex-table nothing="$T/x.tex"
expect_status 2 "a LaTeX table no stage produced"
printf 's.heads\t1\n' > "$T/dup.tsv"
run bin/qk-report --template "$T/typed.html.in" --output "$T/x.html" --values "$T/s.numbers" \
    --values "$T/dup.tsv"
expect_status 2 "a key both typed and plain"
finish
