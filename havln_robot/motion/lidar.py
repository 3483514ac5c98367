"""LiDAR point clouds into the obstacle rules (pure numpy; no ROS types).

A ``sensor_msgs/PointCloud2`` from the Go2's own L1 (``utlidar/cloud``) or a Livox MID360 carries
float32 ``x, y, z`` fields (metres, the sensor's frame: x forward, y left, z up, REP 103) among
others (intensity, ring, time). :func:`cloud_xyz` reads those three from the message's raw fields;
:class:`LidarMount` moves the points into the ground frame under ``base_link`` (x forward, y left,
z above the ground), where :class:`~havln_robot.motion.obstacles.ObstacleTracker.add_cloud` joins
them to the depth obstacles and the seen floor -- the same rules as depth, so a glass door or a
dark surface that gives the depth camera no return still stops the robot.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Elevation range of a simulated sweep in the sensor's own frame, deg (z up): the Go2's L1 is a
#: hemisphere (Unitree L1 datasheet: 360 x 90 deg field of view) over its base plane, which hangs
#: under the Go2's head pitched down (config/go2.yaml ``lidar_pitch_deg``) so it looks at the floor
#: around the nose; a generic unit mounted level sees -60..15 deg (a MID360: -7..52).
L1_ELEVATION_DEG = (0.0, 90.0)
GENERIC_ELEVATION_DEG = (-60.0, 15.0)

#: sensor_msgs/PointField datatype codes -> numpy dtypes (PointField.INT8 .. FLOAT64).
POINTFIELD_DTYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}


@dataclass(frozen=True)
class LidarMount:
    """Pose of the LiDAR's frame relative to the ground point under ``base_link``.

    Attributes:
        x, y: origin ahead of / left of base_link, m.
        z: origin height above the ground, m.
        pitch: elevation of the sensor's x axis, rad (positive = looking up).
        yaw: heading of the sensor's x axis, rad (positive = turned left).
    """

    x: float = 0.28
    y: float = 0.0
    z: float = 0.30
    pitch: float = 0.0
    yaw: float = 0.0

    @classmethod
    def from_params(cls, p: Any) -> LidarMount:
        """From motion_node's ``lidar_*`` parameters (m, deg)."""
        return cls(p["lidar_x_m"], p["lidar_y_m"], p["lidar_z_m"], math.radians(p["lidar_pitch_deg"]), math.radians(p["lidar_yaw_deg"]))

    def to_ground(self, xyz: np.ndarray) -> np.ndarray:
        """(N, 3) sensor-frame points, m -> (N, 3) float32 base_link ground-frame points (z above the ground)."""
        p = np.asarray(xyz, dtype=np.float64).reshape(-1, 3)
        cp, sp = math.cos(self.pitch), math.sin(self.pitch)
        x1 = cp * p[:, 0] - sp * p[:, 2]  # elevation about y (positive looks up)
        z1 = sp * p[:, 0] + cp * p[:, 2]
        cy, sy = math.cos(self.yaw), math.sin(self.yaw)
        x2 = cy * x1 - sy * p[:, 1]
        y2 = sy * x1 + cy * p[:, 1]
        return np.stack([x2 + self.x, y2 + self.y, z1 + self.z], axis=1).astype(np.float32)

    def sweep_rays(
        self,
        x: float,
        y: float,
        yaw: float,
        ground_z: float = 0.0,
        az_step_deg: float = 2.0,
        elevation_deg: tuple[float, float] = GENERIC_ELEVATION_DEG,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A simulated sweep's rays (:func:`sweep_directions` over ``elevation_deg``, the sensor's own
        frame) from base_link at map pose ``x``, ``y`` (m), ``yaw`` (rad) over ground at ``ground_z``
        (m): (directions (N, 3) in the sensor's frame, origin (3,) and directions (N, 3) float64 in the
        map frame, unit length); a hit at range r along ray i is the sensor-frame point ``r * directions[i]``."""
        d_s = sweep_directions(az_step_deg, float(elevation_deg[0]), float(elevation_deg[1]))
        d_g = self.to_ground(d_s) - self.to_ground(np.zeros((1, 3)))  # ground-frame directions
        c, s = math.cos(yaw), math.sin(yaw)
        dirs = np.stack([c * d_g[:, 0] - s * d_g[:, 1], s * d_g[:, 0] + c * d_g[:, 1], d_g[:, 2]], axis=1).astype(np.float64)
        origin = np.array([x + c * self.x - s * self.y, y + s * self.x + c * self.y, ground_z + self.z])
        return d_s, origin, dirs

    def from_ground(self, xyz: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`to_ground` (a simulated cloud is made in the ground frame and published in the sensor's)."""
        p = np.asarray(xyz, dtype=np.float64).reshape(-1, 3)
        x2, y2, z1 = p[:, 0] - self.x, p[:, 1] - self.y, p[:, 2] - self.z
        cy, sy = math.cos(self.yaw), math.sin(self.yaw)
        x1, y1 = cy * x2 + sy * y2, -sy * x2 + cy * y2
        cp, sp = math.cos(self.pitch), math.sin(self.pitch)
        return np.stack([cp * x1 + sp * z1, y1, -sp * x1 + cp * z1], axis=1).astype(np.float32)


@functools.lru_cache(maxsize=4)
def sweep_directions(az_step_deg: float = 2.0, el_min_deg: float = -60.0, el_max_deg: float = 15.0, el_step_deg: float = 3.0) -> np.ndarray:
    """Unit ray directions (N, 3) float64 of a simulated LiDAR sweep in the sensor's frame: azimuth
    all round every ``az_step_deg``, elevation ``el_min_deg``..``el_max_deg`` every ``el_step_deg``
    (:data:`GENERIC_ELEVATION_DEG` by default, :data:`L1_ELEVATION_DEG` for the Go2's L1). Computed
    once per pattern and shared: read-only."""
    az = np.radians(np.arange(-180.0, 180.0, az_step_deg))
    el = np.radians(np.arange(el_min_deg, el_max_deg + 0.1 * el_step_deg, el_step_deg))
    a, e = np.meshgrid(az, el, indexing="ij")
    d = np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], axis=-1).reshape(-1, 3)
    d.flags.writeable = False
    return d


def cloud_xyz(
    fields: Sequence[tuple[str, int, int, int]],
    point_step: int,
    n_points: int,
    data: bytes | bytearray | memoryview,
    big_endian: bool = False,
) -> np.ndarray:
    """The x, y, z of a PointCloud2's points as (N, 3) float32, m; points with a non-finite
    coordinate (a LiDAR's "no return") are dropped.

    Args:
        fields: (name, offset, datatype, count) of each PointField.
        point_step: bytes per point.
        n_points: width x height.
        data: the message's data.
        big_endian: the message's ``is_bigendian``.

    Raises:
        ValueError: a field x, y or z is missing or not FLOAT32 / FLOAT64, offsets outside the point,
            or data shorter than ``n_points * point_step`` (each names the fix).
    """
    by = {f[0]: f for f in fields}
    missing = [a for a in ("x", "y", "z") if a not in by]
    if missing:
        have = ", ".join(by) or "none"
        raise ValueError(f"PointCloud2 has no field {', '.join(missing)} (fields: {have}); send float32 x, y, z in the sensor frame")
    if point_step <= 0 or n_points < 0:
        raise ValueError(f"PointCloud2 point_step {point_step} / {n_points} points: expected point_step > 0")
    need = n_points * point_step
    if len(data) < need:
        raise ValueError(f"PointCloud2 data has {len(data)} bytes, width x height x point_step needs {need}")
    raw = np.frombuffer(memoryview(data)[:need], dtype=np.uint8).reshape(n_points, point_step)
    cols = []
    for a in ("x", "y", "z"):
        _, off, dt, _ = by[a]
        if dt not in (7, 8):
            raise ValueError(f"PointCloud2 field {a} has datatype {dt}; expected FLOAT32 (7) or FLOAT64 (8)")
        size = 4 if dt == 7 else 8
        if off < 0 or off + size > point_step:
            raise ValueError(f"PointCloud2 field {a} at offset {off} does not fit in point_step {point_step}")
        dtype = np.dtype(POINTFIELD_DTYPES[dt]).newbyteorder(">" if big_endian else "<")
        cols.append(raw[:, off : off + size].copy().view(dtype).reshape(-1).astype(np.float32))
    xyz = np.stack(cols, axis=1) if n_points else np.zeros((0, 3), np.float32)
    return xyz[np.isfinite(xyz).all(axis=1)]


def pack_cloud(xyz: np.ndarray) -> tuple[list[tuple[str, int, int, int]], int, bytes]:
    """(N, 3) points -> (fields, point_step, data) of a little-endian float32 x, y, z PointCloud2 (the simulated LiDAR)."""
    pts = np.ascontiguousarray(np.asarray(xyz, dtype="<f4").reshape(-1, 3))
    return [("x", 0, 7, 1), ("y", 4, 7, 1), ("z", 8, 7, 1)], 12, pts.tobytes()
