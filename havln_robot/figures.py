"""``havln-robot bench all [--markdown] [--quick] [--update-readme README.md]``: the README's figures.

Runs every benchmark the README quotes, each in its own interpreter exactly as a user would type
it (``havln-robot eval``, ``bench sim|motion|policy|perception|robot|scale``, ``trial bench``,
``export`` + ``replay``, and a timed ``validate`` of a full-size bundle), ``--repeats`` times for
the speeds, and prints the figure tables with the machine (CPU model, cores, OS) and the date:

* deterministic figures (success, SR, NE, SPL, collisions, replay SR/NE/TCR/CR, motion errors)
  exactly -- they must agree between repeats, and a disagreement is reported as an error;
* speeds and latencies as ``min–max`` over the repeats (one value when there is one repeat).

``--quick`` runs a tiny version (2 episodes, one repeat, short timings) in well under a minute: the
test suite runs it. Parts that need the HA-VLN data (:func:`havln_robot.paths.data_dir`, filled by
``havln-robot data fetch``) are skipped with the reason when it is absent.

``--update-readme FILE`` replaces the text between ``<!-- figures:begin -->`` and
``<!-- figures:end -->`` in FILE with the tables (the markers stay), so the README's figures come
from a command anyone can re-run. With ``--only`` it rewrites just those parts' own blocks inside the
figures (``<!-- figures:PART:begin -->`` .. ``end``; the robot's and the safety course's), keeping every other
figure: ``bench all --only safety --update-readme README.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from havln_robot import jsonio
from havln_robot.paths import write_json
from havln_robot.text import nonempty, number_in, path_arg

BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"
#: Largest ``--update-readme`` file read, bytes (the project's README is ~60 KiB).
MAX_README_BYTES = 16 * 1024 * 1024

#: The four policies of the README's simulator table, in its order (label, --policy value).
POLICIES = (("expert", "expert"), ("forward", "forward"), ("random", "random"), ("`small_panoramic` (trained, shipped)", "small_panoramic"))


class FiguresError(ValueError):
    """A benchmark failed or its deterministic figures differ between repeats."""


@dataclass
class Plan:
    """How much each benchmark runs: the full figure run or ``--quick``.

    Attributes:
        quick: the tiny version (the test suite's).
        repeats: runs of every speed benchmark (speeds are min–max over them).
        episodes: val_seen episodes for ``eval`` (None = all 340).
        model_episodes: episodes for the shipped model (None = all; it runs at ~0.5 episode/s).
        replay_episodes: episodes for ``export --follow-reference`` + ``replay``.
        agreement_episodes: val_seen episodes of ``bench agreement`` (batch vs live graph; hours at 40).
        safety_seeds: seeds per scenario of ``bench safety``.
        safety_episodes: val_seen reference paths of its false refusals.
    """

    quick: bool = False
    repeats: int = 3
    episodes: int | None = None
    model_episodes: int | None = None
    replay_episodes: int = 100
    agreement_episodes: int = 40
    safety_seeds: int = 3
    safety_episodes: int = 64
    sim: list[str] = field(default_factory=list)
    motion: list[str] = field(default_factory=lambda: ["--ros-estop", "50"])
    policy: list[str] = field(default_factory=list)
    perception: list[str] = field(default_factory=list)
    robot: list[str] = field(default_factory=lambda: ["--trials", "20"])
    trial: list[str] = field(default_factory=list)
    people: list[str] = field(default_factory=list)
    scale: list[str] = field(default_factory=lambda: ["--episodes", "12"])

    @classmethod
    def make(cls, quick: bool, repeats: int | None) -> Plan:
        """The full plan, or the quick one; ``repeats`` overrides the default repeat count."""
        if not quick:
            return cls(repeats=repeats or 3)
        return cls(
            quick=True,
            repeats=repeats or 1,
            episodes=2,
            model_episodes=2,
            replay_episodes=2,
            agreement_episodes=2,
            sim=["--scans", "1", "--frames", "3", "--steps", "200", "--node-seconds", "0", "--expert", "2"],
            motion=["-n", "3", "--estop", "3"],
            policy=["--steps", "2"],
            perception=["--seconds", "1", "--panoramas", "1"],
            robot=["--trials", "1"],
            trial=["--steps", "20"],
            people=["--quick", "--people", "4", "--empty-scans", "1", "--empty-poses", "2"],
            scale=["--policy", "expert", "--episodes", "2"],
        )


# --- the machine ----------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """CPU model, logical cores, OS and Python of this machine, and today's date (UTC)."""
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    os_name = platform.platform(terse=True)
    try:
        rel = dict(
            line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line and not line.startswith("#")
        )
        os_name = f"{rel.get('PRETTY_NAME', os_name).strip(chr(34))}, Linux {platform.release()}"
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count() or 0,
        "os": os_name,
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
    }


# --- running the commands ---------------------------------------------------------------------------


def _havln(args: Sequence[str], timeout: float, log: Callable[[str], None], ok: Sequence[int] = (0,)) -> str:
    """``havln-robot ARGS`` in a fresh interpreter; returns stdout. Raises FiguresError on failure
    (an exit code not in ``ok``)."""
    cmd = [sys.executable, "-m", "havln_robot.cli", *args]
    log("  $ havln-robot " + " ".join(args))
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=os.environ.copy())
    except subprocess.TimeoutExpired:
        raise FiguresError(f"havln-robot {' '.join(args[:2])} took longer than {timeout:.0f} s") from None
    if out.returncode not in ok:
        lines = (out.stderr.strip() or out.stdout.strip()).splitlines()
        raise FiguresError(f"havln-robot {' '.join(args[:2])} failed (exit {out.returncode}): {lines[-1] if lines else ''}")
    return out.stdout


def _same(values: Sequence[Any], what: str) -> Any:
    """The value all repeats agree on; FiguresError when a deterministic figure differs."""
    first = values[0]
    for v in values[1:]:
        if v != first:
            raise FiguresError(f"{what} differs between repeats ({first!r} vs {v!r}); it should be deterministic")
    return first


def span(values: Sequence[float | None], fmt: str = "{:.1f}") -> str:
    """``"min–max"`` of the finite values (one value when they round alike); ``"n/a"`` when none."""
    vs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vs:
        return "n/a"
    lo, hi = fmt.format(min(vs)), fmt.format(max(vs))
    return lo if lo == hi else f"{lo}–{hi}"


def _duration(seconds: float) -> str:
    """``"36 s"`` below two minutes, else ``"31 min"``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _gfmt(x: float) -> str:
    """Thousands separator for large rates (11,189), one decimal below 100."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def _grange(values: Sequence[float]) -> str:
    vs = [v for v in values if v is not None and math.isfinite(v)]
    if not vs:
        return "n/a"
    lo, hi = _gfmt(min(vs)), _gfmt(max(vs))
    return lo if lo == hi else f"{lo}–{hi}"


# --- the benchmarks ------------------------------------------------------------------------------------


def run_eval(plan: Plan, data: Path, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``havln-robot eval`` of the four policies on val_seen; deterministic metrics + episodes/s per repeat."""
    ep_file = data / "ha_r2r_de" / "HA_val_seen.json"
    rows = []
    floors = None
    for label, pol in POLICIES:
        limit = plan.model_episodes if pol == "small_panoramic" else plan.episodes
        reps = 1 if pol == "small_panoramic" and not plan.quick else plan.repeats  # the model alone runs ~10 min
        runs, speeds = [], []
        for r in range(reps):
            out = tmp / f"eval_{pol}_{r}"
            args = ["eval", "--policy", pol, "--episodes", str(ep_file), "--seed", "0", "--out", str(out), "-q"]
            if limit:
                args += ["--limit", str(limit)]
            _havln(args, 7200, log)
            s = jsonio.load_json_file(out / "summary.json")
            recs = _json_lines(out / "results.jsonl")
            ne = sorted(float(x["ne"]) for x in recs)
            runs.append(
                {
                    "episodes": int(s["n"]),
                    "success_pct": round(100 * float(s["success_rate"]), 1),
                    "sr_pct": round(100 * float(s["sr"]), 1),
                    "ne_median_m": round(float(s.get("ne_median", ne[len(ne) // 2] if ne else float("nan"))), 2),
                    "spl": round(float(s["spl"]), 3),
                    "collisions_human": int(s["collisions_human"]),
                    "collisions_static": int(s["collisions_static"]),
                    "floor_changing": sum(bool(x.get("floors_changed")) for x in recs),
                }
            )
            speeds.append(float(s["episodes_per_s"]))
        row = dict(_same(runs, f"eval --policy {pol}"), label=label, policy=pol, episodes_per_s=speeds)
        floors = row["floor_changing"] if floors is None else floors
        rows.append(row)
    return {"episodes_file": str(ep_file), "rows": rows, "floor_changing": floors}


def _json_lines(path: Path) -> list[Any]:
    """The records of a JSON Lines file a benchmark wrote (eval's results.jsonl), read through the bounded reader.

    Raises:
        jsonio.JsonFileError: too large, not UTF-8, or a line that is not JSON (names the file and line).
    """
    text = jsonio.read_bytes_capped(path, gunzip=False).decode("utf-8", "replace")
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line, parse_int=jsonio.parse_int))
            except (ValueError, RecursionError) as exc:
                raise jsonio.JsonFileError(f"{path}: line {n}: not valid JSON ({exc})") from None
    return out


def _json_runs(name: str, base: list[str], flag: str, plan: Plan, tmp: Path, log: Callable[[str], None]) -> list[dict]:
    """Run ``havln-robot bench NAME`` ``plan.repeats`` times, each writing its figures as JSON via ``flag``."""
    docs = []
    for r in range(plan.repeats):
        out = tmp / f"{name}_{r}.json"
        _havln(["bench", name, *base, flag, str(out)], 3600, log)
        docs.append(jsonio.load_json_file(out))
    return docs


def run_sim(plan: Plan, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``bench sim``: frames/s per resolution, batch steps/s, sim_node topic rates (ranges over repeats)."""
    docs = _json_runs("sim", plan.sim, "--out", plan, tmp, log)
    res: dict[str, Any] = {"scans": docs[0].get("scans", []), "render": {}}
    for d in docs:
        for r in d.get("render", []):
            res["render"].setdefault(r["resolution"], []).append(r["fps"])
    res["steps_per_s"] = [d["steps"]["steps_per_s"] for d in docs if "steps" in d]
    res["expert_actions_per_s"] = [d["expert"]["actions_per_s"] for d in docs if "expert" in d]
    res["expert_ceiling"] = [d["expert"]["ceiling_actions_per_s"] for d in docs if "expert" in d]
    res["expert_episodes"] = max((d["expert"]["episodes"] for d in docs if "expert" in d), default=0)
    res["camera_hz"] = [d["sim_node"]["color_hz"] for d in docs if "sim_node" in d]
    res["odom_hz"] = [d["sim_node"]["odom_hz"] for d in docs if "sim_node" in d]
    res["imu_hz"] = [d["sim_node"]["imu_hz"] for d in docs if "sim_node" in d]
    return res


def run_motion(plan: Plan, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``bench motion``: position/yaw errors and duration ratios (deterministic: seeded simulator), e-stop latency ranges."""
    docs = _json_runs("motion", plan.motion, "--json", plan, tmp, log)
    keys = ("pos_p50_m", "pos_p95_m", "yaw_p50_deg", "yaw_p95_deg", "ratio_mean")
    moves = ("MOVE_FORWARD", "TURN_LEFT", "TURN_RIGHT")  # LOOK_UP/LOOK_DOWN are unsupported on the Go2 (no figures)
    acts = _same([{a: {k: round(d["actions"][a][k], 6) for k in keys} for a in moves} for d in docs], "bench motion errors")
    est = [d["estop"] for d in docs]
    return {
        "actions": acts,
        "n": docs[0]["actions"]["MOVE_FORWARD"]["outcomes"],
        "ros_p50_ms": [e.get("ros_latency_p50_ms") for e in est],
        "ros_p95_ms": [e.get("ros_latency_p95_ms") for e in est],
        "cmd_max_ms": [e["command_latency_max_ms"] for e in est],
    }


def run_policy(plan: Plan, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``bench policy --skip-eval``: decision latency of the shipped model and of the HA-VLN-CMA layout."""
    docs = _json_runs("policy", [*plan.policy, "--skip-eval"], "--json", plan, tmp, log)
    return {
        "small_ms": [d["small"]["median_ms"] for d in docs],
        "cma_ms": [d["cma"]["median_ms"] for d in docs],
        "small_params_m": docs[0]["small"]["params"] / 1e6,
        "cma_params_m": docs[0]["cma"]["params"] / 1e6,
    }


def run_perception(plan: Plan, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``bench perception``: preprocessing ms/view, capture frames/s, agent-side panorama overhead."""
    docs = _json_runs("perception", plan.perception, "--json", plan, tmp, log)
    return {k: [d[k] for d in docs] for k in ("preprocess_ms", "capture_fps", "panorama_agent_s")}


def run_people(plan: Plan, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``bench people``: the tracker against simulator ground truth (one run: the accuracy figures are
    deterministic -- seeded people, deterministic rendering and tracking; CPU time is this run's)."""
    out = tmp / "people.json"
    _havln(["bench", "people", *plan.people, "--json", str(out)], 3600, log)
    return jsonio.load_json_file(out)


def run_robot(plan: Plan, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``bench robot``: go2_driver_node against the fake Go2 (latencies, ms)."""
    docs = _json_runs("robot", plan.robot, "--json", plan, tmp, log)
    return {
        "first_move_p50": [d["first_move"]["p50_ms"] for d in docs],
        "interval_p50": [d["move_interval"]["p50_ms"] for d in docs],
        "damp_p50": [d["estop_damp"]["p50_ms"] for d in docs],
        "damp_p95": [d["estop_damp"]["p95_ms"] for d in docs],
        "watchdog_p50": [d["watchdog_stopmove"]["p50_ms"] for d in docs],
        "state_lost": [d["state_lost_stopmove_ms"] for d in docs],
        "watchdog_ms": docs[0]["watchdog_ms"],
        "state_timeout_ms": docs[0]["state_timeout_ms"],
    }


_TRIAL_MEDIAN = re.compile(r"median\s+([\d.]+)\s*ms")


def run_scale(plan: Plan, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``bench scale``: eval throughput serial vs Ray 1 / 2 local workers, runtime start, overhead per episode (one run: ~3 min)."""
    out = tmp / "scale.json"
    _havln(["bench", "scale", *plan.scale, "--out", str(out)], 3600, log)
    return jsonio.load_json_file(out)


def run_trial(plan: Plan, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``trial bench``: median commit latency of one trial step (ms)."""
    med = []
    for _ in range(plan.repeats):
        out = _havln(["trial", "bench", *plan.trial, "--dir", str(tmp)], 600, log)
        m = _TRIAL_MEDIAN.search(out)
        if m is None:
            raise FiguresError(f"havln-robot trial bench printed no median: {out.strip()[:200]}")
        med.append(float(m.group(1)))
    return {"median_ms": med}


def run_validate(plan: Plan, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Time ``validate`` (in process, as the command runs it) of a full-size bundle: every official id × 500 actions."""
    from havln_robot.challenge.cli import resolve_manifests
    from havln_robot.challenge.format import write_split_file
    from havln_robot.challenge.pack import pack
    from havln_robot.challenge.validate import validate_zip

    manifests = resolve_manifests([], ["val_seen", "val_unseen"], required=True)
    seq = (["MOVE_FORWARD", "TURN_LEFT", "MOVE_FORWARD", "TURN_RIGHT"] * 125)[:499] + ["STOP"]
    files = [write_split_file(tmp / f"{s}.json", s, {i: seq for i in m.ids}) for s, m in manifests.items()]
    zpath = pack(files, tmp / "full_bundle.zip")
    times = []
    for _ in range(plan.repeats):
        t0 = time.perf_counter()
        rep = validate_zip(zpath, manifests)
        times.append(time.perf_counter() - t0)
        if not rep.ok:
            raise FiguresError(f"the generated full-size bundle fails validation: {rep.render().splitlines()[0]}")
    log(f"  validate of {zpath.name} ({zpath.stat().st_size / 1e6:.1f} MB zip) in process")
    return {
        "episodes": {s: len(m.ids) for s, m in manifests.items()},
        "json_mb": sum(f.stat().st_size for f in files) / 1e6,
        "seconds": times,
    }


_REPLAY = re.compile(r"SR ([\d.]+)\s+NE ([\d.]+|n/a) m\s+TCR ([\d.]+)\s+CR ([\d.]+)")


def run_replay(plan: Plan, data: Path, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``export --follow-reference`` then ``replay --episodes N`` (batch): SR/NE/TCR/CR and seconds per repeat."""
    ep_file = data / "ha_r2r_de" / "HA_val_seen.json"
    out_dir = tmp / "follow"
    _havln(
        [
            "export",
            "--follow-reference",
            str(ep_file),
            "--split",
            "val_seen",
            "--limit",
            str(plan.replay_episodes),
            "--out-dir",
            str(out_dir),
        ],
        600,
        log,
    )
    runs, secs = [], []
    for _ in range(plan.repeats):
        t0 = time.perf_counter()
        out = _havln(["replay", str(out_dir / "val_seen.json"), "--episodes", str(plan.replay_episodes), "--quiet"], 1800, log)
        secs.append(time.perf_counter() - t0)
        m = _REPLAY.search(out)
        if m is None:
            raise FiguresError(f"havln-robot replay printed no aggregate line: {out.strip()[-200:]}")
        runs.append({"sr": m.group(1), "ne": m.group(2), "tcr": m.group(3), "cr": m.group(4)})
    return dict(_same(runs, "replay SR/NE/TCR/CR"), episodes=plan.replay_episodes, seconds=secs)


def run_agreement(plan: Plan, data: Path, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``bench agreement``: batch vs the live graph on the same inputs (``--quick``: the reference files only)."""
    out = tmp / "agreement.json"
    args = ["bench", "agreement", "--episodes", str(plan.agreement_episodes), "--json", str(out)]
    if plan.quick:
        args += ["--kinds", "reference", "--real-time-factor", "2"]
    _havln(args, 6 * 3600, log)
    doc = jsonio.load_json_file(out)
    return {"episodes": plan.agreement_episodes, "summary": doc["summary"]}


def run_safety(plan: Plan, data: Path, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``bench safety --live``: the safety course in the embedded simulator, depth and depth + LiDAR,
    its live subset through the real motion_node, and the false refusals on val_seen reference paths
    (exit 1 = a target missed: the table says which)."""
    out = tmp / "safety.json"
    args = ["bench", "safety", "--live", "--seeds", str(plan.safety_seeds), "--episodes", str(plan.safety_episodes), "--json", str(out)]
    _havln(args, 6 * 3600, log, ok=(0, 1))
    return dict(jsonio.load_json_file(out))


#: A part's own block inside the figures (``bench all --only PART --update-readme`` rewrites just it).
def part_markers(part: str) -> tuple[str, str]:
    """The begin / end markers of ``part``'s block inside the figures."""
    return f"<!-- figures:{part}:begin -->", f"<!-- figures:{part}:end -->"


def safety_markdown(sf: dict[str, Any]) -> list[str]:
    """The README's safety-course block (:mod:`havln_robot.bench.safety`), inside its part markers."""
    from havln_robot.bench.safety import table_lines

    b, e = part_markers("safety")
    lines = [
        b,
        f"**Safety course** (`havln-robot bench safety --seeds {sf['seeds']}`: boxes, ledges, stairs down, a low table, a chair, "
        "a glass door, a person stepping out, a doorway, open floor in the embedded simulator through motion_node's safety layer "
        "with the go2 profile; docs/safety.md; targets: 0 contacts with static obstacles of 0.10 m or more, 0 falls, "
        f"false refusals <= 2 %: {'met' if sf.get('targets_met') else 'MISSED'}; each cell: depth / depth + LiDAR)",
        "",
        *table_lines(sf["rows"]),
        "",
    ]
    fr = sf.get("false_refusals")
    if isinstance(fr, dict):
        lines += [
            f"False refusals: {fr['refused']} of {fr['actions']} expert actions on {fr['paths']} val_seen reference paths "
            f"({fr['percent']:.2f} %; batch closed loop, config/sim.yaml).",
            "",
        ]
    if isinstance(live := sf.get("live"), list):
        from havln_robot.bench.safety_live import live_table

        differ = [r for r in live if not r["agree"]]
        lines += [
            f"Live subset (`--live`: {len(live)} scenes played in real time around the real motion_node on a ROS graph; "
            f"seed 0): {len(live) - len(differ)} of {len(live)} end as their batch run (contact, fall, refusal)"
            + (":" if differ else "; `havln-robot bench safety --live` prints each scene's batch and live ending."),
            "",
            *(live_table(differ) + [""] if differ else []),
        ]
    return [*lines, e]


# --- Markdown -----------------------------------------------------------------------------------------


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def markdown(fig: dict[str, Any]) -> str:
    """The README's figure tables for the figures collected by :func:`collect`."""
    m, plan = fig["machine"], fig["plan"]
    cmd = "havln-robot bench all --markdown" + (" --quick" if plan["quick"] else "")
    lines = [
        f"Measured on {m['date']} on {m['cpu']} ({m['cores']} logical cores), {m['os']}, Python {m['python']}, "
        f"with `{cmd}` ({_duration(fig['wall_s'])}). Deterministic figures are exact; speeds are the range "
        f"(min–max) over {plan['repeats']} run{'s' if plan['repeats'] != 1 else ''} and depend on the machine and its load.",
        "",
    ]
    if plan["quick"]:
        lines += ["**Quick run** (`--quick`: 2 episodes, short timings) -- a smoke test, not the README's figures.", ""]
    for part in (_md_eval, _md_speeds, _md_motion, _md_latency, _md_robot, _md_people, _md_trials, _md_scale, _md_agreement, _md_safety):
        lines += part(fig, plan)
    skipped = [f"{k} ({v})" for k, v in fig.items() if k in PARTS and isinstance(v, str)]
    if skipped:
        lines += ["Skipped: " + "; ".join(skipped) + ".", ""]
    return "\n".join(lines).rstrip() + "\n"


def _md_eval(fig: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """Simulator: the eval table of each policy."""
    lines: list[str] = []
    ev = fig.get("eval")
    if isinstance(ev, dict):
        n = ev["rows"][0]["episodes"]
        lines += [
            f"**Simulator** (`havln-robot eval --policy P --episodes HA_val_seen.json`: {n} paths, "
            f"{ev['floor_changing']} of them change floor; seed 0; **procedural scenes** built from the navigation graph, "
            "no furniture or objects: a geometry proxy, see docs/sim.md)",
            "",
        ]
        rows = []
        for r in ev["rows"]:
            learned = r["policy"] in ("expert", "small_panoramic")
            speed = _grange(r["episodes_per_s"]) if r["episodes_per_s"][0] >= 1 else span(r["episodes_per_s"], "{:.2f}")
            rows.append(
                [
                    r["label"],
                    f"{r['success_pct']:.1f} %",
                    f"{r['sr_pct']:.1f} %" if learned else "–",
                    f"{r['ne_median_m']:.2f} m",
                    f"{r['spl']:.3f}" if learned else "–",
                    f"{r['collisions_human']} / {r['collisions_static']}",
                    f"{speed} episodes/s" + (f" ({r['episodes']} episodes)" if r["episodes"] != n else ""),
                ]
            )
        lines += _table(["policy", "success", "SR (challenge)", "median NE", "SPL", "collisions human / static", "speed"], rows) + [""]
    elif ev:
        lines += [f"**Simulator**: skipped ({ev})", ""]
    return lines


def _md_speeds(fig: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """Simulator and policy speed."""
    lines: list[str] = []
    rows = []
    if isinstance(p := fig.get("policy"), dict):
        rows += [
            ["policy decision, shipped model (12-view panorama)", f"{span(p['small_ms'])} ms", "`havln-robot bench policy`"],
            [
                f"policy decision, HA-VLN-CMA layout ({p['cma_params_m']:.1f} M params)",
                f"{span(p['cma_ms'])} ms",
                "`havln-robot bench policy`",
            ],
        ]
    if isinstance(s := fig.get("sim"), dict):
        for res, fps in s["render"].items():
            rows.append([f"RGB-D rendering (MuJoCo, EGL) at {res}", f"{span(fps)} frames/s", "`havln-robot bench sim`"])
        if s["steps_per_s"]:
            rows.append(["batch `World.step`", f"{_grange(s['steps_per_s'])} steps/s", "`havln-robot bench sim`"])
        if s.get("expert_actions_per_s"):
            rows.append(
                [
                    f"batch expert, {s['expert_episodes']} episodes (the executor's ticks alone cap it at {_grange(s['expert_ceiling'])})",
                    f"{_grange(s['expert_actions_per_s'])} actions/s",
                    "`havln-robot bench sim`",
                ]
            )
        if s["camera_hz"]:
            rows.append(["sim_node camera driven by `cmd_vel` (target ≥ 10)", f"{span(s['camera_hz'])} Hz", "`havln-robot bench sim`"])
            rows.append(["sim_node odom / imu (target ≥ 50)", f"{span(s['odom_hz'])} / {span(s['imu_hz'])} Hz", "`havln-robot bench sim`"])
    if rows:
        lines += ["**Simulator and policy speed**", ""] + _table(["figure", "value", "command"], rows) + [""]
    return lines


def _md_motion(fig: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """Motion: per-action errors and durations."""
    lines: list[str] = []
    if isinstance(mo := fig.get("motion"), dict):
        a = mo["actions"]
        fwd, tl, tr = a["MOVE_FORWARD"], a["TURN_LEFT"], a["TURN_RIGHT"]
        n = sum(mo["n"].values())
        lines += [
            f"**Motion** (`havln-robot bench motion{' ' + ' '.join(plan['motion']) if plan['motion'] else ''}`: {n} actions of each type, "
            "simulator noise on: 50 ms latency, odometry drift, gyro noise and bias; errors against the true pose; deterministic for the seed)",
            "",
        ]
        lines += _table(
            ["action", "position error p50 / p95", "yaw error p50 / p95", "duration ÷ physical minimum"],
            [
                ["MOVE_FORWARD 0.25 m", f"{1e3 * fwd['pos_p50_m']:.1f} / {1e3 * fwd['pos_p95_m']:.1f} mm (target ≤ 20)",
                 f"{fwd['yaw_p50_deg']:.3f} / {fwd['yaw_p95_deg']:.3f}°", f"{fwd['ratio_mean']:.2f} (target ≤ 1.3)"],
                ["TURN_LEFT 15°", f"{1e3 * tl['pos_p50_m']:.1f} / {1e3 * tl['pos_p95_m']:.1f} mm",
                 f"{tl['yaw_p50_deg']:.3f} / {tl['yaw_p95_deg']:.3f}° (target ≤ 1.0)", f"{tl['ratio_mean']:.2f}"],
                ["TURN_RIGHT 15°", f"{1e3 * tr['pos_p50_m']:.1f} / {1e3 * tr['pos_p95_m']:.1f} mm",
                 f"{tr['yaw_p50_deg']:.3f} / {tr['yaw_p95_deg']:.3f}° (target ≤ 1.0)", f"{tr['ratio_mean']:.2f}"],
            ],
        )  # fmt: skip
        lines.append("")
    return lines


def _md_latency(fig: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """Robot, e-stop and perception latency."""
    lines: list[str] = []
    mo = fig.get("motion")
    rows = []
    if isinstance(mo, dict) and any(v is not None for v in mo["ros_p50_ms"]):
        rows.append(
            ["`STOP` → zero `cmd_vel` through motion_node over DDS p50 / p95 (target ≤ 50)",
             f"{span(mo['ros_p50_ms'])} / {span(mo['ros_p95_ms'])} ms", "`havln-robot bench motion --ros-estop N`"]
        )  # fmt: skip
    if isinstance(pe := fig.get("perception"), dict):
        rows += [
            ["preprocessing 848x480 → RGB 224 + depth 256", f"{span(pe['preprocess_ms'])} ms/view", "`havln-robot bench perception`"],
            ["RealSense path through librealsense (software device → align → mm)", f"{span(pe['capture_fps'], '{:.0f}')} frames/s", "`havln-robot bench perception`"],
            ["12-view panorama, agent-side work (instant robot)", f"{span(pe['panorama_agent_s'], '{:.3f}')} s", "`havln-robot bench perception`"],
        ]  # fmt: skip
    if rows:
        lines += ["**E-stop and perception latency**", ""] + _table(["figure", "value", "command"], rows) + [""]
    return lines


def _md_robot(fig: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """The Go2 driver against the fake Go2, in its own block (``bench all --only robot``), dated."""
    if not isinstance(r := fig.get("robot"), dict):
        return []
    m = fig["machine"]
    rows = [
        ["`cmd_vel` → first `SportClient.Move` p50", f"{span(r['first_move_p50'])} ms"],
        ["`Move` re-sent every (p50)", f"{span(r['interval_p50'])} ms"],
        ["e-stop → `Damp` p50 / p95", f"{span(r['damp_p50'])} / {span(r['damp_p95'])} ms"],
        [f"`cmd_vel` silence → `StopMove` (watchdog {r['watchdog_ms']:.0f} ms)", f"{span(r['watchdog_p50'], '{:.0f}')} ms"],
        [f"lost `rt/sportmodestate` → `StopMove` (timeout {r['state_timeout_ms']:.0f} ms)", f"{span(r['state_lost'], '{:.0f}')} ms"],
    ]
    b, e = part_markers("robot")
    head = f"**Go2 driver against the fake Go2** (`havln-robot bench robot`; {m['date']}, {m['cpu']}, {m['cores']} cores)"
    return [b, head, "", *_table(["figure", "value"], rows), "", e, ""]


def _md_people(fig: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """People tracker vs ground truth."""
    lines: list[str] = []
    if isinstance(pp := fig.get("people"), dict):

        def f2(v: Any, fmt: str = "{:.2f}") -> str:
            return "n/a" if v is None else fmt.format(v)

        cmd = "`havln-robot bench people" + (" --quick --people 4 --empty-scans 1 --empty-poses 2" if plan["quick"] else "") + "`"
        prow = [
            [f"recall / precision at {b}", f"{f2(r)} / {f2(q)} ({n} truth)", cmd]
            for b, r, q, n in zip(pp["bins"], pp["recall"], pp["precision"], pp["truth"], strict=True)
        ]
        prow += [
            ["position error p50 / p95", f"{f2(pp['pos_err_p50_m'])} / {f2(pp['pos_err_p95_m'])} m", cmd],
            ["velocity error p50 / p95 (tracks >= 1 s old)", f"{f2(pp['vel_err_p50_mps'])} / {f2(pp['vel_err_p95_mps'])} m/s", cmd],
            ["false tracks", f"{f2(pp['false_tracks_per_min'], '{:.1f}')} per minute", cmd],
            ["tracker CPU time per frame p50 / p95", f"{f2(pp['cpu_ms_per_frame_p50'], '{:.1f}')} / {f2(pp['cpu_ms_per_frame_p95'], '{:.1f}')} ms", cmd],
        ]  # fmt: skip
        if isinstance(e := pp.get("empty_scenes"), dict) and e.get("frames"):
            prow.append(
                [
                    f"phantom people: frames with a detection / one within 1.5 m, nobody in the scene ({len(e['scans'])} scenes)",
                    f"{e['detection_rate']:.1%} / {e['near_detection_rate']:.1%} of {e['frames']}",
                    cmd,
                ]
            )
        lines += (
            [
                f"**People tracker vs simulator ground truth** ({pp['people']} people at 0.5-1.5 m/s, {pp['seconds']:g} s at "
                f"{pp['rate_hz']:g} Hz, depth 640x480 only; the simulator's simple figures flatter the tracker)",
                "",
            ]
            + _table(["figure", "value", "command"], prow)
            + [""]
        )
    return lines


def _md_trials(fig: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """Trials and challenge."""
    lines: list[str] = []
    rows = []
    if isinstance(t := fig.get("trial"), dict):
        rows.append(
            [
                "trial step committed to SQLite (WAL, `synchronous=FULL`), median",
                f"{span(t['median_ms'], '{:.2f}')} ms",
                "`havln-robot trial bench`",
            ]
        )
    if isinstance(v := fig.get("validate"), dict):
        eps = " + ".join(f"{n:,}" for n in v["episodes"].values())
        rows.append(
            [f"`validate` of a full-size bundle ({eps} episodes × 500 actions, {v['json_mb']:.1f} MB JSON)", f"{span(v['seconds'], '{:.2f}')} s", "`havln-robot validate`"]
        )  # fmt: skip
    if isinstance(rp := fig.get("replay"), dict):
        rows.append(
            [f"`replay val_seen.json --episodes {rp['episodes']}` (reference-following actions, batch)",
             f"SR {rp['sr']} NE {rp['ne']} m TCR {rp['tcr']} CR {rp['cr']} in {span(rp['seconds'])} s", "`havln-robot export --follow-reference` + `replay`"]
        )  # fmt: skip
    if rows:
        lines += ["**Trials and challenge**", ""] + _table(["figure", "value", "command"], rows) + [""]
    return lines


def _md_scale(fig: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """Scaling of eval's engine."""
    lines: list[str] = []
    if isinstance(sc := fig.get("scale"), dict):
        lines += [
            f"**Scaling** (`havln-robot bench scale{' ' + ' '.join(plan.get('scale', [])) if plan.get('scale') else ''}`: "
            f"the first {sc['episodes']} val_seen episodes of `{sc['policy']}` through `eval`'s engine; identical per-episode "
            f"results in every run; Ray overhead {sc['overhead_s_per_episode']:+.2f} s per episode against serial)",
            "",
        ]
        rows = [
            [r["engine"], f"{r['episodes_per_s']:.3f} episodes/s", f"{r['speedup']:.2f}x", f"{r['start_s']:.1f} s" if r["workers"] else "–"]
            for r in sc["runs"]
        ]
        lines += _table(["engine", "throughput", "speed-up", "runtime start (once per run)"], rows) + [""]
    return lines


def _md_agreement(fig: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """Batch vs live."""
    lines: list[str] = []
    if isinstance(ag := fig.get("agreement"), dict) and ag["summary"]:
        arows = [
            [s["kind"], s["n"], f"{s['sr_batch']:.3f}", f"{s['sr_live']:.3f}", f"{s['d_sr']:+.3f}", f"{s['ne_batch']:.2f}", f"{s['ne_live']:.2f}",
             f"{s['coll_batch']} / {s['coll_live']}", f"{s['ref_batch']} / {s['ref_live']}", f"{100 * s['agree']:.0f} %"]
            for s in ag["summary"]
        ]  # fmt: skip
        lines += [f"**Batch vs live** (`havln-robot bench agreement --episodes {ag['episodes']}`)", ""]
        lines += _table(
            ["input", "episodes", "SR batch", "SR live", "ΔSR", "NE batch", "NE live", "collisions b / l", "refusals b / l", "agreement"],
            arows,
        )
        lines += [""]
    return lines


def _md_safety(fig: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """The safety course."""
    if isinstance(sf := fig.get("safety"), dict):
        return [*safety_markdown(sf), ""]
    return []


# --- the whole run --------------------------------------------------------------------------------------

#: part name → needs the reference data?
PARTS = {
    "eval": True,
    "sim": False,
    "motion": False,
    "policy": False,
    "perception": False,
    "robot": False,
    "people": False,
    "trial": False,
    "validate": True,
    "replay": True,
    "scale": True,
    "agreement": True,
    "safety": False,
}


def collect(plan: Plan, parts: Sequence[str], data: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Run the chosen parts; returns the figures (a part's value is its reason string when skipped)."""
    t0 = time.perf_counter()
    fig: dict[str, Any] = {
        "machine": machine(),
        "plan": {"quick": plan.quick, "repeats": plan.repeats, "motion": plan.motion, "scale": plan.scale},
    }
    have_data = (data / "ha_r2r_de" / "HA_val_seen.json").is_file() and (data / "connectivity").is_dir()
    with tempfile.TemporaryDirectory(prefix="havln_figures_") as d:
        tmp = Path(d)
        for part in parts:
            if PARTS[part] and not have_data:
                fig[part] = f"needs the HA-VLN reference data, not found at {data}"
                log(f"[{part}] skipped: {fig[part]}")
                continue
            log(f"[{part}]")
            t = time.perf_counter()
            sub = tmp / part
            sub.mkdir()
            if part == "eval":
                fig[part] = run_eval(plan, data, sub, log)
            elif part == "replay":
                fig[part] = run_replay(plan, data, sub, log)
            elif part == "safety":
                if plan.quick:  # the course takes minutes; test/test_motion_physical.py runs a sample
                    fig[part] = "skipped with --quick (the course takes minutes; test/test_motion_physical.py runs a sample)"
                    log(f"[{part}] {fig[part]}")
                    continue
                fig[part] = run_safety(plan, data, sub, log)
            elif part == "agreement":
                if plan.quick:  # live ROS episodes: minutes; the suite runs it in test_closed_loop
                    fig[part] = "skipped with --quick (live episodes take minutes; test/test_closed_loop.py runs two)"
                    log(f"[{part}] {fig[part]}")
                    continue
                fig[part] = run_agreement(plan, data, sub, log)
            else:
                fig[part] = globals()[f"run_{part}"](plan, sub, log)
            log(f"  ({time.perf_counter() - t:.0f} s)")
    fig["wall_s"] = time.perf_counter() - t0
    return fig


def read_readme(path: str | os.PathLike[str]) -> str:
    """The text of the ``--update-readme`` file, read bounded (at most :data:`MAX_README_BYTES`).

    Raises:
        FiguresError: not a regular file (a folder, /dev/zero), unreadable, too large or not UTF-8;
            one line naming the file and the fix.
    """
    from havln_robot.paths import input_file_problem

    p = Path(path)
    why = input_file_problem(p)
    if why is not None:
        raise FiguresError(f"{p}: {why}; give the README to update")
    try:
        data = jsonio.read_bytes_capped(p, MAX_README_BYTES, gunzip=False)
    except jsonio.JsonFileError:
        cap = f"{MAX_README_BYTES / 2**20:g} MiB" if MAX_README_BYTES >= 2**20 else f"{MAX_README_BYTES} bytes"
        raise FiguresError(f"{p}: larger than {cap} -- not a README; give the README to update") from None
    except OSError as exc:
        raise FiguresError(f"{p}: cannot be read ({exc.strerror or exc}); give the README to update") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FiguresError(f"{p}: not UTF-8 text (byte {exc.start}); give the README to update") from None


def update_readme(path: Path, text: str) -> None:
    """Replace what lies between the figure markers in ``path`` with ``text``, and the command list
    between the command markers (when present) with :func:`havln_robot.cli.commands_markdown`.

    Raises:
        FiguresError: the markers are missing, doubled or out of order.
    """
    doc = read_readme(path)
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or doc.index(BEGIN) > doc.index(END):
        raise FiguresError(f"{path}: needs exactly one '{BEGIN}' followed by one '{END}' line around the figures")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    from havln_robot.paths import atomic_output

    new = f"{head}{BEGIN}\n{text.rstrip()}\n{END}{tail}"
    from havln_robot.cli import COMMANDS_BEGIN, COMMANDS_END, commands_markdown

    if new.count(COMMANDS_BEGIN) == 1 and new.count(COMMANDS_END) == 1 and new.index(COMMANDS_BEGIN) < new.index(COMMANDS_END):
        head, rest = new.split(COMMANDS_BEGIN, 1)  # the command list comes from the same table as --help
        new = f"{head}{COMMANDS_BEGIN}\n{commands_markdown()}\n{COMMANDS_END}{rest.split(COMMANDS_END, 1)[1]}"
    with atomic_output(path) as tmp:  # a failed write must not truncate the README
        tmp.write_text(new, encoding="utf-8")


def update_readme_parts(path: Path, text: str, parts: Sequence[str]) -> list[str]:
    """Replace, inside the figure markers of ``path``, only the blocks of ``parts`` that ``text``
    holds (:func:`part_markers`; a block not yet in the README goes at the end of the figures), so
    that ``bench all --only safety --update-readme README.md`` rewrites the safety table and keeps
    every other figure. Returns the parts written.

    Raises:
        FiguresError: the figure markers are missing or doubled, or ``text`` has no such block.
    """
    doc = read_readme(path)
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or doc.index(BEGIN) > doc.index(END):
        raise FiguresError(f"{path}: needs exactly one '{BEGIN}' followed by one '{END}' line around the figures")
    done = []
    for part in parts:
        b, e = part_markers(part)
        if text.count(b) != 1 or text.count(e) != 1:
            continue
        block = b + text.split(b, 1)[1].split(e, 1)[0] + e
        head, rest = doc.split(BEGIN, 1)
        figs, tail = rest.split(END, 1)
        if figs.count(b) == 1 and figs.count(e) == 1:
            figs = figs.split(b, 1)[0] + block + figs.split(e, 1)[1]
        else:
            figs = figs.rstrip("\n") + "\n\n" + block + "\n"
        doc = f"{head}{BEGIN}{figs}{END}{tail}"
        done.append(part)
    if not done:
        raise FiguresError(f"--only {','.join(parts)}: none of these parts has its own block in the figures; run every part")
    from havln_robot.paths import atomic_output

    with atomic_output(path) as tmp:
        tmp.write_text(doc, encoding="utf-8")
    return done


def main(argv: list[str]) -> int:
    """``havln-robot bench all``: run every benchmark and print the README's figure tables; returns the exit code."""
    from havln_robot.paths import check_out_file, data_dir

    ap = argparse.ArgumentParser(prog="havln-robot bench all", description="Run every benchmark and print the README's figure tables.")
    ap.add_argument("--markdown", action="store_true", help="print the figure tables as Markdown (default: the figures as JSON)")
    ap.add_argument(
        "--quick", action="store_true", help="a tiny run (2 episodes, short timings, one repeat): a smoke test, not figures to publish"
    )
    ap.add_argument(
        "--repeats", type=number_in(1, 100, integer=True), default=None, help="runs of each speed benchmark (default 3; 1 with --quick)"
    )
    ap.add_argument(
        "--only",
        type=nonempty("a comma list of parts"),
        default=",".join(PARTS),
        help=f"comma-separated parts to run (default all: {','.join(PARTS)})",
    )
    ap.add_argument(
        "--data",
        type=path_arg,
        default=None,
        help="HA-VLN data folder (default: $HAVLN_DATA, else the folder `havln-robot data fetch` fills)",
    )
    ap.add_argument("--json", type=path_arg, default=None, help="also write every figure as JSON to this file")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    ap.add_argument(
        "--update-readme",
        type=path_arg,
        default=None,
        metavar="FILE",
        help="replace the text between the figure markers of FILE (README.md) with the tables",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args(argv)
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        ap.error(f"--only {args.only}: unknown part(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(PARTS)}")
    if args.repeats is not None and args.repeats < 1:
        ap.error(f"--repeats {args.repeats}: give at least 1")
    if args.json:
        check_out_file(args.json, "--json", overwrite=args.overwrite)
    readme = Path(args.update_readme) if args.update_readme else None
    if readme is not None:
        try:
            doc = read_readme(readme)
        except FiguresError as exc:
            ap.error(f"--update-readme {exc}")
        if doc.count(BEGIN) != 1 or doc.count(END) != 1:
            ap.error(f"--update-readme {readme}: needs one '{BEGIN}' and one '{END}' line; add them around the figures")
    data = Path(args.data) if args.data else data_dir()
    plan = Plan.make(args.quick, args.repeats)

    def log(s: str) -> None:
        if not args.quiet:
            print(s, file=sys.stderr, flush=True)

    fig = collect(plan, parts, data, log)
    text = markdown(fig)
    if args.markdown:
        print(text, end="")
    else:
        print(jsonio.dumps(fig, nonfinite="null", indent=2, default=str))
    if args.json:
        write_json(args.json, fig, nonfinite="null", indent=2, default=str)
    if readme is not None:
        if set(parts) == set(PARTS):
            update_readme(readme, text)
            log(f"updated the figures of {readme}")
        else:  # --only: just those parts' own blocks, every other figure kept
            try:
                done = update_readme_parts(readme, text, parts)
            except FiguresError as exc:
                print(f"havln-robot bench all: {exc}", file=sys.stderr)
                return 1
            log(f"updated the {', '.join(done)} figures of {readme}")
    return 0
