"""Strict JSON output: every JSON text the project writes goes through :func:`dumps` / :func:`write`.

Python's ``json`` writes ``NaN``, ``Infinity`` and ``-Infinity`` by default, which RFC 8259 JSON does
not have and strict parsers (``jq``, JavaScript's ``JSON.parse``, the challenge server) reject. Here
``allow_nan=False`` is always set, and a non-finite float is handled by ``nonfinite``:

* ``"error"`` (default): :class:`ValueError` naming where the value sits (e.g. ``$.aggregate.spl``),
  for outputs where a non-finite number is a bug (inputs are checked at load time);
* ``"null"``: written as ``null`` (unknown), for records where a figure may legitimately be missing
  (e.g. NE of a replay on the real robot, where nothing reports ground truth).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any


def _check(obj: Any, nonfinite: str, where: str = "$") -> Any:
    """``obj`` with non-finite floats replaced by None (``"null"``) or refused (``"error"``)."""
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        if nonfinite == "null":
            return None
        raise ValueError(f"refusing to write {obj!r} at {where} as JSON (strict JSON has no NaN/Infinity)")
    if isinstance(obj, dict):
        return {k: _check(v, nonfinite, f"{where}.{k}") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_check(v, nonfinite, f"{where}[{i}]") for i, v in enumerate(obj)]
    return obj


def dumps(obj: Any, *, nonfinite: str = "error", **kwargs: Any) -> str:
    """``json.dumps(obj, allow_nan=False, **kwargs)`` after the ``nonfinite`` policy (module docstring).

    Raises:
        ValueError: a non-finite float with ``nonfinite="error"`` (names its JSON path), or an
            unknown ``nonfinite`` value.
    """
    if nonfinite not in ("error", "null"):
        raise ValueError(f"nonfinite must be 'error' or 'null', not {nonfinite!r}")
    kwargs.pop("allow_nan", None)
    return json.dumps(_check(obj, nonfinite), allow_nan=False, **kwargs)


def write(path: str | os.PathLike[str], obj: Any, *, nonfinite: str = "error", newline: bool = True, **kwargs: Any) -> Path:
    """Write ``obj`` as strict JSON (UTF-8) to ``path``, with a trailing newline unless ``newline`` is False; returns the path."""
    p = Path(path)
    p.write_text(dumps(obj, nonfinite=nonfinite, **kwargs) + ("\n" if newline else ""), encoding="utf-8")
    return p
