"""Spin a ROS executor until a condition holds: the one loop the node tests share."""

from __future__ import annotations

import time
from collections.abc import Callable


def spin_until(ex, cond: Callable[[], bool], timeout: float = 10.0, step: float = 0.02) -> bool:
    """Spin ``ex`` (an rclpy executor) in ``step``-second slices until ``cond()`` is true.

    Returns:
        True once ``cond()`` holds; False when ``timeout`` seconds (wall clock) pass first.
    """
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ex.spin_once(timeout_sec=step)
        if cond():
            return True
    return False
