"""docs/deploy.md (the Jetson install the README points to) and requirements-robot.txt say the same thing."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _section(text: str, title: str) -> str:
    start = text.index(f"# {title}")
    end = text.find("\n## ", start + 3)
    return text[start : end if end > 0 else None]


def _requirements() -> list[str]:
    lines = (REPO / "requirements-robot.txt").read_text().splitlines()
    reqs = [ln.split("#")[0].strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    # the SDK is installed --no-deps, so it is named in the file's closing comment
    sdk = [m.group(1) for ln in lines for m in [re.search(r"pip install --no-deps (\S+)", ln)] if m]
    return reqs + sdk


def test_readme_table_matches_requirements_line_by_line():
    section = _section((REPO / "docs" / "deploy.md").read_text(), "Deploying on the Go2")
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("| ---") and not ln.startswith("| piece")]
    listed = [item for row in rows for item in re.findall(r"`([^`]+)`", row.rstrip(" |").rsplit("|", 1)[-1])]
    assert len(listed) >= 8 and listed == _requirements(), "docs/deploy.md's table (last column) and requirements-robot.txt differ"
    # what is NOT from pip says how it is installed instead
    for piece in ("torch with CUDA", "librealsense + pyrealsense2", "ROS 2", "OpenCV"):
        assert any(row.startswith(f"| {piece}") and row.rstrip(" |").endswith("–") for row in rows), piece


def test_readme_deploy_commands_match_the_files():
    section = _section((REPO / "docs" / "deploy.md").read_text(), "Deploying on the Go2")
    assert "python3 -m venv --system-site-packages" in section and "PEP 668" in section
    assert "pip install --no-binary cyclonedds -r havln_robot/requirements-robot.txt" in section
    sdk = _requirements()[-1]
    assert f"pip install --no-deps {sdk}" in section
    assert "opencv-python" not in "\n".join(_requirements()), "pip OpenCV would shadow JetPack's"
    assert "numpy<2" in _requirements()
    lock = (REPO / "requirements.lock").read_text()
    for req in _requirements():  # the pinned robot packages are the ones the suite runs with
        if "==" in req:
            assert req in lock.splitlines(), f"{req} differs from requirements.lock"


def test_readme_deploy_commands_are_the_documented_ones():
    """The README's short install block is the one of docs/deploy.md, line for line."""
    readme = (REPO / "README.md").read_text()
    deploy = (REPO / "docs" / "deploy.md").read_text()
    for line in (
        "pip install --no-binary cyclonedds -r havln_robot/requirements-robot.txt",
        f"pip install --no-deps {_requirements()[-1]}",
    ):
        assert line in readme and line in deploy, line
