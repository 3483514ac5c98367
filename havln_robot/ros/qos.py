"""QoS of havln_robot's subscriptions and publications, and a drop counter for best-effort ones.

Sensor data (depth, colour, camera_info, odom, imu, people) is subscribed with the ROS sensor-data
profile -- BEST_EFFORT, KEEP_LAST, VOLATILE -- because realsense-ros and many drivers publish it
BEST_EFFORT, and a RELIABLE subscription does not match a BEST_EFFORT publisher (it receives
nothing). A BEST_EFFORT subscription matches both kinds of publisher. Commands and records
(``havln/action``, ``cmd_vel``, results, collisions, instructions, status) stay RELIABLE.

A best-effort subscription may lose messages under load. Where that matters (the trial logger's
odom / imu / people records), :class:`DropCounter` counts what was lost: the DDS message-lost event
where the RMW reports it, and gaps in the publisher's sequence numbers (``MessageInfo``), per topic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def sensor_qos(depth: int = 5) -> QoSProfile:
    """The sensor-data profile (best effort, keep last ``depth``, volatile): matches reliable and best-effort publishers."""
    return QoSProfile(
        depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST, durability=DurabilityPolicy.VOLATILE
    )


class DropCounter:
    """Messages lost on best-effort subscriptions, per topic.

    Use :meth:`callback` to wrap a subscription callback (it then receives the MessageInfo) and
    :meth:`events` for the subscription's ``event_callbacks``.

    Attributes:
        lost: topic -> messages lost (sequence gaps of one publisher, or the RMW's message-lost
            count when that is larger).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_seq: dict[str, int] = {}
        self._gaps: dict[str, int] = {}
        self._events: dict[str, int] = {}

    def see(self, topic: str, info: Any) -> None:
        """Account for one received message (``info``: rclpy MessageInfo dict)."""
        seq = info.get("publication_sequence_number") if isinstance(info, dict) else None
        if not seq:
            return
        with self._lock:
            last = self._last_seq.get(topic)
            if last is not None and seq > last + 1:
                self._gaps[topic] = self._gaps.get(topic, 0) + (seq - last - 1)
            if last is None or seq > last:
                self._last_seq[topic] = seq
            elif seq < last:  # another publisher, or the publisher restarted: start counting again
                self._last_seq[topic] = seq

    def lost_event(self, topic: str, total_count_change: int) -> None:
        """The RMW reported ``total_count_change`` more messages lost on ``topic``."""
        with self._lock:
            self._events[topic] = self._events.get(topic, 0) + int(total_count_change)

    @property
    def lost(self) -> dict[str, int]:
        with self._lock:
            topics = set(self._gaps) | set(self._events)
            return {t: max(self._gaps.get(t, 0), self._events.get(t, 0)) for t in sorted(topics)}

    def callback(self, topic: str, cb: Callable[[Any], None]) -> Callable[[Any, Any], None]:
        """``cb(msg)`` wrapped to count drops from each message's MessageInfo."""

        def wrapped(msg: Any, info: Any) -> None:
            self.see(topic, info)
            cb(msg)

        return wrapped

    def events(self, topic: str) -> SubscriptionEventCallbacks:
        """Event callbacks that count the RMW's message-lost reports for ``topic``."""
        return SubscriptionEventCallbacks(message_lost=lambda st: self.lost_event(topic, st.total_count_change))
