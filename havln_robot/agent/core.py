"""The agent's episode loop (pure Python; agent_node is the ROS shell around it).

One episode: ``policy.reset(instruction)``, then until STOP or the action budget:
observe (a panorama by rotation when ``policy.views > 1``, else the front view) → preprocess to the
HA-VLN-CE model format → ``policy.act`` → send the action and wait for its result.

The runner talks to the robot only through an :class:`AgentIO` (send an action and wait for its
result; grab a synchronised RGB-D pair taken after the robot settled; publish a status record), so
it runs unchanged over ROS (agent_node), in tests with a scripted robot, or in a simulator loop.
It runs on its own thread; ``policy.reset`` and ``policy.act`` run on a worker thread (a one-thread
pool), so where it is safe inference overlaps motion: for a panoramic policy, inference on the
finished panorama runs while the robot makes the return turns to the start heading (the observation
is fixed by then; headings are given relative to the start heading, which the return turns restore
to within the tolerance). A front-view step cannot overlap: its observation depends on the motion
just executed. ``policy.views`` is read before every step, so a policy may ask for a panorama at
decision points and the front view in between (e.g. while it replays a multi-action macro).

Panorama modes (``panorama_mode``): ``sweep`` (default) sends one ``SWEEP_LEFT``/``SWEEP_RIGHT``
(a 360° turn at a constant yaw rate) while the IO feeds the IMU yaw and the camera frames into a
:class:`havln_robot.perception.sweep.SweepSelector`, which picks one frame per view heading by the
IMU yaw at the frame's timestamp; views without a frame within ``view_tolerance_deg`` are retaken
standing still with discrete TURNs (a sweep stopped early: the whole panorama is retaken in discrete
mode from where the robot stands). Inference starts on the selected views as soon as the frames
have passed the last view heading, while the robot finishes the sweep (when the gyro drift is
known from an earlier sweep; else at the end). ``discrete``: 24 TURNs of 15°, a view every two.
An IO without ``sweep`` (test doubles, replays) always gets the discrete mode. ``instant`` (a
simulator's idealised panorama camera: every view at once from where the robot stands, no time
passes; the batch default, :mod:`havln_robot.agent.sim_io`) needs an IO with ``panorama``.

Batch (the simulator, :class:`havln_robot.agent.sim_io.SimIO`): ``synchronous=True`` runs the
policy on the calling thread (no inference thread, no timeout; a failure raises instead of ending
the episode as ``aborted``), and ``sleep`` / ``clock`` are the simulator's, so a blocked wait
passes sim time (people walk on) without real sleeping. The rules are the same code either way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from havln_robot import jsonio
from havln_robot.actions import ACTIONS, MAX_ACTIONS, STOP, SWEEP_LEFT, SWEEP_RIGHT, TURN_ANGLE_DEG, TURN_LEFT, TURN_RIGHT
from havln_robot.perception.panorama import PanoramaCapture, PanoramaView, TurnResult
from havln_robot.perception.preprocess import DEPTH_SIZE, RGB_SIZE, Intrinsics, to_model_depth, to_model_rgb
from havln_robot.perception.sweep import SweepConfig, SweepPanorama, SweepSelector
from havln_robot.policy.api import Observation, Policy
from havln_robot.policy.tokenizer import check_instruction
from havln_robot.records import MAX_CONSECUTIVE_BLOCKED, BlockedCounter, EpisodeBlocked, Outcome, is_blocked_outcome

#: Wall time of one 15° TURN with its settling, s (docs/motion.md: 0.72 s mean in the motion bench);
#: decides between retaking missing sweep views with turns or with a second sweep.
RETAKE_TURN_S = 0.75


class AgentAbort(RuntimeError):
    """The episode cannot go on: cancelled (new instruction / shutdown) or a robot-side failure.

    Attributes:
        reason: ``aborted`` (cancelled) or ``error`` (no frames, no action result, policy failure).
    """

    def __init__(self, message: str, reason: str = "error") -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class RawView:
    """One synchronised RGB-D capture from the camera.

    Attributes:
        rgb: (H, W, 3) uint8 RGB.
        depth: (H, W) depth aligned to the colour image: uint16 mm or float32 m.
        intrinsics: colour intrinsics (camera_info), or None when unknown (then ``hfov_deg`` is used).
        stamp: capture time, s (header stamp).
    """

    rgb: np.ndarray
    depth: np.ndarray
    intrinsics: Intrinsics | None = None
    stamp: float = 0.0


@dataclass
class ActionOutcome:
    """Result of one executed action: motion_node's outcome and its ACTION_RESULT_KEYS record."""

    action: str
    outcome: str
    values: dict[str, str] = field(default_factory=dict)


class AgentIO(Protocol):
    """What the runner needs from the robot (implemented by agent_node over ROS, or by test doubles)."""

    def send_action(self, action: str) -> ActionOutcome:
        """Send ``action`` and block until its result. Raises AgentAbort when cancelled or timed out."""
        ...

    def grab(self) -> RawView:
        """Block until an RGB-D pair taken after the last action settled. Raises AgentAbort on cancel/timeout."""
        ...

    def publish_status(self, values: Mapping[str, Any]) -> None:
        """Publish one AGENT_STATUS_KEYS record (step, action, state, policy_ms, panorama_s, waiting_s)."""
        ...

    # Optional (an IO without it gets send_action for panorama turns too):
    # def send_turn(self, action: str) -> ActionOutcome:
    #     """A panorama turn (TURN_LEFT / TURN_RIGHT), not a policy action: the simulator keeps it out
    #     of the episode's challenge actions and budget."""
    #
    # Optional (panorama_mode "instant", simulators only):
    # def panorama(self, views: int, direction: str) -> tuple[list[RawView], np.ndarray]:
    #     """Every view of an N-view panorama at once from where the robot stands (no time passes):
    #     the views and their headings relative to the robot's heading, rad, float32 (N,) in [-pi, pi)."""

    # Optional (sweep mode; an IO without it gets discrete panoramas):
    # def sweep(self, action: str, config: SweepConfig, drift_rate: float,
    #           on_views: Callable[[SweepSelector], None]) -> tuple[ActionOutcome, SweepSelector, float]:
    #     """Send a SWEEP action; while it runs feed the IMU yaw and every synchronised RGB-D pair
    #     (data = RawView) into a new selector (``t_start`` = the IMU stamp when it was sent); call
    #     ``on_views(selector)`` once when ``selector.views_passed()``. Returns the outcome, the
    #     selector and the gyro drift measured over the sweep (rad/s, YawTrack.drift_against);
    #     None (nothing sent) when it cannot sweep now (no IMU orientation): a discrete panorama."""


@dataclass
class AgentConfig:
    """Episode settings (the agent_node parameters of the same names; see havln_robot.agent.params)."""

    max_actions: int = MAX_ACTIONS
    panorama_direction: str = "left"
    heading_tolerance_deg: float = TURN_ANGLE_DEG / 2.0
    max_correction_turns: int = 4
    heading_source: str = "imu"
    camera_hfov_deg: float = 0.0
    fov_mode: str = "pad"
    overlap: bool = True
    panorama_mode: str = "sweep"
    view_tolerance_deg: float = 0.85
    camera_time_offset_s: float = 0.0
    blocked_wait_s: float = 1.0
    max_consecutive_blocked: int = MAX_CONSECUTIVE_BLOCKED
    inference_timeout_s: float = 10.0
    max_unknown_word_rate: float = 0.5

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> AgentConfig:
        """Pick the fields of this dataclass out of a node parameter dict."""
        return cls(**{k: params[k] for k in cls.__dataclass_fields__ if k in params})


@dataclass
class EpisodeResult:
    """Summary of one episode (published as JSON on havln/episode_done).

    Attributes:
        reason: ``stop`` (policy said STOP), ``budget`` (max_actions reached), ``blocked``
            (``max_consecutive_blocked`` policy actions, or panorama turns, in a row refused or
            stopped by an obstacle or a person; the robot stands still) or ``aborted`` (cancelled by a new instruction or
            shutdown, or a robot/camera/policy failure).
        error: True when ``aborted`` was caused by a failure (``detail`` says which), not a cancel.
        steps: policy actions executed (panorama turns excluded).
        actions: the policy actions, in order (panorama turns excluded) -- the challenge sequence.
        detail: one-line explanation for aborted/error.
        duration_s: wall time of the episode, s.
        policy_ms: per-step inference latency, ms.
        panoramas: per-panorama summaries (see PanoramaCapture.summary).
        panorama_turns: TURN actions sent for panoramas.
        interrupted: the action that was executing when the episode was aborted ("" if none); it is
            not in ``actions`` (motion_node received STOP while executing it).
        link_gaps: waits on a policy served over the network (:class:`havln_robot.policy.remote.RemotePolicy`)
            that needed more than one try, the robot standing still meanwhile: ``call``, ``seq``, ``wait_s``,
            ``tries``, ``answered``, ``error``.
        panorama_s: wall time in panoramas, s (until the views are in and the robot is back at the
            start heading). policy_wait_s: wall time waiting on the policy after the panorama
            (inference that did not overlap motion), s.
    """

    reason: str
    steps: int
    actions: list[str]
    error: bool = False
    interrupted: str = ""
    instruction: str = ""
    policy: str = ""
    detail: str = ""
    duration_s: float = 0.0
    policy_ms: list[float] = field(default_factory=list)
    panoramas: list[dict[str, Any]] = field(default_factory=list)
    panorama_turns: int = 0
    blocked_motions: int = 0
    panorama_s: float = 0.0
    policy_wait_s: float = 0.0
    link_gaps: list[dict[str, Any]] = field(default_factory=list)
    unknown_word_rate: float | None = None
    unknown_words: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        """The havln/episode_done payload: {"reason", "steps", ...} (contract keys first)."""
        pano_s = [p["duration_s"] for p in self.panoramas]
        body = {
            "reason": self.reason,
            "steps": self.steps,
            "actions": self.actions,
            "instruction": self.instruction,
            "policy": self.policy,
            "error": self.error,
            "interrupted": self.interrupted,
            "detail": self.detail,
            "duration_s": round(self.duration_s, 3),
            "policy_ms_mean": round(float(np.mean(self.policy_ms)), 2) if self.policy_ms else None,
            "panoramas": len(self.panoramas),
            "panorama_s_mean": round(float(np.mean(pano_s)), 3) if pano_s else None,
            "panorama_turns": self.panorama_turns,
            "blocked_motions": self.blocked_motions,
            "panorama_final_error_deg": [p["final_error_deg"] for p in self.panoramas],
            "panorama_mode": sorted({p.get("mode", "discrete") for p in self.panoramas}),
            "panorama_s": round(self.panorama_s, 3),
            "policy_wait_s": round(self.policy_wait_s, 3),
            "panorama_share": round(self.panorama_s / self.duration_s, 3) if self.duration_s > 0 else None,
            "policy_wait_share": round(self.policy_wait_s / self.duration_s, 3) if self.duration_s > 0 else None,
            "link_gaps": self.link_gaps,
            "link_gap_s": round(float(sum(g["wait_s"] for g in self.link_gaps)), 3),
            "unknown_word_rate": None if self.unknown_word_rate is None else round(self.unknown_word_rate, 4),
            "unknown_words": self.unknown_words,
        }
        return jsonio.dumps(body, nonfinite="null")


class EpisodeRunner:
    """Runs episodes of one policy over an :class:`AgentIO`.

    Args:
        policy: the policy (its ``views`` decides panorama vs front view).
        io: the robot interface.
        config: episode settings.
        clock: monotonic time source, s (a simulator: its sim time).
        cancelled: callable returning True when the current episode must stop (checked between steps;
            the IO checks it while blocking).
        sleep: how a blocked wait passes ``seconds`` (a simulator: sim time with the robot standing);
            None = real time, polling ``cancelled`` every 50 ms.
        synchronous: run ``policy.reset`` / ``policy.act`` on the calling thread (batch: no inference
            thread, no ``inference_timeout_s``) and let failures raise (see the module docstring).
    """

    def __init__(
        self,
        policy: Policy,
        io: AgentIO,
        config: AgentConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        cancelled: Callable[[], bool] = lambda: False,
        sleep: Callable[[float], None] | None = None,
        synchronous: bool = False,
    ) -> None:
        self.policy = policy
        self.io = io
        self.config = config or AgentConfig()
        self.clock = clock
        self.cancelled = cancelled
        self.sleep = sleep
        self.synchronous = bool(synchronous)
        self._worker: threading.Thread | None = None  # the inference thread of the last step
        self._in_flight = ""
        self._blocked = BlockedCounter(self.config.max_consecutive_blocked)
        self._drift: float | None = None  # gyro drift measured by the last sweep, rad/s (None: unknown)
        self._blank: tuple[np.ndarray, np.ndarray] | None = None  # the model views of a policy that does not look

    def close(self, timeout_s: float = 1.0) -> None:
        """Wait at most ``timeout_s`` (s) for a running inference; a hung one is left behind (its
        thread is a daemon, so it never holds up the process exit)."""
        w = self._worker
        if w is not None and w.is_alive():
            w.join(timeout_s)

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Run ``fn(*args)`` on a fresh daemon thread named ``agent-inference``; returns its future.

        A torch forward cannot be interrupted: a call that outlives ``inference_timeout_s`` is
        abandoned (the thread is left to finish or to hang; it is a daemon, so shutdown never waits).

        Raises:
            AgentAbort: the previous inference still runs (it hung): the policy is not called concurrently.
        """
        fut: Future = Future()
        if self.synchronous:  # batch: on this thread; a failure is handed on by fut.result()
            fut.set_running_or_notify_cancel()
            try:
                fut.set_result(fn(*args))
            except Exception as exc:  # noqa: BLE001 - re-raised by _result
                fut.set_exception(exc)
            return fut
        w = self._worker
        if w is not None and w.is_alive():
            raise AgentAbort(
                f"policy {getattr(self.policy, 'name', '')} is still busy with an abandoned inference (it hung); restart the agent"
            )

        def work() -> None:
            if not fut.set_running_or_notify_cancel():
                return
            try:
                fut.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the episode thread
                fut.set_exception(exc)

        self._worker = threading.Thread(target=work, name="agent-inference", daemon=True)
        self._worker.start()
        return fut

    def _result(self, fut: Future, what: str) -> Any:
        """``fut.result()`` within ``inference_timeout_s``, checking for cancellation every 50 ms.

        Raises:
            AgentAbort: timeout (reason error, the worker is abandoned) or cancel.
        """
        if self.synchronous:
            return fut.result()
        end = self.clock() + self.config.inference_timeout_s
        while True:
            try:
                return fut.result(timeout=0.05)
            except FutureTimeout:
                pass
            self._check_cancel()
            if self.clock() >= end:
                raise AgentAbort(
                    f"policy {what} took longer than inference_timeout_s={self.config.inference_timeout_s:g} s; "
                    "inference abandoned, episode aborted"
                )

    # --- observation ---------------------------------------------------------------------------
    def _preprocess(self, view: RawView) -> tuple[np.ndarray, np.ndarray]:
        hfov = self.config.camera_hfov_deg or None
        if view.intrinsics is None and hfov is None:
            raise AgentAbort(
                "no camera intrinsics: no camera_info received and camera_hfov_deg is 0; publish camera_info or set camera_hfov_deg"
            )
        if not getattr(self.policy, "observes", True):  # it does not look (builtins, a replay): black views, no resampling
            if self._blank is None:
                self._blank = (np.zeros((RGB_SIZE, RGB_SIZE, 3), np.uint8), np.zeros((DEPTH_SIZE, DEPTH_SIZE, 1), np.float32))
            return self._blank
        rgb = to_model_rgb(view.rgb, hfov, intrinsics=view.intrinsics, mode=self.config.fov_mode)
        depth = to_model_depth(view.depth, hfov, intrinsics=view.intrinsics, mode=self.config.fov_mode)
        return rgb, depth

    def _check_cancel(self) -> None:
        if self.cancelled():
            raise AgentAbort("cancelled", reason="aborted")

    def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` (of ``self.clock``), checking for cancellation every 50 ms; an IO with a
        ``pause(seconds)`` that returns True waited itself (lockstep: sim time passes, people walk on);
        with ``sleep`` set (batch), by it."""
        pause = getattr(self.io, "pause", None)
        if callable(pause) and pause(seconds):
            return
        if self.sleep is not None:
            self._check_cancel()
            self.sleep(seconds)
            return
        end = self.clock() + seconds
        while True:
            self._check_cancel()
            left = end - self.clock()
            if left <= 0:
                return
            time.sleep(min(0.05, left))

    def _after_motion(self, out: ActionOutcome, result: EpisodeResult, status: Callable[..., None], kind: str, pause: bool = True) -> None:
        """Human-aware handling of a motion that an obstacle or a person refused or stopped.

        ``collision`` outcomes (refused before the start because something is in the way, or
        stopped short of it or by contact) make the agent stand still for ``blocked_wait_s`` so that
        a person can pass, before it observes again. Two counts end the episode at
        ``max_consecutive_blocked``: policy actions blocked in a row (``kind="action"``; only a
        policy action that completes resets it -- the panorama turns between two decisions do not,
        so a policy facing a wall is stopped), and panorama turns blocked in a row (``kind="turn"``;
        reset by a turn that completes, so a panorama cannot retry a refused turn forever).

        Args:
            out: motion_node's result of the motion.
            result: the episode result (``blocked_motions`` is counted here).
            status: publishes an agent status record (state name, fields).
            kind: ``action`` (a policy action) or ``turn`` (a panorama turn).
            pause: False skips the pause (the episode is about to end anyway).

        Raises:
            EpisodeBlocked: a count reached ``max_consecutive_blocked``.
        """
        if not is_blocked_outcome(out.outcome):
            self._blocked.update(out.outcome, kind)
            return
        result.blocked_motions += 1
        self._blocked.update(out.outcome, kind, f"{out.action}: {out.values.get('detail', out.outcome)}")
        if pause and self.config.blocked_wait_s > 0:
            status("waiting")
            self._pause(self.config.blocked_wait_s)
            status("panorama" if kind == "turn" else "observing")

    @staticmethod
    def _check_aborted(out: ActionOutcome) -> None:
        """An action motion_node aborted (sensor loss or freeze, e-stop, shutdown) ends the episode.

        Raises:
            AgentAbort: reason error, with motion_node's detail (e.g. "odom silent for 0.31 s").
        """
        if out.outcome == Outcome.ABORTED:
            raise AgentAbort(f"motion_node aborted {out.action}: {out.values.get('detail') or 'no detail'}")

    def _front_view(self, step: int) -> Observation:
        rgb, depth = self._preprocess(self.io.grab())
        return Observation(rgb=rgb[None], depth=depth[None], headings=np.zeros(1, np.float32), step=step)

    def _panorama(self, step: int, result: EpisodeResult, status: Callable[[str], None]) -> tuple[Future, PanoramaCapture]:
        """Capture a panorama; returns the inference future (started as soon as the views are in) and the capture."""
        cap = PanoramaCapture(
            views=self.policy.views,
            direction=self.config.panorama_direction,
            tolerance_deg=self.config.heading_tolerance_deg,
            max_corrections=self.config.max_correction_turns,
            clock=self.clock,
        )
        fut: Future | None = None
        while True:
            self._check_cancel()
            s = cap.next_step()
            if s.kind == "done":
                break
            if s.kind == "capture":
                cap.add_view(self._preprocess(self.io.grab()))
                if cap.views_complete and self.config.overlap:
                    # Headings relative to the start heading, which the return turns restore.
                    fut = self._submit(self._act, self._pano_obs(cap, step, reference_deg=0.0))
                    status("inferring")
            else:
                self._in_flight = s.action
                out = self._turn_io(s.action)
                self._in_flight = ""
                if out.outcome == Outcome.REJECTED:
                    raise AgentAbort(f"motion_node rejected panorama turn {s.action} repeatedly; is another node sending actions?")
                self._check_aborted(out)  # a panorama that never turned must not reach the policy
                cap.add_turn(TurnResult.from_values(s.action, out.values, out.outcome, prefer=self.config.heading_source))
                result.panorama_turns += 1
                self._after_motion(out, result, status, "turn")
        if fut is None:
            fut = self._submit(self._act, self._pano_obs(cap, step))
        return fut, cap

    def _turn_io(self, action: str) -> ActionOutcome:
        """Send a panorama turn: ``io.send_turn`` where the IO tells turns from policy actions, else ``send_action``."""
        send = getattr(self.io, "send_turn", None)
        return send(action) if callable(send) else self.io.send_action(action)

    def _send_turn(self, action: str, result: EpisodeResult, status: Callable[..., None]) -> TurnResult:
        self._in_flight = action
        out = self._turn_io(action)
        self._in_flight = ""
        if out.outcome == Outcome.REJECTED:
            raise AgentAbort(f"motion_node rejected panorama turn {action} repeatedly; is another node sending actions?")
        result.panorama_turns += 1
        self._after_motion(out, result, status, "turn")
        return TurnResult.from_values(action, out.values, out.outcome, prefer=self.config.heading_source)

    def _sweep_panorama(
        self, step: int, result: EpisodeResult, status: Callable[..., None]
    ) -> tuple[Future, PanoramaCapture | SweepPanorama]:
        """Capture a panorama in one continuous sweep (see the module docstring); returns the
        inference future and the panorama. Falls back to :meth:`_panorama` after a stopped sweep."""
        cfg = self.config
        views = int(self.policy.views)
        scfg = SweepConfig(views, cfg.panorama_direction, cfg.view_tolerance_deg, cfg.camera_time_offset_s)
        pano = SweepPanorama(views, cfg.panorama_direction, t_start=self.clock())
        early: dict[str, Any] = {}
        prior = self._drift

        def on_views(sel: SweepSelector) -> None:  # IO thread: start inference while the robot finishes the sweep
            if not cfg.overlap or prior is None or early:
                return
            chosen = sel.select(prior)
            if all(c is not None for c in chosen):
                try:
                    obs_views = [self._preprocess(c.data) for c in chosen]
                except Exception:  # noqa: BLE001 - on the IO's thread: leave it to the end of the sweep, which raises it
                    return
                headings = np.radians([c.heading_deg for c in chosen]).astype(np.float64)
                try:
                    early["fut"] = self._submit(self._act, self._obs_from(obs_views, headings, step))
                except AgentAbort:  # an earlier inference still hangs: the end of the sweep reports it
                    return
                early["chosen"] = chosen

        action = SWEEP_LEFT if cfg.panorama_direction == "left" else SWEEP_RIGHT
        self._in_flight = action
        got = self.io.sweep(action, scfg, prior if prior is not None else 0.0, on_views)
        self._in_flight = ""
        if got is None:  # the IO cannot sweep now (no IMU orientation): discrete panorama
            return self._panorama(step, result, status)
        out, sel, drift = got
        pano.sweep_outcome = out.outcome
        if out.outcome == Outcome.REJECTED:
            raise AgentAbort(f"motion_node rejected {action} repeatedly; is another node sending actions?")
        if out.outcome != Outcome.OK:  # stopped (a person, an obstacle, a timeout): retake all, discrete
            self._after_motion(out, result, status, "turn")
            return self._panorama(step, result, status)
        self._drift = drift
        tr = TurnResult.from_values(TURN_LEFT if action == SWEEP_LEFT else TURN_RIGHT, out.values, out.outcome, self.config.heading_source)
        pano.heading_deg = tr.yaw_deg
        pano.closure_deg = self._closure(out.values)
        pano.frames_offered, pano.frames_rejected, pano.drift_deg_s = sel.offered, sel.rejected, float(np.degrees(drift))
        chosen = early.get("chosen") or sel.select(drift)
        for i, c in enumerate(chosen):
            if c is None:
                continue
            h = sel.heading_deg(c.stamp, drift)  # what the frame really was, drift measured
            pano.captured.append(PanoramaView(i, c.target_deg, h if h is not None else c.heading_deg, "imu", c.data, c.stamp))
        missing = [i for i, c in enumerate(chosen) if c is None]
        try:  # what a second sweep would cost: this one's motion time (else its wall time)
            sweep_s = float(out.values.get("duration_s", "") or (self.clock() - pano.t_start))
        except (TypeError, ValueError):
            sweep_s = self.clock() - pano.t_start
        if missing and sum(2 * self._retake_turns(i, scfg) for i in missing) * RETAKE_TURN_S > sweep_s:
            # cheaper to sweep once more than to turn to the missing views and back (views near 180 deg)
            missing = self._sweep_again(action, scfg, (sel, drift), pano, missing)
        for i in missing:
            view, net = self._retake(i, scfg, result, status)
            pano.captured.append(view)
            pano.retaken += 1
            pano.heading_deg += net
            if pano.closure_deg is not None:
                pano.closure_deg += net
        pano.captured.sort(key=lambda v: v.index)
        pano.turns = result.panorama_turns
        pano.t_end = self.clock()
        if "fut" in early and not missing:
            pano.overlapped = True
            return early["fut"], pano
        obs_views = [self._preprocess(v.data) if isinstance(v.data, RawView) else v.data for v in pano.captured]
        fut = self._submit(self._act, self._obs_from(obs_views, pano.headings_rad(), step, already_relative=True))
        return fut, pano

    def _sweep_again(self, action: str, scfg: SweepConfig, last: tuple, pano: SweepPanorama, missing: list[int]) -> list[int]:
        """A second sweep for the ``missing`` views (``last``: the first sweep's selector and drift);
        the views it gets go into ``pano``; returns those still missing."""
        sel, drift = last
        got2 = self.io.sweep(action, scfg, drift, None)
        if got2 is None:
            got2 = (ActionOutcome(action, Outcome.ABORTED.value, {}), sel, drift)
        out2, sel2, drift2 = got2
        pano.heading_deg += TurnResult.from_values(TURN_LEFT if action == SWEEP_LEFT else TURN_RIGHT, out2.values, out2.outcome).yaw_deg
        pano.closure_deg = self._closure(out2.values) if out2.values else pano.closure_deg
        if out2.outcome == Outcome.OK:
            for i, c in enumerate(sel2.select(drift2)):
                if c is not None and i in missing:
                    h = sel2.heading_deg(c.stamp, drift2)
                    pano.captured.append(PanoramaView(i, c.target_deg, h if h is not None else c.heading_deg, "imu", c.data, c.stamp))
                    pano.retaken += 1
            missing = [i for i in missing if all(v.index != i for v in pano.captured)]
        pano.sweeps += 1
        return missing

    @staticmethod
    def _closure(values: Mapping[str, Any]) -> float | None:
        """IMU closure of a sweep: its end heading minus the aimed one (``-yaw_error_deg``), deg; None if absent."""
        try:
            yaw_err = float(values.get("yaw_error_deg", "nan") or "nan")
        except (TypeError, ValueError):
            return None
        return -yaw_err if np.isfinite(yaw_err) else None

    @staticmethod
    def _retake_turns(i: int, scfg: SweepConfig) -> int:
        """TURN actions from the start heading to view ``i`` the shorter way."""
        n = int(round(i * scfg.spacing_deg / TURN_ANGLE_DEG))
        return min(n, int(round(360.0 / TURN_ANGLE_DEG)) - n)

    def _retake(self, i: int, scfg: SweepConfig, result: EpisodeResult, status: Callable[..., None]) -> tuple[PanoramaView, float]:
        """Retake view ``i`` standing still: discrete TURNs to its heading (the shorter way), a frame,
        the same number back (the robot stands at the start heading: the sweep closed).

        Returns:
            The view (heading measured by the TURN results) and the net measured yaw of the turns, deg."""
        target = i * scfg.spacing_deg  # in the sweep direction
        n = int(round(target / TURN_ANGLE_DEG))
        go_left = scfg.direction == "left"
        if n > 180.0 / TURN_ANGLE_DEG:
            n, go_left = int(round(360.0 / TURN_ANGLE_DEG)) - n, not go_left
        there, back = (TURN_LEFT, TURN_RIGHT) if go_left else (TURN_RIGHT, TURN_LEFT)
        heading = 0.0
        for _ in range(n):
            self._check_cancel()
            heading += self._send_turn(there, result, status).yaw_deg
        view = PanoramaView(i, scfg.sign * target, heading, "retake", self.io.grab(), self.clock())
        for _ in range(n):
            self._check_cancel()
            heading += self._send_turn(back, result, status).yaw_deg
        return view, heading

    def _instant_panorama(self, step: int) -> Future:
        """Every view at once from the IO's panorama camera (``panorama_mode`` ``instant``); returns the inference future."""
        raw, headings = self.io.panorama(int(self.policy.views), self.config.panorama_direction)
        obs = self._obs_from([self._preprocess(v) for v in raw], headings, step, already_relative=True)
        return self._submit(self._act, obs)

    def _obs_from(
        self, views: list[tuple[np.ndarray, np.ndarray]], headings: np.ndarray, step: int, already_relative: bool = False
    ) -> Observation:
        h = np.asarray(headings, np.float64)
        if not already_relative:  # headings relative to the start heading (= the end heading of a closed sweep)
            h = (h + np.pi) % (2 * np.pi) - np.pi
        rgb = np.stack([v[0] for v in views])
        depth = np.stack([v[1] for v in views])
        return Observation(rgb=rgb, depth=depth, headings=h.astype(np.float32), step=step)

    @staticmethod
    def _pano_obs(cap: PanoramaCapture, step: int, reference_deg: float | None = None) -> Observation:
        rgb = np.stack([v.data[0] for v in cap.captured])
        depth = np.stack([v.data[1] for v in cap.captured])
        return Observation(rgb=rgb, depth=depth, headings=cap.headings_rad(reference_deg), step=step)

    def _act(self, obs: Observation) -> tuple[str, float]:
        t0 = time.perf_counter()
        action = self.policy.act(obs)
        ms = (time.perf_counter() - t0) * 1000.0
        if action not in ACTIONS:
            raise AgentAbort(f"policy {self.policy.name} returned {action!r}, not one of {', '.join(ACTIONS)}")
        return action, ms

    # --- the episode -----------------------------------------------------------------------------
    def _check_vocabulary(self, instruction: str, result: EpisodeResult) -> None:
        """Record the instruction's unknown-word rate against the policy's vocabulary (policies
        without one are not checked) and refuse it above ``max_unknown_word_rate``.

        Raises:
            AgentAbort: refused (``error``: the episode ends aborted before any motion).
        """
        vocab = getattr(self.policy, "vocab", None)
        if vocab is None or not callable(getattr(vocab, "unknown_words", None)):
            return
        chk = check_instruction(vocab, instruction, self.config.max_unknown_word_rate)
        result.unknown_word_rate, result.unknown_words = chk.rate, list(chk.unknown)
        if chk.refused:
            raise AgentAbort(chk.message())

    def _observe(self, result: EpisodeResult, status: Callable[..., None]) -> tuple[Future, float]:
        """The observation of this step (a panorama, or the front view of a one-view policy) sent to
        the policy: (its inference future, the panorama's seconds or 0)."""
        views = int(getattr(self.policy, "views", 1))  # may change per step (e.g. 1 while replaying a macro)
        if views <= 1:
            status("observing", step=result.steps)
            return self._submit(self._act, self._front_view(result.steps)), 0.0
        status("panorama", step=result.steps)
        t_pano = self.clock()
        mode = self.config.panorama_mode
        if mode == "instant" and callable(getattr(self.io, "panorama", None)):
            fut = self._instant_panorama(result.steps)
            result.panoramas.append({"mode": "instant", "duration_s": 0.0, "final_error_deg": 0.0})
        else:
            if mode == "sweep" and callable(getattr(self.io, "sweep", None)):
                fut, cap = self._sweep_panorama(result.steps, result, status)
            else:
                fut, cap = self._panorama(result.steps, result, status)
            result.panoramas.append(cap.summary())
        pano_s = self.clock() - t_pano
        result.panorama_s += pano_s
        return fut, pano_s

    def run(self, instruction: str) -> EpisodeResult:
        """Run one episode to STOP, the budget, cancellation or an error (never raises for those).

        Returns:
            The :class:`EpisodeResult` (reason stop | budget | blocked | aborted).
        """
        t_start = self.clock()
        self._in_flight = ""
        self._blocked.reset()
        result = EpisodeResult(reason="stop", steps=0, actions=[], instruction=instruction, policy=getattr(self.policy, "name", ""))
        state = {"step": 0, "action": "", "state": "starting", "policy_ms": 0.0, "panorama_s": 0.0, "waiting_s": 0.0}

        def status(s: str, **kw: Any) -> None:
            state.update(kw, state=s)
            try:
                self.io.publish_status(dict(state))
            except Exception:  # status is best effort; never break the episode on it
                pass

        try:
            self._check_vocabulary(instruction, result)
            self._result(self._submit(self.policy.reset, instruction), "reset")
            while result.steps < self.config.max_actions:
                self._check_cancel()
                fut, pano_s = self._observe(result, status)
                status("inferring", panorama_s=pano_s)
                t_wait = self.clock()
                action, ms = self._result(fut, "act")
                result.policy_wait_s += self.clock() - t_wait
                result.policy_ms.append(ms)
                self._check_cancel()
                t_act = self.clock()
                self._in_flight = action
                out = self.io.send_action(action)
                self._in_flight = ""
                if out.outcome == Outcome.REJECTED:
                    raise AgentAbort(f"motion_node rejected {action} repeatedly; is another node sending actions?")
                self._check_aborted(out)
                result.actions.append(action)
                result.steps += 1
                waiting = self.clock() - t_act
                status("acting", step=result.steps, action=action, policy_ms=ms, panorama_s=pano_s, waiting_s=waiting)
                if action == STOP:
                    result.reason = "stop"
                    break
                hook = getattr(self.policy, "on_action_result", None)
                if callable(hook):
                    hook(action, out.outcome)
                self._after_motion(out, result, status, "action", pause=result.steps < self.config.max_actions)
            else:
                result.reason = "budget"
        except EpisodeBlocked as exc:
            result.reason, result.detail = "blocked", str(exc)
        except AgentAbort as exc:
            if self.synchronous:  # batch: nothing cancels an episode there; a failure is the caller's
                raise
            result.reason, result.detail, result.error = "aborted", str(exc), exc.reason == "error"
            result.interrupted = self._in_flight
        except Exception as exc:  # policy or preprocessing failure: end the episode, keep what was done
            if self.synchronous:
                raise
            result.reason, result.detail, result.error = "aborted", f"{type(exc).__name__}: {exc}", True
        take_gaps = getattr(self.policy, "take_gaps", None)  # a remote policy's waits on the link
        if callable(take_gaps):
            result.link_gaps = list(take_gaps())
        result.duration_s = self.clock() - t_start
        status("error" if result.error else ("aborted" if result.reason == "aborted" else "done"), step=result.steps)
        return result
