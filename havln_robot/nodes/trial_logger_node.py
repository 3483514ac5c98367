"""trial_logger_node: records every trial into the SQLite trial store (and optionally an MCAP bag).

Thin ROS shell over :class:`havln_robot.trials.session.TrialSession` (the trial rules: steps,
contacts, late-collision crediting, superseded episodes, auto-verdict, campaigns) and
:mod:`havln_robot.trials.recorder` (MCAP, serialised by :mod:`havln_robot.ros.mcap`); messages are
decoded by :mod:`havln_robot.ros.codec`.

Subscribes: ``havln/instruction`` (starts a trial when ``auto_start``), ``havln/action_result``
(one step row per executed action), ``havln/collision`` (collision rows), ``odom``, ``imu``,
``havln/ground_truth`` (sim), ``havln/people``, ``havln/agent_status``, ``havln/episode_done``
(finishes the trial when ``auto_end``; in sim with ``auto_judge`` the outcome comes from ground
truth: success = STOP and NE < goal_radius), and -- for the MCAP bag only -- ``havln/action``,
``cmd_vel`` and the camera topics.

Services (std_srvs/Trigger; metadata from the node parameters, changeable with ``ros2 param set``):
``trial/start``, ``trial/end_success``, ``trial/end_failure``, ``trial/abort`` (reason from the
``reason`` parameter). The same store is shared with ``havln-robot trial``: a trial opened or
ended from the CLI is picked up within ``poll_period``.

One writer per store: the node opens its store as the writer (OS lock ``<db>.lock``, held for its
life); a second logger on the same store is refused with one line naming the holder's pid. The
store checkpoints its WAL at every trial close. A full disk (store or bag) is one error line and
closes the trial ``aborted`` (reason ``disk full``) as far as the disk allows.

Shutdown: a running trial is closed as ``aborted`` (reason ``shutdown``, or ``node X crashed: ...`` when the
stack stops because a callback of node X raised), the MCAP bag finished and
the database closed. After a crash, the trial left running is finished as ``interrupted`` on the
next start (its steps are all in the store; the operator can still give a verdict).
"""

from __future__ import annotations

import errno
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseArray, Twist
from nav_msgs.msg import Odometry
from rclpy.exceptions import ParameterUninitializedException
from sensor_msgs.msg import CameraInfo, Image, Imu
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger

from havln_robot.camera import Intrinsics
from havln_robot.geometry import quat_to_yaw
from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.params import ConfigError
from havln_robot.records import RecordError, Verdict
from havln_robot.ros.codec import (
    decode_agent_status,
    decode_collision,
    decode_episode_done,
    decode_ground_truth,
    decode_result,
    image_array,
    image_msg,
)
from havln_robot.ros.mcap import ros_recorder
from havln_robot.ros.qos import DropCounter, sensor_qos
from havln_robot.text import terminal_safe
from havln_robot.trials.metrics import ROBOT_RESET
from havln_robot.trials.params import TRIAL_LOGGER_PARAMS
from havln_robot.trials.privacy import blur_people
from havln_robot.trials.provenance import collect as collect_provenance
from havln_robot.trials.recorder import McapRecorder, RecorderError, mcap_bag_dir
from havln_robot.trials.regions import RegionError, canonical_region
from havln_robot.trials.session import SessionConfig, TrialMeta, TrialSession
from havln_robot.trials.store import Trial, TrialError, TrialStore, default_db_path, default_mcap_dir


class TrialLoggerNode(HavlnNode):
    """ROS shell of the trial session (see the module docstring).

    Args:
        params: validated parameters (:data:`havln_robot.trials.params.TRIAL_LOGGER_PARAMS`).
        **kwargs: passed to :class:`HavlnNode` (e.g. ``context``).

    Raises:
        ConfigError: bad region / goal parameter, or the database cannot be opened (one line).
    """

    SPEC = TRIAL_LOGGER_PARAMS
    #: The next trial's metadata and the operator's abort reason: read when used (``_live``), so
    #: ``ros2 param set`` / the console change them while the logger runs; every other parameter is
    #: read at start and a change is refused (HavlnNode).
    LIVE_PARAMS = frozenset(
        {"region", "instance", "operator", "people_present", "goal_radius", "goal", "goal_frame", "platform", "campaign", "reason"}
    )

    def __init__(self, params: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(params=params, **kwargs)
        p = self.params
        self._lock = threading.RLock()
        self._meta_from_params()  # validates region / goal early
        try:
            db = Path(p["db_path"]).expanduser() if p["db_path"] else default_db_path(p["platform"])
            self.store = TrialStore(db, writer=True, source="db_path")  # one logger per store: a second one is refused (holder's pid)
        except TrialError as exc:
            raise ConfigError(f"{self.get_name()}: db_path: {exc}") from None
        self.db_path = db
        self.mcap_dir = Path(p["mcap_dir"]).expanduser() if p["mcap_dir"] else default_mcap_dir(db)
        self.get_logger().info(f"trial store {db}" + (f", MCAP bags in {self.mcap_dir}" if p["record_mcap"] else ""))
        closed = self.store.close_interrupted("interrupted (logger restarted)", judge=p["auto_judge"])
        if closed:
            self.get_logger().warning(f"trial(s) {closed} were left running by a previous logger; finished as interrupted")
        self._recorder: McapRecorder | None = None
        self._closed = False
        self.session = TrialSession(
            self.store,
            SessionConfig(auto_start=p["auto_start"], auto_end=p["auto_end"], auto_judge=p["auto_judge"]),
            self._trial_meta,
            log=self.get_logger(),
            on_trial=self._on_trial,
            provenance=collect_provenance(p["policy"], p["profile"]),
            on_disk_full=self._drop_recorder,
        )

        rel = 10
        self.pause_pub = self.create_publisher(Bool, p["pause_topic"], rel)  # mcap_on_fault pause
        self.create_subscription(String, p["instruction_topic"], self._on_instruction, rel)
        self.create_subscription(String, p["action_topic"], lambda m: self._rec(p["action_topic"], m), rel)
        # collisions first: motion_node publishes an action's collisions before its result, and the
        # executor serves ready subscriptions in creation order
        self.create_subscription(DiagnosticStatus, p["collision_topic"], self._on_collision, 50)
        self.create_subscription(DiagnosticStatus, p["action_result_topic"], self._on_result, 50)
        # sensors: best effort (matches reliable and best-effort publishers); what is lost is counted
        self.drops = DropCounter()
        for typ, key, cb in (
            (Odometry, "odom_topic", self._on_odom),
            (Imu, "imu_topic", self._on_imu),
            (PoseArray, "people_topic", self._on_people),
        ):
            t = p[key]
            # 50 deep: 0.5 s of 100 Hz odom/imu, so a briefly busy logger does not overwrite what it records
            self.create_subscription(typ, t, self.drops.callback(t, cb), sensor_qos(50), event_callbacks=self.drops.events(t))
        self.create_subscription(DiagnosticStatus, p["ground_truth_topic"], self._on_gt, rel)
        self.create_subscription(DiagnosticStatus, p["agent_status_topic"], self._on_agent, rel)
        self.create_subscription(String, p["episode_done_topic"], self._on_done, rel)
        # reliable, volatile: only events from now on (the driver keeps its last ones for late joiners)
        self.create_subscription(String, p["robot_event_topic"], self._on_robot_event, rel)
        if p["record_mcap"]:
            self.create_subscription(Twist, p["cmd_vel_topic"], lambda m: self._rec(p["cmd_vel_topic"], m), rel)
            if p["mcap_record_camera"]:
                # Colour only as mcap_color allows (default none: no bystander's face in a bag)
                self.create_subscription(Image, p["depth_topic"], lambda m, t=p["depth_topic"]: self._rec(t, m), sensor_qos())
                self.create_subscription(CameraInfo, p["color_info_topic"], self._on_color_info, sensor_qos())
                if p["mcap_color"] != "none":
                    self.create_subscription(Image, p["color_topic"], self._on_color, sensor_qos())
        pre = p["service_prefix"].rstrip("/")
        self.create_service(Trigger, f"{pre}/start", self._srv_start)
        self.create_service(Trigger, f"{pre}/end_success", lambda rq, rs: self._srv_end(rs, Verdict.SUCCESS))
        self.create_service(Trigger, f"{pre}/end_failure", lambda rq, rs: self._srv_end(rs, Verdict.FAILURE))
        self.create_service(Trigger, f"{pre}/abort", lambda rq, rs: self._srv_end(rs, Verdict.ABORTED))
        self.create_timer(p["poll_period"], self._poll)
        self.get_logger().info(f"trial store {self.store.path} (platform {p['platform']}, mcap {'on' if p['record_mcap'] else 'off'})")

    # --- parameters -------------------------------------------------------------------------------
    def _live(self, name: str) -> Any:
        """Current value of a parameter (operators change metadata with ``ros2 param set``)."""
        try:
            v = self.get_parameter(name).value
        except ParameterUninitializedException:  # an empty list parameter that was never set
            return self.params[name]
        if v is None:
            return self.params[name]
        return list(v) if isinstance(v, (tuple, list)) or type(v).__name__ == "array" else v

    def _meta_from_params(self) -> dict[str, Any]:
        try:
            region = canonical_region(self._live("region"))
        except RegionError as exc:
            raise ConfigError(f"{self.get_name()}: {exc}") from None
        goal = self._live("goal") or []
        if len(goal) not in (0, 2):
            raise ConfigError(f"{self.get_name()}: goal: expected [] or [x, y] in metres, got {goal!r}")
        meta: dict[str, Any] = {
            "region": region,
            "instance": self._live("instance"),
            "operator": self._live("operator"),
            "people_present": int(self._live("people_present")),
            "goal_radius": float(self._live("goal_radius")),
        }
        if goal:
            meta.update(goal_x=float(goal[0]), goal_y=float(goal[1]), goal_frame=self._live("goal_frame"))
        return meta

    def _trial_meta(self) -> TrialMeta:
        return TrialMeta(self._meta_from_params(), self._live("platform"), self._live("campaign") or "")

    def _now_s(self) -> float:
        ns = self.get_clock().now().nanoseconds
        return ns * 1e-9 if ns > 0 else time.time()

    def _now_ns(self) -> int:
        ns = self.get_clock().now().nanoseconds
        return ns if ns > 0 else time.time_ns()

    # --- MCAP -------------------------------------------------------------------------------------
    def _on_color_info(self, msg: CameraInfo) -> None:
        try:
            self._color_k = Intrinsics.from_k(msg.k, msg.width, msg.height)
        except ValueError:
            self._color_k = None
        self._rec(self.params["color_info_topic"], msg)

    def _on_color(self, msg: Image) -> None:
        """Record a colour frame: raw, or with the people of the latest people_topic message blurred."""
        if self.params["mcap_color"] == "raw":
            self._rec(self.params["color_topic"], msg)
            return
        k = getattr(self, "_color_k", None)
        if k is None or msg.encoding != "rgb8" or (msg.width, msg.height) != (k.width, k.height):
            return  # no intrinsics to place the blur: the frame is not recorded
        out = blur_people(image_array(msg), list(getattr(self, "_people_xy", [])), k, self.params["camera_x_m"], self.params["camera_y_m"])
        self._rec(self.params["color_topic"], image_msg(out, "rgb8", msg.header.frame_id, msg.header.stamp))

    def _rec(self, topic: str, msg: Any) -> None:
        with self._lock:
            if self._recorder is None:
                return
            try:
                self._recorder.write(topic, msg, log_time_ns=self._now_ns())
            except OSError as exc:
                what = "disk full" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
                self._recording_fault(f"{what} ({exc.filename or self._recorder.dir})")
            except RecorderError as exc:
                self._recording_fault(str(exc))

    def _recording_fault(self, why: str) -> None:
        """The bag cannot be written: finish it as far as the disk allows (the recorder frees its reserve
        for the index), keep the trial going in the store with the fault marked, and -- with
        ``mcap_on_fault: pause`` -- stop the robot by pausing the agent."""
        rec, self._recorder = self._recorder, None
        closed = ""
        if rec is not None:
            try:
                rec.close()
            except (RecorderError, OSError) as exc:
                closed = f"; the bag could not be finished ({exc}): havln-robot trial recover-bag {rec.dir}"
        pause = self.params["mcap_on_fault"] == "pause"
        if pause:
            self.pause_pub.publish(Bool(data=True))
        self.session.recording_fault(why + closed, paused=pause)

    def _drop_recorder(self) -> None:
        """Full disk: finish the bag as far as it can be, quietly (havln-robot trial recover-bag salvages it)."""
        rec, self._recorder = self._recorder, None
        if rec is not None:
            try:
                rec.close()
            except (RecorderError, OSError):
                pass

    def _on_trial(self, trial: Trial | None) -> None:
        """The session attached a new trial (start its bag) or let go of one (finish the bag)."""
        self._stop_recorder()
        if trial is not None:
            self._start_recorder(trial)

    def _start_recorder(self, trial: Trial) -> None:
        p = self.params
        if not p["record_mcap"]:
            return
        try:
            bag = mcap_bag_dir(self.mcap_dir, trial.id)
            self._recorder = ros_recorder(
                bag,
                node=self,
                max_bytes=p["mcap_max_bytes"],
                on_limit=p["mcap_on_limit"],
                max_files=p["mcap_max_files"],
                image_stride=p["mcap_image_stride"],
                image_max_rate_hz=p["mcap_image_max_rate_hz"],
                image_format=p["mcap_image_format"],
                compression=p["mcap_compression"],
                log=lambda s: self.get_logger().warning(s),
            )
        except (RecorderError, OSError) as exc:
            self.get_logger().error(f"trial {trial.id}: MCAP recording not started: {exc}")
            return
        self.store.update_trial(trial.id, mcap_path=str(bag))

    def _stop_recorder(self) -> None:
        if self._recorder is not None:
            rec, self._recorder = self._recorder, None
            try:
                rec.close()
            except (RecorderError, OSError) as exc:
                self.get_logger().error(f"MCAP close failed: {exc}")

    # --- callbacks --------------------------------------------------------------------------------
    def _decoded(self, decode: Any, msg: Any, topic: str) -> Any:
        try:
            return decode(msg)
        except RecordError as exc:
            self.get_logger().warning(f"{self.params[topic]}: record ignored: {terminal_safe(exc)}", throttle_duration_sec=5.0)
            return None

    def _on_instruction(self, msg: String) -> None:
        with self._lock:
            if not self._closed:
                self.session.on_instruction(msg.data)
        self._rec(self.params["instruction_topic"], msg)

    def _on_result(self, msg: DiagnosticStatus) -> None:
        self._rec(self.params["action_result_topic"], msg)
        r = self._decoded(decode_result, msg, "action_result_topic")
        with self._lock:
            if r is not None and not self._closed:
                self.session.on_result(r, self._now_s())

    def _on_collision(self, msg: DiagnosticStatus) -> None:
        self._rec(self.params["collision_topic"], msg)
        c = self._decoded(decode_collision, msg, "collision_topic")
        with self._lock:
            if c is not None and not self._closed:
                self.session.on_collision(c, self._now_s())

    def _on_odom(self, msg: Odometry) -> None:
        pp, q = msg.pose.pose.position, msg.pose.pose.orientation
        # the session takes a non-finite pose as unknown (a trial opens without a start pose)
        fields = (("pose.position.x", pp.x), ("pose.position.y", pp.y), ("pose.orientation.z", q.z), ("pose.orientation.w", q.w))
        self._non_finite_field(self.params["odom_topic"], fields, "pose unknown")
        with self._lock:
            self.session.on_odom((msg.pose.pose.position.x, msg.pose.pose.position.y, quat_to_yaw(q.x, q.y, q.z, q.w)))
        self._rec(self.params["odom_topic"], msg)

    def _on_imu(self, msg: Imu) -> None:
        q = msg.orientation
        if msg.orientation_covariance[0] != -1.0:  # -1 = orientation not provided (sensor_msgs/Imu)
            with self._lock:
                self.session.on_imu_yaw(quat_to_yaw(q.x, q.y, q.z, q.w))
        self._rec(self.params["imu_topic"], msg)

    def _on_gt(self, msg: DiagnosticStatus) -> None:
        gt = self._decoded(decode_ground_truth, msg, "ground_truth_topic")
        with self._lock:
            if gt is not None and not self._closed:
                self.session.on_ground_truth(gt)
        self._rec(self.params["ground_truth_topic"], msg)

    def _on_people(self, msg: PoseArray) -> None:
        self._people_xy = [(p.position.x, p.position.y) for p in msg.poses]
        with self._lock:
            self.session.on_people([(p.position.x, p.position.y) for p in msg.poses])
        self._rec(self.params["people_topic"], msg)

    def _on_agent(self, msg: DiagnosticStatus) -> None:
        st = self._decoded(decode_agent_status, msg, "agent_status_topic")
        with self._lock:
            if st is not None:
                self.session.on_agent_status(st)
        self._rec(self.params["agent_status_topic"], msg)

    def _on_robot_event(self, msg: String) -> None:
        """A go2_driver_node event: a robot_reset marks the running trial (its next step, the trial's notes)."""
        self._rec(self.params["robot_event_topic"], msg)
        try:
            ev = json.loads(msg.data)
            kind, reason = str(ev["event"]), str(ev.get("reason", ""))
        except (ValueError, KeyError, TypeError):
            self.get_logger().warning(f"{self.params['robot_event_topic']}: not a JSON event record; ignored", throttle_duration_sec=10.0)
            return
        if kind != ROBOT_RESET:
            return
        with self._lock:
            if not self._closed:
                self.session.on_robot_reset(reason)

    def _on_done(self, msg: String) -> None:
        self._rec(self.params["episode_done_topic"], msg)
        try:
            done = decode_episode_done(msg)
        except RecordError as exc:
            self.get_logger().warning(str(exc))
            return
        with self._lock:
            if not self._closed:
                self.session.on_episode_done(done)

    def _report_drops(self) -> None:
        """While an MCAP bag records, warn when best-effort sensor subscriptions lost messages since the
        last report (counted per topic in :attr:`drops` all the time)."""
        lost = self.drops.lost
        if self._recorder is None:  # poses keep only the latest message: drops matter for the MCAP bag
            return
        if sum(lost.values()) > getattr(self, "_drops_reported", 0):
            self._drops_reported = sum(lost.values())
            counts = ", ".join(f"{t} {n}" for t, n in lost.items())
            self.get_logger().warning(f"best-effort sensor messages lost so far: {counts} (missing from the MCAP bag)")

    def _poll(self) -> None:
        self._report_drops()
        with self._lock:
            if self._closed:
                return
            try:
                self.session.sync()
            except TrialError as exc:
                self.get_logger().error(f"trial store: {terminal_safe(exc)}")

    # --- services ---------------------------------------------------------------------------------
    def _srv_start(self, _req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        with self._lock:
            if self._closed:
                res.success, res.message = False, "trial logger is shutting down"
                return res
            try:
                run = self.session.sync()
                if run is not None:
                    res.success, res.message = False, f"trial {run.id} is running; end it first (trial/end_success|end_failure|abort)"
                    return res
                t = self.session.begin("", supersede=None)
                res.success, res.message = True, f"trial {t.id} started ({t.region}, people {t.people_present})"
            except (TrialError, ConfigError) as exc:
                res.success, res.message = False, str(exc)
        return res

    def _srv_end(self, res: Trigger.Response, verdict: Verdict) -> Trigger.Response:
        with self._lock:
            if self._closed:
                res.success, res.message = False, "trial logger is shutting down"
                return res
            try:
                reason = self._live("reason") or ("operator abort" if verdict == Verdict.ABORTED else "")
                t = self.session.end(verdict, reason)
                ne = f", NE {t.ne_m:.2f} m ({t.ne_source})" if t.ne_m is not None else ""
                res.success, res.message = True, f"trial {t.id}: {t.outcome}{ne}"
                self.get_logger().info(res.message)
            except TrialError as exc:
                res.success, res.message = False, str(exc)
        return res

    # --- shutdown ---------------------------------------------------------------------------------
    def safe_stop(self) -> None:
        """Close a running trial as aborted ("shutdown"), finish the MCAP bag, close the store."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self.session.close(self.shutdown_reason)  # "shutdown", or which node crashed (bringup / run_node)
            except Exception as exc:  # must not raise
                print(f"trial_logger_node: closing the trial failed: {exc}", file=sys.stderr)
            try:
                self._stop_recorder()
            except Exception as exc:
                print(f"trial_logger_node: MCAP close failed: {exc}", file=sys.stderr)
            try:
                self.store.close()
            except Exception as exc:
                print(f"trial_logger_node: closing the store failed: {exc}", file=sys.stderr)

    def destroy_node(self) -> None:
        self.safe_stop()
        super().destroy_node()


NODE_CLASS = TrialLoggerNode


def main() -> None:
    sys.exit(run_node(TrialLoggerNode))
