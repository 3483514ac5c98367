"""motion_node closing the loop through the real sim_node over ROS (built-in scene, noise on).

The camera is off to keep the test light (require_depth false); accuracy is checked against the
simulator's ground truth (havln/ground_truth), not against what motion_node believes."""

from __future__ import annotations

import math
import time

import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from std_msgs.msg import String

from havln_robot.bringup import NodeThreads
from havln_robot.config import load_profile
from havln_robot.ros.codec import status_dict


def test_actions_through_sim_node(ros_context):
    sim_mod = pytest.importorskip("havln_robot.nodes.sim_node")
    from havln_robot.nodes.motion_node import MotionNode

    prof = load_profile("config/sim.yaml")
    sim = sim_mod.SimNode(
        params={**prof.nodes["sim_node"], "scene_source": "builtin", "camera_enabled": False, "lockstep_wait_for": ["motion"]},
        context=ros_context,
    )
    mot = MotionNode(params={**prof.nodes["motion_node"], "require_depth": False}, context=ros_context)
    probe = __import__("rclpy").create_node("probe", context=ros_context)
    results, truth = [], []
    probe.create_subscription(DiagnosticStatus, "havln/action_result", lambda m: results.append(status_dict(m)), 50)
    probe.create_subscription(DiagnosticStatus, "havln/ground_truth", lambda m: truth.append(status_dict(m)), 50)
    pub = probe.create_publisher(String, "havln/action", 10)
    # each node on its own thread with its own executor, as havln-robot launch runs them
    spinners = NodeThreads(ros_context, log=print)
    for n in (sim, mot, probe):
        spinners.add(n.get_name(), n)

    def spin(cond, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if cond():
                return True
            time.sleep(0.01)
        return False

    try:
        assert spin(lambda: len(truth) > 2 and mot.core.odom is not None and mot.core.imu_t is not None, 20.0)
        for action, dist, dyaw in (("MOVE_FORWARD", 0.25, 0.0), ("TURN_LEFT", 0.0, 15.0), ("TURN_RIGHT", 0.0, -15.0)):
            g0, n = dict(truth[-1]), len(results)
            pub.publish(String(data=action))
            assert spin(lambda n=n: len(results) > n, 20.0), f"no result for {action}"
            assert results[-1]["outcome"] == "ok", results[-1]
            k = len(truth)
            assert spin(lambda k=k: len(truth) > k + 2, 5.0)  # ground truth after the robot is at rest
            g1 = truth[-1]
            d = math.hypot(float(g1["x"]) - float(g0["x"]), float(g1["y"]) - float(g0["y"]))
            turned = (float(g1["yaw_deg"]) - float(g0["yaw_deg"]) + 180.0) % 360.0 - 180.0
            assert abs(d - dist) < 0.02, (action, d)
            assert abs(turned - dyaw) < 1.0, (action, turned)
        assert truth[-1]["collisions_static"] == "0" and truth[-1]["collisions_human"] == "0"
    finally:
        mot.safe_stop()
        sim.safe_stop()
        spinners.stop()
        for n in (sim, mot, probe):
            n.destroy_node()
