"""The agent's robot interface in the batch simulator: :class:`SimIO`, an
:class:`~havln_robot.agent.core.AgentIO` over one episode's :class:`~havln_robot.sim.world.World`.

Batch episodes run agent_node's own :class:`~havln_robot.agent.core.EpisodeRunner` (panoramas,
retakes, blocked waits, the consecutive-blocked limit, outcomes told to the policy) through this
IO: actions are executed by :meth:`World.step` (motion_node's executor and
:class:`~havln_robot.motion.guard.MotionGuard` in :class:`~havln_robot.sim.closed_loop.ClosedLoop`),
a blocked wait passes sim time with the robot standing (:meth:`ClosedLoop.idle`: people walk on),
panorama turns and sweeps are executed but are not challenge actions, and views are rendered by
:class:`Observer` (256 x 256, 90 deg HFOV, the VLN-CE sensor) and preprocessed by the runner as
agent_node preprocesses camera frames. :func:`run_world_episode` is the one batch episode loop
(``eval``, ``replay --backend batch``, ``sweep``, ``bench sim`` and ``bench agreement`` use it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from havln_robot.actions import STOP
from havln_robot.agent.core import ActionOutcome, AgentConfig, EpisodeResult, EpisodeRunner, RawView
from havln_robot.records import Outcome

OBS_SIZE: int = 256
"""Rendered observation size (px, square) for checkpoint policies; 90 deg HFOV as the VLN-CE sensors."""
OBS_HFOV_DEG: float = 90.0


def fov_mask(width: int, height: int, render_hfov_deg: float, hfov_deg: float, vfov_deg: float) -> np.ndarray | None:
    """Pixels of a ``width`` x ``height`` pinhole image (square pixels, ``render_hfov_deg`` wide) inside a
    narrower ``hfov_deg`` x ``vfov_deg`` field of view centred on the optical axis.

    Returns:
        (height, width) bool array, True = kept; None when the whole image is kept.

    Raises:
        ValueError: a field of view outside (0, 180) deg.
    """
    for name, v in (("hfov_deg", hfov_deg), ("vfov_deg", vfov_deg)):
        if not (math.isfinite(v) and 0.0 < v < 180.0):
            raise ValueError(f"{name} {v}: give a field of view in (0, 180) deg")
    f = (width / 2.0) / math.tan(math.radians(render_hfov_deg) / 2.0)  # focal length, px
    u = np.abs(np.arange(width) + 0.5 - width / 2.0)
    v = np.abs(np.arange(height) + 0.5 - height / 2.0)
    keep_u = u <= f * math.tan(math.radians(hfov_deg) / 2.0)
    keep_v = v <= f * math.tan(math.radians(vfov_deg) / 2.0)
    if keep_u.all() and keep_v.all():
        return None
    return keep_v[:, None] & keep_u[None, :]


class Observer:
    """Renders a world's camera views (checkpoint policies): raw frames as the camera gives them
    (RGB uint8, depth uint16 mm with 0 outside the camera's range, as sim_node publishes them) and
    model-format :class:`havln_robot.policy.api.Observation` s.

    Args:
        world: the episode's :class:`~havln_robot.sim.world.World`.
        views: the policy's view count. heading_jitter_deg: std of the panorama view-heading error, deg.
        seed: seed of the jitter. hfov_deg, vfov_deg: camera field of view, deg (<= 90: the render is
            blanked outside it, RGB and depth 0).
    """

    def __init__(
        self,
        world,
        views: int,
        heading_jitter_deg: float = 0.0,
        seed: int = 0,
        hfov_deg: float = OBS_HFOV_DEG,
        vfov_deg: float = OBS_HFOV_DEG,
    ) -> None:
        from havln_robot.perception.preprocess import to_model_depth, to_model_rgb
        from havln_robot.sim.params import camera_depth_range
        from havln_robot.sim.render import Renderer, depth_to_mm

        self._keep = fov_mask(OBS_SIZE, OBS_SIZE, OBS_HFOV_DEG, hfov_deg, vfov_deg)
        # the live camera's depth (sim_node: 16UC1 mm, 0 outside depth_min_m..depth_max_m, as a
        # D435i) is what agent_node feeds the policy: batch converts the same way
        self._depth_range = camera_depth_range()
        self._rgb, self._depth, self._depth_to_mm = to_model_rgb, to_model_depth, depth_to_mm
        self.world = world
        self.views = max(1, int(views))
        self.renderer = Renderer(world.scene, world.crowd, width=OBS_SIZE, height=OBS_SIZE, hfov_deg=OBS_HFOV_DEG)
        self.headings = self._headings(self.views)
        # Sweep-mode panoramas: each view is a camera frame within the selection tolerance of its
        # heading, not exactly at it. With heading_jitter_deg > 0 every view of a panorama is
        # rendered at nominal + e, e ~ N(0, jitter) clipped to +-2 jitter, and the policy gets
        # those headings (agent_node gives it the measured ones). The front view (1 view) stays exact.
        self.jitter = math.radians(max(0.0, heading_jitter_deg))
        self._rng = np.random.default_rng(seed)

    def render_at(self, pose: tuple[float, float, float, float], t: float) -> tuple[np.ndarray, np.ndarray]:
        """One raw frame: the camera at ``pose`` (x, y, z, yaw; map, m / rad) and sim time ``t`` (s),
        pitched as the world's camera. Returns ((H, W, 3) uint8 RGB, (H, W) uint16 depth mm)."""
        rgb, depth = self.renderer.render(pose, self.world.camera_pitch, t)
        depth = self._depth_to_mm(depth, *self._depth_range)
        if self._keep is not None:
            rgb = np.where(self._keep[..., None], rgb, 0).astype(rgb.dtype)
            depth = np.where(self._keep.reshape(self._keep.shape + (1,) * (depth.ndim - 2)), depth, 0).astype(depth.dtype)
        return rgb, depth

    def frames(self, views: int | None = None, sweep: list | None = None, sign: float = 1.0) -> tuple[list, np.ndarray]:
        """Raw frames of ``views`` headings around the body (see :meth:`observe`).

        Returns:
            ([(rgb, depth)] per view, (N,) float32 headings relative to the body, rad, in [-pi, pi)).
        """
        n = self.views if views is None else max(1, int(views))
        headings = self.headings if n == self.views else self._headings(n)
        from_sweep = sweep is not None and len(sweep) == n
        if from_sweep:
            headings = self._headings(n) * np.float32(1.0 if sign >= 0 else -1.0)
            headings = ((headings + math.pi) % (2 * math.pi) - math.pi).astype(np.float32)
        elif self.jitter > 0 and n > 1:
            e = np.clip(self._rng.normal(0.0, self.jitter, n), -2 * self.jitter, 2 * self.jitter)
            headings = (((headings + e) + math.pi) % (2 * math.pi) - math.pi).astype(np.float32)
        x, y, z, yaw = self.world.camera_pose  # z on the drawn floor (World.camera_pose)
        poses = [((x, y, z, yaw + float(h)), float(self.world.t)) for h in headings]
        headings = headings.copy()
        for i, v in enumerate(sweep if from_sweep else []):
            if v is not None:  # the chosen frame: where and when the camera really looked
                poses[i] = (v[0], float(v[1]))
                headings[i] = np.float32(math.remainder(v[2], 2 * math.pi))
        return [self.render_at(pose, t) for pose, t in poses], headings

    def preprocess(self, rgb: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A raw frame in the model format (:mod:`havln_robot.perception.preprocess`, 90 deg, pad)."""
        return self._rgb(rgb, OBS_HFOV_DEG), self._depth(depth, OBS_HFOV_DEG)

    def observe(self, step: int, views: int | None = None, sweep: list | None = None, sign: float = 1.0):
        """Render ``views`` headings (default: the count given at construction) around the body.

        Args:
            step: the observation's step index.
            views: view count (default: the constructor's).
            sweep: per view, the frame a sweep chose (:attr:`ClosedLoop.sweep_views`: true camera
                pose, sim time, believed heading): the view is rendered at that pose and time and
                the policy is given that heading, as agent_node gives it the measured one; a view
                without a frame (None) is rendered from where the robot stands at its nominal
                heading. None = every view from here.
            sign: +1 for a CCW (left) sweep, -1 for a right one: view i's nominal heading is
                ``sign * i * 360 / n`` (agent_node's order).
        """
        from havln_robot.policy.api import Observation

        frames, headings = self.frames(views, sweep, sign)
        pre = [self.preprocess(rgb, depth) for rgb, depth in frames]
        return Observation(np.stack([p[0] for p in pre]), np.stack([p[1] for p in pre]).astype(np.float32), headings, step)

    @staticmethod
    def _headings(n: int) -> np.ndarray:
        h = np.array([2.0 * math.pi * k / n for k in range(n)], dtype=np.float32)
        return ((h + math.pi) % (2 * math.pi) - math.pi).astype(np.float32)

    def close(self) -> None:
        self.renderer.close()


class _Frame(RawView):
    """A camera frame rendered when first looked at (a sweep offers ~30 frames/s; the runner keeps one per view)."""

    def __init__(self, observer: Observer, pose: tuple[float, float, float, float], t: float) -> None:
        self._observer, self._pose, self._t = observer, pose, float(t)
        self._pair: tuple[np.ndarray, np.ndarray] | None = None
        self.intrinsics = None
        self.stamp = float(t)

    def _get(self) -> tuple[np.ndarray, np.ndarray]:
        if self._pair is None:
            self._pair = self._observer.render_at(self._pose, self._t)
        return self._pair

    @property
    def rgb(self) -> np.ndarray:  # type: ignore[override]
        return self._get()[0]

    @property
    def depth(self) -> np.ndarray:  # type: ignore[override]
        return self._get()[1]


class _Offer:
    """What :meth:`ClosedLoop.sweep` feeds (the selector's track and offers), offering lazily rendered frames."""

    def __init__(self, selector: Any, observer: Observer) -> None:
        self.track = selector.track
        self._sel, self._obs = selector, observer

    def offer(self, stamp: float, data: tuple[tuple[float, float, float, float], float]) -> None:
        self._sel.offer(stamp, _Frame(self._obs, data[0], data[1]))


#: A blank frame for a policy that does not look (the expert, the builtins): nothing is rendered.
_BLANK = RawView(np.zeros((2, 2, 3), np.uint8), np.zeros((2, 2), np.uint16))


class SimIO:
    """:class:`~havln_robot.agent.core.AgentIO` over a batch :class:`~havln_robot.sim.world.World`.

    Args:
        world: the reset world of the episode.
        observer: renders the views (None: the policy does not look; a blank frame is given).
        shield: people checks before each policy action (``eval --people``: an object with
            ``refusal(action) -> str | None``), or None. A refused action is not executed; the
            runner hears ``collision`` (and waits, as after motion_node's refusal).

    Attributes:
        clock: sim time, s (the runner's clock). ``wait``: its ``sleep``.
    """

    def __init__(self, world, observer: Observer | None = None, shield: Any = None) -> None:
        self.world, self.observer, self.shield = world, observer, shield

    def clock(self) -> float:
        """Sim time, s."""
        return float(self.world.t)

    def wait(self, seconds: float) -> None:
        """A blocked wait: ``seconds`` of sim time with the robot standing (people walk on)."""
        if not self.world.done:
            self.world.loop.idle(seconds)

    @staticmethod
    def _outcome(action: str, st: Any) -> ActionOutcome:
        res = getattr(st, "result", None)
        if res is None:  # the world's episode is over (its budget): nothing was executed
            return ActionOutcome(action, Outcome.ABORTED.value, {"detail": f"episode over ({st.reason})"})
        return ActionOutcome(action, str(res.outcome), res.to_values())

    def send_action(self, action: str) -> ActionOutcome:
        """Execute a policy action (a challenge action) through :meth:`World.step`."""
        if self.shield is not None and action != STOP and not self.world.done:
            why = self.shield.refusal(action)
            if why is not None:
                return ActionOutcome(action, Outcome.COLLISION.value, {"detail": f"blocked before start: {why}"})
        return self._outcome(action, self.world.step(action))

    def send_turn(self, action: str) -> ActionOutcome:
        """Execute a panorama turn (not a challenge action; :meth:`ClosedLoop.panorama_turn`)."""
        return self._outcome(action, self.world.loop.panorama_turn(action))

    def grab(self) -> RawView:
        """The front camera frame here and now (a blank one for a policy that does not look)."""
        if self.observer is None:
            return _BLANK
        rgb, depth = self.observer.render_at(self.world.camera_pose, float(self.world.t))
        return RawView(rgb, depth, None, float(self.world.t))

    def panorama(self, views: int, direction: str) -> tuple[list[RawView], np.ndarray]:
        """Every view at once from here, no time passing (``panorama_mode`` ``instant``): view i at
        ``sign * i * 360 / views`` (+ the observer's heading jitter); returns the frames and headings."""
        if self.observer is None:
            return [_BLANK] * int(views), Observer._headings(int(views))
        frames, headings = self.observer.frames(views)
        t = float(self.world.t)
        return [RawView(rgb, depth, None, t) for rgb, depth in frames], headings

    def sweep(
        self, action: str, config: Any, drift_rate: float, on_views: Callable[[Any], None] | None
    ) -> tuple[ActionOutcome, Any, float]:
        """A sweep panorama (``panorama_mode`` ``sweep``) as agent_node's: :meth:`ClosedLoop.sweep`
        feeds the IMU yaw the robot believes and every camera frame (rendered only if chosen) into a
        :class:`~havln_robot.perception.sweep.SweepSelector`; the drift is measured as agent_node measures it."""
        from havln_robot.perception.sweep import SweepSelector, YawTrack

        w = self.world
        t0 = float(w.t)
        track = YawTrack()
        track.add(t0, float(w.loop.gyro.yaw))
        sel = SweepSelector(config, track, t0, drift_rate)
        st = w.loop.sweep(action, frames=_Offer(sel, self.observer) if self.observer is not None else None)
        out = self._outcome(action, st)
        if on_views is not None and sel.views_passed():
            on_views(sel)
        yaw = float(out.values.get("yaw_imu_deg", "nan") or "nan")
        drift = track.drift_against(t0, float(w.t), math.radians(yaw)) if math.isfinite(yaw) else 0.0
        return out, sel, drift

    def publish_status(self, values: Mapping[str, Any]) -> None:
        """No status topic in batch."""


class _NoOutcomes:
    """A policy seen without its ``on_action_result`` hook (:func:`without_outcomes`)."""

    def __init__(self, policy: Any) -> None:
        self._p = policy

    def __getattr__(self, name: str) -> Any:
        if name == "on_action_result":
            raise AttributeError(name)
        return getattr(self._p, name)


_AGENT_PARAMS: dict[str, dict[str, Any]] = {}


def agent_node_params(path: str | None = None) -> dict[str, Any]:
    """agent_node's parameters in a profile (``path``, default config/sim.yaml), merged over its
    sections; read once per file (a fresh copy each call).

    Raises:
        havln_robot.params.ConfigError: the file cannot be read (one line naming it).
    """
    key = "" if path is None else str(path)
    if key not in _AGENT_PARAMS:
        from havln_robot.rosparams import node_params

        _AGENT_PARAMS[key] = node_params("agent_node", path)
    return dict(_AGENT_PARAMS[key])


def without_outcomes(policy: Any) -> Any:
    """``policy`` without its ``on_action_result`` hook: a raw action stepper for tests (no outcome told)."""
    return _NoOutcomes(policy)


def batch_agent_config(params: Mapping[str, Any], sweeps: bool = False, agent_rules: bool = True) -> AgentConfig:
    """agent_node's episode settings for batch: its parameters (``params``: the live sim graph's
    agent_node section) with the batch world's camera (the 256 x 256, 90 deg render) and panorama
    mode: ``sweep`` as agent_node (``sweeps``), else ``instant``. ``agent_rules=False``: no blocked
    wait and no consecutive-blocked limit (a raw action stepper for tests)."""
    cfg = AgentConfig.from_params(params)
    cfg.camera_hfov_deg, cfg.fov_mode = OBS_HFOV_DEG, "pad"
    cfg.panorama_mode = str(params.get("panorama_mode", "sweep")) if sweeps else "instant"
    if not agent_rules:
        cfg.blocked_wait_s, cfg.max_consecutive_blocked = 0.0, 1 << 30
    return cfg


def run_world_episode(world, policy: Any, config: AgentConfig, observer: Observer | None = None, shield: Any = None) -> EpisodeResult:
    """Run one episode of ``policy`` in ``world`` through agent_node's :class:`EpisodeRunner` (synchronous,
    sim clock, blocked waits in sim time) and close the world's episode as agent_node's ends it.

    An episode the runner ends ``blocked`` gets the STOP its challenge file gets
    (:func:`havln_robot.actions.finalize_sequence`), and ``world.reason`` = ``blocked``.

    Returns:
        The runner's :class:`EpisodeResult` (``world.actions`` holds the executed challenge actions).

    Raises:
        Whatever the policy or the world raises (batch episodes are not cancelled).
    """
    io = SimIO(world, observer, shield)
    runner = EpisodeRunner(policy, io, config, clock=io.clock, sleep=io.wait, synchronous=True)
    result = runner.run(world.episode.instruction)
    if not world.done:
        world.step(STOP)
        if result.reason == "blocked":
            world.reason = "blocked"
    return result


class ActionFilePolicy:
    """A policy that plays a recorded action sequence (``replay --backend batch``), then STOPs.

    It does not look (the runner gives it blank frames) and takes the front view, so a replay
    passes sim time only as the recorded episode's actions and the runner's rules (blocked
    waits) do: replaying an ``eval`` run's actions gives its results back.
    """

    name = "replay"
    views = 1
    observes = False

    def __init__(self, actions: list[str]) -> None:
        self.actions = list(actions)
        self._next = 0

    def reset(self, instruction: str) -> None:
        self._next = 0

    def act(self, obs: Any) -> str:
        if self._next >= len(self.actions):
            return STOP
        self._next += 1
        return self.actions[self._next - 1]


def replay_actions(world, actions: list[str], params: Mapping[str, Any] | None = None) -> EpisodeResult:
    """Replay ``actions`` in ``world`` through the episode runner (:class:`ActionFilePolicy`,
    :func:`run_world_episode`) with the live sim graph's agent_node settings (``params``, default
    config/sim.yaml's agent_node section): the batch backend of ``havln-robot replay``."""
    if params is None:
        params = agent_node_params()
    return run_world_episode(world, ActionFilePolicy(actions), batch_agent_config(params))
