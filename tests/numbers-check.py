#!/usr/bin/env python3
"""numbers-check.py REPORT_DIR TEMPLATE...: the page and numbers.tex agree.

REPORT_DIR holds index.html, numbers.tex and tables/*.tex as qk-report
writes them; the templates are those the page was rendered from. Checks:

  - numbers.tex: after its macro lines, one line per value, exactly
    \\qkdef{KEY}{VALUE}, every key once, then lines \\qkrawdef{KEY}{DECIMAL};
  - every value of the page (an element with data-qk="KEY": a number or a
    label in the text, a table cell) has KEY in numbers.tex with the same
    value, both read back to a common form (true minus, thousands
    separators, powers of ten, LaTeX escapes undone; a table's em dash and
    "n/a" are both a missing value);
  - the page's other values (data-qv) are only the provenance text
    (data source, suite version, BLAS, rebuild arguments), and no number
    of the page outside the footer is anything but a typeset value or text
    of the templates;
  - every table fragment is a booktabs tabular with as many cells a row as
    columns.

Prints one line per problem and exits 1 if there is any."""
import glob
import html
import re
import sys

PLAIN_VALUES = {"data_source", "suite_version", "blas_library", "blas_core", "rebuild_args"}
QKDEF = re.compile(r"\\qkdef\{([A-Za-z0-9._-]+)\}\{(.*)\}$")
QKRAWDEF = re.compile(r"\\qkrawdef\{([A-Za-z0-9._-]+)\}\{(nan|-?[0-9.]+(?:e[-+]?[0-9]+)?)\}$")

# LaTeX that qk-report writes, and the text it stands for
LATEX_TEXT = [
    (r"\ensuremath{-}", "-"), (r"\ensuremath{\rightarrow}", "\u2192"),
    (r"\ensuremath{\times}", "x"), (r"\ensuremath{\cdot}", "\u00b7"),
    (r"\ensuremath{\geq}", "\u2265"), (r"\ensuremath{\leq}", "\u2264"),
    (r"\ensuremath{\pm}", "\u00b1"), (r"\ensuremath{\alpha}", "\u03b1"),
    (r"\ensuremath{\mu}", "\u03bc"), (r"\dots{}", "\u2026"), (r"\textbackslash{}", "\\"),
    (r"\textasciitilde{}", "~"), (r"\textasciicircum{}", "^"), (r"\textbar{}", "|"),
    (r"\textless{}", "<"), (r"\textgreater{}", ">"), ("{,}", ","), ("---", "\u2014"),
    ("--", "\u2013"),
]


def canon_tex(value):
    m = re.fullmatch(r"\\ensuremath\{([-+]?)([0-9.]+)\\times10\^\{(-?\d+)\}\}", value)
    if m:
        return "%s%sx10^%s" % (m.group(1), m.group(2), m.group(3))
    for tex, text in LATEX_TEXT:
        value = value.replace(tex, text)
    value = re.sub(r"\\([_%&#${}])", r"\1", value)
    return canon_text(value)


def canon_html(inner):
    inner = re.sub(r"<sup>(.*?)</sup>", r"^\1", inner)
    inner = re.sub(r"<[^>]*>", "", inner)
    return canon_text(html.unescape(inner).replace("\u00d7", "x"))


def canon_text(value):
    value = value.replace("\u2212", "-")
    return "n/a" if value == "\u2014" else value


def read_tex(path, problems):
    values = {}
    body = False
    for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if not line:
            continue
        if line.startswith("\\qkdef{"):
            body = True
            m = QKDEF.match(line)
            if not m:
                problems.append("%s line %d: not exactly \\qkdef{KEY}{VALUE}: %s" % (path, n, line))
            elif m.group(1) in values:
                problems.append("%s line %d: key %s defined twice" % (path, n, m.group(1)))
            else:
                values[m.group(1)] = m.group(2)
        elif line.startswith("\\qkrawdef{") and body:
            m = QKRAWDEF.match(line)
            if not m:
                problems.append("%s line %d: not exactly \\qkrawdef{KEY}{DECIMAL}: %s"
                                % (path, n, line))
        elif body:
            problems.append("%s line %d: a line that is no \\qkdef: %s" % (path, n, line))
    return values


def page_values(page):
    """(key, inner html) of every data-qk element, and the data-qv keys."""
    qk = re.findall(r'<(span|td)\b[^>]*\bdata-qk="([^"]*)"[^>]*>(.*?)</\1>', page, re.S)
    qv = re.findall(r'<span data-qv="([^"]*)">', page)
    return [(html.unescape(k), inner) for _, k, inner in qk], qv


def number_tokens(text):
    return re.findall(r"\d+(?:[.,]\d+)*", text)


def template_numbers(paths):
    nums = set()
    for p in paths:
        text = open(p, encoding="utf-8").read()
        text = re.sub(r"\{\{.*?\}\}", " ", text)
        text = re.sub(r"<(style|script)\b.*?</\1>", " ", text, flags=re.S)
        text = html.unescape(re.sub(r"<[^>]*>", " ", text))
        nums.update(number_tokens(text))
    return nums


def stray_numbers(page, allowed):
    body = re.search(r"<body>(.*)</body>", page, re.S).group(1)
    body = re.sub(r"<footer\b.*?</footer>", " ", body, flags=re.S)
    body = re.sub(r"<(style|script|thead)\b.*?</\1>", " ", body, flags=re.S)
    body = re.sub(r'<(span|td)\b[^>]*\bdata-q[kv]="[^"]*"[^>]*>.*?</\1>', " ", body, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]*>", " ", body))
    return sorted({n for n in number_tokens(text) if n not in allowed})


def check_fragment(path, problems):
    lines = open(path, encoding="utf-8").read().split("\n")
    spec = [l for l in lines if l.startswith("\\begin{tabular}{")]
    if not spec or not all(x in lines for x in ("\\toprule", "\\midrule", "\\bottomrule",
                                                 "\\end{tabular}")):
        problems.append("%s: not a booktabs tabular" % path)
        return
    cols = len(re.match(r"\\begin\{tabular\}\{([lrc]*)\}", spec[0]).group(1))
    for line in lines:
        if line == "\\multicolumn{%d}{l}{\\emph{not in this run}} \\\\" % cols:
            continue  # the one row of a table the run has no rows of
        if line.endswith(" \\\\") and line.count(" & ") + 1 != cols:
            problems.append("%s: a row without %d cells: %s" % (path, cols, line))


def main():
    report, templates = sys.argv[1], sys.argv[2:]
    problems = []
    tex = read_tex(report + "/numbers.tex", problems)
    page = open(report + "/index.html", encoding="utf-8").read()
    values, plain = page_values(page)
    for key, inner in values:
        if key not in tex:
            problems.append("page value %s is not in numbers.tex" % key)
        elif canon_html(inner) != canon_tex(tex[key]):
            problems.append("page value %s is '%s', numbers.tex has '%s'"
                            % (key, canon_html(inner), canon_tex(tex[key])))
    for key in plain:
        if key not in PLAIN_VALUES:
            problems.append("page value %s does not come from a numbers file" % key)
    for n in stray_numbers(page, template_numbers(templates)):
        problems.append("number %s on the page is neither a value nor template text" % n)
    fragments = sorted(glob.glob(report + "/tables/*.tex"))
    for f in fragments:
        check_fragment(f, problems)
    for p in problems:
        print(p)
    print("%d values on the page checked against %d in numbers.tex, %d table fragments: %s"
          % (len(values), len(tex), len(fragments), "%d problems" % len(problems) if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
