"""One bad message never kills a node: every subscription callback of every HavlnNode is guarded
(_base.HavlnNode.create_subscription): a message it cannot take is dropped with a throttled WARN
line naming the topic and the error. The callbacks are called directly, as the executor calls them
(no DDS timing)."""

from __future__ import annotations

import pytest
from sensor_msgs.msg import Image
from std_msgs.msg import String

from havln_robot.agent.params import AGENT_PARAMS
from havln_robot.nodes.agent_node import AgentNode
from havln_robot.nodes.people_node import PeopleNode
from havln_robot.nodes.trial_logger_node import TrialLoggerNode
from havln_robot.perception.params import PEOPLE_PARAMS
from havln_robot.trials.params import TRIAL_LOGGER_PARAMS
from havln_robot.trials.store import TrialStore


def _bad_images():
    depth = Image(height=120, width=160, encoding="16UC1", step=320, data=bytes(100))
    color = Image(height=120, width=160, encoding="rgb8", step=480, data=bytes(99))
    huge = Image(height=2**31, width=2**31, encoding="rgb8", step=3 * 2**31, data=bytes(10))
    odd = Image(height=2, width=2, encoding="bogus\x1b[2J", step=4, data=bytes(8))
    return [depth, color, huge, odd]


def _call(sub, msg):
    """As the executor calls it: ``(msg)`` or ``(msg, info)`` by the callback's signature."""
    from rclpy.subscription import Subscription

    if sub._callback_type == Subscription.CallbackType.WithMessageInfo:
        return sub.callback(msg, {"publication_sequence_number": 1, "source_timestamp": 0, "received_timestamp": 0})
    return sub.callback(msg)


def _feed_everything(node):
    """Every subscription gets a default message and, for images, malformed ones; nothing may raise,
    and nothing is dropped for a wrong call (a TypeError would mean the guard broke the signature)."""
    for sub in list(node.subscriptions):
        msgs = [sub.msg_type()]
        if sub.msg_type is Image:
            msgs += _bad_images()
        for m in msgs:
            _call(sub, m)
    assert not [k for k in node.dropped_messages if k[1] == "TypeError"], node.dropped_messages


def _camera_info(node):
    from sensor_msgs.msg import CameraInfo

    info = CameraInfo(width=160, height=120, k=[100.0, 0.0, 79.5, 0.0, 100.0, 59.5, 0.0, 0.0, 1.0])
    for sub in node.subscriptions:
        if sub.msg_type is CameraInfo:
            _call(sub, info)


def _sub(node, param):
    topic = node.params[param].strip("/")
    return next(s for s in node.subscriptions if s.topic_name.strip("/").endswith(topic))


def test_agent_node_survives_a_malformed_depth_image(ros_context):
    node = AgentNode(params=AGENT_PARAMS.validate({"policy": "forward"}), context=ros_context)
    try:
        _call(_sub(node, "depth_topic"), _bad_images()[0])
        assert [k for k in node.dropped_messages if node.params["depth_topic"] in k[0]], node.dropped_messages
        _feed_everything(node)
    finally:
        node.destroy_node()


def test_people_node_survives_a_short_depth_image(ros_context):
    node = PeopleNode(params=PEOPLE_PARAMS.defaults(), context=ros_context)
    try:
        _camera_info(node)
        _call(_sub(node, "depth_topic"), _bad_images()[0])
        assert node.dropped_messages, "the short image must be counted as dropped"
        _feed_everything(node)
    finally:
        node.destroy_node()


def test_trial_logger_survives_a_short_colour_image_while_blurring(ros_context, tmp_path):
    p = TRIAL_LOGGER_PARAMS.validate(
        {
            "db_path": str(tmp_path / "t.db"),
            "record_mcap": True,
            "mcap_dir": str(tmp_path / "mcap"),
            "mcap_color": "blur_people",
            "mcap_record_camera": True,
        }
    )
    node = TrialLoggerNode(params=p, context=ros_context)
    try:
        _call(_sub(node, "instruction_topic"), String(data="go"))
        _camera_info(node)
        _call(_sub(node, "color_topic"), _bad_images()[1])
        assert [k for k in node.dropped_messages if node.params["color_topic"] in k[0]], node.dropped_messages
        _feed_everything(node)
        assert node.store.running_trial() is not None, "the trial goes on"
    finally:
        node.destroy_node()


def test_a_guarded_callback_warns_once_per_period(ros_context):
    lines = []
    node = PeopleNode(params=PEOPLE_PARAMS.defaults(), context=ros_context)
    try:
        node.get_logger = lambda: type("L", (), {"warning": lambda self, m: lines.append(m)})()

        def decode(msg):
            raise ValueError(f"cannot reshape {msg}\x1b[2J\nsecond line")

        guarded = node._guard(decode, "camera/depth", "message")
        for i in range(50):
            assert guarded(i) is None
        assert lines == ["camera/depth: message dropped: ValueError: cannot reshape 0\\x1b[2J"]
        assert node.dropped_messages == {("camera/depth", "ValueError"): 50}
    finally:
        node.destroy_node()


def test_a_node_crash_is_the_running_trials_reason(ros_context, tmp_path):
    from havln_robot.bringup import crash_reason

    p = TRIAL_LOGGER_PARAMS.validate({"db_path": str(tmp_path / "t.db")})
    node = TrialLoggerNode(params=p, context=ros_context)
    try:
        _call(_sub(node, "instruction_topic"), String(data="go"))
        node.shutdown_reason = crash_reason("motion_node", RuntimeError("sensor driver exploded\nmore"))
        node.safe_stop()
    finally:
        node.destroy_node()
    with TrialStore(tmp_path / "t.db", readonly=True) as st:
        t = st.trials()[-1]
    assert (t.outcome, t.reason) == ("aborted", "node motion_node crashed: RuntimeError: sensor driver exploded")


@pytest.mark.parametrize("reason", ["shutdown"])
def test_a_plain_shutdown_still_says_shutdown(ros_context, tmp_path, reason):
    p = TRIAL_LOGGER_PARAMS.validate({"db_path": str(tmp_path / "t.db")})
    node = TrialLoggerNode(params=p, context=ros_context)
    try:
        _call(_sub(node, "instruction_topic"), String(data="go"))
    finally:
        node.destroy_node()
    with TrialStore(tmp_path / "t.db", readonly=True) as st:
        assert st.trials()[-1].reason == reason
