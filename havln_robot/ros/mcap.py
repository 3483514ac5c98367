"""The ROS side of MCAP recording: :class:`~havln_robot.trials.recorder.McapRecorder` with the rclpy
CDR serialiser and the ``sensor_msgs/CompressedImage`` type injected (the recorder itself imports
no ROS), and the ``havln-robot trial`` entry point that gives the trial CLI's MCAP benchmark the same.

rclpy and the message packages are imported on use, so that the trial CLI also runs without ROS.
"""

from __future__ import annotations

import os
from typing import Any

from havln_robot.trials.recorder import McapRecorder


def ros_recorder(bag_dir: str | os.PathLike[str], **options: Any) -> McapRecorder:
    """A :class:`McapRecorder` that serialises ROS 2 messages with rclpy (``options`` as the recorder's).

    Raises:
        RecorderError: bad option or ``bag_dir`` not empty.
        ImportError: rclpy or sensor_msgs are not installed.
    """
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import CompressedImage

    return McapRecorder(bag_dir, serialize=serialize_message, compressed_type=CompressedImage, **options)


def image_message(height: int, width: int, encoding: str, step: int, data: bytes) -> Any:
    """A ``sensor_msgs/Image`` (used by the MCAP benchmark).

    Raises:
        ImportError: sensor_msgs is not installed.
    """
    from sensor_msgs.msg import Image

    return Image(height=height, width=width, encoding=encoding, step=step, data=data)


def trial_main(argv: list[str] | None = None) -> int:
    """``havln-robot trial``: :func:`havln_robot.trials.cli.main` with the ROS recorder for ``bench --mcap``."""
    from havln_robot.trials import cli

    return cli.main(argv, mcap=(ros_recorder, image_message))
