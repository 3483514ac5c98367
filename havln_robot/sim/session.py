"""One running simulator episode behind ``sim_node`` (pure Python, no ROS import).

A :class:`SimSession` ties the sim core (``Scene``, ``Crowd``, ``World`` of
:mod:`havln_robot.sim`) to the Go2 model (:class:`havln_robot.sim.robot.NoisyBase`) and
computes everything sim_node publishes except images: noisy odometry, IMU, ground truth, people.
:func:`open_episode` picks the scene and episode from sim_node's parameters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from havln_robot.episodes import Episode, EpisodeError, builtin_episode, load_episodes
from havln_robot.paths import input_file_problem, input_folder_problem, resolve
from havln_robot.sim.humans import Crowd
from havln_robot.sim.robot import BaseLimits, NoiseModel, NoisyBase, StepOutcome, base_config  # noqa: F401 (re-exported for sim_node)
from havln_robot.sim.scene import Scene, SceneError
from havln_robot.sim.world import World, WorldError
from havln_robot.text import plural
from havln_robot.topics import GROUND_TRUTH_KEYS


class SessionError(ValueError):
    """The requested scene/episode cannot be opened; the one-line message names the parameter and the fix."""


@dataclass(frozen=True)
class Opened:
    """A scene and episode chosen from parameters, with a one-line note for the log.

    Attributes:
        fallback: the builtin scene runs because the data named by the parameters is unusable
            (``scene_source: auto``); the note says why, and sim_node logs it as a warning.
    """

    scene: Scene
    episode: Episode
    note: str
    fallback: bool = False


def episode_data_problem(p: Mapping[str, Any]) -> tuple[str, Path, str] | None:
    """What is wrong with sim_node's ``episodes_file`` / ``connectivity_dir``, first one first:
    ``(parameter, resolved path, problem)`` with the problem worded by
    :func:`havln_robot.paths.input_file_problem` / :func:`~havln_robot.paths.input_folder_problem`
    (``"not found"``, ``"is a folder, not a file"``, ``"is a file, not a folder"``, ...); None when both
    are usable or ``scene_source: builtin`` needs neither.
    """
    if p.get("scene_source", "auto") == "builtin":
        return None
    ep_file = resolve(p.get("episodes_file", "$DATA/ha_r2r_de/HA_val_seen.json"))
    why = input_file_problem(ep_file)
    if why is not None:
        return "episodes_file", ep_file, why
    conn = resolve(p.get("connectivity_dir", "$DATA/connectivity"))
    why = input_folder_problem(conn)
    return None if why is None else ("connectivity_dir", conn, why)


def missing_episode_data(p: Mapping[str, Any]) -> Path | None:
    """The first of ``episodes_file`` / ``connectivity_dir`` (sim_node parameters) that is unusable
    (absent, or a folder where a file is wanted and the reverse), else None (:func:`episode_data_problem`).

    ``scene_source: builtin`` needs neither, so it returns None.
    """
    problem = episode_data_problem(p)
    return None if problem is None else problem[1]


def open_episode(p: Mapping[str, Any]) -> Opened:
    """Choose the scene and episode from sim_node parameters.

    Uses ``scene_source`` ('auto' | 'episodes' | 'builtin'), ``episodes_file``, ``connectivity_dir``,
    ``episode_id``, ``episode_index``, ``instruction_index``, ``corridor_width_m``
    (see :data:`havln_robot.sim.params.SIM_NODE_PARAMS`).

    Raises:
        SessionError: the file or episode is missing / unreadable (message names the parameter).
    """
    source = p.get("scene_source", "auto")
    if source == "builtin":
        return Opened(Scene.builtin(), builtin_episode(), "builtin scene and episode (scene_source=builtin)")
    ep_file = resolve(p.get("episodes_file", "$DATA/ha_r2r_de/HA_val_seen.json"))
    conn = resolve(p.get("connectivity_dir", "$DATA/connectivity"))
    problem = episode_data_problem(p)
    if problem is not None:
        key, path, why = problem
        if source == "auto":
            head = f"HA-VLN data not found ({path})" if why == "not found" else f"HA-VLN data not usable ({key} {path}: {why})"
            return Opened(
                Scene.builtin(),
                builtin_episode(),
                f"{head}; using the builtin scene and episode (set episodes_file/connectivity_dir to run real episodes)",
                fallback=True,
            )
        raise SessionError(f"{key}: {path}: {why}; point it at the HA-VLN data or set scene_source to builtin")
    eid = str(p.get("episode_id", "") or "")
    idx = int(p.get("episode_index", 0))
    try:
        eps = load_episodes(ep_file, conn, limit=None if eid else idx + 1, instruction_index=int(p.get("instruction_index", 0)))
    except EpisodeError as exc:
        raise SessionError(f"episodes_file: {exc}") from None
    if eid:
        match = [e for e in eps if e.episode_id == eid]
        if not match:
            raise SessionError(f"episode_id: {eid!r} is not in {ep_file} (ids look like {eps[0].episode_id!r}); fix episode_id or clear it")
        ep = match[0]
        where = f"episode_id {eid}"
    else:
        if idx >= len(eps):
            raise SessionError(f"episode_index: {idx} is out of range, {ep_file} has {len(eps)} episodes (0..{len(eps) - 1})")
        ep = eps[idx]
        where = f"episode_index {idx}"
    try:
        scenes_dir = str(p.get("scenes_dir", "") or "")
        if scenes_dir:
            from havln_robot.sim.mesh_scene import load_scene

            scenes_dir = str(resolve(scenes_dir))
            scene = load_scene(
                ep.scan, conn, scenes_dir, up=str(p.get("scenes_up", "y")), corridor_width=float(p.get("corridor_width_m", 1.2))
            )
        else:
            scene = Scene.load(ep.scan, conn, corridor_width=float(p.get("corridor_width_m", 1.2)))
    except (SceneError, OSError) as exc:
        msg = str(exc)
        if msg.startswith("--scenes/scenes_dir: "):  # the mesh folder or file is missing
            raise SessionError(msg.replace("--scenes/scenes_dir: ", "scenes_dir: ", 1)) from None
        key = "scenes_dir" if p.get("scenes_dir") and "scene mesh" in msg else "connectivity_dir"
        raise SessionError(f"{key}: scene {ep.scan} of episode {ep.episode_id}: {msg}") from None
    return Opened(
        scene, ep, f"episode {ep.episode_id} ({where}) of {Path(ep_file).name}, scan {ep.scan}, {plural(len(ep.humans), 'person')}"
    )


class SimSession:
    """World + people + noisy Go2 base of one episode.

    Args:
        scene, episode: what to simulate.
        limits, noise: the base model (see :func:`base_config`).
        seed: seeds the people's phases and all noise.
        populate: synthetic people for episodes without any.

    Attributes:
        world: :class:`havln_robot.sim.world.World` (true pose, collisions, sim time ``world.t``).
        crowd: :class:`havln_robot.sim.humans.Crowd`.
        base: :class:`havln_robot.sim.robot.NoisyBase` (odometry, IMU, pitch).
        virtual_pitch: camera pitch set from outside (motion_node's LOOK_UP/DOWN), rad, + = up.

    Raises:
        SessionError: the start pose is not on free space.
    """

    def __init__(
        self,
        scene: Scene,
        episode: Episode,
        limits: BaseLimits | None = None,
        noise: NoiseModel | None = None,
        seed: int = 0,
        populate: int = 0,
    ) -> None:
        self.scene, self.episode, self.seed = scene, episode, int(seed)
        self.crowd = Crowd.from_episode(episode, scene, seed=self.seed, populate=int(populate))
        try:
            self.world = World(scene, episode, self.crowd, seed=self.seed)
        except WorldError as exc:
            raise SessionError(f"episode {episode.episode_id}: {exc}") from None
        self.base = NoisyBase(self.world, limits, noise, seed=self.seed)
        self.virtual_pitch = 0.0

    def reset(self) -> None:
        """Restart the episode: robot at the start, t = 0, counters and odometry zeroed, same noise seed."""
        self.world.reset()
        self.base.reset(self.seed)
        self.virtual_pitch = 0.0

    def step(self, dt: float) -> StepOutcome:
        """Advance the base, world and people by ``dt`` s (see :meth:`NoisyBase.step`)."""
        return self.base.step(dt)

    @property
    def camera_pitch(self) -> float:
        """Camera elevation, rad, positive up: body pitch (cmd_vel) + virtual pitch (action results)."""
        return self.base.pitch + self.virtual_pitch

    def view(self) -> tuple[tuple[float, float, float, float], float, float]:
        """What the camera sees now: (true pose (x, y, z, yaw), camera pitch rad, sim time s)."""
        return self.world.camera_pose, self.camera_pitch, self.world.t

    def humans(self) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """People now: positions (M, 3) map frame m, headings (M,) rad, ids."""
        t = self.world.t
        return self.crowd.positions(t), self.crowd.headings(t), list(self.crowd.ids)

    def people_local(self, max_range_m: float = 10.0) -> list[tuple[int, float, float, float]]:
        """People relative to the TRUE body pose (what a perfect detector would report).

        Returns:
            [(human_id, x, y, yaw)] in base_link (m, rad), people on the robot's floor (|dz| < 1 m)
            within ``max_range_m``, nearest first.
        """
        x, y, z, yaw = self.world.pose
        pos, head, ids = self.humans()
        c, s = math.cos(yaw), math.sin(yaw)
        out = []
        for (px, py, pz), h, hid in zip(pos, head, ids, strict=False):
            dx, dy = px - x, py - y
            if abs(pz - z) >= 1.0 or math.hypot(dx, dy) > max_range_m:
                continue
            rel_yaw = (h - yaw + math.pi) % (2 * math.pi) - math.pi
            out.append((int(hid), c * dx + s * dy, -s * dx + c * dy, rel_yaw))
        out.sort(key=lambda r: math.hypot(r[1], r[2]))
        return out

    def ground_truth(self) -> dict[str, Any]:
        """Ground-truth record with exactly :data:`havln_robot.topics.GROUND_TRUTH_KEYS`
        (map frame pose, walkable and straight-line distance to the goal with the unreachable flag,
        nearest person, collision counts, path length)."""
        w = self.world
        x, y, z, yaw = w.pose
        hid, hd = w.nearest_human()
        gd = w.goal_distance()
        rec = {
            "episode_id": self.episode.episode_id,
            "scan": self.episode.scan,
            "x": float(x),
            "y": float(y),
            "z": float(z),
            "yaw_deg": math.degrees(yaw),
            "distance_to_goal_m": float(gd.ne),
            "distance_to_goal_euclid_m": float(gd.euclid),
            "goal_unreachable": bool(gd.unreachable),
            "nearest_human_m": float(hd) if math.isfinite(hd) else "",  # "" = nobody on this floor
            "nearest_human_id": "" if hid is None else int(hid),
            "collisions_human": int(w.collisions["human"]),
            "collisions_static": int(w.collisions["static"]),
            "path_length_m": float(w.path_length),
            "goal_x": float(self.episode.goal_position[0]),
            "goal_y": float(self.episode.goal_position[1]),
            "people": len(self.episode.humans),
            "region": next((h.region for h in self.episode.humans if h.region), ""),
        }
        return {k: rec[k] for k in GROUND_TRUTH_KEYS}

    def odom_covariance(self) -> tuple[list[float], list[float]]:
        """Row-major 6x6 pose and twist covariances for nav_msgs/Odometry (x, y, z, roll, pitch, yaw).

        Pose: the variance the odometry random walk has accumulated since reset (x, y, yaw);
        z/roll/pitch are not estimated (large variance 1e3, planar robot). Twist: per-sample noise.
        """
        o = self.base.odom
        pose = [0.0] * 36
        pose[0] = pose[7] = max(o.var_xy, 1e-9)
        pose[14] = pose[21] = pose[28] = 1e3
        pose[35] = max(o.var_yaw, 1e-9)
        n = self.base.noise
        twist = [0.0] * 36
        twist[0] = twist[7] = max((n.odom_trans_noise**2) * 0.01, 1e-6)
        twist[14] = twist[21] = twist[28] = 1e3
        twist[35] = max(n.odom_yaw_noise**2 * 0.01, 1e-6)
        return pose, twist

    def imu_covariance(self) -> tuple[list[float], list[float], list[float]]:
        """Row-major 3x3 orientation, angular-velocity and linear-acceleration covariances for sensor_msgs/Imu."""
        n = self.base.noise
        g = max(n.gyro_noise_std**2 + n.gyro_bias_std**2, 1e-9)
        a = max(n.accel_noise_std**2, 1e-9)
        yaw_var = max(n.gyro_bias_std**2 * max(self.world.t, 1.0) ** 2, 1e-6)
        return [1e-4, 0, 0, 0, 1e-4, 0, 0, 0, yaw_var], [g, 0, 0, 0, g, 0, 0, 0, g], [a, 0, 0, 0, a, 0, 0, 0, a]
