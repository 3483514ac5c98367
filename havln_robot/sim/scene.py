"""Navigable scenes built from Matterport3D navigation graphs (pure Python: numpy + shapely).

A :class:`Scene` is the walkable free space of one Matterport3D scan in the **map frame**
(= Matterport3D world frame: x, y horizontal, z up, metres; REP 103 yaw is measured from +x,
counter-clockwise). Everything that is not free space is wall.

How a scene is built from ``connectivity/<scan>_connectivity.json`` (Matterport3DSimulator /
R2R navigation graph, see ``../shared/data/ha-vln/README.md``):

* each ``included`` viewpoint gives a **ground point**: translation of its 4x4 row-major ``pose``
  (``pose[3], pose[7], pose[11]``) minus its camera ``height`` in z (``height`` is the camera height
  above the floor, so floor z = pose z - height);
* viewpoints are grouped into **floors**: connected components of the graph of ``unobstructed``
  edges whose ground z differ by less than :data:`LEVEL_STEP_M`, then components whose median
  heights are within :data:`LEVEL_STEP_M` are merged. A floor's nominal height is the median
  ground z of its viewpoints; its ground follows them (inverse-distance blend of the 3 nearest);
* the free space of a floor is the union of **discs** (radius ``viewpoint_radius``, default 1.1 m)
  at its viewpoints and **corridors** (width ``corridor_width``, default 1.2 m) along the
  ``unobstructed`` edges between two of its viewpoints;
* an ``unobstructed`` edge between two floors (stairs) becomes a **ramp**: a corridor whose ground
  z rises linearly from one viewpoint to the other. A floor's free space (``Floor.free``) includes
  the ramps that leave it (or pass through it at its height) with the discs at both ends, so the
  walls open where stairs start.

The built scene is cached per scan and build parameters (pickle, under ``cache_dir`` or
``~/.cache/havln_robot/scenes``). :meth:`Scene.builtin` gives a small authored apartment that needs
no external data (used by ``havln-robot demo`` on a fresh clone).
"""

from __future__ import annotations

import hashlib
import math
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon
from shapely.geometry.base import BaseGeometry

from havln_robot.paths import atomic_output, user_cache_root

#: Ground-z difference (m) below which two connected viewpoints are on the same floor. Stairs
#: risers are ~0.18 m each; edges rising more than this are treated as stairs (ramps).
LEVEL_STEP_M: float = 0.3
#: Floors whose nominal heights differ by at most this (m) are split levels of one storey: a body
#: may walk between their free spaces (storeys are >= ~2.4 m apart in Matterport3D houses).
NEAR_FLOOR_DZ_M: float = 1.0
#: A body on a floor steps onto a linked ramp whose ground is within this height (m) of its own.
RAMP_ENTRY_M: float = 0.3
#: Default corridor width (m) along ``unobstructed`` edges ("default ~1.2 m").
WALL_THICKNESS_M: float = 0.08
"""Walls are drawn this thick, centred on the free-space boundary (renderer), so the face a camera
sees stands half of it inside the free space (the batch obstacle points use that face)."""
DEFAULT_CORRIDOR_WIDTH_M: float = 1.2
#: Default radius (m) of the free disc around each viewpoint. 1.1 m holds a 0.3 m person offset
#: from the path by robot radius + person radius + margin (see havln_robot.sim.humans).
DEFAULT_VIEWPOINT_RADIUS_M: float = 1.1
#: Default wall height (m) for rendering (typical residential ceiling ~2.5 m).
DEFAULT_WALL_HEIGHT_M: float = 2.5
#: Max |ground z - z_hint| (m) for a surface to support a body: covers stepping from the flat
#: disc at the foot of steep stairs onto the ramp (1.1 m x slope <= 1), well below a storey (~2.5 m).
SUPPORT_TOL_M: float = 1.2
#: A body on one flight of stairs moves onto a flight meeting it at a landing once it is this much (m)
#: nearer that flight's axis than its own (hysteresis against flip-flopping on the bisector).
AXIS_MARGIN_M: float = 0.05
#: A body on one flight moves onto another linked flight that does not meet its own at a landing only
#: within this height (m) of its ground: flights running side by side (a long graph edge over the
#: flights it skips, split stairs up and down from one landing), never one stacked above or below
#: (switchback flights are ~0.7 m or more apart; the same bound as ``geodesic.LEG_DZ_M``).
FLIGHT_DZ_M: float = 0.5
#: ... and only onto a flight that rises alike: ground gradients (vectors, dz per m) at most this
#: far apart. Split stairs up and down from one landing differ by 0.7 (VzqfbhrpDEA); a graph edge
#: rising two storeys across a stairwell (slope 2.1) crossing a gentle flight differs by 2.0
#: (b8cTxDM8gDG) and is not walked onto from the side.
FLIGHT_GRADIENT_DIFF: float = 1.0
#: Least clear headroom over a flight of stairs, m: IBC 2021 section 1011.3 (80 in = 2,032 mm; the
#: EU national codes ask 2.0-2.1 m). A floor slab or ceiling lower than this over a ramp's ground
#: is a stairwell opening in the building, not a surface (:func:`stairwell_cut`).
STAIR_HEADROOM_M: float = 2.03
#: A surface at most this far (m) above a ramp's lowest ground is the landing or floor the ramp
#: starts from (drawn under it), not a surface over it.
STAIRWELL_TOL_M: float = 0.05
#: Bump this when the build algorithm changes so stale cache files are rebuilt.
_CACHE_VERSION = 5
#: Number of segments per quarter circle for discs and buffers.
_QUAD_SEGS = 6


class SceneError(ValueError):
    """A scene cannot be built or loaded; the message names the file/field and the fix."""


#: The only globals a scene cache file may name: the scene's own dataclasses and the data
#: constructors numpy and shapely pickle with (array from bytes, dtype, geometry from WKB).
#: Measured by unpickling cached builtin and 17DRP5sb8fy scenes (numpy 2, shapely 2); older numpy
#: spells ``_frombuffer`` / ``_reconstruct`` under ``numpy.core``.
_CACHE_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    {
        ("havln_robot.sim.scene", "Scene"),
        ("havln_robot.sim.scene", "Floor"),
        ("havln_robot.sim.scene", "Ramp"),
        ("havln_robot.sim.scene", "Viewpoint"),
        ("numpy", "dtype"),
        ("numpy", "ndarray"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("shapely.io", "from_wkb"),
    }
)


class _CacheUnpickler(pickle.Unpickler):
    """Unpickler for the scene cache that resolves only :data:`_CACHE_GLOBALS` (Python docs,
    "Restricting Globals"): a cache file planted by someone else cannot call ``os.system`` & co.

    Raises:
        pickle.UnpicklingError: any other global (the caller rebuilds the scene).
    """

    def find_class(self, module: str, name: str):
        if (module, name) not in _CACHE_GLOBALS:
            raise pickle.UnpicklingError(f"scene cache names {module}.{name}, which is not loaded")
        return super().find_class(module, name)


@dataclass
class Viewpoint:
    """One navigation-graph node: ``id`` (Matterport image id), ground point (x, y, z) in the map frame (m), floor index."""

    id: str
    x: float
    y: float
    z: float
    floor: int = -1


@dataclass
class Floor:
    """One level of a scene.

    Attributes:
        index: position in :attr:`Scene.floors` (floors are sorted by height).
        z: nominal floor height (m, map frame): median ground z of its viewpoints. The ground
            itself follows the viewpoints (:meth:`height_at`), since a floor may span a few dm.
        free: free space in map xy (shapely Polygon/MultiPolygon, m): the floor's discs and corridors
            plus the ramps that leave it.
        own: the floor's discs and corridors only (without ramps).
        viewpoints: ids of its viewpoints. vp_xyz: (V, 3) their ground points (m).
    """

    index: int
    z: float
    free: BaseGeometry
    own: BaseGeometry
    viewpoints: list[str] = field(default_factory=list)
    vp_xyz: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    def height_at(self, x: float, y: float) -> float:
        """Ground z (m) at map (x, y): inverse-square-distance blend of the 3 nearest viewpoints' ground z.

        Equals a viewpoint's own ground z at that viewpoint; :attr:`z` (median) if the floor has none.
        """
        v = self.vp_xyz
        if len(v) == 0:
            return self.z
        d2 = (v[:, 0] - x) ** 2 + (v[:, 1] - y) ** 2
        idx = np.argpartition(d2, 3)[:3] if len(v) > 3 else np.arange(len(v))
        d2 = d2[idx]
        k = int(np.argmin(d2))
        if d2[k] < 1e-12:
            return float(v[idx[k], 2])
        w = 1.0 / d2
        return float((w * v[idx, 2]).sum() / w.sum())


@dataclass
class Ramp:
    """A stairs edge between two floors: ground z goes linearly from ``a`` (x, y, z) to ``b`` (x, y, z).

    Attributes:
        floor_a, floor_b: floor indices at the ``a`` and ``b`` ends.
        a, b: end points (map frame, m) -- the two viewpoints' ground points.
        polygon: the ramp corridor in map xy (flat caps at the ends).
        vp_a, vp_b: viewpoint ids of the ends.
        floors: floors it joins: its two ends' plus any it passes through at their height (landings).
        reach: ``polygon`` plus the viewpoint discs at both ends: what a body on a joined floor may
            occupy around the stairs (so it can walk off the top of a short ramp).
    """

    floor_a: int
    floor_b: int
    a: tuple[float, float, float]
    b: tuple[float, float, float]
    polygon: BaseGeometry
    vp_a: str = ""
    vp_b: str = ""
    floors: list[int] = field(default_factory=list)
    reach: BaseGeometry | None = None

    def z_at(self, x: float, y: float) -> float:
        """Ground z (m) on the ramp at map (x, y): linear along the ramp axis, clamped at the ends."""
        ax, ay, az = self.a
        bx, by, bz = self.b
        dx, dy = bx - ax, by - ay
        ll = dx * dx + dy * dy
        s = 0.0 if ll < 1e-12 else min(1.0, max(0.0, ((x - ax) * dx + (y - ay) * dy) / ll))
        return az + s * (bz - az)


def ramp_z_range(ramp: Any) -> tuple[float, float]:
    """(lowest, highest) ground z of a ramp (m): ``z_at`` over its polygon's outline (linear along
    the axis and clamped at the ends, so the extremes lie on the outline). ``ramp`` has ``polygon``
    and ``z_at(x, y)`` (:class:`Ramp`, the renderer's ``RampGeometry``)."""
    coords = [c for g in getattr(ramp.polygon, "geoms", [ramp.polygon]) for c in g.exterior.coords]
    zs = [float(ramp.z_at(x, y)) for x, y, *_ in coords]
    return min(zs), max(zs)


def stairwell_cut(area: BaseGeometry, z: float, ramps: Any) -> BaseGeometry:
    """A horizontal surface's area with the stairwell openings cut out.

    A floor slab or a ceiling at height ``z`` that lies over a flight of stairs with less than
    :data:`STAIR_HEADROOM_M` above its ground is an opening in a real building (nobody could walk the
    flight under it). Matterport3D floors are the free space of whole storeys and overlap the flights
    that join them, so the renderer and the Gazebo world would otherwise draw the upper storey's
    slab and the lower storey's ceiling across the flight, 0.2-0.4 m above a robot walking it --
    a wall in its depth image that the batch simulator's terrain (which has no slabs or ceilings)
    never saw (val_seen 3437, scan 29hnd4uzFmX, ramp 16).

    Args:
        area: the surface's outline (shapely, map xy, m).
        z: its height, m (map frame).
        ramps: objects with ``polygon`` and ``z_at`` (:class:`Ramp`, ``RampGeometry``).

    Returns:
        ``area`` minus the polygon of every ramp whose ground lies between ``z - STAIR_HEADROOM_M``
        and ``z - STAIRWELL_TOL_M`` somewhere (a surface at a ramp's foot, or a storey's headroom
        over its top, stays whole); ``area`` itself when nothing is cut.
    """
    holes = []
    for r in ramps or []:
        lo, hi = ramp_z_range(r)
        if lo + STAIRWELL_TOL_M < z < hi + STAIR_HEADROOM_M:
            holes.append(r.polygon)
    if not holes or area is None or area.is_empty:
        return area
    return area.difference(shapely.union_all(holes))


def flights_through_walls(z: float, wall_height: float, ramps: Any) -> list[Any]:
    """The flights of stairs that a wall of a floor at height ``z`` would rise through.

    The renderer draws every floor's walls ``wall_height`` tall; Matterport3D storeys and landings
    are often closer than that (1.0-1.3 m on split-level stairs), so a lower storey's wall would
    rise through a flight above it and stand across its corridor -- a wall in the depth image 0.2 m
    ahead of a robot on the stairs that the batch simulator (walls of the flight's own floors,
    :meth:`~havln_robot.sim.closed_loop.ClosedLoop._walls_seen`) never had, and a flight nobody could
    walk (val_seen 5550, scan E9uDoFAP3SH, floor 2's wall across ramp 1; 7163, scan
    1pXnuDYAj8r, floor 0's wall through ramps 0 and 1). In a building a wall ends under the stairs
    above it, and none stands in a flight's headroom (the bound of :func:`stairwell_cut`).

    Args:
        z: the floor's height, m (map frame).
        wall_height: how tall its walls are drawn, m.
        ramps: objects with ``polygon`` and ``z_at`` (:class:`Ramp`, ``RampGeometry``).

    Returns:
        Every ramp whose ground lies, somewhere, below the walls' top (by more than
        :data:`STAIRWELL_TOL_M`) and less than :data:`STAIR_HEADROOM_M` above their foot.
    """
    out = []
    for r in ramps or []:
        lo, hi = ramp_z_range(r)
        if lo + STAIRWELL_TOL_M < z + wall_height and z < hi + STAIR_HEADROOM_M:
            out.append(r)
    return out


def clip_segments(segs: np.ndarray, region: Any, inside: bool = False, return_index: bool = False) -> Any:
    """The parts of segments (K, 2, 2) (map xy, m) outside (``inside``: inside) the shapely ``region``.

    Returns:
        (K', 2, 2) parts; with ``return_index`` also (K',) the segment each part comes from.
    """
    segs = np.asarray(segs, dtype=np.float64).reshape(-1, 2, 2)
    idx = np.arange(len(segs))
    if region.is_empty or not len(segs):
        out = segs[:0] if inside else segs
        return (out, idx[: len(out)]) if return_index else out
    shapely.prepare(region)
    lines = shapely.linestrings(segs)
    hit = shapely.intersects(region, lines)
    keep, src = ([segs[~hit]], [idx[~hit]]) if not inside else ([segs[:0]], [idx[:0]])
    if hit.any():
        op = shapely.intersection if inside else shapely.difference
        for i, g in zip(idx[hit], op(lines[hit], region), strict=True):
            for part in getattr(g, "geoms", [g]):
                if part.is_empty or part.geom_type != "LineString":
                    continue
                c = np.asarray(part.coords, dtype=np.float64)[:, :2]
                if len(c) >= 2:
                    keep.append(np.stack([c[:-1], c[1:]], axis=1))
                    src.append(np.full(len(c) - 1, i))
    out = np.concatenate(keep, axis=0)
    return (out, np.concatenate(src)) if return_index else out


#: Wall parts under a flight of stairs are capped in pieces at most this long (m), each at the
#: flight's lowest ground over it: a stepped top that stays under the sloped treads (at most
#: 0.25 m x slope below them), so the wall never shows above the flight. A speed/size choice.
WALL_CAP_PIECE_M = 0.25


def drawn_walls(scene: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The walls drawn for floor ``scene.floors[k]`` (renderer, Gazebo world and the batch
    simulator's walls on stairs alike): segments and the height of each one's top.

    :meth:`Scene.wall_segments` of the floor, without the parts that stand inside the walkable area
    of another floor less than a wall height away in z (a landing a few decimetres above or below
    a room: walkable space, not a wall). Where a wall would rise through a flight of stairs
    (:func:`flights_through_walls`) it ends under it: the part inside the flight's corridor is cut
    into pieces of at most :data:`WALL_CAP_PIECE_M`, each topped at the lowest ground of the flights
    over it (a wall the flight passes over from its foot up, or one in its headroom, is not drawn
    there at all). Duck-typed: ``scene.floors[i]`` has ``index``, ``z`` and ``own`` (or ``free``);
    ``scene.wall_segments(index)``, ``scene.wall_height`` (default 2.5 m) and ``scene.ramps`` (may
    be absent).

    Returns:
        ((K, 2, 2) float64 segments, map xy, m; (K,) float64 absolute z of each one's top, m).
    """
    floors = list(scene.floors)
    fl = floors[k]
    z = float(fl.z)
    wall_h = float(getattr(scene, "wall_height", 2.5))
    segs = np.asarray(scene.wall_segments(int(getattr(fl, "index", k))), dtype=np.float64).reshape(-1, 2, 2)
    areas = [getattr(g, "own", None) if getattr(g, "own", None) is not None else getattr(g, "free", None) for g in floors]
    near = [a for j, (g, a) in enumerate(zip(floors, areas, strict=True)) if j != k and a is not None and abs(float(g.z) - z) < wall_h]
    if near and len(segs):
        segs = clip_segments(segs, shapely.union_all(near).buffer(-0.05))
    tops = np.full(len(segs), z + wall_h)
    flights = flights_through_walls(z, wall_h, getattr(scene, "ramps", None))
    if not flights or not len(segs):
        return segs, tops
    region = shapely.union_all([r.polygon for r in flights]).buffer(-0.05)
    outside = clip_segments(segs, region)
    inside = clip_segments(segs, region, inside=True)
    pieces = []
    for (ax, ay), (bx, by) in inside:
        n = max(1, int(math.ceil(math.hypot(bx - ax, by - ay) / WALL_CAP_PIECE_M)))
        u = np.linspace(0.0, 1.0, n + 1)
        px, py = ax + u * (bx - ax), ay + u * (by - ay)
        pieces.append(np.stack([np.stack([px[:-1], py[:-1]], axis=1), np.stack([px[1:], py[1:]], axis=1)], axis=1))
    if not pieces:
        return outside, np.full(len(outside), z + wall_h)
    P = np.concatenate(pieces)
    cap = np.full(len(P), z + wall_h)
    mid = P.mean(axis=1)
    for r in flights:
        over = shapely.contains_xy(r.polygon, mid[:, 0], mid[:, 1])
        for i in np.flatnonzero(over):
            g = min(float(r.z_at(*P[i, 0])), float(r.z_at(*P[i, 1])))
            cap[i] = min(cap[i], g)
    ok = cap > z + STAIRWELL_TOL_M  # a flight at or below the floor over it: no wall there
    return np.concatenate([outside, P[ok]]), np.concatenate([np.full(len(outside), z + wall_h), cap[ok]])


@dataclass(frozen=True)
class Support:
    """What the ground under a point is: ``kind`` "floor" or "ramp", ``index`` into floors/ramps, ground ``z`` (m)."""

    kind: str
    index: int
    z: float


def _disc(x: float, y: float, r: float) -> Polygon:
    return Point(x, y).buffer(r, quad_segs=_QUAD_SEGS)


def _corridor(x0: float, y0: float, x1: float, y1: float, width: float, flat: bool = False) -> BaseGeometry:
    line = LineString([(x0, y0), (x1, y1)])
    return line.buffer(width / 2.0, quad_segs=_QUAD_SEGS, cap_style="flat" if flat else "round")


class Scene:
    """Walkable free space of a scan, by floor, with stairs as ramps (see the module docstring).

    Attributes:
        name: scan id (or ``"builtin"``).
        floors: :class:`Floor` list sorted by height.
        ramps: :class:`Ramp` list (stairs).
        viewpoints: id → :class:`Viewpoint` (included viewpoints only).
        neighbors: id → ids of viewpoints joined by an ``unobstructed`` edge.
        wall_height: m, for rendering (default 2.5).
        corridor_width, viewpoint_radius: build parameters (m).
        flat_floors: the renderer draws each floor flat at its nominal :attr:`Floor.z` (True for
            procedural scenes; a mesh scene draws its own surfaces).
    """

    flat_floors: bool = True

    def __init__(
        self,
        name: str,
        viewpoints: dict[str, Viewpoint],
        edges: list[tuple[str, str]],
        corridor_width: float = DEFAULT_CORRIDOR_WIDTH_M,
        viewpoint_radius: float = DEFAULT_VIEWPOINT_RADIUS_M,
        wall_height: float = DEFAULT_WALL_HEIGHT_M,
        extra_free: dict[int, BaseGeometry] | None = None,
    ) -> None:
        """Build a scene from ground points and edges.

        Args:
            name: scan id.
            viewpoints: id → :class:`Viewpoint` (``floor`` is assigned here).
            edges: undirected navigable edges between viewpoint ids.
            corridor_width: corridor width along edges (m, > 0).
            viewpoint_radius: free-disc radius at viewpoints (m, > 0).
            wall_height: wall height for rendering (m).
            extra_free: optional floor index → extra free polygons (authored rooms of the builtin scene).

        Raises:
            SceneError: no viewpoints, or a non-positive width/radius.
        """
        if not viewpoints:
            raise SceneError(f"scene {name!r} has no included viewpoints; check the connectivity file")
        if not (corridor_width > 0 and viewpoint_radius > 0):
            raise SceneError("corridor_width and viewpoint_radius must be > 0 m")
        self.name = name
        self.viewpoints = viewpoints
        self.corridor_width = float(corridor_width)
        self.viewpoint_radius = float(viewpoint_radius)
        self.wall_height = float(wall_height)
        self.neighbors: dict[str, list[str]] = {v: [] for v in viewpoints}
        for a, b in edges:
            if b not in self.neighbors[a]:
                self.neighbors[a].append(b)
                self.neighbors[b].append(a)
        self._assign_floors()
        self._build(extra_free or {})
        self._runtime_init()

    # ------------------------------------------------------------------ building
    def _assign_floors(self) -> None:
        ids = list(self.viewpoints)
        index = {v: i for i, v in enumerate(ids)}
        parent = list(range(len(ids)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for a, nbrs in self.neighbors.items():
            for b in nbrs:
                if abs(self.viewpoints[a].z - self.viewpoints[b].z) < LEVEL_STEP_M:
                    ra, rb = find(index[a]), find(index[b])
                    if ra != rb:
                        parent[ra] = rb
        comps: dict[int, list[str]] = {}
        for v in ids:
            comps.setdefault(find(index[v]), []).append(v)
        groups = sorted(([float(np.median([self.viewpoints[v].z for v in c])), c] for c in comps.values()), key=lambda g: g[0])
        merged: list[list] = []
        for z, members in groups:
            if merged and z - merged[-1][0] < LEVEL_STEP_M:
                merged[-1][1].extend(members)
                merged[-1][0] = float(np.median([self.viewpoints[v].z for v in merged[-1][1]]))
            else:
                merged.append([z, list(members)])
        self._floor_members = merged
        for k, (_z, members) in enumerate(merged):
            for v in members:
                self.viewpoints[v].floor = k

    def _build(self, extra_free: dict[int, BaseGeometry]) -> None:
        vp = self.viewpoints
        parts: list[list[BaseGeometry]] = [[] for _ in self._floor_members]
        for v in vp.values():
            parts[v.floor].append(_disc(v.x, v.y, self.viewpoint_radius))
        self.ramps: list[Ramp] = []
        seen: set[tuple[str, str]] = set()
        for a, nbrs in self.neighbors.items():
            for b in nbrs:
                key = (a, b) if a < b else (b, a)
                if key in seen:
                    continue
                seen.add(key)
                va, vb = vp[key[0]], vp[key[1]]
                if va.floor == vb.floor:
                    parts[va.floor].append(_corridor(va.x, va.y, vb.x, vb.y, self.corridor_width))
                else:
                    za, zb = va.z, vb.z
                    if math.hypot(vb.x - va.x, vb.y - va.y) < 1e-3:
                        continue  # vertical edge (lift): not walkable
                    poly = _corridor(va.x, va.y, vb.x, vb.y, self.corridor_width, flat=True)
                    ramp = Ramp(va.floor, vb.floor, (va.x, va.y, za), (vb.x, vb.y, zb), poly, va.id, vb.id)
                    ramp.reach = shapely.union_all(
                        [poly, _disc(va.x, va.y, self.viewpoint_radius), _disc(vb.x, vb.y, self.viewpoint_radius)]
                    )
                    self.ramps.append(ramp)
        for k, geom in extra_free.items():
            parts[k].append(geom)
        owns = [shapely.union_all(p) for p in parts]
        for r in self.ramps:  # floors a ramp passes through at their height (mid-stairs landings)
            lo, hi = min(r.a[2], r.b[2]) - SUPPORT_TOL_M, max(r.a[2], r.b[2]) + SUPPORT_TOL_M
            r.floors = sorted(
                {r.floor_a, r.floor_b}
                | {k for k, (z, _m) in enumerate(self._floor_members) if lo <= z <= hi and r.polygon.intersects(owns[k])}
            )
        self.floors: list[Floor] = []
        for k, (z, members) in enumerate(self._floor_members):
            own = owns[k]
            ramp_polys = [r.reach for r in self.ramps if k in r.floors]
            free = shapely.union_all([own, *ramp_polys]) if ramp_polys else own
            xyz = np.array([[vp[v].x, vp[v].y, vp[v].z] for v in members], dtype=np.float64).reshape(-1, 3)
            self.floors.append(Floor(k, float(z), free, own, list(members), xyz))
        del self._floor_members

    def _runtime_init(self) -> None:
        """(Re)create caches that are not pickled: prepared geometries, spatial index, eroded spaces."""
        for f in self.floors:
            shapely.prepare(f.own)
            shapely.prepare(f.free)
        for r in self.ramps:
            shapely.prepare(r.polygon)
        self._ramp_free: dict[tuple[str, int], BaseGeometry] = {}
        self._near: dict[int, frozenset[int]] = {}
        self._eroded: dict[tuple[str, int, float], BaseGeometry] = {}
        self._slabs: dict[int, BaseGeometry] = {}
        self._walls: dict[int, np.ndarray] = {}
        self._floor_z = np.array([f.z for f in self.floors], dtype=np.float64)
        self._ramp_bounds = np.array([r.polygon.bounds for r in self.ramps], dtype=np.float64).reshape(-1, 4)
        skel: list[list[tuple[tuple[float, float], tuple[float, float]]]] = [[] for _ in self.floors]
        for a, nbrs in self.neighbors.items():
            va = self.viewpoints[a]
            for b in nbrs:
                vb = self.viewpoints[b]
                if a < b and va.floor == vb.floor:
                    skel[va.floor].append(((va.x, va.y), (vb.x, vb.y)))
        #: floor index -> (E, 2, 2) its same-floor edges in map xy (m): the axes of its corridors
        self._skeleton: list[np.ndarray] = [np.asarray(e, dtype=np.float64).reshape(-1, 2, 2) for e in skel]
        ends: dict[str, set[int]] = {}
        for i, r in enumerate(self.ramps):
            ends.setdefault(r.vp_a, set()).add(i)
            ends.setdefault(r.vp_b, set()).add(i)
        #: ramp index -> other ramps sharing an end viewpoint (flights meeting at a landing)
        self._adjacent_ramps: list[frozenset[int]] = [
            frozenset((ends.get(r.vp_a, set()) | ends.get(r.vp_b, set())) - {i}) for i, r in enumerate(self.ramps)
        ]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for k in (
            "_ramp_free",
            "_near",
            "_eroded",
            "_slabs",
            "_walls",
            "_floor_z",
            "_ramp_bounds",
            "_adjacent_ramps",
            "_skeleton",
            "_terrain_cache",
            "_terrain_tiles",
            "_ramp_ab",
        ):
            state.pop(k, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._runtime_init()

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_connectivity(
        cls,
        path: str | os.PathLike[str],
        corridor_width: float = DEFAULT_CORRIDOR_WIDTH_M,
        viewpoint_radius: float = DEFAULT_VIEWPOINT_RADIUS_M,
        wall_height: float = DEFAULT_WALL_HEIGHT_M,
    ) -> Scene:
        """Build (no cache) from a ``<scan>_connectivity.json`` file.

        Raises:
            SceneError: file missing/unreadable, or a viewpoint lacks ``pose``/``height``/``image_id``.
        """
        path = Path(path)
        name = path.name.replace("_connectivity.json", "")
        try:
            from havln_robot.jsonio import load_json_file

            data = load_json_file(path)
        except (FileNotFoundError, IsADirectoryError):
            from havln_robot.paths import input_file_problem

            raise SceneError(
                f"connectivity file {path}: {input_file_problem(path)}; pass --connectivity DIR holding <scan>_connectivity.json"
            ) from None
        except (OSError, ValueError) as exc:
            raise SceneError(f"connectivity file {path} is not readable JSON ({exc}); re-download it") from None
        if not isinstance(data, list):
            raise SceneError(f"connectivity file {path}: top level must be a list of viewpoints")
        vps: dict[str, Viewpoint] = {}
        ids: list[str | None] = []
        for i, v in enumerate(data):
            try:
                pose = v["pose"]
                if not v.get("included", True):
                    ids.append(None)
                    continue
                vid = str(v["image_id"])
                vps[vid] = Viewpoint(vid, float(pose[3]), float(pose[7]), float(pose[11]) - float(v["height"]))
                if not all(math.isfinite(c) for c in (vps[vid].x, vps[vid].y, vps[vid].z)):
                    raise ValueError("non-finite 'pose'/'height' (JSON NaN/Infinity)")
                ids.append(vid)
            except (KeyError, TypeError, IndexError, ValueError) as exc:
                raise SceneError(f"connectivity file {path}: viewpoint {i} lacks a valid 'pose'/'height'/'image_id' ({exc!r})") from None
        edges: list[tuple[str, str]] = []
        for i, v in enumerate(data):
            a = ids[i]
            if a is None:
                continue
            for j, ok in enumerate(v.get("unobstructed", [])):
                if ok and j > i and j < len(ids) and ids[j] is not None:
                    edges.append((a, ids[j]))  # type: ignore[arg-type]
        return cls(name, vps, edges, corridor_width, viewpoint_radius, wall_height)

    @classmethod
    def load(
        cls,
        scan: str,
        connectivity_dir: str | os.PathLike[str] | None = None,
        corridor_width: float = DEFAULT_CORRIDOR_WIDTH_M,
        cache_dir: str | os.PathLike[str] | None = None,
        viewpoint_radius: float = DEFAULT_VIEWPOINT_RADIUS_M,
        wall_height: float = DEFAULT_WALL_HEIGHT_M,
    ) -> Scene:
        """Load the scene of ``scan``, building and caching it on first use.

        Args:
            scan: Matterport3D scan id (e.g. ``"vyrNrziPKCB"``), or ``"builtin"``.
            connectivity_dir: folder of ``<scan>_connectivity.json`` (default ``data_dir()/connectivity``).
            corridor_width: corridor width along edges (m).
            cache_dir: cache folder (default ``~/.cache/havln_robot/scenes``; ``$HAVLN_CACHE`` overrides the root).
            viewpoint_radius: free-disc radius at viewpoints (m).
            wall_height: wall height for rendering (m).

        Raises:
            SceneError: connectivity file missing or malformed.
        """
        if scan == "builtin":
            return cls.builtin()
        if connectivity_dir is None:
            from havln_robot.paths import data_dir

            connectivity_dir = data_dir() / "connectivity"
        from havln_robot.paths import UnsafePathError, safe_component

        try:
            safe_component(scan, "scan")  # names <scan>_connectivity.json and the cache file
        except UnsafePathError as exc:
            raise SceneError(f"{exc}; a scan id names its connectivity and cache files") from None
        src = Path(connectivity_dir) / f"{scan}_connectivity.json"
        if not src.is_file():
            from havln_robot.paths import input_file_problem, input_folder_problem

            folder = input_folder_problem(connectivity_dir)
            why = f"--connectivity {connectivity_dir}: {folder}" if folder else f"connectivity file {src}: {input_file_problem(src)}"
            raise SceneError(f"scan {scan!r}: {why}; pass --connectivity DIR (the HA-VLN 'connectivity' folder)")
        key = _MEMO.get((str(src), corridor_width, viewpoint_radius, wall_height))
        if key is not None:
            return key
        st = src.stat()
        tag = f"{_CACHE_VERSION}|{st.st_size}|{st.st_mtime_ns}|{corridor_width}|{viewpoint_radius}|{wall_height}|{shapely.__version__}"
        digest = hashlib.sha1(tag.encode()).hexdigest()[:12]
        root = Path(cache_dir) if cache_dir is not None else _default_cache_dir()
        cache_file = root / f"{scan}_{digest}.pkl"
        scene = None
        if cache_file.is_file():
            try:
                with cache_file.open("rb") as fh:
                    scene = _CacheUnpickler(fh).load()
                if not isinstance(scene, Scene):
                    scene = None
            except Exception:  # noqa: BLE001 - a corrupt or foreign cache file is rebuilt (nothing in it runs)
                scene = None
        if scene is None:
            scene = cls.from_connectivity(src, corridor_width, viewpoint_radius, wall_height)
            try:
                with atomic_output(cache_file) as tmp, tmp.open("wb") as fh:  # a unique temporary name per writer
                    pickle.dump(scene, fh, protocol=pickle.HIGHEST_PROTOCOL)
            except OSError:
                pass  # caching is an optimisation only
        _MEMO[(str(src), corridor_width, viewpoint_radius, wall_height)] = scene
        if len(_MEMO) > 64:
            _MEMO.pop(next(iter(_MEMO)))
        return scene

    @classmethod
    def builtin(cls) -> Scene:
        """A small authored single-floor apartment (no external data).

        Layout (map frame, m): a living room around (0, 0), a hallway running +x to (6, 0), a kitchen
        north of the hallway end at (6, 4), a bedroom south at (6, -4) and a study at (10, 0).
        The matching episode is :func:`havln_robot.episodes.builtin_episode`. Built once per process.
        """
        memo = _MEMO.get(("builtin",))
        if memo is not None:
            return memo
        pts = {
            "living": (0.0, 0.0),
            "living_n": (0.0, 2.0),
            "hall_a": (2.5, 0.0),
            "hall_b": (4.5, 0.0),
            "junction": (6.0, 0.0),
            "kitchen_door": (6.0, 2.0),
            "kitchen": (6.0, 4.0),
            "kitchen_e": (8.0, 4.0),
            "bedroom_door": (6.0, -2.0),
            "bedroom": (6.0, -4.0),
            "study_door": (8.0, 0.0),
            "study": (10.0, 0.0),
        }
        vps = {k: Viewpoint(k, x, y, 0.0) for k, (x, y) in pts.items()}
        edges = [
            ("living", "living_n"),
            ("living", "hall_a"),
            ("hall_a", "hall_b"),
            ("hall_b", "junction"),
            ("junction", "kitchen_door"),
            ("kitchen_door", "kitchen"),
            ("kitchen", "kitchen_e"),
            ("junction", "bedroom_door"),
            ("bedroom_door", "bedroom"),
            ("junction", "study_door"),
            ("study_door", "study"),
        ]
        rooms = shapely.union_all(
            [
                shapely.box(-2.0, -1.8, 1.8, 3.2),  # living room
                shapely.box(4.6, 3.0, 9.0, 5.6),  # kitchen
                shapely.box(4.6, -5.6, 7.6, -3.0),  # bedroom
                shapely.box(9.0, -1.4, 11.6, 1.6),  # study
            ]
        )
        scene = cls("builtin", vps, edges, corridor_width=1.4, viewpoint_radius=0.9, extra_free={0: rooms})
        _MEMO[("builtin",)] = scene
        return scene

    # ------------------------------------------------------------------ queries
    def floor_index(self, z: float) -> int:
        """Index of the floor whose height is nearest to ``z`` (m). Height alone: on split levels a
        neighbouring floor can be nearer in z than the one under a point; :meth:`floor_at` asks
        which floor's free space holds the point."""
        return int(np.argmin(np.abs(self._floor_z - z)))

    def floor_at(self, x: float, y: float, z: float) -> int:
        """Index of the floor under map (x, y) (m) for a body at height ``z`` (m): the floor whose own
        free space holds the point (:meth:`support`); on a flight or off the free space, the floor
        nearest in height (:meth:`floor_index`)."""
        s = self.support(x, y, z)
        if s is not None and s.kind == "floor":
            return int(s.index)
        return self.floor_index(z)

    def support(
        self, x: float, y: float, z_hint: float, prefer: Support | None = None, heading: tuple[float, float] | None = None
    ) -> Support | None:
        """The surface under map (x, y) for a body at height ``z_hint``, or ``None`` (no ground: a wall).

        Candidates are ramps whose corridor contains the point and floors whose own free space
        contains it, with |ground z - z_hint| <= :data:`SUPPORT_TOL_M`. Which one is the ground
        (ramp corridors overlap at different heights on spiral, switchback and split
        stairs; see docs/sim.md, "Which flight"):

        * ``prefer`` a **floor**: the body steps onto a linked ramp within :data:`RAMP_ENTRY_M` of
          ``z_hint`` -- or, on the disc of the viewpoint the ramp leaves this floor from, at any
          height (steep flights) -- where it is nearer that ramp's axis than any same-floor edge of
          its floor (nearest axis first, then the ramp best aligned with ``heading``); otherwise the
          floor is kept while its own space contains the point;
        * ``prefer`` a **ramp** whose corridor still contains the point: kept, unless the point is
          :data:`AXIS_MARGIN_M` nearer the axis of a ramp meeting it at a landing, of a corridor of
          a floor at its ends (on that end's disc) or within :data:`FLIGHT_DZ_M`, or of a linked
          ramp within :data:`FLIGHT_DZ_M` that rises alike (:data:`FLIGHT_GRADIENT_DIFF`);
        * otherwise candidates linked to ``prefer`` (see :meth:`region`: near floors and their
          ramps) win over the others, and among those the one nearest in height wins.

        Args:
            x: map-frame x of the point (m).
            y: map-frame y of the point (m).
            z_hint: the body's current ground height (m).
            prefer: the surface the body stands on now (None: a fresh query, e.g. an episode start).
            heading: xy direction of the body's motion (any length; None: no preference).

        Returns:
            The :class:`Support` (kind, index, ground z in m), or None.
        """
        hx, hy = heading if heading is not None else (0.0, 0.0)
        linked = self._linked_floors(prefer) if prefer is not None else frozenset()
        cands, steep, kept = self._ramp_candidates(x, y, z_hint, prefer, linked)
        if prefer is not None and prefer.kind == "floor":
            entry = [
                c
                for c in cands + steep
                if c[0] and c[2].kind == "ramp" and (c[1] <= RAMP_ENTRY_M or self._at_foot(c[2].index, prefer.index, x, y))
            ]
            if entry:
                # stepping onto linked stairs at their height: the stairs are the ground now where the
                # body is nearer the flight's axis than any corridor axis of its floor (a corridor that
                # runs beside the top of a flight keeps the body on the floor); of several flights
                # leaving one landing (spiral stairs), the one whose axis is nearest, then the one it
                # moves along
                skel = self._skeleton_distance(prefer.index, x, y)
                ranked = sorted(
                    (self._axis_distance(c[2].index, x, y), -self._ramp_alignment(c[2].index, hx, hy), c[1], c[2]) for c in entry
                )
                if ranked[0][0] < skel:
                    return ranked[0][3]
            f = self.floors[prefer.index]
            if shapely.contains_xy(f.own, x, y):
                z = f.height_at(x, y)
                if abs(z - z_hint) <= SUPPORT_TOL_M:
                    return Support("floor", f.index, z)
        for f in self.floors:
            if abs(f.z - z_hint) > 1.0 + SUPPORT_TOL_M or not shapely.contains_xy(f.own, x, y):
                continue
            z = f.height_at(x, y)
            d = abs(z - z_hint)
            if d <= SUPPORT_TOL_M:
                cands.append((f.index in linked, d, Support("floor", f.index, z)))
        if kept is not None:
            return self._keep_or_cross(kept, cands, x, y)
        if not cands:
            return None
        if any(c[0] for c in cands):
            cands = [c for c in cands if c[0]]
        return min(cands, key=lambda c: c[1])[2]

    def _ramp_candidates(
        self, x: float, y: float, z_hint: float, prefer: Support | None, linked: frozenset
    ) -> tuple[list, list, Support | None]:
        """The ramps whose corridor holds map (x, y): (candidates within SUPPORT_TOL_M of ``z_hint`` as
        (linked to prefer, |dz| m, support); steep flights leaving ``prefer``'s floor beyond it; ``prefer``
        itself when it is a ramp holding the point, else None)."""
        cands: list[tuple[bool, float, Support]] = []
        steep: list[tuple[bool, float, Support]] = []
        kept: Support | None = None
        rb = self._ramp_bounds
        hits = np.flatnonzero((rb[:, 0] <= x) & (x <= rb[:, 2]) & (rb[:, 1] <= y) & (y <= rb[:, 3])) if len(rb) else ()
        for i in hits:
            r = self.ramps[int(i)]
            if shapely.contains_xy(r.polygon, x, y):
                z = r.z_at(x, y)
                d = abs(z - z_hint)
                if d > SUPPORT_TOL_M:
                    if prefer is not None and prefer.kind == "floor" and self._at_foot(int(i), prefer.index, x, y):
                        steep.append((True, d, Support("ramp", int(i), z)))
                    continue
                if prefer is not None and prefer.kind == "ramp" and prefer.index == int(i):
                    kept = Support("ramp", int(i), z)
                    continue
                cands.append((bool(linked.intersection(r.floors)), d, Support("ramp", int(i), z)))
        return cands, steep, kept

    def _keep_or_cross(self, kept: Support, cands: list[tuple[bool, float, Support]], x: float, y: float) -> Support:
        """A body on flight ``kept`` (whose footprint still holds it) keeps it, unless it has crossed onto
        another piece's footprint nearer that piece's axis by :data:`AXIS_MARGIN_M`: a flight meeting its
        own at a landing (switchback / spiral stairs), on that landing viewpoint's disc (beside the
        landing, a switchback's other flight runs a storey above or below: val_seen 3245's body rose
        1.19 m onto it 1.41 m from the landing), a corridor of the floor at either end of its
        flight on that end viewpoint's disc (turning off the top of a steep flight), or a linked flight or floor corridor within
        :data:`FLIGHT_DZ_M` of its flight's height there (a long graph edge over the flights it skips, a corridor
        leaving a landing beside a flight). Of those, the one whose axis is nearest is the ground.
        """
        adj = self._adjacent_ramps[kept.index]
        own_d = self._axis_distance(kept.index, x, y) - AXIS_MARGIN_M
        best, best_d = kept, own_d
        for is_linked, _dz, sup in cands:
            dz = abs(sup.z - kept.z)  # against the ground the body would have on its own flight here
            if sup.kind == "ramp":
                at_landing = sup.index in adj and self._on_landing(kept.index, sup.index, x, y)
                if not (at_landing or (is_linked and dz <= FLIGHT_DZ_M and self._alike(kept.index, sup.index))):
                    continue
                d = self._axis_distance(sup.index, x, y)
            else:
                if not ((is_linked and dz <= FLIGHT_DZ_M) or self._at_foot(kept.index, sup.index, x, y)):
                    continue
                d = self._skeleton_distance(sup.index, x, y)
            if d < best_d:
                best, best_d = sup, d
        return best

    def _on_landing(self, i: int, j: int, x: float, y: float) -> bool:
        """True when map (x, y) lies on the disc (:attr:`viewpoint_radius`) of a viewpoint where flights
        ``i`` and ``j`` meet (a landing they share)."""
        ri, rj = self.ramps[i], self.ramps[j]
        r2 = self.viewpoint_radius**2
        for v in {ri.vp_a, ri.vp_b} & {rj.vp_a, rj.vp_b}:
            p = self.viewpoints[v]
            if (x - p.x) ** 2 + (y - p.y) ** 2 <= r2:
                return True
        return False

    def _alike(self, i: int, j: int) -> bool:
        """True if ramps ``i`` and ``j`` rise alike: their ground gradients (dz per m of map xy, as
        vectors) differ by at most :data:`FLIGHT_GRADIENT_DIFF`."""
        gi, gj = self._gradient(i), self._gradient(j)
        return math.hypot(gi[0] - gj[0], gi[1] - gj[1]) <= FLIGHT_GRADIENT_DIFF

    def _gradient(self, i: int) -> tuple[float, float]:
        """Ground gradient of ramp ``i`` in map xy (dz/dx, dz/dy; dimensionless)."""
        r = self.ramps[i]
        dx, dy, dz = r.b[0] - r.a[0], r.b[1] - r.a[1], r.b[2] - r.a[2]
        ll = dx * dx + dy * dy
        return (0.0, 0.0) if ll < 1e-12 else (dz * dx / ll, dz * dy / ll)

    def _at_foot(self, i: int, k: int, x: float, y: float) -> bool:
        """True if ramp ``i`` leaves floor ``k`` at a viewpoint whose disc (``viewpoint_radius``) holds (x, y).

        That disc is flat ground in the model but stairs in the house: a body on it over the flight's
        footprint is on the flight, however steep (a flight rising 2.7 m per metre, gTV8FGcVJC9).
        """
        r = self.ramps[i]
        for fl, (ex, ey, _ez) in ((r.floor_a, r.a), (r.floor_b, r.b)):
            if fl == k and (x - ex) ** 2 + (y - ey) ** 2 <= self.viewpoint_radius**2:
                return True
        return False

    def _skeleton_distance(self, k: int, x: float, y: float) -> float:
        """Distance (m) in map xy from (x, y) to the nearest same-floor edge of floor ``k`` (inf when it has none)."""
        seg = self._skeleton[k]
        if len(seg) == 0:
            return math.inf
        a = seg[:, 0]
        d = seg[:, 1] - a
        ll = np.maximum((d * d).sum(axis=1), 1e-12)
        t = np.clip(((x - a[:, 0]) * d[:, 0] + (y - a[:, 1]) * d[:, 1]) / ll, 0.0, 1.0)
        return float(np.sqrt(((a[:, 0] + t * d[:, 0] - x) ** 2 + (a[:, 1] + t * d[:, 1] - y) ** 2).min()))

    def _axis_distance(self, i: int, x: float, y: float) -> float:
        """Distance (m) in map xy from (x, y) to the axis segment of ramp ``i`` (between its two viewpoints)."""
        r = self.ramps[i]
        ax, ay = r.a[0], r.a[1]
        dx, dy = r.b[0] - ax, r.b[1] - ay
        ll = dx * dx + dy * dy
        t = 0.0 if ll < 1e-12 else min(1.0, max(0.0, ((x - ax) * dx + (y - ay) * dy) / ll))
        return math.hypot(x - ax - t * dx, y - ay - t * dy)

    def _ramp_alignment(self, i: int, hx: float, hy: float) -> float:
        """|cos| of the angle between ramp ``i``'s axis and the xy direction (hx, hy), rounded to 0.1 (0 without a direction)."""
        r = self.ramps[i]
        ax, ay = r.b[0] - r.a[0], r.b[1] - r.a[1]
        n = math.hypot(ax, ay) * math.hypot(hx, hy)
        return 0.0 if n < 1e-12 else round(abs(ax * hx + ay * hy) / n, 1)

    def ground_z(self, x: float, y: float, z_hint: float) -> float:
        """Ground height (m) at map (x, y) on the surface nearest to ``z_hint`` (floors: :meth:`Floor.height_at`; ramps linear).

        Off any surface (a wall), returns the height of the floor nearest to ``z_hint``.
        """
        s = self.support(x, y, z_hint)
        return s.z if s is not None else float(self._floor_z[self.floor_index(z_hint)])

    def near_floors(self, k: int) -> frozenset[int]:
        """Floors whose nominal height is within :data:`NEAR_FLOOR_DZ_M` of floor ``k`` (split levels of one storey), ``k`` included."""
        near = self._near.get(k)
        if near is None:
            near = frozenset(j for j, f in enumerate(self.floors) if abs(f.z - self.floors[k].z) <= NEAR_FLOOR_DZ_M)
            self._near[k] = near
        return near

    def _linked_floors(self, support: Support) -> frozenset[int]:
        if support.kind == "floor":
            return self.near_floors(support.index)
        out: set[int] = set()
        for k in self.ramps[support.index].floors:
            out |= self.near_floors(k)
        return frozenset(out)

    def region(self, support: Support) -> BaseGeometry:
        """Free space a body standing on ``support`` may occupy (prepared shapely geometry, map xy).

        The union of :attr:`Floor.free` (own space + ramps) of the floors linked to ``support``:
        for a floor, itself and the floors within :data:`NEAR_FLOOR_DZ_M` in height (split levels
        of one storey); for a ramp, those of each floor it joins, plus the ramp. Heights are
        enforced separately by :meth:`support` (a body never stands where there is no ground).
        """
        key = (support.kind, support.index)
        g = self._ramp_free.get(key)
        if g is None:
            parts = [self.floors[k].free for k in sorted(self._linked_floors(support))]
            if support.kind == "ramp":
                r = self.ramps[support.index]
                parts.append(r.reach if r.reach is not None else r.polygon)
            g = parts[0] if len(parts) == 1 else shapely.union_all(parts)
            shapely.prepare(g)
            self._ramp_free[key] = g
        return g

    def eroded(self, support: Support, radius: float) -> BaseGeometry:
        """:meth:`region` shrunk by ``radius`` (m): where a disc body's centre may be (prepared, cached)."""
        key = (support.kind, support.index, round(float(radius), 4))
        g = self._eroded.get(key)
        if g is None:
            g = self.region(support).buffer(-float(radius), quad_segs=_QUAD_SEGS) if radius > 0 else self.region(support)
            shapely.prepare(g)
            self._eroded[key] = g
        return g

    def eroded_boundary(self, support: Support, radius: float) -> BaseGeometry:
        """Boundary of :meth:`eroded` (prepared, cached): where a disc body of ``radius`` touches a wall."""
        key = ("boundary:" + support.kind, support.index, round(float(radius), 4))
        g = self._eroded.get(key)
        if g is None:
            g = self.eroded(support, radius).boundary
            shapely.prepare(g)
            self._eroded[key] = g
        return g

    def slab(self, k: int) -> BaseGeometry:
        """Where floor ``k``'s slab is drawn (prepared shapely geometry, map xy; cached): its own
        space (:attr:`Floor.own`) with the stairwell openings cut out (:func:`stairwell_cut`, the
        renderer's and the Gazebo world's rule). The batch simulator's terrain looks through the
        openings as the camera does."""
        g = self._slabs.get(k)
        if g is None:
            fl = self.floors[k]
            g = stairwell_cut(fl.own, float(fl.z), self.ramps)
            shapely.prepare(g)
            self._slabs[k] = g
        return g

    def drawn_surfaces(self, x: float, y: float) -> tuple[tuple[float, int], ...]:
        """The ground surfaces drawn at map (x, y): (height in m, ramp index or -1), lowest first.

        The floor slabs as drawn (:meth:`slab`, flat at :attr:`Floor.z`; ramp index -1) and the
        stairs ramps (:meth:`Ramp.z_at`; -1 too where the point lies on the ramp's flat end, beyond
        its axis). They are drawn one-sided, facing up: a camera sees one only from above its plane
        (:meth:`ramp_planes_below`); the walking rule (:meth:`support`) may stand a body on a slab the
        renderer cuts open over a flight, or pick an overlapping surface the camera cannot see.
        A point on an outline belongs to the surface (a flight's end and the slab cut around it
        meet there: neither is missing on the seam).
        """
        H, R = self.drawn_surfaces_many(np.array([float(x)]), np.array([float(y)]))
        return tuple(sorted((float(h), int(r)) for h, r in zip(H[0], R[0], strict=True) if np.isfinite(h)))

    def drawn_surfaces_many(self, xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`drawn_surfaces` at N points at once (the batch simulator's terrain grid); the one
        implementation of the rule.

        Args:
            xs: (N,) map x, m (float64).
            ys: (N,) map y, m (float64).

        Returns:
            ((N, K) float64 absolute heights, m, -inf where surface column k is not drawn at the
            point; (N, K) int64 ramp index of each, -1 for a floor slab or a flight's flat end).
            Column k is one ramp or one floor (K = ramps drawn at one point at least + floors), not
            sorted by height; each point's finite entries are exactly :meth:`drawn_surfaces`' tuple
            (a point with a non-finite coordinate has none).
        """
        xs = np.asarray(xs, dtype=np.float64)
        ys = np.asarray(ys, dtype=np.float64)
        cols_h: list[np.ndarray] = []
        cols_r: list[np.ndarray] = []
        rb = self._ramp_bounds
        fin = np.isfinite(xs) & np.isfinite(ys)
        if len(rb) and fin.any():
            x0, x1, y0, y1 = xs[fin].min(), xs[fin].max(), ys[fin].min(), ys[fin].max()
            for i in np.flatnonzero((rb[:, 0] <= x1) & (x0 <= rb[:, 2]) & (rb[:, 1] <= y1) & (y0 <= rb[:, 3])):
                i = int(i)
                inb = (rb[i, 0] <= xs) & (xs <= rb[i, 2]) & (rb[i, 1] <= ys) & (ys <= rb[i, 3])
                hit = np.zeros(len(xs), dtype=bool)
                if inb.any():
                    hit[inb] = shapely.intersects_xy(self.ramps[i].polygon, xs[inb], ys[inb])
                if not hit.any():
                    continue
                r = self.ramps[i]
                (ax, ay, az), (bx, by, bz) = r.a, r.b
                dx, dy = bx - ax, by - ay
                ll = dx * dx + dy * dy
                # the height is Ramp.z_at's (clamped along the axis; flat for a degenerate axis); a
                # point strictly between the axis ends is on the sloped part
                with np.errstate(invalid="ignore"):  # a non-finite point: no surface (hit is False)
                    u = ((xs - ax) * dx + (ys - ay) * dy) / ll if ll >= 1e-12 else np.zeros(len(xs))
                    z = az + (0.0 if ll < 1e-12 else np.minimum(1.0, np.maximum(0.0, u))) * (bz - az)
                    sloped = (0.0 < u) & (u < 1.0) if ll > 1e-12 else np.zeros(len(xs), dtype=bool)
                cols_h.append(np.where(hit, z, -np.inf))
                cols_r.append(np.where(hit & sloped, i, -1).astype(np.int64))
        for f in self.floors:
            hit = shapely.intersects_xy(self.slab(f.index), xs, ys) if len(xs) else np.zeros(0, dtype=bool)
            cols_h.append(np.where(hit, float(f.z), -np.inf))
            cols_r.append(np.full(len(xs), -1, dtype=np.int64))
        if not cols_h:
            return np.full((len(xs), 0), -np.inf), np.full((len(xs), 0), -1, dtype=np.int64)
        return np.stack(cols_h, axis=1), np.stack(cols_r, axis=1)

    def ramp_planes_below(self, x: float, y: float, z: float) -> np.ndarray:
        """(R,) bool: for each ramp, whether the point (x, y, z) (map frame, m) lies above the plane
        of its sloped part (the axis's line extended, unclamped): where a camera sees the ramp's
        up-facing surface from."""
        if not self.ramps:
            return np.zeros(0, dtype=bool)
        ab = self.__dict__.get("_ramp_ab")
        if ab is None:  # per scene, not per frame (the batch simulator asks at the camera rate)
            A = np.array([r.a for r in self.ramps], dtype=np.float64)
            B = np.array([r.b for r in self.ramps], dtype=np.float64)
            d = B[:, :2] - A[:, :2]
            ab = self._ramp_ab = (A, B, d, np.maximum((d**2).sum(axis=1), 1e-12))
        A, B, d, ll = ab
        u = ((x - A[:, 0]) * d[:, 0] + (y - A[:, 1]) * d[:, 1]) / ll
        return z > A[:, 2] + u * (B[:, 2] - A[:, 2])

    def first_contact(self, support: Support, radius: float, x0: float, y0: float, x1: float, y1: float) -> float:
        """Fraction in [0, 1] of the straight move (x0, y0) → (x1, y1) a disc body can make before touching a wall.

        The body (radius m) stands on ``support``; walls are the boundary of :meth:`region`. Returns
        1.0 when the whole move is free; otherwise the fraction at first contact, backed off by 1 mm
        so the body never reaches or passes the wall. A body that starts already touching a wall may
        only move away from it (returns 1.0 when the end point is deeper in free space, else 0.0).
        """
        e = self.eroded(support, radius)
        end_in = bool(shapely.contains_xy(e, x1, y1))
        if not shapely.contains_xy(e, x0, y0):
            if end_in:
                return 1.0
            return 1.0 if shapely.distance(e, Point(x1, y1)) < shapely.distance(e, Point(x0, y0)) - 1e-9 else 0.0
        seg = LineString([(x0, y0), (x1, y1)])
        length = seg.length
        if length < 1e-12:
            return 1.0
        if end_in and e.contains(seg):
            return 1.0
        hit = seg.intersection(self.eroded_boundary(support, radius))
        if hit.is_empty:
            return 1.0 if end_in else 0.0
        d = min(float(shapely.line_locate_point(seg, Point(c))) for c in shapely.get_coordinates(hit))
        return max(0.0, (d - 1e-3) / length)

    def camera_ground_z(self, support: Support, body_z: float) -> float:
        """Height (m) of the ground the renderer draws under a body standing on ``support`` at
        ``body_z``: where its camera is placed (the one rule: :attr:`World.camera_pose`, the
        people benchmark). A flat-floor scene (:attr:`flat_floors`) draws each floor at its nominal
        :attr:`Floor.z` while the body stands on :meth:`Floor.height_at` (up to a few dm apart);
        stairs are drawn sloped and mesh scenes draw their own surfaces: there it is ``body_z``."""
        if support.kind == "floor" and self.flat_floors:
            return float(self.floors[support.index].z)
        return float(body_z)

    def free_disc(self, support: Support, radius: float, x: float, y: float, reach: float) -> float:
        """Radius (m, at most ``reach``) of a disc around map (x, y) where a disc body of ``radius`` (m)
        standing on the FLOOR ``support`` touches no wall and stays on that floor: every straight move
        inside it has :meth:`first_contact` 1.0, and :meth:`support` there, preferring ``support``,
        is that floor (at :meth:`Floor.height_at`, when within :data:`SUPPORT_TOL_M` of the body's
        height). A speed certificate for the batch world's per-tick moves, not a second rule: the
        disc lies inside :meth:`eroded` and the floor's own space, and clear of every ramp's
        bounding box (the only places :meth:`support` looks at other surfaces).

        Returns:
            The radius (m), or 0.0 on a ramp or where (x, y) is outside those sets.
        """
        if support.kind != "floor":
            return 0.0
        e = self.eroded(support, radius)
        f = self.floors[support.index]
        if not (shapely.contains_xy(e, x, y) and shapely.contains_xy(f.own, x, y)):
            return 0.0
        rb = self._ramp_bounds
        rho = float(reach)
        if len(rb):
            gx = np.maximum(np.maximum(rb[:, 0] - x, x - rb[:, 2]), 0.0)
            gy = np.maximum(np.maximum(rb[:, 1] - y, y - rb[:, 3]), 0.0)
            rho = min(rho, float(np.hypot(gx, gy).min()))
        if rho <= 0.0:
            return 0.0
        p = Point(x, y)
        key = ("own_boundary", support.index, 0.0)
        ob = self._eroded.get(key)
        if ob is None:
            ob = self._eroded[key] = f.own.boundary
            shapely.prepare(ob)
        rho = min(rho, float(shapely.distance(self.eroded_boundary(support, radius), p)), float(shapely.distance(ob, p)))
        return max(0.0, rho - 1e-6)

    def is_free(self, x: float, y: float, z: float, radius: float) -> bool:
        """True if a disc of ``radius`` (m) centred at map (x, y), standing near height ``z``, lies in free space."""
        s = self.support(x, y, z)
        if s is None:
            return False
        if radius <= 0:
            return True
        return bool(shapely.contains_xy(self.eroded(s, radius), x, y))

    def clearance(self, x: float, y: float, z: float) -> float:
        """Distance (m) from map (x, y) to the nearest wall of the region under it (0 when not on free space)."""
        s = self.support(x, y, z)
        if s is None:
            return 0.0
        g = self.region(s)
        return float(shapely.distance(g.boundary, Point(x, y)))

    def wall_segments(self, floor_index: int) -> np.ndarray:
        """Boundary segments of a floor's free space (:attr:`Floor.free`).

        Returns:
            (K, 2, 2) float64 array of segments ``[[x0, y0], [x1, y1]]`` in map xy (m); walls stand
            on the floor at :attr:`Floor.z` and are :attr:`wall_height` tall.

        Raises:
            IndexError: no such floor.
        """
        if not 0 <= floor_index < len(self.floors):
            raise IndexError(f"scene {self.name!r} has floors 0..{len(self.floors) - 1}, not {floor_index}")
        segs = self._walls.get(floor_index)
        if segs is None:
            out = []
            for ring in _rings(self.floors[floor_index].free):
                c = np.asarray(ring.coords, dtype=np.float64)[:, :2]
                if len(c) >= 2:
                    out.append(np.stack([c[:-1], c[1:]], axis=1))
            segs = np.concatenate(out, axis=0) if out else np.zeros((0, 2, 2))
            self._walls[floor_index] = segs
        return segs

    def bounds(self) -> tuple[float, float, float, float]:
        """(minx, miny, maxx, maxy) of all floors' free space (m)."""
        b = np.array([f.free.bounds for f in self.floors])
        return (float(b[:, 0].min()), float(b[:, 1].min()), float(b[:, 2].max()), float(b[:, 3].max()))

    def __repr__(self) -> str:
        return f"Scene({self.name!r}, floors={len(self.floors)}, ramps={len(self.ramps)}, viewpoints={len(self.viewpoints)})"


def _rings(geom: BaseGeometry):
    for poly in getattr(geom, "geoms", [geom]):
        if poly.is_empty or poly.geom_type != "Polygon":
            continue
        yield poly.exterior
        yield from poly.interiors


def _default_cache_dir() -> Path:
    """``$HAVLN_CACHE/scenes``, else ``scenes/`` in the per-user cache folder (:func:`havln_robot.paths.user_cache_root`)."""
    root = os.environ.get("HAVLN_CACHE")
    return (Path(root) if root else user_cache_root()) / "scenes"


#: In-process memo of loaded scenes (small LRU by insertion order).
_MEMO: dict[tuple, Scene] = {}
