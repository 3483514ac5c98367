"""``havln-robot report``: campaign report (Markdown + CSV + PNG) from the trial store.

Pure Python (sqlite3 via the store, numpy, matplotlib with the Agg backend; no ROS).

Writes into ``--out`` (default ``./trial_report``):

* ``report.md`` -- summary, the success table, per-trial table, figures.
* ``success_by_region.csv`` / ``.png`` -- success rate by region type × without / with people:
  the layout of the real-robot table of HA-VLN 2.0 (arXiv 2503.14229, real-world validation
  section: success per environment type, with and without people present).
* ``trials.csv`` -- one row per trial (outcome, NE, steps, collisions, path length, ...).
* ``collisions_per_trial.png`` -- human / static collisions of every trial.
* ``ne_distribution.png`` -- NE histogram, without vs. with people, 3 m success radius marked.
* ``trajectories[_N].png`` -- top-down paths in each trial's start frame with collision points
  and the goal (24 trials per figure).

Success rates count only trials judged ``success`` / ``failure``; ``aborted`` and unjudged
trials are listed but excluded (their count is printed next to the table).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as _dt
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from havln_robot.paths import atomic_output, save_figure, staged_output_dir
from havln_robot.text import csv_text, md_cell, nonempty, path_arg, plural
from havln_robot.trials.cli import add_store_args, open_store, store_path
from havln_robot.trials.metrics import Trajectory, TrialSummary, rate_with_ci, sr_success, success_table, summarize, trajectory
from havln_robot.trials.regions import short_label
from havln_robot.trials.store import PLATFORMS, SUCCESS_RADIUS_M, TrialError, TrialStore

#: Trials per trajectory figure (a 6 x 4 grid).
TRAJ_PER_FIGURE = 24
#: Above this many trials the per-trial trajectory figures are left out unless asked for
#: (``--trajectories on``): 10 figures; a 5,000-trial campaign would take 209 and several minutes.
TRAJECTORY_LIMIT = 240
#: Reports over this many trials show a progress bar (:class:`Progress`).
PROGRESS_MIN_TRIALS = 200
#: Trials read per store query when a report gathers steps and collisions.
_BATCH = 500


class Progress:
    """A progress bar on stderr for long reports (``report: reading trials [#####.....] 2500/5000``):
    redrawn in place on a terminal, one line per tenth elsewhere (a log file); silent when
    ``total`` is below ``min_total`` (default :data:`PROGRESS_MIN_TRIALS`)."""

    def __init__(self, what: str, total: int, stream=None, min_total: int | None = None) -> None:
        self.what, self.total = what, max(1, int(total))
        self.stream = sys.stderr if stream is None else stream
        self.on = total >= (PROGRESS_MIN_TRIALS if min_total is None else min_total)
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._shown = -1

    def update(self, done: int) -> None:
        if not self.on:
            return
        tenth = 10 * done // self.total
        if self.tty:
            bar = "#" * (30 * done // self.total)
            self.stream.write(f"\rreport: {self.what} [{bar:<30}] {done}/{self.total}")
            if done >= self.total:
                self.stream.write("\n")
            self.stream.flush()
        elif tenth != self._shown:
            self._shown = tenth
            self.stream.write(f"report: {self.what} {done}/{self.total} ({10 * tenth} %)\n")
            self.stream.flush()


_OUTCOME_COLORS = {"success": "#2ca02c", "failure": "#d62728", "aborted": "#7f7f7f", None: "#1f77b4"}


def _ne_str(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def _when(t: float) -> str:
    return _dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_success(table: dict, path: Path) -> None:
    """Grouped bars: success rate (%) per region, without / with people; ``k/n`` over each bar."""
    plt = _plt()
    regions = [r for r in table if r != "all"] + ["all"]
    x = np.arange(len(regions))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(regions) + 2), 4.2))
    for off, col, color, label in ((-0.2, "without", "#4c72b0", "without people"), (0.2, "with", "#dd8452", "with people")):
        rates = [table[r][col] for r in regions]
        h = [100.0 * r.rate if r.rate is not None else 0.0 for r in rates]
        bars = ax.bar(x + off, h, width=0.38, color=color, label=label)
        for b, r in zip(bars, rates, strict=True):
            ax.text(
                b.get_x() + b.get_width() / 2, b.get_height() + 1.5, f"{r.k}/{r.n}" if r.n else "n/a", ha="center", va="bottom", fontsize=8
            )
    ax.set_xticks(
        x, [short_label(r) for r in regions], rotation=20 if len(regions) > 5 else 0, ha="right" if len(regions) > 5 else "center"
    )
    ax.set_ylim(0, 125)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("success rate (%)")
    ax.set_title("Success rate by region type, without / with people")
    ax.axvline(len(regions) - 1.5, color="0.7", lw=0.8)
    ax.legend(loc="upper center", fontsize=8, ncols=2, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


#: Above this many trials the collisions plot draws filled steps instead of one bar and one label
#: per trial (thousands of bars and tick labels took matplotlib minutes).
MAX_BARS = 120


def plot_collisions(summaries: Sequence[TrialSummary], path: Path) -> None:
    """Stacked bars of human / static / other collisions per trial; people-present trials marked.
    Over :data:`MAX_BARS` trials: stacked filled steps by trial position, a few trial ids on the axis."""
    plt = _plt()
    n = len(summaries)
    fig, ax = plt.subplots(figsize=(min(18.0, max(6.0, 0.28 * n + 2)), 4.0))
    x = np.arange(n)
    hum = np.array([s.collisions_human for s in summaries])
    sta = np.array([s.collisions_static for s in summaries])
    oth = np.array([s.collisions_other for s in summaries])
    many = n > MAX_BARS
    layers = [(hum, "#d62728", "human"), (sta, "#8c8c8c", "static")] + ([(oth, "#bcbd22", "other")] if oth.any() else [])
    bottom = np.zeros(n)
    for h, color, label in layers:
        if many:
            ax.fill_between(x, bottom, bottom + h, step="mid", color=color, label=label, lw=0)
        else:
            ax.bar(x, h, bottom=bottom, color=color, label=label)
        bottom = bottom + h
    with_p = np.flatnonzero([s.trial.with_people for s in summaries])
    top = float(max(1, (hum + sta + oth).max(initial=0)))
    if len(with_p):
        ax.plot(with_p, np.full(len(with_p), -0.06 * top), ls="none", marker="^", color="#dd8452", ms=5 if not many else 2, clip_on=False)
    ids = [s.trial.id for s in summaries]
    if many:
        ax.xaxis.set_major_locator(plt.MaxNLocator(12, integer=True))
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _pos: str(ids[int(v)]) if 0 <= int(v) < n else ""))
    else:
        ax.set_xticks(x, [str(i) for i in ids], fontsize=7 if n > 30 else 9, rotation=90 if n > 30 else 0)
    ax.set_xlim(-0.7, n - 0.3)
    ax.set_ylim(-0.1 * top, top * 1.15)
    ax.set_xlabel("trial id  (▲ = people present)")
    ax.set_ylabel("collisions")
    ax.set_title(collisions_title(summaries))
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def collision_source_note(summaries: Sequence[TrialSummary]) -> str:
    """One Markdown line saying which collision counts the report uses: the simulator's ground truth
    (sim trials that have it) and/or the robot's own classification (motion_node: the Go2, or a sim
    trial recorded without ground truth)."""
    gt = [s.trial.id for s in summaries if s.source == "ground truth"]
    robot = [s.trial.id for s in summaries if s.source != "ground truth"]
    parts = []
    if gt:
        parts.append(f"the simulator's ground truth for {plural(len(gt), 'trial')} ({_id_ranges(gt)})")
    if robot:
        parts.append(f"the robot's own classification (motion_node) for {plural(len(robot), 'trial')} ({_id_ranges(robot)})")
    return (
        "Collision counts (tables, CSV, plots, SR): "
        + " and ".join(parts)
        + ". A ground-truth human contact is never a success; trials.csv keeps the robot's counts beside them."
    )


def collisions_title(summaries: Sequence[TrialSummary]) -> str:
    """``Collisions per trial (mean 0.50 without people, 1.00 with people)``, naming only the groups that have trials."""
    parts = []
    for label, wp in (("without people", False), ("with people", True)):
        group = [s.collisions for s in summaries if s.trial.with_people == wp]
        if group:
            parts.append(f"{np.mean(group):.2f} {label}")
    return f"Collisions per trial (mean {', '.join(parts)})" if parts else "Collisions per trial (no trials)"


def plot_ne(summaries: Sequence[TrialSummary], path: Path) -> None:
    """NE histograms (without / with people) with the success radius marked."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4.0))
    groups = (("without people", "#4c72b0", False), ("with people", "#dd8452", True))
    all_ne = [s.trial.ne_m for s in summaries if s.trial.ne_m is not None]
    hi = max([SUCCESS_RADIUS_M * 2, *all_ne]) if all_ne else SUCCESS_RADIUS_M * 2
    bins = np.linspace(0.0, math.ceil(hi + 0.5), int(min(30, max(8, math.ceil(hi + 0.5) * 2))) + 1)
    data, colors, labels = [], [], []
    for label, color, wp in groups:
        ne = [s.trial.ne_m for s in summaries if s.trial.ne_m is not None and s.trial.with_people == wp]
        if ne:
            data.append(ne)
            colors.append(color)
            labels.append(f"{label} (n={len(ne)}, median {np.median(ne):.2f} m)")
    if data:
        counts, _, _ = ax.hist(data, bins=bins, color=colors, label=labels, rwidth=0.9)
        top = float(np.max(counts))
        ax.set_ylim(0, max(1.0, top) * 1.35)
    # the radius is named in the legend, not next to the line where a bar may stand
    ax.axvline(SUCCESS_RADIUS_M, color="k", ls="--", lw=1, label=f"{SUCCESS_RADIUS_M:g} m success radius")
    ax.set_xlabel("navigation error NE (m)")
    ax.set_ylabel("trials")
    ax.set_title("Navigation error distribution")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=8, loc="upper right")
    if not all_ne:
        ax.text(0.5, 0.5, "no trial with a known NE", transform=ax.transAxes, ha="center")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def plot_trajectories(items: Sequence[tuple[TrialSummary, Trajectory]], path: Path) -> None:
    """Small multiples: path (start frame), start ▶, end ■, collisions ✕, goal ★ with radius."""
    plt = _plt()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle

    n = len(items)
    cols = min(6, max(1, n))
    rows = math.ceil(n / cols)
    # wide enough for the title and the legend even with one trial; constrained layout keeps both inside
    fig, axes = plt.subplots(rows, cols, figsize=(max(8.0, 2.8 * cols), 2.9 * rows + 1.2), squeeze=False, layout="constrained")
    for ax in axes.flat[n:]:
        ax.axis("off")
    for ax, (s, tr) in zip(axes.flat, items, strict=False):
        t = s.trial
        p = tr.points
        ax.plot(p[:, 0], p[:, 1], "-", color="#1f77b4", lw=1.4)
        ax.plot(0, 0, marker=">", color="#2ca02c", ms=8, ls="none")
        if len(p) > 1:
            ax.plot(p[-1, 0], p[-1, 1], marker="s", color="k", ms=5, ls="none")
        ext = [p]
        if tr.goal is not None:
            gx, gy = tr.goal
            ax.add_patch(Circle((gx, gy), t.goal_radius, fill=False, ls="--", lw=0.8, color="#9467bd"))
            ax.plot(gx, gy, marker="*", color="#9467bd", ms=10, ls="none")
            ext.append(np.array([[gx - t.goal_radius, gy - t.goal_radius], [gx + t.goal_radius, gy + t.goal_radius]]))
        else:
            ax.text(0.5, 0.04, "no goal stored", transform=ax.transAxes, ha="center", va="bottom", fontsize=7, color="0.35")
        for (cx, cy), ct in zip(tr.collisions, tr.collision_types, strict=True):
            ax.plot(cx, cy, marker="X", color="#d62728" if ct == "human" else "#ff7f0e", ms=8, mec="k", mew=0.5, ls="none")
        allp = np.vstack(ext)
        lo, hi = allp.min(axis=0), allp.max(axis=0)
        c, half = (lo + hi) / 2, max(1.0, float((hi - lo).max()) / 2 + 0.5)
        ax.set_xlim(c[0] - half, c[0] + half)
        ax.set_ylim(c[1] - half, c[1] + half)
        ax.set_aspect("equal")
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ne = f" NE {t.ne_m:.1f} m" if t.ne_m is not None else ""
        ax.set_title(
            f"#{t.id} {short_label(t.region)}, {t.people_present} ppl\n{t.outcome or t.state}{ne}",
            fontsize=8,
            color=_OUTCOME_COLORS.get(t.outcome, "k"),
        )
    fig.suptitle("Top-down trajectories in each trial's start frame (m, x forward at start)", fontsize=10)
    handles = [
        Line2D([], [], color="#1f77b4", lw=1.4, label="path"),
        Line2D([], [], marker=">", color="#2ca02c", ms=8, ls="none", label="start"),
        Line2D([], [], marker="s", color="k", ms=5, ls="none", label="stop"),
        Line2D([], [], marker="*", color="#9467bd", ms=10, ls="none", label="goal"),
        Line2D([], [], color="#9467bd", ls="--", lw=0.8, label="success radius"),
        Line2D([], [], marker="X", color="#d62728", mec="k", mew=0.5, ms=8, ls="none", label="collision: human"),
        Line2D([], [], marker="X", color="#ff7f0e", mec="k", mew=0.5, ms=8, ls="none", label="collision: static"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8, frameon=False)
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def _md_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    out = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


#: The files :func:`write_report` writes into its folder (glob patterns); ``report --out`` replaces them only with ``--overwrite``.
REPORT_NAMES: tuple[str, ...] = (
    "report.md",
    "success_by_region.csv",
    "trials.csv",
    "success_by_region.png",
    "collisions_per_trial.png",
    "ne_distribution.png",
    "trajectories*.png",
)


def write_report(
    store: TrialStore,
    out: Path,
    campaign: str | None = None,
    platform: str | None = None,
    title: str = "HA-VLN trial report",
    policy: str | None = None,
    trajectories: bool | None = None,
    progress: bool = False,
) -> dict[str, Path]:
    """Write the report files for the selected trials.

    Args:
        store: the trial store.
        out: output folder (created).
        campaign: restrict to a campaign (name or id).
        platform: restrict to a platform.
        title: Markdown title.
        policy: restrict to a policy (name, checkpoint file, or sha256 prefix; see TrialStore.trials).
        trajectories: write the per-trial trajectory figures; None = when there are at most
            :data:`TRAJECTORY_LIMIT` trials (report.md says when they were left out).
        progress: show a progress bar on stderr (:class:`Progress`; campaigns of 200 trials and more).

    Returns:
        name → path of every file written.

    Raises:
        TrialError: unknown campaign, or no trial matches.
        OSError: a file cannot be written (a full disk): ``out`` is left as it was.

    The report is built in a staging folder inside ``out`` and swapped in at the end
    (:func:`havln_robot.paths.staged_output_dir`): ``out`` holds the earlier report or the new one,
    never a mix, and an earlier report's ``trajectories_N.png`` that the new one lacks is removed.
    """
    trials = store.trials(campaign=campaign, platform=platform, policy=policy)
    if not trials:
        sel = (f" for campaign {campaign!r}" if campaign else "") + (f" of policy {policy!r}" if policy else "")
        raise TrialError(f"no trials{sel} in {store.path}; run some first (havln-robot trial start ...)")
    out = Path(out)
    with staged_output_dir(out, stale=REPORT_NAMES) as stage:
        files = _write_report_files(store, trials, stage, campaign, platform, title, policy, trajectories, progress)
    return {k: out / p.name for k, p in files.items()}


def _write_report_files(
    store: TrialStore,
    trials: list,
    out: Path,
    campaign: str | None,
    platform: str | None,
    title: str,
    policy: str | None,
    trajectories: bool | None = None,
    progress: bool = False,
) -> dict[str, Path]:
    """The body of :func:`write_report`: every file of the report written into ``out`` (the staging folder)."""
    draw_traj = len(trials) <= TRAJECTORY_LIMIT if trajectories is None else bool(trajectories)
    items = _read_items(store, trials, draw_traj, progress)
    summaries = [s for s, _ in items]
    table = success_table(trials)
    files = {"success_csv": out / "success_by_region.csv", "trials_csv": out / "trials.csv"}
    _write_success_csv(table, files["success_csv"])
    _write_trials_csv(summaries, files["trials_csv"])
    files |= {"success_png": out / "success_by_region.png", "collisions_png": out / "collisions_per_trial.png"}
    files["ne_png"] = out / "ne_distribution.png"
    plot_success(table, files["success_png"])
    plot_collisions(summaries, files["collisions_png"])
    plot_ne(summaries, files["ne_png"])
    traj_files = _write_trajectory_figures(items if draw_traj else [], out, progress)
    files |= {name.removesuffix(".png"): out / name for name in traj_files}
    sel = [f"{k} `{md_cell(v)}`" for k, v in (("campaign", campaign), ("platform", platform), ("policy", policy)) if v]
    md = _md_head(store, trials, summaries, table, title, sel)
    md += _md_body(trials, summaries, traj_files, draw_traj)
    files["report_md"] = out / "report.md"
    with atomic_output(files["report_md"]) as tmp:
        tmp.write_text("\n".join(md), encoding="utf-8")
    return files


def _read_items(store: TrialStore, trials: list, draw_traj: bool, progress: bool) -> list:
    """(summary, trajectory or None) of each trial, read from the store in batches."""
    bar = Progress("reading trials", len(trials)) if progress else None
    items = []
    for k in range(0, len(trials), _BATCH):
        chunk = trials[k : k + _BATCH]
        steps_of, colls_of = store.steps_of([t.id for t in chunk]), store.collisions_of([t.id for t in chunk])
        for t in chunk:
            steps, colls = steps_of.get(t.id, []), colls_of.get(t.id, [])
            items.append((summarize(t, steps, colls), trajectory(t, steps, colls) if draw_traj else None))
        if bar is not None:
            bar.update(k + len(chunk))
    return items


def _write_success_csv(table: dict, path: Path) -> None:
    """success_by_region.csv: per region, k / n / rate without people, with people and in all."""
    head = [f"{col}_{x}" for col in ("without_people", "with_people", "all") for x in ("success", "trials", "sr")]
    with atomic_output(path) as tmp, tmp.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["region", *head])
        for region, row in table.items():
            cells = []
            for col in ("without", "with", "all"):
                r = row[col]
                cells += [r.k, r.n, "" if r.rate is None else f"{r.rate:.4f}"]
            w.writerow([csv_text(region), *cells])


def _write_trials_csv(summaries: list, path: Path) -> None:
    """trials.csv: one row a trial; every text cell through text.csv_text (no control character, no formula)."""
    cols = ["id", "started", "platform", "region", "instance", "people_present", "operator", "episode_id", "scan", "instruction",
            "outcome", "reason", "end_reason", "ne_m", "ne_source", "steps", "motions", "collisions_human", "collisions_static",
            "collisions_other", "path_length_m", "duration_s", "goal_x", "goal_y", "goal_frame", "campaign_id", "mcap_path",
            "state", "sr_success", "verdict_forced", "policy", "checkpoint", "checkpoint_sha256", "software", "profile", "notes",
            "collision_source", "robot_collisions_human", "robot_collisions_static", "unknown_word_rate", "recording_fault"]  # fmt: skip
    with atomic_output(path) as tmp, tmp.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for s in summaries:
            t = s.trial
            c = csv_text
            w.writerow([t.id, _dt.datetime.fromtimestamp(t.started).isoformat(timespec="seconds"), c(t.platform), c(t.region),
                        c(t.instance), t.people_present, c(t.operator), c(t.episode_id), c(t.scan), c(t.instruction), c(t.outcome),
                        c(t.reason), c(t.end_reason), _ne_str(t.ne_m), c(t.ne_source), s.steps, s.motions, s.collisions_human,
                        s.collisions_static, s.collisions_other, f"{s.path_length_m:.3f}", "" if s.duration_s is None else f"{s.duration_s:.1f}",
                        "" if t.goal_x is None else t.goal_x, "" if t.goal_y is None else t.goal_y, c(t.goal_frame),
                        "" if t.campaign_id is None else t.campaign_id, c(t.mcap_path),
                        c(t.state), int(sr_success(t, s.collisions_human)) if t.outcome in ("success", "failure") else "",
                        int(t.verdict_forced), c(t.policy), c(t.checkpoint), c(t.checkpoint_sha256), c(t.software), c(t.profile),
                        c(t.notes), s.source, s.robot_human, s.robot_static,
                        "" if t.unknown_word_rate is None else f"{t.unknown_word_rate:.4f}", c(t.recording_fault)])  # fmt: skip


def _write_trajectory_figures(items: list, out: Path, progress: bool) -> list[str]:
    """trajectories.png (or trajectories_N.png, TRAJ_PER_FIGURE trials each); their names."""
    traj_files: list[str] = []
    n_fig = -(-len(items) // TRAJ_PER_FIGURE)
    bar = Progress("trajectory figures", n_fig, min_total=5) if progress and n_fig else None
    for k in range(0, len(items), TRAJ_PER_FIGURE):
        name = "trajectories.png" if len(items) <= TRAJ_PER_FIGURE else f"trajectories_{k // TRAJ_PER_FIGURE + 1}.png"
        plot_trajectories(items[k : k + TRAJ_PER_FIGURE], out / name)
        traj_files.append(name)
        if bar is not None:
            bar.update(len(traj_files))
    return traj_files


def _md_head(store: TrialStore, trials: list, summaries: list, table: dict, title: str, sel: list[str]) -> list[str]:
    """report.md down to the NE section's heading: counts, provenance, success and SR, the region table."""
    counts = {o: sum(t.outcome == o for t in trials) for o in ("success", "failure", "aborted")}
    unjudged = sum(t.outcome is None for t in trials)
    judged = [s for s in summaries if s.trial.outcome in ("success", "failure")]
    n_ok = sum(s.trial.outcome == "success" for s in judged)
    n_sr = sum(sr_success(s.trial, s.collisions_human) for s in judged)
    forced = [s.trial.id for s in summaries if s.trial.verdict_forced]
    interrupted = [s.trial.id for s in summaries if s.trial.state == "interrupted"]
    faulted = [s.trial.id for s in summaries if s.trial.recording_fault]
    prov: dict[tuple[str, str, str, str], list[int]] = {}
    for t in trials:
        prov.setdefault((t.policy or "unknown", t.checkpoint_sha256, t.software or "unknown", t.profile or "unknown"), []).append(t.id)
    md = [
        f"# {md_cell(title)}",
        "",
        f"Database `{md_cell(store.path)}`; {', '.join(sel) or 'all trials'}; generated {_dt.datetime.now().strftime('%Y-%m-%d %H:%M')}.",
        "",
        *([f"> **Warning -- this report may be incomplete:** {md_cell(store.warning)}", ""] if store.warning else []),
        f"**{plural(len(trials), 'trial')}** ({_when(trials[0].started)} – {_when(trials[-1].started)}): "
        f"{counts['success']} success, {counts['failure']} failure, {counts['aborted']} aborted, {unjudged} awaiting a verdict. "
        "Success rates count success/failure verdicts only."
        + (f" Trials {', '.join(map(str, interrupted))}: interrupted (their logger died; no verdict yet)." if interrupted else "")
        + (f" Trials {', '.join(map(str, forced))}: verdict forced against the measured NE (`trial end --force`)." if forced else "")
        + (
            f" **Recording fault** (the MCAP bag stopped; the trial went on in the store): trials {_id_ranges(faulted)}." if faulted else ""
        ),
        "",
        "## Provenance",
        "",
        _md_table(
            ["policy", "checkpoint sha256", "software", "profile", "trials"],
            [[pol, (sha[:16] + "…") if sha else "–", sw, f"`{pr}`", _id_ranges(ids)] for (pol, sha, sw, pr), ids in prov.items()],
        ),
        "",
        "## Success and SR",
        "",
        f"- **Success**: the robot stopped (STOP) with NE < {SUCCESS_RADIUS_M:g} m (the trial's success radius), as judged: "
        f"**{rate_with_ci(n_ok, len(judged))}**.",
        f"- **SR** (HA-VLN): success *and* no human collision during the trial (static collisions do not count, as in HA-VLN and eval): **{rate_with_ci(n_sr, len(judged))}**.",
        f"- **SR over all episodes** (aborted counted as failure, as the challenge scores): "
        f"**{rate_with_ci(n_sr, len(judged) + counts['aborted'])}**; "
        f"**SR over completed episodes** (aborted left out): **{rate_with_ci(n_sr, len(judged))}**; "
        f"{counts['aborted']} aborted"
        + (
            f" ({'; '.join(sorted({md_cell(t.reason or 'no reason') for t in trials if t.outcome == 'aborted'}))})"
            if counts["aborted"]
            else ""
        )
        + ".",
        "- Success and SR above are over the success/failure verdicts; 95% confidence intervals are Wilson score intervals.",
        "",
        "## Success rate by region type and people present",
        "",
        _md_table(
            ["Region", "Without people", "With people", "All"],
            [
                [("**all**" if r == "all" else short_label(r)), row["without"].cell(), row["with"].cell(), row["all"].cell()]
                for r, row in table.items()
            ],
        ),
        "",
        "![success by region](success_by_region.png)",
        "",
        "## Navigation error",
        "",
    ]
    return md


def _md_body(trials: list, summaries: list, traj_files: list[str], draw_traj: bool) -> list[str]:
    """report.md from the NE figures on: collisions, trajectories, the trial table."""
    ne_all = [t.ne_m for t in trials if t.ne_m is not None and t.outcome in ("success", "failure")]
    md: list[str] = []
    if ne_all:
        md.append(
            f"NE over {plural(len(ne_all), 'judged trial')} with a known goal: mean {np.mean(ne_all):.2f} m, median {np.median(ne_all):.2f} m, "
            f"max {np.max(ne_all):.2f} m (success radius {SUCCESS_RADIUS_M:g} m)."
        )
    else:
        md.append("No judged trial has a known NE (give a goal or `havln-robot trial end --ne M`).")
    md += ["", "![NE distribution](ne_distribution.png)", "", "## Collisions", ""]
    for label, wp in (("without people", False), ("with people", True)):
        ss = [s for s in summaries if s.trial.with_people == wp]
        if ss:
            md.append(
                f"- {label}: {plural(len(ss), 'trial')}, {np.mean([s.collisions for s in ss]):.2f} collisions per trial "
                f"(human {sum(s.collisions_human for s in ss)}, static {sum(s.collisions_static for s in ss)}); "
                f"{plural(sum(s.collisions > 0 for s in ss), 'trial')} with at least one collision"
            )
    md += ["", collision_source_note(summaries)]
    differ = [s for s in summaries if s.kinds_differ]
    if differ:
        md.append(
            "The robot's own classification differed from the ground truth in "
            + "; ".join(
                f"trial {s.trial.id} (robot human {s.robot_human} / static {s.robot_static}, ground truth human "
                f"{s.collisions_human} / static {s.collisions_static})"
                for s in differ[:20]
            )
            + (f"; and {len(differ) - 20} more" if len(differ) > 20 else "")
            + "."
        )
    md += ["", "![collisions per trial](collisions_per_trial.png)", "", "## Trajectories", ""]
    md += [f"![trajectories]({name})" for name in traj_files]
    if not draw_traj:
        md.append(
            f"Per-trial trajectory figures left out ({plural(len(trials), 'trial')}, "
            f"{-(-len(trials) // TRAJ_PER_FIGURE)} figures); `havln-robot report --trajectories on` draws them."
        )
    md += ["", "## Trials", "", _md_trial_table(summaries)]
    md += ["", "CSV: [trials.csv](trials.csv), [success_by_region.csv](success_by_region.csv).", ""]
    return md


def _md_trial_table(summaries: list) -> str:
    """The table of report.md: one row a trial."""
    return (
        _md_table(
            [
                "id",
                "started",
                "platform",
                "region",
                "people",
                "outcome",
                "NE (m)",
                "steps",
                "collisions (h/s)",
                "path (m)",
                "reason",
                "policy",
                "notes",
            ],
            [
                [
                    s.trial.id,
                    _when(s.trial.started),
                    s.trial.platform,
                    short_label(s.trial.region),
                    s.trial.people_present,
                    (s.trial.outcome or s.trial.state)
                    + (" (forced)" if s.trial.verdict_forced else "")
                    + (" (human contact: not SR)" if s.trial.outcome == "success" and s.collisions_human else ""),
                    _ne_str(s.trial.ne_m) or "–",
                    s.steps,
                    f"{s.collisions_human}/{s.collisions_static}",
                    f"{s.path_length_m:.1f}",
                    (s.trial.reason or "") + (f" (recording fault: {s.trial.recording_fault})" if s.trial.recording_fault else ""),
                    (s.trial.policy or "–") + (f" ({s.trial.checkpoint_sha256[:8]})" if s.trial.checkpoint_sha256 else ""),
                    s.trial.notes,
                ]
                for s in summaries
            ],
        )  # fmt: skip
    )


def _id_ranges(ids: Sequence[int]) -> str:
    """``[1, 2, 3, 7]`` → ``"1–3, 7"``."""
    out: list[str] = []
    ids = sorted(ids)
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}–{ids[j]}")
        i = j + 1
    return ", ".join(out)


def main(argv: list[str] | None = None) -> int:
    """Entry of ``havln-robot report``; returns the exit code (0 ok, 2 bad input)."""
    ap = argparse.ArgumentParser(prog="havln-robot report", description="Success-rate report (Markdown + CSV + PNG) from the trial store.")
    add_store_args(ap)
    ap.add_argument("--out", type=path_arg, default="trial_report", help="output folder (default ./trial_report)")
    ap.add_argument("--campaign", type=nonempty("a campaign name or id"), help="only this campaign (name or id)")
    ap.add_argument("--platform", choices=PLATFORMS, help="only this platform")
    ap.add_argument(
        "--policy",
        type=nonempty("a policy name, checkpoint file or sha256 prefix"),
        help="only trials of this policy (name, checkpoint file, or sha256 prefix)",
    )
    ap.add_argument("--title", default="HA-VLN trial report", help="title of report.md (default: HA-VLN trial report)")
    ap.add_argument("--overwrite", action="store_true", help="replace an earlier report in --out")
    ap.add_argument(
        "--trajectories",
        choices=("auto", "on", "off"),
        default="auto",
        help=f"per-trial trajectory figures (one per {TRAJ_PER_FIGURE} trials): auto = up to {TRAJECTORY_LIMIT} trials (default)",
    )
    a = ap.parse_args(sys.argv[1:] if argv is None else argv)
    from havln_robot.paths import prepare_out_dir, refuse_overwrite

    created = not Path(a.out).exists()  # a folder this run makes is removed again when it writes nothing
    prepare_out_dir(a.out, "--out")
    refuse_overwrite(a.out, "--out", a.overwrite, names=REPORT_NAMES)
    try:
        return _report(a)
    finally:
        if created:
            with contextlib.suppress(OSError):
                Path(a.out).rmdir()  # only when empty: a written report stays


def _report(a: argparse.Namespace) -> int:
    """The work of :func:`main` once ``--out`` is checked; returns the exit code."""
    try:
        db, _ = store_path(a)
        with open_store(db, readonly=True) as st:
            if st.warning:
                print(f"havln-robot report: warning: {st.warning}", file=sys.stderr)
            files = write_report(
                st,
                Path(a.out),
                campaign=a.campaign,
                platform=a.platform,
                title=a.title,
                policy=a.policy,
                trajectories={"auto": None, "on": True, "off": False}[a.trajectories],
                progress=True,
            )
    except TrialError as exc:
        print(f"havln-robot report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk while writing: the staging folder is gone, --out as it was
        print(
            f"havln-robot report: cannot write the report into --out {a.out} ({exc.strerror or exc}); "
            "it was left as it was -- free space or choose another --out",
            file=sys.stderr,
        )
        return 1
    print(f"report written to {Path(a.out) / 'report.md'} ({plural(len(files), 'file')})")
    return 0
