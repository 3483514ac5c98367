"""Simulated people: placement rule (paths stay passable), 120-frame motions, synthetic crowds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from havln_robot.episodes import builtin_episode, load_episodes
from havln_robot.sim.humans import (
    CYCLE_FRAMES,
    FRAME_RATE_HZ,
    HUMAN_RADIUS_M,
    PLACEMENT_MARGIN_M,
    Crowd,
    SimHuman,
    motion_for,
)
from havln_robot.sim.scene import Scene
from havln_robot.sim.world import default_robot_radius


def _path_distance(p, path):
    best = math.inf
    for a, b in zip(path[:-1], path[1:], strict=False):
        if not min(a[2], b[2]) - 1.0 <= p[2] <= max(a[2], b[2]) + 1.0:
            continue
        a, b = np.asarray(a[:2]), np.asarray(b[:2])
        ab = b - a
        t = np.clip((np.asarray(p[:2]) - a) @ ab / max(ab @ ab, 1e-12), 0, 1)
        best = min(best, float(np.linalg.norm(np.asarray(p[:2]) - (a + t * ab))))
    return best


def test_people_keep_the_reference_path_passable(havln_data):
    eps = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json")
    r = default_robot_radius()
    clearance = r + HUMAN_RADIUS_M + PLACEMENT_MARGIN_M
    n = 0
    motions = set()
    for ep in eps[::4]:
        scene = Scene.load(ep.scan, havln_data / "connectivity")
        crowd = Crowd.from_episode(ep, scene, seed=3)
        assert len(crowd) == len(ep.humans)
        for h in crowd.humans:
            motions.add(h.motion)
            for t in np.linspace(0.0, 1.0, 21):  # the whole motion line keeps the clearance
                p = np.asarray(h.a) + t * (np.asarray(h.b) - np.asarray(h.a))
                assert _path_distance(p, ep.reference_path) >= clearance - 1e-3, (ep.episode_id, h.human_id)
            # placed near its viewpoint: within the clearance plus the pacing amplitude
            spec = ep.humans[[s.human_id for s in ep.humans].index(h.human_id)]
            assert math.dist(h.a[:2], spec.position[:2]) < clearance + 1.0
            n += 1
    assert n > 60 and motions == {"standing", "pacing", "walking"}


def test_motion_cycle_is_120_frames_of_sim_time():
    walker = SimHuman(0, "walking", (0.0, 0.0, 0.0), (3.0, 0.0, 0.0), phase=0.0)
    stander = SimHuman(1, "standing", (5.0, 5.0, 0.0), (5.0, 5.0, 0.0), phase=40.0, facing=1.0)
    crowd = Crowd([walker, stander])
    period = CYCLE_FRAMES / FRAME_RATE_HZ
    assert period == pytest.approx(12.0)
    p0, p_half, p_end = crowd.positions(0.0), crowd.positions(period / 2), crowd.positions(period)
    assert p0[0] == pytest.approx([0, 0, 0]) and p_half[0] == pytest.approx([3, 0, 0]) and p_end[0] == pytest.approx([0, 0, 0])
    assert np.allclose(crowd.positions(2.0)[1], [5, 5, 0])
    h = crowd.headings(1.0)
    assert h[0] == pytest.approx(0.0) and h[1] == pytest.approx(1.0)
    assert crowd.headings(period * 0.75)[0] == pytest.approx(math.pi) or crowd.headings(period * 0.75)[0] == pytest.approx(-math.pi)
    assert crowd.frame(1.0)[0] == pytest.approx(10.0)


def test_motion_from_activity_text():
    assert motion_for("A child running through the hallway.") == "walking"
    assert motion_for("Someone talking on the phone.") == "pacing"
    assert motion_for("A person folding laundry on the bed.") == "standing"


def test_builtin_crowd_is_off_the_path():
    ep = builtin_episode()
    crowd = Crowd.from_episode(ep, Scene.builtin(), seed=0)
    assert [h.motion for h in crowd.humans] == ["pacing", "standing"]
    for t in np.linspace(0, 12, 25):
        for p in crowd.positions(t):
            assert _path_distance(p, ep.reference_path) >= default_robot_radius() + HUMAN_RADIUS_M


def test_r2r_episodes_get_seeded_synthetic_people(havln_data):
    ep = load_episodes(havln_data / "r2r" / "R2R_val_seen.json", limit=1)[0]
    scene = Scene.load(ep.scan, havln_data / "connectivity")
    assert len(Crowd.from_episode(ep, scene, seed=1)) == 0
    a = Crowd.from_episode(ep, scene, seed=1, populate=3)
    b = Crowd.from_episode(ep, scene, seed=1, populate=3)
    assert len(a) == 3 and all(h.synthetic for h in a.humans)
    assert np.allclose(a.positions(4.2), b.positions(4.2))
    c = Crowd.from_episode(ep, scene, seed=2, populate=3)
    assert not np.allclose(a.positions(4.2), c.positions(4.2))


def test_max_speeds_bound_every_persons_walking_speed(havln_data):
    """Crowd.max_speeds (the proof World._advance uses to skip its contact sub-steps) is each
    person's fastest horizontal speed: finite differences over a whole cycle never exceed it, and a
    moving person reaches it."""
    from havln_robot.sim.mesh_scene import load_scene

    eps = [e for e in load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json")[:40] if e.humans]
    crowd = Crowd([])
    for ep in eps:
        crowd.humans += Crowd.from_episode(ep, load_scene(ep.scan, havln_data / "connectivity", None), seed=0).humans
    crowd._refresh()
    assert crowd._moving.sum() >= 5
    dt = 1e-3
    ts = np.arange(0.0, CYCLE_FRAMES / FRAME_RATE_HZ, dt)
    p = crowd.positions_many(ts)
    speed = np.hypot(*np.diff(p[..., :2], axis=0).transpose(2, 0, 1)) / dt  # (T-1, M)
    assert np.all(speed.max(axis=0) <= crowd.max_speeds + 1e-9)
    moving = crowd._moving
    assert np.all(speed.max(axis=0)[moving] >= 0.999 * crowd.max_speeds[moving])
    assert np.all(crowd.max_speeds[~moving] == 0.0)


def test_positions_are_reused_within_one_time_and_read_only():
    """The world, the camera and the tracker ask the same sim time's positions: one array, which no
    caller can change under the others."""
    crowd = Crowd.from_episode(builtin_episode(), Scene.builtin(), seed=0)
    a = crowd.positions(1.25)
    assert crowd.positions(1.25) is a and not a.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0] = 0.0
    b = crowd.positions(1.5)
    assert b is not a and np.array_equal(b, crowd.positions_many([1.5])[0])
