"""NoisyBase: velocity/acceleration limits, latency, contact stops the body, seeded noise, drift, gyro bias."""

from __future__ import annotations

import math

import numpy as np
import pytest

from havln_robot.sim.robot import GO2_RADIUS_M, GRAVITY_MPS2, BaseLimits, NoiseModel, NoisyBase


class PlaneWorld:
    """A free plane with an optional wall x = wall_x (the body disc of radius r stops at contact)."""

    def __init__(self, wall_x: float = math.inf, r: float = 0.3):
        self.x = self.y = self.yaw = 0.0
        self.t = 0.0
        self.wall_x, self.r = wall_x, r

    @property
    def pose(self):
        return (self.x, self.y, 0.0, self.yaw)

    def move(self, forward_m, dyaw_rad, dt):
        self.yaw = (self.yaw + dyaw_rad + math.pi) % (2 * math.pi) - math.pi
        nx = self.x + forward_m * math.cos(self.yaw)
        ny = self.y + forward_m * math.sin(self.yaw)
        contact = None
        if nx > self.wall_x - self.r:
            frac = (self.wall_x - self.r - self.x) / (nx - self.x) if nx != self.x else 0.0
            nx, ny = self.x + frac * (nx - self.x), self.y + frac * (ny - self.y)
            contact = "static"
        self.x, self.y = nx, ny
        self.t += dt
        return contact


def run(base: NoisyBase, seconds: float, dt: float = 0.01) -> list:
    return [base.step(dt) for _ in range(int(round(seconds / dt)))]


def test_go2_constants():
    assert GO2_RADIUS_M == pytest.approx(math.hypot(0.35, 0.155), abs=1e-3)


def test_velocity_and_acceleration_limits():
    lim = BaseLimits(max_linear_mps=0.5, max_angular_rps=1.0, max_linear_accel_mps2=1.0, max_angular_accel_rps2=2.0)
    b = NoisyBase(PlaneWorld(), lim, NoiseModel.none())
    b.command(5.0, -9.0)
    v_prev = w_prev = 0.0
    for _ in range(200):
        b.step(0.01)
        assert abs(b.v - v_prev) <= 1.0 * 0.01 + 1e-12
        assert abs(b.w - w_prev) <= 2.0 * 0.01 + 1e-12
        assert abs(b.v) <= 0.5 + 1e-12 and abs(b.w) <= 1.0 + 1e-12
        v_prev, w_prev = b.v, b.w
    assert b.v == pytest.approx(0.5) and b.w == pytest.approx(-1.0)
    # ramp-up took v_max / a_max = 0.5 s: distance = 2 s * 0.5 - 0.5 * 0.5 * 0.5
    assert b.distance_m == pytest.approx(0.5 * 2.0 - 0.125, abs=0.01)


def test_latency_delays_commands():
    b = NoisyBase(PlaneWorld(), BaseLimits(), NoiseModel(**{**NoiseModel.none().__dict__, "latency_s": 0.2}))
    b.command(0.4, 0.0)
    run(b, 0.19)
    assert b.world.x == 0.0 and b.v == 0.0
    run(b, 0.05)
    assert b.v > 0.0 and b.world.x > 0.0


def test_stop_is_immediate_and_decelerates_within_limit():
    lim = BaseLimits(max_linear_accel_mps2=1.0)
    b = NoisyBase(PlaneWorld(), lim, NoiseModel(latency_s=0.3))
    b.command(0.6, 0.0)
    run(b, 2.0)
    assert b.v == pytest.approx(0.6)
    b.stop()
    b.step(0.01)
    assert b.v == pytest.approx(0.59)  # no latency on stop; acceleration limit still holds
    run(b, 1.0)
    assert b.v == 0.0 and b.target == (0.0, 0.0, 0.0)


def test_contact_stops_the_body():
    w = PlaneWorld(wall_x=1.0, r=0.3)
    b = NoisyBase(w, BaseLimits(), NoiseModel.none())
    b.command(0.8, 0.0)
    out = run(b, 3.0)
    assert w.x == pytest.approx(0.7) and w.x <= 0.7 + 1e-12
    assert any(o.contact == "static" for o in out) and b.contacts > 0
    assert b.v == 0.0
    assert out[-1].v == pytest.approx(0.0)


def test_perfect_robot_odometry_equals_truth():
    w = PlaneWorld()
    b = NoisyBase(w, BaseLimits(), NoiseModel.none())
    b.command(0.5, 0.4)
    run(b, 4.0)
    assert (b.odom.x, b.odom.y, b.odom.yaw) == pytest.approx((w.x, w.y, w.yaw), abs=1e-9)
    assert b.imu.yaw == pytest.approx(w.yaw, abs=1e-9)
    assert b.imu.gyro[2] == pytest.approx(0.4, abs=1e-9)
    # centripetal acceleration v * w, gravity up
    assert b.imu.accel == pytest.approx([0.0, 0.5 * 0.4, GRAVITY_MPS2], abs=1e-4)


def _drive(seed: int, noise: NoiseModel | None = None):
    w = PlaneWorld()
    b = NoisyBase(w, BaseLimits(), noise or NoiseModel(), seed=seed)
    b.command(0.5, 0.3)
    run(b, 5.0)
    return b, w


def test_noise_is_seeded_and_reproducible():
    b1, _ = _drive(7)
    b2, _ = _drive(7)
    b3, _ = _drive(8)
    assert (b1.odom.x, b1.odom.y, b1.odom.yaw, b1.imu.yaw) == (b2.odom.x, b2.odom.y, b2.odom.yaw, b2.imu.yaw)
    assert (b1.odom.x, b1.imu.yaw) != (b3.odom.x, b3.imu.yaw)
    # reset with the same seed replays the same noise
    b1.reset(7)
    b1.world.__init__()
    b1.command(0.5, 0.3)
    run(b1, 5.0)
    assert (b1.odom.x, b1.odom.y, b1.imu.yaw) == (b2.odom.x, b2.odom.y, b2.imu.yaw)


def test_odometry_drifts_within_its_covariance():
    errs = []
    for seed in range(30):
        b, w = _drive(seed)
        errs.append(math.hypot(b.odom.x - w.x, b.odom.y - w.y))
    errs = np.array(errs)
    assert errs.mean() > 1e-3  # there is drift ...
    # ... of the size the published covariance claims (2-D: E|e|^2 = 2 var_xy), within sampling error
    assert np.mean(errs**2) == pytest.approx(2 * b.odom.var_xy, rel=0.6)


def test_gyro_bias_and_noise():
    noise = NoiseModel(**{**NoiseModel.none().__dict__, "gyro_bias_std": 0.01, "gyro_noise_std": 0.005})
    b = NoisyBase(PlaneWorld(), BaseLimits(), noise, seed=3)
    gz = []
    for _ in range(2000):
        b.step(0.01)
        gz.append(b.imu.gyro[2])
    gz = np.array(gz)
    assert b.gyro_bias != 0.0
    assert gz.mean() == pytest.approx(b.gyro_bias, abs=0.0005)
    assert gz.std() == pytest.approx(0.005, rel=0.1)
    # a robot standing still sees its IMU yaw drift at the bias rate
    assert b.imu.yaw == pytest.approx(gz.sum() * 0.01, abs=1e-9)
    assert b.odom.yaw == 0.0


def test_camera_pitch_rate_is_limited_and_clamped():
    lim = BaseLimits(max_pitch_rad=0.5, max_pitch_rate_rps=1.0)
    b = NoisyBase(PlaneWorld(), lim, NoiseModel.none())
    b.command(0.0, 0.0, pitch_rate=3.0)
    b.step(0.1)
    assert b.pitch == pytest.approx(0.1)
    run(b, 1.0)
    assert b.pitch == pytest.approx(0.5)
    assert b.imu.pitch == pytest.approx(-0.5)  # REP 103 body pitch: nose down positive


def test_bad_input_is_refused():
    b = NoisyBase(PlaneWorld())
    with pytest.raises(ValueError, match="non-finite"):
        b.command(float("nan"), 0.0)
    with pytest.raises(ValueError, match="dt"):
        b.step(0.0)
    with pytest.raises(ValueError, match="max_linear_mps"):
        BaseLimits(max_linear_mps=-1.0)
    with pytest.raises(ValueError, match="latency_s"):
        NoiseModel(latency_s=-0.1)
