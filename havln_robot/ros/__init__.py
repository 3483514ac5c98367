"""The ROS layer's shared parts (rclpy and message packages): the message codec
(:mod:`~havln_robot.ros.codec`), the motion client (:mod:`~havln_robot.ros.motion_client`) and the
ROS backend of ``havln-robot replay`` (:mod:`~havln_robot.ros.replay`).

Layering: core (actions, geometry, records, params) <- subsystems (motion, sim, perception, policy,
trials, challenge; no rclpy) <- harnesses (agent, eval) <- ROS layer (this package, nodes, bringup)
<- apps (cli, demo, bench).
"""
