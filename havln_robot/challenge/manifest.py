"""Challenge episode manifests: the official episode ids of a split and their baseline collision counts.

Pure Python. The manifests are the organisers' ``collision_num_<split>.json`` files (a JSON object
``{"1": 1, "2": 1, ...}``: key = challenge episode id, value = baseline human-collision count used by
TCR_i = max(0, collisions_i - baseline_i)); see ``../shared/data/ha-vln/README.md``. The default
manifests are read from ``$DATA/challenge/`` and their sha256 is checked against the prefixes the
data README records, so a modified copy is refused instead of silently changing what "complete" means.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from havln_robot.challenge.format import decode_json
from havln_robot.jsonio import JsonFileError, read_bytes_capped
from havln_robot.paths import data_dir
from havln_robot.quoting import quote

#: split → sha256 prefix of the official manifest (``../shared/data/ha-vln/README.md``).
OFFICIAL_SHA256_PREFIX: dict[str, str] = {"val_seen": "632b5a47", "val_unseen": "2c9111b1"}
#: split → number of episodes in the official manifest (same README; participant README "Dataset").
OFFICIAL_EPISODES: dict[str, int] = {"val_seen": 778, "val_unseen": 1839}
#: split → number of human-influenced episodes, the CR denominator (data README "Challenge facts").
HUMAN_INFLUENCED: dict[str, int] = {"val_seen": 682, "val_unseen": 1593}

MAX_MANIFEST_BYTES = 16 * 1024 * 1024


class ManifestError(ValueError):
    """A manifest is missing, unreadable, malformed or not the official file; the message names the fix."""


@dataclass(frozen=True)
class Manifest:
    """The official episode ids of one split.

    Attributes:
        split: e.g. ``"val_seen"``.
        ids: episode ids (strings) in file order.
        baseline: episode id → baseline human-collision count (0 when the file lists ids only).
        path: file it was read from.
        sha256: hex digest of the file.
        official: True when the digest matches the organisers' file for ``split``.
    """

    split: str
    ids: tuple[str, ...]
    baseline: dict[str, int]
    path: Path
    sha256: str
    official: bool

    def __len__(self) -> int:
        return len(self.ids)


def default_manifest_path(split: str) -> Path:
    """``$DATA/challenge/collision_num_<split>.json`` (may not exist).

    Raises:
        UnsafePathError: ``split`` (e.g. read from a submission) is not one plain file-name component.
    """
    from havln_robot.paths import safe_child

    return safe_child(data_dir() / "challenge", f"collision_num_{split}.json", "split")


_NAME = re.compile(r"collision_num_(?P<split>[A-Za-z0-9_]+)\.json$")


def split_from_name(path: str | os.PathLike[str]) -> str | None:
    """The split encoded in a ``collision_num_<split>.json`` file name, else None."""
    m = _NAME.search(Path(path).name)
    return m.group("split") if m else None


def load_manifest(path: str | os.PathLike[str], split: str | None = None, *, require_official: bool = False) -> Manifest:
    """Read a manifest.

    Accepted content: the organisers' object ``{"<id>": <int baseline>, ...}`` or a JSON list of
    string ids (baselines 0).

    Args:
        path: the file.
        split: its split; inferred from ``collision_num_<split>.json`` when None.
        require_official: refuse a file whose sha256 does not start with the official prefix.

    Raises:
        ManifestError: unreadable, too large, not JSON, duplicate ids, non-string ids, negative or
            non-integer baselines, unknown split, or (``require_official``) a digest mismatch.
    """
    p = Path(path)
    split = split or split_from_name(p)
    if not split:
        raise ManifestError(f"{p}: cannot tell the split from the file name; pass it as SPLIT=PATH (e.g. val_seen={p})")
    try:
        size = p.stat().st_size
        if size > MAX_MANIFEST_BYTES:
            raise ManifestError(f"{p}: {size} bytes is too large for a manifest (limit {MAX_MANIFEST_BYTES})")
        data = read_bytes_capped(p, MAX_MANIFEST_BYTES, gunzip=False)
    except JsonFileError as exc:
        raise ManifestError(f"{exc} (a manifest is at most {MAX_MANIFEST_BYTES} bytes); pass --manifest {split}=PATH") from None
    except OSError as exc:
        raise ManifestError(
            f"{p}: cannot read the {split} manifest ({exc.strerror or exc}); pass --manifest {split}=PATH or set HAVLN_DATA"
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    prefix = OFFICIAL_SHA256_PREFIX.get(split)
    official = bool(prefix) and digest.startswith(prefix)
    if require_official and not official:
        want = f"sha256 {prefix}..." if prefix else "an official digest"
        raise ManifestError(f"{p}: sha256 {digest[:8]}... is not the official {split} manifest ({want}); restore the organisers' file")
    value, problems = decode_json(data, p.name)
    if value is None or problems:
        raise ManifestError(f"{p}: {problems[0].message}" if problems else f"{p}: unreadable manifest")
    baseline: dict[str, int] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            if type(v) is not int or v < 0:
                raise ManifestError(f"{p}: baseline of episode {quote(k)} is {quote(v)}; expected a non-negative integer")
            baseline[k] = v
        ids = tuple(value)
    elif isinstance(value, list):
        if not all(isinstance(k, str) and k for k in value):
            raise ManifestError(f"{p}: a list manifest must hold non-empty string ids")
        if len(set(value)) != len(value):
            raise ManifestError(f"{p}: the id list repeats ids; each id must appear once")
        ids = tuple(value)
        baseline = dict.fromkeys(ids, 0)
    else:
        raise ManifestError(f"{p}: expected a JSON object {{id: baseline}} or a list of ids, got {type(value).__name__}")
    if not ids:
        raise ManifestError(f"{p}: the manifest lists no episodes")
    return Manifest(split, ids, baseline, p, digest, official)


def parse_manifest_arg(arg: str) -> tuple[str, Path]:
    """Parse a ``--manifest`` value: ``SPLIT=PATH`` or a ``collision_num_<split>.json`` path.

    Raises:
        ManifestError: the split cannot be determined.
    """
    split, sep, path = arg.partition("=")
    if sep and split and path and "/" not in split:
        return split, Path(path)
    inferred = split_from_name(arg)
    if not inferred:
        raise ManifestError(f"--manifest {arg!r}: use SPLIT=PATH (e.g. val_seen=my_ids.json) or a collision_num_<split>.json file")
    return inferred, Path(arg)
