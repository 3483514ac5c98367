"""``motion_node`` parameters (pure Python; the spec registered in :mod:`havln_robot.config`).

Sources of the defaults
-----------------------
* Go2 velocity ranges accepted by ``SportClient.Move`` and the body size: :mod:`havln_robot.hardware`;
  the indoor defaults are far below the ranges; the body gives the footprint length/width.
* Personal space 0.45 m: the outer edge of Hall's "intimate" zone (E. T. Hall, *The Hidden
  Dimension*, 1966), measured from the robot footprint to the person's centre.
* Camera mount: D435i standing on the Go2 head, 0.30 m ahead of the body centre and 0.4125 m
  above the ground, level (same as the simulator, :mod:`havln_robot.sim.robot`; measure your own
  mount and set ``camera_*``).
* Step sizes are not parameters: 0.25 m / 15 deg / 30 deg are the task definition
  (:mod:`havln_robot.actions`).
"""

from __future__ import annotations

from havln_robot import topics
from havln_robot.hardware import GO2_LENGTH_M, GO2_VX_RANGE, GO2_VYAW_RANGE, GO2_WIDTH_M
from havln_robot.params import Param, ParamSpec

MOTION_PARAMS = ParamSpec(
    "motion_node",
    (
        # --- topics -------------------------------------------------------------------------
        Param("action_topic", topics.ACTION, "str", "action literals in (std_msgs/String)"),
        Param("action_result_topic", topics.ACTION_RESULT, "str", "one DiagnosticStatus per action out"),
        Param("collision_topic", topics.COLLISION, "str", "one DiagnosticStatus per collision out"),
        Param("cmd_vel_topic", topics.CMD_VEL, "str", "geometry_msgs/Twist velocity commands out"),
        Param("odom_topic", topics.ODOM, "str", "nav_msgs/Odometry in (odom -> base_link)"),
        Param("imu_topic", topics.IMU, "str", "sensor_msgs/Imu in (gyro z integrated for yaw)"),
        Param("depth_topic", topics.DEPTH_IMAGE, "str", "aligned depth image in (16UC1 mm or 32FC1 m)"),
        Param("depth_info_topic", topics.DEPTH_INFO, "str", "camera_info of the depth image"),
        Param("people_topic", topics.PEOPLE, "str", "geometry_msgs/PoseArray of people in base_link"),
        Param(
            "people_tracks_topic",
            topics.PEOPLE_TRACKS,
            "str",
            "sensor_msgs/PointCloud2 x, y, vx, vy, id of tracked people (base_link); '' = none",
            optional=True,
        ),
        Param("color_topic", topics.COLOR_IMAGE, "str", "colour image in (rgb8), used only by an in-process person_detector"),
        Param(
            "person_detector",
            "",
            "str",
            "'' = people come from people_topic only; a detector's name ('depth_people_tracker', or one an installed "
            "package offers as a 'havln_robot.person_detectors' entry point) = also run that PersonDetector "
            "(havln_robot.motion.safety) in-process on each colour + depth frame; module paths are never imported",
        ),
        # --- control ------------------------------------------------------------------------
        Param("control_rate_hz", 50.0, "float", "executor tick and cmd_vel publish rate, Hz", min=10.0, max=500.0),
        Param(
            "max_linear_speed",
            0.3,
            "float",
            f"forward speed limit, m/s (Go2 accepts up to {GO2_VX_RANGE[1]:g})",
            min=0.02,
            max=GO2_VX_RANGE[1],
        ),
        Param(
            "max_reverse_speed",
            0.2,
            "float",
            f"backward speed limit (revert), m/s (Go2 accepts up to {-GO2_VX_RANGE[0]:g})",
            min=0.02,
            max=-GO2_VX_RANGE[0],
        ),
        Param(
            "max_angular_speed",
            0.8,
            "float",
            f"yaw-rate limit, rad/s (Go2 accepts up to {GO2_VYAW_RANGE[1]:g})",
            min=0.05,
            max=GO2_VYAW_RANGE[1],
        ),
        Param("max_linear_accel", 0.6, "float", "linear acceleration limit of the velocity profile, m/s^2", min=0.05, max=10.0),
        Param("max_angular_accel", 2.5, "float", "yaw acceleration limit of the velocity profile, rad/s^2", min=0.05, max=40.0),
        Param("min_linear_speed", 0.03, "float", "creep speed for the last millimetres, m/s", min=0.0, max=0.5),
        Param("min_angular_speed", 0.08, "float", "creep yaw rate for the last fraction of a degree, rad/s", min=0.0, max=1.0),
        Param("latency_s", 0.05, "float", "command-to-motion delay compensated by prediction, s", min=0.0, max=1.0),
        Param("heading_gain", 3.0, "float", "heading-hold gain during MOVE_FORWARD and revert, 1/s", min=0.0, max=20.0),
        Param("position_tolerance_m", 0.008, "float", "MOVE_FORWARD is done within this distance of the target, m", min=0.001, max=0.2),
        Param("yaw_tolerance_deg", 0.4, "float", "turns are done within this angle of the target, deg", min=0.05, max=10.0),
        Param("max_corrections", 2, "int", "extra creep attempts when the settled pose is outside tolerance", min=0, max=10),
        Param("timeout_factor", 2.5, "float", "action timeout = factor x physical minimum duration + timeout_margin_s", min=1.0, max=20.0),
        Param("timeout_margin_s", 1.0, "float", "added to the action timeout, s", min=0.0, max=30.0),
        Param("sensor_timeout_s", 0.3, "float", "odom or imu silent this long while moving -> stop, outcome aborted, s", min=0.02, max=5.0),
        Param("idle_zero_s", 0.5, "float", "keep publishing zero cmd_vel this long after an action ends, s", min=0.0, max=10.0),
        # --- LOOK_UP / LOOK_DOWN ------------------------------------------------------------------
        Param(
            "look_mode",
            "virtual",
            "str",
            "LOOK_UP/LOOK_DOWN: 'virtual' = track a camera pitch (sim renders it, reported as pitch_deg); "
            "'unsupported' = answer outcome unsupported and do nothing",
            choices=("virtual", "unsupported"),
        ),
        Param(
            "virtual_pitch_tilts_depth",
            True,
            "bool",
            "the depth camera really tilts with the virtual pitch (sim_node renders it); false where it does not (Gazebo)",
        ),
        Param("max_camera_pitch_deg", 60.0, "float", "virtual camera pitch limit, deg either side of level", min=0.0, max=90.0),
        # --- IMU / odometry checks --------------------------------------------------------------
        Param("slip_yaw_deg", 4.0, "float", "gyro yaw vs odometry yaw disagreement that flags slip, deg", min=0.1, max=90.0),
        Param("stall_time_s", 0.6, "float", "commanded motion without progress this long -> stall, s", min=0.05, max=10.0),
        Param("stall_min_progress_m", 0.01, "float", "progress expected within stall_time_s while moving, m", min=0.0, max=1.0),
        Param("stall_min_progress_deg", 1.0, "float", "yaw progress expected within stall_time_s while turning, deg", min=0.0, max=90.0),
        Param(
            "freeze_messages",
            20,
            "int",
            "odom or imu frozen (same stamp, or bit-identical sample, in this many consecutive messages while commanded "
            "to move) -> stop, outcome aborted; 0 disables",
            min=0,
            max=1000,
        ),
        Param(
            "imu_yaw_source",
            "orientation",
            "str",
            "yaw from the Imu 'orientation' (exact across dropped messages; falls back to the gyro when the message "
            "has no orientation, covariance[0] = -1) or from integrating angular_velocity.z ('gyro')",
            choices=("orientation", "gyro"),
        ),
        Param(
            "imu_mount",
            "auto",
            "str",
            "how the Imu axes sit on the robot: 'auto' = by header.frame_id (base_link/imu_link/... = body axes, "
            "yaw rate angular_velocity.z; camera_imu_optical_frame and other *_optical_frame = D435i optical axes, "
            "yaw rate -angular_velocity.y; another frame is refused), 'body' or 'optical' whatever the frame_id says",
            choices=("auto", "body", "optical"),
        ),
        Param(
            "gyro_bias_time_s", 2.0, "float", "time constant of the gyro-bias estimate taken while standing still, s", min=0.1, max=600.0
        ),
        Param("jolt_accel", 15.0, "float", "horizontal IMU acceleration that counts as a bump, m/s^2 (0 disables)", min=0.0, max=200.0),
        # --- collision avoidance -----------------------------------------------------------------
        Param(
            "footprint_length_m", GO2_LENGTH_M, "float", "robot length along x, centred on base_link, m (Go2 datasheet)", min=0.05, max=3.0
        ),
        Param("footprint_width_m", GO2_WIDTH_M, "float", "robot width along y, centred on base_link, m (Go2 datasheet)", min=0.05, max=3.0),
        Param(
            "footprint_radius_m",
            0.0,
            "float",
            "> 0: use a disc of this radius instead of the rectangle, m (the embedded sim counts contacts with a 0.383 m disc)",
            min=0.0,
            max=2.0,
        ),
        Param(
            "front_margin_m",
            0.10,
            "float",
            "free space required beyond the end of a forward step, m: braking from 0.3 m/s at 0.6 m/s^2 (0.075) + 50 ms latency (0.015) + depth noise (0.01); docs/motion.md Margins",
            min=0.0,
            max=2.0,
        ),
        Param(
            "min_partial_step_m",
            0.05,
            "float",
            "a MOVE_FORWARD whose 0.25 m would enter front_margin moves as far as is safe when that is at least this, m "
            "(0 = refuse instead; docs/motion.md 'Margins')",
            min=0.0,
            max=0.25,
        ),
        Param("side_margin_m", 0.05, "float", "free space required beside the footprint, m", min=0.0, max=2.0),
        Param("turn_margin_m", 0.03, "float", "free space required around the footprint swept by a turn, m", min=0.0, max=2.0),
        Param(
            "personal_space_m",
            0.45,
            "float",
            "no motion brings the footprint closer than this to a person centre, m (Hall 1966)",
            min=0.0,
            max=5.0,
        ),
        Param("person_radius_m", 0.3, "float", "body radius of a person for turn clearance, m", min=0.05, max=1.0),
        Param(
            "contact_recall_s",
            20.0,
            "float",
            "people seen this recently (then out of view) are remembered to classify a bump (stall, jolt), s "
            "(0 = only fresh people; docs/motion.md 'Collision kinds')",
            min=0.0,
            max=120.0,
        ),
        Param(
            "contact_reach_m",
            1.5,
            "float",
            "a bump is a human contact when a remembered person's last position is this close to the footprint, m "
            "(fresh people: person_radius_m + personal_space_m)",
            min=0.0,
            max=5.0,
        ),
        Param("people_timeout_s", 1.0, "float", "people older than this are ignored, s", min=0.05, max=30.0),
        Param(
            "require_people",
            False,
            "bool",
            "refuse / stop motion (outcome aborted) while the people source (people_topic or people_tracks_topic) has "
            "been silent longer than people_timeout_s: personal-space checks would be off (docs/motion.md 'People')",
        ),
        Param(
            "max_people",
            64,
            "int",
            "people taken from one people message, nearest first (more are dropped with a warning): a crowd of 64 "
            "within a few metres is already more than a room holds, and each costs every check at 50 Hz",
            min=1,
            max=10000,
        ),
        Param(
            "forecast_margin_s",
            1.0,
            "float",
            "moving people (people_tracks_topic velocities) are forecast at constant velocity over the action plus this, s; -1 = off",
            min=-1.0,
            max=10.0,
        ),
        Param(
            "require_depth",
            True,
            "bool",
            "refuse / stop MOVE_FORWARD when no fresh depth image is available, or no fresh cloud from a configured LiDAR (lidar_topic)",
        ),
        Param(
            "depth_timeout_s",
            0.5,
            "float",
            "a depth image older than this is not fresh, s: age by its capture stamp when on this node's clock, else since arrival",
            min=0.05,
            max=30.0,
        ),
        Param(
            "depth_freeze_frames",
            5,
            "int",
            "this many consecutive depth images with the same header stamp = camera frozen: depth not used "
            "(require_depth: refuse / stop, outcome aborted); 0 disables",
            min=0,
            max=1000,
        ),
        Param("depth_stride", 4, "int", "use every n-th depth pixel in both directions", min=1, max=32),
        Param(
            "depth_min_m",
            0.2,
            "float",
            "ignore depth readings closer than this and keep remembered obstacles there (the camera returns no depth nearer), m (D435i min-Z ~0.2 m)",
            min=0.0,
            max=5.0,
        ),
        Param("depth_max_m", 4.0, "float", "ignore depth readings beyond this, m", min=0.2, max=20.0),
        Param("obstacle_min_height_m", 0.06, "float", "points lower than this above the ground are floor, m", min=0.0, max=2.0),
        Param("obstacle_max_height_m", 0.6, "float", "points higher than this do not block the robot, m", min=0.05, max=5.0),
        Param(
            "max_step_height_m",
            0.16,
            "float",
            "ground rising by at most this per 5 cm (stairs, ramps, sills) is terrain the Go2 climbs, not an obstacle, m "
            "(Go2 specification ~0.16 m); 0 = every point in the height band blocks",
            min=0.0,
            max=0.5,
        ),
        Param(
            "obstacle_memory_s",
            3.0,
            "float",
            "remember depth obstacles (in odom) this long: low ones ahead leave the view, s (0 disables)",
            min=0.0,
            max=60.0,
        ),
        Param("min_obstacle_points", 12, "int", "depth points inside the corridor needed to call it blocked", min=1, max=100000),
        Param(
            "max_step_down_m",
            0.0,
            "float",
            "MOVE_FORWARD needs seen floor along its path dropping at most this per 5 cm (a ledge, a stage edge, stairs down "
            "without their treads seen: refused or stopped), m (Go2 step ~0.16 m: config/go2.yaml); 0 = the floor is not "
            "checked (the sim and gazebo profiles: their scenes have no drop-offs)",
            min=0.0,
            max=0.5,
        ),
        Param("floor_memory_s", 60.0, "float", "remember where floor was seen (in odom) this long, s", min=1.0, max=3600.0),
        Param(
            "lidar_topic",
            "",
            "str",
            "sensor_msgs/PointCloud2 (float32 x, y, z) of a LiDAR in its own frame (Go2 L1 'utlidar/cloud', a Livox MID360) "
            "whose points join the depth obstacles; '' = no LiDAR",
            optional=True,
        ),
        Param("lidar_x_m", 0.28, "float", "LiDAR origin ahead of base_link, m -- measure your mount", min=-2.0, max=2.0),
        Param("lidar_y_m", 0.0, "float", "LiDAR origin left of base_link, m", min=-2.0, max=2.0),
        Param("lidar_z_m", 0.30, "float", "LiDAR origin above the ground, m", min=0.0, max=3.0),
        Param(
            "lidar_pitch_deg",
            0.0,
            "float",
            "LiDAR mount elevation, deg (positive = its x axis looks up; the Go2's L1 hangs upside down under the head: -164.91, "
            "go2_description radar_joint pitch 2.8782 rad)",
            min=-180.0,
            max=180.0,
        ),
        Param("lidar_yaw_deg", 0.0, "float", "LiDAR mount yaw, deg (positive = its x axis turned left)", min=-180.0, max=180.0),
        Param("lidar_timeout_s", 0.5, "float", "a LiDAR cloud older than this is not used, s", min=0.05, max=5.0),
        Param("camera_x_m", 0.30, "float", "camera position ahead of base_link, m", min=-2.0, max=2.0),
        Param("camera_y_m", 0.0, "float", "camera position left of base_link, m", min=-2.0, max=2.0),
        Param("camera_z_m", 0.4125, "float", "camera height above the ground, m", min=0.0, max=3.0),
        Param("camera_pitch_deg", 0.0, "float", "camera mount elevation, deg (positive = looking up)", min=-90.0, max=90.0),
        Param("revert", True, "bool", "after a collision back off to the pre-action pose (HA-VLN revert)"),
        Param(
            "chain_heading_deg",
            2.0,
            "float",
            "a TURN/MOVE_FORWARD starting within this of the heading the last action was meant to end at aims from that heading "
            "(errors do not add up over a panorama); 0 = off, deg",
            min=0.0,
            max=7.5,
        ),
        # --- panorama sweep (SWEEP_LEFT / SWEEP_RIGHT, docs/perception.md) -------------------------
        Param(
            "camera_frame_rate_hz",
            30.0,
            "float",
            "RGB-D frame rate the sweep rate is sized for, Hz (D435i and the sim camera: 30); 0 = no frame-spacing bound",
            min=0.0,
            max=300.0,
        ),
        Param(
            "camera_exposure_s",
            0.008,
            "float",
            "colour exposure time the blur budget is computed with, s (D435i indoor auto-exposure ~8 ms; 0 = no blur bound)",
            min=0.0,
            max=0.2,
        ),
        Param(
            "sweep_max_blur_deg",
            0.5,
            "float",
            "largest yaw the camera may turn during one exposure in a panorama sweep, deg",
            min=0.01,
            max=10.0,
        ),
        Param(
            "sweep_yaw_tolerance_deg",
            0.15,
            "float",
            "a sweep is done within this of its end heading (the start heading), deg: the panorama's closure (<= 0.2)",
            min=0.02,
            max=10.0,
        ),
        Param(
            "sweep_max_frame_spacing_deg",
            1.2,
            "float",
            "largest yaw between consecutive frames in a sweep, deg: the frame nearest a view heading is within half of it",
            min=0.1,
            max=30.0,
        ),
    ),
)

#: The sensor mounts (camera and LiDAR pose under base_link): one robot has one of each, so every
#: node that places their data (motion_node, people_node, sim_node) declares these same rows, and a
#: profile that gives two of them different values is refused (:func:`havln_robot.config.load_profile`).
SENSOR_MOUNT_KEYS = (
    "camera_x_m",
    "camera_y_m",
    "camera_z_m",
    "camera_pitch_deg",
    "lidar_x_m",
    "lidar_y_m",
    "lidar_z_m",
    "lidar_pitch_deg",
    "lidar_yaw_deg",
)


def mount_params(*names: str) -> tuple[Param, ...]:
    """motion_node's own :class:`~havln_robot.params.Param` rows of these mount keys (all of
    :data:`SENSOR_MOUNT_KEYS` when none are named), for another node's spec."""
    by = MOTION_PARAMS.by_name()
    return tuple(by[n] for n in (names or SENSOR_MOUNT_KEYS))
