"""Campaign plan files are read strictly: no value is silently changed (B5)."""

from __future__ import annotations

import pytest

from havln_robot.trials.plan import load_plan
from havln_robot.trials.store import TrialError


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("dup.csv", "region,region\noffice,kitchen\n", "column 'region' appears twice"),
        ("blank.csv", "region,people\noffice,\n", "line 2: people: empty"),
        ("short.csv", "region,people,instruction\noffice\n", "line 2: 1 values for 3 columns"),
        ("long.csv", "region,people\noffice,0,extra\n", "line 2: 3 values for 2 columns"),
        ("noname.csv", "region,,people\noffice,x,0\n", "column 2 has no name"),
        ("camp.yaml", "campaign: [1, 2]\ntrials: [{region: office, people: 0}]\n", "campaign: expected a name"),
        ("desc.yaml", "campaign: c\ndescription: {a: 1}\ntrials: [{region: office, people: 0}]\n", "description: expected text"),
        ("instr.yaml", "campaign: c\ntrials: [{region: office, people: 0, instruction: [go, left]}]\n", "instruction: expected text"),
        ("people.yaml", "campaign: c\ntrials: [{region: office, people: ''}]\n", "people: empty"),
        ("repeat.yaml", "campaign: c\ntrials: [{region: office, people: 0, repeat: 2.7}]\n", "repeat: expected an integer"),
        ("repeatbool.yaml", "campaign: c\ntrials: [{region: office, people: 0, repeat: true}]\n", "repeat: expected an integer"),
        ("repeat.csv", "region,people,repeat\noffice,0,2.5\n", "repeat: expected an integer"),
        ("peoplenull.yaml", "campaign: c\ntrials: [{region: office, people: null}]\n", "people: empty"),
    ],
)
def test_plan_values_are_never_silently_changed(tmp_path, name, text, needle):
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(TrialError) as ei:
        load_plan(f)
    msg = str(ei.value)
    assert needle in msg and name in msg and "\n" not in msg


def test_csv_with_excel_bom_is_accepted(tmp_path):
    f = tmp_path / "excel.csv"
    f.write_bytes("\ufeffregion,people,episode_id\r\noffice,2,7\r\n".encode())
    name, _, planned = load_plan(f)
    assert name == "excel" and [(p.region, p.people_present, p.episode_id) for p in planned] == [("office", 2, "7")]


def test_yaml_ids_may_be_integers_and_csv_optional_blank_cells_stay_empty(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("campaign: 2026\ndescription: lab\ntrials: [{region: office, people: 1, episode_id: 12}]\n")
    name, desc, planned = load_plan(f)
    assert (name, desc, planned[0].episode_id) == ("2026", "lab", "12")
    c = tmp_path / "p.csv"
    c.write_text("region,people,instruction\noffice,0,\n")
    assert load_plan(c)[2][0].instruction in ("", None)


def test_a_refused_plan_creates_no_store(tmp_path, capsys):
    """`trial plan BAD` opened (and so created) the store before reading the plan: a refused plan
    left an empty default store behind (found through test_user_paths under the full suite)."""
    from havln_robot.cli import main as top_main

    db = tmp_path / "t.db"
    (tmp_path / "adir").mkdir()
    bad = tmp_path / "bad.csv"
    bad.write_text("region,region\noffice,kitchen\n")
    for plan in (tmp_path / "adir", bad, tmp_path / "missing.yaml"):
        assert top_main(["trial", "--db", str(db), "plan", str(plan)]) == 2
        assert not db.exists(), plan
