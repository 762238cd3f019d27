"""Register-tiled min-plus kernels of the blocked Floyd–Warshall (numba, any GPU and the simulator).

The matrix is padded to a multiple of the tile ``K``; round ``k`` closes the intermediates of tile
row/column ``k`` in three launches:

1. :func:`phase1` — the diagonal tile (k, k), ``K`` in-place steps with the tile held in
   registers (each thread owns a ``K/TY × K/32`` sub-grid); row ``kk`` and column ``kk`` are
   exchanged through double-buffered shared vectors, one barrier per step;
2. :func:`product` over the row and column panels — ``C(k, j) ← min(C, D*(k,k) ⊗ C(k, j))`` and
   ``C(i, k) ← min(C, C(i, k) ⊗ D*(k,k))``: because the diagonal tile is already closed (and has
   a zero diagonal) the panels are min-plus *products*, not sequential sweeps;
3. :func:`product` over every other tile — ``C(i, j) ← min(C, C(i, k) ⊗ C(k, j))``.

Phases 2 and 3 are one GEMM-shaped kernel: a block computes a ``K × K`` output tile, each thread
``TM × TN`` outputs held in registers (rows ``ty + TY·r``, columns ``tx + TX·c``), the ``K``-deep
inner dimension streamed through shared memory ``KC`` at a time (A transposed and padded by one
word, so the coalesced loads do not conflict on banks).  The output tile is C(ci, cj), the
operands A = (ci, k) and B = (k, cj) in all three cases; in phase 2 one operand *is* the output
tile, which is safe because a block reads all of it before any thread writes (the barrier that
ends the last chunk) and no other block reads it.

Predecessors (``P``, int32, −1 = none): phase 1 copies ``P[kk, j]`` on a strict improvement; the
product either keeps the argmin in its inner loop (``"inline"``, the default: B's predecessor
chunk in shared memory, ``P[kk, j]`` taken on a strict improvement, so the first kk of the
minimum) or (``"recover"``) keeps only distances and then finds, for every output that became
strictly smaller, the first kk with ``A[i, kk] + B[kk, j] == new`` (bit-exact: the same addition),
reading B's old predecessors before the barrier that precedes the writes.  C starts at "no path"
in the registers and is read only at the end (no tile addresses live across the loop).
Distances: int32 (sentinel ``INT_INF`` = 2³⁰ − 1, so INF + INF does not
overflow), float32 or float64 (``inf``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, float64, int32, uint64

from .. import interrupt

#: "no path" of the int32 kernels: INT_INF + INT_INF < 2³¹
INT_INF = (1 << 30) - 1

_NUMBA = {np.dtype(np.int32): int32, np.dtype(np.float32): float32,
          np.dtype(np.float64): float64}


@dataclass(frozen=True)
class TileConfig:
    """``K``: tile edge = depth of one round; ``TM × TN``: outputs per thread; ``KC``: inner
    chunk in shared memory; ``P1Y``: phase-1 thread rows (block 32 × P1Y, or K × P1Y if K < 32)."""
    K: int = 128
    TM: int = 8
    TN: int = 8
    KC: int = 32
    P1Y: int = 16

    def check(self):
        K = self.K
        tx1 = min(32, K)
        ok = (K % self.TM == 0 and K % self.TN == 0 and K % self.KC == 0 and K % tx1 == 0
              and K % self.P1Y == 0 and (K // self.TM) * (K // self.TN) <= 1024
              and ((K // self.TM) * (K // self.TN) * 1) > 0
              and (K * self.KC) % ((K // self.TM) * (K // self.TN)) == 0)
        if not ok:
            raise ValueError(f"inconsistent min-plus tile configuration {self}")
        return self

    def shared_bytes(self, itemsize: int, inline: bool = False) -> int:
        """Static shared memory of the product kernel."""
        return self.KC * ((2 * self.K + 1) * itemsize + (4 * self.K if inline else 0))

    def fitted(self, itemsize: int, inline: bool = False) -> "TileConfig":
        """This configuration with KC halved until the product fits 48 KiB of shared memory."""
        from dataclasses import replace

        cfg = self
        while cfg.shared_bytes(itemsize, inline) > 48 * 1024 and cfg.KC > 1:
            cfg = replace(cfg, KC=cfg.KC // 2)
        return cfg

    @property
    def threads(self) -> tuple[int, int]:
        return self.K // self.TN, self.K // self.TM

    @property
    def p1_threads(self) -> tuple[int, int]:
        return min(32, self.K), self.P1Y


_cache: dict = {}


def kernels(dtype, cfg: TileConfig, preds=False, dpx: bool = False):
    """(phase1, product) kernels for distance ``dtype``, tile ``cfg``, with or without the
    predecessor matrix (``preds``: False, ``"inline"`` — the argmin kept in the inner loop — or
    ``"recover"`` — found after the product; compiled once per combination).  ``dpx`` (int32
    only): the product's add-and-min is Hopper's ``__viaddmin_s32``, a CUDA C++ device function
    linked in (``minplus_dpx.cu``)."""
    if preds not in (False, "inline", "recover"):
        raise ValueError(f"predecessor mode {preds!r}")
    key = (np.dtype(dtype), cfg, preds, bool(dpx))
    if key not in _cache:
        _cache[key] = _make(np.dtype(dtype), cfg.check(), preds, bool(dpx))
    return _cache[key]


def _dpx_step():
    from pathlib import Path

    cu = str(Path(__file__).with_name("minplus_dpx.cu"))
    return cuda.declare_device("se_viaddmin", int32(int32, int32, int32), link=[cu])


def _simulator() -> bool:
    from . import simulator

    return simulator()


def _make(dt, cfg: TileConfig, preds, dpx: bool = False):
    K, TM, TN, KC = cfg.K, cfg.TM, cfg.TN, cfg.KC
    TX, TY = cfg.threads
    NT = TX * TY
    LOADS = K * KC // NT                       # shared elements each thread loads per chunk
    X1, Y1 = cfg.p1_threads
    RA, RB = K // Y1, K // X1                  # phase-1 registers per thread: RA rows × RB cols
    nb = _NUMBA[dt]
    INF = nb(INT_INF) if dt == np.dtype(np.int32) else nb(np.inf)
    if dpx and dt != np.dtype(np.int32):
        raise ValueError("DPX min-plus is for int32 distances")
    step = _dpx_step() if dpx else None
    haspred = bool(preds)
    inline = preds == "inline"             # predecessors tracked in the inner loop
    recover = preds == "recover"
    SP = KC * K if inline else 1
    # two blocks per SM without predecessors (128 registers, no spills at 8 × 8 outputs)
    bounds = {} if _simulator() else {"launch_bounds": (NT, 1 if preds else 2)}
    # phase 1: X1·Y1 threads in one block (the register cap that makes it launch; with
    # predecessors a few values spill to local memory)
    bounds1 = {} if _simulator() else {"launch_bounds": (X1 * Y1, 1)}
    KP = K + 1
    SA = KC * KP
    SB = KC * K
    UKP = np.uint64(KP)
    UK = np.uint64(K)
    UTY = tuple(np.uint64(TY * r) for r in range(TM))
    UTX = tuple(np.uint64(TX * c) for c in range(TN))

    @cuda.jit(**bounds1)
    def phase1(D, P, k):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        o = k * K
        v = cuda.local.array((RA, RB), nb)
        p = cuda.local.array((RA, RB), int32)
        rowb = cuda.shared.array((2, K), nb)
        colb = cuda.shared.array((2, K), nb)
        prow = cuda.shared.array((2, K), int32)
        for a in range(RA):
            for b in range(RB):
                v[a, b] = D[o + ty + Y1 * a, o + tx + X1 * b]
                if haspred:
                    p[a, b] = P[o + ty + Y1 * a, o + tx + X1 * b]
        for kk in range(K):
            s = kk & 1
            for a in range(RA):                # the owners of row kk and column kk publish them
                for b in range(RB):
                    if ty + Y1 * a == kk:
                        rowb[s, tx + X1 * b] = v[a, b]
                        if haspred:
                            prow[s, tx + X1 * b] = p[a, b]
                    if tx + X1 * b == kk:
                        colb[s, ty + Y1 * a] = v[a, b]
            cuda.syncthreads()
            for a in range(RA):
                ca = colb[s, ty + Y1 * a]
                for b in range(RB):
                    cand = ca + rowb[s, tx + X1 * b]
                    if cand < v[a, b]:
                        v[a, b] = cand
                        if haspred:
                            p[a, b] = prow[s, tx + X1 * b]
            # the buffers of step kk + 2 are written after the barrier of step kk + 1
        for a in range(RA):
            for b in range(RB):
                D[o + ty + Y1 * a, o + tx + X1 * b] = v[a, b]
                if haspred:
                    P[o + ty + Y1 * a, o + tx + X1 * b] = p[a, b]

    @cuda.jit(**bounds)
    def product(D, P, k, phase):
        if phase == 3:
            ci = cuda.blockIdx.y
            cj = cuda.blockIdx.x
            if ci == k or cj == k:
                return
        else:
            if cuda.blockIdx.x == k:
                return
            if cuda.blockIdx.y == 0:
                ci = k
                cj = cuda.blockIdx.x
            else:
                ci = cuda.blockIdx.x
                cj = k
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * TX + tx
        r0 = ci * K
        c0 = cj * K
        k0 = k * K
        As = cuda.shared.array(SA, nb)    # As[kk·KP + i] = A[i, kk] (padded: no conflicts)
        Bs = cuda.shared.array(SB, nb)
        acc = cuda.local.array((TM, TN), nb)
        ra = cuda.local.array(TM, nb)
        rb = cuda.local.array(TN, nb)
        Ps = cuda.shared.array(SP, int32)
        rp = cuda.local.array(TN, int32)
        pp = cuda.local.array((TM, TN), int32)
        for r in range(TM):
            for c in range(TN):
                acc[r, c] = INF              # C itself is read at the end: no address kept live
                if inline:
                    pp[r, c] = -1
        uty = uint64(ty)
        utx = uint64(tx)
        for kc in range(0, K, KC):
            for q in range(LOADS):
                e = tid + NT * q
                ia = e // KC
                ka = e - ia * KC
                As[ka * KP + ia] = D[r0 + ia, k0 + kc + ka]
                kb = e // K
                jb = e - kb * K
                Bs[kb * K + jb] = D[k0 + kc + kb, c0 + jb]
                if inline:
                    Ps[kb * K + jb] = P[k0 + kc + kb, c0 + jb]
            cuda.syncthreads()
            for kk in range(KC):
                ua = uint64(kk) * UKP + uty          # unsigned: no negative-index wraparound
                ub = uint64(kk) * UK + utx
                for r in range(TM):
                    ra[r] = As[ua + UTY[r]]
                for c in range(TN):
                    rb[c] = Bs[ub + UTX[c]]
                if inline:
                    for c in range(TN):
                        rp[c] = Ps[ub + UTX[c]]
                    for r in range(TM):
                        for c in range(TN):
                            cand = nb(ra[r] + rb[c])
                            if cand < acc[r, c]:         # first kk of the minimum
                                acc[r, c] = cand
                                pp[r, c] = rp[c]
                else:
                    for r in range(TM):
                        for c in range(TN):
                            if dpx:
                                acc[r, c] = step(ra[r], rb[c], acc[r, c])
                            else:
                                acc[r, c] = min(acc[r, c], nb(ra[r] + rb[c]))  # int32 stays 32-bit
            cuda.syncthreads()
        if inline:
            for r in range(TM):
                for c in range(TN):
                    i = r0 + ty + TY * r
                    j = c0 + tx + TX * c
                    if acc[r, c] < D[i, j]:
                        D[i, j] = acc[r, c]
                        P[i, j] = pp[r, c]
        elif haspred:
            pr = cuda.local.array((TM, TN), int32)
            for r in range(TM):
                i = r0 + ty + TY * r
                for c in range(TN):
                    j = c0 + tx + TX * c
                    pr[r, c] = -2
                    a = acc[r, c]
                    if a < D[i, j]:
                        for kk in range(K):
                            if D[i, k0 + kk] + D[k0 + kk, j] == a:
                                pr[r, c] = P[k0 + kk, j]
                                break
            cuda.syncthreads()                 # the old tiles were read: now write
            for r in range(TM):
                for c in range(TN):
                    if pr[r, c] != -2:
                        P[r0 + ty + TY * r, c0 + tx + TX * c] = pr[r, c]
                        D[r0 + ty + TY * r, c0 + tx + TX * c] = acc[r, c]
        else:
            for r in range(TM):
                for c in range(TN):
                    i = r0 + ty + TY * r
                    j = c0 + tx + TX * c
                    D[i, j] = min(D[i, j], acc[r, c])

    return phase1, product


def run_rounds(D, P, nt: int, cfg: TileConfig, preds=False, dpx: bool = False):
    """The ``nt`` rounds of the blocked closure on the device matrices ``D`` (npad × npad, npad =
    nt·K) and ``P`` (same shape, int32, when ``preds``: see :func:`kernels`)."""
    cfg = cfg.fitted(D.dtype.itemsize, preds == "inline")
    p1, p2 = kernels(D.dtype, cfg, preds, dpx and not preds)
    k1 = p1[1, cfg.p1_threads]
    k2 = p2[(nt, 2), cfg.threads]
    k3 = p2[(nt, nt), cfg.threads]
    Pd = P if preds else D            # not read when not preds (a placeholder of the same type)
    check = interrupt.active()        # a run's stop check: wait for each round, then ask it
    for k in range(nt):
        k1(D, Pd, k)
        if nt > 1:
            k2(D, Pd, k, 2)
            k3(D, Pd, k, 3)
        if check:
            cuda.synchronize()
            interrupt.between_rounds("Floyd–Warshall", k + 1, nt)
