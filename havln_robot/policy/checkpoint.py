"""Checkpoint IO for the policies: save, read (tolerantly), recognise the layout, load strictly.

Two formats are read:

* havln_robot checkpoints written by :func:`save_checkpoint`::

      {"format": "havln_robot.policy/1", "kind": "small" | "cma", "config": {...},
       "state_dict": {...}, "meta": {...}}

* VLN-CE / HA-VLN-CMA checkpoints: a dict with ``"state_dict"`` whose keys are the ``CMAPolicy`` ones
  (``net.rgb_encoder.cnn.*``, ``action_distribution.linear.*``); other entries (``config``,
  ``optim_state``, ...) are ignored. Their pickled habitat ``Config`` objects are read without
  habitat installed (unknown classes are replaced by inert stand-ins).

Every failure is a :class:`~havln_robot.policy.api.PolicyError` with one line naming the file and the fix.
"""

from __future__ import annotations

import os
import pickle
import types
from pathlib import Path
from typing import Any

import torch

from havln_robot.policy.api import Policy, PolicyError

FORMAT = "havln_robot.policy/1"
KINDS = ("small", "cma")


class _Stub(dict):
    """Inert stand-in for a pickled object whose class is not importable here (e.g. habitat ``Config``,
    a ``dict`` subclass); it accepts any constructor arguments, items, list appends and state."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.args = args

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def append(self, item: Any) -> None:
        self.setdefault("_items", []).append(item)

    def extend(self, items: Any) -> None:
        self.setdefault("_items", []).extend(items)


class _TolerantUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError):
            return type(name, (_Stub,), {"__module__": "havln_robot.policy.checkpoint._stubs"})


_tolerant_pickle = types.SimpleNamespace(Unpickler=_TolerantUnpickler, load=pickle.load, __name__="havln_tolerant_pickle")


def read_checkpoint(path: str | os.PathLike[str]) -> dict:
    """Read a checkpoint file into a dict on the CPU.

    Tries torch's safe ``weights_only`` loader first; files that pickle other objects (VLN-CE saves its
    yacs ``Config``) are read with a loader that replaces classes it cannot import by inert stubs.

    Raises:
        PolicyError: missing file, not a torch checkpoint (truncated/corrupt), or not a dict with ``state_dict``.
    """
    p = Path(path)
    if not p.is_file():
        raise PolicyError(f"checkpoint {p} not found; give a .pt path or a file name in models/")
    try:
        doc = torch.load(p, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - any unpickling failure: retry tolerantly, then report
        try:
            doc = torch.load(p, map_location="cpu", weights_only=False, pickle_module=_tolerant_pickle)
        except Exception as exc:  # noqa: BLE001
            raise PolicyError(
                f"checkpoint {p} is corrupt or not a torch checkpoint ({type(exc).__name__}: {str(exc)[:120]}); re-download or retrain it"
            ) from None
    if isinstance(doc, dict) and "state_dict" not in doc and doc and all(isinstance(v, torch.Tensor) for v in doc.values()):
        doc = {"state_dict": doc}  # a bare state_dict
    if not isinstance(doc, dict) or not isinstance(doc.get("state_dict"), dict):
        raise PolicyError(f"checkpoint {p} has no 'state_dict' entry; expected {{'state_dict': ...}} (VLN-CE) or a havln_robot checkpoint")
    return doc


def detect_kind(doc: dict) -> str:
    """Return ``"small"`` or ``"cma"`` for a checkpoint dict.

    Raises:
        PolicyError: the format tag or the key layout is not recognised.
    """
    if "format" in doc:
        if doc["format"] != FORMAT:
            raise PolicyError(f"checkpoint format {doc['format']!r} is not supported (expected {FORMAT!r}); retrain with this version")
        kind = doc.get("kind")
        if kind not in KINDS:
            raise PolicyError(f"checkpoint kind {kind!r} unknown; expected one of {', '.join(KINDS)}")
        return kind
    keys = doc["state_dict"].keys()
    if any(k.startswith("net.rgb_encoder.cnn.") for k in keys) and "action_distribution.linear.weight" in keys:
        return "cma"
    sample = ", ".join(list(keys)[:3])
    raise PolicyError(
        f"checkpoint layout not recognised (first keys: {sample}); expected VLN-CE CMAPolicy keys (net.*, action_distribution.linear.*)"
    )


def load_state_strict(model: torch.nn.Module, state_dict: dict, where: str) -> None:
    """``model.load_state_dict(state_dict, strict=True)`` with a one-line error on any mismatch.

    Raises:
        PolicyError: missing / unexpected keys or a shape mismatch (the first few are named).
    """
    own = model.state_dict()
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    shapes = [
        f"{k} {tuple(state_dict[k].shape)} vs {tuple(own[k].shape)}"
        for k in own
        if k in state_dict and tuple(own[k].shape) != tuple(state_dict[k].shape)
    ]
    if missing or unexpected or shapes:
        parts = []
        if missing:
            parts.append(f"{len(missing)} missing (e.g. {', '.join(missing[:3])})")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected (e.g. {', '.join(unexpected[:3])})")
        if shapes:
            parts.append(f"{len(shapes)} shape mismatches (e.g. {'; '.join(shapes[:2])})")
        raise PolicyError(f"checkpoint {where} does not match the {type(model).__name__} layout: {'; '.join(parts)}")
    model.load_state_dict(state_dict, strict=True)


def cma_config_from_state(state_dict: dict):
    """Infer a :class:`~havln_robot.policy.cma.CMAConfig` from a CMA state_dict's tensor shapes."""
    from havln_robot.policy.cma import CMAConfig

    sd = state_dict
    kw: dict[str, Any] = {}
    emb = sd.get("net.instruction_encoder.embedding_layer.weight")
    if emb is not None:
        kw["vocab_rows"], kw["embedding_size"] = int(emb.shape[0]), int(emb.shape[1])
    hh = sd.get("net.instruction_encoder.encoder_rnn.weight_hh_l0")
    if hh is not None:
        kw["instruction_hidden"] = int(hh.shape[1])
    kw["bidirectional"] = "net.instruction_encoder.encoder_rnn.weight_hh_l0_reverse" in sd
    head = sd.get("action_distribution.linear.weight")
    if head is not None:
        kw["num_actions"], kw["hidden_size"] = int(head.shape[0]), int(head.shape[1])
    return CMAConfig(**kw)


def save_checkpoint(path: str | os.PathLike[str], model: torch.nn.Module, kind: str, config: dict, meta: dict | None = None) -> Path:
    """Write a havln_robot checkpoint (see module docstring); returns the path.

    Raises:
        PolicyError: ``kind`` unknown.
    """
    if kind not in KINDS:
        raise PolicyError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    doc = {"format": FORMAT, "kind": kind, "config": dict(config), "state_dict": model.state_dict(), "meta": dict(meta or {})}
    tmp = p.with_suffix(p.suffix + ".tmp")
    torch.save(doc, tmp)
    os.replace(tmp, p)
    return p


def build_policy(path: str | os.PathLike[str], device: str = "cpu", **kwargs: Any) -> Policy:
    """Read ``path`` and return the matching ready-to-run :class:`Policy` (weights loaded strictly).

    Keyword arguments: ``vocab_path`` (HA-R2R vocabulary JSON; default the data folder's).

    Raises:
        PolicyError: see :func:`read_checkpoint`, :func:`detect_kind`, :func:`load_state_strict`.
    """
    from havln_robot.policy.tokenizer import Vocabulary

    doc = read_checkpoint(path)
    kind = detect_kind(doc)
    vocab = Vocabulary.load(kwargs.get("vocab_path"))
    name = Path(path).stem
    if kind == "cma":
        from havln_robot.policy.cma import CMAConfig, CMAModel, CMAPolicy

        if "format" in doc:
            try:
                cfg = CMAConfig(**doc.get("config", {}))
            except TypeError as exc:
                raise PolicyError(f"checkpoint {path}: bad CMA config ({exc})") from None
        else:
            cfg = cma_config_from_state(doc["state_dict"])
        model = CMAModel(cfg)
        load_state_strict(model, doc["state_dict"], str(path))
        return CMAPolicy(model, vocab=vocab, device=device, name=name)
    from havln_robot.policy.small import SmallConfig, SmallNet, SmallPolicy

    try:
        cfg = SmallConfig.from_dict(doc.get("config", {}))
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"checkpoint {path}: bad small-model config ({exc})") from None
    model = SmallNet(cfg)
    load_state_strict(model, doc["state_dict"], str(path))
    return SmallPolicy(model, vocab=vocab, device=device, name=name)
