"""``havln-robot doctor``: check a robot machine before a trial day.

One line per check, ``OK`` / ``WARN`` / ``FAIL``, with what was found and the fix; exit code 1 when
any check FAILs (2 for bad arguments), ``--json`` for a machine-readable list. A FAIL means the
robot stack will not run (or not safely); a WARN means it runs but something a trial relies on is
degraded or unverified. Each check states its own rule in :data:`CHECKS`.

Every piece of the outside world the checks touch goes through :class:`Probes` (environment,
imports, network interfaces, the Go2 state probe, RealSense devices and streaming, disk, clock,
the ROS graph), so tests hand each check fakes; the defaults talk to the real machine. The only
check that sends packets is the Go2 state probe (Unitree SDK discovery on the profile's
interface, bounded by ``timeout``); ``--offline`` skips it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from havln_robot.text import nonempty, path_arg

OK, WARN, FAIL = "OK", "WARN", "FAIL"

#: the cyclonedds the Go2 runs (Unitree's robot firmware ships Cyclone DDS 0.10.x)
CYCLONEDDS_WANTED = "0.10.2"
#: ROS 2 distributions this package is built for
ROS_DISTROS = ("humble", "jazzy")
#: RMWs the robot profile is run with (docs/robot.md, "DDS")
RMWS = ("rmw_cyclonedds_cpp", "rmw_fastrtps_cpp")
#: an hour of recording is the unit the disk check asks room for
RECORD_HOURS = 1.0
#: time a Go2 has to answer with one ``rt/sportmodestate`` message, s
GO2_STATE_TIMEOUT_S = 1.0


@dataclass
class Result:
    """One line of the checklist.

    Attributes:
        name: the check (``ros``, ``go2``, ``realsense``, ...).
        status: ``OK``, ``WARN`` or ``FAIL``.
        detail: what was found.
        fix: what to do about a WARN / FAIL ("" when OK).
    """

    name: str
    status: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        """The checklist line: ``FAIL realsense   no RealSense found -- fix: ...``."""
        tail = f" -- fix: {self.fix}" if self.fix and self.status != OK else ""
        return f"{self.status:<4} {self.name:<10} {self.detail}{tail}"


def _default_import(name: str) -> Any:
    return importlib.import_module(name)


def _default_interface(name: str) -> dict[str, Any] | None:
    """``{"up": bool, "addresses": [...]}`` of a network interface from sysfs + ``ip``; None if absent."""
    base = Path("/sys/class/net") / name
    if not base.exists():
        return None
    try:
        oper = (base / "operstate").read_text().strip()
    except OSError:
        oper = "unknown"
    addrs: list[str] = []
    try:
        out = subprocess.run(["ip", "-j", "addr", "show", "dev", name], capture_output=True, text=True, timeout=5)
        for entry in json.loads(out.stdout or "[]"):
            addrs += [f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", []) if a.get("family") == "inet"]
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    # loopback reports "unknown"; any interface carrying an address counts as up then
    return {"up": oper == "up" or (oper == "unknown" and bool(addrs)), "addresses": addrs}


_GO2_PROBE = r"""
import sys, threading, time
from havln_robot.jsonio import dumps
iface, domain, topic, timeout = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
from unitree_sdk2py.core.channel import ChannelFactoryInitialize, ChannelSubscriber
from unitree_sdk2py.idl.unitree_go.msg.dds_ import SportModeState_
got = threading.Event()
first = []
t0 = time.monotonic()
def handle(msg):
    if not first:
        first.append((time.monotonic() - t0, int(msg.mode)))
    got.set()
ChannelFactoryInitialize(domain, iface)
sub = ChannelSubscriber(topic, SportModeState_)
sub.Init(handle, 10)
got.wait(timeout)
print(dumps({"seconds": first[0][0], "mode": first[0][1]} if first else {"seconds": None}), flush=True)
"""


def _default_go2_state(interface: str, domain: int, topic: str, timeout_s: float) -> dict[str, Any]:
    """Listen for one ``topic`` message through the Unitree SDK in a fresh process (the SDK's channel
    factory is once per process); returns ``{"seconds": s | None, "mode": int}``.

    Raises:
        RuntimeError: the probe process failed (its last stderr line).
    """
    cmd = [sys.executable, "-c", _GO2_PROBE, interface, str(domain), topic, str(timeout_s)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s + 20)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the SDK probe did not return within {timeout_s + 20:.0f} s") from None
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        err = out.stderr.strip().splitlines()
        raise RuntimeError(err[-1] if err else f"probe exit {out.returncode}")
    return json.loads(lines[-1])


def _default_realsense_devices() -> list[Any]:
    """The enumerated librealsense devices; librealsense's ~/.rum statistics go to a scratch $HOME (paths.scratch_home)."""
    import pyrealsense2 as rs

    from havln_robot.paths import scratch_home

    with scratch_home():
        return list(rs.context().query_devices())


def _default_realsense_stream(device: Any, modes: dict[str, tuple[int, int, int]], timeout_s: float) -> int:
    """Stream the profile's colour + depth modes from ``device`` through ``rs.pipeline``; frames received."""
    import pyrealsense2 as rs

    serial = device.get_info(rs.camera_info.serial_number)
    cfg = rs.config()
    cfg.enable_device(serial)
    w, h, fps = modes["color"]
    cfg.enable_stream(rs.stream.color, w, h, rs.format.rgb8, fps)
    w, h, fps = modes["depth"]
    cfg.enable_stream(rs.stream.depth, w, h, rs.format.z16, fps)
    from havln_robot.paths import scratch_home

    with scratch_home():  # librealsense writes ~/.rum/rum.json on pipeline start
        pipe = rs.pipeline()
        pipe.start(cfg)
    n = 0
    try:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end and n < 5:
            ok, _ = pipe.try_wait_for_frames(int(max(1, (end - time.monotonic()) * 1000)))
            n += int(ok)
    finally:
        pipe.stop()
    return n


def _default_clock() -> dict[str, Any]:
    """``{"synchronized": bool | None, "source": str}`` from timedatectl, else chronyc."""
    try:
        out = subprocess.run(["timedatectl", "show", "-p", "NTPSynchronized", "--value"], capture_output=True, text=True, timeout=5)
        v = out.stdout.strip().lower()
        if out.returncode == 0 and v in ("yes", "no"):
            return {"synchronized": v == "yes", "source": "timedatectl"}
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        out = subprocess.run(["chronyc", "-n", "tracking"], capture_output=True, text=True, timeout=5)
        if out.returncode == 0:
            m = re.search(r"Leap status\s*:\s*(.+)", out.stdout)
            return {"synchronized": bool(m) and m.group(1).strip() == "Normal", "source": "chronyc"}
    except (OSError, subprocess.SubprocessError):
        pass
    return {"synchronized": None, "source": "neither timedatectl nor chronyc answered"}


def _default_graph(topics: list[str], timeout_s: float) -> dict[str, Any]:
    """Publishers and subscribers of ``topics`` on the ROS graph (this process's DDS environment), and
    the frame_id of one Imu message per Imu topic.

    Returns ``{topic: [publisher], "_subs": {topic: [subscriber]}, "_imu_frame": {topic: frame}}``,
    each endpoint ``{"node": "/ns/name", "reliability": "reliable" | "best_effort", "type": ...}``.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSReliabilityPolicy, qos_profile_sensor_data

    ctx = rclpy.Context()
    rclpy.init(context=ctx, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    node = rclpy.create_node("havln_doctor", context=ctx, start_parameter_services=False)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    try:
        time.sleep(timeout_s)  # discovery of the running nodes
        info: dict[str, Any] = {"_imu_frame": {}, "_subs": {}}

        def endpoints(found: Any) -> list[dict[str, str]]:
            return [
                {
                    "node": f"{p.node_namespace.rstrip('/')}/{p.node_name}",
                    "reliability": "reliable" if p.qos_profile.reliability == QoSReliabilityPolicy.RELIABLE else "best_effort",
                    "type": p.topic_type,
                }
                for p in found
                if p.node_name != "havln_doctor"
            ]

        for t in topics:
            info[t] = endpoints(node.get_publishers_info_by_topic(t))
            info["_subs"][t] = endpoints(node.get_subscriptions_info_by_topic(t))
            if any(p["type"] == "sensor_msgs/msg/Imu" for p in info[t]):
                from sensor_msgs.msg import Imu

                got: list[str] = []
                sub = node.create_subscription(Imu, t, lambda m, got=got: got.append(m.header.frame_id), qos_profile_sensor_data)
                end = time.monotonic() + timeout_s
                while not got and time.monotonic() < end:
                    executor.spin_once(timeout_sec=0.05)
                node.destroy_subscription(sub)
                info["_imu_frame"][t] = got[0] if got else None
        return info
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def _default_robots(timeout_s: float) -> list[dict[str, Any]]:
    """The Go2 drivers on the ROS domain: one record per message of every ``.../go2/identity`` topic
    (transient local: each driver's identity is delivered to a late joiner), each the driver's JSON
    ``{robot_id, network_interface, dds_domain_id, node}`` plus ``topic``; non-JSON messages are
    listed as ``{"robot_id": "?", "topic": ..., "node": "?"}``."""
    import json

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    ctx = rclpy.Context()
    rclpy.init(context=ctx, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    node = rclpy.create_node("havln_doctor_robots", context=ctx, start_parameter_services=False)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    found: list[dict[str, Any]] = []
    try:
        time.sleep(timeout_s)  # discovery
        for name, types in node.get_topic_names_and_types():
            if not name.endswith("/go2/identity") or "std_msgs/msg/String" not in types:
                continue

            def got(msg: Any, name: str = name) -> None:
                try:
                    rec = json.loads(msg.data)
                    rec = rec if isinstance(rec, dict) else {}
                except ValueError:
                    rec = {}
                found.append({"robot_id": str(rec.get("robot_id", "?")), "node": str(rec.get("node", "?")), **rec, "topic": name})

            node.create_subscription(String, name, got, qos)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        return found
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)


@dataclass
class Probes:
    """The doctor's view of the machine; every field can be replaced by a fake in tests.

    Attributes:
        env: environment variables.
        import_module: ``importlib.import_module`` (raise ImportError for a missing piece).
        interface: name → ``{"up": bool, "addresses": [...]}`` or None when there is no such interface.
        go2_state: (interface, domain, topic, timeout_s) → ``{"seconds": s | None, "mode": int}``.
        realsense_devices: () → the enumerated librealsense devices.
        realsense_stream: (device, {"color"|"depth": (w, h, fps)}, timeout_s) → frames received.
        disk_free: path → free bytes.
        clock: () → ``{"synchronized": bool | None, "source": str}``.
        graph: (topics, timeout_s) → publishers per topic (see :func:`_default_graph`).
        policy_time: (policy spec, device) → seconds of one policy decision (default: load and time it).
        store_holder: trial store path → who holds its writer lock, or None (default: the store's lock file).
        robots: timeout_s → the Go2 drivers seen on the ROS domain (see :func:`_default_robots`).
    """

    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    import_module: Callable[[str], Any] = _default_import
    interface: Callable[[str], dict[str, Any] | None] = _default_interface
    go2_state: Callable[[str, int, str, float], dict[str, Any]] = _default_go2_state
    realsense_devices: Callable[[], list[Any]] = _default_realsense_devices
    realsense_stream: Callable[[Any, dict[str, tuple[int, int, int]], float], int] = _default_realsense_stream
    disk_free: Callable[[Path], int] = lambda p: shutil.disk_usage(p).free
    clock: Callable[[], dict[str, Any]] = _default_clock
    graph: Callable[[list[str], float], dict[str, Any]] = _default_graph
    policy_time: Callable[[str, str], float] | None = None
    store_holder: Callable[[Path], str | None] | None = None
    robots: Callable[[float], list[dict[str, Any]]] = _default_robots


@dataclass
class Context:
    """What the checks share: the profile (validated node parameters) and the probes."""

    profile_path: Path
    nodes: dict[str, dict[str, Any]]
    probes: Probes
    offline: bool = False
    profile_error: str = ""
    dds_error: str = ""
    raw: dict[str, Any] = field(default_factory=dict)

    def param(self, node: str, key: str, default: Any = None) -> Any:
        """A node's validated parameter, or ``default`` when the profile lacks the node."""
        return self.nodes.get(node, {}).get(key, default)


def _version(mod: Any) -> str:
    v = getattr(mod, "__version__", None)
    if v:
        return str(v)
    try:
        from importlib.metadata import version

        return version(mod.__name__.split(".")[0])
    except Exception:  # noqa: BLE001 - a version is informative only
        return "unknown"


# --- the checks -------------------------------------------------------------------------------------


def check_ros(ctx: Context) -> Result:
    """ROS distro + RMW: FAIL when rclpy does not import or the RMW is not one the robot supports
    (nothing ROS would start); WARN when ``ROS_DISTRO`` is unset (pip-wheel ROS: works, not the
    Jetson's apt install) or not Humble / Jazzy."""
    env = ctx.probes.env
    try:
        ctx.probes.import_module("rclpy")
    except ImportError as exc:
        return Result("ros", FAIL, f"rclpy does not import ({exc})", "source /opt/ros/<distro>/setup.bash before activating the venv")
    rmw = env.get("RMW_IMPLEMENTATION", "") or "(unset: the distro default)"
    distro = env.get("ROS_DISTRO", "")
    if env.get("RMW_IMPLEMENTATION") and env["RMW_IMPLEMENTATION"] not in RMWS:
        return Result("ros", FAIL, f"RMW_IMPLEMENTATION={rmw}", f"export RMW_IMPLEMENTATION to one of {', '.join(RMWS)}")
    if not distro:
        return Result(
            "ros",
            WARN,
            f"rclpy imports but ROS_DISTRO is unset (pip-wheel ROS?); RMW {rmw}",
            "on the robot: source /opt/ros/humble/setup.bash (or jazzy)",
        )
    if distro not in ROS_DISTROS:
        return Result("ros", WARN, f"ROS {distro} (untested), RMW {rmw}", f"use ROS 2 {' or '.join(ROS_DISTROS)}")
    return Result("ros", OK, f"ROS {distro}, RMW {rmw}")


def check_dds(ctx: Context) -> Result:
    """DDS profile in effect: WARN when the loopback profile is forced on the robot profile (the
    robot graph is invisible from a laptop) or a Cyclone/Fast DDS config file named by the
    environment is missing (the RMW silently falls back to its defaults); FAIL on a bad HAVLN_DDS."""
    env = ctx.probes.env
    mode = env.get("HAVLN_DDS", "loopback").strip().lower() or "loopback"
    if mode not in ("loopback", "robot"):
        return Result("dds", FAIL, f"HAVLN_DDS={mode!r}", "set HAVLN_DDS to 'robot' on the Go2 (or unset it for loopback)")
    if ctx.dds_error:
        return Result("dds", FAIL, ctx.dds_error, "reinstall the package (colcon build) so share/havln_robot/config is complete")
    parts = [f"HAVLN_DDS={mode}"]
    for var in ("FASTRTPS_DEFAULT_PROFILES_FILE", "CYCLONEDDS_URI"):
        val = env.get(var)
        if val:
            parts.append(f"{var}={val}")
            path = val[7:] if val.startswith("file://") else val
            if not path.lstrip().startswith("<") and "," not in path and not Path(path).is_file():
                return Result("dds", WARN, f"{var} names a missing file: {val}", f"point {var} at an existing file or unset it")
    parts.append(f"ROS_DOMAIN_ID={env.get('ROS_DOMAIN_ID', '0 (default)')}")
    robot = "go2_driver_node" in ctx.nodes or "camera_node" in ctx.nodes
    if robot and mode == "loopback" and "fastdds_loopback" in env.get("FASTRTPS_DEFAULT_PROFILES_FILE", ""):
        return Result(
            "dds",
            WARN,
            "; ".join(parts) + " (ROS graph on loopback: invisible from a laptop)",
            "export HAVLN_DDS=robot on the Jetson to see the topics from another machine",
        )
    return Result("dds", OK, "; ".join(parts))


def check_profile(ctx: Context) -> Result:
    """The profile validates and applies under a launch namespace: FAIL on an invalid profile; WARN
    when its sections are bare node names (they match only nodes in the root namespace, so
    ``namespace:=...`` would start nodes on defaults)."""
    if ctx.profile_error:
        return Result("profile", FAIL, ctx.profile_error, f"fix the line named, then: havln-robot config {ctx.profile_path}")
    bare = [k for k in ctx.raw if isinstance(k, str) and not k.startswith("/")]
    detail = f"{ctx.profile_path}: {len(ctx.nodes)} nodes valid"
    if bare:
        return Result(
            "profile",
            WARN,
            f"{detail}; sections {', '.join(bare[:3])}{'...' if len(bare) > 3 else ''} apply only without a namespace",
            "launch without namespace:=, or write the sections as /**/<node>: so they apply under any namespace",
        )
    return Result("profile", OK, detail + ", namespace-proof sections")


def check_go2(ctx: Context) -> Result:
    """The Go2 link: FAIL when the profile's interface is missing, down or has no IPv4 address,
    or no ``rt/sportmodestate`` arrives within 1 s (the driver would stop the robot at once);
    WARN when the probe was skipped (``--offline``). Skipped (OK) for profiles without the driver."""
    if "go2_driver_node" not in ctx.nodes:
        return Result("go2", OK, "profile has no go2_driver_node (not a robot profile): skipped")
    iface = str(ctx.param("go2_driver_node", "network_interface"))
    domain = int(ctx.param("go2_driver_node", "dds_domain_id", 0))
    topic = str(ctx.param("go2_driver_node", "sport_state_topic", "rt/sportmodestate"))
    info = ctx.probes.interface(iface)
    where = "go2_driver_node.network_interface"
    if info is None:
        return Result(
            "go2", FAIL, f"interface {iface!r} ({where}) does not exist", f"set {where} to the port wired to the Go2 (ip -br link)"
        )
    if not info.get("up"):
        return Result("go2", FAIL, f"interface {iface} is down", f"plug the Go2's cable in and bring it up: sudo ip link set {iface} up")
    if not info.get("addresses"):
        return Result(
            "go2",
            FAIL,
            f"interface {iface} has no IPv4 address",
            "give it one in the Go2's subnet, e.g. 192.168.123.99/24 (docs/robot.md)",
        )
    base = f"{iface} up ({', '.join(info['addresses'])})"
    if ctx.offline:
        return Result("go2", WARN, f"{base}; robot not probed (--offline)", "run without --offline next to the robot")
    try:
        got = ctx.probes.go2_state(iface, domain, topic, GO2_STATE_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - the probe's failure is the finding
        return Result("go2", FAIL, f"{base}; SDK state probe failed: {exc}", "see the sdk line; check the SDK install")
    if got.get("seconds") is None:
        return Result(
            "go2",
            FAIL,
            f"{base}; no {topic} on DDS domain {domain} within {GO2_STATE_TIMEOUT_S:.0f} s",
            "power the Go2 on, check the cable, ping 192.168.123.161; dds_domain_id must be the robot's (0)",
        )
    return Result("go2", OK, f"{base}; {topic} after {got['seconds'] * 1000:.0f} ms (mode {got.get('mode')})")


def _rs_info(rs: Any, dev: Any, what: str) -> str:
    key = getattr(rs.camera_info, what)
    try:
        return str(dev.get_info(key)) if dev.supports(key) else "?"
    except RuntimeError:
        return "?"


def check_realsense(ctx: Context) -> Result:
    """RealSense: FAIL when pyrealsense2 is missing, no device is enumerated, the wanted serial is
    absent, the link is USB 2 (848x480 depth + colour at 30 Hz needs USB 3), a profile mode is not
    offered, or no frames arrive; OK lists serial, firmware and USB speed.

    librealsense writes usage statistics to ``~/.rum/rum.json`` when its contexts are created and
    destroyed: the whole check runs with a scratch ``$HOME`` (:func:`havln_robot.paths.scratch_home`),
    every librealsense object freed before it is restored, so ``$HOME`` is left as it was."""
    import gc

    from havln_robot.paths import scratch_home

    with scratch_home():
        result = _check_realsense(ctx)
        gc.collect()
    return result


def _check_realsense(ctx: Context) -> Result:
    if "camera_node" not in ctx.nodes:
        return Result("realsense", OK, "profile has no camera_node: skipped")
    try:
        rs = ctx.probes.import_module("pyrealsense2")
    except ImportError as exc:
        return Result(
            "realsense",
            FAIL,
            f"pyrealsense2 does not import ({exc})",
            "build librealsense with -DBUILD_PYTHON_BINDINGS=ON (docs/deploy.md)",
        )
    try:
        devices = ctx.probes.realsense_devices()
    except Exception as exc:  # noqa: BLE001
        return Result("realsense", FAIL, f"librealsense could not enumerate devices ({exc})", "install the udev rules; replug the camera")
    if not devices:
        return Result("realsense", FAIL, "no RealSense found", "plug the D435i into a USB 3 port (blue) and check `rs-enumerate-devices`")
    want = str(ctx.param("camera_node", "serial_number", "") or "")
    infos = [(d, _rs_info(rs, d, "serial_number")) for d in devices]
    pick = [(d, s) for d, s in infos if not want or s == want]
    if not pick:
        return Result(
            "realsense",
            FAIL,
            f"serial {want} not found (found {', '.join(s for _, s in infos)})",
            "set camera_node.serial_number to one found, or '' for the first",
        )
    dev, serial = pick[0]
    name, fw, usb = _rs_info(rs, dev, "name"), _rs_info(rs, dev, "firmware_version"), _rs_info(rs, dev, "usb_type_descriptor")
    base = f"{name} serial {serial}, firmware {fw}, USB {usb}"
    if usb.startswith("2"):
        return Result("realsense", FAIL, base, "use a USB 3 port and cable (USB 2 cannot carry 848x480 depth + colour at 30 Hz)")
    modes = {
        "color": (
            int(ctx.param("camera_node", "color_width")),
            int(ctx.param("camera_node", "color_height")),
            int(ctx.param("camera_node", "fps")),
        ),
        "depth": (
            int(ctx.param("camera_node", "depth_width")),
            int(ctx.param("camera_node", "depth_height")),
            int(ctx.param("camera_node", "fps")),
        ),
    }
    offered: set[tuple[str, int, int, int]] = set()
    for sensor in dev.query_sensors():
        for p in sensor.get_stream_profiles():
            if p.is_video_stream_profile():
                v = p.as_video_stream_profile()
                offered.add((str(p.stream_type()).split(".")[-1], v.width(), v.height(), p.fps()))
    missing = [f"{k} {w}x{h}@{f}" for k, (w, h, f) in modes.items() if (k, w, h, f) not in offered]
    if missing:
        return Result(
            "realsense", FAIL, f"{base}; mode not offered: {', '.join(missing)}", "pick modes the camera lists (rs-enumerate-devices)"
        )
    try:
        frames = ctx.probes.realsense_stream(dev, modes, 3.0)
    except Exception as exc:  # noqa: BLE001
        return Result("realsense", FAIL, f"{base}; streaming failed: {exc}", "replug the camera; update the firmware (rs-fw-update)")
    if frames < 1:
        return Result("realsense", FAIL, f"{base}; no frames in 3 s", "replug the camera; another process may hold it (camera_node?)")
    shown = " + ".join(f"{k} {w}x{h}@{f}" for k, (w, h, f) in modes.items())
    return Result("realsense", OK, f"{base}; streaming {shown} ({frames} framesets)")


def check_sdk(ctx: Context) -> Result:
    """Unitree SDK: FAIL when unitree_sdk2py or cyclonedds does not import, or cyclonedds is not
    0.10.x (the Go2's Cyclone speaks 0.10 wire/type-object formats; 0.11+ fails to match topics);
    WARN for 0.10.x other than 0.10.2."""
    if "go2_driver_node" not in ctx.nodes:
        return Result("sdk", OK, "profile has no go2_driver_node: skipped")
    try:
        cdds = ctx.probes.import_module("cyclonedds")
    except ImportError as exc:
        return Result(
            "sdk",
            FAIL,
            f"cyclonedds does not import ({exc})",
            "pip install cyclonedds==0.10.2 built against Cyclone 0.10.2 (docs/deploy.md)",
        )
    ver = _version(cdds)
    try:
        ctx.probes.import_module("unitree_sdk2py")
    except ImportError as exc:
        return Result("sdk", FAIL, f"unitree_sdk2py does not import ({exc}); cyclonedds {ver}", "pip install unitree-sdk2py-dimos==1.0.3")
    if not ver.startswith("0.10."):
        return Result("sdk", FAIL, f"cyclonedds {ver}", f"pip install cyclonedds=={CYCLONEDDS_WANTED} (the Go2 runs 0.10.x)")
    if ver != CYCLONEDDS_WANTED:
        return Result(
            "sdk", WARN, f"unitree_sdk2py, cyclonedds {ver}", f"cyclonedds=={CYCLONEDDS_WANTED} is what this stack is tested with"
        )
    lib = ""
    try:
        lib = str(getattr(ctx.probes.import_module("cyclonedds.__library__"), "library_path", "") or "")
    except ImportError:
        pass
    base = f"unitree_sdk2py, cyclonedds {ver}" + (f", libddsc {lib}" if lib else "")
    if lib and not Path(lib).exists():
        return Result(
            "sdk",
            WARN,
            f"{base} (gone)",
            "rebuild: CYCLONEDDS_HOME=<Cyclone 0.10.2 prefix> pip install --no-binary cyclonedds --force-reinstall cyclonedds==0.10.2",
        )
    if ctx.probes.env.get("RMW_IMPLEMENTATION") == "rmw_cyclonedds_cpp" and lib:
        rmw_lib = _ros_libddsc(ctx.probes.env)
        if rmw_lib and os.path.realpath(rmw_lib) != os.path.realpath(lib):
            return Result(
                "sdk",
                WARN,
                f"{base}; rmw_cyclonedds_cpp loads {rmw_lib}: two Cyclone DDS libraries in go2_driver_node's process",
                "rebuild the binding with CYCLONEDDS_HOME=/opt/ros/$ROS_DISTRO, or run ROS on rmw_fastrtps_cpp (docs/robot.md)",
            )
    return Result("sdk", OK, base)


def _ros_libddsc(env: Mapping[str, str]) -> str | None:
    """The ``libddsc.so.0`` the ROS install's rmw_cyclonedds_cpp loads (first on AMENT_PREFIX_PATH), or None."""
    for prefix in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        for name in ("libddsc.so.0", "libddsc.so"):
            cand = Path(prefix) / "lib" / name
            if prefix and cand.exists():
                return str(cand)
    return None


def _policy_time(spec: str, device: str) -> float:
    import numpy as np

    from havln_robot.policy.api import DEPTH_SHAPE, RGB_SHAPE, Observation
    from havln_robot.policy.registry import load_policy

    pol = load_policy(spec, device=device)
    n = int(getattr(pol, "n_views", 0) or getattr(getattr(pol, "config", None), "views", 0) or 12)
    obs = Observation(
        np.zeros((n, *RGB_SHAPE), np.uint8),
        np.full((n, *DEPTH_SHAPE), 0.2, np.float32),
        np.linspace(0, 2 * np.pi, n, endpoint=False, dtype=np.float32) - np.float32(np.pi),
        0,
    )
    pol.reset("walk forward and stop at the door")
    pol.act(obs)  # warm-up (allocations, CUDA kernels)
    pol.reset("walk forward and stop at the door")
    t = time.perf_counter()
    pol.act(obs)
    return time.perf_counter() - t


def check_torch(ctx: Context) -> Result:
    """torch + CUDA: FAIL when torch does not import (agent_node cannot run a checkpoint); WARN
    without CUDA (the policy runs on the CPU: the measured decision time says whether that is
    acceptable) or when agent_node is set to ``device: cpu`` on a CUDA machine."""
    try:
        torch = ctx.probes.import_module("torch")
    except ImportError as exc:
        return Result("torch", FAIL, f"torch does not import ({exc})", "install NVIDIA's JetPack torch wheel (docs/deploy.md)")
    cuda = bool(torch.cuda.is_available())
    device = "cuda" if cuda else "cpu"
    from havln_robot.policy.registry import is_builtin
    from havln_robot.policy.remote import is_remote

    spec = str(ctx.param("agent_node", "policy", "") or "")
    timing = ""
    if is_remote(spec):
        timing = f"; the policy is served by {spec} (its machine's torch decides)"
    elif spec and not is_builtin(spec):
        try:
            timer = ctx.probes.policy_time or _policy_time
            timing = f"; one {spec} decision {timer(spec, device) * 1000:.0f} ms on {device}"
        except Exception as exc:  # noqa: BLE001 - reported, the model check names the file problem
            timing = f"; policy not timed ({str(exc).splitlines()[0][:120]})"
    if not cuda:
        return Result("torch", WARN, f"torch {_version(torch)}, no CUDA device{timing}", "on the Jetson install JetPack's CUDA torch wheel")
    name = torch.cuda.get_device_name(0)
    if ctx.param("agent_node", "device", "cpu") == "cpu":
        return Result("torch", WARN, f"torch {_version(torch)}, CUDA {name}{timing}", "set agent_node.device: cuda in the profile")
    return Result("torch", OK, f"torch {_version(torch)}, CUDA {name}{timing}")


def check_model(ctx: Context) -> Result:
    """Model file: FAIL when agent_node's checkpoint is missing or unreadable; OK prints its
    sha256 (compare with the one the trial store records) and WARN when a ``<model>.sha256`` file
    beside it disagrees."""
    spec = str(ctx.param("agent_node", "policy", "") or "")
    if not spec:
        return Result("model", OK, "profile has no agent_node policy: skipped")
    from havln_robot.policy.registry import is_builtin

    if is_builtin(spec):
        return Result("model", WARN, f"policy {spec!r} is a builtin baseline, not a trained model", "set agent_node.policy to a checkpoint")
    from havln_robot.policy.remote import is_remote

    if is_remote(spec):  # served from another machine (docs/two_machines.md): is it answering?
        from havln_robot.policy.api import PolicyError
        from havln_robot.policy.remote import RemotePolicy

        try:
            pol = RemotePolicy(spec, wait_s=2.0)
        except PolicyError as exc:
            return Result(
                "model", FAIL, str(exc).splitlines()[0], "start havln-robot policy-server on the inference machine, check the link"
            )
        return Result("model", OK, f"policy server {spec} serves {pol.name} ({pol.views} view(s) per step)")
    try:
        from havln_robot.policy.registry import resolve_checkpoint

        path = resolve_checkpoint(spec)
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except (ValueError, OSError) as exc:
        return Result("model", FAIL, str(exc).splitlines()[0], "set agent_node.policy to an existing checkpoint (models/)")
    digest = h.hexdigest()
    side = path.with_name(path.name + ".sha256")
    if side.is_file():
        from havln_robot.jsonio import JsonFileError, read_bytes_capped

        try:  # "<hex digest>  <name>": bounded, any bytes (a wrong file is a mismatch, not a traceback)
            words = read_bytes_capped(side, 4096, gunzip=False).decode("utf-8", "replace").split()
        except (JsonFileError, OSError):
            return Result("model", WARN, f"{path.name} sha256 {digest[:16]}...: {side.name} is not a digest file", "copy the model again")
        want = words[0].lower() if words else ""
        if want != digest:
            return Result("model", WARN, f"{path.name} sha256 {digest[:16]}... != {side.name}", "copy the model again")
    return Result("model", OK, f"{path} sha256 {digest}")


def mcap_bytes_per_hour(p: Mapping[str, Any]) -> float:
    """Estimated MCAP bytes per hour from trial_logger_node parameters ``p`` and the camera modes.

    Images: ``(w / stride) * (h / stride)`` pixels at ``mcap_image_max_rate_hz`` (colour 3 bytes,
    JPEG counted at 1/8; depth 2 bytes raw), then zstd counted at 1/2 for depth; plus 100 kB/s for
    odom/imu/cmd_vel/actions/diagnostics. A planning figure, deliberately on the high side.
    """
    w, h, fps = p.get("_color_w", 848), p.get("_color_h", 480), p.get("_fps", 30)
    stride = max(1, int(p.get("mcap_image_stride", 1)))
    rate = float(p.get("mcap_image_max_rate_hz", 0.0)) or float(fps)
    px = (w // stride) * (h // stride)
    per_s = 100_000.0
    if p.get("record_mcap", True) and p.get("mcap_record_camera", True):
        color = px * 3 / (8 if p.get("mcap_image_format") == "jpeg" else 1)
        depth = px * 2 / (2 if p.get("mcap_compression", "zstd") != "none" else 1)
        per_s += rate * (color + depth)
    return per_s * 3600.0 * RECORD_HOURS if p.get("record_mcap", True) else 0.0


def _store_path(ctx: Context) -> Path:
    from havln_robot.trials.store import default_db_path

    db = str(ctx.param("trial_logger_node", "db_path", "") or "")
    return Path(db).expanduser() if db else default_db_path(str(ctx.param("trial_logger_node", "platform", "go2")))


def check_disk(ctx: Context) -> Result:
    """Free disk where the MCAP bags go: FAIL below the profile's recording rate x 1 hour, WARN
    below 3 hours (a trial day), OK otherwise."""
    if "trial_logger_node" not in ctx.nodes:
        return Result("disk", OK, "profile has no trial_logger_node: skipped")
    from havln_robot.trials.store import default_mcap_dir

    p = dict(ctx.nodes["trial_logger_node"])
    if "camera_node" in ctx.nodes:
        p.update(
            _color_w=ctx.param("camera_node", "color_width"),
            _color_h=ctx.param("camera_node", "color_height"),
            _fps=ctx.param("camera_node", "fps"),
        )
    try:
        folder = Path(p["mcap_dir"]).expanduser() if p.get("mcap_dir") else default_mcap_dir(_store_path(ctx))
    except ValueError as exc:
        return Result("disk", FAIL, str(exc), "set trial_logger_node.platform or db_path")
    need = mcap_bytes_per_hour(p)
    if need <= 0:
        return Result("disk", OK, "MCAP recording off (trial_logger_node.record_mcap: false): skipped")
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = ctx.probes.disk_free(probe)
    gb = 1e9
    detail = f"{free / gb:.1f} GB free at {folder} (on {probe}); MCAP ~{need / gb:.1f} GB per hour"
    if free < need:
        return Result(
            "disk", FAIL, detail, "free disk space or set trial_logger_node.mcap_dir to a bigger disk (or a higher mcap_image_stride)"
        )
    if free < 3 * need:
        return Result("disk", WARN, detail + " (less than 3 hours)", "free space before a full trial day")
    return Result("disk", OK, detail + f" ({free / max(need, 1):.0f} h)")


def check_store(ctx: Context) -> Result:
    """Trial store: FAIL when the store (or, before the first trial, the nearest existing folder
    above it, where the logger will create it) cannot be written, or another process holds its
    writer lock (a second logger would be refused at start). Leaves nothing behind: one temporary
    file, written, synced and removed."""
    if "trial_logger_node" not in ctx.nodes:
        return Result("store", OK, "profile has no trial_logger_node: skipped")
    try:
        db = _store_path(ctx)
    except ValueError as exc:
        return Result("store", FAIL, str(exc), "set trial_logger_node.platform or db_path")
    where = db.parent
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        if not where.is_dir():
            raise NotADirectoryError(20, "not a directory")
        from havln_robot.paths import scratch_dir

        # a staging folder named after this process: one left by a doctor killed here is removed by the next
        with scratch_dir(where, "doctor") as d, open(d / "probe", "wb") as f:
            f.write(b"ok")
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        return Result("store", FAIL, f"{db}: {where} not writable ({exc.strerror})", "fix the permissions or set trial_logger_node.db_path")
    holder = (ctx.probes.store_holder or _store_holder)(db)
    if holder:
        return Result("store", FAIL, f"{db}: held by another writer ({holder})", "stop that trial_logger_node first (one writer per store)")
    state = "exists" if db.exists() else f"created on the first trial under {where}"
    wal = _store_wal_problem(db) if db.exists() else None
    if wal:
        return Result("store", WARN, wal, "close the program reading the store; back it up with havln-robot trial backup OUT")
    return Result("store", OK, f"{db} writable ({state})")


def _store_wal_problem(db: Path) -> str | None:
    """The store's WAL health (:meth:`havln_robot.trials.store.TrialStore.wal_problem`): a checkpoint a reader
    blocks; None when healthy or when the store cannot be read here (other checks say why)."""
    try:
        from havln_robot.trials.store import TrialError, TrialStore
    except ImportError:
        return None
    try:
        with TrialStore(db, readonly=True, timeout_s=1.0) as st:
            return st.wal_problem()
    except (TrialError, OSError):
        return None


def _store_holder(db: Path) -> str | None:
    """Who holds the store's writer lock, where this build has one (``havln_robot.locks``)."""
    try:
        from havln_robot import locks  # type: ignore[attr-defined]
        from havln_robot.trials.store import lock_path  # type: ignore[attr-defined]
    except ImportError:
        return None
    return locks.holder(lock_path(db))


def check_clock(ctx: Context) -> Result:
    """System clock: WARN when not NTP-synchronised or unknown (trial and MCAP times compared with
    a laptop's or a video would be off; the robot still runs)."""
    st = ctx.probes.clock()
    if st.get("synchronized") is True:
        return Result("clock", OK, f"synchronised ({st.get('source')})")
    if st.get("synchronized") is False:
        return Result(
            "clock",
            WARN,
            f"not synchronised ({st.get('source')})",
            "sudo timedatectl set-ntp true, or chrony pointed at the lab's time server",
        )
    return Result(
        "clock", WARN, f"unknown ({st.get('source')})", "install chrony (or enable systemd-timesyncd) so trial times match other machines"
    )


def check_graph(ctx: Context) -> Result:
    """Running stack (people source, IMU frame, sensor QoS): WARN when the stack is not running
    (nothing to check), when ``havln/people`` has no publisher and motion_node has no in-process
    detector (personal space then works on depth obstacles only), when the profile runs people_node
    but ``havln/people_tracks`` has no publisher (the people source is not alive), when the Imu arrives in a frame
    motion_node cannot read with its ``imu_mount`` (body frames, the driver's ``imu_frame`` and the
    D435i optical frames are read; :mod:`havln_robot.motion.imu_frame`), or when a sensor topic is published best-effort while a node subscribes
    reliable (incompatible QoS: that subscriber receives nothing)."""
    if "motion_node" not in ctx.nodes:
        return Result("graph", OK, "profile has no motion_node: skipped")
    people = str(ctx.param("motion_node", "people_topic"))
    imu = str(ctx.param("motion_node", "imu_topic"))
    depth = str(ctx.param("motion_node", "depth_topic"))
    topics = ["/" + t.lstrip("/") for t in (people, imu, depth)]
    tracks = str(ctx.param("people_node", "people_tracks_topic", "")) if "people_node" in ctx.nodes else ""
    query = topics + (["/" + tracks.lstrip("/")] if tracks else [])
    try:
        g = ctx.probes.graph(query, 1.0)
    except Exception as exc:  # noqa: BLE001
        return Result("graph", WARN, f"ROS graph not readable ({str(exc).splitlines()[0][:120]})", "source ROS and re-run")
    if not any(g.get(t) for t in topics):
        return Result(
            "graph",
            WARN,
            "stack not running: people source, IMU frame and camera QoS not checked",
            f"start the stack (ros2 launch havln_robot <launch file>, or havln-robot launch {ctx.profile_path}) and re-run doctor",
        )
    problems = []
    detector = str(ctx.param("motion_node", "person_detector", "") or "")
    if not g.get(topics[0]) and not detector:
        problems.append(f"no publisher on {topics[0]} and no motion_node.person_detector (people seen as depth obstacles only)")
    if tracks and not g.get(query[-1]):
        problems.append(f"the profile runs people_node but nothing publishes {query[-1]} (no tracked people: no velocities, no forecast)")
    frame = g.get("_imu_frame", {}).get(topics[1])
    if g.get(topics[1]) and frame is not None:
        # motion_node reads the Imu in its frame_id (imu_mount): body frames and the D435i optical frame
        from havln_robot.motion.imu_frame import ImuFrameError, imu_axes

        driver_frame = str(ctx.param("go2_driver_node", "imu_frame", "imu_link"))
        mount = str(ctx.param("motion_node", "imu_mount", "auto"))
        try:
            if not (mount == "auto" and frame == driver_frame):
                imu_axes(frame, mount)
        except ImuFrameError as exc:
            problems.append(f"{topics[1]}: {exc}")
    for t in topics:
        be = [p["node"] for p in g.get(t, []) if p.get("reliability") == "best_effort"]
        strict = [s["node"] for s in g.get("_subs", {}).get(t, []) if s.get("reliability") == "reliable"]
        if be and strict:
            problems.append(
                f"{t} published best-effort by {', '.join(be)} but subscribed reliable by {', '.join(strict)} (receives nothing)"
            )
    if problems:
        fix = "start a people source; publish the Imu in a body or optical frame (or set motion_node imu_mount); match the sensor QoS (publish reliable or subscribe best-effort)"
        return Result("graph", WARN, "; ".join(problems), fix)
    alive = f" and tracks on {query[-1]}" if tracks else ""
    return Result("graph", OK, f"people on {topics[0]}{alive}, IMU frame {frame}, sensor QoS compatible")


def check_robots(ctx: Context) -> Result:
    """The robots on this ROS domain (each go2_driver_node publishes its identity on ``go2/identity``):
    OK listing them; WARN when two robots share one identity topic (brought up without namespaces:
    both would obey the same cmd_vel; their drivers refuse motion) or when none is seen."""
    try:
        seen = ctx.probes.robots(1.0)
    except Exception as exc:  # noqa: BLE001
        return Result("robots", WARN, f"ROS graph not readable ({str(exc).splitlines()[0][:120]})", "source ROS and re-run")
    if not seen:
        return Result(
            "robots",
            WARN,
            "no robot on this ROS domain (no go2/identity)",
            "start the robot (ros2 launch havln_robot go2.launch.py) and re-run",
        )
    by_topic: dict[str, set[str]] = {}
    for r in seen:
        by_topic.setdefault(str(r["topic"]), set()).add(str(r["robot_id"]))
    listing = "; ".join(f"{', '.join(sorted(ids))} on {t}" for t, ids in sorted(by_topic.items()))
    shared = {t: ids for t, ids in by_topic.items() if len(ids) > 1}
    if shared:
        t, ids = next(iter(sorted(shared.items())))
        return Result(
            "robots",
            WARN,
            f"robots {', '.join(sorted(ids))} share {t} (no namespaces): both would obey one cmd_vel; their drivers refuse motion. Seen: {listing}",
            "give each robot its own namespace (ros2 launch havln_robot two_go2.launch.py, or go2.launch.py namespace:=robot_a)",
        )
    n = sum(len(ids) for ids in by_topic.values())
    return Result("robots", OK, f"{n} robot{'s' if n != 1 else ''}: {listing}")


#: name → (check, what it covers); run in this order.
CHECKS: dict[str, Callable[[Context], Result]] = {
    "ros": check_ros,
    "dds": check_dds,
    "profile": check_profile,
    "go2": check_go2,
    "realsense": check_realsense,
    "sdk": check_sdk,
    "torch": check_torch,
    "model": check_model,
    "disk": check_disk,
    "store": check_store,
    "clock": check_clock,
    "graph": check_graph,
    "robots": check_robots,
}


def make_context(profile: str | Path, probes: Probes | None = None, offline: bool = False) -> Context:
    """Read ``profile`` (an invalid one becomes the profile check's FAIL, never an exception)."""
    from havln_robot.config import load_profile, read_yaml
    from havln_robot.params import ConfigError

    path = Path(profile)
    ctx = Context(profile_path=path, nodes={}, probes=probes or Probes(), offline=offline)
    try:
        raw = read_yaml(path)
        ctx.raw = raw if isinstance(raw, dict) else {}
        ctx.nodes = load_profile(path).nodes
    except ConfigError as exc:
        ctx.profile_error = str(exc)
    return ctx


#: Checks that read the profile's nodes: without a valid profile they would see "no such node" and
#: skip with OK (a typo in one value hid the Go2, RealSense, SDK, model, disk and store checks).
NEEDS_PROFILE = ("dds", "go2", "realsense", "sdk", "model", "disk", "store", "graph")


def run_checks(ctx: Context, only: list[str] | None = None) -> list[Result]:
    """Run the checks (all, or those named in ``only``); a check that raises becomes a FAIL line.

    With an invalid profile, the checks of :data:`NEEDS_PROFILE` are WARN "not checked", not OK.
    """
    out = []
    for name, fn in CHECKS.items():
        if only and name not in only:
            continue
        if ctx.profile_error and name in NEEDS_PROFILE:
            out.append(
                Result(name, WARN, "not checked: the profile did not load (see the profile line)", "fix the profile, then re-run doctor")
            )
            continue
        try:
            out.append(fn(ctx))
        except Exception as exc:  # noqa: BLE001 - a broken check must not hide the others
            out.append(
                Result(
                    name,
                    FAIL,
                    f"check crashed: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}",
                    "report this (HAVLN_DEBUG=1 for details)",
                )
            )
    return out


def default_profile() -> Path:
    """``config/go2.yaml`` of this install (source tree or share/havln_robot)."""
    from havln_robot.paths import config_dir

    return config_dir() / "go2.yaml"


def main(argv: list[str] | None = None, probes: Probes | None = None) -> int:
    """``havln-robot doctor [--profile FILE] [--json] [--offline] [--only a,b]``; 1 on any FAIL."""
    ap = argparse.ArgumentParser(prog="havln-robot doctor", description="Check a robot machine before a trial day (one line per check).")
    ap.add_argument("--profile", type=path_arg, default=None, help="deployment profile (default config/go2.yaml)")
    ap.add_argument("--json", action="store_true", help="print the results as a JSON list")
    ap.add_argument("--offline", action="store_true", help="do not probe the Go2 over its network (no packets on that interface)")
    ap.add_argument("--only", type=nonempty("a comma list of checks"), default=None, help=f"comma-separated subset of: {', '.join(CHECKS)}")
    args = ap.parse_args(argv)
    only = [s.strip() for s in (args.only or "").split(",") if s.strip()]
    bad = [s for s in only if s not in CHECKS]
    if bad:
        print(f"havln-robot doctor: --only {','.join(bad)}: unknown check; use some of {', '.join(CHECKS)}", file=sys.stderr)
        return 2
    ctx = make_context(args.profile or default_profile(), probes, offline=args.offline)
    if probes is None:
        # the DDS environment every havln_robot node applies at start (havln_robot.dds): the ros, dds
        # and graph checks then see what the nodes will use, and nothing leaves loopback by default
        from havln_robot.dds import configure_dds

        try:
            configure_dds()
        except ValueError:
            pass  # a bad HAVLN_DDS: the dds check says so
        except OSError as exc:
            ctx.dds_error = str(exc)
    results = run_checks(ctx, only or None)
    if args.json:
        from havln_robot.jsonio import dumps

        print(dumps([asdict(r) for r in results], indent=2))
    else:
        for r in results:
            print(r.line(), flush=True)
        n = {s: sum(r.status == s for r in results) for s in (OK, WARN, FAIL)}
        print(f"{n[OK]} OK, {n[WARN]} WARN, {n[FAIL]} FAIL ({ctx.profile_path})")
    return 1 if any(r.status == FAIL for r in results) else 0
