"""Two Go2s on one ROS domain, each stack in its own namespace.

    ros2 launch havln_robot two_go2.launch.py [robot_a:=robot_a] [robot_b:=robot_b] \\
        [params_a:=/path/to/go2_a.yaml] [params_b:=/path/to/go2_b.yaml]

Each robot runs go2.launch.py's nodes under its namespace (``/robot_a/cmd_vel``, ``/robot_a/odom``,
``/robot_a/go2/identity``, ...), so that a command for one never reaches the other. Without
namespaces both drivers would take the same ``cmd_vel``: they see each other on ``go2/identity``
and refuse motion (docs/robot.md).

Usually each robot has its own Jetson and runs ``go2.launch.py namespace:=robot_a`` there; this
file is the one-computer form (two Go2s wired to one machine: give each params file its own
``network_interface`` and ``robot_id``). The operator console is not started here (one per robot).
DDS: the shell's setup (``HAVLN_DDS=robot``), as go2.launch.py does by default.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from havln_robot.node_table import unknown_nodes

NODES = ["camera_node", "go2_driver_node", "motion_node", "people_node", "agent_node", "trial_logger_node"]
if unknown_nodes(NODES):  # the one node list: havln_robot/node_table.py
    raise RuntimeError(f"{__file__}: {unknown_nodes(NODES)} not in havln_robot.node_table.NODES")

#: As go2.launch.py: device nodes restarted when they exit, after RESPAWN_DELAY_S seconds.
RESPAWN = {"camera_node", "go2_driver_node"}
RESPAWN_DELAY_S = 3.0
#: (namespace argument, params-file argument) of each robot.
ROBOTS = (("robot_a", "params_a"), ("robot_b", "params_b"))


def generate_launch_description():
    default_params = os.path.join(get_package_share_directory("havln_robot"), "config", "go2.yaml")
    actions = [SetEnvironmentVariable("HAVLN_DDS", "robot")]
    for ns_arg, params_arg in ROBOTS:
        actions.append(DeclareLaunchArgument(ns_arg, default_value=ns_arg, description=f"namespace of {ns_arg}'s nodes and topics"))
        actions.append(DeclareLaunchArgument(params_arg, default_value=default_params, description=f"ROS-params YAML of {ns_arg}"))
        for name in NODES:
            actions.append(
                Node(
                    package="havln_robot",
                    executable=name,
                    name=name,
                    namespace=LaunchConfiguration(ns_arg),
                    parameters=[LaunchConfiguration(params_arg)],
                    output="screen",
                    emulate_tty=True,
                    respawn=name in RESPAWN,
                    respawn_delay=RESPAWN_DELAY_S if name in RESPAWN else 0.0,
                )
            )
    return LaunchDescription(actions)
