"""The VLN-CE cross-modal-attention (CMA) policy in the layout of the released HA-VLN-CMA checkpoint.

Module and parameter names reproduce VLN-CE's ``CMAPolicy`` (``vlnce_baselines/models/cma_policy.py``,
``encoders/instruction_encoder.py``, ``encoders/resnet_encoders.py``) and habitat-baselines'
``ILPolicy`` / ``CategoricalNet`` / ``RNNStateEncoder``, so a ``{"state_dict": ...}`` checkpoint trained
there loads here with ``strict=True``. Sizes are the HA-VLN ``cma_pm_da_aug_tune`` configuration
(HA-VLN repo ``agent/VLN-CE/vlnce_baselines/config/default.py`` + ``agent/config/cma_pm_da_aug_tune.yaml``):

* instruction: embedding 5401x50 (frozen, pretrained), bidirectional LSTM 128 -> 256 per token;
* RGB: ImageNet ResNet-50 (``rgb_encoder.cnn.0`` .. ``cnn.7``: the ``nn.Sequential`` of torchvision's
  children, as VLN-CE's ``TorchVisionResNet`` keeps them) -> 4x4 average pool (+ 64-d spatial
  embedding) -> 2112x16; ``rgb_linear`` -> 256;
* depth: DD-PPO ResNet-50 (GroupNorm, 32 base planes) -> 128x4x4 (+ 64-d spatial) -> 192x16;
  ``depth_linear`` -> 128;
* previous action embedding 5x32 (0 = episode start, k+1 = action k);
* GRU 512 (``state_encoder``) over [rgb 256, depth 128, prev action 32];
* attention: state -> instruction tokens, instruction -> RGB / depth cells;
* ``second_state_compress`` 1184 -> 512, GRU 512 (``second_state_encoder``), ``progress_monitor`` 512 -> 1;
* ``action_distribution.linear`` 512 -> 4 over (STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT).

The policy sees one front view per step (``views = 1``), as it was trained in VLN-CE.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from havln_robot.actions import CMA_ACTIONS
from havln_robot.policy.api import Observation, Policy, PolicyError, check_finite, check_instruction
from havln_robot.policy.resnet import DDPPOResNetEncoder, TorchvisionResNet50
from havln_robot.policy.tokenizer import EMBEDDING_DIM, EMBEDDING_ROWS, MAX_LENGTH, Vocabulary, load_embeddings


@dataclass(frozen=True)
class CMAConfig:
    """Layout hyper-parameters (defaults = HA-VLN-CMA release; see module docstring)."""

    vocab_rows: int = EMBEDDING_ROWS
    embedding_size: int = EMBEDDING_DIM
    instruction_hidden: int = 128
    bidirectional: bool = True
    rgb_output: int = 256
    depth_output: int = 128
    depth_size: int = 256
    hidden_size: int = 512
    prev_action_dim: int = 32
    num_actions: int = 4

    def to_dict(self) -> dict:
        return asdict(self)


class InstructionEncoder(nn.Module):
    """Embedding + (bi)LSTM; output (B, 2*hidden, T) per-token features, T = longest instruction in the batch.

    Input: (B, L) int64 token ids, 0 = padding (trailing).
    """

    def __init__(self, cfg: CMAConfig):
        super().__init__()
        self.encoder_rnn = nn.LSTM(cfg.embedding_size, cfg.instruction_hidden, bidirectional=cfg.bidirectional)
        self.embedding_layer = nn.Embedding(cfg.vocab_rows, cfg.embedding_size, padding_idx=0)
        self.embedding_layer.weight.requires_grad_(False)  # VLN-CE: fine_tune_embeddings = False
        self.output_size = cfg.instruction_hidden * (2 if cfg.bidirectional else 1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        emb = self.embedding_layer(tokens.long())
        lengths = (tokens != 0).long().sum(dim=1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.encoder_rnn(packed)
        return nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0].permute(0, 2, 1)


class _SpatialEmbedded(nn.Module):
    def _with_spatial(self, x: torch.Tensor) -> torch.Tensor:
        b, _, h, w = x.shape
        idx = torch.arange(self.spatial_embeddings.num_embeddings, device=x.device)
        sp = self.spatial_embeddings(idx).view(1, -1, h, w).expand(b, -1, h, w)
        return torch.cat([x, sp], dim=1)


class RGBEncoder(_SpatialEmbedded):
    """VLN-CE ``TorchVisionResNet50(spatial_output=True)``: (B, 224, 224, 3) uint8/float 0..255 -> (B, 2112, 4, 4).

    ``cnn`` is the released ``nn.Sequential`` layout (:class:`~havln_robot.policy.resnet.TorchvisionResNet50`,
    keys ``cnn.0`` .. ``cnn.7``), which already ends in the 4x4 spatial average pool.
    """

    def __init__(self):
        super().__init__()
        self.cnn = TorchvisionResNet50()
        self.spatial_embeddings = nn.Embedding(16, 64)
        self.output_shape = (2048 + 64, 4, 4)
        for p in self.cnn.parameters():
            p.requires_grad_(False)

    def forward(self, rgb: torch.Tensor) -> torch.Tensor:
        x = rgb.permute(0, 3, 1, 2).float() / 255.0
        return self._with_spatial(self.cnn(x.contiguous()))


class DepthEncoder(_SpatialEmbedded):
    """VLN-CE ``VlnResnetDepthEncoder(spatial_output=True)``: (B, 256, 256, 1) in [0, 1] -> (B, 192, 4, 4)."""

    def __init__(self, depth_size: int = 256):
        super().__init__()
        self.visual_encoder = DDPPOResNetEncoder(depth_size)
        c, h, w = self.visual_encoder.output_shape
        self.spatial_embeddings = nn.Embedding(h * w, 64)
        self.output_shape = (c + 64, h, w)
        for p in self.visual_encoder.parameters():
            p.requires_grad_(False)

    def forward(self, depth: torch.Tensor) -> torch.Tensor:
        return self._with_spatial(self.visual_encoder(depth.permute(0, 3, 1, 2).float()))


class RNNStateEncoder(nn.Module):
    """habitat-baselines ``RNNStateEncoder`` (single-layer GRU named ``rnn``), one step at a time.

    forward(x (B, in), h (1, B, hidden), masks (B, 1) 0 = episode start) -> (out (B, hidden), h').
    """

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.rnn = nn.GRU(input_size, hidden_size)
        for name, p in self.rnn.named_parameters():
            if "weight" in name:
                nn.init.orthogonal_(p)
            else:
                nn.init.constant_(p, 0.0)

    def forward(self, x: torch.Tensor, h: torch.Tensor, masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.rnn(x.unsqueeze(0), h * masks.view(1, -1, 1))
        return out.squeeze(0), h


class CMANet(nn.Module):
    """VLN-CE ``CMANet`` (see module docstring for the sizes)."""

    def __init__(self, cfg: CMAConfig):
        super().__init__()
        self.cfg = cfg
        hs = cfg.hidden_size
        self.instruction_encoder = InstructionEncoder(cfg)
        self.depth_encoder = DepthEncoder(cfg.depth_size)
        self.rgb_encoder = RGBEncoder()
        self.prev_action_embedding = nn.Embedding(cfg.num_actions + 1, cfg.prev_action_dim)
        rgb_c = self.rgb_encoder.output_shape[0]
        depth_c = self.depth_encoder.output_shape[0]
        self.rgb_linear = nn.Sequential(nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(rgb_c, cfg.rgb_output), nn.ReLU(True))
        self.depth_linear = nn.Sequential(
            nn.Flatten(), nn.Linear(int(np.prod(self.depth_encoder.output_shape)), cfg.depth_output), nn.ReLU(True)
        )
        self.state_encoder = RNNStateEncoder(cfg.rgb_output + cfg.depth_output + cfg.prev_action_dim, hs)
        instr = self.instruction_encoder.output_size
        self.rgb_kv = nn.Conv1d(rgb_c, hs // 2 + cfg.rgb_output, 1)
        self.depth_kv = nn.Conv1d(depth_c, hs // 2 + cfg.depth_output, 1)
        self.state_q = nn.Linear(hs, hs // 2)
        self.text_k = nn.Conv1d(instr, hs // 2, 1)
        self.text_q = nn.Linear(instr, hs // 2)
        self.register_buffer("_scale", torch.tensor(1.0 / ((hs // 2) ** 0.5)))
        first_out = hs + cfg.rgb_output + cfg.depth_output + instr
        self.second_state_compress = nn.Sequential(nn.Linear(first_out + cfg.prev_action_dim, hs), nn.ReLU(True))
        self.second_state_encoder = RNNStateEncoder(hs, hs)
        self.progress_monitor = nn.Linear(hs, 1)
        nn.init.kaiming_normal_(self.progress_monitor.weight, nonlinearity="tanh")
        nn.init.constant_(self.progress_monitor.bias, 0.0)
        self.output_size = hs
        self.num_recurrent_layers = 2

    def _attn(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        logits = torch.einsum("nc,nci->ni", q, k)
        if mask is not None:
            logits = logits - mask.float() * 1e8
        attn = F.softmax(logits * self._scale, dim=1)
        return torch.einsum("ni,nci->nc", attn, v)

    def forward(
        self,
        tokens: torch.Tensor,
        rgb: torch.Tensor,
        depth: torch.Tensor,
        rnn_states: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
        instruction_features: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step.

        Args:
            tokens: (B, L) int64 instruction ids (ignored when ``instruction_features`` is given).
            rgb: (B, 224, 224, 3) colour, 0..255.
            depth: (B, 256, 256, 1) depth in [0, 1] (metres / 10).
            rnn_states: (B, 2, 512) the two GRU states.
            prev_actions: (B, 1) int64 previous action index (ignored where ``masks`` is 0).
            masks: (B, 1) float, 0 at the first step of an episode, else 1.
            instruction_features: optional cached (B, 256, T) instruction encoding.

        Returns:
            (features (B, 512), new rnn_states (B, 2, 512)).
        """
        hs = self.cfg.hidden_size
        instruction = self.instruction_encoder(tokens) if instruction_features is None else instruction_features
        depth_e = torch.flatten(self.depth_encoder(depth), 2)
        rgb_e = torch.flatten(self.rgb_encoder(rgb), 2)
        prev = self.prev_action_embedding(((prev_actions.float() + 1) * masks).long().view(-1))
        rgb_in = self.rgb_linear(rgb_e)
        depth_in = self.depth_linear(depth_e)
        h = rnn_states.permute(1, 0, 2).contiguous()
        state, h1 = self.state_encoder(torch.cat([rgb_in, depth_in, prev], dim=1), h[0:1], masks)
        text_mask = (instruction == 0.0).all(dim=1)
        text = self._attn(self.state_q(state), self.text_k(instruction), instruction, text_mask)
        rgb_k, rgb_v = torch.split(self.rgb_kv(rgb_e), hs // 2, dim=1)
        depth_k, depth_v = torch.split(self.depth_kv(depth_e), hs // 2, dim=1)
        tq = self.text_q(text)
        rgb_att = self._attn(tq, rgb_k, rgb_v)
        depth_att = self._attn(tq, depth_k, depth_v)
        x = self.second_state_compress(torch.cat([state, text, rgb_att, depth_att, prev], dim=1))
        x, h2 = self.second_state_encoder(x, h[1:2], masks)
        return x, torch.cat([h1, h2], dim=0).permute(1, 0, 2)


class CategoricalNet(nn.Module):
    """habitat-baselines ``CategoricalNet``: ``linear`` features -> action logits."""

    def __init__(self, num_inputs: int, num_outputs: int):
        super().__init__()
        self.linear = nn.Linear(num_inputs, num_outputs)
        nn.init.orthogonal_(self.linear.weight, gain=0.01)
        nn.init.constant_(self.linear.bias, 0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


class CMAModel(nn.Module):
    """VLN-CE ``CMAPolicy`` module tree: ``net`` (:class:`CMANet`) + ``action_distribution``; state_dict keys
    are those of the HA-VLN-CMA checkpoint (``net.*``, ``action_distribution.linear.*``)."""

    def __init__(self, cfg: CMAConfig | None = None):
        super().__init__()
        self.cfg = cfg or CMAConfig()
        self.net = CMANet(self.cfg)
        self.action_distribution = CategoricalNet(self.net.output_size, self.cfg.num_actions)

    def forward(self, *args, **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
        """Same arguments as :meth:`CMANet.forward`; returns (logits (B, 4), rnn_states)."""
        feats, h = self.net(*args, **kwargs)
        return self.action_distribution(feats), h


class CMAPolicy(Policy):
    """Run a :class:`CMAModel` as a :class:`~havln_robot.policy.api.Policy` (front view, ``views = 1``).

    Args:
        model: the network (weights loaded by the caller).
        vocab: the HA-R2R vocabulary (default: loaded and fingerprint-checked from the data folder).
        device: torch device.
        name: display name.
    """

    views = 1

    def __init__(self, model: CMAModel, vocab: Vocabulary | None = None, device: str = "cpu", name: str = "cma"):
        self.model = model.to(device).eval()
        self.vocab = vocab if vocab is not None else Vocabulary.load()
        self.device = torch.device(device)
        self.name = name
        self._instr: torch.Tensor | None = None
        self._h: torch.Tensor | None = None
        self._prev = 0
        self._started = False
        self.last_progress: float | None = None

    def reset(self, instruction: str) -> None:
        check_instruction(instruction)
        tokens = torch.as_tensor(self.vocab.encode(instruction, MAX_LENGTH))[None].to(self.device)
        with torch.inference_mode():
            self._instr = self.model.net.instruction_encoder(tokens)
        self._h = torch.zeros(1, self.model.net.num_recurrent_layers, self.model.cfg.hidden_size, device=self.device)
        self._prev = 0
        self._started = False

    def act(self, obs: Observation) -> str:
        if self._instr is None:
            raise PolicyError("CMAPolicy.act() called before reset(instruction)")
        obs.check(None)
        front = int(np.argmin(np.abs(np.asarray(obs.headings, dtype=np.float64))))  # view nearest to straight ahead
        rgb = torch.as_tensor(obs.rgb[front : front + 1], device=self.device)
        depth = torch.as_tensor(obs.depth[front : front + 1], device=self.device)
        masks = torch.tensor([[1.0 if self._started else 0.0]], device=self.device)
        prev = torch.tensor([[self._prev]], device=self.device)
        with torch.inference_mode():
            feats, self._h = self.model.net(None, rgb, depth, self._h, prev, masks, instruction_features=self._instr)
            logits = self.model.action_distribution(feats)
            self.last_progress = float(torch.tanh(self.model.net.progress_monitor(feats)).item())
        check_finite("CMA features", feats)
        check_finite("CMA action logits", logits)
        idx = int(logits.argmax(dim=1).item())
        self._prev, self._started = idx, True
        return CMA_ACTIONS[idx]


def init_embeddings(model: CMAModel, path: str | os.PathLike[str] | None = None) -> bool:
    """Copy the HA-VLN-CMA instruction embedding table into ``model`` if the data file exists.

    Returns:
        True if loaded, False if the file is absent.

    Raises:
        PolicyError: the table exists but does not fit ``model`` (rows x 50).
    """
    from havln_robot.policy.tokenizer import default_embeddings_path

    p = path if path is not None else default_embeddings_path()
    if not os.path.exists(p):
        return False
    table = load_embeddings(p)
    w = model.net.instruction_encoder.embedding_layer.weight
    if tuple(table.shape) != tuple(w.shape):
        raise PolicyError(f"embedding table {p} is {table.shape}, the model expects {tuple(w.shape)}")
    with torch.no_grad():
        w.copy_(torch.from_numpy(table))
    return True
