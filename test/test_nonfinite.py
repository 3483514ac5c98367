"""Non-finite numbers: refused on input, never written as bare NaN/Infinity.

No external data: the episode files and the connectivity file are written here.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from havln_robot import jsonio
from havln_robot.episodes import EpisodeError, load_episodes

BAD = ("NaN", "Infinity", "-Infinity", "1e999")  # the last one overflows to inf when parsed


def _strict_loads(text: str):
    """What a strict JSON parser does: no NaN / Infinity tokens."""

    def refuse(tok):
        raise ValueError(f"non-standard JSON token {tok}")

    return json.loads(text, parse_constant=refuse)


def _continuous() -> dict:
    return {
        "episode_id": 7,
        "trajectory_id": 3,
        "scene_id": "mp3d/abc/abc.glb",
        "start_position": [0.0, 0.1, 0.0],
        "start_rotation": [0.0, 0.0, 0.0, 1.0],
        "goals": [{"position": [2.0, 0.1, -1.0], "radius": 3.0}],
        "reference_path": [[0.0, 0.1, 0.0], [2.0, 0.1, -1.0]],
        "instruction": {"instruction_text": "go", "instruction_tokens": [1]},
        "info": {"geodesic_distance": 2.3},
    }


def _set(doc: dict, path: str, token: str) -> str:
    """JSON text of ``doc`` with the number at ``path`` (dotted; [k] indices) replaced by ``token``."""
    marker = 123456.789
    keys = re.findall(r"[^.\[\]]+", path)
    obj = doc
    for k in keys[:-1]:
        obj = obj[int(k)] if isinstance(obj, list) else obj[k]
    last = keys[-1]
    if isinstance(obj, list):
        obj[int(last)] = marker
    else:
        obj[last] = marker
    return json.dumps(doc).replace(str(marker), token)


CONTINUOUS_FIELDS = {
    "start_position[1]": "start_position",
    "start_rotation[3]": "start_rotation",
    "goals[0].position[0]": "goals[0].position",
    "goals[0].radius": "goals[0].radius",
    "reference_path[1][2]": "reference_path[1]",
    "info.geodesic_distance": "info.geodesic_distance",
}


def test_a_good_continuous_file_loads(tmp_path):
    f = tmp_path / "ok.json"
    f.write_text(json.dumps({"episodes": [_continuous()]}))
    (ep,) = load_episodes(f)
    assert ep.geodesic_distance == 2.3 and ep.goal_radius == 3.0


@pytest.mark.parametrize("token", BAD)
@pytest.mark.parametrize("path", sorted(CONTINUOUS_FIELDS))
def test_continuous_loader_refuses_non_finite(tmp_path, path, token):
    doc = {"episodes": [_continuous()]}
    f = tmp_path / "bad.json"
    f.write_text(_set(doc, f"episodes.0.{path}", token))
    with pytest.raises(EpisodeError) as ei:
        load_episodes(f)
    msg = str(ei.value)
    assert "\n" not in msg and "episode_id 7" in msg and f"'{CONTINUOUS_FIELDS[path]}'" in msg and "finite" in msg, msg


def _connectivity(tmp_path: Path, z: str = "1.5") -> Path:
    pose = lambda x: [1, 0, 0, x, 0, 1, 0, 0.0, 0, 0, 1, 1.5, 0, 0, 0, 1]  # noqa: E731
    vps = [
        {"image_id": "a", "pose": pose(0.0), "height": 1.5, "included": True, "unobstructed": [False, True]},
        {"image_id": "b", "pose": pose(2.0), "height": 1.5, "included": True, "unobstructed": [True, False]},
    ]
    text = json.dumps(vps)
    if z != "1.5":
        text = text.replace(
            '"height": 1.5, "included": true, "unobstructed": [true, false]',
            f'"height": {z}, "included": true, "unobstructed": [true, false]',
        )
    (tmp_path / "scan1_connectivity.json").write_text(text)
    return tmp_path


def _discrete() -> list[dict]:
    return [{"scan": "scan1", "path_id": 42, "path": ["a", "b"], "heading": 0.5, "instructions": ["walk"], "distance": 2.0}]


@pytest.mark.parametrize("token", BAD)
@pytest.mark.parametrize("field", ["distance", "heading"])
def test_discrete_loader_refuses_non_finite(tmp_path, field, token):
    conn = _connectivity(tmp_path)
    f = tmp_path / "bad.json"
    f.write_text(_set({"x": _discrete()}, f"x.0.{field}", token)[len('{"x": ') : -1])
    with pytest.raises(EpisodeError) as ei:
        load_episodes(f, conn)
    msg = str(ei.value)
    assert "\n" not in msg and "path_id 42" in msg and f"'{field}'" in msg, msg
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(_discrete()))
    assert load_episodes(ok, conn)[0].geodesic_distance == 2.0


def test_connectivity_with_non_finite_pose_is_refused(tmp_path):
    conn = _connectivity(tmp_path, z="NaN")
    f = tmp_path / "ep.json"
    f.write_text(json.dumps(_discrete()))
    with pytest.raises(EpisodeError, match="viewpoint 'b' has a non-finite"):
        load_episodes(f, conn)


def test_jsonio_is_strict():
    doc = {"aggregate": {"spl": math.nan, "ne": 1.0}, "episodes": [{"ne": math.inf}]}
    with pytest.raises(ValueError, match=r"\$\.aggregate\.spl"):
        jsonio.dumps(doc)
    text = jsonio.dumps(doc, nonfinite="null")
    assert _strict_loads(text) == {"aggregate": {"spl": None, "ne": 1.0}, "episodes": [{"ne": None}]}
    assert jsonio.dumps({"a": [1, 2.5, "x", None, True]}) == json.dumps({"a": [1, 2.5, "x", None, True]})
    with pytest.raises(ValueError, match="nonfinite"):
        jsonio.dumps({}, nonfinite="keep")


def test_eval_outputs_are_strict_json(tmp_path):
    from havln_robot.eval import EpisodeRecord, write_outputs
    from havln_robot.sim.metrics import aggregate, episode_metrics

    m = episode_metrics(ne=2.0, stopped=True, path_length=5.0, geodesic=4.0, collisions_human=0, ne_euclid=1.5)
    rec = EpisodeRecord("1", "scan", 0, m, ["STOP"], 0.1)
    write_outputs(tmp_path, [rec], aggregate([m]).as_dict())
    rows = [_strict_loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert rows[0]["ne"] == 2.0 and rows[0]["ne_euclid"] == 1.5 and rows[0]["unreachable"] is False
    assert _strict_loads((tmp_path / "summary.json").read_text())["ne_euclid"] == 1.5
    bad = episode_metrics(ne=math.nan, stopped=True, path_length=5.0, geodesic=4.0, collisions_human=0)
    with pytest.raises(ValueError, match="refusing to write nan"):
        write_outputs(tmp_path / "b", [EpisodeRecord("1", "scan", 0, bad, ["STOP"], 0.1)], {})


def test_every_json_writer_goes_through_jsonio():
    """No json.dump/json.dumps outside havln_robot/jsonio.py (so every JSON the project writes is strict)."""
    root = Path(__file__).resolve().parents[1]
    offenders = []
    for p in sorted((root / "havln_robot").rglob("*.py")):
        if p.name == "jsonio.py" and p.parent.name == "havln_robot":
            continue
        for k, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bjson\.dumps?\(", line):
                offenders.append(f"{p.relative_to(root)}:{k}")
    assert not offenders, offenders
