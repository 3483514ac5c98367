"""camera_node over ROS (loopback DDS), fed by a librealsense software_device."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image

from havln_robot import topics
from havln_robot.bringup import NodeThreads
from havln_robot.nodes.camera_node import CameraNode
from havln_robot.perception.params import CAMERA_PARAMS
from havln_robot.perception.preprocess import Intrinsics
from havln_robot.perception.realsense import SoftwareCamera
from havln_robot.ros.codec import image_array, status_dict

COLOR = Intrinsics.from_hfov(96, 54, 69.4)


class Listener(Node):
    def __init__(self, context):
        super().__init__("listener", context=context)
        self.msgs: dict[str, list] = {k: [] for k in ("color", "depth", "color_info", "depth_info", "diag")}
        self.create_subscription(Image, topics.COLOR_IMAGE, lambda m: self.msgs["color"].append(m), 10)
        self.create_subscription(Image, topics.DEPTH_IMAGE, lambda m: self.msgs["depth"].append(m), 10)
        self.create_subscription(CameraInfo, topics.COLOR_INFO, lambda m: self.msgs["color_info"].append(m), 10)
        self.create_subscription(CameraInfo, topics.DEPTH_INFO, lambda m: self.msgs["depth_info"].append(m), 10)
        self.create_subscription(DiagnosticArray, "/diagnostics", lambda m: self.msgs["diag"].append(m), 10)


def wait_for(pred, timeout=20.0):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if pred():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def graph(ros_context):
    made = []
    spinners = NodeThreads(ros_context, log=print)

    def make(source_factory, **params):
        p = CAMERA_PARAMS.validate({"diagnostics_period_s": 0.1, **params})
        cam = CameraNode(params=p, source_factory=source_factory, context=ros_context)
        lis = Listener(ros_context)
        for n in (cam, lis):
            made.append(n)
            spinners.add(f"{n.get_name()}{len(made)}", n)
        return cam, lis

    yield make
    spinners.stop(timeout=5)
    for n in made:
        n.destroy_node()


def test_camera_node_publishes_aligned_rgbd_and_camera_info(graph):
    cam_dev = SoftwareCamera(COLOR, depth_units_m=0.001)
    node, lis = graph(lambda: cam_dev)
    rgb = np.zeros((54, 96, 3), np.uint8)
    rgb[..., 0] = np.arange(96, dtype=np.uint8)[None, :]
    rgb[..., 2] = 200
    depth = np.full((54, 96), 1750, np.uint16)
    stop = threading.Event()

    def feed():
        while not stop.is_set():
            if cam_dev.syncer is not None:
                cam_dev.push(rgb, depth)
            time.sleep(1 / 30)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        assert wait_for(lambda: len(lis.msgs["color"]) >= 3 and len(lis.msgs["depth"]) >= 3 and lis.msgs["depth_info"])
        assert wait_for(lambda: any(status_dict(m.status[0]).get("state") == "streaming" for m in lis.msgs["diag"]))
    finally:
        stop.set()
        feeder.join()
    c, d = lis.msgs["color"][-1], lis.msgs["depth"][-1]
    assert (c.encoding, d.encoding) == ("rgb8", "16UC1")
    assert c.header.frame_id == topics.COLOR_OPTICAL_FRAME and d.header.frame_id == topics.DEPTH_OPTICAL_FRAME
    assert np.array_equal(image_array(c), rgb)
    dd = image_array(d)
    assert (dd[dd > 0] == 1750).all() and (dd > 0).mean() > 0.85
    # colour and depth of one frameset share the stamp
    stamps_c = {(m.header.stamp.sec, m.header.stamp.nanosec) for m in lis.msgs["color"]}
    assert (d.header.stamp.sec, d.header.stamp.nanosec) in stamps_c
    info = lis.msgs["color_info"][-1]
    assert (info.width, info.height, info.distortion_model) == (96, 54, "plumb_bob")
    assert list(info.k) == pytest.approx([COLOR.fx, 0, COLOR.cx, 0, COLOR.fy, COLOR.cy, 0, 0, 1], rel=1e-5)
    assert len(info.p) == 12 and info.p[0] == pytest.approx(COLOR.fx, rel=1e-5) and len(info.d) == 5
    assert lis.msgs["depth_info"][-1].header.frame_id == topics.DEPTH_OPTICAL_FRAME
    st = lis.msgs["diag"][-1].status[0]
    assert st.name.endswith("RealSense") and int.from_bytes(st.level, "little") == 0


def test_camera_node_survives_a_dead_device_and_reports_it(graph):
    def factory():
        raise RuntimeError("No device connected")

    node, lis = graph(factory, backoff_initial_s=0.05, backoff_max_s=0.1)
    assert wait_for(lambda: any(status_dict(m.status[0]).get("state") == "backoff" for m in lis.msgs["diag"]))
    assert wait_for(lambda: int(status_dict(lis.msgs["diag"][-1].status[0])["start_failures"]) >= 3)
    st = lis.msgs["diag"][-1].status[0]
    assert int.from_bytes(st.level, "little") == 2 and "No device connected" in status_dict(st)["last_error"]
    assert node._thread.is_alive()


def test_camera_node_stall_retries_then_hardware_resets_then_backs_off(graph):
    """A camera that stops delivering goes timeout -> retry -> hardware reset ->
    backoff through the real node and its rclpy logger (one call site logging at two severities
    raised ValueError inside read(), so the reset never happened)."""
    cam_dev = SoftwareCamera(COLOR, depth_units_m=0.001)
    node, lis = graph(
        lambda: cam_dev, frame_timeout_s=0.1, retries_before_reset=2, reset_wait_s=0.05, backoff_initial_s=0.05, backoff_max_s=0.1
    )
    rgb = np.zeros((54, 96, 3), np.uint8)
    depth = np.full((54, 96), 1000, np.uint16)
    stop = threading.Event()

    def feed():
        for _ in range(200):
            if stop.is_set():
                return
            if cam_dev.syncer is not None:
                cam_dev.push(rgb, depth)
            time.sleep(1 / 30)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        assert wait_for(lambda: node.camera.recovery.frames >= 3)
        stop.set()  # the camera stops delivering
        feeder.join(timeout=2)
        assert wait_for(lambda: cam_dev.resets >= 1 and node.camera.recovery.state == "backoff", timeout=15)
    finally:
        stop.set()
    rec = node.camera.recovery
    assert rec.resets == cam_dev.resets >= 1  # the counter reports resets that really happened
    assert rec.timeouts >= 3 and not rec.last_error.startswith("unexpected")
    assert rec.start_failures == 0, rec.last_error
    assert wait_for(lambda: any(status_dict(m.status[0]).get("state") in ("resetting", "backoff") for m in lis.msgs["diag"]))
    assert node._thread.is_alive()
