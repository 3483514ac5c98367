"""People from sensors alone (clusters, tracks, LiDAR, appearance plumbing), the
constant-velocity forecast in the safety check, the tracks message, and the tracker against
rendered simulator people.

Cost: about 10 s in all on 2 loaded cores; the two rendering tests (MuJoCo EGL) take most of it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from havln_robot import actions as A
from havln_robot.camera import Intrinsics
from havln_robot.episodes import load_episodes
from havln_robot.motion.executor import Executor, MotionConfig
from havln_robot.motion.lidar import LidarMount
from havln_robot.motion.safety import CameraMount, Footprint, Obstacles, Person, forecast_hazard, load_person_detector
from havln_robot.perception.people import (
    DepthPeopleTracker,
    Detection,
    PeopleConfig,
    PeopleTracker,
    confirm,
    detect_people,
    lidar_points,
)

FP = Footprint(0.70, 0.31)


# --------------------------------------------------------------------------- forecasting
def test_forecast_blocks_a_person_walking_into_the_step():
    # 1.2 m ahead, 1.0 m to the left, walking right at 1 m/s: now 0.87 m clear of the footprint
    # (outside the 0.45 m personal space), but in ~1 s they cross the corridor of a 0.25 m step.
    crossing = Person(1.0, 1.0, 3, vx=0.0, vy=-1.0)
    hz = forecast_hazard([crossing], FP, duration_s=1.3, margin_s=1.0, clearance=0.45, distance=0.25)
    assert hz is not None and hz.type == "human" and hz.source == "forecast" and hz.human_id == 3
    assert hz.distance_m < 0.45 and "forecast" in hz.detail
    # the same person standing still is no hazard; walking away neither; a slow drift below 0.2 m/s is jitter
    assert forecast_hazard([Person(1.0, 1.0, 3)], FP, 1.3, 1.0, 0.45, distance=0.25) is None
    assert forecast_hazard([Person(1.0, 1.0, 3, vx=0.0, vy=1.0)], FP, 1.3, 1.0, 0.45, distance=0.25) is None
    assert forecast_hazard([Person(1.0, 1.0, 3, vx=0.0, vy=-0.1)], FP, 1.3, 1.0, 0.45, distance=0.25) is None
    # a horizon too short for them to arrive: free
    assert forecast_hazard([crossing], FP, duration_s=0.1, margin_s=0.0, clearance=0.45, distance=0.25) is None


def test_forecast_covers_turns_with_the_rotating_footprint():
    # beside the robot's front-left corner, walking towards its side; a turn sweeps the nose into them
    p = Person(0.6, 0.9, 1, vx=0.0, vy=-0.8)
    assert forecast_hazard([p], FP, 0.6, 1.0, 0.33, angle=math.radians(15)) is not None
    assert forecast_hazard([Person(0.6, 0.9, 1)], FP, 0.6, 1.0, 0.33, angle=math.radians(15)) is None
    # a 10 s panorama sweep: someone 4 m away walking towards the robot is not forecast past 3 s
    far = Person(4.3, 0.0, 2, vx=-0.5, vy=0.0)
    assert forecast_hazard([far], FP, 10.0, 1.0, 0.33, angle=2 * math.pi) is None
    assert forecast_hazard([far], FP, 10.0, 1.0, 0.33, angle=2 * math.pi, max_s=11.0) is not None


def test_executor_refuses_a_step_that_a_forecast_crosses():
    """motion_node's executor: a moving person's forecast refuses MOVE_FORWARD before it starts;
    the same person standing there does not (positions alone allowed the step before)."""
    cfg = MotionConfig(require_depth=False)
    obs_moving = Obstacles(points=np.zeros((0, 2), np.float32), people=[Person(1.0, 1.0, 4, vx=0.0, vy=-1.0)])
    tick = Executor(cfg).start(A.MOVE_FORWARD, 10.0, (0.0, 0.0, 0.0), 0.0, obs_moving)
    assert tick.results and tick.results[0].outcome == "collision", tick
    assert tick.collisions and tick.collisions[0].type == "human" and tick.collisions[0].human_id == 4
    assert "forecast" in tick.results[0].detail
    obs_still = Obstacles(points=np.zeros((0, 2), np.float32), people=[Person(1.0, 1.0, 4)])
    tick = Executor(cfg).start(A.MOVE_FORWARD, 10.0, (0.0, 0.0, 0.0), 0.0, obs_still)
    assert not tick.results and tick.cmd[0] > 0
    # forecasting off (forecast_margin_s < 0): the moving person no longer refuses the step
    tick = Executor(MotionConfig(require_depth=False, forecast_margin_s=-1.0)).start(A.MOVE_FORWARD, 10.0, (0.0, 0.0, 0.0), 0.0, obs_moving)
    assert not tick.results


# --------------------------------------------------------------------------- clusters (generated clouds)
def _person_cloud(cx, cy, rng, height=1.7, radius=0.25, n=600, lidar=(0.0, 0.0)):
    """Points on the sensor-facing half of an upright cylinder (what a range sensor sees of a body)."""
    a0 = math.atan2(lidar[1] - cy, lidar[0] - cx)
    ang = rng.uniform(a0 - math.pi / 2, a0 + math.pi / 2, n)
    z = rng.uniform(0.05, height, n)
    return np.stack([cx + radius * np.cos(ang), cy + radius * np.sin(ang), z], axis=1)


def _wall(x0, y0, x1, y1, rng, n=2000, height=2.5):
    u = rng.uniform(0, 1, n)
    return np.stack([x0 + (x1 - x0) * u, y0 + (y1 - y0) * u, rng.uniform(0, height, n)], axis=1)


def test_lidar_cloud_people_among_walls_and_furniture():
    rng = np.random.default_rng(0)
    cloud = np.concatenate(
        [
            _person_cloud(3.0, 1.0, rng),
            _person_cloud(-2.0, -1.5, rng),  # behind the robot: a 360 deg LiDAR sees them
            _wall(-5, 4, 6, 4, rng),  # a long wall: too wide
            np.stack([rng.uniform(1.5, 2.3, 500), rng.uniform(-2.2, -1.4, 500), rng.uniform(0.0, 0.75, 500)], axis=1),  # a table: too low
            np.stack([rng.uniform(4.0, 4.3, 300), rng.uniform(-1.0, -0.7, 300), rng.uniform(1.3, 2.0, 300)], axis=1),  # a shelf: no legs
        ]
    )
    pts = lidar_points(cloud, min_range_m=0.1)
    dets = detect_people(pts, PeopleConfig())
    got = sorted((round(d.x, 1), round(d.y, 1)) for d in dets)
    assert len(dets) == 2, dets
    # the body centre, not the visible front surface: within 0.15 m of the true centre
    for cx, cy in ((3.0, 1.0), (-2.0, -1.5)):
        assert min(math.hypot(d.x - cx, d.y - cy) for d in dets) < 0.15, got
    with pytest.raises(ValueError, match="x, y, z"):
        lidar_points(np.zeros((4, 2)))


def test_a_tilted_and_turned_lidar_places_people_where_they_stand():
    """A LiDAR mounted as a Go2's L1 (0.28 m ahead, 0.30 m up, pitched 15 deg down) and turned 30 deg
    left publishes in its own frame: through its mount a person 2.5 m ahead and 0.8 m left is found
    there, and the floor lies at 0 m (ignoring the pitch would tilt the floor 0.65 m over 2.5 m and
    sink the person's legs below it)."""
    rng = np.random.default_rng(3)
    mount = LidarMount(0.28, 0.0, 0.30, math.radians(-15.0), math.radians(30.0))
    floor = np.stack([rng.uniform(-3, 3, 3000), rng.uniform(-3, 3, 3000), np.zeros(3000)], axis=1)
    ground = np.concatenate([_person_cloud(2.5, 0.8, rng, lidar=(0.28, 0.0)), floor])
    pts = lidar_points(mount.from_ground(ground), mount, min_range_m=0.1)
    assert np.abs(pts[len(pts) - 2000 :, 2]).max() < 1e-3  # floor rows (all beyond 0.1 m) back at 0 m
    dets = detect_people(pts, PeopleConfig(), (mount.x, mount.y))
    assert len(dets) == 1 and math.hypot(dets[0].x - 2.5, dets[0].y - 0.8) < 0.15, dets


def test_lidar_min_range_is_a_blind_zone():
    rng = np.random.default_rng(1)
    near = _person_cloud(0.0, 0.0, rng) * np.array([0.1, 0.1, 0.03])  # all points within 0.1 m of the sensor
    assert len(lidar_points(near, min_range_m=0.1)) == 0
    assert len(lidar_points(near, min_range_m=0.0)) == len(near)


# --------------------------------------------------------------------------- tracking
def test_tracker_estimates_walking_velocity_while_the_robot_turns():
    """A person crossing at 1 m/s, seen at 10 Hz while the robot turns 0.3 rad/s: the velocity comes
    out in base_link axes (robot rotation removed through odometry) within 0.2 m/s."""
    tr = PeopleTracker(PeopleConfig())
    rng = np.random.default_rng(2)
    tracks = []
    for k in range(30):
        t = 0.1 * k
        wx, wy = 3.0, -1.5 + 1.0 * t  # world: walking +y at 1 m/s
        yaw = 0.3 * t
        c, s = math.cos(yaw), math.sin(yaw)
        bx, by = c * wx + s * wy, -s * wx + c * wy
        det = Detection(bx + rng.normal(0, 0.05), by + rng.normal(0, 0.05), 1.7, 0.05, 0.5, 0.3, 100)
        tracks = tr.update(t, [det], (0.0, 0.0, yaw))
    assert len(tracks) == 1 and tracks[0].track_id == 1
    yaw = 0.3 * 2.9
    evx, evy = math.sin(yaw) * 1.0, math.cos(yaw) * 1.0  # (0, 1) world rotated into base_link
    assert math.hypot(tracks[0].vx - evx, tracks[0].vy - evy) < 0.2, tracks[0]
    # one frame is no track (min_hits 2); a track unseen for longer than max_age_s is dropped
    tr2 = PeopleTracker(PeopleConfig())
    assert tr2.update(0.0, [Detection(2, 0, 1.7, 0, 0.5, 0.3, 50)]) == []
    assert len(tr2.update(0.1, [Detection(2, 0, 1.7, 0, 0.5, 0.3, 50)])) == 1
    assert tr2.update(1.0, []) == []


def test_two_people_crossing_keep_their_ids():
    tr = PeopleTracker(PeopleConfig())
    ids_a, ids_b = set(), set()
    for k in range(40):
        t = 0.1 * k
        a = Detection(2.0 + 0.0 * t, -2.0 + 1.0 * t, 1.7, 0, 0.5, 0.3, 80)  # walks left
        b = Detection(2.6, 2.0 - 1.0 * t, 1.7, 0, 0.5, 0.3, 80)  # walks right, 0.6 m further
        for trk in tr.update(t, [a, b]):
            (ids_a if abs(trk.x - 2.0) < 0.3 else ids_b).add(trk.track_id)
    assert len(ids_a) == 1 and len(ids_b) == 1 and ids_a != ids_b


# --------------------------------------------------------------------------- appearance plumbing
def test_appearance_confirmation_keeps_detections_inside_person_boxes():
    k = Intrinsics.from_hfov(640, 480, 69.4)
    mount = CameraMount(0.3, 0.0, 0.41, 0.0)
    ahead = Detection(3.3, 0.0, 1.7, 0.05, 0.5, 0.3, 100)  # straight ahead: image centre column
    aside = Detection(3.3, 1.5, 1.7, 0.05, 0.5, 0.3, 100)  # to the left: left part of the image
    box = np.array([[290.0, 100.0, 350.0, 470.0]])  # one person box around the centre column
    assert confirm([ahead, aside], box, k, mount) == [ahead]
    assert confirm([ahead, aside], np.zeros((0, 4)), k, mount) == []


def test_appearance_model_needs_onnxruntime_or_a_loadable_file(tmp_path):
    from havln_robot.perception.people import AppearanceCheck

    with pytest.raises(ValueError, match="appearance_model"):
        AppearanceCheck(str(tmp_path / "missing.onnx"))


# --------------------------------------------------------------------------- plug-in + message
def test_tracker_is_a_person_detector_plugin():
    from havln_robot.perception.people import BUILTIN_PERSON_DETECTORS

    det = load_person_detector("depth_people_tracker", BUILTIN_PERSON_DETECTORS)
    assert isinstance(det, DepthPeopleTracker)
    k = Intrinsics.from_hfov(160, 120, 69.4)
    depth = np.zeros((120, 160), np.float32)
    assert det.detect(np.zeros((120, 160, 3), np.uint8), depth, k, CameraMount()) == []


def test_tracks_message_round_trip():
    from builtin_interfaces.msg import Time

    from havln_robot.ros.codec import cloud_fields, decode_tracks, encode_tracks

    msg = encode_tracks([(1.5, -0.5, 0.8, 0.1, 7), (3.0, 2.0, 0.0, 0.0, 9)], "base_link", Time(sec=3))
    assert [f.name for f in msg.fields] == ["x", "y", "vx", "vy", "id"] and msg.width == 2
    a = decode_tracks(msg)
    assert a["id"].tolist() == [7, 9] and a["x"].tolist() == [1.5, 3.0] and a["vx"][0] == pytest.approx(0.8)
    with pytest.raises(ValueError, match="no field"):
        cloud_fields(msg, ("x", "z"))
    assert len(decode_tracks(encode_tracks([], "base_link", Time()))) == 0


# --------------------------------------------------------------------------- rendered people (simulator)
def test_rendered_people_are_tracked_from_depth_alone():
    """Simulator people rendered by MuJoCo: the tracker, fed only depth, finds each within 0.3 m and
    reports the walker's velocity; the pillar outside the field of view plays no part."""
    pytest.importorskip("mujoco")
    from havln_robot.bench.people import BenchCrowd, BenchRoom
    from havln_robot.sim.render import Renderer, RenderError
    from havln_robot.sim.robot import GO2_CAMERA_FORWARD_M, GO2_CAMERA_HEIGHT_M

    crowd = BenchCrowd(
        a=np.array([[1.6, 0.3], [3.5, -1.5], [5.0, 2.0]]),
        b=np.array([[1.6, 0.3], [3.5, 2.5], [5.0, 2.0]]),
        speed=np.array([0.0, 1.0, 0.0]),
        phase=np.zeros(3),
    )
    try:
        rend = Renderer(BenchRoom(), crowd, 640, 480, camera_height_m=GO2_CAMERA_HEIGHT_M, camera_forward_m=GO2_CAMERA_FORWARD_M)
    except RenderError as exc:
        pytest.skip(str(exc))
    mount = CameraMount(GO2_CAMERA_FORWARD_M, 0.0, GO2_CAMERA_HEIGHT_M, 0.0)
    clock = {"t": 0.0}
    det = DepthPeopleTracker(clock=lambda: clock["t"])
    try:
        tracks = []
        for f in range(15):
            t = 0.1 * f
            clock["t"] = t
            _, depth = rend.render((0.0, 0.0, 0.0, 0.0), 0.0, t)
            tracks = det.step(t, None, depth, rend.intrinsics, mount)
    finally:
        rend.close()
    truth = crowd.positions(1.4)[:, :2]
    assert len(tracks) == 3, tracks
    for gx, gy in truth:
        assert min(math.hypot(tr.x - gx, tr.y - gy) for tr in tracks) < 0.3
    walker = min(tracks, key=lambda tr: math.hypot(tr.x - truth[1, 0], tr.y - truth[1, 1]))
    assert walker.vy == pytest.approx(1.0, abs=0.3) and abs(walker.vx) < 0.3
    standing = min(tracks, key=lambda tr: math.hypot(tr.x - truth[0, 0], tr.y - truth[0, 1]))
    assert standing.vx == 0.0 and standing.vy == 0.0


def test_bench_people_quick_figures():
    """``bench people`` end to end on a short run: the figures exist and recall is high at 2-6 m."""
    pytest.importorskip("mujoco")
    from havln_robot.bench.people import report, run
    from havln_robot.sim.render import RenderError

    try:
        fig = run(n_people=4, seconds=3.0, rate_hz=10.0, seed=0)
    except RenderError as exc:
        pytest.skip(str(exc))
    assert fig["frames"] == 30 and sum(fig["truth"]) > 0
    seen = [r for r, n in zip(fig["recall"], fig["truth"], strict=True) if n >= 10]
    assert seen and min(seen) > 0.6, fig
    assert fig["pos_err_p50_m"] < 0.25 and fig["cpu_ms_per_frame_p50"] > 0
    assert "recall" in report(fig)


def test_bench_people_counts_phantoms_in_an_empty_scene(capsys):
    """``bench people --empty-scans``: the phantom figure is printed from a real count (the
    builtin scene without the data), and a count of frames is what the report says."""
    pytest.importorskip("mujoco")
    from havln_robot.bench.people import EMPTY_HEADINGS, empty_scenes, main
    from havln_robot.sim.render import RenderError

    try:
        e = empty_scenes(["builtin"], 2, seed=0)
    except RenderError as exc:
        pytest.skip(str(exc))
    assert e["frames"] == 2 * EMPTY_HEADINGS and 0 <= e["frames_with_near_detection"] <= e["frames_with_detection"] <= e["frames"]
    assert main(["--seconds", "1", "--people", "1", "--empty-scans", "1", "--empty-poses", "1"]) == 0
    out = capsys.readouterr().out
    assert f"1 scenes x 1 poses x {EMPTY_HEADINGS} headings" in out and "phantom people" in out


def test_phantom_count_renders_from_the_camera_above_the_drawn_floor(havln_data, monkeypatch):
    """The phantom benchmark places the camera as the live one is placed (Scene.camera_ground_z, the
    rule World.camera_pose uses): over a flat-floor scene's drawn floor, not at the body's blended
    ground height (0.32 m apart at val_seen 5593's start), where the drawn floor itself would be
    an obstacle band in the depth image."""
    pytest.importorskip("mujoco")
    from havln_robot.bench.people import empty_scenes
    from havln_robot.sim.render import Renderer, RenderError
    from havln_robot.sim.scene import Scene

    scan = next(e for e in load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json") if e.episode_id == "5593").scan
    scene = Scene.load(scan)
    floor_z = {round(f.z, 6) for f in scene.floors}
    body_z_off = []
    seen: list[float] = []
    real = Renderer.render

    def spy(self, pose, pitch=0.0, t=0.0):
        seen.append(float(pose[2]))
        sup = scene.support(pose[0], pose[1], pose[2])
        if sup is not None and sup.kind == "floor":
            body_z_off.append(abs(scene.floors[sup.index].height_at(pose[0], pose[1]) - pose[2]))
        return real(self, pose, pitch, t)

    monkeypatch.setattr(Renderer, "render", spy)
    try:
        empty_scenes([scan], 6, seed=0, width=160, height=120)
    except RenderError as exc:
        pytest.skip(str(exc))
    assert seen and all(round(z, 6) in floor_z for z in seen), sorted(set(seen))
    assert max(body_z_off) > 0.05  # the body's ground differs from the drawn floor at these poses


def _stairs_frame(havln_data, crowd, pose):
    """people_node's single-frame detections in scan JF19kD82Mey (val_seen 1140's flight) from ``pose``."""
    from havln_robot.perception.people import FrameInput, PeopleConfig, frame_detections
    from havln_robot.sim.closed_loop import people_profile
    from havln_robot.sim.mesh_scene import load_scene
    from havln_robot.sim.render import Renderer, RenderError, depth_to_mm

    scene = load_scene("JF19kD82Mey", havln_data / "connectivity", None)
    mount = CameraMount(0.3, 0.0, 0.4125, 0.0)
    try:
        r = Renderer(scene, crowd, 640, 480, camera_height_m=mount.z, camera_forward_m=mount.x)
    except RenderError as exc:
        pytest.skip(str(exc))
    try:
        sup = scene.support(pose[0], pose[1], pose[2])
        _, depth = r.render((pose[0], pose[1], scene.camera_ground_z(sup, sup.z), pose[3]), 0.0, 0.0)
    finally:
        r.close()
    depth = depth_to_mm(depth, 0.2, 10.0).astype(np.float32) / 1000.0
    cfg = PeopleConfig.from_params(people_profile())
    return frame_detections(FrameInput(depth, Intrinsics.from_hfov(640, 480, 69.4), mount), cfg)


def test_a_flight_of_stairs_beside_the_robot_is_not_a_person(havln_data):
    """Halfway up val_seen 1140's flight, looking 58 deg across it: the steps rising beside the robot
    fill the body band 0.4 m ahead of the camera, a person-sized cluster whose top the view cuts (a
    "person" in personal space: motion_node refuses to move). Its points are climbable ground
    (motion_node's rule, climbable_mask): terrain, not a person."""
    pytest.importorskip("mujoco")
    from havln_robot.sim.humans import Crowd

    dets = _stairs_frame(havln_data, Crowd([]), (7.32, -1.53, 2.48, -1.02))
    assert not [d for d in dets if math.hypot(d.x - 0.3, d.y) < 1.0], dets


def test_a_person_at_the_foot_of_the_stairs_is_still_found(havln_data):
    """The terrain rule drops clusters of climbable ground only: a person standing at the foot of the
    same flight, 1.1 m ahead, is a person."""
    pytest.importorskip("mujoco")
    from havln_robot.sim.humans import Crowd, SimHuman

    z = -0.584  # the floor at the flight's foot
    crowd = Crowd([SimHuman(0, "standing", (5.3, -1.55, z), (5.3, -1.55, z), facing=math.pi)])
    dets = _stairs_frame(havln_data, crowd, (4.2, -1.58, z, 0.0))
    assert [d for d in dets if math.hypot(d.x - 1.1, d.y) < 0.3], dets


# --------------------------------------------------------------------------- privacy of recordings
def test_blur_people_hides_the_person_strip_only():
    from havln_robot.trials.privacy import blur_people

    k = Intrinsics.from_hfov(320, 240, 69.4)
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, (240, 320, 3), dtype=np.uint8)  # high-frequency detail a face would have
    out = blur_people(rgb, [(2.3, 0.0)], k, camera_x_m=0.3)  # a person 2 m straight ahead
    centre = slice(150, 170)
    assert out[:, centre].astype(float).std() < 0.25 * rgb[:, centre].astype(float).std()  # detail gone
    assert np.array_equal(out[:, :40], rgb[:, :40]) and np.array_equal(out[:, -40:], rgb[:, -40:])  # the rest untouched
    assert np.array_equal(blur_people(rgb, [(-1.0, 0.0)], k, 0.3), rgb)  # behind the camera: nothing to blur
    with pytest.raises(ValueError, match="colour frame"):
        blur_people(rgb[:, :, 0], [], k, 0.3)


def test_recordings_keep_no_colour_by_default():
    from havln_robot.config import load_profile
    from havln_robot.trials.params import TRIAL_LOGGER_PARAMS

    assert TRIAL_LOGGER_PARAMS.defaults()["mcap_color"] == "none"
    for prof in ("go2", "sim", "gazebo"):
        from havln_robot.paths import config_dir

        assert load_profile(config_dir() / f"{prof}.yaml").nodes["trial_logger_node"]["mcap_color"] == "none"


# --------------------------------------------------------------------------- eval --people (batch shield)
class _LineCrowd:
    """One person walking along -y at 1 m/s through (x0, .) (map frame = the robot's start frame)."""

    def __init__(self, x0, y0, vy):
        self.x0, self.y0, self.vy = x0, y0, vy
        self.ids = [5]

    def __len__(self):
        return 1

    def positions(self, t):
        return np.array([[self.x0, self.y0 + self.vy * t, 0.0]])


class _World:
    def __init__(self, crowd):
        self.crowd, self.t, self.pose, self.robot_radius, self.done = crowd, 0.0, (0.0, 0.0, 0.0, 0.0), 0.383, False
        self.steps, self.waited = [], 0.0

    def move(self, forward, dyaw, dt):
        self.t += dt
        self.waited += dt

    def step(self, action):
        self.steps.append(action)
        self.t += 0.5
        return "stepped"


def test_eval_shield_waits_for_a_forecast_crossing_then_goes():
    from havln_robot.eval import PeopleShield

    w = _World(_LineCrowd(0.8, 1.5, -1.0))  # 1.3 m clear now, crosses 0.8 m ahead in 1.5 s
    sh = PeopleShield(w, "ground_truth")
    assert sh.refusal("MOVE_FORWARD") is not None and sh.waits == 1  # refused (the episode runner then waits)
    results = []
    for _ in range(6):
        w.move(0.0, 0.0, 1.0)  # the runner's blocked wait: sim time passes, the person walks on
        results.append(sh.refusal("MOVE_FORWARD"))
    assert None in results and sh.waits >= 2  # once they have passed, the step goes
    assert sh.refusal("STOP") is None  # STOP is never held back
    w2 = _World(_LineCrowd(0.8, 1.5, +1.0))  # walking away from the path: no wait
    assert PeopleShield(w2, "ground_truth").hazard("MOVE_FORWARD") is None


def test_eval_people_modes_on_real_episodes(havln_data, capsys):
    """``eval --people ground_truth`` on 3 real val_seen episodes: runs, reports the refusals; a bad mode is a usage error."""
    from havln_robot.eval import main

    assert main(["--policy", "forward", "--limit", "3", "--people", "ground_truth", "-q"]) == 0
    out = capsys.readouterr().out
    assert "people checks (ground_truth)" in out and "TCR" in out
    with pytest.raises(SystemExit):
        main(["--policy", "forward", "--limit", "1", "--people", "everyone"])


def test_a_person_beside_the_robot_is_remembered_outside_the_camera_view():
    """The camera is blind beside the robot: a person seen ahead and then passed stays tracked for
    max_unseen_s (a person in view who is not seen again is dropped after max_age_s)."""
    cfg = PeopleConfig()
    tr = PeopleTracker(cfg)
    in_front = lambda xy: xy[:, 0] > 0.5  # noqa: E731 - a toy field of view: ahead of x = 0.5 m
    det = Detection(2.0, -0.6, 1.7, 0.05, 0.5, 0.3, 80)
    for k in range(5):
        tr.update(0.1 * k, [det], (0.0, 0.0, 0.0), in_front)
    # the robot walks 1.8 m forward: the standing person is now beside it, out of view, unseen
    out = tr.update(2.0, [], (1.8, 0.0, 0.0), in_front)
    assert len(out) == 1 and abs(out[0].x - 0.2) < 0.1 and abs(out[0].y + 0.6) < 0.1
    assert tr.update(2.0 + cfg.max_unseen_s + 0.5, [], (1.8, 0.0, 0.0), in_front) == []
    # someone in view who vanishes is dropped after max_age_s
    tr2 = PeopleTracker(cfg)
    for k in range(5):
        tr2.update(0.1 * k, [det], (0.0, 0.0, 0.0), in_front)
    assert tr2.update(0.4 + cfg.max_age_s + 0.1, [], (0.0, 0.0, 0.0), in_front) == []


def test_a_person_hidden_in_view_is_not_seen_to_be_gone():
    """A still person 2 m ahead whom someone nearer hides,
    or who stands in a depth hole, stays tracked for max_unseen_s; one the depth image now
    measures past (the floor behind where they stood) is dropped after max_age_s."""
    from havln_robot.motion.safety import depth_free_space
    from havln_robot.perception.people import camera_frustum

    k = Intrinsics.from_hfov(320, 240, 69.4)
    mount = CameraMount(0.3, 0.0, 0.4125, 0.0)
    v, u = np.mgrid[0 : k.height, 0 : k.width].astype(np.float64)
    dz = -(v - k.cy) / k.fy
    floor = np.where(dz < 0, mount.z / np.maximum(-dz, 1e-9), 0.0).astype(np.float32)
    floor[floor > 10] = 0.0
    occluded = floor.copy()
    occluded[np.abs(-(u - k.cx) / k.fx * 0.8) <= 0.4] = 0.8  # someone 0.8 m ahead, 0.8 m wide
    hole = np.zeros_like(floor)  # no return at all (a dazzled or covered camera)
    cfg = PeopleConfig()
    det = Detection(2.3, 0.0, 1.7, 0.05, 0.5, 0.3, 80)
    kept = {}
    for name, depth in (("floor", floor), ("occluded", occluded), ("hole", hole)):
        tr = PeopleTracker(cfg)
        for i in range(5):
            tr.update(0.1 * i, [det], (0.0, 0.0, 0.0))
        visible = camera_frustum(k, (mount.x, mount.y), cfg.max_range_m, depth_free_space(depth, k, mount, 0.1))
        kept[name] = len(tr.update(0.4 + cfg.max_age_s + 0.1, [], (0.0, 0.0, 0.0), visible))
    assert kept == {"floor": 0, "occluded": 1, "hole": 1}


# --------------------------------------------------------------------------- phantom people
def _columns_depth(k: Intrinsics, spans: list[tuple[int, int, float]]) -> np.ndarray:
    """A depth image of vertical walls square to the optical axis: ``spans`` of (u0, u1, depth m)."""
    depth = np.zeros((k.height, k.width), dtype=np.float32)
    for u0, u1, d in spans:
        depth[:, u0:u1] = d
    return depth


def test_a_wall_strip_seen_through_a_gap_is_no_person():
    """A strip of far wall seen past the edge of a nearer
    wall is cut by it on one side (width unknown) and by the top of the view (height unknown): it
    is not a person. The same strip standing free, the background farther on both sides, still is
    (a person closer than the camera sees whole), and so is a person half hidden by someone nearer
    whose head is seen (test_rendered_people_are_tracked_from_depth_alone)."""
    from havln_robot.perception.people import FrameInput, frame_detections

    k = Intrinsics.from_hfov(640, 480, 69.4)
    mount = CameraMount(0.3, 0.0, 0.4125, 0.0)
    cfg = PeopleConfig()
    # 6047's stuck pose at 120 deg, rebuilt from its columns: near wall 0.3 m from the camera on
    # the left, a 70 px strip 1.0 m away, the far wall 2.5 m away on the right
    through_gap = _columns_depth(k, [(0, 250, 0.3), (250, 320, 1.0), (320, 640, 2.5)])
    assert frame_detections(FrameInput(through_gap, k, mount), cfg) == []
    free = _columns_depth(k, [(0, 250, 2.5), (250, 320, 1.0), (320, 640, 2.5)])
    dets = frame_detections(FrameInput(free, k, mount), cfg)
    assert len(dets) == 1 and 1.3 < dets[0].x < 1.7 and abs(dets[0].y - 0.03) < 0.1


def test_no_phantom_people_at_the_6047_demo_pose(havln_data):
    """The pose where ``make demo``'s robot (val_seen 6047) stopped, rendered with nobody
    in the scene, 24 headings: people_node's depth detector reported a person about 1 m away at 4
    of them (wall corners; motion_node logged 28 contacts). Now nobody within 1.5 m at any."""
    pytest.importorskip("mujoco")
    from havln_robot.perception.people import FrameInput, frame_detections
    from havln_robot.sim.render import Renderer, RenderError
    from havln_robot.sim.robot import GO2_CAMERA_FORWARD_M, GO2_CAMERA_HEIGHT_M
    from havln_robot.sim.scene import Scene

    scene = Scene.load("gZ6f7yhEvPG")
    x, y = -1.26, 0.04
    sup = scene.support(x, y, 0.0)
    assert sup is not None
    try:
        rend = Renderer(scene, None, 640, 480, camera_height_m=GO2_CAMERA_HEIGHT_M, camera_forward_m=GO2_CAMERA_FORWARD_M)
    except RenderError as exc:
        pytest.skip(str(exc))
    mount = CameraMount(GO2_CAMERA_FORWARD_M, 0.0, GO2_CAMERA_HEIGHT_M, 0.0)
    near = []
    try:
        for deg in range(0, 360, 15):
            _, depth = rend.render((x, y, sup.z, math.radians(deg)), 0.0, 0.0)
            dets = frame_detections(FrameInput(depth, rend.intrinsics, mount), PeopleConfig())
            near += [(deg, round(d.x, 2), round(d.y, 2)) for d in dets if math.hypot(d.x - mount.x, d.y - mount.y) <= 1.5]
    finally:
        rend.close()
    assert near == []


def test_tracker_ignores_non_finite_poses_and_detections():
    """One NaN odometry pose used to crash people_node (linear_sum_assignment: 'matrix contains invalid
    numeric entries'); a NaN pose is ignored (the last finite one stays), a NaN detection dropped."""
    tr = PeopleTracker(PeopleConfig())
    person = Detection(2.0, 0.0, 1.7, 0, 0.5, 0.3, 80)
    for k in range(5):
        tr.update(0.1 * k, [person], pose=(0.0, 0.0, 0.0))
    for bad in ((math.nan, 0.0, 0.0), (0.0, math.inf, 0.0), (0.0, 0.0, math.nan)):
        out = tr.update(0.6, [person], pose=bad)
        assert [round(t.x, 1) for t in out] == [2.0] and tr._pose == (0.0, 0.0, 0.0)
    out = tr.update(0.7, [person, Detection(math.nan, 1.0, 1.7, 0, 0.5, 0.3, 80)], pose=(0.0, 0.0, 0.0))
    assert [round(t.x, 1) for t in out] == [2.0]
    assert all(math.isfinite(v) for t in tr.update(math.nan, [person]) for v in (t.x, t.y, t.vx, t.vy))
