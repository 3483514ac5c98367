"""motion_node over ROS: a fake base node integrates cmd_vel and publishes odom + imu; actions go
in on havln/action and results come back on havln/action_result."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import rosspin
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import Pose, PoseArray, Twist
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.serialization import serialize_message
from sensor_msgs.msg import CameraInfo, Image, Imu
from std_msgs.msg import String

from havln_robot.geometry import yaw_to_quat
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.motion.safety import Person
from havln_robot.nodes.motion_node import MotionNode
from havln_robot.params import ConfigError
from havln_robot.ros.codec import image_msg, status_dict


class FakeBase(Node):
    """Integrates cmd_vel (no latency) at 100 Hz; publishes odom and imu; optional depth wall."""

    def __init__(self, context):
        super().__init__("fake_base", context=context)
        self.x = self.y = self.th = 0.0
        self.cmd = (0.0, 0.0)
        self.cmds: list[tuple[float, float, float]] = []
        self.results: list[DiagnosticStatus] = []
        self.collisions: list[DiagnosticStatus] = []
        self.silent = False
        self.imu_orientation = True
        self.wall_m: float | None = None
        self.info_size: tuple[int, int, float] | None = None  # (width, height, fx) of the camera_info sent, else the image's
        self.people: list[tuple[float, float]] | None = None
        self.last = time.monotonic()
        self.odom_pub = self.create_publisher(Odometry, "odom", 10)
        self.imu_pub = self.create_publisher(Imu, "imu", 50)
        self.action_pub = self.create_publisher(String, "havln/action", 10)
        self.depth_pub = self.create_publisher(Image, "camera/aligned_depth_to_color/image_raw", 2)
        self.info_pub = self.create_publisher(CameraInfo, "camera/aligned_depth_to_color/camera_info", 2)
        self.people_pub = self.create_publisher(PoseArray, "havln/people", 5)
        self.color_pub = self.create_publisher(Image, "camera/color/image_raw", 2)
        self.create_subscription(Twist, "cmd_vel", self._on_cmd, 50)
        self.create_subscription(DiagnosticStatus, "havln/action_result", self.results.append, 50)
        self.create_subscription(DiagnosticStatus, "havln/collision", self.collisions.append, 50)
        self.create_timer(0.01, self._step)
        self.create_timer(0.1, self._sensors)

    def _on_cmd(self, msg):
        self.cmd = (msg.linear.x, msg.angular.z)
        self.cmds.append((time.monotonic(), msg.linear.x, msg.angular.z))

    def _step(self):
        now = time.monotonic()
        dt, self.last = now - self.last, now
        self.x += self.cmd[0] * math.cos(self.th) * dt
        self.y += self.cmd[0] * math.sin(self.th) * dt
        self.th += self.cmd[1] * dt
        if self.silent:
            return
        stamp = self.get_clock().now().to_msg()
        od = Odometry()
        od.header.stamp = stamp
        od.header.frame_id, od.child_frame_id = "odom", "base_link"
        od.pose.pose.position.x, od.pose.pose.position.y = self.x, self.y
        q = yaw_to_quat(self.th)
        o = od.pose.pose.orientation
        o.x, o.y, o.z, o.w = q
        od.twist.twist.linear.x, od.twist.twist.angular.z = self.cmd
        self.odom_pub.publish(od)
        im = Imu()
        im.header.stamp = stamp
        im.angular_velocity.z = self.cmd[1]
        if self.imu_orientation:
            im.orientation.x, im.orientation.y, im.orientation.z, im.orientation.w = q
        else:  # REP 145: no orientation estimate
            im.orientation_covariance[0] = -1.0
        im.linear_acceleration.z = 9.81
        self.imu_pub.publish(im)

    def _sensors(self):
        stamp = self.get_clock().now().to_msg()
        if self.wall_m is not None:
            w, h, f = 160, 120, 100.0
            info = CameraInfo()
            iw, ih, fi = self.info_size or (w, h, f)
            info.width, info.height = iw, ih
            info.k = [fi, 0.0, (iw - 1) / 2, 0.0, fi, (ih - 1) / 2, 0.0, 0.0, 1.0]
            self.info_pub.publish(info)
            depth = np.full((h, w), int(self.wall_m * 1000), np.uint16)
            self.depth_pub.publish(image_msg(depth, "16UC1", "camera_color_optical_frame", stamp))
            self.color_pub.publish(image_msg(np.zeros((h, w, 3), np.uint8), "rgb8", "camera_color_optical_frame", stamp))
        if self.people is not None:
            pa = PoseArray()
            pa.header.stamp, pa.header.frame_id = stamp, "base_link"
            for px, py in self.people:
                ps = Pose()
                ps.position.x, ps.position.y = px, py
                pa.poses.append(ps)
            self.people_pub.publish(pa)

    def send(self, action):
        self.action_pub.publish(String(data=action))


@pytest.fixture
def rig(ros_context):
    # The fake base and motion_node share one executor: on a loaded machine (the suite next to
    # CPU hogs) it can stall for longer than the robot's 0.3 s odom timeout; that timeout has its
    # own test (test_lost_odometry_aborts sets 0.2 s), the others are not about it.
    params = {
        **MOTION_PARAMS.defaults(),
        "require_depth": False,
        "sensor_timeout_s": 3.0,
        "timeout_margin_s": 10.0,
        "depth_timeout_s": 5.0,
        "people_timeout_s": 5.0,
    }
    made = []

    def make(**over):
        node = MotionNode(params={**params, **over}, context=ros_context)
        base = FakeBase(ros_context)
        ex = SingleThreadedExecutor(context=ros_context)
        ex.add_node(node)
        ex.add_node(base)
        made.append((ex, node, base))

        def spin_until(cond, timeout=8.0):
            return rosspin.spin_until(ex, cond, timeout, step=0.005)

        spin_until(lambda: node.count_subscribers("havln/action_result") > 0 and base.count_subscribers("havln/action") > 0, 5.0)
        assert spin_until(lambda: node.core.odom is not None and node.core.imu_t is not None, 10.0), "no odom/imu from the fake base"
        return node, base, spin_until

    yield make
    for ex, node, base in made:
        ex.shutdown()
        node.destroy_node()
        base.destroy_node()


def _result(msg):
    return msg.name, msg.message, status_dict(msg)


@pytest.mark.parametrize("imu_orientation", [True, False], ids=["imu-orientation", "gyro-only-imu"])
def test_move_forward_and_turn_over_ros(rig, imu_orientation):
    node, base, spin = rig()
    base.imu_orientation = imu_orientation
    base.send("MOVE_FORWARD")
    assert spin(lambda: len(base.results) >= 1)
    name, outcome, rec = _result(base.results[0])
    assert (name, outcome) == ("MOVE_FORWARD", "ok"), rec.get("detail")
    assert abs(float(rec["distance_odom_m"]) - 0.25) < 0.02
    assert abs(base.x - 0.25) < 0.03
    base.send("TURN_LEFT")
    assert spin(lambda: len(base.results) >= 2)
    name, outcome, rec = _result(base.results[1])
    assert (name, outcome) == ("TURN_LEFT", "ok"), rec.get("detail")
    assert abs(math.degrees(base.th) - 15.0) < 2.0
    assert abs(float(rec["yaw_imu_deg"]) - 15.0) < 1.0
    assert int(rec["seq"]) == 2
    base.send("LOOK_UP")
    assert spin(lambda: len(base.results) >= 3)
    name, outcome, rec = _result(base.results[2])
    assert (name, outcome) == ("LOOK_UP", "ok") and float(rec["pitch_deg"]) == pytest.approx(30.0)
    spin(lambda: False, 0.3)
    assert base.cmd == (0.0, 0.0)


def test_busy_rejection_and_stop_preemption(rig):
    node, base, spin = rig(max_linear_speed=0.1)  # a slow step, so STOP surely lands mid-way
    base.send("MOVE_FORWARD")
    assert spin(lambda: base.x > 0.02)
    base.send("TURN_LEFT")
    assert spin(lambda: len(base.results) >= 1)
    name, outcome, rec = _result(base.results[0])
    assert (name, outcome) == ("TURN_LEFT", "rejected") and "busy" in rec["detail"]
    t_stop = time.monotonic()
    base.send("STOP")
    assert spin(lambda: len(base.results) >= 3)
    assert [(m.name, m.message) for m in base.results[1:3]] == [("MOVE_FORWARD", "aborted"), ("STOP", "ok")]
    zero = [t for t, v, w in base.cmds if t >= t_stop and v == 0.0 and w == 0.0]
    assert zero and zero[0] - t_stop < 0.5
    x_stop = base.x
    spin(lambda: False, 0.4)
    assert base.x < 0.25 and abs(base.x - x_stop) < 0.01  # STOP holds zero velocity


def test_lost_odometry_aborts(rig):
    node, base, spin = rig(sensor_timeout_s=0.2)
    base.send("MOVE_FORWARD")
    assert spin(lambda: base.x > 0.03)
    base.silent = True
    assert spin(lambda: len(base.results) >= 1)
    name, outcome, rec = _result(base.results[0])
    assert (name, outcome) == ("MOVE_FORWARD", "aborted") and "silent" in rec["detail"]
    assert base.cmd == (0.0, 0.0)


def test_depth_wall_blocks_forward_and_is_logged(rig):
    node, base, spin = rig(require_depth=True, camera_z_m=0.35, min_partial_step_m=0.0)  # refuse, no partial step
    base.wall_m = 0.3  # 0.25 m ahead of the nose: inside the 0.25 m step + 0.10 m front margin
    assert spin(lambda: node._depth is not None and node.core.k is not None)
    base.send("MOVE_FORWARD")
    assert spin(lambda: len(base.results) >= 1)
    name, outcome, rec = _result(base.results[0])
    assert (name, outcome) == ("MOVE_FORWARD", "collision") and "blocked before start" in rec["detail"]
    assert spin(lambda: len(base.collisions) >= 1)
    col = status_dict(base.collisions[0])
    assert col["type"] == "static" and col["motion_state"] == "blocked" and col["source"] == "depth"
    assert abs(base.x) < 1e-6
    base.wall_m = 2.0
    seq0 = node.tracker.frames
    assert spin(lambda: node.tracker.frames >= seq0 + 2)  # a frame of the new scene has arrived
    base.send("MOVE_FORWARD")
    assert spin(lambda: len(base.results) >= 2)
    assert base.results[1].message == "ok"


@pytest.mark.parametrize("info_size", [(640, 480, 100.0), (160, 120, 1e-300)], ids=["another-images-info", "tiny-focal-length"])
def test_camera_info_not_describing_the_depth_image_refuses_over_ros(rig, info_size):
    """Before: camera_info of a 640x480 image for a 160x120 depth image (or fx = 1e-300) was taken
    as it came, the wall 0.3 m ahead was projected elsewhere and MOVE_FORWARD took its full step."""
    node, base, spin = rig(require_depth=True)
    base.wall_m, base.info_size = 0.3, info_size
    assert spin(lambda: node.tracker.frames >= 3)
    base.send("MOVE_FORWARD")
    assert spin(lambda: len(base.results) >= 1)
    name, outcome, rec = _result(base.results[0])
    assert (name, outcome) == ("MOVE_FORWARD", "aborted") and "require_depth" in rec["detail"], rec
    assert "image_raw" in rec["detail"] and abs(base.x) < 1e-6


def test_person_ahead_blocks_over_ros(rig):
    node, base, spin = rig()
    base.people = [(0.9, 0.05)]
    assert spin(lambda: len(node.people.people[0]) == 1)
    base.send("MOVE_FORWARD")
    assert spin(lambda: len(base.results) >= 1 and len(base.collisions) >= 1)
    assert base.results[0].message == "collision"
    col = status_dict(base.collisions[0])
    assert col["type"] == "human" and col["human_id"] == ""


class PersonAhead:
    """A PersonDetector plug-in that always sees person 5 at 0.9 m straight ahead."""

    def __init__(self):
        self.calls = 0

    def detect(self, rgb, depth_m, k, mount):
        assert rgb.shape[2] == 3 and depth_m.dtype == np.float32
        return [Person(0.9, 0.0, 5)]


@pytest.fixture
def person_ahead_detector():
    from havln_robot.motion.safety import register_person_detector, unregister_person_detector

    register_person_detector("person_ahead", PersonAhead)
    yield "person_ahead"
    unregister_person_detector("person_ahead")


def test_in_process_person_detector(rig, person_ahead_detector):
    node, base, spin = rig(require_depth=True, person_detector=person_ahead_detector)
    base.wall_m = 3.0  # free corridor, so only the detector's person can block
    assert spin(lambda: node.core.color is not None and node._depth is not None and node.core.k is not None)
    base.send("MOVE_FORWARD")
    assert spin(lambda: len(base.results) >= 1 and len(base.collisions) >= 1)
    assert base.results[0].message == "collision"
    col = status_dict(base.collisions[0])
    assert col["type"] == "human" and col["human_id"] == "5" and col["source"] == "people"


def test_bad_person_detector_is_a_config_error(ros_context):
    with pytest.raises(ConfigError, match="person_detector"):
        MotionNode(params={**MOTION_PARAMS.defaults(), "person_detector": "no.such.module:Thing"}, context=ros_context)
    with pytest.raises(ConfigError, match="not a known detector.*depth_people_tracker"):
        MotionNode(params={**MOTION_PARAMS.defaults(), "person_detector": "os:getpid"}, context=ros_context)


def test_shipped_person_detector_by_name(ros_context):
    for name in ("depth_people_tracker", "havln_robot.perception.people:DepthPeopleTracker"):
        node = MotionNode(params={**MOTION_PARAMS.defaults(), "person_detector": name}, context=ros_context)
        try:
            assert type(node.core.detector).__name__ == "DepthPeopleTracker"
        finally:
            node.destroy_node()


class FrozenBase(FakeBase):
    """Keeps publishing odom/imu with fresh stamps, but the values freeze once ``frozen`` is set."""

    frozen = False

    def _step(self):
        if not self.frozen:
            return super()._step()
        now = time.monotonic()
        dt, self.last = now - self.last, now
        self.x += self.cmd[0] * math.cos(self.th) * dt  # the body still moves
        stamp = self.get_clock().now().to_msg()
        od, im = Odometry(), Imu()
        od.header.stamp = im.header.stamp = stamp
        od.header.frame_id, od.child_frame_id = "odom", "base_link"
        od.pose.pose.position.x = self.frozen_x
        od.pose.pose.orientation.w = 1.0
        im.orientation.w = 1.0
        im.linear_acceleration.z = 9.81
        self.odom_pub.publish(od)
        self.imu_pub.publish(im)


def test_frozen_odometry_under_command_aborts_not_a_blind_revert(ros_context):
    """Odom/imu still publishing but frozen while MOVE_FORWARD runs ->
    outcome aborted ("odom frozen"), zero command, no revert (before: stall after 0.6 s, then a
    blind revert)."""
    node = MotionNode(params={**MOTION_PARAMS.defaults(), "require_depth": False, "freeze_messages": 10}, context=ros_context)
    base = FrozenBase(ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    ex.add_node(base)

    def spin(cond, timeout=8.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.005)
            if cond():
                return True
        return False

    try:
        spin(lambda: node.count_subscribers("havln/action_result") > 0 and base.count_subscribers("havln/action") > 0, 5.0)
        assert spin(lambda: node.core.odom is not None and node.core.imu_t is not None, 10.0)
        base.send("MOVE_FORWARD")
        assert spin(lambda: base.x > 0.05)
        base.frozen_x, base.frozen = base.x, True
        t0 = time.monotonic()
        assert spin(lambda: len(base.results) >= 1)
        took = time.monotonic() - t0
        name, outcome, rec = _result(base.results[0])
        assert (name, outcome) == ("MOVE_FORWARD", "aborted") and "frozen" in rec["detail"], rec["detail"]
        assert took < 0.55, f"freeze detected after {took:.2f} s (the stall would take 0.6 s)"
        spin(lambda: False, 0.2)
        assert base.cmd == (0.0, 0.0) and not any(v < 0 for _, v, _ in base.cmds)  # never drove backwards
    finally:
        ex.shutdown()
        node.destroy_node()
        base.destroy_node()


def test_depth_is_placed_at_its_capture_stamp_not_its_arrival(ros_context):
    """Motion_node keeps the odometry it received and places a depth
    frame at the odom pose of the image's header stamp. The frame below was captured 0.2 s ago,
    before a 20 deg turn; its wall (straight ahead then) is 20 deg to the right now, and it is
    remembered straight along odom x. Before, both were placed as if captured now."""
    node = MotionNode(params={**MOTION_PARAMS.defaults(), "require_depth": False, "obstacle_memory_s": 5.0}, context=ros_context)
    try:
        now = node.get_clock().now().nanoseconds * 1e-9

        def stamp(t):
            from builtin_interfaces.msg import Time

            return Time(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))

        for i in range(21):  # odom at 100 Hz over the last 0.2 s, turning left 100 deg/s
            od = Odometry()
            od.header.stamp = stamp(now - 0.2 + i * 0.01)
            q = yaw_to_quat(math.radians(i))
            o = od.pose.pose.orientation
            o.x, o.y, o.z, o.w = q
            node._on_odom(od)
        w, h, f = 160, 120, 100.0
        info = CameraInfo()
        info.width, info.height = w, h
        info.k = [f, 0.0, (w - 1) / 2, 0.0, f, (h - 1) / 2, 0.0, 0.0, 1.0]
        node._on_info(info)
        node._on_depth(image_msg(np.full((h, w), 1000, np.uint16), "16UC1", "camera_color_optical_frame", stamp(now - 0.2)))
        obs = node.core.obstacles(node.get_clock().now().nanoseconds * 1e-9)
        assert obs.points is not None and len(obs.points)
        d = float(MOTION_PARAMS.defaults()["camera_x_m"]) + 1.0
        assert np.median(obs.points[:, 1]) == pytest.approx(-d * math.sin(math.radians(20.0)), abs=0.05)
        cells, _ = node.tracker.memory.cells(now, (0.0, 0.0, 0.0))
        assert np.median(cells[:, 1]) == pytest.approx(0.0, abs=0.05)
    finally:
        node.destroy_node()


def test_people_are_moved_from_their_capture_pose_into_the_current_base_link(ros_context):
    """The same kind for people: a PoseArray stamped 0.2 s ago, before a 20 deg left turn, holds a
    person 2 m straight ahead; motion_node checks them 20 deg to the right now (before: still
    straight ahead, so a person beside the path could be checked as if in it and the reverse)."""
    from builtin_interfaces.msg import Time

    node = MotionNode(params={**MOTION_PARAMS.defaults(), "require_depth": False}, context=ros_context)
    try:
        now = node.get_clock().now().nanoseconds * 1e-9

        def stamp(t):
            return Time(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))

        for i in range(21):
            od = Odometry()
            od.header.stamp = stamp(now - 0.2 + i * 0.01)
            o = od.pose.pose.orientation
            o.x, o.y, o.z, o.w = yaw_to_quat(math.radians(i))
            node._on_odom(od)
        pa = PoseArray()
        pa.header.stamp, pa.header.frame_id = stamp(now - 0.2), "base_link"
        ps = Pose()
        ps.position.x = 2.0
        pa.poses.append(ps)
        node._on_people_raw(serialize_message(pa))
        (p,) = node.core.obstacles(node.get_clock().now().nanoseconds * 1e-9).people
        assert p.x == pytest.approx(2.0 * math.cos(math.radians(20.0)), abs=0.02)
        assert p.y == pytest.approx(-2.0 * math.sin(math.radians(20.0)), abs=0.02)
    finally:
        node.destroy_node()


# --- non-finite / jumping sensor values --------------------------------------------------------------


class _Poisoned:
    """A publisher proxy that spoils the next ``count`` messages with ``spoil(msg)`` (count < 0: all)."""

    def __init__(self, pub, spoil):
        self.pub, self.spoil, self.count = pub, spoil, 0

    def publish(self, msg):
        if self.count != 0:
            self.spoil(msg)
            self.count -= 1
        self.pub.publish(msg)


def _nan_imu(msg):
    msg.orientation.z = math.nan
    msg.angular_velocity.z = math.nan


def _nan_odom(msg):
    msg.pose.pose.position.x = math.nan


@pytest.mark.parametrize("imu_orientation", [True, False], ids=["imu-orientation", "gyro-only-imu"])
def test_one_nan_imu_message_is_dropped(rig, imu_orientation):
    """One IMU message with orientation.z = angular_velocity.z = NaN used to make the gyro yaw NaN for
    good: the heading hold spun the robot at +w_max during MOVE_FORWARD and the next turn crashed
    the node (turn_hazard: ceil(nan)). Now the message is dropped with a warning; both actions end ok."""
    node, base, spin = rig()
    base.imu_orientation = imu_orientation
    base.imu_pub = _Poisoned(base.imu_pub, _nan_imu)
    base.send("MOVE_FORWARD")
    assert spin(lambda: base.x > 0.05)
    base.imu_pub.count = 1
    assert spin(lambda: len(base.results) >= 1)
    assert base.imu_pub.count == 0 and math.isfinite(node.core.gyro.yaw)
    name, outcome, rec = _result(base.results[0])
    assert (name, outcome) == ("MOVE_FORWARD", "ok"), rec.get("detail")
    assert abs(math.degrees(base.th)) < 2.0
    base.send("TURN_LEFT")
    assert spin(lambda: len(base.results) >= 2)
    name, outcome, rec = _result(base.results[1])
    assert (name, outcome) == ("TURN_LEFT", "ok"), rec.get("detail")
    assert abs(math.degrees(base.th) - 15.0) < 2.0


def test_persistent_nan_odometry_stops_the_robot_naming_the_sensor(rig):
    """Only NaN odometry from mid-step on used to end MOVE_FORWARD ``ok`` with distance_odom_m NaN (or
    drive it backwards blind on inf); it is now a silent sensor: aborted, zero command, the reason
    names the topic and the field."""
    node, base, spin = rig(sensor_timeout_s=2.0)  # long enough that a loaded machine is not silence
    base.odom_pub = _Poisoned(base.odom_pub, _nan_odom)
    base.send("MOVE_FORWARD")
    assert spin(lambda: base.x > 0.05)
    base.odom_pub.count = -1
    assert spin(lambda: len(base.results) >= 1)
    name, outcome, rec = _result(base.results[0])
    assert (name, outcome) == ("MOVE_FORWARD", "aborted"), rec.get("detail")
    assert "odom silent" in rec["detail"] and "pose.position.x = nan" in rec["detail"], rec["detail"]
    assert all(math.isfinite(float(rec[k])) for k in ("distance_odom_m", "position_error_m"))
    spin(lambda: False, 0.2)
    assert base.cmd == (0.0, 0.0) and base.x < 0.3


@pytest.mark.parametrize("offset", [2.0, -2.0])
def test_odometry_jump_over_ros_aborts(rig, offset):
    """An odometry reset mid-step (+2 m: used to drive back to x = -0.62; -2 m: 1.24 m forward)."""
    node, base, spin = rig()

    def shift(msg):
        msg.pose.pose.position.x += offset

    base.odom_pub = _Poisoned(base.odom_pub, shift)
    base.send("MOVE_FORWARD")
    assert spin(lambda: base.x > 0.05)
    base.odom_pub.count = -1
    assert spin(lambda: len(base.results) >= 1)
    name, outcome, rec = _result(base.results[0])
    assert (name, outcome) == ("MOVE_FORWARD", "aborted") and "odometry jumped" in rec["detail"], rec["detail"]
    spin(lambda: False, 0.2)
    assert base.cmd == (0.0, 0.0) and 0.0 < base.x < 0.3


def test_non_finite_people_and_tracks_are_dropped(ros_context):
    """A PoseArray / people-tracks message with a NaN position is dropped (the last finite one stays)."""
    from havln_robot.ros.codec import encode_tracks

    node = MotionNode(params={**MOTION_PARAMS.defaults(), "require_depth": False}, context=ros_context)
    try:
        stamp = node.get_clock().now().to_msg()
        pa = PoseArray()
        pa.header.stamp, pa.header.frame_id = stamp, "base_link"
        for x in (2.0, math.nan):
            ps = Pose()
            ps.position.x = x
            pa.poses.append(ps)
        node._on_people_raw(serialize_message(pa))
        assert node.people.people[0] == []
        node._on_tracks(encode_tracks([(1.0, 0.0, math.nan, 0.0, 3)], "base_link", stamp))
        assert node.people.tracks[0] == []
        node._on_tracks(encode_tracks([(1.0, 0.0, 0.1, 0.0, 3)], "base_link", stamp))
        assert [p.human_id for p in node.people.tracks[0]] == [3]
        assert {"people", "tracks"} - set(node.guard.non_finite) == {"tracks"}
    finally:
        node.destroy_node()
