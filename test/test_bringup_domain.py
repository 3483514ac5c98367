"""The same-ROS-domain guard does not depend on discovery timing luck.

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

import conftest
import pytest

#: The survivor is stopped by SIGINT in _stop: `launch` exits 128 + the signal number.
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


def _wait_running(a, a_lines: list[str]) -> None:
    """Read stack ``a``'s stderr into ``a_lines`` until it says it is running (or 120 s pass)."""
    t_up = time.monotonic() + 120
    while time.monotonic() < t_up and not any("running" in ln for ln in a_lines):
        line = a.stderr.readline()
        if not line:
            break
        a_lines.append(line)
    assert any("running" in ln for ln in a_lines), "".join(a_lines)


@pytest.mark.parametrize(
    ("machines", "delay_s"),
    [("same", 0.0), ("same", 2.0), ("other", 0.0), ("other", 1.0), ("other", 2.0), ("other", None)],
)
def test_second_stack_on_the_domain_is_refused_at_any_delay(tmp_path, machines, delay_s):
    from havln_robot.bringup import DOMAIN_CONFIRM_S

    profile = tmp_path / "motion.yaml"
    profile.write_text(PROFILE)
    domain = str(conftest.domain(4))  # not the suite's domain: nothing else of the suite runs here
    base = dict(os.environ, ROS_DOMAIN_ID=domain)
    env_a = dict(base, HAVLN_LOCK_DIR=str(tmp_path / "a"))
    env_b = dict(base, HAVLN_LOCK_DIR=str(tmp_path / ("a" if machines == "same" else "b")))
    a = _launch(profile, env_a)
    b = None
    a_lines: list[str] = []
    try:
        if delay_s is None:  # the first stack is fully up (its own discovery window is over)
            _wait_running(a, a_lines)
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


def test_late_conflict_stops_the_newer_stack_only():
    """The decision of the watch after the window: the stack whose probe carries the later start time stops."""
    from havln_robot.bringup import PROBE_PREFIX, late_conflict, probe_key

    own = (1_800_000_000_000, 4242)
    older, newer = f"{PROBE_PREFIX}1799999999000_77", f"{PROBE_PREFIX}1800000000500_12"
    assert probe_key(older) == (1_799_999_999_000, 77)
    assert probe_key("motion_node") is None and probe_key(PROBE_PREFIX + "x_1") is None
    assert late_conflict(own, ["motion_node", f"{PROBE_PREFIX}{own[0]}_{own[1]}", older]) == "stop"
    assert late_conflict(own, ["motion_node", newer]) == "other_stops"
    assert late_conflict(own, ["motion_node", "teleop_twist_keyboard"]) == "unknown"
    # the same start millisecond on two machines: the pid decides, never both or neither
    assert {late_conflict((5, 1), [f"{PROBE_PREFIX}5_2"]), late_conflict((5, 2), [f"{PROBE_PREFIX}5_1"])} == {"stop", "other_stops"}


#: Stack B of the test below: its start window sees nothing (as when DDS discovery is slower than
#: DOMAIN_CONFIRM_S on a loaded machine or a slow link), so only the watch can find stack A.
_LATE_B = """
import sys
from havln_robot import bringup
from havln_robot.config import load_profile
bringup.DomainProbe._window = lambda self: None
b = bringup.Bringup(load_profile(sys.argv[1]))
b.start()
print("B up", flush=True)
how = b.spin_until(timeout=90.0)
b.shutdown()
name, exc = b.failed if b.failed else ("", None)
print("B", how, name, type(exc).__name__, exc, flush=True)
sys.exit(2 if exc is not None else 0)
"""


def test_a_stack_that_escaped_its_window_is_stopped_by_the_watch(tmp_path):
    """The same-domain guard under the load where it failed (test above, [other-None]): a second stack
    whose discovery window missed the first one still stops once discovery shows it, and the first
    one keeps running; the outcome does not depend on how slow discovery is."""
    profile = tmp_path / "motion.yaml"
    profile.write_text(PROFILE)
    domain = str(conftest.domain(4))  # as the test above: nothing else of the suite runs there
    base = dict(os.environ, ROS_DOMAIN_ID=domain)
    a = _launch(profile, dict(base, HAVLN_LOCK_DIR=str(tmp_path / "a")))
    b = None
    a_lines: list[str] = []
    try:
        _wait_running(a, a_lines)
        b = subprocess.Popen(
            [sys.executable, "-c", _LATE_B, str(profile)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(base, HAVLN_LOCK_DIR=str(tmp_path / "b")),
        )
        out_b, err_b = b.communicate(timeout=150)
        assert a.poll() is None, "the first stack stopped"
    finally:
        err_a = "".join(a_lines) + _stop(a)
        if b is not None and b.poll() is None:
            b.kill()
    assert "B up" in out_b, (out_b, err_b)
    assert b.returncode == 2, (out_b, err_b)
    assert "B stopped the ROS domain watch ConfigError" in out_b, out_b
    assert f"ROS domain {domain} already has /cmd_vel by /motion_node" in out_b and "ROS_DOMAIN_ID=" in out_b, out_b
    assert "Traceback" not in err_b, err_b
    # the first one ran on (whether its own watch saw the newcomer before it stopped is a race)
    assert a.returncode == STOPPED_BY_SIGINT and "ROS domain" not in err_a, err_a
