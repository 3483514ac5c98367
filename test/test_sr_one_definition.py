"""One HA-VLN SR: eval (sim/metrics.py) and the trial report (trials/metrics.py, report.py) agree."""

from __future__ import annotations

import csv

import pytest

from havln_robot.sim.metrics import episode_metrics
from havln_robot.trials.metrics import sr_success, summarize
from havln_robot.trials.report import write_report
from havln_robot.trials.store import TrialStore

#: (ne_m, stopped, human collisions, static collisions) of the same episodes in both worlds.
EPISODES = [
    (1.0, True, 0, 0),  # success, clean
    (1.0, True, 0, 2),  # success, walls only: still an HA-VLN SR
    (1.0, True, 1, 0),  # success, hit a person: no SR
    (1.0, True, 1, 3),
    (5.0, True, 0, 0),  # failure
    (5.0, True, 2, 1),
]


@pytest.mark.parametrize(("ne", "stopped", "hum", "sta"), EPISODES)
def test_ha_vln_sr_counts_human_collisions_only(ne, stopped, hum, sta):
    from havln_robot.episodes import ha_vln_sr

    success = stopped and ne < 3.0
    assert episode_metrics(ne, stopped, 1.0, 1.0, hum, sta).sr == ha_vln_sr(success, hum) == int(success and hum == 0)


def test_trial_report_and_eval_give_the_same_sr(tmp_path):
    db = tmp_path / "t.db"
    with TrialStore(db) as st:
        for i, (ne, _stopped, hum, sta) in enumerate(EPISODES):
            t = st.start_trial("sim", region="office", episode_id=str(i + 1))
            for k in range(hum + sta):
                st.add_collision(t.id, {"step_seq": 0, "stamp": float(k), "type": "human" if k < hum else "static"})
            st.set_outcome(t.id, "success" if ne < 3.0 else "failure", ne_m=ne)
        sims = [episode_metrics(ne, stopped, 1.0, 1.0, hum, sta).sr for ne, stopped, hum, sta in EPISODES]
        trials = st.trials()
        per_trial = [int(sr_success(t, summarize(t, st.steps(t.id), st.collisions(t.id)).collisions_human)) for t in trials]
        assert per_trial == sims
        write_report(st, tmp_path / "r")
    with open(tmp_path / "r" / "trials.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["sr_success"]) for r in rows] == sims
    md = (tmp_path / "r" / "report.md").read_text()
    n = sum(sims)
    assert "no human collision" in md and f"{n}/{len(sims)}" in md.split("**SR** (HA-VLN)")[1].split("\n")[0]
