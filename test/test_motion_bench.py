"""``havln-robot bench motion`` runs the executor on the real simulator classes and prints figures.

Not a timed test: it checks that the benchmark runs end to end (World + NoisyBase + Executor),
that every trial succeeds and that the reported errors are errors against the simulator's true
pose (the no-noise run must be near-perfect, the noisy run not identical to it)."""

from __future__ import annotations

import json

import pytest

from havln_robot.bench import main as bench_main


def test_bench_motion_runs_on_the_embedded_simulator(tmp_path, capsys):
    out = tmp_path / "motion.json"
    rc = bench_main(["motion", "-n", "4", "--estop", "3", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    for word in ("MOVE_FORWARD", "TURN_LEFT", "TURN_RIGHT", "LOOK_UP", "LOOK_DOWN", "e-stop", "dur/min"):
        assert word in text
    data = json.loads(out.read_text())
    fwd = data["actions"]["MOVE_FORWARD"]
    assert fwd["outcomes"] == {"ok": 4}
    assert 0.0 < fwd["pos_p95_m"] < 0.05
    assert 1.0 <= fwd["ratio_mean"] < 2.0
    assert data["estop"]["trials"] == 3 and data["estop"]["zero_command_all"]


def test_bench_motion_without_noise_is_near_exact(tmp_path):
    out = tmp_path / "motion.json"
    assert bench_main(["motion", "-n", "2", "--estop", "1", "--no-noise", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["actions"]["MOVE_FORWARD"]["pos_p95_m"] < 0.01
    assert data["actions"]["TURN_LEFT"]["yaw_p95_deg"] < 0.5


def test_bench_motion_bad_arguments(capsys):
    with pytest.raises(SystemExit) as exc:
        bench_main(["motion", "-n", "0"])
    assert exc.value.code == 2 and "argument -n/--n: '0' is out of range: give a number at least 1" in capsys.readouterr().err
    assert bench_main(["motion", "--config", "/nonexistent.yaml"]) == 2
