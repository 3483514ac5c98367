"""``havln-robot bench people``: the people tracker against simulator ground truth.

A 16 m x 12 m room with one square pillar (0.3 m, as tall as the walls: a person-sized column a
geometry-only detector cannot tell from a person) and ``--people`` simulated people (the
simulator's figures, :mod:`havln_robot.sim.render`) walking back and forth at constant speeds
drawn from 0.5-1.5 m/s (some standing), crossing each other so people occlude people. The robot
stands still for the first half of the run and turns in place at 0.3 rad/s for the second half.
Each frame (``--rate`` Hz of sim time) is rendered in colour + depth at 640x480 (D435i field of
view, Go2 head mount) and ONLY the depth image and the robot's (perfect) odometry go to the
tracker (:class:`havln_robot.perception.people.DepthPeopleTracker`).

Scoring, per frame: people whose centre lies in the camera's horizontal field of view and
0.5-6 m from the camera are the truth; confirmed tracks are matched to them by the Hungarian
method within 0.5 m. Recall (matched truth / truth) and precision (matched tracks / tracks) per
range bin (0.5-2, 2-4, 4-6 m from the camera, by the true or the tracked position); position
error p50/p95 of matched tracks (m); velocity error p50/p95 (m/s) of matched tracks at least 1 s
old; false tracks per minute (distinct track ids matched in fewer than half of their frames,
per minute of sim time); CPU time of the tracker per frame (``time.process_time``, ms;
rendering excluded). Occluded people count as truth: a person hidden behind another is a miss.

The simulator's people are simple figures on a clean floor: these figures flatter the tracker
(docs/perception.md says what a lab must measure on its robot).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from havln_robot.paths import write_json
from havln_robot.text import number_in, path_arg

#: Range bins of the report, m from the camera.
BINS: tuple[tuple[float, float], ...] = ((0.5, 2.0), (2.0, 4.0), (4.0, 6.0))
MATCH_M = 0.5
"""A track within this of a true person (m) detects them."""


@dataclass
class _Floor:
    index: int
    z: float
    own: object


class BenchRoom:
    """A closed room [-8, 8] x [-6, 6] m with one 0.3 m square pillar at (1.5, 2.5) (walls 2.5 m)."""

    name = "bench_people"
    wall_height = 2.5

    def __init__(self) -> None:
        import shapely

        self.box = (-8.0, -6.0, 8.0, 6.0)
        self.floors = [_Floor(0, 0.0, shapely.box(*self.box))]

    def wall_segments(self, i: int) -> np.ndarray:
        """(K, 2, 2) wall segments (m): the room, then the pillar."""
        x0, y0, x1, y1 = self.box
        segs = []
        for pts in ([(x0, y0), (x1, y0), (x1, y1), (x0, y1)], [(1.35, 2.35), (1.65, 2.35), (1.65, 2.65), (1.35, 2.65)]):
            segs += [[pts[k], pts[(k + 1) % 4]] for k in range(4)]
        return np.array(segs, dtype=np.float64)


@dataclass
class _Human:
    human_id: int


class BenchCrowd:
    """People walking back and forth between two points at constant speed (triangle wave).

    Args:
        a, b: (M, 2) end points, m (map frame). speed: (M,) m/s (0 = standing at ``a``).
        phase: (M,) start offset along the loop, s.
    """

    def __init__(self, a: np.ndarray, b: np.ndarray, speed: np.ndarray, phase: np.ndarray) -> None:
        self.a, self.b = np.asarray(a, float), np.asarray(b, float)
        self.speed, self.phase = np.asarray(speed, float), np.asarray(phase, float)
        self.length = np.linalg.norm(self.b - self.a, axis=1)
        self.humans = [_Human(i) for i in range(len(self.a))]

    def _u(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        period = np.where(self.speed > 0, 2 * self.length / np.maximum(self.speed, 1e-9), 1.0)
        s = ((t + self.phase) % period) / period  # 0..1 over a loop
        u = np.where(s < 0.5, 2 * s, 2 - 2 * s)
        sign = np.where(s < 0.5, 1.0, -1.0)
        return np.where(self.speed > 0, u, 0.0), np.where(self.speed > 0, sign, 0.0)

    def positions(self, t: float) -> np.ndarray:
        """(M, 3) positions at time ``t`` (s), z = 0."""
        u, _ = self._u(t)
        xy = self.a + (self.b - self.a) * u[:, None]
        return np.concatenate([xy, np.zeros((len(xy), 1))], axis=1)

    def velocities(self, t: float) -> np.ndarray:
        """(M, 2) ground velocities (m/s) at ``t``."""
        _, sign = self._u(t)
        d = (self.b - self.a) / np.maximum(self.length, 1e-9)[:, None]
        return d * (self.speed * sign)[:, None]

    def headings(self, t: float) -> np.ndarray:
        """(M,) headings, rad: direction of travel (standing people face the robot's side)."""
        v = self.velocities(t)
        return np.where(np.hypot(v[:, 0], v[:, 1]) > 0, np.arctan2(v[:, 1], v[:, 0]), math.pi)


def make_crowd(n: int, seed: int) -> BenchCrowd:
    """``n`` people in front of the robot (x 0.8-7 m, |y| < 4.5 m; every other one starting within 3 m),
    on crossing lines that keep 1 m from the robot and the pillar; one in five stands."""
    rng = np.random.default_rng(seed)
    a, b, sp = [], [], []
    for i in range(n):
        while True:
            p = np.array([rng.uniform(0.8, 6.0) if i % 2 else rng.uniform(1.2, 3.0), rng.uniform(-3.5, 3.5)])
            ang = rng.uniform(0, math.pi)
            q = p + rng.uniform(2.0, 4.5) * np.array([math.cos(ang), math.sin(ang)])
            if 0.8 < q[0] < 7.0 and abs(q[1]) < 4.5 and min(_seg_dist((1.5, 2.5), p, q), _seg_dist((0.0, 0.0), p, q)) > 1.0:
                break
        a.append(p)
        b.append(q)
        sp.append(0.0 if i % 5 == 4 else rng.uniform(0.5, 1.5))
    return BenchCrowd(np.array(a), np.array(b), np.array(sp), rng.uniform(0, 10, n))


def _seg_dist(c: tuple[float, float], p: np.ndarray, q: np.ndarray) -> float:
    c_ = np.asarray(c, float)
    d = q - p
    u = float(np.clip(np.dot(c_ - p, d) / max(float(np.dot(d, d)), 1e-9), 0, 1))
    return float(np.linalg.norm(p + u * d - c_))


def _as_published(depth_m: np.ndarray) -> np.ndarray:
    """A rendered depth image (float m) as people_node reads sim_node's: 16UC1 mm with 0 outside
    sim_node's ``depth_min_m``..``depth_max_m`` (:func:`havln_robot.sim.params.camera_depth_range`),
    back in float32 m."""
    from havln_robot.sim.params import camera_depth_range
    from havln_robot.sim.render import depth_to_mm

    return depth_to_mm(depth_m, *camera_depth_range()).astype(np.float32) / 1000.0


def _people_config():
    """people_node's parameters of the sim profile (config/sim.yaml) as a ``PeopleConfig``."""
    from havln_robot.perception.people import PeopleConfig
    from havln_robot.sim.closed_loop import people_profile

    return PeopleConfig.from_params(people_profile())


def match_tracks(tracks: list, gx: np.ndarray, gy: np.ndarray, ids: np.ndarray) -> dict[int, int]:
    """Track index → person id (``ids``) of the optimal assignment of tracks to people at ``gx, gy``
    (base_link, m), pairs at most :data:`MATCH_M` apart."""
    from scipy.optimize import linear_sum_assignment

    matched: dict[int, int] = {}
    if len(ids) and len(tracks):
        tx = np.array([tr.x for tr in tracks])
        ty = np.array([tr.y for tr in tracks])
        cost = np.hypot(gx[:, None] - tx[None], gy[:, None] - ty[None])
        rows, cols = linear_sum_assignment(cost)
        for r, ci in zip(rows.tolist(), cols.tolist(), strict=True):
            if cost[r, ci] <= MATCH_M:
                matched[ci] = int(ids[r])
    return matched


def _figures(
    n_people: int, seconds: float, rate_hz: float, n_frames: int, counts: tuple, pos_err: list, vel_err: list, cpu: list, life: dict
) -> dict:
    """The figures of :func:`run` from its per-bin counts (truth, truth matched, tracks, tracks matched) and samples."""
    truth_n, truth_hit, trk_n, trk_hit = counts
    minutes = seconds / 60.0
    false_ids = sum(1 for fr, m in life.values() if m < 0.5 * fr)
    return {
        "people": n_people,
        "seconds": seconds,
        "rate_hz": rate_hz,
        "frames": n_frames,
        "bins": [f"{lo:g}-{hi:g} m" for lo, hi in BINS],
        "truth": truth_n.astype(int).tolist(),
        "recall": [float(h / n) if n else None for h, n in zip(truth_hit, truth_n, strict=True)],
        "precision": [float(h / n) if n else None for h, n in zip(trk_hit, trk_n, strict=True)],
        "pos_err_p50_m": _pct(pos_err, 50),
        "pos_err_p95_m": _pct(pos_err, 95),
        "vel_err_p50_mps": _pct(vel_err, 50),
        "vel_err_p95_mps": _pct(vel_err, 95),
        "false_tracks_per_min": false_ids / minutes if minutes > 0 else None,
        "cpu_ms_per_frame_p50": _pct(cpu, 50),
        "cpu_ms_per_frame_p95": _pct(cpu, 95),
    }


def run(n_people: int, seconds: float, rate_hz: float, seed: int, width: int = 640, height: int = 480) -> dict:
    """Render, track and score; returns the figures (see the module docstring)."""
    from havln_robot.motion.safety import CameraMount
    from havln_robot.perception.people import DepthPeopleTracker
    from havln_robot.sim.render import Renderer
    from havln_robot.sim.robot import GO2_CAMERA_FORWARD_M, GO2_CAMERA_HEIGHT_M

    crowd = make_crowd(n_people, seed)
    scene = BenchRoom()
    mount = CameraMount(GO2_CAMERA_FORWARD_M, 0.0, GO2_CAMERA_HEIGHT_M, 0.0)
    rend = Renderer(scene, crowd, width, height, camera_height_m=GO2_CAMERA_HEIGHT_M, camera_forward_m=GO2_CAMERA_FORWARD_M)
    k = rend.intrinsics
    half_hfov = math.atan2(k.cx, k.fx)
    clock = {"t": 0.0}
    tracker = DepthPeopleTracker(_people_config(), clock=lambda: clock["t"])
    n_frames = int(round(seconds * rate_hz))
    truth_n = np.zeros(len(BINS))
    truth_hit = np.zeros(len(BINS))
    trk_n = np.zeros(len(BINS))
    trk_hit = np.zeros(len(BINS))
    pos_err: list[float] = []
    vel_err: list[float] = []
    cpu: list[float] = []
    life: dict[int, list[int]] = {}  # track id -> [frames, matched frames]
    first_seen: dict[int, float] = {}
    try:
        for f in range(n_frames):
            t = f / rate_hz
            yaw = 0.0 if t < seconds / 2 else 0.3 * (t - seconds / 2)
            pose = (0.0, 0.0, yaw)
            clock["t"] = t
            _, depth = rend.render((0.0, 0.0, 0.0, yaw), 0.0, t)
            depth = _as_published(depth)
            tracker.set_pose(pose)
            c0 = time.process_time()
            tracks = tracker.step(t, None, depth, k, mount)
            cpu.append((time.process_time() - c0) * 1000.0)
            # truth in base_link
            c, s = math.cos(yaw), math.sin(yaw)
            P = crowd.positions(t)[:, :2]
            V = crowd.velocities(t)
            gx, gy = c * P[:, 0] + s * P[:, 1], -s * P[:, 0] + c * P[:, 1]
            gvx, gvy = c * V[:, 0] + s * V[:, 1], -s * V[:, 0] + c * V[:, 1]
            cr = np.hypot(gx - mount.x, gy)
            inview = (np.abs(np.arctan2(gy, gx - mount.x)) <= half_hfov) & (cr >= BINS[0][0]) & (cr <= BINS[-1][1])
            gi = np.nonzero(inview)[0]
            near = np.nonzero(cr <= BINS[-1][1] + 1.0)[0]  # tracks may match anyone (a person just out of view is no false track)
            matched_t = match_tracks(tracks, gx[near], gy[near], near)
            for j in gi.tolist():
                b = _bin(cr[j])
                if b is not None:
                    truth_n[b] += 1
                    truth_hit[b] += j in matched_t.values()
            for ci, tr in enumerate(tracks):
                first_seen.setdefault(tr.track_id, t)
                lf = life.setdefault(tr.track_id, [0, 0])
                lf[0] += 1
                b = _bin(math.hypot(tr.x - mount.x, tr.y))
                if b is not None:
                    trk_n[b] += 1
                    trk_hit[b] += ci in matched_t
                if ci in matched_t:
                    lf[1] += 1
                    j = matched_t[ci]
                    pos_err.append(math.hypot(tr.x - gx[j], tr.y - gy[j]))
                    if t - first_seen[tr.track_id] >= 1.0:
                        vel_err.append(math.hypot(tr.vx - gvx[j], tr.vy - gvy[j]))
    finally:
        rend.close()
    return _figures(n_people, seconds, rate_hz, n_frames, (truth_n, truth_hit, trk_n, trk_hit), pos_err, vel_err, cpu, life)


#: Headings per sampled pose of :func:`empty_scenes`, every 30 deg.
EMPTY_HEADINGS = 12
#: A detection this near the camera (m) is inside the range where the executor's personal-space
#: rules act (``min_person_distance_m`` 0.7 m from the footprint, plus the forecast): it stops turns.
NEAR_M = 1.5


def empty_scenes(scans: list[str], poses_per_scan: int, seed: int, width: int = 640, height: int = 480) -> dict:
    """Phantom people: the depth detector on scenes with nobody in them.

    For each scan, ``poses_per_scan`` poses are drawn (a navigation-graph viewpoint, moved up to
    1.5 m in a random direction, kept where a 0.2 m disc -- the Go2's half width -- is free), each
    rendered at :data:`EMPTY_HEADINGS` headings from the camera above the drawn floor
    (:meth:`Scene.camera_ground_z`, as the live camera), converted as sim_node publishes depth, and
    every frame's detections (:func:`~havln_robot.perception.people.frame_detections`, people_node's
    parameters of config/sim.yaml, single frames: no tracking) are counted. Every detection is false.

    Args:
        scans: Matterport3D scan ids (``"builtin"`` = the procedural scene).
        poses_per_scan: poses per scan.
        seed: seed of the pose draws.
        width: image width, px (D435i colour 640).
        height: image height, px (480).

    Returns:
        Figures: ``frames``, ``frames_with_detection`` and ``frames_with_near_detection`` (a
        detection within :data:`NEAR_M` of the camera), their rates, and per scan the same counts.

    Raises:
        SceneError: a scan's connectivity file is missing or malformed.
    """
    from havln_robot.motion.safety import CameraMount
    from havln_robot.perception.people import FrameInput, frame_detections
    from havln_robot.sim.render import Renderer
    from havln_robot.sim.robot import GO2_CAMERA_FORWARD_M, GO2_CAMERA_HEIGHT_M
    from havln_robot.sim.scene import Scene

    rng = np.random.default_rng(seed)
    cfg = _people_config()
    mount = CameraMount(GO2_CAMERA_FORWARD_M, 0.0, GO2_CAMERA_HEIGHT_M, 0.0)
    per: dict[str, list[int]] = {}
    for scan in scans:
        scene = Scene.load(scan)
        rend = Renderer(scene, None, width, height, camera_height_m=GO2_CAMERA_HEIGHT_M, camera_forward_m=GO2_CAMERA_FORWARD_M)
        n = [0, 0, 0]
        try:
            vps = list(scene.viewpoints.values()) if isinstance(scene.viewpoints, dict) else list(scene.viewpoints)
            got, tries = 0, 0
            while got < poses_per_scan and tries < 50 * poses_per_scan:
                tries += 1
                vp = vps[int(rng.integers(len(vps)))]
                r, a = rng.uniform(0.0, 1.5), rng.uniform(-math.pi, math.pi)
                x, y = vp.x + r * math.cos(a), vp.y + r * math.sin(a)
                sup = scene.support(x, y, vp.z)
                if sup is None or not scene.is_free(x, y, sup.z, 0.2):
                    continue
                got += 1
                z = scene.camera_ground_z(sup, sup.z)  # the camera above the drawn floor, as World.camera_pose
                for h in range(EMPTY_HEADINGS):
                    yaw = 2 * math.pi * h / EMPTY_HEADINGS
                    _, depth = rend.render((x, y, z, yaw), 0.0, 0.0)
                    depth = _as_published(depth)
                    dets = frame_detections(FrameInput(depth_m=depth, k=rend.intrinsics, mount=mount), cfg)
                    n[0] += 1
                    n[1] += bool(dets)
                    n[2] += any(math.hypot(d.x - mount.x, d.y - mount.y) <= NEAR_M for d in dets)
        finally:
            rend.close()
        per[scan] = n
    tot = np.array(list(per.values())).sum(axis=0) if per else np.zeros(3, int)
    frames = int(tot[0])
    return {
        "scans": list(scans),
        "poses_per_scan": poses_per_scan,
        "frames": frames,
        "frames_with_detection": int(tot[1]),
        "frames_with_near_detection": int(tot[2]),
        "detection_rate": float(tot[1] / frames) if frames else None,
        "near_detection_rate": float(tot[2] / frames) if frames else None,
        "per_scan": {k: {"frames": v[0], "with_detection": v[1], "with_near_detection": v[2]} for k, v in per.items()},
    }


def _bin(r: float) -> int | None:
    for i, (lo, hi) in enumerate(BINS):
        if lo <= r < hi:
            return i
    return None


def _pct(v: list[float], q: float) -> float | None:
    return float(np.percentile(v, q)) if v else None


def _f(v: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def report(fig: dict) -> str:
    """The printed table of :func:`run`'s figures."""
    lines = [
        f"people tracker vs ground truth: {fig['people']} simulated people (0.5-1.5 m/s, one in five standing), "
        f"{fig['seconds']:g} s at {fig['rate_hz']:g} Hz, depth 640x480 only (sim figures flatter the tracker)",
        f"  {'range from camera':<18} {'truth':>6} {'recall':>7} {'precision':>9}",
    ]
    for name, n, r, p in zip(fig["bins"], fig["truth"], fig["recall"], fig["precision"], strict=True):
        lines.append(f"  {name:<18} {n:>6} {_f(r):>7} {_f(p):>9}")
    lines.append(f"  position error p50 / p95: {_f(fig['pos_err_p50_m'])} / {_f(fig['pos_err_p95_m'])} m")
    lines.append(f"  velocity error p50 / p95: {_f(fig['vel_err_p50_mps'])} / {_f(fig['vel_err_p95_mps'])} m/s (tracks >= 1 s old)")
    lines.append(f"  false tracks: {_f(fig['false_tracks_per_min'], '{:.1f}')} per minute")
    lines.append(
        f"  tracker CPU time: {_f(fig['cpu_ms_per_frame_p50'], '{:.1f}')} ms/frame p50, {_f(fig['cpu_ms_per_frame_p95'], '{:.1f}')} p95"
    )
    e = fig.get("empty_scenes")
    if e:
        lines.append(
            f"  phantom people (no one in the scene; {len(e['scans'])} scenes x {e['poses_per_scan']} poses x {EMPTY_HEADINGS} headings, "
            f"single frames): {e['frames_with_detection']} of {e['frames']} frames ({_f(e['detection_rate'], '{:.1%}')}) with a detection, "
            f"{e['frames_with_near_detection']} ({_f(e['near_detection_rate'], '{:.1%}')}) within {NEAR_M:g} m"
        )
    return "\n".join(lines)


def _empty_scans(n: int) -> list[str]:
    """The first ``n`` scans (sorted) of the val_seen episodes, or ``["builtin"]`` without the data."""
    from havln_robot.episodes import load_episodes
    from havln_robot.paths import data_dir

    root = data_dir()
    split = root / "ha_r2r_de" / "HA_val_seen.json"
    if not split.is_file():
        return ["builtin"]
    return sorted({e.scan for e in load_episodes(split, root / "connectivity")})[:n]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures; returns 0 (2 on bad arguments)."""
    ap = argparse.ArgumentParser(
        prog="havln-robot bench people",
        description="People tracker (depth only) against simulator ground truth: recall/precision per range, errors, false tracks, CPU.",
    )
    ap.add_argument("--people", type=number_in(1, 50, integer=True), default=8, help="simulated people (default 8)")
    ap.add_argument("--seconds", type=number_in(0, 3600, unit="s", above=True), default=60.0, help="sim time, s (default 60)")
    ap.add_argument("--rate", type=number_in(0, 60, unit="Hz", above=True), default=10.0, help="frames per second of sim time (default 10)")
    ap.add_argument("--seed", type=number_in(0, integer=True), default=0, help="seed of the people's lines, speeds and phases")
    ap.add_argument("--quick", action="store_true", help="12 s instead of --seconds (for the test suite)")
    ap.add_argument(
        "--empty-scans",
        type=number_in(0, 91, integer=True),
        default=10,
        help="also run the detector in this many val_seen scenes with nobody in them and count phantom people "
        "(default 10; 0 = skip; without the HA-VLN data: the builtin scene)",
    )
    ap.add_argument(
        "--empty-poses", type=number_in(1, 1000, integer=True), default=10, help="poses per empty scene (12 headings each; default 10)"
    )
    ap.add_argument("--json", type=path_arg, default=None, help="also write the figures to this JSON file")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    args = ap.parse_args(argv)
    if args.json:
        from havln_robot.paths import check_out_file

        check_out_file(args.json, "--json", overwrite=args.overwrite)
    seconds = 12.0 if args.quick else args.seconds
    if args.people < 1 or seconds <= 0 or args.rate <= 0:
        print("havln-robot bench people: --people must be >= 1, --seconds and --rate > 0", file=sys.stderr)
        return 2
    fig = run(args.people, seconds, args.rate, args.seed)
    if args.empty_scans:
        fig["empty_scenes"] = empty_scenes(_empty_scans(args.empty_scans), args.empty_poses, args.seed)
    print(report(fig))
    if args.json:
        write_json(args.json, fig, nonfinite="null", indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
