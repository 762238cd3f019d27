"""The numba generator kernels against plain NumPy references of the same definitions: G(n, m)
keeps the first m distinct pairs of its draws, random weights follow CSR order, R-MAT descends the
quadrants from a counter-based stream; edge counts and determinism (also across thread counts)."""
import numba
import numpy as np
import pytest

from simengine.network import csr_kernels
from simengine.network import generators as gen
from simengine.network.graph import CSRGraph


def reference_pairs(n, count, directed, rng):
    """The G(n, m) draw rule in plain NumPy (np.unique over all draws so far)."""
    codes = np.zeros(0, np.int64)
    while len(codes) < count:
        need = count - len(codes)
        u = rng.integers(0, n, size=need + need // 8 + 16)
        v = rng.integers(0, n, size=len(u))
        ok = u != v
        u, v = u[ok], v[ok]
        if not directed:
            u, v = np.minimum(u, v), np.maximum(u, v)
        codes = np.concatenate([codes, u * n + v])
        _, first = np.unique(codes, return_index=True)
        codes = codes[np.sort(first)]
    codes = codes[:count]
    return codes // n, codes % n


def reference_weights(g, low, high, rng):
    src, dst = g.arcs()
    if g.directed:
        return rng.integers(low, high + 1, size=g.num_arcs).astype(np.float64)
    fwd = src < dst
    wf = rng.integers(low, high + 1, size=int(fwd.sum())).astype(np.float64)
    codes_f = src[fwd] * g.n + dst[fwd]
    return wf[np.searchsorted(codes_f, np.minimum(src, dst) * g.n + np.maximum(src, dst))]


@pytest.mark.parametrize("n,m,directed", [
    (2000, 7000, False), (500, 3000, True),
    (60, 1700, False),     # dense: many repeats, several rounds of draws
    (30, 435, False),      # complete graph
    (20, 380, True),       # complete digraph
    (1, 0, False), (5, 0, True),
])
def test_gnm_equals_reference(n, m, directed):
    g = gen.erdos_renyi_gnm(n, m, seed=3, directed=directed)
    s, d = reference_pairs(n, m, directed, np.random.default_rng(3))
    ref = CSRGraph.from_edges(n, s, d, directed=directed)
    assert g.content_hash() == ref.content_hash()
    assert g.num_edges == m and g.indices.dtype == np.int32


def test_random_weights_equal_reference():
    for directed in (False, True):
        g = gen.erdos_renyi_gnm(400, 1500, seed=1, directed=directed)
        w = gen.random_weights(g, 1, 10, seed=5).weights
        np.testing.assert_array_equal(w, reference_weights(g, 1, 10, np.random.default_rng(5)))
    rw = gen.random_weighted(1000, 6, seed=7)
    rng = np.random.default_rng(7)
    s1, s2 = int(rng.integers(0, 2**31 - 1)), int(rng.integers(0, 2**31 - 1))
    base = gen.erdos_renyi_gnm(1000, 3000, seed=s1)
    np.testing.assert_array_equal(rw.weights,
                                  reference_weights(base, 1, 10, np.random.default_rng(s2)))


def _mix(x):
    z = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def reference_rmat(scale, ef=16, a=.57, b=.19, c=.19, seed=None, directed=False):
    """R-MAT in vectorised NumPy: per level one 32-bit uniform picks the quadrant; labels
    relabelled by the scramble bijection (plain Python integers)."""
    rng = np.random.default_rng(seed)
    n, m = 1 << scale, ef << scale
    key = np.uint64(int(rng.integers(0, 2**63 - 1)))
    mul = [int(x) | 1 for x in rng.integers(0, 2**62, size=4)]
    mul[1] -= 1
    G = np.uint64(0x9E3779B97F4A7C15)
    thr = [np.uint64(min(int(x * 2.0**32), 1 << 32)) for x in (a, a + b, a + b + c)]
    s = np.zeros(m, np.int64)
    d = np.zeros(m, np.int64)
    with np.errstate(over="ignore"):
        base = key + np.arange(m, dtype=np.uint64) * np.uint64((scale + 1) // 2) * G
        for bit in range(scale):
            if bit % 2 == 0:
                base = base + G
                r = _mix(base)
                x = r & np.uint64(0xFFFFFFFF)
            else:
                x = r >> np.uint64(32)
            right = ((x >= thr[0]) & (x < thr[1])) | (x >= thr[2])
            s |= (x >= thr[1]).astype(np.int64) << bit
            d |= right.astype(np.int64) << bit
    return CSRGraph.from_edges(n, scramble(s, scale, mul), scramble(d, scale, mul),
                               directed=directed)


def scramble(x, scale, mul):
    """The relabelling bijection: multiply-add, xor-shift, multiply, xor-shift, multiply."""
    mask, h = (1 << scale) - 1, scale // 2 + 1
    y = [int(v) for v in x]
    out = []
    for v in y:
        v = (v * mul[0] + mul[1]) & mask
        v ^= v >> h
        v = (v * mul[2]) & mask
        v ^= v >> h
        out.append((v * mul[3]) & mask)
    return np.array(out, dtype=np.int64)


def test_scramble_is_a_bijection():
    for scale in (1, 2, 5, 10):
        x = np.arange(1 << scale)
        y = scramble(x, scale, [12345, 678, 91011, 1213])
        assert np.array_equal(np.sort(y), x)


@pytest.mark.parametrize("scale,directed,kw", [(6, False, {}), (9, True, {}),
                                               (8, False, dict(a=.25, b=.25, c=.25)),
                                               (7, False, dict(a=1.0, b=0.0, c=0.0))])
def test_rmat_equals_reference(scale, directed, kw):
    g = gen.rmat(scale, seed=3, directed=directed, **kw)
    ref = reference_rmat(scale, seed=3, directed=directed, **kw)
    assert g.content_hash() == ref.content_hash()


def test_rmat_hub_rows_equal_reference():
    g = gen.rmat(12, seed=5)
    assert g.degree().max() >= csr_kernels._RADIX_MIN          # the radix-sorted rows
    assert g.content_hash() == reference_rmat(12, seed=5).content_hash()


def test_rmat_independent_of_thread_split_and_counts():
    mul = [12345, 678, 91011, 1213]
    a = csr_kernels.rmat_csr(10, 16, .57, .19, .19, 12345, mul, False, chunks=1)
    b = csr_kernels.rmat_csr(10, 16, .57, .19, .19, 12345, mul, False, chunks=7)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    g = gen.rmat(12, seed=2)
    assert g.n == 4096 and 0.5 * 16 * 4096 < g.num_edges <= 16 * 4096
    deg = g.degree()
    assert np.sort(deg)[-10:].mean() > 10 * deg.mean()          # Graph500 skew
    A = g.to_scipy()
    assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0


def test_generators_deterministic_across_thread_counts():
    specs = [{"type": "gnm", "n": 3000, "m": 9000, "seed": 4},
             {"type": "random_weighted", "n": 2000, "seed": 4},
             {"type": "rmat", "scale": 10, "seed": 4}]
    old = numba.get_num_threads()
    try:
        hashes = []
        for t in sorted({1, old}):
            numba.set_num_threads(t)
            hashes.append([gen.generate(s).content_hash() for s in specs])
    finally:
        numba.set_num_threads(old)
    assert all(h == hashes[0] for h in hashes)
