"""THE node table: every ROS node of havln_robot, its module and its parameter spec.

No imports at all, on purpose: ``setup.py`` reads this file with :func:`runpy.run_path` (it never
imports the ``havln_robot`` package, so a colcon build does not pull in torch), the launch files
check their node lists against it, and :mod:`havln_robot.config` validates profiles with it.

Adding a node: one row here (console script, profile validation and the launch/test checks
follow), plus its module under ``havln_robot/nodes/`` and its :class:`~havln_robot.params.ParamSpec`.
"""

#: node name (= executable = ROS node name) → (node module with ``main()``, "module:attribute" of
#: its ParamSpec). The spec lives below the ROS layer so a profile is validated without rclpy.
NODES: dict[str, tuple[str, str]] = {
    "camera_node": ("havln_robot.nodes.camera_node", "havln_robot.perception.params:CAMERA_PARAMS"),
    "go2_driver_node": ("havln_robot.nodes.go2_driver_node", "havln_robot.robot.params:GO2_DRIVER_PARAMS"),
    "sim_node": ("havln_robot.nodes.sim_node", "havln_robot.sim.params:SIM_NODE_PARAMS"),
    "motion_node": ("havln_robot.nodes.motion_node", "havln_robot.motion.params:MOTION_PARAMS"),
    "people_node": ("havln_robot.nodes.people_node", "havln_robot.perception.params:PEOPLE_PARAMS"),
    "agent_node": ("havln_robot.nodes.agent_node", "havln_robot.agent.params:AGENT_PARAMS"),
    "trial_logger_node": ("havln_robot.nodes.trial_logger_node", "havln_robot.trials.params:TRIAL_LOGGER_PARAMS"),
    "console_node": ("havln_robot.nodes.console_node", "havln_robot.console.params:CONSOLE_PARAMS"),
}


def unknown_nodes(names):
    """The names in ``names`` that are not rows of :data:`NODES` (for launch files and tests), sorted."""
    return sorted(set(names) - set(NODES))
