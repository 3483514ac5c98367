"""The agent: episode loop (:mod:`.core`) and builtin baseline policies (:mod:`.baselines`).

Pure Python (no rclpy); agent_node (``havln_robot.nodes.agent_node``) is its ROS shell.
"""
