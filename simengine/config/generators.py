"""Schema of ``graph.generator``: one model per generator type, with types and ranges.

``GraphSpec.generator`` stays a plain mapping (the engine passes it to
:func:`simengine.network.generators.generate`); :func:`generator_model` picks the model for its
``type`` so that validation can name the parameter (``graph.generator.n``) and the range it broke.
Each model also estimates how many arcs the graph will hold (:meth:`GeneratorSpec.arcs`), for the
memory check in :mod:`simengine.config.checks`.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import model_validator

from .schema import (INT32_MAX, Bool, NonNegFloat, NonNegInt, Probability, Strict, Weight,
                     WeightSpec, _number)

Vertices = _number(int, ge=1, le=INT32_MAX)
Count = _number(int, ge=0, le=INT32_MAX)
Seed = Optional[NonNegInt]


def _pairs(n, directed=False) -> int:
    return n * (n - 1) if directed else n * (n - 1) // 2


class GeneratorSpec(Strict):
    type: str
    weights: Optional[WeightSpec] = None

    @model_validator(mode="after")
    def _relations(self):
        self._check()
        return self

    def _check(self):
        """Relations between parameters (k < n, m <= pairs, ...); raises ValueError."""

    def arcs(self) -> int:
        """Arcs the CSR graph will hold (an undirected edge is two arcs), roughly."""
        raise NotImplementedError


class WattsAlphaSpec(GeneratorSpec):
    type: Literal["watts_alpha", "watts_alpha_ring", "watts_alpha_free", "watts_alpha_nosubstrate"]
    n: _number(int, ge=2, le=INT32_MAX)
    k: _number(int, ge=1, le=INT32_MAX) = 10
    alpha: Optional[NonNegFloat] = None
    p: Optional[Probability] = None
    ring: Bool = True
    seed: Seed = None
    connect: Literal["repair", "reject", "none"] = "repair"

    def _check(self):
        if self.k >= self.n:
            raise ValueError(f"k = {self.k} must be smaller than n = {self.n}")
        ring = self.ring if self.type == "watts_alpha" else self.type == "watts_alpha_ring"
        if ring and self.k < 2:
            raise ValueError("k must be at least 2 with the ring substrate")

    def arcs(self):
        return self.n * self.k + 2 * self.n  # "repair" adds up to one edge per component


class BarabasiAlbertSpec(GeneratorSpec):
    type: Literal["barabasi_albert"]
    n: _number(int, ge=2, le=INT32_MAX)
    m: _number(int, ge=1, le=INT32_MAX)
    seed: Seed = None

    def _check(self):
        if self.n < self.m + 1:
            raise ValueError(f"n = {self.n} must be at least m + 1 = {self.m + 1}")

    def arcs(self):
        return 2 * self.m * self.n


class GnpSpec(GeneratorSpec):
    type: Literal["gnp", "erdos_renyi"]
    n: Vertices
    p: Probability
    seed: Seed = None
    directed: Bool = False

    def arcs(self):
        return int(self.p * _pairs(self.n, self.directed)) * (1 if self.directed else 2)


class GnmSpec(GeneratorSpec):
    type: Literal["gnm"]
    n: Vertices
    m: _number(int, ge=0, le=2**62)
    seed: Seed = None
    directed: Bool = False

    def _check(self):
        if self.m > _pairs(self.n, self.directed):
            raise ValueError(f"m = {self.m} edges do not fit among the "
                             f"{_pairs(self.n, self.directed)} vertex pairs of n = {self.n}")

    def arcs(self):
        return self.m * (1 if self.directed else 2)


def _even_degree(k, n):
    if k % 2 or not 2 <= k < n:
        raise ValueError(f"k = {k} must be even with 2 <= k < n = {n}")


class RingLatticeSpec(GeneratorSpec):
    type: Literal["ring_lattice"]
    n: Vertices
    k: Count

    def _check(self):
        _even_degree(self.k, self.n)

    def arcs(self):
        return self.n * self.k


class WattsStrogatzSpec(RingLatticeSpec):
    type: Literal["watts_strogatz"]
    p: Probability
    seed: Seed = None


class _ShapeSpec(GeneratorSpec):
    shape: list[Vertices]

    def _vertices(self):
        n = 1
        for extent in self.shape:
            n *= extent
        return n

    def _check(self):
        if not 1 <= len(self.shape) <= 8:
            raise ValueError(f"shape must have 1 to 8 extents, got {len(self.shape)}")
        if self._vertices() > INT32_MAX:
            raise ValueError(f"shape {self.shape} has {self._vertices()} vertices, more than "
                             f"{INT32_MAX}")

    def arcs(self):
        return 2 * len(self.shape) * self._vertices()


class GridSpec(_ShapeSpec):
    type: Literal["grid"]
    periodic: Bool = False


class TorusSpec(_ShapeSpec):
    type: Literal["torus"]


class RmatSpec(GeneratorSpec):
    type: Literal["rmat"]
    scale: _number(int, ge=1, le=30)
    edge_factor: _number(int, ge=1, le=1 << 16) = 16
    a: Probability = 0.57
    b: Probability = 0.19
    c: Probability = 0.19
    seed: Seed = None
    directed: Bool = False
    permute: Bool = True

    def _check(self):
        if self.a + self.b + self.c > 1:
            raise ValueError(f"a + b + c = {self.a + self.b + self.c:g} must not exceed 1")

    def arcs(self):
        return (1 if self.directed else 2) * self.edge_factor << self.scale


class RandomWeightedSpec(GeneratorSpec):
    type: Literal["random_weighted"]
    n: Vertices
    avg_degree: NonNegFloat = 6.0
    low: Weight = 1
    high: Weight = 10
    seed: Seed = None
    directed: Bool = False

    def _edges(self):
        return int(round(self.n * self.avg_degree / (1 if self.directed else 2)))

    def _check(self):
        if self.low > self.high:
            raise ValueError(f"low = {self.low} must not exceed high = {self.high}")
        if self._edges() > _pairs(self.n, self.directed):
            raise ValueError(f"avg_degree = {self.avg_degree:g} needs {self._edges()} edges, more "
                             f"than the {_pairs(self.n, self.directed)} vertex pairs of n = {self.n}")

    def arcs(self):
        return self._edges() * (1 if self.directed else 2)


MODELS = (WattsAlphaSpec, BarabasiAlbertSpec, GnpSpec, GnmSpec, RingLatticeSpec,
          WattsStrogatzSpec, GridSpec, TorusSpec, RmatSpec, RandomWeightedSpec)
#: generator type (as written in a scenario) -> model
BY_TYPE = {t: m for m in MODELS for t in m.model_fields["type"].annotation.__args__}


def generator_model(kind):
    """The model for generator type ``kind``, or None for an unknown type."""
    return BY_TYPE.get(kind) if isinstance(kind, str) else None
