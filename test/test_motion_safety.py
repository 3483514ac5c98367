"""Depth free-space, personal-space and IMU checks on synthetic data with known geometry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from havln_robot import actions as A
from havln_robot.motion.checks import GyroYaw, StallDetector, jolt_check, slip_check
from havln_robot.motion.executor import Executor, MotionConfig
from havln_robot.motion.safety import (
    CameraMount,
    Footprint,
    Intrinsics,
    ObstacleMemory,
    Obstacles,
    Person,
    PersonDetector,
    ViewRegion,
    depth_to_points,
    forward_hazard,
    load_person_detector,
    obstacle_points,
    register_person_detector,
    turn_hazard,
    unregister_person_detector,
)

K = Intrinsics.from_hfov(320, 240, 69.4)  # D435i colour HFOV
MOUNT = CameraMount(x=0.30, y=0.0, z=0.41, pitch=0.0)
FP = Footprint()


def render_depth(wall_m=None, box=None, table=None, k=K, mount=MOUNT, h=240, w=320):
    """Depth (m, along the optical axis) of a level camera seeing the floor, optionally a wall
    ``wall_m`` ahead of the camera, a box (dist_m, height_m, half_width_m) or a table top
    (dist_m, height_m) -- by ray casting."""
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    dy = -(u - k.cx) / k.fx  # ray (1, dy, dz) in camera_link per unit of optical depth
    dz = -(v - k.cy) / k.fy
    depth = np.full((h, w), np.inf)
    floor = np.where(dz < 0, mount.z / np.maximum(-dz, 1e-9), np.inf)
    depth = np.minimum(depth, floor)
    if wall_m is not None:
        zc = mount.z + wall_m * dz
        depth = np.where((zc >= 0) & (zc <= 2.5), np.minimum(depth, wall_m), depth)
    if box is not None:
        d, hgt, hw = box
        zc, yc = mount.z + d * dz, d * dy
        depth = np.where((zc >= 0) & (zc <= hgt) & (np.abs(yc) <= hw), np.minimum(depth, d), depth)
    if table is not None:
        d, hgt = table  # a horizontal slab from d to d + 1 m at height hgt (seen from below/edge)
        zc = mount.z + d * dz
        depth = np.where((zc >= hgt - 0.03) & (zc <= hgt), np.minimum(depth, d), depth)
    depth[~np.isfinite(depth)] = 0.0
    return depth.astype(np.float32)


def points(depth, mount=MOUNT):
    return obstacle_points(depth_to_points(depth, K, mount, stride=2, min_m=0.1, max_m=4.0), 0.06, 0.6)


def test_principal_ray_projects_ahead_of_the_mount():
    depth = np.zeros((240, 320), np.float32)
    depth[120, 160] = 1.5  # near the principal point (159.5, 119.5)
    p = depth_to_points(depth, K, MOUNT, stride=1)
    assert p.shape == (1, 3)
    assert p[0, 0] == pytest.approx(0.30 + 1.5, abs=1e-6)
    assert p[0, 1] == pytest.approx(-0.5 * 1.5 / K.fx, abs=1e-6)  # half a pixel right of centre
    assert p[0, 2] == pytest.approx(0.41 - 0.5 * 1.5 / K.fy, abs=1e-6)


def test_pitched_camera_sees_the_floor_at_the_right_distance():
    mount = CameraMount(0.3, 0.0, 0.41, math.radians(-30))  # looking 30 deg down
    d = 0.41 / math.sin(math.radians(30))  # the optical axis meets the floor here
    depth = np.zeros((240, 320), np.float32)
    depth[120, 160] = d
    p = depth_to_points(depth, K, mount, stride=1)
    assert p[0, 2] == pytest.approx(0.0, abs=0.01)
    assert p[0, 0] == pytest.approx(0.3 + d * math.cos(math.radians(30)), abs=0.01)


def test_floor_only_is_free():
    pts = points(render_depth())
    assert len(pts) == 0
    assert forward_hazard(Obstacles(pts), FP, 0.25, 0.15, 0.05, 0.45, 12) is None


def test_wall_within_the_margin_blocks_a_nearer_one_gives_a_partial_step_and_at_2m_nothing():
    ex = Executor(MotionConfig())
    near = ex.start(A.MOVE_FORWARD, 0.0, (0, 0, 0), 0.0, Obstacles(points(render_depth(wall_m=0.2))))
    (r,) = near.results
    assert r.outcome == "collision" and "blocked before start" in r.detail and not ex.busy
    (c,) = near.collisions
    assert c.type == "static" and c.source == "depth" and c.motion_state == "blocked"
    assert c.distance_m == pytest.approx(0.30 + 0.2 - 0.35, abs=0.01)  # wall to the nose: 0.15 m, step + margin needs 0.35
    # wall 0.35 m ahead of the nose: a 0.24 m step keeps the 0.10 m front margin (partial, not refused)
    part = Executor(MotionConfig()).start(A.MOVE_FORWARD, 0.0, (0, 0, 0), 0.0, Obstacles(points(render_depth(wall_m=0.4))))
    assert not part.results and part.cmd[0] > 0
    far = ex.start(A.MOVE_FORWARD, 0.0, (0, 0, 0), 0.0, Obstacles(points(render_depth(wall_m=2.0))))
    assert not far.results and ex.busy and far.cmd[0] > 0


def test_box_blocks_but_table_top_above_the_body_does_not():
    box = points(render_depth(box=(0.42, 0.35, 0.1)))
    hz = forward_hazard(Obstacles(box), FP, 0.25, 0.15, 0.05, 0.45, 12)
    assert hz is not None and hz.type == "static"
    table = points(render_depth(table=(0.4, 0.75)))
    assert forward_hazard(Obstacles(table), FP, 0.25, 0.15, 0.05, 0.45, 12) is None


def test_low_box_in_the_blind_zone_is_remembered():
    # 0.15 m box 1.0 m ahead of the camera: visible now; after 0.6 m of walking it is 0.4 m ahead,
    # below the lower edge of the field of view (~0.2 m at that range).
    seen = points(render_depth(box=(1.0, 0.15, 0.1)))
    assert len(seen) > 12
    later = points(render_depth(box=(0.4, 0.15, 0.1)))
    assert len(later) == 0  # the camera alone cannot see it any more
    mem = ObstacleMemory(keep_s=3.0)
    mem.add(0.0, seen, (0.0, 0.0, 0.0))
    remembered = mem.points(2.0, (0.6, 0.0, 0.0))
    hz = forward_hazard(Obstacles(np.concatenate([later, remembered])), FP, 0.25, 0.15, 0.05, 0.45, 12)
    assert hz is not None and hz.distance_m == pytest.approx(0.30 + 1.0 - 0.6 - 0.35, abs=0.03)
    assert len(mem.points(3.5, (0.6, 0.0, 0.0))) == 0  # forgotten after keep_s
    mem.add(0.0, seen, (0.0, 0.0, math.pi / 2))  # seen while facing +y: stored in odom, rotated back
    assert np.allclose(mem.points(0.0, (0.0, 0.0, math.pi / 2)).mean(axis=0), seen.mean(axis=0), atol=0.05)


def test_memory_forgets_what_the_camera_sees_gone():
    view = ViewRegion.from_camera(K, 320, 240, MOUNT, 0.06, 4.0)
    assert 0.5 < view.blind_m < 0.8  # 0.35 m drop over a 27.5 deg lower half-FOV
    mem = ObstacleMemory(keep_s=10.0)
    box = points(render_depth(box=(1.0, 0.15, 0.1)))
    mem.add(0.0, box, (0.0, 0.0, 0.0), view)
    mem.add(0.1, points(render_depth()), (0.0, 0.0, 0.0), view)  # box removed, floor in view
    assert len(mem.points(0.2, (0.0, 0.0, 0.0))) == 0
    mem.add(0.0, box, (0.0, 0.0, 0.0), view)
    mem.add(0.1, np.zeros((0, 2), np.float32), (0.6, 0.0, 0.0), view)  # walked up: box now in the blind zone
    assert len(mem.points(0.2, (0.6, 0.0, 0.0))) > 12


def test_memory_cells_seen_again_keep_their_place_and_take_the_newest_frame():
    """One row per 5 cm cell: a cell seen again keeps its place and takes the newest frame's point,
    time, count (at most MEMORY_CELL_MAX_POINTS) and top; a cell whose weighted count rounds to 0
    is not remembered; cells expire keep_s after their newest frame."""
    from havln_robot.motion.safety import MEMORY_CELL_MAX_POINTS

    mem = ObstacleMemory(keep_s=1.0)
    a = np.array([[1.01, 0.01, 0.3], [1.02, 0.02, 0.5], [2.01, 0.01, 0.2]])
    mem.add(0.0, a, (0.0, 0.0, 0.0))
    pts, n = mem.cells(0.0, (0.0, 0.0, 0.0))
    assert len(mem) == 2 and n.tolist() == [2.0, 1.0] and pts[0] == pytest.approx([1.01, 0.01])
    b = np.array([[2.04, 0.04, 0.1], [3.01, 0.01, 0.1], [1.03, 0.03, 0.4], [4.01, 0.01, 0.1]])
    mem.add(0.5, b, (0.0, 0.0, 0.0), weights=np.array([80.0, 3.0, 7.0, 0.2]))
    pts, n = mem.cells(0.5, (0.0, 0.0, 0.0))
    # rows: the 1 m cell (kept, now 1.03 / 7 points), the 2 m cell (kept, capped), the 3 m cell (new); 4 m: 0.2 -> 0 points
    assert pts[:, 0] == pytest.approx([1.03, 2.04, 3.01])
    assert n.tolist() == [7.0, float(MEMORY_CELL_MAX_POINTS), 3.0]
    mem.add(1.2, np.array([[3.02, 0.02]]), (0.0, 0.0, 0.0))
    pts, n = mem.cells(1.6, (0.0, 0.0, 0.0))  # the t=0.5 cells are 1.1 s old: gone
    assert len(mem) == 1 and pts[0] == pytest.approx([3.02, 0.02]) and n.tolist() == [1.0]


def test_box_beside_the_corridor_is_free():
    pts = np.array([[0.5, 0.4]] * 50, np.float32)  # 0.4 m to the left, corridor half width 0.205
    assert forward_hazard(Obstacles(pts), FP, 0.25, 0.15, 0.05, 0.45, 12) is None


def test_few_noise_points_do_not_block():
    pts = np.array([[0.5, 0.0]] * 5, np.float32)
    assert forward_hazard(Obstacles(pts), FP, 0.25, 0.15, 0.05, 0.45, 12) is None


def test_personal_space_forward():
    def hz(x, y):
        return forward_hazard(Obstacles(None, [Person(x, y, 3)]), FP, 0.25, 0.15, 0.05, 0.45, 12)

    h = hz(1.0, 0.0)  # 0.4 m from the footprint after the step
    assert h is not None and h.type == "human" and h.human_id == 3 and h.distance_m == pytest.approx(0.4)
    assert hz(1.1, 0.0) is None  # 0.5 m after the step
    assert hz(-0.6, 0.0) is None  # behind: the step moves away
    assert hz(0.0, 0.5) is None  # beside: the step does not approach


def test_turn_sweeps_the_front_corner():
    seg = np.stack([np.linspace(0.2, 0.5, 40), np.full(40, 0.2)], axis=1).astype(np.float32)  # short wall front-left
    left = turn_hazard(Obstacles(seg), FP, math.radians(15), 0.03, 0.3, 12)
    right = turn_hazard(Obstacles(seg), FP, -math.radians(15), 0.03, 0.3, 12)
    assert left is not None and left.type == "static"
    assert right is None


def test_turn_near_person():
    near = Obstacles(None, [Person(0.45, 0.35, 1)])  # by the front-left corner
    assert turn_hazard(near, FP, math.radians(15), 0.03, 0.3, 12) is not None
    assert turn_hazard(near, FP, -math.radians(15), 0.03, 0.3, 12) is None
    assert turn_hazard(Obstacles(None, [Person(2.0, 0.0, 1)]), FP, math.radians(15), 0.03, 0.3, 12) is None


def test_gyro_bias_is_learned_while_standing_still():
    rng = np.random.default_rng(0)
    learned, naive = GyroYaw(bias_time_s=2.0), GyroYaw(bias_time_s=2.0)
    t = 0.0
    for _ in range(600):  # 3 s standing at 200 Hz, bias 0.02 rad/s
        t += 0.005
        z = 0.02 + rng.normal(0, 0.003)
        learned.add(t, z, stationary=True)
        naive.add(t, z, stationary=False)
    assert learned.bias == pytest.approx(0.02, abs=0.002)
    y0l, y0n = learned.yaw, naive.yaw
    for _ in range(400):  # 2 s turning at 0.5 rad/s
        t += 0.005
        z = 0.5 + 0.02 + rng.normal(0, 0.003)
        learned.add(t, z)
        naive.add(t, z)
    assert learned.yaw - y0l == pytest.approx(1.0, abs=0.005)
    assert naive.yaw - y0n == pytest.approx(1.04, abs=0.005)


def test_gyro_gap_is_not_integrated():
    g = GyroYaw()
    g.add(0.0, 1.0)
    g.add(0.01, 1.0)
    g.add(5.0, 1.0)  # 5 s dropout
    assert g.yaw == pytest.approx(0.01)


def test_slip_stall_jolt_primitives():
    assert slip_check(math.radians(15), math.radians(14), math.radians(4)) is None
    assert slip_check(math.radians(15), math.radians(5), math.radians(4)) == pytest.approx(math.radians(10))
    assert slip_check(math.pi - 0.01, -math.pi + 0.01, 0.1) is None  # wrap-around is agreement
    s = StallDetector(0.5, 0.01)
    assert not any(s.update(t * 0.02, 0.1 * t * 0.02, True) for t in range(50))  # moving at 0.1 m/s
    s.reset()
    flags = [s.update(t * 0.02, 0.0, True) for t in range(40)]
    assert not flags[20] and flags[-1]  # stalled after 0.5 s
    assert not s.update(1.0, 0.0, False)
    assert jolt_check(3.0, 4.0, 10.0) is None and jolt_check(12.0, 0.0, 10.0) == 12.0
    assert jolt_check(100.0, 0.0, 0.0) is None


class _Det:
    def detect(self, rgb, depth_m, k, mount):
        return [Person(1.0, 0.0, 0)]


def test_person_detector_interface():
    register_person_detector("test_det", _Det)
    try:
        det = load_person_detector("test_det")
        assert isinstance(det, PersonDetector)
        assert det.detect(None, None, K, MOUNT)[0].x == 1.0
        det = load_person_detector("shipped", {"shipped": _Det})  # the caller's built-in table
        assert det.detect(None, None, K, MOUNT)[0].x == 1.0
    finally:
        unregister_person_detector("test_det")
    with pytest.raises(ValueError, match="not a known detector"):
        load_person_detector("nonsense")
    with pytest.raises(ValueError, match="detect"):
        load_person_detector("footprint", {"footprint": Footprint})
    with pytest.raises(ValueError, match="failed to start"):
        load_person_detector("broken", {"broken": lambda: 1 / 0})


class _Trap:
    """Set when a params-file string made the loader import and call code."""

    called = False


def _trap():
    _Trap.called = True
    return _Det()


def test_person_detector_from_a_params_file_never_imports_code(monkeypatch, tmp_path):
    """A params file names a detector, never code: ``"module:Class"`` strings were imported and
    called (``os:fork`` forked motion_node, ``pdb:set_trace`` stopped it at a debugger prompt)."""
    import sys

    monkeypatch.setattr(sys.modules[__name__], "_trap", _trap)
    for spec in (f"{__name__}:_trap", "os:getpid", "this:s", "havln_robot.perception.people:DepthPeopleTracker"):
        with pytest.raises(ValueError, match="not a known detector") as e:
            load_person_detector(spec)
        assert "entry point" in str(e.value) and "never imported" in str(e.value)
    assert not _Trap.called
    # a module named in the spec is not even imported
    mod = tmp_path / "planted_detector_mod.py"
    mod.write_text("import pathlib; pathlib.Path(__file__).with_suffix('.ran').touch()\nclass D:\n    def detect(self, *a): return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="not a known detector"):
        load_person_detector("planted_detector_mod:D")
    assert not mod.with_suffix(".ran").exists() and "planted_detector_mod" not in sys.modules


def test_person_detector_offered_by_an_installed_entry_point(monkeypatch):
    from importlib.metadata import EntryPoint

    from havln_robot.motion import safety

    ep = EntryPoint(name="lab_det", value=f"{__name__}:_Det", group=safety.PERSON_DETECTOR_GROUP)
    monkeypatch.setattr(safety, "_installed_detectors", lambda: {"lab_det": ep})
    assert load_person_detector("lab_det").detect(None, None, K, MOUNT)[0].x == 1.0
    with pytest.raises(ValueError, match=r"known: lab_det"):
        load_person_detector("other")


DISC = Footprint(radius=0.383)  # the embedded simulator's contact model


def test_disc_footprint_corridor():
    beside = np.stack([np.linspace(0.0, 0.6, 40), np.full(40, 0.41)], axis=1).astype(np.float32)  # wall 0.41 m to the left
    assert forward_hazard(Obstacles(beside), DISC, 0.25, 0.15, 0.05, 0.45, 12) is not None  # 0.41 < 0.383 + 0.05
    assert forward_hazard(Obstacles(beside), FP, 0.25, 0.15, 0.05, 0.45, 12) is None  # the 0.31 m wide body passes
    ahead = np.array([[0.383 + 0.25 + 0.05, 0.0]] * 20, np.float32)
    far = np.array([[0.383 + 0.25 + 0.2, 0.0]] * 20, np.float32)
    assert forward_hazard(Obstacles(ahead), DISC, 0.25, 0.15, 0.05, 0.45, 12) is not None
    assert forward_hazard(Obstacles(far), DISC, 0.25, 0.15, 0.05, 0.45, 12) is None
    behind = np.array([[-0.5, 0.0]] * 20, np.float32)
    assert forward_hazard(Obstacles(behind), DISC, 0.25, 0.15, 0.05, 0.45, 12) is None


def test_disc_turns_sweep_nothing_and_person_distances():
    wall = np.array([[0.40, 0.0]] * 50, np.float32)
    assert turn_hazard(Obstacles(wall), DISC, math.radians(15), 0.03, 0.3, 12) is None
    assert DISC.distance(1.0, 0.0) == pytest.approx(1.0 - 0.383)
    assert DISC.distance(1.0, 0.0, reach=0.25) == pytest.approx(0.75 - 0.383)
    h = forward_hazard(Obstacles(None, [Person(0.383 + 0.25 + 0.4, 0.0, 2)]), DISC, 0.25, 0.15, 0.05, 0.45, 12)
    assert h is not None and h.distance_m == pytest.approx(0.4)


def test_orientation_yaw_survives_dropped_messages_and_wraps():
    g = GyroYaw(bias_time_s=1.0)
    t, yaw_abs = 0.0, math.pi - 0.2
    for _ in range(200):  # 2 s standing, orientation drifting at 0.01 rad/s (integrated gyro bias)
        t += 0.01
        yaw_abs += 0.01 * 0.01
        g.add_orientation(t, (yaw_abs + math.pi) % (2 * math.pi) - math.pi, stationary=True)
    assert g.bias == pytest.approx(0.01, abs=1e-4)
    y0 = g.yaw
    for i in range(100):  # turn +0.5 rad in 1 s across the +-pi seam, keeping only every 7th message
        t += 0.01
        yaw_abs += 0.5 * 0.01 + 0.01 * 0.01
        if i % 7 == 0 or i == 99:
            g.add_orientation(t, (yaw_abs + math.pi) % (2 * math.pi) - math.pi)
    assert g.yaw - y0 == pytest.approx(0.5, abs=2e-3)


def test_freeze_detector_same_stamp_or_identical_samples_only_under_command():
    """N consecutive identical stamps or bit-identical samples while commanded."""
    from havln_robot.motion.checks import FreezeDetector

    f = FreezeDetector("odom", 3)
    assert all(f.update((i, 0), (0.0, 0.0), commanded=False) is None for i in range(10))  # standing: not a freeze
    assert f.update((1, 0), (0.0,), True) is None and f.update((2, 0), (0.0,), True) is None
    assert "3 bit-identical samples" in f.update((3, 0), (0.0,), True)
    f.reset()
    assert f.update((5, 0), (1.0,), True) is None and f.update((5, 0), (2.0,), True) is None
    assert "same stamp" in f.update((5, 0), (3.0,), True)
    g = FreezeDetector("imu", 3)
    assert all(g.update((i, 0), (float(i),), True) is None for i in range(10))  # live samples
    assert all(FreezeDetector("x", 0).update((0, 0), (0.0,), True) is None for _ in range(5))  # disabled
