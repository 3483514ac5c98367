"""Validate a challenge submission zip against every organiser rule, without ever raising.

Pure Python. Rules (organisers' participant README, "Submission Format" and FAQ Q6, plus the
sequence rules of :mod:`havln_robot.actions`):

* the archive is a readable zip and flat: no folder entries, no nested paths, no unsafe member names
  (absolute, ``..``, backslashes, drive letters, control characters), no symlinks, no encryption;
* every member that decodes to a JSON object with a ``split`` field is a prediction file; the file
  name is free ("the validator identifies predictions by each JSON object's split value"); other
  root files are harmless extras and only noted -- except ``*.json`` members that are not valid
  UTF-8 JSON, which are rejected (they are almost always a broken prediction file);
* each required split (``val_seen`` and ``val_unseen`` in Phase 1) exactly once;
* ``format_version`` is the integer 1; episode ids are strings and cover the manifest exactly, each
  once; actions are the six literals; 1-500 actions; STOP exactly once and last unless 500 long.

Resource limits are checked from the central directory *before* anything is decompressed, and every
read is bounded again (a lying header cannot make it read more): see :class:`Limits`.
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from havln_robot.challenge.format import (
    MAX_FILE_BYTES,
    Problem,
    SplitFile,
    coverage_problems,
    decode_json,
    parse_split_object,
)
from havln_robot.challenge.manifest import Manifest
from havln_robot.text import plural, terminal_safe


@dataclass(frozen=True)
class Limits:
    """Resource limits of one validation (bytes / counts).

    Attributes:
        max_zip_bytes: size of the archive on disk (a full legal submission deflates to < 1 MB:
            778 + 1,839 episodes of 500 actions pack into 43 kB).
        max_members: entries in the central directory.
        max_member_bytes: declared uncompressed size of one member.
        max_total_bytes: sum of declared uncompressed sizes.
    """

    max_zip_bytes: int = 64 * 1024 * 1024
    max_members: int = 64
    max_member_bytes: int = MAX_FILE_BYTES
    max_total_bytes: int = 4 * MAX_FILE_BYTES


@dataclass
class Report:
    """Outcome of a validation.

    Attributes:
        problems: every broken rule (empty = PASS).
        notes: harmless findings (ignored extra files, extra keys, non-official manifest).
        files: split → the prediction file found for it.
        source: what was validated (path).
    """

    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: dict[str, SplitFile] = field(default_factory=dict)
    source: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def problem_count(self) -> int:
        """Number of problems, including those folded into "not listed" records."""
        return sum(p.count for p in self.problems)

    def render(self, max_problems: int = 100) -> str:
        """Text output: first line ``PASS: ...`` or ``SUBMISSION REJECTED: ...``.

        Args:
            max_problems: list at most this many problems (0 = all), then a count of the rest.
        """
        if self.ok:
            counts = ", ".join(f"{s}: {plural(len(f.episodes), 'episode')} ({f.member})" for s, f in self.files.items())
            lines = [f"PASS: {self.source} -- {counts}"]
        else:
            by_rule: Counter[str] = Counter()
            for p in self.problems:
                by_rule[p.rule] += p.count
            summary = ", ".join(f"{r} x{n}" for r, n in by_rule.most_common())
            lines = [f"SUBMISSION REJECTED: {self.source} -- {self.problem_count} problem(s): {summary}"]
            shown = self.problems if max_problems <= 0 else self.problems[:max_problems]
            lines += [f"  {p.render()}" for p in shown]
            rest = sum(p.count for p in self.problems[len(shown) :])
            if rest:
                lines.append(f"  ... and {rest} more problem(s) (--max-problems 0 lists all)")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(terminal_safe(line) for line in lines)  # every line may carry names from the file


def member_name_problem(info: zipfile.ZipInfo) -> Problem | None:
    """The flatness / safety rule a member's name or type breaks, or None if it is a safe flat file."""
    name = info.orig_filename if getattr(info, "orig_filename", None) else info.filename
    shown = repr(name)
    if not name or name != name.strip("\x00") or any(ord(c) < 32 or ord(c) == 127 for c in name):
        return Problem("member-name", f"member name {shown} is empty or contains control characters; rename it", shown)
    if name.startswith(("/", "\\")) or (len(name) >= 2 and name[1] == ":" and name[0].isalpha()):
        return Problem("member-name", f"member {shown} has an absolute path or drive letter; store files at the zip root (zip -j)", shown)
    if "\\" in name:
        return Problem("member-name", f"member {shown} contains a backslash; use plain file names at the zip root", shown)
    parts = name.split("/")
    if ".." in parts:
        return Problem("member-name", f"member {shown} contains '..'; store files at the zip root (zip -j)", shown)
    if name.endswith("/") or info.is_dir():
        return Problem("folder", f"folder entry {shown}; the zip must be flat -- re-create it with 'havln-robot pack' or 'zip -j'", shown)
    if len(parts) > 1:
        return Problem("folder", f"member {shown} is inside a folder; put val_seen.json / val_unseen.json at the zip root", shown)
    mode = info.external_attr >> 16
    if info.create_system == 3 and stat.S_ISLNK(mode):
        return Problem("symlink", f"member {shown} is a symbolic link; add the file itself", shown)
    if info.flag_bits & 0x1:
        return Problem("encrypted", f"member {shown} is encrypted; submit an unencrypted zip", shown)
    return None


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> tuple[bytes | None, Problem | None]:
    try:
        with zf.open(info) as fh:
            data = fh.read(limit + 1)
    except Exception as exc:  # boundary: any decoder/CRC/compression error is a rejection, never a traceback
        return None, Problem(
            "zip", f"member {info.filename!r} cannot be decompressed ({type(exc).__name__}: {exc}); re-create the zip", info.filename
        )
    if len(data) > limit:
        return None, Problem(
            "zip-size", f"member {info.filename!r} decompresses to more than {limit} bytes (header said {info.file_size})", info.filename
        )
    return data, None


def validate_zip(path: str | os.PathLike[str], manifests: Mapping[str, Manifest], *, limits: Limits | None = None) -> Report:
    """Validate a submission archive.

    Args:
        path: the zip file.
        manifests: required split → its manifest; every split here must appear exactly once.
        limits: resource limits (default :class:`Limits`).

    Returns:
        A :class:`Report`; never raises for bad input (I/O, zip, JSON and schema errors all become
        problems).
    """
    limits = limits or Limits()
    rep = Report(source=str(path))
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        rep.problems.append(Problem("input", f"cannot read {p} ({exc.strerror or exc}); check the path"))
        return rep
    if not stat.S_ISREG(st.st_mode):
        rep.problems.append(Problem("input", f"{p} is not a regular file; pass the submission .zip"))
        return rep
    if st.st_size > limits.max_zip_bytes:
        rep.problems.append(Problem("zip-size", f"archive is {st.st_size} bytes, over the {limits.max_zip_bytes}-byte limit"))
        return rep
    declared = eocd_entry_count(p)
    if declared is not None and declared > limits.max_members:
        rep.problems.append(
            Problem(
                "zip-members",
                f"the archive declares {declared} members (limit {limits.max_members}); a submission holds val_seen.json and val_unseen.json",
            )
        )
        return rep
    try:
        with zipfile.ZipFile(p) as zf:
            _check_archive(zf, manifests, limits, rep)
    except zipfile.BadZipFile as exc:
        rep.problems.append(Problem("zip", f"not a zip archive ({exc}); create it with 'havln-robot pack'"))
    except Exception as exc:  # boundary: malformed central directories raise assorted errors
        rep.problems.append(Problem("zip", f"unreadable zip archive ({type(exc).__name__}: {exc}); re-create it with 'havln-robot pack'"))
    _sort(rep)
    return rep


def eocd_entry_count(path: Path) -> int | None:
    """Number of entries the zip's end-of-central-directory record declares (ZIP64 aware), or None.

    Read from the last 64 KiB before :class:`zipfile.ZipFile` parses the central directory, so an
    archive declaring millions of entries is refused without building millions of ZipInfo objects
    (APPNOTE.TXT 4.3.14-4.3.16: EOCD ``PK\\x05\\x06``, total entries at offset 10; ZIP64 locator
    ``PK\\x06\\x07`` 20 bytes before it; ZIP64 EOCD ``PK\\x06\\x06``, total entries at offset 32).
    """
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            tail_len = min(size, 65536 + 22)
            fh.seek(size - tail_len)
            tail = fh.read(tail_len)
            i = tail.rfind(b"PK\x05\x06")
            if i < 0 or i + 22 > len(tail):
                return None
            count = int.from_bytes(tail[i + 10 : i + 12], "little")
            if count != 0xFFFF or i < 20 or tail[i - 20 : i - 16] != b"PK\x06\x07":
                return count
            z64_off = int.from_bytes(tail[i - 12 : i - 4], "little")
            if z64_off + 56 > size:
                return None
            fh.seek(z64_off)
            rec = fh.read(56)
            if rec[:4] != b"PK\x06\x06":
                return None
            return int.from_bytes(rec[32:40], "little")
    except OSError:
        return None


def _check_archive(zf: zipfile.ZipFile, manifests: Mapping[str, Manifest], limits: Limits, rep: Report) -> None:
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        rep.problems.append(
            Problem(
                "zip-members", f"{len(infos)} members (limit {limits.max_members}); a submission holds val_seen.json and val_unseen.json"
            )
        )
        return
    if not infos:
        rep.problems.append(Problem("zip", "the archive is empty; add val_seen.json and val_unseen.json"))
    names = Counter(i.filename for i in infos)
    for name, n in names.items():
        if n > 1:
            rep.problems.append(Problem("member-duplicate", f"{n} members named {name!r}; keep one", name))
    safe: list[zipfile.ZipInfo] = []
    total = 0
    for info in infos:
        prob = member_name_problem(info)
        if prob is not None:
            rep.problems.append(prob)
            continue
        if info.file_size > limits.max_member_bytes:
            rep.problems.append(
                Problem("zip-size", f"member declares {info.file_size} bytes uncompressed (limit {limits.max_member_bytes})", info.filename)
            )
            continue
        total += info.file_size
        safe.append(info)
    if total > limits.max_total_bytes:
        rep.problems.append(Problem("zip-size", f"members declare {total} bytes uncompressed in all (limit {limits.max_total_bytes})"))
        return
    found: dict[str, list[SplitFile]] = {}
    for info in safe:
        sf = _read_split(zf, info, manifests, limits, rep) if names[info.filename] == 1 else None
        if sf is not None:
            found.setdefault(sf.split, []).append(sf)
    _match_splits(found, manifests, rep)


def _read_split(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, manifests: Mapping[str, Manifest], limits: Limits, rep: Report
) -> SplitFile | None:
    """One member read and checked as a prediction file of a required split (problems and notes into ``rep``); None otherwise."""
    data, prob = _read_member(zf, info, limits.max_member_bytes)
    if prob is not None:
        rep.problems.append(prob)
        return None
    assert data is not None
    is_json_name = info.filename.lower().endswith(".json")
    value, decode_problems = decode_json(data, info.filename)
    if value is None:
        if is_json_name:
            rep.problems.extend(decode_problems)
        else:
            rep.notes.append(f"{info.filename}: not a JSON prediction file; ignored")
        return None
    if not (isinstance(value, dict) and "split" in value):
        if is_json_name and not isinstance(value, dict):
            rep.problems.append(
                Problem(
                    "schema",
                    f"top level is a {type(value).__name__}; a prediction file is an object with format_version, split, episodes",
                    info.filename,
                )
            )
        else:
            rep.notes.append(f"{info.filename}: JSON without a 'split' field; ignored as an extra file")
        return None
    split = value["split"]
    if isinstance(split, str) and split not in manifests:
        rep.notes.append(f"{info.filename}: split {split!r} is not required here ({', '.join(manifests)}); ignored")
        return None
    sf, problems = parse_split_object(value, info.filename, duplicate_keys=decode_problems)
    rep.problems.extend(problems)
    if sf is not None and sf.extra_keys:
        shown = ", ".join(sf.extra_keys[:5]) + (f" (+{len(sf.extra_keys) - 5} more)" if len(sf.extra_keys) > 5 else "")
        rep.notes.append(f"{info.filename}: keys outside format v1 ignored: {shown}")
    return sf


def _match_splits(found: dict[str, list[SplitFile]], manifests: Mapping[str, Manifest], rep: Report) -> None:
    """Each required split: exactly one file, covering its manifest."""
    for split, manifest in manifests.items():
        files = found.get(split, [])
        if not files:
            rep.problems.append(
                Problem(
                    "split-missing", f'no prediction file has "split": "{split}"; add one covering {len(manifest)} episodes', split=split
                )
            )
            continue
        if len(files) > 1:
            members = ", ".join(f.member for f in files)
            rep.problems.append(
                Problem("split-duplicate", f"{len(files)} files claim split {split!r} ({members}); keep exactly one", split=split)
            )
            continue
        rep.files[split] = files[0]
        rep.problems.extend(coverage_problems(files[0], manifest.ids))
        if not manifest.official:
            rep.notes.append(f"{split}: manifest {manifest.path} (sha256 {manifest.sha256[:8]}) is not the official file")


def _sort(rep: Report) -> None:
    """Archive-level problems first; the rest keep discovery order (file order, then episode order)."""
    rep.problems.sort(key=lambda p: 0 if not p.member and p.split is None else 1)
