"""One motion client: send an action literal, wait for its result, resend when motion_node was busy.

The idea of Nav2's ``BasicNavigator`` on the havln topics (standard messages only): the action
goes out on ``havln/action`` (``std_msgs/String``) and the answer is the next
``havln/action_result`` (``diagnostic_msgs/DiagnosticStatus``, decoded by
:func:`havln_robot.ros.codec.decode_result`) for that literal that arrives after it was sent.
agent_node and the ROS replay backend use it; nothing else publishes actions and waits.

Two ways to wait, one client:

* the node is spun by another thread (a bringup executor): pass no ``spin``; :meth:`MotionClient.send`
  waits on a condition variable the subscription callback notifies;
* the caller spins the node itself (single-threaded tools): pass ``spin(timeout_s)``, which
  :meth:`MotionClient.send` calls while waiting.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from std_msgs.msg import String

from havln_robot import topics
from havln_robot.actions import STOP
from havln_robot.records import ActionResult, Outcome, RecordError
from havln_robot.ros.codec import decode_result

#: Results kept for matching (more than motion_node can answer between two sends).
_KEPT = 64


class MotionTimeout(RuntimeError):
    """No result for the action arrived within the timeout (message names the topic and action)."""


class MotionCancelled(RuntimeError):
    """``cancelled()`` became true while waiting (nothing was published in response)."""


class MotionClient:
    """Publishes actions and waits for their results.

    Args:
        node: an rclpy node (publisher and subscription are created on it).
        action_topic: ``std_msgs/String`` action literals out.
        result_topic: ``diagnostic_msgs/DiagnosticStatus`` results in.
        spin: ``spin(timeout_s)`` that spins the node's executor once; None when another thread spins it.
        clock: monotonic time source, s.
        on_result: called (from the subscription callback) with every decoded result.

    Thread safety: :meth:`send` may run on any thread; one send at a time.
    """

    def __init__(
        self,
        node: Any,
        action_topic: str = topics.ACTION,
        result_topic: str = topics.ACTION_RESULT,
        spin: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_result: Callable[[ActionResult], None] | None = None,
    ) -> None:
        self.node = node
        self.result_topic = result_topic
        self._spin = spin
        self._clock = clock
        self._on_result = on_result
        self._cond = threading.Condition()
        self._results: deque[tuple[int, ActionResult]] = deque(maxlen=_KEPT)
        self._count = 0
        self.published = 0  # actions published (lockstep counts them)
        self.pub = node.create_publisher(String, action_topic, 10)
        self.sub = node.create_subscription(DiagnosticStatus, result_topic, self._on_msg, 50)

    # --- inputs -------------------------------------------------------------------------------------
    def _on_msg(self, msg: DiagnosticStatus) -> None:
        try:
            r = decode_result(msg)
        except RecordError as exc:
            self.node.get_logger().warning(f"{self.result_topic}: ignored: {exc}", throttle_duration_sec=5.0)
            return
        with self._cond:
            self._count += 1
            self._results.append((self._count, r))
            self._cond.notify_all()
        if self._on_result is not None:
            self._on_result(r)

    # --- waiting ------------------------------------------------------------------------------------
    def _wait(self, predicate: Callable[[], Any], timeout_s: float, cancelled: Callable[[], bool] | None) -> Any:
        """predicate()'s first non-None value; None at the timeout. Raises MotionCancelled."""
        deadline = self._clock() + timeout_s
        while True:
            with self._cond:
                got = predicate()
            if got is not None:
                return got
            if cancelled is not None and cancelled():
                raise MotionCancelled("cancelled")
            left = deadline - self._clock()
            if left <= 0:
                return None
            if self._spin is not None:
                self._spin(min(left, 0.02))
            else:
                with self._cond:
                    self._cond.wait(min(left, 0.05))

    def pause(self, seconds: float, cancelled: Callable[[], bool] | None = None) -> None:
        """Wait ``seconds`` (spinning when this client spins). Raises MotionCancelled."""
        self._wait(lambda: None, seconds, cancelled)

    # --- sending ------------------------------------------------------------------------------------
    def publish(self, action: str) -> None:
        """Publish one action literal without waiting."""
        self.published += 1
        self.pub.publish(String(data=action))

    @property
    def received(self) -> int:
        """Results received so far."""
        with self._cond:
            return self._count

    def result_since(self, after: int, action: str) -> tuple[int, ActionResult | None]:
        """``(max seq of the results received, the first result for action after the after-th)``."""
        with self._cond:
            top = max((r.seq for _, r in self._results), default=0)
            for n, r in self._results:
                if n > after and r.action in (action, ""):
                    return top, r
            return top, None

    def stop(self) -> None:
        """Publish STOP (motion_node aborts any running action and holds zero velocity); no wait."""
        self.publish(STOP)

    def send(
        self,
        action: str,
        timeout_s: float,
        retries: int = 0,
        retry_wait_s: float = 0.5,
        cancelled: Callable[[], bool] | None = None,
    ) -> ActionResult:
        """Publish ``action`` and wait for its result; resend up to ``retries`` times while it is
        ``rejected`` (motion_node busy), ``retry_wait_s`` apart.

        Args:
            action: an action literal.
            timeout_s: wait per attempt, s.
            retries: resends after a ``rejected`` result (>= 0).
            retry_wait_s: pause before a resend, s.
            cancelled: checked while waiting; True raises :class:`MotionCancelled`.

        Returns:
            The result (still ``rejected`` when every attempt was).

        Raises:
            MotionTimeout: no result within ``timeout_s``.
            MotionCancelled: ``cancelled()`` became true.
        """
        for attempt in range(max(0, retries) + 1):
            with self._cond:
                after = self._count
            self.publish(action)

            def match(after: int = after) -> ActionResult | None:
                for n, r in self._results:
                    if n > after and r.action in (action, ""):
                        return r
                return None

            r = self._wait(match, timeout_s, cancelled)
            if r is None:
                raise MotionTimeout(f"no {self.result_topic} for {action} within {timeout_s:g} s (is motion_node running?)")
            if r.outcome != Outcome.REJECTED or attempt == retries:
                return r
            self.pause(retry_wait_s, cancelled)
        raise AssertionError("unreachable")

    def destroy(self) -> None:
        """Remove the publisher and subscription from the node."""
        self.node.destroy_subscription(self.sub)
        self.node.destroy_publisher(self.pub)
