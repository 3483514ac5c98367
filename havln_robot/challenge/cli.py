"""``havln-robot export | pack | validate``: the challenge-format commands.

Exit codes: 0 success / PASS; 1 submission rejected; 2 bad arguments or unreadable inputs.
Every failure is one clear line on stderr (or the validation report on stdout), never a traceback.
"""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path

from havln_robot.challenge.export import ExportError, export, read_run_file, reference_records, trial_records
from havln_robot.challenge.format import PHASE1_SPLITS, FormatError
from havln_robot.challenge.manifest import Manifest, ManifestError, default_manifest_path, load_manifest, parse_manifest_arg
from havln_robot.challenge.pack import PackError, pack
from havln_robot.challenge.validate import Limits, validate_zip
from havln_robot.paths import OutputPathError, os_error_text, refuse_overwrite
from havln_robot.text import nonempty, number_in, path_arg, terminal_safe


def _err(prog: str, msg: str) -> int:
    print(f"havln-robot {prog}: {terminal_safe(msg)}", file=sys.stderr)  # may name ids / keys from the file
    return 2


def resolve_manifests(args_manifest: list[str], splits: list[str], *, required: bool) -> dict[str, Manifest]:
    """Manifests for ``splits``: ``--manifest`` overrides, else the official files (digest-checked).

    Args:
        args_manifest: ``--manifest`` values (``SPLIT=PATH`` or ``collision_num_<split>.json``).
        splits: splits wanted.
        required: raise when a split has no manifest; otherwise skip it.

    Raises:
        ManifestError: a file is unreadable / malformed / not official, or missing while required.
    """
    given = dict(parse_manifest_arg(a) for a in args_manifest)
    out: dict[str, Manifest] = {}
    for split in dict.fromkeys([*splits, *given]):
        if split in given:
            out[split] = load_manifest(given[split], split)
            continue
        path = default_manifest_path(split)
        if not path.is_file():
            if required:
                raise ManifestError(f"{split} manifest not found at {path}; pass --manifest {split}=PATH or set HAVLN_DATA")
            continue
        out[split] = load_manifest(path, split, require_official=True)
    return out


def _add_manifest(ap: argparse.ArgumentParser, help: str) -> None:
    ap.add_argument("--manifest", type=nonempty("SPLIT=PATH"), action="append", default=[], metavar="SPLIT=PATH", help=help)


def validate_main(argv: list[str]) -> int:
    """``havln-robot validate submission.zip [--manifest SPLIT=PATH ...] [--splits a,b] [--max-problems N]``."""
    ap = argparse.ArgumentParser(
        prog="havln-robot validate", description="Check a submission zip against every HA-VLN challenge rule (format v1)."
    )
    ap.add_argument("zip", type=path_arg, help="submission archive")
    _add_manifest(ap, "episode manifest (default: the official collision_num_<split>.json)")
    ap.add_argument(
        "--splits",
        type=nonempty("a comma list of splits"),
        default=",".join(PHASE1_SPLITS),
        help="required splits, comma-separated (default: val_seen,val_unseen)",
    )
    ap.add_argument("--max-problems", type=number_in(0, integer=True), default=100, help="list at most N problems, 0 = all (default 100)")
    args = ap.parse_args(argv)
    splits = [s for s in args.splits.split(",") if s]
    if not splits:
        return _err("validate", f"--splits {args.splits!r}: name at least one split, e.g. --splits val_seen,val_unseen")
    try:
        manifests = resolve_manifests(args.manifest, splits, required=True)
    except ManifestError as exc:
        return _err("validate", str(exc))
    report = validate_zip(args.zip, manifests, limits=Limits())
    print(report.render(args.max_problems))
    return 0 if report.ok else 1


def pack_main(argv: list[str]) -> int:
    """``havln-robot pack FILE_OR_DIR ... -o submission.zip [--no-validate]``."""
    ap = argparse.ArgumentParser(prog="havln-robot pack", description="Pack prediction files into a flat submission zip, then validate it.")
    ap.add_argument("inputs", type=path_arg, nargs="+", help="val_seen.json, val_unseen.json (or a folder holding them)")
    ap.add_argument("-o", "--out", type=path_arg, default="submission.zip", help="zip to write (default submission.zip)")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing zip")
    _add_manifest(ap, "manifest of a split's official ids (default: the official files)")
    ap.add_argument(
        "--splits",
        type=nonempty("a comma list of splits"),
        default=",".join(PHASE1_SPLITS),
        help=f"comma-separated splits the zip must hold (default {','.join(PHASE1_SPLITS)})",
    )
    ap.add_argument("--no-validate", action="store_true", help="skip the full validation of the written zip")
    args = ap.parse_args(argv)
    from havln_robot.paths import check_out_file

    inputs = [Path(i) for i in args.inputs]
    inputs += [d / f"{s}.json" for d in inputs if d.is_dir() for s in PHASE1_SPLITS]
    check_out_file(args.out, "-o", inputs=tuple(inputs), atomic=True, overwrite=args.overwrite, example="submission.zip")
    manifests = None
    if not args.no_validate:
        try:
            manifests = resolve_manifests(args.manifest, [s for s in args.splits.split(",") if s], required=True)
        except ManifestError as exc:
            # asked for explicitly: a wrong --manifest/--splits is an error, before anything is written
            if args.manifest or args.splits != ",".join(PHASE1_SPLITS):
                return _err("pack", str(exc))
            print(f"havln-robot pack: packing without validation: {exc}", file=sys.stderr)  # default manifests missing
    reports = []

    def _verify(tmp: Path) -> None:
        # validate the finished temporary zip BEFORE it replaces -o: a rejected pack leaves an earlier zip as it was
        rep = validate_zip(tmp, manifests)
        rep.source = str(args.out)
        reports.append(rep)
        if not rep.ok:
            raise _Rejected

    try:
        out = pack(args.inputs, args.out, verify=_verify if manifests is not None else None)
    except _Rejected:
        print(reports[0].render())
        kept = " (the earlier zip there is kept as it was)" if Path(args.out).exists() else ""
        print(
            f"havln-robot pack: the new zip fails validation and was not written to {args.out}{kept}; "
            "fix the problems above (--no-validate writes an unchecked zip)",
            file=sys.stderr,
        )
        return 1
    except (PackError, FormatError) as exc:
        return _err("pack", str(exc))
    except OSError as exc:
        return _err("pack", os_error_text(exc))
    print(f"wrote {out}")
    if reports:
        print(reports[0].render())
    return 0


class _Rejected(Exception):
    """The freshly packed temporary zip failed validation (pack_main)."""


def _export_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="havln-robot export",
        description="Write format-v1 prediction files (val_seen.json / val_unseen.json) from sim runs or logged trials.",
    )
    ap.add_argument(
        "--runs", type=path_arg, nargs="+", default=[], metavar="FILE", help="run files (havln-robot eval --out, JSON/JSONL records)"
    )
    ap.add_argument("--trials", type=path_arg, metavar="DB", help="trial store (SQLite) whose trials name challenge episode ids")
    ap.add_argument(
        "--platform", type=nonempty("a platform: go2, sim or gazebo"), help="with --trials: only this platform (go2/sim/gazebo)"
    )
    ap.add_argument("--campaign", type=nonempty("a campaign name or id"), help="with --trials: only this campaign (name or id)")
    ap.add_argument("--split", choices=["val_seen", "val_unseen", "test"], help="split of records that do not name one")
    ap.add_argument("--out-dir", type=path_arg, default=".", help="output folder (default: current)")
    ap.add_argument("--fill-missing", action="store_true", help="write [STOP] for manifest ids without a record")
    ap.add_argument("--stop-only", action="store_true", help="write a STOP-only bundle covering the manifests (format smoke test)")
    ap.add_argument(
        "--follow-reference",
        type=path_arg,
        metavar="EPISODES",
        help="write sequences that follow each episode's reference path (straight segments) for an HA-R2R episode file; needs --split",
    )
    ap.add_argument("--limit", type=number_in(1, integer=True), help="with --follow-reference: first N episodes only")
    _add_manifest(ap, "manifest of a split's official ids (default: the official files)")
    ap.add_argument("--overwrite", action="store_true", help="replace prediction files already in --out-dir")
    ap.add_argument(
        "--allow-partial",
        action="store_true",
        help="with --overwrite: replace a prediction file even when the new one leaves out episodes it holds (they are lost)",
    )
    return ap


def _gather_records(args: argparse.Namespace) -> list:
    """The records of every source named on the command line; ExportError on a missing --split."""
    records = []
    if args.follow_reference:
        if not args.split:
            raise ExportError("--follow-reference needs --split (the split the episode file belongs to)")
        records += reference_records(args.follow_reference, args.split, args.limit)
    for f in args.runs:
        records += read_run_file(f)
    if args.trials:
        if not args.split:
            raise ExportError("--trials needs --split val_seen|val_unseen (the trial store does not record splits)")
        notes: list[str] = []
        records += trial_records(args.trials, split=args.split, platform=args.platform, campaign=args.campaign, notes=notes)
        for note in notes:
            print(f"havln-robot export: warning: {terminal_safe(note)}", file=sys.stderr)
    return records


def export_main(argv: list[str]) -> int:
    """``havln-robot export (--runs FILE ... | --trials DB | --stop-only) [--split S] [--out-dir DIR] [--fill-missing]
    [--overwrite [--allow-partial]]``."""
    args = _export_parser().parse_args(argv)
    if not (args.runs or args.trials or args.stop_only or args.follow_reference):
        return _err("export", "nothing to export: give --runs FILE, --trials DB, --follow-reference EPISODES or --stop-only")
    try:
        records = _gather_records(args)
        named = {r.split for r in records if r.split} | ({args.split} if args.split else set())
        wanted = sorted(named) if not args.stop_only else ([args.split] if args.split else list(PHASE1_SPLITS))
        discrete_ids = bool(args.follow_reference) and not args.follow_reference.endswith(".gz")
        manifests = {} if discrete_ids else resolve_manifests(args.manifest, wanted, required=args.stop_only)
        # the files export() will write: each record's split (else --split), plus the stop-only splits
        targets = {r.split or args.split for r in records} | (set(wanted) if args.stop_only else set())
        # the one rule of every results writer (paths.refuse_overwrite); a hostile split is named by export() below
        names = tuple(sorted(glob.escape(f"{s}.json") for s in targets if s and "/" not in s))
        refuse_overwrite(args.out_dir, "--out-dir", args.overwrite, names=names)
        summary = export(
            records,
            Path(args.out_dir),
            split=args.split,
            manifests=manifests,
            fill_missing=args.fill_missing or args.stop_only,
            splits=wanted if args.stop_only else (),
            allow_partial=args.allow_partial,
        )
    except (ExportError, ManifestError, FormatError, OutputPathError) as exc:
        return _err("export", str(exc))
    except OSError as exc:
        return _err("export", os_error_text(exc) if exc.filename else f"cannot write to {args.out_dir}: {exc.strerror or exc}")
    if not summary.files:
        return _err("export", "no records found in the given sources")
    for line in summary.lines():
        print(terminal_safe(line))
    if discrete_ids:
        print(
            f"note: ids are path_ids of the discrete file {args.follow_reference}, not challenge ids; replay with --episodes-file {args.follow_reference}"
        )
    return 0
