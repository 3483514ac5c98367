"""RealSense D435i capture for camera_node: pyrealsense2 pipeline, depth aligned to colour,
camera_info from the device intrinsics, and a recovery machine that never gives up.

No ROS import. Pieces:

* :class:`Recovery` -- pure state machine: a frame timeout is retried ``retries_before_reset``
  times, then the device is hardware-reset once, then the stream is restarted with exponential
  backoff (``backoff_initial_s`` doubling up to ``backoff_max_s``) forever; a frame resets it all.
* :class:`PipelineSource` -- the real device through ``rs.pipeline`` (colour rgb8 + depth z16).
* :class:`SoftwareCamera` -- a librealsense ``software_device`` with colour and depth sensors fed
  from numpy arrays; frames go through the real librealsense syncer and ``rs.align`` (tests,
  replays of recorded data).
* :class:`RealSenseCamera` -- runs a source under :class:`Recovery`: each :meth:`RealSenseCamera.read`
  returns one aligned :class:`CameraFrame` (depth in millimetres) or ``None``.

Units and conventions: depth ``uint16`` millimetres (realsense-ros ``aligned_depth_to_color``,
16UC1), converted from the device's depth units (``rs.depth_frame.get_units()``, metres per unit;
D435i default 0.001). Intrinsics are those of the colour stream (depth is aligned to it); the
librealsense Brown-Conrady family maps to ROS ``plumb_bob`` with ``D = [k1, k2, p1, p2, k3]``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyrealsense2 as rs

from havln_robot.perception.preprocess import Intrinsics

# --- frames and camera_info ------------------------------------------------------------------------


@dataclass
class CameraFrame:
    """One aligned RGB-D frame.

    Attributes:
        rgb: (H, W, 3) uint8 RGB.
        depth_mm: (H, W) uint16 depth aligned to the colour image, millimetres (0 = no data).
        intrinsics: colour pinhole intrinsics (px).
        distortion_model: ROS distortion model name (``plumb_bob`` / ``equidistant``).
        d: distortion coefficients (ROS order).
        timestamp_ms: device timestamp of the colour frame, ms.
        frame_number: colour frame counter.
        depth_units_m: metres per raw depth unit of the device.
    """

    rgb: np.ndarray
    depth_mm: np.ndarray
    intrinsics: Intrinsics
    distortion_model: str
    d: list[float]
    timestamp_ms: float = 0.0
    frame_number: int = 0
    depth_units_m: float = 0.001


def distortion_fields(model: Any, coeffs: list[float]) -> tuple[str, list[float]]:
    """ROS ``(distortion_model, D)`` for a librealsense distortion model and its 5 coefficients.

    Brown-Conrady variants (incl. ``none``) → ``plumb_bob`` [k1, k2, p1, p2, k3] (same order in both
    APIs); Kannala-Brandt → ``equidistant`` [k1, k2, k3, k4].
    """
    c = [float(x) for x in list(coeffs)[:5]] + [0.0] * max(0, 5 - len(list(coeffs)))
    if model == rs.distortion.kannala_brandt4:
        return "equidistant", c[:4]
    return "plumb_bob", c


def camera_info_fields(frame: CameraFrame) -> dict[str, Any]:
    """The sensor_msgs/CameraInfo fields of a frame: width, height, distortion_model, d, k (3x3),
    r (identity), p (3x4, no baseline), all row-major lists of floats."""
    i = frame.intrinsics
    return {
        "width": i.width,
        "height": i.height,
        "distortion_model": frame.distortion_model,
        "d": list(frame.d),
        "k": [i.fx, 0.0, i.cx, 0.0, i.fy, i.cy, 0.0, 0.0, 1.0],
        "r": [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        "p": [i.fx, 0.0, i.cx, 0.0, 0.0, i.fy, i.cy, 0.0, 0.0, 0.0, 1.0, 0.0],
    }


def depth_raw_to_mm(raw: np.ndarray, units_m: float) -> np.ndarray:
    """Raw z16 depth × device units → uint16 millimetres (rounded, saturated at 65535)."""
    if abs(units_m - 0.001) < 1e-9:
        return np.array(raw, dtype=np.uint16, copy=True)
    mm = np.rint(raw.astype(np.float64) * (units_m * 1000.0))
    return np.clip(mm, 0, 65535).astype(np.uint16)


# --- the recovery machine (pure) -------------------------------------------------------------------

STREAMING, STARTING, RETRYING, RESETTING, BACKOFF = "streaming", "starting", "retrying", "resetting", "backoff"
#: diagnostic level per state (diagnostic_msgs/DiagnosticStatus OK=0, WARN=1, ERROR=2).
STATE_LEVEL = {STREAMING: 0, STARTING: 1, RETRYING: 1, RESETTING: 1, BACKOFF: 2}


@dataclass
class Recovery:
    """What to do after a frame timeout or a failed start (pure; see the module docstring).

    Decisions are ``("retry", 0)`` (wait for frames again), ``("reset", wait_s)`` (hardware-reset
    the device, wait while it re-enumerates, restart) or ``("backoff", wait_s)`` (stop, wait, restart).

    Attributes:
        state: one of streaming, starting, retrying, resetting, backoff.
        frames, timeouts, resets, restarts, start_failures: counters since creation.
        consecutive_timeouts: timeouts since the last frame.
        last_error: text of the last error.
    """

    retries_before_reset: int = 3
    reset_wait_s: float = 5.0
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0
    state: str = STARTING
    frames: int = 0
    timeouts: int = 0
    consecutive_timeouts: int = 0
    resets: int = 0
    restarts: int = 0
    start_failures: int = 0
    last_error: str = ""
    backoff_s: float = field(default=0.0, init=False)
    _reset_done: bool = field(default=False, init=False)
    _started_once: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.backoff_s = self.backoff_initial_s

    def on_frame(self) -> None:
        """A frame arrived: healthy again."""
        self.state = STREAMING
        self.frames += 1
        self.consecutive_timeouts = 0
        self._reset_done = False
        self.backoff_s = self.backoff_initial_s

    def on_started(self) -> None:
        """The stream (re)started; waiting for its first frame."""
        if self._started_once:
            self.restarts += 1
        self._started_once = True
        if self.state != STREAMING:
            self.state = STARTING

    def _backoff(self) -> tuple[str, float]:
        self.state = BACKOFF
        wait = self.backoff_s
        self.backoff_s = min(self.backoff_s * 2.0, self.backoff_max_s)
        return "backoff", wait

    def on_timeout(self, error: str = "frame timeout") -> tuple[str, float]:
        """A wait for frames timed out; returns the decision."""
        self.timeouts += 1
        self.consecutive_timeouts += 1
        self.last_error = error
        if self.consecutive_timeouts <= self.retries_before_reset:
            self.state = RETRYING
            return "retry", 0.0
        if not self._reset_done:
            self._reset_done = True
            self.resets += 1
            self.state = RESETTING
            return "reset", self.reset_wait_s
        return self._backoff()

    def on_start_failed(self, error: str) -> tuple[str, float]:
        """Opening the device failed (unplugged, busy, re-enumerating); returns a backoff decision."""
        self.start_failures += 1
        self.last_error = error
        return self._backoff()

    @property
    def level(self) -> int:
        """Diagnostic level of the current state (0 OK, 1 WARN, 2 ERROR)."""
        return STATE_LEVEL[self.state]

    def values(self) -> dict[str, Any]:
        """Counters for a diagnostics record."""
        return {
            "state": self.state,
            "frames": self.frames,
            "timeouts": self.timeouts,
            "consecutive_timeouts": self.consecutive_timeouts,
            "resets": self.resets,
            "restarts": self.restarts,
            "start_failures": self.start_failures,
            "next_backoff_s": self.backoff_s,
            "last_error": self.last_error,
        }


# --- sources ------------------------------------------------------------------------------------------


class FrameSource(Protocol):
    """A started stream of colour + depth framesets."""

    def start(self) -> None:
        """Open the device and start streaming. Raises RuntimeError when it cannot."""

    def wait(self, timeout_ms: int) -> Any:
        """The next ``rs.composite_frame``. Raises RuntimeError on timeout."""

    def hardware_reset(self) -> None:
        """Power-cycle the device (USB re-enumeration). Raises RuntimeError when unsupported."""

    def stop(self) -> None:
        """Stop streaming (never raises)."""


class PipelineSource:
    """A physical RealSense through ``rs.pipeline``: colour rgb8 and depth z16 at the given modes.

    Args:
        serial: device serial number ('' = first device).
        color_size, depth_size: (width, height), px.
        fps: frame rate, Hz.
    """

    def __init__(self, serial: str = "", color_size: tuple[int, int] = (848, 480), depth_size: tuple[int, int] = (848, 480), fps: int = 30):
        self.serial, self.color_size, self.depth_size, self.fps = serial, color_size, depth_size, fps
        self._pipe: Any = None
        self._device: Any = None

    def start(self) -> None:
        # rs.pipeline.start() blocks ~15 s waiting for a missing device; enumerate first (a few ms).
        # librealsense (>= 2.57) writes its usage statistics to ~/.rum/rum.json here and at pipeline
        # start/stop, with no switch to stop it. doctor points $HOME elsewhere for its one-shot check
        # (paths.scratch_home); a node must not: $HOME is process-wide, and the other nodes of a
        # bringup process resolve their stores and logs from it at the same time (docs/perception.md).
        serials = [d.get_info(rs.camera_info.serial_number) for d in rs.context().query_devices()]
        if not serials:
            raise RuntimeError("No device connected (no RealSense on USB; check the cable and 'rs-enumerate-devices')")
        if self.serial and self.serial not in serials:
            raise RuntimeError(f"RealSense {self.serial} not found (connected: {', '.join(serials)}); fix camera_node serial_number")
        pipe = rs.pipeline()
        cfg = rs.config()
        if self.serial:
            cfg.enable_device(self.serial)
        cfg.enable_stream(rs.stream.depth, self.depth_size[0], self.depth_size[1], rs.format.z16, self.fps)
        cfg.enable_stream(rs.stream.color, self.color_size[0], self.color_size[1], rs.format.rgb8, self.fps)
        profile = pipe.start(cfg)
        self._pipe, self._device = pipe, profile.get_device()

    def wait(self, timeout_ms: int) -> Any:
        if self._pipe is None:
            raise RuntimeError("pipeline not started")
        return self._pipe.wait_for_frames(timeout_ms)

    def hardware_reset(self) -> None:
        dev = self._device
        if dev is None:
            devices = rs.context().query_devices()
            for d in devices:
                if not self.serial or d.get_info(rs.camera_info.serial_number) == self.serial:
                    dev = d
                    break
        if dev is None:
            raise RuntimeError(f"no RealSense device {self.serial or ''} to reset")
        dev.hardware_reset()

    def stop(self) -> None:
        try:
            if self._pipe is not None:
                self._pipe.stop()
        except RuntimeError:
            pass
        self._pipe = None
        self._device = None


def _rs_intrinsics(i: Intrinsics, coeffs: list[float] | None = None) -> Any:
    r = rs.intrinsics()
    r.width, r.height, r.fx, r.fy, r.ppx, r.ppy = i.width, i.height, i.fx, i.fy, i.cx, i.cy
    r.model = rs.distortion.brown_conrady
    r.coeffs = list(coeffs or [0.0] * 5)
    return r


class SoftwareCamera:
    """A librealsense ``software_device`` with a colour (rgb8) and a depth (z16) sensor.

    Frames pushed with :meth:`push` travel through the real librealsense frame pipeline (syncer,
    then :class:`RealSenseCamera` applies ``rs.align``), exactly like frames from a USB device.

    Args:
        color: colour intrinsics; depth: depth intrinsics (default = colour's).
        depth_units_m: metres per raw depth unit (``DEPTH_UNITS`` read-only option; D435i 0.001).
        depth_to_color: (rotation 3x3 row-major, translation m) extrinsics depth → colour
            (default identity).
        color_coeffs: colour distortion coefficients (5, Brown-Conrady).
        fps: nominal frame rate, Hz.

    Attributes:
        resets: hardware resets requested (software devices have no hardware; counted only).
        starts: times :meth:`start` was called.
    """

    def __init__(
        self,
        color: Intrinsics,
        depth: Intrinsics | None = None,
        depth_units_m: float = 0.001,
        depth_to_color: tuple[np.ndarray, np.ndarray] | None = None,
        color_coeffs: list[float] | None = None,
        fps: int = 30,
    ) -> None:
        depth = depth or color
        self.color, self.depth, self.depth_units_m, self.fps = color, depth, depth_units_m, fps
        self.device = rs.software_device()
        self.depth_sensor = self.device.add_sensor("Depth")
        self.color_sensor = self.device.add_sensor("Color")
        vs = rs.video_stream()
        vs.type, vs.index, vs.uid = rs.stream.depth, 0, 0
        vs.width, vs.height, vs.fps, vs.bpp, vs.fmt = depth.width, depth.height, fps, 2, rs.format.z16
        vs.intrinsics = _rs_intrinsics(depth)
        self.depth_profile = self.depth_sensor.add_video_stream(vs).as_video_stream_profile()
        cs = rs.video_stream()
        cs.type, cs.index, cs.uid = rs.stream.color, 0, 1
        cs.width, cs.height, cs.fps, cs.bpp, cs.fmt = color.width, color.height, fps, 3, rs.format.rgb8
        cs.intrinsics = _rs_intrinsics(color, color_coeffs)
        self.color_profile = self.color_sensor.add_video_stream(cs).as_video_stream_profile()
        self.depth_sensor.add_read_only_option(rs.option.depth_units, float(depth_units_m))
        ex = rs.extrinsics()
        rot, trans = depth_to_color if depth_to_color is not None else (np.eye(3), np.zeros(3))
        ex.rotation = [float(x) for x in np.asarray(rot, dtype=np.float64).T.reshape(-1)]  # librealsense: column-major
        ex.translation = [float(x) for x in np.asarray(trans, dtype=np.float64).reshape(3)]
        self.depth_profile.register_extrinsics_to(self.color_profile, ex)
        self.syncer: Any = None
        self.resets = 0
        self.starts = 0
        self._n = 0
        self._keep: list[tuple[np.ndarray, np.ndarray]] = []

    def start(self) -> None:
        self.syncer = rs.syncer()
        self.depth_sensor.open(self.depth_profile)
        self.color_sensor.open(self.color_profile)
        self.depth_sensor.start(self.syncer)
        self.color_sensor.start(self.syncer)
        self.starts += 1

    def push(self, rgb: np.ndarray, depth_raw: np.ndarray, timestamp_ms: float | None = None) -> None:
        """Inject one colour (H, W, 3) uint8 and one depth (h, w) uint16 raw frame with one timestamp.

        Raises:
            ValueError: shapes/dtypes do not match the streams.
        """
        c = self.color
        d = self.depth
        rgb = np.ascontiguousarray(rgb)
        depth_raw = np.ascontiguousarray(depth_raw)
        if rgb.shape != (c.height, c.width, 3) or rgb.dtype != np.uint8:
            raise ValueError(f"rgb must be ({c.height}, {c.width}, 3) uint8, got {rgb.shape} {rgb.dtype}")
        if depth_raw.shape != (d.height, d.width) or depth_raw.dtype != np.uint16:
            raise ValueError(f"depth must be ({d.height}, {d.width}) uint16, got {depth_raw.shape} {depth_raw.dtype}")
        self._n += 1
        ts = float(timestamp_ms if timestamp_ms is not None else self._n * 1000.0 / self.fps)
        self._keep.append((depth_raw, rgb))  # librealsense may reference the buffers until the frames are released
        del self._keep[:-32]
        for sensor, prof, pix, bpp, w in (
            (self.depth_sensor, self.depth_profile, depth_raw, 2, d.width),
            (self.color_sensor, self.color_profile, rgb, 3, c.width),
        ):
            f = rs.software_video_frame()
            f.pixels = pix
            f.bpp, f.stride = bpp, bpp * w
            f.timestamp, f.domain, f.frame_number = ts, rs.timestamp_domain.hardware_clock, self._n
            f.profile = prof
            if sensor is self.depth_sensor:
                f.depth_units = float(self.depth_units_m)
            sensor.on_video_frame(f)

    def wait(self, timeout_ms: int) -> Any:
        if self.syncer is None:
            raise RuntimeError("software camera not started")
        return self.syncer.wait_for_frames(timeout_ms)

    def hardware_reset(self) -> None:
        self.resets += 1

    def stop(self) -> None:
        for s in (self.depth_sensor, self.color_sensor):
            try:
                s.stop()
            except RuntimeError:
                pass
            try:
                s.close()
            except RuntimeError:
                pass
        self.syncer = None


# --- the camera -------------------------------------------------------------------------------------


class RealSenseCamera:
    """A frame source run under :class:`Recovery`; :meth:`read` never raises for device faults.

    Args:
        source_factory: builds a (not yet started) :class:`FrameSource`; called for every (re)start.
        frame_timeout_s: wait for one complete frameset, s.
        recovery: the recovery machine (its parameters: retries, reset wait, backoff).
        sleep: ``sleep(seconds) -> bool``; returns True when the caller is shutting down
            (e.g. ``threading.Event().wait``). Used for reset/backoff waits, in slices of at most 0.2 s.
        clock: monotonic time, s.
        log: ``log(level, text)`` for state changes (level 'info' | 'warn' | 'error').
    """

    def __init__(
        self,
        source_factory: Callable[[], FrameSource],
        frame_timeout_s: float = 1.0,
        recovery: Recovery | None = None,
        sleep: Callable[[float], Any] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        log: Callable[[str, str], None] | None = None,
    ) -> None:
        self.factory = source_factory
        self.frame_timeout_s = frame_timeout_s
        self.recovery = recovery or Recovery()
        self.sleep = sleep
        self.clock = clock
        self.log = log or (lambda level, text: None)
        self.source: FrameSource | None = None
        self._not_before = 0.0
        self._align = rs.align(rs.stream.color)
        self.incomplete = 0
        self.stale = 0  # framesets dropped because they repeat the last one (frame number and device time)
        self._last_id: tuple[int, float] | None = None

    def drop_source(self) -> None:
        """Stop and forget the current source; the next read() restarts it (never raises)."""
        self._last_id = None  # a restarted device may count its frames from 0 again
        if self.source is not None:
            try:
                self.source.stop()
            except Exception:
                pass
        self.source = None

    def read(self) -> CameraFrame | None:
        """One step: start the device if needed, wait for a frameset, align it.

        Returns:
            A :class:`CameraFrame`, or ``None`` after a timeout / failure / wait (the state machine
            decided what happens next; call again).
        """
        if self.source is None:
            left = self._not_before - self.clock()
            if left > 0:
                self.sleep(min(left, 0.2))
                return None
            try:
                src = self.factory()
                src.start()
            except Exception as exc:  # device missing, busy, USB error
                kind, wait = self.recovery.on_start_failed(f"start failed: {exc}")
                self._not_before = self.clock() + wait
                self.log("error", f"RealSense start failed ({exc}); retrying in {wait:.1f} s")
                return None
            self.source = src
            self.recovery.on_started()
            self.log("info", "RealSense streaming started")
        deadline = self.clock() + self.frame_timeout_s
        while True:
            left_ms = int(max(1, round((deadline - self.clock()) * 1000)))
            try:
                fs = self.source.wait(left_ms)
            except Exception as exc:  # librealsense: RuntimeError "Frame didn't arrive within ..."
                return self._on_timeout(str(exc) or "frame timeout")
            frame = self._process(fs)
            if frame is not None and self._is_stale(frame):
                self.stale += 1
                if self.clock() >= deadline:
                    return self._on_timeout(
                        f"stale frames: frame {frame.frame_number} (device time {frame.timestamp_ms:.1f} ms) handed out again "
                        f"for {self.frame_timeout_s:g} s (wedged USB pipeline?)"
                    )
                continue
            if frame is not None:
                self._last_id = (frame.frame_number, frame.timestamp_ms)
                self.recovery.on_frame()
                return frame
            self.incomplete += 1
            if self.clock() >= deadline:
                return self._on_timeout("only incomplete framesets (colour or depth missing)")

    def _is_stale(self, frame: CameraFrame) -> bool:
        """True when ``frame`` repeats the last frame returned (same colour frame number and device
        timestamp): a wedged pipeline handing out one frameset again and again. Such frames are never
        returned; only stale frames for ``frame_timeout_s`` count as a frame timeout (retry, reset, backoff)."""
        return self._last_id is not None and (frame.frame_number, frame.timestamp_ms) == self._last_id

    def _on_timeout(self, error: str) -> None:
        kind, wait = self.recovery.on_timeout(error)
        if kind == "retry":
            self.log(
                "warn",
                f"RealSense frame timeout ({error}); retry {self.recovery.consecutive_timeouts}/{self.recovery.retries_before_reset}",
            )
            return None
        if kind == "reset":
            self.log("error", f"RealSense frame timeouts persist; hardware reset, then restart in {wait:.1f} s")
            try:
                if self.source is not None:
                    self.source.hardware_reset()
            except Exception as exc:
                self.recovery.last_error = f"hardware reset failed: {exc}"
        else:
            self.log("error", f"RealSense still silent; restart in {wait:.1f} s")
        self.drop_source()
        self._not_before = self.clock() + wait
        return None

    def _process(self, fs: Any) -> CameraFrame | None:
        if fs is None or not fs.get_color_frame() or not fs.get_depth_frame():
            return None
        aligned = self._align.process(fs)
        color = aligned.get_color_frame()
        depth = aligned.get_depth_frame()
        if not color or not depth:
            return None
        vp = color.profile.as_video_stream_profile()
        ri = vp.get_intrinsics()
        rgb = np.array(np.asanyarray(color.get_data()), copy=True)
        if vp.format() == rs.format.bgr8:
            rgb = np.ascontiguousarray(rgb[..., ::-1])
        units = float(depth.get_units())
        if not (units > 0 and math.isfinite(units)):
            units = 0.001
        depth_mm = depth_raw_to_mm(np.asanyarray(depth.get_data()), units)
        model, d = distortion_fields(ri.model, list(ri.coeffs))
        intr = Intrinsics(int(ri.width), int(ri.height), float(ri.fx), float(ri.fy), float(ri.ppx), float(ri.ppy))
        return CameraFrame(rgb, depth_mm, intr, model, d, float(color.get_timestamp()), int(color.get_frame_number()), units)

    def close(self) -> None:
        """Stop the device (never raises)."""
        self.drop_source()
