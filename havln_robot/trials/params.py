"""Parameters of trial_logger_node (pure Python; see havln_robot.params for the conventions)."""

from __future__ import annotations

from havln_robot import topics
from havln_robot.motion.params import mount_params
from havln_robot.params import Param, ParamSpec
from havln_robot.trials.store import GOAL_FRAMES, PLATFORMS, SUCCESS_RADIUS_M

TRIAL_LOGGER_PARAMS = ParamSpec(
    node="trial_logger_node",
    params=(
        # --- trial metadata (read again at each trial start: change with `ros2 param set`) ---
        Param("platform", "go2", "str", "platform the trials run on", choices=PLATFORMS),
        Param("region", "unknown", "str", "region type of the next trial (office, living room, hallway, lobby, ...; regions.py)"),
        Param("instance", "", "str", "which room/site of that region type (free text)"),
        Param("operator", "", "str", "operator name stored with each trial"),
        Param("people_present", 0, "int", "number of people present in the next trial (0 = without people)", min=0, max=1000),
        Param("goal", [], "float_list", "goal [x, y] of the next trial in goal_frame, m (empty = unknown)", max_len=2),
        Param("goal_frame", "start", "str", "frame of goal: start (robot pose at trial start), odom, map", choices=GOAL_FRAMES),
        Param("goal_radius", SUCCESS_RADIUS_M, "float", "success radius, m (HA-VLN: 3.0)", min=0.1, max=50.0),
        Param("campaign", "", "str", "campaign name: auto-started trials take the next pending planned trial's metadata"),
        Param("reason", "", "str", "reason stored by the trial/end_failure and trial/abort services"),
        # --- provenance stored with each trial (havln-robot launch / demo fill them from the profile) ---
        Param(
            "policy",
            "",
            "str",
            "the agent's policy (checkpoint path or name in models/); empty = agent_node's, filled by havln-robot launch",
        ),
        Param("profile", "", "str", "deployment profile file; empty = the one havln-robot launch runs"),
        # --- behaviour ---
        Param(
            "db_path",
            "",
            "str",
            "SQLite trial database; empty = this profile's store <user data>/trials/<platform>/trials.db (havln-robot trial --profile <platform>)",
        ),
        Param("auto_start", True, "bool", "start a trial when a new instruction arrives (attach to one opened by the CLI)"),
        Param("auto_end", False, "bool", "finish the trial when havln/episode_done arrives (else the operator ends it)"),
        Param("auto_judge", False, "bool", "set the outcome from ground truth on episode_done: success = STOP and NE < goal_radius (sim)"),
        Param("poll_period", 1.0, "float", "period of the check for trials opened/ended by the CLI, s", min=0.1, max=60.0),
        # --- MCAP recording ---
        Param("record_mcap", False, "bool", "record each trial into an MCAP bag (rosbag2 layout) under mcap_dir"),
        Param("mcap_dir", "", "str", "folder of the per-trial MCAP bags (trial_<id>/); empty = mcap/ beside the trial database"),
        Param("mcap_record_camera", True, "bool", "include the camera topics in the MCAP bag"),
        Param(
            "mcap_color",
            "none",
            "str",
            "colour frames in the bag: none = no RGB (bystanders' faces are never kept); blur_people = RGB with every person "
            "on people_topic blurred (a person the tracker missed is not); raw = as captured, only with the bystanders' consent",
            choices=("none", "blur_people", "raw"),
        ),
        *mount_params("camera_x_m", "camera_y_m"),  # where blur_people places each person's strip: the robot's one camera mount
        Param("mcap_max_bytes", 2_000_000_000, "int", "size cap per MCAP file, bytes (0 = none)", min=0),
        Param("mcap_on_limit", "roll", "str", "at the cap: roll over to a new file or stop recording", choices=("roll", "stop")),
        Param(
            "mcap_on_fault",
            "continue",
            "str",
            "the bag cannot be written (full disk, I/O error): continue = the trial goes on in the store, marked with its "
            "recording fault (console, trial show, report); pause = also stop the robot by pausing the agent (pause_topic) "
            "until the operator resumes it",
            choices=("continue", "pause"),
        ),
        Param("pause_topic", topics.AGENT_PAUSE, "str", "std_msgs/Bool out: true pauses agent_node (mcap_on_fault pause)"),
        Param("mcap_max_files", 8, "int", "with roll: stop after this many files per trial (0 = no limit)", min=0, max=10000),
        Param("mcap_image_stride", 2, "int", "keep every n-th image row/column (1 = full resolution)", min=1, max=16),
        Param("mcap_image_max_rate_hz", 5.0, "float", "image frames recorded per second per topic (0 = all)", min=0.0, max=1000.0),
        Param("mcap_image_format", "jpeg", "str", "raw, or jpeg for 8-bit colour (depth stays raw)", choices=("raw", "jpeg")),
        Param("mcap_compression", "zstd", "str", "MCAP chunk compression", choices=("zstd", "lz4", "none")),
        # --- topics and services ---
        Param("instruction_topic", topics.INSTRUCTION, "str", "std_msgs/String instruction"),
        Param("action_topic", topics.ACTION, "str", "std_msgs/String action literal (MCAP only)"),
        Param("action_result_topic", topics.ACTION_RESULT, "str", "DiagnosticStatus action result: one step per message"),
        Param("collision_topic", topics.COLLISION, "str", "DiagnosticStatus collision events"),
        Param("odom_topic", topics.ODOM, "str", "nav_msgs/Odometry"),
        Param("imu_topic", topics.IMU, "str", "sensor_msgs/Imu"),
        Param("ground_truth_topic", topics.GROUND_TRUTH, "str", "DiagnosticStatus ground truth (sim/Gazebo)"),
        Param("people_topic", topics.PEOPLE, "str", "geometry_msgs/PoseArray detected people, base_link"),
        Param("agent_status_topic", topics.AGENT_STATUS, "str", "DiagnosticStatus agent status (MCAP only)"),
        Param("episode_done_topic", topics.EPISODE_DONE, "str", "std_msgs/String JSON {reason, steps}"),
        Param(
            "robot_event_topic",
            "go2/event",
            "str",
            "std_msgs/String JSON {event, reason} of go2_driver_node: a robot_reset (reboot, odometry reset) marks the running "
            "trial, and its path is not joined across the jump",
        ),
        Param("cmd_vel_topic", topics.CMD_VEL, "str", "geometry_msgs/Twist (MCAP only)"),
        Param("color_topic", topics.COLOR_IMAGE, "str", "colour image (MCAP only)"),
        Param("depth_topic", topics.DEPTH_IMAGE, "str", "aligned depth image (MCAP only)"),
        Param("color_info_topic", topics.COLOR_INFO, "str", "colour camera_info (MCAP only)"),
        Param(
            "service_prefix",
            "trial",
            "str",
            "services <prefix>/start, end_success, end_failure, abort (std_srvs/Trigger)",
            ros_name="service",
        ),
    ),
)
