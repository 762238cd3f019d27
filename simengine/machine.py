"""What this machine has, and how sizes and times are written for people: the bytes this
process may still allocate (:func:`host_available`), :func:`fmt_bytes`, :func:`fmt_seconds`.
Imported by the resource check (:mod:`simengine.resources`) and by the readers, which size their
buffers from the same figure."""
from __future__ import annotations

import os

#: test hook: the host memory this process may allocate, in bytes
HOST_LIMIT_ENV = "SIMENGINE_TEST_HOST_MEMORY"


def fmt_bytes(b: float) -> str:
    """'28.2 KiB', '1.0 MiB' (never '1.02e+03 KiB': a value that rounds to 1000 moves up)."""
    b = float(b)
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        # from 999.5 of the smaller unit on, this one (1016 KiB is '1.0 MiB')
        if b >= (size if unit == "KiB" else size * 999.5 / 1024):
            v = b / size
            return f"{v:.1f} {unit}" if v < 9.95 else f"{v:.3g} {unit}" if v < 999.5 else \
                f"{v:.0f} {unit}" if v < 1e6 else f"{v:.3g} {unit}"   # never 300 digits
    return f"{int(b)} B"


def fmt_seconds(s: float) -> str:
    if s < 1:
        return f"{s * 1e3:.2g} ms"
    if s < 120:
        return f"{s:.2g} s"
    if s < 7200:
        return f"{s / 60:.2g} min"
    if s < 172800:
        return f"{s / 3600:.2g} h"
    return f"{s / 86400:.3g} days"



def _read_int(path):
    try:
        with open(path) as f:
            txt = f.read().strip()
    except OSError:
        return None
    if not txt or txt == "max":
        return None
    try:
        return int(txt)
    except ValueError:
        return None


def env_limit(var: str) -> int | None:
    v = os.environ.get(var, "").strip()
    return int(v) if v.isdigit() else None


def host_available() -> tuple[int, str]:
    """Bytes this process may still allocate, and where the figure comes from: MemAvailable of
    /proc/meminfo, or the cgroup memory limit minus its usage when that is lower (or the test
    hook :data:`HOST_LIMIT_ENV`)."""
    forced = env_limit(HOST_LIMIT_ENV)
    if forced is not None:
        return forced, HOST_LIMIT_ENV
    avail, src = None, "MemAvailable"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    for limit_f, usage_f in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                             ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                              "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        lim = _read_int(limit_f)
        if lim is None or lim >= 1 << 60:
            continue
        room = lim - (_read_int(usage_f) or 0)
        if avail is None or room < avail:
            avail, src = room, "cgroup memory limit"
        break
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            src = "free physical pages"
        except (ValueError, OSError):
            avail, src = 1 << 62, "unknown"
    return int(avail), src
