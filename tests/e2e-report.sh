#!/bin/bash
# qk-report: values, tables, aggregates, filters and includes render from
# the pipeline's files, and a template that references anything no stage
# produced fails with one line naming the template, the line and the name.
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
for want in '<h1>A &amp; B</h1>' '2 rows, 5 heads, 4.0 MB, 4,000,000 bytes' '<p>42 12.3 0.12</p>' \
            '<td class="num">1500000</td>'; do
    if grep -qF -- "$want" "$T/page.html"; then ok; else bad "page has '$want'"; fi
done

fails() { # template text, expected message part, name
    printf '%s\n' "$1" > "$T/bad.html.in"
    run bin/qk-report --template "$T/bad.html.in" --output "$T/bad.html" --values "$T/values.tsv" \
        --table t="$T/t.tsv"
    expect_status 2 "$3: exit status"
    expect_one_line_naming "$T/bad.html.in" "$2" "$3: message"
    expect_missing "$T/bad.html" "$3: no output"
}
fails 'x {{no_such_value}}' "value 'no_such_value' was not produced by any stage" "unknown value"
fails '{{table:nothing}}' "table 'nothing' was not produced" "unknown table"
fails '{{sum:t.nope}}' "column 'nope' was not produced" "unknown column"
fails '{{answer|weird}}' "unknown filter" "unknown filter"
fails 'open {{answer' "unclosed" "unclosed directive"
run bin/qk-report --template "$T/page.html.in"
expect_status 1 "usage error"
finish
