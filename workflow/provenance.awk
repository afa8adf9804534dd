# Prints "data_source<TAB>TEXT": one sentence saying where the vectors of
# the datasets in a TSV with a "source" column (an inventory, or a figure's
# stores.tsv) came from. A run over several kinds of source says so, with
# the count of each. Then "data_partial<TAB>TEXT": the partial downloads
# among them (configs_present below configs_captured, the configs their
# capture lists), in one sentence, or nothing.
BEGIN { FS = OFS = "\t" }
FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
("configs_captured" in col) && $(col["configs_captured"]) != "-" && $(col["configs_present"]) + 0 < $(col["configs_captured"]) + 0 {
    partial = partial (n_partial++ ? ", " : "") $(col["dataset"]) " (" $(col["configs_present"]) " of " $(col["configs_captured"]) " captured configs present)"
}
function parent(path) { sub(/ \(written by qk-synth\)$/, "", path); sub(/\/[^\/]*$/, "", path); return path }
{
    src = $(col["source"]); n++
    # (generated data changed by hand: their source, which says so, is the one named)
    if (src ~ /^synthetic/) { made++; if (made_src !~ /files changed since/) made_src = src }
    else if (src ~ /written by qk-synth/) { copied++; where[parent(src)] = 1 }
    else { captured++; where[parent(src)] = 1 }
}
function places(   d, k, one) { k = 0; for (d in where) { k++; one = d } return k == 1 ? one : k " directories" }
function count(k, what) { return k " " what }
function source_text(   text, sep) {
    if (n == 0) return "no datasets"
    if (made == n) return made_src
    if (captured == n) return "the downloaded captures in " places() " (" count(n, n == 1 ? "dataset" : "datasets") "; each one's revision is in the store table)"
    if (copied == n) return "data written by qk-synth, read from " places() " (" count(n, n == 1 ? "dataset" : "datasets") ")"
    text = "a mix of sources: "
    sep = ""
    if (made) { text = text sep made " generated now (" made_src ")"; sep = ", " }
    if (captured) { text = text sep captured " downloaded captures"; sep = ", " }
    if (copied) { text = text sep copied " copies of qk-synth data"; sep = ", " }
    return text " (each dataset's source is in the store table)"
}
END {
    print "data_source", source_text()
    print "data_partial", n_partial ? "Partial download" (n_partial > 1 ? "s" : "") ": " partial "." : ""
}
