"""What the figures share: the matplotlib backend, labels, colour ranges, log axes, the field
helpers (time, spacing, the plane shown)."""
from __future__ import annotations

import numpy as np

from ..figure_backend import pyplot as _mpl  # noqa: F401  (the figure modules' backend)
from ..io.reader import Result  # noqa: F401

SPACE = {1: ("x",), 2: ("y", "x"), 3: ("z", "y", "x")}
TIME_LABEL = "time t (model units)"
LENGTH_UNIT = "model units"


def _wrap(text, width):
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def color_range(*arrays):
    """(vmin, vmax, cmap): symmetric about 0 with a diverging map when the data straddle 0."""
    lo = min(float(np.nanmin(a)) for a in arrays)
    hi = max(float(np.nanmax(a)) for a in arrays)
    if lo < 0 < hi:
        m = max(-lo, hi)
        return -m, m, "RdBu_r"
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi, "viridis"


def readable_log_axis(axis, lo, hi):
    """Log-scaled ``axis`` with numbers on it even when [lo, hi] spans less than a decade.

    Under one decade, plain 'nice' ticks (e.g. 20, 30, 40) are placed on the log scale; otherwise
    matplotlib's decade ticks, with the 2 and 5 multiples labelled when under three decades.
    """
    from matplotlib.ticker import (FixedLocator, FuncFormatter, LogLocator, MaxNLocator,
                                   NullFormatter, NullLocator)

    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0 or hi <= lo:
        return
    decades = np.log10(hi / lo)
    if decades < 1:
        ticks = [v for v in MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
                 if v > 0]
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_major_formatter(fmt)
        axis.set_minor_locator(NullLocator())
        axis.set_minor_formatter(NullFormatter())
    elif decades < 3:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(fmt)
        axis.set_minor_formatter(NullFormatter())


def _field_time(r):
    """(view, k, stride, step, time) of the latest stored field: its figure view
    (:meth:`Result.plane`: a 3D field's mid-plane z = k, a stride past the read cap)."""
    _, _, step, t = r._latest()
    view, k, stride = r.plane()
    return view, k, stride, step, t


def _strided(stride):
    """The note a figure of a field read with a stride carries ('' when every point is read)."""
    return "" if stride == 1 else f", every {stride}th point (read cap)"


def _spacing(r):
    if "fields" in r.file and "spacing" in r.file["fields"].attrs:
        return float(r.file["fields"].attrs["spacing"])
    return float(r.scenario.get("grid", {}).get("spacing", 1.0))


def _plane(phi):
    """A 2D view of a 2D or 3D field: 3D fields give the mid-plane along the first axis."""
    if phi.ndim == 3:
        k = phi.shape[0] // 2
        return phi[k], k
    return phi, None


def _extent(shape2d, h):
    ny, nx = shape2d
    return (-0.5 * h, (nx - 0.5) * h, -0.5 * h, (ny - 0.5) * h)


def _image(ax, img, h, vmin, vmax, cmap):
    im = ax.imshow(img, cmap=cmap, vmin=vmin, vmax=vmax, origin="lower", interpolation="nearest",
                   extent=_extent(img.shape, h))
    ax.set_xlabel(f"x ({LENGTH_UNIT})")
    ax.set_ylabel(f"y ({LENGTH_UNIT})")
    return im


def _tstr(t):
    return f"{t:.4g}"
