"""Keep ROS 2 / DDS traffic on loopback unless the user explicitly chooses the robot network.

Pure Python; call :func:`configure_dds` before ``rclpy.init()``.

Loopback mode (default) sets
* ``RMW_IMPLEMENTATION=rmw_fastrtps_cpp`` (the RMW shipped with the pip wheels),
* ``FASTRTPS_DEFAULT_PROFILES_FILE`` → ``config/fastdds_loopback.xml`` (UDP whitelisted to
  127.0.0.1, SHM, builtin transports off, initial peer 127.0.0.1),
* ``ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT`` so rmw_fastrtps applies the profile as written.

Why not ``LOCALHOST``: measured here with rmw_fastrtps_cpp 8.4.3 (Jazzy), ``LOCALHOST`` makes the
RMW add its own transport on top of the profile -- every participant then holds a UDP socket bound
to the eth0 address and one bound to 0.0.0.0. With ``SYSTEM_DEFAULT`` and this profile every UDP
socket of the process is bound to 127.0.0.1 (checked by test/test_dds_loopback.py) and two processes
still discover each other through the 127.0.0.1 initial peer.

Robot mode (``HAVLN_DDS=robot``) leaves the environment as the user set it, so a Jetson on the
Go2's network uses its normal DDS configuration.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from havln_robot.paths import config_dir

LOOPBACK_PROFILE = "fastdds_loopback.xml"


def dds_mode(env: MutableMapping[str, str] | None = None) -> str:
    """Return ``"loopback"`` or ``"robot"`` from ``$HAVLN_DDS`` (default loopback).

    Raises:
        ValueError: ``HAVLN_DDS`` holds another value.
    """
    env = os.environ if env is None else env
    mode = env.get("HAVLN_DDS", "loopback").strip().lower() or "loopback"
    if mode not in ("loopback", "robot"):
        raise ValueError(f"HAVLN_DDS={mode!r}: use 'loopback' (default, tests and sim) or 'robot' (Go2 network)")
    return mode


def configure_dds(env: MutableMapping[str, str] | None = None) -> str:
    """Apply the DDS environment for the current mode; returns the mode.

    In loopback mode the profile file, RMW and discovery range are forced (a stale
    ``FASTRTPS_DEFAULT_PROFILES_FILE`` from a robot shell must not leak into a test).
    """
    env = os.environ if env is None else env
    mode = dds_mode(env)
    if mode == "loopback":
        profile = config_dir() / LOOPBACK_PROFILE
        if not profile.is_file():
            raise FileNotFoundError(f"DDS loopback profile missing: {profile}")
        env["RMW_IMPLEMENTATION"] = "rmw_fastrtps_cpp"
        env["FASTRTPS_DEFAULT_PROFILES_FILE"] = str(profile)
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "SYSTEM_DEFAULT"
        env.pop("ROS_STATIC_PEERS", None)
        env.pop("ROS_LOCALHOST_ONLY", None)
    return mode
