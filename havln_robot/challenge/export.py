"""Export executed action sequences (simulator runs or logged trials) to format-v1 prediction files.

Pure Python. Sources:

* **run files** -- what ``havln-robot eval --out`` and other tools write: a format-v1 file; a JSON
  list of ``{"episode_id", "actions", ["split"]}`` records; an object whose ``episodes`` is such a
  list or an ``{id: actions}`` mapping; an ``{id: actions}`` mapping; or JSON Lines of records.
* **trials** -- the trial store (:mod:`havln_robot.trials`), read through its public API: each
  trial that names an ``episode_id`` contributes its executed actions (see :func:`trial_records`).

Raw executed logs are made legal with :func:`havln_robot.actions.finalize_sequence` (cut after the
first STOP, cut at 500, append STOP to an episode that ended early); every change is counted in the
summary. Manifest ids with no record can be filled with ``["STOP"]`` (``fill_missing``) so that the
bundle covers the manifest -- the summary says how many.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from havln_robot.actions import STOP, ActionError, finalize_sequence
from havln_robot.challenge.format import MAX_FILE_BYTES, FormatError, decode_json, read_split_file, write_split_file
from havln_robot.challenge.manifest import Manifest
from havln_robot.jsonio import JsonFileError, read_bytes_capped
from havln_robot.paths import input_file_problem, safe_child
from havln_robot.quoting import quote
from havln_robot.text import plural


class ExportError(ValueError):
    """A source cannot be read or holds unusable records; the message names the file, record and fix."""


@dataclass(frozen=True)
class Record:
    """One executed episode.

    Attributes:
        episode_id: challenge episode id (string).
        actions: action literals as executed (may still need :func:`finalize_sequence`).
        split: split named by the source, or None.
        source: where it came from (file:line / trial id).
    """

    episode_id: str
    actions: tuple[str, ...]
    split: str | None
    source: str


@dataclass
class ExportSummary:
    """What :func:`export` wrote.

    Attributes:
        files: split → written path.
        episodes: split → number of episodes written.
        finalized: split → number of sequences changed by finalize_sequence.
        filled: split → number of manifest ids filled with ["STOP"].
        missing: split → manifest ids still without a prediction.
        unknown: split → written ids not in the manifest.
        duplicates: ids seen more than once (the last record wins), with their sources.
        lost: split → episodes of the earlier file left out of the new one (only with ``allow_partial``).
    """

    files: dict[str, Path] = field(default_factory=dict)
    episodes: dict[str, int] = field(default_factory=dict)
    finalized: dict[str, int] = field(default_factory=dict)
    filled: dict[str, int] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)
    unknown: dict[str, list[str]] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)
    lost: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """Human-readable summary, one line per split plus warnings."""
        out = []
        for split, path in self.files.items():
            extra = []
            if self.finalized.get(split):
                extra.append(f"{self.finalized[split]} sequence(s) finalized (cut at STOP/500 or STOP appended)")
            if self.filled.get(split):
                extra.append(f"{self.filled[split]} missing manifest id(s) filled with [STOP]")
            if self.missing.get(split):
                extra.append(
                    f"{len(self.missing[split])} manifest id(s) still missing -- validate will reject; --fill-missing writes STOP for them"
                )
            if self.lost.get(split):
                extra.append(f"{plural(self.lost[split], 'episode')} of the earlier file left out (--allow-partial)")
            if self.unknown.get(split):
                hint = ""
                if len(self.unknown[split]) * 2 > self.episodes[split]:
                    hint = (
                        " -- most ids are foreign to the manifest: discrete HA-R2R path_ids are not challenge ids (see docs/challenge.md)"
                    )
                extra.append(f"{len(self.unknown[split])} id(s) not in the manifest, e.g. {quote(self.unknown[split][0])}{hint}")
            out.append(f"{path}: {plural(self.episodes[split], 'episode')}" + ("; " + "; ".join(extra) if extra else ""))
        if self.duplicates:
            out.append(
                f"warning: {len(self.duplicates)} episode id(s) given more than once, last record kept: {', '.join(self.duplicates[:5])}"
            )
        return out


def _record(obj: Any, where: str, split: str | None, key: str | None = None) -> Record:
    if key is not None:
        eid, actions = key, obj
    else:
        if not isinstance(obj, dict):
            raise ExportError(f"{where}: expected an object with episode_id and actions, got {type(obj).__name__}")
        if "episode_id" not in obj or "actions" not in obj:
            raise ExportError(f"{where}: record needs 'episode_id' and 'actions' (has {', '.join(map(str, obj)) or 'nothing'})")
        eid, actions = obj["episode_id"], obj["actions"]
        split = obj.get("split", split) if isinstance(obj.get("split", split), str) else split
    if isinstance(eid, int) and not isinstance(eid, bool):
        eid = str(eid)
    if not isinstance(eid, str) or not eid:
        raise ExportError(f"{where}: episode_id {quote(eid)} must be a non-empty string (or integer)")
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise ExportError(f"{where}: actions of episode {quote(eid)} must be a list of action strings")
    if split is not None:
        _check_split(split, where)
    return Record(eid, tuple(actions), split, where)


def _check_split(split: str, where: str) -> str:
    """A split names the output file ``<split>.json``: it must be one plain file-name component.

    Raises:
        ExportError: one line naming the source and the value (e.g. ``"../../escaped"``).
    """
    from havln_robot.paths import UnsafePathError, safe_component

    try:
        return safe_component(split, f"{where}: split")
    except UnsafePathError as exc:
        raise ExportError(f"{exc}; the split names the output file <split>.json") from None


def read_run_file(path: str | os.PathLike[str]) -> list[Record]:
    """Read executed episodes from a run file (formats in the module docstring).

    Raises:
        ExportError: unreadable, too large, not JSON/JSONL, or a record without id/actions.
    """
    p = Path(path)
    try:
        if p.stat().st_size > MAX_FILE_BYTES * 4:
            raise ExportError(f"{p}: too large for a run file")
        data = read_bytes_capped(p, MAX_FILE_BYTES * 4, gunzip=False)
    except JsonFileError as exc:
        raise ExportError(f"{exc} (a run file is at most {MAX_FILE_BYTES * 4} bytes)") from None
    except OSError as exc:
        raise ExportError(
            f"{p}: {input_file_problem(p) or f'cannot read ({exc.strerror or exc})'}; give a run file (JSON / JSON Lines)"
        ) from None
    value, problems = decode_json(data, p.name)
    if value is None and problems and problems[0].rule != "json":  # valid JSON (null) or not UTF-8: not JSON Lines either
        raise ExportError(f"{p}: {problems[0].message}")
    if value is None:
        # JSON Lines?
        records = []
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ExportError(f"{p}: {problems[0].message}") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            v, probs = decode_json(line.encode(), p.name)
            if v is None:
                raise ExportError(f"{p}: neither JSON nor JSON Lines ({problems[0].message}; line {n}: {probs[0].message})")
            records.append(_record(v, f"{p}:{n}", None))
        return records
    if problems:
        raise ExportError(f"{p}: {problems[0].message}")
    split = value.get("split") if isinstance(value, dict) and isinstance(value.get("split"), str) else None
    eps = value.get("episodes", value) if isinstance(value, dict) else value
    if isinstance(eps, list):
        return [_record(e, f"{p}: episodes[{n}]", split) for n, e in enumerate(eps)]
    if isinstance(eps, dict):
        return [_record(v, f"{p}: episode {quote(k)}", split, key=k) for k, v in eps.items()]
    raise ExportError(f"{p}: expected a list of records or an {{episode_id: actions}} object, got {type(eps).__name__}")


def trial_records(
    store_path: str | os.PathLike[str],
    *,
    split: str | None = None,
    platform: str | None = None,
    campaign: str | None = None,
    notes: list[str] | None = None,
) -> list[Record]:
    """Executed actions of the finished logged trials that name an HA-R2R / challenge episode id.

    Reads through the trial store's public API (:class:`havln_robot.trials.store.TrialStore`,
    opened read-only; ``TrialStore.actions`` leaves out actions motion_node rejected). Trials without
    an ``episode_id`` (free-form real-robot runs) are skipped. Only finished trials are exported
    (success, failure or awaiting a verdict): a running or interrupted trial has no final action
    sequence and an aborted one was stopped from outside, so neither is a prediction -- nor can it
    replace a finished trial of the same episode. The store does not record a split, so every
    record gets ``split``.

    Args:
        store_path: the trial database.
        split: the split every record gets.
        platform: only trials of this platform.
        campaign: only trials of this campaign (name or id).
        notes: when given, one line is appended naming the trials left out and why (count + ids).

    Raises:
        ExportError: the store cannot be opened / filtered, or is not part of this build.
    """
    try:
        from havln_robot.trials.store import TrialError, TrialStore
    except ImportError as exc:
        raise ExportError(f"the trial store is not built in this checkout ({exc}); export run files with --runs instead") from None
    out = []
    left: dict[str, list[int]] = {}
    try:
        with TrialStore(store_path, readonly=True, source="--trials") as store:
            for t in store.trials(campaign=campaign, platform=platform):
                if not t.episode_id:
                    continue
                if t.finished is None or t.outcome == "aborted":
                    left.setdefault(t.state, []).append(t.id)
                    continue
                out.append(Record(str(t.episode_id), tuple(store.actions(t.id)), split, f"trial {t.id}"))
    except TrialError as exc:
        raise ExportError(str(exc)) from None
    if left and notes is not None:
        n = sum(map(len, left.values()))
        why = "; ".join(
            f"{state}: trial {'id' if len(ids) == 1 else 'ids'} {', '.join(map(str, ids[:10]))}{' ...' if len(ids) > 10 else ''}"
            for state, ids in left.items()
        )
        notes.append(
            f"left out {plural(n, 'trial')} not finished or aborted ({why}) -- only finished trials are predictions; "
            "end a running one (havln-robot trial end) to export it"
        )
    return out


def reference_records(episodes_file: str | os.PathLike[str], split: str, limit: int | None = None) -> list[Record]:
    """Records that follow each episode's reference path (:func:`havln_robot.challenge.replay.follow_reference`).

    Ids are the episode file's ids (``str(path_id)`` for discrete HA-R2R files).

    Raises:
        ExportError: the episode file cannot be read.
    """
    from havln_robot.challenge.replay import follow_reference
    from havln_robot.episodes import EpisodeError, load_episodes

    try:
        eps = load_episodes(episodes_file, limit=limit, flag="--follow-reference")
    except EpisodeError as exc:
        raise ExportError(str(exc)) from None
    return [Record(e.episode_id, tuple(follow_reference(e)), split, f"{episodes_file}: {e.episode_id}") for e in eps]


def _group_by_split(
    records: Iterable[Record], split: str | None, splits: Sequence[str], summary: ExportSummary
) -> dict[str, dict[str, list[str]]]:
    """split → episode id → finalized actions (the last record of an id wins; duplicates and finalized counts into ``summary``)."""
    by_split: dict[str, dict[str, list[str]]] = {s: {} for s in splits}
    sources: dict[tuple[str, str], str] = {}
    for r in records:
        s = r.split or split
        if not s:
            raise ExportError(f"{r.source}: record names no split; pass --split val_seen|val_unseen")
        _check_split(s, r.source)
        try:
            actions = finalize_sequence(r.actions)
        except ActionError as exc:
            raise ExportError(f"{r.source}: episode {r.episode_id}: {exc}") from None
        eps = by_split.setdefault(s, {})
        if r.episode_id in eps:
            summary.duplicates.append(f"{s}/{r.episode_id} ({sources[(s, r.episode_id)]}, {r.source})")
        sources[(s, r.episode_id)] = r.source
        eps[r.episode_id] = actions
        if actions != list(r.actions):
            summary.finalized[s] = summary.finalized.get(s, 0) + 1
    return by_split


def export(
    records: Iterable[Record],
    out_dir: str | os.PathLike[str],
    *,
    split: str | None = None,
    manifests: Mapping[str, Manifest] | None = None,
    fill_missing: bool = False,
    splits: Sequence[str] = (),
    allow_partial: bool = False,
) -> ExportSummary:
    """Write one ``<split>.json`` per split.

    An existing ``<split>.json`` (the caller has checked ``--overwrite``) is replaced only when the new
    file keeps every episode id of it, unless ``allow_partial``: a run of a few episodes must not
    silently take the place of a complete file (:func:`check_no_episode_lost`). Every file is
    checked before the first one is written.

    Args:
        records: executed episodes.
        out_dir: output folder.
        split: split for records that do not name one (overrides nothing else).
        manifests: split → manifest, used for coverage (and ``fill_missing``).
        fill_missing: give manifest ids without a record the sequence ``["STOP"]``.
        splits: splits to write even when no record names them (e.g. a STOP-only bundle).
        allow_partial: replace an existing file even when episodes of it are left out (counted in
            :attr:`ExportSummary.lost`).

    Returns:
        The :class:`ExportSummary`.

    Raises:
        ExportError: a record has no split, an action is not a literal, or an existing file would
            lose episodes without ``allow_partial`` (nothing is written then).
    """
    manifests = manifests or {}
    summary = ExportSummary()
    by_split = _group_by_split(records, split, splits, summary)
    out = Path(out_dir)
    for s in by_split:
        _check_split(s, "--split / --splits")
    planned: dict[str, dict[str, list[str]]] = {}
    for s, eps in by_split.items():
        man = manifests.get(s)
        if man is not None:
            missing = [i for i in man.ids if i not in eps]
            if fill_missing:
                for i in missing:
                    eps[i] = [STOP]
                summary.filled[s] = len(missing)
                missing = []
            summary.missing[s] = missing
            known = set(man.ids)
            summary.unknown[s] = [i for i in eps if i not in known]
            ordered = {i: eps[i] for i in man.ids if i in eps} | {i: eps[i] for i in eps if i not in known}
        else:
            ordered = eps
        planned[s] = ordered
    for s, ordered in planned.items():  # every file checked before the first is written
        lost = check_no_episode_lost(_out_file(out, s), ordered, allow_partial)
        if lost:
            summary.lost[s] = lost
    for s, ordered in planned.items():
        summary.files[s] = write_split_file(_out_file(out, s), s, ordered)
        summary.episodes[s] = len(ordered)
    return summary


def check_no_episode_lost(path: Path, episodes: Mapping[str, Any], allow_partial: bool = False) -> int:
    """Refuse to replace the prediction file ``path`` by ``episodes`` when ids of it would be lost.

    The file is read leniently (:func:`read_split_file` ``strict=False``: an entry with a problem still
    counts); a file that is not a prediction file at all holds no episode to lose.

    Args:
        path: the existing (or not) ``<split>.json``.
        episodes: the new file's episodes (id → actions).
        allow_partial: do not refuse, only count.

    Returns:
        The number of the earlier file's episodes that the new one leaves out (0 when none or no file).

    Raises:
        ExportError: episodes would be lost and not ``allow_partial``; one line naming the file, the
            counts, some of the ids and the ways out.
    """
    if not path.is_file():
        return 0
    try:
        earlier = read_split_file(path, strict=False).episodes
    except FormatError:
        return 0  # damaged or not a prediction file: nothing countable to keep (--overwrite replaces it)
    gone = [i for i in earlier if i not in episodes]
    if gone and not allow_partial:
        shown = ", ".join(quote(i) for i in gone[:5]) + (", ..." if len(gone) > 5 else "")
        raise ExportError(
            f"{path}: holds {plural(len(earlier), 'episode')}, the new file would have {len(episodes)} -- "
            f"{len(gone)} of them ({shown}) would be lost; add the run that has them (--runs / --trials), "
            "--fill-missing to give the manifest's missing ids [STOP], pass --allow-partial to replace it all the same, "
            "or choose another --out-dir"
        )
    return len(gone)


def merge_into_split_file(records: Iterable[Record], out_dir: str | os.PathLike[str], split: str) -> tuple[Path, list[str]]:
    """Add ``records`` to ``<out_dir>/<split>.json``, keeping every episode an earlier run wrote there.

    For a folder that accumulates runs (``havln-robot demo --out``): the earlier file is read strictly
    first (a damaged one is refused and left as it is, nothing is written), this run's episodes are
    added (an id already there is replaced: the newest record wins), and the file is written
    atomically, so it holds every episode of every run.

    Args:
        records: this run's executed episodes (actions finalized with ``finalize_sequence``), oldest first.
        out_dir: the folder of the action file.
        split: the split of the file (``val_seen`` ...).

    Returns:
        (the file written, the episode ids whose earlier sequence was replaced by a newer record).

    Raises:
        ExportError: the earlier file is not a valid format-v1 file of ``split``, a record's actions are
            not action literals, or the output is a link leaving ``out_dir`` (one line, naming the file and the fix).
    """
    _check_split(split, "split")
    path = _out_file(Path(out_dir), split)
    episodes: dict[str, list[str]] = {}
    if path.exists() or path.is_symlink():
        try:
            earlier = read_split_file(path)
        except FormatError as exc:
            raise ExportError(
                f"{exc}; the earlier action file was left as it is: move it away to start a new one "
                f"(havln-robot export --trials rebuilds it from the trial store)"
            ) from None
        if earlier.split != split:
            raise ExportError(f"{path}: holds split {earlier.split!r}, not {split!r}; move it away to start a new one")
        episodes = {k: list(v) for k, v in earlier.episodes.items()}
    replaced: list[str] = []
    for r in records:
        try:
            actions = finalize_sequence(r.actions)
        except ActionError as exc:
            raise ExportError(f"{r.source}: episode {r.episode_id}: {exc}") from None
        if r.episode_id in episodes and r.episode_id not in replaced:
            replaced.append(r.episode_id)
        episodes[r.episode_id] = actions
    try:
        return write_split_file(path, split, episodes), replaced
    except FormatError as exc:
        raise ExportError(str(exc)) from None


def _out_file(out: Path, split: str) -> Path:
    """``out / "<split>.json"``, refusing a link there that points outside ``out``.

    Raises:
        ExportError: one line.
    """
    from havln_robot.paths import UnsafePathError

    try:
        return safe_child(out, f"{split}.json", f"output file of split {split!r}")
    except UnsafePathError as exc:
        raise ExportError(str(exc)) from None
