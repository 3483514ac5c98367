"""sim_node's simulated LiDAR: a sweep ray cast on the model the camera renders, published as the
Go2's L1 publishes ``utlidar/cloud`` and taken by motion_node into its obstacle memory."""

from __future__ import annotations

import time

import numpy as np
import pytest

from havln_robot.motion.lidar import LidarMount

pytest.importorskip("mujoco")


def _sweep(crowd):
    from havln_robot.sim.render import Renderer, RenderError
    from havln_robot.sim.scene import Scene

    try:
        r = Renderer(Scene.builtin(), crowd, 160, 120)
    except RenderError as exc:
        pytest.skip(str(exc))
    mount = LidarMount(0.28, 0.0, 0.30, np.radians(-10.0), 0.0)
    try:
        xyz = r.lidar_cloud((-1.6, 0.0, 0.0, 0.0), mount, 0.0)
    finally:
        r.close()
    return mount.to_ground(xyz)


def test_the_sweep_sees_the_floor_and_a_person_standing_ahead():
    """From (-1.6, 0) in the builtin living room, looking +x: the floor lies at 0 m in the ground frame
    under base_link (the mount is applied both ways), and a person 1.5 m ahead is in the cloud only
    when they stand there."""
    from havln_robot.sim.humans import Crowd, SimHuman

    empty = _sweep(Crowd([]))
    person = _sweep(Crowd([SimHuman(0, "standing", (-0.1, 0.0, 0.0), (-0.1, 0.0, 0.0))]))
    ahead = empty[(empty[:, 0] > 0.3) & (empty[:, 0] < 1.2) & (np.abs(empty[:, 1]) < 0.4)]  # open floor
    assert len(ahead) > 20 and np.abs(ahead[:, 2]).max() < 0.02
    body = lambda g: g[(np.abs(g[:, 0] - 1.5) < 0.3) & (np.abs(g[:, 1]) < 0.3) & (g[:, 2] > 0.2) & (g[:, 2] < 1.6)]  # noqa: E731
    assert len(body(empty)) == 0 and len(body(person)) > 20


def test_sim_node_publishes_the_cloud_and_motion_node_takes_it(ros_context):
    """sim_node (lidar_topic utlidar/cloud) and motion_node (the same topic and mount) on one graph:
    motion_node's obstacle tracker holds the cloud, and its floor lies at 0 m under base_link."""
    pytest.importorskip("havln_robot.nodes.sim_node")
    from havln_robot.bringup import NodeThreads
    from havln_robot.config import load_profile
    from havln_robot.nodes.motion_node import MotionNode
    from havln_robot.nodes.sim_node import SimNode
    from havln_robot.paths import config_dir

    prof = load_profile(config_dir() / "sim.yaml")
    sim_p = {**prof.nodes["sim_node"], "scene_source": "builtin", "populate_humans": 0, "lockstep": False}
    sim_p.update(lidar_topic="utlidar/cloud", camera_width=160, camera_height=120)
    mot_p = {**prof.nodes["motion_node"], "lidar_topic": "utlidar/cloud"}
    sim = SimNode(params=sim_p, context=ros_context)
    mot = MotionNode(params=mot_p, context=ros_context)
    threads = NodeThreads(ros_context, log=lambda s: None)
    for n in (sim, mot):
        threads.add(n.get_name(), n)
    try:
        end = time.monotonic() + 60.0
        while time.monotonic() < end and mot.core.tracker._cloud is None:
            time.sleep(0.1)
        cloud = mot.core.tracker._cloud
        assert cloud is not None, "motion_node got no cloud"
        ground = cloud[1]
        near = ground[np.hypot(ground[:, 0], ground[:, 1]) < 1.0]
        assert len(near) > 50 and np.median(np.abs(near[:, 2])) < 0.02
    finally:
        threads.stop()
        for n in (mot, sim):
            n.destroy_node()


def test_motion_node_refuses_a_forward_step_while_its_configured_lidar_is_silent(ros_context):
    """On a real graph: motion_node with ``lidar_topic`` set and sim_node publishing depth and
    odometry but no cloud refuses MOVE_FORWARD naming the LiDAR (a lost LiDAR must not leave the
    robot walking on depth alone, blind to a glass door); once sim_node's cloud comes, the same
    step is not refused for the LiDAR."""
    pytest.importorskip("havln_robot.nodes.sim_node")
    from diagnostic_msgs.msg import DiagnosticStatus
    from rclpy.node import Node
    from std_msgs.msg import String

    from havln_robot.bringup import NodeThreads
    from havln_robot.config import load_profile
    from havln_robot.nodes.motion_node import MotionNode
    from havln_robot.nodes.sim_node import SimNode
    from havln_robot.paths import config_dir
    from havln_robot.ros.codec import decode_result

    prof = load_profile(config_dir() / "sim.yaml")
    results = []
    probe = Node("lidar_probe", context=ros_context)
    probe.create_subscription(DiagnosticStatus, "havln/action_result", lambda m: results.append(decode_result(m)), 10)
    act = probe.create_publisher(String, "havln/action", 10)

    def forward() -> tuple[str, str]:
        n = len(results)
        end = time.monotonic() + 60.0
        while time.monotonic() < end and not probe.count_subscribers("havln/action"):
            time.sleep(0.1)
        act.publish(String(data="MOVE_FORWARD"))
        while time.monotonic() < end and len(results) == n:
            time.sleep(0.1)
        assert len(results) > n, "no action result"
        return results[n].outcome.value, results[n].detail

    for sim_lidar in ("", "utlidar/cloud"):
        sim_p = {**prof.nodes["sim_node"], "scene_source": "builtin", "populate_humans": 0, "lockstep": False}
        sim_p.update(lidar_topic=sim_lidar, camera_width=160, camera_height=120)
        mot_p = {**prof.nodes["motion_node"], "lidar_topic": "utlidar/cloud"}
        sim = SimNode(params=sim_p, context=ros_context)
        mot = MotionNode(params=mot_p, context=ros_context)
        threads = NodeThreads(ros_context, log=lambda s: None)
        for n in (sim, mot, probe):
            threads.add(n.get_name(), n)
        try:
            end = time.monotonic() + 60.0
            while time.monotonic() < end and (mot.core.odom is None or mot.core.tracker.points(mot._now(), mot.core.odom, 0.0) is None):
                time.sleep(0.1)
            time.sleep(1.0)  # a cloud (when published) is in
            outcome, detail = forward()
            if sim_lidar:
                assert "LiDAR" not in detail, (outcome, detail)
            else:
                assert (outcome, detail) == ("aborted", "utlidar/cloud: no LiDAR cloud received yet (require_depth); not started")
        finally:
            threads.stop()
            for n in (mot, sim):
                n.destroy_node()
    probe.destroy_node()
