"""The robot's own collision kind: a bump is human when a person is within reach, a person seen moments
before and then out of the camera's view included (the make demo seed 0 case, from its MCAP bag)."""

from __future__ import annotations

from havln_robot.motion.executor import Executor, MotionConfig
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.motion.people_input import PeopleInput
from havln_robot.motion.safety import Obstacles, Person

#: make demo seed 0 (episode 6047): people_node saw the person 1.11 m ahead at t = 221.0 s (odom pose
#: SEEN_AT); the robot turned and walked on, and stalled at t = 237.6 s (odom pose BUMP_AT) with nobody
#: in view while sim_node counted a human contact (nearest person 0.68 m).
SEEN_AT = (-3.0454, 0.5424, 0.0779)
BUMP_AT = (-3.4188, -0.1104, -2.0857)


def _people_at_bump(recall_s: float) -> Obstacles:
    p = MOTION_PARAMS.defaults()
    inp = PeopleInput(p["max_people"], p["people_timeout_s"])
    inp.set_people([Person(1.11, -0.13)], 221.0, SEEN_AT)
    inp.set_people([], 237.5, BUMP_AT)  # the newest message: nobody in view
    assert inp.fresh(237.6, BUMP_AT) == []
    return Obstacles(people=[], recalled=inp.recalled(237.6, BUMP_AT, recall_s))


def test_a_person_seen_moments_before_makes_a_bump_human():
    cfg = MotionConfig.from_params(MOTION_PARAMS.defaults())
    ex = Executor(cfg)
    hz = ex._classify_bump(_people_at_bump(MOTION_PARAMS.defaults()["contact_recall_s"]), "stall", "no progress")
    assert hz.type == "human" and hz.contact and "seen nearby moments before" in hz.detail
    # nobody remembered (recall off) -> static, as before
    assert ex._classify_bump(_people_at_bump(0.0), "stall", "no progress").type == "static"


def test_fresh_people_still_classify_and_far_memories_do_not():
    ex = Executor(MotionConfig.from_params(MOTION_PARAMS.defaults()))
    assert ex._classify_bump(Obstacles(people=[Person(0.9, 0.0, 7)]), "jolt", "IMU jolt").type == "human"
    far = Obstacles(recalled=[Person(-4.0, 3.0)])
    assert ex._classify_bump(far, "jolt", "IMU jolt").type == "static"
