"""sweep counts its grid before any work: the count is printed first, a grid over the limit
(sweep.MAX_SETTINGS, --max-settings) is refused writing nothing; a damaged cache row is one line
naming the cache file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from havln_robot.sweep import MAX_SETTINGS, SweepError, parse_spec


def _grid(n_seed, n_people):
    return {"episodes": 1, "base": {"policy": "forward"}, "grid": {"seed": list(range(n_seed)), "people": list(range(n_people))}}


def test_huge_grid_is_refused_before_it_is_expanded():
    t0 = time.perf_counter()
    with pytest.raises(SweepError, match=r"grid: 1000000 settings \(1000 seed x 1000 people\) exceed the limit of 256.*--max-settings"):
        parse_spec(_grid(1000, 1000))
    assert time.perf_counter() - t0 < 5.0


def test_limit_is_the_documented_default_and_can_be_raised():
    assert MAX_SETTINGS == 256
    assert len(parse_spec(_grid(16, 16)).settings) == 256
    with pytest.raises(SweepError, match="257 settings"):
        parse_spec(_grid(257, 1))
    assert len(parse_spec(_grid(257, 1), max_settings=300).settings) == 257


def _sweep(tmp_path, spec, *args):
    f = tmp_path / "spec.yaml"
    f.write_text(yaml.safe_dump(spec))
    env = dict(os.environ, HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "home" / ".cache"))
    return subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "sweep", str(f), "--out", str(tmp_path / "out"), "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )


def _files(root: Path):
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_cli_refuses_a_huge_grid_writing_nothing(tmp_path):
    r = _sweep(tmp_path, _grid(1000, 1000))
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "1000000 settings" in line and "--max-settings" in line, line
    assert _files(tmp_path / "home") == [] and not (tmp_path / "out").exists()


def _needs_data():
    root = Path(os.environ.get("HAVLN_DATA", "/nonexistent"))
    if not (root / "ha_r2r_de" / "HA_val_seen.json").is_file():
        pytest.skip("HA-VLN data not available (HAVLN_DATA)")


def test_count_is_printed_first_and_a_damaged_cache_row_is_one_line(tmp_path):
    _needs_data()
    spec = _grid(1, 1)
    r = _sweep(tmp_path, spec)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stderr.splitlines()[0].startswith("sweep: 1 setting in the grid of spec.yaml"), r.stderr
    (cache,) = (tmp_path / "home" / ".cache" / "havln_robot" / "sweep").glob("*.jsonl")
    lines = cache.read_text().splitlines(keepends=True)
    damaged = lines[0] + '{"episode_id": "5593", "ne": "far"}\n' + "".join(lines[1:])
    cache.write_text(damaged)
    r = _sweep(tmp_path, spec, "--overwrite")
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert str(cache) in last and "line 2" in last, last
    assert cache.read_text() == damaged  # the cache is kept as it is


def test_sweep_csv_and_md_cells_from_the_spec_are_escaped(tmp_path):
    """A swept value is text from the spec file (a policy spec, an episodes file): sweep.csv wrote it as it
    came (a newline split the row, '=...' opened as a formula) and sweep.md did not escape '|' (text.csv_text
    and text.md_cell now)."""
    import csv
    from types import SimpleNamespace

    from havln_robot import sweep

    spec = SimpleNamespace(swept=("policy", "split"))
    keys = ["n"] + [f"{k}{s}" for k, *_ in sweep._COLS for s in ("", "_lo", "_hi")] + ["cr_denominator", "cache_key"]
    row = {k: 0.5 for k in keys} | {"n": 3, "cr_denominator": 2, "cache_key": "ab12"}
    row["setting"] = SimpleNamespace(values=(("policy", "=cmd|' /C calc'!A0"), ("split", "a\nb|c.json")))
    sweep.write_csv(tmp_path / "sweep.csv", spec, [row])
    raw = (tmp_path / "sweep.csv").read_bytes().decode("utf-8")
    assert raw.count("\r\n") == 2 and "\n" not in raw.replace("\r\n", "")
    with open(tmp_path / "sweep.csv", newline="") as fh:
        (got,) = list(csv.DictReader(fh))
    assert got["policy"] == "'=cmd|' /C calc'!A0" and got["split"] == "a\\nb|c.json" and got["sr"] == "0.5" and got["n"] == "3"
    md = sweep.markdown_table(spec, [row]).splitlines()
    assert len(md) == 3 and md[2].startswith("| =cmd\\|' /C calc'!A0 | a\\nb\\|c.json | 3 |")
