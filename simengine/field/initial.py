"""Initial fields (reproducible: numpy Generator with the PCG64 bit generator)."""
from __future__ import annotations

import numpy as np


def noise(shape, mean=0.0, amplitude=0.1, seed=0, dtype=np.float64) -> np.ndarray:
    """Uniform noise in [mean − amplitude, mean + amplitude], drawn in float64 from
    ``np.random.Generator(np.random.PCG64(seed))`` and cast to ``dtype``."""
    rng = np.random.Generator(np.random.PCG64(seed))
    x = rng.uniform(mean - amplitude, mean + amplitude, size=tuple(shape))
    return x.astype(dtype)


def noise_rows(shape, start, stop, mean=0.0, amplitude=0.1, seed=0, dtype=np.float64) -> np.ndarray:
    """Rows ``[start, stop)`` of axis 0 of :func:`noise` (same values, bit for bit), without
    drawing the rest of the field: the PCG64 stream is advanced past the rows before ``start``
    (one 64-bit draw per float64 value). A rank of a decomposed run draws only its slab."""
    shape = tuple(int(n) for n in shape)
    row = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1
    bg = np.random.PCG64(seed)
    bg.advance(int(start) * row)
    rng = np.random.Generator(bg)
    x = rng.uniform(mean - amplitude, mean + amplitude, size=(int(stop) - int(start),) + shape[1:])
    return x.astype(dtype)


def single_mode(shape, mean=0.0, amplitude=1e-3, modes=None, spacing=1.0, kind="periodic",
                dtype=np.float64) -> np.ndarray:
    """``mean + amplitude · Π_a basis_a(m_a)`` of one discrete eigenmode of the boundary's
    Laplacian: periodic cos(2π m x_i/N), mirror cos(π m (i+½)/N), fixed sin(π m (i+1)/(N+1)).
    ``modes`` is one integer per axis (default 1 along axis 0, 0 elsewhere; fixed needs m ≥ 1).
    Returns the field; :func:`mode_wavenumbers` gives the matching k."""
    shape = tuple(shape)
    if modes is None:
        modes = (1,) + (0,) * (len(shape) - 1) if kind != "fixed" else (1,) * len(shape)
    f = np.ones(shape)
    for ax, (n, m) in enumerate(zip(shape, modes)):
        i = np.arange(n)
        if kind == "periodic":
            b = np.cos(2 * np.pi * m * i / n)
        elif kind == "mirror":
            b = np.cos(np.pi * m * (i + 0.5) / n)
        elif kind == "fixed":
            b = np.sin(np.pi * m * (i + 1) / (n + 1))
        else:
            raise ValueError(f"unknown boundary {kind!r}")
        sh = [1] * len(shape)
        sh[ax] = n
        f = f * b.reshape(sh)
    return (mean + amplitude * f).astype(dtype)


def mode_wavenumbers(shape, modes, spacing=1.0, kind="periodic"):
    """Angular wavenumbers k_a of :func:`single_mode`'s mode."""
    out = []
    for n, m in zip(shape, modes):
        if kind == "periodic":
            out.append(2 * np.pi * m / (n * spacing))
        elif kind == "mirror":
            out.append(np.pi * m / (n * spacing))
        else:
            out.append(np.pi * m / ((n + 1) * spacing))
    return np.array(out)
