"""Walkable (geodesic) distance to the goal: the NE of the HA-VLN scorer, in this project's scenes.

Why: HA-VLN-CE scores an episode with Habitat's ``distance_to_goal`` (VLN-CE ``DistanceToGoal``
measure): the **geodesic** distance over the scene's navmesh from the agent to the goal, so a stop
3 m away through a wall or one floor below is not a success there. A straight-line NE would count
it as one.

Definition (HA-VLN's geodesic distance; the navmesh is replaced by this project's scene model,
:mod:`havln_robot.sim.scene`). For a ground point ``p`` (map frame, m):

    NE(p) = min over graph nodes n reachable from p by a collision-free straight leg of
            |p - n| + d_graph(n, goal)

* **graph**: the Matterport3D navigation graph of the scene (:attr:`Scene.neighbors`, the
  ``unobstructed`` edges of ``connectivity/<scan>_connectivity.json``), nodes at viewpoint ground
  points, edge weight = 3-D length (m). Floors are joined only by the graph's stairs edges; an edge
  between floors with horizontal length < 1 mm (a lift) is dropped, as the scene builds no ramp for it;
* **d_graph(n, goal)**: shortest-path length (networkx Dijkstra, once per goal). A goal on a
  viewpoint (every discrete HA-R2R/R2R episode) is that node; any other goal is joined to the nodes
  it reaches by a leg (rule below), or else to the nearest viewpoint of its floor, with the leg's
  3-D length;
* **collision-free leg** p -> n: the scene's free space is the union of viewpoint discs
  (``viewpoint_radius``) and edge corridors (``corridor_width``; ramps on stairs). Those pieces
  overlap across real walls the graph does not cross (discs of two rooms' viewpoints on either side
  of a wall), so a leg counts as collision-free when p lies in a piece the graph certifies for n:
  **n's own disc, or the corridor / stairs ramp of an edge of n**, at that piece's height
  (|ground z of p - piece z| <= :data:`LEG_DZ_M`). Each piece is convex and contains n, so the
  straight leg stays inside it -- inside the scene's free space, clear of its walls. Only where p
  lies in no such piece (the authored rooms of the builtin scene) a leg is any straight segment
  inside the free space of p's floor (:attr:`Floor.own`, shapely) to a node of that floor;
* an off-graph goal in the same piece as p (or, on the fallback, seen from p) also offers the
  direct leg ``|p - goal|``.

No leg reaches a node that leads to the goal (p walled in; the goal's part of the graph cut off):
NE is the straight-line distance, ``unreachable`` is True and the episode is not a success
(:func:`havln_robot.sim.metrics.episode_metrics`) -- a finite figure plus a flag, never inf/NaN.

Cost: :class:`GoalDistance` runs Dijkstra once per episode (milliseconds); a query is a few numpy
vector operations over the nodes and edges (no geometry, except on the fallback), cheap enough for
every simulator step. A scene's graph and arrays are built once per scene object.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
import shapely

from havln_robot.sim.scene import Scene

#: Max |ground z of p - height of a disc/corridor/ramp at p| (m) for p to stand in that piece.
#: Above floor-blend noise (a few dm), below the ~0.7 m between stacked flights of switchback stairs.
LEG_DZ_M: float = 0.5
#: A goal this close (m, 3-D) to a viewpoint is that viewpoint.
NODE_SNAP_M: float = 0.01
#: Virtual node standing for an off-graph goal in the Dijkstra graph.
_GOAL = "__goal__"


@dataclass(frozen=True)
class Walkable:
    """Distance from a point to the goal.

    Attributes:
        ne: walkable distance (m) -- the scorer's NE; the straight-line distance when unreachable.
        euclid: straight-line 3-D distance (m, map frame).
        unreachable: no collision-free leg joins the point to a node that leads to the goal.
        via: id of the first graph node of the walkable path ("" for a direct leg or when unreachable).
    """

    ne: float
    euclid: float
    unreachable: bool
    via: str = ""


class _SceneGraph:
    """Per-scene arrays: networkx graph, node ground points and floors, walkable edges (built once)."""

    def __init__(self, scene: Scene) -> None:
        import networkx as nx

        vps = scene.viewpoints
        self.ids = list(vps)
        self.index = {v: i for i, v in enumerate(self.ids)}
        self.xyz = np.array([[vps[v].x, vps[v].y, vps[v].z] for v in self.ids], dtype=np.float64).reshape(-1, 3)
        self.floors = np.array([vps[v].floor for v in self.ids], dtype=np.int64)
        self.graph = nx.Graph()
        self.graph.add_nodes_from(self.ids)
        ea, eb, stairs = [], [], []
        for a, nbrs in scene.neighbors.items():
            va = vps[a]
            for b in nbrs:
                vb = vps[b]
                if a >= b:
                    continue
                cross = va.floor != vb.floor
                if cross and math.hypot(vb.x - va.x, vb.y - va.y) < 1e-3:
                    continue  # lift: not walkable
                self.graph.add_edge(a, b, weight=math.dist((va.x, va.y, va.z), (vb.x, vb.y, vb.z)))
                ea.append(self.index[a])
                eb.append(self.index[b])
                stairs.append(cross)
        self.ea = np.array(ea, dtype=np.int64)
        self.eb = np.array(eb, dtype=np.int64)
        self.stairs = np.array(stairs, dtype=bool)
        self.disc_r = float(scene.viewpoint_radius)
        self.half_w = 0.5 * float(scene.corridor_width)
        self._edge_arrays()

    def _edge_arrays(self) -> None:
        n = self.xyz
        a, b = n[self.ea], n[self.eb]
        self._a = a
        self._ab = b - a
        self._inv_ll = 1.0 / np.maximum(self._ab[:, 0] ** 2 + self._ab[:, 1] ** 2, 1e-12)
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        h = self.half_w
        self._bx0, self._by0 = np.ascontiguousarray(lo[:, 0] - h), np.ascontiguousarray(lo[:, 1] - h)
        self._bx1, self._by1 = np.ascontiguousarray(hi[:, 0] + h), np.ascontiguousarray(hi[:, 1] + h)
        self._nx, self._ny, self._nz = (np.ascontiguousarray(n[:, k]) for k in range(3))

    def pieces_at(self, x: float, y: float, z: float) -> tuple[np.ndarray, np.ndarray]:
        """(node indices whose disc holds (x, y, z), edge indices whose corridor/ramp holds it), heights checked."""
        dx, dy = self._nx - x, self._ny - y
        discs = np.flatnonzero((dx * dx + dy * dy <= self.disc_r**2) & (np.abs(self._nz - z) <= LEG_DZ_M))
        e = np.flatnonzero((self._bx0 <= x) & (x <= self._bx1) & (self._by0 <= y) & (y <= self._by1))
        if len(e) == 0:
            return discs, e
        a, ab = self._a[e], self._ab[e]
        t = ((x - a[:, 0]) * ab[:, 0] + (y - a[:, 1]) * ab[:, 1]) * self._inv_ll[e]
        tc = np.minimum(np.maximum(t, 0.0), 1.0)
        inside = (a[:, 0] + tc * ab[:, 0] - x) ** 2 + (a[:, 1] + tc * ab[:, 1] - y) ** 2 <= self.half_w**2
        inside &= ~self.stairs[e] | ((t >= 0.0) & (t <= 1.0))  # ramps have flat caps
        inside &= np.abs(a[:, 2] + tc * ab[:, 2] - z) <= LEG_DZ_M
        return discs, e[inside]

    def leg_nodes(self, x: float, y: float, z: float) -> tuple[np.ndarray, bool]:
        """Nodes reachable from (x, y, z) by a certified leg; second item: (x, y, z) lies in some piece."""
        discs, edges = self.pieces_at(x, y, z)
        nodes = np.unique(np.concatenate([discs, self.ea[edges], self.eb[edges]]))
        return nodes, bool(len(discs) or len(edges))


_GRAPHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def scene_graph(scene: Scene) -> _SceneGraph:
    """The scene's navigation graph and piece arrays (built once per scene object; see the module docstring)."""
    g = _GRAPHS.get(scene)
    if g is None:
        g = _SceneGraph(scene)
        _GRAPHS[scene] = g
    return g


def _segments_free(space, x: float, y: float, ex: np.ndarray, ey: np.ndarray) -> np.ndarray:
    """Boolean per end point (ex, ey): the xy segment from (x, y) lies in ``space`` (walls: its boundary)."""
    coords = np.empty((len(ex), 2, 2))
    coords[:, 0, 0], coords[:, 0, 1] = x, y
    coords[:, 1, 0], coords[:, 1, 1] = ex, ey
    short = np.hypot(ex - x, ey - y) < 1e-6
    coords[short, 1, 0] += 1e-4  # a zero-length segment is not a valid line: test a 0.1 mm stub
    return np.asarray(shapely.covers(space, shapely.linestrings(coords)), dtype=bool)


class GoalDistance:
    """Walkable distance to one goal in one scene (definition: module docstring).

    Args:
        scene: the episode's :class:`Scene`.
        goal: goal ground point (x, y, z), map frame, m.

    Raises:
        ValueError: a goal coordinate is not finite.
    """

    def __init__(self, scene: Scene, goal) -> None:
        import networkx as nx

        gx, gy, gz = (float(c) for c in goal)
        if not all(math.isfinite(c) for c in (gx, gy, gz)):
            raise ValueError(f"goal {tuple(goal)!r} is not a finite point")
        self.scene = scene
        self.goal = (gx, gy, gz)
        self.sg = sg = scene_graph(scene)
        dg = np.linalg.norm(sg.xyz - np.array(self.goal), axis=1)
        k = int(np.argmin(dg))
        #: The viewpoint the goal is on ("" for an off-graph goal).
        self.goal_node = sg.ids[k] if dg[k] < NODE_SNAP_M else ""
        self._goal_discs: set[int] = set()
        self._goal_edges: set[int] = set()
        if self.goal_node:
            dist = nx.single_source_dijkstra_path_length(sg.graph, self.goal_node, weight="weight")
        else:
            discs, edges = sg.pieces_at(gx, gy, gz)
            self._goal_discs, self._goal_edges = set(discs.tolist()), set(edges.tolist())
            legs, _in_piece = sg.leg_nodes(gx, gy, gz)
            if len(legs) == 0:
                legs = self._fallback_nodes(gx, gy, gz)
            if len(legs) == 0:
                k = scene.floor_index(gz)
                same = np.flatnonzero(sg.floors == k)
                legs = same[[int(np.argmin(dg[same]))]] if len(same) else legs
            g = sg.graph.copy()
            g.add_weighted_edges_from((_GOAL, sg.ids[i], float(dg[i])) for i in legs)
            dist = nx.single_source_dijkstra_path_length(g, _GOAL, weight="weight") if _GOAL in g else {}
        #: d_graph(n, goal) per node (m); inf where the goal cannot be reached from n.
        self.d_graph = np.array([dist.get(v, math.inf) for v in sg.ids], dtype=np.float64)
        self._last: tuple[tuple[float, float, float], Walkable] | None = None

    def _fallback_nodes(self, x: float, y: float, z: float) -> np.ndarray:
        """Nodes of the floor under (x, y, z) seen by a straight segment inside that floor's own free space."""
        s = self.scene.support(x, y, z)
        if s is None or s.kind != "floor":
            return np.zeros(0, dtype=np.int64)
        idx = np.flatnonzero(self.sg.floors == s.index)
        free = _segments_free(self.scene.floors[s.index].own, x, y, self.sg.xyz[idx, 0], self.sg.xyz[idx, 1])
        return idx[free]

    def query(self, x: float, y: float, z: float) -> Walkable:
        """Walkable distance from the ground point (x, y, z) (map frame, m; z = ground height) to the goal.

        Returns:
            :class:`Walkable`; finite for finite input (the last query is cached).
        """
        p = (float(x), float(y), float(z))
        if self._last is not None and self._last[0] == p:
            return self._last[1]
        euclid = math.dist(p, self.goal)
        sg = self.sg
        discs, edges = sg.pieces_at(*p)
        nodes = np.concatenate([discs, sg.ea[edges], sg.eb[edges]])
        direct = not self.goal_node and bool(self._goal_discs.intersection(discs.tolist()) or self._goal_edges.intersection(edges.tolist()))
        if not len(discs) and not len(edges):
            nodes = self._fallback_nodes(*p)
            if not self.goal_node:
                s = self.scene.support(*p)
                direct = (
                    s is not None
                    and s.kind == "floor"
                    and bool(
                        _segments_free(self.scene.floors[s.index].own, p[0], p[1], np.array([self.goal[0]]), np.array([self.goal[1]]))[0]
                    )
                )
        out = Walkable(euclid, euclid, True)
        if len(nodes):
            q = sg.xyz[nodes]
            cost = np.sqrt((q[:, 0] - p[0]) ** 2 + (q[:, 1] - p[1]) ** 2 + (q[:, 2] - p[2]) ** 2) + self.d_graph[nodes]
            j = int(np.argmin(cost))
            if math.isfinite(cost[j]):
                out = Walkable(float(cost[j]), euclid, False, sg.ids[int(nodes[j])])
        if direct and euclid <= out.ne:
            out = Walkable(euclid, euclid, False, "")
        self._last = (p, out)
        return out


def walkable_distance(scene: Scene, start, goal) -> Walkable:
    """One-off :class:`Walkable` from ``start`` to ``goal`` (map-frame ground points, m) in ``scene``.

    For many queries to one goal build a :class:`GoalDistance` once (as :class:`~havln_robot.sim.world.World` does).
    """
    return GoalDistance(scene, goal).query(*start)
