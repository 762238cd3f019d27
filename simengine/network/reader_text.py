"""How graph-file messages quote the file: short, sanitised excerpts, and none before the file
has shown it is a graph of the format read (a header accepted, an edge line read) — a parse
error on ``/etc/passwd`` read as an edge list never prints a line of it."""
from __future__ import annotations

import contextvars

#: longest excerpt of a line quoted in an error message
EXCERPT = 40

#: False while a graph file has not shown it is a graph of the format read (no header accepted,
#: no edge line read): its lines are then never quoted (it may be /etc/passwd or a key file)
_quoting = contextvars.ContextVar("simengine_graph_quoting", default=True)


def _excerpt(text) -> str:
    if not _quoting.get():
        return "a line not quoted (nothing in the file looks like graph data yet)"
    s = "".join(c if c.isprintable() else "?" for c in str(text).strip()[:EXCERPT + 1])
    if len(s) > EXCERPT:
        s = s[:EXCERPT] + "…"
    return repr(s)


def _looks_like_graph_data():
    """The header checks passed (or an edge line was read): excerpts may be quoted now."""
    _quoting.set(True)


def _count(x: int) -> str:
    """An integer for a message (a huge one as its number of digits)."""
    t = str(x)
    return t if len(t) <= 24 else f"a {len(t)}-digit number"


def _bytes(b: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if b < 1024 or unit == "EiB":
            break
        b /= 1024
    if b >= 1024 ** 2:
        return "more than 1 ZiB"
    return f"{b:.1f} {unit}" if unit != "B" else f"{int(b)} B"
