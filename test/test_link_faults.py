"""The robot-to-workstation link shaped (20 Mbit/s, 30 ms, 1 % loss) and cut, between two network
namespaces joined by a veth pair: panorama transfer, remote decision latency, and the robot never
moving on a stale decision (havln-robot bench link; needs root, skips with the reason elsewhere)."""

from __future__ import annotations

import math
import subprocess

import pytest

from havln_robot.bench import link

WHY = link.namespaces_unavailable()


@pytest.fixture(scope="module")
def record():
    if WHY:
        pytest.skip(f"network namespaces unavailable: {WHY}")
    before = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    rec = link.measure(rate_mbit=20.0, delay_ms=30.0, loss_pct=1.0, cut_s=2.0, decisions=3)
    after = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    assert not [n for n in after if n.startswith("havln") and n not in before], "namespaces left behind"
    print("\n" + link.table(rec))
    return rec


def test_link_is_shaped_and_the_panorama_crosses_it(record):
    assert record["mode"] in ("netem", "tbf+nft+relay")
    assert record["raw_mb"] == pytest.approx(12 * (640 * 480 * 3 + 640 * 480 * 2) / 1e6)
    # 18.4 MB at 20 Mbit/s cannot take less than 7.4 s: the rate limit is in force
    assert record["raw_s"] >= 18.4e6 * 8 / 20e6 * 0.95
    assert record["compressed_mb"] < record["raw_mb"] / 5 and 0 < record["compressed_s"] < record["raw_s"]
    assert record["model input_mb"] < record["raw_mb"] / 5
    # a decision waits at least the two one-way delays
    assert record["decision_ms_median"] >= 60.0


def test_link_cut_robot_stops_within_the_motion_timeout_and_goes_on(record):
    assert record["started_while_cut"] == 0  # never moves on a stale (or missing) decision
    assert 0.0 <= record["moving_after_cut_s"] <= record["motion_timeout_s"]
    assert record["episode_reason"] == "stop" and record["episode_actions"] == record["expected_actions"], record["episode_detail"]
    assert math.isfinite(record["resumed_after_s"]) and record["resumed_after_s"] >= 0.0
    gaps = [g for g in record["link_gaps"] if g["call"] == "act"]
    assert gaps and all(g["answered"] for g in gaps) and max(g["wait_s"] for g in gaps) > 0.5


def test_bench_link_refuses_in_one_line_without_namespaces(monkeypatch, capsys):
    monkeypatch.setattr(link, "namespaces_unavailable", lambda: "network namespaces and veth pairs need root (run as root, as CI does)")
    assert link.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "need root" in err
