"""The live subset of the safety course: course scenes through the real motion_node on a ROS graph.

:class:`HazardWorld` is a ROS node that plays a :class:`~havln_robot.sim.hazards.HazardScene` in
real time around a Go2: it follows ``cmd_vel`` (the base tracks the command, as in the batch course,
and stops when ``cmd_vel`` falls silent for the Go2 driver's deadman ``cmd_timeout_s`` of
config/go2.yaml, as the real stack's go2_driver_node makes it),
publishes ``odom`` and ``imu`` (50 Hz), the D435i's aligned depth and its ``camera_info`` ray-cast
from the robot's pose (15 Hz, :func:`~havln_robot.sim.hazards.depth_frame`), the people as
people_node reports them (``havln/people`` and ``havln/people_tracks``, 15 Hz) and, for the LiDAR
runs, a simulated cloud in the sensor's frame (10 Hz). motion_node is the node itself
(:class:`~havln_robot.nodes.motion_node.MotionNode`) with config/go2.yaml's parameters, driven by
MOVE_FORWARDs on ``havln/action`` as the batch course drives its executor. Contacts, falls and
clearance are judged on the true geometry by the batch course's own
:func:`~havln_robot.sim.hazards.measure`, so a live row and a batch row of one scene and seed can
be compared (:func:`live_rows`, ``havln-robot bench safety --live``).

Differences from batch, by design of a live run: wall-clock timing (the control loop and the
camera run as the machine lets them), depth published at 160 x 120 (motion_node's ``depth_stride``
1, the batch course's image) and the base integrated at the world's timer rate (100 Hz).
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from typing import Any

import numpy as np

from havln_robot import actions as A
from havln_robot.records import BLOCKED_DETAIL
from havln_robot.sim import hazards as H

#: World timer (the base integrates cmd_vel, contacts are judged), Hz.
WORLD_HZ = 100.0
#: Longest wait for one action's result, s (a MOVE_FORWARD takes ~1.2 s; a revert and settling more).
RESULT_TIMEOUT_S = 20.0
_RUNS = itertools.count()


def live_course() -> list[tuple[H.HazardScene, bool]]:
    """The live subset: (scene, with LiDAR) -- the issue's reproductions and one of each other kind."""
    return [
        (H.box_scene(1.55, 0.30, 0.4, 0.0), False),  # approached with MOVE_FORWARDs (was entered by 3 cm)
        (H.box_scene(0.15, 0.45, 0.4, 0.0), False),  # face 0.15 m ahead from rest (was entered by 0.1 m)
        (H.box_scene(0.15, 0.10, 0.2, 0.0), True),  # under the camera's lowest ray: the LiDAR's
        (H.ledge_scene(1.55, 0.5), False),  # a stage edge (was walked off)
        (H.ledge_scene(0.15, 1.0), False),  # a dock edge from rest
        (H.stairs_down_scene(1.0), True),  # walked down where the LiDAR sees the treads
        (H.glass_scene(1.2), True),  # no depth return: the LiDAR's
        (H.person_scene(), False),
        (H.doorway_scene(0.8), False),
        (H.free_scene(), False),
    ]


def driver_deadman_s() -> float:
    """go2_driver_node's ``cmd_timeout_s`` in config/go2.yaml: no cmd_vel for longer stops the Go2, s."""
    from havln_robot.config import load_profile
    from havln_robot.paths import config_dir

    return float(load_profile(config_dir() / "go2.yaml").nodes["go2_driver_node"]["cmd_timeout_s"])


class HazardWorld:
    """The scene around the robot as a ROS node (module docstring). Build it inside a running rclpy
    ``context``; ``p`` are motion_node's parameters (topics, mounts); ``namespace`` isolates the run."""

    def __init__(self, scene: H.HazardScene, p: dict[str, Any], seed: int, lidar: bool, context: Any, namespace: str) -> None:
        from diagnostic_msgs.msg import DiagnosticStatus
        from geometry_msgs.msg import PoseArray, Twist
        from nav_msgs.msg import Odometry
        from rclpy.node import Node
        from sensor_msgs.msg import CameraInfo, Image, Imu, PointCloud2
        from std_msgs.msg import String

        from havln_robot.camera import Intrinsics
        from havln_robot.motion.lidar import LidarMount
        from havln_robot.motion.safety import CameraMount
        from havln_robot.ros.codec import decode_result

        self.scene, self.p, self.lidar = scene, p, lidar
        self.rng = np.random.default_rng(seed)
        sx, sy, sth = scene.start
        if seed:  # the batch course's start jitter
            sx, sy, sth = sx + self.rng.normal(0, 0.02), sy + self.rng.normal(0, 0.02), sth + math.radians(self.rng.normal(0, 2.0))
        self.start_xy = (sx, sy)
        self.pose = (sx, sy, sth)
        self.cmd = (0.0, 0.0)
        self.cmd_t = -math.inf
        self.deadman_s = driver_deadman_s()
        self.res = H.RunResult()
        self.floor0 = float(H.floor_under(scene.blocks, np.array([[sx, sy]]))[0])
        self.size = (p["footprint_length_m"], p["footprint_width_m"])
        self.k = Intrinsics.from_hfov(H.DEPTH_W, H.DEPTH_H, H.DEPTH_HFOV_DEG)
        self.mount = CameraMount(p["camera_x_m"], p["camera_y_m"], p["camera_z_m"], math.radians(p["camera_pitch_deg"]))
        self.lmount = LidarMount.from_params(p)
        self.results: list[Any] = []
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self._last = self.t0
        self._due = {"odom": 0.0, "camera": 0.0, "people": 0.0, "lidar": 0.0}
        n = self.node = Node("hazard_world", namespace=namespace, context=context)
        self.pub = {
            "odom": n.create_publisher(Odometry, p["odom_topic"], 10),
            "imu": n.create_publisher(Imu, p["imu_topic"], 10),
            "depth": n.create_publisher(Image, p["depth_topic"], 2),
            "info": n.create_publisher(CameraInfo, p["depth_info_topic"], 2),
            "people": n.create_publisher(PoseArray, p["people_topic"], 5),
            "action": n.create_publisher(String, p["action_topic"], 10),
        }
        if p["people_tracks_topic"]:
            self.pub["tracks"] = n.create_publisher(PointCloud2, p["people_tracks_topic"], 5)
        if lidar:
            self.pub["lidar"] = n.create_publisher(PointCloud2, p["lidar_topic"], 5)
        n.create_subscription(Twist, p["cmd_vel_topic"], self._on_cmd, 10)
        n.create_subscription(DiagnosticStatus, p["action_result_topic"], lambda m: self.results.append(decode_result(m)), 50)
        n.create_timer(1.0 / WORLD_HZ, self._on_timer)

    @property
    def t(self) -> float:
        """Scene time: seconds since the world started (people walk on it)."""
        return time.monotonic() - self.t0

    def _on_cmd(self, msg: Any) -> None:
        with self.lock:
            self.cmd = (float(msg.linear.x), float(msg.angular.z))
            self.cmd_t = time.monotonic()

    def _on_timer(self) -> None:
        now = time.monotonic()
        with self.lock:
            dt, self._last = now - self._last, now
            v, w = self.cmd if now - self.cmd_t <= self.deadman_s else (0.0, 0.0)  # the driver's deadman
            x, y, th = self.pose
            x, y, th = x + v * math.cos(th) * dt, y + v * math.sin(th) * dt, th + w * dt
            self.pose = (x, y, th)
            t = now - self.t0
            self.res.travelled_m = max(self.res.travelled_m, math.hypot(x - self.start_xy[0], y - self.start_xy[1]))
            H.measure(self.scene, t, self.pose, self.size, self.floor0, self.res)
        stamp = self.node.get_clock().now().to_msg()
        if t >= self._due["odom"]:
            self._due["odom"] = t + 1.0 / H.ODOM_HZ
            self._publish_odom_imu(stamp, v, w)
        blocks = [b.at(t) for b in self.scene.blocks]
        if t >= self._due["people"]:
            self._due["people"] = t + 1.0 / H.PEOPLE_HZ
            self._publish_people(stamp, H.people_seen(blocks, t, self.pose))
        if t >= self._due["camera"]:
            self._due["camera"] = t + 1.0 / H.CAMERA_HZ
            self._publish_depth(stamp, H.depth_frame(blocks, self.pose, self.k, self.mount, self.rng))
        if self.lidar and t >= self._due["lidar"]:
            self._due["lidar"] = t + 1.0 / H.LIDAR_HZ
            from havln_robot.ros.codec import encode_cloud

            self.pub["lidar"].publish(encode_cloud(H.lidar_cloud(blocks, self.pose, self.lmount), "utlidar_lidar", stamp))

    def _publish_odom_imu(self, stamp: Any, v: float, w: float) -> None:
        from nav_msgs.msg import Odometry
        from sensor_msgs.msg import Imu

        x, y, th = self.pose
        qz, qw = math.sin(th / 2.0), math.cos(th / 2.0)
        o = Odometry()
        o.header.stamp, o.header.frame_id, o.child_frame_id = stamp, "odom", "base_link"
        o.pose.pose.position.x, o.pose.pose.position.y = x, y
        o.pose.pose.orientation.z, o.pose.pose.orientation.w = qz, qw
        o.twist.twist.linear.x, o.twist.twist.angular.z = v, w
        self.pub["odom"].publish(o)
        m = Imu()
        m.header.stamp, m.header.frame_id = stamp, "base_link"
        m.orientation.z, m.orientation.w = qz, qw
        m.angular_velocity.z = w
        m.linear_acceleration.z = 9.81
        self.pub["imu"].publish(m)

    def _publish_depth(self, stamp: Any, depth: np.ndarray) -> None:
        from sensor_msgs.msg import CameraInfo

        from havln_robot.ros.codec import image_msg

        frame = "camera_color_optical_frame"
        self.pub["depth"].publish(image_msg(depth.astype(np.float32), "32FC1", frame, stamp))
        k = self.k
        info = CameraInfo()
        info.header.stamp, info.header.frame_id = stamp, frame
        info.width, info.height = k.width, k.height
        info.k = [k.fx, 0.0, k.cx, 0.0, k.fy, k.cy, 0.0, 0.0, 1.0]
        self.pub["info"].publish(info)

    def _publish_people(self, stamp: Any, people: list[Any]) -> None:
        from geometry_msgs.msg import Pose, PoseArray

        from havln_robot.ros.codec import encode_tracks

        msg = PoseArray()
        msg.header.stamp, msg.header.frame_id = stamp, "base_link"
        for q in people:
            ps = Pose()
            ps.position.x, ps.position.y, ps.orientation.w = q.x, q.y, 1.0
            msg.poses.append(ps)
        self.pub["people"].publish(msg)
        if "tracks" in self.pub:
            rows = [(q.x, q.y, q.vx, q.vy, i + 1) for i, q in enumerate(people)]
            self.pub["tracks"].publish(encode_tracks(rows, "base_link", stamp))

    def act(self, action: str) -> Any:
        """Send ``action`` and wait for its result (:class:`~havln_robot.records.ActionResult`).

        Raises:
            TimeoutError: no result within :data:`RESULT_TIMEOUT_S`.
        """
        from std_msgs.msg import String

        n = len(self.results)
        self.pub["action"].publish(String(data=action))
        end = time.monotonic() + RESULT_TIMEOUT_S
        while len(self.results) == n:
            if time.monotonic() > end:
                raise TimeoutError(f"{action}: no result from motion_node within {RESULT_TIMEOUT_S:g} s")
            time.sleep(0.01)
        return self.results[n]


def live_run(scene: H.HazardScene, seed: int = 0, lidar: bool = False, params: dict[str, Any] | None = None) -> H.RunResult:
    """Run ``scene`` live (module docstring): MOVE_FORWARDs as the batch course sends them (up to
    ``scene.steps``, ending at the first refusal). Own rclpy context on ``$ROS_DOMAIN_ID`` and a
    namespace of its own; DDS as :func:`havln_robot.dds.configure_dds` sets it.

    Raises:
        TimeoutError: motion_node did not become ready, or an action got no result.
    """
    import rclpy

    from havln_robot.bringup import NodeThreads
    from havln_robot.dds import configure_dds
    from havln_robot.nodes.motion_node import MotionNode

    configure_dds()
    p = params or H.course_params(lidar)
    ns = f"/safety_live/run{os.getpid()}_{next(_RUNS)}"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    world = mot = None
    threads = NodeThreads(ctx, log=lambda s: None)
    try:
        world = HazardWorld(scene, p, seed, lidar, ctx, ns)
        mot = MotionNode(params=p, context=ctx, namespace=ns)
        threads.add("hazard_world", world.node)
        threads.add("motion_node", mot)
        end = time.monotonic() + 30.0
        while mot.core.odom is None or mot.core.tracker.points(mot._now(), mot.core.odom, world.mount.pitch) is None:
            if time.monotonic() > end:
                raise TimeoutError("motion_node got no odometry and depth within 30 s")
            time.sleep(0.05)
        time.sleep(0.5)  # the first frames come in before the first action, as in batch
        for _ in range(scene.steps):
            r = world.act(A.MOVE_FORWARD)
            world.res.outcomes.append((r.action, r.outcome.value, r.detail))
            if r.detail.startswith(BLOCKED_DETAIL):
                break
            time.sleep(0.3)
        with world.lock:
            return world.res
    finally:
        threads.stop()
        for node in (mot, world.node if world else None):
            if node is not None:
                node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def live_rows(seed: int = 0) -> tuple[list[dict[str, object]], bool]:
    """Each scene of :func:`live_course` run in batch and live with ``seed``: (rows, all agree and
    meet the targets). A row agrees when contact, fall and ending refused are the same both ways."""
    rows: list[dict[str, object]] = []
    ok = True
    for scene, lidar in live_course():
        b = H.run(scene, seed=seed, lidar=lidar)
        lv = live_run(scene, seed=seed, lidar=lidar)
        same = (b.contact, b.fall, b.refused) == (lv.contact, lv.fall, lv.refused)
        counts = not scene.lidar_only or lidar
        ok = ok and same and not (counts and (lv.contact or lv.fall))
        rows.append(
            {
                "scene": scene.name,
                "sensors": "depth + LiDAR" if lidar else "depth",
                "batch": {"contact": b.contact, "fall": b.fall, "refused": b.refused, "travel_m": round(b.travelled_m, 3)},
                "live": {"contact": lv.contact, "fall": lv.fall, "refused": lv.refused, "travel_m": round(lv.travelled_m, 3)},
                "agree": same,
            }
        )
    return rows, ok


def live_table(rows: list[dict[str, object]]) -> list[str]:
    """The batch-vs-live table (Markdown) of :func:`live_rows`."""

    def cell(r: Any) -> str:
        return (
            f"{'contact' if r['contact'] else ('fall' if r['fall'] else ('refused' if r['refused'] else 'walked'))}, {r['travel_m']:.2f} m"
        )

    out = ["| scene | sensors | batch | live | agree |", "| --- | --- | --- | --- | --- |"]
    out += [f"| {r['scene']} | {r['sensors']} | {cell(r['batch'])} | {cell(r['live'])} | {'yes' if r['agree'] else 'NO'} |" for r in rows]
    return out
