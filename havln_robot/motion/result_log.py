"""The log line of each action result motion_node publishes (pure Python).

The literal and the detail come from a topic: both are bounded and made terminal-safe before they
reach a result or the log, and a publisher flooding ``havln/action`` with junk gets at most one
logged rejection per :data:`REJECT_LOG_PERIOD_S`.
"""

from __future__ import annotations

import math

from havln_robot import actions as A
from havln_robot.quoting import quote
from havln_robot.records import ActionResult, Outcome
from havln_robot.text import outcome_label, terminal_safe

#: An action literal longer than this is no action (the longest is 12 characters): it is cut to
#: this many characters (plus its length) before it is echoed in the result and the log.
ACTION_ECHO_CHARS = 64
#: Rejected / unknown actions are logged at most once per this many seconds; the next logged one
#: counts those left out.
REJECT_LOG_PERIOD_S = 1.0
#: Characters of a result's detail shown in the log line.
DETAIL_LOG_CHARS = 400


def bounded_literal(text: str) -> str:
    """An action literal as echoed in results and logs: at most :data:`ACTION_ECHO_CHARS` characters
    of it, then ``… (N chars)`` (a 2 MB string on havln/action is not copied into a result or a log line)."""
    if len(text) <= ACTION_ECHO_CHARS:
        return text
    return f"{text[:ACTION_ECHO_CHARS]}… ({len(text)} chars)"


class ResultLog:
    """Log lines of action results, rejected ones throttled to one per :data:`REJECT_LOG_PERIOD_S`."""

    def __init__(self) -> None:
        self._reject_t = -math.inf
        self._skipped = 0

    def line(self, r: ActionResult, t: float) -> tuple[bool, str] | None:
        """``(info, text)`` for result ``r`` at time ``t`` (s): info for ``ok`` (else a warning);
        None when a rejection is left out of the log."""
        name = r.action if A.is_motion(r.action) else quote(r.action, ACTION_ECHO_CHARS + 32)
        detail = f" - {r.detail[:DETAIL_LOG_CHARS]}{'…' if len(r.detail) > DETAIL_LOG_CHARS else ''}" if r.detail else ""
        text = terminal_safe(f"#{r.seq} {name}: {outcome_label(r.outcome, r.detail)} ({r.duration_s:.2f} s){detail}")
        if r.outcome == Outcome.REJECTED:
            if t - self._reject_t < REJECT_LOG_PERIOD_S:
                self._skipped += 1
                return None
            if self._skipped:
                text += f" ({self._skipped} more rejected actions not logged)"
            self._reject_t, self._skipped = t, 0
        return r.outcome == Outcome.OK, text
