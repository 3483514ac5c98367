"""Interpret a sensor_msgs/Imu in its ``frame_id`` (pure Python).

motion_node needs the yaw rate about the robot's up axis (``base_link`` z, REP 103: x forward,
y left, z up) and the horizontal acceleration in ``base_link``. Which components of the message
carry them depends on how the IMU is mounted, which its ``header.frame_id`` says:

* body frames (``base_link``, ``imu_link``, ``base_footprint``, ``body``, ``imu``; the Go2's own
  IMU through go2_driver_node, Gazebo's IMU, the embedded simulator): axes as ``base_link``;
  yaw rate = ``angular_velocity.z``;
* optical frames (``camera_imu_optical_frame``, ``camera_gyro_optical_frame``,
  ``camera_accel_optical_frame``: the D435i's own IMU through realsense-ros; any ``*_optical_frame``):
  REP 103 optical axes, z forward, x right, y down; with the camera looking forward, level, the
  yaw rate is ``-angular_velocity.y`` and body (x, y) acceleration is ``(a.z, -a.x)``.

The ``imu_mount`` parameter chooses: ``auto`` (by ``frame_id`` as above; another frame is refused),
``body`` or ``optical`` (whatever ``frame_id`` says). An Imu whose frame cannot be interpreted is
not used, and motion_node says so once, naming the supported frames.
"""

from __future__ import annotations

from dataclasses import dataclass

#: frame ids read as axes parallel to base_link.
BODY_FRAMES = ("base_link", "imu_link", "base_footprint", "body", "imu")
#: frame ids read as a forward-looking optical frame (z forward, x right, y down).
OPTICAL_FRAMES = ("camera_imu_optical_frame", "camera_gyro_optical_frame", "camera_accel_optical_frame")
MOUNTS = ("auto", "body", "optical")


class ImuFrameError(ValueError):
    """An Imu frame this mount setting cannot interpret."""


@dataclass(frozen=True)
class ImuAxes:
    """How to read body-frame quantities out of one Imu message.

    Attributes:
        optical: the sensor axes are optical (z forward, x right, y down), not body axes.
    """

    optical: bool

    def yaw_rate(self, wx: float, wy: float, wz: float) -> float:
        """Angular rate about base_link z, rad/s (CCW positive), from the message's angular_velocity."""
        return -wy if self.optical else wz

    def horizontal_accel(self, ax: float, ay: float, az: float) -> tuple[float, float]:
        """Acceleration along base_link (x, y), m/s^2, from the message's linear_acceleration."""
        return (az, -ax) if self.optical else (ax, ay)

    @property
    def orientation_usable(self) -> bool:
        """The message orientation is a base_link yaw only for body-frame IMUs."""
        return not self.optical


def supported_frames() -> str:
    """One line listing the frames ``imu_mount: auto`` accepts."""
    return f"body frames {', '.join(BODY_FRAMES)}; optical frames {', '.join(OPTICAL_FRAMES)} (or any *_optical_frame)"


def imu_axes(frame_id: str, mount: str = "auto") -> ImuAxes:
    """The axes of an Imu with ``frame_id`` under the ``imu_mount`` setting.

    Raises:
        ImuFrameError: ``mount`` is ``auto`` and ``frame_id`` is neither a body nor an optical
            frame (one line naming the supported frames and the parameter to set), or ``mount``
            is not one of :data:`MOUNTS`.
    """
    if mount == "body":
        return ImuAxes(False)
    if mount == "optical":
        return ImuAxes(True)
    if mount != "auto":
        raise ImuFrameError(f"imu_mount: {mount!r} is not one of {', '.join(MOUNTS)}")
    fid = frame_id.lstrip("/")
    if fid == "" or fid in BODY_FRAMES:  # an unset frame_id is the driver's body frame (go2_driver_node)
        return ImuAxes(False)
    if fid in OPTICAL_FRAMES or fid.endswith("_optical_frame"):
        return ImuAxes(True)
    raise ImuFrameError(
        f"Imu frame_id {frame_id!r} is not supported: {supported_frames()}; "
        "set motion_node imu_mount to 'body' or 'optical' for another frame"
    )
