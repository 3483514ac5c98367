"""Checkpoint IO for the policies: save, read (safely), recognise the layout, load strictly.

Two formats are read:

* havln_robot checkpoints written by :func:`save_checkpoint`::

      {"format": "havln_robot.policy/1", "kind": "small" | "cma", "config": {...},
       "state_dict": {...}, "meta": {...}}

* VLN-CE / HA-VLN-CMA checkpoints as the trainer saves them (``BaseVLNCETrainer.save_checkpoint`` in
  ``vlnce_baselines/common/base_il_trainer.py``)::

      {"state_dict": {...CMAPolicy keys...}, "config": <habitat.config.default.Config>,
       ["instruction_vocab": {"word_list": [...], "sha256": "..."}], ["optim_state", "epoch", "step_id"]}

**Nothing in a checkpoint runs.** Every file goes through torch's safe loader
(``torch.load(weights_only=True)``: tensors, plain containers and numbers only) with exactly one extra
class allow-listed through torch's own mechanism (``torch.serialization.safe_globals``): the trainer's
config class ``habitat.config.default.Config`` (a yacs ``CfgNode``), mapped to :class:`ReleasedConfig`,
which reads it as plain data. There is no fallback to an unrestricted unpickler: a file that pickles any
other callable (``os.system``, ``builtins.eval``, ...) is refused with one line naming it.

Checkpoints this project wrote before the RGB backbone took the released ``nn.Sequential`` layout
(``net.rgb_encoder.cnn.conv1.weight`` ... instead of ``cnn.0.weight``) are renamed on load by
:func:`map_legacy_keys` (a key map, one model class).

Every failure is a :class:`~havln_robot.policy.api.PolicyError` with one line naming the file and the fix.
"""

from __future__ import annotations

import os
import re
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

import torch

from havln_robot.paths import atomic_output
from havln_robot.policy.api import Policy, PolicyError

FORMAT = "havln_robot.policy/1"
KINDS = ("small", "cma")

#: Full name of the config class the VLN-CE / HA-VLN trainer pickles next to the weights
#: (``vlnce_baselines/config/default.py``: ``from habitat.config.default import Config as CN``;
#: habitat-lab 0.1.7 ``habitat/config/default.py``: ``class Config(yacs.config.CfgNode)``).
RELEASED_CONFIG_CLASS = "habitat.config.default.Config"


class ReleasedConfig:
    """Safe-loader stand-in for ``habitat.config.default.Config``: reads the pickled config as plain data.

    A yacs ``CfgNode`` is a ``dict`` subclass pickled as NEWOBJ + SETITEMS (its keys) + BUILD (its
    ``__immutable__`` / ``__deprecated_keys__`` / ``__renamed_keys__`` / ``__new_allowed__`` flags).
    torch's safe loader fills only exact ``dict`` / ``OrderedDict`` objects, so "constructing" this class
    returns an empty ``collections.OrderedDict``: the config arrives as nested OrderedDicts of plain
    values (e.g. ``doc["config"]["MODEL"]["INSTRUCTION_ENCODER"]["bidirectional"]``), the yacs flags in
    its ``__dict__``. No habitat / yacs code is imported or run.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> OrderedDict:  # type: ignore[misc]
        return OrderedDict()


#: The only globals allow-listed beyond torch's defaults (tensors, plain containers, numbers).
SAFE_GLOBALS: list[tuple[Any, str]] = [(ReleasedConfig, RELEASED_CONFIG_CLASS)]

#: ``net.rgb_encoder.cnn.<torchvision name>.`` (this project's checkpoints before the released layout)
#: -> ``net.rgb_encoder.cnn.<index>.`` (released VLN-CE ``nn.Sequential``; see
#: :data:`havln_robot.policy.resnet.TORCHVISION_CHILDREN`).
_RGB_PREFIX = "net.rgb_encoder.cnn."


def _legacy_rgb_names() -> dict[str, str]:
    from havln_robot.policy.resnet import TORCHVISION_CHILDREN

    return {name: str(idx) for idx, name in TORCHVISION_CHILDREN.items()}


def map_legacy_keys(state_dict: dict) -> tuple[dict, int]:
    """Rename legacy RGB-backbone keys to the released layout; other keys pass unchanged.

    ``net.rgb_encoder.cnn.conv1.weight`` -> ``net.rgb_encoder.cnn.0.weight``, ``...cnn.bn1.*`` -> ``cnn.1.*``,
    ``...cnn.layer1.N.*`` .. ``layer4`` -> ``cnn.4.N.*`` .. ``cnn.7.N.*`` (only the first name after ``cnn.``).

    Returns:
        (new state_dict in the same order, number of keys renamed).
    """
    names = _legacy_rgb_names()
    out: dict = {}
    renamed = 0
    for k, v in state_dict.items():
        if k.startswith(_RGB_PREFIX):
            head, _, rest = k[len(_RGB_PREFIX) :].partition(".")
            if head in names:
                k = f"{_RGB_PREFIX}{names[head]}.{rest}"
                renamed += 1
        out[k] = v
    return out, renamed


_GLOBAL_RE = re.compile(r"GLOBAL (\S+)")
_REFUSED = ("reduce", "build", "new object", "SETITEM", "append", "allowlist")


def _refusal(p: Path, exc: BaseException) -> PolicyError:
    """One-line PolicyError for a file torch's safe loader could not or would not read."""
    text = str(exc)
    inner = text.split("WeightsUnpickler error:", 1)[1] if "WeightsUnpickler error:" in text else text
    inner = " ".join(inner.split())
    m = _GLOBAL_RE.search(inner)
    if m:
        return PolicyError(
            f"checkpoint {p} pickles {m.group(1)}, which is never loaded (only tensors, plain data and "
            f"{RELEASED_CONFIG_CLASS} are); nothing in it was run -- use a checkpoint from a trusted trainer"
        )
    if "WeightsUnpickler error:" in text and any(w in inner for w in _REFUSED):
        return PolicyError(f"checkpoint {p} holds objects the safe loader refuses ({inner[:120]}); nothing in it was run")
    return PolicyError(
        f"checkpoint {p} is corrupt or not a torch checkpoint ({type(exc).__name__}: {inner[:120]}); re-download or retrain it"
    )


def read_checkpoint(path: str | os.PathLike[str]) -> dict:
    """Read a checkpoint file into a dict on the CPU through torch's safe loader.

    Only tensors, plain containers / numbers / strings and ``habitat.config.default.Config`` (read by
    :class:`ReleasedConfig` as nested OrderedDicts) are unpickled; nothing else is imported or called.

    Returns:
        The checkpoint dict; a bare state_dict (all values tensors) is wrapped as ``{"state_dict": ...}``.

    Raises:
        PolicyError: missing file; a pickled global other than the allow-listed config class (named,
            nothing run); not a torch checkpoint (truncated/corrupt); not a dict with ``state_dict``.
    """
    p = Path(path)
    if not p.is_file():
        from havln_robot.paths import input_file_problem

        raise PolicyError(f"checkpoint {p}: {input_file_problem(p)}; give a .pt path or a file name in models/")
    try:
        with torch.serialization.safe_globals(SAFE_GLOBALS), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected pickle protocol")  # the error below says it
            doc = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any failure of the safe loader: one line, no fallback
        raise _refusal(p, exc) from None
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


#: Allowed range of every config field, per checkpoint kind: (type, low, high), inclusive. A value
#: outside is refused before any model is built (a bad size is an allocation error or a crash later).
CONFIG_LIMITS: dict[str, dict[str, tuple[type, float, float]]] = {
    "small": {
        "views": (int, 1, 72),
        "res": (int, 4, 512),
        "use_rgb": (bool, 0, 1),
        "view_dim": (int, 1, 4096),
        "vocab_rows": (int, 2, 200_000),
        "embedding_size": (int, 1, 4096),
        "instr_hidden": (int, 1, 4096),
        "hidden": (int, 1, 8192),
        "max_steps": (int, 1, 1000),
        "max_decisions": (int, 1, 100_000),
        "camera_hfov_deg": (float, 0.0, 90.0),
        "camera_vfov_deg": (float, 0.0, 90.0),
    },
    "cma": {
        "vocab_rows": (int, 2, 200_000),
        "embedding_size": (int, 1, 4096),
        "instruction_hidden": (int, 1, 4096),
        "bidirectional": (bool, 0, 1),
        "rgb_output": (int, 1, 8192),
        "depth_output": (int, 1, 8192),
        "depth_size": (int, 1, 8192),
        "hidden_size": (int, 1, 8192),
        "prev_action_dim": (int, 1, 4096),
        "num_actions": (int, 1, 64),
    },
}
#: Largest instruction embedding table (``vocab_rows * embedding_size`` floats; the release: 5401 x 50).
MAX_EMBEDDING_ELEMENTS = 50_000_000


def check_config(kind: str, config: Any, where: str) -> dict:
    """Check a checkpoint's ``config`` field by field against :data:`CONFIG_LIMITS` before any allocation.

    Args:
        kind: ``"small"`` or ``"cma"``.
        config: the checkpoint's config mapping (missing fields take the dataclass defaults).
        where: the checkpoint file, for messages.

    Returns:
        The config as a plain dict (floats for float fields given as integers).

    Raises:
        PolicyError: one line naming the file, the field, its value and the allowed range: not a
            mapping, an unknown field, a wrong type, a value out of range, or an embedding table over
            :data:`MAX_EMBEDDING_ELEMENTS`.
    """
    from havln_robot.quoting import quote

    limits = CONFIG_LIMITS[kind]
    if not isinstance(config, dict):
        raise PolicyError(f"checkpoint {where}: config must be a mapping of {kind} hyper-parameters, got {type(config).__name__}")
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key not in limits:
            raise PolicyError(f"checkpoint {where}: config has unknown field {quote(key)}; the {kind} fields are {', '.join(limits)}")
        typ, lo, hi = limits[key]
        if typ is bool:
            if not isinstance(value, bool):
                raise PolicyError(f"checkpoint {where}: config.{key} is {quote(value)}; expected true or false")
            out[key] = value
            continue
        ok_type = isinstance(value, int) if typ is int else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok_type:
            want = "a whole number" if typ is int else "a number"
            raise PolicyError(f"checkpoint {where}: config.{key} is {quote(value)}; expected {want} in [{lo}, {hi}]")
        if not lo <= value <= hi:  # NaN fails too
            raise PolicyError(f"checkpoint {where}: config.{key} is {quote(value)}; allowed range [{lo}, {hi}]")
        out[key] = float(value) if typ is float else int(value)
    rows, size = out.get("vocab_rows"), out.get("embedding_size")
    if rows is not None and size is not None and rows * size > MAX_EMBEDDING_ELEMENTS:
        raise PolicyError(
            f"checkpoint {where}: config.vocab_rows x config.embedding_size = {rows} x {size} exceeds "
            f"{MAX_EMBEDDING_ELEMENTS} embedding values; not an instruction embedding of this project"
        )
    return out


def check_state_values(state_dict: dict, where: str) -> None:
    """Every state_dict key a string and every value a tensor.

    Raises:
        PolicyError: one line naming the file and the first bad key.
    """
    from havln_robot.quoting import quote

    for k, v in state_dict.items():
        if not isinstance(k, str):
            raise PolicyError(f"checkpoint {where}: state_dict key {quote(k)} is not a parameter name; the file is damaged")
        if not isinstance(v, torch.Tensor):
            raise PolicyError(f"checkpoint {where}: state_dict[{quote(k)}] is {type(v).__name__}, not a tensor; the file is damaged")


def load_state_strict(model: torch.nn.Module, state_dict: dict, where: str) -> None:
    """``model.load_state_dict(state_dict, strict=True)`` with a one-line error on any mismatch.

    Raises:
        PolicyError: a value that is not a tensor, missing / unexpected keys or a shape mismatch
            (the first few are named).
    """
    check_state_values(state_dict, where)
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
    doc = {"format": FORMAT, "kind": kind, "config": dict(config), "state_dict": model.state_dict(), "meta": dict(meta or {})}
    with atomic_output(p) as tmp:
        torch.save(doc, tmp)
    return p


def check_checkpoint_vocab(doc: dict, vocab: Any, where: str, rows: int) -> None:
    """Check the instruction vocabulary against the checkpoint before any step runs.

    Args:
        doc: the checkpoint dict; its optional ``instruction_vocab`` (``{"word_list", "sha256"}``, as
            HA-VLN's trainer saves it) must name the same word list as ``vocab``.
        vocab: the :class:`~havln_robot.policy.tokenizer.Vocabulary` the policy will tokenise with.
        where: file name for the message.
        rows: embedding rows of the model (token ids must be < rows).

    Raises:
        PolicyError: different word list (fingerprints named) or more words than embedding rows.
    """
    from havln_robot.policy.tokenizer import fingerprint

    meta = doc.get("instruction_vocab")
    if isinstance(meta, dict) and isinstance(meta.get("word_list"), list):
        want, got = fingerprint(meta["word_list"]), fingerprint(vocab.words)
        if want != got:
            raise PolicyError(
                f"checkpoint {where} was trained with another instruction vocabulary ({len(meta['word_list'])} words, "
                f"sha256 {want[:12]}) than the one loaded ({len(vocab)} words, sha256 {got[:12]}); use the data folder it was trained with"
            )
    if len(vocab) > rows:
        raise PolicyError(
            f"checkpoint {where}: the vocabulary has {len(vocab)} words but the embedding only {rows} rows; use its vocabulary"
        )


def build_model(doc: dict, where: str) -> torch.nn.Module:
    """Build the network a checkpoint dict describes and load its weights strictly (eval mode).

    CMA state dicts in this project's earlier RGB naming are renamed by :func:`map_legacy_keys` first.

    Returns:
        :class:`~havln_robot.policy.cma.CMAModel` or :class:`~havln_robot.policy.small.SmallNet`.

    Raises:
        PolicyError: see :func:`detect_kind`, :func:`load_state_strict`; a bad ``config`` field
            (:func:`check_config`: named with its allowed range, before the model is built) or a
            state_dict value that is not a tensor (:func:`check_state_values`).
    """
    kind = detect_kind(doc)
    if kind == "cma":
        from havln_robot.policy.cma import CMAConfig, CMAModel

        check_state_values(doc["state_dict"], where)
        state, _ = map_legacy_keys(doc["state_dict"])
        if "format" in doc:
            cfg = CMAConfig(**check_config("cma", doc.get("config", {}), where))
        else:
            inferred = cma_config_from_state(state)
            cfg = CMAConfig(**check_config("cma", inferred.to_dict(), f"{where} (inferred from its tensor shapes)"))
        model = CMAModel(cfg)
        load_state_strict(model, state, where)
        return model.eval()
    from havln_robot.policy.small import SmallConfig, SmallNet

    check_state_values(doc["state_dict"], where)
    cfg = SmallConfig.from_dict(check_config("small", doc.get("config", {}), where))
    model = SmallNet(cfg)
    load_state_strict(model, doc["state_dict"], where)
    return model.eval()


def check_device(device: str) -> torch.device:
    """The torch device named by ``device``, checked to exist on this machine before a model is loaded.

    Raises:
        PolicyError: one line naming the device and the fix: not a device string, a CUDA / MPS
            device this torch build or machine does not have, or a GPU index past the last one.
    """
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise PolicyError(f"device {device!r}: not a torch device; give cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
            raise PolicyError(f"device {device!r}: {why} (torch {torch.__version__}); use device cpu, or install torch with CUDA")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise PolicyError(f"device {device!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s), numbered from 0")
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise PolicyError(f"device {device!r}: MPS (Apple GPU) is not available here; use device cpu")
    elif dev.type not in ("cpu", "cuda", "mps"):
        raise PolicyError(f"device {device!r}: unsupported device type {dev.type!r}; give cpu, cuda, cuda:N or mps")
    return dev


def build_policy(path: str | os.PathLike[str], device: str = "cpu", **kwargs: Any) -> Policy:
    """Read ``path`` and return the matching ready-to-run :class:`Policy` (weights loaded strictly).

    Keyword arguments: ``vocab_path`` (HA-R2R vocabulary JSON; default the data folder's).

    Raises:
        PolicyError: see :func:`check_device`, :func:`read_checkpoint`, :func:`build_model`, :func:`check_checkpoint_vocab`.
    """
    from havln_robot.policy.tokenizer import Vocabulary

    check_device(device)
    doc = read_checkpoint(path)
    detect_kind(doc)
    vocab = Vocabulary.load(kwargs.get("vocab_path"))
    name = Path(path).stem
    model = build_model(doc, str(path))
    from havln_robot.policy.cma import CMAModel

    if isinstance(model, CMAModel):
        from havln_robot.policy.cma import CMAPolicy

        check_checkpoint_vocab(doc, vocab, str(path), model.cfg.vocab_rows)
        return CMAPolicy(model, vocab=vocab, device=device, name=name)
    from havln_robot.policy.small import SmallPolicy

    return SmallPolicy(model, vocab=vocab, device=device, name=name)
