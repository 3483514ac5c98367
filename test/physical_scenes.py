"""Shared helpers of the physical-world tests: the executor on a plant that follows its command,
with control ticks that come late (a loaded machine), and nothing in the way."""

from __future__ import annotations

import numpy as np

from havln_robot import actions as A
from havln_robot.motion.executor import Executor, MotionConfig
from havln_robot.motion.safety import Obstacles

PERIOD_S = 0.02  # motion_node's control_rate_hz 50


def forward_with_late_tick(late_at_s: float, gap_s: float, warm_gap_s: float | None, cfg: MotionConfig | None = None) -> float:
    """Farthest progress (m) of one MOVE_FORWARD (0.25 m) whose control tick due ``late_at_s`` after
    its start comes ``gap_s`` late; the base holds the last command in between (no driver deadman:
    the worst case). ``warm_gap_s``: one earlier idle tick came that late (the loop was starved
    before, so the executor has measured it); None = never."""
    ex = Executor(cfg or MotionConfig())
    obs = Obstacles(points=np.zeros((0, 2), np.float32))
    t, x = 0.0, 0.0
    for i in range(50):  # idle ticks before the action
        t += PERIOD_S if not (warm_gap_s and i == 25) else warm_gap_s
        ex.update(t, (x, 0.0, 0.0), 0.0, obs)
    t0 = t
    tick = ex.start(A.MOVE_FORWARD, t, (x, 0.0, 0.0), 0.0, obs)
    v, best, late_done = tick.cmd[0], 0.0, False
    while ex.busy and t - t0 < 10.0:
        step = PERIOD_S
        if not late_done and t - t0 >= late_at_s:
            step, late_done = gap_s, True
        x += v * step
        t += step
        best = max(best, x)
        v = ex.update(t, (x, 0.0, 0.0), 0.0, obs).cmd[0]
    return best
