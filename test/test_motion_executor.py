"""Closed-loop behaviour of the motion executor on a simulated legged base with actuation
latency, acceleration limits, gyro bias + noise and odometry scale drift."""

from __future__ import annotations

import math
import random
from collections import deque

import numpy as np
import pytest

from havln_robot import actions as A
from havln_robot.geometry import to_local
from havln_robot.motion.checks import GyroYaw
from havln_robot.motion.executor import Executor, MotionConfig, min_duration
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.motion.safety import Obstacles, Person


class Plant:
    """Unicycle base: commands act after ``latency`` s, acceleration limited, noisy sensors.

    Odometry integrates the true velocity with a scale error (drift); the gyro reads the true yaw
    rate + a constant bias + white noise. ``wall_x``: the body cannot pass x = wall_x (world);
    ``odom_yaw_gain``: odometry yaw sees this fraction of the true rotation (0 = slipping feet).
    """

    def __init__(self, seed=0, latency=0.05, gyro_bias=0.01, gyro_noise=0.02, odom_scale=0.02, a_lin=1.5, a_ang=6.0, dt=0.005):
        self.rng = random.Random(seed)
        self.x = self.y = self.th = self.v = self.w = 0.0
        self.ox = self.oy = self.oth = 0.0
        self.q: deque = deque()
        self.cmd = (0.0, 0.0)
        self.t = 0.0
        self.latency, self.a_lin, self.a_ang, self.dt = latency, a_lin, a_ang, dt
        self.bias, self.noise, self.scale = gyro_bias, gyro_noise, 1.0 + odom_scale
        self.wall_x = None
        self.odom_yaw_gain = 1.0
        self.person = None  # world (x, y)

    def command(self, cmd):
        self.q.append((self.t + self.latency, cmd))

    def step(self):
        while self.q and self.q[0][0] <= self.t + 1e-12:
            self.cmd = self.q.popleft()[1]
        self.v += max(-self.a_lin * self.dt, min(self.a_lin * self.dt, self.cmd[0] - self.v))
        self.w += max(-self.a_ang * self.dt, min(self.a_ang * self.dt, self.cmd[1] - self.w))
        nx = self.x + self.v * math.cos(self.th) * self.dt
        moved = self.v * self.dt
        if self.wall_x is not None and nx + 0.35 > self.wall_x:
            moved, self.v = 0.0, 0.0  # body pressed against the wall, legs still "walk"
            nx = self.x
        self.y += moved * math.sin(self.th)
        self.x = nx
        self.th += self.w * self.dt
        d = (self.v if moved else self.cmd[0] * 0.0) * self.dt * self.scale
        self.ox += d * math.cos(self.oth)
        self.oy += d * math.sin(self.oth)
        self.oth += self.w * self.dt * self.scale * self.odom_yaw_gain
        self.t += self.dt

    def gyro(self):
        return self.w + self.bias + self.rng.gauss(0.0, self.noise)

    def odom(self):
        return (self.ox, self.oy, self.oth)

    def obstacles(self):
        people = []
        if self.person is not None:
            lx, ly = to_local(self.x, self.y, self.th, *self.person)
            people.append(Person(lx, ly, 7))
        return Obstacles(points=np.zeros((0, 2), np.float32), people=people)


def drive(ex: Executor, plant: Plant, action: str, rate=50.0, hook=None, max_t=15.0, idle_s=2.0, sensor_delay=0.0, jitter=0.0, gyro=None):
    """Run one action to its end; returns (results, collisions, true displacement (dx, dy, dyaw) in the start frame).

    ``sensor_delay``: odometry and gyro reach the executor this late (s), stamped with their true
    time; ``jitter``: control ticks come up to this much late (s, uniform); ``gyro``: a GyroYaw kept
    across actions (default: a fresh one per action)."""
    g = gyro if gyro is not None else GyroYaw(2.0)
    for _ in range(int(idle_s / plant.dt)):
        plant.step()
        g.add(plant.t, plant.gyro(), stationary=True)
    x0, y0, th0 = plant.x, plant.y, plant.th
    tick = ex.start(action, plant.t, plant.odom(), g.yaw, plant.obstacles())
    plant.command(tick.cmd)
    results, cols = list(tick.results), list(tick.collisions)
    k = 0
    buf: deque = deque()
    rng = random.Random(plant.rng.random())
    next_tick = plant.t + 1.0 / rate
    t_end = plant.t + max_t
    while not results and plant.t < t_end:
        plant.step()
        g.add(plant.t, plant.gyro())
        buf.append((plant.t, plant.odom(), g.yaw))
        k += 1
        if hook is not None:
            hook(plant, k)
        if plant.t + 1e-9 >= next_tick:
            next_tick = plant.t + 1.0 / rate + rng.uniform(0.0, jitter)
            while len(buf) > 1 and buf[1][0] <= plant.t - sensor_delay + 1e-9:
                buf.popleft()
            ts, odom, yaw = buf[0]
            tick = ex.update(plant.t, odom, yaw, plant.obstacles(), odom_t=ts, imu_t=ts)
            plant.command(tick.cmd)
            results += tick.results
            cols += tick.collisions
    for _ in range(int(0.3 / plant.dt)):
        plant.step()
        g.add(plant.t, plant.gyro())
    lx, ly = to_local(x0, y0, th0, plant.x, plant.y)
    return results, cols, (lx, ly, plant.th - th0)


CFG = MotionConfig()


@pytest.mark.parametrize("seed", range(4))
def test_move_forward_reaches_025m_on_noisy_plant(seed):
    ex = Executor(CFG)
    results, cols, (dx, dy, dth) = drive(ex, Plant(seed), A.MOVE_FORWARD)
    (r,) = results
    assert r.outcome == "ok" and not cols
    assert abs(dx - 0.25) <= 0.02 and abs(dy) < 0.01
    assert abs(math.degrees(dth)) < 1.0
    assert r.duration_s <= 1.3 * CFG.min_duration(A.MOVE_FORWARD)
    assert abs(r.distance_odom_m - 0.25) <= CFG.pos_tol
    assert r.position_error_m <= CFG.pos_tol + 0.002


@pytest.mark.parametrize("action,sign", [(A.TURN_LEFT, 1.0), (A.TURN_RIGHT, -1.0)])
@pytest.mark.parametrize("seed", range(3))
def test_turns_reach_15deg_on_noisy_plant(action, sign, seed):
    ex = Executor(CFG)
    results, cols, (dx, dy, dth) = drive(ex, Plant(seed), action)
    (r,) = results
    assert r.outcome == "ok" and not cols
    assert abs(math.degrees(dth) - sign * 15.0) <= 1.0  # true yaw, REP 103: left = +yaw
    assert math.hypot(dx, dy) < 0.005
    assert r.duration_s <= 1.3 * CFG.min_duration(action)
    assert abs(r.yaw_imu_deg - sign * 15.0) <= math.degrees(CFG.yaw_tol) + 0.05
    assert abs(r.yaw_odom_deg - sign * 15.0) < 1.0


@pytest.mark.parametrize("action", [A.MOVE_FORWARD, A.TURN_LEFT])
def test_delayed_sensors_and_jittery_ticks_are_compensated(action):
    ex = Executor(CFG)
    results, _, (dx, dy, dth) = drive(ex, Plant(5), action, sensor_delay=0.08, jitter=0.03)
    (r,) = results
    assert r.outcome == "ok", r.detail
    if action == A.MOVE_FORWARD:
        assert abs(dx - 0.25) <= 0.02
    else:
        assert abs(math.degrees(dth) - 15.0) <= 1.0
    assert r.duration_s <= (1.5 if action == A.MOVE_FORWARD else 2.0) * CFG.min_duration(action)


def test_profile_respects_speed_and_accel_limits():
    cfg = MotionConfig(v_max=0.2, a_lin=0.4, require_depth=False)
    ex = Executor(cfg)
    p = Plant(0)
    cmds = []
    orig = p.command
    p.command = lambda c: (cmds.append(c), orig(c))
    drive(ex, p, A.MOVE_FORWARD)
    v = np.array([c[0] for c in cmds])
    assert v.max() <= 0.2 + 1e-9 and v.min() >= 0.0
    assert np.abs(np.diff(v)).max() <= 0.4 / 50.0 + 1e-6 + cfg.v_min  # creep step allowed at the very end
    assert v.max() > 0.19  # reaches cruise speed


def test_min_duration_trapezoid_and_triangle():
    assert min_duration(0.25, 0.3, 0.6) == pytest.approx(0.25 / 0.3 + 0.3 / 0.6)
    assert min_duration(math.radians(15), 0.9, 2.5) == pytest.approx(2 * math.sqrt(math.radians(15) / 2.5))
    with pytest.raises(ValueError):
        min_duration(1.0, 0.0, 1.0)


def test_config_from_param_defaults_matches_dataclass_defaults():
    cfg = MotionConfig.from_params(MOTION_PARAMS.defaults())
    assert cfg == MotionConfig()


def test_look_virtual_pitch_and_limit():
    ex = Executor(MotionConfig(max_pitch=math.radians(60)))
    outs = [ex.start(A.LOOK_UP, 0.0, (0, 0, 0), 0.0).results[0] for _ in range(3)]
    assert [o.outcome for o in outs] == ["ok", "ok", "unsupported"]
    assert [round(o.pitch_deg) for o in outs] == [30, 60, 60]
    r = ex.start(A.LOOK_DOWN, 0.0, (0, 0, 0), 0.0).results[0]
    assert r.outcome == "ok" and round(r.pitch_deg) == 30
    assert not ex.busy


def test_look_unsupported_mode():
    ex = Executor(MotionConfig(look_mode="unsupported"))
    r = ex.start(A.LOOK_DOWN, 0.0, (0, 0, 0), 0.0).results[0]
    assert r.outcome == "unsupported" and r.pitch_deg == 0.0 and "camera tilt" in r.detail


def test_stop_preempts_running_action_and_holds_zero():
    ex = Executor(MotionConfig(require_depth=False))
    p = Plant(0)
    stopped = {}

    def hook(plant, k):
        if k == 100 and not stopped:  # 0.5 s into the move
            tick = ex.stop(plant.t)
            plant.command(tick.cmd)
            stopped["tick"] = tick

    results, _, (dx, _, _) = drive(ex, p, A.MOVE_FORWARD, hook=hook)
    tick = stopped["tick"]
    assert tick.cmd == (0.0, 0.0)
    assert [r.outcome for r in tick.results] == ["aborted", "ok"]
    assert [r.action for r in tick.results] == [A.MOVE_FORWARD, A.STOP]
    assert 0.0 < dx < 0.2
    assert ex.phase == "holding" and not ex.busy
    assert ex.update(p.t + 1.0, p.odom(), 0.0).cmd == (0.0, 0.0)


def test_busy_action_is_rejected_and_running_one_continues():
    ex = Executor(MotionConfig(require_depth=False))
    t0 = ex.start(A.MOVE_FORWARD, 0.0, (0, 0, 0), 0.0)
    assert not t0.results and ex.busy
    t1 = ex.start(A.TURN_LEFT, 0.02, (0, 0, 0), 0.0)
    assert t1.results[0].outcome == "rejected" and t1.results[0].action == A.TURN_LEFT
    assert "busy" in t1.results[0].detail
    assert ex.busy and ex.action == A.MOVE_FORWARD
    assert t1.results[0].seq == 2
    t2 = ex.start("FLY", 0.03, (0, 0, 0), 0.0)  # garbage while busy is rejected without touching the motion
    assert t2.results[0].outcome == "rejected" and t2.cmd == t0.cmd and ex.busy


def test_unknown_literal_and_missing_odometry_are_rejected():
    ex = Executor()
    r = ex.start("JUMP", 0.0, (0, 0, 0), 0.0).results[0]
    assert r.outcome == "rejected" and "unknown action" in r.detail
    r = ex.start(A.TURN_LEFT, 0.0, None, 0.0).results[0]
    assert r.outcome == "rejected" and "odometry" in r.detail


def test_forward_without_depth_is_refused_when_required():
    ex = Executor(MotionConfig(require_depth=True))
    r = ex.start(A.MOVE_FORWARD, 0.0, (0, 0, 0), 0.0, Obstacles(points=None)).results[0]
    assert r.outcome == "aborted" and "depth" in r.detail
    assert not ex.busy


def test_stall_against_wall_is_a_collision_and_reverts():
    ex = Executor(CFG)
    p = Plant(1, gyro_noise=0.005)
    p.wall_x = 0.35 + 0.10  # the nose meets an (unseen) wall after 0.10 m
    results, cols, (dx, dy, dth) = drive(ex, p, A.MOVE_FORWARD)
    (r,) = results
    assert r.outcome == "stall"
    assert r.reverted and abs(dx) < 0.02  # back at the pre-action pose
    (c,) = cols
    assert c.source == "stall" and c.type == "static" and c.motion_state == "moving" and c.action == A.MOVE_FORWARD
    assert c.contact and c.record()["contact"] == "true"  # a stall under command is physical evidence of a bump


def test_person_stepping_into_the_path_stops_and_reverts():
    ex = Executor(CFG)
    p = Plant(2)

    def hook(plant, k):
        if k == 80:  # 0.4 s into the move a person steps in 0.3 m ahead of the nose
            plant.person = (plant.x + 0.35 + 0.3, plant.y)
        if k == 200:
            plant.person = None  # and leaves again, so the revert path is free

    results, cols, (dx, dy, dth) = drive(ex, p, A.MOVE_FORWARD, hook=hook)
    (r,) = results
    assert r.outcome == "collision" and r.reverted
    assert abs(dx) < 0.02 and abs(math.degrees(dth)) < 1.0
    assert r.position_error_m < 0.02  # measured against the pre-action pose
    (c,) = cols
    assert c.type == "human" and c.human_id == 7 and c.source == "people" and c.motion_state == "moving"
    assert c.distance_m < CFG.personal_space
    assert c.contact  # 0.3 m from the nose is within a body radius (0.3 m) by the next tick: a real contact


def test_person_stepping_in_further_ahead_is_a_stop_short_not_a_contact():
    ex = Executor(CFG)
    p = Plant(2)

    def hook(plant, k):
        if k == 80:  # 0.4 s into the move a person steps in 0.6 m ahead of the nose
            plant.person = (plant.x + 0.35 + 0.6, plant.y)

    results, cols, (dx, _, _) = drive(ex, p, A.MOVE_FORWARD, hook=hook)
    (r,) = results
    assert r.outcome == "collision" and "personal space" in r.detail
    (c,) = cols
    assert c.type == "human" and c.motion_state == "moving" and c.distance_m > CFG.person_radius
    assert not c.contact and c.record()["contact"] == "false"  # stopped short: not a collision of the trial


def test_person_ahead_blocks_start():
    ex = Executor(CFG)
    p = Plant(0)
    p.person = (0.35 + 0.25 + 0.3, 0.0)
    results, cols, (dx, _, _) = drive(ex, p, A.MOVE_FORWARD)
    assert results[0].outcome == "collision" and not results[0].reverted
    assert "blocked before start" in results[0].detail
    assert cols[0].motion_state == "blocked" and cols[0].type == "human" and not cols[0].contact
    assert abs(dx) < 1e-6


def test_revert_after_turn_collision_returns_to_start_yaw():
    ex = Executor(CFG)
    p = Plant(3)

    def hook(plant, k):
        if k == 60:  # a person walks into the robot's side during the turn
            plant.person = (plant.x, plant.y - 0.155 - 0.2)
        if k == 160:
            plant.person = None

    results, cols, (dx, dy, dth) = drive(ex, p, A.TURN_LEFT, hook=hook)
    (r,) = results
    assert r.outcome == "collision" and r.reverted
    assert abs(math.degrees(dth)) < 1.0
    assert cols[0].motion_state == "turning" and cols[0].type == "human" and cols[0].contact  # the person touched the side


def test_slip_when_odometry_yaw_disagrees_with_gyro():
    ex = Executor(CFG)
    p = Plant(0)
    p.odom_yaw_gain = 0.0  # odometry sees no rotation: feet slipping / estimator fault
    results, cols, _ = drive(ex, p, A.TURN_RIGHT)
    (r,) = results
    assert r.outcome == "slip" and "disagree" in r.detail
    assert abs(r.yaw_imu_deg) >= math.degrees(CFG.slip_rad) - 0.5


def test_sensor_silence_while_moving_aborts_with_zero_command():
    ex = Executor(MotionConfig(require_depth=False))
    ex.start(A.MOVE_FORWARD, 0.0, (0, 0, 0), 0.0)
    tick = ex.update(0.02, (0.0, 0, 0), 0.0, odom_t=0.02, imu_t=0.02)
    assert tick.cmd[0] > 0
    tick = ex.update(0.5, (0.01, 0, 0), 0.0, odom_t=0.1, imu_t=0.5)
    assert tick.cmd == (0.0, 0.0)
    (r,) = tick.results
    assert r.outcome == "aborted" and "odom silent" in r.detail


def test_jolt_is_a_collision():
    ex = Executor(MotionConfig(require_depth=False))
    ex.start(A.MOVE_FORWARD, 0.0, (0, 0, 0), 0.0)
    tick = ex.update(0.02, (0.0, 0, 0), 0.0, accel=(3.0, 1.0))
    assert not tick.collisions
    tick = ex.update(0.04, (0.001, 0, 0), 0.0, accel=(-25.0, 2.0))
    assert tick.cmd == (0.0, 0.0)
    (c,) = tick.collisions
    assert c.source == "jolt" and c.type == "static" and c.contact


def test_result_records_have_contract_keys():
    from havln_robot.records import SCHEMA_KEY
    from havln_robot.topics import ACTION_RESULT_KEYS, COLLISION_KEYS

    ex = Executor(CFG)
    p = Plant(0)
    p.person = (0.9, 0.0)
    results, cols, _ = drive(ex, p, A.MOVE_FORWARD)
    assert tuple(results[0].to_values()) == (*ACTION_RESULT_KEYS, SCHEMA_KEY)
    assert results[0].to_values()["reverted"] == "false"
    assert tuple(cols[0].to_values()) == (*COLLISION_KEYS, SCHEMA_KEY)


@pytest.mark.parametrize("chain_deg", [2.0, 0.0])
def test_24_turns_close_the_circle_when_headings_are_chained(chain_deg):
    """A panorama's 24 TURN_LEFTs: with the heading chain each turn aims from where the previous one
    was meant to end, so the IMU-measured total stays within one turn's tolerance of 360 deg."""
    cfg = MotionConfig(chain_heading=math.radians(chain_deg))
    ex, p, g = Executor(cfg), Plant(5, gyro_noise=0.005), GyroYaw(2.0)
    th0, total_imu = p.th, 0.0
    for _ in range(24):
        results, cols, _ = drive(ex, p, A.TURN_LEFT, gyro=g, idle_s=0.4)
        (r,) = results
        assert r.outcome == "ok" and not cols
        total_imu += r.yaw_imu_deg
    err_true = math.degrees(p.th - th0) - 360.0
    if chain_deg:
        assert abs(total_imu - 360.0) <= math.degrees(cfg.yaw_tol) + 0.05, total_imu
        assert abs(err_true) < 1.0, err_true
    else:  # without it the per-turn residuals add up (the figure that motivated the chain)
        assert abs(total_imu - 360.0) > math.degrees(cfg.yaw_tol), total_imu


def test_the_heading_chain_ends_at_stop_and_after_a_pause():
    ex, p, g = Executor(CFG), Plant(1, gyro_noise=0.005), GyroYaw(2.0)
    (r,), _, _ = drive(ex, p, A.TURN_LEFT, gyro=g, idle_s=0.4)
    assert r.outcome == "ok" and ex._nominal_yaw is not None
    ex.stop(p.t)  # end of an episode: the next one starts fresh
    assert ex._nominal_yaw is None
    drive(ex, p, A.TURN_LEFT, gyro=g, idle_s=0.4)
    assert ex._nominal_yaw is not None
    (r,), _, _ = drive(ex, p, A.TURN_LEFT, gyro=g, idle_s=12.0)  # longer than CHAIN_MAX_AGE_S
    assert abs(r.yaw_imu_deg - 15.0) <= math.degrees(CFG.yaw_tol) + 0.05 and abs(r.yaw_error_deg) <= math.degrees(CFG.yaw_tol) + 0.05


class FrozenSensorsPlant(Plant):
    """Odometry and gyro keep publishing (fresh stamps) but freeze once the body has moved ``at_m``."""

    def __init__(self, at_m, **kw):
        super().__init__(**kw)
        self.at_m, self.frozen_odom = at_m, None

    def odom(self):
        if self.frozen_odom is None and self.ox >= self.at_m:
            self.frozen_odom = (self.ox, self.oy, self.oth)
        return self.frozen_odom or super().odom()

    def gyro(self):
        return 0.0 if self.frozen_odom is not None else super().gyro()


def test_frozen_sensors_never_revert_blind_past_the_start():
    """Sensors freeze 0.10 m into MOVE_FORWARD; stall, then the revert. It used to
    drive back blind at v_rev_max until the revert deadline (~0.6 m behind the start); the revert
    is now bounded by the verified progress (0.10 m) and needs live progress feedback."""
    ex = Executor(MotionConfig(require_depth=False))
    p = FrozenSensorsPlant(0.10, seed=1, gyro_noise=0.005)
    results, _, (dx, dy, dth) = drive(ex, p, A.MOVE_FORWARD)
    (r,) = results
    assert r.outcome == "stall" and not r.reverted, (r.outcome, r.detail)
    assert "revert stopped" in r.detail and "frozen sensors" in r.detail
    print(f"frozen sensors: robot ends {dx:+.3f} m from the start (forward progress before the freeze 0.10 m)")
    assert dx >= -0.03, f"reverted {-dx:.3f} m behind the start with frozen sensors"


def test_revert_without_feedback_stops_after_the_stall_window():
    """The revert needs live progress: odometry frozen at the moment the revert starts -> it stops
    within stall_time_s, even when the verified progress would allow more."""
    ex = Executor(MotionConfig(require_depth=False))
    p = FrozenSensorsPlant(0.05, seed=2, gyro_noise=0.005)
    p.wall_x = 0.35 + 0.20
    results, _, (dx, _, _) = drive(ex, p, A.MOVE_FORWARD)
    (r,) = results
    assert not r.reverted and "revert stopped" in r.detail
    assert dx >= -0.03


@pytest.mark.parametrize("seed", range(2))
def test_sweep_turns_once_at_the_sweep_rate_and_closes(seed):
    """SWEEP_LEFT: one 360 deg turn at the constant sweep rate (never above it), ending within the
    sweep tolerance of the start heading by IMU, close to the physical minimum."""
    ex, p = Executor(CFG), Plant(seed)
    results, cols, (dx, dy, dth) = drive(ex, p, A.SWEEP_LEFT, max_t=20.0)
    (r,) = results
    assert r.outcome == "ok" and not cols and not r.reverted
    assert abs(r.yaw_imu_deg - 360.0) <= math.degrees(CFG.sweep_yaw_tol) + 0.02
    assert abs(math.degrees(dth) - 360.0) < 2.0  # true: + the plant's gyro bias not yet learnt
    assert r.duration_s <= 1.3 * CFG.min_duration(A.SWEEP_LEFT)


def test_a_person_stops_a_sweep_without_a_revert():
    ex, p = Executor(CFG), Plant(3)

    def hook(plant, k):
        if k == 300:  # a person walks into the robot's side during the sweep
            plant.person = (plant.x, plant.y - 0.155 - 0.2)

    results, cols, (dx, dy, dth) = drive(ex, p, A.SWEEP_LEFT, hook=hook, max_t=20.0)
    (r,) = results
    assert r.outcome == "collision" and not r.reverted
    assert 0.0 < r.yaw_imu_deg < 180.0  # stopped part-way; what was turned travels in the result
    assert cols and cols[0].motion_state == "turning"


def test_in_flight_travel_is_recomputed_after_every_new_command():
    """The in-flight prediction is asked up to four times per tick and reused within the tick; any new
    command (a later one, the history cleared by a clock jump) must change the
    answer, never leave a stale one."""
    ex = Executor(MotionConfig(latency_s=0.1))
    ex._push_cmd(0.0, (0.5, 0.0))
    first = ex._unmeasured(0.2, 0.2)
    assert first == ex._unmeasured(0.2, 0.2) and first[0] == pytest.approx(0.5 * 0.1)  # 0.1..0.2 after the latency
    ex._push_cmd(0.15, (0.0, 1.0))  # the forward command ends at 0.15 + latency; the turn is committed
    assert ex._unmeasured(0.2, 0.2) == pytest.approx((0.5 * 0.05, 1.0 * 0.05))
    ex.time_jumped_back(0.0)  # the clock jumped back: no history, nothing in flight
    assert ex._unmeasured(0.2, 0.2) == (0.0, 0.0)


# --- faults: non-finite or implausible sensor values, unbounded correction --------------------------


def test_gyro_yaw_drops_non_finite_samples():
    """One NaN gyro rate / orientation used to make the integrated yaw NaN for good."""
    for add in ("add", "add_orientation"):
        g = GyroYaw(2.0)
        feed = getattr(g, add)
        feed(0.0, 0.0, stationary=True)
        feed(0.01, 0.0, stationary=True)
        for bad in (math.nan, math.inf, -math.inf):
            assert feed(0.02, bad) == 0.0
            assert feed(math.nan, 0.1) == 0.0
        feed(0.03, 0.0)
        assert math.isfinite(g.yaw) and math.isfinite(g.bias) and math.isfinite(g.rate), add


@pytest.mark.parametrize("bad", [math.nan, math.inf])
@pytest.mark.parametrize("where", ["x", "yaw", "imu"])
def test_non_finite_sensor_values_abort_and_are_never_ingested(bad, where):
    """A non-finite odometry / IMU value while moving: zero command, outcome aborted naming it; a
    start on one is refused. Never a result with non-finite figures."""
    ex = Executor(MotionConfig(require_depth=False))
    odom = {"x": (bad, 0.0, 0.0), "yaw": (0.0, 0.0, bad), "imu": (0.0, 0.0, 0.0)}[where]
    imu = bad if where == "imu" else 0.0
    (r,) = ex.start(A.MOVE_FORWARD, 0.0, odom, imu).results
    assert r.outcome == "rejected" and "not finite" in r.detail
    ex.start(A.TURN_LEFT, 1.0, (0.0, 0.0, 0.0), 0.0)
    assert ex.update(1.02, (0.0, 0.0, 0.0), 0.001).cmd[1] > 0
    tick = ex.update(1.04, odom, imu)
    assert tick.cmd == (0.0, 0.0) and not ex.busy
    (r,) = tick.results
    assert r.outcome == "aborted" and "not finite" in r.detail, r.detail
    assert all(math.isfinite(v) for v in (r.distance_odom_m, r.position_error_m, r.yaw_imu_deg, r.yaw_odom_deg, r.yaw_error_deg))


def test_result_with_non_finite_figures_is_never_ok():
    """The last line of defence: a result whose measured figures are not finite is not ``ok``."""
    ex = Executor(MotionConfig(require_depth=False))
    ex.start(A.MOVE_FORWARD, 0.0, (0.0, 0.0, 0.0), 0.0)
    ex._a.outcome = "ok"
    r = ex._finish(1.0, (math.nan, 0.0, 0.0), 0.0)
    assert r.outcome == "aborted" and "not finite" in r.detail


@pytest.mark.parametrize("offset", [2.0, -2.0])
def test_odometry_jump_while_moving_aborts(offset):
    """An odometry reset (+2 m: used to back the robot 0.62 m behind the start; -2 m: used to drive
    1.24 m for a 0.25 m step) stops the robot at once, outcome aborted naming the jump."""
    ex, p = Executor(MotionConfig(require_depth=False)), Plant(0)

    def hook(plant, k):
        if k == 40:
            plant.ox += offset

    results, _, (dx, _, _) = drive(ex, p, A.MOVE_FORWARD, hook=hook)
    (r,) = results
    assert r.outcome == "aborted" and "odometry jumped" in r.detail and "robot stopped" in r.detail, r.detail
    assert 0.0 <= dx <= 0.25, dx


def test_imu_yaw_jump_while_turning_aborts():
    ex, p = Executor(MotionConfig(require_depth=False)), Plant(0)
    g = GyroYaw(2.0)

    def hook(plant, k):
        if k == 40:
            g.yaw -= 1.0  # a reset yaw estimate

    results, _, (_, _, dth) = drive(ex, p, A.TURN_LEFT, hook=hook, gyro=g)
    (r,) = results
    assert r.outcome == "aborted" and "imu yaw jumped" in r.detail, r.detail
    assert 0.0 <= math.degrees(dth) <= 16.0


@pytest.mark.parametrize("drift", [-0.4, 0.4])
def test_move_forward_correction_is_bounded_when_odometry_drifts(drift):
    """Odometry sliding at 0.4 m/s (below the jump bound per sample) would make MOVE_FORWARD chase it:
    forward far past the goal or backwards behind the start. The correction is bounded: aborted."""
    ex, p = Executor(MotionConfig(require_depth=False)), Plant(0)

    def hook(plant, k):
        plant.ox += drift * plant.dt

    results, _, (dx, _, _) = drive(ex, p, A.MOVE_FORWARD, hook=hook)
    (r,) = results
    assert r.outcome == "aborted" and "robot stopped" in r.detail, (r.outcome, r.detail)
    bound = ex._overshoot_bound() if ex._a else 0.1
    assert -bound - 0.02 <= dx <= 1.5 * 0.25 + bound + 0.02, dx


def test_move_forward_stops_when_odometry_sees_half_the_travel():
    """Odometry that under-reads (scale 0.5) used to end ``ok`` 0.5 m from the start for a 0.25 m step."""
    ex, p = Executor(MotionConfig(require_depth=False)), Plant(0)
    p.scale = 0.5
    results, _, (dx, _, _) = drive(ex, p, A.MOVE_FORWARD)
    (r,) = results
    assert r.outcome == "aborted" and "commanded" in r.detail, (r.outcome, r.detail)
    assert dx <= 1.5 * 0.25 + 0.1 + 0.02  # the bound on commanded travel + what is in flight


def test_turn_correction_is_bounded_when_imu_yaw_goes_the_wrong_way():
    """A gyro bias appearing mid-turn (IMU yaw running backwards) used to spin the robot until the
    timeout; the turn stops once the IMU yaw is further the wrong way than a correction explains
    (the slip check, which would see it too, is loosened to show this bound alone)."""
    ex, p = Executor(MotionConfig(require_depth=False, slip_rad=math.pi)), Plant(0)

    def hook(plant, k):
        if k == 1:
            plant.bias = -1.0

    results, _, (_, _, dth) = drive(ex, p, A.TURN_LEFT, hook=hook)
    (r,) = results
    assert r.outcome == "aborted" and "imu yaw" in r.detail, (r.outcome, r.detail)
    assert math.degrees(dth) <= 15.0 + 10.0 + 5.0, math.degrees(dth)
