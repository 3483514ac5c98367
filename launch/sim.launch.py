"""Embedded simulator under a real ROS 2 install (same nodes as `havln-robot launch config/sim.yaml`).

    ros2 launch havln_robot sim.launch.py [params_file:=/path/to/sim.yaml]

Starts sim_node (Go2 + RealSense stand-in on the same topics), motion_node, agent_node and
trial_logger_node with config/sim.yaml; all nodes use the simulator's /clock.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from havln_robot.node_table import unknown_nodes

NODES = ["sim_node", "motion_node", "people_node", "agent_node", "trial_logger_node"]
OPTIONAL = ["console_node"]  # started with console:=true (operator console, docs/console.md)
if unknown_nodes(NODES + OPTIONAL):  # the one node list: havln_robot/node_table.py
    raise RuntimeError(f"{__file__}: {unknown_nodes(NODES + OPTIONAL)} not in havln_robot.node_table.NODES")


def generate_launch_description():
    default_params = os.path.join(get_package_share_directory("havln_robot"), "config", "sim.yaml")
    params_file = LaunchConfiguration("params_file")
    actions = [DeclareLaunchArgument("params_file", default_value=default_params, description="ROS-params YAML (config/sim.yaml)")]
    for name in NODES:
        actions.append(
            Node(
                package="havln_robot",
                executable=name,
                name=name,
                parameters=[params_file],
                output="screen",
                emulate_tty=True,
            )
        )
    actions.append(
        DeclareLaunchArgument("console", default_value="false", description="also start console_node (operator console, 127.0.0.1:8765)")
    )
    for name in OPTIONAL:
        actions.append(
            Node(
                package="havln_robot",
                executable=name,
                name=name,
                parameters=[params_file],
                output="screen",
                emulate_tty=True,
                condition=IfCondition(LaunchConfiguration("console")),
            )
        )
    return LaunchDescription(actions)
