"""HA-VLN challenge metrics, per episode and aggregated (pure Python).

Definitions (HA-VLN challenge, organisers' public docs; copied in ``../shared/data/ha-vln/README.md``):

* NE -- **walkable** (geodesic) distance (m) from the final position to the goal, as HA-VLN-CE's
  scorer measures it (Habitat / VLN-CE ``distance_to_goal`` over the navmesh); computed by
  :mod:`havln_robot.sim.geodesic` over the scene's navigation graph. ``ne_euclid`` keeps the
  straight-line 3-D distance (map frame) as a separate, labelled figure. A goal no walkable path
  reaches gives NE = straight-line distance and ``unreachable`` = True (finite, never inf/NaN);
* success -- STOP was called, the goal is reachable and NE < 3.0 m (``goal_radius``);
* SPL -- ``success * L_ref / max(L_path, L_ref)`` (Anderson et al. 2018), ``L_ref`` = episode
  geodesic (reference-path) length, ``L_path`` = executed path length;
* TCR_i = max(0, collisions_i - baseline_i), collisions_i = **human** collisions of the episode,
  baseline_i from ``challenge/collision_num_<split>.json`` when the episode id is a challenge
  episode id (otherwise 0); CR_i = min(TCR_i, 1); SR_i = success_i * [TCR_i == 0];
* aggregate: SR, NE, TCR = means over episodes; CR = sum CR_i / (number of human-influenced
  episodes: 682 on val_seen, 1,593 on val_unseen for the challenge splits; by default here the
  number of episodes with at least one person, or all episodes if none has people);
* Score = 100 * Navigation * (0.7 + 0.3 * Social), Navigation = 0.8 * SR + 0.2 * 3 / (3 + NE),
  Social = 0.75 * (1 - CR) + 0.25 / (1 + TCR).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from havln_robot.episodes import SUCCESS_RADIUS_M, ha_vln_sr, human_tcr, is_success

#: Challenge human-influenced episode counts (CR denominators), by split (data README).
HUMAN_INFLUENCED: dict[str, int] = {"val_seen": 682, "val_unseen": 1593}


@dataclass(frozen=True)
class EpisodeMetrics:
    """Ground-truth metrics of one episode.

    Attributes:
        ne: navigation error = walkable distance to the goal, m. success: STOP called, goal
        reachable and ne < goal radius. spl: in [0, 1].
        path_length: executed path length, m. collisions_human, collisions_static: counts.
        tcr, cr, sr: challenge per-episode values (see module docstring). steps: actions taken.
        stopped: STOP was called. baseline: collision baseline used for TCR.
        ne_euclid: straight-line 3-D distance to the goal, m (None where unknown, e.g. a ROS
        ground truth without it). unreachable: no walkable path joins the final position to the
        goal (then ne = straight-line distance and success is False).
    """

    ne: float
    success: bool
    spl: float
    path_length: float
    collisions_human: int
    collisions_static: int
    tcr: int
    cr: int
    sr: int
    steps: int
    stopped: bool = False
    baseline: int = 0
    ne_euclid: float | None = None
    unreachable: bool = False

    def as_dict(self) -> dict:
        """Plain dict (JSON-ready)."""
        return asdict(self)


def episode_metrics(
    ne: float,
    stopped: bool,
    path_length: float,
    geodesic: float,
    collisions_human: int,
    collisions_static: int = 0,
    steps: int = 0,
    baseline: int = 0,
    goal_radius: float = SUCCESS_RADIUS_M,
    ne_euclid: float | None = None,
    unreachable: bool = False,
) -> EpisodeMetrics:
    """Compute :class:`EpisodeMetrics` from raw episode figures (definitions in the module docstring).

    Args:
        ne: final walkable distance to the goal (m, >= 0; :class:`havln_robot.sim.geodesic.Walkable` ``ne``).
        stopped: STOP was called.
        path_length: executed path length (m).
        geodesic: reference path length (m, > 0 for SPL).
        collisions_human: human collision count (the challenge's collisions_i).
        collisions_static: wall collision count (reported only).
        steps: actions taken.
        baseline: challenge baseline collisions for this episode (0 if not a challenge episode).
        goal_radius: success radius (m).
        ne_euclid: straight-line distance to the goal (m), reported only.
        unreachable: the goal cannot be walked to from the final position: never a success.
    """
    success = is_success(stopped, ne, goal_radius, unreachable=unreachable)
    spl = float(success) * geodesic / max(path_length, geodesic) if geodesic > 0 else float(success)
    tcr = human_tcr(collisions_human, baseline)
    cr = min(tcr, 1)
    sr = ha_vln_sr(success, collisions_human, baseline)
    return EpisodeMetrics(
        ne=float(ne),
        success=success,
        spl=float(spl),
        path_length=float(path_length),
        collisions_human=int(collisions_human),
        collisions_static=int(collisions_static),
        tcr=tcr,
        cr=cr,
        sr=sr,
        steps=int(steps),
        stopped=bool(stopped),
        baseline=int(baseline),
        ne_euclid=None if ne_euclid is None else float(ne_euclid),
        unreachable=bool(unreachable),
    )


@dataclass(frozen=True)
class Aggregate:
    """Aggregated metrics over episodes.

    Attributes:
        n: episodes. success_rate: mean success (STOP within 3 m, collisions ignored).
        sr: challenge SR = mean SR_i (success without extra human collisions). ne: mean NE (m).
        ne_median: median NE (m). spl: mean SPL. tcr: mean TCR_i. cr: sum CR_i / cr_denominator.
        collisions_human, collisions_static: totals. path_length: mean (m). steps: mean actions.
        navigation, social, score: challenge composite values.
        ne_euclid: mean straight-line distance to the goal (m; over episodes that have it, None if
        none has). unreachable: episodes whose final position cannot walk to the goal.
    """

    n: int
    success_rate: float
    sr: float
    ne: float
    ne_median: float
    spl: float
    tcr: float
    cr: float
    collisions_human: int
    collisions_static: int
    path_length: float
    steps: float
    navigation: float
    social: float
    score: float
    cr_denominator: int
    ne_euclid: float | None = None
    unreachable: int = 0

    def as_dict(self) -> dict:
        """Plain dict (JSON-ready)."""
        return asdict(self)


def challenge_score(sr: float, ne: float, cr: float, tcr: float) -> tuple[float, float, float]:
    """(navigation, social, score) from aggregate SR, NE (m), CR, TCR (challenge formula)."""
    navigation = 0.8 * sr + 0.2 * SUCCESS_RADIUS_M / (SUCCESS_RADIUS_M + ne)
    social = 0.75 * (1.0 - cr) + 0.25 / (1.0 + tcr)
    return navigation, social, 100.0 * navigation * (0.7 + 0.3 * social)


def aggregate(results: Sequence[EpisodeMetrics], cr_denominator: int | None = None, with_humans: Iterable[bool] | None = None) -> Aggregate:
    """Aggregate per-episode metrics.

    Args:
        results: per-episode metrics (non-empty).
        cr_denominator: CR denominator (e.g. :data:`HUMAN_INFLUENCED` of a challenge split). Default:
            number of episodes flagged in ``with_humans``, or ``len(results)`` when not given / zero.
        with_humans: per episode, whether it has people.

    Raises:
        ValueError: ``results`` is empty.
    """
    n = len(results)
    if n == 0:
        raise ValueError("no episode results to aggregate")
    if cr_denominator is None:
        flags = list(with_humans) if with_humans is not None else []
        cr_denominator = sum(bool(f) for f in flags) or n
    nes = sorted(r.ne for r in results)
    med = nes[n // 2] if n % 2 else 0.5 * (nes[n // 2 - 1] + nes[n // 2])
    sr = sum(r.sr for r in results) / n
    ne = sum(r.ne for r in results) / n
    tcr = sum(r.tcr for r in results) / n
    cr = sum(r.cr for r in results) / cr_denominator
    nav, soc, score = challenge_score(sr, ne, cr, tcr)
    eu = [r.ne_euclid for r in results if getattr(r, "ne_euclid", None) is not None]
    return Aggregate(
        n=n,
        success_rate=sum(r.success for r in results) / n,
        sr=sr,
        ne=ne,
        ne_median=float(med),
        spl=sum(r.spl for r in results) / n,
        tcr=tcr,
        cr=cr,
        collisions_human=sum(r.collisions_human for r in results),
        collisions_static=sum(r.collisions_static for r in results),
        path_length=sum(r.path_length for r in results) / n,
        steps=sum(r.steps for r in results) / n,
        navigation=nav,
        social=soc,
        score=score,
        cr_denominator=int(cr_denominator),
        ne_euclid=sum(eu) / len(eu) if eu else None,
        unreachable=sum(bool(getattr(r, "unreachable", False)) for r in results),
    )


def load_collision_baseline(path: str | os.PathLike[str]) -> dict[str, int]:
    """Read ``collision_num_<split>.json`` (episode id string → baseline human collisions).

    Raises:
        ValueError: unreadable file or a non-integer value (names the key).
    """
    from havln_robot.paths import input_file_problem

    p = Path(path)
    why = input_file_problem(p)
    if why is not None:
        raise ValueError(f"collision baseline {p}: {why}; give the collision_num_<split>.json file")
    try:
        from havln_robot.jsonio import load_json_file

        data = load_json_file(p)
    except (OSError, ValueError) as exc:
        raise ValueError(f"collision baseline {p}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"collision baseline {p}: top level must be an object of episode id -> int")
    out = {}
    for k, v in data.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or not math.isfinite(v) or int(v) != v:
            raise ValueError(f"collision baseline {p}: value of {k!r} must be a non-negative integer, got {v!r}")
        out[str(k)] = int(v)
    return out
