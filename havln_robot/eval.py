"""``havln-robot eval``: run a policy on HA-R2R / R2R episodes in the batch simulator and score it.

Usage::

    havln-robot eval --policy expert|forward[:OPTS]|random[:OPTS]|<checkpoint> --episodes FILE
                     [--connectivity DIR] [--scenes DIR] [--limit N] [--out DIR] [--seed S] [--populate N] [--heading-jitter-deg D]
                     [--baseline FILE] [--instruction-index K] [--crowd N] [--hfov-deg H] [--vfov-deg V]
                     [--people none|ground_truth|detected] [--max-linear-speed V] [--max-angular-speed W] [--odom-noise-scale K] [--latency-s L]
                     [--ray auto|local|ADDRESS] [--workers N] [--resume]

Policies:

* ``expert`` -- :class:`havln_robot.sim.expert.Expert` (privileged reference-path follower);
* ``forward``, ``random`` (with options, e.g. ``forward:steps=8``) -- the policies without a
  checkpoint of :data:`havln_robot.policy.registry.BUILTINS` (VLN-CE semantics, the same as agent_node's):
  37 MOVE_FORWARD then STOP; i.i.d. actions with P(STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT) =
  (0.02, 0.68, 0.15, 0.15), seeded per episode with :func:`episode_seed` (``--seed``, episode id);
* anything else -- a checkpoint loaded with :func:`havln_robot.policy.registry.make_policy`; its
  observations are rendered by :class:`havln_robot.sim.render.Renderer` at 256x256, 90 deg HFOV
  (the VLN-CE sensor) for each of ``policy.views`` headings and preprocessed by
  :mod:`havln_robot.perception.preprocess`. ``http://HOST:PORT`` is a policy served by
  ``havln-robot policy-server`` on another machine (:mod:`havln_robot.policy.remote`).

People are placed by :meth:`Crowd.from_episode` with ``--seed`` (the same seed for every episode, as
``havln-robot replay`` does, so replaying the written actions reproduces the results). Everything
else drawn per episode (the random policy, the heading jitter) is seeded by
:func:`episode_seed` = a hash of (``--seed``, episode id): an episode's result does not depend on
which other episodes run, in which order, or on which worker.

Engines: serial in this process (default), or Ray tasks (``--ray local`` / ``--workers N``: a
local Ray runtime on 127.0.0.1 with N CPUs; ``--ray auto`` / ``--ray ADDRESS``: an existing
cluster; :mod:`havln_robot.cluster`, docs/scale.md). Both run :func:`run_job` per episode with
torch limited to one thread, so their per-episode results are identical. With ``--out``, every
finished episode is appended at once to ``results.partial.jsonl``; ``--resume`` continues a run
from it (the finished episodes are not run again), and the ordered ``results.*`` files are written
when the last episode is in.

Outputs (``--out DIR``): ``results.jsonl`` and ``results.csv`` (one row per episode), ``actions.json``
(a run file: episode id → action sequence obeying the format-v1 rules; ``havln-robot export --runs``
turns it into challenge files) and
``summary.json`` (aggregate). Collision baselines for TCR: ``--baseline FILE``
(``collision_num_<split>.json``); by default a continuous ``val_seen``/``val_unseen`` file uses the
challenge file of that split from the data folder, and any other file uses baseline 0 (discrete
HA-R2R path ids are not challenge episode ids).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from havln_robot import jsonio
from havln_robot.actions import finalize_sequence
from havln_robot.agent.sim_io import (  # noqa: F401 - OBS_SIZE, fov_mask: re-exported (eval's public names)
    OBS_HFOV_DEG,
    OBS_SIZE,
    Observer,
    batch_agent_config,
    fov_mask,
    run_world_episode,
)
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.paths import atomic_output, staged_output_dir, write_json
from havln_robot.policy.registry import RESERVED_NAMES, is_builtin, make_policy
from havln_robot.policy.remote import is_remote
from havln_robot.text import nonempty, number_in, path_arg, plural

_Observer = Observer  # the name tests and older callers use
PARTIAL_NAME: str = "results.partial.jsonl"
"""Per-episode results in completion order, appended as each episode finishes (``--out``; ``--resume`` reads it)."""
PARTIAL_FORMAT: int = 1
OUTPUT_NAMES: tuple[str, ...] = ("results.jsonl", "results.csv", "actions.json", "summary.json")
"""What ``--out`` receives when the last episode is in (:func:`write_outputs`)."""
CRASH_HOOK_ENV: str = "HAVLN_EVAL_CRASH_DIR"
"""Fault injection for the retry test: when set to a folder holding ``<episode_id>.crash``, the process
evaluating that episode removes the file and exits at once (a worker dying mid-task)."""


class EvalError(RuntimeError):
    """Evaluation cannot run; the one-line message says why and what to do."""


def episode_seed(seed: int, episode_id: str) -> int:
    """Per-episode seed: the first 4 bytes (little endian) of BLAKE2b-64 of ``"<seed>:<episode_id>"``.

    Independent of the episode's position in the list, of the other episodes and of the worker that
    runs it (the rule the Ray engine needs: results identical to the serial run).

    Returns:
        int in [0, 2**32).
    """
    h = hashlib.blake2b(f"{int(seed)}:{episode_id}".encode(), digest_size=8).digest()
    return int.from_bytes(h[:4], "little")


@dataclass(frozen=True)
class EvalOptions:
    """What one evaluation runs: every option that changes an episode's result (picklable, sent to workers).

    Attributes:
        policy: ``expert``, a builtin spec (``forward:steps=8``) or a checkpoint path / name in ``models/``.
        connectivity_dir: folder of ``<scan>_connectivity.json`` (None: ``<data>/connectivity``).
        scenes_dir: folder of the user's scan meshes ``<scan>/<scan>.glb`` (``--scenes``; None: procedural scenes).
        seed: run seed (crowd placement; per-episode draws via :func:`episode_seed`).
        populate: synthetic people per episode without people (R2R).
        crowd: people per episode: None = the episode's own; N = at most the first N of them, and N
            synthetic people for an episode without any (overrides ``populate``).
        heading_jitter_deg: std of the panorama view-heading error, deg (see :func:`run_episode`).
        hfov_deg, vfov_deg: camera field of view, deg (<= 90: the rendered 90 x 90 deg view is
            blanked outside it, RGB and depth 0; a D435i colour camera is about 69 x 42 deg).
        max_linear_speed, max_angular_speed: motion limits, m/s and rad/s (None: motion_node's
            defaults). In the closed-loop world they are motion_node parameters of its
            executor; in the open-loop world only the linear one applies, as the sim time per action
            (0.25 m / speed, people move that long).
        odom_noise_scale: factor on every odometry / IMU noise figure of the Go2 base model
            (:class:`havln_robot.sim.robot.NoiseModel`; 0 = perfect odometry; None = its defaults).
        latency_s: actuation latency of the base, s (None = the model's default).
            The last two (and ``max_angular_speed``) need the closed-loop world; see :func:`closed_loop_world`.
        people: people checks before each action, one of :data:`PEOPLE_MODES` (see :class:`PeopleShield`).
        device: torch device of a checkpoint policy.
    """

    policy: str = "expert"
    connectivity_dir: str | None = None
    scenes_dir: str | None = None
    seed: int = 0
    populate: int = 0
    crowd: int | None = None
    heading_jitter_deg: float = 0.0
    hfov_deg: float = OBS_HFOV_DEG
    vfov_deg: float = OBS_HFOV_DEG
    max_linear_speed: float | None = None
    max_angular_speed: float | None = None
    odom_noise_scale: float | None = None
    latency_s: float | None = None
    people: str = "none"
    device: str = "cpu"

    def key(self) -> dict:
        """The options that decide results (device excluded), as a JSON-ready dict."""
        d = asdict(self)
        d.pop("device")
        return d


@dataclass
class EpisodeRecord:
    """One evaluated episode: ids, metrics (:class:`~havln_robot.sim.metrics.EpisodeMetrics`), actions, wall time (s)."""

    episode_id: str
    scan: str
    humans: int
    metrics: object
    actions: list[str]
    seconds: float
    floors_changed: bool = False
    people_waits: int = 0

    def row(self) -> dict:
        """Flat dict for JSONL/CSV."""
        d = {"episode_id": self.episode_id, "scan": self.scan, "humans": self.humans, "floors_changed": self.floors_changed}
        d.update(self.metrics.as_dict())
        d["seconds"] = round(self.seconds, 4)
        d["people_waits"] = self.people_waits
        return d

    @classmethod
    def from_row(cls, row: dict, actions: list[str]) -> EpisodeRecord:
        """Rebuild a record from :meth:`row` and its actions (a results / partial file line).

        Raises:
            KeyError, TypeError: the row lacks a field.
        """
        from havln_robot.sim.metrics import EpisodeMetrics

        m = EpisodeMetrics(**{f.name: row[f.name] for f in fields(EpisodeMetrics) if f.name in row})
        return cls(
            str(row["episode_id"]),
            row["scan"],
            int(row["humans"]),
            m,
            list(actions),
            float(row["seconds"]),
            bool(row["floors_changed"]),
            int(row.get("people_waits", 0)),
        )


# ---------------------------------------------------------------------------- people shield
PEOPLE_MODES = ("none", "ground_truth", "detected")
"""``eval --people``: none = no people check (the batch simulator as before); ground_truth = motion_node's
people checks on the true people (positions and velocities: a perfect tracker); detected = the same
checks on people_node's tracker fed only rendered depth."""


class PeopleShield:
    """motion_node's people checks in front of the batch world (``eval --people``).

    Before each MOVE_FORWARD / TURN_* the people are observed -- the truth, or the tracker
    (:class:`havln_robot.perception.people.DepthPeopleTracker`) fed three depth frames rendered at
    320x240 (every 2nd pixel used: the same points as people_node's every 4th pixel of 640x480)
    from the Go2 head camera at the current pose, 0.1 s apart, ending at the current sim
    time -- and checked as motion_node checks them (personal space 0.45 m along the step, and the
    constant-velocity forecast over the action plus 1 s; motion params defaults). A refused action
    is not executed (:meth:`refusal`): the episode runner hears motion_node's ``collision`` and
    stands its ``blocked_wait_s`` (sim time advances, people move and may walk into the robot),
    then the policy decides again. After ``max_total_waits`` refusals in an episode the shield
    lets everything through.

    Args:
        world: the episode's :class:`~havln_robot.sim.world.World`. mode: "ground_truth" | "detected".
    """

    def __init__(self, world, mode: str, max_total_waits: int = 60) -> None:
        from havln_robot.motion.executor import MotionConfig
        from havln_robot.motion.safety import CameraMount, Footprint

        self.world, self.mode = world, mode
        self.max_total_waits = max_total_waits
        self.cfg = MotionConfig()
        self.fp = Footprint(radius=world.robot_radius)
        self.waits = 0
        self.renderer = None
        self.tracker = None
        if mode == "detected":
            from havln_robot.perception.people import DepthPeopleTracker, PeopleConfig
            from havln_robot.sim.render import Renderer
            from havln_robot.sim.robot import GO2_CAMERA_FORWARD_M, GO2_CAMERA_HEIGHT_M

            self.mount = CameraMount(GO2_CAMERA_FORWARD_M, 0.0, GO2_CAMERA_HEIGHT_M, 0.0)
            self.renderer = Renderer(
                world.scene, world.crowd, 320, 240, camera_height_m=GO2_CAMERA_HEIGHT_M, camera_forward_m=GO2_CAMERA_FORWARD_M
            )
            self._clock = {"t": 0.0}
            self.tracker = DepthPeopleTracker(PeopleConfig(depth_stride=2), clock=lambda: self._clock["t"])
            self.render_s = 0.0
            self.frames = 0

    def people(self) -> list:
        """People in the current base_link (x forward, y left; m, m/s)."""
        from havln_robot.motion.safety import Person

        w = self.world
        x, y, z, yaw = w.pose
        c, s = math.cos(yaw), math.sin(yaw)
        if self.mode == "ground_truth":
            if not len(w.crowd):
                return []
            p = w.crowd.positions(w.t)
            v = (w.crowd.positions(w.t + 0.05) - w.crowd.positions(w.t - 0.05)) / 0.1
            out = []
            for k in range(len(p)):
                if abs(p[k, 2] - z) > 1.0:
                    continue
                dx, dy = p[k, 0] - x, p[k, 1] - y
                out.append(
                    Person(c * dx + s * dy, -s * dx + c * dy, w.crowd.ids[k], vx=c * v[k, 0] + s * v[k, 1], vy=-s * v[k, 0] + c * v[k, 1])
                )
            return out
        tracks = []
        t0 = time.perf_counter()
        for dt in (0.2, 0.1, 0.0):
            t = max(0.0, w.t - dt)
            last = self.tracker.tracker.last_t
            if last is not None and t <= last:
                continue
            _, depth = self.renderer.render(w.camera_pose, 0.0, t)  # the camera on the drawn floor
            self._clock["t"] = t
            self.tracker.set_pose((x, y, yaw))
            tracks = self.tracker.step(t, None, depth, self.renderer.intrinsics, self.mount)
            self.frames += 1
        self.render_s += time.perf_counter() - t0
        if self.tracker.tracker.last_t is not None and not tracks:
            tracks = self.tracker.tracker.tracks(w.t)
        return [tr.person() for tr in tracks]

    def hazard(self, action: str):
        """The people hazard of ``action`` now, or None."""
        from havln_robot.actions import ACTION_SPECS, ActionKind
        from havln_robot.motion.safety import Obstacles, forecast_hazard, forward_hazard

        spec = ACTION_SPECS[action]
        if spec.kind not in (ActionKind.TRANSLATE, ActionKind.ROTATE):
            return None
        cfg, ppl = self.cfg, self.people()
        if not ppl:
            return None
        if spec.kind is ActionKind.TRANSLATE:
            hz = forward_hazard(
                Obstacles(None, ppl), self.fp, spec.amount, cfg.front_margin, cfg.side_margin, cfg.personal_space, cfg.min_points
            )
            dur = abs(spec.amount) / cfg.v_max + cfg.v_max / cfg.a_lin
            return hz or forecast_hazard(ppl, self.fp, dur, cfg.forecast_margin_s, cfg.personal_space, distance=spec.amount)
        dur = abs(spec.amount) / cfg.w_max + cfg.w_max / cfg.a_ang
        return forecast_hazard(ppl, self.fp, dur, cfg.forecast_margin_s, cfg.person_radius + cfg.turn_margin, angle=spec.amount)

    def refusal(self, action: str) -> str | None:
        """Why the people checks refuse ``action`` here and now (counted in :attr:`waits`), or None.

        The episode runner (:class:`havln_robot.agent.sim_io.SimIO`) treats a refusal as motion_node's
        (outcome ``collision``: it waits ``blocked_wait_s`` of sim time, the policy decides again).
        After ``max_total_waits`` refusals in an episode every action passes.
        """
        if self.waits >= self.max_total_waits or self.world.done:
            return None
        hz = self.hazard(action)
        if hz is None:
            return None
        self.waits += 1
        return f"people check: {hz.detail}"

    def close(self) -> None:
        """Release the renderer."""
        if self.renderer is not None:
            self.renderer.close()


# ---------------------------------------------------------------------------- running
def _agent_node_params(path: str | os.PathLike[str] | None) -> dict:
    """agent_node's parameters in a profile (``path``, default config/sim.yaml), merged over its sections.

    Raises:
        havln_robot.params.ConfigError: the file cannot be read (one line naming it).
    """
    from havln_robot.agent.sim_io import agent_node_params

    return agent_node_params(None if path is None else str(path))


def panorama_sweep_action(path: str | os.PathLike[str] | None = None) -> str | None:
    """The primitive agent_node turns with for each panorama in the live sim graph (``path``, default
    config/sim.yaml, agent_node section): SWEEP_LEFT / SWEEP_RIGHT for ``panorama_mode: sweep``,
    None for ``discrete`` or when the section does not say (its 24 TURNs are not replayed in batch).

    Raises:
        havln_robot.params.ConfigError: the file cannot be read (one line naming it).
    """
    from havln_robot.actions import SWEEP_LEFT, SWEEP_RIGHT

    p = _agent_node_params(path)
    if str(p.get("panorama_mode", "")) != "sweep":
        return None
    return SWEEP_LEFT if str(p.get("panorama_direction", "left")) == "left" else SWEEP_RIGHT


def panorama_view_tolerance_deg(path: str | os.PathLike[str] | None = None) -> float:
    """agent_node's ``view_tolerance_deg`` in the live sim graph (``path``, default config/sim.yaml):
    a sweep frame is used within this of its view heading, deg (default
    :data:`havln_robot.perception.sweep.VIEW_TOLERANCE_DEG` when the section does not say).

    Raises:
        havln_robot.params.ConfigError: the file cannot be read (one line naming it).
    """
    from havln_robot.perception.sweep import VIEW_TOLERANCE_DEG

    return float(_agent_node_params(path).get("view_tolerance_deg", VIEW_TOLERANCE_DEG))


def agent_max_consecutive_blocked(path: str | os.PathLike[str] | None = None) -> int:
    """agent_node's ``max_consecutive_blocked`` in the live sim graph (``path``, default
    config/sim.yaml; :class:`havln_robot.agent.core.AgentConfig`'s default where the section does
    not say): blocked policy actions in a row that end an episode.

    Raises:
        havln_robot.params.ConfigError: the file cannot be read (one line naming it).
    """
    from havln_robot.agent.core import AgentConfig

    return int(_agent_node_params(path).get("max_consecutive_blocked", AgentConfig().max_consecutive_blocked))


def run_episode(
    world,
    policy: str | object,
    seed: int = 0,
    heading_jitter_deg: float = 0.0,
    hfov_deg: float = OBS_HFOV_DEG,
    vfov_deg: float = OBS_HFOV_DEG,
    shield: PeopleShield | None = None,
    panorama_sweeps: bool = False,
    agent_rules: bool = True,
) -> list[str]:
    """Run one episode to its end through agent_node's episode runner; returns the actions taken.

    The episode is :class:`havln_robot.agent.core.EpisodeRunner` over the batch world
    (:func:`havln_robot.agent.sim_io.run_world_episode`): the same code agent_node runs, with
    config/sim.yaml's agent_node settings -- outcomes told to the policy (``on_action_result``), a
    ``blocked_wait_s`` stand after each blocked motion (sim time passes, people walk on), the
    episode ended ``blocked`` (with the STOP its challenge file gets) after
    ``max_consecutive_blocked`` blocked actions in a row.

    Args:
        world: a reset :class:`~havln_robot.sim.world.World`.
        policy: "expert", a spec of a policy without a checkpoint (``"random"``, ``"forward:steps=8"``;
            built afresh for the episode by :func:`~havln_robot.policy.registry.make_policy`), or a
            :class:`havln_robot.policy.api.Policy`.
        seed: default seed of a seeded builtin (``random``) whose spec gives none (and of the heading jitter).
        heading_jitter_deg: std of the view-heading error of instant panorama views, deg (0: exact headings).
        hfov_deg: camera horizontal field of view (deg); pixels of the 90 deg render outside it are 0.
        vfov_deg: camera vertical field of view (deg), likewise.
        shield: people checks before each action (``eval --people``), or None: a refused action is
            not executed and the runner treats it as motion_node's refusal.
        panorama_sweeps: panoramas as agent_node takes them (config/sim.yaml's ``panorama_mode``:
            one sweep through the executor, frames chosen by the believed yaw, missing views
            retaken with turns; sim time passes, people walk on). False (``eval``'s default): an
            instant panorama from where the robot stands.
        agent_rules: False: no blocked wait, no consecutive-blocked limit and no outcome hook (a
            raw action stepper for tests).
    """
    if policy == "expert":
        from havln_robot.sim.expert import Expert

        agent = Expert(world)
    elif isinstance(policy, str):
        agent = make_policy(policy, seed=seed)
    else:
        agent = policy
    observer = None
    if policy != "expert" and getattr(agent, "observes", True):
        observer = Observer(world, getattr(agent, "views", 1), heading_jitter_deg, seed, hfov_deg, vfov_deg)
    config = batch_agent_config(_agent_node_params(None), sweeps=panorama_sweeps, agent_rules=agent_rules)
    if not agent_rules:
        from havln_robot.agent.sim_io import without_outcomes

        agent = without_outcomes(agent)
    try:
        run_world_episode(world, agent, config, observer, shield)
    finally:
        if observer is not None:
            observer.close()
    return list(world.actions)


# ---------------------------------------------------------------------------- one episode (serial or a Ray task)
@dataclass(frozen=True)
class Job:
    """One episode to evaluate: picklable, so the serial loop and Ray workers run the same thing.

    Attributes:
        index: position in the input list (results are written in this order).
        episode: the :class:`~havln_robot.episodes.Episode`.
        options: the :class:`EvalOptions`.
        baseline: challenge baseline human collisions of this episode (TCR; 0 when none).
        tag: caller's label (a sweep setting's key); not used by the evaluation.
    """

    index: int
    episode: object
    options: EvalOptions
    baseline: int = 0
    tag: str = ""


_WORKER: dict = {"policies": {}, "scenes": {}, "threads": False}
"""Per-process cache of a serial run or a Ray worker: loaded checkpoints and scenes (a worker keeps them between tasks)."""
_SCENE_CACHE_SIZE = 4


def _one_torch_thread(policy: str) -> None:
    """torch.set_num_threads(1) once per process before a checkpoint policy runs (serial and Ray alike:
    identical float reductions, and N workers on N cores do not oversubscribe them)."""
    if _WORKER["threads"] or policy in RESERVED_NAMES or is_builtin(policy) or is_remote(policy):
        return
    import torch

    torch.set_num_threads(1)
    _WORKER["threads"] = True


def _policy_for(opts: EvalOptions):
    if opts.policy in RESERVED_NAMES or is_builtin(opts.policy):
        return opts.policy
    key = (opts.policy, opts.device)
    cache = _WORKER["policies"]
    if key not in cache:
        cache[key] = make_policy(opts.policy, device=opts.device)
    return cache[key]


def _scene_for(scan: str, connectivity_dir, scenes_dir=None):
    from havln_robot.sim.mesh_scene import load_scene
    from havln_robot.sim.scene import SceneError

    key = (scan, str(connectivity_dir), str(scenes_dir))
    cache = _WORKER["scenes"]
    if key not in cache:
        try:
            scene = load_scene(scan, connectivity_dir, scenes_dir)
        except SceneError as exc:
            raise EvalError(str(exc)) from None
        while len(cache) >= _SCENE_CACHE_SIZE:
            cache.pop(next(iter(cache)))
        cache[key] = scene
    return cache[key]


def _crash_hook(episode_id: str) -> None:
    d = os.environ.get(CRASH_HOOK_ENV)
    if d:
        f = Path(d) / f"{episode_id}.crash"
        try:
            f.unlink()
        except FileNotFoundError:
            return
        os._exit(3)


def run_job(job: Job) -> tuple[int, str, dict | str]:
    """Evaluate one episode; the unit of work of the serial loop and of a Ray task.

    Returns:
        ``(job.index, job.tag, result)``: ``result`` is :meth:`EpisodeRecord.row` plus ``"actions"``,
        or a string saying why the episode was skipped (its start is not on free space).

    Raises:
        EvalError: the episode's scene cannot be loaded.
        PolicyError: the checkpoint cannot be loaded.
    """
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.world import World, WorldError

    ep, opts = job.episode, job.options
    _crash_hook(ep.episode_id)
    _one_torch_thread(opts.policy)
    policy = _policy_for(opts)
    t0 = time.perf_counter()
    scene = _scene_for(ep.scan, opts.connectivity_dir, opts.scenes_dir)
    populate = opts.populate if opts.crowd is None else opts.crowd
    crowd = Crowd.from_episode(ep, scene, seed=opts.seed, populate=populate)
    if opts.crowd is not None and len(crowd) > opts.crowd:
        crowd = Crowd(crowd.humans[: opts.crowd], crowd.frame_rate)
    try:
        world = World(scene, ep, crowd, seed=opts.seed, action_dt=_action_dt(opts), baseline=job.baseline)
    except WorldError as exc:
        return job.index, job.tag, str(exc)
    loop = loop_options(opts)
    if loop:
        world.loop_options = loop  # read when the world's closed loop starts, at its first step
    zs = [p[2] for p in ep.reference_path]
    shield = PeopleShield(world, opts.people) if opts.people != "none" else None
    try:
        actions = run_episode(
            world,
            policy,
            seed=episode_seed(opts.seed, ep.episode_id),
            heading_jitter_deg=opts.heading_jitter_deg,
            hfov_deg=opts.hfov_deg,
            vfov_deg=opts.vfov_deg,
            shield=shield,
        )
    finally:
        if shield is not None:
            shield.close()
    rec = EpisodeRecord(
        ep.episode_id,
        ep.scan,
        len(crowd),
        world.metrics(),
        actions,
        time.perf_counter() - t0,
        max(zs) - min(zs) > 1.0,  # the reference path climbs/descends stairs
        shield.waits if shield is not None else 0,
    )
    return job.index, job.tag, rec.row() | {"actions": actions}


def closed_loop_world() -> bool:
    """True when :class:`~havln_robot.sim.world.World` runs each action through motion_node's executor over
    the noisy Go2 base (``World.loop`` / ``World.loop_options``); False for the open-loop world."""
    from havln_robot.sim.world import World

    return hasattr(World, "loop")


#: Options that mean something only in the closed-loop world (flag → EvalOptions field).
CLOSED_LOOP_ONLY: dict[str, str] = {
    "--max-angular-speed": "max_angular_speed",
    "--odom-noise-scale": "odom_noise_scale",
    "--latency-s": "latency_s",
}


def _action_dt(opts: EvalOptions) -> float:
    """Sim time per discrete action, s: the world's default, or 0.25 m / max_linear_speed in the open-loop world."""
    from havln_robot.actions import ACTION_SPECS, MOVE_FORWARD
    from havln_robot.sim.world import DEFAULT_ACTION_DT_S

    if opts.max_linear_speed is None or closed_loop_world():
        return DEFAULT_ACTION_DT_S
    return float(ACTION_SPECS[MOVE_FORWARD].amount) / opts.max_linear_speed


def noise_model(odom_noise_scale: float | None, latency_s: float | None):
    """The Go2 base's :class:`~havln_robot.sim.robot.NoiseModel` of the closed-loop world's default
    (config/sim.yaml's sim_node section, as :class:`~havln_robot.sim.closed_loop.ClosedLoop` uses it) with
    every odometry / gyro / accelerometer figure times ``odom_noise_scale`` and the actuation latency
    ``latency_s`` (None: that default's)."""
    from dataclasses import replace

    from havln_robot.sim.closed_loop import sim_profile
    from havln_robot.sim.robot import base_config

    base = base_config(sim_profile()[1])[1]  # the closed loop's default: config/sim.yaml's sim_node noise
    changes: dict[str, float] = {}
    if odom_noise_scale is not None:
        changes |= {f: getattr(base, f) * odom_noise_scale for f in base.__dataclass_fields__ if f != "latency_s"}
    if latency_s is not None:
        changes["latency_s"] = latency_s
    return replace(base, **changes)


def loop_options(opts: EvalOptions) -> dict:
    """Keyword arguments of the closed-loop world's ``ClosedLoop`` for ``opts`` (``World.loop_options``);
    {} when ``opts`` keep every default.

    Raises:
        EvalError: an option that needs the closed-loop world, in the open-loop one (names the flag).
    """
    closed = closed_loop_world()
    if not closed:
        for flag, field in CLOSED_LOOP_ONLY.items():
            if getattr(opts, field) is not None:
                raise EvalError(f"{flag} needs the closed-loop batch world, which this build does not have; drop {flag}")
        return {}
    out: dict = {}
    params = {k: getattr(opts, k) for k in ("max_linear_speed", "max_angular_speed") if getattr(opts, k) is not None}
    if params:
        out["params"] = params
    if opts.odom_noise_scale is not None or opts.latency_s is not None:
        out["noise"] = noise_model(opts.odom_noise_scale, opts.latency_s)
    return out


def make_jobs(episodes, options: EvalOptions, baselines: dict[str, int] | None = None, tag: str = "") -> list[Job]:
    """One :class:`Job` per episode, in input order."""
    baselines = baselines or {}
    return [Job(i, ep, options, int(baselines.get(ep.episode_id, 0)), tag) for i, ep in enumerate(episodes)]


def run_serial(jobs: list[Job], on_result=None) -> None:
    """Run ``jobs`` in this process, grouped by scan (each scene loaded once); ``on_result(index, tag, result)`` per job."""
    for job in sorted(jobs, key=lambda j: (j.episode.scan, j.index)):
        out = run_job(job)
        if on_result is not None:
            on_result(*out)


def evaluate(
    episodes,
    policy: str | object = "expert",
    connectivity_dir=None,
    seed: int = 0,
    baselines: dict[str, int] | None = None,
    populate: int = 0,
    on_result=None,
    heading_jitter_deg: float = 0.0,
    scenes_dir=None,
    people: str = "none",
) -> list[EpisodeRecord]:
    """Evaluate ``policy`` on ``episodes`` serially (grouped by scan internally; results in input order).

    Args:
        episodes: :class:`~havln_robot.episodes.Episode` list.
        policy: see :func:`run_episode` (a spec string, or a ready :class:`~havln_robot.policy.api.Policy`).
        connectivity_dir: folder of connectivity files (default ``data_dir()/connectivity``).
        seed: crowd seed (same for every episode); per-episode draws use :func:`episode_seed`.
        baselines: episode id → challenge baseline human collisions (missing = 0).
        populate: synthetic people per episode for episodes without people (R2R).
        on_result: called with each :class:`EpisodeRecord`.
        heading_jitter_deg: see :func:`run_episode`.
        scenes_dir: folder of the user's scan meshes ``<scan>/<scan>.glb`` (``--scenes``): render,
            collide and measure NE on the mesh (:mod:`havln_robot.sim.mesh_scene`); None = procedural scenes.
        people: one of :data:`PEOPLE_MODES` (see :class:`PeopleShield`).

    Raises:
        EvalError: a scene cannot be loaded.
    """
    spec = policy if isinstance(policy, str) else f"<object {id(policy)}>"
    opts = EvalOptions(
        policy=spec,
        connectivity_dir=None if connectivity_dir is None else str(connectivity_dir),
        seed=seed,
        populate=populate,
        heading_jitter_deg=heading_jitter_deg,
        scenes_dir=None if scenes_dir is None else str(scenes_dir),
        people=people,
    )
    if not isinstance(policy, str):
        _WORKER["policies"][(spec, opts.device)] = policy
    out: dict[int, EpisodeRecord] = {}

    def keep(index: int, _tag: str, res: dict | str) -> None:
        if isinstance(res, str):
            print(f"havln-robot eval: skipping episode {episodes[index].episode_id}: {res}", file=sys.stderr)
            return
        rec = EpisodeRecord.from_row(res, res["actions"])
        out[index] = rec
        if on_result is not None:
            on_result(rec)

    episodes = list(episodes)
    try:
        run_serial(make_jobs(episodes, opts, baselines), keep)
    finally:
        if not isinstance(policy, str):
            _WORKER["policies"].pop((spec, opts.device), None)
    return [out[k] for k in sorted(out)]


# ---------------------------------------------------------------------------- partial results (resume)
def _count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _metres(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _flag(v: object) -> bool:
    return isinstance(v, bool)


def _text(v: object) -> bool:
    return isinstance(v, str) and v != ""


def _actions(v: object) -> bool:
    from havln_robot.actions import is_action

    return isinstance(v, list) and all(is_action(a) for a in v)


#: Every field of a finished episode's line in ``results.partial.jsonl`` (:meth:`EpisodeRecord.row`
#: plus ``actions``): name -> (check, what it must be, required). Optional fields are those older
#: files may lack (the :class:`~havln_robot.sim.metrics.EpisodeMetrics` fields with a default, ``people_waits``).
PARTIAL_ROW_FIELDS: dict[str, tuple] = {
    "episode_id": (_text, "a non-empty string", True),
    "scan": (_text, "a non-empty string", True),
    "humans": (_count, "a whole number >= 0", True),
    "floors_changed": (_flag, "true or false", True),
    "ne": (_metres, "a finite distance in m >= 0", True),
    "success": (_flag, "true or false", True),
    "spl": (lambda v: _metres(v) and v <= 1, "a number from 0 to 1", True),
    "path_length": (_metres, "a finite distance in m >= 0", True),
    "collisions_human": (_count, "a whole number >= 0", True),
    "collisions_static": (_count, "a whole number >= 0", True),
    "tcr": (_count, "a whole number >= 0", True),
    "cr": (lambda v: _count(v) and v <= 1, "0 or 1", True),
    "sr": (lambda v: _count(v) and v <= 1, "0 or 1", True),
    "steps": (_count, "a whole number >= 0", True),
    "stopped": (_flag, "true or false", False),
    "baseline": (_count, "a whole number >= 0", False),
    "ne_euclid": (lambda v: v is None or _metres(v), "a finite distance in m >= 0 or null", False),
    "unreachable": (_flag, "true or false", False),
    "seconds": (_metres, "a finite duration in s >= 0", True),
    "people_waits": (_count, "a whole number >= 0", False),
    "actions": (_actions, "a list of action literals (STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT, LOOK_UP, LOOK_DOWN)", True),
}


def check_partial_row(row: object, where: str = "") -> tuple[str, dict | str]:
    """One episode line of ``results.partial.jsonl``, every field type-checked (:data:`PARTIAL_ROW_FIELDS`).

    Args:
        row: the parsed JSON value of the line.
        where: the file and line, put before the message (``"<file>: line 3"``; empty: the message alone).

    Returns:
        ``(episode id, result)``: the row (a finished episode) or the skip reason (a skipped one).

    Raises:
        ValueError: one line naming ``where``, the field, its value and what it must be.
    """

    def bad(what: str) -> ValueError:
        return ValueError(f"{where}: {what}" if where else what)

    if not isinstance(row, dict):
        raise bad(f"must be an object (an episode's results); got {type(row).__name__}")
    eid = row.get("episode_id")
    if not _text(eid):
        raise bad(f"episode_id: {'missing' if 'episode_id' not in row else repr(eid)}; it must be a non-empty string")
    if "skipped" in row:
        if not _text(row["skipped"]) or set(row) != {"episode_id", "skipped"}:
            raise bad(
                f"skipped: {row['skipped']!r} (keys {', '.join(sorted(row))}); a skipped episode's line is "
                '{"episode_id": ..., "skipped": "<reason>"} and nothing else'
            )
        return eid, row["skipped"]
    for key, (ok, want, required) in PARTIAL_ROW_FIELDS.items():
        if key not in row:
            if required:
                raise bad(f"{key}: missing; it must be {want}")
            continue
        if not ok(row[key]):
            shown = repr(row[key])
            raise bad(f"{key}: {shown[:60]}{'...' if len(shown) > 60 else ''} is not {want}")
    return eid, row


class PartialResults:
    """``results.partial.jsonl``: a header line with the run's options, then one line per finished episode.

    Lines: ``{"format": 1, "run": {...}}`` then :meth:`EpisodeRecord.row` + ``"actions"``, or
    ``{"episode_id": ..., "skipped": reason}``. Appended and flushed line by line, so a killed run
    loses at most the line being written (a torn last line, without its newline, is dropped on reading).

    Reading is strict (:func:`check_partial_row`): every field is type-checked before any episode
    runs, and a damaged file (a header that is not the run's, a line that does not parse or misses
    a field, a field of the wrong type, an episode twice) is refused naming the line and the field,
    never dropped silently or read as other values.

    Args:
        path: the file. run: the run's identity (:meth:`EvalOptions.key` and the episodes file);
            a resumed file must have been written with the same.
        resume: read the finished episodes of an existing file; False starts it afresh.
        restart: how else to start afresh, for messages (eval: ``"rerun without --resume"``).
            The messages name the file, not the flag that asked to read it (eval puts ``--resume:`` before them).

    Raises:
        EvalError: ``resume`` and the file was written by another run (names the differing option),
            is not a partial results file, or is damaged (names the line and the field).
    """

    def __init__(self, path: Path, run: dict, resume: bool, restart: str = "delete the file (its episodes run again)") -> None:
        self.path = Path(path)
        self.done: dict[str, dict | str] = {}
        self.restart = restart
        if resume and (self.path.exists() or self.path.is_symlink()) and not self.path.is_file():
            raise EvalError(f"{self.path} is not a regular file; remove it, or {restart}")
        if resume and self.path.is_file() and self.path.stat().st_size > 0:
            self._read(run)
        else:
            from havln_robot.paths import naming_errors

            self.path.parent.mkdir(parents=True, exist_ok=True)
            with naming_errors(self.path), atomic_output(self.path) as tmp:
                tmp.write_text(jsonio.dumps({"format": PARTIAL_FORMAT, "run": run}) + "\n")

    def _damaged(self, n: int, what: str) -> EvalError:
        fix = "delete that line (its episode runs again)" if n > 1 else "delete the file"
        return EvalError(f"{self.path}: line {n}: {what}; {fix}, or {self.restart}")

    def _read(self, run: dict) -> None:
        import json

        from havln_robot.jsonio import JsonFileError, read_bytes_capped

        try:
            data = read_bytes_capped(self.path, gunzip=False)
        except JsonFileError as exc:
            raise EvalError(f"{exc}; {self.restart}") from None
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()  # the file ends with a newline: no torn line
        elif len(lines) > 1:
            try:
                json.loads(lines[-1])
            except (ValueError, RecursionError):
                lines.pop()  # the torn last line of a killed run (its newline never written): it runs again
        parsed = []
        for n, raw in enumerate(lines, 1):
            try:
                parsed.append(json.loads(raw.decode("utf-8")))
            except UnicodeDecodeError:
                raise self._damaged(n, "not UTF-8 text") from None
            except RecursionError:
                raise self._damaged(n, "its JSON nests too deeply") from None
            except ValueError as exc:
                raise self._damaged(n, f"not JSON ({exc})") from None
        head = parsed[0]
        if (
            not isinstance(head, dict)
            or type(head.get("format")) is not int
            or head["format"] != PARTIAL_FORMAT
            or not isinstance(head.get("run"), dict)
        ):
            raise EvalError(
                f"{self.path}: line 1 is not the header of a havln-robot eval partial results file "
                f'({{"format": {PARTIAL_FORMAT}, "run": {{...}}}}); delete the file, or {self.restart}'
            )
        old = head["run"]
        diff = sorted(k for k in set(old) | set(run) if old.get(k) != run.get(k))
        if diff:
            k = diff[0]
            raise EvalError(
                f"{self.path} was written with {k}={old.get(k)!r}, this run has {k}={run.get(k)!r}; give the same options or another --out"
            )
        first: dict[str, int] = {}
        for n, row in enumerate(parsed[1:], 2):
            try:
                eid, result = check_partial_row(row)
            except ValueError as exc:
                raise self._damaged(n, str(exc)) from None
            if eid in first:
                raise EvalError(
                    f"{self.path}: line {n}: episode {eid!r} is already at line {first[eid]}; "
                    f"delete one of the two lines, or {self.restart}"
                )
            first[eid] = n
            self.done[eid] = result
        if not data.endswith(b"\n"):
            # drop a torn line, or end the last whole one, before appending
            with atomic_output(self.path) as tmp:  # a failed rewrite must not lose the finished episodes
                tmp.write_bytes(b"".join(line + b"\n" for line in lines))

    def add(self, episode_id: str, result: dict | str) -> None:
        """Append one finished episode (a row with actions, or a skip reason) and flush it to disk."""
        from havln_robot.paths import naming_errors

        row = {"episode_id": episode_id, "skipped": result} if isinstance(result, str) else result
        with naming_errors(self.path), self.path.open("a") as fh:
            fh.write(jsonio.dumps(row) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.done[episode_id] = result


def write_outputs(out_dir: Path, records: list[EpisodeRecord], summary: dict) -> None:
    """Write results.jsonl, results.csv, actions.json (run file: id → format-v1 sequence) and summary.json into ``out_dir``."""
    rows = [r.row() for r in records]
    actions = {r.episode_id: finalize_sequence(r.actions) for r in records}
    # the four files at once (staging folder swapped in at the end): an earlier run's set or this one, never a mix
    with staged_output_dir(out_dir, stale=("results.jsonl", "results.csv", "actions.json", "summary.json")) as stage:
        with atomic_output(stage / "results.jsonl") as tmp, tmp.open("w") as fh:
            for row in rows:
                fh.write(jsonio.dumps(row) + "\n")
        if rows:
            from havln_robot.text import csv_text

            with atomic_output(stage / "results.csv") as tmp, tmp.open("w", newline="") as fh:
                wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
                wr.writeheader()
                # text cells (episode id, scan: from the episodes file) through the one CSV rule; numbers as they are
                wr.writerows({k: csv_text(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows)
        write_json(stage / "actions.json", actions, newline=False)
        write_json(stage / "summary.json", summary, newline=False, indent=2)


def default_baseline(episodes_file: Path, episodes) -> tuple[dict[str, int], str]:
    """Collision baselines for TCR of an episodes file and why (see the module docstring): ``(episode id → baseline, reason)``."""
    from havln_robot.paths import data_dir
    from havln_robot.sim.metrics import load_collision_baseline

    name = episodes_file.name
    if not (name.endswith(".json.gz") or (episodes and not episodes[0].path_ids)):
        return {}, "baseline 0 (discrete path ids are not challenge episode ids)"
    for split in ("val_unseen", "val_seen"):
        if split in name:
            f = data_dir() / "challenge" / f"collision_num_{split}.json"
            if f.is_file():
                return load_collision_baseline(f), f"baseline from {f}"
    return {}, "baseline 0 (no challenge split recognised in the file name)"


def _m(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f} m"


def format_summary(agg, seconds: float, steps: int, policy_name: str, ran: int | None = None) -> str:
    """Human-readable summary lines of an :class:`~havln_robot.sim.metrics.Aggregate` (``ran``: episodes run in ``seconds``, default all)."""
    ran = agg.n if ran is None else ran
    eps = ran / seconds if seconds > 0 else float("inf")
    return "\n".join(
        [
            f"policy {policy_name}: {plural(agg.n, 'episode')}",
            f"  success {100 * agg.success_rate:.1f} %   SR {100 * agg.sr:.1f} %   SPL {agg.spl:.3f}",
            f"  NE mean {agg.ne:.2f} m   median {agg.ne_median:.2f} m (walkable)   path length {agg.path_length:.2f} m   actions {agg.steps:.1f}",
            f"  NE_euclid (straight line) mean {_m(agg.ne_euclid)}   goal unreachable: {agg.unreachable} episodes",
            f"  TCR {agg.tcr:.3f}   CR {agg.cr:.3f} (/{agg.cr_denominator})   collisions human {agg.collisions_human}  static {agg.collisions_static}",
            f"  Score {agg.score:.2f} (navigation {agg.navigation:.3f}, social {agg.social:.3f})",
            f"  {eps:.2f} episodes/s   {steps / seconds if seconds > 0 else float('inf'):.0f} steps/s   ({seconds:.1f} s)",
        ]
    )


def run_engine(jobs: list[Job], target: tuple[str, int | None] | None, on_result, quiet: bool = False):
    """Run ``jobs`` serially (``target`` None) or as Ray tasks, with one progress bar; returns a :class:`havln_robot.cluster.Outcome`.

    Args:
        jobs: the jobs still to run.
        target: :func:`havln_robot.cluster.parse_target`'s result.
        on_result: called with each :func:`run_job` result ``(index, tag, row | skip reason)`` in completion order.
        quiet: no progress bar.

    Raises:
        ClusterError: Ray missing or unreachable. EvalError / PolicyError (serial engine): as :func:`run_job`.
    """
    from havln_robot import cluster

    if not jobs:
        return cluster.Outcome()
    if target is None:
        bar = cluster.progress_bar(len(jobs), 0, quiet)
        out = cluster.Outcome()

        def tick(*res) -> None:
            on_result(res)
            out.finished += 1
            bar.update(1)

        try:
            run_serial(jobs, lambda *r: tick(*r))
        finally:
            bar.close()
        return out
    started = cluster.connect(target[0], target[1])
    try:
        cpus, nodes = cluster.cluster_size()
        if not quiet:
            print(f"  engine: {cluster.describe(target[0], started, cpus, nodes)}", file=sys.stderr)
        bar = cluster.progress_bar(len(jobs), 0, quiet)

        def got(res) -> None:
            on_result(res)
            bar.update(1)

        try:  # submitted grouped by scan, so a worker tends to find the scene it loaded last
            order = sorted(range(len(jobs)), key=lambda k: (jobs[k].episode.scan, k))
            res = cluster.run_jobs(run_job, [jobs[k] for k in order], got)
            res.failed = {order[k]: why for k, why in res.failed.items()}
        finally:
            bar.close()
        return res
    finally:
        if started:
            cluster.disconnect()


def _add_input_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--policy",
        type=nonempty("a policy: expert, forward, random or a checkpoint"),
        default="expert",
        help="expert | forward[:steps=N] | random[:seed=S] | checkpoint path or name in models/",
    )
    ap.add_argument(
        "--episodes",
        type=path_arg,
        help="HA-R2R/R2R discrete *.json or continuous *.json.gz (default: HA_val_seen.json in the data folder)",
    )
    ap.add_argument("--connectivity", type=path_arg, help="folder of <scan>_connectivity.json (default: <data>/connectivity)")
    ap.add_argument(
        "--scenes",
        type=path_arg,
        help="folder of your scan meshes <scan>/<scan>.glb (Habitat layout): render and collide on them (default: procedural scenes)",
    )
    ap.add_argument("--limit", type=number_in(1, integer=True), help="evaluate only the first N episodes")
    ap.add_argument("--out", type=path_arg, help="write results.jsonl/.csv, actions.json, summary.json here")
    ap.add_argument(
        "--seed",
        type=number_in(0, integer=True),
        default=0,
        help="crowd seed; per-episode draws use a hash of (seed, episode id) (default 0)",
    )
    ap.add_argument(
        "--populate", type=number_in(0, 100, integer=True), default=0, help="synthetic people per episode without people (R2R); default 0"
    )
    ap.add_argument(
        "--crowd",
        type=number_in(0, 100, integer=True),
        default=None,
        help="people per episode: at most the first N of its own, N synthetic where it has none",
    )
    ap.add_argument("--baseline", type=path_arg, help="collision_num_<split>.json for TCR baselines (default: see docs)")
    ap.add_argument(
        "--instruction-index", type=number_in(0, integer=True), default=0, help="which instruction of each discrete path (default 0)"
    )
    ap.add_argument(
        "--device", type=nonempty("a torch device such as cpu or cuda"), default="cpu", help="torch device for checkpoint policies"
    )


def _add_world_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--heading-jitter-deg",
        type=number_in(0, 10, unit="deg"),
        default=0.0,
        help="render panorama views at nominal + N(0, this) deg (clipped to 2 std), as sweep-mode frames are chosen; default 0",
    )
    fov = number_in(0, OBS_HFOV_DEG, unit="deg", above=True)
    ap.add_argument(
        "--hfov-deg", type=fov, default=OBS_HFOV_DEG, help="camera horizontal field of view, deg (the render is 90; default 90)"
    )
    ap.add_argument("--vfov-deg", type=fov, default=OBS_HFOV_DEG, help="camera vertical field of view, deg (the render is 90; default 90)")
    ap.add_argument(
        "--max-linear-speed",
        type=number_in(*MOTION_PARAMS.range("max_linear_speed"), unit="m/s"),
        default=None,
        help="motion limit, m/s (default motion_node's); open-loop world: sim time per action = 0.25 m / this",
    )
    ap.add_argument(
        "--max-angular-speed",
        type=number_in(*MOTION_PARAMS.range("max_angular_speed"), unit="rad/s"),
        default=None,
        help="yaw-rate limit, rad/s (closed-loop world)",
    )
    ap.add_argument(
        "--odom-noise-scale",
        type=number_in(0, 100),
        default=None,
        help="factor on the Go2 base's odometry/IMU noise (0 = perfect; closed-loop world)",
    )
    ap.add_argument(
        "--latency-s", type=number_in(0, 5, unit="s"), default=None, help="actuation latency of the Go2 base, s (closed-loop world)"
    )
    ap.add_argument(
        "--people",
        choices=PEOPLE_MODES,
        default="none",
        help="people checks before each action: none (default), ground_truth (true people and velocities), "
        "detected (people_node's tracker on rendered depth only; slower)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``havln-robot eval``."""
    ap = argparse.ArgumentParser(prog="havln-robot eval", description="Evaluate a policy on HA-R2R/R2R episodes in the batch simulator.")
    _add_input_options(ap)
    _add_world_options(ap)
    ap.add_argument(
        "--ray",
        type=nonempty("auto, local or a cluster address"),
        default=None,
        metavar="auto|local|ADDRESS",
        help="run episodes as Ray tasks: local runtime, or a cluster (docs/scale.md)",
    )
    ap.add_argument(
        "--workers", type=number_in(1, 4096, integer=True), default=None, help="Ray local with N CPUs (= --ray local; default: all cores)"
    )
    ap.add_argument("--resume", action="store_true", help=f"continue the run in --out from its {PARTIAL_NAME}")
    ap.add_argument("--overwrite", action="store_true", help="replace the results of an earlier run in --out")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return ap


def _check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, int | None] | None:
    """Refuse contradictory options (argparse's exit 2); returns the Ray target or None (serial)."""
    if args.resume and not args.out:
        ap.error("--resume needs --out (the folder of the run to continue)")
    try:
        from havln_robot.cluster import parse_target

        target = parse_target(args.ray, args.workers)
    except ValueError as exc:
        ap.error(str(exc))
    if target is not None and is_remote(args.policy):
        ap.error("a policy server (--policy http://HOST:PORT) holds one episode at a time: run eval without --ray/--workers")
    return target


def _prepare_out(args: argparse.Namespace) -> None:
    """Check --out can be written and holds no earlier results, before the evaluation."""
    from havln_robot.paths import prepare_out_dir, refuse_overwrite

    prepare_out_dir(args.out, "--out")
    unfinished = (Path(args.out) / PARTIAL_NAME).is_file()
    if not (args.resume and unfinished):
        also = ", --resume to continue its unfinished run" if unfinished else ""
        refuse_overwrite(args.out, "--out", args.overwrite, names=(*OUTPUT_NAMES, PARTIAL_NAME), also=also)


def _load_inputs(args: argparse.Namespace) -> tuple[Path, list, dict[str, int], str]:
    """The episodes file, its episodes, the TCR baselines and where they come from; EvalError when refused."""
    from havln_robot.episodes import EpisodeError, empty_instruction_ids, load_episodes
    from havln_robot.paths import data_dir
    from havln_robot.sim.metrics import load_collision_baseline

    ep_file = Path(args.episodes) if args.episodes else data_dir() / "ha_r2r_de" / "HA_val_seen.json"
    try:
        episodes = load_episodes(ep_file, args.connectivity, limit=args.limit, instruction_index=args.instruction_index)
    except EpisodeError as exc:
        raise EvalError(str(exc)) from exc
    empty = empty_instruction_ids(episodes, args.instruction_index)
    if empty:
        shown = ", ".join(empty[:5]) + (f" (+{len(empty) - 5} more)" if len(empty) > 5 else "")
        print(
            f"havln-robot eval: warning: instruction {args.instruction_index} is empty in {len(empty)} path(s) of {ep_file.name} "
            f"({shown}); the next non-empty instruction is used for them",
            file=sys.stderr,
        )
    try:
        if args.baseline:
            return ep_file, episodes, load_collision_baseline(args.baseline), f"baseline from {args.baseline}"
        return ep_file, episodes, *default_baseline(ep_file, episodes)
    except ValueError as exc:
        raise EvalError(str(exc)) from exc


def _options(args: argparse.Namespace) -> EvalOptions:
    """The EvalOptions of the command line (each field is the option of its name, but the two folders)."""
    names = {f.name: f.name for f in fields(EvalOptions)} | {"connectivity_dir": "connectivity", "scenes_dir": "scenes"}
    return EvalOptions(**{f: getattr(args, a) for f, a in names.items()})


def _policy_name(opts: EvalOptions) -> str:
    """Check the policy before any episode runs (EvalError); its display name."""
    try:
        if is_builtin(opts.policy):
            make_policy(opts.policy)  # each episode builds its own (seeded) copy
        elif opts.policy not in RESERVED_NAMES:
            _one_torch_thread(opts.policy)
            return getattr(_policy_for(opts), "name", opts.policy)  # loads the checkpoint once; serial episodes reuse it
    except Exception as exc:  # noqa: BLE001 - PolicyError and friends: one line, no traceback
        raise EvalError(str(exc)) from exc
    return opts.policy


def _collect(episodes, jobs: list[Job], partial: PartialResults | None, target, quiet: bool):
    """Run the jobs not already in ``partial``; (results by episode index, engine outcome, seconds, jobs run)."""
    results: dict[int, dict | str] = {}
    if partial is not None and partial.done:
        index = {ep.episode_id: i for i, ep in enumerate(episodes)}
        results = {index[e]: r for e, r in partial.done.items() if e in index}
        print(f"  resuming: {plural(len(results), 'episode')} already in {partial.path}", file=sys.stderr)
    todo = [j for j in jobs if j.index not in results]

    def got(res) -> None:
        k, _tag, row = res
        results[k] = row
        if partial is not None:
            partial.add(episodes[k].episode_id, row)

    t0 = time.perf_counter()
    outcome = run_engine(todo, target, got, quiet)
    return results, outcome, time.perf_counter() - t0, len(todo)


def _print_extras(records: list[EpisodeRecord], people: str) -> None:
    multi = [r for r in records if r.floors_changed]
    if multi:
        ms = sum(r.metrics.success for r in multi) / len(multi)
        print(f"  floor-changing episodes: {len(multi)}, success {100 * ms:.1f} %")
    if people != "none":
        print(f"  people checks ({people}): {sum(r.people_waits for r in records)} actions refused (1 s wait each)")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``havln-robot eval``; returns the exit code (0 ok, 1 some episodes failed, 2 bad input)."""
    from havln_robot.cluster import ClusterError
    from havln_robot.sim.metrics import aggregate

    ap = build_parser()
    args = ap.parse_args(argv)
    target = _check_args(ap, args)
    try:
        loop_options(EvalOptions(**{f: getattr(args, f) for f in CLOSED_LOOP_ONLY.values()}))  # refused here, not in every episode
        if args.out:
            _prepare_out(args)
        ep_file, episodes, baselines, why = _load_inputs(args)
        opts = _options(args)
        name = _policy_name(opts)
        run_id = opts.key() | {"episodes_file": str(ep_file.resolve()), "instruction_index": args.instruction_index, "baseline": why}
        try:  # a damaged file is refused here, before any episode runs
            partial = PartialResults(Path(args.out) / PARTIAL_NAME, run_id, args.resume, "rerun without --resume") if args.out else None
        except EvalError as exc:
            raise EvalError(f"--resume: {exc}") from exc
        scenes = f"scan meshes from {args.scenes}" if args.scenes else "procedural scenes"
        print(f"evaluating {name} on {plural(len(episodes), 'episode')} from {ep_file} (seed {args.seed}; TCR {why}; {scenes})", file=sys.stderr)  # fmt: skip
        results, outcome, seconds, ran = _collect(episodes, make_jobs(episodes, opts, baselines), partial, target, args.quiet)
    except (EvalError, ClusterError) as exc:
        print(f"havln-robot eval: {exc}", file=sys.stderr)
        return 2
    for k in sorted(results):
        if isinstance(results[k], str):
            print(f"havln-robot eval: skipping episode {episodes[k].episode_id}: {results[k]}", file=sys.stderr)
    records = [EpisodeRecord.from_row(r, r["actions"]) for _k, r in sorted(results.items()) if not isinstance(r, str)]
    if outcome.failed:
        for k, reason in sorted(outcome.failed.items()):
            print(f"havln-robot eval: episode {episodes[k].episode_id} failed: {reason}", file=sys.stderr)
        keep = f"; the {plural(len(results), 'finished episode')} are in {partial.path}: rerun with --resume" if partial else ""
        print(f"havln-robot eval: {plural(len(outcome.failed), 'episode')} failed{keep}", file=sys.stderr)
        return 1
    if not records:
        print("havln-robot eval: no episode could be run", file=sys.stderr)
        return 2
    agg = aggregate([r.metrics for r in records], with_humans=[r.humans > 0 for r in records])
    steps = sum(len(r.actions) for r in records)
    print(format_summary(agg, seconds, steps, name, ran))
    _print_extras(records, args.people)
    if args.out:
        rate = {"episodes_per_s": ran / seconds if seconds > 0 else None, "steps_per_s": steps / seconds if seconds > 0 else None}
        summary = agg.as_dict() | {
            "policy": name,
            "episodes_file": str(ep_file),
            "seed": args.seed,
            "seconds": seconds,
            "episodes_run": ran,
        }
        summary |= rate | {"baseline": why, "engine": "serial" if target is None else f"ray {target[0]}"}
        summary |= {"scenes": f"mesh:{args.scenes}" if args.scenes else "procedural", "options": opts.key()}
        write_outputs(Path(args.out), records, summary)
        partial.path.unlink(missing_ok=True)
        print(f"  wrote {args.out}/results.jsonl, results.csv, actions.json, summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
