"""The named pieces the command mains are made of, each on its own (no ROS graph, no simulator run)."""

from __future__ import annotations

import argparse
import csv
import json
import math

import numpy as np
import pytest
import shapely.geometry

from havln_robot import demo, figures
from havln_robot import eval as ev
from havln_robot.bench import motion as bench_motion
from havln_robot.challenge import cli as challenge_cli
from havln_robot.challenge import export as challenge_export
from havln_robot.challenge import replay
from havln_robot.console import web
from havln_robot.sim.metrics import EpisodeMetrics
from havln_robot.trials import report


def test_eval_options_come_from_the_command_line_names() -> None:
    args = ev.build_parser().parse_args(["--connectivity", "c", "--scenes", "s", "--seed", "3", "--people", "ground_truth"])
    opts = ev._options(args)
    assert (opts.connectivity_dir, opts.scenes_dir, opts.seed, opts.people) == ("c", "s", 3, "ground_truth")
    assert ev._options(ev.build_parser().parse_args([])) == ev.EvalOptions()


def test_eval_refuses_resume_without_out_and_a_server_on_ray(capsys: pytest.CaptureFixture[str]) -> None:
    ap = ev.build_parser()
    with pytest.raises(SystemExit):
        ev._check_args(ap, ap.parse_args(["--resume"]))
    assert "--resume needs --out" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ev._check_args(ap, ap.parse_args(["--policy", "http://h:1", "--workers", "2"]))
    assert ev._check_args(ap, ap.parse_args([])) is None


def test_demo_overrides_name_the_episode_the_policy_and_the_store(tmp_path) -> None:
    args = demo.build_parser().parse_args(["--policy", "forward", "--max-actions", "7", "--people", "detected"])
    o = demo._overrides(args, True, tmp_path / "eps.json", "42", tmp_path)
    assert o["sim_node"] == {"seed": 0, "people_source": "detected", "scene_source": "episodes", "episodes_file": str(tmp_path / "eps.json"), "episode_id": "42"}  # fmt: skip
    assert o["agent_node"] == {"policy": "forward", "max_actions": 7}
    assert o["trial_logger_node"]["db_path"] == str(tmp_path / "trials.db") and o["trial_logger_node"]["record_mcap"]
    bare = demo._overrides(demo.build_parser().parse_args([]), False, tmp_path, "", tmp_path)
    assert bare["sim_node"] == {"seed": 0, "scene_source": "auto"} and bare["agent_node"] == {}


def test_demo_view_holds_a_small_floor_whole_and_pads_a_large_one() -> None:
    small = shapely.geometry.box(0, 0, 30, 10)
    assert demo.view_limits([(1.0, 1.0), (2.0, 2.0)], small) == (-3.0, 30.5, -3.0, 10.5)
    big = shapely.geometry.box(0, 0, 100, 10)
    assert demo.view_limits([(1.0, 1.0), (2.0, 2.0)], big) == (-3.0, 6.0, -3.0, 6.0)


def test_demo_summary_row_without_a_trial_or_ground_truth() -> None:
    run = demo.EpisodeRun("7", "scan", "go")
    row = demo.summary_row(run, None)
    assert row.split()[:3] == ["7", "?", "nan"] and row.rstrip().endswith("#None")


def test_console_fields_are_parsed_strictly() -> None:
    assert web.parse_trial_start({"instruction": "go", "people": 2}) == ("go", "", "unknown", 2)
    with pytest.raises(ValueError, match="instruction text or an HA-R2R episode id"):
        web.parse_trial_start({"people": 1})
    assert web.parse_trial_end({"outcome": "success", "ne_m": 1.5, "reason": "ok"}) == ("success", 1.5, False, "ok")
    with pytest.raises(ValueError):
        web.parse_trial_end({"outcome": "won"})
    assert web.parse_socket_op('{"op": "ping", "t": 5}') == ("ping", 5.0)
    assert web.parse_socket_op('{"op": "estop", "id": "a"}') == ("estop", "a")
    for bad in ('{"op": "stop", "id": true}', '{"op": "stop", "id": "' + "x" * 101 + '"}', '{"op": "jump"}', "[]"):
        with pytest.raises(ValueError):
            web.parse_socket_op(bad)


def test_figures_sections_are_empty_without_their_part() -> None:
    plan = {"quick": False, "repeats": 1, "motion": []}
    for part in (figures._md_eval, figures._md_speeds, figures._md_motion, figures._md_latency, figures._md_people,
                 figures._md_trials, figures._md_scale, figures._md_agreement):  # fmt: skip
        assert part({}, plan) == []
    assert figures._md_eval({"eval": "no data"}, plan) == ["**Simulator**: skipped (no data)", ""]


def test_replay_json_holds_the_aggregate_and_each_episode(tmp_path) -> None:
    m = EpisodeMetrics(ne=1.0, success=True, spl=0.5, path_length=4.0, collisions_human=0, collisions_static=1, tcr=0, cr=0, sr=1, steps=3)
    results = [replay.ReplayedEpisode("e1", m, humans=2, note="", refused=0, actions=None)]
    replay.write_results_json(str(tmp_path / "r.json"), results, replay.aggregate(results))
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["episodes"][0]["episode_id"] == "e1" and doc["episodes"][0]["ne"] == 1.0 and "sr" in doc["aggregate"]


def test_replay_refuses_a_target_without_the_ros_backend() -> None:
    ap = replay.build_parser()
    with pytest.raises(SystemExit):
        replay._check_args(ap, ap.parse_args(["f.json", "--target", "robot"]))


def test_export_records_need_a_split_for_trials_and_reference_paths() -> None:
    ns = argparse.Namespace(follow_reference=None, runs=[], trials="t.db", split=None)
    with pytest.raises(challenge_export.ExportError, match="--trials needs --split"):
        challenge_cli._gather_records(ns)
    ns = argparse.Namespace(follow_reference="e.json", runs=[], trials=None, split=None)
    with pytest.raises(challenge_export.ExportError, match="--follow-reference needs --split"):
        challenge_cli._gather_records(ns)


def test_export_groups_records_by_split_and_counts_duplicates() -> None:
    summary = challenge_export.ExportSummary()
    recs = [challenge_export.Record("1", ("STOP",), None, "a"), challenge_export.Record("1", ("MOVE_FORWARD",), None, "b")]
    by_split = challenge_export._group_by_split(recs, "val_seen", (), summary)
    assert list(by_split) == ["val_seen"] and by_split["val_seen"]["1"][-1] == "STOP"
    assert len(summary.duplicates) == 1 and summary.finalized == {"val_seen": 1}


def test_motion_bench_checks_name_each_target() -> None:
    row = {"pos_p95_m": 0.0, "yaw_p95_deg": 0.0, "ratio_mean": 1.0}
    ok = bench_motion._checks({"MOVE_FORWARD": row, "TURN_LEFT": row, "TURN_RIGHT": row}, {"command_latency_max_ms": 0.0})
    assert len(ok) == 4 and all(ok.values())
    slow = bench_motion._checks({"MOVE_FORWARD": row, "TURN_LEFT": row, "TURN_RIGHT": row}, {"command_latency_max_ms": math.inf})
    assert not all(slow.values())


def test_success_csv_header_and_rates(tmp_path) -> None:
    class Cell:
        k, n, rate = 1, 2, 0.5

    report._write_success_csv({"office": {"without": Cell, "with": Cell, "all": Cell}}, tmp_path / "s.csv")
    rows = list(csv.reader((tmp_path / "s.csv").open()))
    assert rows[0] == ["region"] + [f"{c}_{x}" for c in ("without_people", "with_people", "all") for x in ("success", "trials", "sr")]
    assert rows[1] == ["office", "1", "2", "0.5000"] * 1 + ["1", "2", "0.5000"] * 2


def test_people_bench_matches_tracks_within_the_radius_only() -> None:
    from types import SimpleNamespace

    from havln_robot.bench import people as bench_people

    tracks = [SimpleNamespace(x=1.0, y=0.0), SimpleNamespace(x=5.0, y=5.0)]
    got = bench_people.match_tracks(tracks, np.array([1.1, 9.0]), np.array([0.0, 9.0]), np.array([7, 8]))
    assert got == {0: 7}
    assert bench_people.match_tracks([], np.array([1.0]), np.array([0.0]), np.array([0])) == {}


def test_operator_ne_is_a_finite_distance_in_range() -> None:
    from havln_robot.trials.store import TrialError, _checked_ne

    assert _checked_ne("1.5") == 1.5
    for bad in ("x", math.nan, -1.0, 1e9, None):
        with pytest.raises(TrialError, match="ne: expected a distance"):
            _checked_ne(bad)


def test_train_refuses_bad_shapes_before_any_work(tmp_path) -> None:
    from havln_robot.policy import train

    for flags, words in ((["--res", "12"], "--res must be a positive multiple of 8"), (["--views", "1"], "--views must be >= 2")):
        args = train.build_parser().parse_args(["--out", str(tmp_path / "m.pt"), *flags])
        with pytest.raises(ValueError, match=words):
            train._check_args(args)


def test_trial_parser_has_every_subcommand() -> None:
    from havln_robot.trials import cli as trial_cli

    ap = trial_cli.build_parser()
    assert ap.parse_args(["start", "--platform", "sim", "--people", "2"]).people == 2
    assert ap.parse_args(["end", "--success", "--ne", "1"]).ne == 1.0
    for cmd in ("plan x.yaml", "next", "list", "show 1", "campaigns", "backup b.db", "recover-bag d", "bench"):
        assert ap.parse_args(cmd.split()).cmd == cmd.split()[0]
