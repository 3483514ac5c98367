"""camera_node: RealSense D435i colour + depth aligned to colour, realsense-ros topic names.

Publishes ``camera/color/image_raw`` (rgb8), ``camera/aligned_depth_to_color/image_raw`` (16UC1,
millimetres), both ``camera_info`` (colour intrinsics from the device: K, P, plumb_bob D) in the
colour optical frame, and the device state on ``/diagnostics`` (diagnostic_msgs/DiagnosticArray).
With ``image_transport`` compressed (or both) the images go (also) as sensor_msgs/CompressedImage on
``.../compressed`` (JPEG) and ``.../compressedDepth`` (lossless 16-bit PNG), image_transport's
layout (:mod:`havln_robot.perception.image_codec`), for an agent on another machine.

Thin shell over :class:`havln_robot.perception.realsense.RealSenseCamera`: a capture thread calls
``read()`` in a loop (blocking waits stay off the executor); the recovery machine retries frame
timeouts, hardware-resets the device, then restarts with backoff forever -- the node never dies.
Colour and depth of one frameset carry the same stamp (the node clock when the frameset arrived).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import CameraInfo, CompressedImage, Image

from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.perception.image_codec import compressed_depth_topic, compressed_topic, encode_color, encode_depth
from havln_robot.perception.params import CAMERA_PARAMS
from havln_robot.perception.realsense import CameraFrame, FrameSource, PipelineSource, RealSenseCamera, Recovery, camera_info_fields
from havln_robot.ros.codec import compressed_msg, image_msg, status_msg


class CameraNode(HavlnNode):
    """ROS shell of the RealSense capture (see the module docstring).

    Args:
        params: validated parameters (:data:`havln_robot.perception.params.CAMERA_PARAMS`).
        source_factory: builds the frame source (default: the physical device through
            ``rs.pipeline`` with the configured modes); tests pass a ``SoftwareCamera``.
        **kwargs: passed to :class:`HavlnNode` (e.g. ``context``).
    """

    SPEC = CAMERA_PARAMS

    def __init__(
        self, params: dict[str, Any] | None = None, source_factory: Callable[[], FrameSource] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(params=params, **kwargs)
        p = self.params
        if source_factory is None:

            def source_factory() -> FrameSource:
                return PipelineSource(
                    p["serial_number"], (p["color_width"], p["color_height"]), (p["depth_width"], p["depth_height"]), p["fps"]
                )

        raw, compressed = p["image_transport"] in ("raw", "both"), p["image_transport"] in ("compressed", "both")
        self.pub_color = self.create_publisher(Image, p["color_topic"], 5) if raw else None
        self.pub_depth = self.create_publisher(Image, p["depth_topic"], 5) if raw else None
        self.pub_color_c = self.create_publisher(CompressedImage, compressed_topic(p["color_topic"]), 5) if compressed else None
        self.pub_depth_c = self.create_publisher(CompressedImage, compressed_depth_topic(p["depth_topic"]), 5) if compressed else None
        self.pub_color_info = self.create_publisher(CameraInfo, p["color_info_topic"], 5)
        self.pub_depth_info = self.create_publisher(CameraInfo, p["depth_info_topic"], 5)
        self.pub_diag = self.create_publisher(DiagnosticArray, p["diagnostics_topic"], 10)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._published = 0
        self._fps_window: list[float] = []
        self._last_frame: CameraFrame | None = None
        self.camera = RealSenseCamera(
            source_factory,
            frame_timeout_s=p["frame_timeout_s"],
            recovery=Recovery(p["retries_before_reset"], p["reset_wait_s"], p["backoff_initial_s"], p["backoff_max_s"]),
            sleep=self._stop.wait,
            log=self._log,
        )
        self.create_timer(p["diagnostics_period_s"], self.publish_diagnostics)
        self._thread = threading.Thread(target=self._capture_loop, name="camera-capture", daemon=True)
        self._thread.start()

    def _log(self, level: str, text: str) -> None:
        """Log ``text`` at ``level`` ('info' | 'warn' | 'error').

        One call site per severity: rclpy keys its once/throttle state by call site and raises
        ``ValueError: Logger severity cannot be changed between calls`` when one site logs at two
        severities (which killed the recovery path at the first frame timeout).
        """
        logger = self.get_logger()
        if level == "info":
            logger.info(text)
        elif level == "warn":
            logger.warning(text)
        else:
            logger.error(text)

    def _capture_loop(self) -> None:
        while not self._stop.is_set():
            try:
                frame = self.camera.read()
            except Exception as exc:  # never die: count it and let the recovery machine restart the device
                self.camera.recovery.on_start_failed(f"unexpected: {type(exc).__name__}: {exc}")
                self.camera.drop_source()
                self._stop.wait(self.camera.recovery.backoff_s)
                continue
            if frame is not None and not self._stop.is_set():
                try:
                    self.publish_frame(frame)
                except Exception as exc:  # context shutting down
                    if self._stop.is_set():
                        break
                    self.get_logger().error(f"publish failed: {exc}", throttle_duration_sec=5.0)

    def publish_frame(self, frame: CameraFrame) -> None:
        """Publish one aligned frame: colour, depth and both camera_info with one stamp."""
        p = self.params
        now = self.get_clock().now()
        stamp = now.to_msg()
        if self.pub_color is not None:
            self.pub_color.publish(image_msg(frame.rgb, "rgb8", p["color_frame_id"], stamp))
            self.pub_depth.publish(image_msg(frame.depth_mm, "16UC1", p["depth_frame_id"], stamp))
        if self.pub_color_c is not None:
            self.pub_color_c.publish(compressed_msg(*encode_color(frame.rgb, p["jpeg_quality"]), p["color_frame_id"], stamp))
            self.pub_depth_c.publish(compressed_msg(*encode_depth(frame.depth_mm, p["png_level"]), p["depth_frame_id"], stamp))
        fields = camera_info_fields(frame)
        for pub, frame_id in ((self.pub_color_info, p["color_frame_id"]), (self.pub_depth_info, p["depth_frame_id"])):
            info = CameraInfo(**fields)
            info.header.stamp = stamp
            info.header.frame_id = frame_id
            pub.publish(info)
        with self._lock:
            self._published += 1
            t = now.nanoseconds * 1e-9
            self._fps_window = [x for x in self._fps_window if t - x <= 2.0] + [t]
            self._last_frame = frame

    def diagnostics(self) -> DiagnosticArray:
        """The current device state as a DiagnosticArray (one status named ``camera_node: RealSense``)."""
        rec = self.camera.recovery
        with self._lock:
            w = self._fps_window
            fps = (len(w) - 1) / (w[-1] - w[0]) if len(w) > 1 and w[-1] > w[0] else 0.0
            last = self._last_frame
            published = self._published
        values = {
            **rec.values(),
            "published": published,
            "fps": fps,
            "incomplete_framesets": self.camera.incomplete,
            "stale_framesets": self.camera.stale,
        }
        if last is not None:
            values.update(width=last.intrinsics.width, height=last.intrinsics.height, depth_units_m=last.depth_units_m)
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        serial = self.params["serial_number"] or "first device"
        msg.status = [status_msg(f"{self.get_name()}: RealSense", rec.state, values, level=rec.level, hardware_id=serial)]
        return msg

    def publish_diagnostics(self) -> None:
        self.pub_diag.publish(self.diagnostics())

    def destroy_node(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5.0)
        self.camera.close()
        super().destroy_node()


NODE_CLASS = CameraNode


def main() -> None:
    sys.exit(run_node(CameraNode))
