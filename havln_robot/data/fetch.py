"""``havln-robot data fetch`` / ``data check``: get the HA-VLN data and verify it.

``fetch`` downloads every file of :mod:`havln_robot.data.registry` from its public source (raw
GitHub URLs of UWMILab/HA-VLN at pinned commits) or from a mirror (a folder or an HTTP server
holding the data layout), checks its sha256 and writes it into the data layout under ``--dest``
(default: ``$HAVLN_DATA``, else the user data folder of :func:`havln_robot.paths.user_data_dir`).
Files already present with the right sha256 are skipped, so a second run resumes an interrupted
one; a present file whose sha256 is wrong is fetched again, and replaced only by a verified copy.
Every file is written to a temporary file beside it, hashed while it arrives and renamed into place
only when its sha256 matches; a source is read no further than the size the registry records, and
each file has an overall deadline (:func:`download_deadline_s`), so a wrong or trickling mirror
neither fills the disk nor hangs the command.

``check`` reports, per group, which files are present, missing or corrupt, and exits 1 when any is.

Exit codes: 0 complete, 1 incomplete (a file missing, corrupt or not fetched), 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from havln_robot.data.registry import FILES, GROUPS, VOCAB_COMMIT, DataFile, file_sha256, select, vocab_problem
from havln_robot.paths import atomic_output, data_dir_and_origin, fetch_dest_default, prepare_out_dir
from havln_robot.text import nonempty, path_arg

#: Seconds to wait for a server to answer (connect and each read; a file's overall deadline is :func:`download_deadline_s`).
HTTP_TIMEOUT_S = 60.0


class DataError(ValueError):
    """Bad input to ``data fetch`` / ``data check``; the message is one line naming the flag."""


class _NotInMirror(Exception):
    """A file the ``--mirror`` folder does not have."""


@dataclass
class Outcome:
    """What one run did, per file (local names): fetched, already present, failed (with the reason)."""

    fetched: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    refetched: list[str] = field(default_factory=list)  # present but corrupt, then fetched again
    failed: dict[str, str] = field(default_factory=dict)
    permanent: list[str] = field(default_factory=list)  # failed in a way a re-run cannot fix (HTTP 4xx, absent, wrong sha256)
    aborted: str | None = None  # the reason the run stopped before the end (server unreachable)

    @property
    def ok(self) -> bool:
        return not self.failed and self.aborted is None


def status(path: Path, entry: DataFile) -> str:
    """``"present"`` (sha256 matches), ``"missing"`` or ``"corrupt"`` (exists, wrong sha256 or unreadable)."""
    if not path.exists():
        return "missing"
    try:
        return "present" if path.is_file() and file_sha256(path) == entry.sha256 else "corrupt"
    except OSError:
        return "corrupt"


def parse_mirror(mirror: str | None) -> tuple[str, str] | None:
    """``--mirror`` → ``("url", base ending in "/")`` or ``("dir", folder)``; None for the public sources.

    Raises:
        DataError: neither an http(s) URL nor an existing folder.
    """
    if not mirror:
        return None
    if mirror.startswith(("http://", "https://")):
        return "url", mirror if mirror.endswith("/") else mirror + "/"
    folder = mirror[len("file://") :] if mirror.startswith("file://") else mirror
    if "://" in folder:
        raise DataError(f"--mirror {mirror}: only http://, https:// or a folder are supported")
    p = Path(folder).expanduser()
    if not p.is_dir():
        raise DataError(f"--mirror {mirror}: no such folder; give a folder in the data layout (docs/data.md) or an http(s) URL")
    return "dir", str(p)


#: Slowest transfer accepted, bytes/s: a file's overall deadline is HTTP_TIMEOUT_S + its size / this.
MIN_RATE_BPS = 20_000

_CHUNK = 1 << 16


class _TooSlow(Exception):
    """A file did not arrive completely within its overall deadline (transient: a re-run resumes)."""


def download_deadline_s(entry: DataFile) -> float:
    """Overall seconds one file may take (connect, every read, all bytes): ``HTTP_TIMEOUT_S + size / MIN_RATE_BPS``."""
    return HTTP_TIMEOUT_S + entry.size / MIN_RATE_BPS


def _bounded_copy(read, fh, entry: DataFile, deadline_s: float, what: str) -> str:
    """Copy the bytes ``read(n)`` returns (``b""`` at the end) into the open binary file ``fh``,
    within bounds; returns their sha256 (hex).

    Reading stops as soon as more than ``entry.size`` bytes (the size the registry records) arrived,
    or when ``deadline_s`` seconds have passed since the start: a wrong or hostile source can neither
    fill the disk nor hold the command forever.

    Raises:
        ValueError: more bytes than the registry's size (permanent).
        _TooSlow: the deadline passed.
        OSError: reading or writing failed.
    """
    import hashlib
    import time

    start = time.monotonic()
    h = hashlib.sha256()
    n = 0
    while True:
        if time.monotonic() - start > deadline_s:
            raise _TooSlow(
                f"{what} did not arrive within {deadline_s:.0f} s ({n} of {entry.size} bytes); "
                "the source is too slow -- run again to retry (files already fetched are kept), or choose another --mirror"
            )
        chunk = read(_CHUNK)
        if not chunk:
            return h.hexdigest()
        n += len(chunk)
        if n > entry.size:
            raise ValueError(
                f"{what} is larger than the {entry.size} bytes the registry records for {entry.local}; "
                "stopped reading (not kept) -- check the --mirror"
            )
        h.update(chunk)
        fh.write(chunk)


def _copy_verified(src: Path, dest: Path, entry: DataFile, deadline_s: float | None = None) -> None:
    """Copy ``src`` to ``dest`` through a temporary file next to it (:func:`havln_robot.paths.atomic_output`);
    replace ``dest`` only when the sha256 matches, so a damaged local copy stays until a verified one
    exists.

    At most ``entry.size`` bytes are read (a larger mirror file is refused before copying, not after
    copying it all), within ``deadline_s`` (default :func:`download_deadline_s`).

    Raises:
        OSError: reading or writing failed.
        ValueError: the mirror's file is larger than the registry's size, or its sha256 differs.
        _TooSlow: the deadline passed.
    """
    deadline = download_deadline_s(entry) if deadline_s is None else deadline_s
    with open(src, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > entry.size:
            raise ValueError(
                f"the mirror's copy ({src}) has {size} bytes, more than the {entry.size} bytes the registry records "
                f"for {entry.local}; not copied -- check the --mirror"
            )
        with atomic_output(dest) as tmp, tmp.open("wb") as out:
            got = _bounded_copy(fh.read, out, entry, deadline, "the mirror's copy")
            if got != entry.sha256:
                raise ValueError(f"sha256 of the mirror's copy is {got[:12]}..., expected {entry.sha256[:12]}... (not kept)")


class _BoundedDownloader:
    """A pooch downloader (``downloader(url, output_file, pooch, check_only=False)``) that streams
    with requests within the registry's size and an overall deadline (:func:`_bounded_copy`); pooch
    writes into a temporary file beside the target, checks the sha256 and moves it into place."""

    def __init__(self, entry: DataFile, deadline_s: float) -> None:
        self.entry, self.deadline_s = entry, deadline_s

    def __call__(self, url: str, output_file, pooch=None, check_only: bool = False) -> bool | None:  # noqa: ARG002 - pooch's protocol
        import requests

        wait = max(0.1, min(HTTP_TIMEOUT_S, self.deadline_s))
        with requests.get(url, stream=True, timeout=(wait, wait)) as r:
            r.raise_for_status()
            if check_only:
                return True
            length = r.headers.get("Content-Length", "")
            if length.isdigit() and int(length) > self.entry.size:
                raise ValueError(
                    f"the server announces {int(length)} bytes, more than the {self.entry.size} bytes the registry records "
                    f"for {self.entry.local}; not downloaded -- check the --mirror"
                )
            raw = r.raw
            read = raw.read1 if hasattr(raw, "read1") else raw.read  # read1: what has arrived, not a full chunk
            if hasattr(output_file, "write"):
                _bounded_copy(lambda n: read(n, decode_content=True), output_file, self.entry, self.deadline_s, "the download")
            else:
                with open(output_file, "wb") as fh:
                    _bounded_copy(lambda n: read(n, decode_content=True), fh, self.entry, self.deadline_s, "the download")
        return None


def _download(url: str, dest: Path, entry: DataFile, deadline_s: float | None = None) -> None:
    """Download ``url`` to ``dest`` with pooch (which checks the sha256 before moving its temporary
    file into place, so a damaged ``dest`` stays until a verified copy exists), through
    :class:`_BoundedDownloader`: at most ``entry.size`` bytes are accepted (a ``Content-Length`` above
    it is refused before any byte is read, a body that passes it is cut), and the whole download must
    end within ``deadline_s`` seconds (default :func:`download_deadline_s`; each wait for the server
    at most ``min(HTTP_TIMEOUT_S, deadline_s)``), so a server that trickles bytes cannot hold the command.

    Raises:
        requests.exceptions.RequestException: HTTP or network failure.
        ValueError: more bytes than the registry's size, or a sha256 mismatch.
        _TooSlow: the deadline passed.
    """
    import logging

    import pooch

    pooch.get_logger().setLevel(logging.WARNING)  # we print our own summary, not one line per file
    deadline = download_deadline_s(entry) if deadline_s is None else deadline_s
    pooch.retrieve(
        url,
        known_hash=f"sha256:{entry.sha256}",
        fname=dest.name,
        path=dest.parent,
        downloader=_BoundedDownloader(entry, deadline),
    )


def _why(exc: BaseException) -> str:
    """One short line for a failed download."""
    import requests

    if isinstance(exc, requests.exceptions.HTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code} {exc.response.reason}"
    if isinstance(exc, ValueError) and "hash" in str(exc).lower():
        return "sha256 of the downloaded file does not match the registry (not kept)"
    if isinstance(exc, requests.exceptions.ConnectionError):
        m = re.search(r"\[Errno -?\d+\] [^\"')]+", str(exc))
        return m.group(0).strip() if m else "connection failed"
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _permanent(exc: BaseException) -> bool:
    """True when fetching again from the same source cannot help: the file is not there (HTTP 4xx,
    absent from the mirror folder) or its content differs from the registry (sha256). Timeouts,
    HTTP 5xx and dropped connections are transient: a re-run resumes."""
    import requests

    if isinstance(exc, _NotInMirror):
        return True
    if isinstance(exc, requests.exceptions.HTTPError) and exc.response is not None:
        return 400 <= exc.response.status_code < 500 and exc.response.status_code not in (408, 429)
    return isinstance(exc, ValueError)


def fetch(
    dest: Path, entries: list[DataFile], mirror: tuple[str, str] | None = None, log=print, deadline_s: float | None = None
) -> Outcome:
    """Fetch ``entries`` into ``dest`` (the data layout), skipping files already present and verified.

    Args:
        dest: the data folder (created by the caller, see :func:`havln_robot.paths.prepare_out_dir`).
        entries: registry entries to fetch (:func:`havln_robot.data.registry.select`).
        mirror: None (public URLs), ``("url", base/)`` or ``("dir", folder)`` from :func:`parse_mirror`.
        log: called with one line per notable event (a corrupt file found, a failure).
        deadline_s: overall seconds each file may take (default :func:`download_deadline_s`, from its size).

    Returns:
        The :class:`Outcome`. Network failures to reach the server stop the run (``aborted``);
        a missing or corrupt file on the server fails that file only. A damaged local file is
        replaced only by a verified copy: when the new copy fails, the local file stays as it was.
    """
    import requests

    umask = os.umask(0)
    os.umask(umask)
    mode = 0o666 & ~umask  # temporary files are created 0600; give fetched files the usual permissions
    out = Outcome()
    max_logged = 5  # failures listed one per line; a wrong mirror would otherwise list every file
    for entry in entries:
        target = dest / entry.local
        st = status(target, entry)
        if st == "present":
            out.present.append(entry.local)
            continue
        if st == "corrupt":
            # kept until a verified copy replaces it (atomic_output): a failed fetch must not leave nothing
            log(f"{entry.local}: present but its sha256 does not match; fetching it again")
        try:
            if mirror and mirror[0] == "dir":
                src = Path(mirror[1]) / entry.local
                if not src.is_file():
                    raise _NotInMirror(f"not in the mirror folder ({src})")
                _copy_verified(src, target, entry, deadline_s)
            else:
                url = mirror[1] + entry.local if mirror else entry.url
                _download(url, target, entry, deadline_s)
        except requests.exceptions.ConnectionError as exc:
            where = mirror[1] if mirror else entry.url
            out.aborted = f"cannot reach {where} ({_why(exc)}); check --mirror or the network, then run again to resume"
            out.failed[entry.local] = "server unreachable"
            break
        except (_NotInMirror, _TooSlow, OSError, ValueError, requests.exceptions.RequestException) as exc:
            why = str(exc) if isinstance(exc, (_NotInMirror, _TooSlow)) else _why(exc)
            if st == "corrupt" and target.exists():
                why += "; the local file was kept as it was, and it is damaged (its sha256 does not match)"
            out.failed[entry.local] = str(why)
            if _permanent(exc):
                out.permanent.append(entry.local)
            if len(out.failed) <= max_logged:
                log(f"{entry.local}: not fetched: {why}")
            elif len(out.failed) == max_logged + 1:
                log("... further failures not listed")
            continue
        try:
            os.chmod(target, mode)
        except OSError:
            pass  # a file we cannot chmod is still a good copy
        if st == "corrupt":
            out.refetched.append(entry.local)
        out.fetched.append(entry.local)
    return out


def _group_counts(entries: list[DataFile], names: list[str]) -> dict[str, int]:
    wanted = set(names)
    counts: dict[str, int] = {}
    for e in entries:
        if e.local in wanted:
            counts[e.group] = counts.get(e.group, 0) + 1
    return counts


def _only(values: list[str] | None) -> list[str]:
    return [g.strip() for v in values or [] for g in v.split(",") if g.strip()]


def _entries(values: list[str] | None) -> list[DataFile]:
    try:
        return select(_only(values))
    except ValueError as exc:
        raise DataError(f"--only: {exc}") from None


def fetch_main(args: argparse.Namespace) -> int:
    """``data fetch``: see the module docstring. Returns 0 when every requested file is present and verified."""
    entries = _entries(args.only)
    mirror = parse_mirror(args.mirror)
    dest = prepare_out_dir(Path(args.dest).expanduser() if args.dest else fetch_dest_default(), "--dest")
    if mirror and mirror[0] == "dir" and Path(mirror[1]).resolve() == dest.resolve():
        raise DataError(f"--mirror {mirror[1]} is the --dest folder itself; give another folder to fetch into")
    source = f"mirror {mirror[1]}" if mirror else "the public sources (raw.githubusercontent.com/UWMILab/HA-VLN)"
    print(f"havln-robot data fetch: {len(entries)} files into {dest} from {source}")

    def log(line: str) -> None:
        print(f"  {line}", file=sys.stderr)

    out = fetch(dest, entries, mirror, log=log)
    fetched = _group_counts(entries, out.fetched)
    present = _group_counts(entries, out.present)
    failed = _group_counts(entries, list(out.failed))
    width = max(len(g) for g in GROUPS)
    for group in GROUPS:
        total = sum(1 for e in entries if e.group == group)
        if total:
            noun = "file" if total == 1 else "files"
            line = f"  {group:<{width}}  {total:>3} {noun}: {fetched.get(group, 0)} fetched, {present.get(group, 0)} already verified"
            if failed.get(group):
                line += f", {failed[group]} failed"
            print(line)
    if out.aborted:
        print(f"havln-robot data fetch: {out.aborted}", file=sys.stderr)
    if not out.ok:
        missing = len(entries) - len(out.fetched) - len(out.present)
        gone = len(out.permanent)
        if gone == missing:
            advice = "the source lacks them or serves other content, so running again will not help: " + (
                "check that --mirror holds the data layout (docs/data.md)" if mirror else "report the broken link (docs/data.md)"
            )
        elif gone:
            advice = f"run the same command again to resume; {gone} of them the source lacks (see above), a re-run will not fetch those"
        else:
            advice = "run the same command again to resume"
        print(f"havln-robot data fetch: {missing} of {len(entries)} files not fetched; {advice}", file=sys.stderr)
        return 1
    print(f"done: {len(entries)} of {len(entries)} files present, sha256 verified, in {dest}")
    return 0


def check(dest: Path, entries: list[DataFile]) -> dict[str, dict[str, list[str]]]:
    """Per group, the local names of ``entries`` that are present, missing and corrupt under ``dest``."""
    report: dict[str, dict[str, list[str]]] = {}
    for e in entries:
        g = report.setdefault(e.group, {"present": [], "missing": [], "corrupt": []})
        g[status(dest / e.local, e)].append(e.local)
    return report


def check_main(args: argparse.Namespace) -> int:
    """``data check``: print present/missing/corrupt per group; 0 when complete, 1 otherwise."""
    entries = _entries(args.only)
    if args.dest:
        dest, origin = Path(args.dest).expanduser(), "--dest"
        if dest.exists() and not dest.is_dir():
            raise DataError(f"--dest {dest}: is a file, not a folder; give the data folder")
    else:
        dest, origin = data_dir_and_origin()
    where = {"user": "user data folder", "checkout": "development copy next to the checkout"}.get(origin, origin)
    print(f"HA-VLN data in {dest} ({where}){'' if dest.is_dir() else ': folder does not exist'}")
    report = check(dest, entries)
    width = max(len(g) for g in GROUPS)
    bad = 0
    for group, res in report.items():
        n = sum(len(v) for v in res.values())
        parts = [f"{len(res['present'])}/{n} present"]
        if res["missing"]:
            parts.append(f"{len(res['missing'])} missing")
        if res["corrupt"]:
            parts.append(f"{len(res['corrupt'])} corrupt (sha256 mismatch)")
        print(f"  {group:<{width}}  {', '.join(parts)}  -- {GROUPS[group]}")
        for kind in ("missing", "corrupt"):
            names = res[kind]
            bad += len(names)
            for name in names[:5]:
                extra = ""
                if kind == "corrupt" and group == "vocab":
                    extra = f" ({vocab_problem(dest / name) or 'well-formed, but not the pinned version'})"
                print(f"      {kind}: {name}{extra}")
            if len(names) > 5:
                print(f"      ... and {len(names) - 5} more {kind}")
        if group == "vocab":
            print(f"      (published as-is at UWMILab/HA-VLN@{VOCAB_COMMIT[:8]}; not derivable from the other files, see docs/data.md)")
    if bad:
        hint = f" --dest {dest}" if args.dest else ""
        print(f"incomplete: {bad} of {len(entries)} files missing or corrupt; run: havln-robot data fetch{hint}")
        return 1
    print(f"complete: {len(entries)} of {len(entries)} files present, sha256 verified")
    return 0


def main(argv: list[str]) -> int:
    """``havln-robot data fetch|check ...``; returns the exit code."""
    ap = argparse.ArgumentParser(prog="havln-robot data", description="Get the HA-VLN data (docs/data.md) and verify it.")
    sub = ap.add_subparsers(dest="action", metavar="{fetch,check}")
    groups_help = f"only these groups, comma-separated or repeated: {', '.join(GROUPS)} (default: all {len(FILES)} files)"
    fp = sub.add_parser(
        "fetch",
        help="download the data from its public sources or a mirror, verify sha256, resume",
        description="Download HA-R2R, R2R, the Matterport3D navigation graphs, the challenge manifests, the "
        "instruction embeddings and vocabulary; verify each file's sha256; skip files already verified.",
    )
    fp.add_argument("--dest", type=path_arg, help="data folder to write (default: $HAVLN_DATA, else the user data folder)")
    fp.add_argument(
        "--mirror",
        type=nonempty("a folder or an http(s) URL"),
        metavar="DIR|URL",
        help="fetch from a folder or an http(s) server holding the data layout instead",
    )
    fp.add_argument("--only", type=nonempty("a comma list of data groups"), action="append", metavar="GROUPS", help=groups_help)
    cp = sub.add_parser(
        "check",
        help="report present / missing / corrupt files per group (exit 1 when incomplete)",
        description="Report, per group, which data files are present with the right sha256, missing or corrupt.",
    )
    cp.add_argument("--dest", type=path_arg, help="data folder to check (default: the folder the project reads data from)")
    cp.add_argument("--only", type=nonempty("a comma list of data groups"), action="append", metavar="GROUPS", help=groups_help)
    args = ap.parse_args(argv)
    if args.action == "fetch":
        return fetch_main(args)
    if args.action == "check":
        return check_main(args)
    ap.print_help()
    return 2
