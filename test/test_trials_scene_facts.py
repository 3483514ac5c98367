"""Every trial records its goal, people present and region when its source knows them (the simulator's
ground truth, plan rows), and a success without a measured NE says how it was judged."""

from __future__ import annotations

import math

from havln_robot.records import GroundTruth
from havln_robot.trials import cli
from havln_robot.trials.session import SessionConfig, TrialMeta, TrialSession
from havln_robot.trials.store import TrialStore


def _gt(**kw):
    base = {"episode_id": "6047", "scan": "gZ6f7yhEvPG", "x": -2.77, "y": 1.55, "distance_to_goal_m": 5.6}
    return GroundTruth(**{**base, **kw})


def test_ground_truth_carries_the_episode_facts_on_the_wire():
    gt = _gt(goal_x=1.10196, goal_y=-1.10724, people=1, region="classroom")
    back = GroundTruth.from_values(gt.to_values())
    assert math.isclose(back.goal_x, 1.10196, abs_tol=1e-3) and math.isclose(back.goal_y, -1.10724, abs_tol=1e-3)
    assert back.people == 1 and back.region == "classroom"
    old = GroundTruth.from_values({"episode_id": "1", "x": "0", "y": "0"})  # a bag from before the keys
    assert old.goal_x is None and old.people == -1 and old.region == ""


def _session(tmp_path, meta):
    store = TrialStore(tmp_path / "t.db")
    return TrialSession(store, SessionConfig(auto_start=True), lambda: TrialMeta(meta, "sim"))


def test_demo_trials_get_goal_people_and_region_from_the_simulator(tmp_path):
    # the demo case: the logger knows nothing of the scene (region unknown, 0 people, no goal)
    s = _session(tmp_path, {"region": "unknown", "people_present": 0})
    s.on_instruction("walk towards the bench")
    s.on_ground_truth(_gt(goal_x=1.10196, goal_y=-1.10724, people=1, region="classroom"))
    t = s.store.trial(s.trial.id)
    assert (t.goal_x, t.goal_y, t.goal_frame) == (1.10196, -1.10724, "map")
    assert t.people_present == 1 and t.region == "classroom"
    s.store.close()


def test_plan_and_operator_facts_are_kept(tmp_path):
    s = _session(tmp_path, {"region": "office", "people_present": 2, "goal_x": 3.0, "goal_y": 0.0, "goal_frame": "start"})
    s.on_instruction("walk to the door")
    s.on_ground_truth(_gt(goal_x=9.0, goal_y=9.0, people=1, region="classroom"))
    t = s.store.trial(s.trial.id)
    assert (t.goal_x, t.goal_frame, t.people_present, t.region) == (3.0, "start", 2, "office")
    s.store.close()


def test_success_without_a_measured_ne_asks_for_one_or_by_eye(tmp_path, capsys):
    db = str(tmp_path / "t.db")
    assert cli.main(["--db", db, "start", "--region", "office", "--goal", "3", "0"]) == 0
    # goal 3 m away, no pose recorded: nothing to measure NE from
    assert cli.main(["--db", db, "end", "--success"]) == 2
    err = capsys.readouterr().err
    assert "no measured NE" in err and "--ne" in err and "--by-eye" in err
    assert cli.main(["--db", db, "end", "--success", "--by-eye"]) == 0
    with TrialStore(db, readonly=True) as st:
        t = st.trial(1)
        assert t.outcome == "success" and t.ne_m is None and t.ne_source == "by eye"
    capsys.readouterr()
    assert cli.main(["--db", db, "show", "1"]) == 0
    assert "by eye" in capsys.readouterr().out
    # a measured NE needs no flag
    assert cli.main(["--db", db, "start", "--region", "office"]) == 0
    assert cli.main(["--db", db, "end", "--success", "--ne", "1.2"]) == 0
