"""Batch episodes run agent_node's episode runner (agent.core.EpisodeRunner) through the simulator IO
(agent.sim_io.SimIO): blocked waits pass sim time, panorama turns are not challenge actions, and a
replayed action file is played by the same runner (so a replay gives the run's results back)."""

from __future__ import annotations

import pytest

from havln_robot.agent.sim_io import ActionFilePolicy, replay_actions
from havln_robot.episodes import Episode
from havln_robot.eval import _agent_node_params, agent_max_consecutive_blocked, run_episode
from havln_robot.sim.humans import Crowd
from havln_robot.sim.scene import Scene
from havln_robot.sim.world import World


def _episode(start=(0.0, 0.5, 0.0)):
    goal = (6.0, 4.0, 0.0)
    return Episode("t1", "builtin", "go", ("go",), start, 0.0, goal, 3.0, (start, goal), (), (), 8.0, "test")


class WallWalker:
    """Walks ahead into the builtin scene's wall; hears each outcome with the sim time it came at."""

    observes = False
    views = 1

    def __init__(self, world):
        self.world, self.heard = world, []

    def reset(self, instruction):
        pass

    def act(self, obs):
        return "MOVE_FORWARD"

    def on_action_result(self, action, outcome):
        self.heard.append((outcome, self.world.t))


def test_a_blocked_motion_is_followed_by_agent_nodes_wait_in_sim_time():
    """agent_node stands ``blocked_wait_s`` after every refused or stopped motion so that a person can
    pass; the batch loop used to decide again at once (no sim time passed, nobody moved). Through the
    runner each refusal is followed by that wait, then the limit ends the episode ``blocked``."""
    wait = float(_agent_node_params(None)["blocked_wait_s"])
    limit = agent_max_consecutive_blocked()
    assert wait > 0 and limit >= 2
    w = World(Scene.builtin(), _episode(), Crowd([]), seed=0)
    p = WallWalker(w)
    acts = run_episode(w, p)
    assert w.reason == "blocked" and acts[-1] == "STOP" and w.stopped
    refused = [t for o, t in p.heard if o == "collision"]
    assert len(refused) == limit
    gaps = [b - a for a, b in zip(refused, refused[1:], strict=False)]
    assert min(gaps) >= wait - 1e-6, gaps


def test_replaying_an_action_file_runs_the_runner_and_gives_the_run_back():
    """``replay --backend batch`` plays the file through the same runner (ActionFilePolicy): the
    blocked waits and the consecutive-blocked limit happen as in the run that wrote the file (a
    plain World.step loop ignored both: the world's time, people and outcome parted from the run)."""
    w1 = World(Scene.builtin(), _episode(), Crowd([]), seed=0)
    acts = run_episode(w1, WallWalker(w1))
    w2 = World(Scene.builtin(), _episode(), Crowd([]), seed=0)
    res = replay_actions(w2, acts)
    assert res.reason == "blocked" and w2.reason == "blocked"
    assert w2.actions == acts and w2.t == w1.t and w2.pose == w1.pose
    # the file's tail beyond the blocked end is never played (the runner ended the episode first)
    w3 = World(Scene.builtin(), _episode(), Crowd([]), seed=0)
    replay_actions(w3, acts[:-1] + ["MOVE_FORWARD"] * 5 + ["STOP"])
    assert w3.actions == acts and w3.t == w1.t


def test_action_file_policy_plays_then_stops():
    p = ActionFilePolicy(["TURN_LEFT", "MOVE_FORWARD"])
    p.reset("x")
    assert [p.act(None) for _ in range(4)] == ["TURN_LEFT", "MOVE_FORWARD", "STOP", "STOP"]


def test_sweep_panoramas_retake_missing_views_with_turns_that_are_not_challenge_actions():
    """With agent_node's sweep panoramas (``panorama_sweeps``) a view without a frame is retaken as
    agent_node retakes it: TURNs there and back, through the executor (sim time passes), not counted
    as challenge actions. A policy that does not look offers no frames, so every view is retaken."""
    w = World(Scene.builtin(), _episode(start=(2.0, 0.0, 0.0)), Crowd([]), seed=0)
    acts = run_episode(w, "forward:steps=1,views=2", panorama_sweeps=True)
    assert acts == ["MOVE_FORWARD", "STOP"] and w.reason == "stop"
    assert len(w.loop.results) == 2  # the executor results of the challenge actions only
    turn_s = 0.5  # far less than a 15 deg turn takes; two sweeps alone take > 10 s
    assert w.t > 2 * 12 * turn_s, w.t


@pytest.mark.parametrize("rules", [True, False])
def test_agent_rules_off_is_a_raw_stepper(rules):
    w = World(Scene.builtin(), _episode(), Crowd([]), seed=0)
    p = WallWalker(w)
    run_episode(w, p, agent_rules=rules)
    assert (w.reason == "blocked") is rules and bool(p.heard) is rules
