"""sim_node over ROS: topics, encodings, frames, cmd_vel driving, reset, safe stop, episode selection."""

from __future__ import annotations

import math
import time

import pytest
import rosspin

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseArray, Twist  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, Imu  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from havln_robot import topics  # noqa: E402
from havln_robot.nodes.sim_node import SimNode  # noqa: E402
from havln_robot.params import ConfigError  # noqa: E402
from havln_robot.records import SCHEMA_KEY  # noqa: E402
from havln_robot.ros.codec import image_array, status_dict, status_msg  # noqa: E402
from havln_robot.sim.params import SIM_NODE_PARAMS  # noqa: E402

TOPICS = {
    "color": (Image, topics.COLOR_IMAGE),
    "depth": (Image, topics.DEPTH_IMAGE),
    "color_info": (CameraInfo, topics.COLOR_INFO),
    "depth_info": (CameraInfo, topics.DEPTH_INFO),
    "odom": (Odometry, topics.ODOM),
    "imu": (Imu, topics.IMU),
    "clock": (Clock, topics.CLOCK),
    "humans": (PoseArray, topics.HUMANS),
    "people": (PoseArray, topics.PEOPLE),
    "gt": (DiagnosticStatus, topics.GROUND_TRUTH),
}


class Probe:
    """A node that records the last message and count of every sim_node topic and can drive cmd_vel."""

    def __init__(self, ctx, sim: SimNode):
        import rclpy

        self.node = rclpy.create_node("probe", context=ctx)
        self.last: dict = {}
        self.count: dict = {k: 0 for k in TOPICS}
        for key, (typ, name) in TOPICS.items():
            self.node.create_subscription(typ, name, self._cb(key), 10)
        self.cmd = self.node.create_publisher(Twist, topics.CMD_VEL, 10)
        self.result = self.node.create_publisher(DiagnosticStatus, topics.ACTION_RESULT, 10)
        self.reset = self.node.create_client(Trigger, "sim/reset")
        self.ex = SingleThreadedExecutor(context=ctx)
        self.ex.add_node(sim)
        self.ex.add_node(self.node)
        self.sim = sim

    def _cb(self, key):
        def f(msg):
            self.last[key] = msg
            self.count[key] += 1

        return f

    def spin(self, seconds: float, v: float | None = None, w: float = 0.0) -> None:
        t_end = time.monotonic() + seconds
        next_cmd = 0.0
        while time.monotonic() < t_end:
            if v is not None and time.monotonic() >= next_cmd:
                m = Twist()
                m.linear.x, m.angular.z = v, w
                self.cmd.publish(m)
                next_cmd = time.monotonic() + 0.05
            self.ex.spin_once(timeout_sec=0.01)

    def drive(self, sim_seconds: float, v: float = 0.0, w: float = 0.0, timeout: float = 60.0) -> None:
        """Command (v, w) until ``sim_seconds`` of SIM time have passed (wall time varies with load)."""
        t_end = self.sim.sim_time + sim_seconds
        t_wall = time.monotonic() + timeout
        next_cmd = 0.0
        while self.sim.sim_time < t_end:
            assert time.monotonic() < t_wall, f"sim time stalled at {self.sim.sim_time:.2f} s"
            if time.monotonic() >= next_cmd:
                m = Twist()
                m.linear.x, m.angular.z = v, w
                self.cmd.publish(m)
                next_cmd = time.monotonic() + 0.05
            self.ex.spin_once(timeout_sec=0.01)
        self.spin(0.05, v=v, w=w)  # deliver the messages of the last tick

    def spin_until(self, cond, timeout: float = 10.0) -> bool:
        """Spin until ``cond()`` holds (True) or ``timeout`` wall seconds pass (False)."""
        return rosspin.spin_until(self.ex, cond, timeout, step=0.01)

    def wait_for(self, keys, timeout: float = 10.0) -> None:
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end and not all(k in self.last for k in keys):
            self.ex.spin_once(timeout_sec=0.02)
        missing = [k for k in keys if k not in self.last]
        assert not missing, f"no message on {missing}"

    def close(self) -> None:
        self.sim.safe_stop()
        self.sim.destroy_node()
        self.node.destroy_node()


def _params(**kw):
    base = {"scene_source": "builtin", "camera_width": 320, "camera_height": 240, "camera_rate_hz": 10.0}
    return SIM_NODE_PARAMS.validate({**base, **kw})


def test_sim_node_topics_drive_reset(ros_context):
    sim = SimNode(params=_params(noise_enabled=False), context=ros_context)
    probe = Probe(ros_context, sim)
    try:
        probe.wait_for(list(TOPICS))
        L = probe.last
        # camera: realsense-ros encodings, one optical frame, aligned sizes, D435i-like intrinsics
        assert (L["color"].encoding, L["depth"].encoding) == ("rgb8", "16UC1")
        for k in ("color", "depth", "color_info", "depth_info"):
            assert L[k].header.frame_id == topics.COLOR_OPTICAL_FRAME
        assert (L["color"].width, L["color"].height) == (320, 240) == (L["depth"].width, L["depth"].height)
        info = L["color_info"]
        assert info.distortion_model == "plumb_bob" and list(info.d) == [0.0] * 5
        fx = 160 / math.tan(math.radians(69.4 / 2))
        assert list(info.k) == pytest.approx([fx, 0, 159.5, 0, fx, 119.5, 0, 0, 1])
        assert list(L["depth_info"].k) == list(info.k)
        depth = image_array(L["depth"])
        assert depth.shape == (240, 320) and (depth > 0).mean() > 0.9 and depth.max() <= 10000
        assert image_array(L["color"]).shape == (240, 320, 3)
        # base: frames as the Go2 driver publishes them
        assert (L["odom"].header.frame_id, L["odom"].child_frame_id) == (topics.ODOM_FRAME, topics.BASE_FRAME)
        assert L["imu"].header.frame_id == topics.IMU_FRAME
        assert L["humans"].header.frame_id == topics.MAP_FRAME and len(L["humans"].poses) == len(sim.session.crowd)
        assert L["people"].header.frame_id == topics.BASE_FRAME
        gt = status_dict(L["gt"])
        assert tuple(gt) == (*topics.GROUND_TRUTH_KEYS, SCHEMA_KEY) and gt["episode_id"] == "builtin-1"
        t0 = L["clock"].clock.sec + L["clock"].clock.nanosec * 1e-9

        # drive forward 0.4 m/s, turning 0.3 rad/s, for 1.5 s: odom and gyro follow the command
        probe.drive(1.5, v=0.4, w=0.3)
        o, im = probe.last["odom"], probe.last["imu"]
        assert o.twist.twist.linear.x == pytest.approx(0.4, abs=0.02)
        assert im.angular_velocity.z == pytest.approx(0.3, abs=0.02)
        assert o.pose.pose.position.x > 0.2 and o.pose.covariance[0] > 0
        gt = status_dict(probe.last["gt"])
        assert float(gt["path_length_m"]) > 0.2
        t1 = probe.last["clock"].clock.sec + probe.last["clock"].clock.nanosec * 1e-9
        assert t1 > t0
        # stamps are sim time
        assert abs(o.header.stamp.sec + o.header.stamp.nanosec * 1e-9 - t1) < 0.5

        # safe_stop zeroes the command at once
        sim.safe_stop()
        assert sim.session.base.target == (0.0, 0.0, 0.0)
        t_stop = sim.sim_time
        # at rest within 0.6 s of SIM time (wall time varies with the machine's load)
        assert probe.spin_until(lambda: abs(probe.last["odom"].twist.twist.linear.x) < 1e-6, timeout=20.0), "never came to rest"
        stamp = probe.last["odom"].header.stamp
        assert stamp.sec + stamp.nanosec * 1e-9 - t_stop <= 0.6

        # LOOK_UP through motion_node's action result: the sim renders the virtual pitch
        probe.result.publish(status_msg("LOOK_UP", "ok", {"seq": 1, "action": "LOOK_UP", "outcome": "ok", "pitch_deg": 30.0}))
        assert probe.spin_until(lambda: sim.session.camera_pitch == pytest.approx(math.radians(30.0)))

        # sim/reset puts the robot back at the start; sim time keeps going forward
        assert probe.reset.wait_for_service(timeout_sec=5.0)
        fut = probe.reset.call_async(Trigger.Request())
        t_end = time.monotonic() + 5.0
        while not fut.done() and time.monotonic() < t_end:
            probe.ex.spin_once(timeout_sec=0.02)
        assert fut.result().success, fut.result().message
        start = sim.session.episode.start_position
        x, y, _, _ = sim.session.world.pose
        assert (x, y) == pytest.approx(start[:2])
        assert sim.session.world.path_length == 0.0 and sim.session.camera_pitch == 0.0
        clock_s = lambda: probe.last["clock"].clock.sec + probe.last["clock"].clock.nanosec * 1e-9  # noqa: E731
        assert probe.spin_until(lambda: clock_s() > t1), "sim time went backwards after sim/reset"
        assert sim.camera_error is None
    finally:
        probe.close()


def test_sim_node_collision_counts_and_body_stops(ros_context):
    # builtin start faces +x along the hallway; drive at the living-room wall behind (yaw pi) until contact
    sim = SimNode(params=_params(camera_enabled=False, noise_enabled=False, max_linear_speed=1.0), context=ros_context)
    probe = Probe(ros_context, sim)
    try:
        probe.wait_for(["odom", "gt"])
        probe.drive(2.2, v=0.0, w=1.5)  # turn round (~pi)
        probe.drive(4.0, v=1.0)
        gt = status_dict(probe.last["gt"])
        assert int(gt["collisions_static"]) >= 1
        x, y, z, _ = sim.session.world.pose
        assert sim.session.scene.is_free(x, y, z, sim.session.world.robot_radius - 0.01)
        assert abs(probe.last["odom"].twist.twist.linear.x) < 0.05  # stopped at the wall
    finally:
        probe.close()


def test_missing_data_falls_back_to_builtin_or_fails_clearly(ros_context, tmp_path):
    missing = str(tmp_path / "nope.json")
    sim = SimNode(params=_params(scene_source="auto", episodes_file=missing, camera_enabled=False), context=ros_context)
    try:
        assert sim.session.scene.name == "builtin"
    finally:
        sim.destroy_node()
    with pytest.raises(ConfigError, match=r"episodes_file: .*nope.json: not found"):
        SimNode(params=_params(scene_source="episodes", episodes_file=missing, camera_enabled=False), context=ros_context)


def test_sim_node_runs_a_real_episode(ros_context, havln_data):
    p = _params(scene_source="episodes", episode_index=3, camera_width=160, camera_height=120)
    sim = SimNode(params=p, context=ros_context)
    probe = Probe(ros_context, sim)
    try:
        probe.wait_for(["color", "depth", "gt", "humans"])
        gt = status_dict(probe.last["gt"])
        ep = sim.session.episode
        assert gt["scan"] == ep.scan and gt["episode_id"] == ep.episode_id
        # NE is the walkable distance (at the start: along the graph); the straight line is reported beside it
        assert float(gt["distance_to_goal_euclid_m"]) == pytest.approx(math.dist(ep.start_position, ep.goal_position), abs=0.05)
        assert float(gt["distance_to_goal_m"]) >= float(gt["distance_to_goal_euclid_m"]) - 1e-3 and gt["goal_unreachable"] == "false"
        assert len(probe.last["humans"].poses) == len(ep.humans)
        assert (image_array(probe.last["depth"]) > 0).mean() > 0.8
        # switch episodes live: set the parameter, call sim/reset; the camera follows the new scene
        from rclpy.parameter import Parameter

        sim.set_parameters([Parameter("episode_index", Parameter.Type.INTEGER, 40)])
        fut = probe.reset.call_async(Trigger.Request())
        t_end = time.monotonic() + 15.0
        while not fut.done() and time.monotonic() < t_end:
            probe.ex.spin_once(timeout_sec=0.02)
        assert fut.result().success, fut.result().message
        assert sim.session.episode.episode_id != ep.episode_id
        new_id = sim.session.episode.episode_id
        t_end = time.monotonic() + 10.0
        while time.monotonic() < t_end:  # records published just before the reset may still be queued
            probe.last.clear()
            probe.wait_for(["color", "gt"])
            if status_dict(probe.last["gt"])["episode_id"] == new_id:
                break
        assert status_dict(probe.last["gt"])["episode_id"] == new_id
        assert sim.camera_error is None
    finally:
        probe.close()
    with pytest.raises(ConfigError, match="episode_index"):
        SimNode(params=_params(scene_source="episodes", episode_index=100000, camera_enabled=False), context=ros_context)


def test_optical_frame_rotation():
    import numpy as np

    from havln_robot.geometry import optical_quat as _optical_quat

    def mat(q):
        x, y, z, w = q
        return np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ]
        )

    r = mat(_optical_quat(0.0))  # columns: optical x, y, z in base_link
    assert np.allclose(r[:, 2], [1, 0, 0], atol=1e-9)  # z forward
    assert np.allclose(r[:, 0], [0, -1, 0], atol=1e-9)  # x right
    assert np.allclose(r[:, 1], [0, 0, -1], atol=1e-9)  # y down
    look_up = math.radians(30)
    r = mat(_optical_quat(-look_up))  # body pitch -30 deg (REP 103) = camera looking 30 deg up
    assert np.allclose(r[:, 2], [math.cos(look_up), 0, math.sin(look_up)], atol=1e-9)


def test_sim_node_renders_a_scan_mesh(ros_context, tmp_path):
    """sim_node with scenes_dir: the camera shows the scan mesh: the red box of the
    synthetic house at its projected pixel, depth from the mesh. Cost ~10 s (scene build, renderer)."""
    import json

    import numpy as np

    from havln_robot.sim.robot import GO2_CAMERA_FORWARD_M, GO2_CAMERA_HEIGHT_M
    from havln_robot.sim.synthetic_mesh import TEST_OBJECT, TEST_VIEWPOINTS, project, write_test_scene

    _glb, conn = write_test_scene(tmp_path, "synth_house")
    x, y, z = TEST_VIEWPOINTS["A2"]
    c = TEST_OBJECT.centre
    yaw = math.atan2(c[1] - y, c[0] - x)  # start at A2 facing the red box
    eps = tmp_path / "eps.json"
    eps.write_text(
        json.dumps([{"path_id": 1, "scan": "synth_house", "path": ["A2", "D"], "heading": math.pi / 2 - yaw, "instructions": ["go"]}])
    )
    p = _params(scene_source="episodes", episodes_file=str(eps), connectivity_dir=str(conn), scenes_dir=str(tmp_path), noise_enabled=False)
    sim = SimNode(params=p, context=ros_context)
    probe = Probe(ros_context, sim)
    try:
        assert type(sim.session.scene).__name__ == "MeshScene"
        probe.wait_for(["color", "depth", "color_info"], timeout=60.0)
        rgb = image_array(probe.last["color"])
        depth_mm = image_array(probe.last["depth"])
        from havln_robot.camera import Intrinsics

        k = Intrinsics.from_hfov(320, 240, 69.4)
        u, v, d = project(c, (x, y, z, yaw), k, GO2_CAMERA_HEIGHT_M, GO2_CAMERA_FORWARD_M)
        px = rgb[int(round(v)) - 1 : int(round(v)) + 2, int(round(u)) - 1 : int(round(u)) + 2].astype(int)
        assert (px[..., 0] > 150).all() and (px[..., 1] < 60).all() and (px[..., 2] < 60).all(), px
        # depth at that pixel: the box's near face, between its nearest corner and its centre
        near = d - 0.3 * math.sqrt(2)
        assert near - 0.05 <= depth_mm[int(round(v)), int(round(u))] / 1000.0 <= d
        assert np.count_nonzero(depth_mm) > 0.9 * depth_mm.size
        assert sim.camera_error is None
    finally:
        probe.close()
