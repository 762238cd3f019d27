"""Read a YAML scenario, remember where each key is, apply ``--set`` overrides.

Every problem becomes a :class:`~simengine.errors.UserError` whose message names the file, the line
(where there is one) and the key: ``scenarios/x.yaml:12: time.dt: expected a number > 0, got 'abc'``.
"""
from __future__ import annotations

import copy
from pathlib import Path

import yaml

from ..errors import UserError


class Located(dict):
    """A scenario mapping plus the line numbers of its keys (``lines[("time", "dt")] == 12``)."""

    def __init__(self, data, lines, path, set_by=None):
        super().__init__(data)
        self.lines = lines
        self.path = Path(path)
        #: key path -> the ``--set`` argument that gave it its value
        self.set_by = dict(set_by or {})

    def where(self, keypath) -> str:
        """``FILE:LINE`` for the deepest located prefix of ``keypath`` (or just ``FILE``); a key
        given by ``--set`` is named by that command-line argument instead."""
        keypath = tuple(keypath)
        for i in range(len(keypath), 0, -1):
            arg = self.set_by.get(keypath[:i])
            if arg is not None:
                shown = arg if len(arg) <= 60 else arg[:60] + "…"
                return f"--set {shown!r} (over {self.path})"
        while keypath:
            if keypath in self.lines:
                return f"{self.path}:{self.lines[keypath]}"
            keypath = keypath[:-1]
        return str(self.path)


def _collect_lines(node, prefix, lines):
    if isinstance(node, yaml.MappingNode):
        for knode, vnode in node.value:
            key = knode.value
            path = prefix + (key,)
            lines[path] = knode.start_mark.line + 1
            _collect_lines(vnode, path, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = prefix + (i,)
            lines[path] = item.start_mark.line + 1
            _collect_lines(item, path, lines)


def load_scenario_file(path) -> Located:
    """Parse a YAML file into a :class:`Located` mapping."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"{p}: no such scenario file")
    if p.is_dir():
        raise UserError(f"{p}: is a directory, expected a YAML scenario file")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{p}: cannot read ({exc})") from None
    return load_scenario_text(text, p)


def load_scenario_text(text, path="<scenario>") -> Located:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"{path}{line}: invalid YAML: {problem}") from None
    if data is None:
        raise UserError(f"{path}: the scenario file is empty")
    if not isinstance(data, dict):
        raise UserError(f"{path}:1: expected a mapping of keys (kind, name, ...) at the top level")
    lines = {}
    _collect_lines(node, (), lines)
    return Located(data, lines, path)


def parse_override(text):
    """``"time.dt=0.005"`` -> (("time", "dt"), 0.005). The value is parsed as YAML."""
    if "=" not in text:
        raise UserError(f"--set {text!r}: expected KEY.PATH=VALUE, e.g. --set time.steps=500")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise UserError(f"--set {text!r}: expected KEY.PATH=VALUE with a non-empty dotted key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return tuple(key.split(".")), value


def apply_overrides(scenario: Located, overrides) -> Located:
    """Return a copy of ``scenario`` with ``--set`` overrides applied (intermediate maps created)."""
    data = copy.deepcopy(dict(scenario))
    set_by = dict(getattr(scenario, "set_by", {}))
    for text in overrides or ():
        keys, value = parse_override(text)
        set_by = {k: v for k, v in set_by.items() if k[:len(keys)] != keys}
        set_by[keys] = text
        node = data
        for i, k in enumerate(keys[:-1]):
            nxt = node.get(k)
            if nxt is None:
                nxt = node[k] = {}
            if not isinstance(nxt, dict):
                raise UserError(f"--set {text!r}: {'.'.join(keys[:i + 1])} is not a mapping")
            node = nxt
        node[keys[-1]] = value
    out = Located(data, scenario.lines, scenario.path, set_by)
    out.overrides = list(overrides or ())
    return out
