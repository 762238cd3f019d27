"""Many steps per host call (CUDA Graphs of the stage launches, simengine.field.cuda.graph).

On a GPU the replayed graph must give the same bits as launching stage by stage; under the
simulator graphs are not used and the solver must say so. The recording order is checked
against the integrator's own launch order without a GPU.
"""
import numpy as np
import pytest

from simengine.field import integrator as integ
from simengine.field.cuda import graph as cgraph
from simengine.field.cuda.config import SIMULATOR
from simengine.field.model import Boundary, CahnHilliard, Grid


@pytest.mark.parametrize("name", ["rk2", "euler"])
def test_recorded_stages_are_the_integrators_launch_order(name):
    sch = integ.scheme(name)
    buffers = [object(), object(), object()]
    coefs = integ.coefficients(sch, 0.01)
    launched, recorded = [], []
    integ.advance(list(buffers), lambda s, b, o, c, lo, hi: launched.append((s, b, o, c)),
                  integ.no_exchange, sch, coefs, 0, 4, 6)
    cgraph.record_steps("builder", buffers, sch, coefs,
                        lambda t, s, b, o, c: recorded.append((s, b, o, c)), 6)
    assert recorded == launched
    assert len(recorded) == 6 * len(sch.stages)


def test_odd_step_count_is_refused():
    sch = integ.scheme("rk2")
    with pytest.raises(ValueError, match="back in their slots"):
        cgraph.record_steps(None, [object(), object(), object()], sch,
                            (0.1, 0.2), lambda *a: None, 3)


GRAPH_CASES = [((24, 20), "texture", "periodic", "float64"),
               ((24, 20), "global", "mirror", "float32"),
               ((12, 10, 8), "texture", "fixed", "float64"),
               ((20, 18), "shared", "periodic", "float64")]


# the simulator records no graphs (the test only shows that it says so): one 2-D and one 3-D case
@pytest.mark.parametrize("shape,kernel,bc,prec", GRAPH_CASES[1:3] if SIMULATOR else GRAPH_CASES)
def test_graph_replay_matches_launch_by_launch(shape, kernel, bc, prec):
    from simengine.field.cuda_solver import CudaFieldSolver

    model = CahnHilliard.classic()
    phi0 = np.random.default_rng(3).uniform(-0.2, 0.2, shape)
    K = cgraph.GRAPH_STEPS
    # the simulator never records graphs: a few steps show that it says so
    steps = 2 * K + 5 if not SIMULATOR else 3
    # simulator, 3-D: an 8×8 block (the default marching block of 32×8 threads is slow there)
    opts = dict(block=(8, 8, 1)) if SIMULATOR and len(shape) == 3 else {}
    out = []
    for graphs in (False, True):
        s = CudaFieldSolver(model, Grid(shape), Boundary(bc, value=0.1), kernel=kernel,
                            precision=prec, dt=0.01, **opts)
        s.use_graphs = graphs
        s.load(phi0)
        s.advance(steps)
        if graphs:
            if SIMULATOR:
                assert not s._graphs_usable() and not s._graphs
            else:
                assert s._graph_error is None and len(s._graphs) >= 1
        out.append(s.state())
    np.testing.assert_array_equal(out[0], out[1])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 40, 63, 64, 65, 127, 128, 129, 1000, 1001, 8192,
                               8193, 20001])
def test_split_steps_covers_every_step_with_even_graphs(n):
    plan, rest = cgraph.split_steps(n)
    assert sum(k * t for k, t in plan) + rest == n
    assert rest in (0, 1) and rest == n % 2
    assert all(k % 2 == 0 for k, _ in plan)
    assert [k for k, _ in plan] == sorted((k for k, _ in plan), reverse=True)
    # one graph of the exact (even) length in the EXACT_MIN … EXACT_MAX range
    if cgraph.EXACT_MIN <= n <= cgraph.EXACT_MAX:
        assert plan == [(n - n % 2, 1)]
    else:
        assert {k for k, _ in plan} <= {cgraph.GRAPH_STEPS, *cgraph.GRAPH_REST_STEPS}


def test_split_steps_without_exact_uses_the_standard_sizes():
    for n in (128, 1000, 8192):
        plan, rest = cgraph.split_steps(n, exact=False)
        assert sum(k * t for k, t in plan) + rest == n
        assert {k for k, _ in plan} <= {cgraph.GRAPH_STEPS, *cgraph.GRAPH_REST_STEPS}


def test_lengths_seen_says_again_only_for_recent_repeats():
    seen = cgraph.LengthsSeen(keep=3)
    assert [seen.again(n) for n in (1000, 1000, 500, 1000)] == [False, True, False, True]
    for n in (1, 2, 3):  # 1000 falls out of the last three
        seen.again(n)
    assert not seen.again(1000) and seen.again(1000)


def test_exact_graphs_are_cached_for_the_latest_lengths():
    graphs, order = {}, []
    for steps in (64, 1000, 16, 1002, 1000, 2000, 3000, 4000):
        cgraph.cache_graph(graphs, ("key", steps), object(), steps, order)
    # the standard sizes stay; of the exact lengths the EXACT_CACHE most recent keys
    assert ("key", 64) in graphs and ("key", 16) in graphs
    exact = [k for k in graphs if k[1] not in (64, 16)]
    assert len(exact) == cgraph.EXACT_CACHE == 4
    assert ("key", 4000) in graphs and ("key", 1002) not in graphs


def test_replay_steps_uses_graphs_and_launches_what_recording_could_not():
    replayed, launched = [], []

    class Fake:
        def __init__(self, k):
            self.k = k

        def replay(self, times):
            replayed.append((self.k, times))

    # every size records: 10041 = 156·64 + 3·16 + 2·4 + 1 launched alone
    assert cgraph.replay_steps(10041, Fake, launched.append) == 10040
    assert replayed == [(64, 156), (16, 3), (4, 2)] and launched == [1]
    # the 16-step graph cannot be recorded: its steps are launched with the odd one
    replayed.clear()
    launched.clear()
    assert cgraph.replay_steps(10041, lambda k: None if k == 16 else Fake(k),
                               launched.append) == 9992
    assert replayed == [(64, 156), (4, 2)] and launched == [49]
    # 1001 steps: one graph of exactly 1000 and the odd step launched
    replayed.clear()
    launched.clear()
    assert cgraph.replay_steps(1001, Fake, launched.append) == 1000
    assert replayed == [(1000, 1)] and launched == [1]
