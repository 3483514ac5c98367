"""Campaign plans: the planned list of trials of a real-robot campaign, from YAML or CSV.

Pure Python. A campaign is imported once into the trial store (``havln-robot trial plan FILE``);
``havln-robot trial next`` then shows the first plan row without a success/failure trial, so a
campaign interrupted by a crash, a battery swap or the end of the day resumes where it stopped.

YAML::

    campaign: lab-2026-12            # name (required; or --name)
    description: HA-VLN CMA on Go2, 3rd floor
    defaults: {platform: go2, operator: alice, goal_frame: start}
    trials:
      - {region: office, people: 0, instruction: "Walk past the desk ...", goal: [4.0, 1.5], repeat: 3}
      - {region: office, people: 2, instruction: "...", goal: [4.0, 1.5], repeat: 3}

CSV (header row; one planned trial per row, ``repeat`` optional; campaign name = file stem or --name)::

    region,people,instance,instruction,goal_x,goal_y,goal_frame,repeat
    office,0,3F-312,Walk past the desk ...,4.0,1.5,start,3

Keys per trial: platform (go2|sim|gazebo), region, people / people_present, instance,
instruction, goal [x, y] or goal_x + goal_y (m), goal_frame (start|odom|map), goal_radius (m),
operator, episode_id, scan, notes, repeat.
"""

from __future__ import annotations

import csv
import difflib
from pathlib import Path
from typing import Any

import yaml

from havln_robot.trials.store import PlannedTrial, TrialError, check_meta

_KEYS = (
    "platform",
    "region",
    "people",
    "people_present",
    "instance",
    "instruction",
    "goal",
    "goal_x",
    "goal_y",
    "goal_frame",
    "goal_radius",
    "operator",
    "episode_id",
    "scan",
    "notes",
    "repeat",
)


def _row(raw: dict[str, Any], defaults: dict[str, Any], where: str) -> tuple[dict[str, Any], int]:
    d = {**defaults, **{k: v for k, v in raw.items() if v is not None and v != ""}}
    for k in d:
        if k not in _KEYS:
            close = difflib.get_close_matches(str(k), _KEYS, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(_KEYS)}"
            raise TrialError(f"{where}: unknown key {k!r}{hint}")
    if "people" in d:
        d["people_present"] = d.pop("people")
    if "goal" in d:
        g = d.pop("goal")
        if not isinstance(g, (list, tuple)) or len(g) != 2:
            raise TrialError(f"{where}: goal: expected [x, y] in metres, got {g!r}")
        d["goal_x"], d["goal_y"] = g
    repeat = d.pop("repeat", 1)
    try:
        repeat = int(repeat)
    except (TypeError, ValueError):
        repeat = -1
    if repeat < 1 or repeat > 1000:
        raise TrialError(f"{where}: repeat: expected an integer 1..1000, got {raw.get('repeat')!r}")
    if "region" not in d:
        raise TrialError(f"{where}: region: missing (e.g. office, living room, hallway, lobby)")
    d.setdefault("platform", "go2")
    d.setdefault("people_present", 0)
    for k in ("instance", "instruction", "operator", "episode_id", "scan", "notes"):
        if k in d:
            d[k] = str(d[k])
    return check_meta(d, where=where), repeat


def load_plan(path: str | Path, name: str | None = None) -> tuple[str, str, list[PlannedTrial]]:
    """Read a campaign plan file.

    Args:
        path: ``.yaml``/``.yml`` or ``.csv`` file.
        name: campaign name (overrides the file's ``campaign`` key / the CSV file stem).

    Returns:
        (campaign name, description, planned trials with seq 0..N-1, repeats expanded).

    Raises:
        TrialError: unreadable file or any invalid entry (one line naming the file, row and key).
    """
    from havln_robot.yamlio import StrictSafeLoader, YamlFileError, read_text_capped

    p = Path(path)
    try:
        text = read_text_capped(p)
    except FileNotFoundError:
        raise TrialError(f"{p}: no such plan file") from None
    except YamlFileError as exc:
        raise TrialError(f"{exc}") from None
    rows: list[tuple[dict[str, Any], str]] = []
    description = ""
    defaults: dict[str, Any] = {}
    if p.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        if not reader.fieldnames:
            raise TrialError(f"{p}: empty CSV; the first line must name the columns (region,people,instruction,...)")
        for i, r in enumerate(reader, start=2):
            if None in r:
                raise TrialError(f"{p}: line {i}: more values than columns")
            rows.append(({k.strip(): (v.strip() if isinstance(v, str) else v) for k, v in r.items() if k}, f"{p}: line {i}"))
        cname = name or p.stem
    elif p.suffix.lower() in (".yaml", ".yml"):
        try:
            data = yaml.load(text, Loader=StrictSafeLoader)  # noqa: S506 - a SafeLoader subclass (duplicate keys refused)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}:" if mark else ""
            raise TrialError(f"{p}:{where} invalid YAML ({getattr(exc, 'problem', None) or str(exc).splitlines()[0]})") from None
        if not isinstance(data, dict) or not isinstance(data.get("trials"), list):
            raise TrialError(f"{p}: expected a mapping with a 'trials' list (see docs/trials.md)")
        extra = set(data) - {"campaign", "description", "defaults", "trials"}
        if extra:
            raise TrialError(
                f"{p}: unknown top-level key(s) {', '.join(sorted(map(str, extra)))}; allowed: campaign, description, defaults, trials"
            )
        defaults = data.get("defaults") or {}
        if not isinstance(defaults, dict):
            raise TrialError(f"{p}: defaults: expected a mapping")
        description = str(data.get("description") or "")
        for i, r in enumerate(data["trials"]):
            if not isinstance(r, dict):
                raise TrialError(f"{p}: trials[{i}]: expected a mapping like {{region: office, people: 0, ...}}")
            rows.append((r, f"{p}: trials[{i}]"))
        cname = name or str(data.get("campaign") or "")
        if not cname:
            raise TrialError(f"{p}: campaign: missing name (add 'campaign: NAME' or pass --name)")
    else:
        raise TrialError(f"{p}: unknown plan format {p.suffix!r}; use .yaml or .csv")
    planned: list[PlannedTrial] = []
    for raw, where in rows:
        d, repeat = _row(raw, defaults, where)
        for _ in range(repeat):
            planned.append(PlannedTrial(seq=len(planned), **d))
    if not planned:
        raise TrialError(f"{p}: the plan has no trials")
    return cname, description, planned
