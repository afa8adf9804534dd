#!/usr/bin/python3
"""Benchmark of the rotation model per head: qk-rotate + qk-complement's C code
against numpy.

Usage: bench_rotate.py [--qk-bench bin/qk-bench-rotate] [--heads 4] [--examples 500]
                       [--repeat 3] [--dump FILE]

Runs qk-bench-rotate (which makes thesis-size synthetic heads in memory, times the
C per-head work of both stages on one core and writes the heads and its results
to FILE), then times on the same vectors a plain numpy implementation of the
same formulas (docs/rotation.md): moments, drift axis a, separation axis b
(numpy.linalg.eigh), the {a, b} metrics, the omega grid with golden-section
refinement (numpy.linalg.lstsq per frequency and kind), the complement basis
(eigh), residual_pos_r, and per pair the angles (arctan2), the raw and best-cut
Pearson r over 72 cuts, the Fisher LDA and the radial spread. Both run on one
core (BLAS limited to one thread). Prints both times, their ratio, and the
largest differences between the two sets of results.
"""
import argparse
import os
import re
import sys

from benchlib import best_seconds, kernels, kernels_line, one_blas_thread, read_heads, run_c

one_blas_thread()  # like the C side; before numpy loads BLAS

try:
    import numpy as np
except ImportError as exc:
    sys.exit(f"bench_rotate: {sys.executable} cannot import numpy ({exc})")

N_PAIRS = 30
CUTS = 72
GRID = 400
REFINE = 20
TAU = 0.1


def corr(v, cov, g, var_t, zero_var):
    var_p = v @ cov @ v
    if var_t <= 0 or var_p <= zero_var:
        return 0.0
    return float(np.clip(v @ g / np.sqrt(var_p * var_t), -1, 1))


def omega_fit(y, t, kind):
    """Shared-frequency sinusoid, per-kind c + A cos + B sin (lstsq per kind)."""
    tp = t - t.min()
    span = tp.max()
    groups = [kind == 0, kind == 1]
    sst = sum(((y[g] - y[g].mean()) ** 2).sum() for g in groups)

    def r2(log_w):
        w = np.exp(log_w)
        sse = 0.0
        for g in groups:
            design = np.column_stack([np.ones(g.sum()), np.cos(w * tp[g]), np.sin(w * tp[g])])
            beta = np.linalg.lstsq(design, y[g], rcond=None)[0]
            sse += ((y[g] - design @ beta) ** 2).sum()
        return 1.0 - sse / sst

    grid = np.linspace(np.log(0.25 * np.pi / span), np.log(20 * np.pi / span), GRID)
    scores = np.array([r2(lw) for lw in grid])
    best = int(np.argmax(scores))
    best_lw, best_r2 = grid[best], scores[best]
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, GRID - 1)]
    gold = 0.5 * (np.sqrt(5) - 1)
    x1, x2 = hi - gold * (hi - lo), lo + gold * (hi - lo)
    f1, f2 = r2(x1), r2(x2)
    for _ in range(REFINE):
        for x, f in ((x1, f1), (x2, f2)):
            if f > best_r2:
                best_lw, best_r2 = x, f
        if f1 >= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - gold * (hi - lo)
            f1 = r2(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + gold * (hi - lo)
            f2 = r2(x2)
    for x, f in ((x1, f1), (x2, f2)):
        if f > best_r2:
            best_lw, best_r2 = x, f
    return float(np.exp(best_lw)), float(best_r2)


def angle_stats(theta, t):
    tc = t - t.mean()
    raw = np.corrcoef(theta, t)[0, 1]
    psi = 2 * np.pi * np.arange(CUTS) / CUTS
    x = theta[None, :] - psi[:, None]
    x = np.where(x <= -np.pi, x + 2 * np.pi, x)
    xc = x - x.mean(axis=1, keepdims=True)
    r = (xc @ tc) / np.sqrt((xc * xc).sum(axis=1) * (tc @ tc))
    best = int(np.argmax(np.abs(r)))
    return raw, r[best]


def lda_balanced(pq, pk):
    mq, mk = pq.mean(0), pk.mean(0)
    n = len(pq) + len(pk)
    sw = (len(pq) * np.cov(pq.T, bias=True) + len(pk) * np.cov(pk.T, bias=True)) / n
    w = np.linalg.solve(sw, mq - mk)
    cut = w @ (mq + mk) / 2
    return 0.5 * ((pq @ w > cut).mean() + (pk @ w <= cut).mean())


def numpy_head(q, t_q, k, t_k):
    q = q.astype(np.float64)
    k = k.astype(np.float64)
    x = np.vstack([q, k])
    t = np.concatenate([t_q, t_k]).astype(np.float64)
    kind = np.concatenate([np.zeros(len(q), int), np.ones(len(k), int)])
    d = x.shape[1]
    # moments
    mu_q, mu_k, mu = q.mean(0), k.mean(0), x.mean(0)
    s_q = np.cov(q.T, bias=True)
    s_k = np.cov(k.T, bias=True)
    xc = x - mu
    tc = t - t.mean()
    sigma = xc.T @ xc / len(x)
    c = xc.T @ tc / len(x)
    var_t = tc @ tc / len(x)
    g_q = (q - mu_q).T @ (t_q - t_q.mean()) / len(q)
    g_k = (k - mu_k).T @ (t_k - t_k.mean()) / len(k)
    tr = np.trace(sigma)
    zero_var = 1e-12 * tr
    # axes
    a = c / np.linalg.norm(c)
    m = mu_q - mu_k
    c_delta = s_q + s_k + np.outer(m, m)
    p_a = np.eye(d) - np.outer(a, a)
    _, vec = np.linalg.eigh(p_a @ c_delta @ p_a)
    b = vec[:, -1]
    b = b - (a @ b) * a
    b /= np.linalg.norm(b)
    if b @ m < 0:
        b = -b
    res = {}
    res["position_r"] = abs(corr(a, sigma, c, var_t, zero_var))
    res["alpha_k"] = a @ g_k / np.var(t_k)
    res["mu_q_a"] = mu_q @ a
    res["separation_strength"] = b @ c_delta @ b / np.trace(c_delta)
    res["var_frac_b"] = b @ sigma @ b / tr
    res["omega"], res["omega_r_squared"] = omega_fit(x @ a, t, kind)
    # complement
    p_ab = p_a - np.outer(b, b)
    lam, vec = np.linalg.eigh(p_ab @ sigma @ p_ab)
    order = np.argsort(lam)[::-1][: d - 2]
    lam, basis = np.clip(lam[order], 0, None), vec[:, order]
    basis = p_ab @ basis
    basis /= np.linalg.norm(basis, axis=0)
    big = np.argmax(np.abs(basis), axis=0)
    basis *= np.sign(basis[big, np.arange(d - 2)])
    res["residual_pos_r"] = max(abs(corr(v, sigma, c, var_t, zero_var))
                                for v in [b] + list(basis.T))
    n_pairs = min(N_PAIRS, (d - 2) // 2)
    coords = xc @ basis[:, : 2 * n_pairs]
    best_abs = 0.0
    for i in range(n_pairs):
        u, w = coords[:, 2 * i], coords[:, 2 * i + 1]
        theta = np.arctan2(w, u)
        raw, best = angle_stats(theta, t)
        pts = np.column_stack([u, w])
        acc = lda_balanced(pts[kind == 0], pts[kind == 1])
        rho = np.hypot(u, w)
        _ = rho.std() / rho.mean()
        best_abs = max(best_abs, abs(best))
        if i == 0:
            res["pair0_var_frac"] = (lam[0] + lam[1]) / lam.sum()
            res["pair0_angle_r"] = raw
            res["pair0_angle_r_best"] = best
            res["pair0_cls_acc"] = acc
    res["max_abs_angle_r"] = best_abs
    return res


def parse_results(text):
    heads = []
    for line in text.splitlines():
        if line.startswith("result "):
            heads.append({k: float(v) for k, v in re.findall(r"(\w+)=(\S+)", line)})
    return heads


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qk-bench", default="bin/qk-bench-rotate")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--examples", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dump", default="build/bench/rotate-heads.bin")
    a = ap.parse_args()

    os.makedirs(os.path.dirname(a.dump) or ".", exist_ok=True)
    cmd = [a.qk_bench, "--heads", str(a.heads), "--examples", str(a.examples),
           "--repeat", str(a.repeat), "--dump", a.dump]
    print(kernels_line(kernels(os.path.dirname(a.qk_bench) or ".")))
    out = run_c(cmd)
    sys.stdout.write("".join(l + "\n" for l in out.splitlines() if not l.startswith("result ")))
    m = re.search(r"rotate \+ complement per head: ([0-9.]+) ms", out)
    if not m:
        sys.exit(f"bench_rotate: no time in the output of {' '.join(cmd)}")
    c_ms = float(m.group(1))
    c_results = parse_results(out)

    heads = read_heads(a.dump)
    best, py_results = best_seconds(lambda: [numpy_head(*h) for h in heads], a.repeat)
    py_ms = 1e3 * best / len(heads)
    print(f"numpy {np.__version__} rotate + complement per head: {py_ms:.3f} ms "
          f"(same heads, one core, best of {a.repeat})")
    print(f"speed-up: {py_ms / c_ms:.1f}x")

    worst = {}
    for cr, pr in zip(c_results, py_results):
        for key, v in pr.items():
            if key == "residual_pos_r":
                worst[key] = max(worst.get(key, 0.0), v, cr[key])
                continue
            diff = abs(cr[key] - v) / max(1.0, abs(v))
            worst[key] = max(worst.get(key, 0.0), diff)
    print("largest difference C vs numpy (relative; residual_pos_r: largest value of either):")
    for key in sorted(worst):
        print(f"  {key:22s} {worst[key]:.3g}")
    os.remove(a.dump)


if __name__ == "__main__":
    main()
