"""Report: a realistic synthetic campaign → Markdown + CSV + PNG with the right numbers."""

from __future__ import annotations

import csv
import math
import random

import pytest

from havln_robot.trials import report
from havln_robot.trials.store import Collision, Step, TrialStore

#: (region, people) → (successes, trials): the synthetic campaign's ground truth.
PLAN = {
    ("office", 0): (4, 5),
    ("office", 2): (3, 5),
    ("living room", 0): (5, 5),
    ("living room", 3): (2, 5),
    ("hallway", 0): (4, 5),
    ("hallway", 1): (3, 5),
    ("lobby", 0): (3, 5),
    ("lobby", 4): (1, 5),
}


def make_campaign(db, seed: int = 0) -> dict[int, int]:
    """Fill ``db`` with 40 judged go2 trials (+1 aborted, +1 unjudged) driving the discrete actions.

    Returns trial id → number of collisions recorded.
    """
    rng = random.Random(seed)
    colls: dict[int, int] = {}
    with TrialStore(db) as st:
        for (region, people), (k, n) in PLAN.items():
            for i in range(n):
                success = i < k
                gx, gy = 6.0 + rng.uniform(-1, 1), rng.uniform(-3, 3)
                sx, sy, syaw = rng.uniform(-5, 5), rng.uniform(-5, 5), rng.uniform(-math.pi, math.pi)
                t = st.start_trial("go2", region, people_present=people, instruction=f"go to the {region} door", goal_x=gx, goal_y=gy,
                                   start_x=sx, start_y=sy, start_yaw=syaw, operator="op")  # fmt: skip
                tx, ty = (gx + rng.uniform(-1.5, 1.5), gy + rng.uniform(-1.5, 1.5)) if success else (gx * 0.3, gy - 4 * rng.choice([-1, 1]))
                lx = ly = lyaw = 0.0
                colls[t.id] = 0
                for seq in range(200):
                    d = math.remainder(math.atan2(ty - ly, tx - lx) - lyaw, 2 * math.pi)
                    if math.hypot(tx - lx, ty - ly) < 0.3:
                        act = "STOP"
                    elif abs(d) > math.radians(10):
                        act = "TURN_LEFT" if d > 0 else "TURN_RIGHT"
                        lyaw += math.copysign(math.radians(15), d)
                    else:
                        act = "MOVE_FORWARD"
                        lx, ly = lx + 0.25 * math.cos(lyaw), ly + 0.25 * math.sin(lyaw)
                    ox, oy = sx + math.cos(syaw) * lx - math.sin(syaw) * ly, sy + math.sin(syaw) * lx + math.cos(syaw) * ly
                    hit = act == "MOVE_FORWARD" and rng.random() < 0.04 * people + 0.02
                    if hit:
                        kind = "human" if people and rng.random() < 0.8 else "static"
                        st.add_collision(t.id, Collision(step_seq=seq, stamp=float(seq), type=kind, x=ox, y=oy, distance_m=0.3))
                        colls[t.id] += 1
                    st.add_step(t.id, Step(seq=0, stamp=float(seq), action=act, outcome="collision" if hit else "ok", x=ox, y=oy,
                                           yaw=syaw + lyaw, imu_yaw=syaw + lyaw, collisions=int(hit)))  # fmt: skip
                    if act == "STOP":
                        break
                st.finish_trial(t.id, "stop")
                st.set_outcome(t.id, "success" if success else "failure", reason="" if success else "wrong room")
        t = st.start_trial("go2", "office", people_present=1)
        st.add_step(t.id, Step(seq=0, stamp=0.0, action="MOVE_FORWARD", x=0.25, y=0.0, yaw=0.0))
        st.set_outcome(t.id, "aborted", reason="e-stop: person stepped in front")
        t = st.start_trial("go2", "hallway", people_present=0)
        st.add_step(t.id, Step(seq=0, stamp=0.0, action="MOVE_FORWARD", x=0.25, y=0.0, yaw=0.0))
        st.finish_trial(t.id, "stop")
    return colls


def _is_png(path) -> bool:
    import matplotlib.image as mpimg

    img = mpimg.imread(path)
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and img.ndim == 3 and img.shape[0] > 200 and img.std() > 0.01


def test_report_from_synthetic_campaign(tmp_path, capsys):
    db = tmp_path / "trials.db"
    colls = make_campaign(db)
    out = tmp_path / "report"
    assert report.main(["--db", str(db), "--out", str(out)]) == 0
    for name in ("report.md", "trials.csv", "success_by_region.csv"):
        assert (out / name).stat().st_size > 100
    for name in ("success_by_region.png", "collisions_per_trial.png", "ne_distribution.png", "trajectories_1.png", "trajectories_2.png"):
        assert _is_png(out / name), name

    rows = {r["region"]: r for r in csv.DictReader((out / "success_by_region.csv").open())}
    canon = {"lobby": "entryway/foyer/lobby"}
    for (region, people), (k, n) in PLAN.items():
        col = "with_people" if people else "without_people"
        r = rows[canon.get(region, region)]
        assert (int(r[f"{col}_success"]), int(r[f"{col}_trials"])) == (k, n)
    assert (int(rows["all"]["all_success"]), int(rows["all"]["all_trials"])) == (25, 40)  # aborted + unjudged excluded
    assert rows["all"]["with_people_sr"] == "0.4500" and rows["all"]["without_people_sr"] == "0.8000"

    md = (out / "report.md").read_text()
    assert "| office | 80% (4/5) | 60% (3/5) | 70% (7/10) |" in md
    assert "| lobby | 60% (3/5) | 20% (1/5) | 40% (4/10) |" in md
    assert "| **all** | 80% (16/20) | 45% (9/20) | 62% (25/40) |" in md
    assert "25 success, 15 failure, 1 aborted, 1 awaiting a verdict" in md
    # SR over all episodes (aborted counted as failure) and over completed ones, labelled
    assert "SR over all episodes** (aborted counted as failure" in md and "/41;" in md.split("SR over all episodes")[1].split("\n")[0]
    assert "SR over completed episodes** (aborted left out)" in md and "/40;" in md.split("SR over completed episodes")[1].split("\n")[0]

    trials = list(csv.DictReader((out / "trials.csv").open()))
    assert len(trials) == 42
    for r in trials[:40]:
        tid = int(r["id"])
        assert int(r["collisions_human"]) + int(r["collisions_static"]) == colls[tid]
        ne = float(r["ne_m"])
        # successes stop within the 3 m radius by construction (target within 1.5 m of goal on each axis)
        assert (ne < 3.0) == (r["outcome"] == "success"), r
    assert trials[40]["outcome"] == "aborted" and trials[41]["outcome"] == ""


def test_report_errors(tmp_path, capsys):
    assert report.main(["--db", str(tmp_path / "none.db"), "--out", str(tmp_path / "o")]) == 2
    assert "no trial database" in capsys.readouterr().err
    with TrialStore(tmp_path / "empty.db"):
        pass
    assert report.main(["--db", str(tmp_path / "empty.db"), "--out", str(tmp_path / "o")]) == 2
    assert "no trials" in capsys.readouterr().err
    assert report.main(["--db", str(tmp_path / "empty.db"), "--campaign", "nope"]) == 2
    assert "campaign 'nope': not found" in capsys.readouterr().err


@pytest.mark.parametrize("n", [1, 3])
def test_small_reports_render(tmp_path, n):
    db = tmp_path / "t.db"
    with TrialStore(db) as st:
        for i in range(n):
            t = st.start_trial("sim", "kitchen", people_present=i % 2)
            st.set_outcome(t.id, "success" if i else "failure")
    with TrialStore(db, readonly=True) as st:
        files = report.write_report(st, tmp_path / "r")
    assert all(p.is_file() for p in files.values())
    assert _is_png(files["trajectories"])
