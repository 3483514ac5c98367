"""Collision kinds: in simulation the trial keeps the robot's classification and the simulator's ground
truth side by side, every report says which it uses, and a ground-truth human contact is never a
success; the demo's note compares per kind."""

from __future__ import annotations

import csv
import sqlite3

import pytest

from havln_robot import actions as A
from havln_robot.records import ActionResult, CollisionRecord, EpisodeDone, GroundTruth
from havln_robot.trials.metrics import sr_success, success_table, summarize
from havln_robot.trials.session import SessionConfig, TrialMeta, TrialSession
from havln_robot.trials.store import MIGRATIONS, TrialStore

META = {"region": "kitchen", "instance": "", "operator": "ci", "people_present": 1, "goal_radius": 3.0}


def _gt(ne, human=0, static=0, episode="6047"):
    return GroundTruth(episode, "gZ6f7yhEvPG", 1.0, 2.0, 0.0, 10.0, ne, 0.68, "0", human, static, 1.0)


@pytest.fixture
def session(tmp_path):
    store = TrialStore(tmp_path / "t.db")
    s = TrialSession(store, SessionConfig(auto_start=True, auto_end=True, auto_judge=True), lambda: TrialMeta(META, "sim"))
    yield s
    store.close()


def _demo_seed0_case(s):
    """The reported case: the simulator counts a contact with a person 0.68 m away, motion_node
    classifies its jolt as static, the agent stops within the success radius."""
    s.on_ground_truth(_gt(5.6))
    s.on_instruction("walk towards the bench")
    s.on_result(ActionResult(1, A.MOVE_FORWARD, "collision", x=0.25, y=0.0, yaw_deg=0.0), 1.0)
    s.on_collision(CollisionRecord(1.0, 0.25, 0.0, 0.0, A.MOVE_FORWARD, "static", 0.0, None, "moving", "jolt", contact=True), 1.0)
    s.on_ground_truth(_gt(2.0, human=1))
    s.on_result(ActionResult(2, A.STOP, "ok", x=0.25, y=0.0, yaw_deg=0.0), 2.0)
    return s.on_episode_done(EpisodeDone.from_values({"reason": "stop", "steps": 2, "actions": [A.MOVE_FORWARD, A.STOP]}))


def test_ground_truth_kept_beside_the_robots_classification_and_never_a_success(session, tmp_path):
    t = _demo_seed0_case(session)
    st = session.store
    assert t.outcome == "success"  # STOP within 3 m: the verdict; SR is what the contact decides
    t = st.trial(t.id)
    assert (t.gt_collisions_human, t.gt_collisions_static) == (1, 0) and t.collision_source == "ground truth"
    assert [c.type for c in st.collisions(t.id)] == ["static"]  # the robot's own classification, kept
    s = summarize(t, st.steps(t.id), st.collisions(t.id))
    assert (s.collisions_human, s.collisions_static, s.robot_human, s.robot_static) == (1, 0, 0, 1) and s.kinds_differ
    assert not sr_success(t, 0)  # whatever count a caller passes, the stored ground truth decides
    assert success_table([t])["all"]["all"].k == 0

    from havln_robot.trials.report import write_report

    write_report(st, tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "the simulator's ground truth for 1 trial" in md and "robot human 0 / static 1" in md
    assert "**SR** (HA-VLN)" in md and "0/1" in md.split("**SR** (HA-VLN)")[1].split("\n")[0]
    row = next(csv.DictReader((tmp_path / "rep" / "trials.csv").open()))
    assert (row["collisions_human"], row["sr_success"], row["collision_source"], row["robot_collisions_static"]) == (
        "1",
        "0",
        "ground truth",
        "1",
    )


def test_robot_trials_report_the_robots_own_counts(tmp_path):
    with TrialStore(tmp_path / "t.db") as st:
        t = st.start_trial("go2", "kitchen", people_present=1)
        st.add_collision(t.id, {"step_seq": 0, "stamp": 1.0, "type": "human"})
        st.set_outcome(t.id, "success", reason="by eye", ne_m=1.0)
        t = st.trial(t.id)
        assert t.collision_source == "robot"
        s = summarize(t, [], st.collisions(t.id))
        assert s.collisions_human == 1 and not s.kinds_differ
        from havln_robot.trials.report import write_report

        write_report(st, tmp_path / "rep")
    assert "the robot's own classification (motion_node) for 1 trial" in (tmp_path / "rep" / "report.md").read_text()


def test_a_new_episode_restarts_the_ground_truth_counts(session):
    session.on_ground_truth(_gt(5.0, human=2, static=1, episode="1"))  # an earlier episode's contacts
    session.on_instruction("walk to the door")
    session.on_ground_truth(_gt(5.0, human=2, static=2, episode="1"))
    t = session.store.trial(session.trial.id)
    assert (t.gt_collisions_human, t.gt_collisions_static) == (0, 1)
    session.on_ground_truth(_gt(5.0, human=1, static=0, episode="2"))
    t = session.store.trial(t.id)
    assert (t.gt_collisions_human, t.gt_collisions_static) == (1, 0)


def test_v3_store_migrates_with_no_ground_truth(tmp_path):
    p = tmp_path / "old.db"
    con = sqlite3.connect(p)
    for script in MIGRATIONS[:3]:
        con.executescript(script)
    con.execute("INSERT INTO trials (started, platform, region) VALUES (1.0, 'sim', 'kitchen')")
    con.execute("PRAGMA user_version = 3")
    con.commit()
    con.close()
    with TrialStore(p) as st:
        t = st.trials()[0]
        assert t.gt_collisions_human is None and t.collision_source == "robot" and t.recording_fault == ""


def test_demo_note_compares_per_kind():
    from havln_robot.demo import EpisodeRun, kinds_note

    run = EpisodeRun("6047", "gZ6f7yhEvPG", "walk")
    run.collisions = [{"type": "static", "source": "jolt"}]
    run.ground_truth = _gt(2.0, human=1)
    note = kinds_note(run)
    assert "human 0, static 1" in note and "human 1, static 0" in note  # totals agree (1 = 1); kinds do not
    run.ground_truth = _gt(2.0, static=1)
    assert kinds_note(run) == ""
