"""Per-trial and per-campaign metrics from the trial store (pure Python + numpy).

Definitions (HA-VLN 2.0, arXiv 2503.14229 Sec. 4, and the challenge rules in
../shared/data/ha-vln/README.md):

* NE (navigation error): distance (m) between where the robot stopped and the goal.
* success: the operator's verdict on the robot; in sim, STOP called and NE < 3.0 m.
* SR: successes / judged trials; trials ``aborted`` (e-stop, shutdown, operator abort) are not
  counted in SR and are reported separately.
* collisions per trial: collision events recorded by motion_node (human / static).

All positions are planar, metres; the *start frame* is the robot's pose at trial start
(x forward, y left, REP 103): trajectories of different trials are drawn in it so they overlay.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from havln_robot.episodes import ha_vln_sr
from havln_robot.geometry import to_local
from havln_robot.trials.model import Collision, Step, Trial


def _last_pose(trial: Trial, steps: Sequence[Step], kind: str) -> tuple[float, float, float] | None:
    for s in reversed(steps):
        if kind == "odom" and s.x is not None and s.y is not None:
            return s.x, s.y, s.yaw or 0.0
        if kind == "map" and s.map_x is not None and s.map_y is not None:
            return s.map_x, s.map_y, s.map_yaw or 0.0
    return None


def start_pose(trial: Trial, kind: str = "odom") -> tuple[float, float, float] | None:
    """The start pose (x, y, yaw) in ``odom`` or ``map``; odom defaults to the origin if unrecorded."""
    if kind == "map":
        if trial.start_map_x is None:
            return None
        return trial.start_map_x, trial.start_map_y or 0.0, trial.start_map_yaw or 0.0
    return (trial.start_x or 0.0, trial.start_y or 0.0, trial.start_yaw or 0.0)


def goal_in_start_frame(trial: Trial) -> tuple[float, float] | None:
    """The goal (m) in the start frame, or None if unknown or not convertible."""
    if not trial.goal_known:
        return None
    gx, gy = float(trial.goal_x), float(trial.goal_y)  # type: ignore[arg-type]
    if trial.goal_frame == "start":
        return gx, gy
    sp = start_pose(trial, "map" if trial.goal_frame == "map" else "odom")
    if sp is None:
        return None
    return to_local(sp[0], sp[1], sp[2], gx, gy)


def navigation_error(trial: Trial, steps: Sequence[Step]) -> tuple[float, str] | None:
    """NE (m) and its source for a trial, or None when it cannot be known.

    Priority: ground truth (sim: ``distance_to_goal_m`` of the last step, or the map pose vs. a
    ``map`` goal); then odometry (last odom pose vs. a ``start`` / ``odom`` goal). Odometry NE
    includes odometry drift; the operator can override it with a measured value. A trial without
    steps has no NE (the robot did not act).
    """
    for s in reversed(steps):
        if s.distance_to_goal_m is not None and math.isfinite(s.distance_to_goal_m):
            return float(s.distance_to_goal_m), "ground_truth"
        break
    if not trial.goal_known or not steps:
        return None
    gx, gy = float(trial.goal_x), float(trial.goal_y)  # type: ignore[arg-type]
    if trial.goal_frame == "map":
        p = _last_pose(trial, steps, "map")
        return (math.hypot(p[0] - gx, p[1] - gy), "ground_truth") if p else None
    p = _last_pose(trial, steps, "odom")
    if p is None:
        return None
    if trial.goal_frame == "odom":
        return math.hypot(p[0] - gx, p[1] - gy), "odometry"
    sx, sy, syaw = start_pose(trial, "odom")  # type: ignore[misc]
    lx, ly = to_local(sx, sy, syaw, p[0], p[1])
    return math.hypot(lx - gx, ly - gy), "odometry"


#: Marker in a step's result record: the robot rebooted / its odometry was reset before this step ended.
ROBOT_RESET = "robot_reset"


def path_length(trial: Trial, steps: Sequence[Step]) -> float:
    """Path length (m) from the start pose through every step pose (sim ground truth, else odometry).

    On odometry, the segment into a step marked :data:`ROBOT_RESET` is left out: its end pose is in
    the rebooted robot's new odometry frame, and joining it would add the jump to the path.
    """
    tr = trajectory(trial, steps, ())
    pts = tr.points
    if len(pts) < 2:
        return 0.0
    seg = np.hypot(*np.diff(pts, axis=0).T)
    if tr.source == "odom":
        posed = [s for s in steps if s.x is not None and s.y is not None]
        keep = np.array([ROBOT_RESET not in (s.result or {}) for s in posed], dtype=bool)
        seg = seg[keep]
    return float(np.sum(seg))


@dataclass
class Trajectory:
    """A trial's path in its start frame (m).

    Attributes:
        source: ``map`` (sim ground truth) or ``odom``.
        points: (N, 2) float64, first row (0, 0) = start.
        collisions: (K, 2) float64 collision positions; collision_types: K labels.
        goal: (2,) goal in the start frame, or None.
    """

    source: str
    points: np.ndarray
    collisions: np.ndarray
    collision_types: list[str] = field(default_factory=list)
    goal: tuple[float, float] | None = None


def trajectory(trial: Trial, steps: Sequence[Step], collisions: Iterable[Collision]) -> Trajectory:
    """Top-down trajectory with collision points, in the start frame.

    Uses ground-truth map poses when every step has one (sim), else odometry.
    """
    use_map = bool(steps) and trial.start_map_x is not None and all(s.map_x is not None for s in steps)
    kind = "map" if use_map else "odom"
    sx, sy, syaw = start_pose(trial, kind)  # type: ignore[misc]
    pts = [(0.0, 0.0)]
    by_seq: dict[int, tuple[float, float]] = {}
    for s in steps:
        px, py = (s.map_x, s.map_y) if use_map else (s.x, s.y)
        if px is None or py is None:
            continue
        loc = to_local(sx, sy, syaw, px, py)
        pts.append(loc)
        by_seq[s.seq] = loc
    cpts, ctypes = [], []
    for c in collisions:
        cx, cy = (c.map_x, c.map_y) if use_map else (c.x, c.y)
        if cx is not None and cy is not None:
            cpts.append(to_local(sx, sy, syaw, cx, cy))
        elif c.step_seq in by_seq:
            cpts.append(by_seq[c.step_seq])
        else:
            continue
        ctypes.append(c.type or "unknown")
    return Trajectory(
        source=kind,
        points=np.asarray(pts, dtype=np.float64).reshape(-1, 2),
        collisions=np.asarray(cpts, dtype=np.float64).reshape(-1, 2),
        collision_types=ctypes,
        goal=goal_in_start_frame(trial),
    )


@dataclass
class Rate:
    """k successes out of n judged trials."""

    k: int = 0
    n: int = 0

    @property
    def rate(self) -> float | None:
        return self.k / self.n if self.n else None

    def add(self, success: bool) -> None:
        self.n += 1
        self.k += int(success)

    def cell(self) -> str:
        """``"67% (2/3)"`` or ``"–"`` when no trial."""
        return "–" if not self.n else f"{100.0 * self.k / self.n:.0f}% ({self.k}/{self.n})"


def wilson_interval(k: int, n: int, z: float = 1.959964) -> tuple[float, float] | None:
    """Wilson score interval of a binomial proportion k/n (default 95 %: z = 1.96).

    Well-behaved for the small n of a real-robot campaign (never outside [0, 1], sensible at
    k = 0 or k = n, unlike the normal approximation).

    Returns:
        (low, high) as fractions, or None when n == 0.
    """
    if n <= 0:
        return None
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate_with_ci(k: int, n: int) -> str:
    """``"62% (25/40; 95% CI 47-76%)"`` or ``"–"`` when n == 0."""
    ci = wilson_interval(k, n)
    if ci is None:
        return "–"
    return f"{100.0 * k / n:.0f}% ({k}/{n}; 95% CI {100 * ci[0]:.0f}–{100 * ci[1]:.0f}%)"


def sr_success(trial: Trial, collisions_human: int) -> bool:
    """HA-VLN SR of a trial: a success verdict (STOP within the success radius) and no human collision
    (:func:`havln_robot.episodes.ha_vln_sr`, the definition eval uses too; static collisions do not count).

    Args:
        trial: the trial (its ``outcome``).
        collisions_human: collisions with people during the trial (a ground-truth human contact
            stored with the trial counts whatever this says).
    """
    return bool(ha_vln_sr(trial.outcome == "success", collisions_human or trial.gt_collisions_human or 0))


def success_table(trials: Iterable[Trial]) -> dict[str, dict[str, Rate]]:
    """Success rate by region type × people (the HA-VLN 2.0 real-robot table layout).

    Only trials with outcome ``success`` or ``failure`` count; a trial with a ground-truth human
    contact (:attr:`Trial.gt_collisions_human`) is never a success here.

    Returns:
        region → {"without": Rate, "with": Rate, "all": Rate}; plus the row ``"all"``.
        Regions in first-seen order, ``"all"`` last.
    """
    table: dict[str, dict[str, Rate]] = {}
    total = {"without": Rate(), "with": Rate(), "all": Rate()}
    for t in trials:
        if t.outcome not in ("success", "failure"):
            continue
        row = table.setdefault(t.region, {"without": Rate(), "with": Rate(), "all": Rate()})
        ok = t.outcome == "success" and not t.gt_collisions_human
        col = "with" if t.with_people else "without"
        for d in (row, total):
            d[col].add(ok)
            d["all"].add(ok)
    table["all"] = total
    return table


@dataclass
class TrialSummary:
    """Figures of one trial for tables/CSV (units: m, s).

    ``steps`` counts the policy's actions (the agent's havln/episode_done list, panorama turns
    excluded -- the VLN step count); ``motions`` every action motion_node executed, panorama turns
    included. Without an agent summary (e.g. a teleoperated trial) both are the executed count.
    """

    trial: Trial
    steps: int
    collisions_human: int
    collisions_static: int
    collisions_other: int
    path_length_m: float
    duration_s: float | None
    motions: int = 0
    robot_human: int = 0
    robot_static: int = 0
    source: str = "robot"

    @property
    def collisions(self) -> int:
        return self.collisions_human + self.collisions_static + self.collisions_other

    @property
    def kinds_differ(self) -> bool:
        """The robot's own classification disagrees with the ground truth (human or static count)."""
        return self.source == "ground truth" and (self.robot_human, self.robot_static) != (self.collisions_human, self.collisions_static)


def summarize(trial: Trial, steps: Sequence[Step], collisions: Sequence[Collision]) -> TrialSummary:
    """Counts and lengths of one trial.

    Collision counts: the simulator's ground truth where the trial has it (``collisions_human`` /
    ``collisions_static``; ``collisions_other`` 0), else the robot's own classification
    (:attr:`Trial.collision_source`); the robot's counts are kept in ``robot_human`` / ``robot_static``.
    """
    kinds = [c.type for c in collisions]
    hum = sum(k == "human" for k in kinds)
    sta = sum(k == "static" for k in kinds)
    dur = (trial.finished - trial.started) if trial.finished is not None else None
    acts = trial.agent_summary.get("actions") if isinstance(trial.agent_summary, dict) else None
    gt = trial.gt_collisions_human is not None
    return TrialSummary(
        trial=trial,
        steps=len(acts) if isinstance(acts, list) else len(steps),
        motions=len(steps),
        collisions_human=int(trial.gt_collisions_human) if gt else hum,
        collisions_static=int(trial.gt_collisions_static or 0) if gt else sta,
        collisions_other=0 if gt else len(kinds) - hum - sta,
        path_length_m=path_length(trial, steps),
        duration_s=dur,
        robot_human=hum,
        robot_static=sta,
        source=trial.collision_source,
    )
