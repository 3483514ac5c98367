"""Small planar-geometry helpers (pure numpy/math): yaw ↔ quaternion, angle wrapping, SE(2).

Conventions: REP 103 (x forward, y left, z up; yaw counter-clockwise positive, radians);
quaternions are (x, y, z, w) as in geometry_msgs/Quaternion.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def wrap_angle(a: float) -> float:
    """Wrap an angle (rad) to [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def yaw_to_quat(yaw: float) -> tuple[float, float, float, float]:
    """Quaternion (x, y, z, w) of a rotation of ``yaw`` rad about z."""
    return (0.0, 0.0, math.sin(yaw / 2.0), math.cos(yaw / 2.0))


def quat_to_yaw(x: float, y: float, z: float, w: float) -> float:
    """Yaw (rad, about z) of a quaternion (x, y, z, w); roll/pitch are ignored."""
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


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


def quat_multiply(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """Hamilton product ``a * b`` of quaternions (x, y, z, w): rotation ``b`` first, then ``a``."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    )


def optical_quat(body_pitch: float) -> tuple[float, float, float, float]:
    """Quaternion (x, y, z, w) of a camera optical frame (z forward, x right, y down; REP 103
    camera conventions) in base_link, for a camera pitched by ``body_pitch`` rad (nose down
    positive): R = Ry(pitch) * R_optical with R_optical = rpy(-pi/2, 0, -pi/2)."""
    return quat_multiply(rpy_to_quat(0.0, body_pitch, 0.0), rpy_to_quat(-math.pi / 2, 0.0, -math.pi / 2))


def map_to_odom(true_pose: tuple[float, float, float], odom_pose: tuple[float, float, float]) -> tuple[float, float, float]:
    """The planar map -> odom transform that makes map -> base_link the true pose.

    map -> odom = true pose (+) odometry^-1 (SE(2) composition, REP 105).

    Args:
        true_pose: (x m, y m, yaw rad) of base_link in the map frame (ground truth).
        odom_pose: (x m, y m, yaw rad) of base_link in the odom frame (odometry).

    Returns:
        (x m, y m, yaw rad) of the odom frame in the map frame; yaw is not wrapped.
    """
    x, y, yaw = true_pose
    ox, oy, oyaw = odom_pose
    dyaw = yaw - oyaw
    c, s = math.cos(dyaw), math.sin(dyaw)
    return (x - (c * ox - s * oy), y - (s * ox + c * oy), dyaw)


def first_non_finite(fields: Iterable[tuple[str, float]]) -> str | None:
    """``"name = value"`` of the first NaN or infinite value among ``(name, value)`` pairs, else None.

    The one test every sensor input passes before control maths sees it (motion_node, people_node,
    trial_logger_node, go2_driver's state conversion, the executor).
    """
    for name, v in fields:
        if not math.isfinite(v):
            return f"{name} = {v}"
    return None
