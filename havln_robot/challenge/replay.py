"""``havln-robot replay FILE.json``: run a format-v1 action file in the simulator or over ROS.

Backends:

* ``batch`` (default, fast): each episode's actions go through the batch simulator's
  ``World.step`` (:mod:`havln_robot.sim.world`: 0.25 m / 15 deg / 30 deg, swept collision check,
  moving people), then per-episode NE, success, collisions, TCR, CR, SR are printed with the
  aggregate SR / NE / TCR / CR / Score. No ROS involved.
* ``ros`` (:mod:`havln_robot.ros.replay`, injected into :func:`main`; this module imports no
  rclpy): each action is published on ``havln/action`` and the replay waits for motion_node's
  ``havln/action_result`` before sending the next -- the same path a policy's actions take.
  ``--target embedded`` starts sim_node + motion_node in this process (config/sim.yaml);
  ``--target external`` drives nodes already running (Gazebo: ``ros2 launch havln_robot
  gazebo_replay.launch.py``); ``--target robot`` does the same on the Go2 after the operator types
  ``yes``. Ctrl-C (and an ``aborted`` action result, e.g. from the e-stop) publishes STOP and ends
  the replay.

Episode ids. Challenge ids (``"1".."778"`` val_seen, ``"1".."1839"`` val_unseen) are the
``episode_id`` of the **continuous** HA-R2R split files (VLN-CE ``val_seen.json.gz``), which are not
in the data ``havln-robot data fetch`` provides; pass that file with ``--episodes-file``. The
discrete ``ha_r2r_de/HA_val_seen.json`` of the data folder is keyed by ``path_id`` (:func:`havln_robot.episodes.load_episodes` gives discrete
episodes ``episode_id = str(path_id)``), so a file replayed against it must use path ids as
episode ids. No mapping between the two id spaces is invented: an id that is not in the episode
file is refused with this explanation.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from havln_robot.actions import (
    FORWARD_STEP_M,
    MAX_ACTIONS,
    MOVE_FORWARD,
    STOP,
    TURN_ANGLE_RAD,
    TURN_LEFT,
    TURN_RIGHT,
)
from havln_robot.challenge.format import FormatError, SplitFile, read_split_file
from havln_robot.paths import data_dir, write_json
from havln_robot.text import nonempty, number_in, path_arg, plural, terminal_safe


class ReplayError(ValueError):
    """Replay cannot start: bad file, unknown episode ids, missing simulator parts; one-line message."""


@dataclass
class ReplayedEpisode:
    """One replayed episode, scored (not the agent's :class:`havln_robot.agent.core.EpisodeResult`).

    Attributes:
        episode_id: id in the action file.
        metrics: :class:`havln_robot.sim.metrics.EpisodeMetrics` (NE m, success, SPL, collisions,
            TCR/CR/SR with the manifest baseline). NE is NaN when nothing reports ground truth
            (robot).
        humans: number of people in the episode (CR counts human-influenced episodes).
        note: e.g. "interrupted", "aborted (e-stop or safety stop)".
        refused: ros backend: actions motion_node refused to start (a person or wall too close);
            the open-loop sequence then continues from where the robot stands. Always 0 in batch.
        actions: ros backend: actions sent (None in batch).
    """

    episode_id: str
    metrics: Any
    humans: int
    note: str = ""
    refused: int = 0
    actions: int | None = None


def aggregate(results: Sequence[ReplayedEpisode], human_influenced: int | None = None) -> Any:
    """Aggregate with :func:`havln_robot.sim.metrics.aggregate` (SR, NE, TCR, CR, Score, ...).

    Args:
        results: per-episode results (non-empty).
        human_influenced: CR denominator (official 682 / 1,593 for complete challenge splits);
            default = replayed episodes with at least one person.
    """
    from havln_robot.sim.metrics import aggregate as sim_aggregate

    return sim_aggregate([r.metrics for r in results], human_influenced, with_humans=[r.humans > 0 for r in results])


# --- inputs ----------------------------------------------------------------------------------------


def select_episodes(sf: SplitFile, spec: str | None) -> list[str]:
    """Episode ids to replay: all (None), the first N (``"100"``), or a comma list (``"1,5,9"``).

    Raises:
        ReplayError: an id is not in the file, N is not positive, or the selection is empty (``""``).
    """
    ids = list(sf.episodes)
    if spec is None:
        return ids
    if spec.isdigit() and "," not in spec and spec not in sf.episodes:
        n = int(spec)
        if n <= 0:
            raise ReplayError("--episodes N must be positive")
        if n > len(ids):
            raise ReplayError(
                f"--episodes {spec}: not an episode id of {sf.member}, and more than its {len(ids)} episodes as a count; "
                f"give an id from the file, or a count <= {len(ids)}"
            )
        return ids[:n]
    want = [s.strip() for s in spec.split(",") if s.strip()]
    if not want:  # '' or ',' replayed every episode: an empty selection is a mistake, not "all"
        raise ReplayError(f"--episodes {spec!r}: an empty selection; give ids 'a,b,c' or a count N, or leave --episodes out to replay all")
    missing = [s for s in want if s not in sf.episodes]
    if missing:
        raise ReplayError(f"--episodes: {', '.join(missing[:5])} not in {sf.member} (it has {plural(len(ids), 'episode')})")
    return want


def default_episodes_file(split: str) -> Path:
    """``$DATA/ha_r2r_de/HA_<split>.json`` (discrete, keyed by path_id).

    Raises:
        UnsafePathError: ``split`` (read from a submission) is not one plain file-name component.
    """
    from havln_robot.paths import safe_child

    return safe_child(data_dir() / "ha_r2r_de", f"HA_{split}.json", "split")


def load_replay_episodes(path: Path, ids: Sequence[str]) -> dict[str, Any]:
    """Episodes of ``path`` (via :func:`havln_robot.episodes.load_episodes`) for the given ids.

    Raises:
        ReplayError: the file is unreadable or ids are not in it (message explains the id spaces).
    """
    from havln_robot.episodes import EpisodeError, load_episodes

    try:
        eps = {e.episode_id: e for e in load_episodes(path, flag="--episodes-file")}
    except EpisodeError as exc:
        raise ReplayError(str(exc)) from None
    missing = [i for i in ids if i not in eps]
    if missing:
        discrete = path.suffix == ".json" and not path.name.endswith(".json.gz")
        why = (
            f"{path.name} is a discrete file keyed by path_id (e.g. {next(iter(eps))}); challenge ids 1..778 / 1..1839 index the "
            "continuous HA-R2R split -- pass --episodes-file with the continuous <split>.json.gz"
            if discrete
            else f"{path.name} has ids like {next(iter(eps))!r}"
        )
        raise ReplayError(f"{len(missing)} episode id(s) not in {path} (first: {', '.join(missing[:5])}): {why}")
    return {i: eps[i] for i in ids}


def manifest_baselines(split: str, ids: Sequence[str], path: str | None) -> tuple[dict[str, int], int | None]:
    """Baseline collisions per id from the challenge manifest, and the CR denominator.

    Used only when every id is in the manifest *and* the episode file is a continuous one (challenge
    ids); otherwise baselines are 0 and CR is normalised by the human-influenced episodes replayed.
    """
    from havln_robot.challenge.manifest import HUMAN_INFLUENCED, ManifestError, default_manifest_path, load_manifest

    try:
        m = load_manifest(path or default_manifest_path(split), split)
    except ManifestError as exc:
        if path:  # asked for by name: say why it is not used
            raise ReplayError(f"--manifest {path}: {exc}") from None
        return {}, None
    if not all(i in m.baseline for i in ids):
        return {}, None
    full = m.official and len(ids) == len(m.ids)
    return {i: m.baseline[i] for i in ids}, (HUMAN_INFLUENCED.get(split) if full else None)


# --- a reference-following action writer (sample files, tests) -----------------------------------


def follow_reference(episode: Any, max_actions: int = MAX_ACTIONS) -> list[str]:
    """Actions that follow an episode's reference path in straight segments, then STOP.

    Pure geometry (no collision check): from ``start_position``/``start_yaw``, for each reference
    waypoint turn in 15 deg steps towards it until within half a turn step, then MOVE_FORWARD in
    0.25 m steps while that brings the body closer (horizontal distance). Ends with STOP; cut to
    the 500-action budget.

    Args:
        episode: a :class:`havln_robot.episodes.Episode` (uses start_position, start_yaw,
            reference_path).
        max_actions: budget including the final STOP.

    Returns:
        A legal format-v1 sequence.
    """
    x, y = episode.start_position[0], episode.start_position[1]
    yaw = episode.start_yaw
    out: list[str] = []
    for wx, wy, *_ in list(episode.reference_path)[1:]:
        while len(out) < max_actions - 1:
            d = math.hypot(wx - x, wy - y)
            if d < FORWARD_STEP_M / 2:
                break
            err = math.atan2(wy - y, wx - x) - yaw
            err = math.atan2(math.sin(err), math.cos(err))
            if abs(err) > TURN_ANGLE_RAD / 2:
                step = TURN_ANGLE_RAD if err > 0 else -TURN_ANGLE_RAD
                out.append(TURN_LEFT if err > 0 else TURN_RIGHT)
                yaw += step
                continue
            nx, ny = x + FORWARD_STEP_M * math.cos(yaw), y + FORWARD_STEP_M * math.sin(yaw)
            if math.hypot(wx - nx, wy - ny) >= d:
                break
            out.append(MOVE_FORWARD)
            x, y = nx, ny
    return out[: max_actions - 1] + [STOP]


# --- batch backend ---------------------------------------------------------------------------------


def replay_batch(
    episodes: dict[str, Any],
    actions: dict[str, list[str]],
    baselines: dict[str, int],
    *,
    seed: int = 0,
    connectivity_dir: str | None = None,
    progress: bool = True,
    on_result: Callable[[ReplayedEpisode], None] | None = None,
    scenes_dir: str | None = None,
    play: Callable[[Any, list[str]], Any] | None = None,
) -> list[ReplayedEpisode]:
    """Replay each episode's actions in the batch world, through agent_node's episode runner.

    Args:
        episodes: id → Episode.
        actions: id → action literals (a legal sequence).
        baselines: id → baseline human collisions (missing = 0).
        seed: crowd / world seed.
        connectivity_dir: Matterport3D connectivity folder (default ``$DATA/connectivity``).
        progress: show a tqdm progress bar on stderr.
        scenes_dir: folder of scan meshes ``<scan>/<scan>.glb`` (``--scenes``): collide and score on
            them (:mod:`havln_robot.sim.mesh_scene`); None = procedural scenes.
        on_result: called after each episode.
        play: plays one episode's actions in its world: :func:`havln_robot.agent.sim_io.replay_actions`
            (agent_node's :class:`~havln_robot.agent.core.EpisodeRunner` with a policy that plays
            the file: blocked waits and the consecutive-blocked limit as in ``eval`` and live;
            ``havln-robot replay`` passes it; this package does not import the agent layer).

    Raises:
        ReplayError: no ``play``, the batch simulator is not part of this build, or a scene cannot be loaded.
    """
    if play is None:
        raise ReplayError("--backend batch: the episode runner is not part of this entry point; run 'havln-robot replay'")
    try:
        from havln_robot.sim.humans import Crowd
        from havln_robot.sim.mesh_scene import load_scene
        from havln_robot.sim.scene import SceneError
        from havln_robot.sim.world import World
    except ImportError as exc:
        raise ReplayError(f"the batch simulator is not built in this checkout ({exc})") from None
    from tqdm import tqdm

    results: list[ReplayedEpisode] = []
    bar = tqdm(list(episodes), desc="replay", unit="ep", disable=not progress, file=sys.stderr, dynamic_ncols=True)
    for eid in bar:
        ep = episodes[eid]
        try:
            scene = load_scene(ep.scan, connectivity_dir, scenes_dir)
        except SceneError as exc:
            raise ReplayError(str(exc)) from None
        crowd = Crowd.from_episode(ep, scene, seed)
        world = World(scene, ep, crowd, seed=seed, baseline=baselines.get(eid, 0))
        play(world, list(actions[eid]))
        r = ReplayedEpisode(eid, world.metrics(), len(ep.humans))
        results.append(r)
        if on_result:
            on_result(r)
        if progress:
            agg = aggregate(results)
            bar.set_postfix(SR=f"{agg.sr:.2f}", NE=f"{agg.ne:.2f}", TCR=f"{agg.tcr:.2f}")
    bar.close()
    return results


# --- CLI -------------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return "  n/a" if not math.isfinite(x) else f"{x:5.2f}"


def print_results(results: Sequence[ReplayedEpisode], agg: Any, per_episode: bool = True, out: Any = None) -> None:
    """Per-episode table (NE walkable, NE_eu straight line, success, collisions, TCR, CR, SR) then the
    aggregate line ``SR .. NE .. TCR .. CR .. Score .. NE_euclid ..`` (NE: walkable distance, the scorer's)."""
    out = out or sys.stdout
    if per_episode:
        print(f"{'episode':>10} {'steps':>5} {'NE':>6} {'NE_eu':>6} {'succ':>4} {'coll':>4} {'TCR':>4} {'CR':>3} {'SR':>3}  note", file=out)
        for r in results:
            m = r.metrics
            eu = getattr(m, "ne_euclid", None)
            note = ", ".join(x for x in ("goal unreachable" if getattr(m, "unreachable", False) else "", r.note) if x)
            print(
                f"{terminal_safe(r.episode_id):>10} {m.steps:5d} {_fmt(m.ne):>6} {_fmt(math.nan if eu is None else eu):>6} {int(m.success):4d} "
                f"{m.collisions_human:4d} {m.tcr:4d} {m.cr:3d} {m.sr:3d}  "
                f"{terminal_safe('; '.join(x for x in (f'{r.refused} refused' if r.refused else '', note) if x))}",
                file=out,
            )
    sent = [r for r in results if r.actions is not None]
    if sent:  # ros backend: what motion_node would not do (the batch backend never refuses)
        n_sent, n_ref = sum(r.actions or 0 for r in sent), sum(r.refused for r in sent)
        print(
            f"motion_node refused {n_ref} of {plural(n_sent, 'action')} ({sum(r.refused > 0 for r in sent)} of {plural(len(sent), 'episode')}); "
            "a refused action is not executed and the file's next action starts from the unexpected pose",
            file=out,
        )
    eu = getattr(agg, "ne_euclid", None)
    print(
        f"{plural(agg.n, 'episode')}: SR {agg.sr:.3f}  NE {_fmt(agg.ne).strip()} m  TCR {agg.tcr:.3f}  CR {agg.cr:.3f}  "
        f"(success {agg.success_rate:.3f}, SPL {agg.spl:.3f}, CR over {agg.cr_denominator} human-influenced)  Score {agg.score:.3f}  "
        f"NE_euclid {_fmt(math.nan if eu is None else eu).strip()} m (NE is walkable, NE_euclid straight line)",
        file=out,
    )


#: The ROS backend's signature (:func:`havln_robot.ros.replay.replay_ros`), injected by the ROS layer.
RosBackend = Callable[..., list[ReplayedEpisode]]


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``havln-robot replay``."""
    from havln_robot.sim.params import SIM_NODE_PARAMS

    ap = argparse.ArgumentParser(
        prog="havln-robot replay", description="Replay a format-v1 action file in the batch simulator or over ROS."
    )
    ap.add_argument("file", type=path_arg, help="format-v1 prediction file (val_seen.json ...)")
    ap.add_argument(
        "--episodes", type=nonempty("episode ids a,b,c or a count N"), help="ids 'a,b,c' or a count N (first N of the file); default all"
    )
    ap.add_argument(
        "--backend",
        choices=["batch", "ros"],
        default="batch",
        help="batch: agent_node's episode runner over World.step (motion_node's executor in-process), no ROS (default); ros: through the live motion_node (docs/challenge.md); both refuse moves near people and walls",
    )
    ap.add_argument("--target", choices=["embedded", "external", "robot"], default="embedded", help="ros backend: where motion_node runs")
    ap.add_argument("--episodes-file", type=path_arg, help="HA-R2R episodes (default $DATA/ha_r2r_de/HA_<split>.json, keyed by path_id)")
    ap.add_argument("--connectivity", type=path_arg, help="Matterport3D connectivity folder (default $DATA/connectivity)")
    ap.add_argument(
        "--scenes",
        type=path_arg,
        help="folder of your scan meshes <scan>/<scan>.glb: batch and ros embedded replay collide and score on them (default: procedural)",
    )
    ap.add_argument("--manifest", type=path_arg, help="challenge manifest for TCR baselines (default: official collision_num_<split>.json)")
    ap.add_argument(
        "--seed", type=SIM_NODE_PARAMS.arg_type("seed"), default=0, help="seed of the people's motion and the noise draws (default 0)"
    )
    ap.add_argument(
        "--action-timeout", type=number_in(0, 3600, unit="s", above=True), default=30.0, help="ros: seconds to wait for each action_result"
    )
    ap.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE", help="ros embedded: parameter override")
    ap.add_argument("--json", type=path_arg, metavar="OUT", help="also write per-episode results and the aggregate as JSON")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    ap.add_argument("--quiet", action="store_true", help="no per-episode table and no progress bar")
    ap.add_argument("--record", action="store_true", help="ros embedded: also run trial_logger_node (trials go to the trial store)")
    ap.add_argument("--yes", action="store_true", help="robot target: skip the typed confirmation (for scripted runs)")
    return ap


def _check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse contradictory options (argparse's exit 2), check --json before the replay; --scenes goes to sim_node too."""
    if args.target != "embedded" and args.backend != "ros":
        ap.error(f"--target {args.target} needs --backend ros (the batch backend always runs the embedded simulator)")
    if args.scenes:
        if not Path(args.scenes).is_dir():
            ap.error(f"--scenes {args.scenes}: not a folder; give the folder holding <scan>/<scan>.glb")
        args.set.append(f"sim_node.scenes_dir={Path(args.scenes).resolve()}")  # ros embedded: sim_node renders the mesh
    if args.json:
        from havln_robot.paths import check_out_file

        check_out_file(args.json, "--json", inputs=(args.file,), overwrite=args.overwrite)


def _confirmed(n_episodes: int, n_actions: int) -> bool:
    """The typed 'yes' before driving the real robot."""
    print(f"About to drive the REAL robot through {plural(n_episodes, 'episode')} ({plural(n_actions, 'action')}).", file=sys.stderr)
    print("Clear the area, keep the e-stop in hand. Type 'yes' to start: ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip() == "yes"


def _run_ros(ros_backend: RosBackend, ids: list[str], actions: dict, baselines: dict, ep_file: Path, args: argparse.Namespace) -> list:
    """The ROS backend's replay; Ctrl-C stops it between actions."""
    stop = threading.Event()
    old = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        return ros_backend(
            ids,
            actions,
            baselines,
            target=args.target,
            episodes_file=ep_file,
            action_timeout_s=args.action_timeout,
            sets=args.set,
            progress=not args.quiet,
            stop_event=stop,
            record=args.record,
        )
    finally:
        signal.signal(signal.SIGINT, old)


def write_results_json(path: str, results: list[ReplayedEpisode], agg: Any) -> None:
    """The aggregate and each episode (its metrics, actions, refusals) as JSON; the old file or the new one, never half."""

    episodes = [
        {"episode_id": r.episode_id, "humans": r.humans, "note": r.note, "refused": r.refused, "actions": r.actions, **r.metrics.as_dict()}
        for r in results
    ]
    write_json(
        path, {"aggregate": agg.as_dict(), "episodes": episodes}, nonfinite="null", newline=False, indent=1, default=str
    )  # NE unknown on the robot -> null


def main(
    argv: list[str] | None = None, ros_backend: RosBackend | None = None, batch_play: Callable[[Any, list[str]], Any] | None = None
) -> int:
    """``havln-robot replay FILE.json [--episodes ids|N] [--backend batch|ros] [--episodes-file F]``.

    Args:
        argv: command-line arguments.
        ros_backend: the ROS backend (``havln-robot replay`` passes
            :func:`havln_robot.ros.replay.replay_ros`; this package imports no rclpy). Without it
            ``--backend ros`` is refused with exit code 2.
        batch_play: the batch backend's episode player (``havln-robot replay`` passes
            :func:`havln_robot.agent.sim_io.replay_actions`); without it ``--backend batch`` is refused likewise.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    _check_args(ap, args)
    try:
        sf = read_split_file(args.file)
        ids = select_episodes(sf, args.episodes)
        actions = {i: sf.episodes[i] for i in ids}
        ep_file = Path(args.episodes_file) if args.episodes_file else default_episodes_file(sf.split)
        is_continuous = ep_file.name.endswith(".gz")
        baselines, cr_denom = manifest_baselines(sf.split, ids, args.manifest) if (is_continuous or args.manifest) else ({}, None)
        if args.backend == "batch":
            results = replay_batch(
                load_replay_episodes(ep_file, ids),
                actions,
                baselines,
                seed=args.seed,
                connectivity_dir=args.connectivity,
                progress=not args.quiet,
                scenes_dir=args.scenes,
                play=batch_play,
            )
        else:
            if args.target == "embedded":
                load_replay_episodes(ep_file, ids)  # refuses unknown ids before the graph starts
            if args.target == "robot" and not args.yes and not _confirmed(len(ids), sum(len(a) for a in actions.values())):
                print("havln-robot replay: not confirmed; nothing was sent", file=sys.stderr)
                return 1
            if ros_backend is None:
                raise ReplayError("--backend ros: the ROS backend is not part of this entry point; run 'havln-robot replay'")
            results = _run_ros(ros_backend, ids, actions, baselines, ep_file, args)
    except (ReplayError, FormatError) as exc:
        print(f"havln-robot replay: {terminal_safe(exc)}", file=sys.stderr)
        return 2
    if not results:
        print("havln-robot replay: no episode was replayed", file=sys.stderr)
        return 1
    agg = aggregate(results, cr_denom)
    print_results(results, agg, per_episode=not args.quiet)
    if args.json:
        write_results_json(args.json, results, agg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
