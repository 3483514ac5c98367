"""camera_node parameters (pure Python; the node reads them through :class:`havln_robot.params.ParamSpec`).

Stream defaults: 848x480 @ 30 Hz for colour and depth, the D435/D435i mode in which both sensors
run at their native 16:9 aspect (Intel RealSense D400 series datasheet, rev. 13, Tables 4-3/4-5:
colour 69.4° x 42.5° FOV at 16:9; 848x480 is the recommended depth resolution for best depth
quality, Intel "Tuning depth cameras for best performance", sec. 1).
"""

from __future__ import annotations

from havln_robot import topics
from havln_robot.motion.params import mount_params
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
        Param(
            "image_transport",
            "raw",
            "str",
            "raw: sensor_msgs/Image; compressed: <color_topic>/compressed (JPEG) and <depth_topic>/compressedDepth (16-bit PNG, "
            "lossless) in image_transport's layout, for a policy on another machine (docs/two_machines.md); both: the two",
            choices=("raw", "compressed", "both"),
        ),
        Param("jpeg_quality", 90, "int", "JPEG quality of <color_topic>/compressed, 1..100", min=1, max=100),
        Param("png_level", 1, "int", "zlib level of <depth_topic>/compressedDepth, 0..9 (1: fast; 9: smallest)", min=0, max=9),
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

#: people_node parameters: sensors in, tracked people out; shape limits as in
#: :class:`havln_robot.perception.people.PeopleConfig` (which documents their sources).
PEOPLE_PARAMS = ParamSpec(
    "people_node",
    (
        Param("depth_topic", topics.DEPTH_IMAGE, "str", "aligned depth image in (16UC1 mm or 32FC1 m); '' = no camera", optional=True),
        Param("depth_info_topic", topics.DEPTH_INFO, "str", "its camera_info in"),
        Param(
            "lidar_topic",
            "",
            "str",
            "sensor_msgs/PointCloud2 (float32 x, y, z) of a LiDAR in its own frame, placed by the lidar_* mount "
            "(Go2 L1: utlidar/cloud; Livox MID360: livox/lidar); '' = none",
            optional=True,
        ),
        Param("odom_topic", topics.ODOM, "str", "nav_msgs/Odometry in: tracks are kept in odom so the robot's own motion is not people's"),
        Param("people_topic", topics.PEOPLE, "str", "geometry_msgs/PoseArray out: tracked people in base_link"),
        Param(
            "people_tracks_topic",
            topics.PEOPLE_TRACKS,
            "str",
            "sensor_msgs/PointCloud2 out: x, y, vx, vy (float32), id (uint32) per person, base_link",
        ),
        Param(
            "rate_hz", 15.0, "float", "most frames processed per second, Hz (>= 10 for motion_node's people_timeout_s)", min=1.0, max=60.0
        ),
        *mount_params(),  # the robot's camera and LiDAR mounts: motion_node's rows, one value per profile
        Param("lidar_min_range_m", 0.1, "float", "LiDAR blind zone: closer points are dropped, m (Livox MID360: 0.1)", min=0.0, max=5.0),
        Param("lidar_max_range_m", 20.0, "float", "LiDAR points farther than this are dropped, m", min=0.5, max=200.0),
        Param("max_range_m", 6.5, "float", "depth points farther than this are ignored, m", min=0.5, max=20.0),
        Param("depth_stride", 4, "int", "use every n-th depth pixel in both directions", min=1, max=32),
        Param("cell_m", 0.1, "float", "clustering grid cell, m", min=0.02, max=0.5),
        Param("min_height_m", 1.1, "float", "a person's top reaches this high (or the camera view's top), m", min=0.3, max=2.5),
        Param("max_height_m", 2.05, "float", "a taller cluster is structure (walls, door frames), m", min=0.5, max=3.0),
        Param("max_bottom_m", 0.5, "float", "a person's lowest point is at most this high (legs), m", min=0.1, max=2.0),
        Param("min_width_m", 0.15, "float", "narrowest person across the ray, m", min=0.0, max=2.0),
        Param("max_width_m", 1.0, "float", "widest person across the ray, m", min=0.1, max=3.0),
        Param("gate_m", 0.8, "float", "a detection farther than this from a track's prediction starts a new track, m", min=0.1, max=5.0),
        Param(
            "max_step_height_m",
            0.16,
            "float",
            "a depth cluster mostly on ground rising at most this per 5 cm (stairs, ramps) is terrain, not a person, m (motion_node's rule; 0 = off)",
            min=0.0,
            max=0.5,
        ),
        Param("min_hits", 2, "int", "frames a track needs before it is published", min=1, max=50),
        Param(
            "max_age_s", 0.6, "float", "a track the sensors would see is dropped this long after its last detection, s", min=0.05, max=10.0
        ),
        Param(
            "max_unseen_s",
            4.0,
            "float",
            "a still person outside the camera's view (beside/behind the robot) is kept this long where last seen, s",
            min=0.05,
            max=60.0,
        ),
        Param(
            "appearance_model",
            "",
            "str",
            "optional ONNX person detector (local file, run by onnxruntime) confirming depth clusters; '' = geometry only",
        ),
    ),
)
