#!/usr/bin/env python3
"""Coefficients of the single-precision PP of the plasticity stage (src/lib/analysis/plasticity_pp.c).

Usage: pp_coefficients.py [--check N]     (needs mpmath: Debian python3-mpmath)

PP as a function of y = z^2 = m^2 / v:

    PP(y) = 4 Phi(z) Phi(-z) = erfc(x) (2 - erfc(x)),   x = sqrt(y / 2)

an entire function of y, falling from 1 at y = 0 to 1.4e-14 at y = 60. The
stage evaluates it in single precision, piece by piece, without a square
root, an exponential or a division of its own:

    y >= 60 (or NaN): PP = 0 (PP(60) = 1.4e-14)
    t = y / 4 + 1 (one fused multiply-add in float)
    piece j = the exponent and the top 3 mantissa bits of t: 8 pieces per
              octave of t, 32 pieces on [0, 60)
    PP = polynomial of degree 5 in u = y - centre_j (Horner, fused
         multiply-adds), clamped to [0, 1]; y = NaN (0 / 0): PP = 1

The polynomials are Chebyshev interpolants (mpmath, 40 digits) of PP on each
piece, turned into monomials of u and rounded to float. Prints the C tables
pasted into src/lib/analysis/plasticity_pp.c, then the largest absolute error of the
algorithm against mpmath's PP on N points of [0, 64) (default 20000), with
every float operation emulated with correct rounding (mpmath at 24 bits):
the rounding of the arithmetic included, not only the fit.
"""
import sys

import mpmath as mp

mp.mp.dps = 40
T_SCALE = 0.25   # t = y T_SCALE + 1
OCTAVES = 4      # t in [1, 16): y in [0, 60)
PER_OCTAVE = 8   # pieces per octave: 3 mantissa bits
DEGREE = 5


def pp(y):
    e = mp.erfc(mp.sqrt(mp.mpf(y) / 2))
    return e * (2 - e)


def piece_bounds(j):
    """[lo, hi) in y of piece j."""
    octave, q = divmod(j, PER_OCTAVE)
    t_lo = mp.mpf(2) ** octave * (1 + mp.mpf(q) / PER_OCTAVE)
    t_hi = mp.mpf(2) ** octave * (1 + mp.mpf(q + 1) / PER_OCTAVE)
    return (t_lo - 1) / T_SCALE, (t_hi - 1) / T_SCALE


def cheb_monomial(f, n):
    """Monomial coefficients in s in [-1, 1] of the degree-n Chebyshev interpolant of f(s)."""
    count = n + 1
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / count) for k in range(count)]
    vals = [f(s) for s in nodes]
    cheb = [2 * mp.fsum(vals[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / count)
                        for k in range(count)) / count for j in range(count)]
    cheb[0] /= 2
    basis = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for _ in range(2, count):
        nxt = [mp.mpf(0)] + [2 * v for v in basis[-1]]
        for i, v in enumerate(basis[-2]):
            nxt[i] -= v
        basis.append(nxt)
    mono = [mp.mpf(0)] * count
    for j in range(count):
        for i, v in enumerate(basis[j]):
            mono[i] += cheb[j] * v
    return mono


def to_float(x):
    """x rounded to the nearest IEEE single (as an mpf)."""
    with mp.workprec(24):
        return +mp.mpf(x)


def tables():
    centres, coefs = [], []
    for j in range(OCTAVES * PER_OCTAVE):
        lo, hi = piece_bounds(j)
        centre = to_float((lo + hi) / 2)
        half = (hi - lo) / 2
        # a little beyond the piece: the float t puts y near an edge on either side
        mono = cheb_monomial(lambda s: pp(centre + s * half * mp.mpf(1.001)), DEGREE)
        scale = half * mp.mpf(1.001)
        centres.append(centre)
        coefs.append([to_float(c / scale ** k) for k, c in enumerate(mono)])
    return centres, coefs


def float_literal(x):
    mantissa, exponent = float(x).hex().split("p")
    mantissa = mantissa.rstrip("0")
    return mantissa + ("0" if mantissa.endswith(".") else "") + "p" + exponent + "f"


def print_tables(centres, coefs):
    n = len(centres)
    print("static const float pp_centre[%d] = {" % n)
    for i in range(0, n, 4):
        print("    " + ", ".join(float_literal(c) for c in centres[i:i + 4]) + ",")
    print("};")
    print("static const float pp_coef[%d][%d] = {" % (DEGREE + 1, n))
    for k in range(DEGREE + 1):
        print("    {")
        for i in range(0, n, 4):
            print("        " + ", ".join(float_literal(coefs[j][k]) for j in range(i, i + 4)) + ",")
        print("    },")
    print("};")


def pp_float(y, centres, coefs):
    """The algorithm of plasticity_pp.c with every operation rounded to float."""
    if y >= 60:
        return mp.mpf(0)
    t = to_float(y * mp.mpf(T_SCALE) + 1)
    octave = int(mp.floor(mp.log(t, 2)))
    j = octave * PER_OCTAVE + int(mp.floor((t / 2 ** octave - 1) * PER_OCTAVE))
    u = to_float(y - centres[j])
    p = coefs[j][DEGREE]
    for k in range(DEGREE - 1, -1, -1):
        p = to_float(p * u + coefs[j][k])
    return min(max(p, mp.mpf(0)), mp.mpf(1))


def main():
    points = 20000
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        points = int(sys.argv[2])
    centres, coefs = tables()
    print_tables(centres, coefs)
    worst, where = mp.mpf(0), None
    for i in range(points):
        y = to_float(mp.mpf(64) * i / points)
        err = abs(pp_float(y, centres, coefs) - pp(y))
        if err > worst:
            worst, where = err, y
    print("/* largest |error| %.3g at y = %.6g (%d points of [0, 64)) */"
          % (float(worst), float(where), points))


if __name__ == "__main__":
    main()
