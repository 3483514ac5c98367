"""Parameters of go2_driver_node (pure Python, no ROS import).

The configurable indoor limits below are bounded by the ranges ``SportClient.Move`` accepts
(:mod:`havln_robot.hardware`); their defaults are deliberately much lower (walking pace next to
people).
"""

from __future__ import annotations

from havln_robot import topics
from havln_robot.hardware import GO2_VX_RANGE, GO2_VY_RANGE, GO2_VYAW_RANGE
from havln_robot.params import Param, ParamSpec

GO2_DRIVER_PARAMS = ParamSpec(
    node="go2_driver_node",
    params=(
        # --- connection ---------------------------------------------------------------------------
        Param(
            "network_interface",
            "lo",
            "str",
            "network interface the Unitree SDK (CycloneDDS) binds to: the Jetson's wired port to the Go2 "
            "(e.g. eth0 / enP8p1s0); 'lo' keeps everything on loopback (tests, fake Go2)",
        ),
        Param(
            "dds_domain_id",
            0,
            "int",
            "DDS domain id of the Unitree SDK (the Go2 uses 0); keep it distinct from ROS_DOMAIN_ID in tests",
            min=0,
            max=232,
        ),
        Param(
            "sport_state_topic",
            "rt/sportmodestate",
            "str",
            "Unitree DDS topic of unitree_go SportModeState_ (the robot's high-level state)",
            ros_name="",  # a raw DDS topic of the Unitree SDK, not a ROS name
        ),
        Param(
            "rpc_timeout_s",
            1.0,
            "float",
            "timeout of one SportClient call (s); a call that times out is retried on the next tick",
            min=0.05,
            max=5.0,
        ),
        Param(
            "connect_attempts",
            10,
            "int",
            "attempts to set up the Unitree SDK while the network interface is missing or not up (boot: cable, switch or "
            "USB adapter late); one log line per attempt, then the driver exits (code 2) and the robot launch respawns it",
            min=1,
            max=1000,
        ),
        Param(
            "connect_backoff_initial_s",
            0.5,
            "float",
            "wait after the first failed connect attempt (s); doubles per attempt",
            min=0.01,
            max=60.0,
        ),
        Param("connect_backoff_max_s", 5.0, "float", "cap of the doubling wait between connect attempts (s)", min=0.01, max=300.0),
        # --- identity and latch --------------------------------------------------------------------
        Param(
            "robot_id",
            "",
            "str",
            "which robot this driver drives, published on identity_topic and keying the e-stop latch file; '' = "
            "derived from the SDK connection ('go2@<network_interface>/dds<dds_domain_id>'); give each robot its own "
            "(its serial number) when two share a network",
            ros_name="",  # a label, not a ROS name
        ),
        Param(
            "latch_file",
            "",
            "str",
            "file that records a Damp (e-stop) until go2/recover, so that it survives a restart of the driver and of the "
            "computer; '' = <user state folder>/estop/<robot_id>.json (Linux ~/.local/state/havln_robot/estop/)",
            ros_name="",  # a file path, not a ROS name
        ),
        # --- ROS names ----------------------------------------------------------------------------
        Param("cmd_vel_topic", topics.CMD_VEL, "str", "geometry_msgs/Twist velocity command in base_link (m/s, rad/s)"),
        Param("odom_topic", topics.ODOM, "str", "nav_msgs/Odometry output (odom -> base_link)"),
        Param("imu_topic", topics.IMU, "str", "sensor_msgs/Imu output (from SportModeState_.imu_state)"),
        Param(
            "estop_service", topics.ESTOP_SERVICE, "str", "std_srvs/Trigger: e-stop, calls SportClient.Damp() and latches (motion refused)"
        ),
        Param(
            "recover_service",
            "go2/recover",
            "str",
            "std_srvs/Trigger: clears the e-stop latch and calls StandUp (BalanceStand follows before the next move)",
        ),
        Param(
            "resume_service",
            "go2/resume",
            "str",
            "std_srvs/Trigger: the operator resumes motion after an odometry reset (reboot / reconnect) stopped the robot",
        ),
        Param(
            "identity_topic",
            "go2/identity",
            "str",
            "std_msgs/String (transient local): JSON {robot_id, network_interface, dds_domain_id, node} of the robot "
            "this driver drives; motion_node binds to it and havln-robot doctor lists it",
        ),
        Param(
            "event_topic",
            "go2/event",
            "str",
            "std_msgs/String (transient local): JSON events {event, reason, robot_id}: estop_latched, recovered, "
            "robot_reset, second_robot, second_publisher, resumed (trial_logger_node marks the trial on robot_reset)",
        ),
        Param(
            "diagnostics_topic",
            "/diagnostics",
            "str",
            "diagnostic_msgs/DiagnosticArray with the driver status (faults at level ERROR); absolute, as ROS diagnostics aggregators expect",
        ),
        Param("odom_frame", topics.ODOM_FRAME, "str", "odometry frame id"),
        Param("base_frame", topics.BASE_FRAME, "str", "robot body frame id (odometry child frame)"),
        Param("imu_frame", topics.IMU_FRAME, "str", "IMU frame id"),
        Param("publish_tf", True, "bool", "also broadcast odom -> base_link on tf (only where tf2_msgs is installed)"),
        # --- command shaping ------------------------------------------------------------------------
        Param(
            "command_rate_hz",
            50.0,
            "float",
            "rate at which a non-zero command is re-sent with Move (the Go2 holds a Move for 1 s; >= 20 Hz)",
            min=20.0,
            max=200.0,
        ),
        Param(
            "cmd_timeout_s",
            0.03,
            "float",
            "cmd_vel deadman: no cmd_vel for longer than this -> StopMove (s); the control thread wakes at the deadline. "
            "Below two control periods of motion_node (2 x 20 ms at 50 Hz), so that a stalled motion_node stops the Go2 "
            "within two periods",
            min=0.01,
            max=1.0,
        ),
        Param(
            "state_timeout_s",
            0.5,
            "float",
            "sportmodestate watchdog: no state for longer than this -> StopMove, fault, motion refused (s)",
            min=0.05,
            max=5.0,
        ),
        Param(
            "max_forward_speed",
            0.5,
            "float",
            f"indoor limit on vx > 0 (m/s); Go2 maximum {GO2_VX_RANGE[1]:g}",
            min=0.0,
            max=GO2_VX_RANGE[1],
        ),
        Param(
            "max_backward_speed",
            0.3,
            "float",
            f"indoor limit on |vx| for vx < 0 (m/s); Go2 maximum {-GO2_VX_RANGE[0]:g}",
            min=0.0,
            max=-GO2_VX_RANGE[0],
        ),
        Param(
            "max_lateral_speed", 0.3, "float", f"indoor limit on |vy| (m/s); Go2 maximum {GO2_VY_RANGE[1]:g}", min=0.0, max=GO2_VY_RANGE[1]
        ),
        Param(
            "max_yaw_rate",
            1.0,
            "float",
            f"indoor limit on |vyaw| (rad/s); Go2 maximum {GO2_VYAW_RANGE[1]:g}",
            min=0.0,
            max=GO2_VYAW_RANGE[1],
        ),
        Param(
            "zero_epsilon",
            1e-3,
            "float",
            "a command whose |vx|, |vy| (m/s) and |vyaw| (rad/s) are all below this counts as zero (-> StopMove)",
            min=0.0,
            max=0.05,
        ),
        Param(
            "move_modes",
            [1, 3],
            "int_list",
            "SportModeState_.mode values in which Move works (Unitree: 1 balanceStand, 3 locomotion); in any other "
            "mode BalanceStand is sent before the next Move",
            min=0,
            max=255,
            min_len=1,
        ),
        Param(
            "balance_retry_s",
            1.0,
            "float",
            "minimum time between two BalanceStand calls while the robot stays outside move_modes (s)",
            min=0.1,
            max=10.0,
        ),
        Param(
            "retry_backoff_initial_s",
            0.1,
            "float",
            "wait before re-issuing a StopMove / Damp that failed (s); doubles per consecutive failure up to retry_backoff_max_s",
            min=0.01,
            max=10.0,
        ),
        Param("retry_backoff_max_s", 2.0, "float", "cap of the doubling retry wait of a failed SDK call (s)", min=0.01, max=60.0),
        Param(
            "max_call_retries",
            20,
            "int",
            "consecutive failures of one SDK call after which it is not retried until the robot answers again (logged once)",
            min=1,
            max=1000,
        ),
        # --- state conversion ----------------------------------------------------------------------
        Param(
            "state_velocity_frame",
            "odom",
            "str",
            "frame of SportModeState_.velocity: 'odom' (rotated into base_link for the Odometry twist) or 'body'",
            choices=("odom", "body"),
        ),
        Param(
            "max_publish_rate_hz",
            100.0,
            "float",
            "odom / imu / tf are published at most this often (Hz); the watchdog sees every state",
            min=1.0,
            max=1000.0,
        ),
        Param("status_rate_hz", 2.0, "float", "diagnostics publication rate (Hz); faults are also published at once", min=0.1, max=20.0),
    ),
)
