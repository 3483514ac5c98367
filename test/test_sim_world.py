"""World: the contact model (continuous moves, collisions that stop the body and count once), discrete steps through the closed loop, metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import shapely

from havln_robot.actions import FORWARD_STEP_M, TURN_ANGLE_RAD, ActionError
from havln_robot.episodes import Episode, HumanSpec, builtin_episode, load_episodes
from havln_robot.sim.humans import HUMAN_RADIUS_M, Crowd, SimHuman
from havln_robot.sim.scene import Scene
from havln_robot.sim.world import World

R = 0.35


def _episode(start=(3.5, 0.0, 0.0), yaw=0.0, goal=(6.0, 4.0, 0.0), humans=()):
    return Episode("t1", "builtin", "go", ("go",), start, yaw, goal, 3.0, (start, goal), (), tuple(humans), 8.0, "test")


def _inside(scene, w):
    x, y, z, _ = w.pose
    return scene.is_free(x, y, z, w.robot_radius - 1e-6)


def _forward(w, dist, piece=0.05):
    """Drive the contact model straight ahead by ``dist`` m in ``piece`` m moves (0.1 s each); the last contact."""
    c = None
    for _ in range(round(abs(dist) / piece)):
        c = w.move(math.copysign(piece, dist), 0.0, 0.1) or c
    return c


def test_walls_stop_the_body_and_count_once():
    scene = Scene.builtin()
    w = World(scene, _episode(yaw=math.pi / 2), Crowd([]), robot_radius=R)
    for _ in range(8):
        c = _forward(w, 0.25)
        assert _inside(scene, w)
    x, y, _, _ = w.pose
    assert y == pytest.approx(0.7 - R - 0.001, abs=1e-4)  # hallway half-width 0.7 m, 1 mm back-off
    assert c is not None and c.kind == "static" and not c.new
    assert w.collisions == {"human": 0, "static": 1}
    # back off and bump again: a second contact
    _forward(w, -0.25)
    _forward(w, 0.5)
    assert w.collisions["static"] == 2


def test_continuous_move_never_passes_a_wall():
    scene = Scene.builtin()
    w = World(scene, _episode(yaw=math.pi / 2 + 0.3), Crowd([]), robot_radius=R)
    boundary = scene.region(w._support).boundary
    for _ in range(300):
        c = w.move(0.02, 0.0, 0.02)
        x, y, _, _ = w.pose
        assert shapely.distance(boundary, shapely.Point(x, y)) >= R - 1e-6
    assert c is not None and c.kind == "static"
    assert w.t == pytest.approx(6.0) and w.collisions["static"] == 1


def test_person_blocks_the_robot_at_touching_distance_and_counts_once():
    scene = Scene.builtin()
    person = SimHuman(0, "standing", (5.0, 0.0, 0.0), (5.0, 0.0, 0.0))
    w = World(scene, _episode(start=(2.5, 0.0, 0.0)), Crowd([person]), robot_radius=R)
    for _ in range(15):
        c = _forward(w, 0.25)
        d = math.dist(w.pose[:2], (5.0, 0.0))
        assert d >= R + HUMAN_RADIUS_M - 1e-6
    assert d == pytest.approx(R + HUMAN_RADIUS_M, abs=2e-3)
    assert c is not None and c.kind == "human" and c.human_id == 0
    assert w.collisions == {"human": 1, "static": 0}
    hid, dist = w.nearest_human()
    assert hid == 0 and dist == pytest.approx(d)
    # leave and come back: a new contact
    _forward(w, -0.25)
    _forward(w, 0.25)  # back where it stopped (1e-4 m short of touching): no contact
    assert w.collisions["human"] == 1
    _forward(w, 0.25)
    assert w.collisions["human"] == 2


def test_a_person_walking_through_the_robot_counts_once_per_pass():
    scene = Scene.builtin()
    walker = SimHuman(3, "walking", (1.0, 0.0, 0.0), (5.0, 0.0, 0.0), phase=0.0)
    w = World(scene, _episode(start=(3.0, 0.0, 0.0)), Crowd([walker]), robot_radius=R, action_dt=0.5)
    for _ in range(24):  # 12 s = a whole cycle: the walker goes from x=1 to x=5 through the robot and back
        w.move(0.0, 0.0, 0.5)
    assert w.collisions["human"] == 2  # passes twice in 12 s (there and back)
    assert w.pose[:2] == pytest.approx((3.0, 0.0))  # the robot is never pushed


def test_discrete_actions_run_motion_nodes_executor_and_end_the_episode():
    """World.step is the closed loop: the executor's result, its step sizes within its tolerances
    (plus the noisy base's odometry error), time = the action's real duration, the pitch limit."""
    from havln_robot.motion.executor import MotionConfig
    from havln_robot.records import ActionResult

    scene = Scene.builtin()
    w = World(scene, _episode(start=(2.5, 0.0, 0.0)), Crowd([]), robot_radius=R)
    r = w.step("MOVE_FORWARD")
    assert isinstance(r.result, ActionResult) and r.result.outcome == "ok"
    assert r.moved_m == pytest.approx(FORWARD_STEP_M, abs=0.02)
    assert w.t > 0.5 + MotionConfig().min_duration("MOVE_FORWARD")  # 0.5 s settle + the trapezoid
    r = w.step("TURN_LEFT")
    assert r.rotated_rad == pytest.approx(TURN_ANGLE_RAD, abs=math.radians(1.0))
    w.step("LOOK_UP")
    w.step("LOOK_UP")
    r = w.step("LOOK_UP")  # +90 deg is past the 60 deg limit: unsupported, pitch kept
    assert r.result.outcome == "unsupported" and w.camera_pitch == pytest.approx(math.radians(60))
    with pytest.raises(ActionError):
        w.step("JUMP")
    r = w.step("STOP")
    assert r.done and r.reason == "stop" and w.stopped
    assert w.step("MOVE_FORWARD").done and len(w.actions) == 6
    m = w.metrics()
    assert m.steps == 6 and m.path_length == pytest.approx(0.25, abs=0.03) and m.stopped
    # budget
    w2 = World(scene, _episode(), Crowd([]), robot_radius=R, max_actions=4)
    for _ in range(3):
        assert not w2.step("TURN_LEFT").done
    r = w2.step("TURN_LEFT")
    assert r.done and r.reason == "budget" and not w2.stopped and not w2.metrics().success


def test_metrics_of_a_world(havln_data):
    ep = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", limit=1)[0]
    scene = Scene.load(ep.scan, havln_data / "connectivity")
    w = World(scene, ep, Crowd([]), baseline=0)
    w.step("STOP")
    m = w.metrics()
    assert m.ne_euclid == pytest.approx(math.dist(ep.start_position, ep.goal_position), abs=1e-6)
    # NE is walkable: at the start it is the graph distance, at most the reference path's length
    assert m.ne_euclid - 1e-6 <= m.ne <= ep.geodesic_distance + 0.01 and not m.unreachable
    assert m.success == (m.ne < 3.0) and m.spl == (1.0 if m.success else 0.0)


def test_stairs_change_height(havln_data):
    """The contact model climbs stairs gradually (motion_node's executor does not: see test_closed_loop)."""
    eps = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json")
    ep = next(e for e in eps if e.reference_path[-1][2] - e.reference_path[0][2] > 2.0)
    scene = Scene.load(ep.scan, havln_data / "connectivity")
    w = World(scene, ep, Crowd([]))
    zs = [w.pose[2]]
    for wx, wy, _ in ep.reference_path[1:]:
        x, y, _, yaw = w.pose
        w.move(0.0, math.atan2(wy - y, wx - x) - yaw, 0.0)
        d = math.hypot(wx - x, wy - y)
        for _ in range(math.ceil(d / 0.05)):
            w.move(min(0.05, math.hypot(wx - w.pose[0], wy - w.pose[1])), 0.0, 0.05)
            zs.append(w.pose[2])
    assert zs[-1] == pytest.approx(ep.goal_position[2], abs=0.3)
    # climbing is gradual: no 5 cm move changes the height by more than a stair riser
    assert max(abs(b - a) for a, b in zip(zs[:-1], zs[1:], strict=True)) < 0.3


def test_builtin_world_starts_with_people_off_the_path():
    ep = builtin_episode()
    w = World(Scene.builtin(), ep, seed=0)
    assert len(w.crowd) == 2 and w.nearest_human()[1] > 1.0
    assert HumanSpec  # re-exported type used by episodes


def test_random_walks_never_overlap_a_wall(havln_data):
    """Property on real scenes (incl. stairs): after every action the body (disc) lies in the free
    space of the surface it stands on, up to 1 cm of polygon approximation."""

    eps = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json")
    stairs = [e for e in eps if max(p[2] for p in e.reference_path) - min(p[2] for p in e.reference_path) > 1.0][:4]
    rng = np.random.default_rng(7)
    steps = blocked = 0
    for ep in eps[::40] + stairs:
        scene = Scene.load(ep.scan, havln_data / "connectivity")
        w = World(scene, ep, seed=0, max_actions=250)
        for _ in range(250):  # the contact model alone (no executor refusing moves): 0.25 m or 15 deg moves
            a = str(rng.choice(["MOVE_FORWARD", "TURN_LEFT", "TURN_RIGHT"], p=[0.7, 0.15, 0.15]))
            c = w.move(0.25 if a == "MOVE_FORWARD" else 0.0, {"TURN_LEFT": 0.2618, "TURN_RIGHT": -0.2618}.get(a, 0.0), 0.5)
            x, y, _, _ = w.pose
            region = scene.region(w._support)
            assert shapely.contains_xy(region, x, y), (ep.episode_id, steps)
            assert shapely.distance(region.boundary, shapely.Point(x, y)) > w.robot_radius - 0.01, (ep.episode_id, steps)
            steps += 1
            blocked += c is not None and c.kind == "static"
    assert steps > 2000 and blocked > 50  # the walks did hit walls


def test_human_contact_fraction_is_where_the_swept_disc_first_touches_a_person():
    """The contact fraction against a brute-force sweep of the robot's disc along the move: the
    first of 20,000 samples closer than the two radii to a person on the robot's floor (people on
    another floor never count); the person and the start distance returned are that person's."""

    rng = np.random.default_rng(7)
    scene = Scene.builtin()
    touched = 0
    for trial in range(300):
        m = int(rng.integers(1, 7))
        people = [
            SimHuman(k, "standing", p, p, radius=float(rng.uniform(0.15, 0.35)))
            for k, p in enumerate(
                (float(rng.uniform(2.0, 5.0)), float(rng.uniform(-1.5, 1.5)), float(rng.choice([0.0, 0.0, 3.0]))) for _ in range(m)
            )
        ]
        w = World(scene, _episode(start=(3.5, 0.0, 0.0)), Crowd(people))
        p = w.crowd.positions(w.t)
        x0, y0 = float(rng.uniform(2.5, 4.5)), float(rng.uniform(-1.0, 1.0))
        dx, dy = float(rng.uniform(-0.6, 0.6)), float(rng.uniform(-0.6, 0.6))
        s, hid, dist = w._human_fraction(x0, y0, dx, dy)
        u = np.linspace(0.0, 1.0, 20001)
        same = np.abs(p[:, 2] - w._z) < 1.0
        d = np.hypot(x0 + u[:, None] * dx - p[None, :, 0], y0 + u[:, None] * dy - p[None, :, 1])
        rr = w.crowd.radii + w.robot_radius
        inside = (d < rr[None, :]) & same[None, :]
        start_in = inside[0]
        # a person already touched blocks only a move towards them
        leaving = start_in & (d[1] > d[0])
        hit = inside & ~leaving[None, :]
        if not hit.any():
            assert (s, hid, dist) == (1.0, None, math.inf), trial
            continue
        first = int(np.argmax(hit.any(axis=1)))
        k = int(np.argmax(hit[first]))
        # the fraction backs off 0.1 mm from the touch; the samples are 1/20,000 of the move apart
        assert u[first] - 1e-4 / math.hypot(dx, dy) - 1e-4 <= s <= u[first] + 1e-9, trial
        assert hid == w.crowd.ids[k] and dist == pytest.approx(float(d[0, k]), abs=1e-9), trial
        touched += 1
    assert touched >= 30  # the draws do reach people


def test_free_disc_shortcut_gives_the_same_walk_as_the_full_queries(havln_data, monkeypatch):
    """World._translate skips first_contact / support inside Scene.free_disc: the expert's closed-loop
    walk (every true pose, contacts, path length) is bit-identical with the shortcut switched off."""
    from havln_robot.eval import run_episode
    from havln_robot.sim.mesh_scene import load_scene

    eps = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json")[:3]

    def walk():
        out = []
        for ep in eps:
            scene = load_scene(ep.scan, havln_data / "connectivity", None)
            w = World(scene, ep, Crowd.from_episode(ep, scene, seed=0), seed=0)
            acts = run_episode(w, "expert")
            out.append((acts, list(w.trajectory), w.pose, dict(w.collisions), w.path_length))
        return out

    fast = walk()
    monkeypatch.setattr(Scene, "free_disc", lambda *a, **k: 0.0)
    assert walk() == fast


def test_people_out_of_reach_skip_the_contact_substeps_with_the_same_walk(havln_data, monkeypatch):
    """World._advance skips its people sub-steps when nobody can reach the robot within the step
    (World._someone_within_reach): a random walk into a crowd (val_seen 1242, policy seed 3: 9
    human contacts) is bit-identical with the shortcut switched off."""
    from havln_robot.eval import run_episode
    from havln_robot.sim.mesh_scene import load_scene

    ep = next(e for e in load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json") if e.episode_id == "1242")
    scene = load_scene(ep.scan, havln_data / "connectivity", None)

    def walk():
        w = World(scene, ep, Crowd.from_episode(ep, scene, seed=0), seed=0)
        acts = run_episode(w, "random", seed=3)
        return acts, list(w.trajectory), w.pose, dict(w.collisions), w.path_length

    fast = walk()
    assert fast[3]["human"] >= 5  # the walk does touch people
    monkeypatch.setattr(World, "_someone_within_reach", lambda *a, **k: True)
    assert walk() == fast


def test_someone_within_reach_is_a_proof():
    """Whenever World._someone_within_reach says nobody can reach the robot in dt, nobody on any
    floor comes within the sum of radii at any instant of the step (sampled every 0.5 ms)."""
    rng = np.random.default_rng(3)
    scene = Scene.builtin()
    skipped = 0
    for trial in range(300):
        humans = [
            SimHuman(k, "walking", tuple(rng.uniform(-2, 2, 2)) + (0.0,), tuple(rng.uniform(-2, 2, 2)) + (0.0,), float(rng.uniform(0, 120)))
            for k in range(3)
        ]
        w = World(scene, _episode(), Crowd(humans), robot_radius=R)
        w._x, w._y, w.t = float(rng.uniform(-1, 1)), float(rng.uniform(-1, 1)), float(rng.uniform(0, 20))
        dt = float(rng.choice([0.01, 0.02, 0.1]))
        if w._someone_within_reach(dt):
            continue
        skipped += 1
        p = w.crowd.positions_many(w.t + np.linspace(0.0, dt, 201))
        d = np.hypot(p[..., 0] - w._x, p[..., 1] - w._y)
        assert np.all(d > w.crowd.radii + R), trial
    assert 50 <= skipped <= 290  # both answers occur
