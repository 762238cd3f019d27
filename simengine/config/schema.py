"""The scenario schema (pydantic models). Unknown keys are errors everywhere.

The key names are the user-facing contract; see docs/scenarios.md.
"""
from __future__ import annotations

import decimal
import math
import re
from typing import Annotated, Literal, Optional, Union

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, StrictInt,
                      field_validator, model_validator)

from ..network import algorithms as network_algorithms

INT64_MAX = 2**63 - 1
#: vertex ids and grid extents are stored in int32 arrays
INT32_MAX = 2**31 - 1
#: integer edge weights must be exact in float64
WEIGHT_MAX = 2**53


def _plain_number(value):
    """YAML's true/false are Python ints: a boolean where a number is meant is an error, and so
    is a non-finite float (checked before any range, so that the message says what is wrong)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {str(value).lower()} (a boolean)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value}")
    return value


def _whole_number(value):
    """Integers may be written as exact scientific notation (1e4, 2.5e3: YAML reads the first as
    a string, the second as a float); 1.5 or 1e-3 are not integers."""
    value = _plain_number(value)
    if isinstance(value, str) and _SCIENTIFIC.fullmatch(value.strip()):
        d = decimal.Decimal(value.strip())
        if d.adjusted() > 18:                       # no 10**999999999 built just to refuse it
            raise ValueError(f"expected an integer up to {INT64_MAX}, got {value.strip()}")
        if d != d.to_integral_value():
            raise ValueError(f"expected an integer, got {value.strip()} (not a whole number)")
        return int(d)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"expected an integer, got {value:g} (not a whole number)")
        return int(value)
    return value


_SCIENTIFIC = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+")


def _number(py_type, **bounds):
    check = _whole_number if py_type is int else _plain_number
    return Annotated[py_type, BeforeValidator(check), Field(**bounds)]


# every float is finite (no .nan, .inf, 1e999), every int bounded, no booleans for numbers
Float = _number(float, allow_inf_nan=False)
PosFloat = _number(float, gt=0, allow_inf_nan=False)
NonNegFloat = _number(float, ge=0, allow_inf_nan=False)
Probability = _number(float, ge=0, le=1, allow_inf_nan=False)
Int = _number(int, ge=-INT64_MAX, le=INT64_MAX)
NonNegInt = _number(int, ge=0, le=INT64_MAX)
PosInt = _number(int, ge=1, le=INT64_MAX)
Extent = _number(int, ge=1, le=INT32_MAX)
VertexId = _number(int, ge=0, le=INT32_MAX)
Weight = _number(int, ge=0, le=WEIGHT_MAX)
Bool = Annotated[bool, Field(strict=True)]
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"
#: the default output is outputs/<name>.h5 (+ ".tmp", "_plots"): well below NAME_MAX = 255
NAME_MAX = 200


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, validate_default=True)


class ResourcesSpec(Strict):
    #: refuse a run whose memory estimate exceeds what the machine has (simengine.resources)
    check: bool = True


# ----------------------------------------------------------------------------- field scenarios
class GridSpec(Strict):
    shape: Annotated[list[Extent], Field(min_length=1, max_length=3)]
    spacing: PosFloat = 1.0

    @field_validator("shape")
    @classmethod
    def _enough_cells(cls, v):
        if any(n < 3 for n in v):
            raise ValueError("every extent must be at least 3 cells")
        return v


class BoundarySpec(Strict):
    type: Literal["periodic", "mirror", "fixed"] = "periodic"
    value: Optional[Float] = None

    @model_validator(mode="after")
    def _value_only_for_fixed(self):
        if self.value is not None and self.type != "fixed":
            raise ValueError("'value' is only used with type: fixed")
        return self


class PotentialSpec(Strict):
    b: Optional[Float] = None
    u: Optional[Float] = None
    coefficients: Optional[Annotated[list[Float], Field(min_length=4, max_length=4)]] = None

    @model_validator(mode="after")
    def _one_form(self):
        classic = self.b is not None or self.u is not None
        if classic and self.coefficients is not None:
            raise ValueError("give either {b, u} or {coefficients: [a0, a1, a2, a3]}, not both")
        if not classic and self.coefficients is None:
            raise ValueError("expected {b, u} or {coefficients: [a0, a1, a2, a3]}")
        if classic and (self.b is None or self.u is None):
            raise ValueError("the classic potential needs both b and u")
        _, a1, a2, a3 = self.as_coefficients()
        if not (a3 > 0 or (a3 == 0 and a2 == 0 and a1 >= 0)):
            form = ("u must be > 0 (or u = 0 with b <= 0)" if classic else
                    "a3 must be > 0 (or a3 = a2 = 0 with a1 >= 0)")
            raise ValueError(f"{form}: otherwise the free energy f(φ) is unbounded below and φ "
                             f"runs away")
        return self

    def as_coefficients(self):
        if self.coefficients is not None:
            return tuple(float(c) for c in self.coefficients)
        return (0.0, -float(self.b), 0.0, float(self.u))


class PolynomialEnergySpec(Strict):
    """f′(φ) = a0 + a1 φ + … + an φⁿ (the coefficients of f′, as ``potential.coefficients``)."""
    type: Literal["polynomial"]
    coefficients: Annotated[list[Float], Field(min_length=1, max_length=16)]

    @model_validator(mode="after")
    def _bounded(self):
        c = list(self.coefficients)
        while len(c) > 1 and c[-1] == 0:
            c.pop()
        if not ((len(c) % 2 == 0 and c[-1] > 0) or c == [0.0]):
            raise ValueError("f′'s highest coefficient must be of odd degree and > 0: otherwise "
                             "f(φ) is unbounded below and φ runs away")
        return self


class DoubleWellSpec(Strict):
    """PFHub's f(c) = ρ (c − cα)² (cβ − c)²: the field is the concentration c."""
    type: Literal["double_well"]
    rho: PosFloat = 5.0
    c_alpha: Float = 0.3
    c_beta: Float = 0.7

    @model_validator(mode="after")
    def _order(self):
        if not self.c_alpha < self.c_beta:
            raise ValueError("c_alpha must be below c_beta")
        return self


class FloryHugginsSpec(Strict):
    """f(c) = c ln c / n_a + (1 − c) ln(1 − c) / n_b + χ c (1 − c), c in (0, 1)."""
    type: Literal["flory_huggins"]
    chi: Float
    n_a: PosFloat = 1.0
    n_b: PosFloat = 1.0


FreeEnergySpec = Annotated[Union[PolynomialEnergySpec, DoubleWellSpec, FloryHugginsSpec],
                           Field(discriminator="type")]


class DegenerateMobilitySpec(Strict):
    """M = m0 (1 − φ²) in φ-form, m0 c (1 − c) for a free energy in c (clipped at 0)."""
    type: Literal["degenerate"]
    m0: PosFloat = 1.0


class PolynomialMobilitySpec(Strict):
    """M = b0 + b1 φ + … (clipped at 0)."""
    type: Literal["polynomial"]
    coefficients: Annotated[list[Float], Field(min_length=1, max_length=16)]


MobilitySpec = Annotated[Union[DegenerateMobilitySpec, PolynomialMobilitySpec],
                         Field(discriminator="type")]


class NoiseSpec(Strict):
    """Conserved thermal noise ∇·ξ, ⟨ξξ⟩ = 2·amplitude·M·δ (amplitude = k_BT), Philox-keyed by
    (seed, step, cell)."""
    amplitude: NonNegFloat
    seed: NonNegInt = 0


class ModelSpec(Strict):
    #: a number (constant M) or {type: degenerate | polynomial, ...}
    mobility: Union[PosFloat, MobilitySpec] = 1.0
    kappa: PosFloat = 1.0
    #: the cubic f′ of the original keys: {b, u} or {coefficients: [a0, a1, a2, a3]}
    potential: Optional[PotentialSpec] = None
    #: {type: polynomial | double_well | flory_huggins, ...} (instead of ``potential``)
    free_energy: Optional[FreeEnergySpec] = None
    noise: Optional[NoiseSpec] = None

    @model_validator(mode="after")
    def _one_energy(self):
        if self.potential is not None and self.free_energy is not None:
            raise ValueError("give either 'potential' or 'free_energy', not both")
        if self.potential is None and self.free_energy is None:
            self.potential = PotentialSpec(b=1.0, u=1.0)
        return self

    @property
    def constant_mobility(self) -> bool:
        return not isinstance(self.mobility, BaseModel)

    @property
    def mobility_scale(self) -> float:
        """The constant M, or the mobility's scale (m0, or the largest |coefficient|)."""
        m = self.mobility
        if not isinstance(m, BaseModel):
            return float(m)
        if isinstance(m, DegenerateMobilitySpec):
            return float(m.m0)
        return max(abs(float(b)) for b in m.coefficients)

    def fprime_coefficients(self):
        """f′'s polynomial coefficients, or ``None`` for a non-polynomial free energy."""
        if self.free_energy is None:
            return self.potential.as_coefficients()
        fe = self.free_energy
        if isinstance(fe, PolynomialEnergySpec):
            return tuple(float(c) for c in fe.coefficients)
        if isinstance(fe, DoubleWellSpec):
            r, a, b = fe.rho, fe.c_alpha, fe.c_beta
            return (-2 * r * a * b * (a + b), 2 * r * (a * a + 4 * a * b + b * b),
                    -6 * r * (a + b), 4 * r)
        return None


class InitialSpec(Strict):
    type: Literal["noise", "file", "expression", "pfhub_bm1"] = "noise"
    mean: Float = 0.0
    amplitude: NonNegFloat = 0.05
    seed: NonNegInt = 1
    path: Optional[str] = None
    dataset: str = "phi"
    #: type file: the run's time starts at the stored field's time (a continued run)
    time_from_file: Bool = False
    #: type expression: φ(x, y, z) (simengine/field/expression.py: a safe formula, never eval)
    formula: Optional[str] = None

    @model_validator(mode="after")
    def _path_for_file(self):
        if self.type == "file" and not self.path:
            raise ValueError("type: file needs 'path' (an HDF5 file) and optionally 'dataset'")
        if self.time_from_file and self.type != "file":
            raise ValueError("'time_from_file' is only used with type: file")
        if self.type == "expression" and not self.formula:
            raise ValueError("type: expression needs 'formula' (φ in x, y, z, e.g. "
                             "0.5 + 0.01*cos(0.105*x))")
        if self.formula is not None and self.type != "expression":
            raise ValueError("'formula' is only used with type: expression")
        if self.type in ("expression", "pfhub_bm1"):
            extra = sorted(self.model_fields_set & {"mean", "amplitude", "seed", "path",
                                                    "dataset"})
            if extra:
                raise ValueError(f"'{extra[0]}' is not used with type: {self.type}")
        if self.type == "noise" and self.path is not None:
            raise ValueError("'path' is only used with type: file")
        return self


class TimeSpec(Strict):
    #: the step (fixed steps) or the first step (adaptive)
    dt: PosFloat
    #: fixed steps: how many (or ``end``, a multiple of dt)
    steps: Optional[NonNegInt] = None
    #: the simulated time to reach
    end: Optional[PosFloat] = None
    #: adaptive steps (simengine/field/adaptive.py): needs ``end``
    adaptive: Bool = False
    #: adaptive: the error allowed per step (RMS of the estimate, in units of φ)
    tolerance: Optional[PosFloat] = None
    #: adaptive: the largest step
    dt_max: Optional[PosFloat] = None
    allow_unstable: Bool = False

    @model_validator(mode="after")
    def _steps_or_end(self):
        if self.adaptive:
            if self.end is None or self.steps is not None:
                raise ValueError("adaptive: true needs 'end' (the simulated time to reach) and no "
                                 "'steps' (the steps are chosen as the run goes)")
            return self
        for key in ("tolerance", "dt_max"):
            if getattr(self, key) is not None:
                raise ValueError(f"'{key}' is only used with adaptive: true")
        if (self.steps is None) == (self.end is None):
            raise ValueError("give 'steps' (how many steps of dt) or 'end' (the simulated time "
                             "to reach), exactly one")
        if self.end is not None:
            n = round(self.end / self.dt)
            if n < 1 or abs(n * self.dt - self.end) > 1e-9 * self.end:
                raise ValueError(f"end = {self.end:g} is not a whole number of steps of dt = "
                                 f"{self.dt:g} (or set adaptive: true)")
            self.steps = int(n)
        return self


class FieldSolverSpec(Strict):
    integrator: Literal["rk2", "euler", "spectral"] = "rk2"
    #: spectral: the Laplacian's symbol — fd (the stencil's own, default) or exact (−k²)
    symbol: Optional[Literal["fd", "exact"]] = None
    kernel: Literal["global", "shared", "texture", "combined"] = "texture"
    backend: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["float32", "float64"] = "float64"
    tile: Optional[list[Extent]] = None
    block: Optional[Union[Literal["auto"], list[Extent]]] = None
    layout: Optional[Literal["seed", "modern"]] = None
    #: CUDA: the fused RK2 step (both stages in one launch); auto = where it is faster
    fused: Union[Literal["auto"], Bool] = "auto"

    @model_validator(mode="after")
    def _symbol_for_spectral(self):
        if self.symbol is not None and self.integrator != "spectral":
            raise ValueError("'symbol' is only used with integrator: spectral")
        return self


class FieldOutputSpec(Strict):
    snapshot_every: NonNegInt = 0
    checkpoint_every: NonNegInt = 0
    observables_every: NonNegInt = 0
    #: cadences in simulated time (beside the step cadences above; the only ones of an
    #: adaptive run): the stepper lands exactly on their multiples
    snapshot_dt: Optional[PosFloat] = None
    checkpoint_dt: Optional[PosFloat] = None
    observables_dt: Optional[PosFloat] = None
    compression: Optional[Literal["none", "gzip", "lzf"]] = "none"
    #: store the radial S(k) at every observation (observables/structure_factor)
    structure_factor: Bool = False


class FieldScenario(Strict):
    kind: Literal["field"]
    name: Annotated[str, Field(max_length=NAME_MAX, pattern=NAME_PATTERN)]
    description: Optional[str] = None
    grid: GridSpec
    boundary: BoundarySpec = BoundarySpec()
    model: ModelSpec = ModelSpec()
    initial: InitialSpec = InitialSpec()
    time: TimeSpec
    solver: FieldSolverSpec = FieldSolverSpec()
    output: FieldOutputSpec = FieldOutputSpec()
    resources: ResourcesSpec = ResourcesSpec()
    sweep: Optional[dict] = None   # expanded and validated by simengine.sweep

    @model_validator(mode="after")
    def _cadences(self):
        o, t = self.output, self.time
        for name in ("snapshot", "checkpoint", "observables"):
            every, dt = getattr(o, f"{name}_every"), getattr(o, f"{name}_dt")
            if t.adaptive and every:
                raise ValueError(f"output.{name}_every counts steps, which an adaptive run does "
                                 f"not fix; use output.{name}_dt (simulated time)")
            if dt is not None and not t.adaptive:
                n = round(dt / t.dt)
                if n < 1 or abs(n * t.dt - dt) > 1e-9 * dt:
                    raise ValueError(f"output.{name}_dt = {dt:g} is not a whole number of "
                                     f"steps of time.dt = {t.dt:g}")
        return self


# ----------------------------------------------------------------------------- network scenarios
class GraphFileSpec(Strict):
    path: str
    #: None: from the suffix (.gr dimacs, .mtx mtx, .graph/.metis metis, .konect konect,
    #: .graphml, .gml, .net/.paj pajek (these three through networkx), else
    #: edgelist, or konect when line 1 is KONECT's '% sym|asym|bip ...')
    format: Optional[Literal["edgelist", "dimacs", "mtx", "metis", "konect", "graphml", "gml",
                             "pajek"]] = None


class WeightSpec(Strict):
    type: Literal["uniform_int"]
    low: Weight = 1
    high: Weight = 10
    seed: NonNegInt = 1

    @model_validator(mode="after")
    def _range(self):
        if self.low > self.high:
            raise ValueError("low must not exceed high")
        return self


class GraphSpec(Strict):
    generator: Optional[dict] = None
    file: Optional[GraphFileSpec] = None
    #: None: what the file describes (DIMACS, general Matrix Market: directed) or the generator makes
    directed: Optional[Bool] = None
    #: None (absent) = the graph's own weights (a weighted generator's, a file's weight column)
    weights: Union[Literal["none", "file"], WeightSpec, None] = None

    @model_validator(mode="after")
    def _one_source(self):
        if (self.generator is None) == (self.file is None):
            raise ValueError("give exactly one of 'generator' or 'file'")
        if self.generator is not None and "type" not in self.generator:
            raise ValueError("generator needs a 'type' (e.g. barabasi_albert)")
        return self


class SampleSpec(Strict):
    sample: PosInt
    seed: NonNegInt = 1


ALGORITHM_NAMES = network_algorithms.NAMES

STATISTICS = ("mean_distance", "diameter", "radius", "eccentricity", "distance_histogram",
              "closeness", "harmonic", "efficiency", "components", "mst_weight",
              "clustering", "assortativity", "kcore", "betweenness", "edge_betweenness")


class MetricsSpec(Strict):
    #: a list names vertices by the input's ids (network/sources.py)
    sources: Union[Literal["all"], SampleSpec,
                   Annotated[list[Union[StrictInt, Annotated[str, Field(min_length=1)]]],
                             Field(min_length=1)]] = "all"
    algorithm: Literal[ALGORITHM_NAMES] = "auto"
    statistics: list[Literal[STATISTICS]] = list(STATISTICS[:8])
    store_distances: Bool = False
    #: /predecessors beside /distances (network/predecessors.py)
    store_predecessors: Bool = False
    histogram_bin_width: Optional[PosFloat] = None
    #: betweenness (when listed in statistics) divided by (n-1)(n-2) (network/betweenness.py)
    betweenness_normalized: Bool = False

    @model_validator(mode="after")
    def _predecessors_imply_distances(self):
        # the paths need the rows: /predecessors are rows beside /distances (implied_note says so)
        if self.store_predecessors and not self.store_distances:
            self.store_distances = True
            self._distances_implied = True
        return self

    _distances_implied: bool = PrivateAttr(default=False)

    def implied_note(self) -> str | None:
        """The one line ``validate`` and ``run`` say when ``store_predecessors`` implied
        ``store_distances`` (None otherwise)."""
        if not self._distances_implied:
            return None
        return ("metrics.store_predecessors: true implies metrics.store_distances: true (the "
                "predecessor rows sit beside the distance rows); both are stored")

    @field_validator("sources")
    @classmethod
    def _listed_once(cls, v):
        if isinstance(v, list):
            seen = set()
            for x in v:
                if x in seen:
                    raise ValueError(f"vertex {x!r} is listed twice")
                seen.add(x)
        return v


class NetworkSolverSpec(Strict):
    backend: Literal["auto", "cpu", "cuda"] = "auto"
    batch: Optional[PosInt] = None


class NetworkOutputSpec(Strict):
    checkpoint_every: PosInt = 1024
    compression: Optional[Literal["none", "gzip", "lzf"]] = "none"


class NetworkScenario(Strict):
    kind: Literal["network"]
    name: Annotated[str, Field(max_length=NAME_MAX, pattern=NAME_PATTERN)]
    description: Optional[str] = None
    graph: GraphSpec
    metrics: MetricsSpec = MetricsSpec()
    solver: NetworkSolverSpec = NetworkSolverSpec()
    output: NetworkOutputSpec = NetworkOutputSpec()
    resources: ResourcesSpec = ResourcesSpec()
    sweep: Optional[dict] = None   # expanded and validated by simengine.sweep


KINDS = {"field": FieldScenario, "network": NetworkScenario}
