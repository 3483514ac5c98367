"""`havln-robot demo` end to end with a short action budget (the main job, as CI runs it)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bagreaders import check_every_topic_decodes

from havln_robot.actions import ACTIONS, STOP, sequence_problems

REPO = Path(__file__).resolve().parent.parent


def _demo(args, out: Path, **kw):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **kw.pop("env", {})}
    cmd = [sys.executable, "-m", "havln_robot.cli", "demo", "--out", str(out), *args]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def _trials(db: Path) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM trials ORDER BY id")]
    finally:
        con.close()


def test_demo_runs_a_real_episode_and_leaves_every_output(havln_data, tmp_path):
    out = tmp_path / "demo"
    proc = _demo(["--max-actions", "2", "--seed", "3"], out)
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, text
    assert "real HA-R2R episode" in text and "instruction:" in text
    step_lines = [ln for ln in text.splitlines() if ln.strip().startswith("step ")]
    assert step_lines and all("pose (" in ln and "goal" in ln and "nearest person" in ln and "collisions" in ln for ln in step_lines)
    assert "summary" in text
    # trial DB row, judged from ground truth
    (trial,) = _trials(out / "trials.db")
    assert trial["platform"] == "sim" and trial["outcome"] in ("success", "failure") and trial["ne_m"] is not None
    # MCAP bag, report with the top-down plot, format-v1 action file
    mcaps = list((out / "mcap").rglob("*.mcap"))
    assert mcaps and mcaps[0].stat().st_size > 0
    assert (out / "report" / "report.md").is_file()
    pngs = list((out / "report").glob("topdown_*.png"))
    assert pngs and pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    v1 = json.loads((out / "val_seen.json").read_text())
    assert v1["format_version"] == 1 and v1["split"] == "val_seen"
    (episode,) = v1["episodes"]
    assert sequence_problems(episode["actions"]) == [] and set(episode["actions"]) <= set(ACTIONS)
    # the budget is policy actions; the file ends with the STOP the demo sent or appended
    assert len(episode["actions"]) <= 3 and episode["actions"][-1] == STOP


def test_demo_without_data_runs_the_builtin_scene_and_says_why(tmp_path, monkeypatch):
    """A fresh clone has no data folder: the demo still runs, with the same fallback and WARN line as launch."""
    monkeypatch.setenv("HAVLN_DATA", "/nonexistent")
    out = tmp_path / "demo"
    proc = _demo(["--max-actions", "1"], out)
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, text
    warns = [ln for ln in text.splitlines() if ln.startswith("WARN")]
    assert len(warns) == 1 and "/nonexistent" in warns[0] and "builtin scene" in warns[0] and "forward:steps=8,views=12" in warns[0], text
    assert "Traceback" not in text and "step   1" in text
    (trial,) = _trials(out / "trials.db")
    assert trial["platform"] == "sim" and trial["ne_m"] is not None
    # the demo's bag opens in Foxglove's parser and rosbags: every topic, every message
    counts = check_every_topic_decodes(Path(trial["mcap_path"]))
    assert {"/odom", "/havln/action_result", "/havln/instruction"} <= {t for t, n in counts.items() if n}


def test_ctrl_c_stops_the_robot_closes_the_trial_and_keeps_logs(havln_data, tmp_path):
    out = tmp_path / "demo"
    proc = _demo(["--max-actions", "50", "--seed", "3"], out)
    lines = []
    t_end = time.monotonic() + 600
    while time.monotonic() < t_end:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.strip().startswith("step "):
            break
    assert any(ln.strip().startswith("step ") for ln in lines), "".join(lines)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    text = "".join(lines) + rest
    assert proc.returncode == 130, text
    assert "interrupted" in text and "Traceback" not in text
    (trial,) = _trials(out / "trials.db")
    assert trial["outcome"] == "aborted" and trial["finished"] is not None
    assert list((out / "mcap").rglob("*.mcap")), "the MCAP bag recorded before Ctrl-C is kept"
    assert (out / "report" / "report.md").is_file()


def test_sigterm_exits_143_and_keeps_the_aborted_trial(tmp_path):
    """SIGTERM (systemd, a CI job's timeout, ``kill``) stops the demo like Ctrl-C does, and the exit code says
    which signal it was: 128 + 15, not Ctrl-C's 130. Without data (builtin scene), stopped while the nodes start."""
    out = tmp_path / "demo"
    proc = _demo(["--max-actions", "3"], out, env={"HAVLN_DATA": str(tmp_path / "no-data")})
    lines = []
    t_end = time.monotonic() + 120
    while time.monotonic() < t_end:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("[1/1]"):
            break
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=120)
    text = "".join(lines) + rest
    assert proc.returncode == 128 + signal.SIGTERM, text
    # "interrupted" once the demo's own handler is in place, "terminated" (the command boundary's) before
    assert ("interrupted" in text or "terminated" in text) and "Traceback" not in text
    db = out / "trials.db"
    if db.is_file() and sqlite3.connect(db).execute("SELECT name FROM sqlite_master WHERE name='trials'").fetchone():
        assert all(t["outcome"] == "aborted" for t in _trials(db)), text  # a trial opened before the signal is closed


def test_same_seed_picks_the_same_episodes(havln_data):
    from havln_robot.demo import DEFAULT_EPISODES, _pick_episodes

    a = _pick_episodes(3, 7, havln_data / DEFAULT_EPISODES)
    b = _pick_episodes(3, 7, havln_data / DEFAULT_EPISODES)
    c = _pick_episodes(3, 8, havln_data / DEFAULT_EPISODES)
    assert a == b and a != c and len({eid for _, eid in a}) == 3


@pytest.mark.parametrize(
    "bad",
    [
        ["--episodes", "x"],
        ["--episodes", "0"],
        ["--max-actions", "501"],
        ["--timeout", "-1"],
        ["--timeout", "nan"],  # before: accepted, and an episode never timed out
        ["--profile", "/nonexistent.yaml"],
    ],
)
def test_bad_arguments_are_one_line_errors(tmp_path, bad):
    r = subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "demo", "--out", str(tmp_path), *bad], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_a_signal_between_episodes_stops_the_next_one(monkeypatch):
    """demo --episodes N installed its signal handlers again for each episode: a SIGTERM while episode 2 was
    prepared stopped only episode 1's (finished) bringup, so episode 2 ran, and the force-exit timer that
    signal armed was dropped -- it then ended the process mid-episode 2."""
    from havln_robot import demo

    class FakeBringup:
        stopped = False

        def stop(self):
            self.stopped = True

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    flag: dict = {"flag": False}
    first, second = FakeBringup(), FakeBringup()
    try:
        demo._on_signal(first, flag)
        signal.raise_signal(signal.SIGTERM)  # episode 1 is over; episode 2 is being prepared
        timer = flag["state"]["timer"]
        demo._on_signal(second, flag)
        assert second.stopped, "episode 2 must stop as soon as it starts"
        assert flag["state"]["timer"] is timer, "the armed force-exit timer must stay reachable (cancelled once nodes stop)"
    finally:
        if flag.get("state", {}).get("timer"):
            flag["state"]["timer"].cancel()
        for s, h in previous.items():
            signal.signal(s, h)
