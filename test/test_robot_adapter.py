"""Pure tests of the Go2 driver core (no ROS, no DDS): clamping, watchdogs, BalanceStand, e-stop,
state conversion, the fake Go2's kinematic model, and the go2_driver_node section of config/go2.yaml."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from havln_robot.config import load_profile, read_yaml
from havln_robot.geometry import quat_to_yaw, rpy_to_quat
from havln_robot.params import ConfigError
from havln_robot.paths import config_dir
from havln_robot.robot.adapter import (
    BALANCE,
    DAMP,
    ERROR,
    MOVE,
    OK,
    STAND_UP,
    STOP,
    DriverCore,
    Limits,
    SdkCall,
    clamp_command,
    imu_fields,
    odom_fields,
    unitree_quat_to_ros,
)
from havln_robot.robot.fake_go2 import FakeGo2Model
from havln_robot.robot.params import GO2_DRIVER_PARAMS


def run(core: DriverCore, t: float, codes: dict[str, int] | None = None) -> list[SdkCall]:
    """Tick the core like the shell does: issue calls in order until one fails."""
    issued = []
    for c in core.tick(t):
        code = (codes or {}).get(c.name, 0)
        core.on_result(c, code, t)
        issued.append(c)
        if code:
            break
    return issued


def names(calls: list[SdkCall]) -> list[str]:
    return [c.name for c in calls]


def ready_core(**kw) -> DriverCore:
    core = DriverCore(**kw)
    core.on_state(0.0, 1)
    return core


# --- clamping -----------------------------------------------------------------------------------
def test_clamp_to_indoor_limits_and_go2_range():
    lim = Limits(max_forward=0.5, max_backward=0.3, max_lateral=0.2, max_yaw_rate=1.0)
    assert clamp_command(2.0, -1.0, -9.0, lim) == (0.5, -0.2, -1.0)
    assert clamp_command(-2.0, 0.1, 0.5, lim) == (-0.3, 0.1, 0.5)
    wide = Limits(max_forward=10.0, max_backward=10.0, max_lateral=10.0, max_yaw_rate=10.0)  # beyond the Go2
    assert clamp_command(9.0, 9.0, 9.0, wide) == (3.8, 1.0, 4.0)
    assert clamp_command(-9.0, -9.0, -9.0, wide) == (-2.5, -1.0, -4.0)


def test_nonfinite_command_is_refused_with_field_name():
    with pytest.raises(ValueError, match="angular.z"):
        clamp_command(0.1, 0.0, math.nan, Limits())
    core = ready_core()
    why = core.on_cmd_vel(0.01, math.inf, 0.0, 0.0)
    assert why is not None and "linear.x" in why
    assert names(run(core, 0.02)) == []


# --- command flow ---------------------------------------------------------------------------------
def test_balance_stand_precedes_first_move_then_move_every_tick():
    core = ready_core()
    assert core.on_cmd_vel(0.0, 0.3, 0.0, 0.1) is None
    assert names(run(core, 0.0)) == [BALANCE, MOVE]
    assert run(core, 0.0)[-1].args == (0.3, 0.0, 0.1)
    for k in range(1, 10):  # still commanded (cmd_vel every 0.1 s): Move again on every tick, no BalanceStand
        t = k * 0.02
        if k % 5 == 0:
            core.on_cmd_vel(t, 0.3, 0.0, 0.1)
        assert names(run(core, t)) == [MOVE]


def test_failed_balance_stand_blocks_move_and_is_retried():
    core = ready_core()
    core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    assert names(run(core, 0.0, {BALANCE: 3104})) == [BALANCE]  # failed: Move not issued
    assert names(run(core, 0.02)) == [BALANCE, MOVE]


def test_rebalance_when_robot_leaves_move_modes_while_idle():
    core = ready_core()
    core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    run(core, 0.0)
    core.on_cmd_vel(0.1, 0.0, 0.0, 0.0)
    assert names(run(core, 0.1)) == [STOP]
    core.on_state(0.2, 5)  # someone made it lie down (mode 5)
    core.on_state(1.0, 5)
    core.on_cmd_vel(1.0, 0.3, 0.0, 0.0)
    assert names(run(core, 1.0)) == [BALANCE, MOVE]


def test_zero_command_sends_one_stopmove():
    core = ready_core()
    core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    run(core, 0.0)
    core.on_cmd_vel(0.05, 0.0, 0.0, 0.0)
    assert names(run(core, 0.06)) == [STOP]
    core.on_cmd_vel(0.1, 0.0, 0.0, 0.0)
    assert names(run(core, 0.12)) == []
    assert not core.moving


def test_failed_stopmove_is_retried():
    core = ready_core()
    core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    run(core, 0.0)
    core.on_cmd_vel(0.05, 0.0, 0.0, 0.0)
    assert names(run(core, 0.06, {STOP: 3102})) == [STOP]
    assert names(run(core, 0.08)) == []  # backing off (retry_backoff_initial_s 0.1)
    assert names(run(core, 0.17)) == [STOP]
    assert names(run(core, 0.19)) == []


def test_cmd_vel_watchdog():
    core = ready_core(cmd_timeout_s=0.3)
    core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    ticks = {}
    for k in range(0, 30):
        t = k * 0.02
        core.on_state(t, 3)
        ticks[round(t, 2)] = names(run(core, t))
    assert ticks[0.3] == [MOVE]  # 0.3 s: not yet more than the timeout
    assert ticks[0.32] == [STOP]
    assert all(v == [] for k, v in ticks.items() if k > 0.32)
    assert core.counters.watchdog_stops == 1


def test_state_loss_stops_faults_and_refuses_until_state_returns():
    core = ready_core(state_timeout_s=0.5)
    core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    run(core, 0.0)
    for t in (0.1, 0.2, 0.3, 0.4):
        core.on_cmd_vel(t, 0.3, 0.0, 0.0)
        assert names(run(core, t)) == [MOVE]
    assert names(run(core, 0.51)) == [STOP]
    assert "sportmodestate" in core.take_new_fault()
    assert core.take_new_fault() is None  # reported once
    assert core.on_cmd_vel(0.6, 0.3, 0.0, 0.0) is not None
    assert names(run(core, 0.6)) == []
    assert core.status(0.6)[0] == ERROR
    core.on_state(1.0, 1)  # state back: fault cleared, but the old command is not resumed
    assert core.fault is None and names(run(core, 1.0)) == []
    core.on_cmd_vel(1.1, 0.3, 0.0, 0.0)
    assert names(run(core, 1.1)) == [BALANCE, MOVE]
    assert core.status(1.1)[0] == OK


def test_no_motion_before_first_state():
    core = DriverCore()
    assert "no sportmodestate" in core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    assert names(run(core, 0.0)) == []


def test_estop_latch_damp_retry_and_recover():
    core = ready_core()
    core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    run(core, 0.0)
    call = core.estop()
    assert call.name == DAMP
    core.on_result(call, 3104, 0.01)  # Damp timed out: the control loop retries it after a backoff
    assert names(run(core, 0.02)) == []
    assert names(run(core, 0.12, {DAMP: 0})) == [DAMP]
    assert names(run(core, 0.14)) == []
    assert "e-stop" in core.on_cmd_vel(0.15, 0.3, 0.0, 0.0)
    assert names(run(core, 0.16)) == []
    assert core.status(0.16)[0] == ERROR
    call = core.recover()
    assert call.name == STAND_UP
    core.on_result(call, 0, 0.2)
    core.on_state(0.2, 1)
    core.on_cmd_vel(0.2, 0.3, 0.0, 0.0)
    assert names(run(core, 0.2)) == [BALANCE, MOVE]


def test_retries_back_off_and_are_bounded_on_an_unreachable_robot():
    """State lost and every call failing -> StopMove and Damp are retried with a
    doubling wait and at most max_call_retries times, over 10 minutes of ticks at 50 Hz."""
    core = ready_core(retry_backoff_initial_s=0.1, retry_backoff_max_s=2.0, max_call_retries=20)
    core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    run(core, 0.0)
    issued = []
    t = 0.02
    while t < 600.0:  # state silent from here on (the robot is unreachable)
        issued += run(core, t, {STOP: 3104, DAMP: 3104, MOVE: 3102})
        if abs(t - 300.0) < 0.01:
            core.on_result(core.estop(), 3104, t)
        t += 0.02
    stops = [c for c in issued if c.name == STOP]
    damps = [c for c in issued if c.name == DAMP]
    assert len(stops) == 20 and len(damps) == 19  # bounded (the e-stop's own Damp is the 20th)
    gave_up = core.take_gave_up()
    assert len(gave_up) == 2 and all("not retried" in g for g in gave_up)
    core.on_state(601.0, 1)  # the robot answers again: a later failure may be retried
    assert not core._failures


def test_motion_call_in_flight_during_estop_is_followed_by_damp():
    """A StopMove / Move that returns after the e-stop latched (it was blocked in the SDK) is
    followed by another Damp, so Damp is always the last call the robot gets."""
    core = ready_core()
    core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    calls = core.tick(0.0)
    assert names(calls) == [BALANCE, MOVE]
    core.on_result(core.estop(), 0, 0.01)  # Damp went out while BalanceStand was blocked
    core.on_result(calls[0], 3104, 0.5)  # the blocked BalanceStand returns late
    assert names(run(core, 0.52)) == [DAMP]


def test_shutdown_refuses_motion():
    core = ready_core()
    core.on_cmd_vel(0.0, 0.3, 0.0, 0.0)
    run(core, 0.0)
    assert core.shutdown().name == STOP
    assert core.on_cmd_vel(0.01, 0.3, 0.0, 0.0) is not None
    assert names(run(core, 0.02)) == []


# --- state conversion ---------------------------------------------------------------------------
def _state(yaw: float, vel=(0.0, 0.0, 0.0), pos=(1.0, 2.0, 0.3), roll=0.0, pitch=0.0):
    x, y, z, w = rpy_to_quat(roll, pitch, yaw)
    imu = SimpleNamespace(quaternion=[w, x, y, z], gyroscope=[0.01, 0.02, 0.5], accelerometer=[0.1, 0.0, 9.8])
    return SimpleNamespace(position=list(pos), velocity=list(vel), imu_state=imu, mode=1)


def test_unitree_quaternion_is_wxyz():
    q, ok = unitree_quat_to_ros([math.cos(0.5), 0.0, 0.0, math.sin(0.5)])  # yaw 1.0 rad, w first
    assert ok and quat_to_yaw(*q) == pytest.approx(1.0)
    assert unitree_quat_to_ros([0, 0, 0, 0]) == ((0.0, 0.0, 0.0, 1.0), False)
    q, ok = unitree_quat_to_ros([2.0, 0.0, 0.0, 0.0])
    assert q == (0.0, 0.0, 0.0, 1.0) and ok


def test_odom_fields_rotate_odom_frame_velocity_into_base_link():
    st = _state(math.pi / 2, vel=(0.0, 0.4, 0.0))  # facing +y, moving +y in odom = forward in the body
    od = odom_fields(st, "odom")
    assert od.position == (1.0, 2.0, pytest.approx(0.3))
    assert od.linear[0] == pytest.approx(0.4) and od.linear[1] == pytest.approx(0.0, abs=1e-6)
    assert quat_to_yaw(*od.orientation) == pytest.approx(math.pi / 2)
    assert od.angular == (0.01, 0.02, 0.5)
    assert odom_fields(st, "body").linear == (0.0, 0.4, 0.0)
    with pytest.raises(ValueError, match="velocity_frame"):
        odom_fields(st, "map")


def test_imu_fields():
    st = _state(0.3, roll=0.1, pitch=-0.2)
    im = imu_fields(st)
    assert im.valid_orientation
    assert im.angular_velocity == (0.01, 0.02, 0.5) and im.linear_acceleration == (0.1, 0.0, 9.8)
    x, y, z, w = rpy_to_quat(0.1, -0.2, 0.3)
    assert im.orientation == pytest.approx((x, y, z, w))


# --- fake Go2 model -------------------------------------------------------------------------------
def test_fake_model_ignores_move_until_balance_stand_and_holds_one_second():
    m = FakeGo2Model()
    m.step(0.0)
    assert not m.handle("Move", {"x": 0.5, "y": 0.0, "z": 0.0}, 0.0)  # mode 6 after StandUp: ignored
    m.step(1.0)
    assert m.x == 0.0
    assert m.handle("BalanceStand", {}, 1.0) and m.mode == 1
    assert m.handle("Move", {"x": 0.5, "y": 0.0, "z": 0.0}, 1.0) and m.mode == 3
    m.step(3.0)  # no further Move: executes for the 1 s hold only
    assert m.x == pytest.approx(0.5) and m.mode == 1 and m.velocity() == (0.0, 0.0, 0.0)


def test_fake_model_arc_stop_and_damp():
    m = FakeGo2Model(mode=1)
    m.step(0.0)
    m.handle("Move", {"x": 0.0, "y": 0.0, "z": 1.0}, 0.0)
    m.step(0.5)
    assert m.yaw == pytest.approx(0.5)
    m.handle("Move", {"x": 0.5, "y": 0.0, "z": math.pi / 2}, 0.5)
    m.step(1.5)  # quarter circle of radius 0.5/(pi/2)
    r = 0.5 / (math.pi / 2)
    assert m.yaw == pytest.approx(0.5 + math.pi / 2)
    assert math.hypot(m.x, m.y) == pytest.approx(math.sqrt(2) * r, rel=1e-6)
    m.handle("StopMove", {}, 1.5)
    m.step(2.0)
    assert m.velocity() == (0.0, 0.0, 0.0)
    m.handle("Damp", {}, 2.0)
    assert not m.handle("BalanceStand", {}, 2.1) and m.mode == 7
    assert not m.handle("Move", {"x": 0.3, "y": 0.0, "z": 0.0}, 2.2)


# --- parameters / profile ---------------------------------------------------------------------------
def test_go2_profile_section_is_valid_and_uses_the_robot_network():
    path = config_dir() / "go2.yaml"
    p = load_profile(path).nodes["go2_driver_node"]
    assert p["network_interface"] != "lo" and p["dds_domain_id"] == 0
    assert p["command_rate_hz"] >= 20.0 and p["cmd_timeout_s"] <= 0.3 and p["state_timeout_s"] <= 0.5
    written = set(read_yaml(path)["/**/go2_driver_node"]["ros__parameters"])  # namespace-proof key
    assert {q.name for q in GO2_DRIVER_PARAMS.params} - written == set(), "every tunable is written in config/go2.yaml"


def test_bad_limits_are_refused_with_the_key_name():
    with pytest.raises(ConfigError, match="max_forward_speed"):
        GO2_DRIVER_PARAMS.validate({"max_forward_speed": 5.0})
    with pytest.raises(ConfigError, match="command_rate_hz"):
        GO2_DRIVER_PARAMS.validate({"command_rate_hz": 10.0})


@pytest.mark.parametrize(
    "where,field,odom_bad,imu_bad",
    [
        ("position", "position[0] = nan", True, False),
        ("velocity", "velocity[1] = inf", True, False),
        ("gyroscope", "imu_state.gyroscope[2] = nan", True, True),
        ("quaternion", "imu_state.quaternion[3] = nan", True, True),
        ("accelerometer", "imu_state.accelerometer[0] = nan", False, True),
    ],
)
def test_non_finite_state_values_are_named_not_passed_on(where, field, odom_bad, imu_bad):
    """go2_driver refused non-finite cmd_vel but passed non-finite SportModeState_ position / gyroscope
    values into odom / imu. The conversion names the first non-finite field; the driver does not
    publish such a sample (see go2_driver_node._publish_state)."""
    s = _state(0.3)
    value = math.inf if where == "velocity" else math.nan
    target = {"position": s.position, "velocity": s.velocity}.get(where) or getattr(s.imu_state, where)
    target[{"position": 0, "velocity": 1, "gyroscope": 2, "quaternion": 3, "accelerometer": 0}[where]] = value
    od, im = odom_fields(s), imu_fields(s)
    assert (od.problem == field) is odom_bad and (od.problem == "") is not odom_bad, od.problem
    assert (im.problem == field) is imu_bad and (im.problem == "") is not imu_bad, im.problem
    ok = _state(0.3)
    assert odom_fields(ok).problem == "" and imu_fields(ok).problem == ""
