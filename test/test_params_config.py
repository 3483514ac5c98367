"""Typed parameters and profile validation: every bad value is refused with one line naming the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from havln_robot import config
from havln_robot.params import ConfigError, Param, ParamSpec

REPO = Path(__file__).resolve().parent.parent

SPEC = ParamSpec(
    "motion_node",
    (
        Param("max_linear_speed", 0.3, "float", "forward speed limit, m/s", min=0.05, max=1.5),
        Param("control_rate", 50, "int", "control loop rate, Hz", min=10, max=500),
        Param("odom_topic", "odom", "str", "odometry topic"),
        Param("look_mode", "body_pitch", "str", "how LOOK_UP/DOWN are executed", choices=("body_pitch", "unsupported")),
        Param("footprint", [0.35, 0.155], "float_list", "half length, half width, m", min=0.0, max=1.0, min_len=2, max_len=2),
        Param("enable_revert", True, "bool", "back off after a collision"),
    ),
)


@pytest.fixture
def fake_registry(monkeypatch):
    monkeypatch.setattr(config, "NODES", {"motion_node": ("test_params_config", "test_params_config:SPEC")})


def write(tmp_path, text):
    p = tmp_path / "profile.yaml"
    p.write_text(text)
    return p


def test_defaults_filled_and_ints_refused_for_floats_as_ros_does(fake_registry, tmp_path):
    prof = config.load_profile(write(tmp_path, "motion_node:\n  ros__parameters:\n    max_linear_speed: 1.0\n    use_sim_time: true\n"))
    params = prof.nodes["motion_node"]
    assert params["max_linear_speed"] == 1.0 and isinstance(params["max_linear_speed"], float)
    assert params["control_rate"] == 50 and params["use_sim_time"] is True
    # rclpy refuses an INTEGER override of a DOUBLE parameter: so does the validator
    with pytest.raises(ConfigError, match=r"max_linear_speed: expected a float, got the integer 1 .*write 1.0"):
        config.load_profile(write(tmp_path, "motion_node:\n  ros__parameters:\n    max_linear_speed: 1\n"))


@pytest.mark.parametrize(
    "body, expected",
    [
        ("max_linear_sped: 0.3", r"max_linear_sped: unknown parameter; did you mean 'max_linear_speed'\?"),
        ("max_linear_speed: fast", r"max_linear_speed: expected a number, got 'fast'; allowed: float in \[0.05, 1.5\]"),
        ("max_linear_speed: 9.0", r"max_linear_speed: 9.0 is out of range; allowed: float in \[0.05, 1.5\]"),
        ("control_rate: 50.5", r"control_rate: expected an integer"),
        ("look_mode: sideways", r"look_mode: 'sideways' is not allowed; allowed: str one of 'body_pitch', 'unsupported'"),
        ("footprint: [0.3]", r"footprint: list of length 1; allowed: float list in \[0, 1\] length 2..2"),
        ("enable_revert: 1", r"enable_revert: expected true/false"),
        ("use_sim_time: yes please", r"use_sim_time: expected true/false"),
    ],
)
def test_bad_values_name_the_key_and_the_allowed_range(fake_registry, tmp_path, body, expected):
    p = write(tmp_path, f"motion_node:\n  ros__parameters:\n    {body}\n")
    with pytest.raises(ConfigError, match=expected) as exc:
        config.load_profile(p)
    msg = str(exc.value)
    assert "\n" not in msg and str(p) in msg and "motion_node" in msg


@pytest.mark.parametrize(
    "text, expected",
    [
        ("motion_nod:\n  ros__parameters: {}\n", r"motion_nod: unknown node; did you mean 'motion_node'\?"),
        ("motion_node:\n  parameters: {}\n", r"expected exactly one key 'ros__parameters'"),
        ("motion_node: [1, 2\n", r"invalid YAML"),
        ("- just a list\n", r"expected a mapping of node names"),
        ("", r"expected a mapping of node names"),
    ],
)
def test_bad_structure(fake_registry, tmp_path, text, expected):
    with pytest.raises(ConfigError, match=expected):
        config.load_profile(write(tmp_path, text))


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        config.load_profile(tmp_path / "nope.yaml")


def test_node_table_is_the_one_node_list():
    """config, setup.py's console scripts and every node module follow havln_robot/node_table.py."""
    from havln_robot import node_table

    assert config.NODES is node_table.NODES
    for name, (module, spec) in node_table.NODES.items():
        assert module == f"havln_robot.nodes.{name}"
        assert config.load_spec(name).node == name, spec


def test_param_default_must_satisfy_its_own_spec():
    with pytest.raises(ConfigError):
        Param("x", 5.0, "float", "bad default", max=1.0)


def test_shipped_profiles_validate():
    """Every node of every shipped profile validates."""
    for name in ("go2", "sim", "gazebo"):
        prof = config.load_profile(REPO / "config" / f"{name}.yaml")
        keys = set(config.read_yaml(REPO / "config" / f"{name}.yaml"))
        assert {f"/**/{n}" for n in prof.nodes} == keys, "namespace-proof keys"


def test_one_robot_has_one_sensor_mount(tmp_path):
    """The camera and LiDAR mounts are one setting of the robot: a profile that tells people_node a
    different LiDAR height (or pitch) than motion_node -- so one of them places every point where the
    sensor is not -- is refused in one line naming both nodes, both values and where each was set;
    the same value in both loads; a profile still using people_node's old ``cloud_topic`` is told
    the new name."""
    base = (REPO / "config" / "go2.yaml").read_text()
    for key, motion, people in (("lidar_z_m", "0.283", "0.45"), ("lidar_pitch_deg", "-164.91", "-15.0"), ("camera_z_m", "0.4125", "0.43")):
        people_at = base.index("/**/people_node:")
        head, tail = base[:people_at], base[people_at:]
        line = next(ln for ln in tail.splitlines() if ln.startswith(f"    {key}:"))
        assert f"{key}: {motion}" in line
        bad = write(tmp_path, head + tail.replace(line, f"    {key}: {people}"))
        with pytest.raises(ConfigError) as err:
            config.load_profile(bad)
        msg = str(err.value)
        assert "\n" not in msg and key in msg and "motion_node" in msg and "people_node" in msg, msg
        assert f"{float(motion)!r}" in msg and f"{float(people)!r}" in msg and "line" in msg and "same value" in msg, msg
        # the same change made to every node that declares the key loads
        good = write(tmp_path, base.replace(f"    {key}: {motion}", f"    {key}: {people}"))
        assert config.load_profile(good).nodes["people_node"][key] == float(people)
    text = base[: base.index("/**/people_node:")] + base[base.index("/**/people_node:") :].replace(
        "    lidar_topic:", "    cloud_topic:", 1
    )
    with pytest.raises(ConfigError, match="cloud_topic: unknown parameter; it is now called 'lidar_topic'"):
        config.load_profile(write(tmp_path, text))


def test_the_simulator_renders_the_camera_where_motion_node_places_its_depth(tmp_path):
    """sim_node's camera is the same mount rows as motion_node's and people_node's: a sim profile that
    moves the camera in sim_node only (rendered 0.1 m higher than motion_node projects its depth) is
    refused naming both nodes; sim_node's old camera_height_m / camera_forward_m are told the new names."""
    base = (REPO / "config" / "sim.yaml").read_text()
    sim_at = base.index("/**/sim_node:")
    end = base.index("\n/**/", sim_at + 1)
    part = base[sim_at:end]
    bad = write(tmp_path, base[:sim_at] + part.replace("    camera_z_m: 0.4125", "    camera_z_m: 0.5125") + base[end:])
    with pytest.raises(ConfigError) as err:
        config.load_profile(bad)
    msg = str(err.value)
    assert "camera_z_m" in msg and "sim_node" in msg and "0.5125" in msg and "same value" in msg, msg
    for old, new in (("camera_z_m", "camera_height_m"), ("camera_x_m", "camera_forward_m")):
        renamed = base[:sim_at] + part.replace(f"    {old}:", f"    {new}:") + base[end:]
        with pytest.raises(ConfigError, match=f"{new}: unknown parameter; it is now called '{old}'"):
            config.load_profile(write(tmp_path, renamed))


def test_cli_refuses_misspelled_key_in_one_line(tmp_path):
    """`havln-robot launch` on a profile with a typo exits 2 with a single line naming the key, no traceback."""
    node = next(iter(config.NODES))
    spec = config.load_spec(node)
    key = spec.params[0].name
    p = write(tmp_path, f"{node}:\n  ros__parameters:\n    {key}x: 1\n")
    r = subprocess.run([sys.executable, "-m", "havln_robot.cli", "launch", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"{key}x: unknown parameter" in lines[0] and "Traceback" not in r.stderr


# --- ROS names: topics, services, frames, namespaces (refused by config, not by rclpy in launch) -------

#: Every ``str`` parameter without choices that is NOT a ROS name (paths, free text, a vendor's DDS topic).
#: A new str parameter must be added here or be a topic/service/frame/node name (Param.name_kind).
NOT_ROS_NAMES = {
    ("camera_node", "serial_number"),
    ("go2_driver_node", "network_interface"),
    ("go2_driver_node", "sport_state_topic"),  # a raw Unitree SDK DDS topic (rt/...), not a ROS name
    ("go2_driver_node", "robot_id"),  # a label (serial number), not a ROS name
    ("go2_driver_node", "latch_file"),
    ("sim_node", "episodes_file"),
    ("sim_node", "connectivity_dir"),
    ("sim_node", "episode_id"),
    ("sim_node", "scenes_dir"),
    ("motion_node", "person_detector"),
    ("people_node", "appearance_model"),
    ("agent_node", "policy"),
    ("agent_node", "device"),
    *(
        ("trial_logger_node", k)
        for k in ("region", "instance", "operator", "campaign", "reason", "policy", "profile", "db_path", "mcap_dir")
    ),
    *(("console_node", k) for k in ("host", "token", "tls_certfile", "tls_keyfile", "db_path", "platform", "episodes_file")),
}


def _name_params():
    """(node, Param) of every str parameter that names a topic, service, frame or node."""
    for node in config.NODES:
        for p in config.load_spec(node).params:
            if p.type == "str" and not p.choices and (node, p.name) not in NOT_ROS_NAMES:
                yield node, p


def test_every_topic_service_and_frame_parameter_is_checked_as_a_ros_name():
    """Every str parameter of every node is either a ROS name checked with ROS's rules or listed above."""
    unclassified = [f"{node}.{p.name}" for node, p in _name_params() if not p.name_kind]
    assert not unclassified, f"str parameters that are neither a ROS name nor in NOT_ROS_NAMES: {unclassified}"
    assert not [(n, k) for n, k in NOT_ROS_NAMES if config.load_spec(n).by_name()[k].name_kind]
    kinds = {p.name_kind for _n, p in _name_params()}
    assert kinds == {"topic", "service", "frame", "node"}


@pytest.mark.parametrize("node, param", [(n, p.name) for n, p in _name_params()], ids=lambda x: x if isinstance(x, str) else "")
def test_a_name_parameter_rclpy_would_refuse_is_refused_by_config(node, param, tmp_path):
    """``havln-robot config`` accepted '9bad' / 'bad name!' for a topic; launch then died in rclpy
    (InvalidTopicNameException traceback). Frames: tf2 refuses a leading '/'."""
    kind = "frame" if param.endswith(("_frame", "_frame_id")) else "name"
    bad = "/base_link" if kind == "frame" else "9bad"
    p = write(tmp_path, f"/**/{node}:\n  ros__parameters:\n    {param}: '{bad}'\n")
    with pytest.raises(ConfigError) as ei:
        config.load_profile(p)
    msg = str(ei.value)
    assert "\n" not in msg and f"line 3: {param}: {bad!r} is not a valid" in msg, msg
    assert ("tf2 frame id" if kind == "frame" else "ROS") in msg and "allowed:" in msg


def test_topic_names_are_checked_where_the_node_runs(fake_registry, tmp_path):
    """Expanded in the node's namespace as rclpy expands them: a private name, an unknown substitution, '//'."""
    for topic, words in [("{bogus}/odom", "unknown substitution"), ("a//b", "repeated '/'"), ("odom/", "end with a forward slash")]:
        with pytest.raises(ConfigError, match=words):
            config.load_profile(write(tmp_path, f"/**/motion_node:\n  ros__parameters:\n    odom_topic: '{topic}'\n"))
    p = write(tmp_path, "/**/motion_node:\n  ros__parameters:\n    odom_topic: '~/x" + "x" * 200 + "'\n")
    assert config.load_profile(p).nodes["motion_node"]["odom_topic"].startswith("~/x")  # /motion_node/xx... fits in 247
    with pytest.raises(
        ConfigError, match="topic length should not exceed 247 characters"
    ):  # /robots_of_the_lab.../motion_node/xx... does not
        config.load_profile(p, namespace="robots_of_the_lab_" + "r" * 40)


@pytest.mark.parametrize("ns", ["bad ns!", "/go2/", "9go2", "go2//x", "/" + "n" * 250])
def test_a_namespace_rclpy_refuses_is_refused_by_config(ns, tmp_path):
    with pytest.raises(ConfigError, match=r"^namespace .*: not a ROS namespace: .*--namespace go2"):
        config.load_profile(REPO / "config" / "sim.yaml", namespace=ns)


@pytest.mark.parametrize("ns", ["", "go2", "/go2", "/robots/go2_1", "/"])
def test_namespaces_rclpy_takes_are_taken(ns):
    assert "motion_node" in config.load_profile(REPO / "config" / "sim.yaml", namespace=ns).nodes


@pytest.mark.parametrize(
    "args, words",
    [
        (["config", "config/sim.yaml", "--namespace", "bad ns!"], ["--namespace", "'bad ns!' is not a ROS namespace"]),
        (["launch", "config/sim.yaml", "--namespace", "bad ns!"], ["--namespace", "'bad ns!' is not a ROS namespace"]),
        (["launch", "config/sim.yaml", "--set", "motion_node.cmd_vel_topic=9bad"], ["--set motion_node: cmd_vel_topic: '9bad'"]),
        (["launch", "config/sim.yaml", "--set", "sim_node.odom_frame=/odom"], ["--set sim_node: odom_frame: '/odom'", "tf2"]),
        (["instruct", "--topic", "walk here", "go"], ["--topic 'walk here'", "not a ROS topic name"]),
        (["instruct", "--namespace", "9go2", "go"], ["--namespace", "'9go2' is not a ROS namespace"]),
    ],
)
def test_bad_ros_names_on_the_command_line_are_one_line_errors(args, words):
    """Before: an rclpy InvalidNamespaceException / InvalidTopicNameException traceback from inside launch."""
    r = subprocess.run([sys.executable, "-m", "havln_robot.cli", *args], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert all(w in last for w in words), last


@pytest.mark.parametrize("text", ["99999999999999999999", "9223372036854775808", "-9223372036854775809"])
def test_an_integer_past_int64_is_out_of_range_not_a_wrong_type(text, tmp_path):
    """rcl reads a whole number past int64 as a double: the profile said "expected an integer" for a
    seed of 20 digits; now it says the value is out of ROS's 64-bit range and gives the range."""
    p = write(tmp_path, f"/**/sim_node:\n  ros__parameters:\n    seed: {text}\n")
    with pytest.raises(
        ConfigError, match=r"seed: .* is out of range: ROS integers are 64-bit, from -9223372036854775808 to 9223372036854775807"
    ):
        config.load_profile(p)
    from havln_robot.bringup import parse_set

    with pytest.raises(ConfigError, match=r"--set sim_node: seed: .* is out of range: ROS integers are 64-bit"):
        config.load_profile(REPO / "config" / "sim.yaml", parse_set([f"sim_node.seed={text}"]), overrides_from="--set")
    p = write(tmp_path, "/**/sim_node:\n  ros__parameters:\n    seed: 1.5\n")
    with pytest.raises(ConfigError, match=r"seed: expected an integer, got 1.5"):  # a fraction is still the wrong type
        config.load_profile(p)


def test_a_cli_option_that_sets_a_parameter_takes_the_parameters_range(capsys):
    """``ParamSpec.arg_type``: the option's type and bounds are the parameter's own (one definition)."""
    import argparse

    from havln_robot import console_app
    from havln_robot.challenge import replay
    from havln_robot.console.params import CONSOLE_PARAMS
    from havln_robot.sim.params import SIM_NODE_PARAMS

    port = CONSOLE_PARAMS.arg_type("port")
    assert port("65535") == 65535 and isinstance(port("0"), int)
    for bad in ("65536", "-1", "80.5"):
        with pytest.raises(argparse.ArgumentTypeError):
            port(bad)
    assert CONSOLE_PARAMS.arg_type("absent_pause_s", unit="s")("3600") == 3600.0
    with pytest.raises(ValueError, match="not a number"):
        CONSOLE_PARAMS.arg_type("host")
    for main, args, words in [
        (console_app.main, ["--port", "65536"], "--port: '65536' is out of range: give a number from 0 to 65535"),
        (console_app.main, ["--absent-pause", "3601"], "from 0 to 3600 s"),
        (replay.main, ["x.json", "--seed", "-1"], "--seed: '-1' is out of range: give a number at least 0"),
    ]:
        with pytest.raises(SystemExit) as ei:
            main(args)
        assert ei.value.code == 2 and words in capsys.readouterr().err
    assert SIM_NODE_PARAMS.by_name()["seed"].min == 0
