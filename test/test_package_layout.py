"""The ament_python package layout the design card asks for."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_layout():
    for p in ("package.xml", "setup.py", "setup.cfg", "resource/havln_robot", "havln_robot", "launch", "config", "models", "test"):
        assert (REPO / p).exists(), p


def test_package_xml_format3_ament_python_and_deps():
    root = ET.parse(REPO / "package.xml").getroot()
    assert root.tag == "package" and root.get("format") == "3"
    assert root.findtext("name") == "havln_robot"
    assert root.find("export/build_type").text == "ament_python"
    deps = {e.text for e in root.findall("exec_depend")}
    assert {"rclpy", "sensor_msgs", "nav_msgs", "geometry_msgs", "std_msgs", "std_srvs", "diagnostic_msgs"} <= deps


def test_console_scripts_installed_for_every_node():
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    from havln_robot.node_table import NODES

    for node in NODES:
        assert eps.get(node) == f"havln_robot.nodes.{node}:main"
    assert eps.get("havln-robot") == "havln_robot.cli:main"


def test_registry_matches_entry_points():
    from havln_robot.config import NODES

    for name, (module, _) in NODES.items():
        assert module == f"havln_robot.nodes.{name}"


def test_cli_help_lists_subcommands():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "havln_robot.cli", "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    for cmd in ("demo", "launch", "bench", "train", "report", "export", "pack", "validate", "replay", "trial", "eval"):
        assert f"  {cmd} " in r.stdout
