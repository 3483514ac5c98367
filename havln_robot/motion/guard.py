"""The safety layer around the executor: the input rules that refuse or stop motion (pure Python).

:class:`~havln_robot.motion.executor.Executor` judges one action on the inputs it is given
(obstacles, odometry, IMU yaw). :class:`MotionGuard` judges the inputs themselves -- whether the
streams behind them can be trusted -- and refuses an action at its start or stops it while it runs
when they cannot:

* **people source silent** (``require_people``): no people / people tracks received yet, or none
  for longer than ``people_timeout_s``: personal-space checks would be off. Refuses a start, stops
  a running action.
* **frozen streams** (``freeze_messages``): odometry or IMU still publishing but re-sending one
  header stamp or one bit-identical sample while the robot is commanded to move
  (:class:`~havln_robot.motion.checks.FreezeDetector`). Stops a running action.
* **non-finite streams**: odometry / IMU that send only non-finite values count as silent once
  their last accepted sample is older than ``sensor_timeout_s``. Stops a running action.
* **control-loop overload**: a control tick more than ``sensor_timeout_s`` after the previous one
  (or the action's start) stops the action; a tick more than :data:`OVERLOAD_PERIODS` periods
  late marks the results of that tick ("control loop overloaded": the loop starved the sensor
  callbacks, not the sensor).
* **unusable depth** (``require_depth``): the newest depth frame cannot be used
  (:meth:`~havln_robot.motion.obstacles.ObstacleTracker.frame_problem`: empty, no or wrong
  camera_info, frozen, old), or a configured LiDAR (``lidar_topic``) sent no cloud within
  ``lidar_timeout_s`` (``lidar_problem``). A forward step is refused at its start with the reason,
  and stopped while it still drives to its goal.

motion_node (the ROS shell) and the batch simulator (:class:`havln_robot.sim.closed_loop.ClosedLoop`)
both feed it their streams and call :meth:`MotionGuard.start` / :meth:`MotionGuard.tick` instead of
the executor's ``start`` / ``update``, so every rule acts in both worlds with the same reason text.
All times are seconds on one clock (the node's, or the batch world's sim time).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from havln_robot import actions as A
from havln_robot.motion.checks import FreezeDetector
from havln_robot.motion.executor import Executor, Pose2D, Tick
from havln_robot.motion.safety import Obstacles

#: The control loop counts as overloaded when a tick comes this many periods late (results of that
#: tick are marked); while an action runs and no tick came for longer than ``sensor_timeout_s`` the
#: action is aborted as overloaded.
OVERLOAD_PERIODS = 5.0

#: The streams the freeze and non-finite rules watch, with their topic parameter.
WATCHED_STREAMS = (("odom", "odom_topic"), ("imu", "imu_topic"))


@dataclass(frozen=True)
class GuardConfig:
    """The guard's settings (the ``motion_node`` parameters of the same names,
    :data:`havln_robot.motion.params.MOTION_PARAMS`); the topic names only word the reasons.

    Attributes:
        control_rate_hz: control tick rate, Hz.
        sensor_timeout_s: longest tick gap / non-finite silence while an action runs, s.
        people_timeout_s: the people source counts as silent after this long, s.
        require_people: refuse / stop motion while the people source is silent.
        require_depth: refuse / stop forward steps while the depth frame is unusable.
        freeze_messages: consecutive identical messages = frozen stream (0 disables).
        topics: ``{parameter: topic}`` of odom_topic, imu_topic, depth_topic, lidar_topic,
            people_topic, people_tracks_topic ("" = none).
    """

    control_rate_hz: float = 50.0
    sensor_timeout_s: float = 0.3
    people_timeout_s: float = 1.0
    require_people: bool = False
    require_depth: bool = True
    freeze_messages: int = 20
    topics: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_params(cls, p: Mapping[str, Any]) -> GuardConfig:
        """From a validated ``motion_node`` parameter dict."""
        names = ("odom_topic", "imu_topic", "depth_topic", "lidar_topic", "people_topic", "people_tracks_topic")
        return cls(
            control_rate_hz=float(p["control_rate_hz"]),
            sensor_timeout_s=float(p["sensor_timeout_s"]),
            people_timeout_s=float(p["people_timeout_s"]),
            require_people=bool(p["require_people"]),
            require_depth=bool(p["require_depth"]),
            freeze_messages=int(p["freeze_messages"]),
            topics={k: str(p.get(k, "")) for k in names},
        )


@dataclass
class Guarded:
    """What one guarded call did.

    Attributes:
        tick: the executor's :class:`Tick` to act on; None from :meth:`MotionGuard.tick` when no
            action runs (the caller keeps publishing zero as it does when idle).
        errors: ERROR lines to log (a refusal, a stop, the people source going silent).
        infos: INFO lines to log (the people source back).
    """

    tick: Tick | None
    errors: list[str] = field(default_factory=list)
    infos: list[str] = field(default_factory=list)


class MotionGuard:
    """The input rules of the module docstring, with the state they need.

    Feed it: :meth:`heard_people` per people / tracks message, :meth:`stream_value` per odometry /
    IMU message (finite or not), :meth:`sample` per accepted odometry / IMU message (freeze check);
    act through :meth:`start` and :meth:`tick`; :meth:`reset` when the clock jumped back.

    Args:
        cfg: settings.
        t: now, s: the guard's start counts as people heard for the first ``people_timeout_s``.
    """

    def __init__(self, cfg: GuardConfig, t: float) -> None:
        self.cfg = cfg
        self._freeze = {k: FreezeDetector(k, cfg.freeze_messages) for k, _ in WATCHED_STREAMS}
        self._frozen: str | None = None  # latched by sample(), acted on at the next tick
        # stream -> "field = value" of the last message dropped as not finite, while no finite one came since
        self.non_finite: dict[str, str] = {}
        self.reset(t)

    def reset(self, t: float) -> None:
        """The clock jumped back to ``t``: forget every time (people heard, last control tick)."""
        self._people_heard_t: float | None = None  # receipt time of the last people / tracks message
        self._people_since = t
        self._people_silent_logged = False
        self._last_tick_t: float | None = None  # last control tick or action start

    # ------------------------------------------------------------------ inputs
    def heard_people(self, t: float) -> None:
        """A people (or people tracks) message with finite values arrived at ``t``."""
        self._people_heard_t = t

    def stream_value(self, stream: str, bad: str | None) -> None:
        """A message of ``stream`` (``odom``, ``imu``, ``people``, ``tracks``) arrived: ``bad`` is
        ``"field = value"`` of its first non-finite value (message dropped), None when all are finite."""
        if bad is not None:
            self.non_finite[stream] = bad
        else:
            self.non_finite.pop(stream, None)

    def sample(self, stream: str, stamp: object, values: tuple[float, ...], t: float, ex: Executor) -> None:
        """An accepted ``odom`` / ``imu`` message: its header stamp (any comparable value) and values
        (compared bit for bit), received at ``t``; a freeze is acted on at the next :meth:`tick`."""
        commanded = ex.moving_commanded(t)
        if stream == "imu" and commanded and ex.translating:
            # a noiseless (simulated) IMU on a straight run repeats its sample: judge IMU samples on
            # turns only; its stamps are still checked
            values = (float(t),)
        why = self._freeze[stream].update(stamp, values, commanded)
        if why is not None and self._frozen is None:
            self._frozen = why

    # ------------------------------------------------------------------ reasons
    def _topic(self, key: str) -> str:
        return self.cfg.topics.get(key, "")

    def _people_topics(self) -> str:
        return " / ".join(x for x in (self._topic("people_topic"), self._topic("people_tracks_topic")) if x)

    def _people_silence(self, t: float) -> float | None:
        """How long (s) the people source has been silent when longer than ``people_timeout_s``, else None."""
        heard = self._people_heard_t if self._people_heard_t is not None else self._people_since
        silent = t - heard
        return silent if silent > self.cfg.people_timeout_s else None

    def people_reason(self, t: float) -> str | None:
        """Why motion must not run for lack of people (``require_people``), or None."""
        if not self.cfg.require_people:
            return None
        if self._people_heard_t is None:
            return f"no people received yet on {self._people_topics()}: personal-space checks off (require_people)"
        silent = self._people_silence(t)
        if silent is None:
            return None
        return (
            f"people source {self._people_topics()} silent for {silent:.1f} s (> people_timeout_s "
            f"{self.cfg.people_timeout_s:g}): personal-space checks off (require_people)"
        )

    def _watch_people(self, t: float, out: Guarded) -> None:
        """One ERROR when the people source goes silent (personal space off), a note when it is back."""
        silent = self._people_silence(t)
        if silent is not None and not self._people_silent_logged:
            if self._people_heard_t is None and not self.cfg.require_people:
                return  # never configured / never heard and not required: nothing was on
            self._people_silent_logged = True
            out.errors.append(
                f"people source silent for {silent:.1f} s ({self._people_topics()}): personal-space checks off"
                + ("; motion refused until it is back (require_people)" if self.cfg.require_people else "")
            )
        elif silent is None and self._people_silent_logged:
            self._people_silent_logged = False
            out.infos.append(f"people source back ({self._people_topics()}): personal-space checks on")

    def depth_reason(self, problem: tuple[str, str] | None) -> str | None:
        """A sensor problem (kind, one line: the tracker's ``frame_problem`` or ``lidar_problem``) as a
        reason naming the depth or LiDAR topic, or None."""
        if problem is None:
            return None
        return f"{self._topic('lidar_topic' if problem[0] == 'lidar' else 'depth_topic')}: {problem[1]}"

    def non_finite_silence(self, t: float, odom_t: float | None, imu_t: float | None) -> str | None:
        """Why odometry / IMU count as silent (only non-finite messages for longer than
        ``sensor_timeout_s`` since the last accepted one at ``odom_t`` / ``imu_t``), else None."""
        timeout = self.cfg.sensor_timeout_s
        for (stream, topic), st in zip(WATCHED_STREAMS, (odom_t, imu_t), strict=True):
            bad = self.non_finite.get(stream)
            if bad is not None and st is not None and t - st > timeout:
                return f"{self._topic(topic)} silent for {t - st:.2f} s (> sensor_timeout_s {timeout:g}): only non-finite messages ({bad})"
        return None

    # ------------------------------------------------------------------ rules
    def start(
        self,
        ex: Executor,
        action: str,
        t: float,
        odom: Pose2D | None,
        imu_yaw: float | None,
        obstacles: Obstacles | None,
        depth_problem: tuple[str, str] | None = None,
    ) -> Guarded:
        """Start ``action`` on ``ex`` (:meth:`Executor.start`) unless a rule refuses it.

        Args:
            ex: the executor.
            action: the literal (not STOP: the caller stops directly).
            t: now, s.
            odom: odometry (x, y, yaw), odom frame, m / rad; as :meth:`Executor.start`.
            imu_yaw: gyro yaw, rad; as :meth:`Executor.start`.
            obstacles: obstacles in base_link; as :meth:`Executor.start`.
            depth_problem: the depth tracker's ``frame_problem(t)`` (None: usable or none received).

        Returns:
            The tick; a start refused for lack of people is aborted at once (outcome ``aborted``,
            detail "<reason>; not started"); the executor's require_depth refusal of a forward step
            names why the depth frame is unusable.
        """
        out = Guarded(None)
        was_busy = ex.busy
        tick = ex.start(action, t, odom, imu_yaw, obstacles)
        people = self.people_reason(t)
        if not was_busy and ex.busy and people is not None:
            out.errors.append(f"{action} refused: {people}")
            tick = ex.abort(t, f"{people}; not started")
        depth = self.depth_reason(depth_problem) if self.cfg.require_depth else None
        if depth is not None and A.is_motion(action) and A.MOTION_SPECS[action].kind is A.ActionKind.TRANSLATE:
            if not was_busy and ex.busy:  # fresh depth, but the configured LiDAR is lost: refused here
                out.errors.append(f"{action} refused: {depth} (require_depth)")
                tick = ex.abort(t, f"{depth} (require_depth); not started")
            for r in tick.results:
                # the executor's require_depth refusal, worded with the reason the depth is unusable
                if r.action == action and r.outcome == "aborted" and depth not in r.detail:
                    r.detail = f"{r.detail} ({depth})"
        self._last_tick_t = t
        out.tick = tick
        return out

    def tick(
        self,
        ex: Executor,
        t: float,
        odom: Pose2D | None,
        imu_yaw: float | None,
        obstacles: Callable[[], Obstacles],
        accel: tuple[float, float] | None = None,
        odom_t: float | None = None,
        imu_t: float | None = None,
        depth_problem: Callable[[], tuple[str, str] | None] | None = None,
    ) -> Guarded:
        """One control tick: stop the running action when a rule says so, else :meth:`Executor.update`.

        In order: control loop overloaded (tick gap > ``sensor_timeout_s``), a frozen or only
        non-finite odometry / IMU stream, the people source silent (``require_people``), unusable
        depth under a forward step still driving to its goal (``require_depth``). Every stop is
        outcome ``aborted`` with the reason and "; robot stopped".

        Args:
            ex: the executor.
            t: now, s.
            odom: odometry (x, y, yaw), odom frame, m / rad; as :meth:`Executor.update`.
            imu_yaw: gyro yaw, rad; as :meth:`Executor.update`.
            accel: horizontal IMU acceleration, m/s^2; as :meth:`Executor.update`.
            odom_t: time of the last accepted odometry sample, s (also for the non-finite rule).
            imu_t: time of the last accepted IMU sample, s (also for the non-finite rule).
            obstacles: returns the obstacles (asked only when the executor is updated).
            depth_problem: returns the depth tracker's ``frame_problem(t)`` (asked only under a
                forward step); None = no depth stream to judge.

        Returns:
            :class:`Guarded`; its ``tick`` is None when no action runs.
        """
        out = Guarded(None)
        cfg = self.cfg
        frozen, self._frozen = self._frozen, None
        frozen = frozen or self.non_finite_silence(t, odom_t, imu_t)
        gap = t - self._last_tick_t if self._last_tick_t is not None else 0.0
        self._last_tick_t = t
        self._watch_people(t, out)
        busy = ex.busy
        people = self.people_reason(t) if busy else None
        # as the executor's own stale-depth check: a forward step still driving to its goal
        # (not settling, braking or reverting: stopping those is what they do already)
        depth = None
        if cfg.require_depth and depth_problem is not None and ex.translating and ex.phase == "moving":
            depth = self.depth_reason(depth_problem())
        why = None
        if busy and gap > cfg.sensor_timeout_s:
            why = (
                f"control loop overloaded: {gap:.2f} s since the previous control tick (period "
                f"{1.0 / cfg.control_rate_hz:.3f} s; > sensor_timeout_s {cfg.sensor_timeout_s:g}); robot stopped"
            )
        elif busy and frozen is not None:
            why = f"{frozen}; robot stopped"
        elif people is not None:
            why = f"{people}; robot stopped"
        elif depth is not None:
            why = f"{depth} (require_depth); robot stopped"
        if why is not None:
            out.errors.append(why)
            out.tick = ex.abort(t, why)
            return out
        if not busy:
            ex.note_tick(t)  # the late-tick speed cap measures idle ticks too
            return out
        tick = ex.update(t, odom, imu_yaw, obstacles(), accel, odom_t, imu_t)
        if gap > OVERLOAD_PERIODS / cfg.control_rate_hz:
            for r in tick.results:  # e.g. "odom silent": the loop starved the callbacks, not the sensor
                r.detail += f" (control loop overloaded: {gap:.2f} s since the previous control tick)"
        out.tick = tick
        return out
