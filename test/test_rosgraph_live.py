"""Sensor QoS of every subscribing node, and sim time jumping back.

One instance of each subscribing node (motion_node, agent_node, trial_logger_node) in one process,
publishers in-process. sim_node, go2_driver_node and camera_node subscribe to no sensor topic
(only cmd_vel / action results), so they are not started here.
"""

from __future__ import annotations

import re
import time

import pytest
import rclpy
from conftest import ROS_DOMAIN_ID
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from test_motion_node import FakeBase, _result

from havln_robot.ros.qos import DropCounter, sensor_qos

SENSOR_TYPES = {
    "sensor_msgs/msg/Image",
    "sensor_msgs/msg/CameraInfo",
    "sensor_msgs/msg/Imu",
    "nav_msgs/msg/Odometry",
    "geometry_msgs/msg/PoseArray",
}


class Graph:
    def __init__(self, tmp):
        from havln_robot.agent.params import AGENT_PARAMS
        from havln_robot.motion.params import MOTION_PARAMS
        from havln_robot.nodes.agent_node import AgentNode
        from havln_robot.nodes.motion_node import MotionNode
        from havln_robot.nodes.trial_logger_node import TrialLoggerNode
        from havln_robot.trials.params import TRIAL_LOGGER_PARAMS

        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx, domain_id=ROS_DOMAIN_ID, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
        c = self.ctx
        self.motion = MotionNode(
            params={
                **MOTION_PARAMS.defaults(),
                "require_depth": False,
                "use_sim_time": True,
                "slip_yaw_deg": 10.0,
                "sensor_timeout_s": 1.0,
            },
            context=c,
        )
        self.agent = AgentNode(params=AGENT_PARAMS.validate({"policy": "forward", "use_sim_time": True}), context=c)
        self.logger = TrialLoggerNode(
            params=TRIAL_LOGGER_PARAMS.validate({"db_path": str(tmp / "trials.db"), "use_sim_time": True}), context=c
        )
        self.base = FakeBase(c)
        self.base.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, True)])
        self.probe = rclpy.create_node("qos_probe", context=c)
        self.clock_pub = self.probe.create_publisher(Clock, "/clock", 10)
        self.sim_t0, self.wall_t0 = 100.0, time.monotonic()
        self.ex = SingleThreadedExecutor(context=c)
        for n in (self.motion, self.agent, self.logger, self.base, self.probe):
            self.ex.add_node(n)

    def set_clock(self, t: float) -> None:
        self.sim_t0, self.wall_t0 = t, time.monotonic()

    def spin(self, cond, timeout=8.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            t = self.sim_t0 + time.monotonic() - self.wall_t0
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = int(t), int((t % 1) * 1e9)
            self.clock_pub.publish(msg)
            self.ex.spin_once(timeout_sec=0.005)
            if cond():
                return True
        return False

    def close(self):
        self.motion.safe_stop()
        self.ex.shutdown()
        for n in (self.motion, self.agent, self.logger, self.base, self.probe):
            n.destroy_node()
        rclpy.try_shutdown(context=self.ctx)


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    g = Graph(tmp_path_factory.mktemp("graph"))
    yield g
    g.close()


def _sensor_subscriptions(g: Graph, node) -> list[tuple[str, str]]:
    subs = g.probe.get_subscriber_names_and_types_by_node(node.get_name(), node.get_namespace())
    return [(topic, typ) for topic, types in subs for typ in types if typ in SENSOR_TYPES]


def test_every_sensor_subscription_receives_from_reliable_and_best_effort_publishers(graph):
    g = graph
    assert g.spin(lambda: all(_sensor_subscriptions(g, n) for n in (g.motion, g.agent, g.logger)), 5.0)
    checked = []
    for node in (g.motion, g.agent, g.logger):
        for topic, typ in _sensor_subscriptions(g, node):
            mine = [i for i in g.probe.get_subscriptions_info_by_topic(topic) if i.node_name == node.get_name()]
            assert mine and all(i.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT for i in mine), (node.get_name(), topic)
            pkg, _, name = typ.split("/")
            msg_cls = getattr(__import__(f"{pkg}.msg", fromlist=[name]), name)
            everyone = len(g.probe.get_subscriptions_info_by_topic(topic))
            for rel in (ReliabilityPolicy.RELIABLE, ReliabilityPolicy.BEST_EFFORT):
                pub = g.probe.create_publisher(msg_cls, topic, QoSProfile(depth=5, reliability=rel))
                # a publisher's matched-subscription count is rmw's own QoS compatibility verdict
                ok = g.spin(lambda p=pub, n=everyone: p.get_subscription_count() == n, 3.0)
                g.probe.destroy_publisher(pub)
                assert ok, f"{node.get_name()} does not receive {topic} from a {rel.name} publisher"
                checked.append((node.get_name(), topic, rel.name))
    topics = {(n, t) for n, t, _ in checked}
    for want in ("odom", "imu", "camera/aligned_depth_to_color/image_raw", "camera/aligned_depth_to_color/camera_info", "havln/people"):
        assert ("motion_node", "/" + want) in topics, want
    assert ("trial_logger_node", "/odom") in topics and ("agent_node", "/camera/color/image_raw") in topics


def test_drop_counter_counts_sequence_gaps_and_lost_events():
    d = DropCounter()
    for seq in (5, 6, 9, 10):
        d.see("odom", {"publication_sequence_number": seq})
    d.see("imu", {"publication_sequence_number": 1})
    d.lost_event("imu", 4)
    assert d.lost == {"odom": 2, "imu": 4}
    got = []
    d.callback("people", got.append)("msg", {"publication_sequence_number": 3})
    assert got == ["msg"] and sensor_qos().reliability == ReliabilityPolicy.BEST_EFFORT


def test_clock_jumping_back_aborts_resets_and_logs_once(graph, capfd):
    g, base = graph, graph.base
    assert g.spin(lambda: g.motion.core.odom is not None and g.motion.core.imu_t is not None and g.motion._now() > 99.0, 10.0)
    base.imu_orientation = False  # yaw from the gyro tracker, the state the jump used to break
    g.spin(lambda: False, 0.3)
    base.send("TURN_LEFT")
    assert g.spin(lambda: len(base.results) >= 1)
    assert _result(base.results[0])[:2] == ("TURN_LEFT", "ok"), _result(base.results[0])
    base.send("MOVE_FORWARD")
    assert g.spin(lambda: abs(base.x) + abs(base.y) > 0.03)
    g.set_clock(1.0)  # Gazebo reset: /clock from ~100 s back to 1 s
    assert g.spin(lambda: len(base.results) >= 2)
    name, outcome, rec = _result(base.results[1])
    assert (name, outcome) == ("MOVE_FORWARD", "aborted") and "clock jumped back" in rec["detail"], rec
    assert g.spin(lambda: base.cmd == (0.0, 0.0), 2.0)
    g.spin(lambda: False, 0.5)
    base.send("TURN_LEFT")  # trackers restarted: the turn is checked against a live IMU yaw again
    assert g.spin(lambda: len(base.results) >= 3)
    name, outcome, rec = _result(base.results[2])
    assert (name, outcome) == ("TURN_LEFT", "ok"), rec.get("detail")
    err = capfd.readouterr().err
    for node in ("motion_node", "agent_node"):
        lines = [ln for ln in err.splitlines() if f"[{node}]" in ln and re.search(r"clock jumped back [\d.]+ s to", ln)]
        assert len(lines) == 1, (node, lines)
