"""A database whose user_version claims a trial store but whose tables are not one is refused with
one line (naming the file, what is missing, what to do), by every reader and writer."""

from __future__ import annotations

import sqlite3

import pytest

from havln_robot.trials import cli
from havln_robot.trials.store import SCHEMA_VERSION, TrialError, TrialStore


def _fake(path, version, sql="CREATE TABLE foo (x)"):
    db = sqlite3.connect(path)
    db.executescript(sql)
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("readonly", [True, False])
@pytest.mark.parametrize("version", [1, 2, SCHEMA_VERSION])
def test_a_foreign_database_with_a_trial_user_version_is_refused(tmp_path, version, readonly):
    p = _fake(tmp_path / "b.db", version)
    with pytest.raises(TrialError) as e:
        TrialStore(p, readonly=readonly, source="--db").close()
    msg = str(e.value)
    assert str(p) in msg and "not a trial database" in msg and "trials" in msg and "--db" in msg and "\n" not in msg
    tables = [r[0] for r in sqlite3.connect(p).execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert tables == ["foo"]  # nothing migrated into it


def test_a_missing_column_is_named(tmp_path):
    good = tmp_path / "good.db"
    TrialStore(good).close()
    db = sqlite3.connect(good)
    db.execute("ALTER TABLE trials DROP COLUMN notes")
    db.commit()
    db.close()
    with pytest.raises(TrialError, match="table trials lacks column notes"):
        TrialStore(good, readonly=True).close()


@pytest.mark.parametrize("cmd", [["list"], ["campaigns"], ["show", "1"], ["next"], ["end", "--failure"]])
def test_trial_commands_say_one_line(tmp_path, cmd, capsys):
    p = _fake(tmp_path / "b.db", SCHEMA_VERSION)
    rc = cli.main(["--db", str(p), *cmd])
    err = capsys.readouterr().err
    assert rc == 2 and "not a trial database" in err and str(p) in err and "Traceback" not in err


def test_a_real_store_still_opens(tmp_path):
    with TrialStore(tmp_path / "t.db") as st:
        st.start_trial("sim", "office")
    with TrialStore(tmp_path / "t.db", readonly=True) as st:
        assert len(st.trials()) == 1
