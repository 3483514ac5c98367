"""``havln-robot bench all --markdown --quick``: the README's figure tables from one command.

The quick run (2 episodes, one repeat, short timings) runs every benchmark once; parts that need
the HA-VLN data are skipped (and say so) when it is absent.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from havln_robot.figures import BEGIN, END, PARTS, FiguresError, part_markers, safety_markdown, span, update_readme, update_readme_parts
from havln_robot.paths import REPO_ROOT, data_dir

# the quick run steps the closed-loop batch world: minutes, not seconds, on the loaded 2-core VM
pytestmark = pytest.mark.timeout(1500)


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One quick figure run through the CLI, updating a copy of the README."""
    d = tmp_path_factory.mktemp("figures")
    readme = d / "README.md"
    readme.write_text((REPO_ROOT / "README.md").read_text(encoding="utf-8"), encoding="utf-8")
    cmd = [sys.executable, "-m", "havln_robot.cli", "bench", "all", "--markdown", "--quick", "--quiet", "--json", str(d / "fig.json")]
    out = subprocess.run([*cmd, "--update-readme", str(readme)], capture_output=True, text=True, timeout=900, cwd=d, env=os.environ.copy())
    assert out.returncode == 0, out.stderr[-2000:]
    return {"md": out.stdout, "json": json.loads((d / "fig.json").read_text()), "readme": readme.read_text(encoding="utf-8")}


def _tables(md: str) -> list[list[list[str]]]:
    tables, cur = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            cur.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif cur:
            tables.append(cur)
            cur = []
    return tables


def _numbers(obj: object):
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        yield float(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _numbers(v)


def test_tables_name_the_machine_and_date_and_are_well_formed(quick: dict) -> None:
    md = quick["md"]
    first = md.splitlines()[0]
    assert re.match(r"Measured on \d{4}-\d{2}-\d{2} on .+ \(\d+ logical cores\), .+, Python 3\.\d+", first), first
    tables = _tables(md)
    assert len(tables) >= 3
    for t in tables:
        assert len(t) >= 3 and all(c == "---" for c in t[1]), t[:2]
        assert all(len(r) == len(t[0]) for r in t), f"ragged table {t[0]}"
        assert all(c for r in t for c in r), f"empty cell in {t[0]}"
    assert "nan" not in md.lower().replace("nanosecond", "")
    assert "n/a" not in md, "every quick figure is measured"
    for name in ("bench sim", "bench motion", "bench policy", "bench perception", "bench robot", "trial bench"):
        assert f"havln-robot {name}" in md


def test_figures_are_finite_and_consistent(quick: dict) -> None:
    fig = quick["json"]
    assert all(math.isfinite(x) for x in _numbers({k: v for k, v in fig.items() if k in PARTS}))
    assert all(x > 0 for x in fig["sim"]["steps_per_s"]) and all(v[0] > 0 for v in fig["sim"]["render"].values())
    fwd = fig["motion"]["actions"]["MOVE_FORWARD"]
    assert 0 <= fwd["pos_p50_m"] <= fwd["pos_p95_m"] and fwd["ratio_mean"] >= 1.0
    assert fig["policy"]["small_ms"][0] > 0 and fig["trial"]["median_ms"][0] > 0
    # the watchdog never fires before its timeout after the last command (trials whose command
    # stream a loaded machine interrupted are dropped by the bench, and counted)
    assert all(p is None or p >= fig["robot"]["watchdog_ms"] * 0.9 for p in fig["robot"]["watchdog_p50"])


def test_data_parts_run_or_say_why(quick: dict) -> None:
    fig, md = quick["json"], quick["md"]
    have = (data_dir() / "ha_r2r_de" / "HA_val_seen.json").is_file()
    for part in ("eval", "validate", "replay"):
        if not have:
            assert isinstance(fig[part], str) and "reference data" in fig[part]
            assert f"{part} (needs the HA-VLN reference data" in md
            continue
        assert isinstance(fig[part], dict), fig[part]
    if have:
        rows = {r["policy"]: r for r in fig["eval"]["rows"]}
        assert list(rows) == ["expert", "forward", "random", "small_panoramic"]
        assert rows["expert"]["success_pct"] == 100.0 and rows["expert"]["episodes"] == 2
        for r in rows.values():
            assert 0 <= r["sr_pct"] <= r["success_pct"] <= 100 and r["ne_median_m"] >= 0
        assert 0 <= float(fig["replay"]["sr"]) <= 1
        assert fig["validate"]["episodes"] == {"val_seen": 778, "val_unseen": 1839}
        assert "skipped with --quick" in fig["agreement"]


def test_readme_copy_gets_the_tables_between_the_markers(quick: dict) -> None:
    original = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    new = quick["readme"]
    head, rest = original.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    assert new.startswith(head + BEGIN + "\n") and new.endswith(END + tail)
    assert quick["md"].strip() in new


def test_repository_readme_has_the_markers_and_says_machine_and_date() -> None:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    inside = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert re.search(r"Measured on .*(20\d\d)", inside), "the figures name the machine and the date"
    assert "havln-robot bench all --markdown" in text
    assert not re.search(r"\bengineer [A-Z]\b", text)


def test_span() -> None:
    assert span([1.04, 2.0]) == "1.0–2.0"
    assert span([3.01, 2.99]) == "3.0"
    assert span([None, float("nan")]) == "n/a"


def test_update_readme_needs_both_markers(tmp_path: Path) -> None:
    f = tmp_path / "R.md"
    f.write_text(f"a\n{END}\n{BEGIN}\n")
    with pytest.raises(FiguresError, match="figures:begin"):
        update_readme(f, "x")
    f.write_text(f"a\n{BEGIN}\nold\n{END}\nb\n")
    update_readme(f, "new")
    assert f.read_text() == f"a\n{BEGIN}\nnew\n{END}\nb\n"


def test_only_safety_rewrites_its_own_block_and_keeps_every_other_figure(tmp_path: Path) -> None:
    row = {
        "scenario": "box",
        "sensors": "depth",
        "runs": 2,
        "contacts": 0,
        "falls": 0,
        "closest_m": 0.06,
        "refused": 2,
        "mean_travel_m": 1.2,
    }
    lidar = {**row, "sensors": "depth + LiDAR", "contacts": 1, "closest_m": 0.0}
    fr = {"refused": 1, "actions": 300, "paths": 4, "percent": 0.333}
    end = {"contact": False, "fall": False, "refused": True, "travel_m": 1.4}
    live = [
        {"scene": "box A", "sensors": "depth", "batch": end, "live": end, "agree": True},
        {"scene": "box B", "sensors": "depth", "batch": end, "live": {**end, "refused": False}, "agree": False},
    ]
    text = "\n".join(safety_markdown({"seeds": 1, "rows": [row, lidar], "false_refusals": fr, "targets_met": True, "live": live}))
    # one line per scenario, each cell depth / depth + LiDAR; of the live scenes only those that differ
    assert "| box | 2 / 2 | 0 / 1 | 0 / 0 | 0.06 / 0.00 | 2 / 2 | 1.20 / 1.20 |" in text and "1 of 300 expert actions" in text
    assert "1 of 2 end as their batch run" in text and "| box B | depth | refused, 1.40 m | walked, 1.40 m | NO |" in text
    assert "box A" not in text
    f = tmp_path / "R.md"
    f.write_text(f"a\n{BEGIN}\nMeasured on X\n\n| t |\n{END}\nb\n")
    assert update_readme_parts(f, text, ["safety"]) == ["safety"]
    first = f.read_text()
    assert first.startswith(f"a\n{BEGIN}\nMeasured on X\n\n| t |\n\n{part_markers('safety')[0]}") and first.endswith(f"{END}\nb\n")
    update_readme_parts(f, text.replace("| 0.06 |", "| 0.07 |"), ["safety"])  # a second run replaces the block in place
    assert f.read_text() == first.replace("| 0.06 |", "| 0.07 |")
    with pytest.raises(FiguresError, match="own block"):
        update_readme_parts(f, "no blocks", ["safety"])


def test_bad_flags_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from havln_robot.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["bench", "all", "--only", "sim,foo"])
    assert exc.value.code == 2
    assert "unknown part(s) foo" in capsys.readouterr().err
