"""Replay a format-v1 action file on a Go2-sized robot in Gazebo Harmonic (ROS 2 Jazzy, ros_gz).

    ros2 launch havln_robot gazebo_replay.launch.py replay_file:=/abs/path/val_seen.json [episodes:=5593] [headless:=true]

Starts, in order:
1. Gazebo (ros_gz_sim gz_sim.launch.py) with gazebo/havln_world.sdf (``world:=`` to use another);
2. ros_gz_bridge parameter_bridge with gazebo/bridge.yaml (cmd_vel, odom, imu, camera topics, clock);
3. the robot: ros_gz_sim ``create`` spawns gazebo/go2_base.sdf at (x, y, yaw);
4. motion_node, agent_node and trial_logger_node with config/gazebo.yaml (sim time);
5. when ``replay_file`` is given (after ``replay_delay`` s): ``havln-robot replay FILE --backend ros
   --target external``, which
   publishes each action on havln/action and waits for motion_node's havln/action_result.

Files are found next to this launch file (``../gazebo``, ``../config``), which is the package share
folder when installed and the repository root in a source checkout. See docs/gazebo.md.
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, IncludeLaunchDescription, TimerAction
from launch.conditions import IfCondition, UnlessCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution, PythonExpression
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackagePrefix

from havln_robot.node_table import unknown_nodes

SHARE = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
WORLD_SDF = os.path.join(SHARE, "gazebo", "havln_world.sdf")
ROBOT_SDF = os.path.join(SHARE, "gazebo", "go2_base.sdf")
BRIDGE_YAML = os.path.join(SHARE, "gazebo", "bridge.yaml")
PARAMS_YAML = os.path.join(SHARE, "config", "gazebo.yaml")
NODES = ["motion_node", "people_node", "agent_node", "trial_logger_node"]
if unknown_nodes(NODES):  # the one node list: havln_robot/node_table.py
    raise RuntimeError(f"{__file__}: {unknown_nodes(NODES)} not in havln_robot.node_table.NODES")
SPAWN_Z_M = "0.21"  # go2_base.sdf origin height above the floor


def generate_launch_description():
    from ament_index_python.packages import get_package_share_directory

    world = LaunchConfiguration("world")
    params_file = LaunchConfiguration("params_file")
    replay_file = LaunchConfiguration("replay_file")
    headless = LaunchConfiguration("headless")
    args = [
        DeclareLaunchArgument("world", default_value=WORLD_SDF, description="Gazebo world SDF"),
        DeclareLaunchArgument("world_name", default_value="havln_replay", description="<world name> inside that SDF (spawn target)"),
        DeclareLaunchArgument("params_file", default_value=PARAMS_YAML, description="ROS-params YAML (config/gazebo.yaml)"),
        DeclareLaunchArgument("replay_file", default_value="", description="format-v1 action file to replay (empty: only start the stack)"),
        DeclareLaunchArgument("episodes", default_value="", description="episode ids 'a,b' or a count N (default: all)"),
        DeclareLaunchArgument("x", default_value="0.0", description="spawn x, m (world frame)"),
        DeclareLaunchArgument("y", default_value="0.0", description="spawn y, m"),
        DeclareLaunchArgument("yaw", default_value="0.0", description="spawn yaw, rad (REP 103)"),
        DeclareLaunchArgument(
            "z", default_value="0.0", description="ground height under the spawn point, m (havln-robot gazebo-world prints it)"
        ),
        DeclareLaunchArgument("headless", default_value="false", description="true: server only (-s), no GUI"),
        DeclareLaunchArgument("replay_delay", default_value="8.0", description="s to wait before the replay starts (Gazebo + bridge up)"),
    ]
    gz_launch = os.path.join(get_package_share_directory("ros_gz_sim"), "launch", "gz_sim.launch.py")
    gazebo_gui = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(gz_launch),
        launch_arguments={"gz_args": ["-r ", world], "on_exit_shutdown": "true"}.items(),
        condition=UnlessCondition(headless),
    )
    gazebo_server = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(gz_launch),
        launch_arguments={"gz_args": ["-r -s ", world], "on_exit_shutdown": "true"}.items(),
        condition=IfCondition(headless),
    )
    bridge = Node(
        package="ros_gz_bridge",
        executable="parameter_bridge",
        name="havln_gz_bridge",
        parameters=[{"config_file": BRIDGE_YAML, "use_sim_time": True}],
        output="screen",
    )
    spawn = Node(
        package="ros_gz_sim",
        executable="create",
        arguments=[
            "-world",
            LaunchConfiguration("world_name"),
            "-file",
            ROBOT_SDF,
            "-name",
            "go2",
            "-x",
            LaunchConfiguration("x"),
            "-y",
            LaunchConfiguration("y"),
            "-z",
            PythonExpression([LaunchConfiguration("z"), " + ", SPAWN_Z_M]),
            "-Y",
            LaunchConfiguration("yaw"),
        ],  # fmt: skip
        output="screen",
    )
    nodes = [
        Node(package="havln_robot", executable=name, name=name, parameters=[params_file], output="screen", emulate_tty=True)
        for name in NODES
    ]
    replay = TimerAction(
        period=LaunchConfiguration("replay_delay"),
        actions=[
            ExecuteProcess(
                cmd=[
                    # ament_python installs console scripts in lib/havln_robot (setup.cfg), not on PATH
                    PathJoinSubstitution([FindPackagePrefix("havln_robot"), "lib", "havln_robot", "havln-robot"]),
                    "replay",
                    replay_file,
                    "--backend",
                    "ros",
                    "--target",
                    "external",
                    "--episodes",
                    LaunchConfiguration("episodes"),
                ],  # fmt: skip
                output="screen",
                emulate_tty=True,
                condition=IfCondition(PythonExpression(["'", replay_file, "' != ''"])),
            )
        ],
    )
    return LaunchDescription([*args, gazebo_gui, gazebo_server, bridge, spawn, *nodes, replay])
