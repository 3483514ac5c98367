"""HA-VLN challenge action format v1: export, pack, validate, replay (see docs/challenge.md).

Pure Python, no rclpy: the ``ros`` backend of ``havln-robot replay`` lives in :mod:`havln_robot.ros.replay`.
"""

from havln_robot.challenge.format import FORMAT_VERSION, FormatError, Problem, SplitFile, read_split_file, write_split_file

__all__ = ["FORMAT_VERSION", "FormatError", "Problem", "SplitFile", "read_split_file", "write_split_file"]
