"""The HA-VLN discrete action vocabulary and the challenge's sequence rules.

Pure Python (no ROS import). Everything that speaks in actions -- the policy, the
simulator's batch mode, motion_node, the trial store and the challenge files -- uses
these literals and constants, so there is one place where they are defined.

Sources
-------
* Action literals, 500-action budget and the sequence rules: HA-VLN challenge
  submission format, ``format_version`` 1 (organisers' public docs; see
  ``../shared/data/ha-vln/README.md``).
* Step sizes: VLN-CE / HA-VLN-CE task configuration (``FORWARD_STEP_SIZE: 0.25``,
  ``TURN_ANGLE: 15``, ``TILT_ANGLE: 30``), HA-VLN 2.0, arXiv 2503.14229, Sec. 4.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from havln_robot.quoting import quote

STOP = "STOP"
MOVE_FORWARD = "MOVE_FORWARD"
TURN_LEFT = "TURN_LEFT"
TURN_RIGHT = "TURN_RIGHT"
LOOK_UP = "LOOK_UP"
LOOK_DOWN = "LOOK_DOWN"
SWEEP_LEFT = "SWEEP_LEFT"
SWEEP_RIGHT = "SWEEP_RIGHT"

FORWARD_STEP_M: float = 0.25
"""MOVE_FORWARD displacement, metres (VLN-CE FORWARD_STEP_SIZE)."""
TURN_ANGLE_DEG: float = 15.0
"""TURN_LEFT / TURN_RIGHT yaw change, degrees (VLN-CE TURN_ANGLE); left is +yaw (REP 103, z up)."""
TILT_ANGLE_DEG: float = 30.0
"""LOOK_UP / LOOK_DOWN camera pitch change, degrees (VLN-CE TILT_ANGLE)."""
TURN_ANGLE_RAD: float = math.radians(TURN_ANGLE_DEG)
TILT_ANGLE_RAD: float = math.radians(TILT_ANGLE_DEG)
MAX_ACTIONS: int = 500
"""Episode action budget (challenge rule and VLN-CE ``MAX_EPISODE_STEPS``)."""


class ActionKind(str, Enum):
    """What an action does to the robot; the motion executor and the simulator dispatch on it."""

    STOP = "stop"
    """End the episode / hold zero velocity; no amount."""
    TRANSLATE = "translate"
    """Drive along the body x axis by ``amount`` metres (+ = forward)."""
    ROTATE = "rotate"
    """Turn about the body z axis by ``amount`` radians (+ = left, REP 103)."""
    TILT = "tilt"
    """Change the camera elevation by ``amount`` radians (+ = up)."""


@dataclass(frozen=True)
class ActionSpec:
    """One row of the action table.

    Attributes:
        literal: the challenge-format string (``"MOVE_FORWARD"``).
        index: habitat ``HabitatSimActions`` index (the policy heads' class index).
        kind: :class:`ActionKind`.
        amount: the MAXIMUM signed amount of one action -- metres for ``TRANSLATE`` (body x,
            + forward), radians for ``ROTATE`` (body z, + left) and ``TILT`` (camera, + up), 0 for
            ``STOP``. What was actually executed (a step cut at a contact, a partial turn) travels
            in the action result, never here.
    """

    literal: str
    index: int
    kind: ActionKind
    amount: float


#: THE action table: every consumer (policy heads, motion executor, batch simulator, challenge
#: files) derives from these rows, so a new action is one row here. Rows are in habitat order.
ACTION_TABLE: tuple[ActionSpec, ...] = (
    ActionSpec(STOP, 0, ActionKind.STOP, 0.0),
    ActionSpec(MOVE_FORWARD, 1, ActionKind.TRANSLATE, FORWARD_STEP_M),
    ActionSpec(TURN_LEFT, 2, ActionKind.ROTATE, TURN_ANGLE_RAD),
    ActionSpec(TURN_RIGHT, 3, ActionKind.ROTATE, -TURN_ANGLE_RAD),
    ActionSpec(LOOK_UP, 4, ActionKind.TILT, TILT_ANGLE_RAD),
    ActionSpec(LOOK_DOWN, 5, ActionKind.TILT, -TILT_ANGLE_RAD),
)

#: The literals of the challenge format, in the habitat ``HabitatSimActions`` order
#: (STOP=0, MOVE_FORWARD=1, TURN_LEFT=2, TURN_RIGHT=3, LOOK_UP=4, LOOK_DOWN=5).
ACTIONS: tuple[str, ...] = tuple(row.literal for row in ACTION_TABLE)
ACTION_INDEX: dict[str, int] = {row.literal: row.index for row in ACTION_TABLE}
ACTION_SPECS: dict[str, ActionSpec] = {row.literal: row for row in ACTION_TABLE}

#: Robot-side motion primitives: rows of the same form that the motion executor (and nothing in
#: the challenge format or a policy head) accepts. ``SWEEP_LEFT`` / ``SWEEP_RIGHT`` turn once through
#: 360° at a constant yaw rate (the sweep rate of the motion profile, see
#: :meth:`havln_robot.motion.executor.MotionConfig.sweep_rate`) while the camera streams: the
#: continuous-sweep panorama (docs/perception.md). ``index`` -1: no habitat index, never emitted by a
#: policy, never in a format-v1 file (:data:`ACTIONS` does not list them).
PRIMITIVE_TABLE: tuple[ActionSpec, ...] = (
    ActionSpec(SWEEP_LEFT, -1, ActionKind.ROTATE, 2.0 * math.pi),
    ActionSpec(SWEEP_RIGHT, -1, ActionKind.ROTATE, -2.0 * math.pi),
)
#: Every literal motion_node executes: the challenge actions and the robot-side primitives.
MOTION_SPECS: dict[str, ActionSpec] = {**ACTION_SPECS, **{row.literal: row for row in PRIMITIVE_TABLE}}
SWEEPS: tuple[str, ...] = (SWEEP_LEFT, SWEEP_RIGHT)


def is_motion(value: object) -> bool:
    """Return True if ``value`` is a literal motion_node executes (:data:`MOTION_SPECS`)."""
    return isinstance(value, str) and value in MOTION_SPECS


#: The 4-way action space of the VLN-CE CMA policy head (STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT).
CMA_ACTIONS: tuple[str, ...] = ACTIONS[:4]


class ActionError(ValueError):
    """An action or action sequence breaks the challenge rules; the message names the rule."""


@dataclass(frozen=True)
class SequenceProblem:
    """One rule broken by an action sequence.

    Attributes:
        index: 0-based position of the offending action, or ``None`` for whole-sequence rules.
        rule: short rule id (``"type"``, ``"literal"``, ``"length"``, ``"stop-once"``, ``"stop-last"``).
        message: human-readable explanation including the fix.
    """

    index: int | None
    rule: str
    message: str


def is_action(value: object) -> bool:
    """Return True if ``value`` is exactly one of the six action literals (case-sensitive)."""
    return isinstance(value, str) and value in ACTION_INDEX


def parse_action(value: object) -> str:
    """Return ``value`` as an action literal.

    Raises:
        ActionError: ``value`` is not one of :data:`ACTIONS` (the message lists them).
    """
    if not is_action(value):
        raise ActionError(f"unknown action {quote(value)}; expected one of {', '.join(ACTIONS)}")
    return value  # type: ignore[return-value]


def sequence_problems(actions: object) -> list[SequenceProblem]:
    """Check an action sequence against the format-v1 rules and list every problem.

    Rules: a list of 1..500 actions; each one of the six literals; STOP appears exactly once
    and is the last action -- except that a sequence of exactly 500 actions (budget exhausted)
    may contain no STOP (if it contains one, it must still be exactly once and last).

    Args:
        actions: the candidate sequence (any JSON value is accepted and checked).

    Returns:
        All problems found, in index order; empty when the sequence is valid.
    """
    if not isinstance(actions, list):
        return [SequenceProblem(None, "type", f"actions must be a list of strings, got {type(actions).__name__}")]
    problems: list[SequenceProblem] = []
    n = len(actions)
    if n == 0:
        problems.append(SequenceProblem(None, "length", "actions is empty; at least one action (STOP) is required"))
        return problems
    if n > MAX_ACTIONS:
        problems.append(
            SequenceProblem(MAX_ACTIONS, "length", f"{n} actions exceed the {MAX_ACTIONS}-action budget; truncate to {MAX_ACTIONS}")
        )
    stops: list[int] = []
    for i, a in enumerate(actions):
        if not is_action(a):
            problems.append(SequenceProblem(i, "literal", f"{quote(a)} is not one of {', '.join(ACTIONS)}"))
        elif a == STOP:
            stops.append(i)
    if len(stops) > 1:
        for i in stops[:-1] if stops[-1] == n - 1 else stops[1:]:
            problems.append(SequenceProblem(i, "stop-once", "STOP must appear exactly once (end the episode at the first STOP)"))
    if stops and stops[-1] != n - 1:
        problems.append(SequenceProblem(stops[-1], "stop-last", "STOP must be the last action; drop the actions after it"))
    if not stops and n != MAX_ACTIONS:
        problems.append(
            SequenceProblem(
                None, "stop-last", f"sequence of {n} actions does not end with STOP (only a full {MAX_ACTIONS}-action sequence may omit it)"
            )
        )
    problems.sort(key=lambda p: -1 if p.index is None else p.index)
    return problems


def validate_sequence(actions: object) -> list[str]:
    """Return ``actions`` if it obeys the format-v1 rules.

    Raises:
        ActionError: listing every problem (see :func:`sequence_problems`).
    """
    problems = sequence_problems(actions)
    if problems:
        lines = [f"[{'-' if p.index is None else p.index}] {p.rule}: {p.message}" for p in problems]
        raise ActionError("invalid action sequence:\n  " + "\n  ".join(lines))
    return actions  # type: ignore[return-value]


def finalize_sequence(actions: Sequence[str]) -> list[str]:
    """Turn a raw executed-action log into a valid format-v1 sequence.

    Keeps the actions up to and including the first STOP; truncates to the 500-action budget;
    appends STOP when the episode ended early without one (e.g. aborted trial) and room is left.

    Raises:
        ActionError: an entry is not an action literal.
    """
    out: list[str] = []
    for a in actions:
        out.append(parse_action(a))
        if a == STOP or len(out) == MAX_ACTIONS:
            break
    if (not out or out[-1] != STOP) and len(out) < MAX_ACTIONS:
        out.append(STOP)
    return out
