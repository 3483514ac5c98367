"""trial_logger_node over ROS: a short scripted sim trial is recorded (store + MCAP), services work."""

from __future__ import annotations

import json

import pytest
import rosspin

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import Pose, PoseArray  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from havln_robot import topics  # noqa: E402
from havln_robot.nodes.trial_logger_node import TrialLoggerNode  # noqa: E402
from havln_robot.params import ConfigError  # noqa: E402
from havln_robot.ros.codec import status_msg  # noqa: E402
from havln_robot.trials.params import TRIAL_LOGGER_PARAMS  # noqa: E402
from havln_robot.trials.store import TrialStore  # noqa: E402


def _spin_until(ex, cond, timeout=10.0):
    return rosspin.spin_until(ex, cond, timeout)


def _params(tmp_path, **kw):
    base = {
        "platform": "sim",
        "region": "kitchen",
        "people_present": 2,
        "operator": "ci",
        "db_path": str(tmp_path / "trials.db"),
        "auto_start": True,
        "auto_end": True,
        "auto_judge": True,
        "record_mcap": True,
        "mcap_dir": str(tmp_path / "mcap"),
        "poll_period": 0.2,
    }
    base.update(kw)
    return TRIAL_LOGGER_PARAMS.validate(base)


def _result(action, x, y, yaw_deg, outcome="ok"):
    return status_msg(action, outcome, {"seq": 1, "action": action, "outcome": outcome, "x": x, "y": y, "yaw_deg": yaw_deg})


def _gt(dist, x, y):
    return status_msg("ground_truth", "42", {"episode_id": "42", "scan": "zsNo4HB9uLZ", "x": x, "y": y, "z": 0.0, "yaw_deg": 90.0,
                                             "distance_to_goal_m": dist, "nearest_human_m": 1.2, "nearest_human_id": 3})  # fmt: skip


def test_scripted_sim_trial_is_recorded(ros_context, tmp_path):
    node = TrialLoggerNode(params=_params(tmp_path), context=ros_context)
    io = Node("trial_test_io", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    ex.add_node(io)
    try:
        pubs = {
            "instr": io.create_publisher(String, topics.INSTRUCTION, 10),
            "result": io.create_publisher(DiagnosticStatus, topics.ACTION_RESULT, 50),
            "coll": io.create_publisher(DiagnosticStatus, topics.COLLISION, 50),
            "odom": io.create_publisher(Odometry, topics.ODOM, 10),
            "gt": io.create_publisher(DiagnosticStatus, topics.GROUND_TRUTH, 10),
            "people": io.create_publisher(PoseArray, topics.PEOPLE, 10),
            "done": io.create_publisher(String, topics.EPISODE_DONE, 10),
        }
        assert _spin_until(ex, lambda: all(p.get_subscription_count() > 0 for p in pubs.values())), "no DDS match on loopback"
        reader = TrialStore(tmp_path / "trials.db")

        odom = Odometry()
        odom.pose.pose.position.x, odom.pose.pose.position.y = 1.0, 2.0
        odom.pose.pose.orientation.w = 1.0
        pubs["odom"].publish(odom)
        pubs["gt"].publish(_gt(5.0, 10.0, 20.0))
        people = PoseArray()
        people.poses = [Pose(), Pose()]
        people.poses[0].position.x, people.poses[1].position.x = 3.0, 1.5
        pubs["people"].publish(people)
        _spin_until(ex, lambda: False, 0.3)
        pubs["instr"].publish(String(data="Walk into the kitchen, mind the person cooking."))
        assert _spin_until(ex, lambda: reader.running_trial() is not None)
        t = reader.running_trial()
        assert (t.platform, t.region, t.people_present, t.operator, t.episode_id, t.scan) == (
            "sim",
            "kitchen",
            2,
            "ci",
            "42",
            "zsNo4HB9uLZ",
        )
        assert (t.start_x, t.start_y, t.start_map_x) == (1.0, 2.0, 10.0)

        script = [
            ("MOVE_FORWARD", 1.25, 2.0, 0.0),
            ("TURN_LEFT", 1.25, 2.0, 15.0),
            ("MOVE_FORWARD", 1.49, 2.06, 15.0),
            ("STOP", 1.49, 2.06, 15.0),
        ]
        for i, (a, x, y, yaw) in enumerate(script):
            if i == 0:  # a prevented collision (motion_node refused to start) is not a collision of the trial
                pubs["coll"].publish(
                    status_msg("collision", "static", {"action": "MOVE_FORWARD", "type": "static", "motion_state": "blocked"})
                )
                # nor is a motion stopped short of a person's personal space (contact false)
                pubs["coll"].publish(
                    status_msg(
                        "collision",
                        "human",
                        {"action": "MOVE_FORWARD", "type": "human", "motion_state": "moving", "distance_m": 0.44, "contact": "false"},
                    )
                )
                _spin_until(ex, lambda: False, 0.3)
                assert reader.collisions(t.id) == []
            if i == 2:
                pubs["coll"].publish(
                    status_msg(
                        "collision",
                        "human",
                        {"x": 1.4, "y": 2.05, "yaw_deg": 15.0, "type": "human", "distance_m": 0.35, "human_id": 3, "contact": "true"},
                    )
                )
                assert _spin_until(ex, lambda: len(reader.collisions(t.id)) == 2)
            if a == "STOP":
                pubs["gt"].publish(_gt(2.0, 10.5, 20.1))
                _spin_until(ex, lambda: False, 0.3)
            pubs["result"].publish(_result(a, x, y, yaw, outcome="collision" if i == 1 else "ok"))
            assert _spin_until(ex, lambda n=i + 1: reader.step_count(t.id) == n)
            if i == 1:  # a collision report arriving just after its action's (collision) result
                pubs["coll"].publish(
                    status_msg("collision", "static", {"x": 1.3, "y": 2.0, "action": "TURN_LEFT", "type": "static", "contact": "true"})
                )
                assert _spin_until(ex, lambda: len(reader.collisions(t.id)) == 1)
        # the end of an earlier, superseded episode (other instruction) must not end this trial
        pubs["done"].publish(String(data=json.dumps({"reason": "aborted", "steps": 1, "instruction": "an older instruction"})))
        _spin_until(ex, lambda: False, 0.3)
        assert reader.trial(t.id).state == "running"
        pubs["done"].publish(String(data=json.dumps({"reason": "stop", "steps": 4, "actions": [s[0] for s in script]})))
        assert _spin_until(ex, lambda: reader.trial(t.id).outcome is not None)

        t = reader.trial(t.id)
        assert (t.outcome, t.end_reason, t.ne_m, t.ne_source) == ("success", "stop", 2.0, "ground_truth")
        steps = reader.steps(t.id)
        assert [s.action for s in steps] == [s[0] for s in script]
        assert steps[2].x == pytest.approx(1.49) and steps[2].yaw == pytest.approx(0.2618, abs=1e-4)
        assert [s.collisions for s in steps] == [0, 1, 1, 0]
        assert steps[0].people_visible == 2 and steps[0].nearest_person_m == pytest.approx(1.5)
        assert steps[3].distance_to_goal_m == 2.0 and steps[3].map_x == 10.5
        c1, c2 = reader.collisions(t.id)
        assert (c1.type, c1.step_seq) == ("static", 1)
        assert (c2.type, c2.step_seq, c2.human_id, c2.x) == ("human", 2, "3", 1.4)
        assert reader.actions(t.id) == ["MOVE_FORWARD", "TURN_LEFT", "MOVE_FORWARD", "STOP"]

        # the MCAP bag of the trial holds what was published during it
        from mcap.reader import make_reader

        bag = tmp_path / "mcap" / f"trial_{t.id:04d}"
        assert t.mcap_path == str(bag) and (bag / "metadata.yaml").is_file()
        with open(bag / f"trial_{t.id:04d}_0.mcap", "rb") as fh:
            topics_seen = {c.topic for _, c, _ in make_reader(fh).iter_messages()}
        assert {"/havln/action_result", "/havln/collision", "/havln/ground_truth", "/havln/episode_done"} <= topics_seen

        # operator services: start, abort with a reason parameter; a second start refused while running
        cli_start = io.create_client(Trigger, "trial/start")
        cli_abort = io.create_client(Trigger, "trial/abort")
        assert _spin_until(ex, lambda: cli_start.service_is_ready() and cli_abort.service_is_ready())

        def call(client):
            fut = client.call_async(Trigger.Request())
            assert _spin_until(ex, fut.done)
            return fut.result()

        r = call(cli_start)
        assert r.success and "started" in r.message
        assert not call(cli_start).success
        node.set_parameters([Parameter("reason", value="battery low")])
        r = call(cli_abort)
        assert r.success
        last = reader.trials()[-1]
        assert (last.outcome, last.reason) == ("aborted", "battery low")
        assert call(cli_start).success
        reader.close()
    finally:
        node.destroy_node()  # safe shutdown closes the running trial
        io.destroy_node()
        ex.shutdown()
    with TrialStore(tmp_path / "trials.db", readonly=True) as st:
        last = st.trials()[-1]
        assert (last.outcome, last.reason, last.end_reason) == ("aborted", "shutdown", "shutdown")
        assert len(st.trials()) == 3


def test_bad_region_parameter_is_one_line(ros_context, tmp_path):
    with pytest.raises(ConfigError, match="did you mean 'office'") as ei:
        TrialLoggerNode(params=_params(tmp_path, region="offce"), context=ros_context)
    assert "\n" not in str(ei.value)


def test_auto_verdict_fails_a_stop_whose_goal_cannot_be_walked_to(ros_context, tmp_path):
    """Ground truth says NE 2.0 m (the straight line, as sim_node reports it) but goal_unreachable: no success."""
    node = TrialLoggerNode(params=_params(tmp_path, record_mcap=False), context=ros_context)
    io = Node("trial_test_io_unreach", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    ex.add_node(io)
    try:
        instr = io.create_publisher(String, topics.INSTRUCTION, 10)
        result = io.create_publisher(DiagnosticStatus, topics.ACTION_RESULT, 50)
        gt = io.create_publisher(DiagnosticStatus, topics.GROUND_TRUTH, 10)
        done = io.create_publisher(String, topics.EPISODE_DONE, 10)
        assert _spin_until(ex, lambda: all(p.get_subscription_count() > 0 for p in (instr, result, gt, done))), "no DDS match on loopback"
        reader = TrialStore(tmp_path / "trials.db")
        rec = {"episode_id": "42", "scan": "zsNo4HB9uLZ", "x": 10.0, "y": 20.0, "z": 0.0, "yaw_deg": 90.0, "distance_to_goal_m": 2.0}
        gt.publish(status_msg("ground_truth", "42", rec | {"distance_to_goal_euclid_m": 2.0, "goal_unreachable": True}))
        _spin_until(ex, lambda: False, 0.3)
        instr.publish(String(data="Go up the stairs."))
        assert _spin_until(ex, lambda: reader.running_trial() is not None)
        t = reader.running_trial()
        result.publish(_result("STOP", 0.0, 0.0, 0.0))
        assert _spin_until(ex, lambda: reader.step_count(t.id) == 1)
        done.publish(String(data=json.dumps({"reason": "stop", "steps": 1, "actions": ["STOP"]})))
        assert _spin_until(ex, lambda: reader.trial(t.id).outcome is not None)
        t = reader.trial(t.id)
        assert (t.outcome, t.ne_m) == ("failure", 2.0) and "goal unreachable" in t.reason, t.reason
        reader.close()
    finally:
        node.destroy_node()
        io.destroy_node()
        ex.shutdown()


def test_robot_reset_event_marks_the_trial_and_is_not_joined_into_its_path(ros_context, tmp_path):
    """The Go2 rebooted mid-trial (go2_driver_node's robot_reset on go2/event, as the driver publishes
    it, transient local): the trial's notes say why, the next step carries the marker, and the
    path length leaves out the jump back to the origin (it used to join it: 1.21 m for ~1.09 m walked)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from havln_robot.trials.metrics import path_length

    node = TrialLoggerNode(params=_params(tmp_path, record_mcap=False, platform="go2"), context=ros_context)
    io = Node("go2_driver_node", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    ex.add_node(io)
    latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    try:
        pubs = {
            "instr": io.create_publisher(String, topics.INSTRUCTION, 10),
            "result": io.create_publisher(DiagnosticStatus, topics.ACTION_RESULT, 50),
            "event": io.create_publisher(String, "go2/event", latched),
        }
        assert _spin_until(ex, lambda: all(p.get_subscription_count() > 0 for p in pubs.values())), "no DDS match on loopback"
        reader = TrialStore(tmp_path / "trials.db")
        pubs["instr"].publish(String(data="Walk to the door."))
        assert _spin_until(ex, lambda: reader.running_trial() is not None)
        tid = reader.running_trial().id
        for x in (0.25, 0.50, 0.60):
            pubs["result"].publish(_result("MOVE_FORWARD", x, 0.0, 0.0))
        assert _spin_until(ex, lambda: reader.step_count(tid) == 3)
        why = "robot reset: state back after 4.0 s of silence with odometry at the origin, from (0.60, 0.00) m (reboot / SDK reconnect)"
        pubs["event"].publish(String(data=json.dumps({"event": "robot_reset", "reason": why, "robot_id": "go2-A"})))
        assert _spin_until(ex, lambda: "robot_reset" in reader.trial(tid).notes)
        for x, outcome in ((0.0, "aborted"), (0.24, "ok"), (0.49, "ok")):
            pubs["result"].publish(_result("MOVE_FORWARD", x, 0.0, 0.0, outcome))
        assert _spin_until(ex, lambda: reader.step_count(tid) == 6)
        steps = reader.steps(tid)
        assert steps[3].result.get("robot_reset") == why and "robot_reset" not in steps[4].result
        assert path_length(reader.trial(tid), steps) == pytest.approx(1.09, abs=1e-6)
        reader.close()
    finally:
        ex.shutdown()
        node.destroy_node()
        io.destroy_node()
