"""Issue 14 item 4: the same-ROS-domain guard does not depend on discovery timing luck.

A second ``havln-robot launch`` is started at several delays after a first one on the same ROS
domain, (a) on this machine -- the per-domain OS lock refuses it at once, whatever the delay -- and
(b) as if from another machine (separate lock folders via ``$HAVLN_LOCK_DIR``) -- the discovery
watch (``DOMAIN_CONFIRM_S``, running while the nodes start) must catch it. Never may both run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

#: The survivor is stopped by SIGINT in _stop: `launch` exits 128 + the signal number (issue 13).
STOPPED_BY_SIGINT = 128 + signal.SIGINT

pytest.importorskip("rclpy")

PROFILE = "motion_node:\n  ros__parameters: {}\n"


def _launch(profile, env):
    return subprocess.Popen(
        [sys.executable, "-m", "havln_robot.cli", "launch", str(profile)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    out, err = p.communicate()
    return err


@pytest.mark.parametrize(
    ("machines", "delay_s"),
    [("same", 0.0), ("same", 2.0), ("other", 0.0), ("other", 1.0), ("other", 2.0), ("other", None)],
)
def test_second_stack_on_the_domain_is_refused_at_any_delay(tmp_path, machines, delay_s):
    from havln_robot.bringup import DOMAIN_CONFIRM_S

    profile = tmp_path / "motion.yaml"
    profile.write_text(PROFILE)
    domain = str(60 + os.getpid() % 30)  # not the suite's domain: nothing else of the suite runs here
    base = dict(os.environ, ROS_DOMAIN_ID=domain)
    env_a = dict(base, HAVLN_LOCK_DIR=str(tmp_path / "a"))
    env_b = dict(base, HAVLN_LOCK_DIR=str(tmp_path / ("a" if machines == "same" else "b")))
    a = _launch(profile, env_a)
    b = None
    a_lines: list[str] = []
    try:
        if delay_s is None:  # the first stack is fully up (its own discovery window is over)
            t_up = time.monotonic() + 120
            while time.monotonic() < t_up and not any("running" in ln for ln in a_lines):
                line = a.stderr.readline()
                if not line:
                    break
                a_lines.append(line)
            assert any("running" in ln for ln in a_lines), "".join(a_lines)
        else:
            time.sleep(delay_s)
        b = _launch(profile, env_b)
        # b decides within its lock check or its discovery window (+ interpreter start on a loaded machine)
        t_end = time.monotonic() + DOMAIN_CONFIRM_S + 60
        while time.monotonic() < t_end and b.poll() is None and a.poll() is None:
            time.sleep(0.2)
        time.sleep(DOMAIN_CONFIRM_S + 1.0)  # let the survivor's own window end too
        alive = [p for p in (a, b) if p.poll() is None]
        assert len(alive) <= 1, "both stacks run on one ROS domain"
        refused = [p for p in (a, b) if p.poll() == 2]
        assert refused, "neither stack was refused"
    finally:
        err_a = "".join(a_lines) + _stop(a)
        err_b = _stop(b) if b is not None else ""
    errs = [e for p, e in ((a, err_a), (b, err_b)) if p is not None and p.returncode == 2]
    assert all(f"ROS domain {domain}" in e and "ROS_DOMAIN_ID=" in e and "Traceback" not in e for e in errs), errs
    if machines == "same":
        # the lock refuses whichever came second (at delay 0 either may), in one line naming the
        # holder's pid; nothing of it started
        (loser, err), winner = ((b, err_b), a) if b.returncode == 2 else ((a, err_a), b)
        assert loser.returncode == 2 and winner.returncode == STOPPED_BY_SIGINT, (err_a, err_b)
        assert f"pid={winner.pid}" in err and "another havln-robot stack on this machine" in err
        assert "started motion_node" not in err and len(err.strip().splitlines()) == 1
    elif delay_s is None:
        # the first one is long up: the second is the one refused, by discovery
        assert b.returncode == 2 and a.returncode == STOPPED_BY_SIGINT, (err_a, err_b)
        assert "already has /cmd_vel by /motion_node" in err_b
