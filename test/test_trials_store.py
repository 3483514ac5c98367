"""Trial store: round trip, validation, migrations, SIGKILL crash safety, campaign resume, CLI."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from havln_robot.trials import cli
from havln_robot.trials.metrics import navigation_error, summarize, trajectory
from havln_robot.trials.plan import load_plan
from havln_robot.trials.regions import REGION_TYPES, RegionError, canonical_region
from havln_robot.trials.store import MIGRATIONS, SCHEMA_VERSION, Collision, Step, TrialError, TrialStore


def test_round_trip_and_reopen(tmp_path):
    db = tmp_path / "t.db"
    with TrialStore(db) as st:
        t = st.start_trial(
            "go2", "Living Room", people_present=2, instance="lab 3F", instruction="walk to the sofa", goal_x=4.0, goal_y=0.0,
            operator="alice", episode_id="17", scan="zsNo4HB9uLZ", start_x=1.0, start_y=2.0, start_yaw=math.pi / 2,
        )  # fmt: skip
        assert t.region == "living room" and t.state == "running" and t.goal_frame == "start"
        for i in range(5):
            st.add_step(t.id, Step(seq=99, stamp=float(i), action="MOVE_FORWARD", outcome="ok", x=1.0, y=2.0 + 0.25 * (i + 1),
                                   yaw=math.pi / 2, imu_yaw=1.57, collisions=int(i == 2), nearest_person_m=1.5 - 0.1 * i,
                                   nearest_person_id="3", people_visible=2, result={"seq": str(i), "detail": "x"}))  # fmt: skip
        st.add_collision(t.id, Collision(step_seq=2, stamp=2.5, type="human", x=1.0, y=2.7, yaw=1.57, distance_m=0.3, human_id="3"))
        st.add_step(t.id, {"stamp": 6.0, "action": "STOP", "outcome": "ok", "x": 1.0, "y": 3.25, "yaw": math.pi / 2})
        st.finish_trial(t.id, "stop")
        assert st.trial(t.id).state == "awaiting verdict"
        st.set_outcome(t.id, "failure", reason="stopped short")
        t3 = st.start_trial("sim", "office")
        st.add_step(t3.id, Step(seq=0, stamp=0.0, action="TURN_LEFT", outcome="ok"))  # a panorama turn
        st.add_step(t3.id, Step(seq=0, stamp=1.0, action="MOVE_FORWARD", outcome="rejected"))
        st.add_step(t3.id, Step(seq=0, stamp=2.0, action="STOP", outcome="ok"))
        assert st.actions(t3.id) == ["TURN_LEFT", "STOP"]
        st.record_agent_summary(t3.id, {"reason": "stop", "steps": 1, "actions": ["STOP"]})
        assert st.actions(t3.id) == ["STOP"] and st.executed_actions(t3.id, include_rejected=True) == ["TURN_LEFT", "MOVE_FORWARD", "STOP"]
        assert st.trial(t3.id).agent_summary["reason"] == "stop"
        # tables count the policy's steps (VLN steps) and, separately, every executed motion
        s3 = summarize(st.trial(t3.id), st.steps(t3.id), [])
        assert (s3.steps, s3.motions) == (1, 3)
    with TrialStore(db, readonly=True) as st:
        t2 = st.trial(t.id)
        assert (t2.outcome, t2.reason, t2.end_reason, t2.people_present, t2.scan) == ("failure", "stopped short", "stop", 2, "zsNo4HB9uLZ")
        # goal 4 m ahead of the start pose; the robot drove 1.25 m forward -> NE 2.75 m from odometry
        assert t2.ne_m == pytest.approx(2.75) and t2.ne_source == "odometry"
        steps = st.steps(t.id)
        assert [s.seq for s in steps] == list(range(6))
        assert steps[2].collisions == 1 and steps[2].result == {"seq": "2", "detail": "x"}
        assert st.actions(t.id) == st.executed_actions(t.id) == ["MOVE_FORWARD"] * 5 + ["STOP"]
        [c] = st.collisions(t.id)
        assert (c.type, c.human_id, c.step_seq) == ("human", "3", 2)
        assert (summarize(t2, steps, [c]).steps, summarize(t2, steps, [c]).motions) == (6, 6)  # no agent summary
        tr = trajectory(t2, steps, [c])
        assert tr.source == "odom" and tr.points[-1] == pytest.approx([1.25, 0.0]) and tr.goal == pytest.approx((4.0, 0.0))
        assert tr.collisions[0] == pytest.approx([0.7, 0.0])
        assert st.integrity_ok()


def test_validation_messages(tmp_path):
    with TrialStore(tmp_path / "t.db") as st:
        with pytest.raises(TrialError, match="did you mean 'office'"):
            st.start_trial("go2", "offce")
        with pytest.raises(TrialError, match="platform"):
            st.start_trial("turtlebot", "office")
        with pytest.raises(TrialError, match="people_present"):
            st.start_trial("go2", "office", people_present=-1)
        with pytest.raises(TrialError, match="goal"):
            st.start_trial("go2", "office", goal_x=1.0)
        t = st.start_trial("go2", "office")
        with pytest.raises(TrialError, match="still running"):
            st.start_trial("go2", "hallway")
        with pytest.raises(TrialError, match="not one of"):
            st.add_step(t.id, Step(seq=0, stamp=0.0, action="JUMP"))
        t2 = st.start_trial("go2", "hallway", supersede="operator restart")
        assert st.trial(t.id).outcome == "aborted" and st.trial(t.id).reason == "operator restart"
        st.set_outcome(t2.id, "success")
        with pytest.raises(TrialError, match="already ended"):
            st.set_outcome(t2.id, "failure")
        with pytest.raises(TrialError, match="is finished"):
            st.add_step(t2.id, Step(seq=0, stamp=0.0, action="STOP"))
        with pytest.raises(TrialError, match="no such trial"):
            st.trial(999)
        with pytest.raises(TrialError, match="ne"):
            st.set_outcome(t2.id, "success", ne_m=-1, overwrite=True)


def test_regions_cover_ha_r2r_prefixes(havln_data):
    data = json.loads((havln_data / "ha_r2r_de" / "HA_val_seen.json").read_text())
    prefixes = {h["human_description"].split(":", 1)[0] for e in data for h in e.get("human", [])}
    assert len(prefixes) >= 20
    assert prefixes <= set(REGION_TYPES), prefixes - set(REGION_TYPES)
    for p in prefixes:
        assert canonical_region(p) == p


def test_region_aliases():
    assert canonical_region("lobby") == "entryway/foyer/lobby"
    assert canonical_region("  Living_Room ") == "living room"
    assert canonical_region("conference room") == "meetingroom/conferenceroom"
    with pytest.raises(RegionError, match="did you mean 'hallway'"):
        canonical_region("hallwya")


def test_migration_from_v1_and_refusals(tmp_path):
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript(MIGRATIONS[0])
    con.execute("PRAGMA user_version = 1")
    con.execute("INSERT INTO trials (started, platform, region, people_present) VALUES (1.0, 'go2', 'office', 1)")
    con.commit()
    con.close()
    with TrialStore(db) as st:
        assert st.schema_version == SCHEMA_VERSION == 4
        assert st.trials()[0].policy == ""  # v3 provenance columns added with defaults
        [t] = st.trials()
        assert (t.region, t.people_present, t.campaign_id) == ("office", 1, None)
        assert st.campaigns() == []
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    with pytest.raises(TrialError, match="newer than this build"):
        TrialStore(db)
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE foo (x)")
    con.commit()
    con.close()
    with pytest.raises(TrialError, match="not a trial database"):
        TrialStore(other)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(TrialError, match="cannot open"):
        TrialStore(junk)


_WRITER = textwrap.dedent(
    """
    import sys
    from havln_robot.trials.store import Step, TrialStore
    st = TrialStore(sys.argv[1])
    t = st.start_trial("go2", "office", people_present=1)
    i = 0
    while True:
        st.add_step(t.id, Step(seq=0, stamp=float(i), action="MOVE_FORWARD", outcome="ok", x=0.25 * i, y=0.0, yaw=0.0))
        print(i, flush=True)
        i += 1
    """
)


def test_sigkill_mid_trial_loses_at_most_the_step_in_flight(tmp_path):
    db = tmp_path / "crash.db"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(db)], stdout=subprocess.PIPE, text=True)
    acked = -1
    deadline = time.monotonic() + 60
    while acked < 150 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, "writer died"
        acked = int(line)
    os.kill(proc.pid, signal.SIGKILL)  # mid-trial, while it is writing
    rest = proc.stdout.read()
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    for line in rest.split():
        acked = int(line)
    # every step the writer reported committed is there; at most one more (the one in flight)
    with TrialStore(db) as st:
        assert st.integrity_ok()
        run = st.running_trial()
        assert run is not None and run.region == "office"
        n = st.step_count(run.id)
        assert acked + 1 <= n <= acked + 2, (acked, n)
        assert [s.seq for s in st.steps(run.id)] == list(range(n))
        assert st.close_interrupted() == [run.id]
        t = st.trial(run.id)
        assert t.end_reason == "interrupted" and t.outcome is None  # the operator's verdict is still possible
        st.set_outcome(run.id, "failure", reason="logger crashed")


PLAN = """
campaign: lab-1
description: test campaign
defaults: {platform: go2, operator: alice}
trials:
  - {region: office, people: 0, instruction: "walk to the desk", goal: [4.0, 1.0], repeat: 2}
  - {region: lobby, people: 2, instruction: "cross the lobby"}
"""


def test_campaign_resumes_where_it_stopped(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    db = tmp_path / "t.db"
    name, _, planned = load_plan(plan)
    assert name == "lab-1" and [p.region for p in planned] == ["office", "office", "entryway/foyer/lobby"]
    with TrialStore(db) as st:
        st.import_plan(name, planned)
        p0 = st.next_planned(name)
        t = st.start_planned(p0)
        assert (t.region, t.goal_x, t.operator, t.planned_id) == ("office", 4.0, "alice", p0.id)
        st.set_outcome(t.id, "success")
        p1 = st.next_planned(name)
        assert p1.seq == 1
        t = st.start_planned(p1)
        st.add_step(t.id, Step(seq=0, stamp=0.0, action="MOVE_FORWARD"))
    # the process dies here; a new session re-imports the plan (no-op) and resumes
    with TrialStore(db) as st:
        st.import_plan(name, planned)
        assert [s for _, s in st.planned(name)] == ["done", "running", "pending"]
        st.close_interrupted(judge=True)
        assert st.next_planned(name).seq == 1  # aborted trial: the plan row is run again
        t = st.start_planned(st.next_planned(name))
        st.set_outcome(t.id, "failure")
        assert st.next_planned(name).seq == 2
        [c] = st.campaigns()
        assert (c.name, c.planned, c.done) == ("lab-1", 3, 2)
        planned[0].instruction = "changed"
        with pytest.raises(TrialError, match="different plan"):
            st.import_plan(name, planned)


@pytest.mark.parametrize(
    "text,match",
    [
        ("campaign: x\ntrials:\n  - {region: offce}\n", "did you mean 'office'"),
        ("campaign: x\ntrials:\n  - {region: office, peeple: 2}\n", "did you mean 'people'"),
        ("campaign: x\ntrials:\n  - {region: office, goal: [1]}\n", r"trials\[0\]: goal"),
        ("campaign: x\ntrials:\n  - {region: office, people: two}\n", "people_present"),
        ("trials:\n  - {region: office}\n", "campaign: missing"),
        ("campaign: x\ntrials: [\n", "invalid YAML"),
    ],
)
def test_plan_errors_are_one_line(tmp_path, text, match):
    p = tmp_path / "plan.yaml"
    p.write_text(text)
    with pytest.raises(TrialError, match=match) as ei:
        load_plan(p)
    assert "\n" not in str(ei.value)


def test_plan_csv(tmp_path):
    p = tmp_path / "week1.csv"
    p.write_text("region,people,instruction,goal_x,goal_y,repeat\noffice,0,go,3,1,2\nhallway,3,go on,,,1\n")
    name, _, planned = load_plan(p)
    assert name == "week1" and len(planned) == 3
    assert planned[2].people_present == 3 and planned[2].goal_x is None and planned[0].goal_frame == "start"
    p.write_text("region,people\noffice,-1\n")
    with pytest.raises(TrialError, match="line 2: people_present"):
        load_plan(p)


def test_ne_sources():
    from havln_robot.trials.store import Trial

    t = Trial(
        id=1, started=0.0, platform="sim", region="office", goal_x=3.0, goal_y=4.0, goal_frame="map", start_map_x=0.0, start_map_y=0.0
    )
    steps = [Step(seq=0, stamp=0.0, action="STOP", map_x=0.0, map_y=0.0)]
    assert navigation_error(t, steps) == (5.0, "ground_truth")
    steps[0].distance_to_goal_m = 4.5  # the sim's geodesic/ground-truth figure wins
    assert navigation_error(t, steps) == (4.5, "ground_truth")
    t2 = Trial(id=2, started=0.0, platform="go2", region="office", goal_x=1.0, goal_y=1.0, goal_frame="odom")
    assert navigation_error(t2, [Step(seq=0, stamp=0.0, action="STOP", x=1.0, y=0.0)]) == (1.0, "odometry")
    assert navigation_error(t2, []) is None


def test_cli_flow(tmp_path, capsys):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    db = str(tmp_path / "t.db")
    assert cli.main(["--db", db, "plan", str(plan)]) == 0
    assert "0/3 trials done" in capsys.readouterr().out
    assert cli.main(["--db", db, "start", "--next"]) == 0
    assert "trial 1 started" in capsys.readouterr().out
    assert cli.main(["--db", db, "start", "--region", "office"]) == 2
    err = capsys.readouterr().err
    assert "still running" in err and err.count("\n") == 1
    assert cli.main(["--db", db, "end", "--failure", "--reason", "wrong door", "--ne", "3.4"]) == 0
    out = capsys.readouterr().out
    assert "trial 1: failure, NE 3.40 m (operator)" in out and "1/3 trials done" in out
    assert cli.main(["--db", db, "next"]) == 0
    assert "#2 go2 office" in capsys.readouterr().out
    assert cli.main(["--db", db, "start", "--region", "lobi", "--people", "1"]) == 2
    assert "did you mean 'entryway/foyer/lobby'" in capsys.readouterr().err
    assert cli.main(["--db", db, "start", "--region", "hallway", "--people", "1", "--goal", "2", "0"]) == 0
    assert cli.main(["--db", db, "end", "--abort"]) == 0
    assert cli.main(["--db", db, "list"]) == 0
    out = capsys.readouterr().out
    assert "failure" in out and "aborted" in out
    assert cli.main(["--db", db, "show", "1", "--steps"]) == 0
    assert "wrong door" in capsys.readouterr().out
    assert cli.main(["--db", db, "end", "--success"]) == 2
    assert "no running or unjudged trial" in capsys.readouterr().err
    assert cli.main(["--db", db, "show", "7"]) == 2


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"goal_x": 1e308, "goal_y": 1e308}, "goal_x: 1e+308 m is beyond 10000 m"),
        ({"goal_x": 1.0, "goal_y": -2e4}, "goal_y: -20000 m is beyond"),
        ({"goal_radius": 1e9}, "goal_radius: must be > 0 and <= 100 m"),
        ({"start_map_x": 5e6}, "start_map_x"),
    ],
)
def test_absurd_goal_or_start_is_refused_by_the_store_too(tmp_path, fields, needle):
    """The CLI's bound on --goal (QA: `trial start --goal 1e308 1e308` overflowed the report) holds for
    every writer: plan files and trial_logger_node go through the store's validation."""
    with TrialStore(tmp_path / "t.db") as st, pytest.raises(TrialError, match=needle.replace("+", r"\+")):
        st.start_trial("go2", "office", **fields)


def test_plan_file_with_an_absurd_goal_is_refused_before_anything_is_imported(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.replace("goal: [4.0, 1.0]", "goal: [4.0e+308, 1.0]"))
    with pytest.raises((TrialError, ValueError), match="goal"):
        name, _, planned = load_plan(plan)
        with TrialStore(tmp_path / "t.db") as st:
            st.import_plan(name, planned)
