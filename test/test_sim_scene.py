"""Scenes from Matterport3D navigation graphs: free space, floors, ramps, walls, cache (real data)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import shapely

from havln_robot.episodes import load_episodes
from havln_robot.sim.scene import Scene, SceneError, Support
from havln_robot.sim.world import default_robot_radius


@pytest.fixture(scope="module")
def val_seen(havln_data):
    return load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json")


def test_every_val_seen_path_viewpoint_is_free_for_the_robot(val_seen, havln_data):
    r = default_robot_radius()
    missing = []
    for ep in val_seen:
        scene = Scene.load(ep.scan, havln_data / "connectivity")
        for vid, (x, y, z) in zip(ep.path_ids, ep.reference_path, strict=True):
            if not scene.is_free(x, y, z, r):
                missing.append((ep.episode_id, vid))
            # the ground under a viewpoint is the viewpoint's own ground point
            assert abs(scene.ground_z(x, y, z) - z) < 0.35, (ep.episode_id, vid)
    assert missing == []


def test_floors_and_ramps_of_a_stairs_path(val_seen, havln_data):
    ep = next(e for e in val_seen if max(p[2] for p in e.reference_path) - min(p[2] for p in e.reference_path) > 2.0)
    scene = Scene.load(ep.scan, havln_data / "connectivity")
    floors = {scene.viewpoints[v].floor for v in ep.path_ids}
    assert len(floors) >= 2
    assert scene.ramps, "a scan with stairs must have ramps"
    # ground height along a ramp is linear between its ends
    r = max(scene.ramps, key=lambda r: abs(r.b[2] - r.a[2]))
    mid = ((r.a[0] + r.b[0]) / 2, (r.a[1] + r.b[1]) / 2)
    s = scene.support(mid[0], mid[1], (r.a[2] + r.b[2]) / 2)
    assert s is not None and s.kind == "ramp"
    assert abs(s.z - (r.a[2] + r.b[2]) / 2) < 1e-6
    # floors sorted by height; floor_index picks the nearest
    zs = [f.z for f in scene.floors]
    assert zs == sorted(zs)
    assert scene.floor_index(zs[-1] + 0.1) == len(zs) - 1


def test_free_space_is_union_of_corridors_and_discs(havln_data):
    scene = Scene.load("17DRP5sb8fy", havln_data / "connectivity", corridor_width=1.2)
    conn = json.loads((havln_data / "connectivity" / "17DRP5sb8fy_connectivity.json").read_text())
    v = next(c for c in conn if c["included"])
    x, y = v["pose"][3], v["pose"][7]
    f = scene.floors[scene.viewpoints[v["image_id"]].floor]
    # a disc of viewpoint_radius around each viewpoint is free, a point 3 m beyond any free space is wall
    assert f.own.contains(shapely.Point(x, y).buffer(scene.viewpoint_radius * 0.95))
    minx, miny, maxx, maxy = scene.bounds()
    assert not scene.is_free(maxx + 3.0, maxy + 3.0, f.z, 0.0)
    # a wider corridor setting gives strictly more free area
    wide = Scene.load("17DRP5sb8fy", havln_data / "connectivity", corridor_width=2.0)
    assert sum(f.own.area for f in wide.floors) > sum(f.own.area for f in scene.floors)


def test_wall_segments_bound_the_free_space(havln_data):
    scene = Scene.load("17DRP5sb8fy", havln_data / "connectivity")
    for k, f in enumerate(scene.floors):
        segs = scene.wall_segments(k)
        assert segs.ndim == 3 and segs.shape[1:] == (2, 2) and segs.dtype == np.float64 and len(segs) > 0
        mids = segs.mean(axis=1)
        # every segment lies on the boundary of the floor's free space
        d = shapely.distance(f.free.boundary, shapely.points(mids))
        assert float(np.max(d)) < 1e-6
    with pytest.raises(IndexError):
        scene.wall_segments(len(scene.floors))


def test_first_contact_stops_before_the_wall():
    scene = Scene.builtin()
    sup = scene.support(3.5, 0.0, 0.0)
    # hallway along x, 1.4 m wide (midway between viewpoint discs): a 0.35 m body moving +y from the
    # centre line touches the wall after 0.7 - 0.35 = 0.35 m; the move is cut 1 mm before that
    s = scene.first_contact(sup, 0.35, 3.5, 0.0, 3.5, 1.0)
    assert s == pytest.approx(0.349, abs=1e-6)
    assert scene.first_contact(sup, 0.35, 3.5, 0.0, 4.5, 0.0) == 1.0


def test_cache_round_trip(tmp_path, havln_data):
    a = Scene.load("8194nk5LbLH", havln_data / "connectivity", cache_dir=tmp_path)
    files = list(tmp_path.glob("8194nk5LbLH_*.pkl"))
    assert len(files) == 1
    from havln_robot.sim import scene as scene_mod

    scene_mod._MEMO.clear()
    b = Scene.load("8194nk5LbLH", havln_data / "connectivity", cache_dir=tmp_path)
    assert a is not b
    assert [f.z for f in a.floors] == [f.z for f in b.floors]
    assert all(fa.free.equals(fb.free) for fa, fb in zip(a.floors, b.floors, strict=True))
    assert isinstance(b.support(*next(iter((v.x, v.y, v.z) for v in b.viewpoints.values()))), Support)


def test_missing_or_bad_connectivity_names_the_file(tmp_path):
    with pytest.raises(SceneError, match=r"scan 'nope': connectivity file .*nope_connectivity\.json: not found; pass --connectivity"):
        Scene.load("nope", tmp_path)
    bad = tmp_path / "bad_connectivity.json"
    bad.write_text('[{"image_id": "a", "included": true}]')
    with pytest.raises(SceneError, match="lacks a valid 'pose'/'height'"):
        Scene.load("bad", tmp_path)
    (tmp_path / "junk_connectivity.json").write_text("{not json")
    with pytest.raises(SceneError, match="not readable JSON"):
        Scene.load("junk", tmp_path)


def test_builtin_scene_and_episode_need_no_data():
    from havln_robot.episodes import builtin_episode

    scene = Scene.builtin()
    ep = builtin_episode()
    assert scene.name == ep.scan == "builtin"
    r = default_robot_radius()
    for p in ep.reference_path:
        assert scene.is_free(*p, r)
    assert len(scene.wall_segments(0)) > 20


def test_free_disc_certifies_what_first_contact_and_support_answer(val_seen, havln_data):
    """Scene.free_disc is a speed certificate, not a rule of its own: for random moves inside the disc
    first_contact is 1.0 and support keeps the floor, on a scan with stairs (ramps nearby give 0)."""
    ep = next(e for e in val_seen if max(p[2] for p in e.reference_path) - min(p[2] for p in e.reference_path) > 2.0)
    scene = Scene.load(ep.scan, havln_data / "connectivity")
    r = default_robot_radius()
    rng = np.random.default_rng(0)
    checked = zero = 0
    for vid in list(scene.viewpoints)[:60]:
        v = scene.viewpoints[vid]
        sup = scene.support(v.x, v.y, v.z)
        if sup is None:
            continue
        for _ in range(5):
            x, y = v.x + rng.uniform(-0.6, 0.6), v.y + rng.uniform(-0.6, 0.6)
            rho = scene.free_disc(sup, r, x, y, 0.5)
            if rho <= 0:
                zero += 1
                continue
            assert sup.kind == "floor" and rho <= 0.5
            for _ in range(10):
                a, b = rng.uniform(0, 2 * np.pi, 2)
                ra, rb = rho * np.sqrt(rng.uniform(0, 1, 2))
                x0, y0, x1, y1 = x + ra * np.cos(a), y + ra * np.sin(a), x + rb * np.cos(b), y + rb * np.sin(b)
                assert scene.first_contact(sup, r, x0, y0, x1, y1) == 1.0
                s = scene.support(x1, y1, sup.z, prefer=sup, heading=(x1 - x0, y1 - y0))
                assert s is not None and (s.kind, s.index) == ("floor", sup.index)
                assert s.z == scene.floors[sup.index].height_at(x1, y1)
                checked += 1
    assert checked > 500 and zero > 0
    # on a ramp there is no certificate
    ramp = scene.ramps[0]
    mx, my = (ramp.a[0] + ramp.b[0]) / 2, (ramp.a[1] + ramp.b[1]) / 2
    s = scene.support(mx, my, (ramp.a[2] + ramp.b[2]) / 2)
    assert s is not None and s.kind == "ramp" and scene.free_disc(s, r, mx, my, 0.5) == 0.0


def test_the_floor_at_a_start_holds_it_where_the_nearest_in_height_does_not(val_seen, havln_data):
    """Split levels: episode 5593's start (z -0.34) is nearer in height to floor 1 (z -0.45) than to
    the floor 2 (z -0.01) whose free space holds it; the demo's top-down map drew floor 1, so the
    robot stood on "wall / no floor". The map's floor (Scene.floor_at) holds every val_seen start."""
    scenes: dict[str, Scene] = {}
    nearest_in_height_misses = []
    for ep in val_seen:
        scene = scenes.setdefault(ep.scan, Scene.load(ep.scan, havln_data / "connectivity"))
        x, y, z = ep.start_position
        k = scene.floor_at(x, y, z)
        assert scene.floors[k].free.buffer(1e-6).contains(shapely.Point(x, y)), (ep.episode_id, k)
        if not scene.floors[scene.floor_index(z)].free.buffer(1e-6).contains(shapely.Point(x, y)):
            nearest_in_height_misses.append(ep.episode_id)
    assert "5593" in nearest_in_height_misses  # the case the map showed
