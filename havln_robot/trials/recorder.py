"""MCAP recording of trials: rosbag2-compatible bags readable by ``ros2 bag`` and Foxglove.

No rclpy import at all: the ROS layer injects the CDR serialiser and the ``CompressedImage``
message type (:func:`havln_robot.ros.mcap.ros_recorder`), so the size-cap, roll-over, throttling
and downsampling logic is testable without ROS.

Format (MCAP spec, ``ros2`` profile; what rosbag2's MCAP storage writes):

* header profile ``ros2``; schemas with encoding ``ros2msg`` named ``pkg/msg/Type`` whose data
  is the installed ``.msg`` text followed, depth first, by each dependency not written yet (sorted
  per message), as ``"\\n" + "=" * 80 + "\\nMSG: pkg/Dep\\n" + text`` -- the dependency named exactly
  as the field writes it (``std_msgs/Header``; a bare type gets the file's package), which is how
  Foxglove's parser finds it (:func:`message_definition`); definitions come from the installed
  message packages (ament index / share folders), never from a copy;
* channels with message encoding ``cdr`` and metadata ``offered_qos_profiles``: the QoS the
  topic's publishers offered, in rosbag2's YAML form (:func:`offered_qos_yaml`; asked of the ROS
  graph by the ROS layer), so ``ros2 bag play`` restores it;
* a bag *directory* ``<name>/`` holding ``<name>_0.mcap``, ``<name>_1.mcap``, ... and a rosbag2
  ``metadata.yaml`` of version 5 (:data:`METADATA_VERSION`: what ROS 2 Humble writes and reads;
  Jazzy reads it too), so ``ros2 bag info/play <name>`` work; each ``.mcap`` file also opens on
  its own in Foxglove.

Size cap: ``max_bytes`` per file (estimated from the payload bytes, an upper bound of the
compressed file size); at the cap the recorder rolls over to the next file (``on_limit="roll"``,
at most ``max_files`` files) or stops (``on_limit="stop"``), saying so once through ``log``.

Images: ``image_stride`` keeps every n-th row and column of ``sensor_msgs/Image`` (and scales the
matching ``CameraInfo``); ``image_max_rate_hz`` drops frames (and camera_info) above that rate per topic;
``image_format="jpeg"`` stores 8-bit colour/mono images as ``sensor_msgs/CompressedImage`` on
``<topic>/compressed`` (depth stays raw).

A bag whose writer was killed lacks its summary; the data chunks before the kill are intact
(:func:`recover_bag`, ``havln-robot trial recover-bag``, writes them into a new, finished bag).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from mcap.data_stream import RecordBuilder
from mcap.records import DataEnd, Footer
from mcap.writer import MCAP0_MAGIC, CompressionType
from mcap.writer import Writer as McapWriter

from havln_robot.paths import clean_stale_staging, describe_owner, staged_output_dir
from havln_robot.trials import faults

_PRIMITIVES = frozenset("bool byte char float32 float64 int8 uint8 int16 uint16 int32 uint32 int64 uint64 string wstring".split())
_COMPRESSION = {"zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4, "none": CompressionType.NONE}
_BYTES_PER_PIXEL = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1, "8UC1": 1, "8UC3": 3, "mono16": 2, "16UC1": 2, "32FC1": 4}
_JPEG_OK = {"rgb8", "bgr8", "mono8", "8UC1"}
#: rosbag2 metadata.yaml version written: 5, the newest ROS 2 Humble reads in full (per-file
#: ``files`` entries; QoS as integers). Jazzy reads it too; version 9's QoS strings break Humble.
METADATA_VERSION = 5
#: Per-message overhead assumed by the size estimate (MCAP Message record + index entry), bytes.
_MSG_OVERHEAD = 64


class RecorderError(ValueError):
    """A message type whose ``.msg`` definition cannot be found, or a bad recorder option."""


def mcap_bag_dir(mcap_dir: str | os.PathLike[str], trial_id: object) -> Path:
    """The bag folder of one trial: ``<mcap_dir>/trial_<id, 4 digits>``.

    Args:
        mcap_dir: the profile's ``mcap_dir`` (``~`` expanded).
        trial_id: the trial's row id in the store (a non-negative int; never a name from the data).

    Raises:
        RecorderError: ``trial_id`` is not a non-negative int, or ``trial_<id>`` is a link leaving ``mcap_dir``.
    """
    from havln_robot.paths import UnsafePathError, safe_child

    if isinstance(trial_id, bool) or not isinstance(trial_id, int) or trial_id < 0:
        raise RecorderError(f"trial id {trial_id!r} cannot name a bag folder: expected the store's non-negative integer id")
    try:
        return safe_child(Path(mcap_dir).expanduser(), f"trial_{trial_id:04d}", "trial id")
    except UnsafePathError as exc:
        raise RecorderError(str(exc)) from None


def _share_dirs() -> list[Path]:
    dirs = [Path(p) / "share" for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    dirs += [Path(sys.prefix) / "share", Path("/opt/ros") / os.environ.get("ROS_DISTRO", "jazzy") / "share"]
    return dirs


def _package_share(pkg: str) -> Path | None:
    """The share folder of ROS package ``pkg`` as the ament index registers it, or None.

    With ``AMENT_PREFIX_PATH`` set (a sourced ROS installation) ``ament_index_python`` answers;
    the pip-installed ROS wheels register their packages in the ament index under ``sys.prefix``
    without setting it, so that prefix's index is looked at then.
    """
    if os.environ.get("AMENT_PREFIX_PATH"):
        try:
            from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
        except ImportError:
            pass
        else:
            try:
                return Path(get_package_share_directory(pkg))
            except (PackageNotFoundError, ValueError, OSError):
                pass
    if (Path(sys.prefix) / "share" / "ament_index" / "resource_index" / "packages" / pkg).is_file():
        return Path(sys.prefix) / "share" / pkg
    return None


def find_msg_file(pkg: str, name: str) -> Path:
    """Path of ``<pkg>/msg/<name>.msg`` in the ROS installation.

    Asks the ament index first (the package's share folder, as rosbag2 does), then searches
    ``$AMENT_PREFIX_PATH/*/share``, ``<sys.prefix>/share`` (the pip-installed ROS wheels) and
    ``/opt/ros/$ROS_DISTRO/share``.

    Raises:
        RecorderError: not found.
    """
    share = _package_share(pkg)
    candidates = ([share] if share is not None else []) + [d / pkg for d in _share_dirs()]
    for d in candidates:
        p = d / "msg" / f"{name}.msg"
        if p.is_file():
            return p
    raise RecorderError(f"message definition {pkg}/msg/{name}.msg not found under {', '.join(map(str, _share_dirs()))}")


#: A field line of a ``.msg`` file: its type (``pkg/Type``, ``Type`` or a primitive), an optional
#: array suffix, then blanks before the field name. Comment lines and bounded strings never match.
_FIELD_LINE = re.compile(r"\s*([A-Za-z0-9_/]+)(?:\[[^\]]*\])?\s")
_DEF_SEP = "=" * 80


def msg_dependencies(pkg: str, text: str) -> list[str]:
    """The message types a ``.msg`` text refers to, as rosbag2 names them: sorted, unique.

    A type written with its package (``std_msgs/Header``) keeps exactly that spelling; a bare type
    (``Point`` in geometry_msgs) gets the package of the file (``geometry_msgs/Point``). rosbag2
    writes each dependency under this name after ``MSG:``, and Foxglove's parser looks the field's
    type up by exactly this name.
    """
    deps = set()
    for line in text.splitlines():
        m = _FIELD_LINE.match(line + "\n")
        if m is None or m.group(1) in _PRIMITIVES:
            continue
        t = m.group(1)
        deps.add(t if "/" in t else f"{pkg}/{t}")
    return sorted(deps)


def _split_type(type_name: str) -> tuple[str, str]:
    """``(pkg, Type)`` of ``pkg/Type`` or ``pkg/msg/Type``."""
    bits = type_name.split("/")
    if len(bits) == 2 or (len(bits) == 3 and bits[1] == "msg"):
        if all(re.fullmatch(r"[A-Za-z0-9_]+", b) for b in bits):
            return bits[0], bits[-1]
    raise RecorderError(f"type {type_name!r}: expected 'pkg/msg/Type'")


def message_definition(type_name: str) -> str:
    """The full ``ros2msg`` definition of ``pkg/msg/Type``, laid out as rosbag2's recorder stores it.

    The top-level ``.msg`` text as installed, then, depth first, each dependency not written yet
    (in sorted order per message): a newline, a line of 80 ``=``, ``MSG: <name as the field writes
    it>`` and that type's ``.msg`` text, followed by its own dependencies. Definitions are read from
    the installed message packages (ament index / share folders), never from a copy.

    Raises:
        RecorderError: a definition file is missing or ``type_name`` is malformed.
    """
    bits = type_name.split("/")
    if len(bits) != 3 or bits[1] != "msg":
        raise RecorderError(f"type {type_name!r}: expected 'pkg/msg/Type'")
    written: set[str] = set()  # dependency names as written, like rosbag2's

    def full_text(pkg: str, name: str, depth: int) -> str:
        if depth <= 0:
            raise RecorderError(f"type {type_name}: message definitions nest too deep (a cycle?)")
        text = find_msg_file(pkg, name).read_text(encoding="utf-8")
        out = [text]
        for dep in msg_dependencies(pkg, text):
            if dep in written:
                continue
            written.add(dep)
            out.append(f"\n{_DEF_SEP}\nMSG: {dep}\n{full_text(*_split_type(dep), depth - 1)}")
        return "".join(out)

    pkg, name = _split_type(type_name)
    return full_text(pkg, name, 50)


def type_name_of(msg: Any) -> str:
    """``pkg/msg/Type`` of a generated ROS 2 message instance (e.g. ``nav_msgs/msg/Odometry``)."""
    cls = type(msg)
    return f"{cls.__module__.split('.')[0]}/msg/{cls.__name__}"


def downsample_image(msg: Any, stride: int) -> Any:
    """A copy of a ``sensor_msgs/Image`` keeping every ``stride``-th row and column.

    Raises:
        RecorderError: unsupported encoding.
    """
    import numpy as np

    if stride <= 1:
        return msg
    bpp = _BYTES_PER_PIXEL.get(msg.encoding)
    if bpp is None:
        raise RecorderError(f"image encoding {msg.encoding!r} cannot be downsampled; allowed: {', '.join(_BYTES_PER_PIXEL)}")
    a = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.step)[::stride, : msg.width * bpp]
    a = np.ascontiguousarray(a.reshape(a.shape[0], msg.width, bpp)[:, ::stride, :])
    out = type(msg)()
    out.header = msg.header
    out.height, out.width = int(a.shape[0]), int(a.shape[1])
    out.encoding, out.is_bigendian = msg.encoding, msg.is_bigendian
    out.step = out.width * bpp
    out.data = a.tobytes()
    return out


def downsample_camera_info(msg: Any, stride: int) -> Any:
    """A copy of a ``sensor_msgs/CameraInfo`` for an image downsampled by ``stride`` (K, P scaled)."""
    if stride <= 1:
        return msg
    out = type(msg)()
    out.header, out.distortion_model, out.d, out.r = msg.header, msg.distortion_model, msg.d, msg.r
    out.width, out.height = (msg.width + stride - 1) // stride, (msg.height + stride - 1) // stride
    k, p = list(msg.k), list(msg.p)
    for i in (0, 2, 4, 5):  # fx, cx, fy, cy
        k[i] /= stride
    for i in (0, 2, 5, 6, 3):  # fx, cx, fy, cy, Tx*fx
        p[i] /= stride
    out.k, out.p = k, p
    return out


def jpeg_image(msg: Any, compressed_type: Callable[[], Any], quality: int = 85) -> Any:
    """``sensor_msgs/CompressedImage`` (JPEG) from an 8-bit ``sensor_msgs/Image``.

    Args:
        msg: the image message.
        compressed_type: the ``sensor_msgs/CompressedImage`` class (or any factory of an empty one).
        quality: JPEG quality 1..100.

    Raises:
        RecorderError: not an 8-bit colour/mono image.
    """
    import cv2
    import numpy as np

    if msg.encoding not in _JPEG_OK:
        raise RecorderError(f"image encoding {msg.encoding!r} cannot be stored as JPEG; allowed: {', '.join(sorted(_JPEG_OK))}")
    bpp = _BYTES_PER_PIXEL[msg.encoding]
    a = (
        np.frombuffer(bytes(msg.data), dtype=np.uint8)
        .reshape(msg.height, msg.step)[:, : msg.width * bpp]
        .reshape(msg.height, msg.width, bpp)
    )
    if msg.encoding == "rgb8":
        a = cv2.cvtColor(a, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".jpg", a, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise RecorderError("JPEG encoding failed")
    out = compressed_type()
    out.header = msg.header
    out.format = f"{msg.encoding}; jpeg compressed {'bgr8' if bpp == 3 else 'mono8'}"
    out.data = buf.tobytes()
    return out


#: rosbag2's infinite QoS duration (RMW_DURATION_INFINITE) as ``sec``/``nsec``.
INFINITE_DURATION = {"sec": 9223372036, "nsec": 854775807}


def offered_qos_yaml(profiles: list[dict[str, Any]]) -> str:
    """``offered_qos_profiles`` in rosbag2's YAML form for metadata version <= 8 (what Humble reads).

    Args:
        profiles: one dict per publisher of the topic, with the rmw enum values as integers
            (``history``, ``depth``, ``reliability``, ``durability``, ``liveliness``), durations as
            ``{"sec", "nsec"}`` (``deadline``, ``lifespan``, ``liveliness_lease_duration``) and
            ``avoid_ros_namespace_conventions``; missing keys take rosbag2's "unknown publisher"
            values (history 3 = unknown, depth 0, reliable, volatile, automatic, infinite durations).

    Returns:
        A YAML list (one entry per publisher, keys in rosbag2's order) as one string without a
        final newline; "" for no publisher (``ros2 bag play`` then uses its default QoS).
    """
    order = (
        ("history", 3),
        ("depth", 0),
        ("reliability", 1),
        ("durability", 2),
        ("deadline", INFINITE_DURATION),
        ("lifespan", INFINITE_DURATION),
        ("liveliness", 1),
        ("liveliness_lease_duration", INFINITE_DURATION),
        ("avoid_ros_namespace_conventions", False),
    )
    rows = []
    for p in profiles:
        row: dict[str, Any] = {}
        for key, default in order:
            v = p.get(key, default)
            if isinstance(default, dict):
                row[key] = {"sec": int(v["sec"]), "nsec": int(v["nsec"])}
            elif isinstance(default, bool):
                row[key] = bool(v)
            else:
                row[key] = int(v)
        rows.append(row)
    return yaml.safe_dump(rows, sort_keys=False, default_flow_style=False).rstrip("\n") if rows else ""


@dataclass
class _FileStats:
    path: Path
    start_ns: int | None = None
    end_ns: int | None = None
    count: int = 0
    est_bytes: int = 0


@dataclass
class RecorderStats:
    """What a recorder wrote: files, messages per topic, dropped messages (by reason)."""

    files: list[Path] = field(default_factory=list)
    messages: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)


#: Bytes the recorder keeps in reserve (``.reserve`` in the bag folder, removed when the bag is
#: closed): on a full disk, freeing it leaves room to finish the bag (index, or at least its end records).
RESERVE_BYTES = 64 * 1024


class _GuardedStream:
    """An unbuffered file for the MCAP writer that ends at a record boundary whatever happens: a write
    that fails (full disk, I/O error) is cut off again (``ftruncate`` back to the end of the last
    complete write) before the error is raised, so the file holds only whole records."""

    def __init__(self, path: Path) -> None:
        self._fh = open(path, "wb", buffering=0)  # noqa: SIM115 - closed in close()
        self.good = 0

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        try:
            done = 0
            while done < len(view):
                done += self._fh.write(view[done:])
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fh.fileno(), self.good)
                self._fh.seek(self.good)
            raise
        self.good += len(view)
        return len(view)

    def tell(self) -> int:
        return self.good

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._fh.close()


class McapRecorder:
    """Record ROS 2 messages into a rosbag2-compatible MCAP bag directory.

    Args:
        bag_dir: the bag folder to create (must not exist or be empty); files are named
            ``<folder name>_<i>.mcap``.
        max_bytes: size cap per file in bytes (0 = none).
        on_limit: ``roll`` (continue in the next file) or ``stop`` at the cap.
        max_files: with ``roll``, stop after this many files (0 = no limit).
        image_stride: keep every n-th row/column of ``sensor_msgs/Image`` (1 = full size).
        image_max_rate_hz: per-topic image rate limit (0 = every frame).
        image_format: ``raw`` or ``jpeg`` (8-bit images as ``<topic>/compressed``).
        compression: MCAP chunk compression ``zstd`` | ``lz4`` | ``none``.
        chunk_size: MCAP chunk size, bytes (data in an unfinished chunk is lost on a crash).
        log: called with one-line notices (cap reached, roll-over).
        serialize: message → CDR bytes (``rclpy.serialization.serialize_message``, injected by the
            ROS layer); without it only :meth:`write_serialized` works.
        compressed_type: the ``sensor_msgs/CompressedImage`` class, needed for ``image_format="jpeg"``.
        offered_qos: topic as published → that topic's ``offered_qos_profiles`` string
            (:func:`offered_qos_yaml` of its publishers; injected by the ROS layer, which asks the
            ROS graph); asked once per recorded topic, when its first message is written. Without
            it the channels carry ``""`` (``ros2 bag play`` then uses its default QoS).

    Raises:
        RecorderError: bad option or ``bag_dir`` not empty.
    """

    def __init__(
        self,
        bag_dir: str | os.PathLike[str],
        max_bytes: int = 0,
        on_limit: str = "roll",
        max_files: int = 0,
        image_stride: int = 1,
        image_max_rate_hz: float = 0.0,
        image_format: str = "raw",
        compression: str = "zstd",
        chunk_size: int = 1 << 20,
        log: Callable[[str], None] | None = None,
        serialize: Callable[[Any], bytes] | None = None,
        compressed_type: Callable[[], Any] | None = None,
        offered_qos: Callable[[str], str] | None = None,
    ) -> None:
        if on_limit not in ("roll", "stop"):
            raise RecorderError(f"on_limit: {on_limit!r} is not one of roll, stop")
        if image_format not in ("raw", "jpeg"):
            raise RecorderError(f"image_format: {image_format!r} is not one of raw, jpeg")
        if image_format == "jpeg" and compressed_type is None:
            raise RecorderError("image_format jpeg needs the CompressedImage type (use havln_robot.ros.mcap.ros_recorder)")
        if compression not in _COMPRESSION:
            raise RecorderError(f"compression: {compression!r} is not one of {', '.join(_COMPRESSION)}")
        if image_stride < 1 or max_bytes < 0 or max_files < 0 or image_max_rate_hz < 0:
            raise RecorderError("image_stride must be >= 1; max_bytes, max_files, image_max_rate_hz must be >= 0")
        self.dir = Path(bag_dir).expanduser()
        if self.dir.exists() and any(self.dir.iterdir()):
            raise RecorderError(f"{self.dir}: bag folder exists and is not empty; choose another name")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.max_bytes, self.on_limit, self.max_files = int(max_bytes), on_limit, int(max_files)
        self.image_stride, self.image_max_rate_hz, self.image_format = int(image_stride), float(image_max_rate_hz), image_format
        self._compression, self._chunk_size = _COMPRESSION[compression], int(chunk_size)
        self._compression_name = compression
        self._log = log or (lambda s: None)
        self._serialize = serialize
        self._compressed_type = compressed_type
        self._offered_qos = offered_qos
        self._qos: dict[str, str] = {}  # recorded topic -> offered_qos_profiles
        self.stats = RecorderStats()
        self.stopped = False
        self._types: dict[str, str] = {}  # topic -> type
        self._defs: dict[str, bytes] = {}
        self._last_image_ns: dict[str, int] = {}
        self._files: list[_FileStats] = []
        self._fh: Any = None
        self._writer: McapWriter | None = None
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self._seq = 0
        self.fault: OSError | None = None  # the write error that stopped the bag (close() finishes it readable)
        self._reserve()
        self._open_next()

    # --- files ------------------------------------------------------------------------------------
    def _open_next(self) -> None:
        self._close_file()
        path = self.dir / f"{self.dir.name}_{len(self._files)}.mcap"
        self._fh = _GuardedStream(path)
        self._writer = McapWriter(self._fh, chunk_size=self._chunk_size, compression=self._compression)
        self._writer.start(profile="ros2", library="havln_robot trial recorder (mcap python)")
        self._schemas, self._channels = {}, {}
        self._files.append(_FileStats(path))
        self.stats.files.append(path)

    def _close_file(self) -> None:
        if self._writer is not None:
            writer, fh, self._writer, self._fh = self._writer, self._fh, None, None
            try:
                if self.fault:
                    self._release_reserve()  # room for the index on a full disk
                try:
                    writer.finish()
                except OSError:
                    if not self.fault:
                        raise
                    # not even the index fits: end the data section where the last whole record ends
                    # (the stream cut the failed write off), so readers still read every record in it
                    rb = RecordBuilder()
                    DataEnd(0).write(rb)
                    Footer(0, 0, 0).write(rb)
                    fh.write(rb.end() + MCAP0_MAGIC)
            finally:
                fh.close()

    def _reserve(self) -> None:
        with contextlib.suppress(OSError), open(self.dir / ".reserve", "wb") as f:
            f.write(b"\0" * RESERVE_BYTES)

    def _release_reserve(self) -> None:
        with contextlib.suppress(OSError):
            (self.dir / ".reserve").unlink()

    def close(self) -> None:
        """Finish the current file and write ``metadata.yaml``. Safe to call twice. After a write
        fault (:attr:`fault`) the file is finished as far as the disk allows: with its index when the
        reserve makes room, else ending after its last whole record (readable, not indexed)."""
        try:
            self._close_file()
        finally:
            self._release_reserve()
        self._write_metadata()

    def __enter__(self) -> McapRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_metadata(self) -> None:
        files = [f for f in self._files if f.path.exists()]
        starts = [f.start_ns for f in files if f.start_ns is not None]
        ends = [f.end_ns for f in files if f.end_ns is not None]
        t0 = min(starts) if starts else 0
        t1 = max(ends) if ends else 0
        info = {
            "rosbag2_bagfile_information": {
                "version": METADATA_VERSION,
                "storage_identifier": "mcap",
                "duration": {"nanoseconds": int(t1 - t0)},
                "starting_time": {"nanoseconds_since_epoch": int(t0)},
                "message_count": int(sum(f.count for f in files)),
                "topics_with_message_count": [
                    {
                        "topic_metadata": {
                            "name": topic,
                            "type": typ,
                            "serialization_format": "cdr",
                            "offered_qos_profiles": self._qos.get(topic, ""),
                        },
                        "message_count": int(self.stats.messages.get(topic, 0)),
                    }
                    for topic, typ in self._types.items()
                ],
                "compression_format": "",
                "compression_mode": "",
                "relative_file_paths": [f.path.name for f in files],
                "files": [
                    {
                        "path": f.path.name,
                        "starting_time": {"nanoseconds_since_epoch": int(f.start_ns or 0)},
                        "duration": {"nanoseconds": int((f.end_ns or 0) - (f.start_ns or 0))},
                        "message_count": int(f.count),
                    }
                    for f in files
                ],
            }
        }
        from havln_robot.paths import atomic_output

        with atomic_output(self.dir / "metadata.yaml") as tmp:
            tmp.write_text(yaml.safe_dump(info, sort_keys=False), encoding="utf-8")

    # --- writing ----------------------------------------------------------------------------------
    def _drop(self, why: str) -> bool:
        self.stats.dropped[why] = self.stats.dropped.get(why, 0) + 1
        return False

    def write(self, topic: str, msg: Any, log_time_ns: int | None = None, publish_time_ns: int | None = None) -> bool:
        """Record one message (after image throttling/downsampling).

        Args:
            topic: topic name as published (a leading ``/`` is added, as rosbag2 does).
            msg: a generated ROS 2 message instance.
            log_time_ns: receive time, ns (default: now).
            publish_time_ns: publish time, ns (default: the header stamp, else the log time).

        Returns:
            True if written, False if dropped (rate limit, cap reached, recorder stopped).
        """
        if self.stopped:
            return self._drop("stopped")
        log_time_ns = time.time_ns() if log_time_ns is None else int(log_time_ns)
        tname = type_name_of(msg)
        source_topic = topic
        if tname in ("sensor_msgs/msg/Image", "sensor_msgs/msg/CameraInfo") and self.image_max_rate_hz > 0:
            last = self._last_image_ns.get(topic)
            if last is not None and log_time_ns - last < 1e9 / self.image_max_rate_hz:
                return self._drop("image_rate")
            self._last_image_ns[topic] = log_time_ns
        if tname == "sensor_msgs/msg/Image":
            msg = downsample_image(msg, self.image_stride)
            if self.image_format == "jpeg" and msg.encoding in _JPEG_OK:
                msg = jpeg_image(msg, self._compressed_type)
                topic = topic.rstrip("/") + "/compressed"
                tname = "sensor_msgs/msg/CompressedImage"
        elif tname == "sensor_msgs/msg/CameraInfo":
            msg = downsample_camera_info(msg, self.image_stride)
        if publish_time_ns is None:
            stamp = getattr(getattr(msg, "header", None), "stamp", None)
            publish_time_ns = stamp.sec * 1_000_000_000 + stamp.nanosec if stamp is not None else log_time_ns
            if publish_time_ns == 0:
                publish_time_ns = log_time_ns
        if self._serialize is None:
            raise RecorderError("no message serialiser was injected (use havln_robot.ros.mcap.ros_recorder)")
        rec_topic = topic if topic.startswith("/") else "/" + topic
        if rec_topic not in self._qos and self._offered_qos is not None:
            # a JPEG copy's QoS is that of the raw image topic it came from
            src = source_topic if source_topic.startswith("/") else "/" + source_topic
            self._qos[rec_topic] = self._offered_qos(src)
        return self.write_serialized(topic, tname, self._serialize(msg), log_time_ns, publish_time_ns)

    def write_serialized(
        self,
        topic: str,
        type_name: str,
        data: bytes,
        log_time_ns: int,
        publish_time_ns: int | None = None,
        offered_qos: str | None = None,
    ) -> bool:
        """Record one CDR-serialised message of type ``pkg/msg/Type`` (no image processing).

        ``offered_qos`` (rosbag2's ``offered_qos_profiles`` string) is kept for the topic when it
        has none yet (a recovered bag passes the source channel's).

        Returns:
            True if written, False if dropped because the size cap stopped the recorder.

        Raises:
            RecorderError: the type's definition is missing, or the topic changed type.
        """
        if self.stopped:
            return self._drop("stopped")
        topic = topic if topic.startswith("/") else "/" + topic
        if offered_qos is not None:
            self._qos.setdefault(topic, offered_qos)
        if self._types.setdefault(topic, type_name) != type_name:
            raise RecorderError(f"topic {topic}: type {type_name} differs from the recorded {self._types[topic]}")
        if type_name not in self._defs:
            self._defs[type_name] = message_definition(type_name).encode()
        cur = self._files[-1]
        need = len(data) + _MSG_OVERHEAD + (0 if topic in self._channels else len(self._defs[type_name]) + 256)
        if self.max_bytes and cur.count > 0 and cur.est_bytes + need > self.max_bytes:
            if self.on_limit == "stop" or (self.max_files and len(self._files) >= self.max_files):
                self.stopped = True
                self._log(
                    f"MCAP size cap reached ({self.max_bytes} bytes x {len(self._files)} file(s)); recording stopped, {self.dir} kept"
                )
                self._write_metadata()
                return self._drop("stopped")
            self._open_next()
            self._log(f"MCAP file reached {self.max_bytes} bytes; continuing in {self._files[-1].path.name}")
            self._write_metadata()
            cur = self._files[-1]
            need = len(data) + _MSG_OVERHEAD + len(self._defs[type_name]) + 256
        assert self._writer is not None
        try:
            return self._add(topic, type_name, data, log_time_ns, publish_time_ns, cur, need)
        except OSError as exc:
            self.fault, self.stopped = exc, True  # nothing more is written; close() finishes the file
            raise

    def _add(self, topic: str, type_name: str, data: bytes, log_time_ns: int, publish_time_ns: int | None, cur: Any, need: int) -> bool:
        assert self._writer is not None
        if faults.disk_full("mcap"):
            raise OSError(errno.ENOSPC, "No space left on device (injected)", str(cur.path))
        if type_name not in self._schemas:
            self._schemas[type_name] = self._writer.register_schema(type_name, "ros2msg", self._defs[type_name])
        if topic not in self._channels:
            self._channels[topic] = self._writer.register_channel(
                topic, "cdr", self._schemas[type_name], metadata={"offered_qos_profiles": self._qos.get(topic, "")}
            )
        self._writer.add_message(
            self._channels[topic], log_time=log_time_ns, data=data, publish_time=publish_time_ns or log_time_ns, sequence=self._seq
        )
        self._seq += 1
        cur.count += 1
        cur.est_bytes += need
        cur.start_ns = log_time_ns if cur.start_ns is None else min(cur.start_ns, log_time_ns)
        cur.end_ns = log_time_ns if cur.end_ns is None else max(cur.end_ns, log_time_ns)
        self.stats.messages[topic] = self.stats.messages.get(topic, 0) + 1
        return True


@dataclass
class RecoveryReport:
    """What :func:`recover_bag` salvaged.

    Attributes:
        source: the bag folder (or file) read. out: the new bag folder.
        messages: messages written to the new bag. topics: topic → messages.
        truncated: the source files that ended in an unfinished record (the killed writer's last,
            unfinished chunk is lost; everything before it is recovered).
        not_mcap: the source files skipped because they do not start with the MCAP magic bytes.
    """

    source: Path
    out: Path
    messages: int = 0
    topics: dict[str, int] = field(default_factory=dict)
    truncated: list[str] = field(default_factory=list)
    not_mcap: list[str] = field(default_factory=list)


def _recovered_definition(type_name: str, stored: bytes) -> bytes:
    """The schema a recovered bag gets: the installed definition in rosbag2's layout when its
    top-level text is the stored one (same message version; this also repairs bags of older
    recorders that named dependencies ``pkg/msg/Type``), else the stored schema unchanged."""
    try:
        fresh = message_definition(type_name)
        pkg, name = _split_type(type_name)
        top = find_msg_file(pkg, name).read_text(encoding="utf-8")
    except RecorderError:
        return stored
    stored_top = stored.decode("utf-8", "replace").split("\n" + _DEF_SEP + "\n", 1)[0]
    return fresh.encode() if stored_top.rstrip("\n") == top.rstrip("\n") else stored


def _file_index(p: Path) -> tuple[int, str]:
    m = re.search(r"_(\d+)\.mcap$", p.name)
    return (int(m.group(1)) if m else 0, p.name)


def _has_mcap_magic(path: Path) -> bool:
    """True when ``path`` starts with the MCAP magic bytes (the ``mcap`` library's check; an
    unreadable file counts as not MCAP)."""
    import struct

    from mcap.data_stream import ReadDataStream
    from mcap.exceptions import McapError
    from mcap.stream_reader import read_magic

    try:
        with open(path, "rb") as f:
            return read_magic(ReadDataStream(f))
    except (OSError, McapError, struct.error):
        return False


def _recover_file(path: Path, rec: McapRecorder, report: RecoveryReport) -> None:
    """Copy every message of every complete chunk of the ``.mcap`` file ``path`` into ``rec``, counting
    them in ``report`` (its unfinished tail noted in ``report.truncated``)."""
    from mcap.records import Channel, Message, Schema
    from mcap.stream_reader import StreamReader

    schemas: dict[int, Schema] = {}
    channels: dict[int, Channel] = {}
    records = iter(StreamReader(str(path), validate_crcs=True).records)
    while True:
        try:
            r = next(records)
        except StopIteration:
            break
        except Exception:  # the mcap reader's end-of-file / CRC / record errors: the unfinished tail
            report.truncated.append(path.name)
            break
        if isinstance(r, Schema):
            schemas[r.id] = r
        elif isinstance(r, Channel):
            channels[r.id] = r
        elif isinstance(r, Message) and r.channel_id in channels:
            ch = channels[r.channel_id]
            sc = schemas.get(ch.schema_id)
            if sc is None:
                continue
            if sc.name not in rec._defs:
                rec._defs[sc.name] = _recovered_definition(sc.name, sc.data)
            rec.write_serialized(ch.topic, sc.name, r.data, r.log_time, r.publish_time, ch.metadata.get("offered_qos_profiles", ""))
            report.messages += 1
            report.topics[ch.topic] = report.topics.get(ch.topic, 0) + 1


def recover_bag(src: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, overwrite: bool = False) -> RecoveryReport:
    """Salvage the MCAP bag of a killed run into a new, finished bag (``havln-robot trial recover-bag``).

    A writer killed with ``kill -9`` leaves its ``.mcap`` without summary and footer, and its last
    chunk unfinished. This reads each file front to back with the ``mcap`` library's
    :class:`~mcap.stream_reader.StreamReader` (chunk CRCs checked), keeps every message of every
    complete chunk, stops at the first unfinished record, and writes the messages (schemas in
    rosbag2's layout, see :func:`_recovered_definition`; each channel's ``offered_qos_profiles``
    kept) into a new bag folder with :class:`McapRecorder`: finished files with summary and
    index, and a rosbag2 ``metadata.yaml``. The source is never modified.

    Args:
        src: the bag folder (``trial_NNNN/``; its ``*.mcap`` in roll-over order) or one ``.mcap`` file.
        out: the new bag folder (default ``<src>_recovered`` beside it); must not exist or be empty.
        overwrite: replace an existing ``out`` that holds only a bag (``*.mcap`` + ``metadata.yaml``);
            the new bag is written beside it and swapped in only when the recovery succeeded, so a
            failed recovery leaves the earlier bag as it was.

    Returns:
        A :class:`RecoveryReport`.

    Raises:
        RecorderError: no ``.mcap`` file at ``src``, nothing readable in it, or ``out`` not usable (one line).
    """
    src = Path(src).expanduser()
    if src.is_dir():
        files = sorted((p for p in src.glob("*.mcap") if p.is_file()), key=_file_index)
        default_out = src.parent / f"{src.name}_recovered"
    elif src.is_file():
        files, default_out = [src], src.parent / f"{src.stem}_recovered"
    else:
        raise RecorderError(f"{src}: no such bag folder or .mcap file (trial list / show prints each trial's bag)")
    if not files:
        raise RecorderError(f"{src}: no .mcap files in this folder")
    dst = Path(out).expanduser() if out else default_out
    dst_r = dst.resolve()
    if dst_r == src.resolve() or src.resolve() in dst_r.parents or any(dst_r in f.resolve().parents for f in files):
        # the last test: a single .mcap given as the source, --out its own folder (--overwrite deleted the source)
        raise RecorderError(f"--out {dst}: must not be the source bag, inside it, or the folder holding its .mcap files")
    not_mcap = [p for p in files if not _has_mcap_magic(p)]
    if len(not_mcap) == len(files):
        what = files[0] if len(files) == 1 else f"{src}: none of its {len(files)} .mcap files"
        raise RecorderError(
            f"{what}: not an MCAP file (it does not start with the MCAP magic bytes); give the bag folder of a trial "
            "(havln-robot trial show N prints it)"
        )
    files = [p for p in files if p not in not_mcap]
    # a recover-bag killed (SIGKILL) into this --out left its staging folder: removed once its process is gone
    busy = [(p, owner) for p, owner in clean_stale_staging(dst) if p.parent == dst]
    if busy:
        path, owner = busy[0]
        raise RecorderError(
            f"--out {dst}: another run ({describe_owner(owner)}) is writing into it ({path}); wait for it to end, or choose another "
            "--out (remove that folder if no run writes there any more)"
        )
    if dst.exists() and (not dst.is_dir() or any(dst.iterdir())):
        if not overwrite:
            raise RecorderError(f"--out {dst}: exists and is not empty; choose another folder or pass --overwrite")
        if not dst.is_dir() or any(not (p.is_file() and (p.suffix == ".mcap" or p.name == "metadata.yaml")) for p in dst.iterdir()):
            raise RecorderError(f"--out {dst}: holds more than a bag (*.mcap, metadata.yaml); not replaced")
    report = RecoveryReport(source=src, out=dst, not_mcap=[p.name for p in not_mcap])
    # recovered into a staging folder inside ``dst`` and swapped in only on success: a failed recovery
    # (nothing readable) leaves an earlier bag in ``dst`` as it was
    with staged_output_dir(dst, stale=("*.mcap", "metadata.yaml"), leaf=dst.name) as stage:
        rec = McapRecorder(stage, compression="zstd")
        try:
            for path in files:
                _recover_file(path, rec, report)
        finally:
            rec.close()
        if report.messages == 0:
            kept = " (--out keeps its earlier bag)" if any(dst.glob("*.mcap")) else ""
            raise RecorderError(f"{src}: no complete message could be read (the run was killed before its first chunk was written){kept}")
    return report
