# Prints "data_source<TAB>TEXT": one sentence saying where the vectors of
# the datasets in a TSV with a "source" column (an inventory, or a figure's
# stores.tsv) came from. A run over several origins says so.
BEGIN { FS = OFS = "\t" }
FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{
    src = $(col["source"]); n++
    if (src ~ /^synthetic/) { synth++; synth_src = src }
    else { dirs++; d = src; sub(/\/[^\/]*$/, "", d); parent[d] = 1 }
}
END {
    np = 0; for (d in parent) { np++; one = d }
    where = np == 1 ? one : np " directories"
    if (n == 0) text = "no datasets"
    else if (!dirs) text = synth_src
    else if (!synth) text = "the downloaded captures in " where " (" n (n == 1 ? " dataset" : " datasets") "; revisions in the store table)"
    else text = "a mix of sources: " synth " synthetic " (synth == 1 ? "dataset" : "datasets") " (" synth_src ") and " dirs " from " where " (each dataset's source is in the store table)"
    print "data_source", text
}
