"""The policy registry: one place that turns a policy spec string into a :class:`Policy`.

Used by ``havln-robot eval``, agent_node and the demo, so a name means the same policy everywhere.

Spec syntax: ``name[:key=value,key=value]`` for a policy without a checkpoint (a row of
:data:`BUILTINS`), ``http://HOST:PORT`` for a policy served by ``havln-robot policy-server``
(:mod:`havln_robot.policy.remote`), anything else is a checkpoint path or a file name in ``models/``
(:func:`load_policy`). The batch evaluator's privileged ``expert`` reads the simulator's ground
truth, so it is not a :class:`Policy` and stays in :mod:`havln_robot.sim.expert`.

To add a policy without a checkpoint: write its :class:`Policy` class and add ONE row to
:data:`BUILTINS` (its name, options with defaults and ranges, and a one-line summary).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from havln_robot.policy.api import Policy, PolicyError
from havln_robot.policy.baselines import FORWARD_STEPS, ForwardPolicy, RandomPolicy
from havln_robot.policy.remote import RemotePolicy, is_remote


@dataclass(frozen=True)
class Option:
    """One ``key=value`` option of a builtin policy.

    Attributes:
        cast: ``int`` or ``float`` (the value's type).
        default: used when the spec does not give the option.
        lo, hi: inclusive range, ``None`` = unbounded.
    """

    cast: type
    default: Any
    lo: float | None = None
    hi: float | None = None


@dataclass(frozen=True)
class Builtin:
    """A policy without a checkpoint.

    Attributes:
        factory: called with the parsed options as keyword arguments.
        options: option name → :class:`Option`; ``seed`` (when present) defaults to the caller's seed.
        summary: one line for ``--help`` texts and docs.
    """

    factory: Callable[..., Policy]
    options: dict[str, Option] = field(default_factory=dict)
    summary: str = ""


_VIEWS = Option(int, 1, 1, 24)

#: THE table of policies without a checkpoint (name → :class:`Builtin`).
BUILTINS: dict[str, Builtin] = {
    "forward": Builtin(
        ForwardPolicy,
        {"steps": Option(int, FORWARD_STEPS, 0, 10_000), "views": _VIEWS},
        f"VLN-CE hand-crafted baseline: {FORWARD_STEPS} MOVE_FORWARD then STOP",
    ),
    "random": Builtin(
        RandomPolicy,
        {"seed": Option(int, 0, 0, None), "views": _VIEWS},
        "VLN-CE random agent: P(STOP, FORWARD, LEFT, RIGHT) = (0.02, 0.68, 0.15, 0.15)",
    ),
}

#: Names that are not checkpoints: the builtins and the batch evaluator's privileged expert.
RESERVED_NAMES: tuple[str, ...] = ("expert", *BUILTINS)

#: The builtin run instead of a trained model when the HA-VLN data folder is absent (a trained
#: model tokenises instructions with the HA-R2R vocabulary, which ships with the data): the full
#: 12-view panorama path, then 8 forward steps and STOP.
NO_DATA_POLICY = "forward:steps=8,views=12"


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``name[:key=value,...]`` into the name and its raw options.

    Raises:
        PolicyError: an option is not ``key=value``.
    """
    name, _, rest = spec.partition(":")
    opts: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise PolicyError(f"policy {spec!r}: option {part!r} is not key=value (e.g. 'forward:steps=10,views=12')")
        opts[key.strip()] = value.strip()
    return name.strip(), opts


def is_builtin(spec: str) -> bool:
    """True when ``spec`` names a policy of :data:`BUILTINS` (with or without options)."""
    return isinstance(spec, str) and not is_remote(spec) and parse_spec(spec)[0] in BUILTINS


def builtin_policy(spec: str, seed: int | None = None) -> Policy:
    """Build a policy of :data:`BUILTINS` from its spec string.

    Args:
        spec: ``name[:key=value,...]``.
        seed: default for a ``seed`` option the spec does not give (the evaluator passes its
            per-episode seed); ``None`` keeps the table's default.

    Raises:
        PolicyError: unknown name or option, or an option value out of range.
    """
    name, raw = parse_spec(spec)
    if name not in BUILTINS:
        raise PolicyError(f"policy {spec!r}: unknown builtin; use one of {', '.join(BUILTINS)} or a checkpoint")
    b = BUILTINS[name]
    unknown = sorted(set(raw) - set(b.options))
    if unknown:
        raise PolicyError(f"policy {spec!r}: unknown option(s) {', '.join(unknown)}; {name} takes {', '.join(b.options) or 'none'}")
    kwargs: dict[str, Any] = {}
    for key, opt in b.options.items():
        if key not in raw:
            kwargs[key] = seed if key == "seed" and seed is not None else opt.default
            continue
        try:
            v = opt.cast(raw[key])
        except ValueError:
            kind = {"int": "whole number", "float": "number"}.get(opt.cast.__name__, opt.cast.__name__)
            raise PolicyError(f"policy {spec!r}: {key} must be a {kind}, got {raw[key]!r}") from None
        if (opt.lo is not None and v < opt.lo) or (opt.hi is not None and v > opt.hi):
            raise PolicyError(f"policy {spec!r}: {key}={v} is out of range [{opt.lo}, {opt.hi}]")
        kwargs[key] = v
    return b.factory(**kwargs)


def resolve_checkpoint(spec: str | os.PathLike[str]) -> Path:
    """Find the checkpoint file named by ``spec``.

    Order: an existing path as given; ``models_dir()/spec``; the same with ``.pt`` appended.

    Raises:
        PolicyError: ``spec`` is a reserved name, or nothing found (lists the checkpoints in ``models/``).
    """
    from havln_robot.paths import models_dir

    s = os.fspath(spec)
    if s in RESERVED_NAMES:
        raise PolicyError(f"{s!r} is not a checkpoint: it is a builtin policy (make_policy) or the evaluator's expert")
    cands = [Path(s).expanduser(), models_dir() / s, models_dir() / f"{s}.pt"]
    for c in cands:
        if c.is_file():
            return c
    from havln_robot.paths import input_file_problem

    if cands[0].exists():  # a folder (or a device) given as the checkpoint: say what it is
        raise PolicyError(f"policy checkpoint {s!r}: {input_file_problem(cands[0])}; give a .pt file, or a name in {models_dir()}")
    avail = sorted(p.name for p in models_dir().glob("*.pt")) if models_dir().is_dir() else []
    hint = f"available in {models_dir()}: {', '.join(avail)}" if avail else f"no .pt files in {models_dir()}"
    raise PolicyError(f"policy checkpoint {s!r} not found ({hint}); train one with 'havln-robot train'")


def load_policy(spec: str | os.PathLike[str], device: str = "cpu", **kwargs) -> Policy:
    """Build a ready-to-run :class:`Policy` from a checkpoint.

    Args:
        spec: path to a ``.pt`` checkpoint, or a file name (with or without ``.pt``) in ``models/``.
            Both havln_robot checkpoints (``{"format": "havln_robot.policy/1", "kind": ..., "config": ...,
            "state_dict": ...}``) and VLN-CE / HA-VLN-CMA checkpoints (``{"state_dict": ...}`` with
            ``net.*`` / ``action_distribution.*`` keys) are accepted.
        device: torch device string (``"cpu"``, ``"cuda"``).
        **kwargs: passed to the policy wrapper (e.g. ``vocab_path=``, ``embeddings_path=`` for CMA).

    Raises:
        PolicyError: file missing, unreadable / corrupt, of an unknown format, or whose weights do not
            match the model layout (one line naming the first mismatching keys).
    """
    from havln_robot.policy.checkpoint import build_policy  # torch: only when a checkpoint is loaded

    return build_policy(resolve_checkpoint(spec), device=device, **kwargs)


def make_policy(spec: str, device: str = "cpu", seed: int | None = None) -> Policy:
    """THE entry point: a builtin policy (:data:`BUILTINS`) or a checkpoint (:func:`load_policy`).

    Args:
        spec: ``forward[:steps=N,views=V]``, ``random[:seed=S,views=V]``, a checkpoint path or a name in ``models/``,
            or a policy server ``http://HOST:PORT[?timeout_s=T&wait_s=W]`` (:class:`~havln_robot.policy.remote.RemotePolicy`).
        device: torch device for checkpoints (a policy server picks its own).
        seed: default seed of a seeded builtin whose spec gives none (see :func:`builtin_policy`).

    Raises:
        PolicyError: empty spec, unknown builtin option, missing or invalid checkpoint (one line with the fix).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise PolicyError(f"policy is empty; give a checkpoint path, a name in models/, or one of {', '.join(BUILTINS)}")
    if is_builtin(spec):
        return builtin_policy(spec, seed=seed)
    if is_remote(spec):  # served by `havln-robot policy-server` on another machine
        return RemotePolicy(spec)
    return load_policy(spec, device=device)


def no_data_fallback(spec: str) -> tuple[str, str | None]:
    """The policy to run given what data is present: ``(spec, None)``, or the builtin and why.

    A trained model needs the HA-R2R instruction vocabulary from the HA-VLN data folder
    (:func:`havln_robot.policy.tokenizer.default_vocab_path`). Without it, ``launch``, ``demo`` and
    agent_node all run :data:`NO_DATA_POLICY` instead and say so in one WARN line (the returned
    reason). Builtin policies need no data and are returned unchanged, and so is a spec that names
    no checkpoint (loading it is an error that lists what is available).

    Args:
        spec: the configured policy (checkpoint path, a name in models/, or a builtin spec).

    Returns:
        ``(spec_to_run, reason)``; ``reason`` is None when nothing was replaced.
    """
    from havln_robot.paths import data_dir
    from havln_robot.policy.tokenizer import default_vocab_path

    if not isinstance(spec, str) or not spec.strip() or is_builtin(spec) or is_remote(spec):
        return spec, None  # a policy server has its own data
    try:
        resolve_checkpoint(spec)
    except PolicyError:
        return spec, None  # a wrong name stays an error (loading it says what is available)
    vocab = default_vocab_path()
    if vocab.is_file():
        return spec, None
    return NO_DATA_POLICY, (
        f"HA-VLN data not found at {data_dir()} (no {vocab.name}): running the baseline policy '{NO_DATA_POLICY}' "
        f"instead of '{spec}', which needs the HA-R2R vocabulary; get the data with `havln-robot data fetch` or set HAVLN_DATA"
    )
