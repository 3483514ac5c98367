"""``sim_node`` parameters (pure Python; the spec registered in :mod:`havln_robot.config`).

Sources of the defaults
-----------------------
* Robot body, limits and camera mount: :mod:`havln_robot.sim.robot` (Unitree Go2 datasheet,
  unitree_sdk2 sport docs, Intel RealSense D400 datasheet 337029).
* Camera stream: 640x480 colour + depth aligned to colour, 69.4 deg colour HFOV (D435i), depth
  16UC1 millimetres as realsense-ros publishes it.
* Noise defaults: a mild legged-robot odometry (1 % scale error, random walks) and a MEMS gyro
  (2 mrad/s white noise, 0.5 mrad/s bias); 50 ms actuation latency as in ``havln-robot bench motion``.
"""

from __future__ import annotations

import os

from havln_robot import topics
from havln_robot.hardware import GO2_VX_RANGE, GO2_VYAW_RANGE
from havln_robot.motion.lidar import GENERIC_ELEVATION_DEG
from havln_robot.motion.params import mount_params
from havln_robot.params import Param, ParamSpec
from havln_robot.sim import robot

SIM_NODE_PARAMS = ParamSpec(
    "sim_node",
    (
        # --- scene and episode -----------------------------------------------------------------
        Param(
            "scene_source",
            "auto",
            "str",
            "where the episode comes from: 'episodes' = episodes_file (error if absent), 'builtin' = the authored "
            "apartment (no data needed), 'auto' = episodes_file when it exists, else builtin (logged)",
            choices=("auto", "episodes", "builtin"),
        ),
        Param(
            "episodes_file",
            "$DATA/ha_r2r_de/HA_val_seen.json",
            "str",
            "HA-R2R/R2R discrete *.json or continuous *.json.gz ($DATA = HA-VLN data dir)",
        ),
        Param("connectivity_dir", "$DATA/connectivity", "str", "Matterport3D connectivity graphs (<scan>_connectivity.json)"),
        Param("episode_id", "", "str", "episode to run (path_id / episode_id); empty = use episode_index"),
        Param("episode_index", 0, "int", "episode to run, 0-based position in episodes_file (when episode_id is empty)", min=0),
        Param("instruction_index", 0, "int", "which of the episode's instructions is 'the' instruction", min=0, max=9),
        Param("corridor_width_m", 1.2, "float", "free-space corridor width along navigation-graph edges, m", min=0.4, max=5.0),
        Param(
            "scenes_dir",
            "",
            "str",
            "folder of your scan meshes <scan>/<scan>.glb (Habitat layout): render, collide and measure NE on the "
            "mesh (docs/sim.md); empty = procedural scenes from the navigation graph",
        ),
        Param("scenes_up", "y", "str", "up axis of the scan meshes: 'y' (Habitat) or 'z' (map frame)", choices=("y", "z")),
        Param("populate_humans", 0, "int", "episodes without people get this many synthetic people near the path", min=0, max=50),
        Param("seed", 0, "int", "seed of the people's motion phases and of all sensor/actuation noise", min=0),
        # --- timing --------------------------------------------------------------------------------
        Param(
            "sim_rate_hz",
            100.0,
            "float",
            "simulation ticks per wall-clock second (each advances sim time and publishes clock)",
            min=10.0,
            max=1000.0,
        ),
        Param("real_time_factor", 1.0, "float", "sim seconds per wall-clock second", min=0.05, max=20.0),
        Param(
            "lockstep",
            False,
            "bool",
            "true = sim time advances in fixed steps of 1/sim_rate_hz only when motion_node, people_node and agent_node are "
            "done with the current one and one of them needs time to pass (docs/sim.md, Lockstep): a loaded machine slows "
            "the simulation, not the robot, and a seed gives the same actions; the camera renders every "
            "round(sim_rate_hz / camera_rate_hz)-th step; false = stepping on the wall clock",
        ),
        Param(
            "lockstep_timeout_s",
            15.0,
            "float",
            "lockstep: a participant not heard for this long (wall clock; they repeat their ack every 0.2 s) no longer holds the clock, s",
            min=0.5,
            max=600.0,
        ),
        Param(
            "lockstep_wait_for",
            ["motion", "people", "agent"],
            "str_list",
            "lockstep: the first step waits until a participant of each of these roles is heard (at most 120 s), so that every one "
            "of them sees the simulation from its first step; people is not waited for with people_source ground_truth; "
            "havln-robot launch / demo keep the roles whose node the profile starts",
            choices=("motion", "people", "agent"),
        ),
        Param(
            "odom_rate_hz",
            100.0,
            "float",
            "odom (and TF) rate, Hz: every round(sim_rate_hz / odom_rate_hz)-th tick (go2_driver_node: 100)",
            min=1.0,
            max=1000.0,
        ),
        Param("imu_rate_hz", 100.0, "float", "imu rate, Hz: every round(sim_rate_hz / imu_rate_hz)-th tick", min=1.0, max=1000.0),
        Param(
            "camera_rate_hz",
            30.0,
            "float",
            "RGB-D frame rate, Hz of wall time (rendered off the executor thread; 30 like the D435i profile)",
            min=0.5,
            max=60.0,
        ),
        Param(
            "camera_exposure_s",
            0.008,
            "float",
            "exposure of the simulated camera, s: frames are rendered at the pose of the stamp (mid-exposure), without "
            "blur; motion_node sizes the sweep rate so that exposure x yaw rate stays within sweep_max_blur_deg",
            min=0.0,
            max=0.2,
        ),
        Param(
            "ground_truth_rate_hz",
            10.0,
            "float",
            "havln/ground_truth, havln/humans and havln/people rate, Hz: every n-th tick",
            min=0.5,
            max=100.0,
        ),
        Param(
            "cmd_vel_timeout_s",
            0.5,
            "float",
            "no cmd_vel for this long -> command zero (watchdog), s of sim time; 0 = off",
            min=0.0,
            max=10.0,
        ),
        # --- base limits ----------------------------------------------------------------------------
        Param(
            "max_linear_speed",
            1.0,
            "float",
            f"|forward speed| limit, m/s (Go2 SDK accepts up to {GO2_VX_RANGE[1]:g})",
            min=0.05,
            max=GO2_VX_RANGE[1],
        ),
        Param(
            "max_angular_speed",
            2.0,
            "float",
            f"|yaw rate| limit, rad/s (Go2 SDK accepts up to {GO2_VYAW_RANGE[1]:g})",
            min=0.05,
            max=GO2_VYAW_RANGE[1],
        ),
        Param("max_linear_accel", 2.0, "float", "|forward acceleration| limit, m/s^2", min=0.05, max=50.0),
        Param("max_angular_accel", 6.0, "float", "|yaw acceleration| limit, rad/s^2", min=0.05, max=100.0),
        Param(
            "camera_pitch_source",
            "action_result",
            "str",
            "camera pitch (LOOK_UP/DOWN): 'action_result' = pitch_deg of havln/action_result (motion_node's virtual pitch), "
            "'cmd_vel' = body pitch rate from cmd_vel angular.y (REP 103: positive = nose down), 'none' = level",
            choices=("action_result", "cmd_vel", "none"),
        ),
        Param(
            "max_body_pitch_deg",
            43.0,
            "float",
            "body pitch limit for camera_pitch_source=cmd_vel, deg (Go2 Euler limit 0.75 rad)",
            min=1.0,
            max=43.0,
        ),
        # --- noise ---------------------------------------------------------------------------------
        Param("noise_enabled", True, "bool", "false = a perfect robot (no latency, drift, noise or bias)"),
        Param("latency_s", 0.05, "float", "actuation latency: cmd_vel takes effect this much later, s", min=0.0, max=2.0),
        Param("odom_scale_std", 0.01, "float", "std of the per-episode odometry distance scale error, fraction", min=0.0, max=0.5),
        Param("odom_trans_noise", 0.005, "float", "odometry translation random walk, m per sqrt(m)", min=0.0, max=1.0),
        Param("odom_yaw_noise", 0.005, "float", "odometry yaw random walk from turning, rad per sqrt(rad)", min=0.0, max=1.0),
        Param("odom_yaw_per_m", 0.003, "float", "odometry yaw random walk from driving, rad per sqrt(m)", min=0.0, max=1.0),
        Param("gyro_noise_std", 0.002, "float", "gyro white noise per sample, rad/s", min=0.0, max=1.0),
        Param("gyro_bias_std", 0.0005, "float", "std of the constant gyro bias drawn per episode, rad/s", min=0.0, max=1.0),
        Param("accel_noise_std", 0.02, "float", "accelerometer white noise per sample, m/s^2", min=0.0, max=10.0),
        # --- camera --------------------------------------------------------------------------------
        Param("camera_enabled", True, "bool", "render and publish RGB-D (false: odom/imu/ground truth only)"),
        Param("camera_width", 640, "int", "image width, px", min=32, max=1920),
        Param("camera_height", 480, "int", "image height, px", min=32, max=1080),
        Param(
            "camera_hfov_deg",
            robot.D435I_HFOV_DEG,
            "float",
            "horizontal field of view, deg (D435i colour 69.4); square pixels",
            min=10.0,
            max=170.0,
        ),
        # the camera is rendered where motion_node and people_node place its depth: one mount, one set of rows
        *mount_params("camera_x_m", "camera_y_m", "camera_z_m", "camera_pitch_deg"),
        Param("depth_min_m", robot.D435I_MIN_RANGE_M, "float", "depth closer than this is published as 0 (invalid), m", min=0.0, max=5.0),
        Param("depth_max_m", robot.D435I_MAX_RANGE_M, "float", "depth beyond this is published as 0 (invalid), m", min=0.5, max=65.0),
        Param("people_range_m", 10.0, "float", "havln/people lists people within this distance of the robot, m", min=0.5, max=100.0),
        Param(
            "people_source",
            "ground_truth",
            "str",
            "'ground_truth' = publish the true people on people_topic; 'detected' = publish them on people_truth_topic only "
            "(people_node tracks them from the rendered depth and owns people_topic)",
            choices=("ground_truth", "detected"),
        ),
        # --- topics --------------------------------------------------------------------------------
        Param("cmd_vel_topic", topics.CMD_VEL, "str", "geometry_msgs/Twist in (base_link, m/s, rad/s)"),
        Param("action_result_topic", topics.ACTION_RESULT, "str", "DiagnosticStatus in: pitch_deg sets the camera pitch"),
        Param("odom_topic", topics.ODOM, "str", "nav_msgs/Odometry out (odom -> base_link, noisy)"),
        Param("imu_topic", topics.IMU, "str", "sensor_msgs/Imu out (gyro noise + bias)"),
        Param("color_topic", topics.COLOR_IMAGE, "str", "colour image out (rgb8)"),
        Param("color_info_topic", topics.COLOR_INFO, "str", "colour camera_info out"),
        Param("depth_topic", topics.DEPTH_IMAGE, "str", "depth image aligned to colour out (16UC1, mm, 0 = invalid)"),
        Param("depth_info_topic", topics.DEPTH_INFO, "str", "depth camera_info out (= colour intrinsics)"),
        Param("humans_topic", topics.HUMANS, "str", "geometry_msgs/PoseArray out: people in the map frame (ground truth)"),
        Param("people_topic", topics.PEOPLE, "str", "geometry_msgs/PoseArray out: people in base_link (from the true pose)"),
        Param(
            "people_truth_topic",
            topics.PEOPLE_TRUTH,
            "str",
            "geometry_msgs/PoseArray out with people_source 'detected': true people, base_link",
        ),
        Param("ground_truth_topic", topics.GROUND_TRUTH, "str", "DiagnosticStatus out: true pose, distance to goal, collisions"),
        Param("clock_topic", topics.CLOCK, "str", "rosgraph_msgs/Clock out (sim time)"),
        Param("tf_topic", topics.TF, "str", "tf2_msgs/TFMessage out (only where tf2_msgs imports)"),
        Param("reset_service", "sim/reset", "str", "std_srvs/Trigger: restart the episode (re-reads the episode parameters)"),
        # --- simulated LiDAR (optional): the mount is motion_node's, so the two place the points alike --
        Param(
            "lidar_topic",
            "",
            "str",
            "sensor_msgs/PointCloud2 out: a simulated LiDAR sweep (float32 x, y, z, the sensor's frame) ray cast in the scene "
            "with each camera frame; set motion_node's lidar_topic to the same (Go2: 'utlidar/cloud'); '' = none",
            optional=True,
        ),
        Param("lidar_frame", "utlidar_lidar", "str", "frame_id of the simulated cloud"),
        Param("lidar_range_m", 8.0, "float", "simulated LiDAR range, m", min=0.5, max=100.0),
        Param(
            "lidar_min_elevation_deg",
            GENERIC_ELEVATION_DEG[0],
            "float",
            "lowest ray of the simulated sweep in the sensor's own frame, deg (Go2 L1 hemisphere: 0; MID360: -7)",
            min=-90.0,
            max=90.0,
        ),
        Param(
            "lidar_max_elevation_deg",
            GENERIC_ELEVATION_DEG[1],
            "float",
            "highest ray of the simulated sweep in the sensor's own frame, deg (Go2 L1: 90; MID360: 52)",
            min=-90.0,
            max=90.0,
        ),
        *mount_params("lidar_x_m", "lidar_y_m", "lidar_z_m", "lidar_pitch_deg", "lidar_yaw_deg"),
        # --- frames --------------------------------------------------------------------------------
        Param("map_frame", topics.MAP_FRAME, "str", "ground-truth world frame"),
        Param("odom_frame", topics.ODOM_FRAME, "str", "odometry frame"),
        Param("base_frame", topics.BASE_FRAME, "str", "robot body frame"),
        Param("imu_frame", topics.IMU_FRAME, "str", "IMU frame (aligned with base_link)"),
        Param("camera_frame", topics.COLOR_OPTICAL_FRAME, "str", "optical frame of colour and aligned depth"),
    ),
)


def camera_depth_range(path: str | os.PathLike[str] | None = None) -> tuple[float, float]:
    """sim_node's valid depth range in a profile (``path``, default config/sim.yaml):
    (``depth_min_m``, ``depth_max_m``), m. Depth outside it is published as 0 (invalid), as a D435i
    does (:func:`havln_robot.sim.render.depth_to_mm`); the batch observer and the training renderer
    convert the same way. Defaults: :data:`havln_robot.sim.robot.D435I_MIN_RANGE_M` / ``D435I_MAX_RANGE_M``.

    Raises:
        havln_robot.params.ConfigError: the file cannot be read (one line naming it).
    """
    from havln_robot.rosparams import node_params

    p = node_params("sim_node", path)
    return float(p.get("depth_min_m", robot.D435I_MIN_RANGE_M)), float(p.get("depth_max_m", robot.D435I_MAX_RANGE_M))
