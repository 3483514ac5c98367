"""people_node: tracked people from the robot's own sensors.

Thin ROS shell over :class:`havln_robot.perception.people.DepthPeopleTracker`.

* subscribes the aligned depth image + its ``camera_info`` (``depth_topic``), optionally a LiDAR
  ``sensor_msgs/PointCloud2`` (``lidar_topic``: fields x, y, z in the sensor's own frame, placed by
  the ``lidar_*`` mount that motion_node uses), and ``odom`` (tracks are kept in the odom frame);
* publishes, at most ``rate_hz`` per second (one output per processed depth or cloud frame):
  ``havln/people`` (geometry_msgs/PoseArray, base_link, nearest first; position only, the
  message motion_node has always read) and ``havln/people_tracks`` (sensor_msgs/PointCloud2, one
  point per person with fields x, y, vx, vy float32 and id uint32, base_link -- the standard
  message with named fields that carries velocity and track id; docs/perception.md).

Lockstep (the embedded simulator announces its steps on ``havln/sim_sync``; protocol in
:mod:`havln_robot.sim.lockstep`): odometry and frames are held until every message announced for
their step is in, handled with the step's time as this node's time (which frames are processed
then depends on stamps only), and the step is acked with the stamp of the last output, so that
motion_node waits for it.
"""

from __future__ import annotations

import math
import sys
import threading
from typing import Any

import numpy as np
from geometry_msgs.msg import Pose, PoseArray
from nav_msgs.msg import Odometry
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from sensor_msgs.msg import CameraInfo, Image, PointCloud2

from havln_robot.camera import Intrinsics
from havln_robot.geometry import quat_to_yaw
from havln_robot.motion.lidar import LidarMount
from havln_robot.motion.obstacles import Pose2D, PoseHistory
from havln_robot.motion.safety import CameraMount
from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.params import ConfigError
from havln_robot.perception.params import PEOPLE_PARAMS
from havln_robot.perception.people import AppearanceCheck, DepthPeopleTracker, PeopleConfig, lidar_points
from havln_robot.ros.codec import decode_cloud, encode_tracks, image_array
from havln_robot.ros.lockstep import SteppedInputs
from havln_robot.ros.qos import sensor_qos
from havln_robot.sim.lockstep import stamp_ns
from havln_robot.topics import BASE_FRAME


class PeopleNode(HavlnNode):
    """The people node. See the module docstring for its interface.

    Raises:
        ConfigError: a parameter is out of range or the appearance model cannot be loaded.
    """

    SPEC = PEOPLE_PARAMS

    def __init__(self, params: dict[str, Any] | None = None, node_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(params, node_name, **kwargs)
        p = self.params
        appearance = None
        if p["appearance_model"]:
            try:
                appearance = AppearanceCheck(p["appearance_model"])
            except ValueError as exc:
                msg = f"{self.get_name()}: {exc}"
                self.destroy_node()
                raise ConfigError(msg) from None
        self.core = DepthPeopleTracker(PeopleConfig.from_params(p), clock=self._now, appearance=appearance)
        self.lidar = LidarMount.from_params(p)
        self.core.lidar_xy = (self.lidar.x, self.lidar.y)
        self.mount = CameraMount(p["camera_x_m"], p["camera_y_m"], p["camera_z_m"], math.radians(p["camera_pitch_deg"]))
        self._k: Intrinsics | None = None
        self._pose: Pose2D | None = None
        self.poses = PoseHistory()
        self._last = -math.inf
        self._cloud_t = -math.inf
        self._warned: set[str] = set()
        self._lock = threading.RLock()
        self.frames = 0
        group = MutuallyExclusiveCallbackGroup()
        self.people_pub = self.create_publisher(PoseArray, p["people_topic"], 5)  # reliable: reaches best-effort and reliable readers
        self.tracks_pub = self.create_publisher(PointCloud2, p["people_tracks_topic"], 5)
        # this robot's sources, bound to their first publisher: another stack's odometry or camera on the
        # same domain is refused (one line naming both); people then fall silent and motion_node stops
        sources = (p["odom_topic"], p["depth_topic"], p["lidar_topic"], *(["/clock"] if self.get_parameter("use_sim_time").value else []))
        for name in filter(None, sources):
            self.pin_source(name)
        self.create_subscription(Odometry, p["odom_topic"], self._on_odom, sensor_qos(10), callback_group=group)
        if p["depth_topic"]:
            self.create_subscription(Image, p["depth_topic"], self._on_depth, sensor_qos(2), callback_group=group)
            self.create_subscription(CameraInfo, p["depth_info_topic"], self._on_info, sensor_qos(2), callback_group=group)
        if p["lidar_topic"]:
            self.create_subscription(PointCloud2, p["lidar_topic"], self._on_cloud, sensor_qos(2), callback_group=group)
        self.on_clock_jump_back(self._on_clock_reset)
        self._out_ns = -1  # stamp of the last output, ns
        # lockstep with the embedded simulator (inactive until it announces a step)
        handlers = (("odom", self._on_odom), ("info", self._on_info), ("depth", self._on_depth))
        self._ls = SteppedInputs(self, "people", self._lock, handlers, self._ls_needs, after=self._ls_ack)

    def _now(self) -> float:
        """This node's time: the step being handled in lockstep, else the clock."""
        ls = self.__dict__.get("_ls")
        return ls.now if ls is not None and ls.now is not None else super()._now()

    def _ls_needs(self, _t_ns: int, streams: frozenset[str]) -> list[str]:
        return (["odom"] if "odom" in streams else []) + (["depth", "info"] if "camera" in streams and self.params["depth_topic"] else [])

    def _ls_ack(self) -> None:
        self._ls.link.ack(t_ns=self._ls.inbox.done, people_ns=self._out_ns)

    def _on_clock_reset(self, _t: float, _jump_s: float) -> None:
        self.core.tracker.reset()
        self.poses.clear()

    def _on_odom(self, msg: Odometry) -> None:
        """Odometry pose for placing frames; a message with a non-finite pose value is dropped (a
        warning once per field), the last finite pose stays."""
        if self._ls.hold("odom", msg.header.stamp, msg):
            return
        ps = msg.pose.pose
        o = ps.orientation
        fields = (("pose.position.x", ps.position.x), ("pose.position.y", ps.position.y))
        if self._non_finite_field(self.params["odom_topic"], fields + tuple((f"pose.orientation.{k}", getattr(o, k)) for k in "xyzw")):
            return
        pose = (float(ps.position.x), float(ps.position.y), quat_to_yaw(o.x, o.y, o.z, o.w))
        self._pose = pose
        self.poses.add(self._stamp_time(msg.header.stamp, self._now(), "odom"), pose)

    def _on_info(self, msg: CameraInfo) -> None:
        if self._ls.hold("info", msg.header.stamp, msg):
            return
        try:
            self._k = Intrinsics.from_k(msg.k, msg.width, msg.height)
        except ValueError as exc:
            self._warn_once("info", f"{self.params['depth_info_topic']}: {exc}")

    def _due(self, t: float) -> bool:
        if t - self._last < 1.0 / self.params["rate_hz"] - 1e-3:
            return False
        self._last = t
        return True

    def _on_depth(self, msg: Image) -> None:
        if self._ls.hold("depth", msg.header.stamp, msg):
            return
        t = self._now()
        if self._k is None or not self._due(t):
            return
        if msg.encoding not in ("16UC1", "32FC1"):
            self._warn_once("enc", f"{self.params['depth_topic']}: encoding {msg.encoding!r}; expected 16UC1 (mm) or 32FC1 (m)")
            return
        depth = image_array(msg).astype(np.float32) * (0.001 if msg.encoding == "16UC1" else 1.0)
        if t - self._cloud_t > 0.5:
            self.core.cloud = None  # a stale LiDAR scan must not keep people alive
        self._process(t, depth, msg.header.stamp)

    def _on_cloud(self, msg: PointCloud2) -> None:
        p = self.params
        try:
            a = decode_cloud(msg)
        except ValueError as exc:
            self._warn_once("cloud", f"{p['lidar_topic']}: {exc}; cloud not used")
            return
        self.core.cloud = lidar_points(a, self.lidar, p["lidar_min_range_m"], p["lidar_max_range_m"])
        t = self._now()
        self._cloud_t = t
        if not p["depth_topic"] and self._due(t):  # LiDAR-only robot: the cloud drives the output
            self._process(t, None, msg.header.stamp)

    def _process(self, t: float, depth: np.ndarray | None, stamp: Any) -> None:
        # the frame is placed where the robot was at its capture stamp (mid-turn, its arrival is
        # degrees later); tracks go out in that base_link with that stamp, for motion_node to move
        at = self.poses.at(self._stamp_time(stamp, t, "frame")) or self._pose
        if at is not None:
            self.core.set_pose(at)
        with self._lock:
            tracks = self.core.step(t, None, depth, self._k if depth is not None else None, self.mount)
            self.frames += 1
        pa = PoseArray()
        pa.header.stamp = stamp
        pa.header.frame_id = BASE_FRAME
        for tr in tracks:
            ps = Pose()
            ps.position.x, ps.position.y = float(tr.x), float(tr.y)
            yaw = math.atan2(tr.vy, tr.vx) if (tr.vx or tr.vy) else 0.0
            ps.orientation.z, ps.orientation.w = math.sin(yaw / 2.0), math.cos(yaw / 2.0)
            pa.poses.append(ps)
        self.people_pub.publish(pa)
        self.tracks_pub.publish(encode_tracks([(tr.x, tr.y, tr.vx, tr.vy, tr.track_id) for tr in tracks], BASE_FRAME, stamp))
        self._out_ns = stamp_ns(stamp.sec, stamp.nanosec)

    def safe_stop(self) -> None:
        """Nothing moves here; publishes nothing more (leaves the lockstep). Never raises."""
        self._ls.close()


NODE_CLASS = PeopleNode


def main() -> None:
    """Console entry point ``people_node``."""
    sys.exit(run_node(PeopleNode))
