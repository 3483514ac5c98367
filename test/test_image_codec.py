"""Compressed camera images in image_transport's layout: JPEG colour on .../compressed, lossless
16-bit PNG depth with the compressedDepth header on .../compressedDepth; camera_node publishes them
and agent_node reads them."""

from __future__ import annotations

import struct
import threading
import time

import cv2
import numpy as np
import pytest

from havln_robot.perception.image_codec import (
    ImageCodecError,
    compressed_depth_topic,
    compressed_topic,
    decode_color,
    decode_depth,
    encode_color,
    encode_depth,
)


def rendered_view(havln_data):
    """A colour + depth view rendered in a real HA-R2R scene (depth in mm, 0 where nothing)."""
    from havln_robot.episodes import load_episodes
    from havln_robot.sim.mesh_scene import load_scene
    from havln_robot.sim.render import Renderer

    (ep,) = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", havln_data / "connectivity", limit=1)
    scene = load_scene(ep.scan, havln_data / "connectivity")
    r = Renderer(scene, None, 160, 120)
    try:
        rgb, depth_m = r.render((*ep.start_position, ep.start_yaw))
    finally:
        r.close()
    return rgb, np.round(depth_m * 1000.0).astype(np.uint16)


def test_depth_is_bit_exact_over_the_full_16_bit_range():
    rng = np.random.default_rng(0)
    depth = rng.integers(0, 65536, size=(480, 640), dtype=np.uint16)
    depth[0, :4] = (0, 1, 65534, 65535)
    fmt, data = encode_depth(depth)
    assert fmt == "16UC1; compressedDepth png"
    out = decode_depth(fmt, data)
    assert out.dtype == np.uint16 and np.array_equal(out, depth)


def test_depth_header_is_compressed_depth_image_transports():
    """12 bytes: int32 INV_DEPTH (0), float32 quantisation A and B (0 for 16UC1), then a PNG."""
    fmt, data = encode_depth(np.full((4, 5), 1234, np.uint16))
    assert struct.unpack("<iff", data[:12]) == (0, 0.0, 0.0)
    assert data[12:20] == b"\x89PNG\r\n\x1a\n"
    png = cv2.imdecode(np.frombuffer(data[12:], np.uint8), cv2.IMREAD_UNCHANGED)
    assert png.dtype == np.uint16 and (png == 1234).all()
    # the older plugins' format string without the codec name is read too
    assert (decode_depth("16UC1; compressedDepth", data) == 1234).all()


def test_float_depth_of_the_plugin_is_decoded_with_its_quantisation():
    """32FC1 depth as the plugin writes it: inverse depth q = A / d + B, 0 where no depth."""
    a = 100.0 * 101.0  # the plugin's defaults: depth_quantization z0 = 100 -> A = z0 (z0 + 1)
    b = 1.0 - a / 10.0  # depth_max 10 m
    d = np.array([[1.0, 2.0], [5.0, np.inf]], np.float32)
    q = np.where(np.isfinite(d), a / d + b, 0).astype(np.uint16)
    ok, png = cv2.imencode(".png", q)
    out = decode_depth("32FC1; compressedDepth png", struct.pack("<iff", 0, a, b) + png.tobytes())
    assert out.dtype == np.float32 and np.isnan(out[1, 1])
    assert out[:1].ravel() == pytest.approx([1.0, 2.0], rel=0.01)


def test_colour_is_jpeg_bgr_in_the_compressed_layout():
    rgb = np.zeros((48, 64, 3), np.uint8)
    rgb[..., 0] = 200  # red
    rgb[:, 32:, 2] = 150  # blue on the right half
    fmt, data = encode_color(rgb, quality=95)
    assert fmt == "rgb8; jpeg compressed bgr8" and data[:2] == b"\xff\xd8"
    raw = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)  # what image_transport's subscriber sees: BGR
    assert raw[5, 5, 2] > 180 and raw[5, 5, 0] < 30
    out = decode_color(fmt, data)
    err = np.abs(out.astype(int) - rgb)
    assert out.shape == rgb.shape and err.mean() < 3.0 and err[:, :24].max() <= 8  # ringing only near the edge


def test_real_rendered_view_round_trip(havln_data):
    from havln_robot.sim.render import RenderError

    try:
        rgb, depth = rendered_view(havln_data)
    except RenderError as exc:  # no OpenGL backend on this machine
        pytest.skip(f"renderer unavailable: {exc}")
    assert (depth > 0).mean() > 0.5
    fmt, data = encode_depth(depth)
    assert np.array_equal(decode_depth(fmt, data), depth)
    cfmt, cdata = encode_color(rgb)
    assert len(cdata) + len(data) < (rgb.nbytes + depth.nbytes) / 2
    assert np.abs(decode_color(cfmt, cdata).astype(int) - rgb).mean() < 4.0


def test_bad_inputs_name_the_field():
    with pytest.raises(ImageCodecError, match=r"\(H, W\) uint16"):
        encode_depth(np.zeros((4, 4), np.float32))
    with pytest.raises(ImageCodecError, match=r"\(H, W, 3\) uint8"):
        encode_color(np.zeros((4, 4), np.uint8))
    with pytest.raises(ImageCodecError, match="only png"):
        decode_depth("16UC1; compressedDepth rvl", b"\0" * 20)
    with pytest.raises(ImageCodecError, match="no image after"):
        decode_depth("16UC1; compressedDepth png", b"\0" * 12)
    with pytest.raises(ImageCodecError, match="could not be decoded"):
        decode_color("rgb8; jpeg compressed bgr8", b"not a jpeg")
    assert compressed_topic("camera/color/image_raw") == "camera/color/image_raw/compressed"
    assert compressed_depth_topic("camera/aligned_depth_to_color/image_raw/") == "camera/aligned_depth_to_color/image_raw/compressedDepth"


def test_camera_node_publishes_compressed_and_agent_node_reads_them(ros_context):
    """camera_node (software RealSense, image_transport compressed) -> agent_node (image_transport
    compressed): the depth the agent decodes is the camera's raw depth of the same stamp, bit for bit."""
    from rclpy.node import Node
    from sensor_msgs.msg import CompressedImage, Image

    from havln_robot import topics
    from havln_robot.agent.params import AGENT_PARAMS
    from havln_robot.bringup import NodeThreads
    from havln_robot.nodes.agent_node import AgentNode
    from havln_robot.nodes.camera_node import CameraNode
    from havln_robot.perception.params import CAMERA_PARAMS
    from havln_robot.perception.preprocess import Intrinsics
    from havln_robot.perception.realsense import SoftwareCamera
    from havln_robot.ros.codec import image_array

    cam_dev = SoftwareCamera(Intrinsics.from_hfov(96, 54, 69.4), depth_units_m=0.001)
    cam = CameraNode(params=CAMERA_PARAMS.validate({"image_transport": "both"}), source_factory=lambda: cam_dev, context=ros_context)
    agent = AgentNode(params=AGENT_PARAMS.validate({"policy": "forward", "image_transport": "compressed"}), context=ros_context)
    seen: dict[str, list] = {"raw_depth": [], "compressed": []}
    probe = Node("probe", context=ros_context)
    probe.create_subscription(Image, topics.DEPTH_IMAGE, lambda m: seen["raw_depth"].append(m), 50)
    probe.create_subscription(CompressedImage, compressed_topic(topics.COLOR_IMAGE), lambda m: seen["compressed"].append(m), 10)
    spin = NodeThreads(ros_context, log=print)
    for i, n in enumerate((cam, agent, probe)):
        spin.add(f"n{i}", n)
    rng = np.random.default_rng(1)
    depth = rng.integers(300, 9000, size=(54, 96), dtype=np.uint16)
    rgb = np.zeros((54, 96, 3), np.uint8)
    rgb[..., 1] = 120
    stop = threading.Event()

    def feed():
        while not stop.is_set():
            if cam_dev.syncer is not None:
                cam_dev.push(rgb, depth)
            time.sleep(1 / 30)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        t_end = time.monotonic() + 20
        while time.monotonic() < t_end and not (len(agent._depth) >= 2 and len(agent._rgb) >= 2 and seen["compressed"]):
            time.sleep(0.05)
    finally:
        stop.set()
        feeder.join()
        agent.safe_stop()
        spin.stop(timeout=5)
        for n in (cam, agent, probe):
            n.destroy_node()
    assert len(agent._depth) >= 2, "agent_node got no compressedDepth frame"
    # every depth image the agent decoded is bit for bit the one camera_node published raw (same stamp)
    raw_depth = {(m.header.stamp.sec, m.header.stamp.nanosec): image_array(m) for m in seen["raw_depth"]}
    matched = 0
    for stamp, _, got in agent._depth:
        key = (int(stamp), int(round((stamp - int(stamp)) * 1e9)))
        cand = [v for k, v in raw_depth.items() if abs(k[0] + k[1] * 1e-9 - stamp) < 1e-6]
        if cand:
            matched += 1
            assert got.dtype == np.uint16 and np.array_equal(got, cand[0]), key
    assert matched >= 1
    got_rgb = agent._rgb[-1][2]
    assert got_rgb.shape == rgb.shape and np.abs(got_rgb.astype(int) - rgb).max() <= 8
    assert seen["compressed"][-1].format == "rgb8; jpeg compressed bgr8"
