"""people_node over ROS: a synthetic aligned depth image with one person-shaped block in,
``havln/people`` (PoseArray) and ``havln/people_tracks`` (PointCloud2 x, y, vx, vy, id) out; and
motion_node reading the tracks (velocities) from that topic. Cost: about 3 s."""

from __future__ import annotations

import math
import time

import numpy as np
from geometry_msgs.msg import PoseArray
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rosspin import spin_until
from sensor_msgs.msg import CameraInfo, Image, PointCloud2

from havln_robot.motion.lidar import LidarMount
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.nodes.motion_node import MotionNode
from havln_robot.nodes.people_node import PeopleNode
from havln_robot.perception.params import PEOPLE_PARAMS
from havln_robot.ros.codec import decode_tracks, encode_tracks, image_msg

W, H, F = 160, 120, 100.0
CAM_Z = 0.4125


def person_depth(z_m: float = 2.5, width_m: float = 0.5, height_m: float = 1.7) -> np.ndarray:
    """16UC1 depth (mm) of a level camera at CAM_Z seeing one flat body ``z_m`` ahead (nothing else)."""
    d = np.zeros((H, W), np.uint16)
    cx, cy = (W - 1) / 2, (H - 1) / 2
    v0 = max(0, int(cy - F * (height_m - CAM_Z) / z_m))
    v1 = min(H - 1, int(cy + F * CAM_Z / z_m))
    half = int(F * width_m / 2 / z_m)
    d[v0 : v1 + 1, int(cx) - half : int(cx) + half + 1] = int(z_m * 1000)
    return d


class Camera(Node):
    def __init__(self, context):
        super().__init__("fake_camera", context=context)
        self.depth_pub = self.create_publisher(Image, "camera/aligned_depth_to_color/image_raw", 2)
        self.info_pub = self.create_publisher(CameraInfo, "camera/aligned_depth_to_color/camera_info", 2)
        self.odom_pub = self.create_publisher(Odometry, "odom", 10)
        self.people: list[PoseArray] = []
        self.tracks: list[PointCloud2] = []
        self.create_subscription(PoseArray, "havln/people", self.people.append, 10)
        self.create_subscription(PointCloud2, "havln/people_tracks", self.tracks.append, 10)
        self.create_timer(0.05, self._tick)

    def _tick(self):
        stamp = self.get_clock().now().to_msg()
        info = CameraInfo()
        info.width, info.height = W, H
        info.k = [F, 0.0, (W - 1) / 2, 0.0, F, (H - 1) / 2, 0.0, 0.0, 1.0]
        self.info_pub.publish(info)
        od = Odometry()
        od.header.stamp = stamp
        od.pose.pose.orientation.w = 1.0
        self.odom_pub.publish(od)
        self.depth_pub.publish(image_msg(person_depth(), "16UC1", "camera_color_optical_frame", stamp))


def _spin(ex, cond, timeout=10.0):
    return spin_until(ex, cond, timeout, step=0.01)


def test_people_node_publishes_tracked_people_from_depth_alone(ros_context):
    node = PeopleNode(params={**PEOPLE_PARAMS.defaults(), "camera_z_m": CAM_Z, "camera_x_m": 0.3}, context=ros_context)
    cam = Camera(ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    ex.add_node(cam)
    try:
        assert _spin(ex, lambda: any(len(m.poses) == 1 for m in cam.people) and any(m.width == 1 for m in cam.tracks)), (
            f"no person published ({len(cam.people)} PoseArray, {len(cam.tracks)} tracks messages)"
        )
        pa = next(m for m in cam.people if len(m.poses) == 1)
        assert pa.header.frame_id == "base_link"
        x, y = pa.poses[0].position.x, pa.poses[0].position.y
        assert abs(x - (0.3 + 2.5 + 0.2)) < 0.2 and abs(y) < 0.15  # camera offset + range + half a body
        tr = decode_tracks(next(m for m in cam.tracks if m.width == 1))
        assert int(tr["id"][0]) >= 1 and abs(float(tr["vx"][0])) < 0.2  # a standing person
        # >= 10 Hz: count outputs over one second of wall time
        n0, t0 = len(cam.tracks), time.monotonic()
        _spin(ex, lambda: time.monotonic() - t0 > 1.0, 2.0)
        assert len(cam.tracks) - n0 >= 8  # rate_hz 15 on a 20 Hz camera; slack for a loaded machine
    finally:
        ex.shutdown()
        node.destroy_node()
        cam.destroy_node()


def test_motion_node_takes_velocities_from_people_tracks(ros_context):
    node = MotionNode(params={**MOTION_PARAMS.defaults(), "require_depth": False}, context=ros_context)
    pub_node = Node("tracks_pub", context=ros_context)
    pub = pub_node.create_publisher(PointCloud2, "havln/people_tracks", 5)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    ex.add_node(pub_node)
    try:

        def send():
            pub.publish(encode_tracks([(1.0, 1.0, 0.0, -1.0, 12)], "base_link", pub_node.get_clock().now().to_msg()))
            return bool(node.people.tracks[0])

        end = time.monotonic() + 10
        while time.monotonic() < end and not send():
            ex.spin_once(timeout_sec=0.05)
        people = node.core.obstacles(node._now()).people
        assert len(people) == 1 and people[0].human_id == 12 and people[0].vy == -1.0
    finally:
        ex.shutdown()
        node.destroy_node()
        pub_node.destroy_node()


def _cloud_msg(xyz: np.ndarray, stamp) -> PointCloud2:
    """A PointCloud2 with x, y, z float32 and a padding intensity field (as LiDAR drivers publish)."""
    from sensor_msgs.msg import PointField

    dt = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4")])
    a = np.zeros(len(xyz), dtype=dt)
    a["x"], a["y"], a["z"] = xyz[:, 0], xyz[:, 1], xyz[:, 2]
    m = PointCloud2()
    m.header.stamp, m.header.frame_id = stamp, "livox_frame"
    m.height, m.width = 1, len(a)
    m.fields = [PointField(name=n, offset=dt.fields[n][1], datatype=PointField.FLOAT32, count=1) for n in dt.names]
    m.point_step, m.row_step, m.is_dense = dt.itemsize, dt.itemsize * len(a), True
    m.data = a.tobytes()
    return m


def test_people_node_lidar_only_sees_a_person_behind_the_robot(ros_context):
    """A LiDAR-only people_node (depth_topic ''): a person 2 m behind the robot -- where the camera
    is blind -- is published from the cloud where they stand. The LiDAR is mounted as a Go2's L1 is
    (0.28 m ahead, 0.30 m up, pitched 15 deg down, turned 10 deg left) and its cloud comes in the
    sensor's own frame, so the node must apply the whole mount, pitch and yaw included."""
    rng = np.random.default_rng(0)
    ang = rng.uniform(-np.pi / 2, np.pi / 2, 800)  # the half of the body facing the LiDAR (+x side of it)
    body = np.stack([-2.0 + 0.25 * np.cos(ang), 0.25 * np.sin(ang), rng.uniform(0.05, 1.7, 800)], axis=1)
    floor = np.stack([rng.uniform(-4, 4, 3000), rng.uniform(-4, 4, 3000), np.zeros(3000)], axis=1)
    mount = LidarMount(0.28, 0.0, 0.30, math.radians(-15.0), math.radians(10.0))
    sensor = mount.from_ground(np.concatenate([body, floor]))  # what the LiDAR publishes
    params = {**PEOPLE_PARAMS.defaults(), "depth_topic": "", "lidar_topic": "livox/lidar"}
    params.update(lidar_x_m=0.28, lidar_z_m=0.30, lidar_pitch_deg=-15.0, lidar_yaw_deg=10.0)
    node = PeopleNode(params=params, context=ros_context)
    cam = Camera(ros_context)  # only its odom and its people/tracks subscriptions matter here
    pub = cam.create_publisher(PointCloud2, "livox/lidar", 2)
    cam.create_timer(0.05, lambda: pub.publish(_cloud_msg(sensor, cam.get_clock().now().to_msg())))
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    ex.add_node(cam)
    try:
        assert _spin(ex, lambda: any(len(m.poses) == 1 for m in cam.people)), "no person from the LiDAR cloud"
        p = next(m for m in cam.people if len(m.poses) == 1).poses[0].position
        assert abs(p.x - (-2.0)) < 0.2 and abs(p.y) < 0.2
    finally:
        ex.shutdown()
        node.destroy_node()
        cam.destroy_node()


def test_sim_node_people_source_detected_moves_the_truth_off_havln_people(ros_context):
    """sim_node with people_source 'detected' (the sim profile's setting) publishes the true people on
    havln/people_truth and nothing on havln/people, which people_node owns; bringup does not start
    people_node when sim_node keeps the truth on havln/people."""
    from havln_robot import config
    from havln_robot.bringup import Bringup
    from havln_robot.nodes.sim_node import SimNode
    from havln_robot.paths import config_dir
    from havln_robot.sim.params import SIM_NODE_PARAMS

    params = {**SIM_NODE_PARAMS.defaults(), "scene_source": "builtin", "camera_enabled": False, "people_source": "detected"}
    sim = SimNode(params=params, context=ros_context)
    probe = Node("people_probe", context=ros_context)
    got: dict[str, int] = {"havln/people": 0, "havln/people_truth": 0}
    for t in got:
        probe.create_subscription(PoseArray, t, lambda m, t=t: got.__setitem__(t, got[t] + 1), 10)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(sim)
    ex.add_node(probe)
    try:
        assert _spin(ex, lambda: got["havln/people_truth"] >= 3, 20.0), got
        assert got["havln/people"] == 0
    finally:
        ex.shutdown()
        sim.destroy_node()
        probe.destroy_node()
    prof = config.load_profile(config_dir() / "sim.yaml", {"sim_node": {"people_source": "ground_truth"}})
    assert "people_node" in prof.nodes  # the profile lists it ...
    lines: list[str] = []
    b = Bringup(config.Profile(prof.path, {k: prof.nodes[k] for k in ("sim_node", "people_node")}), log=lines.append, check_graph=False)
    b.profile.nodes["sim_node"].update(scene_source="builtin", camera_enabled=False)
    b.start()
    try:
        assert "people_node" not in b.nodes and "sim_node" in b.nodes  # ... bringup leaves it out
        assert any("people_node not started" in ln for ln in lines)
    finally:
        b.shutdown()


def test_people_node_places_a_frame_at_its_capture_pose(ros_context):
    """Odometry says the robot turned 20 deg left in
    the 0.2 s since a depth frame was captured. The person straight ahead in that frame is tracked
    in odom straight along x (where they stand), and published in the base_link of the capture,
    with the capture stamp. Before, the frame was placed at the newest odometry: the track was
    20 deg off in odom, and jumped whenever the robot turned."""
    from builtin_interfaces.msg import Time

    node = PeopleNode(params={**PEOPLE_PARAMS.defaults(), "camera_z_m": CAM_Z, "camera_x_m": 0.3, "rate_hz": 4.0}, context=ros_context)
    try:
        info = CameraInfo()
        info.width, info.height = W, H
        info.k = [F, 0.0, (W - 1) / 2, 0.0, F, (H - 1) / 2, 0.0, 0.0, 1.0]
        node._on_info(info)

        def stamp(t):
            return Time(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))

        for _ in range(4):  # four frames, each captured at yaw 0 and received 0.2 s later, at yaw 20 deg
            t0 = node._now()
            time.sleep(0.26)  # 0.2 s of turn, and rate_hz 4 lets every frame through
            for i in range(21):
                od = Odometry()
                od.header.stamp = stamp(t0 + i * 0.01)
                yaw = math.radians(i)
                od.pose.pose.orientation.z, od.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
                node._on_odom(od)
            node._on_depth(image_msg(person_depth(), "16UC1", "camera_color_optical_frame", stamp(t0)))
        kf = node.core.tracker._tracks
        assert kf, "no track after four frames"
        ox, oy = (float(v) for v in kf[0].kf.x[:2])
        assert abs(ox - 3.0) < 0.2 and abs(oy) < 0.15, (ox, oy)  # in odom where the person stands (camera 0.3 + 2.5 m + half a body)
        assert abs(node.core.tracker._pose[2]) < math.radians(1.0)  # output in the base_link of the capture
    finally:
        node.destroy_node()


def test_people_node_drops_non_finite_odometry(ros_context):
    """people_node crashed on one NaN odometry message (the tracker's assignment on NaN costs); the
    message is now dropped with a warning, the last finite pose stays and frames keep being tracked."""
    node = PeopleNode(params={**PEOPLE_PARAMS.defaults(), "camera_z_m": CAM_Z, "camera_x_m": 0.3, "rate_hz": 60.0}, context=ros_context)
    try:
        info = CameraInfo()
        info.width, info.height = W, H
        info.k = [F, 0.0, (W - 1) / 2, 0.0, F, (H - 1) / 2, 0.0, 0.0, 1.0]
        node._on_info(info)
        od = Odometry()
        od.header.stamp = node.get_clock().now().to_msg()
        od.pose.pose.orientation.w = 1.0
        node._on_odom(od)
        for _ in range(3):
            node._on_depth(image_msg(person_depth(), "16UC1", "camera_color_optical_frame", node.get_clock().now().to_msg()))
            time.sleep(0.03)
        bad = Odometry()
        bad.header.stamp = node.get_clock().now().to_msg()
        bad.pose.pose.position.x = math.nan
        bad.pose.pose.orientation.w = 1.0
        node._on_odom(bad)
        assert node._pose == (0.0, 0.0, 0.0)
        for _ in range(3):
            time.sleep(0.03)
            node._on_depth(image_msg(person_depth(), "16UC1", "camera_color_optical_frame", node.get_clock().now().to_msg()))
        kf = node.core.tracker._tracks
        assert kf and all(math.isfinite(float(v)) for v in kf[0].kf.x)
    finally:
        node.destroy_node()
