"""A fake Unitree Go2 for tests and bench runs, built on the SDK's own server classes.

It serves the sport API with ``unitree_sdk2py.rpc.server.Server("sport")`` (the same request /
response DDS topics and API ids that ``SportClient`` uses) and publishes
``unitree_go.msg.dds_.SportModeState_`` on ``rt/sportmodestate`` at ``rate_hz``, integrating the
received ``Move`` commands. It never touches rclpy.

Model (:class:`FakeGo2Model`, simplified on purpose, documented in docs/robot.md):

* ``Move(vx, vy, vyaw)`` is obeyed only in balance stand (mode 1) or locomotion (mode 3); in any
  other mode it is ignored, like the real robot right after ``StandUp``. The fake starts in mode 6
  (joint lock: what ``StandUp`` leaves), so a driver must send ``BalanceStand`` first.
* A ``Move`` is held for ``hold_s`` (1 s, as the Go2 sport controller does); then the fake stops.
* ``StopMove`` stops at once (mode 1); ``Damp`` -> mode 7, no motion until ``StandUp`` or
  ``RecoveryStand``; ``StandUp`` -> 6; ``StandDown`` -> 5; ``BalanceStand`` -> 1 (not from 7);
  ``Euler(roll, pitch, yaw)`` sets the body attitude shown in the IMU quaternion.
* Velocities are ideal (no acceleration limit); ``state.velocity`` is in the odometry frame
  (``velocity_frame="odom"``) or the body frame.

Run it by hand (stays on loopback unless ``--allow-non-loopback``)::

    python -m havln_robot.robot.fake_go2 --domain 1
    # then: go2_driver_node with network_interface:=lo dds_domain_id:=1

Its stdout carries one JSON object per line (``{"event": "call", "api": "Move", ...}``); stdin takes
commands ``pause`` / ``resume`` (stop / restart the state stream), ``reset``, ``state``, ``quit``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from havln_robot import jsonio
from havln_robot.text import number_in

#: Sport API ids served (unitree_sdk2py/go2/sport/sport_api.py), id -> name.
SPORT_APIS = {
    1001: "Damp",
    1002: "BalanceStand",
    1003: "StopMove",
    1004: "StandUp",
    1005: "StandDown",
    1006: "RecoveryStand",
    1007: "Euler",
    1008: "Move",
}
MODE_BALANCE, MODE_LOCOMOTION, MODE_LIE_DOWN, MODE_JOINT_LOCK, MODE_DAMPING = 1, 3, 5, 6, 7


@dataclass
class FakeGo2Model:
    """Kinematics and mode logic of the fake (pure; times in seconds of one monotonic clock).

    Attributes:
        hold_s: how long a Move is executed without a new one (s).
        mode: SportModeState_.mode.
        x, y, yaw: pose in the fake's odometry frame (m, m, rad).
        cmd: commanded (vx, vy, vyaw) in the body frame (m/s, rad/s), currently executed.
        roll, pitch: body attitude from Euler (rad).
    """

    hold_s: float = 1.0
    mode: int = MODE_JOINT_LOCK
    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0
    roll: float = 0.0
    pitch: float = 0.0
    cmd: tuple[float, float, float] = (0.0, 0.0, 0.0)
    move_t: float = -math.inf
    t: float | None = None
    ignored_moves: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def handle(self, api: str, params: dict[str, Any], t: float) -> bool:
        """Apply one sport API call at time ``t``; returns False when it was ignored (wrong mode)."""
        self.step(t)
        self.counts[api] = self.counts.get(api, 0) + 1
        if api == "Move":
            if self.mode not in (MODE_BALANCE, MODE_LOCOMOTION):
                self.ignored_moves += 1
                return False
            self.cmd = (float(params["x"]), float(params["y"]), float(params["z"]))
            self.move_t = t
            self.mode = MODE_LOCOMOTION if any(abs(c) > 0 for c in self.cmd) else MODE_BALANCE
        elif api == "StopMove":
            self._halt()
        elif api == "Damp":
            self._halt(MODE_DAMPING)
        elif api in ("StandUp", "RecoveryStand"):
            self._halt(MODE_JOINT_LOCK if api == "StandUp" else MODE_BALANCE)
        elif api == "StandDown":
            self._halt(MODE_LIE_DOWN)
        elif api == "BalanceStand":
            if self.mode == MODE_DAMPING:
                return False
            self._halt()
        elif api == "Euler":
            self.roll, self.pitch = float(params.get("x", 0.0)), float(params.get("y", 0.0))
        return True

    def _halt(self, mode: int = MODE_BALANCE) -> None:
        self.cmd = (0.0, 0.0, 0.0)
        self.move_t = -math.inf
        self.mode = mode

    def step(self, t: float) -> None:
        """Integrate the executed command up to ``t`` (exact for constant velocity; the hold ends on time)."""
        if self.t is None:
            self.t = t
            return
        end = min(t, self.move_t + self.hold_s)
        dt = max(0.0, end - self.t)
        vx, vy, w = self.cmd
        if dt > 0.0 and (vx or vy or w):
            if abs(w) > 1e-9:  # constant twist: exact arc
                y0, y1 = self.yaw, self.yaw + w * dt
                self.x += (vx * (math.sin(y1) - math.sin(y0)) + vy * (math.cos(y1) - math.cos(y0))) / w
                self.y += (-vx * (math.cos(y1) - math.cos(y0)) + vy * (math.sin(y1) - math.sin(y0))) / w
                self.yaw = math.atan2(math.sin(y1), math.cos(y1))
            else:
                c, s = math.cos(self.yaw), math.sin(self.yaw)
                self.x += (c * vx - s * vy) * dt
                self.y += (s * vx + c * vy) * dt
        if t > self.move_t + self.hold_s and self.mode == MODE_LOCOMOTION:
            self._halt()
        self.t = t

    def velocity(self) -> tuple[float, float, float]:
        """Executed (vx, vy, vyaw) in the body frame."""
        return self.cmd if (self.t is not None and self.t <= self.move_t + self.hold_s) else (0.0, 0.0, 0.0)

    def quaternion_wxyz(self) -> tuple[float, float, float, float]:
        """Body attitude as a unitree (w, x, y, z) quaternion (ZYX roll, pitch, yaw)."""
        cr, sr = math.cos(self.roll / 2), math.sin(self.roll / 2)
        cp, sp = math.cos(self.pitch / 2), math.sin(self.pitch / 2)
        cy, sy = math.cos(self.yaw / 2), math.sin(self.yaw / 2)
        return (
            cr * cp * cy + sr * sp * sy,
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
        )

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict view (pose, executed velocity, mode, counts)."""
        vx, vy, w = self.velocity()
        return {
            "x": self.x,
            "y": self.y,
            "yaw": self.yaw,
            "vx": vx,
            "vy": vy,
            "vyaw": w,
            "mode": self.mode,
            "ignored_moves": self.ignored_moves,
            "counts": dict(self.counts),
        }


class FakeGo2:
    """The fake robot on a Unitree SDK channel: sport RPC server + sportmodestate publisher.

    Args:
        domain_id: DDS domain (tests: distinct from the ROS domain).
        interface: network interface (``"lo"``).
        rate_hz: sportmodestate rate (Hz).
        hold_s: Move hold time (s).
        initial_mode: SportModeState_.mode at start (6 = joint lock, as after StandUp).
        velocity_frame: ``"odom"`` or ``"body"``: frame of ``state.velocity``.
        on_call: called with each call record ``{"t", "api", "params", "accepted"}`` (SDK server thread).
        allow_non_loopback: permit an interface other than ``lo`` (a fake robot on a real network is
            confusing; off by default).

    Raises:
        ValueError: non-loopback interface without ``allow_non_loopback``.
        havln_robot.robot.go2.Go2Error: the SDK channel could not be set up.
    """

    def __init__(
        self,
        domain_id: int,
        interface: str = "lo",
        rate_hz: float = 100.0,
        hold_s: float = 1.0,
        initial_mode: int = MODE_JOINT_LOCK,
        velocity_frame: str = "odom",
        on_call: Callable[[dict[str, Any]], None] | None = None,
        allow_non_loopback: bool = False,
    ) -> None:
        if interface != "lo" and not allow_non_loopback:
            raise ValueError(f"interface={interface!r}: the fake Go2 runs on 'lo' only (pass allow_non_loopback to override)")
        if velocity_frame not in ("odom", "body"):
            raise ValueError(f"velocity_frame={velocity_frame!r}: use 'odom' or 'body'")
        from havln_robot.robot.go2 import init_channel

        init_channel(domain_id, interface)
        self.rate_hz = float(rate_hz)
        self.velocity_frame = velocity_frame
        self.model = FakeGo2Model(hold_s=hold_s, mode=initial_mode)
        self._initial_mode = initial_mode
        self._lock = threading.Lock()
        self._on_call = on_call
        self.calls: list[dict[str, Any]] = []
        self.publishing = threading.Event()
        self.publishing.set()
        self._stop = threading.Event()
        self._server = _make_server(self._handle)
        self._pub = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeGo2:
        """Start serving and publishing; returns self."""
        from unitree_sdk2py.core.channel import ChannelPublisher
        from unitree_sdk2py.idl.unitree_go.msg.dds_ import SportModeState_

        self._server.Init()
        self._server.Start(False)
        self._pub = ChannelPublisher("rt/sportmodestate", SportModeState_)
        self._pub.Init()
        self._thread = threading.Thread(target=self._publish_loop, name="fake_go2_state", daemon=True)
        self._thread.start()
        return self

    def _handle(self, api: str, parameter: str) -> tuple[int, str]:
        try:
            params = json.loads(parameter) if parameter else {}
        except json.JSONDecodeError:
            params = {}
        t = time.monotonic()
        with self._lock:
            accepted = self.model.handle(api, params, t)
            rec = {"t": t, "api": api, "params": params, "accepted": accepted, "mode": self.model.mode}
            self.calls.append(rec)
        if self._on_call is not None:
            self._on_call(rec)
        return 0, ""

    def _publish_loop(self) -> None:
        from unitree_sdk2py.idl.default import unitree_go_msg_dds__SportModeState_

        period = 1.0 / self.rate_hz
        nxt = time.monotonic()
        while not self._stop.is_set():
            nxt += period
            now = time.monotonic()
            if self.publishing.is_set():
                msg = unitree_go_msg_dds__SportModeState_()
                with self._lock:
                    self.model.step(now)
                    m = self.model
                    vx, vy, w = m.velocity()
                    q = m.quaternion_wxyz()
                    x, y, yaw, mode = m.x, m.y, m.yaw, m.mode
                    roll, pitch = m.roll, m.pitch
                wall = time.time()
                msg.stamp.sec, msg.stamp.nanosec = int(wall), int((wall % 1.0) * 1e9)
                msg.mode = mode
                msg.gait_type = 1 if mode == MODE_LOCOMOTION else 0
                msg.position = [x, y, 0.0]
                if self.velocity_frame == "odom":
                    c, s = math.cos(yaw), math.sin(yaw)
                    msg.velocity = [c * vx - s * vy, s * vx + c * vy, 0.0]
                else:
                    msg.velocity = [vx, vy, 0.0]
                msg.yaw_speed = w
                msg.imu_state.quaternion = list(q)
                msg.imu_state.rpy = [roll, pitch, yaw]
                msg.imu_state.gyroscope = [0.0, 0.0, w]
                msg.imu_state.accelerometer = [0.0, 0.0, 9.81]
                self._pub.Write(msg)
            self._stop.wait(max(0.0, nxt - time.monotonic()))

    def pause_state(self) -> None:
        """Stop publishing sportmodestate (simulates a lost state stream); RPC keeps working."""
        self.publishing.clear()

    def resume_state(self) -> None:
        """Publish sportmodestate again."""
        self.publishing.set()

    def reset(self) -> None:
        """Pose to the origin, initial mode, empty call log."""
        with self._lock:
            self.model = FakeGo2Model(hold_s=self.model.hold_s, mode=self._initial_mode)
            self.calls.clear()

    def snapshot(self) -> dict[str, Any]:
        """Current model state (see :meth:`FakeGo2Model.snapshot`)."""
        with self._lock:
            self.model.step(time.monotonic())
            return self.model.snapshot()

    def close(self) -> None:
        """Stop the publisher thread (the SDK server thread is a daemon and ends with the process)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)


def _make_server(handle: Callable[[str, str], tuple[int, str]]) -> Any:
    """A ``Server("sport")`` subclass instance whose handlers all forward to ``handle(api_name, parameter)``."""
    from unitree_sdk2py.go2.sport.sport_api import SPORT_API_VERSION, SPORT_SERVICE_NAME
    from unitree_sdk2py.rpc.server import Server

    class _SportServer(Server):
        def __init__(self) -> None:
            super().__init__(SPORT_SERVICE_NAME)

        def Init(self) -> None:  # noqa: N802 (SDK naming)
            self._SetApiVersion(SPORT_API_VERSION)
            for api_id, name in SPORT_APIS.items():
                self._RegistHandler(api_id, (lambda parameter, _n=name: handle(_n, parameter)), False)

    return _SportServer()


class FakeGo2Process:
    """The fake Go2 run as a separate process (``python -m havln_robot.robot.fake_go2``), as a real robot is.

    Collects the JSON events it prints; :meth:`command` sends a stdin command and returns its
    ``state`` answer. Used by the driver tests and :mod:`havln_robot.bench.robot`.

    Args:
        domain_id: Unitree DDS domain (distinct from the ROS domain).
        rate_hz: sportmodestate rate (Hz).
        extra_args: further command-line arguments for the fake.
    """

    def __init__(self, domain_id: int, rate_hz: float = 100.0, extra_args: list[str] | None = None) -> None:
        import subprocess

        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "havln_robot.robot.fake_go2",
                "--domain",
                str(domain_id),
                "--interface",
                "lo",
                "--rate",
                str(rate_hz),
                *(extra_args or []),
            ],
            cwd=str(Path(__file__).resolve().parents[2]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.events: list[dict[str, Any]] = []
        self._cv = threading.Condition()
        threading.Thread(target=self._read, name="fake_go2_reader", daemon=True).start()

    def freeze(self) -> None:
        """Freeze the robot (SIGSTOP): no state, no RPC replies -- reply calls block for their timeout."""
        import signal

        os.kill(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """Undo :meth:`freeze` (SIGCONT)."""
        import signal

        os.kill(self.proc.pid, signal.SIGCONT)

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("{"):
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:
                    continue
                with self._cv:
                    self.events.append(ev)
                    self._cv.notify_all()
        with self._cv:
            self._cv.notify_all()

    def wait(self, pred: Callable[[dict[str, Any]], bool], timeout: float, start: int = 0) -> dict[str, Any] | None:
        """First event from index ``start`` satisfying ``pred``, waiting up to ``timeout`` s; None on timeout."""
        end = time.monotonic() + timeout
        with self._cv:
            while True:
                for e in self.events[start:]:
                    if pred(e):
                        return e
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self._cv.wait(min(left, 0.2))

    def wait_ready(self, timeout: float = 20.0) -> None:
        """Block until the fake serves.

        Raises:
            RuntimeError: it exited or did not get ready in time (message carries its stderr).
        """
        if self.wait(lambda e: e["event"] == "ready", timeout) is None:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=5)
            raise RuntimeError(f"fake Go2 did not start within {timeout:g} s: {err.strip()[-500:]}")

    def calls(self, api: str | None = None, since: float = -math.inf) -> list[dict[str, Any]]:
        """Call records (``{"t", "api", "params", "accepted", "mode"}``; t = time.monotonic of the fake) since ``since``."""
        with self._cv:
            return [e for e in self.events if e["event"] == "call" and (api is None or e["api"] == api) and e["t"] >= since]

    def command(self, cmd: str, timeout: float = 5.0) -> dict[str, Any]:
        """Send ``pause`` / ``resume`` / ``reset`` / ``state``; returns the fake's state snapshot after it.

        Raises:
            RuntimeError: no answer within ``timeout`` s.
        """
        with self._cv:
            n = len(self.events)
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        ev = self.wait(lambda e: e["event"] == "state" and e.get("cmd") == cmd, timeout, start=n)
        if ev is None:
            raise RuntimeError(f"fake Go2 did not answer {cmd!r} within {timeout:g} s")
        return ev

    def close(self) -> None:
        """Ask it to quit; kill it if it does not."""
        import subprocess

        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def main(argv: list[str] | None = None) -> int:
    """Run the fake Go2 until ``quit`` on stdin / EOF / Ctrl-C. Events go to stdout as JSON lines."""
    ap = argparse.ArgumentParser(prog="python -m havln_robot.robot.fake_go2", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--domain", type=number_in(0, 232, integer=True), default=1, help="DDS domain id (default 1; keep it distinct from ROS_DOMAIN_ID)"
    )
    ap.add_argument("--interface", default="lo", help="network interface (default lo)")
    ap.add_argument("--rate", type=number_in(0, 1000, unit="Hz", above=True), default=100.0, help="sportmodestate rate in Hz (default 100)")
    ap.add_argument(
        "--hold", type=number_in(0, 60, unit="s", above=True), default=1.0, help="Move hold time in s (default 1.0, as the Go2)"
    )
    ap.add_argument(
        "--initial-mode", type=number_in(0, 255, integer=True), default=MODE_JOINT_LOCK, help="mode at start (default 6, joint lock)"
    )
    ap.add_argument("--velocity-frame", choices=("odom", "body"), default="odom")
    ap.add_argument("--allow-non-loopback", action="store_true", help="permit an interface other than lo")
    args = ap.parse_args(argv)
    out_lock = threading.Lock()

    def emit(obj: dict[str, Any]) -> None:
        with out_lock:
            sys.stdout.write(jsonio.dumps(obj, nonfinite="null") + "\n")
            sys.stdout.flush()

    try:
        fake = FakeGo2(
            args.domain,
            args.interface,
            rate_hz=args.rate,
            hold_s=args.hold,
            initial_mode=args.initial_mode,
            velocity_frame=args.velocity_frame,
            on_call=lambda rec: emit({"event": "call", **rec}),
            allow_non_loopback=args.allow_non_loopback,
        ).start()
    except Exception as exc:  # one line, no traceback
        print(f"fake_go2: {exc}", file=sys.stderr)
        return 2
    emit({"event": "ready", "domain": args.domain, "interface": args.interface})
    try:
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "quit":
                break
            if cmd == "pause":
                fake.pause_state()
            elif cmd == "resume":
                fake.resume_state()
            elif cmd == "reset":
                fake.reset()
            elif cmd != "state":
                emit({"event": "error", "message": f"unknown command {cmd!r}; use pause, resume, reset, state, quit"})
                continue
            emit({"event": "state", "cmd": cmd, **fake.snapshot()})
    except KeyboardInterrupt:
        pass
    fake.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
