"""Trials: the SQLite trial store, campaign plans, metrics, reports and MCAP recording.

Pure Python except :mod:`havln_robot.trials.recorder`, which serialises ROS messages with rclpy
(imported on first use). See docs/trials.md.
"""
