"""What numba reads from the environment, settled when ``simengine`` is imported (before numba
loads): where compiled kernels are cached on disk, how idle threads wait, how many there are.

Every CPU kernel is compiled with ``cache=True``: the first run on a machine compiles it
(seconds), later runs load it (a few hundred ms for a whole run's kernels). numba stores the
cache in a ``__pycache__`` folder beside the package's sources when that folder is writable.
When it is not (a read-only or shared installation: a cluster's software tree, a container, a
system site-packages), simengine sets ``NUMBA_CACHE_DIR`` to :func:`cache_dir`:
``$SIMENGINE_CACHE_DIR/numba``, else ``$XDG_CACHE_HOME/simengine/numba``, else
``~/.cache/simengine/numba``, else (no writable home) ``<tmp>/simengine-<uid>/numba``. A
``NUMBA_CACHE_DIR`` the user set wins. numba keys each cached kernel by the CPU's name and
features, so a home shared by the nodes of a cluster with different CPUs is safe. docs/cluster.md
("Kernel cache and start-up") describes it.

Threads on a shared node (:func:`settle_threads`, docs/cluster.md "Threads on a busy node"):
numba's OpenMP threading layer lets idle threads spin between parallel regions; with another
busy process on every core a spinning thread takes the core from the thread that has work (a
2 000-step 2-D field: 126 s with 2 spinning threads against 18.8 s on one). simengine sets
``OMP_WAIT_POLICY=passive`` (threads sleep at once; GNU and LLVM OpenMP) and ``KMP_BLOCKTIME=0``
(Intel OpenMP) unless the user set them, and, unless ``NUMBA_NUM_THREADS`` is set, starts no
more threads than the cores this process may run on (``os.sched_getaffinity``: a cgroup or
``taskset`` mask, Slurm's allocation), where numba would start one per core of the machine.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

#: the package's own folder: numba caches beside its sources when it may write there
PACKAGE = Path(__file__).resolve().parent


def _writable(folder: Path) -> bool:
    """True when ``folder`` exists and is writable, or can be created."""
    try:
        if folder.is_dir():
            return os.access(folder, os.W_OK | os.X_OK)
        folder.mkdir(parents=True, exist_ok=True)
        return True
    except OSError:
        return False


def in_tree_writable(package: Path = PACKAGE) -> bool:
    """True when numba can cache beside the package's sources (``__pycache__`` of the package
    and of its kernel folders writable), as numba's own in-tree locator decides."""
    probes = [package, package / "network", package / "network" / "cpu", package / "field" / "cpu"]
    for p in probes:
        if not p.is_dir():
            continue
        cache = p / "__pycache__"
        if cache.is_dir():
            if not os.access(cache, os.W_OK | os.X_OK):
                return False
        elif not os.access(p, os.W_OK | os.X_OK):
            return False
    return True


def cache_dir(env=None) -> Path | None:
    """The folder simengine gives numba for its cache when the package's folder is read-only
    (see the module's docstring); None when none can be written."""
    env = os.environ if env is None else env
    home = env.get("SIMENGINE_CACHE_DIR", "").strip()
    candidates = []
    if home:
        candidates.append(Path(home).expanduser() / "numba")
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    if xdg:
        candidates.append(Path(xdg).expanduser() / "simengine" / "numba")
    try:
        candidates.append(Path("~").expanduser() / ".cache" / "simengine" / "numba")
    except RuntimeError:  # no home directory
        pass
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    candidates.append(Path(tempfile.gettempdir()) / f"simengine-{uid}" / "numba")
    for c in candidates:
        if _writable(c):
            return c
    return None


def settle_cache(env=None, package: Path = PACKAGE) -> str | None:
    """Set ``NUMBA_CACHE_DIR`` (in ``env``, and in numba's config when numba is already loaded)
    when the package's folder is read-only and the user set none. Returns the folder chosen
    (None: numba's own choice stands)."""
    env = os.environ if env is None else env
    if env.get("NUMBA_CACHE_DIR", "").strip() or in_tree_writable(package):
        return None
    folder = cache_dir(env)
    if folder is None:
        return None
    env["NUMBA_CACHE_DIR"] = str(folder)
    if env is os.environ and "numba" in sys.modules:   # loaded first (a notebook, tests)
        try:
            from numba.core import config

            config.CACHE_DIR = str(folder)
        except Exception:  # pragma: no cover - numba's layout changed: its default stands
            pass
    return str(folder)


#: the variable that says NUMBA_NUM_THREADS was set by :func:`settle_threads` (the affinity), so
#: that ``--threads``' log does not call it the user's
MARK = "SIMENGINE_THREADS_FROM_AFFINITY"

#: the wait policy simengine sets unless the user set one (variable -> value)
PASSIVE = {"OMP_WAIT_POLICY": "passive", "KMP_BLOCKTIME": "0"}


def allowed_cores() -> int | None:
    """The cores this process may run on (None where the OS does not say)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def settle_threads(env=None) -> dict:
    """Set the passive wait policy and the affinity's thread count in ``env`` where the user set
    neither; returns what was set (nothing once numba's threads have started)."""
    env = os.environ if env is None else env
    done = {}
    for var, value in PASSIVE.items():
        if not env.get(var, "").strip():
            env[var] = done[var] = value
    cores = allowed_cores()
    if not env.get("NUMBA_NUM_THREADS", "").strip() and cores and \
            cores < (os.cpu_count() or cores) and "numba" not in sys.modules:
        env["NUMBA_NUM_THREADS"] = done["NUMBA_NUM_THREADS"] = str(cores)
        env[MARK] = str(cores)      # set here, not by the user (parallel/threads.py reads it)
    return done


def settle() -> None:
    """Called once by ``import simengine``."""
    settle_cache()
    settle_threads()
