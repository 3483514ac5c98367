"""Lockstep sim time: the clock's gate (pure) and the demo's episode run twice, once beside two CPU hogs."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import domain

from havln_robot.sim.lockstep import FOREIGN_ACTION_WAIT_S, Ack, ActionClaims, Gate, StepInbox

REPO = Path(__file__).resolve().parent.parent


def _gate() -> Gate:
    g = Gate(timeout_s=5.0)
    g.heard(Ack("/motion_node", "motion", t_ns=10, wall=100.0))
    g.heard(Ack("/agent_node", "agent", t_ns=10, wants=True, wall=100.0))
    return g


def test_gate_waits_for_every_participant_and_for_someone_to_want_time():
    g = _gate()
    assert g.why_not(10, 100.1) is None
    assert g.why_not(20, 100.1) == "waiting for /motion_node, /agent_node"
    g.heard(Ack("/agent_node", "agent", t_ns=10, wants=False, wall=100.0))
    assert g.why_not(10, 100.1) == "idle"  # nobody needs time: the clock stands still (the policy thinks)


def test_gate_holds_while_an_action_or_a_result_is_in_flight():
    g = _gate()
    g.heard(Ack("/agent_node", "agent", t_ns=10, wants=True, actions=1, wall=100.0))
    assert "in flight to motion_node" in g.why_not(10, 100.1)
    g.heard(Ack("/motion_node", "motion", t_ns=10, wants=True, actions=1, results=1, cmd_seq=3, cmd=(0.0, 0.5), wall=100.0))
    assert g.why_not(10, 100.1) == "action result in flight to sim_node"
    g.results_seen = 1
    assert "in flight to /agent_node" in g.why_not(10, 100.1)
    g.heard(Ack("/agent_node", "agent", t_ns=10, wants=True, actions=1, results=1, wall=100.0))
    assert g.why_not(10, 100.1) is None
    assert g.command(100.1) == (3, (0.0, 0.5))


def test_step_inbox_handles_a_step_once_all_its_messages_are_in_in_a_fixed_order():
    steps = {10: frozenset({"odom", "camera"}), 20: frozenset({"odom"})}

    def next_step(after):
        return next(((t, s) for t, s in sorted(steps.items()) if t > after), None)

    def needs(_t, streams):
        return (["odom"] if "odom" in streams else []) + (["depth"] if "camera" in streams else [])

    wall = [0.0]
    box = StepInbox(wait_s=30.0)
    assert box.hold("depth", 10, "d10") and box.hold("odom", 20, "o20")
    assert list(box.ready(next_step, needs, lambda: wall[0])) == []  # step 10 waits for its odometry
    assert box.waiting and box.done == -1
    box.hold("odom", 10, "o10")
    got = []
    for t, missing in box.ready(next_step, needs, lambda: wall[0]):
        got.append((t, missing, box.take(t, ("odom", "depth"))))
    assert got == [(10, [], [("odom", "o10"), ("depth", "d10")]), (20, [], [("odom", "o20")])]
    assert box.done == 20 and not box.waiting
    assert not box.hold("odom", 20, "repeat")  # a repeat of a handled step is not kept
    # a lost message: the step is handled without it after wait_s of wall time, the kind named
    steps[30] = frozenset({"odom", "camera"})
    box.hold("odom", 30, "o30")
    assert list(box.ready(next_step, needs, lambda: wall[0])) == []
    wall[0] = 31.0
    assert [(t, m) for t, m in box.ready(next_step, needs, lambda: wall[0])] == [(30, ["depth"])]


def test_action_claims_start_an_agent_action_at_its_step_and_a_foreign_one_after_a_wait():
    c = ActionClaims()
    c.arrived("FORWARD", wall=0.0)
    c.agent_at(actions=1, t_ns=50)
    assert c.due(done_ns=40, agent_live=True, wall=0.0) is None  # motion_node not at the agent's step yet
    assert c.due(done_ns=50, agent_live=True, wall=0.0) == ("FORWARD", 50)
    assert c.started == 1 and c.due(50, True, 0.0) is None
    c.arrived("LEFT", wall=1.0)  # nobody claims it (the console)
    assert c.due(60, True, 1.0) is None
    assert c.due(60, True, 1.0 + FOREIGN_ACTION_WAIT_S) == ("LEFT", 60)
    c.arrived("RIGHT", wall=2.0)
    assert c.due(70, False, 2.0) == ("RIGHT", 70)  # without an agent at once
    assert c.started == 1


def test_gate_drops_a_silent_participant():
    g = _gate()
    g.heard(Ack("/agent_node", "agent", t_ns=10, wants=True, wall=103.0))
    assert g.why_not(20, 106.0) == "waiting for /agent_node"  # motion_node silent for 6 s > 5 s: dropped
    assert g.dropped == ["/motion_node"]
    g.bye("/agent_node")
    assert g.why_not(20, 106.0) == "no participant"


def _steps(db: Path) -> tuple[list, list]:
    """The trial's action records (odom pose, IMU yaw, motion_node's result record) and the trial's outcome.
    Left out: what the trial logger adds by itself -- it is no lockstep participant, so the sim time at
    which it received a result (``stamp``, one step either way) and the 10 Hz ground-truth map pose it
    held then depend on delivery."""
    con = sqlite3.connect(db)
    try:
        steps = []
        for action, outcome, x, y, yaw, imu_yaw, result in con.execute(
            "SELECT action, outcome, x, y, yaw, imu_yaw, result FROM steps ORDER BY seq"
        ):
            rec = json.loads(result)
            rec.pop("agent_state", None)
            steps.append((action, outcome, x, y, yaw, imu_yaw, rec))
        trials = [tuple(r) for r in con.execute("SELECT outcome, ne_m, end_reason FROM trials ORDER BY id")]
        return steps, trials
    finally:
        con.close()


def _demo(out: Path, hogs: int) -> tuple[list, list, list[str]]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    hog_procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(hogs)]
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "havln_robot.cli", "demo", "--max-actions", "2", "--seed", "0", "--out", str(out), "--quiet"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        for h in hog_procs:
            h.kill()
            h.wait()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    actions = json.loads((out / "val_seen.json").read_text())["episodes"][0]["actions"]
    return *_steps(out / "trials.db"), actions


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_demo_episode_is_the_same_beside_two_cpu_hogs(havln_data, tmp_path):
    """Lockstep (config/sim.yaml): the same seed takes the same actions, to the same results (durations,
    odometry and IMU yaws) and outcome, on an idle machine and beside two busy processes."""
    steps_a, trial_a, actions_a = _demo(tmp_path / "idle", hogs=0)
    steps_b, trial_b, actions_b = _demo(tmp_path / "loaded", hogs=2)
    assert actions_a == actions_b
    assert steps_a and steps_a == steps_b
    assert trial_a == trial_b


def _live_replay(episodes_file: Path, eid: str, seq: list[str], hogs: int) -> tuple:
    """A live replay (sim_node + motion_node, the replay as the agent participant), beside ``hogs`` busy loops."""
    from dataclasses import asdict

    from havln_robot.ros.replay import replay_ros

    hog_procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(hogs)]
    try:
        (r,) = replay_ros(
            [eid],
            {eid: seq},
            {},
            target="embedded",
            episodes_file=episodes_file,
            action_timeout_s=120.0,
            progress=False,
            log=lambda s: None,
        )
    finally:
        for h in hog_procs:
            h.kill()
            h.wait()
    return asdict(r.metrics), r.refused, r.actions, r.note


def test_live_replay_of_a_reference_file_is_the_same_beside_two_cpu_hogs(havln_data, monkeypatch):
    """A replayed action file is load-independent in lockstep: the final pose (NE to the micrometre),
    collisions and refusals are the same with and without two CPU hogs (on the wall clock they were not)."""
    pytest.importorskip("rclpy")
    pytest.importorskip("havln_robot.nodes.sim_node")
    from havln_robot.challenge.replay import follow_reference
    from havln_robot.episodes import load_episodes

    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain(3)))
    f = havln_data / "ha_r2r_de" / "HA_val_seen.json"
    ep = next(e for e in load_episodes(f) if str(e.episode_id) == "139")
    seq = [*follow_reference(ep)[:5], "STOP"]
    assert "MOVE_FORWARD" in seq
    idle = _live_replay(f, "139", seq, 0)
    loaded = _live_replay(f, "139", seq, 2)
    assert idle[2] == len(seq) and idle[1:] == loaded[1:]
    assert idle[0] == loaded[0]
