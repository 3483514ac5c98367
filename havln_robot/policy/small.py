"""A small panoramic waypoint policy sized for a CPU / Jetson (< 1 M parameters, < 20 MB checkpoint).

Each *decision* looks at a panorama of ``N`` views (default 12 x 30 deg) and either says STOP or picks
one view direction and a number of 0.25 m steps; the policy then emits the matching TURN_LEFT /
TURN_RIGHT actions (15 deg each) followed by MOVE_FORWARDs, one literal per :meth:`SmallPolicy.act`
call, and asks for a new panorama at the next decision.

Network (all sizes in :class:`SmallConfig`):

* view encoder, per view: depth + RGB resized to ``res x res`` (area average of the 256 / 224 model
  images) -> 3 strided convs -> ``view_dim`` features, plus (sin, cos) of the view heading;
* instruction: 50-d word embedding (initialised from the HA-VLN-CMA table when present, fine-tuned)
  -> bidirectional GRU -> per-token features and a summary;
* decision state: GRU over decisions; input = [mean view feature, instruction context attended by the
  previous state, previous macro (turn, steps), decisions and steps so far, instruction length];
* heads: a score per view (MLP over [view, heading, state, context]) + a STOP score -> softmax over
  ``N + 1``; a step-count head over ``1..max_steps`` conditioned on the chosen view.

``views`` is ``N`` when the policy needs a panorama (start of a decision) and 1 while it replays the
actions of a decision; consumers that always send ``N`` views are served too.
"""

from __future__ import annotations

import math
import os
from collections import deque
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from havln_robot.actions import MOVE_FORWARD, STOP, TURN_ANGLE_RAD, TURN_LEFT, TURN_RIGHT
from havln_robot.policy.api import Observation, Policy, PolicyError, check_finite, check_instruction
from havln_robot.policy.tokenizer import EMBEDDING_DIM, EMBEDDING_ROWS, MAX_LENGTH, Vocabulary


@dataclass(frozen=True)
class SmallConfig:
    """Hyper-parameters of :class:`SmallNet` (stored in the checkpoint's ``config``)."""

    views: int = 12
    res: int = 24
    use_rgb: bool = True
    view_dim: int = 64
    vocab_rows: int = EMBEDDING_ROWS
    embedding_size: int = EMBEDDING_DIM
    instr_hidden: int = 64
    hidden: int = 128
    max_steps: int = 8
    max_decisions: int = 40
    camera_hfov_deg: float = 0.0
    camera_vfov_deg: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> SmallConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown config keys {sorted(unknown)}")
        return cls(**d)


def camera_mask(size: int, hfov_deg: float, vfov_deg: float) -> np.ndarray | None:
    """Pixels of a ``size x size`` 90 deg model view that a narrower camera sees (same optical centre).

    The robot's camera (D435i colour: 69.4 x 42.5 deg, Intel RealSense D400 datasheet) is mapped into
    the 90 deg model view by :mod:`havln_robot.perception.preprocess` (padding, true geometry); a model
    trained with this mask sees exactly that footprint whatever the camera, in training, batch
    evaluation and on the robot.

    Args:
        size: view side, px.
        hfov_deg: camera horizontal field of view, deg (0 = no mask).
        vfov_deg: camera vertical field of view, deg (0 = same as ``hfov_deg``).

    Returns:
        (size, size) bool, True inside the camera frustum; ``None`` when ``hfov_deg`` is 0.
    """
    if not hfov_deg:
        return None
    c = (np.arange(size) + 0.5 - size / 2.0) / (size / 2.0)  # tan of the ray angle; 90 deg view: f = size / 2
    tx, ty = math.tan(math.radians(hfov_deg) / 2.0), math.tan(math.radians(vfov_deg or hfov_deg) / 2.0)
    return (np.abs(c)[None, :] <= tx) & (np.abs(c)[:, None] <= ty)


def apply_camera_mask(rgb: np.ndarray | None, depth: np.ndarray, hfov_deg: float, vfov_deg: float) -> tuple[np.ndarray | None, np.ndarray]:
    """Zero RGB and depth (no return) outside the camera frustum; copies, inputs untouched.

    Args:
        rgb: (N, H, H, 3) uint8 or None.
        depth: (N, H', H', 1) float32.
        hfov_deg: camera horizontal field of view, deg (0 = return the inputs unchanged).
        vfov_deg: camera vertical field of view, deg.
    """
    if not hfov_deg:
        return rgb, depth
    if rgb is not None:
        rgb = rgb * camera_mask(rgb.shape[1], hfov_deg, vfov_deg)[None, :, :, None].astype(rgb.dtype)
    depth = depth * camera_mask(depth.shape[1], hfov_deg, vfov_deg)[None, :, :, None].astype(depth.dtype)
    return rgb, depth


def downsample_views(rgb: np.ndarray | None, depth: np.ndarray, res: int) -> np.ndarray:
    """Model input from model-format views: float32 (N, C, res, res), C = 1 (depth) or 4 (depth + RGB / 255).

    Args:
        rgb: (N, H, W, 3) uint8 colour views, or None (depth-only model).
        depth: (N, H', W', 1) float32 depth in [0, 1].
        res: output side, px; both are area-averaged (adaptive average pooling) to ``res x res``.
    """
    d = torch.as_tensor(np.ascontiguousarray(depth), dtype=torch.float32).permute(0, 3, 1, 2)
    chans = [F.adaptive_avg_pool2d(d, res)]
    if rgb is not None:
        r = torch.as_tensor(np.ascontiguousarray(rgb)).permute(0, 3, 1, 2).float() / 255.0
        chans.append(F.adaptive_avg_pool2d(r, res))
    return torch.cat(chans, dim=1).numpy()


class SmallNet(nn.Module):
    """The network (see module docstring). Batch-first; all decisions of a batch step in lock-step."""

    def __init__(self, cfg: SmallConfig | None = None):
        super().__init__()
        self.cfg = cfg = cfg or SmallConfig()
        cin = 4 if cfg.use_rgb else 1
        self.view_cnn = nn.Sequential(
            nn.Conv2d(cin, 16, 5, stride=2, padding=2),
            nn.ReLU(True),
            nn.Conv2d(16, 32, 3, stride=2, padding=1),
            nn.ReLU(True),
            nn.Conv2d(32, 32, 3, stride=2, padding=1),
            nn.ReLU(True),
            nn.Flatten(),
            nn.Linear(32 * (cfg.res // 8) ** 2, cfg.view_dim),
            nn.ReLU(True),
        )
        self.embedding = nn.Embedding(cfg.vocab_rows, cfg.embedding_size, padding_idx=0)
        self.instr_rnn = nn.GRU(cfg.embedding_size, cfg.instr_hidden, batch_first=True, bidirectional=True)
        ih = 2 * cfg.instr_hidden
        self.text_q = nn.Linear(cfg.hidden, ih)
        self.prev_enc = nn.Linear(PREV_DIM, 16)
        self.state_rnn = nn.GRUCell(cfg.view_dim + ih + 16 + ih + 1, cfg.hidden)
        self.view_score = nn.Sequential(nn.Linear(cfg.view_dim + 2 + cfg.hidden + ih, 64), nn.ReLU(True), nn.Linear(64, 1))
        self.stop_score = nn.Sequential(nn.Linear(cfg.hidden + ih, 64), nn.ReLU(True), nn.Linear(64, 1))
        self.steps_head = nn.Sequential(nn.Linear(cfg.view_dim + cfg.hidden + ih, 64), nn.ReLU(True), nn.Linear(64, cfg.max_steps))

    def encode_instruction(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """tokens (B, L) int64 -> (per-token (B, T, 2h), mask (B, T) True = real token, summary (B, 2h))."""
        lengths = (tokens != 0).sum(1).clamp(min=1)
        t = int(lengths.max())
        tokens = tokens[:, :t]
        emb = self.embedding(tokens)
        packed = nn.utils.rnn.pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h = self.instr_rnn(packed)
        out = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=t)[0]
        mask = torch.arange(t, device=tokens.device)[None] < lengths[:, None]
        summary = torch.cat([h[0], h[1]], dim=1)
        return out, mask, summary

    def encode_views(self, views: torch.Tensor) -> torch.Tensor:
        """views (B, N, C, res, res) -> (B, N, view_dim)."""
        b, n = views.shape[:2]
        return self.view_cnn(views.flatten(0, 1)).view(b, n, -1)

    def init_state(self, batch: int, device: torch.device | str = "cpu") -> torch.Tensor:
        return torch.zeros(batch, self.cfg.hidden, device=device)

    def step(
        self,
        instr: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        view_feats: torch.Tensor,
        headings: torch.Tensor,
        prev: torch.Tensor,
        h: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One decision.

        Args:
            instr: :meth:`encode_instruction` output.
            view_feats: (B, N, view_dim) :meth:`encode_views` output.
            headings: (B, N) view headings, rad relative to the body (CCW +).
            prev: (B, 6) :func:`prev_encoding` before this decision.
            h: (B, hidden) decision state.

        Returns:
            (choice logits (B, N + 1) -- index N = STOP, context (B, 2h), new state (B, hidden)).
        """
        tok, mask, summary = instr
        q = self.text_q(h)
        att = torch.einsum("bc,btc->bt", q, tok) / math.sqrt(tok.shape[-1])
        att = att.masked_fill(~mask, -1e9).softmax(dim=1)
        ctx = torch.einsum("bt,btc->bc", att, tok)
        n_tok = mask.sum(1, keepdim=True).float() / 100.0
        x = torch.cat([view_feats.mean(1), ctx, F.relu(self.prev_enc(prev)), summary, n_tok], dim=1)
        h = self.state_rnn(x, h)
        n = view_feats.shape[1]
        hc = torch.cat([h, ctx], dim=1)
        head = torch.stack([headings.sin(), headings.cos()], dim=2)
        per_view = torch.cat([view_feats, head, hc[:, None].expand(-1, n, -1)], dim=2)
        logits = torch.cat([self.view_score(per_view).squeeze(2), self.stop_score(hc)], dim=1)
        return logits, ctx, h

    def steps_logits(self, view_feat: torch.Tensor, ctx: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """Step-count logits (B, max_steps) for the chosen view's features (B, view_dim); class k = k + 1 steps."""
        return self.steps_head(torch.cat([view_feat, h, ctx], dim=1))


def macro_actions(heading_rad: float, steps: int) -> list[str]:
    """Action literals that turn the body to ``heading_rad`` (relative, CCW +) in 15 deg turns, then step forward."""
    k = int(round(math.remainder(heading_rad, 2 * math.pi) / TURN_ANGLE_RAD))
    turns = [TURN_LEFT] * k if k > 0 else [TURN_RIGHT] * (-k)
    return turns + [MOVE_FORWARD] * max(0, int(steps))


PREV_DIM = 6


def prev_encoding(heading_rad: float, steps: int, max_steps: int, decisions: int, total_steps: int) -> np.ndarray:
    """(6,) float32 state of the episode before a decision (input of :meth:`SmallNet.step`).

    [sin, cos of the previous turn (rad), previous steps / max_steps, 1 at the first decision,
    decisions taken / 20, forward steps taken so far / 80].
    """
    return np.array(
        [
            math.sin(heading_rad),
            math.cos(heading_rad),
            steps / max_steps,
            1.0 if decisions == 0 else 0.0,
            decisions / 20.0,
            total_steps / 80.0,
        ],
        dtype=np.float32,
    )


class SmallPolicy(Policy):
    """Run a :class:`SmallNet` as a panoramic :class:`~havln_robot.policy.api.Policy`.

    Args:
        model: trained network; vocab: HA-R2R vocabulary (default: loaded and checked from the data folder);
        device: torch device; name: display name.
    """

    def __init__(self, model: SmallNet, vocab: Vocabulary | None = None, device: str = "cpu", name: str = "small"):
        self.model = model.to(device).eval()
        self.cfg = model.cfg
        self.vocab = vocab if vocab is not None else Vocabulary.load()
        self.device = torch.device(device)
        self.name = name
        self._instr = None
        self._queue: deque[str] = deque()
        self.decisions = 0
        self.last_choice: tuple[float, int] | None = None

    @property
    def views(self) -> int:  # type: ignore[override]
        """Views wanted for the next :meth:`act`: ``cfg.views`` at a decision, 1 while replaying a macro."""
        return 1 if self._queue else self.cfg.views

    def reset(self, instruction: str) -> None:
        check_instruction(instruction)
        tokens = torch.as_tensor(self.vocab.encode(instruction, MAX_LENGTH))[None].to(self.device)
        with torch.inference_mode():
            self._instr = self.model.encode_instruction(tokens)
        self._h = self.model.init_state(1, self.device)
        self._prev = prev_encoding(0.0, 0, self.cfg.max_steps, 0, 0)
        self._total_steps = 0
        self._queue.clear()
        self.decisions = 0

    def on_action_result(self, action: str, outcome: str) -> None:
        """An action that did not complete (blocked, collision, timeout ...) ends the macro: the next
        :meth:`act` is a new decision on a new panorama, instead of replaying the plan blindly."""
        if outcome != "ok" and self._queue:
            self._queue.clear()

    def act(self, obs: Observation) -> str:
        if self._instr is None:
            raise PolicyError("SmallPolicy.act() called before reset(instruction)")
        if self._queue:
            return self._queue.popleft()
        obs.check(self.cfg.views)
        if self.decisions >= self.cfg.max_decisions:
            return STOP
        rgb, depth = apply_camera_mask(obs.rgb if self.cfg.use_rgb else None, obs.depth, self.cfg.camera_hfov_deg, self.cfg.camera_vfov_deg)
        x = downsample_views(rgb, depth, self.cfg.res)
        heads = np.asarray(obs.headings, dtype=np.float32)
        with torch.inference_mode():
            v = self.model.encode_views(torch.as_tensor(x, device=self.device)[None])
            logits, ctx, self._h = self.model.step(
                self._instr,
                v,
                torch.as_tensor(heads, device=self.device)[None],
                torch.as_tensor(self._prev, device=self.device)[None],
                self._h,
            )
            check_finite("small-policy view features", v)
            check_finite("small-policy choice logits", logits)
            choice = int(logits.argmax(1).item())
            self.decisions += 1
            if choice == self.cfg.views:
                self.last_choice = None
                return STOP
            steps_logits = self.model.steps_logits(v[:, choice], ctx, self._h)
            check_finite("small-policy step logits", steps_logits)
            steps = int(steps_logits.argmax(1).item()) + 1
        heading = float(heads[choice])
        self.last_choice = (heading, steps)
        self._total_steps += steps
        self._prev = prev_encoding(heading, steps, self.cfg.max_steps, self.decisions, self._total_steps)
        self._queue.extend(macro_actions(heading, steps))
        return self._queue.popleft()


def init_embeddings(model: SmallNet, path: str | os.PathLike[str] | None = None) -> bool:
    """Initialise ``model.embedding`` from the HA-VLN-CMA table if the data file exists; True if loaded."""
    from havln_robot.policy.tokenizer import default_embeddings_path, load_embeddings

    p = path if path is not None else default_embeddings_path()
    if not os.path.exists(p):
        return False
    table = load_embeddings(p)
    w = model.embedding.weight
    if tuple(table.shape) != tuple(w.shape):
        raise PolicyError(f"embedding table {p} is {table.shape}, the model expects {tuple(w.shape)}")
    with torch.no_grad():
        w.copy_(torch.from_numpy(table))
    return True
