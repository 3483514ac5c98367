"""HA-R2R / R2R episode readers (pure Python): discrete ``*.json`` and continuous ``*.json.gz``.

Every episode is returned in the **map frame** = Matterport3D world frame (x, y horizontal, z up,
metres), with positions on the floor (ground points) and yaw in REP 103 convention (0 = +x,
counter-clockwise positive).

Discrete files (R2R / HA-R2R, e.g. ``ha_r2r_de/HA_val_seen.json``): a list of paths with ``scan``,
``path_id``, ``path`` (viewpoint ids), ``heading`` (rad), ``instructions`` and, for HA-R2R, ``human``
(``human_viewpoint``, ``human_rel_pos``, ``human_description`` = ``"region:text"``) and ``distance``.
Viewpoint positions come from ``connectivity/<scan>_connectivity.json``: translation
``pose[3], pose[7], pose[11]`` minus the camera ``height`` in z (ground under the camera).

**Heading convention.** Matterport3DSimulator (``README.md``, "Simulator API"): "Heading is defined
from the y-axis with the z-axis up (turning right is positive)" -- i.e. 0 = +y of the world frame,
clockwise positive seen from above. Hence the REP 103 yaw is ``yaw = pi/2 - heading``
(:func:`mp3d_heading_to_yaw`). Checked on HA_val_seen: of the 8 candidate conventions (+/- heading
plus a multiple of 90 deg), this one best aligns the start heading with the first path edge (R2R
start headings are only loosely aligned with the path: 34 % within 45 deg, against 25 % by chance).

Continuous files (VLN-CE / HA-VLN-CE ``{split}.json.gz``): ``{"episodes": [...]}`` with
``episode_id``, ``trajectory_id``, ``scene_id`` (``"mp3d/<scan>/<scan>.glb"``), ``start_position``,
``start_rotation`` (quaternion [x, y, z, w]), ``goals`` [{``position``, ``radius``}],
``reference_path`` and ``instruction`` {``instruction_text``, ``instruction_tokens``}. These use the
habitat **y-up** frame: habitat (x, y, z) = (mp3d x, mp3d z, -mp3d y), so
``map = (hx, -hz, hy)`` (:func:`habitat_to_map`). The habitat agent looks along its local -z axis;
the start yaw is the heading of that axis after ``start_rotation``, projected into the map frame
(:func:`habitat_quat_to_yaw`; a rotation ``theta`` about habitat +y gives ``yaw = theta + pi/2``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

#: Success radius (m): HA-VLN challenge / VLN-CE ``SUCCESS_DISTANCE`` (see ../shared/data/ha-vln/README.md).
SUCCESS_RADIUS_M: float = 3.0


def is_success(stopped: bool, ne_m: float, radius_m: float = SUCCESS_RADIUS_M, unreachable: bool = False) -> bool:
    """THE success rule (HA-VLN / VLN-CE): the agent called STOP and ended within ``radius_m`` of the goal.

    Args:
        stopped: the episode ended with STOP (not the action budget, an abort or a block).
        ne_m: navigation error, m: the walkable (geodesic) distance to the goal where the simulator
            knows it, else the Euclidean distance.
        radius_m: success radius, m (:data:`SUCCESS_RADIUS_M`).
        unreachable: the simulator cannot walk from the end pose to the goal: never a success.
    """
    return bool(stopped and not unreachable and ne_m < radius_m)


def human_tcr(collisions_human: int, baseline: int = 0) -> int:
    """HA-VLN TCR of one episode: human collisions beyond the challenge baseline, ``max(0, c - b)``.

    Args:
        collisions_human: collisions with people (static/wall collisions do not count).
        baseline: the challenge's baseline count for the episode (0 outside the challenge, e.g. a robot trial).
    """
    return max(0, int(collisions_human) - int(baseline))


def ha_vln_sr(success: bool, collisions_human: int, baseline: int = 0) -> int:
    """THE HA-VLN SR of one episode (1 or 0): a success (:func:`is_success`: STOP within the success
    radius) with no human collision beyond the baseline, ``SR_i = success_i * [TCR_i == 0]``.

    Static (wall) collisions do not count, as in HA-VLN. Used by the simulator's metrics
    (:mod:`havln_robot.sim.metrics`) and the real-robot trial report (:mod:`havln_robot.trials.metrics`),
    so one run never gets two SRs.
    """
    return int(bool(success) and human_tcr(collisions_human, baseline) == 0)


Vec3 = tuple[float, float, float]


class EpisodeError(ValueError):
    """An episode file cannot be used; the one-line message names the file, entry, field and fix."""


@dataclass(frozen=True)
class HumanSpec:
    """One person of an HA-R2R episode.

    Attributes:
        human_id: index of the person in the episode (0-based).
        viewpoint: Matterport viewpoint id the person is placed at (``human_viewpoint``), or None.
        position: ground point of that viewpoint (map frame, m).
        description: activity text (after the ``"region:"`` prefix of ``human_description``).
        region: HAPS region name (before the ``":"``), e.g. ``"bedroom"``.
        rel_pos: HA-R2R ``human_rel_pos`` ("Beginning", "Obstacle", "Around", "End") or "".
    """

    human_id: int
    viewpoint: str | None
    position: Vec3
    description: str
    region: str
    rel_pos: str = ""


@dataclass(frozen=True)
class Episode:
    """One navigation episode in the map frame (see the module docstring for frames and sources).

    Attributes:
        episode_id: string id (discrete: ``str(path_id)``, or ``"<path_id>_<k>"`` when all instructions
            are expanded; continuous: the file's ``episode_id``).
        scan: Matterport3D scan id.
        instruction: the instruction used. instructions: all instructions of the path.
        start_position, goal_position: ground points (m). start_yaw: rad, REP 103.
        goal_radius: success radius (m, 3.0). reference_path: ground points along the path (m).
        path_ids: viewpoint ids (empty for continuous episodes). humans: people of the episode.
        geodesic_distance: length of the reference path (m; the file's ``distance`` /
            ``info.geodesic_distance`` when given). source: file the episode came from.
    """

    episode_id: str
    scan: str
    instruction: str
    instructions: tuple[str, ...]
    start_position: Vec3
    start_yaw: float
    goal_position: Vec3
    goal_radius: float
    reference_path: tuple[Vec3, ...]
    path_ids: tuple[str, ...]
    humans: tuple[HumanSpec, ...]
    geodesic_distance: float
    source: str


def mp3d_heading_to_yaw(heading: float) -> float:
    """REP 103 yaw (rad, in [-pi, pi)) from a Matterport3D heading (rad, from +y, clockwise positive)."""
    from havln_robot.geometry import wrap_angle

    return wrap_angle(math.pi / 2.0 - heading)


def yaw_to_mp3d_heading(yaw: float) -> float:
    """Inverse of :func:`mp3d_heading_to_yaw` (rad, in [0, 2 pi))."""
    return (math.pi / 2.0 - yaw) % (2.0 * math.pi)


def habitat_to_map(p) -> Vec3:
    """Map-frame point (m) from a habitat y-up point (x, y, z): ``(x, -z, y)``."""
    return (float(p[0]), -float(p[2]), float(p[1]))


def habitat_quat_to_yaw(q) -> float:
    """REP 103 map yaw (rad) of a habitat agent rotation quaternion ``q = [x, y, z, w]``.

    The agent's forward axis is habitat -z; it is rotated by ``q`` and its map-frame heading returned.
    """
    x, y, z, w = (float(v) for v in q)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n < 1e-9:
        raise ValueError("zero quaternion")
    x, y, z, w = x / n, y / n, z / n, w / n
    # R @ (0, 0, -1) = -(third column of the rotation matrix)
    fx = -(2.0 * (x * z + w * y))
    fz = -(1.0 - 2.0 * (x * x + y * y))
    mx, my = fx, -fz
    return math.atan2(my, mx)


# ---------------------------------------------------------------------------- connectivity
_GRAPH_MEMO: dict[str, dict[str, Vec3]] = {}
#: Per connectivity file: camera positions (m) and ``unobstructed`` neighbours (None: the file has no edges).
_EDGE_MEMO: dict[str, tuple[dict[str, Vec3], dict[str, frozenset[str]] | None]] = {}

#: A discrete path's recorded ``distance`` must match its summed edge length on the connectivity
#: graph within ``DISTANCE_TOL_M + DISTANCE_TOL_REL * length`` (HA val_seen agrees to 5 mm).
DISTANCE_TOL_M: float = 0.05
DISTANCE_TOL_REL: float = 0.01


def viewpoint_positions(scan: str, connectivity_dir: str | os.PathLike[str] | None = None) -> dict[str, Vec3]:
    """Ground points (map frame, m) of every viewpoint of ``scan``: pose translation minus ``height`` in z.

    Raises:
        EpisodeError: connectivity file missing or malformed (names the file and the fix).
    """
    if connectivity_dir is None:
        from havln_robot.paths import data_dir

        connectivity_dir = data_dir() / "connectivity"
    from havln_robot.paths import UnsafePathError, safe_component

    try:
        safe_component(scan, "scan")
    except UnsafePathError as exc:
        raise EpisodeError(f"{exc}; a scan id names <scan>_connectivity.json") from None
    path = Path(connectivity_dir) / f"{scan}_connectivity.json"
    key = str(path)
    if key in _GRAPH_MEMO:
        return _GRAPH_MEMO[key]
    if not path.is_file():
        from havln_robot.paths import input_file_problem, input_folder_problem

        folder = input_folder_problem(connectivity_dir)  # a file given as the folder: say so, not "not found"
        why = f"--connectivity {connectivity_dir}: {folder}" if folder else f"connectivity file {path}: {input_file_problem(path)}"
        raise EpisodeError(
            f"scan {scan!r}: {why}; pass --connectivity DIR (the HA-VLN 'connectivity' folder, holding <scan>_connectivity.json)"
        )
    try:
        from havln_robot.jsonio import JsonFileError, load_json_file

        try:
            data = load_json_file(path)
        except JsonFileError as exc:
            raise EpisodeError(f"connectivity file {exc}; re-download it") from None
        out = {}
        cams: dict[str, Vec3] = {}
        order: list[str] = []
        flags: list = []
        for v in data:
            p = v["pose"]
            cams[str(v["image_id"])] = (float(p[3]), float(p[7]), float(p[11]))
            order.append(str(v["image_id"]))
            flags.append(v.get("unobstructed"))
            xyz = (float(p[3]), float(p[7]), float(p[11]) - float(v["height"]))
            if not all(math.isfinite(c) for c in xyz):
                raise EpisodeError(
                    f"connectivity file {path}: viewpoint {v['image_id']!r} has a non-finite 'pose'/'height'; re-download it"
                )
            out[str(v["image_id"])] = xyz
    except EpisodeError:
        raise
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise EpisodeError(f"connectivity file {path} is malformed ({exc!r}); re-download it") from None
    adj: dict[str, frozenset[str]] | None = None
    if any(f is not None for f in flags):
        if not all(isinstance(f, list) and len(f) == len(order) for f in flags):
            raise EpisodeError(f"connectivity file {path}: every 'unobstructed' must be a list of {len(order)} booleans; re-download it")
        adj = {a: frozenset(order[j] for j, ok in enumerate(f) if ok is True) for a, f in zip(order, flags, strict=True)}
    _GRAPH_MEMO[key] = out
    _EDGE_MEMO[key] = (cams, adj)
    if len(_GRAPH_MEMO) > 32:
        _EDGE_MEMO.pop(next(iter(_GRAPH_MEMO)), None)
        _GRAPH_MEMO.pop(next(iter(_GRAPH_MEMO)))
    return out


def viewpoint_graph(
    scan: str, connectivity_dir: str | os.PathLike[str] | None = None
) -> tuple[dict[str, Vec3], dict[str, frozenset[str]] | None]:
    """Camera positions (m, map frame: ``pose[3], pose[7], pose[11]``) and the ``unobstructed``
    neighbours of every viewpoint of ``scan`` (None when the file records no edges).

    Raises:
        EpisodeError: as :func:`viewpoint_positions`.
    """
    viewpoint_positions(scan, connectivity_dir)
    if connectivity_dir is None:
        from havln_robot.paths import data_dir

        connectivity_dir = data_dir() / "connectivity"
    return _EDGE_MEMO[str(Path(connectivity_dir) / f"{scan}_connectivity.json")]


# ---------------------------------------------------------------------------- readers
def load_episodes(
    path: str | os.PathLike[str],
    connectivity_dir: str | os.PathLike[str] | None = None,
    limit: int | None = None,
    instruction_index: int | None = 0,
    flag: str = "--episodes",
) -> list[Episode]:
    """Read episodes from a discrete HA-R2R/R2R ``*.json`` or a continuous ``*.json.gz`` file.

    Args:
        path: episode file. Gzip and plain JSON are both accepted; a top-level list is read as
            discrete paths, a dict with ``"episodes"`` as continuous episodes.
        connectivity_dir: folder of ``<scan>_connectivity.json`` (discrete files only; default
            ``data_dir()/connectivity``).
        limit: keep only the first ``limit`` episodes (None: all).
        instruction_index: discrete files: which of each path's instructions to use (episode id
            ``str(path_id)``; an empty selected instruction -- 13 HA_val_seen paths have one, at
            index 0, 1 or 2 -- is replaced by the next non-empty one, which callers must report:
            :func:`empty_instruction_ids`), or None to expand every non-empty instruction (ids
            ``"<path_id>_<k>"``).
        flag: the caller's option that names the file, for the not-found message.

    Returns:
        Episodes in file order.

    Raises:
        EpisodeError: unreadable file, unknown layout, an entry missing/invalid field, a repeated
            episode id, a path off the navigation graph or a ``distance`` disagreeing with it (the
            message names the file, entry and field).
    """
    p = Path(path)
    from havln_robot.paths import input_file_problem

    why = input_file_problem(p)
    if why is not None:
        raise EpisodeError(f"episode file {p}: {why}; pass {flag} FILE (HA-R2R/R2R *.json or continuous *.json.gz)")
    try:
        from havln_robot.jsonio import JsonFileError, read_bytes_capped

        raw = read_bytes_capped(p)
        data = json.loads(raw)
    except JsonFileError as exc:
        raise EpisodeError(f"episode file {exc}") from None
    except (OSError, ValueError, EOFError) as exc:
        raise EpisodeError(f"episode file {p} is not readable (gzip) JSON: {exc}") from None
    if isinstance(data, list):
        eps = _discrete(p, data, connectivity_dir, limit, instruction_index)
    elif isinstance(data, dict) and "episodes" in data:
        eps = _continuous(p, data["episodes"], limit)
    else:
        raise EpisodeError(
            f"episode file {p}: top level must be a list of R2R paths or a dict with 'episodes' (VLN-CE), got {type(data).__name__}"
        )
    if not eps:
        raise EpisodeError(f"episode file {p} holds no episodes")
    return eps


def empty_instruction_ids(episodes: list[Episode], instruction_index: int | None) -> list[str]:
    """Ids of the discrete episodes whose instruction ``instruction_index`` is empty, so that
    :func:`load_episodes` used the next non-empty one instead (a caller warns with these ids)."""
    if instruction_index is None:
        return []
    return [
        e.episode_id
        for e in episodes
        if e.path_ids and instruction_index < len(e.instructions) and not e.instructions[instruction_index].strip()
    ]


def _finite(v, where: str, field: str) -> float:
    """``v`` as a float; a non-finite number (JSON ``NaN`` / ``Infinity``, or an overflowing literal
    such as ``1e999``) is refused with one line naming the episode and the field."""
    x = float(v)
    if not math.isfinite(x):
        raise EpisodeError(f"{where}: field {field!r} is {x!r}; give a finite number (JSON NaN/Infinity are not allowed)")
    return x


def _need(entry: dict, field: str, types, where: str, fix: str = ""):
    if not isinstance(entry, dict):
        raise EpisodeError(f"{where}: entry must be a JSON object, got {type(entry).__name__}")
    if field not in entry:
        raise EpisodeError(f"{where}: missing field {field!r}{'; ' + fix if fix else ''}")
    v = entry[field]
    if isinstance(v, bool) or not isinstance(v, types):
        raise EpisodeError(f"{where}: field {field!r} has type {type(v).__name__}{'; ' + fix if fix else ''}")
    return v


def _path_length(pts: list[Vec3]) -> float:
    return float(sum(math.dist(a, b) for a, b in zip(pts[:-1], pts[1:], strict=False)))


def _reference_length(e: dict, where: str, scan: str, path_ids: list[str], connectivity_dir) -> float:
    """SPL's reference length (m) of a discrete path: its summed edge length on the connectivity graph.

    R2R reference paths are shortest paths between start and goal viewpoints, so this is the geodesic
    start->goal distance HA-VLN / VLN-CE SPL divides by. Every consecutive pair must be an
    ``unobstructed`` edge, and a recorded ``distance`` must be a positive finite number agreeing with
    the graph (:data:`DISTANCE_TOL_M`, :data:`DISTANCE_TOL_REL`).

    Raises:
        EpisodeError: non-adjacent consecutive viewpoints, or a bad / disagreeing ``distance``.
    """
    cams, adj = viewpoint_graph(scan, connectivity_dir)
    if adj is not None:
        for k, (a, b) in enumerate(zip(path_ids[:-1], path_ids[1:], strict=True)):
            if b not in adj.get(a, ()):
                raise EpisodeError(
                    f"{where}: field 'path' steps {k} -> {k + 1} ({a!r} -> {b!r}) are not connected in scan {scan!r}'s "
                    "navigation graph; give a path along 'unobstructed' edges"
                )
    length = _path_length([cams[v] for v in path_ids])
    if length <= 0:
        raise EpisodeError(f"{where}: field 'path' has length 0 (start = goal); SPL needs a reference path of at least one edge")
    dist = e.get("distance")
    if dist is None:
        return length
    if isinstance(dist, bool) or not isinstance(dist, (int, float)):
        raise EpisodeError(f"{where}: field 'distance' has type {type(dist).__name__}; give the path length in m (or omit it)")
    d = _finite(dist, where, "distance")
    if d <= 0:
        raise EpisodeError(f"{where}: field 'distance' is {d!r}; give the positive path length in m (or omit it)")
    if abs(d - length) > DISTANCE_TOL_M + DISTANCE_TOL_REL * length:
        raise EpisodeError(
            f"{where}: field 'distance' {d:g} m disagrees with the path's length on the connectivity graph ({length:.3f} m); "
            "fix the distance (or omit it) or the path"
        )
    return d


def _unique_ids(p: Path, entries: list, key: str, noun: str) -> None:
    """Refuse a file whose entries repeat an id (``key``: R2R ``path_id`` / VLN-CE ``episode_id``),
    over the WHOLE file whatever ``--limit`` is: a file that repeats one is the wrong file, and
    results keyed by id would lose one of the two. Entries whose id is missing or mistyped are
    left to the entry's own check.

    Raises:
        EpisodeError: naming both entries.
    """
    seen: dict[str, int] = {}
    for i, e in enumerate(entries):
        eid = e.get(key) if isinstance(e, dict) else None
        if not isinstance(eid, (int, str)) or isinstance(eid, bool):
            continue
        if str(eid) in seen:
            raise EpisodeError(
                f"{p.name} {noun} {i}: {key} {eid!r} repeats {noun} {seen[str(eid)]}; episode ids must be unique -- keep one of the two"
            )
        seen[str(eid)] = i


def _discrete(p: Path, data: list, connectivity_dir, limit, instruction_index) -> list[Episode]:
    out: list[Episode] = []
    _unique_ids(p, data, "path_id", "entry")
    for i, e in enumerate(data):
        if limit is not None and len(out) >= limit:
            break
        where = f"{p.name} entry {i}"
        scan = _need(e, "scan", str, where, "give the Matterport3D scan id")
        pid = _need(e, "path_id", (int, str), where)
        where = f"{p.name} entry {i} (path_id {pid})"
        path_ids = _need(e, "path", list, where, "give the list of viewpoint ids")
        if len(path_ids) < 1 or not all(isinstance(v, str) for v in path_ids):
            raise EpisodeError(f"{where}: field 'path' must be a non-empty list of viewpoint id strings")
        heading = _finite(_need(e, "heading", (int, float), where, "give the start heading in rad"), where, "heading")
        instr = _need(e, "instructions", list, where, "give a list of instruction strings")
        if not instr or not all(isinstance(s, str) for s in instr) or not any(s.strip() for s in instr):
            raise EpisodeError(f"{where}: field 'instructions' must be a list of strings with at least one non-empty")
        pos = viewpoint_positions(scan, connectivity_dir)
        missing = [v for v in path_ids if v not in pos]
        if missing:
            raise EpisodeError(f"{where}: field 'path' names viewpoint {missing[0]!r} not in scan {scan!r}; check the connectivity folder")
        ref = [pos[v] for v in path_ids]
        geo = _reference_length(e, where, scan, path_ids, connectivity_dir)
        humans = []
        hs = e.get("human", [])
        if not isinstance(hs, list):
            raise EpisodeError(f"{where}: field 'human' must be a list")
        for k, h in enumerate(hs):
            hw = f"{where} human {k}"
            desc = _need(h, "human_description", str, hw, "give 'region:text'")
            vp = h.get("human_viewpoint")
            if vp is not None and (not isinstance(vp, str) or vp not in pos):
                raise EpisodeError(f"{hw}: field 'human_viewpoint' {vp!r} is not a viewpoint of scan {scan!r}")
            region, _, text = desc.partition(":")
            if not text:
                region, text = "", desc
            humans.append(HumanSpec(k, vp, pos[vp] if vp else ref[-1], text.strip(), region.strip(), str(h.get("human_rel_pos", "") or "")))
        yaw = mp3d_heading_to_yaw(float(heading))
        if instruction_index is None:
            idxs = [k for k, s in enumerate(instr) if s.strip()]
        else:
            if not 0 <= instruction_index < len(instr):
                raise EpisodeError(f"{where}: instruction_index {instruction_index} out of range (path has {len(instr)} instructions)")
            # 13 real HA_val_seen paths carry an empty instruction (at index 0, 1 or 2, so no single
            # index covers the split): use the next non-empty one; callers report it (empty_instruction_ids)
            idxs = [next(k % len(instr) for k in range(instruction_index, instruction_index + len(instr)) if instr[k % len(instr)].strip())]
        for k in idxs:
            out.append(
                Episode(
                    episode_id=str(pid) if instruction_index is not None else f"{pid}_{k}",
                    scan=scan,
                    instruction=instr[k].strip(),
                    instructions=tuple(s.strip() for s in instr),
                    start_position=ref[0],
                    start_yaw=yaw,
                    goal_position=ref[-1],
                    goal_radius=SUCCESS_RADIUS_M,
                    reference_path=tuple(ref),
                    path_ids=tuple(path_ids),
                    humans=tuple(humans),
                    geodesic_distance=geo,
                    source=str(p),
                )
            )
    return out[:limit] if limit is not None else out


def _vec3(v, where: str, field: str) -> Vec3:
    if not isinstance(v, (list, tuple)) or len(v) != 3 or not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in v):
        raise EpisodeError(f"{where}: field {field!r} must be [x, y, z] numbers (habitat y-up, m), got {v!r}")
    for c in v:
        _finite(c, where, field)
    return habitat_to_map(v)


def _continuous(p: Path, episodes, limit) -> list[Episode]:
    if not isinstance(episodes, list):
        raise EpisodeError(f"{p.name}: field 'episodes' must be a list")
    out: list[Episode] = []
    _unique_ids(p, episodes, "episode_id", "episode")
    for i, e in enumerate(episodes):
        if limit is not None and len(out) >= limit:
            break
        where = f"{p.name} episode {i}"
        eid = _need(e, "episode_id", (int, str), where)
        where = f"{p.name} episode {i} (episode_id {eid})"
        scene_id = _need(e, "scene_id", str, where, 'give "mp3d/<scan>/<scan>.glb"')
        scan = Path(scene_id).stem
        if not scan:
            raise EpisodeError(f"{where}: field 'scene_id' {scene_id!r} does not name a scan")
        start = _vec3(_need(e, "start_position", list, where), where, "start_position")
        rot = _need(e, "start_rotation", list, where, "give the quaternion [x, y, z, w]")
        if len(rot) != 4 or not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in rot):
            raise EpisodeError(f"{where}: field 'start_rotation' must be a quaternion [x, y, z, w], got {rot!r}")
        for c in rot:
            _finite(c, where, "start_rotation")
        try:
            yaw = habitat_quat_to_yaw(rot)
        except ValueError:
            raise EpisodeError(f"{where}: field 'start_rotation' is a zero quaternion") from None
        goals = _need(e, "goals", list, where, "give [{position, radius}]")
        if not goals or not isinstance(goals[0], dict):
            raise EpisodeError(f"{where}: field 'goals' must hold at least one {{position, radius}}")
        goal = _vec3(goals[0].get("position"), where, "goals[0].position")
        radius = goals[0].get("radius")
        if isinstance(radius, (int, float)) and not isinstance(radius, bool):
            _finite(radius, where, "goals[0].radius")
        radius = float(radius) if isinstance(radius, (int, float)) and not isinstance(radius, bool) and radius > 0 else SUCCESS_RADIUS_M
        ref_raw = e.get("reference_path") or []
        if not isinstance(ref_raw, list):
            raise EpisodeError(f"{where}: field 'reference_path' must be a list of [x, y, z]")
        ref = [_vec3(v, where, f"reference_path[{k}]") for k, v in enumerate(ref_raw)] or [start, goal]
        ins = _need(e, "instruction", dict, where, "give {instruction_text, instruction_tokens}")
        text = ins.get("instruction_text")
        if not isinstance(text, str) or not text.strip():
            raise EpisodeError(f"{where}: field 'instruction.instruction_text' must be a non-empty string")
        info = e.get("info") if isinstance(e.get("info"), dict) else {}
        geo = info.get("geodesic_distance")
        geo = (
            _finite(geo, where, "info.geodesic_distance")
            if isinstance(geo, (int, float)) and not isinstance(geo, bool)
            else _path_length(ref)
        )
        if geo <= 0:
            raise EpisodeError(
                f"{where}: field 'info.geodesic_distance' (or the reference path's length) is {geo!r}; "
                "SPL's reference length must be positive -- give the start-to-goal geodesic distance in m"
            )
        out.append(
            Episode(
                episode_id=str(eid),
                scan=scan,
                instruction=text.strip(),
                instructions=(text.strip(),),
                start_position=start,
                start_yaw=yaw,
                goal_position=goal,
                goal_radius=radius,
                reference_path=tuple(ref),
                path_ids=(),
                humans=(),
                geodesic_distance=geo,
                source=str(p),
            )
        )
    return out


def builtin_episode() -> Episode:
    """The episode of :meth:`havln_robot.sim.scene.Scene.builtin` (no external data needed).

    From the living room along the hallway into the kitchen, past a person on the phone in the
    hallway and a person cooking in the kitchen.
    """
    pts = {
        "living": (0.0, 0.0, 0.0),
        "hall_a": (2.5, 0.0, 0.0),
        "hall_b": (4.5, 0.0, 0.0),
        "junction": (6.0, 0.0, 0.0),
        "kitchen_door": (6.0, 2.0, 0.0),
        "kitchen": (6.0, 4.0, 0.0),
    }
    ids = tuple(pts)
    ref = tuple(pts[v] for v in ids)
    text = (
        "Leave the living room and walk down the hallway, keeping clear of the person talking on the phone. "
        "At the end of the hallway turn left into the kitchen and stop near the person cooking."
    )
    humans = (
        HumanSpec(0, "hall_b", pts["hall_b"], "A person pacing while talking on the phone.", "hallway", "Obstacle"),
        HumanSpec(1, "kitchen", pts["kitchen"], "Someone cooking dinner.", "kitchen", "End"),
    )
    return Episode(
        episode_id="builtin-1",
        scan="builtin",
        instruction=text,
        instructions=(text,),
        start_position=ref[0],
        start_yaw=0.0,
        goal_position=ref[-1],
        goal_radius=SUCCESS_RADIUS_M,
        reference_path=ref,
        path_ids=ids,
        humans=humans,
        geodesic_distance=_path_length(list(ref)),
        source="builtin",
    )
