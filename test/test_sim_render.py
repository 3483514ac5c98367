"""Renderer: depth matches the geometry, intrinsics match the FOV, people show up, real scenes render."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import shapely

from havln_robot.sim.render import HUMAN_RADIUS_M, SHIRT_PALETTE, Intrinsics, Renderer, depth_to_mm, floor_texture, wall_texture

CAM_H = 0.4125
CAM_FWD = 0.30


@dataclass
class _Floor:
    index: int
    z: float
    own: object


class BoxRoom:
    """A closed rectangular room [x0, x1] x [y0, y1] on one floor at height z (walls 2.5 m)."""

    name = "box"
    wall_height = 2.5

    def __init__(self, x0=-3.0, x1=3.0, y0=-2.0, y1=2.0, z=0.0):
        self.box = (x0, y0, x1, y1)
        self.floors = [_Floor(0, z, shapely.box(x0, y0, x1, y1))]

    def wall_segments(self, i):
        x0, y0, x1, y1 = self.box
        pts = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
        return np.array([[pts[k], pts[(k + 1) % 4]] for k in range(4)], dtype=np.float64)


@dataclass
class _Human:
    human_id: int


class StillCrowd:
    def __init__(self, positions, headings=None):
        self.p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
        self.h = np.zeros(len(self.p)) if headings is None else np.asarray(headings, dtype=np.float64)
        self.humans = [_Human(i) for i in range(len(self.p))]

    def positions(self, t):
        return self.p

    def headings(self, t):
        return self.h


@pytest.fixture(scope="module")
def room():
    r = Renderer(BoxRoom(), None, camera_height_m=CAM_H, camera_forward_m=CAM_FWD)
    yield r
    r.close()


def test_intrinsics_from_hfov():
    k = Intrinsics.from_hfov(640, 480, 69.4)
    assert k.fx == pytest.approx(320 / math.tan(math.radians(34.7)))
    assert k.fx == k.fy
    assert (k.cx, k.cy) == (319.5, 239.5)
    assert math.degrees(2 * math.atan(320 / k.fx)) == pytest.approx(69.4)
    assert k.vfov_deg == pytest.approx(math.degrees(2 * math.atan(240 / k.fy)))
    assert k.K == [k.fx, 0.0, k.cx, 0.0, k.fy, k.cy, 0.0, 0.0, 1.0]
    assert k.P[:4] == [k.fx, 0.0, k.cx, 0.0] and k.D == [0.0] * 5
    with pytest.raises(ValueError, match="hfov"):
        Intrinsics.from_hfov(640, 480, 180.0)


def test_wall_depth_is_z_distance(room):
    # body at x=-1, facing +x: camera at x = -0.7; inner face of the x=3 wall at 3 - 0.04 (8 cm walls)
    rgb, depth = room.render((-1.0, 0.0, 0.0, 0.0))
    assert rgb.shape == (480, 640, 3) and rgb.dtype == np.uint8
    assert depth.shape == (480, 640) and depth.dtype == np.float32
    expect = 2.96 - (-0.7)
    assert depth[240, 320] == pytest.approx(expect, abs=0.02)
    # z-depth (not range): a pixel off-centre on the same wall, above the floor line, reads the same
    assert depth[200, 120] == pytest.approx(expect, abs=0.02)
    assert np.all(depth > 0)  # closed room: every pixel hits something


def test_yaw_and_pitch(room):
    # facing +y from the centre: wall at y = 2 - 0.04, camera 0.30 m ahead of the body
    _, depth = room.render((0.0, 0.0, 0.0, math.pi / 2))
    assert depth[240, 320] == pytest.approx(1.96 - CAM_FWD, abs=0.02)
    # 30 deg down: the optical axis hits the floor at range h / sin(30) = 2 h
    _, depth = room.render((0.0, 0.0, 0.0, 0.0), pitch_rad=-math.radians(30))
    assert depth[240, 320] == pytest.approx(2 * CAM_H, abs=0.02)
    # looking up 30 deg from the back of the room: the ceiling (2.5 m) is hit at (2.5 - h) / sin(30)
    _, depth = room.render((-2.5, 0.0, 0.0, 0.0), pitch_rad=math.radians(30))
    assert depth[240, 320] == pytest.approx(2 * (2.5 - CAM_H), abs=0.03)


def test_floor_pixel_matches_intrinsics(room):
    # the floor point seen by pixel row v lies at z-depth h * fy / (v - cy) for a level camera
    _, depth = room.render((-1.0, 0.0, 0.0, 0.0))
    k = room.intrinsics
    v = 420
    assert depth[v, 320] == pytest.approx(CAM_H * k.fy / (v - k.cy), rel=0.01)


def test_human_shows_in_depth_and_colour():
    px = 2.5
    crowd = StillCrowd([[px, 0.0, 0.0], [1.0, 0.8, 0.0]])
    r = Renderer(BoxRoom(), crowd, camera_height_m=CAM_H, camera_forward_m=CAM_FWD)
    try:
        rgb, depth = r.render((-1.0, 0.0, 0.0, 0.0))
        cam_x = -1.0 + CAM_FWD
        # person 0 straight ahead: torso (radius 0.19 m) at chest height is px - 0.19 - cam_x away
        k = r.intrinsics
        row = int(round(k.cy - k.fy * (1.15 - CAM_H) / (px - cam_x)))
        assert depth[row, 320] == pytest.approx(px - 0.19 - cam_x, abs=0.03)
        shirt = np.array(SHIRT_PALETTE[0]) * 255
        assert np.abs(rgb[row, 320].astype(float) - shirt).max() < 90
        # person 1 0.8 m to the left, 1.7 m ahead: it appears at column cx - fx * 0.8 / 1.7
        u = k.cx - k.fx * 0.8 / (1.0 - cam_x)
        cols = np.where(depth[row] < 2.0)[0]
        cols = cols[cols < 200]
        assert len(cols) > 10
        assert abs(cols.mean() - u) < 8
        # nobody taller than 1.7 m: above the head the wall is visible
        top = int(math.floor(k.cy - k.fy * (1.75 - CAM_H) / (px - cam_x)))
        assert 0 < top < row
        assert depth[top + 15, 320] < px - cam_x  # the head (top at 1.70 m) 0.1 m lower
        assert depth[top, 320] == pytest.approx(2.96 - cam_x, abs=0.03)
        # moved away (t-dependent positions are read each frame): the wall is back
        crowd.p[:] = (-2.5, 1.5, 0.0)
        _, depth2 = r.render((-1.0, 0.0, 0.0, 0.0))
        assert depth2[row, 320] == pytest.approx(2.96 - cam_x, abs=0.03)
        assert HUMAN_RADIUS_M == 0.3
    finally:
        r.close()


def test_depth_to_mm():
    d = np.array([[0.0, 0.1, 0.2, 1.2344, 9.9996, 10.5, np.nan, np.inf]], dtype=np.float32)
    mm = depth_to_mm(d, 0.2, 10.0)
    assert mm.dtype == np.uint16
    assert mm.tolist() == [[0, 0, 200, 1234, 10000, 0, 0, 0]]


def test_textures_are_deterministic():
    assert np.array_equal(wall_texture(), wall_texture())
    f = floor_texture()
    assert f.shape == (256, 256, 3) and f.dtype == np.uint8 and f.std() > 5


def test_builtin_scene_renders_rooms_and_people():
    from havln_robot.episodes import builtin_episode
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.scene import Scene

    scene, ep = Scene.builtin(), builtin_episode()
    crowd = Crowd.from_episode(ep, scene, seed=0)
    r = Renderer(scene, crowd, width=320, height=240)
    try:
        x, y, z = ep.start_position
        rgb, depth = r.render((x, y, z, ep.start_yaw), 0.0, 0.0)
        assert np.all(depth > 0) and np.all(np.isfinite(depth))
        assert rgb.std() > 10  # not a blank frame
        # look at each person from 2.5 m along the line to it: depth at the centre reads the body
        for p in crowd.positions(0.0):
            yaw = math.atan2(p[1] - y, p[0] - x)
            d = 2.5
            bx, by = p[0] - (d + CAM_FWD) * math.cos(yaw), p[1] - (d + CAM_FWD) * math.sin(yaw)
            if not scene.is_free(bx, by, z, 0.05):
                continue
            _, dep = r.render((bx, by, z, yaw), 0.0, 0.0)
            assert dep[120, 160] < d + 0.05
    finally:
        r.close()


def test_real_scan_builds_and_renders(havln_data):
    from havln_robot.episodes import load_episodes
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.scene import Scene

    ep = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", havln_data / "connectivity", limit=1)[0]
    scene = Scene.load(ep.scan, havln_data / "connectivity")
    crowd = Crowd.from_episode(ep, scene, seed=0)
    r = Renderer(scene, crowd, width=160, height=120)
    try:
        n_walls = sum(len(scene.wall_segments(f.index)) for f in scene.floors)
        # merged meshes (floor, ceiling, walls per floor; ramps; 8 geoms per person), not one geom per wall
        assert r.model.ngeom <= 3 * len(scene.floors) + len(scene.ramps) + 8 * len(crowd) < n_walls / 5
        x, y, z = ep.start_position
        for k in range(4):
            rgb, depth = r.render((x, y, z, ep.start_yaw + k * math.pi / 2), 0.0, 0.0)
            valid = depth[depth > 0]
            assert valid.size > 0.9 * depth.size
            assert valid.min() > 0.03
    finally:
        r.close()


def test_gl_backend_falls_back_to_osmesa(monkeypatch):
    import havln_robot.sim.render as R

    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.setattr(R, "_probe_gl", lambda backend: False)
    assert R.select_gl_backend() == "osmesa"
    monkeypatch.setenv("MUJOCO_GL", "egl")
    assert R.select_gl_backend() == "egl"  # an explicit choice wins


def test_wall_faces_are_the_drawn_faces():
    """A wall along a segment is drawn 2 x half_t thick, its ends extended by 2 x half_t; the batch
    simulator reads the same faces (render.wall_faces) on stairs."""
    from havln_robot.sim.render import _wall_quads, wall_faces

    segs = np.array([[[0.0, 0.0], [2.0, 0.0]], [[1.0, 1.0], [1.0, 1.00001]]])
    faces, keep = wall_faces(segs, 0.04)
    assert keep.tolist() == [True, False] and faces.shape == (1, 2, 2, 2)
    np.testing.assert_allclose(faces[0, 0], [[-0.08, -0.04], [2.08, -0.04]])  # right of a -> b
    np.testing.assert_allclose(faces[0, 1], [[-0.08, 0.04], [2.08, 0.04]])  # left
    v, _, _ = _wall_quads(segs, 0.0, 2.5, 0.04)
    assert {tuple(p) for p in v[:, :2].round(9)} == {tuple(p) for p in faces.reshape(-1, 2).round(9)}


def test_stairwell_cut_opens_slabs_and_ceilings_over_a_flight_only():
    """A storey's slab or the storey below's ceiling across a flight, less than the stairs headroom
    over its ground, is cut open; the floor at the foot and a ceiling a full storey above stay."""
    from havln_robot.sim.scene import STAIR_HEADROOM_M, stairwell_cut

    class _Ramp:  # 3 m long flight rising from z 0 to 2.7 along +x, 1 m wide
        polygon = shapely.box(0.0, -0.5, 3.0, 0.5)

        @staticmethod
        def z_at(x, y):
            return 0.9 * min(3.0, max(0.0, x))

    room = shapely.box(-5.0, -5.0, 5.0, 5.0)
    cut = lambda z: room.area - stairwell_cut(room, z, [_Ramp]).area  # noqa: E731
    assert cut(0.0) == 0.0  # the floor at the foot of the flight
    assert cut(2.7) == pytest.approx(3.0)  # the upper storey's slab over the flight
    assert cut(2.5) == pytest.approx(3.0)  # the lower storey's ceiling
    assert cut(2.7 + 2.5) == 0.0 and 2.7 + 2.5 > 2.7 + STAIR_HEADROOM_M  # the upper storey's ceiling
    assert stairwell_cut(room, 2.5, []) is room


def rendered_motion_depth(scene, pose, t: float = 0.0):
    """sim_node's depth frame at ``pose`` (config/sim.yaml camera) as motion_node's ObstacleTracker
    reads it: ((N, 3) base_link points, (M, 3) obstacle points with climbable ground dropped,
    the camera's blind zone applied)."""
    from havln_robot.motion.safety import CameraMount, blind_zone_m, depth_to_points, obstacle_points
    from havln_robot.sim.closed_loop import motion_params, sim_profile

    sim, mp = sim_profile()[1], motion_params()
    r = Renderer(scene, None, sim["camera_width"], sim["camera_height"], sim["camera_hfov_deg"], sim["camera_z_m"], sim["camera_x_m"])
    try:
        _, depth = r.render(pose, 0.0, t)
    finally:
        r.close()
    mount = CameraMount(mp["camera_x_m"], mp["camera_y_m"], mp["camera_z_m"], math.radians(mp["camera_pitch_deg"]))
    xyz = depth_to_points(depth, r.intrinsics, mount, mp["depth_stride"], mp["depth_min_m"], mp["depth_max_m"])
    pts = obstacle_points(
        xyz,
        mp["obstacle_min_height_m"],
        mp["obstacle_max_height_m"],
        step_m=mp["max_step_height_m"],
        blind_m=blind_zone_m(r.intrinsics, mount),
    )
    return xyz, pts


def test_robot_walking_down_a_flight_does_not_see_the_storeys_as_a_wall(havln_data):
    """val_seen 3437 (scan 29hnd4uzFmX): on ramp 16, 0.2 m below the upper storey, the camera saw
    that storey's slab (+0.20 m) and the lower storey's ceiling (+0.43 m) across the flight as a wall
    0.3 m ahead; motion_node stopped every step down that batch (no slabs) took. Live: 22 collisions,
    NE 10 m; batch: success."""
    from havln_robot.motion.executor import MotionConfig
    from havln_robot.motion.safety import Obstacles, forward_hazard
    from havln_robot.sim.closed_loop import motion_params
    from havln_robot.sim.scene import Scene

    scene = Scene.load("29hnd4uzFmX", havln_data / "connectivity")
    pose = (-3.197, 0.084, 1.723, -1.665)  # the robot's pose before the first refused step
    assert scene.support(pose[0], pose[1], pose[2]).kind == "ramp"
    mp = motion_params()
    xyz, pts = rendered_motion_depth(scene, pose)
    above = (xyz[:, 2] > 0.1) & (xyz[:, 2] < 0.5) & (xyz[:, 0] < 1.0) & (np.abs(xyz[:, 1]) < 0.3)
    assert not above.any()  # nothing hangs over the flight at body height
    cfg = MotionConfig.from_params(mp)
    obs = Obstacles(points=pts[:, :2], people=[])
    assert forward_hazard(obs, cfg.footprint, 0.25, cfg.front_margin, cfg.side_margin, cfg.personal_space, cfg.min_points) is None


def test_the_camera_is_rendered_at_its_whole_mount():
    """The rendered camera sits at the mount's forward, left and height offsets, turned with the body,
    and looks at the mount's elevation plus the LOOK_UP / LOOK_DOWN pitch (sim_node's camera_* rows)."""
    import types

    mount = types.SimpleNamespace(camera_forward_m=0.3, camera_left_m=0.1, camera_height_m=0.41, camera_pitch_rad=math.radians(-10.0))
    pos, yaw, pitch = Renderer.camera_pose(mount, (1.0, 2.0, 0.5, math.pi / 2), math.radians(30.0))
    assert pos == pytest.approx([0.9, 2.3, 0.91]) and yaw == pytest.approx(math.pi / 2)
    assert pitch == pytest.approx(math.radians(20.0))
