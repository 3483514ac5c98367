"""havln_robot: run a trained HA-VLN 2.0 policy on a Unitree Go2 with ROS 2.

See README.md for the node graph and ../shared/DESIGN.md for the target shape.
"""

__version__ = "0.1.0"
