"""``havln-robot bench perception``: print the perception figures of this machine.

* preprocessing: ms per view for ``to_model_rgb`` + ``to_model_depth`` from a D435i-sized frame;
* capture: frames/s through the real librealsense path (software_device → syncer → ``rs.align`` →
  depth-units conversion), i.e. the host-side cost of camera_node per frame;
* panorama overhead: seconds the agent itself spends per 12-view panorama (capture bookkeeping,
  preprocessing, planning) with an instantaneous robot -- the rest of a real panorama is motion
  (24 TURN actions plus settling), reported live in ``havln/agent_status`` ``panorama_s``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

import numpy as np

from havln_robot.actions import TURN_LEFT, TURN_RIGHT
from havln_robot.paths import write_json
from havln_robot.perception.preprocess import D435I_COLOR_HFOV_DEG, Intrinsics, to_model_depth, to_model_rgb
from havln_robot.text import number_in, path_arg


def bench_preprocess(width: int, height: int, n: int) -> float:
    """Mean ms per view (RGB + depth) for a ``width`` x ``height`` camera frame."""
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    depth = rng.integers(0, 12000, (height, width), dtype=np.uint16)
    intr = Intrinsics.from_hfov(width, height, D435I_COLOR_HFOV_DEG)
    to_model_rgb(rgb, intrinsics=intr)
    t = time.perf_counter()
    for _ in range(n):
        to_model_rgb(rgb, intrinsics=intr)
        to_model_depth(depth, intrinsics=intr)
    return (time.perf_counter() - t) * 1000.0 / n


def bench_capture(width: int, height: int, seconds: float) -> float:
    """Frames/s that RealSenseCamera.read() delivers from a software_device fed as fast as it drains."""
    from havln_robot.perception.realsense import RealSenseCamera, SoftwareCamera

    intr = Intrinsics.from_hfov(width, height, D435I_COLOR_HFOV_DEG)
    cam = SoftwareCamera(intr, fps=90)
    camera = RealSenseCamera(lambda: cam, frame_timeout_s=1.0)
    rgb = np.zeros((height, width, 3), np.uint8)
    depth = np.full((height, width), 1500, np.uint16)
    stop = threading.Event()
    go = threading.BoundedSemaphore(2)  # at most two framesets in flight

    def feed() -> None:
        while not stop.is_set():
            if cam.syncer is not None and go.acquire(timeout=0.1):
                cam.push(rgb, depth)

    th = threading.Thread(target=feed, daemon=True)
    th.start()
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        if camera.read() is not None:
            n += 1
        try:  # a read that timed out (a frameset dropped by the syncer) frees its slot too
            go.release()
        except ValueError:
            pass
    dt = time.perf_counter() - t0
    stop.set()
    th.join()
    camera.close()
    return n / dt


def bench_panorama(width: int, height: int, n: int) -> float:
    """Seconds of agent-side work per 12-view panorama (instant robot, no settling)."""
    from havln_robot.agent.core import ActionOutcome, AgentConfig, EpisodeRunner, RawView
    from havln_robot.policy.api import Policy

    intr = Intrinsics.from_hfov(width, height, D435I_COLOR_HFOV_DEG)
    frame = RawView(np.zeros((height, width, 3), np.uint8), np.full((height, width), 1500, np.uint16), intr)

    class Robot:
        def send_action(self, action: str) -> ActionOutcome:
            yaw = {TURN_LEFT: 15.0, TURN_RIGHT: -15.0}.get(action, 0.0)
            return ActionOutcome(action, "ok", {"yaw_imu_deg": str(yaw)})

        def grab(self) -> RawView:
            return frame

        def publish_status(self, values) -> None:
            pass

    class StopAfter(Policy):
        views = 12
        name = "bench"

        def reset(self, instruction: str) -> None:
            self.k = 0

        def act(self, obs) -> str:
            self.k += 1
            return "STOP" if self.k >= n else "MOVE_FORWARD"

    runner = EpisodeRunner(StopAfter(), Robot(), AgentConfig())
    res = runner.run("bench")
    runner.close()
    return float(np.mean([p["duration_s"] for p in res.panoramas]))


def main(argv: list[str] | None = None) -> int:
    """Print the perception benchmark figures; returns 0."""
    ap = argparse.ArgumentParser(
        prog="havln-robot bench perception",
        description="Print the perception figures of this machine: preprocessing, capture and panorama overhead.",
    )
    ap.add_argument("--width", type=number_in(16, 4096, integer=True), default=848, help="camera width, px (default 848)")
    ap.add_argument("--height", type=number_in(16, 4096, integer=True), default=480, help="camera height, px (default 480)")
    ap.add_argument("--seconds", type=number_in(0, 600, unit="s", above=True), default=3.0, help="duration of the capture benchmark, s")
    ap.add_argument(
        "--panoramas", type=number_in(1, integer=True), default=5, help="panoramas timed for the agent-side overhead (default 5)"
    )
    ap.add_argument("--json", type=path_arg, default=None, help="also write the figures to this JSON file")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    args = ap.parse_args(argv)
    if args.json:
        from havln_robot.paths import check_out_file

        check_out_file(args.json, "--json", overwrite=args.overwrite)
    if args.seconds <= 0 or args.panoramas < 1:
        print("havln-robot bench perception: --seconds must be > 0 and --panoramas >= 1", file=sys.stderr)
        return 2
    w, h = args.width, args.height
    fig = {"resolution": f"{w}x{h}", "preprocess_ms": bench_preprocess(w, h, 200)}
    print(f"preprocess {w}x{h} -> rgb 224 + depth 256: {fig['preprocess_ms']:.2f} ms/view")
    fig["capture_fps"] = bench_capture(w, h, args.seconds)
    print(f"capture {w}x{h} (software_device -> syncer -> rs.align -> mm): {fig['capture_fps']:.1f} frames/s")
    fig["panorama_agent_s"] = bench_panorama(w, h, args.panoramas)
    print(f"panorama 12 views, agent-side work (instant robot): {fig['panorama_agent_s']:.3f} s/panorama")
    if args.json:
        write_json(args.json, fig, nonfinite="null", indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
