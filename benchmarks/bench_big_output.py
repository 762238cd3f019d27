"""A big field run's output against the disk it writes to (issue 44), all in one call.

Measured in the same call, on the same file system:

* raw — the bytes the run writes (its parts), written as plain files in 64 MiB ``os.write``s,
  each file fsynced (no HDF5, no checksum, no hash);
* run — ``simengine run`` of an n³ field (default 1024³ fp64: 40 steps, snapshots at 0 and the
  end, a checkpoint there too, observables every 20 steps) in its own process with
  ``SIMENGINE_PROFILE=1``: its wall time, its stepping time (profile line ``steps``), the time
  from the run's start (after the imports) to its first step, and its profile;
* verify — ``simengine info --verify`` of the output in its own process: GiB/s over the bytes
  of the output (index and parts);
* info, plot, report — each in its own process: wall time and peak resident memory (the
  child's ``ru_maxrss``), which must stay well under one snapshot (the readers stream);
* sha256 — one thread of SHA-256 over 1 GiB in memory (what a plain digest would cost).

Targets (issue 44): wall ≤ 1.3 × raw + stepping + 5 s; verify ≥ 4 GiB/s; first step ≤ 5 s after
the imports. Each is printed with its ratio and PASS/MISS.

    python benchmarks/bench_big_output.py                         # 1024³ fp64, backend auto
    python benchmarks/bench_big_output.py --n 256 --backend cpu --dir /tmp/bench
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = """\
kind: field
name: big-output
grid: {{shape: [{n}, {n}, {n}], spacing: 1.0}}
boundary: {{type: periodic}}
model: {{mobility: 1.0, kappa: 1.0, potential: {{b: 1.0, u: 1.0}}}}
initial: {{type: noise, mean: 0.0, amplitude: 0.05, seed: 3}}
time: {{dt: 0.01, steps: {steps}}}
solver: {{backend: {backend}, precision: {precision}}}
output: {{snapshot_every: {steps}, checkpoint_every: {steps}, observables_every: {obs}}}
"""

GIB = float(1 << 30)


def raw_write(directory: Path, sizes) -> float:
    """Seconds to write files of ``sizes`` bytes (64 MiB writes) and fsync each."""
    block = os.urandom(64 << 20)
    t = time.perf_counter()
    for i, size in enumerate(sizes):
        path = directory / f"raw{i}.bin"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            left = size
            while left > 0:
                left -= os.write(fd, block[:min(left, len(block))])
            os.fsync(fd)
        finally:
            os.close(fd)
    dt = time.perf_counter() - t
    for i in range(len(sizes)):
        os.unlink(directory / f"raw{i}.bin")
    return dt


def sha256_rate() -> float:
    data = os.urandom(1 << 30)
    t = time.perf_counter()
    hashlib.sha256(data).digest()
    return len(data) / GIB / (time.perf_counter() - t)


def run(cmd, env=None, log=None):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    dt = time.perf_counter() - t
    if log is not None:
        log.write_text(p.stdout + p.stderr)
    if p.returncode:
        sys.exit(f"{' '.join(map(str, cmd))}: exit {p.returncode}\n{p.stderr[-3000:]}")
    return dt, p.stderr + p.stdout


def run_rss(cmd, env=None, log=None):
    """``run`` of one child, with that child's peak resident memory (``os.wait4``'s rusage):
    (seconds, output, peak bytes)."""
    t = time.perf_counter()
    out = tempfile.TemporaryFile()
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    dt = time.perf_counter() - t
    out.seek(0)
    text = out.read().decode(errors="replace")
    if log is not None:
        log.write_text(text)
    if p.returncode:
        sys.exit(f"{' '.join(map(str, cmd))}: exit {p.returncode}\n{text[-3000:]}")
    return dt, text, usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--obs", type=int, default=20)
    ap.add_argument("--precision", default="float64")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary folder)")
    ap.add_argument("--logs", default=None, help="folder for the run's and verify's output")
    args = ap.parse_args()

    base = Path(args.dir or tempfile.mkdtemp(prefix="bench-big-"))
    base.mkdir(parents=True, exist_ok=True)
    logs = Path(args.logs) if args.logs else None
    if logs:
        logs.mkdir(parents=True, exist_ok=True)
    work = base / "bench-big-output"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    scenario = work / "big.yaml"
    scenario.write_text(SCENARIO.format(n=args.n, steps=args.steps, obs=args.obs,
                                        backend=args.backend, precision=args.precision))
    out = work / "run.h5"
    env = dict(os.environ, SIMENGINE_PROFILE="1", PYTHONPATH=f"{ROOT}{os.pathsep}"
               + os.environ.get("PYTHONPATH", ""))
    try:
        wall, text = run([sys.executable, "-m", "simengine.cli", "run", str(scenario), "-o",
                          str(out), "--overwrite"], env,
                         logs / "run.txt" if logs else None)
        print(text.rstrip())
        written = sum(int(float(m) * 1e9) for m in re.findall(
            r"part: \w+ written \(streamed.*?s\s+\d+x\s+([\d.]+) GB", text))
        part_sizes = [p.stat().st_size for p in (work / "run.h5.parts").rglob("*.h5")]
        # the bytes the run wrote: its parts (the profile's count; on disk only the kept ones)
        sizes = part_sizes + ([written - sum(part_sizes)] if written > sum(part_sizes) else [])
        steps = float(re.search(r"\n\s+steps\s+([\d.]+) s", text).group(1))
        marks = {k: float(v) for k, v in re.findall(r"\n\s+(run started|first step)\s+at\s+"
                                                    r"([\d.]+) s", text)}
        first = marks["first step"] - marks["run started"]
        # resident memory at the first step and the peak at the run's end (profile marks)
        mem = {k: float(v) for k, v in re.findall(
            r"\n\s+(first step|run ended)\s+at\s+[\d.]+ s after the process started; "
            r"resident ([\d.]+) GiB", text)}
        peak_end = re.search(r"\n\s+run ended\s+at.*?peak so far ([\d.]+) GiB", text)
        out_bytes = out.stat().st_size + sum(part_sizes)
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        vt, vtext = run([sys.executable, "-m", "simengine.cli", "info", "--verify", str(out)],
                        env, logs / "verify.txt" if logs else None)
        print(vtext.rstrip())
        readers = {}   # info, plot, report of the output: seconds and peak resident memory
        for name, cmd in (("info", ["info", str(out)]),
                          ("plot", ["plot", str(out), "--no-gif", "--out", str(work / "plots")]),
                          ("report", ["report", str(out), "--out", str(work / "report.html")])):
            t_r, rtext, peak = run_rss([sys.executable, "-m", "simengine.cli", *cmd], env,
                                       logs / f"{name}.txt" if logs else None)
            readers[name] = (t_r, peak)
            print(rtext.rstrip()[-2000:])
        shutil.rmtree(work / "run.h5.parts")  # room for the raw files (a disk may not hold both)
        raw = raw_write(work, sizes)
        sha = sha256_rate()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    total = sum(sizes)
    limit = 1.3 * raw + steps + 5.0
    rate = out_bytes / GIB / vt
    print(f"\n{args.n}^3 {args.precision}, {args.steps} steps, backend {args.backend}; "
          f"the run wrote {total / 1e9:.2f} GB in {len(sizes)} parts")
    print(f"raw write + fsync of the same bytes: {raw:.2f} s ({total / GIB / raw:.2f} GiB/s); "
          f"one-thread SHA-256: {sha:.2f} GiB/s")
    print(f"run wall time {wall:.2f} s; stepping {steps:.2f} s; run − stepping = "
          f"{(wall - steps) / raw:.2f} × raw")
    print(f"  target wall ≤ 1.3 × raw + stepping + 5 s = {limit:.2f} s: "
          f"{'PASS' if wall <= limit else 'MISS'} ({wall / limit:.2f} of the limit)")
    print(f"info --verify: {vt:.2f} s for {out_bytes / GIB:.2f} GiB = {rate:.2f} GiB/s "
          f"(target ≥ 4): {'PASS' if rate >= 4 else 'MISS'}")
    field = args.n ** 3 * (8 if args.precision == "float64" else 4)
    print(f"peak resident memory of the run: {rss / GIB:.2f} GiB (the field: "
          f"{field / GIB:.2f} GiB; target for a snapshot: ≤ 1 GiB beyond the field's host copy)")
    if peak_end and "first step" in mem:
        added = float(peak_end.group(1)) - mem["first step"]
        print(f"host memory added after the first step (snapshots, checkpoints, writes): "
              f"{added:.2f} GiB over {mem['first step']:.2f} GiB resident then (target ≤ 1 "
              f"GiB beyond the field's host copy): {'PASS' if added <= 1 else 'MISS'}")
    sys.path.insert(0, str(ROOT))
    from simengine.io.file_checks import read_limit

    for name, (t_r, peak) in readers.items():
        print(f"{name}: {t_r:.2f} s, peak resident memory {peak / GIB:.2f} GiB (one snapshot "
              f"{field / GIB:.2f} GiB; read cap {read_limit() / GIB:.2f} GiB): bounded "
              f"{'PASS' if peak <= read_limit() + GIB else 'MISS'} (target ≤ cap + 1 GiB)")
    print(f"first step {first:.2f} s after the run started (imports done; target ≤ 5 s): "
          f"{'PASS' if first <= 5 else 'MISS'}")


if __name__ == "__main__":
    main()
