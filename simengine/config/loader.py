"""Read a YAML scenario, remember where each key is, apply ``--set`` overrides.

Every problem becomes a :class:`~simengine.errors.UserError` whose message names the file, the line
(where there is one) and the key: ``scenarios/x.yaml:12: time.dt: expected a number > 0, got 'abc'``.

Hostile input is refused before it can cost time or memory (see :class:`ScenarioLoader`): only
regular files are opened (a FIFO, a device or a directory never blocks or streams), at most
:data:`MAX_BYTES` are read, nesting is limited to :data:`MAX_DEPTH` levels, the document with every
alias expanded to :data:`MAX_NODES` nodes (a "billion laughs" file fails at once), recursive aliases
and duplicate keys are errors, and integers longer than :data:`MAX_INT_DIGITS` digits are refused.
"""
from __future__ import annotations

import copy
import os
import stat
from pathlib import Path

import yaml
import yaml.composer
import yaml.constructor
import yaml.parser
import yaml.reader
import yaml.resolver
import yaml.scanner
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from ..errors import UserError
from .brief import brief, clip

#: a scenario file larger than this is refused (the shipped ones are below 2 KB)
MAX_BYTES = 1 << 20
#: deepest nesting of mappings and lists, counted through aliases
MAX_DEPTH = 32
#: most nodes in the document once every alias is expanded
MAX_NODES = 100_000
#: longest integer literal (ranges are the schema's job; this only bounds the parsing)
MAX_INT_DIGITS = 1000

MERGE_TAG = "tag:yaml.org,2002:merge"


class Refused(yaml.MarkedYAMLError):
    """A YAML document that is well-formed but exceeds a limit or repeats a key."""


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
            try:
                if keypath in self.lines:
                    return f"{self.path}:{self.lines[keypath]}"
            except TypeError:  # an unhashable part
                pass
            keypath = keypath[:-1]
        return str(self.path)


try:  # libyaml scans and parses about 6x faster; composing and constructing stay in Python
    from yaml._yaml import CParser as _EventParser
except ImportError:  # PyYAML without libyaml
    _EventParser = None


class _Events(*((_EventParser,) if _EventParser is not None
                else (yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser))):
    """The YAML event source: libyaml's parser when available, else PyYAML's own."""

    def __init__(self, stream):
        if _EventParser is not None:
            _EventParser.__init__(self, stream)
        else:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)


class ScenarioLoader(yaml.composer.Composer, _Events, yaml.constructor.SafeConstructor,
                     yaml.resolver.Resolver):
    """PyYAML's safe loading with limits: nesting depth, node count, duplicate keys, integer
    length, scalars PyYAML cannot convert.

    The composer (PyYAML's, in Python) comes first in the method order so that its
    ``get_single_node`` and the depth-limited :meth:`compose_node` are used with either event
    source. Alias expansion and recursion are checked on the composed node graph by
    :func:`check_graph` before anything is constructed.
    """

    def __init__(self, stream):
        _Events.__init__(self, stream)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent, index):
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH:
                raise Refused(None, None, f"nested more than {MAX_DEPTH} levels deep",
                              self.peek_event().start_mark)
            if self._nodes > MAX_NODES:
                raise Refused(None, None, f"more than {MAX_NODES} nodes",
                              self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep=deep)
        except (yaml.YAMLError, RecursionError, MemoryError):
            raise
        except Exception:  # PyYAML's own converters: !!float abc, 2001-13-45, !!bool maybe, ...
            tag = str(node.tag).rpartition(":")[2] if str(node.tag).startswith("tag:yaml.org") \
                else str(node.tag)
            value = node.value if isinstance(node, ScalarNode) else node.id
            raise Refused(None, None, f"cannot read {brief(value)} as {clip(tag, 30)}",
                          node.start_mark) from None

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE_TAG or not isinstance(key_node, ScalarNode):
                    continue
                key = self.construct_object(key_node)
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable: PyYAML reports it below
                    continue
                if first is not None:
                    raise Refused("while reading a mapping", node.start_mark,
                                  f"duplicate key {brief(key)} (first given on line "
                                  f"{first.start_mark.line + 1})", key_node.start_mark)
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        text = str(node.value)
        if sum(c.isalnum() for c in text) > MAX_INT_DIGITS:
            raise Refused(None, None, f"integer with more than {MAX_INT_DIGITS} digits",
                          node.start_mark)
        return super().construct_yaml_int(node)


ScenarioLoader.add_constructor("tag:yaml.org,2002:int", ScenarioLoader.construct_yaml_int)


def check_graph(root):
    """Refuse a composed document whose alias expansion is too large, too deep or recursive.

    Sizes and depths are computed once per node (the node graph is a DAG when aliases are
    shared), so the check costs O(nodes as written), not O(nodes as expanded)."""
    size, depth = {}, {}
    on_path = set()
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[key] > MAX_NODES:
                raise Refused(None, None, f"the document expands to more than {MAX_NODES} nodes "
                              f"(aliases repeat their anchor's content)", node.start_mark)
            if depth[key] > MAX_DEPTH:
                raise Refused(None, None, f"nested more than {MAX_DEPTH} levels deep once "
                              f"aliases are expanded", node.start_mark)
            continue
        if key in size:
            continue
        if key in on_path:
            raise Refused(None, None, "recursive alias (a node that contains itself)",
                          node.start_mark)
        on_path.add(key)
        stack.append((node, True))
        for kid in _children(node):
            if id(kid) in on_path:
                raise Refused(None, None, "recursive alias (a node that contains itself)",
                              kid.start_mark)
            if id(kid) not in size:
                stack.append((kid, False))


def _children(node):
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _collect_lines(root):
    """{key path: line} for the document as written; an aliased node is walked only once."""
    lines = {}
    seen = set()
    stack = [(root, ())]
    while stack:
        node, prefix = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for knode, vnode in node.value:
                if not isinstance(knode, ScalarNode):
                    continue
                path = prefix + (knode.value,)
                lines.setdefault(path, knode.start_mark.line + 1)
                stack.append((vnode, path))
        elif isinstance(node, SequenceNode):
            for i, item in enumerate(node.value):
                path = prefix + (i,)
                lines.setdefault(path, item.start_mark.line + 1)
                stack.append((item, path))
    return lines


def parse_yaml(text):
    """(data, lines) of one YAML document under the limits; raises ``yaml.YAMLError``."""
    loader = ScenarioLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        check_graph(node)
        lines = _collect_lines(node)
        return loader.construct_document(node), lines
    finally:
        loader.dispose()


def _yaml_problem(exc):
    mark = getattr(exc, "problem_mark", None)
    line = f":{mark.line + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    if "maximum nesting depth" in problem:  # libyaml's own limit (1000 levels) met while it
        problem = f"nested more than {MAX_DEPTH} levels deep"  # scans ahead of our composer
    context = getattr(exc, "context", None)
    if context and problem.startswith("but "):  # "expected a single document ..., but found ..."
        problem = f"{context}, {problem}"
    return line, clip(problem, 160)


def read_scenario_bytes(path) -> bytes:
    """The bytes of a scenario file: a regular file of at most MAX_BYTES, else UserError.

    The file is opened non-blocking and its type checked on the open descriptor, so a FIFO,
    a device such as /dev/zero or a directory is refused without waiting or streaming."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise UserError(f"{p}: no such scenario file") from None
    except IsADirectoryError:
        raise UserError(f"{p}: is a directory, expected a YAML scenario file") from None
    except OSError as exc:
        raise UserError(f"{p}: cannot open the scenario file ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise UserError(f"{p}: is a directory, expected a YAML scenario file")
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{p}: is {_file_kind(st.st_mode)}, expected a regular YAML "
                            f"scenario file")
        if st.st_size > MAX_BYTES:
            raise UserError(f"{p}: the scenario file has {st.st_size} bytes, more than the "
                            f"{MAX_BYTES} allowed")
        chunks, total = [], 0
        while total <= MAX_BYTES:  # st_size can be 0 for /proc files: read to the cap
            chunk = os.read(fd, min(1 << 16, MAX_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > MAX_BYTES:
            raise UserError(f"{p}: the scenario file has more than the {MAX_BYTES} bytes allowed")
        return b"".join(chunks)
    except OSError as exc:
        raise UserError(f"{p}: cannot read the scenario file ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _file_kind(mode) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def load_scenario_file(path) -> Located:
    """Parse a YAML file into a :class:`Located` mapping."""
    p = Path(path)
    raw = read_scenario_bytes(p)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{p}: not UTF-8 text (byte {exc.start} is {raw[exc.start]:#04x})") from None
    return load_scenario_text(text, p)


def load_scenario_text(text, path="<scenario>") -> Located:
    if len(text) > MAX_BYTES:
        raise UserError(f"{path}: the scenario has more than the {MAX_BYTES} characters allowed")
    try:
        data, lines = parse_yaml(text)
    except yaml.YAMLError as exc:
        line, problem = _yaml_problem(exc)
        raise UserError(f"{path}{line}: invalid YAML: {problem}") from None
    if data is None:
        raise UserError(f"{path}: the scenario file is empty")
    if not isinstance(data, dict):
        raise UserError(f"{path}:1: expected a mapping of keys (kind, name, ...) at the top level, "
                        f"got a {_yaml_type(data)}")
    return Located(data, lines, path)


def _yaml_type(value) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def parse_override(text):
    """``"time.dt=0.005"`` -> (("time", "dt"), 0.005). The value is parsed as YAML."""
    if "=" not in text:
        raise UserError(f"--set {brief(text)}: expected KEY.PATH=VALUE, e.g. --set time.steps=500")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise UserError(f"--set {brief(text)}: expected KEY.PATH=VALUE with a non-empty dotted key")
    if len(raw) > MAX_BYTES:
        raise UserError(f"--set {brief(text)}: the value has more than {MAX_BYTES} characters")
    value = raw
    if raw.strip():
        try:
            value, _ = parse_yaml(raw)
        except Refused as exc:
            raise UserError(f"--set {brief(text)}: {_yaml_problem(exc)[1]}") from None
        except yaml.YAMLError:
            value = raw  # not YAML: the text itself
    else:
        value = ""
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
                raise UserError(f"--set {brief(text)}: {clip('.'.join(keys[:i + 1]))} is not a "
                                f"mapping")
            node = nxt
        node[keys[-1]] = value
    out = Located(data, scenario.lines, scenario.path, set_by)
    out.overrides = list(overrides or ())
    return out
