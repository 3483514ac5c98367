"""havln_robot.motion.obstacles.ObstacleTracker: depth fusion into obstacle memory, without ROS."""

from __future__ import annotations

import math

import numpy as np
import pytest

from havln_robot.motion.obstacles import ObstacleTracker, TrackerConfig
from havln_robot.motion.safety import CameraMount, Intrinsics

W, H = 64, 48
K = Intrinsics.from_hfov(W, H, 70.0)
MOUNT = CameraMount(0.3, 0.0, 0.35, 0.0)


def _wall(distance_m: float) -> np.ndarray:
    """Depth image of a flat wall ``distance_m`` ahead of the camera (metres along the optical axis)."""
    return np.full((H, W), distance_m, np.float32)


class _Frames:
    def __init__(self, depth):
        self.depth, self.loads = depth, 0

    def __call__(self):
        self.loads += 1
        return self.depth


def _tracker(**kw):
    cfg = TrackerConfig(stride=2, min_m=0.1, max_m=4.0, min_height_m=0.05, max_height_m=1.0, depth_timeout_s=0.5, **kw)
    seen, warnings = [], []
    tr = ObstacleTracker(cfg, MOUNT, on_frame=lambda d, m: seen.append(m.pitch), warn=warnings.append)
    return tr, seen, warnings


def test_no_points_without_intrinsics_or_frame_and_when_stale():
    tr, _, _ = _tracker()
    assert tr.points(0.0, (0.0, 0.0, 0.0), 0.0) is None  # nothing yet
    tr.add_depth(0.0, _Frames(_wall(1.0)), W, H)
    assert tr.points(0.1, (0.0, 0.0, 0.0), 0.0) is None  # no camera_info yet
    tr.intrinsics = K
    pts = tr.points(0.1, (0.0, 0.0, 0.0), 0.0)
    assert pts is not None and len(pts) > 0 and pts.shape[1] == 2
    assert np.median(pts[:, 0]) == pytest.approx(1.3, abs=0.05)  # wall 1 m ahead of a camera 0.3 m ahead of base_link
    assert tr.points(0.6, (0.0, 0.0, 0.0), 0.0) is None  # frame older than depth_timeout_s


def test_a_frame_is_decoded_once_per_pitch():
    tr, seen, _ = _tracker()
    tr.intrinsics = K
    frames = _Frames(_wall(1.0))
    tr.add_depth(0.0, frames, W, H)
    for _ in range(3):
        tr.points(0.1, None, 0.0)
    assert frames.loads == 1 and seen == [0.0] and tr.frames == 1
    tr.points(0.1, None, math.radians(-10.0))  # camera pitched: the same frame projects differently
    assert frames.loads == 2 and seen[-1] == pytest.approx(math.radians(-10.0))


def test_memory_keeps_obstacles_that_left_the_view():
    tr, _, _ = _tracker(memory_s=5.0)
    tr.intrinsics = K
    tr.add_depth(0.0, _Frames(_wall(0.8)), W, H)
    first = tr.points(0.05, (0.0, 0.0, 0.0), 0.0)
    assert first is not None and len(first) > 0
    # the next frame sees nothing (no returns); the remembered wall is still reported, in base_link
    tr.add_depth(0.1, _Frames(np.zeros((H, W), np.float32)), W, H)
    pts = tr.points(0.15, (0.2, 0.0, 0.0), 0.0)  # robot moved 0.2 m forward
    assert pts is not None and len(pts) > 0
    assert np.median(pts[:, 0]) == pytest.approx(np.median(first[:, 0]) - 0.2, abs=0.1)
    # without memory the empty frame gives no points
    tr2, _, _ = _tracker()
    tr2.intrinsics = K
    tr2.add_depth(0.0, _Frames(np.zeros((H, W), np.float32)), W, H)
    assert len(tr2.points(0.05, (0.0, 0.0, 0.0), 0.0)) == 0


def test_an_undecodable_frame_warns_and_gives_no_points():
    tr, _, warnings = _tracker()
    tr.intrinsics = K

    def bad():
        raise ValueError("unsupported image encoding 'yuv422'")

    tr.add_depth(0.0, bad, W, H)
    assert tr.points(0.1, None, 0.0) is None and warnings == ["unsupported image encoding 'yuv422'"]


def test_pose_history_interpolates_and_knows_its_span():
    from havln_robot.motion.obstacles import PoseHistory

    h = PoseHistory(horizon_s=1.0)
    assert h.at(0.0) is None  # nothing yet
    h.add(0.0, (0.0, 0.0, math.radians(170.0)))
    h.add(0.1, (0.1, 0.0, math.radians(-170.0)))  # across +-180 deg: the short way round
    x, y, th = h.at(0.05)
    assert x == pytest.approx(0.05) and abs(abs(th) - math.pi) < 1e-9  # halfway: 180 deg, not 0
    assert h.at(-0.01) is None  # before the oldest kept
    assert h.at(0.3) == pytest.approx((0.1, 0.0, math.radians(-170.0)))  # after the newest: the newest
    h.add(0.05, (9.0, 9.0, 0.0))  # out of order: ignored
    assert h.at(0.05)[0] == pytest.approx(0.05)
    h.add(2.0, (0.0, 0.0, 0.0))  # horizon 1 s: the old ones go
    assert len(h) == 1 and h.at(0.5) is None


def test_a_frame_is_placed_where_the_robot_was_when_it_was_captured():
    """A depth frame arrives 100 ms after its capture, mid-turn (100 deg/s). Before, it was
    placed at the pose of its arrival: a wall straight ahead at capture came out 10 deg to the left
    both in the current frame's points and in the memory, where it smeared walls into the corridor
    (live refused a MOVE_FORWARD the batch world took, "150 depth points 0.11 m ahead")."""
    tr, _, _ = _tracker(memory_s=5.0)
    tr.intrinsics = K
    for i in range(11):  # odometry at 100 Hz, turning left at 100 deg/s
        tr.add_odom(i * 0.01, (0.0, 0.0, math.radians(10.0 * i * 0.01 / 0.1)))
    tr.add_depth(0.1, _Frames(_wall(1.0)), W, H, stamp=0.0)  # captured at yaw 0, received at yaw 10 deg
    pts = tr.points(0.1, (0.0, 0.0, math.radians(10.0)), 0.0)
    wall = np.median(pts, axis=0)
    # straight ahead at capture (1.3 m from base_link) is 10 deg to the RIGHT of the current heading
    assert wall[0] == pytest.approx(1.3 * math.cos(math.radians(10.0)), abs=0.03)
    assert wall[1] == pytest.approx(-1.3 * math.sin(math.radians(10.0)), abs=0.03)
    # remembered in odom where it is: straight along odom x
    cells, _ = tr.memory.cells(0.1, (0.0, 0.0, 0.0))
    assert np.median(cells[:, 1]) == pytest.approx(0.0, abs=0.03)
    # the same frame asked for again after a further 10 deg: moved into the new base_link too
    pts2 = tr.points(0.2, (0.0, 0.0, math.radians(20.0)), 0.0)
    frame = pts2[: len(pts)]
    assert np.median(frame[:, 1]) == pytest.approx(-1.3 * math.sin(math.radians(20.0)), abs=0.03)


def test_a_clock_that_lags_the_stamps_does_not_shift_the_frame():
    """Motion_node's /clock lags sim_node's stamps by 60 ms, so every
    odometry message arrives stamped ahead of the node's clock. Before, those stamps were clamped
    to the receipt time -- the pose history ran 60 ms early -- while the depth frame (rendered,
    arriving after its capture) kept its stamp: it was placed at the pose of 60 ms after its
    capture, 6 deg off at 100 deg/s. Every stream now keeps its stamp (message_time)."""
    from havln_robot.motion.obstacles import STAMP_AHEAD_S, message_time

    lag = 0.06
    tr, _, _ = _tracker(memory_s=5.0)
    tr.intrinsics = K
    for i in range(21):  # odometry at 100 Hz, turning left at 100 deg/s; received 2 ms after its stamp
        stamp = 10.0 + i * 0.01
        t, on_clock = message_time(stamp, stamp + 0.002 - lag)
        assert on_clock and t == stamp
        tr.add_odom(t, (0.0, 0.0, math.radians(100.0 * i * 0.01)))
    now = 10.2 + 0.002 - lag
    tr.add_depth(now, _Frames(_wall(1.0)), W, H, stamp=message_time(10.0, now)[0])  # captured at yaw 0
    pts = tr.points(now, (0.0, 0.0, math.radians(20.0)), 0.0)
    assert np.median(np.degrees(np.arctan2(pts[:, 1], pts[:, 0]))) == pytest.approx(-20.0, abs=1.0)
    cells, _ = tr.memory.cells(now, (0.0, 0.0, 0.0))
    assert np.median(cells[:, 1]) == pytest.approx(0.0, abs=0.02)  # remembered straight along odom x
    # stamps off the node's clock (another clock, or a stale message) fall back to the receipt time
    assert message_time(10.0, 10.0 - STAMP_AHEAD_S - 0.1) == (10.0 - STAMP_AHEAD_S - 0.1, False)
    assert message_time(0.0, 3.0) == (3.0, True)  # unstamped: receipt time, nothing to warn about


def test_without_odometry_around_the_capture_the_frame_is_placed_at_the_current_pose():
    tr, _, _ = _tracker(memory_s=5.0)
    tr.intrinsics = K
    tr.add_odom(1.0, (0.0, 0.0, 0.0))  # history starts after the capture stamp
    tr.add_depth(1.0, _Frames(_wall(1.0)), W, H, stamp=0.5)
    pts = tr.points(1.0, (0.0, 0.0, math.radians(10.0)), 0.0)
    assert np.median(pts[:, 1]) == pytest.approx(0.0, abs=0.03)  # as received: no pose to correct with
