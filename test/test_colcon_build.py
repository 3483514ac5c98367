"""``colcon build`` of the package, as on the Jetson: install layout and one installed node started.

colcon (colcon-core + colcon-ros + colcon-python-setup-py, pinned in requirements.lock) builds a
copy of the package in a temporary workspace; the test then checks what ``ros2 run`` /
``ros2 launch`` look up (the ament index marker, ``share/havln_robot/...``, ``lib/havln_robot/<node>``)
and starts the installed ``trial_logger_node`` executable with ``--ros-args --params-file`` on the
installed robot profile until it logs its trial store, then stops it with SIGINT.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: what a lab puts into ~/ws/src/havln_robot (the repository without tests, venv, VCS)
SOURCES = ("package.xml", "setup.py", "setup.cfg", "resource", "havln_robot", "launch", "config", "models", "gazebo")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


def _colcon() -> str:
    exe = Path(sys.executable).with_name("colcon")
    assert exe.is_file(), f"{exe} missing: run `make setup` (colcon-core/colcon-ros are pinned in requirements.lock)"
    return str(exe)


def _node_names() -> list[str]:
    from havln_robot.config import NODES

    return sorted(NODES)


@pytest.fixture(scope="module")
def colcon_ws(tmp_path_factory):
    """A workspace with src/havln_robot built by ``colcon build``; returns (workspace, install prefix)."""
    ws = tmp_path_factory.mktemp("colcon_ws")
    src = ws / "src" / "havln_robot"
    src.mkdir(parents=True)
    for name in SOURCES:
        p = REPO / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=IGNORE)
        else:
            shutil.copy2(p, src / name)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLCON_HOME": str(ws / ".colcon")}
    env.pop("AMENT_PREFIX_PATH", None)
    env.pop("COLCON_PREFIX_PATH", None)
    t0 = time.monotonic()
    r = subprocess.run(
        [
            _colcon(),
            "--log-base",
            str(ws / "log"),
            "build",
            "--base-paths",
            "src",
            "--packages-select",
            "havln_robot",
            "--event-handlers",
            "console_direct-",
        ],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, f"colcon build failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    print(f"colcon build: {time.monotonic() - t0:.1f} s")
    return ws, ws / "install" / "havln_robot"


def test_install_layout(colcon_ws):
    ws, prefix = colcon_ws
    share = prefix / "share" / "havln_robot"
    assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / "havln_robot").is_file(), "ament index marker missing"
    assert (share / "package.xml").read_text() == (REPO / "package.xml").read_text()
    for sub, pattern in (("launch", "*.launch.py"), ("config", "*.yaml"), ("models", "*")):
        want = sorted(p.name for p in (REPO / sub).glob(pattern))
        got = sorted(p.name for p in (share / sub).glob(pattern))
        assert want and got == want, f"share/havln_robot/{sub}: {got} != {want}"
    assert (share / "config" / "fastdds_loopback.xml").is_file()
    for node in _node_names() + ["havln-robot"]:
        exe = prefix / "lib" / "havln_robot" / node
        assert exe.is_file() and os.access(exe, os.X_OK), f"lib/havln_robot/{node} missing (ros2 run looks there)"
        # the executables run with the interpreter colcon ran with: colcon belongs in the robot's venv (README)
        shebang = exe.read_text().splitlines()[0]
        assert shebang.startswith("#!") and Path(shebang[2:].split()[0]).resolve() == Path(sys.executable).resolve(), shebang
    sites = list(prefix.glob("lib/python3*/site-packages/havln_robot/nodes/_base.py"))
    assert sites, "the havln_robot package is not in lib/python3.X/site-packages"
    # colcon's environment hooks: sourcing install/setup.bash puts the package on the paths
    assert (prefix / "share" / "havln_robot" / "package.sh").is_file() or (prefix / "share" / "havln_robot" / "package.dsv").is_file()


def test_installed_node_starts_with_installed_profile(colcon_ws, tmp_path):
    _, prefix = colcon_ws
    site = next(prefix.glob("lib/python3*/site-packages"))
    profile = prefix / "share" / "havln_robot" / "config" / "go2.yaml"
    env = {
        **os.environ,
        # what `source install/setup.bash` sets for this package
        "AMENT_PREFIX_PATH": str(prefix),
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "PYTHONUNBUFFERED": "1",
        "RCUTILS_LOGGING_BUFFERED_STREAM": "0",
    }
    code = (
        "import havln_robot, havln_robot.paths as p; print(havln_robot.__file__); print(p.share_dir());"
        "from ament_index_python.packages import get_package_share_directory as g; print(g('havln_robot'))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,  # not the checkout: its havln_robot/ would shadow the installed one
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = r.stdout.split()
    assert lines[0].startswith(str(site)), f"installed package not first on the path: {r.stdout} {r.stderr}"
    assert lines[1] == str(prefix / "share" / "havln_robot"), f"share folder not the installed one: {lines[1]}"
    assert lines[2] == lines[1], "ament_index_python (what go2.launch.py uses) does not find the installed package"
    cli = prefix / "lib" / "havln_robot" / "havln-robot"
    r = subprocess.run([str(cli), "config", str(profile)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "go2_driver_node:" in r.stdout, r.stdout + r.stderr
    db = tmp_path / "trials.db"
    exe = prefix / "lib" / "havln_robot" / "trial_logger_node"
    cmd = [str(exe), "--ros-args", "--params-file", str(profile), "-p", f"db_path:={db}"]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out: list[str] = []
    try:
        deadline = time.monotonic() + 60
        ready = False
        while time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline()
            out.append(line)
            if f"trial store {db} (platform go2, mcap on)" in line:  # its last start-up line
                ready = True
                break
        assert ready, f"installed trial_logger_node never became ready (exit {proc.poll()}):\n{''.join(out)[-3000:]}"
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=20)
        out.append(rest)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, -signal.SIGINT, 130), f"exit {proc.returncode} after SIGINT:\n{''.join(out)[-3000:]}"
    assert "Traceback" not in "".join(out), "".join(out)[-3000:]
    assert db.is_file(), "the node did not open its trial store"


def test_setup_py_never_imports_the_package():
    """colcon runs setup.py on the robot before anything is installed: it must not import havln_robot
    (which would pull in numpy/torch and fail on a fresh Jetson)."""
    code = (
        "import runpy, sys; sys.argv = ['setup.py', '--name']; runpy.run_path('setup.py', run_name='__main__');"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('havln_robot', 'torch', 'numpy', 'rclpy'));"
        "print('IMPORTED', bad)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "havln_robot" in r.stdout and "IMPORTED []" in r.stdout, r.stdout
