"""``havln-robot bench scale``: eval throughput serial vs Ray with 1 and 2 workers, and Ray's overhead per episode.

The same ``--episodes`` val_seen episodes (default 12) of ``--policy`` (default the shipped model)
run three times in this process through :func:`havln_robot.eval.run_engine`: serially, then on a
local Ray runtime (127.0.0.1) with 1 and with N CPUs (``--workers``, default 2). For each run it
measures the runtime start (``ray.init``, not counted in the throughput: a sweep pays it once) and
the wall time from the first task submitted to the last result in, which includes each worker
loading the model and scenes once. It checks that the three runs gave identical per-episode results.

Figures (``--out FILE``: JSON; stdout: one line per engine)::

    scale <engine>: <n> episodes in <s> s, <eps> episodes/s, speed-up <x>, runtime start <s> s

and ``overhead``: (Ray 1-worker wall - serial wall) / n, s per episode -- what moving an episode
into a Ray task costs (serialising the job and the result, scheduling, the worker's first loads).
"""

from __future__ import annotations

import argparse
import sys
import time

from havln_robot.paths import write_json
from havln_robot.text import nonempty, number_in, path_arg, plural


def measure(policy: str, n: int, workers: int, seed: int = 0, log=print) -> dict:
    """Run the three engines on the first ``n`` val_seen episodes; returns the figures (see the module docstring).

    Raises:
        RuntimeError: the engines' per-episode results differ (the Ray engine's contract is broken).
        EpisodeError: the episodes file is missing.
    """
    from havln_robot import cluster
    from havln_robot import eval as ev
    from havln_robot.episodes import load_episodes
    from havln_robot.paths import data_dir

    ep_file = data_dir() / "ha_r2r_de" / "HA_val_seen.json"
    eps = load_episodes(ep_file, limit=n)
    jobs = ev.make_jobs(eps, ev.EvalOptions(policy=policy, seed=seed))
    runs, results = [], {}
    for name, target in (("serial", None), ("ray 1 worker", ("local", 1)), (f"ray {workers} workers", ("local", workers))):
        got: dict[int, dict] = {}
        start_s = 0.0
        if target is not None:
            t = time.perf_counter()
            started = cluster.connect(*target)
            start_s = time.perf_counter() - t
            if not started:
                raise RuntimeError("a Ray runtime is already connected in this process; bench scale starts its own")
        try:
            t = time.perf_counter()
            out = ev.run_engine(jobs, target, lambda r, got=got: got.__setitem__(r[0], r[2]), quiet=True)
            wall = time.perf_counter() - t
        finally:
            if target is not None:
                cluster.disconnect()
        if out.failed:
            raise RuntimeError(f"bench scale: {name}: {plural(len(out.failed), 'episode')} failed: {next(iter(out.failed.values()))}")
        for r in got.values():
            if isinstance(r, dict):
                r.pop("seconds", None)
        results[name] = got
        row = {"engine": name, "workers": 0 if target is None else target[1], "episodes": len(got), "wall_s": wall, "start_s": start_s}
        row["episodes_per_s"] = len(got) / wall if wall > 0 else None
        runs.append(row)
        log(f"scale {name}: {len(got)} episodes in {wall:.1f} s, {row['episodes_per_s']:.3f} episodes/s, runtime start {start_s:.1f} s")
    first = next(iter(results.values()))
    for name, got in results.items():
        if got != first:
            raise RuntimeError(f"bench scale: {name} gave other per-episode results than the serial run")
    for row in runs:
        row["speedup"] = row["episodes_per_s"] / runs[0]["episodes_per_s"]
    overhead = (runs[1]["wall_s"] - runs[0]["wall_s"]) / n
    log(f"overhead: {overhead:+.3f} s per episode (Ray 1 worker vs serial); identical per-episode results: yes")
    return {"policy": policy, "episodes": n, "seed": seed, "runs": runs, "overhead_s_per_episode": overhead, "identical": True}


def main(argv: list[str]) -> int:
    """``havln-robot bench scale``; returns the exit code (2 for bad input or missing data)."""
    from havln_robot.paths import check_out_file

    ap = argparse.ArgumentParser(prog="havln-robot bench scale", description="eval throughput: serial vs Ray with 1 and N local workers.")
    ap.add_argument(
        "--policy",
        type=nonempty("a policy: expert, forward, random or a checkpoint"),
        default="small_panoramic",
        help="policy to evaluate (default the shipped model small_panoramic)",
    )
    ap.add_argument("--episodes", type=number_in(1, 10_000, integer=True), default=12, help="first N val_seen episodes (default 12)")
    ap.add_argument("--workers", type=number_in(1, 4096, integer=True), default=2, help="CPUs of the second Ray run (default 2)")
    ap.add_argument("--out", type=path_arg, default=None, help="write the figures as JSON here")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    args = ap.parse_args(argv)
    if args.out:
        check_out_file(args.out, "--out", overwrite=args.overwrite)
    from havln_robot.episodes import EpisodeError

    try:
        fig = measure(args.policy, args.episodes, args.workers)
    except EpisodeError as exc:
        print(f"havln-robot bench scale: {exc}", file=sys.stderr)
        return 2
    if args.out:
        write_json(args.out, fig, nonfinite="null", indent=2)
    return 0
