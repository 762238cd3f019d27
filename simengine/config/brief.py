"""Short renderings of user values for one-line error messages.

A scenario value can be arbitrarily long (a 100 KB string, a list of a million ids); error
messages quote at most :data:`LIMIT` characters of it, ending in an ellipsis when cut.
"""
from __future__ import annotations

#: most characters of a user value quoted in a message
LIMIT = 60


def brief(value, limit: int = LIMIT) -> str:
    """``repr(value)`` cut to ``limit`` characters (``'aaaa…`` when longer); never raises."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<an integer of about {int(value.bit_length() * 0.30103) + 1} digits>"
    try:
        text = repr(value)
    except Exception:  # a value whose repr fails (huge int beyond the str limit, ...)
        text = f"<{type(value).__name__}>"
    return clip(text, limit)


def clip(text: str, limit: int = LIMIT) -> str:
    """``text`` on one line, cut to ``limit`` characters with a trailing ellipsis when longer."""
    text = str(text).replace("\r", " ").replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 1] + "…"
