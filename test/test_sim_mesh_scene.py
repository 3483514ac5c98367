"""Scan meshes (``--scenes DIR``) on a textured glTF house built at test time.

The house (havln_robot/sim/synthetic_mesh.py): two rooms joined by a 1.2 m doorway, a red box at a
known place, a 10-step staircase to an upper room, and its own 8-viewpoint navigation graph in the
Matterport3D connectivity format. The mesh is written y-up (Habitat), the graph z-up.
Cost: ~10-25 s for the module on 2 shared cores (scene build ~2 s, renderer start ~1 s per test).
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest

from havln_robot.sim.mesh_scene import MeshScene, load_scene, scene_mesh_path
from havln_robot.sim.robot import GO2_CAMERA_FORWARD_M, GO2_CAMERA_HEIGHT_M, GO2_RADIUS_M
from havln_robot.sim.scene import Scene, SceneError
from havln_robot.sim.synthetic_mesh import (
    TEST_EDGES,
    TEST_OBJECT,
    TEST_PATHS,
    TEST_VIEWPOINTS,
    project,
    write_episodes,
    write_test_scene,
)

SCAN = "synth_house"


@pytest.fixture(scope="module")
def house(tmp_path_factory):
    root = tmp_path_factory.mktemp("scenes")
    glb, conn = write_test_scene(root, SCAN)
    eps = write_episodes(root / "episodes.json", SCAN)
    return root, glb, conn, eps


@pytest.fixture(scope="module")
def mesh_scene(house):
    root, _glb, conn, _eps = house
    return load_scene(SCAN, conn, root)


def _red(rgb: np.ndarray) -> np.ndarray:
    r, g, b = (rgb[..., k].astype(int) for k in range(3))
    return (r > 150) & (g < 60) & (b < 60)


def test_habitat_layout_and_y_up_transform(house, mesh_scene):
    import trimesh

    root, glb, conn, _ = house
    assert scene_mesh_path(root, SCAN) == glb
    raw = trimesh.load(str(glb), force="scene")
    # y-up file: heights (0 .. 4 m, the upper room's walls) are on y; map y (0 .. 10.2 m) is -z
    lo, hi = raw.bounds
    assert (lo[1], hi[1]) == pytest.approx((-0.1, 4.0), abs=1e-4)
    assert (lo[2], hi[2]) == pytest.approx((-10.2, 0.2), abs=1e-4)
    assert isinstance(mesh_scene, MeshScene) and len(mesh_scene.floors) == 2 and len(mesh_scene.ramps) == 1
    al = mesh_scene.alignment(camera_height_m=GO2_CAMERA_HEIGHT_M)
    # every viewpoint stands on a mesh floor at its ground z, outside geometry; camera height above the mesh floor
    assert (al.n, al.on_floor, al.clear, al.bad) == (8, 8, 8, [])
    assert al.camera_height_m == pytest.approx(GO2_CAMERA_HEIGHT_M, abs=0.01)
    for vid, (x, y, z) in TEST_VIEWPOINTS.items():
        assert mesh_scene.mesh_floor_z(x, y, z) == pytest.approx(z, abs=0.01), vid
    # read as z-up, the same file does not line up with the graph: refused, naming the fix
    with pytest.raises(SceneError, match="scenes_up"):
        MeshScene.from_files(conn / f"{SCAN}_connectivity.json", glb, up="z")


def test_collision_space_comes_from_the_mesh(house, mesh_scene):
    root, _glb, conn, _ = house
    proc = Scene.from_connectivity(conn / f"{SCAN}_connectivity.json")
    own = mesh_scene.floors[0].own
    # a room corner far from the graph: free in the mesh, wall in the procedural scene
    assert mesh_scene.is_free(0.5, 0.5, 0.0, 0.3) and not proc.is_free(0.5, 0.5, 0.0, 0.3)
    # the red box, the wall between the rooms and the stair treads above the step height are not floor-0 space
    assert not own.contains(_pt(TEST_OBJECT.centre[:2]))
    assert not own.contains(_pt((5.1, 0.7))) and not own.contains(_pt((8.25, 5.5)))
    assert own.contains(_pt((5.1, 2.0)))  # the doorway
    # a body driven into the box stops at its face (robot radius from it)
    from havln_robot.episodes import load_episodes
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.world import World

    ep = dataclasses.replace(load_episodes(house[3], conn)[0], start_position=(0.8, 1.2, 0.0), start_yaw=math.pi / 2)
    w = World(mesh_scene, ep, Crowd.from_episode(ep, mesh_scene, seed=0), seed=0)
    for _ in range(60):  # the contact model: 3 m north, into the box 1.7 m away (motion_node's executor would stop short)
        w.move(0.05, 0.0, 0.1)
    _x, y, _z, _yaw = w.pose
    assert y == pytest.approx(TEST_OBJECT.lo[1] - GO2_RADIUS_M, abs=0.08)
    assert w.collisions["static"] >= 1


def _pt(xy):
    from shapely.geometry import Point

    return Point(*xy)


def test_walkable_distance_on_the_mesh_grid(mesh_scene):
    g = TEST_VIEWPOINTS["U2"]
    gd = mesh_scene.goal_distance_factory(g)
    a1 = TEST_VIEWPOINTS["A1"]
    graph = sum(math.dist(TEST_VIEWPOINTS[a], TEST_VIEWPOINTS[b]) for a, b in zip(TEST_PATHS[0], TEST_PATHS[0][1:], strict=False))
    ne = gd.query(*a1)
    assert not ne.unreachable and graph * 0.95 <= ne.ne <= graph * 1.1  # up the stairs; 8-connected grid <= +8 %
    assert gd.query(*g).ne == pytest.approx(0.0, abs=1e-6)
    # through the wall between the rooms: 0.8 m straight, > 2.5 m walkable (round by the doorway)
    gd2 = mesh_scene.goal_distance_factory((5.6, 3.5, 0.0))
    w = gd2.query(4.8, 3.5, 0.0)
    assert w.euclid == pytest.approx(0.8) and w.ne > 2.5 and not w.unreachable
    # same room, clear line: the straight line
    assert gd2.query(7.0, 1.0, 0.0).ne == pytest.approx(math.dist((7.0, 1.0), (5.6, 3.5)))


@pytest.fixture(scope="module")
def renderer(mesh_scene):
    from havln_robot.sim.render import Renderer

    r = Renderer(mesh_scene, None, 320, 240)
    yield r
    r.close()


def test_object_appears_at_the_expected_pixel(renderer, mesh_scene, house):
    from havln_robot.sim.render import Renderer

    x, y, z = TEST_VIEWPOINTS["A2"]
    c = TEST_OBJECT.centre
    for dyaw in (0.0, 0.25, -0.25):  # object straight ahead, then right and left of the centre
        yaw = math.atan2(c[1] - y, c[0] - x) + dyaw
        rgb, _depth = renderer.render((x, y, z, yaw))
        u, v, _ = project(c, (x, y, z, yaw), renderer.intrinsics, GO2_CAMERA_HEIGHT_M, GO2_CAMERA_FORWARD_M)
        assert 0 <= u < 320 and 0 <= v < 240
        assert _red(rgb[int(round(v)) - 1 : int(round(v)) + 2, int(round(u)) - 1 : int(round(u)) + 2]).all(), (dyaw, u, v)
        red = np.argwhere(_red(rgb))
        assert len(red) > 100
        # every red pixel lies inside the projection of the box's 8 corners
        corners = [
            (a, b, cz)
            for a in (TEST_OBJECT.lo[0], TEST_OBJECT.hi[0])
            for b in (TEST_OBJECT.lo[1], TEST_OBJECT.hi[1])
            for cz in (TEST_OBJECT.lo[2], TEST_OBJECT.hi[2])
        ]
        uv = np.array([project(q, (x, y, z, yaw), renderer.intrinsics, GO2_CAMERA_HEIGHT_M, GO2_CAMERA_FORWARD_M)[:2] for q in corners])
        assert red[:, 1].min() >= max(0, uv[:, 0].min() - 1.5) and red[:, 1].max() <= min(319, uv[:, 0].max() + 1.5)
        assert red[:, 0].min() >= max(0, uv[:, 1].min() - 1.5) and red[:, 0].max() <= min(239, uv[:, 1].max() + 1.5)
    # the procedural scene of the same graph has no such object
    proc = Scene.from_connectivity(house[2] / f"{SCAN}_connectivity.json")
    with Renderer(proc, None, 320, 240) as rp:
        rgb, _ = rp.render((x, y, z, math.atan2(c[1] - y, c[0] - x)))
    assert _red(rgb).sum() == 0


def test_depth_matches_the_mesh(renderer):
    x, y, z = TEST_VIEWPOINTS["A2"]
    rgb, depth = renderer.render((x, y, z, -math.pi / 2))  # facing the south wall (its face at y = 0)
    k = renderer.intrinsics
    cy = int(round(k.cy))
    # the wall is perpendicular to the optical axis: z-depth = distance of the camera from it, on a whole row
    wall = y - GO2_CAMERA_FORWARD_M
    assert depth[cy, 40:280] == pytest.approx(wall, abs=0.005)
    # the floor (z = 0) below the horizon: z-depth = camera height * fy / (v - cy)
    for v in (200, 220, 239):
        d = GO2_CAMERA_HEIGHT_M * k.fy / (v - k.cy)
        if d < wall:
            assert depth[v, 160] == pytest.approx(d, rel=0.01), v


def test_expert_walks_the_graph_including_the_stairs(house, mesh_scene):
    from havln_robot.episodes import load_episodes
    from havln_robot.eval import evaluate

    root, _glb, conn, eps = house
    episodes = load_episodes(eps, conn)
    recs = evaluate(episodes, "expert", conn, scenes_dir=root)
    assert [r.metrics.success for r in recs] == [True] * len(TEST_PATHS)
    assert [r.floors_changed for r in recs] == [True, True, False]
    assert all(r.metrics.collisions_static == 0 for r in recs)
    stair = {frozenset(("B2", "T"))}
    assert stair <= {frozenset(e) for p in TEST_PATHS for e in zip(p, p[1:], strict=False)} <= {frozenset(e) for e in TEST_EDGES}


class _Looker:
    """A policy that takes one 12-view panorama, keeps it, and stops."""

    name = "looker"
    views = 12
    observes = True

    def __init__(self):
        self.obs = None

    def reset(self, instruction):
        self.obs = None

    def act(self, obs):
        self.obs = obs
        return "STOP"


def test_eval_renders_the_mesh_for_a_policy(house):
    from havln_robot.episodes import load_episodes
    from havln_robot.eval import evaluate

    root, _glb, conn, eps = house
    ep = load_episodes(eps, conn, limit=1)  # starts at A1 looking at A2
    pol = _Looker()
    evaluate(ep, pol, conn, scenes_dir=root)
    obs = pol.obs
    start, yaw0 = ep[0].start_position, ep[0].start_yaw
    c = TEST_OBJECT.centre
    rel = (math.atan2(c[1] - start[1], c[0] - start[0]) - yaw0 + math.pi) % (2 * math.pi) - math.pi
    best = int(np.argmin(np.abs(((obs.headings - rel) + math.pi) % (2 * math.pi) - math.pi)))
    red = [int(_red(obs.rgb[i]).sum()) for i in range(len(obs.rgb))]
    # seen in the three views whose 90 deg field holds its bearing, in no other
    seen = {i for i, n in enumerate(red) if n > 50}
    assert seen == {(best - 1) % 12, best, (best + 1) % 12}, red
    for i in sorted(seen):  # the object's column in each view follows from its bearing (90 deg HFOV views)
        d = (rel - float(obs.headings[i]) + math.pi) % (2 * math.pi) - math.pi
        cols = np.argwhere(_red(obs.rgb[i]))[:, 1]
        w = obs.rgb.shape[2]
        expected = (w - 1) / 2 - (w / 2) * math.tan(d)
        assert cols.min() - 0.06 * w <= expected <= cols.max() + 0.06 * w, (i, cols.min(), cols.max(), expected)


def test_bad_scenes_dir_is_one_line(tmp_path, house):
    root, _glb, conn, eps = house
    with pytest.raises(SceneError, match="--scenes/scenes_dir: no mesh for scan 'nope'"):
        scene_mesh_path(root, "nope")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "havln_robot.cli",
            "eval",
            "--episodes",
            str(eps),
            "--connectivity",
            str(conn),
            "--scenes",
            str(tmp_path / "none"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--scenes/scenes_dir:" in r.stderr and "is not a folder" in r.stderr
    for cmd in (["train", "--train", str(eps)], ["replay", str(eps)], ["demo"], ["bench", "sim"]):
        r = subprocess.run(
            [sys.executable, "-m", "havln_robot.cli", *cmd, "--scenes", str(tmp_path / "none")], capture_output=True, text=True, timeout=300
        )
        assert r.returncode == 2 and "Traceback" not in r.stderr and "none" in r.stderr, (cmd, r.stderr[-400:])
    broken = tmp_path / "broken" / SCAN
    broken.mkdir(parents=True)
    (broken / f"{SCAN}.glb").write_bytes(b"not a glb")
    with pytest.raises(SceneError, match="not a readable glTF/GLB"):
        load_scene(SCAN, conn, tmp_path / "broken")


def test_replay_scores_on_the_mesh(house):
    """`replay --backend batch --scenes` scores an eval's actions on the mesh exactly as eval did, and
    a move that is free on the mesh but hits a procedural wall. Cost ~3 s."""
    from havln_robot.agent.sim_io import replay_actions
    from havln_robot.challenge.replay import replay_batch
    from havln_robot.episodes import load_episodes
    from havln_robot.eval import evaluate

    root, _glb, conn, eps = house
    episodes = load_episodes(eps, conn)
    recs = evaluate(episodes, "expert", conn, scenes_dir=root)
    rep = replay_batch(
        {e.episode_id: e for e in episodes},
        {r.episode_id: r.actions for r in recs},
        {},
        connectivity_dir=str(conn),
        progress=False,
        scenes_dir=str(root),
        play=replay_actions,
    )
    assert [(r.metrics.ne, r.metrics.success) for r in rep] == [(r.metrics.ne, r.metrics.success) for r in recs]
    # into room A's corner, 1 m from A1: free on the mesh, a wall in the procedural scene (A1's 1.1 m disc)
    corner = {episodes[0].episode_id: ["TURN_RIGHT"] * 11 + ["MOVE_FORWARD"] * 4 + ["STOP"]}
    one = {episodes[0].episode_id: episodes[0]}
    on_mesh = replay_batch(one, corner, {}, connectivity_dir=str(conn), progress=False, scenes_dir=str(root), play=replay_actions)[
        0
    ].metrics
    on_proc = replay_batch(one, corner, {}, connectivity_dir=str(conn), progress=False, play=replay_actions)[0].metrics
    # (the closed-loop world's odometry noise moves ~1 m, not exactly; motion_node's executor
    # stops short of the procedural wall instead of touching it)
    assert on_mesh.collisions_static == 0 and on_mesh.path_length == pytest.approx(1.0, abs=0.04)
    assert on_proc.path_length < 0.9


def test_bench_sim_scenes_prints_frame_rates(house, capsys):
    """`havln-robot bench sim --scenes DIR` renders the mesh and prints frames/s (short run, ~5 s)."""
    from havln_robot.bench.sim import main as bench_sim

    root, _glb, conn, eps = house
    rc = bench_sim(
        [
            "--scenes",
            str(root),
            "--episodes",
            str(eps),
            "--connectivity",
            str(conn),
            "--frames",
            "3",
            "--steps",
            "20",
            "--node-seconds",
            "0",
            "--expert",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "mesh scenes" in out and "288 triangles" in out
    assert "batch expert (1 episode, " in out and "the executor's ticks alone cap" in out
    rows = [ln for ln in out.splitlines() if "deg HFOV" in ln]
    assert len(rows) == 3 and all(float(ln.split("HFOV")[1].split()[0]) > 0 for ln in rows), rows


def test_sim_node_session_names_scenes_dir(house, tmp_path):
    from havln_robot.sim.session import SessionError, open_episode

    root, _glb, conn, eps = house
    p = {"scene_source": "episodes", "episodes_file": str(eps), "connectivity_dir": str(conn), "scenes_dir": str(tmp_path / "none")}
    with pytest.raises(SessionError, match=r"^scenes_dir: .*none is not a folder"):
        open_episode(p)
    opened = open_episode({**p, "scenes_dir": str(root)})
    assert isinstance(opened.scene, MeshScene)


def test_hm3d_folder_layout_is_found(tmp_path, house):
    _root, glb, _conn, _eps = house
    d = tmp_path / "00800-synth_house"
    d.mkdir()
    (d / "synth_house.basis.glb").write_bytes(glb.read_bytes())
    assert scene_mesh_path(tmp_path, SCAN) == d / "synth_house.basis.glb"


def test_real_scan_graph_as_a_mesh_expert_walks_its_stairs(havln_data, tmp_path):
    """On the real data: scan rPc6DW4iMge (HA val_seen's scan with the most floor-changing paths: 7 of
    its 9; 9 floors) written as a y-up glb of its procedural geometry (synthetic_mesh.write_scene_mesh),
    loaded back through --scenes: the y-up transform lines up with the real graph, and the expert
    reaches the goal of every val_seen path of the scan on the mesh's free space and grid NE.
    Cost ~30 s on the loaded 2-core VM."""
    from cpu_pool import evaluate_in_pool, spawn_pool

    from havln_robot.episodes import load_episodes
    from havln_robot.sim.synthetic_mesh import write_scene_mesh

    scan, conn = "rPc6DW4iMge", havln_data / "connectivity"
    write_scene_mesh(Scene.load(scan, conn, cache_dir=tmp_path / "cache"), tmp_path)
    ms = load_scene(scan, conn, tmp_path)
    al = ms.alignment(camera_height_m=GO2_CAMERA_HEIGHT_M)
    assert al.n == 118 and al.on_floor >= 0.95 * al.n and al.clear >= 0.95 * al.n
    assert al.camera_height_m == pytest.approx(GO2_CAMERA_HEIGHT_M, abs=0.02)
    eps = [e for e in load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", conn) if e.scan == scan]
    with spawn_pool() as pool:  # the 9 walks side by side (test/cpu_pool.py)
        recs = evaluate_in_pool(pool, eps, "expert", conn, scenes_dir=tmp_path)
    assert len(recs) == 9 and sum(r.floors_changed for r in recs) == 7
    assert all(r.metrics.success for r in recs), [(r.episode_id, r.metrics.ne) for r in recs if not r.metrics.success]


def test_training_rollouts_render_the_mesh(house, havln_data):
    """The trainer's rollouts (run_episodes, as `train --scenes`) render the mesh's panoramas (needs the
    HA-VLN instruction vocabulary). Cost ~5 s."""
    from havln_robot.episodes import load_episodes
    from havln_robot.policy.dataset import run_episodes
    from havln_robot.policy.small import SmallConfig
    from havln_robot.policy.tokenizer import Vocabulary

    root, _glb, conn, eps = house
    episodes = load_episodes(eps, conn)
    res = run_episodes(episodes[:1], Vocabulary.load(), SmallConfig(), None, 1.0, connectivity_dir=conn, scenes_dir=root)
    views = res[0].sample.views  # (decisions, views, 4, res, res) uint8: depth, R, G, B
    rgb = views[:, :, 1:4].transpose(0, 1, 3, 4, 2).reshape(-1, views.shape[-1], 3)
    assert _red(rgb).sum() > 0  # the red box of room A shows up in the training panoramas
