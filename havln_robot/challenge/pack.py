"""Pack prediction files into a flat submission zip.

Pure Python. Each input is checked with :func:`havln_robot.challenge.format.read_split_file` first
(so a broken file never reaches the archive), then stored under its base name at the zip root
(deflated, fixed timestamp so the same inputs give the same bytes, regular-file mode 0644).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from havln_robot.challenge.format import MAX_FILE_BYTES, FormatError, read_split_file
from havln_robot.jsonio import JsonFileError, read_bytes_capped
from havln_robot.paths import atomic_output

_FIXED_DATE = (2026, 1, 1, 0, 0, 0)


class PackError(ValueError):
    """The inputs cannot be packed (missing, unreadable, invalid, name clash, duplicate split)."""


def collect_inputs(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Expand folders to their ``*.json`` files (sorted); files pass through.

    Raises:
        PackError: a path does not exist or a folder holds no JSON file.
    """
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(q for q in p.glob("*.json") if q.is_file())
            if not found:
                raise PackError(f"{p}: folder holds no *.json prediction file")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise PackError(f"{p}: no such file or folder")
    return out


def pack(
    inputs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    check: bool = True,
    verify: Callable[[Path], None] | None = None,
) -> Path:
    """Write ``out`` as a flat zip of ``inputs``.

    Args:
        inputs: prediction files or folders of them.
        out: the zip to write (replaced atomically; its folder is created).
        check: validate each file's format-v1 content first (sequence and schema rules; coverage
            is checked by ``havln-robot validate``).
        verify: called with the finished temporary zip BEFORE it is renamed over ``out``; when it
            raises, the temporary zip is removed and ``out`` (an earlier submission) stays as it was.

    Returns:
        The zip path.

    Raises:
        PackError: see :func:`collect_inputs`; two inputs share a base name or claim the same split;
            a file breaks format v1 (when ``check``).
        Exception: whatever ``verify`` raises (``out`` untouched).
    """
    files = collect_inputs(inputs)
    names: dict[str, Path] = {}
    splits: dict[str, Path] = {}
    for f in files:
        if f.name in names:
            raise PackError(f"{f} and {names[f.name]} have the same name; the zip is flat, rename one")
        names[f.name] = f
        if check:
            try:
                sf = read_split_file(f)
            except FormatError as exc:
                raise PackError(str(exc)) from None
            if sf.split in splits:
                raise PackError(f"{f} and {splits[sf.split]} both have split {sf.split!r}; keep one")
            splits[sf.split] = f
    # read bounded (check=False reads no file before): a prediction file is at most MAX_FILE_BYTES
    data: dict[str, bytes] = {}
    for name, f in names.items():
        try:
            data[name] = read_bytes_capped(f, MAX_FILE_BYTES, gunzip=False)
        except JsonFileError as exc:
            raise PackError(f"{exc} (one prediction file is at most {MAX_FILE_BYTES} bytes)") from None
    out_p = Path(out)
    with atomic_output(out_p) as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
            for name in names:
                info = zipfile.ZipInfo(name, date_time=_FIXED_DATE)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o100644 << 16
                info.create_system = 3
                zf.writestr(info, data[name])
        if verify is not None:
            verify(tmp)  # raises: the temporary zip goes, an earlier ``out`` stays
    return out_p
