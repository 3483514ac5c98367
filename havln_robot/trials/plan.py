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


#: Keys that must have a value when they are given (an empty cell is not "0 people" or "no region").
_REQUIRED_VALUE = ("region", "people", "people_present")
#: Text keys; the id-like ones also take a YAML integer (``episode_id: 12``), none takes a list or mapping.
_TEXT_KEYS = ("instance", "instruction", "operator", "episode_id", "scan", "notes")
_ID_KEYS = ("instance", "episode_id", "scan")


def _text_value(value: Any, key: str, where: str) -> str:
    """``value`` as text when it is text (or an integer id for :data:`_ID_KEYS`); else TrialError."""
    if isinstance(value, str):
        return value
    if key in _ID_KEYS and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TrialError(f"{where}: {key}: expected text, got {type(value).__name__} {value!r}; quote it")


def _row(raw: dict[str, Any], defaults: dict[str, Any], where: str) -> tuple[dict[str, Any], int]:
    for k in _REQUIRED_VALUE:
        if k in raw and (raw[k] is None or (isinstance(raw[k], str) and not raw[k].strip())):
            raise TrialError(f"{where}: {k}: empty; give a value (people: a count >= 0, region: e.g. office)")
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
    if isinstance(repeat, str) and repeat.strip().isascii() and repeat.strip().isdigit():
        repeat = int(repeat)  # a CSV cell
    if isinstance(repeat, bool) or not isinstance(repeat, int):
        repeat = -1  # 2.7 is not silently 2, true is not 1
    if repeat < 1 or repeat > 1000:
        raise TrialError(f"{where}: repeat: expected an integer 1..1000, got {raw.get('repeat')!r}")
    if "region" not in d:
        raise TrialError(f"{where}: region: missing (e.g. office, living room, hallway, lobby)")
    d.setdefault("platform", "go2")
    d.setdefault("people_present", 0)
    for k in _TEXT_KEYS:
        if k in d:
            d[k] = _text_value(d[k], k, where)
    return check_meta(d, where=where), repeat


def _csv_rows(p: Path, text: str) -> list[tuple[dict[str, Any], str]]:
    """The rows of a CSV plan as ``(mapping, where)``; header and row shapes are checked strictly.

    Raises:
        TrialError: no header, an empty or repeated column name, a row with more or fewer values
            than columns (one line naming the file, line and column).
    """
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if not header or not any(h.strip() for h in header):
        raise TrialError(f"{p}: empty CSV; the first line must name the columns (region,people,instruction,...)")
    cols = [h.strip() for h in header]
    for j, c in enumerate(cols):
        if not c:
            raise TrialError(f"{p}: line 1: column {j + 1} has no name; name it or remove the empty column")
        if c in cols[:j]:
            raise TrialError(f"{p}: line 1: column {c!r} appears twice (columns {cols.index(c) + 1} and {j + 1}); keep one")
    rows: list[tuple[dict[str, Any], str]] = []
    for values in reader:
        line = reader.line_num
        if not any(v.strip() for v in values):
            continue  # a blank line
        if len(values) != len(cols):
            more = "more" if len(values) > len(cols) else "fewer"
            raise TrialError(f"{p}: line {line}: {len(values)} values for {len(cols)} columns ({more} values than columns); fix the row")
        rows.append(({c: v.strip() for c, v in zip(cols, values, strict=True)}, f"{p}: line {line}"))
    return rows


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
    from havln_robot.paths import input_file_problem
    from havln_robot.yamlio import YamlFileError, load_yaml_file, read_text_capped

    p = Path(path)
    if p.is_dir():  # before the suffix: a folder is named as a folder (paths.input_file_problem's words)
        raise TrialError(f"{p}: {input_file_problem(p)}; give a .yaml or .csv plan file")
    rows: list[tuple[dict[str, Any], str]] = []
    description = ""
    defaults: dict[str, Any] = {}
    if p.suffix.lower() == ".csv":
        try:
            text = read_text_capped(p)
        except FileNotFoundError:
            raise TrialError(f"{p}: no such plan file") from None
        except YamlFileError as exc:
            raise TrialError(f"{exc}") from None
        rows = _csv_rows(p, text.removeprefix("\ufeff"))  # Excel's "CSV UTF-8" starts with a BOM
        cname = name or p.stem
    elif p.suffix.lower() in (".yaml", ".yml"):
        try:
            data = load_yaml_file(p)  # the one strict loader: duplicate keys and aliases refused, size cap
        except FileNotFoundError:
            raise TrialError(f"{p}: no such plan file") from None
        except YamlFileError as exc:
            raise TrialError(f"{exc}") from None
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
        description = data.get("description")
        if description is None:
            description = ""
        elif not isinstance(description, str):
            raise TrialError(f"{p}: description: expected text, got {type(description).__name__}; quote it or write one line")
        for i, r in enumerate(data["trials"]):
            if not isinstance(r, dict):
                raise TrialError(f"{p}: trials[{i}]: expected a mapping like {{region: office, people: 0, ...}}")
            rows.append((r, f"{p}: trials[{i}]"))
        cname = name or ""
        if not name and data.get("campaign") is not None:
            raw_name = data["campaign"]
            if isinstance(raw_name, bool) or not isinstance(raw_name, (str, int)):
                raise TrialError(
                    f"{p}: campaign: expected a name, got {type(raw_name).__name__} {raw_name!r}; write e.g. 'campaign: lab-2026-12'"
                )
            cname = str(raw_name).strip()
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
