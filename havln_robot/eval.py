"""``havln-robot eval``: run a policy on HA-R2R / R2R episodes in the batch simulator and score it.

Usage::

    havln-robot eval --policy expert|forward[:OPTS]|random[:OPTS]|<checkpoint> --episodes FILE
                     [--connectivity DIR] [--scenes DIR] [--limit N] [--out DIR] [--seed S] [--populate N] [--heading-jitter-deg D]
                     [--baseline FILE] [--instruction-index K]

Policies:

* ``expert`` -- :class:`havln_robot.sim.expert.Expert` (privileged reference-path follower);
* ``forward``, ``random`` (with options, e.g. ``forward:steps=8``) -- the policies without a
  checkpoint of :data:`havln_robot.policy.registry.BUILTINS` (VLN-CE semantics, the same as agent_node's):
  37 MOVE_FORWARD then STOP; i.i.d. actions with P(STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT) =
  (0.02, 0.68, 0.15, 0.15), seeded per episode with ``--seed`` + the episode's index;
* anything else -- a checkpoint loaded with :func:`havln_robot.policy.registry.make_policy`; its
  observations are rendered by :class:`havln_robot.sim.render.Renderer` at 256x256, 90 deg HFOV
  (the VLN-CE sensor) for each of ``policy.views`` headings and preprocessed by
  :mod:`havln_robot.perception.preprocess`.

People are placed by :meth:`Crowd.from_episode` with ``--seed`` (the same seed for every episode, as
``havln-robot replay`` does, so replaying the written actions reproduces the results).

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
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from havln_robot import jsonio
from havln_robot.actions import finalize_sequence
from havln_robot.policy.registry import RESERVED_NAMES, is_builtin, make_policy
from havln_robot.text import number_in, plural

OBS_SIZE: int = 256
"""Rendered observation size (px, square) for checkpoint policies; 90 deg HFOV as the VLN-CE sensors."""
OBS_HFOV_DEG: float = 90.0


class EvalError(RuntimeError):
    """Evaluation cannot run; the one-line message says why and what to do."""


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


# ---------------------------------------------------------------------------- people shield (issue 21)
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
    is not executed (:meth:`step`): the robot waits ``wait_s`` (agent_node's ``blocked_wait_s``; sim
    time advances, people move and may walk into it) and the policy decides again. After
    ``max_total_waits`` refusals in an episode the shield lets everything through.

    Args:
        world: the episode's :class:`~havln_robot.sim.world.World`. mode: "ground_truth" | "detected".
    """

    def __init__(self, world, mode: str, wait_s: float = 1.0, max_total_waits: int = 60) -> None:
        from havln_robot.motion.executor import MotionConfig
        from havln_robot.motion.safety import CameraMount, Footprint

        self.world, self.mode = world, mode
        self.wait_s, self.max_total_waits = wait_s, max_total_waits
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
            _, depth = self.renderer.render((x, y, z, yaw), 0.0, t)
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

    def step(self, action: str):
        """``world.step(action)`` when the people checks allow it; else wait ``wait_s`` and return None.

        A refused action is not executed and not recorded (motion_node refuses it; the policy decides
        again from the same pose, as agent_node does after its blocked wait); sim time advances by
        ``wait_s`` and people may walk into the standing robot. After ``max_total_waits`` refusals
        in an episode every action is executed (no deadlock in front of a person who never leaves).
        """
        if self.waits < self.max_total_waits and not self.world.done and self.hazard(action) is not None:
            self.waits += 1
            self.world.move(0.0, 0.0, self.wait_s)
            return None
        return self.world.step(action)

    def close(self) -> None:
        """Release the renderer."""
        if self.renderer is not None:
            self.renderer.close()


# ---------------------------------------------------------------------------- observations
class _Observer:
    """Renders :class:`havln_robot.policy.api.Observation` for a world (checkpoint policies)."""

    def __init__(self, world, views: int, heading_jitter_deg: float = 0.0, seed: int = 0) -> None:
        from havln_robot.perception.preprocess import to_model_depth, to_model_rgb
        from havln_robot.sim.render import Renderer

        self._rgb, self._depth = to_model_rgb, to_model_depth
        self.world = world
        self.views = max(1, int(views))
        self.renderer = Renderer(world.scene, world.crowd, width=OBS_SIZE, height=OBS_SIZE, hfov_deg=OBS_HFOV_DEG)
        self.headings = self._headings(self.views)
        # Sweep-mode panoramas: each view is a camera frame within the selection tolerance of its
        # heading, not exactly at it (issue 16). With heading_jitter_deg > 0 every view of a
        # panorama is rendered at nominal + e, e ~ N(0, jitter) clipped to +-2 jitter, and the
        # policy gets those headings (agent_node gives it the measured ones). The front view
        # (1 view) stays exact. Measured distribution: README "panorama" figures.
        self.jitter = math.radians(max(0.0, heading_jitter_deg))
        self._rng = np.random.default_rng(seed)

    def observe(self, step: int, views: int | None = None):
        """Render ``views`` headings (default: the count given at construction) around the body.

        A policy that asks for a panorama only at decisions (``policy.views`` changes between 1 and N)
        gets exactly what agent_node would give it, and evaluation renders 1 view between decisions.
        """
        from havln_robot.policy.api import Observation

        n = self.views if views is None else max(1, int(views))
        headings = self.headings if n == self.views else self._headings(n)
        if self.jitter > 0 and n > 1:
            e = np.clip(self._rng.normal(0.0, self.jitter, n), -2 * self.jitter, 2 * self.jitter)
            headings = (((headings + e) + math.pi) % (2 * math.pi) - math.pi).astype(np.float32)
        x, y, z, yaw = self.world.pose
        rgbs, depths = [], []
        for h in headings:
            rgb, depth = self.renderer.render((x, y, z, yaw + float(h)), self.world.camera_pitch, self.world.t)
            rgbs.append(self._rgb(rgb, OBS_HFOV_DEG))
            depths.append(self._depth(depth, OBS_HFOV_DEG))
        return Observation(np.stack(rgbs), np.stack(depths).astype(np.float32), headings.copy(), step)

    @staticmethod
    def _headings(n: int) -> np.ndarray:
        h = np.array([2.0 * math.pi * k / n for k in range(n)], dtype=np.float32)
        return ((h + math.pi) % (2 * math.pi) - math.pi).astype(np.float32)

    def close(self) -> None:
        self.renderer.close()


# ---------------------------------------------------------------------------- running
def run_episode(
    world, policy: str | object, seed: int = 0, heading_jitter_deg: float = 0.0, shield: PeopleShield | None = None
) -> list[str]:
    """Run one episode to its end (STOP or the 500-action budget); returns the actions taken.

    Args:
        world: a reset :class:`~havln_robot.sim.world.World`.
        policy: "expert", a spec of a policy without a checkpoint (``"random"``, ``"forward:steps=8"``;
            built afresh for the episode by :func:`~havln_robot.policy.registry.make_policy`), or a
            :class:`havln_robot.policy.api.Policy`.
        seed: default seed of a seeded builtin (``random``) whose spec gives none (and of the heading jitter).
        heading_jitter_deg: std of the view-heading error of panorama views, deg (0: exact headings;
            sweep-mode panoramas: the bench panorama's measured spread).
        shield: people checks before each action (``eval --people``), or None.
    """
    observer = None
    if policy == "expert":
        from havln_robot.sim.expert import Expert

        agent = Expert(world)
    elif isinstance(policy, str):
        agent = make_policy(policy, seed=seed)
    else:
        agent = policy
    if policy != "expert" and getattr(agent, "observes", True):
        observer = _Observer(world, getattr(agent, "views", 1), heading_jitter_deg, seed)
    try:
        agent.reset(world.episode.instruction)
        while not world.done:
            obs = observer.observe(len(world.actions), getattr(agent, "views", 1)) if observer is not None else None
            act = agent.act(obs)
            if shield is not None:
                shield.step(act)
            else:
                world.step(act)
    finally:
        if observer is not None:
            observer.close()
    return list(world.actions)


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
    """Evaluate ``policy`` on ``episodes`` (grouped by scan internally; results in input order).

    Args:
        episodes: :class:`~havln_robot.episodes.Episode` list.
        policy: see :func:`run_episode`.
        connectivity_dir: folder of connectivity files (default ``data_dir()/connectivity``).
        seed: crowd seed (same for every episode) and random-policy seed.
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
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.mesh_scene import load_scene
    from havln_robot.sim.scene import SceneError
    from havln_robot.sim.world import World, WorldError

    baselines = baselines or {}
    episodes = list(episodes)
    out: list[tuple[int, EpisodeRecord]] = []
    order = sorted(range(len(episodes)), key=lambda i: (episodes[i].scan, i))  # load each scene once
    for k in order:
        ep = episodes[k]
        t0 = time.perf_counter()
        try:
            scene = load_scene(ep.scan, connectivity_dir, scenes_dir)
        except SceneError as exc:
            raise EvalError(str(exc)) from None
        crowd = Crowd.from_episode(ep, scene, seed=seed, populate=populate)
        try:
            world = World(scene, ep, crowd, seed=seed, baseline=baselines.get(ep.episode_id, 0))
        except WorldError as exc:
            print(f"havln-robot eval: skipping episode {ep.episode_id}: {exc}", file=sys.stderr)
            continue
        zs = [p[2] for p in ep.reference_path]
        shield = PeopleShield(world, people) if people != "none" else None
        try:
            actions = run_episode(world, policy, seed=seed + k, heading_jitter_deg=heading_jitter_deg, shield=shield)
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
        out.append((k, rec))
        if on_result is not None:
            on_result(rec)
    return [rec for _k, rec in sorted(out, key=lambda kr: kr[0])]


def write_outputs(out_dir: Path, records: list[EpisodeRecord], summary: dict) -> None:
    """Write results.jsonl, results.csv, actions.json (run file: id → format-v1 sequence) and summary.json into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [r.row() for r in records]
    with (out_dir / "results.jsonl").open("w") as fh:
        for row in rows:
            fh.write(jsonio.dumps(row) + "\n")
    if rows:
        with (out_dir / "results.csv").open("w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
            wr.writeheader()
            wr.writerows(rows)
    actions = {r.episode_id: finalize_sequence(r.actions) for r in records}
    jsonio.write(out_dir / "actions.json", actions, newline=False)
    jsonio.write(out_dir / "summary.json", summary, newline=False, indent=2)


def _default_baseline(episodes_file: Path, episodes) -> tuple[dict[str, int], str]:
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


def format_summary(agg, seconds: float, steps: int, policy_name: str) -> str:
    """Human-readable summary lines of an :class:`~havln_robot.sim.metrics.Aggregate`."""
    eps = agg.n / seconds if seconds > 0 else float("inf")
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``havln-robot eval``; returns the exit code (0 ok, 2 bad input)."""
    ap = argparse.ArgumentParser(prog="havln-robot eval", description="Evaluate a policy on HA-R2R/R2R episodes in the batch simulator.")
    ap.add_argument("--policy", default="expert", help="expert | forward[:steps=N] | random[:seed=S] | checkpoint path or name in models/")
    ap.add_argument("--episodes", help="HA-R2R/R2R discrete *.json or continuous *.json.gz (default: HA_val_seen.json in the data folder)")
    ap.add_argument("--connectivity", help="folder of <scan>_connectivity.json (default: <data>/connectivity)")
    ap.add_argument(
        "--scenes",
        help="folder of your scan meshes <scan>/<scan>.glb (Habitat layout): render and collide on them (default: procedural scenes)",
    )
    ap.add_argument("--limit", type=number_in(1, integer=True), help="evaluate only the first N episodes")
    ap.add_argument("--out", help="write results.jsonl/.csv, actions.json, summary.json here")
    ap.add_argument("--seed", type=number_in(0, integer=True), default=0, help="crowd and random-policy seed (default 0)")
    ap.add_argument(
        "--populate", type=number_in(0, 100, integer=True), default=0, help="synthetic people per episode without people (R2R); default 0"
    )
    ap.add_argument("--baseline", help="collision_num_<split>.json for TCR baselines (default: see docs)")
    ap.add_argument(
        "--instruction-index", type=number_in(0, integer=True), default=0, help="which instruction of each discrete path (default 0)"
    )
    ap.add_argument("--device", default="cpu", help="torch device for checkpoint policies")
    ap.add_argument(
        "--heading-jitter-deg",
        type=number_in(0, 10, unit="deg"),
        default=0.0,
        help="render panorama views at nominal + N(0, this) deg (clipped to 2 std), as sweep-mode frames are chosen; default 0",
    )
    ap.add_argument(
        "--people",
        choices=PEOPLE_MODES,
        default="none",
        help="people checks before each action: none (default), ground_truth (true people and velocities), "
        "detected (people_node's tracker on rendered depth only; slower)",
    )
    ap.add_argument("-q", "--quiet", action="store_true", help="no per-episode progress")
    args = ap.parse_args(argv)
    if args.seed < 0:
        ap.error(f"--seed {args.seed}: give a seed >= 0")
    if not (math.isfinite(args.heading_jitter_deg) and 0.0 <= args.heading_jitter_deg <= 10.0):
        ap.error(f"--heading-jitter-deg {args.heading_jitter_deg}: give a standard deviation in [0, 10] deg")
    if args.populate < 0:
        ap.error(f"--populate {args.populate}: give a number of people >= 0")
    if args.out:
        from havln_robot.paths import prepare_out_dir

        prepare_out_dir(args.out, "--out")  # before the evaluation, so its results cannot be lost

    from havln_robot.episodes import EpisodeError, load_episodes
    from havln_robot.paths import data_dir
    from havln_robot.sim.metrics import aggregate, load_collision_baseline

    if args.limit is not None and args.limit < 1:
        print("havln-robot eval: --limit must be >= 1", file=sys.stderr)
        return 2
    ep_file = Path(args.episodes) if args.episodes else data_dir() / "ha_r2r_de" / "HA_val_seen.json"
    try:
        episodes = load_episodes(ep_file, args.connectivity, limit=args.limit, instruction_index=args.instruction_index)
    except EpisodeError as exc:
        print(f"havln-robot eval: {exc}", file=sys.stderr)
        return 2
    try:
        if args.baseline:
            baselines, why = load_collision_baseline(args.baseline), f"baseline from {args.baseline}"
        else:
            baselines, why = _default_baseline(ep_file, episodes)
    except ValueError as exc:
        print(f"havln-robot eval: {exc}", file=sys.stderr)
        return 2

    policy: str | object = args.policy
    try:
        if is_builtin(args.policy):
            make_policy(args.policy)  # check the options now; each episode builds its own (seeded) copy
        elif args.policy not in RESERVED_NAMES:
            policy = make_policy(args.policy, device=args.device)
    except Exception as exc:  # noqa: BLE001 - PolicyError and friends: one line, no traceback
        print(f"havln-robot eval: {exc}", file=sys.stderr)
        return 2
    name = args.policy if isinstance(policy, str) else getattr(policy, "name", args.policy)
    scenes = f"scan meshes from {args.scenes}" if args.scenes else "procedural scenes"
    print(
        f"evaluating {name} on {plural(len(episodes), 'episode')} from {ep_file} (seed {args.seed}; TCR {why}; {scenes})", file=sys.stderr
    )

    done = [0]

    def progress(rec: EpisodeRecord) -> None:
        done[0] += 1
        if not args.quiet and (done[0] % 20 == 0 or done[0] == len(episodes)):
            print(f"  {done[0]}/{len(episodes)} episodes", file=sys.stderr)

    t0 = time.perf_counter()
    try:
        records = evaluate(
            episodes,
            policy,
            args.connectivity,
            args.seed,
            baselines,
            args.populate,
            on_result=progress,
            heading_jitter_deg=args.heading_jitter_deg,
            scenes_dir=args.scenes,
            people=args.people,
        )
    except EvalError as exc:
        print(f"havln-robot eval: {exc}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - t0
    if not records:
        print("havln-robot eval: no episode could be run", file=sys.stderr)
        return 2
    agg = aggregate([r.metrics for r in records], with_humans=[r.humans > 0 for r in records])
    steps = sum(len(r.actions) for r in records)
    print(format_summary(agg, seconds, steps, name))
    multi = [r for r in records if r.floors_changed]
    if multi:
        ms = sum(r.metrics.success for r in multi) / len(multi)
        print(f"  floor-changing episodes: {len(multi)}, success {100 * ms:.1f} %")
    if args.people != "none":
        print(f"  people checks ({args.people}): {sum(r.people_waits for r in records)} actions refused (1 s wait each)")
    if args.out:
        summary = agg.as_dict() | {
            "policy": name,
            "episodes_file": str(ep_file),
            "seed": args.seed,
            "seconds": seconds,
            "episodes_per_s": len(records) / seconds,
            "steps_per_s": steps / seconds,
            "baseline": why,
            "scenes": f"mesh:{args.scenes}" if args.scenes else "procedural",
        }
        write_outputs(Path(args.out), records, summary)
        print(f"  wrote {args.out}/results.jsonl, results.csv, actions.json, summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
