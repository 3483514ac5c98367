"""Episode files are checked before their numbers are used: unique ids, paths along graph edges,
a recorded ``distance`` (SPL's reference length) agreeing with the connectivity graph, and an empty
selected instruction reported. Synthetic files (no HAVLN_DATA needed) plus a real-data variant."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from havln_robot.episodes import EpisodeError, empty_instruction_ids, load_episodes


def _pose(x, y, z=1.5):
    return [1, 0, 0, x, 0, 1, 0, y, 0, 0, 1, z, 0, 0, 0, 1]


def _conn(tmp_path: Path) -> Path:
    """Scan 's': a -- b -- c in a line 2 m apart (a and c not connected), d unconnected."""
    d = tmp_path / "conn"
    d.mkdir(exist_ok=True)
    vps = {"a": (0, 0), "b": (2, 0), "c": (4, 0), "d": (0, 5)}
    edges = {("a", "b"), ("b", "c")}
    ids = list(vps)
    rows = [
        {
            "image_id": v,
            "pose": _pose(*vps[v]),
            "height": 1.5,
            "included": True,
            "unobstructed": [(v, w) in edges or (w, v) in edges for w in ids],
        }
        for v in ids
    ]
    (d / "s_connectivity.json").write_text(json.dumps(rows))
    return d


def _entry(pid, path=("a", "b", "c"), **kw):
    e = {"scan": "s", "path_id": pid, "path": list(path), "heading": 0.0, "instructions": ["go", "walk", "stop"]}
    e.update(kw)
    return e


def _load(tmp_path, entries, **kw):
    f = tmp_path / "eps.json"
    f.write_text(json.dumps(entries))
    return load_episodes(f, _conn(tmp_path), **kw)


def test_good_file_uses_the_recorded_distance(tmp_path):
    (e,) = _load(tmp_path, [_entry(1, distance=4.01)])
    assert e.geodesic_distance == pytest.approx(4.01)


def test_missing_distance_is_the_graph_length(tmp_path):
    (e,) = _load(tmp_path, [_entry(1)])
    assert e.geodesic_distance == pytest.approx(4.0)


def test_duplicate_path_ids_are_refused(tmp_path):
    with pytest.raises(EpisodeError, match=r"eps.json entry 2: path_id 7 repeats entry 0"):
        _load(tmp_path, [_entry(7), _entry(8), _entry(7)])


def test_duplicate_ids_are_refused_whatever_the_limit(tmp_path):
    """--limit 1 stopped the checks at the first entry: a file repeating an id ran (a re-check found it)."""
    with pytest.raises(EpisodeError, match=r"eps.json entry 1: path_id 7 repeats entry 0"):
        _load(tmp_path, [_entry(7), _entry(7)], limit=1)


def test_duplicate_continuous_episode_ids_are_refused(tmp_path):
    ep = {
        "episode_id": 3,
        "scene_id": "mp3d/s/s.glb",
        "start_position": [0, 0, 0],
        "start_rotation": [0, 0, 0, 1],
        "goals": [{"position": [1, 0, 0], "radius": 3.0}],
        "instruction": {"instruction_text": "go"},
    }
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"episodes": [ep, dict(ep, episode_id=4), ep]}))
    with pytest.raises(EpisodeError, match=r"c.json episode 2: episode_id 3 repeats episode 0"):
        load_episodes(f)
    with pytest.raises(EpisodeError, match=r"c.json episode 2: episode_id 3 repeats episode 0"):
        load_episodes(f, limit=1)


@pytest.mark.parametrize(
    ("distance", "words"),
    [
        (100, "disagrees with the path's length"),
        (0.5, "disagrees with the path's length"),
        (-3, "positive"),
        (0, "positive"),
        (float("nan"), "finite"),
        ("4", "has type str"),
        (True, "has type bool"),
    ],
)
def test_bad_distances_are_refused(tmp_path, distance, words):
    with pytest.raises(EpisodeError, match=r"entry 0 \(path_id 1\): field 'distance'") as exc:
        _load(tmp_path, [_entry(1, distance=distance)])
    assert words in str(exc.value)


def test_zero_length_references_are_refused(tmp_path):
    with pytest.raises(EpisodeError, match=r"path_id 1\): field 'path' has length 0"):
        _load(tmp_path, [_entry(1, path=("a",))])
    ep = {
        "episode_id": 3,
        "scene_id": "mp3d/s/s.glb",
        "start_position": [0, 0, 0],
        "start_rotation": [0, 0, 0, 1],
        "goals": [{"position": [1, 0, 0], "radius": 3.0}],
        "instruction": {"instruction_text": "go"},
        "info": {"geodesic_distance": -3},
    }
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"episodes": [ep]}))
    with pytest.raises(EpisodeError, match=r"episode_id 3\): field 'info.geodesic_distance' .* is -3.0"):
        load_episodes(f)


def test_path_off_the_graph_is_refused(tmp_path):
    with pytest.raises(EpisodeError, match=r"path_id 1\): field 'path' steps 0 -> 1 \('a' -> 'c'\) are not connected"):
        _load(tmp_path, [_entry(1, path=("a", "c"))])
    with pytest.raises(EpisodeError, match=r"steps 1 -> 2 \('b' -> 'd'\)"):
        _load(tmp_path, [_entry(1, path=("a", "b", "d"))])


def test_empty_selected_instruction_is_reported(tmp_path):
    eps = _load(tmp_path, [_entry(1, instructions=["a", "", "c"]), _entry(2)], instruction_index=1)
    assert eps[0].instruction == "c"  # the next non-empty one, and it is reported:
    assert empty_instruction_ids(eps, 1) == ["1"]
    assert empty_instruction_ids(eps, 0) == [] and empty_instruction_ids(eps, None) == []


def _real():
    root = Path(os.environ.get("HAVLN_DATA", "/nonexistent"))
    f = root / "ha_r2r_de" / "HA_val_seen.json"
    if not f.is_file():
        pytest.skip("HA-VLN data not available (HAVLN_DATA)")
    return root, json.loads(f.read_text())[:3]


@pytest.mark.parametrize("distance", [100.0, 0.5, -3.0])
def test_real_val_seen_entry_with_a_wrong_distance_is_refused(tmp_path, distance):
    root, raw = _real()
    assert len(load_episodes(_write(tmp_path, raw), root / "connectivity")) == 3  # the real entries pass
    raw[1]["distance"] = distance
    with pytest.raises(EpisodeError, match=f"entry 1 \\(path_id {raw[1]['path_id']}\\): field 'distance'"):
        load_episodes(_write(tmp_path, raw), root / "connectivity")


def test_real_val_seen_duplicate_and_shortcut_are_refused(tmp_path):
    root, raw = _real()
    with pytest.raises(EpisodeError, match="repeats entry 0"):
        load_episodes(_write(tmp_path, [raw[0], raw[0]]), root / "connectivity")
    raw[0]["path"] = [raw[0]["path"][0], raw[0]["path"][-1]]
    raw[0].pop("distance")
    with pytest.raises(EpisodeError, match="are not connected"):
        load_episodes(_write(tmp_path, raw), root / "connectivity")


def _write(tmp_path, raw):
    f = tmp_path / "real.json"
    f.write_text(json.dumps(raw))
    return f


def test_eval_warns_when_the_selected_instruction_is_empty(tmp_path):
    import subprocess
    import sys

    _root, raw = _real()
    raw = raw[:1]
    raw[0]["instructions"] = ["go to the door", "", "stop at the table"]
    f = _write(tmp_path, raw)
    r = subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "eval", "--episodes", str(f), "--instruction-index", "1", "--policy", "forward"]
        + ["--out", str(tmp_path / "o"), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    warn = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert warn and f"instruction 1 is empty in 1 path(s) of real.json ({raw[0]['path_id']})" in warn[0], r.stderr[-2000:]


def test_results_csv_cells_from_an_episode_file_are_escaped(tmp_path):
    """eval's results.csv wrote an episode id or scan of the episodes file as it came: a newline split the
    row, ESC reached the terminal that cats it, '=...' opened as a formula (text.csv_text now)."""
    import csv

    from havln_robot import eval as ev
    from havln_robot.sim.metrics import episode_metrics

    m = episode_metrics(ne=-0.0 + 1.25, stopped=True, path_length=4.0, geodesic=4.0, collisions_human=0)
    rec = ev.EpisodeRecord("=1+1\r\nx", "sc\x1b[2Jan", 0, m, ["STOP"], 0.5, False)
    ev.write_outputs(tmp_path, [rec], {"n": 1})
    raw = (tmp_path / "results.csv").read_bytes().decode("utf-8")
    assert raw.count("\r\n") == 2 and "\x1b" not in raw and "\n" not in raw.replace("\r\n", "")
    with open(tmp_path / "results.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["episode_id"] == "'=1+1\\r\\nx" and row["scan"] == "sc\\x1b[2Jan" and row["ne"] == "1.25"
    # results.jsonl keeps the id as it is (a data file, not a spreadsheet)
    assert json.loads((tmp_path / "results.jsonl").read_text())["episode_id"] == "=1+1\r\nx"
