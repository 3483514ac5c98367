"""Builtin baseline policies for agent_node: ``forward`` and ``random`` (pure Python).

:func:`havln_robot.policy.api.load_policy` loads trained checkpoints only (its baselines live in the
evaluator), so agent_node resolves these names itself. They are smoke-test and reference
behaviours, e.g. ``policy: "forward:steps=8,views=12"`` runs the full panorama path with a trivial
decision rule.

Spec syntax: ``name[:key=value,key=value]``.

* ``forward`` -- MOVE_FORWARD ``steps`` times (default 10), then STOP; ``views`` (default 1).
* ``random`` -- uniform over MOVE_FORWARD / TURN_LEFT / TURN_RIGHT, STOP with probability
  ``stop_prob`` per step (default 0.02, mean 50 steps), seeded by ``seed`` (default 0); ``views`` (default 1).
"""

from __future__ import annotations

import numpy as np

from havln_robot.actions import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from havln_robot.paths import data_dir
from havln_robot.perception.panorama import valid_view_counts
from havln_robot.policy.api import Observation, Policy, PolicyError, check_instruction, resolve_spec
from havln_robot.policy.tokenizer import default_vocab_path

BUILTIN_NAMES = ("forward", "random")

#: The baseline run instead of a trained model when the HA-VLN data folder is absent (a trained
#: model tokenises instructions with the HA-R2R vocabulary, which ships with the data): the full
#: 12-view panorama path, then 8 forward steps and STOP.
NO_DATA_POLICY = "forward:steps=8,views=12"


def _parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    name, _, rest = spec.partition(":")
    opts: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise PolicyError(f"policy {spec!r}: option {part!r} is not key=value (e.g. 'forward:steps=10,views=12')")
        opts[key.strip()] = value.strip()
    return name.strip(), opts


def _opt(spec: str, opts: dict[str, str], key: str, cast, default, lo=None, hi=None):
    if key not in opts:
        return default
    try:
        v = cast(opts.pop(key))
    except ValueError:
        raise PolicyError(f"policy {spec!r}: {key} must be a {cast.__name__}") from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise PolicyError(f"policy {spec!r}: {key}={v} is out of range [{lo}, {hi}]")
    return v


class _Baseline(Policy):
    def __init__(self, views: int) -> None:
        if views not in valid_view_counts():
            raise PolicyError(f"views={views}: use one of {valid_view_counts()} (360/views must be a multiple of 15°)")
        self.views = views
        self.instruction: str | None = None
        self.steps_taken = 0

    def reset(self, instruction: str) -> None:
        self.instruction = check_instruction(instruction)
        self.steps_taken = 0

    def _check(self, obs: Observation) -> None:
        if self.instruction is None:
            raise PolicyError(f"{self.name}: call reset(instruction) before act()")
        obs.check(self.views)


class ForwardPolicy(_Baseline):
    """MOVE_FORWARD ``steps`` times, then STOP (a smoke-test baseline).

    Args:
        steps: forward actions before STOP (>= 0).
        views: views requested per step (1 = front view; 12 = panorama).
    """

    def __init__(self, steps: int = 10, views: int = 1) -> None:
        super().__init__(views)
        self.steps = steps
        self.name = f"forward(steps={steps},views={views})"

    def act(self, obs: Observation) -> str:
        self._check(obs)
        a = MOVE_FORWARD if self.steps_taken < self.steps else STOP
        self.steps_taken += 1
        return a


class RandomPolicy(_Baseline):
    """Uniform random over MOVE_FORWARD/TURN_LEFT/TURN_RIGHT; STOP with probability ``stop_prob``.

    Args:
        seed: numpy Generator seed (the sequence restarts at each reset()).
        stop_prob: per-step STOP probability in [0, 1].
        views: views requested per step.
    """

    def __init__(self, seed: int = 0, stop_prob: float = 0.02, views: int = 1) -> None:
        super().__init__(views)
        self.seed, self.stop_prob = seed, stop_prob
        self.rng = np.random.default_rng(seed)
        self.name = f"random(seed={seed},stop_prob={stop_prob:g},views={views})"

    def reset(self, instruction: str) -> None:
        super().reset(instruction)
        self.rng = np.random.default_rng(self.seed)

    def act(self, obs: Observation) -> str:
        self._check(obs)
        self.steps_taken += 1
        if self.rng.random() < self.stop_prob:
            return STOP
        return (MOVE_FORWARD, TURN_LEFT, TURN_RIGHT)[int(self.rng.integers(3))]


def is_builtin(spec: str) -> bool:
    """True when ``spec`` names a builtin baseline (``forward`` / ``random`` with optional options)."""
    return _parse_spec(spec)[0] in BUILTIN_NAMES


def builtin_policy(spec: str) -> Policy:
    """Build a builtin baseline from its spec string.

    Raises:
        PolicyError: unknown name or option, or an option value out of range.
    """
    name, opts = _parse_spec(spec)
    if name == "forward":
        pol: Policy = ForwardPolicy(
            steps=_opt(spec, opts, "steps", int, 10, 0, 10_000),
            views=_opt(spec, opts, "views", int, 1, 1, 24),
        )
    elif name == "random":
        pol = RandomPolicy(
            seed=_opt(spec, opts, "seed", int, 0),
            stop_prob=_opt(spec, opts, "stop_prob", float, 0.02, 0.0, 1.0),
            views=_opt(spec, opts, "views", int, 1, 1, 24),
        )
    else:
        raise PolicyError(f"policy {spec!r}: unknown builtin; use one of {', '.join(BUILTIN_NAMES)} or a checkpoint")
    if opts:
        raise PolicyError(f"policy {spec!r}: unknown option(s) {', '.join(sorted(opts))}")
    return pol


def make_policy(spec: str, device: str = "cpu") -> Policy:
    """A builtin baseline, or a checkpoint through :func:`havln_robot.policy.api.load_policy`.

    Raises:
        PolicyError: unknown builtin / missing or invalid checkpoint (one line with the fix).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise PolicyError("policy is empty; give a checkpoint path, a name in models/, or 'forward' / 'random'")
    if is_builtin(spec):
        return builtin_policy(spec)
    from havln_robot.policy.api import load_policy

    return load_policy(spec, device=device)


def no_data_fallback(spec: str) -> tuple[str, str | None]:
    """The policy to run given what data is present: ``(spec, None)``, or the baseline and why.

    A trained model needs the HA-R2R instruction vocabulary from the HA-VLN data folder
    (:func:`havln_robot.policy.tokenizer.default_vocab_path`). Without it, ``launch``, ``demo`` and
    agent_node all run :data:`NO_DATA_POLICY` instead and say so in one WARN line (the returned
    reason). Builtin baselines need no data and are returned unchanged, and so is a spec that names
    no checkpoint (loading it is an error that lists what is available).

    Args:
        spec: the configured policy (checkpoint path, a name in models/, or a builtin spec).

    Returns:
        ``(spec_to_run, reason)``; ``reason`` is None when nothing was replaced.
    """
    if not isinstance(spec, str) or not spec.strip() or is_builtin(spec):
        return spec, None
    try:
        resolve_spec(spec)
    except PolicyError:
        return spec, None  # a wrong name stays an error (loading it says what is available)
    vocab = default_vocab_path()
    if vocab.is_file():
        return spec, None
    return NO_DATA_POLICY, (
        f"HA-VLN data not found at {data_dir()} (no {vocab.name}): running the baseline policy '{NO_DATA_POLICY}' "
        f"instead of '{spec}', which needs the HA-R2R vocabulary; get the data with `havln-robot data fetch` or set HAVLN_DATA"
    )
