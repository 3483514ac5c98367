"""The Imu is read in its frame_id (body frames, the D435i optical frame)."""

from __future__ import annotations

import math

import pytest
from test_motion_node import _result, rig  # noqa: F401 - the fixture is used by name

from havln_robot.motion.imu_frame import ImuFrameError, imu_axes
from havln_robot.params import ConfigError


def test_axes_by_frame():
    body, optical = imu_axes("base_link"), imu_axes("camera_imu_optical_frame")
    assert body.yaw_rate(0.1, 0.2, 0.3) == 0.3 and body.horizontal_accel(1.0, 2.0, 9.8) == (1.0, 2.0)
    # optical: z forward, x right, y down -> yaw rate (about body up) is -y, body x accel is z
    assert optical.yaw_rate(0.1, 0.2, 0.3) == -0.2 and optical.horizontal_accel(1.0, 9.8, 3.0) == (3.0, -1.0)
    assert imu_axes("camera_link", "optical").optical and not imu_axes("camera_imu_optical_frame", "body").optical
    with pytest.raises(ImuFrameError, match=r"'camera_link' is not supported: body frames base_link.*camera_imu_optical_frame.*imu_mount"):
        imu_axes("camera_link")


def _as_frame(base, frame_id: str) -> None:
    """Make the fake base publish its gyro/accel in ``frame_id`` (optical axes when it is an optical frame)."""
    publish = base.imu_pub.publish

    def pub(im):
        im.header.frame_id = frame_id
        if frame_id.endswith("_optical_frame"):  # body (x fwd, y left, z up) -> optical (z fwd, x right, y down)
            w, a = im.angular_velocity, im.linear_acceleration
            w.x, w.y, w.z = -w.y, -w.z, w.x
            a.x, a.y, a.z = -a.y, -a.z, a.x
            im.orientation_covariance[0] = -1.0  # realsense-ros publishes no orientation
        publish(im)

    base.imu_pub.publish = pub


@pytest.mark.parametrize("frame_id", ["imu_link", "camera_imu_optical_frame"])
def test_turn_with_body_and_optical_frame_imu(rig, frame_id):  # noqa: F811
    # a loaded machine may drop gyro samples; a wrongly read axis gives 0 deg against 15 deg whatever the threshold
    node, base, spin = rig(slip_yaw_deg=10.0)
    base.imu_orientation = False
    _as_frame(base, frame_id)
    spin(lambda: False, 0.3)
    base.send("TURN_LEFT")
    assert spin(lambda: len(base.results) >= 1)
    name, outcome, rec = _result(base.results[0])
    assert (name, outcome) == ("TURN_LEFT", "ok"), rec
    assert abs(float(rec["yaw_imu_deg"]) - 15.0) < 3.0 and abs(math.degrees(base.th) - 15.0) < 3.0


def test_bad_mount_is_refused_at_start_naming_the_choices(ros_context):
    from havln_robot.motion.params import MOTION_PARAMS
    from havln_robot.nodes.motion_node import MotionNode

    with pytest.raises(ConfigError, match=r"imu_mount: 'sideways' is not allowed; allowed: str one of 'auto', 'body', 'optical'"):
        MotionNode(params={**MOTION_PARAMS.defaults(), "imu_mount": "sideways"}, context=ros_context)
