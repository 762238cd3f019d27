"""Numba kernels that build CSR graphs at scale (10⁷ vertices, 10⁸ edges) without Python loops
over edges and with little memory beyond the final arrays.

* :func:`gnm_csr` — CSR of the first ``count`` distinct vertex pairs of a sequence of random
  draws (G(n, m)): counting sort in parallel chunks, rows sorted and de-duplicated in parallel,
  repeats replaced by the next new draws;
* :func:`symmetric_arc_weights` — one weight per undirected edge, copied to both of its arcs;
* the row sorting and de-duplication that :func:`.rmat_kernels.rmat_csr` (R-MAT / Graph500
  Kronecker edges, :mod:`.rmat_kernels`) shares.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

#: buckets/rows up to this length are sorted by insertion sort, longer ones by numpy's sort
_SMALL = 24


@njit(cache=True, inline="always")
def _insertion_sort(a, lo, hi):
    for j in range(lo + 1, hi):
        x = a[j]
        k = j - 1
        while k >= lo and a[k] > x:
            a[k + 1] = a[k]
            k -= 1
        a[k + 1] = x


# ---------------------------------------------------------------------------- G(n, m) edge sets
@njit(cache=True)
def _take_nonloops(u, v, count, directed):
    """Move the first ``count`` draws with u ≠ v to the front of u, v (canonical (min, max) when
    undirected).  Returns (taken, index of the first draw not looked at)."""
    t = 0
    i = 0
    while i < len(u) and t < count:
        a = u[i]
        b = v[i]
        i += 1
        if a == b:
            continue
        if not directed and b < a:
            a, b = b, a
        u[t] = a
        v[t] = b
        t += 1
    return t, i


@njit(cache=True, parallel=True)
def _chunk_count(u, v, directed, cnt):
    C = cnt.shape[0]
    m = len(u)
    for c in prange(C):
        for i in range(m * c // C, m * (c + 1) // C):
            cnt[c, u[i]] += 1
            if not directed:
                cnt[c, v[i]] += 1


@njit(cache=True, parallel=True)
def _chunk_place(u, v, directed, cur, indices):
    C = cur.shape[0]
    m = len(u)
    for c in prange(C):
        for i in range(m * c // C, m * (c + 1) // C):
            a = u[i]
            b = v[i]
            indices[cur[c, a]] = b
            cur[c, a] += 1
            if not directed:
                indices[cur[c, b]] = a
                cur[c, b] += 1


@njit(cache=True, inline="always")
def _row_has(indices, lo, hi, x):
    lo = _find(indices, lo, hi, x)
    return lo < hi and indices[lo] == x


@njit(cache=True)
def _scan_extras(indptr, indices, kept, u, v, start, need, directed, old_u, old_v, new_u, new_v):
    """Scan draws u[start:], v[start:] in order for pairs that are neither loops, nor in the CSR
    (rows' first kept[r] entries, sorted), nor among the extras already taken (old_*, then
    new_*).  Stops after ``need`` new ones.  Returns how many were taken."""
    n = len(indptr) - 1
    seen = set()
    for j in range(len(old_u)):
        seen.add(np.int64(old_u[j]) * n + old_v[j])
    t = 0
    for i in range(start, len(u)):
        if t == need:
            break
        a = np.int64(u[i])
        b = np.int64(v[i])
        if a == b:
            continue
        if not directed and b < a:
            a, b = b, a
        if _row_has(indices, indptr[a], indptr[a] + kept[a], b):
            continue
        code = a * n + b
        if code in seen:
            continue
        seen.add(code)
        new_u[t] = a
        new_v[t] = b
        t += 1
    return t


@njit(cache=True, parallel=True)
def _merge_rows(indptr, indices, kept, ex_u, ex_v, directed, new_indptr, out):
    """out = rows' kept prefixes followed by the extra arcs, every touched row re-sorted."""
    n = len(indptr) - 1
    for r in prange(n):
        lo = indptr[r]
        w = new_indptr[r]
        for j in range(kept[r]):
            out[w + j] = indices[lo + j]
    fill = kept.copy()
    for j in range(len(ex_u)):
        a = ex_u[j]
        b = ex_v[j]
        out[new_indptr[a] + fill[a]] = b
        fill[a] += 1
        if not directed:
            out[new_indptr[b] + fill[b]] = a
            fill[b] += 1
    for r in prange(n):
        if fill[r] != kept[r]:
            _insertion_sort(out, new_indptr[r], new_indptr[r + 1])


def _offset_dtype(max_arcs):
    """int32 per-chunk counters/offsets when every arc index fits, else int64."""
    return np.int32 if max_arcs < 2**31 else np.int64


def _counting_sort_csr(n, u, v, directed, chunks=None):
    """(indptr, indices) with every pair (u[i], v[i]) placed (both arcs when undirected), rows in
    arbitrary order: per-chunk counts, then placement, chunks in parallel."""
    C = int(chunks or numba.get_num_threads())
    cnt = np.zeros((C, n), _offset_dtype(2 * len(u)))
    _chunk_count(u, v, directed, cnt)
    indptr = np.zeros(n + 1, np.int64)
    _chunk_offsets(cnt, indptr)
    indices = np.empty(int(indptr[-1]), np.int32)
    _chunk_place(u, v, directed, cnt, indices)
    return indptr, indices


def gnm_csr(n: int, count: int, directed: bool, draw):
    """CSR (indptr, indices) of the first ``count`` distinct pairs (u ≠ v; unordered unless
    directed) of the random draws made by ``draw(size) -> (u, v)``, which is called with
    ``size = need + need//8 + 16`` until ``count`` distinct pairs have been seen.

    The first ``count`` non-loop draws are placed by a counting sort and every row is sorted and
    de-duplicated; the repeats found there are then replaced by the next draws that are new (the
    "first distinct in draw order" rule), and merged into the rows."""
    u, v = draw(count + count // 8 + 16)
    t, pos = _take_nonloops(u, v, count, directed)
    indptr, indices = _counting_sort_csr(n, u[:t], v[:t], directed)
    kept = np.empty(n, np.int32 if len(indices) < 2**31 else np.int64)
    _sort_unique_rows(indptr, indices, kept)
    total_kept = int(kept.sum(dtype=np.int64))
    found = total_kept if directed else total_kept // 2
    idt = u.dtype
    ex_u, ex_v = np.zeros(0, idt), np.zeros(0, idt)
    while True:
        need = count - found
        if need > 0 and pos < len(u):
            nu, nv = np.empty(need, idt), np.empty(need, idt)
            k = _scan_extras(indptr, indices, kept, u, v, pos, need, directed, ex_u, ex_v, nu, nv)
            ex_u, ex_v = np.concatenate([ex_u, nu[:k]]), np.concatenate([ex_v, nv[:k]])
            found += k
            need -= k
        if need == 0:
            break
        u, v = draw(need + need // 8 + 16)
        pos = 0
    del u, v
    if len(ex_u) == 0 and total_kept == len(indices):
        return indptr, indices
    deg = kept.astype(np.int64)
    np.add.at(deg, ex_u, 1)
    if not directed:
        np.add.at(deg, ex_v, 1)
    new_indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=new_indptr[1:])
    out = np.empty(int(new_indptr[-1]), np.int32)
    _merge_rows(indptr, indices, kept, ex_u, ex_v, directed, new_indptr, out)
    return new_indptr, out


# ---------------------------------------------------------------------------- weights
@njit(cache=True, inline="always")
def _find(indices, lo, hi, x):
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, parallel=True)
def symmetric_arc_weights(indptr, indices, wf):
    """float64 weight per arc of an undirected CSR graph (rows sorted): the k-th arc (u, v) with
    u < v in CSR order gets wf[k], and its reverse arc (v, u) the same value.  Rows in parallel;
    every arc is written once."""
    n = len(indptr) - 1
    first = np.zeros(n + 1, np.int64)
    for a in prange(n):
        first[a + 1] = indptr[a + 1] - _find(indices, indptr[a], indptr[a + 1], a + 1)
    for a in range(n):
        first[a + 1] += first[a]
    w = np.empty(len(indices), np.float64)
    for a in prange(n):
        k = first[a]
        for e in range(_find(indices, indptr[a], indptr[a + 1], a + 1), indptr[a + 1]):
            b = indices[e]
            x = np.float64(wf[k])
            k += 1
            w[e] = x
            w[_find(indices, indptr[b], indptr[b + 1], a)] = x
    return w


# ---------------------------------------------------------------------------- R-MAT
@njit(cache=True, inline="always")
def _sort_unique_row(indices, lo, hi, bits):
    """Sort indices[lo:hi] and move its distinct values to the front; returns how many."""
    if hi - lo <= _SMALL:
        _insertion_sort(indices, lo, hi)
    elif hi - lo < _RADIX_MIN:
        indices[lo:hi].sort()
    else:
        _radix_sort(indices, lo, hi, bits)
    k = 0
    for e in range(lo, hi):
        if k == 0 or indices[e] != indices[lo + k - 1]:
            indices[lo + k] = indices[e]
            k += 1
    return k


@njit(cache=True, parallel=True)
def _chunk_offsets(cnt, indptr):
    """indptr from per-chunk counts; cnt[c, v] becomes chunk c's first slot in row v."""
    C, n = cnt.shape
    for v in prange(n):
        t = 0
        for c in range(C):
            t += cnt[c, v]
        indptr[v + 1] = t
    for v in range(n):
        indptr[v + 1] += indptr[v]
    for v in prange(n):
        run = indptr[v]
        for c in range(C):
            t = cnt[c, v]
            cnt[c, v] = run
            run += t


#: rows longer than this are sorted by an LSD radix sort (11-bit digits) instead of quicksort
_RADIX_MIN = 512


@njit(cache=True)
def _radix_sort(a, lo, hi, bits):
    """Sort a[lo:hi] (non-negative ints below 2**bits) in place: LSD radix, 11-bit digits."""
    d = hi - lo
    tmp = np.empty(d, a.dtype)
    cnt = np.empty(2049, np.int64)
    src_is_a = True
    shift = 0
    while shift < bits:
        cnt[:] = 0
        for j in range(d):
            x = a[lo + j] if src_is_a else tmp[j]
            cnt[((x >> shift) & 2047) + 1] += 1
        for k in range(2048):
            cnt[k + 1] += cnt[k]
        for j in range(d):
            x = a[lo + j] if src_is_a else tmp[j]
            k = (x >> shift) & 2047
            if src_is_a:
                tmp[cnt[k]] = x
            else:
                a[lo + cnt[k]] = x
            cnt[k] += 1
        src_is_a = not src_is_a
        shift += 11
    if not src_is_a:
        for j in range(d):
            a[lo + j] = tmp[j]


@njit(cache=True, parallel=True)
def _sort_unique_rows(indptr, indices, kept):
    """Sort every row and move its distinct targets to the row's front; kept[r] = how many."""
    n = len(indptr) - 1
    bits = 1
    while (1 << bits) < n:
        bits += 1
    for r in prange(n):
        kept[r] = _sort_unique_row(indices, indptr[r], indptr[r + 1], bits)


@njit(cache=True)
def _compact_rows(indptr, indices, kept):
    """Shift the kept prefix of every row left so rows are contiguous; indptr becomes final."""
    n = len(indptr) - 1
    w = 0
    for r in range(n):
        lo = indptr[r]
        k = kept[r]
        if w != lo:
            for j in range(k):
                indices[w + j] = indices[lo + j]
        indptr[r] = w
        w += k
    indptr[n] = w
