"""DDS stays on loopback: while nodes run, every UDP socket of this process is bound to 127.0.0.1."""

from __future__ import annotations

import ipaddress
import os
import time

from std_msgs.msg import String

from havln_robot.dds import configure_dds, dds_mode


def _udp_sockets_of_this_process() -> list[str]:
    """Local addresses (ip) of the UDP/UDP6 sockets this process holds, from /proc."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    addrs = []
    for table, width in (("/proc/net/udp", 8), ("/proc/net/udp6", 32)):
        with open(table) as f:
            for line in f.read().splitlines()[1:]:
                cols = line.split()
                if cols[9] not in inodes:
                    continue
                hexip = cols[1].split(":")[0]
                raw = bytes.fromhex(hexip)
                if width == 8:
                    ip = ipaddress.IPv4Address(raw[::-1])
                else:  # /proc prints IPv6 as four little-endian 32-bit words
                    ip = ipaddress.IPv6Address(b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))
                addrs.append(str(ip))
    return addrs


def test_env_is_loopback_by_default():
    env = {}
    assert configure_dds(env) == "loopback"
    assert env["FASTRTPS_DEFAULT_PROFILES_FILE"].endswith("config/fastdds_loopback.xml")
    assert env["RMW_IMPLEMENTATION"] == "rmw_fastrtps_cpp"


def test_robot_mode_leaves_environment_alone():
    env = {"HAVLN_DDS": "robot", "FASTRTPS_DEFAULT_PROFILES_FILE": "/robot.xml"}
    assert configure_dds(env) == "robot" and env["FASTRTPS_DEFAULT_PROFILES_FILE"] == "/robot.xml"
    try:
        dds_mode({"HAVLN_DDS": "wifi"})
    except ValueError as exc:
        assert "HAVLN_DDS" in str(exc)
    else:
        raise AssertionError("an unknown HAVLN_DDS must be refused")


def test_no_udp_socket_bound_to_a_non_loopback_address(ros_context):
    import rclpy

    pub_node = rclpy.create_node("loopback_pub", context=ros_context)
    sub_node = rclpy.create_node("loopback_sub", context=ros_context)
    got = []
    sub_node.create_subscription(String, "havln/loopback_probe", lambda m: got.append(m.data), 10)
    pub = pub_node.create_publisher(String, "havln/loopback_probe", 10)
    from rclpy.executors import SingleThreadedExecutor

    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(sub_node)
    t_end = time.monotonic() + 10
    while time.monotonic() < t_end and not got:
        pub.publish(String(data="ping"))
        ex.spin_once(timeout_sec=0.1)
    assert got, "nodes must still talk to each other over loopback"
    addrs = _udp_sockets_of_this_process()
    assert addrs, "expected DDS UDP sockets while nodes run"
    bad = [a for a in addrs if not ipaddress.ip_address(a).is_loopback]
    assert not bad, f"UDP sockets bound to non-loopback addresses: {bad} (all: {addrs})"
    ex.shutdown()
    pub_node.destroy_node()
    sub_node.destroy_node()
