"""The one way simengine writes an output file: what may be replaced, and by what name errors go.

Every file a command writes — a run's index and parts (:func:`simengine.io.durable.write_atomic`),
``run.xdmf``, ``report``'s page, ``plot``'s figures, ``sweep``'s CSV files — passes
:func:`check_target` before anything is created, and again right before the temporary file is
renamed over the target:

* the target must be a regular file or missing: a device node (``/dev/null``), a FIFO, a socket or
  a directory is never replaced (one line, :class:`~simengine.errors.UserError`, exit 2). A
  symbolic link is judged by what it points to;
* the target must not be one of the command's own inputs (the same file: same device and inode,
  so ``report OUT.h5 --out OUT.h5`` or a hard link of the input is refused);
* the directory must exist (``report --out missing/x.html``: one line naming the user's path).

Errors name the path the user gave, never the temporary ``NAME.tmp``; the temporary file is
removed on any failure (:mod:`simengine.io.durable`).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import UserError
from .durable import check_replaceable, same_file, special_kind  # noqa: F401 (re-export)


def _kind(mode) -> str:
    return special_kind(mode)


def _utf8(path):
    from .layout import check_utf8

    check_utf8(path)


def check_target(path, inputs=(), what="output") -> Path:
    """UserError (one line, exit 2) unless ``path`` may be created or replaced by a new regular
    file: missing or a regular file, not one of ``inputs``, in an existing directory."""
    _utf8(path)
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise UserError(f"{path}: cannot write the {what}: a component of the path is a file, "
                        f"not a directory") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot write the {what}: {exc.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path}: is {_kind(st.st_mode)}; simengine replaces only regular files "
                        f"(give a file path for the {what})")
    for given in inputs:
        if given is not None and st is not None and same_file(path, given):
            same = "" if str(given) == str(path) else f" ({given})"
            raise UserError(f"{path}: is this command's input{same}; writing the {what} there "
                            f"would destroy it (give another path)")
    parent = path.parent
    try:
        pst = os.stat(parent)
    except FileNotFoundError:
        raise UserError(f"{path}: cannot write the {what}: the directory {parent} does not "
                        f"exist") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot write the {what}: {parent}: {exc.strerror}") from None
    if not stat.S_ISDIR(pst.st_mode):
        raise UserError(f"{path}: cannot write the {what}: {parent} is not a directory")
    return path


def prepare_dir(directory, inputs=(), what="output folder", create=True) -> Path:
    """Create ``directory`` (and its parents) for a command's output files; UserError when it
    exists as something other than a directory, is an input, or cannot be created.
    ``create=False`` only checks (e.g. ``sweep --list``)."""
    _utf8(directory)
    directory = Path(directory)
    for p in [directory, *directory.parents]:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UserError(f"{directory}: cannot use the {what}: {exc.strerror}") from None
        if not stat.S_ISDIR(st.st_mode):
            if p == directory:
                kind = "a regular file" if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)
                raise UserError(f"{directory}: the {what} exists and is {kind}, not a "
                                f"directory")
            raise UserError(f"{directory}: cannot create the {what}: {p} is not a directory")
        break
    for given in inputs:
        if given is not None and same_file(directory, given):
            raise UserError(f"{directory}: is this command's input; give another {what}")
    if not create:
        return directory
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from .durable import describe_oserror

        raise UserError(f"{directory}: cannot create the {what}: {describe_oserror(exc)}") \
            from None
    return directory


def write_file(path, data, inputs=(), what="output", sync=True) -> Path:
    """Create or replace ``path`` with ``data`` (bytes or an object with ``write_to(fd)``) after
    :func:`check_target`; atomic and durable (:func:`~simengine.io.durable.write_atomic`)."""
    from .durable import write_atomic

    path = check_target(path, inputs, what)
    write_atomic(path, data, sync=sync)
    return path


def save_figure(fig, path, dpi, inputs=()) -> Path:
    """A matplotlib figure written through :func:`write_file` (format from the suffix)."""
    import io

    check_target(path, inputs, "figure")
    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format=Path(path).suffix.lstrip(".") or "png")
    return write_file(path, buf.getbuffer(), inputs, "figure", sync=False)
