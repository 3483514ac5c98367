"""Shared pytest fixtures: DDS on loopback for every test, the HA-VLN data folder, a ROS context."""

from __future__ import annotations

import os
import socket

import pytest

from havln_robot.dds import configure_dds
from havln_robot.paths import data_dir

# Every test process keeps DDS on loopback, whatever the calling shell had set.
os.environ.pop("HAVLN_DDS", None)
configure_dds()
os.environ.setdefault("MUJOCO_GL", "egl")

# A per-run ROS domain (inherited by subprocesses) so parallel runs on one machine don't cross-talk.
os.environ.setdefault("ROS_DOMAIN_ID", str(40 + os.getpid() % 50 * 2))
ROS_DOMAIN_ID = int(os.environ["ROS_DOMAIN_ID"])


@pytest.fixture(scope="session")
def havln_data():
    """Path of the HA-VLN data folder (:func:`havln_robot.paths.data_dir`); skips the test with a reason when it is absent."""
    d = data_dir()
    if not (d / "ha_r2r_de" / "HA_val_seen.json").is_file():
        pytest.skip(f"HA-VLN reference data not found at {d} (run `havln-robot data fetch`, or set HAVLN_DATA)")
    return d


@pytest.fixture
def ros_context():
    """A fresh rclpy context on this run's ROS domain id (loopback DDS); shut down afterwards."""
    import rclpy

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=ROS_DOMAIN_ID, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    yield ctx
    rclpy.try_shutdown(context=ctx)


@pytest.fixture
def free_port():
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
