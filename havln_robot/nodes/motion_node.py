"""motion_node: HA-VLN action literals -> closed-loop ``cmd_vel``, with collision checks and revert.

Thin ROS shell over :class:`havln_robot.motion.executor.Executor`.

* subscribes ``havln/action`` (std_msgs/String literal), ``odom`` (nav_msgs/Odometry),
  ``imu`` (sensor_msgs/Imu: gyro z integrated for yaw, linear acceleration for bumps),
  ``camera/aligned_depth_to_color/image_raw`` (16UC1 mm or 32FC1 m) + its ``camera_info``,
  ``havln/people`` (geometry_msgs/PoseArray in base_link);
* publishes ``cmd_vel`` (geometry_msgs/Twist) at ``control_rate_hz`` while an action runs (and
  for ``idle_zero_s`` after; continuously zero after STOP), ``havln/action_result`` and
  ``havln/collision`` (diagnostic_msgs/DiagnosticStatus records, keys in :mod:`havln_robot.topics`).

One action at a time: an action arriving while busy is answered ``rejected``; STOP aborts the
running action and publishes zero velocity from inside the subscription callback (no wait for
the next control tick).
"""

from __future__ import annotations

import math
import sys
import threading
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import Point, Pose, PoseArray, Quaternion, Twist
from nav_msgs.msg import Odometry
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from sensor_msgs.msg import CameraInfo, Image, Imu, PointCloud2
from std_msgs.msg import String

from havln_robot import actions as A
from havln_robot.geometry import quat_to_yaw
from havln_robot.motion.checks import FreezeDetector, GyroYaw
from havln_robot.motion.executor import ActionResult, CollisionRecord, Executor, MotionConfig, Tick
from havln_robot.motion.imu_frame import ImuFrameError, imu_axes
from havln_robot.motion.obstacles import ObstacleTracker, Pose2D, TrackerConfig
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.motion.safety import CameraMount, Intrinsics, Obstacles, Person, load_person_detector, rebase_points
from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.params import ConfigError
from havln_robot.quoting import quote
from havln_robot.records import Outcome
from havln_robot.ros.codec import decode_pose_array_cdr, decode_tracks, encode_collision, encode_result, image_array
from havln_robot.ros.qos import sensor_qos
from havln_robot.text import outcome_label, terminal_safe
from havln_robot.topics import BASE_FRAME


#: The shipped person detectors, by the names ``person_detector`` accepts (the module path is the
#: old spelling of the same detector, still accepted).
def _depth_people_tracker() -> Any:
    """people_node's depth tracker in-process (imported only when chosen)."""
    from havln_robot.perception.people import DepthPeopleTracker

    return DepthPeopleTracker()


BUILTIN_PERSON_DETECTORS = {
    "depth_people_tracker": _depth_people_tracker,
    "havln_robot.perception.people:DepthPeopleTracker": _depth_people_tracker,
}

#: An action literal longer than this is no action (the longest is 12 characters): it is cut to
#: this many characters (plus its length) before it is echoed in the result and the log.
ACTION_ECHO_CHARS = 64
#: Rejected / unknown actions are logged at most once per this many seconds (a flood of junk on
#: havln/action must not flood the log); the next logged one counts those left out.
REJECT_LOG_PERIOD_S = 1.0
#: The control loop counts as overloaded when a tick comes this many periods late; while an action
#: runs and no tick came for longer than ``sensor_timeout_s`` the action is aborted as overloaded.
OVERLOAD_PERIODS = 5.0


def bounded_literal(text: str) -> str:
    """An action literal as echoed in results and logs: at most :data:`ACTION_ECHO_CHARS` characters
    of it, then ``… (N chars)`` (a 2 MB string on havln/action is not copied into a result or a log line)."""
    if len(text) <= ACTION_ECHO_CHARS:
        return text
    return f"{text[:ACTION_ECHO_CHARS]}… ({len(text)} chars)"


class MotionNode(HavlnNode):
    """The motion node. See the module docstring for its interface.

    Raises:
        ConfigError: a parameter has the wrong type or is out of range.
    """

    SPEC = MOTION_PARAMS

    def __init__(self, params: dict[str, Any] | None = None, node_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(params, node_name, **kwargs)
        p = self.params
        self.cfg = MotionConfig.from_params(p)
        self.motion = Executor(self.cfg)
        self.gyro = GyroYaw(p["gyro_bias_time_s"])
        self.mount = CameraMount(p["camera_x_m"], p["camera_y_m"], p["camera_z_m"], math.radians(p["camera_pitch_deg"]))
        self._odom: tuple[float, float, float] | None = None
        self._odom_t: float | None = None
        self._odom_speed = 0.0
        self._imu_t: float | None = None
        self._imu_stamped: bool | None = None
        self._accel: tuple[float, float] | None = None
        # issue 13: streams that publish but are frozen (checked per message, acted on at the next tick)
        self._freeze = {k: FreezeDetector(k, p["freeze_messages"]) for k in ("odom", "imu")}
        self._frozen: str | None = None
        self._depth: tuple[Image, float] | None = None
        self.tracker = ObstacleTracker(
            TrackerConfig.from_params(p),
            self.mount,
            on_frame=self._on_frame,
            warn=lambda s: self._warn_once("depth-enc", terminal_safe(f"{p['depth_topic']}: {s}; expected 16UC1 (mm) or 32FC1 (m)")),
        )
        self.detector = None
        self._color: Image | None = None
        self._detected: list[Person] = []
        if p["person_detector"]:
            try:
                self.detector = load_person_detector(p["person_detector"], BUILTIN_PERSON_DETECTORS)
            except ValueError as exc:
                msg = f"{self.get_name()}: {exc}"
                self.destroy_node()
                raise ConfigError(msg) from None
        self._k: Intrinsics | None = None
        # (people in the base_link of their capture, receipt time, odom pose at their header stamp or None)
        self._people: tuple[list[Person], float, Pose2D | None] = ([], -math.inf, None)
        self._tracks: tuple[list[Person], float, Pose2D | None] = ([], -math.inf, None)  # people_tracks_topic: ids + velocities
        self._detected_at: Pose2D | None = None
        self._zero_until = -math.inf
        self._warned: set[str] = set()
        # stream -> "field = value" of the last message dropped as not finite, while no finite one came since
        self._non_finite: dict[str, str] = {}
        # people source silence (require_people): receipt time of the last people / tracks message
        # (None = never; the node's start counts as heard for the first people_timeout_s)
        self._people_heard_t: float | None = None
        self._people_since = self._now()
        self._people_silent_logged = False
        self._last_ctl_t: float | None = None  # last control tick or action start (overload check)
        self._reject_log_t = -math.inf
        self._reject_skipped = 0

        # all callbacks serialised: the executor is not thread-safe; the lock also serialises
        # safe_stop(), which bringup calls from another thread while this node still spins
        self._lock = threading.RLock()
        group = MutuallyExclusiveCallbackGroup()
        self.cmd_pub = self.create_publisher(Twist, p["cmd_vel_topic"], 10)
        self.result_pub = self.create_publisher(DiagnosticStatus, p["action_result_topic"], 50)
        self.collision_pub = self.create_publisher(DiagnosticStatus, p["collision_topic"], 50)
        self.create_subscription(String, p["action_topic"], self._on_action, 10, callback_group=group)
        # sensors: best effort (receives from reliable and best-effort publishers, e.g. realsense-ros)
        self.create_subscription(Odometry, p["odom_topic"], self._on_odom, sensor_qos(10), callback_group=group)
        # short queue: under load a deep IMU backlog is worse (stale yaw) than dropped samples
        self.create_subscription(Imu, p["imu_topic"], self._on_imu, sensor_qos(10), callback_group=group)
        self.create_subscription(Image, p["depth_topic"], self._on_depth, sensor_qos(2), callback_group=group)
        self.create_subscription(CameraInfo, p["depth_info_topic"], self._on_info, sensor_qos(2), callback_group=group)
        # raw: decoded with numpy (a PoseArray of thousands costs rclpy's conversion 0.3 s a message)
        self.create_subscription(PoseArray, p["people_topic"], self._on_people_raw, sensor_qos(5), callback_group=group, raw=True)
        if p["people_tracks_topic"]:
            self.create_subscription(PointCloud2, p["people_tracks_topic"], self._on_tracks, sensor_qos(5), callback_group=group)
        if self.detector is not None:
            self.create_subscription(Image, p["color_topic"], self._on_color, sensor_qos(2), callback_group=group)
        self.create_timer(1.0 / p["control_rate_hz"], self._on_tick, callback_group=group)
        self.on_clock_jump_back(self._on_clock_reset)

    def _on_clock_reset(self, t: float, _jump_s: float) -> None:
        """Sim time went back: abort the action, zero cmd_vel, restart the yaw tracker and every stamp."""
        with self._lock:
            self._emit(self.motion.time_jumped_back(t), t)
            self.gyro = GyroYaw(self.params["gyro_bias_time_s"])
            self._imu_stamped = None
            self._odom_t = self._imu_t = None
            self._depth = None
            self.tracker.time_reset()
            self._people = ([], -math.inf, None)
            self._tracks = ([], -math.inf, None)
            self._people_heard_t, self._people_since = None, t
            self._last_ctl_t = None
            self._zero_until = t + self.params["idle_zero_s"]

    # ------------------------------------------------------------------ helpers
    def _publish_cmd(self, cmd: tuple[float, float]) -> None:
        tw = Twist()
        tw.linear.x, tw.angular.z = float(cmd[0]), float(cmd[1])
        self.cmd_pub.publish(tw)

    def _emit(self, tick: Tick, t: float) -> None:
        self._last_ctl_t = t
        self._publish_cmd(tick.cmd)
        if tick.results or tick.collisions:
            self._zero_until = t + self.params["idle_zero_s"]
        for c in tick.collisions:
            self._publish_collision(c)
        for r in tick.results:
            self._publish_result(r)

    def _publish_result(self, r: ActionResult) -> None:
        self.result_pub.publish(encode_result(r, hardware_id=self.get_name()))
        # the literal and the detail come from a topic: bounded and terminal-safe in the log
        name = r.action if A.is_motion(r.action) else quote(r.action, ACTION_ECHO_CHARS + 32)
        detail = f" - {r.detail[:400]}{'…' if len(r.detail) > 400 else ''}" if r.detail else ""
        text = terminal_safe(f"#{r.seq} {name}: {outcome_label(r.outcome, r.detail)} ({r.duration_s:.2f} s){detail}")
        if r.outcome == Outcome.OK:  # rclpy forbids two severities from one call site
            self.get_logger().info(text)
        elif r.outcome == Outcome.REJECTED:
            # a publisher flooding havln/action with junk: at most one line per REJECT_LOG_PERIOD_S
            t = self._now()
            if t - self._reject_log_t < REJECT_LOG_PERIOD_S:
                self._reject_skipped += 1
                return
            if self._reject_skipped:
                text += f" ({self._reject_skipped} more rejected actions not logged)"
            self._reject_log_t, self._reject_skipped = t, 0
            self.get_logger().warning(text)
        else:
            self.get_logger().warning(text)

    def _publish_collision(self, c: CollisionRecord) -> None:
        self.collision_pub.publish(encode_collision(c, hardware_id=self.get_name()))

    def _obstacles(self, t: float) -> Obstacles:
        """Obstacle points from the latest fresh depth image (and memory) and fresh people, in base_link."""
        p = self.params
        pitch = self.mount.pitch + (self.motion.pitch if p["virtual_pitch_tilts_depth"] else 0.0)
        pts = self.tracker.points(t, self._odom, pitch)
        people, pt, at = self._people
        tracks, tt, tat = self._tracks
        if t - tt <= p["people_timeout_s"]:  # tracked people carry ids and velocities (forecast): preferred
            people, pt, at = tracks, tt, tat
        people = self._here(people, at) if t - pt <= p["people_timeout_s"] else []
        if pts is not None:
            people += self._here(self._detected, self._detected_at)
        return Obstacles(points=pts, people=people)

    def _here(self, people: list[Person], at: Pose2D | None) -> list[Person]:
        """``people`` seen from odom pose ``at`` (their capture), moved into the current base_link
        (positions moved, velocities rotated; one numpy call for all of them)."""
        if at is None or self._odom is None or not people or at == self._odom:
            return list(people)
        a = np.array([(q.x, q.y, q.vx, q.vy) for q in people], dtype=np.float64)
        xy = rebase_points(a[:, :2], at, self._odom)
        da = at[2] - self._odom[2]
        c, s = math.cos(da), math.sin(da)
        vx, vy = c * a[:, 2] - s * a[:, 3], s * a[:, 2] + c * a[:, 3]
        return [
            Person(float(x), float(y), q.human_id, float(u), float(v))
            for q, x, y, u, v in zip(people, xy[:, 0].tolist(), xy[:, 1].tolist(), vx.tolist(), vy.tolist(), strict=True)
        ]

    def _nearest_rows(self, xy: np.ndarray, topic: str) -> np.ndarray | None:
        """Indices of the ``max_people`` nearest of the (N, >=2) positions ``xy``, nearest first; None
        when all are kept. Warns once per topic when some are dropped: a message of thousands of
        poses would otherwise cost every check at every control tick."""
        n = self.params["max_people"]
        if len(xy) <= n:
            return None
        self._warn_once(
            f"max-people-{topic}",
            terminal_safe(f"{topic}: {len(xy)} people in one message; only the nearest {n} used (max_people)"),
        )
        d = np.nan_to_num(xy[:, 0] * xy[:, 0] + xy[:, 1] * xy[:, 1], nan=np.inf)
        keep = np.argpartition(d, n - 1)[:n]
        return keep[np.argsort(d[keep], kind="stable")]

    def _nearest(self, people: list[Person], topic: str) -> list[Person]:
        """At most ``max_people`` of ``people``, the nearest (see :meth:`_nearest_rows`)."""
        if len(people) <= self.params["max_people"]:
            return people
        keep = self._nearest_rows(np.array([(q.x, q.y) for q in people], dtype=np.float64), topic)
        return people if keep is None else [people[i] for i in keep.tolist()]

    def _on_people_raw(self, raw: bytes) -> None:
        """people_topic as serialized bytes (a ``raw=True`` subscription): decoded with numpy and cut to
        the nearest ``max_people`` before any Python object is made per pose -- rclpy's own
        conversion of a 20,000-pose PoseArray takes 0.3 s, at 10 Hz more CPU than the control loop has."""
        topic = self.params["people_topic"]
        try:
            sec, nanosec, frame_id, poses = decode_pose_array_cdr(raw)
        except ValueError as exc:
            self._warn_once("people-cdr", terminal_safe(f"{topic}: {exc}; message ignored"))
            return
        keep = self._nearest_rows(poses, topic)
        if keep is not None:
            poses = poses[keep]
        msg = PoseArray()
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        msg.header.frame_id = frame_id
        msg.poses = [
            Pose(position=Point(x=r[0], y=r[1], z=r[2]), orientation=Quaternion(x=r[3], y=r[4], z=r[5], w=r[6])) for r in poses.tolist()
        ]
        self._on_people(msg)

    def _people_silence(self, t: float) -> float | None:
        """How long (s) the people source has been silent when longer than ``people_timeout_s``, else None."""
        heard = self._people_heard_t if self._people_heard_t is not None else self._people_since
        silent = t - heard
        return silent if silent > self.params["people_timeout_s"] else None

    def _people_topics(self) -> str:
        p = self.params
        return " / ".join(x for x in (p["people_topic"], p["people_tracks_topic"]) if x)

    def _people_reason(self, t: float) -> str | None:
        """Why motion must not run for lack of people (require_people), or None."""
        if not self.params["require_people"]:
            return None
        if self._people_heard_t is None:
            return f"no people received yet on {self._people_topics()}: personal-space checks off (require_people)"
        silent = self._people_silence(t)
        if silent is None:
            return None
        return (
            f"people source {self._people_topics()} silent for {silent:.1f} s (> people_timeout_s "
            f"{self.params['people_timeout_s']:g}): personal-space checks off (require_people)"
        )

    def _watch_people(self, t: float) -> None:
        """One ERROR when the people source goes silent (personal space off), a note when it is back."""
        silent = self._people_silence(t)
        if silent is not None and not self._people_silent_logged:
            if self._people_heard_t is None and not self.params["require_people"]:
                return  # never configured / never heard and not required: nothing was on
            self._people_silent_logged = True
            self.get_logger().error(
                f"people source silent for {silent:.1f} s ({self._people_topics()}): personal-space checks off"
                + ("; motion refused until it is back (require_people)" if self.params["require_people"] else "")
            )
        elif silent is None and self._people_silent_logged:
            self._people_silent_logged = False
            self.get_logger().info(f"people source back ({self._people_topics()}): personal-space checks on")

    def _depth_problem(self, t: float) -> str | None:
        """Why the newest depth image cannot be used (naming the topic), or None (fine, or none received)."""
        kind = self.tracker.frame_problem(t)
        if kind is None:
            return None
        return f"{self.params['depth_topic']}: {kind[1]}"

    def _captured_at(self, stamp: Any, now: float, name: str) -> Pose2D | None:
        """The odom pose at a message's header stamp (None when the odometry kept does not reach back to it)."""
        return self.tracker.poses.at(self._stamp_time(stamp, now, name))

    def _on_frame(self, depth_m: np.ndarray, mount: CameraMount) -> None:
        self._detected = self._detect(depth_m, mount)
        self._detected_at = self.tracker.frame_pose

    def _detect(self, depth_m: np.ndarray, mount: CameraMount) -> list[Person]:
        """People from the in-process PersonDetector on the latest colour frame (empty without one)."""
        if self.detector is None or self._color is None or self._k is None:
            return []
        try:
            rgb = image_array(self._color)
            return list(self.detector.detect(rgb, depth_m, self._k, mount))
        except Exception as exc:  # noqa: BLE001 - a faulty plug-in must not stop the robot's checks
            self._warn_once(
                "detector",
                terminal_safe(
                    f"person_detector {self.params['person_detector']} failed: {exc}; people from {self.params['people_topic']} only"
                ),
            )
            return []

    # ------------------------------------------------------------------ callbacks
    def _on_action(self, msg: String) -> None:
        t = self._now()
        action = bounded_literal(msg.data.strip())
        imu_yaw = self.gyro.yaw if self._imu_t is not None else None
        with self._lock:
            if action == "STOP":
                tick = self.motion.stop(t, "preempted by STOP", self._odom, imu_yaw)
            else:
                was_busy = self.motion.busy
                tick = self.motion.start(action, t, self._odom, imu_yaw, self._obstacles(t))
                people = self._people_reason(t)
                if not was_busy and self.motion.busy and people is not None:
                    self.get_logger().error(f"{terminal_safe(action)} refused: {people}")
                    tick = self.motion.abort(t, f"{people}; not started")
                depth = self._depth_problem(t) if self.params["require_depth"] else None
                for r in tick.results:
                    # the executor's require_depth refusal, worded with the reason the depth is unusable
                    if depth is not None and r.action == action and r.outcome == "aborted" and A.is_motion(action):
                        if A.MOTION_SPECS[action].kind is A.ActionKind.TRANSLATE and depth not in r.detail:
                            r.detail = f"{r.detail} ({depth})"
            self._emit(tick, t)

    def _finite(self, stream: str, topic: str, fields: tuple[tuple[str, float], ...]) -> bool:
        """True when every ``(field, value)`` is finite; else the message is dropped: a warning once per
        topic and field, and ``stream`` is marked as sending only non-finite values until a finite one
        comes (:meth:`_on_tick` then stops the action once the stream's last accepted sample is older
        than ``sensor_timeout_s``)."""
        bad = self._non_finite_field(topic, fields, "message dropped (sensor fault?)")
        if bad is not None:
            self._non_finite[stream] = bad
            return False
        self._non_finite.pop(stream, None)
        return True

    def _on_odom(self, msg: Odometry) -> None:
        t = self._now()
        pp, q = msg.pose.pose.position, msg.pose.pose.orientation
        tw = msg.twist.twist
        fields = (
            ("pose.position.x", pp.x),
            ("pose.position.y", pp.y),
            ("pose.orientation.x", q.x),
            ("pose.orientation.y", q.y),
            ("pose.orientation.z", q.z),
            ("pose.orientation.w", q.w),
            ("twist.linear.x", tw.linear.x),
            ("twist.linear.y", tw.linear.y),
            ("twist.angular.z", tw.angular.z),
        )
        if not self._finite("odom", self.params["odom_topic"], fields):
            return
        self._odom = (float(pp.x), float(pp.y), quat_to_yaw(q.x, q.y, q.z, q.w))
        self._odom_speed = abs(tw.linear.x) + abs(tw.linear.y) + abs(tw.angular.z)
        self._odom_t = self._stamp_time(msg.header.stamp, t, "odom")
        self.tracker.add_odom(self._odom_t, self._odom)
        self._check_freeze("odom", msg.header.stamp, (pp.x, pp.y, pp.z, q.x, q.y, q.z, q.w, tw.linear.x, tw.linear.y, tw.angular.z), t)

    def _check_freeze(self, name: str, stamp: Any, sample: tuple[float, ...], t: float) -> None:
        commanded = self.motion.moving_commanded(t)
        if name == "imu" and commanded and self.motion.translating:
            # a noiseless (simulated) IMU on a straight run repeats its sample: judge IMU samples on
            # turns only; its stamps are still checked
            sample = (float(t),)
        why = self._freeze[name].update((stamp.sec, stamp.nanosec), sample, commanded)
        if why is not None and self._frozen is None:
            self._frozen = why

    def _on_imu(self, msg: Imu) -> None:
        t = self._now()
        try:
            axes = imu_axes(msg.header.frame_id, self.params["imu_mount"])
        except ImuFrameError as exc:
            self._warn_once("imu-frame", f"{self.params['imu_topic']}: {exc}; IMU not used")
            return
        st = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        # integrate on the sensor's own stamps (consistent within the stream, whatever the clock)
        if self._imu_stamped is None:
            self._imu_stamped = st > 0
        sample_t = st if self._imu_stamped else t
        still = self.motion.stationary(t) and self._odom_speed < 0.02  # odometry twist noise of a standing robot
        q = msg.orientation
        has_orientation = msg.orientation_covariance[0] != -1.0 and (q.x, q.y, q.z, q.w) != (0.0, 0.0, 0.0, 0.0)
        w, a = msg.angular_velocity, msg.linear_acceleration
        use_orientation = self.params["imu_yaw_source"] == "orientation" and has_orientation and axes.orientation_usable
        fields = (
            (("orientation.x", q.x), ("orientation.y", q.y), ("orientation.z", q.z), ("orientation.w", q.w))
            if use_orientation
            else (("angular_velocity.x", w.x), ("angular_velocity.y", w.y), ("angular_velocity.z", w.z))
        ) + (("linear_acceleration.x", a.x), ("linear_acceleration.y", a.y), ("linear_acceleration.z", a.z))
        if not self._finite("imu", self.params["imu_topic"], fields):
            return
        if use_orientation:
            self.gyro.add_orientation(sample_t, quat_to_yaw(q.x, q.y, q.z, q.w), stationary=still)
        else:
            self.gyro.add(sample_t, axes.yaw_rate(float(w.x), float(w.y), float(w.z)), stationary=still)
        self._accel = axes.horizontal_accel(float(a.x), float(a.y), float(a.z))
        self._imu_t = self._stamp_time(msg.header.stamp, t, "imu")
        w, o = msg.angular_velocity, msg.orientation
        self._check_freeze("imu", msg.header.stamp, (o.x, o.y, o.z, o.w, w.x, w.y, w.z, a.x, a.y, a.z), t)

    def _on_color(self, msg: Image) -> None:
        self._color = msg

    def _on_depth(self, msg: Image) -> None:
        self._depth = (msg, self._now())
        # placed in odom where the robot was at the capture stamp (not at receipt: mid-turn that is degrees off)
        stamp = self._stamp_time(msg.header.stamp, self._depth[1], "depth")

        def load(msg: Image = msg) -> np.ndarray:
            return image_array(msg).astype(np.float32) * (0.001 if msg.encoding == "16UC1" else 1.0)

        st = msg.header.stamp
        self.tracker.add_depth(self._depth[1], load, msg.width, msg.height, stamp=stamp, raw_stamp=(st.sec, st.nanosec))
        problem = self.tracker.frame_problem(self._depth[1])
        if problem is not None and problem[0] != "no_info":  # not used; why, once per kind (_on_info warns of its own)
            extra = {
                "camera_info": f" (camera_info on {self.params['depth_info_topic']})",
                "old": ": camera lagging, or its clock behind this node's",
            }.get(problem[0], "")
            self._warn_once(f"depth-{problem[0]}", terminal_safe(f"{self.params['depth_topic']}: {problem[1]}{extra}; depth not used"))

    def _on_info(self, msg: CameraInfo) -> None:
        try:
            self._k = self.tracker.intrinsics = Intrinsics.from_k(msg.k, msg.width, msg.height)
        except ValueError as exc:
            # never keep earlier intrinsics: depth is unusable while its camera_info is (require_depth: refused)
            self._k = self.tracker.intrinsics = None
            self._warn_once("info", terminal_safe(f"{self.params['depth_info_topic']}: {exc}; depth not used"))

    def _on_people(self, msg: PoseArray) -> None:
        if msg.header.frame_id and msg.header.frame_id != BASE_FRAME:
            self._warn_once(
                "people-frame",
                terminal_safe(f"{self.params['people_topic']}: frame {quote(msg.header.frame_id)} ignored; people must be in {BASE_FRAME}"),
            )
            return
        # PoseArray carries no ids (sim_node sorts people nearest first), so human_id stays unknown.
        fields = tuple((f"poses[{i}].position.{k}", getattr(ps.position, k)) for i, ps in enumerate(msg.poses) for k in "xy")
        if not self._finite("people", self.params["people_topic"], fields):
            return  # the people of the last finite message stay until people_timeout_s
        people = [Person(float(ps.position.x), float(ps.position.y), None) for ps in msg.poses]
        t = self._now()
        self._people_heard_t = t
        self._people = (self._nearest(people, self.params["people_topic"]), t, self._captured_at(msg.header.stamp, t, "people"))

    def _on_tracks(self, msg: PointCloud2) -> None:
        if msg.header.frame_id and msg.header.frame_id != BASE_FRAME:
            self._warn_once(
                "tracks-frame",
                terminal_safe(f"{self.params['people_tracks_topic']}: frame {quote(msg.header.frame_id)} ignored; must be {BASE_FRAME}"),
            )
            return
        try:
            a = decode_tracks(msg)
        except ValueError as exc:
            self._warn_once("tracks", terminal_safe(f"{self.params['people_tracks_topic']}: {exc}"))
            return
        fields = tuple((f"track {int(r['id'])} {k}", float(r[k])) for r in a for k in ("x", "y", "vx", "vy"))
        if not self._finite("tracks", self.params["people_tracks_topic"], fields):
            return  # the tracks of the last finite message stay until people_timeout_s
        people = [Person(float(r["x"]), float(r["y"]), int(r["id"]), vx=float(r["vx"]), vy=float(r["vy"])) for r in a]
        t = self._now()
        self._people_heard_t = t
        self._tracks = (self._nearest(people, self.params["people_tracks_topic"]), t, self._captured_at(msg.header.stamp, t, "tracks"))

    def _on_tick(self) -> None:
        t = self._now()
        ex = self.motion
        with self._lock:
            frozen, self._frozen = self._frozen, None
            frozen = frozen or self._non_finite_silence(t)
            gap = t - self._last_ctl_t if self._last_ctl_t is not None else 0.0
            self._last_ctl_t = t
            self._watch_people(t)
            people = self._people_reason(t) if ex.busy else None
            # as the executor's own stale-depth check: a forward step still driving to its goal
            # (not settling, braking or reverting: stopping those is what they do already)
            depth = self._depth_problem(t) if ex.translating and ex.phase == "moving" and self.params["require_depth"] else None
            if ex.busy and gap > self.params["sensor_timeout_s"]:
                why = (
                    f"control loop overloaded: {gap:.2f} s since the previous control tick (period "
                    f"{1.0 / self.params['control_rate_hz']:.3f} s; > sensor_timeout_s {self.params['sensor_timeout_s']:g}); robot stopped"
                )
                self.get_logger().error(why)
                self._emit(ex.abort(t, why), t)
            elif ex.busy and frozen is not None:
                self.get_logger().error(f"{frozen}; robot stopped")
                self._emit(ex.abort(t, f"{frozen}; robot stopped"), t)
            elif people is not None:
                self.get_logger().error(f"{people}; robot stopped")
                self._emit(ex.abort(t, f"{people}; robot stopped"), t)
            elif depth is not None:
                self.get_logger().error(terminal_safe(f"{depth} (require_depth); robot stopped"))
                self._emit(ex.abort(t, f"{depth} (require_depth); robot stopped"), t)
            elif ex.busy:
                imu_yaw = self.gyro.yaw if self._imu_t is not None else None
                tick = ex.update(t, self._odom, imu_yaw, self._obstacles(t), self._accel, self._odom_t, self._imu_t)
                if gap > OVERLOAD_PERIODS / self.params["control_rate_hz"]:
                    for r in tick.results:  # e.g. "odom silent": the loop starved the callbacks, not the sensor
                        r.detail += f" (control loop overloaded: {gap:.2f} s since the previous control tick)"
                self._emit(tick, t)
            elif ex.phase == "holding" or t < self._zero_until:
                self._publish_cmd((0.0, 0.0))

    def _non_finite_silence(self, t: float) -> str | None:
        """Why odometry / IMU count as silent (only non-finite messages for longer than
        ``sensor_timeout_s`` since the last accepted one), else None."""
        timeout = self.cfg.sensor_timeout_s
        for stream, st, topic in (("odom", self._odom_t, "odom_topic"), ("imu", self._imu_t, "imu_topic")):
            bad = self._non_finite.get(stream)
            if bad is not None and st is not None and t - st > timeout:
                return f"{self.params[topic]} silent for {t - st:.2f} s (> sensor_timeout_s {timeout:g}): only non-finite messages ({bad})"
        return None

    def safe_stop(self) -> None:
        """Abort the running action (outcome aborted) and publish zero cmd_vel. Never raises."""
        try:
            with self._lock:
                t = self._now()
                self._emit(self.motion.abort(t, "motion_node shutting down"), t)
        except Exception:  # noqa: BLE001 - must not raise during shutdown
            try:
                self._publish_cmd((0.0, 0.0))
            except Exception:  # noqa: BLE001
                pass


NODE_CLASS = MotionNode


def main() -> None:
    """Console entry point ``motion_node``."""
    sys.exit(run_node(MotionNode))
