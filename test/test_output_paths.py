"""Output paths built from input data stay inside their folder: one helper
(havln_robot.paths.safe_component / safe_child) and a test per writer."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from havln_robot.paths import UnsafePathError, safe_child, safe_component

HOSTILE = ["../../escaped", "..", ".", "a/b", "a\\b", "x\x00y", "~root", "", "e" * 300]


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _cli(*args, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "havln_robot.cli", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


@pytest.mark.parametrize("name", HOSTILE)
def test_safe_component_refuses_names_that_leave_the_folder(name):
    with pytest.raises(UnsafePathError) as ei:
        safe_component(name, "split")
    assert "\n" not in str(ei.value) and str(ei.value).startswith("split ")


@pytest.mark.parametrize("name", ["val_seen", "HA_val_unseen.json", "ep-12.3", "trial_0001", "..hidden", "a..b", "épisode"])
def test_safe_component_accepts_plain_names(name):
    assert safe_component(name, "x") == name


def test_safe_child_refuses_a_link_that_leaves_the_folder(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "val_seen.json").symlink_to(elsewhere / "val_seen.json")
    with pytest.raises(UnsafePathError, match="outside"):
        safe_child(out, "val_seen.json", "split")
    (out / "inside").mkdir()
    (out / "ok.json").symlink_to(out / "inside" / "ok.json")
    assert safe_child(out, "ok.json", "split") == out / "ok.json"


# --- export -------------------------------------------------------------------------------------


@pytest.mark.parametrize("split", ["../../escaped", "../val_seen", "/tmp/abs", "sub/dir"])
def test_export_refuses_a_split_that_leaves_out_dir(tmp_path, split):
    runs = tmp_path / "in" / "runs.json"
    runs.parent.mkdir()
    runs.write_text(json.dumps([{"episode_id": "1", "actions": ["STOP"], "split": split}]))
    out = tmp_path / "a" / "b" / "out"
    out.mkdir(parents=True)
    before = _files(tmp_path)
    res = _cli("export", "--runs", str(runs), "--out-dir", str(out))
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "split" in lines[0] and repr(split) in lines[0], res.stderr
    assert _files(tmp_path) == before  # nothing written anywhere


def test_export_api_refuses_a_hostile_split(tmp_path):
    from havln_robot.challenge.export import ExportError, Record, export

    with pytest.raises(ExportError, match="escaped"):
        export([Record("1", ("STOP",), "../../escaped", "test")], tmp_path)
    with pytest.raises(ExportError, match="escaped"):
        export([Record("1", ("STOP",), None, "test")], tmp_path, split="../escaped")
    assert list(tmp_path.iterdir()) == []


# --- pack ---------------------------------------------------------------------------------------


def test_pack_writes_flat_members_whatever_the_split_says(tmp_path):
    """pack names zip members after the input files only; a hostile ``split`` value in a file never
    becomes a path (the packed zip is then refused by validation, nothing is written elsewhere)."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "val_seen.json").write_text(json.dumps({"format_version": 1, "split": "../../escaped", "episodes": []}))
    out = tmp_path / "out" / "submission.zip"
    before = _files(tmp_path)
    res = _cli("pack", str(src / "val_seen.json"), "-o", str(out), "--no-validate")
    after = _files(tmp_path) - before
    assert after <= {"out", "out/submission.zip"}, after
    if out.exists():
        with zipfile.ZipFile(out) as zf:
            assert zf.namelist() == ["val_seen.json"]
    else:
        assert res.returncode != 0 and len(res.stderr.strip().splitlines()) == 1


def test_default_data_paths_refuse_a_split_from_a_submission():
    from havln_robot.challenge.manifest import default_manifest_path
    from havln_robot.challenge.replay import default_episodes_file

    for f in (default_manifest_path, default_episodes_file):
        with pytest.raises(UnsafePathError):
            f("../../../etc/passwd")
        assert f("val_seen").name.endswith("val_seen.json")


# --- report -------------------------------------------------------------------------------------


def test_report_files_stay_in_out_whatever_the_trials_hold(tmp_path):
    from havln_robot.trials import report
    from havln_robot.trials.store import Step, TrialStore

    db = tmp_path / "trials.db"
    with TrialStore(db) as st:
        t = st.start_trial("go2", "kitchen", instruction="../../escaped", episode_id="../../escaped", scan="../../escaped", operator="../x")
        st.add_step(t.id, Step(seq=0, stamp=0.0, action="STOP", x=0.0, y=0.0, yaw=0.0))
        st.finish_trial(t.id, "stop")
        st.set_outcome(t.id, "failure", reason="../../escaped")
    out = tmp_path / "deep" / "report"
    before = _files(tmp_path)
    with TrialStore(db) as st:
        files = report.write_report(st, out)
    new = _files(tmp_path) - before
    assert all(n.startswith("deep") for n in new), new
    for p in files.values():
        assert Path(p).resolve().parent == out.resolve()


# --- demo ---------------------------------------------------------------------------------------


def test_demo_refuses_an_episode_id_that_leaves_out_before_any_work(tmp_path, havln_data):
    out = tmp_path / "a" / "b" / "demo"
    res = _cli("demo", "--episode-id", "../../../escaped", "--out", str(out), timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "episode id" in res.stderr
    assert not (tmp_path / "escaped.png").exists() and not any(tmp_path.rglob("*escaped*"))


# --- MCAP bags ----------------------------------------------------------------------------------


def test_mcap_bag_dir_is_built_from_the_integer_trial_id_only(tmp_path):
    from havln_robot.trials.recorder import RecorderError, mcap_bag_dir

    assert mcap_bag_dir(tmp_path, 7) == tmp_path / "trial_0007"
    for bad in ("../../escaped", "7", True, -1, 1.5, None):
        with pytest.raises(RecorderError):
            mcap_bag_dir(tmp_path, bad)
    (tmp_path / "trial_0008").symlink_to(tmp_path.parent)
    with pytest.raises(RecorderError, match="outside"):
        mcap_bag_dir(tmp_path, 8)


# --- scans (connectivity + scene cache) ---------------------------------------------------------


def test_scan_ids_cannot_leave_the_connectivity_or_cache_folders(tmp_path):
    from havln_robot.episodes import EpisodeError, viewpoint_positions
    from havln_robot.sim.scene import Scene, SceneError

    for scan in ("../../escaped", "a/b", ".."):
        with pytest.raises(SceneError, match="scan"):
            Scene.load(scan, connectivity_dir=tmp_path, cache_dir=tmp_path / "cache")
        with pytest.raises(EpisodeError, match="scan"):
            viewpoint_positions(scan, tmp_path)
    assert not (tmp_path / "cache").exists()


def test_a_planted_scene_cache_runs_nothing(tmp_path, havln_data):
    """The scene cache is read by an unpickler that resolves only the scene's own data classes."""
    from havln_robot.sim import scene as scene_mod
    from havln_robot.sim.scene import Scene

    scene_mod._MEMO.clear()  # an earlier test may hold this scan in memory: read it from the cache file
    cache = tmp_path / "cache"
    scene = Scene.load("17DRP5sb8fy", connectivity_dir=havln_data / "connectivity", cache_dir=cache)
    (pkl,) = list(cache.glob("17DRP5sb8fy_*.pkl"))
    marker = tmp_path / "PWNED"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    pkl.write_bytes(pickle.dumps(Evil()))
    import havln_robot.sim.scene as scene_mod

    scene_mod._MEMO.clear()
    again = Scene.load("17DRP5sb8fy", connectivity_dir=havln_data / "connectivity", cache_dir=cache)
    assert not marker.exists()
    assert len(again.viewpoints) == len(scene.viewpoints)
    scene_mod._MEMO.clear()
    assert len(Scene.load("17DRP5sb8fy", connectivity_dir=havln_data / "connectivity", cache_dir=cache).viewpoints) == len(scene.viewpoints)


def test_atomic_outputs_never_replace_a_device_or_pipe(tmp_path, capsys):
    """pack -o and trial backup write a temporary file and rename it over the output: over /dev/null or
    /dev/full that replaced the device node itself (as root: for every process on the machine). A FIFO
    stands in for the device here (no root needed)."""
    import stat

    from havln_robot.challenge.format import write_split_file
    from havln_robot.cli import main as cli_main
    from havln_robot.trials.store import TrialError, TrialStore

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    d = tmp_path / "preds"
    d.mkdir()
    write_split_file(d / "val_seen.json", "val_seen", {"1": ["STOP"]})
    assert cli_main(["pack", str(d), "-o", str(fifo), "--no-validate"]) == 2
    assert "-o" in capsys.readouterr().err
    db = tmp_path / "trials.db"
    with TrialStore(db) as st:
        with pytest.raises(TrialError, match="not a regular file"):
            st.backup(fifo, overwrite=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the pipe was replaced by a file"
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_a_folder_given_as_an_output_file_suggests_a_name_of_the_right_kind(tmp_path, capsys):
    """pack -o FOLDER suggested 'FOLDER/out.json' for a zip (a re-check found it)."""
    from havln_robot.cli import main as top_main

    (tmp_path / "z").mkdir()
    assert top_main(["pack", str(tmp_path), "-o", str(tmp_path / "z")]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "submission.zip" in err and "out.json" not in err
