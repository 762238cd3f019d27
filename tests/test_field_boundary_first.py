"""The boundary-first order of a slab's stages (integrator.advance_boundary_first): the order of
the calls an exchanger sees, and the field equal to the plain order bit for bit (CPU slabs of
one process, exchanging through a recording exchanger)."""
import numpy as np
import pytest

from simengine.field import integrator as integ
from simengine.field.backends import make_solver
from simengine.field.cuda import config as ck_config
from simengine.field.decomposition import SlabGroup
from simengine.field.model import Boundary, CahnHilliard, Grid


class Recorder:
    """An exchanger of the boundary-first protocol that logs its calls (no neighbours)."""

    boundary_first = True
    depth = 2

    def __init__(self, log, buffers):
        self.log, self.buffers = log, buffers

    def _name(self, a):
        return next(i for i, b in enumerate(self.buffers) if b is a)

    def __call__(self, a):
        self.log.append(("exchange", self._name(a)))

    def mark(self, a):
        self.log.append(("mark", self._name(a)))

    def send(self, a):
        self.log.append(("send", self._name(a)))

    def ready(self, a, wait=False):
        self.log.append(("ready", self._name(a), wait))


def test_boundary_first_call_order():
    bufs = [object(), object(), object()]
    log = []
    ex = Recorder(log, list(bufs))

    def stage(src, base, out, coef, lo, hi):
        log.append(("stage", ex._name(src), ex._name(out), lo, hi))

    integ.advance(list(bufs), stage, ex, integ.scheme("rk2"), (0.5, 1.0), 2, 12, 2)
    assert log == [
        ("exchange", 0), ("stage", 0, 1, 2, 4), ("stage", 0, 1, 10, 12), ("mark", 1),
        ("stage", 0, 1, 4, 10), ("send", 1),
        ("ready", 1, False), ("stage", 1, 2, 2, 4), ("stage", 1, 2, 10, 12), ("mark", 2),
        ("stage", 1, 2, 4, 10), ("send", 2),
        # step 2: φ is the old buffer 2 (rotation), whose halo send() started
        ("ready", 2, False), ("stage", 2, 1, 2, 4), ("stage", 2, 1, 10, 12), ("mark", 1),
        ("stage", 2, 1, 4, 10), ("send", 1),
        ("ready", 1, False), ("stage", 1, 0, 2, 4), ("stage", 1, 0, 10, 12), ("mark", 0),
        ("stage", 1, 0, 4, 10), ("send", 0),
        ("ready", 0, True)]
    # the order is collective: an exchanger that asks for it on a slab without interior rows is
    # an error, never a silent switch of this slab alone to the plain order (a deadlock on ranks)
    log.clear()
    with pytest.raises(ValueError, match="more than 4 rows per slab"):
        integ.advance(list(bufs), stage, ex, integ.scheme("euler"), (1.0,), 2, 6, 1)
    assert log == []


def test_the_exchangers_take_the_order_only_when_every_slab_is_thick():
    from simengine.field.decomposition import make_slabs
    from simengine.field.distributed import MPIHaloExchange

    thin = make_slabs(9, [(0, 5), (5, 9)], "periodic")  # 5 and 4 rows: 4 has no interior
    thick = make_slabs(10, [(0, 5), (5, 10)], "periodic")
    assert not MPIHaloExchange(None, thin[0], thin).boundary_first
    assert MPIHaloExchange(None, thick[0], thick).boundary_first


class Deferred:
    """Boundary-first exchanger of one slab of an in-process group run in threads (one per slab):
    ``send`` meets the other slabs in a barrier and takes copies of the neighbours' end rows,
    ``ready`` writes them into the halo only then — a stage that read a halo before its
    ``ready`` would see stale rows and the field would differ."""

    boundary_first = True
    depth = 2

    def __init__(self, group, index, barrier):
        self.group, self.index, self.barrier, self.sent = group, index, barrier, None

    def _rows(self, a):
        # the neighbour's buffer in the same original slot (as PeerHaloExchange: the list
        # ``buffers`` of a slab running ahead may already be rotated)
        slots = self.group.slots
        me = self.group.solvers[self.index]
        k, s = [id(b) for b in slots[self.index]].index(id(a)), me.slab
        low = high = None
        if s.lower is not None:
            nb = self.group.solvers[s.lower]
            low = np.array(nb.boundary_rows(slots[s.lower][k])[1])
        if s.upper is not None:
            nb = self.group.solvers[s.upper]
            high = np.array(nb.boundary_rows(slots[s.upper][k])[0])
        return low, high

    def __call__(self, a):
        self.barrier.wait()
        low, high = self._rows(a)
        self.barrier.wait()
        self.group.solvers[self.index].set_halo(a, low, high)

    def mark(self, a):
        pass

    def send(self, a):
        self.barrier.wait()
        self.sent = (a, self._rows(a))

    def ready(self, a, wait=False):
        assert a is self.sent[0]
        self.group.solvers[self.index].set_halo(a, *self.sent[1])


@pytest.mark.parametrize("boundary,ndim", [("periodic", 2), ("fixed", 3), ("mirror", 1)])
def test_boundary_first_slabs_equal_whole_grid(boundary, ndim):
    import threading

    shape = {1: (29,), 2: (19, 7), 3: (14, 5, 4)}[ndim]
    model = CahnHilliard(mobility=1.0, kappa=0.5)
    grid = Grid(shape, 1.0)
    bnd = Boundary(boundary, 0.2 if boundary == "fixed" else 0.0)
    kw = dict(kernel="texture", precision="float64", integrator="rk2", dt=0.01)
    phi = np.random.default_rng(3).uniform(-0.5, 0.5, shape)
    whole = make_solver(model, grid, bnd, backend="cpu", **kw)
    whole.load(phi)
    whole.advance(5)
    n0 = shape[0]
    barrier = threading.Barrier(2)
    lock = threading.Lock()  # one numba stage at a time (its thread pool is not re-entrant)

    def factory(slab, _plain):
        sol = make_solver(model, grid, bnd, backend="cpu", slab=slab,
                          exchange=Deferred(group, slab.index, barrier), **kw)
        stage = sol.stage

        def locked(*a):
            with lock:
                stage(*a)

        sol.stage = locked
        return sol

    group = SlabGroup.__new__(SlabGroup)
    SlabGroup.__init__(group, factory, n0, [(0, n0 // 2 + 1), (n0 // 2 + 1, n0)], boundary)
    group.slots = [list(sol.buffers) for sol in group.solvers]
    group.load(phi)
    errors = []

    def run(sol):
        try:
            sol.advance(5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(s,)) for s in group.solvers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    np.testing.assert_array_equal(group.state(), whole.state())


class _NoNeighbours:
    """The boundary-first protocol with nothing to exchange (a whole grid)."""

    boundary_first = True
    depth = 2

    def __call__(self, a):
        pass

    mark = send = __call__

    def ready(self, a, wait=False):
        pass


@pytest.mark.parametrize("precision", ["float64"] if ck_config.SIMULATOR else
                         ["float64", "float32"])
def test_cuda_boundary_first_ranges_equal_the_whole_stage(precision):
    """A CUDA solver's stages over the end and interior rows (their own plans: the solver's
    kernel and rows per thread, the launch rules per range) give the field of the whole-range
    stage bit for bit (on a GPU: the shared-memory march in 3-D; CI: the simulator)."""
    shape = (10, 4, 8)
    model = CahnHilliard(mobility=1.0, kappa=0.5)
    grid = Grid(shape, 1.0)
    bnd = Boundary("periodic")
    phi = np.random.default_rng(5).uniform(-0.5, 0.5, shape)
    kw = dict(kernel="texture", precision=precision, integrator="rk2", dt=0.01,
              fused=False)  # the stages (auto: the fused 3-D form on a GPU)
    plain = make_solver(model, grid, bnd, backend="cuda", **kw)
    plain.use_graphs = False
    plain.load(phi)
    plain.advance(2)
    split = make_solver(model, grid, bnd, backend="cuda", **kw)
    split.use_graphs = False
    split.exchange = _NoNeighbours()
    split.load(phi)
    split.advance(2)
    assert sorted(split._plans) == [(0, 2), (2, 8), (8, 10)]
    assert all(p.rows == split.plan.rows and p.kernel_name == split.plan.kernel_name
               for p in split._plans.values())
    np.testing.assert_array_equal(split.state(), plain.state())
    # the log's one answer to "does the exchange overlap the interior" (plan_summary, describe)
    assert split.exchange_overlapped and not plain.exchange_overlapped
