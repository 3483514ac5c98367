"""Honest reports -- provenance per trial (policy/checkpoint + sha256, software,
profile), filter by policy, Wilson 95 % intervals, success and SR with their definitions, a verdict
that contradicts the measured NE needs --force and is marked."""

from __future__ import annotations

import hashlib

import pytest

from havln_robot.trials.cli import main as trial_main
from havln_robot.trials.metrics import rate_with_ci, wilson_interval
from havln_robot.trials.provenance import collect, software_version
from havln_robot.trials.report import main as report_main
from havln_robot.trials.store import Collision, Step, TrialError, TrialStore


def test_wilson_interval_known_values():
    assert wilson_interval(0, 0) is None
    lo, hi = wilson_interval(0, 5)
    assert lo == 0.0 and hi == pytest.approx(3.8415 / 8.8415, abs=1e-4)  # z²/(n+z²)
    lo, hi = wilson_interval(5, 5)
    assert hi == 1.0 and lo == pytest.approx(1 - 3.8415 / 8.8415, abs=1e-4)
    lo, hi = wilson_interval(25, 40)
    assert (round(lo, 3), round(hi, 3)) == (0.470, 0.758)
    assert rate_with_ci(25, 40) == "62% (25/40; 95% CI 47–76%)"


def test_success_verdict_contradicting_ne_needs_force_and_is_marked(tmp_path, capsys):
    db = tmp_path / "trials.db"
    assert trial_main(["--db", str(db), "start", "--region", "office", "--goal", "4", "1.5"]) == 0
    capsys.readouterr()
    assert trial_main(["--db", str(db), "end", "--success", "--ne", "5.0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "success needs NE < 3 m" in err and "5.00 m" in err and "--force" in err and "\n" not in err
    with TrialStore(db, readonly=True) as st:
        assert st.trial(1).outcome is None  # nothing recorded
    assert trial_main(["--db", str(db), "end", "--success", "--ne", "5.0", "--force"]) == 0
    assert "FORCED" in capsys.readouterr().out
    with TrialStore(db, readonly=True) as st:
        t = st.trial(1)
        assert (t.outcome, t.ne_m, t.verdict_forced) == ("success", 5.0, True)
    assert trial_main(["--db", str(db), "list"]) == 0
    assert "success*" in capsys.readouterr().out
    # a success within the radius, and failures, need nothing
    with TrialStore(db) as st:
        t = st.start_trial("go2", "office")
        assert not st.set_outcome(t.id, "success", ne_m=2.9).verdict_forced
        t = st.start_trial("go2", "office")
        assert not st.set_outcome(t.id, "failure", ne_m=1.0).verdict_forced
        t = st.start_trial("go2", "office", goal_radius=6.0)
        assert not st.set_outcome(t.id, "success", ne_m=5.0).verdict_forced  # its own radius
        with pytest.raises(TrialError, match="already ended"):
            st.set_outcome(t.id, "success", ne_m=7.0, force=True)


def _ckpt(tmp_path, name: str, payload: bytes):
    p = tmp_path / f"{name}.pt"
    p.write_bytes(payload)
    return p, hashlib.sha256(payload).hexdigest()


def test_provenance_per_trial_filter_by_policy_and_report(tmp_path, capsys):
    a, sha_a = _ckpt(tmp_path, "cma_a", b"weights A" * 1000)
    b, sha_b = _ckpt(tmp_path, "cma_b", b"weights B" * 1000)
    pa = collect(str(a), "config/go2.yaml")
    assert pa == {
        "policy": "cma_a",
        "checkpoint": str(a.resolve()),
        "checkpoint_sha256": sha_a,
        "software": software_version(),
        "profile": "config/go2.yaml",
    }
    assert pa["software"].startswith("havln_robot ")
    assert collect("forward:steps=3", "p.yaml")["checkpoint"] == ""  # builtin baseline: no checkpoint
    db = tmp_path / "trials.db"
    with TrialStore(db) as st:
        for k, (prov, outcome, coll) in enumerate(
            [(pa, "success", 0), (pa, "success", 1), (pa, "failure", 0), (collect(str(b), "config/go2.yaml"), "success", 0)]
        ):
            t = st.start_trial("go2", "office", people_present=k % 2, **prov)
            st.add_step(t.id, Step(seq=0, stamp=0.0, action="STOP", outcome="ok", x=0.0, y=0.0, yaw=0.0))
            for _ in range(coll):
                st.add_collision(t.id, Collision(step_seq=0, stamp=0.0, type="human"))
            st.set_outcome(t.id, outcome, ne_m=1.0 if outcome == "success" else 4.0)
        assert [t.id for t in st.trials(policy="cma_a")] == [1, 2, 3]
        assert [t.id for t in st.trials(policy=sha_b[:12])] == [4]
        assert [t.id for t in st.trials(policy="cma_b.pt")] == [4]
        assert st.trials(policy=sha_b[:4]) == []  # too short a hash prefix matches nothing
    assert trial_main(["--db", str(db), "list", "--policy", "cma_b"]) == 0
    out = capsys.readouterr().out
    assert out.count("cma_b") == 1 and "cma_a" not in out
    assert trial_main(["--db", str(db), "show", "4"]) == 0
    assert sha_b[:16] in capsys.readouterr().out

    assert report_main(["--db", str(db), "--out", str(tmp_path / "all")]) == 0
    md = (tmp_path / "all" / "report.md").read_text()
    assert "## Provenance" in md and sha_a[:16] in md and sha_b[:16] in md and software_version() in md and "config/go2.yaml" in md
    assert "**Success**: the robot stopped (STOP) with NE < 3 m" in md and "**75% (3/4; 95% CI" in md
    assert "**SR** (HA-VLN): success *and* no human collision" in md and "**50% (2/4; 95% CI" in md
    assert "Wilson" in md
    csv_text = (tmp_path / "all" / "trials.csv").read_text()
    assert sha_a in csv_text and "sr_success" in csv_text.splitlines()[0]

    assert report_main(["--db", str(db), "--out", str(tmp_path / "b"), "--policy", "cma_b"]) == 0
    md = (tmp_path / "b" / "report.md").read_text()
    assert "policy `cma_b`" in md and "**1 trial**" in md and sha_a[:16] not in md
    assert report_main(["--db", str(db), "--out", str(tmp_path / "c"), "--policy", "nope"]) == 2
    assert "of policy 'nope'" in capsys.readouterr().err


def test_launch_gives_the_logger_the_profile_and_the_agents_policy():
    from havln_robot.bringup import fill_provenance
    from havln_robot.config import load_profile
    from havln_robot.paths import config_dir

    prof = load_profile(config_dir() / "sim.yaml")
    if "trial_logger_node" not in prof.nodes or "agent_node" not in prof.nodes:
        pytest.skip("trial_logger_node / agent_node not built in this checkout")
    fill_provenance(prof)
    tl = prof.nodes["trial_logger_node"]
    assert tl["profile"] == str((config_dir() / "sim.yaml").resolve())
    assert tl["policy"] == prof.nodes["agent_node"]["policy"]
