"""Parameter files on a real ROS graph (namespaces, rcl's parser, declared types).

Nodes are started exactly as ``ros2 launch`` starts them (``--ros-args -r __node:=… -r __ns:=…
--params-file F``), in-process; the validator (``havln-robot config``/``launch``) must accept exactly
what rclpy accepts and refuse what it refuses.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from havln_robot import rosparams
from havln_robot.bringup import parse_set
from havln_robot.config import NODES, load_profile, load_spec, profile_nodes
from havln_robot.params import ConfigError

REPO = Path(__file__).resolve().parent.parent
PROFILES = {name: (REPO / "config" / name).read_text() for name in ("go2.yaml", "sim.yaml", "gazebo.yaml")}


def _probe_class(node: str):
    """A node with ``node``'s real ParamSpec and HavlnNode's parameter path, nothing else."""
    from havln_robot.nodes._base import HavlnNode

    return type(f"Probe_{node}", (HavlnNode,), {"SPEC": load_spec(node)})


def _rclpy_accepts(path: Path, namespace: str) -> tuple[bool, str]:
    """Start every node of the file under ``namespace`` through rcl's --params-file path; (accepted, why)."""
    import rclpy

    from havln_robot.nodes._base import start_node

    nodes = profile_nodes(rosparams.parse_file(path)) if _parses(path) else list(NODES)[:1]
    ctx = rclpy.Context()
    args = ["probe", "--ros-args", "-r", f"__ns:={namespace}", "--params-file", str(path)]
    made = []
    try:
        first = True
        for node in nodes:
            if node not in NODES:
                return False, f"unknown node {node}"
            cls = _probe_class(node)
            if first:
                made.append(start_node(cls, args, ctx))
                first = False
            else:
                made.append(cls(context=ctx, params_files=[str(path)]))
        return True, ""
    except ConfigError as exc:
        return False, str(exc)
    finally:
        for n in made:
            n.destroy_node()
        rclpy.try_shutdown(context=ctx)


def _parses(path: Path) -> bool:
    try:
        rosparams.parse_file(path)
        return True
    except ConfigError:
        return False


def rclpy_context():
    import rclpy

    return rclpy.Context()


def shutdown(ctx) -> None:
    import rclpy

    rclpy.try_shutdown(context=ctx)


def _validator_accepts(path: Path, namespace: str, nodes: list[str] | None = None) -> tuple[bool, str]:
    try:
        load_profile(path, namespace=namespace, nodes=nodes)
        return True, ""
    except ConfigError as exc:
        return False, str(exc)


def _sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


GO2, SIM = PROFILES["go2.yaml"], PROFILES["sim.yaml"]
HUMBLE_QOS = """    qos_overrides:
      /parameter_events:
        publisher:
          depth: 1000
          durability: volatile
          history: keep_last
          reliability: reliable
"""
#: (case id, file text, namespace, expected acceptance): every shipped profile and mutated copies.
CASES = [
    *[(f"shipped {n} in {ns}", t, ns, True) for n, t in PROFILES.items() for ns in ("/", "/go2")],
    ("int for a float", _sub(GO2, "max_linear_speed: 0.3", "max_linear_speed: 1"), "/go2", False),
    ("1e-1 is a double for rcl", _sub(GO2, "max_linear_speed: 0.3", "max_linear_speed: 1e-1"), "/go2", True),
    ("1_0 is a string for rcl", _sub(GO2, "max_linear_speed: 0.3", "max_linear_speed: 1_0"), "/", False),
    (".inf out of range", _sub(GO2, "max_linear_speed: 0.3", "max_linear_speed: .inf"), "/", False),
    ("int for a string", _sub(SIM, 'episode_id: ""', "episode_id: 6047"), "/", False),
    ("quoted int for a string", _sub(SIM, 'episode_id: ""', "episode_id: '6047'"), "/", True),
    ("null is a string for rcl", _sub(SIM, 'device: "cpu"', "device: null"), "/", True),
    ("yes is a bool", _sub(GO2, "revert: true", "revert: yes"), "/", True),
    ("1 is not a bool", _sub(GO2, "revert: true", "revert: 1"), "/", False),
    ("plain string", _sub(GO2, 'look_mode: "unsupported"', "look_mode: unsupported"), "/", True),
    ("bare keys in the root namespace", GO2.replace("/**/", ""), "/", True),
    ("bare keys under a namespace", GO2.replace("/**/", ""), "/go2", False),
    ("fully qualified keys", GO2.replace("/**/", "/go2/"), "/go2", True),
    ("fully qualified keys elsewhere", GO2.replace("/**/", "/go2/"), "/", False),
    ("one-token wildcard", GO2.replace("/**/", "/*/"), "/go2", True),
    ("/** for every node", "/**:\n  ros__parameters:\n    use_sim_time: true\n" + GO2, "/go2", True),
    ("/** with one node's key", "/**:\n  ros__parameters:\n    max_linear_speed: 0.2\n" + GO2, "/", False),
    ("typo", _sub(GO2, "max_linear_speed:", "max_linear_sped:"), "/", False),
    ("empty value", _sub(GO2, "max_linear_speed: 0.3", "max_linear_speed:"), "/", False),
    ("{} for a scalar", _sub(GO2, "max_linear_speed: 0.3", "max_linear_speed: {}"), "/", False),
    ("mixed list", _sub(SIM, "    # goal: [4.0, 1.5]", "    goal: [4, 1.5]"), "/", False),
    ("int list for floats", _sub(SIM, "    # goal: [4.0, 1.5]", "    goal: [4, 1]"), "/", False),
    ("float list", _sub(SIM, "    # goal: [4.0, 1.5]", "    goal: [4.0, 1.5]"), "/", True),
    ("empty list", _sub(SIM, "    # goal: [4.0, 1.5]", "    goal: []"), "/", True),
    ("alias", _sub(GO2, "max_linear_speed: 0.3", "max_linear_speed: &v 0.3\n    max_reverse_speed: *v"), "/", False),
    ("bad node name", _sub(GO2, "/**/motion_node:", "/**/motion-node:"), "/", False),
    ("second document", GO2 + "---\n/**/motion_node:\n  ros__parameters:\n    max_linear_speed: 0.2\n", "/go2", True),
    ("nested namespace keys", "go2:\n  motion_node:\n    ros__parameters:\n      max_linear_speed: 0.2\n", "/go2", True),
    ("value before ros__parameters", "/**/motion_node:\n  max_linear_speed: 0.2\n", "/", False),
    # Humble's `ros2 param dump` writes QoS overrides into every node's section: rclpy's, not the node's
    ("qos_overrides as Humble dumps them", _sub(GO2, "    max_linear_speed: 0.3", HUMBLE_QOS + "    max_linear_speed: 0.3"), "/go2", True),
    ("quoted use_sim_time", _sub(GO2, "use_sim_time: false", 'use_sim_time: "false"'), "/go2", False),
]


@pytest.mark.parametrize("case, text, namespace, expected", CASES, ids=[c[0] for c in CASES])
def test_validator_agrees_with_rclpy_params_file(case, text, namespace, expected, tmp_path):
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    real, real_why = _rclpy_accepts(path, namespace)
    ours, our_why = _validator_accepts(path, namespace)
    assert real == expected, f"{case}: rclpy {'accepted' if real else 'refused: ' + real_why}"
    assert ours == real, f"{case}: validator {'accepted' if ours else 'refused: ' + our_why}, rclpy {real_why or 'accepted'}"
    if not ours:
        assert "\n" not in our_why


def test_lab_copy_of_the_go2_profile_applies_under_a_namespace(tmp_path):
    """go2.launch.py namespace:=go2: motion_node gets the copy's limits, not the built-in defaults."""
    import rclpy

    from havln_robot.nodes._base import start_node
    from havln_robot.nodes.motion_node import MotionNode

    path = tmp_path / "lab.yaml"
    lab = _sub(GO2, "max_linear_speed: 0.3", "max_linear_speed: 0.15")
    lab = _sub(lab, "network_interface: eth0", "network_interface: eth1")
    path.write_text(_sub(lab, "record_mcap: true", "record_mcap: false"))
    ctx = rclpy.Context()
    args = ["motion_node", "--ros-args", "-r", "__node:=motion_node", "-r", "__ns:=/go2", "--params-file", str(path)]
    try:
        node = start_node(MotionNode, args, ctx)
        assert node.get_fully_qualified_name() == "/go2/motion_node"
        assert node.params["max_linear_speed"] == 0.15 and node.params["look_mode"] == "unsupported"
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
    # the validator reads the same file the same way, for that namespace
    prof = load_profile(path, namespace="go2")
    assert prof.nodes["motion_node"]["max_linear_speed"] == 0.15 and prof.fqns["motion_node"] == "/go2/motion_node"
    assert prof.nodes["go2_driver_node"]["network_interface"] == "eth1" and prof.nodes["trial_logger_node"]["record_mcap"] is False
    for node in ("go2_driver_node", "trial_logger_node"):  # the same values reach the nodes through rclpy
        ctx = rclpy.Context()
        args = [node, "--ros-args", "-r", f"__node:={node}", "-r", "__ns:=/go2", "--params-file", str(path)]
        try:
            probe = start_node(_probe_class(node), args, ctx)
            assert {k: probe.params[k] for k in prof.nodes[node]} == prof.nodes[node]
            probe.destroy_node()
        finally:
            rclpy.try_shutdown(context=ctx)


@pytest.mark.parametrize(
    "text, words",
    [
        (GO2.replace("/**/", ""), ["no section for /go2/motion_node"]),  # a root-namespace profile started under a namespace
        (GO2.replace("use_sim_time: false", "use_sim_time: 'false'"), ["/go2/motion_node: use_sim_time: got 'false'", "without quotes"]),
    ],
    ids=["no section", "quoted use_sim_time"],
)
def test_a_refused_params_file_is_one_error_line_exit_2(text, words, tmp_path):
    """One ERROR line naming the file or the node's full name and the key, exit 2 -- no traceback
    (a quoted use_sim_time, refused by rclpy's own declaration, was a traceback and exit 1)."""
    path = tmp_path / "old.yaml"
    path.write_text(text)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "from havln_robot.nodes.motion_node import main; main()",
            "--ros-args",
            "-r",
            "__node:=motion_node",
            "-r",
            "__ns:=/go2",
            "--params-file",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=REPO,
    )
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    assert r.returncode == 2, lines
    assert len(lines) == 1 and "ERROR" in lines[0] and all(w in lines[0] for w in words), lines


def test_a_wildcard_only_file_is_judged_by_config_as_each_node_reads_it(tmp_path):
    """A file of one '/**:' section (as Humble tutorials write for ros2 run): the node started with it
    applies it, so `havln-robot config F --node N` accepts it exactly when node N does; without
    --node, config says which option names the nodes."""
    path = tmp_path / "common.yaml"
    path.write_text("/**:\n  ros__parameters:\n    use_sim_time: false\n    max_linear_speed: 0.25\n" + HUMBLE_QOS)
    for node, expected in [("motion_node", True), ("trial_logger_node", False)]:
        ctx = rclpy_context()
        args = [node, "--ros-args", "-r", f"__node:={node}", "-r", "__ns:=/go2", "--params-file", str(path)]
        try:
            from havln_robot.nodes._base import start_node

            probe = start_node(_probe_class(node), args, ctx)
            real = True
            assert probe.params["max_linear_speed"] == 0.25
            probe.destroy_node()
        except ConfigError as exc:
            real, why = False, str(exc)
            assert "max_linear_speed: unknown parameter" in why
        finally:
            shutdown(ctx)
        assert real == expected, node
        ours, our_why = _validator_accepts(path, "go2", nodes=[node])
        assert ours == real, f"{node}: validator {our_why or 'accepted'}"
        if not ours:
            assert "max_linear_speed: not a parameter of trial_logger_node" in our_why
    r = subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "config", str(path)], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert r.returncode == 2 and "--node motion_node" in r.stderr.strip().splitlines()[-1], r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "config", str(path), "--node", "motion_node"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert r.returncode == 0 and "/motion_node: " in r.stdout, r.stderr


def test_without_params_file_defaults_apply(ros_context):
    from havln_robot.motion.params import MOTION_PARAMS
    from havln_robot.nodes.motion_node import MotionNode

    node = MotionNode(context=ros_context, params_files=[])
    try:
        assert node.params["max_linear_speed"] == MOTION_PARAMS.by_name()["max_linear_speed"].default
    finally:
        node.destroy_node()


def test_set_coerces_to_the_declared_type():
    prof = load_profile(
        REPO / "config" / "sim.yaml",
        parse_set(
            ["sim_node.episode_id=6047", "motion_node.max_linear_speed=1", "motion_node.revert=false", "trial_logger_node.goal=[1, 2]"]
        ),
    )
    assert prof.nodes["sim_node"]["episode_id"] == "6047"
    assert prof.nodes["motion_node"]["max_linear_speed"] == 1.0 and prof.nodes["motion_node"]["revert"] is False
    assert prof.nodes["trial_logger_node"]["goal"] == [1.0, 2.0]
    with pytest.raises(ConfigError, match=r"motion_node: max_linear_speed: expected a number, got 'fast'"):
        load_profile(REPO / "config" / "sim.yaml", parse_set(["motion_node.max_linear_speed=fast"]))
    with pytest.raises(ConfigError, match=r"revert: 'maybe' is not true/false"):
        load_profile(REPO / "config" / "sim.yaml", parse_set(["motion_node.revert=maybe"]))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1e3", 1000.0),
        ("010", 8),
        ("0x1F", 31),
        ("08", 8.0),
        ("y", True),
        ("off", False),
        ("1_000", "1_000"),
        ("null", "null"),
        ("2020-01-01", "2020-01-01"),
        ("1.5e400", "1.5e400"),
        ("9223372036854775808", 9.223372036854776e18),
        (".inf", float("inf")),
    ],
)
def test_scalars_typed_like_rcl(text, expected):
    assert rosparams.rcl_scalar(text) == expected and type(rosparams.rcl_scalar(text)) is type(expected)


def test_name_matching():
    assert rosparams.name_matches("/**/motion_node", "/go2/motion_node")
    assert rosparams.name_matches("/**/motion_node", "/motion_node")
    assert rosparams.name_matches("/**", "/a/b/x")
    assert not rosparams.name_matches("/motion_node", "/go2/motion_node")
    assert rosparams.name_matches("/*/motion_node", "/go2/motion_node") and not rosparams.name_matches("/*/motion_node", "/motion_node")
    assert rosparams.params_files(["x", "--ros-args", "--params-file", "a.yaml", "--", "--params-file", "b"]) == ["a.yaml"]


@pytest.mark.parametrize(
    "launch, profile", [("go2.launch.py", "go2.yaml"), ("sim.launch.py", "sim.yaml"), ("gazebo_replay.launch.py", "gazebo.yaml")]
)
def test_launch_files_nodes_get_their_profile_section(launch, profile):
    """Read the launch file (AST) for its nodes and namespace, start each node with exactly the
    arguments ros2 launch passes (``-r __node:= -r __ns:= --params-file``), in a namespace where allowed."""
    import ast

    import rclpy

    from havln_robot.nodes._base import start_node

    tree = ast.parse((REPO / "launch" / launch).read_text())
    names = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "NODES")
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and getattr(c.func, "id", "") == "Node"]
    ours = [c for c in calls if any(k.arg == "package" and getattr(k.value, "value", "") == "havln_robot" for k in c.keywords)]
    assert ours and all({"name", "parameters"} <= {k.arg for k in c.keywords} for c in ours)
    namespaced = any(k.arg == "namespace" for c in ours for k in c.keywords)
    ns = "/go2" if namespaced else "/"
    for name in names:
        ctx = rclpy.Context()
        args = [name, "--ros-args", "-r", f"__node:={name}", "-r", f"__ns:={ns}", "--params-file", str(REPO / "config" / profile)]
        try:
            node = start_node(_probe_class(name), args, ctx)
            assert node.get_fully_qualified_name() == rosparams.node_fqn(name, ns)
            expected = load_profile(REPO / "config" / profile, namespace=ns).nodes[name]
            assert {k: node.params[k] for k in expected} == expected
            node.destroy_node()
        finally:
            rclpy.try_shutdown(context=ctx)


def test_qos_overrides_reach_rclpy_from_a_profile_too(ros_context, tmp_path):
    """Started by bringup (values from the validated profile, not --params-file), a node hands the
    profile's qos_overrides to rclpy as a node started with the file does; config counts them apart."""
    path = tmp_path / "humble.yaml"
    path.write_text(_sub(GO2, "    max_linear_speed: 0.3", HUMBLE_QOS + "    max_linear_speed: 0.3"))
    params = load_profile(path).nodes["motion_node"]
    assert params["qos_overrides./parameter_events.publisher.depth"] == 1000
    node = _probe_class("motion_node")(params=params, context=ros_context)
    try:
        assert node._parameter_overrides["qos_overrides./parameter_events.publisher.history"].value == "keep_last"
        assert node.params["max_linear_speed"] == 0.3
    finally:
        node.destroy_node()
    r = subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "config", str(path)], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert r.returncode == 0 and "4 qos_overrides handed to rclpy" in r.stdout, r.stdout + r.stderr
