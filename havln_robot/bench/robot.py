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

from havln_robot import jsonio
from havln_robot.motion.params import MOTION_PARAMS
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


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 0 on success, 1 when a measurement is missing."""
    ap = argparse.ArgumentParser(prog="havln-robot bench robot", description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=number_in(1, integer=True), default=10, help="e-stop / watchdog trials (default 10)")
    ap.add_argument("--json", type=path_arg, default=None, help="also write the latencies (ms: p50, p95, max, n) to this JSON file")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    args = ap.parse_args(argv)
    if args.trials < 1:
        print(f"havln-robot bench robot: --trials {args.trials}: give at least 1", file=sys.stderr)
        return 2
    if args.json:
        from havln_robot.paths import check_out_file

        check_out_file(args.json, "--json", overwrite=args.overwrite)

    from havln_robot.dds import configure_dds

    configure_dds()
    import rclpy
    from geometry_msgs.msg import Twist
    from rclpy.executors import SingleThreadedExecutor
    from std_srvs.srv import Trigger

    from havln_robot.nodes.go2_driver_node import Go2DriverNode
    from havln_robot.robot.fake_go2 import FakeGo2Process

    ros_domain = 40 + (os.getpid() % 50) * 2
    unitree_domain = ros_domain + 1
    fake = FakeGo2Process(unitree_domain)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=ros_domain, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    try:
        fake.wait_ready(20.0)
        import tempfile

        latch = os.path.join(tempfile.mkdtemp(prefix="havln-bench-"), "estop.json")  # never the user's latch
        driver = Go2DriverNode(params={"network_interface": "lo", "dds_domain_id": unitree_domain, "latch_file": latch}, context=ctx)
        node = rclpy.create_node("robot_bench", context=ctx)
        pub = node.create_publisher(Twist, "cmd_vel", 10)
        estop = node.create_client(Trigger, "go2/estop")
        recover = node.create_client(Trigger, "go2/recover")
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(driver)
        ex.add_node(node)
        stop = threading.Event()

        def spin() -> None:
            while not stop.is_set():
                ex.spin_once(timeout_sec=0.01)

        th = threading.Thread(target=spin, daemon=True)
        th.start()

        gaps: list[float] = []  # this trial's largest gap between our own cmd_vel publishes, s

        def drive(vx: float, seconds: float, rate: float = 100.0) -> float:
            """Publish cmd_vel for `seconds`; returns the time of the last publish."""
            end, last = time.monotonic() + seconds, 0.0
            while time.monotonic() < end:
                t = Twist()
                t.linear.x = vx
                now = time.monotonic()
                if last:
                    gaps.append(now - last)
                last = now
                pub.publish(t)
                time.sleep(1.0 / rate)
            return last

        def call(client: Any) -> tuple[float, Any]:
            client.wait_for_service(timeout_sec=5.0)
            t0 = time.monotonic()
            fut = client.call_async(Trigger.Request())
            while not fut.done() and time.monotonic() - t0 < 5.0:
                time.sleep(0.001)
            return t0, fut.result()

        def first_after(api: str, t0: float, timeout: float = 2.0) -> float | None:
            ev = fake.wait(lambda e: e["event"] == "call" and e["api"] == api and e["t"] >= t0, timeout)
            return None if ev is None else ev["t"] - t0

        time.sleep(1.0)  # driver sees the state
        first_move, intervals, estops, watchdogs = [], [], [], []
        starved = 0  # watchdog samples dropped: the stream of commands was not continuous (a loaded machine)
        limit_s = driver.params["cmd_timeout_s"]
        for _ in range(args.trials):
            gaps.clear()
            t0 = time.monotonic()
            t = Twist()
            t.linear.x = 0.3
            pub.publish(t)
            d = first_after("Move", t0)
            if d is not None:
                first_move.append(d)
            drive(0.3, 0.6)
            moves = fake.calls("Move", since=t0)
            intervals += [b["t"] - a["t"] for a, b in zip(moves[1:], moves[2:], strict=False)]
            last = drive(0.3, 0.1)
            d = first_after("StopMove", last)
            # The figure is "last command -> StopMove". It only measures the watchdog when the
            # commands reached the driver as a continuous stream: a publish gap of ours, or a gap
            # in the driver's own Move re-sends (its executor starved), longer than the deadman
            # means the robot was stopped and restarted on the way -> drop.
            resend = [m["t"] for m in fake.calls("Move", since=t0) if m["t"] <= last]
            resend_gap = max((b - a for a, b in zip(resend, resend[1:], strict=False)), default=0.0)
            if max(gaps, default=0.0) > limit_s or resend_gap > max(limit_s, 2.0 / driver.params["command_rate_hz"]):
                starved += 1
            elif d is not None:
                watchdogs.append(d)
            drive(0.3, 0.3)
            t0, res = call(estop)
            d = first_after("Damp", t0)
            if d is not None and res is not None and res.success:
                estops.append(d)
            call(recover)
            time.sleep(0.2)
        # Frozen robot (SIGSTOP: no state, no replies): a recover's StandUp blocks in the SDK for
        # rpc_timeout_s; an e-stop issued meanwhile must not wait behind it. Measured in the driver:
        # service request received -> Damp handed to the SDK.
        # Each freeze is short (a DDS participant frozen past its lease, ~10 s, is dropped by its peers).
        frozen: list[float] = []
        for _ in range(args.trials):
            fake.freeze()
            try:
                call(recover)  # answers at once; StandUp goes out from the control thread and blocks
                time.sleep(0.05)
                n = len(driver.estop_latencies_ms)
                call(estop)
                if len(driver.estop_latencies_ms) > n:
                    frozen.append(driver.estop_latencies_ms[-1] / 1e3)
            finally:
                fake.thaw()
            time.sleep(0.3)
        call(recover)
        time.sleep(0.5)
        drive(0.3, 0.3)
        fake.command("pause")
        t_pause = time.monotonic()
        drive(0.3, 1.0)
        lost = first_after("StopMove", t_pause)
        fake.command("resume")

        print(
            f"go2_driver_node vs fake Go2 on lo ({plural(args.trials, 'trial')}; Move re-send {driver.params['command_rate_hz']:g} Hz configured)"
        )
        print(f"  cmd_vel -> first Move     {_pct(first_move)}")
        print(f"  Move interval (commanded) {_pct(intervals)}")
        print(f"  e-stop -> Damp received   {_pct(estops)}")
        print(f"  e-stop -> Damp sent, robot frozen (StandUp blocked in the SDK) {_pct(frozen)}   (bound p95 <= 50 ms)")
        print(
            f"  cmd_vel silence -> StopMove {_pct(watchdogs)}   (deadman {driver.params['cmd_timeout_s'] * 1e3:.0f} ms; "
            f"bound: two motion_node periods, {2e3 / MOTION_PARAMS.defaults()['control_rate_hz']:.0f} ms"
            + (f"; {plural(starved, 'trial')} dropped: command stream interrupted by load)" if starved else ")")
        )
        print(
            f"  state lost -> StopMove    {'n/a' if lost is None else f'{lost * 1e3:.1f} ms'}   (state timeout {driver.params['state_timeout_s'] * 1e3:.0f} ms)"
        )
        if args.json:
            doc = {
                k: _stats(v)
                for k, v in (
                    ("first_move", first_move),
                    ("move_interval", intervals),
                    ("estop_damp", estops),
                    ("estop_damp_frozen", frozen),
                    ("watchdog_stopmove", watchdogs),
                )
            }
            doc["state_lost_stopmove_ms"] = None if lost is None else lost * 1e3
            doc["watchdog_ms"] = driver.params["cmd_timeout_s"] * 1e3
            doc["watchdog_dropped"] = starved
            doc["state_timeout_ms"] = driver.params["state_timeout_s"] * 1e3
            from havln_robot.paths import atomic_output

            with atomic_output(args.json) as out_tmp:  # the old file or the new one, never half
                jsonio.write(out_tmp, doc, nonfinite="null", indent=2)
        stop.set()
        th.join(timeout=2)
        driver.safe_stop()
        ex.shutdown()
        driver.destroy_node()
        node.destroy_node()
        ok = bool(first_move and intervals and estops and frozen and (watchdogs or starved) and lost is not None)
        return 0 if ok else 1
    except RuntimeError as exc:
        print(f"robot bench: {exc}", file=sys.stderr)
        return 1
    finally:
        fake.close()
        rclpy.try_shutdown(context=ctx)


if __name__ == "__main__":
    sys.exit(main())
