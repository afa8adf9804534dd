#!/usr/bin/python3
"""Benchmark of the per-head PCA: qk-pca's C code against scikit-learn.

Usage: bench_pca.py [--qk-bench bin/qk-bench-pca] [--heads 8] [--rows 8000]
                    [--dim 128] [--repeat 3] [--dump FILE]

Runs qk-bench-pca (which times the C per-head computation on synthetic
heads: the fit alone, with every derived metric, and with the key moments
shared by 4 query heads; and writes the heads to FILE), then times on those
vectors what
the original analysis did per head: PCA(n_components=10, svd_solver='full')
on the pooled float64 rows [Q; K], the projections of each kind and numpy's
Pearson r of each of the 10 components with position, per kind. Both run on
one core (BLAS limited to one thread). Prints both times and their ratio.
"""
import argparse
import os
import re
import sys

from benchlib import best_seconds, kernels, kernels_line, one_blas_thread, read_heads, run_c

one_blas_thread()  # like the C side; before numpy loads BLAS

try:
    import numpy as np
    from sklearn.decomposition import PCA
except ImportError as exc:
    sys.exit(f"bench_pca: {sys.executable} cannot import numpy and scikit-learn ({exc})")

N_PC = 10


def sklearn_head(q, t_q, k, t_k):
    x = np.vstack([q, k]).astype(np.float64)
    pca = PCA(n_components=N_PC, svd_solver="full").fit(x)
    pq = pca.transform(q.astype(np.float64))
    pk = pca.transform(k.astype(np.float64))
    r_q = [np.corrcoef(pq[:, i], t_q)[0, 1] for i in range(N_PC)]
    r_k = [np.corrcoef(pk[:, i], t_k)[0, 1] for i in range(N_PC)]
    return pca.explained_variance_ratio_[0] + abs(r_q[0]) + abs(r_k[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qk-bench", default="bin/qk-bench-pca")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--rows", type=int, default=8000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dump", default="build/bench/pca-heads.bin")
    a = ap.parse_args()

    os.makedirs(os.path.dirname(a.dump) or ".", exist_ok=True)
    cmd = [a.qk_bench, "--heads", str(a.heads), "--rows", str(a.rows), "--dim", str(a.dim),
           "--repeat", str(a.repeat), "--dump", a.dump]
    print(kernels_line(kernels(os.path.dirname(a.qk_bench) or ".")))
    out = run_c(cmd)
    sys.stdout.write(out)
    times = [float(v) for v in re.findall(r": ([0-9.]+) ms", out)]
    if len(times) != 3:
        sys.exit(f"bench_pca: expected three times in the output of {' '.join(cmd)}")
    c_fit, c_full, c_shared = times

    heads = read_heads(a.dump)
    best, _ = best_seconds(lambda: [sklearn_head(*h) for h in heads], a.repeat)
    py_ms = 1e3 * best / len(heads)
    print(f"scikit-learn {__import__('sklearn').__version__} PCA(svd_solver='full') + numpy "
          f"Pearson r per head: {py_ms:.3f} ms (same heads, one core, best of {a.repeat})")
    print(f"speed-up, same work (PCA + r): {py_ms / c_fit:.1f}x; with every derived metric: "
          f"{py_ms / c_full:.1f}x; as qk-pca runs a GQA model: {py_ms / c_shared:.1f}x")
    os.remove(a.dump)


if __name__ == "__main__":
    main()
