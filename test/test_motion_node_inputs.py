"""motion_node against inputs that do not mean what they claim: camera_info that does not describe
the depth image, empty / stale / frozen depth, a people source gone silent, a PoseArray of
thousands, a starved control loop, huge and escape-laden action strings.

The node is driven by calling its callbacks with a fake clock (``node._now``), so no test depends
on how fast a loaded machine spins an executor.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose, PoseArray
from nav_msgs.msg import Odometry
from rclpy.serialization import serialize_message
from sensor_msgs.msg import CameraInfo, Image, Imu
from std_msgs.msg import String

from havln_robot.camera import Intrinsics, IntrinsicsError
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.motion.people_input import rebase_people
from havln_robot.motion.safety import Person, rebase_person
from havln_robot.nodes.motion_node import ACTION_ECHO_CHARS, MotionNode
from havln_robot.ros.codec import image_msg, status_dict

W, H, F = 160, 120, 100.0


class Log:
    """Stands in for the node's rclpy logger: keeps (severity, text)."""

    def __init__(self):
        self.lines: list[tuple[str, str]] = []

    def _add(self, sev):
        return lambda text, **_kw: self.lines.append((sev, str(text)))

    def __getattr__(self, name):
        if name in ("debug", "info", "warning", "warn", "error", "fatal"):
            return self._add(name)
        raise AttributeError(name)

    def having(self, word, sev=None):
        """Lines holding ``word`` (of severity ``sev``), the per-action result lines (``#seq ...``) left out."""
        return [t for s, t in self.lines if word in t and (sev is None or s == sev) and not t.startswith("#")]


def _stamp(t):
    sec, ns = divmod(round(t * 1e9), 1_000_000_000)
    return Time(sec=int(sec), nanosec=int(ns))


class Driver:
    """A MotionNode on a fake clock, fed by hand."""

    def __init__(self, ros_context, **over):
        params = {**MOTION_PARAMS.defaults(), "timeout_margin_s": 10.0, **over}
        self.node = MotionNode(params=params, context=ros_context)
        self.t = 1000.0
        self.node._now = lambda: self.t
        self.log = Log()
        self.node.get_logger = lambda: self.log
        self.published = []
        self.node.result_pub.publish = self.published.append
        self.node.cmd_pub.publish = lambda msg: None
        self.node.collision_pub.publish = lambda msg: None
        self.node.guard.reset(self.t)
        self.x = 0.0

    @property
    def results(self):
        return [(m.name, m.message, status_dict(m)) for m in self.published]

    def sensors(self, dt=0.0):
        self.t += dt
        self.x += 1e-4 if dt else 0.0  # never bit-identical (odom freeze check)
        od = Odometry()
        od.header.stamp = _stamp(self.t)
        od.pose.pose.position.x = self.x
        od.pose.pose.orientation.w = 1.0
        self.node._on_odom(od)
        im = Imu()
        im.header.stamp = _stamp(self.t)
        im.orientation.w = 1.0
        im.linear_acceleration.z = 9.81
        self.node._on_imu(im)

    def info(self, w=W, h=H, k=None):
        msg = CameraInfo()
        msg.width, msg.height = w, h
        msg.k = k or [F, 0.0, (w - 1) / 2, 0.0, F, (h - 1) / 2, 0.0, 0.0, 1.0]
        self.node._on_info(msg)

    def depth(self, wall_m=5.0, stamp=None):
        msg = image_msg(np.full((H, W), int(wall_m * 1000), np.uint16), "16UC1", "camera_color_optical_frame", _stamp(stamp or self.t))
        self.node._on_depth(msg)

    def people(self, xy, stamp=None):
        pa = PoseArray()
        pa.header.stamp, pa.header.frame_id = _stamp(stamp or self.t), "base_link"
        for x, y in xy:
            ps = Pose()
            ps.position.x, ps.position.y = float(x), float(y)
            pa.poses.append(ps)
        self.node._on_people_raw(serialize_message(pa))

    def act(self, action):
        n = len(self.published)
        self.node._on_action(String(data=action))
        return self.results[n:]

    def close(self):
        self.node.destroy_node()


@pytest.fixture
def driver(ros_context):
    made = []

    def make(**over):
        d = Driver(ros_context, **over)
        made.append(d)
        d.sensors()
        return d

    yield make
    for d in made:
        d.close()


# --------------------------------------------------------------------------- camera_info
def test_intrinsics_refuses_implausible_focal_length_and_principal_point():
    Intrinsics.from_k([615.0, 0, 430.2, 0, 615.5, 247.9, 0, 0, 1], 848, 480)  # a real D435i colour camera_info
    with pytest.raises(IntrinsicsError, match=r"fx = 1e-300 px .*field of view"):
        Intrinsics.from_k([1e-300, 0, 79.5, 0, 1e-300, 59.5, 0, 0, 1], W, H)
    with pytest.raises(IntrinsicsError, match=r"fy = .*field of view"):
        Intrinsics.from_k([100.0, 0, 79.5, 0, 1e9, 59.5, 0, 0, 1], W, H)
    with pytest.raises(IntrinsicsError, match=r"cx = 1e\+12 px is off the 160x120 image"):
        Intrinsics.from_k([100.0, 0, 1e12, 0, 100.0, -1e12, 0, 0, 1], W, H)
    with pytest.raises(IntrinsicsError, match=r"cy = -1e\+12"):
        Intrinsics.from_k([100.0, 0, 79.5, 0, 100.0, -1e12, 0, 0, 1], W, H)


@pytest.mark.parametrize(
    "info",
    [
        {"w": 640, "h": 480, "k": [100.0, 0, 319.5, 0, 100.0, 239.5, 0, 0, 1]},  # another image's camera_info
        {"k": [1e-300, 0, 79.5, 0, 1e-300, 59.5, 0, 0, 1]},
        {"k": [100.0, 0, 1e12, 0, 100.0, -1e12, 0, 0, 1]},
    ],
    ids=["bigger_info", "tinyf", "cxfar"],
)
def test_camera_info_not_describing_the_depth_image_is_no_depth(driver, info):
    d = driver(require_depth=True)
    d.info()  # a good one first: a bad one later must not leave it in place
    d.info(**info)
    d.depth(wall_m=0.3)
    assert d.node.core.obstacles(d.t).points is None
    (res,) = d.act("MOVE_FORWARD")
    assert res[1] == "aborted" and "require_depth" in res[2]["detail"], res
    warned = d.log.having("camera_info", "warning")
    assert len(warned) == 1
    assert ("width/height 640x480" in warned[0]) if "w" in info else ("camera_info K" in warned[0])
    d.depth(wall_m=0.3)
    d.info(**info)
    assert len(d.log.having("camera_info", "warning")) == 1  # once


def test_empty_depth_image_is_not_a_depth_image(driver):
    d = driver(require_depth=True)
    d.info()
    msg = Image()
    msg.header.stamp = _stamp(d.t)
    msg.encoding = "16UC1"  # width = height = step = 0, no data
    d.node._on_depth(msg)
    (res,) = d.act("MOVE_FORWARD")
    assert res[1] == "aborted" and "empty depth image (0x0)" in res[2]["detail"], res
    assert len(d.log.having("empty depth image", "warning")) == 1


# --------------------------------------------------------------------------- stale / frozen depth
def test_depth_age_counts_from_its_capture_stamp(driver):
    d = driver(require_depth=True)
    d.info()
    d.depth(stamp=d.t - 4.0)  # on this clock (within STAMP_BEHIND_S), but 4 s old
    (res,) = d.act("MOVE_FORWARD")
    assert res[1] == "aborted" and "4.00 s old by its capture stamp" in res[2]["detail"], res
    assert "camera_color" not in res[2]["detail"] and "camera/aligned_depth_to_color/image_raw" in res[2]["detail"]
    d.depth()
    assert d.act("MOVE_FORWARD") == []  # a fresh frame: started


def test_frozen_depth_stamp_refuses_even_on_another_clock(driver):
    d = driver(require_depth=True, depth_freeze_frames=5)
    d.info()
    for _ in range(10):  # a camera whose clock is 100 s behind (off this clock: arrival times used), advancing
        d.sensors(0.066)
        d.depth(stamp=d.t - 100.0)
    assert d.node.core.obstacles(d.t).points is not None  # a constant clock offset is not a frozen camera
    first = d.t - 100.0
    for _ in range(5):  # the driver wedges: the same frame, the same stamp, over and over
        d.sensors(0.066)
        d.depth(stamp=first)
    (res,) = d.act("MOVE_FORWARD")
    assert res[1] == "aborted" and "image_raw: depth camera frozen: 6 frames with the same header stamp" in res[2]["detail"], res
    assert len(d.log.having("frozen", "warning")) == 1


def test_depth_freezing_while_moving_stops_naming_the_camera(driver):
    d = driver(require_depth=True, depth_freeze_frames=3)
    d.info()
    d.depth()
    assert d.act("MOVE_FORWARD") == []  # started
    assert d.node.motion.busy
    st = d.t
    for _ in range(3):
        d.sensors(0.02)
        d.depth(stamp=st)
        d.node._on_tick()
        if not d.node.motion.busy:
            break
    assert not d.node.motion.busy
    (res,) = d.results
    assert res[1] == "aborted" and "image_raw: depth camera frozen" in res[2]["detail"] and "robot stopped" in res[2]["detail"], res


# --------------------------------------------------------------------------- silent people source
def test_silent_people_source_refuses_and_stops_under_require_people(driver):
    d = driver(require_depth=False, require_people=True, people_timeout_s=1.0)
    (res,) = d.act("TURN_LEFT")
    assert res[1] == "aborted" and "no people received yet on havln/people" in res[2]["detail"], res
    d.people([(5.0, 5.0)])
    assert d.act("MOVE_FORWARD") == []  # the source is live: moves
    for _ in range(60):  # people_node dies: odom and imu go on
        d.sensors(0.02)
        d.node._on_tick()
        if not d.node.motion.busy:
            break
    res = d.results[-1]
    assert res[1] == "aborted" and "people source havln/people / havln/people_tracks silent for" in res[2]["detail"], res
    assert d.t - 1000.0 <= 1.1
    err = d.log.having("people source silent for", "error")
    assert len(err) == 1 and "personal-space checks off" in err[0]
    d.sensors(1.0)
    d.node._on_tick()
    (res,) = d.act("MOVE_FORWARD")
    assert res[1] == "aborted" and "silent for 2.0" in res[2]["detail"], res
    assert len(d.log.having("people source silent for", "error")) == 1  # once
    d.people([(5.0, 5.0)])
    d.node._on_tick()
    assert d.log.having("people source back", "info")
    assert d.act("TURN_LEFT") == []


def test_silent_people_source_is_reported_without_require_people(driver):
    d = driver(require_depth=False, require_people=False, people_timeout_s=1.0)
    d.node._on_tick()
    d.sensors(2.0)
    d.node._on_tick()
    assert not d.log.having("people source")  # never heard and not required: nothing to report
    d.people([(0.9, 0.0)])
    d.sensors(1.5)
    d.node._on_tick()
    d.sensors(0.5)
    d.node._on_tick()
    err = d.log.having("people source silent for 1.5 s", "error")
    assert len(err) == 1 and "personal-space checks off" in err[0]


# --------------------------------------------------------------------------- crowds, overload
def test_people_message_is_capped_to_the_nearest(driver):
    d = driver(require_depth=False, max_people=64)
    far = [(40.0 + i * 1e-3, 40.0) for i in range(20000)]
    d.people([*far[:7000], (0.9, 0.1), *far[7000:]])
    kept = d.node.people.people[0]
    assert len(kept) == 64 and (kept[0].x, kept[0].y) == (0.9, 0.1)
    assert kept[1].x == pytest.approx(40.0)
    warned = d.log.having("only the nearest 64 used (max_people)", "warning")
    assert len(warned) == 1 and "20001 people" in warned[0]
    d.people(far)
    assert len(d.log.having("max_people", "warning")) == 1


def test_people_topic_is_decoded_raw_and_capped_before_python_objects(driver):
    """The subscription is raw: the serialized PoseArray is read with numpy, so a 20,000-pose
    message never becomes 60,000 Python objects (rclpy's conversion: 0.3 s each, at 10 Hz)."""
    from rclpy.serialization import serialize_message

    d = driver(require_depth=False, max_people=64)
    pa = PoseArray()
    pa.header.stamp, pa.header.frame_id = _stamp(d.t), "base_link"
    for i in range(20000):
        ps = Pose()
        ps.position.x, ps.position.y = 40.0 + i * 1e-3, 40.0
        pa.poses.append(ps)
    near = Pose()
    near.position.x, near.position.y = 0.9, float("nan")  # NaN distance: never taken as the nearest
    pa.poses.insert(5000, near)
    near = Pose()
    near.position.x, near.position.y = 0.9, 0.1
    pa.poses.insert(12000, near)
    d.node._on_people_raw(serialize_message(pa))
    kept = d.node.people.people[0]
    assert len(kept) == 64 and (kept[0].x, kept[0].y) == (0.9, 0.1) and kept[1].x == pytest.approx(40.0)
    assert len(d.log.having("20002 people in one message; only the nearest 64 used (max_people)", "warning")) == 1
    d.node._on_people_raw(b"\x00\x01\x00\x00garbage")
    assert d.log.having("message ignored", "warning")
    small = PoseArray()
    small.header.stamp, small.header.frame_id = _stamp(d.t), "base_link"
    small.poses = [Pose()]
    small.poses[0].position.x, small.poses[0].position.y = 2.0, -0.5
    d.node._on_people_raw(serialize_message(small))
    assert [(q.x, q.y) for q in d.node.people.people[0]] == [(2.0, -0.5)]


def test_people_rebase_is_one_call_and_matches_rebase_person():
    people = [Person(1.0 + i, 0.5 * i, i, 0.3, -0.2) for i in range(10)]
    at, now = (0.0, 0.0, 0.0), (0.4, -0.1, math.radians(25.0))
    got = rebase_people(people, at, now)
    want = [rebase_person(q, at, now) for q in people]
    for g, w in zip(got, want, strict=True):
        assert (g.x, g.y, g.human_id, g.vx, g.vy) == pytest.approx((w.x, w.y, w.human_id, w.vx, w.vy))


def test_starved_control_loop_is_reported_as_overload(driver):
    d = driver(require_depth=False, sensor_timeout_s=0.3)
    d.node._on_tick()
    assert d.act("MOVE_FORWARD") == []
    d.sensors(0.02)
    d.node._on_tick()
    d.sensors(0.5)  # the next tick comes 0.5 s late (odometry itself is fresh)
    d.node._on_tick()
    (res,) = d.results
    assert res[1] == "aborted" and "control loop overloaded: 0.50 s since the previous control tick" in res[2]["detail"], res


# --------------------------------------------------------------------------- action strings
def test_huge_action_string_is_not_amplified_and_rejections_are_throttled(driver):
    d = driver(require_depth=False)
    (res,) = d.act("X" * 2_000_000)
    assert res[1] == "rejected"
    size = len(res[0]) + sum(len(v) for v in res[2].values())
    assert size < 2000, size
    assert "(2000000 chars)" in res[0] and len(res[0]) < ACTION_ECHO_CHARS + 40
    assert all(len(t) < 1500 for _, t in d.log.lines)
    for _ in range(50):
        d.act("junk")
    assert len([1 for s, _t in d.log.lines if s == "warning"]) == 1  # 51 rejections within a second: one line
    d.t += 1.5
    d.act("junk")
    last = d.log.lines[-1][1]
    assert "(50 more rejected actions not logged)" in last
    assert len(d.results) == 52  # every one is still answered on the result topic


def test_escape_sequences_in_action_never_reach_the_log(driver):
    d = driver(require_depth=False)
    d.act("\x1b[2J\x1b[31mPWNED\x07")
    d.t += 2.0
    d.act("\u202eDRAWROF_EVOM")
    assert len(d.log.lines) == 2
    for _, text in d.log.lines:
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "\\x1b[2J" in d.log.lines[0][1]
