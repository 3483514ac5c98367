"""Stair coverage: paths over every stairs edge of a scan, walked by the expert (pure Python).

Why: HA-R2R / R2R paths cross only some of a scan's staircases, so a split's success rate can hide
stairs the simulator does not let a robot walk (the expert ran out of actions on spiral,
switchback and split stairs). This module builds, for one :class:`~havln_robot.sim.scene.Scene`,
a fixed set of navigation-graph paths that crosses **every stairs edge** (an edge the scene turns
into a ramp: its two viewpoints are on different floors, lift edges excluded) at least once, plus
random shortest paths between included viewpoints; `havln-robot bench stairs` (:func:`havln_robot.bench.stairs.walk`)
runs the privileged expert on each through agent_node's episode runner.

Paths (:func:`coverage_paths`, seeded, deterministic for a given connectivity file):

1. ``n_random`` shortest paths (3-D edge lengths, networkx Dijkstra) between two random included
   viewpoints of one connected part of the graph (at most :data:`MAX_RANDOM_VIEWPOINTS` viewpoints);
2. for each stairs edge (a, b) no path covers yet, in a random direction: a -> b, then on along
   uncovered stairs edges from the far end (up to :data:`MAX_CHAIN` edges: a staircase of several
   graph edges in one walk), with one more neighbour at each end, so the robot walks onto the
   flight from a landing and off it again, as a policy would.

Used by ``test/test_sim_stairs.py`` (every scan of the shared data) and ``havln-robot bench stairs``.
"""

from __future__ import annotations

import math
import random
from itertools import pairwise

import networkx as nx

from havln_robot.episodes import SUCCESS_RADIUS_M, Episode
from havln_robot.sim.scene import Scene

#: Horizontal length (m) below which a floor-changing edge is a lift, not stairs (as the scene builder).
LIFT_XY_M: float = 1e-3
#: Most viewpoints on a random shortest path (R2R paths have 4-7; longer ones can outrun the
#: 500-action budget with no fault of the stairs).
MAX_RANDOM_VIEWPOINTS: int = 8
#: Most stairs edges chained into one coverage path (a flight of several graph edges walked in one go).
MAX_CHAIN: int = 6


def _key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def graph(scene: Scene) -> nx.Graph:
    """The scene's walkable navigation graph: included viewpoints, ``unobstructed`` edges without lifts,
    weight = 3-D edge length (m)."""
    g = nx.Graph()
    vp = scene.viewpoints
    for a, nbrs in scene.neighbors.items():
        g.add_node(a)
        for b in nbrs:
            va, vb = vp[a], vp[b]
            if va.floor != vb.floor and math.hypot(vb.x - va.x, vb.y - va.y) < LIFT_XY_M:
                continue
            g.add_edge(a, b, weight=math.dist((va.x, va.y, va.z), (vb.x, vb.y, vb.z)))
    return g


def stairs_edges(scene: Scene) -> list[tuple[str, str]]:
    """Stairs edges of ``scene`` as sorted viewpoint-id pairs, one per :attr:`Scene.ramps` entry, in ramp order."""
    return [_key(r.vp_a, r.vp_b) for r in scene.ramps]


def coverage_paths(scene: Scene, seed: int = 0, n_random: int = 2) -> list[tuple[str, tuple[str, ...]]]:
    """Paths that cross every stairs edge of ``scene`` at least once, plus random shortest paths.

    Args:
        scene: the scan's scene.
        seed: RNG seed (same seed and graph -> same paths).
        n_random: random shortest paths to add first (>= 0).

    Returns:
        ``[(kind, path)]``: kind "random" or "stairs"; path = viewpoint ids (>= 2).
    """
    rng = random.Random(f"{scene.name}:{seed}")
    g = graph(scene)
    stairs = stairs_edges(scene)
    todo = set(stairs)
    out: list[tuple[str, tuple[str, ...]]] = []

    def cover(p: tuple[str, ...]) -> None:
        for a, b in pairwise(p):
            todo.discard(_key(a, b))

    parts = [sorted(c) for c in nx.connected_components(g) if len(c) >= 2]
    sizes = [len(c) for c in parts]
    for _ in range(n_random if parts else 0):
        for _try in range(50):  # R2R-like lengths: the 500-action budget is for paths of a few rooms
            part = rng.choices(parts, weights=sizes)[0]
            s, t = rng.sample(part, 2)
            p = tuple(nx.dijkstra_path(g, s, t, weight="weight"))
            if len(p) <= MAX_RANDOM_VIEWPOINTS:
                break
        out.append(("random", p))
        cover(p)
    for a, b in stairs:
        if (a, b) not in todo:
            continue
        if rng.random() < 0.5:
            a, b = b, a
        p = [a, b]
        todo.discard((a, b) if a < b else (b, a))
        while len(p) < MAX_CHAIN + 1:  # follow the staircase on: more uncovered stairs edges from the far end
            nxt = sorted(n for n in g[p[-1]] if _key(p[-1], n) in todo and n not in p)
            if not nxt:
                break
            n = rng.choice(nxt)
            todo.discard(_key(p[-1], n))
            p.append(n)
        before = sorted(n for n in g[p[0]] if n not in p)
        after = sorted(n for n in g[p[-1]] if n not in p)
        if before:
            p.insert(0, rng.choice(before))
        if after:
            last = rng.choice(after)
            if last != p[0]:
                p.append(last)
        out.append(("stairs", tuple(p)))
        cover(tuple(p))
    return out


def path_episode(scene: Scene, path: tuple[str, ...], episode_id: str, yaw: float) -> Episode:
    """A discrete episode along ``path`` (viewpoint ids of ``scene``) starting with REP 103 ``yaw`` (rad)."""
    vp = scene.viewpoints
    pts = tuple((vp[v].x, vp[v].y, vp[v].z) for v in path)
    length = sum(math.dist(p, q) for p, q in pairwise(pts))
    return Episode(
        episode_id, scene.name, "", ("",), pts[0], yaw, pts[-1], SUCCESS_RADIUS_M, pts, tuple(path), (), length, "stairs-coverage"
    )
