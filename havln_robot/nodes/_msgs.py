"""Former home of the message conversions; kept so existing imports work. Use :mod:`havln_robot.ros.codec`."""

from havln_robot.ros.codec import image_array, image_msg, status_dict, status_msg

__all__ = ["image_array", "image_msg", "status_dict", "status_msg"]
