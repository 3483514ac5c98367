"""havln-robot export / pack: run files and logged trials → format-v1 files → a flat zip that validates."""

from __future__ import annotations

import json
import zipfile

import pytest

from havln_robot.challenge.cli import export_main, pack_main, validate_main
from havln_robot.challenge.export import ExportError, export, read_run_file
from havln_robot.challenge.format import FormatError, read_split_file, write_split_file
from havln_robot.challenge.manifest import load_manifest
from havln_robot.challenge.pack import PackError, pack


@pytest.fixture
def manifest_args(tmp_path):
    a = tmp_path / "seen_ids.json"
    b = tmp_path / "unseen_ids.json"
    a.write_text(json.dumps({"1": 0, "2": 1, "3": 0}))
    b.write_text(json.dumps(["1", "2"]))
    return ["--manifest", f"val_seen={a}", "--manifest", f"val_unseen={b}"]


def test_run_file_shapes_are_read(tmp_path):
    recs = [{"episode_id": "1", "actions": ["MOVE_FORWARD", "STOP"], "split": "val_seen"}, {"episode_id": 2, "actions": ["STOP"]}]
    (tmp_path / "list.json").write_text(json.dumps(recs))
    (tmp_path / "map.json").write_text(json.dumps({"split": "val_unseen", "episodes": {"7": ["STOP"]}}))
    (tmp_path / "lines.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    a = read_run_file(tmp_path / "list.json")
    assert [(r.episode_id, r.split, r.actions) for r in a] == [("1", "val_seen", ("MOVE_FORWARD", "STOP")), ("2", None, ("STOP",))]
    b = read_run_file(tmp_path / "map.json")
    assert [(r.episode_id, r.split) for r in b] == [("7", "val_unseen")]
    assert [r.episode_id for r in read_run_file(tmp_path / "lines.jsonl")] == ["1", "2"]
    (tmp_path / "bad.json").write_text(json.dumps([{"id": 1}]))
    with pytest.raises(ExportError, match="needs 'episode_id' and 'actions'"):
        read_run_file(tmp_path / "bad.json")
    (tmp_path / "junk.json").write_bytes(b"\xff\xfe garbage")
    with pytest.raises(ExportError):
        read_run_file(tmp_path / "junk.json")


def test_export_finalizes_raw_logs_and_reports_coverage(tmp_path):
    m = tmp_path / "ids.json"
    m.write_text(json.dumps(["1", "2", "3", "4"]))
    man = load_manifest(m, "val_seen")
    runs = tmp_path / "runs.json"
    runs.write_text(
        json.dumps(
            [
                {"episode_id": "1", "actions": ["MOVE_FORWARD", "STOP", "TURN_LEFT"]},  # cut after STOP
                {"episode_id": "2", "actions": ["TURN_LEFT"] * 520},  # cut at 500
                {"episode_id": "3", "actions": ["MOVE_FORWARD"]},  # aborted: STOP appended
                {"episode_id": "99", "actions": ["STOP"]},
            ]
        )
    )
    s = export(read_run_file(runs), tmp_path / "out", split="val_seen", manifests={"val_seen": man})
    assert s.finalized == {"val_seen": 3} and s.missing == {"val_seen": ["4"]} and s.unknown == {"val_seen": ["99"]}
    sf = read_split_file(tmp_path / "out" / "val_seen.json")
    assert sf.episodes["1"] == ["MOVE_FORWARD", "STOP"]
    assert sf.episodes["2"] == ["TURN_LEFT"] * 500
    assert sf.episodes["3"] == ["MOVE_FORWARD", "STOP"]
    assert list(sf.episodes) == ["1", "2", "3", "99"]
    lines = "\n".join(s.lines())
    assert "1 manifest id(s) still missing" in lines and "not in the manifest" in lines


def test_export_cli_pack_validate_roundtrip(tmp_path, manifest_args, capsys):
    runs = tmp_path / "eval.json"
    runs.write_text(json.dumps([{"episode_id": "2", "actions": ["MOVE_FORWARD", "TURN_RIGHT", "STOP"], "split": "val_seen"}]))
    out = tmp_path / "bundle"
    rc = export_main(["--runs", str(runs), "--out-dir", str(out), "--fill-missing", *manifest_args])
    assert rc == 0
    assert not (out / "val_unseen.json").exists()
    assert export_main(["--stop-only", "--split", "val_unseen", "--out-dir", str(out), *manifest_args]) == 0
    assert read_split_file(out / "val_seen.json").episodes == {"1": ["STOP"], "2": ["MOVE_FORWARD", "TURN_RIGHT", "STOP"], "3": ["STOP"]}
    assert pack_main([str(out), "-o", str(tmp_path / "sub.zip"), *manifest_args]) == 0
    assert "PASS:" in capsys.readouterr().out
    assert validate_main([str(tmp_path / "sub.zip"), *manifest_args]) == 0


def test_export_from_trial_store(tmp_path, manifest_args):
    store_mod = pytest.importorskip("havln_robot.trials.store")
    db = tmp_path / "trials.db"
    with store_mod.TrialStore(db) as st:
        t1 = st.start_trial("sim", episode_id="1", instruction="walk to the sofa")
        for a in ["MOVE_FORWARD", "TURN_LEFT", "MOVE_FORWARD"]:
            st.add_step(t1.id, {"stamp": 0.0, "action": a, "outcome": "ok"})
        st.add_step(t1.id, {"stamp": 0.0, "action": "TURN_LEFT", "outcome": "rejected"})
        st.finish_trial(t1.id, "aborted")
        t2 = st.start_trial("go2", instruction="free-form run, no episode id")
        st.add_step(t2.id, {"stamp": 0.0, "action": "STOP", "outcome": "ok"})
        st.finish_trial(t2.id, "stop")
    out = tmp_path / "o"
    assert export_main(["--trials", str(db), "--split", "val_seen", "--out-dir", str(out), "--fill-missing", *manifest_args]) == 0
    eps = read_split_file(out / "val_seen.json").episodes
    assert eps["1"] == ["MOVE_FORWARD", "TURN_LEFT", "MOVE_FORWARD", "STOP"]  # rejected action dropped, STOP appended
    assert set(eps) == {"1", "2", "3"}
    assert export_main(["--trials", str(db), "--out-dir", str(out)]) == 2  # split required
    assert export_main(["--trials", str(tmp_path / "absent.db"), "--split", "val_seen", "--out-dir", str(out)]) == 2


def test_export_errors_are_one_line(tmp_path, capsys):
    assert export_main([]) == 2
    runs = tmp_path / "r.json"
    runs.write_text(json.dumps([{"episode_id": "1", "actions": ["FLY"]}]))
    assert export_main(["--runs", str(runs), "--split", "val_seen", "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown action 'FLY'" in err and "Traceback" not in err
    runs.write_text(json.dumps([{"episode_id": "1", "actions": ["STOP"]}]))
    assert export_main(["--runs", str(runs), "--out-dir", str(tmp_path)]) == 2
    assert "names no split" in capsys.readouterr().err


def test_pack_is_flat_deterministic_and_refuses_bad_input(tmp_path):
    a = write_split_file(tmp_path / "a" / "val_seen.json", "val_seen", {"1": ["STOP"]})
    b = write_split_file(tmp_path / "b" / "val_unseen.json", "val_unseen", {"1": ["STOP"]})
    z1 = pack([a, b], tmp_path / "1.zip")
    z2 = pack([a, b], tmp_path / "2.zip")
    assert z1.read_bytes() == z2.read_bytes()
    with zipfile.ZipFile(z1) as zf:
        assert zf.namelist() == ["val_seen.json", "val_unseen.json"]
        assert all((i.external_attr >> 16) == 0o100644 for i in zf.infolist())
    c = write_split_file(tmp_path / "c" / "val_seen.json", "val_seen", {"1": ["STOP"]})
    with pytest.raises(PackError, match="same name"):
        pack([a, c], tmp_path / "x.zip")
    d = write_split_file(tmp_path / "d" / "other.json", "val_seen", {"1": ["STOP"]})
    with pytest.raises(PackError, match="both have split"):
        pack([a, d], tmp_path / "x.zip")
    (tmp_path / "e").mkdir()
    bad = tmp_path / "e" / "val_unseen.json"
    bad.write_text(json.dumps({"format_version": 1, "split": "val_unseen", "episodes": [{"episode_id": "1", "actions": ["STOP", "STOP"]}]}))
    with pytest.raises(PackError, match="stop-once"):
        pack([a, bad], tmp_path / "x.zip")
    assert not (tmp_path / "x.zip").exists()
    with pytest.raises(FormatError, match="stop-last"):
        write_split_file(tmp_path / "f.json", "val_seen", {"1": ["MOVE_FORWARD"]})
