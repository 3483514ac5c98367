"""The simulated Unitree Go2 base: body/camera constants and a noisy planar base (pure numpy).

:class:`NoisyBase` turns ``cmd_vel`` commands (forward speed ``v`` m/s, yaw rate ``w`` rad/s,
optionally a body-pitch rate) into motion of a :class:`havln_robot.sim.world.World` through
``World.move(forward_m, dyaw_rad, dt)`` -- so collisions stop the body -- and produces what the
real Go2 reports: odometry with drift (``odom`` → ``base_link``) and an IMU with gyro noise and
bias. Every random draw comes from one seeded ``numpy.random.Generator``, so a run is reproducible.

Conventions: REP 103 (x forward, y left, z up, yaw CCW positive, SI units). The odom frame is
the body pose at :meth:`NoisyBase.reset` (as the Go2's ``rt/sportmodestate`` position starts at
zero). Camera pitch is the *camera elevation*, positive = looking up (``LOOK_UP``); the body pitch
that produces it on the Go2 is its negative (REP 103 pitch is nose-down positive).

Sources of the constants
------------------------
* Go2 body size and the ``Move`` ranges: :mod:`havln_robot.hardware`; ``Euler`` body pitch is
  limited to +-0.75 rad (unitree_sdk2 sport-service docs).
* Intel RealSense D400 series datasheet (doc. 337029): D435i module 90 mm x 25 mm x 25 mm;
  colour sensor FOV 69.4 deg x 42.5 deg (H x V, 16:9 native); depth range up to ~10 m.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from havln_robot.hardware import GO2_HEIGHT_M, GO2_LENGTH_M, GO2_WIDTH_M

# --- Go2 body and SDK ranges: havln_robot.hardware (one definition) ---------------------------
GO2_RADIUS_M: float = round(math.hypot(GO2_LENGTH_M / 2.0, GO2_WIDTH_M / 2.0), 3)
"""Footprint radius, m: the circle circumscribing the 0.70 x 0.31 m body (= 0.383 m)."""
GO2_MAX_BODY_PITCH_RAD: float = 0.75
"""Body pitch limit of ``SportClient.Euler``, rad (unitree_sdk2 sport docs)."""

# --- RealSense D435i on the head ---------------------------------------------------------------
D435I_HFOV_DEG: float = 69.4
"""D435i colour horizontal field of view, deg (RealSense D400 datasheet, 337029)."""
D435I_VFOV_DEG: float = 42.5
"""D435i colour vertical field of view at the native 16:9 format, deg (same datasheet)."""
D435I_HEIGHT_M: float = 0.025
"""D435i module height, m (datasheet: 90 x 25 x 25 mm)."""
D435I_MAX_RANGE_M: float = 10.0
"""Depth range used as 'beyond range' cut-off, m (datasheet: ~10 m, scene dependent)."""
D435I_MIN_RANGE_M: float = 0.2
"""Closest valid depth, m (datasheet min-Z ~0.195 m at 848x480)."""
GO2_CAMERA_HEIGHT_M: float = round(GO2_HEIGHT_M + D435I_HEIGHT_M / 2.0, 4)
"""Camera optical centre above the ground, m: D435i standing on top of the head (0.40 + 0.0125)."""
GO2_CAMERA_FORWARD_M: float = 0.30
"""Camera optical centre ahead of the body centre (base_link), m: at the head, 0.05 m behind the
front of the 0.70 m body."""

GRAVITY_MPS2: float = 9.80665
"""Standard gravity, m/s^2 (CGPM 1901)."""


class MovableWorld(Protocol):
    """What :class:`NoisyBase` needs of a world (``havln_robot.sim.world.World`` satisfies it)."""

    @property
    def pose(self) -> tuple[float, float, float, float]: ...  # (x, y, z, yaw) map frame, m / rad

    @property
    def t(self) -> float: ...  # sim time, s

    def move(self, forward_m: float, dyaw_rad: float, dt: float) -> Any: ...  # Contact | None


@dataclass(frozen=True)
class BaseLimits:
    """Velocity and acceleration limits of the simulated base (indoor defaults, well inside the
    Go2's SDK ranges, :mod:`havln_robot.hardware`).

    Attributes:
        max_linear_mps: |v| limit, m/s.
        max_angular_rps: |w| limit, rad/s.
        max_linear_accel_mps2: |dv/dt| limit, m/s^2.
        max_angular_accel_rps2: |dw/dt| limit, rad/s^2.
        max_pitch_rad: |camera pitch| limit, rad (Go2 Euler pitch limit 0.75 rad).
        max_pitch_rate_rps: |pitch rate| limit, rad/s.
    """

    max_linear_mps: float = 1.0
    max_angular_rps: float = 2.0
    max_linear_accel_mps2: float = 2.0
    max_angular_accel_rps2: float = 6.0
    max_pitch_rad: float = GO2_MAX_BODY_PITCH_RAD
    max_pitch_rate_rps: float = 1.5

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"BaseLimits.{name}: must be a positive finite number, got {v!r}")


@dataclass(frozen=True)
class NoiseModel:
    """Seeded sensor and actuation errors. All zero = a perfect robot.

    Odometry follows a random-walk model (variance grows with distance travelled / angle turned,
    Thrun et al., *Probabilistic Robotics*, Sec. 5.4) plus a per-episode scale error.

    Attributes:
        latency_s: actuation latency: a command takes effect this long after it arrives, s.
        odom_scale_std: std of the per-episode odometry distance scale error (fraction, drawn at reset).
        odom_trans_noise: translation random walk, m per sqrt(m travelled).
        odom_yaw_noise: yaw random walk from turning, rad per sqrt(rad turned).
        odom_yaw_per_m: yaw random walk from driving, rad per sqrt(m travelled).
        gyro_noise_std: white noise on each gyro sample, rad/s.
        gyro_bias_std: std of the constant gyro bias drawn at reset, rad/s.
        accel_noise_std: white noise on each accelerometer sample, m/s^2.
    """

    latency_s: float = 0.05
    odom_scale_std: float = 0.01
    odom_trans_noise: float = 0.005
    odom_yaw_noise: float = 0.005
    odom_yaw_per_m: float = 0.003
    gyro_noise_std: float = 0.002
    gyro_bias_std: float = 0.0005
    accel_noise_std: float = 0.02

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"NoiseModel.{name}: must be a finite number >= 0, got {v!r}")

    @classmethod
    def none(cls) -> NoiseModel:
        """A perfect robot: no latency, no noise, no bias."""
        return cls(**{k: 0.0 for k in cls.__dataclass_fields__})


@dataclass
class OdomState:
    """Odometry as the Go2 reports it: pose of base_link in the odom frame and body-frame velocity.

    Attributes:
        x, y: position, m (odom frame).
        yaw: heading, rad (odom frame, wrapped to [-pi, pi)).
        v: forward velocity, m/s (base_link); w: yaw rate, rad/s.
        var_xy: variance of x and y accumulated by the random walk since reset, m^2.
        var_yaw: variance of yaw accumulated since reset, rad^2.
    """

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0
    v: float = 0.0
    w: float = 0.0
    var_xy: float = 0.0
    var_yaw: float = 0.0


@dataclass
class ImuState:
    """One IMU sample (frame imu_link = base_link orientation).

    Attributes:
        gyro: (3,) angular velocity rad/s (noise + bias on z).
        accel: (3,) specific force m/s^2 (gravity included, +z up when level).
        roll, pitch, yaw: orientation, rad; yaw integrated from the gyro since reset (drifts),
            pitch is the body pitch (REP 103, nose down positive = -camera pitch).
    """

    gyro: np.ndarray = field(default_factory=lambda: np.zeros(3))
    accel: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, GRAVITY_MPS2]))
    roll: float = 0.0
    pitch: float = 0.0
    yaw: float = 0.0


@dataclass(frozen=True)
class StepOutcome:
    """Result of one :meth:`NoisyBase.step`.

    Attributes:
        contact: what ``World.move`` returned (a Contact, or ``None`` when the step was free).
        v, w: true achieved forward speed (m/s) and yaw rate (rad/s) over the step.
    """

    contact: Any
    v: float
    w: float


def _approach(current: float, target: float, max_delta: float) -> float:
    """Move ``current`` towards ``target`` by at most ``max_delta``."""
    d = target - current
    if d > max_delta:
        return current + max_delta
    if d < -max_delta:
        return current - max_delta
    return target


class NoisyBase:
    """A planar Go2 base driven by cmd_vel, moving a world, with noisy odometry and IMU.

    Args:
        world: object with ``pose`` (x, y, z, yaw), ``t`` and ``move(forward_m, dyaw_rad, dt)``
            returning a contact or ``None`` (:class:`havln_robot.sim.world.World`).
        limits: velocity / acceleration limits.
        noise: error model (use ``NoiseModel.none()`` for a perfect robot).
        seed: seed of the random generator; :meth:`reset` may reseed.

    Attributes:
        odom: latest :class:`OdomState`; imu: latest :class:`ImuState`.
        pitch: camera pitch (elevation), rad, positive up.
        v, w: true current forward speed (m/s) and yaw rate (rad/s).
        contacts: number of steps that ended in contact since reset.
        distance_m: true distance travelled since reset, m.
    """

    def __init__(self, world: MovableWorld, limits: BaseLimits | None = None, noise: NoiseModel | None = None, seed: int = 0) -> None:
        self.world = world
        self.limits = limits or BaseLimits()
        self.noise = noise or NoiseModel()
        self.seed = int(seed)
        self.reset(seed)

    # ------------------------------------------------------------------ state
    def reset(self, seed: int | None = None) -> None:
        """Zero velocities, clear pending commands, restart odometry/IMU at zero, redraw biases.

        Args:
            seed: new seed (default: the one given at construction), so each reset with the
                same seed replays the same noise.
        """
        if seed is not None:
            self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        n = self.noise
        self.odom_scale = 1.0 + float(self.rng.normal(0.0, n.odom_scale_std)) if n.odom_scale_std > 0 else 1.0
        self.gyro_bias = float(self.rng.normal(0.0, n.gyro_bias_std)) if n.gyro_bias_std > 0 else 0.0
        self._queue: deque[tuple[float, float, float, float]] = deque()
        self._target = (0.0, 0.0, 0.0)  # v, w, pitch rate in effect
        self.v = 0.0
        self.w = 0.0
        self.pitch_rate = 0.0
        self.pitch = 0.0
        self._true_v = 0.0
        self.distance_m = 0.0
        self.contacts = 0
        self.last_contact: Any = None
        self.odom = OdomState()
        self.imu = ImuState()

    @property
    def target(self) -> tuple[float, float, float]:
        """The command in effect now (after latency): (v m/s, w rad/s, pitch rate rad/s), clamped."""
        return self._target

    def command(self, v: float, w: float, pitch_rate: float = 0.0) -> None:
        """Queue a velocity command; it takes effect ``noise.latency_s`` after the current sim time.

        Args:
            v: forward speed, m/s (Twist.linear.x); clamped to ``limits.max_linear_mps``.
            w: yaw rate, rad/s (Twist.angular.z); clamped to ``limits.max_angular_rps``.
            pitch_rate: camera elevation rate, rad/s (positive = look up); clamped.

        Raises:
            ValueError: a value is NaN or infinite (the command is ignored).
        """
        if not all(math.isfinite(x) for x in (v, w, pitch_rate)):
            raise ValueError(f"cmd_vel: non-finite command v={v} w={w} pitch_rate={pitch_rate}; send finite numbers")
        L = self.limits
        cmd = (
            max(-L.max_linear_mps, min(L.max_linear_mps, float(v))),
            max(-L.max_angular_rps, min(L.max_angular_rps, float(w))),
            max(-L.max_pitch_rate_rps, min(L.max_pitch_rate_rps, float(pitch_rate))),
        )
        self._queue.append((float(self.world.t) + self.noise.latency_s, *cmd))

    def stop(self) -> None:
        """Safe stop: drop pending commands and command zero velocity at once (no latency);
        the body still decelerates within the acceleration limits."""
        self._queue.clear()
        self._target = (0.0, 0.0, 0.0)

    # ------------------------------------------------------------------ motion
    def step(self, dt: float) -> StepOutcome:
        """Advance the base (and the world) by ``dt`` seconds.

        Applies the commands whose latency has elapsed, ramps the velocity within the
        acceleration limits, moves the world (a contact stops the body: velocity set to zero),
        then updates odometry and IMU from the motion actually achieved.

        Args:
            dt: time step, s (> 0).

        Returns:
            :class:`StepOutcome`.

        Raises:
            ValueError: ``dt`` is not positive.
        """
        if not dt > 0:
            raise ValueError(f"NoisyBase.step: dt must be > 0 s, got {dt}")
        now = float(self.world.t)
        while self._queue and self._queue[0][0] <= now + 1e-9:
            self._target = self._queue.popleft()[1:]
        L = self.limits
        tv, tw, tp = self._target
        self.v = _approach(self.v, tv, L.max_linear_accel_mps2 * dt)
        self.w = _approach(self.w, tw, L.max_angular_accel_rps2 * dt)
        self.pitch_rate = tp
        self.pitch = max(-L.max_pitch_rad, min(L.max_pitch_rad, self.pitch + tp * dt))

        x0, y0, _, yaw0 = self.world.pose
        contact = self.world.move(self.v * dt, self.w * dt, dt)
        x1, y1, _, yaw1 = self.world.pose
        # Motion actually achieved, in the body frame at the start of the step.
        c, s = math.cos(yaw0), math.sin(yaw0)
        dfwd = c * (x1 - x0) + s * (y1 - y0)
        dlat = -s * (x1 - x0) + c * (y1 - y0)
        dyaw = (yaw1 - yaw0 + math.pi) % (2 * math.pi) - math.pi
        v_prev = self._true_v
        if contact is not None:
            self.contacts += 1
            self.last_contact = contact
            self.v = 0.0  # the body stops at contact
        true_v = dfwd / dt
        true_w = dyaw / dt
        self._true_v = true_v
        self._update_odom(dfwd, dlat, dyaw, dt)
        self._update_imu(true_v, true_w, (true_v - v_prev) / dt, dt)
        return StepOutcome(contact=contact, v=true_v, w=true_w)

    def _update_odom(self, dfwd: float, dlat: float, dyaw: float, dt: float) -> None:
        n, rng = self.noise, self.rng
        dist = math.hypot(dfwd, dlat)
        mf = dfwd * self.odom_scale
        ml = dlat * self.odom_scale
        my = dyaw
        if dist > 0 and n.odom_trans_noise > 0:
            sd = n.odom_trans_noise * math.sqrt(dist)
            mf += float(rng.normal(0.0, sd))
            ml += float(rng.normal(0.0, sd))
        yaw_sd = math.hypot(n.odom_yaw_noise * math.sqrt(abs(dyaw)), n.odom_yaw_per_m * math.sqrt(dist))
        if yaw_sd > 0:
            my += float(rng.normal(0.0, yaw_sd))
        o = self.odom
        self.distance_m += dist
        o.var_xy = (n.odom_trans_noise**2) * self.distance_m + (n.odom_scale_std * self.distance_m) ** 2
        o.var_yaw += yaw_sd**2
        c, s = math.cos(o.yaw), math.sin(o.yaw)  # (dfwd, dlat) are in the body frame at the step start
        o.x += c * mf - s * ml
        o.y += s * mf + c * ml
        o.yaw = (o.yaw + my + math.pi) % (2 * math.pi) - math.pi
        o.v = mf / dt
        o.w = my / dt

    def _update_imu(self, v: float, w: float, a_fwd: float, dt: float) -> None:
        n, rng = self.noise, self.rng
        gyro = np.zeros(3)
        gyro[1] = -self.pitch_rate if abs(self.pitch) < self.limits.max_pitch_rad else 0.0
        gyro[2] = w + self.gyro_bias + (float(rng.normal(0.0, n.gyro_noise_std)) if n.gyro_noise_std > 0 else 0.0)
        body_pitch = -self.pitch
        accel = np.array(
            [
                a_fwd - GRAVITY_MPS2 * math.sin(body_pitch),
                v * w,
                GRAVITY_MPS2 * math.cos(body_pitch),
            ]
        )
        if n.accel_noise_std > 0:
            accel = accel + rng.normal(0.0, n.accel_noise_std, 3)
        im = self.imu
        im.gyro = gyro
        im.accel = accel
        im.yaw = (im.yaw + gyro[2] * dt + math.pi) % (2 * math.pi) - math.pi
        im.pitch = body_pitch
        im.roll = 0.0


def base_config(p: Mapping[str, Any]) -> tuple[BaseLimits, NoiseModel]:
    """:class:`BaseLimits` and :class:`NoiseModel` from sim_node parameters (``noise_enabled`` false = no noise)."""
    limits = BaseLimits(
        max_linear_mps=float(p.get("max_linear_speed", 1.0)),
        max_angular_rps=float(p.get("max_angular_speed", 2.0)),
        max_linear_accel_mps2=float(p.get("max_linear_accel", 2.0)),
        max_angular_accel_rps2=float(p.get("max_angular_accel", 6.0)),
        max_pitch_rad=math.radians(float(p.get("max_body_pitch_deg", 43.0))),
    )
    if not p.get("noise_enabled", True):
        return limits, NoiseModel.none()
    keys = (
        "latency_s",
        "odom_scale_std",
        "odom_trans_noise",
        "odom_yaw_noise",
        "odom_yaw_per_m",
        "gyro_noise_std",
        "gyro_bias_std",
        "accel_noise_std",
    )
    defaults = NoiseModel()
    return limits, NoiseModel(**{k: float(p.get(k, getattr(defaults, k))) for k in keys})
