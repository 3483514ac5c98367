"""``havln-robot train``: imitation learning of the small panoramic policy (teacher forcing, then DAgger).

Data: R2R train paths (``$DATA/r2r/R2R_train.json``, 61 scans; the simulator places people) in the batch
simulator (``havln_robot.sim.world.World``), views rendered by ``havln_robot.sim.render.Renderer`` at the
model resolution. Validation: HA-R2R val_seen (``$DATA/ha_r2r_de/HA_val_seen.json``), new paths with
human-aware instructions; the checkpoint with the best validation SR (then lowest NE) is kept.

Schedule (VLN-CE DAgger, Krantz et al. 2020, Sec. 4): round 0 collects with the expert only
(teacher forcing, beta = 1); round k >= 1 executes the expert's decision with probability
``beta = beta0 ** k`` and the model's otherwise, labels are always the expert's, and the data of all
rounds is aggregated. Every round trains ``--epochs`` epochs on the aggregate.

Compute: designed for this machine's 2 CPU cores and a <= 2 h budget (``--time-budget-s``, default
7000 s: collection and training stop early when it runs out, and the best checkpoint so far is kept).
Torch uses ``--threads`` (default 1) intra-op threads.

Output: ``--out`` (default ``models/small_panoramic.pt``) + a ``.json`` config/figures file next to it.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from havln_robot.paths import write_json
from havln_robot.policy.api import PolicyError
from havln_robot.policy.dataset import EpisodeSample, pano_headings, run_episodes, views_to_tensor
from havln_robot.policy.small import PREV_DIM, SmallConfig, SmallNet, init_embeddings
from havln_robot.text import number_in, path_arg

STOP_WEIGHT = 3.0
"""Loss weight of STOP labels (one per episode against ~6 moves; cf. VLN-CE inflection weighting 3.2)."""


def batch_loss(model: SmallNet, batch: list[EpisodeSample], headings: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """Cross-entropy over (N views + STOP) and over step counts for a batch of episode samples (teacher forcing)."""
    n = headings.shape[0]
    b = len(batch)
    t_max = max(len(s.choices) for s in batch)
    tokens = torch.as_tensor(np.stack([s.tokens for s in batch]))
    instr = model.encode_instruction(tokens)
    c, r = batch[0].views.shape[2], batch[0].views.shape[3]
    views = torch.zeros(b, t_max, n, c, r, r)
    prevs = torch.zeros(b, t_max, PREV_DIM)
    choices = torch.full((b, t_max), -100, dtype=torch.long)
    steps = torch.full((b, t_max), -100, dtype=torch.long)
    for i, s in enumerate(batch):
        t = len(s.choices)
        views[i, :t] = views_to_tensor(s.views)
        prevs[i, :t] = torch.as_tensor(s.prevs)
        choices[i, :t] = torch.as_tensor(s.choices)
        st = torch.as_tensor(s.steps) - 1
        st[torch.as_tensor(s.choices) == n] = -100
        steps[i, :t] = st
    feats = model.encode_views(views.flatten(0, 1)).view(b, t_max, n, -1)
    h = model.init_state(b)
    weights = torch.ones(n + 1)
    weights[n] = STOP_WEIGHT
    loss_c = loss_s = torch.zeros(())
    correct = total = 0
    hd = headings[None].expand(b, -1)
    for t in range(t_max):
        logits, ctx, h = model.step(instr, feats[:, t], hd, prevs[:, t], h)
        y = choices[:, t]
        valid = y >= 0
        if not valid.any():
            continue
        loss_c = loss_c + F.cross_entropy(logits[valid], y[valid], weight=weights, reduction="sum")
        correct += int((logits[valid].argmax(1) == y[valid]).sum())
        total += int(valid.sum())
        mv = steps[:, t] >= 0
        if mv.any():
            sel = feats[mv, t, y[mv].clamp(max=n - 1)]
            sl = model.steps_logits(sel, ctx[mv], h[mv])
            loss_s = loss_s + F.cross_entropy(sl, steps[mv, t], reduction="sum")
    loss = (loss_c + 0.5 * loss_s) / max(total, 1)
    return loss, {"acc": correct / max(total, 1), "n": total}


def train_epochs(model: SmallNet, data: list[EpisodeSample], epochs: int, opt, batch_size: int, rng, deadline: float, log) -> None:
    """Shuffle-and-train ``epochs`` passes over ``data``; stops at ``deadline``."""
    headings = torch.as_tensor(pano_headings(model.cfg.views))
    model.train()
    for ep in range(epochs):
        order = rng.permutation(len(data))
        tot = acc = 0.0
        nb = 0
        for i in range(0, len(order), batch_size):
            if time.time() > deadline:
                log(f"  time budget reached in epoch {ep + 1}")
                model.eval()
                return
            batch = [data[j] for j in order[i : i + batch_size]]
            loss, st = batch_loss(model, batch, headings)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0)
            opt.step()
            tot += float(loss.detach())
            acc += st["acc"]
            nb += 1
        log(f"  epoch {ep + 1}/{epochs}: loss {tot / max(nb, 1):.3f}, decision accuracy {acc / max(nb, 1):.3f} ({len(data)} episodes)")
    model.eval()


def summarize(results) -> dict:
    """Mean SR / success / NE / collisions over rollout results (``World.metrics()`` objects).

    ``ne`` is the walkable NE the scorer uses (:mod:`havln_robot.sim.geodesic`), ``ne_euclid`` the
    straight-line figure; ``unreachable`` counts episodes that ended where the goal cannot be walked to.
    A mean over no value is None (strict JSON report)."""
    ms = [r.metrics for r in results if r.metrics is not None]
    if not ms:
        return {"episodes": 0}

    def mean(name):
        vals = [float(getattr(m, name)) for m in ms if getattr(m, name, None) is not None]
        return float(np.mean(vals)) if vals else None

    return {
        "episodes": len(ms),
        "sr": mean("sr"),
        "success": mean("success"),
        "ne": mean("ne"),
        "ne_euclid": mean("ne_euclid"),
        "unreachable": int(sum(bool(getattr(m, "unreachable", False)) for m in ms)),
        "spl": mean("spl"),
        "collisions_human": mean("collisions_human"),
        "steps": mean("steps"),
    }


def build_parser() -> argparse.ArgumentParser:
    from havln_robot.paths import data_dir, models_dir

    ap = argparse.ArgumentParser(prog="havln-robot train", description=__doc__.split("\n\n")[0].replace("``", ""))
    ap.add_argument(
        "--train", type=path_arg, default=str(data_dir() / "r2r" / "R2R_train.json"), help="training episodes (R2R/HA-R2R json)"
    )
    ap.add_argument("--val", type=path_arg, default=str(data_dir() / "ha_r2r_de" / "HA_val_seen.json"), help="validation episodes")
    ap.add_argument("--connectivity", type=path_arg, default=None, help="Matterport3D connectivity folder (default $DATA/connectivity)")
    ap.add_argument(
        "--scenes",
        type=path_arg,
        default=None,
        help="folder of your scan meshes <scan>/<scan>.glb: train on their renderings (default: procedural scenes)",
    )
    ap.add_argument(
        "--episodes", type=number_in(1, integer=True), default=None, help="use only the first N training episodes (default all)"
    )
    ap.add_argument("--val-episodes", type=number_in(0, integer=True), default=100, help="validation episodes per round (0 = none)")
    ap.add_argument(
        "--rounds", type=number_in(1, 100, integer=True), default=3, help="collection rounds: 1 teacher forcing + (rounds-1) DAgger"
    )
    ap.add_argument(
        "--dagger-episodes",
        type=number_in(1, integer=True),
        default=None,
        help="episodes collected per DAgger round (default = --episodes)",
    )
    ap.add_argument("--beta", type=number_in(0, 1), default=0.5, help="DAgger expert probability base: beta_k = beta ** k")
    ap.add_argument("--epochs", type=number_in(1, 10000, integer=True), default=4, help="training epochs per round")
    ap.add_argument("--batch", type=number_in(1, 4096, integer=True), default=8, help="episodes per batch")
    ap.add_argument("--lr", type=number_in(0, 1, above=True), default=1e-3, help="Adam learning rate (default 1e-3)")
    ap.add_argument("--res", type=number_in(8, 512, integer=True), default=24, help="view resolution (px, multiple of 8)")
    ap.add_argument("--views", type=number_in(1, 72, integer=True), default=12, help="panorama views")
    ap.add_argument("--no-rgb", action="store_true", help="depth only")
    ap.add_argument(
        "--camera-hfov",
        type=number_in(0, 360, unit="deg"),
        default=0.0,
        help="train on what a narrower camera sees of each 90 deg view, deg (D435i: 69.4; 0 = full view)",
    )
    ap.add_argument(
        "--camera-vfov",
        type=number_in(0, 180, unit="deg"),
        default=0.0,
        help="vertical FOV of that camera, deg (D435i colour 848x480: 42.5)",
    )
    ap.add_argument(
        "--seed", type=number_in(0, integer=True), default=0, help="seed of the episode order, people and initial weights (default 0)"
    )
    ap.add_argument("--threads", type=number_in(1, 256, integer=True), default=1, help="torch intra-op threads")
    ap.add_argument(
        "--time-budget-s", type=number_in(0, unit="s", above=True), default=7000.0, help="stop collecting/training after this many seconds"
    )
    ap.add_argument(
        "--out", type=path_arg, default=str(models_dir() / "small_panoramic.pt"), help="checkpoint path (.pt); a .json sits next to it"
    )
    ap.add_argument("--overwrite", action="store_true", help="replace an existing checkpoint (and its .json) at --out")
    ap.add_argument("--quiet", action="store_true", help="only the final summary, no per-epoch lines")
    return ap


def main(argv: list[str]) -> int:
    """Run ``havln-robot train``; returns 0 on success, 2 on bad input."""
    args = build_parser().parse_args(argv)
    log = (lambda *_: None) if args.quiet else (lambda m: print(m, flush=True))
    try:
        return _run(args, log, argv)
    except (PolicyError, ValueError, FileNotFoundError) as exc:
        print(f"havln-robot train: {exc}", file=sys.stderr)
        return 2


def _check_args(args: argparse.Namespace) -> None:
    """Refuse bad options (ValueError) and, before hours of training, a checkpoint that cannot be
    written or would replace an earlier one without --overwrite."""
    from havln_robot.paths import check_out_file, refuse_overwrite

    if args.scenes and not Path(args.scenes).is_dir():
        raise ValueError(f"--scenes {args.scenes}: not a folder; give the folder holding <scan>/<scan>.glb")
    if args.res % 8 or args.res < 8:
        raise ValueError(f"--res must be a positive multiple of 8, got {args.res}")
    if args.views < 2:
        raise ValueError(f"--views must be >= 2 for the panoramic model, got {args.views}")
    # before hours of training: the checkpoint can be written, and replaces an earlier one only with --overwrite
    check_out_file(args.out, "--out", inputs=(args.train, args.val), atomic=True, overwrite=args.overwrite, example="model.pt")
    refuse_overwrite(Path(args.out).with_suffix(".json"), "--out", args.overwrite)


def _validate(model: Any, val_eps: list, vocab: Any, cfg: SmallConfig, args: argparse.Namespace, log: Any) -> dict:
    """SR, success, NE, SPL of ``model`` (greedy, fixed seed) on the validation episodes; {} without any."""
    if not val_eps:
        return {}
    val = summarize(
        run_episodes(val_eps, vocab, cfg, model, 0.0, seed=12345, record=False, connectivity_dir=args.connectivity, scenes_dir=args.scenes)
    )
    if val:
        log(
            f"  val_seen ({val['episodes']} ep): SR {val['sr']:.3f}, success {val['success']:.3f}, NE {val['ne']:.2f} m, SPL {val['spl']:.3f}"
        )
    return val


def _write_report(out: Path, args: argparse.Namespace, argv: list[str], figures: dict, t0: float) -> None:
    """The checkpoint's JSON report next to it (``out`` with .json): config, parameters, best round, history."""

    report = {"checkpoint": out.name, "kind": "small", **figures, "command": "havln-robot train " + " ".join(argv)}
    report |= {"elapsed_s": round(time.time() - t0, 1), "train_file": Path(args.train).name, "val_file": Path(args.val).name}
    write_json(out.with_suffix(".json"), report, nonfinite="null", indent=2)  # a diverged loss (NaN)  is unknown, not a lost report


def _run(args, log, argv) -> int:
    from havln_robot.episodes import load_episodes
    from havln_robot.policy.checkpoint import save_checkpoint
    from havln_robot.policy.tokenizer import Vocabulary

    _check_args(args)
    torch.set_num_threads(max(1, args.threads))
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    deadline = t0 + args.time_budget_s
    vocab = Vocabulary.load()
    train_eps = load_episodes(args.train, connectivity_dir=args.connectivity, limit=args.episodes, flag="--train")
    val_eps = (
        load_episodes(args.val, connectivity_dir=args.connectivity, limit=args.val_episodes, flag="--val") if args.val_episodes else []
    )
    cfg = SmallConfig(
        views=args.views, res=args.res, use_rgb=not args.no_rgb, camera_hfov_deg=args.camera_hfov, camera_vfov_deg=args.camera_vfov
    )
    model = SmallNet(cfg)
    emb = init_embeddings(model)
    n_params = sum(p.numel() for p in model.parameters())
    log(
        f"small model: {n_params / 1e6:.2f} M parameters, {cfg.views} views at {cfg.res}px, embeddings {'from HA-VLN-CMA table' if emb else 'random'}"
    )
    log(f"train: {len(train_eps)} episodes from {args.train}; val: {len(val_eps)} from {args.val}")
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    data: list[EpisodeSample] = []
    best = None
    history = []
    out = Path(args.out)
    per_round = args.dagger_episodes or len(train_eps)
    for rnd in range(args.rounds):
        if time.time() > deadline:
            break
        beta = 1.0 if rnd == 0 else args.beta**rnd
        eps = train_eps if rnd == 0 else [train_eps[i] for i in rng.permutation(len(train_eps))[:per_round]]
        tc = time.time()
        res = run_episodes(
            eps,
            vocab,
            cfg,
            None if rnd == 0 else model,
            beta,
            seed=args.seed + 1000 * rnd,
            deadline=deadline,
            connectivity_dir=args.connectivity,
            scenes_dir=args.scenes,
        )
        new = [r.sample for r in res if r.sample is not None]
        data += new
        st = summarize(res)
        log(
            f"round {rnd} (beta {beta:.2f}): collected {len(new)} episodes, {sum(len(s.choices) for s in new)} decisions "
            f"in {time.time() - tc:.0f} s; rollout SR {st.get('sr', float('nan')):.3f} NE {st.get('ne', float('nan')):.2f}"
        )
        tt = time.time()
        train_epochs(model, data, args.epochs, opt, args.batch, rng, deadline, log)
        log(f"  trained in {time.time() - tt:.0f} s")
        val = _validate(model, val_eps, vocab, cfg, args, log)
        history.append({"round": rnd, "beta": beta, "train_episodes": len(data), "val": val})
        key = (val.get("sr", 0.0), -val.get("ne", math.inf)) if val else (rnd, 0)
        if best is None or key >= best[0]:
            meta = {"round": rnd, "val": val, "command": "havln-robot train " + " ".join(argv), "elapsed_s": round(time.time() - t0, 1)}
            save_checkpoint(out, model, "small", cfg.to_dict(), meta)
            best = (key, meta)
            log(f"  saved {out} ({os.path.getsize(out) / 1e6:.2f} MB)")
    if best is None:
        raise ValueError("time budget ran out before the first round finished; raise --time-budget-s")
    _write_report(out, args, argv, {"config": cfg.to_dict(), "parameters": n_params, "best": best[1], "history": history}, t0)
    log(f"done in {time.time() - t0:.0f} s: {out} (+ {out.with_suffix('.json').name})")
    return 0
