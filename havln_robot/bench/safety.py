"""``havln-robot bench safety``: the safety course in the embedded simulator.

Runs each scenario of :func:`havln_robot.sim.hazards.course` (boxes 0.10-0.60 m high, 0.2-1.0 m
wide, 0-45 deg, from 0.15-3 m; ledges 0.1-1.0 m; stairs down; a low table; a chair with thin legs;
a glass door; a person stepping out at 1.5 m/s; a 0.8 m doorway; open floor) over ``--seeds``
seeds, depth only and with the simulated LiDAR, through motion_node's safety layer with the go2
profile (config/go2.yaml), and prints per kind: runs, contacts, falls, the closest the footprint
came to an obstacle (the stopping distance), refusals and travel. False refusals: the expert's
actions on ``--episodes`` val_seen reference paths in the batch closed-loop world (config/sim.yaml)
that motion_node refused (target <= 2 %). Exit code 1 when a target is missed (0 contacts with
static obstacles of 0.10 m or more, 0 falls, false refusals <= 2 %; the glass door counts only
with the LiDAR: depth sees through it, and the table says so). ``--json FILE`` writes the rows and the
false refusals (what ``bench all`` puts in the README's figures). ``--live``: also the live subset
(:mod:`havln_robot.bench.safety_live`: the issue's reproductions and one scene of each other kind
through the real motion_node on a ROS graph, each compared with its batch run; a disagreement
misses the targets).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

from havln_robot.text import number_in, path_arg


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="havln-robot bench safety", description="The safety course (boxes, ledges, glass, people, doorways) in the embedded simulator."
    )
    p.add_argument("--seeds", type=number_in(1, integer=True), default=3, help="seeds per scenario (default 3)")
    p.add_argument("--quick", action="store_true", help="a subset of the scenarios")
    p.add_argument(
        "--episodes", type=number_in(0, integer=True), default=16, help="val_seen reference paths for false refusals (default 16; 0 = skip)"
    )
    p.add_argument("--live", action="store_true", help="also run the live subset through the real motion_node on a ROS graph (about 4 min)")
    p.add_argument("--json", type=path_arg, default=None, help="also write the table and false refusals as JSON to this file")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    return p


def course_rows(seeds: int, quick: bool) -> tuple[list[dict[str, object]], bool]:
    """Run the course; returns (one row per scenario kind and sensor set, all targets met)."""
    from havln_robot.sim.hazards import course, run

    rows: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    ok = True
    for sc in course(quick):
        for lidar in (False, True):
            for seed in range(seeds):
                r = run(sc, seed=seed, lidar=lidar)
                row = rows[(sc.kind, "depth + LiDAR" if lidar else "depth")]
                row["runs"] += 1
                row["contacts"] += r.contact
                row["falls"] += r.fall
                row["refused"] += r.refused
                row["travel"] += r.travelled_m
                row["clear"] = min(row.get("clear", float("inf")), r.clearance_m)
                counts = not sc.lidar_only or lidar
                if counts and (r.contact or r.fall):
                    ok = False
    out: list[dict[str, object]] = []
    for (kind, sensors), r in rows.items():
        out.append(
            {
                "scenario": kind,
                "sensors": sensors,
                "runs": int(r["runs"]),
                "contacts": int(r["contacts"]),
                "falls": int(r["falls"]),
                "closest_m": None if r["clear"] == float("inf") else round(r["clear"], 3),
                "refused": int(r["refused"]),
                "mean_travel_m": round(r["travel"] / r["runs"], 3),
            }
        )
    return out, ok


def table_lines(rows: list[dict[str, object]]) -> list[str]:
    """The course table (Markdown) of :func:`course_rows` (``bench safety`` and the README's figures):
    one line per scenario, each cell "depth / depth + LiDAR"."""
    by: dict[str, dict[str, dict[str, object]]] = defaultdict(dict)
    for r in rows:
        by[str(r["scenario"])][str(r["sensors"])] = r
    out = [
        "| scenario | runs | contacts | falls | closest approach (m) | ended refused | mean travel (m) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def pair(pr: dict[str, dict[str, object]], key: str, fmt=str) -> str:
        return " / ".join("-" if pr.get(k, {}).get(key) is None else fmt(pr[k][key]) for k in ("depth", "depth + LiDAR"))

    for kind, pr in by.items():
        note = " (depth sees through glass: LiDAR only)" if kind == "glass door" else ""
        out.append(
            f"| {kind}{note} | {pair(pr, 'runs')} | {pair(pr, 'contacts')} | {pair(pr, 'falls')} | "
            f"{pair(pr, 'closest_m', lambda v: f'{v:.2f}')} | {pair(pr, 'refused')} | {pair(pr, 'mean_travel_m', lambda v: f'{v:.2f}')} |"
        )
    return out


def false_refusals(n: int) -> tuple[int, int]:
    """(refused, actions) of the expert on the first ``n`` val_seen reference paths in the batch closed loop."""
    from havln_robot.episodes import load_episodes
    from havln_robot.eval import run_episode
    from havln_robot.paths import data_dir
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.scene import Scene
    from havln_robot.sim.world import World

    root = data_dir()
    conn = root / "connectivity"
    eps = load_episodes(root / "ha_r2r_de" / "HA_val_seen.json", conn, limit=n)
    refused = actions = 0
    scenes: dict[str, object] = {}
    for ep in eps:
        scene = scenes.get(ep.scan) or scenes.setdefault(ep.scan, Scene.load(ep.scan, conn))
        w = World(scene, ep, Crowd.from_episode(ep, scene, 0), seed=0)
        acts = run_episode(w, "expert", seed=0)
        refused += w.loop.refused
        actions += len(acts)
    return refused, actions


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.json:
        from havln_robot.paths import check_out_file

        check_out_file(args.json, "--json", overwrite=args.overwrite)
    t0 = time.perf_counter()
    rows, ok = course_rows(args.seeds, args.quick)
    doc: dict[str, object] = {"seeds": args.seeds, "quick": bool(args.quick), "rows": rows, "false_refusals": None}
    print(f"safety course ({args.seeds} seeds, go2 profile, {'quick' if args.quick else 'full'}):")
    print("\n".join(table_lines(rows)))
    if args.episodes:
        try:
            ref, n = false_refusals(args.episodes)
        except (OSError, ValueError) as exc:
            print(f"false refusals: skipped ({exc})")
            doc["false_refusals"] = f"skipped ({exc})"
        else:
            pct = 100.0 * ref / max(n, 1)
            print(f"false refusals: {ref} of {n} expert actions on {args.episodes} val_seen reference paths ({pct:.2f} %; target <= 2 %)")
            ok = ok and pct <= 2.0
            doc["false_refusals"] = {"refused": ref, "actions": n, "paths": args.episodes, "percent": round(pct, 3)}
    if args.live:
        from havln_robot.bench.safety_live import live_rows, live_table

        live, live_ok = live_rows()
        print("live subset (the real motion_node on a ROS graph, seed 0; batch = the same scene and seed):")
        print("\n".join(live_table(live)))
        ok = ok and live_ok
        doc["live"] = live
    doc["targets_met"] = ok
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"targets {'met' if ok else 'MISSED'} ({doc['seconds']:.0f} s)")
    if args.json:
        from havln_robot import jsonio
        from havln_robot.paths import atomic_output

        with atomic_output(args.json) as tmp:
            jsonio.write(tmp, doc, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
