#!/usr/bin/python3
"""Compares the tables of two runs cell by cell.

Usage: compare_tables.py [--tol T] [--quiet] OLD NEW

OLD and NEW are two directories holding the same relative paths (for
example a copy of build/ and results/ from before a change, and the tree
after it), or two files. Every .tsv and .csv file under OLD is compared
with the file of the same path under NEW: the header and the row count must
be equal; a cell matches when its text is the same, or when both cells are
numbers within T of each other (absolute; nan matches nan, inf matches
inf). Other files (rotation_axes.bin, ...) must be byte-identical.

Prints one line per file that is not byte-identical (its largest absolute
difference and where), then a summary line with the largest difference of
all. Exit status: 0 when every file matches, 1 otherwise, 2 on usage
errors.
"""
import argparse
import csv
import math
import os
import sys


def as_number(text):
    try:
        return float(text)
    except ValueError:
        return None


def read_rows(path):
    delimiter = "\t" if path.endswith(".tsv") else ","
    with open(path, newline="") as f:
        return list(csv.reader(f, delimiter=delimiter))


def compare_table(old_path, new_path, tol):
    """Returns (ok, max_abs_diff, where, problem)."""
    old, new = read_rows(old_path), read_rows(new_path)
    if not old or not new or old[0] != new[0]:
        return False, math.inf, "", "headers differ"
    if len(old) != len(new):
        return False, math.inf, "", "%d rows, now %d" % (len(old) - 1, len(new) - 1)
    header = old[0]
    worst, where, ok = 0.0, "", True
    for line, (a_row, b_row) in enumerate(zip(old[1:], new[1:]), start=2):
        if len(a_row) != len(b_row):
            return False, math.inf, "line %d" % line, "cell counts differ"
        for col, (a, b) in enumerate(zip(a_row, b_row)):
            if a == b:
                continue
            x, y = as_number(a), as_number(b)
            if x is None or y is None:
                return False, math.inf, "line %d, %s" % (line, header[col]), \
                    "'%s' became '%s'" % (a, b)
            if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
                same = (math.isnan(x) and math.isnan(y)) or x == y
                diff = 0.0 if same else math.inf
            else:
                diff = abs(x - y)
            if diff > worst:
                worst, where = diff, "line %d, %s: %s -> %s" % (line, header[col], a, b)
            ok = ok and diff <= tol
    return ok, worst, where, ""


def same_bytes(a, b):
    with open(a, "rb") as f, open(b, "rb") as g:
        return f.read() == g.read()


def relative_files(root):
    if os.path.isfile(root):
        return [""]
    out = []
    for dirpath, _, names in os.walk(root):
        for name in names:
            out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tol", type=float, default=1e-12)
    ap.add_argument("--quiet", action="store_true", help="only the summary line")
    ap.add_argument("old")
    ap.add_argument("new")
    args = ap.parse_args()
    files = relative_files(args.old)
    failed, differing, worst, worst_where = 0, 0, 0.0, ""
    for rel in files:
        a = os.path.join(args.old, rel) if rel else args.old
        b = os.path.join(args.new, rel) if rel else args.new
        if not os.path.exists(b):
            print("%s: missing in %s" % (rel or b, args.new))
            failed += 1
            continue
        if same_bytes(a, b):
            continue
        differing += 1
        if not a.endswith((".tsv", ".csv")):
            print("%s: binary file differs" % (rel or b))
            failed += 1
            continue
        ok, diff, where, problem = compare_table(a, b, args.tol)
        if problem:
            print("%s: %s %s" % (rel or b, problem, where))
        elif not args.quiet or not ok:
            print("%s: max abs diff %.3g (%s)%s" % (rel or b, diff, where,
                                                    "" if ok else ", above the tolerance"))
        failed += not ok
        if diff > worst:
            worst, worst_where = diff, "%s, %s" % (rel or b, where)
    print("%d files compared, %d byte-identical, %d within %g, %d not; max abs diff %.3g%s"
          % (len(files), len(files) - differing, differing - failed, args.tol, failed, worst,
             " (%s)" % worst_where if worst_where else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
