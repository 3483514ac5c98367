"""The trial logger's logic without ROS: typed records in, trial rows out.

:class:`TrialSession` turns the records of a running robot (:mod:`havln_robot.records`: action
results, collision records, ground truth, agent status, episode done) and its odometry into
:class:`~havln_robot.trials.store.Step` and :class:`~havln_robot.trials.store.Collision` rows of
the :class:`~havln_robot.trials.store.TrialStore`, opens trials on instructions (from the
parameters or the campaign's next planned trial) and closes them with a verdict. trial_logger_node
only wires topics, services and parameters to it (and records the MCAP bag).

The rules, each a pure function tested on its own:

* :func:`auto_verdict` -- sim auto-judge: success = the agent said STOP and NE < goal radius.
* :func:`credits_previous_step` -- a collision report arriving just after the result of the
  action it belongs to (outcome ``collision``, nothing counted yet) is credited to that step.
* :func:`is_superseded_end` -- the end of an earlier episode (another instruction, or several
  steps although this trial has none) does not end the running trial.
* :func:`planned_overrides` -- what a live start adds to a campaign's planned trial.

Only real contacts are collisions of a trial (:attr:`havln_robot.records.CollisionRecord.is_contact`);
refused and stopped-short motions stay in the MCAP bag and the step's outcome.

Times: ``stamp`` arguments are ROS time, s (the store's stamps); the late-collision window runs
on the session's monotonic ``clock``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from havln_robot.episodes import is_success
from havln_robot.records import (
    ActionResult,
    AgentStatus,
    CollisionRecord,
    EndReason,
    EpisodeDone,
    GroundTruth,
    Verdict,
    finite_or_none,
    is_blocked_outcome,
)
from havln_robot.text import is_blank, normalize_instruction, terminal_safe
from havln_robot.trials.metrics import ROBOT_RESET
from havln_robot.trials.regions import UNKNOWN_REGION, canonical_region
from havln_robot.trials.store import Collision, DiskFull, Step, Trial, TrialError, TrialStore

#: How long after a blocked result ("collision" or "stall") a collision report is still credited to that step, s.
LATE_COLLISION_S = 1.0
#: Trial fields a live start adds to a planned (campaign) trial.
_PLAN_KEYS = ("instruction", "episode_id", "scan")

Pose2D = tuple[float, float, float]  # x m, y m, yaw rad


class Log(Protocol):
    """Where the session reports (an rclpy logger fits)."""

    def info(self, msg: str) -> Any: ...

    def warning(self, msg: str) -> Any: ...

    def error(self, msg: str) -> Any: ...


class _Quiet:
    def info(self, msg: str) -> None:
        pass

    warning = error = info


@dataclass(frozen=True)
class SessionConfig:
    """Static settings (trial_logger_node parameters of the same names).

    Attributes:
        auto_start: a new instruction opens a trial (superseding a running one).
        auto_end: ``episode_done`` finishes the trial.
        auto_judge: the verdict comes from ground truth (:func:`auto_verdict`).
    """

    auto_start: bool = True
    auto_end: bool = True
    auto_judge: bool = False


@dataclass(frozen=True)
class TrialMeta:
    """What a new trial is opened with (read from the live parameters at each start).

    Attributes:
        meta: trial fields (region, instance, operator, people_present, goal_radius, goal...).
        platform: ``go2`` | ``sim`` | ...
        campaign: campaign name or id ("" = no campaign: trials come from ``meta``).
    """

    meta: Mapping[str, Any]
    platform: str
    campaign: str = ""


@dataclass(frozen=True)
class _LastCollisionStep:
    seq: int
    action: str
    t: float  # session clock, s
    credited: bool


# --- rules --------------------------------------------------------------------------------------------


def auto_verdict(
    end_reason: str, ne_m: float | None, goal_radius_m: float, unreachable: bool = False, detail: str = ""
) -> tuple[Verdict, str]:
    """The sim auto-judge.

    Args:
        end_reason: why the agent ended (``stop``, ``budget``, ``blocked``, ``aborted``, ...).
        ne_m: navigation error from ground truth (the sim's walkable distance), m; None when there is none.
        goal_radius_m: success radius, m.
        unreachable: the sim found no walkable path to the goal (never a success).
        detail: the agent's one-line explanation (``detail`` of episode_done) for an aborted episode.

    Returns:
        (verdict, reason text): aborted when the episode was aborted (policy exception, lost sensors
        or camera, hung inference, e-stop, shutdown: the reason says which) or there is no ground
        truth; success when the agent said STOP within the radius (NE < radius) of a reachable goal;
        failure otherwise.
    """
    if end_reason == EndReason.ABORTED:
        return Verdict.ABORTED, f"auto: aborted ({detail or 'no detail given'})"
    if ne_m is None:
        return Verdict.ABORTED, f"auto: no ground truth ({end_reason})"
    ok = is_success(end_reason == EndReason.STOP, ne_m, goal_radius_m, unreachable=unreachable)
    why = f"auto: {end_reason}, NE {ne_m:.2f} m{' (goal unreachable)' if unreachable else ''}"
    return (Verdict.SUCCESS if ok else Verdict.FAILURE), why


def credits_previous_step(last: _LastCollisionStep | None, now: float, action: str) -> bool:
    """True when a contact report arriving at ``now`` belongs to the last recorded step: that step's
    outcome was ``collision``, no contact was counted for it yet, it ended less than
    :data:`LATE_COLLISION_S` ago, and the report names its action (or none)."""
    return last is not None and not last.credited and now - last.t < LATE_COLLISION_S and action in (last.action, "")


def is_superseded_end(done: EpisodeDone, trial_instruction: str, steps_recorded: int) -> bool:
    """True when ``done`` ends an earlier episode, not the running trial's: it names another
    instruction, or it counts more than one step while this trial has recorded none (it arrived
    after the new instruction opened the trial)."""
    other = done.instruction.strip()
    if other and trial_instruction and other != trial_instruction.strip():
        return True
    return done.steps is not None and steps_recorded == 0 and done.steps > 1


def planned_overrides(
    meta: Mapping[str, Any], planned_instruction: str, instruction: str, provenance: Mapping[str, Any] = {}
) -> dict[str, Any]:
    """Fields a live start sets on a campaign's planned trial: the start pose (``start_*``), the
    instruction, episode and scan, the provenance fields; a note when the instruction differs from
    the planned one."""
    out = {k: v for k, v in meta.items() if k.startswith("start_") or k in _PLAN_KEYS or k in provenance}
    if planned_instruction and instruction and planned_instruction.strip() != instruction.strip():
        out["notes"] = f"planned instruction differed: {planned_instruction}"
    return out


def start_pose_meta(odom: Pose2D | None, gt: GroundTruth | None) -> dict[str, Any]:
    """Trial start fields from odometry (``start_x/y/yaw``, odom frame) and ground truth
    (``start_map_x/y/yaw`` in the map frame, ``episode_id``, ``scan``)."""
    meta: dict[str, Any] = {}
    if odom is not None:
        meta.update(start_x=odom[0], start_y=odom[1], start_yaw=odom[2])
    if gt is not None:
        if gt.has_pose:
            yaw = finite_or_none(gt.yaw_deg)
            meta.update(start_map_x=gt.x, start_map_y=gt.y, start_map_yaw=math.radians(yaw or 0.0))
        for key in ("episode_id", "scan"):
            if getattr(gt, key):
                meta[key] = getattr(gt, key)
    return meta


def _rad(deg: float | None) -> float | None:
    d = finite_or_none(deg)
    return None if d is None else math.radians(d)


# --- the session --------------------------------------------------------------------------------------


class TrialSession:
    """Trial bookkeeping over a :class:`TrialStore` (not thread-safe: the caller serialises calls).

    Args:
        store: the trial store (shared with ``havln-robot trial``: a trial opened or ended there
            is picked up by :meth:`sync`).
        config: static settings.
        trial_meta: returns the metadata of a new trial (live parameters); may raise ``ValueError``
            (e.g. ``ConfigError`` for a bad region), which :meth:`on_instruction` reports.
        log: where to report.
        clock: monotonic time source, s (late-collision window).
        on_trial: called with the newly attached trial, or None when the session lets go of it
            (the ROS shell starts / stops the MCAP bag there).
        provenance: fields every trial of this logger gets (policy, checkpoint hash, software,
            profile; :func:`havln_robot.trials.provenance.collect`); a trial opened by the CLI gets
            them when attached.
        on_disk_full: called first when the store reports a full disk (the shell drops its bag quietly).
    """

    def __init__(
        self,
        store: TrialStore,
        config: SessionConfig,
        trial_meta: Callable[[], TrialMeta],
        log: Log | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_trial: Callable[[Trial | None], None] = lambda t: None,
        provenance: Mapping[str, Any] | None = None,
        on_disk_full: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.config = config
        self.trial_meta = trial_meta
        self.log: Log = log or _Quiet()
        self.clock = clock
        self.on_trial = on_trial
        self.provenance: dict[str, Any] = dict(provenance or {})
        self.on_disk_full = on_disk_full
        self.unclosable: int | None = None  # a trial a full disk left open: not recorded into again
        self.trial: Trial | None = None
        self.odom: Pose2D | None = None
        self.odom_problem = ""  # why the latest odometry was not usable ("x = nan"), "" when it was
        self.imu_yaw: float | None = None
        self.ground_truth: GroundTruth | None = None
        self.people: tuple[int, float | None, str] = (0, None, "")
        self.agent: AgentStatus | None = None
        self._collisions_since_step = 0
        self._last_collision_step: _LastCollisionStep | None = None
        self._reset_reason = ""  # a robot reset since the last step: marks the next step (path not joined)
        self._wal_warned = False
        self._gt_base: tuple[str, int, int] | None = None  # (episode, human, static) of the truth when the trial opened

    # --- trial tracking -------------------------------------------------------------------------
    def _attach(self, trial: Trial) -> None:
        if self.trial is None or self.trial.id != trial.id:
            if self.provenance and not trial.software:  # opened by the CLI: this logger's provenance
                trial = self.store.update_trial(trial.id, **self.provenance)
            self.trial = trial
            self._collisions_since_step = 0
            gt = self.ground_truth
            # the simulator counts per episode: contacts before this trial opened are not its own
            self._gt_base = (gt.episode_id, gt.collisions_human, gt.collisions_static) if gt is not None else None
            self.on_trial(trial)

    def _release(self) -> None:
        if self.trial is not None:
            self.trial = None
            self.on_trial(None)

    def sync(self) -> Trial | None:
        """The store's running trial (it may have been opened or ended by the CLI), attached.

        Raises:
            TrialError: the store cannot be read.
        """
        run = self.store.running_trial()
        if run is not None and run.id == self.unclosable:
            return None  # left open by a full disk: not recorded into again
        if run is None:
            self._release()
            return None
        self._attach(run)
        self.trial = run
        return run

    def start_pose(self) -> dict[str, Any]:
        """Start fields from the latest odometry and ground truth (:func:`start_pose_meta`). When the
        latest odometry was not finite the start pose is left unknown (NULL) with a warning: the
        trial is still recorded."""
        if self.odom is None and self.odom_problem:
            self.log.warning(f"start pose unknown: the latest odometry is not finite ({self.odom_problem}); start_x/y/yaw left empty")
        return start_pose_meta(self.odom, self.ground_truth)

    def begin(self, instruction: str, supersede: str | None) -> Trial:
        """Open a trial from the live metadata (or the campaign's next planned trial).

        Raises:
            TrialError: the campaign is complete, or the store refuses.
            ValueError: ``trial_meta`` refused the parameters.
        """
        tm = self.trial_meta()
        meta = {**tm.meta, **self.start_pose(), **self.provenance}
        if instruction:
            meta["instruction"] = instruction
        if tm.campaign:
            nxt = self.store.next_planned(tm.campaign)
            if nxt is None:
                raise TrialError(f"campaign {tm.campaign!r} is complete")
            plan = planned_overrides(meta, nxt.instruction, instruction, self.provenance)
            trial = self.store.start_planned(nxt, supersede=supersede, platform=tm.platform, **plan)
        else:
            trial = self.store.start_trial(tm.platform, supersede=supersede, **meta)
        self._attach(trial)
        self.log.info(f"trial {trial.id} started ({trial.platform}, {trial.region}, people {trial.people_present})")
        return trial

    # --- inputs ---------------------------------------------------------------------------------
    def on_instruction(self, text: str) -> None:
        """A new instruction: attach it to a fresh trial, or open a trial (``auto_start``)."""
        raw, text = text, normalize_instruction(text)
        if is_blank(text):
            self.log.warning(f"empty instruction ignored (only blank, control or zero-width characters: {terminal_safe(repr(raw[:40]))})")
            return
        try:
            run = self.sync()
            if run is not None and self.store.step_count(run.id) == 0 and run.instruction.strip() in ("", text):
                if not run.instruction:
                    upd = {k: v for k, v in self.start_pose().items() if getattr(run, k, None) in (None, "")}
                    self.trial = self.store.update_trial(run.id, instruction=text, **upd)
                self.log.info(f"trial {run.id}: instruction received")
            elif self.config.auto_start:
                self.begin(text, supersede="superseded by a new instruction" if run is not None else None)
            elif run is not None:
                self.log.warning(f"trial {run.id} is running; new instruction not attached (auto_start is off)")
            else:
                self.log.info("instruction received; no trial running (auto_start off: call trial/start)")
        except (TrialError, ValueError) as exc:
            self.log.error(f"trial not started: {terminal_safe(exc)}")

    def on_odom(self, pose: Pose2D) -> None:
        """Odometry pose (x m, y m, yaw rad; odom frame). A pose with a non-finite value makes the pose
        unknown (None) until a finite one comes: the start pose of a trial opened meanwhile is NULL."""
        bad = [f"{k} = {v}" for k, v in zip(("x", "y", "yaw"), pose, strict=True) if not math.isfinite(v)]
        self.odom, self.odom_problem = (None, ", ".join(bad)) if bad else (pose, "")

    def on_imu_yaw(self, yaw: float) -> None:
        """IMU orientation yaw, rad."""
        self.imu_yaw = yaw

    def on_people(self, xy: list[tuple[float, float]]) -> None:
        """Detected people (x, y in base_link, m): count, nearest distance and index."""
        dists = [(math.hypot(x, y), i) for i, (x, y) in enumerate(xy)]
        near = min(dists) if dists else (None, "")
        self.people = (len(xy), near[0], str(near[1]))

    def on_agent_status(self, status: AgentStatus) -> None:
        """The agent's latest status (its state goes into the next step's result)."""
        self.agent = status

    def on_ground_truth(self, gt: GroundTruth) -> None:
        """Simulator truth; a trial opened before the first one gets its episode, scan and start pose now,
        and the running trial its ground-truth collision counts (stored when they change)."""
        self.ground_truth = gt
        t = self.trial
        if t is not None:
            self._record_gt_collisions(t, gt)
            self._record_scene(self.trial or t, gt)
            t = self.trial
        if t is None or t.episode_id or not gt.episode_id:
            return
        meta = {
            k: v
            for k, v in self.start_pose().items()
            if k in ("episode_id", "scan") or (k.startswith("start_map_") and getattr(t, k) is None)
        }
        try:
            self.trial = self.store.update_trial(t.id, **meta)
        except TrialError as exc:
            self.log.warning(f"trial {t.id}: episode from ground truth not recorded: {terminal_safe(exc)}")

    def _record_scene(self, t: Trial, gt: GroundTruth) -> None:
        """What the simulator knows of the episode and the trial lacks: the goal (map frame), the
        people in it and their region (a region name outside regions.py stays unknown). Plan rows and
        the operator's parameters are kept: only empty fields (no goal, 0 people, region unknown) are filled."""
        meta: dict[str, Any] = {}
        if t.goal_x is None and gt.goal_x is not None and gt.goal_y is not None:
            meta.update(goal_x=gt.goal_x, goal_y=gt.goal_y, goal_frame="map")
        if t.people_present == 0 and gt.people > 0:
            meta["people_present"] = gt.people
        if t.region == UNKNOWN_REGION and gt.region:
            try:
                meta["region"] = canonical_region(gt.region)
            except ValueError:
                pass
        if not meta:
            return
        try:
            self.trial = self.store.update_trial(t.id, **meta)
        except TrialError as exc:
            self.log.warning(f"trial {t.id}: goal / people / region from ground truth not recorded: {terminal_safe(exc)}")

    def _record_gt_collisions(self, t: Trial, gt: GroundTruth) -> None:
        """Store the simulator's contact counts since the trial opened (beside the robot's own
        classification in the collisions table); a new episode's counts start from zero."""
        base = self._gt_base
        if base is None or base[0] != gt.episode_id or gt.collisions_human < base[1] or gt.collisions_static < base[2]:
            # no truth yet when the trial opened, or the simulator began a new episode (counts from 0)
            base = self._gt_base = (gt.episode_id, 0, 0)
        counts = (gt.collisions_human - base[1], gt.collisions_static - base[2])
        if (t.gt_collisions_human, t.gt_collisions_static) == counts:
            return
        try:
            self.trial = self.store.update_trial(t.id, gt_collisions_human=counts[0], gt_collisions_static=counts[1])
        except DiskFull:
            self.disk_full(f"trial store {self.store.path}")
        except TrialError as exc:
            self.log.warning(f"trial {t.id}: ground-truth collisions not recorded: {terminal_safe(exc)}")

    def step_of(self, r: ActionResult, stamp: float) -> Step:
        """The :class:`Step` row of an action result with the latest pose, truth and people."""
        x, y, yawd = finite_or_none(r.x), finite_or_none(r.y), finite_or_none(r.yaw_deg)
        if (x is None or y is None) and self.odom is not None:
            x, y, yawd = self.odom[0], self.odom[1], math.degrees(self.odom[2])
        gt = self.ground_truth
        n_people, near_m, near_id = self.people
        if near_m is None and gt is not None and gt.nearest_person_m is not None:  # nobody on the floor: none
            near_m, near_id = gt.nearest_person_m, gt.nearest_human_id
        result: dict[str, Any] = r.to_values()
        if self._reset_reason:
            result[ROBOT_RESET] = self._reset_reason
        if self.agent is not None and self.agent.state:
            result["agent_state"] = self.agent.state
        return Step(
            seq=0,
            stamp=stamp,
            action=r.action,
            outcome=r.outcome.value,
            x=x,
            y=y,
            yaw=None if yawd is None else math.radians(yawd),
            imu_yaw=self.imu_yaw,
            map_x=None if gt is None else finite_or_none(gt.x),
            map_y=None if gt is None else finite_or_none(gt.y),
            map_yaw=None if gt is None else _rad(gt.yaw_deg),
            distance_to_goal_m=None if gt is None else finite_or_none(gt.distance_to_goal_m),
            collisions=self._collisions_since_step,
            nearest_person_m=near_m,
            nearest_person_id=str(near_id or ""),
            people_visible=n_people,
            result=result,
        )

    def on_result(self, r: ActionResult, stamp: float) -> Step | None:
        """Record one action result as a step of the running trial.

        Returns:
            The stored step; None when no trial runs or the store refused (reported).
        """
        run = self.sync()
        if run is None:
            return None
        try:
            rec = self.store.add_step(run.id, self.step_of(r, stamp))
        except DiskFull:
            self.disk_full(f"trial store {self.store.path}")
            return None
        except TrialError as exc:
            self.log.warning(f"step not recorded: {terminal_safe(exc)}")
            if "is finished" in str(exc):
                self.sync()
            return None
        self._reset_reason = ""
        credited = self._collisions_since_step > 0
        self._collisions_since_step = 0
        self._last_collision_step = (
            _LastCollisionStep(rec.seq, rec.action, self.clock(), credited) if is_blocked_outcome(rec.outcome) else None
        )
        return rec

    def on_robot_reset(self, reason: str) -> None:
        """The robot rebooted or its odometry was reset (go2_driver_node's ``robot_reset`` event): the
        running trial's next step carries the marker ``robot_reset`` (its path is not joined across the
        jump, :func:`havln_robot.trials.metrics.path_length`) and the trial's notes say why. The driver
        holds the robot; the operator resumes (``go2/resume``) or ends the trial."""
        run = self.sync()
        if run is None:
            return
        self._reset_reason = reason or "robot reset"
        line = f"{ROBOT_RESET}: {self._reset_reason}"
        self.log.warning(f"trial {run.id}: {line}; robot held until go2/resume, or end the trial")
        try:
            self.trial = self.store.update_trial(run.id, notes=(f"{run.notes}; {line}" if run.notes else line))
        except TrialError as exc:
            self.log.warning(f"trial {run.id}: robot reset not noted: {terminal_safe(exc)}")

    def on_collision(self, c: CollisionRecord, stamp: float) -> Collision | None:
        """Record a contact as a collision of the running trial (prevented ones are ignored).

        Returns:
            The stored collision; None when it was not a contact, no trial runs, or the store refused.
        """
        if not c.is_contact:
            return None
        if self.sync() is None:
            return None
        assert self.trial is not None
        late = self._last_collision_step
        to_last = credits_previous_step(late, self.clock(), c.action)
        gt = self.ground_truth
        row = Collision(
            step_seq=late.seq if to_last and late is not None else self.store.step_count(self.trial.id),
            stamp=stamp,
            type=c.type,
            x=finite_or_none(c.x),
            y=finite_or_none(c.y),
            yaw=_rad(c.yaw_deg),
            map_x=None if gt is None else finite_or_none(gt.x),
            map_y=None if gt is None else finite_or_none(gt.y),
            distance_m=finite_or_none(c.distance_m),
            human_id="" if c.human_id is None else str(c.human_id),
            detail=c.to_values(),
        )
        try:
            out = self.store.add_collision(self.trial.id, row, count_in_step=to_last)
        except DiskFull:
            self.disk_full(f"trial store {self.store.path}")
            return None
        except TrialError as exc:
            self.log.warning(f"collision not recorded: {terminal_safe(exc)}")
            return None
        if to_last and late is not None:
            self._last_collision_step = _LastCollisionStep(late.seq, late.action, late.t, True)
        else:
            self._collisions_since_step += 1
        return out

    def on_episode_done(self, done: EpisodeDone) -> Trial | None:
        """The agent finished: store its summary, finish the trial (``auto_end``) and judge it (``auto_judge``).

        Returns:
            The trial as stored after this; None when no trial runs or ``done`` ends a superseded episode.
        """
        run = self.sync()
        if run is None:
            return None
        if is_superseded_end(done, run.instruction, self.store.step_count(run.id)):
            return None  # the end of the previous (superseded) episode, arriving after the new instruction
        reason = done.reason
        t: Trial | None = run
        try:
            self.store.record_agent_summary(run.id, done.values)
            if not self.config.auto_end:
                self.log.info(f"trial {run.id}: agent finished ({terminal_safe(reason)}); waiting for the operator's verdict")
                return run
            t = self.store.finish_trial(run.id, reason)
            if self.config.auto_judge:
                ne = None if self.ground_truth is None else finite_or_none(self.ground_truth.distance_to_goal_m)
                if ne is None:
                    ne = next((s.distance_to_goal_m for s in reversed(self.store.steps(run.id)) if s.distance_to_goal_m is not None), None)
                unreachable = self.ground_truth is not None and self.ground_truth.goal_unreachable
                verdict, why = auto_verdict(reason, ne, run.goal_radius, unreachable, str(done.values.get("detail") or ""))
                if ne is None:
                    t = self.store.set_outcome(run.id, verdict.value, reason=why)
                else:
                    t = self.store.set_outcome(run.id, verdict.value, reason=why, ne_m=ne, ne_source="ground_truth")
                self.log.info(f"trial {run.id}: {t.outcome} ({terminal_safe(t.reason)})")
            else:
                self.log.info(f"trial {run.id} finished ({terminal_safe(reason)}); waiting for the operator's verdict")
        except DiskFull:
            self.disk_full(f"trial store {self.store.path}")
            return None
        except TrialError as exc:
            self.log.error(f"episode_done: {terminal_safe(exc)}")
        self._release()
        self.store_health()
        return t

    def store_health(self) -> None:
        """Warn once when the store's WAL checkpoint (run at every trial close) was blocked by a reader,
        and once when it completes again."""
        problem = getattr(self.store, "checkpoint_problem", "")
        if problem and not self._wal_warned:
            self.log.warning(terminal_safe(problem))
        elif not problem and self._wal_warned:
            self.log.info(f"{self.store.path}: WAL checkpointed again; the main file holds every closed trial")
        self._wal_warned = bool(problem)

    def recording_fault(self, why: str, paused: bool = False) -> None:
        """The MCAP bag cannot be written (``why``: one line): the running trial goes on in the store,
        marked with the fault (``recording_fault``: trial show, list, report); one error line."""
        run = self.trial
        if run is None:
            self.log.error(f"MCAP bag: {why}; no trial running")
            return
        n = self.store.step_count(run.id)
        note = f"MCAP bag stopped after step {n}: {why}"
        try:
            self.trial = self.store.update_trial(run.id, recording_fault=note)
        except DiskFull:
            self.disk_full(f"trial store {self.store.path}")
            return
        except TrialError as exc:
            self.log.warning(f"trial {run.id}: recording fault not stored: {terminal_safe(exc)}")
        then = (
            "the robot is stopped (agent paused: mcap_on_fault pause); resume from the console or publish false on the pause topic"
            if paused
            else "the trial goes on, recorded in the trial store only (marked in trial show and the report)"
        )
        self.log.error(f"trial {run.id}: recording fault -- {terminal_safe(note)}; {then}")

    def disk_full(self, where: str) -> None:
        """A write hit a full disk (``where``: the store or the bag): one error line; the trial is
        closed ``aborted`` (reason ``disk full``) as far as the disk allows, else left open and
        skipped (shown as interrupted, closed at the next logger start). Committed steps stay."""
        self.on_disk_full()
        run, self.trial = self.trial, None
        if run is None:
            self.log.error(f"disk full ({where}); no trial running")
            return
        try:
            self.store.set_outcome(run.id, Verdict.ABORTED.value, reason="disk full", end_reason="disk full", overwrite=True)
            closed = f"trial {run.id} closed as aborted (disk full)"
        except TrialError:
            self.unclosable = run.id
            closed = f"trial {run.id} left open (no space even to close it; shown as interrupted, closed at the next logger start)"
        self.log.error(f"disk full ({where}): {closed}; every step committed before is kept -- free space on that disk")

    # --- operator -------------------------------------------------------------------------------
    def end(self, verdict: Verdict, reason: str) -> Trial:
        """The operator's verdict on the running or unjudged trial.

        Raises:
            TrialError: no running or unjudged trial, or the store refuses.
        """
        cur = self.store.current_trial()
        if cur is None:
            raise TrialError("no running or unjudged trial")
        t = self.store.set_outcome(cur.id, verdict.value, reason=reason)
        if self.trial is not None and self.trial.id == t.id:
            self._release()
        self.store_health()
        return t

    def close(self, reason: str = "shutdown") -> None:
        """Shutdown: close a running trial as aborted, ``reason`` saying why (``shutdown``, or
        ``node X crashed: ...`` when a node's callback failed). Raises what the store raises."""
        run = self.store.running_trial()
        if run is not None:
            self.store.set_outcome(run.id, Verdict.ABORTED.value, reason=reason, end_reason=reason)
