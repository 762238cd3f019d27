"""The network job: a shortest-path scenario as units of work (sources) for the controller.

Implements the controller protocol of :mod:`simengine.control.runner` (``describe``, ``make_output``,
``start``, ``next_stop``, ``advance``, ``at_stop``, ``checkpoint``, ``finished``). Done work is the
set of sources whose partial statistics are in ``self.stats`` (``PathStatistics.done``), so a run
can be resumed whatever order or split processed them.
"""
from __future__ import annotations

import numpy as np

from ..errors import UserError


#: GPU msbfs on ranks: the last claims of a round shrink to 1/TAIL_FRACTION of the full sweep
#: width (1024 sources → 256): without narrower tail claims one rank could finish a whole
#: full-width batch after the other (its time: docs/measurements/code-comments-2026-11-28.md)
TAIL_FRACTION = 4


class NetworkJob:
    kind = "network"
    unit = "source"

    def __init__(self, sc, log=None, comm=None, plan=None, graph=None, graph_seconds=0.0):
        """``plan`` and ``graph``: the run's one plan and the graph it was made from
        (:func:`simengine.control.runner.plan_network`); without them (a benchmark's job), the
        graph is built and planned here the same way."""
        from ..network.sources import choose_sources
        from ..network.statistics import PathStatistics

        from ..parallel import SerialComm

        self.sc = sc
        self.spec = spec = sc.spec
        self.log = log or (lambda msg: None)
        self.comm = comm or SerialComm()
        if graph is None:
            graph, graph_seconds = build_timed(sc, self.log, self.comm)
        self.graph = graph
        self.graph_seconds = graph_seconds      # generated or read: start-up
        m = spec.metrics
        if m.implied_note():
            self.log(m.implied_note())
        if isinstance(m.sources, list):
            from ..network.sources import listed_source_indices

            src_spec = listed_source_indices(self.graph, m.sources, f"{sc.path}: metrics.sources")
        elif m.sources == "all":
            src_spec = "all"
        else:
            src_spec = {"sample": m.sources.sample, "seed": m.sources.seed}
            from ..network.sources import sample_note

            if sample_note(m.sources, self.graph.n):
                self.log(sample_note(m.sources, self.graph.n))
        try:
            sources, self.sampled = choose_sources(self.graph.n, src_spec)
        except ValueError as exc:
            raise UserError(f"{sc.path}: metrics: {exc}") from None
        self.sources = np.asarray(sources, dtype=np.int64)
        # the run's plan, decided once from the built graph (every rank gets the same plan):
        # backend, algorithm, the predecessors and betweenness rows, the batch
        if plan is None:
            from ..plan import for_scenario

            plan = for_scenario(sc, self.comm.size, graph=self.graph)
        self.run_plan = plan
        choice = self.run_plan.choice
        self.store_predecessors = bool(m.store_predecessors)
        if choice.substituted:
            self.log(f"metrics.algorithm: {choice.note}")
        self.backend, self.algorithm = self.run_plan.backend, self.run_plan.runs
        self.total = len(self.sources)
        self.bin_width = float(m.histogram_bin_width or 1.0)
        from ..network.betweenness import mode as betweenness_mode
        from ..network.statistics import wants_paths

        btw = betweenness_mode("betweenness" in m.statistics, m.betweenness_normalized)
        self.stats = PathStatistics.for_graph(
            self.graph, bin_width=self.bin_width, sampled=self.sampled,
            planned_sources=self.total, betweenness=btw,
            # betweenness alone: the engines skip the path statistics
            paths=not btw or wants_paths(m.statistics) or bool(m.store_distances)
            or self.store_predecessors)
        if self.stats.betweenness:     # Brandes' engine runs, and gives the path statistics too
            note = choice.engine_note
            if not self.stats.paths:
                note = note.split("; the path statistics")[0] + "; betweenness alone (no path " \
                    "statistics asked for)"
            self.log(f"metrics.statistics: {note} (not {choice.algorithm} on {choice.backend})")
        self.every = int(spec.output.checkpoint_every)
        self.batch = self.run_plan.batch
        self.store_dtype = self._store_dtype() if m.store_distances else None
        from ..network.spans import Spans

        self.spans = Spans()       # where this rank's time goes (SIMENGINE_PROFILE)
        self.spans.add("start-up: graph", self.graph_seconds)
        self.upload_seconds = 0.0
        # compilation is start-up, never work: the engine's kernels (GPU, or the CPU's numba
        # kernels: seconds on a cold cache) run once on a 3-vertex graph before the work timer
        self.warmup_seconds = self._warm_up()
        self.host_seconds = _warm_host()
        self.spans.add("start-up: host kernels", self.host_seconds)
        if self.comm.size > 1:
            with self.spans("start-up: MPI"):
                _warm_mpi(self.comm, self.graph.n)
        self.split_note = None
        self.pending_rows = []
        self.pending_pred_rows = []   # /predecessors rows, beside pending_rows
        self.elapsed_before = 0.0
        self.last_ckpt = -1
        self.edge_results = None     # edge_betweenness, computed once all sources are done

    def _warm_up(self) -> float:
        """Compile (or load from numba's disk cache) the engine's kernels — GPU or CPU — on a
        3-vertex graph of the same types, so that the work timer (and the ranks' load balance)
        does not count compilation. Returns the seconds spent."""
        import time

        from ..network.apsp import run_sources
        from ..network.graph import CSRGraph
        from ..network.statistics import PathStatistics

        t = time.perf_counter()
        w = None
        if self.graph.weighted:    # the same weight kind (the GPU Brandes engine: int or float)
            gw = self.graph.weights
            w = np.ones(2) if np.all(gw == np.rint(gw)) else np.array([1.5, 2.5])
        tiny = CSRGraph.from_edges(3, np.array([0, 1]), np.array([1, 2]), weights=w,
                                   directed=self.graph.directed)
        # on ranks, msbfs's last claims run narrower sweeps (_claim_tail): compile those too
        widths = [None]
        if self.algorithm == "msbfs" and self.comm.size > 1 and self.backend == "cuda":
            from ..network.cuda.msbfs import DEFAULT_WORDS

            widths += [32 * DEFAULT_WORDS // f for f in (2, TAIL_FRACTION) if f > 1]
        try:
            for b in widths:
                run_sources(tiny, np.arange(3), PathStatistics.for_graph(
                                tiny, betweenness=self.stats.betweenness,
                                paths=self.stats.paths),
                            algorithm=self.algorithm, backend=self.backend,
                            **({} if b is None else {"batch": b}))
            if "edge_betweenness" in self.spec.metrics.statistics and self.comm.rank == 0:
                from ..network.edge_betweenness import edge_betweenness

                edge_betweenness(tiny, np.arange(3),
                                 backend=self.run_plan.decision("edge_betweenness").chosen)
        except Exception:  # the real run reports any problem with the real graph
            pass
        compiled = time.perf_counter() - t
        self.spans.add("start-up: compile", compiled)
        if self.backend != "cuda":
            return compiled
        # the graph's upload and the engine's buffers are start-up too (reported apart)
        t = time.perf_counter()
        if self.algorithm != "brandes":
            from ..network.cuda.engine import prepare

            words = [w // 32 for w in widths[1:]]      # msbfs's narrower tail sweeps
            try:
                prepare(self.graph, self.algorithm, len(self.sources), words)
            except Exception:  # e.g. out of device memory: the run says so with its real sizes
                pass
        self.upload_seconds = time.perf_counter() - t
        self.spans.add("start-up: upload", self.upload_seconds)
        return compiled

    def _store_dtype(self):
        from ..network.apsp import store_dtype

        return store_dtype(self.graph)

    # ---- controller protocol
    def describe(self, output) -> str:
        g = self.graph
        gpu = self.backend == "cuda"
        warm = (f"; start-up: graph built in {self.graph_seconds:.1f} s, "
                + (f"GPU kernels compiled in {self.warmup_seconds:.1f} s, graph and buffers on "
                   f"the GPU in {self.upload_seconds:.2f} s, " if gpu else
                   f"kernels compiled or loaded in {self.warmup_seconds:.1f} s, ")
                + f"host kernels ready in {self.host_seconds:.1f} s (not in the work time)")
        alg = self.algorithm
        if alg == "fw" and self.backend == "cuda":
            from ..network.cuda.floyd_warshall import kernel_note

            alg = f"fw [{kernel_note(g)}]"
        elif alg == "brandes" and self.backend == "cuda":
            from ..network.cuda.brandes import engine_note

            alg = f"brandes [{engine_note(g)}]"
        return (f"{self.sc.name}: {self.total} sources, {alg} on {self.backend}, "
                f"graph n={g.n} arcs={g.num_arcs}{' directed' if g.directed else ''}"
                f"{' weighted' if g.weighted else ''}"
                f"{', predecessors stored' if self.store_predecessors else ''}{warm} -> {output}")

    def _claim_align(self) -> int:
        """Sources per claim (and per piece on the counter's host) are a multiple of the
        bit-parallel sweep width of msbfs."""
        if self.algorithm != "msbfs":
            return 1
        if self.backend == "cuda":
            from ..network.cuda.msbfs import DEFAULT_WORDS

            return 32 * DEFAULT_WORDS
        # one full-width batch (DEFAULT_WORDS words of 64 sources) per thread: narrower pieces
        # sweep the graph as often for fewer sources
        import numba

        from ..network.cpu.msbfs import DEFAULT_WORDS

        return 64 * DEFAULT_WORDS * numba.get_num_threads()

    def _claim_tail(self) -> int:
        """The narrowest claim at the end of a round on ranks: GPU msbfs claims shrink down to
        a quarter of the full sweep width (kernels of that width are compiled in the warm-up),
        so that ranks finish within a quarter-width batch of each other; elsewhere the full
        alignment."""
        align = self._claim_align()
        if self.algorithm == "msbfs" and self.backend == "cuda" and self.comm.size > 1:
            return max(1, align // TAIL_FRACTION)
        return align

    def make_output(self, path, fresh, truncate_to):
        """The writer: rank 0 writes the one output, the other ranks nothing."""
        from ..io.network_output import NetworkOutput

        if self.comm.rank != 0:
            return _NoOutput()
        g = self.graph
        return NetworkOutput(path, fresh, compression=self.spec.output.compression,
                             attributes=self._attributes() if fresh else None, n=g.n,
                             sources=self.sources, store_dtype=self.store_dtype,
                             predecessors=self.store_predecessors,
                             vertex_ids=g.output_ids() if g.ids is not None else None)

    def _attributes(self) -> dict:
        """The output's root attributes: the run, its graph, its start-up and its plan."""
        import time

        from ..io.metadata import plan_attributes
        from ..network.structure import startup_seconds   # the graph, compile, upload: not work
        from ..version import __version__

        g, sc = self.graph, self.sc
        return {"simengine_version": __version__, "name": sc.name, "scenario": sc.as_yaml(),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "algorithm": self.algorithm,
                "backend": self.backend, "graph_n": g.n, "graph_arcs": g.num_arcs,
                "graph_directed": bool(g.directed), "graph_weighted": bool(g.weighted),
                "graph_hash": g.content_hash(), **startup_seconds(self),
                **plan_attributes(self.run_plan)}

    def _write(self, out, done, elapsed, results=None):
        """Hand the rows computed since the last write, the accumulators' state (written before
        the next batch adds to it) and the results to the writer."""
        rows, preds = self.pending_rows, self.pending_pred_rows
        if not isinstance(out, _NoOutput):     # ranks other than 0 write nothing
            out.write(done, elapsed, self.stats.state(copy=False), rows, preds,
                      results=None if results is None else self._output_results(results))
        self.pending_rows, self.pending_pred_rows = [], []

    def _output_results(self, res):
        """(scalars, per-vertex, histogram, bin width, scope, per-arc) of the results asked
        for: the writer's plain data."""
        from ..network.statistics import select_statistics
        from ..network.structure import extra_metrics, job_structure_results

        res = select_statistics(res, self.spec.metrics.statistics)
        scalars = {k: v for k, v in res.items()
                   if np.ndim(v) == 0 and isinstance(v, (int, float, bool, np.integer, np.floating,
                                                         np.bool_))}
        scalars.update(extra_metrics(self))
        vertex = {k: res[k] for k in ("eccentricity", "closeness", "harmonic", "betweenness",
                                      "betweenness_stderr") if k in res}
        more_scalars, more_vertex = job_structure_results(self)
        scalars.update(more_scalars)
        vertex.update(more_vertex)
        return (scalars, vertex, res.get("distance_histogram"),
                float(res.get("histogram_bin_width", 1.0)),
                str(res.get("scope", "all sources")), self.edge_results)   # /edge: per arc

    def read_checkpoint(self, f) -> dict:
        """What resuming needs from the open output ``f`` (runs on rank 0; picklable)."""
        stored_hash = f.attrs.get("graph_hash")
        if stored_hash is not None and str(stored_hash) != self.graph.content_hash():
            raise UserError(f"{f.filename}: cannot resume: the graph differs from the one "
                            f"in the file (content hash mismatch)")
        ck = f["checkpoint"]
        # each by its path: a renamed pair's index opens virtual datasets with its own parts
        return {"state": {k: f[f"checkpoint/{k}"][()] for k in ck}, "done": int(ck.attrs["done"]),
                "elapsed": float(ck.attrs.get("elapsed", 0.0)),
                "complete": bool(f.attrs.get("complete", False))}

    def start(self, fresh, ck):
        """Fresh start, or restore checkpoint ``ck``; returns (done, elapsed)."""
        from ..network.statistics import PathStatistics

        if fresh:
            return 0, 0.0
        self.stats = PathStatistics.from_state(ck["state"])
        self.elapsed_before = ck["elapsed"]
        done = self.total if ck["complete"] else ck["done"]
        self.last_ckpt = done
        return done, self.elapsed_before

    def complete_message(self, done) -> str:
        return f"the run is already complete ({done} of {self.total} sources); nothing to do"

    def resume_message(self, done) -> str:
        return f"resuming from the checkpoint after {done} sources"

    def remaining(self) -> np.ndarray:
        """Planned sources not processed yet, in plan order."""
        return self.stats.pending(self.sources)

    def next_stop(self, done):
        return min(self.total, (done // self.every + 1) * self.every)

    def advance(self, done, stop, stop_requested, progress):
        """Process source batches until ``stop`` sources are done or a stop is requested."""
        if self.comm.size > 1:
            done = self._advance_ranks(done, stop, stop_requested, progress)
        else:
            from ..network.interrupt import RoundsStopped, stop_check

            while done < stop:
                todo = self.remaining()
                k = min(stop - done, self.batch - done % self.batch, len(todo))
                try:
                    with stop_check(stop_requested):   # long kernels stop between rounds
                        self.work(todo[:k])
                except RoundsStopped as exc:
                    self.log(str(exc))
                    return done
                done += k
                progress(done)
                if stop_requested():
                    break
        if done >= self.total:
            self._edge_pass()
        return done

    def _edge_pass(self):
        """``edge_betweenness``: one pass over the run's sources on rank 0 after the path
        statistics (inside the work time; :mod:`.edge_betweenness`)."""
        from ..network.edge_betweenness import NAME, edge_betweenness

        if NAME not in self.spec.metrics.statistics or self.edge_results is not None \
                or self.comm.rank != 0:
            return
        with self.spans("work: edge betweenness"):
            self.edge_results = edge_betweenness(
                self.graph, self.sources, sampled=bool(self.sampled),
                normalized=bool(self.spec.metrics.betweenness_normalized),
                backend=self.run_plan.decision("edge_betweenness").chosen,   # the plan's row
                log=self.log)

    def _advance_ranks(self, done, stop, stop_requested, progress):
        """All ranks together: the sources up to ``stop``, claimed dynamically
        (:func:`simengine.network.distributed.run_sources_ranks`). With stored distances the round
        is finished even after a stop request, so rows stay in the order of ``/sources``."""
        from ..network.distributed import run_sources_ranks

        todo = self.remaining()[:stop - done]
        share = static_share(self.backend)
        if self.split_note is None:
            self.split_note = (f"sources split over {self.comm.size} ranks: "
                               + (f"the first {share:.0%} statically (round-robin blocks of one "
                                  f"claim), the rest claimed dynamically (guided)" if share else
                                  "claimed dynamically (guided)"))
            self.log(self.split_note)
        res = run_sources_ranks(self.graph, todo, self.stats, self.comm, algorithm=self.algorithm,
                                backend=self.backend, store_dtype=self.store_dtype,
                                batch=self.batch, align=self._claim_align(),
                                tail=self._claim_tail(),
                                stop_requested=None if self.store_dtype is not None
                                else stop_requested, predecessors=self.store_predecessors,
                                static_share=share, spans=self.spans)
        if res is not None:
            rows, pos = res[0], res[-1]
            if self.store_predecessors:
                self.pending_pred_rows.append(res[1])
            if len(pos) and not np.array_equal(pos, np.arange(len(pos))):
                raise RuntimeError("distance rows are not a prefix of the round")
            self.pending_rows.append(rows)
        done = int(self.stats.done[self.sources].sum())
        progress(done)
        return done

    def work(self, sources):
        from ..network.apsp import run_sources

        store = pred = None
        if self.store_dtype is not None:
            store = np.empty((len(sources), self.graph.n), dtype=self.store_dtype)
        if self.store_predecessors:
            pred = np.empty((len(sources), self.graph.n), dtype=np.int32)
        try:
            with self.spans("work"):
                run_sources(self.graph, sources, self.stats, algorithm=self.algorithm,
                            backend=self.backend, store=store, predecessors=pred)
            self.spans.count("work", len(sources))
        except ValueError as exc:
            raise UserError(f"{self.sc.path}: {exc}") from None
        if store is not None:
            self.pending_rows.append(store)
        if pred is not None:
            self.pending_pred_rows.append(pred)

    def at_stop(self, done, out, elapsed):
        with self.spans("output"):
            if done >= self.total and self.comm.rank == 0:
                self._write(out, done, elapsed, self.stats.results(elapsed=elapsed,
                                                                   graph=self.graph))
            else:
                self._write(out, done, elapsed)
        self.last_ckpt = done
        if done >= self.total:
            self._profile()

    def checkpoint(self, done, out, elapsed):
        if self.last_ckpt != done:
            with self.spans("output"):
                self._write(out, done, elapsed)
            self.last_ckpt = done

    def _profile(self):
        """With SIMENGINE_PROFILE set (on every rank): one line per rank of where the time went
        (collective)."""
        from ..network.spans import report, requested

        if requested():
            report(self.comm.allgather(self.spans.as_dict()), self.log)

    def failed(self, exc, output):
        return exc

    def finished(self, elapsed, output) -> str:
        res = self.stats.results(elapsed=elapsed)
        if not self.stats.paths:
            return f"done: betweenness ({res['scope']}), in {elapsed:.1f} s -> {output}"
        md = res.get("mean_distance", float("nan"))
        se = res.get("mean_distance_se")
        return (f"done: mean distance {md:.6g}" + (f" ± {se:.2g}" if se is not None else "") +
                f", diameter {_short(res.get('diameter'))}" +
                (" (lower bound)" if res.get("diameter_is_lower_bound") else "") +
                f" ({res['scope']}), in {elapsed:.1f} s -> {output}")


def _short(v):
    """12.9404 for a float diameter (not 12.940400000000002); ints and None as they are."""
    return f"{v:.6g}" if isinstance(v, (float, np.floating)) else v


def _warm_host() -> float:
    """Compile (or load from numba's cache) the host kernels a run calls inside its timed part —
    the accumulator's threaded sums and the output's chunk checksums — so that their first-call
    JIT (seconds on a fresh installation, measured in the CLI's engine time before) is start-up.
    Returns the seconds spent."""
    import time

    from ..io.h5image import fletcher32
    from ..network.accumulate import add_compensated, add_counts, parallel_copy

    t = time.perf_counter()
    x = np.zeros(2)
    add_compensated(x, x.copy(), x.copy(), x[:1], False)
    add_compensated(x, x.copy(), x.copy(), x.copy(), True)
    add_counts(np.zeros(2, np.int64), np.zeros(2, np.int64))
    parallel_copy(x)
    parallel_copy(np.zeros(2, np.int64))
    fletcher32(np.zeros(4, np.uint8), 0)
    return time.perf_counter() - t


def _warm_mpi(comm, n: int) -> None:
    """Collective: open and free one claim counter (the MPI library's first one-sided window
    sets up its machinery) and all-reduce one block of the merge's size, then meet — so that
    the ranks start their work timers together and one-time MPI set-up counts as start-up."""
    c = comm.counter(0)
    c.fetch_add(0)
    c.free()
    comm.allreduce_array(np.zeros((2, max(1, n))), "sum")
    comm.barrier()


def static_share(backend: str) -> float:
    """The part of a round's sources split statically over the ranks
    (:func:`simengine.network.distributed.static_sources`): GPU runs
    :data:`~simengine.network.distributed.STATIC_SHARE_GPU`, CPU runs none;
    ``SIMENGINE_STATIC_SHARE`` (0–1) overrides both."""
    import os

    from ..network.distributed import STATIC_SHARE_GPU

    v = os.environ.get("SIMENGINE_STATIC_SHARE", "").strip()
    if v:
        try:
            x = float(v)
        except ValueError:
            raise UserError(f"SIMENGINE_STATIC_SHARE={v!r}: expected a number from 0 to 1") \
                from None
        if not 0.0 <= x <= 1.0:
            raise UserError(f"SIMENGINE_STATIC_SHARE={v!r}: expected a number from 0 to 1")
        return x
    return STATIC_SHARE_GPU if backend == "cuda" else 0.0


class _NoOutput:
    """The writer of ranks other than 0 (one output, written by one rank)."""

    def write(self, *args, **kwargs):
        pass


def build_timed(sc, log=None, comm=None):
    """(:func:`build_graph` on this rank, the seconds it took: start-up); on ranks, a
    UserError unless every rank built the same graph."""
    import time

    t = time.perf_counter()
    graph = build_graph(sc, log)
    seconds = time.perf_counter() - t
    if comm is not None and comm.size > 1:
        # every rank generated or read the graph itself; make sure they agree
        hashes = comm.allgather(graph.content_hash())
        if len(set(hashes)) != 1:
            raise UserError(f"{sc.path}: the ranks built different graphs (is the graph file "
                            f"the same on every node?)")
    return graph, seconds


def build_graph(sc, log=None):
    """The scenario's graph, generated or read, its ``graph.weights`` setting applied (the
    network job's graph; ``simengine validate`` builds it where the plan needs the graph itself:
    the GPU's probe BFS of ``per_source.should_run``)."""
    from ..network import generators, readers, weights_setting

    log = log or (lambda msg: None)
    g = sc.spec.graph
    try:
        if g.generator is not None:
            spec = dict(g.generator)
            if g.directed:
                spec.setdefault("directed", True)
                if not generators.makes_directed(spec["type"]):
                    raise UserError(f"{sc.path}: graph.directed: generator {spec['type']!r} "
                                    f"makes undirected graphs; set graph.directed: false")
            graph = generators.generate(spec)
        else:
            graph = readers.read_for_scenario(sc.resolve(g.file.path), g, log=log).graph
    except UserError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        what = "graph.generator" if g.generator is not None else "graph.file"
        raise UserError(f"{sc.path}: {what}: {exc}") from None
    source = (f"generator {g.generator['type']!r}" if g.generator is not None
              else str(g.file.path))
    graph = weights_setting.apply_setting(graph, g.weights, source, log)
    weights_setting.check_weight_values(graph, f"{sc.path}: graph.weights ({source})")
    return graph
