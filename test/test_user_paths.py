"""One documented default place for trials and caches; the suite never touches the real home folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REAL_HOME, TEST_HOME

from havln_robot.paths import user_cache_root, user_data_root
from havln_robot.trials.params import TRIAL_LOGGER_PARAMS
from havln_robot.trials.store import PLATFORMS, TrialError, TrialStore, default_db_path, default_mcap_dir

REPO = Path(__file__).resolve().parent.parent


def test_the_suite_runs_in_a_temporary_home():
    assert Path.home() == TEST_HOME != REAL_HOME
    assert Path(os.path.expanduser("~")) == TEST_HOME
    for p in (user_data_root(), user_cache_root(), default_db_path("go2")):
        assert TEST_HOME in p.parents, p


def test_one_store_per_profile_under_the_user_data_folder():
    stores = {default_db_path(p) for p in PLATFORMS}
    assert len(stores) == len(PLATFORMS)
    for profile in PLATFORMS:
        db = default_db_path(profile)
        assert db == user_data_root() / "trials" / profile / "trials.db"
        assert default_mcap_dir(db) == db.parent / "mcap"
    assert default_db_path() == default_db_path("go2")
    with pytest.raises(TrialError, match="use one of"):
        default_db_path("go3")


def test_env_names_one_explicit_store(monkeypatch, tmp_path):
    monkeypatch.setenv("HAVLN_TRIALS_DB", str(tmp_path / "x.db"))
    assert default_db_path("sim") == default_db_path("go2") == tmp_path / "x.db"


def test_profiles_and_node_defaults_name_no_fixed_path():
    """Every profile leaves db_path / mcap_dir to the per-profile default (no ~/... path in any file)."""
    defaults = {p.name: p.default for p in TRIAL_LOGGER_PARAMS.params}
    assert defaults["db_path"] == "" and defaults["mcap_dir"] == ""
    for f in ("go2.yaml", "sim.yaml", "gazebo.yaml"):
        text = (REPO / "config" / f).read_text()
        assert "havln_trials" not in text and 'db_path: ""' in text and 'mcap_dir: ""' in text, f


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "havln_robot.cli", *args], capture_output=True, text=True, timeout=120, cwd=REPO)


def test_trial_cli_reads_the_profile_store():
    """`trial start --profile sim` writes the sim store; `trial list` without flags reads go2's and finds none."""
    r = _cli("trial", "--profile", "sim", "start", "--region", "office", "--instruction", "walk to the door")
    assert r.returncode == 0, r.stderr
    assert default_db_path("sim").is_file() and not default_db_path("go2").exists()
    r = _cli("trial", "--profile", "sim", "list")
    assert r.returncode == 0 and "office" in r.stdout, r.stdout + r.stderr
    r = _cli("trial", "list")
    assert r.returncode == 2 and "go2 profile's default store" in r.stderr and "Traceback" not in r.stderr
    with TrialStore(default_db_path("sim"), readonly=True) as st:
        assert len(st.trials()) == 1
