"""havln_robot.geometry: quaternion and SE(2) helpers used by sim_node (no ROS)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from havln_robot.geometry import map_to_odom, optical_quat, quat_multiply, rpy_to_quat, to_world, yaw_to_quat


def _compose(a, b):
    """SE(2) a (+) b."""
    x, y = to_world(a[0], a[1], a[2], b[0], b[1])
    return (x, y, a[2] + b[2])


@pytest.mark.parametrize("true_pose, odom", [((1.0, 2.0, 0.3), (0.5, -0.2, -0.1)), ((-3.0, 4.0, 3.0), (2.0, 1.0, 1.2))])
def test_map_to_odom_composed_with_odometry_is_the_true_pose(true_pose, odom):
    m = map_to_odom(true_pose, odom)
    x, y, yaw = _compose(m, odom)
    assert (x, y) == pytest.approx(true_pose[:2]) and math.remainder(yaw - true_pose[2], 2 * math.pi) == pytest.approx(0.0, abs=1e-12)


def test_quat_multiply_composes_rotations_about_z():
    q = quat_multiply(yaw_to_quat(0.2), yaw_to_quat(0.3))
    assert q == pytest.approx(yaw_to_quat(0.5))
    assert quat_multiply((0.0, 0.0, 0.0, 1.0), q) == pytest.approx(q)


def _mat(q):
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_optical_frame_axes_for_a_level_camera():
    r = _mat(optical_quat(0.0))  # columns: optical x, y, z in base_link
    assert r[:, 2] == pytest.approx([1.0, 0.0, 0.0], abs=1e-12)  # optical z = forward
    assert r[:, 0] == pytest.approx([0.0, -1.0, 0.0], abs=1e-12)  # optical x = right
    assert r[:, 1] == pytest.approx([0.0, 0.0, -1.0], abs=1e-12)  # optical y = down
    assert optical_quat(0.1) == pytest.approx(quat_multiply(rpy_to_quat(0.0, 0.1, 0.0), optical_quat(0.0)))
