"""Bad input on the command line: one line naming the flag, exit 2, no traceback, nothing recorded is lost."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "havln_robot.cli", *map(str, args)], capture_output=True, text=True, timeout=180, cwd=cwd)


def _one_line_error(r, *words):
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    for w in words:
        assert w in last, last
    return last


def _export_reference(data, limit, out_dir, *extra):
    """``havln-robot export`` of the first ``limit`` reference-following HA val_seen sequences into ``out_dir``."""
    return _cli(
        "export",
        "--follow-reference",
        data / "ha_r2r_de" / "HA_val_seen.json",
        "--split",
        "val_seen",
        "--limit",
        limit,
        "--out-dir",
        out_dir,
        *extra,
    )


@pytest.fixture
def predictions(havln_data, tmp_path):
    """A 2-episode format-v1 val_seen.json (reference-following actions) in tmp_path/d."""
    r = _export_reference(havln_data, 2, tmp_path / "d")
    assert r.returncode == 0, r.stderr
    return tmp_path / "d" / "val_seen.json"


def test_outputs_that_would_destroy_their_inputs_are_refused(predictions, havln_data):
    before = predictions.read_bytes()
    _one_line_error(_cli("replay", predictions, "--json", predictions), "--json", "is also an input")
    _one_line_error(_cli("pack", predictions.parent, "-o", predictions), "-o", "is also an input")
    _one_line_error(_export_reference(havln_data, 1, predictions.parent), "--out-dir", "val_seen.json", "--overwrite")
    assert predictions.read_bytes() == before
    # one episode in place of two: --overwrite alone loses one, and is refused naming --allow-partial
    _one_line_error(
        _export_reference(havln_data, 1, predictions.parent, "--overwrite"), "val_seen.json", "holds 2 episodes", "--allow-partial"
    )
    assert predictions.read_bytes() == before
    assert _export_reference(havln_data, 1, predictions.parent, "--overwrite", "--allow-partial").returncode == 0
    assert predictions.read_bytes() != before


def test_output_folders_are_checked_before_the_work(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    _one_line_error(_cli("eval", "--policy", "forward", "--limit", 1, "--out", afile), "--out", "is a file")
    _one_line_error(_cli("report", "--db", tmp_path / "t.db", "--out", afile), "--out", "is a file")
    _one_line_error(_cli("bench", "sim", "--out", tmp_path / "adir_is_fine" / ".." / "afile" / "x.json"), "--out")
    assert afile.read_text() == "keep me"


@pytest.mark.parametrize(
    "args, words",
    [
        (["trial", "bench", "--steps", "0"], ["--steps"]),
        (["eval", "--policy", "forward", "--seed", "-5"], ["--seed"]),
        (["demo", "--episodes-file", "nope.json"], ["--episodes-file", "no such file"]),
        (["replay", "nope.json", "--target", "robot"], ["--target", "--backend ros"]),
        (["validate", "nope.zip", "--splits", ""], ["--splits"]),
        (["trial", "--db", "typo_dir/trails.db", "list"], ["--db", "no trial store"]),
        # nan / inf passed `x <= 0` range checks: a traceback (bench motion), 0.0 frames/s printed as a
        # figure (bench perception), a replay action that never times out, a training budget never reached
        (["bench", "motion", "-n", "1", "--odom-hz", "nan"], ["--odom-hz", "finite"]),
        (["bench", "perception", "--seconds", "nan"], ["--seconds", "finite"]),
        (["bench", "sim", "--node-seconds", "inf"], ["--node-seconds", "finite"]),
        (["replay", "nope.json", "--action-timeout", "nan"], ["--action-timeout", "finite"]),
        (["train", "--time-budget-s", "nan"], ["--time-budget-s", "finite"]),
    ],
)
def test_bad_flags_are_one_line_errors(args, words, tmp_path):
    _one_line_error(_cli(*args, cwd=tmp_path), *words)


def test_trial_commands_use_the_default_store_when_no_db_is_given(tmp_path):
    import os

    env = {**os.environ, "HAVLN_TRIALS_DB": str(tmp_path / "t.db")}

    def run(*a):
        return subprocess.run([sys.executable, "-m", "havln_robot.cli", "trial", *a], capture_output=True, text=True, env=env, timeout=60)

    _one_line_error(run("list"), "default store", "no trial store")
    assert run("start", "--platform", "sim", "--region", "office").returncode == 0
    r = run("list")
    assert r.returncode == 0 and "office" in r.stdout and "Traceback" not in r.stderr


# --- eval --resume: a damaged results.partial.jsonl -----------------------------------------------


@pytest.fixture(scope="module")
def partial_lines(havln_data, tmp_path_factory):
    """The lines of a real ``results.partial.jsonl`` of ``eval --policy forward --limit 2`` (header,
    two finished episodes) and the eval arguments that resume it."""
    import json

    from havln_robot import eval as ev
    from havln_robot.episodes import load_episodes

    ep = havln_data / "ha_r2r_de" / "HA_val_seen.json"
    _b, why = ev.default_baseline(ep, [])
    opts = ev.EvalOptions(policy="forward")
    run = opts.key() | {"episodes_file": str(ep.resolve()), "instruction_index": 0, "baseline": why}
    f = tmp_path_factory.mktemp("partial") / ev.PARTIAL_NAME
    p = ev.PartialResults(f, run, resume=False)
    for job in ev.make_jobs(load_episodes(ep, limit=2), opts):
        _i, _tag, row = ev.run_job(job)
        p.add(job.episode.episode_id, row)
    lines = [json.loads(x) for x in f.read_text().splitlines()]
    assert len(lines) == 3 and isinstance(lines[1], dict)
    return lines, ["--episodes", str(ep), "--policy", "forward", "--limit", "3", "-q", "--resume"]


def _set(line: int, key: str, value):
    def damage(lines):
        lines[line][key] = value

    return damage


def _drop(line: int, key: str):
    def damage(lines):
        del lines[line][key]

    return damage


def _replace(line: int, value):
    def damage(lines):
        lines[line] = value

    return damage


_DAMAGED_PARTIAL = {
    "header a list": (_replace(0, [1, 2]), ["line 1", "header"]),
    "header null": (_replace(0, None), ["line 1", "header"]),
    "header without run": (_replace(0, {"format": 1}), ["line 1", "header"]),
    "row without actions": (_drop(1, "actions"), ["line 2", "actions: missing"]),
    "ne a string": (_set(2, "ne", "1.5"), ["line 3", "ne: '1.5'", "distance"]),
    "ne NaN-like": (_set(1, "ne", -1.0), ["line 2", "ne: -1.0"]),
    "success a string": (_set(1, "success", "true"), ["line 2", "success", "true or false"]),
    "humans a bool": (_set(1, "humans", True), ["line 2", "humans"]),
    "actions not literals": (_set(1, "actions", ["FLY"]), ["line 2", "actions", "action literals"]),
    "actions a string": (_set(1, "actions", "STOP"), ["line 2", "actions"]),
    "episode_id a number": (_set(1, "episode_id", 7), ["line 2", "episode_id: 7"]),
    "skipped an int": (_replace(1, {"episode_id": "x", "skipped": 5}), ["line 2", "skipped: 5"]),
    "row a list": (_replace(2, [1]), ["line 3", "must be an object"]),
    "same episode twice": (lambda ls: ls.append(dict(ls[1])), ["line 4", "already at line 2"]),
}


@pytest.mark.parametrize("case", sorted(_DAMAGED_PARTIAL))
def test_eval_resume_refuses_a_damaged_partial_file_before_any_episode(case, partial_lines, tmp_path, monkeypatch, capsys):
    """Before: a traceback (header a list / null: AttributeError; a row without actions: KeyError
    after the whole run; ne a string: TypeError in the aggregate after the run), or the value
    silently read as another one. Now: one line naming the line and the field, before any episode."""
    import copy
    import json

    from havln_robot import eval as ev

    lines, args = copy.deepcopy(partial_lines[0]), partial_lines[1]
    damage, words = _DAMAGED_PARTIAL[case]
    damage(lines)
    out = tmp_path / "run"
    out.mkdir()
    f = out / ev.PARTIAL_NAME
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    before = f.read_bytes()

    def no_episode(job):
        raise AssertionError(f"episode {job.episode.episode_id} ran before the damaged file was refused")

    monkeypatch.setattr(ev, "run_job", no_episode)
    capsys.readouterr()
    assert ev.main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    for w in ["--resume", str(f), *words]:
        assert w in err[0], err[0]
    assert ("delete" in err[0] or "remove" in err[0]) and "rerun without --resume" in err[0]
    assert f.read_bytes() == before  # nothing recorded is lost


@pytest.mark.parametrize(
    "text, words",
    [
        (b"\xff\xfe not utf-8\n", ["line 2", "UTF-8"]),
        (b"[" * 100_000 + b"\n", ["line 2", "nests too deeply"]),
        (b'{"episode_id": "torn\n', ["line 2", "not JSON"]),  # a bad line with its newline is damage, not a torn end
    ],
)
def test_eval_resume_refuses_unreadable_lines_and_keeps_them(text, words, partial_lines, tmp_path, capsys):
    """A line in the middle that does not parse was dropped silently and the file rewritten without
    it (a finished episode lost); only a last line without its newline is a torn write."""
    import json

    from havln_robot import eval as ev

    lines, args = partial_lines
    out = tmp_path / "run"
    out.mkdir()
    f = out / ev.PARTIAL_NAME
    f.write_bytes(json.dumps(lines[0]).encode() + b"\n" + text + json.dumps(lines[1]).encode() + b"\n")
    before = f.read_bytes()
    capsys.readouterr()
    assert ev.main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and all(w in err[0] for w in words), err
    assert f.read_bytes() == before


def test_partial_rows_are_checked_field_by_field_as_eval_writes_them(partial_lines):
    """The strict reader accepts every line eval writes (a finished episode, a skipped one) and names a bad field."""
    from havln_robot import eval as ev

    lines, _ = partial_lines
    eid, row = ev.check_partial_row(lines[1])
    assert eid == lines[1]["episode_id"] and row is lines[1]
    assert set(lines[1]) == set(ev.PARTIAL_ROW_FIELDS)  # every field eval writes is checked, and no other
    assert ev.check_partial_row({"episode_id": "9", "skipped": "start not on free space"}) == ("9", "start not on free space")
    with pytest.raises(ValueError, match=r"^f.jsonl: line 9: seconds: 'x' is not a finite duration"):
        ev.check_partial_row(lines[1] | {"seconds": "x"}, "f.jsonl: line 9")


# --- results are replaced only with --overwrite, by every command that writes them ---------------

#: command line (run in a folder holding f.json, in.json, spec.yaml, d/), the earlier output it must keep, its flag.
_RESULT_WRITERS = {
    "eval": (["eval", "--policy", "forward", "--limit", "1", "--out", "d"], "d/results.jsonl", "--out"),
    "eval summary": (["eval", "--policy", "forward", "--limit", "1", "--out", "d"], "d/summary.json", "--out"),
    "sweep": (["sweep", "spec.yaml", "--out", "d"], "d/sweep.md", "--out"),
    "replay": (["replay", "in.json", "--json", "f.json"], "f.json", "--json"),
    "report": (["report", "--db", "t.db", "--out", "d"], "d/report.md", "--out"),
    "report trajectories": (["report", "--db", "t.db", "--out", "d"], "d/trajectories_2.png", "--out"),
    "pack": (["pack", "in.json", "-o", "f.zip"], "f.zip", "-o"),
    "export": (["export", "--stop-only", "--split", "val_seen", "--out-dir", "d"], "d/val_seen.json", "--out-dir"),
    "train": (["train", "--out", "m.pt"], "m.pt", "--out"),
    "train report": (["train", "--out", "m.pt"], "m.json", "--out"),
    "bench all": (["bench", "all", "--json", "f.json"], "f.json", "--json"),
    "bench agreement": (["bench", "agreement", "--json", "f.json"], "f.json", "--json"),
    "bench motion": (["bench", "motion", "--json", "f.json"], "f.json", "--json"),
    "bench perception": (["bench", "perception", "--json", "f.json"], "f.json", "--json"),
    "bench people": (["bench", "people", "--json", "f.json"], "f.json", "--json"),
    "bench policy": (["bench", "policy", "--json", "f.json"], "f.json", "--json"),
    "bench robot": (["bench", "robot", "--json", "f.json"], "f.json", "--json"),
    "bench scale": (["bench", "scale", "--out", "f.json"], "f.json", "--out"),
    "bench sim": (["bench", "sim", "--out", "f.json"], "f.json", "--out"),
}


@pytest.mark.parametrize("case", sorted(_RESULT_WRITERS))
def test_results_of_an_earlier_run_are_replaced_only_with_overwrite(case, havln_data, tmp_path, monkeypatch, capsys):
    """eval --out silently replaced an earlier run's results (export already asked for --overwrite);
    now every results writer refuses, before any work, naming its flag and --overwrite."""
    from havln_robot.cli import main

    args, kept, flag = _RESULT_WRITERS[case]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "in.json").write_text("{}")
    (tmp_path / "spec.yaml").write_text("episodes: 1\nbase: {split: val_seen}\ngrid:\n  policy: [forward]\n")
    (tmp_path / kept).write_text("earlier results")
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{flag} " in err[0] and "--overwrite" in err[0] and "Traceback" not in err[0], err
    assert (tmp_path / kept).read_text() == "earlier results"


def test_eval_overwrite_and_resume_choose_what_happens_to_earlier_results(havln_data, tmp_path, capsys):
    from havln_robot import eval as ev
    from havln_robot.cli import main

    out = tmp_path / "run"
    out.mkdir()
    (out / ev.PARTIAL_NAME).write_text("unfinished")
    assert main(["eval", "--policy", "forward", "--limit", "1", "--out", str(out), "-q"]) == 2  # a partial run is results too
    err = capsys.readouterr().err
    assert "--overwrite" in err and "--resume to continue" in err and (out / ev.PARTIAL_NAME).read_text() == "unfinished"
    (out / ev.PARTIAL_NAME).unlink()
    (out / "results.jsonl").write_text("earlier")
    assert main(["eval", "--policy", "forward", "--limit", "1", "--out", str(out), "-q", "--resume"]) == 2  # nothing to resume
    assert (out / "results.jsonl").read_text() == "earlier"
    assert main(["eval", "--policy", "forward", "--limit", "1", "--out", str(out), "-q", "--overwrite"]) == 0
    assert (out / "results.jsonl").read_text() != "earlier"


# --- a folder where a file is wanted (and the reverse), named as such -----------------------------


def _run_in(tmp_path, monkeypatch, capsys, *args) -> tuple[int, str]:
    """``havln-robot ARGS`` in-process in ``tmp_path``: (exit code, last stderr line)."""
    from havln_robot.cli import main

    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    try:
        rc = main([str(a) for a in args])
    except SystemExit as exc:  # argparse's ap.error
        rc = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err)
    return rc, (err[-1] if err else "")


@pytest.mark.parametrize(
    "args, words",
    [
        (["demo", "--episodes-file", "adir"], ["--episodes-file adir: is a folder, not a file"]),
        (["eval", "--episodes", "adir", "--limit", "1"], ["adir: is a folder, not a file", "--episodes FILE"]),
        (["eval", "--policy", "adir", "--limit", "1"], ["'adir': is a folder, not a file", ".pt file"]),
        (["eval", "--policy", "forward", "--limit", "1", "--baseline", "adir"], ["adir: is a folder, not a file"]),
        (["eval", "--policy", "forward", "--limit", "1", "--connectivity", "afile"], ["--connectivity afile: is a file, not a folder"]),
        (["train", "--train", "adir", "--out", "m.pt"], ["adir: is a folder, not a file", "--train FILE"]),
        (["replay", "adir"], ["adir: is a folder, not a file"]),
        (["export", "--runs", "adir", "--split", "val_seen"], ["adir: is a folder, not a file"]),
        (["export", "--trials", "adir", "--split", "val_seen"], ["--trials adir: is a folder, not a file"]),
        (["report", "--db", "adir"], ["--db adir: is a folder, not a file"]),
        (["trial", "--db", "adir", "list"], ["--db adir: is a folder, not a file"]),
        (["bench", "policy", "--skip-latency", "--model", "adir"], ["--model adir: is a folder, not a file"]),
        (["config", "adir"], ["adir: is a folder, not a file"]),
        (["launch", "adir"], ["adir: is a folder, not a file"]),
        (["trial", "plan", "adir"], ["adir: is a folder, not a file"]),
        (["bench", "motion", "--config", "adir"], ["adir: is a folder, not a file"]),
    ],
)
def test_a_folder_given_as_a_file_is_named_as_a_folder(args, words, havln_data, tmp_path, monkeypatch, capsys):
    """Before: "not found" / "no trial database here" / "cannot read (Is a directory)" for a folder
    that is there; now one rule (paths.input_file_problem) says what it is."""
    (tmp_path / "adir").mkdir()
    (tmp_path / "adir" / "inside.json").write_text("{}")
    (tmp_path / "afile").write_text("{}")
    rc, last = _run_in(tmp_path, monkeypatch, capsys, *args)
    assert rc == 2 and all(w in last for w in words) and "not found" not in last, last


def _node_param_errors(adir, afile):
    """What each node's file parameter says about a folder (or a file where a folder is wanted): label -> call."""
    from havln_robot.console.control import tls_problem
    from havln_robot.console.lookup import instruction_for
    from havln_robot.perception.people import AppearanceCheck
    from havln_robot.sim.session import open_episode
    from havln_robot.trials.store import TrialStore

    return {
        "sim_node.episodes_file": (
            lambda: open_episode({"scene_source": "episodes", "episodes_file": str(adir)}),
            f"episodes_file: {adir}: is a folder, not a file",
        ),
        "sim_node.connectivity_dir": (
            lambda: open_episode({"scene_source": "episodes", "episodes_file": str(afile), "connectivity_dir": str(afile)}),
            f"connectivity_dir: {afile}: is a file, not a folder",
        ),
        "console_node.episodes_file": (lambda: instruction_for(adir, "17"), f"episodes_file {adir}: is a folder, not a file"),
        "console_node.db_path": (lambda: TrialStore(adir, source="db_path").close(), f"{adir}: is a folder, not a file; give db_path"),
        "trial_logger_node.db_path": (
            lambda: TrialStore(adir, writer=True, source="db_path").close(),
            f"{adir}: is a folder, not a file; give db_path",
        ),
        "console_node.tls_certfile": (lambda: _raise(tls_problem(str(adir), "")), f"tls_certfile {adir}: is a folder, not a file"),
        "console_node.tls_keyfile": (lambda: _raise(tls_problem(str(afile), str(adir))), f"tls_keyfile {adir}: is a folder, not a file"),
        "people_node.appearance_model": (lambda: AppearanceCheck(str(adir)), f"appearance_model: {adir}: is a folder, not a file"),
    }


def _raise(problem):
    if problem:
        raise ValueError(problem)


_NODE_FILE_PARAMS = (
    "console_node.db_path",
    "console_node.episodes_file",
    "console_node.tls_certfile",
    "console_node.tls_keyfile",
    "people_node.appearance_model",
    "sim_node.connectivity_dir",
    "sim_node.episodes_file",
    "trial_logger_node.db_path",
)


@pytest.mark.parametrize("param", _NODE_FILE_PARAMS)
def test_a_folder_given_as_a_node_file_parameter_is_named_as_a_folder(param, tmp_path):
    """The node parameters said "not found" for a folder that is there (sim_node / console_node
    episodes_file; connectivity_dir given a file), or an error of another layer (a trial store: "unable to
    open database file"; TLS: "port taken?"); the one rule of the options (paths.input_file_problem /
    input_folder_problem) now names what is there."""
    adir, afile = tmp_path / "adir", tmp_path / "afile.json"
    adir.mkdir()
    afile.write_text("{}")
    calls = _node_param_errors(adir, afile)
    assert sorted(calls) == list(_NODE_FILE_PARAMS)
    call, words = calls[param]
    with pytest.raises(ValueError) as ei:
        call()
    msg = str(ei.value)
    assert words in msg and "not found" not in msg and "\n" not in msg, msg


def test_auto_scene_falls_back_naming_a_folder_given_as_the_episodes_file(tmp_path, monkeypatch):
    """scene_source auto with a folder as episodes_file ran the builtin scene saying "HA-VLN data not found";
    sim_node and launch / demo now say what is wrong with the parameter."""
    from havln_robot.bringup import no_data_overrides
    from havln_robot.config import load_profile
    from havln_robot.paths import REPO_ROOT
    from havln_robot.sim.session import open_episode

    adir = tmp_path / "adir"
    adir.mkdir()
    opened = open_episode({"scene_source": "auto", "episodes_file": str(adir)})
    assert opened.scene.name == "builtin" and opened.fallback and f"episodes_file {adir}: is a folder, not a file" in opened.note
    assert not open_episode({"scene_source": "builtin"}).fallback
    monkeypatch.setenv("HAVLN_DATA", "/nonexistent")
    over, warning = no_data_overrides(load_profile(REPO_ROOT / "config" / "sim.yaml", {"sim_node": {"episodes_file": str(adir)}}))
    assert over["sim_node"] == {"scene_source": "builtin"} and f"sim_node.episodes_file {adir}: is a folder, not a file" in warning


def test_export_trials_names_its_own_flag(tmp_path, monkeypatch, capsys):
    """export --trials named a --db flag it does not have."""
    import sqlite3

    rc, last = _run_in(tmp_path, monkeypatch, capsys, "export", "--trials", "nope.db", "--split", "val_seen")
    assert rc == 2 and "--trials nope.db" in last and "give --trials" in last and "--db" not in last, last
    with sqlite3.connect(tmp_path / "other.db") as c:
        c.execute("CREATE TABLE x (a)")
    rc, last = _run_in(tmp_path, monkeypatch, capsys, "export", "--trials", "other.db", "--split", "val_seen")
    assert rc == 2 and "not a trial database" in last and "give --trials another file" in last and "--db" not in last, last


# --- an empty value never silently means "all", "none" or "here" ---------------------------------


@pytest.mark.parametrize(
    "args, flag",
    [
        (["replay", "p.json", "--episodes", ""], "--episodes"),
        (["replay", "p.json", "--episodes", ","], "--episodes"),
        (["replay", "p.json", "--json", ""], "--json"),
        (["bench", "agreement", "--json", ""], "--json"),
        (["eval", "--out", ""], "--out"),
        (["eval", "--episodes", ""], "--episodes"),
        (["eval", "--baseline", ""], "--baseline"),
        (["data", "check", "--only", ""], "--only"),
        (["doctor", "--only", ""], "--only"),
        (["report", "--campaign", ""], "--campaign"),
        (["export", "--stop-only", "--out-dir", ""], "--out-dir"),
    ],
)
def test_an_empty_value_is_refused_naming_the_flag(args, flag, tmp_path, monkeypatch, capsys):
    """``replay --episodes ''`` replayed every episode, ``--json ''`` wrote nothing, ``eval --out ''``
    kept no results, ``data check --only ''`` checked everything: each now a one-line error."""
    (tmp_path / "p.json").write_text('{"format_version": 1, "split": "val_seen", "episodes": [{"episode_id": "1", "actions": ["STOP"]}]}')
    rc, last = _run_in(tmp_path, monkeypatch, capsys, *args)
    assert rc == 2 and flag in last and "empty" in last, last


def test_select_episodes_refuses_an_empty_selection():
    from havln_robot.challenge.format import SplitFile
    from havln_robot.challenge.replay import ReplayError, select_episodes

    sf = SplitFile("val_seen", {"1": ["STOP"], "2": ["STOP"]}, "val_seen.json")
    assert select_episodes(sf, None) == ["1", "2"]
    for spec in ("", " ", ",", " , "):
        with pytest.raises(ReplayError, match="empty selection"):
            select_episodes(sf, spec)
