"""Shutdown on SIGINT/SIGTERM is bounded, a second signal exits at once, and the
exit code is 128 + the signal number (checked on a child process with a thread that never ends)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, threading, time
from havln_robot.bringup import install_shutdown_signals
stop = threading.Event()
install_shutdown_signals(stop.set, grace_s=float(sys.argv[1]), label="child")
threading.Thread(target=lambda: threading.Event().wait(), daemon=False).start()  # hangs the exit
print("ready", flush=True)
while not stop.wait(0.05):  # as bringup's main loop: a signal the kernel hands to the hung thread is seen here too
    pass
print("report written", flush=True)   # what shutdown does before the hung thread blocks the exit
"""


def _child(grace_s: float) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(grace_s)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_shutdown_is_bounded_and_exits_128_plus_signal(sig):
    p = _child(0.2)
    t0 = time.monotonic()
    p.send_signal(sig)
    out, err = p.communicate(timeout=10)
    assert p.returncode == 128 + sig, err
    assert time.monotonic() - t0 < 5.0
    assert "report written" in out and "longer than 0.2 s" in err


def test_second_signal_exits_at_once():
    p = _child(30.0)
    p.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    assert time.monotonic() - t0 < 3.0
    assert p.returncode == 128 + signal.SIGINT and "second signal SIGINT" in err
