"""Which robot, an e-stop that stays pressed, a Go2 that reboots, and sources pinned at start.

Drivers run as their own processes (``go2_driver_node --ros-args -r __ns:=... --params-file ...``,
as the launch file starts them) against fake Go2s (SDK server classes on loopback), each fake on a
Unitree DDS domain of its own; every driver and every test node share this test's ROS domain,
as two robots on one lab network do.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")
pytest.importorskip("unitree_sdk2py")

from geometry_msgs.msg import Twist  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from havln_robot.robot.fake_go2 import FakeGo2Process  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: Unitree DDS domains of this test's fakes (distinct from every ROS domain the suite uses).
BASE = 150 + (os.getpid() % 25) * 3
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _fake(domain: int, *extra: str) -> FakeGo2Process:
    f = FakeGo2Process(domain, extra_args=list(extra))
    try:
        f.wait_ready(20.0)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    return f


class Driver:
    """go2_driver_node in its own process, started as the launch file starts it."""

    def __init__(self, tmp: Path, domain: int, latch: Path, ns: str = "", **params) -> None:
        p = {
            "network_interface": "lo",
            "dds_domain_id": domain,
            "latch_file": str(latch),
            "cmd_timeout_s": 0.3,
            "state_timeout_s": 2.0,
            "status_rate_hz": 5.0,
            **params,
        }
        body = "\n".join(f"    {k}: {json.dumps(v)}" for k, v in p.items())
        cfg = tmp / f"driver_{domain}_{time.monotonic_ns()}.yaml"
        cfg.write_text(f"/**/go2_driver_node:\n  ros__parameters:\n{body}\n")
        args = [str(Path(sys.executable).parent / "go2_driver_node"), "--ros-args", "-r", "__node:=go2_driver_node"]
        if ns:
            args += ["-r", f"__ns:={ns}"]
        self.log = tmp / f"driver_{domain}_{time.monotonic_ns()}.log"
        self._out = open(self.log, "w")  # noqa: SIM115 - closed in kill()
        self.proc = subprocess.Popen([*args, "--params-file", str(cfg)], cwd=REPO, stdout=self._out, stderr=subprocess.STDOUT)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def kill9(self) -> None:
        """kill -9: no safe_stop, no cleanup (a crash, a power cut of the Jetson)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._out.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()


def _node_proc(tmp: Path, name: str, params: dict) -> subprocess.Popen:
    """Another node of the robot's stack in its own process, as the launch file starts it."""
    body = "\n".join(f"    {k}: {json.dumps(v)}" for k, v in params.items())
    cfg = tmp / f"{name}_{time.monotonic_ns()}.yaml"
    cfg.write_text(f"/**/{name}:\n  ros__parameters:\n{body}\n")
    exe = str(Path(sys.executable).parent / name)
    return subprocess.Popen(
        [exe, "--ros-args", "-r", f"__node:={name}", "--params-file", str(cfg)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


class Operator:
    """A test node: cmd_vel publishers, estop / recover / resume clients, identity and event readers."""

    def __init__(self, ctx, namespaces=("",)) -> None:
        self.node = rclpy.create_node("operator_test", context=ctx)
        self.pubs = {ns: self.node.create_publisher(Twist, f"{ns}/cmd_vel" if ns else "cmd_vel", 10) for ns in namespaces}
        self.identities: list[dict] = []
        self.events: list[dict] = []
        for ns in namespaces:
            self.node.create_subscription(String, f"{ns}/go2/identity" if ns else "go2/identity", self._ident, LATCHED)
            self.node.create_subscription(String, f"{ns}/go2/event" if ns else "go2/event", self._event, LATCHED)
        self.ex = SingleThreadedExecutor(context=ctx)
        self.ex.add_node(self.node)
        self.stop_ev = threading.Event()
        self.flowing: dict[str, float] = {}  # namespace -> vx published continuously at 20 Hz
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _ident(self, msg: String) -> None:
        self.identities.append(json.loads(msg.data))

    def _event(self, msg: String) -> None:
        self.events.append(json.loads(msg.data))

    def _spin(self) -> None:
        nxt = time.monotonic()
        while not self.stop_ev.is_set():
            self.ex.spin_once(timeout_sec=0.01)
            if time.monotonic() >= nxt:
                nxt = time.monotonic() + 0.05
                for ns, vx in list(self.flowing.items()):
                    t = Twist()
                    t.linear.x = vx
                    self.pubs[ns].publish(t)

    def call(self, name: str, timeout: float = 8.0) -> Trigger.Response:
        cli = self.node.create_client(Trigger, name)
        assert cli.wait_for_service(timeout_sec=timeout), f"no service {name}"
        # a request sent while a (re)started server's reply writer is still being matched is lost
        # (DDS discovery): ask again
        for _ in range(3):
            fut = cli.call_async(Trigger.Request())
            end = time.monotonic() + timeout / 2
            while not fut.done() and time.monotonic() < end:
                time.sleep(0.02)
            if fut.done():
                return fut.result()
        raise AssertionError(f"{name} did not answer")

    def close(self) -> None:
        self.flowing.clear()
        self.stop_ev.set()
        self.thread.join(timeout=2)
        self.ex.shutdown()
        self.node.destroy_node()


def wait_for(pred, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return bool(pred())


def _moving(fake: FakeGo2Process, since: float) -> list[dict]:
    return [c for c in fake.calls(since=since) if c["api"] in ("BalanceStand", "Move", "StandUp", "RecoveryStand") and c["accepted"]]


@pytest.fixture
def fake_a():
    f = _fake(BASE)
    yield f
    f.close()


@pytest.fixture
def operator(ros_context):
    op = Operator(ros_context)
    yield op
    op.close()


def test_estop_latch_survives_respawn_and_kill9_while_cmd_vel_flows(tmp_path, fake_a, operator):
    """E-stop (Damp, the fake goes to mode 7), then the driver killed (-9) and started again, twice, as
    the launch file's respawn does, while cmd_vel keeps coming: nothing stands the robot up or moves
    it until go2/recover. (The respawned driver used to send BalanceStand and Move at once.)"""
    latch = tmp_path / "state" / "estop.json"
    d = Driver(tmp_path, BASE, latch)
    try:
        operator.flowing[""] = 0.3
        assert wait_for(lambda: any(c["accepted"] for c in fake_a.calls("Move")), 20.0), d.text()
        res = operator.call("go2/estop")
        assert res.success, res.message
        assert fake_a.command("state")["mode"] == 7
        for _ in range(2):  # respawn, then a second crash
            d.kill9()
            t_restart = time.monotonic()
            d = Driver(tmp_path, BASE, latch)
            assert wait_for(lambda d=d: "Go2 driver on interface" in d.text(), 20.0), d.text()
            time.sleep(2.0)  # cmd_vel keeps flowing
            sent = [c["api"] for c in fake_a.calls(since=t_restart) if c["api"] in ("BalanceStand", "Move", "StandUp")]
            assert not sent, f"respawned driver sent {len(sent)} calls to the damped robot: {sorted(set(sent))}"
            assert fake_a.command("state")["mode"] == 7
            assert "e-stop latch found" in d.text() and latch.exists()
        # kill -9 of the stack's other nodes in turn (they hold no part of the latch)
        others = {
            # its cmd_vel elsewhere: the operator here is the one commander (a second one stops the robot)
            "motion_node": {"require_depth": False, "cmd_vel_topic": "cmd_vel_unused"},
            "trial_logger_node": {"db_path": str(tmp_path / "trials.db")},
        }
        for name, params in others.items():
            t_kill = time.monotonic()
            proc = _node_proc(tmp_path, name, params)
            time.sleep(3.0)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            time.sleep(0.5)
            sent = [c["api"] for c in fake_a.calls(since=t_kill) if c["api"] in ("BalanceStand", "Move", "StandUp")]
            assert not sent and latch.exists() and fake_a.command("state")["mode"] == 7, f"after kill -9 of {name}: {sent}"
        # the operator recovers: latch gone, StandUp, then motion
        t_rec = time.monotonic()
        res = operator.call("go2/recover")
        assert res.success, res.message
        assert not latch.exists()
        assert wait_for(lambda: any(c["api"] == "Move" and c["accepted"] for c in fake_a.calls(since=t_rec)), 10.0), d.text()
        assert fake_a.calls("StandUp", since=t_rec)
    finally:
        operator.flowing.clear()
        d.stop()


def test_driver_finding_the_robot_damped_stays_latched(tmp_path, operator):
    """No latch file (another computer, a wiped disk), but the robot reports damping (mode 7): the
    driver latches and records it; BalanceStand / Move never go out while cmd_vel flows."""
    fake = _fake(BASE + 1, "--initial-mode", "7")
    latch = tmp_path / "estop.json"
    d = Driver(tmp_path, BASE + 1, latch)
    try:
        t0 = time.monotonic()
        operator.flowing[""] = 0.3
        assert wait_for(lambda: "E-STOP latched: robot reported damping" in d.text(), 20.0), d.text()
        time.sleep(1.5)
        assert not [c for c in fake.calls(since=t0) if c["api"] in ("BalanceStand", "Move", "StandUp")]
        assert latch.exists()
    finally:
        operator.flowing.clear()
        d.stop()
        fake.close()


def test_two_robots_without_namespaces_refuse_with_namespaces_isolated(tmp_path, ros_context):
    """Two Go2s brought up as go2.launch.py starts them, on one ROS domain. Without namespaces a
    MOVE for robot A used to move both; now each driver sees the other robot on go2/identity and
    refuses motion, naming it. With namespaces each moves for its own commands only."""
    fa, fb = _fake(BASE + 1), _fake(BASE + 2)
    op = Operator(ros_context)
    da = db = None
    try:
        da = Driver(tmp_path, BASE + 1, tmp_path / "a.json", robot_id="go2-A")
        db = Driver(tmp_path, BASE + 2, tmp_path / "b.json", robot_id="go2-B")
        assert wait_for(lambda: {"go2-A", "go2-B"} <= {i["robot_id"] for i in op.identities}, 20.0), (da.text(), db.text())
        assert wait_for(lambda: "another robot" in da.text() and "another robot" in db.text(), 10.0), (da.text(), db.text())
        assert "go2-B" in da.text() and "go2-A" in db.text()
        from havln_robot.doctor import _default_robots

        seen = {(r["robot_id"], r["topic"]) for r in _default_robots(1.0)}  # what `havln-robot doctor` lists
        assert {("go2-A", "/go2/identity"), ("go2-B", "/go2/identity")} <= seen, seen
        t0 = time.monotonic()
        op.flowing[""] = 0.3  # robot A's command, on the shared name
        time.sleep(2.0)
        assert not _moving(fa, t0) and not _moving(fb, t0), "a robot moved while another robot's driver shares its names"
    finally:
        op.close()
        for d in (da, db):
            if d is not None:
                d.stop()
    op = Operator(ros_context, namespaces=("/robot_a", "/robot_b"))
    try:
        da = Driver(tmp_path, BASE + 1, tmp_path / "a2.json", ns="/robot_a", robot_id="go2-A")
        db = Driver(tmp_path, BASE + 2, tmp_path / "b2.json", ns="/robot_b", robot_id="go2-B")
        assert wait_for(lambda: {"go2-A", "go2-B"} <= {i["robot_id"] for i in op.identities}, 20.0)
        t0 = time.monotonic()
        op.flowing["/robot_a"] = 0.3
        assert wait_for(lambda: any(c["api"] == "Move" and c["accepted"] for c in fa.calls(since=t0)), 15.0), da.text()
        time.sleep(1.0)
        op.flowing.clear()
        assert not fb.calls("Move", since=t0), "robot B moved for robot A's command"
        assert "another robot" not in da.text() + db.text()
    finally:
        op.close()
        for d in (da, db):
            d.stop()
        fa.close()
        fb.close()


def test_second_commander_on_cmd_vel_stops_the_robot(tmp_path, fake_a, ros_context):
    """A second publisher on the driver's cmd_vel (another stack on the same domain): the robot is
    stopped and motion refused, with one line naming both publishers."""
    op = Operator(ros_context)
    d = Driver(tmp_path, BASE, tmp_path / "l.json")
    other = rclpy.create_node("other_stack_motion", context=ros_context)
    try:
        op.flowing[""] = 0.3
        assert wait_for(lambda: any(c["api"] == "Move" and c["accepted"] for c in fake_a.calls()), 20.0), d.text()
        other.create_publisher(Twist, "cmd_vel", 10)
        assert wait_for(lambda: "second publisher" in d.text(), 10.0), d.text()
        assert wait_for(lambda: "[ERROR]" in d.text() and "/other_stack_motion" in d.text(), 5.0), d.text()
        line = next(ln for ln in d.text().splitlines() if "[ERROR]" in ln and "second publisher" in ln and "/cmd_vel" in ln)
        assert "/other_stack_motion" in line and "/operator_test" in line, line
        t_stop = time.monotonic()
        time.sleep(1.0)
        assert not [c for c in fake_a.calls("Move", since=t_stop + 0.2) if c["accepted"]], "still moving with two commanders"
    finally:
        op.close()
        other.destroy_node()
        d.stop()


def test_go2_reboot_mid_step_stops_and_is_reported(tmp_path, operator):
    """The fake Go2 killed while walking and back 2 s later at the origin: the driver reports a
    robot_reset event (reason named), stops, and refuses motion until go2/resume; the jump is not
    walked over silently."""
    fake = _fake(BASE + 2)
    d = Driver(tmp_path, BASE + 2, tmp_path / "r.json")
    try:
        operator.flowing[""] = 0.3
        assert wait_for(lambda: fake.command("state")["x"] > 0.4, 20.0), d.text()
        fake.proc.kill()
        fake.proc.wait()
        time.sleep(2.0)
        fake = _fake(BASE + 2)  # rebooted: odometry at 0
        t_back = time.monotonic()
        assert wait_for(lambda: any(e["event"] == "robot_reset" for e in operator.events), 15.0), d.text()
        ev = next(e for e in operator.events if e["event"] == "robot_reset")
        assert "robot reset" in ev["reason"], ev
        time.sleep(1.5)  # cmd_vel still flowing
        assert not [c for c in fake.calls("Move", since=t_back) if c["accepted"]], "moved on after the reboot without the operator"
        res = operator.call("go2/resume")
        assert res.success, res.message
        t1 = time.monotonic()
        assert wait_for(lambda: any(c["api"] == "Move" and c["accepted"] for c in fake.calls(since=t1)), 10.0), d.text()
    finally:
        operator.flowing.clear()
        d.stop()
        fake.close()
