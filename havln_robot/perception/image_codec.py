"""Compressed camera images as image_transport writes them (pure Python: numpy + OpenCV, no ROS).

A 12-view panorama of 640x480 colour + 16-bit depth is ~18 MB raw; over Wi-Fi between the robot
and an inference machine the camera topics go compressed instead, in the layout of the
image_transport plugins (ros-perception/image_transport_plugins), so ``ros2 bag``, rqt and
``image_transport republish`` read them too:

* colour on ``<topic>/compressed``: ``sensor_msgs/CompressedImage`` with ``format``
  ``"<encoding>; jpeg compressed bgr8"`` and ``data`` a JPEG of the BGR image (compressed_image_transport);
* depth on ``<topic>/compressedDepth``: ``format`` ``"16UC1; compressedDepth png"`` and ``data`` a
  12-byte header (int32 compression format, 0 = INV_DEPTH; two float32 quantisation parameters,
  zero for 16UC1; little-endian as on every ROS 2 target) followed by a 16-bit PNG
  (compressed_depth_image_transport). 16UC1 depth is lossless: the decoded image is bit-exact
  (unlike the plugin, nothing beyond a maximum depth is zeroed here).
  ``32FC1`` depth in the plugin's inverse-depth quantisation is decoded too (NaN where 0).

Functions return/take ``(format, data)``; the ROS shell (:mod:`havln_robot.ros.codec`) puts them in messages.
"""

from __future__ import annotations

import struct

import cv2
import numpy as np

COLOR_SUFFIX = "/compressed"
DEPTH_SUFFIX = "/compressedDepth"
DEPTH_HEADER = struct.Struct("<iff")
"""compressed_depth_image_transport's ConfigHeader: int32 format (0 = INV_DEPTH), float32 depthParam[2]."""
INV_DEPTH = 0


class ImageCodecError(ValueError):
    """A compressed image cannot be made or read; the message names the field and what was expected."""


def compressed_topic(topic: str) -> str:
    """The image_transport ``compressed`` topic of colour ``topic``."""
    return topic.rstrip("/") + COLOR_SUFFIX


def compressed_depth_topic(topic: str) -> str:
    """The image_transport ``compressedDepth`` topic of depth ``topic``."""
    return topic.rstrip("/") + DEPTH_SUFFIX


def encode_color(rgb: np.ndarray, quality: int = 90, encoding: str = "rgb8") -> tuple[str, bytes]:
    """JPEG-compress an (H, W, 3) uint8 image given in ``encoding`` (rgb8 or bgr8).

    Raises:
        ImageCodecError: wrong shape/dtype or encoding, or quality outside 1..100.
    """
    a = np.asarray(rgb)
    if a.ndim != 3 or a.shape[2] != 3 or a.dtype != np.uint8:
        raise ImageCodecError(f"colour image must be (H, W, 3) uint8, got {a.shape} {a.dtype}")
    if encoding not in ("rgb8", "bgr8"):
        raise ImageCodecError(f"colour encoding {encoding!r}; expected rgb8 or bgr8")
    if not 1 <= int(quality) <= 100:
        raise ImageCodecError(f"jpeg quality {quality} is outside 1..100")
    bgr = a[..., ::-1] if encoding == "rgb8" else a
    ok, buf = cv2.imencode(".jpg", np.ascontiguousarray(bgr), [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ImageCodecError("OpenCV could not JPEG-encode the colour image")
    return f"{encoding}; jpeg compressed bgr8", buf.tobytes()


def decode_color(fmt: str, data: bytes) -> np.ndarray:
    """(H, W, 3) uint8 RGB from a ``compressed`` message's ``format`` and ``data`` (JPEG or PNG).

    Raises:
        ImageCodecError: not a colour image of this transport, or undecodable data.
    """
    if "compressedDepth" in fmt:
        raise ImageCodecError(f"format {fmt!r} is a compressedDepth image; subscribe to the colour topic's /compressed")
    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if img is None:
        raise ImageCodecError(f"compressed colour image ({fmt!r}, {len(data)} bytes) could not be decoded")
    return np.ascontiguousarray(img[..., ::-1])


def encode_depth(depth_mm: np.ndarray, png_level: int = 1) -> tuple[str, bytes]:
    """Lossless 16-bit PNG of an (H, W) uint16 depth image in mm, with the compressedDepth header.

    Args:
        depth_mm: (H, W) uint16, millimetres (0 = no depth).
        png_level: zlib level 0..9 (1: fast, what a Jetson can do at 30 Hz; 9: smallest).

    Raises:
        ImageCodecError: wrong shape/dtype or level.
    """
    a = np.asarray(depth_mm)
    if a.ndim != 2 or a.dtype != np.uint16:
        raise ImageCodecError(f"depth image must be (H, W) uint16 mm (16UC1), got {a.shape} {a.dtype}")
    if not 0 <= int(png_level) <= 9:
        raise ImageCodecError(f"png level {png_level} is outside 0..9")
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(a), [cv2.IMWRITE_PNG_COMPRESSION, int(png_level)])
    if not ok:
        raise ImageCodecError("OpenCV could not PNG-encode the depth image")
    return "16UC1; compressedDepth png", DEPTH_HEADER.pack(INV_DEPTH, 0.0, 0.0) + buf.tobytes()


def decode_depth(fmt: str, data: bytes) -> np.ndarray:
    """Depth from a ``compressedDepth`` message: (H, W) uint16 mm for 16UC1 (bit-exact), float32 m for 32FC1.

    Raises:
        ImageCodecError: another format (jpeg, rvl), a short message, or undecodable PNG data.
    """
    encoding, _, rest = fmt.partition(";")
    encoding, rest = encoding.strip(), rest.strip()
    if rest not in ("", "compressedDepth", "compressedDepth png"):
        raise ImageCodecError(f"compressedDepth format {fmt!r}: only png is read here; publish with format png")
    if encoding not in ("16UC1", "mono16", "32FC1"):
        raise ImageCodecError(f"compressedDepth encoding {encoding!r}; expected 16UC1 (mm) or 32FC1 (m)")
    if len(data) <= DEPTH_HEADER.size:
        raise ImageCodecError(f"compressedDepth data of {len(data)} bytes holds no image after its {DEPTH_HEADER.size}-byte header")
    _, qa, qb = DEPTH_HEADER.unpack_from(data)
    img = cv2.imdecode(np.frombuffer(data, np.uint8, offset=DEPTH_HEADER.size), cv2.IMREAD_UNCHANGED)
    if img is None or img.ndim != 2 or img.dtype != np.uint16:
        raise ImageCodecError(f"compressedDepth data ({len(data)} bytes) is not a 16-bit single-channel PNG")
    if encoding != "32FC1":
        return img
    inv = img.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.float32(qa) / (inv - np.float32(qb))
    out[img == 0] = np.nan
    return out.astype(np.float32)
