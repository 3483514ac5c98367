"""The Go2 link set up while the robot's interface is late at boot (bounded
retry with backoff, one line per attempt), and a DDS domain that already exists named as such."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from havln_robot.robot.go2 import (
    DDS_RETCODE_PRECONDITION_NOT_MET,
    Go2Error,
    Go2InterfaceNotReady,
    connect_with_retry,
    init_error_message,
)

REPO = Path(__file__).resolve().parent.parent


def test_connect_retries_with_backoff_and_one_line_per_attempt():
    calls, lines, sleeps = [], [], []

    def connect():
        calls.append(1)
        if len(calls) < 4:
            raise Go2InterfaceNotReady("network_interface='eth0': no such network interface here (yet)")
        return "link"

    assert connect_with_retry(connect, 10, 0.05, 0.15, lines.append, sleeps.append) == "link"
    assert sleeps == [0.05, 0.1, 0.15] and len(lines) == 3
    assert lines[0].startswith("Go2 connect attempt 1/10 failed: network_interface='eth0'") and "retrying in 0.1 s" in lines[0]


def test_connect_gives_up_after_the_attempts_and_does_not_retry_other_errors():
    def late():
        raise Go2InterfaceNotReady("not up")

    with pytest.raises(Go2Error, match="gave up after 3 attempts"):
        connect_with_retry(late, 3, 0.01, 0.01, lambda s: None, lambda s: None)
    n = []

    def bad():
        n.append(1)
        raise Go2Error("already initialised on domain 0")

    with pytest.raises(Go2Error, match="already initialised"):
        connect_with_retry(bad, 5, 0.01, 0.01, lambda s: None, lambda s: None)
    assert len(n) == 1


def test_existing_dds_domain_is_named_with_what_to_do():
    """Item 6: cyclonedds refuses a second domain with the same id in one process (rmw_cyclonedds_cpp
    shares libddsc): say so, not "check the interface name"."""
    err = init_error_message(DDS_RETCODE_PRECONDITION_NOT_MET, 0, "eth0", "channel factory init error.")
    assert not isinstance(err, Go2InterfaceNotReady)
    text = str(err)
    assert "already exists in this process" in text and "rmw_cyclonedds_cpp" in text and "dds_domain_id" in text
    assert "interface name" not in text
    assert isinstance(init_error_message(-1, 0, "eth0", "x"), Go2InterfaceNotReady)


def test_existing_dds_domain_is_detected_for_real():
    pytest.importorskip("unitree_sdk2py")
    from cyclonedds.domain import Domain
    from unitree_sdk2py.core.channel_config import ChannelConfigHasInterface

    from havln_robot.robot.go2 import _diagnose_domain

    dom = 200 + os.getpid() % 30  # not a domain the other tests use
    d = Domain(dom, ChannelConfigHasInterface.replace("$__IF_NAME__$", "lo"))  # what rmw_cyclonedds would hold
    try:
        assert _diagnose_domain(dom, "lo") == DDS_RETCODE_PRECONDITION_NOT_MET
    finally:
        del d


CHILD = r"""
import subprocess, sys, threading, time
import unitree_sdk2py.core.channel  # imported before the clock starts
from havln_robot.robot.go2 import connect_with_retry, init_channel
subprocess.run(["ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1"], check=True)
def up():
    time.sleep(0.6)
    for c in (["ip", "addr", "add", "10.77.0.1/24", "dev", "v0"], ["ip", "link", "set", "v1", "up"], ["ip", "link", "set", "v0", "up"]):
        subprocess.run(c, check=True)
threading.Thread(target=up, daemon=True).start()
connect_with_retry(lambda: init_channel(int(sys.argv[1]), "v0"), 30, 0.1, 0.2, lambda s: print("LINE", s, flush=True))
print("CONNECTED", flush=True)
"""


def test_interface_that_comes_up_late_in_a_network_namespace():
    """Item 3 for real: in a fresh network namespace the robot's interface has no address and is
    down; it comes up 0.6 s later; the link retries (a line per attempt) and connects."""
    if os.geteuid() != 0:
        pytest.skip("needs root for a network namespace (unshare -n) and a veth pair")
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip (iproute2)")
    pytest.importorskip("unitree_sdk2py")
    probe = subprocess.run(
        ["unshare", "-n", "ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot create a veth pair in a namespace here: {probe.stderr.strip()}")
    r = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", CHILD, str(150 + os.getpid() % 40)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("LINE ")]
    assert r.returncode == 0 and "CONNECTED" in r.stdout, r.stdout + r.stderr
    assert lines and all("Go2 connect attempt" in ln and "not usable yet" in ln for ln in lines), lines
