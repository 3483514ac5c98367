"""The one translation between havln records / numpy arrays and ROS 2 messages.

Typed records (:mod:`havln_robot.records`) travel as ``diagnostic_msgs/DiagnosticStatus``
(``name`` = record kind or action literal, ``message`` = outcome / type, ``values`` = the record's
:meth:`to_values` pairs); ``havln/episode_done`` travels as JSON on ``std_msgs/String``. Every node,
the replay backend and the demo decode with these functions and nowhere else.

Errors: the ``decode_*`` functions raise :class:`havln_robot.records.RecordError` for a record
they cannot decode (unknown outcome, bad schema version, not JSON).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import String

from havln_robot.perception.image_codec import decode_color, decode_depth
from havln_robot.records import (
    ActionResult,
    AgentStatus,
    CollisionRecord,
    EpisodeDone,
    GroundTruth,
    Outcome,
)

#: DiagnosticStatus levels (OK / WARN / ERROR).
OK, WARN, ERROR = 0, 1, 2
#: Level of an action result per outcome (anything else: WARN).
RESULT_LEVEL = {
    Outcome.OK: OK,
    Outcome.COLLISION: ERROR,
    Outcome.SLIP: ERROR,
    Outcome.STALL: ERROR,
    Outcome.TIMEOUT: WARN,
    Outcome.ABORTED: WARN,
    Outcome.REJECTED: WARN,
    Outcome.UNSUPPORTED: WARN,
}

_ENCODINGS = {"rgb8": (np.uint8, 3), "bgr8": (np.uint8, 3), "mono8": (np.uint8, 1), "16UC1": (np.uint16, 1), "32FC1": (np.float32, 1)}


# --- generic ----------------------------------------------------------------------------------------


def status_msg(name: str, message: str, values: Mapping[str, Any], level: int = 0, hardware_id: str = "") -> DiagnosticStatus:
    """diagnostic_msgs/DiagnosticStatus record; values are stringified (floats with 4 decimals, others ``str``).

    Records pass their already stringified :meth:`to_values`; see :func:`havln_robot.records.wire_value`.
    """
    st = DiagnosticStatus()
    st.level = bytes([level]) if isinstance(st.level, bytes) else level
    st.name, st.message, st.hardware_id = name, message, hardware_id
    st.values = [KeyValue(key=k, value=(f"{v:.4f}" if isinstance(v, float) else str(v))) for k, v in values.items()]
    return st


def status_dict(msg: DiagnosticStatus) -> dict[str, str]:
    """The key/value pairs of a DiagnosticStatus as a dict of strings."""
    return {kv.key: kv.value for kv in msg.values}


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


def compressed_msg(fmt: str, data: bytes, frame_id: str, stamp: Time) -> CompressedImage:
    """sensor_msgs/CompressedImage from a ``(format, data)`` pair of :mod:`havln_robot.perception.image_codec`."""
    msg = CompressedImage()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.format = fmt
    msg.data = data
    return msg


def compressed_color_array(msg: CompressedImage) -> np.ndarray:
    """(H, W, 3) uint8 RGB of an image_transport ``compressed`` message.

    Raises:
        ValueError: (ImageCodecError) not a decodable colour image.
    """
    return decode_color(msg.format, bytes(msg.data))


def compressed_depth_array(msg: CompressedImage) -> np.ndarray:
    """(H, W) depth of an image_transport ``compressedDepth`` message: uint16 mm (16UC1) or float32 m (32FC1).

    Raises:
        ValueError: (ImageCodecError) not a png compressedDepth image.
    """
    return decode_depth(msg.format, bytes(msg.data))


# --- havln records ----------------------------------------------------------------------------------


def encode_result(result: ActionResult, hardware_id: str = "") -> DiagnosticStatus:
    """``havln/action_result`` message: name = action literal, message = outcome, level by outcome."""
    return status_msg(result.action, result.outcome.value, result.to_values(), RESULT_LEVEL.get(result.outcome, WARN), hardware_id)


def decode_result(msg: DiagnosticStatus) -> ActionResult:
    """The :class:`ActionResult` of a ``havln/action_result`` message (name/message fill missing keys).

    Raises:
        RecordError: unknown outcome or bad schema version.
    """
    return ActionResult.from_values(status_dict(msg), name=msg.name, message=msg.message)


def encode_collision(record: CollisionRecord, hardware_id: str = "") -> DiagnosticStatus:
    """``havln/collision`` message: name ``collision``, message = type; ERROR for a contact, WARN for a prevented one."""
    return status_msg("collision", record.type, record.to_values(), ERROR if record.contact else WARN, hardware_id)


def decode_collision(msg: DiagnosticStatus) -> CollisionRecord:
    """The :class:`CollisionRecord` of a ``havln/collision`` message.

    Raises:
        RecordError: bad schema version.
    """
    return CollisionRecord.from_values(status_dict(msg), message=msg.message)


def encode_ground_truth(gt: GroundTruth) -> DiagnosticStatus:
    """``havln/ground_truth`` message: name ``ground_truth``, message = episode id."""
    return status_msg("ground_truth", str(gt.episode_id), gt.to_values())


def decode_ground_truth(msg: DiagnosticStatus) -> GroundTruth:
    """The :class:`GroundTruth` of a ``havln/ground_truth`` message.

    Raises:
        RecordError: bad schema version.
    """
    return GroundTruth.from_values(status_dict(msg))


def encode_agent_status(status: AgentStatus, name: str = "agent_node") -> DiagnosticStatus:
    """``havln/agent_status`` message: message = state, level ERROR for state ``error``."""
    return status_msg(name, status.state, status.to_values(), level=ERROR if status.state == "error" else OK)


def decode_agent_status(msg: DiagnosticStatus) -> AgentStatus:
    """The :class:`AgentStatus` of a ``havln/agent_status`` message.

    Raises:
        RecordError: bad schema version.
    """
    return AgentStatus.from_values(status_dict(msg))


def encode_episode_done(done: EpisodeDone) -> String:
    """``havln/episode_done`` message (JSON object)."""
    return String(data=done.to_json())


def decode_episode_done(msg: String) -> EpisodeDone:
    """The :class:`EpisodeDone` of a ``havln/episode_done`` message.

    Raises:
        RecordError: not a JSON object or a bad schema version.
    """
    return EpisodeDone.from_json(msg.data)


# --- point clouds ----------------------------------------------------------------------


def decode_cloud(msg: Any) -> np.ndarray:
    """The x, y, z of a LiDAR's sensor_msgs/PointCloud2 (the sensor's frame) as (N, 3) float32, m;
    points with a non-finite coordinate dropped (:func:`~havln_robot.motion.lidar.cloud_xyz`, the one
    reader of LiDAR clouds: motion_node and people_node read a cloud alike).

    Raises:
        ValueError: no float x, y, z fields, or data shorter than the header says (the message names the fix).
    """
    from havln_robot.motion.lidar import cloud_xyz

    fields = [(f.name, int(f.offset), int(f.datatype), int(f.count)) for f in msg.fields]
    return cloud_xyz(fields, int(msg.point_step), int(msg.width) * int(msg.height), bytes(msg.data), bool(msg.is_bigendian))


def encode_cloud(xyz: np.ndarray, frame_id: str, stamp: Time) -> Any:
    """sensor_msgs/PointCloud2 of (N, 3) points, m, as a LiDAR driver publishes them: FLOAT32 x, y, z
    (:func:`~havln_robot.motion.lidar.pack_cloud`; the Go2 L1's ``utlidar/cloud`` and Livox's
    PointCloud2 carry more fields, x, y, z is what is read)."""
    from sensor_msgs.msg import PointCloud2, PointField

    from havln_robot.motion.lidar import pack_cloud

    fields, step, data = pack_cloud(xyz)
    msg = PointCloud2()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.height, msg.width = 1, len(data) // step
    msg.fields = [PointField(name=n, offset=o, datatype=d, count=c) for n, o, d, c in fields]
    msg.is_bigendian = False
    msg.point_step = step
    msg.row_step = len(data)
    msg.is_dense = True
    msg.data = data
    return msg


# --- people tracks ---------------------------------------------------------------------

#: Fields of ``havln/people_tracks`` (sensor_msgs/PointCloud2, one point per tracked person, base_link):
#: x, y position (m), vx, vy ground velocity in base_link axes (m/s), float32; id track id, uint32.
TRACK_DTYPE = np.dtype([("x", "<f4"), ("y", "<f4"), ("vx", "<f4"), ("vy", "<f4"), ("id", "<u4")])


def encode_tracks(rows: list[tuple[float, float, float, float, int]], frame_id: str, stamp: Time) -> Any:
    """sensor_msgs/PointCloud2 with fields x, y, vx, vy (FLOAT32) and id (UINT32), one point per person."""
    from sensor_msgs.msg import PointCloud2, PointField

    a = np.array([tuple(r) for r in rows], dtype=TRACK_DTYPE)
    msg = PointCloud2()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.height, msg.width = 1, len(a)
    msg.fields = [
        PointField(name=n, offset=TRACK_DTYPE.fields[n][1], datatype=PointField.UINT32 if n == "id" else PointField.FLOAT32, count=1)
        for n in TRACK_DTYPE.names
    ]
    msg.is_bigendian = False
    msg.point_step = TRACK_DTYPE.itemsize
    msg.row_step = msg.point_step * len(a)
    msg.is_dense = True
    msg.data = a.tobytes()
    return msg


def decode_tracks(msg: Any) -> np.ndarray:
    """Structured (N,) array with :data:`TRACK_DTYPE` fields from a ``havln/people_tracks`` message.

    Raises:
        ValueError: a field is missing (the message is not a people-tracks cloud).
    """
    return cloud_fields(msg, ("x", "y", "vx", "vy", "id"))


_PF = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}


def cloud_fields(msg: Any, names: tuple[str, ...]) -> np.ndarray:
    """Structured (N,) array of the named fields of any sensor_msgs/PointCloud2 (any layout/padding).

    Raises:
        ValueError: a named field is missing or has an unknown datatype.
    """
    fields = {f.name: f for f in msg.fields}
    missing = [n for n in names if n not in fields]
    if missing:
        raise ValueError(f"PointCloud2 has no field(s) {', '.join(missing)} (has {', '.join(fields) or 'none'})")
    end = ">" if msg.is_bigendian else "<"
    try:
        dt = np.dtype(
            {
                "names": list(names),
                "formats": [end + _PF[fields[n].datatype] for n in names],
                "offsets": [fields[n].offset for n in names],
                "itemsize": msg.point_step,
            }
        )
    except KeyError:
        raise ValueError("PointCloud2 field with an unknown datatype") from None
    n = msg.width * msg.height
    buf = bytes(msg.data) if not isinstance(msg.data, (bytes, bytearray, memoryview)) else msg.data
    if n == 0:
        return np.zeros(0, dtype=dt)
    rows = np.frombuffer(buf, dtype=np.uint8).reshape(msg.height, msg.row_step)[:, : msg.width * msg.point_step]
    return np.frombuffer(np.ascontiguousarray(rows).tobytes(), dtype=dt, count=n)


def decode_pose_array_cdr(raw: bytes) -> tuple[int, int, str, np.ndarray]:
    """A serialized geometry_msgs/PoseArray (CDR, as a ``raw=True`` subscription hands it over) read
    with numpy: rclpy's own conversion builds three Python objects per pose (0.3 s for 20,000 poses
    here, a whole control loop's worth of CPU at 10 Hz).

    Returns:
        (stamp sec, stamp nanosec, frame_id, (N, 7) float64 array: position x, y, z, orientation x, y, z, w).

    Raises:
        ValueError: not a PoseArray in plain CDR, or truncated.
    """
    b = memoryview(raw).cast("B")
    if len(b) < 16 or b[0] != 0 or b[1] not in (0, 1):
        raise ValueError("not a CDR-serialized message")
    end = "<" if b[1] == 1 else ">"
    body = b[4:]  # alignment counts from after the 4-byte encapsulation header

    def u32(off: int) -> int:
        if off + 4 > len(body):
            raise ValueError("PoseArray truncated")
        return int(np.frombuffer(body, dtype=f"{end}u4", count=1, offset=off)[0])

    sec = int(np.frombuffer(body, dtype=f"{end}i4", count=1, offset=0)[0])
    nsec = u32(4)
    n = u32(8)
    if n < 1 or 12 + n > len(body):
        raise ValueError("PoseArray frame_id truncated")
    frame_id = bytes(body[12 : 12 + n - 1]).decode("utf-8", errors="replace")
    off = (12 + n + 3) & ~3
    count = u32(off)
    if count == 0:
        return sec, nsec, frame_id, np.zeros((0, 7), np.float64)
    off = (off + 4 + 7) & ~7
    if off + count * 56 > len(body):
        raise ValueError(f"PoseArray truncated: {count} poses announced, {max(0, len(body) - off) // 56} present")
    poses = np.frombuffer(body, dtype=f"{end}f8", count=count * 7, offset=off).reshape(count, 7)
    return sec, nsec, frame_id, poses.astype(np.float64)
