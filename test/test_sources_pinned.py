"""Sources pinned at start: another stack's /odom or /clock on the same ROS domain is refused.

Two stacks on one domain as on two machines (the second stack is a second DDS participant, on
loopback): during a stall the first run took the second's ``/clock`` and ``/odom`` (yaw jumps,
sim-time resets, a trial aborted). motion_node now binds each source to its first publisher and
refuses another's messages with one line naming both.
"""

from __future__ import annotations

import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402

from havln_robot.motion.params import MOTION_PARAMS  # noqa: E402
from havln_robot.nodes.motion_node import MotionNode  # noqa: E402


class Stack:
    """A publishing stack in its own DDS participant (another machine, on loopback)."""

    def __init__(self, ctx, node_name: str, x: float, clock_s: float | None) -> None:
        self.node = rclpy.create_node(node_name, context=ctx)
        self.odom = self.node.create_publisher(Odometry, "odom", 10)
        self.clock = self.node.create_publisher(Clock, "/clock", 10) if clock_s is not None else None
        self.x, self.clock_s = x, clock_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            o = Odometry()
            o.header.frame_id, o.child_frame_id = "odom", "base_link"
            o.pose.pose.position.x = self.x
            o.pose.pose.orientation.w = 1.0
            if self.clock is not None:
                self.clock_s += 0.02
                c = Clock()
                c.clock.sec, c.clock.nanosec = int(self.clock_s), int((self.clock_s % 1) * 1e9)
                self.clock.publish(c)
                o.header.stamp = c.clock
            self.odom.publish(o)
            time.sleep(0.02)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=2)
        self.node.destroy_node()


def _spin(ex, cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ex.spin_once(timeout_sec=0.01)
        if cond():
            return True
    return bool(cond())


def _close(theirs, ours, ex, node) -> None:
    """Stop both stacks, then our executor and motion_node."""
    if theirs is not None:
        theirs.close()
    ours.close()
    ex.shutdown()
    node.destroy_node()


@pytest.mark.parametrize("sim_time", [False, True], ids=["odom", "clock-and-odom"])
def test_other_stacks_odom_and_clock_are_refused_with_one_line(ros_context, other_ros_context, sim_time):
    params = {**MOTION_PARAMS.defaults(), "require_depth": False, "use_sim_time": sim_time}
    node = MotionNode(params=params, context=ros_context)
    ours = Stack(ros_context, "go2_driver_node", 0.5, 100.0 if sim_time else None)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    theirs = None
    try:
        assert _spin(ex, lambda: node.core.odom is not None, 10.0), "motion_node got no odometry"
        seen_x, seen_t = set(), []

        theirs = Stack(other_ros_context, "go2_driver_node", 7.0, 5.0 if sim_time else None)  # same node name, other machine
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.01)
            if node.core.odom is not None:
                seen_x.add(round(node.core.odom[0], 3))
            seen_t.append(node.get_clock().now().nanoseconds * 1e-9)
        assert 7.0 not in seen_x, "motion_node took the other stack's odometry"
        if sim_time:
            assert min(seen_t) >= 100.0, f"sim time went back to {min(seen_t):.2f} s: the other stack's /clock was taken"
        conflicts = node.source_conflicts()
        assert "/odom" in conflicts, conflicts
        line = conflicts["/odom"]
        assert line.count("/go2_driver_node [gid") == 2 and "second publisher" in line, line
        if sim_time:
            assert "/clock" in conflicts, conflicts
    finally:
        _close(theirs, ours, ex, node)


class TracksStack:
    """Another robot's people_node publishing tracked people (its own DDS participant)."""

    def __init__(self, ctx, person_id: int, x: float) -> None:
        from sensor_msgs.msg import PointCloud2

        from havln_robot.ros.codec import encode_tracks

        self.node = rclpy.create_node("people_node", context=ctx)
        pub = self.node.create_publisher(PointCloud2, "havln/people_tracks", 5)
        self.stop = threading.Event()

        def run() -> None:
            while not self.stop.is_set():
                pub.publish(encode_tracks([(x, 0.0, 0.0, 0.0, person_id)], "base_link", self.node.get_clock().now().to_msg()))
                time.sleep(0.02)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=2)
        self.node.destroy_node()


def test_other_robots_people_tracks_do_not_replace_ours(ros_context, other_ros_context):
    """The tracked people motion_node checks come from this robot's people_node only: another
    robot's tracks (a person elsewhere, none ahead of us) would hide the person in front of us."""
    node = MotionNode(params={**MOTION_PARAMS.defaults(), "require_depth": False}, context=ros_context)
    ours = TracksStack(ros_context, 12, 1.0)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    theirs = None
    try:
        assert _spin(ex, lambda: bool(node.people.tracks[0]), 10.0), "motion_node got no tracks"
        theirs = TracksStack(other_ros_context, 99, 8.0)
        ids = set()
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.01)
            ids |= {q.human_id for q in node.people.tracks[0]}
        assert 99 not in ids, "motion_node took the other robot's people"
        assert "/havln/people_tracks" in node.source_conflicts(), node.source_conflicts()
    finally:
        _close(theirs, ours, ex, node)
