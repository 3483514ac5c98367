"""go2_driver_node: ``cmd_vel`` -> Unitree Go2 ``SportClient.Move``; ``rt/sportmodestate`` -> ``odom`` + tf + ``imu``.

Thin ROS shell over :mod:`havln_robot.robot.adapter` (logic) and :mod:`havln_robot.robot.go2` (SDK).

* subscribes ``cmd_vel`` (geometry_msgs/Twist, base_link, m/s and rad/s);
* publishes ``odom`` (nav_msgs/Odometry, odom -> base_link), ``tf`` (when tf2_msgs is installed),
  ``imu`` (sensor_msgs/Imu), ``diagnostics`` (diagnostic_msgs/DiagnosticArray);
* serves ``go2/estop`` (std_srvs/Trigger -> Damp, latched) and ``go2/recover`` (std_srvs/Trigger ->
  StandUp, clears the latch), ``go2/resume`` (std_srvs/Trigger: motion allowed again after an
  odometry reset stopped the robot);
* publishes ``go2/identity`` (std_msgs/String JSON, transient local: which robot it drives) and
  ``go2/event`` (std_msgs/String JSON, transient local: estop_latched, recovered, robot_reset,
  second_robot, second_publisher, resumed).

The e-stop latch is kept on disk (:mod:`havln_robot.robot.latch`): a driver that starts and finds it,
or finds the robot damped (mode 7), stays latched and sends nothing that stands or moves the robot
until ``go2/recover``. Odometry resets (reboot, reconnect; :mod:`havln_robot.robot.resets`) stop
the robot until ``go2/resume``. cmd_vel is pinned to its first publisher (:meth:`HavlnNode.pin_source`):
a second publisher on it stops the robot.

SDK calls run on a dedicated control thread at ``command_rate_hz`` (they may block up to
``rpc_timeout_s``, which must never stall a shared executor); state arrives on an SDK reader thread.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu
from std_msgs.msg import String
from std_srvs.srv import Trigger

from havln_robot import jsonio, topics
from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.params import ConfigError
from havln_robot.robot.adapter import DriverCore, OdomFields, SdkCall, imu_fields, odom_fields
from havln_robot.robot.go2 import Go2Error, Go2Link, connect_with_retry
from havln_robot.robot.latch import EstopLatch, default_latch_path
from havln_robot.robot.params import GO2_DRIVER_PARAMS
from havln_robot.robot.resets import ResetDetector
from havln_robot.ros.codec import status_msg

try:  # tf2_msgs is not part of every install (not of the pip wheels used in tests)
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage
except ImportError:  # pragma: no cover - depends on the install
    TFMessage = None


class Go2DriverNode(HavlnNode):
    """The Go2 driver node. See the module docstring for its interface.

    Raises:
        ConfigError: bad parameter, or the Unitree SDK could not be set up on the configured
            interface / domain (message names the parameter).
    """

    SPEC = GO2_DRIVER_PARAMS

    def __init__(
        self, params: dict[str, Any] | None = None, node_name: str | None = None, link_factory: Any = Go2Link, **kwargs: Any
    ) -> None:
        super().__init__(params, node_name, **kwargs)
        p = self.params
        self.robot_id = p["robot_id"] or f"go2@{p['network_interface']}/dds{p['dds_domain_id']}"
        self.latch = EstopLatch(p["latch_file"] or default_latch_path(self.robot_id), self.robot_id)
        found = self.latch.read()
        reason = "" if found is None else str(found.get("reason", "e-stop"))
        self.core = DriverCore.from_params(p, estopped=found is not None, estop_reason=reason)
        self.resets = ResetDetector(silence_s=float(p["state_timeout_s"]))
        latched_qos = QoSProfile(
            depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL, history=HistoryPolicy.KEEP_LAST
        )
        self.identity_pub = self.create_publisher(String, p["identity_topic"], latched_qos)
        self.event_pub = self.create_publisher(String, p["event_topic"], latched_qos)
        self.identity = {
            "robot_id": self.robot_id,
            "network_interface": p["network_interface"],
            "dds_domain_id": p["dds_domain_id"],
            "node": self.get_fully_qualified_name(),
        }
        self.identity_pub.publish(String(data=jsonio.dumps(self.identity)))
        # another robot's driver on the same names (a second robot brought up without a namespace):
        # its commands would be ours too -> refuse motion, naming it
        self._others: set[str] = set()
        self.create_subscription(String, p["identity_topic"], self._on_identity, latched_qos)
        if found is not None:
            self.get_logger().error(
                f"e-stop latch found ({reason}; {self.latch.path}): the robot stays damped, nothing stands or moves it "
                f"until {p['recover_service']} is called"
            )
            self._event("estop_latched", f"latch found at start: {reason}")
        self._core_lock = threading.Lock()
        self._last_pub = -math.inf
        self._min_pub_dt = 1.0 / float(p["max_publish_rate_hz"])

        self.odom_pub = self.create_publisher(Odometry, p["odom_topic"], 10)
        self.imu_pub = self.create_publisher(Imu, p["imu_topic"], 10)
        self.diag_pub = self.create_publisher(DiagnosticArray, p["diagnostics_topic"], 10)
        self.tf_pub = self.create_publisher(TFMessage, topics.TF, 10) if (TFMessage is not None and p["publish_tf"]) else None
        if p["publish_tf"] and TFMessage is None:
            self.get_logger().info("tf2_msgs is not installed: odom -> base_link goes on the odom topic only")

        try:
            self.link = connect_with_retry(
                lambda: link_factory(
                    p["dds_domain_id"],
                    p["network_interface"],
                    self._on_state,
                    state_topic=p["sport_state_topic"],
                    rpc_timeout_s=p["rpc_timeout_s"],
                ),
                p["connect_attempts"],
                p["connect_backoff_initial_s"],
                p["connect_backoff_max_s"],
                self.get_logger().warning,
            )
        except Go2Error as exc:
            name = self.get_name()
            self.destroy_node()
            raise ConfigError(f"{name}: {exc}") from None

        self.pin_source(p["cmd_vel_topic"], on_second=self._second_commander)
        self.create_subscription(Twist, p["cmd_vel_topic"], self._on_cmd_vel, 10)
        self.create_service(Trigger, p["resume_service"], self._on_resume)
        # own callback group: under a multi-threaded executor the e-stop never waits behind recover
        self.create_service(Trigger, p["estop_service"], self._on_estop, callback_group=MutuallyExclusiveCallbackGroup())
        self.estop_latencies_ms: list[float] = []  # service request received -> Damp handed to the SDK
        self.create_service(Trigger, p["recover_service"], self._on_recover)
        self.create_timer(1.0 / float(p["status_rate_hz"]), self._publish_status)

        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._control_loop, name="go2_control", daemon=True)
        self._thread.start()
        self.get_logger().info(
            f"Go2 driver on interface {p['network_interface']!r}, DDS domain {p['dds_domain_id']}; "
            f"Move at {p['command_rate_hz']:g} Hz, cmd_vel watchdog {p['cmd_timeout_s']:g} s, state watchdog {p['state_timeout_s']:g} s"
        )

    # --- inputs -------------------------------------------------------------------------------------
    def _on_cmd_vel(self, msg: Twist) -> None:
        with self._core_lock:
            before = self.core.cmd
            why = self.core.on_cmd_vel(time.monotonic(), msg.linear.x, msg.linear.y, msg.angular.z)
            changed = why is None and self.core.cmd != before
        if changed:  # a new command goes out now, not at the next tick
            self._wake.set()
        if why is not None:
            self.get_logger().warning(f"cmd_vel refused: {why}", throttle_duration_sec=1.0)

    def _on_state(self, state: Any) -> None:
        """SDK reader thread: feed the watchdog, publish odom / tf / imu (rate-limited)."""
        now = time.monotonic()
        reset = self._reset_reason(now, state)
        with self._core_lock:
            self.core.on_state(now, getattr(state, "mode", None))
            if reset is not None:
                self.core.reset_detected(reset)
        if reset is not None:
            self._wake.set()
            self.get_logger().error(f"{reset}: robot stopped; motion refused until {self.params['resume_service']}")
            self._event("robot_reset", reset)
        if now - self._last_pub < self._min_pub_dt:
            return
        self._last_pub = now
        try:
            self._publish_state(state)
        except Exception as exc:  # a malformed sample must not kill the SDK reader thread
            self.get_logger().error(f"sportmodestate conversion failed: {exc}", throttle_duration_sec=5.0)

    def _reset_reason(self, now: float, state: Any) -> str | None:
        """The odometry-reset detector fed with one SportModeState_ (None when the sample cannot be read)."""
        try:
            pos = state.position
            stamp = getattr(state, "stamp", None)
            st = None if stamp is None else float(stamp.sec) + 1e-9 * float(stamp.nanosec)
            return self.resets.update(now, float(pos[0]), float(pos[1]), st)
        except (AttributeError, IndexError, TypeError, ValueError):
            return None

    def _publish_state(self, state: Any) -> None:
        """Publish odom (+ tf) and imu of one SportModeState_ sample. A stream whose values are not all
        finite is not published for this sample (a warning once per field): motion control would
        integrate it; the receivers' sensor timeouts judge a stream that stays non-finite."""
        p = self.params
        stamp = self.get_clock().now().to_msg()
        od = odom_fields(state, p["state_velocity_frame"])
        im = imu_fields(state)
        if od.problem:
            field = od.problem.split(" ")[0]
            self._warn_once(f"odom-{field}", f"{p['odom_topic']}: sportmodestate {od.problem} is not finite; odometry sample not published")
        else:
            self._publish_odom(od, stamp)
        if im.problem:
            field = im.problem.split(" ")[0]
            self._warn_once(f"imu-{field}", f"{p['imu_topic']}: sportmodestate {im.problem} is not finite; imu sample not published")
            return
        m = Imu()
        m.header.stamp, m.header.frame_id = stamp, p["imu_frame"]
        m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = im.orientation
        if not im.valid_orientation:
            m.orientation_covariance[0] = -1.0  # REP 145 / sensor_msgs/Imu: orientation not available
        m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = im.angular_velocity
        m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = im.linear_acceleration
        self.imu_pub.publish(m)

    def _publish_odom(self, od: OdomFields, stamp: Any) -> None:
        """Odometry (and tf) of one finite SportModeState_ sample."""
        p = self.params
        o = Odometry()
        o.header.stamp, o.header.frame_id, o.child_frame_id = stamp, p["odom_frame"], p["base_frame"]
        pos, q = o.pose.pose.position, o.pose.pose.orientation
        pos.x, pos.y, pos.z = od.position
        q.x, q.y, q.z, q.w = od.orientation
        lin, ang = o.twist.twist.linear, o.twist.twist.angular
        lin.x, lin.y, lin.z = od.linear
        ang.x, ang.y, ang.z = od.angular
        self.odom_pub.publish(o)
        if self.tf_pub is not None:
            tr = TransformStamped()
            tr.header.stamp, tr.header.frame_id, tr.child_frame_id = stamp, p["odom_frame"], p["base_frame"]
            tr.transform.translation.x, tr.transform.translation.y, tr.transform.translation.z = od.position
            r = tr.transform.rotation
            r.x, r.y, r.z, r.w = od.orientation
            self.tf_pub.publish(TFMessage(transforms=[tr]))

    # --- SDK calls ------------------------------------------------------------------------------------
    def _issue(self, call: SdkCall) -> int:
        code = self.link.call(call)
        with self._core_lock:
            self.core.on_result(call, code, time.monotonic())
        if code != 0:
            self.get_logger().warning(f"SportClient.{call.name} failed with code {code}", throttle_duration_sec=2.0)
        return code

    def _control_loop(self) -> None:
        period = 1.0 / float(self.params["command_rate_hz"])
        nxt = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            with self._core_lock:
                calls = self.core.tick(now)
                fault = self.core.take_new_fault()
                gave_up = self.core.take_gave_up()
                latch = self.core.take_new_latch()
                deadline = self.core.deadline()
            if latch is not None:
                self._record_latch(latch)
                self.get_logger().error(
                    f"E-STOP latched: {latch}; nothing stands or moves the robot until {self.params['recover_service']}"
                )
            if fault is not None:
                self.get_logger().error(f"FAULT: {fault}; StopMove sent, motion refused until state returns")
                self._publish_status()
            for line in gave_up:
                self.get_logger().error(line)
            for call in calls:
                if self._stop.is_set() or self._issue(call) != 0:
                    break
            if time.monotonic() >= nxt - 1e-4:  # a scheduled tick (not one woken for the deadman)
                nxt += period
            delay = nxt - time.monotonic()
            if delay < -period:  # fell behind (a blocking call): do not burst to catch up
                nxt = time.monotonic()
                delay = 0.0
            if deadline is not None:  # the deadman fires at its deadline, not up to a period later
                delay = min(delay, deadline - time.monotonic() + 1e-4)
            if self._wake.wait(max(0.0, delay)):  # woken early by a changed command: restart the period
                self._wake.clear()
                nxt = time.monotonic()

    def _on_estop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        t0 = time.monotonic()
        with self._core_lock:
            call = self.core.estop()
        code = self._issue(call)
        self._record_latch("go2/estop (Damp)")
        written_t = getattr(self.link, "damp_written_t", None)
        written = written_t() if callable(written_t) else None
        ms = ((written if written is not None and written >= t0 else time.monotonic()) - t0) * 1e3
        self.estop_latencies_ms.append(ms)
        response.success = code == 0
        response.message = (
            f"Damp sent in {ms:.1f} ms; motion refused until {self.params['recover_service']}"
            if code == 0
            else f"Damp sent in {ms:.1f} ms but failed (code {code}); retrying"
        )
        self.get_logger().error(f"E-STOP: {response.message}")
        self._publish_status()
        return response

    def _on_recover(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        try:
            self.latch.clear()
        except OSError as exc:
            response.success = False
            response.message = f"e-stop latch file {self.latch.path} could not be removed ({exc}); still latched"
            return response
        with self._core_lock:
            self.core.recover()  # StandUp goes out from the control thread (never blocks this executor)
        self._wake.set()
        self._event("recovered", "go2/recover: latch cleared")
        response.success = True
        response.message = "e-stop latch cleared; StandUp queued, BalanceStand precedes the next move"
        self.get_logger().info(f"recover: {response.message}")
        return response

    def _on_resume(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self._core_lock:
            was = self.core.resume()
        response.success = was
        response.message = "motion allowed again after the odometry reset" if was else "nothing to resume (no odometry reset pending)"
        if was:
            self._event("resumed", "go2/resume")
            self.get_logger().info(f"resume: {response.message}")
        return response

    def _record_latch(self, reason: str) -> None:
        """Keep the e-stop latch on disk (a failure to write is an ERROR line; the in-memory latch holds)."""
        try:
            self.latch.set(reason)
        except OSError as exc:
            self.get_logger().error(
                f"e-stop latch file {self.latch.path} could not be written ({exc}): the latch will not survive a restart"
            )
        self._event("estop_latched", reason)

    def _event(self, event: str, reason: str) -> None:
        """Publish one ``go2/event`` JSON record."""
        self.event_pub.publish(
            String(data=jsonio.dumps({"event": event, "reason": reason, "robot_id": self.robot_id, "t_wall": time.time()}))
        )

    def _on_identity(self, msg: String) -> None:
        try:
            other = json.loads(msg.data)
            rid = str(other["robot_id"])
        except (ValueError, KeyError, TypeError):
            return
        if rid == self.robot_id or rid in self._others:
            return
        self._others.add(rid)
        line = (
            f"another robot ({rid}, driver {other.get('node', '?')}) on {self.resolve_topic_name(self.params['identity_topic'])}: "
            "both robots would obey the same cmd_vel; give each robot its own namespace (launch/two_go2.launch.py)"
        )
        self.get_logger().error(f"{line}; robot stopped, motion refused")
        with self._core_lock:
            self.core.reset_detected(line)
        self._wake.set()
        self._event("second_robot", line)

    def _second_commander(self, topic: str, first: str, second: str) -> None:
        """A second publisher appeared on cmd_vel (another robot's stack without a namespace): stop."""
        with self._core_lock:
            self.core.reset_detected(f"second publisher {second} on {topic} (bound to {first})")
        self._wake.set()
        self._event("second_publisher", f"second publisher {second} on {topic}")

    def _publish_status(self) -> None:
        with self._core_lock:
            level, message, values = self.core.status(time.monotonic())
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [status_msg(f"{self.get_name()}: go2", message, values, level, hardware_id="unitree_go2")]
        self.diag_pub.publish(arr)

    # --- shutdown -------------------------------------------------------------------------------------
    def safe_stop(self) -> None:
        """Stop the control thread, then StopMove (never raises)."""
        try:
            self._stop.set()
            if getattr(self, "_wake", None) is not None:
                self._wake.set()
            if getattr(self, "_thread", None) is not None:
                self._thread.join(timeout=2.0 * float(self.params["rpc_timeout_s"]) + 0.5)
            if getattr(self, "link", None) is not None:
                with self._core_lock:
                    call = self.core.shutdown()
                self._issue(call)
        except Exception as exc:  # must not raise
            print(f"go2_driver_node: safe_stop: {exc}", file=sys.stderr)

    def destroy_node(self) -> None:
        """Stop threads and the state stream, then destroy the ROS node."""
        stop = getattr(self, "_stop", None)
        if stop is not None and not stop.is_set():
            self.safe_stop()
        if getattr(self, "link", None) is not None:
            self.link.close()
        super().destroy_node()


NODE_CLASS = Go2DriverNode


def main() -> None:
    """Console entry point (``ros2 run havln_robot go2_driver_node``)."""
    sys.exit(run_node(Go2DriverNode))
