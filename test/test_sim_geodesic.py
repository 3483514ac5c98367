"""Walkable NE (havln_robot.sim.geodesic) on small authored graphs: no external data needed.

Each case has a stop < 3 m from the goal in a straight line that the HA-VLN scorer (geodesic
distance) does not count as a success: a wall in between, the goal on another floor, a goal no
walkable path reaches.
"""

from __future__ import annotations

import math

import pytest

from havln_robot.actions import STOP
from havln_robot.episodes import Episode
from havln_robot.sim.geodesic import GoalDistance, walkable_distance
from havln_robot.sim.scene import Scene, Viewpoint
from havln_robot.sim.world import World


def _scene(name: str, pts: dict[str, tuple[float, float, float]], edges: list[tuple[str, str]]) -> Scene:
    return Scene(name, {k: Viewpoint(k, *p) for k, p in pts.items()}, edges)


def _episode(start, goal) -> Episode:
    return Episode("t", "synthetic", "go", ("go",), start, 0.0, goal, 3.0, (start, goal), (), (), math.dist(start, goal), "test")


def _stop_at_start(scene: Scene, start, goal):
    w = World(scene, _episode(start, goal), robot_radius=0.3)
    w.step(STOP)
    return w.metrics()


def test_wall_between_stop_and_goal():
    """A U of rooms: A and D are 2.8 m apart, separated by a wall (their discs do not touch)."""
    s = _scene("u", {"A": (0, 0, 0), "B": (0, 4, 0), "C": (2.8, 4, 0), "D": (2.8, 0, 0)}, [("A", "B"), ("B", "C"), ("C", "D")])
    w = walkable_distance(s, (0, 0, 0), (2.8, 0, 0))
    assert w.euclid == pytest.approx(2.8) and w.ne == pytest.approx(4 + 2.8 + 4) and not w.unreachable
    m = _stop_at_start(s, (0, 0, 0), (2.8, 0, 0))
    assert m.ne == pytest.approx(10.8) and m.ne_euclid == pytest.approx(2.8)
    assert (m.success, m.sr, m.spl, m.unreachable) == (False, 0, 0.0, False)
    # a point off the nodes: leg to the node whose disc holds it, then the graph
    assert walkable_distance(s, (0.8, 0, 0), (2.8, 0, 0)).ne == pytest.approx(0.8 + 10.8)
    # inside the corridor A-B too: the leg may go straight to B
    assert walkable_distance(s, (0.5, 0, 0), (2.8, 0, 0)).ne == pytest.approx(math.hypot(0.5, 4) + 6.8)
    # from a corridor: the leg to either end of its edge, whichever is shorter overall
    assert walkable_distance(s, (1.4, 4.3, 0), (2.8, 0, 0)).ne == pytest.approx(math.hypot(1.4, 0.3) + 4)


def test_same_room_is_the_straight_line():
    s = _scene("line", {"A": (0, 0, 0), "B": (2, 0, 0)}, [("A", "B")])
    w = walkable_distance(s, (0, 0, 0), (2, 0, 0))
    assert w.ne == pytest.approx(2.0) and w.euclid == pytest.approx(2.0)
    m = _stop_at_start(s, (0, 0, 0), (2, 0, 0))
    assert m.success and m.spl == pytest.approx(1.0)


def test_goal_on_another_floor_only_by_the_stairs():
    """Goal G 2.8 m above A; the stairs are B -> C, 3 m away: walk A-B, climb B-C, walk C-G."""
    pts = {"A": (0, 0, 0), "B": (3, 0, 0), "C": (6, 0, 2.8), "G": (0.5, 0, 2.8)}
    s = _scene("two_floors", pts, [("A", "B"), ("B", "C"), ("C", "G")])
    assert len(s.floors) == 2
    want = 3 + math.dist(pts["B"], pts["C"]) + 5.5
    w = walkable_distance(s, pts["A"], pts["G"])
    assert w.euclid < 3.0 and w.ne == pytest.approx(want)
    # standing right under the goal does not help: the upper floor's disc is at another height
    assert walkable_distance(s, (-0.5, 0, 0), pts["G"]).ne == pytest.approx(0.5 + want)
    m = _stop_at_start(s, pts["A"], pts["G"])
    assert not m.success and m.ne == pytest.approx(want)


def test_a_lift_edge_is_not_walkable():
    """An edge straight up (no horizontal run) is not stairs: the goal above is unreachable."""
    pts = {"A": (0, 0, 0), "B": (2, 0, 0), "L": (0, 0, 2.8), "G": (1, 0, 2.8)}
    s = _scene("lift", pts, [("A", "B"), ("A", "L"), ("L", "G")])
    w = walkable_distance(s, pts["A"], pts["G"])
    assert w.unreachable and w.ne == pytest.approx(w.euclid)


def test_unreachable_goal_is_finite_flagged_and_never_a_success():
    """The goal's room has no graph edge to the start's room."""
    pts = {"A": (0, 0, 0), "B": (-2, 0, 0), "G": (0, 2.5, 0), "H": (0, 5, 0)}
    s = _scene("cut", pts, [("A", "B"), ("G", "H")])
    w = walkable_distance(s, pts["A"], pts["G"])
    assert w.unreachable and w.ne == pytest.approx(2.5) and math.isfinite(w.ne)
    m = _stop_at_start(s, pts["A"], pts["G"])
    assert m.unreachable and not m.success and m.ne == pytest.approx(2.5) and math.isfinite(m.spl)
    d = m.as_dict()
    assert d["unreachable"] is True and all(math.isfinite(v) for v in d.values() if isinstance(v, float))


def test_off_graph_goal_joins_the_graph_by_its_leg():
    """A continuous-episode goal between viewpoints: reached through the disc it lies in."""
    s = _scene("off", {"A": (0, 0, 0), "B": (0, 4, 0), "C": (2.8, 4, 0), "D": (2.8, 0, 0)}, [("A", "B"), ("B", "C"), ("C", "D")])
    goal = (2.8, 0.6, 0)
    gd = GoalDistance(s, goal)
    assert gd.goal_node == ""
    assert gd.query(0, 0, 0).ne == pytest.approx(4 + 2.8 + 3.4)  # A-B-C, then C's corridor to the goal
    assert gd.query(2.8, 0.2, 0).ne == pytest.approx(0.4)  # same disc: the direct leg
    with pytest.raises(ValueError, match="not a finite point"):
        GoalDistance(s, (math.nan, 0, 0))


def test_builtin_scene_rooms_and_expert_world():
    """The builtin apartment: authored rooms beyond the viewpoint discs still reach the goal."""
    from havln_robot.episodes import builtin_episode

    s, ep = Scene.builtin(), builtin_episode()
    gd = GoalDistance(s, ep.goal_position)
    assert gd.goal_node == "kitchen"
    start = gd.query(*ep.start_position)
    assert start.ne == pytest.approx(ep.geodesic_distance) and start.ne > start.euclid
    corner = gd.query(-1.8, -1.6, 0.0)  # living-room corner, outside every disc and corridor
    assert not corner.unreachable and corner.ne > math.dist((-1.8, -1.6, 0.0), ep.goal_position)
    w = World(s, ep)
    assert w.distance_to_goal() == pytest.approx(ep.geodesic_distance)
    assert w.distance_to_goal_euclid() == pytest.approx(math.dist(ep.start_position, ep.goal_position))
