"""Depth fusion into obstacle memory: the obstacle points the motion executor checks (pure numpy).

:class:`ObstacleTracker` keeps the newest depth frame (decoded lazily: only when the executor asks
for obstacles), projects it to ground-frame points under ``base_link`` with the camera's current
pitch, keeps the points of the obstacles between the configured heights, and fuses them into an
:class:`~havln_robot.motion.safety.ObstacleMemory` (odom frame) so that obstacles that left the
camera's view (below the nose of a level camera) are still avoided. motion_node is its ROS shell.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from havln_robot.motion.safety import (
    CameraMount,
    Intrinsics,
    ObstacleMemory,
    ViewRegion,
    blind_zone_m,
    depth_free_space,
    depth_to_points,
    obstacle_points,
)

Pose2D = tuple[float, float, float]  # x m, y m, yaw rad (odom frame)


@dataclass(frozen=True)
class TrackerConfig:
    """Obstacle tracker settings (the ``motion_node`` parameters of the same meaning).

    Attributes:
        stride: use every n-th depth pixel (``depth_stride``).
        min_m, max_m: valid depth range, m (``depth_min_m``, ``depth_max_m``).
        min_height_m, max_height_m: obstacle heights above the ground, m.
        step_m: climbable step height, m (``max_step_height_m``; stairs and ramps are terrain,
            :func:`~havln_robot.motion.safety.climbable_mask`); None = every point in the band blocks.
        memory_s: how long points stay remembered, s (0 = no memory).
        depth_timeout_s: a depth frame older than this is not used, s.
    """

    stride: int = 4
    min_m: float = 0.1
    max_m: float = 4.0
    min_height_m: float = 0.05
    max_height_m: float = 1.0
    step_m: float | None = None
    memory_s: float = 0.0
    depth_timeout_s: float = 0.5

    @classmethod
    def from_params(cls, p: Any) -> TrackerConfig:
        """From a validated ``motion_node`` parameter dict (see :data:`havln_robot.motion.params.MOTION_PARAMS`)."""
        return cls(
            stride=p["depth_stride"],
            min_m=p["depth_min_m"],
            max_m=p["depth_max_m"],
            min_height_m=p["obstacle_min_height_m"],
            max_height_m=p["obstacle_max_height_m"],
            step_m=p["max_step_height_m"] if p["max_step_height_m"] > 0 else None,
            memory_s=p["obstacle_memory_s"],
            depth_timeout_s=p["depth_timeout_s"],
        )


class ObstacleTracker:
    """Obstacle points in base_link from the newest depth frame plus the remembered ones.

    Args:
        cfg: settings.
        mount: the camera mount (its ``pitch`` is the fixed mount pitch; :meth:`points` takes the
            current total pitch).
        on_frame: called with ``(depth_m, mount)`` for each newly decoded frame (e.g. a person
            detector on the same frame).
        warn: called with a one-line message when a frame cannot be decoded.

    Attributes:
        intrinsics: depth camera intrinsics (set from camera_info); None until known.
        memory: the :class:`ObstacleMemory` (odom frame).
    """

    def __init__(
        self,
        cfg: TrackerConfig,
        mount: CameraMount,
        on_frame: Callable[[np.ndarray, CameraMount], None] | None = None,
        warn: Callable[[str], None] = lambda s: None,
    ) -> None:
        self.cfg = cfg
        self.mount = mount
        self.on_frame = on_frame
        self.warn = warn
        self.intrinsics: Intrinsics | None = None
        self.memory = ObstacleMemory(keep_s=cfg.memory_s)
        self._load: Callable[[], np.ndarray] | None = None
        self._size = (0, 0)
        self._frame_t = -np.inf
        self._seq = 0
        self._cache: tuple[int, float, np.ndarray] | None = None

    @property
    def frames(self) -> int:
        """Depth frames added so far."""
        return self._seq

    def time_reset(self) -> None:
        """The clock jumped back (sim reset): forget the depth frame and the remembered obstacles,
        whose times are now in the future (intrinsics are kept)."""
        self.memory = ObstacleMemory(keep_s=self.cfg.memory_s)
        self._load, self._frame_t, self._cache = None, -np.inf, None

    def add_depth(self, t: float, load: Callable[[], np.ndarray], width: int, height: int) -> None:
        """A new depth frame received at time ``t`` (s).

        Args:
            t: receipt time, s (the caller's clock).
            load: returns the (H, W) float32 depth in metres (0 / nan = no return); called lazily,
                at most once per frame and pitch; may raise ValueError (bad encoding).
            width: image width, px.
            height: image height, px.
        """
        self._load, self._size, self._frame_t = load, (int(width), int(height)), float(t)
        self._seq += 1

    def points(self, t: float, odom: Pose2D | None, pitch: float) -> np.ndarray | None:
        """(N, 2) float32 obstacle points in base_link at time ``t``; None when no fresh depth frame.

        Args:
            t: now, s (same clock as :meth:`add_depth`).
            odom: current odom pose (x m, y m, yaw rad), None when unknown (then no memory).
            pitch: current total camera pitch, rad (mount pitch plus any virtual pitch).
        """
        cfg, k = self.cfg, self.intrinsics
        if self._load is None or k is None or t - self._frame_t > cfg.depth_timeout_s:
            return None
        key = self._seq
        if self._cache is None or self._cache[0] != key or self._cache[1] != pitch:
            try:
                depth_m = self._load()
            except ValueError as exc:
                self.warn(str(exc))
                depth_m = None
            if depth_m is not None:
                mount = CameraMount(self.mount.x, self.mount.y, self.mount.z, pitch)
                xyz = depth_to_points(depth_m, k, mount, cfg.stride, cfg.min_m, cfg.max_m)
                if self.on_frame is not None:
                    self.on_frame(depth_m, mount)
                pts3 = obstacle_points(
                    xyz, cfg.min_height_m, cfg.max_height_m, keep_z=True, step_m=cfg.step_m, blind_m=blind_zone_m(k, mount)
                )
                self._cache = (key, pitch, np.ascontiguousarray(pts3[:, :2]))
                if odom is not None and cfg.memory_s > 0:
                    view = ViewRegion.from_camera(k, self._size[0], self._size[1], mount, cfg.min_height_m, cfg.max_m, cfg.min_m)
                    self.memory.add(self._frame_t, pts3, odom, view, free=depth_free_space(depth_m, k, mount, cfg.min_m))
        if self._cache is None or self._cache[0] != key:
            return None
        pts = self._cache[2]
        if odom is not None and cfg.memory_s > 0:
            pts = np.concatenate([pts, self.memory.points(t, odom)])
        return pts
