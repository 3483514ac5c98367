"""Recorded bags open in the tools labs use: every topic decodes with Foxglove's parser and rosbags.

The bag is recorded through trial_logger_node (fixture ``trial_bag``, test/bagreaders.py); the
readers share no code with the recorder: Foxglove's npm packages under node (tools/bagcheck) and
``rosbags``. Each decoded message is compared field for field with the message published.
``ros2 bag`` itself cannot run here, so ``metadata.yaml`` is checked against the version-5 layout
ROS 2 Humble reads (and Jazzy reads too) and through rosbags' rosbag2 reader.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml
from bagreaders import RECORDED, by_topic, foxglove_read, plain, rosbags_read

pytest.importorskip("rclpy")

REPO = Path(__file__).resolve().parent.parent
COMPRESSED = "/camera/color/image_raw/compressed"


@pytest.fixture(scope="module")
def foxglove(trial_bag):
    """The trial bag as Foxglove's parser reads it (one node process for all its files)."""
    bag, _, _ = trial_bag
    return foxglove_read(sorted(bag.glob("*.mcap")))


def _check_compressed(published, decoded_plain):
    """A JPEG copy of a published rgb8 Image: header kept, format named, pixels close."""
    for pub, dec in zip(published, decoded_plain, strict=True):
        assert dec["header"] == plain(pub.header)
        assert dec["format"] == "rgb8; jpeg compressed bgr8"


def _jpeg_close(pub, data: bytes):
    rgb = np.frombuffer(bytes(pub.data), np.uint8).reshape(pub.height, pub.width, 3)
    dec = cv2.cvtColor(cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    assert dec.shape == rgb.shape
    assert np.abs(dec[:, :16].astype(int) - rgb[:, :16]).mean() < 4.0  # the flat half survives JPEG


def check_foxglove(files, published, exact_prefix=False):
    """Every channel's schema parses with Foxglove's parser and every message equals the published one.

    ``exact_prefix``: the bag may hold only the first messages of each topic (a recovered bag).
    """
    msgs, errors = [], {}
    for f in files:
        msgs += f["messages"]
        errors.update({c["topic"]: c["error"] for c in f["channels"] if c["error"]})
    assert not errors, f"Foxglove's parser rejects: {errors}"
    got = by_topic(msgs)
    if not exact_prefix:
        assert set(got) == set(published), set(got) ^ set(published)
    for topic, pubs in published.items():
        dec = got.get(topic, [])
        assert len(dec) <= len(pubs) if exact_prefix else len(dec) == len(pubs), topic
        assert not any(m["trailing"] for m in dec), f"{topic}: bytes left after decoding (schema does not match the data)"
        if topic == COMPRESSED:
            _check_compressed(pubs[: len(dec)], [m["msg"] for m in dec])
        else:
            assert [m["msg"] for m in dec] == [plain(p) for p in pubs[: len(dec)]], topic
    return got


def check_rosbags(bag: Path, published, exact_prefix=False):
    """rosbags reads the bag folder (metadata.yaml + files) and decodes every message to the published values."""
    conns, msgs = rosbags_read(bag)
    got: dict[str, list] = {}
    for topic, _t, m in msgs:
        got.setdefault(topic, []).append(m)
    if not exact_prefix:
        assert {c.topic for c in conns} == set(published) == set(got)
        assert {c.topic: c.msgcount for c in conns} == {t: len(v) for t, v in published.items()}
    for topic, pubs in published.items():
        dec = got.get(topic, [])
        assert len(dec) <= len(pubs) if exact_prefix else len(dec) == len(pubs), topic
        if topic == COMPRESSED:
            _check_compressed(pubs[: len(dec)], [plain(m) for m in dec])
            for p, m in zip(pubs, dec, strict=False):
                _jpeg_close(p, bytes(m.data))
        else:
            assert [plain(m) for m in dec] == [plain(p) for p in pubs[: len(dec)]], topic
    return conns, got


def test_every_topic_decodes_with_foxglove_parser(trial_bag, foxglove):
    bag, published, _ = trial_bag
    assert set(published) == set(RECORDED)
    got = check_foxglove(foxglove, published)
    assert sum(len(v) for v in got.values()) == 3 * len(RECORDED) - 2  # one instruction starts the trial
    for f in foxglove:
        assert f["profile"] == "ros2"
        assert {c["topic"]: c["schema"] for c in f["channels"]} == RECORDED
        assert {c["encoding"] for c in f["channels"]} == {"ros2msg"}


def test_every_topic_decodes_with_rosbags(trial_bag, foxglove):
    bag, published, _ = trial_bag
    conns, _ = check_rosbags(bag, published)
    assert {c.topic: c.msgtype for c in conns} == RECORDED
    # both readers see the same bytes: Foxglove's hash of each JPEG equals rosbags' data
    fox = by_topic([m for f in foxglove for m in f["messages"]])[COMPRESSED]
    _, ros = rosbags_read(bag)
    ros_jpeg = [plain(m)["data"] for t, _, m in ros if t == COMPRESSED]
    assert [m["msg"]["data"] for m in fox] == ros_jpeg


def test_schemas_are_laid_out_as_rosbag2_writes_them(foxglove, trial_bag):
    """Dependencies after a line of 80 '=' and ``MSG: <the name the field uses>``, each once, depth first."""
    from mcap.reader import make_reader

    bag, _, _ = trial_bag
    [path] = sorted(bag.glob("*.mcap"))
    with open(path, "rb") as fh:
        schemas = {s.name: s.data.decode() for s in make_reader(fh).get_summary().schemas.values()}
    for name, text in schemas.items():
        parts = text.split("\n" + "=" * 80 + "\n")
        refs = set()
        for part in parts:
            for line in part.splitlines():
                m = re.match(r"\s*([A-Za-z0-9_]+/[A-Za-z0-9_]+)(\[[^\]]*\])?\s", line + "\n")
                if m:
                    refs.add(m.group(1))
        heads = [p.split("\n", 1)[0] for p in parts[1:]]
        assert all(h.startswith("MSG: ") and "/msg/" not in h for h in heads), (name, heads)
        named = [h[5:] for h in heads]
        assert len(named) == len(set(named)), name
        assert set(named) >= refs, (name, refs - set(named))
    odom = schemas["nav_msgs/msg/Odometry"]
    assert "\nMSG: std_msgs/Header\n" in odom and "\nMSG: geometry_msgs/Pose\n" in odom
    assert "MSG: std_msgs/msg/Header" not in odom


def test_metadata_yaml_is_the_version_humble_and_jazzy_read(trial_bag, foxglove):
    from mcap.reader import make_reader

    bag, published, qos = trial_bag
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["version"] == 5 and meta["storage_identifier"] == "mcap"
    assert set(meta) == {"version", "storage_identifier", "duration", "starting_time", "message_count",
                         "topics_with_message_count", "compression_format", "compression_mode",
                         "relative_file_paths", "files"}  # fmt: skip
    files = sorted(bag.glob("*.mcap"))
    assert meta["relative_file_paths"] == [p.name for p in files] == [f["path"] for f in meta["files"]]
    times = [int(m["log_time"]) for f in foxglove for m in f["messages"]]
    assert meta["starting_time"]["nanoseconds_since_epoch"] == min(times)
    assert meta["duration"]["nanoseconds"] == max(times) - min(times)
    counts = {t["topic_metadata"]["name"]: t["message_count"] for t in meta["topics_with_message_count"]}
    assert counts == {t: len(v) for t, v in published.items()} and meta["message_count"] == len(times)
    with open(files[0], "rb") as fh:
        channel_qos = {c.topic: c.metadata["offered_qos_profiles"] for c in make_reader(fh).get_summary().channels.values()}
    for t in meta["topics_with_message_count"]:
        md = t["topic_metadata"]
        assert md["serialization_format"] == "cdr" and md["type"] == RECORDED[md["name"]]
        assert channel_qos[md["name"]] == md["offered_qos_profiles"]
        [offered] = yaml.safe_load(md["offered_qos_profiles"])  # one publisher per topic
        assert list(offered) == ["history", "depth", "reliability", "durability", "deadline", "lifespan", "liveliness",
                                 "liveliness_lease_duration", "avoid_ros_namespace_conventions"]  # fmt: skip
        assert isinstance(offered["reliability"], int) and isinstance(offered["durability"], int), "Humble reads integers"
        pub = qos[md["name"]]
        assert (offered["reliability"], offered["durability"]) == (pub.reliability.value, pub.durability.value), md["name"]
        assert offered["deadline"] == {"sec": 9223372036, "nsec": 854775807}


KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from bagreaders import default_topic, sample_messages
    from havln_robot.ros.mcap import ros_recorder
    msgs = sample_messages(n=40)
    rec = ros_recorder(sys.argv[1], chunk_size=4096, image_format="jpeg")
    t = 1_000_000_000
    for i in range(40):
        for k, v in msgs.items():
            rec.write(default_topic(k), v[i], log_time_ns=t)
            t += 1000
    rec._fh.flush()
    print("written", flush=True)
    time.sleep(60)
    """
)


def test_bag_recovered_from_a_killed_recorder_decodes_everywhere(tmp_path):
    """kill -9 mid-recording, `havln-robot trial recover-bag`, then both readers on the recovered bag."""
    from bagreaders import recorded_topic, sample_messages

    bag = tmp_path / "trial_0007"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(bag), str(Path(__file__).parent)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "written"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert not (bag / "metadata.yaml").exists()  # killed before close
    r = subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "trial", "recover-bag", str(bag)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "trial_0007_recovered"
    published = {recorded_topic(k): v for k, v in sample_messages(n=40).items()}
    present = {t: published[t] for t in _recorded_topics(out)}
    got = check_foxglove(foxglove_read(sorted(out.glob("*.mcap"))), present, exact_prefix=True)
    assert sum(len(v) for v in got.values()) > 5 * len(published)  # the complete chunks survived
    check_rosbags(out, present, exact_prefix=True)


def _recorded_topics(bag: Path) -> list[str]:
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    return [t["topic_metadata"]["name"] for t in meta["topics_with_message_count"]]


def test_gazebo_profile_bag_decodes_everywhere(ros_context, tmp_path):
    """Gazebo's recording: trial_logger_node with config/gazebo.yaml's parameters, 32FC1 depth as its bridge publishes."""
    from bagreaders import record_trial_bag

    from havln_robot.config import load_profile

    prof = load_profile(REPO / "config" / "gazebo.yaml").nodes["trial_logger_node"]
    assert prof["record_mcap"]
    over = {k: v for k, v in prof.items() if k.startswith("mcap_") or k.endswith("_topic")}
    over.update(mcap_dir=str(tmp_path / "mcap"), mcap_image_stride=1, mcap_image_max_rate_hz=0.0, use_sim_time=False)
    over = {k: v for k, v in over.items() if k != "use_sim_time"}
    from havln_robot.trials.params import TRIAL_LOGGER_PARAMS

    over.setdefault("mcap_color", TRIAL_LOGGER_PARAMS.defaults()["mcap_color"])  # as the profile runs it
    t0 = time.monotonic()
    bag, published, _ = record_trial_bag(ros_context, tmp_path, over, depth_encoding="32FC1")
    check_foxglove(foxglove_read(sorted(bag.glob("*.mcap"))), published)
    check_rosbags(bag, published)
    if over["mcap_color"] == "none":
        colour = "/" + over.get("color_topic", TRIAL_LOGGER_PARAMS.defaults()["color_topic"]).lstrip("/")
        assert not any(t.startswith(colour) for t in published), "no colour frames in a bag by default (bystanders' faces)"
    assert time.monotonic() - t0 < 60


def test_the_trial_recorder_is_the_only_mcap_writer():
    """Every MCAP the stack writes (trial_logger_node under the demo, Gazebo, replay --record, and
    recover-bag) goes through trials/recorder.py, so the checks above cover all of them."""
    writers = []
    for p in (REPO / "havln_robot").rglob("*.py"):
        text = p.read_text(encoding="utf-8")
        if re.search(r"^\s*(from mcap\.writer import|import mcap\.writer|from mcap_ros2\.writer import)", text, re.M):
            writers.append(p.relative_to(REPO).as_posix())
    assert writers == ["havln_robot/trials/recorder.py"]
    users = sorted(
        p.relative_to(REPO).as_posix()
        for p in (REPO / "havln_robot").rglob("*.py")
        if re.search(r"\b(McapRecorder|ros_recorder)\(", p.read_text(encoding="utf-8"))
    )
    assert users == ["havln_robot/nodes/trial_logger_node.py", "havln_robot/ros/mcap.py", "havln_robot/trials/recorder.py"]


@pytest.mark.parametrize("content", [b"", b"hello, not a bag\n", b"PK\x03\x04zip"])
def test_recover_bag_names_a_file_that_is_not_mcap(tmp_path, content, capsys):
    """A non-MCAP file was reported as 'killed before its first chunk'."""
    from havln_robot.cli import main

    bag = tmp_path / "trial_0001"
    bag.mkdir()
    (bag / "trial_0001_0.mcap").write_bytes(content)
    assert main(["trial", "--db", str(tmp_path / "t.db"), "recover-bag", str(bag)]) != 0
    err = capsys.readouterr().err
    assert "not an MCAP file" in err and "Traceback" not in err and "killed" not in err, err
    assert not (tmp_path / "trial_0001_recovered").exists()
