"""Parameters of console_node (pure Python; see havln_robot.params for the conventions)."""

from __future__ import annotations

from havln_robot import topics
from havln_robot.params import Param, ParamSpec

#: Topic on which the console pauses (True) and resumes (False) agent_node (std_msgs/Bool).
AGENT_PAUSE = topics.AGENT_PAUSE

CONSOLE_PARAMS = ParamSpec(
    node="console_node",
    params=(
        Param(
            "host",
            "127.0.0.1",
            "str",
            "address the web server binds; anything but loopback needs a token and should use TLS or an SSH tunnel",
        ),
        Param("port", 8765, "int", "TCP port of the web server (0 = any free port, logged)", min=0, max=65535),
        Param("token", "", "str", "operator token; empty = a random one generated at start and printed once"),
        Param("tls_certfile", "", "str", "PEM certificate: serve HTTPS/WSS (uvicorn ssl_certfile); empty = plain HTTP"),
        Param("tls_keyfile", "", "str", "PEM private key of tls_certfile"),
        Param("allow_plain_remote", False, "bool", "allow a non-loopback bind without TLS (token sent in clear: only behind a tunnel)"),
        Param(
            "absent_pause_s",
            0.0,
            "float",
            "pause the agent when the operator in control has been disconnected this long, s (0 = off)",
            min=0.0,
            max=3600.0,
        ),
        Param("frame_rate_hz", 10.0, "float", "colour/depth frames sent to each browser per second at most", min=0.5, max=30.0),
        Param("jpeg_quality", 70, "int", "JPEG quality of the streamed frames", min=10, max=95),
        Param("frame_width", 320, "int", "streamed frames are scaled to this width, px", min=64, max=1280),
        Param("db_path", "", "str", "trial store the verdicts go to; empty = <user data>/trials/<platform>/trials.db"),
        Param("platform", "sim", "str", "platform of the trial store (sim, go2, gazebo)"),
        Param("episodes_file", "", "str", "HA-R2R episodes (*.json / *.json.gz) for starting a trial by episode id; empty = text only"),
        Param("instruction_topic", topics.INSTRUCTION, "str", "std_msgs/String instruction in/out (start = publish)"),
        Param("action_topic", topics.ACTION, "str", "std_msgs/String action literals (Stop/E-stop publish STOP)"),
        Param("action_result_topic", topics.ACTION_RESULT, "str", "DiagnosticStatus action results in"),
        Param("collision_topic", topics.COLLISION, "str", "DiagnosticStatus collisions in"),
        Param("cmd_vel_topic", topics.CMD_VEL, "str", "geometry_msgs/Twist shown (last command)"),
        Param("odom_topic", topics.ODOM, "str", "nav_msgs/Odometry in (trace)"),
        Param("ground_truth_topic", topics.GROUND_TRUTH, "str", "DiagnosticStatus ground truth in (sim)"),
        Param("agent_status_topic", topics.AGENT_STATUS, "str", "DiagnosticStatus agent status in"),
        Param("episode_done_topic", topics.EPISODE_DONE, "str", "std_msgs/String episode summary in"),
        Param("pause_topic", AGENT_PAUSE, "str", "std_msgs/Bool out: pause (true) / resume (false) agent_node"),
        Param("color_topic", topics.COLOR_IMAGE, "str", "colour image in"),
        Param("depth_topic", topics.DEPTH_IMAGE, "str", "aligned depth image in"),
        Param("diagnostics_topic", "/diagnostics", "str", "diagnostic_msgs/DiagnosticArray in (driver, camera)"),
        Param("estop_service", topics.ESTOP_SERVICE, "str", "std_srvs/Trigger of go2_driver_node (Damp)"),
        Param(
            "trial_logger",
            "trial_logger_node",
            "str",
            "trial_logger_node's name (its region/people/operator parameters are set at start)",
            ros_name="node",
        ),
    ),
)
