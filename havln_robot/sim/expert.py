"""Privileged expert: turns an episode's reference path into discrete actions around people and walls.

Used as the evaluation upper bound, for imitation-learning labels (teacher forcing / DAgger) and to
produce reference action files. It reads the TRUE state of a :class:`~havln_robot.sim.world.World`.

Each call of :meth:`Expert.act`:

1. **STOP** when the robot is within :data:`STOP_DIST_M` (xy) of the goal on its floor, or when
   the end of the plan is reached, or after :data:`STUCK_STEPS` actions without progress while
   inside the success radius.
2. **Pure pursuit** along the plan (initially the reference path): the carrot is the plan point
   :data:`LOOKAHEAD_M` beyond the robot's projection on the plan (projection only moves forward,
   within a few segments, so stairs that pass above other floors do not confuse it).
   The carrot never passes a **hairpin** (a plan vertex turning back by more than
   :data:`HAIRPIN_DEG`) before the robot has reached it: on switchback and spiral stairs the two
   legs overlap, and cutting the corner would put the robot on the other flight.
3. Turn toward the carrot when the heading error exceeds :data:`ALIGN_TOL_RAD` (7.5 deg, half a
   15-deg turn); otherwise MOVE_FORWARD.
4. **Blocked** (the next forward step would touch a wall, touch a person now or in
   :data:`LOOK_AHEAD_S`, or make no progress): replan with A* on an 8-connected occupancy grid
   (:data:`GRID_M` cells) of the free space the robot may occupy (shrunk by its radius), with people
   inflated by robot radius + person radius + :data:`HUMAN_MARGIN_M` at their current and
   near-future positions, to a point :data:`REJOIN_M` further along the plan; the new plan is that
   A* path (followed with a :data:`DETOUR_LOOKAHEAD_M` carrot) and the rest of the old plan. If no path exists (a person fills the corridor),
   wait in place with LOOK_UP / LOOK_DOWN pairs (no motion, camera restored) and retry.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import shapely

from havln_robot.actions import FORWARD_STEP_M, LOOK_DOWN, LOOK_UP, MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from havln_robot.geometry import wrap_angle
from havln_robot.records import is_blocked_outcome

STOP_DIST_M: float = 0.3
"""Stop when the goal is this close in xy (m); below the 3 m success radius by far, so NE stays small."""
GOAL_DZ_M: float = 0.5
"""... and within this height (m) of it: on a flight rising 2.4 m over 0.6 m the goal can lie 0.2 m
away in xy and 1 m below (gTV8FGcVJC9); the scorer's walkable legs allow 0.5 m (geodesic.LEG_DZ_M)."""
LOOKAHEAD_M: float = 0.6
"""Pure-pursuit carrot distance along the plan (m)."""
DETOUR_LOOKAHEAD_M: float = 0.3
"""Carrot distance on a replanned detour (m): follows the A* path closely past people."""
ALIGN_TOL_RAD: float = math.radians(7.5)
"""Heading tolerance before moving (rad): half the 15-deg turn step."""
GRID_M: float = 0.1
"""A* grid cell size (m)."""
HUMAN_MARGIN_M: float = 0.15
"""Extra clearance kept from people when replanning (m)."""
REJOIN_M: float = 3.0
"""Replan to the plan point this far (m, arc length) beyond the robot's projection."""
LOOK_AHEAD_S: float = 1.0
"""People are also avoided where they will be this far in the future (s)."""
HAIRPIN_DEG: float = 90.0
"""A plan vertex where the path turns by more than this (deg, xy) is a hairpin: the carrot stops there
until the robot reaches it (switchback landings; cutting the corner puts the robot on the other flight)."""
HAIRPIN_REACH_M: float = 0.25
"""A hairpin vertex is reached within this xy distance (m): one forward step, 0.25 m."""
STUCK_STEPS: int = 40
"""Actions without progress after which the expert gives up (STOP)."""
MAX_WAIT_STEPS: int = 60
"""Longest wait (actions) for a person to clear before trying to push through on the old plan."""
STOPPED_REPEATS: int = 3
"""A MOVE_FORWARD the executor stopped this many times from one pose (3 cm, 3 deg) counts as blocked
from there. One stop can be one frame's view (a tread's edge seen once: the retry walks on); a stop
that repeats belongs to the place, and repeating it would end the episode at the runner's
consecutive-blocked limit."""


class Expert:
    """Reference-path follower with replanning around people (see the module docstring).

    Args:
        world: the :class:`~havln_robot.sim.world.World` to act in (read-only use of its true state).
    """

    name = "expert"
    views = 1
    observes = False  # privileged: it reads the world, not the camera (the runner gives it no views)

    def __init__(self, world) -> None:
        self.world = world
        self.reset()

    def reset(self, instruction: str | None = None) -> None:
        """Start over from the world's current pose with the episode's reference path as the plan."""
        ep = self.world.episode
        x, y, z, _ = self.world.pose
        pts = [(x, y, z), *ep.reference_path]
        self._set_plan(np.asarray(pts, dtype=np.float64))
        self._best = math.inf
        self._since_best = 0
        self._wait = 0
        self._pending: list[str] = []
        self._commit: float | None = None
        self._step_from: tuple[float, float, float] | None = None
        self._stopped_at: list[tuple[float, float, float]] = []
        self.replans = 0

    def _set_plan(self, pts: np.ndarray) -> None:
        # drop repeated points
        keep = [0]
        for i in range(1, len(pts)):
            if np.linalg.norm(pts[i, :2] - pts[keep[-1], :2]) > 1e-3 or abs(pts[i, 2] - pts[keep[-1], 2]) > 0.05:
                keep.append(i)
        self.plan = pts[keep]
        seg = np.linalg.norm(np.diff(self.plan[:, :2], axis=0), axis=1) if len(self.plan) > 1 else np.zeros(0)
        self._cum = np.concatenate([[0.0], np.cumsum(seg)])
        self._detour_end = 0.0
        self._seg = 0
        self._s = 0.0
        # plan vertices where the path turns back by more than HAIRPIN_DEG in xy (hairpins, switchback landings)
        d = np.diff(self.plan[:, :2], axis=0)
        n = np.linalg.norm(d, axis=1)
        cos = np.einsum("ij,ij->i", d[:-1], d[1:]) / np.maximum(n[:-1] * n[1:], 1e-12) if len(d) > 1 else np.zeros(0)
        self._hairpins = [i + 1 for i in np.flatnonzero(cos < math.cos(math.radians(HAIRPIN_DEG)))]

    # ------------------------------------------------------------------ plan geometry
    def _project(self, x: float, y: float, z: float) -> float:
        """Advance the projection of (x, y) on the plan (window of 3 segments ahead); returns arc length."""
        best_d, best_s, best_i = math.inf, self._s, self._seg
        for i in range(self._seg, min(self._seg + 3, len(self.plan) - 1)):
            a, b = self.plan[i], self.plan[i + 1]
            if not min(a[2], b[2]) - 1.0 <= z <= max(a[2], b[2]) + 1.0:
                continue  # a segment on another storey
            ab = b[:2] - a[:2]
            ll = float(ab @ ab)
            t = 0.0 if ll < 1e-12 else min(1.0, max(0.0, float((np.array([x, y]) - a[:2]) @ ab) / ll))
            q = a[:2] + t * ab
            d = math.hypot(x - q[0], y - q[1])
            if d < best_d - 1e-9:
                best_d, best_s, best_i = d, self._cum[i] + t * math.sqrt(ll), i
        if best_s >= self._s:
            self._s, self._seg = best_s, best_i
        return self._s

    def _hairpin_clamp(self, s: float, s_carrot: float, x: float, y: float) -> float:
        """Arc length of the carrot: ``s_carrot``, or the first hairpin vertex between ``s`` and it that
        the robot has not reached yet (within :data:`HAIRPIN_REACH_M`). A reached one moves the
        projection past it (on a hairpin the two legs overlap in xy, so the projection alone would stall)."""
        for i in self._hairpins:
            ci = float(self._cum[i])
            if ci <= s + 1e-9:
                continue
            if ci > s_carrot:
                break
            if math.hypot(self.plan[i, 0] - x, self.plan[i, 1] - y) > HAIRPIN_REACH_M:
                return ci
            self._s, self._seg = ci, min(i, len(self.plan) - 2)
        return s_carrot

    def _point_at(self, s: float) -> np.ndarray:
        s = min(max(s, 0.0), self._cum[-1])
        i = int(np.searchsorted(self._cum, s, side="right") - 1)
        i = min(i, len(self.plan) - 2)
        if i < 0:
            return self.plan[0].copy()
        L = self._cum[i + 1] - self._cum[i]
        t = 0.0 if L < 1e-12 else (s - self._cum[i]) / L
        return self.plan[i] + t * (self.plan[i + 1] - self.plan[i])

    # ------------------------------------------------------------------ decisions
    def act(self, obs=None) -> str:
        """Next action literal for the world's current state (``obs`` is ignored: the expert is privileged).

        A MOVE_FORWARD that motion_node's executor stopped (a refusal the start did not foresee: an
        obstacle seen only once moving) is remembered with the pose it left from; from a pose where
        it was stopped :data:`STOPPED_REPEATS` times the step counts as blocked, so the expert goes
        round instead of repeating it until the runner's consecutive-blocked end."""
        w = self.world
        res = w.loop.results[-1] if w.loop.results else None
        if self._step_from is not None and res is not None and res.action == MOVE_FORWARD and is_blocked_outcome(res.outcome):
            self._stopped_at.append(self._step_from)
        self._step_from = None
        action = self._act()
        if action == MOVE_FORWARD:
            x, y, _, yaw = w.pose
            self._step_from = (x, y, yaw)
        return action

    def _stopped_here(self, x: float, y: float, yaw: float) -> bool:
        """A MOVE_FORWARD from within 3 cm and 3 deg of this pose was stopped :data:`STOPPED_REPEATS` times."""
        near = [1 for a, b, c in self._stopped_at if math.hypot(x - a, y - b) < 0.03 and abs(wrap_angle(yaw - c)) < math.radians(3.0)]
        return len(near) >= STOPPED_REPEATS

    def _act(self) -> str:
        w = self.world
        if self._pending:
            return self._pending.pop(0)
        if w.camera_pitch > 1e-6:
            return LOOK_DOWN
        if w.camera_pitch < -1e-6:
            return LOOK_UP
        x, y, z, yaw = w.pose
        gx, gy, gz = w.episode.goal_position
        dgoal = math.hypot(gx - x, gy - y)
        if dgoal < STOP_DIST_M and abs(gz - z) < GOAL_DZ_M:
            return STOP
        # progress bookkeeping (distance to goal along nothing fancy: plain xy+z)
        d3 = w.distance_to_goal()
        if d3 < self._best - 0.05:
            self._best, self._since_best = d3, 0
        else:
            self._since_best += 1
        if self._since_best > STUCK_STEPS and d3 < w.episode.goal_radius - 0.5:
            return STOP
        s = self._project(x, y, z)
        total = self._cum[-1]
        if s >= total - 0.05 and dgoal < 1.0:
            return STOP
        look = DETOUR_LOOKAHEAD_M if s < self._detour_end else LOOKAHEAD_M
        carrot = self._point_at(self._hairpin_clamp(s, s + look, x, y))
        s = self._s
        if math.hypot(carrot[0] - x, carrot[1] - y) < 0.05:
            carrot = self._point_at(total)
        desired = math.atan2(carrot[1] - y, carrot[0] - x)
        if self._commit is not None:  # a heading chosen to get round a refusal: turn to it, step once
            cerr = wrap_angle(self._commit - yaw)
            if abs(cerr) > ALIGN_TOL_RAD:
                return TURN_LEFT if cerr > 0 else TURN_RIGHT
            self._commit = None
            if not self._blocked(x, y, z, yaw):
                self._wait = 0
                return MOVE_FORWARD
        err = wrap_angle(desired - yaw)
        if abs(err) > ALIGN_TOL_RAD:
            return TURN_LEFT if err > 0 else TURN_RIGHT
        if not self._blocked(x, y, z, yaw):
            self._wait = 0
            return MOVE_FORWARD
        # blocked: replan around
        if self._replan(x, y, z):
            self.replans += 1
            carrot = self._point_at(self._project(x, y, z) + DETOUR_LOOKAHEAD_M)
            head = math.atan2(carrot[1] - y, carrot[0] - x)
            err = wrap_angle(head - yaw)
            if abs(err) > ALIGN_TOL_RAD:
                self._commit = head  # hold it: the pursuit would turn straight back (a turn-left/right loop)
                return TURN_LEFT if err > 0 else TURN_RIGHT
            if not self._blocked(x, y, z, yaw):
                return MOVE_FORWARD
        free = self._free_heading(x, y, z, yaw, desired)
        if free is not None:
            self._commit = free
            return TURN_LEFT if wrap_angle(free - yaw) > 0 else TURN_RIGHT
        self._wait += 1
        away = self._turn_away(x, y, z, yaw)
        if away is not None:  # inside a person's personal space: the executor refuses every step towards them
            return away
        if self._wait > MAX_WAIT_STEPS:
            self._wait = 0
            return MOVE_FORWARD  # give up waiting: push on (a contact is counted if it happens)
        self._pending = [LOOK_DOWN]
        return LOOK_UP

    def _free_heading(self, x: float, y: float, z: float, yaw: float, desired: float) -> float | None:
        """The heading nearest ``desired`` (in 15-deg turns from ``yaw``, within +-90 deg of it) in which
        a MOVE_FORWARD would neither be refused by the executor (:meth:`ClosedLoop.would_refuse`
        after the turn) nor touch a wall; None when there is none (then the expert waits)."""
        w = self.world
        turn = math.radians(15.0)
        offs = [k * turn for k in range(-12, 13) if k]
        offs.sort(key=lambda o: abs(wrap_angle(yaw + o - desired)))
        for o in offs:
            h = wrap_angle(yaw + o)
            if abs(wrap_angle(h - desired)) > math.radians(90.0) + 1e-6:
                break
            dx, dy = FORWARD_STEP_M * math.cos(h), FORWARD_STEP_M * math.sin(h)
            if w.scene.first_contact(w._support, w.robot_radius, x, y, x + dx, y + dy) < 0.999:
                continue
            if not w.loop.would_refuse(MOVE_FORWARD, yaw_offset=o) and not self._stopped_here(x, y, h):
                return h
        return None

    def _turn_away(self, x: float, y: float, z: float, yaw: float) -> str | None:
        """TURN_LEFT/RIGHT away from the nearest person when they stand ahead within the executor's
        personal space (+ 0.2 m) of the footprint, else None."""
        w = self.world
        if not len(w.crowd):
            return None
        p = w.crowd.positions(w.t)
        same = np.abs(p[:, 2] - z) < 1.0
        if not same.any():
            return None
        d = np.where(same, np.hypot(p[:, 0] - x, p[:, 1] - y), np.inf)
        k = int(np.argmin(d))
        cfg = w.loop.cfg
        if d[k] > cfg.footprint.half_width + cfg.personal_space + 0.2:
            return None
        bearing = wrap_angle(math.atan2(p[k, 1] - y, p[k, 0] - x) - yaw)
        if abs(bearing) > math.radians(100):
            return None
        return TURN_RIGHT if bearing > 0 else TURN_LEFT

    def _blocked(self, x: float, y: float, z: float, yaw: float) -> bool:
        w = self.world
        if w.loop.would_refuse(MOVE_FORWARD):  # motion_node's own rules (depth clearance, personal space)
            return True
        if self._stopped_here(x, y, yaw):
            return True
        dx, dy = FORWARD_STEP_M * math.cos(yaw), FORWARD_STEP_M * math.sin(yaw)
        if w.scene.first_contact(w._support, w.robot_radius, x, y, x + dx, y + dy) < 0.999:
            return True
        if w.scene.support(x + dx, y + dy, z, prefer=w._support, heading=(dx, dy)) is None:
            return True
        if len(w.crowd):
            rr = w.crowd.radii + w.robot_radius + 0.05
            for t in (w.t, w.t + w.action_dt, w.t + LOOK_AHEAD_S):
                p = w.crowd.positions(t)
                same = np.abs(p[:, 2] - z) < 1.0
                d_end = np.hypot(p[:, 0] - x - dx, p[:, 1] - y - dy)
                d_now = np.hypot(p[:, 0] - x, p[:, 1] - y)
                # blocked if the step ends close to a person and does not move away from them
                if np.any(same & (d_end < rr) & (d_end <= d_now + 1e-6)):
                    return True
        return False

    def _replan(self, x: float, y: float, z: float) -> bool:
        """A* from the robot to the plan point :data:`REJOIN_M` ahead (free of people); True if a path was found."""
        w = self.world
        s0 = self._project(x, y, z)
        total = self._cum[-1]
        region = w.scene.eroded(w._support, w.robot_radius)
        hum = self._human_points()
        # centre distance to keep: the executor's personal space from the footprint, or body contact + margin
        rr = max(w.robot_radius + 0.3 + HUMAN_MARGIN_M, w.loop.cfg.footprint.half_width + w.loop.cfg.personal_space + HUMAN_MARGIN_M)
        target = None
        s = s0 + REJOIN_M
        while True:
            p = self._point_at(min(s, total))
            if abs(p[2] - z) < 1.0 and shapely.contains_xy(region, p[0], p[1]):
                if len(hum) == 0 or np.min(np.hypot(hum[:, 0] - p[0], hum[:, 1] - p[1])) > rr:
                    target = p
                    break
            if s >= total:
                break
            s += 0.5
        if target is None:
            return False
        path = _astar(region, hum, rr, (x, y), (float(target[0]), float(target[1])))
        if path is None:
            return False
        rest_s = min(s, total)
        i = int(np.searchsorted(self._cum, rest_s, side="right"))
        new = [[x, y, z]] + [[px, py, z] for px, py in path] + [list(target)] + [list(p) for p in self.plan[i:]]
        self._set_plan(np.asarray(new, dtype=np.float64))
        self._detour_end = float(self._cum[len(path) + 1]) if len(self._cum) > len(path) + 1 else 0.0
        return True

    def _human_points(self) -> np.ndarray:
        w = self.world
        if len(w.crowd) == 0:
            return np.zeros((0, 2))
        _, _, z, _ = w.pose
        pts = []
        for t in (w.t, w.t + w.action_dt, w.t + LOOK_AHEAD_S):
            p = w.crowd.positions(t)
            pts.append(p[np.abs(p[:, 2] - z) < 1.0, :2])
        return np.concatenate(pts, axis=0)


def _astar(
    region, humans: np.ndarray, inflate: float, start: tuple[float, float], goal: tuple[float, float]
) -> list[tuple[float, float]] | None:
    """8-connected A* on a :data:`GRID_M` grid over ``region`` (prepared polygon of allowed centres) minus people discs.

    Returns the simplified path (list of xy, m, excluding the start) or None when unreachable.
    A person closer to the start than ``inflate`` is inflated only to that distance minus a cell.
    """
    margin = 2.0
    x0, y0 = min(start[0], goal[0]) - margin, min(start[1], goal[1]) - margin
    x1, y1 = max(start[0], goal[0]) + margin, max(start[1], goal[1]) + margin
    nx, ny = int(math.ceil((x1 - x0) / GRID_M)) + 1, int(math.ceil((y1 - y0) / GRID_M)) + 1
    if nx * ny > 400_000:
        return None
    xs = x0 + np.arange(nx) * GRID_M
    ys = y0 + np.arange(ny) * GRID_M
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    free = shapely.contains_xy(region, gx, gy)
    for hx, hy in humans:
        # a robot already closer than ``inflate`` may keep its distance but not get closer
        r = min(inflate, math.hypot(start[0] - hx, start[1] - hy) - GRID_M)
        free &= (gx - hx) ** 2 + (gy - hy) ** 2 > r * r
    si, sj = int(round((start[0] - x0) / GRID_M)), int(round((start[1] - y0) / GRID_M))
    ti, tj = int(round((goal[0] - x0) / GRID_M)), int(round((goal[1] - y0) / GRID_M))
    free[si, sj] = True
    if not free[ti, tj]:
        return None
    g = np.full((nx, ny), np.inf)
    parent = -np.ones((nx, ny), dtype=np.int64)
    g[si, sj] = 0.0
    heap = [(math.hypot(ti - si, tj - sj), 0.0, si, sj)]
    steps = [(1, 0, 1.0), (-1, 0, 1.0), (0, 1, 1.0), (0, -1, 1.0), (1, 1, 1.4142), (1, -1, 1.4142), (-1, 1, 1.4142), (-1, -1, 1.4142)]
    found = False
    while heap:
        _f, gc, i, j = heapq.heappop(heap)
        if gc > g[i, j]:
            continue
        if i == ti and j == tj:
            found = True
            break
        for di, dj, c in steps:
            a, b = i + di, j + dj
            if 0 <= a < nx and 0 <= b < ny and free[a, b]:
                if di and dj and not (free[i + di, j] and free[i, j + dj]):
                    continue
                ng = gc + c
                if ng < g[a, b]:
                    g[a, b] = ng
                    parent[a, b] = i * ny + j
                    heapq.heappush(heap, (ng + math.hypot(ti - a, tj - b), ng, a, b))
    if not found:
        return None
    cells = []
    i, j = ti, tj
    while (i, j) != (si, sj):
        cells.append((i, j))
        k = parent[i, j]
        i, j = divmod(int(k), ny)
    cells.reverse()
    pts = [(float(x0 + i * GRID_M), float(y0 + j * GRID_M)) for i, j in cells]
    return _simplify([start, *pts], free, x0, y0)[1:]


def _simplify(pts: list[tuple[float, float]], free: np.ndarray, x0: float, y0: float) -> list[tuple[float, float]]:
    """Drop points while the straight line between kept points stays on free cells (string pulling)."""
    if len(pts) <= 2:
        return pts
    out = [pts[0]]
    i = 0
    while i < len(pts) - 1:
        j = len(pts) - 1
        while j > i + 1 and not _line_free(pts[i], pts[j], free, x0, y0):
            j -= 1
        out.append(pts[j])
        i = j
    return out


def _line_free(a, b, free: np.ndarray, x0: float, y0: float) -> bool:
    n = max(2, int(math.hypot(b[0] - a[0], b[1] - a[1]) / (GRID_M * 0.5)) + 1)
    xs = np.linspace(a[0], b[0], n)
    ys = np.linspace(a[1], b[1], n)
    ii = np.clip(np.round((xs - x0) / GRID_M).astype(int), 0, free.shape[0] - 1)
    jj = np.clip(np.round((ys - y0) / GRID_M).astype(int), 0, free.shape[1] - 1)
    ok = free[ii, jj]
    ok[0] = True  # the start may lie in an inflated person disc
    return bool(ok.all())
