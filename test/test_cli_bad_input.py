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
    _one_line_error(_export_reference(havln_data, 1, predictions.parent), "already exist", "--overwrite")
    assert predictions.read_bytes() == before
    assert _export_reference(havln_data, 1, predictions.parent, "--overwrite").returncode == 0
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
