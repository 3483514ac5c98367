"""``havln-robot bench panorama``: panorama wall time and view accuracy, per mode, through the real nodes.

sim_node (built-in scene unless ``--episodes``, noise as in ``config/sim.yaml``, camera on at its
30 Hz) + motion_node + agent_node (``config/sim.yaml``) run in this process on their own executor
threads over loopback DDS; the agent's own panorama code (``EpisodeRunner._sweep_panorama`` /
``_panorama``) takes ``--panoramas`` panoramas in place, one after the other, with a stub policy of
12 views. Against the simulator's TRUE yaw (recorded every simulation tick and interpolated at each
chosen frame's stamp) it measures each view's heading error; the closure error is the IMU's
(motion_node's yaw of the sweep, or the summed TURN yaws) and, on the comment line, the true one.

Output: one line per mode, exactly::

    panorama <mode>: views 12, wall <s> s, physical minimum <s> s, ratio <x>, max view heading error <deg> deg, closure error <deg> deg

``wall`` is the mean panorama time (from the first command to the robot back at the start heading
with every view in), ``physical minimum`` one 360° rotation at the sweep rate that the blur and
frame-spacing budgets allow (:func:`havln_robot.motion.executor.sweep_rate`; printed on the ``#``
line), ``ratio`` = wall / minimum, errors are the maxima over all panoramas (absolute, deg).
"""

from __future__ import annotations

import argparse
import bisect
import math
import sys
import time
from typing import Any

import numpy as np

from havln_robot.paths import config_dir
from havln_robot.text import number_in, path_arg

MODES = ("sweep", "discrete")


class _StubPolicy:
    """12 views, answers STOP at once (the bench measures the panorama, not the policy)."""

    name = "bench-stub"
    views = 12

    def reset(self, instruction: str) -> None:
        pass

    def act(self, obs: Any) -> str:
        return "STOP"


def _true_yaw_at(hist: list[tuple[float, float]], t: float) -> float:
    """Unwrapped true yaw (rad) at sim time ``t`` from (t, yaw) tick records."""
    ts = [h[0] for h in hist]
    k = min(max(1, bisect.bisect_left(ts, t)), len(ts) - 1)
    (t0, y0), (t1, y1) = hist[k - 1], hist[k]
    w = 0.0 if t1 <= t0 else min(1.0, max(0.0, (t - t0) / (t1 - t0)))
    return y0 + w * (y1 - y0)


def _record_true_yaw(sim: Any) -> list[tuple[float, float]]:
    """(sim time s, TRUE yaw rad, unwrapped) at every simulation tick of ``sim`` from now on."""
    hist: list[tuple[float, float]] = []
    orig_tick = sim._tick

    def tick() -> None:  # record the TRUE yaw (unwrapped) at every simulation tick, on sim time
        orig_tick()
        with sim._lock:
            yaw = sim.session.world.pose[3]
            if hist:
                yaw = hist[-1][1] + math.remainder(yaw - hist[-1][1], 2 * math.pi)
            hist.append((sim.sim_time, yaw))

    sim._tick = tick
    return hist


def _record_grabs(agent: Any) -> list[float]:
    """The stamp (s) of every view ``agent`` grabs from now on."""
    grabs: list[float] = []
    orig_grab = agent.grab

    def grab():
        v = orig_grab()
        grabs.append(v.stamp)
        return v

    agent.grab = grab
    return grabs


def _one_panorama(runner: Any, sim: Any, mode: str, hist: list[tuple[float, float]], grabs: list[float]) -> tuple:
    """One panorama of ``mode`` from standstill: (wall s, each view's true heading error deg, the capture,
    true closure error deg, depth frames sim_node published meanwhile)."""
    from havln_robot.agent.core import EpisodeResult

    time.sleep(0.4)  # stand still (motion_node learns the gyro bias; frames after settling)
    with sim._lock:
        t_sim0 = sim.sim_time
    y0 = _true_yaw_at(hist, t_sim0)
    grabs.clear()
    pub0 = sim.counts.get(sim.depth_pub.topic_name, 0)
    result = EpisodeResult(reason="stop", steps=0, actions=[])
    t0 = time.monotonic()
    if mode == "sweep":
        fut, cap = runner._sweep_panorama(0, result, lambda *a, **kw: None)
    else:
        fut, cap = runner._panorama(0, result, lambda *a, **kw: None)
    wall = time.monotonic() - t0
    published = sim.counts.get(sim.depth_pub.topic_name, 0) - pub0
    fut.result()
    time.sleep(0.3)
    with sim._lock:
        t_sim1 = sim.sim_time
    closure_true = math.degrees(_true_yaw_at(hist, t_sim1) - y0)
    closure_true = (closure_true + 180.0) % 360.0 - 180.0
    errs = []
    grab_iter = iter(grabs)
    swept = cap.summary().get("mode") == "sweep"
    for v in cap.captured:
        # sweep frames carry their stamp; grabbed views (discrete, retakes) were logged by grab()
        stamp = v.t if swept and v.source == "imu" else next(grab_iter, math.nan)
        if not math.isfinite(stamp):
            errs.append(math.nan)
            continue
        h = math.degrees(_true_yaw_at(hist, stamp) - y0)
        errs.append((h - v.target_deg + 180.0) % 360.0 - 180.0)
    return wall, errs, cap, closure_true, published


def _mode_panoramas(runner: Any, sim: Any, mode: str, panoramas: int, hist: list, grabs: list, log: Any) -> dict[str, Any]:
    """``panoramas`` panoramas of ``mode``: the lists of :func:`run_panoramas`' record, one entry each."""
    rec: dict[str, Any] = {k: [] for k in ("wall_s", "view_err_deg", "closure_imu_deg", "closure_true_deg", "retaken", "summaries")}
    for k in range(panoramas):
        wall, errs, cap, closure_true, published = _one_panorama(runner, sim, mode, hist, grabs)
        s = cap.summary()
        rec["wall_s"].append(wall)
        rec["view_err_deg"].append(errs)
        rec["closure_imu_deg"].append(cap.final_error_deg)
        rec["closure_true_deg"].append(closure_true)
        rec["retaken"].append(s.get("retaken", 0))
        rec["summaries"].append(s)
        if log is not None:
            log(
                f"  {mode} #{k + 1}: wall {wall:.2f} s, views {len(cap.captured)}, max |err| "
                f"{np.nanmax(np.abs(errs)) if errs else math.nan:.2f} deg, closure imu {cap.final_error_deg:+.2f} "
                f"true {closure_true:+.2f} deg, retaken {s.get('retaken', 0)}, sweeps {s.get('sweeps', 0)}, "
                f"frames {s.get('frames_offered', '-')} of {published} published (rejected {s.get('frames_rejected', '-')})"
            )
    return rec


def run_panoramas(
    modes: tuple[str, ...] = MODES,
    panoramas: int = 20,
    context: Any = None,
    profile: str | None = None,
    sim_overrides: dict[str, Any] | None = None,
    log: Any = None,
) -> dict[str, dict[str, Any]]:
    """Take ``panoramas`` panoramas per mode through sim_node + motion_node + agent_node.

    Args:
        modes: ``sweep`` and/or ``discrete``.
        panoramas: panoramas per mode.
        context: an initialised rclpy context (default: a new one, shut down at the end).
        profile: the deployment profile the three nodes' parameters come from (default the shipped
            ``config/sim.yaml``, found from any working directory).
        sim_overrides: sim_node parameters to override (e.g. ``{"scene_source": "builtin"}``).
        log: ``log(str)`` progress callback.

    Returns:
        mode → {"wall_s": [..], "view_err_deg": [[..] per panorama], "closure_imu_deg": [..],
        "closure_true_deg": [..], "retaken": [..], "summaries": [..], "min_s": float, "rate_deg_s": float}.
    """
    import rclpy

    from havln_robot.bringup import NodeThreads
    from havln_robot.config import load_profile
    from havln_robot.motion.executor import MotionConfig, min_duration
    from havln_robot.nodes.agent_node import AgentNode
    from havln_robot.nodes.motion_node import MotionNode
    from havln_robot.nodes.sim_node import SimNode

    own = context is None
    if own:
        context = rclpy.Context()
        rclpy.init(context=context, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    prof = load_profile(profile if profile is not None else config_dir() / "sim.yaml")
    # real time, as on the Go2: the sweep's wall time and the camera rate are what is measured
    sim_p = {
        **prof.nodes["sim_node"],
        "scene_source": "builtin",
        "populate_humans": 0,
        "lockstep": False,
        **(sim_overrides or {}),
    }
    sim = SimNode(params=sim_p, context=context)
    mot = MotionNode(params=dict(prof.nodes["motion_node"]), context=context)
    agent = AgentNode(params=dict(prof.nodes["agent_node"]), policy=_StubPolicy(), context=context)
    hist, grabs = _record_true_yaw(sim), _record_grabs(agent)
    threads = NodeThreads(context, log=lambda s: None)
    for n in (sim, mot, agent):
        threads.add(n.get_name(), n)
    cfg = MotionConfig.from_params(mot.params)
    out: dict[str, dict[str, Any]] = {}
    try:
        end = time.monotonic() + 60.0
        while time.monotonic() < end and not (agent._imu and agent._depth and mot.core.imu_t is not None and len(hist) > 10):
            time.sleep(0.05)
        if not agent._depth:
            raise RuntimeError(f"no camera frames from sim_node ({sim.camera_error or 'camera thread silent'})")
        runner = agent.runner
        for mode in modes:
            runner.config.panorama_mode = mode
            rec = _mode_panoramas(runner, sim, mode, panoramas, hist, grabs, log)
            rec["rate_deg_s"] = math.degrees(cfg.sweep_w)
            rec["min_s"] = min_duration(2 * math.pi, cfg.sweep_w, cfg.a_ang)
            out[mode] = rec
    finally:
        mot.safe_stop()
        sim.safe_stop()
        agent.safe_stop()
        threads.stop()
        for n in (agent, mot, sim):
            n.destroy_node()
        if own:
            rclpy.try_shutdown(context=context)
    return out


def line(mode: str, rec: dict[str, Any]) -> str:
    """The bench's one line for ``mode``."""
    wall = float(np.mean(rec["wall_s"]))
    errs = [abs(e) for p in rec["view_err_deg"] for e in p]
    views = min(len(p) for p in rec["view_err_deg"])
    return (
        f"panorama {mode}: views {views}, wall {wall:.2f} s, physical minimum {rec['min_s']:.2f} s, ratio {wall / rec['min_s']:.2f}, "
        f"max view heading error {max(errs):.2f} deg, closure error {max(abs(c) for c in rec['closure_imu_deg']):.2f} deg"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="havln-robot bench panorama",
        description="Panorama wall time and view accuracy per mode (sweep, discrete) through sim_node + motion_node + agent_node.",
    )
    ap.add_argument("--panoramas", type=number_in(1, integer=True), default=20, help="panoramas per mode (default 20)")
    ap.add_argument("--mode", choices=(*MODES, "both"), default="both", help="which mode(s) to measure")
    ap.add_argument(
        "--profile", type=path_arg, default=None, help="deployment profile of the three nodes (default the shipped config/sim.yaml)"
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per panorama on stderr")
    args = ap.parse_args(argv)
    if args.panoramas < 1:
        ap.error("--panoramas must be >= 1")
    modes = MODES if args.mode == "both" else (args.mode,)
    log = (lambda s: print(s, file=sys.stderr, flush=True)) if args.verbose else None
    res = run_panoramas(modes, args.panoramas, profile=args.profile, log=log)
    for mode in modes:
        print(line(mode, res[mode]), flush=True)
    r = res[modes[0]]
    comments = [f"# sweep rate {r['rate_deg_s']:.1f} deg/s (profile, blur and frame-spacing budgets); {args.panoramas} panoramas per mode"]
    for mode in modes:
        rec = res[mode]
        ct = max(abs(c) for c in rec["closure_true_deg"])
        comments.append(f"# {mode}: closure error by ground truth max {ct:.2f} deg; views retaken {sum(rec['retaken'])}")
    print("\n".join(comments))
    return 0
