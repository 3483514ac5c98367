"""Action vocabulary and format-v1 sequence rules, with property-based tests."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from havln_robot import actions as A

MOVES = [a for a in A.ACTIONS if a != A.STOP]
move_lists = st.lists(st.sampled_from(MOVES), min_size=0, max_size=A.MAX_ACTIONS - 1)


def test_constants_match_vln_ce_task_config():
    assert A.ACTIONS == ("STOP", "MOVE_FORWARD", "TURN_LEFT", "TURN_RIGHT", "LOOK_UP", "LOOK_DOWN")
    assert A.FORWARD_STEP_M == 0.25 and A.TURN_ANGLE_DEG == 15.0 and A.TILT_ANGLE_DEG == 30.0
    assert math.isclose(A.TURN_ANGLE_RAD, math.pi / 12) and A.MAX_ACTIONS == 500
    assert A.CMA_ACTIONS == ("STOP", "MOVE_FORWARD", "TURN_LEFT", "TURN_RIGHT")


@given(move_lists)
def test_moves_then_stop_is_valid(moves):
    seq = moves + [A.STOP]
    assert A.sequence_problems(seq) == []
    assert A.validate_sequence(seq) == seq


@given(st.lists(st.sampled_from(MOVES), min_size=A.MAX_ACTIONS, max_size=A.MAX_ACTIONS))
def test_full_budget_may_omit_stop(moves):
    assert A.sequence_problems(moves) == []


@given(st.lists(st.sampled_from(MOVES), min_size=1, max_size=A.MAX_ACTIONS - 1))
def test_short_sequence_without_stop_is_rejected(moves):
    probs = A.sequence_problems(moves)
    assert [p.rule for p in probs] == ["stop-last"]


@given(move_lists, move_lists.filter(bool))
def test_stop_not_last_is_rejected_at_its_index(before, after):
    seq = before + [A.STOP] + after
    if len(seq) > A.MAX_ACTIONS:
        return
    rules = {(p.rule, p.index) for p in A.sequence_problems(seq)}
    assert ("stop-last", len(before)) in rules


@given(move_lists, st.integers(min_value=2, max_value=5))
def test_repeated_stop_is_rejected(moves, n_stops):
    seq = (moves + [A.STOP] * n_stops)[-A.MAX_ACTIONS :]
    if seq.count(A.STOP) < 2:
        return
    probs = A.sequence_problems(seq)
    assert sum(p.rule == "stop-once" for p in probs) == seq.count(A.STOP) - 1


@given(st.lists(st.sampled_from(A.ACTIONS), min_size=A.MAX_ACTIONS + 1, max_size=A.MAX_ACTIONS + 20))
def test_over_budget_is_rejected(seq):
    assert any(p.rule == "length" for p in A.sequence_problems(seq))


@given(st.lists(st.one_of(st.sampled_from(A.ACTIONS), st.text(max_size=12), st.integers(), st.none()), max_size=600))
def test_validator_never_crashes_and_finds_every_bad_literal(seq):
    probs = A.sequence_problems(seq)
    bad = {i for i, a in enumerate(seq) if not A.is_action(a)}
    assert bad == {p.index for p in probs if p.rule == "literal"}
    assert (probs == []) == (A.sequence_problems(seq) == [])


@pytest.mark.parametrize("value", [None, "STOP", {"a": 1}, 3])
def test_non_list_is_a_type_problem(value):
    assert [p.rule for p in A.sequence_problems(value)] == ["type"]


def test_empty_sequence_is_rejected():
    assert [p.rule for p in A.sequence_problems([])] == ["length"]


def test_lowercase_literal_is_rejected_with_the_list():
    with pytest.raises(A.ActionError, match="MOVE_FORWARD"):
        A.parse_action("move_forward")


@given(st.lists(st.sampled_from(A.ACTIONS), max_size=700))
def test_finalize_always_yields_a_valid_sequence(raw):
    out = A.finalize_sequence(raw)
    assert A.sequence_problems(out) == []
    # it keeps the executed prefix up to the first STOP
    prefix = out[:-1] if out[-1] == A.STOP else out
    assert raw[: len(prefix)] == prefix
