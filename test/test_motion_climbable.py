"""The climbable-terrain rule: stairs and ramps the Go2 walks up are ground, walls,
legs and furniture faces stay obstacles -- on ray-cast depth images with known geometry, through
the same functions motion_node uses (depth_to_points -> obstacle_points -> forward_hazard)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from havln_robot.motion.obstacles import ObstacleTracker, TrackerConfig
from havln_robot.motion.safety import (
    GO2_MAX_STEP_M,
    CameraMount,
    Footprint,
    Intrinsics,
    Obstacles,
    blind_zone_m,
    climbable_mask,
    depth_to_points,
    forward_hazard,
    obstacle_points,
)

K = Intrinsics.from_hfov(320, 240, 69.4)  # D435i colour HFOV, 4:3 like sim_node's 640x480
MOUNT = CameraMount(x=0.30, y=0.0, z=0.4125, pitch=0.0)  # config/sim.yaml
FP = Footprint(length=0.7, width=0.31, radius=0.383)  # config/sim.yaml's disc


def _rays(k=K, h=240, w=320):
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    return -(u - k.cx) / k.fx, -(v - k.cy) / k.fy  # (dy, dz) per unit of optical depth (level camera)


def ramp_depth(start_x: float, slope_deg: float, rise: float = 1.5, wall_x: float | None = None) -> np.ndarray:
    """Depth (m) of a level camera at MOUNT facing a ramp (a drawn staircase) that starts
    ``start_x`` m ahead of base_link and rises at ``slope_deg`` to a landing ``rise`` m up; floor
    before it; optionally a wall ``wall_x`` ahead of base_link."""
    dy, dz = _rays()
    m = math.tan(math.radians(slope_deg))
    floor = np.where(dz < 0, MOUNT.z / np.maximum(-dz, 1e-9), np.inf)
    floor = np.where(MOUNT.x + floor < start_x, floor, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (MOUNT.z - m * (MOUNT.x - start_x)) / (m - dz)
    z = MOUNT.z + t * dz
    ramp = np.where((t > 0) & (MOUNT.x + t >= start_x) & (z <= rise), t, np.inf)
    with np.errstate(divide="ignore"):
        t2 = np.where(dz > 0, (rise - MOUNT.z) / dz, np.inf)  # the landing, seen from below when rise > camera
    landing = np.where((t2 > 0) & (MOUNT.x + t2 >= start_x + rise / m), t2, np.inf)
    depth = np.minimum(np.minimum(floor, ramp), landing)
    if wall_x is not None:
        depth = np.minimum(depth, np.full_like(depth, wall_x - MOUNT.x))
    depth[~np.isfinite(depth)] = 0.0
    return depth.astype(np.float32)


def box_depth(dist_x: float, height: float, half_width: float = 0.6) -> np.ndarray:
    """Depth of the floor and a box face ``dist_x`` ahead of base_link, ``height`` tall."""
    dy, dz = _rays()
    floor = np.where(dz < 0, MOUNT.z / np.maximum(-dz, 1e-9), np.inf)
    d = dist_x - MOUNT.x
    zc, yc = MOUNT.z + d * dz, d * dy
    depth = np.where((zc >= 0) & (zc <= height) & (np.abs(yc) <= half_width), np.minimum(floor, d), floor)
    depth[~np.isfinite(depth)] = 0.0
    return depth.astype(np.float32)


def obstacles(depth: np.ndarray, step_m: float | None = GO2_MAX_STEP_M) -> Obstacles:
    xyz = depth_to_points(depth, K, MOUNT, stride=2, min_m=0.1, max_m=4.0)
    return Obstacles(points=obstacle_points(xyz, 0.06, 0.6, step_m=step_m, blind_m=blind_zone_m(K, MOUNT)))


def blocked(depth: np.ndarray, step_m: float | None = GO2_MAX_STEP_M) -> bool:
    return forward_hazard(obstacles(depth, step_m), FP, 0.25, 0.10, 0.05, 0.45, 12) is not None


def test_blind_zone_of_the_level_d435i_on_the_go2():
    # lower image edge 21.25 deg below the horizon (42.5 deg VFOV at 4:3): 0.3 + 0.4125 / tan(21.25 deg)
    assert blind_zone_m(K, MOUNT) == pytest.approx(0.30 + 0.4125 / math.tan(math.atan2(K.height - 1 - K.cy, K.fy)), abs=1e-6)
    assert 1.05 < blind_zone_m(K, MOUNT) < 1.15  # 640x480 at 69.4 deg HFOV: 54.9 deg VFOV
    assert blind_zone_m(K, CameraMount(0.3, 0.0, 0.4125, math.radians(30))) == math.inf  # looking up: no floor


def approach(ramp_x: float, slope_deg: float, step_m: float | None) -> list[bool]:
    """Walk towards a staircase starting ``ramp_x`` m ahead in 0.25 m steps as motion_node sees it
    (one depth frame per stop into its ObstacleTracker, 3 s memory, odometry exact): whether each
    next MOVE_FORWARD is blocked, until the robot stands on the first step."""
    cfg = TrackerConfig(stride=2, min_m=0.1, max_m=4.0, min_height_m=0.06, max_height_m=0.6, step_m=step_m, memory_s=3.0)
    tr = ObstacleTracker(cfg, MOUNT)
    tr.intrinsics = K
    out = []
    for i, pos in enumerate(np.arange(0.0, ramp_x - 0.2, 0.25)):
        t = 0.5 * i
        depth = ramp_depth(ramp_x - pos, slope_deg)
        tr.add_depth(t, lambda d=depth: d, K.width, K.height)
        pts = tr.points(t + 0.01, (float(pos), 0.0, 0.0), 0.0)
        out.append(forward_hazard(Obstacles(points=pts), FP, 0.25, 0.10, 0.05, 0.45, 12) is not None)
    return out


@pytest.mark.parametrize("slope_deg", [25.0, 32.0, 38.0])
@pytest.mark.parametrize("ramp_x", [1.0, 2.0])
def test_stairs_ahead_are_ground_not_an_obstacle(ramp_x, slope_deg):
    """The reported case: every MOVE_FORWARD onto a staircase was refused ("blocked before start:
    N depth points 0.0x m ahead") because the rising steps lie in the 0.06-0.6 m band. With the
    rule every step of the approach is free, up to the foot of the flight (inside the camera's
    blind zone, where the remembered points used to block)."""
    assert any(approach(ramp_x, slope_deg, None)), "the band alone blocks the stairs (the old rule)"
    assert not any(approach(ramp_x, slope_deg, GO2_MAX_STEP_M)), f"stairs at {slope_deg:.0f} deg are refused"


def test_a_wall_at_the_top_of_the_stairs_still_blocks_and_walls_always_do():
    assert blocked(ramp_depth(0.5, 32.0, wall_x=0.7))  # the corridor of a 0.25 m step ends 0.73 m ahead
    assert blocked(box_depth(0.7, 2.5))  # a wall 0.7 m ahead: its 5 cm column is far taller than a step


def test_a_face_taller_than_the_step_blocks_and_a_flat_box_top_blocks_within_the_step_too():
    assert blocked(box_depth(0.7, 0.45))
    # a single flat top does not rise like a flight: an obstacle even when its face is within the step
    assert blocked(box_depth(0.7, 0.30), step_m=0.35), "a box top taken for a stair tread"
    assert blocked(box_depth(0.7, 0.30), step_m=None)


def test_a_floating_edge_beyond_visible_floor_is_not_climbable():
    """A bench seat / table apron 0.45 m up, 2 m ahead, with the floor seen in front of it: a flat
    surface, but not reachable in steps from the floor -- it stays an obstacle."""
    pts = [(x, y, 0.0) for x in np.arange(1.4, 1.95, 0.02) for y in np.arange(-0.3, 0.3, 0.02)]  # floor
    pts += [(x, y, 0.45) for x in np.arange(2.0, 2.3, 0.02) for y in np.arange(-0.3, 0.3, 0.02)]  # the edge
    xyz = np.asarray(pts)
    m = climbable_mask(xyz, GO2_MAX_STEP_M, blind_m=1.36)
    assert m[xyz[:, 2] == 0.0].all()
    assert not m[xyz[:, 2] == 0.45].any()


def test_tracker_drops_stairs_from_a_depth_frame_as_motion_node_does():
    """motion_node's ObstacleTracker (max_step_height_m from its parameters) on the ramp frame."""
    cfg = TrackerConfig(stride=2, min_m=0.1, max_m=4.0, min_height_m=0.06, max_height_m=0.6, step_m=GO2_MAX_STEP_M, memory_s=3.0)
    tr = ObstacleTracker(cfg, MOUNT)
    tr.intrinsics = K
    depth = ramp_depth(0.6, 32.0)
    tr.add_depth(0.0, lambda: depth, K.width, K.height)
    pts = tr.points(0.01, (0.0, 0.0, 0.0), 0.0)
    assert pts is not None
    assert forward_hazard(Obstacles(points=pts), FP, 0.25, 0.10, 0.05, 0.45, 12) is None
