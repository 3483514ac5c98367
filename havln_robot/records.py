"""Typed records of everything that crosses a havln topic (pure Python, no ROS import).

One dataclass per record kind, each with ``to_values()`` (the ordered ``{key: str}`` pairs put into a
``diagnostic_msgs/DiagnosticStatus``, or the JSON object of ``havln/episode_done``) and
``from_values()`` (the inverse, tolerant of the records of older bags). The on-wire keys are the
``*_KEYS`` of :mod:`havln_robot.topics`; :mod:`havln_robot.nodes.codec` turns these records into
ROS messages and back.

Records
-------
* :class:`ActionResult` -- motion_node, one per action on ``havln/action_result``.
* :class:`CollisionRecord` -- motion_node, one per detected or prevented collision on ``havln/collision``.
* :class:`GroundTruth` -- sim_node, map-frame truth on ``havln/ground_truth``.
* :class:`AgentStatus` -- agent_node, after each decision on ``havln/agent_status``.
* :class:`EpisodeDone` -- agent_node, the end of an episode on ``havln/episode_done`` (JSON).

Schema versions
---------------
Every record carries ``schema_version`` (wire key :data:`SCHEMA_KEY`). A record without the key
is version 1 (everything recorded before the key existed). Version 1 additions that older bags do
not have are derived on decoding: ``executed`` and ``refused`` of an :class:`ActionResult` from its
other fields, and ``contact`` of a :class:`CollisionRecord` from its source and distance (see
:meth:`CollisionRecord.from_values`). A record of a newer version decodes the keys this version
knows and ignores the rest.

Counting
--------
Whether a collision is a real contact (:attr:`CollisionRecord.is_contact`), whether an action was
refused (:attr:`ActionResult.refused`) or executed only in part (:attr:`ActionResult.partial`) is
decided here and nowhere else; :class:`MotionTally` counts them the same way for every consumer.

Units follow the wire: metres, degrees for the ``*_deg`` keys, seconds; frames are named per field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from havln_robot import actions as A
from havln_robot import jsonio
from havln_robot.topics import ACTION_RESULT_KEYS, AGENT_STATUS_KEYS, COLLISION_KEYS, GROUND_TRUTH_KEYS

#: The schema version this code writes; a record without :data:`SCHEMA_KEY` is version 1.
SCHEMA_VERSION = 1
#: Wire key of the schema version (a DiagnosticStatus value, or a key of the episode_done JSON).
SCHEMA_KEY = "schema_version"


class RecordError(ValueError):
    """A record cannot be decoded (unknown outcome, a required key missing, a bad schema version)."""


class Outcome(StrEnum):
    """Outcome of one action, as motion_node reports it (``status.message`` and the ``outcome`` key)."""

    OK = "ok"
    COLLISION = "collision"  # stopped by (or refused before) an obstacle or a person
    TIMEOUT = "timeout"
    SLIP = "slip"
    STALL = "stall"
    ABORTED = "aborted"  # preempted by STOP, e-stop, sensor fault or shutdown
    REJECTED = "rejected"  # not started: busy, unknown literal or no odometry/IMU yet
    UNSUPPORTED = "unsupported"  # the platform cannot do it (LOOK_* on the Go2)


#: Outcomes of a motion that an obstacle or a person refused or stopped: ``collision`` (refused before
#: the start, stopped short of it, or a contact) and ``stall`` (no progress under command: pushing
#: against something the depth camera missed). The one definition
#: (:func:`is_blocked_outcome`; agent_node's, eval's and training's episode rules, the panorama, the trial log).
BLOCKED_OUTCOMES = frozenset({Outcome.COLLISION, Outcome.STALL})


def is_blocked_outcome(outcome: str) -> bool:
    """True when motion_node's ``outcome`` literal means an obstacle or a person refused or stopped the
    motion (:data:`BLOCKED_OUTCOMES`)."""
    return outcome in BLOCKED_OUTCOMES


#: agent_node's default ``max_consecutive_blocked`` (config/*.yaml agent_node): blocked policy actions
#: (or panorama turns) in a row that end an episode. A project choice (no paper or spec value).
MAX_CONSECUTIVE_BLOCKED = 10


class EpisodeBlocked(RuntimeError):
    """Obstacles or people refused or stopped ``max_consecutive_blocked`` motions in a row: the
    episode ends (reason ``blocked``) with the robot standing still, rather than pushing on."""


class BlockedCounter:
    """agent_node's count of motions that obstacles or people refused or stopped, in a row (one
    implementation: :class:`havln_robot.agent.core.EpisodeRunner`, which agent_node and every batch
    episode run (:mod:`havln_robot.agent.sim_io`), and the training rollout
    :func:`havln_robot.policy.dataset.rollout`).

    A blocked outcome (:data:`BLOCKED_OUTCOMES`: ``collision``, refused before the start because
    something is in the way or stopped short of it or by contact; ``stall``, no progress under
    command) counts; an ``ok`` one resets its kind's count; any other outcome (timeout, slip, ...)
    leaves it. Two kinds are counted apart: ``action`` (policy actions; only
    a policy action that completes resets it -- the panorama turns between two decisions do not,
    so a policy facing a wall is stopped) and ``turn`` (panorama turns).

    Args:
        limit: the count that ends the episode (``max_consecutive_blocked``, config/*.yaml agent_node;
            default :data:`MAX_CONSECUTIVE_BLOCKED`).
    """

    def __init__(self, limit: int = MAX_CONSECUTIVE_BLOCKED) -> None:
        self.limit = int(limit)
        self.in_row = {"action": 0, "turn": 0}

    def reset(self) -> None:
        """A new episode: both counts 0."""
        self.in_row = {"action": 0, "turn": 0}

    def update(self, outcome: str, kind: str, last: str = "") -> bool:
        """Count one motion's ``outcome`` (motion_node's literal) of ``kind``; True when it was blocked.

        Raises:
            EpisodeBlocked: the count of ``kind`` reached :attr:`limit` (``last`` names the motion in the message).
        """
        if not is_blocked_outcome(outcome):
            if outcome == Outcome.OK:
                self.in_row[kind] = 0
            return False
        self.in_row[kind] += 1
        n = self.in_row[kind]
        if n >= self.limit:
            what = "policy actions" if kind == "action" else "panorama turns"
            raise EpisodeBlocked(f"{n} {what} in a row refused or stopped by obstacles or people (last: {last})")
        return True


class Verdict(StrEnum):
    """Outcome of a trial (the trial store's ``outcome`` column)."""

    SUCCESS = "success"
    FAILURE = "failure"
    ABORTED = "aborted"


class EndReason(StrEnum):
    """Why an agent episode ended (``reason`` of ``havln/episode_done``)."""

    STOP = "stop"  # the policy said STOP
    BUDGET = "budget"  # max_actions reached
    BLOCKED = "blocked"  # too many motions in a row refused or stopped by obstacles or people
    ABORTED = "aborted"  # cancelled (new instruction, shutdown) or a failure


#: ``motion_state`` of a collision checked before the action started (nothing moved).
BLOCKED_STATE = "blocked"
#: Detail prefix of an action refused before it started (executor, :class:`ActionResult`).
BLOCKED_DETAIL = "blocked before start"
#: Collision sources that are physical evidence of a bump (a stall under command, an IMU jolt).
CONTACT_SOURCES = ("stall", "jolt")
#: A wire distance at or below this (m, the 4-decimal resolution) counts as touching.
_TOUCH_M = 5e-4

#: Detail prefix of a MOVE_FORWARD that moved as far as was safe instead of the full 0.25 m
#: (outcome ``ok``; the executed distance is ``distance_odom_m``; docs/motion.md "Margins").
PARTIAL_DETAIL = "partial step"


# --- value helpers ----------------------------------------------------------------------------------


def wire_value(v: Any) -> str:
    """The string of one value on the wire: floats with 4 decimals, bools "true"/"false", None as ""."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


def _float(values: Mapping[str, Any], key: str, default: float = math.nan) -> float:
    try:
        return float(values[key])
    except (KeyError, TypeError, ValueError):
        return default


def _int(values: Mapping[str, Any], key: str, default: int = 0) -> int:
    try:
        return int(float(values[key]))
    except (KeyError, TypeError, ValueError, OverflowError):
        return default


def _bool(values: Mapping[str, Any], key: str) -> bool | None:
    v = values.get(key)
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() in ("true", "1", "yes")


def _version(values: Mapping[str, Any]) -> int:
    v = values.get(SCHEMA_KEY)
    if v is None or v == "":
        return 1
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise RecordError(f"{SCHEMA_KEY}: {v!r} is not an integer") from None
    if n < 1:
        raise RecordError(f"{SCHEMA_KEY}: {n} (versions start at 1)")
    return n


def finite_or_none(x: float | None) -> float | None:
    """``x`` when it is a finite float, else None (wire values may be missing, nan or inf)."""
    return x if x is not None and math.isfinite(x) else None


def _outcome(raw: Any) -> Outcome:
    try:
        return Outcome(str(raw))
    except ValueError:
        raise RecordError(f"outcome {raw!r} is not one of {', '.join(Outcome)}") from None


# --- action result ----------------------------------------------------------------------------------


def executed_amount(action: str, outcome: str, distance_odom_m: float, yaw_imu_deg: float, yaw_odom_deg: float, reverted: bool) -> float:
    """How much of ``action`` was executed, in the unit of its step (the action table's maximum).

    Args:
        action: the action literal.
        outcome: the motion outcome.
        distance_odom_m: forward travel from odometry, m (MOVE_FORWARD).
        yaw_imu_deg: yaw change from the gyro, deg (TURN_*; used first).
        yaw_odom_deg: yaw change from odometry, deg (TURN_* when the gyro value is not finite).
        reverted: the robot backed off to the pre-action pose.

    Returns:
        MOVE_FORWARD: metres along the start heading (>= 0); TURN_*: radians turned in the action's
        direction; LOOK_*: radians of camera pitch changed (the tilt step when ``ok``, else 0);
        STOP and unknown literals: 0. A reverted action executed 0.
    """
    if reverted or action == A.STOP or not A.is_motion(action):
        return 0.0
    if action == A.MOVE_FORWARD:
        d = distance_odom_m
        return max(0.0, d) if math.isfinite(d) else 0.0
    spec = A.MOTION_SPECS[action]
    if spec.kind is A.ActionKind.ROTATE:  # TURN_* and the SWEEP_* primitives
        yaw = yaw_imu_deg if math.isfinite(yaw_imu_deg) else yaw_odom_deg
        if not math.isfinite(yaw):
            return 0.0
        sign = 1.0 if spec.amount > 0 else -1.0
        return max(0.0, math.radians(sign * yaw))
    return A.TILT_ANGLE_RAD if outcome == Outcome.OK else 0.0  # LOOK_UP / LOOK_DOWN


def refused_before_start(outcome: str, detail: str) -> bool:
    """True when motion_node refused to start a move because an obstacle or a person was in the way
    (outcome ``collision``, detail ``blocked before start: ...``): nothing moved, nothing was touched."""
    return outcome == Outcome.COLLISION and detail.startswith(BLOCKED_DETAIL)


def step_amount(action: str) -> float:
    """The full (maximum) step of ``action``: metres for MOVE_FORWARD, radians for TURN/LOOK, 0 else."""
    if action == A.MOVE_FORWARD:
        return A.FORWARD_STEP_M
    if action in (A.TURN_LEFT, A.TURN_RIGHT):
        return A.TURN_ANGLE_RAD
    if action in (A.LOOK_UP, A.LOOK_DOWN):
        return A.TILT_ANGLE_RAD
    return 0.0


@dataclass
class ActionResult:
    """Outcome of one action (``havln/action_result``; keys :data:`havln_robot.topics.ACTION_RESULT_KEYS`).

    Errors are measured against the intended final pose: the action's target, or the pre-action
    pose when the robot reverted. Distances/yaws are changes since the action started (odom frame).

    Attributes:
        seq: action counter since motion_node started.
        action: the literal.
        outcome: :class:`Outcome`.
        distance_odom_m, yaw_odom_deg, yaw_imu_deg: achieved forward distance (m) and yaw changes (deg).
        pitch_deg: camera pitch after the action, deg.
        position_error_m, yaw_error_deg: error against the intended final pose.
        duration_s: s.
        x, y, yaw_deg: odom pose at the end (m, m, deg); nan when unknown.
        reverted: the robot backed off to the pre-action pose after a collision.
        detail: free text.
        executed: amount executed (see :func:`executed_amount`); None = derive from the fields.
        refused: nothing was started (rejected, unsupported, or blocked before the start);
            None = derive (see :attr:`refused`).
        schema_version: record version (1).
    """

    seq: int
    action: str
    outcome: Outcome
    distance_odom_m: float = 0.0
    yaw_odom_deg: float = 0.0
    yaw_imu_deg: float = 0.0
    pitch_deg: float = 0.0
    position_error_m: float = 0.0
    yaw_error_deg: float = 0.0
    duration_s: float = 0.0
    x: float = 0.0
    y: float = 0.0
    yaw_deg: float = 0.0
    reverted: bool = False
    detail: str = ""
    executed: float | None = None
    refused: bool | None = None
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        self.outcome = _outcome(self.outcome)

    # -- derived --------------------------------------------------------------------------------
    def executed_amount(self) -> float:
        """The executed amount (``executed`` when set, else derived; m or rad, see :func:`executed_amount`)."""
        if self.executed is not None:
            return self.executed
        return executed_amount(self.action, self.outcome, self.distance_odom_m, self.yaw_imu_deg, self.yaw_odom_deg, self.reverted)

    @property
    def is_refused(self) -> bool:
        """True when motion_node did not start the action: rejected (busy, unknown literal, no
        sensors yet), unsupported, or blocked before the start by an obstacle or a person."""
        if self.refused is not None:
            return self.refused
        if self.outcome in (Outcome.REJECTED, Outcome.UNSUPPORTED):
            return True
        return self.blocked_before_start

    @property
    def blocked_before_start(self) -> bool:
        """True when an obstacle or a person made motion_node refuse to start the move (:func:`refused_before_start`)."""
        return not self.reverted and refused_before_start(self.outcome, self.detail)

    @property
    def is_partial(self) -> bool:
        """True when a started MOVE_FORWARD / TURN_* ended short of its step (e.g. stopped by a
        person, or a partial step that stopped short of a wall, :data:`PARTIAL_DETAIL`) and was not reverted: the robot stands somewhere between start and target."""
        if self.is_refused or self.reverted:
            return False
        if self.outcome == Outcome.OK and not self.detail.startswith(PARTIAL_DETAIL):
            return False
        full = step_amount(self.action)
        return self.action in (A.MOVE_FORWARD, A.TURN_LEFT, A.TURN_RIGHT) and 0.0 < self.executed_amount() < 0.95 * full

    # -- wire -----------------------------------------------------------------------------------
    def to_values(self) -> dict[str, str]:
        """The ordered wire pairs: :data:`ACTION_RESULT_KEYS`, then :data:`SCHEMA_KEY`."""
        d: dict[str, Any] = {k: getattr(self, k) for k in ACTION_RESULT_KEYS if k not in ("executed", "refused")}
        d["outcome"] = self.outcome.value
        d["executed"] = float(self.executed_amount())
        d["refused"] = self.is_refused
        d[SCHEMA_KEY] = self.schema_version
        return {k: wire_value(d[k]) for k in (*ACTION_RESULT_KEYS, SCHEMA_KEY)}

    def record(self) -> dict[str, str]:
        """Alias of :meth:`to_values` (the executor's older name)."""
        return self.to_values()

    @classmethod
    def from_values(cls, values: Mapping[str, Any], name: str = "", message: str = "") -> ActionResult:
        """Decode wire pairs (strings or numbers).

        Args:
            values: the key/value pairs.
            name: ``status.name`` (the action literal), used when ``action`` is missing.
            message: ``status.message`` (the outcome), used when ``outcome`` is missing.

        Raises:
            RecordError: unknown outcome, or a bad schema version.
        """
        version = _version(values)
        refused = _bool(values, "refused")
        ex = _float(values, "executed")
        return cls(
            seq=_int(values, "seq", -1),
            action=str(values.get("action") or name),
            outcome=_outcome(values.get("outcome") or message),
            distance_odom_m=_float(values, "distance_odom_m"),
            yaw_odom_deg=_float(values, "yaw_odom_deg"),
            yaw_imu_deg=_float(values, "yaw_imu_deg"),
            pitch_deg=_float(values, "pitch_deg"),
            position_error_m=_float(values, "position_error_m"),
            yaw_error_deg=_float(values, "yaw_error_deg"),
            duration_s=_float(values, "duration_s"),
            x=_float(values, "x"),
            y=_float(values, "y"),
            yaw_deg=_float(values, "yaw_deg"),
            reverted=bool(_bool(values, "reverted")),
            detail=str(values.get("detail", "")),
            executed=ex if math.isfinite(ex) else None,
            refused=refused,
            schema_version=version,
        )


# --- collision record -------------------------------------------------------------------------------


@dataclass
class CollisionRecord:
    """One detected (or prevented) collision (``havln/collision``; keys :data:`havln_robot.topics.COLLISION_KEYS`).

    Attributes:
        stamp: time, s (motion_node clock).
        x, y, yaw_deg: odom pose (m, m, deg).
        action: the action that was executing.
        type: ``human`` or ``static``.
        distance_m: clearance to the hazard, m (0 for contact).
        human_id: the person's id when known.
        motion_state: executor phase: ``blocked`` (checked before the start: nothing moved, the
            collision was prevented), ``moving``, ``turning``, ``settling`` or ``reverting``.
        source: ``depth``, ``people``, ``forecast`` (a moving person's predicted path), ``stall`` or ``jolt``.
        contact: something touches the robot (a person within their body radius, an IMU jolt, a
            stall); False when the motion stopped short of a collision.
        schema_version: record version (1).
    """

    stamp: float
    x: float
    y: float
    yaw_deg: float
    action: str
    type: str
    distance_m: float
    human_id: int | None
    motion_state: str
    source: str
    contact: bool = False
    schema_version: int = SCHEMA_VERSION

    @property
    def is_contact(self) -> bool:
        """A collision of the trial: a real contact while moving. Refused starts (``blocked``) and
        motions stopped short of an obstacle or a person's personal space were prevented."""
        return self.contact and self.motion_state != BLOCKED_STATE

    @property
    def is_human_contact(self) -> bool:
        """A real contact with a person (what TCR/CR count)."""
        return self.is_contact and self.type == "human"

    def to_values(self) -> dict[str, str]:
        """The ordered wire pairs: :data:`COLLISION_KEYS` (unknown human id as ""), then :data:`SCHEMA_KEY`."""
        d = {k: getattr(self, k) for k in COLLISION_KEYS}
        d[SCHEMA_KEY] = self.schema_version
        return {k: wire_value(v) for k, v in d.items()}

    def record(self) -> dict[str, str]:
        """Alias of :meth:`to_values` (the executor's older name)."""
        return self.to_values()

    @classmethod
    def from_values(cls, values: Mapping[str, Any], message: str = "") -> CollisionRecord:
        """Decode wire pairs.

        A record without a ``contact`` key (bags from before the key existed) is a contact when it
        carries physical evidence: source ``stall`` or ``jolt``, or a person at zero clearance
        (``source`` people, ``distance_m`` 0), and was not ``blocked``. Every other such record was a
        motion refused or stopped short of a hazard (depth clearance, personal space) -- counting
        those as contacts (the old default "true") inflated the collision counts of old bags.

        Args:
            values: the key/value pairs.
            message: ``status.message`` (the collision type), used when ``type`` is missing.

        Raises:
            RecordError: a bad schema version.
        """
        version = _version(values)
        hid_raw = values.get("human_id", "")
        try:
            human_id = None if hid_raw in ("", None) else int(float(hid_raw))
        except (TypeError, ValueError):
            human_id = None
        state = str(values.get("motion_state", ""))
        source = str(values.get("source", ""))
        distance = _float(values, "distance_m")
        contact = _bool(values, "contact")
        if contact is None:  # legacy record: infer from the evidence
            touching = source == "people" and math.isfinite(distance) and distance <= _TOUCH_M
            contact = state != BLOCKED_STATE and (source in CONTACT_SOURCES or touching)
        return cls(
            stamp=_float(values, "stamp"),
            x=_float(values, "x"),
            y=_float(values, "y"),
            yaw_deg=_float(values, "yaw_deg"),
            action=str(values.get("action", "")),
            type=str(values.get("type") or message),
            distance_m=distance,
            human_id=human_id,
            motion_state=state,
            source=source,
            contact=contact,
            schema_version=version,
        )


# --- ground truth -----------------------------------------------------------------------------------


@dataclass
class GroundTruth:
    """Simulator truth (``havln/ground_truth``; keys :data:`havln_robot.topics.GROUND_TRUTH_KEYS`).

    Attributes:
        episode_id, scan: the episode.
        x, y, z, yaw_deg: robot pose in the map frame (m, deg); nan when missing.
        distance_to_goal_m: NE if the episode ended now: the walkable (geodesic) distance, the
            scorer's NE, m.
        nearest_human_m: distance to the nearest person, m; nan when there is nobody on the floor
            (wire ""; older simulators sent -1) or it is unknown.
        nearest_human_id: that person's id, "" when there is nobody.
        collisions_human, collisions_static: counts so far.
        path_length_m: travelled path, m.
        distance_to_goal_euclid_m: straight-line distance to the goal, m (reported only); nan when absent.
        goal_unreachable: no walkable path joins the robot to the goal (never a success).
        goal_x, goal_y: the episode's goal in the map frame, m; None when not sent (wire "").
        people: people in the episode; -1 when not sent. region: the region they are in ("" unknown).
        schema_version: record version (1).
    """

    episode_id: str = ""
    scan: str = ""
    x: float = math.nan
    y: float = math.nan
    z: float = math.nan
    yaw_deg: float = math.nan
    distance_to_goal_m: float = math.nan
    nearest_human_m: float = -1.0
    nearest_human_id: str = ""
    collisions_human: int = 0
    collisions_static: int = 0
    path_length_m: float = 0.0
    distance_to_goal_euclid_m: float = math.nan
    goal_unreachable: bool = False
    goal_x: float | None = None
    goal_y: float | None = None
    people: int = -1
    region: str = ""
    schema_version: int = SCHEMA_VERSION

    @property
    def nearest_person_m(self) -> float | None:
        """Distance to the nearest person, m; None when there is nobody (or it is unknown)."""
        d = finite_or_none(self.nearest_human_m)
        return d if d is not None and d >= 0 else None

    @property
    def has_pose(self) -> bool:
        """True when x and y are finite."""
        return math.isfinite(self.x) and math.isfinite(self.y)

    def to_values(self) -> dict[str, str]:
        """The ordered wire pairs: :data:`GROUND_TRUTH_KEYS` (nobody near: ``nearest_human_m`` ""), then :data:`SCHEMA_KEY`."""
        d = {k: getattr(self, k) for k in GROUND_TRUTH_KEYS}
        if self.nearest_person_m is None:
            d["nearest_human_m"] = ""
        if self.people < 0:
            d["people"] = ""
        for k in ("goal_x", "goal_y"):
            if d[k] is None:
                d[k] = ""
        d[SCHEMA_KEY] = self.schema_version
        return {k: wire_value(v) for k, v in d.items()}

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> GroundTruth:
        """Decode wire pairs (strings or numbers; missing keys keep the defaults).

        Raises:
            RecordError: a bad schema version.
        """
        return cls(
            episode_id=str(values.get("episode_id", "")),
            scan=str(values.get("scan", "")),
            x=_float(values, "x"),
            y=_float(values, "y"),
            z=_float(values, "z"),
            yaw_deg=_float(values, "yaw_deg"),
            distance_to_goal_m=_float(values, "distance_to_goal_m"),
            nearest_human_m=_float(values, "nearest_human_m"),
            nearest_human_id=str(values.get("nearest_human_id", "")),
            collisions_human=_int(values, "collisions_human"),
            collisions_static=_int(values, "collisions_static"),
            path_length_m=_float(values, "path_length_m", 0.0),
            distance_to_goal_euclid_m=_float(values, "distance_to_goal_euclid_m"),
            goal_unreachable=bool(_bool(values, "goal_unreachable")),
            goal_x=finite_or_none(_float(values, "goal_x")),
            goal_y=finite_or_none(_float(values, "goal_y")),
            people=_int(values, "people", -1),
            region=str(values.get("region", "")),
            schema_version=_version(values),
        )


# --- agent status -----------------------------------------------------------------------------------


@dataclass
class AgentStatus:
    """agent_node state after each decision (``havln/agent_status``; keys :data:`havln_robot.topics.AGENT_STATUS_KEYS`).

    Attributes:
        step: policy actions executed so far.
        action: the last policy action ("" before the first).
        state: ``starting``, ``panorama``, ``observing``, ``inferring``, ``acting``, ``done``,
            ``aborted`` or ``error``.
        policy_ms: last inference latency, ms.
        panorama_s: last panorama duration, s.
        waiting_s: time the last action took to execute, s.
        schema_version: record version (1).
    """

    step: int = 0
    action: str = ""
    state: str = ""
    policy_ms: float = 0.0
    panorama_s: float = 0.0
    waiting_s: float = 0.0
    schema_version: int = SCHEMA_VERSION

    def to_values(self) -> dict[str, str]:
        """The ordered wire pairs: :data:`AGENT_STATUS_KEYS`, then :data:`SCHEMA_KEY`."""
        d = {k: getattr(self, k) for k in AGENT_STATUS_KEYS}
        d[SCHEMA_KEY] = self.schema_version
        return {k: wire_value(v) for k, v in d.items()}

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> AgentStatus:
        """Decode wire pairs (a malformed ``step`` is -1).

        Raises:
            RecordError: a bad schema version.
        """
        return cls(
            step=_int(values, "step", -1),
            action=str(values.get("action", "")),
            state=str(values.get("state", "")),
            policy_ms=_float(values, "policy_ms", 0.0),
            panorama_s=_float(values, "panorama_s", 0.0),
            waiting_s=_float(values, "waiting_s", 0.0),
            schema_version=_version(values),
        )


# --- episode done -----------------------------------------------------------------------------------


@dataclass
class EpisodeDone:
    """The end of an agent episode (``havln/episode_done``, a JSON object on std_msgs/String).

    Attributes:
        reason: :class:`EndReason` value, or another non-empty string from a foreign publisher
            (kept as given; "done" when empty).
        steps: policy actions executed, or None when absent.
        instruction: the episode's instruction ("" when absent).
        values: the whole JSON object (agent summary: actions, policy_ms_mean, panoramas, ...).
        schema_version: record version (1).
    """

    reason: str
    steps: int | None = None
    instruction: str = ""
    values: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def to_values(self) -> dict[str, Any]:
        """The JSON object: ``values`` with reason, steps, instruction and :data:`SCHEMA_KEY` set."""
        d = dict(self.values)
        d.update(reason=str(self.reason), steps=self.steps, instruction=self.instruction)
        d[SCHEMA_KEY] = self.schema_version
        return d

    def to_json(self) -> str:
        """:meth:`to_values` as strict JSON text (non-finite numbers as null, :mod:`havln_robot.jsonio`)."""
        return jsonio.dumps(self.to_values(), nonfinite="null")

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> EpisodeDone:
        """Decode the JSON object.

        Raises:
            RecordError: not a mapping, or a bad schema version.
        """
        if not isinstance(values, Mapping):
            raise RecordError(f"episode_done: expected a JSON object, got {type(values).__name__}")
        steps = values.get("steps")
        return cls(
            reason=str(values.get("reason", "")) or "done",
            steps=steps if isinstance(steps, int) and not isinstance(steps, bool) else None,
            instruction=str(values.get("instruction") or ""),
            values=dict(values),
            schema_version=_version(values),
        )

    @classmethod
    def from_json(cls, text: str) -> EpisodeDone:
        """Decode the JSON text.

        Raises:
            RecordError: not JSON, not an object, or a bad schema version.
        """
        try:
            obj = json.loads(text)
        except ValueError:
            raise RecordError(f"episode_done: not a JSON object: {text[:80]!r}") from None
        return cls.from_values(obj)


# --- counting ---------------------------------------------------------------------------------------


@dataclass
class MotionTally:
    """Counts of action results and collision records, with the rules of this module.

    Attributes:
        actions: results counted.
        by_outcome: results per :class:`Outcome` value.
        refused: results with :attr:`ActionResult.is_refused`.
        partial: results with :attr:`ActionResult.is_partial`.
        contacts: collision records with :attr:`CollisionRecord.is_contact`.
        human_contacts: of those, contacts with people.
        prevented: collision records that were not contacts.
    """

    actions: int = 0
    by_outcome: dict[str, int] = field(default_factory=dict)
    refused: int = 0
    partial: int = 0
    contacts: int = 0
    human_contacts: int = 0
    prevented: int = 0

    def add_result(self, r: ActionResult) -> None:
        """Count one action result."""
        self.actions += 1
        self.by_outcome[r.outcome.value] = self.by_outcome.get(r.outcome.value, 0) + 1
        self.refused += int(r.is_refused)
        self.partial += int(r.is_partial)

    def add_collision(self, c: CollisionRecord) -> None:
        """Count one collision record."""
        if c.is_contact:
            self.contacts += 1
            self.human_contacts += int(c.type == "human")
        else:
            self.prevented += 1

    @classmethod
    def of(cls, results: Iterable[ActionResult] = (), collisions: Iterable[CollisionRecord] = ()) -> MotionTally:
        """Tally of the given results and collision records."""
        t = cls()
        for r in results:
            t.add_result(r)
        for c in collisions:
            t.add_collision(c)
        return t
