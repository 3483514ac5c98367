"""A sweep panorama through the real nodes: sim_node (camera on, noise on) + motion_node + agent_node's
capture, over loopback DDS. Structure only (timing-tolerant): 12 views, each within tolerance of its
heading by the simulator's ground truth, and the sweep closes at the start heading."""

from __future__ import annotations

import math

import pytest


def test_sweep_panorama_through_sim_and_motion_nodes(ros_context):
    pytest.importorskip("havln_robot.nodes.sim_node")
    from havln_robot.bench.panorama import run_panoramas

    # a smaller image keeps the camera at its rate on a loaded machine; the geometry is the same
    res = run_panoramas(("sweep",), 1, context=ros_context, sim_overrides={"camera_width": 320, "camera_height": 240})
    rec = res["sweep"]
    errs = rec["view_err_deg"][0]
    summary = rec["summaries"][0]
    assert summary["views"] == 12 and len(errs) == 12
    assert summary["sweep_outcome"] == "ok"
    # sweep views: the tolerance (1 deg) + the IMU's own error; retaken views: discrete-turn accuracy
    for e in errs:
        assert math.isfinite(e) and abs(e) <= 1.5, (errs, summary)
    assert abs(rec["closure_imu_deg"][0]) <= 0.4  # motion_node's yaw tolerance
    assert abs(rec["closure_true_deg"][0]) <= 1.0
