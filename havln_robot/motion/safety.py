"""Collision avoidance checks (pure numpy): depth free space along the path, personal space
around people, and the person-detector interface.

Frames and units
----------------
All planar geometry is in ``base_link`` (REP 103: x forward, y left, metres), with heights
measured above the ground plane under the robot. The robot footprint is a ``length x width``
rectangle centred on ``base_link``. Depth images are in the camera optical frame (x right,
y down, z forward) and are projected with the pinhole intrinsics of ``camera_info`` and the
camera mount (:class:`CameraMount`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from havln_robot.camera import Intrinsics  # noqa: F401  (re-exported)

#: Largest angle step when sampling the footprint swept by a turn, rad (2 deg).
TURN_SAMPLE_RAD = math.radians(2.0)


@dataclass(frozen=True)
class CameraMount:
    """Pose of the depth camera relative to the ground point under ``base_link``.

    Attributes:
        x, y: position ahead of / left of base_link, m.
        z: height above the ground, m.
        pitch: elevation of the optical axis, rad (positive = looking up; REP 103 pitch is the
            negative of this).
    """

    x: float = 0.30
    y: float = 0.0
    z: float = 0.35
    pitch: float = 0.0


@dataclass(frozen=True)
class Footprint:
    """Robot footprint centred on base_link: a ``length`` (x) by ``width`` (y) rectangle, m -- or,
    when ``radius`` > 0, a disc of that radius (the embedded simulator and HA-VLN count contacts
    with a disc: ``havln_robot.sim.world.World.robot_radius``).
    """

    length: float = 0.70
    width: float = 0.31
    radius: float = 0.0

    @property
    def half_length(self) -> float:
        """Distance from base_link to the front (and back) of the footprint, m."""
        return self.radius if self.radius > 0 else self.length / 2.0

    @property
    def half_width(self) -> float:
        """Distance from base_link to the side of the footprint, m."""
        return self.radius if self.radius > 0 else self.width / 2.0

    def distance(self, px: np.ndarray, py: np.ndarray, reach: float = 0.0) -> np.ndarray:
        """Distance (m, 0 inside) from base_link points to the footprint swept ``reach`` m forward (>= 0)."""
        px, py = np.asarray(px, dtype=np.float64), np.asarray(py, dtype=np.float64)
        if self.radius > 0:
            dx = px - np.clip(px, 0.0, reach)
            return np.maximum(np.hypot(dx, py) - self.radius, 0.0)
        return _rect_distance(px, py, -self.half_length, self.half_length + reach, self.half_width)


@dataclass(frozen=True)
class Person:
    """A detected person in base_link: position ``x, y`` (m), ``human_id`` when known, and ground
    velocity ``vx, vy`` (m/s, expressed in base_link axes; 0 when unknown, e.g. ground truth)."""

    x: float
    y: float
    human_id: int | None = None
    vx: float = 0.0
    vy: float = 0.0


@dataclass
class Obstacles:
    """What the robot currently knows about its surroundings (all in the *current* base_link).

    Attributes:
        points: (N, 2) float array of obstacle points (x, y), m, already filtered to the blocking
            height band; ``None`` when no fresh depth image is available.
        people: detected people.
        weights: optional (N,) float array: how many depth points each entry of ``points`` stands
            for (the batch simulator's analytic wall samples, :mod:`havln_robot.sim.closed_loop`,
            weigh each sample by the depth pixels the camera would return there); ``None`` = one
            point each (a depth image). Every count against ``min_points`` uses these weights, so
            the same rule judges rendered depth and analytic walls.
        recalled: people no longer in the fresh input but seen within ``contact_recall_s`` (last
            position moved into the current base_link); only the classification of a bump
            (stall / jolt) reads them, never the motion checks.
        floor: where there is floor to stand on: (N, 2) base_link points -> (N,) floor heights, m,
            NaN where none is known (:meth:`FloorMemory.heights`); None = not checked (the batch
            simulator's world has no drop-offs but stairs, which its terrain samples cover).
    """

    points: np.ndarray | None = None
    people: list[Person] = field(default_factory=list)
    weights: np.ndarray | None = None
    recalled: list[Person] = field(default_factory=list)
    floor: Callable[[np.ndarray], np.ndarray] | None = None

    def count(self, mask: np.ndarray) -> float:
        """Depth points selected by the boolean ``mask`` over :attr:`points` (weighted when :attr:`weights` is set)."""
        if self.weights is None:
            return float(np.count_nonzero(mask))
        return float(self.weights[mask].sum())


@dataclass(frozen=True)
class Hazard:
    """Why a motion is (or became) unsafe.

    Attributes:
        type: ``"human"`` or ``"static"``.
        source: ``"depth"``, ``"people"``, ``"stall"`` or ``"jolt"``.
        distance_m: clearance between the footprint and the hazard, m (0 for contact).
        human_id: id of the person when known.
        detail: one-line explanation.
        contact: True when something already touches the robot (a person within their body
            radius of the footprint, an IMU jolt, a stall under command); False when the motion
            is refused or stopped *before* contact (clearance or personal space would be violated).
    """

    type: str
    source: str
    distance_m: float
    human_id: int | None = None
    detail: str = ""
    contact: bool = False


def rebase_points(pts: np.ndarray | None, from_pose: tuple[float, float, float], to_pose: tuple[float, float, float]) -> np.ndarray | None:
    """Points given in the base_link of odom pose ``from_pose``, expressed in the base_link of ``to_pose``.

    A depth frame (or a person detection) describes the scene as it was when it was captured;
    the robot has moved since (turning at 0.8 rad/s, a 70 ms old frame is 3 deg off, and a wall
    2 m away sits 10 cm to one side of where the frame puts it). Both poses are odom-frame
    ``(x m, y m, yaw rad)``; the result is exact for a rigid scene.

    Args:
        pts: (N, 2) or (N, >=2) float points (x forward, y left, m); extra columns are kept as they are.
            None passes through.
        from_pose: the odom pose the points were measured at (the frame's capture time).
        to_pose: the odom pose to express them at (now).

    Returns:
        Same shape and dtype as ``pts`` (a new array; ``pts`` itself when the poses are equal).
    """
    if pts is None or not len(pts) or from_pose == to_pose:
        return pts
    x0, y0, a0 = from_pose
    x1, y1, a1 = to_pose
    # the old base_link's origin and axes in the new one
    dx, dy = x0 - x1, y0 - y1
    c1, s1 = math.cos(a1), math.sin(a1)
    ox, oy = c1 * dx + s1 * dy, -s1 * dx + c1 * dy
    da = a0 - a1
    c, s = math.cos(da), math.sin(da)
    out = np.array(pts, copy=True)
    px, py = pts[:, 0], pts[:, 1]
    out[:, 0] = ox + c * px - s * py
    out[:, 1] = oy + s * px + c * py
    return out


def rebase_person(p: Person, from_pose: tuple[float, float, float], to_pose: tuple[float, float, float]) -> Person:
    """A :class:`Person` seen from odom pose ``from_pose`` as seen from ``to_pose`` (position moved, velocity rotated)."""
    if from_pose == to_pose:
        return p
    xy = rebase_points(np.array([[p.x, p.y]]), from_pose, to_pose)
    da = from_pose[2] - to_pose[2]
    c, s = math.cos(da), math.sin(da)
    return Person(float(xy[0, 0]), float(xy[0, 1]), p.human_id, c * p.vx - s * p.vy, s * p.vx + c * p.vy)


def depth_to_points(
    depth_m: np.ndarray, k: Intrinsics, mount: CameraMount, stride: int = 4, min_m: float = 0.1, max_m: float = 4.0
) -> np.ndarray:
    """Project a depth image to 3-D points in the ground frame under base_link.

    Args:
        depth_m: (H, W) depth along the optical axis, metres (float); 0 / NaN / inf = invalid.
            A 16UC1 image must be converted from millimetres first.
        k: pinhole intrinsics of the (aligned) depth image.
        mount: camera pose relative to the robot.
        stride: use every ``stride``-th pixel in both directions.
        min_m: readings at or below this are invalid, m.
        max_m: readings at or beyond this are invalid, m.

    Returns:
        (N, 3) float32 array of (x forward, y left, z up above the ground), m.

    Raises:
        ValueError: ``depth_m`` is not 2-D.
    """
    if depth_m.ndim != 2:
        raise ValueError(f"depth image must be (H, W), got shape {depth_m.shape}")
    s = max(1, int(stride))
    d = np.asarray(depth_m[::s, ::s], dtype=np.float32)
    v, u = np.mgrid[0 : depth_m.shape[0] : s, 0 : depth_m.shape[1] : s]
    ok = np.isfinite(d) & (d > min_m) & (d < max_m)
    z = d[ok]
    xo = (u[ok].astype(np.float32) - k.cx) * z / k.fx  # optical x (right)
    yo = (v[ok].astype(np.float32) - k.cy) * z / k.fy  # optical y (down)
    # optical -> camera_link (x fwd, y left, z up), then elevation about y, then mount offset
    cx_, cy_, cz_ = z, -xo, -yo
    c, sn = math.cos(mount.pitch), math.sin(mount.pitch)
    x = c * cx_ - sn * cz_ + mount.x
    zz = sn * cx_ + c * cz_ + mount.z
    y = cy_ + mount.y
    return np.stack([x, y, zz], axis=1).astype(np.float32)


#: Heights above the ground (m) at which a remembered cell is looked for in a depth image: the
#: lowest obstacle band, a knee, the band's top. A ray through a low one that reaches past the cell
#: usually ends on the floor behind it -- the usual evidence that a cell is free again.
FREE_SPACE_PROBE_HEIGHTS_M = (0.08, 0.3, 0.55)


def depth_free_space(
    depth_m: np.ndarray, k: Intrinsics, mount: CameraMount, min_m: float, margin_m: float = 0.05
) -> Callable[[np.ndarray], np.ndarray]:
    """Free-space evidence from a depth image: which ground-frame points the camera saw THROUGH.

    A point counts as seen-through when, at one of :data:`FREE_SPACE_PROBE_HEIGHTS_M` above its
    ground position, it projects inside the image onto a VALID depth reading (finite, above
    ``min_m``) that reaches at least ``margin_m`` short of it along the optical axis. No reading
    (min-Z, a dark or shiny surface, nothing within range: 0 / NaN), a nearer reading (something in
    front, e.g. a person) or a point outside the image is no evidence: the obstacle may still be
    there. Readings at or beyond ``depth_max_m`` are long rays and do count.

    Args:
        depth_m: (H, W) depth along the optical axis, m; 0 / NaN = no reading.
        k: intrinsics of ``depth_m``.
        mount: the camera pose (with the total pitch).
        min_m: readings at or below this are invalid, m (motion_node's ``depth_min_m``).
        margin_m: how far short of the point a reading may end and still pass it, m.

    Returns:
        ``free(points)``: (N, 2+) base_link ground-frame points (x, y[, z]) -> (N,) bool.
    """
    d = np.asarray(depth_m, dtype=np.float32)
    h, w = d.shape
    c, sn = math.cos(mount.pitch), math.sin(mount.pitch)

    def free(points: np.ndarray) -> np.ndarray:
        pts = np.asarray(points, dtype=np.float64)
        out = np.zeros(len(pts), dtype=bool)
        if not len(pts):
            return out
        dx, dy = pts[:, 0] - mount.x, pts[:, 1] - mount.y
        for hz in FREE_SPACE_PROBE_HEIGHTS_M:
            dz = hz - mount.z
            zo = c * dx + sn * dz  # along the optical axis (inverse of depth_to_points)
            up = -sn * dx + c * dz
            with np.errstate(divide="ignore", invalid="ignore"):
                u = np.rint(k.cx - k.fx * dy / zo)
                v = np.rint(k.cy - k.fy * up / zo)
            ok = (zo > 1e-3) & (u >= 0) & (u <= w - 1) & (v >= 0) & (v <= h - 1)
            if not ok.any():
                continue
            r = np.zeros(len(pts), dtype=np.float32)
            r[ok] = d[v[ok].astype(np.int64), u[ok].astype(np.int64)]
            out |= ok & np.isfinite(r) & (r > min_m) & (r >= zo - margin_m)
        return out

    return free


#: Ground grid of the climbable-terrain rule, m (5 cm: a D435i depth pixel at stride 4 covers
#: 1.7 cm at 2 m, so a wall's 5 cm column holds its whole height; a 32 deg stair slope rises 3 cm
#: across one cell). Shared by motion_node (rendered / real depth) and the batch simulator's
#: analytic terrain (:mod:`havln_robot.sim.closed_loop`).
TERRAIN_CELL_M = 0.05

#: The Go2's climbable step, m: Unitree's Go2 specification gives a maximum climbing (step)
#: height of about 0.15-0.16 m; motion_node's ``max_step_height_m`` (default 0.16).
GO2_MAX_STEP_M = 0.16

#: The Go2's climbable slope, rad: Unitree's Go2 specification gives a maximum climbing angle of
#: about 40 deg. Used only for ground the camera cannot see (the blind zone under its field of
#: view): a surface first seen there is taken as reachable when no steeper than this.
GO2_MAX_SLOPE_RAD = math.radians(40.0)


#: Cells whose top is at most this above the ground under the robot are floor (a sill, a rug), m;
#: higher ground-like cells must belong to a surface that visibly rises (:func:`climbable_mask`).
TERRAIN_RAISED_M = 0.05

#: How much a raised surface must rise within what the camera sees of it to be a flight of stairs
#: or a ramp rather than the flat top of a box or platform, m. A stair shows at least its next
#: tread (a riser of 0.12-0.19 m above the one before, treads 0.25-0.30 m deep); a box's top is
#: one flat level (D435i noise at 2 m is ~2 cm), so half the Go2's step separates them.
STAIR_MIN_RISE_M = 0.08

#: Fewest level cells that must lie :data:`STAIR_MIN_RISE_M` below a raised surface's top for it to
#: rise: a tread (0.25-0.30 m deep, 0.6 m or more wide) or a ramp shows dozens; a box face seen at an
#: angle leaves slivers -- a cell holding a pixel or two of the face, level by itself -- along its
#: edge, which alone made a box top a flight (0.30 m box at 30 deg approached from 1.55 m: entered).
STAIR_MIN_TREAD_CELLS = 4

#: ... or fewer cells (2 or more) holding at least this many depth points together: a tread seen
#: close and across (beside the robot halfway up a flight, 2-3 cells of a tread hold ~100 points at
#: the nodes' depth stride of 4) is a surface; a sliver of a box face holds a pixel or two per cell.
STAIR_MIN_TREAD_POINTS = 24

#: A cell is level (a tread, a box top, a ramp rising 3 cm per 5 cm cell at 32 deg) when its points
#: span at most this in height, m; the rise of a raised surface is measured on its level cells.
LEVEL_CELL_M = 0.04

#: A flat raised surface seen over more than this area is a floor level, not a box top, m^2: the
#: boxes the body must avoid are up to 1.0 m wide and 0.6 m deep; a landing or a storey is larger.
BOX_MAX_AREA_M2 = 0.6

#: A flat raised surface lower than this is a sill or a low step the feet cross, not an obstacle,
#: m: the lowest obstacle the body must avoid is 0.10 m (a box, a kerb); surfaces of 0.10-0.16 m
#: are within the Go2's step but are kept off on the safe side unless they rise as stairs do.
LOW_SURFACE_M = 0.09


def blind_zone_m(k: Intrinsics, mount: CameraMount) -> float:
    """Distance ahead of base_link within which the camera cannot see the ground, m: where the
    lower edge of the image meets the floor (``inf`` when the lower edge looks at or above the
    horizon). A level D435i at 0.41 m (config/sim.yaml, 640x480) sees the floor from 1.10 m on."""
    lower = math.atan2(max(float(k.height) - 1.0 - k.cy, 0.0), k.fy) - mount.pitch  # below the horizon, rad
    if lower <= 1e-6:
        return math.inf
    return mount.x + mount.z / math.tan(lower)


def _step_components(cells: np.ndarray, top: np.ndarray, step_m: float) -> np.ndarray:
    """Connected components of the grid ``cells`` (bool (h, w)): 8-neighbours whose ``top`` (m)
    differ by at most ``step_m``. Returns (h * w,) int labels (cells outside ``cells`` are singletons)."""
    h, w = cells.shape
    idx = np.arange(h * w).reshape(cells.shape)
    rows, cols = [], []
    for di, dj in ((1, 0), (0, 1), (1, 1), (1, -1)):  # each undirected 8-neighbour edge once
        a = (slice(0, h - di), slice(max(0, -dj), w - max(0, dj)))
        b = (slice(di, h), slice(max(0, dj), w - max(0, -dj) if dj < 0 else w))
        with np.errstate(invalid="ignore"):
            e = cells[a] & cells[b] & (np.abs(top[a] - top[b]) <= step_m)
        rows.append(idx[a][e])
        cols.append(idx[b][e])
    r, c = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(h * w, h * w))
    return connected_components(graph, directed=False)[1]


def climbable_mask(
    points: np.ndarray,
    step_m: float,
    cell_m: float = TERRAIN_CELL_M,
    blind_m: float = 0.0,
    max_slope_rad: float = GO2_MAX_SLOPE_RAD,
    known: np.ndarray | None = None,
    risen: np.ndarray | None = None,
) -> np.ndarray:
    """Which points lie on ground the robot can walk onto (stairs, ramps, sills), not on obstacles.

    The rule (one implementation for depth images and the batch simulator's analytic terrain):
    the points are binned into ``cell_m`` ground cells; a cell is *ground* when it holds no
    vertical face taller than a step (``max z - min z <= step_m``) and it is reachable from the
    floor the robot stands on (cells whose top is at most ``step_m`` above it) through
    8-neighbouring ground cells whose tops differ by at most ``step_m`` each. A staircase or
    ramp rises a few cm per cell and is ground all the way up; a wall, a person's leg or a
    furniture face spans more than a step inside one cell and stays an obstacle; a horizontal
    edge hanging in the air (a bench seat, a table apron) seen beyond visible floor is not
    reachable and stays one too. The ground under the camera's field of view is not seen
    (``blind_m``, :func:`blind_zone_m`): a step-free cell first seen within two cells of it is
    taken as reachable when it is no higher than a ``max_slope_rad`` climb from base_link (the
    foot of a staircase seen from 0.3 m before it). Last, a raised surface (cells above
    :data:`TERRAIN_RAISED_M`, connected by steps) counts as terrain only when it visibly rises
    (at least :data:`STAIR_MIN_TREAD_CELLS` of its level cells lie :data:`STAIR_MIN_RISE_M` below
    its top: a flight's next tread, a ramp -- not a sliver of a box face) or stays
    below :data:`LOW_SURFACE_M`; the flat top of a box or platform is an obstacle even when its
    face is within a step (the safe side for 0.10-0.16 m boxes) or its foot is in the blind zone.

    Args:
        points: (N, 3) x, y, z in base_link, z above the ground under the robot, m (all valid
            depth points, floor included: they seed the floor cells).
        step_m: the largest step the body climbs, m (:data:`GO2_MAX_STEP_M`).
        cell_m: grid cell, m.
        blind_m: ground closer than this to base_link is not seen by the camera, m (0 = all seen,
            as the batch simulator's analytic terrain).
        max_slope_rad: climbable slope for the blind zone's seeds, rad (:data:`GO2_MAX_SLOPE_RAD`).
        known: optional (N,) bool: the point's cell was judged raised terrain in an earlier frame
            (the caller's memory: the landing of a flight whose treads are now under the camera's
            blind zone); a raised surface holding one is terrain without rising in this frame.
        risen: optional (N,) bool array, filled in place: the point lies on a raised surface that
            rose in this frame (what a caller remembers as ``known``; never a box top).

    Returns:
        (N,) bool, True where the point's cell is climbable ground.
    """
    n = len(points)
    if n == 0:
        return np.zeros(0, dtype=bool)
    ij = np.floor(np.asarray(points[:, :2], dtype=np.float64) / cell_m).astype(np.int64)
    lo = ij.min(axis=0)
    ij -= lo
    shape = tuple(int(v) + 1 for v in ij.max(axis=0))
    flat = ij[:, 0] * shape[1] + ij[:, 1]
    z = np.asarray(points[:, 2], dtype=np.float64)
    top = np.full(shape[0] * shape[1], -np.inf)
    bottom = np.full(shape[0] * shape[1], np.inf)
    np.maximum.at(top, flat, z)
    np.minimum.at(bottom, flat, z)
    count = np.bincount(flat, minlength=shape[0] * shape[1])
    top, bottom = top.reshape(shape), bottom.reshape(shape)
    seen = np.isfinite(top)
    flat_cell = seen & (top - bottom <= step_m)
    ground = flat_cell & (top <= step_m)
    if blind_m > 0:
        ci = (np.arange(shape[0]) + lo[0] + 0.5) * cell_m
        cj = (np.arange(shape[1]) + lo[1] + 0.5) * cell_m
        r = np.hypot(ci[:, None], cj[None, :])
        reach = min(blind_m, 1e6) + 2.0 * cell_m
        ground |= flat_cell & (r <= reach) & (top <= step_m + math.tan(max_slope_rad) * r)
    cand = flat_cell & ~ground
    if cand.any():
        # reachable = in a connected component (8-neighbouring flat cells whose tops differ by at
        # most a step) that holds a seed: the fixed point of growing the ground one ring at a time
        label = _step_components(flat_cell, top, step_m)
        seeded = np.zeros(label.max() + 1, dtype=bool)
        seeded[label[ground.reshape(-1)]] = True
        ground = (flat_cell.reshape(-1) & seeded[label]).reshape(shape)
    # a raised surface is terrain only when it visibly rises: a single box or platform top (flat,
    # one riser above the floor) is an obstacle however low its face, a flight or ramp is not
    raised = ground & (top > TERRAIN_RAISED_M)
    if raised.any():
        h, w = shape
        label = _step_components(raised, top, step_m)
        hi = np.full(label.max() + 1, -np.inf)
        t = top.reshape(-1)
        r = raised.reshape(-1)
        # the rise is measured on level cells only (a tread, a ramp's 3 cm per cell): a box face
        # seen from afar splits across cells whose tops climb to the box top like steps
        lv = r & ((top - bottom).reshape(-1) <= LEVEL_CELL_M)
        np.maximum.at(hi, label[lv], t[lv])
        # the rise counts only where several level cells lie below the top (a tread, not a face sliver)
        with np.errstate(invalid="ignore"):
            below = lv & (t <= hi[label] - STAIR_MIN_RISE_M)
        cells_below = np.bincount(label[below], minlength=label.max() + 1)
        pts_below = np.bincount(label[below], weights=count.reshape(-1)[below], minlength=label.max() + 1)
        rose_c = (cells_below >= STAIR_MIN_TREAD_CELLS) | ((cells_below >= 2) & (pts_below >= STAIR_MIN_TREAD_POINTS))
        top_all = np.full(label.max() + 1, -np.inf)
        np.maximum.at(top_all, label[r], t[r])
        # the surface's seen area: larger than any box top, it is a floor level (a landing, a storey
        # reached by a flight the camera does not see now)
        area = np.bincount(label[r], minlength=label.max() + 1) * cell_m * cell_m
        with np.errstate(invalid="ignore"):
            rising = rose_c | (top_all < LOW_SURFACE_M) | (area > BOX_MAX_AREA_M2)
        if known is not None:
            kc = np.zeros(h * w, dtype=bool)
            kc[flat[np.asarray(known, dtype=bool)]] = True
            rising[label[r & kc]] = True
        ground = (ground.reshape(-1) & (~r | rising[label])).reshape(shape)
        if risen is not None:  # raised cells of surfaces that rose in this frame: the caller's memory
            risen[:] = (r & rose_c[label])[flat]
    return ground.reshape(-1)[flat]


def obstacle_points(
    points: np.ndarray,
    min_height: float,
    max_height: float,
    keep_z: bool = False,
    step_m: float | None = None,
    blind_m: float = 0.0,
) -> np.ndarray:
    """The points that block the body: height in ``[min_height, max_height]`` (m) and, with
    ``step_m``, not on climbable ground (:func:`climbable_mask`: stairs and ramps the Go2 walks
    up are terrain, not obstacles). (N, 2) xy, or (N, 3) xyz with ``keep_z``.

    Args:
        points: (N, 3) base_link points (z above the ground under the robot), m, e.g. from
            :func:`depth_to_points` (floor points included).
        min_height: lowest blocking height above the ground, m.
        max_height: highest blocking height above the ground, m.
        keep_z: keep the z column.
        step_m: the climbable step height, m; None = every point in the band blocks.
        blind_m: the camera's blind zone, m (:func:`blind_zone_m`; :func:`climbable_mask`).
    """
    m = (points[:, 2] >= min_height) & (points[:, 2] <= max_height)
    if step_m is not None and m.any():
        m &= ~climbable_mask(points, step_m, blind_m=blind_m)
    return np.ascontiguousarray(points[m, : 3 if keep_z else 2])


def _who(p: Person) -> str:
    return "a person" if p.human_id is None else f"person {p.human_id}"


def _rect_distance(px: np.ndarray, py: np.ndarray, x0: float, x1: float, hw: float) -> np.ndarray:
    """Distance from points to the axis-aligned rectangle [x0, x1] x [-hw, hw] (0 inside)."""
    dx = np.maximum(np.maximum(x0 - px, px - x1), 0.0)
    dy = np.maximum(np.abs(py) - hw, 0.0)
    return np.hypot(dx, dy)


def forward_hazard(
    obs: Obstacles,
    fp: Footprint,
    distance: float,
    front_margin: float,
    side_margin: float,
    personal_space: float,
    min_points: int,
    step_down_m: float = GO2_MAX_STEP_M,
) -> Hazard | None:
    """Check the corridor swept by a straight move of ``distance`` metres (negative = backwards).

    Static: depth points inside ``[nose, nose + |distance| + front_margin] x [-(w/2 + side_margin),
    w/2 + side_margin]`` (mirrored for backwards; points inside the body itself are ignored; for a
    disc footprint the corridor is the disc grown by ``side_margin`` swept to the same reach);
    at least ``min_points`` of them block. Humans: a person closer than ``personal_space`` to the
    swept footprint blocks when the move brings the footprint closer to them than it is now.
    Floor: with :attr:`Obstacles.floor`, a forward move needs seen floor no lower than
    ``step_down_m`` per slice along its path (:func:`floor_hazard`).

    Returns:
        The nearest :class:`Hazard`, or None when the path is free.
    """
    hazards: list[Hazard] = []
    hl, hw = fp.half_length, fp.half_width
    sgn = 1.0 if distance >= 0 else -1.0
    reach = abs(distance)
    if obs.points is not None and len(obs.points):
        px, py = obs.points[:, 0] * sgn, obs.points[:, 1]
        if fp.radius > 0:  # capsule: the disc grown by side_margin, swept to reach + front_margin
            ext = reach + max(front_margin - side_margin, 0.0)
            inside = (
                (px >= 0.0) & (np.hypot(px - np.clip(px, 0.0, ext), py) <= fp.radius + side_margin) & (np.hypot(px, py) >= fp.radius - 0.05)
            )
        else:
            inside = (px >= hl - 0.05) & (px <= hl + reach + front_margin) & (np.abs(py) <= hw + side_margin)
        n_in = obs.count(inside)
        if n_in >= min_points:
            gap = float(max(0.0, px[inside].min() - hl))
            hazards.append(Hazard("static", "depth", gap, None, f"{n_in:,.0f} depth points {gap:.2f} m ahead of the footprint"))
    for p in obs.people:
        x, y = p.x * sgn, p.y
        now = float(fp.distance(x, y))
        swept = float(fp.distance(x, y, reach))
        if swept < personal_space and swept < now - 1e-3:
            hazards.append(
                Hazard(
                    "human",
                    "people",
                    swept,
                    p.human_id,
                    f"{_who(p)} would come {swept:.2f} m from the footprint (personal space {personal_space:.2f} m)",
                )
            )
    if obs.floor is not None:
        hz = floor_hazard(obs.floor, fp, distance, front_margin, step_down_m)
        if hz is not None:
            hazards.append(hz)
    return min(hazards, key=lambda h: h.distance_m) if hazards else None


def turn_hazard(obs: Obstacles, fp: Footprint, angle: float, margin: float, person_radius: float, min_points: int) -> Hazard | None:
    """Check the area swept by turning in place by ``angle`` rad (CCW positive); always free for a disc.

    The footprint, grown by ``margin``, is sampled every 2 deg from 0 to ``angle``; ``min_points``
    depth points inside it (outside the current footprint) block. A person whose body
    (``person_radius``) would come within ``margin`` of the swept footprint -- and closer than now --
    blocks too.

    Returns:
        The nearest :class:`Hazard`, or None when the turn is free.
    """
    if fp.radius > 0:
        return None  # a disc turning in place sweeps no new area
    hl, hw = fp.half_length, fp.half_width
    n = max(1, math.ceil(abs(angle) / TURN_SAMPLE_RAD))
    angles = np.linspace(0.0, angle, n + 1)
    hazards: list[Hazard] = []
    if obs.points is not None and len(obs.points):
        px, py = obs.points[:, 0], obs.points[:, 1]
        body = (np.abs(px) <= hl) & (np.abs(py) <= hw)
        hit = np.zeros(len(px), dtype=bool)
        for a in angles:
            c, s = math.cos(a), math.sin(a)
            rx, ry = c * px + s * py, -s * px + c * py  # point in the body frame rotated by a
            hit |= (np.abs(rx) <= hl + margin) & (np.abs(ry) <= hw + margin)
        hit &= ~body
        n_hit = obs.count(hit)
        if n_hit >= min_points:
            gap = float(_rect_distance(px[hit], py[hit], -hl, hl, hw).min())
            hazards.append(Hazard("static", "depth", gap, None, f"{n_hit:,.0f} depth points inside the swept footprint"))
    for p in obs.people:
        now = float(_rect_distance(np.array([p.x]), np.array([p.y]), -hl, hl, hw)[0])
        best = now
        for a in angles:
            c, s = math.cos(a), math.sin(a)
            rx, ry = c * p.x + s * p.y, -s * p.x + c * p.y
            best = min(best, float(_rect_distance(np.array([rx]), np.array([ry]), -hl, hl, hw)[0]))
        if best < person_radius + margin and best < now - 1e-3:
            hazards.append(
                Hazard(
                    "human",
                    "people",
                    max(0.0, best - person_radius),
                    p.human_id,
                    f"turn would bring the footprint within {best:.2f} m of {_who(p)}",
                )
            )
    return min(hazards, key=lambda h: h.distance_m) if hazards else None


def contact_hazard(obs: Obstacles, fp: Footprint, person_radius: float) -> Hazard | None:
    """A person already touching the current footprint (centre within ``person_radius``), or None."""
    for p in obs.people:
        d = float(fp.distance(p.x, p.y))
        if d < person_radius:
            return Hazard(
                "human",
                "people",
                max(0.0, d - person_radius),
                p.human_id,
                f"{_who(p)} in contact ({d:.2f} m from the footprint)",
                contact=True,
            )
    return None


#: Sampling step of :func:`forecast_hazard` in time, s (at 1.5 m/s a person moves 0.15 m per step).
FORECAST_DT_S = 0.1
#: People slower than this are left to the current-position checks, m/s (tracker jitter of a standing person).
FORECAST_MIN_SPEED = 0.2
#: Longest forecast, s: the check runs again every control tick, and a constant-velocity guess
#: further out (a 10 s panorama sweep) refuses motions for people who will have turned long before.
FORECAST_MAX_S = 3.0


def forecast_hazard(
    people: list[Person],
    fp: Footprint,
    duration_s: float,
    margin_s: float,
    clearance: float,
    distance: float = 0.0,
    angle: float = 0.0,
    dt: float = FORECAST_DT_S,
    max_s: float = FORECAST_MAX_S,
) -> Hazard | None:
    """Would a moving person's constant-velocity forecast cross the footprint swept by an action?

    The robot is modelled as moving uniformly through the action: at time ``tau`` in
    ``[0, duration_s]`` base_link has advanced ``distance * tau / duration_s`` (m) along x and
    turned ``angle * tau / duration_s`` (rad, CCW), and holds the end pose until
    ``duration_s + margin_s``. Each person with speed >= :data:`FORECAST_MIN_SPEED` is predicted at
    ``(x + vx tau, y + vy tau)``. A person blocks when their predicted distance to the footprint
    at some ``tau`` falls below ``clearance`` (m; motion_node passes the personal space for moves
    and person radius + turn margin for turns) and below their current distance (someone walking
    away never blocks).

    Args:
        people: people in the action's start base_link (x forward, y left, m; vx, vy m/s).
        fp: robot footprint.
        duration_s: expected duration of the action, s (>= 0).
        margin_s: extra forecast horizon after the action, s (>= 0).
        clearance: distance that must stay free, m.
        distance: forward travel of the action, m (negative = backwards).
        angle: rotation of the action, rad.
        dt: time step of the forecast, s.
        max_s: the forecast ends at ``min(duration_s + margin_s, max_s)``, s.

    Returns:
        The earliest :class:`Hazard` (``source="forecast"``), or None.
    """
    movers = [p for p in people if math.hypot(p.vx, p.vy) >= FORECAST_MIN_SPEED]
    if not movers:
        return None
    dur = max(0.0, float(duration_s))
    horizon = min(dur + max(0.0, float(margin_s)), max(0.0, float(max_s)))
    taus = np.arange(0.0, horizon + 1e-9, max(dt, 1e-3))
    frac = np.clip(taus / dur, 0.0, 1.0) if dur > 0 else np.ones_like(taus)
    rx, ryaw = distance * frac, angle * frac
    c, s = np.cos(ryaw), np.sin(ryaw)
    found: list[tuple[float, Hazard]] = []
    for p in movers:
        wx, wy = p.x + p.vx * taus - rx, p.y + p.vy * taus  # person relative to the moving base_link origin
        bx, by = c * wx + s * wy, -s * wx + c * wy  # ... in the moving base_link axes
        d = np.asarray(fp.distance(bx, by))
        now = float(fp.distance(p.x, p.y))
        hit = np.nonzero((d < clearance) & (d < now - 1e-3))[0]
        if len(hit):
            i = int(hit[0])
            detail = (
                f"{_who(p)} walking at {math.hypot(p.vx, p.vy):.1f} m/s is forecast {float(d[i]):.2f} m from the footprint "
                f"in {taus[i]:.1f} s (clearance {clearance:.2f} m)"
            )
            found.append((float(taus[i]), Hazard("human", "forecast", float(d[i]), p.human_id, detail)))
    return min(found, key=lambda f: f[0])[1] if found else None


@runtime_checkable
class PersonDetector(Protocol):
    """Pluggable person detector for the real robot (in sim, havln/people carries ground truth).

    An implementation is chosen by name among the known ones (:func:`load_person_detector`: shipped,
    registered in-process, or an installed entry point), constructed without arguments, and called on each colour + aligned depth frame pair.
    """

    def detect(self, rgb: np.ndarray, depth_m: np.ndarray, k: Intrinsics, mount: CameraMount) -> list[Person]:
        """Detect people.

        Args:
            rgb: (H, W, 3) uint8 colour image.
            depth_m: (H, W) float32 depth aligned to ``rgb``, metres (0 = invalid).
            k: intrinsics of both images.
            mount: camera pose relative to base_link.

        Returns:
            People in base_link (x forward, y left, m), ``human_id`` when a tracker provides one.
        """
        ...


#: Entry-point group through which an installed package offers a :class:`PersonDetector`
#: (``[project.entry-points."havln_robot.person_detectors"] my_detector = "pkg.mod:Class"``).
PERSON_DETECTOR_GROUP = "havln_robot.person_detectors"

#: Detectors registered in-process (:func:`register_person_detector`): name -> factory.
_REGISTERED: dict[str, Callable[[], PersonDetector]] = {}


def register_person_detector(name: str, factory: Callable[[], PersonDetector]) -> None:
    """Offer ``factory`` (called without arguments) as the person detector ``name``.

    For Python code that embeds motion_node (a test, a lab's own launcher); a deployment installs
    its detector as an entry point of :data:`PERSON_DETECTOR_GROUP` instead.

    Raises:
        ValueError: ``name`` is empty or contains ``:`` (the old module path form).
    """
    if not name or ":" in name:
        raise ValueError(f"person detector name {name!r}: a plain name without ':'")
    _REGISTERED[name] = factory


def unregister_person_detector(name: str) -> None:
    """Forget a detector :func:`register_person_detector` offered (nothing if it is not there)."""
    _REGISTERED.pop(name, None)


def _installed_detectors() -> dict[str, object]:
    """Entry points of :data:`PERSON_DETECTOR_GROUP` of the installed packages: name -> entry point."""
    from importlib.metadata import entry_points

    try:
        return {ep.name: ep for ep in entry_points(group=PERSON_DETECTOR_GROUP)}
    except Exception:  # a broken distribution's metadata must not stop motion_node  # noqa: BLE001
        return {}


def load_person_detector(name: str, builtin: dict[str, Callable[[], PersonDetector]] | None = None) -> PersonDetector:
    """Instantiate the person detector ``name``, chosen among the known ones only.

    The parameter comes from a params file, so it never names code to import: it picks one of the
    ``builtin`` detectors (motion_node passes the shipped ones), those registered in-process
    (:func:`register_person_detector`), or those an installed package offers as an entry point of
    :data:`PERSON_DETECTOR_GROUP` (installing the package is the trust decision, as with ROS
    pluginlib). A ``"package.module:Class"`` path that is none of these is refused, not imported
    (before, ``os:fork`` or ``pdb:set_trace`` in a params file ran in the motion node).

    Args:
        name: the detector's name (or the module path a built-in one is also known by).
        builtin: name -> factory of the shipped detectors.

    Returns:
        The detector, constructed without arguments.

    Raises:
        ValueError: an unknown name (the message lists the known ones), a factory that fails, or an
            object without ``detect(rgb, depth_m, k, mount)``.
    """
    known: dict[str, object] = {**(builtin or {}), **_REGISTERED}
    installed = _installed_detectors()
    factory: object | None = known.get(name)
    if factory is None and name in installed:
        try:
            factory = installed[name].load()  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - the plug-in's own import error, named
            raise ValueError(f"person_detector: installed detector {name!r} failed to load ({type(exc).__name__}: {exc})") from None
    if factory is None:
        names = sorted(set(known) | set(installed))
        how = (
            "a detector of your own is offered by an installed package as an entry point of group "
            f"{PERSON_DETECTOR_GROUP!r} (docs/motion.md); module paths are never imported from a params file"
        )
        raise ValueError(f"person_detector: {name!r} is not a known detector (known: {', '.join(names) or 'none'}); {how}")
    try:
        det = factory()  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001 - a plug-in's constructor, named
        raise ValueError(f"person_detector: {name!r} failed to start ({type(exc).__name__}: {exc})") from None
    if not isinstance(det, PersonDetector):
        raise ValueError(f"person_detector: {name!r} has no detect(rgb, depth_m, k, mount) method")
    return det


@dataclass(frozen=True)
class ViewRegion:
    """Ground area (base_link) where the depth camera sees obstacles of at least ``min_height``.

    Built with :meth:`from_camera`. A point is visible when it lies inside the horizontal field of
    view, beyond the blind distance (where the lower image edge reaches ``min_height``), at least
    ``min_range`` ahead of the camera (its min-Z: nearer, a D435i returns no depth, so a hole there
    says nothing about what is there) and within ``max_range`` of the camera.
    """

    mount: CameraMount
    half_hfov: float
    blind_m: float
    max_range: float
    tan_down: float = 0.0
    min_range: float = 0.0

    @classmethod
    def from_camera(
        cls, k: Intrinsics, width: int, height: int, mount: CameraMount, min_height: float, max_range: float, min_range: float = 0.0
    ) -> ViewRegion:
        """From intrinsics, image size (px), mount, smallest obstacle height (m) and depth range
        ``min_range`` .. ``max_range`` (m; motion_node's ``depth_min_m`` / ``depth_max_m``)."""
        half_h = math.atan2(min(k.cx, width - 1 - k.cx), k.fx)
        down = math.atan2(height - 1 - k.cy, k.fy) - mount.pitch  # lower image edge below horizontal, rad
        blind = (mount.z - min_height) / math.tan(down) if down > 1e-3 else math.inf
        return cls(mount, half_h, max(0.0, blind), max_range, math.tan(down) if down > 1e-3 else 0.0, max(0.0, float(min_range)))

    def contains(self, x: np.ndarray, y: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask of the base_link points (x, y) inside the region; with heights ``z`` (m
        above the ground) a taller point is visible closer than ``blind_m``. Points less than
        ``min_range`` ahead of the camera (along base_link x) are never visible."""
        dx, dy = np.asarray(x) - self.mount.x, np.asarray(y) - self.mount.y
        if z is None or self.tan_down <= 0:
            near = dx >= max(self.blind_m, self.min_range)
        else:
            near = dx >= np.maximum(np.maximum(self.mount.z - np.asarray(z), 0.0) / self.tan_down, self.min_range)
        return near & (np.hypot(dx, dy) <= self.max_range) & (np.abs(np.arctan2(dy, dx)) <= self.half_hfov)


#: Most depth points one remembered 5 cm cell stands for (a wall 1 m away fills a cell's column
#: with ~360 points of a stride-4 640x480 image; 50 keeps a remembered wall above
#: ``min_obstacle_points`` without letting memory outweigh the current frame).
MEMORY_CELL_MAX_POINTS = 50


#: Half width of the strip ahead of base_link where remembered obstacles are held while the camera
#: cannot see them (:attr:`ObstacleMemory.hold_m`), m: the Go2's half width plus the side margin and
#: the widest box corner of a 45 deg approach.
HOLD_HALF_WIDTH_M = 0.6


class ObstacleMemory:
    """Short-term memory of obstacle points in the odom frame.

    A level camera on the Go2 does not see the floor within ~0.4 m ahead of the nose, so low
    obstacles in the step corridor are only visible from further away. The memory keeps points
    seen in the last ``keep_s`` seconds (on a ``cell_m`` grid, newest wins, each cell keeping how
    many points fell in it so ``min_obstacle_points`` still rejects noise) and returns them in the
    current base_link using odometry.

    Cells are rows of parallel arrays in the order they were first remembered (a cell seen again
    keeps its row; one forgotten and seen again gets a new row at the end), so a frame costs a few
    array operations however many cells are remembered (motion_node at the camera rate, the batch
    simulator at every simulated frame).

    Args:
        keep_s: how long a point is remembered, s.
        cell_m: grid cell for de-duplication, m.
    """

    #: Cell (i, j) is the int64 ``i * _KEY_STRIDE + j``: one key per cell while |j| < _KEY_STRIDE / 2
    #: cells (25 km of odom at 5 cm cells).
    _KEY_STRIDE = 1_000_003

    def __init__(self, keep_s: float = 3.0, cell_m: float = 0.05) -> None:
        self.keep_s = float(keep_s)
        self.cell_m = float(cell_m)
        #: Ahead of base_link up to this distance (m) and within :data:`HOLD_HALF_WIDTH_M` of its
        #: axis, remembered cells do not expire by age: the camera cannot see there (its blind zone,
        #: :func:`blind_zone_m`), so an obstacle seen on the approach stays until depth has seen past
        #: it (:meth:`add`'s ``free``) or the robot turned away from it. 0 = everything expires.
        self.hold_m = 0.0
        self.clear()

    def clear(self) -> None:
        """Forget everything."""
        self._key = np.zeros(0, dtype=np.int64)  # packed cell index (see _KEY_STRIDE)
        self._xy = np.zeros((0, 2))  # odom xy of the cell's first point in its newest frame, m
        self._t = np.zeros(0)  # time of that frame, s
        self._n = np.zeros(0, dtype=np.int64)  # depth points the cell stands for (<= MEMORY_CELL_MAX_POINTS)
        self._z = np.zeros(0)  # top of its points above the ground, m (0 for 2-D points)

    def __len__(self) -> int:
        """Number of remembered cells (expired ones included until :meth:`cells` drops them)."""
        return len(self._key)

    def _keep(self, rows: np.ndarray) -> None:
        self._key, self._xy, self._t, self._n, self._z = self._key[rows], self._xy[rows], self._t[rows], self._n[rows], self._z[rows]

    def add(
        self,
        t: float,
        points_base: np.ndarray,
        pose: tuple[float, float, float],
        view: ViewRegion | None = None,
        weights: np.ndarray | None = None,
        free: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        """Remember ``points_base`` ((N, 2) xy or (N, 3) xyz in base_link, m) seen at time ``t`` from
        odom pose ``pose`` (x, y, yaw).

        A remembered cell is forgotten only on evidence that it is free now: it lies inside
        ``view`` (where the camera would have seen it), this frame did not see it again, and --
        with ``free`` (:func:`depth_free_space` of this frame) -- the camera measured past it.
        A hole in the depth image (nearer than min-Z, a dark or shiny surface) or something in
        front of it is no such evidence. Without ``free`` every cell in view counts as measured:
        right for a complete frame (the batch simulator's analytic walls, which has no holes and
        sees every wall in view). ``weights`` ((N,) depth points each entry stands for,
        :attr:`Obstacles.weights`; None = one each) set the cells' point counts (the batch
        simulator's weighted wall samples); a cell whose count rounds to 0 is not remembered.
        """
        x, y, th = pose
        if view is not None and len(self._key):
            c, s = math.cos(th), math.sin(th)
            dx, dy = self._xy[:, 0] - x, self._xy[:, 1] - y
            bx, by = c * dx + s * dy, -s * dx + c * dy
            seen = view.contains(bx, by, self._z)
            if free is not None and seen.any():
                seen &= free(np.stack([bx, by], axis=1))
            if seen.any():
                self._keep(~seen)
        if points_base is None or not len(points_base):
            return
        c, s = math.cos(th), math.sin(th)
        wx = x + c * points_base[:, 0] - s * points_base[:, 1]
        wy = y + s * points_base[:, 0] + c * points_base[:, 1]
        ix = np.floor(wx / self.cell_m).astype(np.int64)
        iy = np.floor(wy / self.cell_m).astype(np.int64)
        key = ix * self._KEY_STRIDE + iy  # one int64 per cell: 1-D unique is much faster than axis=0
        ukey, first, inv, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
        if weights is not None:
            counts = np.rint(np.bincount(inv.ravel(), weights=np.asarray(weights, dtype=np.float64), minlength=len(ukey))).astype(np.int64)
        zs = points_base[:, 2] if points_base.shape[1] > 2 else np.zeros(len(points_base))
        ztop = np.full(len(ukey), -np.inf)
        np.maximum.at(ztop, inv.ravel(), zs)
        ok = counts > 0
        if not ok.all():
            ukey, first, counts, ztop = ukey[ok], first[ok], counts[ok], ztop[ok]
        if not len(ukey):
            return
        xy = np.stack([wx[first], wy[first]], axis=1)
        n = np.minimum(counts, MEMORY_CELL_MAX_POINTS)
        new = np.ones(len(ukey), dtype=bool)
        if len(self._key):  # a cell seen again keeps its row (newest wins)
            order = np.argsort(self._key)
            pos = np.minimum(np.searchsorted(self._key, ukey, sorter=order), len(order) - 1)
            rows = order[pos]
            new = self._key[rows] != ukey
            old = ~new
            if old.any():
                r = rows[old]
                self._xy[r], self._t[r], self._n[r], self._z[r] = xy[old], t, n[old], ztop[old]
        if new.any():  # new cells at the end, in cell-key order
            self._key = np.concatenate([self._key, ukey[new]])
            self._xy = np.concatenate([self._xy, xy[new]])
            self._t = np.concatenate([self._t, np.full(int(new.sum()), float(t))])
            self._n = np.concatenate([self._n, n[new]])
            self._z = np.concatenate([self._z, ztop[new]])

    def cells(self, t: float, pose: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
        """Remembered cells younger than ``keep_s``: ((K, 2) float64 points in the base_link of
        ``pose``, m; (K,) float64 depth points each stands for). Older cells are dropped."""
        if not len(self._key):
            return np.zeros((0, 2)), np.zeros(0)
        x, y, th = pose
        c, s = math.cos(th), math.sin(th)
        old = t - self._t > self.keep_s
        if old.any() and self.hold_m > 0:
            dx, dy = self._xy[:, 0] - x, self._xy[:, 1] - y
            bx, by = c * dx + s * dy, -s * dx + c * dy
            old &= ~((bx >= 0.0) & (bx <= self.hold_m) & (np.abs(by) <= HOLD_HALF_WIDTH_M))
        if old.any():
            self._keep(~old)
            if not len(self._key):
                return np.zeros((0, 2)), np.zeros(0)
        dx, dy = self._xy[:, 0] - x, self._xy[:, 1] - y
        return np.stack([c * dx + s * dy, -s * dx + c * dy], axis=1), self._n.astype(np.float64)

    def points(self, t: float, pose: tuple[float, float, float]) -> np.ndarray:
        """Remembered points younger than ``keep_s`` as (N, 2) float32 in the base_link of ``pose``
        (each cell repeated by its point count, :meth:`cells`)."""
        pts, n = self.cells(t, pose)
        if not len(pts):
            return np.zeros((0, 2), np.float32)
        return np.repeat(pts, n.astype(np.int64), axis=0).astype(np.float32)


#: How far past the camera's blind zone the floor is looked at to carry it across the zone, m
#: (:meth:`FloorMemory.add`): the first 0.3 m of floor the camera sees.
FLOOR_RING_M = 0.3

#: A lateral strip's floor is carried across the blind zone only when the frame sees it begin within
#: this of the zone's far edge, m (:meth:`FloorMemory.add`): the image's lowest rows reach the floor
#: there unless something in the zone stands in their way (a 0.10 m box 0.15 m ahead of the nose,
#: invisible below them, casts a 0.2 m shadow on the floor behind it).
FLOOR_RING_START_M = 0.10

#: Lanes within this of a low obstacle seen inside the blind zone are not carried either, m: it may
#: be the far part of a low box turned to the robot, whose hidden near corner reaches lanes beside
#: it (0.2 m wide boxes at 30-45 deg 0.15 m ahead were entered without this).
FLOOR_BLOCK_REACH_M = 0.30
#: An obstacle is low (its near part can hide under the camera's lowest ray) when its lane's highest
#: point in the zone is below this, m: a level D435i at 0.41 m sees 0.29 m up 0.3 m ahead of it, so
#: a taller object shows its near part too (a door post, a table or chair leg).
FLOOR_BLOCK_LOW_M = 0.30

#: Longest run of unknown cells inside a 5 cm slice across the footprint that still counts as seen
#: floor, m: a depth hole (a dark tile) between seen cells is stepped over. An unknown cell at
#: either side of the slice is never a hole: a ledge met at an angle leaves its far side unseen at
#: the footprint's corner first, and a corner over a drop is a fall.
FLOOR_HOLE_MAX_M = 0.10


class FloorMemory:
    """Where the robot has seen floor to stand on, in the odom frame (pure numpy).

    Each ``cell_m`` cell keeps the height of the ground seen in it (the top of its ground points,
    m above the ground under the robot when it was seen; newest wins) for ``keep_s`` seconds. Ground
    points are those below the obstacle band and those on climbable terrain (:func:`climbable_mask`):
    a box top, a table or a wall is not floor. A cell never seen is unknown; a floor beyond an edge
    that the edge hides is unknown too, and a lower floor seen past it has its own (lower) height.

    The camera does not see the floor within its blind zone (:func:`blind_zone_m`, 1.1 m ahead of a
    level D435i at 0.41 m). Straight ahead of base_link, the floor is carried across that zone in the
    lateral strips where the first :data:`FLOOR_RING_M` of floor the frame sees beyond it is level
    (within ``step_m`` of the ground under the robot) -- the floor the robot stands on continues to
    where the camera sees it. This is an inference of the current frame only, never remembered, and
    a cell seen earlier (on the approach) keeps its measured height. A pit narrower than the blind
    zone that was never in view is the case it cannot see; a ledge is not (the floor beyond it is
    hidden or seen lower, so nothing is carried).

    Args:
        keep_s: how long a seen cell is remembered, s.
        cell_m: grid cell, m (:data:`TERRAIN_CELL_M`).
    """

    _KEY_STRIDE = 1_000_003

    def __init__(self, keep_s: float = 60.0, cell_m: float = TERRAIN_CELL_M) -> None:
        self.keep_s = float(keep_s)
        self.cell_m = float(cell_m)
        self.clear()

    def clear(self) -> None:
        """Forget everything."""
        self._key = np.zeros(0, dtype=np.int64)
        self._z = np.zeros(0)
        self._t = np.zeros(0)
        self._carried: tuple[tuple[float, float, float], np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self._key)

    def _keys(self, wx: np.ndarray, wy: np.ndarray) -> np.ndarray:
        return np.floor(wx / self.cell_m).astype(np.int64) * self._KEY_STRIDE + np.floor(wy / self.cell_m).astype(np.int64)

    def add(
        self,
        t: float,
        ground: np.ndarray,
        pose: tuple[float, float, float],
        blind_m: float = 0.0,
        step_m: float = GO2_MAX_STEP_M,
        blockers: np.ndarray | None = None,
    ) -> None:
        """Remember the ground points ``ground`` ((N, 3) x, y, z in the base_link of odom ``pose``,
        m) of a frame seen at time ``t`` (s), and carry the floor across the blind zone ``blind_m``
        (m ahead of base_link; 0 = none) where the frame's nearest floor is level (class docstring)
        and begins at the zone's edge (:data:`FLOOR_RING_START_M`). ``blockers`` ((K, 2+) base_link
        obstacle points of the same frame): a strip holding one inside the zone is not carried --
        something stands on that floor (the far part of a low box whose near part the zone hides)."""
        x, y, th = pose
        c, s = math.cos(th), math.sin(th)
        g = np.asarray(ground, dtype=np.float64).reshape(-1, 3)
        if blind_m > 0:
            self._carried = None
        if len(g):
            wx = x + c * g[:, 0] - s * g[:, 1]
            wy = y + s * g[:, 0] + c * g[:, 1]
            key = self._keys(wx, wy)
            ukey, inv = np.unique(key, return_inverse=True)
            z = np.full(len(ukey), -np.inf)
            np.maximum.at(z, inv.ravel(), g[:, 2])
            keys = np.concatenate([self._key, ukey])
            zs = np.concatenate([self._z, z])
            ts = np.concatenate([self._t, np.full(len(ukey), float(t))])
            last = len(keys) - 1 - np.unique(keys[::-1], return_index=True)[1]  # newest of each cell
            self._key, self._z, self._t = keys[last], zs[last], ts[last]
        if blind_m > 0 and len(g):
            ring = (g[:, 0] >= blind_m) & (g[:, 0] <= blind_m + FLOOR_RING_M)
            if ring.any():
                cm = self.cell_m
                lane = np.floor(g[ring, 1] / cm).astype(np.int64)
                lo = np.full(lane.max() - lane.min() + 1, np.inf)
                hi = np.full(len(lo), -np.inf)
                first = np.full(len(lo), np.inf)
                np.minimum.at(lo, lane - lane.min(), g[ring, 2])
                np.maximum.at(hi, lane - lane.min(), g[ring, 2])
                np.minimum.at(first, lane - lane.min(), g[ring, 0])
                # the lane's floor must start where the blind zone ends: a low box inside the zone
                # hides the floor just past it (its shadow), and the floor seen beyond says nothing
                ok = np.isfinite(lo) & (np.abs(lo) <= step_m) & (np.abs(hi) <= step_m) & (first <= blind_m + FLOOR_RING_START_M)
                if blockers is not None and len(blockers):
                    b = np.asarray(blockers, dtype=np.float64)
                    b = b[(b[:, 0] < blind_m) & (b[:, 0] >= 0.0)]
                    bl = np.floor(b[:, 1] / cm).astype(np.int64) - lane.min()
                    ok[bl[(bl >= 0) & (bl < len(ok))]] = False
                    if b.shape[1] > 2:
                        # a low object's near part, which the zone hides, may reach lanes beside the part seen
                        top = np.full(len(ok) + 1, -np.inf)
                        inside = (bl >= 0) & (bl < len(ok))
                        np.maximum.at(top, np.where(inside, bl, len(ok)), b[:, 2])
                        low = np.nonzero(np.isfinite(top[:-1]) & (top[:-1] < FLOOR_BLOCK_LOW_M))[0]
                        reach = int(round(FLOOR_BLOCK_REACH_M / cm))
                        for d in range(-reach, reach + 1):
                            near = low + d
                            ok[near[(near >= 0) & (near < len(ok))]] = False
                lanes = (np.nonzero(ok)[0] + lane.min()).astype(np.float64)
                if len(lanes):
                    # half-cell samples: turned into the odom grid, a cell-spaced grid would miss cells
                    xs = np.arange(-cm / 2.0, blind_m, cm / 2.0)
                    gx, gy = np.meshgrid(xs, np.concatenate([(lanes + 0.25) * cm, (lanes + 0.75) * cm]), indexing="ij")
                    self._carried = (pose, gx.ravel(), gy.ravel())
        if self.keep_s > 0 and len(self._t):
            fresh = t - self._t <= self.keep_s
            if not fresh.all():
                self._key, self._z, self._t = self._key[fresh], self._z[fresh], self._t[fresh]

    def heights(self, xy: np.ndarray, pose: tuple[float, float, float]) -> np.ndarray:
        """Floor heights (m; NaN = not known) under the base_link points ``xy`` ((N, 2), m) of odom
        ``pose``: the remembered height of their cell, else 0 where the newest frame carried the
        floor across the blind zone (:meth:`add`)."""
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        out = np.full(len(xy), np.nan)
        if not len(xy):
            return out
        x, y, th = pose
        c, s = math.cos(th), math.sin(th)
        wx = x + c * xy[:, 0] - s * xy[:, 1]
        wy = y + s * xy[:, 0] + c * xy[:, 1]
        key = self._keys(wx, wy)
        if len(self._key):
            order = np.argsort(self._key)
            pos = np.minimum(np.searchsorted(self._key, key, sorter=order), len(order) - 1)
            hit = self._key[order[pos]] == key
            out[hit] = self._z[order[pos[hit]]]
        if self._carried is not None:
            (px, py, pth), gx, gy = self._carried
            cp, sp = math.cos(pth), math.sin(pth)
            ckey = np.unique(self._keys(px + cp * gx - sp * gy, py + sp * gx + cp * gy))
            out[np.isnan(out) & np.isin(key, ckey)] = 0.0
        return out


def _fill_lane_holes(z: np.ndarray, cell_m: float) -> np.ndarray:
    """(slices, lanes) floor heights (NaN = unknown) with each lane's unknown runs of at most
    :data:`FLOOR_HOLE_MAX_M` between two known cells filled with the lower of the two (a sparse
    LiDAR's gaps on a seen tread; a drop beyond such a gap still shows). A copy."""
    z = z.copy()
    longest = int(round(FLOOR_HOLE_MAX_M / cell_m))
    for j in range(z.shape[1]):
        known = np.nonzero(np.isfinite(z[:, j]))[0]
        for a, b in zip(known[:-1], known[1:], strict=True):
            if 1 < b - a <= longest + 1:
                z[a + 1 : b, j] = min(z[a, j], z[b, j])
    return z


def _slice_unseen(seen: np.ndarray, cell_m: float) -> bool:
    """Whether a slice of cells across the footprint (``seen``: (K,) bool, known floor height) is
    unseen floor: a side cell unknown, or more than :data:`FLOOR_HOLE_MAX_M` of unknown cells in a row."""
    if not seen.any() or not seen[0] or not seen[-1]:
        return True
    run = longest = 0
    for known in seen:
        run = 0 if known else run + 1
        longest = max(longest, run)
    return longest * cell_m > FLOOR_HOLE_MAX_M + 1e-9


def floor_hazard(
    floor: Callable[[np.ndarray], np.ndarray],
    fp: Footprint,
    distance: float,
    front_margin: float,
    step_down_m: float,
    cell_m: float = TERRAIN_CELL_M,
) -> Hazard | None:
    """Is there floor to step on along a forward move of ``distance`` m (backwards: no check -- the
    robot backs over ground it walked)?

    The strip ahead of the footprint, ``[front, front + distance + front_margin] x [-w/2, w/2]``, is
    walked in ``cell_m`` slices from the front: a slice is unseen when a cell at either side of it
    has no known height, or a run of unknown cells inside it is longer than
    :data:`FLOOR_HOLE_MAX_M` (:func:`_slice_unseen`), and drops when its lowest cell lies
    more than ``step_down_m`` below the slice before it (the first slice is compared with the
    ground under the front of the footprint, else with the ground under the robot, 0). Descending
    stairs and ramps drop a little per slice and pass; a ledge shows no floor past its edge (hidden)
    or a floor far lower.

    Args:
        floor: (N, 2) base_link points -> (N,) floor heights, m, NaN = unknown (:meth:`FloorMemory.heights`).
        fp: robot footprint.
        distance: forward travel, m.
        front_margin: extra length checked past the end of the step, m.
        step_down_m: the largest step down the body takes, m.
        cell_m: slice length and lateral sample spacing, m.

    Returns:
        A :class:`Hazard` (``source="floor"``, ``distance_m`` from the footprint's front to the
        slice) or None.
    """
    if distance <= 0:
        return None
    hl, hw = fp.half_length, fp.half_width
    xs = np.arange(hl + cell_m / 2.0, hl + distance + front_margin, cell_m)
    ys = np.arange(-hw + cell_m / 2.0, hw, cell_m)
    if not len(xs):
        return None
    gx, gy = np.meshgrid(np.concatenate([[hl - cell_m / 2.0], xs]), ys, indexing="ij")
    z = _fill_lane_holes(np.asarray(floor(np.stack([gx.ravel(), gy.ravel()], axis=1)), dtype=np.float64).reshape(gx.shape), cell_m)
    behind = z[0][np.isfinite(z[0])]
    prev = float(behind.min()) if len(behind) else 0.0
    for i in range(1, len(z)):
        row = z[i]
        seen = np.isfinite(row)
        gap = max(0.0, float(xs[i - 1] - cell_m / 2.0 - hl))
        if _slice_unseen(seen, cell_m):
            return Hazard("static", "floor", gap, None, f"no floor seen {gap:.2f} m ahead of the footprint")
        low = float(row[seen].min())
        if prev - low > step_down_m:
            return Hazard("static", "floor", gap, None, f"floor drops {prev - low:.2f} m {gap:.2f} m ahead of the footprint")
        prev = low
    return None
