"""agent_node parameters (pure Python; the agent harness owns them, agent_node only declares them).

The agent turns an instruction into actions: (panorama by rotation | front view) → policy →
``havln/action`` → wait for ``havln/action_result`` → ... until STOP or the action budget.
Defaults for the panorama (12 views, 30° apart = two 15° TURN actions per view) follow the
panoramic HA-VLN-CE / VLN-CE waypoint setups (12 x 30° RGB-D views); see ``docs/perception.md``.
"""

from __future__ import annotations

from havln_robot import topics
from havln_robot.actions import MAX_ACTIONS, TURN_ANGLE_DEG
from havln_robot.params import Param, ParamSpec

AGENT_PARAMS = ParamSpec(
    "agent_node",
    (
        Param(
            "policy",
            "small_panoramic",
            "str",
            "policy to run (havln_robot.policy.registry.make_policy): a checkpoint path, a file name in models/, "
            "or a policy without a checkpoint 'forward[:steps=N,views=V]' / 'random[:seed=S,views=V]' (VLN-CE semantics)",
        ),
        Param("device", "cpu", "str", "torch device for checkpoint policies ('cpu', 'cuda')"),
        Param(
            "max_actions",
            MAX_ACTIONS,
            "int",
            "episode action budget (policy actions; panorama turns are not counted)",
            min=1,
            max=MAX_ACTIONS,
        ),
        Param(
            "panorama_direction",
            "left",
            "str",
            "turn direction of the panorama sweep (left = CCW = +yaw, REP 103)",
            choices=("left", "right"),
        ),
        Param(
            "heading_tolerance_deg",
            TURN_ANGLE_DEG / 2.0,
            "float",
            "a panorama view is taken when the measured heading is within this of its target; larger errors get one more turn, deg",
            min=1.0,
            max=45.0,
        ),
        Param(
            "max_correction_turns", 4, "int", "extra TURN actions allowed per panorama to correct measured heading errors", min=0, max=24
        ),
        Param(
            "heading_source",
            "imu",
            "str",
            "measured yaw of panorama turns: imu (gyro-integrated yaw_imu_deg; immune to foot slip) or odom (yaw_odom_deg)",
            choices=("imu", "odom"),
        ),
        Param("settle_s", 0.3, "float", "wait after an action result before a frame counts as taken at the new pose, s", min=0.0, max=10.0),
        Param("sync_tolerance_s", 0.05, "float", "max |stamp(rgb) - stamp(depth)| for a synchronised RGB-D pair, s", min=0.0, max=1.0),
        Param("frame_timeout_s", 5.0, "float", "wait for a synchronised RGB-D pair before the episode is aborted, s", min=0.1, max=120.0),
        Param("action_timeout_s", 60.0, "float", "wait for havln/action_result before the episode is aborted, s", min=0.1, max=600.0),
        Param("rejected_retries", 5, "int", "re-sends of an action that motion_node answered 'rejected' (busy)", min=0, max=100),
        Param("rejected_wait_s", 0.5, "float", "pause before re-sending a rejected action, s", min=0.0, max=10.0),
        Param(
            "camera_hfov_deg",
            0.0,
            "float",
            "colour HFOV to assume when no camera_info arrived; 0 = use camera_info (required then), deg (D435i: 69.4)",
            min=0.0,
            max=179.0,
        ),
        Param(
            "fov_mode",
            "pad",
            "str",
            "how camera views map to the model's 90° view: pad (true geometry) or stretch",
            choices=("pad", "stretch"),
        ),
        Param(
            "overlap",
            True,
            "bool",
            "run inference on a finished panorama while the robot finishes it (discrete: the return turns; sweep: the last "
            "30 deg and the stop, once the gyro drift is known from an earlier sweep)",
        ),
        Param(
            "panorama_mode",
            "sweep",
            "str",
            "sweep = one 360 deg turn at a constant rate (SWEEP_LEFT/RIGHT), a frame per view chosen by the IMU yaw at its "
            "timestamp; discrete = 24 TURN actions, a view every two (docs/perception.md)",
            choices=("sweep", "discrete"),
        ),
        Param(
            "view_tolerance_deg",
            0.85,
            "float",
            "sweep mode: a frame is used for a view only within this of its heading (by IMU), else the view is retaken, deg "
            "(1.0 deg, less 0.15 deg for the IMU's own error)",
            min=0.05,
            max=14.0,
        ),
        Param(
            "camera_time_offset_s",
            0.0,
            "float",
            "sweep mode: added to a frame's header stamp to get its mid-exposure instant (camera latency compensation), s; "
            "0 for the sim and realsense-ros hardware stamps",
            min=-1.0,
            max=1.0,
        ),
        Param("imu_topic", topics.IMU, "str", "sensor_msgs/Imu in (sweep mode: yaw from its orientation, interpolated at frame stamps)"),
        Param(
            "blocked_wait_s",
            1.0,
            "float",
            "stand still this long after a motion refused or stopped by an obstacle or a person (let people pass), s",
            min=0.0,
            max=60.0,
        ),
        Param(
            "max_consecutive_blocked",
            10,
            "int",
            "end the episode (reason blocked) after this many policy actions, or panorama turns, in a row refused or stopped by obstacles",
            min=1,
            max=500,
        ),
        Param(
            "inference_timeout_s",
            10.0,
            "float",
            "policy reset / act taking longer than this ends the episode aborted; the hung inference thread is abandoned (s)",
            min=0.01,
            max=600.0,
        ),
        Param(
            "max_unknown_word_rate",
            0.5,
            "float",
            "an instruction with a larger share of words outside the policy's vocabulary is refused (episode aborted, the "
            "unknown words named): the policy would read mostly <unk>; 1.0 = never refuse (policies without a vocabulary "
            "are not checked)",
            min=0.0,
            max=1.0,
        ),
        Param("instruction_topic", topics.INSTRUCTION, "str", "std_msgs/String instruction in; a new one aborts the running episode"),
        Param("action_topic", topics.ACTION, "str", "std_msgs/String action literal out (to motion_node)"),
        Param("action_result_topic", topics.ACTION_RESULT, "str", "diagnostic_msgs/DiagnosticStatus action result in (from motion_node)"),
        Param("color_topic", topics.COLOR_IMAGE, "str", "colour image in (rgb8 or bgr8)"),
        Param("depth_topic", topics.DEPTH_IMAGE, "str", "depth aligned to colour in (16UC1 mm or 32FC1 m)"),
        Param(
            "image_transport",
            "raw",
            "str",
            "raw: subscribe color_topic and depth_topic (sensor_msgs/Image); compressed: <color_topic>/compressed and "
            "<depth_topic>/compressedDepth (camera_node image_transport compressed; an agent on another machine)",
            choices=("raw", "compressed"),
        ),
        Param("color_info_topic", topics.COLOR_INFO, "str", "colour camera_info in (intrinsics for the FOV mapping)"),
        Param("status_topic", topics.AGENT_STATUS, "str", "diagnostic_msgs/DiagnosticStatus agent status out (AGENT_STATUS_KEYS)"),
        Param("episode_done_topic", topics.EPISODE_DONE, "str", "std_msgs/String JSON episode summary out"),
        Param("pause_topic", topics.AGENT_PAUSE, "str", "std_msgs/Bool in: true holds the next action until false (operator console)"),
    ),
)
