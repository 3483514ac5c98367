"""``havln-robot demo``: the whole stack on real HA-R2R episodes in the embedded simulator.

Per episode: start sim_node, motion_node, agent_node (trained model from ``models/``) and
trial_logger_node in one process over loopback DDS (:mod:`havln_robot.bringup`), publish the
episode's instruction, print one live line per policy step, and when the agent ends (STOP or the
action budget) collect the trial row, the MCAP bag, a report with a top-down trajectory plot
(people and collisions on the scene map), a format-v1 action file and a summary.

Ctrl-C: the nodes are safe-stopped (zero ``cmd_vel``), the trial is closed as aborted, and
everything recorded so far is kept and reported.

Without the HA-VLN data (``havln-robot data fetch``; see :func:`havln_robot.paths.data_dir`) the
project's own small scene and a baseline policy run instead, and the demo says so in one WARN line.
"""

from __future__ import annotations

import argparse
import math
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from havln_robot import topics
from havln_robot.paths import config_dir, data_dir
from havln_robot.records import AgentStatus, EpisodeDone, GroundTruth, Outcome
from havln_robot.text import nonempty, number_in, path_arg, plural, terminal_safe

DEFAULT_EPISODES = "ha_r2r_de/HA_val_seen.json"
DEMO_NODES: tuple[str, ...] = ("sim_node", "motion_node", "agent_node", "trial_logger_node")
"""The nodes the demo starts from its profile (rows of :data:`havln_robot.node_table.NODES`)."""


@dataclass
class EpisodeRun:
    """What the demo observed of one episode (map frame, metres)."""

    episode_id: str
    scan: str
    instruction: str
    trajectory: list[tuple[float, float]] = field(default_factory=list)
    humans: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    collisions: list[dict[str, str]] = field(default_factory=list)  # contact records + map_x, map_y
    ground_truth: GroundTruth | None = None
    done: EpisodeDone | None = None
    steps_printed: int = 0
    wall_s: float = 0.0
    trial_id: int | None = None
    outcome: str = ""


def _fmt_line(status: AgentStatus, gt: GroundTruth | None) -> str:
    """One live line per policy step: the agent's action and the ground-truth pose, goal distance,
    nearest person and collision counts ("?" where there is no ground truth yet)."""
    if gt is not None and gt.has_pose and math.isfinite(gt.yaw_deg) and math.isfinite(gt.distance_to_goal_m):
        pose = f"({gt.x:6.2f}, {gt.y:6.2f}, {gt.yaw_deg:6.1f}°)"
        dist = f"{gt.distance_to_goal_m:5.2f} m"
        near = gt.nearest_person_m
        person = f"{near:5.2f} m" if near is not None else " none  "  # nobody there
    else:
        pose, dist, person = "(?)", "?", "?"
    ch, cs = (gt.collisions_human, gt.collisions_static) if gt is not None else (0, 0)
    return (
        f"  step {status.step:>3}  {status.action:<12}  pose {pose}  goal {dist}  "
        f"nearest person {person}  collisions human {ch} static {cs}"
    )


class _Monitor:
    """A plain rclpy node in the bringup's context: live lines, ground truth, episode end."""

    def __init__(self, context: Any, run: EpisodeRun, quiet: bool) -> None:
        from diagnostic_msgs.msg import DiagnosticStatus
        from geometry_msgs.msg import PoseArray
        from rclpy.node import Node
        from std_msgs.msg import String

        from havln_robot.ros import codec
        from havln_robot.ros.qos import sensor_qos

        self.node = Node("demo_monitor", context=context)
        self.run, self.quiet = run, quiet
        self._codec = codec
        self.instruction_pub = self.node.create_publisher(String, topics.INSTRUCTION, 10)
        n = self.node
        n.create_subscription(DiagnosticStatus, topics.GROUND_TRUTH, self._on_gt, 10)
        n.create_subscription(DiagnosticStatus, topics.AGENT_STATUS, self._on_status, 50)
        n.create_subscription(DiagnosticStatus, topics.COLLISION, self._on_collision, 50)
        n.create_subscription(PoseArray, topics.HUMANS, self._on_humans, sensor_qos(10))  # people: sensor data, best effort
        n.create_subscription(String, topics.EPISODE_DONE, self._on_done, 10)
        n.create_subscription(DiagnosticStatus, topics.ACTION_RESULT, self._on_result, 50)
        self._last_step = -1
        # refusal lines wait for the agent status of their step: motion_node's record may arrive first
        self._pending: list[str] = []

    def _decode(self, decode: Any, msg: Any) -> Any:
        from havln_robot.records import RecordError

        try:
            return decode(msg)
        except RecordError as exc:
            if not self.quiet:
                print(f"  ? record ignored: {exc}", flush=True)
            return None

    def _on_result(self, msg: Any) -> None:
        """Failed motions other than collisions and stalls (those come on havln/collision): timeout, slip, aborted."""
        r = self._decode(self._codec.decode_result, msg)
        if r is not None and not self.quiet and r.outcome not in (Outcome.OK, Outcome.COLLISION, Outcome.STALL, Outcome.REJECTED):
            print(f"  ! {terminal_safe(r.action or '?')}: {terminal_safe(r.outcome)} - {terminal_safe(r.detail)}", flush=True)

    def _on_gt(self, msg: Any) -> None:
        gt = self._decode(self._codec.decode_ground_truth, msg)
        if gt is None:
            return
        self.run.ground_truth = gt
        if not gt.has_pose:
            return
        xy = (gt.x, gt.y)
        if not self.run.trajectory or math.dist(self.run.trajectory[-1], xy) > 0.02:
            self.run.trajectory.append(xy)

    def _on_status(self, msg: Any) -> None:
        st = self._decode(self._codec.decode_agent_status, msg)
        if st is None or st.step < 0:
            return
        if st.action and st.step != self._last_step:
            self._last_step = st.step
            self.run.steps_printed += 1
            if not self.quiet:
                print(_fmt_line(st, self.run.ground_truth), flush=True)
        self._flush()

    def _flush(self) -> None:
        """Print the refusal lines held back until their step's line was printed."""
        for line in self._pending:
            print(line, flush=True)
        self._pending.clear()

    def _on_collision(self, msg: Any) -> None:
        c = self._decode(self._codec.decode_collision, msg)
        if c is None:
            return
        if not c.is_contact:
            if not self.quiet:
                how = "refused before start" if c.motion_state == "blocked" else "stopped short"
                what = "a person's personal space" if c.type == "human" else "an obstacle"
                gap = f", {c.distance_m:.2f} m away" if math.isfinite(c.distance_m) else ""
                self._pending.append(f"  - {c.action or '?'} {how}: {what} ({c.source}{gap})")
            return
        gt = self.run.ground_truth
        rec = c.to_values()
        rec["map_x"], rec["map_y"] = (str(gt.x), str(gt.y)) if gt is not None and gt.has_pose else ("", "")
        self.run.collisions.append(rec)
        if not self.quiet:
            print(
                f"  ! collision ({terminal_safe(c.type or '?')}, {terminal_safe(c.source)}) during {terminal_safe(c.action or '?')}",
                flush=True,
            )

    def _on_humans(self, msg: Any) -> None:
        for i, pose in enumerate(msg.poses):
            track = self.run.humans.setdefault(i, [])
            xy = (pose.position.x, pose.position.y)
            if not track or math.dist(track[-1], xy) > 0.05:
                track.append(xy)

    def _on_done(self, msg: Any) -> None:
        from havln_robot.records import RecordError

        self._flush()
        try:
            self.run.done = self._codec.decode_episode_done(msg)
        except RecordError:
            self.run.done = EpisodeDone(reason="unknown", values={"reason": "unknown", "raw": msg.data})

    def ready(self) -> bool:
        """The simulator publishes ground truth and the agent listens for instructions."""
        return self.run.ground_truth is not None and self.instruction_pub.get_subscription_count() > 0

    def send_instruction(self, text: str) -> None:
        from std_msgs.msg import String

        self.instruction_pub.publish(String(data=text))


def _pick_episodes(n: int, seed: int, episodes_file: Path) -> list[tuple[int, str]]:
    """(index, episode_id) of ``n`` episodes drawn with ``seed`` (same seed → same episodes)."""
    from havln_robot.episodes import load_episodes

    eps = load_episodes(episodes_file, data_dir() / "connectivity", flag="--episodes-file")
    rng = random.Random(seed)
    picks = rng.sample(range(len(eps)), k=min(n, len(eps)))
    return [(i, eps[i].episode_id) for i in picks]


#: Top-down map colours: free space and everything else (walls, no floor).
_FREE_COLOR, _WALL_COLOR = "#ece8de", "#8f8b82"
#: A floor whose free space spans at most this (m) is shown whole in the top-down plot.
MAP_FULL_VIEW_M = 40.0


def plot_episode(run: EpisodeRun, sim_params: dict[str, Any], out_png: Path) -> Path:
    """Top-down map of one run: free space vs wall, reference path, trajectory with its end, people,
    the contacts motion_node reported (havln/collision; not sim_node's ground-truth collision counts), goal.

    The view holds the whole floor when it spans at most :data:`MAP_FULL_VIEW_M` (the builtin scene,
    a house floor), else the paths with a margin.

    Returns:
        The PNG path.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from havln_robot.sim.session import open_episode

    opened = open_episode(sim_params)
    scene, ep = opened.scene, opened.episode
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    floor = scene.floor_at(*ep.start_position)  # the floor holding the start (not the nearest in height: split levels)
    fig, ax = plt.subplots(figsize=(8, 8.6), dpi=110, layout="constrained")
    geom = scene.floors[floor].free
    _draw_free_space(ax, geom)
    ref = [(p[0], p[1]) for p in ep.reference_path]
    if ref:
        ax.plot(*zip(*ref, strict=True), "--", color="#7a7a7a", lw=1.5, label="reference path", zorder=1)
    if run.trajectory:
        ax.plot(*zip(*run.trajectory, strict=True), "-", color="#1f5fbf", lw=2.2, label="robot (ground truth)", zorder=3)
        ex, ey = run.trajectory[-1]
        ax.scatter([ex], [ey], marker="s", s=70, color="#1f5fbf", edgecolors="k", zorder=6, label="robot end pose")
    for hid, track in run.humans.items():
        ax.plot(*zip(*track, strict=True), "-", color="#d98c1f", lw=1, alpha=0.6, zorder=2)
        ax.add_patch(plt.Circle(track[-1], 0.3, color="#d98c1f", alpha=0.9, zorder=4, label="person" if hid == 0 else None))
    cx = [float(c["map_x"]) for c in run.collisions if c.get("map_x")]
    cy = [float(c["map_y"]) for c in run.collisions if c.get("map_y")]
    if cx:
        # what motion_node reported as a contact (IMU jolt, stall under command, bumper), at the
        # ground-truth pose when it arrived; the summary's collision counts are sim_node's ground
        # truth (the body touching a wall or a person), which a stall against a drawn step or a
        # jolt need not be
        ax.scatter(cx, cy, marker="x", s=90, color="#c0152f", lw=2.5, zorder=5, label="contact reported by motion_node")
    sx, sy = ep.start_position[0], ep.start_position[1]
    ax.scatter([sx], [sy], marker="o", s=80, color="#2e9e44", zorder=6, label="start")
    gx, gy = ep.goal_position[0], ep.goal_position[1]
    ax.add_patch(plt.Circle((gx, gy), ep.goal_radius, fill=False, ls=":", color="#2e9e44", lw=1.5, zorder=2))
    ax.scatter([gx], [gy], marker="*", s=220, color="#2e9e44", zorder=6, label="goal (3 m radius)")
    lo_x, hi_x, lo_y, hi_y = view_limits(ref + run.trajectory + [(sx, sy), (gx, gy)], geom)
    ax.set_xlim(lo_x, hi_x)
    ax.set_ylim(lo_y, hi_y)
    ax.set_aspect("equal")
    ax.set_xlabel("map x [m]")
    ax.set_ylabel("map y [m]")
    ax.set_title(f"episode {run.episode_id} ({run.scan}): {run.outcome or 'unjudged'}", fontsize=11)
    handles, _labels = ax.get_legend_handles_labels()
    handles += [
        Patch(facecolor=_FREE_COLOR, edgecolor="0.5", label="free space"),
        Patch(facecolor=_WALL_COLOR, edgecolor="0.5", label="wall / no floor"),
    ]
    if not run.trajectory:
        handles.append(Line2D([], [], ls="none", label="no robot pose received"))
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8, frameon=False)
    ax.grid(True, alpha=0.25)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    from havln_robot.paths import save_figure

    save_figure(fig, out_png)
    plt.close(fig)
    return out_png


def _draw_free_space(ax: Any, geom: Any) -> None:
    """Free space (a shapely polygon or multipolygon) over a wall-coloured background."""
    ax.set_facecolor(_WALL_COLOR)  # everything that is not free space is wall / no floor
    for poly in getattr(geom, "geoms", [geom]):
        if poly.is_empty or not hasattr(poly, "exterior"):
            continue
        ax.fill(*poly.exterior.xy, color=_FREE_COLOR, zorder=0)
        for hole in poly.interiors:
            ax.fill(*hole.xy, color=_WALL_COLOR, zorder=0)


def view_limits(pts: list[tuple[float, float]], geom: Any, pad: float = 4.0) -> tuple[float, float, float, float]:
    """(x min, x max, y min, y max) of the plot, m: the points with ``pad``, and the whole floor
    ``geom`` when it spans at most :data:`MAP_FULL_VIEW_M`."""
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    lo_x, hi_x, lo_y, hi_y = min(xs) - pad, max(xs) + pad, min(ys) - pad, max(ys) + pad
    if not geom.is_empty:
        bx0, by0, bx1, by1 = geom.bounds
        if max(bx1 - bx0, by1 - by0) <= MAP_FULL_VIEW_M:  # small map: show all of it
            lo_x, hi_x, lo_y, hi_y = min(lo_x, bx0 - 0.5), max(hi_x, bx1 + 0.5), min(lo_y, by0 - 0.5), max(hi_y, by1 + 0.5)
    return lo_x, hi_x, lo_y, hi_y


def _on_signal(bringup: Any, flag: dict[str, Any]) -> None:
    """SIGINT/SIGTERM: remember it (``flag["flag"]``, ``flag["signum"]``) and make the bringup return
    from spinning (nodes stop safely after); shutdown is bounded and a second signal exits at once
    (:func:`havln_robot.bringup.install_shutdown_signals`)."""
    from havln_robot.bringup import install_shutdown_signals

    flag["bringup"] = bringup
    if "state" in flag:
        # installed for an earlier episode: the handler stops whichever episode runs now. Installing
        # again lost a signal that came while this episode was prepared (the episode ran to its end)
        # and the force-exit timer it had armed (which then ended the process mid-episode).
        if flag["flag"]:
            bringup.stop()
        return

    def on_signal() -> None:
        flag["flag"] = True
        flag["bringup"].stop()

    flag["state"] = install_shutdown_signals(on_signal, label="havln-robot demo")


def _episode_over(run: EpisodeRun) -> Any:
    return lambda: run.done is not None


def main(argv: list[str] | None = None) -> int:
    """Entry of ``havln-robot demo``; returns 0 on a completed run, 130 when interrupted, 2 on bad input
    (also when another run writes the same ``--out`` store: one writer per store)."""
    held: list[Any] = []
    try:
        return _main(argv, held)
    finally:
        for lock in held:
            lock.release()


class DemoError(Exception):
    """A refusal of the demo: one line after ``havln-robot demo:``, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``havln-robot demo``."""
    ap = argparse.ArgumentParser(prog="havln-robot demo", description=__doc__.splitlines()[0].replace("``", ""))
    ap.add_argument("--episodes", type=number_in(1, integer=True), default=1, help="number of HA-R2R val_seen episodes to run (default 1)")
    ap.add_argument(
        "--seed",
        type=number_in(0, integer=True),
        default=0,
        help="picks the episodes and seeds the simulator's people and noise (same seed, same episodes and draws)",
    )
    ap.add_argument(
        "--episode-id", type=nonempty("an episode id"), default=None, help="run this episode (path_id) instead of a seeded pick"
    )
    ap.add_argument("--episodes-file", type=path_arg, default=None, help=f"HA-R2R/R2R episodes file (default $DATA/{DEFAULT_EPISODES})")
    ap.add_argument(
        "--policy",
        type=nonempty("a policy: expert, forward, random or a checkpoint"),
        default=None,
        help="agent policy (default: the trained model in models/, see config/sim.yaml)",
    )
    ap.add_argument(
        "--scenes",
        type=path_arg,
        default=None,
        help="folder of your scan meshes <scan>/<scan>.glb: sim_node renders them (default: procedural scenes)",
    )
    ap.add_argument(
        "--max-actions", type=number_in(1, 100000, integer=True), default=None, help="policy action budget per episode (default 500)"
    )
    ap.add_argument("--out", type=path_arg, default="runs/demo", help="output folder (default runs/demo)")
    ap.add_argument("--profile", type=path_arg, default=str(config_dir() / "sim.yaml"), help="deployment profile (default config/sim.yaml)")
    ap.add_argument("--timeout", type=number_in(0, unit="s", above=True), default=3600.0, help="wall-clock limit per episode, s")
    ap.add_argument(
        "--people",
        choices=("profile", "detected", "ground_truth"),
        default="profile",
        help="where motion_node's people come from: detected = people_node tracking the rendered depth, "
        "ground_truth = sim_node's true people (no people_node); default: the profile's sim_node people_source",
    )
    ap.add_argument("--quiet", action="store_true", help="no per-step lines")
    ap.add_argument("--verbose", action="store_true", help="also show the nodes' own log lines (INFO and up; default: errors only)")
    return ap


def _check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse options argparse's types let through (argparse's exit 2)."""
    from havln_robot.paths import input_file_problem

    if args.max_actions is not None and not 1 <= args.max_actions <= 500:
        ap.error(f"--max-actions {args.max_actions}: the HA-VLN budget is 1..500 actions per episode")
    if args.scenes and not Path(args.scenes).is_dir():
        ap.error(f"--scenes {args.scenes}: not a folder; give the folder holding <scan>/<scan>.glb")
    why = input_file_problem(args.episodes_file, missing="no such file") if args.episodes_file else None
    if why is not None:
        ap.error(f"--episodes-file {args.episodes_file}: {why}; HA-R2R episodes are e.g. $DATA/{DEFAULT_EPISODES}")


def _choose_episodes(args: argparse.Namespace) -> tuple[Path, bool, list[tuple[int, str]]]:
    """(episodes file, whether the data is there, (index, episode id) of each episode to run; ``""``: the builtin one)."""
    from havln_robot.paths import safe_component

    episodes_file = Path(args.episodes_file) if args.episodes_file else data_dir() / DEFAULT_EPISODES
    if not (episodes_file.is_file() and (data_dir() / "connectivity").is_dir()):
        print("havln-robot demo: the project's own builtin scene and episode")
        return episodes_file, False, [(0, "")]
    picks = [(0, args.episode_id)] if args.episode_id else _pick_episodes(args.episodes, args.seed, episodes_file)
    for _i, eid in picks:  # an id names topdown_<id>.png under --out: refuse one that would leave it
        safe_component(f"topdown_{eid}.png", f"episode id {eid!r}")
    print(f"havln-robot demo: {plural(len(picks), 'real HA-R2R episode')} from {episodes_file} (seed {args.seed})")
    return episodes_file, True, picks


def _lock_store(db: Path, out: Path) -> Any:
    """The store's writer lock for the whole run (every episode's logger takes it again); DemoError when held."""
    from havln_robot import locks
    from havln_robot.trials.store import lock_path

    try:
        return locks.acquire(lock_path(db), what=f"havln-robot demo --out {out}")
    except locks.LockBusy as exc:
        raise DemoError(
            f"--out {out}: another run writes its trial store ({exc.info}); one writer per store -- "
            "wait for it to finish, or give this run another --out"
        ) from exc
    except OSError as exc:
        raise DemoError(f"--out {out}: cannot create the store lock ({exc.strerror})") from exc


def _overrides(args: argparse.Namespace, have_data: bool, episodes_file: Path, episode_id: str, out: Path) -> dict[str, dict]:
    """The profile overrides of one episode: sim_node's episode, agent_node's policy, the logger's store."""
    sim_over: dict[str, Any] = {"seed": args.seed}
    if args.people != "profile":
        sim_over["people_source"] = args.people
    if have_data:
        sim_over.update(scene_source="episodes", episodes_file=str(episodes_file), episode_id=episode_id)
        if args.scenes:
            sim_over["scenes_dir"] = str(Path(args.scenes).resolve())
    else:
        sim_over.update(scene_source="auto")  # no data: the builtin scene, said by no_data_overrides
    agent_over = {k: v for k, v in (("policy", args.policy), ("max_actions", args.max_actions)) if v}
    logger_over = {"platform": "sim", "db_path": str(out / "trials.db"), "auto_start": True, "auto_end": True, "auto_judge": True}
    logger_over |= {"record_mcap": True, "mcap_dir": str(out / "mcap")}
    return {"sim_node": sim_over, "agent_node": agent_over, "trial_logger_node": logger_over}


def _episode_profile(args: argparse.Namespace, overrides: dict[str, dict], first: bool) -> tuple[Any, Any]:
    """(profile, opened episode) of one episode; DemoError on a bad profile or episode."""
    from havln_robot.bringup import no_data_overrides
    from havln_robot.config import load_profile
    from havln_robot.params import ConfigError
    from havln_robot.sim.session import SessionError, open_episode

    try:
        profile = load_profile(args.profile, overrides)
        fallback, warning = no_data_overrides(profile)
        if fallback:  # the same choice and the same WARN line as `havln-robot launch`
            for node, params in fallback.items():
                overrides.setdefault(node, {}).update(params)
            profile = load_profile(args.profile, overrides)
            if first and warning:
                print(f"WARN: {warning}")
    except ConfigError as exc:
        raise DemoError(str(exc)) from exc
    if profile.nodes.get("sim_node", {}).get("people_source") == "detected" and "people_node" not in profile.nodes:
        raise DemoError("people_source 'detected' needs a people_node section in the profile")
    try:
        opened = open_episode(profile.nodes["sim_node"])
    except SessionError as exc:
        raise DemoError(str(exc)) from exc
    _describe_scene(profile.nodes["trial_logger_node"], opened.episode)
    return profile, opened


def _describe_scene(logger: dict[str, Any], ep: Any) -> None:
    """The trial row describes the scene the robot is really in: people and the region they are in."""
    from havln_robot.trials.regions import canonical_region

    logger["people_present"] = len(ep.humans)
    region = next((h.region for h in ep.humans if h.region), "")
    if region:
        try:
            logger["region"] = canonical_region(region)
        except ValueError:
            pass  # an unlisted region name stays "unknown" in the trial row


def _run_episode(profile: Any, ep: Any, run: EpisodeRun, args: argparse.Namespace, first: bool, stop: dict[str, Any]) -> Any:
    """Bring the nodes up, send the instruction, spin until the episode ends; the Bringup (shut down)."""
    from havln_robot.bringup import Bringup
    from havln_robot.params import ConfigError

    # the ROS-domain discovery watch once (the per-domain lock every time): later episodes follow our own nodes
    bringup = Bringup(profile, log=lambda s: None, check_graph=first)
    if not args.verbose:
        # the demo prints its own line per step, refusal, collision and failed action; the nodes'
        # INFO/WARN lines would bury them. Node loggers are named after the nodes.
        import rclpy.logging

        for name in profile.nodes:
            rclpy.logging.set_logger_level(name, rclpy.logging.LoggingSeverity.ERROR)
    _on_signal(bringup, stop)
    t0 = time.monotonic()
    try:
        try:
            bringup.start()
        except ConfigError as exc:
            raise DemoError(str(exc)) from exc
        missing = [name for name in DEMO_NODES if name not in bringup.nodes]
        if missing:
            raise DemoError(f"the profile does not configure {', '.join(missing)}; the demo runs {', '.join(DEMO_NODES)}")
        mon = _Monitor(bringup.context, run, args.quiet)
        bringup.add_node(mon.node)
        if bringup.spin_until(mon.ready, timeout=60.0) != "done":
            if not stop["flag"]:
                print("havln-robot demo: the simulator or agent did not come up within 60 s", file=sys.stderr)
        else:
            mon.send_instruction(ep.instruction)
            if bringup.spin_until(_episode_over(run), timeout=args.timeout) == "timeout":
                print(f"  episode timed out after {args.timeout:.0f} s (wall clock)")
            if not stop["flag"]:  # give the trial logger a moment to judge and close the trial
                bringup.spin_until(timeout=1.0)
    finally:
        bringup.shutdown()
        run.wall_s = time.monotonic() - t0
    return bringup


def _print_episode(n: int, total: int, opened: Any) -> None:
    ep = opened.episode
    print(f"\n[{n + 1}/{total}] {opened.note}")
    print(f'  instruction: "{terminal_safe(ep.instruction)}"')
    print(f"  start→goal {math.dist(ep.start_position[:2], ep.goal_position[:2]):.1f} m straight, {ep.geodesic_distance:.1f} m along the path")  # fmt: skip


def _episodes_loop(args: argparse.Namespace, picks: list, have_data: bool, episodes_file: Path, out: Path, stop: dict) -> tuple[list, bool]:
    """Run the picked episodes one bringup each; (runs, whether a node failed). DemoError on a refusal."""
    runs: list[EpisodeRun] = []
    for n, (_index, episode_id) in enumerate(picks):
        if stop["flag"]:  # signalled between two episodes: start no other
            print("\nhavln-robot demo: interrupted -- no further episode started, logs kept")
            break
        profile, opened = _episode_profile(args, _overrides(args, have_data, episodes_file, episode_id, out), n == 0)
        ep = opened.episode
        run = EpisodeRun(ep.episode_id, ep.scan, ep.instruction)
        runs.append(run)
        _print_episode(n, len(picks), opened)
        bringup = _run_episode(profile, ep, run, args, n == 0, stop)
        if bringup.failed is not None:
            name, exc = bringup.failed
            print(
                f"havln-robot demo: {name} failed ({type(exc).__name__}: {exc}); every node was stopped, the robot first. "
                "Outputs so far are kept; the traceback is above.",
                file=sys.stderr,
            )
            return runs, True
        if stop["flag"]:
            timer = (stop.get("state") or {}).get("timer")
            if timer is not None:  # every node stopped (the robot first): finish writing the outputs
                timer.cancel()
            print("\nhavln-robot demo: interrupted -- robot commanded to stop, trial closed as aborted, logs kept")
            break
    return runs, False


def _main(argv: list[str] | None, held: list[Any]) -> int:
    from havln_robot.paths import prepare_out_dir

    ap = build_parser()
    args = ap.parse_args(argv)
    _check_args(ap, args)
    out = prepare_out_dir(args.out, "--out").resolve()
    episodes_file, have_data, picks = _choose_episodes(args)
    db = out / "trials.db"
    stop: dict[str, Any] = {"flag": False}
    t_all = time.monotonic()
    try:
        # one writer per store: a second demo on the same --out is refused before it touches anything
        held.append(_lock_store(db, out))
        runs, failed = _episodes_loop(args, picks, have_data, episodes_file, out, stop)
    except DemoError as exc:
        print(f"havln-robot demo: {exc}", file=sys.stderr)
        return 2
    try:
        status = _finish(runs, db, out, args, have_data, episodes_file)
    except OSError as exc:  # e.g. a full disk: what the store committed is kept
        print(
            f"havln-robot demo: cannot write the outputs in {out} ({exc.strerror}); the trial store {db} keeps what was recorded",
            file=sys.stderr,
        )
        status = 1
    print(f"\ntotal wall time {time.monotonic() - t_all:.1f} s; outputs in {out}")
    if stop["flag"]:
        return 128 + (stop.get("state") or {}).get("signum", signal.SIGINT)
    return 1 if failed else status


def kinds_note(run: EpisodeRun) -> str:
    """One line when motion_node's classification of the contacts differs from sim_node's ground truth
    in any kind (human or static), "" when they agree. The table, the report and SR use the ground truth."""
    gt = run.ground_truth
    if gt is None:
        return ""
    rh = sum(c.get("type") == "human" for c in run.collisions)
    rs = sum(c.get("type") == "static" for c in run.collisions)
    ro = len(run.collisions) - rh - rs
    if (rh, rs, ro) == (gt.collisions_human, gt.collisions_static, 0):
        return ""
    other = f", {ro} other" if ro else ""
    return (
        f"motion_node classified its contacts as human {rh}, static {rs}{other} (red x in the plot); sim_node's ground truth "
        f"counts human {gt.collisions_human}, static {gt.collisions_static} (the table, the report and SR use the ground truth)"
    )


def summary_row(run: EpisodeRun, t: Any) -> str:
    """One row of the demo's summary table: ``run`` and its trial row ``t`` (None: not recorded)."""
    gt = run.ground_truth
    ne = t.ne_m if t is not None and t.ne_m is not None else (gt.distance_to_goal_m if gt is not None else math.nan)
    done = run.done.values if run.done is not None else {}
    steps = done.get("steps", "?")
    pm = done.get("policy_ms_mean")
    wait = done.get("policy_wait_s")  # waiting on the policy after panoramas (agent_node), else every inference
    if not isinstance(wait, (int, float)):
        wait = (pm or 0.0) * (steps if isinstance(steps, int) else 0) / 1000.0
    shares = [done.get("panorama_share"), done.get("policy_wait_share")]
    pano_pct, wait_pct = (f"{100.0 * v:.0f} %" if isinstance(v, (int, float)) else "-" for v in shares)
    n_pano = done.get("panoramas", "-")
    ch = str(gt.collisions_human if gt is not None else 0)
    cs = str(gt.collisions_static if gt is not None else 0)
    return (
        f"  {run.episode_id:<10} {run.outcome or '?':<9} {ne:7.2f} {steps!s:>5} {ch + '/' + cs:>8} {run.wall_s:8.1f} {wait:15.1f} "
        f"{n_pano!s:>9} {pano_pct:>12} {wait_pct:>17}  #{run.trial_id}"
    )


def _finish(runs: list[EpisodeRun], db: Path, out: Path, args: argparse.Namespace, have_data: bool, episodes_file: Path) -> int:
    """Trial rows, report, plots, format-v1 file and the summary table."""
    from havln_robot.paths import safe_child
    from havln_robot.trials.report import write_report
    from havln_robot.trials.store import TrialError, TrialStore

    if not db.exists():
        print("no trial was recorded")
        return 1
    try:
        with TrialStore(db, readonly=True) as store:
            trials = sorted(store.trials(platform="sim"), key=lambda t: t.id)
            # one bringup per episode, one trial per bringup: the i-th trial is the i-th run
            matched = list(zip(trials[-len(runs) :], runs, strict=False)) if len(trials) >= len(runs) else []
            for t, run in matched:
                run.trial_id, run.outcome = t.id, (t.outcome or t.state)
            write_report(store, out / "report", platform="sim", title="havln_robot demo")
            from havln_robot.challenge.export import ExportError, Record, merge_into_split_file

            records = [
                Record(run.episode_id, tuple(store.actions(t.id)), "val_seen", f"trial {t.id}") for t, run in matched if run.episode_id
            ]
            if records:
                # the demo folder accumulates trials: the action file keeps the episodes of earlier runs
                try:
                    actions_file, replaced = merge_into_split_file(records, out, "val_seen")
                except ExportError as exc:
                    print(f"havln-robot demo: {exc}", file=sys.stderr)
                    return 1
                if replaced:
                    print(
                        f"note: {actions_file}: episode(s) {', '.join(replaced)} were in it from an earlier run; "
                        "the newest trial's actions replace them"
                    )
            rows = {t.id: t for t in trials}
    except TrialError as exc:
        print(f"havln-robot demo: trial store: {exc}", file=sys.stderr)
        return 1

    sim_base: dict[str, Any] = {"scene_source": "episodes" if have_data else "builtin"}
    if have_data:
        sim_base.update(episodes_file=str(episodes_file), connectivity_dir=str(data_dir() / "connectivity"))
        if args.scenes:
            sim_base["scenes_dir"] = str(Path(args.scenes).resolve())
    print("\nsummary")
    print(
        f"  {'episode':<10} {'outcome':<9} {'NE [m]':>7} {'steps':>5} {'coll h/s':>8} {'wall [s]':>8} {'policy wait [s]':>15} "
        f"{'panoramas':>9} {'in panoramas':>12} {'waiting on policy':>17}  trial"
    )
    for run in runs:
        t = rows.get(run.trial_id) if run.trial_id else None
        png = plot_episode(
            run,
            {**sim_base, "episode_id": run.episode_id if have_data else ""},
            safe_child(out / "report", f"topdown_{run.episode_id}.png", f"episode id {run.episode_id!r}"),
        )
        print(summary_row(run, t))
        print(f"    top-down plot: {png}")
        note = kinds_note(run)
        if note:
            print(f"    {note}")
        if t is not None and t.mcap_path:
            print(f"    MCAP bag: {terminal_safe(t.mcap_path)}")
    print(f"  trial DB: {db}")
    print(f"  report:   {out / 'report' / 'report.md'}")
    if (out / "val_seen.json").exists():
        print(f"  actions:  {out / 'val_seen.json'} (challenge format v1; ids are HA-R2R path ids)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
