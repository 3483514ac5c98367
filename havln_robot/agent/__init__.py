"""The agent harness: episode loop (:mod:`.core`) and agent_node's parameters (:mod:`.params`).

Policies, including those without a checkpoint, come from :mod:`havln_robot.policy.registry`.

Pure Python (no rclpy); agent_node (``havln_robot.nodes.agent_node``) is its ROS shell.
"""
