"""The operator console's pure parts (no rclpy): parameters, sessions and control ownership
(:mod:`~havln_robot.console.control`), the live view model (:mod:`~havln_robot.console.view`),
bounded per-client fan-out (:mod:`~havln_robot.console.hub`), frame encoding
(:mod:`~havln_robot.console.frames`) and the Starlette web app (:mod:`~havln_robot.console.web`),
which talks to the robot through an injected :class:`~havln_robot.console.web.Backend`.

console_node (:mod:`havln_robot.nodes.console_node`) is the ROS shell that implements the backend.
"""
