"""People from range sensors alone: human-sized clusters, Kalman tracking, base_link output.

Pure Python + numpy/scipy/filterpy (no rclpy); people_node is its ROS shell and
:class:`DepthPeopleTracker` is its :class:`~havln_robot.motion.safety.PersonDetector` plug-in.

Pipeline, per frame
-------------------
1. **Points** (base_link: x forward, y left, z up above the ground, m): the aligned depth image
   projected with :func:`havln_robot.motion.safety.depth_to_points`, and/or a LiDAR cloud
   (``sensor_msgs/PointCloud2`` already in base_link, or offset by the LiDAR mount) cut to the
   LiDAR's range limits (:func:`lidar_points`).
2. **Clusters** (:func:`detect_people`): points in the body band (``band_min_m`` .. ``band_max_m``
   above the ground) are binned on a ``cell_m`` grid in xy; 8-connected occupied cells form a
   cluster (``scipy.ndimage.label``). A cluster is a person when its top reaches ``min_height_m``
   (or the top of the camera's view at that range, when the person is too close to be seen whole),
   its top stays below ``max_height_m`` (walls and door frames go on up), its bottom comes down to
   ``max_bottom_m`` (legs reach the floor: tables and shelves do not), and
   its extent across / along the sensor ray lies within ``[min_width_m, max_width_m]`` /
   ``<= max_depth_m``. A cluster the top of the view cuts (nearer than ~2.6 m to the Go2's
   camera, whose height it cannot measure) must in addition be no wider than a person's hips or
   chest (:data:`CLIPPED_MAX_WIDTH_M`) and stand free: background farther away on both sides,
   not a nearer surface hiding a side nor a surface going on from it (:func:`_side_not_free`) --
   otherwise the strip of a wall seen past a door jamb, or a wall's corner, is a "person" (20 % of frames in empty Matterport scenes had one, 7 % now, ``havln-robot bench people``).
   A cluster whose points lie mostly on climbable ground (:data:`TERRAIN_MAX_FRACTION`; motion_node's
   rule, :func:`~havln_robot.motion.safety.climbable_mask` with ``max_step_height_m``) is stairs or
   a ramp seen from beside or below it, not a person (a flight rising beside a robot on
   it was a "person" 0.4 m ahead whenever the camera looked across it).
   The visible surface of a body is its front, so the centre is pushed
   ``body_depth_m / 2`` away from the sensor along the ray.
3. **Tracks** (:class:`PeopleTracker`): one constant-velocity Kalman filter per person
   (``filterpy.kalman.KalmanFilter``, state x, y, vx, vy in the odom frame so the robot's own motion
   does not look like people moving); detections are assigned to predicted tracks by the Hungarian
   method (``scipy.optimize.linear_sum_assignment``) on Euclidean distance, gated at ``gate_m``.
   A track is reported after ``min_hits`` associated frames and dropped ``max_age_s`` after its
   last detection (a still person outside the sensors' view: ``max_unseen_s``, where last seen);
   its velocity is reported after ``velocity_hits`` frames and above ``min_speed_mps``. Output
   positions and velocities are rotated into the current base_link.

Constants: the person shape limits default to adult anthropometry (standing stature 1.5-1.9 m,
shoulder breadth 0.35-0.5 m; NASA-STD-3000 vol. 1 sec. 3, 5th-95th percentile) with margins for
sensor noise and for people carrying things; the Kalman noise terms are hand-picked for walking
at 0.5-1.5 m/s (2 m/s^2 white acceleration, 8 cm measurement noise) and checked with
``havln-robot bench people``, not fitted.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from havln_robot.camera import Intrinsics
from havln_robot.motion.lidar import LidarMount
from havln_robot.motion.safety import (
    GO2_MAX_STEP_M,
    CameraMount,
    Person,
    blind_zone_m,
    climbable_mask,
    depth_free_space,
    depth_to_points,
)


@dataclass(frozen=True)
class PeopleConfig:
    """Cluster and tracker settings (m, s); the defaults are people_node's parameter defaults.

    Attributes:
        cell_m: xy grid cell of the clustering, m.
        band_min_m, band_max_m: heights above the ground whose points are clustered, m.
        min_height_m: a cluster's top must reach this (or the camera's view top at its range), m.
        max_height_m: a cluster whose top is higher is structure (walls, door frames, shelves), m.
        max_bottom_m: a cluster's lowest point must be at most this high (legs reach the floor), m.
        min_width_m, max_width_m: extent across the sensor ray, m.
        max_depth_m: extent along the sensor ray, m.
        body_depth_m: body thickness; the visible front is moved back by half of it, m.
        min_points: a cluster needs at least this many points.
        max_range_m: depth points beyond this are ignored, m (D435i depth error grows ~ range^2).
        depth_stride: use every n-th depth pixel in both directions.
        gate_m: a detection farther than this from a track's prediction does not update it, m.
        min_hits: associated frames before a track is reported.
        max_age_s: a track is dropped this long after its last detection, s, while the sensors
            would see it.
        max_unseen_s: a track of a still person (slower than ``min_speed_mps``) outside the sensors'
            view (beside or behind the robot, where the camera is blind) is kept this long after
            its last detection, at the place last seen, s: the person the robot walked past is
            still there. Walkers are not remembered (their position would be a guess).
        accel_std: process noise, white acceleration std, m/s^2.
        meas_std_m: measurement noise std of a cluster centre, m.
        min_speed_mps: velocities below this are reported as 0, m/s: a standing person's jitter, and
            the drift of a structure fragment whose visible part changes while the robot turns
            (measured up to ~0.3 m/s in Matterport scenes); walking is 0.5-1.5 m/s.
        velocity_hits: a track reports a velocity only after this many associated frames (the
            forecast acts on established tracks, not on a fragment seen for a few frames).
        max_step_height_m: ground rising at most this per 5 cm cell is climbable terrain (motion_node's
            ``max_step_height_m``, :func:`~havln_robot.motion.safety.climbable_mask`); a depth
            cluster mostly on it is not a person, m (0 = off).
    """

    cell_m: float = 0.1
    band_min_m: float = 0.2
    band_max_m: float = 2.2
    min_height_m: float = 1.1
    max_height_m: float = 2.05
    max_bottom_m: float = 0.5
    min_width_m: float = 0.15
    max_width_m: float = 1.0
    max_depth_m: float = 1.0
    body_depth_m: float = 0.4
    min_points: int = 8
    max_range_m: float = 6.5
    depth_stride: int = 4
    gate_m: float = 0.8
    min_hits: int = 2
    max_age_s: float = 0.6
    max_unseen_s: float = 4.0
    accel_std: float = 2.0
    meas_std_m: float = 0.08
    min_speed_mps: float = 0.3
    velocity_hits: int = 5
    max_step_height_m: float = GO2_MAX_STEP_M

    @classmethod
    def from_params(cls, p: dict) -> PeopleConfig:
        """From people_node's validated parameter dict (keys as the attribute names)."""
        return cls(**{k: p[k] for k in cls.__dataclass_fields__ if k in p})


@dataclass(frozen=True)
class Detection:
    """One human-sized cluster in base_link.

    Attributes:
        x, y: estimated body centre, m (base_link).
        top_m, bottom_m: highest / lowest point above the ground, m.
        width_m, depth_m: extent across / along the sensor ray, m.
        n_points: points in the cluster.
    """

    x: float
    y: float
    top_m: float
    bottom_m: float
    width_m: float
    depth_m: float
    n_points: int


@dataclass(frozen=True)
class Track:
    """A tracked person in base_link.

    Attributes:
        track_id: stable id while the track lives (int >= 1).
        x, y: position, m (base_link). vx, vy: ground velocity expressed in base_link axes, m/s.
        hits: associated frames so far. age_s: time since the last detection, s.
    """

    track_id: int
    x: float
    y: float
    vx: float
    vy: float
    hits: int
    age_s: float

    def person(self) -> Person:
        """As a :class:`~havln_robot.motion.safety.Person` (id, position and velocity)."""
        return Person(self.x, self.y, self.track_id, vx=self.vx, vy=self.vy)


def lidar_points(cloud_xyz: np.ndarray, mount: LidarMount | None = None, min_range_m: float = 0.1, max_range_m: float = 40.0) -> np.ndarray:
    """LiDAR points (the sensor's own frame) -> base_link's ground frame, cut to the sensor's range.

    Args:
        cloud_xyz: (N, 3) float x, y, z in the LiDAR frame, m (NaN rows are dropped).
        mount: the LiDAR's pose under base_link (origin, height above the ground, pitch and yaw):
            the one mount motion_node places the same cloud with; None = origin on the ground under
            base_link, axes parallel to it.
        min_range_m: points closer than this to the LiDAR are dropped (blind zone; Livox MID360: 0.1 m,
            Livox MID360 user manual v1.2, "Specifications").
        max_range_m: points farther than this are dropped, m.

    Returns:
        (M, 3) float32 points (x ahead, y left of base_link, z above the ground), m.

    Raises:
        ValueError: ``cloud_xyz`` is not (N, 3).
    """
    a = np.asarray(cloud_xyz, dtype=np.float32)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"LiDAR cloud must be (N, 3) x, y, z, got shape {a.shape}")
    r = np.linalg.norm(a, axis=1)
    ok = np.isfinite(r) & (r >= min_range_m) & (r <= max_range_m)
    return (mount or LidarMount(0.0, 0.0, 0.0)).to_ground(a[ok])


def view_top(mount: CameraMount, k: Intrinsics | None, rng: np.ndarray) -> np.ndarray:
    """Height (m above ground) of the top image edge at horizontal range ``rng`` (m) from the camera;
    +inf without intrinsics (a LiDAR-only frame: no top cut)."""
    if k is None:
        return np.full(np.shape(rng), np.inf)
    up = math.atan2(k.cy, k.fy) + mount.pitch
    return mount.z + np.asarray(rng) * math.tan(min(up, math.radians(89.0)))


def _person(
    c: np.ndarray,
    sensor_xy: tuple[float, float],
    cfg: PeopleConfig,
    half_fov: float | None,
    top_at: Callable[[np.ndarray], np.ndarray] | None,
    side_not_free: Callable[[], bool],
) -> Detection | None:
    """The detection of one cluster ``c`` ((n, 3) base_link points, m) when it has a person's shape, else None
    (arguments as :func:`detect_people`; ``side_not_free()``: what is beside the cluster hides or continues it)."""
    sx, sy = sensor_xy
    cx, cy = float(c[:, 0].mean()), float(c[:, 1].mean())
    dx, dy = cx - sx, cy - sy
    rng = math.hypot(dx, dy)
    if rng < 1e-6:
        return None
    ux, uy = dx / rng, dy / rng
    if half_fov is not None:
        bearing = np.abs(np.arctan2(c[:, 1] - sy, c[:, 0] - sx))
        if float(bearing.max()) >= half_fov - math.radians(2.0):
            return None
    along = (c[:, 0] - sx) * ux + (c[:, 1] - sy) * uy
    across = -(c[:, 0] - sx) * uy + (c[:, 1] - sy) * ux
    width = float(across.max() - across.min()) + cfg.cell_m
    depth = float(along.max() - along.min())
    top, bottom = float(c[:, 2].max()), float(c[:, 2].min())
    need = cfg.min_height_m
    clipped = False  # the top of the view cuts the cluster: its height is unknown
    if top_at is not None:
        view = float(top_at(np.array([float(along.min())]))[0]) - 0.1
        clipped = top >= view
        need = min(need, view)
    if top < need or top > cfg.max_height_m or bottom > cfg.max_bottom_m:
        return None
    if not (cfg.min_width_m <= width <= cfg.max_width_m) or depth > cfg.max_depth_m:
        return None
    # height unknown (clipped): a person only if no wider than their hips or chest, and
    # standing free of what is beside them (not a strip of wall seen through a gap)
    if clipped and (width > CLIPPED_MAX_WIDTH_M or side_not_free()):
        return None
    front = float(along.min())
    centre = front + cfg.body_depth_m / 2.0
    # across-ray centre: middle of the extent (robust to one-sided point density)
    mid = float(0.5 * (across.max() + across.min()))
    return Detection(sx + centre * ux - mid * uy, sy + centre * uy + mid * ux, top, bottom, width, depth, len(c))


def detect_people(
    points: np.ndarray,
    cfg: PeopleConfig,
    sensor_xy: tuple[float, float] = (0.0, 0.0),
    top_at: Callable[[np.ndarray], np.ndarray] | None = None,
    half_fov: float | None = None,
    terrain: np.ndarray | None = None,
) -> list[Detection]:
    """Human-sized clusters among base_link points (see the module docstring, step 2).

    Args:
        points: (N, 3) float x, y, z in base_link, m (z above the ground).
        cfg: shape limits.
        sensor_xy: sensor position in base_link (for the ray direction and range), m.
        top_at: height of the sensor's view top at a horizontal range (vectorised), or None for no cut.
        half_fov: half the horizontal field of view, rad (None = 360 deg, a LiDAR). A cluster
            reaching within 2 deg of the field's side edge is cut by it: its width is unknown and a
            wall sliding past the edge while the robot turns would look like a walking person, so
            it is dropped (a person half out of view is found again once inside).
        terrain: (N,) bool, which points lie on climbable ground (stairs, ramps; motion_node's
            :func:`~havln_robot.motion.safety.climbable_mask`), or None. A cluster with more than
            :data:`TERRAIN_MAX_FRACTION` of its points on it is terrain. The clusters are formed
            from all band points first, so removing terrain never cuts a large surface into
            person-sized pieces.

    Returns:
        Detections, nearest first.
    """
    from scipy import ndimage

    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    in_band = (pts[:, 2] >= cfg.band_min_m) & (pts[:, 2] <= cfg.band_max_m)
    band = pts[in_band]
    on_terrain = np.asarray(terrain, dtype=bool)[in_band] if terrain is not None else None
    if len(band) < cfg.min_points:
        return []
    ij = np.floor(band[:, :2] / cfg.cell_m).astype(np.int64)
    lo = ij.min(axis=0)
    ij -= lo
    shape = tuple(int(v) + 1 for v in ij.max(axis=0))
    if shape[0] * shape[1] > 4_000_000:  # a stray far point: keep the grid bounded
        return []
    grid = np.zeros(shape, dtype=bool)
    grid[ij[:, 0], ij[:, 1]] = True
    labels, n = ndimage.label(grid, structure=np.ones((3, 3), dtype=bool))
    if n == 0:
        return []
    lab = labels[ij[:, 0], ij[:, 1]]
    order = np.argsort(lab, kind="stable")
    lab_sorted = lab[order]
    starts = np.searchsorted(lab_sorted, np.arange(1, n + 1))
    ends = np.searchsorted(lab_sorted, np.arange(1, n + 1), side="right")
    sx, sy = sensor_xy
    bearing_all = np.arctan2(band[:, 1] - sy, band[:, 0] - sx)
    range_all = np.hypot(band[:, 0] - sx, band[:, 1] - sy)
    out: list[Detection] = []
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        if e - s < cfg.min_points:
            continue
        if on_terrain is not None and float(on_terrain[order[s:e]].mean()) > TERRAIN_MAX_FRACTION:
            continue  # stairs or a ramp beside or ahead, not a person
        c = band[order[s:e]]
        side_not_free = lambda: _side_not_free(c, lab == lab_sorted[s], bearing_all, range_all, band[:, 2], (sx, sy), cfg, top_at)  # noqa: E731, B023
        det = _person(c, (sx, sy), cfg, half_fov, top_at, side_not_free)
        if det is not None:
            out.append(det)
    out.sort(key=lambda d: math.hypot(d.x - sx, d.y - sy))
    return out


#: A depth cluster with more than this fraction of its points on climbable ground is terrain (a
#: flight of stairs seen from beside or below it), not a person: a person's legs and body are
#: vertical faces, never climbable, so even a person standing on stairs whose cluster takes in a
#: few step edges stays below it. A project choice (half).
TERRAIN_MAX_FRACTION = 0.5

#: A clipped cluster (the top of the view cuts it: people nearer than ~2.6 m to the Go2's level
#: head camera) wider than this is no person, m: what the camera then sees of a person is hips
#: or chest, at most the 95th-percentile shoulder breadth 0.5 m (NASA-STD-3000 vol. 1 sec. 3)
#: plus one grid cell and a swinging arm; ``max_width_m`` (1.0 m: people carrying things) applies
#: where the whole figure is seen.
CLIPPED_MAX_WIDTH_M = 0.7
#: Points beside a cluster hide or continue its side when at least this many lie there (a stray
#: depth pixel does not).
SIDE_MIN_POINTS = 3
#: Beside a free-standing object the background is farther than the object's side by at least
#: this much, m (two grid cells of the default clustering) ...
SIDE_JUMP_M = 0.2
#: ... and by at least this much in disparity, 1/m: a plane seen at a grazing angle steps in
#: range between neighbouring samples by ~r^2 x (angle step) / tan(incidence), so a fixed range
#: step would split a far wall into "free-standing" pieces; in inverse depth a plane is smooth.
SIDE_JUMP_DISPARITY = 0.03


def _background_past(r: float) -> float:
    """Range (m) beyond which a point beside a surface at range ``r`` (m) is background behind it
    (:data:`SIDE_JUMP_M`, :data:`SIDE_JUMP_DISPARITY`)."""
    inv = 1.0 / max(r, 1e-3) - SIDE_JUMP_DISPARITY
    return max(r + SIDE_JUMP_M, 1.0 / inv if inv > 0 else math.inf)


def _side_not_free(
    c: np.ndarray,
    in_cluster: np.ndarray,
    bearing_all: np.ndarray,
    range_all: np.ndarray,
    z_all: np.ndarray,
    sensor_xy: tuple[float, float],
    cfg: PeopleConfig,
    top_at: Callable[[np.ndarray], np.ndarray] | None = None,
) -> bool:
    """True when cluster ``c`` does not stand free on both sides: beside it, at the sensor's
    bearings just outside its own, there is something nearer (hiding its side) or a surface at
    about its range (going on from it), instead of background farther away.

    A surface seen through a gap -- the strip of a far wall between two near door jambs, the end
    of a wall beside a nearer corner -- or a piece of a wall seen at a grazing angle (its samples
    too sparse for the clustering grid to join them) has an unknown width, exactly as a cluster
    cut by the image edge: it cannot be told from a person and is dropped (a person half hidden
    behind a door frame is found again in the open; a tracked person keeps their track while
    hidden, :func:`camera_frustum`). A free-standing person occludes the background on both sides.
    :func:`detect_people` asks only about clusters whose height is unknown too (clipped by the top
    of the view): a person partly hidden behind another, head seen, is kept.

    The side windows are as wide as two grid cells at the cluster's range (at least 1.5 deg).
    A side is not free when at least :data:`SIDE_MIN_POINTS` points there are nearer than
    :func:`_background_past` of the cluster's range at that edge and reach the cluster's
    mid-height, or the top of the view at their own range when that is lower (a low chair in
    front of a person's legs does not hide the width of their shoulders; a wall so near that the
    camera sees only its foot does).

    Args:
        c: (M, 3) the cluster's points, base_link, m.
        in_cluster: (N,) bool, which of the band's points are the cluster's.
        bearing_all: (N,) every band point's bearing from the sensor, rad.
        range_all: (N,) every band point's horizontal range from the sensor, m.
        z_all: (N,) every band point's height above the ground, m.
        sensor_xy: sensor position in base_link, m.
        cfg: the clustering's ``cell_m``.
        top_at: height of the sensor's view top at a horizontal range (vectorised), or None.
    """
    sx, sy = sensor_xy
    b = np.arctan2(c[:, 1] - sy, c[:, 0] - sx)
    ref = float(np.arctan2(np.sin(b).mean(), np.cos(b).mean()))
    rel_c = np.angle(np.exp(1j * (b - ref)))  # bearings relative to the cluster's: no wrap at +-pi
    lo, hi = float(rel_c.min()), float(rel_c.max())
    rr_c = np.hypot(c[:, 0] - sx, c[:, 1] - sy)
    win = max(math.radians(1.5), 2.0 * cfg.cell_m / max(float(rr_c.min()), 1e-3))
    edge = max(win / 2.0, math.radians(0.5))
    r_hi = float(rr_c[rel_c >= hi - edge].min())
    r_lo = float(rr_c[rel_c <= lo + edge].min())
    mid_z = 0.5 * (float(c[:, 2].min()) + float(c[:, 2].max()))
    reach = np.full(len(z_all), mid_z) if top_at is None else np.minimum(mid_z, np.asarray(top_at(range_all)) - 0.1)
    rel = np.angle(np.exp(1j * (bearing_all - ref)))
    cand = ~in_cluster & (z_all >= reach)
    left = cand & (rel > hi) & (rel <= hi + win) & (range_all < _background_past(r_hi))
    right = cand & (rel < lo) & (rel >= lo - win) & (range_all < _background_past(r_lo))
    return int(left.sum()) >= SIDE_MIN_POINTS or int(right.sum()) >= SIDE_MIN_POINTS


class _KF:
    """One constant-velocity track (filterpy KalmanFilter, state [x, y, vx, vy], odom frame)."""

    def __init__(self, track_id: int, x: float, y: float, t: float, cfg: PeopleConfig) -> None:
        from filterpy.kalman import KalmanFilter

        kf = KalmanFilter(dim_x=4, dim_z=2)
        kf.x = np.array([x, y, 0.0, 0.0])
        kf.H = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0]])
        kf.R = np.eye(2) * cfg.meas_std_m**2
        kf.P = np.diag([cfg.meas_std_m**2, cfg.meas_std_m**2, 1.0, 1.0])  # walking speed unknown: ~1 m/s std
        self.kf = kf
        self.track_id = track_id
        self.t = t
        self.last_seen = t
        self.hits = 1

    def predict(self, t: float, accel_std: float) -> None:
        dt = max(0.0, t - self.t)
        if dt <= 0:
            return
        f = np.eye(4)
        f[0, 2] = f[1, 3] = dt
        q1 = np.array([[dt**4 / 4, dt**3 / 2], [dt**3 / 2, dt**2]]) * accel_std**2
        q = np.zeros((4, 4))
        q[np.ix_([0, 2], [0, 2])] = q1
        q[np.ix_([1, 3], [1, 3])] = q1
        self.kf.predict(F=f, Q=q)
        self.t = t


class PeopleTracker:
    """Multi-person tracker over detections in base_link with the robot's odom pose.

    Args:
        cfg: settings (:class:`PeopleConfig`).

    Call :meth:`update` once per frame with the frame time (s, monotonic), the detections (base_link)
    and the odom pose of base_link at that time (x, y m, yaw rad; None = the robot has not moved).
    """

    def __init__(self, cfg: PeopleConfig | None = None) -> None:
        self.cfg = cfg or PeopleConfig()
        self._tracks: list[_KF] = []
        self._next_id = 1
        self._pose = (0.0, 0.0, 0.0)
        self._t: float | None = None

    @property
    def last_t(self) -> float | None:
        """Time (s) of the last :meth:`update`, None before the first or after :meth:`reset`."""
        return self._t

    def reset(self) -> None:
        """Forget every track (a new episode, or time went backwards)."""
        self._tracks.clear()
        self._t = None

    def update(
        self,
        t: float,
        detections: Sequence[Detection],
        pose: tuple[float, float, float] | None = None,
        visible: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> list[Track]:
        """Advance to time ``t`` (s), fold in ``detections`` and return the confirmed tracks (base_link).

        Args:
            t: frame time, s (earlier than the previous call: the tracker resets, a restarted sim clock).
            detections: this frame's detections, base_link.
            pose: odom pose of base_link (x, y m, yaw rad); None = unchanged.
            visible: (N, 2) base_link points -> (N,) bool, where the sensors see; None = everywhere.
                An unseen track inside it is dropped after ``max_age_s``, outside after ``max_unseen_s``.

        Non-finite input is never folded in: a ``pose`` with a non-finite value is ignored (the last
        finite one stays), as is a detection with a non-finite ``x`` / ``y``; a non-finite ``t`` leaves
        the tracker as it was (its tracks at the last time are returned).
        """
        cfg = self.cfg
        if not math.isfinite(t):
            return self.tracks(self._t) if self._t is not None else []
        if self._t is not None and t < self._t:
            self.reset()
        self._t = t
        if pose is not None and all(math.isfinite(float(v)) for v in pose[:3]):
            self._pose = (float(pose[0]), float(pose[1]), float(pose[2]))
        px, py, th = self._pose
        c, s = math.cos(th), math.sin(th)
        z = np.array([[px + c * d.x - s * d.y, py + s * d.x + c * d.y] for d in detections if math.isfinite(d.x) and math.isfinite(d.y)])
        z = z.reshape(-1, 2)
        for tr in self._tracks:
            tr.predict(t, cfg.accel_std)
        used: set[int] = set()
        if self._tracks and len(z):
            pred = np.array([tr.kf.x[:2] for tr in self._tracks])
            cost = np.linalg.norm(pred[:, None, :] - z[None, :, :], axis=2)
            from scipy.optimize import linear_sum_assignment  # imported only where it is used (~0.3 s)

            rows, cols = linear_sum_assignment(cost)
            for r, ci in zip(rows.tolist(), cols.tolist(), strict=True):
                if cost[r, ci] <= cfg.gate_m:
                    tr = self._tracks[r]
                    tr.kf.update(z[ci])
                    tr.hits += 1
                    tr.last_seen = t
                    used.add(ci)
        for ci in range(len(z)):
            if ci not in used:
                self._tracks.append(_KF(self._next_id, float(z[ci, 0]), float(z[ci, 1]), t, cfg))
                self._next_id += 1
        if visible is not None and self._tracks:
            ox = np.array([tr.kf.x[:2] for tr in self._tracks]) - (px, py)
            inside = np.asarray(visible(np.stack([c * ox[:, 0] + s * ox[:, 1], -s * ox[:, 0] + c * ox[:, 1]], axis=1)), dtype=bool)
        else:
            inside = np.ones(len(self._tracks), dtype=bool)
        keep = []
        for tr, vis in zip(self._tracks, inside.tolist(), strict=True):
            unseen = t - tr.last_seen
            if unseen > cfg.max_age_s:
                # out of view and (nearly) still: remembered where last seen; a walker's constant-velocity
                # guess would be metres off after seconds, so walkers are not remembered
                if vis or unseen > cfg.max_unseen_s or math.hypot(tr.kf.x[2], tr.kf.x[3]) >= cfg.min_speed_mps:
                    continue
                tr.kf.x[2:] = 0.0
            keep.append(tr)
        self._tracks = keep
        return self.tracks(t)

    def tracks(self, t: float) -> list[Track]:
        """Confirmed tracks predicted to ``t`` in the current base_link, nearest first."""
        px, py, th = self._pose
        c, s = math.cos(th), math.sin(th)
        out = []
        for tr in self._tracks:
            if tr.hits < self.cfg.min_hits:
                continue
            x, y, vx, vy = (float(v) for v in tr.kf.x)
            dt = max(0.0, t - tr.t)
            x, y = x + vx * dt, y + vy * dt
            dx, dy = x - px, y - py
            bvx, bvy = c * vx + s * vy, -s * vx + c * vy
            if math.hypot(bvx, bvy) < self.cfg.min_speed_mps or tr.hits < self.cfg.velocity_hits:
                bvx = bvy = 0.0
            out.append(Track(tr.track_id, c * dx + s * dy, -s * dx + c * dy, bvx, bvy, tr.hits, t - tr.last_seen))
        out.sort(key=lambda k: math.hypot(k.x, k.y))
        return out


@dataclass
class FrameInput:
    """One frame's sensor data for :func:`frame_detections` (all optional but at least one source).

    Attributes:
        depth_m: (H, W) float depth aligned to colour, m (0 = invalid), with ``k`` and ``mount``.
        k: intrinsics of the depth image. mount: camera pose relative to base_link.
        cloud: (N, 3) LiDAR points already in base_link, m (see :func:`lidar_points`).
        lidar_xy: LiDAR position in base_link, m.
    """

    depth_m: np.ndarray | None = None
    k: Intrinsics | None = None
    mount: CameraMount = field(default_factory=CameraMount)
    cloud: np.ndarray | None = None
    lidar_xy: tuple[float, float] = (0.0, 0.0)


def frame_detections(f: FrameInput, cfg: PeopleConfig) -> list[Detection]:
    """Detections from one frame: depth clusters (camera frustum) plus LiDAR clusters; a LiDAR
    detection within ``gate_m / 2`` of a depth detection is the same person (depth kept)."""
    dets: list[Detection] = []
    if f.depth_m is not None and f.k is not None:
        pts = depth_to_points(f.depth_m, f.k, f.mount, stride=cfg.depth_stride, max_m=cfg.max_range_m)
        mount = f.mount
        half = math.atan2(min(f.k.cx, f.k.width - 1 - f.k.cx), f.k.fx)
        terrain = None
        if cfg.max_step_height_m > 0 and len(pts):  # motion_node's climbable-terrain rule on the same points
            terrain = climbable_mask(pts, cfg.max_step_height_m, blind_m=blind_zone_m(f.k, mount))
        dets += detect_people(pts, cfg, (mount.x, mount.y), lambda r: view_top(mount, f.k, r), half, terrain)
    if f.cloud is not None and len(f.cloud):
        for d in detect_people(f.cloud, cfg, f.lidar_xy, None):
            if all(math.hypot(d.x - e.x, d.y - e.y) > cfg.gate_m / 2 for e in dets):
                dets.append(d)
    return dets


class AppearanceCheck:
    """Optional appearance confirmation: a user-supplied ONNX person detector run by onnxruntime.

    The model is read from a local file (no weights are fetched); it must take one
    (1, 3, H, W) float32 RGB image in [0, 1] and return boxes as (N, >=5) rows
    ``x0, y0, x1, y1, score`` in input pixels. A depth detection is kept when its projection
    falls inside a box scoring at least ``min_score``.

    Args:
        model_path: the .onnx file. input_size: (W, H) the model expects, px. min_score: box threshold.

    Raises:
        ValueError: the model file is missing or not a file, onnxruntime is not installed, or the
            model cannot be loaded (message says which).
    """

    def __init__(self, model_path: str, input_size: tuple[int, int] = (640, 640), min_score: float = 0.5) -> None:
        from havln_robot.paths import input_file_problem

        why = input_file_problem(model_path)
        if why is not None:
            raise ValueError(f"appearance_model: {model_path}: {why}; give the .onnx file, or set appearance_model to ''")
        try:
            import onnxruntime as ort  # type: ignore[import-not-found]
        except ImportError:
            raise ValueError("appearance_model: needs onnxruntime (pip install onnxruntime); or set appearance_model to ''") from None
        try:
            self.session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises several types
            raise ValueError(f"appearance_model: cannot load {model_path!r} ({type(exc).__name__}: {exc})") from None
        self.input_name = self.session.get_inputs()[0].name
        self.input_size = input_size
        self.min_score = float(min_score)

    def boxes(self, rgb: np.ndarray) -> np.ndarray:
        """(N, 4) person boxes x0, y0, x1, y1 in ``rgb`` pixels (float)."""
        import cv2

        w, h = self.input_size
        img = cv2.resize(rgb, (w, h)).astype(np.float32).transpose(2, 0, 1)[None] / 255.0
        raw = np.asarray(self.session.run(None, {self.input_name: img})[0])
        out = raw.reshape(-1, raw.shape[-1])
        out = out[out[:, 4] >= self.min_score]
        sx, sy = rgb.shape[1] / w, rgb.shape[0] / h
        return out[:, :4] * np.array([sx, sy, sx, sy])


def confirm(dets: Sequence[Detection], boxes: np.ndarray, k: Intrinsics, mount: CameraMount) -> list[Detection]:
    """The detections whose centre (projected at chest height, 1.2 m, or the view centre when
    closer) lies inside one of ``boxes`` ((N, 4) x0, y0, x1, y1 px of a level camera image)."""
    keep = []
    for d in dets:
        xc, yc = d.x - mount.x, d.y - mount.y
        if xc <= 0.05:
            continue
        u = k.cx - k.fx * yc / xc
        v = k.cy - k.fy * (min(1.2, d.top_m) - mount.z) / xc
        if any(b[0] <= u <= b[2] and b[1] - 20 <= v <= b[3] + 20 for b in np.asarray(boxes).reshape(-1, 4)):
            keep.append(d)
    return keep


#: Depth readings at or below this are no reading for the free-space test, m (``depth_to_points``'s
#: default: frame_detections reads depth from 0.1 m).
PEOPLE_DEPTH_MIN_M = 0.1


def camera_frustum(
    k: Intrinsics, camera_xy: tuple[float, float], max_range_m: float, free: Callable[[np.ndarray], np.ndarray] | None = None
) -> Callable[[np.ndarray], np.ndarray]:
    """Where the depth camera sees people: (N, 2) base_link points -> (N,) bool, inside the
    horizontal field of view of ``k`` and 0.3 m to ``max_range_m`` from the camera at ``camera_xy``
    (base_link, m), and -- with ``free`` -- where the camera measured past the point
    (:func:`~havln_robot.motion.safety.depth_free_space`): a person hidden behind someone or
    something, or standing in a depth hole, is not seen to be gone, so the tracker keeps them.
    Shared by :class:`DepthPeopleTracker` and the batch simulator's people."""
    half = math.atan2(min(k.cx, k.width - 1 - k.cx), k.fx)
    mx, my = float(camera_xy[0]), float(camera_xy[1])

    def visible(xy: np.ndarray) -> np.ndarray:
        dx, dy = xy[:, 0] - mx, xy[:, 1] - my
        r = np.hypot(dx, dy)
        out = (np.abs(np.arctan2(dy, dx)) <= half) & (r >= 0.3) & (r <= max_range_m)
        if free is not None and out.any():
            out &= np.asarray(free(xy), dtype=bool)
        return out

    return visible


class DepthPeopleTracker:
    """The shipped :class:`~havln_robot.motion.safety.PersonDetector`: depth clusters + Kalman tracks.

    ``havln_robot.perception.people:DepthPeopleTracker`` as motion_node's ``person_detector``
    (in-process), or people_node's core. Without odometry (:meth:`set_pose` never called) tracks
    assume a still robot. Times are ``time.monotonic()`` unless ``clock`` is given.
    """

    def __init__(
        self, cfg: PeopleConfig | None = None, clock: Callable[[], float] = time.monotonic, appearance: AppearanceCheck | None = None
    ) -> None:
        self.cfg = cfg or PeopleConfig()
        self.tracker = PeopleTracker(self.cfg)
        self.clock = clock
        self.appearance = appearance
        self._pose: tuple[float, float, float] | None = None
        self.cloud: np.ndarray | None = None
        self.lidar_xy: tuple[float, float] = (0.0, 0.0)

    def set_pose(self, pose: tuple[float, float, float]) -> None:
        """The robot's odom pose (x, y m, yaw rad) for the next frame."""
        self._pose = pose

    def step(self, t: float, rgb: np.ndarray | None, depth_m: np.ndarray | None, k: Intrinsics | None, mount: CameraMount) -> list[Track]:
        """One frame at time ``t`` (s): detections from depth (and :attr:`cloud`), tracks out.

        Without a LiDAR cloud only the camera's frustum (horizontal field of view, 0.3 m to
        ``max_range_m`` from the camera) is seen, and in it only where the depth image measured
        past the track (:func:`camera_frustum`): tracks elsewhere live ``max_unseen_s``."""
        dets = frame_detections(FrameInput(depth_m, k, mount, self.cloud, self.lidar_xy), self.cfg)
        if self.appearance is not None and rgb is not None and k is not None and dets:
            dets = confirm(dets, self.appearance.boxes(rgb), k, mount)
        visible = None
        if (self.cloud is None or not len(self.cloud)) and k is not None:
            free = depth_free_space(depth_m, k, mount, PEOPLE_DEPTH_MIN_M) if depth_m is not None else None
            visible = camera_frustum(k, (mount.x, mount.y), self.cfg.max_range_m, free)

        return self.tracker.update(t, dets, self._pose, visible)

    def detect(self, rgb: np.ndarray, depth_m: np.ndarray, k: Intrinsics, mount: CameraMount) -> list[Person]:
        """PersonDetector: tracked people in base_link with ids and velocities."""
        return [tr.person() for tr in self.step(self.clock(), rgb, depth_m, k, mount)]


#: The shipped person detectors of motion_node's ``person_detector``, by name (the module path is
#: the old spelling of the same detector, still accepted).
BUILTIN_PERSON_DETECTORS = {
    "depth_people_tracker": DepthPeopleTracker,
    "havln_robot.perception.people:DepthPeopleTracker": DepthPeopleTracker,
}
