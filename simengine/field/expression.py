"""A safe formula for initial fields: ``initial: {type: expression, formula: ...}``.

The formula is parsed with :mod:`ast` and only this grammar is accepted (never ``eval``):
numbers, the coordinates ``x``, ``y``, ``z`` (cell positions i·h along the last, second-to-last
and third-to-last grid axes, as the output's coordinates), the constants ``pi`` and ``e``, the
operators ``+ - * / **`` and unary ``-``/``+``, parentheses, and calls of
``sin cos tan exp log sqrt tanh abs`` (NumPy's) with one positional argument each. Anything
else — attributes, subscripts, keywords, other names, comparisons, strings — is a one-line
``ValueError`` naming what is not allowed (the config check turns it into the key's message).
"""
from __future__ import annotations

import ast

import numpy as np

FUNCTIONS = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "exp": np.exp, "log": np.log,
             "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs}
CONSTANTS = {"pi": np.pi, "e": np.e}
AXES = ("x", "y", "z")
_BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide,
           ast.Pow: np.power}
_UNARY = {ast.USub: np.negative, ast.UAdd: np.positive}
#: formulas longer than this are refused (a scenario key, not a program)
MAX_LENGTH = 2000


def _check(node, ndim):
    if isinstance(node, ast.Expression):
        return _check(node.body, ndim)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ValueError(f"{node.value!r} is not a number")
        return
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return
        if node.id in AXES:
            if AXES.index(node.id) >= ndim:
                raise ValueError(f"{node.id} is not a coordinate of a {ndim}-D grid (its "
                                 f"coordinates: {', '.join(AXES[:ndim])})")
            return
        raise ValueError(f"unknown name {node.id!r} (allowed: {', '.join(AXES[:ndim])}, pi, e "
                         f"and the functions {', '.join(FUNCTIONS)})")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, ndim)
        _check(node.right, ndim)
        return
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check(node.operand, ndim)
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise ValueError(f"{what!r} is not an allowed function (allowed: "
                             f"{', '.join(FUNCTIONS)})")
        if node.keywords or len(node.args) != 1:
            raise ValueError(f"{node.func.id}() takes exactly one positional argument")
        _check(node.args[0], ndim)
        return
    raise ValueError(f"{ast.unparse(node)!r} is not allowed (numbers, {', '.join(AXES[:ndim])}, "
                     f"pi, e, + - * / **, and {', '.join(FUNCTIONS)})")


def parse(formula: str, ndim: int):
    """The checked syntax tree of ``formula`` for a grid of ``ndim`` axes (ValueError)."""
    if not isinstance(formula, str) or not formula.strip():
        raise ValueError("expected a formula in x, y, z, e.g. 0.5 + 0.01*cos(0.105*x)")
    if len(formula) > MAX_LENGTH:
        raise ValueError(f"the formula has {len(formula)} characters, more than {MAX_LENGTH}")
    try:
        tree = ast.parse(formula.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not a formula: {exc.msg} at column {exc.offset}") from None
    _check(tree, ndim)
    return tree


def _eval(node, env):
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env))
    return FUNCTIONS[node.func.id](_eval(node.args[0], env))


def evaluate_rows(tree, shape, spacing, start, stop) -> np.ndarray:
    """Rows ``[start, stop)`` of axis 0 of the formula on a grid of ``shape`` (float64)."""
    shape = tuple(int(n) for n in shape)
    ndim = len(shape)
    rows = (int(stop) - int(start),) + shape[1:]
    env = dict(CONSTANTS)
    for ax in range(ndim):              # axis a is coordinate AXES[ndim - 1 - a]
        n = rows[ax]
        idx = np.arange(n, dtype=np.float64) + (start if ax == 0 else 0)
        sh = [1] * ndim
        sh[ax] = n
        env[AXES[ndim - 1 - ax]] = (idx * float(spacing)).reshape(sh)
    with np.errstate(all="ignore"):
        out = _eval(tree, env)
    return np.broadcast_to(np.asarray(out, dtype=np.float64), rows).copy()


#: PFHub benchmark 1's initial condition (c₀ = 0.5, ε = 0.01; 2-D)
PFHUB_BM1 = ("0.5 + 0.01*(cos(0.105*x)*cos(0.11*y) + (cos(0.13*x)*cos(0.087*y))**2"
             " + cos(0.025*x - 0.15*y)*cos(0.07*x - 0.02*y))")
