"""Rollouts of the small panoramic policy in the batch simulator, with a waypoint expert (pure Python + torch).

Used by ``havln-robot train`` (teacher forcing, then DAgger) and by its validation. One *decision*
renders a panorama of ``N`` views at the model resolution, asks the expert (and, under DAgger, the
model) for a direction + step count or STOP, and executes the macro's actions with
``World.step``. Samples store, per decision, the views (uint8), the previous-macro encoding and the
expert's label.

Expert (:class:`WaypointExpert`): follows the episode's reference path node by node -- the target is the
next path node not yet reached (within ``reach_m``); at the last node it says STOP once within
``stop_m`` of the goal. Labels: the view whose heading is nearest to the bearing of the target, and
``round(distance / 0.25 m)`` steps (1..max_steps).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from havln_robot.actions import FORWARD_STEP_M, MAX_ACTIONS, MOVE_FORWARD, STOP
from havln_robot.policy.small import SmallConfig, SmallNet, macro_actions, prev_encoding
from havln_robot.policy.tokenizer import MAX_LENGTH, Vocabulary
from havln_robot.records import MAX_CONSECUTIVE_BLOCKED, BlockedCounter, EpisodeBlocked, Outcome

MODEL_HFOV_DEG = 90.0
"""Model field of view per view (HA-VLN-CE / VLN-CE sensors, HFOV 90 deg)."""
DEPTH_MAX_M = 10.0
"""Depth normalisation range (VLN-CE ``MAX_DEPTH`` 10 m)."""


def pano_headings(n: int) -> np.ndarray:
    """(n,) float32 view headings rad relative to the body, counter-clockwise from 0 (straight ahead)."""
    return np.array([math.remainder(2 * math.pi * i / n, 2 * math.pi) for i in range(n)], dtype=np.float32)


def _wrap(a: float) -> float:
    return math.remainder(a, 2 * math.pi)


@dataclass
class WaypointExpert:
    """Reference-path follower that labels decisions (see module docstring).

    Args:
        path: reference path nodes (x, y, z) map frame, m (``Episode.reference_path``; last = goal).
        reach_m: a node counts as reached within this xy distance, m.
        stop_m: STOP when the goal is within this distance and the last node is the target, m.
    """

    path: Sequence[Sequence[float]]
    reach_m: float = 0.6
    stop_m: float = 0.6
    human_clearance_m: float = 0.9
    k: int = 0

    def decide(
        self,
        pose: Sequence[float],
        headings: np.ndarray,
        max_steps: int,
        blocked: Sequence[int] = (),
        humans_xy: np.ndarray | None = None,
    ) -> tuple[int, int]:
        """Label for the robot at ``pose`` (x, y, z, yaw): (view index or ``len(headings)`` = STOP, steps).

        ``blocked``: view indices whose last macro from this spot ended in a contact without moving; the
        expert then detours through the best other view within 100 deg of the target, two steps at a time.
        ``humans_xy``: (M, 2) people positions, m; the expert keeps ``human_clearance_m`` from them
        (shortens the move, or takes the best view within 100 deg of the target whose straight move is clear).
        """
        x, y, _, yaw = pose
        pts = np.asarray(self.path, dtype=np.float64)[:, :2]
        # skip ahead to the furthest node already within reach (never back)
        d = np.hypot(pts[:, 0] - x, pts[:, 1] - y)
        for j in range(len(pts) - 1, self.k, -1):
            if d[j] < self.reach_m:
                self.k = j
                break
        last = len(pts) - 1
        if d[last] < self.stop_m or (self.k == last and d[last] < 1.5 * self.stop_m):
            return len(headings), 0
        target = min(self.k + 1, last)
        tx, ty = pts[target]
        bearing = _wrap(math.atan2(ty - y, tx - x) - yaw)
        err = np.abs([_wrap(bearing - float(h)) for h in headings])
        choice = int(np.argmin(err))
        if blocked:
            free = [i for i in np.argsort(err) if i not in blocked and err[i] < math.radians(100)]
            if free:
                return int(free[0]), 2
        dist = float(np.hypot(tx - x, ty - y)) * max(math.cos(float(err[choice])), 0.3)
        steps = int(min(max(round(dist / FORWARD_STEP_M), 1), max_steps))
        if humans_xy is None or not len(humans_xy):
            return choice, steps
        for i in np.argsort(err):
            if err[i] > math.radians(100) or i in blocked:
                break
            ok = self._clear_steps(x, y, yaw + float(headings[i]), steps, humans_xy)
            if ok >= min(steps, 2):
                return int(i), int(min(steps, ok))
        return choice, 1

    def _clear_steps(self, x: float, y: float, heading: float, steps: int, humans_xy: np.ndarray) -> int:
        """Steps (<= ``steps``) that keep the swept straight move ``human_clearance_m`` away from every person."""
        hx, hy = math.cos(heading), math.sin(heading)
        for s in range(1, steps + 1):
            px, py = x + hx * s * FORWARD_STEP_M, y + hy * s * FORWARD_STEP_M
            if np.min(np.hypot(humans_xy[:, 0] - px, humans_xy[:, 1] - py)) < self.human_clearance_m:
                return s - 1
        return steps


@dataclass
class EpisodeSample:
    """Teacher data of one rollout. T decisions, N views, C channels, r pixels.

    Attributes:
        tokens: (200,) int64 instruction ids; views: (T, N, C, r, r) uint8 (depth * 255 / 10 m, RGB);
        prevs: (T, 6) float32 :func:`prev_encoding` before each decision; choices: (T,) int64 expert view index or N (STOP);
        steps: (T,) int64 expert steps (0 for STOP).
    """

    tokens: np.ndarray
    views: np.ndarray
    prevs: np.ndarray
    choices: np.ndarray
    steps: np.ndarray


@dataclass
class RolloutResult:
    sample: EpisodeSample | None
    actions: list[str] = field(default_factory=list)
    metrics: object = None


class PanoramaRenderer:
    """Render a panorama of model-format views with ``havln_robot.sim.render.Renderer`` at ``res x res``.

    Each view is rendered at ``oversample * res`` px (90 deg HFOV) and area-averaged down to ``res``, so the
    training views match what :func:`havln_robot.policy.small.downsample_views` makes of the 224 / 256 px
    model images at run time. Depth (metres, z-depth) is what the live camera publishes (sim_node,
    a D435i: 0 outside ``depth_range``, :func:`havln_robot.sim.render.depth_to_mm`), clipped to
    [0, 10] m and stored as uint8 ``depth / 10 * 255``; RGB as uint8.
    """

    def __init__(
        self,
        scene,
        crowd,
        res: int,
        views: int,
        use_rgb: bool,
        oversample: int = 4,
        camera_hfov_deg: float = 0.0,
        camera_vfov_deg: float = 0.0,
        depth_range: tuple[float, float] | None = None,
    ):
        from havln_robot.policy.small import camera_mask
        from havln_robot.sim.params import camera_depth_range
        from havln_robot.sim.render import Renderer

        #: (min, max) valid depth, m (config/sim.yaml sim_node ``depth_min_m`` / ``depth_max_m``)
        self.depth_range = depth_range if depth_range is not None else camera_depth_range()

        self.res, self.k = int(res), max(1, int(oversample))
        self.mask = camera_mask(self.res * self.k, camera_hfov_deg, camera_vfov_deg)  # None = full 90 deg view
        self.r = Renderer(scene, crowd, width=self.res * self.k, height=self.res * self.k, hfov_deg=MODEL_HFOV_DEG)
        self.headings = pano_headings(views)
        self.use_rgb = use_rgb

    def _pool(self, a: np.ndarray) -> np.ndarray:
        r, k = self.res, self.k
        return a.reshape(r, k, r, k, *a.shape[2:]).mean(axis=(1, 3))

    def panorama(self, pose: Sequence[float], pitch: float, t: float) -> np.ndarray:
        """(N, C, res, res) uint8 views for body ``pose`` (x, y, z, yaw)."""
        from havln_robot.sim.render import depth_to_mm

        x, y, z, yaw = pose
        out = []
        for h in self.headings:
            rgb, depth = self.r.render((x, y, z, yaw + float(h)), pitch, t)
            if self.mask is not None:  # what the robot's narrower camera sees of the 90 deg view
                rgb, depth = rgb * self.mask[:, :, None].astype(rgb.dtype), np.where(self.mask, depth, 0.0)
            m = depth_to_mm(depth, *self.depth_range).astype(np.float32) * np.float32(0.001)  # as sim_node publishes it
            d = np.clip(m, 0.0, DEPTH_MAX_M) * (255.0 / DEPTH_MAX_M)
            chans = [self._pool(d)[None]]
            if self.use_rgb:
                chans.append(np.moveaxis(self._pool(rgb.astype(np.float32)), 2, 0))
            out.append(np.concatenate(chans, axis=0).round().astype(np.uint8))
        return np.stack(out)

    def close(self) -> None:
        self.r.close()


def views_to_tensor(views: np.ndarray) -> torch.Tensor:
    """uint8 (..., C, r, r) stored views -> float32 model input (depth in [0, 1], RGB in [0, 1])."""
    return torch.as_tensor(views).float() / 255.0


def rollout(
    world,
    renderer: PanoramaRenderer,
    tokens: np.ndarray,
    cfg: SmallConfig,
    model: SmallNet | None,
    beta: float,
    rng: np.random.Generator,
    record: bool = True,
    expert: WaypointExpert | None = None,
    max_consecutive_blocked: int = MAX_CONSECUTIVE_BLOCKED,
) -> RolloutResult:
    """Run one episode by decisions; the expert's macro is executed with probability ``beta`` (1 = teacher forcing).

    A macro runs as agent_node runs the shipped policy's: an action that does not complete (motion_node's
    outcome is not ``ok``: refused or stopped by an obstacle or a person, a contact, a timeout) ends it
    and the next decision is taken on a new panorama (:meth:`SmallPolicy.on_action_result`); the SAME
    :class:`~havln_robot.records.BlockedCounter` ends the episode with a STOP after
    ``max_consecutive_blocked`` blocked actions in a row (reason ``blocked``), as on the robot.

    Args:
        world: ``havln_robot.sim.world.World`` already reset.
        renderer: panorama renderer for that world's scene and crowd.
        tokens: (200,) instruction ids.
        cfg: model configuration (views, resolution, max steps / decisions).
        model: the policy network (required when ``beta < 1``).
        beta: probability of executing the expert's decision instead of the model's.
        rng: random generator for the beta draws.
        record: keep the views and labels (training); False for validation.
        expert: the episode's :class:`WaypointExpert`.
        max_consecutive_blocked: agent_node's ``max_consecutive_blocked`` (:func:`run_episodes` reads
            config/sim.yaml's).

    Returns:
        The sample (if ``record``), the executed action literals and ``world.metrics()``.
    """
    headings = renderer.headings
    n = len(headings)
    if expert is None:
        raise ValueError("rollout needs expert=WaypointExpert(episode.reference_path)")
    views_l, prevs_l, ch_l, st_l, actions = [], [], [], [], []
    prev = prev_encoding(0.0, 0, cfg.max_steps, 0, 0)
    total_steps = 0
    blocked: list[int] = []
    rules = BlockedCounter(max_consecutive_blocked)
    gave_up = False
    h = instr = None
    if model is not None:
        with torch.inference_mode():
            instr = model.encode_instruction(torch.as_tensor(tokens)[None])
            h = model.init_state(1)
    for t in range(cfg.max_decisions):
        pano = renderer.panorama(world.camera_pose, getattr(world, "camera_pitch", 0.0), world.t)
        hum = world.human_positions()
        hum = np.asarray(hum, dtype=np.float64)[:, :2] if len(hum) else None
        e_choice, e_steps = expert.decide(world.pose, headings, cfg.max_steps, blocked, hum)
        choice, steps = e_choice, e_steps
        if model is not None:
            with torch.inference_mode():
                v = model.encode_views(views_to_tensor(pano)[None])
                logits, ctx, h = model.step(instr, v, torch.as_tensor(headings)[None], torch.as_tensor(prev)[None], h)
                m_choice = int(logits.argmax(1).item())
                m_steps = int(model.steps_logits(v[:, m_choice], ctx, h).argmax(1).item()) + 1 if m_choice < n else 0
            if rng.random() >= beta:
                choice, steps = m_choice, m_steps
        if record:
            views_l.append(pano)
            prevs_l.append(prev)
            ch_l.append(e_choice)
            st_l.append(e_steps)
        if choice == n:
            world.step(STOP)
            actions.append(STOP)
            break
        start_xy = world.pose[:2]
        hit = False
        for a in macro_actions(float(headings[choice]), steps):
            if len(actions) >= MAX_ACTIONS - 1:
                break
            r = world.step(a)
            actions.append(a)
            res = getattr(r, "result", None)
            outcome = str(res.outcome) if res is not None else Outcome.OK
            try:
                rules.update(outcome, "action", f"{a}: {res.detail if res is not None else ''}")
            except EpisodeBlocked:
                gave_up = True
            # the motion layer refused, stopped or timed out the action (a world without results:
            # a contact on a MOVE_FORWARD): the macro ends and the next decision is taken from where
            # the robot stands, as agent_node does (SmallPolicy.on_action_result)
            if (outcome != Outcome.OK) if res is not None else (r.contact is not None and a == MOVE_FORWARD):
                hit = a == MOVE_FORWARD
                break
        moved = math.dist(start_xy, world.pose[:2])
        blocked = [*blocked, choice] if hit and moved < 0.3 else []
        total_steps += steps
        prev = prev_encoding(float(headings[choice]), steps, cfg.max_steps, t + 1, total_steps)
        if gave_up or len(actions) >= MAX_ACTIONS - 1:
            break
    if not actions or actions[-1] != STOP:
        world.step(STOP)
        actions.append(STOP)
        if gave_up:
            world.reason = "blocked"
    sample = None
    if record and views_l:
        sample = EpisodeSample(
            tokens=np.asarray(tokens, dtype=np.int64),
            views=np.stack(views_l),
            prevs=np.stack(prevs_l).astype(np.float32),
            choices=np.asarray(ch_l, dtype=np.int64),
            steps=np.asarray(st_l, dtype=np.int64),
        )
    return RolloutResult(sample, actions, world.metrics())


def run_episodes(
    episodes: Iterable,
    vocab: Vocabulary,
    cfg: SmallConfig,
    model: SmallNet | None,
    beta: float,
    seed: int = 0,
    record: bool = True,
    deadline: float | None = None,
    connectivity_dir=None,
    progress: Callable[[int, RolloutResult], None] | None = None,
    populate: int = 3,
    scenes_dir=None,
) -> list[RolloutResult]:
    """Roll out every episode (grouped by scan so each scene is loaded once); stops early at ``deadline`` (time.time()).

    Macros run under agent_node's ``max_consecutive_blocked`` from config/sim.yaml (:func:`rollout`).
    The simulator places people with ``Crowd.from_episode(episode, scene, seed)``; R2R episodes (no
    annotated humans) get ``populate`` synthetic people near the path (simulator placement rules).
    ``scenes_dir`` (``--scenes``): render and collide on the user's scan meshes
    (:mod:`havln_robot.sim.mesh_scene`); None = procedural scenes.
    """
    from havln_robot.rosparams import node_params
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.mesh_scene import load_scene
    from havln_robot.sim.params import camera_depth_range
    from havln_robot.sim.world import World

    # agent_node's episode rule in the live sim graph (config/sim.yaml), as eval reads it
    blocked_limit = int(node_params("agent_node").get("max_consecutive_blocked", MAX_CONSECUTIVE_BLOCKED))
    # and what its camera publishes (sim_node: depth outside this range is 0, invalid)
    depth_range = camera_depth_range()
    eps = sorted(episodes, key=lambda e: e.scan)
    rng = np.random.default_rng(seed)
    out: list[RolloutResult] = []
    scene = None
    for i, ep in enumerate(eps):
        if deadline is not None and time.time() > deadline:
            break
        if scene is None or scene.name != ep.scan:
            scene = load_scene(ep.scan, connectivity_dir, scenes_dir)
        crowd = Crowd.from_episode(ep, scene, seed=seed + i, populate=0 if ep.humans else populate)
        world = World(scene, ep, crowd, seed=seed + i)
        world.reset()
        rend = PanoramaRenderer(
            scene,
            crowd,
            cfg.res,
            cfg.views,
            cfg.use_rgb,
            camera_hfov_deg=cfg.camera_hfov_deg,
            camera_vfov_deg=cfg.camera_vfov_deg,
            depth_range=depth_range,
        )
        try:
            res = rollout(
                world,
                rend,
                vocab.encode(ep.instruction, MAX_LENGTH),
                cfg,
                model,
                beta,
                rng,
                record,
                WaypointExpert(ep.reference_path),
                max_consecutive_blocked=blocked_limit,
            )
        finally:
            rend.close()
        out.append(res)
        if progress is not None:
            progress(i, res)
    return out
