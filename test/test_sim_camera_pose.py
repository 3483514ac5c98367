"""The simulated camera stands on the floor the renderer draws.

val_seen episode 5593 starts 0.32 m below its floor's drawn height: sim_node rendered the camera
at the body's blended ground height, motion_node saw the drawn floor as a 0.32 m obstacle in every
direction and refused every MOVE_FORWARD ("blocked before start: ... depth points 0.03 m ahead of
the footprint"). The fix (``World.camera_pose``) is used by sim_node (``SimSession.view``), eval and
training rollouts. Cost: ~5-10 s (two 640x480 renders of a real scan).
"""

from __future__ import annotations

import numpy as np

from havln_robot.actions import FORWARD_STEP_M
from havln_robot.camera import Intrinsics
from havln_robot.config import load_profile
from havln_robot.episodes import load_episodes
from havln_robot.motion.executor import MotionConfig
from havln_robot.motion.safety import CameraMount, Obstacles, depth_to_points, forward_hazard, obstacle_points
from havln_robot.paths import config_dir
from havln_robot.sim.humans import Crowd
from havln_robot.sim.render import Renderer
from havln_robot.sim.scene import Scene
from havln_robot.sim.session import SimSession
from havln_robot.sim.world import World


def _hazard_ahead(world: World, pose, motion: dict, sim: dict):
    """motion_node's verdict on a MOVE_FORWARD, from a depth image rendered at ``pose`` with the sim profile's camera."""
    w, h, hfov = sim["camera_width"], sim["camera_height"], sim["camera_hfov_deg"]
    r = Renderer(world.scene, world.crowd, width=w, height=h, hfov_deg=hfov, camera_height_m=sim["camera_z_m"])
    try:
        _, depth = r.render(pose, 0.0, world.t)
    finally:
        r.close()
    mount = CameraMount(motion["camera_x_m"], motion["camera_y_m"], motion["camera_z_m"], 0.0)
    xyz = depth_to_points(
        depth.astype(np.float32),
        Intrinsics.from_hfov(w, h, hfov),
        mount,
        motion["depth_stride"],
        motion["depth_min_m"],
        motion["depth_max_m"],
    )
    obs = Obstacles(points=obstacle_points(xyz, motion["obstacle_min_height_m"], motion["obstacle_max_height_m"]))
    cfg = MotionConfig.from_params(motion)
    return forward_hazard(obs, cfg.footprint, FORWARD_STEP_M, cfg.front_margin, cfg.side_margin, cfg.personal_space, cfg.min_points)


def test_the_camera_stands_on_the_drawn_floor_and_the_open_floor_is_free(havln_data):
    ep = next(e for e in load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json") if e.episode_id == "5593")
    world = World(Scene.load(ep.scan, havln_data / "connectivity"), ep, Crowd([]), seed=0)
    x, y, z_body, yaw = world.pose
    cx, cy, cz, cyaw = world.camera_pose
    assert (cx, cy, cyaw) == (x, y, yaw) and abs(cz - z_body) > 0.2  # the case: the body stands 0.32 m below the drawn floor
    prof = load_profile(config_dir() / "sim.yaml")
    motion, sim = prof.nodes["motion_node"], prof.nodes["sim_node"]
    # from the body's z (the old rendering) the drawn floor is a wall all round; from the drawn floor the way is open
    assert _hazard_ahead(world, world.pose, motion, sim) is not None
    assert _hazard_ahead(world, world.camera_pose, motion, sim) is None


def test_sim_node_renders_from_the_camera_pose(havln_data):
    """sim_node's frames come from ``SimSession.view``: it must hand out the camera pose."""
    ep = next(e for e in load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json") if e.episode_id == "5593")
    s = SimSession(Scene.load(ep.scan, havln_data / "connectivity"), ep)
    pose, _, _ = s.view()
    assert pose == s.world.camera_pose and pose != s.world.pose


def test_flat_floor_scene_and_builtin_camera_pose_match_where_the_floor_is_flat():
    """On the builtin scene the body stands on the drawn floor: the camera pose is the body pose."""
    from havln_robot.episodes import builtin_episode

    w = World(Scene.builtin(), builtin_episode(), Crowd([]), seed=0)
    assert w.camera_pose == w.pose
