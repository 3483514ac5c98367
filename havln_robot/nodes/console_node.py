"""console_node: the operator console's ROS shell -- serves the web page and bridges it to the stack.

The page, API, sessions and fan-out are pure (:mod:`havln_robot.console`); this node implements
their :class:`~havln_robot.console.web.Backend` and runs uvicorn on a thread of its own.

Subscribes (for the page): colour and depth images (throttled to ``frame_rate_hz``, JPEG),
``odom``, ``cmd_vel``, ``havln/instruction``, ``havln/agent_status``, ``havln/action_result``
(a TURN's result also adds the next colour frame to the panorama strip), ``havln/collision``,
``havln/episode_done``, ``havln/ground_truth`` (sim) and ``/diagnostics`` (driver, camera).

Publishes: ``havln/action`` STOP (Stop and E-stop: motion_node aborts the running action and holds
zero cmd_vel), ``havln/agent_pause`` (std_msgs/Bool), ``havln/instruction`` (trial start).
Calls: ``go2/estop`` (E-stop; absent in simulation, said so on the page) and
``<trial_logger>/set_parameters`` (region, people, operator of the next trial). Verdicts go to the
trial store directly, through its rules (:meth:`TrialStore.set_outcome`), as ``havln-robot trial
end`` does; trial_logger_node picks them up.

A lost browser stops nothing: the agent keeps running, and motion_node's own watchdogs keep
applying. With ``absent_pause_s`` > 0 the agent is paused when the operator in control has had no
page open that long.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from pathlib import Path
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger

from havln_robot.actions import STOP
from havln_robot.console.control import Control, check_bind, new_token, tls_problem
from havln_robot.console.frames import PanoramaStrip, depth_colormap, encode
from havln_robot.console.hub import Hub
from havln_robot.console.lookup import instruction_for
from havln_robot.console.params import CONSOLE_PARAMS
from havln_robot.console.view import LiveView
from havln_robot.console.web import create_app
from havln_robot.geometry import quat_to_yaw
from havln_robot.nodes._base import HavlnNode, run_node
from havln_robot.params import ConfigError
from havln_robot.records import RecordError
from havln_robot.ros.codec import (
    decode_agent_status,
    decode_collision,
    decode_episode_done,
    decode_ground_truth,
    decode_result,
    image_array,
    status_dict,
)
from havln_robot.text import terminal_safe
from havln_robot.trials.store import TrialError, TrialStore, default_db_path

#: Trials shown on the page (newest first).
TRIALS_SHOWN = 50

#: Trial fields the page shows.
TRIAL_FIELDS = (
    "id",
    "region",
    "people_present",
    "instruction",
    "operator",
    "finished",
    "end_reason",
    "outcome",
    "ne_m",
    "ne_source",
    "verdict_forced",
    "recording_fault",
)


def goal_in_odom(t: Any) -> tuple[float, float] | None:
    """A trial's goal in the odom frame (None when unknown or given in the map frame)."""
    if t.goal_x is None or t.goal_y is None:
        return None
    if t.goal_frame == "odom":
        return (t.goal_x, t.goal_y)
    if t.goal_frame == "start" and t.start_x is not None:
        c, s = math.cos(t.start_yaw or 0.0), math.sin(t.start_yaw or 0.0)
        return (t.start_x + c * t.goal_x - s * t.goal_y, t.start_y + s * t.goal_x + c * t.goal_y)
    return None


class ConsoleNode(HavlnNode):
    """See the module docstring.

    Attributes:
        url: where the page is served (set once uvicorn listens).
        token: the operator token.
        view, hub, control: the pure parts.

    Raises:
        ConfigError: unsafe bind settings (off loopback without token/TLS), or the port is taken.
    """

    SPEC = CONSOLE_PARAMS

    def __init__(self, params: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(params=params, **kwargs)
        p = self.params
        tls = bool(p["tls_certfile"])
        self.token = p["token"] or new_token()
        why = check_bind(p["host"], self.token, tls, p["allow_plain_remote"]) or tls_problem(p["tls_certfile"], p["tls_keyfile"])
        if why:
            raise ConfigError(f"{self.get_name()}: {why}")
        self.view = LiveView()
        self.hub = Hub()
        self.control = Control(self.token)
        self.db_path = Path(p["db_path"]).expanduser() if p["db_path"] else default_db_path(p["platform"])
        self._store: TrialStore | None = None
        self._last_frame = {"color": 0.0, "depth": 0.0}
        self._period = 1.0 / p["frame_rate_hz"]
        self._pano = PanoramaStrip()
        self._pano_pending = False
        self._lock = threading.Lock()

        self.pub_action = self.create_publisher(String, p["action_topic"], 10)
        self.pub_pause = self.create_publisher(Bool, p["pause_topic"], 10)
        self.pub_instruction = self.create_publisher(String, p["instruction_topic"], 10)
        self.estop_client = self.create_client(Trigger, p["estop_service"])
        self.param_client = self.create_client(SetParameters, f"/{p['trial_logger'].strip('/')}/set_parameters")
        sd = qos_profile_sensor_data
        self.create_subscription(Image, p["color_topic"], self._on_color, sd)
        self.create_subscription(Image, p["depth_topic"], self._on_depth, sd)
        self.create_subscription(Odometry, p["odom_topic"], self._on_odom, sd)
        self.create_subscription(Twist, p["cmd_vel_topic"], lambda m: self.view.on_cmd_vel(m.linear.x, m.angular.z), 10)
        self.create_subscription(String, p["instruction_topic"], lambda m: self.view.on_instruction(m.data), 10)
        self.create_subscription(
            DiagnosticStatus, p["agent_status_topic"], lambda m: self._decoded(decode_agent_status, m, self.view.on_agent), 10
        )
        self.create_subscription(DiagnosticStatus, p["action_result_topic"], self._on_result, 50)
        self.create_subscription(
            DiagnosticStatus, p["collision_topic"], lambda m: self._decoded(decode_collision, m, self.view.on_collision), 50
        )
        self.create_subscription(String, p["episode_done_topic"], lambda m: self._decoded(decode_episode_done, m, self.view.on_done), 10)
        self.create_subscription(
            DiagnosticStatus, p["ground_truth_topic"], lambda m: self._decoded(decode_ground_truth, m, self.view.on_ground_truth), 10
        )
        self.create_subscription(DiagnosticArray, p["diagnostics_topic"], self._on_diagnostics, 10)
        self.create_timer(1.0, self._poll)

        self.app = create_app(self, self.control, secure_cookie=tls, log=lambda s: self.get_logger().info(s))
        self.url = ""
        self._server: Any = None
        self._serve()

    # --- web server -------------------------------------------------------------------------------
    def _serve(self) -> None:
        import uvicorn

        p = self.params
        ssl = {"ssl_certfile": p["tls_certfile"], "ssl_keyfile": p["tls_keyfile"] or None} if p["tls_certfile"] else {}
        config = uvicorn.Config(
            self.app, host=p["host"], port=p["port"], log_level="warning", access_log=False, ws="websockets-sansio", lifespan="on", **ssl
        )
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # bringup / run_node own the signals
        th = threading.Thread(target=self._server.run, name="console-uvicorn", daemon=True)
        th.start()
        t_end = time.monotonic() + 10.0
        while not self._server.started and th.is_alive() and time.monotonic() < t_end:
            time.sleep(0.02)
        if not self._server.started:
            raise ConfigError(f"{self.get_name()}: cannot serve on {p['host']}:{p['port']} (port taken? set console_node.port)")
        port = self._server.servers[0].sockets[0].getsockname()[1]
        scheme = "https" if p["tls_certfile"] else "http"
        self.url = f"{scheme}://{p['host']}:{port}/"
        self.get_logger().info(f"operator console on {self.url}")
        if not p["token"]:
            # printed once on the terminal (never in a URL); the page asks for it at login
            print(f"[console] {self.url}  operator token: {self.token}", file=sys.stderr, flush=True)

    # --- inputs -----------------------------------------------------------------------------------
    def _decoded(self, decode: Any, msg: Any, sink: Any) -> None:
        try:
            sink(decode(msg))
        except RecordError as exc:
            self.get_logger().warning(f"console: record ignored: {exc}", throttle_duration_sec=5.0)

    def _due(self, kind: str) -> bool:
        now = time.monotonic()
        if now - self._last_frame[kind] < self._period or not len(self.hub):
            return False
        self._last_frame[kind] = now
        return True

    def _on_color(self, msg: Image) -> None:
        pano = self._pano_pending
        if not (self._due("color") or pano):
            return
        try:
            rgb = image_array(msg)
            if rgb.ndim == 3 and msg.encoding.lower().startswith("bgr"):
                rgb = rgb[..., ::-1]
            p = self.params
            self.hub.publish("color", encode("color", rgb, p["frame_width"], p["jpeg_quality"]))
            self.view.on_frame("color")
            if pano:
                self._pano_pending = False
                self._pano.add(rgb)
                strip = self._pano.image()
                if strip is not None:
                    self.hub.publish("panorama", encode("panorama", strip, 1600, p["jpeg_quality"]))
        except (ValueError, RecordError) as exc:
            self.get_logger().warning(f"console: colour frame skipped: {exc}", throttle_duration_sec=5.0)

    def _on_depth(self, msg: Image) -> None:
        if not self._due("depth"):
            return
        try:
            self.hub.publish(
                "depth", encode("depth", depth_colormap(image_array(msg)), self.params["frame_width"], self.params["jpeg_quality"])
            )
            self.view.on_frame("depth")
        except (ValueError, RecordError) as exc:
            self.get_logger().warning(f"console: depth frame skipped: {exc}", throttle_duration_sec=5.0)

    def _on_odom(self, msg: Odometry) -> None:
        q = msg.pose.pose.orientation
        self.view.on_odom(msg.pose.pose.position.x, msg.pose.pose.position.y, quat_to_yaw(q.x, q.y, q.z, q.w))

    def _on_result(self, msg: DiagnosticStatus) -> None:
        try:
            r = decode_result(msg)
        except RecordError:
            return
        self.view.on_result(r)
        if r.action.startswith("TURN"):
            self._pano_pending = True

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for st in msg.status:
            self.view.on_diagnostic(
                st.name, int.from_bytes(st.level, "little") if isinstance(st.level, bytes) else int(st.level), st.message, status_dict(st)
            )

    def _poll(self) -> None:
        """Campaign trials from the store; pause the agent when the holder is gone too long."""
        try:
            if self._store is None and self.db_path.exists():
                self._store = TrialStore(self.db_path, readonly=True, timeout_s=1.0, source="db_path")
            if self._store is not None:
                trials = self._store.trials()[-TRIALS_SHOWN:][::-1]
                rows = [{**{k: getattr(t, k) for k in TRIAL_FIELDS}, "steps": self._store.step_count(t.id)} for t in trials]
                running = next((r for r in rows if r.get("finished") is None), None)
                self.view.set_trials(rows, running, self._store.wal_problem() or "")
                self.view.set_goal(None if running is None else goal_in_odom(trials[rows.index(running)]))
        except TrialError as exc:
            self.get_logger().warning(f"console: trial store: {exc}", throttle_duration_sec=10.0)
        if self.control.absent_pause_due(self.params["absent_pause_s"]) and not self.view.paused:
            self.set_paused(True, "console")
            self.view.event(f"operator in control ({self.control.holder_name()}) gone {self.control.holder_absent_s():.0f} s: agent paused")

    # --- Backend ----------------------------------------------------------------------------------
    def stop(self, estop: bool, who: str) -> str:
        """STOP to motion_node and pause the agent now; E-stop also calls the driver's Damp."""
        self.pub_action.publish(String(data=STOP))
        self.pub_pause.publish(Bool(data=True))
        self.view.set_paused(True)
        what = "STOP sent (zero cmd_vel), agent paused"
        if estop:
            if self.estop_client.service_is_ready():
                self.estop_client.call_async(Trigger.Request())
                what += f"; {self.params['estop_service']} called (Damp)"
            else:
                what += f"; no {self.params['estop_service']} service (simulation?): use the robot's remote"
        line = f"{'E-STOP' if estop else 'Stop'} by {who}: {what}"
        self.view.event(line)
        self.get_logger().warning(line)
        return what

    def set_paused(self, paused: bool, who: str) -> str:
        """Publish pause/resume for agent_node."""
        self.pub_pause.publish(Bool(data=paused))
        self.view.set_paused(paused)
        line = f"agent {'paused' if paused else 'resumed'} by {who}"
        self.view.event(line)
        return line

    def _set_logger_params(self, values: dict[str, Any]) -> None:
        if not self.param_client.wait_for_service(timeout_sec=2.0):
            raise ValueError(f"{self.params['trial_logger']} is not running (no set_parameters service); start the stack's trial logger")
        req = SetParameters.Request()
        for k, v in values.items():
            pv = (
                ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=v)
                if isinstance(v, int)
                else ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=str(v))
            )
            req.parameters.append(ParameterMsg(name=k, value=pv))
        fut = self.param_client.call_async(req)
        t_end = time.monotonic() + 3.0
        while not fut.done() and time.monotonic() < t_end:
            time.sleep(0.01)
        if not fut.done():
            raise ValueError(f"{self.params['trial_logger']}: no answer to set_parameters within 3 s")
        bad = [r.reason for r in fut.result().results if not r.successful]
        if bad:
            raise ValueError(f"{self.params['trial_logger']} refused the trial metadata: {bad[0]}")

    def start_trial(self, instruction: str, episode_id: str, region: str, people: int, who: str) -> str:
        """Set the next trial's metadata on trial_logger_node, resume the agent, publish the instruction."""
        from havln_robot.trials.regions import RegionError, canonical_region

        with self._lock:
            try:
                region = canonical_region(region)
            except RegionError as exc:
                raise ValueError(str(exc)) from None
            running = self.view.running_trial
            if running is not None:
                raise ValueError(f"trial {running['id']} is running; end it first (success, failure or abort)")
            text = instruction or instruction_for(self.params["episodes_file"], episode_id)
            self._set_logger_params({"region": region, "people_present": int(people), "operator": who})
            self.pub_pause.publish(Bool(data=False))
            self.view.set_paused(False)
            self.pub_instruction.publish(String(data=text))
            line = f"trial started by {who}: {region}, people {people}: {terminal_safe(text[:80])}"
            self.view.event(line)
            self.get_logger().info(line)
            return line

    def end_trial(self, outcome: str, ne_m: float | None, force: bool, reason: str, who: str) -> str:
        """The verdict through the trial store's rules; the robot is stopped and the agent paused first."""
        with self._lock:
            self.pub_action.publish(String(data=STOP))
            self.pub_pause.publish(Bool(data=True))
            self.view.set_paused(True)
            try:
                with TrialStore(self.db_path, timeout_s=2.0, source="db_path") as st:
                    t = st.running_trial() or next((t for t in reversed(st.trials()) if t.outcome is None), None)
                    if t is None:
                        raise ValueError("no running or unjudged trial")
                    t = st.set_outcome(
                        t.id,
                        outcome,
                        reason=reason or (f"operator {outcome} ({who})" if outcome != "success" else ""),
                        ne_m=ne_m,
                        force=force,
                    )
            except TrialError as exc:
                raise ValueError(str(exc).replace("pass --force", "tick override").replace("--ne", "NE")) from None
            ne = f", NE {t.ne_m:.2f} m ({t.ne_source})" if t.ne_m is not None else ""
            line = f"trial {t.id}: {t.outcome}{ne}{' (override)' if t.verdict_forced else ''} by {who}"
            self.view.event(line)
            self.get_logger().info(line)
            self._poll()
            return line

    # --- shutdown ---------------------------------------------------------------------------------
    def safe_stop(self) -> None:
        """Stop serving (the pages reconnect when the stack is back); moves nothing."""
        if self._server is not None:
            self._server.should_exit = True

    def destroy_node(self) -> None:
        self.safe_stop()
        if self._store is not None:
            self._store.close()
        super().destroy_node()


NODE_CLASS = ConsoleNode


def main() -> None:
    sys.exit(run_node(ConsoleNode))
