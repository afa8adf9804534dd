"""Checks of results/heads.csv and report/heads.html (tests/e2e-heads.sh,
tests/browser-check.sh).

  heads-check.py table TREE
      results/heads.csv has one row per query head of the run (as many as
      the inventories of build/<dataset>/inventory.tsv count), and each of
      its values is the study table's cell, character for character (|r^a|:
      the cell without its sign). Reads the study tables with Python's csv
      module, independently of qk-heads.
  heads-check.py page HEADS_HTML HEADS_CSV INDEX_HTML
      the page in headless Chromium (tests/cdp.py): a filter in the fragment
      shows exactly the rows of heads.csv that match; a click on a column
      name sorts by it; a click on a row opens its head; a changed filter is
      written to the fragment; and hovering a point of figure qk-pca/02 in
      the report shows its head.

Prints one line per failed check and "N passed, M failed"; exit 1 on a failure.
"""
import csv
import os
import sys
import time

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)
    return ok


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ---- the table ----------------------------------------------------------------------

# heads.csv column: (table, its column, without sign)
SOURCES = {
    "k_head": ("qk_heads", "k_head", False),
    "category": ("qk_heads", "category", False),
    "r_q0": ("qk_heads", "r_q0", False),
    "r_k0": ("qk_heads", "r_k0", False),
    "abs_r_q_a": ("rotated", "r_q_a", True),
    "abs_r_k_a": ("rotated", "r_k_a", True),
    "bias_strength": ("rotated", "bias_strength", False),
    "separation_strength": ("rotated", "separation_strength", False),
    "plane_var_fraction": ("rotated", "plane_var_fraction", False),
    "ap_overall": ("head_metrics", "ap_overall", False),
    "ap_drop": ("head_metrics", "ap_drop", False),
}


def study_tables(results, study):
    rotation = "rotation" if study == "attention_plasticity" else study
    paths = {"qk_heads": os.path.join(results, study, "qk_heads.csv"),
             "rotated": os.path.join(results, rotation, "rotated.csv"),
             "head_metrics": os.path.join(results, study, "head_metrics.csv")}
    tables = {}
    for name, path in paths.items():
        head_col = "q_head" if name == "head_metrics" else "head"
        tables[name] = {(r["model"], r["layer"], r[head_col]): r for r in read_csv(path)}
    return tables


def check_table(tree):
    results = os.path.join(tree, "results")
    heads = read_csv(os.path.join(results, "heads.csv"))
    inventories = [os.path.join(tree, "build", d, "inventory.tsv")
                   for d in sorted({h["dataset"] for h in heads})]
    expected = 0
    for path in inventories:
        with open(path) as f:
            expected += sum(int(r["q_heads"]) for r in csv.DictReader(f, delimiter="\t"))
    check(len(heads) == expected,
          "heads.csv has %d rows, the inventories count %d query heads" % (len(heads), expected))
    check(len({h["head_id"] for h in heads}) == len(heads), "every head_id once")
    by_study = {}
    for h in heads:
        by_study.setdefault(h["study"], []).append(h)
    for study, rows in by_study.items():
        tables = study_tables(results, study)
        check(len(rows) == len(tables["qk_heads"]),
              "%s: %d heads in heads.csv, %d in qk_heads.csv" % (study, len(rows), len(tables["qk_heads"])))
        wrong = []
        for h in rows:
            key = (h["model"], h["layer"], h["head"])
            check(h["head_id"] == "%s/l%02dh%02d" % (h["dataset"], int(h["layer"]), int(h["head"])),
                  "head_id of %s" % h["head_id"])
            check(h["family"] == tables["rotated"][key]["family"], "family of %s" % h["head_id"])
            for column, (table, source, unsigned) in SOURCES.items():
                cell = tables[table][key][source]
                if unsigned:
                    cell = cell.lstrip("-")
                if h[column] != cell:
                    wrong.append("%s %s: %s, the study table says %s" % (h["head_id"], column, h[column], cell))
        check(not wrong, "%s: values differ from the study tables: %s" % (study, "; ".join(wrong[:3])))
        check(len(rows) * len(SOURCES) > 0, "%s: values compared" % study)


# ---- the page -------------------------------------------------------------------------

READY = "document.body && document.body.dataset.ready === 'yes'"
SHOWN = "Array.from(document.querySelectorAll('#heads tbody tr[data-head]')).map(function (r) { return r.dataset.head; })"


def center_of(b, selector):
    return b.eval("(function () { var r = document.querySelector(%r).getBoundingClientRect(); "
                  "return [r.left + Math.min(r.width / 2, 30), r.top + r.height / 2]; })()" % selector)


def check_page(page, heads_csv, index):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cdp import Browser
    heads = read_csv(heads_csv)
    url = "file://" + os.path.realpath(page)
    with Browser() as b:
        # a filter in the fragment: model, class and a range
        model = heads[len(heads) // 2]["dataset"]
        expect = {h["head_id"] for h in heads if h["dataset"] == model and h["category"] == "mixed"
                  and float(h["ap_overall"]) >= 0.6}
        seconds = b.open(url + "#model=%s&class=mixed&ap_overall=0.6..&sort=-bias" % model, READY)
        shown = b.eval(SHOWN)
        check(set(shown) == expect and len(shown) == len(expect),
              "the fragment's filter shows %d rows, heads.csv has %d that match" % (len(shown), len(expect)))
        check(len(expect) > 0, "the filter matches some heads")
        check(b.eval("document.getElementById('count').textContent") == str(len(expect)), "the count")
        # the fragment's sort: by bias strength, descending ("bias" names the column)
        bias = {h["head_id"]: float(h["bias_strength"]) for h in heads}
        check([bias[h] for h in shown] == sorted((bias[h] for h in shown), reverse=True),
              "sort=-bias orders the rows by bias_strength, descending")
        check("sort=-bias_strength" in b.eval("location.hash"), "the fragment names the sort")
        # no filter: every head; a click on a column name sorts by it
        b.open(url + "#", READY)
        check(len(b.eval(SHOWN)) == len(heads), "no filter: every head of heads.csv")
        b.click(*center_of(b, "#heads th[data-col='r_k0']"))
        shown = b.eval(SHOWN)
        rk = {h["head_id"]: float(h["r_k0"]) for h in heads}
        check([rk[h] for h in shown] == sorted(rk[h] for h in shown),
              "a click on r_k0 sorts by it, ascending")
        b.click(*center_of(b, "#heads th[data-col='r_k0']"))
        shown = b.eval(SHOWN)
        check([rk[h] for h in shown] == sorted((rk[h] for h in shown), reverse=True),
              "a second click reverses the order")
        check("sort=-r_k0" in b.eval("location.hash"), "the fragment follows the sort")
        # a class chosen in the page is written to the fragment
        b.eval("(function () { var s = document.getElementById('f-class'); s.value = 'mixed'; "
               "s.dispatchEvent(new Event('change')); })()")
        check("class=mixed" in b.eval("location.hash"), "the class filter is written to the fragment")
        check(len(b.eval(SHOWN)) == sum(h["category"] == "mixed" for h in heads), "the class filter")
        # a click on a row opens its head: its numbers, command and profile
        first = b.eval(SHOWN)[0]
        b.click(*center_of(b, "#heads tbody tr[data-head]"))
        check(b.eval("document.getElementById('detail-head').textContent") == first, "a click opens the head")
        check(b.eval("document.getElementById('detail-command').textContent") == "make heads/" + first,
              "the head's view gives its make command")
        row = next(h for h in heads if h["head_id"] == first)
        shown_bias = b.eval("document.querySelector('#detail tr[data-col=\"bias_strength\"] td').textContent")
        check(shown_bias == row["bias_strength"], "the head's view gives its numbers as heads.csv")
        bins = [r for r in read_csv(os.path.join(os.path.dirname(heads_csv), row["study"],
                                                  "head_bucket_plasticity.csv"))
                if (r["model"], r["layer"], r["q_head"]) == (row["model"], row["layer"], row["head"])]
        drawn = b.eval("document.querySelector('#detail svg.profile path').getAttribute('d')"
                       ".split(/[ML]/).length - 1")
        check(drawn == sum(r["ap"] != "nan" for r in bins) and drawn > 0,
              "the head's view draws its plasticity profile: %s points, %d bins with a value"
              % (drawn, sum(r["ap"] != "nan" for r in bins)))
        check(b.eval("document.querySelectorAll('#detail circle.this-head').length") >= 3,
              "the head's view marks it in the scatters")
        check(("head=" + first) in b.eval("location.hash"), "the fragment names the open head")
        # the head opened from the fragment
        b.open(url + "#head=" + first, READY)
        check(b.eval("document.getElementById('detail-head').textContent") == first, "head= opens the head")
        check(not b.console_errors(), "no script error: %s" % b.console_errors()[:1])
        print("heads.html ready after %.2f s" % seconds)
        check_hover(b, index, heads)


def hover_lines(b, figure, pick=3):
    """Hovers the pick-th hover point of the report's figure (an object whose
    SVG holds gnuplot's hypertext) and returns the lines its box shows, and
    the number of hover points (None when the report has no such object)."""
    obj = "document.querySelector('object[data*=\"%s_\"]')" % figure
    if not b.eval("!!" + obj):
        return None, 0
    b.eval(obj + ".scrollIntoView()")
    points = "Array.from(%s.contentDocument.querySelectorAll('g > title')).filter(function (t) { " \
             "return t.textContent === ' '; }).map(function (t) { return t.parentNode; })" % obj
    n = 0
    for _ in range(100):
        n = b.eval("(function () { var o = %s; return o.contentDocument && o.contentDocument."
                   "getElementById('hypertext') ? %s.length : 0; })()" % (obj, points))
        if n:
            break
        time.sleep(0.1)
    if not n:
        return [], 0
    x, y = b.eval("(function () { var o = %s, e = %s[%d], r = e.getBoundingClientRect(), "
                  "R = o.getBoundingClientRect(); return [R.left + r.left + r.width / 2, "
                  "R.top + r.top + r.height / 2]; })()" % (obj, points, min(pick, n - 1)))
    b.hover(x, y)
    time.sleep(0.2)
    lines = b.eval("Array.from(%s.contentDocument.querySelectorAll('#hypertext tspan'))"
                   ".map(function (s) { return s.textContent; })" % obj)
    return lines, n


def check_hover(b, index, heads):
    b.open("file://" + os.path.realpath(index))
    cross = [h for h in heads if h["study"] == "attention_plasticity"]
    lines, n = hover_lines(b, "qk-pca/02")
    if not check(lines is not None, "the report embeds figure qk-pca/02 as an object"):
        return
    check(n == len(cross), "qk-pca/02 has a hover point per head (%d, heads.csv: %d)" % (n, len(cross)))
    ids = {h["head_id"] for h in cross}
    check(len(lines) == 3 and lines[1] in ids and lines[0].split(":")[0] in {h["label"] for h in cross},
          "hovering a point of qk-pca/02 shows its model, layer and head (%s)" % lines)
    if len(lines) == 3 and lines[1] in ids:
        h = next(h for h in cross if h["head_id"] == lines[1])
        check(lines[0] == "%s: layer %s, head %s" % (h["label"], h["layer"], h["head"]), "the hover's layer and head")
        check(lines[2] == "r_q %.3f, r_k %.3f" % (float(h["r_q0"]), float(h["r_k0"])), "the hover's r_q and r_k")
    # a cell of a depth heatmap: its model, depth bin, mean and heads
    lines, n = hover_lines(b, "qk-pca/03")
    check(lines is not None and len(lines) == 4 and lines[0] in {h["label"] for h in cross} and
          lines[1].startswith("depth ") and lines[2].startswith("mean r_q (PC0) ") and
          lines[3].startswith("n = "), "hovering a cell of qk-pca/03 shows its bin, value and n (%s)" % lines)
    if lines and len(lines) == 4:
        # the cell's mean and count from heads.csv and the registry's layer counts
        with open(os.path.join(os.path.dirname(index), "..", "build", "sets", "registry.tsv")) as f:
            reg = {r["id"]: r for r in csv.DictReader((l for l in f if not l.startswith("#")), delimiter="\t")}
        b0 = round(float(lines[1].split()[1]) * 10)
        cell = [float(h["r_q0"]) for h in cross if h["label"] == lines[0] and
                min(10 * int(h["layer"]) // (int(reg[h["dataset"]]["n_layers"]) - 1), 9) == b0]
        check(lines[3] == "n = %d head%s" % (len(cell), "" if len(cell) == 1 else "s") and
              lines[2] == "mean r_q (PC0) %.4f" % (sum(cell) / len(cell)),
              "the cell's mean and heads are those of heads.csv (%s; %d heads, mean %.4f)"
              % (lines[2:], len(cell), sum(cell) / max(len(cell), 1)))
    # a cell of a plasticity heatmap: its bins, AP and heads
    lines, n = hover_lines(b, "attention-plasticity/01")
    check(lines is not None and len(lines) == 4 and lines[0].startswith("inter-key distance ") and
          lines[2].startswith("AP ") and lines[3].startswith("n = "),
          "hovering a cell of attention-plasticity/01 shows its bins, AP and n (%s)" % lines)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "table":
        check_table(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "page":
        check_page(*sys.argv[2:])
    else:
        sys.exit(__doc__)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
