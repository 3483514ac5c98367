"""Benchmark of go2_driver_node against the fake Go2 (loopback): latencies and command rate.

``havln-robot bench robot [--trials N]`` starts the fake Go2 in its own process (Unitree
SDK on ``lo``, its own DDS domain) and the real driver node in this one, then prints:

* cmd_vel -> first Move latency (ms), and the Move interval while commanded (ms, p50 / p95);
* e-stop latency: ``go2/estop`` request sent -> ``Damp`` received by the robot (ms);
* e-stop latency with the robot frozen (SIGSTOP; a StandUp blocked in the SDK): service request
  received -> ``Damp`` handed to the SDK, measured in the driver (ms; bound p95 <= 50 ms);
* cmd_vel deadman: last cmd_vel -> ``StopMove`` (ms; configured 30 ms; bound: two control periods of
  motion_node, 40 ms at 50 Hz); cmd_vel goes out at 100 Hz, a stream faster than the deadman;
* lost state: sportmodestate stopped -> ``StopMove`` (ms; configured limit 500 ms).

Both processes stamp with ``time.monotonic`` (CLOCK_MONOTONIC, shared by processes on one machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any

import numpy as np

from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.paths import write_json
from havln_robot.text import number_in, path_arg, plural


def _pct(xs: list[float]) -> str:
    if not xs:
        return "n/a"
    a = np.asarray(xs) * 1e3
    return f"p50 {np.percentile(a, 50):6.1f}  p95 {np.percentile(a, 95):6.1f}  max {a.max():6.1f} ms  (n={len(a)})"


def _stats(xs: list[float]) -> dict[str, float | int | None]:
    """p50 / p95 / max in ms and the count of latencies given in seconds (None when there are none)."""
    if not xs:
        return {"p50_ms": None, "p95_ms": None, "max_ms": None, "n": 0}
    a = np.asarray(xs) * 1e3
    return {"p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95)), "max_ms": float(a.max()), "n": len(a)}


class _Rig:
    """The driver node under test, a client node (cmd_vel, e-stop, recover) spun in a thread, the fake Go2."""

    def __init__(self, fake: Any, ctx: Any, unitree_domain: int) -> None:
        import tempfile

        from geometry_msgs.msg import Twist
        from rclpy.executors import SingleThreadedExecutor
        from std_srvs.srv import Trigger

        from havln_robot.nodes.go2_driver_node import Go2DriverNode

        self.fake, self.Twist, self.Trigger = fake, Twist, Trigger
        latch = os.path.join(tempfile.mkdtemp(prefix="havln-bench-"), "estop.json")  # never the user's latch
        self.driver = Go2DriverNode(params={"network_interface": "lo", "dds_domain_id": unitree_domain, "latch_file": latch}, context=ctx)
        import rclpy

        self.node = rclpy.create_node("robot_bench", context=ctx)
        self.pub = self.node.create_publisher(Twist, "cmd_vel", 10)
        self.estop = self.node.create_client(Trigger, "go2/estop")
        self.recover = self.node.create_client(Trigger, "go2/recover")
        self.ex = SingleThreadedExecutor(context=ctx)
        self.ex.add_node(self.driver)
        self.ex.add_node(self.node)
        self.stop = threading.Event()
        self.gaps: list[float] = []  # this trial's largest gap between our own cmd_vel publishes, s
        self.th = threading.Thread(target=self._spin, daemon=True)
        self.th.start()

    def _spin(self) -> None:
        while not self.stop.is_set():
            self.ex.spin_once(timeout_sec=0.01)

    def publish(self, vx: float) -> None:
        t = self.Twist()
        t.linear.x = vx
        self.pub.publish(t)

    def drive(self, vx: float, seconds: float, rate: float = 100.0) -> float:
        """Publish cmd_vel for ``seconds``; returns the time of the last publish."""
        end, last = time.monotonic() + seconds, 0.0
        while time.monotonic() < end:
            now = time.monotonic()
            if last:
                self.gaps.append(now - last)
            last = now
            self.publish(vx)
            time.sleep(1.0 / rate)
        return last

    def call(self, client: Any) -> tuple[float, Any]:
        client.wait_for_service(timeout_sec=5.0)
        t0 = time.monotonic()
        fut = client.call_async(self.Trigger.Request())
        while not fut.done() and time.monotonic() - t0 < 5.0:
            time.sleep(0.001)
        return t0, fut.result()

    def first_after(self, api: str, t0: float, timeout: float = 2.0) -> float | None:
        ev = self.fake.wait(lambda e: e["event"] == "call" and e["api"] == api and e["t"] >= t0, timeout)
        return None if ev is None else ev["t"] - t0

    def close(self) -> None:
        self.stop.set()
        self.th.join(timeout=2)
        self.driver.safe_stop()
        self.ex.shutdown()
        self.driver.destroy_node()
        self.node.destroy_node()


def _live_trials(rig: _Rig, trials: int) -> dict[str, Any]:
    """cmd_vel -> first Move, Move intervals, the deadman (starved trials dropped), e-stop -> Damp; seconds."""
    out: dict[str, Any] = {"first_move": [], "move_interval": [], "estop_damp": [], "watchdog_stopmove": [], "starved": 0}
    limit_s = rig.driver.params["cmd_timeout_s"]
    for _ in range(trials):
        rig.gaps.clear()
        t0 = time.monotonic()
        rig.publish(0.3)
        d = rig.first_after("Move", t0)
        if d is not None:
            out["first_move"].append(d)
        rig.drive(0.3, 0.6)
        moves = rig.fake.calls("Move", since=t0)
        out["move_interval"] += [b["t"] - a["t"] for a, b in zip(moves[1:], moves[2:], strict=False)]
        last = rig.drive(0.3, 0.1)
        d = rig.first_after("StopMove", last)
        # "last command -> StopMove" measures the watchdog only when the commands reached the driver
        # as a continuous stream: a publish gap of ours, or a gap in the driver's own Move re-sends
        # (its executor starved), longer than the deadman means a stop and restart on the way -> drop.
        resend = [m["t"] for m in rig.fake.calls("Move", since=t0) if m["t"] <= last]
        resend_gap = max((b - a for a, b in zip(resend, resend[1:], strict=False)), default=0.0)
        if max(rig.gaps, default=0.0) > limit_s or resend_gap > max(limit_s, 2.0 / rig.driver.params["command_rate_hz"]):
            out["starved"] += 1
        elif d is not None:
            out["watchdog_stopmove"].append(d)
        rig.drive(0.3, 0.3)
        t0, res = rig.call(rig.estop)
        d = rig.first_after("Damp", t0)
        if d is not None and res is not None and res.success:
            out["estop_damp"].append(d)
        rig.call(rig.recover)
        time.sleep(0.2)
    return out


def _frozen_trials(rig: _Rig, trials: int) -> list[float]:
    """E-stop with the robot frozen (SIGSTOP: a recover's StandUp blocks in the SDK for rpc_timeout_s):
    service request received -> Damp handed to the SDK, measured in the driver, s. Each freeze is
    short (a DDS participant frozen past its lease, ~10 s, is dropped by its peers)."""
    frozen: list[float] = []
    for _ in range(trials):
        rig.fake.freeze()
        try:
            rig.call(rig.recover)  # answers at once; StandUp goes out from the control thread and blocks
            time.sleep(0.05)
            n = len(rig.driver.estop_latencies_ms)
            rig.call(rig.estop)
            if len(rig.driver.estop_latencies_ms) > n:
                frozen.append(rig.driver.estop_latencies_ms[-1] / 1e3)
        finally:
            rig.fake.thaw()
        time.sleep(0.3)
    return frozen


def _state_lost(rig: _Rig) -> float | None:
    """sportmodestate stopped while commanded -> StopMove, s (None: no StopMove)."""
    rig.call(rig.recover)
    time.sleep(0.5)
    rig.drive(0.3, 0.3)
    rig.fake.command("pause")
    t_pause = time.monotonic()
    rig.drive(0.3, 1.0)
    lost = rig.first_after("StopMove", t_pause)
    rig.fake.command("resume")
    return lost


def _print(m: dict[str, Any], params: dict[str, Any], trials: int) -> None:
    print(f"go2_driver_node vs fake Go2 on lo ({plural(trials, 'trial')}; Move re-send {params['command_rate_hz']:g} Hz configured)")
    print(f"  cmd_vel -> first Move     {_pct(m['first_move'])}")
    print(f"  Move interval (commanded) {_pct(m['move_interval'])}")
    print(f"  e-stop -> Damp received   {_pct(m['estop_damp'])}")
    print(f"  e-stop -> Damp sent, robot frozen (StandUp blocked in the SDK) {_pct(m['estop_damp_frozen'])}   (bound p95 <= 50 ms)")
    starved = m["starved"]
    print(
        f"  cmd_vel silence -> StopMove {_pct(m['watchdog_stopmove'])}   (deadman {params['cmd_timeout_s'] * 1e3:.0f} ms; "
        f"bound: two motion_node periods, {2e3 / MOTION_PARAMS.defaults()['control_rate_hz']:.0f} ms"
        + (f"; {plural(starved, 'trial')} dropped: command stream interrupted by load)" if starved else ")")
    )
    lost = m["lost"]
    print(
        f"  state lost -> StopMove    {'n/a' if lost is None else f'{lost * 1e3:.1f} ms'}   (state timeout {params['state_timeout_s'] * 1e3:.0f} ms)"
    )


def _write_json(path: str, m: dict[str, Any], params: dict[str, Any]) -> None:

    doc: dict[str, Any] = {k: _stats(m[k]) for k in ("first_move", "move_interval", "estop_damp", "estop_damp_frozen", "watchdog_stopmove")}
    doc["state_lost_stopmove_ms"] = None if m["lost"] is None else m["lost"] * 1e3
    doc["watchdog_ms"] = params["cmd_timeout_s"] * 1e3
    doc["watchdog_dropped"] = m["starved"]
    doc["state_timeout_ms"] = params["state_timeout_s"] * 1e3
    write_json(path, doc, nonfinite="null", indent=2)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 0 on success, 1 when a measurement is missing."""
    ap = argparse.ArgumentParser(prog="havln-robot bench robot", description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=number_in(1, integer=True), default=10, help="e-stop / watchdog trials (default 10)")
    ap.add_argument("--json", type=path_arg, default=None, help="also write the latencies (ms: p50, p95, max, n) to this JSON file")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    args = ap.parse_args(argv)
    if args.json:
        from havln_robot.paths import check_out_file

        check_out_file(args.json, "--json", overwrite=args.overwrite)

    from havln_robot.dds import configure_dds

    configure_dds()
    import rclpy

    from havln_robot.robot.fake_go2 import FakeGo2Process

    ros_domain = 40 + (os.getpid() % 50) * 2
    unitree_domain = ros_domain + 1
    fake = FakeGo2Process(unitree_domain)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=ros_domain, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    try:
        fake.wait_ready(20.0)
        rig = _Rig(fake, ctx, unitree_domain)
        time.sleep(1.0)  # driver sees the state
        m = _live_trials(rig, args.trials)
        m["estop_damp_frozen"] = _frozen_trials(rig, args.trials)
        m["lost"] = _state_lost(rig)
        _print(m, rig.driver.params, args.trials)
        if args.json:
            _write_json(args.json, m, rig.driver.params)
        rig.close()
        ok = bool(m["first_move"] and m["move_interval"] and m["estop_damp"] and m["estop_damp_frozen"])
        return 0 if ok and (m["watchdog_stopmove"] or m["starved"]) and m["lost"] is not None else 1
    except RuntimeError as exc:
        print(f"robot bench: {exc}", file=sys.stderr)
        return 1
    finally:
        fake.close()
        rclpy.try_shutdown(context=ctx)


if __name__ == "__main__":
    sys.exit(main())
