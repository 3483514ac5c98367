"""The policy contract shared by the agent node, the evaluator and the trainer (pure Python + numpy).

A :class:`Policy` turns a natural-language instruction and, each step, an :class:`Observation`
(RGB-D views already preprocessed to the HA-VLN-CE model format by
``havln_robot.perception.preprocess``) into one action literal of :data:`havln_robot.actions.ACTIONS`.

Policies declare what they see through :attr:`Policy.views`:

* ``views == 1`` -- the front view each step (the VLN-CE / HA-VLN-CE CMA layout was trained so);
* ``views == N > 1`` -- a panorama of ``N`` views, ``headings[i]`` giving each view's yaw relative
  to the body heading. The agent captures a panorama only when the policy asks for one.

:mod:`havln_robot.policy.registry` builds a policy from a spec: a checkpoint path, a file name under
``models/``, or a policy without a checkpoint (``forward``, ``random``).

Sources: image sizes and depth normalisation are the HA-VLN-CE / VLN-CE task configuration
(RGB 224x224, depth 256x256 clipped to [0, 10] m and divided by 10), HA-VLN 2.0 (arXiv 2503.14229) Sec. 4.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from havln_robot.actions import ACTIONS
from havln_robot.text import is_blank

RGB_SHAPE: tuple[int, int, int] = (224, 224, 3)
"""Per-view model RGB shape (H, W, C), uint8 (VLN-CE ``RGB_SENSOR`` 224x224)."""
DEPTH_SHAPE: tuple[int, int, int] = (256, 256, 1)
"""Per-view model depth shape (H, W, 1), float32 in [0, 1] = metres / 10 (VLN-CE ``DEPTH_SENSOR``)."""


class PolicyError(ValueError):
    """A policy cannot be loaded or was given bad input; the message names the field and the fix."""


def check_finite(what: str, values: object) -> None:
    """Raise :class:`PolicyError` when ``values`` (a tensor or array: logits, features) holds NaN or
    inf: argmax over NaN silently picks index 0 and the robot would drive on garbage.

    Args:
        what: name for the message (e.g. ``"CMA action logits"``).
        values: anything ``np.asarray`` accepts (a CPU or GPU torch tensor is moved to the CPU).
    """
    detach = getattr(values, "detach", None)
    arr = np.asarray(detach().float().cpu() if callable(detach) else values, dtype=np.float64)
    if not np.isfinite(arr).all():
        bad = int((~np.isfinite(arr)).sum())
        raise PolicyError(
            f"non-finite policy output: {what} has {bad} NaN/inf value(s) of {arr.size}; "
            "the checkpoint weights or the observation are corrupt -- episode aborted"
        )


@dataclass
class Observation:
    """What a policy sees at one decision step.

    Attributes:
        rgb: (N, 224, 224, 3) uint8 colour views, 90 deg HFOV, view ``i`` taken at ``headings[i]``.
        depth: (N, 256, 256, 1) float32 depth in [0, 1] (metres clipped to [0, 10], divided by 10).
        headings: (N,) float32 yaw of each view in rad relative to the current body heading
            (0 = straight ahead, counter-clockwise positive, REP 103).
        step: 0-based index of this decision in the episode (number of actions already taken).
    """

    rgb: np.ndarray
    depth: np.ndarray
    headings: np.ndarray
    step: int = 0

    @property
    def n_views(self) -> int:
        """Number of views ``N``."""
        return int(np.shape(self.rgb)[0]) if np.ndim(self.rgb) == 4 else 0

    def check(self, views: int | None = None) -> Observation:
        """Validate shapes, dtypes and ranges; return ``self``.

        Args:
            views: the number of views the consuming policy expects (``None``: any).

        Raises:
            PolicyError: one line naming the offending field and the expected value.
        """
        rgb, depth, headings = self.rgb, self.depth, self.headings
        if not isinstance(rgb, np.ndarray) or rgb.ndim != 4 or rgb.shape[1:] != RGB_SHAPE:
            raise PolicyError(
                f"Observation.rgb must be an (N, 224, 224, 3) uint8 array, got {_describe(rgb)}; preprocess with to_model_rgb()"
            )
        if rgb.dtype != np.uint8:
            raise PolicyError(f"Observation.rgb must be uint8, got {rgb.dtype}; preprocess with to_model_rgb()")
        n = rgb.shape[0]
        if n < 1:
            raise PolicyError("Observation.rgb holds no view; give at least the front view")
        if not isinstance(depth, np.ndarray) or depth.shape != (n, *DEPTH_SHAPE):
            raise PolicyError(
                f"Observation.depth must be ({n}, 256, 256, 1) float32, got {_describe(depth)}; preprocess with to_model_depth()"
            )
        if depth.dtype != np.float32:
            raise PolicyError(f"Observation.depth must be float32, got {depth.dtype}; preprocess with to_model_depth()")
        if depth.size and (not np.isfinite(depth).all() or depth.min() < 0.0 or depth.max() > 1.0):
            raise PolicyError("Observation.depth must be finite and in [0, 1] (metres clipped to 0..10 and divided by 10)")
        headings = np.asarray(headings)
        if headings.shape != (n,) or not np.isfinite(headings).all():
            raise PolicyError(f"Observation.headings must be ({n},) finite rad, got {_describe(headings)}")
        if isinstance(self.step, bool) or not isinstance(self.step, (int, np.integer)) or self.step < 0:
            raise PolicyError(f"Observation.step must be a non-negative int, got {self.step!r}")
        if views is not None and n != views:
            raise PolicyError(f"policy expects {views} view(s) per step, Observation has {n}; capture {views} view(s)")
        return self


def _describe(x: object) -> str:
    if isinstance(x, np.ndarray):
        return f"shape {x.shape} {x.dtype}"
    return type(x).__name__


class Policy(abc.ABC):
    """An instruction-following navigation policy (stateful over one episode).

    Attributes:
        views: views wanted per step (1 = front view; N > 1 = panorama of N views).
        name: short human-readable name (shown in logs and evaluation tables).
    """

    views: int = 1
    name: str = "policy"
    observes: bool = True
    """False for policies that ignore what they see (they accept ``obs=None``; nothing is rendered for them)."""

    @abc.abstractmethod
    def reset(self, instruction: str) -> None:
        """Start a new episode with ``instruction`` (clears recurrent state and previous action).

        Raises:
            PolicyError: ``instruction`` is not a non-empty string.
        """

    @abc.abstractmethod
    def act(self, obs: Observation) -> str:
        """Return the next action literal (one of :data:`havln_robot.actions.ACTIONS`) for ``obs``.

        Raises:
            PolicyError: ``obs`` does not match :attr:`views` or the model input format, or
                :meth:`reset` was not called first.
        """

    def on_action_result(self, action: str, outcome: str) -> None:  # noqa: B027 - optional hook
        """Told how the robot executed the action :meth:`act` returned (optional hook).

        Args:
            action: the action literal that was executed.
            outcome: motion_node's outcome (``ok``, ``collision``, ``timeout``, ``slip``,
                ``stall``, ``aborted``, ``unsupported``; see havln_robot.motion.executor.OUTCOMES).
                ``collision`` covers an action refused before it started because an obstacle or
                a person was in the way, and one stopped by contact.

        A policy that plans several actions ahead (a macro) should drop the rest of the plan when
        an action did not complete, so that the next :meth:`act` decides from a new observation.
        Called on the agent's episode thread, never while :meth:`act` runs, and not for STOP.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (optional)."""


def check_instruction(instruction: object) -> str:
    """Return ``instruction`` if it is a non-empty string (:func:`havln_robot.text.is_blank`: zero-width
    or format characters alone are empty too).

    Raises:
        PolicyError: otherwise.
    """
    if not isinstance(instruction, str) or is_blank(instruction):
        raise PolicyError(f"instruction must be a non-empty string, got {instruction!r}")
    return instruction


def check_action(action: str) -> str:
    """Return ``action`` if it is one of the six literals (guards policy outputs)."""
    if action not in ACTIONS:
        raise PolicyError(f"policy produced {action!r}, not one of {', '.join(ACTIONS)}")
    return action
