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
    # rclpy refuses an INTEGER override of a DOUBLE parameter: so does the validator (issue 12)
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
        assert {f"/**/{n}" for n in prof.nodes} == keys, "namespace-proof keys (issue 12)"


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
