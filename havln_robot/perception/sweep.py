"""Continuous-sweep panorama: choose one camera frame per view heading (pure; no ROS, no camera).

The robot turns once through 360° at a constant yaw rate (the ``SWEEP_LEFT`` / ``SWEEP_RIGHT``
primitive of :data:`havln_robot.actions.PRIMITIVE_TABLE`, executed by motion_node) while the
camera streams. For each of the ``N`` view headings ``i * 360/N`` (relative to the start heading)
this module picks the frame whose heading -- the IMU yaw *interpolated at the frame's own
timestamp*, never its receive time -- is nearest, and rejects every frame further than
``tolerance_deg`` from its heading: a view without an acceptable frame is *missing* and the caller
retakes it (see :class:`SweepPanorama`).

Time and frames
---------------
* The frame instant is ``header stamp + time_offset_s``: ``time_offset_s`` compensates a camera
  whose stamp is not the middle of its exposure (e.g. ``-latency`` when a driver stamps at
  receipt, ``+exposure/2`` when it stamps at the start of the exposure). The embedded simulator
  stamps each RGB-D pair with the sim time of the pose it rendered, so its offset is 0.
* Headings are IMU yaw (``sensor_msgs/Imu`` orientation, gyro-integrated; REP 103, CCW +),
  unwrapped, relative to the yaw at the start of the sweep, minus a linear gyro drift
  (``drift_rate`` rad/s): raw gyro yaw drifts by its bias; motion_node removes the bias (learnt at
  standstill) from the yaw it reports, so after a sweep the drift is
  ``(raw yaw change - reported yaw change) / duration`` (:meth:`YawTrack.drift_against`).
* Depth and colour stay a pair: the caller offers synchronised (colour, depth) pairs as one
  ``data`` object; selection never mixes frames.

Use::

    sel = SweepSelector(SweepConfig(views=12), track)
    ... while turning: track.add(imu_stamp, imu_yaw); sel.offer(frame_stamp, (rgb, depth)) ...
    views = sel.select(drift_rate)        # list of SelectedFrame | None, index = view
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from havln_robot.perception.panorama import PanoramaError, PanoramaView, ViewRing

VIEW_TOLERANCE_DEG: float = 1.0
"""A sweep view is used only within this of its nominal heading, deg (±1.0°)."""


def _wrap_deg(a: float) -> float:
    return (a + 180.0) % 360.0 - 180.0


@dataclass
class YawTrack:
    """Timestamped IMU yaw samples, unwrapped (stamps s on the sensor clock, yaw rad, CCW +).

    Args:
        max_gap_s: interpolation across a gap longer than this (lost IMU messages) is refused, s.
    """

    max_gap_s: float = 0.1
    t: list[float] = field(default_factory=list)
    yaw: list[float] = field(default_factory=list)

    def add(self, stamp: float, yaw_rad: float) -> None:
        """Append a sample (``yaw_rad`` wrapped or not; it is unwrapped against the previous one).
        Samples not newer than the last are ignored (duplicates, reordering)."""
        if not (math.isfinite(stamp) and math.isfinite(yaw_rad)):
            return
        if self.t and stamp <= self.t[-1]:
            return
        if self.yaw:
            prev = self.yaw[-1]
            yaw_rad = prev + math.remainder(yaw_rad - prev, 2.0 * math.pi)
        self.t.append(stamp)
        self.yaw.append(yaw_rad)

    def at(self, stamp: float) -> float | None:
        """Yaw at ``stamp`` linearly interpolated between the samples around it, rad; None outside
        the samples or across a gap longer than ``max_gap_s``."""
        if not self.t or stamp < self.t[0] or stamp > self.t[-1]:
            return None
        k = bisect.bisect_left(self.t, stamp)
        if self.t[k] == stamp:
            return self.yaw[k]
        t0, t1 = self.t[k - 1], self.t[k]
        if t1 - t0 > self.max_gap_s:
            return None
        w = (stamp - t0) / (t1 - t0)
        return self.yaw[k - 1] + w * (self.yaw[k] - self.yaw[k - 1])

    def drift_against(self, t0: float, t1: float, measured_rad: float) -> float:
        """Drift rate (rad/s) of this raw yaw over ``[t0, t1]`` against a bias-corrected measurement
        ``measured_rad`` of the same rotation (motion_node's ``yaw_imu_deg``); 0 when unknown."""
        a, b = self.at(t0), self.at(t1)
        if a is None or b is None or t1 - t0 <= 0 or not math.isfinite(measured_rad):
            return 0.0
        return ((b - a) - measured_rad) / (t1 - t0)


@dataclass(frozen=True)
class SweepConfig(ViewRing):
    """Frame selection settings.

    Attributes:
        views: view headings ``N`` (12: 30° apart, the HA-VLN-CE panorama).
        direction: ``left`` (CCW) or ``right``.
        tolerance_deg: largest |heading error| of a used frame, deg.
        time_offset_s: added to a frame stamp to get its mid-exposure instant, s (latency compensation).
        keep_per_view: candidate frames kept per view while turning (memory: a 640x480 pair is ~1.5 MB).
    """

    views: int = 12
    direction: str = "left"
    tolerance_deg: float = VIEW_TOLERANCE_DEG
    time_offset_s: float = 0.0
    keep_per_view: int = 3

    def __post_init__(self) -> None:
        self._check_ring("sweep")
        if not 0.0 < self.tolerance_deg < 180.0 / self.views:
            raise PanoramaError(f"sweep tolerance {self.tolerance_deg}° must be in (0, {180.0 / self.views:g})°")


@dataclass(frozen=True)
class SelectedFrame:
    """The frame chosen for one view.

    Attributes:
        index: view 0..N-1. target_deg: nominal heading (signed, sweep direction), deg.
        heading_deg: heading of the frame at its instant (relative to the sweep start, drift
            removed, signed), deg; within ``tolerance_deg`` of ``target_deg`` (mod 360).
        stamp: frame stamp, s. data: the caller's (colour, depth) pair.
    """

    index: int
    target_deg: float
    heading_deg: float
    stamp: float
    data: Any

    @property
    def error_deg(self) -> float:
        return _wrap_deg(self.heading_deg - self.target_deg)


class SweepSelector:
    """Keeps the best candidate frames per view while the robot sweeps; picks one per view at the end.

    Args:
        config: :class:`SweepConfig`.
        track: the IMU yaw track (the caller adds samples; shared with this selector).
        t_start: stamp at which the sweep starts (the robot still stands), s; frames before it are ignored.
        drift_rate: prior gyro drift estimate used while turning, rad/s (see :meth:`YawTrack.drift_against`).
    """

    def __init__(self, config: SweepConfig, track: YawTrack, t_start: float, drift_rate: float = 0.0) -> None:
        self.cfg = config
        self.track = track
        self.t_start = t_start
        self.drift_rate = drift_rate
        self._yaw0: float | None = None
        self._cands: list[list[tuple[float, Any]]] = [[] for _ in range(config.views)]  # (stamp, data)
        self._pending: list[tuple[float, Any]] = []  # frames whose instant is past the newest IMU sample
        self.offered = 0
        self.rejected = 0  # frames too far from every heading (never used)
        self.newest_deg = -math.inf  # heading of the newest placed frame, deg (signed sweep progress)

    # --- headings -----------------------------------------------------------------------------
    def yaw0(self) -> float | None:
        """Raw IMU yaw at ``t_start`` (None until a sample covers it), rad."""
        if self._yaw0 is None:
            self._yaw0 = self.track.at(self.t_start)
        return self._yaw0

    def heading_deg(self, stamp: float, drift_rate: float | None = None) -> float | None:
        """Signed heading swept at the frame instant of ``stamp`` (relative to the start, drift
        removed), deg; None when the IMU track does not cover the instant yet."""
        y0 = self.yaw0()
        t = stamp + self.cfg.time_offset_s
        y = self.track.at(t)
        if y0 is None or y is None:
            return None
        drift = self.drift_rate if drift_rate is None else drift_rate
        return self.cfg.sign * math.degrees(y - y0 - drift * (t - self.t_start))

    def nearest_view(self, heading_deg: float) -> tuple[int, float]:
        """(view index, error deg) of the view heading nearest a signed swept heading."""
        sp = self.cfg.spacing_deg
        i = int(round(heading_deg / sp)) % self.cfg.views
        return i, _wrap_deg(heading_deg - i * sp)

    # --- frames -------------------------------------------------------------------------------
    def offer(self, stamp: float, data: Any) -> None:
        """A synchronised frame arrived (``stamp``: its header stamp, s). Kept as a candidate of its
        nearest view when within twice the tolerance (the final check uses the exact interpolation)."""
        if stamp + self.cfg.time_offset_s < self.t_start:
            return
        self.offered += 1
        self._pending.append((stamp, data))
        self._drain()

    def _drain(self) -> None:
        keep: list[tuple[float, Any]] = []
        for stamp, data in self._pending:
            h = self.heading_deg(stamp)
            if h is None:
                keep.append((stamp, data))
                continue
            self.newest_deg = max(self.newest_deg, h)
            i, err = self.nearest_view(h)
            if abs(err) > 2.0 * self.cfg.tolerance_deg:
                self.rejected += 1
                continue
            c = self._cands[i]
            c.append((stamp, data))
            c.sort(key=lambda sd: abs(self.nearest_view(self.heading_deg(sd[0]) or 0.0)[1]))
            del c[self.cfg.keep_per_view :]
        self._pending = keep[-64:]

    def views_passed(self) -> bool:
        """True once a placed frame lies past the last view heading by twice the tolerance: every view
        has all the candidates this sweep will give it (inference may start on :meth:`select`)."""
        return self.newest_deg >= (self.cfg.views - 1) * self.cfg.spacing_deg + 2.0 * self.cfg.tolerance_deg

    def select(self, drift_rate: float | None = None) -> list[SelectedFrame | None]:
        """One frame per view (index = view) or None where no frame is within tolerance (retake it).

        Args:
            drift_rate: gyro drift to remove, rad/s (default: the prior given at construction).
        """
        self._drain()
        out: list[SelectedFrame | None] = []
        for i, cands in enumerate(self._cands):
            best: SelectedFrame | None = None
            for stamp, data in cands:
                h = self.heading_deg(stamp, drift_rate)
                if h is None:
                    continue
                j, err = self.nearest_view(h)
                if j != i or abs(err) > self.cfg.tolerance_deg:
                    continue
                if best is None or abs(err) < abs(best.error_deg):
                    target = self.cfg.sign * i * self.cfg.spacing_deg
                    best = SelectedFrame(i, target, self.cfg.sign * (i * self.cfg.spacing_deg + err), stamp, data)
            out.append(best)
        return out


@dataclass
class SweepPanorama:
    """The result of one sweep panorama, shaped like :class:`havln_robot.perception.panorama.PanoramaCapture`
    for the agent (``captured``, ``headings_rad``, ``summary``, ``duration_s``, ``final_error_deg``).

    Retake rule (the agent applies it, see ``havln_robot.agent.core``): a view without an acceptable
    frame (dropped frames, every frame too far from its heading) is retaken -- by a second sweep when
    turning to the missing views and back would take longer than the first sweep did (views near
    180°), else, and for what the second sweep still missed, standing still with discrete TURNs.
    A sweep stopped by a person or an obstacle: every view is retaken in discrete mode from where
    the robot stands. :attr:`retaken` counts the retaken views, :attr:`sweeps` the sweeps.

    Attributes:
        views: N. direction: ``left`` / ``right``.
        captured: the views, in index order once complete (:class:`PanoramaView`, ``source`` ``imu``
            for sweep frames, ``retake`` for retaken ones).
        heading_deg: measured heading at the end relative to the start (signed, 360 after a full sweep), deg.
        t_start, t_end: monotonic times, s. sweep_outcome: motion_node's outcome of the sweep.
        overlapped: inference started on the views while the robot was still turning.
        closure_deg: IMU closure against the aimed end heading (``-yaw_error_deg`` of the sweep's
            result plus the net yaw of retake turns), deg; None when the result had none.
    """

    views: int
    direction: str = "left"
    captured: list[PanoramaView] = field(default_factory=list)
    heading_deg: float = 0.0
    t_start: float = 0.0
    t_end: float = 0.0
    sweep_outcome: str = ""
    retaken: int = 0
    sweeps: int = 1
    turns: int = 0
    frames_offered: int = 0
    frames_rejected: int = 0
    drift_deg_s: float = 0.0
    overlapped: bool = False
    closure_deg: float | None = None

    @property
    def views_complete(self) -> bool:
        return len(self.captured) == self.views

    @property
    def duration_s(self) -> float:
        return max(0.0, self.t_end - self.t_start)

    @property
    def final_error_deg(self) -> float:
        """Closure: measured end heading minus the heading the sweep aimed to end at (the start heading,
        or the nominal heading of a chain, see docs/motion.md), deg; else the end heading minus the
        start heading, wrapped to [-180, 180)."""
        return self.closure_deg if self.closure_deg is not None else _wrap_deg(self.heading_deg)

    def headings_rad(self, reference_deg: float | None = None) -> np.ndarray:
        """View headings relative to ``reference_deg`` (default: the end heading), rad, float32 (N,), in [-pi, pi)."""
        ref = self.heading_deg if reference_deg is None else reference_deg
        rel = np.radians(np.array([v.heading_deg - ref for v in self.captured], dtype=np.float64))
        return ((rel + np.pi) % (2 * np.pi) - np.pi).astype(np.float32)

    def summary(self) -> dict[str, Any]:
        """Plain record for logs (the keys of PanoramaCapture.summary plus the sweep's own)."""
        return {
            "mode": "sweep",
            "views": len(self.captured),
            "turns": self.turns,
            "blocked_turns": 0,
            "corrections": 0,
            "retaken": self.retaken,
            "sweeps": self.sweeps,
            "sweep_outcome": self.sweep_outcome,
            "final_error_deg": round(self.final_error_deg, 3),
            "duration_s": round(self.duration_s, 3),
            "headings_deg": [round(v.heading_deg, 2) for v in self.captured],
            "view_errors_deg": [round(_wrap_deg(v.heading_deg - v.target_deg), 3) for v in self.captured],
            "stamps": [round(v.t, 4) for v in self.captured],
            "frames_offered": self.frames_offered,
            "frames_rejected": self.frames_rejected,
            "drift_deg_s": round(self.drift_deg_s, 4),
            "overlapped": self.overlapped,
            "sources": sorted({v.source for v in self.captured}),
        }
