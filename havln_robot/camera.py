"""The one pinhole camera model: :class:`Intrinsics` (pure Python + numpy).

Used by the renderer (CameraInfo of the simulated RealSense), the RealSense driver and
preprocessing (FOV mapping to the model's 90° view), motion safety (depth back-projection) and
agent_node (camera_info). OpenCV / ROS convention: pixel centres at integer coordinates; a point
``(X, Y, Z)`` in the optical frame (x right, y down, z forward; metres) projects to
``u = fx X / Z + cx``, ``v = fy Y / Z + cy`` (px). plumb_bob with zero distortion (the D435i colour
stream is rectified / near-zero distortion).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class IntrinsicsError(ValueError):
    """Intrinsics cannot be built from the given numbers; the message names the field and the range."""


#: Field of view (edge to edge, each axis) a camera_info must describe to be believed, degrees.
#: A rectified pinhole image cannot reach 180 deg (the tangent diverges); real ones: D435i depth
#: 87 x 58, colour 69 x 42; wide-angle rectified ~120-150; telephoto a few degrees. Outside
#: 2-170 deg the numbers do not describe a camera (fx = 1e-300 px, a focal length of 1e12 px).
PLAUSIBLE_FOV_DEG = (2.0, 170.0)
#: How far the principal point may lie outside the image, in image sizes: a calibrated camera's
#: principal point is near the centre (D435i: within ~2 % of it); a cropped image moves it, but
#: never off the picture. cx must lie in [-m W, (1 + m) W], cy likewise (m = 0: on the image).
PRINCIPAL_POINT_MARGIN = 0.0


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics of an image.

    Attributes:
        width, height: image size, px.
        fx, fy: focal lengths, px.
        cx, cy: principal point, px (``(W-1)/2``, ``(H-1)/2`` for a centred camera).
    """

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    @classmethod
    def from_hfov(cls, width: int, height: int, hfov_deg: float) -> Intrinsics:
        """Ideal centred camera with square pixels and horizontal FOV ``hfov_deg`` (degrees, edge to edge).

        Raises:
            IntrinsicsError: size not positive or ``hfov_deg`` outside (0, 180).
        """
        if width < 1 or height < 1:
            raise IntrinsicsError(f"image size must be positive, got {width}x{height}")
        if not (0.0 < hfov_deg < 180.0):
            raise IntrinsicsError(f"hfov_deg must be in (0, 180) degrees, got {hfov_deg!r}")
        f = (width / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
        return cls(int(width), int(height), f, f, (width - 1) / 2.0, (height - 1) / 2.0)

    @classmethod
    def from_k(cls, k: np.ndarray | list[float], width: int, height: int) -> Intrinsics:
        """From a row-major 3x3 camera matrix ``K`` (sensor_msgs/CameraInfo.k, 9 numbers) and the image size.

        Implausible numbers are refused (:data:`PLAUSIBLE_FOV_DEG`, :data:`PRINCIPAL_POINT_MARGIN`):
        projecting depth with them puts every obstacle somewhere else (a 1e-300 px focal length
        puts a wall 0.3 m ahead at infinity sideways).

        Raises:
            IntrinsicsError: ``K`` malformed or with a non-positive focal length, size not positive,
                a focal length giving a field of view outside :data:`PLAUSIBLE_FOV_DEG`, or the
                principal point off the image. The message names the field.
        """
        a = np.asarray(k, dtype=np.float64).reshape(-1)
        if a.size != 9 or not np.isfinite(a).all() or a[0] <= 0 or a[4] <= 0:
            raise IntrinsicsError(f"camera_info K must be 9 finite numbers with fx, fy > 0, got {a.tolist()}")
        if width < 1 or height < 1:
            raise IntrinsicsError(f"camera_info size must be positive, got {width}x{height}")
        lo, hi = PLAUSIBLE_FOV_DEG
        for name, f, size in (("fx", a[0], width), ("fy", a[4], height)):
            fov = math.degrees(2.0 * math.atan((size / 2.0) / f))
            if not lo <= fov <= hi:
                raise IntrinsicsError(
                    f"camera_info K {name} = {f:.6g} px gives a {fov:.4g} deg field of view over {size} px; a camera's is {lo:g}-{hi:g} deg"
                )
        m = PRINCIPAL_POINT_MARGIN
        for name, c, size in (("cx", a[2], width), ("cy", a[5], height)):
            if not -m * size - 0.5 <= c <= (1.0 + m) * size - 0.5:
                raise IntrinsicsError(f"camera_info K {name} = {c:.6g} px is off the {width}x{height} image (principal point)")
        return cls(int(width), int(height), float(a[0]), float(a[4]), float(a[2]), float(a[5]))

    @property
    def hfov_deg(self) -> float:
        """Horizontal field of view, degrees (edge to edge, centred approximation)."""
        return math.degrees(2.0 * math.atan((self.width / 2.0) / self.fx))

    @property
    def vfov_deg(self) -> float:
        """Vertical field of view, degrees."""
        return math.degrees(2.0 * math.atan((self.height / 2.0) / self.fy))

    def scaled(self, width: int, height: int) -> Intrinsics:
        """Intrinsics of the same camera resized to ``width`` x ``height`` (pixel-centre convention)."""
        sx, sy = width / self.width, height / self.height
        return Intrinsics(width, height, self.fx * sx, self.fy * sy, (self.cx + 0.5) * sx - 0.5, (self.cy + 0.5) * sy - 0.5)

    def project(self, bearing_rad: float, elevation_rad: float = 0.0) -> tuple[float, float]:
        """Pixel (u, v) of the ray at azimuth ``bearing_rad`` (left positive, REP 103) and elevation
        ``elevation_rad`` (up positive) from the optical axis."""
        x = -math.tan(bearing_rad)
        y = -math.tan(elevation_rad) / math.cos(bearing_rad)
        return self.fx * x + self.cx, self.fy * y + self.cy

    @property
    def K(self) -> list[float]:
        """Row-major 3x3 camera matrix (sensor_msgs/CameraInfo.k)."""
        return [self.fx, 0.0, self.cx, 0.0, self.fy, self.cy, 0.0, 0.0, 1.0]

    @property
    def P(self) -> list[float]:
        """Row-major 3x4 projection matrix (sensor_msgs/CameraInfo.p), no stereo baseline."""
        return [self.fx, 0.0, self.cx, 0.0, 0.0, self.fy, self.cy, 0.0, 0.0, 0.0, 1.0, 0.0]

    @property
    def R(self) -> list[float]:
        """Identity rectification (sensor_msgs/CameraInfo.r)."""
        return [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]

    @property
    def D(self) -> list[float]:
        """plumb_bob distortion coefficients (k1, k2, t1, t2, k3): all zero."""
        return [0.0] * 5
