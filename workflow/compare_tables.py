#!/usr/bin/python3
"""Compares two trees of tables (.tsv tab-separated, .csv comma-separated) cell by cell.

Usage: compare_tables.py BEFORE_DIR AFTER_DIR [-v]

Every file under BEFORE_DIR must exist under AFTER_DIR with the same rows and
columns and the same non-numeric cells; numbers may differ (NaN matches NaN).
Prints the number of files, how many are byte-identical, and the largest
absolute difference of a number (with -v, per file). Exit status 1 when a
file is missing or its shape or text differs.
"""
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


def compare(a, b):
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


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().split("\n\n")[1])
    before, after, verbose = sys.argv[1], sys.argv[2], "-v" in sys.argv[3:]
    overall, n, bad, same = 0.0, 0, 0, 0
    for root, _, files in os.walk(before):
        for name in sorted(files):
            pa = os.path.join(root, name)
            pb = os.path.join(after, os.path.relpath(pa, before))
            if not os.path.exists(pb):
                print(f"MISSING {pb}")
                bad += 1
                continue
            worst, what = compare(pa, pb)
            n += 1
            if worst is None:
                print(f"MISMATCH {pb}: {what}")
                bad += 1
                continue
            same += what == "identical"
            overall = max(overall, worst)
            if verbose:
                print(f"{worst:.3g}\t{what}\t{os.path.relpath(pa, before)}")
    print(f"{n} files, {same} byte-identical, {bad} mismatched; "
          f"largest |difference| {overall:.3g}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
