"""Scenario loading and validation: YAML -> checked pydantic model, or a one-line UserError.

>>> from simengine.config import load_scenario
>>> sc = load_scenario("scenarios/spinodal-2d.yaml", overrides=["time.steps=10"])  # doctest: +SKIP
>>> sc.spec.time.steps                                                            # doctest: +SKIP
10
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import UserError
from .brief import brief, clip
from .loader import Located, apply_overrides, load_scenario_file, load_scenario_text
from .schema import KINDS, FieldScenario, NetworkScenario

__all__ = ["Scenario", "load_scenario", "scenario_from_text", "FieldScenario", "NetworkScenario"]

# keys whose type is a union: one readable description instead of pydantic's per-member errors
_UNION_HELP = {
    ("metrics", "sources"): "expected 'all', {sample: K, seed: S} or a list of vertex ids",
    ("graph", "weights"): "expected 'none', 'file' or {type: uniform_int, low: 1, high: 10, seed: 1}",
    ("solver", "block"): "expected 'auto' or a list of block extents like [16, 16]",
    ("solver", "fused"): "expected auto, true or false",
}


@dataclass
class Scenario:
    """A validated scenario: ``spec`` (pydantic model), the raw mapping as run, and where it came from."""

    spec: BaseModel
    data: dict
    path: Path
    overrides: list = field(default_factory=list)
    #: the validated ``graph.generator`` (a :mod:`simengine.config.generators` model) or None
    generator: Optional[BaseModel] = None

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def name(self) -> str:
        return self.spec.name

    def as_yaml(self) -> str:
        """The scenario as run (overrides applied), stored in every output file."""
        return yaml.safe_dump(self.data, sort_keys=False)

    def resolve(self, relpath) -> Path:
        """A path from the scenario: relative to the scenario file's folder, else to the cwd."""
        p = Path(relpath)
        try:
            p = p.expanduser()
        except RuntimeError:  # ~user without such a user: keep the name as written
            pass
        if p.is_absolute():
            return p
        beside = self.path.parent / p
        try:
            return beside if beside.exists() or not p.exists() else p
        except (OSError, ValueError):  # a name too long, a NUL byte: the file checks report it
            return beside


def _model_at(model_cls, keys):
    """The pydantic model class reached by following ``keys`` from ``model_cls`` (or None)."""
    cls = model_cls
    for k in keys:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or k not in cls.model_fields:
            return None
        ann = cls.model_fields[k].annotation
        cls = next((a for a in getattr(ann, "__args__", ()) if isinstance(a, type)
                    and issubclass(a, BaseModel)), ann)
    return cls if isinstance(cls, type) and issubclass(cls, BaseModel) else None


def _is_tag(part):
    """A union member tag in a pydantic location, such as "literal['all']" or "list[int]"."""
    return isinstance(part, str) and (not part.isidentifier()
                                      or part.startswith(("literal", "function")))


def _clean_loc(loc, data):
    """The part of a pydantic error location that names keys of ``data`` (union tags dropped)."""
    out = []
    node = data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and not isinstance(part, int) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif i == len(loc) - 1 and not _is_tag(part):
            out.append(part)  # a missing key, or a key that is not a string
            break
        else:
            break
        out.append(part)
    return tuple(out)


def _describe(err, model_cls, keys):
    kind = err["type"]
    ctx = err.get("ctx") or {}
    got = err.get("input")
    if kind == "missing":
        return f"missing key '{clip(keys[-1])}'" if keys else "missing key"
    if kind == "extra_forbidden":
        parent = _model_at(model_cls, [k for k in keys[:-1] if isinstance(k, str)])
        allowed = ", ".join(parent.model_fields) if parent is not None else ""
        return f"unknown key {brief(keys[-1], 40)}" + (f" (expected one of: {allowed})" if allowed else "")
    if kind == "invalid_key":
        return f"keys must be strings, got {brief(got)}"
    if kind == "literal_error":
        return f"expected {clip(ctx.get('expected'), 200)}, got {brief(got)}"
    if kind == "value_error":
        return clip(ctx.get("error", err["msg"]), 300)
    msg = err["msg"]
    msg = msg[0].lower() + msg[1:]
    if msg.startswith("input should be"):
        msg = "expected" + msg[len("input should be"):]
    if isinstance(got, (dict, list)) and len(got) > 4:
        return clip(msg, 200)
    return f"{clip(msg, 200)}, got {brief(got)}"


def _raise_validation(exc: ValidationError, located: Located, model_cls, prefix=()):
    """One line for the first error of ``exc``; ``prefix`` is where ``model_cls`` sits."""
    errors = exc.errors()
    err = errors[0]
    data = located
    for k in prefix:
        data = data[k]
    own = _clean_loc(err["loc"], data)
    keys = tuple(prefix) + own
    key = clip(".".join(str(k) for k in keys), 80)
    where = located.where(keys)
    if keys in _UNION_HELP and any(_clean_loc(e["loc"], data) == own for e in errors[1:]) or (
            keys in _UNION_HELP and len(own) < len(err["loc"])):
        raw = located
        for k in keys:
            raw = raw.get(k) if isinstance(raw, dict) else None
        raise UserError(f"{where}: {key}: {_UNION_HELP[keys]}, got {brief(raw)}") from None
    desc = _describe(err, model_cls, own)
    raise UserError(f"{where}: {key}: {desc}" if key else f"{where}: {desc}") from None


def _validate_generator(located: Located):
    """Types and ranges of ``graph.generator`` (one model per generator type)."""
    from .generators import BY_TYPE, generator_model

    gen = located["graph"]["generator"]
    model_cls = generator_model(gen.get("type"))
    if model_cls is None:
        where = located.where(("graph", "generator", "type"))
        raise UserError(f"{where}: graph.generator.type: expected one of "
                        f"{', '.join(sorted(BY_TYPE))}, got {brief(gen.get('type'))}")
    try:
        return model_cls.model_validate(gen)
    except ValidationError as exc:
        _raise_validation(exc, located, model_cls, prefix=("graph", "generator"))


def validate_located(located: Located) -> Scenario:
    kind = located.get("kind")
    if kind is None:
        raise UserError(f"{located.path}: missing key 'kind' (expected 'field' or 'network')")
    if not isinstance(kind, str) or kind not in KINDS:
        raise UserError(f"{located.where(('kind',))}: kind: expected 'field' or 'network', "
                        f"got {brief(kind)}")
    model_cls = KINDS[kind]
    try:
        spec = model_cls.model_validate(dict(located))
    except ValidationError as exc:
        _raise_validation(exc, located, model_cls)
    sc = Scenario(spec, dict(located), located.path, list(getattr(located, "overrides", [])))
    if kind == "network" and spec.graph.generator is not None:
        sc.generator = _validate_generator(located)
    from .checks import check_scenario

    check_scenario(sc, located)
    return sc


def load_scenario(path, overrides=None) -> Scenario:
    """Load, override and validate a scenario file. Raises UserError with a one-line message."""
    located = apply_overrides(load_scenario_file(path), overrides)
    return validate_located(located)


def scenario_from_text(text, path="<scenario>", overrides=None) -> Scenario:
    """Validate a scenario given as YAML text (used for the copy stored in output files)."""
    located = apply_overrides(load_scenario_text(text, path), overrides)
    return validate_located(located)
