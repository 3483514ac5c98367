"""Topic, service and frame names shared by every node, and the key/value conventions of the
``diagnostic_msgs/DiagnosticStatus`` messages used as structured records.

Pure Python. Names follow realsense-ros (``camera/...``) and go2_ros2_sdk / REP 105 habits
(``cmd_vel``, ``odom``, ``imu``, frames ``odom`` → ``base_link``) so rviz2 and Foxglove just work.
Every name is relative (no leading ``/``) so a namespace can be pushed in a launch file; nodes take
these as parameter defaults.
"""

# --- sensors (realsense-ros names) -------------------------------------------------------------
COLOR_IMAGE = "camera/color/image_raw"  # sensor_msgs/Image, rgb8
COLOR_INFO = "camera/color/camera_info"  # sensor_msgs/CameraInfo
DEPTH_IMAGE = "camera/aligned_depth_to_color/image_raw"  # sensor_msgs/Image, 16UC1, millimetres
DEPTH_INFO = "camera/aligned_depth_to_color/camera_info"  # sensor_msgs/CameraInfo (= color intrinsics)

# --- base (go2_ros2_sdk / REP 105) ---------------------------------------------------------------
CMD_VEL = "cmd_vel"  # geometry_msgs/Twist, base_link, m/s and rad/s
ODOM = "odom"  # nav_msgs/Odometry, header.frame_id odom, child_frame_id base_link
IMU = "imu"  # sensor_msgs/Imu, frame imu_link (REP 145)
ESTOP_SERVICE = "go2/estop"  # std_srvs/Trigger → SportClient.Damp()
CLOCK = "clock"  # rosgraph_msgs/Clock (sim only)
TF = "tf"  # tf2_msgs/TFMessage, published only where tf2_msgs imports

# --- havln ------------------------------------------------------------------------------------
INSTRUCTION = "havln/instruction"  # std_msgs/String: the natural-language instruction; starts an episode
ACTION = "havln/action"  # std_msgs/String: one literal of havln_robot.actions.ACTIONS
ACTION_RESULT = "havln/action_result"  # diagnostic_msgs/DiagnosticStatus, see ACTION_RESULT_KEYS
COLLISION = "havln/collision"  # diagnostic_msgs/DiagnosticStatus, see COLLISION_KEYS
HUMANS = "havln/humans"  # geometry_msgs/PoseArray, frame "map": ground-truth human positions (sim only)
PEOPLE = "havln/people"  # geometry_msgs/PoseArray, frame base_link: detected people (sim: ground truth or tracker)
PEOPLE_TRACKS = "havln/people_tracks"  # sensor_msgs/PointCloud2 fields x, y, vx, vy (float32), id (uint32), frame base_link
PEOPLE_TRUTH = "havln/people_truth"  # geometry_msgs/PoseArray, base_link: sim ground truth when people_node detects
LIDAR_CLOUD = "utlidar/cloud"  # sensor_msgs/PointCloud2 of the Go2's own LiDAR (go2_ros2_sdk name); Livox: livox/lidar
GROUND_TRUTH = "havln/ground_truth"  # diagnostic_msgs/DiagnosticStatus, sim only, see GROUND_TRUTH_KEYS
AGENT_STATUS = "havln/agent_status"  # diagnostic_msgs/DiagnosticStatus, see AGENT_STATUS_KEYS
EPISODE_DONE = "havln/episode_done"  # std_msgs/String: JSON {"reason": "stop"|"budget"|"blocked"|"aborted", "steps": n, ...}
SIM_SYNC = "havln/sim_sync"  # diagnostic_msgs/DiagnosticStatus: lockstep steps and acks of the embedded simulator (sim/lockstep.py)
AGENT_PAUSE = "havln/agent_pause"  # std_msgs/Bool: true pauses agent_node before its next action, false resumes (operator console)

# --- frames -------------------------------------------------------------------------------------
MAP_FRAME = "map"  # sim ground-truth world frame (episode scene, z up)
ODOM_FRAME = "odom"
BASE_FRAME = "base_link"
IMU_FRAME = "imu_link"
CAMERA_FRAME = "camera_link"
COLOR_OPTICAL_FRAME = "camera_color_optical_frame"
DEPTH_OPTICAL_FRAME = "camera_color_optical_frame"  # depth is aligned to color

# --- DiagnosticStatus records: status.name carries the record kind, values carry these keys ----
# Typed records, encoders and decoders: havln_robot.records (pure) and havln_robot.nodes.codec (ROS).
# Every record also carries "schema_version" (havln_robot.records.SCHEMA_KEY; absent = version 1).
#: motion_node → one per executed action. status.name = action literal; status.message = outcome.
ACTION_RESULT_KEYS = (
    "seq",  # int, action counter since motion_node start
    "action",  # literal
    "outcome",  # ok | collision | timeout | slip | stall | aborted | rejected | unsupported
    "distance_odom_m",  # achieved forward distance from odometry
    "yaw_odom_deg",  # achieved yaw change from odometry
    "yaw_imu_deg",  # achieved yaw change integrated from the gyro
    "pitch_deg",  # camera pitch after the action (LOOK_UP/DOWN)
    "position_error_m",
    "yaw_error_deg",
    "duration_s",
    "x",
    "y",
    "yaw_deg",  # odom pose at the end of the action
    "reverted",  # "true" when the robot backed off to the pre-action pose after a collision
    "detail",  # free text
    "executed",  # amount executed: m (MOVE_FORWARD) or rad (TURN_*, LOOK_*); the action's step is the maximum
    "refused",  # "true" when nothing was started (rejected, unsupported, blocked before start)
)
#: motion_node → one per detected collision.
COLLISION_KEYS = ("stamp", "x", "y", "yaw_deg", "action", "type", "distance_m", "human_id", "motion_state", "source", "contact")
#: sim_node → ground truth at >= 5 Hz.
GROUND_TRUTH_KEYS = (
    "episode_id",
    "scan",
    "x",
    "y",
    "z",
    "yaw_deg",  # map frame
    "distance_to_goal_m",  # walkable (geodesic) distance, the scorer's NE (havln_robot.sim.geodesic)
    "distance_to_goal_euclid_m",  # straight line, reported only
    "goal_unreachable",  # "true" when no walkable path joins the robot to the goal (never a success)
    "nearest_human_m",
    "nearest_human_id",
    "collisions_human",
    "collisions_static",
    "path_length_m",
    "goal_x",  # the episode's goal, map frame, m
    "goal_y",
    "people",  # people in the episode ("" = unknown)
    "region",  # region the episode's people are in (HAPS name, "" = unknown)
)
#: agent_node → after each decision.
AGENT_STATUS_KEYS = ("step", "action", "state", "policy_ms", "panorama_s", "waiting_s")
