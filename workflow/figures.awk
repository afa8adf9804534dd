# Reads the figure registry (workflow/figures.rec, its format described at
# its top) and writes what each consumer needs, chosen by -v emit=:
#   make          one line per figure for workflow/figures.mk:
#                 study|folder|model|stages|inputs|values, the words of a
#                 field joined by ';'
#   ids           the figure ids (study/NN), one a line
#   folders       the figures' folders under figures/ (study/NN_name), one a line
#   texts         id, title, description, needs, draw function and print layout
#                 (1 or 0) of each figure, tab-separated, as qk-plot gets them
#   figure_draw   C: the prototypes of the draw functions (qk-plot)
#   figure_table  C: qk-plot's table of figures (fig_def, figure.h)
#   figure_blocks C: qk-report's table of the figures' HTML blocks
# A malformed registry stops with "FILE:LINE: problem" on stderr and exit 1.
BEGIN {
    n = 0
    known = " id folder number like title description needs model stages inputs values draw" \
            " print_layout embed width alt caption absent "
    # every record has these, given or taken from the record it is like
    split("id folder number title description needs model stages inputs draw print_layout alt caption",
          required, " ")
    # fields a record never takes from the one it is like
    own = " id folder number like model inputs values alt caption absent "
}

function fail(msg) {
    printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
    failed = 1
    exit 1
}

function end_record() {
    if (open)
        record_line[n] = start_line
    open = 0
    field = ""
}

/^#/ { next }
/^[ \t]*$/ { end_record(); next }

/^\+/ {
    if (field == "")
        fail("a continuation line (+) outside a field")
    text = substr($0, 2)
    sub(/^ /, "", text)
    val[n, field] = val[n, field] "\n" text
    next
}

match($0, /^[a-z_]+:/) {
    if (!open) {
        n++
        open = 1
        start_line = FNR
    }
    field = substr($0, 1, RLENGTH - 1)
    if (index(known, " " field " ") == 0)
        fail("unknown field '" field "'")
    if ((n, field) in val)
        fail("field '" field "' given twice")
    text = substr($0, RLENGTH + 1)
    sub(/^ /, "", text)
    val[n, field] = text
    next
}

{ fail("expected 'field: value', a '+' continuation line, a comment or a blank line") }

# ---- checks and the records as their consumers read them ----------------------------

# A text of qk-plot or Make: its lines joined by spaces.
function words(s) {
    gsub(/\n/, " ", s)
    return s
}

function check_record(i,    f, id, nn, base, number) {
    FNR = record_line[i]
    if (val[i, "like"] != "") {
        base = by_id[val[i, "like"]]
        if (base == "")
            fail("like '" val[i, "like"] "': no figure of that id above")
        for (f in required_set)
            if (!((i, f) in val) && index(own, " " f " ") == 0)
                val[i, f] = val[base, f]
        if (!((i, "embed") in val) && ((base, "embed") in val))
            val[i, "embed"] = val[base, "embed"]
        if (!((i, "width") in val) && ((base, "width") in val))
            val[i, "width"] = val[base, "width"]
    }
    for (f in required_set)
        if (!((i, f) in val) || val[i, f] == "")
            fail("figure " val[i, "id"] ": no '" f "'")
    id = val[i, "id"]
    if (id !~ /^[a-z][a-z-]*\/[0-9][0-9]$/)
        fail("id '" id "' is not study/NN")
    if (id in by_id)
        fail("figure " id " declared twice")
    by_id[id] = i
    nn = substr(id, index(id, "/") + 1)
    if (val[i, "folder"] !~ ("^" nn "_[A-Za-z0-9_.-]+$"))
        fail("figure " id ": folder '" val[i, "folder"] "' does not start with " nn "_")
    number = val[i, "number"]
    if (number != "-" && (number !~ /^[0-9]+\.[0-9]+$/ || substr(number, index(number, ".") + 1) + 0 != nn + 0))
        fail("figure " id ": number '" number "' is not -, nor SECTION." (nn + 0))
    if (number == "-" && val[i, "absent"] == "")
        fail("figure " id ": a figure without a number needs an absent text")
    if (val[i, "print_layout"] != "yes" && val[i, "print_layout"] != "no")
        fail("figure " id ": print_layout is yes or no")
    if (!((i, "embed") in val))
        val[i, "embed"] = "picture"
    if (val[i, "embed"] !~ /^(picture|object|img)$/)
        fail("figure " id ": embed is picture, object or img")
    if (!((i, "width") in val))
        val[i, "width"] = "100%"
    if (val[i, "draw"] !~ /^[a-z][a-z0-9]*_draw_[a-z0-9_]+$/)
        fail("figure " id ": draw '" val[i, "draw"] "' is not a draw function's name (PREFIX_draw_NAME)")
    for (f in make_fields)
        if (index(val[i, f], "|") || index(val[i, f], ";"))
            fail("figure " id ": '" f "' holds '|' or ';'")
}

# ---- the outputs ---------------------------------------------------------------------

function c_string(s) {
    gsub(/\\/, "\\\\", s)
    gsub(/"/, "\\\"", s)
    gsub(/\n/, "\\n", s)
    return "\"" s "\""
}

function c_string_or_null(s) {
    return s == "" ? "NULL" : c_string(s)
}

function make_field(s) {
    s = words(s)
    gsub(/ +/, ";", s)
    return s == "" ? "-" : s
}

function emit_make(i, id) {
    id = val[i, "id"]
    print substr(id, 1, index(id, "/") - 1) "|" val[i, "folder"] "|" make_field(val[i, "model"]) "|" \
        make_field(val[i, "stages"]) "|" make_field(val[i, "inputs"]) "|" make_field(val[i, "values"])
}

function generated(what) {
    print "/* " what ": generated from workflow/figures.rec by workflow/figures.awk"
    print " * (make); edit the registry, not this file. */"
}

function emit_draw_header(   i, seen) {
    generated("The draw function of every figure of the registry")
    print "#ifndef QK_PLOT_FIGURE_DRAW_H\n#define QK_PLOT_FIGURE_DRAW_H\n"
    for (i = 1; i <= n; i++)
        if (!(val[i, "draw"] in seen)) {
            seen[val[i, "draw"]] = 1
            print "int " val[i, "draw"] "(fig_ctx *ctx, qk_err *err);"
        }
    print "\n#endif"
}

# The parameter that chooses a one-model figure's model: the name in a model
# field "$(NAME)"; empty for another expression or none.
function model_param(m) {
    return m ~ /^\$\([A-Z][A-Z0-9_]*\)$/ ? substr(m, 3, length(m) - 3) : ""
}

function emit_table(   i) {
    generated("qk-plot's table of figures (fig_def, figure.h), in registry order")
    print "#ifndef QK_PLOT_FIGURE_TABLE_H\n#define QK_PLOT_FIGURE_TABLE_H\n"
    print "#include \"figure.h\"\n"
    print "static const fig_def fig_table[] = {"
    for (i = 1; i <= n; i++) {
        print "    {" c_string(val[i, "id"]) ","
        print "     " c_string(words(val[i, "title"])) ","
        print "     " c_string(words(val[i, "description"])) ","
        print "     " c_string(words(val[i, "needs"])) ","
        print "     " val[i, "draw"] ", " (val[i, "print_layout"] == "yes") ", " \
            c_string_or_null(model_param(val[i, "model"])) "},"
    }
    print "    {NULL, NULL, NULL, NULL, NULL, 0, NULL}};\n\n#endif"
}

function emit_blocks(   i) {
    generated("The figures' HTML blocks for qk-report's {{figure ID}}, in registry order")
    print "#ifndef QK_REPORT_FIGURE_BLOCKS_H\n#define QK_REPORT_FIGURE_BLOCKS_H\n"
    print "typedef struct report_figure {"
    print "    const char *id;      /* qk-pca/05 */"
    print "    const char *folder;  /* NN_name, under figures/<study>/ */"
    print "    const char *number;  /* 2.5, or NULL for an unnumbered figure */"
    print "    const char *embed;   /* picture, object or img */"
    print "    const char *width;   /* 100% */"
    print "    const char *alt;     /* template text */"
    print "    const char *caption; /* template text; {links} stands for the links */"
    print "    const char *absent;  /* template text, {dir} the folder; NULL: the usual text */"
    print "} report_figure;\n"
    print "static const report_figure report_figures[] = {"
    for (i = 1; i <= n; i++) {
        print "    {" c_string(val[i, "id"]) ", " c_string(val[i, "folder"]) ", " \
            (val[i, "number"] == "-" ? "NULL" : c_string(val[i, "number"])) ", " \
            c_string(val[i, "embed"]) ", " c_string(val[i, "width"]) ","
        print "     " c_string(val[i, "alt"]) ","
        print "     " c_string(val[i, "caption"]) ","
        print "     " c_string_or_null(val[i, "absent"]) "},"
    }
    print "    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}};\n\n#endif"
}

END {
    if (failed)
        exit 1
    end_record()
    for (f in required)
        required_set[required[f]] = 1
    split("model stages inputs values", mf, " ")
    for (f in mf)
        make_fields[mf[f]] = 1
    for (i = 1; i <= n; i++)
        check_record(i)
    for (i = 1; i <= n; i++) {
        if (emit == "make")
            emit_make(i)
        else if (emit == "ids")
            print val[i, "id"]
        else if (emit == "texts")
            print val[i, "id"] "\t" words(val[i, "title"]) "\t" words(val[i, "description"]) "\t" \
                words(val[i, "needs"]) "\t" val[i, "draw"] "\t" (val[i, "print_layout"] == "yes")
        else if (emit == "folders")
            print substr(val[i, "id"], 1, index(val[i, "id"], "/")) val[i, "folder"]
    }
    if (emit == "figure_draw")
        emit_draw_header()
    else if (emit == "figure_table")
        emit_table()
    else if (emit == "figure_blocks")
        emit_blocks()
    else if (emit !~ /^(make|ids|folders|texts)$/) {
        print "figures.awk: -v emit= is make, ids, folders, texts, figure_draw, figure_table or " \
            "figure_blocks" \
            > "/dev/stderr"
        exit 1
    }
}
