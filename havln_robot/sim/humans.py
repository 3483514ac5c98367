"""Simulated people of an episode (pure Python + numpy): placement, motions, positions over sim time.

Bodies are upright cylinders of radius :data:`HUMAN_RADIUS_M` (0.3 m) and height
:data:`HUMAN_HEIGHT_M` (1.7 m). Each person has one of three motions, looped on a
:data:`CYCLE_FRAMES` = 120-frame cycle as the HAPS 2.0 motion clips are (HA-VLN 2.0, arXiv
2503.14229, Sec. 3: every human motion is a 120-frame SMPL sequence), advanced with sim time at
:data:`FRAME_RATE_HZ` frames per second (one cycle = 12 s):

* ``standing`` -- stays at its anchor, facing the nearest path point;
* ``pacing`` -- walks back and forth ``PACE_HALF_M`` either side of its anchor, parallel to the
  nearest reference-path edge;
* ``walking`` -- walks from its anchor to a neighbouring viewpoint (an ``unobstructed`` edge on the
  same floor that is not an edge of the reference path) and back; a walker whose line would come
  closer to the path than the clearance below paces instead, and a pacer whose line would do so stands.

The motion is chosen from the activity text (:func:`motion_for`: "running", "walking", "exploring",
... → walking; "pacing", "phone", "vacuuming", "dance", ... → pacing; otherwise standing).

**Placement rule (paths stay passable).** A person starts at its ``human_viewpoint`` ground
point. If that point is closer (in xy, same floor) to the reference path than
``clearance = robot_radius + HUMAN_RADIUS_M + PLACEMENT_MARGIN_M``, it is pushed perpendicular to
the nearest path edge until it is ``clearance`` away -- to the side with more room in the scene's
free space (seeded tie-break). Motion end points obey the same rule and a motion's whole line must
keep the clearance (see the motions above), so a robot that follows the reference path exactly
never touches anyone.

**R2R episodes have no people**: :meth:`Crowd.from_episode` with ``populate=N`` places N people
(seeded) at viewpoints within :data:`POPULATE_RADIUS_M` of the path, with random HAPS-like
activities, so training sees crowds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from havln_robot.episodes import Episode, HumanSpec
from havln_robot.sim.robot import GO2_RADIUS_M

HUMAN_RADIUS_M: float = 0.3
"""Body radius (m) of a simulated person ("bodies ~0.3 m radius")."""
HUMAN_HEIGHT_M: float = 1.7
"""Body height (m) of a simulated person (average adult height)."""
CYCLE_FRAMES: int = 120
"""Frames per motion cycle (HAPS 2.0 motion clips, HA-VLN 2.0 Sec. 3)."""
FRAME_RATE_HZ: float = 10.0
"""Motion frames per second of sim time (assumption: 12 s per cycle gives ~0.5 m/s walking)."""
PACE_HALF_M: float = 0.75
"""Half amplitude (m) of a pacing motion."""
PLACEMENT_MARGIN_M: float = 0.1
"""Extra gap (m) between a robot on the path and a placed person."""
POPULATE_RADIUS_M: float = 3.0
"""Synthetic people (``populate``) are placed at viewpoints within this xy distance (m) of the path."""
MOTIONS: tuple[str, ...] = ("standing", "pacing", "walking")

_WALK = re.compile(r"\b(run|runn|walk|stroll|jog|explor|carry|chas|wander|hurr|rush|through|deliver|moving)", re.I)
_PACE = re.compile(r"\b(pac|phone|call|vacuum|clean|sweep|mop|danc|talk|exercis|look|search|presentation|play)", re.I)

#: Activities for synthetic people (populate), in HAPS 2.0 style "region:text".
_SYNTH_ACTIVITIES = (
    ("hallway", "A person walking through the hallway."),
    ("living room", "Someone talking on the phone while pacing."),
    ("kitchen", "A person standing and drinking coffee."),
    ("other room", "Someone looking around the room."),
    ("hallway", "A person carrying a box."),
    ("living room", "A person standing and reading a message."),
)


def motion_for(description: str) -> str:
    """Motion ("standing" | "pacing" | "walking") for an activity text (keyword rule, see module docstring)."""
    if _WALK.search(description):
        return "walking"
    if _PACE.search(description):
        return "pacing"
    return "standing"


@dataclass
class SimHuman:
    """One simulated person.

    Attributes:
        human_id: id within the episode. motion: "standing" | "pacing" | "walking".
        a, b: motion end points (map frame, m); ``a == b`` for standing. The body moves
            a → b → a over one cycle (cosine easing, so it slows down at the ends).
        phase: cycle phase offset in frames [0, 120). radius, height: m.
        facing: heading (rad, REP 103) when standing. description, region, viewpoint: from the episode.
    """

    human_id: int
    motion: str
    a: tuple[float, float, float]
    b: tuple[float, float, float]
    phase: float = 0.0
    radius: float = HUMAN_RADIUS_M
    height: float = HUMAN_HEIGHT_M
    facing: float = 0.0
    description: str = ""
    region: str = ""
    viewpoint: str | None = None
    synthetic: bool = False


@dataclass
class Crowd:
    """The people of an episode; positions are a pure function of sim time ``t`` (s).

    Attributes:
        humans: :class:`SimHuman` list. frame_rate: motion frames per second of sim time.
    """

    humans: list[SimHuman] = field(default_factory=list)
    frame_rate: float = FRAME_RATE_HZ

    def __post_init__(self) -> None:
        self._refresh()

    def _refresh(self) -> None:
        h = self.humans
        self._positions_memo: tuple[float, np.ndarray] | None = None
        self._a = np.array([x.a for x in h], dtype=np.float64).reshape(-1, 3)
        self._b = np.array([x.b for x in h], dtype=np.float64).reshape(-1, 3)
        self._phase = np.array([x.phase for x in h], dtype=np.float64)
        self._facing = np.array([x.facing for x in h], dtype=np.float64)
        d = self._b - self._a
        self._fwd = np.arctan2(d[:, 1], d[:, 0])
        self._moving = np.linalg.norm(d[:, :2], axis=1) > 1e-6
        self.radii = np.array([x.radius for x in h], dtype=np.float64)
        # fastest horizontal speed of each (m/s of sim time): d/dt of a + (b - a)(1 - cos 2 pi u) / 2
        # with du/dt = frame_rate / CYCLE_FRAMES peaks at pi |b - a| frame_rate / CYCLE_FRAMES
        self.max_speeds = math.pi * np.hypot(d[:, 0], d[:, 1]) * self.frame_rate / CYCLE_FRAMES
        self.ids = [x.human_id for x in h]

    def __len__(self) -> int:
        return len(self.humans)

    def frame(self, t: float) -> np.ndarray:
        """(M,) float motion frame index in [0, 120) of each person at sim time ``t`` (s)."""
        return (t * self.frame_rate + self._phase) % CYCLE_FRAMES

    def positions(self, t: float) -> np.ndarray:
        """(M, 3) float64 body base positions (map frame, m) at sim time ``t`` (s); read-only (the
        last time's array is reused: the world, the camera and the tracker ask it every tick)."""
        memo = self._positions_memo
        if memo is not None and memo[0] == t:
            return memo[1]
        if not self.humans:
            p = np.zeros((0, 3))
        else:
            u = self.frame(t) / CYCLE_FRAMES
            w = 0.5 - 0.5 * np.cos(2.0 * math.pi * u)  # 0 at a, 1 at b (half cycle), back to 0
            p = self._a + (self._b - self._a) * w[:, None]
        p.flags.writeable = False
        self._positions_memo = (t, p)
        return p

    def positions_many(self, ts: np.ndarray) -> np.ndarray:
        """(T, M, 3) float64 positions (map frame, m) at each of the sim times ``ts`` (s), vectorised."""
        ts = np.asarray(ts, dtype=np.float64).reshape(-1)
        if not self.humans:
            return np.zeros((len(ts), 0, 3))
        u = ((ts[:, None] * self.frame_rate + self._phase[None, :]) % CYCLE_FRAMES) / CYCLE_FRAMES
        w = 0.5 - 0.5 * np.cos(2.0 * math.pi * u)
        return self._a[None] + (self._b - self._a)[None] * w[..., None]

    def headings(self, t: float) -> np.ndarray:
        """(M,) float64 body headings (rad, REP 103) at sim time ``t`` (s): direction of travel, or facing when standing."""
        if not self.humans:
            return np.zeros(0)
        u = self.frame(t) / CYCLE_FRAMES
        out = np.where(u < 0.5, self._fwd, self._fwd + math.pi)
        out = np.where(self._moving, out, self._facing)
        return (out + math.pi) % (2.0 * math.pi) - math.pi

    def motion_states(self, t: float) -> list[str]:
        """Per person: "standing", or "moving" when its motion is under way at ``t``."""
        return ["moving" if m else "standing" for m in self._moving]

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_episode(
        cls,
        episode: Episode,
        scene,
        seed: int = 0,
        robot_radius: float | None = None,
        populate: int = 0,
        frame_rate: float = FRAME_RATE_HZ,
    ) -> Crowd:
        """Place the episode's people in ``scene`` (rules in the module docstring).

        Args:
            episode: the episode (its ``humans`` and ``reference_path``).
            scene: the :class:`havln_robot.sim.scene.Scene` of ``episode.scan``.
            seed: RNG seed (phases, side tie-breaks, synthetic people).
            robot_radius: m, for the placement clearance (default: the Go2 footprint radius).
            populate: when the episode has no people, place this many synthetic ones near the path.
            frame_rate: motion frames per second.

        Returns:
            The crowd (possibly empty).
        """
        if robot_radius is None:
            robot_radius = GO2_RADIUS_M
        rng = np.random.default_rng(seed)
        clearance = robot_radius + HUMAN_RADIUS_M + PLACEMENT_MARGIN_M
        path = np.asarray(episode.reference_path, dtype=np.float64).reshape(-1, 3)
        path_edges = {frozenset(e) for e in zip(episode.path_ids[:-1], episode.path_ids[1:], strict=False)}
        specs = list(episode.humans)
        synthetic = False
        if not specs and populate > 0:
            specs = _synthetic_specs(episode, scene, populate, rng)
            synthetic = True
        humans: list[SimHuman] = []
        for spec in specs:
            motion = motion_for(spec.description)
            anchor = _place(np.asarray(spec.position, dtype=np.float64), path, clearance, scene, rng)
            a = b = anchor
            if motion == "walking":
                b = None
                for target in _walk_targets(spec, scene, path_edges, rng):
                    cand = _place(target, path, clearance, scene, rng)
                    if np.linalg.norm(cand[:2] - a[:2]) >= 0.5 and _segment_clear(a, cand, path, clearance):
                        b = cand
                        break
                if b is None:
                    motion = "pacing"
            if motion == "pacing":
                d = _nearest_edge_dir(anchor, path)
                a = _place(anchor - d * PACE_HALF_M, path, clearance, scene, rng)
                b = _place(anchor + d * PACE_HALF_M, path, clearance, scene, rng)
                if not _segment_clear(a, b, path, clearance):
                    motion, a, b = "standing", anchor, anchor
            a, b = _on_ground(a, scene), _on_ground(b, scene)
            facing = _facing(anchor, path)
            humans.append(
                SimHuman(
                    human_id=spec.human_id,
                    motion=motion,
                    a=tuple(float(v) for v in a),
                    b=tuple(float(v) for v in b),
                    phase=float(rng.uniform(0, CYCLE_FRAMES)),
                    facing=facing,
                    description=spec.description,
                    region=spec.region,
                    viewpoint=spec.viewpoint,
                    synthetic=synthetic,
                )
            )
        return cls(humans, frame_rate)


# -------------------------------------------------------------------- geometry helpers
def _same_floor(path: np.ndarray, z: float) -> np.ndarray:
    return np.abs(path[:, 2] - z) < 1.0


def _nearest_on_path(p: np.ndarray, path: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(xy distance, nearest point xy, unit edge direction xy) from ``p`` to the path segments near its height."""
    best = (math.inf, path[0, :2].copy(), np.array([1.0, 0.0]))
    if len(path) == 1:
        d = p[:2] - path[0, :2]
        return (float(np.hypot(*d)), path[0, :2].copy(), np.array([1.0, 0.0]))
    for i in range(len(path) - 1):
        a, b = path[i], path[i + 1]
        if not min(a[2], b[2]) - 1.0 <= p[2] <= max(a[2], b[2]) + 1.0:
            continue
        ab = b[:2] - a[:2]
        ll = float(ab @ ab)
        s = 0.0 if ll < 1e-12 else min(1.0, max(0.0, float((p[:2] - a[:2]) @ ab) / ll))
        q = a[:2] + s * ab
        d = float(np.hypot(*(p[:2] - q)))
        if d < best[0]:
            u = ab / math.sqrt(ll) if ll > 1e-12 else np.array([1.0, 0.0])
            best = (d, q, u)
    return best


def _nearest_edge_dir(p: np.ndarray, path: np.ndarray) -> np.ndarray:
    _, _, u = _nearest_on_path(p, path)
    return np.array([u[0], u[1], 0.0])


def _facing(p: np.ndarray, path: np.ndarray) -> float:
    d, q, u = _nearest_on_path(p, path)
    if d < 1e-6:
        return float(math.atan2(u[1], u[0]))
    return float(math.atan2(q[1] - p[1], q[0] - p[0]))


def _place(p: np.ndarray, path: np.ndarray, clearance: float, scene, rng: np.random.Generator) -> np.ndarray:
    """Push ``p`` away from the path until it is ``clearance`` (m) from every path edge (3 passes)."""
    p = np.array(p, dtype=np.float64)
    for _ in range(3):
        d, q, u = _nearest_on_path(p, path)
        if d >= clearance - 1e-6:
            break
        if d > 1e-3:
            n = (p[:2] - q) / d
            p[:2] = q + n * clearance
        else:
            n = np.array([-u[1], u[0]])
            cands = [q + n * clearance, q - n * clearance]
            room = [_room(scene, c, p[2]) for c in cands]
            if abs(room[0] - room[1]) < 1e-3:
                k = int(rng.integers(2))
            else:
                k = int(np.argmax(room))
            p[:2] = cands[k]
    return p


def _on_ground(p: np.ndarray, scene) -> np.ndarray:
    q = np.array(p, dtype=np.float64)
    try:
        q[2] = scene.ground_z(float(q[0]), float(q[1]), float(q[2]))
    except Exception:  # noqa: BLE001 - scenes without ground_z(): keep the given height
        pass
    return q


def _room(scene, xy: np.ndarray, z: float) -> float:
    try:
        return float(scene.clearance(float(xy[0]), float(xy[1]), float(z)))
    except Exception:  # noqa: BLE001 - scenes without clearance(): no preference
        return 0.0


def _walk_targets(spec: HumanSpec, scene, path_edges: set, rng: np.random.Generator) -> list[np.ndarray]:
    """Neighbouring viewpoints (same floor, not along a path edge) a walker may walk to, shuffled."""
    vp = spec.viewpoint
    if vp is None or vp not in getattr(scene, "neighbors", {}):
        return []
    here = scene.viewpoints[vp]
    cands = [n for n in scene.neighbors[vp] if scene.viewpoints[n].floor == here.floor and frozenset((vp, n)) not in path_edges]
    out = []
    for k in rng.permutation(len(cands)):
        n = scene.viewpoints[cands[int(k)]]
        out.append(np.array([n.x, n.y, here.z if abs(n.z - here.z) < 0.3 else n.z], dtype=np.float64))
    return out


def _segment_clear(a: np.ndarray, b: np.ndarray, path: np.ndarray, clearance: float) -> bool:
    """True if every point of segment a-b (sampled every 5 cm) is at least ``clearance`` (m) from the path."""
    n = max(2, int(np.linalg.norm(b[:2] - a[:2]) / 0.05) + 1)
    for t in np.linspace(0.0, 1.0, n):
        if _nearest_on_path(a + t * (b - a), path)[0] < clearance - 1e-6:
            return False
    return True


def _synthetic_specs(episode: Episode, scene, n: int, rng: np.random.Generator) -> list[HumanSpec]:
    path = np.asarray(episode.reference_path, dtype=np.float64).reshape(-1, 3)
    near = []
    for v in scene.viewpoints.values():
        p = np.array([v.x, v.y, v.z])
        d, _, _ = _nearest_on_path(p, path)
        if d <= POPULATE_RADIUS_M and _same_floor(path, v.z).any():
            near.append(v)
    if not near:
        return []
    pick = rng.choice(len(near), size=min(n, len(near)), replace=False)
    out = []
    for k, i in enumerate(sorted(int(j) for j in pick)):
        v = near[i]
        region, text = _SYNTH_ACTIVITIES[int(rng.integers(len(_SYNTH_ACTIVITIES)))]
        out.append(HumanSpec(k, v.id, (v.x, v.y, v.z), text, region, "synthetic"))
    return out
