"""``havln-robot doctor``: every check's OK / WARN / FAIL through fakes, the Go2 probe against the fake
Go2 on loopback, RealSense checks on a librealsense software device, and the command on this
machine (no robot: FAIL lines, exit 1, no traceback). Nothing here sends packets off the machine:
the Go2 probe runs only on ``lo`` and the command test uses ``--offline``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from conftest import domain

from havln_robot import doctor
from havln_robot.doctor import FAIL, OK, WARN, Probes

REPO = Path(__file__).resolve().parent.parent
GO2 = REPO / "config" / "go2.yaml"
ROS_DOMAIN = domain(0)
UNITREE_DOMAIN = domain(1)  # the fake Go2's SDK domain, distinct from ROS (as test_robot_driver.py)


def _missing(name):
    raise ImportError(f"No module named {name!r}")


def ctx_with(**probe_fields):
    """Context for config/go2.yaml with fakes for the given probe fields (the rest are real)."""
    base = {"env": {"ROS_DISTRO": "humble", "RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp", "HAVLN_DDS": "robot"}}
    base.update(probe_fields)
    return doctor.make_context(GO2, Probes(**base))


def imports(**fakes):
    """An import_module that returns fakes (a value of None = missing), else the real module."""

    def imp(name):
        if name in fakes:
            if fakes[name] is None:
                _missing(name)
            return fakes[name]
        return doctor._default_import(name)

    return imp


# --- ROS, DDS, profile ------------------------------------------------------------------------------


def test_ros_check():
    assert doctor.check_ros(ctx_with()).status == OK
    r = doctor.check_ros(ctx_with(import_module=imports(rclpy=None)))
    assert r.status == FAIL and "rclpy" in r.detail and "setup.bash" in r.fix
    r = doctor.check_ros(ctx_with(env={"RMW_IMPLEMENTATION": "rmw_connextdds"}))
    assert r.status == FAIL and "rmw_cyclonedds_cpp" in r.fix
    r = doctor.check_ros(ctx_with(env={"RMW_IMPLEMENTATION": "rmw_fastrtps_cpp"}))
    assert r.status == WARN and "ROS_DISTRO is unset" in r.detail
    assert doctor.check_ros(ctx_with(env={"ROS_DISTRO": "rolling"})).status == WARN


def test_dds_check(tmp_path):
    r = doctor.check_dds(ctx_with(env={"HAVLN_DDS": "lan"}))
    assert r.status == FAIL and "HAVLN_DDS" in r.detail
    r = doctor.check_dds(ctx_with(env={"HAVLN_DDS": "robot", "CYCLONEDDS_URI": "file:///nowhere/cyclone.xml"}))
    assert r.status == WARN and "missing file" in r.detail
    r = doctor.check_dds(ctx_with(env={"FASTRTPS_DEFAULT_PROFILES_FILE": str(REPO / "config" / "fastdds_loopback.xml")}))
    assert r.status == WARN and "HAVLN_DDS=robot" in r.fix
    uri = tmp_path / "cyclone.xml"
    uri.write_text("<CycloneDDS/>")
    r = doctor.check_dds(ctx_with(env={"HAVLN_DDS": "robot", "CYCLONEDDS_URI": f"file://{uri}", "ROS_DOMAIN_ID": "7"}))
    assert r.status == OK and "ROS_DOMAIN_ID=7" in r.detail


def test_profile_check(tmp_path):
    r = doctor.check_profile(ctx_with())
    assert r.status == OK and "namespace-proof" in r.detail  # shipped profiles use /**/node keys
    old = tmp_path / "old.yaml"
    old.write_text(GO2.read_text().replace("/**/", ""))
    r = doctor.check_profile(doctor.make_context(old, Probes(env={})))
    assert r.status == WARN and "namespace" in r.detail  # bare node names: root namespace only
    bad = tmp_path / "go2.yaml"
    bad.write_text(GO2.read_text().replace("max_linear_speed: 0.3", "max_linear_speed: fast"))
    ctx = doctor.make_context(bad, Probes(env={}))
    r = doctor.check_profile(ctx)
    assert r.status == FAIL and "max_linear_speed" in r.detail and "havln-robot config" in r.fix


def test_an_invalid_profile_checks_nothing_that_needs_it_and_says_so(tmp_path):
    """Before: one bad value in go2.yaml made go2, realsense, sdk, model, disk, store and graph read
    'profile has no ...: skipped' with OK -- 8 OK for a robot machine nothing was checked on."""
    bad = tmp_path / "go2.yaml"
    bad.write_text(GO2.read_text().replace("max_linear_speed: 0.3", "max_linear_speed: fast"))
    for profile in (bad, tmp_path / "missing.yaml"):
        results = {r.name: r for r in doctor.run_checks(doctor.make_context(profile, Probes(env={})), ["profile", *doctor.NEEDS_PROFILE])}
        assert results["profile"].status == FAIL
        for name in doctor.NEEDS_PROFILE:
            assert results[name].status == WARN and "not checked" in results[name].detail, results[name]


# --- Go2 link ---------------------------------------------------------------------------------------


def test_go2_interface_checks():
    r = doctor.check_go2(ctx_with(interface=lambda name: None))
    assert r.status == FAIL and "'eth0'" in r.detail and "network_interface" in r.fix
    r = doctor.check_go2(ctx_with(interface=lambda name: {"up": False, "addresses": []}))
    assert r.status == FAIL and "down" in r.detail
    r = doctor.check_go2(ctx_with(interface=lambda name: {"up": True, "addresses": []}))
    assert r.status == FAIL and "no IPv4 address" in r.detail and "192.168.123" in r.fix
    up = {"up": True, "addresses": ["192.168.123.99/24"]}
    ctx = ctx_with(interface=lambda name: up, go2_state=lambda *a: pytest.fail("probed while offline"))
    ctx.offline = True
    assert doctor.check_go2(ctx).status == WARN
    r = doctor.check_go2(ctx_with(interface=lambda name: up, go2_state=lambda *a: {"seconds": None}))
    assert r.status == FAIL and "rt/sportmodestate" in r.detail and "within 1 s" in r.detail
    r = doctor.check_go2(ctx_with(interface=lambda name: up, go2_state=lambda *a: {"seconds": 0.02, "mode": 1}))
    assert r.status == OK and "20 ms" in r.detail


def _loopback_ctx():
    ctx = ctx_with()
    ctx.nodes["go2_driver_node"].update(network_interface="lo", dds_domain_id=UNITREE_DOMAIN)
    return ctx


def test_go2_probe_against_the_fake_go2():
    from havln_robot.robot.fake_go2 import FakeGo2Process

    # nobody on the domain yet: the probe gives up after 1 s
    r = doctor.check_go2(_loopback_ctx())
    assert r.status == FAIL and "no rt/sportmodestate" in r.detail, r.line()
    fake = FakeGo2Process(UNITREE_DOMAIN)
    try:
        fake.wait_ready()
        r = doctor.check_go2(_loopback_ctx())
    finally:
        fake.close()
    assert r.status == OK and "lo up (127.0.0.1/8)" in r.detail and "mode 6" in r.detail, r.line()


# --- RealSense --------------------------------------------------------------------------------------


def _software_device(width=848, height=480, fps=30, usb="3.2", serial="233522071234"):
    import pyrealsense2 as rs

    from havln_robot.perception.preprocess import Intrinsics
    from havln_robot.perception.realsense import SoftwareCamera

    cam = SoftwareCamera(Intrinsics(width, height, 600.0, 600.0, width / 2, height / 2), fps=fps)
    for key, val in (
        ("name", "Intel RealSense D435I"),
        ("serial_number", serial),
        ("firmware_version", "5.16.0.1"),
        ("usb_type_descriptor", usb),
    ):
        cam.device.register_info(getattr(rs.camera_info, key), val)
    return cam


def _stream_software(cam):
    """A stream probe for a software device: push frames through librealsense and count what the syncer delivers."""

    def stream(device, modes, timeout_s):
        assert modes == {"color": (848, 480, 30), "depth": (848, 480, 30)}
        cam.start()
        try:
            n = 0
            for _ in range(3):
                cam.push(np.zeros((480, 848, 3), np.uint8), np.full((480, 848), 1000, np.uint16))
                n += int(cam.wait(2000).size() == 2)
            return n
        finally:
            cam.stop()

    return stream


def test_realsense_software_device_ok():
    cam = _software_device()
    r = doctor.check_realsense(ctx_with(realsense_devices=lambda: [cam.device], realsense_stream=_stream_software(cam)))
    assert r.status == OK, r.line()
    assert "serial 233522071234" in r.detail and "firmware 5.16.0.1" in r.detail and "USB 3.2" in r.detail
    assert "streaming color 848x480@30 + depth 848x480@30" in r.detail and int(r.detail.split("(")[-1].split()[0]) >= 1


def test_realsense_failures():
    r = doctor.check_realsense(ctx_with(import_module=imports(pyrealsense2=None)))
    assert r.status == FAIL and "pyrealsense2" in r.detail and "BUILD_PYTHON_BINDINGS" in r.fix
    r = doctor.check_realsense(ctx_with(realsense_devices=lambda: []))
    assert r.status == FAIL and r.detail == "no RealSense found" and "USB 3" in r.fix
    cam = _software_device(usb="2.1")
    r = doctor.check_realsense(ctx_with(realsense_devices=lambda: [cam.device]))
    assert r.status == FAIL and "USB 2.1" in r.detail and "USB 3 port" in r.fix
    cam = _software_device(width=640, height=480)
    r = doctor.check_realsense(ctx_with(realsense_devices=lambda: [cam.device]))
    assert r.status == FAIL and "mode not offered: color 848x480@30, depth 848x480@30" in r.detail
    cam = _software_device()
    r = doctor.check_realsense(ctx_with(realsense_devices=lambda: [cam.device], realsense_stream=lambda *a: 0))
    assert r.status == FAIL and "no frames" in r.detail
    ctx = ctx_with(realsense_devices=lambda: [cam.device])
    ctx.nodes["camera_node"]["serial_number"] = "999"
    r = doctor.check_realsense(ctx)
    assert r.status == FAIL and "serial 999 not found (found 233522071234)" in r.detail


# --- SDK, torch, model ------------------------------------------------------------------------------


def test_sdk_check():
    r = doctor.check_sdk(ctx_with())  # the real install: unitree_sdk2py + cyclonedds 0.10.2
    assert r.status == OK and "cyclonedds 0.10.2" in r.detail
    r = doctor.check_sdk(ctx_with(import_module=imports(cyclonedds=None)))
    assert r.status == FAIL and "cyclonedds==0.10.2" in r.fix
    r = doctor.check_sdk(ctx_with(import_module=imports(unitree_sdk2py=None)))
    assert r.status == FAIL and "unitree-sdk2py" in r.fix
    r = doctor.check_sdk(ctx_with(import_module=imports(cyclonedds=types.SimpleNamespace(__version__="0.11.0"))))
    assert r.status == FAIL and "0.11.0" in r.detail
    r = doctor.check_sdk(ctx_with(import_module=imports(cyclonedds=types.SimpleNamespace(__version__="0.10.5"))))
    assert r.status == WARN


def test_sdk_check_two_cyclone_libraries(tmp_path):
    ours = tmp_path / "cyclone" / "lib" / "libddsc.so"
    ros = tmp_path / "ros" / "lib" / "libddsc.so.0"
    for p in (ours, ros):
        p.parent.mkdir(parents=True)
        p.write_bytes(b"\x7fELF")
    lib = types.SimpleNamespace(library_path=str(ours))
    env = {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp", "AMENT_PREFIX_PATH": str(tmp_path / "ros")}
    r = doctor.check_sdk(ctx_with(env=env, import_module=imports(**{"cyclonedds.__library__": lib})))
    assert r.status == WARN and "two Cyclone DDS libraries" in r.detail and "CYCLONEDDS_HOME=/opt/ros" in r.fix
    ros.unlink()
    ros.symlink_to(ours)  # the binding built against ROS's own Cyclone: one library in the process
    r = doctor.check_sdk(ctx_with(env=env, import_module=imports(**{"cyclonedds.__library__": lib})))
    assert r.status == OK and str(ours) in r.detail
    gone = types.SimpleNamespace(library_path="/gone/libddsc.so")
    r = doctor.check_sdk(ctx_with(env=env, import_module=imports(**{"cyclonedds.__library__": gone})))
    assert r.status == WARN and "gone" in r.detail


def _torch(cuda):
    return types.SimpleNamespace(
        __version__="2.5.0a0+nv24",
        cuda=types.SimpleNamespace(is_available=lambda: cuda, get_device_name=lambda i: "Orin"),
    )


def test_torch_check():
    r = doctor.check_torch(ctx_with(import_module=imports(torch=None)))
    assert r.status == FAIL and "JetPack" in r.fix
    r = doctor.check_torch(ctx_with(import_module=imports(torch=_torch(False)), policy_time=lambda spec, dev: 0.3085))
    assert r.status == WARN and "no CUDA device" in r.detail and "one small_panoramic decision 308 ms on cpu" in r.detail
    r = doctor.check_torch(ctx_with(import_module=imports(torch=_torch(True)), policy_time=lambda spec, dev: 0.012))
    assert r.status == WARN and "agent_node.device: cuda" in r.fix and "12 ms on cuda" in r.detail
    ctx = ctx_with(import_module=imports(torch=_torch(True)), policy_time=lambda spec, dev: 0.012)
    ctx.nodes["agent_node"]["device"] = "cuda"
    assert doctor.check_torch(ctx).status == OK


def test_torch_times_the_real_policy_on_cpu(havln_data):  # the shipped model needs the vocabulary
    r = doctor.check_torch(ctx_with())
    assert r.status == WARN and "decision" in r.detail and "ms on cpu" in r.detail, r.line()


def test_model_check(tmp_path):
    r = doctor.check_model(ctx_with())
    want = hashlib.sha256((REPO / "models" / "small_panoramic.pt").read_bytes()).hexdigest()
    assert r.status == OK and want in r.detail
    ctx = ctx_with()
    ctx.nodes["agent_node"]["policy"] = str(tmp_path / "gone.pt")
    r = doctor.check_model(ctx)
    assert r.status == FAIL and "gone.pt" in r.detail
    copy = tmp_path / "m.pt"
    shutil.copy(REPO / "models" / "small_panoramic.pt", copy)
    (tmp_path / "m.pt.sha256").write_text("0" * 64 + "  m.pt\n")
    ctx.nodes["agent_node"]["policy"] = str(copy)
    assert doctor.check_model(ctx).status == WARN
    (tmp_path / "m.pt.sha256").write_text(f"{want}  m.pt\n")
    assert doctor.check_model(ctx).status == OK
    # a sidecar that is not a digest file: read bounded, never a traceback (it was read whole, twice, as text)
    (tmp_path / "m.pt.sha256").write_bytes(b"\xff\xfe" * 10)
    assert doctor.check_model(ctx).status == WARN
    (tmp_path / "m.pt.sha256").write_bytes(b"0" * (1 << 20))
    r = doctor.check_model(ctx)
    assert r.status == WARN and "m.pt.sha256" in r.detail and "\n" not in r.detail
    ctx.nodes["agent_node"]["policy"] = "forward:steps=3"
    assert doctor.check_model(ctx).status == WARN


# --- disk, store, clock -----------------------------------------------------------------------------


def test_disk_check(tmp_path):
    ctx = ctx_with()
    need = doctor.mcap_bytes_per_hour({**ctx.nodes["trial_logger_node"], "_color_w": 848, "_color_h": 480, "_fps": 30})
    assert 1e9 < need < 10e9  # 424x240 px at 5 Hz, JPEG colour + raw depth, for an hour
    ctx.nodes["trial_logger_node"]["mcap_dir"] = str(tmp_path / "bags")
    seen = []
    ctx.probes.disk_free = lambda p: seen.append(p) or need / 2
    r = doctor.check_disk(ctx)
    assert r.status == FAIL and str(tmp_path / "bags") in r.detail and seen == [tmp_path]
    ctx.probes.disk_free = lambda p: need * 2
    assert doctor.check_disk(ctx).status == WARN
    ctx.probes.disk_free = lambda p: need * 10
    assert doctor.check_disk(ctx).status == OK
    ctx.nodes["trial_logger_node"]["record_mcap"] = False
    ctx.probes.disk_free = lambda p: 1e6
    r = doctor.check_disk(ctx)
    assert r.status == OK and "recording off" in r.detail


def test_store_check(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    ctx = ctx_with()
    r = doctor.check_store(ctx)  # default store of the go2 platform (platformdirs, XDG_DATA_HOME)
    assert r.status == OK and str(data / "havln_robot" / "trials" / "go2" / "trials.db") in r.detail, r.line()
    assert f"created on the first trial under {tmp_path}" in r.detail
    assert sorted(os.listdir(tmp_path)) == [], "the check left files or folders behind"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    ctx.nodes["trial_logger_node"]["db_path"] = str(blocker / "trials.db")
    r = doctor.check_store(ctx)
    assert r.status == FAIL and "not writable" in r.detail
    ctx = ctx_with(store_holder=lambda db: "pid=4242 trial logger")
    ctx.nodes["trial_logger_node"]["db_path"] = str(tmp_path / "trials.db")
    r = doctor.check_store(ctx)
    assert r.status == FAIL and "pid=4242" in r.detail and "one writer" in r.fix


def test_clock_check():
    assert doctor.check_clock(ctx_with(clock=lambda: {"synchronized": True, "source": "chronyc"})).status == OK
    r = doctor.check_clock(ctx_with(clock=lambda: {"synchronized": False, "source": "timedatectl"}))
    assert r.status == WARN and "set-ntp" in r.fix
    assert doctor.check_clock(ctx_with(clock=lambda: {"synchronized": None, "source": "none"})).status == WARN


# --- the running stack (people source, IMU frame, camera QoS) --------------------------------------


def _pub(node, rel="reliable", typ="x"):
    return [{"node": node, "reliability": rel, "type": typ}]


def test_graph_check_with_fakes():
    r = doctor.check_graph(ctx_with(graph=lambda topics, t: {"_imu_frame": {}}))
    assert r.status == WARN and "stack not running" in r.detail
    imu = _pub("/go2_driver_node", typ="sensor_msgs/msg/Imu")
    good = {
        "/havln/people": _pub("/tracker"),
        "/havln/people_tracks": _pub("/people_node"),
        "/imu": imu,
        "/camera/aligned_depth_to_color/image_raw": _pub("/camera_node"),
        "_imu_frame": {"/imu": "imu_link"},
    }
    assert doctor.check_graph(ctx_with(graph=lambda topics, t: good)).status == OK
    r = doctor.check_graph(ctx_with(graph=lambda topics, t: {**good, "/havln/people": []}))
    assert r.status == WARN and "no publisher on /havln/people" in r.detail
    # The profile runs people_node, so a silent tracks topic means no tracked people
    r = doctor.check_graph(ctx_with(graph=lambda topics, t: {**good, "/havln/people_tracks": []}))
    assert r.status == WARN and "nothing publishes /havln/people_tracks" in r.detail
    assert "tracks on /havln/people_tracks" in doctor.check_graph(ctx_with(graph=lambda topics, t: good)).detail
    # motion_node reads the D435i optical frame (imu_mount auto); a frame it cannot read is a WARN
    r = doctor.check_graph(ctx_with(graph=lambda topics, t: {**good, "_imu_frame": {"/imu": "camera_imu_optical_frame"}}))
    assert r.status == OK, r.line()
    r = doctor.check_graph(ctx_with(graph=lambda topics, t: {**good, "_imu_frame": {"/imu": "camera_link"}}))
    assert r.status == WARN and "camera_link" in r.detail and "imu_mount" in r.detail
    be = {**good, "/camera/aligned_depth_to_color/image_raw": _pub("/camera/camera", "best_effort")}
    r = doctor.check_graph(ctx_with(graph=lambda topics, t: be))
    assert r.status == OK, r.line()  # nobody subscribes reliable
    be["_subs"] = {"/camera/aligned_depth_to_color/image_raw": _pub("/motion_node") + _pub("/agent_node", "best_effort")}
    r = doctor.check_graph(ctx_with(graph=lambda topics, t: be))
    assert r.status == WARN and "best-effort by /camera/camera but subscribed reliable by /motion_node (receives nothing)" in r.detail


def test_graph_probe_reads_a_real_graph(ros_context):
    """The default graph probe sees publishers, their reliability and the Imu frame_id (loopback DDS)."""
    import threading

    import rclpy
    from geometry_msgs.msg import PoseArray
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Imu

    node = rclpy.create_node("fake_robot", context=ros_context)
    imu_pub = node.create_publisher(Imu, "imu", 10)
    node.create_publisher(PoseArray, "havln/people", qos_profile_sensor_data)

    def tick():
        m = Imu()
        m.header.frame_id = "imu_link"
        imu_pub.publish(m)

    node.create_timer(0.05, tick)
    node.create_subscription(PoseArray, "havln/people", lambda m: None, 10)  # reliable
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    th = threading.Thread(target=ex.spin, daemon=True)
    th.start()
    try:
        g = doctor._default_graph(["/havln/people", "/imu"], 4.0)  # discovery on a loaded machine can take seconds
    finally:
        ex.shutdown()
        node.destroy_node()
    assert [p["reliability"] for p in g["/imu"]] == ["reliable"]
    assert [p["reliability"] for p in g["/havln/people"]] == ["best_effort"]
    assert g["_imu_frame"] == {"/imu": "imu_link"}
    assert g["_subs"]["/havln/people"] == [{"node": "/fake_robot", "reliability": "reliable", "type": "geometry_msgs/msg/PoseArray"}]
    assert g["_subs"]["/imu"] == []  # the probe's own subscription is not reported


# --- the default probes on this machine ------------------------------------------------------------


def test_default_probes_here():
    lo = doctor._default_interface("lo")
    assert lo == {"up": True, "addresses": ["127.0.0.1/8"]}
    assert doctor._default_interface("havln-no-such-if0") is None
    clock = doctor._default_clock()
    assert clock["synchronized"] in (True, False, None) and clock["source"]
    devices = doctor._default_realsense_devices()  # librealsense's real enumeration (none on a CI machine)
    assert isinstance(devices, list)


# --- the command ------------------------------------------------------------------------------------


def test_a_crashing_check_is_one_fail_line():
    ctx = ctx_with(clock=lambda: 1 / 0)
    (r,) = doctor.run_checks(ctx, ["clock"])
    assert r.status == FAIL and "ZeroDivisionError" in r.detail


def test_doctor_on_this_machine(tmp_path):
    """No robot here: the checklist prints, the missing pieces are FAIL lines, exit 1, no traceback."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for var in ("RMW_IMPLEMENTATION", "FASTRTPS_DEFAULT_PROFILES_FILE", "ROS_AUTOMATIC_DISCOVERY_RANGE", "HAVLN_DDS"):
        env.pop(var, None)  # doctor applies the nodes' DDS environment itself (loopback unless HAVLN_DDS=robot)
    cmd = [sys.executable, "-m", "havln_robot.cli", "doctor", "--offline", "--profile", str(GO2)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    lines = r.stdout.splitlines()
    for name in doctor.CHECKS:
        (line,) = [x for x in lines if x[5:].startswith(name + " ")]
        assert line[:4].strip() in (OK, WARN, FAIL)
    assert any(x.startswith("FAIL realsense") and "no RealSense found" in x for x in lines)
    assert any(x.startswith("WARN dds") and "fastdds_loopback.xml" in x for x in lines)
    assert any(x[5:].startswith("ros ") and "RMW rmw_fastrtps_cpp" in x for x in lines)
    assert lines[-1].endswith(f"FAIL ({GO2})")
    r = subprocess.run(cmd + ["--json", "--only", "realsense,clock"], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    rows = json.loads(r.stdout)
    assert [x["name"] for x in rows] == ["realsense", "clock"] and r.returncode == 1
    assert all(set(x) == {"name", "status", "detail", "fix"} for x in rows)


def test_doctor_bad_arguments(capsys):
    assert doctor.main(["--only", "ros,flux"]) == 2
    assert "--only flux: unknown check" in capsys.readouterr().err
    rc = doctor.main(["--profile", "/nowhere/go2.yaml", "--only", "profile"], Probes(env={}))
    out = capsys.readouterr().out
    assert rc == 1 and "FAIL profile" in out and "/nowhere/go2.yaml: no such file" in out


def test_store_check_sees_a_real_writer(tmp_path):
    """With the store's writer lock (havln_robot.locks), a running logger makes the check FAIL."""
    pytest.importorskip("havln_robot.locks", reason="this build has no trial-store writer lock yet")
    db = tmp_path / "trials.db"
    code = f"from havln_robot.trials.store import TrialStore; s = TrialStore({str(db)!r}, writer=True); print('held', flush=True); input()"
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        ctx = ctx_with()
        ctx.nodes["trial_logger_node"]["db_path"] = str(db)
        r = doctor.check_store(ctx)
        assert r.status == FAIL and f"pid={holder.pid}" in r.detail, r.line()
    finally:
        holder.kill()
        holder.wait()
    assert doctor.check_store(ctx).status == OK


def test_robots_lists_the_robots_on_the_domain_and_warns_on_shared_names():
    """Two Go2s on one domain: each namespaced is OK (listed); without namespaces both robots
    publish on /go2/identity and would obey one cmd_vel: WARN naming both, with the fix."""
    two_ns = [
        {"robot_id": "go2-A", "node": "/robot_a/go2_driver_node", "topic": "/robot_a/go2/identity"},
        {"robot_id": "go2-B", "node": "/robot_b/go2_driver_node", "topic": "/robot_b/go2/identity"},
    ]
    r = doctor.check_robots(ctx_with(robots=lambda t: two_ns))
    assert r.status == OK and r.detail == "2 robots: go2-A on /robot_a/go2/identity; go2-B on /robot_b/go2/identity"
    shared = [{**x, "topic": "/go2/identity"} for x in two_ns]
    r = doctor.check_robots(ctx_with(robots=lambda t: shared))
    assert r.status == WARN and "robots go2-A, go2-B share /go2/identity" in r.detail and "namespace" in r.fix
    assert doctor.check_robots(ctx_with(robots=lambda t: [])).status == WARN
