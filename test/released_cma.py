"""A checkpoint in the layout the released HA-VLN-CMA trainer writes, built WITHOUT this project's model.

The key list and shapes are derived from the public trainer code's module structure (read, not copied):

* ``CMAPolicy`` = habitat-baselines-style ``ILPolicy``: ``net`` (``CMANet``) + ``action_distribution``
  (``CategoricalNet`` -> ``linear``) -- VLN-CE ``vlnce_baselines/models/{cma_policy,policy}.py``,
  habitat-lab v0.1.7 ``habitat_baselines/utils/common.py``.
* ``CMANet.__init__`` registers, in order: ``instruction_encoder``, ``depth_encoder``, ``rgb_encoder``,
  ``prev_action_embedding`` Embedding(num_actions + 1, 32), ``rgb_linear`` [AdaptiveAvgPool1d, Flatten,
  Linear, ReLU], ``depth_linear`` [Flatten, Linear, ReLU], ``state_encoder`` (``build_rnn_state_encoder``
  -> ``.rnn`` GRU), ``rgb_kv`` / ``depth_kv`` Conv1d(k=1), ``state_q``, ``text_k`` Conv1d, ``text_q``,
  buffer ``_scale``, ``second_state_compress`` [Linear, ReLU], ``second_state_encoder``, ``progress_monitor``.
* ``InstructionEncoder`` (HA-VLN ``agent/VLN-CE/vlnce_baselines/models/encoders/instruction_encoder.py``):
  ``encoder_rnn`` LSTM(50, 128, bidirectional per ``agent/config/cma_pm_da_aug_tune.yaml``) and
  ``embedding_layer`` -- 5,401 x 50 in the release (the issue's clarification), not the 5,079 words.
* ``TorchVisionResNet50`` (VLN-CE ``encoders/resnet_encoders.py`` ``TorchVisionResNet``, the same file in
  HA-VLN's ``agent/VLN-CE``): ``cnn = nn.Sequential(*list(resnet50.children())[:-1])`` then, with
  ``spatial_output`` and ``single_spatial_filter``, ``nn.Sequential(*list(cnn.children())[:-1])`` plus a
  parameter-free ``avgpool``: indices 0 conv1, 1 bn1, 2 relu, 3 maxpool, 4..7 layer1..4 of torchvision's
  ResNet-50 (Bottleneck conv1/bn1/conv2/bn2/conv3/bn3, ``downsample`` [conv, bn] on each stage's first
  block); ``spatial_embeddings`` Embedding(16, 64).
* ``VlnResnetDepthEncoder``: ``visual_encoder`` = habitat-baselines DD-PPO ``ResNetEncoder``
  (``running_mean_and_var`` empty Sequential when ``normalize_visual_inputs`` is False; ``backbone`` =
  ``resnet50(1, baseplanes=32, ngroups=16)`` with ``conv1`` [conv, GroupNorm, ReLU] and Bottleneck
  ``convs`` [1x1, GN, ReLU, 3x3, GN, ReLU, 1x1, GN]; ``compression`` [3x3 conv -> 128, GroupNorm(1), ReLU]
  for a 256x256 depth input halved to 128) and ``spatial_embeddings`` Embedding(4 * 4, 64).
"""

from __future__ import annotations

import sys
import types
from collections import OrderedDict

import torch

EMBEDDING_ROWS = 5401  # the release's table (HA-VLN-CMA), while the HA-R2R vocabulary has 5,079 words
HIDDEN = 512
RGB_OUT, DEPTH_OUT, INSTR_HIDDEN, PREV = 256, 128, 128, 32
NUM_ACTIONS = 4  # STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT


def _bn(prefix: str, c: int) -> dict:
    return {
        f"{prefix}.weight": (c,),
        f"{prefix}.bias": (c,),
        f"{prefix}.running_mean": (c,),
        f"{prefix}.running_var": (c,),
        f"{prefix}.num_batches_tracked": (),
    }


def _gn(prefix: str, c: int) -> dict:
    return {f"{prefix}.weight": (c,), f"{prefix}.bias": (c,)}


def torchvision_resnet50_sequential(prefix: str) -> dict:
    """Keys of ``nn.Sequential(conv1, bn1, relu, maxpool, layer1..4)`` of torchvision ResNet-50 (318)."""
    out = {f"{prefix}.0.weight": (64, 3, 7, 7), **_bn(f"{prefix}.1", 64)}
    inplanes = 64
    for idx, (planes, blocks) in zip((4, 5, 6, 7), ((64, 3), (128, 4), (256, 6), (512, 3)), strict=True):
        for b in range(blocks):
            p = f"{prefix}.{idx}.{b}"
            cin = inplanes if b == 0 else planes * 4
            out[f"{p}.conv1.weight"] = (planes, cin, 1, 1)
            out.update(_bn(f"{p}.bn1", planes))
            out[f"{p}.conv2.weight"] = (planes, planes, 3, 3)
            out.update(_bn(f"{p}.bn2", planes))
            out[f"{p}.conv3.weight"] = (planes * 4, planes, 1, 1)
            out.update(_bn(f"{p}.bn3", planes * 4))
            if b == 0:
                out[f"{p}.downsample.0.weight"] = (planes * 4, inplanes, 1, 1)
                out.update(_bn(f"{p}.downsample.1", planes * 4))
        inplanes = planes * 4
    return out


def ddppo_resnet50_encoder(prefix: str) -> dict:
    """Keys of habitat-baselines ``ResNetEncoder`` (depth only, resnet50, 32 base planes, 16 groups)."""
    out = {f"{prefix}.backbone.conv1.0.weight": (32, 1, 7, 7), **_gn(f"{prefix}.backbone.conv1.1", 32)}
    inplanes = 32
    for layer, (planes, blocks) in enumerate(((32, 3), (64, 4), (128, 6), (256, 3)), 1):
        for b in range(blocks):
            p = f"{prefix}.backbone.layer{layer}.{b}"
            cin = inplanes if b == 0 else planes * 4
            out[f"{p}.convs.0.weight"] = (planes, cin, 1, 1)
            out.update(_gn(f"{p}.convs.1", planes))
            out[f"{p}.convs.3.weight"] = (planes, planes, 3, 3)
            out.update(_gn(f"{p}.convs.4", planes))
            out[f"{p}.convs.6.weight"] = (planes * 4, planes, 1, 1)
            out.update(_gn(f"{p}.convs.7", planes * 4))
            if b == 0:
                out[f"{p}.downsample.0.weight"] = (planes * 4, inplanes, 1, 1)
                out.update(_gn(f"{p}.downsample.1", planes * 4))
        inplanes = planes * 4
    out[f"{prefix}.compression.0.weight"] = (128, inplanes, 3, 3)
    out.update(_gn(f"{prefix}.compression.1", 128))
    return out


def _rnn(prefix: str, gates: int, inp: int, hid: int, reverse: bool = False) -> dict:
    out = {}
    for sfx in ("", "_reverse") if reverse else ("",):
        out[f"{prefix}.weight_ih_l0{sfx}"] = (gates * hid, inp)
        out[f"{prefix}.weight_hh_l0{sfx}"] = (gates * hid, hid)
        out[f"{prefix}.bias_ih_l0{sfx}"] = (gates * hid,)
        out[f"{prefix}.bias_hh_l0{sfx}"] = (gates * hid,)
    return out


def released_key_shapes() -> OrderedDict:
    """Every state_dict key of the released HA-VLN-CMA ``CMAPolicy`` with its shape (module order)."""
    instr = 2 * INSTR_HIDDEN
    rgb_c, depth_c = 2048 + 64, 128 + 64
    sd: OrderedDict = OrderedDict()
    sd["net._scale"] = ()
    sd.update(_rnn("net.instruction_encoder.encoder_rnn", 4, 50, INSTR_HIDDEN, reverse=True))
    sd["net.instruction_encoder.embedding_layer.weight"] = (EMBEDDING_ROWS, 50)
    sd.update(ddppo_resnet50_encoder("net.depth_encoder.visual_encoder"))
    sd["net.depth_encoder.spatial_embeddings.weight"] = (16, 64)
    sd.update(torchvision_resnet50_sequential("net.rgb_encoder.cnn"))
    sd["net.rgb_encoder.spatial_embeddings.weight"] = (16, 64)
    sd["net.prev_action_embedding.weight"] = (NUM_ACTIONS + 1, PREV)
    sd["net.rgb_linear.2.weight"], sd["net.rgb_linear.2.bias"] = (RGB_OUT, rgb_c), (RGB_OUT,)
    sd["net.depth_linear.1.weight"], sd["net.depth_linear.1.bias"] = (DEPTH_OUT, depth_c * 16), (DEPTH_OUT,)
    sd.update(_rnn("net.state_encoder.rnn", 3, RGB_OUT + DEPTH_OUT + PREV, HIDDEN))
    sd["net.rgb_kv.weight"], sd["net.rgb_kv.bias"] = (HIDDEN // 2 + RGB_OUT, rgb_c, 1), (HIDDEN // 2 + RGB_OUT,)
    sd["net.depth_kv.weight"], sd["net.depth_kv.bias"] = (HIDDEN // 2 + DEPTH_OUT, depth_c, 1), (HIDDEN // 2 + DEPTH_OUT,)
    sd["net.state_q.weight"], sd["net.state_q.bias"] = (HIDDEN // 2, HIDDEN), (HIDDEN // 2,)
    sd["net.text_k.weight"], sd["net.text_k.bias"] = (HIDDEN // 2, instr, 1), (HIDDEN // 2,)
    sd["net.text_q.weight"], sd["net.text_q.bias"] = (HIDDEN // 2, instr), (HIDDEN // 2,)
    first = HIDDEN + RGB_OUT + DEPTH_OUT + instr + PREV
    sd["net.second_state_compress.0.weight"], sd["net.second_state_compress.0.bias"] = (HIDDEN, first), (HIDDEN,)
    sd.update(_rnn("net.second_state_encoder.rnn", 3, HIDDEN, HIDDEN))
    sd["net.progress_monitor.weight"], sd["net.progress_monitor.bias"] = (1, HIDDEN), (1,)
    sd["action_distribution.linear.weight"], sd["action_distribution.linear.bias"] = (NUM_ACTIONS, HIDDEN), (NUM_ACTIONS,)
    return sd


def random_state(seed: int = 0, stop_first: bool = True) -> OrderedDict:
    """Random but well-scaled weights for :func:`released_key_shapes` (norm layers identity).

    ``stop_first``: the action head always says STOP (logit bias), so an episode ends after one step.
    """
    g = torch.Generator().manual_seed(seed)
    out: OrderedDict = OrderedDict()
    for k, shape in released_key_shapes().items():
        if k.endswith("num_batches_tracked"):
            t = torch.tensor(0, dtype=torch.long)
        elif k == "net._scale":
            t = torch.tensor(1.0 / (HIDDEN // 2) ** 0.5)
        elif k.endswith("running_var") or (len(shape) == 1 and k.endswith(".weight")):
            t = torch.ones(shape)
        elif k.endswith("running_mean") or k.endswith("bias") or "bias_" in k:
            t = torch.zeros(shape)
        else:
            fan_in = max(1, int(torch.tensor(shape[1:]).prod().item())) if len(shape) > 1 else 1
            t = torch.randn(shape, generator=g) / fan_in**0.5
        out[k] = t
    out["net.instruction_encoder.embedding_layer.weight"][0] = 0.0  # padding row
    if stop_first:
        out["action_distribution.linear.weight"].zero_()
        out["action_distribution.linear.bias"].copy_(torch.tensor([5.0, 0.0, 0.0, 0.0]))
    return out


TRAINER_MODULE = "habitat.config.default"  # habitat-lab v0.1.7: class Config(yacs.config.CfgNode)


def _fake_habitat_config_class() -> type:
    """A stand-in for ``habitat.config.default.Config`` that pickles like a yacs ``CfgNode``.

    yacs' ``CfgNode`` is a dict subclass whose ``__init__`` stores four flags in the instance
    ``__dict__`` and defines no pickling hooks, so pickle writes NEWOBJ(Config) + SETITEMS + BUILD.
    """

    class Config(dict):
        def __init__(self, init: dict | None = None, new_allowed: bool = False):
            super().__init__(init or {})
            self.__dict__["__immutable__"] = False
            self.__dict__["__deprecated_keys__"] = set()
            self.__dict__["__renamed_keys__"] = {}
            self.__dict__["__new_allowed__"] = new_allowed

    Config.__module__ = TRAINER_MODULE
    Config.__qualname__ = "Config"
    return Config


def write_released_checkpoint(path, words: list[str], state: dict | None = None, extra: dict | None = None) -> None:
    """``torch.save`` a dict like ``BaseVLNCETrainer.save_checkpoint`` does (HA-VLN ``base_il_trainer.py``):
    ``state_dict``, the trainer ``config`` object and ``instruction_vocab`` (``{"word_list", "sha256"}``).

    The fake ``habitat.config.default`` module exists in ``sys.modules`` only while the file is written.
    """
    from havln_robot.policy.tokenizer import fingerprint

    names = ["habitat", "habitat.config", TRAINER_MODULE]
    saved = {n: sys.modules.get(n) for n in names}
    try:
        for n in names:
            sys.modules[n] = types.ModuleType(n)
        Config = _fake_habitat_config_class()
        sys.modules[TRAINER_MODULE].Config = Config
        cfg = Config(
            {
                "TRAINER_NAME": "dagger",
                "SIMULATOR_GPU_IDS": [0],
                "MODEL": Config(
                    {
                        "policy_name": "CMAPolicy",
                        "normalize_rgb": False,
                        "INSTRUCTION_ENCODER": Config(
                            {"vocab_size": len(words), "embedding_size": 50, "hidden_size": 128, "bidirectional": True}
                        ),
                        "RGB_ENCODER": Config({"cnn_type": "TorchVisionResNet50", "output_size": 256}),
                        "DEPTH_ENCODER": Config({"cnn_type": "VlnResnetDepthEncoder", "output_size": 128, "backbone": "resnet50"}),
                        "STATE_ENCODER": Config({"hidden_size": 512, "rnn_type": "GRU"}),
                        "PROGRESS_MONITOR": Config({"use": True, "alpha": 1.0}),
                    }
                ),
            }
        )
        doc = {
            "state_dict": state if state is not None else random_state(),
            "config": cfg,
            "instruction_vocab": {"word_list": list(words), "sha256": fingerprint(words)},
            **(extra or {}),
        }
        torch.save(doc, path)
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
