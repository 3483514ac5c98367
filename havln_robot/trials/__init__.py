"""Trials: the SQLite trial store, campaign plans, metrics, reports and MCAP recording.

Pure Python, no rclpy: the MCAP recorder gets its ROS message serialiser injected
(:mod:`havln_robot.ros.mcap`); trial_logger_node wires :mod:`havln_robot.trials.session` to the
topics. See docs/trials.md.
"""
