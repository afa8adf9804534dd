# The registry of a run (build/sets/registry.tsv, datasets.mk): the rows of
# workflow/datasets.tsv, and one row per dataset of the run that the registry
# lacks, from its qkreport.conf ("column = value" lines, # comments), so that
# the summaries and figures see its family, label and context length.
#
#   awk -v ids="ID..." -f workflow/run-registry.awk REGISTRY CONF...
#
# ids names the dataset of each CONF, in order. A column the conf does not
# set is "-", except id (the dataset id), label (the id, shortened when it is long), family ("other",
# as qk-load and the tables name it; smollm3 for a SmolLM3-3B checkpoint, as
# qk-load does) and study ("extra"). A SmolLM3-3B checkpoint (study smollm3_training_progress)
# goes among the registry's checkpoints in training order (stage 1, 2, 3,
# then the long-context phases 4K→32K and 32K→64K, each by step), since the
# figures draw the checkpoints in registry order; any other row goes last.
#
# A conf line the row cannot hold as qk-load reads it (no '=', a key that
# is no column, an empty value, a control character such as a tab) stops
# it with one line on stderr naming the file and line, as qk-load
# --check-conf does, and exit status 2; the rest of the check (value types,
# UTF-8) is qk-load's, which reads the conf before any stage uses the row.

function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }

# the id as a label: at most label_chars characters (include/qk/registry.h),
# shortened in the middle ("smollm3-3…step-80000"); the cut drops a
# non-ASCII letter at its edge whole (awk counts bytes)
function id_label(id,    head, tail) {
    if (length(id) <= label_chars) return id
    head = substr(id, 1, int((label_chars - 1) / 2))
    tail = substr(id, length(id) - (label_chars - 1 - length(head)) + 1)
    sub(/[\200-\377]+$/, "", head)
    sub(/^[\200-\377]+/, "", tail)
    return head "\342\200\246" tail
}

# training order of a SmolLM3-3B checkpoint id: phase * 1e12 + step
function training_key(id,    rest, phase, step) {
    rest = id
    sub(/^smollm3-3b-/, "", rest)
    if (match(rest, /^stage[0-9]+-step-/)) phase = substr(rest, 6, RLENGTH - 11) + 0
    else if (rest ~ /^lc-4k-to-32k-step-/) phase = 4
    else if (rest ~ /^lc-32k-to-64k-step-/) phase = 5
    else return 9e15
    step = rest
    sub(/.*-step-/, "", step)
    return phase * 1e12 + step
}

BEGIN {
    FS = "\t"; n_ids = split(ids, id_of, " ")
    while ((getline line < "include/qk/registry.h") > 0)
        if (line ~ /^#define QK_LABEL_CHARS [0-9]+/) { split(line, w, " "); label_chars = w[3] + 0 }
    if (!label_chars) { print "run-registry.awk: no QK_LABEL_CHARS in include/qk/registry.h" > "/dev/stderr"; failed = 1; exit 2 }
}

FNR == 1 { file++ }

file == 1 {
    if ($0 ~ /^#/ || NF == 0) { head[++n_head] = $0; next }
    if ($1 == "id") {
        n_cols = NF
        for (i = 1; i <= NF; i++) { col[i] = $i; is_col[$i] = 1 }
        head[++n_head] = $0
        next
    }
    row[++n_rows] = $0; row_id[n_rows] = $1
    study_col = 0
    for (i = 1; i <= n_cols; i++) if (col[i] == "study") study_col = i
    row_study[n_rows] = study_col ? $study_col : ""
    next
}

function conf_error(msg) {
    printf "error: %s: line %d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
    failed = 1
    exit 2
}

# a conf file: its key = value lines
{
    line = $0
    sub(/[\r\n]+$/, "", line)
    line = trim(line)
    if (line == "" || line ~ /^#/) next
    if (index(line, "=") == 0) conf_error("expected 'key = value'")
    key = trim(substr(line, 1, index(line, "=") - 1))
    value = trim(substr(line, index(line, "=") + 1))
    if (!(key in is_col)) conf_error("unknown key '" key "'")
    if (value == "") conf_error(key " is empty")
    if (value ~ /[\001-\037\177]/) conf_error(key " holds a control character")
    # (names that become folder names and Make words: results/<study>/)
    if ((key == "id" || key == "study" || key == "family") && (value !~ /^[A-Za-z0-9._-]+$/ || value ~ /^\.+$/))
        conf_error(key " takes letters, digits, '.', '_' and '-' only, not '" value "'")
    conf[file - 1, key] = value
}

END {
    if (failed) exit 2
    for (c = 1; c <= n_ids; c++) {
        id = id_of[c]
        dflt["id"] = id; dflt["label"] = id_label(id); dflt["study"] = "extra"
        dflt["family"] = id ~ /^smollm3-3b-/ ? "smollm3" : "other"
        text = ""
        for (i = 1; i <= n_cols; i++) {
            v = ((c, col[i]) in conf) ? conf[c, col[i]] : ((col[i] in dflt) ? dflt[col[i]] : "-")
            if (col[i] == "id") v = id
            text = text (i > 1 ? "\t" : "") v
        }
        extra_row[c] = text
        extra_study[c] = ((c, "study") in conf) ? conf[c, "study"] : "extra"
    }
    # the conf rows in training order (a stable insertion sort)
    for (c = 1; c <= n_ids; c++) {
        for (j = c; j > 1 && training_key(id_of[ord[j - 1]]) > training_key(id_of[c]); j--)
            ord[j] = ord[j - 1]
        ord[j] = c
    }
    for (i = 1; i <= n_head; i++) print head[i]
    # each registry row, preceded by the conf checkpoints that come before it
    for (r = 1; r <= n_rows; r++) {
        if (row_study[r] == "smollm3_training_progress")
            for (k = 1; k <= n_ids; k++) {
                c = ord[k]
                if (!done[c] && extra_study[c] == "smollm3_training_progress" &&
                    training_key(id_of[c]) < training_key(row_id[r])) {
                    print extra_row[c]; done[c] = 1
                }
            }
        print row[r]
    }
    for (k = 1; k <= n_ids; k++) if (!done[ord[k]]) print extra_row[ord[k]]
}
