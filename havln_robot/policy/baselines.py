"""The policies without a checkpoint: ``forward`` and ``random`` with VLN-CE semantics (pure Python).

One implementation serves ``havln-robot eval``, agent_node and the demo (registered in
:mod:`havln_robot.policy.registry`), so a name means the same behaviour everywhere.

* ``forward`` -- the VLN-CE "hand-crafted" baseline: MOVE_FORWARD ``steps`` times (default 37, the
  average training episode length; Krantz et al. 2020, VLN-CE Sec. 5), then STOP.
* ``random`` -- i.i.d. actions with P(STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT) =
  (0.02, 0.68, 0.15, 0.15) (VLN-CE's random agent, ``vlnce_baselines/nonlearning_agents.py``),
  drawn from ``numpy.random.default_rng(seed)``, restarted at every :meth:`reset`.

Both take ``views`` (default 1): the views requested per step, e.g. ``forward:steps=8,views=12`` runs
agent_node's whole panorama path with a trivial decision rule. They ignore what they see, so
they accept ``obs=None`` (the batch evaluator renders nothing for them, see
:attr:`~havln_robot.policy.api.Policy.observes`).
"""

from __future__ import annotations

import numpy as np

from havln_robot.actions import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from havln_robot.perception.panorama import valid_view_counts
from havln_robot.policy.api import Observation, Policy, PolicyError, check_instruction

FORWARD_STEPS: int = 37
"""VLN-CE hand-crafted baseline: forward steps before STOP (Krantz et al. 2020, Sec. 5)."""
RANDOM_ACTIONS: tuple[str, ...] = (STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT)
RANDOM_PROBS: tuple[float, ...] = (0.02, 0.68, 0.15, 0.15)
"""VLN-CE random agent's action probabilities over :data:`RANDOM_ACTIONS`."""


class _Baseline(Policy):
    observes = False

    def __init__(self, views: int) -> None:
        if views not in valid_view_counts():
            raise PolicyError(f"views={views}: use one of {valid_view_counts()} (360/views must be a multiple of 15°)")
        self.views = views
        self.instruction: str | None = None
        self.steps_taken = 0

    def reset(self, instruction: str) -> None:
        self.instruction = check_instruction(instruction)
        self.steps_taken = 0

    def _check(self, obs: Observation | None) -> None:
        if self.instruction is None:
            raise PolicyError(f"{self.name}: call reset(instruction) before act()")
        if obs is not None:
            obs.check(self.views)


class ForwardPolicy(_Baseline):
    """MOVE_FORWARD ``steps`` times, then STOP (VLN-CE hand-crafted baseline).

    Args:
        steps: forward actions before STOP (>= 0; VLN-CE: 37).
        views: views requested per step (1 = front view; 12 = panorama).
    """

    def __init__(self, steps: int = FORWARD_STEPS, views: int = 1) -> None:
        super().__init__(views)
        self.steps = steps
        self.name = f"forward(steps={steps},views={views})"

    def act(self, obs: Observation | None = None) -> str:
        self._check(obs)
        a = MOVE_FORWARD if self.steps_taken < self.steps else STOP
        self.steps_taken += 1
        return a


class RandomPolicy(_Baseline):
    """VLN-CE random agent: i.i.d. actions with probabilities :data:`RANDOM_PROBS`.

    Args:
        seed: numpy Generator seed (the sequence restarts at each :meth:`reset`).
        views: views requested per step.
    """

    def __init__(self, seed: int = 0, views: int = 1) -> None:
        super().__init__(views)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.name = f"random(seed={seed},views={views})"

    def reset(self, instruction: str) -> None:
        super().reset(instruction)
        self.rng = np.random.default_rng(self.seed)

    def act(self, obs: Observation | None = None) -> str:
        self._check(obs)
        self.steps_taken += 1
        return RANDOM_ACTIONS[int(self.rng.choice(len(RANDOM_ACTIONS), p=RANDOM_PROBS))]
