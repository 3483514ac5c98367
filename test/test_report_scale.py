"""Campaign scale: report on a big store reads trials in batches with a progress bar, leaves the
per-trial trajectory figures out above TRAJECTORY_LIMIT unless asked, and the bench is registered."""

from __future__ import annotations

from havln_robot import cli
from havln_robot.bench.trials import build_store
from havln_robot.trials import report
from havln_robot.trials.report import main as report_main
from havln_robot.trials.report import write_report
from havln_robot.trials.store import TrialStore


def test_big_campaign_report_skips_trajectory_figures_and_shows_progress(tmp_path, capsys, monkeypatch):
    # the rule at a small scale (the limit is 240 trials; the bench times 5,000)
    monkeypatch.setattr(report, "TRAJECTORY_LIMIT", 30)
    monkeypatch.setattr(report, "_BATCH", 16)
    monkeypatch.setattr(report, "PROGRESS_MIN_TRIALS", 20)
    db = tmp_path / "trials.db"
    n = 40
    build_store(db, n, 5)
    assert report_main(["--db", str(db), "--out", str(tmp_path / "rep")]) == 0
    err = capsys.readouterr().err
    assert f"report: reading trials {n}/{n} (100 %)" in err
    assert not list((tmp_path / "rep").glob("trajectories*.png"))
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Per-trial trajectory figures left out" in md and "--trajectories on" in md
    assert f"**{n} trials**" in md
    with TrialStore(db, readonly=True) as st:
        files = write_report(st, tmp_path / "rep2", trajectories=True)
        per_trial = {t.id: (len(st.steps(t.id)), len(st.collisions(t.id))) for t in st.trials()}
        batched_steps, batched_colls = st.steps_of(list(per_trial)), st.collisions_of(list(per_trial))
    assert len([k for k in files if k.startswith("trajectories")]) == -(-n // 24)
    # the batched reads give what the per-trial reads give
    assert {i: (len(batched_steps.get(i, [])), len(batched_colls.get(i, []))) for i in per_trial} == per_trial


def test_bench_is_registered():
    assert cli.BENCHES["trials"] == "havln_robot.bench.trials:main"
