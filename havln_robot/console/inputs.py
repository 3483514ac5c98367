"""The one strict parser of what a browser sends the console (HTTP bodies and WebSocket frames).

Python's ``json`` takes ``NaN``, ``Infinity`` and ``1e400`` (a float ``inf``); ``int(inf)`` then
raised OverflowError (a 500 with a traceback) and echoing ``nan`` back made the WebSocket reply
fail ("refusing to write nan"), dropping the socket. Everything the web app reads from a request
goes through :func:`parse_object` and the typed field readers below: a bad value is a
:class:`ValueError` with one line naming the field (the app answers 400, or an ``error`` frame).
"""

from __future__ import annotations

import json
import math
from typing import Any

from havln_robot.text import is_blank, terminal_safe

#: Largest body / frame the console reads as JSON (bytes); its requests are a few hundred bytes.
MAX_JSON_BYTES = 64 * 1024


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number: give a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range: give a finite number")
    return value


def _int(text: str) -> int:
    if len(text) > 20:
        raise ValueError(f"{text[:20]}...: number too large")
    return int(text)


def parse_object(raw: bytes | str) -> dict[str, Any]:
    """A JSON object from ``raw``: finite numbers only (``NaN``, ``Infinity``, ``1e400`` refused).

    Raises:
        ValueError: not UTF-8, not JSON, not an object, too large or a non-finite number (one line).
    """
    if len(raw) > MAX_JSON_BYTES:
        raise ValueError(f"body of {len(raw)} bytes: at most {MAX_JSON_BYTES}")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_int)
    except UnicodeDecodeError:
        raise ValueError("expected a JSON object (UTF-8)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"expected a JSON object: {exc.msg} at char {exc.pos}") from None
    except RecursionError:
        raise ValueError("expected a JSON object: nested too deep") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return data


def _shown(value: Any) -> str:
    return terminal_safe(repr(value)[:40])


def text_field(data: dict[str, Any], name: str, *, max_len: int = 2000, default: str = "") -> str:
    """A string field (stripped; ``default`` when absent or null); blank text (:func:`is_blank`) gives ``""``."""
    value = data.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValueError(f"{name}: expected text, got {_shown(value)}")
    if len(value) > max_len:
        raise ValueError(f"{name}: {len(value)} characters, at most {max_len}")
    value = value.strip()
    return "" if is_blank(value) else value


def int_field(data: dict[str, Any], name: str, *, lo: int, hi: int, default: int = 0) -> int:
    """A whole-number field in ``[lo, hi]`` (``default`` when absent or null; ``3``, ``3.0`` and ``"3"`` accepted; ``true``, ``1e400``, ``"1e3"`` not)."""
    value = data.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and value.isascii() and value.isdecimal() and len(value) <= 18:  # a form field's "3"
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name}: expected a whole number from {lo} to {hi}, got {_shown(value)}")
    return value


def float_field(data: dict[str, Any], name: str, *, lo: float, hi: float, what: str = "a number") -> float | None:
    """A finite number field in ``[lo, hi]`` (a number, or its text); None when absent, null or ``""``."""
    value = data.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, str) and len(value) <= 40:  # a form field's "4.5"; "nan" / "inf" refused below
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"{name}: expected {what} from {lo:g} to {hi:g}, got {_shown(value)}")
    return float(value)


def bool_field(data: dict[str, Any], name: str, *, default: bool | None = None) -> bool:
    """A ``true`` / ``false`` field (``default`` when absent; no default: required)."""
    value = data.get(name)
    if value is None and default is not None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"{name}: expected true or false, got {_shown(value)}")
    return value


def choice_field(data: dict[str, Any], name: str, choices: tuple[str, ...]) -> str:
    """A field that must be one of ``choices``."""
    value = data.get(name)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}: expected {', '.join(choices[:-1])} or {choices[-1]}, got {_shown(value)}")
    return value
