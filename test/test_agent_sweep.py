"""Sweep-mode panoramas in the agent's pure episode loop, with a scripted robot (no ROS)."""

from __future__ import annotations

import math

import numpy as np
from test_agent_core import FakeRobot, ScriptedPolicy

from havln_robot.actions import MOVE_FORWARD, STOP, SWEEP_LEFT, TURN_LEFT, TURN_RIGHT
from havln_robot.agent.core import ActionOutcome, AgentConfig, EpisodeRunner, RawView
from havln_robot.perception.preprocess import Intrinsics
from havln_robot.perception.sweep import SweepSelector, YawTrack


class SweepRobot(FakeRobot):
    """FakeRobot that also sweeps: 45 deg/s, IMU at 100 Hz, frames at 30 Hz (colour encodes the heading)."""

    def __init__(self, drop=(), sweep_outcome="ok", bias=0.0, **kw):
        super().__init__(**kw)
        self.drop, self.sweep_outcome, self.bias = set(drop), sweep_outcome, bias
        self.sweeps = 0
        self.t = 0.0

    def sweep(self, action, config, drift_rate, on_views):
        self.sweeps += 1
        self.actions.append(action)
        track = YawTrack()
        t0 = self.t
        rate = 45.0
        dur = 8.0 if self.sweep_outcome == "ok" else 3.0  # a stopped sweep turns 135 deg
        h0 = self.heading

        def yaw(t):
            return math.radians(h0 + min(max(t - t0 - 0.2, 0.0), dur) * rate) + self.bias * t

        t = t0
        while t < t0 + dur + 0.6:
            track.add(t, math.remainder(yaw(t), 2 * math.pi))
            t += 0.01
        sel = SweepSelector(config, track, t0, drift_rate)
        k = 0
        while t0 + k / 30.0 < t0 + dur + 0.5:
            st = t0 + k / 30.0
            if k not in self.drop:
                code = int(round(math.degrees(yaw(st) - self.bias * st))) % 360 // 2
                rgb = np.full((48, 64, 3), code, np.uint8)
                depth = np.full((48, 64), 1000 + 10 * code, np.uint16)
                sel.offer(st, RawView(rgb, depth, Intrinsics.from_hfov(64, 48, 69.4), st))
                if sel.views_passed() and on_views is not None:
                    on_views(sel)
                    on_views = None
            k += 1
        self.t = t0 + dur + 1.0
        turned = dur * rate
        self.heading += turned
        drift = track.drift_against(t0, t0 + dur + 0.5, math.radians(turned))
        vals = {"outcome": self.sweep_outcome, "yaw_imu_deg": f"{turned:.4f}", "yaw_odom_deg": f"{turned:.4f}", "duration_s": f"{dur:.3f}"}
        return ActionOutcome(action, self.sweep_outcome, vals), sel, drift


def _run(robot, script=(MOVE_FORWARD, STOP), overlap=True):
    pol = ScriptedPolicy(list(script), views=12)
    robot.policy = pol
    runner = EpisodeRunner(pol, robot, AgentConfig(overlap=overlap), cancelled=robot.cancel.is_set)
    res = runner.run("go to the kitchen")
    runner.close()
    return res, pol


def test_sweep_panorama_gives_12_views_at_their_headings():
    robot = SweepRobot()
    res, pol = _run(robot)
    assert res.reason == "stop" and robot.actions == [SWEEP_LEFT, MOVE_FORWARD, SWEEP_LEFT, STOP]
    assert res.panorama_turns == 0 and [p["mode"] for p in res.panoramas] == ["sweep", "sweep"]
    obs = pol.seen[0]
    assert obs.rgb.shape[0] == 12
    # view i shows heading 30 i (colour code = heading / 2) and its heading is 30 i (relative, wrapped)
    codes = [int(obs.rgb[i, 112, 112, 0]) for i in range(12)]
    assert all(abs(c - 15 * i) <= 1 for i, c in enumerate(codes)), codes
    want = np.radians([(30 * i + 180) % 360 - 180 for i in range(12)])
    assert np.max(np.abs(np.degrees(obs.headings - want))) <= 1.0
    assert all(abs(e) <= 1.0 for p in res.panoramas for e in p["view_errors_deg"])
    assert res.panorama_s > 0 and res.policy_wait_s >= 0


def test_inference_overlaps_the_sweep_once_the_drift_is_known():
    robot = SweepRobot(bias=math.radians(0.05))
    res, pol = _run(robot)
    # first sweep: drift unknown -> inference after it; second: started inside the sweep (views passed)
    assert [p["overlapped"] for p in res.panoramas] == [False, True]
    assert all(abs(e) <= 1.0 for p in res.panoramas for e in p["view_errors_deg"])


def test_a_view_without_a_frame_is_retaken_with_turns():
    # frames around 60 deg (view 2: t = 0.2 + 1.33 s -> frame ~46) dropped; 8 turns (6 s) < a sweep (8 s)
    robot = SweepRobot(drop=set(range(40, 53)))
    res, pol = _run(robot, script=(STOP,))
    assert robot.actions == [SWEEP_LEFT] + [TURN_LEFT] * 4 + [TURN_RIGHT] * 4 + [STOP]
    p = res.panoramas[0]
    assert p["retaken"] == 1 and p["views"] == 12 and "retake" in p["sources"]
    assert int(pol.seen[0].rgb[2, 112, 112, 0]) == 30  # the retaken view shows 60 deg


def test_views_near_180_are_retaken_by_a_second_sweep():
    # frames around 180 deg (view 6: t = 0.2 + 4 s -> frame ~126) dropped in the first sweep only
    robot = SweepRobot(drop=set(range(120, 133)))
    orig = robot.sweep

    def sweep(*a):
        r = orig(*a)
        robot.drop = set()
        return r

    robot.sweep = sweep
    res, pol = _run(robot, script=(STOP,))
    assert robot.actions == [SWEEP_LEFT, SWEEP_LEFT, STOP]
    p = res.panoramas[0]
    assert p["retaken"] == 1 and p["sweeps"] == 2 and p["views"] == 12
    assert int(pol.seen[0].rgb[6, 112, 112, 0]) == 90


def test_a_stopped_sweep_is_retaken_in_discrete_mode():
    robot = SweepRobot(sweep_outcome="collision")
    res, pol = _run(robot, script=(STOP,))
    assert robot.actions[0] == SWEEP_LEFT and robot.actions[1:25] == [TURN_LEFT] * 24
    assert res.panoramas[0]["mode"] == "discrete" and pol.seen[0].rgb.shape[0] == 12
