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
import zlib
from pathlib import Path
from typing import Any

#: Largest JSON input read, bytes, on disk and after gzip decompression: the largest real inputs
#: (VLN-CE train ``*.json.gz``, a full run's results) are tens of MiB.
MAX_JSON_BYTES = 256 * 1024 * 1024

_CHUNK = 1 << 20


class JsonFileError(ValueError):
    """A JSON input file is too large (on disk or decompressed) or not valid gzip; one line naming the file."""


#: Longest integer literal read from JSON, digits: Python refuses to convert past 4300 digits with a
#: message about ``sys.set_int_max_str_digits``; no count, id or version needs more than this.
MAX_INT_DIGITS = 100


def parse_int(literal: str) -> int:
    """``json.loads`` ``parse_int`` hook: ``int(literal)``, refusing a literal over :data:`MAX_INT_DIGITS` digits.

    Raises:
        ValueError: the literal is too long (its digit count, not its text, is in the message).
    """
    digits = len(literal) - literal.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise ValueError(f"an integer literal of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(literal)


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def read_bytes_capped(path: str | os.PathLike[str], max_bytes: int | None = None, *, gunzip: bool = True) -> bytes:
    """The bytes of ``path``, gzip-decompressed when they start with the gzip magic and ``gunzip`` is set.

    Bounded: at most ``max_bytes + 1`` bytes are read from the file (so ``/dev/zero`` or a FIFO that
    never ends cannot eat the memory) and decompression streams, stopping once the output passes
    ``max_bytes`` (a small ``.json.gz`` of a gigabyte of spaces is refused after ``max_bytes``).
    ``max_bytes`` None: :data:`MAX_JSON_BYTES`, looked up at call time.

    Raises:
        OSError: the file cannot be opened/read (callers word their own hint; FileNotFoundError too).
        JsonFileError: larger than ``max_bytes`` on disk or decompressed, or broken gzip (one line
            naming the file, the limit and the fix).
    """
    p = Path(path)
    if max_bytes is None:
        max_bytes = MAX_JSON_BYTES
    with open(p, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise JsonFileError(f"{p}: larger than {_mib(max_bytes)} -- not an input of this kind (a device, a log?); give the right file")
    if not gunzip or data[:2] != b"\x1f\x8b":
        return data
    out = bytearray()
    rest = data
    try:
        while rest:
            d = zlib.decompressobj(wbits=31)
            chunk = rest
            while chunk:
                out += d.decompress(chunk, max_bytes + 1 - len(out))
                if len(out) > max_bytes:
                    raise JsonFileError(
                        f"{p}: decompresses to more than {_mib(max_bytes)} -- not an input of this kind; give the right file"
                    )
                chunk = d.unconsumed_tail
            out += d.flush()
            if len(out) > max_bytes:
                raise JsonFileError(f"{p}: decompresses to more than {_mib(max_bytes)} -- not an input of this kind; give the right file")
            if not d.eof:
                raise JsonFileError(f"{p}: truncated gzip data; restore the file")
            rest = d.unused_data.lstrip(b"\0")  # another gzip member, or trailing zero padding
    except zlib.error as exc:
        raise JsonFileError(f"{p}: broken gzip data ({exc}); restore the file") from None
    return bytes(out)


def load_json_file(path: str | os.PathLike[str], max_bytes: int | None = None, *, gunzip: bool = True) -> Any:
    """Parse a JSON (or gzip JSON) file read through :func:`read_bytes_capped`.

    Raises:
        OSError: unreadable file.
        JsonFileError: too large, broken gzip, not UTF-8 or not JSON (one line naming the file).
    """
    p = Path(path)
    data = read_bytes_capped(p, max_bytes, gunzip=gunzip)
    try:
        return json.loads(data.decode("utf-8-sig"), parse_int=parse_int)
    except UnicodeDecodeError as exc:
        raise JsonFileError(f"{p}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except RecursionError:
        raise JsonFileError(f"{p}: its JSON nests too deeply; give the right file") from None
    except ValueError as exc:
        raise JsonFileError(f"{p}: not valid JSON ({exc})") from None


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
    text = dumps(obj, nonfinite=nonfinite, **kwargs) + ("\n" if newline else "")
    try:
        p.write_text(text, encoding="utf-8")
    except OSError as exc:  # a full disk raises from the file object, naming no file: name it
        if not exc.filename:
            exc.filename = str(p)
        raise
    return p
