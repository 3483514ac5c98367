"""One world model: World.step = motion_node's Executor in closed loop over the noisy base,
the shared safety rule on analytic walls, partial steps, the camera on the drawn floor, bench agreement.

Costs (2 loaded cores): the builtin-scene tests ~1-3 s each; the rendered-depth checks ~5 s; the
data tests ~10 s; the live agreement check (two episodes through sim_node + motion_node) ~1-3 min.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import shapely
from conftest import domain

from havln_robot.actions import FORWARD_STEP_M
from havln_robot.episodes import Episode
from havln_robot.motion.executor import Executor, MotionConfig
from havln_robot.motion.safety import CameraMount, Footprint, Obstacles, depth_to_points, forward_hazard, obstacle_points
from havln_robot.records import PARTIAL_DETAIL
from havln_robot.sim.closed_loop import ClosedLoop, sim_profile
from havln_robot.sim.humans import Crowd
from havln_robot.sim.robot import NoiseModel
from havln_robot.sim.scene import Scene
from havln_robot.sim.world import World


def _episode(start=(3.5, 0.0, 0.0), yaw=0.0, goal=(6.0, 4.0, 0.0)):
    return Episode("t1", "builtin", "go", ("go",), start, yaw, goal, 3.0, (start, goal), (), (), 8.0, "test")


def test_world_step_ticks_the_executor_and_the_believed_pose_drifts():
    """Same seed -> bit-identical run; the odometry (believed) pose drifts from the true one; a
    perfect base (NoiseModel.none) keeps them together."""
    poses, odoms = [], []
    for _ in range(2):
        w = World(Scene.builtin(), _episode(start=(2.0, 0.0, 0.0)), Crowd([]), seed=3)
        for a in ["MOVE_FORWARD"] * 5 + ["TURN_LEFT"] * 3 + ["TURN_RIGHT"] * 3 + ["MOVE_FORWARD"] * 2:
            r = w.step(a)
            assert r.result is not None and r.result.action == a and r.result.outcome == "ok"
        poses.append(w.pose)
        odoms.append(w.loop.odom)
    assert poses[0] == poses[1] and odoms[0] == odoms[1]
    x, y, _, yaw = poses[0]
    ox, oy, oyaw = odoms[0]
    # odom starts at the start pose (2, 0, yaw 0): believed vs true
    drift = math.hypot(ox + 2.0 - x, oy - y)
    assert drift > 1e-3  # 1 % odometry scale std + random walk over ~2 m
    w = World(Scene.builtin(), _episode(start=(2.0, 0.0, 0.0)), Crowd([]), seed=3)
    w.loop_options = {"noise": NoiseModel.none()}
    for _ in range(6):
        w.step("MOVE_FORWARD")
    ox, oy, _ = w.loop.odom
    assert math.hypot(ox + 2.0 - w.pose[0], oy - w.pose[1]) < 1e-9
    assert w.pose[0] - 2.0 == pytest.approx(6 * FORWARD_STEP_M, abs=6 * MotionConfig().pos_tol)


def test_forward_into_a_wall_moves_as_far_as_is_safe_then_refuses_without_contact():
    """Facing the hallway wall: full steps, then one partial step (reported with its distance), then
    refusals; the disc never touches the wall."""
    w = World(Scene.builtin(), _episode(yaw=math.pi / 2), Crowd([]), seed=0)
    results = [w.step("MOVE_FORWARD").result for _ in range(6)]
    partial = [r for r in results if r.detail.startswith(PARTIAL_DETAIL)]
    refused = [r for r in results if r.is_refused]
    assert len(partial) == 1 and partial[0].is_partial and 0.05 <= partial[0].distance_odom_m < FORWARD_STEP_M - 0.02
    assert refused and results.index(refused[0]) > results.index(partial[0])
    assert w.collisions == {"human": 0, "static": 0}
    assert w.loop.refused == len(refused) and w.loop.partial == 1


def test_executor_partial_step_keeps_the_front_margin():
    cfg = MotionConfig(footprint=Footprint(0.70, 0.31), front_margin=0.10, min_step=0.05, require_depth=True)
    wall = np.array([[0.35 + 0.27, y] for y in np.linspace(-0.3, 0.3, 40)], np.float32)
    ex = Executor(cfg)
    tick = ex.start("MOVE_FORWARD", 0.0, (0.0, 0.0, 0.0), 0.0, Obstacles(points=wall))
    assert not tick.results and ex.busy and ex._a.target == pytest.approx(0.16)  # 0.27 gap - 0.10 margin, whole cm below
    ex2 = Executor(cfg)
    near = wall.copy()
    near[:, 0] = 0.35 + 0.12  # 0.02 m after the margin: shorter than min_step -> refused
    r = ex2.start("MOVE_FORWARD", 0.0, (0.0, 0.0, 0.0), 0.0, Obstacles(points=near)).results[0]
    assert r.is_refused and r.outcome == "collision"


def test_weighted_points_count_as_that_many_depth_points():
    pts = np.array([[0.5, 0.0]], np.float32)
    fp = Footprint(0.70, 0.31)
    assert forward_hazard(Obstacles(points=pts), fp, 0.25, 0.1, 0.05, 0.45, 12) is None
    hz = forward_hazard(Obstacles(points=pts, weights=np.array([40.0])), fp, 0.25, 0.1, 0.05, 0.45, 12)
    assert hz is not None and hz.distance_m == pytest.approx(0.15)


def _rendered_obstacles(world, params):
    from havln_robot.camera import Intrinsics
    from havln_robot.sim.render import Renderer

    r = Renderer(world.scene, world.crowd, width=640, height=480, hfov_deg=69.4)
    try:
        _, depth = r.render(world.camera_pose, 0.0, world.t)
    finally:
        r.close()
    k = Intrinsics.from_hfov(640, 480, 69.4)
    mount = CameraMount(params["camera_x_m"], params["camera_y_m"], params["camera_z_m"], 0.0)
    xyz = depth_to_points(depth.astype(np.float32), k, mount, params["depth_stride"], params["depth_min_m"], params["depth_max_m"])
    return Obstacles(points=obstacle_points(xyz, params["obstacle_min_height_m"], params["obstacle_max_height_m"]))


@pytest.mark.parametrize(("start", "yaw"), [((3.5, 0.25, 0.0), math.pi / 2), ((3.5, 0.0, 0.0), 0.0), ((2.0, 0.0, 0.0), math.pi / 2)])
def test_analytic_walls_give_the_rendered_depths_verdict(start, yaw):
    """One rule, two point sources: forward_hazard on rendered depth and on the analytic walls agree
    (blocked or free; the gap within 5 cm: the renderer extends each wall's ends by 8 cm so that
    corners close, which narrows doorways) at a wall, in the open and at a doorway."""
    params = sim_profile()[0]
    cfg = MotionConfig.from_params(params)
    w = World(Scene.builtin(), _episode(start=start, yaw=yaw), Crowd([]), seed=0)
    loop = ClosedLoop(w, seed=0, reset_world=False)
    loop._load_walls()
    verdicts = []
    for obs in (_rendered_obstacles(w, params), loop.obstacles()):
        obs.people = []
        verdicts.append(
            forward_hazard(obs, cfg.footprint, FORWARD_STEP_M, cfg.front_margin, cfg.side_margin, cfg.personal_space, cfg.min_points)
        )
    rendered, analytic = verdicts
    assert (rendered is None) == (analytic is None), (rendered, analytic)
    if rendered is not None:
        assert rendered.distance_m == pytest.approx(analytic.distance_m, abs=0.05)


def test_the_camera_stands_on_the_drawn_floor(havln_data):
    """val_seen 5593 starts 0.32 m below its floor's drawn height: a camera at the body's z saw the
    drawn floor as a 0.32 m obstacle in every direction and motion_node refused every step."""
    from havln_robot.episodes import load_episodes

    ep = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", limit=1)[0]
    assert ep.episode_id == "5593"
    scene = Scene.load(ep.scan, havln_data / "connectivity")
    w = World(scene, ep, Crowd([]), seed=0)
    params = sim_profile()[0]
    cfg = MotionConfig.from_params(params)
    obs = _rendered_obstacles(w, params)
    assert forward_hazard(obs, cfg.footprint, FORWARD_STEP_M, cfg.front_margin, cfg.side_margin, cfg.personal_space, cfg.min_points) is None
    assert w.step("MOVE_FORWARD").result.outcome == "ok"


def test_bench_agreement_two_episodes_live(havln_data, monkeypatch, capsys, tmp_path):
    """The done-check on two episodes: reference-following files through batch and through
    sim_node + motion_node + people_node in lockstep (own ROS domain); the table prints, live refusals
    are counted, and the run leaves no temporary folder behind (each live model episode's demo output
    is tens of MB). The first 12 actions of each file (a live action takes seconds in lockstep on a
    loaded machine)."""
    pytest.importorskip("rclpy")
    pytest.importorskip("havln_robot.nodes.sim_node")
    import tempfile

    from havln_robot.bench.agreement import main

    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain(2)))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["--episodes", "2", "--kinds", "reference", "--max-actions", "12"]) == 0
    out = capsys.readouterr().out
    assert "| reference | 2 |" in out and "outcome agreement" in out
    assert out.count(" | live ") == 2 and out.count("(13 actions)") == 4
    assert not list(tmp_path.glob("havln_agreement_*"))


def test_live_side_can_be_read_back_from_a_recorded_run(tmp_path):
    from havln_robot.bench.agreement import read_live_log, summarize

    log = tmp_path / "agreement.log"
    log.write_text(
        "[INFO] [1] [sim_node]: sim: episode 711\n"
        "  episode    711 reference batch failure NE  8.14 coll 0 refused 33 (82 actions) | live failure NE  7.66 coll 0 refused 2 "
        "(47 actions) aborted: depth image went stale while moving; robot stopped\n"
        "  episode   5593 expert    batch success NE  0.26 coll 0 refused 0 (42 actions) | live success NE  0.34 coll 1 refused 0 (42 actions)\n"
        "  episode   6757 model     batch success NE  0.13 coll 0 refused 0 (59 actions)\n"
    )
    rec = read_live_log(log)
    assert set(rec) == {("711", "reference"), ("5593", "expert")}
    r = rec[("711", "reference")]
    assert (r.success, r.ne, r.refused, r.actions) == (False, 7.66, 2, 47) and r.note.startswith("aborted")
    rows = [
        {"kind": "expert", "batch": {"success": True, "ne": 0.26, "collisions": 0, "refused": 0}, "live": vars(rec[("5593", "expert")])}
    ]
    (s,) = summarize(rows)
    assert s["agree"] == 1.0 and s["d_sr"] == 0.0 and s["coll_live"] == 1


def test_live_rows_carry_the_load_they_ran_at(tmp_path, capsys):
    """Live is not repeatable under load (the same expert file failed at a load of ~8 per
    CPU and succeeded alone). Each live row records the 1-min load average per CPU at its end; it is
    read back from the printed line, and the table says when the live graph ran short of CPU."""
    from havln_robot.bench.agreement import load_per_cpu, print_table, read_live_log, summarize

    log = tmp_path / "agreement.log"
    log.write_text(
        "  episode   5593 expert    batch success NE  0.26 coll 0 refused 0 (42 actions) | live success NE  0.34 coll 1 refused 0 "
        "(42 actions) load/cpu 7.9\n"
        "  episode    711 expert    batch success NE  0.26 coll 0 refused 0 (42 actions) | live failure NE  3.10 coll 0 refused 4 "
        "(42 actions) load/cpu 0.6 aborted: robot silent\n"
    )
    rec = read_live_log(log)
    assert rec[("5593", "expert")].load == 7.9 and rec[("711", "expert")].load == 0.6
    assert rec[("711", "expert")].note == "aborted: robot silent"
    rows = [
        {"kind": "expert", "batch": {"success": True, "ne": 0.26, "collisions": 0, "refused": 0}, "live": vars(rec[k])}
        for k in (("5593", "expert"), ("711", "expert"))
    ]
    (s,) = summarize(rows)
    assert (s["load_min"], s["load_max"]) == (0.6, 7.9)
    print_table([s])
    assert "load of 0.6-7.9 per CPU" in capsys.readouterr().out
    now = load_per_cpu()
    assert now is None or now >= 0.0


def test_batch_sees_only_what_the_camera_sees_and_remembers_it():
    """Obstacles in batch are what motion_node's ObstacleTracker would hold: the samples inside the
    camera's view (none behind the robot) plus the SAME ObstacleMemory (3 s, odom frame). Before,
    batch saw every wall within 1.2 m -- a perfect memory that refused steps the live robot took."""
    w = World(Scene.builtin(), _episode(start=(3.5, 0.0, 0.0), yaw=math.pi / 2), Crowd([]), seed=0)
    loop = w.loop
    loop._load_walls()
    assert len(loop._pts_world) > 100
    pts = loop.obstacles().points
    assert len(pts) and not (pts[:, 0] < 0.0).any()  # nothing behind base_link: the camera looks forward
    w.step("MOVE_FORWARD")  # frames taken while moving are remembered
    cells = len(loop.memory)
    assert cells > 0
    for _ in range(3):  # turn 45 deg (2.1 s): the wall leaves the view but stays remembered (3 s)
        w.step("TURN_LEFT")
    pts, n = loop.memory.cells(w.t, loop.odom)
    assert len(pts) and (pts[:, 1] < -0.2).any()  # the wall that was ahead is now on the right
    t_end = w.t + 3.5
    while w.t < t_end:  # turning back and forth away from it: the remembered wall expires
        w.step("TURN_LEFT")
        w.step("TURN_RIGHT")
    pts, _ = loop.memory.cells(w.t, loop.odom)
    assert not (pts[:, 1] < -0.3).any() if len(pts) else True


@pytest.mark.parametrize(
    ("where", "seen"),
    [("in the open ahead", True), ("against the wall ahead", False), ("behind the robot", False), ("behind a wall", False)],
)
def test_batch_people_are_the_people_node_tracks(where, seen):
    """config/sim.yaml feeds motion_node from people_node (people_source: detected); batch runs the
    SAME PeopleTracker on the people the camera would detect: inside the image whole, not merged
    with a wall (val_seen 139: a person standing in a door frame was refused around in batch from
    ground truth while people_node never detected them live), not behind a wall."""
    from havln_robot.sim.humans import SimHuman

    pos = {  # the builtin hallway runs along x, its walls' faces at y = +-0.66 m
        "in the open ahead": (5.3, 0.0, 0.0),
        "against the wall ahead": (5.3, 0.45, 0.0),
        "behind the robot": (1.8, 0.0, 0.0),
        "behind a wall": (7.0, 1.6, 0.0),
    }[where]
    w = World(Scene.builtin(), _episode(start=(3.5, 0.0, 0.0), yaw=0.0), Crowd([SimHuman(7, "standing", pos, pos)]), seed=0)
    assert w.loop._tracker is not None  # the shipped sim profile
    w.step("TURN_LEFT")
    w.step("TURN_RIGHT")  # frames over ~1.4 s: min_hits reached for a seen person
    people = w.loop._people()
    assert bool(people) == seen, (where, people)


def test_bench_agreement_offset_splits_a_run_over_processes(havln_data, capsys):
    """--offset N skips the first N val_seen episodes (a 40-episode live run split over ROS domains)."""
    from havln_robot.bench.agreement import main
    from havln_robot.episodes import load_episodes

    third = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", havln_data / "connectivity", limit=3)[2]
    assert main(["--offset", "2", "--episodes", "1", "--kinds", "reference", "--batch-only"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  episode")]
    assert len(lines) == 1 and lines[0].split()[1] == third.episode_id


def test_batch_camera_returns_nothing_nearer_than_min_z_and_the_memory_keeps_the_wall():
    """sim_node publishes no depth nearer than its min-Z (0.2 m); batch frames hold no wall samples
    there either, and what was seen from further away stays remembered (motion_node's ViewRegion
    starts at ``depth_min_m``), so a step towards the wall is refused instead of driven."""
    w = World(Scene.builtin(), _episode(yaw=math.pi / 2), Crowd([]), seed=0)
    for _ in range(6):
        w.step("MOVE_FORWARD")
    loop = w.loop
    cam_x, near = float(loop.params["camera_x_m"]), float(loop.params["depth_min_m"])
    assert near >= 0.2
    ahead = lambda p: (p[:, 0] - cam_x < near) & (np.abs(p[:, 1]) < 0.1) & (p[:, 0] > 0)  # noqa: E731
    remembered = loop.obstacles().points
    assert ahead(remembered).any()  # the wall ahead is nearer than min-Z, and known
    assert loop.would_refuse("MOVE_FORWARD")
    loop.memory.clear()
    fresh = loop.obstacles().points
    assert not ahead(fresh).any()  # the camera alone does not see it


def test_bench_agreement_expert_file_is_not_replayed_under_the_noise_it_was_written_for(havln_data, tmp_path, capsys):
    """The expert's file fits the noise draw it was written under to the centimetre; replayed under
    that same draw, batch re-runs the run that made it (success by construction). The bench writes
    it under seed + EXPERT_NOISE_OFFSET and replays it under the seed in both worlds."""
    import json

    from havln_robot.bench.agreement import EXPERT_NOISE_OFFSET, _batch_policy, _batch_replay, main
    from havln_robot.episodes import load_episodes

    assert EXPERT_NOISE_OFFSET != 0
    out = tmp_path / "agr.json"
    assert main(["--episodes", "1", "--kinds", "expert", "--batch-only", "--json", str(out)]) == 0
    assert "writes its file under noise seed 1" in capsys.readouterr().out
    (row,) = json.loads(out.read_text())["rows"]
    ep = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", havln_data / "connectivity", limit=1)[0]
    scene = Scene.load(ep.scan, havln_data / "connectivity")
    _, own = _batch_policy(ep, scene, "expert", 0)
    _, written = _batch_policy(ep, scene, "expert", 0, noise_seed=EXPERT_NOISE_OFFSET)
    assert row["actions"] == written and written != own  # another draw, another file
    replay = _batch_replay(ep, scene, written, 0)
    assert (row["batch"]["success"], row["batch"]["ne"], row["batch"]["refused"]) == (replay.success, replay.ne, replay.refused)


def test_bench_agreement_noise_draws_show_coin_toss_episodes(havln_data, capsys):
    """--noise-draws K replays each file in batch under K other noise draws (same people); the
    summary says how many batch/live disagreements a batch draw reproduces."""
    from havln_robot.bench.agreement import main, summarize

    assert main(["--episodes", "1", "--kinds", "reference", "--batch-only", "--noise-draws", "2"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  episode")]
    assert " draws " in line and line.split(" draws ")[1].split()[0] in ("0/2", "1/2", "2/2")
    ok = {"success": True, "ne": 0.2, "collisions": 0, "refused": 0}
    bad = {"success": False, "ne": 7.0, "collisions": 0, "refused": 20}
    rows = [
        {"kind": "reference", "batch": ok, "live": bad, "batch_draws": [True, False]},  # live outcome among the draws
        {"kind": "reference", "batch": ok, "live": bad, "batch_draws": [True, True]},  # not
        {"kind": "reference", "batch": ok, "live": ok, "batch_draws": [True, True]},
    ]
    (s,) = summarize(rows)
    assert (s["draws"], s["disagree"], s["disagree_in_draws"]) == (2, 2, 1) and s["sr_batch_draws"] == pytest.approx(5 / 6)


def _place(world, x, y, z, yaw):
    """Stand the robot of ``world`` at a map pose (m, rad) on the ground the walking rule gives there."""
    sup = world.scene.support(x, y, z)
    assert sup is not None
    world._x, world._y, world._z, world._yaw, world._support = x, y, float(sup.z), yaw, sup
    world.trajectory = [(x, y, float(sup.z))]


def _live_stairs_obstacles(world):
    """motion_node's obstacles from a rendered depth frame at the world's camera pose."""
    from test_sim_render import rendered_motion_depth

    _, pts = rendered_motion_depth(world.scene, world.camera_pose, world.t)
    return Obstacles(points=pts, people=[])


def _live_walked_obstacles(world, back_m: float):
    """motion_node's obstacles at the world's pose after a frame taken ``back_m`` m behind it on the
    way (its ObstacleTracker: raised terrain judged climbable there stays terrain, as on a walk)."""
    from havln_robot.motion.obstacles import ObstacleTracker, TrackerConfig
    from havln_robot.motion.safety import CameraMount
    from havln_robot.sim.closed_loop import motion_params
    from havln_robot.sim.render import Renderer

    sim, mp = sim_profile()[1], motion_params()
    x, y, z, yaw = world._x, world._y, world._z, world._yaw
    mount = CameraMount(mp["camera_x_m"], mp["camera_y_m"], mp["camera_z_m"], math.radians(mp["camera_pitch_deg"]))
    tr = ObstacleTracker(TrackerConfig.from_params({**mp, "obstacle_memory_s": 0.0}), mount)
    r = Renderer(
        world.scene,
        None,
        sim["camera_width"],
        sim["camera_height"],
        sim["camera_hfov_deg"],
        sim["camera_z_m"],
        sim["camera_x_m"],
    )
    try:
        tr.intrinsics = r.intrinsics
        pts = None
        for i, back in enumerate((back_m, 0.0)):
            bx, by = x - back * math.cos(yaw), y - back * math.sin(yaw)
            _place(world, bx, by, z - 0.6 * back, yaw)
            _, depth = r.render(world.camera_pose, 0.0, world.t)
            tr.add_odom(float(i), (bx, by, yaw))
            tr.add_depth(float(i), lambda d=depth: d, depth.shape[1], depth.shape[0], stamp=float(i))
            pts = tr.points(float(i), (bx, by, yaw), mount.pitch)
    finally:
        r.close()
    _place(world, x, y, z, yaw)
    return Obstacles(points=pts, people=[])


def _loop_at(havln_data, scan, pose):
    scene = Scene.load(scan, havln_data / "connectivity")
    ep = Episode("t", scan, "go", ("go",), pose[:3], pose[3], pose[:3], 3.0, (pose[:3],), (), (), 1.0, "test")
    w = World(scene, ep, Crowd([]), seed=0)
    _place(w, *pose)
    loop = ClosedLoop(w, seed=0, reset_world=False, settle_s=0.0)
    _place(w, *pose)
    loop._load_walls()
    return w, loop


@pytest.mark.parametrize(
    ("scan", "pose", "why"),
    [
        # val_seen 3437, walking down ramp 15: the upper storey's slab lies over the flight below
        # (ramps 17/18), cut open by the renderer; batch's terrain stood it 0.41 m above the feet
        ("29hnd4uzFmX", (-3.21, -1.41, 0.56, -1.66), "stairwell opening"),
        # val_seen 1140, walking down ramp 10: ramp 7 passes 0.15 m over the camera; drawn one-sided
        # facing up, it is not in the depth image; batch's terrain took it for a 0.58 m face
        ("JF19kD82Mey", (5.04, -1.54, -0.20, -0.18), "flight overhead"),
    ],
)
def test_batch_terrain_is_what_the_camera_sees_on_stairs(havln_data, scan, pose, why):
    """Batch terrain against rendered depth on Matterport3D stairs: both free ahead."""
    params = sim_profile()[0]
    cfg = MotionConfig.from_params(params)
    w, loop = _loop_at(havln_data, scan, pose)
    for obs in (_live_stairs_obstacles(w), loop.obstacles()):
        obs.people = []
        hz = forward_hazard(obs, cfg.footprint, FORWARD_STEP_M, cfg.front_margin, cfg.side_margin, cfg.personal_space, cfg.min_points)
        assert hz is None, (why, hz)


def test_batch_terrain_is_judged_against_the_ground_under_the_robot_at_each_frame(havln_data):
    """val_seen 1140 (scan JF19kD82Mey), on ramp 10 looking across the flight: batch
    sampled the stairs at the start of a step and judged their heights against the ground there for
    the whole step, while live judges each frame against the ground under the robot when it is
    taken. A frame taken 0.25 m further on (no new sample) sees what a fresh sample there sees, and
    what is an obstacle at either end is what rendered depth gives motion_node (there: obstacles
    within 0.9 m at the start, none at the end)."""

    def near(obs):  # the frame's points within 0.9 m of base_link, as a sorted list (mm)
        p = obs.points[np.hypot(obs.points[:, 0], obs.points[:, 1]) < 0.9]
        return sorted(map(tuple, np.round(p * 1000).astype(int).tolist()))

    yaw = -0.18 + math.pi / 2
    a = (4.84, -1.50, -0.04, yaw)
    b = (4.84 + 0.25 * math.cos(yaw), -1.50 + 0.25 * math.sin(yaw), -0.04, yaw)
    w, loop = _loop_at(havln_data, "JF19kD82Mey", a)
    seen_at_a, live_at_a = near(loop.obstacles()), near(_live_stairs_obstacles(w))
    w_b, fresh = _loop_at(havln_data, "JF19kD82Mey", b)
    seen_at_b, live_at_b = near(fresh.obstacles()), near(_live_stairs_obstacles(w_b))
    assert seen_at_a and live_at_a and not seen_at_b and not live_at_b  # the step changes what is an obstacle, in both worlds
    _place(w, *b)  # the robot walked on; the samples stay those of the start
    assert near(loop.obstacles()) == seen_at_b


def test_a_flight_seen_from_its_side_is_climbable_when_the_frame_sees_its_foot(havln_data):
    """val_seen 711 (scan aayBHfsNo7d), reference-following file, action 47: the robot stands on
    floor 5 beside ramp 28, whose side rises 0.26-0.36 m above the floor 0.5 m ahead and whose
    foot (where it meets the floor) lies 1.4 m ahead, in view. motion_node's climbable-ground rule
    runs on each depth frame's own points: the flight connects to the floor at its foot and is
    climbable ground, so the step goes (live, unloaded: 0 refusals, success). Batch judged the
    rule on the ground within 0.75 m of base_link only, never saw the foot, kept the flight's side
    as a wall (26,890 depth points 0.12 m ahead) and refused 28 steps. Batch now judges it on the
    cells the frame sees (the camera's field of view out to its depth range)."""
    params = sim_profile()[0]
    cfg = MotionConfig.from_params(params)
    w, loop = _loop_at(havln_data, "aayBHfsNo7d", (16.25, -4.89, 3.49, math.radians(164.0)))
    assert (w._support.kind, w._support.index) == ("floor", 5)
    live, batch = _live_stairs_obstacles(w), loop.obstacles()
    batch.people = []
    hz = [
        forward_hazard(o, cfg.footprint, FORWARD_STEP_M, cfg.front_margin, cfg.side_margin, cfg.personal_space, cfg.min_points)
        for o in (live, batch)
    ]
    assert hz == [None, None], hz
    # the flight's surface is in the camera's view, in the obstacle band, and counts as ground in both
    from test_sim_render import rendered_motion_depth

    xyz, _ = rendered_motion_depth(w.scene, w.camera_pose, w.t)
    ahead = xyz[(xyz[:, 0] > 0.5) & (xyz[:, 0] < 0.8) & (np.abs(xyz[:, 1]) < 0.2)]
    assert len(ahead) > 500 and ahead[:, 2].min() > params["obstacle_min_height_m"] + 0.1


def _frame_map_xy(world, pts):
    """(N, 2) base_link points of ``world``'s TRUE pose in map xy, m."""
    x, y, _, yaw = world.pose
    c, s = math.cos(yaw), math.sin(yaw)
    return np.stack([x + c * pts[:, 0] - s * pts[:, 1], y + s * pts[:, 0] + c * pts[:, 1]], axis=1)


def test_batch_walls_on_stairs_are_the_walls_the_renderer_draws(havln_data):
    """val_seen 5384 (scan VFuaQ6m2Qom), at the foot of ramp 18 heading up the flight. Batch's walls
    on stairs were the boundary of Scene.region (the union of the free spaces of the floors the
    flight joins); the renderer draws each floor's own walls at its height (render.scene_floors),
    and the end of one of the lower floor's (6) walls juts into the flight 0.64 m ahead (the
    renderer extends wall ends so corners close). Rendered depth blocked the step there at 0.22 m;
    batch's frame had no point on that wall end (22 % of the rendered points within 1 m had no
    batch point within 5 cm) and let the step go."""
    params = sim_profile()[0]
    cfg = MotionConfig.from_params(params)
    w, loop = _loop_at(havln_data, "VFuaQ6m2Qom", (-13.30, 19.30, -0.39, -1.8675))
    assert (w._support.kind, w._support.index) == ("ramp", 18)
    live, batch = _live_stairs_obstacles(w), loop.obstacles()
    batch.people = []
    near = live.points[np.hypot(live.points[:, 0], live.points[:, 1]) < 1.0]
    assert len(near) > 1000
    gap = np.hypot(near[:, None, 0] - batch.points[None, :, 0], near[:, None, 1] - batch.points[None, :, 1]).min(axis=1)
    assert (gap > 0.05).mean() < 0.01, f"{(gap > 0.05).sum()} of {len(near)} rendered points have no batch point within 5 cm"
    hz = [
        forward_hazard(o, cfg.footprint, FORWARD_STEP_M, cfg.front_margin, cfg.side_margin, cfg.personal_space, cfg.min_points)
        for o in (live, batch)
    ]
    assert hz[0] is not None and hz[1] is not None, hz
    assert hz[1].distance_m == pytest.approx(hz[0].distance_m, abs=0.05)
    # the point the step stops at is on the lower floor's drawn wall
    from havln_robot.sim.render import cached_scene_floors, wall_faces

    lower = next(g for g in cached_scene_floors(w.scene) if g.index == 6)
    faces = shapely.linestrings(wall_faces(lower.walls)[0].reshape(-1, 2, 2))
    ahead = batch.points[(batch.points[:, 0] > 0.3) & (np.abs(batch.points[:, 1]) < 0.25)]
    assert len(ahead) and shapely.distance(shapely.multilinestrings(faces), shapely.points(_frame_map_xy(w, ahead))).min() < 0.01


def test_batch_does_not_see_a_lower_floors_wall_under_a_slab(havln_data):
    """vyrNrziPKCB, on ramp 48 2.3 m up: floor 2's walls (drawn -0.01 to 2.49 m) reach into the
    obstacle band, but where they pass near the flight floor 7's slab (2.58 m) covers their tops.
    Rendered depth has nothing within 2.8 m to the west; batch keeps only the part of a wall that
    shows above the drawn ground in front of it. Live walked up the flight: the landing 0.25 m above
    the feet, whose flight is now under the camera's blind zone, was seen as the flight's top from
    0.3 m down it (a single frame cannot tell it from a box top, motion/safety.py climbable_mask)."""
    w, loop = _loop_at(havln_data, "vyrNrziPKCB", (3.80, -10.20, 2.33, math.pi))
    assert (w._support.kind, w._support.index) == ("ramp", 48)
    assert 2 in loop._ramp_floors()
    live = _live_walked_obstacles(w, 0.3)
    x, y, z, yaw = w._x, w._y, w._z, w._yaw
    _place(w, x - 0.3 * math.cos(yaw), y - 0.3 * math.sin(yaw), z - 0.18, yaw)  # batch walked up the flight too
    loop._terrain_points()
    _place(w, x, y, z, yaw)
    batch = loop.obstacles()
    assert np.hypot(live.points[:, 0], live.points[:, 1]).min() > 2.5
    assert not len(batch.points) or np.hypot(batch.points[:, 0], batch.points[:, 1]).min() > 1.2


def test_live_side_can_be_read_back_from_a_recorded_json_file(tmp_path, capsys):
    import json

    from havln_robot.bench.agreement import main, read_live_log

    rec = tmp_path / "agreement.json"
    row = {"success": True, "ne": 0.34, "collisions": 1, "refused": 2, "actions": 42, "note": ""}
    rec.write_text(
        json.dumps(
            {
                "rows": [
                    {"episode_id": "5593", "kind": "expert", "batch": row, "live": row},
                    {"episode_id": "711", "kind": "model", "batch": row, "live": None},
                ]
            }
        )
    )
    got = read_live_log(rec)
    assert set(got) == {("5593", "expert")}
    assert (got[("5593", "expert")].ne, got[("5593", "expert")].refused) == (0.34, 2)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": [{"episode_id": "5593", "live": {"success": True}}]}))
    with pytest.raises(ValueError, match="bench agreement --json"):
        read_live_log(bad)
    assert main(["--episodes", "1", "--kinds", "expert", "--live-log", str(bad)]) == 2
    assert "--live-log:" in capsys.readouterr().err


_LIVE = {"success": True, "ne": 0.34, "collisions": 1, "refused": 2, "actions": 42, "note": "", "load": 1.2}


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"rows": [1, 2]}', "rows[0] must be an object"),
        ('{"rows": {"a": 1}}', '"rows" must be a list'),
        ('{"rows": [' + "[" * 100_000 + "]}", "nests too deeply"),
        ({"collisions": float("inf")}, "rows[0].live.collisions"),
        ({"actions": 1e400}, "rows[0].live.actions"),
        ({"success": "false"}, "rows[0].live.success: 'false' is not true or false"),
        ({"collisions": -5}, "rows[0].live.collisions: -5"),
        ({"refused": 2.7}, "rows[0].live.refused: 2.7"),
        ({"ne": "abc"}, "rows[0].live.ne: 'abc'"),
        ({"ne": True}, "rows[0].live.ne: True"),
        ({"note": [1, 2]}, "rows[0].live.note"),
        ({"success": None}, "rows[0].live.success"),
    ],
)
def test_a_live_log_with_wrong_types_is_refused_naming_the_row_and_field(tmp_path, text, named):
    """A recorded --json edited by hand (or by another tool) is refused with the row and field, never
    read as other values ("false" as a success, -5 collisions) and never a traceback."""
    import json

    from havln_robot.bench.agreement import read_live_log

    if isinstance(text, dict):
        text = json.dumps({"rows": [{"episode_id": "5593", "kind": "model", "live": {**_LIVE, **text}}]}, allow_nan=True)
        text = text.replace("Infinity", "1e999")
    f = tmp_path / "live.json"
    f.write_text(text if text.startswith("{") else "{" + text)
    with pytest.raises(ValueError, match=re.escape(named)):
        read_live_log(f)


def test_a_live_log_is_read_from_a_regular_file_with_or_without_bom_and_bad_lines_are_named(tmp_path):
    """The --json saved by an editor with a byte-order mark is the same file; a pipe or device is
    refused before it is read (a FIFO with no writer would hang, /dev/zero would fill memory); a
    printed line whose NE is not a number is named by line."""
    import json
    import os

    from havln_robot.bench.agreement import read_live_log

    f = tmp_path / "bom.json"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps({"rows": [{"episode_id": "5593", "kind": "model", "live": _LIVE}]}).encode())
    assert read_live_log(f)[("5593", "model")].actions == 42
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        read_live_log(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        read_live_log(Path("/dev/zero"))
    log = tmp_path / "run.log"
    log.write_text(
        "header\n  episode   5593 model     batch success NE  0.26 coll 0 refused 0 (42 actions) | live success NE  abc coll 0 refused 0 (42 actions)\n"
    )
    with pytest.raises(ValueError, match=r"run.log: line 2: NE 'abc'"):
        read_live_log(log)


def test_a_live_log_without_live_rows_is_refused_with_the_fix(tmp_path, capsys):
    """A --live-log that holds no live row at all (another file) is bad input, named before any
    data is loaded: exit 2 naming the file and the fix, not an empty table."""
    from havln_robot.bench.agreement import main

    other = tmp_path / "notes.txt"
    other.write_text("root:x:0:0:root:/root:/bin/bash\n")
    assert main(["--episodes", "1", "--kinds", "reference", "--live-log", str(other)]) == 2
    err = capsys.readouterr().err
    assert str(other) in err and "holds no live row" in err and "earlier 'bench agreement' run" in err


def test_json_over_the_live_log_is_refused_before_it_loses_the_recorded_rows(tmp_path):
    """--json naming the --live-log file would rewrite hours of recorded live rows after the first
    episode: refused before any work, naming --json, and the file is left as it was."""
    from havln_robot.bench.agreement import main
    from havln_robot.paths import OutputPathError

    log = tmp_path / "live.log"
    text = "  episode   5593 expert    batch success NE  0.26 coll 0 refused 0 (42 actions) | live success NE  0.34 coll 1 refused 0 (42 actions)\n"
    log.write_text(text)
    with pytest.raises(OutputPathError, match="--json .* is also an input"):
        main(["--episodes", "1", "--kinds", "expert", "--live-log", str(log), "--json", str(log)])
    assert log.read_text() == text


def test_a_live_log_without_matching_rows_is_refused_with_the_fix(havln_data, tmp_path, capsys):
    """A --live-log whose rows are of other inputs (another run's --kinds) is refused with the
    --kinds/--offset/--episodes to give, not turned into an empty table."""
    from havln_robot.bench.agreement import main

    log = tmp_path / "expert.log"
    log.write_text(
        "  episode   5593 expert    batch success NE  0.26 coll 0 refused 0 (42 actions) | live success NE  0.34 coll 1 refused 0 (42 actions)\n"
    )
    assert main(["--episodes", "1", "--kinds", "reference", "--live-log", str(log)]) == 2
    assert "1 row(s) of expert" in capsys.readouterr().err


def test_a_long_agreement_run_keeps_its_rows_when_live_fails_or_is_stopped(havln_data, tmp_path, monkeypatch, capsys):
    """Hours of live episodes must not be lost: the --json file is rewritten after every row (a run
    stopped mid-way keeps what it measured); a live episode whose graph reports no pose (NE unknown,
    NaN) is written as null and read back as NaN; one whose graph does not come up (ReplayError) has
    no live outcome and the run goes on; a live model demo that hangs is stopped and recorded."""
    import json
    import math
    import subprocess

    from havln_robot.bench import agreement as ag
    from havln_robot.challenge.replay import ReplayError

    calls = []

    def live(eid, seq, ep_file, seed, rtf):
        calls.append(eid)
        if len(calls) == 1:
            return ag.Outcome(False, math.nan, 0, 3, len(seq), "aborted: robot silent")
        if len(calls) == 2:
            raise ReplayError("embedded motion_node failed (RuntimeError: boom); every node was stopped")
        raise KeyboardInterrupt

    monkeypatch.setattr(ag, "_live_replay", live)
    out = tmp_path / "run.json"
    with pytest.raises(KeyboardInterrupt):
        ag.main(["--episodes", "3", "--kinds", "reference", "--json", str(out)])
    doc = json.loads(out.read_text())
    assert [r["episode_id"] for r in doc["rows"]] == calls[:2] and doc["summary"] is None
    first, second = doc["rows"]
    assert first["live"]["ne"] is None and first["live"]["refused"] == 3
    assert second["live"] is None and "boom" in second["live_error"]
    assert "live: no outcome (embedded motion_node failed" in capsys.readouterr().out
    rec = ag.read_live_log(out)
    assert set(rec) == {(calls[0], "reference")} and math.isnan(rec[(calls[0], "reference")].ne)
    # every live episode without an outcome: nothing to compare, exit 2
    monkeypatch.setattr(ag, "_live_replay", lambda *a: (_ for _ in ()).throw(ReplayError("rclpy is not available")))
    assert ag.main(["--episodes", "1", "--kinds", "reference"]) == 2
    assert "1 live episode(s) gave no outcome" in capsys.readouterr().err

    def hang(*a, **k):
        raise subprocess.TimeoutExpired(a[0], k.get("timeout"))

    monkeypatch.setattr(subprocess, "run", hang)
    got = ag._live_model("5593", tmp_path / "eps.json", "small_panoramic", 0, tmp_path / "demo")
    assert not got.success and math.isnan(got.ne) and "did not end within 3600 s" in got.note


def test_a_panorama_sweep_turns_once_in_place_and_takes_its_time():
    """agent_node turns the robot once for each panorama (live, the model spent ~10 s per
    decision sweeping, batch none, and people walked into the live robot 41 times in 18 episodes,
    0 in batch). ClosedLoop.sweep ticks the executor's SWEEP primitive: one turn in place, its sim
    time passes, and it is no challenge action."""
    from havln_robot.eval import panorama_sweep_action
    from havln_robot.sim.closed_loop import ClosedLoopError

    w = World(Scene.builtin(), _episode(start=(0.0, 0.5, 0.0)), Crowd([]), seed=0)
    x0, y0, _, yaw0 = w.pose
    t0 = w.t
    st = w.loop.sweep(panorama_sweep_action() or "SWEEP_LEFT")
    assert st.result is not None and st.result.outcome == "ok", st.result
    assert w.actions == [] and w.loop.refused == 0
    assert w.t - t0 > 5.0  # a 360 deg turn at the sweep rate (config/sim.yaml), not an instant
    assert abs(st.rotated_rad) < math.radians(15) and math.hypot(w.pose[0] - x0, w.pose[1] - y0) < 0.05
    with pytest.raises(ClosedLoopError, match="SWEEP_LEFT"):
        w.loop.sweep("TURN_LEFT")


def test_batch_panorama_views_are_the_frames_agent_node_would_choose():
    """The model's batch and live decisions parted from the first panorama (val_seen 6525
    turned right 8 times in batch, right twice then left live). Batch rendered every view at its
    exact heading from where the sweep ended; agent_node uses the camera frame nearest each view
    heading by the yaw the robot BELIEVES, from wherever the robot was then, within
    view_tolerance_deg. Batch now chooses with the same SweepSelector: 12 views, each a frame whose
    believed heading is within the tolerance of its view heading, the view's TRUE heading being
    where the camera really looked (odometry/IMU noise: not exact), each at its own sim time."""
    from havln_robot.eval import _Observer, panorama_view_tolerance_deg

    w = World(Scene.builtin(), _episode(start=(0.0, 0.5, 0.0)), Crowd([]), seed=3)
    tol = panorama_view_tolerance_deg()
    assert 0.0 < tol <= 1.0
    yaw_start = w.pose[3]
    t0 = w.t
    w.loop.sweep("SWEEP_LEFT", views=12, tolerance_deg=tol)
    views = w.loop.sweep_views
    assert views is not None and len(views) == 12
    got = [v for v in views if v is not None]
    assert len(got) >= 10, views  # a 30 Hz camera at the sweep rate gives nearly every view a frame
    times = [v[1] for v in got]
    assert times == sorted(times) and t0 <= times[0] and times[-1] <= w.t and times[-1] - times[0] > 4.0
    for i, v in enumerate(views):
        if v is None:
            continue
        (_, _, _, yaw_true), _, believed = v
        target = math.radians(30.0 * i)
        assert abs(math.remainder(believed - target, 2 * math.pi)) <= math.radians(tol) + 1e-9
        assert abs(math.remainder(yaw_true - yaw_start - target, 2 * math.pi)) < math.radians(5.0)
    obs_world = _Observer(w, 12)
    try:
        obs = obs_world.observe(0, 12, sweep=views)
    finally:
        obs_world.close()
    assert obs.rgb.shape[0] == 12
    for i, v in enumerate(views):
        want = math.radians(30.0 * i) if v is None else v[2]
        assert abs(math.remainder(float(obs.headings[i]) - want, 2 * math.pi)) < 1e-5
    # a sweep without views records nothing; a stopped sweep is retaken: every view None
    w.loop.sweep("SWEEP_LEFT")
    assert w.loop.sweep_views is None


def test_batch_tells_the_policy_each_outcome_and_ends_a_blocked_episode():
    """Agent_node tells the policy how each action ended (``on_action_result``; the
    shipped model drops a blocked macro) and ends the episode after max_consecutive_blocked
    blocked actions in a row; batch did neither (2603: 38 refusals in 47 batch actions, 0 live).
    run_episode now does both (agent_node's episode runner; its blocked wait: test_agent_sim_io)."""
    from havln_robot.eval import agent_max_consecutive_blocked, run_episode

    class WallWalker:
        observes = False
        views = 1

        def __init__(self):
            self.heard = []

        def reset(self, instruction):
            pass

        def act(self, obs):
            return "MOVE_FORWARD"

        def on_action_result(self, action, outcome):
            self.heard.append((action, outcome))

    limit = agent_max_consecutive_blocked()
    assert limit >= 2
    w = World(Scene.builtin(), _episode(start=(0.0, 0.5, 0.0)), Crowd([]), seed=0)
    p = WallWalker()
    acts = run_episode(w, p)
    assert w.reason == "blocked" and len(p.heard) == len(acts) - 1 and acts[-1] == "STOP" and w.stopped
    assert [o for _, o in p.heard[-limit:]] == ["collision"] * limit and w.loop.refused >= limit
    assert p.heard[0] == ("MOVE_FORWARD", "ok")


def test_a_lower_storeys_wall_does_not_stand_across_the_flight_above_it(havln_data):
    """val_seen 5550 (scan E9uDoFAP3SH), on ramp 1 turned 15 deg left (episodes 40-79 of
    `bench agreement`): floor 2, 1.26 m below the flight's foot, has its walls drawn 2.5 m tall, and
    one of them stood across the flight's corridor, 0.2 m in front of the camera -- live refused 44
    steps ("20,126 depth points 0.00 m ahead") where batch, which reads only the walls of the
    flight's own floors, walked on. Now that wall ends under the treads: neither world sees a hazard."""
    params = sim_profile()[0]
    cfg = MotionConfig.from_params(params)
    w, loop = _loop_at(havln_data, "E9uDoFAP3SH", (-0.576, -11.616, -2.296, math.radians(-78.34)))
    assert w._support.kind == "ramp" and w._support.index == 1
    for obs in (_live_stairs_obstacles(w), loop.obstacles()):
        obs.people = []
        hz = forward_hazard(obs, cfg.footprint, FORWARD_STEP_M, cfg.front_margin, cfg.side_margin, cfg.personal_space, cfg.min_points)
        assert hz is None, hz


@pytest.mark.parametrize(("scan", "floor", "ramp"), [("E9uDoFAP3SH", 2, 1), ("1pXnuDYAj8r", 0, 1)])
def test_walls_end_under_the_flights_they_would_rise_through(havln_data, scan, floor, ramp):
    """The drawn walls (renderer, Gazebo world, batch on stairs: `scene.drawn_walls`) never show above
    a flight of stairs, and a lower storey keeps its wall under the flight (capped, not removed: a
    robot on that storey still sees it where the walking rule has it). Cases: val_seen 5550 (floor
    2's wall across ramp 1) and 7163 (floor 0's wall through ramps 0 and 1, 0.35-0.60 m above floor
    3 beside the flight down: live remembered it and refused five steps)."""
    from havln_robot.sim.render import cached_scene_floors
    from havln_robot.sim.scene import STAIR_HEADROOM_M, ramp_z_range

    scene = Scene.load(scan, havln_data / "connectivity")
    for g in cached_scene_floors(scene):
        tops = g.wall_tops()
        mid = g.walls.mean(axis=1)
        # every flight the floor's walls reach above, below a storey's headroom over it
        for r in (r for r in scene.ramps if ramp_z_range(r)[0] < g.z + scene.wall_height and g.z < ramp_z_range(r)[1] + STAIR_HEADROOM_M):
            inner = r.polygon.buffer(-0.06)
            for i in np.flatnonzero(shapely.contains_xy(inner, mid[:, 0], mid[:, 1])):
                ground = min(float(r.z_at(*g.walls[i, 0])), float(r.z_at(*g.walls[i, 1])))
                assert tops[i] <= ground + 1e-9, (g.index, i, tops[i], ground)
    g = next(g for g in cached_scene_floors(scene) if g.index == floor)
    mid = g.walls.mean(axis=1)
    under = shapely.contains_xy(scene.ramps[ramp].polygon.buffer(-0.06), mid[:, 0], mid[:, 1])
    assert under.any(), "the wall under the flight is kept"
    assert (g.wall_tops()[under] < g.z + scene.wall_height - 0.01).all()  # capped at the flight
