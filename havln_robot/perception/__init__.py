"""Perception: RealSense capture (camera_node's core), HA-VLN-CE preprocessing, panorama by rotation.

Pure Python modules (no rclpy): :mod:`params` (camera_node parameters), :mod:`preprocess`
(model-input conversion and the 69°→90° field-of-view mapping), :mod:`panorama` (the rotation
planner / capture state machine), :mod:`realsense` (pyrealsense2 device wrapper with a
retry → hardware-reset → backoff recovery machine). See ``docs/perception.md``.
"""
