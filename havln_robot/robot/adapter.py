"""Functional core of go2_driver_node (pure Python + math; no rclpy, no unitree_sdk2py import).

:class:`DriverCore` is a tick-driven state machine. The shell feeds it ``cmd_vel`` samples
(:meth:`DriverCore.on_cmd_vel`), sportmodestate arrivals (:meth:`DriverCore.on_state`) and the
outcome of every SDK call (:meth:`DriverCore.on_result`); each :meth:`DriverCore.tick` returns the
:class:`SdkCall` list to issue now, in order (stop at the first failure). Behaviour:

* a non-zero command is re-sent as ``Move`` on every tick (>= 20 Hz), because the Go2 sport
  controller keeps executing the last ``Move`` for about 1 s and then stops by itself;
* ``BalanceStand`` is sent before the first ``Move`` after start, after recovery from an e-stop or a
  state fault, and whenever the robot reports a mode in which ``Move`` does nothing (``Move`` right
  after ``StandUp`` is ignored by the real robot);
* command ends (explicit zero, or no ``cmd_vel`` for more than ``cmd_timeout_s``) -> one ``StopMove``
  (retried until it succeeds);
* no sportmodestate for more than ``state_timeout_s`` -> ``StopMove``, a fault, and every command
  refused until state is back and a fresh ``cmd_vel`` arrives;
* e-stop -> latched; the shell calls ``Damp`` at once; commands refused until :meth:`DriverCore.recover`.
  The shell keeps the latch on disk (:mod:`havln_robot.robot.latch`) and starts a core that finds it
  latched (``estopped=True``): such a core sends nothing that stands or moves the robot. A robot that
  reports damping (mode 7) while the driver did not just recover it latches the core as well
  (:meth:`DriverCore.take_new_latch` tells the shell once, to record it);
* odometry resets (:mod:`havln_robot.robot.resets`) -> ``StopMove``, the command dropped, and
  motion refused until the operator resumes (:meth:`DriverCore.resume`).

Times are seconds of one monotonic clock (the shell uses :func:`time.monotonic`).

The state conversion helpers (:func:`odom_fields`, :func:`imu_fields`) turn a
``unitree_go.msg.dds_.SportModeState_`` (read by attribute, duck-typed) into ROS-convention numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from havln_robot.geometry import first_non_finite
from havln_robot.robot.params import GO2_VX_RANGE, GO2_VY_RANGE, GO2_VYAW_RANGE

#: SportModeState_.mode values named in the Unitree Go2 sport-mode documentation.
MODE_NAMES = {
    0: "idle",
    1: "balance_stand",
    2: "pose",
    3: "locomotion",
    5: "lie_down",
    6: "joint_lock",
    7: "damping",
    8: "recovery_stand",
    10: "sit",
}

#: Diagnostic levels (diagnostic_msgs/DiagnosticStatus OK / WARN / ERROR).
OK, WARN, ERROR = 0, 1, 2
#: SportModeState_.mode of a damped robot (after Damp; joints limp).
MODE_DAMPING = 7


@dataclass(frozen=True)
class Limits:
    """Velocity limits applied to every command, all >= 0.

    Attributes:
        max_forward: limit on vx > 0 (m/s).
        max_backward: limit on -vx for vx < 0 (m/s).
        max_lateral: limit on |vy| (m/s).
        max_yaw_rate: limit on |vyaw| (rad/s).
    """

    max_forward: float = 0.5
    max_backward: float = 0.3
    max_lateral: float = 0.3
    max_yaw_rate: float = 1.0

    @classmethod
    def from_params(cls, p: Mapping[str, Any]) -> Limits:
        """Limits from a go2_driver_node parameter dict (``max_forward_speed`` ...)."""
        return cls(float(p["max_forward_speed"]), float(p["max_backward_speed"]), float(p["max_lateral_speed"]), float(p["max_yaw_rate"]))


def _clip(v: float, lo: float, hi: float) -> float:
    return lo if v < lo else hi if v > hi else v


def clamp_command(vx: float, vy: float, vyaw: float, limits: Limits) -> tuple[float, float, float]:
    """Clamp a body-frame velocity command to the Go2 ``Move`` range and to ``limits``.

    Args:
        vx: forward speed (m/s, base_link x).
        vy: left speed (m/s, base_link y).
        vyaw: yaw rate (rad/s, counter-clockwise positive).
        limits: indoor limits (each further bounded by the Go2 range).

    Returns:
        (vx, vy, vyaw) clamped, as floats. Each component is clamped on its own (no scaling).

    Raises:
        ValueError: a component is NaN or infinite (message names it).
    """
    for name, v in (("linear.x", vx), ("linear.y", vy), ("angular.z", vyaw)):
        if not math.isfinite(v):
            raise ValueError(f"cmd_vel {name} is {v!r}; send finite numbers (m/s, rad/s)")
    vx = _clip(float(vx), max(GO2_VX_RANGE[0], -limits.max_backward), min(GO2_VX_RANGE[1], limits.max_forward))
    vy = _clip(float(vy), max(GO2_VY_RANGE[0], -limits.max_lateral), min(GO2_VY_RANGE[1], limits.max_lateral))
    vyaw = _clip(float(vyaw), max(GO2_VYAW_RANGE[0], -limits.max_yaw_rate), min(GO2_VYAW_RANGE[1], limits.max_yaw_rate))
    return vx, vy, vyaw


@dataclass(frozen=True)
class SdkCall:
    """One SportClient call for the shell to issue.

    Attributes:
        name: ``"Move"``, ``"StopMove"``, ``"BalanceStand"``, ``"Damp"`` or ``"StandUp"``.
        args: positional arguments (Move: vx m/s, vy m/s, vyaw rad/s).
    """

    name: str
    args: tuple[float, ...] = ()


MOVE, STOP, BALANCE, DAMP, STAND_UP = "Move", "StopMove", "BalanceStand", "Damp", "StandUp"
#: Calls whose failures are retried with backoff and at most ``max_call_retries`` times in a row.
RETRY_BACKOFF_CALLS = (STOP, DAMP)


@dataclass
class _Counters:
    moves: int = 0
    stops: int = 0
    balance_stands: int = 0
    damps: int = 0
    rejected_cmds: int = 0
    failed_calls: int = 0
    watchdog_stops: int = 0
    state_faults: int = 0


@dataclass
class DriverCore:
    """Command shaping, watchdogs and safety latches of go2_driver_node.

    Args:
        limits: velocity limits.
        cmd_timeout_s: cmd_vel silence (s) after which the robot is stopped.
        state_timeout_s: sportmodestate silence (s) after which the driver faults.
        zero_epsilon: component magnitude below which a command counts as zero.
        move_modes: SportModeState_.mode values in which Move works (Unitree: 1 balance stand, 3 locomotion).
        balance_retry_s: minimum interval between BalanceStand calls while the mode stays outside ``move_modes``.
        retry_backoff_initial_s: wait (s) before re-issuing a StopMove / Damp that failed; doubles per
            consecutive failure of that call up to ``retry_backoff_max_s`` (s).
        max_call_retries: consecutive failures of one call after which it is no longer retried (until a
            sportmodestate or a successful call shows the robot is reachable again); reported once.

    Not thread-safe: the shell serialises access with one lock.
    """

    limits: Limits = field(default_factory=Limits)
    cmd_timeout_s: float = 0.3
    state_timeout_s: float = 0.5
    zero_epsilon: float = 1e-3
    move_modes: tuple[int, ...] = (1, 3)
    balance_retry_s: float = 1.0
    retry_backoff_initial_s: float = 0.1
    retry_backoff_max_s: float = 2.0
    max_call_retries: int = 20
    estopped: bool = False
    estop_reason: str = ""

    def __post_init__(self) -> None:
        self.move_modes = tuple(int(m) for m in self.move_modes)
        self.cmd: tuple[float, float, float] | None = None  # last accepted, clamped command
        self.cmd_t: float | None = None
        self.state_t: float | None = None
        self.mode: int | None = None
        self.closed = False
        self._new_latch: str | None = None  # a latch the core took by itself (robot found damped), for the shell to record
        self._recovering = False  # recover() sent StandUp: a damping mode is expected until the robot reports another
        self.hold: str | None = None  # an odometry reset: motion refused until resume()
        self.damp_retry = False  # the last Damp failed: retry it on every tick while e-stopped
        self.stand_up_pending = False  # recover() asked for a StandUp the control thread has not issued yet
        self.fault: str | None = "waiting for the first sportmodestate"
        self._fault_reported = False
        self.need_balance = True
        self._balance_t = -math.inf
        self.stop_pending = False  # a StopMove is owed (motion was commanded since the last successful stop)
        self.moving = False
        self.last_code: int | None = None
        self.last_call: str | None = None
        self.counters = _Counters()
        self._failures: dict[str, tuple[int, float]] = {}  # call name -> (consecutive failures, not before t)
        self._gave_up: list[str] = []

    @classmethod
    def from_params(cls, p: Mapping[str, Any], estopped: bool = False, estop_reason: str = "") -> DriverCore:
        """Core configured from a go2_driver_node parameter dict; ``estopped``: start latched (the
        on-disk latch was found, ``estop_reason`` says why it was set)."""
        return cls(
            limits=Limits.from_params(p),
            cmd_timeout_s=float(p["cmd_timeout_s"]),
            state_timeout_s=float(p["state_timeout_s"]),
            zero_epsilon=float(p["zero_epsilon"]),
            move_modes=tuple(p["move_modes"]),
            balance_retry_s=float(p["balance_retry_s"]),
            retry_backoff_initial_s=float(p.get("retry_backoff_initial_s", 0.1)),
            retry_backoff_max_s=float(p.get("retry_backoff_max_s", 2.0)),
            max_call_retries=int(p.get("max_call_retries", 20)),
            estopped=bool(estopped),
            estop_reason=estop_reason,
        )

    # --- inputs -----------------------------------------------------------------------------------
    def on_cmd_vel(self, t: float, vx: float, vy: float, vyaw: float) -> str | None:
        """Accept a cmd_vel sample (base_link; m/s, rad/s).

        Returns:
            ``None`` when accepted, else a one-line reason (e-stop latched, state fault, non-finite value).
        """
        if self.closed:
            self.counters.rejected_cmds += 1
            return "driver shutting down: motion refused"
        if self.estopped:
            self.counters.rejected_cmds += 1
            why = f" ({self.estop_reason})" if self.estop_reason else ""
            return f"e-stop latched{why}: motion refused until go2/recover is called"
        if self.hold is not None:
            self.counters.rejected_cmds += 1
            return f"{self.hold}: motion refused until the operator resumes (go2/resume)"
        if self.state_t is None:
            self.counters.rejected_cmds += 1
            return "no sportmodestate received yet: motion refused (is the Go2 on this network_interface and dds_domain_id?)"
        if not self.state_ok(t):
            self.counters.rejected_cmds += 1
            return f"no sportmodestate for {t - self.state_t:.2f} s: motion refused until it returns"
        try:
            self.cmd = clamp_command(vx, vy, vyaw, self.limits)
        except ValueError as exc:
            self.counters.rejected_cmds += 1
            return str(exc)
        self.cmd_t = t
        return None

    def on_state(self, t: float, mode: int | None = None) -> None:
        """A sportmodestate sample arrived at ``t``; ``mode`` is its SportModeState_.mode."""
        self.state_t = t
        self.mode = None if mode is None else int(mode)
        if self._failures and any(n >= self.max_call_retries for n, _ in self._failures.values()):
            self._failures.clear()  # the robot is talking again: calls given up on may be retried
        if self.fault is not None:
            self.fault = None
            self._fault_reported = False
            self.need_balance = True
            self._balance_t = -math.inf
            self.cmd, self.cmd_t = None, None  # a fresh cmd_vel is required after a fault
        if self.mode is not None and self.mode not in self.move_modes and not self.moving:
            self.need_balance = True
        if self.mode == MODE_DAMPING:
            if not self.estopped and not self._recovering and not self.closed:
                self.estopped, self.estop_reason = True, "robot reported damping (mode 7)"
                self._new_latch = self.estop_reason
                self.cmd, self.cmd_t = None, None
                self.moving = False
        elif self.mode is not None:
            self._recovering = False

    def take_new_latch(self) -> str | None:
        """The reason of a latch the core took by itself since the last call (robot found damped), else None."""
        out, self._new_latch = self._new_latch, None
        return out

    def reset_detected(self, reason: str) -> None:
        """The robot's odometry was reset (reboot, reconnect): drop the command, owe a StopMove, and
        refuse motion until :meth:`resume`."""
        self.hold = reason
        if self.cmd is not None or self.moving:
            self.stop_pending = True
        self.cmd, self.cmd_t = None, None
        self.need_balance = True
        self._balance_t = -math.inf

    def resume(self) -> bool:
        """The operator resumes after an odometry reset; returns False when there was nothing to resume."""
        was, self.hold = self.hold, None
        return was is not None

    def estop(self, reason: str = "go2/estop") -> SdkCall:
        """Latch the e-stop; drop the command. Returns the call to issue at once (``Damp``)."""
        self.estopped = True
        self.estop_reason = reason
        self._recovering = False
        self.cmd, self.cmd_t = None, None
        self.moving = False
        return SdkCall(DAMP)

    def recover(self) -> SdkCall:
        """Clear the e-stop latch; BalanceStand will precede the next Move. Returns ``StandUp``, which
        the next :meth:`tick` also returns (the shell issues it from its control thread, so a StandUp
        blocked on an unreachable robot never holds up the executor that serves the e-stop)."""
        self.stand_up_pending = True
        self.estopped = False
        self.estop_reason = ""
        self._recovering = True
        self.damp_retry = False
        self.need_balance = True
        self._balance_t = -math.inf
        self.stop_pending = False
        return SdkCall(STAND_UP)

    def shutdown(self) -> SdkCall:
        """Drop the command for good (node shutdown). Returns ``StopMove`` to issue at once."""
        self.closed = True
        self.cmd, self.cmd_t = None, None
        self.stop_pending = True
        return SdkCall(STOP)

    def on_result(self, call: SdkCall, code: int, t: float) -> None:
        """Record the return code of an issued call (0 = success, as in unitree_sdk2py)."""
        self.last_call, self.last_code = call.name, int(code)
        if call.name == DAMP:
            self.damp_retry = code != 0
        elif call.name == STAND_UP:
            self.stand_up_pending = False  # not retried: the operator calls recover again
        if call.name != DAMP and self.estopped:
            self.damp_retry = True  # a motion call was in flight when the e-stop latched: Damp again, last
        if code != 0:
            self.counters.failed_calls += 1
            if call.name not in RETRY_BACKOFF_CALLS:
                return  # BalanceStand has balance_retry_s; Move is re-sent (no reply) every tick
            n = self._failures.get(call.name, (0, 0.0))[0] + 1
            wait = min(self.retry_backoff_initial_s * 2.0 ** (n - 1), self.retry_backoff_max_s)
            self._failures[call.name] = (n, t + wait)
            if n == self.max_call_retries:
                self._gave_up.append(
                    f"SportClient.{call.name} failed {n} times in a row (last code {code}); not retried until the robot answers"
                )
            return
        self._failures.clear()
        if call.name == MOVE:
            self.counters.moves += 1
            self.moving = True
        elif call.name == STOP:
            self.counters.stops += 1
            self.stop_pending = False
            self.moving = False
        elif call.name == BALANCE:
            self.counters.balance_stands += 1
            self.need_balance = False
            self._balance_t = t
        elif call.name == DAMP:
            self.counters.damps += 1
        elif call.name == STAND_UP:
            self.stand_up_pending = False
            self.need_balance = True
            self._balance_t = -math.inf

    # --- the tick ---------------------------------------------------------------------------------
    def state_ok(self, t: float) -> bool:
        """True when a sportmodestate arrived within ``state_timeout_s`` of ``t``."""
        return self.state_t is not None and (t - self.state_t) <= self.state_timeout_s

    def _is_zero(self, c: Sequence[float]) -> bool:
        return all(abs(v) < self.zero_epsilon for v in c)

    def _allowed(self, call: SdkCall, t: float) -> bool:
        """False while ``call`` waits out its retry backoff or was given up on (bounded retries)."""
        n, not_before = self._failures.get(call.name, (0, 0.0))
        return n == 0 or (n < self.max_call_retries and t >= not_before)

    def take_gave_up(self) -> list[str]:
        """One-line reports of calls given up on since the last call (each reported once)."""
        out, self._gave_up = self._gave_up, []
        return out

    def tick(self, t: float) -> list[SdkCall]:
        """Calls to issue now, in order; issue them until one fails and report each with :meth:`on_result`.

        A failed call is retried after a backoff (``retry_backoff_initial_s`` doubling up to
        ``retry_backoff_max_s``) and at most ``max_call_retries`` times in a row.
        """
        calls = self._tick(t)
        if not self._failures:
            return calls
        out = []
        for c in calls:
            if not self._allowed(c, t):
                break  # order matters (BalanceStand before Move): stop at the first call held back
            out.append(c)
        return out

    def _tick(self, t: float) -> list[SdkCall]:
        if self.estopped:
            return [SdkCall(DAMP)] if self.damp_retry else []
        if self.closed:
            return []
        if self.stand_up_pending:
            return [SdkCall(STAND_UP)]
        if not self.state_ok(t):
            if self.state_t is not None and self.fault is None:
                self.fault = f"no sportmodestate for {t - self.state_t:.2f} s (limit {self.state_timeout_s:g} s)"
                self.counters.state_faults += 1
            if self.cmd is not None:
                self.cmd, self.cmd_t = None, None
                self.stop_pending = True
            return [SdkCall(STOP)] if self.stop_pending else []
        if self.hold is not None:
            return [SdkCall(STOP)] if self.stop_pending else []
        if self.cmd is not None and self.cmd_t is not None and t - self.cmd_t > self.cmd_timeout_s:
            self.cmd, self.cmd_t = None, None
            if self.moving or self.stop_pending:
                self.counters.watchdog_stops += 1
        if self.cmd is None or self._is_zero(self.cmd):
            if self.cmd is not None and self.moving:
                self.stop_pending = True
            return [SdkCall(STOP)] if (self.stop_pending or self.moving) else []
        calls = []
        if self.need_balance and t - self._balance_t >= self.balance_retry_s:
            calls.append(SdkCall(BALANCE))
        self.stop_pending = True
        calls.append(SdkCall(MOVE, self.cmd))
        return calls

    def deadline(self) -> float | None:
        """Monotonic time (s) at which the cmd_vel deadman expires (the shell wakes its control thread
        then, so that the StopMove leaves at the deadline, not up to a control period later); None
        when no command is held."""
        if self.cmd is None or self.cmd_t is None:
            return None
        return self.cmd_t + self.cmd_timeout_s

    # --- reporting --------------------------------------------------------------------------------
    def take_new_fault(self) -> str | None:
        """The current fault the first time it is asked for (for one log line per fault), else None."""
        if self.fault is not None and self.state_t is not None and not self._fault_reported:
            self._fault_reported = True
            return self.fault
        return None

    def status(self, t: float) -> tuple[int, str, dict[str, Any]]:
        """(level, message, values) for a DiagnosticStatus: ERROR on e-stop/fault, WARN while waiting."""
        if self.estopped:
            level, msg = ERROR, f"e-stop latched ({self.estop_reason or 'Damp'}); call go2/recover"
        elif self.hold is not None:
            level, msg = ERROR, f"{self.hold}; motion refused until go2/resume"
        elif self.fault is not None:
            level, msg = (ERROR if self.state_t is not None else WARN), self.fault
        elif self.moving:
            level, msg = OK, "moving"
        else:
            level, msg = OK, "standing"
        values: dict[str, Any] = {
            "state_age_s": float("nan") if self.state_t is None else t - self.state_t,
            "cmd_age_s": float("nan") if self.cmd_t is None else t - self.cmd_t,
            "mode": "unknown" if self.mode is None else f"{self.mode} {MODE_NAMES.get(self.mode, '')}".strip(),
            "estopped": str(self.estopped).lower(),
            "fault": self.fault or "",
            "estop_reason": self.estop_reason,
            "hold": self.hold or "",
            "command": "" if self.cmd is None else " ".join(f"{v:.3f}" for v in self.cmd),
            "last_call": self.last_call or "",
            "last_code": "" if self.last_code is None else self.last_code,
        }
        values.update({k: v for k, v in vars(self.counters).items()})
        return level, msg, values


# --- state conversion ---------------------------------------------------------------------------
@dataclass(frozen=True)
class OdomFields:
    """Odometry from one SportModeState_ (REP 103/105).

    Attributes:
        position: (x, y, z) of base_link in the Go2's odometry frame (m).
        orientation: quaternion (x, y, z, w) of base_link in odom (ROS order).
        linear: (vx, vy, vz) in base_link (m/s).
        angular: (wx, wy, wz) in base_link (rad/s), from the IMU gyroscope.
        problem: the first non-finite SportModeState_ value these came from (``position[0] = nan``),
            "" when all are finite; such a sample must not be published.
    """

    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]
    linear: tuple[float, float, float]
    angular: tuple[float, float, float]
    problem: str = ""


@dataclass(frozen=True)
class ImuFields:
    """IMU from SportModeState_.imu_state.

    Attributes:
        orientation: quaternion (x, y, z, w), ROS order (unitree sends w, x, y, z).
        angular_velocity: gyroscope (rad/s), body frame.
        linear_acceleration: accelerometer (m/s^2), body frame (includes gravity: about +9.8 on z at rest).
        valid_orientation: False when the robot sent a zero quaternion (identity used instead).
        problem: the first non-finite ``imu_state`` value (``imu_state.gyroscope[2] = nan``), "" when all
            are finite; such a sample must not be published.
    """

    orientation: tuple[float, float, float, float]
    angular_velocity: tuple[float, float, float]
    linear_acceleration: tuple[float, float, float]
    valid_orientation: bool
    problem: str = ""


def _first_non_finite(**arrays: Sequence[float]) -> str:
    """``name[i] = value`` of the first non-finite value among ``arrays``, "" when all are finite."""
    return first_non_finite((f"{name}[{i}]", v) for name, values in arrays.items() for i, v in enumerate(values)) or ""


def unitree_quat_to_ros(q_wxyz: Iterable[float]) -> tuple[tuple[float, float, float, float], bool]:
    """Convert a unitree (w, x, y, z) quaternion to a normalised ROS (x, y, z, w) one.

    Returns:
        (quaternion, valid); an all-zero or non-finite input gives the identity and ``valid=False``.
    """
    w, x, y, z = (float(v) for v in q_wxyz)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if not math.isfinite(n) or n < 1e-6:
        return (0.0, 0.0, 0.0, 1.0), False
    return (x / n, y / n, z / n, w / n), True


def _yaw(q: tuple[float, float, float, float]) -> float:
    x, y, z, w = q
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def imu_fields(state: Any) -> ImuFields:
    """IMU fields of a SportModeState_ (uses ``state.imu_state.quaternion/gyroscope/accelerometer``)."""
    imu = state.imu_state
    q, valid = unitree_quat_to_ros(imu.quaternion)
    raw_q = tuple(float(v) for v in imu.quaternion)
    g = tuple(float(v) for v in imu.gyroscope)
    a = tuple(float(v) for v in imu.accelerometer)
    bad = _first_non_finite(**{"imu_state.quaternion": raw_q, "imu_state.gyroscope": g, "imu_state.accelerometer": a})
    return ImuFields(q, (g[0], g[1], g[2]), (a[0], a[1], a[2]), valid, bad)


def odom_fields(state: Any, velocity_frame: str = "odom") -> OdomFields:
    """Odometry fields of a SportModeState_.

    Args:
        state: object with ``position`` (3,), ``velocity`` (3,), ``imu_state`` (see :func:`imu_fields`).
        velocity_frame: ``"odom"`` when ``state.velocity`` is expressed in the odometry frame (rotated
            here by -yaw into base_link, as nav_msgs/Odometry wants), ``"body"`` when already in base_link.

    Raises:
        ValueError: unknown ``velocity_frame``.
    """
    if velocity_frame not in ("odom", "body"):
        raise ValueError(f"velocity_frame {velocity_frame!r}: use 'odom' or 'body'")
    imu = imu_fields(state)
    p = tuple(float(v) for v in state.position)
    v = [float(c) for c in state.velocity]
    bad = _first_non_finite(position=p, velocity=v) or (imu.problem if "accelerometer" not in imu.problem else "")
    if velocity_frame == "odom":
        yaw = _yaw(imu.orientation)
        c, s = math.cos(yaw), math.sin(yaw)
        v[0], v[1] = c * v[0] + s * v[1], -s * v[0] + c * v[1]
    return OdomFields((p[0], p[1], p[2]), imu.orientation, (v[0], v[1], v[2]), imu.angular_velocity, bad)
