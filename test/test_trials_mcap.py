"""MCAP recorder: rosbag2-compatible bags, read back with mcap_ros2 and compared field by field."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import String

from havln_robot.ros.mcap import ros_recorder
from havln_robot.trials.recorder import McapRecorder, RecorderError, message_definition


def _odom(i: int) -> Odometry:
    m = Odometry()
    m.header.stamp = Time(sec=100 + i, nanosec=5000 * i)
    m.header.frame_id, m.child_frame_id = "odom", "base_link"
    m.pose.pose.position.x, m.pose.pose.position.y = 0.25 * i, -0.1 * i
    m.pose.pose.orientation.z, m.pose.pose.orientation.w = 0.3826834, 0.9238795
    m.pose.covariance = [float(k) for k in range(36)]
    m.twist.twist.angular.z = 0.5
    return m


def _image(h=48, w=64, enc="rgb8", seed=0) -> tuple[Image, np.ndarray]:
    rng = np.random.default_rng(seed)
    if enc == "16UC1":
        a = rng.integers(0, 10000, size=(h, w), dtype=np.uint16)
    else:
        a = np.zeros((h, w, 3), np.uint8)
        a[..., 0] = np.linspace(0, 255, w)[None, :]
        a[..., 1] = np.linspace(0, 255, h)[:, None]
        a[..., 2] = 128
    m = Image(height=h, width=w, encoding=enc, is_bigendian=0, step=a.strides[0], data=a.tobytes())
    m.header.frame_id = "camera_color_optical_frame"
    m.header.stamp = Time(sec=7)
    return m, a


class _Msg:
    def __init__(self, schema, channel, message, ros_msg):
        self.schema, self.channel, self.message, self.ros_msg = schema, channel, message, ros_msg
        self.log_time_ns, self.publish_time_ns = message.log_time, message.publish_time


def _read_all(paths):
    """Decode every message with mcap_ros2 (from the schema text stored in the file)."""
    out = []
    for p in paths:
        with open(p, "rb") as fh:
            reader = make_reader(fh, decoder_factories=[DecoderFactory()])
            out += [_Msg(*t) for t in reader.iter_decoded_messages(log_time_order=True)]
    return out


def test_round_trip_odom_images_strings(tmp_path):
    bag = tmp_path / "trial_0001"
    img, arr = _image()
    depth, darr = _image(enc="16UC1", seed=1)
    st = DiagnosticStatus(name="MOVE_FORWARD", message="ok", values=[KeyValue(key="distance_odom_m", value="0.2500")])
    with ros_recorder(bag) as rec:
        for i in range(20):
            assert rec.write("odom", _odom(i), log_time_ns=1_000_000_000 + i * 10_000_000)
        assert rec.write("havln/instruction", String(data="Walk past the sofa, mind the person."), log_time_ns=1_000_000_001)
        assert rec.write("havln/action_result", st, log_time_ns=1_050_000_000)
        assert rec.write("camera/color/image_raw", img, log_time_ns=1_100_000_000)
        assert rec.write("camera/aligned_depth_to_color/image_raw", depth, log_time_ns=1_100_000_001)
    [mcap_file] = rec.stats.files
    assert mcap_file.name == "trial_0001_0.mcap"

    with open(mcap_file, "rb") as fh:
        reader = make_reader(fh)
        header = reader.get_header()
        summary = reader.get_summary()
    assert header.profile == "ros2"
    assert {s.encoding for s in summary.schemas.values()} == {"ros2msg"}
    assert {s.name for s in summary.schemas.values()} >= {"nav_msgs/msg/Odometry", "sensor_msgs/msg/Image", "std_msgs/msg/String"}
    assert {c.message_encoding for c in summary.channels.values()} == {"cdr"}
    assert all("offered_qos_profiles" in c.metadata for c in summary.channels.values())
    assert summary.statistics.message_count == 24

    msgs = _read_all([mcap_file])
    by_topic: dict[str, list] = {}
    for m in msgs:
        by_topic.setdefault(m.channel.topic, []).append(m)
    assert [len(by_topic[t]) for t in ("/odom", "/havln/instruction", "/havln/action_result", "/camera/color/image_raw")] == [20, 1, 1, 1]
    # decoded by mcap_ros2 from our schema text == the original field values
    for i, m in enumerate(by_topic["/odom"]):
        o = m.ros_msg
        assert (o.header.frame_id, o.child_frame_id) == ("odom", "base_link")
        assert o.pose.pose.position.x == pytest.approx(0.25 * i) and o.pose.pose.position.y == pytest.approx(-0.1 * i)
        assert list(o.pose.covariance) == [float(k) for k in range(36)]
        assert (o.header.stamp.sec, o.header.stamp.nanosec) == (100 + i, 5000 * i)
        assert m.log_time_ns == 1_000_000_000 + i * 10_000_000 and m.publish_time_ns == (100 + i) * 10**9 + 5000 * i
        # and the raw CDR bytes are exactly what rclpy deserialises back to the original message
        assert deserialize_message(m.message.data, Odometry) == _odom(i)
    assert by_topic["/havln/instruction"][0].ros_msg.data == "Walk past the sofa, mind the person."
    d = by_topic["/havln/action_result"][0].ros_msg
    assert (d.name, d.message, d.values[0].key, d.values[0].value) == ("MOVE_FORWARD", "ok", "distance_odom_m", "0.2500")
    im = by_topic["/camera/color/image_raw"][0].ros_msg
    assert (im.height, im.width, im.encoding) == (48, 64, "rgb8")
    assert np.array_equal(np.frombuffer(bytes(im.data), np.uint8).reshape(48, 64, 3), arr)
    dm = by_topic["/camera/aligned_depth_to_color/image_raw"][0].ros_msg
    assert np.array_equal(np.frombuffer(bytes(dm.data), np.uint16).reshape(48, 64), darr)

    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["version"] == 5 and meta["storage_identifier"] == "mcap" and meta["message_count"] == 24
    assert meta["relative_file_paths"] == ["trial_0001_0.mcap"]
    counts = {t["topic_metadata"]["name"]: t["message_count"] for t in meta["topics_with_message_count"]}
    assert counts["/odom"] == 20
    assert {t["topic_metadata"]["serialization_format"] for t in meta["topics_with_message_count"]} == {"cdr"}
    assert meta["starting_time"]["nanoseconds_since_epoch"] == 1_000_000_000
    assert meta["duration"]["nanoseconds"] == 190_000_000


def test_image_downsampling_rate_and_jpeg(tmp_path):
    img, arr = _image(h=60, w=80)
    info = CameraInfo(
        width=80, height=60, k=[100.0, 0, 40.0, 0, 100.0, 30.0, 0, 0, 1], p=[100.0, 0, 40.0, 0, 0, 100.0, 30.0, 0, 0, 0, 1, 0]
    )
    with ros_recorder(tmp_path / "small", image_stride=2, image_max_rate_hz=5.0) as rec:
        written = [rec.write("camera/color/image_raw", img, log_time_ns=t * 50_000_000) for t in range(20)]  # 20 Hz for 1 s
        rec.write("camera/color/camera_info", info, log_time_ns=0)
    assert sum(written) == 5 and rec.stats.dropped == {"image_rate": 15}
    msgs = _read_all(rec.stats.files)
    im = next(m.ros_msg for m in msgs if m.channel.topic == "/camera/color/image_raw")
    assert (im.height, im.width, im.step) == (30, 40, 120)
    assert np.array_equal(np.frombuffer(bytes(im.data), np.uint8).reshape(30, 40, 3), arr[::2, ::2])
    ci = next(m.ros_msg for m in msgs if m.channel.topic == "/camera/color/camera_info")
    assert (ci.width, ci.height) == (40, 30) and list(ci.k)[:6] == [50.0, 0, 20.0, 0, 50.0, 15.0]

    import cv2

    with ros_recorder(tmp_path / "jpeg", image_format="jpeg") as rec:
        rec.write("camera/color/image_raw", img, log_time_ns=1)
    [m] = _read_all(rec.stats.files)
    assert m.channel.topic == "/camera/color/image_raw/compressed" and "jpeg" in m.ros_msg.format
    dec = cv2.cvtColor(cv2.imdecode(np.frombuffer(bytes(m.ros_msg.data), np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    assert dec.shape == arr.shape and np.abs(dec.astype(int) - arr).mean() < 3.0


def test_size_cap_roll_and_stop(tmp_path):
    img, _ = _image(h=100, w=100)  # 30 kB per message
    notes: list[str] = []
    with ros_recorder(tmp_path / "roll", max_bytes=100_000, on_limit="roll", log=notes.append) as rec:
        for i in range(10):
            assert rec.write("camera/color/image_raw", img, log_time_ns=i)
            rec.write("odom", _odom(i), log_time_ns=i)
    assert len(rec.stats.files) >= 3 and all(p.stat().st_size <= 100_000 for p in rec.stats.files)
    msgs = _read_all(rec.stats.files)
    assert len(msgs) == 20 and sorted(m.log_time_ns for m in msgs if m.channel.topic == "/odom") == list(range(10))
    assert any("continuing in roll_1.mcap" in n for n in notes)
    meta = yaml.safe_load((tmp_path / "roll" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["message_count"] == 20 and len(meta["files"]) == len(rec.stats.files)

    notes.clear()
    with ros_recorder(tmp_path / "stop", max_bytes=100_000, on_limit="stop", log=notes.append) as rec:
        ok = [rec.write("camera/color/image_raw", img, log_time_ns=i) for i in range(10)]
    assert ok[0] and not ok[-1] and rec.stopped and len(notes) == 1 and "recording stopped" in notes[0]
    assert len(_read_all(rec.stats.files)) == sum(ok) < 10
    assert rec.stats.files[0].stat().st_size <= 100_000


def test_bad_options_and_types(tmp_path):
    with pytest.raises(RecorderError, match="on_limit"):
        ros_recorder(tmp_path / "a", on_limit="wrap")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(RecorderError, match="not empty"):
        ros_recorder(tmp_path / "full")
    with pytest.raises(RecorderError, match="not found"):
        message_definition("no_such_msgs/msg/Thing")
    with ros_recorder(tmp_path / "b") as rec:
        rec.write("x", String(data="a"), log_time_ns=1)
        with pytest.raises(RecorderError, match="differs"):
            rec.write("x", _odom(0), log_time_ns=2)


def test_the_recorder_needs_an_injected_serialiser(tmp_path):
    """trials.recorder imports no rclpy: without the ROS layer's serialiser it records pre-serialised data only."""
    with McapRecorder(tmp_path / "raw") as rec:
        with pytest.raises(RecorderError, match="serialiser"):
            rec.write("chatter", String(data="hi"), log_time_ns=1)
    with pytest.raises(RecorderError, match="CompressedImage"):
        McapRecorder(tmp_path / "jpeg_raw", image_format="jpeg")


def test_message_definition_names_dependencies_as_the_fields_do():
    """rosbag2's layout: the .msg text as installed, then each dependency once, depth first, sorted per message."""
    from havln_robot.trials.recorder import find_msg_file

    text = message_definition("sensor_msgs/msg/Image")
    header = find_msg_file("std_msgs", "Header").read_text()
    time_ = find_msg_file("builtin_interfaces", "Time").read_text()
    image = find_msg_file("sensor_msgs", "Image").read_text()
    sep = "\n" + "=" * 80 + "\n"
    assert text == f"{image}{sep}MSG: std_msgs/Header\n{header}{sep}MSG: builtin_interfaces/Time\n{time_}"
    pose = message_definition("geometry_msgs/msg/PoseArray")
    heads = [ln for ln in pose.splitlines() if ln.startswith("MSG: ")]
    assert heads == ["MSG: geometry_msgs/Pose", "MSG: geometry_msgs/Point", "MSG: geometry_msgs/Quaternion",
                     "MSG: std_msgs/Header", "MSG: builtin_interfaces/Time"]  # fmt: skip


def test_offered_qos_yaml_is_rosbag2s_integer_form():
    from havln_robot.trials.recorder import offered_qos_yaml

    assert offered_qos_yaml([]) == ""
    text = offered_qos_yaml([{"history": 1, "depth": 5, "reliability": 2, "durability": 2}])
    assert text.startswith("- history: 1\n  depth: 5\n  reliability: 2\n  durability: 2\n  deadline:\n    sec: 9223372036\n")
    assert text.endswith("avoid_ros_namespace_conventions: false")


def test_recovery_rewrites_old_dependency_names(tmp_path):
    """A bag of the older recorder (dependencies as ``MSG: pkg/msg/Type``) is recovered with rosbag2's names."""
    from havln_robot.trials.recorder import recover_bag

    old = message_definition("nav_msgs/msg/Odometry").replace("MSG: std_msgs/Header", "MSG: std_msgs/msg/Header")
    with McapRecorder(tmp_path / "old") as rec:
        rec._defs["nav_msgs/msg/Odometry"] = old.encode()
        from rclpy.serialization import serialize_message

        rec.write_serialized("/odom", "nav_msgs/msg/Odometry", serialize_message(_odom(0)), 5, offered_qos="- history: 3")
    recover_bag(tmp_path / "old", tmp_path / "new")
    with open(next((tmp_path / "new").glob("*.mcap")), "rb") as fh:
        summary = make_reader(fh).get_summary()
    [schema] = summary.schemas.values()
    [channel] = summary.channels.values()
    assert schema.data.decode() == message_definition("nav_msgs/msg/Odometry")
    assert channel.metadata["offered_qos_profiles"] == "- history: 3"
