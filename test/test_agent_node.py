"""agent_node over ROS (loopback DDS) with a fake motion_node and a fake camera."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import String

from havln_robot import topics
from havln_robot.actions import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from havln_robot.agent.params import AGENT_PARAMS
from havln_robot.bringup import NodeThreads
from havln_robot.nodes.agent_node import AgentNode
from havln_robot.params import ConfigError
from havln_robot.perception.preprocess import Intrinsics
from havln_robot.ros.codec import image_msg, status_dict, status_msg

W, H = 212, 120


class FakeRobot(Node):
    """motion_node stand-in (answers every action) plus a 30 Hz RGB-D camera whose colour encodes the heading."""

    def __init__(self, context, delay_s=0.0):
        super().__init__("fake_robot", context=context)
        self.delay_s = delay_s
        self.heading = 0.0
        self.seq = 0
        self.actions: list[str] = []
        self.done: list[dict] = []
        self.status: list[dict] = []
        self.pub_result = self.create_publisher(DiagnosticStatus, topics.ACTION_RESULT, 10)
        self.pub_rgb = self.create_publisher(Image, topics.COLOR_IMAGE, 5)
        self.pub_depth = self.create_publisher(Image, topics.DEPTH_IMAGE, 5)
        self.pub_info = self.create_publisher(CameraInfo, topics.COLOR_INFO, 5)
        self.pub_instr = self.create_publisher(String, topics.INSTRUCTION, 10)
        self.create_subscription(String, topics.ACTION, self.on_action, 50)
        self.create_subscription(String, topics.EPISODE_DONE, lambda m: self.done.append(json.loads(m.data)), 10)
        self.create_subscription(
            DiagnosticStatus, topics.AGENT_STATUS, lambda m: self.status.append(status_dict(m) | {"_msg": m.message}), 50
        )
        self.create_timer(1.0 / 30.0, self.publish_frames)
        intr = Intrinsics.from_hfov(W, H, 69.4)
        self.info = CameraInfo(width=W, height=H, k=[intr.fx, 0.0, intr.cx, 0.0, intr.fy, intr.cy, 0.0, 0.0, 1.0])
        self.info.header.frame_id = topics.COLOR_OPTICAL_FRAME

    def on_action(self, msg):
        a = msg.data
        self.actions.append(a)

        def reply():
            time.sleep(self.delay_s)
            yaw = {TURN_LEFT: 15.0, TURN_RIGHT: -15.0}.get(a, 0.0)
            self.heading += yaw
            self.seq += 1
            vals = {"seq": self.seq, "action": a, "outcome": "ok", "yaw_imu_deg": yaw, "yaw_odom_deg": yaw}
            self.pub_result.publish(status_msg(a, "ok", vals))

        threading.Thread(target=reply, daemon=True).start()

    def publish_frames(self):
        stamp = self.get_clock().now().to_msg()
        code = int(round(self.heading % 360.0)) // 2
        self.pub_rgb.publish(image_msg(np.full((H, W, 3), code, np.uint8), "rgb8", topics.COLOR_OPTICAL_FRAME, stamp))
        self.pub_depth.publish(image_msg(np.full((H, W), 2000, np.uint16), "16UC1", topics.COLOR_OPTICAL_FRAME, stamp))
        self.info.header.stamp = stamp
        self.pub_info.publish(self.info)


@pytest.fixture
def graph(ros_context):
    nodes = []
    spinners = NodeThreads(ros_context, log=print)

    def make(policy, delay_s=0.0, **params):
        p = AGENT_PARAMS.validate({"policy": policy, "settle_s": 0.05, "frame_timeout_s": 10.0, "action_timeout_s": 10.0, **params})
        agent = AgentNode(params=p, context=ros_context)
        robot = FakeRobot(ros_context, delay_s)
        for n in (agent, robot):
            nodes.append(n)
            spinners.add(f"{n.get_name()}{len(nodes)}", n)
        return agent, robot

    yield make
    for n in nodes:
        if isinstance(n, AgentNode):
            n.safe_stop()
    spinners.stop(timeout=5)
    for n in nodes:
        n.destroy_node()


def wait_for(pred, timeout=30.0):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if pred():
            return True
        time.sleep(0.02)
    return False


def send_instruction(robot, text):
    # wait until the agent's subscription is matched, then publish
    assert wait_for(lambda: robot.pub_instr.get_subscription_count() > 0, 10)
    robot.pub_instr.publish(String(data=text))


def test_front_view_episode_to_stop(graph):
    agent, robot = graph("forward:steps=3")
    send_instruction(robot, "walk forward and stop at the door")
    assert wait_for(lambda: robot.done), "no episode_done"
    done = robot.done[0]
    assert done["reason"] == "stop" and done["steps"] == 4
    assert done["actions"] == [MOVE_FORWARD] * 3 + [STOP]
    assert robot.actions == [MOVE_FORWARD] * 3 + [STOP]
    assert wait_for(lambda: any(s.get("state") == "done" for s in robot.status), 5)
    acting = [s for s in robot.status if s.get("state") == "acting"]
    assert [s["action"] for s in acting] == robot.actions
    assert set(topics.AGENT_STATUS_KEYS) <= set(acting[0])


def test_panoramic_policy_rotates_through_12_views(graph):
    agent, robot = graph("forward:steps=1,views=12")
    send_instruction(robot, "turn around and go to the sofa")
    assert wait_for(lambda: robot.done, 60), "no episode_done"
    done = robot.done[0]
    assert done["reason"] == "stop", done
    assert robot.actions == [TURN_LEFT] * 24 + [MOVE_FORWARD] + [TURN_LEFT] * 24 + [STOP]
    assert done["panoramas"] == 2 and done["panorama_turns"] == 48 and done["panorama_s_mean"] > 0
    assert robot.heading % 360.0 == pytest.approx(0.0)
    pano = [s for s in robot.status if s.get("state") == "acting"]
    assert float(pano[0]["panorama_s"]) > 0


def test_new_instruction_aborts_running_episode(graph):
    agent, robot = graph("forward:steps=25", delay_s=0.05)
    send_instruction(robot, "first instruction")
    assert wait_for(lambda: len(robot.actions) >= 3, 20)
    robot.pub_instr.publish(String(data="second instruction"))
    assert wait_for(lambda: len(robot.done) >= 2, 60), robot.done
    first, second = robot.done[:2]
    assert first["reason"] == "aborted" and first["instruction"] == "first instruction" and not first["error"]
    assert first["steps"] + (1 if first["interrupted"] else 0) >= 3 and first["steps"] < 25
    assert second["reason"] == "stop" and second["steps"] == 26 and second["instruction"] == "second instruction"
    # STOP was sent to motion_node when the first episode was aborted (after an interrupted action, if any)
    k = first["steps"] + (1 if first["interrupted"] else 0)
    assert robot.actions[:k] == [MOVE_FORWARD] * k and robot.actions[k] == STOP
    assert first["interrupted"] in ("", MOVE_FORWARD)


def test_missing_motion_node_aborts_with_a_clear_error(graph, ros_context):
    p = AGENT_PARAMS.validate(
        {"policy": "forward:steps=3", "settle_s": 0.0, "action_timeout_s": 0.5, "frame_timeout_s": 0.5, "camera_hfov_deg": 69.4}
    )
    agent = AgentNode(params=p, context=ros_context)
    try:
        agent.runner.io = agent
        res = agent.runner.run("go")
        assert res.reason == "aborted" and res.error and "RGB-D" in res.detail
    finally:
        agent.safe_stop()
        agent.destroy_node()


def test_bad_policy_is_a_config_error(ros_context):
    p = AGENT_PARAMS.validate({"policy": "no_such_model"})
    with pytest.raises(ConfigError, match="policy"):
        AgentNode(params=p, context=ros_context)


def test_panorama_settings_are_checked_at_start(ros_context):
    p = AGENT_PARAMS.validate({"policy": "forward:views=12", "heading_tolerance_deg": 40.0})
    with pytest.raises(ConfigError, match="tolerance"):
        AgentNode(params=p, context=ros_context)


def test_released_cma_checkpoint_drives_an_episode(graph, released_cma, havln_data):
    """agent_node loads a checkpoint in the released HA-VLN-CMA layout (test/released_cma.py) and runs it."""
    agent, robot = graph(str(released_cma.path))
    assert type(agent.policy).__name__ == "CMAPolicy" and agent.policy.name == released_cma.path.stem
    send_instruction(robot, "walk forward and stop at the door")
    assert wait_for(lambda: robot.done, 60), "no episode_done"
    assert robot.done[0]["reason"] == "stop" and robot.actions == [STOP]
