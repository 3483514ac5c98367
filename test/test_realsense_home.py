"""librealsense writes usage statistics to ~/.rum/rum.json whenever a context is created; doctor's
realsense check must leave $HOME as it was (paths.scratch_home). camera_node does not swap $HOME:
it is process-wide, and a bringup process's other nodes read it at the same time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from havln_robot.paths import scratch_home

REPO = Path(__file__).resolve().parents[1]


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_scratch_home_restores_and_removes(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    with scratch_home() as tmp:
        assert os.environ["HOME"] == str(tmp) and tmp.is_dir()
        (tmp / ".rum").mkdir()
    assert os.environ["HOME"] == str(tmp_path) and not tmp.exists()


def _env(home: Path) -> dict:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("XDG_CACHE_HOME", None)
    return env


@pytest.mark.parametrize(
    "code",
    ["from havln_robot.doctor import _default_realsense_devices as f; print(len(f()))"],
    ids=["doctor enumeration"],
)
def test_realsense_calls_leave_home_untouched(tmp_path, code):
    pytest.importorskip("pyrealsense2")
    home = tmp_path / "home"
    home.mkdir()
    (home / "keep.txt").write_text("x")
    before = _tree(home)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env(home), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _tree(home) == before


def test_doctor_realsense_check_leaves_home_untouched(tmp_path):
    pytest.importorskip("pyrealsense2")
    home = tmp_path / "home"
    home.mkdir()
    before = _tree(home)
    cmd = [
        sys.executable,
        "-m",
        "havln_robot.cli",
        "doctor",
        "--offline",
        "--only",
        "realsense",
        "--profile",
        str(REPO / "config" / "go2.yaml"),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env(home), cwd=tmp_path)
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "realsense" in r.stdout, r.stdout
    assert _tree(home) == before
