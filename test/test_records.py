"""Typed wire records (havln_robot.records): round trips, legacy records, the counting rules. No ROS."""

from __future__ import annotations

import json
import math

import pytest

from havln_robot import actions as A
from havln_robot.records import (
    SCHEMA_KEY,
    SCHEMA_VERSION,
    ActionResult,
    AgentStatus,
    CollisionRecord,
    EndReason,
    EpisodeDone,
    GroundTruth,
    MotionTally,
    Outcome,
    RecordError,
    Verdict,
    executed_amount,
)
from havln_robot.topics import ACTION_RESULT_KEYS, AGENT_STATUS_KEYS, COLLISION_KEYS, GROUND_TRUTH_KEYS

#: An action result as motion_node published it before schema_version / executed / refused existed.
LEGACY_RESULT = {
    "seq": "7",
    "action": "MOVE_FORWARD",
    "outcome": "ok",
    "distance_odom_m": "0.2480",
    "yaw_odom_deg": "0.1000",
    "yaw_imu_deg": "0.0500",
    "pitch_deg": "0.0000",
    "position_error_m": "0.0030",
    "yaw_error_deg": "-0.0500",
    "duration_s": "1.3000",
    "x": "1.2000",
    "y": "-0.5000",
    "yaw_deg": "12.0000",
    "reverted": "false",
    "detail": "",
}


def test_action_result_round_trip_keeps_today_keys_and_adds_the_version():
    r = ActionResult(3, A.TURN_LEFT, "ok", yaw_imu_deg=15.02, yaw_odom_deg=14.9, x=1.0, y=2.0, yaw_deg=30.0)
    v = r.to_values()
    assert tuple(v) == (*ACTION_RESULT_KEYS, SCHEMA_KEY) and v[SCHEMA_KEY] == str(SCHEMA_VERSION)
    assert v["outcome"] == "ok" and v["reverted"] == "false" and v["refused"] == "false" and v["x"] == "1.0000"
    assert float(v["executed"]) == pytest.approx(math.radians(15.02), abs=1e-4)
    back = ActionResult.from_values(v)
    assert back.outcome is Outcome.OK and back.action == A.TURN_LEFT and back.seq == 3
    assert back.to_values() == v


def test_legacy_action_result_decodes_as_version_1_with_derived_fields():
    r = ActionResult.from_values(LEGACY_RESULT)
    assert r.schema_version == 1 and r.outcome == "ok" and r.seq == 7
    assert r.executed is None and r.executed_amount() == pytest.approx(0.248)
    assert not r.is_refused and not r.is_partial


def test_outcome_and_action_fall_back_to_status_name_and_message():
    r = ActionResult.from_values({"seq": "1"}, name="STOP", message="ok")
    assert (r.action, r.outcome) == ("STOP", Outcome.OK)


def test_unknown_outcome_and_bad_version_are_record_errors():
    with pytest.raises(RecordError, match="outcome"):
        ActionResult.from_values({**LEGACY_RESULT, "outcome": "exploded"})
    with pytest.raises(RecordError, match=SCHEMA_KEY):
        ActionResult.from_values({**LEGACY_RESULT, SCHEMA_KEY: "x"})
    with pytest.raises(RecordError):
        GroundTruth.from_values({SCHEMA_KEY: "0"})


def test_a_newer_version_decodes_the_known_keys():
    r = ActionResult.from_values({**LEGACY_RESULT, SCHEMA_KEY: "2", "something_new": "1"})
    assert r.schema_version == 2 and r.distance_odom_m == pytest.approx(0.248)


def test_refusals_are_decided_once():
    blocked = ActionResult(1, A.MOVE_FORWARD, "collision", detail="blocked before start: 300 depth points")
    rejected = ActionResult(2, A.TURN_LEFT, "rejected", detail="busy executing MOVE_FORWARD (seq 1)")
    unsupported = ActionResult(3, A.LOOK_UP, "unsupported")
    stopped = ActionResult(4, A.MOVE_FORWARD, "collision", distance_odom_m=0.1, detail="person 0.44 m")
    assert blocked.is_refused and rejected.is_refused and unsupported.is_refused and not stopped.is_refused
    assert blocked.blocked_before_start and not rejected.blocked_before_start and not stopped.blocked_before_start
    assert stopped.is_partial and stopped.executed_amount() == pytest.approx(0.1) and not blocked.is_partial
    # the executor's explicit flag wins over the derivation, and travels on the wire
    assert ActionResult.from_values(ActionResult(5, A.TURN_LEFT, "ok", refused=True).to_values()).is_refused


def test_executed_amount_by_kind():
    assert executed_amount(A.MOVE_FORWARD, "ok", 0.25, 0.0, 0.0, False) == pytest.approx(0.25)
    assert executed_amount(A.MOVE_FORWARD, "collision", 0.2, 0.0, 0.0, True) == 0.0  # reverted
    assert executed_amount(A.TURN_RIGHT, "ok", 0.0, -15.0, -14.0, False) == pytest.approx(A.TURN_ANGLE_RAD)
    assert executed_amount(A.TURN_LEFT, "ok", 0.0, math.nan, 14.0, False) == pytest.approx(math.radians(14.0))  # odom fallback
    assert executed_amount(A.LOOK_DOWN, "ok", 0.0, 0.0, 0.0, False) == pytest.approx(A.TILT_ANGLE_RAD)
    assert executed_amount(A.LOOK_DOWN, "unsupported", 0.0, 0.0, 0.0, False) == 0.0
    assert executed_amount(A.STOP, "ok", 0.0, 0.0, 0.0, False) == 0.0


def test_collision_record_round_trip_and_is_contact():
    c = CollisionRecord(1.5, 0.1, 0.2, 3.0, A.MOVE_FORWARD, "human", 0.0, 4, "moving", "people", contact=True)
    v = c.to_values()
    assert tuple(v) == (*COLLISION_KEYS, SCHEMA_KEY) and v["contact"] == "true" and v["human_id"] == "4"
    back = CollisionRecord.from_values(v)
    assert back.is_contact and back.is_human_contact and back.human_id == 4
    blocked = CollisionRecord(1.5, 0.1, 0.2, 3.0, A.MOVE_FORWARD, "static", 0.3, None, "blocked", "depth", contact=True)
    assert not blocked.is_contact  # nothing moved: prevented, whatever the flag says
    assert CollisionRecord.from_values(blocked.to_values()).to_values()["human_id"] == ""


@pytest.mark.parametrize(
    ("legacy", "contact"),
    [
        # stopped short of a person's personal space: the old replay default ("contact" missing -> true)
        # counted this prevented collision as a human contact
        ({"type": "human", "source": "people", "distance_m": "0.4400", "motion_state": "moving"}, False),
        ({"type": "static", "source": "depth", "distance_m": "0.0000", "motion_state": "moving"}, False),
        ({"type": "human", "source": "people", "distance_m": "0.0000", "motion_state": "moving"}, True),
        ({"type": "static", "source": "jolt", "distance_m": "0.0000", "motion_state": "turning"}, True),
        ({"type": "static", "source": "stall", "distance_m": "0.0000", "motion_state": "moving"}, True),
        ({"type": "human", "source": "people", "distance_m": "0.0000", "motion_state": "blocked"}, False),
    ],
)
def test_a_missing_contact_key_is_inferred_from_the_evidence(legacy, contact):
    c = CollisionRecord.from_values({"action": "MOVE_FORWARD", **legacy})
    assert c.schema_version == 1 and c.contact is contact and c.is_contact is contact


def test_ground_truth_round_trip_and_missing_values():
    gt = GroundTruth("42", "zsNo4HB9uLZ", 1.0, 2.0, 0.0, 90.0, 3.5, 1.2, "3", 1, 2, 7.25, 3.1, True)
    v = gt.to_values()
    assert tuple(v) == (*GROUND_TRUTH_KEYS, SCHEMA_KEY) and v["nearest_human_id"] == "3" and v["collisions_static"] == "2"
    assert v["goal_unreachable"] == "true" and v["distance_to_goal_euclid_m"] == "3.1000"
    assert GroundTruth.from_values(v) == gt
    # the simulator's own dict (numbers, bools, "" = nobody on the floor) encodes the same way
    sim = {**{k: getattr(gt, k) for k in GROUND_TRUTH_KEYS}, "nearest_human_id": "", "nearest_human_m": "", "goal_unreachable": False}
    nobody = GroundTruth.from_values(sim)
    assert nobody.nearest_person_m is None and not nobody.goal_unreachable and nobody.to_values()["nearest_human_m"] == ""
    assert GroundTruth.from_values({**sim, "nearest_human_m": "-1.0000"}).nearest_person_m is None  # older simulators
    assert GroundTruth.from_values({**sim, "goal_unreachable": "True"}).goal_unreachable  # str(bool) of older writers
    empty = GroundTruth.from_values({})
    assert not empty.has_pose and math.isnan(empty.distance_to_goal_m) and math.isnan(empty.distance_to_goal_euclid_m)


def test_agent_status_round_trip():
    st = AgentStatus(4, A.TURN_LEFT, "acting", 12.5, 3.0, 0.9)
    v = st.to_values()
    assert tuple(v) == (*AGENT_STATUS_KEYS, SCHEMA_KEY) and v["step"] == "4" and v["policy_ms"] == "12.5000"
    assert AgentStatus.from_values(v) == st
    assert AgentStatus.from_values({"step": "x"}).step == -1


def test_episode_done_keeps_the_summary_and_decodes_foreign_json():
    body = {"reason": "stop", "steps": 4, "actions": ["STOP"], "instruction": "go", "policy_ms_mean": 3.0}
    d = EpisodeDone.from_json(json.dumps(body))
    assert (d.reason, d.steps, d.instruction, d.schema_version) == (EndReason.STOP, 4, "go", 1) and d.values == body
    assert json.loads(d.to_json())[SCHEMA_KEY] == SCHEMA_VERSION
    assert EpisodeDone.from_values({"steps": True}).steps is None and EpisodeDone.from_values({}).reason == "done"
    with pytest.raises(RecordError, match="not a JSON object"):
        EpisodeDone.from_json("nope")
    with pytest.raises(RecordError):
        EpisodeDone.from_values([1, 2])  # type: ignore[arg-type]


def test_tally_counts_refusals_partials_and_contacts_the_same_way():
    results = [
        ActionResult(1, A.MOVE_FORWARD, "ok", distance_odom_m=0.25),
        ActionResult(2, A.MOVE_FORWARD, "collision", detail="blocked before start: wall"),
        ActionResult(3, A.MOVE_FORWARD, "collision", distance_odom_m=0.12),
        ActionResult(4, A.TURN_LEFT, "rejected"),
    ]
    cols = [
        CollisionRecord(0, 0, 0, 0, A.MOVE_FORWARD, "static", 0.3, None, "blocked", "depth", contact=False),
        CollisionRecord(0, 0, 0, 0, A.MOVE_FORWARD, "human", 0.0, 1, "moving", "people", contact=True),
        CollisionRecord(0, 0, 0, 0, A.MOVE_FORWARD, "static", 0.0, None, "moving", "jolt", contact=True),
    ]
    t = MotionTally.of(results, cols)
    assert (t.actions, t.refused, t.partial) == (4, 2, 1)
    assert t.by_outcome == {"ok": 1, "collision": 2, "rejected": 1}
    assert (t.contacts, t.human_contacts, t.prevented) == (2, 1, 1)


def test_enums_are_the_wire_strings():
    assert [o.value for o in Outcome] == ["ok", "collision", "timeout", "slip", "stall", "aborted", "rejected", "unsupported"]
    assert [v.value for v in Verdict] == ["success", "failure", "aborted"]
    assert Outcome.OK == "ok" and f"{Verdict.SUCCESS}" == "success"


def test_records_and_the_file_format_and_trial_subsystems_load_no_rclpy():
    """challenge/, trials/ (session, recorder, CLI), motion/obstacles and the records import no ROS;
    the ROS layer (havln_robot.ros) injects what they need."""
    import subprocess
    import sys

    mods = "havln_robot.records havln_robot.challenge.replay havln_robot.challenge.cli havln_robot.trials.session havln_robot.trials.recorder havln_robot.trials.cli havln_robot.motion.obstacles havln_robot.motion.executor"
    code = f"import importlib, sys\nfor m in {mods.split()!r}: importlib.import_module(m)\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('rclpy', 'sensor_msgs', 'diagnostic_msgs', 'std_msgs')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
