"""agent_node: instruction in → (panorama | front view) → policy → havln/action, until STOP or the budget.

Thin ROS shell over :class:`havln_robot.agent.core.EpisodeRunner`. Subscribes ``havln/instruction``
(String), the colour and aligned-depth images (raw, or image_transport's ``compressed`` /
``compressedDepth`` with ``image_transport`` compressed) and colour camera_info, and ``havln/action_result``
(DiagnosticStatus from motion_node) and ``imu`` (sweep panoramas: orientation yaw, interpolated at
frame stamps); publishes ``havln/action`` (String), ``havln/agent_status``
(DiagnosticStatus, AGENT_STATUS_KEYS, after every decision and state change) and
``havln/episode_done`` (String JSON, at the end of every episode).

Threads: ROS callbacks only store messages and wake waiters; episodes run on one worker thread and
policy inference on the runner's own inference thread, so the executor is never blocked. A new
instruction while an episode runs cancels it (the worker sends STOP to motion_node and publishes
``episode_done`` with reason ``aborted``) and then starts the new one.

Lockstep (the embedded simulator announces its steps on ``havln/sim_sync``; protocol in
:mod:`havln_robot.sim.lockstep`): the simulated world waits for the agent, as in the batch
simulator. The episode thread acks a step only while it waits (for an action's result, frames, a
pause), after its wait condition was checked on every message of the step, so the clock stands
still while the policy thinks; the step the clock stands at (``_ls_hold``) is this node's time;
the frame taken after an action is the first pair stamped ``settle_s`` after the step of its
result; waits and pauses count sim time.
"""

from __future__ import annotations

import collections
import math
import queue
import sys
import threading
import time
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, Imu
from std_msgs.msg import Bool, String

from havln_robot.actions import STOP
from havln_robot.agent.core import ActionOutcome, AgentAbort, AgentConfig, EpisodeRunner, RawView
from havln_robot.agent.params import AGENT_PARAMS
from havln_robot.camera import Intrinsics, IntrinsicsError
from havln_robot.geometry import quat_to_yaw
from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.params import ConfigError
from havln_robot.perception.image_codec import compressed_depth_topic, compressed_topic
from havln_robot.perception.panorama import PanoramaCapture, PanoramaError
from havln_robot.perception.sweep import SweepConfig, SweepSelector, YawTrack
from havln_robot.policy.api import PolicyError
from havln_robot.policy.registry import make_policy, no_data_fallback
from havln_robot.records import AgentStatus
from havln_robot.ros.codec import compressed_color_array, compressed_depth_array, encode_agent_status, image_array
from havln_robot.ros.lockstep import LockstepLink
from havln_robot.ros.motion_client import MotionCancelled, MotionClient, MotionTimeout
from havln_robot.sim.lockstep import INCOMPLETE_STEP_WAIT_S, StepInbox, stamp_ns
from havln_robot.text import is_blank, normalize_instruction, terminal_safe

_FRAMES_KEPT = 8
_IMU_KEPT = 400  # IMU samples kept for the start of a sweep (4 s at the 100 Hz of the sim and the Go2 driver)
_IMU_WAIT_S = 1.0  # a sweep needs IMU orientation; without any within this, the panorama is discrete
_TRAILING_FRAME_WAIT_S = 1.0  # after a sweep's result: wait this long at most for the frames of its last instants
_STOP_RESULT_WAIT_S = 2.0  # how long to wait for motion_node's answer to STOP


def _stamp_s(msg: Any) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


class AgentNode(HavlnNode):
    """ROS shell of the agent (see the module docstring).

    Args:
        params: validated parameters (see :data:`havln_robot.agent.params.AGENT_PARAMS`).
        policy: an already-built policy object (tests, embedding); default: built from ``params['policy']``.
        **kwargs: passed to :class:`HavlnNode` (e.g. ``context``).

    Raises:
        ConfigError: the policy cannot be loaded (one line with the fix).
    """

    SPEC = AGENT_PARAMS

    def __init__(self, params: dict[str, Any] | None = None, policy: Any = None, **kwargs: Any) -> None:
        super().__init__(params=params, **kwargs)
        p = self.params
        try:
            if policy is None:
                spec, why = no_data_fallback(p["policy"])
                if why:
                    self.get_logger().warning(why)
                policy = make_policy(spec, device=p["device"])
            self.policy = policy
        except PolicyError as exc:
            msg = f"{self.get_name()}: policy: {exc}"
            HavlnNode.destroy_node(self)
            raise ConfigError(msg) from None
        wait_s = getattr(self.policy, "wait_s", None)  # a policy server: its retries must end before the agent gives up on it
        if isinstance(wait_s, (int, float)) and wait_s >= p["inference_timeout_s"]:
            msg = (
                f"{self.get_name()}: policy {p['policy']}: wait_s={wait_s:g} s is not below inference_timeout_s={p['inference_timeout_s']:g} s; "
                "lower wait_s in the policy spec (?wait_s=S) or raise inference_timeout_s"
            )
            HavlnNode.destroy_node(self)
            raise ConfigError(msg)
        self.config = AgentConfig.from_params(p)
        views = int(getattr(self.policy, "views", 1))
        if views > 1:  # surface panorama configuration errors at start, not mid-episode
            try:
                PanoramaCapture(views=views, direction=p["panorama_direction"], tolerance_deg=p["heading_tolerance_deg"])
            except PanoramaError as exc:
                msg = f"{self.get_name()}: {exc}"
                HavlnNode.destroy_node(self)
                raise ConfigError(msg) from None
        self._cond = threading.Condition()
        self._rgb: collections.deque = collections.deque(maxlen=_FRAMES_KEPT)  # (stamp_s, recv_s, array)
        self._depth: collections.deque = collections.deque(maxlen=_FRAMES_KEPT)
        self._info: CameraInfo | None = None
        self._imu: collections.deque = collections.deque(maxlen=_IMU_KEPT)  # (stamp_s, yaw_rad)
        self._sweep: tuple[SweepSelector, Any, set] | None = None  # recording during a sweep: selector, on_views, offered stamps
        self._ready_after = 0.0  # a frame counts as "after settling" when received at/after this (node clock, s)
        self._cancel = threading.Event()
        self._shutdown = threading.Event()
        self._instructions: queue.Queue[str | None] = queue.Queue()
        self._running = False
        self._lock = threading.Lock()  # orders instruction arrival against episode start (no lost abort)
        self.last_result = None  # EpisodeResult of the last finished episode

        self.pub_status = self.create_publisher(DiagnosticStatus, p["status_topic"], 10)
        self.pub_done = self.create_publisher(String, p["episode_done_topic"], 10)
        self.create_subscription(String, p["instruction_topic"], self._on_instruction, 10)
        self._paused = threading.Event()  # operator console: hold before the next action (havln/agent_pause)
        self.create_subscription(Bool, p["pause_topic"], self._on_pause, 10)
        self.motion = MotionClient(self, p["action_topic"], p["action_result_topic"], on_result=self._on_motion_result)
        # the camera and IMU this agent sees the world through, bound to their first publisher (another
        # stack's on the same domain is refused, one line naming both)
        for name in (p["color_topic"], p["depth_topic"], p["imu_topic"], *(["/clock"] if self.get_parameter("use_sim_time").value else [])):
            self.pin_source(name)
        # Best-effort subscriptions match both reliable (realsense-ros default) and best-effort camera publishers.
        if p["image_transport"] == "compressed":  # the camera is on another machine (docs/two_machines.md)
            self._color_topic = compressed_topic(p["color_topic"])
            self._depth_topic = compressed_depth_topic(p["depth_topic"])
            self.create_subscription(CompressedImage, self._color_topic, self._on_color_compressed, qos_profile_sensor_data)
            self.create_subscription(CompressedImage, self._depth_topic, self._on_depth_compressed, qos_profile_sensor_data)
        else:
            self._color_topic, self._depth_topic = p["color_topic"], p["depth_topic"]
            self.create_subscription(Image, p["color_topic"], self._on_color, qos_profile_sensor_data)
            self.create_subscription(Image, p["depth_topic"], self._on_depth, qos_profile_sensor_data)
        self.create_subscription(CameraInfo, p["color_info_topic"], self._on_info, qos_profile_sensor_data)
        self.create_subscription(Imu, p["imu_topic"], self._on_imu, qos_profile_sensor_data)
        self.on_clock_jump_back(self._on_clock_reset)
        # lockstep with the embedded simulator (inactive until it announces a step)
        self._ls_inbox = StepInbox()  # stamps received, by kind
        self._ls_done = -1  # last step whose messages are all in, ns
        self._ls_hold = -1  # the step the clock stands at for this node, ns
        self._ls_newest = -1  # newest stamp of anything heard from the simulator, ns
        self._ls_results = 0  # highest result seq the episode thread looked at
        self._ls = LockstepLink(self, "agent", on_event=self._ls_event)

        self.runner = EpisodeRunner(self.policy, self, self.config, clock=time.monotonic, cancelled=self._cancel.is_set)
        self._worker = threading.Thread(target=self._work, name="agent-episodes", daemon=True)
        self._worker.start()
        self.get_logger().info(
            f"policy {getattr(self.policy, 'name', '?')} ({self.policy.views} view(s) per step); waiting for {p['instruction_topic']}"
        )

    # --- callbacks (store and notify only) --------------------------------------------------------
    def _on_instruction(self, msg: String) -> None:
        text = normalize_instruction(msg.data)  # the one normalisation, before anything reads it
        if is_blank(text):
            self.get_logger().error(
                f"{self.params['instruction_topic']}: empty instruction ignored (only blank, control or zero-width characters: "
                f"{terminal_safe(repr(msg.data[:40]))}); publish the instruction text"
            )
            return
        with self._lock:
            if self._running:
                self.get_logger().warning("new instruction while an episode runs: aborting the current episode (STOP)")
                self._cancel.set()
            self._instructions.put(text)

    def _ls_heard(self, kind: str, msg: Any) -> None:
        """Lockstep: note a stream message of a step (by its stamp)."""
        if self._ls.active:
            t = stamp_ns(msg.header.stamp.sec, msg.header.stamp.nanosec)
            with self._cond:
                self._ls_inbox.hold(kind, t)
                self._ls_newest = max(self._ls_newest, t)

    def _on_color(self, msg: Image) -> None:
        self._ls_heard("color", msg)
        try:
            a = image_array(msg)
            if msg.encoding == "bgr8":
                a = a[..., ::-1]
            if msg.encoding not in ("rgb8", "bgr8"):
                raise ValueError(f"colour encoding {msg.encoding!r}; expected rgb8 or bgr8")
        except ValueError as exc:
            self.get_logger().error(f"{self.params['color_topic']}: {exc}", throttle_duration_sec=5.0)
            return
        self._store_color(_stamp_s(msg), np.array(a))

    def _on_color_compressed(self, msg: CompressedImage) -> None:
        try:
            a = compressed_color_array(msg)
        except ValueError as exc:
            self.get_logger().error(f"{self._color_topic}: {exc}", throttle_duration_sec=5.0)
            return
        self._store_color(_stamp_s(msg), a)

    def _store_color(self, stamp: float, a: np.ndarray) -> None:
        with self._cond:
            if self._ls.active and self._rgb and self._rgb[-1][0] >= stamp:
                return  # lockstep: a repeat of the last frame (the clock stands still)
            self._rgb.append((stamp, self._now(), a))
            ready = self._offer_pairs()
            self._cond.notify_all()
        if ready is not None:
            ready()
        self._ls_event()

    def _on_depth(self, msg: Image) -> None:
        self._ls_heard("depth", msg)
        if msg.encoding not in ("16UC1", "32FC1"):
            self.get_logger().error(
                f"{self.params['depth_topic']}: encoding {msg.encoding!r}; expected 16UC1 (mm) or 32FC1 (m)", throttle_duration_sec=5.0
            )
            return
        self._store_depth(_stamp_s(msg), np.array(image_array(msg)))

    def _on_depth_compressed(self, msg: CompressedImage) -> None:
        try:
            a = compressed_depth_array(msg)
        except ValueError as exc:
            self.get_logger().error(f"{self._depth_topic}: {exc}", throttle_duration_sec=5.0)
            return
        self._store_depth(_stamp_s(msg), a)

    def _store_depth(self, stamp: float, a: np.ndarray) -> None:
        with self._cond:
            if self._ls.active and self._depth and self._depth[-1][0] >= stamp:
                return  # lockstep: a repeat of the last frame (the clock stands still)
            self._depth.append((stamp, self._now(), a))
            ready = self._offer_pairs()
            self._cond.notify_all()
        if ready is not None:
            ready()
        self._ls_event()

    def _on_imu(self, msg: Imu) -> None:
        self._ls_heard("imu", msg)
        self._imu_in(msg)
        self._ls_event()

    def _imu_in(self, msg: Imu) -> None:
        q = msg.orientation
        if msg.orientation_covariance[0] == -1.0 or (q.x, q.y, q.z, q.w) == (0.0, 0.0, 0.0, 0.0):
            self.get_logger().error(
                f"{self.params['imu_topic']}: no orientation (REP 145); sweep panoramas need it, use panorama_mode discrete",
                throttle_duration_sec=10.0,
            )
            return
        sample = (_stamp_s(msg), quat_to_yaw(q.x, q.y, q.z, q.w))
        with self._cond:
            self._imu.append(sample)
            if self._sweep is not None:
                self._sweep[0].track.add(*sample)
            self._cond.notify_all()

    def _offer_pairs(self):
        """While a sweep records (lock held): offer every new synchronised RGB-D pair to its selector.
        Returns the on_views call to make outside the lock once the frames passed the last view, else None."""
        if self._sweep is None:
            return None
        sel, on_views, offered = self._sweep
        tol = self.params["sync_tolerance_s"]
        info = self._info
        for st_d, _, d in self._depth:
            if st_d in offered:
                continue
            if self._ls.active and int(round(st_d * 1e9)) > self._ls_done:
                continue  # lockstep: offered once every message of its step (camera_info too) is in
            for st_c, _, c in reversed(self._rgb):
                if abs(st_c - st_d) <= tol and c.shape[:2] == d.shape[:2]:
                    offered.add(st_d)
                    intr = None
                    if info is not None:
                        try:
                            intr = Intrinsics.from_k(info.k, info.width, info.height)
                        except IntrinsicsError:
                            intr = None
                    sel.offer(st_d, RawView(c, d, intr, st_d))
                    break
        if on_views is not None and sel.views_passed():
            self._sweep = (sel, None, offered)
            return lambda: on_views(sel)
        return None

    def _on_info(self, msg: CameraInfo) -> None:
        self._info = msg
        self._ls_heard("info", msg)
        self._ls_event()

    def _on_clock_reset(self, t: float, _jump_s: float) -> None:
        """Sim time went back: frames received "in the future" and the settle deadline are dropped
        (the running action is aborted by motion_node, whose result ends the step as usual)."""
        with self._cond:
            self._rgb.clear()
            self._depth.clear()
            self._imu.clear()  # IMU stamps from before the jump would interpolate a sweep's headings wrongly
            self._ready_after = t
            self._cond.notify_all()

    # --- AgentIO ---------------------------------------------------------------------------------
    # --- lockstep --------------------------------------------------------------------------------
    def _now(self) -> float:
        """This node's time: in lockstep the step the clock stands at for this node, else the clock."""
        link = self.__dict__.get("_ls")
        if link is not None and link.active:
            return max(self._ls_hold, self._ls_done, 0) * 1e-9
        return super()._now()

    def _on_motion_result(self, _r: Any) -> None:
        with self._cond:
            self._cond.notify_all()

    def _ls_needs(self, t: int, streams: frozenset[str]) -> list[str]:
        self._ls_newest = max(self._ls_newest, t)
        return (["imu"] if "imu" in streams else []) + (["color", "depth", "info"] if "camera" in streams else [])

    def _ls_complete(self) -> None:
        """Advance ``_ls_done`` over the steps whose announced messages are all in (lock held)."""
        for t, missing in self._ls_inbox.ready(self._ls.next_step, self._ls_needs, time.monotonic):
            if missing:
                self.get_logger().warning(f"lockstep: step {t * 1e-9:.3f} s taken without {', '.join(missing)}", throttle_duration_sec=5.0)
            self._ls_done = t

    def _ls_event(self) -> None:
        """A step, an ack or a stream message came: complete steps; while no episode runs, ack them."""
        if not self._ls.active:
            return
        with self._cond:
            self._ls_complete()
            ready = self._offer_pairs()
            self._cond.notify_all()
            if not self._running:
                self._ls.ack(t_ns=self._ls_done, wants=False, actions=self.motion.published, results=self._max_seq())
                self._ls_hold = self._ls_done
        if ready is not None:
            ready()

    def _max_seq(self) -> int:
        return self.motion.result_since(1 << 62, "")[0]

    def _ls_waiting(self) -> None:
        """The episode thread waits (lock held, its condition just checked false): ack the steps done
        (steps are completed, and their frames offered to a sweep, only by :meth:`_ls_event`)."""
        if self._ls_done >= self._ls_hold:
            self._ls.ack(t_ns=self._ls_done, wants=True, actions=self.motion.published, results=self._ls_results)

    def _ls_held(self, result_seq: int | None = None) -> None:
        """A wait ended (lock held): the clock stands at the newest step heard of (for a result: the step motion_node
        published it at); wait until every message of that step is in, so that what follows sees exactly it."""
        hold = max(self._ls_hold, self._ls_newest)
        end = time.monotonic() + INCOMPLETE_STEP_WAIT_S + 1.0
        if result_seq is not None:
            while time.monotonic() < end:
                m = self._ls.peer("motion")
                if m is None or m.results >= result_seq:
                    hold = max(hold, m.t_ns if m is not None else -1)
                    break
                self._cond.wait(0.02)
        self._ls_hold = hold
        while self._ls_done < hold and time.monotonic() < end:
            self._cond.wait(0.02)

    def _ls_wait(self, predicate, timeout_s: float, what: str):
        """:meth:`_wait` in lockstep: sim time counts (``timeout_s`` of it), acks while waiting."""
        with self._cond:
            start = max(self._ls_hold, 0)
            wall_end = time.monotonic() + timeout_s + 60.0  # the simulator itself gone
            while True:
                got = predicate()
                if got is not None:
                    self._ls_held()
                    return got
                if self._cancel.is_set() or self._shutdown.is_set():
                    raise AgentAbort("cancelled", reason="aborted")
                if (self._ls_done - start) * 1e-9 > timeout_s or time.monotonic() > wall_end:
                    raise AgentAbort(f"no {what} within {timeout_s:g} s")
                self._ls_waiting()
                self._cond.wait(0.05)

    def _ls_send(self, action: str, timeout_s: float) -> Any:
        """MotionClient.send in lockstep: the result wait acks steps; retries after ``rejected_wait_s`` of sim time."""
        p = self.params
        for attempt in range(max(0, p["rejected_retries"]) + 1):
            after = self.motion.received
            self.motion.publish(action)

            def match(after: int = after) -> Any:
                top, r = self.motion.result_since(after, action)
                if r is None:
                    self._ls_results = top
                return r

            with self._cond:
                start = max(self._ls_hold, 0)
                wall_end = time.monotonic() + timeout_s + 60.0
                while True:
                    r = match()
                    if r is not None:
                        self._ls_results = max(self._ls_results, r.seq)
                        self._ls_held(result_seq=r.seq)
                        break
                    if self._stopping():
                        raise MotionCancelled("cancelled")
                    if (self._ls_done - start) * 1e-9 > timeout_s or time.monotonic() > wall_end:
                        raise MotionTimeout(f"no {self.motion.result_topic} for {action} within {timeout_s:g} s (is motion_node running?)")
                    self._ls_waiting()
                    self._cond.wait(0.05)
            if r.outcome.value != "rejected" or attempt == p["rejected_retries"]:
                return r
            self.pause(p["rejected_wait_s"])
        raise AssertionError("unreachable")

    def pause(self, seconds: float) -> bool:
        """Lockstep: let ``seconds`` of sim time pass (people walk on); True. Outside lockstep False (the runner sleeps)."""
        if not self._ls.active:
            return False
        with self._cond:
            end = max(self._ls_hold, 0) + int(round(seconds * 1e9))
        self._ls_wait(lambda: True if self._ls_done >= end else None, seconds + 1.0, "sim time")
        return True

    def _wait(self, predicate, timeout_s: float, what: str):
        """Wait on the condition until predicate() returns non-None; AgentAbort on cancel/timeout."""
        if self._ls.active:
            return self._ls_wait(predicate, timeout_s, what)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                got = predicate()
                if got is not None:
                    return got
                if self._cancel.is_set() or self._shutdown.is_set():
                    raise AgentAbort("cancelled", reason="aborted")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AgentAbort(f"no {what} within {timeout_s:g} s")
                self._cond.wait(min(left, 0.05))

    def _on_pause(self, msg: Bool) -> None:
        if msg.data != self._paused.is_set():
            self.get_logger().warning(f"{'paused' if msg.data else 'resumed'} by {self.params['pause_topic']}")
        (self._paused.set if msg.data else self._paused.clear)()

    def send_action(self, action: str) -> ActionOutcome:
        """Send ``action`` through the motion client and wait for its result (resent while ``rejected``).

        While paused (``pause_topic``) every action but STOP waits here, before it is sent.
        """
        p = self.params
        stopping = action == STOP
        while not stopping and self._paused.is_set():
            if self._stopping():
                raise AgentAbort("cancelled", reason="aborted")
            time.sleep(0.05)
        timeout = min(p["action_timeout_s"], _STOP_RESULT_WAIT_S) if stopping else p["action_timeout_s"]
        try:
            if self._ls.active:
                r = self._ls_send(action, timeout)
            else:
                r = self.motion.send(
                    action, timeout, retries=p["rejected_retries"], retry_wait_s=p["rejected_wait_s"], cancelled=self._stopping
                )
        except MotionCancelled:
            raise AgentAbort("cancelled", reason="aborted") from None
        except MotionTimeout as exc:
            if stopping:  # STOP only holds zero velocity; a missing result must not turn a finished episode into an error
                return ActionOutcome(action, "unconfirmed", {})
            raise AgentAbort(str(exc)) from None
        with self._cond:
            self._ready_after = self._now() + p["settle_s"]
        return ActionOutcome(action, r.outcome.value, r.to_values())

    def sweep(self, action: str, config: SweepConfig, drift_rate: float, on_views) -> tuple[ActionOutcome, SweepSelector, float] | None:
        """Send a SWEEP primitive and record the IMU yaw and every RGB-D pair into a selector while it
        runs (see :class:`havln_robot.agent.core.AgentIO`). Returns (outcome, selector, drift rad/s),
        or None (nothing sent) when no IMU orientation arrives: the agent takes a discrete panorama."""
        p = self.params
        try:
            self._wait(lambda: True if self._imu else None, min(p["frame_timeout_s"], _IMU_WAIT_S), "IMU")
        except AgentAbort:
            if self._stopping():
                raise
            self.get_logger().warning(
                f"no IMU orientation on {p['imu_topic']}: panoramas in discrete mode until it arrives", throttle_duration_sec=60.0
            )
            return None
        with self._cond:
            track = YawTrack()
            for st, yaw in self._imu:
                track.add(st, yaw)
            t0 = track.t[-1]
            sel = SweepSelector(config, track, t0, drift_rate)
            self._sweep = (sel, on_views, set())
        try:
            out = self.send_action(action)
            with self._cond:
                t_end = self._imu[-1][0] if self._imu else t0
            try:  # the frames of the last instants are still on their way (rendering, transport)
                self._wait(lambda: True if self._depth and self._depth[-1][0] >= t_end else None, _TRAILING_FRAME_WAIT_S, "trailing frame")
            except AgentAbort:
                if self._stopping():
                    raise
        finally:
            with self._cond:
                self._offer_pairs()
                self._sweep = None
        yaw = float(out.values.get("yaw_imu_deg", "nan") or "nan")
        drift = track.drift_against(t0, t_end, math.radians(yaw)) if math.isfinite(yaw) else 0.0
        return out, sel, drift

    def _stopping(self) -> bool:
        return self._cancel.is_set() or self._shutdown.is_set()

    def grab(self) -> RawView:
        """The newest synchronised RGB-D pair received after the robot settled."""
        p = self.params
        tol = p["sync_tolerance_s"]

        def first_pair():  # lockstep: the first pair stamped at or after the settle time (stamps only)
            for st_d, _, d in self._depth:
                if st_d < self._ready_after - 1e-6:
                    continue
                near = [
                    (abs(st_c - st_d), i)
                    for i, (st_c, _, c) in enumerate(self._rgb)
                    if abs(st_c - st_d) <= tol and c.shape[:2] == d.shape[:2]
                ]
                if near:
                    st_c, _, c = self._rgb[min(near)[1]]
                    return RawView(c, d, None, st_c)
            return None

        def pair():
            if self._ls.active:
                return first_pair()
            for st_d, recv_d, d in reversed(self._depth):
                if recv_d < self._ready_after:
                    break
                for st_c, recv_c, c in reversed(self._rgb):
                    if recv_c >= self._ready_after and abs(st_c - st_d) <= tol and c.shape[:2] == d.shape[:2]:
                        return RawView(c, d, None, st_c)
            return None

        view = self._wait(pair, p["frame_timeout_s"], f"synchronised RGB-D pair on {self._color_topic} + {self._depth_topic}")
        if p["camera_hfov_deg"] <= 0.0:  # intrinsics must come from camera_info
            self._wait(lambda: self._info, p["frame_timeout_s"], f"camera_info on {p['color_info_topic']} (or set camera_hfov_deg)")
        info = self._info
        if info is not None:
            try:
                view.intrinsics = Intrinsics.from_k(info.k, info.width, info.height)
            except IntrinsicsError as exc:
                raise AgentAbort(f"{p['color_info_topic']}: {exc}") from None
        return view

    def publish_status(self, values) -> None:
        """Publish one havln/agent_status record."""
        self.pub_status.publish(encode_agent_status(AgentStatus.from_values(values)))

    # --- episodes ----------------------------------------------------------------------------------
    def _work(self) -> None:
        while not self._shutdown.is_set():
            try:
                text = self._instructions.get(timeout=0.2)
            except queue.Empty:
                continue
            if text is None:
                break
            with self._lock:
                # Only the newest instruction counts when several queued up during an abort.
                while not self._instructions.empty():
                    nxt = self._instructions.get_nowait()
                    if nxt is None:
                        return
                    text = nxt
                self._cancel.clear()
                self._running = True
            with self._cond:
                if self._ls.active:
                    self._ls_hold = max(self._ls_hold, self._ls_done)
                self._ready_after = self._now()
            self.get_logger().info(f'episode start: "{terminal_safe(text)}"')
            result = self.runner.run(text)
            self._running = False
            if result.reason == "aborted":
                try:
                    self.motion.stop()  # halt whatever motion_node is doing
                except Exception:  # context already shut down
                    pass
            self.last_result = result
            line = f"episode done: {result.reason} after {result.steps} action(s){' -- ' + result.detail if result.detail else ''}"
            if result.error:  # one call site per severity (rclpy refuses a severity change at one site)
                self.get_logger().error(line)
            else:
                self.get_logger().info(line)
            try:
                self.pub_done.publish(String(data=result.to_json()))
            except Exception:
                pass

    def safe_stop(self) -> None:
        """Cancel the running episode and send STOP to motion_node. Never raises."""
        try:
            self._ls.close()
            was_running = self._running
            self._cancel.set()
            self._shutdown.set()
            self._instructions.put(None)
            if was_running:
                self.motion.stop()
            self._worker.join(timeout=2.0)
        except Exception:
            pass

    def destroy_node(self) -> None:
        self._ls.close()
        self._cancel.set()
        self._shutdown.set()
        self._instructions.put(None)
        if self._worker.is_alive() and threading.current_thread() is not self._worker:
            self._worker.join(timeout=2.0)
        self.runner.close()
        super().destroy_node()


NODE_CLASS = AgentNode


def main() -> None:
    sys.exit(run_node(AgentNode))
