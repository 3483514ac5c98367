"""The trial database and campaign data are not trusted: names resolved strictly, values checked on load,
free text escaped when printed."""

from __future__ import annotations

import sqlite3

import pytest

from havln_robot.cli import main as top_main
from havln_robot.trials import cli

PLAN = "campaign: atk\ntrials:\n  - {region: office, people: 0}\n"


@pytest.fixture
def planned_db(tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text(PLAN)
    db = str(tmp_path / "c.db")
    assert cli.main(["--db", db, "plan", str(plan)]) == 0
    return db


def test_start_campaign_without_next_attaches_or_refuses(planned_db, capsys):
    assert cli.main(["--db", planned_db, "start", "--campaign", "atkk", "--region", "office"]) == 2
    err = capsys.readouterr().err
    assert "campaign 'atkk': not found" in err and "atk" in err and err.count("\n") == 1
    assert cli.main(["--db", planned_db, "start", "--campaign", "atk", "--region", "office"]) == 0
    with sqlite3.connect(planned_db) as db:
        assert db.execute("SELECT id, campaign_id FROM trials").fetchall() == [(1, 1)]


@pytest.mark.parametrize(
    "argv",
    [
        ["trial", "--db", "{db}", "list", "--campaign", "{big}"],
        ["trial", "--db", "{db}", "next", "--campaign", "{big}"],
        ["report", "--db", "{db}", "--campaign", "{big}", "--out", "{tmp}/r"],
        ["export", "--trials", "{db}", "--campaign", "{big}", "--split", "val_seen", "--out-dir", "{tmp}/o"],
    ],
    ids=["list", "next", "report", "export"],
)
@pytest.mark.parametrize("big", ["99999999999999999999", "9223372036854775808", "\u00b2"])
def test_campaign_id_past_64_bits_is_not_found_not_a_traceback(planned_db, tmp_path, capsys, argv, big):
    args = [a.format(db=planned_db, big=big, tmp=tmp_path) for a in argv]
    assert top_main(args) == 2
    err = capsys.readouterr().err
    assert "not found; known campaigns: atk" in err and err.count("\n") == 1


@pytest.fixture
def judged_db(tmp_path):
    from havln_robot.trials.store import TrialStore

    db = tmp_path / "x.db"
    with TrialStore(db) as st:
        t = st.start_trial("go2", "office", goal_x=4.0, goal_y=0.0)
        st.add_step(t.id, {"stamp": 1.0, "action": "MOVE_FORWARD", "outcome": "ok", "x": 0.25, "y": 0.0, "yaw": 0.0})
        st.add_collision(t.id, {"step_seq": 0, "stamp": 1.0, "type": "human"})
        st.set_outcome(t.id, "failure", ne_m=3.75)
    return db


CORRUPT = [
    ("store_state", "trials", "'x'", "id 1", "'x'"),
    ("store_state", "checkpointed", "'noon'", "id 1", "'noon'"),
    ("trials", "started", "'yesterday'", "id 1", "'yesterday'"),
    ("trials", "people_present", "'many'", "id 1", "'many'"),
    ("trials", "people_present", "-2", "id 1", "-2"),
    ("trials", "goal_radius", "'big'", "id 1", "'big'"),
    ("trials", "goal_radius", "0", "id 1", "0.0"),
    ("trials", "ne_m", "1e999", "id 1", "inf"),
    ("trials", "ne_m", "'abc'", "id 1", "'abc'"),
    ("trials", "verdict_forced", "'yes'", "id 1", "'yes'"),
    ("trials", "agent_summary", "'not json'", "id 1", "'not json'"),
    ("trials", "instruction", "x'00ff'", "id 1", "b'"),
    ("steps", "result", "'not json'", "trial 1 seq 0", "'not json'"),
    ("steps", "x", "'left'", "trial 1 seq 0", "'left'"),
    ("collisions", "detail", "'[1]'", "id 1", "'[1]'"),
    ("collisions", "stamp", "'x'", "id 1", "'x'"),
]
COMMANDS = [
    ["trial", "--db", "{db}", "list"],
    ["trial", "--db", "{db}", "show", "1"],
    ["report", "--db", "{db}", "--out", "{tmp}/r"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=["list", "show", "report"])
@pytest.mark.parametrize(("table", "col", "sql", "row", "shown"), CORRUPT, ids=[f"{c[1]}={c[2]}" for c in CORRUPT])
def test_mistyped_database_value_is_one_line_naming_table_row_column(judged_db, tmp_path, capsys, argv, table, col, sql, row, shown):
    with sqlite3.connect(judged_db) as db:
        db.execute("PRAGMA ignore_check_constraints = ON")  # a crafted file has no CHECK to stop it
        db.execute(f"UPDATE {table} SET {col} = {sql}")
    if table in ("steps", "collisions") and argv[-1] == "list":
        pytest.skip("trial list reads no steps or collisions")
    assert top_main([a.format(db=judged_db, tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{judged_db}: table {table}, {row}" in err and f"column {col} holds {shown}" in err and "restore a backup" in err


def test_export_takes_only_finished_trials_and_names_the_ones_left_out(tmp_path, capsys):
    import json

    from havln_robot.challenge.export import trial_records
    from havln_robot.trials.store import TrialStore

    db = tmp_path / "e.db"
    with TrialStore(db) as st:

        def trial(eid, actions, verdict=None, finish=True):
            t = st.start_trial("sim", region="office", episode_id=eid)
            for a in actions:
                st.add_step(t.id, {"stamp": 1.0, "action": a, "outcome": "done"})
            if finish:
                st.finish_trial(t.id, "stop")
            if verdict:
                st.set_outcome(t.id, verdict, reason="estop")

        trial("1", ["MOVE_FORWARD"] * 10 + ["STOP"], "success")
        trial("1", ["MOVE_FORWARD"] * 2, "aborted")  # a later aborted re-run must not replace it
        trial("2", ["TURN_LEFT", "STOP"])  # finished, awaiting a verdict: exported
        trial("3", ["MOVE_FORWARD"] * 3, finish=False)  # still running: not exported
    notes: list[str] = []
    recs = trial_records(db, split="val_seen", notes=notes)
    assert [(r.episode_id, len(r.actions)) for r in recs] == [("1", 11), ("2", 2)]
    assert len(notes) == 1 and "left out 2 trials" in notes[0] and "aborted: trial id 2" in notes[0] and "running: trial id 4" in notes[0]
    assert top_main(["export", "--trials", str(db), "--split", "val_seen", "--out-dir", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "left out 2 trials" in err
    eps = {e["episode_id"]: e["actions"] for e in json.loads((tmp_path / "o" / "val_seen.json").read_text())["episodes"]}
    assert eps == {"1": ["MOVE_FORWARD"] * 10 + ["STOP"], "2": ["TURN_LEFT", "STOP"]}


EVIL_INSTRUCTION = "go\x1b]0;PWNED\x07\x1b[31mRED\rOVER\u202e"
EVIL_REASON = "r\x1b[1A\x1b[2Kfake\n| 99 | fake row |"


def _no_controls(text: str) -> bool:
    return not any((ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in text)


def test_terminal_safe_and_md_cell_escape_every_control_character():
    from havln_robot.text import md_cell, terminal_safe

    assert terminal_safe("plain text, ü ✓") == "plain text, ü ✓"
    assert terminal_safe(EVIL_INSTRUCTION) == "go\\x1b]0;PWNED\\x07\\x1b[31mRED\\rOVER\\u202e"
    assert terminal_safe("a\nb\tc\x7f\x9b") == "a\\nb\\tc\\x7f\\x9b"
    assert md_cell(EVIL_REASON) == "r\\x1b[1A\\x1b[2Kfake\\n\\| 99 \\| fake row \\|"
    for ch in map(chr, range(0x3000)):
        assert _no_controls(terminal_safe(ch).replace("\n", ""))


@pytest.mark.parametrize(
    "argv",
    [["trial", "--db", "{db}", "show", "1"], ["trial", "--db", "{db}", "show", "1", "--steps"], ["trial", "--db", "{db}", "next"]],
    ids=["show", "show-steps", "next"],
)
def test_free_text_from_the_database_is_printed_escaped(tmp_path, capsys, argv):
    from havln_robot.trials.store import PlannedTrial, TrialStore

    db = tmp_path / "esc.db"
    with TrialStore(db) as st:
        st.import_plan("c\x1b[2J", [PlannedTrial(seq=0, platform="go2", region="office", instruction=EVIL_INSTRUCTION)])
        t = st.start_trial("go2", "office", instruction=EVIL_INSTRUCTION, operator="op\x1b[8m", notes="n\r")
        st.add_step(t.id, {"stamp": 1.0, "action": "MOVE_FORWARD", "outcome": "ok\x1b[5m"})
        st.set_outcome(t.id, "failure", reason=EVIL_REASON)
    capsys.readouterr()
    assert top_main([a.format(db=db) for a in argv]) == 0
    out = capsys.readouterr().out
    assert _no_controls(out) and "\\x1b" in out
    assert "fake row" not in out or "\\n| 99" in out


def test_start_echo_and_report_md_escape_free_text(tmp_path, capsys):
    db = str(tmp_path / "esc.db")
    assert cli.main(["--db", db, "start", "--region", "office", "--instruction", EVIL_INSTRUCTION]) == 0
    assert cli.main(["--db", db, "end", "--failure", "--reason", EVIL_REASON]) == 0
    out = capsys.readouterr().out
    assert _no_controls(out) and "go\\x1b]0;PWNED" in out
    assert top_main(["report", "--db", db, "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "report.md").read_text()
    assert _no_controls(md)
    rows = [line for line in md.splitlines() if line.startswith("| 1 |")]
    assert len(rows) == 1 and "\\n\\| 99 \\| fake row \\|" in rows[0]
    assert not any(line.startswith("| 99 |") for line in md.splitlines())


@pytest.mark.parametrize("how", ["sqlite", "oserror"])
def test_backup_to_a_full_disk_names_the_target_not_the_store(tmp_path, how):
    import errno

    from havln_robot.trials.store import DiskFull, TrialStore

    src = tmp_path / "trials.db"
    dst = tmp_path / "full" / "b.db"
    dst.parent.mkdir()
    with TrialStore(src) as st:
        st.start_trial("go2", "office")
        real = st._db

        class Full:
            def __getattr__(self, name):
                return getattr(real, name)

            def backup(self, target):
                if how == "oserror":
                    raise OSError(errno.ENOSPC, "No space left on device")
                exc = sqlite3.OperationalError("database or disk is full")
                exc.sqlite_errorcode = 13
                raise exc

        st._db = Full()
        try:
            with pytest.raises(DiskFull) as ei:
                st.backup(dst)
        finally:
            st._db = real
    msg = str(ei.value)
    assert msg.startswith(f"{dst}: disk full") and f"disk of {dst.parent}" in msg and "\n" not in msg
    assert not dst.exists() and list(dst.parent.iterdir()) == []


def test_add_step_ignores_seq_and_names_unknown_fields(tmp_path):
    """A mapping with 'seq' was a TypeError although seq is documented as ignored; an unknown key
    was a TypeError too (a re-check found both)."""
    from havln_robot.trials.store import TrialError, TrialStore

    with TrialStore(tmp_path / "t.db", writer=True) as st:
        t = st.start_trial("sim", region="office")
        s = st.add_step(t.id, {"seq": 41, "stamp": 0.0, "action": "STOP"})
        assert s.seq == 0
        with pytest.raises(TrialError, match=r"step: unknown field\(s\) speed"):
            st.add_step(t.id, {"stamp": 0.0, "action": "STOP", "speed": 1})


def test_a_report_that_writes_nothing_leaves_no_folder_it_made(tmp_path, capsys):
    """A failed report said --out 'was left as it was' but left the empty folder it had made."""
    from havln_robot.trials.report import main as report_main

    db = tmp_path / "t.db"
    assert top_main(["trial", "--db", str(db), "start", "--region", "office"]) == 0
    assert top_main(["trial", "--db", str(db), "end", "--success", "--ne", "1"]) == 0
    out = tmp_path / "new_report"
    assert report_main(["--db", str(db), "--out", str(out), "--campaign", "nosuch"]) == 2
    assert not out.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    assert report_main(["--db", str(db), "--out", str(kept), "--campaign", "nosuch"]) == 2
    assert kept.is_dir()  # a folder the user had stays


EVIL_NOTES = "chair\x1b[2J moved\nby | bob"


def test_notes_are_shown_by_next_start_show_and_the_report(tmp_path, capsys):
    """``trial start --notes`` stored the notes but nothing showed them: not trial show, not trial next
    (a plan row's notes), not report.md nor trials.csv. They are shown now, escaped like all free text."""
    import csv

    from havln_robot.trials.store import PlannedTrial, TrialStore

    db = tmp_path / "n.db"
    with TrialStore(db) as st:
        st.import_plan("c", [PlannedTrial(seq=0, platform="go2", region="office", notes="bring\x1b[31m the chair")])
    assert cli.main(["--db", str(db), "next"]) == 0
    out = capsys.readouterr().out
    assert _no_controls(out) and "notes: bring\\x1b[31m the chair" in out
    assert cli.main(["--db", str(db), "start", "--region", "office", "--notes", EVIL_NOTES]) == 0
    out = capsys.readouterr().out
    assert _no_controls(out) and "notes: chair\\x1b[2J moved\\nby | bob" in out
    assert cli.main(["--db", str(db), "end", "--failure", "--reason", "lost"]) == 0
    capsys.readouterr()
    assert cli.main(["--db", str(db), "show", "1"]) == 0
    out = capsys.readouterr().out
    assert _no_controls(out) and "notes: chair\\x1b[2J moved\\nby | bob" in out
    assert top_main(["report", "--db", str(db), "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "report.md").read_text()
    head = next(line for line in md.splitlines() if line.startswith("| id |"))
    row = next(line for line in md.splitlines() if line.startswith("| 1 |"))
    assert head.rstrip(" |").endswith("notes") and row.rstrip(" |").endswith("chair\\x1b[2J moved\\nby \\| bob")
    with open(tmp_path / "r" / "trials.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["notes"].startswith("chair") and rows[0]["notes"].endswith("by | bob")


def test_csv_text_escapes_controls_and_defuses_formulas():
    """The one rule for a free-text CSV cell (text.csv_text): control characters escaped as terminal_safe
    shows them (one row per line, no ESC/NUL in a spreadsheet), a leading = + - @ prefixed with '."""
    from havln_robot.text import csv_text, terminal_safe

    assert csv_text("plain, text ü") == "plain, text ü"
    assert csv_text("a\nb\r\x00c\x1b[31m\u202e") == "a\\nb\\r\\x00c\\x1b[31m\\u202e" == terminal_safe("a\nb\r\x00c\x1b[31m\u202e")
    for lead in ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20"):
        assert csv_text(f'{lead}HYPERLINK("http://x")') == f'\'{lead}HYPERLINK("http://x")'
    assert csv_text("\t=1+1") == "\\t=1+1"  # escaped first: a tab no longer leads the cell
    assert csv_text(None) == "" and csv_text("") == ""
    for ch in map(chr, range(0x3000)):
        assert _no_controls(csv_text(f"x{ch}y").replace("\n", ""))


def test_trials_csv_holds_no_control_character_nor_a_formula(tmp_path):
    """trials.csv (and success_by_region.csv) kept ESC, CR, LF, NUL of notes, reasons and instructions in
    their cells -- a row over several lines, escapes for the terminal that cats it -- and a cell starting
    with '=' opened as a formula in a spreadsheet."""
    import csv

    from havln_robot.trials.store import TrialStore

    db = tmp_path / "c.db"
    with TrialStore(db) as st:
        t = st.start_trial(
            "go2", "office", instruction='=HYPERLINK("http://x","go")', operator="@op\x00", notes=EVIL_NOTES, instance="+1", goal_x=-1.5,
            goal_y=2.0,
        )  # fmt: skip
        st.finish_trial(t.id, "stop")
        st.set_outcome(t.id, "failure", reason="-" + EVIL_REASON)
    assert top_main(["report", "--db", str(db), "--out", str(tmp_path / "r")]) == 0
    for name in ("trials.csv", "success_by_region.csv"):
        raw = (tmp_path / "r" / name).read_bytes().decode("utf-8")
        lines = raw.split("\r\n")
        assert lines[-1] == "" and all(_no_controls(line) and "\n" not in line for line in lines), name
    raw = (tmp_path / "r" / "trials.csv").read_bytes().decode("utf-8")
    assert raw.count("\r\n") == 2  # the header and one row
    with open(tmp_path / "r" / "trials.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["instruction"] == '\'=HYPERLINK("http://x","go")' and row["operator"] == "'@op\\x00" and row["instance"] == "'+1"
    assert row["reason"] == "'-r\\x1b[1A\\x1b[2Kfake\\n| 99 | fake row |" and row["notes"] == "chair\\x1b[2J moved\\nby | bob"
    assert row["goal_x"] == "-1.5" and row["goal_y"] == "2.0"  # numbers are written as numbers


def test_every_csv_writer_uses_the_one_cell_rule():
    """Each module that writes CSV passes its free-text cells through text.csv_text (the rule is
    tested above; this catches a new writer that forgets it)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "havln_robot"
    writers = [f for f in sorted(root.rglob("*.py")) if re.search(r"csv\.(writer|DictWriter)\(", f.read_text(encoding="utf-8"))]
    assert len(writers) >= 3  # report, eval, sweep
    bad = [str(f.relative_to(root)) for f in writers if "csv_text" not in f.read_text(encoding="utf-8")]
    assert not bad, f"CSV writers without text.csv_text on their free-text cells: {bad}"
