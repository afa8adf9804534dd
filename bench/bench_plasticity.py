#!/usr/bin/python3
"""Benchmark of the attention plasticity stage: qk-plasticity against its floor and numpy.

Usage: bench_plasticity.py --store STORE [--qk-plasticity bin/qk-plasticity]
                           [--heads 8] [--model-heads 0]
                           [--threads 2] [--workdir DIR]

Times, on the heads of one store (thesis size: about 8000 queries and 8000
keys of d = 128 per head, B = 8192, 128K context):
  1. qk-plasticity --floor on the first --heads + 1 heads with one thread:
     the CPU time per head and its floor, the GEMMs and PP evaluations the
     computation cannot avoid timed alone in the same run (docs/plasticity.md,
     "The floor"), as means over the --heads heads after the first, and the
     wall time per head (--timing; the store is opened and checked before the
     clock starts);
  2. a numpy implementation of the same per-head computation (orientation,
     positional regression, Householder rotation, diagnostics with
     scipy.stats, per-bin diagonal Gaussian model, exact enumeration of the
     same-example key pairs, PP per (pair, bin), profile and heatmap) on the
     same --heads heads, with one BLAS thread: wall and CPU time.
  Both run the first head as a warm-up, untimed: a process's one-time costs
  are no per-head work (numpy: scipy's lazy imports, the first BLAS call,
  the allocator's growth, some 0.4 s; qk-plasticity: its buffers' first
  use, the layout of the heads' positions, some 0.03 s). The model time
  (3.) has them all;
  3. one whole model with --threads threads: every head, or the first
     --model-heads heads with the time scaled to all heads (said so).
Prints, first, the instruction set the plasticity kernels ran (the best the
CPU has, or the lower one QK_ISA asks for: make bench-plasticity ISA=avx2)
and the BLAS kernel of the C program and of numpy; then the per-head times,
the floor and the ratios (CPU time against CPU time: other work on the
machine stretches wall times unevenly), the model time, the largest
difference between the numpy profile and the C profile of the same heads,
and a last tab-separated line with the same figures. It measures; it passes
or fails nothing.
"""
import argparse
import ctypes
import os
import re
import struct
import sys
import tempfile
import time

from benchlib import best_seconds, kernels, one_blas_thread, run_c as run_program

one_blas_thread()  # like each worker of the C program; before numpy loads BLAS

try:
    import numpy as np
except ImportError as exc:
    sys.exit(f"bench_plasticity: {sys.executable} cannot import numpy ({exc})")
try:
    import zstandard
except ImportError as exc:
    sys.exit(f"bench_plasticity: {sys.executable} cannot import zstandard ({exc}); "
             "install python3-zstandard")
try:
    from scipy import special, stats
    HAVE_SCIPY = True
except ImportError:
    HAVE_SCIPY = False


# ---- the store (docs/store-format.md) ------------------------------------------------

STORE_VERSION = 3  # the header is under the checksum since version 3
BF16, F32 = 1, 2  # vector encodings


def vectors(cfg, dim):
    """The float32 vectors of one config (rows x dim), decoded from the store."""
    rows, data = cfg["rows"], cfg["vector_data"]
    n = rows * dim
    if cfg["encoding"] == F32:
        return np.frombuffer(data, "<f4", n).reshape(rows, dim)
    low = np.frombuffer(data, np.uint8, n).astype(np.uint32)
    high = np.frombuffer(zstandard.ZstdDecompressor().decompress(bytes(data[n:])), np.uint8)
    bits = (high.astype(np.uint32) << 24) | (low << 16)
    return bits.view("<f4").reshape(rows, dim)


def open_store(path):
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    head = bytes(raw[:128])
    if head[:8] != b"QKSTORE\0":
        sys.exit(f"bench_plasticity: {path}: not a qkreport store")
    version, header_size = struct.unpack_from("<2I", head, 8)
    if version != STORE_VERSION:
        sys.exit(f"bench_plasticity: {path}: store version {version}, this script reads "
                 f"{STORE_VERSION} (rebuild the store: make load, or run qk-load again)")
    (n_configs, n_pairs, dim, _nl, _nq, _nkv, context, bucket) = struct.unpack_from(
        "<8I", head, 16)
    table_offset, file_size = struct.unpack_from("<2Q", head, 48)
    # the tables end the file (then zeros to a multiple of 64 bytes); the
    # checksum is left to qk-load --verify
    tables_end = table_offset + 64 * n_configs + 8 * n_pairs
    if (header_size != 128 or file_size != len(raw) or
            not tables_end <= file_size < tables_end + 64):
        sys.exit(f"bench_plasticity: {path}: corrupt store header")
    configs = []
    for i in range(n_configs):
        rec = bytes(raw[table_offset + 64 * i: table_offset + 64 * (i + 1)])
        layer, headno, kind, encoding = struct.unpack_from("<HHBB", rec, 0)
        rows, pos_off, ex_off, b_off, v_off, _src, v_bytes = struct.unpack_from("<7Q", rec, 8)
        configs.append(dict(layer=layer, head=headno, kind=chr(kind), rows=rows,
                            encoding=encoding,
                            position=np.frombuffer(raw, "<i4", rows, pos_off),
                            example=np.frombuffer(raw, "<i4", rows, ex_off),
                            bucket=np.frombuffer(raw, "<i4", rows, b_off),
                            vector_data=raw[v_off:v_off + v_bytes]))
    pairs_offset = table_offset + 64 * n_configs
    pairs = np.frombuffer(raw, "<u4", 2 * n_pairs, pairs_offset).reshape(n_pairs, 2)
    heads = sorted(((configs[q]["layer"], configs[q]["head"], int(q), int(k))
                    for q, k in pairs), key=lambda h: (h[0], h[1]))
    return dict(dim=dim, context=context, bucket=bucket, configs=configs, heads=heads)


# ---- the numpy implementation of one head ----------------------------------------------

def regress(t, x):
    tc = t - t.mean()
    stt = float(tc @ tc)
    mean = x.mean(axis=0)
    beta = (tc @ x) / stt if stt > 0 else np.zeros(x.shape[1])
    alpha = mean - beta * t.mean()
    ss_res = ((x - alpha - np.outer(t, beta)) ** 2).sum(axis=0)
    ss_tot = ((x - mean) ** 2).sum(axis=0)
    r2 = np.minimum(1.0 - ss_res / np.maximum(ss_tot, 1e-12), 1.0) if stt > 0 else 0 * mean
    return alpha, beta, r2


def diagnostics(t, xq, beta, xr, rng):
    """The head_metrics diagnostics, as the original analysis computed them."""
    norm = np.linalg.norm(beta)
    y = np.log2(t + 1.0)
    s = xq @ (beta / norm)
    b, a = np.polyfit(s, y, 1)
    out = [1.0 - ((y - a - b * s) ** 2).sum() / ((y - y.mean()) ** 2).sum()]
    if not HAVE_SCIPY:
        return out
    slope, icept = np.polyfit(t, xr[:, 0], 1)
    resid = xr[:, 0] - icept - slope * t
    z = (resid - resid.mean()) / resid.std(ddof=1)
    out += [stats.skew(z, bias=False), stats.kurtosis(z, bias=False), stats.kstest(z, "norm")[1]]
    noise = xr[:, 1:]
    zn = (noise - noise.mean(axis=0)) / noise.std(axis=0, ddof=1)
    out += [np.median(np.abs(stats.skew(zn, axis=0, bias=False))),
            np.median(np.abs(stats.kurtosis(zn, axis=0, bias=False)))]
    dims = rng.choice(zn.shape[1], size=min(64, zn.shape[1]), replace=False)
    out.append(np.median([stats.kstest(zn[:, j], "norm")[1] for j in dims]))
    return out


def normal_cdf(z):
    if HAVE_SCIPY:
        return special.ndtr(z)
    from math import erfc
    return 0.5 * np.vectorize(erfc)(-z / np.sqrt(2.0))


def numpy_head(store, q_cfg, k_cfg, factor, min_pairs, cell_min):
    B, L = store["bucket"], store["context"]
    q, k = store["configs"][q_cfg], store["configs"][k_cfg]
    xq = vectors(q, store["dim"]).astype(np.float64)
    xk = vectors(k, store["dim"]).astype(np.float64)
    tq = q["position"].astype(np.float64)
    tk = k["position"].astype(np.int64)
    # orientation: sign of the unweighted mean of the key bucket means
    buckets = np.unique(k["bucket"])
    means = np.stack([xk[k["bucket"] == b].mean(axis=0) for b in buckets])
    sign = np.sign(means.mean(axis=0))
    sign[sign == 0] = 1.0
    xq *= sign
    xk *= sign
    # regression, Householder basis, rotation
    _, beta, _ = regress(tq, xq)
    u = beta / np.linalg.norm(beta)
    w = u.copy()
    w[0] -= 1.0
    w /= np.linalg.norm(w)
    h = np.eye(len(w)) - 2.0 * np.outer(w, w)
    xr, kr = xq @ h, xk @ h
    diagnostics(tq, xq, beta, xr, np.random.default_rng(0))
    beta_pos, alpha_pos = np.polyfit(tq, xr[:, 0], 1)
    sigma2_pos = np.var(xr[:, 0] - alpha_pos - beta_pos * tq, ddof=1)
    # per-bin model
    n_bins = (L - 1) * factor // B + 1
    qbin = q["position"].astype(np.int64) * factor // B
    mean = np.zeros((n_bins, xr.shape[1]))
    var = np.zeros_like(mean)
    tau = np.full(n_bins, np.nan)
    nq = np.bincount(qbin, minlength=n_bins)
    for b in np.nonzero(nq >= 2)[0]:
        rows = xr[qbin == b]
        tau[b] = tq[qbin == b].mean()
        mean[b, 1:] = rows[:, 1:].mean(axis=0)
        var[b, 1:] = rows[:, 1:].var(axis=0, ddof=1)
        mean[b, 0] = alpha_pos + beta_pos * tau[b]
        var[b, 0] = sigma2_pos
    # every same-example key pair, with its first eligible bin
    order = np.lexsort((tk, k["example"]))
    ex_sorted, t_sorted = k["example"][order], tk[order]
    starts = np.flatnonzero(np.r_[True, ex_sorted[1:] != ex_sorted[:-1], True])
    pa, pb = [], []
    for lo, hi in zip(starts[:-1], starts[1:]):
        i, j = np.triu_indices(hi - lo, 1)
        pa.append(order[lo + i])
        pb.append(order[lo + j])
    pa, pb = np.concatenate(pa), np.concatenate(pb)
    first = np.maximum(tk[pa], tk[pb]) * factor // B + 1
    keep = first < n_bins
    pa, pb, first = pa[keep], pb[keep], first[keep]
    srt = np.argsort(first, kind="stable")
    pa, pb, first = pa[srt], pb[srt], first[srt]
    eligible = np.searchsorted(first, np.arange(n_bins), side="right")
    # the BLAS tables: S = K M^T and V = (delta o delta) C^T
    score = kr @ mean.T
    delta = kr[pa] - kr[pb]
    vtab = (delta * delta) @ var.T
    m_all = score[pa] - score[pb]
    dist = np.abs(tk[pa] - tk[pb]) // B
    pos_sum = tk[pa] + tk[pb]
    n_cells = (L - 1) // B + 1
    ap = np.full(n_bins, np.nan)
    cell_sum = np.zeros(n_cells * n_cells)
    cell_n = np.zeros(n_cells * n_cells, dtype=np.int64)
    for b in range(n_bins):
        n = eligible[b]
        if nq[b] < 2 or n < min_pairs:
            continue
        z = m_all[:n, b] / np.sqrt(vtab[:n, b])
        pp = 4.0 * normal_cdf(z) * normal_cdf(-z)
        ap[b] = pp.mean()
        mid = np.floor((2.0 * tau[b] - pos_sum[:n]) / (2.0 * B)).astype(np.int64)
        cell = dist[:n] * n_cells + mid
        cell_sum += np.bincount(cell, weights=pp, minlength=n_cells * n_cells)
        cell_n += np.bincount(cell, minlength=n_cells * n_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        cell_ap = np.where(cell_n >= cell_min, cell_sum / cell_n, np.nan)
    valid = ~np.isnan(ap)
    overall = float((nq[valid] * ap[valid]).sum() / nq[valid].sum())
    return ap, cell_ap, overall


# ---- running the C program ---------------------------------------------------------------

def program_defaults(program):
    """The defaults of a program's options, {option: text}, as it prints them."""
    out = run_program([program, "--print-defaults"])
    return dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)


def run_c(args, heads, threads, outdir, floor=False):
    """(heads, wall seconds of the analysis, the --floor figures or None)."""
    cmd = [args.qk_plasticity, "--timing", "--quiet", "--no-verify", "--threads", str(threads),
           "--out-dir", outdir, args.store]
    if heads:
        cmd[1:1] = ["--max-heads", str(heads)]
    if floor:
        cmd[1:1] = ["--floor"]
    out = run_program(cmd)
    found = re.search(r"(\d+) heads in ([0-9.]+) s", out)
    if not found:
        sys.exit(f"bench_plasticity: no timing line from {' '.join(cmd)}: {out!r}")
    figures = None
    if floor:
        lines = out.splitlines()
        header = next((i for i, l in enumerate(lines) if l.startswith("stage\t")), None)
        if header is None or header + 1 >= len(lines):
            sys.exit(f"bench_plasticity: no --floor line from {' '.join(cmd)}: {out!r}")
        figures = dict(zip(lines[header].split("\t"), lines[header + 1].split("\t")))
    return int(found.group(1)), float(found.group(2)), figures


def numpy_blas_core():
    """The kernel of the OpenBLAS numpy loaded, or what is known of its BLAS."""
    for line in open("/proc/self/maps"):
        path = line.split()[-1]
        if "openblas" in path.lower() and ".so" in path:
            try:
                corename = ctypes.CDLL(path).openblas_get_corename
                corename.restype = ctypes.c_char_p
                return corename().decode()
            except (OSError, AttributeError):
                pass
    return "not OpenBLAS"


def c_profiles(outdir):
    prof = {}
    with open(os.path.join(outdir, "plasticity_profile.tsv")) as fh:
        next(fh)
        for line in fh:
            layer, head, _k, qbin, _tau, _n, _p, ap = line.rstrip("\n").split("\t")
            prof.setdefault((int(layer), int(head)), {})[int(qbin)] = float(ap)
    return prof


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", required=True)
    ap.add_argument("--qk-plasticity", default="bin/qk-plasticity")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--model-heads", type=int, default=0,
                    help="time only this many heads for the model and scale (0: all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()

    store = open_store(args.store)
    heads = store["heads"]
    q0 = store["configs"][heads[0][2]]
    k0 = store["configs"][heads[0][3]]
    work = args.workdir or tempfile.mkdtemp(prefix="bench-plasticity-")
    os.makedirs(work, exist_ok=True)

    n_run, c_wall, fig = run_c(args, args.heads + 1, 1, os.path.join(work, "c1"), floor=True)
    isa, blas = fig.get("isa", "unknown"), fig.get("blas_core", "unknown")
    asked = os.environ.get("QK_ISA")
    print(f"== attention plasticity per head: {len(heads)} heads, n_q {q0['rows']}, "
          f"n_k {k0['rows']}, d {store['dim']}, B {store['bucket']}, "
          f"context {store['context']}; kernels {isa} "
          f"({f'QK_ISA={asked}' if asked else 'the best'}; the CPU runs up to "
          f"{kernels(os.path.dirname(args.qk_plasticity) or '.')['isa_best']}), "
          f"BLAS kernel {blas} (numpy: {numpy_blas_core()})")
    n_c = int(fig["heads"])  # the heads after the warm-up
    if n_c != n_run - 1:
        sys.exit(f"bench_plasticity: {fig['heads']} heads timed of {n_run}: expected {n_run - 1}")
    timed = heads[1:1 + n_c]
    c_cpu = float(fig["s_per_head"])
    floor = float(fig["floor_s_per_head"])
    print(f"qk-plasticity, 1 thread, {n_c} heads after a warm-up head: {c_cpu:.4f} s per head "
          f"(CPU; wall {c_wall / n_run:.4f} over all {n_run}, the floor timed after each head)")
    print(f"floor per head: {floor:.4f} s (GEMMs {float(fig['floor_gemm_s_per_head']):.4f}, "
          f"{float(fig['pp_per_head']):.0f} PP {float(fig['floor_pp_s_per_head']):.4f}); "
          f"qk-plasticity / floor: {c_cpu / floor:.2f}")

    profiles = c_profiles(os.path.join(work, "c1"))
    # the same parameters as the program's run: its defaults
    defaults = program_defaults(args.qk_plasticity)
    params = (int(defaults["bin-factor"]), int(defaults["min-pairs"]),
              int(defaults["pair2d-min-count"]))
    numpy_head(store, heads[0][2], heads[0][3], *params)  # the untimed warm-up
    worst = 0.0
    cpu0 = time.process_time()
    seconds, results = best_seconds(lambda: [numpy_head(store, h[2], h[3], *params) for h in timed], 1)
    np_cpu = (time.process_time() - cpu0) / n_c
    np_wall = seconds / n_c
    for h, (ap_np, _cells, _overall) in zip(timed, results):
        cprof = profiles.get((h[0], h[1]), {})
        for b, v in cprof.items():
            if np.isnan(v) != np.isnan(ap_np[b]):
                worst = float("inf")
            elif not np.isnan(v):
                worst = max(worst, abs(v - ap_np[b]))
    what = "numpy + scipy" if HAVE_SCIPY else "numpy (no scipy: math.erfc, no KS diagnostics)"
    print(f"{what}, 1 BLAS thread, the same {n_c} heads after a warm-up head: "
          f"{np_cpu:.4f} s per head (CPU; wall {np_wall:.4f})")
    print(f"numpy / qk-plasticity per head: {np_cpu / c_cpu:.1f} (CPU); numpy / floor: "
          f"{np_cpu / floor:.1f}, the most any implementation doing these GEMMs and PP "
          f"evaluations could reach")
    print(f"largest |ap_numpy - ap_C| over the profile bins of those heads: {worst:.3g}")

    n_m, m_s, _ = run_c(args, args.model_heads, args.threads, os.path.join(work, "model"))
    if n_m < len(heads):
        total = m_s * len(heads) / n_m
        print(f"per model, {args.threads} threads: {n_m} heads in {m_s:.2f} s, "
              f"extrapolated to {len(heads)} heads: {total:.1f} s")
    else:
        total = m_s
        print(f"per model, {args.threads} threads: all {n_m} heads in {m_s:.2f} s (measured)")
    print("stage\ts_per_head\tfloor_s_per_head\tratio_to_floor\tnumpy_s_per_head"
          "\tratio_numpy\tmodel_threads\tmodel_s\tisa\tblas_core")
    print(f"plasticity\t{c_cpu:.6f}\t{floor:.6f}\t{c_cpu / floor:.3f}\t{np_cpu:.6f}"
          f"\t{np_cpu / c_cpu:.2f}\t{args.threads}\t{total:.2f}\t{isa}\t{blas}")


if __name__ == "__main__":
    main()
