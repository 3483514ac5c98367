"""The simulated world of one episode: robot body, people, collisions, ground truth (pure Python).

:class:`World` holds the TRUE robot pose in the map frame and moves it by small continuous
motions (:meth:`World.move`), which the noisy Go2 base (:class:`havln_robot.sim.robot.NoisyBase`)
drives at its physics rate -- in sim_node, and in batch mode through
:class:`havln_robot.sim.closed_loop.ClosedLoop`, which :meth:`World.step` wraps: a discrete action
(0.25 m / 15 deg / 30 deg tilt) is executed by motion_node's own executor, never by rules of
this module.

Collisions (as HA-VLN counts them: overlapping radii) -- the robot is a disc of
``robot_radius`` (default :data:`havln_robot.sim.robot.GO2_RADIUS_M`):

* **static**: the disc may not leave the scene's free space; a move is cut at first contact
  (swept, exact against the free-space polygon, 1 mm back-off) -- the body never passes a wall --
  and where the ground ends or the body would not fit the surface it steps onto (stairs sides);
* **human**: a person (disc of radius 0.3 m) and the robot are in contact when their centres are
  closer than the sum of radii. The robot's move is cut at contact with people as they are at the
  start of the move; people follow their scripted motion and may walk into the robot.
* **counting**: a contact is counted once when it begins; it ends when the gap opens by more than
  :data:`CONTACT_RELEASE_M` (so pushing against the same wall or person, or a person passing
  through the robot, counts 1). Counts are kept by type in :attr:`World.collisions`.

Sim time advances by ``dt`` in :meth:`move` (a discrete action takes as long as the executor
needs); people are checked for contact at ``CONTACT_SUBSTEP_S`` intervals inside it.
``action_dt`` is only the expert's look-ahead for people (about one action).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import shapely

from havln_robot.actions import ACTIONS, MAX_ACTIONS, ActionError
from havln_robot.episodes import Episode
from havln_robot.geometry import wrap_angle
from havln_robot.sim.closed_loop import ClosedLoop, ClosedLoopStep
from havln_robot.sim.geodesic import GoalDistance, Walkable
from havln_robot.sim.humans import Crowd
from havln_robot.sim.metrics import EpisodeMetrics, episode_metrics
from havln_robot.sim.robot import GO2_RADIUS_M
from havln_robot.sim.scene import SUPPORT_TOL_M, Scene, Support

CONTACT_RELEASE_M: float = 0.05
"""A contact ends when the gap exceeds this (m); hysteresis so one touch counts once."""
CONTACT_SUBSTEP_S: float = 0.1
"""People-into-robot contact checks inside one time step are this far apart (s)."""
GROUND_CHECK_M: float = 0.1
#: Largest free disc kept for the per-tick moves (:meth:`Scene.free_disc`), m: a speed choice
#: (a 0.25 m step ticks ~5 mm at a time; a larger disc costs a farther distance query).
FREE_DISC_REACH_M: float = 0.5
"""A move is checked for ground under the robot every this many metres (stairs sides, floor edges)."""
SWITCH_TOL_M: float = 0.005
"""Tolerance (m) for polygon approximation when checking the body fits the surface it steps onto."""
MAX_PITCH_RAD: float = math.radians(60.0)
"""Camera pitch limit (rad): two LOOK_UP / LOOK_DOWN tilts of 30 deg each way."""
DEFAULT_ACTION_DT_S: float = 0.5
"""Sim time per discrete action (s): 0.25 m at the Go2's ~0.5 m/s walking pace."""


def default_robot_radius() -> float:
    """Robot footprint radius (m): :data:`havln_robot.sim.robot.GO2_RADIUS_M`."""
    return float(GO2_RADIUS_M)


class WorldError(RuntimeError):
    """The world cannot start (e.g. the start pose is not on free space); the message says why."""


@dataclass(frozen=True)
class Contact:
    """A collision event of one move.

    Attributes:
        kind: "static" (wall) or "human". human_id: the person's id (None for walls).
        x, y: robot position (map frame, m) at contact. distance_m: human: centre distance (m);
        static: 0. new: True if this contact began now (and was counted). motion_state: person's
        motion ("standing" | "moving"), "" for walls. source: "robot" (the robot's move was cut) or
        "human" (a person walked into the robot).
    """

    kind: str
    human_id: int | None
    x: float
    y: float
    distance_m: float
    new: bool
    motion_state: str = ""
    source: str = "robot"


class World:
    """One episode's world (see the module docstring).

    Args:
        scene: the episode's :class:`Scene`.
        episode: the :class:`Episode`.
        crowd: its people (default: :meth:`Crowd.from_episode` with ``seed``).
        seed: RNG seed (crowd placement/phases).
        robot_radius: m (default :func:`default_robot_radius`).
        action_dt: sim time per discrete action (s).
        max_actions: action budget (500, challenge rule).
        baseline: challenge baseline collisions for TCR (0 if not a challenge episode).

    Attributes (besides :attr:`pose`): ``t`` sim time (s); ``camera_pitch`` (rad, + up);
    ``collisions`` {"human": n, "static": n}; ``path_length`` (m); ``actions`` discrete actions taken;
    ``stopped``, ``done``, ``reason`` ("stop" | "budget" | "blocked": agent_node's rule, :func:`havln_robot.eval.run_episode` | ""); ``trajectory`` ground points visited
    (map frame, m, >= 1 cm apart).

    Raises:
        WorldError: the start position is not on the scene's free space.
    """

    def __init__(
        self,
        scene: Scene,
        episode: Episode,
        crowd: Crowd | None = None,
        seed: int = 0,
        robot_radius: float | None = None,
        action_dt: float = DEFAULT_ACTION_DT_S,
        max_actions: int = MAX_ACTIONS,
        baseline: int = 0,
    ) -> None:
        self.scene = scene
        self.episode = episode
        self.robot_radius = float(default_robot_radius() if robot_radius is None else robot_radius)
        self.crowd = crowd if crowd is not None else Crowd.from_episode(episode, scene, seed=seed, robot_radius=self.robot_radius)
        self.seed = seed
        self.action_dt = float(action_dt)
        self.max_actions = int(max_actions)
        self.baseline = int(baseline)
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Put the robot at the episode start (yaw from the episode, pitch 0), t = 0, clear counters.

        Raises:
            WorldError: the start position has no ground under it in the scene.
        """
        x, y, z = self.episode.start_position
        sup = self.scene.support(x, y, z)
        if sup is None:
            raise WorldError(
                f"episode {self.episode.episode_id}: start ({x:.2f}, {y:.2f}, {z:.2f}) is not on the free space of scene {self.scene.name}"
            )
        self._x, self._y, self._z = float(x), float(y), float(sup.z)
        self._yaw = wrap_angle(float(self.episode.start_yaw))
        self._support: Support = sup
        self.t = 0.0
        self.camera_pitch = 0.0
        self.collisions: dict[str, int] = {"human": 0, "static": 0}
        self.path_length = 0.0
        self.actions: list[str] = []
        self.stopped = False
        self.done = False
        self.reason = ""
        self._human_contacts: set[int] = set()
        self._wall_contact = False
        self._free_disc: tuple[tuple[str, int], float, float, float] | None = None
        self.trajectory: list[tuple[float, float, float]] = [(self._x, self._y, self._z)]
        self._goal_distance: GoalDistance | None = getattr(self, "_goal_distance", None)
        self._loop: ClosedLoop | None = None
        if not hasattr(self, "loop_options"):
            self.loop_options: dict = {}

    @property
    def pose(self) -> tuple[float, float, float, float]:
        """TRUE robot pose (x, y, z, yaw): map frame, m and rad (REP 103); z = ground height under the robot."""
        return (self._x, self._y, self._z, self._yaw)

    @property
    def camera_pose(self) -> tuple[float, float, float, float]:
        """Pose (x, y, z, yaw) at which to render the robot's camera: :attr:`pose` with z on the
        ground the renderer draws.

        A procedural scene draws each floor flat at its nominal height (:attr:`Floor.z`), while the
        body stands on :meth:`Floor.height_at` (a blend of viewpoint heights that can differ by a
        few dm: 0.32 m at the start of val_seen episode 5593). A camera placed on the body's z sees
        the drawn floor as an obstacle that tall in every direction, and motion_node refuses every
        step ("blocked before start: ... depth points 0.03 m ahead"). On a drawn flat
        floor z is therefore the floor's nominal height; on stairs (drawn sloped) and on mesh
        scenes (which draw their own surfaces) it is the body's z.
        """
        return (self._x, self._y, self.scene.camera_ground_z(self._support, self._z), self._yaw)

    @property
    def floor(self) -> int:
        """Index of the floor the robot stands on (its support); on a flight, the floor nearest to its height."""
        s = self._support
        return int(s.index) if s is not None and s.kind == "floor" else self.scene.floor_index(self._z)

    def human_positions(self) -> np.ndarray:
        """(M, 3) people positions (map frame, m) at the current sim time."""
        return self.crowd.positions(self.t)

    def goal_distance(self) -> Walkable:
        """Walkable and straight-line distance (m) from the robot's ground point to the goal, with the
        ``unreachable`` flag (:mod:`havln_robot.sim.geodesic`; the scorer's NE). Dijkstra runs once
        per episode; repeated calls at one pose are cached."""
        gd = self._goal_distance
        if gd is None or gd.scene is not self.scene or gd.goal != tuple(map(float, self.episode.goal_position)):
            make = getattr(self.scene, "goal_distance_factory", None)  # a mesh scene: grid geodesic (sim/mesh_scene.py)
            goal = self.episode.goal_position
            gd = self._goal_distance = make(goal) if make is not None else GoalDistance(self.scene, goal)
        return gd.query(self._x, self._y, self._z)

    def distance_to_goal(self) -> float:
        """Walkable distance (m) from the robot to the goal (NE of the HA-VLN scorer; see :meth:`goal_distance`)."""
        return self.goal_distance().ne

    def distance_to_goal_euclid(self) -> float:
        """Straight-line 3-D distance (m, map frame) from the robot to the goal (reported beside NE only)."""
        return math.dist((self._x, self._y, self._z), self.episode.goal_position)

    def nearest_human(self) -> tuple[int | None, float]:
        """(human_id, centre distance in xy, m) of the nearest person on the robot's floor; (None, inf) if none."""
        if len(self.crowd) == 0:
            return None, math.inf
        p = self.crowd.positions(self.t)
        d = np.hypot(p[:, 0] - self._x, p[:, 1] - self._y)
        d = np.where(np.abs(p[:, 2] - self._z) < 1.0, d, np.inf)
        k = int(np.argmin(d))
        if not math.isfinite(d[k]):
            return None, math.inf
        return self.crowd.ids[k], float(d[k])

    # ------------------------------------------------------------------ motion
    def move(self, forward_m: float, dyaw_rad: float, dt: float) -> Contact | None:
        """Rotate by ``dyaw_rad`` then translate ``forward_m`` along the new heading; advance time by ``dt``.

        The translation stops at the first contact with a wall or person (never passes through),
        and is refused where there is no ground (the side of a staircase). People then advance by
        ``dt`` and may walk into the robot.

        Args:
            forward_m: m along the body x axis (negative = backwards).
            dyaw_rad: yaw change (rad, CCW +).
            dt: sim time to advance (s, >= 0).

        Returns:
            The first :class:`Contact` of this call (new or ongoing), or None when nothing was touched.
        """
        contacts = self._move(forward_m, dyaw_rad, dt)
        return contacts[0] if contacts else None

    def _move(self, forward_m: float, dyaw_rad: float, dt: float) -> list[Contact]:
        contacts: list[Contact] = []
        if dyaw_rad:
            self._yaw = wrap_angle(self._yaw + float(dyaw_rad))
        if forward_m:
            contacts += self._translate(float(forward_m))
        if dt > 0:
            contacts += self._advance(float(dt))
        return contacts

    def _translate(self, forward_m: float) -> list[Contact]:
        x0, y0 = self._x, self._y
        dx, dy = forward_m * math.cos(self._yaw), forward_m * math.sin(self._yaw)
        r = self.robot_radius
        # inside the floor's free disc the answers of first_contact (1.0) and of support (this floor)
        # are known: only the ground height is computed (Scene.free_disc)
        fast = self._in_free_disc(x0, y0, x0 + dx, y0 + dy)
        s_wall = 1.0 if fast else self.scene.first_contact(self._support, r, x0, y0, x0 + dx, y0 + dy)
        s_h, hid, hdist = self._human_fraction(x0, y0, dx, dy)
        s = min(s_wall, s_h)
        # ground check: walk the move in <= GROUND_CHECK_M pieces, stop where the ground is lost
        n = max(1, math.ceil(abs(forward_m) * s / GROUND_CHECK_M - 1e-9))
        sup = self._support
        z = self._z
        s_ok = 0.0
        ground_lost = False
        for i in range(1, n + 1):
            si = s * i / n
            px, py = x0 + si * dx, y0 + si * dy
            cand = None
            if fast:
                zf = self.scene.floors[sup.index].height_at(px, py)
                if abs(zf - z) <= SUPPORT_TOL_M:
                    cand = Support("floor", sup.index, zf)
            if cand is None:
                cand = self.scene.support(px, py, z, prefer=sup, heading=(dx, dy))
            if cand is None:
                ground_lost = True
                break
            start = self._support
            if (cand.kind, cand.index) != (start.kind, start.index) and not shapely.contains_xy(
                self.scene.eroded(cand, r - SWITCH_TOL_M), px, py
            ):
                ground_lost = True  # the body would overlap a wall of the surface it steps onto
                break
            sup, z, s_ok = cand, cand.z, si
        x1, y1 = x0 + s_ok * dx, y0 + s_ok * dy
        self.path_length += math.dist((x0, y0, self._z), (x1, y1, z))
        self._x, self._y, self._z, self._support = x1, y1, z, sup
        lx, ly, lz = self.trajectory[-1]
        if abs(x1 - lx) + abs(y1 - ly) + abs(z - lz) >= 0.01:  # keep the log small at sim_node's control rate
            self.trajectory.append((x1, y1, z))
        out: list[Contact] = []
        if ground_lost or (s_wall < 1.0 and s_wall <= s_h):
            new = not self._wall_contact
            self._wall_contact = True
            if new:
                self.collisions["static"] += 1
            out.append(Contact("static", None, x1, y1, 0.0, new))
        elif self._wall_contact:
            e = self.scene.eroded_boundary(self._support, r)
            if shapely.distance(e, shapely.Point(x1, y1)) > CONTACT_RELEASE_M:
                self._wall_contact = False
        if s_h < 1.0 and s_h < s_wall and hid is not None:
            out.append(self._touch_human(hid, hdist, "robot"))
        return out

    def _in_free_disc(self, x0: float, y0: float, x1: float, y1: float) -> bool:
        """True when the move (x0, y0) → (x1, y1) (map xy, m) lies inside the cached free disc of the
        floor the robot stands on (:meth:`Scene.free_disc`, recomputed around (x0, y0) when the move
        leaves it)."""
        sup = self._support
        key = (sup.kind, sup.index)
        d = self._free_disc
        for fresh in (False, True):
            if d is not None and d[0] == key:
                cx, cy, r2 = d[1], d[2], d[3]
                if (x0 - cx) ** 2 + (y0 - cy) ** 2 < r2 and (x1 - cx) ** 2 + (y1 - cy) ** 2 < r2:
                    return True
            if fresh:
                return False
            rho = self.scene.free_disc(sup, self.robot_radius, x0, y0, FREE_DISC_REACH_M)
            d = self._free_disc = (key, x0, y0, rho * rho)
        return False

    def _human_fraction(self, x0: float, y0: float, dx: float, dy: float) -> tuple[float, int | None, float]:
        """First fraction of the move (dx, dy) at which the robot touches a person (people frozen at ``t``).

        The robot's disc (``robot_radius``) moving from (x0, y0) by (dx, dy) (map frame, m) against
        each person's disc on this floor: the smaller root of |start + s * move - person| = r_sum
        in [0, 1], backed off 0.1 mm; 0 for a person already touched that the move does not leave.
        Plain floats: a crowd is a handful of people, where numpy's per-call cost dominated.

        Returns:
            (fraction in [0, 1], 1 = free; the person's id or None; the distance between centres
            at the start of the move, m, or inf).
        """
        if len(self.crowd) == 0:
            return 1.0, None, math.inf
        p = self.crowd.positions(self.t)
        a = dx * dx + dy * dy
        best, kbest, cbest = 1.0, -1, 0.0
        for k, ((px, py, pz), rad) in enumerate(zip(p.tolist(), self.crowd.radii.tolist(), strict=True)):
            if not abs(pz - self._z) < 1.0:
                continue
            rr = rad + self.robot_radius
            cx, cy = x0 - px, y0 - py
            b = 2.0 * (dx * cx + dy * cy)
            c = cx * cx + cy * cy - rr * rr
            s = 1.0
            if c < 0:
                if b < 0:
                    s = 0.0
            else:
                disc = b * b - 4 * a * c
                if disc >= 0 and a > 0:
                    s1 = (-b - math.sqrt(max(disc, 0.0))) / (2 * a)
                    if 0 <= s1 <= 1:
                        s = max(0.0, s1 - 1e-4 / math.sqrt(a))
            if s < best:
                best, kbest, cbest = s, k, c + rr * rr
        if kbest < 0 or best >= 1.0:
            return 1.0, None, math.inf
        return float(best), self.crowd.ids[kbest], float(math.sqrt(max(0.0, cbest)))

    def _touch_human(self, hid: int, dist: float, source: str, t: float | None = None) -> Contact:
        new = hid not in self._human_contacts
        if new:
            self._human_contacts.add(hid)
            self.collisions["human"] += 1
        k = self.crowd.ids.index(hid)
        state = self.crowd.motion_states(self.t if t is None else t)[k]
        return Contact("human", hid, self._x, self._y, dist, new, state, source)

    def _someone_within_reach(self, dt: float) -> bool:
        """False when no person can touch the robot during the next ``dt`` s: each is farther from it
        (xy, m) than the sum of radii plus the farthest it can walk in ``dt`` (:attr:`Crowd.max_speeds`),
        so :meth:`_advance` can skip its sub-step contact check (a proof, not an estimate)."""
        p = self.crowd.positions(self.t)
        d = np.hypot(p[:, 0] - self._x, p[:, 1] - self._y)
        return bool(np.any(d - self.crowd.max_speeds * dt <= self.crowd.radii + self.robot_radius))

    def _advance(self, dt: float) -> list[Contact]:
        out: list[Contact] = []
        if len(self.crowd) and (self._human_contacts or self._someone_within_reach(dt)):
            n = max(1, math.ceil(dt / CONTACT_SUBSTEP_S - 1e-9))
            ts = self.t + dt * np.arange(1, n + 1) / n
            p = self.crowd.positions_many(ts)  # (n, M, 3)
            d = np.hypot(p[..., 0] - self._x, p[..., 1] - self._y)
            same = np.abs(p[..., 2] - self._z) < 1.0
            rr = (self.crowd.radii + self.robot_radius)[None, :]
            touching = same & (d < rr - 1e-3)
            if touching.any() or self._human_contacts:
                released = ~same | (d > rr + CONTACT_RELEASE_M)
                for i in range(n):
                    for k in range(p.shape[1]):
                        hid = self.crowd.ids[k]
                        if touching[i, k] and hid not in self._human_contacts:
                            out.append(self._touch_human(hid, float(d[i, k]), "human", float(ts[i])))
                        elif released[i, k] and hid in self._human_contacts:
                            self._human_contacts.discard(hid)
        self.t += dt
        return out

    # ------------------------------------------------------------------ discrete actions
    @property
    def loop(self) -> ClosedLoop:
        """This episode's :class:`~havln_robot.sim.closed_loop.ClosedLoop` (motion_node's executor
        over the noisy Go2 base, seeded with :attr:`seed`); created at the first :meth:`step` after
        a :meth:`reset`. Set :attr:`loop_options` (ClosedLoop keyword arguments) before it to change
        the noise model or motion parameters."""
        if self._loop is None:
            self._loop = ClosedLoop(self, seed=self.seed, reset_world=False, **self.loop_options)
        return self._loop

    def step(self, action: str) -> ClosedLoopStep:
        """Execute one discrete action (batch mode) exactly as the live graph does: through
        :meth:`ClosedLoop.step` (motion_node's executor ticked at its control rate against the noisy
        base; refusals, partial steps, reverts, odometry drift). A thin wrapper: this class keeps no
        action semantics of its own. STOP ends the episode; the 500th action ends it ("budget");
        stepping a finished episode changes nothing and returns ``done=True``.

        Raises:
            ActionError: ``action`` is not one of the six literals.
        """
        if action not in ACTIONS:
            raise ActionError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
        return self.loop.step(action)

    def metrics(self) -> EpisodeMetrics:
        """Ground-truth metrics now (see :mod:`havln_robot.sim.metrics`); success needs STOP."""
        gd = self.goal_distance()
        return episode_metrics(
            ne=gd.ne,
            ne_euclid=gd.euclid,
            unreachable=gd.unreachable,
            stopped=self.stopped,
            path_length=self.path_length,
            geodesic=self.episode.geodesic_distance,
            collisions_human=self.collisions["human"],
            collisions_static=self.collisions["static"],
            steps=len(self.actions),
            baseline=self.baseline,
            goal_radius=self.episode.goal_radius,
        )
