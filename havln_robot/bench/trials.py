"""``havln-robot bench trials``: the trial tools on a big campaign (default 5,000 trials x 40 steps).

Builds a synthetic store in a temporary folder (``--trials`` trials of ``--steps`` steps each, one
collision per 10 trials, the success / failure / aborted mix and the regions of a lab campaign;
one bulk transaction, so building it is not what is measured), then times, in this process:

* ``trial list`` and ``trial show`` of the last trial,
* ``report`` without per-trial figures (the default above :data:`havln_robot.trials.report.TRAJECTORY_LIMIT`
  trials), and with ``--trajectories`` when ``--with-trajectories`` is given.

Figures (stdout; ``--out FILE``: JSON)::

    trials build: 5000 trials x 40 steps in 9.1 s (store 61 MB)
    trials list: 1.2 s / show: 0.1 s / report: 38.0 s (no trajectory figures)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from havln_robot.paths import write_json
from havln_robot.text import number_in, path_arg

#: Regions of the synthetic campaign (canonical names, regions.py).
_REGIONS = ("office", "hallway", "kitchen", "living room", "bedroom")


def build_store(path: Path, n_trials: int, n_steps: int, seed: int = 0) -> float:
    """Write a synthetic store of ``n_trials`` finished, judged trials of ``n_steps`` steps each
    (poses along a straight walk, a goal 3-6 m ahead in the start frame) in one transaction.

    Returns:
        Seconds taken.
    """
    from havln_robot.trials.store import TrialStore

    t0 = time.perf_counter()
    with TrialStore(path):
        pass  # schema and migrations
    rng = random.Random(seed)
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        db.execute("PRAGMA synchronous = OFF")
        db.execute("BEGIN")
        now = time.time() - n_trials * 60.0
        trials, steps, colls = [], [], []
        for i in range(1, n_trials + 1):
            started = now + 60.0 * i
            goal = rng.uniform(3.0, 6.0)
            walked = rng.uniform(0.0, 7.0)
            ne = abs(goal - walked)
            outcome = "aborted" if i % 25 == 0 else ("success" if ne < 3.0 else "failure")
            people = rng.choice((0, 0, 1, 2))
            trials.append(
                (i, started, started + 50.0, started + 55.0, "go2", _REGIONS[i % len(_REGIONS)], people, f"walk to mark {i}",
                 goal, 0.0, "start", "stop", outcome, "", ne, "odometry", 0.0, 0.0, 0.0)
            )  # fmt: skip
            for k in range(n_steps):
                x = walked * (k + 1) / n_steps
                steps.append((i, k, started + k, "MOVE_FORWARD", "ok", x, 0.0, 0.0, 0.0, '{"outcome": "ok"}'))
            if i % 10 == 0:
                colls.append((i, n_steps - 1, started + n_steps, "human" if people else "static", walked, 0.0, 0.0, "{}"))
        db.executemany(
            "INSERT INTO trials (id, started, finished, judged, platform, region, people_present, instruction, goal_x, goal_y, "
            "goal_frame, end_reason, outcome, reason, ne_m, ne_source, start_x, start_y, start_yaw) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            trials,
        )
        db.executemany(
            "INSERT INTO steps (trial_id, seq, stamp, action, outcome, x, y, yaw, imu_yaw, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            steps,
        )
        db.executemany("INSERT INTO collisions (trial_id, step_seq, stamp, type, x, y, yaw, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", colls)
        db.execute("UPDATE store_state SET trials = ?, last_trial_id = ? WHERE id = 1", (n_trials, n_trials))
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return time.perf_counter() - t0


def _timed(fn, *args) -> tuple[float, int]:
    """(seconds, exit code) of one CLI main, its output swallowed."""
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rc = fn(*args)
    return time.perf_counter() - t0, int(rc or 0)


def measure(n_trials: int, n_steps: int, trajectories: bool = False, log=print) -> dict:
    """Build the store and time list / show / report (see the module docstring)."""
    from havln_robot.trials.cli import main as trial_main
    from havln_robot.trials.report import main as report_main

    with tempfile.TemporaryDirectory(prefix="havln-bench-trials-") as tmp:
        db = Path(tmp) / "trials.db"
        build_s = build_store(db, n_trials, n_steps)
        size_mb = db.stat().st_size / 1e6
        log(f"trials build: {n_trials} trials x {n_steps} steps in {build_s:.1f} s (store {size_mb:.0f} MB)")
        fig: dict = {"trials": n_trials, "steps": n_steps, "build_s": round(build_s, 2), "store_mb": round(size_mb, 1)}
        fig["list_s"], rc1 = _timed(trial_main, ["--db", str(db), "list"])
        fig["show_s"], rc2 = _timed(trial_main, ["--db", str(db), "show", str(n_trials), "--steps"])
        fig["report_s"], rc3 = _timed(report_main, ["--db", str(db), "--out", str(Path(tmp) / "report")])
        fig["report_pngs"] = len(list((Path(tmp) / "report").glob("*.png")))
        line = (
            f"trials list: {fig['list_s']:.1f} s / show: {fig['show_s']:.1f} s / report: {fig['report_s']:.1f} s "
            f"({fig['report_pngs']} figures, no trajectory figures)"
        )
        if trajectories:
            fig["report_trajectories_s"], rc4 = _timed(
                report_main, ["--db", str(db), "--out", str(Path(tmp) / "report_t"), "--trajectories", "on"]
            )
            line += f"; with --trajectories on: {fig['report_trajectories_s']:.1f} s"
            rc3 = rc3 or rc4
        log(line)
        fig["exit_codes"] = [rc1, rc2, rc3]
        for k in ("list_s", "show_s", "report_s", "report_trajectories_s"):
            if k in fig:
                fig[k] = round(fig[k], 2)
        if any(fig["exit_codes"]):
            raise RuntimeError(f"a trial tool failed on the synthetic store: exit codes (list, show, report) {fig['exit_codes']}")
        return fig


def main(argv: list[str]) -> int:
    """``havln-robot bench trials``; returns the exit code."""
    from havln_robot.paths import check_out_file

    ap = argparse.ArgumentParser(prog="havln-robot bench trials", description="trial list / show / report on a big synthetic campaign.")
    ap.add_argument("--trials", type=number_in(1, 1_000_000, integer=True), default=5000, help="trials in the store (default 5000)")
    ap.add_argument("--steps", type=number_in(1, 10_000, integer=True), default=40, help="steps per trial (default 40)")
    ap.add_argument("--with-trajectories", action="store_true", help="also time report --trajectories on (one figure per 24 trials)")
    ap.add_argument("--out", type=path_arg, default=None, help="write the figures as JSON here")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    args = ap.parse_args(argv)
    if args.out:
        check_out_file(args.out, "--out", overwrite=args.overwrite)
    try:
        fig = measure(args.trials, args.steps, args.with_trajectories)
    except RuntimeError as exc:
        print(f"havln-robot bench trials: {exc}", file=sys.stderr)
        return 1
    if args.out:
        write_json(args.out, fig, nonfinite="null", indent=2)
    return 0 if math.isfinite(fig["report_s"]) else 1
