"""What a ROS 2 user meets -- robot DDS by default in go2.launch.py, absolute
/diagnostics, package.xml run dependencies, an instruction command that works without ``ros2``."""

from __future__ import annotations

import ast
import re
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from havln_robot import rosparams
from havln_robot.config import NODES, load_spec

REPO = Path(__file__).resolve().parent.parent


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [c for c in ast.walk(tree) if isinstance(c, ast.Call) and getattr(c.func, "id", getattr(c.func, "attr", "")) == name]


def test_go2_launch_uses_the_robot_dds_by_default_and_says_so():
    tree = ast.parse((REPO / "launch" / "go2.launch.py").read_text())
    args = {c.args[0].value: {k.arg: k.value for k in c.keywords} for c in _calls(tree, "DeclareLaunchArgument")}
    assert "dds" in args and args["dds"]["default_value"].value == "robot"
    env = [c for c in _calls(tree, "SetEnvironmentVariable") if c.args[0].value == "HAVLN_DDS"]
    assert env and ast.unparse(env[0].args[1]) == "LaunchConfiguration('dds')"
    assert _calls(tree, "LogInfo"), "the launch says which DDS setup it uses"
    assert "HAVLN_DDS=robot" in ast.get_docstring(tree)


def test_diagnostics_topics_are_absolute():
    for node in NODES:
        for p in load_spec(node).params:
            if p.name.endswith("diagnostics_topic"):
                assert p.default.startswith("/"), f"{node}.{p.name} default {p.default!r} splits under a namespace"
    for f in ("go2.yaml", "sim.yaml", "gazebo.yaml"):
        for sec in rosparams.parse_file(REPO / "config" / f):
            for k, v in sec.params.items():
                if k.endswith("diagnostics_topic"):
                    assert v.startswith("/"), (f, sec.key, k, v)


#: Python modules a launch file or the package imports -> the package.xml key they need.
_PY_KEYS = {"shapely": "python3-shapely", "yaml": "python3-yaml", "numpy": "python3-numpy", "platformdirs": "python3-platformdirs"}


def test_package_xml_has_run_dependencies_of_launch_files_and_code():
    deps = {e.text for e in ET.parse(REPO / "package.xml").getroot().findall("exec_depend")}
    needed: dict[str, str] = {}
    for f in (REPO / "launch").glob("*.launch.py"):
        tree = ast.parse(f.read_text())
        for c in ast.walk(tree):
            if isinstance(c, ast.Call):
                kw = {k.arg: k.value for k in c.keywords}
                if isinstance(kw.get("package"), ast.Constant) and kw["package"].value != "havln_robot":
                    needed[kw["package"].value] = f.name
            if isinstance(c, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in c.names] if isinstance(c, ast.Import) else [c.module or ""]
                for m in mods:
                    needed[m.split(".")[0]] = f.name
        for c in _calls(tree, "get_package_share_directory") + _calls(tree, "FindPackagePrefix") + _calls(tree, "FindPackageShare"):
            if c.args and isinstance(c.args[0], ast.Constant) and c.args[0].value != "havln_robot":
                needed[c.args[0].value] = f.name
    for f in (REPO / "havln_robot").rglob("*.py"):
        for m in re.findall(r"^\s*(?:from|import) (\w+)", f.read_text(), re.M):
            if m.endswith("_msgs") or m.endswith("_srvs") or m in ("rclpy", "builtin_interfaces", "rcl_interfaces") or m in _PY_KEYS:
                needed[m] = str(f.relative_to(REPO))
    for own in ("os", "havln_robot"):  # the standard library and this package itself
        needed.pop(own, None)
    missing = {_PY_KEYS.get(k, k): where for k, where in needed.items() if _PY_KEYS.get(k, k) not in deps}
    assert not missing, f"package.xml lacks exec_depend for {missing}"
    assert {"ros_gz_sim", "ros_gz_bridge", "ament_index_python", "python3-shapely"} <= deps


def test_launch_hint_works_without_ros2(monkeypatch):
    import shutil

    from havln_robot import bringup

    monkeypatch.setattr(shutil, "which", lambda name: None)
    hint = bringup.instruction_hint("havln/instruction")
    assert "havln-robot instruct 'walk to the sofa'" in hint and "ros2 topic pub" not in hint
    assert "--namespace go2" in bringup.instruction_hint("havln/instruction", "go2")
    monkeypatch.setattr(shutil, "which", lambda name: "/opt/ros/jazzy/bin/ros2")
    assert "ros2 topic pub --once /go2/havln/instruction" in bringup.instruction_hint("havln/instruction", "go2")


def test_instruct_command_delivers_one_instruction(ros_context):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    from havln_robot.instruct import main

    got: list[str] = []
    node = rclpy.create_node("agent_stand_in", context=ros_context)
    node.create_subscription(String, "havln/instruction", lambda m: got.append(m.data), 10)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    rc: list[int] = []
    th = threading.Thread(target=lambda: rc.append(main(["walk to the sofa", "--wait", "20"])))
    th.start()
    try:
        t_end = time.monotonic() + 25
        while time.monotonic() < t_end and not (got and not th.is_alive()):
            ex.spin_once(timeout_sec=0.05)
    finally:
        th.join(30)
        ex.shutdown()
        node.destroy_node()
    assert rc == [0] and got == ["walk to the sofa"]


def test_instruct_refuses_empty_text(capsys):
    from havln_robot.instruct import main

    with pytest.raises(SystemExit) as exc:
        main(["  "])
    assert exc.value.code == 2 and "walk to the sofa" in capsys.readouterr().err
