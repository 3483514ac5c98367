"""motion_node's input messages as the values its core takes (ROS messages in, plain tuples out).

Each reader returns the message's values with the ``(field, value)`` pairs motion_node checks for
finiteness (a non-finite field drops the message and names the field, ``_base.HavlnNode._finite``)
and the raw sample its freeze check compares. Frames: odometry in odom, IMU in its own mount
(:mod:`havln_robot.motion.imu_frame`), people and tracks in base_link.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from havln_robot.geometry import quat_to_yaw
from havln_robot.motion.imu_frame import imu_axes
from havln_robot.motion.obstacles import Pose2D
from havln_robot.motion.safety import Person
from havln_robot.ros.codec import decode_tracks

Fields = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class OdomIn:
    """One nav_msgs/Odometry: ``pose`` (x m, y m, yaw rad) in odom, ``speed`` |vx| + |vy| + |wz|
    (m/s + rad/s, for the standing-still checks), ``sample`` (the message's numbers, freeze check)."""

    fields: Fields
    pose: Pose2D
    speed: float
    sample: tuple[float, ...]


def read_odom(msg: Any) -> OdomIn:
    """The values of a nav_msgs/Odometry (:class:`OdomIn`)."""
    pp, q, tw = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist
    fields = (
        ("pose.position.x", pp.x),
        ("pose.position.y", pp.y),
        ("pose.orientation.x", q.x),
        ("pose.orientation.y", q.y),
        ("pose.orientation.z", q.z),
        ("pose.orientation.w", q.w),
        ("twist.linear.x", tw.linear.x),
        ("twist.linear.y", tw.linear.y),
        ("twist.angular.z", tw.angular.z),
    )
    return OdomIn(
        fields,
        (float(pp.x), float(pp.y), quat_to_yaw(q.x, q.y, q.z, q.w)),
        abs(tw.linear.x) + abs(tw.linear.y) + abs(tw.angular.z),
        (pp.x, pp.y, pp.z, q.x, q.y, q.z, q.w, tw.linear.x, tw.linear.y, tw.angular.z),
    )


@dataclass(frozen=True)
class ImuIn:
    """One sensor_msgs/Imu in base_link axes: ``yaw`` from its orientation (rad; None when the gyro
    is used), ``yaw_rate`` (rad/s; None when the orientation is), ``accel`` horizontal acceleration
    (x, y m/s^2), ``sample`` (freeze check)."""

    fields: Fields
    yaw: float | None
    yaw_rate: float | None
    accel: tuple[float, float]
    sample: tuple[float, ...]


def read_imu(msg: Any, mount: str, yaw_source: str) -> ImuIn:
    """The values of a sensor_msgs/Imu mounted as ``mount`` (motion_node's ``imu_mount``); yaw from the
    orientation when ``yaw_source`` is ``"orientation"`` and the message has a usable one, else the gyro.

    Raises:
        ImuFrameError: the frame_id does not say how the IMU is mounted (the message names the fix).
    """
    axes = imu_axes(msg.header.frame_id, mount)
    q, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
    has_orientation = msg.orientation_covariance[0] != -1.0 and (q.x, q.y, q.z, q.w) != (0.0, 0.0, 0.0, 0.0)
    use_q = yaw_source == "orientation" and has_orientation and axes.orientation_usable
    fields = (
        (("orientation.x", q.x), ("orientation.y", q.y), ("orientation.z", q.z), ("orientation.w", q.w))
        if use_q
        else (("angular_velocity.x", w.x), ("angular_velocity.y", w.y), ("angular_velocity.z", w.z))
    ) + (("linear_acceleration.x", a.x), ("linear_acceleration.y", a.y), ("linear_acceleration.z", a.z))
    return ImuIn(
        fields,
        quat_to_yaw(q.x, q.y, q.z, q.w) if use_q else None,
        None if use_q else axes.yaw_rate(float(w.x), float(w.y), float(w.z)),
        axes.horizontal_accel(float(a.x), float(a.y), float(a.z)),
        (q.x, q.y, q.z, q.w, w.x, w.y, w.z, a.x, a.y, a.z),
    )


def read_people(poses: np.ndarray) -> tuple[Fields, list[Person]]:
    """(N, >=2) base_link positions of a PoseArray (:func:`~havln_robot.ros.codec.decode_pose_array_cdr`,
    already cut to the nearest) -> (the first non-finite position field, if any; the people, ids unknown:
    a PoseArray carries none)."""
    xy = poses[:, :2]
    bad = np.argwhere(~np.isfinite(xy))[:1]
    fields = tuple((f"poses[{i}].position.{'xy'[k]}", float(xy[i, k])) for i, k in bad)
    return fields, [Person(x, y, None) for x, y in xy.tolist()]


def read_tracks(msg: Any) -> tuple[Fields, list[Person]]:
    """A people-tracks PointCloud2 (x, y, vx, vy, id in base_link) -> (finite-check fields, people).

    Raises:
        ValueError: a field is missing or of another type (the message names it).
    """
    a = decode_tracks(msg)
    fields = tuple((f"track {int(r['id'])} {k}", float(r[k])) for r in a for k in ("x", "y", "vx", "vy"))
    return fields, [Person(float(r["x"]), float(r["y"]), int(r["id"]), vx=float(r["vx"]), vy=float(r["vy"])) for r in a]
