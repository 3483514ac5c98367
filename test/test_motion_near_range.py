"""A wall closer than the depth camera's minimum range (min-Z) is not seen -- the D435i and
sim_node publish 0 there -- so motion_node must keep remembering it rather than read the hole as
"gone" (live runs drove into walls the batch world refused at; the memory forgot every
wall that came nearer than ``depth_min_m`` straight ahead)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from havln_robot.motion.obstacles import ObstacleTracker, TrackerConfig
from havln_robot.motion.safety import CameraMount, Footprint, Intrinsics, Obstacles, ViewRegion, forward_hazard

K = Intrinsics.from_hfov(320, 240, 69.4)
MOUNT = CameraMount(x=0.30, y=0.0, z=0.4125, pitch=0.0)  # config/sim.yaml
FP = Footprint(length=0.7, width=0.31, radius=0.383)  # config/sim.yaml's disc
MIN_Z = 0.2  # config/sim.yaml: sim_node's depth_min_m (D435i min-Z)
CONFIG = Path(__file__).resolve().parents[1] / "config"


def wall_depth(dist_cam: float, half_width: float = np.inf, min_z: float = MIN_Z) -> np.ndarray:
    """Depth image (m) of a level camera facing a wall (or a post ``2 * half_width`` wide, centred)
    ``dist_cam`` m ahead, floor around it; 0 where nothing returns: beyond 10 m or nearer than
    ``min_z`` (min-Z), as the camera publishes it."""
    v, u = np.mgrid[0 : K.height, 0 : K.width].astype(np.float64)
    dy, dz = -(u - K.cx) / K.fx, -(v - K.cy) / K.fy
    floor = np.where(dz < 0, MOUNT.z / np.maximum(-dz, 1e-9), np.inf)
    post = np.abs(dist_cam * dy) <= half_width
    depth = np.where(post, np.minimum(floor, dist_cam), floor)
    depth[(depth < min_z) | (depth > 10.0)] = 0.0
    return depth.astype(np.float32)


def approach(wall_x: float, positions: list[float], min_m: float, half_width: float) -> list[bool]:
    """Walk the tracker towards a post at map x ``wall_x``; per position: is a 0.25 m step blocked?"""
    tr = ObstacleTracker(TrackerConfig(stride=2, min_m=min_m, max_m=4.0, min_height_m=0.06, max_height_m=0.6, memory_s=3.0), MOUNT)
    tr.intrinsics = K
    out = []
    for i, pos in enumerate(positions):
        t = 0.4 * i
        depth = wall_depth(wall_x - pos - MOUNT.x, half_width)
        tr.add_depth(t, lambda d=depth: d, K.width, K.height)
        pts = tr.points(t + 0.01, (float(pos), 0.0, 0.0), 0.0)
        out.append(pts is not None and forward_hazard(Obstacles(points=pts), FP, 0.25, 0.10, 0.05, 0.45, 12) is not None)
    return out


@pytest.mark.parametrize("half_width", [0.08, 0.2, np.inf])
def test_an_obstacle_inside_the_minimum_range_stays_remembered_and_blocks(half_width):
    # a door-frame post, a pillar, a wall: seen at 0.95 m, 0.70 m, 0.45 m from the camera, then
    # at 0.15 m, inside min-Z, a hole in the depth image; a step must still be refused there (the
    # robot's nose is 0.08 m from it)
    assert approach(1.25, [0.0, 0.25, 0.5, 0.8], min_m=MIN_Z, half_width=half_width) == [False, False, False, True]


def test_the_view_region_excludes_the_near_range():
    view = ViewRegion.from_camera(K, K.width, K.height, MOUNT, 0.06, 4.0, min_range=MIN_Z)
    x = np.array([MOUNT.x + 0.1, MOUNT.x + 0.3])
    assert view.contains(x, np.zeros(2), np.full(2, 0.5)).tolist() == [False, True]


def test_an_obstacle_that_left_the_view_is_still_forgotten():
    # the near-range rule must not keep what the camera can see is gone: a wall seen at 0.9 m that
    # then vanishes (a door opened) is dropped at the next frame
    tr = ObstacleTracker(TrackerConfig(stride=2, min_m=MIN_Z, max_m=4.0, min_height_m=0.06, max_height_m=0.6, memory_s=3.0), MOUNT)
    tr.intrinsics = K
    d0, d1 = wall_depth(0.9), wall_depth(np.inf)
    tr.add_depth(0.0, lambda: d0, K.width, K.height)
    assert len(tr.points(0.01, (0.0, 0.0, 0.0), 0.0))
    tr.add_depth(0.1, lambda: d1, K.width, K.height)
    assert len(tr.points(0.11, (0.0, 0.0, 0.0), 0.0)) == 0


@pytest.mark.parametrize("profile", ["sim.yaml", "gazebo.yaml", "go2.yaml"])
def test_motion_node_depth_min_is_not_below_the_cameras(profile):
    """motion_node's ``depth_min_m`` is where its view region starts: below the camera's own min-Z
    it would read the camera's no-return holes as free space and forget a wall there."""
    cfg = yaml.safe_load((CONFIG / profile).read_text())
    motion = next(v["ros__parameters"] for k, v in cfg.items() if k.endswith("motion_node"))
    cams = [v["ros__parameters"]["depth_min_m"] for k, v in cfg.items() if k.endswith("sim_node") and "depth_min_m" in v["ros__parameters"]]
    assert motion["depth_min_m"] >= max(cams + [MIN_Z]) - 1e-9


def test_gazebo_depth_camera_clips_no_nearer_than_motion_node_looks():
    import re

    sdf = (Path(__file__).resolve().parents[1] / "gazebo" / "go2_base.sdf").read_text()
    near = [float(m) for m in re.findall(r"<depth_camera><clip><near>([0-9.]+)</near>", sdf)]
    motion = next(
        v["ros__parameters"] for k, v in yaml.safe_load((CONFIG / "gazebo.yaml").read_text()).items() if k.endswith("motion_node")
    )
    assert near and motion["depth_min_m"] >= max(near) - 1e-9


def _tracker() -> ObstacleTracker:
    tr = ObstacleTracker(TrackerConfig(stride=2, min_m=MIN_Z, max_m=4.0, min_height_m=0.06, max_height_m=0.6, memory_s=3.0), MOUNT)
    tr.intrinsics = K
    return tr


def _remembered_near(tr: ObstacleTracker, t: float, x: float) -> bool:
    pts = tr.points(t, (0.0, 0.0, 0.0), 0.0)
    return bool(len(pts) and (np.abs(pts[:, 0] - x) < 0.06).any())


def test_a_hole_in_the_depth_image_is_no_evidence_that_an_obstacle_left():
    """The same kind as min-Z: a dark or shiny post returns no depth (0) although it is in range;
    the memory keeps it -- only a reading that reaches past a cell frees it."""
    tr = _tracker()
    seen = wall_depth(0.6, half_width=0.15)
    hole = seen.copy()
    hole[seen == np.float32(0.6)] = 0.0  # the post's pixels: no return
    tr.add_depth(0.0, lambda: seen, K.width, K.height)
    assert _remembered_near(tr, 0.01, MOUNT.x + 0.6)
    tr.add_depth(0.1, lambda: hole, K.width, K.height)
    assert _remembered_near(tr, 0.11, MOUNT.x + 0.6)


def test_an_obstacle_hidden_behind_a_nearer_one_stays_remembered():
    """A person stepping between the robot and a remembered post hides it; the post is not gone."""
    tr = _tracker()
    post = wall_depth(1.2, half_width=0.1)
    tr.add_depth(0.0, lambda: post, K.width, K.height)
    assert _remembered_near(tr, 0.01, MOUNT.x + 1.2)
    v, u = np.mgrid[0 : K.height, 0 : K.width].astype(np.float64)
    dy = -(u - K.cx) / K.fx
    hidden = post.copy()
    legs = np.abs(0.5 * dy) <= 0.2  # a body 0.5 m ahead, 0.4 m wide, taller than the camera
    hidden[legs] = 0.5
    tr.add_depth(0.1, lambda: hidden, K.width, K.height)
    assert _remembered_near(tr, 0.11, MOUNT.x + 1.2)
