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

import math
import sys
import threading
import time
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
from havln_robot.motion.executor import ActionResult, CollisionRecord, Tick
from havln_robot.motion.guard import Guarded
from havln_robot.motion.imu_frame import ImuFrameError, imu_axes
from havln_robot.motion.inputs import MotionCore
from havln_robot.motion.obstacles import Pose2D
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.motion.people_input import nearest_rows
from havln_robot.motion.safety import Intrinsics, Person, load_person_detector
from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.params import ConfigError
from havln_robot.quoting import quote
from havln_robot.records import Outcome
from havln_robot.ros.codec import decode_cloud, decode_pose_array_cdr, decode_tracks, encode_collision, encode_result, image_array
from havln_robot.ros.lockstep import SteppedInputs
from havln_robot.ros.qos import sensor_qos
from havln_robot.sim.lockstep import ActionClaims, stamp_ns
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
        self._ls_period = int(round(1e9 / p["control_rate_hz"]))
        self._ls_ticked = -1  # control periods ticked (t // period of the last tick)
        self._ls_agent = None
        self._claims = ActionClaims()
        self._results = 0
        self._cmd_seq = 0
        self._cmd: tuple[float, float] = (0.0, 0.0)
        kinds = ("odom", "imu", "info", "color", "depth", "people", "tracks")
        handlers = (self._on_odom, self._on_imu, self._on_info, self._on_color, self._on_depth, self._on_people_raw, self._on_tracks)
        self._ls = SteppedInputs(
            self, "motion", self._lock, zip(kinds, handlers, strict=True), self._ls_needs, self._ls_tick, self._ls_claim, self._ls_after
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
        self._cmd_seq += 1
        self._cmd = (float(cmd[0]), float(cmd[1]))
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
        self._results = max(self._results, r.seq)  # lockstep: results are counted by their seq
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

    def _crowd(self, n: int, topic: str) -> None:
        """Warn once per topic when a message holds more than ``max_people`` people: only the nearest
        are kept (a message of thousands of poses would otherwise cost every check at every tick)."""
        if n > self.params["max_people"]:
            m = self.params["max_people"]
            self._warn_once(
                f"max-people-{topic}", terminal_safe(f"{topic}: {n} people in one message; only the nearest {m} used (max_people)")
            )

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
        if self._ls.hold("people", stamp_ns(sec, nanosec), raw):
            return
        self._crowd(len(poses), topic)
        keep = nearest_rows(poses, self.params["max_people"])
        if keep is not None:
            poses = poses[keep]
        msg = PoseArray()
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        msg.header.frame_id = frame_id
        msg.poses = [
            Pose(position=Point(x=r[0], y=r[1], z=r[2]), orientation=Quaternion(x=r[3], y=r[4], z=r[5], w=r[6])) for r in poses.tolist()
        ]
        self._on_people(msg)

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
        if self._ls.active and not self._ls.replaying:
            with self._lock:
                self._claims.arrived(msg, time.monotonic())
            self._ls.event()
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
        st = msg.header.stamp
        self.core.on_odom(
            t,
            (float(pp.x), float(pp.y), quat_to_yaw(q.x, q.y, q.z, q.w)),
            abs(tw.linear.x) + abs(tw.linear.y) + abs(tw.angular.z),
            self._stamp_time(st, t, "odom"),
            (st.sec, st.nanosec),
            (pp.x, pp.y, pp.z, q.x, q.y, q.z, q.w, tw.linear.x, tw.linear.y, tw.angular.z),
        )

    def _on_imu(self, msg: Imu) -> None:
        if self._ls.hold("imu", msg.header.stamp, msg):
            return
        t = self._now()
        try:
            axes = imu_axes(msg.header.frame_id, self.params["imu_mount"])
        except ImuFrameError as exc:
            self._warn_once("imu-frame", f"{self.params['imu_topic']}: {exc}; IMU not used")
            return
        sample_t = self.core.imu_sample_time(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9, t)
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
        st = msg.header.stamp
        self.core.on_imu(
            t,
            sample_t,
            quat_to_yaw(q.x, q.y, q.z, q.w) if use_orientation else None,
            None if use_orientation else axes.yaw_rate(float(w.x), float(w.y), float(w.z)),
            axes.horizontal_accel(float(a.x), float(a.y), float(a.z)),
            self._stamp_time(st, t, "imu"),
            (st.sec, st.nanosec),
            (q.x, q.y, q.z, q.w, w.x, w.y, w.z, a.x, a.y, a.z),
        )

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
        self._crowd(len(people), self.params["people_topic"])
        self.core.on_people(people, t, self._captured_at(msg.header.stamp, t, "people"), tracks=False)

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
            a = decode_tracks(msg)
        except ValueError as exc:
            self._warn_once("tracks", terminal_safe(f"{self.params['people_tracks_topic']}: {exc}"))
            return
        fields = tuple((f"track {int(r['id'])} {k}", float(r[k])) for r in a for k in ("x", "y", "vx", "vy"))
        if not self._finite("tracks", self.params["people_tracks_topic"], fields):
            return  # the tracks of the last finite message stay until people_timeout_s
        people = [Person(float(r["x"]), float(r["y"]), int(r["id"]), vx=float(r["vx"]), vy=float(r["vy"])) for r in a]
        t = self._now()
        self._crowd(len(people), self.params["people_tracks_topic"])
        self.core.on_people(people, t, self._captured_at(msg.header.stamp, t, "tracks"), tracks=True)

    # ------------------------------------------------------------------ lockstep
    def _ls_needs(self, t_ns: int, streams: frozenset[str]) -> list[str]:
        """The message kinds step ``t_ns`` waits for (people_node's output for it too)."""
        need = [k for k in ("odom", "imu") if k in streams]
        if "camera" in streams:
            need += ["depth", "info"] + (["color"] if self.core.detector is not None else [])
        if "people" in streams:
            need.append("people")
        people = self._ls.link.peer("people")
        if people is not None:
            if people.t_ns < t_ns:
                need.append("people_node")
            elif people.people_ns == t_ns:
                need += ["people"] + (["tracks"] if self.params["people_tracks_topic"] else [])
        return need

    def _ls_claim(self) -> None:
        self._ls_agent = self._ls.link.peer("agent")
        if self._ls_agent is not None:
            self._claims.agent_at(self._ls_agent.actions, self._ls_agent.t_ns)

    def _ls_tick(self, t_ns: int) -> None:
        if t_ns // self._ls_period > self._ls_ticked:  # the first step at or after each control period
            self._ls_ticked = t_ns // self._ls_period
            self._on_tick()

    def _ls_after(self) -> None:
        """Start the actions due (an agent's at the step it was sent at), then ack with the command."""
        done = self._ls.inbox.done
        while (due := self._claims.due(done, self._ls_agent is not None, time.monotonic())) is not None:
            self._ls.at(due[1], self._on_action, due[0])
        self._ls.link.ack(
            t_ns=done, wants=self.motion.busy, actions=self._claims.started, results=self._results, cmd_seq=self._cmd_seq, cmd=self._cmd
        )

    def _on_timer(self) -> None:
        if not self._ls.active:
            self._on_tick()
        elif self._claims.queue or self._ls.inbox.waiting:
            self._ls.event()  # waits bounded by wall time are re-checked here

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
