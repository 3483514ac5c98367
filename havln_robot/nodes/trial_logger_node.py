"""trial_logger_node: records every trial into the SQLite trial store (and optionally an MCAP bag).

Thin ROS shell over :mod:`havln_robot.trials.store` and :mod:`havln_robot.trials.recorder`.

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

Shutdown: a running trial is closed as ``aborted`` (reason ``shutdown``), the MCAP bag finished and
the database closed. After a crash, the trial left running is finished as ``interrupted`` on the
next start (its steps are all in the store; the operator can still give a verdict).
"""

from __future__ import annotations

import errno
import json
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseArray, Twist
from nav_msgs.msg import Odometry
from rclpy.exceptions import ParameterUninitializedException
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image, Imu
from std_msgs.msg import String
from std_srvs.srv import Trigger

from havln_robot.episodes import is_success
from havln_robot.geometry import quat_to_yaw
from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.nodes._msgs import status_dict
from havln_robot.params import ConfigError
from havln_robot.trials.params import TRIAL_LOGGER_PARAMS
from havln_robot.trials.provenance import collect as collect_provenance
from havln_robot.trials.recorder import McapRecorder, RecorderError, mcap_bag_dir
from havln_robot.trials.regions import RegionError, canonical_region
from havln_robot.trials.store import Collision, DiskFull, Step, Trial, TrialError, TrialStore, default_db_path, default_mcap_dir

#: How long after a "collision" result a collision report is still credited to that step, s.
_LATE_COLLISION_S = 1.0


def _f(d: dict[str, str], key: str) -> float | None:
    """A finite float from a DiagnosticStatus value, else None."""
    try:
        v = float(d[key])
    except (KeyError, TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


class TrialLoggerNode(HavlnNode):
    """ROS shell of the trial store (see the module docstring).

    Args:
        params: validated parameters (:data:`havln_robot.trials.params.TRIAL_LOGGER_PARAMS`).
        **kwargs: passed to :class:`HavlnNode` (e.g. ``context``).

    Raises:
        ConfigError: bad region / goal parameter, or the database cannot be opened (one line).
    """

    SPEC = TRIAL_LOGGER_PARAMS

    def __init__(self, params: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(params=params, **kwargs)
        p = self.params
        self._lock = threading.RLock()
        self._meta_from_params()  # validates region / goal early
        try:
            db = Path(p["db_path"]).expanduser() if p["db_path"] else default_db_path(p["platform"])
            self.store = TrialStore(db, writer=True)  # one logger per store: a second one is refused (holder's pid)
        except TrialError as exc:
            raise ConfigError(f"{self.get_name()}: db_path: {exc}") from None
        self.db_path = db
        self.mcap_dir = Path(p["mcap_dir"]).expanduser() if p["mcap_dir"] else default_mcap_dir(db)
        self.get_logger().info(f"trial store {db}" + (f", MCAP bags in {self.mcap_dir}" if p["record_mcap"] else ""))
        closed = self.store.close_interrupted("interrupted (logger restarted)", judge=p["auto_judge"])
        if closed:
            self.get_logger().warning(f"trial(s) {closed} were left running by a previous logger; finished as interrupted")
        self._prov = collect_provenance(p["policy"], p["profile"])
        self._trial: Trial | None = None
        self._recorder: McapRecorder | None = None
        self._odom: tuple[float, float, float] | None = None
        self._imu_yaw: float | None = None
        self._gt: dict[str, str] = {}
        self._people: tuple[int, float | None, str] = (0, None, "")
        self._agent: dict[str, str] = {}
        self._collisions_since_step = 0
        # (seq, action, time s, credited) of the last recorded step whose outcome was "collision"
        self._last_collision_step: tuple[int, str, float, bool] | None = None
        self._closed = False

        rel = 10
        self.create_subscription(String, p["instruction_topic"], self._on_instruction, rel)
        self.create_subscription(String, p["action_topic"], lambda m: self._rec(p["action_topic"], m), rel)
        # collisions first: motion_node publishes an action's collisions before its result, and the
        # executor serves ready subscriptions in creation order
        self.create_subscription(DiagnosticStatus, p["collision_topic"], self._on_collision, 50)
        self.create_subscription(DiagnosticStatus, p["action_result_topic"], self._on_result, 50)
        self.create_subscription(Odometry, p["odom_topic"], self._on_odom, qos_profile_sensor_data)
        self.create_subscription(Imu, p["imu_topic"], self._on_imu, qos_profile_sensor_data)
        self.create_subscription(DiagnosticStatus, p["ground_truth_topic"], self._on_gt, rel)
        self.create_subscription(PoseArray, p["people_topic"], self._on_people, rel)
        self.create_subscription(DiagnosticStatus, p["agent_status_topic"], self._on_agent, rel)
        self.create_subscription(String, p["episode_done_topic"], self._on_done, rel)
        if p["record_mcap"]:
            self.create_subscription(Twist, p["cmd_vel_topic"], lambda m: self._rec(p["cmd_vel_topic"], m), rel)
            if p["mcap_record_camera"]:
                for key, typ in (("color_topic", Image), ("depth_topic", Image), ("color_info_topic", CameraInfo)):
                    self.create_subscription(typ, p[key], lambda m, t=p[key]: self._rec(t, m), qos_profile_sensor_data)
        pre = p["service_prefix"].rstrip("/")
        self.create_service(Trigger, f"{pre}/start", self._srv_start)
        self.create_service(Trigger, f"{pre}/end_success", lambda rq, rs: self._srv_end(rs, "success"))
        self.create_service(Trigger, f"{pre}/end_failure", lambda rq, rs: self._srv_end(rs, "failure"))
        self.create_service(Trigger, f"{pre}/abort", lambda rq, rs: self._srv_end(rs, "aborted"))
        self.create_timer(p["poll_period"], self._poll)
        self.get_logger().info(f"trial store {self.store.path} (platform {p['platform']}, mcap {'on' if p['record_mcap'] else 'off'})")

    # --- helpers ----------------------------------------------------------------------------------
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

    def _now_s(self) -> float:
        ns = self.get_clock().now().nanoseconds
        return ns * 1e-9 if ns > 0 else time.time()

    def _now_ns(self) -> int:
        ns = self.get_clock().now().nanoseconds
        return ns if ns > 0 else time.time_ns()

    def _rec(self, topic: str, msg: Any) -> None:
        with self._lock:
            if self._recorder is None:
                return
            try:
                self._recorder.write(topic, msg, log_time_ns=self._now_ns())
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    self._disk_full(f"MCAP bag {exc.filename or self._recorder.dir}")
                else:
                    self.get_logger().error(f"MCAP recording stopped: {exc}")
                    self._stop_recorder()
            except RecorderError as exc:
                self.get_logger().error(f"MCAP recording stopped: {exc}")
                self._stop_recorder()

    def _disk_full(self, where: str) -> None:
        """A write hit a full disk: one error line; the trial is closed ``aborted (disk full)`` as far
        as the disk allows, the bag finished as far as it can be. Steps already committed stay."""
        with self._lock:
            run = self._trial
            rec, self._recorder = self._recorder, None
            if rec is not None:
                try:
                    rec.close()
                except (RecorderError, OSError):
                    pass  # unfinished bag: havln-robot trial recover-bag salvages it
            self._trial = None
            if run is None:
                self.get_logger().error(f"disk full ({where}); no trial running")
                return
            try:
                self.store.set_outcome(run.id, "aborted", reason="disk full", end_reason="disk full", overwrite=True)
                closed = f"trial {run.id} closed as aborted (disk full)"
            except TrialError:
                self._unclosable = run.id
                closed = f"trial {run.id} left open (no space even to close it; shown as interrupted, closed at the next logger start)"
            self.get_logger().error(f"disk full ({where}): {closed}; every step committed before is kept -- free space on that disk")

    def _start_recorder(self, trial: Trial) -> None:
        p = self.params
        if not p["record_mcap"]:
            return
        try:
            bag = mcap_bag_dir(self.mcap_dir, trial.id)
            self._recorder = McapRecorder(
                bag,
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

    def _start_pose(self) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        if self._odom is not None:
            meta.update(start_x=self._odom[0], start_y=self._odom[1], start_yaw=self._odom[2])
        if self._gt:
            x, y, yaw = _f(self._gt, "x"), _f(self._gt, "y"), _f(self._gt, "yaw_deg")
            if x is not None and y is not None:
                meta.update(start_map_x=x, start_map_y=y, start_map_yaw=math.radians(yaw or 0.0))
            for key in ("episode_id", "scan"):
                if self._gt.get(key):
                    meta[key] = self._gt[key]
        return meta

    def _begin(self, instruction: str, supersede: str | None) -> Trial:
        """Open a trial from the parameters (or the campaign's next planned trial)."""
        meta = {**self._meta_from_params(), **self._start_pose(), **self._prov}
        if instruction:
            meta["instruction"] = instruction
        campaign = self._live("campaign")
        platform = self._live("platform")
        if campaign:
            nxt = self.store.next_planned(campaign)
            if nxt is None:
                raise TrialError(f"campaign {campaign!r} is complete")
            plan_meta = {k: v for k, v in meta.items() if k.startswith("start_") or k in ("instruction", "episode_id", "scan", *self._prov)}
            if nxt.instruction and instruction and nxt.instruction.strip() != instruction.strip():
                plan_meta["notes"] = f"planned instruction differed: {nxt.instruction}"
            trial = self.store.start_planned(nxt, supersede=supersede, platform=platform, **plan_meta)
        else:
            trial = self.store.start_trial(platform, supersede=supersede, **meta)
        self._attach(trial)
        self.get_logger().info(f"trial {trial.id} started ({trial.platform}, {trial.region}, people {trial.people_present})")
        return trial

    def _attach(self, trial: Trial) -> None:
        if self._trial is None or self._trial.id != trial.id:
            self._stop_recorder()
            if not trial.software:  # opened by the CLI: this logger's provenance
                trial = self.store.update_trial(trial.id, **self._prov)
            self._trial = trial
            self._collisions_since_step = 0
            self._start_recorder(trial)

    def _running(self) -> Trial | None:
        """The store's running trial (it may have been opened or ended by the CLI)."""
        run = self.store.running_trial()
        if run is not None and run.id == getattr(self, "_unclosable", None):
            return None  # left open by a full disk: not recorded into again
        if run is None:
            if self._trial is not None:
                self._stop_recorder()
                self._trial = None
            return None
        self._attach(run)
        self._trial = run
        return run

    # --- callbacks --------------------------------------------------------------------------------
    def _on_instruction(self, msg: String) -> None:
        text = msg.data.strip()
        with self._lock:
            if self._closed:
                return
            try:
                run = self._running()
                if run is not None and self.store.step_count(run.id) == 0 and run.instruction.strip() in ("", text):
                    if not run.instruction:
                        upd = {k: v for k, v in self._start_pose().items() if getattr(run, k, None) in (None, "")}
                        self._trial = self.store.update_trial(run.id, instruction=text, **upd)
                    self.get_logger().info(f"trial {run.id}: instruction received")
                elif self.params["auto_start"]:
                    self._begin(text, supersede="superseded by a new instruction" if run is not None else None)
                elif run is not None:
                    self.get_logger().warning(f"trial {run.id} is running; new instruction not attached (auto_start is off)")
                else:
                    self.get_logger().info("instruction received; no trial running (auto_start off: call trial/start)")
            except (TrialError, ConfigError) as exc:
                self.get_logger().error(f"trial not started: {exc}")
        self._rec(self.params["instruction_topic"], msg)

    def _on_result(self, msg: DiagnosticStatus) -> None:
        self._rec(self.params["action_result_topic"], msg)
        d = status_dict(msg)
        with self._lock:
            if self._closed:
                return
            run = self._running()
            if run is None:
                return
            x, y, yawd = _f(d, "x"), _f(d, "y"), _f(d, "yaw_deg")
            if (x is None or y is None) and self._odom is not None:
                x, y, yawd = self._odom[0], self._odom[1], math.degrees(self._odom[2])
            gt = self._gt
            gyaw = _f(gt, "yaw_deg")
            n_people, near_m, near_id = self._people
            gt_near = _f(gt, "nearest_human_m")
            if near_m is None and gt_near is not None and gt_near >= 0:  # "" (or < 0 from older sims): nobody on the floor
                near_m, near_id = gt_near, gt.get("nearest_human_id", "")
            result = dict(d)
            if self._agent.get("state"):
                result["agent_state"] = self._agent["state"]
            step = Step(
                seq=0,
                stamp=self._now_s(),
                action=d.get("action") or msg.name,
                outcome=d.get("outcome") or msg.message,
                x=x,
                y=y,
                yaw=None if yawd is None else math.radians(yawd),
                imu_yaw=self._imu_yaw,
                map_x=_f(gt, "x"),
                map_y=_f(gt, "y"),
                map_yaw=None if gyaw is None else math.radians(gyaw),
                distance_to_goal_m=_f(gt, "distance_to_goal_m"),
                collisions=self._collisions_since_step,
                nearest_person_m=near_m,
                nearest_person_id=str(near_id or ""),
                people_visible=n_people,
                result=result,
            )
            try:
                rec = self.store.add_step(run.id, step)
                credited = self._collisions_since_step > 0
                self._collisions_since_step = 0
                self._last_collision_step = (rec.seq, rec.action, time.monotonic(), credited) if rec.outcome == "collision" else None
            except DiskFull:
                self._disk_full(f"trial store {self.db_path}")
            except TrialError as exc:
                self.get_logger().warning(f"step not recorded: {exc}")
                if "is finished" in str(exc):
                    self._running()

    def _on_collision(self, msg: DiagnosticStatus) -> None:
        self._rec(self.params["collision_topic"], msg)
        d = status_dict(msg)
        if d.get("motion_state") == "blocked" or d.get("contact") == "false":
            # motion_node refused to start the action, or stopped it short of an obstacle or a
            # person's personal space: the collision was prevented, nothing touched. It stays in the
            # MCAP bag and the step's outcome; it is not a collision of the trial. (Records without
            # a "contact" key, from older bags, count.)
            return
        with self._lock:
            if self._closed or self._running() is None:
                return
            yawd = _f(d, "yaw_deg")
            # A collision report that arrives just after the result of the action it belongs to
            # (outcome "collision", no collision counted yet) is credited to that step.
            late = self._last_collision_step
            to_last = (
                late is not None
                and not late[3]
                and time.monotonic() - late[2] < _LATE_COLLISION_S
                and d.get("action", late[1]) in (late[1], "")
            )
            c = Collision(
                step_seq=late[0] if to_last else self.store.step_count(self._trial.id),
                stamp=self._now_s(),
                type=d.get("type") or msg.message,
                x=_f(d, "x"),
                y=_f(d, "y"),
                yaw=None if yawd is None else math.radians(yawd),
                map_x=_f(self._gt, "x"),
                map_y=_f(self._gt, "y"),
                distance_m=_f(d, "distance_m"),
                human_id=d.get("human_id", ""),
                detail=d,
            )
            try:
                self.store.add_collision(self._trial.id, c, count_in_step=to_last)
                if to_last:
                    self._last_collision_step = (late[0], late[1], late[2], True)
                else:
                    self._collisions_since_step += 1
            except DiskFull:
                self._disk_full(f"trial store {self.db_path}")
            except TrialError as exc:
                self.get_logger().warning(f"collision not recorded: {exc}")

    def _on_odom(self, msg: Odometry) -> None:
        q = msg.pose.pose.orientation
        with self._lock:
            self._odom = (msg.pose.pose.position.x, msg.pose.pose.position.y, quat_to_yaw(q.x, q.y, q.z, q.w))
        self._rec(self.params["odom_topic"], msg)

    def _on_imu(self, msg: Imu) -> None:
        q = msg.orientation
        if msg.orientation_covariance[0] != -1.0:  # -1 = orientation not provided (sensor_msgs/Imu)
            with self._lock:
                self._imu_yaw = quat_to_yaw(q.x, q.y, q.z, q.w)
        self._rec(self.params["imu_topic"], msg)

    def _on_gt(self, msg: DiagnosticStatus) -> None:
        with self._lock:
            self._gt = status_dict(msg)
            self._complete_from_ground_truth()
        self._rec(self.params["ground_truth_topic"], msg)

    def _complete_from_ground_truth(self) -> None:
        """A trial opened before the first ground truth arrived gets its episode, scan and start pose now."""
        t = self._trial
        if t is None or self._closed or t.episode_id or not self._gt.get("episode_id"):
            return
        meta = {
            k: v
            for k, v in self._start_pose().items()
            if k in ("episode_id", "scan") or (k.startswith("start_map_") and getattr(t, k) is None)
        }
        try:
            self._trial = self.store.update_trial(t.id, **meta)
        except TrialError as exc:
            self.get_logger().warning(f"trial {t.id}: episode from ground truth not recorded: {exc}")

    def _on_people(self, msg: PoseArray) -> None:
        dists = [(math.hypot(p.position.x, p.position.y), i) for i, p in enumerate(msg.poses)]
        near = min(dists) if dists else (None, "")
        with self._lock:
            self._people = (len(msg.poses), near[0], str(near[1]))
        self._rec(self.params["people_topic"], msg)

    def _on_agent(self, msg: DiagnosticStatus) -> None:
        with self._lock:
            self._agent = status_dict(msg)
        self._rec(self.params["agent_status_topic"], msg)

    def _on_done(self, msg: String) -> None:
        self._rec(self.params["episode_done_topic"], msg)
        try:
            done = json.loads(msg.data)
            reason = str(done.get("reason", "")) or "done"
        except (ValueError, AttributeError):
            self.get_logger().warning(f"episode_done: not a JSON object: {msg.data[:80]!r}")
            return
        with self._lock:
            if self._closed:
                return
            run = self._running()
            if run is None:
                return
            n = self.store.step_count(run.id)
            other = str(done.get("instruction") or "").strip()
            if (other and run.instruction and other != run.instruction.strip()) or (
                isinstance(done.get("steps"), int) and n == 0 and done["steps"] > 1
            ):
                return  # the end of the previous (superseded) episode, arriving after the new instruction
            try:
                self.store.record_agent_summary(run.id, done)
                if not self.params["auto_end"]:
                    self.get_logger().info(f"trial {run.id}: agent finished ({reason}); waiting for the operator's verdict")
                    return
                self.store.finish_trial(run.id, reason)
                if self.params["auto_judge"]:
                    ne = _f(self._gt, "distance_to_goal_m")
                    if ne is None:
                        steps = self.store.steps(run.id)
                        ne = next((s.distance_to_goal_m for s in reversed(steps) if s.distance_to_goal_m is not None), None)
                    if ne is None:
                        t = self.store.set_outcome(run.id, "aborted", reason=f"auto: no ground truth ({reason})")
                    else:
                        # NE is the sim's walkable distance; a goal it cannot walk to is never a success
                        unreachable = str((self._gt or {}).get("goal_unreachable", "")).lower() == "true"
                        ok = is_success(reason == "stop", ne, run.goal_radius, unreachable=unreachable)
                        t = self.store.set_outcome(
                            run.id,
                            "success" if ok else "failure",
                            reason=f"auto: {reason}, NE {ne:.2f} m{' (goal unreachable)' if unreachable else ''}",
                            ne_m=ne,
                            ne_source="ground_truth",
                        )
                    self.get_logger().info(f"trial {run.id}: {t.outcome} ({t.reason})")
                else:
                    self.get_logger().info(f"trial {run.id} finished ({reason}); waiting for the operator's verdict")
            except DiskFull:
                self._disk_full(f"trial store {self.db_path}")
                return
            except TrialError as exc:
                self.get_logger().error(f"episode_done: {exc}")
            self._stop_recorder()
            self._trial = None

    def _poll(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                self._running()
            except TrialError as exc:
                self.get_logger().error(f"trial store: {exc}")

    # --- services ---------------------------------------------------------------------------------
    def _srv_start(self, _req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        with self._lock:
            if self._closed:
                res.success, res.message = False, "trial logger is shutting down"
                return res
            try:
                run = self._running()
                if run is not None:
                    res.success, res.message = False, f"trial {run.id} is running; end it first (trial/end_success|end_failure|abort)"
                    return res
                t = self._begin("", supersede=None)
                res.success, res.message = True, f"trial {t.id} started ({t.region}, people {t.people_present})"
            except (TrialError, ConfigError) as exc:
                res.success, res.message = False, str(exc)
        return res

    def _srv_end(self, res: Trigger.Response, outcome: str) -> Trigger.Response:
        with self._lock:
            if self._closed:
                res.success, res.message = False, "trial logger is shutting down"
                return res
            try:
                cur = self.store.current_trial()
                if cur is None:
                    res.success, res.message = False, "no running or unjudged trial"
                    return res
                reason = self._live("reason") or ("operator abort" if outcome == "aborted" else "")
                t = self.store.set_outcome(cur.id, outcome, reason=reason)
                ne = f", NE {t.ne_m:.2f} m ({t.ne_source})" if t.ne_m is not None else ""
                res.success, res.message = True, f"trial {t.id}: {t.outcome}{ne}"
                self.get_logger().info(res.message)
                if self._trial is not None and self._trial.id == t.id:
                    self._stop_recorder()
                    self._trial = None
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
                run = self.store.running_trial()
                if run is not None:
                    self.store.set_outcome(run.id, "aborted", reason="shutdown", end_reason="shutdown")
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
