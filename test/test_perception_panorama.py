"""The panorama planner / capture state machine (pure)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from havln_robot.actions import TURN_LEFT, TURN_RIGHT
from havln_robot.perception.panorama import PanoramaCapture, PanoramaError, TurnResult, valid_view_counts


def run(cap: PanoramaCapture, yaw_per_turn, source_key="yaw_imu_deg"):
    """Drive ``cap`` with a robot whose turns achieve ``yaw_per_turn(i, action)`` degrees; return the action log."""
    log = []
    heading = 0.0
    while (s := cap.next_step()).kind != "done":
        if s.kind == "capture":
            log.append(("capture", s.index))
            cap.add_view(heading)
        else:
            log.append(("turn", s.action))
            y = yaw_per_turn(len([x for x in log if x[0] == "turn"]) - 1, s.action)
            heading += y
            cap.add_turn(TurnResult.from_values(s.action, {"outcome": "ok", source_key: f"{y:.4f}"}))
        assert len(log) < 200
    return log, heading


def test_default_12_views_24_turns_ending_at_start():
    cap = PanoramaCapture()
    log, heading = run(cap, lambda i, a: 15.0 if a == TURN_LEFT else -15.0)
    turns = [a for k, a in log if k == "turn"]
    assert len(turns) == 24 and set(turns) == {TURN_LEFT}
    assert [i for k, i in log if k == "capture"] == list(range(12))
    # two turns between consecutive captures, two after the last one
    assert log[0] == ("capture", 0) and log[-2:] == [("turn", TURN_LEFT)] * 2
    assert abs(cap.final_error_deg) < 1e-9 and heading == pytest.approx(360.0)
    assert [v.heading_deg for v in cap.captured] == pytest.approx([30.0 * i for i in range(12)])
    h = cap.headings_rad()
    assert h.dtype == np.float32 and h.shape == (12,)
    assert np.allclose(h, [((math.radians(30 * i) + math.pi) % (2 * math.pi)) - math.pi for i in range(12)], atol=1e-6)
    assert cap.summary()["turns"] == 24 and cap.summary()["corrections"] == 0
    assert {v.source for v in cap.captured} == {"imu"}


def test_right_sweep_and_other_view_counts():
    cap = PanoramaCapture(views=4, direction="right")
    log, heading = run(cap, lambda i, a: 15.0 if a == TURN_LEFT else -15.0)
    turns = [a for k, a in log if k == "turn"]
    assert turns == [TURN_RIGHT] * 24
    assert [v.heading_deg for v in cap.captured] == pytest.approx([0, -90, -180, -270])
    assert [v.target_deg for v in cap.captured] == pytest.approx([0, -90, -180, -270])
    one = PanoramaCapture(views=1)
    log, _ = run(one, lambda i, a: 15.0)
    assert log == [("capture", 0)]


def test_views_keep_measured_headings_and_errors_are_corrected():
    # the robot under-turns: 13° per TURN_LEFT -> extra turns keep every view within tolerance
    cap = PanoramaCapture(views=12, tolerance_deg=7.5, max_corrections=6)
    log, heading = run(cap, lambda i, a: 13.0 if a == TURN_LEFT else -13.0)
    for v in cap.captured:
        assert abs(v.heading_deg - v.target_deg) <= 7.5
        assert v.heading_deg == pytest.approx(13.0 * round(v.heading_deg / 13.0))  # the measured, not nominal, heading
    assert abs(cap.final_error_deg) <= 7.5
    assert len(cap.turns) > 24 and cap.summary()["corrections"] == len(cap.turns) - 24
    # headings are relative to the final (measured) body heading
    assert cap.headings_rad()[0] == pytest.approx(math.radians(-cap.final_error_deg), abs=1e-6)


def test_overshoot_on_return_is_turned_back():
    # the very last turn slips far (30° instead of 15°): the machine turns back once
    def yaw(i, a):
        if i == 23:
            return 30.0
        return 15.0 if a == TURN_LEFT else -15.0

    cap = PanoramaCapture()
    log, heading = run(cap, yaw)
    assert log[-1] == ("turn", TURN_RIGHT)
    assert heading == pytest.approx(360.0)


def test_correction_budget_bounds_the_turns():
    # a robot that barely turns: the machine gives up after the budget instead of looping forever
    cap = PanoramaCapture(views=12, max_corrections=3)
    log, _ = run(cap, lambda i, a: 1.0)
    assert len(cap.turns) == 27 and len(cap.captured) == 12 and cap.done


def test_turn_result_sources():
    assert TurnResult.from_values(TURN_LEFT, {"yaw_imu_deg": "14.2", "yaw_odom_deg": "15.1"}).source == "imu"
    r = TurnResult.from_values(TURN_LEFT, {"yaw_imu_deg": "", "yaw_odom_deg": "15.1"})
    assert (r.source, r.yaw_deg) == ("odom", 15.1)
    r = TurnResult.from_values(TURN_RIGHT, {"outcome": "ok"})
    assert (r.source, r.yaw_deg) == ("nominal", -15.0)
    r = TurnResult.from_values(TURN_RIGHT, {"outcome": "timeout"})
    assert r.yaw_deg == 0.0
    with pytest.raises(PanoramaError):
        TurnResult.from_values("MOVE_FORWARD", {})


def test_invalid_configurations():
    assert valid_view_counts() == (1, 2, 3, 4, 6, 8, 12, 24)
    with pytest.raises(PanoramaError, match="views=5"):
        PanoramaCapture(views=5)
    with pytest.raises(PanoramaError, match="direction"):
        PanoramaCapture(direction="up")
    cap = PanoramaCapture(views=1)
    cap.next_step()
    cap.add_view()
    with pytest.raises(PanoramaError):
        cap.add_view()


def test_timing():
    t = [0.0]

    def clock():
        t[0] += 0.5
        return t[0]

    cap = PanoramaCapture(views=2, clock=clock)
    run(cap, lambda i, a: 15.0)
    assert cap.duration_s > 0 and cap.t_views_done is not None and cap.t_end >= cap.t_views_done


def test_heading_source_preference():
    vals = {"outcome": "slip", "yaw_imu_deg": "3.0", "yaw_odom_deg": "14.0"}
    assert TurnResult.from_values(TURN_LEFT, vals).yaw_deg == 3.0
    r = TurnResult.from_values(TURN_LEFT, vals, prefer="odom")
    assert (r.yaw_deg, r.source) == (14.0, "odom")
    assert TurnResult.from_values(TURN_LEFT, {"yaw_imu_deg": "3.0"}, prefer="odom").source == "imu"
    with pytest.raises(PanoramaError, match="heading source"):
        TurnResult.from_values(TURN_LEFT, vals, prefer="gps")
