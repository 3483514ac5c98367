"""IMU / odometry consistency checks (pure Python).

* :class:`GyroYaw` integrates the gyro z rate into a yaw angle, removing a bias estimated while
  the robot stands still -- the "IMU yaw" the executor turns on.
* :func:`slip_check` compares the yaw change seen by the gyro with the one seen by odometry;
  a disagreement beyond a threshold means the legs (or wheels) slipped or odometry is wrong.
* :class:`StallDetector` flags commanded motion that makes no progress (pushing against
  something, stuck foot).
* :func:`jolt_check` flags a horizontal acceleration spike (a bump).
"""

from __future__ import annotations

import math
from collections import deque

from havln_robot.geometry import wrap_angle


class GyroYaw:
    """Yaw (rad, unwrapped, REP 103: CCW positive) integrated from gyro z samples.

    Trapezoidal integration of ``gyro_z - bias``. While :meth:`add` is told the robot is
    stationary, the bias is tracked by an exponential moving average with time constant
    ``bias_time_s`` (a standing Go2 has zero true yaw rate).

    Args:
        bias_time_s: time constant of the bias estimate, s (> 0).
        max_gap_s: a gap between samples longer than this is not integrated (sensor dropout).
    """

    def __init__(self, bias_time_s: float = 2.0, max_gap_s: float = 0.5) -> None:
        if bias_time_s <= 0:
            raise ValueError(f"bias_time_s must be > 0, got {bias_time_s}")
        self.bias_time_s = float(bias_time_s)
        self.max_gap_s = float(max_gap_s)
        self.yaw = 0.0
        self.bias = 0.0
        self.t: float | None = None
        self._rate = 0.0
        self._still_s = 0.0
        self._last_abs: float | None = None

    def add(self, t: float, gyro_z: float, stationary: bool = False) -> float:
        """Integrate one sample.

        Args:
            t: sample time, s (monotonic within the stream; a sample older than the last is ignored,
                one older by more than ``max_gap_s`` restarts the time base: the stream was reset).
            gyro_z: angular rate about z, rad/s (sensor_msgs/Imu angular_velocity.z).
            stationary: the robot is known to stand still (no command, no odometry motion).

        Returns:
            The integrated, bias-corrected yaw, rad. A sample with a non-finite ``t`` or ``gyro_z``
            is dropped (the yaw, bias and time base stay as they were).
        """
        if not (math.isfinite(t) and math.isfinite(gyro_z)):
            return self.yaw
        if self.t is not None and t <= self.t:
            if self.t - t <= self.max_gap_s:
                return self.yaw  # late or repeated sample
            self.t = None  # the stream went back in time (sim reset, bag loop): restart the time base
        if stationary and self.t is not None:
            dt = t - self.t
            self._still_s += dt
            # Fast start (plain mean) until one time constant of stillness, then EMA.
            k = min(1.0, dt / min(self._still_s, self.bias_time_s)) if self._still_s > 0 else 1.0
            self.bias += k * (gyro_z - self.bias)
        elif not stationary:
            self._still_s = min(self._still_s, self.bias_time_s)
        rate = gyro_z - self.bias
        if self.t is not None and (t - self.t) <= self.max_gap_s:
            self.yaw += 0.5 * (rate + self._rate) * (t - self.t)
        self.t = t
        self._rate = rate
        return self.yaw

    def add_orientation(self, t: float, yaw_abs: float, stationary: bool = False) -> float:
        """Track the yaw of the IMU's own orientation estimate (sensor_msgs/Imu orientation).

        The increment between two messages is exact however many messages were dropped in
        between (unlike integrating the rate). A bias (drift rate) is learnt while stationary,
        as in :meth:`add`, and removed.

        Args:
            t: sample time, s; older samples are ignored (older by more than ``max_gap_s``: the stream
                was reset, the time base restarts there).
            yaw_abs: orientation yaw, rad (any wrap).
            stationary: the robot is known to stand still.

        Returns:
            The unwrapped, drift-corrected yaw, rad. A sample with a non-finite ``t`` or ``yaw_abs``
            is dropped (the yaw, bias and time base stay as they were).
        """
        if not (math.isfinite(t) and math.isfinite(yaw_abs)):
            return self.yaw
        if self.t is not None and t <= self.t:
            if self.t - t <= self.max_gap_s:
                return self.yaw  # late or repeated sample
            self.t = None  # the stream went back in time (sim reset, bag loop): restart the time base
        if self._last_abs is None or self.t is None:
            self._last_abs, self.t = yaw_abs, t
            return self.yaw
        dt = t - self.t
        rate = wrap_angle(yaw_abs - self._last_abs) / dt
        if stationary:
            self._still_s += dt
            k = min(1.0, dt / min(self._still_s, self.bias_time_s))
            self.bias += k * (rate - self.bias)
        else:
            self._still_s = min(self._still_s, self.bias_time_s)
        self.yaw += (rate - self.bias) * dt
        self._rate = rate - self.bias
        self._last_abs, self.t = yaw_abs, t
        return self.yaw

    @property
    def rate(self) -> float:
        """Last bias-corrected yaw rate, rad/s."""
        return self._rate


def slip_check(dyaw_imu: float, dyaw_odom: float, threshold_rad: float) -> float | None:
    """Return the gyro-vs-odometry yaw disagreement (rad) when it exceeds ``threshold_rad``, else None.

    Args:
        dyaw_imu: yaw change since the action started, integrated from the gyro, rad.
        dyaw_odom: yaw change since the action started, from odometry, rad.
        threshold_rad: allowed disagreement, rad (> 0).
    """
    d = wrap_angle(dyaw_imu - dyaw_odom)
    return d if abs(d) > threshold_rad else None


def jolt_check(accel_x: float, accel_y: float, threshold: float) -> float | None:
    """Return the horizontal acceleration magnitude (m/s^2) when it exceeds ``threshold`` (> 0), else None.

    ``accel_x``/``accel_y`` are sensor_msgs/Imu linear_acceleration in the IMU frame, m/s^2
    (gravity lies along z for a level robot, so it does not enter). ``threshold <= 0`` disables.
    """
    if threshold <= 0:
        return None
    a = math.hypot(accel_x, accel_y)
    return a if a > threshold else None


class StallDetector:
    """Commanded motion without progress.

    Feed one sample per control tick; :meth:`update` returns True when, during the whole last
    ``window_s``, motion was commanded but the progress coordinate moved less than ``min_progress``.

    Args:
        window_s: observation window, s.
        min_progress: progress expected in the window (m for distance, rad for yaw).
    """

    def __init__(self, window_s: float, min_progress: float) -> None:
        self.window_s = float(window_s)
        self.min_progress = float(min_progress)
        self._hist: deque[tuple[float, float]] = deque()

    def reset(self) -> None:
        """Forget the history (call when the command stops or the action changes)."""
        self._hist.clear()

    def update(self, t: float, progress: float, commanded: bool) -> bool:
        """Add a sample.

        Args:
            t: time, s.
            progress: progress coordinate (distance along the path, m, or yaw, rad).
            commanded: a non-zero command was in force at ``t``.

        Returns:
            True when the robot is stalled.
        """
        if not commanded:
            self._hist.clear()
            return False
        self._hist.append((t, progress))
        while len(self._hist) > 1 and t - self._hist[1][0] >= self.window_s:
            self._hist.popleft()
        t0, p0 = self._hist[0]
        return (t - t0) >= self.window_s and abs(progress - p0) < self.min_progress


class FreezeDetector:
    """A sensor stream that still publishes but is frozen (a wedged driver re-sending its last sample).

    Feed every message of one stream with :meth:`update`. Frozen = the same header stamp, or a
    bit-identical sample, in ``n`` consecutive messages while the robot is commanded to move (a
    standing robot's constant odometry is not a freeze: counts reset whenever motion is not commanded).

    Args:
        name: stream name for the message (``odom``, ``imu``).
        n: consecutive messages; 0 disables the check.
    """

    def __init__(self, name: str, n: int) -> None:
        self.name, self.n = name, int(n)
        self._last: tuple[object, tuple[float, ...]] | None = None
        self._same_stamp = self._same_sample = 1

    def reset(self) -> None:
        """Forget the history (motion not commanded)."""
        self._last = None
        self._same_stamp = self._same_sample = 1

    def update(self, stamp: object, sample: tuple[float, ...], commanded: bool) -> str | None:
        """Add one message.

        Args:
            stamp: its header stamp (any comparable value, e.g. (sec, nanosec)).
            sample: its values (compared bit for bit).
            commanded: the robot is commanded to move (and has been for longer than the actuation latency).

        Returns:
            A one-line reason when the stream is frozen, else None.
        """
        if self.n <= 0 or not commanded:
            self.reset()
            return None
        if self._last is not None:
            stamp0, sample0 = self._last
            self._same_stamp = self._same_stamp + 1 if stamp == stamp0 else 1
            self._same_sample = self._same_sample + 1 if sample == sample0 else 1
        self._last = (stamp, sample)
        if self._same_stamp >= self.n:
            return f"{self.name} frozen: {self._same_stamp} messages with the same stamp while commanded to move"
        if self._same_sample >= self.n:
            return f"{self.name} frozen: {self._same_sample} bit-identical samples while commanded to move"
        return None
