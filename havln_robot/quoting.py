"""Bounded quoting of user values in problem lines: :func:`quote` (re-exported by :mod:`havln_robot.text`).

No imports from the project, so every module (actions, records, challenge, ...) can use it.
"""

from __future__ import annotations

#: Longest quoted text in a problem line (:func:`quote`).
QUOTE_CHARS = 40


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` for a problem line, bounded: never much longer than ``limit`` characters.

    A long string shows its first ``limit`` characters then ``… (N chars)``; an integer past 40
    digits is described (``an integer of about N digits``) without converting it to text (Python
    refuses past 4300 digits); a list / tuple / dict shows its start then ``… (N items)``. Never raises.
    """
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() > 133:  # more than 40 decimal digits
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value)} chars)"
    if isinstance(value, dict):
        items = list(value.items())[: limit // 2]
        text = "{" + ", ".join(f"{quote(k, limit)}: {quote(v, limit)}" for k, v in items)
        closing = "}"
    elif isinstance(value, (list, tuple)):
        items = list(value[: limit // 2])
        text = ("[" if isinstance(value, list) else "(") + ", ".join(quote(v, limit) for v in items)
        closing = "]" if isinstance(value, list) else ")"
    else:
        text = repr(value)
        return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"
    if len(text) < limit and len(items) == len(value):
        return text + closing
    return f"{text[:limit]}… ({len(value)} items)"
