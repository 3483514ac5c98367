"""havln-robot replay (batch backend) on real HA-R2R val_seen episodes, and its input checks."""

from __future__ import annotations

import json
import math
import re

import pytest

from havln_robot.actions import STOP, sequence_problems
from havln_robot.challenge.cli import export_main
from havln_robot.challenge.format import read_split_file, write_split_file
from havln_robot.challenge.replay import ReplayError, follow_reference, load_replay_episodes, select_episodes
from havln_robot.ros.replay import main  # `havln-robot replay`: the batch backend runs the episode runner

pytest.importorskip("havln_robot.sim.world", reason="batch simulator (engineer A) not in this build")

AGG = re.compile(r"^(\d+) episodes: SR ([\d.]+)  NE ([\d.]+) m  TCR ([\d.]+)  CR ([\d.]+)", re.M)


@pytest.fixture(scope="module")
def sample_100(havln_data, tmp_path_factory):
    """A format-v1 file for the first 100 HA_val_seen paths (ids = path_id), following the reference paths."""
    out = tmp_path_factory.mktemp("replay")
    rc = export_main(
        [
            "--follow-reference",
            str(havln_data / "ha_r2r_de" / "HA_val_seen.json"),
            "--split",
            "val_seen",
            "--limit",
            "100",
            "--out-dir",
            str(out),
        ]
    )
    assert rc == 0
    return out / "val_seen.json"


def test_follow_reference_sequences_are_legal(havln_data):
    from havln_robot.episodes import load_episodes

    for ep in load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", limit=40):
        seq = follow_reference(ep)
        assert not sequence_problems(seq) and seq[-1] == STOP
        assert seq.count("MOVE_FORWARD") * 0.25 >= 0.5 * ep.geodesic_distance - 1.0


def test_replay_val_seen_batch_prints_sr_ne_tcr_cr(sample_100, capsys, tmp_path):
    # 12 of the 100: batch replay runs motion_node's executor in closed loop, ~40 actions/s here
    rc = main([str(sample_100), "--episodes", "12", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 0, out
    m = AGG.search(out)
    assert m, out
    n, sr, ne, tcr, cr = int(m[1]), *map(float, m.groups()[1:])
    assert 0 <= cr <= 1 and tcr >= 0
    assert n == 12
    # following the reference path ends near the goal where nothing is refused; motion_node refuses
    # stairs (the rising ramp is in its obstacle band) and personal space, and the open-loop file then
    # ends far away: 4 of these 12 succeed
    assert sr >= 0.25
    doc = json.loads((tmp_path / "r.json").read_text())
    eps = doc["episodes"]
    assert len(eps) == 12 and doc["aggregate"]["n"] == 12
    assert sum(e["sr"] for e in eps) / 12 == pytest.approx(sr, abs=1e-3)
    assert all(e["tcr"] == max(0, e["collisions_human"] - e["baseline"]) and e["cr"] == min(e["tcr"], 1) for e in eps)
    assert all(e["sr"] == int(e["success"] and e["tcr"] == 0) for e in eps)
    assert sum(e["ne"] for e in eps) / 12 == pytest.approx(ne, abs=0.01)
    # per-episode lines: one per episode, with the path ids of the discrete file
    first_id = eps[0]["episode_id"]
    assert re.search(rf"^\s+{first_id}\s+\d+\s+[\d.]+", out, re.M)


def test_stop_only_replay_fails_far_goals(havln_data, tmp_path, capsys):
    from havln_robot.episodes import load_episodes

    eps = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", limit=5)
    f = write_split_file(tmp_path / "stop.json", "val_seen", {e.episode_id: [STOP] for e in eps})
    assert main([str(f), "--quiet", "--json", str(tmp_path / "r.json")]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    by_id = {r["episode_id"]: r for r in doc["episodes"]}
    assert set(by_id) == {e.episode_id for e in eps}
    for e in eps:
        r = by_id[e.episode_id]
        d0 = math.dist(e.start_position, e.goal_position)
        assert r["ne_euclid"] == pytest.approx(d0, abs=0.05)  # straight line, reported beside NE
        assert r["ne"] >= r["ne_euclid"] - 1e-6 and r["unreachable"] is False  # NE is walkable: never shorter
        assert r["success"] == (r["ne"] < 3.0) and r["steps"] == 1


def test_stop_only_within_3m_straight_line_is_not_a_success(havln_data, tmp_path, capsys):
    """STOP at the start of val_seen 3216 (goal one floor up) and 7126 (goal behind walls).

    Both goals are < 3 m away in a straight line but 7.42 m / 7.03 m along the navigation graph;
    the HA-VLN scorer measures the walkable distance, so neither is a success."""
    f = write_split_file(tmp_path / "stop.json", "val_seen", {"3216": [STOP], "7126": [STOP]})
    assert main([str(f), "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    m = AGG.search(out)
    assert m and int(m[1]) == 2 and float(m[2]) == 0.0, out  # SR 0
    assert re.search(r"NE_euclid 2\.98 m", out), out
    by_id = {r["episode_id"]: r for r in json.loads((tmp_path / "r.json").read_text())["episodes"]}
    for eid, walk, straight in (("3216", 7.42, 2.99), ("7126", 7.03, 2.98)):
        r = by_id[eid]
        assert r["ne"] == pytest.approx(walk, abs=0.01) and r["ne_euclid"] == pytest.approx(straight, abs=0.01), r
        assert (r["success"], r["sr"], r["spl"], r["unreachable"]) == (False, 0, 0.0, False), r
    assert re.search(r"^\s+3216\s+1\s+7\.42\s+2\.99\s+0\b", out, re.M), out  # NE and NE_eu columns


def test_challenge_ids_against_the_discrete_file_are_refused_with_the_mapping(havln_data, tmp_path, capsys):
    f = write_split_file(tmp_path / "val_seen.json", "val_seen", {"1": [STOP], "2": [STOP]})
    assert main([str(f)]) == 2
    err = capsys.readouterr().err
    assert "keyed by path_id" in err and "continuous" in err and "Traceback" not in err
    with pytest.raises(ReplayError, match="2 episode id"):
        load_replay_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", ["1", "2"])


def test_episode_selection(tmp_path):
    f = write_split_file(tmp_path / "v.json", "val_seen", {"10": [STOP], "3": [STOP], "7": [STOP]})
    sf = read_split_file(f)
    assert select_episodes(sf, None) == ["3", "7", "10"]
    assert select_episodes(sf, "2") == ["3", "7"]
    assert select_episodes(sf, "10,3") == ["10", "3"]
    assert select_episodes(sf, "7") == ["7"]  # an id that exists wins over a count
    with pytest.raises(ReplayError, match="not in"):
        select_episodes(sf, "4,5")
    with pytest.raises(ReplayError, match=r"--episodes 12345: not an episode id .* a count <= 3"):
        select_episodes(sf, "12345")  # neither an id nor a possible count: not silently "all"


def test_bad_input_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format_version": 1, "split": "val_seen", "episodes": [{"episode_id": "1", "actions": ["STOP", "STOP"]}]}')
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("havln-robot replay:") and "stop-once" in err and len(err.strip().splitlines()) == 1
    assert main([str(tmp_path / "absent.json")]) == 2


def test_replay_reproduces_the_evaluator(havln_data, tmp_path, capsys):
    """havln-robot eval --out → export → replay gives the evaluator's per-episode metrics back."""
    evaluate = pytest.importorskip("havln_robot.eval")
    ev = tmp_path / "ev"
    assert evaluate.main(["--policy", "random", "--limit", "12", "--out", str(ev), "-q"]) == 0
    assert export_main(["--runs", str(ev / "actions.json"), "--split", "val_seen", "--out-dir", str(tmp_path / "sub")]) == 0
    assert main([str(tmp_path / "sub" / "val_seen.json"), "--quiet", "--json", str(tmp_path / "r.json")]) == 0
    want = {r["episode_id"]: r for r in map(json.loads, (ev / "results.jsonl").read_text().splitlines())}
    got = {r["episode_id"]: r for r in json.loads((tmp_path / "r.json").read_text())["episodes"]}
    assert set(got) == set(want) and len(got) == 12
    for eid, w in want.items():
        g = got[eid]
        assert g["steps"] == w["steps"] and g["stopped"] == w["stopped"], eid
        assert g["ne"] == pytest.approx(w["ne"], abs=1e-6) and g["collisions_human"] == w["collisions_human"], eid
        assert (g["success"], g["sr"], g["tcr"]) == (w["success"], w["sr"], w["tcr"]), eid
