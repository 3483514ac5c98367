"""Motion: the closed-loop action executor that turns the six HA-VLN action literals into
``cmd_vel`` on odometry + IMU feedback, with IMU/odometry consistency checks (slip / stall),
collision avoidance (depth free space, personal space, IMU jolt) and the paper's revert.

Pure Python (numpy only); the ROS shell is :mod:`havln_robot.nodes.motion_node`.
"""
