"""``havln-robot bench motion``: accuracy, duration and e-stop latency of the motion executor.

Runs the real :class:`~havln_robot.motion.executor.Executor` in closed loop with the embedded
simulator's noisy Go2 base (:class:`havln_robot.sim.robot.NoisyBase`: actuation latency,
acceleration limits, odometry scale error + random-walk drift, gyro noise + bias) on a
:class:`havln_robot.sim.world.World` of the built-in scene -- without ROS, for speed. Errors are
measured against the simulator's TRUE pose. Optionally (``--ros-estop N``) the e-stop latency is
also measured through the real ``motion_node`` over loopback DDS.

Prints, per action type: outcome counts, p50/p95 position and yaw error, mean duration and
duration / physical minimum at the configured limits; then e-stop latency figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from havln_robot import actions as A
from havln_robot import jsonio
from havln_robot.geometry import wrap_angle
from havln_robot.motion.checks import GyroYaw
from havln_robot.motion.executor import Executor, MotionConfig
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.motion.safety import Obstacles
from havln_robot.params import ConfigError
from havln_robot.text import number_in, path_arg

TARGETS = {"forward_p95_m": 0.02, "turn_p95_deg": 1.0, "duration_ratio": 1.3, "estop_ms": 50.0}


def _profile_params(path: str | None) -> dict[str, Any]:
    """motion_node parameters from a profile (``--config``), else the defaults."""
    if not path:
        return MOTION_PARAMS.defaults()
    from havln_robot.config import load_profile

    prof = load_profile(Path(path))
    if "motion_node" not in prof.nodes:
        raise ConfigError(f"{path}: no motion_node section (e.g. '/**/motion_node:')")
    return prof.nodes["motion_node"]


class _Rig:
    """World of the built-in scene without people + noisy base, reset per trial."""

    def __init__(
        self,
        noise: bool,
        latency_s: float,
        physics_dt: float,
        seed: int,
        odom_hz: float = 50.0,
        imu_hz: float = 100.0,
        noise_scale: float = 1.0,
        yaw_source: str = "orientation",
    ) -> None:
        self.yaw_source = yaw_source
        from havln_robot.episodes import builtin_episode
        from havln_robot.sim.humans import Crowd
        from havln_robot.sim.robot import NoiseModel, NoisyBase
        from havln_robot.sim.scene import Scene
        from havln_robot.sim.world import World

        base = NoiseModel()
        scaled = {k: getattr(base, k) * noise_scale for k in base.__dataclass_fields__ if k != "latency_s"}
        nm = NoiseModel(latency_s=latency_s, **scaled) if noise else NoiseModel.none()
        self.world = World(Scene.builtin(), builtin_episode(), crowd=Crowd([]), seed=seed)
        self.base = NoisyBase(self.world, noise=nm, seed=seed)
        self.dt = physics_dt
        self.odom_period, self.imu_period = 1.0 / odom_hz, 1.0 / imu_hz
        self.reset(seed)

    def reset(self, seed: int) -> None:
        self.world.reset()
        self.base.reset(seed)
        self.gyro = GyroYaw(2.0)
        self._odom = (0.0, 0.0, 0.0)
        self.odom_t = self.imu_t = 0.0
        self._next_odom = self._next_imu = 0.0

    def step(self, stationary: bool = False) -> None:
        """One physics step; odometry and IMU are sampled at their own rates (sample and hold, stamped)."""
        self.base.step(self.dt)
        t = self.world.t
        if t + 1e-9 >= self._next_imu:
            self._next_imu += self.imu_period
            if self.yaw_source == "orientation":  # as motion_node with imu_yaw_source: orientation
                self.gyro.add_orientation(t, float(self.base.imu.yaw), stationary=stationary)
            else:
                self.gyro.add(t, float(self.base.imu.gyro[2]), stationary=stationary)
            self.imu_t = t
        if t + 1e-9 >= self._next_odom:
            self._next_odom += self.odom_period
            o = self.base.odom
            self._odom, self.odom_t = (o.x, o.y, o.yaw), t

    def odom(self) -> tuple[float, float, float]:
        return self._odom


def _run_action(
    rig: _Rig, ex: Executor, action: str, rate_hz: float, rng: np.random.Generator, stop_after: float | None = None
) -> dict[str, Any]:
    """One trial: idle (bias learning, random tick phase), execute, settle; errors vs the TRUE pose."""
    free = Obstacles(points=np.zeros((0, 2), np.float32), people=[])
    for _ in range(int(rng.uniform(0.6, 1.0) / rig.dt)):
        rig.step(stationary=True)
        ex.update(rig.world.t, rig.odom(), rig.gyro.yaw)
    x0, y0, _, th0 = rig.world.pose
    t0 = rig.world.t
    tick = ex.start(action, t0, rig.odom(), rig.gyro.yaw, free)
    rig.base.command(*tick.cmd)
    results = list(tick.results)
    period = 1.0 / rate_hz
    next_tick = t0 + period
    stop_info: dict[str, Any] = {}
    while not results and rig.world.t - t0 < 30.0:
        rig.step()
        if stop_after is not None and not stop_info and rig.world.t - t0 >= stop_after:
            w0 = time.perf_counter()
            tick = ex.stop(rig.world.t, "e-stop", rig.odom(), rig.gyro.yaw)
            stop_info["compute_s"] = time.perf_counter() - w0
            rig.base.command(*tick.cmd)
            stop_info.update(t=rig.world.t, zero_cmd=tick.cmd == (0.0, 0.0), v=rig.base.v, pose=rig.world.pose)
            results += tick.results
            break
        if rig.world.t + 1e-9 >= next_tick:
            next_tick += period
            tick = ex.update(rig.world.t, rig.odom(), rig.gyro.yaw, free, odom_t=rig.odom_t, imu_t=rig.imu_t)
            rig.base.command(*tick.cmd)
            results += tick.results
    if stop_info:  # time until the TRUE body is at rest
        while (abs(rig.base.v) > 1e-4 or abs(rig.base.w) > 1e-4 or rig.base.target != (0.0, 0.0, 0.0)) and rig.world.t - stop_info[
            "t"
        ] < 2.0:
            rig.step()
        stop_info["standstill_s"] = rig.world.t - stop_info["t"]
        stop_info["coast_m"] = math.dist(rig.world.pose[:2], stop_info["pose"][:2])
        return {"action": action, "stop": stop_info, "results": results}
    for _ in range(int(0.3 / rig.dt)):
        rig.step()
    x1, y1, _, th1 = rig.world.pose
    r = results[0]
    if action == A.MOVE_FORWARD:
        tx, ty = x0 + A.FORWARD_STEP_M * math.cos(th0), y0 + A.FORWARD_STEP_M * math.sin(th0)
        pos_err, yaw_err = math.hypot(x1 - tx, y1 - ty), wrap_angle(th1 - th0)
    elif action in (A.TURN_LEFT, A.TURN_RIGHT):
        target = A.TURN_ANGLE_RAD if action == A.TURN_LEFT else -A.TURN_ANGLE_RAD
        pos_err, yaw_err = math.hypot(x1 - x0, y1 - y0), wrap_angle(th1 - th0 - target)
    else:
        pos_err, yaw_err = math.hypot(x1 - x0, y1 - y0), wrap_angle(th1 - th0)
    return {
        "action": action,
        "outcome": r.outcome,
        "pos_err": pos_err,
        "yaw_err_deg": math.degrees(abs(yaw_err)),
        "duration": r.duration_s,
        "result": r,
    }


def _ros_estop(params: dict[str, Any], n: int) -> list[float]:
    """E-stop latency through the real motion_node: STOP published on havln/action while a
    MOVE_FORWARD runs -> first zero Twist received on cmd_vel (wall clock, loopback DDS)."""
    import rclpy
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import Imu
    from std_msgs.msg import String

    from havln_robot.dds import configure_dds
    from havln_robot.nodes.motion_node import MotionNode

    configure_dds()
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=100 + os.getpid() % 100, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    lat: list[float] = []
    try:
        node = MotionNode(params={**params, "require_depth": False, "use_sim_time": False}, context=ctx)
        probe = rclpy.create_node("motion_bench_probe", context=ctx)
        state = {"x": 0.0, "v": 0.0, "stop_t": None, "zero_t": None, "moving": False}

        def on_cmd(msg: Twist) -> None:
            now = time.perf_counter()
            state["v"] = msg.linear.x
            if msg.linear.x != 0.0:
                state["moving"] = True
            if state["stop_t"] is not None and state["zero_t"] is None and msg.linear.x == 0.0 and msg.angular.z == 0.0:
                state["zero_t"] = now

        probe.create_subscription(Twist, params["cmd_vel_topic"], on_cmd, 50)
        odom_pub = probe.create_publisher(Odometry, params["odom_topic"], 10)
        imu_pub = probe.create_publisher(Imu, params["imu_topic"], 50)
        act_pub = probe.create_publisher(String, params["action_topic"], 10)

        def sensors() -> None:
            state["x"] += state["v"] * 0.01
            od = Odometry()
            od.pose.pose.position.x = state["x"]
            od.pose.pose.orientation.w = 1.0
            odom_pub.publish(od)
            imu_pub.publish(Imu())

        probe.create_timer(0.01, sensors)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(node)
        ex.add_node(probe)

        def spin(cond, timeout: float) -> bool:
            end = time.perf_counter() + timeout
            while time.perf_counter() < end:
                ex.spin_once(timeout_sec=0.002)
                if cond():
                    return True
            return False

        spin(lambda: probe.count_subscribers(params["action_topic"]) > 0 and probe.count_publishers(params["cmd_vel_topic"]) > 0, 3.0)
        spin(lambda: False, 0.5)
        rng = np.random.default_rng(0)
        for _ in range(n):
            state.update(stop_t=None, zero_t=None, moving=False)
            act_pub.publish(String(data=A.MOVE_FORWARD))
            if not spin(lambda: state["moving"], 3.0):
                continue
            spin(lambda: False, float(rng.uniform(0.1, 0.4)))
            state["stop_t"] = time.perf_counter()
            act_pub.publish(String(data=A.STOP))
            if spin(lambda: state["zero_t"] is not None, 2.0):
                lat.append(state["zero_t"] - state["stop_t"])
            spin(lambda: False, 0.2)
        ex.shutdown()
        node.destroy_node()
        probe.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
    return lat


def _pct(a: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(a), q)) if a else float("nan")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``havln-robot bench motion``."""
    ap = argparse.ArgumentParser(prog="havln-robot bench motion", description=__doc__.split("\n\n")[0].replace("``", ""))
    ap.add_argument("-n", "--n", type=number_in(1, integer=True), default=200, help="actions of each type (default 200)")
    ap.add_argument("--seed", type=number_in(0, integer=True), default=0, help="first noise seed (trial i uses seed + i)")
    ap.add_argument(
        "--config", type=path_arg, default=None, help="profile whose motion_node section sets the limits (default: parameter defaults)"
    )
    ap.add_argument(
        "--latency", type=number_in(0, 5, unit="s"), default=0.05, help="actuation latency of the simulated base, s (default 0.05)"
    )
    ap.add_argument("--no-noise", action="store_true", help="perfect base (no latency, drift, gyro noise or bias)")
    ap.add_argument(
        "--noise-scale",
        type=number_in(0, 100),
        default=1.0,
        help="multiply every noise std of the sim's NoiseModel (default 1 = sim defaults)",
    )
    ap.add_argument("--physics-dt", type=number_in(0, 0.1, unit="s", above=True), default=0.005, help="simulator step, s (default 0.005)")
    ap.add_argument(
        "--odom-hz", type=number_in(0, 1000, unit="Hz", above=True), default=50.0, help="odometry rate, Hz (default 50, as sim_node)"
    )
    ap.add_argument(
        "--imu-hz", type=number_in(0, 2000, unit="Hz", above=True), default=100.0, help="IMU rate, Hz (default 100, as sim_node)"
    )
    ap.add_argument("--estop", type=number_in(0, integer=True), default=100, help="e-stop trials in the simulator (default 100)")
    ap.add_argument(
        "--ros-estop", type=number_in(0, integer=True), default=0, help="also measure e-stop latency through motion_node over ROS, N trials"
    )
    ap.add_argument("--json", type=path_arg, default=None, help="write all figures to this JSON file")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    return ap


def _action_rows(rig: _Rig, cfg: MotionConfig, rate: float, rng: np.random.Generator, n: int, seed: int) -> dict[str, dict[str, Any]]:
    """Per action type, ``n`` trials on the simulated base: outcomes, position / yaw error percentiles, durations."""
    rows: dict[str, dict[str, Any]] = {}
    for action in (A.MOVE_FORWARD, A.TURN_LEFT, A.TURN_RIGHT, A.LOOK_UP, A.LOOK_DOWN):
        trials = []
        for i in range(n):
            rig.reset(seed + i)
            ex = Executor(cfg)
            if action == A.LOOK_DOWN:
                ex.pitch = 0.0
            trials.append(_run_action(rig, ex, action, rate, rng))
        ok = [t for t in trials if t["outcome"] == "ok"]
        outcomes: dict[str, int] = {}
        for t in trials:
            outcomes[t["outcome"]] = outcomes.get(t["outcome"], 0) + 1
        tmin = cfg.min_duration(action)
        dur = [t["duration"] for t in ok]
        rows[action] = {
            "outcomes": outcomes,
            "pos_p50_m": _pct([t["pos_err"] for t in ok], 50),
            "pos_p95_m": _pct([t["pos_err"] for t in ok], 95),
            "yaw_p50_deg": _pct([t["yaw_err_deg"] for t in ok], 50),
            "yaw_p95_deg": _pct([t["yaw_err_deg"] for t in ok], 95),
            "duration_mean_s": float(np.mean(dur)) if dur else float("nan"),
            "duration_p95_s": _pct(dur, 95),
            "min_duration_s": tmin,
            "ratio_mean": float(np.mean(dur)) / tmin if dur and tmin > 0 else float("nan"),
            "ratio_p95": _pct(dur, 95) / tmin if dur and tmin > 0 else float("nan"),
        }
    return rows


def _estop_figures(
    rig: _Rig, cfg: MotionConfig, rate: float, rng: np.random.Generator, args: argparse.Namespace, params: dict
) -> dict[str, Any]:
    """STOP at a random moment of a MOVE_FORWARD (between control ticks), in-process and (``--ros-estop``) over ROS."""
    stops = []
    for i in range(args.estop):
        rig.reset(args.seed + 10_000 + i)
        ex = Executor(cfg)
        stops.append(_run_action(rig, ex, A.MOVE_FORWARD, rate, rng, stop_after=float(rng.uniform(0.2, 1.0)))["stop"])
    estop = {
        "trials": len(stops),
        "zero_command_all": all(s["zero_cmd"] for s in stops),
        "command_latency_p50_ms": _pct([s["compute_s"] * 1000 for s in stops], 50),
        "command_latency_max_ms": max((s["compute_s"] * 1000 for s in stops), default=float("nan")),
        "standstill_p95_s": _pct([s["standstill_s"] for s in stops], 95),
        "coast_p95_m": _pct([s["coast_m"] for s in stops], 95),
    }
    if args.ros_estop > 0:
        lat = _ros_estop(params, args.ros_estop)
        estop.update(
            ros_trials=len(lat),
            ros_latency_p50_ms=_pct([v * 1000 for v in lat], 50),
            ros_latency_p95_ms=_pct([v * 1000 for v in lat], 95),
            ros_latency_max_ms=max(lat, default=float("nan")) * 1000,
        )
    return estop


def _print_rows(rows: dict[str, dict[str, Any]], estop: dict[str, Any]) -> None:
    print(
        f"{'action':<13}{'outcomes':<22}{'pos p50/p95 m':>16}{'yaw p50/p95 deg':>18}{'mean dur s':>12}{'min s':>8}{'dur/min mean/p95':>19}"
    )
    for action, r in rows.items():
        oc = ",".join(f"{k}:{v}" for k, v in sorted(r["outcomes"].items()))
        print(
            f"{action:<13}{oc:<22}{r['pos_p50_m']:>8.4f}/{r['pos_p95_m']:<7.4f}{r['yaw_p50_deg']:>9.3f}/{r['yaw_p95_deg']:<8.3f}"
            f"{r['duration_mean_s']:>12.3f}{r['min_duration_s']:>8.3f}{r['ratio_mean']:>10.2f}/{r['ratio_p95']:<8.2f}"
        )
    print(
        f"e-stop ({estop['trials']} trials, STOP at a random moment of MOVE_FORWARD): STOP -> zero command "
        f"p50 {estop['command_latency_p50_ms']:.3f} ms, max {estop['command_latency_max_ms']:.3f} ms (in-process; the node publishes it from the "
        f"action callback); TRUE body at rest within p95 {estop['standstill_p95_s']:.3f} s, coasting p95 {estop['coast_p95_m'] * 100:.1f} cm"
    )
    if "ros_trials" in estop:
        print(
            f"e-stop over ROS ({estop['ros_trials']} trials, havln/action STOP -> zero Twist on cmd_vel through motion_node): "
            f"p50 {estop['ros_latency_p50_ms']:.1f} ms, p95 {estop['ros_latency_p95_ms']:.1f} ms, max {estop['ros_latency_max_ms']:.1f} ms"
        )


def _checks(rows: dict[str, dict[str, Any]], estop: dict[str, Any]) -> dict[str, bool]:
    """Each target of :data:`TARGETS` → met."""
    fwd, tl, tr = rows[A.MOVE_FORWARD], rows[A.TURN_LEFT], rows[A.TURN_RIGHT]
    checks = {
        f"MOVE_FORWARD p95 position error <= {TARGETS['forward_p95_m']} m": fwd["pos_p95_m"] <= TARGETS["forward_p95_m"],
        f"turn p95 yaw error <= {TARGETS['turn_p95_deg']} deg": max(tl["yaw_p95_deg"], tr["yaw_p95_deg"]) <= TARGETS["turn_p95_deg"],
        f"mean duration <= {TARGETS['duration_ratio']} x physical minimum": max(fwd["ratio_mean"], tl["ratio_mean"], tr["ratio_mean"])
        <= TARGETS["duration_ratio"],
        f"e-stop to zero command <= {TARGETS['estop_ms']:g} ms": estop["command_latency_max_ms"] <= TARGETS["estop_ms"]
        and estop.get("ros_latency_p95_ms", 0.0) <= TARGETS["estop_ms"],
    }
    return checks


def main(argv: list[str]) -> int:
    """Run the benchmark; returns 0 (figures printed), 1 when a target is missed with ``--check``, 2 on bad input."""
    args = build_parser().parse_args(argv)
    if args.json:
        from havln_robot.paths import check_out_file

        check_out_file(args.json, "--json", inputs=tuple(p for p in (args.config,) if p), overwrite=args.overwrite)
    try:
        params = _profile_params(args.config)
    except ConfigError as exc:
        print(f"bench motion: {exc}", file=sys.stderr)
        return 2
    # latency_s is a calibration of the robot ("measure on your robot"): calibrate it to the simulated base
    plant_latency = 0.0 if args.no_noise else args.latency
    cfg = dataclasses.replace(MotionConfig.from_params(params), latency_s=plant_latency)
    rate = float(params["control_rate_hz"])
    rig = _Rig(
        not args.no_noise, args.latency, args.physics_dt, args.seed, args.odom_hz, args.imu_hz, args.noise_scale, params["imu_yaw_source"]
    )
    rng = np.random.default_rng(args.seed)
    t_wall = time.perf_counter()
    print(
        f"motion bench: {args.n} actions/type, control {rate:g} Hz, limits v {cfg.v_max:g} m/s a {cfg.a_lin:g} m/s^2, "
        f"w {cfg.w_max:g} rad/s alpha {cfg.a_ang:g} rad/s^2, latency_s {cfg.latency_s:g}, yaw from imu {params['imu_yaw_source']}; odom {args.odom_hz:g} Hz, imu {args.imu_hz:g} Hz; "
        f"sim noise {'off' if args.no_noise else f'on (latency {args.latency * 1000:.0f} ms, odometry drift, gyro noise + bias x{args.noise_scale:g})'}"
    )
    rows = _action_rows(rig, cfg, rate, rng, args.n, args.seed)
    estop = _estop_figures(rig, cfg, rate, rng, args, params)
    wall = time.perf_counter() - t_wall
    _print_rows(rows, estop)
    checks = _checks(rows, estop)
    for name, passed in checks.items():
        print(f"  [{'PASS' if passed else 'MISS'}] {name}")
    print(f"({wall:.1f} s wall)")
    if args.json:
        from havln_robot.paths import atomic_output

        with atomic_output(args.json) as out_tmp:  # the old file or the new one, never half
            out_tmp.write_text(
                jsonio.dumps({"actions": rows, "estop": estop, "checks": checks, "wall_s": wall}, nonfinite="null", indent=2, default=str),
                encoding="utf-8",
            )
    return 1 if args.check and not all(checks.values()) else 0
