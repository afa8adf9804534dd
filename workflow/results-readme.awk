# results-readme.awk: results/README.md, the columns of every table a run
# publishes under results/, from the one table of their meanings.
#
#   awk -f workflow/results-readme.awk -v stage=build/stage/ workflow/columns.tsv TABLE.csv...
#
# For each table (its path under the stage, stripped of stage), its header
# line's columns in order with the type, unit and meaning of their row in
# columns.tsv (the row whose table field names the table's file name). A
# column without a row stops the script with an error naming it: every
# published column has its meaning written.
BEGIN { FS = "\t" }

FNR == 1 && NR != 1 { table_start() }

NR == FNR {
    if (/^#/ || !NF || $1 == "table") next
    n = split($1, names, " ")
    for (i = 1; i <= n; i++) {
        key = names[i] SUBSEP $2
        if (key in meaning) { print "columns.tsv: " names[i] " " $2 " given twice" > "/dev/stderr"; bad = 1; exit 2 }
        type[key] = $3; unit[key] = $4; meaning[key] = $5
    }
    next
}

function table_start() {
    if (!header_done) header()
    path = FILENAME
    if (index(path, stage) == 1) path = substr(path, length(stage) + 1)
    name = path
    sub(/.*\//, "", name)
}

# the header line of a table (CSV with plain names)
FNR == 1 {
    ncol = split($0, col, ",")
    printf "\n## `%s`\n\n| column | type | unit | meaning |\n|---|---|---|---|\n", path
    for (i = 1; i <= ncol; i++) {
        key = name SUBSEP col[i]
        if (!(key in meaning)) {
            print "workflow/columns.tsv: no row for column " col[i] " of " name " (" path ")" > "/dev/stderr"
            bad = 1; exit 2
        }
        printf "| `%s` | %s | %s | %s |\n", col[i], type[key], unit[key] == "-" ? "" : unit[key], meaning[key]
    }
    nextfile
}

function header() {
    header_done = 1
    print "# results/: the tables of this run"
    print ""
    print "Made by `make report` (generated from workflow/columns.tsv: do not edit). Every table is"
    print "comma-separated with one header line; numbers are printed to round-trip precision and a"
    print "value that is undefined reads `nan`. `heads.csv` joins the per-head tables of the three"
    print "analyses, one row a query head (its values copied as the study tables print them);"
    print "report/heads.html shows it, and `make heads/DATASET/lLLhHH` draws one head's figures."
    print ""
    print "Loading a table:"
    print ""
    print "```python"
    print "import pandas as pd"
    print "heads = pd.read_csv(\"results/heads.csv\")            # nan is read as NaN"
    print "heads[heads.category == \"q-positional\"].sort_values(\"bias_strength\")"
    print ""
    print "import polars as pl"
    print "heads = pl.read_csv(\"results/heads.csv\")"
    print "heads.filter(pl.col(\"category\") == \"q-positional\").sort(\"bias_strength\")"
    print "```"
    print ""
    print "Types: text, integer, number (a real; `nan` where undefined, `inf` where a ratio has a zero"
    print "divisor) and flag (0 or 1)."
}

END { if (!bad && !header_done) header() }
