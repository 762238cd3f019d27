"""Numba kernels of the R-MAT / Graph500 Kronecker generator (:func:`rmat_csr`): edges from a
counter-based random stream (six levels per alias-table look-up; edges generated in parallel,
independent of the thread count, twice instead of stored), bucketed by rows into the index array,
each bucket counting-sorted into its rows, rows sorted and de-duplicated in place (the row
sorting shared with G(n, m): :mod:`.csr_kernels`)."""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from .csr_kernels import (_SMALL, _chunk_offsets, _compact_rows, _insertion_sort,
                          _offset_dtype)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_LOW32 = np.uint64(0xFFFFFFFF)


@njit(cache=True, inline="always")
def _mix(x):
    """splitmix64 finaliser: the idx-th output of a splitmix64 stream is _mix(key + idx·golden)."""
    z = x
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


#: R-MAT levels drawn together: one 32-bit word picks the quadrants of LEVELS levels at once from
#: an alias table of 4**LEVELS outcomes (index = top 2·LEVELS bits, threshold = the other bits)
LEVELS = 6


def rmat_alias_table(levels: int, a: float, b: float, c: float):
    """Alias table (Walker/Vose) of the R-MAT quadrant choices of ``levels`` levels at once.

    Outcome o = (S << levels) | D, S and D the source and target bits of the levels (bit j =
    level j; quadrant of a level a: (0, 0), b: (0, 1), c: (1, 0), d = 1−a−b−c: (1, 1)), with
    probability the product of its levels' quadrant probabilities.  Returns (thr, alias): uint32
    thresholds out of 2**(32 − 2·levels) and uint16 aliases; a 32-bit word w gives
    i = w >> (32 − 2·levels), f = the low bits, outcome i if f < thr[i] else alias[i].  Built in
    float64 in a fixed order (the same table on every platform)."""
    k = int(levels)
    N = 1 << (2 * k)
    q = np.array([a, b, c, max(0.0, 1.0 - a - b - c)], np.float64)
    S = np.arange(1 << k)[:, None]
    D = np.arange(1 << k)[None, :]
    prob = np.ones((1 << k, 1 << k), np.float64)
    for j in range(k):
        prob = prob * q[2 * ((S >> j) & 1) + ((D >> j) & 1)]
    scaled = (prob.ravel() / prob.sum() * N).tolist()
    U = [1.0] * N
    alias = list(range(N))
    small = [i for i in range(N) if scaled[i] < 1.0]
    large = [i for i in range(N) if scaled[i] >= 1.0]
    while small and large:
        lo = small.pop()
        hi = large.pop()
        U[lo] = scaled[lo]
        alias[lo] = hi
        scaled[hi] = (scaled[hi] + scaled[lo]) - 1.0
        (small if scaled[hi] < 1.0 else large).append(hi)
    F = 32 - 2 * k
    thr = np.array([min(1 << F, int(round(u * (1 << F)))) for u in U], np.uint32)
    return thr, np.array(alias, np.uint16)


@njit(cache=True, inline="always")
def _alias_pick(w, F, thr, alias):
    """Outcome of the 32-bit word w in an alias table with F threshold bits (no branch: the
    choice is data-dependent and unpredictable)."""
    i = np.int64(w >> F)
    a = np.int64(alias[i])
    take = np.int64((w & ((np.uint64(1) << F) - np.uint64(1))) < thr[i])
    return a ^ ((i ^ a) & -take)


@njit(cache=True, inline="always")
def _rmat_edge(e, words, key, thr, alias, mask):
    """Endpoints (before relabelling) of R-MAT edge e: 2·``words`` groups of LEVELS levels, each
    one 32-bit half (low half first) of the splitmix64 outputs _mix(key + (e·words + j + 1)·golden),
    j < words, looked up in the alias table; group g gives bits g·LEVELS … of the source
    (outcome >> LEVELS) and of the target (the outcome's low LEVELS bits).  Levels are
    independent, so keeping the low ``scale`` bits (``mask``) of the 6·2·words drawn is exactly
    R-MAT with ``scale`` levels."""
    s = np.int64(0)
    d = np.int64(0)
    base = key + np.uint64(e) * np.uint64(words) * _GOLDEN
    F = np.uint64(32 - 2 * LEVELS)
    low = (1 << LEVELS) - 1
    shift = 0
    for j in range(words):
        base += _GOLDEN
        r = _mix(base)
        o = _alias_pick(r & _LOW32, F, thr, alias)
        s |= (o >> LEVELS) << shift
        d |= (o & low) << shift
        o = _alias_pick(r >> _S32, F, thr, alias)
        s |= (o >> LEVELS) << (shift + LEVELS)
        d |= (o & low) << (shift + LEVELS)
        shift += 2 * LEVELS
    return s & mask, d & mask


@njit(cache=True, inline="always")
def _scramble(x, scale, mask, mul):
    """A bijection of [0, 2^scale) (vertex relabelling): x ↦ x·m₀ + m₁, x ⊕= x >> h, x ↦ x·m₂,
    x ⊕= x >> h, x ↦ x·m₃ (mod 2^scale; the multipliers are odd, so every step is invertible).
    Computed in registers, so relabelling costs no random memory access."""
    h = np.uint64(scale // 2 + 1)
    y = np.uint64(x)
    y = (y * mul[0] + mul[1]) & mask
    y ^= y >> h
    y = (y * mul[2]) & mask
    y ^= y >> h
    y = (y * mul[3]) & mask
    return np.int64(y)


@njit(cache=True, inline="always")
def _rmat_pair(e, scale, key, words, thr, alias, permute, mul):
    mask = np.int64((1 << scale) - 1)
    s, d = _rmat_edge(e, words, key, thr, alias, mask)
    if permute:
        umask = np.uint64(mask)
        s = _scramble(s, scale, umask, mul)
        d = _scramble(d, scale, umask, mul)
    return s, d


#: R-MAT arcs are first written into 2**BUCKET_BITS buckets of consecutive rows (few open write
#: positions, which stay in cache, instead of one per row); from scale 27 on the 40-bit key (row
#: in the bucket, target) allows fewer rows per bucket, so there are more buckets
BUCKET_BITS = 12


@njit(cache=True, parallel=True)
def _rmat_bucket_count(m, scale, key, words, thr, alias, permute, mul, directed, rbits, cnt):
    """cnt[c, b] = arcs (self-loops dropped) that chunk c of the edges puts in bucket b (rows
    b·2^rbits … (b+1)·2^rbits − 1)."""
    C = cnt.shape[0]
    for c in prange(C):
        for e in range(m * c // C, m * (c + 1) // C):
            s, d = _rmat_pair(e, scale, key, words, thr, alias, permute, mul)
            if s != d:
                cnt[c, s >> rbits] += 1
                if not directed:
                    cnt[c, d >> rbits] += 1


@njit(cache=True, parallel=True)
def _rmat_bucket_place(m, scale, key, words, thr, alias, permute, mul, directed, rbits, cur,
                       packed, high):
    """The same edges again; each arc (r, t) as the 40-bit key (r mod 2^rbits) << scale | t
    (rbits + scale <= 40) at its chunk's next slot of its bucket: low 32 bits in ``packed``,
    the rest in ``high``.  Few buckets take writes at a time, so their open cache lines stay in
    the core's cache (unlike one random row per arc)."""
    C = cur.shape[0]
    rmask = np.int64((1 << rbits) - 1)
    for c in prange(C):
        for e in range(m * c // C, m * (c + 1) // C):
            s, d = _rmat_pair(e, scale, key, words, thr, alias, permute, mul)
            if s != d:
                b = s >> rbits
                x = ((s & rmask) << scale) | d
                p = cur[c, b]
                packed[p] = np.uint32(x & 0xFFFFFFFF)
                high[p] = np.uint8(x >> 32)
                cur[c, b] = p + 1
                if not directed:
                    b = d >> rbits
                    x = ((d & rmask) << scale) | s
                    p = cur[c, b]
                    packed[p] = np.uint32(x & 0xFFFFFFFF)
                    high[p] = np.uint8(x >> 32)
                    cur[c, b] = p + 1


@njit(cache=True)
def _radix_sort_keys(a, tmp, bits):
    """Sort the uint64 array a (values below 2**bits) by LSD radix, digits of at most 11 bits
    (as few passes as that allows, equally wide: 36 bits → 4 × 9), tmp a buffer of the same
    length; returns the array holding the result (a or tmp)."""
    d = len(a)
    passes = max(1, (bits + 10) // 11)
    w = (bits + passes - 1) // passes
    dmask = np.uint64((1 << w) - 1)
    nd = 1 << w
    hist = np.zeros((passes, nd + 1), np.int64)
    for j in range(d):
        x = a[j]
        for p in range(passes):
            hist[p, ((x >> np.uint64(w * p)) & dmask) + 1] += 1
    src = a
    dst = tmp
    for p in range(passes):
        h = hist[p]
        if h[1:].max() == d:           # every key has the same digit here: nothing to move
            continue
        for k in range(nd):
            h[k + 1] += h[k]
        sh = np.uint64(w * p)
        for j in range(d):
            x = src[j]
            k = (x >> sh) & dmask
            dst[h[k]] = x
            h[k] += 1
        src, dst = dst, src
    return src


@njit(cache=True, parallel=True)
def _rmat_bucket_rows(bptr, packed, high, indices, scale, rbits, indptr, kept):
    """Bucket by bucket (in parallel): sort its arc keys (row << scale | target, from ``packed``
    and ``high``) by radix, then write the distinct ones' targets back in place, row after
    row.  indptr[r] = row r's first slot, kept[r] = its distinct targets (rows of a bucket
    contiguous from the bucket's start, the duplicates' slots left at its end)."""
    nb = len(bptr) - 1
    R = 1 << rbits
    tmask = np.uint64((1 << scale) - 1)
    sh = np.uint64(scale)
    for b in prange(nb):
        lo = bptr[b]
        hi = bptr[b + 1]
        keys = np.empty(hi - lo, np.uint64)
        for i in range(hi - lo):
            keys[i] = (np.uint64(high[lo + i]) << np.uint64(32)) | np.uint64(packed[lo + i])
        if hi - lo <= _SMALL:
            _insertion_sort(keys, 0, hi - lo)
            res = keys
        else:
            res = _radix_sort_keys(keys, np.empty(hi - lo, np.uint64), rbits + scale)
        row0 = b * R
        for j in range(R):
            kept[row0 + j] = 0
        w = lo
        j = 0
        indptr[row0] = lo
        for i in range(hi - lo):
            x = res[i]
            if i > 0 and x == res[i - 1]:
                continue
            r = np.int64(x >> sh)
            while j < r:                 # rows j+1 … r start here
                j += 1
                indptr[row0 + j] = w
            indices[w] = np.int32(x & tmask)
            kept[row0 + r] += 1
            w += 1
        while j < R - 1:
            j += 1
            indptr[row0 + j] = w


def rmat_csr(scale: int, edge_factor: int, a: float, b: float, c: float, key: int, mul,
             directed: bool, chunks: int | None = None):
    """(indptr, indices) of an R-MAT graph: ``edge_factor·2^scale`` generated edges (edge e from
    :func:`_rmat_edge`), self-loops dropped, duplicates merged, labels scrambled by
    :func:`_scramble` with the four multipliers ``mul`` (None: labels kept).  Deterministic for a
    given key and ``mul`` whatever ``chunks`` (the parallel split) is.

    The edges are generated twice and never stored: once to count the arcs of every bucket of
    2^rbits consecutive rows (rbits = min(scale − BUCKET_BITS, 40 − scale), at least 0), once
    to write each arc as a 40-bit key (row in the bucket, target) — low 32 bits in the index
    array itself, the rest in a byte array — at its bucket's next slot; then every bucket's keys
    are radix-sorted and the distinct targets written back row after row, and the rows are
    shifted together.  Peak memory beyond the final CSR: the duplicates' slots, one byte per
    arc, per-row kept counts and per-chunk bucket counters (≈ 1.3× the CSR in all)."""
    n = 1 << scale
    m = edge_factor * n
    C = int(chunks or numba.get_num_threads())
    thr, alias = rmat_alias_table(LEVELS, a, b, c)
    words = -(-scale // (2 * LEVELS))                # 64-bit outputs per edge
    permute = mul is not None
    mul = np.asarray(mul if permute else (1, 0, 1, 1), dtype=np.uint64)
    key = np.uint64(key)
    rbits = min(max(scale - BUCKET_BITS, 0), 40 - scale)
    cnt = np.zeros((C, n >> rbits), _offset_dtype(2 * m))
    _rmat_bucket_count(m, scale, key, words, thr, alias, permute, mul, directed, rbits, cnt)
    bptr = np.zeros((n >> rbits) + 1, np.int64)
    _chunk_offsets(cnt, bptr)
    total = int(bptr[-1])
    indices = np.empty(total, np.int32)      # owned by numpy: can shrink in place
    packed = indices.view(np.uint32)
    high = np.empty(total, np.uint8)
    _rmat_bucket_place(m, scale, key, words, thr, alias, permute, mul, directed, rbits, cnt,
                       packed, high)
    del cnt
    indptr = np.empty(n + 1, np.int64)
    indptr[n] = total
    kept = np.empty(n, np.int64)
    _rmat_bucket_rows(bptr, packed, high, indices, scale, rbits, indptr, kept)
    del high
    del packed
    _compact_rows(indptr, indices, kept)
    del kept
    total = int(indptr[-1])
    try:
        indices.resize(total, refcheck=False)          # realloc: shrinks without a copy
    except ValueError:
        indices = indices[:total].copy()
    return indptr, indices
