"""Launch files cannot run here (no `launch`/`launch_ros`): check them statically."""

from __future__ import annotations

import ast
import re
import runpy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))


def entry_points() -> set[str]:
    """setup.py's console scripts: a row of the node table each, and the CLI."""
    nodes = runpy.run_path(str(REPO / "havln_robot" / "node_table.py"))["NODES"]
    return set(nodes) | {"havln-robot"}


def test_setup_py_reads_the_node_table_without_importing_the_package():
    text = (REPO / "setup.py").read_text()
    assert not re.search(r"^\s*(from|import) havln_robot", text, re.M), "setup.py must not import havln_robot (colcon would pull torch)"
    assert "node_table.py" in text


def test_launch_files_check_their_nodes_against_the_node_table():
    for path in LAUNCH_FILES:
        assert "node_table import unknown_nodes" in path.read_text(), path.name


def string_constants(tree: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_required_launch_files_exist():
    names = {p.name for p in LAUNCH_FILES}
    assert {"go2.launch.py", "sim.launch.py"} <= names


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_parses_and_references_real_things(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "generate_launch_description" in funcs
    eps = entry_points()
    # executables of this package: Node(package="havln_robot", executable=...) and names in a NODES list
    executables = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            kw = {k.arg: k.value for k in node.keywords}
            pkg, exe = kw.get("package"), kw.get("executable")
            if isinstance(pkg, ast.Constant) and pkg.value == "havln_robot" and isinstance(exe, ast.Constant):
                executables.append(exe.value)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "NODES" for t in node.targets):
            executables += ast.literal_eval(node.value)
    assert executables, f"{path.name} starts no havln_robot node"
    for exe in executables:
        assert exe in eps, f"{path.name}: executable {exe!r} is not a console_scripts entry point in setup.py"
    # every referenced config/launch/world file of this package exists (files of other packages,
    # e.g. join(get_package_share_directory("ros_gz_sim"), "launch", "gz_sim.launch.py"), are skipped)
    external = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            pkgs = [
                c.args[0].value
                for c in ast.walk(node)
                if isinstance(c, ast.Call)
                and getattr(c.func, "id", getattr(c.func, "attr", "")) in ("get_package_share_directory", "FindPackageShare")
                and c.args
                and isinstance(c.args[0], ast.Constant)
            ]
            if pkgs and any(pk != "havln_robot" for pk in pkgs):
                external |= set(string_constants(node))
    for s in string_constants(tree):
        if s in external:
            continue
        if re.fullmatch(r"[\w./-]+\.(yaml|xml|sdf|urdf|py)", s) and "/" not in s.strip("/"):
            candidates = [REPO / d / s for d in ("config", "launch", "gazebo", "gazebo/worlds", "gazebo/models")]
            assert any(c.exists() for c in candidates), f"{path.name} references {s!r}, which is not in the package"


def test_profiles_match_launch_files():
    """go2.launch.py / sim.launch.py start exactly the nodes their profile configures."""
    from havln_robot import rosparams
    from havln_robot.config import profile_nodes

    for launch_name, profile in (("go2.launch.py", "go2.yaml"), ("sim.launch.py", "sim.yaml")):
        tree = ast.parse((REPO / "launch" / launch_name).read_text())
        nodes = next(
            ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "NODES"
        )
        assert set(nodes) == set(profile_nodes(rosparams.parse_file(REPO / "config" / profile))), launch_name


def test_robot_launch_respawns_the_device_nodes_with_a_delay():
    """Camera_node and go2_driver_node come back after they exit (interface late, camera
    unplugged), after a delay; the other nodes do not."""
    tree = ast.parse((REPO / "launch" / "go2.launch.py").read_text())
    consts = {
        t.id: ast.literal_eval(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name) and t.id in ("RESPAWN", "RESPAWN_DELAY_S")
    }
    assert consts["RESPAWN"] == {"camera_node", "go2_driver_node"}
    assert 0.5 <= consts["RESPAWN_DELAY_S"] <= 30.0
    kws = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Node" for k in n.keywords}
    assert {"respawn", "respawn_delay"} <= kws
