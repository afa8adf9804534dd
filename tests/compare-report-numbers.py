#!/usr/bin/env python3
"""compare-report-numbers.py OLD.html NEW.html: every number the old report
shows, section by section, must be in the new one with the same value.

A tool for changes to the report's code paths (run by hand): numbers are
read from the visible text of each <section> (and the header), written in a
common form (true minus and thousands separators undone, "x10^e" as "ee", a
leading "+" dropped, a rounded zero without sign) and compared as multisets,
so moved rows, reordered tables and new numbers are fine, a lost or changed
number is not. The footer (provenance) and the tables' column headers are
left out. Exit status 1 when a
number is missing, with the list."""
import collections
import html
import re
import sys


def visible_text(fragment):
    # column headers are labels, not numbers of the report
    fragment = re.sub(r"<(style|script|thead)\b.*?</\1>", " ", fragment, flags=re.S)
    fragment = re.sub(r"</?span\b[^>]*>", "", fragment)
    # a power of ten: 4.3×10<sup>−16</sup> -> 4.3e-16
    fragment = re.sub(r"(\d+(?:\.\d+)?)\s*(?:×|&times;)\s*10<sup>(−|&minus;|-)?(\d+)</sup>",
                      lambda m: "%se%s%s" % (m.group(1), "-" if m.group(2) else "", m.group(3)),
                      fragment)
    fragment = re.sub(r"<[^>]*>", " ", fragment)
    return html.unescape(fragment)


def numbers(text):
    text = text.replace("\u2212", "-")
    # thousands separators: 3,239 -> 3239 (not "1, 2" lists)
    text = re.sub(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])",
                  lambda m: m.group(0).replace(",", ""), text)
    out = []
    for m in re.finditer(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text):
        tok = m.group(0).lstrip("+")
        if "e" in tok:
            mant, exp = tok.split("e")
            tok = "%se%d" % (mant, int(exp))
        if tok.startswith("-") and not re.search(r"[1-9]", tok.split("e")[0]):
            tok = tok[1:]
        out.append(tok)
    return out


def sections(page):
    parts = {"header": re.search(r"<header>.*?</header>", page, re.S)}
    for m in re.finditer(r'<section id="([^"]+)">(.*?)</section>', page, re.S):
        parts[m.group(1)] = m
    return {k: collections.Counter(numbers(visible_text(v.group(0)))) for k, v in parts.items() if v}


def main():
    old = sections(open(sys.argv[1], encoding="utf-8").read())
    new = sections(open(sys.argv[2], encoding="utf-8").read())
    missing = 0
    for name, counts in old.items():
        have = new.get(name, collections.Counter())
        lost = {n: c - have[n] for n, c in counts.items() if have[n] < c}
        total = sum(counts.values())
        print("%-12s %5d numbers in the old report, %5d in the new one, %d missing"
              % (name, total, sum(have.values()), sum(lost.values())))
        for n, c in sorted(lost.items()):
            print("    missing: %s (%d times)" % (n, c))
        missing += sum(lost.values())
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
