"""Depth fusion into obstacle memory: the obstacle points the motion executor checks (pure numpy).

:class:`ObstacleTracker` keeps the newest depth frame (decoded lazily: only when the executor asks
for obstacles), projects it to ground-frame points under ``base_link`` with the camera's current
pitch, keeps the points of the obstacles between the configured heights, and fuses them into an
:class:`~havln_robot.motion.safety.ObstacleMemory` (odom frame) so that obstacles that left the
camera's view (below the nose of a level camera) are still avoided. motion_node is its ROS shell.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from havln_robot.hardware import GO2_HEIGHT_M
from havln_robot.motion.lidar import LidarMount
from havln_robot.motion.safety import (
    CameraMount,
    FloorMemory,
    Intrinsics,
    ObstacleMemory,
    ViewRegion,
    blind_zone_m,
    climbable_mask,
    depth_free_space,
    depth_to_points,
    rebase_points,
)

Pose2D = tuple[float, float, float]  # x m, y m, yaw rad (odom frame)

POSE_HISTORY_S: float = 2.0
"""How far back (s) :class:`PoseHistory` keeps odometry: several depth frames' latency (a frame is
30-150 ms old when it arrives: exposure, rendering or USB transfer, DDS) with room to spare."""


#: A header stamp up to this far ahead of the receiving node's clock is still on that clock, s: with
#: ``use_sim_time`` the node's clock follows ``/clock``, which arrives through the same DDS queues
#: as the sensor messages and lags the publisher's stamps under load (measured here 0.05-0.06 s
#: with four live graphs on two cores); on a robot, NTP-synced hosts differ by milliseconds.
STAMP_AHEAD_S = 0.5
#: A header stamp up to this old is still on the receiving node's clock, s (older: another clock).
STAMP_BEHIND_S = 5.0


def message_time(stamp_s: float, now_s: float) -> tuple[float, bool]:
    """The time (the receiving node's clock, s) a message refers to, and whether its stamp is used.

    Every stream is placed by its header stamp when the stamp is on the node's clock
    (:data:`STAMP_AHEAD_S` ahead to :data:`STAMP_BEHIND_S` behind) -- a stamp AHEAD of the clock
    is kept, not clamped to the receipt time: odometry placed at arrival while depth frames are
    placed at their capture stamps would register every frame with the pose of a later instant
    (a turn at 0.6 rad/s with /clock 60 ms late: 2 deg, 7 cm at 2 m, enough to put a remembered
    wall in a doorway). Consumers clamp ages at 0 (:class:`PoseHistory` answers a time after its
    newest pose with the newest). Unstamped messages (stamp <= 0), a clock not started yet
    (``now_s`` <= 0) and stamps off the clock get the receipt time ``now_s``.

    Args:
        stamp_s: the header stamp, s.
        now_s: the node's clock at receipt, s.

    Returns:
        (time s, True when the stamp is used; False when ``now_s`` is used although the message
        is stamped and the clock runs -- the caller warns: the clocks are not synchronised).
    """
    if stamp_s <= 0 or now_s <= 0:
        return now_s, True
    if -STAMP_AHEAD_S <= now_s - stamp_s <= STAMP_BEHIND_S:
        return stamp_s, True
    return now_s, False


class PoseHistory:
    """Recent odom poses by time, to look up where the robot was when a sensor frame was captured
    (what tf2's buffer does for ``odom -> base_link`` on a full ROS install).

    Args:
        horizon_s: poses older than this behind the newest are dropped, s.
    """

    def __init__(self, horizon_s: float = POSE_HISTORY_S) -> None:
        self.horizon_s = float(horizon_s)
        self._t: list[float] = []
        self._p: list[Pose2D] = []

    def __len__(self) -> int:
        return len(self._t)

    def clear(self) -> None:
        """Forget every pose (the clock jumped back)."""
        self._t, self._p = [], []

    def add(self, t: float, pose: Pose2D) -> None:
        """Record odom ``pose`` (x m, y m, yaw rad) at time ``t`` (s); a time at or before the newest is ignored."""
        if self._t and t <= self._t[-1]:
            return
        self._t.append(float(t))
        self._p.append((float(pose[0]), float(pose[1]), float(pose[2])))
        if self._t[0] < t - self.horizon_s:
            k = bisect.bisect_left(self._t, t - self.horizon_s)
            del self._t[:k], self._p[:k]

    def at(self, t: float) -> Pose2D | None:
        """The pose at time ``t`` (s): interpolated between the two poses around it (yaw the short
        way), the newest when ``t`` is after it (odometry arrives at 50-100 Hz: at most one period
        behind), None when ``t`` is before the oldest kept or nothing is recorded."""
        ts = self._t
        if not ts or t < ts[0]:
            return None
        if t >= ts[-1]:
            return self._p[-1]
        k = bisect.bisect_right(ts, t)
        t0, t1 = ts[k - 1], ts[k]
        (x0, y0, a0), (x1, y1, a1) = self._p[k - 1], self._p[k]
        u = (t - t0) / (t1 - t0)
        da = math.remainder(a1 - a0, 2.0 * math.pi)
        return (x0 + u * (x1 - x0), y0 + u * (y1 - y0), math.remainder(a0 + u * da, 2.0 * math.pi))


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
        depth_timeout_s: a depth frame older than this is not used, s: its age counts from its
            capture stamp when that is on the node's clock (:func:`message_time`), else from its arrival.
        freeze_frames: this many consecutive frames with the same (non-zero) header stamp = the
            camera is frozen (a wedged driver re-sending its last frame); 0 disables.
        step_down_m: largest step down onto seen floor, m (``max_step_down_m``); 0 = the floor is
            not tracked (:class:`~havln_robot.motion.safety.FloorMemory`).
        floor_memory_s: how long seen floor is remembered, s.
        lidar_timeout_s: a LiDAR cloud older than this is not used, s.
        body_m: (half length, half width) of the robot's footprint box, m: LiDAR points inside it
            up to the robot's height (:data:`~havln_robot.hardware.GO2_HEIGHT_M`) are the robot's own
            legs and body (a Go2's L1 hangs under the head and sees its front legs), not obstacles;
            None = keep every point.
    """

    stride: int = 4
    min_m: float = 0.1
    max_m: float = 4.0
    min_height_m: float = 0.05
    max_height_m: float = 1.0
    step_m: float | None = None
    memory_s: float = 0.0
    depth_timeout_s: float = 0.5
    freeze_frames: int = 5
    step_down_m: float = 0.0
    floor_memory_s: float = 60.0
    lidar_timeout_s: float = 0.5
    body_m: tuple[float, float] | None = None

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
            freeze_frames=p.get("depth_freeze_frames", 5),
            step_down_m=p.get("max_step_down_m", 0.0),
            floor_memory_s=p.get("floor_memory_s", 60.0),
            lidar_timeout_s=p.get("lidar_timeout_s", 0.5),
            body_m=(p["footprint_length_m"] / 2.0, p["footprint_width_m"] / 2.0) if "footprint_length_m" in p else None,
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
        poses: recent odom poses (:meth:`add_odom`); a frame is placed in odom at the pose of its
            capture time, and its points are moved into the current base_link when asked for, so
            a frame taken mid-turn neither smears remembered walls into the corridor nor shows
            the obstacles where they were a frame ago. Without odometry around the capture time
            the current pose is used.
        frame_pose: the odom pose the newest decoded frame was placed at (None without odometry).
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
        self._stamp = -np.inf
        self._seq = 0
        self._raw_stamp: object = None
        self._same_stamp = 0
        self._cache: tuple[int, float, np.ndarray, Pose2D | None] | None = None
        self.poses = PoseHistory()
        self.frame_pose: Pose2D | None = None
        self.floor_memory = FloorMemory(keep_s=cfg.floor_memory_s)
        #: cells of raised surfaces seen to rise (stairs, ramps): terrain while later frames see
        #: only their flat top (climbable_mask's ``known``)
        self.terrain_memory = FloorMemory(keep_s=cfg.floor_memory_s)
        self.lidar_mount: LidarMount | None = None
        self._cloud: tuple[float, np.ndarray] | None = None  # (capture time s, (N, 3) ground-frame points)
        self._cloud_done: float | None = None

    @property
    def frames(self) -> int:
        """Depth frames added so far."""
        return self._seq

    def time_reset(self) -> None:
        """The clock jumped back (sim reset): forget the depth frame and the remembered obstacles,
        whose times are now in the future (intrinsics are kept)."""
        self.memory = ObstacleMemory(keep_s=self.cfg.memory_s)
        self.floor_memory.clear()
        self.terrain_memory.clear()
        self._cloud, self._cloud_done = None, None
        self._load, self._frame_t, self._stamp, self._cache = None, -np.inf, -np.inf, None
        self._raw_stamp, self._same_stamp = None, 0
        self.poses.clear()
        self.frame_pose = None

    def add_odom(self, t: float, pose: Pose2D) -> None:
        """An odometry pose (x m, y m, yaw rad; odom frame) measured at time ``t`` (s, the :meth:`add_depth` clock)."""
        self.poses.add(t, pose)

    def add_depth(
        self,
        t: float,
        load: Callable[[], np.ndarray],
        width: int,
        height: int,
        stamp: float | None = None,
        raw_stamp: object = None,
    ) -> None:
        """A new depth frame received at time ``t`` (s).

        Args:
            t: receipt time, s (the caller's clock); the frame's age (``depth_timeout_s``) counts
                from ``stamp`` when that is earlier, else from ``t``.
            load: returns the (H, W) float32 depth in metres (0 / nan = no return); called lazily,
                at most once per frame and pitch; may raise ValueError (bad encoding).
            width: image width, px.
            height: image height, px.
            stamp: capture time, s (same clock; the image header's stamp, :func:`message_time`:
                it may be ahead of ``t`` when the clock lags the publisher), where the frame is
                placed in odom and from which its age counts; None = ``t``.
            raw_stamp: the header stamp as sent (any comparable value, e.g. ``(sec, nanosec)``),
                compared with the previous frame's for the freeze check; None or a falsy value
                (unstamped) = not checked.
        """
        self._load, self._size, self._frame_t = load, (int(width), int(height)), float(t)
        self._stamp = float(t if stamp is None else stamp)
        self._seq += 1
        same = bool(raw_stamp) and raw_stamp == self._raw_stamp
        self._same_stamp = self._same_stamp + 1 if same else 1
        self._raw_stamp = raw_stamp

    def frame_problem(self, t: float) -> tuple[str, str] | None:
        """Why the newest depth frame cannot be used at time ``t``: ``(kind, one line)`` with kind
        ``empty``, ``no_info``, ``camera_info``, ``frozen`` or ``old``; None when it can be used --
        or when there is no frame at all (nothing received: the caller's "no depth" case).

        In order: an empty frame (0 x 0: not a depth image); no usable camera_info; camera_info
        whose width / height differ from the frame's (its focal length and principal point
        describe another image: walls would be projected elsewhere); a frozen camera
        (``freeze_frames`` frames with one stamp); a frame older than ``depth_timeout_s`` (by its
        capture stamp when that is on this clock, else since arrival).
        """
        if self._load is None:
            return None
        cfg, k = self.cfg, self.intrinsics
        w, h = self._size
        if w <= 0 or h <= 0:
            return "empty", f"empty depth image ({w}x{h}): not a depth image"
        if k is None:
            return "no_info", "no usable camera_info for the depth image"
        if (k.width, k.height) != (w, h):
            return "camera_info", f"camera_info width/height {k.width}x{k.height} do not describe the {w}x{h} depth image"
        if cfg.freeze_frames > 0 and self._same_stamp >= cfg.freeze_frames:
            return "frozen", f"depth camera frozen: {self._same_stamp} frames with the same header stamp"
        since = min(self._stamp, self._frame_t)
        age = t - since
        if age > cfg.depth_timeout_s:
            how = "by its capture stamp" if since < self._frame_t else "since it arrived"
            return "old", f"depth image {age:.2f} s old {how} (> depth_timeout_s {cfg.depth_timeout_s:g})"
        return None

    def lidar_problem(self, t: float) -> tuple[str, str] | None:
        """Why the configured LiDAR cannot be used at time ``t``: ``("lidar", one line)`` when no
        cloud came yet or the newest is older than ``lidar_timeout_s`` (a driver or cable lost: the
        glass door it alone sees would go unseen); None when it can be, or no LiDAR is configured."""
        if self.lidar_mount is None:
            return None
        if self._cloud is None:
            return "lidar", "no LiDAR cloud received yet"
        age = t - self._cloud[0]
        if age > self.cfg.lidar_timeout_s:
            return "lidar", f"LiDAR cloud {age:.2f} s old (> lidar_timeout_s {self.cfg.lidar_timeout_s:g})"
        return None

    def points(self, t: float, odom: Pose2D | None, pitch: float) -> np.ndarray | None:
        """(N, 2) float32 obstacle points in base_link at time ``t``; None when no fresh depth frame.

        Args:
            t: now, s (same clock as :meth:`add_depth`).
            odom: current odom pose (x m, y m, yaw rad), None when unknown (then no memory).
            pitch: current total camera pitch, rad (mount pitch plus any virtual pitch).
        """
        cfg, k = self.cfg, self.intrinsics
        if self._load is None or k is None or self.frame_problem(t) is not None:
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
                at = None if odom is None else (self.poses.at(self._stamp) or odom)
                self.frame_pose = at
                if self.on_frame is not None:
                    self.on_frame(depth_m, mount)
                blind = blind_zone_m(k, mount)
                pts3, ground = self._split(xyz, blind, at)
                self._cache = (key, pitch, np.ascontiguousarray(pts3[:, :2]), at)
                self.memory.hold_m = blind if math.isfinite(blind) else 0.0
                if at is not None and cfg.memory_s > 0:
                    view = ViewRegion.from_camera(k, self._size[0], self._size[1], mount, cfg.min_height_m, cfg.max_m, cfg.min_m)
                    self.memory.add(self._frame_t, pts3, at, view, free=depth_free_space(depth_m, k, mount, cfg.min_m))
                if at is not None:  # the seen floor (and raised terrain) is kept even when not checked
                    self.floor_memory.add(
                        self._frame_t, ground, at, blind if math.isfinite(blind) else 0.0, cfg.step_m or 0.16, blockers=pts3
                    )
        if self._cache is None or self._cache[0] != key:
            return None
        pts = self._cache[2]
        if odom is not None and self._cache[3] is not None:
            pts = rebase_points(pts, self._cache[3], odom)
        lidar = self._lidar_points(t, odom)
        if lidar is not None:
            pts = np.concatenate([pts, lidar])
        if odom is not None and cfg.memory_s > 0:
            pts = np.concatenate([pts, self.memory.points(t, odom)])
        return pts

    def _split(self, xyz: np.ndarray, blind_m: float, at: Pose2D | None) -> tuple[np.ndarray, np.ndarray]:
        """Ground-frame points (N, 3) seen from odom pose ``at`` -> (obstacle points (K, 3): in the
        height band and not climbable terrain; ground points (G, 3): below the band or on climbable
        terrain -- floor to stand on). Cells remembered as raised terrain (:attr:`floor_memory`)
        stay terrain (:func:`~havln_robot.motion.safety.climbable_mask`'s ``known``)."""
        cfg = self.cfg
        z = xyz[:, 2]
        band = (z >= cfg.min_height_m) & (z <= cfg.max_height_m)
        climb = np.zeros(len(xyz), dtype=bool)
        if cfg.step_m is not None and band.any():
            known = None
            if at is not None and len(self.terrain_memory):
                with np.errstate(invalid="ignore"):
                    known = np.isfinite(self.terrain_memory.heights(xyz[:, :2], at))
            risen = np.zeros(len(xyz), dtype=bool)
            climb = climbable_mask(xyz, cfg.step_m, blind_m=blind_m, known=known, risen=risen)
            if at is not None and risen.any():
                self.terrain_memory.add(self._frame_t, xyz[risen], at)
        obst = band & ~climb
        ground = (z < cfg.min_height_m) | (climb & (z <= cfg.max_height_m))
        return np.ascontiguousarray(xyz[obst]), np.ascontiguousarray(xyz[ground])

    def add_cloud(self, t: float, xyz_sensor: np.ndarray, stamp: float | None = None) -> None:
        """A LiDAR cloud received at time ``t`` (s): (N, 3) points in the sensor's frame, m
        (:func:`~havln_robot.motion.lidar.cloud_xyz`), placed by :attr:`lidar_mount` (required) and
        the odom pose at ``stamp`` (capture time, s; None = ``t``). Its obstacle points (the same
        height band and climbable-terrain rule as depth) join :meth:`points` while the cloud is
        younger than ``lidar_timeout_s`` and are remembered like depth obstacles; its ground points
        join the seen floor (a LiDAR sees the floor the camera's blind zone hides). Points on the
        robot itself (inside ``body_m`` up to its height) are dropped.

        Raises:
            ValueError: no :attr:`lidar_mount` set.
        """
        if self.lidar_mount is None:
            raise ValueError("add_cloud: no lidar_mount set (motion_node's lidar_* parameters)")
        xyz = self.lidar_mount.to_ground(xyz_sensor)
        if self.cfg.body_m is not None:  # the robot's own legs and body
            hl, hw = self.cfg.body_m
            xyz = xyz[~((np.abs(xyz[:, 0]) <= hl) & (np.abs(xyz[:, 1]) <= hw) & (xyz[:, 2] <= GO2_HEIGHT_M))]
        self._cloud = (float(t if stamp is None else min(stamp, t)), xyz)
        self._cloud_done = None

    def _lidar_points(self, t: float, odom: Pose2D | None) -> np.ndarray | None:
        """(K, 2) float32 LiDAR obstacle points in the base_link of ``odom`` (None: no fresh cloud)."""
        if self._cloud is None or t - self._cloud[0] > self.cfg.lidar_timeout_s:
            return None
        tc, xyz = self._cloud
        at = None if odom is None else (self.poses.at(tc) or odom)
        pts3, ground = self._split(xyz, 0.0, at)
        if self._cloud_done != tc and at is not None:  # remember once per cloud
            self._cloud_done = tc
            if self.cfg.memory_s > 0 and len(pts3):
                self.memory.add(tc, pts3, at)
            self.floor_memory.add(tc, ground, at)
        pts = np.ascontiguousarray(pts3[:, :2])
        if odom is not None and at is not None:
            pts = rebase_points(pts, at, odom)
        return pts.astype(np.float32)

    def floor(self, odom: Pose2D | None) -> Callable[[np.ndarray], np.ndarray] | None:
        """Seen floor in the base_link of ``odom`` for :attr:`~havln_robot.motion.safety.Obstacles.floor`
        (None when the floor is not tracked, ``step_down_m`` 0, or the pose is unknown)."""
        if self.cfg.step_down_m <= 0 or odom is None:
            return None
        mem = self.floor_memory
        return lambda xy: mem.heights(xy, odom)
