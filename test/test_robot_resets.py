"""A Go2 that reboots mid-trial, the on-disk e-stop latch and sources pinned at start, without ROS.

The reboot case as filed: the robot walked ~0.60 m, rebooted (odometry back at 0) and walked on;
the trial's path came out 1.21 m for about 1.09 m walked, the jump joined into the path.
"""

from __future__ import annotations

import json

import pytest

from havln_robot import actions as A
from havln_robot.motion.sources import Publisher, SourcePins
from havln_robot.records import ActionResult
from havln_robot.robot.adapter import DriverCore
from havln_robot.robot.latch import EstopLatch, default_latch_path
from havln_robot.robot.resets import ResetDetector
from havln_robot.trials.metrics import path_length
from havln_robot.trials.session import SessionConfig, TrialMeta, TrialSession
from havln_robot.trials.store import TrialStore

META = {"region": "kitchen", "instance": "", "operator": "ci", "people_present": 0, "goal_radius": 3.0}


# --- reset detection ---------------------------------------------------------------------------
def test_jump_to_origin_while_streaming_is_a_reset():
    d = ResetDetector()
    assert d.update(0.00, 0.58, 0.0) is None
    assert d.update(0.01, 0.60, 0.0) is None
    why = d.update(0.02, 0.0, 0.0)
    assert why is not None and "jumped to the origin from (0.60, 0.00)" in why


def test_state_back_at_the_origin_after_silence_is_a_reset():
    """Killed mid-step and back 4 s later: a Go2 could walk 15 m in 4 s, so walking alone cannot
    judge it; coming back at the origin does."""
    d = ResetDetector(silence_s=0.5)
    d.update(0.0, 0.60, 0.0)
    why = d.update(4.0, 0.0, 0.0)
    assert why is not None and "4.0 s of silence" in why


def test_robot_clock_going_back_is_a_reset():
    d = ResetDetector()
    d.update(0.0, 0.0, 0.0, stamp_s=5000.0)
    assert "stamp went back" in (d.update(0.01, 0.0, 0.0, stamp_s=12.0) or "")


@pytest.mark.parametrize("path", [[(0.0, 0.0), (0.01, 0.0), (0.02, 0.0)], [(0.1, 0.0), (0.05, 0.0), (0.0, 0.0)]])
def test_walking_and_standing_near_the_origin_are_not_resets(path):
    d = ResetDetector()
    assert all(d.update(0.01 * i, x, y) is None for i, (x, y) in enumerate(path))


def test_core_holds_after_a_reset_until_resume():
    core = DriverCore(cmd_timeout_s=0.3)
    core.on_state(0.0, 1)
    assert core.on_cmd_vel(0.0, 0.3, 0.0, 0.0) is None
    core.on_result(core.tick(0.0)[-1], 0, 0.0)
    core.reset_detected("robot reset: test")
    assert [c.name for c in core.tick(0.01)] == ["StopMove"]
    core.on_state(0.02, 1)
    assert "robot reset: test" in (core.on_cmd_vel(0.02, 0.3, 0.0, 0.0) or "")
    assert core.resume()
    assert core.on_cmd_vel(0.03, 0.3, 0.0, 0.0) is None


# --- the trial: marked, path not joined ----------------------------------------------------------
def test_trial_marked_and_path_not_joined_across_the_reboot(tmp_path):
    store = TrialStore(tmp_path / "t.db")
    s = TrialSession(store, SessionConfig(auto_start=True, auto_end=True, auto_judge=True), lambda: TrialMeta(META, "sim"))
    s.on_odom((0.0, 0.0, 0.0))
    s.on_instruction("walk to the door")
    for x in (0.25, 0.50, 0.60):
        s.on_result(ActionResult(1, A.MOVE_FORWARD, "ok", x=x, y=0.0, yaw_deg=0.0), 1.0)
    s.on_robot_reset("robot reset: odometry jumped to the origin from (0.60, 0.00) m in 4.00 s")
    for x in (0.0, 0.24, 0.49):  # the aborted step ends in the new frame; then two more steps
        s.on_result(ActionResult(1, A.MOVE_FORWARD, "ok" if x else "aborted", x=x, y=0.0, yaw_deg=0.0), 2.0)
    trial = store.trial(s.trial.id)
    steps = store.steps(trial.id)
    assert "robot_reset" in steps[3].result and "robot_reset" not in steps[4].result
    assert "robot_reset: robot reset: odometry jumped" in trial.notes
    assert path_length(trial, steps) == pytest.approx(0.60 + 0.49, abs=1e-6)  # not 0.60 + 0.60 + 0.49
    store.close()


# --- the latch file ----------------------------------------------------------------------------
def test_latch_file_round_trip_and_default_place(tmp_path):
    latch = EstopLatch(tmp_path / "a" / "go2.json", "go2-A")
    assert not latch.is_set() and latch.read() is None
    latch.set("go2/estop (Damp)")
    assert json.loads((tmp_path / "a" / "go2.json").read_text())["reason"] == "go2/estop (Damp)"
    assert EstopLatch(tmp_path / "a" / "go2.json", "go2-A").is_set()  # a new process finds it
    latch.clear()
    latch.clear()
    assert not latch.is_set()
    p = default_latch_path("go2@eth0/dds0")
    assert p.parent.name == "estop" and p.name == "go2_eth0_dds0.json" and "state" in str(p)
    (tmp_path / "bad.json").write_text("{not json")
    assert "damaged" in EstopLatch(tmp_path / "bad.json", "x").read()["reason"]  # still latched: fail safe


def test_core_started_latched_sends_nothing_that_stands_or_moves():
    core = DriverCore(estopped=True, estop_reason="go2/estop (Damp)")
    core.on_state(0.0, 7)
    assert "e-stop latched (go2/estop (Damp))" in core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    assert all(core.tick(0.02 * k) == [] for k in range(50))


def test_core_latches_when_the_robot_reports_damping_but_not_while_recovering():
    core = DriverCore()
    core.on_state(0.0, 7)
    assert core.estopped and core.take_new_latch() == "robot reported damping (mode 7)" and core.take_new_latch() is None
    core.recover()
    core.on_state(0.1, 7)  # StandUp not executed yet
    assert not core.estopped
    core.on_state(0.2, 6)
    core.on_state(0.3, 7)  # damped again (the remote's Damp)
    assert core.estopped


# --- sources pinned at start ---------------------------------------------------------------------
def test_pins_bind_the_first_publisher_refuse_a_second_and_name_both():
    pins = SourcePins()
    pins.watch("/odom")
    a, b = Publisher("aa" * 8, "/go2_driver_node"), Publisher("bb" * 8, "/go2_driver_node")
    assert pins.update("/odom", [a]) is None and pins.refused("/odom") is None
    line = pins.update("/odom", [a, b])
    assert (
        line
        == "/odom: second publisher /go2_driver_node [gid bbbbbbbb] besides /go2_driver_node [gid aaaaaaaa] (bound at start); messages refused, robot stopped"
    )
    assert pins.refused("/odom") == line and pins.update("/odom", [a, b]) is None  # one line per conflict
    assert pins.update("/odom", [a]) is None and pins.refused("/odom") is None  # the other stack left
    assert pins.update("/odom", [b]) is None  # same node name: a respawn of the bound driver
    c = Publisher("cc" * 8, "/sim_node")
    assert "replaced" in (pins.update("/odom", [c]) or "")
    assert pins.refused("/clock") is None  # not watched
