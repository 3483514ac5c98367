"""``havln-robot trial ...``: run a trial campaign from the operator's terminal.

Subcommands (all take ``--db PATH`` or ``--profile go2|sim|gazebo``; default: the go2 profile's
store, ``<user data>/trials/go2/trials.db``, the same file trial_logger_node of that profile writes;
see :func:`havln_robot.trials.store.default_db_path`):

* ``plan FILE [--name N]``      import a campaign plan (YAML/CSV); re-importing resumes it
* ``next [--campaign C]``       show the next pending planned trial and the campaign progress
* ``start [--next] [...]``      open a trial (from the plan with ``--next``, or from options)
* ``end --success|--failure|--abort [--reason R] [--ne M] [--id N]``   record the verdict
* ``list [--campaign C] [--platform P] [--policy P] [--limit N]``, ``show ID [--steps]``, ``campaigns``
* ``backup OUT [--overwrite]``  consistent copy of the store (SQLite online backup; safe while a logger writes)
* ``recover-bag DIR [--out OUT]``  salvage the MCAP bag of a killed run into a new, finished bag
* ``bench [--steps N]``         measure the per-step commit latency of the store (fsync)

Reading commands (list, show, next, campaigns, backup) open the store read-only; a trial whose
logger is gone (killed: its writer lock is free) is shown as ``interrupted``.
Errors are one line on stderr, exit code 2; nothing already recorded is touched.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from havln_robot.paths import input_file_problem
from havln_robot.text import nonempty, number_in, outcome_label, path_arg, plural, terminal_safe
from havln_robot.trials.metrics import navigation_error, summarize
from havln_robot.trials.regions import short_label
from havln_robot.trials.store import (
    DEFAULT_PROFILE,
    GOAL_FRAMES,
    MAX_GOAL_RADIUS_M,
    MAX_TRIAL_DISTANCE_M,
    PLATFORMS,
    NeedsMigration,
    PlannedTrial,
    Step,
    Trial,
    TrialError,
    TrialStore,
    default_db_path,
)


def _fmt_time(t: float | None) -> str:
    return "-" if t is None else _dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def _fmt_m(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _planned_line(p: PlannedTrial) -> str:
    goal = f" goal=({p.goal_x:g}, {p.goal_y:g}) [{p.goal_frame}]" if p.goal_x is not None else ""
    inst = f" ({terminal_safe(p.instance)})" if p.instance else ""
    notes = f"\n    notes: {terminal_safe(p.notes)}" if p.notes else ""
    return (
        f"#{p.seq + 1} {p.platform} {terminal_safe(short_label(p.region))}{inst}, people={p.people_present}{goal}\n"
        f"    instruction: {terminal_safe(p.instruction or '-')}{notes}"
    )


def _pick_campaign(st: TrialStore, name: str | None) -> str:
    if name:
        return name
    camps = st.campaigns()
    if not camps:
        raise TrialError("no campaign imported yet; run: havln-robot trial plan PLAN.yaml")
    open_ = [c for c in camps if c.done < c.planned]
    return (open_ or camps)[-1].name


def _cmd_plan(st: TrialStore, a: argparse.Namespace) -> int:
    from havln_robot.trials.plan import load_plan

    # main reads the plan before it opens (or creates) the store: a refused plan creates nothing
    name, desc, planned = a.plan if getattr(a, "plan", None) is not None else load_plan(a.file, a.name)
    st.import_plan(name, planned, source=str(Path(a.file).resolve()), description=desc)
    return _cmd_next(st, argparse.Namespace(campaign=name))


def _cmd_next(st: TrialStore, a: argparse.Namespace) -> int:
    name = _pick_campaign(st, a.campaign)
    rows = st.planned(name)
    name = next((c.name for c in st.campaigns() if c.id == rows[0][0].campaign_id), name) if rows else name
    done = sum(s == "done" for _, s in rows)
    print(f"campaign {terminal_safe(name)}: {done}/{plural(len(rows), 'trial')} done")
    nxt = next(((p, s) for p, s in rows if s != "done"), None)
    if nxt is None:
        print("campaign complete; havln-robot report --campaign " + name)
        return 0
    p, status = nxt
    print(f"next ({status}): {_planned_line(p)}")
    if status == "pending":
        print(f"start it with: havln-robot trial start --next --campaign {terminal_safe(name)}")
    else:
        print("a trial for it is open; finish it with: havln-robot trial end --success|--failure|--abort")
    return 0


def _cmd_start(st: TrialStore, a: argparse.Namespace) -> int:
    meta = {
        "people_present": a.people,
        "instance": a.instance,
        "instruction": a.instruction,
        "operator": a.operator,
        "episode_id": a.episode_id,
        "scan": a.scan,
        "notes": a.notes,
        "goal_frame": a.goal_frame,
        "goal_radius": a.goal_radius,
    }
    if a.goal:
        meta["goal_x"], meta["goal_y"] = a.goal
    meta = {k: v for k, v in meta.items() if v is not None}
    supersede = "superseded by a new trial (operator)" if a.supersede else None
    if a.next:
        name = _pick_campaign(st, a.campaign)
        p = st.next_planned(name)
        if p is None:
            print(f"campaign {terminal_safe(name)} is complete; nothing to start")
            return 0
        t = st.start_planned(p, supersede=supersede, platform=a.platform, region=a.region, **meta)
    else:
        if a.region is None:
            raise TrialError("start: --region is required (or --next to take the next planned trial)")
        if a.campaign is not None:  # attach it (refused, naming the campaigns, when there is no such campaign)
            meta["campaign_id"] = st.campaign_id(a.campaign)
        t = st.start_trial(a.platform or "go2", a.region, supersede=supersede, **meta)
    print(f"trial {t.id} started: {t.platform} {short_label(t.region)}, people={t.people_present}")
    if t.instruction:
        print(f"  instruction: {terminal_safe(t.instruction)}")
    if t.notes:
        print(f"  notes: {terminal_safe(t.notes)}")
    print("  end it with: havln-robot trial end --success|--failure|--abort [--reason ...]")
    return 0


def _ask_ne(t: Trial) -> float | None:
    """A success with no NE measured (no goal, or no pose to measure from): ask the operator for the NE
    measured on site (an empty answer = judged by eye); without a terminal, refuse.

    Raises:
        TrialError: no terminal to ask on, or an answer that is not a distance.
    """
    goal = f"goal ({t.goal_x:g}, {t.goal_y:g}) m in frame {t.goal_frame}" if t.goal_known else "no goal stored"
    if not sys.stdin.isatty():
        raise TrialError(
            f"end --success: trial {t.id} has no measured NE ({goal}, no pose to measure from); give --ne M (metres, "
            "measured on site) or --by-eye (the verdict is recorded as judged by eye)"
        )
    answer = input(f"trial {t.id}: NE measured on site, metres (empty = judged by eye; {goal}): ").strip()
    if not answer:
        return None
    try:
        ne = float(answer)
    except ValueError:
        raise TrialError(f"end --success: {answer!r} is not a distance in metres; give --ne M or --by-eye") from None
    if not math.isfinite(ne) or not 0 <= ne <= MAX_TRIAL_DISTANCE_M:
        raise TrialError(f"end --success: NE {answer!r} must be from 0 to {MAX_TRIAL_DISTANCE_M:g} m")
    return ne


def _cmd_end(st: TrialStore, a: argparse.Namespace) -> int:
    if a.id is not None:
        t = st.trial(a.id)
    else:
        t = st.current_trial()
        if t is None:
            raise TrialError("end: no running or unjudged trial; pass --id N (havln-robot trial list)")
    outcome = "success" if a.success else "failure" if a.failure else "aborted"
    reason = a.reason or ("operator abort" if outcome == "aborted" else "")
    ne_m = a.ne
    if outcome == "success" and ne_m is None and not a.by_eye and navigation_error(t, st.steps(t.id)) is None:
        ne_m = _ask_ne(t)
        if ne_m is None:
            a.by_eye = True
    t = st.set_outcome(t.id, outcome, reason=reason, ne_m=ne_m, overwrite=a.overwrite, force=a.force, by_eye=a.by_eye)
    ne = f", NE {t.ne_m:.2f} m ({t.ne_source})" if t.ne_m is not None else ""
    forced = f" -- FORCED: NE is not below the {t.goal_radius:g} m success radius" if t.verdict_forced else ""
    print(f"trial {t.id}: {t.outcome}{ne}{forced}; {plural(st.step_count(t.id), 'step')} recorded")
    if t.campaign_id is not None:
        _cmd_next(st, argparse.Namespace(campaign=str(t.campaign_id)))
    return 0


def _cmd_list(st: TrialStore, a: argparse.Namespace) -> int:
    if a.limit is not None and a.limit < 1:
        raise TrialError(f"--limit {a.limit}: give a number of trials >= 1 (or leave it out for all)")
    trials = st.trials(campaign=a.campaign, platform=a.platform, limit=a.limit, policy=a.policy)
    if not trials:
        print("no trials" + (f" of policy {a.policy!r}" if a.policy else ""))
        return 0
    print(f"{'id':>4}  {'started':19}  {'platform':8}  {'region':14}  {'people':>6}  {'steps':>5}  {'state':16}  {'NE m':>6}  policy")
    for t in trials:
        state = t.state + ("*" if t.verdict_forced else "") + ("!" if t.recording_fault else "")
        print(
            f"{t.id:>4}  {_fmt_time(t.started):19}  {t.platform:8}  {terminal_safe(short_label(t.region))[:14]:14}  {t.people_present:>6}  "
            f"{st.step_count(t.id):>5}  {state[:16]:16}  {_fmt_m(t.ne_m):>6}  {terminal_safe(t.policy or '-')}"
        )
    if any(t.state == "interrupted" for t in trials):
        print("interrupted: its logger died while the trial ran (kill -9, power loss); give a verdict with trial end --id N")
    if any(t.verdict_forced for t in trials):
        print("*: verdict forced against the measured NE (trial end --force)")
    if any(t.recording_fault for t in trials):
        print("!: recording fault -- the MCAP bag stopped during the trial, which went on in the store (trial show N)")
    return 0


def _print_trial(st: TrialStore, t: Trial, with_steps: bool) -> None:
    s = summarize(t, st.steps(t.id), st.collisions(t.id))
    rows = [
        ("trial", t.id),
        ("state", t.state),
        ("platform", t.platform),
        ("region", t.region),
        ("instance", t.instance or "-"),
        ("people present", t.people_present),
        ("instruction", t.instruction or "-"),
        ("goal", f"({t.goal_x:g}, {t.goal_y:g}) in {t.goal_frame}, radius {t.goal_radius:g} m" if t.goal_known else "unknown"),
        ("operator", t.operator or "-"),
        ("notes", t.notes or "-"),
        ("episode / scan", f"{t.episode_id or '-'} / {t.scan or '-'}"),
        ("started", _fmt_time(t.started)),
        ("finished", f"{_fmt_time(t.finished)} ({t.end_reason or '-'})"),
        (
            "outcome",
            f"{t.outcome or '-'} {('(' + t.reason + ')') if t.reason else ''}{' FORCED against the NE' if t.verdict_forced else ''}",
        ),
        ("NE", f"{_fmt_m(t.ne_m)} m ({t.ne_source or '-'})"),
        ("steps", f"{s.steps}" + (f" policy actions ({s.motions} motions incl. panorama turns)" if s.motions != s.steps else "")),
        (
            "collisions",
            f"{s.collisions} (human {s.collisions_human}, static {s.collisions_static}; {s.source}"
            + (f"; the robot classified human {s.robot_human}, static {s.robot_static}" if s.kinds_differ else "")
            + ")",
        ),
        ("path length", f"{s.path_length_m:.2f} m"),
        ("mcap", (t.mcap_path or "-") + (f"  RECORDING FAULT: {t.recording_fault}" if t.recording_fault else "")),
        ("unknown words", "-" if t.unknown_word_rate is None else f"{t.unknown_word_rate:.0%} of the instruction"),
        ("policy", f"{t.policy or '-'}" + (f" ({t.checkpoint}, sha256 {t.checkpoint_sha256[:16]})" if t.checkpoint else "")),
        ("software", t.software or "-"),
        ("profile", t.profile or "-"),
    ]
    if t.state == "interrupted":
        rows.insert(2, ("note", "its logger is gone (killed or power loss); the next logger start closes it as interrupted"))
    for k, v in rows:
        print(f"{k:>15}: {terminal_safe(v)}")
    if with_steps:
        for step in st.steps(t.id):
            pose = f"({_fmt_m(step.x)}, {_fmt_m(step.y)})" if step.x is not None else "-"
            outcome = outcome_label(step.outcome, (step.result or {}).get("detail", ""))
            print(f"  [{step.seq:3}] {terminal_safe(step.action):12} {terminal_safe(outcome):10} pose={pose} collisions={step.collisions}")


def _cmd_show(st: TrialStore, a: argparse.Namespace) -> int:
    _print_trial(st, st.trial(a.id), a.steps)
    return 0


def _cmd_campaigns(st: TrialStore, a: argparse.Namespace) -> int:
    camps = st.campaigns()
    if not camps:
        print("no campaigns")
    for c in camps:
        print(
            f"{c.id:>3}  {terminal_safe(c.name):24}  {c.done}/{c.planned} done  created {_fmt_time(c.created)}  {terminal_safe(c.description)}"
        )
    return 0


def _cmd_backup(st: TrialStore, a: argparse.Namespace) -> int:
    out = st.backup(a.out, overwrite=a.overwrite)
    with TrialStore(out, readonly=True) as copy:
        n = len(copy.trials())
    print(f"backup of {st.path}: {out} ({n} trials, integrity ok; one self-contained file)")
    return 0


def _cmd_recover_bag(a: argparse.Namespace) -> int:
    from havln_robot.trials.recorder import RecorderError, recover_bag

    try:
        rep = recover_bag(a.dir, a.out, overwrite=a.overwrite)
    except RecorderError as exc:
        raise TrialError(str(exc)) from None
    except OSError as exc:
        raise TrialError(f"{exc.filename or a.out}: cannot write the recovered bag ({exc.strerror})") from None
    print(
        f"recovered {rep.messages} messages ({len(rep.topics)} topics) from {rep.source} into {rep.out}"
        + (f"; lost at the end of {', '.join(rep.truncated)}: the unfinished chunk" if rep.truncated else "; nothing was truncated")
        + (f"; skipped {', '.join(rep.not_mcap)}: not MCAP files" if rep.not_mcap else "")
    )
    return 0


def _cmd_bench(a: argparse.Namespace, mcap: McapParts | None = None) -> int:
    if a.steps < 1 or a.frames < 1:
        raise TrialError(f"--steps {a.steps} / --frames {a.frames}: both must be >= 1")
    from havln_robot.paths import prepare_out_dir, scratch_dir

    if a.dir is not None:
        prepare_out_dir(a.dir, "--dir")
    # scratch_dir: a bench killed with SIGKILL leaves its folder in --dir; the next bench removes it
    with scratch_dir(a.dir or tempfile.gettempdir(), "trial-bench") as d:
        with TrialStore(Path(d) / "bench.db") as st:
            t = st.start_trial("sim", "office")
            lat = []
            for i in range(a.steps):
                t0 = time.perf_counter()
                st.add_step(t.id, Step(seq=0, stamp=float(i), action="MOVE_FORWARD", outcome="ok", x=0.25 * i, y=0.0, yaw=0.0))
                lat.append(time.perf_counter() - t0)
    lat.sort()
    n = len(lat)
    print(f"trial store commit latency (WAL, synchronous=FULL), {n} steps in {Path(d).parent} (one transaction + fsync per step):")
    print(f"  median {1e3 * lat[n // 2]:.2f} ms  p95 {1e3 * lat[int(0.95 * (n - 1))]:.2f} ms  max {1e3 * lat[-1]:.2f} ms")
    if a.mcap:
        _bench_mcap(a, mcap)
    return 0


#: What the MCAP benchmark needs from the ROS layer: a recorder factory (bag_dir, **options) and an
#: Image factory (height, width, encoding, step, data); see :func:`havln_robot.ros.mcap.trial_main`.
McapParts = tuple[Callable[..., Any], Callable[..., Any]]


def _bench_mcap(a: argparse.Namespace, mcap: McapParts | None) -> None:
    """MCAP cost of one 640x480 rgb8 frame per recorder setting (needs the ROS parts, injected)."""
    import numpy as np

    from havln_robot.paths import scratch_dir

    if mcap is None:
        print("MCAP bench skipped: the ROS message serialiser is not available here (run 'havln-robot trial bench --mcap')")
        return
    make_recorder, make_image = mcap
    try:
        make_image(1, 1, "rgb8", 3, bytes(3))
    except ImportError as exc:
        print(f"MCAP bench skipped: {exc}")
        return

    rng = np.random.default_rng(0)
    base = np.kron(rng.integers(0, 255, size=(60, 80, 3), dtype=np.uint8), np.ones((8, 8, 1), np.uint8))  # blocky texture
    frames = [np.clip(base.astype(int) + rng.integers(-8, 8, size=base.shape), 0, 255).astype(np.uint8) for _ in range(4)]
    print("MCAP recording of 640x480 rgb8 frames (per frame: time to downsample/encode/serialise/write, bytes on disk):")
    for stride, fmt in ((1, "raw"), (2, "raw"), (2, "jpeg"), (1, "jpeg")):
        with scratch_dir(a.dir or tempfile.gettempdir(), "trial-bench") as d:
            rec = make_recorder(Path(d) / "bench", image_stride=stride, image_format=fmt)
            t0 = time.perf_counter()
            for i in range(a.frames):
                f = frames[i % len(frames)]
                msg = make_image(480, 640, "rgb8", 640 * 3, f.tobytes())
                rec.write("camera/color/image_raw", msg, log_time_ns=i * 200_000_000)
            rec.close()
            dt = (time.perf_counter() - t0) / a.frames
            size = sum(p.stat().st_size for p in rec.stats.files) / a.frames
        print(f"  stride {stride} {fmt:4}: {1e3 * dt:6.2f} ms/frame  {size / 1024:7.1f} KiB/frame")


def add_store_args(ap: argparse.ArgumentParser) -> None:
    """``--db PATH`` / ``--profile NAME``: which trial store a command reads or writes."""
    ap.add_argument("--db", type=path_arg, default=None, help="trial database file (default: the --profile's store)")
    ap.add_argument(
        "--profile",
        default=None,
        choices=PLATFORMS,
        help=f"use this deployment profile's store, <user data>/trials/<profile>/trials.db (default {DEFAULT_PROFILE}; "
        "$HAVLN_TRIALS_DB overrides)",
    )


def store_path(a: argparse.Namespace) -> tuple[Path, str]:
    """The store named by ``--db`` / ``--profile`` and how it was named (for messages)."""
    if a.db:
        return Path(a.db).expanduser(), "--db"
    profile = a.profile or DEFAULT_PROFILE
    if os.environ.get("HAVLN_TRIALS_DB"):
        return default_db_path(profile), "the default store ($HAVLN_TRIALS_DB)"
    return default_db_path(profile), f"the {profile} profile's default store"


def open_store(db: Path, readonly: bool) -> TrialStore:
    """A reader opens read-only (works beside a live logger and on read-only media); a store of an
    older schema is opened read-write once to migrate it."""
    if readonly:
        try:
            return TrialStore(db, readonly=True)
        except NeedsMigration:
            pass
    return TrialStore(db)


def _add_start(sub: Any) -> None:
    p = sub.add_parser("start", help="open a trial")
    p.add_argument("--next", action="store_true", help="take the next pending trial of the campaign plan")
    p.add_argument("--campaign", type=nonempty("a campaign name or id"), help="campaign name or id the trial belongs to")
    p.add_argument("--platform", choices=PLATFORMS, help="where the trial runs")
    p.add_argument("--region", help="region type, e.g. office, 'living room', hallway, lobby")
    p.add_argument("--people", type=number_in(0, 10000, integer=True), help="number of people present (0 = without people)")
    p.add_argument("--instance", help="which room of that type (free text)")
    p.add_argument("--instruction", help="the navigation instruction given to the robot")
    p.add_argument(
        "--goal",
        type=number_in(-MAX_TRIAL_DISTANCE_M, MAX_TRIAL_DISTANCE_M, unit="m"),
        nargs=2,
        metavar=("X", "Y"),
        help="goal position, metres",
    )
    p.add_argument("--goal-frame", choices=GOAL_FRAMES, help="frame of --goal (default start: x forward, y left of the start pose)")
    p.add_argument("--goal-radius", type=number_in(0, MAX_GOAL_RADIUS_M, unit="m", above=True), help="success radius, m (default 3.0)")
    p.add_argument("--operator", help="who runs the trial (free text)")
    p.add_argument("--episode-id", help="HA-R2R / challenge episode id the trial reproduces, if any")
    p.add_argument("--scan", help="Matterport3D scan id (simulated trials)")
    p.add_argument("--notes", help="free-text notes stored with the trial")
    p.add_argument("--supersede", action="store_true", help="abort a trial that is still running instead of refusing")


def _add_end(sub: Any) -> None:
    p = sub.add_parser("end", help="record the verdict of the running (or latest unjudged) trial")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--success", action="store_true", help="the robot stopped within the success radius")
    g.add_argument("--failure", action="store_true", help="the robot did not reach the goal")
    g.add_argument("--abort", action="store_true", help="aborted (not counted in the success rate)")
    p.add_argument("--reason", default="", help="why (free text, shown in the report)")
    p.add_argument(
        "--ne", type=number_in(0, MAX_TRIAL_DISTANCE_M, unit="m"), help="navigation error measured on site, metres (overrides odometry)"
    )
    p.add_argument("--id", type=number_in(1, integer=True), help="trial id (default: running or latest unjudged trial)")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier verdict")
    p.add_argument("--force", action="store_true", help="record --success although NE >= the success radius (marked as forced)")
    p.add_argument(
        "--by-eye",
        action="store_true",
        help="the verdict was judged by eye, no NE measured (recorded as NE source 'by eye'); without it a --success "
        "with no measurable NE asks for --ne",
    )


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="havln-robot trial", description="Trial campaign: plan, next, start, end, list, show.")
    add_store_args(ap)
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("plan", help="import a campaign plan (YAML/CSV); re-import to resume")
    p.add_argument(
        "file", type=path_arg, help="campaign plan: YAML with a trials list, or CSV with a region,people,... header (docs/trials.md)"
    )
    p.add_argument("--name", help="campaign name (default: the file's 'campaign' key / CSV file stem)")

    p = sub.add_parser("next", help="show the next pending planned trial")
    p.add_argument("--campaign", type=nonempty("a campaign name or id"), help="campaign name or id (default: the only / latest campaign)")

    _add_start(sub)
    _add_end(sub)

    p = sub.add_parser("list", help="list trials")
    p.add_argument("--campaign", type=nonempty("a campaign name or id"), help="only this campaign (name or id)")
    p.add_argument("--platform", choices=PLATFORMS, help="only this platform")
    p.add_argument(
        "--policy",
        type=nonempty("a policy name, checkpoint file or sha256 prefix"),
        help="only trials of this policy (name, checkpoint file, or sha256 prefix)",
    )
    p.add_argument("--limit", type=number_in(1, integer=True), default=None, help="only the latest N trials (default all)")

    p = sub.add_parser("show", help="show one trial")
    p.add_argument("id", type=number_in(1, integer=True), help="trial id (see havln-robot trial list)")
    p.add_argument("--steps", action="store_true", help="also list every recorded step")

    sub.add_parser("campaigns", help="list campaigns and their progress")

    p = sub.add_parser("backup", help="consistent copy of the store (SQLite online backup; safe while a logger writes)")
    p.add_argument("out", type=path_arg, help="new file (or an existing folder: trials.db in it)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing file")

    p = sub.add_parser("recover-bag", help="salvage the MCAP bag of a killed run (complete chunks) into a new, finished bag")
    p.add_argument("dir", type=path_arg, help="the bag folder (trial_NNNN/) or one .mcap file")
    p.add_argument("--out", type=path_arg, help="new bag folder (default: <dir>_recovered)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")

    p = sub.add_parser("bench", help="measure the per-step commit latency of the store")
    p.add_argument("--steps", type=number_in(1, integer=True), default=200, help="steps to commit and time (default 200)")
    p.add_argument("--dir", type=path_arg, default=None, help="folder on the disk to measure (default: the temp folder)")
    p.add_argument("--mcap", action="store_true", help="also measure MCAP image recording cost")
    p.add_argument("--frames", type=number_in(1, integer=True), default=30, help="frames per MCAP setting")
    return ap


_COMMANDS = {
    "plan": _cmd_plan,
    "next": _cmd_next,
    "start": _cmd_start,
    "end": _cmd_end,
    "list": _cmd_list,
    "show": _cmd_show,
    "campaigns": _cmd_campaigns,
    "backup": _cmd_backup,
}
#: Commands that only read: the store is opened read-only (a copy on read-only media works).
_READERS = ("list", "show", "next", "campaigns", "backup")


def main(argv: list[str] | None = None, mcap: McapParts | None = None) -> int:
    """Entry of ``havln-robot trial``; returns the exit code (0 ok, 2 bad input).

    Args:
        argv: command-line arguments.
        mcap: the ROS parts of ``bench --mcap`` (injected by :func:`havln_robot.ros.mcap.trial_main`).
    """
    a = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if a.cmd == "bench":
            return _cmd_bench(a, mcap)
        if a.cmd == "recover-bag":
            return _cmd_recover_bag(a)
        db, where = store_path(a)
        if a.cmd == "plan":  # the plan is checked before the store is opened (or created)
            from havln_robot.trials.plan import load_plan

            a.plan = load_plan(a.file, a.name)
        if a.cmd in (*_READERS, "end") and not db.is_file():
            # reading commands never create a store: a mistyped --db would look like an empty campaign
            why = input_file_problem(db, missing="no trial store there")
            raise TrialError(f"{where} {db}: {why}; check the path or --profile (trial start / plan create one)")
        with open_store(db, readonly=a.cmd in _READERS) as st:
            if st.warning:
                print(f"havln-robot trial {a.cmd}: warning: {st.warning}", file=sys.stderr)
            return _COMMANDS[a.cmd](st, a)
    except TrialError as exc:
        print(f"havln-robot trial {a.cmd}: {terminal_safe(exc)}", file=sys.stderr)
        return 2
