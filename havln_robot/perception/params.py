"""camera_node parameters (pure Python; the node reads them through :class:`havln_robot.params.ParamSpec`).

Stream defaults: 848x480 @ 30 Hz for colour and depth, the D435/D435i mode in which both sensors
run at their native 16:9 aspect (Intel RealSense D400 series datasheet, rev. 13, Tables 4-3/4-5:
colour 69.4° x 42.5° FOV at 16:9; 848x480 is the recommended depth resolution for best depth
quality, Intel "Tuning depth cameras for best performance", sec. 1).
"""

from __future__ import annotations

from havln_robot import topics
from havln_robot.params import Param, ParamSpec

CAMERA_PARAMS = ParamSpec(
    "camera_node",
    (
        Param("serial_number", "", "str", "RealSense serial number to open; empty = the first device found"),
        Param("color_width", 848, "int", "colour stream width, px (D435i modes: 424..1920)", min=160, max=1920),
        Param("color_height", 480, "int", "colour stream height, px", min=120, max=1080),
        Param("depth_width", 848, "int", "depth stream width, px (D435i modes: 256..1280)", min=160, max=1280),
        Param("depth_height", 480, "int", "depth stream height, px", min=120, max=720),
        Param("fps", 30, "int", "frame rate of both streams, Hz (D435i: 6, 15, 30, 60, 90)", min=1, max=90),
        Param("color_topic", topics.COLOR_IMAGE, "str", "colour image topic (sensor_msgs/Image rgb8)"),
        Param("color_info_topic", topics.COLOR_INFO, "str", "colour camera_info topic"),
        Param("depth_topic", topics.DEPTH_IMAGE, "str", "depth-aligned-to-colour topic (sensor_msgs/Image 16UC1, mm)"),
        Param("depth_info_topic", topics.DEPTH_INFO, "str", "aligned depth camera_info topic (= colour intrinsics)"),
        Param("diagnostics_topic", "/diagnostics", "str", "diagnostic_msgs/DiagnosticArray topic for the device state"),
        Param("color_frame_id", topics.COLOR_OPTICAL_FRAME, "str", "optical frame of the colour image (REP 103 optical: z forward)"),
        Param("depth_frame_id", topics.DEPTH_OPTICAL_FRAME, "str", "optical frame of the aligned depth image (the colour optical frame)"),
        Param("frame_timeout_s", 1.0, "float", "wait for one frameset before counting a timeout, s", min=0.05, max=30.0),
        Param("retries_before_reset", 3, "int", "consecutive frame timeouts retried before the device is hardware-reset", min=0, max=100),
        Param("reset_wait_s", 5.0, "float", "pause after a hardware reset while the device re-enumerates on USB, s", min=0.0, max=60.0),
        Param("backoff_initial_s", 1.0, "float", "first wait between restart attempts after a reset did not help, s", min=0.01, max=60.0),
        Param("backoff_max_s", 30.0, "float", "cap of the doubling wait between restart attempts, s", min=0.01, max=600.0),
        Param("diagnostics_period_s", 1.0, "float", "period of the /diagnostics report, s", min=0.05, max=60.0),
    ),
)
