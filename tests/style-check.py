#!/usr/bin/python3
"""The text conventions of docs/figure-style.md, checked where they end up.

    style-check.py figures FIGURE_DIR...   every figure.gp under the folders
    style-check.py page REPORT_DIR         the page (index.html) and the
                                           numbers files under BUILD/report

Figures: an axis label starts with a capital or with a symbol's markup
(sentence case), writes no hyphen for a minus (" - "), and a percent sign
stands a space after its number ("12.5 %", in every text of the script);
the symbols have their one form (r_q, r_k, alpha_K, alpha_Q, mu_Q: no "rQ=",
no "{/Italic", no lower-case alpha subscripts); in figure.svg every part of
a text after one with its own font size has one too. The page: every percent
sign a no-break space after its number, and one format per quantity in the
numbers files given with --numbers (bias strength and |alpha_K| x 10^3,
never unscaled). Prints one line per problem; exit status 1 if any.
"""
import glob
import os
import re
import sys

LABEL = re.compile(r'^set (x|y|x2|y2|cb)label "((?:[^"\\]|\\.)*)"')
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
SYMBOL_FORMS = [  # (pattern, what it should be)
    (re.compile(r'\br[QK]='), "r_q / r_k as {/:Italic r}_q"),
    (re.compile(r'\{/Italic '), "{/:Italic (the font kept)"),
    (re.compile(r'α\}?_\{?(/\*[0-9.]+ )?[qk]\b'), "alpha_Q / alpha_K (upper-case subscript)"),
    (re.compile(r'μ\}?_\{?(/\*[0-9.]+ )?[qk]\b'), "mu_Q / mu_K (upper-case subscript)"),
    (re.compile(r'bias\\\\_strength|separation\\\\_strength'), "bias strength / separation strength in words"),
]


def figure_problems(path):
    problems = []
    in_data = False
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if in_data:
            in_data = line != "EOD"
            texts = [m.group(1) for m in STRING.finditer(line)]
        elif re.match(r'^\$\w+ << EOD$', line):
            in_data = True
            continue
        elif line.startswith("#"):
            continue
        else:
            texts = [m.group(1) for m in STRING.finditer(line)]
            label = LABEL.match(line)
            if label:
                text = label.group(2)
                if re.match(r'[a-z]', text):
                    problems.append((n, "axis label not in sentence case: %s" % text))
                if re.search(r'\s-\s', text):
                    problems.append((n, "hyphen for a minus in an axis label: %s" % text))
        # gnuplot formats ("%.1f", "%%") are not text; a digit before a
        # percent sign is
        for text in texts:
            if re.search(r'\d%', text.replace("%%", "%")) and not re.fullmatch(r'[%.\d a-z+-]*', text):
                problems.append((n, "percent sign without its space: %s" % text))
            if re.search(r'[\w)] - [\w(]', text):
                problems.append((n, "hyphen for a minus: %s" % text))
            for pattern, want in SYMBOL_FORMS:
                if pattern.search(text):
                    problems.append((n, "symbol not in its one form (%s): %s" % (want, text)))
    return problems


def check_figures(dirs):
    bad = 0
    files = sorted(f for d in dirs for f in glob.glob(os.path.join(d, "**", "figure.gp"), recursive=True))
    if not files:
        print("no figure.gp under %s" % " ".join(dirs))
        return 1
    for f in files:
        for n, what in figure_problems(f):
            print("%s:%d: %s" % (f, n, what))
            bad += 1
        svg = os.path.join(os.path.dirname(f), "figure.svg")
        if os.path.exists(svg):
            for what in svg_size_problems(svg):
                print("%s: %s" % (svg, what))
                bad += 1
    return bad


TEXT = re.compile(r'<text\b.*?</text>', re.S)
TSPAN = re.compile(r'<tspan\b[^>]*>')


def svg_size_problems(path):
    """A part of a text (tspan) after a part with its own font size that has
    none: SVG would draw it at the whole text's size, not at the size
    gnuplot meant (qk_plot_render repairs gnuplot's SVG)."""
    out = []
    for text in TEXT.findall(open(path, encoding="utf-8").read()):
        sized = False
        for tag in TSPAN.findall(text):
            if "font-size=" in tag:
                sized = True
            elif sized:
                out.append("a text part without its font size after one with it: %s" % tag[:60])
                break
    return out[:3]


# The quantities printed in more than one place: a key belongs to one when
# its last component matches; all its keys take one format.
QUANTITIES = {
    "bias strength x 10^3": re.compile(r'bias(_\w+)?_x1e3$|^(mean|model_min|model_max)_x1e3$'),
    "|alpha_K| x 10^3": re.compile(r'alpha_k(_\w+)?_x1e3$'),
}
UNSCALED = re.compile(r'^(bias|alpha_k|\w+_bias)$')  # the same quantities without their unit


def check_numbers(files):
    bad = 0
    formats = {}
    for f in files:
        for line in open(f, encoding="utf-8"):
            part = line.rstrip("\n").split("\t")
            if part[0] != "value":
                continue
            key, fmt = part[1], part[2]
            last = key.split(".")[-1]
            if key.startswith(("rotation.", "plasticity.")) and UNSCALED.match(last):
                print("%s: %s is printed unscaled (the quantity is printed x 10^3)" % (f, key))
                bad += 1
            for name, pattern in QUANTITIES.items():
                if pattern.search(last) and (name != "bias strength x 10^3" or "bias" in key):
                    formats.setdefault(name, {}).setdefault(fmt, key)
    for name, seen in formats.items():
        if len(seen) > 1:
            print("%s printed in %d formats: %s" % (name, len(seen),
                  ", ".join("%s (%s)" % (k, f) for f, k in sorted(seen.items()))))
            bad += 1
    return bad


def check_page(report_dir, numbers):
    page = open(os.path.join(report_dir, "index.html"), encoding="utf-8").read()
    body = re.sub(r'<style>.*?</style>|<script>.*?</script>', '', page, flags=re.S)
    text = re.sub(r'<[^>]+>', '', body).replace("&nbsp;", "\u00a0")
    bad = 0
    for m in re.finditer(r'\d( ?)%', text):
        print("index.html: percent sign %s its number: ...%s..." % (
            "a plain space after" if m.group(1) else "without a space after",
            text[max(0, m.start() - 30):m.end() + 10].replace("\n", " ")))
        bad += 1
    return bad + check_numbers(numbers)


def main(argv):
    if len(argv) >= 3 and argv[1] == "figures":
        bad = check_figures(argv[2:])
    elif len(argv) >= 3 and argv[1] == "page":
        numbers = argv[argv.index("--numbers") + 1:] if "--numbers" in argv else []
        bad = check_page(argv[2], numbers)
    else:
        print(__doc__)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
