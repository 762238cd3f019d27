"""The numba generator kernels against plain NumPy references of the same definitions: G(n, m)
keeps the first m distinct pairs of its draws, random weights follow CSR order, R-MAT draws six
levels per alias-table look-up from a counter-based stream (the table and the level frequencies
checked on their own); edge counts and determinism (also across thread counts and splits)."""
import numba
import numpy as np
import pytest

from simengine.network import rmat_kernels
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


def reference_rmat_edges(scale, ef=16, a=.57, b=.19, c=.19, seed=None):
    """Raw R-MAT edges (before relabelling, loops and repeats kept) in vectorised NumPy: edge e
    takes 64-bit splitmix64 outputs at counters key + (e·words + j + 1)·golden; each 32-bit half
    (low first) picks 6 levels through the alias table; the low ``scale`` bits are kept."""
    rng = np.random.default_rng(seed)
    m = ef << scale
    key = np.uint64(int(rng.integers(0, 2**63 - 1)))
    mul = [int(x) | 1 for x in rng.integers(0, 2**62, size=4)]
    mul[1] -= 1
    thr, alias = rmat_kernels.rmat_alias_table(6, a, b, c)
    words = -(-scale // 12)
    G = np.uint64(0x9E3779B97F4A7C15)
    s = np.zeros(m, np.int64)
    d = np.zeros(m, np.int64)
    with np.errstate(over="ignore"):
        base = key + np.arange(m, dtype=np.uint64) * np.uint64(words) * G
        shift = 0
        for _ in range(words):
            base = base + G
            r = _mix(base)
            for w in (r & np.uint64(0xFFFFFFFF), r >> np.uint64(32)):
                i = (w >> np.uint64(20)).astype(np.int64)
                o = np.where((w & np.uint64(0xFFFFF)) < thr[i], i, alias[i].astype(np.int64))
                s |= (o >> 6) << shift
                d |= (o & 63) << shift
                shift += 6
    mask = (1 << scale) - 1
    return s & mask, d & mask, mul


def reference_rmat(scale, ef=16, a=.57, b=.19, c=.19, seed=None, directed=False):
    """R-MAT graph from the raw edges, labels relabelled by the scramble bijection (plain Python
    integers), loops and repeats dropped by CSRGraph.from_edges."""
    s, d, mul = reference_rmat_edges(scale, ef, a, b, c, seed)
    return CSRGraph.from_edges(1 << scale, scramble(s, scale, mul), scramble(d, scale, mul),
                               directed=directed)


def test_rmat_alias_table_gives_the_quadrant_products():
    """The alias table's outcome masses equal the products of the levels' quadrant
    probabilities (a, b, c, d for bits (0,0), (0,1), (1,0), (1,1)) up to its 2^-F rounding."""
    for levels, (a, b, c) in [(1, (.57, .19, .19)), (2, (.25, .25, .25)), (6, (.57, .19, .19)),
                              (6, (.45, .15, .15)), (3, (1.0, 0.0, 0.0)), (6, (.6, .4, 0.0))]:
        thr, alias = rmat_kernels.rmat_alias_table(levels, a, b, c)
        N, F = 4 ** levels, 32 - 2 * levels
        assert len(thr) == N and thr.max() <= 2 ** F and alias.max() < N
        mass = np.zeros(N)
        np.add.at(mass, np.arange(N), thr / 2.0 ** F / N)
        np.add.at(mass, alias.astype(np.int64), (1 - thr / 2.0 ** F) / N)
        q = {(0, 0): a, (0, 1): b, (1, 0): c, (1, 1): max(0.0, 1 - a - b - c)}
        want = np.array([np.prod([q[((o >> levels >> j) & 1, (o >> j) & 1)]
                                  for j in range(levels)]) for o in range(N)])
        np.testing.assert_allclose(mass, want, rtol=0, atol=2.0 ** -F)
        assert mass[want == 0].max(initial=0) == 0            # impossible outcomes never drawn


def test_rmat_levels_follow_the_quadrant_probabilities():
    """Every level of the raw edges picks quadrant a, b, c, d with its probability (binomial
    tolerance, 5 sigma), also for scales that are not multiples of 6 (levels masked off)."""
    for scale, (a, b, c) in [(10, (.57, .19, .19)), (7, (.4, .3, .2))]:
        s, d, _ = reference_rmat_edges(scale, 16, a, b, c, seed=11)
        m = len(s)
        assert s.max() < 1 << scale and d.max() < 1 << scale
        for bit in range(scale):
            q = 2 * ((s >> bit) & 1) + ((d >> bit) & 1)
            freq = np.bincount(q, minlength=4) / m
            p = np.array([a, b, c, 1 - a - b - c])
            assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / m) + 1e-12), (bit, freq)


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


@pytest.mark.parametrize("scale,directed,kw", [(6, False, {}), (9, True, {}), (1, False, {}),
                                               (3, True, {}), (13, False, dict(a=.45)),
                                               (8, False, dict(a=.25, b=.25, c=.25)),
                                               (7, False, dict(a=1.0, b=0.0, c=0.0))])
def test_rmat_equals_reference(scale, directed, kw):
    g = gen.rmat(scale, seed=3, directed=directed, **kw)
    ref = reference_rmat(scale, seed=3, directed=directed, **kw)
    assert g.content_hash() == ref.content_hash()


def test_rmat_hub_rows_and_unscrambled_labels_equal_reference():
    g = gen.rmat(12, seed=5)
    assert g.degree().max() >= 512                               # hub rows in big buckets
    assert g.content_hash() == reference_rmat(12, seed=5).content_hash()
    s, d, _ = reference_rmat_edges(9, seed=6)
    plain = gen.rmat(9, seed=6, permute=False)
    assert plain.content_hash() == CSRGraph.from_edges(512, s, d).content_hash()


def test_rmat_independent_of_thread_split_and_counts():
    mul = [12345, 678, 91011, 1213]
    for directed in (False, True):
        a = rmat_kernels.rmat_csr(10, 16, .57, .19, .19, 12345, mul, directed, chunks=1)
        b = rmat_kernels.rmat_csr(10, 16, .57, .19, .19, 12345, mul, directed, chunks=7)
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
