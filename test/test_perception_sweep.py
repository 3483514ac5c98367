"""Pure frame selection of the continuous-sweep panorama (havln_robot.perception.sweep); no ROS."""

from __future__ import annotations

import math

import pytest

from havln_robot.motion.executor import MotionConfig, sweep_rate
from havln_robot.perception.panorama import PanoramaError
from havln_robot.perception.sweep import SweepConfig, SweepSelector, YawTrack


def _sweep(rate_deg_s=45.0, fps=30.0, imu_hz=100.0, phase=0.0, drop=(), bias=0.0, yaw0=0.3, offset=0.0):
    """A constant-rate 360° sweep starting at t=1 s: IMU samples (raw yaw + bias*t), frames every 1/fps."""
    track = YawTrack()
    dur = 360.0 / rate_deg_s

    def true_deg(t):
        return min(max(t - 1.0, 0.0), dur) * rate_deg_s

    t = 0.0
    while t < dur + 2.0:
        track.add(t, math.remainder(yaw0 + math.radians(true_deg(t)) + bias * t, 2 * math.pi))
        t += 1.0 / imu_hz
    sel = SweepSelector(SweepConfig(views=12, time_offset_s=offset), track, t_start=0.9)
    frames = []
    k = 0
    while True:
        st = 0.9 + phase + k / fps
        if st > dur + 1.5:
            break
        if k not in drop:
            # the camera stamp is late by `offset` when offset < 0 (compensated by time_offset_s)
            sel.offer(st - offset, ("rgb", "depth", st))
            frames.append(st)
        k += 1
    return sel, true_deg


def test_interpolation_at_the_frame_stamp_is_within_tolerance():
    sel, true_deg = _sweep()
    chosen = sel.select()
    assert all(c is not None for c in chosen)
    for i, c in enumerate(chosen):
        truth = true_deg(c.data[2])
        assert abs(((truth - 30.0 * i) + 180) % 360 - 180) <= 1.0, (i, truth)
        assert c.data[0] == "rgb" and c.data[1] == "depth"  # the pair travels as one


def test_yaw_track_unwraps_and_interpolates():
    tr = YawTrack(max_gap_s=2.0)
    tr.add(0.0, math.pi - 0.1)
    tr.add(1.0, -math.pi + 0.1)  # crossed +-pi: +0.2 rad
    assert tr.at(0.5) == pytest.approx(math.pi)
    assert tr.at(2.0) is None and tr.at(-1.0) is None
    tr.add(0.5, 0.0)  # older than the last: ignored
    assert len(tr.t) == 2


def test_gap_in_imu_refuses_interpolation():
    tr = YawTrack(max_gap_s=0.1)
    tr.add(0.0, 0.0)
    tr.add(0.5, 0.1)
    assert tr.at(0.25) is None


def test_latency_is_compensated_by_the_time_offset():
    sel, true_deg = _sweep(offset=-0.05)  # stamps 50 ms late (receipt stamps)
    for i, c in enumerate(sel.select()):
        assert c is not None
        truth = true_deg(c.data[2])
        assert abs(((truth - 30.0 * i) + 180) % 360 - 180) <= 1.0


def test_uncompensated_latency_would_be_off():
    track = YawTrack()
    for k in range(1000):
        track.add(k * 0.01, math.radians(45.0 * k * 0.01))
    sel = SweepSelector(SweepConfig(views=12), track, t_start=0.0)
    assert sel.heading_deg(1.0) == pytest.approx(45.0)
    late = SweepSelector(SweepConfig(views=12, time_offset_s=-0.05), track, t_start=0.0)
    assert late.heading_deg(1.0) == pytest.approx(45.0 - 2.25)


def test_dropped_frames_leave_a_view_missing_for_retake():
    # frames near 90 deg (view 3) dropped: t = 1 + 2 s -> frame index ~ (3.0 - 0.9) * 30 = 63
    sel, _ = _sweep(drop=set(range(58, 69)))
    chosen = sel.select()
    assert chosen[3] is None
    assert all(c is not None for i, c in enumerate(chosen) if i != 3)


def test_frames_too_far_from_every_heading_are_never_used():
    sel, true_deg = _sweep(rate_deg_s=150.0, fps=10.0, phase=0.033)  # 15 deg between frames
    chosen = sel.select()
    assert sel.rejected > 0
    for c in chosen:
        if c is not None:
            assert abs(c.error_deg) <= 1.0
    assert any(c is None for c in chosen)


def test_gyro_drift_is_removed():
    bias = math.radians(0.1)  # 0.1 deg/s: 0.8 deg over the sweep
    sel, true_deg = _sweep(bias=bias)
    drift = sel.track.drift_against(0.9, 9.5, math.radians(360.0))
    assert drift == pytest.approx(bias, rel=1e-6)
    for i, c in enumerate(sel.select(drift)):
        assert c is not None
        truth = true_deg(c.data[2])
        assert abs(((truth - 30.0 * i) + 180) % 360 - 180) <= 1.0


def test_views_passed_only_after_the_last_heading():
    sel, _ = _sweep()
    assert sel.views_passed()
    track = YawTrack()
    for k in range(300):
        track.add(k * 0.01, math.radians(100.0 * k * 0.01))  # up to ~300 deg
    part = SweepSelector(SweepConfig(views=12), track, 0.0)
    for k in range(90):
        part.offer(k / 30.0, k)
    assert not part.views_passed()


def test_right_sweep_headings_are_negative():
    track = YawTrack()
    for k in range(900):
        track.add(k * 0.01, -math.radians(45.0 * k * 0.01))
    sel = SweepSelector(SweepConfig(views=12, direction="right"), track, 0.0)
    for k in range(0, 240):
        sel.offer(k / 30.0, k)
    chosen = sel.select()
    assert chosen[1] is not None and chosen[1].target_deg == -30.0
    assert abs(chosen[1].heading_deg + 30.0) <= 1.0


def test_config_errors():
    with pytest.raises(PanoramaError):
        SweepConfig(views=12, tolerance_deg=20.0)
    with pytest.raises(PanoramaError):
        SweepConfig(direction="up")


def test_sweep_rate_budgets():
    # 0.8 rad/s profile; 8 ms exposure -> 0.5 deg blur allows 62.5 deg/s; 1.5 deg at 30 Hz -> 45 deg/s
    assert math.degrees(sweep_rate(0.8, 0.008, 0.5, 30.0, 1.5)) == pytest.approx(45.0)
    assert math.degrees(sweep_rate(0.8, 0.02, 0.5, 30.0, 1.5)) == pytest.approx(25.0)
    assert sweep_rate(0.5, 0.0, 0.5, 0.0, 1.5) == 0.5
    cfg = MotionConfig(sweep_w=math.radians(45.0))
    assert cfg.min_duration("SWEEP_LEFT") == pytest.approx(8.0 + math.radians(45.0) / 2.5)
