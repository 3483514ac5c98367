"""The ROS side of MCAP recording: :class:`~havln_robot.trials.recorder.McapRecorder` with the rclpy
CDR serialiser, the ``sensor_msgs/CompressedImage`` type and the publishers' offered QoS (asked of
the ROS graph) injected (the recorder itself imports no ROS), and the ``havln-robot trial`` entry
point that gives the trial CLI's MCAP benchmark the same.

rclpy and the message packages are imported on use, so that the trial CLI also runs without ROS.
"""

from __future__ import annotations

import os
from typing import Any

from havln_robot.trials.recorder import McapRecorder, offered_qos_yaml


def _duration(d: Any) -> dict[str, int]:
    ns = int(d.nanoseconds)
    return {"sec": ns // 1_000_000_000, "nsec": ns % 1_000_000_000}


def qos_dict(qos: Any) -> dict[str, Any]:
    """An ``rclpy.qos.QoSProfile`` as the plain dict :func:`~havln_robot.trials.recorder.offered_qos_yaml` takes."""
    return {
        "history": int(qos.history.value),
        "depth": int(qos.depth),
        "reliability": int(qos.reliability.value),
        "durability": int(qos.durability.value),
        "deadline": _duration(qos.deadline),
        "lifespan": _duration(qos.lifespan),
        "liveliness": int(qos.liveliness.value),
        "liveliness_lease_duration": _duration(qos.liveliness_lease_duration),
        "avoid_ros_namespace_conventions": bool(qos.avoid_ros_namespace_conventions),
    }


def offered_qos_profiles(node: Any, topic: str) -> str:
    """``offered_qos_profiles`` of ``topic``: the QoS each publisher on the ROS graph offers, in
    rosbag2's YAML form (what ``ros2 bag record`` stores; ``ros2 bag play`` restores it).

    Args:
        node: an rclpy node (asked ``get_publishers_info_by_topic``).
        topic: the topic name (relative names are resolved in the node's namespace).
    """
    try:
        name = node.resolve_topic_name(topic)
    except (AttributeError, ValueError):
        name = topic
    return offered_qos_yaml([qos_dict(info.qos_profile) for info in node.get_publishers_info_by_topic(name)])


def ros_recorder(bag_dir: str | os.PathLike[str], node: Any = None, **options: Any) -> McapRecorder:
    """A :class:`McapRecorder` that serialises ROS 2 messages with rclpy (``options`` as the recorder's).

    Args:
        bag_dir: the bag folder.
        node: an rclpy node; when given, each topic's ``offered_qos_profiles`` is asked of the ROS
            graph through it (:func:`offered_qos_profiles`) when the topic's first message arrives.
        **options: :class:`McapRecorder` options.

    Raises:
        RecorderError: bad option or ``bag_dir`` not empty.
        ImportError: rclpy or sensor_msgs are not installed.
    """
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import CompressedImage

    if node is not None and "offered_qos" not in options:
        options["offered_qos"] = lambda topic: offered_qos_profiles(node, topic)
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
