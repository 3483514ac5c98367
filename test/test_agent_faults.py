"""Motion aborted for sensor loss, non-finite policy
output and a hung policy each end the episode ``aborted`` with a reason (never ``stop``/``failure``)."""

from __future__ import annotations

import threading
import time

import numpy as np
import torch
from test_agent_core import FakeRobot, ScriptedPolicy

from havln_robot.actions import MOVE_FORWARD, STOP, TURN_LEFT
from havln_robot.agent.core import ActionOutcome, AgentConfig, EpisodeRunner
from havln_robot.policy.api import PolicyError, check_finite
from havln_robot.policy.small import SmallConfig, SmallNet, SmallPolicy
from havln_robot.policy.tokenizer import Vocabulary


class SensorLossRobot(FakeRobot):
    """motion_node answers every action after the first ``ok_actions`` with ``aborted`` (odom silent)."""

    def __init__(self, ok_actions: int = 0, **kw) -> None:
        super().__init__(**kw)
        self.ok_actions = ok_actions

    def send_action(self, action):
        if len(self.actions) >= self.ok_actions:
            self.actions.append(action)
            detail = "odom silent for 0.31 s (> sensor_timeout_s 0.3); robot stopped"
            return ActionOutcome(action, "aborted", {"outcome": "aborted", "detail": detail})
        return super().send_action(action)


def test_action_aborted_for_sensor_loss_ends_the_episode_aborted_with_the_reason():
    robot = SensorLossRobot(ok_actions=1)
    pol = ScriptedPolicy([MOVE_FORWARD] * 50)
    runner = EpisodeRunner(pol, robot, AgentConfig(), cancelled=robot.cancel.is_set)
    res = runner.run("walk forward")
    runner.close()
    assert res.reason == "aborted" and res.error
    assert "odom silent" in res.detail and MOVE_FORWARD in res.detail
    assert robot.actions == [MOVE_FORWARD, MOVE_FORWARD]  # not 116 aborted actions
    assert res.actions == [MOVE_FORWARD]


def test_panorama_that_never_turned_is_not_given_to_the_policy():
    robot = SensorLossRobot(ok_actions=0)
    pol = ScriptedPolicy([STOP], views=12)
    runner = EpisodeRunner(pol, robot, AgentConfig(blocked_wait_s=0.0), cancelled=robot.cancel.is_set)
    res = runner.run("look around")
    runner.close()
    assert res.reason == "aborted" and res.error and "odom silent" in res.detail
    assert robot.actions == [TURN_LEFT] and pol.seen == []


def test_nan_weights_abort_the_episode_with_a_clear_reason():
    torch.manual_seed(0)
    net = SmallNet(SmallConfig(views=12, res=24))
    with torch.no_grad():
        for p in net.parameters():
            p.fill_(float("nan"))
    pol = SmallPolicy(net, vocab=Vocabulary(["<pad>", "<unk>", "go", "left", "stop"]))
    robot = FakeRobot()
    runner = EpisodeRunner(pol, robot, AgentConfig(blocked_wait_s=0.0), cancelled=robot.cancel.is_set)
    res = runner.run("go left then stop")
    runner.close()
    assert res.reason == "aborted" and res.error and "non-finite" in res.detail, res.detail
    assert res.actions == [] and all(a == TURN_LEFT for a in robot.actions)  # only the panorama turns


def test_check_finite_names_what_is_wrong():
    check_finite("x", np.zeros(3))
    for bad in (float("nan"), float("inf")):
        try:
            check_finite("CMA action logits", torch.tensor([[0.0, bad]]))
        except PolicyError as exc:
            assert "CMA action logits" in str(exc) and "1 NaN/inf" in str(exc)
        else:
            raise AssertionError("no PolicyError")


class HangingPolicy(ScriptedPolicy):
    def __init__(self) -> None:
        super().__init__([MOVE_FORWARD])
        self.release = threading.Event()

    def act(self, obs):
        self.release.wait(30.0)  # a torch forward that never returns
        return MOVE_FORWARD


def test_hung_policy_times_out_and_is_abandoned():
    robot = FakeRobot()
    pol = HangingPolicy()
    runner = EpisodeRunner(pol, robot, AgentConfig(inference_timeout_s=0.2), cancelled=robot.cancel.is_set)
    t0 = time.monotonic()
    res = runner.run("walk")
    runner.close(timeout_s=0.1)
    took = time.monotonic() - t0
    try:
        assert res.reason == "aborted" and res.error and "inference_timeout_s=0.2" in res.detail, res.detail
        assert took < 2.0 and robot.actions == []
        hung = [t for t in threading.enumerate() if t.name == "agent-inference"]
        assert hung and all(t.daemon for t in hung)  # left behind, never blocks the process exit
        res2 = runner.run("again")  # the policy is not called concurrently with the hung inference
        assert res2.reason == "aborted" and "still busy" in res2.detail
    finally:
        pol.release.set()
