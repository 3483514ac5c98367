"""The paper's two computers: go2.launch.py role:=robot|inference|all, the two-host DDS profiles, and
agent_node on one host driving the robot's nodes on another over the Fast DDS two-host profile
(two network namespaces joined by a veth pair; needs root, skips with the reason elsewhere)."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import textwrap
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from havln_robot.bench.link import LinkLab, namespaces_unavailable

REPO = Path(__file__).resolve().parent.parent
FASTDDS = REPO / "config" / "fastdds_two_hosts.xml"
CYCLONE = REPO / "config" / "cyclonedds_two_hosts.xml"
NS = {"f": "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"}


class _Sub:
    """Stand-in for a launch substitution: remembers what it was built from."""

    def __init__(self, *a, **k):
        self.a, self.k = a, k


def _launch_stubs(role: str) -> dict[str, types.ModuleType]:
    """Minimal launch / launch_ros / ament_index_python modules (not installed here) that record
    what go2.launch.py builds; LaunchConfiguration('role').perform() returns ``role``."""

    class LaunchConfiguration(_Sub):
        def perform(self, context):
            return {"role": role}.get(self.a[0], "")

    class OpaqueFunction(_Sub):
        pass

    class Node(_Sub):
        pass

    mods = {
        "ament_index_python": types.ModuleType("ament_index_python"),
        "ament_index_python.packages": types.ModuleType("ament_index_python.packages"),
        "launch": types.ModuleType("launch"),
        "launch.actions": types.ModuleType("launch.actions"),
        "launch.conditions": types.ModuleType("launch.conditions"),
        "launch.substitutions": types.ModuleType("launch.substitutions"),
        "launch_ros": types.ModuleType("launch_ros"),
        "launch_ros.actions": types.ModuleType("launch_ros.actions"),
    }
    mods["ament_index_python.packages"].get_package_share_directory = lambda pkg: str(REPO)
    mods["launch"].LaunchDescription = lambda actions: list(actions)
    for name in ("DeclareLaunchArgument", "LogInfo", "SetEnvironmentVariable"):
        setattr(mods["launch.actions"], name, type(name, (_Sub,), {}))
    mods["launch.actions"].OpaqueFunction = OpaqueFunction
    mods["launch.conditions"].IfCondition = type("IfCondition", (_Sub,), {})
    mods["launch.substitutions"].LaunchConfiguration = LaunchConfiguration
    mods["launch_ros.actions"].Node = Node
    return mods


def launched(role: str, monkeypatch) -> dict[str, list]:
    """The havln_robot nodes go2.launch.py starts for ``role`` (console off): name -> parameters."""
    for name, mod in _launch_stubs(role).items():
        monkeypatch.setitem(sys.modules, name, mod)
    desc = runpy.run_path(str(REPO / "launch" / "go2.launch.py"))["generate_launch_description"]()
    opaque = [a for a in desc if type(a).__name__ == "OpaqueFunction"]
    assert len(opaque) == 1
    fn, args = opaque[0].k["function"], opaque[0].k["args"]
    nodes = [a for a in fn(None, *args) if type(a).__name__ == "Node"]
    return {n.k["name"]: n.k["parameters"] for n in nodes}


def test_launch_roles_split_the_nodes_between_the_two_computers(monkeypatch):
    robot = launched("robot", monkeypatch)
    inference = launched("inference", monkeypatch)
    everything = launched("all", monkeypatch)
    assert set(robot) == {"camera_node", "go2_driver_node", "motion_node", "people_node", "trial_logger_node"}
    assert set(inference) == {"agent_node"}
    assert set(everything) == set(robot) | set(inference)
    # images cross the link compressed: the robot's camera publishes them, the workstation's agent reads them
    assert robot["camera_node"][-1] == {"image_transport": "both"}
    assert inference["agent_node"][-1] == {"image_transport": "compressed"}
    assert all(len(p) == 1 for p in everything.values())  # role:=all: the profile alone, raw images
    with pytest.raises(RuntimeError, match="role:='laptop'; use one of"):
        launched("laptop", monkeypatch)


def test_fastdds_two_host_profile_is_unicast_between_two_peers():
    root = ET.parse(FASTDDS).getroot()
    part = root.find("f:participant", NS)
    assert part.get("is_default_profile") == "true"
    assert part.find("f:rtps/f:useBuiltinTransports", NS).text == "false"
    peers = [a.text for a in part.findall("f:rtps/f:builtin/f:initialPeersList/f:locator/f:udpv4/f:address", NS)]
    assert len(peers) == 2 and len(set(peers)) == 2 and all(p.count(".") == 3 for p in peers)
    assert not root.findall(".//f:multicastLocatorList", NS) and not root.findall(".//f:metatrafficMulticastLocatorList", NS)
    kinds = {t.find("f:transport_id", NS).text: t.find("f:type", NS).text for t in root.findall(".//f:transport_descriptor", NS)}
    used = [t.text for t in part.findall("f:rtps/f:userTransports/f:transport_id", NS)]
    assert {kinds[u] for u in used} == {"UDPv4", "SHM"}


def test_fastdds_two_host_profile_is_accepted_by_fast_dds():
    """Fast DDS (through rclpy) loads the file without one XML error (it would fall back to its
    defaults, multicast included, and only log the error)."""
    env = {**os.environ, "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp", "FASTRTPS_DEFAULT_PROFILES_FILE": str(FASTDDS)}
    code = "import rclpy; rclpy.init(); rclpy.create_node('probe'); print('ok')"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok"
    assert "Error" not in r.stderr, r.stderr[-1500:]


def test_cyclonedds_two_host_config_is_accepted_by_cyclone(tmp_path):
    """Cyclone DDS itself parses the file, with the addresses and the interface from the environment."""
    pytest.importorskip("cyclonedds")
    env = {**os.environ, "CYCLONEDDS_URI": f"file://{CYCLONE}", "HAVLN_DDS_INTERFACE": "lo"}
    env |= {"HAVLN_ROBOT_IP": "127.0.0.1", "HAVLN_INFERENCE_IP": "127.0.0.2"}
    code = "from cyclonedds.domain import DomainParticipant; DomainParticipant(0); print('ok')"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-1500:]
    text = CYCLONE.read_text()
    assert "<AllowMulticast>false</AllowMulticast>" in text and text.count("<Peer address=") == 2


_ROBOT = textwrap.dedent(
    """
    import json, subprocess, sys, time, threading
    import numpy as np, rclpy
    from rclpy.qos import qos_profile_sensor_data
    from diagnostic_msgs.msg import DiagnosticStatus
    from sensor_msgs.msg import CompressedImage
    from std_msgs.msg import String
    from havln_robot import topics
    from havln_robot.perception.image_codec import compressed_depth_topic, compressed_topic, encode_color, encode_depth
    from havln_robot.ros.codec import compressed_msg, status_msg
    rclpy.init()
    node = rclpy.create_node("robot_side")
    done, actions = [], []
    pub_c = node.create_publisher(CompressedImage, compressed_topic(topics.COLOR_IMAGE), qos_profile_sensor_data)
    pub_d = node.create_publisher(CompressedImage, compressed_depth_topic(topics.DEPTH_IMAGE), qos_profile_sensor_data)
    pub_r = node.create_publisher(DiagnosticStatus, topics.ACTION_RESULT, 10)
    pub_i = node.create_publisher(String, topics.INSTRUCTION, 10)
    # argv: run time (s), then optionally: cut after this many actions, cut length (s), cut and restore commands
    cut_after = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    marks, arrivals = {}, []
    def cut():
        time.sleep(0.2)  # in the middle of the motion of that action
        marks["cut"] = time.monotonic(); subprocess.run(sys.argv[4], shell=True, check=True)
        time.sleep(float(sys.argv[3]))
        subprocess.run(sys.argv[5], shell=True, check=True); marks["restore"] = time.monotonic()
    def on_action(m):
        actions.append(m.data); arrivals.append(time.monotonic())
        n = len(actions)
        if n == cut_after:
            threading.Thread(target=cut, daemon=True).start()
        def reply():
            time.sleep(0.5)  # the primitive's motion, on the robot
            vals = {"seq": n, "action": m.data, "outcome": "ok", "yaw_imu_deg": 0.0, "yaw_odom_deg": 0.0}
            pub_r.publish(status_msg(m.data, "ok", vals))
        threading.Thread(target=reply, daemon=True).start()
    node.create_subscription(String, topics.ACTION, on_action, 10)
    node.create_subscription(String, topics.EPISODE_DONE, lambda m: done.append(json.loads(m.data)), 10)
    rgb = np.full((120, 160, 3), 90, np.uint8); depth = np.full((120, 160), 2000, np.uint16)
    def frames():
        st = node.get_clock().now().to_msg()
        pub_c.publish(compressed_msg(*encode_color(rgb), topics.COLOR_OPTICAL_FRAME, st))
        pub_d.publish(compressed_msg(*encode_depth(depth), topics.COLOR_OPTICAL_FRAME, st))
    node.create_timer(1 / 15, frames)
    t_end = time.monotonic() + float(sys.argv[1]); sent = False
    while time.monotonic() < t_end and not done:
        rclpy.spin_once(node, timeout_sec=0.05)
        if not sent and pub_i.get_subscription_count() > 0:
            time.sleep(0.5); pub_i.publish(String(data="walk forward twice and stop")); sent = True
    print(json.dumps({"done": done, "actions": actions, "instruction_sent": sent, "arrivals": arrivals, "marks": marks}), flush=True)
    """
)


def _profile_for(tmp_path: Path, lab: LinkLab) -> Path:
    """config/fastdds_two_hosts.xml with the namespaces' addresses in place of the two hosts' (text
    edit, as a user edits it: Fast DDS refuses a file re-serialised with namespace prefixes)."""
    text = FASTDDS.read_text()
    root = ET.fromstring(text)
    robot, workstation = [a.text for a in root.findall(".//f:initialPeersList/f:locator/f:udpv4/f:address", NS)]
    out = tmp_path / "fastdds_two_hosts.xml"
    out.write_text(text.replace(f">{robot}<", f">{lab.robot_ip}<").replace(f">{workstation}<", f">{lab.inference_ip}<"))
    return out


def _two_hosts(tmp_path: Path, steps: int, robot_args: list[str] | None = None) -> tuple[dict, str]:
    """agent_node (policy forward:steps=N, image_transport compressed) in the inference namespace,
    the robot script in the robot namespace, over the two-host Fast DDS profile; returns the robot
    script's record and the agent's log."""
    with LinkLab() as lab:
        profile = _profile_for(tmp_path, lab)
        env = {k: v for k, v in os.environ.items() if k not in ("ROS_LOCALHOST_ONLY", "ROS_STATIC_PEERS")}
        env |= {
            "HAVLN_DDS": "robot",  # go2.launch.py's dds:=robot: the nodes keep this DDS environment
            "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
            "FASTRTPS_DEFAULT_PROFILES_FILE": str(profile),
            "ROS_AUTOMATIC_DISCOVERY_RANGE": "SYSTEM_DEFAULT",
            "PYTHONUNBUFFERED": "1",
        }
        agent_args = [f"policy:=forward:steps={steps}", "image_transport:=compressed", "camera_hfov_deg:=69.4", "settle_s:=0.05"]
        code = "import sys; from havln_robot.nodes.agent_node import main; sys.argv[0] = 'agent_node'; main()"
        ros_args = ["--ros-args", "-r", "__node:=agent_node", *[x for a in agent_args for x in ("-p", a)]]
        agent = subprocess.Popen(
            lab.exec(lab.ns_i, [sys.executable, "-c", code, *ros_args]),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        extra = []
        if robot_args is not None:  # cut the link from the robot side: drop everything on its veth end
            cut = f"ip link set {lab.dev_r} down"
            restore = f"ip link set {lab.dev_r} up"
            extra = [*robot_args, cut, restore]
        try:
            r = subprocess.run(
                lab.exec(lab.ns_r, [sys.executable, "-c", _ROBOT, "60", *extra]), env=env, capture_output=True, text=True, timeout=120
            )
        finally:
            agent.terminate()
            try:
                log = agent.communicate(timeout=20)[0]
            except subprocess.TimeoutExpired:
                agent.kill()
                log = agent.communicate()[0]
    assert r.returncode == 0, r.stderr[-2000:]
    rec = json.loads(r.stdout.strip().splitlines()[-1])
    assert rec["instruction_sent"], f"agent_node's subscription never reached the robot host; agent log:\n{log[-2000:]}"
    assert rec["done"], f"no episode_done from the inference host; agent log:\n{log[-2000:]}"
    return rec, log


NO_NS = namespaces_unavailable()


@pytest.mark.skipif(bool(NO_NS), reason=f"network namespaces unavailable: {NO_NS}")
def test_agent_on_the_inference_host_drives_the_robot_host_over_two_host_dds(tmp_path):
    """Robot namespace: compressed camera, motion stand-in, instruction, episode record. Inference
    namespace: agent_node (image_transport compressed) started as ros2 launch role:=inference would."""
    rec, _ = _two_hosts(tmp_path, 2)
    assert rec["done"][0]["reason"] == "stop" and rec["done"][0]["actions"] == ["MOVE_FORWARD", "MOVE_FORWARD", "STOP"]
    assert rec["actions"] == ["MOVE_FORWARD", "MOVE_FORWARD", "STOP"]


@pytest.mark.skipif(bool(NO_NS), reason=f"network namespaces unavailable: {NO_NS}")
def test_dds_link_cut_between_the_hosts_robot_waits_and_the_episode_goes_on(tmp_path):
    """The link drops 0.2 s into the 2nd action's motion for 2 s: the robot finishes that primitive
    on its own, no action reaches it while cut, and after the link returns reliable DDS delivers the
    held result and the episode ends with the policy's actions."""
    rec, log = _two_hosts(tmp_path, 4, ["2", "2.0"])
    t_cut, t_back = rec["marks"]["cut"], rec["marks"]["restore"]
    assert not [t for t in rec["arrivals"] if t_cut < t < t_back], rec
    assert rec["done"][0]["reason"] == "stop", rec["done"][0]
    assert rec["actions"] == ["MOVE_FORWARD"] * 4 + ["STOP"] and rec["done"][0]["actions"] == rec["actions"]
    assert any(t >= t_back for t in rec["arrivals"])  # went on after the link came back
