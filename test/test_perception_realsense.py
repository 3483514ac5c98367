"""RealSense capture through the real librealsense frame pipeline (rs.software_device, syncer, rs.align)
and the retry → hardware-reset → backoff recovery machine."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from havln_robot.perception.preprocess import Intrinsics
from havln_robot.perception.realsense import (
    BACKOFF,
    RESETTING,
    RETRYING,
    STREAMING,
    CameraFrame,
    RealSenseCamera,
    Recovery,
    SoftwareCamera,
    camera_info_fields,
    depth_raw_to_mm,
)

COLOR = Intrinsics.from_hfov(96, 54, 69.4)


class Feeder:
    """Pushes frames into a SoftwareCamera from a thread (like a USB device streaming at ~60 Hz)."""

    def __init__(self, cam, rgb, raw):
        self.cam, self.rgb, self.raw = cam, rgb, raw
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            if self.cam.syncer is not None:
                self.cam.push(self.rgb, self.raw)
            time.sleep(1 / 60)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def read_frame(camera, tries=50) -> CameraFrame:
    for _ in range(tries):
        f = camera.read()
        if f is not None:
            return f
    raise AssertionError(f"no frame; recovery {camera.recovery.values()}")


def blocks(shape, rng, lo, hi, size=8):
    """Piecewise-constant depth (size x size blocks) so alignment keeps block interiors exact."""
    h, w = shape
    b = rng.integers(lo, hi, ((h + size - 1) // size, (w + size - 1) // size), dtype=np.uint16)
    return np.kron(b, np.ones((size, size), np.uint16))[:h, :w]


def test_values_survive_the_librealsense_pipeline():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (54, 96, 3), dtype=np.uint8)
    raw = blocks((54, 96), rng, 2000, 60000)  # 100 µm units: 0.2 .. 6 m
    cam = SoftwareCamera(COLOR, depth_units_m=0.0001)
    camera = RealSenseCamera(lambda: cam, frame_timeout_s=0.5)
    with Feeder(cam, rgb, raw):
        f = read_frame(camera)
    camera.close()
    assert np.array_equal(f.rgb, rgb)
    assert f.depth_mm.dtype == np.uint16 and f.depth_mm.shape == (54, 96)
    units = float(np.float32(0.0001))  # librealsense stores depth units as float32
    expected_mm = np.rint(raw * (units * 1000.0)).astype(np.uint16)
    assert np.abs(expected_mm.astype(int) - raw / 10.0).max() <= 0.5 + 1e-6
    interior = np.zeros_like(raw, bool)
    for by in range(0, 54, 8):
        for bx in range(0, 96, 8):
            interior[by + 2 : by + 6, bx + 2 : bx + 6] = True
    got = f.depth_mm[interior]
    filled = got > 0  # rs.align leaves a few hole pixels (0 = no data) where its footprints round apart
    assert filled.mean() > 0.85
    assert np.array_equal(got[filled], expected_mm[interior][filled])
    assert f.depth_units_m == pytest.approx(0.0001)
    # camera_info from the device intrinsics
    assert (f.intrinsics.width, f.intrinsics.height) == (96, 54)
    assert f.intrinsics.fx == pytest.approx(COLOR.fx, rel=1e-6) and f.intrinsics.cx == pytest.approx(COLOR.cx)
    info = camera_info_fields(f)
    assert info["distortion_model"] == "plumb_bob" and info["d"] == [0.0] * 5
    assert info["k"] == pytest.approx([COLOR.fx, 0, COLOR.cx, 0, COLOR.fy, COLOR.cy, 0, 0, 1])
    assert info["p"] == pytest.approx([COLOR.fx, 0, COLOR.cx, 0, 0, COLOR.fy, COLOR.cy, 0, 0, 0, 1, 0])
    assert camera.recovery.state == STREAMING and camera.recovery.frames == 1


def test_depth_is_reprojected_into_the_colour_camera():
    # depth sensor with its own (wider, higher-resolution) intrinsics, 5 cm to the right of the colour
    # camera; a wall at 2 m with a box at 1 m in the middle of the depth image
    depth_intr = Intrinsics.from_hfov(192, 108, 87.0)
    cam = SoftwareCamera(COLOR, depth=depth_intr, depth_units_m=0.001, depth_to_color=(np.eye(3), np.array([0.05, 0.0, 0.0])))
    raw = np.full((108, 192), 2000, np.uint16)
    raw[48:60, 90:102] = 1000  # centred on depth pixel (95.5, 53.5) = the depth optical axis
    camera = RealSenseCamera(lambda: cam, frame_timeout_s=0.5)
    with Feeder(cam, np.zeros((54, 96, 3), np.uint8), raw):
        f = read_frame(camera)
    camera.close()
    assert f.depth_mm.shape == (54, 96)  # colour resolution
    valid = f.depth_mm > 0
    assert valid.mean() > 0.8
    assert set(np.unique(f.depth_mm[valid]).tolist()) <= {1000, 2000}
    # the box centre (0, 0, 1 m) in the depth frame is (0.05, 0, 1) in the colour frame
    ys, xs = np.nonzero(f.depth_mm == 1000)
    u_pred = COLOR.fx * 0.05 / 1.0 + COLOR.cx
    assert abs(xs.mean() - u_pred) < 0.75 and abs(ys.mean() - COLOR.cy) < 0.75
    # its size shrinks by the focal-length ratio (12 depth px → 12 * fx_c / fx_d colour px)
    assert abs((xs.max() - xs.min() + 1) - 12 * COLOR.fx / depth_intr.fx) <= 1.5


def test_distortion_coefficients_reach_camera_info():
    coeffs = [0.1, -0.05, 0.001, 0.002, 0.01]
    cam = SoftwareCamera(COLOR, color_coeffs=coeffs)
    camera = RealSenseCamera(lambda: cam, frame_timeout_s=0.5)
    with Feeder(cam, np.zeros((54, 96, 3), np.uint8), np.full((54, 96), 1500, np.uint16)):
        f = read_frame(camera)
    camera.close()
    info = camera_info_fields(f)
    assert info["distortion_model"] == "plumb_bob" and info["d"] == pytest.approx(coeffs)


def test_depth_unit_conversion():
    raw = np.array([[0, 1, 1000, 65535]], np.uint16)
    assert depth_raw_to_mm(raw, 0.001).tolist() == [[0, 1, 1000, 65535]]
    assert depth_raw_to_mm(raw, 0.0001).tolist() == [[0, 0, 100, 6554]]
    assert depth_raw_to_mm(raw, 0.01).tolist() == [[0, 10, 10000, 65535]]  # saturates


def test_timeouts_retry_then_reset_then_backoff_without_crashing():
    cam = SoftwareCamera(COLOR)
    starts = []

    def factory():
        starts.append(time.monotonic())
        return cam

    rec = Recovery(retries_before_reset=2, reset_wait_s=0.0, backoff_initial_s=0.05, backoff_max_s=0.2)
    camera = RealSenseCamera(factory, frame_timeout_s=0.05, recovery=rec)
    states = []
    for _ in range(12):  # nothing is pushed: every wait times out
        assert camera.read() is None
        states.append(rec.state)
    assert states[:3] == [RETRYING, RETRYING, RESETTING]
    assert BACKOFF in states[3:]
    assert cam.resets == 1 and rec.resets == 1  # one hardware reset per outage
    assert len(starts) >= 3 and rec.restarts == len(starts) - 1
    assert rec.backoff_s <= 0.2 and rec.timeouts >= 4
    # the device comes back: the next frame puts the machine back to streaming and clears the outage
    rgb = np.full((54, 96, 3), 7, np.uint8)
    with Feeder(cam, rgb, np.full((54, 96), 1234, np.uint16)):
        f = read_frame(camera, tries=100)
    camera.close()
    assert rec.state == STREAMING and rec.consecutive_timeouts == 0 and rec.backoff_s == 0.05
    assert f.rgb[0, 0].tolist() == [7, 7, 7]


def test_missing_device_backs_off_forever_with_doubling_waits():
    calls = {"n": 0}

    def factory():
        calls["n"] += 1
        raise RuntimeError("No device connected")

    t = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        t[0] += s

    rec = Recovery(backoff_initial_s=1.0, backoff_max_s=4.0)
    camera = RealSenseCamera(factory, recovery=rec, sleep=sleep, clock=lambda: t[0])
    for _ in range(200):
        assert camera.read() is None
    assert rec.state == BACKOFF and "No device connected" in rec.last_error
    # waits between attempts: 1, 2, 4, 4, ... seconds of (fake) time
    assert calls["n"] >= 5 and rec.backoff_s == 4.0
    assert t[0] >= 1 + 2 + 4 + 4


def test_recovery_machine_sequence():
    r = Recovery(retries_before_reset=1, reset_wait_s=3.0, backoff_initial_s=0.5, backoff_max_s=1.0)
    assert r.on_timeout() == ("retry", 0.0)
    assert r.on_timeout() == ("reset", 3.0)
    assert r.on_timeout() == ("backoff", 0.5)
    assert r.on_timeout() == ("backoff", 1.0)
    assert r.on_timeout() == ("backoff", 1.0)
    assert r.level == 2
    r.on_frame()
    assert (r.state, r.level) == (STREAMING, 0)
    assert r.on_timeout() == ("retry", 0.0)
    assert r.on_timeout() == ("reset", 3.0)  # a new outage may reset again


class WedgedSource:
    """A SoftwareCamera whose pipeline, once ``wedged`` is set, hands out its last frameset again
    and again (a wedged USB pipeline) instead of timing out."""

    def __init__(self, cam):
        self.cam, self.wedged, self.last = cam, False, None

    def start(self):
        self.cam.start()

    def wait(self, timeout_ms):
        if self.wedged and self.last is not None:
            time.sleep(1 / 30)
            return self.last
        self.last = self.cam.wait(timeout_ms)
        return self.last

    def hardware_reset(self):
        self.wedged = False  # the reset un-wedges it
        self.cam.hardware_reset()

    def stop(self):
        self.cam.stop()


def test_stale_frames_are_dropped_and_recovered_from():
    """The same frameset handed out again is never returned (so never published
    with a fresh stamp); after frame_timeout_s of it: retry (WARN), hardware reset, then frames again."""
    cam = SoftwareCamera(COLOR)
    src = WedgedSource(cam)
    rec = Recovery(retries_before_reset=1, reset_wait_s=0.0, backoff_initial_s=0.05, backoff_max_s=0.1)
    camera = RealSenseCamera(lambda: src, frame_timeout_s=0.15, recovery=rec)
    rgb = np.full((54, 96, 3), 9, np.uint8)
    with Feeder(cam, rgb, np.full((54, 96), 1000, np.uint16)):
        first = read_frame(camera)
        src.wedged = True
        got, states = [], []
        for _ in range(3):
            got.append(camera.read())
            states.append(rec.state)
        assert got[:2] == [None, None], "a stale frameset was returned"
        assert states[:2] == [RETRYING, RESETTING]  # diagnostics WARN; BACKOFF (ERROR) if the reset does not help
        assert camera.stale > 0 and "stale frames" in rec.last_error
        assert cam.resets == 1
        f = read_frame(camera, tries=100)  # after the reset: fresh frames again
    camera.close()
    assert rec.state == STREAMING and (f.frame_number, f.timestamp_ms) != (first.frame_number, first.timestamp_ms)
