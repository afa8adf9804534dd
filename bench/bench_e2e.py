#!/usr/bin/python3
"""make bench-e2e: every stage of the pipeline on thesis-scale synthetic datasets,
beside the floor of each stage measured in the same run, the ratios against numpy and
scikit-learn from the other benchmarks, and the extrapolation to the thesis set.

A stage is a command template (--stage NAME=TEMPLATE, in pipeline order) in which {data},
{store} and {out} stand for the dataset's Parquet folder, its store and a scratch folder;
Make passes the templates with the pipeline's own flags, so the benchmark runs exactly
what `make report` runs. A floor is a command template (--floor NAME=TEMPLATE) that
prints one line "floor<TAB>SECONDS" (or the qk-bench-load report): the work the stage
cannot avoid, timed alone at the same shapes; a stage given several floors gets their sum.
For every stage the output bytes also get a write floor: a plain sequential write of that
many bytes, with fsync, as the stages do, timed in CPU seconds as the stages are (the wait
for the disk is CPU time of neither).

Each stage runs once per dataset (the data stay in the page cache between stages, as in a
real run); CPU time and peak RSS come from wait4(), bytes read and written from the sizes
of the stage's inputs and outputs. The table's header names the instruction set the
vector code ran (QK_ISA caps it) and the BLAS kernel. Prints figures, passes or fails
nothing.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import time

from benchlib import kernels, kernels_line

THESIS_HEADS = 6839        # query heads of the 23 thesis datasets (spec/data.md)
THESIS_PARQUET_GB = 15.0   # their Parquet, about
STAGE_GOAL = 1.5           # a stage's CPU time at most this times its floor
# all stages' CPU time at most this times the sum of their floors (the floor of one pass over
# the rows for PCA, rotation and complement would be lower: docs/performance.md)
PIPELINE_GOAL = 1.3


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", required=True)
    p.add_argument("--data", required=True, help="folder of the datasets' Parquet folders")
    p.add_argument("--work", required=True, help="scratch folder (stores, outputs)")
    p.add_argument("--stage", action="append", default=[], metavar="NAME=TEMPLATE")
    p.add_argument("--floor", action="append", default=[], metavar="NAME=TEMPLATE")
    p.add_argument("--ratio", action="append", default=[], metavar="NAME=FILE",
                   help="a benchmark's saved output, for its speed-up line")
    return p.parse_args()


def split_pairs(items):
    out = []
    for item in items:
        name, _, template = item.partition("=")
        out.append((name, template))
    return out


def size_of(paths, since=None):
    """Bytes of files and folders; with since, only files written after it."""
    total = 0
    for path in paths:
        if os.path.isdir(path):
            for root, _, files in os.walk(path):
                for f in files:
                    st = os.stat(os.path.join(root, f))
                    if since is None or st.st_mtime >= since:
                        total += st.st_size
        elif os.path.exists(path):
            total += os.path.getsize(path)
    return total


def run_measured(cmd):
    """Runs cmd; returns wall seconds, CPU seconds, peak RSS in bytes and stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench-e2e: error: `{cmd}` failed (status {os.waitstatus_to_exitcode(status)})")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out


def write_floor(nbytes, work):
    """CPU seconds (user + sys) to write nbytes sequentially and fsync them: the floor of
    any output. Not the wall time: the stages are measured in CPU time, and the wait for
    the disk, which varies by seconds from run to run, is none."""
    if nbytes == 0:
        return 0.0
    path = os.path.join(work, "write-floor.bin")
    block = b"\0" * (8 << 20)
    start = time.process_time()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    left = nbytes
    while left > 0:
        left -= os.write(fd, block[: min(left, len(block))])
    os.fsync(fd)
    os.close(fd)
    seconds = time.process_time() - start
    os.unlink(path)
    return seconds


def floor_seconds(text, heads):
    """The floor in a floor command's output: a "floor<TAB>S" line, qk-bench-load's
    "floor (...): S s" line, or a TSV with a floor_s_per_head column (qk-plasticity
    --floor, measured on a sample of heads: scaled to all of them)."""
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        cols = line.split("\t")
        if "floor_s_per_head" in cols:
            return float(lines[i + 1].split("\t")[cols.index("floor_s_per_head")]) * heads
    for line in lines:
        m = re.match(r"floor\t([0-9.eE+-]+)", line) or re.match(r"floor .*?: ([0-9.]+) s", line)
        if m:
            return float(m.group(1))
    sys.exit("bench-e2e: error: a floor command printed no floor line:\n" + text)


def cpu_name():
    """The CPU's model name and the cores this process may use, for the header."""
    try:
        with open("/proc/cpuinfo") as f:
            names = [l.split(":", 1)[1].strip() for l in f if l.startswith("model name")]
    except OSError:
        names = []
    cores = len(os.sched_getaffinity(0))
    return f"{names[0] if names else 'unknown CPU'}, {cores} cores"


def heads_of(store):
    out = subprocess.run(["bin/qk-load", "--verify", store], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"(\d+) pairs", out)
    return int(m.group(1)) if m else 0


def outputs_of(template, fill):
    """The output files a template names: the words after -o/--*output*/--out-dir."""
    words = shlex.split(template.format(**fill))
    outs = []
    for i, w in enumerate(words[:-1]):
        if w == "-o" or (w.startswith("--") and ("output" in w or w == "--out-dir")):
            outs.append(words[i + 1])
    return outs


def main():
    a = parse_args()
    stages, floors = split_pairs(a.stage), {}
    for name, template in split_pairs(a.floor):
        floors.setdefault(name, []).append(template)
    os.makedirs(a.work, exist_ok=True)
    rows = {name: dict(wall=0.0, cpu=0.0, rss=0, read=0, written=0, floor=0.0, heads=0)
            for name, _ in stages}
    parquet_bytes, total_heads = 0, 0
    for ds in a.datasets:
        data = os.path.join(a.data, ds)
        out = os.path.join(a.work, ds)
        os.makedirs(out, exist_ok=True)
        fill = dict(data=data, store=os.path.join(out, "store.qks"), out=out, dataset=ds)
        parquet_bytes += size_of([data])
        subprocess.run(f"cat {shlex.quote(data)}/*/*.parquet > /dev/null", shell=True)
        heads = None
        for name, template in stages:
            cmd = template.format(**fill)
            read = size_of([data]) if "{data}" in template else size_of([fill["store"]])
            began = time.time()
            wall, cpu, rss, _ = run_measured(cmd)
            if heads is None:
                heads = heads_of(fill["store"])
            written = size_of(outputs_of(template, fill), since=began - 1)
            floor = write_floor(written, a.work)
            for template_f in floors.get(name, []):
                text = run_measured(template_f.format(**fill))[3]
                floor += floor_seconds(text, heads)
            r = rows[name]
            r["wall"] += wall
            r["cpu"] += cpu
            r["rss"] = max(r["rss"], rss)
            r["read"] += read
            r["written"] += written
            r["floor"] += floor
            r["heads"] += heads
            print(f"  {name:<11} {ds:<40} {wall:7.2f} s wall, {cpu:7.2f} s CPU, floor {floor:.2f} s: "
                  f"{cpu / floor if floor > 0 else float('nan'):.2f}x", file=sys.stderr)
        total_heads += heads
    report(rows, stages, a, parquet_bytes, total_heads)


def report(rows, stages, a, parquet_bytes, total_heads):
    info = kernels()
    print(f"== bench-e2e: {len(a.datasets)} thesis-scale datasets ({', '.join(a.datasets)}), "
          f"{total_heads} query heads, {parquet_bytes / 1e9:.2f} GB Parquet; "
          f"{kernels_line(info)}; {cpu_name()}")
    print(f"{'stage':<11} {'wall s/head':>11} {'CPU s/head':>10} {'read MB':>9} {'written MB':>10} "
          f"{'peak RSS MB':>11} {'floor s/head':>12} {'CPU/floor':>10}  goal <= {STAGE_GOAL}")
    total_wall, total_floor = 0.0, 0.0
    for name, _ in stages:
        r = rows[name]
        h = max(r["heads"], 1)
        # floors are single-thread CPU measures, so the stage's CPU time is what compares
        ratio = r["cpu"] / r["floor"] if r["floor"] > 0 else float("nan")
        print(f"{name:<11} {r['wall'] / h:11.4f} {r['cpu'] / h:10.4f} {r['read'] / 1e6:9.0f} "
              f"{r['written'] / 1e6:10.0f} {r['rss'] / 1e6:11.0f} {r['floor'] / h:12.4f} {ratio:10.2f}  "
              f"{'met' if ratio <= STAGE_GOAL else 'not met'}")
        total_wall += r["wall"]
        total_floor += r["floor"]
    per_head = total_wall / max(total_heads, 1)
    thesis = per_head * THESIS_HEADS
    total_cpu = sum(rows[n]["cpu"] for n, _ in stages)
    print(f"all stages: {per_head:.4f} s per head wall, {total_cpu / max(total_heads, 1):.4f} s CPU; "
          f"floors {total_floor / max(total_heads, 1):.4f} s per head "
          f"(CPU {total_cpu / total_floor:.2f}x the sum of the floors; goal <= {PIPELINE_GOAL}: "
          f"{'met' if total_cpu / total_floor <= PIPELINE_GOAL else 'not met'})")
    print(f"thesis set ({THESIS_HEADS} query heads, ~{THESIS_PARQUET_GB:.0f} GB Parquet): "
          f"{thesis / 60:.1f} min on these cores, one dataset at a time")
    # CPU times over the cores: what an idle machine gives when every core works,
    # so the floors compare with it, not with one core's time
    cores = os.cpu_count() or 1
    floor_min = total_floor / max(total_heads, 1) * THESIS_HEADS / 60
    print(f"thesis set by CPU time, every core busy ({cores} cores; what an idle machine gives, "
          f"the stages running {cores} threads or datasets side by side): "
          f"{total_cpu / max(total_heads, 1) * THESIS_HEADS / cores / 60:.1f} min; "
          f"the sum of the floors the same way: {floor_min / cores:.1f} min "
          f"({floor_min:.1f} min of CPU time)")
    store_bytes = rows[stages[0][0]]["written"] if stages else 0
    if parquet_bytes:
        print(f"intermediate data: store {store_bytes / parquet_bytes:.2f}x the Parquet it reads "
              f"(thesis set: ~{store_bytes / parquet_bytes * THESIS_PARQUET_GB:.1f} GB under build/)")
    isa = info.get("isa", "?")
    for name, path in split_pairs(a.ratio):
        if os.path.exists(path):
            text = open(path).read()
            lines = [l for l in text.splitlines() if re.search(r"[0-9.]+x|speed-?up|×|numpy / ", l)]
            # a saved run that names its kernels: say which, and whether they are this run's
            saved = re.search(r"kernels (\w+)", text)
            note = "" if not saved else (
                f" [saved run, kernels {saved.group(1)}]" if saved.group(1) == isa else
                f" [saved run, kernels {saved.group(1)}, not this run's {isa}: make {name} ISA={isa}]")
            for line in lines[-2:]:
                print(f"{name}: {line.strip()}{note}")
        else:
            print(f"{name}: no saved result ({path}); run make {name}")


if __name__ == "__main__":
    main()
