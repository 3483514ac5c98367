"""motion_node: HA-VLN action literals -> closed-loop ``cmd_vel``, with collision checks and revert.

Thin ROS shell over :class:`havln_robot.motion.inputs.MotionCore`: the executor under the safety
layer :class:`havln_robot.motion.guard.MotionGuard` (every rule that refuses or stops motion lives
there or in the executor; the batch simulator runs the same two) and the state of the streams.
This node converts messages, feeds the core, ticks it from a timer, publishes and logs.

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

Lockstep (the embedded simulator announces its steps on ``havln/sim_sync``; protocol in
:mod:`havln_robot.sim.lockstep`): incoming messages are held until every message announced for
their step is in (and people_node's output for it), then handled in a fixed order with the step's
time as this node's time, the control tick runs on every step at a multiple of 1/control_rate_hz,
an agent's action starts at the step the agent sent it at, and the step is acked with the
command. Without the simulator's steps (Go2, Gazebo) the timer ticks as always.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseArray, Twist
from nav_msgs.msg import Odometry
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from sensor_msgs.msg import CameraInfo, Image, Imu, PointCloud2
from std_msgs.msg import String

from havln_robot.motion.executor import ActionResult, CollisionRecord, Tick
from havln_robot.motion.guard import Guarded
from havln_robot.motion.imu_frame import ImuFrameError
from havln_robot.motion.inputs import MotionCore
from havln_robot.motion.obstacles import Pose2D
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.motion.people_input import nearest_rows
from havln_robot.motion.result_log import ACTION_ECHO_CHARS, ResultLog, bounded_literal  # noqa: F401  (re-exported)
from havln_robot.motion.safety import Intrinsics, load_person_detector
from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.params import ConfigError
from havln_robot.perception.people import BUILTIN_PERSON_DETECTORS
from havln_robot.quoting import quote
from havln_robot.ros.codec import decode_cloud, decode_pose_array_cdr, encode_collision, encode_result, image_array
from havln_robot.ros.lockstep import MotionSteps
from havln_robot.ros.motion_inputs import read_imu, read_odom, read_people, read_tracks
from havln_robot.ros.qos import sensor_qos
from havln_robot.sim.lockstep import stamp_ns
from havln_robot.text import terminal_safe
from havln_robot.topics import BASE_FRAME


class MotionNode(HavlnNode):
    """The motion node. See the module docstring for its interface.

    Raises:
        ConfigError: a parameter has the wrong type or is out of range.
    """

    SPEC = MOTION_PARAMS

    def __init__(self, params: dict[str, Any] | None = None, node_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(params, node_name, **kwargs)
        p = self.params
        detector = None
        if p["person_detector"]:
            try:
                detector = load_person_detector(p["person_detector"], BUILTIN_PERSON_DETECTORS)
            except ValueError as exc:
                msg = f"{self.get_name()}: {exc}"
                self.destroy_node()
                raise ConfigError(msg) from None
        # the executor, every rule that refuses or stops motion (motion/guard.py) and the streams' state
        self.core = MotionCore(
            p,
            self._now(),
            warn_depth=lambda s: self._warn_once("depth-enc", terminal_safe(f"{p['depth_topic']}: {s}; expected 16UC1 (mm) or 32FC1 (m)")),
            detector=detector,
            detect_error=self._detector_failed,
        )
        self.core.color_rgb = image_array
        self.motion, self.guard, self.tracker, self.people = self.core.motion, self.core.guard, self.core.tracker, self.core.people
        self._depth: tuple[Image, float] | None = None
        self._warned: set[str] = set()
        self._result_log = ResultLog()

        # all callbacks serialised: the executor is not thread-safe; the lock also serialises
        # safe_stop(), which bringup calls from another thread while this node still spins
        self._lock = threading.RLock()
        group = MutuallyExclusiveCallbackGroup()
        self.cmd_pub = self.create_publisher(Twist, p["cmd_vel_topic"], 10)
        self.result_pub = self.create_publisher(DiagnosticStatus, p["action_result_topic"], 50)
        self.collision_pub = self.create_publisher(DiagnosticStatus, p["collision_topic"], 50)
        self.create_subscription(String, p["action_topic"], self._on_action, 10, callback_group=group)
        # the robot's own sources, bound to their first publisher: another stack's on the same domain
        # (a second robot without a namespace, a second machine) is refused and stops the robot
        # (people_node's tracks and a LiDAR included: another robot's would replace ours)
        pinned = (p["odom_topic"], p["imu_topic"], p["depth_topic"], p["people_tracks_topic"], p["lidar_topic"])
        for name in (*filter(None, pinned), *(["/clock"] if self.get_parameter("use_sim_time").value else [])):
            self.pin_source(name, on_second=self._second_source)
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
        if detector is not None:
            self.create_subscription(Image, p["color_topic"], self._on_color, sensor_qos(2), callback_group=group)
        if p["lidar_topic"]:
            self.create_subscription(PointCloud2, p["lidar_topic"], self._on_cloud, sensor_qos(5), callback_group=group)
        self.create_timer(1.0 / p["control_rate_hz"], self._on_timer, callback_group=group)
        self.on_clock_jump_back(self._on_clock_reset)
        # lockstep with the embedded simulator (inactive until it announces a step): each step's
        # messages in this order, then the control tick when due; agent actions at the agent's step
        kinds = ("odom", "imu", "info", "color", "depth", "people", "tracks")
        handlers = (self._on_odom, self._on_imu, self._on_info, self._on_color, self._on_depth, self._on_people_raw, self._on_tracks)
        self._ls = MotionSteps(
            self,
            self._lock,
            zip(kinds, handlers, strict=True),
            p["control_rate_hz"],
            self._on_tick,
            self._on_action,
            lambda: self.motion.busy,
            color=detector is not None,
            tracks=bool(p["people_tracks_topic"]),
        )

    def _second_source(self, topic: str, first: str, second: str) -> None:
        """A second publisher on a bound source: the core stops the robot (its messages are refused)."""
        with self._lock:
            t = self._now()
            self._emit(self.core.source_conflict(t, topic, first, second), t)
            self._publish_cmd((0.0, 0.0))

    def _on_clock_reset(self, t: float, _jump_s: float) -> None:
        """Sim time went back: abort the action, zero cmd_vel, restart the yaw tracker and every stamp."""
        with self._lock:
            self._emit(self.core.reset(t), t)
            self._depth = None

    # ------------------------------------------------------------------ helpers
    def _now(self) -> float:
        """This node's time: the step being handled in lockstep, else the clock (sim time under use_sim_time)."""
        ls = self.__dict__.get("_ls")
        return ls.now if ls is not None and ls.now is not None else super()._now()

    def _publish_cmd(self, cmd: tuple[float, float]) -> None:
        self._ls.sent(cmd)
        tw = Twist()
        tw.linear.x, tw.angular.z = float(cmd[0]), float(cmd[1])
        self.cmd_pub.publish(tw)

    def _emit(self, tick: Tick, t: float) -> None:
        self._publish_cmd(tick.cmd)
        self.core.ended(tick, t)
        for c in tick.collisions:
            self._publish_collision(c)
        for r in tick.results:
            self._publish_result(r)

    def _publish_result(self, r: ActionResult) -> None:
        self.result_pub.publish(encode_result(r, hardware_id=self.get_name()))
        self._ls.results = max(self._ls.results, r.seq)
        line = self._result_log.line(r, self._now())
        if line is not None and line[0]:  # rclpy forbids two severities from one call site
            self.get_logger().info(line[1])
        elif line is not None:
            self.get_logger().warning(line[1])

    def _publish_collision(self, c: CollisionRecord) -> None:
        self.collision_pub.publish(encode_collision(c, hardware_id=self.get_name()))

    def _crowd(self, n: int, topic: str) -> None:
        """Warn once per topic when a message holds more than ``max_people`` people: only the nearest
        are kept (a message of thousands of poses would otherwise cost every check at every tick)."""
        if n > self.params["max_people"]:
            m = self.params["max_people"]
            self._warn_once(
                f"max-people-{topic}", terminal_safe(f"{topic}: {n} people in one message; only the nearest {m} used (max_people)")
            )

    def _on_people_raw(self, raw: bytes) -> None:
        """people_topic as serialized bytes (a ``raw=True`` subscription), decoded with numpy and cut to
        the nearest ``max_people`` without a Python object per pose: rclpy's own conversion of a
        20,000-pose PoseArray takes 0.3 s, at 10 Hz more CPU than the control loop has. PoseArray
        carries no ids (sim_node sorts people nearest first), so human_id stays unknown."""
        topic = self.params["people_topic"]
        try:
            sec, nanosec, frame_id, poses = decode_pose_array_cdr(raw)
        except ValueError as exc:
            self._warn_once("people-cdr", terminal_safe(f"{topic}: {exc}; message ignored"))
            return
        if self._ls.hold("people", stamp_ns(sec, nanosec), raw):
            return
        if frame_id and frame_id != BASE_FRAME:
            self._warn_once("people-frame", terminal_safe(f"{topic}: frame {quote(frame_id)} ignored; people must be in {BASE_FRAME}"))
            return
        self._crowd(len(poses), topic)
        keep = nearest_rows(poses, self.params["max_people"])
        fields, people = read_people(poses if keep is None else poses[keep])
        if self._finite("people", topic, fields):  # else the last finite message's people stay until people_timeout_s
            t = self._now()
            self.core.on_people(people, t, self._captured_at(Time(sec=sec, nanosec=nanosec), t, "people"), tracks=False)

    def _captured_at(self, stamp: Any, now: float, name: str) -> Pose2D | None:
        """The odom pose at a message's header stamp (None when the odometry kept does not reach back to it)."""
        return self.core.captured_at(self._stamp_time(stamp, now, name))

    def _detector_failed(self, exc: Exception) -> None:
        self._warn_once(
            "detector",
            terminal_safe(
                f"person_detector {self.params['person_detector']} failed: {exc}; people from {self.params['people_topic']} only"
            ),
        )

    # ------------------------------------------------------------------ callbacks
    def _log(self, g: Guarded) -> None:
        for line in g.errors:
            self.get_logger().error(terminal_safe(line))
        for line in g.infos:
            self.get_logger().info(terminal_safe(line))

    def _on_action(self, msg: String) -> None:
        if self._ls.action(msg):
            return
        t = self._now()
        with self._lock:
            g = self.core.start(bounded_literal(msg.data.strip()), t)
            self._log(g)
            self._emit(g.tick, t)

    def _finite(self, stream: str, topic: str, fields: tuple[tuple[str, float], ...]) -> bool:
        """True when every ``(field, value)`` is finite; else the message is dropped: a warning once per
        topic and field, and ``stream`` is marked as sending only non-finite values until a finite one
        comes (:meth:`_on_tick` then stops the action once the stream's last accepted sample is older
        than ``sensor_timeout_s``)."""
        bad = self._non_finite_field(topic, fields, "message dropped (sensor fault?)")
        self.guard.stream_value(stream, bad)
        return bad is None

    def _on_odom(self, msg: Odometry) -> None:
        if self._ls.hold("odom", msg.header.stamp, msg):
            return
        t, st, o = self._now(), msg.header.stamp, read_odom(msg)
        if self._finite("odom", self.params["odom_topic"], o.fields):
            self.core.on_odom(t, o.pose, o.speed, self._stamp_time(st, t, "odom"), (st.sec, st.nanosec), o.sample)

    def _on_imu(self, msg: Imu) -> None:
        if self._ls.hold("imu", msg.header.stamp, msg):
            return
        t, st = self._now(), msg.header.stamp
        try:
            m = read_imu(msg, self.params["imu_mount"], self.params["imu_yaw_source"])
        except ImuFrameError as exc:
            self._warn_once("imu-frame", f"{self.params['imu_topic']}: {exc}; IMU not used")
            return
        sample_t = self.core.imu_sample_time(st.sec + st.nanosec * 1e-9, t)
        if self._finite("imu", self.params["imu_topic"], m.fields):
            self.core.on_imu(t, sample_t, m.yaw, m.yaw_rate, m.accel, self._stamp_time(st, t, "imu"), (st.sec, st.nanosec), m.sample)

    def _on_color(self, msg: Image) -> None:
        if self._ls.hold("color", msg.header.stamp, msg):
            return
        self.core.color = msg

    def _on_depth(self, msg: Image) -> None:
        if self._ls.hold("depth", msg.header.stamp, msg):
            return
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

    def _on_cloud(self, msg: PointCloud2) -> None:
        """A LiDAR cloud (float32 x, y, z in its own frame): into the obstacle memory and the seen floor."""
        t = self._now()
        try:
            xyz = decode_cloud(msg)
        except ValueError as exc:
            self._warn_once("lidar", terminal_safe(f"{self.params['lidar_topic']}: {exc}; cloud not used"))
            return
        self.tracker.add_cloud(t, xyz, self._stamp_time(msg.header.stamp, t, "lidar"))

    def _on_info(self, msg: CameraInfo) -> None:
        if self._ls.hold("info", msg.header.stamp, msg):
            return
        try:
            self.core.k = self.tracker.intrinsics = Intrinsics.from_k(msg.k, msg.width, msg.height)
        except ValueError as exc:
            # never keep earlier intrinsics: depth is unusable while its camera_info is (require_depth: refused)
            self.core.k = self.tracker.intrinsics = None
            self._warn_once("info", terminal_safe(f"{self.params['depth_info_topic']}: {exc}; depth not used"))

    def _on_tracks(self, msg: PointCloud2) -> None:
        if self._ls.hold("tracks", msg.header.stamp, msg):
            return
        if msg.header.frame_id and msg.header.frame_id != BASE_FRAME:
            self._warn_once(
                "tracks-frame",
                terminal_safe(f"{self.params['people_tracks_topic']}: frame {quote(msg.header.frame_id)} ignored; must be {BASE_FRAME}"),
            )
            return
        try:
            fields, people = read_tracks(msg)
        except ValueError as exc:
            self._warn_once("tracks", terminal_safe(f"{self.params['people_tracks_topic']}: {exc}"))
            return
        if self._finite("tracks", self.params["people_tracks_topic"], fields):  # else the last finite tracks stay
            t = self._now()
            self._crowd(len(people), self.params["people_tracks_topic"])
            self.core.on_people(people, t, self._captured_at(msg.header.stamp, t, "tracks"), tracks=True)

    def _on_timer(self) -> None:
        if self._ls.timer():
            self._on_tick()

    def _on_tick(self) -> None:
        t = self._now()
        with self._lock:
            g, hold_zero = self.core.tick(t)
            self._log(g)
            if g.tick is not None:
                self._emit(g.tick, t)
            elif hold_zero:
                self._publish_cmd((0.0, 0.0))

    def safe_stop(self) -> None:
        """Abort the running action (outcome aborted) and publish zero cmd_vel. Never raises."""
        self._ls.close()
        try:
            with self._lock:
                t = self._now()
                self._emit(self.core.shutdown(t), t)
        except Exception:  # noqa: BLE001 - must not raise during shutdown
            try:
                self._publish_cmd((0.0, 0.0))
            except Exception:  # noqa: BLE001
                pass


NODE_CLASS = MotionNode


def main() -> None:
    """Console entry point ``motion_node``."""
    sys.exit(run_node(MotionNode))
