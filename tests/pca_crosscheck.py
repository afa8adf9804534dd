#!/usr/bin/python3
"""Independent combined QK PCA with numpy and scikit-learn, for test_pca.

Usage: pca_crosscheck.py HEADS.bin

HEADS.bin (little-endian): int32 n_heads, then per head int32 n_q, n_k, d;
float32 Q[n_q*d]; int32 t_q[n_q]; float32 K[n_k*d]; int32 t_k[n_k].

For every head it fits sklearn PCA(n_components=10, svd_solver='full') on the
pooled rows [Q; K] in float64, correlates each kind's projections with its
positions (numpy corrcoef; r = 0 when either side is constant), applies the
sign rule of docs/pca.md (anchor r_q, or r_k when |r_q| < 0.05) and prints

  pc HEAD PC explained_variance r_q r_k
  head HEAD pos_var_q pos_var_k pc0_share_q pc0_share_k mu_q0 mu_k0 sep0
       fisher0 acc01 acc0 alpha_q0 beta_k0

with repr() floats. Exit status 3 when numpy or scikit-learn is missing.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from benchlib import read_heads  # noqa: E402  (the heads file format)

try:
    import numpy as np
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
except ImportError as exc:
    sys.stderr.write(
        f"pca_crosscheck: {sys.executable} cannot import numpy and scikit-learn ({exc}); "
        "install the Debian packages python3-numpy and python3-sklearn\n")
    sys.exit(3)

N_PC = 10
ANCHOR = 0.05


def pearson(x, t):
    if np.std(x) == 0 or np.std(t) == 0:
        return 0.0
    return float(np.corrcoef(x, t)[0, 1])


def threshold_accuracy(a, b):
    """Best accuracy of one cut on a line, either class above it."""
    a, b = np.sort(a), np.sort(b)
    cuts = np.unique(np.concatenate([a, b]))
    a_le = np.searchsorted(a, cuts, side="right")
    b_le = np.searchsorted(b, cuts, side="right")
    best = max(len(a), len(b),
               int(((len(a) - a_le) + b_le).max()),
               int((a_le + (len(b) - b_le)).max()))
    return best / (len(a) + len(b))


def analyse(q, t_q, k, t_k):
    x = np.vstack([q, k]).astype(np.float64)
    pca = PCA(n_components=N_PC, svd_solver="full").fit(x)
    ev = pca.explained_variance_ratio_
    comps = pca.components_.copy()
    pq = (q.astype(np.float64) - pca.mean_) @ comps.T
    pk = (k.astype(np.float64) - pca.mean_) @ comps.T
    t_q = t_q.astype(np.float64)
    t_k = t_k.astype(np.float64)
    r_q = np.array([pearson(pq[:, i], t_q) for i in range(N_PC)])
    r_k = np.array([pearson(pk[:, i], t_k) for i in range(N_PC)])
    for i in range(N_PC):
        anchor = r_q[i] if abs(r_q[i]) >= ANCHOR else r_k[i]
        if anchor < 0:
            comps[i], pq[:, i], pk[:, i] = -comps[i], -pq[:, i], -pk[:, i]
            r_q[i], r_k[i] = -r_q[i], -r_k[i]

    pos_var_q = float(np.sum(ev * r_q ** 2))
    pos_var_k = float(np.sum(ev * r_k ** 2))
    share_q = ev[0] * r_q[0] ** 2 / pos_var_q if pos_var_q > 0 else 0.0
    share_k = ev[0] * r_k[0] ** 2 / pos_var_k if pos_var_k > 0 else 0.0
    mu_q0, mu_k0 = pq[:, 0].mean(), pk[:, 0].mean()
    fisher0 = (mu_q0 - mu_k0) ** 2 / (pq[:, 0].var() + pk[:, 0].var())
    # empirical priors; the lsqr solver uses the prior-weighted class
    # covariances with divisor n_class
    z = np.vstack([pq[:, :2], pk[:, :2]])
    y = np.r_[np.ones(len(pq)), np.zeros(len(pk))]
    acc01 = LinearDiscriminantAnalysis(solver="lsqr").fit(z, y).score(z, y)
    acc0 = threshold_accuracy(pq[:, 0], pk[:, 0])
    alpha_q0 = np.polyfit(t_q, pq[:, 0], 1)[0]
    beta_k0 = np.polyfit(t_k, pk[:, 0], 1)[0]
    head = [pos_var_q, pos_var_k, share_q, share_k, mu_q0, mu_k0, abs(mu_q0 - mu_k0),
            fisher0, acc01, acc0, alpha_q0, beta_k0]
    return ev, r_q, r_k, [float(v) for v in head]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for h, (q, t_q, k, t_k) in enumerate(read_heads(sys.argv[1])):
        ev, r_q, r_k, head = analyse(q, t_q, k, t_k)
        for i in range(N_PC):
            print(f"pc {h} {i} {float(ev[i])!r} {float(r_q[i])!r} {float(r_k[i])!r}")
        print(f"head {h} " + " ".join(repr(v) for v in head))


if __name__ == "__main__":
    main()
