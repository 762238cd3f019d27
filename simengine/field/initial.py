"""Initial fields (reproducible: numpy Generator with the PCG64 bit generator)."""
from __future__ import annotations

import numpy as np


def noise(shape, mean=0.0, amplitude=0.1, seed=0, dtype=np.float64) -> np.ndarray:
    """Uniform noise in [mean − amplitude, mean + amplitude], drawn in float64 from
    ``np.random.Generator(np.random.PCG64(seed))`` and cast to ``dtype``."""
    rng = np.random.Generator(np.random.PCG64(seed))
    x = rng.uniform(mean - amplitude, mean + amplitude, size=tuple(shape))
    return x.astype(dtype)


#: values drawn by one thread at a time (each piece from its own PCG64 stream, advanced to it)
PIECE_VALUES = 1 << 22


def noise_rows(shape, start, stop, mean=0.0, amplitude=0.1, seed=0, dtype=np.float64,
               out=None) -> np.ndarray:
    """Rows ``[start, stop)`` of axis 0 of :func:`noise` (same values, bit for bit), without
    drawing the rest of the field: the PCG64 stream is advanced past the values before each piece
    (one 64-bit draw per float64 value), so pieces of :data:`PIECE_VALUES` values are drawn in
    parallel threads (NumPy releases the GIL while it fills an array) and a rank of a decomposed
    run draws only its slab. ``uniform(low, high)`` is ``low + (high − low)·u`` with ``u`` from
    ``Generator.random``; the pieces compute exactly that. ``out``: an array of the rows' shape
    and ``dtype`` to fill (e.g. a pinned buffer)."""
    from concurrent.futures import ThreadPoolExecutor

    shape = tuple(int(n) for n in shape)
    row = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1
    rows = (int(stop) - int(start),) + shape[1:]
    dtype = np.dtype(dtype)
    if out is None:
        out = np.empty(rows, dtype)
    if out.shape != rows or out.dtype != dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {dtype} array of shape {rows}")
    flat = out.reshape(-1)
    low, high = mean - amplitude, mean + amplitude
    first = int(start) * row

    def piece(a):
        b = min(a + PIECE_VALUES, flat.size)
        bg = np.random.PCG64(seed)
        bg.advance(first + a)
        direct = dtype == np.float64
        dst = flat[a:b] if direct else np.empty(b - a, np.float64)
        np.random.Generator(bg).random(out=dst)
        dst *= high - low
        dst += low
        if not direct:
            flat[a:b] = dst  # rounded as noise()'s astype
    starts = range(0, flat.size, PIECE_VALUES)
    if len(starts) <= 1:
        for a in starts:
            piece(a)
    else:
        with ThreadPoolExecutor(max_workers=min(len(starts), _threads())) as pool:
            list(pool.map(piece, starts))
    return out


def _threads() -> int:
    import os

    try:
        return max(1, min(32, len(os.sched_getaffinity(0))))
    except (AttributeError, OSError):
        return max(1, min(32, os.cpu_count() or 1))


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
