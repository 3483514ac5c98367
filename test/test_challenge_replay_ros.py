"""havln-robot replay --backend ros: actions go through motion_node over DDS (loopback, own domain id)."""

from __future__ import annotations

import json
import threading

import pytest
from conftest import domain

from havln_robot.actions import STOP
from havln_robot.challenge.format import write_split_file
from havln_robot.ros.replay import main

pytest.importorskip("rclpy")


@pytest.fixture
def own_domain(monkeypatch):
    """A ROS domain id no other test process uses at the same time (conftest gives each process a block)."""
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain(3)))


def test_embedded_replay_runs_each_action_through_motion_node(havln_data, own_domain, tmp_path, capsys):
    pytest.importorskip("havln_robot.nodes.sim_node")
    pytest.importorskip("havln_robot.nodes.motion_node")
    f = write_split_file(tmp_path / "v.json", "val_seen", {"5593": ["TURN_LEFT", "TURN_RIGHT", "LOOK_UP", "LOOK_DOWN", STOP]})
    out_json = tmp_path / "r.json"
    # sensor_timeout_s raised from 0.3 s: on a loaded 2-core test machine odom can pause longer than that
    rc = main(
        [
            str(f),
            "--backend",
            "ros",
            "--target",
            "embedded",
            "--quiet",
            "--json",
            str(out_json),
            "--set",
            "motion_node.sensor_timeout_s=2.0",
        ]
    )
    cap = capsys.readouterr()
    assert rc == 0, cap.err[-2000:]
    doc = json.loads(out_json.read_text())
    (ep,) = doc["episodes"]
    assert ep["episode_id"] == "5593" and ep["steps"] == 5 and ep["stopped"] is True, ep
    # NE comes from sim_node's ground truth: the start of path 5593 is 4.6 m from its goal in a
    # straight line (7.3 m walkable) and two opposite 15 deg turns do not move the body
    assert 4.0 < ep["ne_euclid"] < 5.5 and ep["ne"] >= ep["ne_euclid"] - 0.01 and ep["success"] is False
    assert ep["unreachable"] is False
    assert "1 episode: SR 0.000" in cap.out
    assert "motion_node refused 0 of 5 actions (0 of 1 episode)" in cap.out


def test_external_target_without_motion_node_fails_cleanly(own_domain, tmp_path, capsys):
    f = write_split_file(tmp_path / "v.json", "val_seen", {"1": [STOP]})
    import havln_robot.ros.replay as rp

    done = threading.Event()
    orig = rp.RosReplayer.wait_ready

    def quick(self, timeout_s):  # do not wait the full 20 s in a test
        done.set()
        return orig(self, 1.0)

    rp.RosReplayer.wait_ready = quick
    try:
        assert main([str(f), "--backend", "ros", "--target", "external", "--quiet"]) == 2
    finally:
        rp.RosReplayer.wait_ready = orig
    err = capsys.readouterr().err
    assert done.is_set() and "nothing subscribes to havln/action" in err and "Traceback" not in err


def test_robot_target_needs_typed_yes(tmp_path, capsys, monkeypatch):
    import io

    f = write_split_file(tmp_path / "v.json", "val_seen", {"1": [STOP]})
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main([str(f), "--backend", "ros", "--target", "robot"]) == 1
    err = capsys.readouterr().err
    assert "Type 'yes'" in err and "not confirmed; nothing was sent" in err


def test_interrupt_publishes_stop_while_an_action_runs(ros_context):
    """Ctrl-C (the cancel callback) mid-action publishes STOP at once, without waiting for the result."""
    import time

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    from havln_robot import topics
    from havln_robot.ros.motion_client import MotionCancelled, MotionTimeout
    from havln_robot.ros.replay import RosReplayer

    seen: list[str] = []
    robot = rclpy.create_node("fake_motion", context=ros_context)  # receives actions, never answers
    robot.create_subscription(String, topics.ACTION, lambda m: seen.append(m.data), 10)
    node = rclpy.create_node("replayer", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(robot)
    ex.add_node(node)
    try:
        rep = RosReplayer(node, lambda t: ex.spin_once(timeout_sec=t))
        t_end = time.monotonic() + 5.0
        while node.count_subscribers(topics.ACTION) == 0 and time.monotonic() < t_end:
            ex.spin_once(timeout_sec=0.05)
        t0 = time.monotonic()
        with pytest.raises(MotionCancelled):
            rep.motion.send("MOVE_FORWARD", timeout_s=10.0, cancelled=lambda: time.monotonic() - t0 > 0.3)
        rep.stop()  # what replay_ros does on Ctrl-C
        assert time.monotonic() - t0 < 2.0
        t_end = time.monotonic() + 2.0
        while len(seen) < 2 and time.monotonic() < t_end:
            ex.spin_once(timeout_sec=0.05)
        assert seen == ["MOVE_FORWARD", STOP]
        with pytest.raises(MotionTimeout):  # no motion_node answer
            rep.motion.send("TURN_LEFT", timeout_s=0.3)
    finally:
        ex.shutdown()
        node.destroy_node()
        robot.destroy_node()
