"""Panorama by rotation: the pure planner / capture state machine (no ROS, no camera).

The robot turns in place through ``N`` headings using the discrete TURN actions that
motion_node executes (15° each, :data:`havln_robot.actions.TURN_ANGLE_DEG`), takes one RGB-D view
at each heading and ends at the start heading. The default ``N = 12`` views 30° apart (two TURN
actions per view, 24 TURN actions per panorama) matches the 12 x 30° panoramas of the panoramic
VLN-CE / HA-VLN-CE setups.

Closed loop on the measured heading: every TURN result reports the yaw actually achieved
(``yaw_imu_deg`` from the gyro, else ``yaw_odom_deg``, see :data:`havln_robot.topics.ACTION_RESULT_KEYS`).
The machine accumulates it and

* takes view ``i`` once the measured heading is within ``tolerance_deg`` of its target ``i * 360/N``
  (turning further in the sweep direction while it is short; never reversing mid-sweep),
* records for every view the measured (IMU-verified) heading, not the nominal one,
* after the last view turns back to the start heading (360°), correcting an over- or undershoot
  by up to ``max_corrections`` extra turns in total.

Use::

    cap = PanoramaCapture(views=12)
    while (step := cap.next_step()).kind != "done":
        if step.kind == "capture":
            cap.add_view(grab_rgbd())
        else:
            cap.add_turn(TurnResult.from_values(step.action, send_and_wait(step.action)))
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from havln_robot.actions import TURN_ANGLE_DEG, TURN_LEFT, TURN_RIGHT
from havln_robot.records import Outcome, is_blocked_outcome

HEADING_SOURCES: tuple[str, ...] = ("imu", "odom")
"""Measured-yaw sources of a TURN result, see :meth:`TurnResult.from_values`."""


class PanoramaError(ValueError):
    """Bad panorama configuration or call order; the message names the field and the fix."""


def valid_view_counts(turn_deg: float = TURN_ANGLE_DEG) -> tuple[int, ...]:
    """View counts whose spacing (360/N) is a whole number of TURN actions of ``turn_deg``."""
    per_rev = 360.0 / turn_deg
    n_turns = int(round(per_rev))
    if abs(per_rev - n_turns) > 1e-9:
        return ()
    return tuple(n for n in range(1, n_turns + 1) if n_turns % n == 0)


class ViewRing:
    """What the step-wise capture (:class:`PanoramaCapture`) and the continuous sweep
    (:class:`havln_robot.perception.sweep.SweepConfig`) share: ``views`` headings evenly spaced over
    360 deg, taken turning ``direction`` (``left`` = CCW, yaw increasing in base_link)."""

    views: int
    direction: str

    def _check_ring(self, what: str) -> None:
        """Raises PanoramaError naming ``what`` when ``views`` < 1 or ``direction`` is not left/right."""
        if self.views < 1:
            raise PanoramaError(f"{what} views={self.views}: must be >= 1")
        if self.direction not in ("left", "right"):
            raise PanoramaError(f"{what} direction={self.direction!r}: use 'left' or 'right'")

    @property
    def sign(self) -> float:
        """+1 for a left (CCW) sweep, -1 for a right sweep."""
        return 1.0 if self.direction == "left" else -1.0

    @property
    def spacing_deg(self) -> float:
        """Planned heading step between views, degrees (360 / views)."""
        return 360.0 / self.views


def _num(values: Mapping[str, Any], key: str) -> float | None:
    v = values.get(key)
    if v is None or v == "":
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


@dataclass(frozen=True)
class TurnResult:
    """The measured outcome of one TURN action.

    Attributes:
        action: ``TURN_LEFT`` or ``TURN_RIGHT``.
        outcome: motion_node outcome (``ok``, ``timeout``, ``stall``, ...).
        yaw_deg: achieved yaw change, degrees, counter-clockwise positive (REP 103).
        source: where ``yaw_deg`` came from: ``imu`` (gyro-integrated), ``odom`` or ``nominal``
            (no measurement in the result; ±15° assumed for an ``ok`` outcome, 0 otherwise).
    """

    action: str
    outcome: str
    yaw_deg: float
    source: str

    @classmethod
    def from_values(cls, action: str, values: Mapping[str, Any], outcome: str | None = None, prefer: str = "imu") -> TurnResult:
        """Build from an ``havln/action_result`` record (keys of :data:`havln_robot.topics.ACTION_RESULT_KEYS`).

        Args:
            action: the TURN action sent.
            values: the result record (strings or numbers).
            outcome: motion_node outcome (default ``values["outcome"]``).
            prefer: ``imu`` (gyro first: immune to foot slip, which corrupts leg odometry) or
                ``odom`` (odometry first); the other is the fallback.

        Raises:
            PanoramaError: ``action`` is not a TURN action or ``prefer`` is unknown.
        """
        if action not in (TURN_LEFT, TURN_RIGHT):
            raise PanoramaError(f"panorama turns are TURN_LEFT/TURN_RIGHT, got {action!r}")
        if prefer not in HEADING_SOURCES:
            raise PanoramaError(f"heading source {prefer!r}: use one of {', '.join(HEADING_SOURCES)}")
        out = str(outcome if outcome is not None else values.get("outcome", "ok"))
        order = (("yaw_imu_deg", "imu"), ("yaw_odom_deg", "odom"))
        for key, src in order if prefer == "imu" else order[::-1]:
            v = _num(values, key)
            if v is not None:
                return cls(action, out, v, src)
        nominal = TURN_ANGLE_DEG if action == TURN_LEFT else -TURN_ANGLE_DEG
        return cls(action, out, nominal if out == Outcome.OK else 0.0, "nominal")


@dataclass
class PanoramaView:
    """One captured view.

    Attributes:
        index: view number 0..N-1 (sweep order).
        target_deg: planned heading relative to the start, degrees (CCW+).
        heading_deg: measured heading relative to the start when the view was taken, degrees (CCW+).
        source: ``imu`` / ``odom`` / ``nominal`` -- the weakest source among the turns before it.
        data: whatever the caller captured (e.g. the preprocessed RGB-D pair).
        t: capture time, s (the machine's clock).
    """

    index: int
    target_deg: float
    heading_deg: float
    source: str
    data: Any = None
    t: float = 0.0


@dataclass(frozen=True)
class Step:
    """The next thing to do: ``kind`` is ``capture`` (take view ``index``), ``turn`` (send ``action``) or ``done``."""

    kind: str
    action: str | None = None
    index: int | None = None


_SOURCE_RANK = {"imu": 0, "odom": 1, "nominal": 2}


@dataclass
class PanoramaCapture(ViewRing):
    """State machine of one panorama (see the module docstring).

    Args:
        views: number of views ``N``; 360/N must be a whole number of ``turn_deg`` turns
            (15° turns: 1, 2, 3, 4, 6, 8, 12, 24).
        direction: ``left`` (CCW, headings increase) or ``right``.
        turn_deg: yaw of one TURN action, degrees (VLN-CE TURN_ANGLE 15).
        tolerance_deg: a view is taken when the measured heading is within this of the target, degrees.
        max_corrections: extra turns allowed beyond the nominal ``360 / turn_deg``.
        clock: monotonic time source, s (for :attr:`duration_s`).

    Raises:
        PanoramaError: invalid ``views``, ``direction`` or tolerances.
    """

    views: int = 12
    direction: str = "left"
    turn_deg: float = TURN_ANGLE_DEG
    tolerance_deg: float = TURN_ANGLE_DEG / 2.0
    max_corrections: int = 4
    clock: Callable[[], float] = time.monotonic
    captured: list[PanoramaView] = field(default_factory=list, init=False)
    turns: list[TurnResult] = field(default_factory=list, init=False)
    heading_deg: float = field(default=0.0, init=False)
    t_start: float | None = field(default=None, init=False)
    t_views_done: float | None = field(default=None, init=False)
    t_end: float | None = field(default=None, init=False)
    blocked_turns: int = field(default=0, init=False)
    _worst_source: str = field(default="imu", init=False)
    _done: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self._check_ring("panorama")
        allowed = valid_view_counts(self.turn_deg)
        if self.views not in allowed:
            raise PanoramaError(
                f"panorama views={self.views}: 360/views must be a multiple of the {self.turn_deg:g}° turn; use one of {allowed}"
            )
        if not (0.0 < self.tolerance_deg < 360.0 / self.views) and self.views > 1:
            raise PanoramaError(f"heading tolerance {self.tolerance_deg}° must be in (0, {360.0 / self.views:g})°")
        if self.max_corrections < 0:
            raise PanoramaError(f"max_corrections must be >= 0, got {self.max_corrections}")

    # --- derived quantities -----------------------------------------------------------------
    @property
    def nominal_turns(self) -> int:
        """TURN actions of a perfect panorama (views back to the start): 360 / turn_deg (24 for 15°)."""
        return 0 if self.views == 1 else int(round(360.0 / self.turn_deg))

    @property
    def turn_budget(self) -> int:
        """Most TURN actions this panorama may send, not counting turns blocked by an obstacle (outcome collision)."""
        return 0 if self.views == 1 else self.nominal_turns + self.max_corrections

    @property
    def views_complete(self) -> bool:
        """All N views are captured (inference may start; the return turns may still be running)."""
        return len(self.captured) == self.views

    @property
    def done(self) -> bool:
        return self._done

    @property
    def final_error_deg(self) -> float:
        """Measured heading minus the start heading, wrapped to [-180, 180), degrees."""
        return (self.heading_deg + 180.0) % 360.0 - 180.0

    @property
    def duration_s(self) -> float:
        """Seconds from the first step to done (or to now while running)."""
        if self.t_start is None:
            return 0.0
        return (self.t_end if self.t_end is not None else self.clock()) - self.t_start

    # --- the machine --------------------------------------------------------------------------
    def next_step(self) -> Step:
        """What to do next: capture a view, send a TURN, or done. Idempotent until the next add_*."""
        if self.t_start is None:
            self.t_start = self.clock()
        if self._done:
            return Step("done")
        progress = self.sign * self.heading_deg  # degrees swept in the sweep direction
        turns_left = self.turn_budget - (len(self.turns) - self.blocked_turns)
        fwd = TURN_LEFT if self.sign > 0 else TURN_RIGHT
        back = TURN_RIGHT if self.sign > 0 else TURN_LEFT
        if not self.views_complete:
            i = len(self.captured)
            err = i * self.spacing_deg - progress
            if err > self.tolerance_deg and turns_left > 0:
                return Step("turn", action=fwd)
            return Step("capture", index=i)
        err = (360.0 if self.views > 1 else 0.0) - progress
        if err > self.tolerance_deg and turns_left > 0:
            return Step("turn", action=fwd)
        if err < -self.tolerance_deg and turns_left > 0:
            return Step("turn", action=back)
        self._done = True
        self.t_end = self.clock()
        return Step("done")

    def add_view(self, data: Any = None) -> PanoramaView:
        """Record the view the last :meth:`next_step` asked for, at the current measured heading.

        Raises:
            PanoramaError: the machine did not ask for a capture.
        """
        if self._done or self.views_complete:
            raise PanoramaError("add_view: all views are already captured; call next_step()")
        i = len(self.captured)
        view = PanoramaView(i, self.sign * i * self.spacing_deg, self.heading_deg, self._worst_source, data, self.clock())
        self.captured.append(view)
        if self.views_complete:
            self.t_views_done = self.clock()
        return view

    def add_turn(self, result: TurnResult) -> None:
        """Accumulate the measured yaw of a TURN that was sent.

        A blocked turn (outcome ``collision`` or ``stall``, :data:`~havln_robot.records.BLOCKED_OUTCOMES`:
        refused or stopped because an obstacle or a person was in the way) still adds the yaw it made, but does not use up :attr:`turn_budget`: the caller
        retries it after a pause and bounds how long it waits (agent ``max_consecutive_blocked``).

        Raises:
            PanoramaError: the panorama is done.
        """
        if self._done:
            raise PanoramaError("add_turn: the panorama is already done")
        self.turns.append(result)
        if is_blocked_outcome(result.outcome):
            self.blocked_turns += 1
        self.heading_deg += result.yaw_deg
        if _SOURCE_RANK.get(result.source, 3) > _SOURCE_RANK.get(self._worst_source, 3):
            self._worst_source = result.source

    def headings_rad(self, reference_deg: float | None = None) -> np.ndarray:
        """Measured view headings relative to a body heading, rad, float32 (N,), wrapped to [-pi, pi).

        Args:
            reference_deg: the body heading (relative to the start, degrees) the headings are
                expressed against; default the current measured heading (after the return turns,
                i.e. the heading at which the next action is executed).
        """
        ref = self.heading_deg if reference_deg is None else reference_deg
        rel = np.radians(np.array([v.heading_deg - ref for v in self.captured], dtype=np.float64))
        return ((rel + np.pi) % (2 * np.pi) - np.pi).astype(np.float32)

    def summary(self) -> dict[str, Any]:
        """Plain record for logs: views, turns, corrections, final error, duration, heading sources."""
        return {
            "mode": "discrete",
            "views": len(self.captured),
            "turns": len(self.turns),
            "blocked_turns": self.blocked_turns,
            "corrections": max(0, len(self.turns) - self.blocked_turns - self.nominal_turns),
            "final_error_deg": round(self.final_error_deg, 3),
            "duration_s": round(self.duration_s, 3),
            "headings_deg": [round(v.heading_deg, 2) for v in self.captured],
            "sources": sorted({v.source for v in self.captured}),
        }
