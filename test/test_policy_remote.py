"""A policy served over HTTP (havln-robot policy-server) and its client RemotePolicy: same actions as
the local policy, retries of one decision that never step the policy twice, the robot standing
still while the server does not answer, and the gap in the episode record."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from havln_robot.actions import MOVE_FORWARD, STOP, TURN_LEFT
from havln_robot.agent.core import ActionOutcome, AgentConfig, EpisodeRunner, RawView
from havln_robot.perception.preprocess import Intrinsics
from havln_robot.policy.api import Observation, Policy, PolicyError
from havln_robot.policy.registry import is_builtin, make_policy, no_data_fallback
from havln_robot.policy.remote import PolicyUnreachable, RemotePolicy, parse_remote_spec
from havln_robot.policy.serve import serve


class Served:
    """A policy server on 127.0.0.1 in a thread; ``cut()`` closes its socket (the link is gone) and
    ``restore()`` opens it again on the same port with the same policy state."""

    def __init__(self, policy, port=0, delay_s=0.0):
        self.srv = serve(policy, "127.0.0.1", port, delay_s)
        self.port = self.srv.server_address[1]
        self.handler = self.srv.RequestHandlerClass
        self._start()

    def _start(self):
        self.thread = threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def spec(self, **opts):
        q = "&".join(f"{k}={v}" for k, v in opts.items())
        return f"http://127.0.0.1:{self.port}" + (f"?{q}" if q else "")

    def cut(self):
        self.srv.shutdown()
        self.srv.server_close()

    def restore(self):
        from http.server import ThreadingHTTPServer

        self.srv = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        self.srv.daemon_threads = True
        self._start()

    def close(self):
        self.cut()


class Scripted(Policy):
    """Front-view policy answering a script; counts its act calls; the first act may be slow."""

    def __init__(self, script, first_delay_s=0.0):
        self.script, self.first_delay_s = list(script), first_delay_s
        self.name, self.views = "scripted", 1
        self.calls = 0
        self.outcomes: list[tuple[str, str]] = []

    def reset(self, instruction):
        self.i = 0

    def act(self, obs):
        obs.check(1)
        self.calls += 1
        if self.calls == 1:
            time.sleep(self.first_delay_s)
        a = self.script[min(self.i, len(self.script) - 1)]
        self.i += 1
        return a

    def on_action_result(self, action, outcome):
        self.outcomes.append((action, outcome))


class StandingRobot:
    """AgentIO double: records when each action was sent; its camera always has a frame."""

    def __init__(self, on_send=None):
        self.sent: list[tuple[float, str]] = []
        self.on_send = on_send
        self.intr = Intrinsics.from_hfov(160, 120, 69.4)

    def send_action(self, action):
        self.sent.append((time.monotonic(), action))
        if self.on_send:
            self.on_send(len(self.sent))
        return ActionOutcome(action, "ok", {"yaw_imu_deg": "0", "yaw_odom_deg": "0"})

    def grab(self):
        return RawView(np.full((120, 160, 3), 90, np.uint8), np.full((120, 160), 2000, np.uint16), self.intr, time.monotonic())

    def publish_status(self, values):
        pass


def test_spec_is_parsed_and_bad_specs_are_refused():
    assert parse_remote_spec("http://10.0.0.2:8770") == ("10.0.0.2", 8770, 3.0, 8.0)
    assert parse_remote_spec("http://h:1?timeout_s=0.5&wait_s=20") == ("h", 1, 0.5, 20.0)
    assert not is_builtin("http://h:1")
    assert no_data_fallback("http://h:1") == ("http://h:1", None)  # the server has its own data
    for bad, words in (
        ("http://h", "HOST:PORT"),
        ("http://h:1/act", "HOST:PORT"),
        ("http://h:1?retries=3", "unknown option"),
        ("http://h:1?timeout_s=5&wait_s=1", "timeout_s <= wait_s"),
        ("http://h:1?wait_s=x", "numbers of seconds"),
    ):
        with pytest.raises(PolicyError, match=words):
            make_policy(bad)


def test_no_server_is_one_clear_error_within_wait_s(free_port):
    t0 = time.monotonic()
    with pytest.raises(PolicyUnreachable, match=r"no answer to info within wait_s=0.3 s.*policy-server"):
        make_policy(f"http://127.0.0.1:{free_port}?timeout_s=0.1&wait_s=0.3")
    assert time.monotonic() - t0 < 3.0


def test_remote_episode_matches_the_local_one_and_reports_outcomes():
    script = [MOVE_FORWARD, TURN_LEFT, MOVE_FORWARD, STOP]
    server_side = Scripted(script)
    s = Served(server_side)
    try:
        pol = make_policy(s.spec())
        assert isinstance(pol, RemotePolicy) and pol.views == 1 and pol.name.startswith("scripted@127.0.0.1")
        runner = EpisodeRunner(pol, StandingRobot(), AgentConfig())
        res = runner.run("go")
        runner.close()
    finally:
        s.close()
    assert res.reason == "stop" and res.actions == script, res
    assert server_side.outcomes == [(a, "ok") for a in script[:-1]]  # the hook crossed the link
    assert res.link_gaps == [] and '"link_gap_s": 0.0' in res.to_json()


def test_slow_answer_is_retried_for_the_same_decision_and_the_policy_steps_once():
    """The first inference outlives the client's timeout: the client asks again for decision 0 with
    the same observation, the server answers from its cache; the policy was stepped once."""
    server_side = Scripted([MOVE_FORWARD, STOP], first_delay_s=0.8)
    s = Served(server_side)
    try:
        pol = RemotePolicy(s.spec(timeout_s=0.25, wait_s=5))
        runner = EpisodeRunner(pol, StandingRobot(), AgentConfig())
        res = runner.run("go")
        runner.close()
    finally:
        s.close()
    assert res.reason == "stop" and res.actions == [MOVE_FORWARD, STOP], res
    assert server_side.calls == 2  # two decisions, each computed once
    (gap,) = res.link_gaps
    assert gap["call"] == "act" and gap["seq"] == 0 and gap["answered"] and gap["tries"] >= 2 and gap["wait_s"] >= 0.5


def test_link_cut_robot_stands_still_then_goes_on():
    """The link drops right after the 2nd action was sent and comes back 1.2 s later: no action is
    sent in between (no stale or guessed decision), the episode goes on with the policy's actions
    and records the gap."""
    script = [MOVE_FORWARD, MOVE_FORWARD, TURN_LEFT, MOVE_FORWARD, STOP]
    s = Served(Scripted(script))
    window: list[float] = []

    def on_send(n):
        if n == 2:
            s.cut()
            window.append(time.monotonic())
            threading.Timer(1.2, lambda: (window.append(time.monotonic()), s.restore())).start()

    robot = StandingRobot(on_send)
    try:
        pol = RemotePolicy(s.spec(timeout_s=0.2, wait_s=6))
        runner = EpisodeRunner(pol, robot, AgentConfig())
        res = runner.run("go")
        runner.close()
    finally:
        s.close()
    assert res.reason == "stop" and res.actions == script, res
    t_cut, t_back = window
    assert not [a for t, a in robot.sent if t_cut < t < t_back], robot.sent  # stood still while cut
    (gap,) = res.link_gaps
    assert gap["seq"] == 2 and gap["answered"] and 1.0 <= gap["wait_s"] and gap["tries"] >= 2


def test_server_gone_for_good_episode_ends_with_the_robot_still():
    s = Served(Scripted([MOVE_FORWARD] * 10))
    robot = StandingRobot(lambda n: s.cut() if n == 1 else None)
    pol = RemotePolicy(s.spec(timeout_s=0.1, wait_s=0.6))
    runner = EpisodeRunner(pol, robot, AgentConfig())
    res = runner.run("go")
    runner.close()
    assert res.reason == "aborted" and res.error and "no answer to act" in res.detail, res
    assert [a for _, a in robot.sent] == [MOVE_FORWARD]  # nothing sent after the cut
    assert res.link_gaps[-1]["answered"] is False and res.link_gaps[-1]["wait_s"] >= 0.6


def test_another_client_resetting_ends_the_first_session():
    s = Served(Scripted([MOVE_FORWARD]))
    try:
        a, b = RemotePolicy(s.spec()), RemotePolicy(s.spec())
        a.reset("go")
        b.reset("go too")
        o = Observation(np.zeros((1, 224, 224, 3), np.uint8), np.zeros((1, 256, 256, 1), np.float32), np.zeros(1, np.float32), 0)
        with pytest.raises(PolicyError, match="session ended"):
            a.act(o)
        assert b.act(o) == MOVE_FORWARD
    finally:
        s.close()


def test_remote_gives_the_same_actions_as_local_on_a_real_episode(havln_data):
    """small_panoramic, locally and through the server, on the same rendered observations of a real
    HA-R2R val_seen episode (one render: both are asked at every step)."""
    pytest.importorskip("torch")
    from havln_robot.episodes import load_episodes
    from havln_robot.eval import run_episode
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.mesh_scene import load_scene
    from havln_robot.sim.world import World

    local = make_policy("small_panoramic")
    s = Served(make_policy("small_panoramic"))
    pairs: list[tuple[str, str]] = []

    class Both(Policy):
        views, name = local.views, "both"

        def __init__(self, remote):
            self.remote = remote

        def reset(self, instruction):
            local.reset(instruction)
            self.remote.reset(instruction)

        def act(self, obs):
            pairs.append((local.act(obs), self.remote.act(obs)))
            return pairs[-1][0]

        def on_action_result(self, action, outcome):
            local.on_action_result(action, outcome)
            self.remote.on_action_result(action, outcome)

    try:
        (ep,) = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", havln_data / "connectivity", limit=1)
        scene = load_scene(ep.scan, havln_data / "connectivity")
        world = World(scene, ep, Crowd.from_episode(ep, scene, seed=0), seed=0)
        run_episode(world, Both(RemotePolicy(s.spec(timeout_s=30, wait_s=60))))
    finally:
        s.close()
    assert len(pairs) >= 3
    assert [r for _, r in pairs] == [loc for loc, _ in pairs]


def test_agent_node_runs_a_served_policy_and_checks_its_wait(ros_context):
    """agent_node with policy http://HOST:PORT: the episode's actions are the server's, the record
    has the link fields; a wait_s not below inference_timeout_s is refused at start."""
    from test_agent_node import FakeRobot, send_instruction, wait_for

    from havln_robot.agent.params import AGENT_PARAMS
    from havln_robot.bringup import NodeThreads
    from havln_robot.nodes.agent_node import AgentNode
    from havln_robot.params import ConfigError

    script = [MOVE_FORWARD, TURN_LEFT, STOP]
    s = Served(Scripted(script))
    try:
        with pytest.raises(ConfigError, match=r"wait_s=12 s is not below inference_timeout_s=10 s"):
            AgentNode(params=AGENT_PARAMS.validate({"policy": s.spec(wait_s=12)}), context=ros_context)
        p = AGENT_PARAMS.validate({"policy": s.spec(), "settle_s": 0.05, "frame_timeout_s": 10.0, "action_timeout_s": 10.0})
        agent, robot = AgentNode(params=p, context=ros_context), FakeRobot(ros_context)
        spin = NodeThreads(ros_context, log=print)
        spin.add("agent", agent)
        spin.add("robot", robot)
        try:
            send_instruction(robot, "walk forward, turn left and stop")
            assert wait_for(lambda: robot.done), "no episode_done"
        finally:
            agent.safe_stop()
            spin.stop(timeout=5)
            for n in (agent, robot):
                n.destroy_node()
    finally:
        s.close()
    done = robot.done[0]
    assert done["reason"] == "stop" and done["actions"] == script and robot.actions == script
    assert done["link_gaps"] == [] and done["link_gap_s"] == 0.0


def test_doctor_checks_a_served_policy(free_port):
    """havln-robot doctor with agent_node policy http://...: OK naming the served policy while the
    server answers, one FAIL line with the fix when it does not (within ~2 s)."""
    from havln_robot import doctor
    from havln_robot.doctor import FAIL, OK, Probes

    ctx = doctor.make_context(Path(__file__).resolve().parents[1] / "config" / "go2.yaml", Probes(env={"HAVLN_DDS": "robot"}))
    s = Served(Scripted([STOP]))
    try:
        ctx.nodes["agent_node"]["policy"] = s.spec()
        r = doctor.check_model(ctx)
        assert r.status == OK and "serves scripted@127.0.0.1" in r.detail, r.line()
    finally:
        s.close()
    ctx.nodes["agent_node"]["policy"] = f"http://127.0.0.1:{free_port}"
    t0 = time.monotonic()
    r = doctor.check_model(ctx)
    assert r.status == FAIL and "no answer to info" in r.detail and "policy-server" in r.fix and time.monotonic() - t0 < 5
