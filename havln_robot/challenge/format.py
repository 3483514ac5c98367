"""HA-VLN challenge prediction files, ``format_version`` 1: schema, strict parsing, writing.

Pure Python (no ROS import). One prediction file holds one split::

    {"format_version": 1,
     "split": "val_seen",
     "episodes": [{"episode_id": "1", "actions": ["MOVE_FORWARD", "TURN_LEFT", "STOP"]}, ...]}

Source of the schema and rules: the organisers' participant toolkit README, section
"Submission Format" (github.com/F1y1113/havln-challenge, RoboWorld 2026 Track 2: HA-VLN):
``format_version`` 1; ``split`` identifies the file (file names are free); ``episodes`` is a list
of ``{"episode_id": str, "actions": [literal, ...]}``; every official episode id exactly once;
actions from the six literals; 1-500 actions, all six count; STOP, if present, exactly once and
last; sequences shorter than 500 must end with it. The per-sequence rules live in
:func:`havln_robot.actions.sequence_problems`; this module adds the file-level rules.

Parsing never trusts its input: bytes that are not UTF-8, not JSON, JSON with duplicate keys
(``object_pairs_hook``), ``NaN``/``Infinity``, absurd nesting or wrong types all become
:class:`Problem` records, never exceptions.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from havln_robot import jsonio
from havln_robot.actions import ACTIONS, MAX_ACTIONS, ActionError, SequenceProblem, is_action, sequence_problems
from havln_robot.jsonio import JsonFileError, read_bytes_capped
from havln_robot.paths import atomic_output, input_file_problem
from havln_robot.quoting import QUOTE_CHARS, quote
from havln_robot.text import terminal_safe

FORMAT_VERSION = 1
"""The only ``format_version`` the organisers accept (participant README, "Submission Format")."""

PHASE1_SPLITS: tuple[str, ...] = ("val_seen", "val_unseen")
"""Splits a Phase-1 submission must contain, each exactly once (participant README, "Phases")."""

KNOWN_SPLITS: tuple[str, ...] = ("val_seen", "val_unseen", "test")
"""Every split name the challenge uses (Phase 2 has a single ``test`` split)."""

MAX_LISTED_PER_FILE = 5000
"""Problems kept per file; further ones are only counted (one folded record per rule), so a 15 MB
file of 900,000 bad literals costs counters, not 900,000 objects."""

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest prediction file read, bytes. A legal val_unseen file is at most about 1,839 x 500 x 16 B
= 15 MB (``"MOVE_FORWARD",`` is 15 bytes), so 64 MiB leaves room for indentation."""

# --- rule ids (the short names printed in every problem line) ----------------------------------
RULE_DOC: dict[str, str] = {
    "input": "the path given is not a readable file",
    "zip": "the submission is not a readable zip archive",
    "zip-size": "archive, member or total uncompressed size over the limit",
    "zip-members": "too many members in the archive",
    "encrypted": "encrypted zip member",
    "member-name": "unsafe member name (absolute path, '..', backslash, drive letter, control character)",
    "folder": "the zip is not flat: a folder entry or a nested path",
    "symlink": "a zip member is a symbolic link",
    "member-duplicate": "two zip members with the same name",
    "encoding": "file is not UTF-8 text (or starts with a byte-order mark)",
    "json": "file is not valid JSON",
    "duplicate-key": "a JSON object repeats a key",
    "schema": "wrong JSON structure or field type",
    "format-version": "format_version is not the integer 1",
    "split-missing": "a required split has no prediction file",
    "split-duplicate": "two prediction files for the same split",
    "episode-id": "episode_id is not a non-empty string",
    "episode-duplicate": "an episode id appears more than once",
    "episode-missing": "a manifest episode id has no prediction",
    "episode-unknown": "an episode id that is not in the manifest",
    "type": "actions is not a list",
    "literal": "an action is not one of the six literals",
    "length": "not 1-500 actions",
    "stop-once": "STOP appears more than once",
    "stop-last": "STOP is not the last action (or is missing from a sequence shorter than 500)",
}


class FormatError(ValueError):
    """A prediction file breaks format v1; the message lists the problems (see :class:`Problem`)."""

    def __init__(self, message: str, problems: Sequence[Problem] = ()) -> None:
        super().__init__(message)
        self.problems = list(problems)


@dataclass(frozen=True)
class Problem:
    """One broken rule in a submission.

    Attributes:
        rule: rule id, a key of :data:`RULE_DOC`.
        message: what is wrong and how to fix it (one line).
        member: zip member or file name the problem is in ("" for the whole archive).
        split: split of that file when known.
        episode_id: episode the problem is in (a range like ``"1..778"`` for missing ids), or None.
        index: 0-based action index within the episode's actions, or None.
        entry: 0-based position in the file's ``episodes`` list for entry-level rules, or None.
        count: how many problems this record stands for (> 1 only for the folded "not listed"
            record of a file with more than :data:`MAX_LISTED_PER_FILE` problems).
    """

    rule: str
    message: str
    member: str = ""
    split: str | None = None
    episode_id: str | None = None
    index: int | None = None
    entry: int | None = None
    count: int = 1

    def render(self) -> str:
        """``member [split], episodes[N], episode E, action I: rule: message`` (parts omitted when unknown)."""
        where: list[str] = []
        if self.member:
            where.append(self.member + (f" [{self.split}]" if self.split else ""))
        elif self.split:
            where.append(f"[{self.split}]")
        if self.entry is not None:
            where.append(f"episodes[{self.entry}]")
        if self.episode_id is not None:
            where.append(f"episode {self.episode_id}")
        if self.index is not None:
            where.append(f"action {self.index}")
        prefix = ", ".join(where)
        # ids, keys and member names come from the submitted file: escaped, so they cannot drive the terminal
        return terminal_safe(f"{prefix + ': ' if prefix else ''}{self.rule}: {self.message}")


@dataclass
class SplitFile:
    """A parsed prediction file.

    Attributes:
        split: the file's ``split`` value.
        episodes: episode id → actions, in file order (first occurrence wins for duplicates).
        member: the zip member or path it came from.
        extra_keys: unexpected keys (root or episode objects); they are reported as notes.
    """

    split: str
    episodes: dict[str, list[str]]
    member: str = ""
    extra_keys: list[str] = field(default_factory=list)


# --- JSON decoding ---------------------------------------------------------------------------------


class _DuplicateKeys:
    """``object_pairs_hook`` that builds dicts and remembers every repeated key."""

    def __init__(self) -> None:
        self.duplicates: list[str] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                self.duplicates.append(k)
            out[k] = v
        return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (RFC 8259)")


def decode_json(data: bytes, member: str = "") -> tuple[Any, list[Problem]]:
    """Decode UTF-8 JSON bytes strictly.

    Args:
        data: raw file content.
        member: name used in problem records.

    Returns:
        ``(value, problems)``; ``value`` is None when the bytes are not usable JSON (a JSON ``null``
        document included, with its own problem, so None always comes with a reason). Duplicate keys
        are reported (``duplicate-key``) but the value is still returned (last occurrence wins).
    """
    if len(data) > MAX_FILE_BYTES:
        return None, [Problem("zip-size", f"{len(data)} bytes exceed the {MAX_FILE_BYTES}-byte limit of one prediction file", member)]
    if data.startswith(b"\xef\xbb\xbf"):
        return None, [Problem("encoding", "file starts with a UTF-8 byte-order mark; save it as plain UTF-8 without BOM", member)]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [Problem("encoding", f"not UTF-8 text (byte {exc.start}: {exc.reason}); save the file as UTF-8 JSON", member)]
    hook = _DuplicateKeys()
    try:
        value = json.loads(text, object_pairs_hook=hook, parse_constant=_reject_constant, parse_int=jsonio.parse_int)
    except json.JSONDecodeError as exc:
        return None, [Problem("json", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", member)]
    except RecursionError:
        return None, [Problem("json", "JSON nests too deeply to be a prediction file (which nests 4 deep)", member)]
    except ValueError as exc:
        return None, [Problem("json", f"not valid JSON: {exc}", member)]
    if value is None:  # JSON null: valid JSON, but None here means "not usable"; say why
        return None, [Problem("schema", "the file is JSON null; it must be a JSON object (format_version, split, episodes)", member)]
    problems = [
        Problem("duplicate-key", f"JSON key {quote(k)} appears more than once in one object; keep one", member)
        for k in dict.fromkeys(hook.duplicates)
    ]
    return value, problems


# --- schema ----------------------------------------------------------------------------------------


def _id_label(value: Any) -> str:
    """``value`` for a problem line: a string as itself, anything else as :func:`quote` gives it; bounded."""
    if isinstance(value, str):
        return value if len(value) <= QUOTE_CHARS else f"{value[:QUOTE_CHARS]}… ({len(value)} chars)"
    return quote(value)


class _Problems(list):
    """A problem list that keeps the first ``cap`` records and counts the rest per rule."""

    def __init__(self, cap: int, member: str, split: str | None) -> None:
        super().__init__()
        self.cap, self.member, self.split = cap, member, split
        self.folded: dict[str, int] = {}

    def append(self, p: Problem) -> None:  # noqa: D102
        if len(self) < self.cap:
            super().append(p)
        else:
            self.folded[p.rule] = self.folded.get(p.rule, 0) + 1

    def finish(self) -> list[Problem]:
        out = list(self)
        for rule, n in self.folded.items():
            out.append(Problem(rule, f"... and {n} more {rule} problem(s) in this file, not listed", self.member, self.split, count=n))
        return out


def _sequence_problems(actions: Any) -> list[Any]:
    """:func:`sequence_problems`, bounded: a list longer than the budget is checked only up to it."""
    if isinstance(actions, list) and len(actions) > MAX_ACTIONS:
        head = actions[:MAX_ACTIONS]
        out = [
            SequenceProblem(
                MAX_ACTIONS, "length", f"{len(actions)} actions exceed the {MAX_ACTIONS}-action budget; truncate to {MAX_ACTIONS}"
            )
        ]
        out += [
            SequenceProblem(i, "literal", f"{quote(a)} is not one of {', '.join(ACTIONS)}") for i, a in enumerate(head) if not is_action(a)
        ]
        return out  # the length problem first: it is the one to fix
    return sequence_problems(actions)


def parse_split_object(obj: Any, member: str = "", *, duplicate_keys: Sequence[Problem] = ()) -> tuple[SplitFile | None, list[Problem]]:
    """Check a decoded prediction object against format v1 (everything except manifest coverage).

    Args:
        obj: the decoded JSON value.
        member: file name for problem records.
        duplicate_keys: ``duplicate-key`` problems from :func:`decode_json` (tagged with the split here).

    Returns:
        ``(split_file, problems)``. ``split_file`` is None when the root is unusable (not an object,
        no string ``split`` or no ``episodes`` list); otherwise it holds every entry whose id is a
        string, even when the entry has problems.
    """
    if not isinstance(obj, dict):
        return None, [
            Problem("schema", f"top level must be a JSON object with format_version, split and episodes; got {type(obj).__name__}", member)
        ]
    split = obj.get("split")
    split_s = split if isinstance(split, str) else None
    problems = _Problems(MAX_LISTED_PER_FILE, member, split_s)
    for p in duplicate_keys:
        problems.append(Problem(p.rule, p.message, member, split_s))
    eps = _root_problems(obj, member, split_s, problems)
    if split_s is None or eps is None:
        return None, problems.finish()
    extra = [k for k in obj if k not in ("format_version", "split", "episodes")]
    out = SplitFile(split_s, {}, member, [f"root.{_id_label(k)}" for k in extra])
    seen_at: dict[str, int] = {}
    for n, entry in enumerate(eps):
        _check_entry(n, entry, out, seen_at, problems)
    return out, problems.finish()


def _root_problems(obj: dict, member: str, split_s: str | None, problems: _Problems) -> list | None:
    """Problems of the root object's keys into ``problems``; its ``episodes`` list, None when unusable."""
    if "split" not in obj:
        problems.append(Problem("schema", 'missing "split"; add "split": "val_seen" or "val_unseen"', member))
    elif split_s is None:
        problems.append(Problem("schema", f'"split" must be a string such as "val_seen", got {type(obj["split"]).__name__}', member))
    fv = obj.get("format_version")
    if "format_version" not in obj:
        problems.append(Problem("format-version", f'missing "format_version"; add "format_version": {FORMAT_VERSION}', member, split_s))
    elif type(fv) is not int or fv != FORMAT_VERSION:
        problems.append(
            Problem("format-version", f"format_version is {quote(fv)}; it must be the integer {FORMAT_VERSION}", member, split_s)
        )
    eps = obj.get("episodes")
    if "episodes" not in obj:
        problems.append(
            Problem("schema", 'missing "episodes"; add a list of {"episode_id": "...", "actions": [...]} objects', member, split_s)
        )
        eps = None
    elif not isinstance(eps, list):
        hint = " (a mapping id → actions is not the v1 schema; use a list of objects)" if isinstance(eps, dict) else ""
        problems.append(
            Problem(
                "schema",
                f'"episodes" must be a list of {{"episode_id", "actions"}} objects, got {type(eps).__name__}{hint}',
                member,
                split_s,
            )
        )
        eps = None
    return eps


def _check_entry(n: int, entry: Any, out: SplitFile, seen_at: dict[str, int], problems: _Problems) -> None:
    """Problems of ``episodes[n]`` into ``problems``; its actions into ``out`` when its id is usable."""
    member, split_s = out.member, out.split
    if not isinstance(entry, dict):
        problems.append(
            Problem(
                "schema",
                f"must be an object with episode_id and actions, got {type(entry).__name__}",
                member,
                split_s,
                entry=n,
            )
        )
        return
    for k in entry:
        if k not in ("episode_id", "actions"):
            out.extra_keys.append(f"episodes[{n}].{_id_label(k)}")
    if "episode_id" not in entry:
        problems.append(Problem("episode-id", 'no "episode_id"', member, split_s, entry=n))
        return
    eid = entry["episode_id"]
    if not isinstance(eid, str) or not eid:
        fix = f'; write it as the string "{eid}"' if isinstance(eid, int) and not isinstance(eid, bool) else ""
        problems.append(
            Problem(
                "episode-id",
                f"episode_id is {_id_label(eid)} ({type(eid).__name__}); ids are non-empty strings{fix}",
                member,
                split_s,
                entry=n,
            )
        )
        return
    if eid in seen_at:
        problems.append(
            Problem(
                "episode-duplicate",
                f"episode id also at episodes[{seen_at[eid]}]; keep one entry per episode",
                member,
                split_s,
                _id_label(eid),
                entry=n,
            )
        )
        return
    seen_at[eid] = n
    if "actions" not in entry:
        problems.append(Problem("schema", 'no "actions" list', member, split_s, _id_label(eid), entry=n))
        out.episodes[eid] = []
        return
    actions = entry["actions"]
    for p in _sequence_problems(actions):
        problems.append(Problem(p.rule, p.message, member, split_s, _id_label(eid), p.index))
    out.episodes[eid] = list(actions) if isinstance(actions, list) else []


def coverage_problems(sf: SplitFile, manifest_ids: Iterable[str]) -> list[Problem]:
    """Compare a file's episode ids with the manifest's.

    Missing and unknown ids are reported as runs (``"1..778"``) of consecutive manifest ids, one
    problem per run, so a file missing everything is one line, not 1,839.
    """
    ids = list(manifest_ids)
    want = set(ids)
    problems: list[Problem] = []
    missing = [i for i in ids if i not in sf.episodes]
    for run in _runs(missing, ids):
        label = run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}"
        what = "has no prediction" if len(run) == 1 else f"({len(run)} ids) have no prediction"
        problems.append(
            Problem(
                "episode-missing", f"manifest episode {label} {what}; every official id needs exactly one entry", sf.member, sf.split, label
            )
        )
    for eid in sf.episodes:
        if eid not in want:
            problems.append(
                Problem(
                    "episode-unknown",
                    f"episode id {quote(eid)} is not in the {sf.split} manifest; use the official string ids",
                    sf.member,
                    sf.split,
                    _id_label(eid),
                )
            )
    return problems


def _runs(subset: list[str], order: list[str]) -> list[list[str]]:
    """Split ``subset`` (in ``order``'s order) into runs that are consecutive in ``order``."""
    pos = {k: i for i, k in enumerate(order)}
    runs: list[list[str]] = []
    for k in subset:
        if runs and pos[k] == pos[runs[-1][-1]] + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    return runs


def parse_split_bytes(data: bytes, member: str = "") -> tuple[SplitFile | None, list[Problem]]:
    """:func:`decode_json` then :func:`parse_split_object`."""
    value, problems = decode_json(data, member)
    if value is None:
        return None, problems
    return parse_split_object(value, member, duplicate_keys=problems)


def read_split_file(path: str | os.PathLike[str], *, strict: bool = True) -> SplitFile:
    """Read one prediction file from disk.

    Args:
        path: the JSON file.
        strict: raise on any problem; when False only unusable files raise and entries with
            problems are dropped.

    Raises:
        FormatError: unreadable, too large, not JSON or (strict) any rule broken; the message names
            the first problems and the fix.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise FormatError(f"{p}: {size} bytes exceed the {MAX_FILE_BYTES}-byte limit of one prediction file")
        data = read_bytes_capped(p, MAX_FILE_BYTES, gunzip=False)
    except JsonFileError as exc:
        raise FormatError(f"{exc} (one prediction file is at most {MAX_FILE_BYTES} bytes)") from None
    except OSError as exc:
        raise FormatError(
            f"{p}: {input_file_problem(p) or f'cannot read ({exc.strerror or exc})'}; give the prediction file's path"
        ) from None
    sf, problems = parse_split_bytes(data, p.name)
    if sf is None or (strict and problems):
        shown = "; ".join(q.render() for q in problems[:5])
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        raise FormatError(f"{p}: {shown}{more}", problems)
    if problems:
        bad = {q.episode_id for q in problems if q.episode_id is not None}
        for eid in bad:
            sf.episodes.pop(eid, None)
    return sf


def split_object(split: str, episodes: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Build a format-v1 object, episodes sorted by id (numerically when every id is an integer string).

    Raises:
        FormatError: an id is not a non-empty string or a sequence breaks the rules.
    """
    problems: list[Problem] = []
    for eid, actions in episodes.items():
        if not isinstance(eid, str) or not eid:
            problems.append(Problem("episode-id", f"episode id {quote(eid)} must be a non-empty string", split=split))
            continue
        for q in sequence_problems(list(actions)):
            problems.append(Problem(q.rule, q.message, split=split, episode_id=eid, index=q.index))
    if problems:
        shown = "; ".join(q.render() for q in problems[:5])
        raise FormatError(f"cannot write {split}: {shown}" + (f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""), problems)
    keys = list(episodes)
    if all(k.isdigit() for k in keys):
        keys.sort(key=int)
    return {"format_version": FORMAT_VERSION, "split": split, "episodes": [{"episode_id": k, "actions": list(episodes[k])} for k in keys]}


def write_split_file(path: str | os.PathLike[str], split: str, episodes: Mapping[str, Sequence[str]]) -> Path:
    """Write a format-v1 prediction file (compact JSON, one episode per line), atomically.

    Args:
        path: output file; its folder is created.
        split: e.g. ``"val_seen"``.
        episodes: episode id → action literals.

    Returns:
        The path written.

    Raises:
        FormatError: see :func:`split_object`.
        OSError: the file cannot be written.
    """
    obj = split_object(split, episodes)
    p = Path(path)
    lines = [jsonio.dumps(e, separators=(",", ":")) for e in obj["episodes"]]
    body = ",\n  ".join(lines)
    text = f'{{"format_version": {FORMAT_VERSION}, "split": {jsonio.dumps(split)}, "episodes": [\n  {body}\n]}}\n'
    with atomic_output(p) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return p


__all__ = [
    "ACTIONS",
    "ActionError",
    "FORMAT_VERSION",
    "FormatError",
    "KNOWN_SPLITS",
    "MAX_FILE_BYTES",
    "PHASE1_SPLITS",
    "Problem",
    "RULE_DOC",
    "SplitFile",
    "coverage_problems",
    "decode_json",
    "parse_split_bytes",
    "parse_split_object",
    "read_split_file",
    "split_object",
    "write_split_file",
]
