"""havln_robot.trials.session: the trial logger's rules without ROS (a real TrialStore in tmp_path)."""

from __future__ import annotations

import pytest

from havln_robot import actions as A
from havln_robot.records import ActionResult, AgentStatus, CollisionRecord, EpisodeDone, GroundTruth, Verdict
from havln_robot.trials.session import (
    LATE_COLLISION_S,
    SessionConfig,
    TrialMeta,
    TrialSession,
    _LastCollisionStep,
    auto_verdict,
    credits_previous_step,
    is_superseded_end,
    planned_overrides,
)
from havln_robot.trials.store import PlannedTrial, TrialError, TrialStore

META = {"region": "kitchen", "instance": "", "operator": "ci", "people_present": 2, "goal_radius": 3.0}


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class Log:
    def __init__(self):
        self.lines = []

    def info(self, m):
        self.lines.append(("info", m))

    def warning(self, m):
        self.lines.append(("warning", m))

    def error(self, m):
        self.lines.append(("error", m))


@pytest.fixture
def session(tmp_path):
    store = TrialStore(tmp_path / "t.db")
    clock, log, seen = Clock(), Log(), []
    meta = {"value": TrialMeta(META, "sim")}
    s = TrialSession(
        store, SessionConfig(auto_start=True, auto_end=True, auto_judge=True), lambda: meta["value"], log, clock, on_trial=seen.append
    )
    s.test_clock, s.test_log, s.test_seen, s.test_meta = clock, log, seen, meta
    yield s
    store.close()


def _result(action, outcome="ok", x=1.0, y=2.0, yaw_deg=0.0):
    return ActionResult(1, action, outcome, x=x, y=y, yaw_deg=yaw_deg)


def _contact(action="", type_="static", **kw):
    return CollisionRecord(0.0, 1.3, 2.0, 0.0, action, type_, 0.0, None, kw.pop("state", "moving"), "jolt", contact=kw.pop("contact", True))


def _gt(ne, x=10.0, y=20.0):
    return GroundTruth("42", "zsNo4HB9uLZ", x, y, 0.0, 90.0, ne, 1.2, "3", 0, 0, 1.0)


# --- rules ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "ne", "unreachable", "verdict"),
    [
        ("stop", 2.0, False, Verdict.SUCCESS),
        ("stop", 3.0, False, Verdict.FAILURE),
        ("budget", 0.5, False, Verdict.FAILURE),
        ("stop", 0.5, True, Verdict.FAILURE),  # a goal the sim cannot walk to is never a success
        ("stop", None, False, Verdict.ABORTED),
    ],
)
def test_auto_verdict(reason, ne, unreachable, verdict):
    v, why = auto_verdict(reason, ne, 3.0, unreachable)
    assert v is verdict and why.startswith("auto: ") and reason in why and ("unreachable" in why) == unreachable


def test_aborted_episode_is_an_aborted_verdict_with_its_reason():
    """A policy exception, lost sensors or a lost camera end the trial aborted
    (with the agent's reason), not a failure counted in the success rate."""
    for detail in ("PolicyError: non-finite policy output", "motion_node aborted MOVE_FORWARD: odom silent for 0.31 s"):
        v, why = auto_verdict("aborted", 0.5, 3.0, False, detail)
        assert v is Verdict.ABORTED and detail in why


def test_late_collision_credit_window():
    last = _LastCollisionStep(seq=1, action=A.TURN_LEFT, t=10.0, credited=False)
    assert credits_previous_step(last, 10.5, A.TURN_LEFT) and credits_previous_step(last, 10.5, "")
    assert not credits_previous_step(last, 10.0 + LATE_COLLISION_S, A.TURN_LEFT)
    assert not credits_previous_step(last, 10.5, A.MOVE_FORWARD)
    assert not credits_previous_step(_LastCollisionStep(1, A.TURN_LEFT, 10.0, True), 10.5, A.TURN_LEFT)
    assert not credits_previous_step(None, 10.5, "")


def test_superseded_episode_end():
    assert is_superseded_end(EpisodeDone("aborted", 1, "an older instruction"), "go to the kitchen", 3)
    assert is_superseded_end(EpisodeDone("aborted", 5), "go to the kitchen", 0)
    assert not is_superseded_end(EpisodeDone("stop", 4, "go to the kitchen "), "go to the kitchen", 4)
    assert not is_superseded_end(EpisodeDone("stop", 1), "", 0)


def test_planned_overrides_keep_start_pose_and_note_a_different_instruction():
    meta = {"start_x": 1.0, "region": "bedroom", "instruction": "walk", "episode_id": "7", "operator": "x"}
    assert planned_overrides(meta, "walk", "walk") == {"start_x": 1.0, "instruction": "walk", "episode_id": "7"}
    assert planned_overrides(meta, "run", "walk")["notes"] == "planned instruction differed: run"


# --- a scripted trial ---------------------------------------------------------------------------------


def test_scripted_trial_steps_contacts_and_auto_verdict(session):
    s, store = session, session.store
    s.on_odom((1.0, 2.0, 0.0))
    s.on_ground_truth(_gt(5.0))
    s.on_people([(3.0, 0.0), (1.5, 0.0)])
    s.on_instruction("Walk into the kitchen.")
    t = store.running_trial()
    assert t is not None and s.test_seen == [t]  # the ROS shell starts the MCAP bag here
    assert (t.region, t.episode_id, t.start_x, t.start_map_x) == ("kitchen", "42", 1.0, 10.0)

    # prevented collisions (refused start, stopped short) are not collisions of the trial
    assert s.on_collision(_contact(A.MOVE_FORWARD, state="blocked"), 1.0) is None
    assert s.on_collision(_contact(A.MOVE_FORWARD, contact=False), 1.0) is None
    s.on_agent_status(AgentStatus(0, "", "acting"))
    step = s.on_result(_result(A.MOVE_FORWARD), 1.1)
    assert step.seq == 0 and step.collisions == 0 and step.people_visible == 2 and step.nearest_person_m == pytest.approx(1.5)
    assert step.result["agent_state"] == "acting" and step.map_x == 10.0 and step.distance_to_goal_m == 5.0

    # a contact report just after its action's "collision" result is credited to that step
    s.on_result(_result(A.TURN_LEFT, "collision"), 1.2)
    s.test_clock.t += 0.3
    assert s.on_collision(_contact(A.TURN_LEFT), 1.3).step_seq == 1
    # a contact during the next action is counted in that action's step
    s.test_clock.t += 0.1
    assert s.on_collision(_contact(A.MOVE_FORWARD, "human"), 1.4).step_seq == 2
    s.on_result(_result(A.MOVE_FORWARD, x=math_nan(), y=math_nan()), 1.5)  # no pose in the result: odometry
    s.on_ground_truth(_gt(2.0, 10.5))
    s.on_result(_result(A.STOP), 1.6)
    steps = store.steps(t.id)
    assert [x.collisions for x in steps] == [0, 1, 1, 0] and steps[2].x == 1.0

    # the end of a superseded episode does not end this trial; the real end judges it
    assert s.on_episode_done(EpisodeDone("aborted", 1, "an older instruction")) is None
    assert store.trial(t.id).state == "running"
    done = s.on_episode_done(EpisodeDone("stop", 4, "", {"reason": "stop", "steps": 4}))
    assert (done.outcome, done.end_reason, done.ne_m, done.ne_source) == ("success", "stop", 2.0, "ground_truth")
    assert s.trial is None and s.test_seen[-1] is None  # bag finished


def test_a_contact_reported_just_after_a_stall_is_credited_to_the_stalled_step(session):
    """A ``stall`` (pushing without progress) is a blocked motion like ``collision``: its contact
    report, arriving after the result, belongs to that step, not to the next action's."""
    s, store = session, session.store
    s.on_odom((1.0, 2.0, 0.0))
    s.on_ground_truth(_gt(5.0))
    s.on_instruction("Walk into the kitchen.")
    t = store.running_trial()
    s.on_result(_result(A.MOVE_FORWARD, "stall"), 1.1)
    s.test_clock.t += 0.3
    assert s.on_collision(_contact(A.MOVE_FORWARD), 1.2).step_seq == 0
    assert [x.collisions for x in store.steps(t.id)] == [1]


def math_nan():
    return float("nan")


def test_auto_judge_without_ground_truth_aborts(session):
    s = session
    s.on_instruction("go")
    t = s.on_episode_done(EpisodeDone("stop", 0))
    assert (t.outcome, t.reason) == ("aborted", "auto: no ground truth (stop)")


def test_a_new_instruction_supersedes_the_running_trial(session):
    s, store = session, session.store
    s.on_instruction("first")
    first = store.running_trial()
    s.on_result(_result(A.MOVE_FORWARD), 1.0)
    s.on_instruction("second")
    second = store.running_trial()
    assert second.id != first.id and second.instruction == "second"
    assert store.trial(first.id).outcome == "aborted"
    # the same instruction again, before any step, stays in the fresh trial
    s.on_instruction("second")
    assert store.running_trial().id == second.id


def test_bad_parameters_are_reported_not_raised(session):
    def refuse():
        raise ValueError("region: 'moon' is not a region")

    session.trial_meta = refuse
    session.on_instruction("go")
    assert session.store.running_trial() is None
    assert ("error", "trial not started: region: 'moon' is not a region") in session.test_log.lines


def test_campaign_trials_come_from_the_plan(session):
    s, store = session, session.store
    store.import_plan("lab", [PlannedTrial(0, "sim", "kitchen", 1, instruction="walk to the sink")])
    s.test_meta["value"] = TrialMeta(META, "sim", "lab")
    s.on_odom((0.5, 0.0, 0.0))
    s.on_instruction("walk to the fridge")
    t = store.running_trial()
    assert t.planned_id and t.instruction == "walk to the fridge" and t.start_x == 0.5
    assert "planned instruction differed: walk to the sink" in t.notes
    s.end(Verdict.SUCCESS, "operator")
    with pytest.raises(TrialError, match="complete"):
        s.begin("again", None)


def test_operator_end_and_shutdown(session):
    s, store = session, session.store
    with pytest.raises(TrialError, match="no running or unjudged trial"):
        s.end(Verdict.FAILURE, "")
    s.on_instruction("go")
    t = s.end(Verdict.FAILURE, "fell over")
    assert (t.outcome, t.reason) == ("failure", "fell over") and s.trial is None
    s.on_instruction("again")
    s.close()
    last = store.trials()[-1]
    assert (last.outcome, last.reason, last.end_reason) == ("aborted", "shutdown", "shutdown")


@pytest.mark.parametrize("auto_judge", [True, False])
def test_log_lines_escape_free_text_from_topics(tmp_path, auto_judge):
    """An episode_done reason arrives from any publisher: the log line shows its control characters escaped."""
    from havln_robot.trials.session import SessionConfig, TrialMeta, TrialSession

    store = TrialStore(tmp_path / "t.db")
    log = Log()
    s = TrialSession(
        store, SessionConfig(auto_start=True, auto_end=True, auto_judge=auto_judge), lambda: TrialMeta(META, "sim"), log, Clock()
    )
    try:
        s.on_instruction("go\x1b]0;PWNED\x07")
        s.on_episode_done(EpisodeDone("stop\x1b[2J\rfake\nline", 0))
    finally:
        store.close()
    text = " ".join(m for _, m in log.lines)
    assert "\\x1b[2J\\rfake\\nline" in text
    assert not any(ord(c) < 0x20 for _, m in log.lines for c in m)


def test_non_finite_odometry_opens_the_trial_with_an_unknown_start_pose(session):
    """NaN odometry when the instruction arrived used to drop the whole trial ('trial not started:
    start_x: expected a finite number, got nan'); it is now opened with start_x/y/yaw NULL and a
    warning, and the next finite odometry is used again."""
    s, store = session, session.store
    s.on_odom((math_nan(), 0.0, 0.0))
    s.on_instruction("walk to the door")
    t = store.running_trial()
    assert t is not None and t.instruction == "walk to the door"
    assert (t.start_x, t.start_y, t.start_yaw) == (None, None, None)
    assert any(level == "warning" and "start pose unknown" in m and "x = nan" in m for level, m in s.test_log.lines), s.test_log.lines
    assert not any(level == "error" for level, _ in s.test_log.lines)
    s.on_result(_result(A.MOVE_FORWARD, x=math_nan()), 1.0)  # a step's pose falls back on no NaN odometry
    s.on_odom((1.0, 2.0, 0.5))
    s.on_instruction("go back")
    t2 = store.running_trial()
    assert t2.id != t.id and (t2.start_x, t2.start_y, t2.start_yaw) == (1.0, 2.0, 0.5)


@pytest.mark.parametrize("text", ["\u200b", "\u2060\u200b", " \ufeff\u200d\n", "\u202e"])
def test_an_invisible_instruction_opens_no_trial(session, text):
    session.on_instruction(text)
    assert session.store.running_trial() is None
    assert any(kind == "warning" and "empty instruction ignored" in m for kind, m in session.test_log.lines)
