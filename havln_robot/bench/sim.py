"""``havln-robot bench sim``: renderer frame rates, batch-mode steps/s and sim_node topic rates, printed.

Measures, on this machine:

1. **render**: RGB + depth frames/s of :class:`havln_robot.sim.render.Renderer` at 640x480
   (D435i colour HFOV 69.4 deg, what sim_node publishes) and at the model resolutions 224x224
   and 256x256 (90 deg HFOV, the HA-VLN-CE sensors), from poses along real episode paths;
2. **steps**: discrete actions/s of :meth:`havln_robot.sim.world.World.step` (batch mode, no
   rendering) with a random policy;
3. **expert** (``--expert N``, default 20): the expert in batch on the first N episodes, actions/s
   and where the time goes (the executor's control ticks, the base and world, the depth frames
   with the people tracker), and the bound the executor's ticks alone put on a batch world that
   steps them one by one (:func:`bench_expert`);
4. **sim_node** (``--node-seconds``, default 10): sim_node in this process, driven by
   ``cmd_vel``, with a subscriber counting what arrives: camera, odom, imu, clock, ground truth
   rates (Hz of wall time) and the real-time factor.

Episodes come from ``--episodes`` (default ``$DATA/ha_r2r_de/HA_val_seen.json``) or, when the
HA-VLN data is absent, the builtin scene.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from havln_robot import jsonio
from havln_robot.paths import safe_child, write_json
from havln_robot.text import number_in, path_arg

RESOLUTIONS = ((640, 480, 69.4), (224, 224, 90.0), (256, 256, 90.0))


def _episodes(path: str, conn: str, n: int, scenes_dir: str | None = None) -> list[tuple[Any, Any]]:
    """[(scene, episode)] for up to ``n`` episodes (distinct scans), or the builtin one; with
    ``scenes_dir``, the scans' meshes (:func:`havln_robot.sim.mesh_scene.load_scene`)."""
    from havln_robot.episodes import builtin_episode, load_episodes
    from havln_robot.paths import resolve
    from havln_robot.sim.mesh_scene import load_scene
    from havln_robot.sim.scene import Scene

    ep_file, conn_dir = resolve(path), resolve(conn)
    if not ep_file.is_file() or not conn_dir.is_dir():
        print(f"bench sim: {ep_file if not ep_file.is_file() else conn_dir} not found; using the builtin scene", file=sys.stderr)
        return [(Scene.builtin(), builtin_episode())]
    out, scans = [], set()
    for ep in load_episodes(ep_file, conn_dir, limit=max(4 * n, 20)):
        if ep.scan in scans:
            continue
        scans.add(ep.scan)
        out.append((load_scene(ep.scan, conn_dir, scenes_dir), ep))
        if len(out) >= n:
            break
    return out


def _first_episodes(path: str, conn: str, n: int) -> list[Any]:
    """The first ``n`` episodes of ``path`` (all scans), or the builtin one without the data."""
    from havln_robot.episodes import builtin_episode, load_episodes
    from havln_robot.paths import resolve

    ep_file, conn_dir = resolve(path), resolve(conn)
    if not ep_file.is_file() or not conn_dir.is_dir():
        return [builtin_episode()]
    return list(load_episodes(ep_file, conn_dir, limit=n))


def _scene_loader(args: argparse.Namespace) -> Any:
    """scan id -> scene (procedural, the builtin one, or ``--scenes`` meshes), cached."""
    from havln_robot.paths import resolve
    from havln_robot.sim.mesh_scene import load_scene

    cache: dict[str, Any] = {}

    def get(scan: str) -> Any:
        if scan not in cache:  # load_scene gives the builtin scene for "builtin"
            cache[scan] = load_scene(scan, resolve(args.connectivity), args.scenes)
        return cache[scan]

    return get


def _poses(ep: Any, k: int) -> list[tuple[float, float, float, float]]:
    """``k`` poses along the reference path, facing along it."""
    path = np.asarray(ep.reference_path, dtype=np.float64)
    out = []
    for i in range(k):
        s = (i / max(1, k - 1)) * (len(path) - 1)
        j = min(int(s), len(path) - 2) if len(path) > 1 else 0
        a = path[j]
        b = path[j + 1] if len(path) > 1 else path[j] + (1.0, 0.0, 0.0)
        f = s - j
        p = a + (b - a) * f
        out.append((float(p[0]), float(p[1]), float(p[2]), math.atan2(b[1] - a[1], b[0] - a[0]) + 0.3 * math.sin(i)))
    return out


#: The frames ``bench sim --save-frames DIR`` writes (``<scan>_<episode>_<w>x<h>_<i>.png``); an earlier run's are replaced only with --overwrite.
SAVED_FRAMES: tuple[str, ...] = ("*_*x*_[0-9][0-9][0-9].png",)


def save_frame(path: Path, rgb: np.ndarray, depth: np.ndarray, max_m: float = 10.0) -> None:
    """Write colour | depth (grey, 0..max_m m, black = no return) side by side as a PNG, atomically.

    Raises:
        OSError: the PNG cannot be encoded or written (``path`` untouched).
    """
    import cv2

    from havln_robot.paths import atomic_output

    grey = (np.clip(depth / max_m, 0.0, 1.0) * 255).astype(np.uint8)
    ok, png = cv2.imencode(".png", np.concatenate([rgb[:, :, ::-1], cv2.cvtColor(grey, cv2.COLOR_GRAY2BGR)], axis=1))
    if not ok:
        raise OSError(f"{path}: the frame could not be encoded as PNG")
    with atomic_output(path) as tmp:
        tmp.write_bytes(png.tobytes())


def bench_render(eps: list[tuple[Any, Any]], frames: int, save_dir: Path | None = None) -> list[dict[str, Any]]:
    """Frames/s of render() (RGB + depth in one pass) per resolution, over all episodes; with
    ``save_dir``, every 10th frame is also written there as PNG (colour | depth)."""
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.render import Renderer, depth_to_mm

    rows = []
    for w, h, fov in RESOLUTIONS:
        n, dt_render, dt_mm, build = 0, 0.0, 0.0, 0.0
        for scene, ep in eps:
            crowd = Crowd.from_episode(ep, scene, seed=0)
            t0 = time.perf_counter()
            r = Renderer(scene, crowd, w, h, fov)
            build += time.perf_counter() - t0
            try:
                poses = _poses(ep, frames)
                r.render(poses[0], 0.0, 0.0)  # warm-up (texture upload)
                for i, pose in enumerate(poses):
                    t0 = time.perf_counter()
                    rgb, depth = r.render(pose, 0.0, 0.1 * i)
                    t1 = time.perf_counter()
                    depth_to_mm(depth)
                    dt_mm += time.perf_counter() - t1
                    dt_render += t1 - t0
                    n += 1
                    if save_dir is not None and i % 10 == 0:
                        save_frame(
                            safe_child(
                                save_dir, f"{ep.scan}_{ep.episode_id}_{w}x{h}_{i:03d}.png", f"scan / episode id {ep.scan}/{ep.episode_id}"
                            ),
                            rgb,
                            depth,
                        )
            finally:
                r.close()
        rows.append(
            {
                "resolution": f"{w}x{h}",
                "hfov_deg": fov,
                "frames": n,
                "fps": n / dt_render,
                "ms_per_frame": 1000 * dt_render / n,
                "ms_depth_to_mm": 1000 * dt_mm / n,
                "model_build_s": build / len(eps),
            }
        )
    return rows


def compare_renderers(scene_ep: tuple[Any, Any], scenes_dir: str, conn: str, frames: int) -> list[dict[str, Any]]:
    """Frames/s of each :data:`havln_robot.bench.renderers.BACKENDS` candidate at the policy's (256x256,
    90 deg) and sim_node's (640x480, 69.4 deg) resolutions, each run in a subprocess (timeout 600 s)."""
    import json
    import subprocess
    import tempfile

    from havln_robot.bench.renderers import BACKENDS

    scene, ep = scene_ep
    rows = []
    with tempfile.TemporaryDirectory(prefix="havln-bench-poses-") as td:
        poses = Path(td) / "poses.json"
        jsonio.write(poses, _poses(ep, frames), newline=False)
        for w, h, fov in ((256, 256, 90.0), (640, 480, 69.4)):
            for b in BACKENDS:
                cmd = [
                    sys.executable,
                    "-m",
                    "havln_robot.bench.renderers",
                    b,
                    str(scenes_dir),
                    ep.scan,
                    str(conn),
                    str(poses),
                    str(w),
                    str(h),
                    str(fov),
                ]
                try:
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
                    row = (
                        json.loads(lines[-1])
                        if lines
                        else {"backend": b, "error": (out.stderr.strip().splitlines() or ["no output"])[-1][:200]}
                    )
                except subprocess.TimeoutExpired:
                    row = {"backend": b, "error": "timed out after 600 s"}
                row.setdefault("resolution", f"{w}x{h}")
                rows.append(row)
    return rows


def bench_steps(eps: list[tuple[Any, Any]], steps: int) -> dict[str, Any]:
    """Discrete actions/s of World.step with a seeded random policy (episodes restarted when done)."""
    from havln_robot.actions import ACTIONS, STOP
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.world import World

    rng = np.random.default_rng(0)
    moves = [a for a in ACTIONS if a != STOP]
    probs = np.array([0.55 if a == "MOVE_FORWARD" else 0.45 / (len(moves) - 1) for a in moves])
    worlds = [World(scene, ep, Crowd.from_episode(ep, scene, seed=0)) for scene, ep in eps]
    n, t0 = 0, time.perf_counter()
    while n < steps:
        w = worlds[n % len(worlds)]
        if w.done or len(w.actions) >= 400:
            w.reset()
        w.step(str(rng.choice(moves, p=probs)))
        n += 1
    dt = time.perf_counter() - t0
    return {"steps": n, "steps_per_s": n / dt, "us_per_step": 1e6 * dt / n}


def _timed(acc: dict[str, float], key: str, fn: Any) -> Any:
    """``fn`` wrapped to add its wall time (s) to ``acc[key]`` and its calls to ``acc[key + '_calls']``."""

    def g(*a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            acc[key] += time.perf_counter() - t0
            acc[key + "_calls"] += 1

    return g


def bench_expert(episodes: list[Any], load_scene: Any) -> dict[str, Any]:
    """The expert in batch, and where its time goes.

    Each episode runs :class:`~havln_robot.sim.expert.Expert` in a :class:`~havln_robot.sim.world.World`
    (seed 0, its people) to its end through :func:`havln_robot.eval.run_episode` (agent_node's
    episode runner, as ``eval`` runs it), with timers (``time.perf_counter``, ~0.3 us a call) around the
    parts of the closed loop (:class:`~havln_robot.sim.closed_loop.ClosedLoop`, wrapped on the
    instance, the product code untouched): the executor's tick (``Executor.update``), the base and
    world step (``_physics``), a depth frame with the people tracker (``_frame``).

    Args:
        episodes: HA-R2R episodes.
        load_scene: scan id -> scene.

    Returns:
        actions, wall s, actions/s, per part: s per action, calls per action; ``ceiling_actions_per_s``:
        the most actions/s the executor's ticks alone allow (1 / its time per action), the bound
        for a batch world that ticks it at motion_node's rate, however cheap everything else gets.
    """
    from havln_robot.eval import run_episode
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.world import World

    acc: dict[str, float] = {k: 0.0 for k in ("executor", "executor_calls", "base_world", "base_world_calls", "frame", "frame_calls")}
    actions, success, wall = 0, 0, 0.0
    for ep in episodes:
        scene = load_scene(ep.scan)
        w = World(scene, ep, Crowd.from_episode(ep, scene, seed=0), seed=0)
        t0 = time.perf_counter()
        loop = w.loop
        loop._physics = _timed(acc, "base_world", loop._physics)
        loop._frame = _timed(acc, "frame", loop._frame)
        loop.executor.update = _timed(acc, "executor", loop.executor.update)
        run_episode(w, "expert")  # agent_node's episode runner over the batch world, as eval runs it
        wall += time.perf_counter() - t0
        actions += len(w.actions)
        success += int(w.metrics().success)
    n = max(actions, 1)
    parts = {
        k: {
            "ms_per_action": 1e3 * acc[k] / n,
            "calls_per_action": acc[k + "_calls"] / n,
            "us_per_call": 1e6 * acc[k] / max(acc[k + "_calls"], 1),
        }
        for k in ("executor", "base_world", "frame")
    }
    return {
        "episodes": len(episodes),
        "success": success,
        "actions": actions,
        "wall_s": wall,
        "actions_per_s": actions / wall if wall > 0 else 0.0,
        "ms_per_action": 1e3 * wall / n,
        "parts": parts,
        "ceiling_actions_per_s": 1e3 / parts["executor"]["ms_per_action"] if acc["executor"] > 0 else math.inf,
    }


def _subscribe_probe(probe: Any, counts: dict[str, int], clocks: list[float]) -> dict[str, tuple]:
    """Count each sim_node output on ``probe`` into ``counts`` (and /clock's sim time, s, into ``clocks``); key → (type, topic)."""
    from diagnostic_msgs.msg import DiagnosticStatus
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import Image, Imu

    from havln_robot import topics

    subs = {
        "color": (Image, topics.COLOR_IMAGE),
        "depth": (Image, topics.DEPTH_IMAGE),
        "odom": (Odometry, topics.ODOM),
        "imu": (Imu, topics.IMU),
        "clock": (Clock, topics.CLOCK),
        "ground_truth": (DiagnosticStatus, topics.GROUND_TRUTH),
    }

    def cb(key: str):
        def f(msg: Any) -> None:
            counts[key] = counts.get(key, 0) + 1
            if key == "clock":
                clocks.append(msg.clock.sec + msg.clock.nanosec * 1e-9)

        return f

    for key, (typ, name) in subs.items():
        probe.create_subscription(typ, name, cb(key), 10)
    return subs


def bench_node(seconds: float, width: int, height: int, scene_source: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run sim_node in-process, drive it with cmd_vel, count what a subscriber receives (Hz of wall time).
    ``extra``: more sim_node parameters (the episode file, connectivity and ``scenes_dir`` of ``--scenes``)."""
    import rclpy
    from geometry_msgs.msg import Twist
    from rclpy.executors import SingleThreadedExecutor

    from havln_robot import topics
    from havln_robot.dds import configure_dds
    from havln_robot.nodes.sim_node import SimNode
    from havln_robot.sim.params import SIM_NODE_PARAMS

    configure_dds()
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=90 + os.getpid() % 10, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    counts: dict[str, int] = {}
    sim = probe = None
    try:
        params = SIM_NODE_PARAMS.validate({"scene_source": scene_source, "camera_width": width, "camera_height": height, **(extra or {})})
        sim = SimNode(params=params, context=ctx)
        probe = rclpy.create_node("bench_probe", context=ctx)
        clocks: list[float] = []
        subs = _subscribe_probe(probe, counts, clocks)
        pub = probe.create_publisher(Twist, topics.CMD_VEL, 10)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(sim)
        ex.add_node(probe)
        stop = threading.Event()

        def drive() -> None:  # a motion_node-like 20 Hz cmd_vel: slow forward, weaving
            k = 0
            while not stop.wait(0.05):
                m = Twist()
                m.linear.x, m.angular.z = 0.3, 0.6 * math.sin(0.05 * k)
                pub.publish(m)
                k += 1

        th = threading.Thread(target=drive, daemon=True)
        th.start()
        t_end = time.monotonic() + 2.0  # warm-up: renderer build, discovery
        while time.monotonic() < t_end:
            ex.spin_once(timeout_sec=0.01)
        counts.clear()
        clocks.clear()
        sim.counts.clear()
        cpu0 = time.process_time()
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            ex.spin_once(timeout_sec=0.01)
        wall = time.monotonic() - t0
        cpu = time.process_time() - cpu0
        stop.set()
        th.join()
        published = dict(sim.counts)
        out: dict[str, Any] = {f"{k}_hz": counts.get(k, 0) / wall for k in subs}
        out["published_hz"] = {name.lstrip("/"): n / wall for name, n in sorted(published.items())}
        out["real_time_factor"] = (clocks[-1] - clocks[0]) / wall if len(clocks) > 1 else 0.0
        out["seconds"] = wall
        out["process_cpu_cores"] = cpu / wall
        out["resolution"] = f"{width}x{height}"
        out["episode"] = sim.session.episode.episode_id
        out["camera_error"] = sim.camera_error
        return out
    finally:
        if sim is not None:
            sim.safe_stop()
            sim.destroy_node()
        if probe is not None:
            probe.destroy_node()
        rclpy.try_shutdown(context=ctx)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``havln-robot bench sim``."""
    ap = argparse.ArgumentParser(prog="havln-robot bench sim", description="Renderer frames/s, batch steps/s and sim_node topic rates.")
    ap.add_argument(
        "--episodes", type=path_arg, default="$DATA/ha_r2r_de/HA_val_seen.json", help="HA-R2R/R2R episode file (default: HA val_seen)"
    )
    ap.add_argument("--connectivity", type=path_arg, default="$DATA/connectivity", help="Matterport3D connectivity folder")
    ap.add_argument("--scans", type=number_in(1, integer=True), default=4, help="number of scans to render/step in (default 4)")
    ap.add_argument(
        "--scenes",
        type=path_arg,
        default=None,
        metavar="DIR|synthetic",
        help="render the scans' meshes from DIR (<scan>/<scan>.glb); 'synthetic' = a generated Matterport-scale mesh "
        "(~1.5 M triangles, 24 textures, in a temporary folder); default: procedural scenes",
    )
    ap.add_argument("--frames", type=number_in(0, integer=True), default=50, help="frames per scan and resolution (default 50; 0 = skip)")
    ap.add_argument(
        "--compare-renderers",
        action="store_true",
        help="with --scenes: frames/s of MuJoCo vs pyrender vs open3d (those installed) on the first scan's mesh, each in its own process",
    )
    ap.add_argument("--steps", type=number_in(0, integer=True), default=5000, help="discrete actions to time (default 5000; 0 = skip)")
    ap.add_argument(
        "--expert",
        type=number_in(0, integer=True),
        default=20,
        help="time the expert in batch on the first N episodes, with where its time goes (default 20; 0 = skip)",
    )
    ap.add_argument(
        "--node-seconds",
        type=number_in(0, 600, unit="s"),
        default=10.0,
        help="measure sim_node topic rates for this long (default 10; 0 = skip)",
    )
    ap.add_argument("--out", type=path_arg, default=None, help="also write the figures as JSON here")
    ap.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out file and the frames of an earlier --save-frames run"
    )
    ap.add_argument(
        "--save-frames", type=path_arg, default=None, metavar="DIR", help="write every 10th rendered frame (colour | depth PNG) here"
    )
    return ap


def _load(args: argparse.Namespace) -> tuple[list, float, Any]:
    """(scene, episode) of each scan, the load time in s, the synthetic mesh's temporary folder (or None).
    OSError / ValueError on bad inputs."""
    tmp = None
    if args.scenes == "synthetic":
        import tempfile

        from havln_robot.sim.synthetic_mesh import write_large_scene

        tmp = tempfile.TemporaryDirectory(prefix="havln-bench-scenes-")
        t0 = time.perf_counter()
        _glb, conn, tris, texs = write_large_scene(tmp.name)
        print(
            f"bench sim: synthetic Matterport-scale mesh, {tris:,} triangles, {texs} textures (written in {time.perf_counter() - t0:.1f} s)"
        )
        args.episodes, args.connectivity, args.scenes = str(Path(tmp.name) / "episodes.json"), str(conn), tmp.name
    t0 = time.perf_counter()
    eps = _episodes(args.episodes, args.connectivity, max(1, args.scans), args.scenes)
    return eps, time.perf_counter() - t0, tmp


def _part_render(args: argparse.Namespace, eps: list, result: dict[str, Any]) -> None:
    result["render"] = bench_render(eps, args.frames, args.save_frames)
    print("render (RGB + depth, one pass)      frames/s   ms/frame   +depth->mm ms   model build s")
    for r in result["render"]:
        print(
            f"  {r['resolution']:>9} @ {r['hfov_deg']:4.1f} deg HFOV   {r['fps']:9.1f}  {r['ms_per_frame']:9.2f}"
            f"  {r['ms_depth_to_mm']:14.2f}  {r['model_build_s']:14.2f}"
        )


def _part_renderers(args: argparse.Namespace, eps: list, result: dict[str, Any]) -> None:
    result["renderers"] = compare_renderers(eps[0], args.scenes, args.connectivity, max(5, args.frames))
    print("renderer candidates on the scan mesh (colour + depth per frame, own process each)")
    for r in result["renderers"]:
        if "error" in r:
            print(f"  {r['backend']:>8}  {r['resolution']:>9}  -- {r['error']}")
        else:
            print(f"  {r['backend']:>8}  {r['resolution']:>9}  {r['fps']:7.1f} frames/s   first frame after {r['build_s']:.1f} s")


def _part_steps(args: argparse.Namespace, eps: list, result: dict[str, Any]) -> None:
    result["steps"] = bench_steps(eps, args.steps)
    s = result["steps"]
    print(f"batch World.step (random actions): {s['steps_per_s']:.0f} steps/s ({s['us_per_step']:.0f} us/step, {s['steps']} steps)")


def _part_expert(args: argparse.Namespace, eps: list, result: dict[str, Any]) -> None:
    result["expert"] = x = bench_expert(_first_episodes(args.episodes, args.connectivity, args.expert), _scene_loader(args))
    print(
        f"batch expert ({x['episodes']} episode{'s' if x['episodes'] != 1 else ''}, {x['success']} succeed): {x['actions']} actions in {x['wall_s']:.1f} s, "
        f"{x['actions_per_s']:.0f} actions/s ({x['ms_per_action']:.2f} ms/action)"
    )
    names = {"executor": "Executor.update (a control tick)", "base_world": "base + world step", "frame": "depth frame + people tracker"}
    for k, v in x["parts"].items():
        print(
            f"  {names[k]:34s} {v['ms_per_action']:6.2f} ms/action  {v['calls_per_action']:5.1f} calls/action  {v['us_per_call']:6.1f} us/call"
        )
    print(f"  the executor's ticks alone cap a tick-by-tick batch world at {x['ceiling_actions_per_s']:.0f} actions/s on this machine")


def _part_node(args: argparse.Namespace, eps: list, result: dict[str, Any]) -> None:
    data_ok = len(eps) > 1 or eps[0][1].scan != "builtin"
    extra = None
    if args.scenes:
        extra = {"episodes_file": str(args.episodes), "connectivity_dir": str(args.connectivity), "scenes_dir": str(args.scenes)}
    node = bench_node(args.node_seconds, 640, 480, "episodes" if args.scenes else "auto" if data_ok else "builtin", extra)
    result["sim_node"] = node
    print(
        f"sim_node {node['resolution']} driven by cmd_vel, {node['seconds']:.1f} s wall (episode {node['episode']}): "
        f"camera {node['color_hz']:.1f} Hz (depth {node['depth_hz']:.1f}), odom {node['odom_hz']:.1f} Hz, "
        f"imu {node['imu_hz']:.1f} Hz, clock {node['clock_hz']:.1f} Hz, ground truth {node['ground_truth_hz']:.1f} Hz, "
        f"real-time factor {node['real_time_factor']:.2f}; process CPU {node['process_cpu_cores']:.2f} cores"
    )
    pub = node["published_hz"]
    print("  published by sim_node (Hz): " + ", ".join(f"{k} {v:.1f}" for k, v in pub.items()))
    if node["camera_error"]:
        print(f"  camera error: {node['camera_error']}")


def main(argv: list[str]) -> int:
    """``havln-robot bench sim [--scans N] [--scenes DIR|synthetic] [--frames N] [--steps N] [--expert N] [--node-seconds S] [--out FILE]``; returns the exit code."""
    ap = build_parser()
    args = ap.parse_args(argv)
    args.out = None if args.out is None else Path(args.out)
    args.save_frames = None if args.save_frames is None else Path(args.save_frames)
    from havln_robot.paths import check_out_file, prepare_out_dir, refuse_overwrite

    if args.out is not None:
        check_out_file(args.out, "--out", inputs=(args.episodes,), overwrite=args.overwrite)
    if args.save_frames is not None:
        refuse_overwrite(args.save_frames, "--save-frames", args.overwrite, names=SAVED_FRAMES)  # an earlier run's frames
        prepare_out_dir(args.save_frames, "--save-frames")
    os.environ.setdefault("MUJOCO_GL", "egl")
    if args.scenes is not None and args.scenes.isdigit():  # the old spelling of --scans N
        args.scans, args.scenes = int(args.scenes), None
    if args.scenes not in (None, "synthetic") and not Path(args.scenes).is_dir():
        print(
            f"havln-robot bench sim: --scenes {args.scenes}: not a folder; give the folder holding <scan>/<scan>.glb, or 'synthetic'",
            file=sys.stderr,
        )
        return 2
    if args.compare_renderers and not args.scenes:
        print("havln-robot bench sim: --compare-renderers needs --scenes DIR|synthetic", file=sys.stderr)
        return 2
    try:
        eps, load_s, tmp = _load(args)
    except (OSError, ValueError) as exc:
        print(f"havln-robot bench sim: {exc}", file=sys.stderr)
        return 2
    from havln_robot.sim.render import GL_BACKEND

    result: dict[str, Any] = {"cpu_count": os.cpu_count(), "gl_backend": GL_BACKEND, "scans": [ep.scan for _, ep in eps]}
    result["scenes"] = "mesh" if args.scenes else "procedural"
    print(
        f"bench sim: {len(eps)} scan(s) {', '.join(result['scans'])}; MUJOCO_GL={GL_BACKEND}; {os.cpu_count()} CPUs; {result['scenes']} scenes"
    )
    if args.scenes:
        tri = sum(s.triangle_count() for s, _ in eps if hasattr(s, "triangle_count"))
        result["mesh"] = {"triangles": tri, "scene_load_s": load_s}
        print(f"  scan meshes from {args.scenes}: {tri:,} triangles; scene load (mesh, occupancy grid, free space) {load_s:.1f} s")
    parts = ((_part_render, args.frames), (_part_renderers, args.compare_renderers), (_part_steps, args.steps))
    for part, wanted in (*parts, (_part_expert, args.expert), (_part_node, args.node_seconds)):
        if wanted:  # a count or seconds > 0, or the flag
            part(args, eps, result)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_json(args.out, result, nonfinite="null", newline=False, indent=2)
        print(f"wrote {args.out}")
    if tmp is not None:
        tmp.cleanup()
    return 0
