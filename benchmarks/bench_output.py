"""Cost of one snapshot and one checkpoint write against a plain h5py append of the same array.

For each grid size (fp64, n×n) the script writes snapshots to two outputs side by side, in the same
run and on the same file system, alternating between them:

* plain — one HDF5 file, a chunked extendible dataset (1, n, n): resize + write + flush + fsync;
* simengine — the real writer (``FieldParts`` + ``FieldIndex``): the snapshot part (fletcher32,
  fsync, rename) plus the commit of the index (rewritten atomically, with 8 observables rows per
  commit as a run adds them) and the XDMF file.

It reports the median cost of a snapshot write after 1 and after ``--snapshots`` snapshots are
stored, and of a checkpoint write (part + commit, a superseded checkpoint part removed) at the
same two points, each with its ratio to the plain appends measured in between (the writes of the
three kinds are interleaved; both ratios use the median of all plain appends at that point).

    python benchmarks/bench_output.py                      # 1024² and 4096², 100 snapshots
    python benchmarks/bench_output.py --sizes 1024 --snapshots 20 --dir /scratch/me

The outputs are deleted at the end (4096² × 100 snapshots needs 2 × 13.4 GB of free space).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simengine.io.field_store import SERIES, FieldIndex, FieldParts  # noqa: E402

WINDOW = 7  # writes of each kind measured around each point (median)


class Plain:
    def __init__(self, path, n):
        self.f = h5py.File(path, "w")
        self.ds = self.f.create_dataset("phi", shape=(0, n, n), maxshape=(None, n, n),
                                        chunks=(1, n, n), dtype="f8")
        self.fd = self.f.id.get_vfd_handle()

    def append(self, a):
        t = time.perf_counter()
        k = self.ds.shape[0]
        self.ds.resize(k + 1, axis=0)
        self.ds[k] = a
        self.f.flush()
        os.fsync(self.fd)
        return time.perf_counter() - t

    def close(self):
        self.f.close()


class Engine:
    def __init__(self, path, n):
        self.parts = FieldParts(path, (n, n), np.float64)
        self.index = FieldIndex(path, (n, n), 1.0, 0.01, np.float64, {"name": "bench"}, 10**9)
        self.step = 0
        self.n = n

    def rows(self):
        return [{k: (self.step if k == "step" else float(self.step)) for k in SERIES}
                for _ in range(8)]

    def first(self, a):
        self.parts.write_checkpoint(0, a)
        self.parts.append_snapshot(0, a)
        self.index.commit([(0, [(0, self.n)])], (0, [(0, self.n)]), self.rows())

    def snapshot(self, a):
        self.step += 1
        t = time.perf_counter()
        blocks = [self.parts.append_snapshot(self.step, a)]
        self.index.commit([(self.step, blocks)], None, self.rows())
        return time.perf_counter() - t

    def checkpoint(self, a):
        self.step += 1
        t = time.perf_counter()
        blocks = [self.parts.write_checkpoint(self.step, a)]
        self.index.commit((), (self.step, blocks), self.rows())
        return time.perf_counter() - t


def measure(n, snapshots, directory):
    rng = np.random.default_rng(0)
    a = rng.random((n, n))
    d = Path(tempfile.mkdtemp(prefix=f"bench-output-{n}-", dir=directory))
    plain, eng = Plain(d / "plain.h5", n), Engine(d / "engine.h5", n)
    try:
        plain.append(a)
        eng.first(a)
        rows = []
        for point in (1, snapshots):
            while len(eng.index.steps) < point:  # fill up to `point` stored snapshots
                plain.append(a)
                eng.snapshot(a)
            p_snap, e_snap, p_ck, e_ck = [], [], [], []
            for _ in range(WINDOW):  # interleaved, so that both see the same machine state
                p_snap.append(plain.append(a))
                e_snap.append(eng.snapshot(a))
                p_ck.append(plain.append(a))
                e_ck.append(eng.checkpoint(a))
            stored = len(eng.index.steps)
            ps = pc = statistics.median(p_snap + p_ck)  # one reference for both ratios
            es, ec = statistics.median(e_snap), statistics.median(e_ck)
            rows.append((n, point, ps, es, ec, pc))
            print(f"  {n}² after {point:3d} snapshots ({stored} at the end): plain {ps*1e3:7.1f} ms, "
                  f"snapshot {es*1e3:7.1f} ms ({es/ps:.2f}x), checkpoint {ec*1e3:7.1f} ms "
                  f"({ec/pc:.2f}x)", flush=True)
        return rows
    finally:
        plain.close()
        shutil.rmtree(d, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--snapshots", type=int, default=100)
    ap.add_argument("--dir", default=".", help="where the outputs are written (default: .)")
    args = ap.parse_args(argv)
    fs = os.statvfs(args.dir)
    print(f"# {time.strftime('%Y-%m-%d')}, {args.dir} ({fs.f_bavail * fs.f_frsize / 2**30:.0f} GiB "
          f"free), h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version}, {os.cpu_count()} "
          f"CPUs, load average {os.getloadavg()[0]:.1f}")
    rows = []
    for n in args.sizes:
        rows += measure(n, args.snapshots, args.dir)
    print("\n| grid (fp64) | snapshots stored | plain append + fsync | snapshot write | ratio "
          "| checkpoint write | ratio |")
    print("|---|---|---|---|---|---|---|")
    for n, point, ps, es, ec, pc in rows:
        print(f"| {n}² ({n * n * 8 / 2**20:.0f} MiB) | {point} | {ps*1e3:.1f} ms | {es*1e3:.1f} ms "
              f"| {es/ps:.2f}× | {ec*1e3:.1f} ms | {ec/pc:.2f}× |")


if __name__ == "__main__":
    main()
