"""Conversions between numpy / plain records and ROS messages (used by the thin node shells)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from sensor_msgs.msg import Image

_ENCODINGS = {"rgb8": (np.uint8, 3), "bgr8": (np.uint8, 3), "mono8": (np.uint8, 1), "16UC1": (np.uint16, 1), "32FC1": (np.float32, 1)}


def image_msg(array: np.ndarray, encoding: str, frame_id: str, stamp: Time) -> Image:
    """sensor_msgs/Image from an (H, W[, C]) array.

    Raises:
        ValueError: dtype/channels do not match ``encoding``.
    """
    dtype, ch = _ENCODINGS[encoding]
    a = np.ascontiguousarray(array)
    if a.dtype != dtype or (a.ndim == 3 and a.shape[2] != ch) or (a.ndim == 2 and ch != 1):
        raise ValueError(f"image {a.shape} {a.dtype} does not match encoding {encoding}")
    msg = Image()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(a.shape[0]), int(a.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0
    msg.step = int(a.strides[0])
    msg.data = a.tobytes()
    return msg


def image_array(msg: Image) -> np.ndarray:
    """(H, W[, C]) numpy view of a sensor_msgs/Image (copy-free where possible).

    Raises:
        ValueError: unsupported encoding.
    """
    if msg.encoding not in _ENCODINGS:
        raise ValueError(f"unsupported image encoding {msg.encoding!r}")
    dtype, ch = _ENCODINGS[msg.encoding]
    itemsize = np.dtype(dtype).itemsize
    buf = np.frombuffer(bytes(msg.data) if not isinstance(msg.data, (bytes, bytearray, memoryview)) else msg.data, dtype=dtype)
    row = msg.step // itemsize
    a = buf.reshape(msg.height, row)[:, : msg.width * ch]
    return a.reshape(msg.height, msg.width, ch) if ch > 1 else a


def status_msg(name: str, message: str, values: Mapping[str, Any], level: int = 0, hardware_id: str = "") -> DiagnosticStatus:
    """diagnostic_msgs/DiagnosticStatus record; values are stringified (floats with 4 decimals)."""
    st = DiagnosticStatus()
    st.level = bytes([level]) if isinstance(st.level, bytes) else level
    st.name, st.message, st.hardware_id = name, message, hardware_id
    st.values = [KeyValue(key=k, value=(f"{v:.4f}" if isinstance(v, float) else str(v))) for k, v in values.items()]
    return st


def status_dict(msg: DiagnosticStatus) -> dict[str, str]:
    """The key/value pairs of a DiagnosticStatus as a dict of strings."""
    return {kv.key: kv.value for kv in msg.values}
