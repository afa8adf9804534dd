"""What the benchmark drivers (bench/bench_*.py) and tests/pca_crosscheck.py share.

one_blas_thread() limits BLAS to one thread, as the C side runs (call it before numpy
is imported); run_c() runs a C program and returns its standard output;
best_seconds() times a function, best of N; read_heads() reads the heads file that
qk-bench-pca --dump, qk-bench-rotate --dump and test_pca write; kernels() and
kernels_line() say which instruction sets and BLAS kernel the programs run, for the
benchmarks' headers (run as a script, it prints that line).
"""
import os
import subprocess
import time


def one_blas_thread():
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"


def run_c(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def kernels(bindir="bin"):
    """What qk-report --kernels-info and --blas-info print, as a dict: isa (the level of the
    vector code, after QK_ISA), isa_best (the CPU's best), simd (the build the loops without
    an AVX-512 one take at that level), blas_core, blas_library."""
    info = {}
    for flag in ("--kernels-info", "--blas-info"):
        out = subprocess.run([os.path.join(bindir, "qk-report"), flag], capture_output=True,
                             text=True)
        if out.returncode != 0:
            raise SystemExit(f"benchmark: qk-report {flag} failed: {out.stderr.strip()}")
        info.update(line.split("\t", 1) for line in out.stdout.splitlines() if "\t" in line)
    return info


def kernels_line(info):
    """One line for a header: the instruction sets and the BLAS kernel the programs run."""
    asked = os.environ.get("QK_ISA")
    return (f"vector code: {info.get('isa', '?')} "
            f"({f'QK_ISA={asked}' if asked else 'the best the CPU has'}; the CPU runs up to "
            f"{info.get('isa_best', '?')}), loops without an AVX-512 build "
            f"{info.get('simd', '?')}; BLAS kernel {info.get('blas_core', '?')}")


def best_seconds(fn, repeat):
    """The fastest of repeat calls of fn() in seconds, and what the last call returned."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def read_heads(path):
    """The heads of a heads file (little-endian): int32 n_heads, then per head int32
    n_q, n_k, d; float32 Q[n_q*d]; int32 t_q[n_q]; float32 K[n_k*d]; int32 t_k[n_k].
    Returns a list of (Q, t_q, K, t_k) numpy arrays."""
    import numpy as np
    buf = open(path, "rb").read()
    off = 0

    def take(dtype, count):
        nonlocal off
        arr = np.frombuffer(buf, dtype=dtype, count=count, offset=off)
        off += arr.nbytes
        return arr

    heads = []
    for _ in range(int(take("<i4", 1)[0])):
        n_q, n_k, d = (int(v) for v in take("<i4", 3))
        q = take("<f4", n_q * d).reshape(n_q, d)
        t_q = take("<i4", n_q)
        k = take("<f4", n_k * d).reshape(n_k, d)
        t_k = take("<i4", n_k)
        heads.append((q, t_q, k, t_k))
    return heads


if __name__ == "__main__":
    print(kernels_line(kernels()))
