"""Real robot: Unitree Go2 EDU + Jetson + RealSense D435i.

    ros2 launch havln_robot go2.launch.py [params_file:=/path/to/go2.yaml] [namespace:=go2] [dds:=robot|loopback]
                                          [role:=all|robot|inference]

Starts camera_node, go2_driver_node, motion_node, people_node, agent_node and trial_logger_node with
the parameters of config/go2.yaml (installed to share/havln_robot/config), whose ``/**/node`` keys
apply in any namespace. camera_node and go2_driver_node are respawned 3 s after they exit (``RESPAWN``).

Two computers (docs/two_machines.md): ``role:=robot`` on the Jetson starts the nodes of ``ROLES["robot"]``
(camera, driver, motion with its safety layer, people, trial logger; camera_node also publishes the
compressed images), ``role:=inference`` on the workstation starts agent_node reading the compressed
images; ``role:=all`` (default) starts every node on one machine. Both sides need the same
ROS_DOMAIN_ID and a two-host DDS profile (config/fastdds_two_hosts.xml or config/cyclonedds_two_hosts.xml).

DDS: on the robot the graph must be visible from a laptop, so this launch file sets
``HAVLN_DDS=robot`` for its nodes by default (``dds:=robot``): they keep the DDS environment of
your shell (RMW, ROS_DOMAIN_ID, your Fast DDS / Cyclone profile) instead of the project's loopback
profile, and the launch says so. ``dds:=loopback`` keeps everything on 127.0.0.1 (bench tests).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, SetEnvironmentVariable
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from havln_robot.node_table import unknown_nodes

NODES = ["camera_node", "go2_driver_node", "motion_node", "people_node", "agent_node", "trial_logger_node"]
OPTIONAL = ["console_node"]  # started with console:=true (operator console, docs/console.md)
if unknown_nodes(NODES + OPTIONAL):  # the one node list: havln_robot/node_table.py
    raise RuntimeError(f"{__file__}: {unknown_nodes(NODES + OPTIONAL)} not in havln_robot.node_table.NODES")


#: Device nodes restarted by launch when they exit (camera unplugged / driver exits because the
#: robot's interface is not up yet), after RESPAWN_DELAY_S seconds; the rest stop with the launch.
RESPAWN = {"camera_node", "go2_driver_node"}
RESPAWN_DELAY_S = 3.0

#: role:= -> the nodes it starts: the robot keeps everything that moves or stops the body (the
#: safety layer stays beside the hardware when the link drops); the policy runs on the inference machine.
ROLES = {
    "robot": ["camera_node", "go2_driver_node", "motion_node", "people_node", "trial_logger_node"],
    "inference": ["agent_node"],
}
ROLES["all"] = NODES
#: Per-role parameter overrides on top of params_file: images cross the link compressed.
ROLE_PARAMS = {
    ("robot", "camera_node"): {"image_transport": "both"},
    ("inference", "agent_node"): {"image_transport": "compressed"},
}
if sorted(ROLES["robot"] + ROLES["inference"]) != sorted(NODES):
    raise RuntimeError(f"{__file__}: ROLES robot + inference must split NODES exactly")


def _role_nodes(context, params_file, namespace):
    role = LaunchConfiguration("role").perform(context)
    if role not in ROLES:
        raise RuntimeError(f"go2.launch.py: role:={role!r}; use one of {', '.join(ROLES)}")
    actions = [LogInfo(msg=f"havln_robot go2.launch.py: role {role}: {', '.join(ROLES[role])}")]
    for name in ROLES[role]:
        extra = ROLE_PARAMS.get((role, name))
        actions.append(
            Node(
                package="havln_robot",
                executable=name,
                name=name,
                namespace=namespace,
                parameters=[params_file, extra] if extra else [params_file],
                output="screen",
                emulate_tty=True,
                respawn=name in RESPAWN,
                respawn_delay=RESPAWN_DELAY_S if name in RESPAWN else 0.0,
            )
        )
    return actions


def generate_launch_description():
    default_params = os.path.join(get_package_share_directory("havln_robot"), "config", "go2.yaml")
    params_file = LaunchConfiguration("params_file")
    namespace = LaunchConfiguration("namespace")
    actions = [
        DeclareLaunchArgument("params_file", default_value=default_params, description="ROS-params YAML (config/go2.yaml)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace for every node and topic"),
        DeclareLaunchArgument(
            "dds",
            default_value="robot",
            description="robot: keep the shell's DDS setup (graph visible on the robot network); loopback: 127.0.0.1 only",
        ),
        SetEnvironmentVariable("HAVLN_DDS", LaunchConfiguration("dds")),
        LogInfo(msg=["havln_robot go2.launch.py: HAVLN_DDS=", LaunchConfiguration("dds"), " (dds:=loopback keeps DDS on 127.0.0.1)"]),
    ]
    actions.append(
        DeclareLaunchArgument(
            "role",
            default_value="all",
            description="all: every node here; robot: the Jetson's nodes; inference: agent_node (docs/two_machines.md)",
        )
    )
    actions.append(OpaqueFunction(function=_role_nodes, args=[params_file, namespace]))
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
