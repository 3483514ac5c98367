"""motion_node's core below the ROS layer (pure Python): its streams, and every action start and
control tick through the safety layer.

motion_node converts messages into plain values and calls :class:`MotionCore`; the core keeps what
the streams said (odometry, gyro yaw, acceleration, depth memory, people), puts together the
executor's inputs (:meth:`MotionCore.obstacles`) and starts, ticks, stops and aborts actions through
:class:`~havln_robot.motion.guard.MotionGuard` (every rule that refuses or stops motion). It returns
the :class:`~havln_robot.motion.executor.Tick` to publish and the log lines; the node publishes them.
All times are seconds on the node's clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from havln_robot.motion.checks import GyroYaw
from havln_robot.motion.executor import Executor, MotionConfig, Tick
from havln_robot.motion.guard import GuardConfig, Guarded, MotionGuard
from havln_robot.motion.lidar import LidarMount
from havln_robot.motion.obstacles import ObstacleTracker, Pose2D, TrackerConfig
from havln_robot.motion.people_input import PeopleInput, rebase_people
from havln_robot.motion.safety import CameraMount, Intrinsics, Obstacles, Person

#: Odometry twist (|vx| + |vy| + |wz|) below which a standing robot counts as still (its noise).
STILL_TWIST = 0.02


class MotionCore:
    """The executor, the safety layer and the state of motion_node's input streams.

    Args:
        p: the validated ``motion_node`` parameters.
        t: now, s.
        warn_depth: called with a line when a depth image has an unusable encoding.
        detector: an in-process person detector (``detect(rgb, depth_m, k, mount)``), or None.
        detect_error: called with the exception when the detector fails (its people are then none).

    Attributes:
        motion: the :class:`Executor`. guard: the :class:`MotionGuard`.
        odom: the last odometry pose (x, y, yaw), odom frame; odom_t / imu_t: when the last accepted
        odometry / IMU sample arrived (None: none yet). gyro: the IMU yaw tracker. accel: horizontal
        IMU acceleration, m/s^2. tracker: the depth / LiDAR obstacle memory. people: people and
        tracks as received. k: the depth intrinsics (None: no usable camera_info). color: the last
        colour image (for the detector; any object its ``rgb`` loader takes).
    """

    def __init__(
        self,
        p: Mapping[str, Any],
        t: float,
        warn_depth: Callable[[str], None],
        detector: Any = None,
        detect_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self.p = p
        self.motion = Executor(MotionConfig.from_params(p))
        self.guard = MotionGuard(GuardConfig.from_params(p), t)
        self.mount = CameraMount(p["camera_x_m"], p["camera_y_m"], p["camera_z_m"], math.radians(p["camera_pitch_deg"]))
        self.gyro = GyroYaw(p["gyro_bias_time_s"])
        self.odom: Pose2D | None = None
        self.odom_t: float | None = None
        self.odom_speed = 0.0
        self.imu_t: float | None = None
        self.imu_stamped: bool | None = None
        self.accel: tuple[float, float] | None = None
        self.tracker = ObstacleTracker(TrackerConfig.from_params(p), self.mount, on_frame=self._on_frame, warn=warn_depth)
        if p["lidar_topic"]:
            self.tracker.lidar_mount = LidarMount.from_params(p)
        self.people = PeopleInput(p["max_people"], p["people_timeout_s"])
        self.detector = detector
        self.detect_error = detect_error
        self.color: Any = None
        self.color_rgb: Callable[[Any], np.ndarray] | None = None
        self.k: Intrinsics | None = None
        self._detected: list[Person] = []
        self._detected_at: Pose2D | None = None
        self.zero_until = -math.inf  # zero cmd_vel is published until then (idle_zero_s after a result)

    # ------------------------------------------------------------------ streams
    def on_odom(self, t: float, pose: Pose2D, speed: float, stamp_t: float, stamp: object, sample: tuple[float, ...]) -> None:
        """An accepted (finite) odometry message: ``pose`` at ``stamp_t``, received at ``t``."""
        self.odom, self.odom_speed, self.odom_t = pose, speed, stamp_t
        self.tracker.add_odom(stamp_t, pose)
        self.guard.sample("odom", stamp, sample, t, self.motion)

    def imu_sample_time(self, stamp_s: float, t: float) -> float:
        """The time an IMU sample is integrated at: its own stamp (consistent within the stream,
        whatever the clock) unless the stream's first stamp was 0 (then receipt time ``t``)."""
        if self.imu_stamped is None:
            self.imu_stamped = stamp_s > 0
        return stamp_s if self.imu_stamped else t

    def on_imu(
        self,
        t: float,
        sample_t: float,
        yaw: float | None,
        yaw_rate: float | None,
        accel: tuple[float, float],
        stamp_t: float,
        stamp: object,
        sample: tuple[float, ...],
    ) -> None:
        """An accepted (finite) IMU message: an absolute ``yaw`` (orientation) or a ``yaw_rate`` (gyro)."""
        still = self.motion.stationary(t) and self.odom_speed < STILL_TWIST
        if yaw is not None:
            self.gyro.add_orientation(sample_t, yaw, stationary=still)
        else:
            self.gyro.add(sample_t, float(yaw_rate or 0.0), stationary=still)
        self.accel = accel
        self.imu_t = stamp_t
        self.guard.sample("imu", stamp, sample, t, self.motion)

    def on_people(self, people: list[Person], t: float, at: Pose2D | None, tracks: bool) -> None:
        """People (``tracks``: people tracks, with ids and velocities) received at ``t``, captured at ``at``."""
        self.guard.heard_people(t)
        (self.people.set_tracks if tracks else self.people.set_people)(people, t, at)

    def captured_at(self, stamp_t: float) -> Pose2D | None:
        """The odom pose at a message's stamp (None when the odometry kept does not reach back to it)."""
        return self.tracker.poses.at(stamp_t)

    def _on_frame(self, depth_m: np.ndarray, mount: CameraMount) -> None:
        self._detected = self._detect(depth_m, mount)
        self._detected_at = self.tracker.frame_pose

    def _detect(self, depth_m: np.ndarray, mount: CameraMount) -> list[Person]:
        """People from the in-process detector on the latest colour frame (empty without one)."""
        if self.detector is None or self.color is None or self.k is None or self.color_rgb is None:
            return []
        try:
            return list(self.detector.detect(self.color_rgb(self.color), depth_m, self.k, mount))
        except Exception as exc:  # noqa: BLE001 - a faulty plug-in must not stop the robot's checks
            if self.detect_error is not None:
                self.detect_error(exc)
            return []

    def reset(self, t: float) -> Tick:
        """The clock jumped back to ``t``: abort the action, restart the yaw tracker and every stamp."""
        tick = self.motion.time_jumped_back(t)
        self.gyro = GyroYaw(self.p["gyro_bias_time_s"])
        self.imu_stamped = None
        self.odom_t = self.imu_t = None
        self.tracker.time_reset()
        self.people.reset()
        self.guard.reset(t)
        self.zero_until = t + self.p["idle_zero_s"]
        return tick

    # ------------------------------------------------------------------ the executor's inputs
    @property
    def imu_yaw(self) -> float | None:
        return self.gyro.yaw if self.imu_t is not None else None

    def obstacles(self, t: float) -> Obstacles:
        """Obstacle points from the latest fresh depth image (and memory) and fresh people, in base_link."""
        pitch = self.mount.pitch + (self.motion.pitch if self.p["virtual_pitch_tilts_depth"] else 0.0)
        pts = self.tracker.points(t, self.odom, pitch)
        people = self.people.fresh(t, self.odom)
        if pts is not None:
            people += rebase_people(self._detected, self._detected_at, self.odom)
        recalled = [] if people else self.people.recalled(t, self.odom, self.p["contact_recall_s"])
        floor = self.tracker.floor(self.odom) if pts is not None else None
        return Obstacles(points=pts, people=people, recalled=recalled, floor=floor)

    def sensor_problem(self, t: float) -> tuple[str, str] | None:
        """Why the obstacle sensors cannot be trusted at ``t``: the depth frame's problem, else the
        configured LiDAR's (:meth:`~havln_robot.motion.obstacles.ObstacleTracker.lidar_problem`)."""
        return self.tracker.frame_problem(t) or self.tracker.lidar_problem(t)

    # ------------------------------------------------------------------ acting
    def start(self, action: str, t: float) -> Guarded:
        """An action arrived: STOP stops at once; any other starts unless a rule refuses it."""
        if action == "STOP":
            return Guarded(self.motion.stop(t, "preempted by STOP", self.odom, self.imu_yaw))
        return self.guard.start(self.motion, action, t, self.odom, self.imu_yaw, self.obstacles(t), self.sensor_problem(t))

    def tick(self, t: float) -> tuple[Guarded, bool]:
        """One control tick; and whether zero cmd_vel is to be published when no action ran (holding
        after STOP, or within ``idle_zero_s`` of a result)."""
        g = self.guard.tick(
            self.motion,
            t,
            self.odom,
            self.imu_yaw,
            lambda: self.obstacles(t),
            self.accel,
            self.odom_t,
            self.imu_t,
            lambda: self.sensor_problem(t),
        )
        return g, g.tick is None and (self.motion.phase == "holding" or t < self.zero_until)

    def ended(self, tick: Tick, t: float) -> None:
        """A published tick: results or collisions keep zero cmd_vel going for ``idle_zero_s``."""
        if tick.results or tick.collisions:
            self.zero_until = t + self.p["idle_zero_s"]

    def source_conflict(self, t: float, topic: str, first: str, second: str) -> Tick:
        """A second publisher on a source bound to its first (another robot's odometry, IMU, depth,
        people tracks or LiDAR on this domain): the action is aborted and the robot stopped."""
        return self.motion.abort(t, f"second publisher {second} on {topic} (bound to {first}); robot stopped")

    def shutdown(self, t: float) -> Tick:
        """The node shuts down: the action is aborted."""
        return self.motion.abort(t, "motion_node shutting down")
