"""The console's live view model: typed records in, one JSON-able dict out (pure, no ROS).

console_node feeds it decoded messages (:mod:`havln_robot.records`) and trial-store rows;
:meth:`LiveView.snapshot` is what every page receives on the ``state`` channel.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from havln_robot.records import ActionResult, AgentStatus, CollisionRecord, EpisodeDone, GroundTruth

#: Odometry trace points kept (at least TRACE_STEP_M apart).
TRACE_POINTS = 2000
TRACE_STEP_M = 0.05


def _num(x: float | None, nd: int = 3) -> float | None:
    """Round for JSON; None for nan/inf/None."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), nd)


def success_rate(outcomes: Iterable[str | None]) -> dict[str, Any]:
    """Judged trials, successes and SR over verdicts (aborted and unjudged trials do not count)."""
    judged = [o for o in outcomes if o in ("success", "failure")]
    k = sum(1 for o in judged if o == "success")
    return {"judged": len(judged), "success": k, "sr": round(k / len(judged), 3) if judged else None}


class LiveView:
    """Latest state of the robot, the agent and the campaign; thread-safe.

    Args:
        clock: wall time, s (ages of the inputs).
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.instruction = ""
        self.paused = False
        self.agent: AgentStatus | None = None
        self.last_result: ActionResult | None = None
        self.collisions: list[dict[str, Any]] = []
        self.done: EpisodeDone | None = None
        self.gt: GroundTruth | None = None
        self.pose: tuple[float, float, float] | None = None
        self.trace: deque[tuple[float, float]] = deque(maxlen=TRACE_POINTS)
        self.goal: tuple[float, float] | None = None
        self.cmd_vel: tuple[float, float] = (0.0, 0.0)
        self.cmd_vel_t = 0.0
        self.diagnostics: dict[str, dict[str, Any]] = {}
        self.trials: list[dict[str, Any]] = []
        self.running_trial: dict[str, Any] | None = None
        self.store_problem = ""
        self.events: deque[str] = deque(maxlen=30)
        self.frames = {"color": 0.0, "depth": 0.0}

    # --- inputs -------------------------------------------------------------------------------
    def event(self, line: str) -> None:
        """One line in the page's event log (newest last)."""
        with self._lock:
            self.events.append(time.strftime("%H:%M:%S ", time.localtime(self._clock())) + line)

    def on_instruction(self, text: str) -> None:
        with self._lock:
            self.instruction = text
            self.done = None
            self.collisions = []
            self.trace.clear()

    def on_agent(self, st: AgentStatus) -> None:
        with self._lock:
            self.agent = st

    def on_result(self, r: ActionResult) -> None:
        with self._lock:
            self.last_result = r

    def on_collision(self, c: CollisionRecord) -> None:
        with self._lock:
            d = {k: v for k, v in dataclasses.asdict(c).items() if isinstance(v, (str, int, float, bool))}
            self.collisions.append({k: (_num(v) if isinstance(v, float) else v) for k, v in d.items()})
            del self.collisions[:-50]

    def on_done(self, done: EpisodeDone) -> None:
        with self._lock:
            self.done = done

    def on_ground_truth(self, gt: GroundTruth) -> None:
        with self._lock:
            self.gt = gt

    def on_odom(self, x: float, y: float, yaw: float) -> None:
        """Odometry pose (odom frame, m, rad); the trace keeps points TRACE_STEP_M apart."""
        with self._lock:
            self.pose = (x, y, yaw)
            if not self.trace or math.hypot(x - self.trace[-1][0], y - self.trace[-1][1]) >= TRACE_STEP_M:
                self.trace.append((x, y))

    def on_cmd_vel(self, vx: float, wz: float) -> None:
        with self._lock:
            self.cmd_vel = (vx, wz)
            self.cmd_vel_t = self._clock()

    def on_diagnostic(self, name: str, level: int, message: str, values: dict[str, str]) -> None:
        """One DiagnosticStatus of /diagnostics (driver, camera)."""
        with self._lock:
            self.diagnostics[name] = {
                "level": int(level),
                "message": message,
                "values": dict(list(values.items())[:12]),
                "t": self._clock(),
            }

    def on_frame(self, kind: str) -> None:
        with self._lock:
            self.frames[kind] = self._clock()

    def set_paused(self, paused: bool) -> None:
        with self._lock:
            self.paused = paused

    def set_goal(self, goal: tuple[float, float] | None) -> None:
        """Goal in the odom frame, m (None = unknown)."""
        with self._lock:
            self.goal = goal

    def set_trials(self, trials: list[dict[str, Any]], running: dict[str, Any] | None, store_problem: str = "") -> None:
        """The campaign's trials (newest first, plain dicts from the store), the running one, and the
        store's health (``store_problem``: one line when its WAL cannot be checkpointed, else "")."""
        with self._lock:
            self.trials = trials
            self.running_trial = running
            self.store_problem = store_problem

    # --- output -------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Everything a page shows, JSON-able."""
        with self._lock:
            now = self._clock()
            a, r, gt = self.agent, self.last_result, self.gt
            return {
                "t": now,
                "instruction": self.instruction,
                "paused": self.paused,
                "agent": None if a is None else {"step": a.step, "action": a.action, "state": a.state, "policy_ms": _num(a.policy_ms, 1)},
                "last_result": None
                if r is None
                else {
                    "seq": r.seq,
                    "action": r.action,
                    "outcome": str(r.outcome),
                    "distance_m": _num(r.distance_odom_m),
                    "yaw_deg": _num(r.yaw_odom_deg, 1),
                    "duration_s": _num(r.duration_s, 2),
                    "detail": r.detail,
                },
                "collisions": {"count": len(self.collisions), "last": self.collisions[-3:]},
                "done": None if self.done is None else {"reason": str(self.done.reason), "steps": self.done.steps},
                "ground_truth": None
                if gt is None
                else {
                    "episode": gt.episode_id,
                    "ne_m": _num(gt.distance_to_goal_m, 2),
                    "collisions_human": gt.collisions_human,
                    "collisions_static": gt.collisions_static,
                },
                "pose": None if self.pose is None else [_num(self.pose[0]), _num(self.pose[1]), _num(self.pose[2])],
                "trace": [[_num(x), _num(y)] for x, y in self.trace],
                "goal": None if self.goal is None else [_num(self.goal[0]), _num(self.goal[1])],
                "cmd_vel": {
                    "vx": _num(self.cmd_vel[0]),
                    "wz": _num(self.cmd_vel[1]),
                    "age_s": _num(now - self.cmd_vel_t, 2) if self.cmd_vel_t else None,
                },
                "diagnostics": {k: {**v, "age_s": _num(now - v["t"], 1)} for k, v in self.diagnostics.items()},
                "frames_age_s": {k: (_num(now - t, 2) if t else None) for k, t in self.frames.items()},
                "trials": self.trials,
                "running_trial": self.running_trial,
                "store_problem": self.store_problem,
                "sr": success_rate(t.get("outcome") for t in self.trials),
                "events": list(self.events),
            }
