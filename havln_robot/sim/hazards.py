"""The safety course of the embedded simulator: physical hazards around the Go2 (pure numpy).

A :class:`HazardScene` is a set of oriented boxes (:class:`Block`, world frame: x, y on the floor,
z up, m) -- floors and lower floors (ledges, stairs down), obstacles (boxes, a low table and a chair
with thin legs, door frames), a glass pane (no depth return) and people walking at a constant
velocity. :func:`run` drives motion_node's own core through it
(:class:`~havln_robot.motion.inputs.MotionCore`: the executor under every input rule of the safety
layer, as on the robot): the depth camera of the ``go2`` profile (config/go2.yaml: level D435i at
0.41 m, 0.30 m ahead of base_link) is ray-cast from the robot's pose, an optional LiDAR cloud
(:func:`lidar_cloud`) likewise, odometry, IMU and people are fed at the live rates, and the robot
follows the commanded velocity. Contacts (the footprint
overlapping an obstacle 0.10 m or taller), falls (the footprint over a drop larger than the Go2's
step, or over no floor: a controlled walk down a flight of treads is no fall) and stopping
distances are measured on the true geometry.

Scenes are built by :func:`course` (the bench, ``havln-robot bench safety``) and by tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from havln_robot import actions as A
from havln_robot.hardware import GO2_HEIGHT_M
from havln_robot.motion.lidar import L1_ELEVATION_DEG, LidarMount
from havln_robot.motion.safety import GO2_MAX_STEP_M, CameraMount, Intrinsics, Person
from havln_robot.records import BLOCKED_DETAIL, Outcome

#: An obstacle at least this tall above the floor is one the robot must never touch, m.
CONTACT_MIN_HEIGHT_M = 0.10
#: Depth image size of the simulated D435i (stride-4 640x480, what motion_node projects), px.
DEPTH_W, DEPTH_H = 160, 120
#: Colour/depth horizontal field of view of the D435i aligned depth (config/go2.yaml camera_node), deg.
DEPTH_HFOV_DEG = 69.4
#: Rates of the simulated streams (batch and live), Hz: odometry and IMU (the Go2's sportmodestate
#: as go2_driver_node republishes it), depth (the D435i profile), people (people_node), LiDAR (L1).
ODOM_HZ, CAMERA_HZ, PEOPLE_HZ, LIDAR_HZ = 50.0, 15.0, 15.0, 10.0


@dataclass(frozen=True)
class Block:
    """An oriented box: centre ``cx, cy`` (m, world), ``length`` along its own x (turned ``yaw`` rad
    from the world's x) by ``width``, from height ``z0`` to ``z1`` (m).

    Attributes:
        depth: returns depth (False: glass -- the D435i sees through it).
        lidar: returns LiDAR points.
        floor: a surface to stand on (not an obstacle to touch).
        vx, vy: constant velocity from ``t_start`` s of the run (a person), m/s.
        person: a person (reported to the executor as a detection, as people_node would).
    """

    cx: float
    cy: float
    length: float
    width: float
    z0: float
    z1: float
    yaw: float = 0.0
    depth: bool = True
    lidar: bool = True
    floor: bool = False
    vx: float = 0.0
    vy: float = 0.0
    t_start: float = 0.0
    person: bool = False

    def at(self, t: float) -> Block:
        """This block at time ``t`` s (moved by its velocity after ``t_start``)."""
        if self.vx == 0.0 and self.vy == 0.0:
            return self
        dt = max(0.0, t - self.t_start)
        return replace(self, cx=self.cx + self.vx * dt, cy=self.cy + self.vy * dt)

    def corners(self) -> np.ndarray:
        """(4, 2) floor-plane corners, m."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        hx, hy = self.length / 2.0, self.width / 2.0
        loc = np.array([[hx, hy], [-hx, hy], [-hx, -hy], [hx, -hy]])
        return np.stack([self.cx + c * loc[:, 0] - s * loc[:, 1], self.cy + s * loc[:, 0] + c * loc[:, 1]], axis=1)


def floor_block(x0: float, x1: float, z: float = 0.0, y_half: float = 20.0) -> Block:
    """A floor from x0 to x1 (m, world) with its top at ``z`` m."""
    return Block((x0 + x1) / 2.0, 0.0, x1 - x0, 2.0 * y_half, z - 0.05, z, floor=True)


@dataclass
class HazardScene:
    """One scenario: the blocks, the robot's start pose (x, y, yaw; m, rad), how many MOVE_FORWARDs
    it tries (it stops at the first refusal), and the kind (row of the bench table)."""

    name: str
    kind: str
    blocks: list[Block]
    start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    steps: int = 12
    lidar_only: bool = False  # only a LiDAR can see it (glass): the table says so


def _ray_boxes(origin: np.ndarray, dirs: np.ndarray, blocks: Sequence[Block]) -> np.ndarray:
    """Ray parameter (along ``dirs``) of the nearest hit of each ray on ``blocks``; inf = none.
    ``origin`` (3,), ``dirs`` (N, 3), world frame."""
    best = np.full(len(dirs), np.inf)
    for b in blocks:
        c, s = math.cos(b.yaw), math.sin(b.yaw)
        ox, oy = origin[0] - b.cx, origin[1] - b.cy
        o = np.array([c * ox + s * oy, -s * ox + c * oy, origin[2]])
        d = np.stack([c * dirs[:, 0] + s * dirs[:, 1], -s * dirs[:, 0] + c * dirs[:, 1], dirs[:, 2]], axis=1)
        d[np.abs(d) < 1e-12] = 1e-12  # parallel to a slab: its planes are at +-inf
        lo = np.array([-b.length / 2.0, -b.width / 2.0, b.z0])
        hi = np.array([b.length / 2.0, b.width / 2.0, b.z1])
        inv = 1.0 / d
        t1 = (lo - o) * inv
        t2 = (hi - o) * inv
        tmin = np.minimum(t1, t2).max(axis=1)
        tmax = np.maximum(t1, t2).min(axis=1)
        hit = (tmin <= tmax) & (tmin > 1e-6)
        best = np.where(hit & (tmin < best), tmin, best)
    return best


def render_depth(blocks: Sequence[Block], pose: tuple[float, float, float], k: Intrinsics, mount: CameraMount) -> np.ndarray:
    """Depth image (H, W) float32 m along the optical axis (0 = no return) of the camera ``mount``
    on a robot at world ``pose``; blocks with ``depth=False`` are not seen."""
    v, u = np.mgrid[0 : k.height, 0 : k.width].astype(np.float64)
    cx_, cy_, cz_ = np.ones_like(u), -(u - k.cx) / k.fx, -(v - k.cy) / k.fy  # camera_link per unit optical depth
    c, s = math.cos(mount.pitch), math.sin(mount.pitch)
    bx, bz = c * cx_ - s * cz_, s * cx_ + c * cz_
    x, y, th = pose
    ct, st = math.cos(th), math.sin(th)
    dirs = np.stack([(ct * bx - st * cy_).ravel(), (st * bx + ct * cy_).ravel(), bz.ravel()], axis=1)
    origin = np.array([x + ct * mount.x - st * mount.y, y + st * mount.x + ct * mount.y, mount.z])
    t = _ray_boxes(origin, dirs, [b for b in blocks if b.depth])
    t[~np.isfinite(t)] = 0.0
    return t.reshape(k.height, k.width).astype(np.float32)


def depth_frame(
    blocks: Sequence[Block], pose: tuple[float, float, float], k: Intrinsics, mount: CameraMount, rng: np.random.Generator | None
) -> np.ndarray:
    """:func:`render_depth` with the D435i's noise drawn from ``rng`` (1 mm x z^2 and 1 % dropouts;
    None = exact), (H, W) float32 m."""
    d = render_depth(blocks, pose, k, mount)
    if rng is not None:
        d = d + (d > 0) * rng.normal(0, 1e-3, d.shape).astype(np.float32) * d * d
        d[rng.random(d.shape) < 0.01] = 0.0
    return d


def lidar_cloud(
    blocks: Sequence[Block],
    pose: tuple[float, float, float],
    mount: LidarMount,
    max_m: float = 8.0,
    az_step_deg: float = 2.0,
    elevation_deg: tuple[float, float] = L1_ELEVATION_DEG,
) -> np.ndarray:
    """A simulated LiDAR sweep (N, 3) float32 in the sensor's frame, m
    (:meth:`~havln_robot.motion.lidar.LidarMount.sweep_rays`; by default the Go2's L1 hemisphere),
    returns up to ``max_m``; blocks with ``lidar=False`` are not seen."""
    d_s, origin, dirs = mount.sweep_rays(*pose, az_step_deg=az_step_deg, elevation_deg=elevation_deg)
    t = _ray_boxes(origin, dirs, [b for b in blocks if b.lidar])
    ok = np.isfinite(t) & (t <= max_m)
    return (d_s[ok] * t[ok, None]).astype(np.float32)


def _footprint_poly(pose: tuple[float, float, float], length: float, width: float) -> np.ndarray:
    return Block(pose[0], pose[1], length, width, 0.0, 1.0, pose[2]).corners()


def _overlap_depth(p: np.ndarray, q: np.ndarray) -> float:
    """Penetration (m) of two convex polygons (separating axes); <= 0 = apart by that much."""
    best = np.inf
    for poly in (p, q):
        for i in range(len(poly)):
            e = poly[(i + 1) % len(poly)] - poly[i]
            n = np.array([-e[1], e[0]]) / max(np.hypot(*e), 1e-12)
            a, b = p @ n, q @ n
            best = min(best, min(a.max() - b.min(), b.max() - a.min()))
    return float(best)


def floor_under(blocks: Sequence[Block], xy: np.ndarray) -> np.ndarray:
    """Top (m) of the highest floor block under each (N, 2) world point; -inf where none."""
    out = np.full(len(xy), -np.inf)
    for b in blocks:
        if not b.floor:
            continue
        c, s = math.cos(b.yaw), math.sin(b.yaw)
        dx, dy = xy[:, 0] - b.cx, xy[:, 1] - b.cy
        lx, ly = c * dx + s * dy, -s * dx + c * dy
        inside = (np.abs(lx) <= b.length / 2.0) & (np.abs(ly) <= b.width / 2.0)
        out = np.where(inside, np.maximum(out, b.z1), out)
    return out


@dataclass
class RunResult:
    """What happened in one scenario run.

    Attributes:
        contact: the footprint overlapped an obstacle >= :data:`CONTACT_MIN_HEIGHT_M` (or a person).
        fall: the footprint stood over a drop larger than :data:`GO2_MAX_STEP_M` between floor points
            5 cm apart along it, or over no floor (a walk down treads of a smaller rise is no fall).
        clearance_m: smallest gap between the footprint and an obstacle over the run, m (inf: none).
        travelled_m: forward distance travelled, m.
        outcomes: (action, outcome, detail) of each action.
        refused: the run ended on a refusal ("blocked before start").
    """

    contact: bool = False
    fall: bool = False
    clearance_m: float = math.inf
    travelled_m: float = 0.0
    outcomes: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        return bool(self.outcomes) and self.outcomes[-1][2].startswith(BLOCKED_DETAIL)


def go2_params(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """motion_node's parameters of config/go2.yaml (the real robot's profile) with ``overrides``."""
    from havln_robot.paths import config_dir
    from havln_robot.sim.closed_loop import _node_params

    p = _node_params(config_dir() / "go2.yaml", "motion_node")
    p.update(overrides or {})
    return p


def course_params(lidar: bool) -> dict[str, Any]:
    """motion_node's config/go2.yaml parameters for a course run: the 160 x 120 depth image taken whole
    (``depth_stride`` 1) and, with ``lidar``, the Go2's L1 on ``utlidar/cloud`` at go2.yaml's mount
    (else none configured)."""
    return go2_params({"depth_stride": 1, "lidar_topic": "utlidar/cloud" if lidar else ""})


def run(
    scene: HazardScene,
    seed: int = 0,
    lidar: bool = False,
    params: dict[str, Any] | None = None,
    actions: Sequence[str] | None = None,
) -> RunResult:
    """Drive motion_node's core (:class:`~havln_robot.motion.inputs.MotionCore`: the executor under
    the guard's input rules) through ``scene``, its streams at the live rates (module docstring).

    Args:
        scene: the scenario.
        seed: noise seed (depth noise ~ 1 mm x z^2, 1 % dropouts, start pose jitter 2 cm / 2 deg).
        lidar: also feed a simulated LiDAR cloud (the profile's ``lidar_*`` mount) on ``utlidar/cloud``.
        params: motion_node parameters (default :func:`course_params`); the LiDAR is fed when
            ``lidar`` is set, and judged (its silence refuses forward steps) when ``lidar_topic`` is set.
        actions: the actions to send (default ``scene.steps`` MOVE_FORWARDs, stopping at a refusal).
    """
    from havln_robot.motion.inputs import MotionCore

    p = course_params(lidar) if params is None else params
    rng = np.random.default_rng(seed)
    core = MotionCore(p, 0.0, warn_depth=lambda line: None)
    k = Intrinsics.from_hfov(DEPTH_W, DEPTH_H, DEPTH_HFOV_DEG)
    core.tracker.intrinsics = k
    lmount = LidarMount.from_params(p)
    sx, sy, sth = scene.start
    if seed:
        sx, sy, sth = sx + rng.normal(0, 0.02), sy + rng.normal(0, 0.02), sth + math.radians(rng.normal(0, 2.0))
    x, y, th = sx, sy, sth
    v = w = 0.0
    period = 1.0 / p["control_rate_hz"]
    fp = core.motion.cfg.footprint
    flen, fwid = 2.0 * fp.half_length, 2.0 * fp.half_width
    res = RunResult()
    todo = list(actions) if actions is not None else [A.MOVE_FORWARD] * scene.steps
    t = 0.0
    due = dict.fromkeys(("odom", "people", "camera", "lidar", "tick"), 0.0)
    dt_phys = 0.005
    running = False
    idle_until = 0.5  # the first frames come in before the first action
    floor0 = float(floor_under(scene.blocks, np.array([[sx, sy]]))[0])
    while t <= 120.0:
        blocks = [b.at(t) for b in scene.blocks]
        pose = (x, y, th)
        if t >= due["odom"]:
            due["odom"] += 1.0 / ODOM_HZ
            core.on_odom(t, pose, abs(v) + abs(w), t, t, (x, y, th, v, w))
            core.on_imu(t, t, th, None, (0.0, 0.0), t, t, (th, w, 0.0, 0.0))
        if t >= due["people"]:
            due["people"] += 1.0 / PEOPLE_HZ
            core.on_people(people_seen(blocks, t, pose), t, pose, tracks=True)
        if t >= due["camera"]:
            due["camera"] += 1.0 / CAMERA_HZ
            d = depth_frame(blocks, pose, k, core.mount, rng)
            core.tracker.add_depth(t, lambda d=d: d, k.width, k.height, stamp=t, raw_stamp=t)
        if lidar and t >= due["lidar"]:
            due["lidar"] += 1.0 / LIDAR_HZ
            core.tracker.add_cloud(t, lidar_cloud(blocks, pose, lmount), stamp=t)
        if t >= due["tick"] - 1e-9:
            due["tick"] = t + period
            if not running and t >= idle_until:
                if not todo:
                    break
                tick = core.start(todo.pop(0), t).tick
                running = True
            else:
                tick = core.tick(t)[0].tick
            for r in tick.results if tick is not None else ():
                res.outcomes.append((r.action, r.outcome.value if isinstance(r.outcome, Outcome) else str(r.outcome), r.detail))
                running = False
                idle_until = t + 0.3
                if r.detail.startswith(BLOCKED_DETAIL) and actions is None:
                    todo = []
            v, w = tick.cmd if tick is not None else (0.0, 0.0)
        # physics: the base follows the command (the driver's cmd_vel deadman is not modelled: worst case)
        x += v * math.cos(th) * dt_phys
        y += v * math.sin(th) * dt_phys
        th += w * dt_phys
        t += dt_phys
        res.travelled_m = max(res.travelled_m, math.hypot(x - sx, y - sy))
        measure(scene, t, (x, y, th), (flen, fwid), floor0, res)
    return res


def people_seen(blocks: Sequence[Block], t: float, pose: tuple[float, float, float]) -> list[Person]:
    """The people among ``blocks`` (already at time ``t``) as people_node reports them to a robot at
    world ``pose``: base_link position and velocity, from 1 s before they start to walk."""
    x, y, th = pose
    ct, st = math.cos(th), math.sin(th)
    out = []
    for b in blocks:
        if b.person and t >= b.t_start - 1.0:
            dx, dy = b.cx - x, b.cy - y
            mv = t >= b.t_start
            out.append(Person(ct * dx + st * dy, -st * dx + ct * dy, None, (ct * b.vx + st * b.vy) * mv, (-st * b.vx + ct * b.vy) * mv))
    return out


def measure(
    scene: HazardScene, t: float, pose: tuple[float, float, float], size: tuple[float, float], floor0: float, res: RunResult
) -> None:
    """Judge the footprint (``size``: length, width, m) at world ``pose`` at time ``t`` on the true
    geometry into ``res``: contact with an obstacle >= :data:`CONTACT_MIN_HEIGHT_M` (or a person),
    the clearance, and a fall (the floor under the footprint every 5 cm along it drops more than the
    Go2's step, or is missing). ``floor0``: the floor height at the start (for free-standing blocks)."""
    x, y, th = pose
    flen, fwid = size
    fpoly = _footprint_poly(pose, flen, fwid)
    for b in (b.at(t) for b in scene.blocks):
        if b.floor:
            continue
        under = float(floor_under(scene.blocks, np.array([[b.cx, b.cy]]))[0])
        base = under if np.isfinite(under) else floor0
        if b.z1 - max(b.z0, base) < CONTACT_MIN_HEIGHT_M and not b.person or b.z0 - base >= GO2_HEIGHT_M:
            continue
        pen = _overlap_depth(fpoly, b.corners())
        res.clearance_m = min(res.clearance_m, max(0.0, -pen))
        if pen > 1e-3:
            res.contact = True
    gx, gy = np.meshgrid(np.arange(-0.5 * flen, 0.5 * flen + 1e-9, 0.05), np.linspace(-0.45, 0.45, 3) * fwid, indexing="ij")
    c, s = math.cos(th), math.sin(th)
    fxy = np.stack([x + c * gx.ravel() - s * gy.ravel(), y + s * gx.ravel() + c * gy.ravel()], axis=1)
    fz = floor_under(scene.blocks, fxy).reshape(gx.shape)
    if not np.isfinite(fz).all() or (np.abs(np.diff(fz, axis=0)) > GO2_MAX_STEP_M + 1e-6).any():
        res.fall = True


#: Nose of the Go2 ahead of base_link (config/go2.yaml footprint 0.70 m long), m.
GO2_NOSE_M = 0.35


def box_scene(
    gap_m: float, height: float, width: float = 0.4, angle_deg: float = 0.0, depth: float = 0.4, lateral: float = 0.0
) -> HazardScene:
    """A box ``height`` x ``width`` (across) x ``depth`` (along) m turned ``angle_deg`` about its
    centre, its nearest point ``gap_m`` ahead of the robot's nose, ``lateral`` m to the left."""
    a = math.radians(angle_deg)
    probe = Block(0.0, 0.0, depth, width, 0.0, height, a)
    near = float(probe.corners()[:, 0].min())  # nearest corner's x relative to the centre
    b = Block(GO2_NOSE_M + gap_m - near, lateral, depth, width, 0.0, height, a)
    return HazardScene(
        f"box {height:.2f} m high, {width:.2f} m wide, {angle_deg:.0f} deg, from {gap_m:.2f} m", "box", [floor_block(-5.0, 12.0), b]
    )


def ledge_scene(gap_m: float, drop_m: float) -> HazardScene:
    """A floor ending ``gap_m`` ahead of the nose, the floor beyond ``drop_m`` m lower (a stage, a dock)."""
    edge = GO2_NOSE_M + gap_m
    return HazardScene(
        f"ledge {drop_m:.2f} m, edge {gap_m:.2f} m ahead", "ledge", [floor_block(-5.0, edge), floor_block(edge, 12.0, -drop_m)]
    )


def stairs_down_scene(gap_m: float, rise_m: float = 0.15, tread_m: float = 0.30, n: int = 6) -> HazardScene:
    """A flight of ``n`` steps down (``rise_m`` each, ``tread_m`` deep) starting ``gap_m`` ahead of the nose, no rail."""
    edge = GO2_NOSE_M + gap_m
    blocks = [floor_block(-5.0, edge)]
    for i in range(n):
        blocks.append(floor_block(edge + i * tread_m, edge + (i + 1) * tread_m, -(i + 1) * rise_m))
    blocks.append(floor_block(edge + n * tread_m, 12.0, -n * rise_m))
    return HazardScene(f"stairs down {n} x {rise_m:.2f} m, top {gap_m:.2f} m ahead", "stairs down", blocks, steps=8)


def table_scene(gap_m: float, top_z: float = 0.40, leg: float = 0.03) -> HazardScene:
    """A low table (0.8 x 0.6 m top at ``top_z`` m, legs ``leg`` m thick) ``gap_m`` ahead, in the path."""
    x0 = GO2_NOSE_M + gap_m
    b = [Block(x0 + 0.3, 0.0, 0.6, 0.8, top_z - 0.03, top_z)]
    for dx in (0.0, 0.6):
        for dy in (-0.38, 0.38):
            b.append(Block(x0 + dx + leg / 2, dy, leg, leg, 0.0, top_z))
    return HazardScene(f"low table top {top_z:.2f} m, {gap_m:.2f} m ahead", "table", [floor_block(-5.0, 12.0), *b])


def chair_scene(gap_m: float) -> HazardScene:
    """A chair: 0.45 x 0.45 m seat at 0.45 m on 2 cm legs, backrest on the far side, ``gap_m`` ahead."""
    x0 = GO2_NOSE_M + gap_m
    b = [Block(x0 + 0.225, 0.0, 0.45, 0.45, 0.42, 0.45), Block(x0 + 0.44, 0.0, 0.02, 0.45, 0.45, 0.9)]
    for dx in (0.01, 0.44):
        for dy in (-0.215, 0.215):
            b.append(Block(x0 + dx, dy, 0.02, 0.02, 0.0, 0.42))
    return HazardScene(f"chair with thin legs, {gap_m:.2f} m ahead", "chair", [floor_block(-5.0, 12.0), *b])


def glass_scene(gap_m: float) -> HazardScene:
    """A glass door (1 m wide, 2 m high, 1 cm thick) across the path ``gap_m`` ahead: no depth return."""
    x0 = GO2_NOSE_M + gap_m
    pane = Block(x0 + 0.005, 0.0, 0.01, 1.0, 0.0, 2.0, depth=False)
    return HazardScene(f"glass door {gap_m:.2f} m ahead", "glass door", [floor_block(-5.0, 12.0), pane], lidar_only=True)


def doorway_scene(width_m: float = 0.8, gap_m: float = 1.0) -> HazardScene:
    """A doorway ``width_m`` wide (0.1 m thick frame, wall either side) ``gap_m`` ahead: walked through."""
    x0 = GO2_NOSE_M + gap_m
    wall = 1.5
    b = [
        Block(x0 + 0.05, width_m / 2 + wall / 2, 0.1, wall, 0.0, 2.0),
        Block(x0 + 0.05, -width_m / 2 - wall / 2, 0.1, wall, 0.0, 2.0),
    ]
    return HazardScene(f"doorway {width_m:.2f} m, {gap_m:.2f} m ahead", "doorway", [floor_block(-5.0, 12.0), *b], steps=10)


def person_scene(cross_at_m: float = 1.5, speed: float = 1.5, t_start: float = 2.0) -> HazardScene:
    """A person (0.4 x 0.3 m, 1.7 m tall) stepping out from behind a corner 1 m to the right and
    crossing the path ``cross_at_m`` ahead of the start nose at ``speed`` m/s from ``t_start`` s."""
    x = GO2_NOSE_M + cross_at_m
    corner = Block(x - 0.7, -1.25, 1.0, 1.5, 0.0, 2.0)  # the wall the person steps out from behind
    person = Block(x, -0.9, 0.3, 0.4, 0.0, 1.7, vy=speed, t_start=t_start, person=True)
    return HazardScene(
        f"person stepping out at {speed:.1f} m/s, {cross_at_m:.1f} m ahead", "person", [floor_block(-5.0, 12.0), corner, person]
    )


def free_scene() -> HazardScene:
    """Open floor ahead: every step must be walked (false refusals)."""
    return HazardScene("open floor", "open floor", [floor_block(-5.0, 12.0)], steps=6)


def course(quick: bool = False) -> list[HazardScene]:
    """The safety course of ``havln-robot bench safety``: boxes 0.10-0.60 m high, 0.2-1.0 m wide,
    0-45 deg, from 0.15-3 m; ledges 0.1-1.0 m; stairs down; a low table; a chair; a glass door; a
    person stepping out at 1.5 m/s; 0.8 m doorways; open floor. ``quick``: a subset."""
    sc: list[HazardScene] = []
    heights = (0.10, 0.16, 0.30, 0.60) if not quick else (0.10, 0.30)
    for h in heights:
        for w, ang in ((0.2, 0.0), (0.4, 30.0), (1.0, 45.0)) if not quick else ((0.4, 30.0),):
            for gap in (0.15, 1.55, 3.0) if not quick else (0.15, 1.55):
                sc.append(box_scene(gap, h, w, ang))
    for drop in (0.1, 0.3, 0.5, 1.0) if not quick else (0.5,):
        for gap in (0.15, 1.55) if not quick else (1.55,):
            sc.append(ledge_scene(gap, drop))
    sc.append(stairs_down_scene(1.0))
    sc.append(table_scene(1.2))
    sc.append(chair_scene(1.2))
    sc.append(glass_scene(1.2))
    sc.append(person_scene())
    sc.append(doorway_scene(0.8))
    sc.append(free_scene())
    return sc
