"""In-process bringup: nodes start from a profile, talk over loopback DDS, and stop safely."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from geometry_msgs.msg import Twist

from havln_robot import bringup as bringup_mod
from havln_robot import config
from havln_robot.bringup import no_data_overrides
from havln_robot.config import load_profile
from havln_robot.nodes._base import HavlnNode
from havln_robot.params import ConfigError, Param, ParamSpec
from havln_robot.policy.registry import NO_DATA_POLICY

REPO = Path(__file__).resolve().parent.parent

SPEC = ParamSpec(
    "motion_node",
    (
        Param("cmd_vel_topic", "cmd_vel", "str", "velocity command topic"),
        Param("speed", 0.2, "float", "forward speed, m/s", min=0.0, max=1.0),
        Param("rate", 20.0, "float", "publish rate, Hz", min=1.0, max=200.0),
        Param("gains", [], "float_list", "unused list (empty default)"),
    ),
)

EVENTS: list[str] = []


class DriveNode(HavlnNode):
    """Test node: drives forward at `speed`; safe_stop publishes zero."""

    SPEC = SPEC

    def __init__(self, **kw):
        super().__init__(**kw)
        self.pub = self.create_publisher(Twist, self.params["cmd_vel_topic"], 10)
        self.create_timer(1.0 / self.params["rate"], self._tick)
        self.stopped = False

    def _tick(self):
        if not self.stopped:
            msg = Twist()
            msg.linear.x = self.params["speed"]
            self.pub.publish(msg)

    def safe_stop(self):
        self.stopped = True
        self.pub.publish(Twist())
        EVENTS.append("safe_stop")

    def destroy_node(self):
        EVENTS.append("destroy")
        return super().destroy_node()


class FailingDriveNode(DriveNode):
    """Test node whose timer callback raises on its 5th tick."""

    def _tick(self):
        self.ticks = getattr(self, "ticks", 0) + 1
        if self.ticks == 5:
            raise RuntimeError("sensor driver exploded")
        super()._tick()


NODE_CLASS = DriveNode


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(config, "NODES", {"motion_node": ("test_bringup", "test_bringup:SPEC")})
    monkeypatch.setattr(bringup_mod, "NODES", config.NODES)
    EVENTS.clear()


def test_bringup_runs_node_and_safe_stops_before_destroy(registry, tmp_path, ros_context):
    import rclpy

    p = tmp_path / "p.yaml"
    p.write_text("motion_node:\n  ros__parameters:\n    speed: 0.4\n    rate: 50.0\n")
    b = bringup_mod.Bringup(config.load_profile(p), log=lambda s: None).start()
    # listen from a separate context, as another process would
    listener = rclpy.create_node("listener", context=ros_context)
    got: list[float] = []
    listener.create_subscription(Twist, "cmd_vel", lambda m: got.append(m.linear.x), 50)
    from rclpy.executors import SingleThreadedExecutor

    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(listener)
    try:
        assert b.nodes["motion_node"].params["speed"] == 0.4
        assert b.nodes["motion_node"].params["gains"] == []
        t_end = time.monotonic() + 10
        while time.monotonic() < t_end and len(got) < 5:
            b.spin_until(timeout=0.05)
            ex.spin_once(timeout_sec=0.01)
        assert got and max(got) == pytest.approx(0.4)
        b.shutdown()
        # safe_stop before anything is destroyed (and once more after the spin threads stopped)
        assert EVENTS[0] == "safe_stop" and EVENTS[-1] == "destroy" and EVENTS.index("destroy") > EVENTS.index("safe_stop")
        t_end = time.monotonic() + 2
        while time.monotonic() < t_end and got[-1] != 0.0:
            ex.spin_once(timeout_sec=0.05)
        assert got[-1] == 0.0, "the zero command from safe_stop must reach subscribers"
    finally:
        b.shutdown()
        ex.shutdown()
        listener.destroy_node()


def test_failing_callback_stops_every_node(registry, tmp_path, monkeypatch, capsys):
    """A callback that raises leaves its node in an unknown state: Bringup logs it and stops everything."""
    monkeypatch.setattr(sys.modules[__name__], "NODE_CLASS", FailingDriveNode)
    p = tmp_path / "p.yaml"
    p.write_text("motion_node:\n  ros__parameters:\n    rate: 50.0\n")
    lines: list[str] = []
    b = bringup_mod.Bringup(config.load_profile(p), log=lines.append).start()
    try:
        assert b.spin_until(timeout=10.0) == "stopped"
        assert b.failed is not None and b.failed[0] == "motion_node"
        # on stderr even when the caller silences status lines (havln-robot demo does)
        err = capsys.readouterr().err
        assert "motion_node: callback failed: RuntimeError: sensor driver exploded" in err and "Traceback" in err
        assert "stopping every node because motion_node failed" in err
        # every node knows why: trial_logger_node closes a running trial with this reason
        assert b.nodes["motion_node"].shutdown_reason == "node motion_node crashed: RuntimeError: sensor driver exploded"
    finally:
        b.shutdown()
    assert "safe_stop" in EVENTS and EVENTS[-1] == "destroy"


def test_refuses_to_start_next_to_another_cmd_vel_source(registry, tmp_path, ros_context):
    """A second source of cmd_vel on the domain (another stack, a teleop) is refused; the discovery
    watch runs while the nodes start, so a node that already started is safe-stopped first."""
    import rclpy

    intruder = rclpy.create_node("intruder", context=ros_context)
    intruder.create_publisher(Twist, "cmd_vel", 10)
    p = tmp_path / "p.yaml"
    p.write_text("motion_node:\n  ros__parameters:\n    speed: 0.4\n")
    try:
        b = bringup_mod.Bringup(config.load_profile(p), log=lambda s: None)
        with pytest.raises(ConfigError, match=r"already has /cmd_vel by /intruder .*ROS_DOMAIN_ID="):
            b.start()
        assert not b.nodes and b.context is None
        assert EVENTS in ([], ["safe_stop", "safe_stop", "destroy"])
    finally:
        intruder.destroy_node()


def test_node_rejects_bad_value_passed_under_ros_args(registry, ros_context):
    """Under `ros2 launch`, values arrive as ROS parameter overrides: a wrong type is a ConfigError."""
    from rclpy.parameter import Parameter

    with pytest.raises(ConfigError, match="speed"):
        DriveNode(context=ros_context, parameter_overrides=[Parameter("speed", Parameter.Type.STRING, "fast")])
    with pytest.raises(ConfigError, match=r"speed: 5.0 is out of range"):
        DriveNode(context=ros_context, parameter_overrides=[Parameter("speed", Parameter.Type.DOUBLE, 5.0)])
    # a topic name rclpy refuses: a ConfigError naming the parameter, not an InvalidTopicNameException
    # from the publisher that uses it (a value given to `ros2 launch` never passes havln-robot config)
    with pytest.raises(ConfigError, match=r"cmd_vel_topic: 'cmd vel' is not a valid ROS topic name"):
        DriveNode(context=ros_context, parameter_overrides=[Parameter("cmd_vel_topic", Parameter.Type.STRING, "cmd vel")])
    # ... in the node's own namespace: /<200 characters>/motion_node/x... is past rmw's 247 characters
    with pytest.raises(ConfigError, match=r"cmd_vel_topic: .*should not exceed 247 characters"):
        DriveNode(
            context=ros_context,
            namespace="n" * 200,
            parameter_overrides=[Parameter("cmd_vel_topic", Parameter.Type.STRING, "~/" + "x" * 40)],
        )


def test_parse_set():
    # text until the profile coerces it to the declared type (test_rosgraph_params.py)
    assert bringup_mod.parse_set(["motion_node.speed=0.3", "sim_node.topics=[a, b]"]) == {
        "motion_node": {"speed": "0.3"},
        "sim_node": {"topics": "[a, b]"},
    }
    with pytest.raises(ConfigError, match="NODE.PARAM=VALUE"):
        bringup_mod.parse_set(["speed=0.3"])


def _launch(args, **kw):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "havln_robot.cli", "launch", *args], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True, **kw
    )


def test_launch_sim_profile_starts_and_stops_on_sigint():
    """`havln-robot launch config/sim.yaml` starts every built node and exits 128 + SIGINT (130) on SIGINT."""
    proc = _launch(["config/sim.yaml"])
    lines = []
    t_end = time.monotonic() + 120
    while time.monotonic() < t_end:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if "running" in line or "nothing to run" in line:
            break
    if any("nothing to run" in ln for ln in lines):
        proc.wait(timeout=30)
        pytest.skip("no node of config/sim.yaml is built yet")
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    text = "".join(lines) + err
    assert proc.returncode == 128 + signal.SIGINT, text
    assert "all nodes stopped" in text and "Traceback" not in text


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_launch_refuses_a_duration_that_is_not_a_positive_number(registry, tmp_path, capsys, value):
    """Before: --duration nan ran forever, 0 and -1 started every node and stopped it at once (exit 0)."""
    p = tmp_path / "p.yaml"
    p.write_text("motion_node:\n  ros__parameters:\n    rate: 50.0\n")
    with pytest.raises(SystemExit) as exc:  # argparse's own refusal: usage line + one error line naming the flag
        bringup_mod.main([str(p), "--duration", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("usage:") and "argument --duration" in err[-1] and ("more than 0" in err[-1] or "finite" in err[-1]), err
    assert EVENTS == []  # no node was started


def test_launch_without_data_falls_back_like_demo_with_one_warning():
    """No data folder: launch runs the builtin scene and the baseline policy, says so in one WARN line."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HAVLN_DATA": "/nonexistent"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "havln_robot.cli", "launch", "config/sim.yaml", "--duration", "3"],
        cwd=REPO,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=120)
    text = out + err
    assert proc.returncode == 0, text
    warns = [ln for ln in text.splitlines() if "WARN" in ln]
    assert len(warns) == 1, warns
    assert "/nonexistent" in warns[0] and "builtin scene" in warns[0] and NO_DATA_POLICY in warns[0], warns[0]
    assert "havln-robot data fetch" in warns[0]
    assert "Traceback" not in text and "vocabulary" in warns[0]


def test_no_data_overrides_are_the_demo_and_launch_choice(monkeypatch):
    """The one function launch and demo share: builtin scene + baseline policy without data, nothing with data."""
    monkeypatch.setenv("HAVLN_DATA", "/nonexistent")
    profile = load_profile(REPO / "config" / "sim.yaml")
    over, warning = no_data_overrides(profile)
    assert over == {"sim_node": {"scene_source": "builtin"}, "agent_node": {"policy": NO_DATA_POLICY}}
    assert warning and warning.count("HA-VLN data not found") == 1
    # an explicit builtin scene and a baseline policy need no data: nothing to replace, nothing to say
    profile = load_profile(REPO / "config" / "sim.yaml", {"sim_node": {"scene_source": "builtin"}, "agent_node": {"policy": "random"}})
    assert no_data_overrides(profile) == ({}, None)


def test_no_data_overrides_change_nothing_when_the_data_is_there(havln_data):
    profile = load_profile(REPO / "config" / "sim.yaml")
    assert no_data_overrides(profile) == ({}, None)


def test_bringup_keeps_sim_real_time_with_motion_node():
    """sim_node + motion_node under Bringup: the simulator keeps real time and the process stays light.

    Regression: with one rclpy MultiThreadedExecutor, motion_node's 100 Hz odom/imu in a mutually
    exclusive group made the executor busy-loop, starving sim_node's stepping thread to 0.18x real
    time at 100 % CPU (measured on 2 cores), so actions timed out.
    """
    full = config.load_profile(
        REPO / "config" / "sim.yaml",
        # real-time stepping (lockstep off: that clock stands still while nobody needs time)
        {"sim_node": {"scene_source": "builtin", "camera_enabled": False, "lockstep": False}, "motion_node": {"require_depth": False}},
    )
    prof = config.Profile(full.path, {k: full.nodes[k] for k in ("sim_node", "motion_node")})
    b = bringup_mod.Bringup(prof, log=lambda s: None).start()
    try:
        sim = b.nodes["sim_node"]
        assert b.spin_until(lambda: sim.sim_time > 0.5, timeout=20.0) == "done"
        s0, w0, c0 = sim.sim_time, time.monotonic(), time.process_time()
        assert b.spin_until(timeout=3.0) == "timeout"
        rtf = (sim.sim_time - s0) / (time.monotonic() - w0)
        cpu = (time.process_time() - c0) / 3.0
        assert rtf > 0.9, f"simulator ran at {rtf:.2f}x real time under Bringup"
        assert cpu < 0.8, f"Bringup of two nodes used {cpu:.2f} of a core (executor busy-looping?)"
        assert b.failed is None
    finally:
        b.shutdown()
