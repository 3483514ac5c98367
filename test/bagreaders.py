"""Independent readers of the recorded MCAP bags, and the messages a short test trial publishes.

Two readers that share no code with the recorder (which writes with the ``mcap`` Python library):

* :func:`foxglove_read` -- Foxglove's own parsers under node (``tools/bagcheck/bagcheck.mjs``:
  ``@mcap/core`` indexed reader, ``@foxglove/rosmsg`` schema parser, ``@foxglove/rosmsg2-serialization``
  CDR reader; installed by ``make setup``), one node process for all given files;
* :func:`rosbags_read` -- ``rosbags`` (PyPI): reads the bag *folder* through its ``metadata.yaml``
  (version, files, QoS) and decodes each message with types built from the schema text in the file.

Both give each message as the same plain form (:func:`plain`), so a decoded message compares with
``plain(published_message)`` field for field.
"""

from __future__ import annotations

import array
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rosspin

REPO = Path(__file__).resolve().parent.parent
BAGCHECK = REPO / "tools" / "bagcheck"

#: Topics and types the trial logger records (its default topics; colour as JPEG).
RECORDED = {
    "/havln/instruction": "std_msgs/msg/String",
    "/havln/action": "std_msgs/msg/String",
    "/havln/action_result": "diagnostic_msgs/msg/DiagnosticStatus",
    "/havln/collision": "diagnostic_msgs/msg/DiagnosticStatus",
    "/odom": "nav_msgs/msg/Odometry",
    "/imu": "sensor_msgs/msg/Imu",
    "/havln/ground_truth": "diagnostic_msgs/msg/DiagnosticStatus",
    "/havln/people": "geometry_msgs/msg/PoseArray",
    "/havln/agent_status": "diagnostic_msgs/msg/DiagnosticStatus",
    "/havln/episode_done": "std_msgs/msg/String",
    "/cmd_vel": "geometry_msgs/msg/Twist",
    "/camera/color/image_raw/compressed": "sensor_msgs/msg/CompressedImage",
    "/camera/aligned_depth_to_color/image_raw": "sensor_msgs/msg/Image",
    "/camera/color/camera_info": "sensor_msgs/msg/CameraInfo",
}


def node_tools_or_skip() -> str:
    """Path of ``node`` when it and the bag check's npm packages are installed; else skip (fail under CI)."""
    node = shutil.which("node")
    missing = [] if node else ["node (Debian package nodejs)"]
    for pkg in ("@mcap/core", "@foxglove/rosmsg", "@foxglove/rosmsg2-serialization", "@foxglove/wasm-zstd", "@foxglove/wasm-lz4"):
        if not (BAGCHECK / "node_modules" / pkg / "package.json").is_file():
            missing.append(f"npm package {pkg} in tools/bagcheck/node_modules")
    if missing:
        why = f"Foxglove's readers are not installed: {', '.join(missing)} (run `make setup`)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return node  # type: ignore[return-value]


def foxglove_read(files: list[Path]) -> list[dict[str, Any]]:
    """Read ``files`` with Foxglove's parsers in one node process; the per-file results of bagcheck.mjs."""
    node = node_tools_or_skip()
    r = subprocess.run([node, str(BAGCHECK / "bagcheck.mjs"), *map(str, files)], capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1) and r.stdout, f"bagcheck.mjs failed ({r.returncode}): {r.stderr[-2000:]}"
    out = json.loads(r.stdout)["files"]
    bad = [f"{f['path']}: {f['error']}" for f in out if f.get("error")]
    assert not bad, f"Foxglove's MCAP reader cannot open: {bad}"
    return out


def _hash(a: np.ndarray) -> dict[str, Any]:
    return {"length": int(a.size), "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}


def plain(v: Any) -> Any:
    """A message (rclpy or rosbags) or field as bagcheck.mjs prints it: dicts of fields, numeric
    arrays longer than 64 as ``{"length", "sha256"}``, ``byte`` as an int."""
    if hasattr(v, "get_fields_and_field_types"):  # rclpy message
        return {k: plain(getattr(v, k)) for k in v.get_fields_and_field_types()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):  # rosbags message (constants are upper case)
        return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v) if not f.name.startswith("__") and not f.name.isupper()}
    if isinstance(v, bytes) and len(v) == 1:  # rclpy's byte
        return v[0]
    if isinstance(v, (bytes, bytearray, array.array)):
        v = np.frombuffer(bytes(v), np.uint8) if not isinstance(v, array.array) else np.array(v, dtype=np.dtype(v.typecode))
    if isinstance(v, np.ndarray):
        return _hash(v) if v.size > 64 else [x.item() for x in v]
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def rosbags_read(bag_dir: Path) -> tuple[Any, list[tuple[str, int, Any]]]:
    """Read a bag folder with ``rosbags``: (its reader's connections, [(topic, log time ns, message)])."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    with Reader(bag_dir) as reader:
        store = get_typestore(Stores.EMPTY)
        types: dict[str, Any] = {}
        for c in reader.connections:
            assert c.msgdef.data, f"{c.topic}: no message definition in the bag"
            types.update(get_types_from_msg(c.msgdef.data, c.msgtype))
        store.register(types)
        msgs = [(c.topic, t, store.deserialize_cdr(raw, c.msgtype)) for c, t, raw in reader.messages()]
        return list(reader.connections), msgs


def by_topic(messages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """bagcheck.mjs messages grouped by topic, in file order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for m in messages:
        out.setdefault(m["topic"], []).append(m)
    return out


def sample_messages(n: int = 3, depth_encoding: str = "16UC1") -> dict[str, list[Any]]:
    """``n`` distinct messages per topic the trial logger records (relative topic → messages).

    The colour images are recorded as ``<topic>/compressed`` (JPEG); depth stays raw
    (``16UC1`` mm as the RealSense, or ``32FC1`` m as Gazebo's bridge publishes it).
    """
    from builtin_interfaces.msg import Time
    from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
    from geometry_msgs.msg import Pose, PoseArray, Twist
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import CameraInfo, Image, Imu
    from std_msgs.msg import String

    def status(name: str, i: int) -> DiagnosticStatus:
        return DiagnosticStatus(
            level=bytes([i % 3]), name=name, message=f"{name} {i}", hardware_id="go2",
            values=[KeyValue(key="seq", value=str(i)), KeyValue(key="x", value=f"{0.25 * i:.4f}")],
        )  # fmt: skip

    out: dict[str, list[Any]] = {k: [] for k in ("instruction", "action", "result", "collision", "odom", "imu", "gt", "people",
                                                  "agent", "done", "cmd_vel", "color", "depth", "info")}  # fmt: skip
    rng = np.random.default_rng(7)
    for i in range(n):
        stamp = Time(sec=1700 + i, nanosec=1000 * i + 1)
        out["instruction"].append(String(data=f"Walk past the sofa, mind the person ({i})."))
        out["action"].append(String(data=["MOVE_FORWARD", "TURN_LEFT", "STOP"][i % 3]))
        out["result"].append(status("MOVE_FORWARD", i))
        out["collision"].append(status("collision", i))
        o = Odometry(child_frame_id="base_link")
        o.header.stamp, o.header.frame_id = stamp, "odom"
        o.pose.pose.position.x, o.pose.pose.position.y = 0.25 * i, -0.125 * i
        o.pose.pose.orientation.z, o.pose.pose.orientation.w = 0.3826834323650898, 0.9238795325112867
        o.pose.covariance = [float(k + i) for k in range(36)]
        o.twist.twist.linear.x, o.twist.twist.angular.z = 0.5, -0.25 * i
        out["odom"].append(o)
        m = Imu()
        m.header.stamp, m.header.frame_id = stamp, "imu_link"
        m.orientation.w, m.angular_velocity.z, m.linear_acceleration.z = 1.0, 0.01 * i, 9.81
        m.orientation_covariance = [0.001 * (k + 1) for k in range(9)]
        out["imu"].append(m)
        out["gt"].append(status("ground_truth", i))
        pa = PoseArray(poses=[Pose() for _ in range(i + 1)])
        pa.header.stamp, pa.header.frame_id = stamp, "base_link"
        for k, p in enumerate(pa.poses):
            p.position.x, p.position.y, p.orientation.w = 1.5 + k, -0.5 * k, 1.0
        out["people"].append(pa)
        out["agent"].append(status("agent", i))
        out["done"].append(String(data=json.dumps({"reason": "stop", "steps": i})))
        tw = Twist()
        tw.linear.x, tw.angular.z = 0.1 * (i + 1), -0.2
        out["cmd_vel"].append(tw)
        rgb = rng.integers(0, 256, size=(24, 32, 3), dtype=np.uint8)
        rgb[:, :16] = (40 * i) % 256  # a flat area JPEG keeps close
        im = Image(height=24, width=32, encoding="rgb8", is_bigendian=0, step=96, data=rgb.tobytes())
        im.header.stamp, im.header.frame_id = stamp, "camera_color_optical_frame"
        out["color"].append(im)
        if depth_encoding == "32FC1":
            d = rng.uniform(0.2, 8.0, size=(24, 32)).astype(np.float32)
        else:
            d = rng.integers(0, 10000, size=(24, 32), dtype=np.uint16)
        dm = Image(height=24, width=32, encoding=depth_encoding, is_bigendian=0, step=d.strides[0], data=d.tobytes())
        dm.header.stamp, dm.header.frame_id = stamp, "camera_color_optical_frame"
        out["depth"].append(dm)
        ci = CameraInfo(width=32, height=24, distortion_model="plumb_bob", d=[0.01 * i, 0.0, 0.0, 0.0, 0.0])
        ci.header.stamp, ci.header.frame_id = stamp, "camera_color_optical_frame"
        ci.k = [30.0 + i, 0.0, 16.0, 0.0, 30.0 + i, 12.0, 0.0, 0.0, 1.0]
        ci.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        ci.p = [30.0 + i, 0.0, 16.0, 0.0, 0.0, 30.0 + i, 12.0, 0.0, 0.0, 0.0, 1.0, 0.0]
        out["info"].append(ci)
    return out


#: sample_messages key → trial_logger_node topic parameter.
TOPIC_PARAM = {
    "instruction": "instruction_topic", "action": "action_topic", "result": "action_result_topic",
    "collision": "collision_topic", "odom": "odom_topic", "imu": "imu_topic", "gt": "ground_truth_topic",
    "people": "people_topic", "agent": "agent_status_topic", "done": "episode_done_topic", "cmd_vel": "cmd_vel_topic",
    "color": "color_topic", "depth": "depth_topic", "info": "color_info_topic",
}  # fmt: skip


def record_trial_bag(context: Any, tmp: Path, overrides: dict[str, Any] | None = None, depth_encoding: str = "16UC1"):
    """Record a short trial through trial_logger_node (the stack's recording path) on ``context``.

    One instruction starts the trial; then :func:`sample_messages` is published on every recorded
    topic (sensor topics with the sensor-data QoS their drivers use). Returns ``(bag folder,
    {recorded topic: [published messages]}, {recorded topic: publisher QoS profile})``.
    """

    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, qos_profile_sensor_data

    from havln_robot.nodes.trial_logger_node import TrialLoggerNode
    from havln_robot.trials.params import TRIAL_LOGGER_PARAMS

    params = {
        "platform": "sim", "region": "kitchen", "db_path": str(tmp / "trials.db"), "mcap_dir": str(tmp / "mcap"),
        "auto_start": True, "auto_end": False, "auto_judge": False, "record_mcap": True, "mcap_record_camera": True,
        "mcap_image_stride": 1, "mcap_image_max_rate_hz": 0.0, "mcap_image_format": "jpeg", "poll_period": 0.2,
        "mcap_color": "raw",  # every topic a bag can hold, colour included (the default records none)
    }  # fmt: skip
    params.update(overrides or {})
    p = TRIAL_LOGGER_PARAMS.validate(params)
    msgs = sample_messages(depth_encoding=depth_encoding)
    if p["mcap_color"] == "none":  # the privacy default: the logger does not even subscribe to colour
        msgs.pop("color")
    sensor = {"odom", "imu", "color", "depth", "info"}
    node = TrialLoggerNode(params=p, context=context)
    io = Node("bag_test_io", context=context)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(io)

    def spin_until(cond, timeout=15.0):
        return rosspin.spin_until(ex, cond, timeout)

    try:
        qos = {k: (qos_profile_sensor_data if k in sensor else QoSProfile(depth=10)) for k in msgs}
        pubs = {k: io.create_publisher(type(v[0]), p[TOPIC_PARAM[k]], qos[k]) for k, v in msgs.items()}
        assert spin_until(lambda: all(pub.get_subscription_count() > 0 for pub in pubs.values())), "no DDS match on loopback"
        pubs["instruction"].publish(msgs["instruction"][0])
        assert spin_until(lambda: node._recorder is not None), "the instruction did not start a trial with a bag"
        msgs["instruction"] = msgs["instruction"][:1]
        for i in range(3):
            for k, pub in pubs.items():
                if k != "instruction":
                    pub.publish(msgs[k][i])
            spin_until(lambda: False, 0.05)
        want = sum(len(v) for v in msgs.values())
        assert spin_until(lambda: sum(node._recorder.stats.messages.values()) >= want), node._recorder.stats
        bag = node._recorder.dir
    finally:
        ex.shutdown()
        node.destroy_node()
        io.destroy_node()
    published, profiles = {}, {}
    for k, v in msgs.items():
        topic = "/" + p[TOPIC_PARAM[k]].lstrip("/") + ("/compressed" if k == "color" else "")
        published[topic], profiles[topic] = v, qos[k]
    return bag, published, profiles


def default_topic(key: str) -> str:
    """The topic trial_logger_node subscribes by default for a :func:`sample_messages` key (relative name)."""
    from havln_robot.trials.params import TRIAL_LOGGER_PARAMS

    return TRIAL_LOGGER_PARAMS.defaults()[TOPIC_PARAM[key]]


def recorded_topic(key: str) -> str:
    """The topic a :func:`sample_messages` key is recorded under (colour as JPEG on ``.../compressed``)."""
    return "/" + default_topic(key) + ("/compressed" if key == "color" else "")


def check_every_topic_decodes(bag: Path) -> dict[str, int]:
    """Both readers decode every message of every topic of ``bag`` (a bag of unknown content, e.g.
    the demo's); their per-topic counts equal metadata.yaml's. Returns topic → messages."""
    import yaml

    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    counts = {t["topic_metadata"]["name"]: t["message_count"] for t in meta["topics_with_message_count"]}
    files = foxglove_read([bag / p for p in meta["relative_file_paths"]])
    errors = {c["topic"]: c["error"] for f in files for c in f["channels"] if c["error"]}
    assert not errors, f"Foxglove's parser rejects: {errors}"
    fox = {t: len(v) for t, v in by_topic([m for f in files for m in f["messages"]]).items()}
    _, msgs = rosbags_read(bag)
    ros: dict[str, int] = {}
    for topic, _t, _m in msgs:
        ros[topic] = ros.get(topic, 0) + 1
    assert fox == ros == {t: n for t, n in counts.items() if n}, (fox, ros, counts)
    return counts
