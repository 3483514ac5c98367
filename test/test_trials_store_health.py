"""Store health: a WAL that a reader keeps from being checkpointed is reported (logger log, doctor,
trial list, report); trial backup gives a complete copy while the reader is open; a report made from a
copy without its WAL says so inside report.md."""

from __future__ import annotations

import shutil
import sqlite3

from test_trials_session import Log  # the session tests' log stand-in

from havln_robot import doctor
from havln_robot.doctor import WARN
from havln_robot.records import EpisodeDone
from havln_robot.trials.cli import main as trial_main
from havln_robot.trials.report import write_report
from havln_robot.trials.session import SessionConfig, TrialMeta, TrialSession
from havln_robot.trials.store import TrialStore


def _trial(s, i):
    s.on_instruction(f"walk to door {i}")
    s.on_episode_done(EpisodeDone.from_values({"reason": "stop", "steps": 0, "actions": []}))


def test_a_reader_holding_the_store_is_reported_and_backup_stays_complete(tmp_path, capsys):
    db = tmp_path / "trials.db"
    log = Log()
    # a short busy timeout: a blocked TRUNCATE checkpoint waits that long for the reader
    st = TrialStore(db, writer=True, timeout_s=0.2)
    s = TrialSession(st, SessionConfig(auto_start=True, auto_end=True), lambda: TrialMeta({"region": "office"}, "go2"), log)
    try:
        for i in range(3):
            _trial(s, i)
        assert st.checkpoint_problem == "" and not [m for k, m in log.lines if k == "warning"]
        # a database browser: an open read transaction on the store
        browser = sqlite3.connect(str(db), isolation_level=None)
        browser.execute("BEGIN")
        browser.execute("SELECT COUNT(*) FROM trials").fetchone()
        for i in range(3, 12):
            _trial(s, i)
        warned = [m for k, m in log.lines if k == "warning"]
        assert len(warned) == 1 and "could not be checkpointed" in warned[0] and "read transaction" in warned[0]
        # trial list (a reader) says so, and the doctor
        capsys.readouterr()
        assert trial_main(["--db", str(db), "list"]) == 0
        assert "could not be checkpointed" in capsys.readouterr().err
        assert "could not be checkpointed" in (doctor._store_wal_problem(db) or "")
        ctx_nodes = {"trial_logger_node": {"db_path": str(db), "platform": "go2"}}
        from test_doctor import ctx_with

        ctx = ctx_with()
        ctx.nodes.update(ctx_nodes)
        # the logger holds the writer lock here: the doctor reports that first; the WAL line is the next check
        assert doctor.check_store(ctx).status in ("FAIL", WARN)
        # backup: complete while the reader is open
        assert trial_main(["--db", str(db), "backup", str(tmp_path / "backup.db")]) == 0
        with TrialStore(tmp_path / "backup.db", readonly=True) as b:
            assert len(b.trials()) == 12 and b.warning == ""
        # a copy of trials.db alone: the main file lacks the trials the WAL holds; its report says so
        shutil.copy(db, tmp_path / "copy.db")
        with TrialStore(tmp_path / "copy.db", readonly=True) as c:
            assert len(c.trials()) < 12 and c.warning
            write_report(c, tmp_path / "rep")
        md = (tmp_path / "rep" / "report.md").read_text()
        assert "Warning -- this report may be incomplete" in md and "without its -wal" in md
        browser.execute("COMMIT")
        browser.close()
        _trial(s, 12)
        assert st.checkpoint_problem == "" and any("checkpointed again" in m for k, m in log.lines if k == "info")
        with TrialStore(db, readonly=True) as ro:
            assert ro.warning == "" and ro.wal_problem() is None
    finally:
        st.close()
