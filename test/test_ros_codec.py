"""havln_robot.ros.codec and the motion client: records <-> ROS messages; send/wait/resend over DDS."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("rclpy")

from std_msgs.msg import String  # noqa: E402

from havln_robot import actions as A  # noqa: E402
from havln_robot import topics  # noqa: E402
from havln_robot.records import SCHEMA_KEY, ActionResult, AgentStatus, CollisionRecord, EpisodeDone, GroundTruth, Outcome, RecordError  # noqa: E402
from havln_robot.ros import codec  # noqa: E402


def test_records_round_trip_through_messages():
    r = ActionResult(2, A.MOVE_FORWARD, "collision", distance_odom_m=0.1, detail="person 0.4 m")
    msg = codec.encode_result(r, hardware_id="motion_node")
    assert (msg.name, msg.message, msg.hardware_id) == (A.MOVE_FORWARD, "collision", "motion_node")
    assert codec.status_dict(msg)[SCHEMA_KEY] == "1" and msg.level in (2, b"\x02")
    back = codec.decode_result(msg)
    assert back.outcome is Outcome.COLLISION and back.is_partial and back.to_values() == r.to_values()

    c = CollisionRecord(1.0, 0.0, 0.0, 0.0, A.MOVE_FORWARD, "human", 0.4, None, "moving", "people", contact=False)
    cm = codec.encode_collision(c)
    assert (cm.name, cm.message) == ("collision", "human") and cm.level in (1, b"\x01")
    assert codec.decode_collision(cm) == c

    gt = GroundTruth("42", "scan", 1.0, 2.0, 0.0, 5.0, 3.0, 2.5, "1", 0, 1, 2.0, 2.8, False)
    gm = codec.encode_ground_truth(gt)
    assert gm.message == "42" and codec.decode_ground_truth(gm) == gt

    st = AgentStatus(3, A.TURN_LEFT, "error")
    sm = codec.encode_agent_status(st)
    assert sm.message == "error" and sm.level in (2, b"\x02") and codec.decode_agent_status(sm) == st

    d = EpisodeDone("stop", 4, "go", {"actions": ["STOP"]})
    dm = codec.encode_episode_done(d)
    assert json.loads(dm.data)["actions"] == ["STOP"] and codec.decode_episode_done(dm).steps == 4
    with pytest.raises(RecordError):
        codec.decode_episode_done(String(data="[1]"))


def test_a_message_from_an_old_bag_decodes():
    msg = codec.status_msg("TURN_LEFT", "ok", {"seq": 4, "yaw_imu_deg": 15.0})  # no action/outcome/version keys
    r = codec.decode_result(msg)
    assert (r.action, r.outcome, r.schema_version) == ("TURN_LEFT", Outcome.OK, 1)


def test_replay_counts_only_real_human_contacts():
    """Bug: the replay defaulted a missing ``contact`` key to true and counted a stopped-short
    personal-space record of an old bag as a human collision."""
    from havln_robot.ros.replay import RosReplayer

    rep = SimpleNamespace(collisions=0, _decode_collision=codec.decode_collision)
    legacy_stopped_short = codec.status_msg(
        "collision", "human", {"action": "MOVE_FORWARD", "type": "human", "distance_m": 0.44, "motion_state": "moving", "source": "people"}
    )
    RosReplayer._coll(rep, legacy_stopped_short)
    assert rep.collisions == 0
    contact = CollisionRecord(0.0, 0.0, 0.0, 0.0, A.MOVE_FORWARD, "human", 0.0, 2, "moving", "people", contact=True)
    RosReplayer._coll(rep, codec.encode_collision(contact))
    static = CollisionRecord(0.0, 0.0, 0.0, 0.0, A.MOVE_FORWARD, "static", 0.0, None, "moving", "jolt", contact=True)
    RosReplayer._coll(rep, codec.encode_collision(static))
    assert rep.collisions == 1


class _FakeMotion:
    """Answers actions like motion_node: ``rejected`` for the first ``busy`` sends, then ``ok``."""

    def __init__(self, node, busy: int = 0, silent: bool = False) -> None:
        from diagnostic_msgs.msg import DiagnosticStatus

        self.busy, self.silent, self.seen = busy, silent, []
        self.pub = node.create_publisher(DiagnosticStatus, topics.ACTION_RESULT, 10)
        node.create_subscription(String, topics.ACTION, self._on_action, 10)

    def _on_action(self, msg):
        self.seen.append(msg.data)
        if self.silent:
            return
        # an unrelated result first (another client's action): must not be taken as the answer
        self.pub.publish(codec.encode_result(ActionResult(0, "LOOK_UP", "ok")))
        outcome = "rejected" if self.busy > 0 else "ok"
        self.busy -= 1
        self.pub.publish(codec.encode_result(ActionResult(len(self.seen), msg.data, outcome)))


@pytest.fixture
def graph(ros_context):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    robot = rclpy.create_node("fake_motion", context=ros_context)
    node = rclpy.create_node("client", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(robot)
    ex.add_node(node)
    yield robot, node, ex
    ex.shutdown()
    node.destroy_node()
    robot.destroy_node()


def _connected(ex, client, fake):
    t_end = time.monotonic() + 5.0
    while (client.pub.get_subscription_count() == 0 or fake.pub.get_subscription_count() == 0) and time.monotonic() < t_end:
        ex.spin_once(timeout_sec=0.05)


def test_motion_client_resends_while_rejected(graph):
    from havln_robot.ros.motion_client import MotionClient

    robot, node, ex = graph
    fake = _FakeMotion(robot, busy=2)
    client = MotionClient(node, spin=lambda t: ex.spin_once(timeout_sec=t))
    _connected(ex, client, fake)
    r = client.send(A.TURN_LEFT, timeout_s=5.0, retries=3, retry_wait_s=0.05)
    assert r.outcome is Outcome.OK and r.action == A.TURN_LEFT and fake.seen == [A.TURN_LEFT] * 3
    fake.busy = 5
    r = client.send(A.TURN_RIGHT, timeout_s=5.0, retries=1, retry_wait_s=0.05)
    assert r.outcome is Outcome.REJECTED and r.is_refused and fake.seen.count(A.TURN_RIGHT) == 2


def test_motion_client_timeout_and_cancel(graph):
    from havln_robot.ros.motion_client import MotionCancelled, MotionClient, MotionTimeout

    robot, node, ex = graph
    fake = _FakeMotion(robot, silent=True)
    client = MotionClient(node, spin=lambda t: ex.spin_once(timeout_sec=t))
    _connected(ex, client, fake)
    with pytest.raises(MotionTimeout, match="MOVE_FORWARD within 0.3 s"):
        client.send(A.MOVE_FORWARD, timeout_s=0.3)
    t0 = time.monotonic()
    with pytest.raises(MotionCancelled):
        client.send(A.MOVE_FORWARD, timeout_s=10.0, cancelled=lambda: time.monotonic() - t0 > 0.2)
    assert time.monotonic() - t0 < 2.0
