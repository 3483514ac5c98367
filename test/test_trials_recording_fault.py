"""A recording fault never leaves the robot working unrecorded: the bag is closed readable, the trial
goes on in the store with a visible marker (logger line, trial list / show, report)."""

from __future__ import annotations

import os
import subprocess

import pytest
from test_trials_session import Log  # the session tests' log stand-in

from havln_robot.records import ActionResult
from havln_robot.trials import cli
from havln_robot.trials.recorder import McapRecorder
from havln_robot.trials.report import write_report
from havln_robot.trials.session import SessionConfig, TrialMeta, TrialSession
from havln_robot.trials.store import TrialStore


def _read_all(path):
    from mcap.reader import NonSeekingReader

    with open(path, "rb") as f:
        return sum(1 for _ in NonSeekingReader(f).iter_messages())


def _fill(rec, n=100_000):
    written = 0
    with pytest.raises(OSError):
        for i in range(n):
            rec.write_serialized("/havln/instruction", "std_msgs/msg/String", os.urandom(3000), 1_000_000 * (i + 1))
            written += 1
    return written


def test_bag_on_a_full_1mb_volume_is_closed_readable(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a 1 MB tmpfs needs root")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=False).returncode != 0:
        pytest.skip("tmpfs mount refused here")
    try:
        rec = McapRecorder(mnt / "trial_0001", compression="none", chunk_size=64 * 1024)
        written = _fill(rec)
        assert rec.fault is not None and rec.stopped and written > 100
        assert rec.write_serialized("/havln/instruction", "std_msgs/msg/String", b"x", 1) is False  # stopped, no raise
        rec.close()
        bag = mnt / "trial_0001" / "trial_0001_0.mcap"
        n = _read_all(bag)
        assert 0 < n <= written  # whole records only; the unwritten chunk is lost
        assert (mnt / "trial_0001" / "metadata.yaml").is_file() and not (mnt / "trial_0001" / ".reserve").exists()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_injected_write_error_closes_the_bag_indexed(tmp_path, monkeypatch):
    from havln_robot.trials import faults

    faults.reset()
    monkeypatch.setenv(faults.ENV, "mcap:50")
    rec = McapRecorder(tmp_path / "trial_0001", compression="none", chunk_size=16 * 1024)
    assert _fill(rec) == 50
    rec.close()
    faults.reset()
    from mcap.reader import make_reader

    with open(tmp_path / "trial_0001" / "trial_0001_0.mcap", "rb") as f:
        reader = make_reader(f)
        assert reader.get_summary() is not None and sum(1 for _ in reader.iter_messages()) == 50


def test_trial_goes_on_in_the_store_marked(tmp_path, capsys):
    log = Log()
    st = TrialStore(tmp_path / "trials.db")
    s = TrialSession(st, SessionConfig(auto_start=True), lambda: TrialMeta({"region": "office"}, "go2"), log)
    s.on_instruction("walk to the window")
    for i in range(3):
        s.on_result(ActionResult(i + 1, "MOVE_FORWARD", "ok", x=0.25 * i, y=0.0, yaw_deg=0.0), float(i))
    s.recording_fault("disk full (/media/bags/trial_0001/trial_0001_0.mcap)")
    for i in range(3, 6):
        s.on_result(ActionResult(i + 1, "MOVE_FORWARD", "ok", x=0.25 * i, y=0.0, yaw_deg=0.0), float(i))
    t = st.trial(s.trial.id)
    assert t.state == "running" and st.step_count(t.id) == 6  # not aborted: recorded on in SQLite
    assert t.recording_fault.startswith("MCAP bag stopped after step 3: disk full")
    errors = [m for k, m in log.lines if k == "error"]
    assert len(errors) == 1 and "recording fault" in errors[0] and "goes on" in errors[0]
    st.set_outcome(t.id, "failure", reason="wrong room", ne_m=4.0)
    db = str(tmp_path / "trials.db")
    capsys.readouterr()
    assert cli.main(["--db", db, "list"]) == 0
    out = capsys.readouterr().out
    assert "failure!" in out and "!: recording fault" in out
    assert cli.main(["--db", db, "show", str(t.id)]) == 0
    assert "RECORDING FAULT: MCAP bag stopped after step 3" in capsys.readouterr().out
    write_report(st, tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "**Recording fault**" in md and "recording fault: MCAP bag stopped after step 3" in md
    st.close()
