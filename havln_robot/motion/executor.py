"""Closed-loop action executor: one HA-VLN action literal -> a velocity-command sequence.

Pure Python, tick based, no ROS. The caller (``motion_node``, the motion bench, tests) feeds the
latest odometry pose, the gyro-integrated yaw (:class:`havln_robot.motion.checks.GyroYaw`) and
the obstacles it knows of at every control tick; the executor answers with a ``cmd_vel``
``(vx m/s, wz rad/s)`` in base_link and, when an action ends, its :class:`ActionResult`.

Actions (HA-VLN 2.0 / VLN-CE step sizes, :mod:`havln_robot.actions`)
---------------------------------------------------------------------
* ``MOVE_FORWARD``: 0.25 m along the start heading; distance from odometry, heading held on
  the gyro yaw.
* ``TURN_LEFT`` / ``TURN_RIGHT``: +15 deg / -15 deg (REP 103, CCW positive) on the gyro yaw.
* ``LOOK_UP`` / ``LOOK_DOWN``: +/-30 deg camera pitch. ``look_mode="virtual"`` tracks a camera
  pitch (the simulator renders it; it is reported as ``pitch_deg``), ``"unsupported"`` answers
  outcome ``unsupported`` (the Go2 has no camera tilt; body pitch is not used, see docs/motion.md).
* ``STOP``: zero velocity at once, held; preempts a running action (outcome ``aborted``).
* ``SWEEP_LEFT`` / ``SWEEP_RIGHT`` (robot-side primitives, :data:`havln_robot.actions.PRIMITIVE_TABLE`):
  one 360 deg turn at the constant sweep rate :attr:`MotionConfig.sweep_w` (see :func:`sweep_rate`)
  while the camera streams (continuous-sweep panorama). A hazard stops it without a revert (turning
  back through up to 360 deg would not be safer); the executed yaw travels in the result.

Velocity profiles are trapezoids within the configured speed / acceleration limits, computed
on a prediction that adds the commands still "in flight" (actuation latency) to the measured
progress, so the robot stops on target despite the delay. After the profile the executor waits
for the in-flight commands to take effect, measures, and corrects at creep speed if needed.

Safety: the path ahead is checked before and during motion (depth free space, personal space,
contact), together with stall, IMU jolt and gyro/odometry slip. On a collision the robot stops,
a :class:`CollisionRecord` is emitted and it backs off to the pre-action pose (HA-VLN revert).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from havln_robot import actions as A
from havln_robot.geometry import first_non_finite, wrap_angle
from havln_robot.motion.checks import StallDetector, jolt_check, slip_check
from havln_robot.motion.safety import Footprint, Hazard, Obstacles, contact_hazard, forecast_hazard, forward_hazard, turn_hazard
from havln_robot.records import BLOCKED_DETAIL, BLOCKED_STATE, PARTIAL_DETAIL, ActionResult, CollisionRecord, Outcome

#: Action outcomes (the values of :class:`havln_robot.records.Outcome`).
OUTCOMES = tuple(o.value for o in Outcome)

__all__ = ["ActionResult", "CollisionRecord", "Executor", "MotionConfig", "OUTCOMES", "Tick"]

Pose2D = tuple[float, float, float]  # x m, y m, yaw rad (odom frame)


def min_duration(amount: float, v_max: float, a_max: float) -> float:
    """Physical minimum time (s) to travel ``amount`` (m or rad) from rest to rest with a
    trapezoidal profile limited by speed ``v_max`` and acceleration ``a_max``.

    Raises:
        ValueError: a limit is not positive.
    """
    if v_max <= 0 or a_max <= 0:
        raise ValueError("v_max and a_max must be > 0")
    d = abs(amount)
    if d >= v_max * v_max / a_max:
        return d / v_max + v_max / a_max
    return 2.0 * math.sqrt(d / a_max)


def sweep_rate(w_max: float, exposure_s: float, max_blur_deg: float, frame_rate_hz: float, max_frame_spacing_deg: float) -> float:
    """Constant yaw rate of a panorama sweep, rad/s: the largest rate within every budget.

    * the profile: ``w_max`` (rad/s);
    * motion blur: the camera turns ``exposure_s * rate`` during one exposure, at most ``max_blur_deg``
      (default 0.5 deg);
    * view headings: consecutive frames are ``rate / frame_rate_hz`` apart, at most
      ``max_frame_spacing_deg``, so the frame nearest a view heading is within half of it
      (1.2 deg spacing: within 0.6 deg, inside the 0.85 deg selection tolerance even when a loaded
      machine delivers 25 Hz instead of 30; 0.15 deg of the 1.0 deg rule are left for the IMU).

    A budget given as 0 (``exposure_s``, ``frame_rate_hz``) is not applied.

    Raises:
        ValueError: ``w_max`` is not positive.
    """
    if w_max <= 0:
        raise ValueError("w_max must be > 0")
    rate = w_max
    if exposure_s > 0:
        rate = min(rate, math.radians(max_blur_deg) / exposure_s)
    if frame_rate_hz > 0:
        rate = min(rate, math.radians(max_frame_spacing_deg) * frame_rate_hz)
    return rate


#: Slip threshold growth during a sweep, per radian turned: odometry yaw has a scale error (1 % std in
#: the simulator's NoiseModel; leg odometry on the Go2 is of the same order), which a 360 deg sweep
#: turns into up to ~4 deg of honest disagreement with the gyro; 3 % = 3 std.
SWEEP_SLIP_PER_RAD = 0.03

#: A heading chain (see :meth:`Executor.start`) links actions at most this far apart, s: a panorama's
#: turns are ~1 s apart; after a longer pause gyro drift or a hand on the robot may have moved it.
CHAIN_MAX_AGE_S = 10.0


#: Odometry / IMU jump check (see :meth:`Executor.update`): between two consecutive samples the robot
#: cannot move faster than this factor times the fastest speed the executor ever commands
#: (:attr:`MotionConfig.v_max` / :attr:`MotionConfig.v_rev_max`, i.e. motion_node's
#: ``max_linear_speed`` / ``max_reverse_speed``; :attr:`MotionConfig.w_max` / :attr:`MotionConfig.sweep_w`
#: for yaw). 2x leaves room for the base's own overshoot and a push; a faster step is an odometry
#: reset, a wrong pose estimate or a corrupt message, never motion.
JUMP_SPEED_FACTOR = 2.0

#: Position step always allowed between two samples on top of ``JUMP_SPEED_FACTOR * v * dt``, m:
#: leg-odometry jitter (cm on the Go2; the simulator's random walk is 5 mm per sqrt(m)) and a sample
#: stamped before the action started. A 2 m odometry reset is 20 times this.
JUMP_MARGIN_M = 0.10

#: Yaw step always allowed between two samples on top of ``JUMP_SPEED_FACTOR * w * dt``, rad (10 deg):
#: odometry yaw jitter and gyro noise integrated over a sample (a few tenths of a degree).
JUMP_MARGIN_RAD = math.radians(10.0)

#: Commanded travel toward the goal during an action (m or rad, integral of the command) is bounded by
#: this factor times the goal plus the overshoot bound (:meth:`Executor._overshoot_bound`): a robot that
#: delivers two thirds of its commanded speed still arrives; more than that is odometry that does not
#: follow the robot (it lags, froze or jumped back), and driving on would run the robot far past the goal.
CMD_TRAVEL_FACTOR = 1.5

#: How long the longest control-tick interval is remembered for the late-tick speed cap, s
#: (:meth:`Executor.note_tick`): a loaded machine that starved the loop once will do it again.
TICK_WINDOW_S = 10.0


@dataclass(frozen=True)
class MotionConfig:
    """Executor settings; build it from ``MOTION_PARAMS`` values with :meth:`from_params`.

    Units: m, m/s, m/s^2, rad, rad/s, rad/s^2, s.
    """

    v_max: float = 0.3
    v_rev_max: float = 0.2
    w_max: float = 0.8
    a_lin: float = 0.6
    a_ang: float = 2.5
    v_min: float = 0.03
    w_min: float = 0.08
    latency_s: float = 0.05
    heading_gain: float = 3.0
    pos_tol: float = 0.008
    yaw_tol: float = math.radians(0.4)
    max_corrections: int = 2
    timeout_factor: float = 2.5
    timeout_margin_s: float = 1.0
    sensor_timeout_s: float = 0.3
    look_mode: str = "virtual"
    max_pitch: float = math.radians(60.0)
    slip_rad: float = math.radians(4.0)
    stall_time_s: float = 0.6
    stall_m: float = 0.01
    stall_rad: float = math.radians(1.0)
    jolt_accel: float = 15.0
    footprint: Footprint = field(default_factory=Footprint)
    front_margin: float = 0.10
    side_margin: float = 0.05
    turn_margin: float = 0.03
    personal_space: float = 0.45
    person_radius: float = 0.3
    contact_reach: float = 1.5
    """A bump is human when a remembered person (:attr:`Obstacles.recalled`) is this close to the
    footprint, m (``contact_reach_m``; docs/motion.md 'Collision kinds')."""
    require_depth: bool = True
    min_points: int = 12
    revert: bool = True
    step_down: float = 0.0
    """Largest step down onto seen floor, m (:func:`~havln_robot.motion.safety.floor_hazard`)."""
    min_step: float = 0.05
    """Shortest partial MOVE_FORWARD, m: a step whose full length would enter the front margin moves
    as far as is safe when that is at least this much (else it is refused). 0 = never partial."""
    chain_heading: float = math.radians(2.0)
    sweep_yaw_tol: float = math.radians(0.15)
    forecast_margin_s: float = 1.0
    """Forecast horizon after an action's expected end, s; < 0 turns forecasting off."""
    sweep_w: float = math.radians(1.2) * 30.0
    """Constant yaw rate of SWEEP_LEFT/RIGHT, rad/s: :func:`sweep_rate` of the parameter defaults
    (0.8 rad/s profile, 8 ms exposure x 0.5 deg blur, 1.2 deg frame spacing at 30 Hz -> 36 deg/s)."""

    @classmethod
    def from_params(cls, p: Mapping[str, Any]) -> MotionConfig:
        """From a validated ``motion_node`` parameter dict (see :data:`havln_robot.motion.params.MOTION_PARAMS`)."""
        return cls(
            v_max=p["max_linear_speed"],
            v_rev_max=p["max_reverse_speed"],
            w_max=p["max_angular_speed"],
            a_lin=p["max_linear_accel"],
            a_ang=p["max_angular_accel"],
            v_min=min(p["min_linear_speed"], p["max_linear_speed"]),
            w_min=min(p["min_angular_speed"], p["max_angular_speed"]),
            latency_s=p["latency_s"],
            heading_gain=p["heading_gain"],
            pos_tol=p["position_tolerance_m"],
            yaw_tol=math.radians(p["yaw_tolerance_deg"]),
            max_corrections=p["max_corrections"],
            timeout_factor=p["timeout_factor"],
            timeout_margin_s=p["timeout_margin_s"],
            sensor_timeout_s=p["sensor_timeout_s"],
            look_mode=p["look_mode"],
            max_pitch=math.radians(p["max_camera_pitch_deg"]),
            slip_rad=math.radians(p["slip_yaw_deg"]),
            stall_time_s=p["stall_time_s"],
            stall_m=p["stall_min_progress_m"],
            stall_rad=math.radians(p["stall_min_progress_deg"]),
            jolt_accel=p["jolt_accel"],
            footprint=Footprint(p["footprint_length_m"], p["footprint_width_m"], p["footprint_radius_m"]),
            front_margin=p["front_margin_m"],
            side_margin=p["side_margin_m"],
            turn_margin=p["turn_margin_m"],
            personal_space=p["personal_space_m"],
            person_radius=p["person_radius_m"],
            contact_reach=p.get("contact_reach_m", 1.5),
            require_depth=p["require_depth"],
            min_points=p["min_obstacle_points"],
            revert=p["revert"],
            step_down=p.get("max_step_down_m", 0.0),
            min_step=p["min_partial_step_m"],
            chain_heading=math.radians(p["chain_heading_deg"]),
            sweep_yaw_tol=math.radians(p["sweep_yaw_tolerance_deg"]),
            forecast_margin_s=p.get("forecast_margin_s", 1.0),
            sweep_w=sweep_rate(
                p["max_angular_speed"],
                p["camera_exposure_s"],
                p["sweep_max_blur_deg"],
                p["camera_frame_rate_hz"],
                p["sweep_max_frame_spacing_deg"],
            ),
        )

    def min_duration(self, action: str) -> float:
        """Physical minimum duration (s) of ``action`` at these limits (0 for LOOK/STOP)."""
        spec = A.MOTION_SPECS.get(action)
        if spec is None:
            return 0.0
        if spec.kind is A.ActionKind.TRANSLATE:
            return min_duration(spec.amount, self.v_max, self.a_lin)
        if spec.kind is A.ActionKind.ROTATE:
            return min_duration(spec.amount, self.sweep_w if action in A.SWEEPS else self.w_max, self.a_ang)
        return 0.0


class Tick(NamedTuple):
    """What one executor call produced.

    Attributes:
        cmd: (vx m/s, wz rad/s) to publish on cmd_vel now.
        results: finished actions (0, 1, or 2 when STOP preempts a running action).
        collisions: collision records to publish.
    """

    cmd: tuple[float, float]
    results: list[ActionResult]
    collisions: list[CollisionRecord]


ZERO = (0.0, 0.0)


class _Axis:
    """Trapezoidal rest-to-rest profile on one axis with latency prediction."""

    def __init__(self, v_max: float, a_max: float, v_min: float) -> None:
        self.v_max, self.a_max, self.v_min = v_max, a_max, v_min

    def command(self, remaining: float, v_prev: float, dt: float, tol: float) -> float:
        """Speed (signed) for the next ``dt`` given the predicted ``remaining`` travel."""
        if abs(remaining) <= 0.5 * tol:
            # close enough: come to rest (respecting deceleration)
            return _toward(v_prev, 0.0, self.a_max * dt) if abs(v_prev) > self.a_max * dt else 0.0
        sgn = 1.0 if remaining > 0 else -1.0
        if v_prev * sgn < 0:  # moving the wrong way: decelerate first
            return _toward(v_prev, 0.0, self.a_max * dt)
        a = self.a_max
        # largest speed that still stops within `remaining` when held for dt and then braked at a_max
        v_stop = -a * dt / 2.0 + math.sqrt((a * dt / 2.0) ** 2 + 2.0 * a * abs(remaining))
        v = min(self.v_max, v_stop, abs(v_prev) + a * dt)
        v = max(v, min(self.v_min, abs(remaining) / max(dt, 1e-3)))
        return sgn * v


def _non_finite(odom: Pose2D, imu_yaw: float) -> str | None:
    """Name the first non-finite input (``odometry x = nan (not finite)``), else None."""
    bad = first_non_finite((("odometry x", odom[0]), ("odometry y", odom[1]), ("odometry yaw", odom[2]), ("imu yaw", imu_yaw)))
    return None if bad is None else f"{bad} (not finite)"


def _toward(v: float, target: float, step: float) -> float:
    if v < target:
        return min(target, v + step)
    return max(target, v - step)


class Phase(str, Enum):
    """Executor phases. ``IDLE``/``HOLDING`` are at rest (HOLDING: zero velocity held after STOP);
    the others run an action: MOVING/TURNING drive to the goal, SETTLING waits for the robot to
    come to rest and checks the error, STOPPING brakes after a collision/stall, REVERTING drives
    back to the pre-action pose, REVERT_SETTLING waits after that."""

    IDLE = "idle"
    HOLDING = "holding"
    MOVING = "moving"
    TURNING = "turning"
    SETTLING = "settling"
    STOPPING = "stopping"
    REVERTING = "reverting"
    REVERT_SETTLING = "revert_settling"


@dataclass
class ActionRun:
    """The run state of one action (translate or rotate) while :class:`Executor` executes it.

    Attributes:
        seq: action sequence number. action: the literal. forward: TRANSLATE (else ROTATE).
        target: the table's amount, m or rad (signed). t0: start time, s.
        odom0: odometry pose at the start (x m, y m, yaw rad; odom frame). imu0: gyro yaw at the start, rad.
        deadline: time the action (or its revert) times out, s.
        goal: current axis goal, m or rad (0 while reverting).
        yaw_aim: intended yaw change, rad: heading hold (forward) or turn angle incl. the chain offset.
        last: last (odom, imu_yaw) seen, for results written on STOP/abort.
        corrections: settle-time corrections made. outcome, detail: the result once decided.
        reverted: a revert back to the start pose happened.
        settle_until, settle_deadline: settling window, s. resume: phase to resume after settling.
        revert_budget: measured (odometry / gyro) progress when the revert began, m or rad: the most
            a revert may travel back. revert_cmd_travel: travel commanded during the revert so far
            (integral of |command| dt), m or rad.
        cmd_toward, cmd_away: travel commanded on the action's axis toward / away from the goal's
            direction while driving to the goal (MOVING / TURNING, corrections included), m or rad.
        overshoot: the most the measured progress has been past the goal, m or rad (>= 0).
        jump_ref: the last accepted sample for the jump check: (odom pose, its time s, imu yaw rad,
            its time s).
    """

    seq: int
    action: str
    forward: bool
    target: float
    t0: float
    odom0: Pose2D
    imu0: float
    deadline: float
    goal: float
    yaw_aim: float
    last: tuple[Pose2D | None, float | None]
    corrections: int = 0
    outcome: str | None = None
    detail: str = ""
    reverted: bool = False
    settle_until: float = 0.0
    settle_deadline: float = 0.0
    resume: Phase = Phase.IDLE
    revert_budget: float = 0.0
    revert_cmd_travel: float = 0.0
    sweep: bool = False
    cmd_toward: float = 0.0
    cmd_away: float = 0.0
    overshoot: float = 0.0
    jump_ref: tuple[Pose2D, float, float, float] | None = None


class Executor:
    """The tick-based action state machine.

    Use: ``start(action, t, odom, imu_yaw, obstacles)`` when an action arrives, then
    ``update(t, odom, imu_yaw, ...)`` at the control rate (>= 20 Hz). Both return a
    :class:`Tick`. ``odom`` is ``(x, y, yaw)`` in the odom frame (m, rad); ``imu_yaw`` is the
    gyro-integrated yaw (rad, unwrapped); ``t`` is seconds on one clock shared by all inputs.

    Args:
        config: limits, tolerances and safety settings.
    """

    def __init__(self, config: MotionConfig | None = None) -> None:
        self.cfg = config or MotionConfig()
        self.seq = 0
        self.pitch = 0.0  # virtual camera pitch, rad, positive = up
        self.phase = Phase.IDLE
        self._cmd_hist: deque[tuple[float, float, float]] = deque()  # (t, vx, wz)
        self._unmeasured_memo: tuple[float, float, tuple[float, float]] | None = None  # (t, t_meas, result); _push_cmd clears it
        self._last_t: float | None = None
        self._last_cmd = ZERO
        self._last_nonzero_t = -math.inf
        self._moving_since: float | None = None  # start of the current run of non-zero commands, s
        self._stall = StallDetector(self.cfg.stall_time_s, 0.0)
        self._a: ActionRun | None = None  # the running (or last) action
        # IMU yaw the last completed TURN / MOVE_FORWARD was meant to end at, and when it ended
        # (None: no chain)
        self._nominal_yaw: float | None = None
        self._nominal_t = -math.inf
        self._tick_t: float | None = None  # time of the latest control tick (note_tick), s
        self._gaps: deque[tuple[float, float]] = deque()  # (t, interval s) of the last TICK_WINDOW_S

    # ------------------------------------------------------------------ public API
    @property
    def busy(self) -> bool:
        """True while an action (or its revert) is executing."""
        return self.phase not in (Phase.IDLE, Phase.HOLDING)

    @property
    def action(self) -> str | None:
        """The running action literal, or None."""
        return self._a.action if self.busy and self._a is not None else None

    def stationary(self, t: float) -> bool:
        """True when no motion has been commanded for ``latency + 0.3 s`` (gyro bias may be learned)."""
        return not self.busy and (t - self._last_nonzero_t) > self.cfg.latency_s + 0.3

    def start(self, action: str, t: float, odom: Pose2D | None, imu_yaw: float | None, obstacles: Obstacles | None = None) -> Tick:
        """Begin ``action`` at time ``t``.

        Returns:
            A Tick. Its results are non-empty when the action finished at once (STOP, LOOK_*,
            rejected, blocked) -- or when STOP preempted a running action.
        """
        if A.is_motion(action) and A.MOTION_SPECS[action].kind is A.ActionKind.STOP:
            return self.stop(t, "preempted by STOP", odom, imu_yaw)
        self.seq += 1
        if not A.is_motion(action):
            return Tick(
                self._last_cmd if self.busy else self._zero_if_idle(t),  # never disturbs a running action
                [self._simple(action, "rejected", odom, f"unknown action {action!r}; expected one of {', '.join(A.MOTION_SPECS)}")],
                [],
            )
        if self.busy:
            return Tick(
                self._last_cmd,
                [self._simple(action, "rejected", odom, f"busy executing {self._a.action} (seq {self._a.seq}); send STOP to preempt")],
                [],
            )
        spec = A.MOTION_SPECS[action]
        if spec.kind is A.ActionKind.TILT:
            return Tick(self._zero_if_idle(t), [self._look(action, odom)], [])
        if odom is None or imu_yaw is None:
            missing = "odometry" if odom is None else "imu"
            return Tick(ZERO, [self._simple(action, "rejected", odom, f"no {missing} received yet; check the {missing} topic")], [])
        bad = _non_finite(odom, imu_yaw)
        if bad is not None:
            return Tick(ZERO, [self._simple(action, "rejected", None, f"{bad}: cannot measure the action; check the sensor")], [])
        forward = spec.kind is A.ActionKind.TRANSLATE  # else ROTATE: STOP and TILT returned above
        target = spec.amount
        offset = self._chain_offset(t, imu_yaw)
        self._nominal_yaw = None  # set again only by an action that ends ok
        yaw_aim = offset if forward else target + offset
        self._a = ActionRun(
            seq=self.seq,
            action=action,
            forward=forward,
            target=target,
            t0=t,
            odom0=odom,
            imu0=imu_yaw,
            deadline=t + self.cfg.timeout_factor * self.cfg.min_duration(action) + self.cfg.timeout_margin_s,
            goal=target if forward else yaw_aim,
            yaw_aim=yaw_aim,
            last=(odom, imu_yaw),
            sweep=action in A.SWEEPS,
            jump_ref=(odom, t, imu_yaw, t),
        )
        self._stall = StallDetector(self.cfg.stall_time_s, self.cfg.stall_m if forward else self.cfg.stall_rad)
        if forward and self.cfg.require_depth and (obstacles is None or obstacles.points is None):
            self._a.outcome, self._a.detail = (
                "aborted",
                "no fresh depth image: cannot check the path (require_depth); check the depth topic",
            )
            return Tick(ZERO, [self._finish(t, odom, imu_yaw)], [])
        hz = self._hazard(obstacles or Obstacles(), target if forward else yaw_aim)
        partial = ""
        if hz is not None and forward and hz.source in ("depth", "floor"):
            safe = self._partial_step(obstacles or Obstacles(), hz)
            if safe is not None:
                partial = (
                    f"{PARTIAL_DETAIL} {safe:.2f} of {target:.2f} m: {'an obstacle' if hz.source == 'depth' else 'the end of the seen floor'} "
                    f"{hz.distance_m:.2f} m ahead of the footprint "
                    f"(front margin {self.cfg.front_margin:.2f} m)"
                )
                target, hz = safe, None
                self._a.target = self._a.goal = target
        if hz is not None:
            col = self._collision(t, odom, hz, BLOCKED_STATE)
            self._a.outcome, self._a.detail = Outcome.COLLISION.value, f"{BLOCKED_DETAIL}: {hz.detail}"
            return Tick(ZERO, [self._finish(t, odom, imu_yaw)], [col])
        self._a.detail = partial
        self.phase = Phase.MOVING if forward else Phase.TURNING
        self._last_t = t
        return self.update(t, odom, imu_yaw, obstacles=obstacles)

    def _chain_offset(self, t: float, imu_yaw: float) -> float:
        """Heading chain, rad: when the robot still stands within chain_heading of the heading the last
        action was meant to end at, the next action aims from that nominal heading rather than from
        where the last one settled, so per-turn tolerances do not add up (24 panorama turns closed at
        +3 deg by IMU without it, measured in the embedded simulator). 0 when stale or too far."""
        fresh = t - self._nominal_t <= CHAIN_MAX_AGE_S  # not across a long pause (gyro drift, hands)
        if self._nominal_yaw is not None and self.cfg.chain_heading > 0 and fresh:
            d = wrap_angle(self._nominal_yaw - imu_yaw)
            if abs(d) <= self.cfg.chain_heading:
                return d
        return 0.0

    def _partial_step(self, obs: Obstacles, hz: Hazard) -> float | None:
        """The longest forward step (m, whole cm) that keeps ``front_margin`` to the obstacle behind
        ``hz`` and passes every check of :func:`forward_hazard`; None when it is shorter than
        ``min_step`` (then the step is refused)."""
        cfg = self.cfg
        if cfg.min_step <= 0:
            return None
        safe = math.floor((hz.distance_m - cfg.front_margin - 1e-3) * 100.0) / 100.0  # whole cm, strictly inside
        if safe < cfg.min_step or safe >= A.FORWARD_STEP_M:
            return None
        if self._hazard(obs, safe) is not None:
            return None
        return safe

    def stop(self, t: float, reason: str = "preempted by STOP", odom: Pose2D | None = None, imu_yaw: float | None = None) -> Tick:
        """STOP / e-stop: zero velocity now and hold it; abort a running action (outcome aborted).

        Returns:
            Tick with cmd (0, 0) and results [aborted action (if any), STOP ok].
        """
        results = []
        self._nominal_yaw = None  # STOP / abort: the next action starts a new chain
        if self.busy:
            self._a.outcome, self._a.detail = "aborted", reason
            o, y = self._a.last
            results.append(self._finish(t, odom or o, imu_yaw if imu_yaw is not None else y))
        self.seq += 1
        results.append(self._simple(A.STOP, "ok", odom, "holding zero velocity"))
        self.phase = Phase.HOLDING
        self._push_cmd(t, ZERO)
        return Tick(ZERO, results, [])

    def time_jumped_back(self, t: float) -> Tick:
        """The clock jumped backwards (sim reset, a bag played in a loop): abort a running action
        (outcome ``aborted``), zero the command, and forget every time-stamped memory (command
        history for the latency prediction, stall window, heading chain), which is now in the future.

        Args:
            t: the new time, s.
        """
        tick = self.abort(t, "clock jumped back (sim time reset); robot stopped")
        self._cmd_hist.clear()
        self._tick_t = None
        self._gaps.clear()
        self._unmeasured_memo = None
        self._last_t = None
        self._last_nonzero_t = -math.inf
        self._stall = StallDetector(self.cfg.stall_time_s, 0.0)
        self._nominal_yaw, self._nominal_t = None, -math.inf
        self._push_cmd(t, ZERO)
        return tick

    def abort(self, t: float, reason: str) -> Tick:
        """Stop a running action with outcome ``aborted`` (sensor fault, shutdown); zero command."""
        results = []
        self._nominal_yaw = None  # STOP / abort: the next action starts a new chain
        if self.busy:
            self._a.outcome, self._a.detail = "aborted", reason
            o, y = self._a.last
            results.append(self._finish(t, o, y))
        self._push_cmd(t, ZERO)
        return Tick(ZERO, results, [])

    def note_tick(self, t: float) -> None:
        """A control tick at time ``t`` (s): measures the interval since the previous one (the
        caller calls this on idle ticks too; :meth:`update` calls it itself)."""
        if self._tick_t is not None and t > self._tick_t:
            self._gaps.append((t, t - self._tick_t))
        if self._tick_t is None or t > self._tick_t:
            self._tick_t = t
        while self._gaps and self._gaps[0][0] < t - TICK_WINDOW_S:
            self._gaps.popleft()

    @property
    def tick_interval(self) -> float:
        """The longest control-tick interval of the last :data:`TICK_WINDOW_S`, s (0 before two ticks)."""
        return max((g for _, g in self._gaps), default=0.0)

    def carry_speed(self, room: float, dt: float) -> float:
        """Fastest forward speed (m/s) from which the robot still stops within ``room`` m when the next
        tick comes as late as the longest measured interval (:attr:`tick_interval`, at least ``dt``)
        plus ``latency_s``, and it brakes at ``a_lin`` after that: ``v T + v^2 / (2 a) = room``.
        A late tick cannot carry a step past its goal plus ``front_margin`` (the room checked free)."""
        cfg = self.cfg
        T = max(self.tick_interval, dt) + cfg.latency_s
        a = max(cfg.a_lin, 1e-3)
        room = max(room, 0.0)
        return -a * T + math.sqrt((a * T) ** 2 + 2.0 * a * room)

    def update(
        self,
        t: float,
        odom: Pose2D | None,
        imu_yaw: float | None,
        obstacles: Obstacles | None = None,
        accel: tuple[float, float] | None = None,
        odom_t: float | None = None,
        imu_t: float | None = None,
    ) -> Tick:
        """One control tick.

        Args:
            t: now, s.
            odom: latest odometry pose (x, y, yaw) in the odom frame.
            imu_yaw: latest gyro-integrated yaw, rad.
            obstacles: obstacles in the current base_link (None = nothing known).
            accel: latest horizontal IMU acceleration (ax, ay), m/s^2, for the jolt check.
            odom_t: time ``odom`` refers to (its stamp; default ``t``). Commands whose effect
                came after it are added to the prediction (delayed odometry is compensated);
                older than ``sensor_timeout_s`` while busy -> stop, outcome ``aborted``.
            imu_t: time ``imu_yaw`` refers to (stamp of the last gyro sample); same rules.

        Returns:
            The Tick to act on.
        """
        self.note_tick(t)
        if not self.busy:
            self._last_t = t
            return Tick(self._zero_if_idle(t), [], [])
        a, cfg = self._a, self.cfg
        for name, st in (("odom", odom_t), ("imu", imu_t)):
            if st is not None and t - st > cfg.sensor_timeout_s:
                return self.abort(t, f"{name} silent for {t - st:.2f} s (> sensor_timeout_s {cfg.sensor_timeout_s:g}); robot stopped")
        if odom is None or imu_yaw is None:
            return self.abort(t, "odometry or imu lost while moving; robot stopped")
        bad = _non_finite(odom, imu_yaw)
        if bad is not None:  # never ingested: the result keeps the last finite sample
            return self.abort(t, f"{bad}; robot stopped")
        tm_odom = t if odom_t is None else min(t, odom_t)
        tm_imu = t if imu_t is None else min(t, imu_t)
        why = self._jumped(odom, tm_odom, imu_yaw, tm_imu)
        if why is not None:
            return self.abort(t, f"{why}; robot stopped")
        a.last = (odom, imu_yaw)
        dt = max(1e-3, t - (self._last_t if self._last_t is not None else t))
        self._last_t = t
        prog, dyaw_imu, dyaw_odom, lateral = self._progress(odom, imu_yaw)
        obs = obstacles or Obstacles()
        checked = self._checks(t, odom, imu_yaw, obs, accel, (tm_odom, tm_imu), dt, (prog, dyaw_imu, dyaw_odom))
        if checked is not None:
            return checked
        if self.phase in (Phase.MOVING, Phase.TURNING, Phase.REVERTING):
            return self._drive(t, odom, imu_yaw, obs, (tm_odom, tm_imu), dt, (prog, dyaw_imu))
        if self.phase in (Phase.SETTLING, Phase.REVERT_SETTLING, Phase.STOPPING):
            return self._settle(t, odom, imu_yaw, (obstacles, odom_t, imu_t), (tm_odom, tm_imu), dt, prog)
        return self.abort(t, f"internal: unknown phase {self.phase}")  # pragma: no cover

    def _checks(
        self,
        t: float,
        odom: Pose2D,
        imu_yaw: float,
        obs: Obstacles,
        accel: tuple[float, float] | None,
        tm: tuple[float, float],
        dt: float,
        progress: tuple,
    ) -> Tick | None:
        """The checks common to every moving phase (deadline, bounds, slip, contact, hazard, stall): the ending Tick, or None."""
        a, cfg = self._a, self.cfg
        tm_odom, tm_imu = tm
        prog, dyaw_imu, dyaw_odom = progress
        if self.phase in (Phase.MOVING, Phase.TURNING, Phase.SETTLING) and t > a.deadline:
            a.outcome, a.detail = "timeout", f"not on target after {t - a.t0:.2f} s"
            return self._end_now(t, odom, imu_yaw)
        if self.phase in (Phase.REVERTING, Phase.REVERT_SETTLING) and t > a.deadline:
            a.reverted = False
            a.detail += f"; revert not finished after {t - a.t0:.2f} s"
            return self._end_now(t, odom, imu_yaw)
        if self.phase in (Phase.MOVING, Phase.TURNING, Phase.SETTLING):
            why = self._unbounded(prog, dt)
            if why is not None:
                a.outcome, a.detail = "aborted", f"{why}; robot stopped"
                return self._end_now(t, odom, imu_yaw)
        if self.phase != Phase.STOPPING:
            # compare both yaws predicted to the same instant: odometry and IMU may be stamped apart
            slip_rad = cfg.slip_rad + (SWEEP_SLIP_PER_RAD * abs(dyaw_imu) if a.sweep else 0.0)
            sl = slip_check(dyaw_imu + self._unmeasured(t, tm_imu)[1], dyaw_odom + self._unmeasured(t, tm_odom)[1], slip_rad)
            if sl is not None:
                a.outcome = "slip"
                a.detail = f"gyro and odometry yaw disagree by {math.degrees(sl):.1f} deg (> {math.degrees(slip_rad):.1f})"
                return self._end_now(t, odom, imu_yaw)
        if self.phase in (Phase.MOVING, Phase.TURNING, Phase.SETTLING):
            hz = contact_hazard(obs, cfg.footprint, cfg.person_radius)
            if hz is None and accel is not None:
                j = jolt_check(accel[0], accel[1], cfg.jolt_accel)
                if j is not None:
                    hz = self._classify_bump(obs, "jolt", f"IMU jolt {j:.1f} m/s^2")
            if hz is None and self.phase != Phase.SETTLING:
                rem = a.goal - prog
                if cfg.require_depth and a.forward and obs.points is None:
                    a.outcome, a.detail = "aborted", "depth image went stale while moving; robot stopped"
                    return self._end_now(t, odom, imu_yaw)
                hz = self._hazard(obs, rem)
                # stall is judged on measurement time: late odometry is not "no progress"
                if hz is None and self._stall.update(tm_odom if a.forward else tm_imu, prog, self._last_cmd != ZERO):
                    hz = self._classify_bump(obs, "stall", f"no progress for {cfg.stall_time_s:g} s under command")
            if hz is not None:
                return self._on_collision(t, odom, imu_yaw, hz)
        return None

    def _drive(self, t: float, odom: Pose2D, imu_yaw: float, obs: Obstacles, tm: tuple[float, float], dt: float, progress: tuple) -> Tick:
        """Moving, turning or reverting: the command toward the goal, and the move to settling when on it."""
        a, cfg = self._a, self.cfg
        tm_odom, tm_imu = tm
        prog, dyaw_imu = progress
        inflight_v = self._unmeasured(t, tm_odom)[0]
        inflight_w = self._unmeasured(t, tm_imu)[1]
        axis_pred = prog + (inflight_v if a.forward else inflight_w)
        remaining = a.goal - axis_pred
        if self.phase == Phase.REVERTING:
            hz = self._hazard(obs, remaining, reverting=True)
            if hz is not None:
                a.detail += f"; revert stopped: {hz.detail}"
                a.reverted = False
                return self._end_now(t, odom, imu_yaw, collisions=[self._collision(t, odom, hz, "reverting")])
            why = self._revert_unverified(t, dt, prog, tm_odom if a.forward else tm_imu)
            if why is not None:
                a.detail += f"; revert stopped: {why}"
                a.reverted = False
                return self._end_now(t, odom, imu_yaw)
        if a.forward:
            ax = _Axis(cfg.v_max if remaining >= 0 else cfg.v_rev_max, cfg.a_lin, cfg.v_min)
            v = ax.command(remaining, self._last_cmd[0], dt, cfg.pos_tol)
            # a late tick holds this speed: keep what it carries inside the goal + front margin
            v = math.copysign(min(abs(v), self.carry_speed(abs(remaining) + cfg.front_margin, dt)), v)
            yaw_err = a.yaw_aim - (dyaw_imu + inflight_w)
            w = max(-cfg.w_max, min(cfg.w_max, cfg.heading_gain * yaw_err))
            cmd = (v, w if v != 0.0 else 0.0)
            done_axis = v == 0.0
        else:
            ax = _Axis(cfg.sweep_w if a.sweep else cfg.w_max, cfg.a_ang, cfg.w_min)
            w = ax.command(remaining, self._last_cmd[1], dt, cfg.sweep_yaw_tol if a.sweep else cfg.yaw_tol)
            cmd = (0.0, w)
            done_axis = w == 0.0
        if done_axis:
            # measurements must post-date the zero command taking effect (+ one tick)
            a.settle_until = t + cfg.latency_s + 1.5 * dt
            a.settle_deadline = a.settle_until + 0.5
            a.resume = self.phase
            self.phase = Phase.SETTLING if self.phase != Phase.REVERTING else Phase.REVERT_SETTLING
            self._stall.reset()
        self._push_cmd(t, cmd)
        return Tick(cmd, [], [])

    def _settle(self, t: float, odom: Pose2D, imu_yaw: float, again: tuple, tm: tuple[float, float], dt: float, prog: float) -> Tick:
        """Settling or stopping: wait for measurements after the zero command, then correct, revert or end.
        ``again``: (obstacles, odom_t, imu_t) of this tick, for the update a correction or a revert starts."""
        a, cfg = self._a, self.cfg
        tm_odom, tm_imu = tm
        obstacles, odom_t, imu_t = again
        self._push_cmd(t, ZERO)
        measured = min(tm_odom, tm_imu) if a.forward else tm_imu
        if (t < a.settle_until or measured < a.settle_until - dt) and t < a.settle_deadline:
            return Tick(ZERO, [], [])
        if self.phase == Phase.STOPPING:
            if cfg.revert and not a.sweep and abs(prog) > (cfg.pos_tol if a.forward else cfg.yaw_tol) * 0.5:
                a.revert_budget, a.revert_cmd_travel = abs(prog), 0.0  # never back farther than verified progress
                self._stall.reset()
                a.goal = 0.0
                a.yaw_aim = 0.0  # back to the pre-action pose, heading included
                a.corrections = 0
                a.reverted = True
                a.deadline = t + cfg.timeout_factor * cfg.min_duration(a.action) + cfg.timeout_margin_s
                self.phase = Phase.REVERTING
                return self.update(t, odom, imu_yaw, obstacles, None, odom_t, imu_t)
            a.reverted = cfg.revert and not a.sweep
            return self._end_now(t, odom, imu_yaw)
        err = a.goal - (prog)
        tol = cfg.pos_tol if a.forward else (cfg.sweep_yaw_tol if a.sweep else cfg.yaw_tol)
        if abs(err) > tol and a.corrections < cfg.max_corrections:
            a.corrections += 1
            self.phase = a.resume
            return self.update(t, odom, imu_yaw, obstacles, None, odom_t, imu_t)
        if self.phase == Phase.REVERT_SETTLING:
            return self._end_now(t, odom, imu_yaw)
        if a.outcome is None:
            a.outcome = "ok"
            if abs(err) > tol:
                unit = f"{err:.3f} m" if a.forward else f"{math.degrees(err):.2f} deg"
                note = f"settled {unit} from target after {cfg.max_corrections} corrections"
                a.detail = f"{a.detail}; {note}" if a.detail else note
        return self._end_now(t, odom, imu_yaw)

    # ------------------------------------------------------------------ internals
    def _jumped(self, odom: Pose2D, tm_odom: float, imu_yaw: float, tm_imu: float) -> str | None:
        """Why the new sample is a step the robot cannot have made physically, else None.

        Compared with the previous sample the executor accepted during this action: a position step
        above ``JUMP_SPEED_FACTOR * max(v_max, v_rev_max) * dt + JUMP_MARGIN_M`` (m), or an odometry /
        IMU yaw step above ``JUMP_SPEED_FACTOR * max(w_max, sweep_w) * dt + JUMP_MARGIN_RAD`` (rad),
        ``dt`` being the time between the two samples' stamps (s; 0 when the new one is not newer).
        The reference moves on to every accepted sample.
        """
        a, cfg = self._a, self.cfg
        o0, t_o0, y0, t_y0 = a.jump_ref
        dt_o, dt_y = max(0.0, tm_odom - t_o0), max(0.0, tm_imu - t_y0)
        step = math.hypot(odom[0] - o0[0], odom[1] - o0[1])
        bound = JUMP_SPEED_FACTOR * max(cfg.v_max, cfg.v_rev_max) * dt_o + JUMP_MARGIN_M
        if step > bound:
            return f"odometry jumped {step:.3f} m in {dt_o:.3f} s (bound {bound:.3f} m at the speed limits)"
        w_bound = JUMP_SPEED_FACTOR * max(cfg.w_max, cfg.sweep_w)
        for name, dyaw, dt_s in (("odometry yaw", wrap_angle(odom[2] - o0[2]), dt_o), ("imu yaw", imu_yaw - y0, dt_y)):
            bound = w_bound * dt_s + JUMP_MARGIN_RAD
            if abs(dyaw) > bound:
                return (
                    f"{name} jumped {math.degrees(dyaw):.1f} deg in {dt_s:.3f} s (bound {math.degrees(bound):.1f} deg at the speed limits)"
                )
        a.jump_ref = (odom, max(tm_odom, t_o0), imu_yaw, max(tm_imu, t_y0))
        return None

    def _overshoot_bound(self) -> float:
        """How far past the goal (or back past the start) the running action may measure, m or rad.

        The most a robot that runs at full speed when it should stop can travel: the tolerance, one
        actuation latency at the speed limit and the braking distance at the acceleration limit
        (``tol + v * latency_s + v**2 / (2 * a)``; 0.098 m / 10.0 deg with the defaults). Beyond it the
        measurement, not the robot, is wrong.
        """
        a, cfg = self._a, self.cfg
        if a.forward:
            v = max(cfg.v_max, cfg.v_rev_max)
            return cfg.pos_tol + v * cfg.latency_s + v * v / (2.0 * cfg.a_lin)
        w = cfg.sweep_w if a.sweep else cfg.w_max
        tol = cfg.sweep_yaw_tol if a.sweep else cfg.yaw_tol
        return tol + w * cfg.latency_s + w * w / (2.0 * cfg.a_ang)

    def _unbounded(self, prog: float, dt: float) -> str | None:
        """Why driving on to the goal would be an unbounded correction, else None.

        Called every tick while the action drives to its goal or settles (not while stopping or
        reverting). With ``b`` = :meth:`_overshoot_bound` and ``g`` the goal along the action's
        direction: the measured progress must stay within ``[-b, g + b]``; the travel commanded toward
        the goal within ``CMD_TRAVEL_FACTOR * g + b`` and away from it (corrections of an overshoot)
        within ``b`` plus one latency of travel at the speed limit.
        """
        a, cfg = self._a, self.cfg
        axis = 0 if a.forward else 1
        sgn = 1.0 if a.goal >= 0 else -1.0
        if self.phase in (Phase.MOVING, Phase.TURNING):
            c = self._last_cmd[axis] * sgn * dt
            if c > 0:
                a.cmd_toward += c
            else:
                a.cmd_away -= c
        b, g, p = self._overshoot_bound(), abs(a.goal), prog * sgn
        unit, scale = ("m", 1.0) if a.forward else ("deg", math.degrees(1.0))
        v = max(cfg.v_max, cfg.v_rev_max) if a.forward else max(cfg.w_max, cfg.sweep_w)
        what = "odometry" if a.forward else "imu yaw"
        if p > g + b:
            return f"{what} says {p * scale:.3f} {unit} travelled toward a goal of {g * scale:.3f} {unit}, past it by more than the {b * scale:.3f} {unit} a stop can overshoot"
        if p < -b:
            return f"{what} says {-p * scale:.3f} {unit} travelled away from the goal, more than the {b * scale:.3f} {unit} a correction explains"
        if a.cmd_toward > CMD_TRAVEL_FACTOR * g + b:
            return (
                f"commanded {a.cmd_toward * scale:.3f} {unit} toward a goal of {g * scale:.3f} {unit} yet {what} "
                f"shows {p * scale:.3f} {unit} (sensor lagging or frozen?)"
            )
        # a real overshoot (late control ticks on a loaded machine) is measured before it is corrected:
        # correcting back by what was measured past the goal is consistent, more than that is not
        a.overshoot = max(a.overshoot, p - g)
        if a.cmd_away > a.overshoot + b + v * cfg.latency_s:
            return (
                f"commanded {a.cmd_away * scale:.3f} {unit} of correction away from the goal, more than the measured overshoot "
                f"{a.overshoot * scale:.3f} {unit} plus the {b * scale:.3f} {unit} a stop can overshoot needs"
            )
        return None

    def _revert_unverified(self, t: float, dt: float, prog: float, t_meas: float) -> str | None:
        """Why a revert must stop because the sensors do not confirm it, else None.

        A revert is open loop on frozen sensors: it drives back until the odometry says it is home.
        Two bounds: the travel commanded during the revert (which the robot cannot exceed) stays
        within the verified progress plus one latency of travel and the tolerance; and progress
        must show within ``stall_time_s`` under command (live feedback).
        """
        a, cfg = self._a, self.cfg
        axis = 0 if a.forward else 1
        a.revert_cmd_travel += abs(self._last_cmd[axis]) * dt
        unit, scale = ("m", 1.0) if a.forward else ("deg", math.degrees(1.0))
        margin = (cfg.pos_tol + cfg.v_rev_max * cfg.latency_s) if a.forward else (cfg.yaw_tol + cfg.w_max * cfg.latency_s)
        if a.revert_cmd_travel > a.revert_budget + margin:
            return (
                f"commanded {a.revert_cmd_travel * scale:.3f} {unit} back, more than the verified progress "
                f"{a.revert_budget * scale:.3f} {unit}, yet the sensors show {abs(prog) * scale:.3f} {unit} to go (frozen sensors?)"
            )
        if self._stall.update(t_meas, prog, self._last_cmd != ZERO):
            return f"no progress feedback for {cfg.stall_time_s:g} s under command (frozen sensors?)"
        return None

    @property
    def translating(self) -> bool:
        """True while a translate action (forward) runs; False for turns and when idle."""
        return self.busy and self._a is not None and self._a.forward

    def moving_commanded(self, t: float, settle_s: float = 0.1) -> bool:
        """True when a non-zero command has been in force for at least ``latency_s + settle_s`` (s):
        from then on the robot's sensors must change (used by the sensor-freeze checks)."""
        return (
            self.busy
            and self._last_cmd != ZERO
            and self._moving_since is not None
            and t - self._moving_since >= self.cfg.latency_s + settle_s
        )

    def _zero_if_idle(self, t: float) -> tuple[float, float]:
        self._push_cmd(t, ZERO)
        return ZERO

    def _push_cmd(self, t: float, cmd: tuple[float, float]) -> None:
        self._cmd_hist.append((t, cmd[0], cmd[1]))
        self._unmeasured_memo = None
        horizon = self.cfg.latency_s + self.cfg.sensor_timeout_s + 0.2
        while len(self._cmd_hist) > 2 and self._cmd_hist[1][0] < t - horizon:
            self._cmd_hist.popleft()
        if cmd != ZERO:
            self._last_nonzero_t = t
            if self._last_cmd == ZERO or self._moving_since is None:
                self._moving_since = t
        else:
            self._moving_since = None
        self._last_cmd = cmd

    def _unmeasured(self, t: float, t_meas: float) -> tuple[float, float]:
        """Travel (m, rad) commanded but not yet seen by a measurement taken at ``t_meas``.

        A command issued at ``ti`` and replaced at ``te`` moves the robot during
        ``[ti + latency, te + latency]``; the part of that interval after ``t_meas`` is either still
        in flight (actuation latency) or happened after the measurement (sensor delay).
        """
        memo = self._unmeasured_memo  # one tick asks the same question up to four times
        if memo is not None and memo[0] == t and memo[1] == t_meas:
            return memo[2]
        lat = self.cfg.latency_s
        h = self._cmd_hist
        v = w = 0.0
        te = t
        # newest first: commands replaced before t_meas - latency contribute nothing, nor do older ones
        for i in range(len(h) - 1, -1, -1):
            ti, vi, wi = h[i]
            if te + lat <= t_meas:
                break
            if te > ti:
                part = min((te + lat) - max(ti + lat, t_meas), te - ti)
                if part > 0:
                    v += vi * part
                    w += wi * part
            te = ti
        self._unmeasured_memo = (t, t_meas, (v, w))
        return v, w

    def _progress(self, odom: Pose2D, imu_yaw: float) -> tuple[float, float, float, float]:
        """(axis progress, dyaw imu, dyaw odom, lateral offset) since the action started."""
        x0, y0, th0 = self._a.odom0
        dx, dy = odom[0] - x0, odom[1] - y0
        c, s = math.cos(th0), math.sin(th0)
        along, lateral = c * dx + s * dy, -s * dx + c * dy
        dyaw_imu = imu_yaw - self._a.imu0
        dyaw_odom = wrap_angle(odom[2] - th0)
        return (along if self._a.forward else dyaw_imu), dyaw_imu, dyaw_odom, lateral

    def _hazard(self, obs: Obstacles, remaining: float, reverting: bool = False) -> Hazard | None:
        hz = self._hazard_now(obs, remaining, reverting)
        return hz if hz is not None else self._forecast(obs, remaining)

    def _forecast(self, obs: Obstacles, remaining: float) -> Hazard | None:
        """Moving people's constant-velocity forecast against the rest of the action."""
        cfg = self.cfg
        if cfg.forecast_margin_s < 0 or not obs.people:
            return None
        if self._a.forward:
            dur = abs(remaining) / max(cfg.v_max, 1e-3) + cfg.v_max / max(cfg.a_lin, 1e-3)
            return forecast_hazard(obs.people, cfg.footprint, dur, cfg.forecast_margin_s, cfg.personal_space, distance=remaining)
        dur = abs(remaining) / max(cfg.w_max, 1e-3) + cfg.w_max / max(cfg.a_ang, 1e-3)
        return forecast_hazard(obs.people, cfg.footprint, dur, cfg.forecast_margin_s, cfg.person_radius + cfg.turn_margin, angle=remaining)

    def _hazard_now(self, obs: Obstacles, remaining: float, reverting: bool = False) -> Hazard | None:
        cfg = self.cfg
        if self._a.forward:
            if reverting:  # the camera looks forward: only people guard the way back
                obs = Obstacles(points=None, people=obs.people)
            return forward_hazard(
                obs, cfg.footprint, remaining, cfg.front_margin, cfg.side_margin, cfg.personal_space, cfg.min_points, cfg.step_down
            )
        return turn_hazard(obs, cfg.footprint, remaining, cfg.turn_margin, cfg.person_radius, cfg.min_points)

    def _classify_bump(self, obs: Obstacles, source: str, detail: str) -> Hazard:
        """The kind of a bump (stall / IMU jolt): ``human`` when a person is within reach of the
        footprint -- one in the fresh people input within ``person_radius + personal_space``, or one
        seen within ``contact_recall_s`` (:attr:`Obstacles.recalled`: the camera looks forward, and a
        person who walks into the robot from beside or behind has left its view) whose last position
        is within ``contact_reach`` -- else ``static``. The rule: docs/motion.md 'Collision kinds'."""
        cfg = self.cfg
        near = contact_hazard(obs, cfg.footprint, cfg.person_radius + cfg.personal_space)
        how = "nearby"
        if near is None and obs.recalled:
            near = contact_hazard(Obstacles(people=obs.recalled), cfg.footprint, cfg.contact_reach)
            how = "seen nearby moments before"
        if near is not None:
            who = "a person" if near.human_id is None else f"person {near.human_id}"
            return Hazard("human", source, 0.0, near.human_id, f"{detail}; {who} {how}", contact=True)
        return Hazard("static", source, 0.0, None, detail, contact=True)

    def _collision(self, t: float, odom: Pose2D | None, hz: Hazard, state: str) -> CollisionRecord:
        x, y, th = odom if odom is not None else (0.0, 0.0, 0.0)
        return CollisionRecord(
            t,
            x,
            y,
            math.degrees(th),
            (self._a.action if self._a is not None else ""),
            hz.type,
            hz.distance_m,
            hz.human_id,
            state,
            hz.source,
            hz.contact,
        )

    def _on_collision(self, t: float, odom: Pose2D, imu_yaw: float, hz: Hazard) -> Tick:
        a = self._a
        col = self._collision(t, odom, hz, "moving" if a.forward else "turning")
        a.outcome = "stall" if hz.source == "stall" else "collision"
        a.detail = hz.detail
        self.phase = Phase.STOPPING
        # wait for in-flight commands and the robot's own braking before backing off
        a.settle_until = t + self.cfg.latency_s + abs(self._last_cmd[0]) / self.cfg.a_lin + abs(self._last_cmd[1]) / self.cfg.a_ang + 0.05
        a.settle_deadline = a.settle_until + 0.5
        self._push_cmd(t, ZERO)
        return Tick(ZERO, [], [col])

    def _end_now(self, t: float, odom: Pose2D, imu_yaw: float, collisions: list[CollisionRecord] | None = None) -> Tick:
        self._push_cmd(t, ZERO)
        return Tick(ZERO, [self._finish(t, odom, imu_yaw)], collisions or [])

    def _finish(self, t: float, odom: Pose2D | None, imu_yaw: float | None) -> ActionResult:
        a = self._a
        self.phase = Phase.IDLE
        self._stall.reset()
        r = ActionResult(
            a.seq,
            a.action,
            a.outcome or "aborted",
            pitch_deg=math.degrees(self.pitch),
            duration_s=t - a.t0,
            detail=a.detail,
            reverted=a.reverted,
        )
        if odom is not None and imu_yaw is not None:
            along, dyaw_imu, dyaw_odom, lateral = self._progress(odom, imu_yaw)
            x0, y0, th0 = a.odom0
            c, s = math.cos(th0), math.sin(th0)
            along = c * (odom[0] - x0) + s * (odom[1] - y0)
            intended_d = 0.0 if a.reverted else (a.target if a.forward else 0.0)
            intended_yaw = 0.0 if a.reverted else a.yaw_aim
            if a.outcome == Outcome.COLLISION and not a.reverted and a.detail.startswith(BLOCKED_DETAIL):
                intended_d, intended_yaw = 0.0, 0.0
            r.distance_odom_m = along
            r.yaw_odom_deg = math.degrees(dyaw_odom)
            r.yaw_imu_deg = math.degrees(dyaw_imu)
            r.position_error_m = math.hypot(along - intended_d, lateral)
            r.yaw_error_deg = math.degrees(intended_yaw - dyaw_imu)
            r.x, r.y, r.yaw_deg = odom[0], odom[1], math.degrees(odom[2])
        if r.outcome == Outcome.OK:
            figures = {
                "distance_odom_m": r.distance_odom_m,
                "position_error_m": r.position_error_m,
                "yaw_imu_deg": r.yaw_imu_deg,
                "yaw_odom_deg": r.yaw_odom_deg,
                "yaw_error_deg": r.yaw_error_deg,
            }
            bad = [k for k, v in figures.items() if v is None or not math.isfinite(v)]
            if bad:
                r.outcome = a.outcome = Outcome.ABORTED.value
                note = f"measured figures not finite ({', '.join(bad)}): the action cannot be verified"
                r.detail = a.detail = f"{a.detail}; {note}" if a.detail else note
        if r.outcome == Outcome.OK and not a.reverted:
            self._nominal_yaw, self._nominal_t = a.imu0 + a.yaw_aim, t
        return r

    def _simple(self, action: str, outcome: str, odom: Pose2D | None, detail: str) -> ActionResult:
        r = ActionResult(self.seq, action, outcome, pitch_deg=math.degrees(self.pitch), detail=detail)
        if odom is not None:
            r.x, r.y, r.yaw_deg = odom[0], odom[1], math.degrees(odom[2])
        return r

    def _look(self, action: str, odom: Pose2D | None) -> ActionResult:
        if self.cfg.look_mode != "virtual":
            return self._simple(action, "unsupported", odom, "the Go2 has no camera tilt (look_mode unsupported); nothing moved")
        step = A.MOTION_SPECS[action].amount
        new = self.pitch + step
        if abs(new) > self.cfg.max_pitch + 1e-9:
            return self._simple(
                action, "unsupported", odom, f"camera pitch limit +/-{math.degrees(self.cfg.max_pitch):g} deg reached; pitch unchanged"
            )
        self.pitch = new
        return self._simple(action, "ok", odom, "virtual camera pitch")
