#!/usr/bin/env python3
"""Coefficients of the vectorisable erfc of the plasticity stage (src/lib/analysis/plasticity_erfc.c).

Usage: erfc_coefficients.py [--check N]     (needs mpmath: Debian python3-mpmath)

Prints the C tables pasted into src/lib/analysis/plasticity_erfc.c, then the largest
relative error of the double-precision algorithm below against mpmath's erfc
on N points (default 200000) of [0, 26.5], emulated operation by operation in
Python floats (IEEE doubles, correctly rounded like SSE2 without FMA):

    erfc(x) = exp(-x^2) G(x),   G(x) = exp(x^2) erfc(x)   (the scaled erfc)
    t = 1 / (1 + x/4),  G = polynomial in s = (t - centre) * width, per range:
        [0, 6): degree 18;  [6, 26.5): degree 13;  x >= 26.5: erfc = 0
    exp(-x^2) = 2^-k exp(-r): x = xh + xl (xh: x with the low 27 mantissa bits
        cleared, so xh^2 is exact), k = round(xh^2 log2 e),
        r = ((xh^2 - k ln2_hi) - k ln2_lo) + xl (xh + x),  exp(-r) of degree 11.

The polynomials are Chebyshev interpolants (mpmath, 50 digits) turned into
monomials of the normalised variable s in [-1, 1].
"""
import struct
import sys

import mpmath as mp

mp.mp.dps = 50
SPLIT = 6.0
TOP = 26.5
SCALE = 0.25  # t = 1 / (1 + x SCALE)


def cheb_monomial(f, a, b, n):
    """Monomial coefficients in s in [-1, 1] of the degree-n Chebyshev interpolant of
    f((b - a)/2 s + (a + b)/2)."""
    N = n + 1
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / N) for k in range(N)]
    vals = [f((b - a) / 2 * s + (a + b) / 2) for s in nodes]
    c = [2 * mp.fsum(vals[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / N) for k in range(N)) / N
         for j in range(N)]
    c[0] /= 2
    T = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for _ in range(2, N):
        nxt = [mp.mpf(0)] + [2 * v for v in T[-1]]
        for i, v in enumerate(T[-2]):
            nxt[i] -= v
        T.append(nxt)
    mono = [mp.mpf(0)] * N
    for j in range(N):
        for i, v in enumerate(T[j]):
            mono[i] += c[j] * v
    return [float(v) for v in mono]


def scaled_erfc(x):
    return mp.exp(x * x) * mp.erfc(x)


def t_of(x):
    return 1.0 / (1.0 + x * SCALE)


def g_range(lo, hi, degree):
    """(centre, width, coefficients): s = (t - centre) * width maps t(hi)..t(lo) to -1..1."""
    ta, tb = mp.mpf(1) / (1 + mp.mpf(hi) * SCALE), mp.mpf(1) / (1 + mp.mpf(lo) * SCALE)
    coef = cheb_monomial(lambda t: scaled_erfc((1 / t - 1) / SCALE), ta, tb, degree)
    return float((ta + tb) / 2), float(2 / (tb - ta)), coef


def horner(coef, s):
    r = coef[-1]
    for v in reversed(coef[:-1]):
        r = r * s + v
    return r


def bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_bits(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def main():
    n_check = int(sys.argv[sys.argv.index("--check") + 1]) if "--check" in sys.argv else 200000
    low = g_range(0.0, SPLIT, 18)
    high = g_range(SPLIT, TOP, 13)
    exp_coef = cheb_monomial(lambda r: mp.exp(-r), mp.mpf(-0.35), mp.mpf(0.35), 11)
    # exp(-r) on [-0.35, 0.35] as a polynomial of s = r / 0.35: fold the scale in
    exp_coef = [c / 0.35 ** i for i, c in enumerate(exp_coef)]
    ln2 = mp.log(2)
    ln2_hi = from_bits(bits(float(ln2)) & ~((1 << 21) - 1))  # 32 significant bits
    ln2_lo = float(ln2 - ln2_hi)
    log2e = float(1 / ln2)
    magic = 6755399441055744.0  # 1.5 * 2^52: adding it rounds to an integer

    def erfc_emulated(x):
        if x >= TOP:
            return 0.0
        t = 1.0 / (1.0 + x * SCALE)
        centre, width, coef = low if x < SPLIT else high
        g = horner(coef, (t - centre) * width)
        xh = from_bits(bits(x) & ~((1 << 27) - 1))
        yh = xh * xh
        k = (yh * log2e + magic) - magic
        r = ((yh - k * ln2_hi) - k * ln2_lo) + (x - xh) * (xh + x)
        e = horner(exp_coef, r)
        scale = from_bits((1023 - int(k)) << 52)
        return g * e * scale

    def table(name, coef):
        body = ",\n    ".join(", ".join(f"{c.hex()}" for c in coef[i:i + 3])
                              for i in range(0, len(coef), 3))
        return f"static const double {name}[{len(coef)}] = {{\n    {body}}};"

    print(f"#define ERFC_SPLIT {SPLIT}\n#define ERFC_TOP {TOP}\n#define ERFC_T_SCALE {SCALE}")
    print(f"#define ERFC_LOW_CENTRE {low[0].hex()}\n#define ERFC_LOW_WIDTH {low[1].hex()}")
    print(f"#define ERFC_HIGH_CENTRE {high[0].hex()}\n#define ERFC_HIGH_WIDTH {high[1].hex()}")
    print(f"#define ERFC_LN2_HI {ln2_hi.hex()}\n#define ERFC_LN2_LO {ln2_lo.hex()}")
    print(f"#define ERFC_LOG2E {log2e.hex()}")
    print(table("erfc_low", low[2]))
    print(table("erfc_high", high[2]))
    print(table("erfc_exp", exp_coef))

    worst, where = 0.0, 0.0
    for i in range(n_check):
        x = TOP * i / n_check
        exact = mp.erfc(mp.mpf(x))
        err = abs(mp.mpf(erfc_emulated(x)) / exact - 1)
        if err > worst:
            worst, where = float(err), x
    print(f"/* largest relative error on {n_check} points of [0, {TOP}): "
          f"{worst:.3g} at x = {where} */")


if __name__ == "__main__":
    main()
