"""A JSON Schema of scenario files, built from the pydantic models (``simengine schema``).

Editors use it for completion and checks through a first line
``# yaml-language-server: $schema=simengine-scenario.schema.json`` (docs/scenarios.md).  It
knows what the models know: keys (a misspelt key is flagged: every object is closed), types,
ranges, choices and, per ``graph.generator.type``, the generator's own keys.  Checks that need
more than one file or a computation (files exist, the stability limit, memory) stay with
``simengine validate``.  Integers may be written as exact scientific notation (1e4), as
``simengine`` accepts; YAML reads that as a string, so the schema admits such strings.
"""
from __future__ import annotations

from typing import Annotated, Union

#: what an integer written in scientific notation looks like (the models check exactness)
SCIENTIFIC = r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$"


def _integers_also_as_scientific(node):
    if isinstance(node, dict):
        if node.get("type") == "integer":
            as_int = dict(node)
            kept = {k: as_int.pop(k) for k in ("title", "description", "default") if k in as_int}
            return {**kept, "anyOf": [as_int, {"type": "string", "pattern": SCIENTIFIC}]}
        return {k: _integers_also_as_scientific(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_integers_also_as_scientific(v) for v in node]
    return node


def _renamed(schema: dict, prefix: str) -> dict:
    """``schema`` with its ``$defs`` named ``prefix + name`` (the generators' GridSpec is not the
    field's GridSpec)."""
    names = {k: prefix + k for k in schema.get("$defs", {})}

    def walk(node):
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            ref = out.get("$ref", "")
            if ref.startswith("#/$defs/") and ref[8:] in names:
                out["$ref"] = "#/$defs/" + names[ref[8:]]
            return out
        return [walk(v) for v in node] if isinstance(node, list) else node

    out = walk(schema)
    out["$defs"] = {names[k]: v for k, v in out.get("$defs", {}).items()}
    return out


def scenario_schema() -> dict:
    """The JSON Schema (draft 2020-12) of a field or network scenario, with its ``sweep`` block."""
    from pydantic import Field, TypeAdapter

    from .generators import MODELS
    from .schema import FieldScenario, NetworkScenario

    top = TypeAdapter(Annotated[Union[FieldScenario, NetworkScenario],
                                Field(discriminator="kind")]).json_schema()
    gens = _renamed(TypeAdapter(Union[tuple(MODELS)]).json_schema(), "Generator")
    defs = top.setdefault("$defs", {})
    defs.update(gens.pop("$defs", {}))
    graph = defs["GraphSpec"]["properties"]
    graph["generator"] = {"anyOf": [gens, {"type": "null"}], "default": None,
                          "description": "a graph generator: its type and parameters"}
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              "$id": "https://simengine.invalid/scenario.schema.json",
              "title": "simengine scenario",
              "description": "A field (Cahn–Hilliard) or network (shortest paths) scenario; "
                             "keys in docs/scenarios.md.", **top}
    return _integers_also_as_scientific(schema)
