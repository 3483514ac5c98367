"""Small planar-geometry helpers (pure numpy/math): yaw ↔ quaternion, angle wrapping, SE(2).

Conventions: REP 103 (x forward, y left, z up; yaw counter-clockwise positive, radians);
quaternions are (x, y, z, w) as in geometry_msgs/Quaternion.
"""

from __future__ import annotations

import math


def wrap_angle(a: float) -> float:
    """Wrap an angle (rad) to [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def yaw_to_quat(yaw: float) -> tuple[float, float, float, float]:
    """Quaternion (x, y, z, w) of a rotation of ``yaw`` rad about z."""
    return (0.0, 0.0, math.sin(yaw / 2.0), math.cos(yaw / 2.0))


def quat_to_yaw(x: float, y: float, z: float, w: float) -> float:
    """Yaw (rad, about z) of a quaternion (x, y, z, w); roll/pitch are ignored."""
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def quat_to_rpy(x: float, y: float, z: float, w: float) -> tuple[float, float, float]:
    """Roll, pitch, yaw (rad, ZYX convention) of a quaternion (x, y, z, w)."""
    roll = math.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    s = max(-1.0, min(1.0, 2.0 * (w * y - z * x)))
    pitch = math.asin(s)
    return roll, pitch, quat_to_yaw(x, y, z, w)


def rpy_to_quat(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """Quaternion (x, y, z, w) from roll, pitch, yaw (rad, ZYX convention)."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
        cr * cp * cy + sr * sp * sy,
    )


def to_local(x: float, y: float, yaw: float, px: float, py: float) -> tuple[float, float]:
    """Express world point (px, py) in the frame of a pose (x, y, yaw)."""
    dx, dy = px - x, py - y
    c, s = math.cos(yaw), math.sin(yaw)
    return (c * dx + s * dy, -s * dx + c * dy)


def to_world(x: float, y: float, yaw: float, lx: float, ly: float) -> tuple[float, float]:
    """Express a point (lx, ly) given in the frame of pose (x, y, yaw) in the world frame."""
    c, s = math.cos(yaw), math.sin(yaw)
    return (x + c * lx - s * ly, y + s * lx + c * ly)
