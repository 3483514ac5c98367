"""``havln-robot bench agreement``: does the batch simulator predict the live graph?

The same inputs go through the batch simulator (``World.step`` = :class:`havln_robot.sim.closed_loop.ClosedLoop`:
motion_node's executor over the noisy Go2 base, in-process) and through the live ROS graph
(sim_node + motion_node + people_node over loopback DDS in lockstep, ``havln-robot replay --backend
ros`` with the replay as the agent; for the model, the same graph with agent_node, ``havln-robot demo``), on the first ``--episodes`` HA-R2R
val_seen episodes, with the same seed (people and noise):

* ``reference``: the reference-following action file (``export --follow-reference``), open loop;
* ``expert``: the action file the expert wrote in batch (``eval --policy expert``), open loop. The
  file is written under another noise draw (:data:`EXPERT_NOISE_OFFSET`) than the one both worlds
  replay it under: replayed under its own draw, batch would re-run the run that made it and score
  it a success by construction, whatever the world's fidelity (the expert steps as soon as the
  executor accepts, so its file fits its own draw to the centimetre);
* ``model``: the shipped model (``models/small_panoramic.pt``), closed loop in both worlds.

Prints one line per episode and input as it finishes, then per input SR, NE, collisions and
refusals for batch and live side by side with the difference and the per-episode outcome
agreement (success/failure equal). Targets: |SR_batch - SR_live| <= 0.03, agreement >= 95 %,
collisions and refusals within 25 %. An open-loop file can be a coin toss under odometry/IMU noise (one draw
succeeds, the next refuses a step and derails); ``--noise-draws K`` replays each input in batch
under K other draws and reports how often it succeeds, and how many disagreements a batch draw
reproduces. A live episode takes minutes (the model's panoramas are 10 s sweeps each).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from havln_robot.text import nonempty, number_in, path_arg

KINDS = ("reference", "expert", "model")
#: Targets: both worlds run one episode runner, one safety layer and (live) one lockstep clock, so
#: batch must predict live: SR within 0.03, per-episode outcome agreement >= 95 %, and collision and
#: refusal counts per input within 25 % of each other (of the larger; both 0 is within).
TARGET_DSR = 0.03
TARGET_AGREE = 0.95
TARGET_COUNTS = 0.25


def counts_within(a: int, b: int) -> bool:
    """Two counts within :data:`TARGET_COUNTS` of each other (of the larger)."""
    return abs(a - b) <= TARGET_COUNTS * max(a, b) + 1e-9


def within_targets(s: dict[str, Any]) -> bool:
    """One input's summary row meets every target."""
    return (
        abs(s["d_sr"]) <= TARGET_DSR + 1e-9
        and s["agree"] >= TARGET_AGREE - 1e-9
        and counts_within(s["coll_batch"], s["coll_live"])
        and counts_within(s["ref_batch"], s["ref_live"])
    )


#: The expert writes its file under noise seed ``seed + EXPERT_NOISE_OFFSET`` (same people); batch
#: and live then replay it under ``seed``, like the reference files (module docstring).
EXPERT_NOISE_OFFSET = 1
#: ``--noise-draws K`` replays each input in batch under noise seeds ``seed + NOISE_DRAW_OFFSET + i``
#: (i < K; same people), clear of the expert's writing seed.
NOISE_DRAW_OFFSET = 100
#: A live model episode (``havln-robot demo``: graph start-up, a panorama sweep per decision, up to
#: 500 actions at real time) that has not ended after this long is stopped and recorded as a failure
#: with a note; the longest measured here took ~15 min (2026-12-02, 500 actions).
LIVE_MODEL_TIMEOUT_S = 3600.0


@dataclass
class Outcome:
    """One episode of one input in one world: success, NE (m, walkable), collisions (human + static),
    refusals, actions; for a live episode also ``load``: the machine's 1-minute load average per
    CPU when it ended (``os.getloadavg``; above ~1 the live graph runs short of CPU, and its timing
    -- control ticks, /clock, camera frames -- is not the robot's), None when not measured."""

    success: bool
    ne: float
    collisions: int
    refused: int
    actions: int
    note: str = ""
    load: float | None = None


def load_per_cpu() -> float | None:
    """The 1-minute load average per CPU (``os.getloadavg() / os.cpu_count()``), None where unknown."""
    try:
        return round(os.getloadavg()[0] / max(1, os.cpu_count() or 1), 2)
    except OSError:
        return None


def _batch_replay(ep: Any, scene: Any, actions: list[str], seed: int, people_seed: int | None = None) -> Outcome:
    """An action file played in batch by the episode runner: base noise from ``seed``, people from ``people_seed`` (default ``seed``)."""
    from havln_robot.agent.sim_io import replay_actions
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.world import World

    w = World(scene, ep, Crowd.from_episode(ep, scene, seed if people_seed is None else people_seed), seed=seed)
    res = replay_actions(w, actions)  # agent_node's runner playing the file, as `replay --backend batch`
    m = w.metrics()
    n = res.steps
    return Outcome(bool(m.success), float(m.ne), int(m.collisions_human + m.collisions_static), w.loop.refused if n else 0, n)


def _batch_policy(ep: Any, scene: Any, policy: Any, seed: int, noise_seed: int | None = None) -> tuple[Outcome, list[str]]:
    """The policy closed loop in batch: people from ``seed``, base noise from ``noise_seed`` (default ``seed``)."""
    from havln_robot.eval import run_episode
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.world import World

    w = World(scene, ep, Crowd.from_episode(ep, scene, seed), seed=seed if noise_seed is None else noise_seed)
    # the model turns in place for each panorama, as agent_node does live (the expert needs none)
    actions = run_episode(w, policy, seed=seed, panorama_sweeps=policy != "expert")
    m = w.metrics()
    return Outcome(bool(m.success), float(m.ne), int(m.collisions_human + m.collisions_static), w.loop.refused, len(actions)), actions


def _cut(seq: list[str], n: int | None) -> list[str]:
    """The first ``n`` actions of an action file, then STOP (all of it when ``n`` is None or it is shorter)."""
    if n is None or len(seq) <= n:
        return seq
    return [*seq[:n], "STOP"]


def _live_replay(eid: str, actions: list[str], episodes_file: Path, seed: int, rtf: float) -> Outcome:
    from havln_robot.ros.replay import replay_ros

    sets = [f"sim_node.seed={seed}", f"sim_node.real_time_factor={rtf:g}"]
    res = replay_ros(
        [eid],
        {eid: actions},
        {},
        target="embedded",
        episodes_file=episodes_file,
        action_timeout_s=120.0,
        sets=sets,
        progress=False,
        log=lambda s: None,
    )
    r = res[0]
    m = r.metrics
    coll = int((m.collisions_human or 0) + (m.collisions_static or 0))
    ne = math.nan if m.ne is None else float(m.ne)  # unknown: the graph reported no final pose
    return Outcome(bool(m.success), ne, coll, int(r.refused), int(r.actions or 0), r.note)


_ROW = re.compile(r"^\s+(\S+)\s+(success|failure|aborted|timeout|\?)\s+([-\d.naninf]+)\s+(\d+|\?)\s+(\d+|\?)/(\d+|\?)")


#: What ``bench agreement --live-out DIR`` writes: one demo folder per live model episode.
LIVE_OUT_NAMES: tuple[str, ...] = ("demo_*/*",)


def _live_model_fresh(eid: str, episodes_file: Path, policy: str, seed: int, out: Path) -> Outcome:
    """:func:`_live_model` into a new folder beside ``out`` that replaces ``out`` (an earlier run's demo
    folder, --overwrite) only once the demo has ended; the earlier folder stays until then."""
    from havln_robot.paths import clean_stale_staging, new_staging_dir, swap_in_folder

    clean_stale_staging(out)  # a run killed with SIGKILL: its stage removed, an earlier folder it had moved aside put back
    if not out.exists():
        return _live_model(eid, episodes_file, policy, seed, out)
    stage = new_staging_dir(out.parent, out.name)
    try:
        lv = _live_model(eid, episodes_file, policy, seed, stage / out.name)
        if (stage / out.name).is_dir():
            swap_in_folder(stage / out.name, out)
        return lv
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _live_model(eid: str, episodes_file: Path, policy: str, seed: int, out: Path) -> Outcome:
    """One live episode of the model through ``havln-robot demo`` (own interpreter; its summary row parsed)."""
    exe = Path(sys.executable).with_name("havln-robot")
    cmd = [
        str(exe) if exe.is_file() else "havln-robot",
        "demo",
        "--episode-id",
        eid,
        "--episodes-file",
        str(episodes_file),
        "--seed",
        str(seed),
        "--out",  # not --quiet: the per-step lines carry the "refused before start" notes counted below
        str(out),
        "--policy",
        policy,
    ]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=LIVE_MODEL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Outcome(False, math.nan, 0, 0, 0, f"demo did not end within {LIVE_MODEL_TIMEOUT_S:.0f} s; stopped")
    for line in p.stdout.splitlines():
        m = _ROW.match(line)
        if m and m.group(1) == eid:
            ch, cs = m.group(5), m.group(6)
            coll = (int(ch) if ch.isdigit() else 0) + (int(cs) if cs.isdigit() else 0)
            refused = p.stdout.count("refused before start")
            return Outcome(m.group(2) == "success", float(m.group(3)), coll, refused, int(m.group(4)) if m.group(4).isdigit() else 0)
    tail = (p.stdout + p.stderr).strip().splitlines()[-1:] or ["no output"]
    return Outcome(False, math.nan, 0, 0, 0, f"demo exit {p.returncode}: {tail[0][:160]}")


_LINE = re.compile(
    r"^\s+episode\s+(\S+)\s+(\S+)\s+batch .*\| live (success|failure) NE\s+(\S+) coll (\d+) refused (\d+) \((\d+) actions\)"
    r"(?: load/cpu (\S+))?\s*(.*)$"
)


LIVE_LOG_MAX_BYTES = 64 * 1024 * 1024  # a --json of all 340 val_seen episodes x 3 inputs is ~1 MB


def _live_outcome(lv: Any, where: str) -> Outcome:
    """One ``live`` object of a ``--json`` row, every field type-checked; ValueError names the field."""
    if not isinstance(lv, dict):
        raise ValueError(f"{where}: must be an object with success, ne, collisions, refused, actions; got {type(lv).__name__}")

    def field(key: str, ok: Any, want: str, default: Any = ...) -> Any:
        if key not in lv:
            if default is ...:
                raise ValueError(f"{where}.{key}: missing; it must be {want}")
            return default
        v = lv[key]
        if not ok(v):
            raise ValueError(f"{where}.{key}: {v!r} is not {want}")
        return v

    def count(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    def number(v: Any) -> bool:
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0)

    ne = field("ne", number, "a distance in m >= 0 or null (unknown)")
    load = field("load", number, "a load per CPU >= 0 or null", None)
    return Outcome(
        field("success", lambda v: isinstance(v, bool), "true or false"),
        math.nan if ne is None else float(ne),
        field("collisions", count, "a whole number >= 0"),
        field("refused", count, "a whole number >= 0"),
        field("actions", count, "a whole number >= 0"),
        field("note", lambda v: isinstance(v, str), "a string", ""),
        None if load is None else float(load),
    )


def read_live_log(path: Path) -> dict[tuple[str, str], Outcome]:
    """Live outcomes from an earlier ``bench agreement`` run: its ``--json`` file, or the
    per-episode lines it printed (its log file): (episode id, input kind) -> :class:`Outcome`.
    Lets the batch side be re-run on a recorded live run.

    Every field is type-checked (``success`` a bool, counts whole numbers >= 0, ``ne``/``load``
    finite numbers >= 0 or null): a file edited by hand is refused, never read as other values.

    Read through the project's bounded reader (:func:`havln_robot.jsonio.read_bytes_capped`): at most
    :data:`LIVE_LOG_MAX_BYTES` bytes, on disk or gzip-decompressed (a saved log may be gzipped).

    Raises:
        OSError: the file cannot be read.
        ValueError: not a regular file, larger than :data:`LIVE_LOG_MAX_BYTES` (on disk or
            decompressed), or a JSON file whose rows are not those of ``bench agreement --json`` / a
            printed line that does not parse; the message names the file, the row or line, and the field.
    """
    from havln_robot import jsonio

    path = Path(path)
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read
        raise ValueError(f"{path}: not a regular file; give the --json file or the saved output of an earlier 'bench agreement' run")
    try:
        data = jsonio.read_bytes_capped(path, LIVE_LOG_MAX_BYTES)
    except jsonio.JsonFileError as exc:
        raise ValueError(f"{exc} (no 'bench agreement' output is that large)") from None
    text = data.decode("utf-8-sig", errors="replace")  # -sig: the same file saved by an editor with a BOM
    out: dict[tuple[str, str], Outcome] = {}
    if text.lstrip().startswith("{"):
        import json

        bad = f"{path}: not a 'bench agreement --json' file"
        try:
            doc = json.loads(text, parse_int=jsonio.parse_int)
        except RecursionError:
            raise ValueError(f"{bad} (its JSON nests too deeply)") from None
        except ValueError as exc:
            raise ValueError(f"{bad} ({exc})") from None
        rows = doc.get("rows") if isinstance(doc, dict) else None
        if not isinstance(rows, list):
            raise ValueError(f'{bad} ("rows" must be a list of rows; got {type(rows).__name__})')
        for i, r in enumerate(rows):
            if not isinstance(r, dict):
                raise ValueError(f"{bad} (rows[{i}] must be an object; got {type(r).__name__})")
            if not r.get("live"):
                continue
            for key in ("episode_id", "kind"):
                if not isinstance(r.get(key), (str, int)) or isinstance(r.get(key), bool):
                    raise ValueError(f"{bad} (rows[{i}].{key}: {r.get(key)!r} is not an id)")
            out[(str(r["episode_id"]), str(r["kind"]))] = _live_outcome(r["live"], f"{path}: rows[{i}].live")
        return out
    for n, line in enumerate(text.splitlines(), 1):
        m = _LINE.match(line)
        if m:
            eid, kind, res, ne, coll, ref, k, load, note = m.groups()
            try:
                ne_m = float(ne)
                load_v = float(load) if load else None
            except ValueError:
                raise ValueError(
                    f"{path}: line {n}: NE {ne!r} or load/cpu {load!r} is not a number; is this the output of 'bench agreement'?"
                ) from None
            out[(eid, kind)] = Outcome(res == "success", ne_m, int(coll), int(ref), int(k), note.strip(), load_v)
    return out


def _write_json(path: Path, rows: list[dict[str, Any]], summary: list[dict[str, Any]] | None, speed: float | None) -> None:
    """The ``--json`` file: every row so far (``summary`` and ``batch_actions_per_s`` None until the
    run ends), written through :func:`havln_robot.paths.atomic_output` (a temporary file renamed over
    ``path``; a symbolic link at ``path`` is written through) so a run stopped mid-write keeps the
    previous version. A figure that is unknown (NE of a live episode that reported no pose:
    NaN) is written as ``null``, and :func:`read_live_log` reads it back as NaN."""
    from havln_robot import jsonio
    from havln_robot.paths import atomic_output

    with atomic_output(path) as tmp:  # the one atomic-write rule: through a link, a temporary name that fits
        jsonio.write(tmp, {"rows": rows, "summary": summary, "batch_actions_per_s": speed}, nonfinite="null", newline=False, indent=2)


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if math.isfinite(x)]
    return sum(xs) / len(xs) if xs else math.nan


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per input kind: n, SR/NE/collisions/refusals batch and live, differences, outcome agreement."""
    out = []
    for kind in KINDS:
        rs = [r for r in rows if r["kind"] == kind and r.get("live") is not None]
        if not rs:
            continue
        b = [r["batch"] for r in rs]
        lv = [r["live"] for r in rs]
        sr_b, sr_l = _mean([float(x["success"]) for x in b]), _mean([float(x["success"]) for x in lv])
        out.append(
            {
                "kind": kind,
                "n": len(rs),
                "sr_batch": sr_b,
                "sr_live": sr_l,
                "d_sr": sr_b - sr_l,
                "ne_batch": _mean([x["ne"] for x in b]),
                "ne_live": _mean([x["ne"] for x in lv]),
                "coll_batch": sum(x["collisions"] for x in b),
                "coll_live": sum(x["collisions"] for x in lv),
                "ref_batch": sum(x["refused"] for x in b),
                "ref_live": sum(x["refused"] for x in lv),
                "agree": _mean([float(x["success"] == y["success"]) for x, y in zip(b, lv, strict=True)]),
            }
        )
        loads = [float(x["load"]) for x in lv if x.get("load") is not None]
        if loads:
            out[-1].update({"load_min": min(loads), "load_max": max(loads), "load_mean": _mean(loads)})
        drawn = [r for r in rs if r.get("batch_draws")]
        if drawn:  # --noise-draws: batch over other noise draws, and the disagreements they cover
            off = [r for r in drawn if r["batch"]["success"] != r["live"]["success"]]
            out[-1].update(
                {
                    "draws": len(drawn[0]["batch_draws"]),
                    "sr_batch_draws": _mean([float(v) for r in drawn for v in r["batch_draws"]]),
                    "disagree": len(off),
                    "disagree_in_draws": sum(r["live"]["success"] in r["batch_draws"] for r in off),
                }
            )
    return out


def print_table(summary: list[dict[str, Any]], file: Any = None) -> None:
    """The side-by-side table (markdown-compatible)."""
    file = file or sys.stdout
    print(
        "| input | episodes | SR batch | SR live | ΔSR | NE batch [m] | NE live [m] | ΔNE | collisions b / l | refusals b / l | outcome agreement |",
        file=file,
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", file=file)
    for s in summary:
        print(
            f"| {s['kind']} | {s['n']} | {s['sr_batch']:.3f} | {s['sr_live']:.3f} | {s['d_sr']:+.3f} | {s['ne_batch']:.2f} | {s['ne_live']:.2f} | "
            f"{s['ne_batch'] - s['ne_live']:+.2f} | {s['coll_batch']} / {s['coll_live']} | {s['ref_batch']} / {s['ref_live']} | {100 * s['agree']:.0f} % |",
            file=file,
        )
    for s in summary:
        print(
            f"{s['kind']}: |ΔSR| {abs(s['d_sr']):.3f} (target <= {TARGET_DSR}), agreement {100 * s['agree']:.0f} % "
            f"(target >= {100 * TARGET_AGREE:.0f} %), collisions {s['coll_batch']} / {s['coll_live']} and refusals "
            f"{s['ref_batch']} / {s['ref_live']} (target: within {100 * TARGET_COUNTS:.0f} %): "
            f"{'within' if within_targets(s) else 'MISSED'}",
            file=file,
        )
        if "load_max" in s:
            print(
                f"{s['kind']}: live episodes ended at a load of {s['load_min']:.1f}-{s['load_max']:.1f} per CPU (1-min average; "
                f"mean {s['load_mean']:.1f}){': above 1 the live graph runs short of CPU, not as on the robot' if s['load_max'] > 1.0 else ''}",
                file=file,
            )
        if "draws" in s:
            print(
                f"{s['kind']}: batch over {s['draws']} other noise draws SR {s['sr_batch_draws']:.3f}; "
                f"{s['disagree_in_draws']} of the {s['disagree']} episodes where batch and live disagree "
                "reach the live outcome in at least one batch draw (a coin toss under noise)",
                file=file,
            )


def main(argv: list[str]) -> int:
    """Run the agreement benchmark; 0 = printed (1 with ``--check`` when a target is missed), 2 = bad input / no data."""
    ap = argparse.ArgumentParser(prog="havln-robot bench agreement", description=__doc__.split("\n\n")[0].replace("``", ""))
    ap.add_argument("--episodes", type=number_in(1, 340, integer=True), default=40, help="first N HA-R2R val_seen episodes (default 40)")
    ap.add_argument(
        "--offset", type=number_in(0, 339, integer=True), default=0, help="skip the first N val_seen episodes (split a run over processes)"
    )
    ap.add_argument(
        "--kinds",
        type=nonempty("a comma list of reference, expert, model"),
        default=",".join(KINDS),
        help=f"inputs, comma list of {', '.join(KINDS)} (default all)",
    )
    ap.add_argument("--seed", type=number_in(0, integer=True), default=0, help="people and noise seed, the same in both worlds (default 0)")
    ap.add_argument(
        "--policy",
        type=nonempty("a policy: expert, forward, random or a checkpoint"),
        default="small_panoramic",
        help="the model input: a checkpoint path or a name in models/ (default the shipped model, found from any working directory)",
    )
    ap.add_argument(
        "--real-time-factor", type=number_in(0.05, 20.0), default=1.0, help="sim_node real_time_factor for the live replays (default 1)"
    )
    ap.add_argument("--batch-only", action="store_true", help="only the batch side (fast; no table)")
    ap.add_argument(
        "--live-log",
        type=path_arg,
        default=None,
        help="take the live side from an earlier run's --json file or printed output (episodes it lacks are left out)",
    )
    ap.add_argument("--json", type=path_arg, default=None, help="write every row and the summary to this JSON file")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --json file and an earlier run's --live-out demo folders")
    ap.add_argument(
        "--live-out",
        type=path_arg,
        default=None,
        help="keep each live model episode's demo output (trial database, MCAP recording, report) in DIR/demo_<id> "
        "(default: a temporary folder, removed at the end)",
    )
    ap.add_argument(
        "--noise-draws",
        type=number_in(0, 50, integer=True),
        default=0,
        help="also run each input in batch under K other noise draws (same people) and report how often it succeeds: "
        "which episodes are a coin toss under odometry/IMU noise (default 0)",
    )
    ap.add_argument(
        "--max-actions",
        type=number_in(1, 500, integer=True),
        default=None,
        help="play only the first N actions of each reference / expert file, then STOP, in both worlds (a short check; default all)",
    )
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)
    from havln_robot.paths import check_out_file, data_dir, prepare_out_dir, refuse_overwrite

    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        print(f"bench agreement: --kinds: unknown {', '.join(bad) or '(empty)'}; choose from {', '.join(KINDS)}", file=sys.stderr)
        return 2
    if args.json:  # after the cheap checks: a refused run creates no folder
        check_out_file(
            args.json, "--json", inputs=(args.live_log,) if args.live_log else (), atomic=True, overwrite=args.overwrite
        )  # never over the recorded live rows, nor an earlier run's without --overwrite
    if args.live_out:  # an earlier run's demo folders are replaced only with --overwrite
        refuse_overwrite(args.live_out, "--live-out", args.overwrite, names=LIVE_OUT_NAMES)
        prepare_out_dir(args.live_out, "--live-out")
    recorded: dict[tuple[str, str], Outcome] | None = None
    if args.live_log:  # bad input is named before the data and the episodes are loaded
        try:
            recorded = read_live_log(Path(args.live_log))
        except OSError as exc:
            print(f"bench agreement: --live-log: cannot read {args.live_log} ({exc.strerror})", file=sys.stderr)
            return 2
        except ValueError as exc:
            print(f"bench agreement: --live-log: {exc}", file=sys.stderr)
            return 2
        if not recorded:
            print(
                f"bench agreement: --live-log: {args.live_log} holds no live row; "
                "give the --json file or the printed output of an earlier 'bench agreement' run",
                file=sys.stderr,
            )
            return 2
    data = data_dir()
    ep_file = data / "ha_r2r_de" / "HA_val_seen.json"
    conn = data / "connectivity"
    if not ep_file.is_file() or not conn.is_dir():
        print(f"bench agreement: needs the HA-VLN data ({ep_file}); run 'havln-robot data fetch' or set HAVLN_DATA", file=sys.stderr)
        return 2
    from havln_robot.challenge.replay import ReplayError, follow_reference
    from havln_robot.episodes import load_episodes
    from havln_robot.sim.scene import Scene

    eps = load_episodes(ep_file, conn, limit=args.offset + args.episodes)[args.offset :]
    if recorded is not None:
        eps = [e for e in eps if any((e.episode_id, k) in recorded for k in kinds)]
        if not eps:
            held = sorted({k for _, k in recorded})
            print(
                f"bench agreement: --live-log: {args.live_log} holds no live row of input {', '.join(kinds)} among val_seen "
                f"episodes {args.offset}..{args.offset + args.episodes - 1} (it holds {len(recorded)} row(s) of "
                f"{', '.join(held)}); give the same --kinds, --offset and --episodes as the recorded run",
                file=sys.stderr,
            )
            return 2
    policy = None
    if "model" in kinds:
        from havln_robot.policy.registry import make_policy

        policy = make_policy(args.policy, seed=args.seed)
    rows: list[dict[str, Any]] = []
    live_errors = 0
    t_batch = 0.0
    n_batch_actions = 0
    # the live model episodes' demo outputs (MCAP recordings: tens of MB each) are kept only on request
    tmp = Path(args.live_out) if args.live_out else Path(tempfile.mkdtemp(prefix="havln_agreement_"))
    try:
        print(
            f"bench agreement: {len(eps)} val_seen episodes, inputs {', '.join(kinds)}, seed {args.seed}; "
            f"batch = World.step (ClosedLoop: motion_node's executor), live = sim_node + motion_node + people_node{' + agent_node' if 'model' in kinds else ''} in lockstep "
            f"over loopback DDS (ROS_DOMAIN_ID {os.environ.get('ROS_DOMAIN_ID', '0')}, real_time_factor {args.real_time_factor:g})"
            + (
                f"; the expert writes its file under noise seed {args.seed + EXPERT_NOISE_OFFSET}, both worlds replay it under {args.seed}"
                if "expert" in kinds
                else ""
            ),
            flush=True,
        )
        scenes: dict[str, Any] = {}
        for ep in eps:
            scene = scenes.get(ep.scan) or scenes.setdefault(ep.scan, Scene.load(ep.scan, conn))
            for kind in kinds:
                if recorded is not None and (ep.episode_id, kind) not in recorded:
                    continue
                t0 = time.perf_counter()
                if kind == "reference":
                    seq = _cut(follow_reference(ep), args.max_actions)
                    b = _batch_replay(ep, scene, seq, args.seed)
                elif kind == "expert":
                    _, seq = _batch_policy(ep, scene, "expert", args.seed, noise_seed=args.seed + EXPERT_NOISE_OFFSET)
                    seq = _cut(seq, args.max_actions)
                    b = _batch_replay(ep, scene, seq, args.seed)
                    n_batch_actions += len(seq)  # the run that wrote the file is batch work too
                else:
                    b, seq = _batch_policy(ep, scene, policy, args.seed)
                n_batch_actions += b.actions
                draws: list[bool] = []
                for i in range(args.noise_draws):
                    s_i = args.seed + NOISE_DRAW_OFFSET + i
                    d = (
                        _batch_policy(ep, scene, policy, args.seed, noise_seed=s_i)[0]
                        if kind == "model"
                        else _batch_replay(ep, scene, seq, s_i, people_seed=args.seed)
                    )
                    draws.append(d.success)
                    n_batch_actions += d.actions
                t_batch += time.perf_counter() - t0
                row: dict[str, Any] = {"episode_id": ep.episode_id, "kind": kind, "batch": asdict(b), "live": None, "actions": list(seq)}
                if args.noise_draws:
                    row["batch_draws"] = draws
                if recorded is not None:
                    row["live"] = asdict(recorded[(ep.episode_id, kind)])
                elif not args.batch_only:
                    try:
                        if kind == "model":
                            lv = _live_model_fresh(ep.episode_id, ep_file, args.policy, args.seed, tmp / f"demo_{ep.episode_id}")
                        else:
                            lv = _live_replay(ep.episode_id, seq, ep_file, args.seed, args.real_time_factor)
                    except ReplayError as exc:
                        # the graph did not come up for this episode: no live outcome (not a failure of
                        # the robot), left out of the table; the run goes on with the next one
                        row["live_error"] = str(exc)
                        live_errors += 1
                    else:
                        lv.load = load_per_cpu()
                        row["live"] = asdict(lv)
                rows.append(row)
                if args.json:  # after every row: an interrupted run of hours keeps what it measured
                    _write_json(Path(args.json), rows, None, None)
                lvs = row["live"]
                print(
                    f"  episode {ep.episode_id:>6} {kind:<9} batch {'success' if b.success else 'failure'} NE {b.ne:5.2f} "
                    f"coll {b.collisions} refused {b.refused} ({b.actions} actions)"
                    + (f" draws {sum(draws)}/{len(draws)}" if args.noise_draws else "")
                    + (
                        f" | live {'success' if lvs['success'] else 'failure'} NE {lvs['ne']:5.2f} coll {lvs['collisions']} "
                        f"refused {lvs['refused']} ({lvs['actions']} actions)"
                        + (f" load/cpu {lvs['load']:.1f}" if lvs.get("load") is not None else "")
                        + (f" {lvs['note']}" if lvs["note"] else "")
                        if lvs
                        else (f" | live: no outcome ({row['live_error']})" if "live_error" in row else "")
                    ),
                    flush=True,
                )
    finally:
        if not args.live_out:
            shutil.rmtree(tmp, ignore_errors=True)
    speed = n_batch_actions / t_batch if t_batch > 0 else math.nan
    print(f"batch: {n_batch_actions} actions in {t_batch:.1f} s ({speed:.0f} actions/s incl. rendering for the model)")
    summary = summarize(rows)
    if summary:
        print()
        print_table(summary)
    if args.json:
        _write_json(Path(args.json), rows, summary, speed)
    if live_errors:
        print(
            f"bench agreement: {live_errors} live episode(s) gave no outcome (the graph failed; '| live: no outcome' above)",
            file=sys.stderr,
        )
        if live_errors == len(rows):
            return 2
    if args.check and not all(within_targets(s) for s in summary):
        return 1
    return 0
