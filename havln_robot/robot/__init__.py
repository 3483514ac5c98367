"""Unitree Go2 adapter: the go2_driver_node's functional core and its unitree_sdk2py wrapper.

* :mod:`havln_robot.robot.params` -- ``GO2_DRIVER_PARAMS`` (every tunable of go2_driver_node).
* :mod:`havln_robot.robot.adapter` -- pure core (no rclpy, no SDK): command clamping, the cmd_vel
  watchdog, the sportmodestate watchdog, BalanceStand-before-Move, e-stop latch, and conversion of
  ``rt/sportmodestate`` into odometry / IMU fields.
* :mod:`havln_robot.robot.go2` -- the thin unitree_sdk2py wrapper (``SportClient`` + state subscriber).
* :mod:`havln_robot.robot.fake_go2` -- a fake Go2 for tests and manual runs, built on the SDK's own
  ``Server("sport")`` and a ``rt/sportmodestate`` publisher.
"""
