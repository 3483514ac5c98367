"""The batch simulator's one action stepper: motion_node's executor in closed loop, without ROS.

:class:`ClosedLoop` executes one discrete HA-VLN action the way the live graph does: it ticks the
SAME :class:`havln_robot.motion.executor.Executor` (configured from motion_node's parameters,
:data:`havln_robot.motion.params.MOTION_PARAMS`) at motion_node's ``control_rate_hz`` against the
SAME noisy Go2 base that sim_node runs (:class:`havln_robot.sim.robot.NoisyBase` over a
:class:`havln_robot.sim.world.World`: actuation latency, acceleration limits, odometry scale
error and random-walk drift, gyro noise and bias, seeded per episode), and feeds it the SAME
kinds of input: odometry (the believed pose), the IMU yaw through
:class:`havln_robot.motion.checks.GyroYaw`, the horizontal IMU acceleration (jolt check),
and :class:`havln_robot.motion.safety.Obstacles` (wall points + people in base_link). Every
safety rule (clearance corridor, turn sweep, personal space, contact, stall, slip, revert,
partial step) is therefore the executor's own, and every input rule (people source silent,
frozen or non-finite odometry, control loop overloaded, unusable depth) is motion_node's safety
layer, :class:`havln_robot.motion.guard.MotionGuard`, fed the simulated streams and this loop's
tick times (:class:`Faults` injects faults into them): there is no second copy of the action
semantics or of the safety rules in the batch path. ``eval``, ``replay --backend batch``, training data
and ``bench sim`` all step through :meth:`ClosedLoop.step`.

Obstacle points: analytic walls, one shared rule
------------------------------------------------
motion_node builds obstacle points from the rendered depth image (plus 3 s of memory);
rendering 640x480 depth at 50 Hz is far too slow for batch. Batch samples the walls instead:
the faces of the walls around the free space the robot stands in (the boundary of :meth:`Scene.region`,
the polygons the contact model collides with, moved inwards by half the renderer's
``WALL_THICKNESS_M``: the face the camera sees) every :data:`WALL_SAMPLE_M`
within :data:`VIEW_RANGE_M` of the robot, in base_link of the TRUE pose (as the camera sees
them). On stairs that boundary (the union of the floors the flight joins) is not what is drawn:
there the walls are the renderer's own faces, at each floor's height (:meth:`ClosedLoop._walls_seen`).
Each sample carries the number of depth points the camera would return from that wall
patch (:func:`wall_weights`: columns x rows of a ``depth_stride``-strided 640x480 D435i image
over the ``obstacle_min_height_m``..``obstacle_max_height_m`` band), so the ``min_obstacle_points``
threshold of :func:`~havln_robot.motion.safety.forward_hazard` / ``turn_hazard`` counts the same
thing in both worlds (:attr:`Obstacles.weights`). Stairs and split levels are sampled as ground
cells through motion_node's climbable-terrain rule (:func:`~havln_robot.motion.safety.climbable_mask`),
judged on the cells the frame sees as motion_node judges each depth frame (:meth:`ClosedLoop._terrain_points`).
At the camera rate the samples inside the camera's :class:`~havln_robot.motion.safety.ViewRegion`
(field of view, range, the blind zone under the image) are one depth frame, remembered in the
SAME :class:`~havln_robot.motion.safety.ObstacleMemory` as live (odom frame, believed pose, 3 s):
:meth:`ClosedLoop._frame`. People reach the executor as people_node's tracks (config/sim.yaml
``people_source: detected``): the SAME :class:`~havln_robot.perception.people.PeopleTracker` fed
with the people the camera would detect (:meth:`ClosedLoop._detect_people`).
``test/test_closed_loop.py`` checks the point sets against rendered depth.

Determinism: one episode's run depends only on the world's seed (people) and the stepper's seed
(noise); the same seeds replay the same poses bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import shapely

from havln_robot import actions as A
from havln_robot.motion.checks import GyroYaw
from havln_robot.motion.executor import Executor, MotionConfig
from havln_robot.motion.guard import GuardConfig, MotionGuard
from havln_robot.motion.obstacles import ObstacleTracker, TrackerConfig
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.motion.safety import TERRAIN_CELL_M as SAFETY_TERRAIN_CELL_M
from havln_robot.motion.safety import (
    CameraMount,
    ObstacleMemory,
    Obstacles,
    Person,
    ViewRegion,
    blind_zone_m,
    climbable_mask,
    rebase_person,
    rebase_points,
)
from havln_robot.records import PARTIAL_DETAIL, ActionResult, CollisionRecord
from havln_robot.sim.robot import D435I_HFOV_DEG, BaseLimits, NoiseModel, NoisyBase, base_config
from havln_robot.sim.scene import WALL_THICKNESS_M

#: Spacing of the analytic wall samples along the free-space boundary, m (2 cm: finer than the
#: 5 cm obstacle-memory grid of motion_node, coarser than a depth pixel at 1 m).
WALL_SAMPLE_M = 0.02

#: Walls farther than this from base_link are not sampled, m: a 0.25 m step plus the 0.35 m half
#: body plus the front margin needs < 0.8 m; a turning 0.70 x 0.31 m body sweeps 0.38 m.
VIEW_RANGE_M = 1.2

#: Grid of the terrain samples (stairs, split levels), m: motion_node's climbable-terrain grid.
TERRAIN_CELL_M = SAFETY_TERRAIN_CELL_M

#: Terrain is sampled this far from base_link, m: the forward corridor ends at 0.35 + 0.25 + 0.10 m.
TERRAIN_REACH_M = 0.75
#: Side of the square tiles of terrain cells whose drawn surfaces are computed at once and kept per
#: scene (:meth:`ClosedLoop._terrain_cells`), cells (32 x 5 cm = 1.6 m). A speed choice only.
TERRAIN_TILE = 32

#: Radius of what the depth camera sees of a person inside the obstacle height band, m: the two
#: drawn legs (capsules of radius 0.085 m, 0.08 m either side of the centre, 0.1-0.86 m high;
#: ``havln_robot.sim.render.build_mjcf``), whose outer envelope is 0.165 m from the centre.
PERSON_DEPTH_RADIUS_M = 0.165

#: Depth image of sim_node's camera (config/sim.yaml: 640 x 480 px, 69.4 deg HFOV, square pixels).
CAMERA_WIDTH_PX = 640

#: The longest an action may take in batch before the stepper gives up, s of sim time (the
#: executor's own timeout ends every action well before: 2.5 x minimum + 1 s).
MAX_ACTION_S = 60.0


def _segment_distance(x: float, y: float, segs: np.ndarray) -> float:
    """Distance from (x, y) to the nearest of ``segs`` ((K, 2, 2) map xy), m."""
    a, b = segs[:, 0], segs[:, 1]
    ab = b - a
    L2 = np.maximum((ab**2).sum(1), 1e-12)
    t = np.clip(((x - a[:, 0]) * ab[:, 0] + (y - a[:, 1]) * ab[:, 1]) / L2, 0.0, 1.0)
    return float(np.hypot(a[:, 0] + t * ab[:, 0] - x, a[:, 1] + t * ab[:, 1] - y).min())


def _crosses(ax: float, ay: float, bx: float, by: float, segs: np.ndarray) -> bool:
    """True when the segment a-b (map xy, m) properly crosses any of ``segs`` ((K, 2, 2) map xy)."""
    p, q = segs[:, 0], segs[:, 1]

    def orient(ux, uy, vx, vy, wx, wy):
        return (vx - ux) * (wy - uy) - (vy - uy) * (wx - ux)

    d1 = orient(ax, ay, bx, by, p[:, 0], p[:, 1])
    d2 = orient(ax, ay, bx, by, q[:, 0], q[:, 1])
    d3 = orient(p[:, 0], p[:, 1], q[:, 0], q[:, 1], ax, ay)
    d4 = orient(p[:, 0], p[:, 1], q[:, 0], q[:, 1], bx, by)
    return bool(np.any((d1 * d2 < 0) & (d3 * d4 < 0)))


def _no_depth() -> np.ndarray:
    """The batch world's depth frames are analytic (:meth:`ClosedLoop._frame`): nothing to decode."""
    return np.zeros((0, 0), dtype=np.float32)


class ClosedLoopError(ValueError):
    """An action literal or a parameter the stepper cannot use; the message names it."""


def wall_weights(dist_m: np.ndarray, spacing_m: float, params: Mapping[str, Any]) -> np.ndarray:
    """Depth points a strided depth image holds from a wall patch ``spacing_m`` wide at ``dist_m``.

    Columns: ``spacing_m * f / (d * stride)``; rows: ``band * f / (d * stride)`` with the
    focal length ``f = (640 / 2) / tan(69.4 deg / 2)`` px of sim_node's camera and
    ``band = obstacle_max_height_m - obstacle_min_height_m`` (walls are taller than the band).

    Args:
        dist_m: (N,) distance from the camera, m (clipped to >= ``depth_min_m``).
        spacing_m: sample spacing along the wall, m.
        params: motion_node parameters (depth_stride, obstacle_*_height_m, depth_min_m).

    Returns:
        (N,) float64 point counts.
    """
    f = (CAMERA_WIDTH_PX / 2.0) / math.tan(math.radians(D435I_HFOV_DEG) / 2.0)
    stride = float(params["depth_stride"])
    band = float(params["obstacle_max_height_m"]) - float(params["obstacle_min_height_m"])
    d = np.maximum(np.asarray(dist_m, dtype=np.float64), max(float(params["depth_min_m"]), 0.05))
    return (spacing_m * f / (d * stride)) * (band * f / (d * stride))


@dataclass
class Faults:
    """Sensor and control-loop faults injected into the batch world, each from a sim time on (s;
    None = nominal), so that a test sees :class:`~havln_robot.motion.guard.MotionGuard` act in batch
    as it does live.

    Attributes:
        people_silent_from: the people source publishes nothing more.
        depth_silent_from: the depth camera publishes nothing more (its last frame goes stale).
        depth_frozen_from: the depth camera re-sends one header stamp (a wedged driver).
        odom_frozen_from: odometry re-sends its last message (same stamp, bit-identical values).
        odom_non_finite_from: odometry sends only NaN (every message dropped).
        tick_gap: (sim time s, gap s): the control tick due at that time comes this much later
            (a starved control loop); the base keeps the last command meanwhile. One-shot: cleared
            once it happened.
    """

    people_silent_from: float | None = None
    depth_silent_from: float | None = None
    depth_frozen_from: float | None = None
    odom_frozen_from: float | None = None
    odom_non_finite_from: float | None = None
    tick_gap: tuple[float, float] | None = None

    @staticmethod
    def on(since: float | None, t: float) -> bool:
        """True when a fault starting at ``since`` (None = never) is active at sim time ``t``."""
        return since is not None and t >= since


@dataclass
class ClosedLoopStep:
    """What one discrete action did in the batch world.

    Attributes:
        action: the literal.
        result: the executor's :class:`ActionResult` (None for a finished episode).
        collisions: the executor's collision records (blocked starts, contacts).
        contact: the first world contact during the action (:class:`havln_robot.sim.world.Contact`) or None.
        done, reason: the episode ended ("stop" | "budget").
        pose: TRUE pose after the action (x, y, z, yaw; map frame, m / rad).
        moved_m: true distance moved, m. rotated_rad: true yaw change, rad.
    """

    action: str
    result: ActionResult | None
    collisions: list[CollisionRecord] = field(default_factory=list)
    contact: Any = None
    done: bool = False
    reason: str = ""
    pose: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    moved_m: float = 0.0
    rotated_rad: float = 0.0

    @property
    def refused(self) -> bool:
        """True when the executor started nothing (blocked before the start, rejected, unsupported)."""
        return bool(self.result is not None and self.result.is_refused)


def _node_params(path: str | Path | None, node: str) -> dict[str, Any]:
    """One node's section of a profile (default ``config/sim.yaml``) merged over its spec's defaults
    and validated; cached per file and node.

    Raises:
        ClosedLoopError: the file cannot be read or a value is refused (one line naming it).
    """
    from havln_robot.params import ConfigError
    from havln_robot.paths import config_dir
    from havln_robot.perception.params import PEOPLE_PARAMS
    from havln_robot.rosparams import matching, merged, node_fqn, parse_file
    from havln_robot.sim.params import SIM_NODE_PARAMS

    f = Path(path) if path is not None else config_dir() / "sim.yaml"
    key = (str(f), node)
    if key not in _PROFILES:
        spec = {"motion_node": MOTION_PARAMS, "sim_node": SIM_NODE_PARAMS, "people_node": PEOPLE_PARAMS}[node]
        try:
            _PROFILES[key] = spec.validate(merged(matching(parse_file(f), node_fqn(node))), f"{f}: {node}")
        except ConfigError as exc:
            raise ClosedLoopError(str(exc)) from None
    return dict(_PROFILES[key])


_PROFILES: dict[tuple[str, str], dict[str, Any]] = {}


def sim_profile(path: str | Path | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The live sim graph's ``motion_node`` and ``sim_node`` parameters from a profile
    (default ``config/sim.yaml``), each merged over its spec's defaults and validated; cached.

    Raises:
        ClosedLoopError: the file cannot be read or a value is refused (one line naming it).
    """
    return _node_params(path, "motion_node"), _node_params(path, "sim_node")


def people_profile(path: str | Path | None = None) -> dict[str, Any]:
    """The live sim graph's ``people_node`` parameters (default ``config/sim.yaml``), merged over
    their spec's defaults and validated; cached.

    Raises:
        ClosedLoopError: the file cannot be read or a value is refused (one line naming it).
    """
    return _node_params(path, "people_node")


def motion_params(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """motion_node's parameters of the live sim graph (:func:`sim_profile`) with ``overrides``.

    Raises:
        ClosedLoopError: an unknown key or a bad value (the message names it).
    """
    p = sim_profile()[0]
    for k, v in (overrides or {}).items():
        if k not in p:
            raise ClosedLoopError(f"motion parameter {k!r} does not exist (see config/sim.yaml's motion_node section)")
        p[k] = v
    return p


class ClosedLoop:
    """Executes discrete actions on a :class:`World` through motion_node's executor (module docstring).

    Args:
        world: the episode's world (reset to the start by :meth:`reset`).
        seed: noise seed (odometry scale/drift, gyro noise and bias, accel noise), as sim_node's ``seed``.
        params: motion_node parameter overrides over config/sim.yaml's motion_node section (:func:`sim_profile`).
        noise: the base's error model (default: config/sim.yaml's sim_node section, :func:`base_config`); ``NoiseModel.none()`` = perfect.
        limits: the base's limits (default: the same section).
        physics_dt: base/world step, s (default one control period of motion_node, 1 / control_rate_hz;
            sim_node steps at 100 Hz: pass 0.01 for that).
        settle_s: idle time at the start of an episode (gyro bias learning), s.
        reset_world: reset the world at construction (False: it is at its start already; World.loop).
        faults: sensor / control-loop faults to inject (:class:`Faults`; default none).

    Attributes:
        base: the :class:`NoisyBase` (``base.odom`` = the believed pose, odom frame).
        executor: the :class:`Executor`.
        guard: the :class:`~havln_robot.motion.guard.MotionGuard` every action runs under, as in
            motion_node: it is fed the simulated odometry, IMU, depth and people streams and the
            gaps between control ticks.
        faults: the injected :class:`Faults` (may be changed between actions).
        results: every :class:`ActionResult` of the episode; refusals / partial steps counted in
            :attr:`refused` and :attr:`partial`.

    Raises:
        ClosedLoopError: bad parameters.
    """

    def __init__(
        self,
        world: Any,
        seed: int = 0,
        params: Mapping[str, Any] | None = None,
        noise: NoiseModel | None = None,
        limits: BaseLimits | None = None,
        physics_dt: float | None = None,
        settle_s: float = 0.5,
        reset_world: bool = True,
        faults: Faults | None = None,
    ) -> None:
        self.world = world
        self.faults = faults or Faults()
        self.seed = int(seed)
        self.params = motion_params(params)
        self.cfg = MotionConfig.from_params(self.params)
        self.period = 1.0 / float(self.params["control_rate_hz"])
        self.physics_dt = float(physics_dt) if physics_dt is not None else self.period
        if not self.physics_dt > 0 or self.physics_dt > self.period + 1e-12:
            raise ClosedLoopError(f"physics_dt: {physics_dt} s must be > 0 and <= the control period {self.period:g} s")
        self.settle_s = float(settle_s)
        if limits is None or noise is None:  # sim_node's base model from the same profile
            lim0, noise0 = base_config(sim_profile()[1])
            limits = limits or lim0
            noise = noise if noise is not None else noise0
        self.base = NoisyBase(world, limits, noise, seed=self.seed)
        self._walls: dict[tuple[Any, ...], Any] = {}
        self._cam_xy = (float(self.params["camera_x_m"]), float(self.params["camera_y_m"]))
        sim = sim_profile()[1]
        from havln_robot.camera import Intrinsics

        self._intrinsics = Intrinsics.from_hfov(int(sim["camera_width"]), int(sim["camera_height"]), float(sim["camera_hfov_deg"]))
        self._views: dict[float, ViewRegion] = {}
        self._camera_hz = float(sim["camera_rate_hz"])
        # people as motion_node receives them: sim_node's truth ('ground_truth') or people_node's
        # tracks ('detected', config/sim.yaml): the SAME Kalman tracker fed with the people the
        # camera sees (:meth:`_detect_people`)
        self._people_detected = str(sim["people_source"]) == "detected"
        self._people_cfg = None
        if self._people_detected:
            from havln_robot.perception.people import PeopleConfig

            pp = people_profile()
            self._people_cfg = PeopleConfig.from_params(pp)
            self._people_period = 1.0 / float(pp["rate_hz"])
        self._people_hz = float(sim["ground_truth_rate_hz"])
        self._guard_cfg = GuardConfig.from_params(self.params)
        self._camera_size = (int(sim["camera_width"]), int(sim["camera_height"]))
        self.reset(reset_world)

    # ------------------------------------------------------------------ state
    def reset(self, world: bool = True) -> None:
        """Robot at the episode start (``world``: reset the world too), odometry and IMU at zero,
        noise redrawn from the seed, executor idle."""
        if world:
            self.world.reset()
        self.base.reset(self.seed)
        self.executor = Executor(self.cfg)
        self.guard = MotionGuard(self._guard_cfg, float(self.world.t))
        # the depth stream's bookkeeping (age, frozen stamps, camera_info) by motion_node's own tracker
        self._depth = ObstacleTracker(TrackerConfig.from_params(self.params), CameraMount(0.0, 0.0, 0.0, 0.0))
        self._depth.intrinsics = self._intrinsics
        self._depth_stamp = self._depth_t = -math.inf
        self._people_t = -math.inf
        self._odom_t = float(self.world.t)
        self._odom_msg: tuple[float, tuple[float, ...]] = (self._odom_t, (0.0,) * 5)
        self.gyro = GyroYaw(float(self.params["gyro_bias_time_s"]))
        self.results: list[ActionResult] = []
        self.refused = 0
        self.partial = 0
        self._odom = (0.0, 0.0, 0.0)
        self._pts_world: np.ndarray | None = None
        self._pts_top, self._pts_fill = np.zeros(0), np.zeros(0)
        self._terr_xy, self._terr_h = np.zeros((0, 2)), np.zeros((0, 1))
        self._terr_ramp = np.zeros((0, 1), dtype=np.int64)
        self._terr_key: tuple[Any, ...] | None = None
        self._terr_pts: tuple[np.ndarray, np.ndarray] = (np.zeros((0, 2)), np.zeros(0))
        self._terrain_known = np.zeros(0, dtype=np.int64)  # map cells (keys) judged raised terrain this episode
        self._walls_key: tuple[Any, ...] | None = None
        self.memory = ObstacleMemory(keep_s=float(self.params["obstacle_memory_s"]))
        self._tracks: list[Person] = []
        self._tracker = None
        self._next_people_frame = -math.inf
        #: the last :meth:`sweep`'s chosen frames per view: (TRUE camera pose x, y, z, yaw (map, m /
        #: rad), sim time s, believed heading relative to the sweep's start rad) or None (retake)
        self.sweep_views: list[tuple[tuple[float, float, float, float], float, float] | None] | None = None
        if self._people_cfg is not None:
            from havln_robot.perception.people import PeopleTracker

            self._tracker = PeopleTracker(self._people_cfg)
        self._sense()
        for _ in range(int(round(self.settle_s / self.physics_dt))):
            self._physics()

    @property
    def odom(self) -> tuple[float, float, float]:
        """The BELIEVED pose: odometry (x, y, yaw) in the odom frame (m, rad), as motion_node sees it."""
        return self._odom

    def _sense(self) -> None:
        """The odometry and IMU messages of this instant, as motion_node takes them (the guard's
        freeze check sees each; :attr:`faults` may freeze or spoil the odometry)."""
        t = float(self.world.t)
        still = self.executor.stationary(t) and abs(self.base.odom.v) < 0.02
        im = self.base.imu
        self.gyro.add_orientation(t, float(im.yaw), stationary=still)
        o, f, g, ex = self.base.odom, self.faults, self.guard, self.executor
        g.sample("imu", t, (im.yaw, float(im.gyro[2]), float(im.accel[0]), float(im.accel[1])), t, ex)
        if f.on(f.odom_non_finite_from, t):
            g.stream_value("odom", "pose.position.x = nan")  # dropped: odometry stays at the last accepted
            return
        if f.on(f.odom_frozen_from, t):  # the last message again: same stamp, same values
            g.sample("odom", self._odom_msg[0], self._odom_msg[1], t, ex)
            return
        self._odom, self._odom_t = (o.x, o.y, o.yaw), t
        self._odom_msg = (t, (o.x, o.y, o.yaw, o.v, o.w))
        g.sample("odom", t, self._odom_msg[1], t, ex)

    def _physics(self) -> Any:
        out = self.base.step(self.physics_dt)
        self._sense()
        return out.contact

    # ------------------------------------------------------------------ obstacles
    def _wall_segments(self) -> np.ndarray:
        """(K, 2, 2) segments (map xy, m) of the wall faces the camera sees from the robot's place (:meth:`_walls_seen`)."""
        return self._walls_seen()[0]

    def _walls_seen(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The wall faces the camera sees from the robot's place.

        On a floor: the faces around the free space under the robot (the boundary of
        :meth:`Scene.region`, moved inwards by half ``WALL_THICKNESS_M``; cached per support).

        On stairs (a ramp support of a scene drawn by floors, :attr:`Scene.flat_floors`) the region
        is the union of the free spaces of all the floors the flight joins, at their different
        heights, and its boundary is not what the renderer draws. There the walls are the renderer's
        own (:func:`havln_robot.sim.render.cached_scene_floors`: each floor's walls at its height;
        their faces :func:`~havln_robot.sim.render.wall_faces`) of the linked floors whose walls
        reach into the obstacle band (:meth:`_ramp_floors`; cached per flight and set of floors),
        each by the face on the robot's side. The walking rule (the region) is unchanged.

        Returns:
            ((K, 2, 2) face segments, map xy, m; (K, 2) each face's drawn height span (bottom, top),
            absolute z, m -- None on a floor, where every wall spans the band).
        """
        w = self.world
        sup = w._support
        floors = self._ramp_floors()
        if floors is None:
            key: tuple[Any, ...] = (sup.kind, sup.index)
            segs = self._walls.get(key)
            if segs is None:
                # the renderer draws each wall WALL_THICKNESS_M thick, centred on the free-space boundary:
                # the face the camera sees stands half of it inside the free space
                region = w.scene.region(sup).buffer(-WALL_THICKNESS_M / 2.0, quad_segs=4, join_style="mitre")
                out = []
                for ring in shapely.get_parts(shapely.boundary(region)):
                    for line in shapely.get_parts(ring):
                        c = np.asarray(shapely.get_coordinates(line), dtype=np.float64)
                        if len(c) >= 2:
                            out.append(np.stack([c[:-1], c[1:]], axis=1))
                segs = np.concatenate(out, axis=0) if out else np.zeros((0, 2, 2))
                self._walls[key] = segs
            return segs, None
        key = (sup.kind, sup.index, floors)
        got = self._walls.get(key)
        if got is None:
            got = self._walls[key] = self._drawn_faces(floors)
        faces, span = got
        # the face on the robot's side of each wall (index 1: left of a -> b)
        x, y = float(w.pose[0]), float(w.pose[1])
        a, b = faces[:, 0, 0], faces[:, 0, 1]
        left = (b[:, 0] - a[:, 0]) * (y - a[:, 1]) - (b[:, 1] - a[:, 1]) * (x - a[:, 0]) > 0
        return faces[np.arange(len(faces)), left.astype(np.int64)], span

    def _drawn_faces(self, floors: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Both faces of the walls the renderer draws for ``floors`` (floor indices), each wall once.

        Returns:
            ((K, 2, 2, 2) faces, map xy, m, as :func:`~havln_robot.sim.render.wall_faces`; (K, 2)
            drawn height span of each (floor z, its top: the wall height, or the flight of stairs
            it ends under, :func:`~havln_robot.sim.scene.drawn_walls`), absolute z, m).
        """
        from havln_robot.sim.render import cached_scene_floors, clip_segments, wall_faces

        drawn = {g.index: g for g in cached_scene_floors(self.world.scene)}
        faces, spans, seen = [], [], np.zeros((0, 2, 2))
        for k in floors:
            fl = drawn[k]
            segs, tops = fl.walls, fl.wall_tops()
            if len(seen) and len(segs):  # a wall two floors draw in one place is one surface to the camera
                hit, other = shapely.STRtree(shapely.linestrings(seen)).query(shapely.linestrings(segs), predicate="dwithin", distance=0.01)
                if len(hit):
                    dup = np.zeros(len(segs), dtype=bool)
                    dup[hit] = True
                    near = shapely.buffer(shapely.multilinestrings(seen[np.unique(other)]), 0.01)
                    parts, src = clip_segments(segs[dup], near, return_index=True)
                    segs, tops = np.concatenate([segs[~dup], parts]), np.concatenate([tops[~dup], tops[dup][src]])
            if len(segs):
                seen = np.concatenate([seen, segs])
                f, keep = wall_faces(segs)
                faces.append(f)
                spans.append(np.stack([np.full(len(f), fl.z), tops[keep]], axis=1))
        if not faces:
            return np.zeros((0, 2, 2, 2)), np.zeros((0, 2))
        return np.concatenate(faces), np.concatenate(spans)

    def _ramp_floors(self) -> tuple[int, ...] | None:
        """On stairs of a scene drawn by floors: the floors (indices, ascending) linked to the flight
        (those of :meth:`Scene.region`) whose walls, drawn from the floor's height to its ceiling,
        reach into ``obstacle_min_height_m``..``obstacle_max_height_m`` above the ground under the
        robot (absolute z); None elsewhere (a floor support, or a scene drawing its own mesh)."""
        w = self.world
        sup = w._support
        if sup.kind != "ramp" or not getattr(w.scene, "flat_floors", True):
            return None
        from havln_robot.sim.render import cached_scene_floors

        g = float(w.pose[2])
        lo, hi = g + float(self.params["obstacle_min_height_m"]), g + float(self.params["obstacle_max_height_m"])
        linked = w.scene._linked_floors(sup)
        return tuple(fl.index for fl in cached_scene_floors(w.scene) if fl.index in linked and fl.z < hi and fl.z + fl.ceiling_m > lo)

    def _seen_surface(self, H: np.ndarray, R: np.ndarray, cam: tuple[float, float, float]) -> np.ndarray:
        """The drawn ground the camera sees at N points: the highest surface it looks down on there
        (surfaces are drawn one-sided, facing up: a slab or a flight's flat end below the camera, a
        flight whose plane passes under it, :meth:`Scene.ramp_planes_below`).

        Args:
            H: (N, K) absolute heights of the surfaces drawn at the points, -inf where a column is
                not drawn (:meth:`Scene.drawn_surfaces_many`), m.
            R: (N, K) the ramp whose sloped part each is, -1 for flat surfaces.
            cam: camera position (x, y, z), map frame, m.

        Returns:
            (N,) absolute height, m; -inf where the camera sees no surface.
        """
        if not H.shape[1]:
            return np.full(len(H), -np.inf)
        above = self.world.scene.ramp_planes_below(*cam)
        vis = np.where(R >= 0, above[np.maximum(R, 0)] if len(above) else False, H < cam[2])
        return np.where(vis, H, -np.inf).max(axis=1)

    def _load_walls(self) -> None:
        """Sample the walls within :data:`VIEW_RANGE_M` + a step of the TRUE position (map frame) with
        the height above the ground of each sample's top and the part of the obstacle band it fills
        (:meth:`_wall_band`), and the drawn ground heights around it (:meth:`_terrain_cells`)."""
        x, y, _, _ = self.world.pose
        sup = self.world._support
        # the samples depend on the support, the position and the ground height only: a turn, a
        # look or the expert's would_refuse at the same spot reuses them (1 mm / 1 cm keys)
        key = (sup.kind, sup.index, int(round(x * 1000)), int(round(y * 1000)), int(round(self.world.camera_pose[2] * 100)))
        if key == self._walls_key:
            return
        self._walls_key = key
        self._terr_xy, self._terr_h, self._terr_ramp = self._terrain_cells()
        self._terr_key = None
        segs, span = self._walls_seen()
        reach = VIEW_RANGE_M + A.FORWARD_STEP_M
        self._pts_world = np.zeros((0, 2))
        self._pts_top, self._pts_fill = np.zeros(0), np.zeros(0)
        if not len(segs):
            return
        a, b = segs[:, 0], segs[:, 1]
        ab = b - a
        L2 = np.maximum((ab**2).sum(1), 1e-12)
        s = np.clip(((x - a[:, 0]) * ab[:, 0] + (y - a[:, 1]) * ab[:, 1]) / L2, 0.0, 1.0)
        d = np.hypot(a[:, 0] + s * ab[:, 0] - x, a[:, 1] + s * ab[:, 1] - y)
        pts, src = [], []
        for k in np.flatnonzero(d <= reach):
            (ax, ay), (bx, by) = segs[k]
            n = max(1, int(math.ceil(math.hypot(bx - ax, by - ay) / WALL_SAMPLE_M)))
            u = (np.arange(n) + 0.5) / n
            pts.append(np.stack([ax + u * (bx - ax), ay + u * (by - ay)], axis=1))
            src.append(np.full(n, k))
        if not pts:
            return
        P, K = np.concatenate(pts), np.concatenate(src)
        keep = np.hypot(P[:, 0] - x, P[:, 1] - y) <= reach
        P, K = P[keep], K[keep]
        if span is None:  # a floor: every wall spans the band
            self._pts_world = P
            self._pts_top, self._pts_fill = np.full(len(P), float(self.params["obstacle_max_height_m"])), np.ones(len(P))
        else:
            self._pts_world, self._pts_top, self._pts_fill = self._wall_band(P, span[K])

    def _wall_band(self, P: np.ndarray, span: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """On stairs: the wall samples whose drawn face shows inside the obstacle band.

        A sample's face is seen from the drawn ground in front of it (:meth:`_seen_surface` at the
        sample: the flight, a slab; a wall of a lower floor ends under a slab or a flight that covers
        its top) up to the wall's top; what counts is the part between ``obstacle_min_height_m`` and
        ``obstacle_max_height_m`` above the ground under the robot.

        Args:
            P: (N, 2) samples on wall faces, map xy, m.
            span: (N, 2) drawn height span (bottom, top) of each sample's wall, absolute z, m.

        Returns:
            ((M, 2) the samples kept; (M,) the top of their visible part above the robot's ground, m;
            (M,) the fraction of the band it fills, 0..1).
        """
        w = self.world
        x, y, g, _ = w.pose
        lo, hi = float(self.params["obstacle_min_height_m"]), float(self.params["obstacle_max_height_m"])
        H, R = w.scene.drawn_surfaces_many(P[:, 0], P[:, 1])
        # the camera above base_link, not 0.3 m ahead of it: the samples are kept while the robot turns
        ground = self._seen_surface(H, R, (float(x), float(y), float(g) + float(self.params["camera_z_m"])))
        bottom = np.maximum(np.maximum(span[:, 0], ground) - g, lo)
        top = np.minimum(span[:, 1] - g, hi)
        ok = top > bottom
        return P[ok], top[ok], (top[ok] - bottom[ok]) / (hi - lo)

    def _terrain_cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The drawn ground around the TRUE position, sampled on a :data:`TERRAIN_CELL_M` grid within
        :data:`TERRAIN_REACH_M` + a step (a MOVE_FORWARD walks the reach along), only where stairs or
        another floor are within reach (elsewhere the ground is flat; returns nothing).

        Returns:
            ((N, 2) cell corners, map xy, m; (N, K) absolute heights of the surfaces drawn in each,
            m, in no particular column order, -inf where a column's surface is not drawn; (N, K) the
            ramp whose sloped part each is, -1 for flat surfaces: :meth:`Scene.drawn_surfaces_many`).
        """
        w, scene = self.world, self.world.scene
        x, y, _, _ = w.pose
        sup = w._support
        reach = TERRAIN_REACH_M + A.FORWARD_STEP_M
        rb = scene._ramp_bounds
        near_ramp = sup.kind == "ramp" or (
            len(rb) and bool(((rb[:, 0] <= x + reach) & (x - reach <= rb[:, 2]) & (rb[:, 1] <= y + reach) & (y - reach <= rb[:, 3])).any())
        )
        if not near_ramp and not (sup.kind == "floor" and len(scene.near_floors(sup.index)) > 1):
            return np.zeros((0, 2)), np.zeros((0, 1)), np.zeros((0, 1), dtype=np.int64)
        # the cells within reach, in rows of x (the order the frame's points keep)
        c = TERRAIN_CELL_M
        n = int(math.ceil(reach / c))
        ix0, iy0 = int(round(x / c)), int(round(y / c))
        gi, gj = np.meshgrid(np.arange(ix0 - n, ix0 + n + 1), np.arange(iy0 - n, iy0 + n + 1), indexing="ij")
        gi, gj = gi.ravel(), gj.ravel()
        px, py = gi * c, gj * c
        keep = (px - x) ** 2 + (py - y) ** 2 <= reach * reach
        gi, gj = gi[keep], gj[keep]
        xy, H, R = self._cell_surfaces(gi, gj)
        if not len(xy):
            return np.zeros((0, 2)), np.zeros((0, 1)), np.zeros((0, 1), dtype=np.int64)
        return xy, H, R

    def _cell_surfaces(self, gi: np.ndarray, gj: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The drawn surfaces of :data:`TERRAIN_CELL_M` cells (integer cell indices ``gi``, ``gj``:
        the cell's corner is (gi, gj) x the cell size, map frame), from square tiles of
        :data:`TERRAIN_TILE` cells computed once per scene (:meth:`Scene.drawn_surfaces_many`).

        Returns:
            ((N, 2) corners of the cells where something is drawn, in the order given, map xy, m;
            (N, K) absolute heights of the surfaces drawn there, -inf where a column is not drawn;
            (N, K) the ramp whose sloped part each is, -1 for flat surfaces).
        """
        scene = self.world.scene
        c = TERRAIN_CELL_M
        tiles = scene.__dict__.setdefault("_terrain_tiles", {})
        T = TERRAIN_TILE
        ti, tj = gi // T, gj // T
        H_parts, R_parts, order = [], [], []
        for key in sorted(set(zip(ti.tolist(), tj.tolist(), strict=True))):
            tile = tiles.get(key)
            if tile is None:
                ci, cj = np.meshgrid(np.arange(key[0] * T, key[0] * T + T), np.arange(key[1] * T, key[1] * T + T), indexing="ij")
                tile = tiles[key] = scene.drawn_surfaces_many(ci.ravel() * c, cj.ravel() * c)
            sel = np.flatnonzero((ti == key[0]) & (tj == key[1]))
            local = (gi[sel] - key[0] * T) * T + (gj[sel] - key[1] * T)
            H_parts.append(tile[0][local])
            R_parts.append(tile[1][local])
            order.append(sel)
        k = max((h.shape[1] for h in H_parts), default=0)
        H = np.full((len(gi), max(k, 1)), -np.inf)
        R = np.full((len(gi), max(k, 1)), -1, dtype=np.int64)
        for sel, h, r in zip(order, H_parts, R_parts, strict=True):
            H[sel, : h.shape[1]] = h
            R[sel, : r.shape[1]] = r
        drawn = np.isfinite(H).any(axis=1)
        return np.stack([gi[drawn] * c, gj[drawn] * c], axis=1), H[drawn], R[drawn]

    def _terrain_points(self) -> tuple[np.ndarray, np.ndarray]:
        """Ground the camera sees inside the obstacle height band: stairs rising ahead, a split level
        higher than the one the robot stands on (map xy, m; and the rise of each cell, m).

        The renderer draws floors flat at :attr:`Floor.z` and stairs sloped; motion_node judges depth
        points by their height above the ground under the robot (``obstacle_min_height_m`` ..
        ``obstacle_max_height_m``) and drops the ground it can climb
        (:func:`~havln_robot.motion.safety.climbable_mask`: stairs and ramps rising at most
        ``max_step_height_m`` per cell, reachable from its floor) -- the same two rules apply here,
        on the analytic ground heights of :data:`TERRAIN_CELL_M` cells. What remains is a face
        taller than a step (a split level's edge, a flight's side where the frame does not see the
        flight meet the floor). The candidates are the cells within :data:`TERRAIN_REACH_M`
        (:meth:`_terrain_cells`) that the camera sees inside the band; whether they are climbable is
        judged, as motion_node judges one depth frame, on every cell the frame sees
        (:meth:`_sector_cells`: the field of view out to ``depth_max_m``, low ground nearer than the
        image's lower edge unseen, the same blind-zone seeding). Heights are judged against the
        ground under the robot at the frame's time (a frame taken halfway up a flight sees the
        flight from there, as live). Each cell's ground is what the
        camera sees there: the highest drawn surface it looks down on (:meth:`Scene.drawn_surfaces`:
        floor slabs with their stairwell openings cut, :func:`~havln_robot.sim.scene.stairwell_cut`,
        below the camera; ramps whose plane passes under it, :meth:`Scene.ramp_planes_below`)."""
        if not len(self._terr_h):
            return self._terr_pts[0][:0], self._terr_pts[1][:0]
        w = self.world
        x, y, _, _ = w.pose
        z0 = float(w.camera_pose[2])
        c = TERRAIN_CELL_M
        # judged against the ground under the robot NOW (live: each frame's heights are above the
        # feet when it was taken), on the cells within reach; a look (or a turn by less than 3 deg) reuses the result
        view = self._view()
        key = (
            self._walls_key,
            int(round(x / c)),
            int(round(y / c)),
            int(round(z0 * 100)),
            int(round(float(w.pose[3]) * 20)),
            round(view.mount.pitch, 6),
        )
        if key == self._terr_key:
            return self._terr_pts
        # the camera sees the highest drawn surface it is above (one rising ahead is seen even where
        # it is higher than the camera; one overhead is not)
        cam_z = z0 + float(self.params["camera_z_m"])
        yaw = float(w.pose[3])
        cy_, sy_ = math.cos(yaw), math.sin(yaw)
        cx, cy = self._cam_xy
        cam_x, cam_y = x + cy_ * cx - sy_ * cy, y + sy_ * cx + cy_ * cy
        lo, hi = float(self.params["obstacle_min_height_m"]), float(self.params["obstacle_max_height_m"])
        # first the ground within reach (in view, inside the height band): most frames near stairs have none
        P = self._terr_xy
        near = (P[:, 0] - x) ** 2 + (P[:, 1] - y) ** 2 <= TERRAIN_REACH_M**2
        top = self._seen_surface(self._terr_h[near], self._terr_ramp[near], (cam_x, cam_y, cam_z))
        P, dz = P[near], top - z0
        dx, dy = P[:, 0] + 0.5 * c - x, P[:, 1] + 0.5 * c - y  # cell centres, map axes, from base_link
        cand = np.isfinite(top) & (dz >= lo) & (dz <= hi)
        if cand.any():
            cand[cand] = view.contains(cy_ * dx[cand] + sy_ * dy[cand], -sy_ * dx[cand] + cy_ * dy[cand], dz[cand])
        step = float(self.params["max_step_height_m"])
        if not cand.any() or step <= 0:
            self._terr_key, self._terr_pts = key, (P[cand], dz[cand])
            return self._terr_pts
        self._terr_key, self._terr_pts = key, self._unclimbable((x, y, z0), (cam_x, cam_y, cam_z), yaw, view, (lo, hi, step))
        return self._terr_pts

    def _unclimbable(self, robot: tuple, cam: tuple, yaw: float, view: ViewRegion, limits: tuple) -> tuple[np.ndarray, np.ndarray]:
        """The cells (map xy, m) this frame sees inside the height band ``limits`` (lo, hi, max step, m)
        that motion_node would not judge climbable, and their rise above the robot's ground ``robot[2]``, m."""
        x, y, z0 = robot
        cam_x, cam_y, _cam_z = cam
        lo, hi, step = limits
        c = TERRAIN_CELL_M
        cy_, sy_ = math.cos(yaw), math.sin(yaw)
        # motion_node judges the ground on each frame's own points: whether that ground is climbable
        # is decided on the cells this frame sees (the camera's field of view out to its depth range,
        # ground nearer than the image's lower edge unseen), so a flight seen from its side counts
        # as climbable when the frame also sees where it meets the floor (val_seen 711), as live
        Q, H, R = self._sector_cells(cam_x, cam_y, yaw, view)
        top = self._seen_surface(H, R, cam)
        seen = np.isfinite(top)
        Q, qz = Q[seen], top[seen] - z0
        qx, qy = Q[:, 0] + 0.5 * c - x, Q[:, 1] + 0.5 * c - y
        vis = view.contains(cy_ * qx + sy_ * qy, -sy_ * qx + cy_ * qy, qz)
        Q, qx, qy, qz = Q[vis], qx[vis], qy[vis], qz[vis]
        # binned on the map's axes about base_link (each sample is one TERRAIN_CELL_M cell, so the
        # cells stay cells); the blind zone as motion_node's ObstacleTracker passes it
        # raised terrain judged climbable in an earlier frame stays terrain (a landing whose flight
        # is now under the blind zone), as motion_node's ObstacleTracker remembers it in its floor memory
        qkey = np.floor(Q[:, 0] / c + 0.5).astype(np.int64) * 1_000_003 + np.floor(Q[:, 1] / c + 0.5).astype(np.int64)
        known = np.isin(qkey, self._terrain_known) if len(self._terrain_known) else None
        risen = np.zeros(len(qx), dtype=bool)
        climb = climbable_mask(
            np.stack([qx, qy, qz], axis=1), step, cell_m=c, blind_m=blind_zone_m(self._intrinsics, view.mount), known=known, risen=risen
        )
        new = qkey[risen]
        if len(new):
            self._terrain_known = np.union1d(self._terrain_known, new)
        band = (qz >= lo) & (qz <= hi) & ~climb & ((Q[:, 0] - x) ** 2 + (Q[:, 1] - y) ** 2 <= TERRAIN_REACH_M**2)
        return Q[band], qz[band]

    def _sector_cells(self, cam_x: float, cam_y: float, yaw: float, view: ViewRegion) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The :data:`TERRAIN_CELL_M` cells whose centres lie in the camera's horizontal field of view
        within its depth range (``view``; a cell's width of slack, :meth:`ViewRegion.contains`
        decides), with their drawn surfaces (:meth:`_cell_surfaces`).

        Args:
            cam_x: the camera's x, map frame, m.
            cam_y: the camera's y, map frame, m.
            yaw: its heading, map frame, rad.
            view: motion_node's view region (half field of view, depth range).

        Returns:
            As :meth:`_cell_surfaces`.
        """
        c = TERRAIN_CELL_M
        rng = float(view.max_range) + c
        half = float(view.half_hfov) + c / max(float(view.min_range), 0.1)
        a = yaw + np.linspace(-half, half, 9)
        xs = np.concatenate([[cam_x], cam_x + rng * np.cos(a)])
        ys = np.concatenate([[cam_y], cam_y + rng * np.sin(a)])
        gi, gj = np.meshgrid(
            np.arange(int(math.floor(xs.min() / c)) - 1, int(math.ceil(xs.max() / c)) + 1),
            np.arange(int(math.floor(ys.min() / c)) - 1, int(math.ceil(ys.max() / c)) + 1),
            indexing="ij",
        )
        gi, gj = gi.ravel(), gj.ravel()
        ex, ey = (gi + 0.5) * c - cam_x, (gj + 0.5) * c - cam_y
        bearing = np.abs((np.arctan2(ey, ex) - yaw + math.pi) % (2 * math.pi) - math.pi)
        keep = (ex * ex + ey * ey <= rng * rng) & (bearing <= half)
        return self._cell_surfaces(gi[keep], gj[keep])

    def obstacles(self) -> Obstacles:
        """What motion_node would know now, without a new depth frame: the points the camera sees
        from the TRUE pose plus the remembered ones (nothing is added to the memory), and the
        people. See :meth:`_frame`."""
        pts, weights = self._frame(remember=False)
        return Obstacles(points=pts, people=self._people(), weights=weights)

    def _view(self) -> ViewRegion:
        """motion_node's :class:`ViewRegion` for the current camera pitch (mount pitch plus the
        executor's virtual pitch when ``virtual_pitch_tilts_depth``)."""
        p = self.params
        pitch = math.radians(float(p["camera_pitch_deg"])) + (float(self.executor.pitch) if p["virtual_pitch_tilts_depth"] else 0.0)
        key = round(pitch, 6)
        v = self._views.get(key)
        if v is None:
            mount = CameraMount(float(p["camera_x_m"]), float(p["camera_y_m"]), float(p["camera_z_m"]), pitch)
            k = self._intrinsics
            v = ViewRegion.from_camera(
                k, k.width, k.height, mount, float(p["obstacle_min_height_m"]), float(p["depth_max_m"]), float(p["depth_min_m"])
            )
            self._views[key] = v
        return v

    def _frame(self, remember: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """One depth frame as motion_node's :class:`~havln_robot.motion.obstacles.ObstacleTracker`
        turns it into obstacles: the wall / terrain / leg samples inside the camera's view
        (:class:`ViewRegion` of the TRUE pose: horizontal field of view, depth range, the blind zone
        under the image for low ground), remembered in the SAME :class:`ObstacleMemory` (odom frame,
        moved by the BELIEVED pose, forgotten after ``obstacle_memory_s`` or when in view and not
        seen again), returned with the remembered cells, as live.

        Returns:
            ((N, 2) base_link points, m; (N,) depth points each stands for).
        """
        x, y, _, yaw = self.world.pose
        c, s = math.cos(yaw), math.sin(yaw)
        top = float(self.params["obstacle_max_height_m"])
        P = self._pts_world if self._pts_world is not None else np.zeros((0, 2))
        tp, tdz = self._terrain_points()
        nw = len(P)
        if nw or len(tp):
            Q = np.concatenate([P, tp]) if len(tp) else P
            dx, dy = Q[:, 0] - x, Q[:, 1] - y
            bx, by = c * dx + s * dy, -s * dx + c * dy
            z = np.concatenate([self._pts_top, tdz])  # a wall sample at the top of its visible part
        else:
            bx = by = z = np.zeros(0)
        cam = np.hypot(bx - self._cam_xy[0], by - self._cam_xy[1])
        weights = wall_weights(cam, WALL_SAMPLE_M, self.params)
        weights[:nw] *= self._pts_fill  # a wall that fills part of the band returns that part of the points
        if len(tp):  # a ground cell shows as a patch TERRAIN_CELL_M wide, ~its rise tall
            weights[nw:] = wall_weights(cam[nw:], TERRAIN_CELL_M, self.params) * 0.25
        legs = self._person_points()
        if len(legs):  # people are in the depth image too (their legs inside the height band)
            lc = np.hypot(legs[:, 0] - self._cam_xy[0], legs[:, 1] - self._cam_xy[1])
            bx, by = np.concatenate([bx, legs[:, 0]]), np.concatenate([by, legs[:, 1]])
            z = np.concatenate([z, np.full(len(legs), top)])
            weights = np.concatenate([weights, wall_weights(lc, WALL_SAMPLE_M, self.params)])
        if remember and self._tracker is not None and float(self.world.t) + 1e-9 >= self._next_people_frame:
            # people_node processes at most rate_hz frames per second (config/sim.yaml: 15 of the camera's 30)
            self._next_people_frame = float(self.world.t) + self._people_period
            self._detect_people()
        view = self._view()
        seen = view.contains(bx, by, z)
        pts = np.stack([bx[seen], by[seen]], axis=1)
        w = weights[seen]
        if float(self.params["obstacle_memory_s"]) <= 0:
            return pts, w
        if remember:
            self.memory.add(float(self.world.t), np.stack([bx[seen], by[seen], z[seen]], axis=1), self._odom, view, weights=w)
        mp, mn = self.memory.cells(float(self.world.t), self._odom)
        if len(mp):
            pts, w = np.concatenate([pts, mp]), np.concatenate([w, mn])
        return pts, w

    def _person_points(self) -> np.ndarray:
        """(N, 2) base_link points on the near half of each person's leg envelope (:data:`PERSON_DEPTH_RADIUS_M`)."""
        w = self.world
        crowd = w.crowd
        if not len(crowd):
            return np.zeros((0, 2))
        x, y, z, yaw = w.pose
        c, s = math.cos(yaw), math.sin(yaw)
        p = crowd.positions(w.t)
        dx, dy = p[:, 0] - x, p[:, 1] - y
        bx, by = c * dx + s * dy, -s * dx + c * dy
        ok = (np.abs(p[:, 2] - z) < 1.0) & (np.hypot(bx, by) <= VIEW_RANGE_M + PERSON_DEPTH_RADIUS_M)
        if not ok.any():
            return np.zeros((0, 2))
        r = PERSON_DEPTH_RADIUS_M
        n = max(4, int(math.ceil(math.pi * r / WALL_SAMPLE_M)))
        out = []
        for k in np.flatnonzero(ok):
            toward = math.atan2(-by[k], -bx[k])  # the side facing the robot
            a = toward + np.linspace(-math.pi / 2, math.pi / 2, n)
            out.append(np.stack([bx[k] + r * np.cos(a), by[k] + r * np.sin(a)], axis=1))
        return np.concatenate(out)

    def _detect_people(self) -> None:
        """One people_node frame: every person on the robot's floor whose centre the camera sees
        (horizontal field of view, 0.3 m to ``max_range_m`` from the camera, as
        :class:`~havln_robot.perception.people.DepthPeopleTracker` judges visibility) is a
        detection at its true centre; the SAME :class:`~havln_robot.perception.people.PeopleTracker`
        (odom frame, believed pose) confirms, keeps and drops tracks as live."""
        if self._tracker is None:
            return
        if not len(self.world.crowd) and not self._tracks:
            return  # nobody to see, nothing tracked: people_node publishes an empty list
        from havln_robot.perception.people import Detection, camera_frustum

        w = self.world
        k = self._intrinsics
        half = math.atan2(min(k.cx, k.width - 1 - k.cx), k.fx)
        mx, my = self._cam_xy
        segs_all = self._wall_segments()  # the wall faces the camera sees from here, map frame
        x0, y0, _, yaw0 = w.pose
        c0, s0 = math.cos(yaw0), math.sin(yaw0)
        cam_w = (x0 + c0 * mx - s0 * my, y0 + s0 * mx + c0 * my)

        def measured_past(xy: np.ndarray) -> np.ndarray:
            # live: the depth image reached past the point (depth_free_space); here: no wall of the
            # robot's floor between the camera and it (the analytic frame has no holes)
            if not len(segs_all):
                return np.ones(len(xy), dtype=bool)
            wx, wy = x0 + c0 * xy[:, 0] - s0 * xy[:, 1], y0 + s0 * xy[:, 0] + c0 * xy[:, 1]
            return np.array(
                [not _crosses(cam_w[0], cam_w[1], float(a), float(b), segs_all) for a, b in zip(wx, wy, strict=True)], dtype=bool
            )

        visible = camera_frustum(k, self._cam_xy, float(self._people_cfg.max_range_m), measured_past)

        dets = []
        if len(w.crowd):
            x, y, z, yaw = w.pose
            c, s = math.cos(yaw), math.sin(yaw)
            p = w.crowd.positions(w.t)
            dx, dy = p[:, 0] - x, p[:, 1] - y
            bxy = np.stack([c * dx + s * dy, -s * dx + c * dy], axis=1)
            # on the robot's floor, in view and not behind a wall of it (``visible``)
            ok = np.abs(p[:, 2] - z) < 1.0
            if ok.any():
                ok &= visible(bxy)
            # the whole body inside the image: a person cut by the image edge is a fragment the
            # detector's width test rejects (half a shoulder breadth, 0.25 m, inside the edge)
            rng = np.hypot(bxy[:, 0] - mx, bxy[:, 1] - my)
            bearing = np.abs(np.arctan2(bxy[:, 1] - my, bxy[:, 0] - mx))
            ok &= bearing + np.arctan2(0.25, np.maximum(rng, 0.3)) <= half
            if ok.any():
                # the detector clusters depth on a cell_m grid (8-connected): legs closer to a wall
                # than their envelope plus ~1.5 cells merge with it into one cluster too wide to be
                # a person -- people_node misses a person standing against a wall or in a door frame
                segs = self._wall_segments()
                if len(segs):
                    near = PERSON_DEPTH_RADIUS_M + 1.5 * float(self._people_cfg.cell_m)
                    for i in np.flatnonzero(ok):
                        ok[i] = _segment_distance(float(p[i, 0]), float(p[i, 1]), segs) > near
            dets = [Detection(float(bxy[i, 0]), float(bxy[i, 1]), 1.7, 0.0, 0.45, 0.3, 100) for i in np.flatnonzero(ok)]
        self._tracks = [tr.person() for tr in self._tracker.update(float(w.t), dets, self._odom, visible)]

    def _people(self) -> list[Person]:
        if self._tracker is not None:
            return list(self._tracks)
        w = self.world
        crowd = w.crowd
        if not len(crowd):
            return []
        x, y, z, yaw = w.pose
        c, s = math.cos(yaw), math.sin(yaw)
        p = crowd.positions(w.t)
        dx, dy = p[:, 0] - x, p[:, 1] - y
        ok = (np.abs(p[:, 2] - z) < 1.0) & (np.hypot(dx, dy) <= 10.0)
        return [Person(float(c * dx[k] + s * dy[k]), float(-s * dx[k] + c * dy[k]), int(crowd.ids[k])) for k in np.flatnonzero(ok)]

    # ------------------------------------------------------------------ actions
    def would_refuse(self, action: str, yaw_offset: float = 0.0) -> bool:
        """True when motion_node's executor would refuse ``action`` before starting it here and now
        (asks a fresh :class:`Executor` with the same configuration; nothing moves). The expert
        uses it so that it plans with the executor's rules rather than a copy of them.

        Args:
            action: an HA-VLN literal.
            yaw_offset: ask as if the robot had first turned by this much (rad, CCW +): what it
                knows now, in the turned base_link (the expert's search for a free heading).
        """
        self._load_walls()
        obs = self.obstacles()
        if yaw_offset:
            c, s = math.cos(yaw_offset), math.sin(yaw_offset)
            pts = obs.points
            if pts is not None and len(pts):
                pts = np.stack([c * pts[:, 0] + s * pts[:, 1], -s * pts[:, 0] + c * pts[:, 1]], axis=1)
            people = [
                Person(c * p.x + s * p.y, -s * p.x + c * p.y, p.human_id, c * p.vx + s * p.vy, -s * p.vx + c * p.vy) for p in obs.people
            ]
            obs = Obstacles(points=pts, people=people, weights=obs.weights)
        x, y, th = self._odom
        probe = Executor(self.cfg)
        tick = probe.start(action, float(self.world.t), (x, y, th + yaw_offset), self.gyro.yaw + yaw_offset, obs)
        return bool(tick.results and tick.results[0].is_refused)

    def _execute(self, action: str, frames: Any = None) -> tuple[list[ActionResult], list[CollisionRecord], Any]:
        """Tick the executor through ``action`` (not STOP) to its result, as motion_node does; returns
        (results, collision records, the first world contact or None).

        Args:
            action: the primitive.
            frames: a :class:`~havln_robot.perception.sweep.SweepSelector` to feed as agent_node
                feeds it during a sweep: the IMU yaw the robot believes (motion_node's gyro yaw) at
                every control tick, and every camera frame (stamp = sim time; data = the TRUE camera
                pose and time, where the frame is rendered if chosen); None = no recording.
        """
        w = self.world
        ex = self.executor
        t0 = float(w.t)
        if frames is not None:
            frames.track.add(t0, self.gyro.yaw)
            frames.offer(t0, (w.camera_pose, t0))
        contact = None
        self._load_walls()
        f, g, depth = self.faults, self.guard, self._depth
        # the newest depth frame at the start (live: <= 1 / camera_rate_hz old)
        pts, wts = self._frame() if self._camera_frame(t0) else (None, None)
        at = self._odom  # where it was taken: between frames its points move into the current base_link, as live
        people, people_at = self._people_message(t0, [])
        fresh = depth.frame_problem(t0) is None
        obs = Obstacles(points=pts if fresh else None, people=people, weights=wts if fresh else None)
        tick = g.start(ex, action, t0, self._odom, self.gyro.yaw, obs, depth.frame_problem(t0)).tick
        self.base.command(*tick.cmd)
        results, cols = list(tick.results), list(tick.collisions)
        next_tick = t0 + self.period
        cam_period, people_period = 1.0 / self._camera_hz, 1.0 / self._people_hz
        next_cam, next_people = t0 + cam_period, t0 + people_period
        cam_t: float | None = None
        gap = f.tick_gap
        while not results and w.t - t0 < MAX_ACTION_S:
            c = self._physics()
            if contact is None and c is not None:
                contact = c
            if gap is not None and w.t + 1e-9 >= gap[0]:  # fault: this tick comes late
                next_tick, gap, f.tick_gap = next_tick + gap[1], None, None
            if w.t + 1e-9 >= next_tick:
                next_tick += self.period
                t = float(w.t)
                # as live: a new depth frame at the camera rate, havln/people at the ground-truth rate
                if w.t + 1e-9 >= next_cam:
                    next_cam += cam_period
                    if self._camera_frame(t):
                        pts, wts = self._frame()
                        at = self._odom
                        cam_t = t
                if w.t + 1e-9 >= next_people:
                    next_people += people_period
                    people, people_at = self._people_message(t, people, people_at)
                obs = self._tick_obstacles(t, (pts, wts, at), (people, people_at))
                a = self.base.imu.accel
                if frames is not None:
                    frames.track.add(float(w.t), self.gyro.yaw)
                    if cam_t is not None:
                        frames.offer(cam_t, (w.camera_pose, cam_t))
                        cam_t = None
                tick = g.tick(
                    ex,
                    w.t,
                    self._odom,
                    self.gyro.yaw,
                    lambda obs=obs: obs,
                    accel=(float(a[0]), float(a[1])),
                    odom_t=self._odom_t,
                    depth_problem=lambda t=t: depth.frame_problem(t),
                ).tick
                if tick is None:  # pragma: no cover - the loop runs only while the executor is busy
                    break
                self.base.command(*tick.cmd)
                results += tick.results
                cols += tick.collisions
        if not results:  # pragma: no cover - the executor's timeout ends every action first
            results = list(ex.abort(w.t, f"batch: no result after {MAX_ACTION_S:g} s").results)
        w.camera_pitch = float(ex.pitch)
        return results, cols, contact

    def _tick_obstacles(self, t: float, frame: tuple, people: tuple) -> Obstacles:
        """What motion_node holds at a tick: the last depth frame's points and weights (``frame``: points,
        weights, the odometry pose it was taken at) moved into the current base_link, none while the
        frame is unusable; the last people message (``people``: people, the pose they were in), none when stale."""
        pts, wts, at = frame
        persons, people_at = people
        here = self._odom
        fresh = self._depth.frame_problem(t) is None  # live: an unusable frame gives no points
        if t - self._people_t > self._guard_cfg.people_timeout_s:
            persons = []
        elif people_at != here:
            persons = [rebase_person(q, people_at, here) for q in persons]
        return Obstacles(points=rebase_points(pts, at, here) if fresh else None, people=persons, weights=wts if fresh else None)

    def _camera_frame(self, t: float) -> bool:
        """A depth frame arrives at sim time ``t``: the depth stream's bookkeeping (motion_node's
        tracker: age, frozen stamps) takes it; False when the camera is silent (:attr:`faults`)."""
        f = self.faults
        if f.on(f.depth_silent_from, t):
            return False
        if t <= self._depth_t:  # no sim time passed (a refused action): the same frame
            return True
        if not f.on(f.depth_frozen_from, t) or self._depth_stamp == -math.inf:
            self._depth_stamp = t
        self._depth_t = t
        w, h = self._camera_size
        self._depth.add_depth(t, _no_depth, w, h, stamp=self._depth_stamp, raw_stamp=self._depth_stamp)
        return True

    def _people_message(
        self, t: float, people: list[Person], at: tuple[float, float, float] | None = None
    ) -> tuple[list[Person], tuple[float, float, float]]:
        """The people message of sim time ``t`` and the odom pose it was taken at; the previous
        (``people`` at ``at``) when the people source is silent (:attr:`faults`)."""
        f = self.faults
        if f.on(f.people_silent_from, t):
            return people, at if at is not None else self._odom
        self.guard.heard_people(t)
        self._people_t = t
        return self._people(), self._odom

    def step(self, action: str) -> ClosedLoopStep:
        """Execute one discrete action to its end (result) and do the episode bookkeeping.

        The action counts against the world's 500-action budget; STOP ends the episode. LOOK_UP /
        LOOK_DOWN set the world's camera pitch from the executor's virtual pitch.

        Raises:
            ClosedLoopError: ``action`` is not one of the six HA-VLN literals.
        """
        w = self.world
        if action not in A.ACTIONS:
            raise ClosedLoopError(f"unknown action {action!r}; expected one of {', '.join(A.ACTIONS)}")
        if w.done:
            return ClosedLoopStep(action, None, [], None, True, w.reason, w.pose)
        w.actions.append(action)
        x0, y0, _, yaw0 = w.pose
        ex = self.executor
        t0 = float(w.t)
        contact = None
        if action == A.STOP:
            tick = ex.stop(t0, "STOP", self._odom, self.gyro.yaw)
            self.base.command(*tick.cmd)
            results, cols = list(tick.results), list(tick.collisions)
            w.stopped = True
            w.done, w.reason = True, "stop"
        else:
            results, cols, contact = self._execute(action)
        res = results[-1] if action == A.STOP or len(results) == 1 else results[0]
        self.results.append(res)
        if res.is_refused and action != A.STOP:
            self.refused += 1
        if action == A.MOVE_FORWARD and res.detail.startswith(PARTIAL_DETAIL):
            self.partial += 1
        if not w.done and len(w.actions) >= w.max_actions:
            w.done, w.reason = True, "budget"
        return self._record(action, res, cols, contact, (x0, y0, yaw0))

    def idle(self, seconds: float) -> None:
        """Stand still for ``seconds`` of sim time (agent_node's ``blocked_wait_s`` after a blocked
        motion): the base and the world step at ``physics_dt`` with no command, people walk on (and
        may walk into the robot), odometry and IMU keep feeding the guard. Nothing is recorded."""
        for _ in range(max(0, int(round(float(seconds) / self.physics_dt)))):
            self._physics()

    def panorama_turn(self, action: str) -> ClosedLoopStep:
        """A turn the agent makes for a panorama (a retaken view, a discrete panorama): executed as
        :meth:`step` executes ``action`` (the executor, ticked to its result; sim time passes) but
        not a challenge action: not in ``world.actions``, not against the budget, not in :attr:`refused`.

        Raises:
            ClosedLoopError: ``action`` is not TURN_LEFT / TURN_RIGHT.
        """
        w = self.world
        if action not in (A.TURN_LEFT, A.TURN_RIGHT):
            raise ClosedLoopError(f"panorama turn {action!r}: expected TURN_LEFT or TURN_RIGHT")
        if w.done:
            return ClosedLoopStep(action, None, [], None, True, w.reason, w.pose)
        x0, y0, _, yaw0 = w.pose
        results, cols, contact = self._execute(action)
        return self._record(action, results[0], cols, contact, (x0, y0, yaw0))

    def sweep(self, action: str = A.SWEEP_LEFT, views: int = 0, tolerance_deg: float = 0.85, frames: Any = None) -> ClosedLoopStep:
        """agent_node's sweep panorama before a decision (config/sim.yaml ``panorama_mode: sweep``):
        one 360 deg turn through motion_node's executor (its SWEEP primitive at its sweep rate,
        :data:`havln_robot.actions.PRIMITIVE_TABLE`), ticked as :meth:`step` ticks an action, so the
        sim time a panorama takes passes (people walk on, and may walk into the turning robot) and
        the heading ends where the turn's closure error leaves it. Not a challenge action: not in
        ``world.actions``, not against the budget, not counted in :attr:`refused`.

        With ``views`` > 0 the panorama's frames are chosen as agent_node chooses them, by the SAME
        :class:`~havln_robot.perception.sweep.SweepSelector`: a camera frame at the camera rate,
        placed by the yaw the robot believes (motion_node's gyro yaw, relative to the sweep's start),
        the nearest within ``tolerance_deg`` of each view heading (agent_node's
        ``view_tolerance_deg``). :attr:`sweep_views` then holds, per view, the frame's TRUE camera
        pose and sim time and its believed heading (a view is rendered there, people where they were
        then), or None where no frame qualified (agent_node retakes it standing still).

        Args:
            action: SWEEP_LEFT or SWEEP_RIGHT.
            views: view headings of the panorama (12: 30° apart); 0 = no frame selection.
            tolerance_deg: largest |believed heading - view heading| of a chosen frame, deg.
            frames: a selector to feed instead (an object with ``track.add(stamp, yaw)`` and
                ``offer(stamp, (camera pose, t))``, as agent_node feeds its
                :class:`~havln_robot.perception.sweep.SweepSelector`; ``views`` is then ignored and
                :attr:`sweep_views` stays None): the agent's simulator IO chooses the frames itself.

        Returns:
            A :class:`ClosedLoopStep` (``result``: the executor's; None when the episode is over).

        Raises:
            ClosedLoopError: ``action`` is not SWEEP_LEFT / SWEEP_RIGHT.
        """
        w = self.world
        if action not in A.SWEEPS:
            raise ClosedLoopError(f"unknown sweep {action!r}; expected one of {', '.join(A.SWEEPS)}")
        self.sweep_views = None
        if w.done:
            return ClosedLoopStep(action, None, [], None, True, w.reason, w.pose)
        x0, y0, _, yaw0 = w.pose
        sel = frames
        if frames is None and views > 0:
            from havln_robot.perception.sweep import SweepConfig, SweepSelector, YawTrack

            direction = "left" if action == A.SWEEP_LEFT else "right"
            sel = SweepSelector(SweepConfig(int(views), direction, float(tolerance_deg)), YawTrack(), float(w.t))
        results, cols, contact = self._execute(action, sel)
        if sel is not None and frames is None:
            ok = results[0].outcome == "ok"
            self.sweep_views = [
                None if (c is None or not ok) else (c.data[0], c.data[1], math.radians(c.heading_deg)) for c in sel.select(0.0)
            ]
        return self._record(action, results[0], cols, contact, (x0, y0, yaw0))

    def _record(
        self, action: str, res: ActionResult, cols: list[CollisionRecord], contact: Any, start: tuple[float, float, float]
    ) -> ClosedLoopStep:
        """The :class:`ClosedLoopStep` of an action that started at ``start`` (x, y, yaw; map frame, m / rad)."""
        w = self.world
        x0, y0, yaw0 = start
        x1, y1, _, yaw1 = w.pose
        return ClosedLoopStep(
            action,
            res,
            cols,
            contact,
            w.done,
            w.reason,
            w.pose,
            math.hypot(x1 - x0, y1 - y0),
            (yaw1 - yaw0 + math.pi) % (2 * math.pi) - math.pi,
        )
