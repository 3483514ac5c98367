"""``havln-robot sweep SPEC.yaml``: a grid of evaluation settings through the eval engine, one table and one plot.

A spec (YAML)::

    episodes: 40                  # first N episodes of each split (default: all)
    base:                         # the same in every setting (default: the eval defaults)
      policy: small_panoramic
      split: val_seen
    grid:                         # the swept variables: every combination is one setting
      people: [0, 1]
      hfov_deg: [90, 69]

Every variable (``base`` or ``grid``) is a row of :data:`VARIABLES`: its name, the
:class:`havln_robot.eval.EvalOptions` field (or ``episodes``, the episodes file) it sets, and how a
YAML value becomes that option. Adding a variable is adding one row. Rows whose option does not
exist in this build (``max_angular_speed``, ``odom_noise_scale``, ``latency_s``: the closed-loop batch
world) are refused with the reason; they work without an edit once ``World`` has the
closed loop (:func:`havln_robot.eval.closed_loop_world`).

All settings' episodes go through :func:`havln_robot.eval.run_engine` at once (serial, or Ray:
``--ray`` / ``--workers`` as in eval), with the per-episode seeding of eval, so a setting's results
do not depend on the other settings or on the scheduling. Each setting's episodes are cached in
``<user cache>/sweep/<key>.jsonl`` (eval's partial results format), key = SHA-256 of the setting's
options, the episodes file's SHA-256, the episode limit, the code version (SHA-256 of every
``havln_robot`` source file) and the checkpoint's SHA-256: a rerun, or a wider grid, runs only
what is not in the cache, and an interrupted sweep resumes where it stopped.

Outputs (``--out DIR``): ``sweep.csv`` and ``sweep.md`` (one row per setting: n, SR, success, NE,
SPL, TCR, CR, each with a 95 % confidence interval) and ``sweep_sr.png`` (SR against each swept
variable). Intervals: Wilson score intervals for the rates (SR, success; CR = sum CR_i over the
human-influenced episodes), percentile bootstrap (2,000 resamples of the episodes, seed 0) for the
means (NE, SPL, TCR).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from havln_robot import eval as ev
from havln_robot import jsonio
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.paths import atomic_output, save_figure, staged_output_dir
from havln_robot.text import csv_text, md_cell, nonempty, number_in, path_arg, plural

Z95: float = 1.959963984540054
"""Standard normal quantile of 0.975 (two-sided 95 % intervals)."""
BOOTSTRAP_RESAMPLES: int = 2000
MAX_SETTINGS: int = 256
"""Largest grid (settings = product of the grid's list lengths) a sweep runs unless ``--max-settings`` raises it;
a larger grid is refused before any work (no cache file, no output)."""
OUTPUT_NAMES: tuple[str, ...] = ("sweep.md", "sweep.csv", "sweep_sr.png")
"""What ``--out`` receives (an existing one is replaced only with ``--overwrite``)."""


class SweepError(ValueError):
    """The sweep spec or its options are unusable; the one-line message names the field and the fix."""


# --------------------------------------------------------------------------------------- the table
def _int_ge0(name: str) -> Callable[[Any], int]:
    def conv(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise SweepError(f"{name}: {v!r} is not a whole number >= 0")
        return v

    return conv


def _float_in(name: str, lo: float, hi: float, lo_open: bool = True) -> Callable[[Any], float]:
    def conv(v: Any) -> float:
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or not math.isfinite(v)
            or not ((lo < v) if lo_open else (lo <= v))
            or v > hi
        ):
            raise SweepError(f"{name}: {v!r} is not a number in {'(' if lo_open else '['}{lo:g}, {hi:g}]")
        return float(v)

    return conv


def _policy(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise SweepError(f"policy: {v!r} is not a policy (expert, forward[:opts], random[:opts], or a checkpoint)")
    return v.strip()


#: split name → episodes file under the data folder.
SPLITS: dict[str, str] = {
    "val_seen": "ha_r2r_de/HA_val_seen.json",
    "r2r_val_seen": "r2r/R2R_val_seen.json",
    "r2r_train": "r2r/R2R_train.json",
}


def _people_mode(v: Any) -> str:
    if v not in ev.PEOPLE_MODES:
        raise SweepError(f"people_checks: {v!r} is not one of {', '.join(ev.PEOPLE_MODES)}")
    return str(v)


def _split(v: Any) -> str:
    from havln_robot.paths import data_dir

    if not isinstance(v, str) or not v.strip():
        raise SweepError(f"split: {v!r} is not a split ({', '.join(SPLITS)}) or an episodes file")
    return str(data_dir() / SPLITS[v]) if v in SPLITS else v


@dataclass(frozen=True)
class Variable:
    """One sweepable variable.

    Attributes:
        option: the :class:`havln_robot.eval.EvalOptions` field it sets, or ``episodes`` (the episodes file).
        convert: YAML value → option value; raises :class:`SweepError` (one line) for a bad value.
        unit: shown in the table header and the plot.
        doc: one line for ``--help`` and docs/scale.md.
        pending: non-empty: not available yet, and why (a spec using it is refused with this).
    """

    option: str
    convert: Callable[[Any], Any]
    unit: str
    doc: str
    pending: str = ""


_PENDING = "" if ev.closed_loop_world() else "needs the closed-loop batch world, not in this build"
"""Why the closed-loop-only variables are refused; empty once ``World`` runs the closed loop (they then need no edit)."""

#: THE table of sweep variables (name → :class:`Variable`).
VARIABLES: dict[str, Variable] = {
    "policy": Variable("policy", _policy, "", "policy spec or checkpoint (eval --policy)"),
    "split": Variable("episodes", _split, "", f"episodes: {', '.join(SPLITS)} (in the data folder) or a file (eval --episodes)"),
    "seed": Variable("seed", _int_ge0("seed"), "", "run seed: crowd placement, per-episode draws (eval --seed)"),
    "people": Variable("crowd", _int_ge0("people"), "", "people per episode: at most N of its own, N synthetic if none (eval --crowd)"),
    "people_checks": Variable(
        "people", _people_mode, "", "motion_node's people checks before each action: none, ground_truth, detected (eval --people)"
    ),
    "hfov_deg": Variable("hfov_deg", _float_in("hfov_deg", 0.0, 90.0), "deg", "camera horizontal field of view (eval --hfov-deg)"),
    "vfov_deg": Variable("vfov_deg", _float_in("vfov_deg", 0.0, 90.0), "deg", "camera vertical field of view (eval --vfov-deg)"),
    "heading_jitter_deg": Variable(
        "heading_jitter_deg",
        _float_in("heading_jitter_deg", 0.0, 10.0, lo_open=False),
        "deg",
        "panorama view-heading error std (eval --heading-jitter-deg)",
    ),
    "max_linear_speed": Variable(
        "max_linear_speed",
        _float_in("max_linear_speed", *MOTION_PARAMS.range("max_linear_speed"), lo_open=False),
        "m/s",
        "motion limit (eval --max-linear-speed; open-loop world: time per action = 0.25 m / this)",
    ),
    "max_angular_speed": Variable(
        "max_angular_speed",
        _float_in("max_angular_speed", *MOTION_PARAMS.range("max_angular_speed"), lo_open=False),
        "rad/s",
        "yaw-rate limit (eval --max-angular-speed)",
        _PENDING,
    ),
    "odom_noise_scale": Variable(
        "odom_noise_scale",
        _float_in("odom_noise_scale", 0.0, 100.0, lo_open=False),
        "",
        "factor on the base's odometry/IMU noise (eval --odom-noise-scale)",
        _PENDING,
    ),
    "latency_s": Variable(
        "latency_s", _float_in("latency_s", 0.0, 5.0, lo_open=False), "s", "actuation latency of the base (eval --latency-s)", _PENDING
    ),
}

_SPEC_KEYS = {"episodes", "base", "grid", "instruction_index"}


@dataclass(frozen=True)
class Setting:
    """One grid point: the swept values (for the table) and what eval runs.

    Attributes:
        values: variable name → value as written in the spec (grid variables only).
        episodes_file: the episodes file. options: the :class:`havln_robot.eval.EvalOptions`.
    """

    values: tuple[tuple[str, Any], ...]
    episodes_file: str
    options: ev.EvalOptions

    def label(self) -> str:
        """``people=0, hfov_deg=69`` (``base`` when nothing is swept)."""
        return ", ".join(f"{k}={v}" for k, v in self.values) or "base"


@dataclass(frozen=True)
class Spec:
    """A parsed sweep spec. Attributes: limit (episodes per split, None = all), swept (grid variable names), settings, instruction_index."""

    limit: int | None
    swept: tuple[str, ...]
    settings: tuple[Setting, ...]
    instruction_index: int = 0


def _apply(name: str, raw: Any, run: dict) -> None:
    var = VARIABLES.get(name)
    if var is None:
        raise SweepError(f"unknown variable {name!r}; choose from {', '.join(VARIABLES)}")
    if var.pending:
        raise SweepError(f"variable {name!r} is not available yet: {var.pending}")
    run[var.option] = var.convert(raw)


def parse_spec(doc: Any, where: str = "spec", max_settings: int = MAX_SETTINGS) -> Spec:
    """Check a loaded spec (see the module docstring) and expand its grid.

    Args:
        doc: the loaded YAML document.
        where: the spec's name for messages.
        max_settings: largest grid accepted; the grid is counted before it is expanded.

    Raises:
        SweepError: one line naming the field and the fix (a grid over ``max_settings`` names its size
            and ``--max-settings``).
    """
    if not isinstance(doc, dict):
        raise SweepError(f"{where}: expected a mapping with base: and grid:")
    extra = sorted(set(doc) - _SPEC_KEYS)
    if extra:
        raise SweepError(f"{where}: unknown key {extra[0]!r}; the keys are {', '.join(sorted(_SPEC_KEYS))}")
    limit = doc.get("episodes")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise SweepError(f"{where}: episodes: {limit!r} is not a whole number >= 1 (episodes per split; omit for all)")
    ii = doc.get("instruction_index", 0)
    if isinstance(ii, bool) or not isinstance(ii, int) or ii < 0:
        raise SweepError(f"{where}: instruction_index: {ii!r} is not a whole number >= 0")
    base, grid = doc.get("base") or {}, doc.get("grid") or {}
    if not isinstance(base, dict) or not isinstance(grid, dict):
        raise SweepError(f"{where}: base and grid are mappings of variable: value / variable: [values]")
    run: dict[str, Any] = {"episodes": None}
    for name, raw in base.items():
        try:
            _apply(str(name), raw, run)
        except SweepError as exc:
            raise SweepError(f"{where}: base: {exc}") from None
    axes: list[tuple[str, list]] = []
    for name, vals in grid.items():
        if not isinstance(vals, list) or not vals:
            raise SweepError(f"{where}: grid: {name}: give a list of values, e.g. {name}: [a, b]")
        if name in base:
            raise SweepError(f"{where}: grid: {name} is also in base; keep it in one of them")
        if len({repr(v) for v in vals}) != len(vals):
            raise SweepError(f"{where}: grid: {name}: a value is listed twice")
        axes.append((str(name), vals))
    count = math.prod(len(v) for _, v in axes)
    if count > max_settings:
        sizes = " x ".join(f"{len(v)} {n}" for n, v in axes)
        raise SweepError(
            f"{where}: grid: {count} settings ({sizes}) exceed the limit of {max_settings}; "
            "narrow the grid, or pass --max-settings N to run that many"
        )
    settings = []
    names = [n for n, _ in axes]
    for combo in itertools.product(*[v for _, v in axes]):
        r = dict(run)
        for name, raw in zip(names, combo, strict=True):
            try:
                _apply(name, raw, r)
            except SweepError as exc:
                raise SweepError(f"{where}: grid: {exc}") from None
        from havln_robot.paths import data_dir

        episodes = r.pop("episodes") or str(data_dir() / SPLITS["val_seen"])
        opts = ev.EvalOptions(**{k: v for k, v in r.items() if k in {f.name for f in fields(ev.EvalOptions)}})
        settings.append(Setting(tuple(zip(names, combo, strict=True)), episodes, opts))
    return Spec(limit, tuple(names), tuple(settings), ii)


def load_spec(path: str | Path, max_settings: int = MAX_SETTINGS) -> Spec:
    """Read and check a spec file (grids over ``max_settings`` settings are refused, :func:`parse_spec`).

    Raises:
        SweepError: missing file, invalid YAML or a bad field (one line).
    """
    from havln_robot.yamlio import YamlFileError, load_yaml_file

    try:
        doc = load_yaml_file(path)
    except FileNotFoundError:
        raise SweepError(f"{path}: no such spec file; give a YAML file with base: and grid: (docs/scale.md)") from None
    except YamlFileError as exc:
        raise SweepError(str(exc)) from None
    return parse_spec(doc, str(path), max_settings)


# --------------------------------------------------------------------------------------- cache keys
def code_version() -> str:
    """SHA-256 (hex, 16 characters) of every ``havln_robot/**/*.py`` file's path and bytes: a result cached by
    one version of the code is never reused by another."""
    root = Path(ev.__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _file_sha(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def checkpoint_hash(policy: str) -> str:
    """SHA-256 of the checkpoint file ``policy`` names; ``""`` for expert and the builtins.

    Raises:
        PolicyError: the checkpoint is not found.
    """
    from havln_robot.policy.registry import RESERVED_NAMES, is_builtin, resolve_checkpoint

    if policy in RESERVED_NAMES or is_builtin(policy):
        return ""
    return _file_sha(resolve_checkpoint(policy))


def cache_key(setting: Setting, limit: int | None, instruction_index: int, code: str, ckpt: str, episodes_sha: str) -> str:
    """The cache file name of a setting (SHA-256 hex of everything its results depend on)."""
    ident = {
        "options": setting.options.key(),
        "episodes_sha256": episodes_sha,
        "limit": limit,
        "instruction_index": instruction_index,
        "code": code,
        "checkpoint_sha256": ckpt,
    }
    return hashlib.sha256(jsonio.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]


def cache_dir() -> Path:
    """``<user cache>/sweep`` (platformdirs; ``~/.cache/havln_robot/sweep`` on Linux)."""
    from havln_robot.paths import user_cache_root

    return user_cache_root() / "sweep"


# --------------------------------------------------------------------------------------- statistics
def wilson(k: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval (Wilson 1927) of a binomial rate k / n; (nan, nan) when n = 0."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    d = 1.0 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def bootstrap_mean(x: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap 95 % interval of the mean of ``x`` (1-D float; resampled episodes, fixed seed)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def summarize(records: list) -> dict[str, Any]:
    """Per-setting figures with 95 % intervals from :class:`havln_robot.eval.EpisodeRecord` s (non-empty).

    Returns:
        dict: n, sr, sr_lo, sr_hi, success(_lo/_hi), ne(_lo/_hi) m, spl(_lo/_hi), tcr(_lo/_hi), cr(_lo/_hi), cr_denominator.
    """
    from havln_robot.sim.metrics import aggregate

    m = [r.metrics for r in records]
    agg = aggregate(m, with_humans=[r.humans > 0 for r in records])
    n = len(m)
    out: dict[str, Any] = {"n": n}
    for key, k in (("sr", sum(x.sr for x in m)), ("success", sum(x.success for x in m))):
        lo, hi = wilson(k, n)
        out |= {key: k / n, f"{key}_lo": lo, f"{key}_hi": hi}
    for key, vals in (("ne", [x.ne for x in m]), ("spl", [x.spl for x in m]), ("tcr", [x.tcr for x in m])):
        lo, hi = bootstrap_mean(np.array(vals))
        out |= {key: float(np.mean(vals)), f"{key}_lo": lo, f"{key}_hi": hi}
    lo, hi = wilson(sum(x.cr for x in m), agg.cr_denominator)
    out |= {"cr": agg.cr, "cr_lo": lo, "cr_hi": hi, "cr_denominator": agg.cr_denominator}
    return out


# --------------------------------------------------------------------------------------- outputs
_COLS = (
    ("sr", "SR", 100, "%"),
    ("success", "success", 100, "%"),
    ("ne", "NE", 1, "m"),
    ("spl", "SPL", 1, ""),
    ("tcr", "TCR", 1, ""),
    ("cr", "CR", 1, ""),
)


def _fmt(row: dict, key: str, scale: float) -> str:
    digits = 1 if scale == 100 else (2 if key in ("ne", "tcr") else 3)
    v, lo, hi = (scale * row[key], scale * row[f"{key}_lo"], scale * row[f"{key}_hi"])
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def markdown_table(spec: Spec, rows: list[dict]) -> str:
    """The sweep table as Markdown: one line per setting, each figure ``value [95 % interval]``."""
    head = list(spec.swept) + ["n"] + [f"{label}{f' ({u})' if u else ''}" for _k, label, _s, u in _COLS]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        cells = [md_cell(v) for _k, v in r["setting"].values] + [str(r["n"])] + [_fmt(r, k, s) for k, _l, s, _u in _COLS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_csv(path: Path, spec: Spec, rows: list[dict]) -> None:
    """One line per setting: the swept values, n, and every figure with its ``_lo`` / ``_hi`` bounds (rates in [0, 1]).

    Written atomically (:func:`havln_robot.paths.atomic_output`); raises OSError with ``path`` untouched."""
    keys = ["n"] + [f"{k}{s}" for k, *_ in _COLS for s in ("", "_lo", "_hi")] + ["cr_denominator", "cache_key"]
    with atomic_output(path) as tmp, tmp.open("w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(list(spec.swept) + keys)
        for r in rows:
            # a swept value is text from the spec (a policy spec, an episodes file): the one CSV rule (text.csv_text)
            wr.writerow([csv_text(v) if isinstance(v, str) else v for _k, v in r["setting"].values] + [r[k] for k in keys])


def plot(path: Path, spec: Spec, rows: list[dict], title: str) -> None:
    """SR (with its Wilson interval) against each swept variable: one panel per variable, one line per
    combination of the other swept variables."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    swept = list(spec.swept) or ["setting"]
    fig, axes = plt.subplots(1, len(swept), figsize=(4.2 * len(swept) + 0.8, 4.0), squeeze=False)
    for ax, var in zip(axes[0], swept, strict=True):
        others = [v for v in spec.swept if v != var]
        groups: dict[tuple, list[dict]] = {}
        for r in rows:
            vals = dict(r["setting"].values)
            groups.setdefault(tuple((o, vals[o]) for o in others), []).append(r)
        xs_all = [dict(r["setting"].values).get(var, "base") for r in rows]
        numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs_all)
        cats = list(dict.fromkeys(str(x) for x in xs_all))
        span = (max(xs_all) - min(xs_all) if numeric and len(set(xs_all)) > 1 else 1.0) if numeric else 1.0
        for g, (key, grp) in enumerate(groups.items()):
            xv = [dict(r["setting"].values).get(var, "base") for r in grp]
            x = np.array(xv, dtype=float) if numeric else np.array([cats.index(str(v)) for v in xv], dtype=float)
            x = x + (g - (len(groups) - 1) / 2) * 0.025 * span  # dodge: equal series stay visible
            o = np.argsort(x)
            y = np.array([100 * r["sr"] for r in grp])[o]
            lo = np.array([100 * r["sr_lo"] for r in grp])[o]
            hi = np.array([100 * r["sr_hi"] for r in grp])[o]
            label = ", ".join(f"{k}={v}" for k, v in key) or None
            yerr = [np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)]
            ax.errorbar(x[o], y, yerr=yerr, marker="o", capsize=3, label=label, linestyle="-" if numeric else "none")
        if numeric:
            ax.set_xticks(sorted(set(xs_all)))
        if not numeric:
            ax.set_xticks(range(len(cats)), cats, rotation=20 if max(len(c) for c in cats) > 8 else 0)
        unit = VARIABLES[var].unit if var in VARIABLES else ""
        ax.set_xlabel(f"{var} ({unit})" if unit else var)
        ax.set_ylabel("SR (%), 95 % Wilson interval")
        top = max([100 * r["sr_hi"] for r in rows] + [10.0])
        ax.set_ylim(-2, min(102.0, top * 1.1 + 2))  # the intervals, not an empty 0-100 axis
        ax.grid(alpha=0.3)
        if len(groups) > 1:
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=min(3, len(groups)), frameon=False)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------------------- running
def run_sweep(spec: Spec, target, quiet: bool = False, log: Callable[[str], None] | None = None) -> list[dict]:
    """Run every setting of ``spec`` (cached ones are read back) through :func:`havln_robot.eval.run_engine`.

    Returns:
        One dict per setting, in spec order: :func:`summarize` figures plus ``setting``, ``cache_key``, ``ran`` (episodes run now).

    Raises:
        SweepError: an episodes file, a policy or a checkpoint is unusable, or episodes failed (the finished ones stay cached).
        ClusterError: Ray missing or unreachable.
    """
    from havln_robot.episodes import EpisodeError, load_episodes
    from havln_robot.policy.registry import is_builtin, make_policy

    log = log or (lambda s: None)
    code = code_version()
    episodes_cache: dict[str, tuple[list, dict, str]] = {}
    plan = []
    for s in spec.settings:
        if s.episodes_file not in episodes_cache:
            try:
                eps = load_episodes(s.episodes_file, s.options.connectivity_dir, limit=spec.limit, instruction_index=spec.instruction_index)
            except EpisodeError as exc:
                raise SweepError(f"setting {s.label()}: {exc}") from None
            baselines, _why = ev.default_baseline(Path(s.episodes_file), eps)
            episodes_cache[s.episodes_file] = (eps, baselines, _file_sha(s.episodes_file))
        eps, baselines, sha = episodes_cache[s.episodes_file]
        try:
            if is_builtin(s.options.policy):
                make_policy(s.options.policy)
            ckpt = checkpoint_hash(s.options.policy)
        except Exception as exc:  # noqa: BLE001 - PolicyError: one line
            raise SweepError(f"setting {s.label()}: {exc}") from None
        key = cache_key(s, spec.limit, spec.instruction_index, code, ckpt, sha)
        run_id = s.options.key() | {"episodes_file": str(Path(s.episodes_file).resolve()), "cache_key": key}
        partial = ev.PartialResults(cache_dir() / f"{key}.jsonl", run_id, resume=True)
        plan.append((s, key, eps, partial, ev.make_jobs(eps, s.options, baselines, tag=key)))
    todo = [j for _s, _k, eps, partial, jobs in plan for j in jobs if eps[j.index].episode_id not in partial.done]
    cached = sum(len(jobs) for *_x, jobs in plan) - len(todo)
    log(f"sweep: {plural(len(plan), 'setting')}, {plural(len(todo), 'episode')} to run, {cached} cached in {cache_dir()}")
    by_key = {key: (eps, partial) for _s, key, eps, partial, _j in plan}

    def got(res) -> None:
        k, tag, row = res
        eps, partial = by_key[tag]
        partial.add(eps[k].episode_id, row)

    outcome = ev.run_engine(todo, target, got, quiet)
    if outcome.failed:
        first = next(iter(outcome.failed.values()))
        raise SweepError(
            f"{plural(len(outcome.failed), 'episode')} failed (first: {first}); the finished ones are cached: run the sweep again"
        )
    rows = []
    ran = {}
    for j in todo:
        ran[j.tag] = ran.get(j.tag, 0) + 1
    for s, key, eps, partial, _jobs in plan:
        recs = [ev.EpisodeRecord.from_row(r, r["actions"]) for e in eps if isinstance(r := partial.done.get(e.episode_id), dict)]
        if not recs:
            raise SweepError(f"setting {s.label()}: no episode could be run")
        rows.append(summarize(recs) | {"setting": s, "cache_key": key, "ran": ran.get(key, 0)})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``havln-robot sweep``; returns the exit code (0 ok, 1 episodes failed, 2 bad input)."""
    from havln_robot.cluster import ClusterError, parse_target

    var_help = "; ".join(f"{k} ({v.pending and 'pending: ' + v.pending or v.doc})" for k, v in VARIABLES.items())
    ap = argparse.ArgumentParser(
        prog="havln-robot sweep",
        description="Evaluate a grid of settings (SPEC.yaml: episodes, base, grid) and write one table (CSV + Markdown) and a plot of SR.",
        epilog=f"variables: {var_help}",
    )
    ap.add_argument("spec", type=path_arg, help="sweep spec YAML (docs/scale.md)")
    ap.add_argument("--out", type=path_arg, default="runs/sweep", help="folder for sweep.csv, sweep.md, sweep_sr.png (default runs/sweep)")
    ap.add_argument(
        "--ray",
        type=nonempty("auto, local or a cluster address"),
        default=None,
        metavar="auto|local|ADDRESS",
        help="run episodes as Ray tasks (as eval --ray)",
    )
    ap.add_argument("--workers", type=number_in(1, 4096, integer=True), default=None, help="Ray local with N CPUs (as eval --workers)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--overwrite", action="store_true", help="replace the table and plot of an earlier sweep in --out")
    ap.add_argument(
        "--max-settings",
        type=number_in(1, 10**9, integer=True),
        default=MAX_SETTINGS,
        help=f"largest grid to run (default {MAX_SETTINGS}); a larger one is refused before any work",
    )
    args = ap.parse_args(argv)
    try:
        target = parse_target(args.ray, args.workers)
    except ValueError as exc:
        ap.error(str(exc))
    from havln_robot.paths import prepare_out_dir, refuse_overwrite

    try:
        spec = load_spec(args.spec, args.max_settings)
    except SweepError as exc:
        print(f"havln-robot sweep: {exc}", file=sys.stderr)
        return 2
    out = prepare_out_dir(args.out, "--out")  # before the episodes run, so their table cannot be lost
    refuse_overwrite(out, "--out", args.overwrite, names=OUTPUT_NAMES)  # nor an earlier sweep's (its episodes stay cached)
    print(f"sweep: {plural(len(spec.settings), 'setting')} in the grid of {Path(args.spec).name}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        rows = run_sweep(spec, target, args.quiet, log=lambda s: print(s, file=sys.stderr))
    except SweepError as exc:
        print(f"havln-robot sweep: {exc}", file=sys.stderr)
        return 1 if "failed" in str(exc) else 2
    except (ev.EvalError, ClusterError) as exc:
        print(f"havln-robot sweep: {exc}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - t0
    table = markdown_table(spec, rows)
    base = spec.settings[0]
    fixed = f"policy {base.options.policy}, {Path(base.episodes_file).name}" + (f", first {spec.limit} episodes" if spec.limit else "")
    if "policy" in spec.swept:
        fixed = fixed.split(", ", 1)[1]
    caption = f"Sweep {Path(args.spec).name}: {fixed}; 95 % intervals: Wilson (SR, success, CR), bootstrap (NE, SPL, TCR)."
    try:  # all three files at once: --out holds the earlier sweep's set or this one, never a mix
        with staged_output_dir(out, stale=OUTPUT_NAMES) as stage:
            with atomic_output(stage / "sweep.md") as tmp:
                tmp.write_text(caption + "\n\n" + table)
            write_csv(stage / "sweep.csv", spec, rows)
            plot(stage / "sweep_sr.png", spec, rows, caption.split(";")[0])
    except OSError as exc:
        print(table, end="")
        print(
            f"havln-robot sweep: cannot write the results into --out {out} ({exc.strerror or exc}); it was left as it was -- "
            "free space or choose another --out and rerun (the episodes are cached, nothing runs again)",
            file=sys.stderr,
        )
        return 1
    print(caption + "\n")
    print(table, end="")
    print(f"\n{plural(sum(r['ran'] for r in rows), 'episode')} run in {seconds:.1f} s; wrote {out}/sweep.md, sweep.csv, sweep_sr.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
