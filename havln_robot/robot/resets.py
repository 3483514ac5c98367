"""Detection of a Go2 reboot or odometry reset from its sportmodestate stream (pure Python).

A Go2 that reboots (or whose sport service restarts) comes back with its odometry at the origin.
Joining the path across that jump adds a phantom segment to the trial's path length, and the
actions after it would be measured from a new origin without anyone knowing. Three signs, each
enough on its own:

* **jump to the origin**: the position lands within ``origin_m`` of (0, 0) from more than
  ``min_jump_m`` away, farther than the robot can walk in the time between the samples
  (``max_speed_mps`` x dt + ``min_jump_m``);
* **the state's counters start over**: ``SportModeState_.stamp`` (the robot's clock) goes back by
  more than ``stamp_back_s``;
* **an SDK reconnect**: the stream was silent for longer than ``silence_s`` (the state watchdog's
  limit) and the position came back at the origin (from more than ``min_jump_m`` away), or
  elsewhere than it left, farther than walking allows.

:class:`ResetDetector` returns the reason (one line) for the first sample of a reset, else None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class ResetDetector:
    """Odometry reset detector over (time, position, robot stamp) samples.

    Args:
        max_speed_mps: the fastest the robot can walk (m/s; the Go2's forward limit, hardware.py).
        min_jump_m: a displacement above walking by more than this counts as a jump (m).
        origin_m: "at the origin" radius (m).
        stamp_back_s: the robot clock going back by more than this is a restart (s).
        silence_s: a stream gap longer than this, followed by a jump, is a reconnect (s).
    """

    max_speed_mps: float = 3.8
    min_jump_m: float = 0.2
    origin_m: float = 0.05
    stamp_back_s: float = 1.0
    silence_s: float = 0.5
    _last: tuple[float, float, float, float | None] | None = field(default=None, repr=False)

    def update(self, t: float, x: float, y: float, stamp_s: float | None = None) -> str | None:
        """Feed one sample: ``t`` monotonic time (s), ``x``, ``y`` odometry position (m), ``stamp_s``
        the robot's own stamp (s) or None. Returns the reason of a reset starting at this sample, else None.
        Non-finite positions are ignored (the driver does not publish them)."""
        if not (math.isfinite(x) and math.isfinite(y)):
            return None
        last, self._last = self._last, (t, x, y, stamp_s)
        if last is None:
            return None
        t0, x0, y0, s0 = last
        dt = max(0.0, t - t0)
        step = math.hypot(x - x0, y - y0)
        walkable = self.max_speed_mps * dt + self.min_jump_m
        if s0 is not None and stamp_s is not None and stamp_s < s0 - self.stamp_back_s:
            return f"robot reset: sportmodestate stamp went back {s0 - stamp_s:.1f} s (robot rebooted)"
        if step > walkable and math.hypot(x, y) <= self.origin_m and math.hypot(x0, y0) > self.min_jump_m:
            return f"robot reset: odometry jumped to the origin from ({x0:.2f}, {y0:.2f}) m in {dt:.2f} s"
        if dt > self.silence_s and math.hypot(x, y) <= self.origin_m and math.hypot(x0, y0) > self.min_jump_m:
            return f"robot reset: state back after {dt:.1f} s of silence with odometry at the origin, from ({x0:.2f}, {y0:.2f}) m (reboot / SDK reconnect)"
        if dt > self.silence_s and step > walkable:
            return f"robot reset: odometry moved {step:.2f} m during {dt:.1f} s without state (SDK reconnect)"
        return None
