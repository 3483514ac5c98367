"""The safety layer (:mod:`havln_robot.motion.guard`): each input rule that refuses or stops motion,
with its reason text, on the pure guard -- and the same rules acting in the batch world
(:class:`havln_robot.sim.closed_loop.ClosedLoop`, faults injected through ``loop.faults``) with the
same text as motion_node."""

from __future__ import annotations

import math
import re

import numpy as np

from havln_robot.episodes import Episode
from havln_robot.motion.executor import Executor, MotionConfig
from havln_robot.motion.guard import OVERLOAD_PERIODS, GuardConfig, MotionGuard
from havln_robot.motion.params import MOTION_PARAMS
from havln_robot.motion.safety import Obstacles
from havln_robot.sim.closed_loop import Faults
from havln_robot.sim.humans import Crowd
from havln_robot.sim.robot import NoiseModel
from havln_robot.sim.scene import Scene
from havln_robot.sim.world import World

CLEAR = Obstacles(points=np.zeros((0, 2)))
PEOPLE = "havln/people / havln/people_tracks"
DEPTH = "camera/aligned_depth_to_color/image_raw"


def _rig(**over):
    p = {**MOTION_PARAMS.defaults(), "people_tracks_topic": "havln/people_tracks", **over}
    return Executor(MotionConfig.from_params(p)), MotionGuard(GuardConfig.from_params(p), 0.0)


class Robot:
    """A perfect base under the executor: odometry follows the command (x forward, m)."""

    def __init__(self, ex, guard):
        self.ex, self.g, self.t, self.x = ex, guard, 0.0, 0.0
        self.cmd = (0.0, 0.0)

    def start(self, action, problem=None, obs=CLEAR):
        out = self.g.start(self.ex, action, self.t, (self.x, 0.0, 0.0), 0.0, obs, problem)
        self.cmd = out.tick.cmd
        return out

    def tick(self, dt=0.02, problem=None, odom_t=None, sample=True):
        self.t += dt
        self.x += self.cmd[0] * dt
        if sample:
            self.g.sample("odom", self.t, (self.x, 0.0, 0.0), self.t, self.ex)
        out = self.g.tick(
            self.ex,
            self.t,
            (self.x, 0.0, 0.0),
            0.0,
            lambda: CLEAR,
            odom_t=self.t if odom_t is None else odom_t,
            imu_t=self.t,
            depth_problem=lambda: problem,
        )
        if out.tick is not None:
            self.cmd = out.tick.cmd
        return out


def _until_result(r, n=200, **kw):
    for _ in range(n):
        out = r.tick(**kw)
        if out.tick is not None and out.tick.results:
            return out
    raise AssertionError("no result")


# --------------------------------------------------------------------------- the pure guard
def test_people_source_refuses_at_start_and_stops_a_running_action():
    r = Robot(*_rig(require_people=True, people_timeout_s=1.0))
    out = r.start("TURN_LEFT")
    (res,) = out.tick.results
    want = f"no people received yet on {PEOPLE}: personal-space checks off (require_people)"
    assert (res.outcome, res.detail) == ("aborted", f"{want}; not started")
    assert out.errors == [f"TURN_LEFT refused: {want}"]
    r.g.heard_people(r.t)
    assert r.start("MOVE_FORWARD").tick.results == [] and r.ex.busy
    out = _until_result(r)
    (res,) = out.tick.results
    assert res.outcome == "aborted" and res.detail == (
        f"people source {PEOPLE} silent for 1.0 s (> people_timeout_s 1): personal-space checks off (require_people); robot stopped"
    )
    assert any("motion refused until it is back (require_people)" in e for e in out.errors)
    r.g.heard_people(r.t)
    assert r.tick().infos == [f"people source back ({PEOPLE}): personal-space checks on"]


def test_frozen_odometry_stops_the_action():
    ex, g = _rig(freeze_messages=5)
    r = Robot(ex, g)
    r.start("MOVE_FORWARD")
    for _ in range(20):  # moving: samples change
        assert r.tick().tick.results == []
    for _ in range(5):  # the driver wedges: one stamp, one sample
        g.sample("odom", (7, 0), (1.0, 2.0), r.t, ex)
    (res,) = r.tick(sample=False).tick.results
    assert res.outcome == "aborted" and res.detail == "odom frozen: 5 messages with the same stamp while commanded to move; robot stopped"


def test_non_finite_odometry_counts_as_silent():
    ex, g = _rig(sensor_timeout_s=0.3)
    r = Robot(ex, g)
    r.start("MOVE_FORWARD")
    r.tick()
    last = r.t
    g.stream_value("odom", "pose.position.x = nan")
    out = _until_result(r, odom_t=last)
    (res,) = out.tick.results
    assert res.outcome == "aborted"
    assert res.detail.startswith("odom silent for 0.3") and res.detail.endswith(
        "s (> sensor_timeout_s 0.3): only non-finite messages (pose.position.x = nan); robot stopped"
    )
    g.stream_value("odom", None)
    assert g.non_finite_silence(r.t, last, r.t) is None


def test_control_loop_overload_stops_and_marks_late_results():
    ex, g = _rig(sensor_timeout_s=0.3)
    r = Robot(ex, g)
    r.start("MOVE_FORWARD")
    r.tick()
    (res,) = r.tick(dt=0.5).tick.results
    assert res.outcome == "aborted" and res.detail == (
        "control loop overloaded: 0.50 s since the previous control tick (period 0.020 s; > sensor_timeout_s 0.3); robot stopped"
    )
    # a late tick below sensor_timeout_s: its results say the loop was late (the odometry looked silent)
    r.start("MOVE_FORWARD")
    r.tick()
    late = OVERLOAD_PERIODS / 50.0 + 0.08
    (res,) = r.tick(dt=late, odom_t=r.t - 0.5).tick.results
    assert res.detail.startswith("odom silent for") and res.detail.endswith(
        f"(control loop overloaded: {late:.2f} s since the previous control tick)"
    )


def test_unusable_depth_refuses_a_forward_step_and_stops_one_running():
    r = Robot(*_rig(require_depth=True))
    old = ("old", "depth image 2.00 s old since it arrived (> depth_timeout_s 0.5)")
    (res,) = r.start("MOVE_FORWARD", problem=old, obs=Obstacles(points=None)).tick.results
    assert res.outcome == "aborted" and res.detail == (
        "no fresh depth image: cannot check the path (require_depth); check the depth topic "
        f"({DEPTH}: depth image 2.00 s old since it arrived (> depth_timeout_s 0.5))"
    )
    assert r.start("TURN_LEFT", problem=old, obs=Obstacles(points=None)).tick.results == []  # turns need no depth
    _until_result(r)
    r.start("MOVE_FORWARD")
    frozen = ("frozen", "depth camera frozen: 5 frames with the same header stamp")
    (res,) = r.tick(problem=frozen).tick.results
    assert (
        res.outcome == "aborted"
        and res.detail == f"{DEPTH}: depth camera frozen: 5 frames with the same header stamp (require_depth); robot stopped"
    )


def test_a_configured_lidar_that_falls_silent_refuses_and_stops_forward_steps():
    """With ``lidar_topic`` set, the LiDAR is part of the obstacle sensing (it alone sees a glass
    door): a lost cloud refuses a forward step although the depth points are fresh, and stops one
    that is moving, naming the LiDAR topic. The tracker says when its cloud is lost."""
    from havln_robot.motion.lidar import LidarMount
    from havln_robot.motion.obstacles import ObstacleTracker, TrackerConfig
    from havln_robot.motion.safety import CameraMount

    tr = ObstacleTracker(TrackerConfig(lidar_timeout_s=0.5), CameraMount())
    assert tr.lidar_problem(0.0) is None  # no LiDAR configured: nothing to lose
    tr.lidar_mount = LidarMount()
    assert tr.lidar_problem(0.0) == ("lidar", "no LiDAR cloud received yet")
    tr.add_cloud(1.0, np.array([[2.0, 0.0, 0.0]]))
    assert tr.lidar_problem(1.4) is None
    lost = tr.lidar_problem(1.8)
    assert lost == ("lidar", "LiDAR cloud 0.80 s old (> lidar_timeout_s 0.5)")

    r = Robot(*_rig(require_depth=True, lidar_topic="utlidar/cloud"))
    out = r.start("MOVE_FORWARD", problem=lost)
    (res,) = out.tick.results
    why = "utlidar/cloud: LiDAR cloud 0.80 s old (> lidar_timeout_s 0.5) (require_depth)"
    assert res.outcome == "aborted" and res.detail == f"{why}; not started" and r.ex.busy is False
    assert out.errors == [f"MOVE_FORWARD refused: {why}"]
    assert r.start("TURN_LEFT", problem=lost).tick.results == []  # turns need no obstacle sensing
    _until_result(r)
    r.start("MOVE_FORWARD")
    r.tick()
    (res,) = r.tick(problem=lost).tick.results
    assert res.outcome == "aborted" and res.detail == f"{why}; robot stopped"


def test_nothing_to_refuse_leaves_the_executor_alone():
    r = Robot(*_rig(require_people=False))
    assert r.start("MOVE_FORWARD").tick.results == []
    out = _until_result(r)
    assert out.tick.results[0].outcome == "ok" and out.errors == []
    assert r.tick().tick is None  # idle: the caller keeps its zero


# --------------------------------------------------------------------------- the same rules in batch
def _world(**params):
    start = (2.0, 0.0, 0.0)
    ep = Episode("t1", "builtin", "go", ("go",), start, 0.0, (6.0, 4.0, 0.0), 3.0, (start, (6.0, 4.0, 0.0)), (), (), 8.0, "test")
    w = World(Scene.builtin(), ep, Crowd([]), seed=3)
    w.loop_options = {"noise": NoiseModel.none(), "params": params}
    assert w.step("MOVE_FORWARD").result.outcome == "ok"  # nominal first
    return w


def _detail(step):
    assert step.result is not None
    return step.result.outcome, step.result.detail


def test_batch_people_source_silent_stops_then_refuses():
    w = _world(require_people=True)
    w.loop.faults.people_silent_from = w.t
    outcome, detail = _detail(w.step("MOVE_FORWARD"))
    assert outcome == "aborted" and re.fullmatch(
        r"people source \S+( / \S+)? silent for 1\.\d s \(> people_timeout_s 1\): personal-space checks off \(require_people\); robot stopped",
        detail,
    ), detail
    outcome, detail = _detail(w.step("TURN_LEFT"))
    assert outcome == "aborted" and detail.endswith("(require_people); not started")


def test_batch_frozen_and_stale_depth():
    w = _world()
    w.loop.faults.depth_frozen_from = w.t
    outcome, detail = _detail(w.step("MOVE_FORWARD"))
    assert (outcome, detail) == (
        "aborted",
        f"{DEPTH}: depth camera frozen: 5 frames with the same header stamp (require_depth); robot stopped",
    )
    w = _world()
    w.loop.faults.depth_silent_from = w.t
    assert w.step("TURN_LEFT").result.outcome == "ok" and w.step("TURN_RIGHT").result.outcome == "ok"  # turns: no depth needed
    outcome, detail = _detail(w.step("MOVE_FORWARD"))
    assert outcome == "aborted" and re.fullmatch(
        r"no fresh depth image: cannot check the path \(require_depth\); check the depth topic "
        rf"\({DEPTH}: depth image \d\.\d\d s old since it arrived \(> depth_timeout_s 1\)\)",
        detail,
    ), detail


def test_batch_frozen_and_non_finite_odometry():
    w = _world()
    w.loop.faults.odom_frozen_from = w.t
    outcome, detail = _detail(w.step("MOVE_FORWARD"))
    assert (outcome, detail) == ("aborted", "odom frozen: 20 messages with the same stamp while commanded to move; robot stopped")
    w = _world()
    w.loop.faults.odom_non_finite_from = w.t
    outcome, detail = _detail(w.step("MOVE_FORWARD"))
    assert outcome == "aborted" and re.fullmatch(
        r"odom silent for 1\.\d\d s \(> sensor_timeout_s 1\): only non-finite messages \(pose\.position\.x = nan\); robot stopped", detail
    ), detail


def test_batch_control_loop_overload():
    w = _world()
    w.loop.faults = Faults(tick_gap=(w.t + 0.2, 1.5))
    outcome, detail = _detail(w.step("MOVE_FORWARD"))
    assert outcome == "aborted" and re.fullmatch(
        r"control loop overloaded: 1\.5\d s since the previous control tick \(period 0\.020 s; > sensor_timeout_s 1\); robot stopped",
        detail,
    ), detail
    assert w.loop.faults.tick_gap is None and w.step("TURN_LEFT").result.outcome == "ok"


def test_motion_node_and_batch_share_the_guard():
    import havln_robot.motion.inputs as core
    import havln_robot.nodes.motion_node as node
    import havln_robot.sim.closed_loop as batch

    assert node.MotionCore is core.MotionCore and core.MotionGuard is batch.MotionGuard is MotionGuard
    assert math.isfinite(OVERLOAD_PERIODS)
