"""sim_node: the embedded simulator, seen by the rest of the stack exactly like the Go2 + RealSense.

Thin ROS shell over :class:`havln_robot.sim.session.SimSession` (world, people, noisy Go2 base)
and :class:`havln_robot.sim.render.Renderer` (MuJoCo RGB-D).

* subscribes ``cmd_vel`` (geometry_msgs/Twist: linear.x m/s, angular.z rad/s; angular.y = body
  pitch rate when ``camera_pitch_source`` is ``cmd_vel``) and ``havln/action_result`` (its
  ``pitch_deg`` = motion_node's virtual camera pitch, when ``camera_pitch_source`` is ``action_result``);
* publishes ``clock`` (sim time), ``odom`` (nav_msgs/Odometry odom → base_link, noisy, with
  covariance), ``imu`` (sensor_msgs/Imu, gyro noise + bias, yaw integrated from the gyro), the
  realsense-ros camera topics (rgb8 colour, 16UC1 mm depth aligned to colour, both camera_info,
  frame ``camera_color_optical_frame``), ``havln/humans`` (PoseArray, map), ``havln/people``
  (PoseArray, base_link, relative to the TRUE pose), ``havln/ground_truth`` (DiagnosticStatus,
  :data:`havln_robot.topics.GROUND_TRUTH_KEYS`) and, where tf2_msgs imports, ``tf``
  (odom → base_link, map → odom, base_link → camera optical frame);
* serves ``sim/reset`` (std_srvs/Trigger): restart the episode, re-reading the episode parameters.

Time: a thread on a steady wall-clock schedule steps the simulation at ``sim_rate_hz`` (100 Hz),
advancing sim time by the wall time elapsed x ``real_time_factor`` (at most 50 ms per tick, so a
stalled process slows sim time instead of jumping); odom, imu and ground truth go out every n-th
tick (n = sim_rate_hz / their rate: 100 Hz odom and imu as go2_driver_node's default, 10 Hz ground truth). Every stamp is sim time, published on ``clock``; sim time never
goes backwards, also across resets. ``base_link`` is on the ground under the body centre.
Rendering runs on a second thread (it owns the OpenGL context); neither thread depends on the
executor, so odom/imu keep their rate however busy the process is. Inputs (cmd_vel, action
results, reset) arrive through the executor and share one lock with the two threads.

Lockstep (``lockstep: true``, config/sim.yaml; protocol in :mod:`havln_robot.sim.lockstep`): one
thread steps the simulation by exactly 1/sim_rate_hz, renders the camera itself every
round(sim_rate_hz / camera_rate_hz)-th step, publishes each step's outputs, then ``clock``, then
the step on ``havln/sim_sync``, and advances only when motion_node, people_node and agent_node have
acked the step and one of them needs time to pass; the velocity command comes in motion_node's
ack. While the clock stands still, ``clock``, ground truth and ``havln/humans`` are repeated every
0.5 s (wall clock) for monitors and the console. Without any participant the clock stands still.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from typing import Any

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import Pose, PoseArray, TransformStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import CameraInfo, Image, Imu, PointCloud2
from std_srvs.srv import Trigger

from havln_robot.geometry import map_to_odom, optical_quat, rpy_to_quat, yaw_to_quat
from havln_robot.motion.lidar import LidarMount
from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.params import ConfigError
from havln_robot.records import GroundTruth, RecordError
from havln_robot.ros.codec import decode_result, encode_cloud, encode_ground_truth, image_msg
from havln_robot.ros.lockstep import decode, decode_ack, encode_sim, encode_step, sync_qos
from havln_robot.sim.lockstep import Gate
from havln_robot.sim.params import SIM_NODE_PARAMS
from havln_robot.sim.session import SessionError, SimSession, base_config, open_episode
from havln_robot.topics import SIM_SYNC

try:  # tf2_msgs is not part of every install (not of the pip wheels used here)
    from tf2_msgs.msg import TFMessage
except ImportError:  # pragma: no cover - depends on the install
    TFMessage = None

#: Parameters that choose the episode; ``sim/reset`` re-reads them.
EPISODE_KEYS = (  # read again by the reset service: sim_node's LIVE_PARAMS
    "scene_source",
    "episodes_file",
    "connectivity_dir",
    "episode_id",
    "episode_index",
    "instruction_index",
    "corridor_width_m",
    "scenes_dir",
    "scenes_up",
    "populate_humans",
    "seed",
)
#: Largest sim-time advance of one tick, s.
MAX_TICK_S = 0.05
#: Lockstep: while the clock stands still, clock, ground truth and humans are repeated this often (wall clock, s).
FROZEN_REPEAT_S = 0.5
#: Lockstep: the first step follows the last expected participant by this long (wall clock, s).
FIRST_STEP_SETTLE_S = 1.0
#: Lockstep: the first step is taken after this long (wall clock, s) when an expected participant never came
#: (a policy loads in ~5 s, 30 s on a loaded machine).
FIRST_STEP_TIMEOUT_S = 120.0


def ns_stamp(t_ns: int) -> Time:
    """builtin_interfaces/Time of ``t_ns`` nanoseconds of sim time (exact)."""
    return Time(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)


def sim_stamp(t: float) -> Time:
    """builtin_interfaces/Time of sim time ``t`` (s, >= 0)."""
    sec = int(math.floor(t))
    return Time(sec=sec, nanosec=min(999_999_999, int(round((t - sec) * 1e9))))


def decimation(sim_rate_hz: float, rate_hz: float) -> int:
    """Publish every n-th simulation tick to get ``rate_hz`` out of ``sim_rate_hz`` ticks (n >= 1)."""
    return max(1, int(round(sim_rate_hz / rate_hz)))


class SimNode(HavlnNode):
    """The embedded simulator node (see the module docstring for topics and parameters).

    Raises:
        ConfigError: bad parameters, or the selected episode cannot be opened (one line naming the parameter).
    """

    SPEC = SIM_NODE_PARAMS
    #: The episode keys, read again by the reset service (the next episode); the rest is read at start.
    LIVE_PARAMS = frozenset(EPISODE_KEYS)

    def __init__(self, params: dict[str, Any] | None = None, node_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(params=params, node_name=node_name, **kwargs)
        p = self.params
        if p.get("use_sim_time"):
            # sim_node IS the clock: its stamps come from the simulation, its stepping from the wall
            # clock; listening to its own /clock would only cost 100 callbacks a second.
            self.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, False)])
            self.get_logger().info("sim_node publishes the clock; its own use_sim_time is ignored")
        self._lock = threading.RLock()
        self._episode_params = {k: p[k] for k in EPISODE_KEYS}
        self.session = self._open(self._episode_params)
        self._generation = 0  # bumped when the scene/people change (the camera thread rebuilds its renderer)
        self.sim_time = 0.0  # monotonic across resets
        self._last_wall = time.monotonic()
        self._last_cmd_t = -math.inf
        self._cmd_nonzero = False
        self._every = {k: decimation(p["sim_rate_hz"], p[f"{k}_rate_hz"]) for k in ("odom", "imu", "ground_truth")}
        self._ticks = 0
        self.counts: dict[str, int] = {}

        q = 10
        img_q = QoSProfile(depth=2)
        self.clock_pub = self.create_publisher(ClockMsg, p["clock_topic"], q)
        self.odom_pub = self.create_publisher(Odometry, p["odom_topic"], q)
        self.imu_pub = self.create_publisher(Imu, p["imu_topic"], q)
        self.humans_pub = self.create_publisher(PoseArray, p["humans_topic"], q)
        # people_source 'detected': people_node owns people_topic; the truth goes to people_truth_topic
        self.people_pub = self.create_publisher(
            PoseArray, p["people_topic"] if p["people_source"] == "ground_truth" else p["people_truth_topic"], q
        )
        self.gt_pub = self.create_publisher(DiagnosticStatus, p["ground_truth_topic"], q)
        self.tf_pub = self.create_publisher(TFMessage, p["tf_topic"], q) if TFMessage is not None else None
        if self.tf_pub is None:
            self.get_logger().info("tf2_msgs is not installed: odom -> base_link goes on the odom topic only")
        self.color_pub = self.create_publisher(Image, p["color_topic"], img_q)
        self.depth_pub = self.create_publisher(Image, p["depth_topic"], img_q)
        self.color_info_pub = self.create_publisher(CameraInfo, p["color_info_topic"], img_q)
        self.depth_info_pub = self.create_publisher(CameraInfo, p["depth_info_topic"], img_q)
        # the simulated LiDAR: swept with each camera frame, on the model the camera renders
        self.cloud_pub = self.create_publisher(PointCloud2, p["lidar_topic"], img_q) if p["lidar_topic"] else None
        self._lidar_mount = LidarMount.from_params(p)

        self._group = MutuallyExclusiveCallbackGroup()
        # one commander, as go2_driver_node: another stack's motion_node on the same domain is refused
        self.pin_source(p["cmd_vel_topic"], on_second=lambda *_: self.safe_stop())
        self.create_subscription(Twist, p["cmd_vel_topic"], self._on_cmd_vel, q, callback_group=self._group)
        if p["camera_pitch_source"] == "action_result":
            self.create_subscription(DiagnosticStatus, p["action_result_topic"], self._on_action_result, q, callback_group=self._group)
        self.create_service(Trigger, p["reset_service"], self._on_reset, callback_group=self._group)
        self._stop = threading.Event()
        self.camera_error: str | None = None
        self.lockstep = bool(p["lockstep"])
        self.gate = Gate(p["lockstep_timeout_s"])
        self._wake = threading.Event()
        self._step_ns = -1  # lockstep: the last step published (ns of sim time)
        self._last_frame: tuple[Image, ...] = ()  # lockstep: the last colour and depth images, repeated while the clock stands still
        self._cmd_seq = 0  # lockstep: motion_node's last command applied
        if self.lockstep:
            self.sync_pub = self.create_publisher(DiagnosticStatus, SIM_SYNC, sync_qos())
            self.create_subscription(DiagnosticStatus, SIM_SYNC, self._on_sync, sync_qos(), callback_group=self._group)
        loop = self._lockstep_loop if self.lockstep else self._sim_loop
        self._threads = [threading.Thread(target=loop, name="sim_node-step", daemon=True)]
        if p["camera_enabled"] and not self.lockstep:
            self._threads.append(threading.Thread(target=self._camera_loop, name="sim_node-camera", daemon=True))
        for th in self._threads:
            th.start()

    # ------------------------------------------------------------------ episode
    def _open(self, ep: dict[str, Any]) -> SimSession:
        try:
            opened = open_episode(ep)
            limits, noise = base_config(self.params)
            session = SimSession(opened.scene, opened.episode, limits, noise, seed=ep["seed"], populate=ep["populate_humans"])
        except SessionError as exc:
            raise ConfigError(f"{self.get_name()}: {exc}") from None
        log = self.get_logger()
        if opened.fallback:  # one call site per severity (rclpy refuses a change at one site)
            log.warning(f"sim: {opened.note}")
        else:
            log.info(f"sim: {opened.note}")
        return session

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        ep = {k: self.get_parameter(k).value for k in EPISODE_KEYS}
        new = None
        if ep != self._episode_params:
            try:
                new = self._open(ep)  # outside the lock: loading a scan must not stall odom/imu
            except ConfigError as exc:
                response.success, response.message = False, str(exc)
                return response
        with self._lock:
            if new is not None:
                self.session = new
                self._episode_params = ep
                self._generation += 1
            else:
                self.session.reset()
            self._last_cmd_t = -math.inf
            self._cmd_nonzero = False
        e = self.session.episode
        response.success, response.message = True, f"episode {e.episode_id} ({e.scan}) restarted"
        self.get_logger().info(f"sim: {response.message}")
        return response

    # ------------------------------------------------------------------ inputs
    def _on_cmd_vel(self, msg: Twist) -> None:
        pitch_rate = -msg.angular.y if self.params["camera_pitch_source"] == "cmd_vel" else 0.0
        with self._lock:
            if self.lockstep and self.gate.command(time.monotonic()) is not None:
                return  # motion_node's command comes in its ack, for the step it was computed at
            try:
                self.session.base.command(msg.linear.x, msg.angular.z, pitch_rate)
            except ValueError as exc:
                self.get_logger().warning(f"{exc}", throttle_duration_sec=1.0)
                return
            self._last_cmd_t = self.session.world.t
            self._cmd_nonzero = any(v != 0.0 for v in (msg.linear.x, msg.angular.z, pitch_rate))

    def _on_action_result(self, msg: DiagnosticStatus) -> None:
        try:
            r = decode_result(msg)
        except RecordError:
            return
        pitch = math.radians(r.pitch_deg)
        with self._lock:
            self.gate.results_seen = max(self.gate.results_seen, r.seq)
            if math.isfinite(pitch):
                self.session.virtual_pitch = max(-math.pi / 2, min(math.pi / 2, pitch))
        self._wake.set()

    def _on_sync(self, msg: DiagnosticStatus) -> None:
        kind, sender, v = decode(msg)
        if sender == self.get_fully_qualified_name():
            return
        with self._lock:
            if kind == "ack":
                self.gate.heard(decode_ack(sender, v, time.monotonic()))
            elif kind == "bye":
                self.gate.bye(sender)
        self._wake.set()

    def safe_stop(self) -> None:
        """Zero the commanded velocity at once (pending commands dropped). Never raises."""
        try:
            with self._lock:
                self.session.base.stop()
                self._cmd_nonzero = False
        except Exception:  # must not raise
            pass

    # ------------------------------------------------------------------ simulation tick
    def _sim_loop(self) -> None:
        """Step the simulation on a steady wall-clock schedule (own thread: executor load cannot slow odom/imu)."""
        period = 1.0 / self.params["sim_rate_hz"]
        deadline = time.monotonic()
        while not self._stop.is_set():
            try:
                self._tick()
            except Exception as exc:  # report, keep stepping
                self.get_logger().error(f"sim step failed: {type(exc).__name__}: {exc}", throttle_duration_sec=5.0)
            deadline += period
            now = time.monotonic()
            if deadline < now - 2 * period:  # fell far behind: do not burst to catch up
                deadline = now
            self._stop.wait(max(0.0, deadline - now))

    def _tick(self) -> None:
        p = self.params
        now = time.monotonic()
        span = min((now - self._last_wall) * p["real_time_factor"], MAX_TICK_S)
        self._last_wall = now
        if span <= 0:
            return
        step = 1.0 / p["sim_rate_hz"]
        with self._lock:
            s = self.session
            n = max(1, math.ceil(span / step - 1e-6))
            for _ in range(n):
                if p["cmd_vel_timeout_s"] > 0 and self._cmd_nonzero and s.world.t - self._last_cmd_t > p["cmd_vel_timeout_s"]:
                    s.base.command(0.0, 0.0, 0.0)
                    self._cmd_nonzero = False
                s.step(span / n)
            self.sim_time += span
            stamp = sim_stamp(self.sim_time)
            k = self._ticks
            self._ticks += 1
            self._publish(self.clock_pub, ClockMsg(clock=stamp))
            if k % self._every["imu"] == 0:
                self._publish_imu(stamp)
            if k % self._every["odom"] == 0:
                self._publish_odom(stamp)
            if k % self._every["ground_truth"] == 0:
                self._publish_ground_truth(stamp)

    # ------------------------------------------------------------------ lockstep
    def _lockstep_loop(self) -> None:
        """Step in lockstep (see the module docstring); owns the renderer (its OpenGL context is per thread)."""
        p = self.params
        dt_ns = int(round(1e9 / p["sim_rate_hz"]))
        cam_every = decimation(p["sim_rate_hz"], p["camera_rate_hz"])
        cam: dict[str, Any] = {"renderer": None, "gen": -1, "info": None}
        last_repeat = -math.inf
        t_start = time.monotonic()
        alone_since = t_start  # wall time since when no participant is live
        all_here = math.inf  # wall time since when every role of lockstep_wait_for is live
        wait_for = set(p["lockstep_wait_for"]) - ({"people"} if p["people_source"] == "ground_truth" else set())
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                with self._lock:
                    why = self.gate.why_not(self._step_ns, now)
                    live = self.gate.live(now)
                    alone_since = alone_since if not live else now
                    if self._step_ns < 0:
                        # the first step: once every expected role is here (or the wait ran out), wanted or not
                        # (and not before, wanted or not), so that each sees it and an episode starts from it
                        why = "first step"
                        roles = {a.role for a in live}
                        if not wait_for <= roles:
                            all_here = math.inf
                        all_here = min(all_here, now)
                        # after the last one came, FIRST_STEP_SETTLE_S for its subscriptions to match the publishers
                        if live and (now - all_here >= FIRST_STEP_SETTLE_S or now - t_start >= FIRST_STEP_TIMEOUT_S):
                            why = None
                    if not live and now - alone_since >= p["lockstep_timeout_s"]:
                        why = None  # nobody in lockstep: run on the wall clock (paced below)
                    dropped, self.gate.dropped = self.gate.dropped, []
                for name in dropped:
                    self.get_logger().warning(f"lockstep: {name} silent for {p['lockstep_timeout_s']:g} s: no longer waited for")
                if why is not None:
                    if now - last_repeat >= FROZEN_REPEAT_S:
                        last_repeat = now
                        self._frozen_repeat()
                    self._wake.wait(0.05)
                    self._wake.clear()
                    continue
                try:
                    self._lockstep_step(dt_ns, cam_every, cam)
                except Exception as exc:  # report, keep stepping
                    self.get_logger().error(f"sim step failed: {type(exc).__name__}: {exc}", throttle_duration_sec=5.0)
                if not live:
                    self._stop.wait(dt_ns * 1e-9 / p["real_time_factor"])
        finally:
            if cam["renderer"] is not None:
                cam["renderer"].close()

    def _frozen_repeat(self) -> None:
        """The clock stands still: say so on the sync topic; repeat clock, ground truth and humans for monitors."""
        with self._lock:
            t_ns = max(self._step_ns, 0)
            stamp = ns_stamp(t_ns)
            self.sync_pub.publish(encode_sim(self.get_fully_qualified_name(), self._step_ns))
            if self._step_ns >= 0:
                self._publish(self.clock_pub, ClockMsg(clock=stamp))
            self._publish_ground_truth(stamp, people=False)
            for pub, msg in zip((self.color_pub, self.depth_pub), self._last_frame, strict=False):
                self._publish(pub, msg)  # for the console; lockstep participants drop repeats

    def _lockstep_step(self, dt_ns: int, cam_every: int, cam: dict[str, Any]) -> None:
        p = self.params
        with self._lock:
            s = self.session
            got = self.gate.command(time.monotonic())
            if got is not None and got[0] != self._cmd_seq:
                self._cmd_seq = got[0]
                try:
                    s.base.command(got[1][0], got[1][1], 0.0)
                    self._last_cmd_t = s.world.t
                    self._cmd_nonzero = any(v != 0.0 for v in got[1])
                except ValueError as exc:
                    self.get_logger().warning(f"{exc}", throttle_duration_sec=1.0)
            if p["cmd_vel_timeout_s"] > 0 and self._cmd_nonzero and s.world.t - self._last_cmd_t > p["cmd_vel_timeout_s"]:
                s.base.command(0.0, 0.0, 0.0)
                self._cmd_nonzero = False
            s.step(dt_ns * 1e-9)
            self._step_ns = (max(self._step_ns, 0) // dt_ns + 1) * dt_ns
            self.sim_time = self._step_ns * 1e-9
            stamp = ns_stamp(self._step_ns)
            k = self._ticks
            self._ticks += 1
            streams = []
            if k % self._every["imu"] == 0:
                self._publish_imu(stamp)
                streams.append("imu")
            if k % self._every["odom"] == 0:
                self._publish_odom(stamp)
                streams.append("odom")
            if k % self._every["ground_truth"] == 0:
                self._publish_ground_truth(stamp)
                streams.append("ground_truth")
                if p["people_source"] == "ground_truth":
                    streams.append("people")
            if p["camera_enabled"] and self.camera_error is None and k % cam_every == 0:
                if self._render(stamp, cam):
                    streams.append("camera")
            self._publish(self.clock_pub, ClockMsg(clock=stamp))
            self.sync_pub.publish(encode_step(self.get_fully_qualified_name(), self._step_ns, tuple(streams)))

    def _new_renderer(self, s: Any) -> Any:
        """The camera's renderer for session ``s`` (its scene and crowd), or None after one ERROR line
        when it cannot be made (``camera_error`` says why)."""
        from havln_robot.sim.render import Renderer, RenderError

        p = self.params
        try:
            return Renderer(
                s.scene,
                s.crowd,
                p["camera_width"],
                p["camera_height"],
                p["camera_hfov_deg"],
                camera_height_m=p["camera_z_m"],
                camera_forward_m=p["camera_x_m"],
                camera_left_m=p["camera_y_m"],
                camera_pitch_rad=math.radians(p["camera_pitch_deg"]),
            )
        except RenderError as exc:
            self.camera_error = str(exc)
            self.get_logger().error(f"camera disabled: {exc}")
            return None

    def _render(self, stamp: Time, cam: dict[str, Any]) -> bool:
        """Render and publish one RGB-D frame at the current state (lock held); False when the camera failed."""
        from havln_robot.sim.render import depth_to_mm

        p, s = self.params, self.session
        if cam["renderer"] is None or cam["gen"] != self._generation:
            if cam["renderer"] is not None:
                cam["renderer"].close()
                cam["renderer"] = None
            cam["renderer"] = self._new_renderer(s)
            if cam["renderer"] is None:
                return False
            cam["gen"] = self._generation
            cam["info"] = _camera_info(cam["renderer"].intrinsics, p["camera_frame"])
        pose, pitch, t = s.view()
        rgb, depth = cam["renderer"].render(pose, pitch, t)
        mm = depth_to_mm(depth, p["depth_min_m"], p["depth_max_m"])
        info = cam["info"]
        info.header.stamp = stamp
        self._last_frame = (image_msg(rgb, "rgb8", p["camera_frame"], stamp), image_msg(mm, "16UC1", p["camera_frame"], stamp))
        self._publish(self.color_pub, self._last_frame[0])
        self._publish(self.depth_pub, self._last_frame[1])
        self._publish(self.color_info_pub, info)
        self._publish(self.depth_info_pub, info)
        if self.tf_pub is not None:
            self._publish(self.tf_pub, TFMessage(transforms=[self._camera_tf(stamp, pitch)]))
        self._publish_cloud(cam["renderer"], pose, t, stamp)
        return True

    def _publish_cloud(self, renderer: Any, pose: tuple[float, float, float, float], t: float, stamp: Time) -> None:
        """Publish the simulated LiDAR sweep from ``pose`` at sim time ``t`` (when ``lidar_topic`` is set)."""
        if self.cloud_pub is None:
            return
        p = self.params
        xyz = renderer.lidar_cloud(
            pose, self._lidar_mount, t, p["lidar_range_m"], (p["lidar_min_elevation_deg"], p["lidar_max_elevation_deg"])
        )
        self._publish(self.cloud_pub, encode_cloud(xyz, self.params["lidar_frame"], stamp))

    def _publish(self, pub: Any, msg: Any) -> None:
        pub.publish(msg)
        name = pub.topic_name
        self.counts[name] = self.counts.get(name, 0) + 1

    def _publish_odom(self, stamp: Time) -> None:
        p, s = self.params, self.session
        o = s.base.odom
        m = Odometry()
        m.header.stamp, m.header.frame_id, m.child_frame_id = stamp, p["odom_frame"], p["base_frame"]
        m.pose.pose.position.x, m.pose.pose.position.y = o.x, o.y
        q = m.pose.pose.orientation
        q.x, q.y, q.z, q.w = yaw_to_quat(o.yaw)
        m.twist.twist.linear.x, m.twist.twist.angular.z = o.v, o.w
        pc, tc = s.odom_covariance()
        m.pose.covariance, m.twist.covariance = pc, tc
        self._publish(self.odom_pub, m)
        if self.tf_pub is not None:
            x, y, _, yaw = s.world.pose
            mx, my, dyaw = map_to_odom((x, y, yaw), (o.x, o.y, o.yaw))
            self._publish(
                self.tf_pub,
                TFMessage(
                    transforms=[
                        _transform(stamp, p["odom_frame"], p["base_frame"], (o.x, o.y, 0.0), yaw_to_quat(o.yaw)),
                        _transform(stamp, p["map_frame"], p["odom_frame"], (mx, my, s.world.pose[2]), yaw_to_quat(dyaw)),
                    ]
                ),
            )

    def _publish_imu(self, stamp: Time) -> None:
        p, s = self.params, self.session
        im = s.base.imu
        m = Imu()
        m.header.stamp, m.header.frame_id = stamp, p["imu_frame"]
        q = m.orientation
        q.x, q.y, q.z, q.w = rpy_to_quat(im.roll, im.pitch, im.yaw)
        m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = (float(v) for v in im.gyro)
        m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = (float(v) for v in im.accel)
        oc, gc, ac = s.imu_covariance()
        m.orientation_covariance, m.angular_velocity_covariance, m.linear_acceleration_covariance = oc, gc, ac
        self._publish(self.imu_pub, m)

    def _publish_ground_truth(self, stamp: Time, people: bool = True) -> None:
        p, s = self.params, self.session
        pos, head, _ = s.humans()
        ha = PoseArray()
        ha.header.stamp, ha.header.frame_id = stamp, p["map_frame"]
        ha.poses = [_pose(px, py, pz, h) for (px, py, pz), h in zip(pos, head, strict=False)]
        self._publish(self.humans_pub, ha)
        if people:
            pa = PoseArray()
            pa.header.stamp, pa.header.frame_id = stamp, p["base_frame"]
            pa.poses = [_pose(x, y, 0.0, yaw) for _, x, y, yaw in s.people_local(p["people_range_m"])]
            self._publish(self.people_pub, pa)
        self._publish(self.gt_pub, encode_ground_truth(GroundTruth.from_values(s.ground_truth())))

    # ------------------------------------------------------------------ camera thread
    def _camera_loop(self) -> None:
        """Own the Renderer (OpenGL context is per thread); render and publish at camera_rate_hz (wall time)."""
        from havln_robot.sim.render import depth_to_mm

        p = self.params
        period = 1.0 / p["camera_rate_hz"]
        renderer = None
        gen = -1
        info = None
        deadline = time.monotonic()
        try:
            while not self._stop.is_set():
                with self._lock:
                    s = self.session
                    pose, pitch, t = s.view()
                    stamp = sim_stamp(self.sim_time)
                    cur_gen = self._generation
                if renderer is None or cur_gen != gen:
                    if renderer is not None:
                        renderer.close()
                    renderer = self._new_renderer(s)
                    if renderer is None:
                        return
                    gen = cur_gen
                    info = _camera_info(renderer.intrinsics, p["camera_frame"])
                rgb, depth = renderer.render(pose, pitch, t)
                mm = depth_to_mm(depth, p["depth_min_m"], p["depth_max_m"])
                if self._stop.is_set():
                    break
                info.header.stamp = stamp
                self._publish(self.color_pub, image_msg(rgb, "rgb8", p["camera_frame"], stamp))
                self._publish(self.depth_pub, image_msg(mm, "16UC1", p["camera_frame"], stamp))
                self._publish(self.color_info_pub, info)
                self._publish(self.depth_info_pub, info)
                if self.tf_pub is not None:
                    self._publish(self.tf_pub, TFMessage(transforms=[self._camera_tf(stamp, pitch)]))
                self._publish_cloud(renderer, pose, t, stamp)
                # steady schedule: a slow frame (a loaded machine) is followed by the next one at once,
                # so the mean rate stays camera_rate_hz; far behind, the schedule restarts (no burst)
                deadline += period
                now = time.monotonic()
                if deadline < now - 2 * period:
                    deadline = now
                self._stop.wait(max(0.0, deadline - now))
        except Exception as exc:  # keep odom/imu alive whatever happens to the renderer
            self.camera_error = f"{type(exc).__name__}: {exc}"
            self.get_logger().error(f"camera thread stopped: {self.camera_error}")
        finally:
            if renderer is not None:
                renderer.close()

    def _camera_tf(self, stamp: Time, pitch: float) -> TransformStamped:
        """base_link → optical frame (z forward, x right, y down), tilted by the camera pitch."""
        p = self.params
        # optical = body rotation (pitch about y, REP 103 sign: -elevation) then axes swap (z fwd, x right, y down)
        mount = (p["camera_x_m"], p["camera_y_m"], p["camera_z_m"])
        return _transform(stamp, p["base_frame"], p["camera_frame"], mount, optical_quat(-(pitch + math.radians(p["camera_pitch_deg"]))))

    def destroy_node(self) -> None:
        """Stop the camera thread, then destroy the node."""
        self._stop.set()
        for th in self._threads:
            if th is not threading.current_thread():
                th.join(timeout=5.0)
        super().destroy_node()


def _pose(x: float, y: float, z: float, yaw: float) -> Pose:
    m = Pose()
    m.position.x, m.position.y, m.position.z = float(x), float(y), float(z)
    q = m.orientation
    q.x, q.y, q.z, q.w = yaw_to_quat(float(yaw))
    return m


def _transform(
    stamp: Time, parent: str, child: str, xyz: tuple[float, float, float], quat: tuple[float, float, float, float]
) -> TransformStamped:
    tr = TransformStamped()
    tr.header.stamp, tr.header.frame_id, tr.child_frame_id = stamp, parent, child
    tr.transform.translation.x, tr.transform.translation.y, tr.transform.translation.z = (float(v) for v in xyz)
    r = tr.transform.rotation
    r.x, r.y, r.z, r.w = quat
    return tr


def _camera_info(intr: Any, frame: str) -> CameraInfo:
    m = CameraInfo()
    m.header.frame_id = frame
    m.width, m.height = intr.width, intr.height
    m.distortion_model = "plumb_bob"
    m.d, m.k, m.r, m.p = intr.D, intr.K, intr.R, intr.P
    return m


NODE_CLASS = SimNode


def main() -> None:
    """Console entry point (``ros2 run havln_robot sim_node``)."""
    sys.exit(run_node(SimNode))
