"""The trial store's records: trials, steps, collisions, planned trials (pure dataclasses).

Below both :mod:`havln_robot.trials.store` (persistence) and :mod:`havln_robot.trials.metrics`
(NE, path length, success tables), so neither imports the other's records. Units and frames: see
:mod:`havln_robot.trials.store`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from havln_robot.episodes import SUCCESS_RADIUS_M
from havln_robot.records import Verdict

__all__ = ["GOAL_FRAMES", "PLATFORMS", "SUCCESS_RADIUS_M", "VERDICTS", "CampaignInfo", "Collision", "PlannedTrial", "Step", "Trial"]

#: Platforms a trial can run on.
PLATFORMS: tuple[str, ...] = ("go2", "sim", "gazebo")
#: Trial verdicts (the operator's or the auto-judge's). ``aborted`` trials are excluded from success
#: rates (see report). Not to be confused with a motion action's outcome
#: (:data:`havln_robot.motion.executor.OUTCOMES`).
VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)
#: Frames a goal position can be given in: ``start`` = robot pose at trial start (x forward,
#: y left; what an operator measures with a tape), ``odom``, ``map`` (sim ground truth).
GOAL_FRAMES: tuple[str, ...] = ("start", "odom", "map")


# --- records -----------------------------------------------------------------------------------------
@dataclass
class Trial:
    """One trial (a row of ``trials``).

    State: *running* (``finished is None``) → *finished* (agent done or stopped; ``outcome``
    may still be ``None`` while the operator's verdict is awaited) → *judged* (``outcome`` set).

    Attributes:
        id: trial id (1, 2, ...). started/finished/judged: Unix time, s.
        platform: one of :data:`PLATFORMS`. region: canonical region name (regions.py).
        instance: which room/site of that type (free text, e.g. ``"lab 3F-312"``).
        people_present: number of people in the scene during the trial (0 = without people).
        instruction: the natural-language instruction given to the agent.
        goal_x, goal_y, goal_frame, goal_radius: goal position (m) in ``goal_frame`` when known,
            success radius (m, default 3.0).
        operator, episode_id, scan: who ran it; HA-R2R episode id and Matterport3D scan if any.
        start_x, start_y, start_yaw: odometry pose at the start (m, rad); start_map_*: sim truth.
        end_reason: why the run ended (``stop``, ``budget``, ``blocked``, ``aborted``, ``interrupted``, ...).
        outcome: ``success`` / ``failure`` / ``aborted`` or ``None`` (not judged yet).
        reason: operator's reason / abort cause. ne_m: navigation error (m) when known;
        ne_source: ``ground_truth`` | ``odometry`` | ``operator``.
        mcap_path: the MCAP bag directory of the trial, if recorded.
        campaign_id, planned_id: the campaign and plan row this trial executes, if any.
        policy, checkpoint, checkpoint_sha256: the policy that ran (name), its checkpoint file
            and the file's sha256 (hex); empty for builtin baselines / unknown.
        software: ``havln_robot <version>`` and ``git <commit>[+dirty]`` when run from a checkout.
        profile: the deployment profile file the logger ran with.
        verdict_forced: the operator's verdict contradicts the measured NE (``--force``).
        gt_collisions_human, gt_collisions_static: the simulator's ground-truth contact counts
            during the trial (None = no ground truth: a real robot); beside them, the collisions
            table holds the robot's own classification (motion_node). Reports use the ground truth
            where there is one (:attr:`collision_source`).
        unknown_word_rate: share of the instruction's words outside the policy's vocabulary (the
            agent's check; None = not checked).
        recording_fault: why the MCAP bag stopped recording during the trial ("" = none); the
            trial went on in the store.
        agent_summary: the agent's havln/episode_done payload (``reason``, ``steps``, ``actions``
            = policy actions without panorama turns, ``policy``, ...), ``{}`` if none arrived.
    """

    id: int
    started: float
    platform: str
    region: str
    finished: float | None = None
    judged: float | None = None
    instance: str = ""
    people_present: int = 0
    instruction: str = ""
    goal_x: float | None = None
    goal_y: float | None = None
    goal_frame: str | None = None
    goal_radius: float = SUCCESS_RADIUS_M
    operator: str = ""
    episode_id: str = ""
    scan: str = ""
    start_x: float | None = None
    start_y: float | None = None
    start_yaw: float | None = None
    start_map_x: float | None = None
    start_map_y: float | None = None
    start_map_yaw: float | None = None
    end_reason: str = ""
    outcome: str | None = None
    reason: str = ""
    ne_m: float | None = None
    ne_source: str = ""
    mcap_path: str = ""
    notes: str = ""
    campaign_id: int | None = None
    planned_id: int | None = None
    agent_summary: dict[str, Any] = field(default_factory=dict)
    policy: str = ""
    checkpoint: str = ""
    checkpoint_sha256: str = ""
    software: str = ""
    profile: str = ""
    verdict_forced: bool = False
    gt_collisions_human: int | None = None
    gt_collisions_static: int | None = None
    unknown_word_rate: float | None = None
    recording_fault: str = ""
    #: not stored: set by the reading :class:`TrialStore` when the trial is running but the
    #: logger that wrote it is gone (its writer lock is free): killed, or the machine lost power
    writer_gone: bool = field(default=False, compare=False)

    @property
    def state(self) -> str:
        """``running``, ``interrupted`` (running, but its logger is gone), ``awaiting verdict`` or the outcome."""
        if self.finished is None:
            return "interrupted" if self.writer_gone else "running"
        return self.outcome or "awaiting verdict"

    @property
    def collision_source(self) -> str:
        """Which collision counts the reports use: ``ground truth`` (the simulator's, when it sent
        them) or ``robot`` (motion_node's own classification, the only one on the Go2)."""
        return "ground truth" if self.gt_collisions_human is not None else "robot"

    @property
    def goal_known(self) -> bool:
        return self.goal_x is not None and self.goal_y is not None and self.goal_frame is not None

    @property
    def with_people(self) -> bool:
        return self.people_present > 0


@dataclass
class Step:
    """One executed action (a row of ``steps``).

    Attributes:
        seq: 0-based index within the trial. stamp: ROS time, s.
        action: action literal (havln_robot.actions.ACTIONS). outcome: motion_node outcome
            (``ok``, ``collision``, ``timeout``, ``rejected``, ...; topics.ACTION_RESULT_KEYS).
        x, y, yaw: odometry pose after the action (odom frame; m, rad).
        imu_yaw: IMU orientation yaw after the action (rad).
        map_x, map_y, map_yaw: ground-truth pose (sim only). distance_to_goal_m: ground truth.
        collisions: collision events during this action.
        nearest_person_m, nearest_person_id: nearest person (m) at the end of the action.
        people_visible: number of people detected at the end of the action.
        result: every field of the action-result record (strings), for later analysis.
    """

    seq: int
    stamp: float
    action: str
    outcome: str = ""
    x: float | None = None
    y: float | None = None
    yaw: float | None = None
    imu_yaw: float | None = None
    map_x: float | None = None
    map_y: float | None = None
    map_yaw: float | None = None
    distance_to_goal_m: float | None = None
    collisions: int = 0
    nearest_person_m: float | None = None
    nearest_person_id: str = ""
    people_visible: int | None = None
    result: dict[str, Any] = field(default_factory=dict)


@dataclass
class Collision:
    """One collision event (a row of ``collisions``).

    Attributes:
        step_seq: seq of the step (action) during which it happened. stamp: ROS time, s.
        type: ``human`` | ``static`` | other detector label. x, y, yaw: odom pose (m, rad).
        map_x, map_y: ground-truth position (sim). distance_m: range to the obstacle (m).
        human_id: id of the person hit, if known. detail: every field of the collision record.
    """

    step_seq: int
    stamp: float
    type: str = ""
    x: float | None = None
    y: float | None = None
    yaw: float | None = None
    map_x: float | None = None
    map_y: float | None = None
    distance_m: float | None = None
    human_id: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class PlannedTrial:
    """One row of a campaign plan (see :mod:`havln_robot.trials.plan`).

    Attributes:
        seq: 0-based position in the plan. Other fields as in :class:`Trial`.
        id, campaign_id: database ids (0 before the plan is stored).
    """

    seq: int
    platform: str
    region: str
    people_present: int = 0
    instance: str = ""
    instruction: str = ""
    goal_x: float | None = None
    goal_y: float | None = None
    goal_frame: str | None = None
    goal_radius: float = SUCCESS_RADIUS_M
    operator: str = ""
    episode_id: str = ""
    scan: str = ""
    notes: str = ""
    id: int = 0
    campaign_id: int = 0


@dataclass
class CampaignInfo:
    """A campaign and its progress. done = plan rows with a success/failure trial."""

    id: int
    name: str
    created: float
    source: str
    description: str
    planned: int
    done: int
