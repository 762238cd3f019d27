"""The scenario schema (pydantic models). Unknown keys are errors everywhere.

The key names are the user-facing contract; see docs/scenarios.md.
"""
from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PosFloat = Annotated[float, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(ge=1)]
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, validate_default=True)


class ResourcesSpec(Strict):
    #: refuse a run whose memory estimate exceeds what the machine has (simengine.resources)
    check: bool = True


# ----------------------------------------------------------------------------- field scenarios
class GridSpec(Strict):
    shape: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1, max_length=3)]
    spacing: PosFloat = 1.0

    @field_validator("shape")
    @classmethod
    def _enough_cells(cls, v):
        if any(n < 3 for n in v):
            raise ValueError("every extent must be at least 3 cells")
        return v


class BoundarySpec(Strict):
    type: Literal["periodic", "mirror", "fixed"] = "periodic"
    value: Optional[float] = None

    @model_validator(mode="after")
    def _value_only_for_fixed(self):
        if self.value is not None and self.type != "fixed":
            raise ValueError("'value' is only used with type: fixed")
        return self


class PotentialSpec(Strict):
    b: Optional[float] = None
    u: Optional[float] = None
    coefficients: Optional[Annotated[list[float], Field(min_length=4, max_length=4)]] = None

    @model_validator(mode="after")
    def _one_form(self):
        classic = self.b is not None or self.u is not None
        if classic and self.coefficients is not None:
            raise ValueError("give either {b, u} or {coefficients: [a0, a1, a2, a3]}, not both")
        if not classic and self.coefficients is None:
            raise ValueError("expected {b, u} or {coefficients: [a0, a1, a2, a3]}")
        if classic and (self.b is None or self.u is None):
            raise ValueError("the classic potential needs both b and u")
        return self

    def as_coefficients(self):
        if self.coefficients is not None:
            return tuple(float(c) for c in self.coefficients)
        return (0.0, -float(self.b), 0.0, float(self.u))


class ModelSpec(Strict):
    mobility: PosFloat = 1.0
    kappa: PosFloat = 1.0
    potential: PotentialSpec = PotentialSpec(b=1.0, u=1.0)


class InitialSpec(Strict):
    type: Literal["noise", "file"] = "noise"
    mean: float = 0.0
    amplitude: Annotated[float, Field(ge=0)] = 0.05
    seed: NonNegInt = 1
    path: Optional[str] = None
    dataset: str = "phi"

    @model_validator(mode="after")
    def _path_for_file(self):
        if self.type == "file" and not self.path:
            raise ValueError("type: file needs 'path' (an HDF5 file) and optionally 'dataset'")
        if self.type == "noise" and self.path is not None:
            raise ValueError("'path' is only used with type: file")
        return self


class TimeSpec(Strict):
    dt: PosFloat
    steps: NonNegInt
    allow_unstable: bool = False


class FieldSolverSpec(Strict):
    integrator: Literal["rk2", "euler"] = "rk2"
    kernel: Literal["global", "shared", "texture", "combined"] = "texture"
    backend: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["float32", "float64"] = "float64"
    tile: Optional[list[PosInt]] = None
    block: Optional[Union[Literal["auto"], list[PosInt]]] = None
    layout: Optional[Literal["seed", "modern"]] = None


class FieldOutputSpec(Strict):
    snapshot_every: NonNegInt = 0
    checkpoint_every: NonNegInt = 0
    observables_every: NonNegInt = 0
    compression: Optional[Literal["gzip", "lzf", "none"]] = "gzip"


class FieldScenario(Strict):
    kind: Literal["field"]
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    description: Optional[str] = None
    grid: GridSpec
    boundary: BoundarySpec = BoundarySpec()
    model: ModelSpec = ModelSpec()
    initial: InitialSpec = InitialSpec()
    time: TimeSpec
    solver: FieldSolverSpec = FieldSolverSpec()
    output: FieldOutputSpec = FieldOutputSpec()
    resources: ResourcesSpec = ResourcesSpec()


# ----------------------------------------------------------------------------- network scenarios
class GraphFileSpec(Strict):
    path: str
    format: Literal["edgelist", "dimacs", "mtx", "metis"] = "edgelist"


class WeightSpec(Strict):
    type: Literal["uniform_int"]
    low: int = 1
    high: int = 10
    seed: NonNegInt = 1

    @model_validator(mode="after")
    def _range(self):
        if self.low > self.high:
            raise ValueError("low must not exceed high")
        return self


class GraphSpec(Strict):
    generator: Optional[dict] = None
    file: Optional[GraphFileSpec] = None
    directed: bool = False
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


STATISTICS = ("mean_distance", "diameter", "radius", "eccentricity", "distance_histogram",
              "closeness", "harmonic", "efficiency", "components", "mst_weight")


class MetricsSpec(Strict):
    sources: Union[Literal["all"], SampleSpec, Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]] = "all"
    algorithm: Literal["auto", "bfs", "msbfs", "dobfs", "dijkstra", "dial", "floyd_warshall",
                       "frontier_sssp", "near_far"] = "auto"
    statistics: list[Literal[STATISTICS]] = list(STATISTICS[:8])
    store_distances: bool = False
    histogram_bin_width: Optional[PosFloat] = None


class NetworkSolverSpec(Strict):
    backend: Literal["auto", "cpu", "cuda"] = "auto"
    batch: Optional[PosInt] = None


class NetworkOutputSpec(Strict):
    checkpoint_every: PosInt = 1024
    compression: Optional[Literal["gzip", "lzf", "none"]] = "gzip"


class NetworkScenario(Strict):
    kind: Literal["network"]
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    description: Optional[str] = None
    graph: GraphSpec
    metrics: MetricsSpec = MetricsSpec()
    solver: NetworkSolverSpec = NetworkSolverSpec()
    output: NetworkOutputSpec = NetworkOutputSpec()
    resources: ResourcesSpec = ResourcesSpec()


KINDS = {"field": FieldScenario, "network": NetworkScenario}
