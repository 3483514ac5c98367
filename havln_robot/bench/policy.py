"""``havln-robot bench policy``: policy latency / memory on this CPU, and SR / NE against baselines.

Part 1 -- for the full CMA layout (front view, ResNet-50 x 2) and the small panoramic model: the time of
one :meth:`Policy.act` decision (ms; median and p90 over ``--steps`` steps after warm-up, torch with
``--threads`` threads) and the peak resident memory (RSS, MB) of a fresh process that loads the model
and runs those steps (measured in a subprocess each, so the two models do not share the figure).

Part 2 -- ``havln-robot eval`` on HA-R2R val_seen (``--limit`` episodes, default 60) for the trained
model (``--model``, default ``models/small_panoramic.pt``) and the ``forward`` and ``random`` baselines;
prints SR, success rate and NE of each and whether the model at least doubles both baselines' SR.

``--skip-eval`` runs part 1 only; ``--skip-latency`` part 2 only.

``--device cuda`` (or ``cuda:N``) replaces part 1 by CPU against that device for ``--model``: the
decision latency on each (median / p90 over ``--steps`` decisions after warm-up, each decision a
fresh episode on one of 12 panoramas rendered in a real HA-R2R scene, or synthetic views without the
data) and on how many decisions the two chose the same actions. Where the device does not exist it
refuses in one line (:func:`havln_robot.policy.checkpoint.check_device`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from havln_robot import jsonio
from havln_robot.paths import write_json
from havln_robot.text import nonempty, number_in, path_arg, plural

_WORKER = r"""
import resource, sys, time
import numpy as np, torch
from havln_robot import jsonio
torch.set_num_threads(int(sys.argv[2]))
kind, steps = sys.argv[1], int(sys.argv[3])
from havln_robot.policy.api import Observation
from havln_robot.policy.tokenizer import Vocabulary
words = ["<pad>", "<unk>"] + [f"w{i}" for i in range(100)]
vocab = Vocabulary(words)
t0 = time.perf_counter()
path = sys.argv[4] if len(sys.argv) > 4 else ""
net = None
if path:  # a checkpoint of this kind (any layout build_model reads); otherwise random weights
    from havln_robot.policy.checkpoint import build_model, detect_kind, read_checkpoint
    doc = read_checkpoint(path)
    if detect_kind(doc) == kind:
        net = build_model(doc, path)
if kind == "cma":
    from havln_robot.policy.cma import CMAModel, CMAPolicy
    pol = CMAPolicy(net if net is not None else CMAModel(), vocab=vocab)
else:
    from havln_robot.policy.small import SmallConfig, SmallNet, SmallPolicy
    pol = SmallPolicy(net if net is not None else SmallNet(SmallConfig()), vocab=vocab)
load_s = time.perf_counter() - t0
rng = np.random.default_rng(0)
n = 12 if kind == "small" else 1
heads = np.array([np.remainder(2 * np.pi * i / n + np.pi, 2 * np.pi) - np.pi for i in range(n)], np.float32)
obs = Observation(rng.integers(0, 255, (n, 224, 224, 3), dtype=np.uint8), rng.random((n, 256, 256, 1), dtype=np.float32), heads, 0)
times = []
instr = " ".join(f"w{i}" for i in range(60))
for k in range(steps + 3):
    if kind == "small":
        pol.reset(instr)  # every act() is then a full decision (panorama -> network)
    elif k == 0:
        pol.reset(instr)
    t = time.perf_counter()
    pol.act(obs)
    if k >= 3:
        times.append((time.perf_counter() - t) * 1000.0)
params = sum(p.numel() for p in pol.model.parameters())
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(jsonio.dumps({"kind": kind, "views": n, "params": params, "load_s": load_s, "median_ms": float(np.median(times)),
                  "p90_ms": float(np.percentile(times, 90)), "peak_rss_mb": rss}))
"""


def measure(kind: str, threads: int, steps: int, checkpoint: str | None = None) -> dict:
    """Run the latency/RSS worker for ``kind`` ("cma" or "small") in a fresh interpreter; returns its figures."""
    cmd = [sys.executable, "-c", _WORKER, kind, str(threads), str(steps)] + ([checkpoint] if checkpoint else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(
            f"latency worker for {kind} failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def device_observations(n: int) -> list:
    """``n`` 12-view observations in the model format: the views of a rendered HA-R2R panorama
    (synthetic without the data or a renderer; :func:`havln_robot.bench.link.panorama_file`), each
    turned by one more view and stepped, so that the decisions differ."""
    import numpy as np

    from havln_robot.bench.link import _model_obs, panorama_file
    from havln_robot.policy.api import Observation

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pano.npz"
        panorama_file(path)
        with np.load(path) as z:
            base = _model_obs(z["rgb"], z["depth_mm"])
    return [Observation(np.roll(base.rgb, k, 0), np.roll(base.depth, k, 0), base.headings, k % 4) for k in range(n)]


def compare_devices(model: str, device: str, steps: int, threads: int = 1) -> dict:
    """Decision latency of ``model`` on the CPU and on ``device``, and whether their actions agree.

    Returns:
        ``{"device", "cpu_ms", "device_ms": {"median", "p90"}, "agree", "decisions", "disagreements"}``.

    Raises:
        PolicyError: ``device`` does not exist here (one line), or the checkpoint cannot be loaded.
    """
    import numpy as np
    import torch

    from havln_robot.policy.checkpoint import build_model, check_device, read_checkpoint
    from havln_robot.policy.small import SmallPolicy
    from havln_robot.policy.tokenizer import Vocabulary, default_vocab_path

    check_device(device)
    torch.set_num_threads(threads)
    vocab = Vocabulary.load() if default_vocab_path().is_file() else Vocabulary(["<pad>", "<unk>"] + [f"w{i}" for i in range(100)])
    doc = read_checkpoint(model)
    pols = {d: SmallPolicy(build_model(doc, model), vocab=vocab, device=d) for d in ("cpu", device)}
    obs = device_observations(steps)
    instr = "walk past the sofa and stop at the door"
    times: dict[str, list[float]] = {"cpu": [], device: []}
    actions: dict[str, list[str]] = {"cpu": [], device: []}
    for k, o in enumerate([obs[0]] * 3 + obs):  # 3 warm-up decisions (CUDA kernels, allocator)
        for d, pol in pols.items():
            pol.reset(instr)
            if d.startswith("cuda"):
                torch.cuda.synchronize()
            t = time.perf_counter()
            a = pol.act(o)
            if d.startswith("cuda"):
                torch.cuda.synchronize()
            if k >= 3:
                times[d].append((time.perf_counter() - t) * 1000.0)
                actions[d].append(a)
    agree = sum(a == b for a, b in zip(actions["cpu"], actions[device], strict=True))
    return {
        "device": device,
        "cpu_ms": {"median": float(np.median(times["cpu"])), "p90": float(np.percentile(times["cpu"], 90))},
        "device_ms": {"median": float(np.median(times[device])), "p90": float(np.percentile(times[device], 90))},
        "agree": agree,
        "decisions": len(obs),
        "disagreements": [(i, a, b) for i, (a, b) in enumerate(zip(actions["cpu"], actions[device], strict=True)) if a != b],
    }


_PAT = {
    "success": re.compile(r"success\s+([\d.]+)\s*%"),
    "sr": re.compile(r"SR\s+([\d.]+)\s*%"),
    "ne": re.compile(r"NE mean\s+([\d.]+)\s*m"),
}


def run_eval(policy: str, episodes: str | None, limit: int, seed: int) -> dict:
    """``havln-robot eval --policy POLICY --limit N --out TMP`` in a subprocess; returns its summary.json (+ parsed stdout)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "havln_robot.cli",
            "eval",
            "--policy",
            policy,
            "--limit",
            str(limit),
            "--seed",
            str(seed),
            "--out",
            tmp,
            "-q",
        ]
        if episodes:
            cmd += ["--episodes", episodes]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if out.returncode != 0:
            msg = (out.stderr.strip() or out.stdout.strip()).splitlines()
            raise RuntimeError(f"havln-robot eval --policy {policy} failed: {msg[-1] if msg else out.returncode}")
        summary_path = Path(tmp) / "summary.json"
        summary = jsonio.load_json_file(summary_path) if summary_path.is_file() else {}
    parsed = {k: float(m.group(1)) for k, p in _PAT.items() if (m := p.search(out.stdout))}
    res = {
        "policy": policy,
        "episodes": summary.get("n", limit),
        "sr": summary.get("sr", parsed.get("sr", float("nan")) / 100.0),
        "success": summary.get("success_rate", parsed.get("success", float("nan")) / 100.0),
        "ne": summary.get("ne", parsed.get("ne", float("nan"))),
        "wall_s": wall,
    }
    return res


class _Refused(Exception):
    """One line after ``havln-robot bench policy:``; exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``havln-robot bench policy``."""
    from havln_robot.paths import models_dir

    ap = argparse.ArgumentParser(prog="havln-robot bench policy", description=__doc__.split("\n\n")[0].replace("``", ""))
    ap.add_argument(
        "--model", type=path_arg, default=str(models_dir() / "small_panoramic.pt"), help="trained checkpoint for the SR/NE comparison"
    )
    ap.add_argument("--episodes", type=path_arg, default=None, help="episodes file (default: havln-robot eval's, HA val_seen)")
    ap.add_argument("--limit", type=number_in(1, integer=True), default=60, help="episodes per policy in the SR/NE comparison")
    ap.add_argument("--steps", type=number_in(1, integer=True), default=20, help="timed decisions per model")
    ap.add_argument("--threads", type=number_in(1, 256, integer=True), default=1, help="torch threads for the latency figures")
    ap.add_argument("--seed", type=number_in(0, integer=True), default=0, help="episode seed of the SR/NE comparison (default 0)")
    ap.add_argument(
        "--device",
        type=nonempty("a torch device such as cpu or cuda"),
        default="cpu",
        help="cuda / cuda:N: compare --model's decision latency and actions on the CPU and this device (instead of part 1)",
    )
    ap.add_argument("--skip-latency", action="store_true", help="skip the decision-latency figures")
    ap.add_argument("--skip-eval", action="store_true", help="skip the SR/NE comparison against the baselines")
    ap.add_argument("--json", type=path_arg, help="also write all figures to this JSON file")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    return ap


def _part_devices(args: argparse.Namespace, figures: dict) -> None:
    """--model's decision latency and actions on the CPU and on ``--device``."""
    from havln_robot.policy.api import PolicyError

    try:
        import torch  # noqa: F401 - the check below names a missing CUDA build

        from havln_robot.policy.checkpoint import check_device

        check_device(args.device)  # before any work: refuse in one line where the device does not exist
        c = compare_devices(args.model, args.device, args.steps, args.threads)
    except PolicyError as exc:
        raise _Refused(str(exc)) from exc
    figures["devices"] = c
    name = Path(args.model).name
    print(f"{name} on {figures['cpu']} (torch threads {args.threads}) vs {c['device']}, {plural(c['decisions'], 'decision')}:")
    print(f"  cpu          decision {c['cpu_ms']['median']:8.1f} ms median ({c['cpu_ms']['p90']:.1f} p90)")
    print(f"  {c['device']:12s} decision {c['device_ms']['median']:8.1f} ms median ({c['device_ms']['p90']:.1f} p90)")
    print(
        f"  actions agree on {c['agree']} of {c['decisions']} decisions" + (f"; differ: {c['disagreements']}" if c["disagreements"] else "")
    )


def _part_latency(args: argparse.Namespace, figures: dict) -> None:
    """Decision latency, parameters, peak RSS and load time of each model kind, each in its own process."""
    print(f"policy latency on {figures['cpu']} ({os.cpu_count()} cores), torch threads {args.threads}:")
    for kind, label in (("cma", "CMA (HA-VLN-CMA layout, 1 view)"), ("small", "small panoramic (12 views)")):
        ckpt = args.model if Path(args.model).is_file() else None  # used by the worker of its own kind
        try:
            m = measure(kind, args.threads, args.steps, ckpt)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            raise _Refused(str(exc)) from exc
        figures[kind] = m
        print(
            f"  {label:34s} {m['params'] / 1e6:6.2f} M params  decision {m['median_ms']:8.1f} ms median"
            f" ({m['p90_ms']:.1f} p90)  peak RSS {m['peak_rss_mb']:7.1f} MB  load {m['load_s']:.2f} s"
        )


def _part_eval(args: argparse.Namespace, figures: dict) -> None:
    """SR / NE of --model against the forward and random baselines through ``havln-robot eval``."""
    print(f"SR / NE on {args.episodes or 'HA-R2R val_seen'} (first {args.limit} episodes, seed {args.seed}) via havln-robot eval:")
    rows = []
    for pol in (args.model, "forward", "random"):
        try:
            r = run_eval(pol, args.episodes, args.limit, args.seed)
        except RuntimeError as exc:
            raise _Refused(str(exc)) from exc
        rows.append(r)
        name = Path(pol).name if pol == args.model else pol
        print(
            f"  {name:24s} SR {100 * r['sr']:5.1f} %  success {100 * r['success']:5.1f} %  NE {r['ne']:5.2f} m  ({plural(r['episodes'], 'episode')}, {r['wall_s']:.0f} s)"
        )
    model_sr = rows[0]["sr"]
    base = max(rows[1]["sr"], rows[2]["sr"])
    ok = model_sr >= 2 * base and model_sr > 0
    print(
        f"  model SR {100 * model_sr:.1f} % vs best baseline {100 * base:.1f} %: {'at least doubles' if ok else 'does NOT double'} both baselines"
    )
    figures["eval"] = rows
    figures["doubles_baselines"] = ok


def main(argv: list[str]) -> int:
    """Run ``havln-robot bench policy``; prints the figures; returns 0 (2 on bad input / failed eval)."""
    args = build_parser().parse_args(argv)
    if args.json:
        from havln_robot.paths import check_out_file

        check_out_file(args.json, "--json", inputs=tuple(p for p in (args.model, args.episodes) if p), overwrite=args.overwrite)
    if not args.skip_eval:  # before the latency figures: a bad --model is named before any work
        from havln_robot.paths import input_file_problem

        why = input_file_problem(args.model)
        if why is not None:
            print(
                f"havln-robot bench policy: --model {args.model}: {why}; train it with 'havln-robot train' or pass --model", file=sys.stderr
            )
            return 2
    figures: dict = {"cpu": _cpu_name(), "threads": args.threads}
    try:
        if args.device != "cpu" and not args.skip_latency:
            _part_devices(args, figures)
        elif not args.skip_latency:
            _part_latency(args, figures)
        if not args.skip_eval:
            _part_eval(args, figures)
    except _Refused as exc:
        print(f"havln-robot bench policy: {exc}", file=sys.stderr)
        return 2
    if args.json:
        write_json(args.json, figures, nonfinite="null", indent=2)
    return 0


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"
