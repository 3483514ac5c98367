"""The agent's episode loop (pure core) with a scripted robot, and the builtin baselines."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from havln_robot.actions import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from havln_robot.agent.core import ActionOutcome, AgentAbort, AgentConfig, EpisodeRunner, RawView
from havln_robot.perception.preprocess import Intrinsics
from havln_robot.policy.api import Observation, Policy, PolicyError
from havln_robot.policy.baselines import ForwardPolicy, RandomPolicy
from havln_robot.policy.registry import builtin_policy, is_builtin, make_policy


class ScriptedPolicy(Policy):
    """Returns the scripted actions in order and records what it saw."""

    def __init__(self, script, views=1, delay_s=0.0):
        self.script, self.views, self.delay_s = list(script), views, delay_s
        self.name = "scripted"
        self.seen: list[Observation] = []
        self.threads: set[str] = set()
        self.turns_at_act: list[int] = []
        self.robot = None

    def reset(self, instruction):
        self.instruction = instruction
        self.i = 0

    def act(self, obs):
        obs.check(self.views)
        self.threads.add(threading.current_thread().name)
        if self.robot is not None:
            self.turns_at_act.append(self.robot.turns)
        time.sleep(self.delay_s)
        self.seen.append(obs)
        a = self.script[min(self.i, len(self.script) - 1)]
        self.i += 1
        return a


class FakeRobot:
    """A robot that turns by ``turn_deg`` per TURN and whose camera colour encodes its heading."""

    def __init__(
        self, turn_deg=15.0, action_delay_s=0.0, fail_grab_after=None, cancel_after=None, blocked=None, blocked_outcome="collision"
    ):
        self.blocked = blocked  # (action, n-th send of any action) -> True when an obstacle refuses it
        self.blocked_outcome = blocked_outcome  # motion_node's outcome then: "collision" (refused / stopped) or "stall"
        self.sent_at: list[float] = []
        self.heading = 0.0
        self.x = 0.0
        self.turn_deg = turn_deg
        self.delay = action_delay_s
        self.actions: list[str] = []
        self.status: list[dict] = []
        self.turns = 0
        self.grabs = 0
        self.fail_grab_after = fail_grab_after
        self.cancel_after = cancel_after
        self.cancel = threading.Event()

    def send_action(self, action):
        if self.cancel.is_set():
            raise AgentAbort("cancelled", reason="aborted")
        time.sleep(self.delay)
        self.sent_at.append(time.monotonic())
        if self.blocked is not None and self.blocked(action, len(self.sent_at)):
            self.actions.append(action)
            detail = "blocked before start: a person" if self.blocked_outcome == "collision" else "no progress for 0.6 s under command"
            vals = {"outcome": self.blocked_outcome, "yaw_imu_deg": "0.3", "yaw_odom_deg": "0.3", "detail": detail}
            self.heading += 0.3 if action in (TURN_LEFT, TURN_RIGHT) else 0.0
            return ActionOutcome(action, self.blocked_outcome, vals)
        self.actions.append(action)
        yaw = 0.0
        if action in (TURN_LEFT, TURN_RIGHT):
            yaw = self.turn_deg if action == TURN_LEFT else -self.turn_deg
            self.heading += yaw
            self.turns += 1
        elif action == MOVE_FORWARD:
            self.x += 0.25
        if self.cancel_after is not None and len([a for a in self.actions if a not in (TURN_LEFT, TURN_RIGHT)]) >= self.cancel_after:
            self.cancel.set()
        return ActionOutcome(action, "ok", {"outcome": "ok", "yaw_imu_deg": f"{yaw:.4f}", "yaw_odom_deg": f"{yaw:.4f}"})

    def grab(self):
        self.grabs += 1
        if self.fail_grab_after is not None and self.grabs > self.fail_grab_after:
            raise AgentAbort("no synchronised RGB-D pair within 5 s")
        code = int(round(self.heading % 360.0)) // 2
        rgb = np.full((480, 848, 3), code, np.uint8)
        depth = np.full((480, 848), 1000 + 10 * code, np.uint16)
        return RawView(rgb, depth, Intrinsics.from_hfov(848, 480, 69.4), 0.0)

    def publish_status(self, values):
        self.status.append(dict(values))


def test_front_view_episode_runs_to_stop():
    robot = FakeRobot()
    pol = ScriptedPolicy([MOVE_FORWARD, TURN_LEFT, MOVE_FORWARD, STOP])
    runner = EpisodeRunner(pol, robot, AgentConfig(), cancelled=robot.cancel.is_set)
    res = runner.run("walk past the person on the left")
    runner.close()
    assert res.reason == "stop" and res.steps == 4 and not res.error
    assert robot.actions == [MOVE_FORWARD, TURN_LEFT, MOVE_FORWARD, STOP]
    assert res.actions == robot.actions and res.panorama_turns == 0 and res.panoramas == []
    assert all(o.rgb.shape == (1, 224, 224, 3) and o.depth.shape == (1, 256, 256, 1) for o in pol.seen)
    assert [o.step for o in pol.seen] == [0, 1, 2, 3]
    # the second observation was taken after the TURN_LEFT: heading 15° -> code 7
    assert pol.seen[2].rgb[0, 112, 112, 0] == 7
    assert pol.seen[2].depth[0, 128, 128, 0] == pytest.approx((1000 + 70) / 10000.0)
    # inference never ran on the episode thread
    assert pol.threads and all(t.startswith("agent-inference") for t in pol.threads)
    acting = [s for s in robot.status if s["state"] == "acting"]
    assert [s["step"] for s in acting] == [1, 2, 3, 4] and [s["action"] for s in acting] == robot.actions
    assert set(acting[0]) == {"step", "action", "state", "policy_ms", "panorama_s", "waiting_s"}
    assert robot.status[-1]["state"] == "done"


def test_panoramic_policy_gets_12_views_with_headings():
    robot = FakeRobot()
    pol = ScriptedPolicy([MOVE_FORWARD, STOP], views=12)
    runner = EpisodeRunner(pol, robot, AgentConfig(), cancelled=robot.cancel.is_set)
    res = runner.run("go to the kitchen")
    runner.close()
    assert res.reason == "stop" and res.actions == [MOVE_FORWARD, STOP]
    assert robot.actions == [TURN_LEFT] * 24 + [MOVE_FORWARD] + [TURN_LEFT] * 24 + [STOP]
    assert res.panorama_turns == 48 and len(res.panoramas) == 2
    assert robot.heading % 360.0 == pytest.approx(0.0)
    for obs in pol.seen:
        assert obs.rgb.shape == (12, 224, 224, 3) and obs.depth.shape == (12, 256, 256, 1)
        # view i was taken at 30*i degrees: the camera colour encodes that heading
        assert [int(obs.rgb[i, 112, 112, 0]) for i in range(12)] == [(30 * i) // 2 for i in range(12)]
        want = [((math.radians(30 * i) + math.pi) % (2 * math.pi)) - math.pi for i in range(12)]
        assert np.allclose(obs.headings, want, atol=1e-6)
    assert all(p["views"] == 12 and p["turns"] == 24 for p in res.panoramas)


def test_panorama_inference_overlaps_the_return_turns():
    robot = FakeRobot()
    pol = ScriptedPolicy([STOP], views=12)
    acting = threading.Event()
    orig_act, orig_send = pol.act, robot.send_action

    def act(obs):
        pol.turns_at_act.append(robot.turns)  # record before releasing the waiting turn (no race)
        acting.set()
        return orig_act(obs)

    def send(action):
        if robot.turns == 23:  # the last return turn waits (up to 5 s) until inference has started
            acting.wait(5.0)
        return orig_send(action)

    pol.act, robot.send_action = act, send
    runner = EpisodeRunner(pol, robot, AgentConfig(overlap=True), cancelled=robot.cancel.is_set)
    res = runner.run("stop here")
    runner.close()
    assert res.reason == "stop"
    # act() started while the return turns were still being made
    assert pol.turns_at_act[0] < 24
    robot2 = FakeRobot(action_delay_s=0.0)
    pol2 = ScriptedPolicy([STOP], views=12)
    pol2.robot = robot2
    runner2 = EpisodeRunner(pol2, robot2, AgentConfig(overlap=False), cancelled=robot2.cancel.is_set)
    runner2.run("stop here")
    runner2.close()
    assert pol2.turns_at_act == [24]


def test_under_turning_robot_views_keep_measured_headings():
    robot = FakeRobot(turn_deg=13.0)
    pol = ScriptedPolicy([STOP], views=12)
    runner = EpisodeRunner(pol, robot, AgentConfig(max_correction_turns=6, overlap=False), cancelled=robot.cancel.is_set)
    res = runner.run("x")
    runner.close()
    obs = pol.seen[0]
    headings_deg = np.degrees(obs.headings)
    # every view is within tolerance of its 30° slot, expressed relative to the final heading
    final = res.panoramas[0]["final_error_deg"]
    for i, h in enumerate(headings_deg):
        assert abs(((h + final) - 30 * i + 180) % 360 - 180) <= 7.5 + 1e-4
    assert res.panoramas[0]["turns"] > 24


def test_budget_ends_without_stop():
    robot = FakeRobot()
    runner = EpisodeRunner(ForwardPolicy(steps=100), robot, AgentConfig(max_actions=5), cancelled=robot.cancel.is_set)
    res = runner.run("keep going")
    runner.close()
    assert res.reason == "budget" and res.steps == 5 and robot.actions == [MOVE_FORWARD] * 5


def test_cancel_and_failures_end_the_episode_cleanly():
    robot = FakeRobot(cancel_after=2)
    runner = EpisodeRunner(ForwardPolicy(steps=100), robot, AgentConfig(), cancelled=robot.cancel.is_set)
    res = runner.run("go")
    assert res.reason == "aborted" and not res.error and res.steps == 2
    assert robot.status[-1]["state"] == "aborted"
    runner.close()

    robot = FakeRobot(fail_grab_after=3)
    runner = EpisodeRunner(ForwardPolicy(steps=100), robot, AgentConfig(), cancelled=robot.cancel.is_set)
    res = runner.run("go")
    runner.close()
    assert res.reason == "aborted" and res.error and "RGB-D" in res.detail and res.steps == 3
    assert '"reason": "aborted"' in res.to_json()

    class Bad(ScriptedPolicy):
        def act(self, obs):
            return "JUMP"

    robot = FakeRobot()
    runner = EpisodeRunner(Bad([]), robot, AgentConfig(), cancelled=robot.cancel.is_set)
    res = runner.run("go")
    runner.close()
    assert res.error and "JUMP" in res.detail and robot.actions == []


def test_missing_intrinsics_is_a_clear_error():
    robot = FakeRobot()
    orig = robot.grab
    robot.grab = lambda: RawView(orig().rgb, orig().depth, None, 0.0)
    runner = EpisodeRunner(ForwardPolicy(), robot, AgentConfig(camera_hfov_deg=0.0), cancelled=robot.cancel.is_set)
    res = runner.run("go")
    runner.close()
    assert res.error and "camera_hfov_deg" in res.detail
    runner = EpisodeRunner(ForwardPolicy(steps=1), robot, AgentConfig(camera_hfov_deg=69.4), cancelled=robot.cancel.is_set)
    assert runner.run("go").reason == "stop"
    runner.close()


def test_builtin_baselines():
    obs = Observation(np.zeros((1, 224, 224, 3), np.uint8), np.zeros((1, 256, 256, 1), np.float32), np.zeros(1, np.float32))
    f = builtin_policy("forward:steps=2")
    f.reset("go")
    assert [f.act(obs) for _ in range(3)] == [MOVE_FORWARD, MOVE_FORWARD, STOP]
    r1, r2 = builtin_policy("random:seed=3"), RandomPolicy(seed=3)
    r1.reset("a")
    r2.reset("b")
    seq = [r1.act(obs) for _ in range(30)]
    assert seq == [r2.act(obs) for _ in range(30)] and len(set(seq)) >= 3
    assert builtin_policy("forward:views=12").views == 12
    assert is_builtin("random") and not is_builtin("models/small.pt")
    with pytest.raises(PolicyError, match="views=5"):
        builtin_policy("forward:views=5")
    with pytest.raises(PolicyError, match="unknown option"):
        builtin_policy("forward:speed=3")
    with pytest.raises(PolicyError, match="reset"):
        ForwardPolicy().act(obs)
    with pytest.raises(PolicyError, match="not found"):
        make_policy("/nonexistent/model.pt")


class MacroPolicy(ScriptedPolicy):
    """Asks for a panorama at decisions and the front view while it replays a 3-action macro."""

    def __init__(self):
        super().__init__([], views=12)
        self.queue: list[str] = []
        self.decisions = 0

    @property
    def views(self):
        return 1 if self.queue else 12

    @views.setter
    def views(self, v):
        pass

    def reset(self, instruction):
        self.queue, self.decisions = [], 0

    def act(self, obs):
        self.seen.append(obs)
        if self.queue:
            assert obs.n_views == 1
            return self.queue.pop(0)
        assert obs.n_views == 12
        self.decisions += 1
        if self.decisions > 2:
            return STOP
        self.queue = [TURN_RIGHT, MOVE_FORWARD]
        return TURN_RIGHT


def test_policy_views_are_read_every_step():
    robot = FakeRobot()
    pol = MacroPolicy()
    runner = EpisodeRunner(pol, robot, AgentConfig(), cancelled=robot.cancel.is_set)
    res = runner.run("x")
    runner.close()
    assert res.reason == "stop" and res.actions == [TURN_RIGHT, TURN_RIGHT, MOVE_FORWARD] * 2 + [STOP]
    assert [o.n_views for o in pol.seen] == [12, 1, 1, 12, 1, 1, 12]
    assert len(res.panoramas) == 3 and res.panorama_turns == 72


def test_runs_the_real_small_panoramic_policy(havln_data):
    """Contract check against engineer F's SmallPolicy (untrained weights): the loop feeds it correctly."""
    torch = pytest.importorskip("torch")
    from havln_robot.policy.small import SmallConfig, SmallNet, SmallPolicy

    torch.manual_seed(0)
    pol = SmallPolicy(SmallNet(SmallConfig()))
    robot = FakeRobot()
    runner = EpisodeRunner(pol, robot, AgentConfig(max_actions=12), cancelled=robot.cancel.is_set)
    res = runner.run("walk past the man on the sofa and stop at the door")
    runner.close()
    assert not res.error, res.detail
    assert res.reason in ("stop", "budget") and len(res.panoramas) >= 1
    assert all(a in (MOVE_FORWARD, TURN_LEFT, TURN_RIGHT, STOP) for a in res.actions)


class RecordingPolicy(ScriptedPolicy):
    def on_action_result(self, action, outcome):
        self.results = getattr(self, "results", []) + [(action, outcome)]


def test_person_in_the_way_the_agent_waits_and_goes_on():
    """Sends 3-6 (panorama turns) and 29 (the first MOVE_FORWARD) are refused by a passing person: the
    agent stands still blocked_wait_s after each, retries, and the panorama still gets its 12 headings."""
    refused = {3, 4, 5, 6, 29}
    robot = FakeRobot(blocked=lambda a, n: n in refused)
    pol = RecordingPolicy([MOVE_FORWARD, MOVE_FORWARD, STOP], views=12)
    cfg = AgentConfig(blocked_wait_s=0.1, max_consecutive_blocked=5, overlap=False)
    runner = EpisodeRunner(pol, robot, cfg, cancelled=robot.cancel.is_set)
    res = runner.run("wait for the person, then walk on")
    runner.close()
    assert res.reason == "stop" and res.actions == [MOVE_FORWARD, MOVE_FORWARD, STOP], res
    assert robot.actions[28] == MOVE_FORWARD and res.blocked_motions == 5
    # every refused motion is followed by a pause of at least blocked_wait_s before the next send
    for n in refused:
        assert robot.sent_at[n] - robot.sent_at[n - 1] >= 0.1, n
    # blocked turns did not use up the correction budget: all 12 views at their headings
    first = res.panoramas[0]
    assert first["views"] == 12 and first["blocked_turns"] == 4 and first["corrections"] == 0
    assert max(abs(h - 30.0 * i) for i, h in enumerate(first["headings_deg"])) < 1.5
    assert ("MOVE_FORWARD", "collision") in pol.results and ("MOVE_FORWARD", "ok") in pol.results
    assert any(s["state"] == "waiting" for s in robot.status)


def test_wall_ahead_ends_the_episode_as_blocked():
    """A motion refused max_consecutive_blocked times in a row ends the episode (no error, robot still)."""
    robot = FakeRobot(blocked=lambda a, n: a == MOVE_FORWARD)
    pol = ScriptedPolicy([MOVE_FORWARD])
    runner = EpisodeRunner(pol, robot, AgentConfig(blocked_wait_s=0.0, max_consecutive_blocked=4), cancelled=robot.cancel.is_set)
    res = runner.run("walk into the wall")
    runner.close()
    assert res.reason == "blocked" and not res.error and res.steps == 4 and res.blocked_motions == 4
    assert "4 policy actions in a row" in res.detail and "blocked before start" in res.detail
    assert robot.actions == [MOVE_FORWARD] * 4
    assert robot.status[-1]["state"] == "done"


def test_a_robot_stalled_against_a_wall_ends_the_episode_as_blocked():
    """motion_node's ``stall`` (commanded, no progress: pushing against something the depth camera
    missed) is a motion stopped by an obstacle like ``collision``: counted, waited after, and
    max_consecutive_blocked of them end the episode, rather than the policy pushing 500 times."""
    robot = FakeRobot(blocked=lambda a, n: a == MOVE_FORWARD, blocked_outcome="stall")
    pol = ScriptedPolicy([MOVE_FORWARD])
    runner = EpisodeRunner(
        pol, robot, AgentConfig(blocked_wait_s=0.0, max_consecutive_blocked=4, max_actions=40), cancelled=robot.cancel.is_set
    )
    res = runner.run("walk into the glass door")
    runner.close()
    assert res.reason == "blocked" and res.steps == 4 and res.blocked_motions == 4, res
    assert "4 policy actions in a row" in res.detail and "no progress" in res.detail


def test_blocked_wait_is_cancellable():
    robot = FakeRobot(blocked=lambda a, n: True)
    pol = ScriptedPolicy([MOVE_FORWARD])
    runner = EpisodeRunner(pol, robot, AgentConfig(blocked_wait_s=30.0), cancelled=robot.cancel.is_set)
    threading.Timer(0.3, robot.cancel.set).start()
    t0 = time.monotonic()
    res = runner.run("wait forever")
    runner.close()
    assert res.reason == "aborted" and time.monotonic() - t0 < 5.0


def test_wall_ahead_ends_a_panoramic_episode_too():
    """The panorama turns between two refused MOVE_FORWARDs succeed; they must not reset the count."""
    robot = FakeRobot(blocked=lambda a, n: a == MOVE_FORWARD)
    pol = ScriptedPolicy([MOVE_FORWARD], views=12)
    cfg = AgentConfig(blocked_wait_s=0.0, max_consecutive_blocked=3, max_actions=30)
    runner = EpisodeRunner(pol, robot, cfg, cancelled=robot.cancel.is_set)
    res = runner.run("walk into the wall")
    runner.close()
    assert res.reason == "blocked" and res.steps == 3 and res.panorama_turns == 3 * 24
    assert "3 policy actions in a row" in res.detail


def test_a_panorama_turn_blocked_for_good_ends_the_episode():
    """A person who never leaves the robot's side: the refused turn is retried max_consecutive_blocked times, no more."""
    robot = FakeRobot(blocked=lambda a, n: n > 5)
    pol = ScriptedPolicy([MOVE_FORWARD], views=12)
    runner = EpisodeRunner(pol, robot, AgentConfig(blocked_wait_s=0.0, max_consecutive_blocked=6), cancelled=robot.cancel.is_set)
    res = runner.run("turn around")
    runner.close()
    assert res.reason == "blocked" and res.steps == 0 and res.panorama_turns == 5 + 6
    assert "6 panorama turns in a row" in res.detail


def test_max_consecutive_blocked_must_be_positive():
    from havln_robot.agent.params import AGENT_PARAMS

    with pytest.raises(Exception, match="max_consecutive_blocked"):
        AGENT_PARAMS.validate({"policy": "forward", "max_consecutive_blocked": 0})
