#!/usr/bin/python3
"""Compares two trees of tables (.tsv tab-separated, .csv comma-separated) cell by cell.

Usage: compare_tables.py [--tol T] [-v] BEFORE_DIR AFTER_DIR

Every file under BEFORE_DIR must exist under AFTER_DIR. Tables must have the
same rows and columns and the same non-numeric cells, and numbers may differ
by at most T (absolute, default 1e-12; NaN matches NaN); any other file must
be byte-identical. Prints the number of files, how many are byte-identical,
the largest absolute difference of a number and where it is (with -v, per
file). Exit status 1 when a file is missing or does not match.
"""
import argparse
import filecmp
import math
import os
import sys


def cells(path):
    sep = "\t" if path.endswith(".tsv") else ","
    with open(path) as fh:
        return [line.rstrip("\n").split(sep) for line in fh]


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def compare_table(a, b):
    """(largest |difference| or None when the tables do not match, what)."""
    ra, rb = cells(a), cells(b)
    if len(ra) != len(rb):
        return None, f"rows {len(ra)} vs {len(rb)}"
    worst, identical = 0.0, True
    for la, lb in zip(ra, rb):
        if len(la) != len(lb):
            return None, "columns differ"
        for x, y in zip(la, lb):
            if x == y:
                continue
            identical = False
            fx, fy = number(x), number(y)
            if fx is None or fy is None:
                return None, f"text {x!r} vs {y!r}"
            if math.isnan(fx) or math.isnan(fy):
                if not (math.isnan(fx) and math.isnan(fy)):
                    return None, f"NaN {x} vs {y}"
                continue
            worst = max(worst, abs(fx - fy))
    return worst, "identical" if identical else "differs"


def compare(a, b, tol):
    if filecmp.cmp(a, b, shallow=False):
        return 0.0, "identical"
    if not a.endswith((".tsv", ".csv")):
        return None, "bytes differ"
    worst, what = compare_table(a, b)
    if worst is not None and worst > tol:
        return None, f"a number differs by {worst:.3g} (> {tol:g})"
    return worst, what


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--tol", type=float, default=1e-12,
                   help="largest absolute difference of a number (default 1e-12)")
    p.add_argument("-v", "--verbose", action="store_true", help="a line per file")
    a = p.parse_args()
    overall, where, n, bad, same = 0.0, "", 0, 0, 0
    for root, _, files in os.walk(a.before):
        for name in sorted(files):
            pa = os.path.join(root, name)
            rel = os.path.relpath(pa, a.before)
            pb = os.path.join(a.after, rel)
            if not os.path.exists(pb):
                print(f"MISSING {pb}")
                bad += 1
                continue
            worst, what = compare(pa, pb, a.tol)
            n += 1
            if worst is None:
                print(f"MISMATCH {pb}: {what}")
                bad += 1
                continue
            same += what == "identical"
            if worst > overall:
                overall, where = worst, rel
            if a.verbose:
                print(f"{worst:.3g}\t{what}\t{rel}")
    print(f"{n} files, {same} byte-identical, {bad} mismatched; "
          f"largest |difference| {overall:.3g}" + (f" ({where})" if where else ""))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
