"""``havln-robot bench console``: e-stop latency and frame rate of the operator console, over loopback.

Starts config/sim.yaml (builtin scene, a policy that drives at once) with a console, logs in,
opens the page's WebSocket and repeats: resume the agent, wait until the robot moves (non-zero
``cmd_vel``), wait a random 0.1-0.4 s, send the page's e-stop message, and time until an
independent DDS subscriber (own rclpy context) sees the first zero ``cmd_vel``. The page's JS
sends the same message from the key/click handler, so this is the browser event -> zero command
path minus the browser's own event dispatch (well under 1 ms). Also reported: the colour frames per
second one page receives.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from typing import Any

from havln_robot import jsonio
from havln_robot.paths import config_dir
from havln_robot.text import number_in

REPO_SIM = str(config_dir() / "sim.yaml")  # the shipped profile, from any working directory
TOKEN = "bench-console-token"


class _CmdVelWatch:
    """Every cmd_vel message, timestamped on arrival, from a node in its own rclpy context."""

    def __init__(self, topic: str = "cmd_vel") -> None:
        import rclpy
        from geometry_msgs.msg import Twist
        from rclpy.executors import SingleThreadedExecutor

        from havln_robot.dds import configure_dds

        configure_dds()
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
        self.node = rclpy.create_node("bench_console_watch", context=self.ctx)
        self.cond = threading.Condition()
        self.msgs: list[tuple[float, float, float]] = []
        self.node.create_subscription(Twist, topic, self._on, 100)
        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)
        self._halt = False
        self.th = threading.Thread(target=self._spin, daemon=True)
        self.th.start()

    def _on(self, m: Any) -> None:
        with self.cond:
            self.msgs.append((time.monotonic(), m.linear.x, m.angular.z))
            self.cond.notify_all()

    def _spin(self) -> None:
        while not self._halt and self.ctx.ok():
            self.ex.spin_once(timeout_sec=0.05)

    def wait(self, pred: Any, after: float, timeout: float) -> float | None:
        """Arrival time of the first message after ``after`` with pred(vx, wz); None at the timeout."""
        t_end = time.monotonic() + timeout
        with self.cond:
            while True:
                for t, vx, wz in self.msgs:
                    if t >= after and pred(vx, wz):
                        return t
                left = t_end - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(min(left, 0.05))

    def moving_at(self, t: float) -> bool:
        """The last command before ``t`` was non-zero."""
        with self.cond:
            before = [m for m in self.msgs if m[0] < t]
        return bool(before) and (abs(before[-1][1]) > 1e-3 or abs(before[-1][2]) > 1e-3)

    def close(self) -> None:
        self._halt = True
        self.th.join(2)
        self.ex.shutdown()
        self.node.destroy_node()
        self.ctx.try_shutdown()


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints one summary line per figure. Returns 1 when p95 > the limit."""
    ap = argparse.ArgumentParser(
        prog="havln-robot bench console",
        description="E-stop latency (page event -> zero cmd_vel) and frames/s of the operator console over loopback.",
    )
    ap.add_argument("--n", type=number_in(1, integer=True), default=20, help="e-stops to time (default 20)")
    ap.add_argument("--limit-ms", type=number_in(0, 60000, unit="ms", above=True), default=100.0, help="p95 target, ms (default 100)")
    ap.add_argument("--seed", type=number_in(0, integer=True), default=0, help="seed of the random wait before each e-stop")
    a = ap.parse_args(argv)
    if a.n < 1:
        print("havln-robot bench console: --n must be >= 1", file=sys.stderr)
        return 2
    import httpx
    from websockets.sync.client import connect

    from havln_robot import console_app
    from havln_robot.config import ConfigError

    rng = random.Random(a.seed)
    over = {"sim_node": {"scene_source": "builtin", "populate_humans": 0}, "agent_node": {"policy": "forward:steps=10000,views=1"}}
    try:
        b = console_app.start(REPO_SIM, {"port": 0, "token": TOKEN}, log=lambda s: None, node_overrides=over)
    except ConfigError as exc:
        print(f"havln-robot bench console: {exc}", file=sys.stderr)
        return 2
    watch = _CmdVelWatch()
    lat: list[float] = []
    missed = 0
    try:
        url = b.nodes["console_node"].url
        http = httpx.Client(base_url=url.rstrip("/"))
        http.post("/api/login", json={"token": TOKEN, "name": "bench"}).raise_for_status()
        http.post("/api/control/take").raise_for_status()
        sid = http.cookies.get("havln_console")
        with connect(url.replace("http", "ws") + "ws", additional_headers={"Cookie": f"havln_console={sid}"}) as ws:
            # frame rate one page receives
            t0, frames = time.monotonic(), 0
            while time.monotonic() - t0 < 4.0:
                m = ws.recv(timeout=2.0)
                frames += isinstance(m, bytes) and m[:1] == b"\x00"
            fps = frames / (time.monotonic() - t0)
            http.post("/api/trial/start", json={"instruction": "walk down the hallway", "region": "hallway"}).raise_for_status()
            drain = threading.Thread(target=_drain, args=(ws,), daemon=True)
            drain.start()
            for i in range(a.n):
                http.post("/api/pause", json={"paused": False}).raise_for_status()
                moving = watch.wait(lambda vx, wz: abs(vx) > 1e-3 or abs(wz) > 1e-3, time.monotonic(), 20.0)
                if moving is None:
                    missed += 1
                    continue
                time.sleep(rng.uniform(0.1, 0.4))
                t_send = time.monotonic()
                ws.send(jsonio.dumps({"op": "estop", "id": i}))
                if not watch.moving_at(t_send):  # between two actions: a zero would come anyway; not a sample
                    missed += 1
                    time.sleep(0.3)
                    continue
                t_zero = watch.wait(lambda vx, wz: vx == 0.0 and wz == 0.0, t_send, 2.0)
                if t_zero is None:
                    missed += 1
                    continue
                lat.append((t_zero - t_send) * 1000.0)
                time.sleep(0.3)
            http.post("/api/trial/end", json={"outcome": "aborted"})
    finally:
        watch.close()
        b.shutdown()
    print(f"console frames: {fps:.1f} colour fps received by one page over loopback (target >= 5)")
    if not lat:
        print(f"console e-stop: no measurement ({missed} attempts saw no motion or no zero command)")
        return 1
    p50, p95, mx = statistics.median(lat), _pct(lat, 95), max(lat)
    print(
        f"console e-stop -> zero cmd_vel: p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {mx:.1f} ms over {len(lat)} e-stops ({missed} skipped: robot not moving at the e-stop); target p95 <= {a.limit_ms:g} ms"
    )
    return 0 if p95 <= a.limit_ms and fps >= 5.0 else 1


def _drain(ws: Any) -> None:
    """Read the page's WebSocket so it is a live client, not a stalled one."""
    try:
        while True:
            ws.recv()
    except Exception:
        return
