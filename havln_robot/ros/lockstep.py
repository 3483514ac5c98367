"""ROS side of lockstep sim time (protocol: :mod:`havln_robot.sim.lockstep`).

``havln/sim_sync`` carries ``diagnostic_msgs/DiagnosticStatus``: ``name`` = kind (``sim`` = the
simulator is here, ``step``, ``ack``, ``bye``), ``hardware_id`` = the sender's node name,
``values`` = the fields. :class:`LockstepLink` is a participant's end: it tracks the steps sim_node
announced and the other participants' acks, publishes this node's acks and repeats the last one
every :data:`havln_robot.sim.lockstep.HEARTBEAT_S` from its own thread (a liveness signal that
does not depend on the node's executor or on sim time). A node is in lockstep only once it heard
sim_node on the topic: on the Go2 or Gazebo nobody announces steps and nothing changes.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from rclpy.qos import QoSProfile, ReliabilityPolicy

from havln_robot import topics
from havln_robot.sim.lockstep import HEARTBEAT_S, INCOMPLETE_STEP_WAIT_S, PEER_TIMEOUT_S, Ack, ActionClaims, StepInbox, stamp_ns

#: Steps remembered by a participant (their streams), oldest dropped first.
_STEPS_KEPT = 256


def sync_qos() -> QoSProfile:
    """Reliable, keep last 100: no step or ack may be lost."""
    return QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


def encode_step(sender: str, t_ns: int, streams: tuple[str, ...]) -> DiagnosticStatus:
    """sim_node's step message: the streams it published for step ``t_ns``."""
    return DiagnosticStatus(
        name="step", hardware_id=sender, values=[KeyValue(key="t_ns", value=str(t_ns)), KeyValue(key="streams", value=",".join(streams))]
    )


def encode_sim(sender: str, t_ns: int) -> DiagnosticStatus:
    """sim_node's presence message (sent while the clock stands still)."""
    return DiagnosticStatus(name="sim", hardware_id=sender, values=[KeyValue(key="t_ns", value=str(t_ns))])


def encode_ack(a: Ack) -> DiagnosticStatus:
    """A participant's ack."""
    v = {
        "role": a.role,
        "t_ns": a.t_ns,
        "wants": int(a.wants),
        "actions": a.actions,
        "results": a.results,
        "cmd_seq": a.cmd_seq,
        "cmd": f"{a.cmd[0]!r},{a.cmd[1]!r}",
        "people_ns": a.people_ns,
    }
    return DiagnosticStatus(name="ack", hardware_id=a.sender, values=[KeyValue(key=k, value=str(x)) for k, x in v.items()])


def encode_bye(sender: str) -> DiagnosticStatus:
    return DiagnosticStatus(name="bye", hardware_id=sender)


def decode(msg: DiagnosticStatus) -> tuple[str, str, dict[str, str]]:
    """``(kind, sender, values)`` of a sync message."""
    return msg.name, msg.hardware_id, {kv.key: kv.value for kv in msg.values}


def decode_ack(sender: str, v: dict[str, str], wall: float) -> Ack:
    """The :class:`Ack` of an ack message's values.

    Raises:
        ValueError: a malformed field.
    """
    c0, c1 = (float(x) for x in v.get("cmd", "0.0,0.0").split(","))
    return Ack(
        sender=sender,
        role=v.get("role", ""),
        t_ns=int(v.get("t_ns", "-1")),
        wants=v.get("wants", "0") == "1",
        actions=int(v.get("actions", "0")),
        results=int(v.get("results", "0")),
        cmd_seq=int(v.get("cmd_seq", "0")),
        cmd=(c0, c1),
        people_ns=int(v.get("people_ns", "-1")),
        wall=wall,
    )


class LockstepLink:
    """A participant's end of ``havln/sim_sync``.

    Args:
        node: the rclpy node (publisher and subscription are created on it).
        role: ``motion``, ``people`` or ``agent``.
        on_event: called (from the node's executor) after every step or ack received.

    Attributes:
        active: sim_node was heard (this node then runs in lockstep).
        steps: announced steps, ``t_ns -> streams`` (ordered by time).
        others: the other participants' last acks, by sender.
    """

    def __init__(self, node: Any, role: str, on_event: Callable[[], None] | None = None) -> None:
        self.node = node
        self.role = role
        self.name = node.get_fully_qualified_name()
        self.on_event = on_event
        self.lock = threading.RLock()
        self.active = False
        self.steps: OrderedDict[int, frozenset[str]] = OrderedDict()
        self.others: dict[str, Ack] = {}
        self.last: Ack | None = None
        self.pub = node.create_publisher(DiagnosticStatus, topics.SIM_SYNC, sync_qos())
        node.create_subscription(DiagnosticStatus, topics.SIM_SYNC, self._on_msg, sync_qos())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lockstep-{role}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            with self.lock:
                last = self.last if self.active else None
            if last is not None:
                try:
                    self.pub.publish(encode_ack(last))
                except Exception:  # noqa: BLE001 - context shutting down
                    return

    def _on_msg(self, msg: DiagnosticStatus) -> None:
        kind, sender, v = decode(msg)
        if sender == self.name:
            return
        with self.lock:
            if kind in ("step", "sim"):
                if not self.active:
                    self.active = True
                    if self.last is None:
                        self.last = Ack(self.name, self.role)
                    self.pub.publish(encode_ack(self.last))  # hello: the simulator counts this node from now on
                if kind == "sim" and not self.steps and int(v.get("t_ns", "-1")) >= 0:
                    # joined while the clock stands at a step it never saw: that step, without messages
                    self.steps[int(v["t_ns"])] = frozenset()
                if kind == "step":
                    self.steps[int(v["t_ns"])] = frozenset(s for s in v.get("streams", "").split(",") if s)
                    while len(self.steps) > _STEPS_KEPT:
                        self.steps.popitem(last=False)
            elif kind == "ack":
                self.others[sender] = decode_ack(sender, v, time.monotonic())
            elif kind == "bye":
                self.others.pop(sender, None)
        if self.on_event is not None:
            self.on_event()

    def next_step(self, after_ns: int) -> tuple[int, frozenset[str]] | None:
        """The first announced step after ``after_ns`` (its stamp and streams), None if none yet."""
        with self.lock:
            for t, streams in self.steps.items():
                if t > after_ns:
                    return t, streams
        return None

    def peer(self, role: str) -> Ack | None:
        """The last ack of a live participant of ``role`` (None when there is none)."""
        now = time.monotonic()
        with self.lock:
            got = [a for a in self.others.values() if a.role == role and now - a.wall < PEER_TIMEOUT_S]
        return max(got, key=lambda a: a.t_ns) if got else None

    def ack(self, **fields: Any) -> None:
        """Publish this node's ack (fields of :class:`Ack`; the rest kept from the last one)."""
        with self.lock:
            base = self.last or Ack(self.name, self.role)
            a = Ack(**{**base.__dict__, **fields, "sender": self.name, "role": self.role})
            if a == self.last:
                return
            self.last = a
        self.pub.publish(encode_ack(a))

    def close(self) -> None:
        """Stop the heartbeat and say goodbye (the simulator stops waiting for this node). Never raises."""
        self._stop.set()
        try:
            if self.active:
                self.pub.publish(encode_bye(self.name))
        except Exception:  # noqa: BLE001 - context already shut down
            pass


class SteppedInputs:
    """A participant that handles its input messages step by step (motion_node, people_node).

    While the simulator announces steps, every input message is held (:meth:`hold`) until its step
    is complete (:class:`~havln_robot.sim.lockstep.StepInbox`), then the step's messages are handed
    to their handlers in a fixed order with the step's time as the node's time (:attr:`now`), and
    ``on_step(t_ns)`` runs (motion_node's control tick). ``before()`` / ``after()`` run around every
    event (motion_node: the agent's claims; the node's ack). Without the simulator (Go2, Gazebo) :meth:`hold` keeps nothing and the node
    handles its messages as they come.

    Args:
        node: the rclpy node.
        role: its lockstep role.
        lock: the node's lock (held while steps are handled).
        handlers: ``(kind, handler)`` in the order a step's messages are handled.
        needs: ``needs(t_ns, streams)`` -> the kinds step ``t_ns`` waits for.
        on_step: called for each step after its messages (None: nothing).
        before: called (lock held) at every event before its steps are handled (None: nothing).
        after: called (lock held) after the steps of an event were handled (None: nothing).
    """

    def __init__(self, node: Any, role: str, lock: Any, handlers, needs, on_step=None, before=None, after=None) -> None:
        self.node = node
        self.lock = lock
        self.handlers = dict(handlers)
        self.needs = needs
        self.on_step = on_step
        self.before = before
        self.after = after
        self.inbox = StepInbox()
        self.now: float | None = None  # the step being handled, s (the node's time in lockstep)
        self.replaying = False
        self.link = LockstepLink(node, role, on_event=self.event)

    @property
    def active(self) -> bool:
        return self.link.active

    def hold(self, kind: str, stamp: Any, msg: Any) -> bool:
        """Lockstep: keep ``msg`` for the step of its stamp (True: the caller returns); False outside
        lockstep and while a step is handled (the caller handles the message)."""
        if not self.link.active or self.replaying:
            return False
        t_ns = stamp if isinstance(stamp, int) else stamp_ns(stamp.sec, stamp.nanosec)
        with self.lock:
            kept = self.inbox.hold(kind, t_ns, msg)
        if kept:
            self.event()
        return True

    def at(self, t_ns: int, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` as at step ``t_ns`` (its time the node's, its messages handled directly)."""
        self.now = max(t_ns, 0) * 1e-9
        self.replaying = True
        try:
            return fn(*args)
        finally:
            self.replaying = False

    def _step(self, t_ns: int) -> None:
        for kind, msg in self.inbox.take(t_ns, tuple(self.handlers)):
            self.handlers[kind](msg)
        if self.on_step is not None:
            self.on_step(t_ns)

    def event(self) -> None:
        """Handle every step whose messages are all in, then ``after()``."""
        if not self.link.active:
            return
        with self.lock:
            if self.before is not None:
                self.before()
            for t_ns, missing in self.inbox.ready(self.link.next_step, self.needs, time.monotonic):
                if missing:
                    self.node.get_logger().warning(
                        f"lockstep: step {t_ns * 1e-9:.3f} s handled without {', '.join(missing)} (not received within "
                        f"{INCOMPLETE_STEP_WAIT_S:g} s)",
                        throttle_duration_sec=5.0,
                    )
                self.at(t_ns, self._step, t_ns)
            if self.after is not None:
                self.after()

    def close(self) -> None:
        self.link.close()


class MotionSteps(SteppedInputs):
    """motion_node's lockstep participant (role ``motion``): its input messages handled step by step,
    the control tick on the first step of every control period, an agent's action started at the step
    the agent sent it at, and each event acked with the command, the actions started and the results.

    Args:
        node: motion_node. lock: its lock. handlers: ``(kind, handler)`` of its input messages, in order.
        control_rate_hz: the control tick rate, Hz.
        on_tick: runs one control tick. on_action: starts an action (``on_action(msg)``, a std_msgs/String).
        busy: True while an action runs. color: a step waits for the colour image (in-process person
            detector). tracks: a step waits for people_node's tracks too.
    """

    def __init__(
        self,
        node: Any,
        lock: Any,
        handlers,
        control_rate_hz: float,
        on_tick: Callable[[], None],
        on_action: Callable[[Any], None],
        busy: Callable[[], bool],
        color: bool,
        tracks: bool,
    ) -> None:
        super().__init__(node, "motion", lock, handlers, self._needs, self._tick, self._claim, self._ack)
        self._period = int(round(1e9 / control_rate_hz))
        self._ticked = -1  # control periods ticked (t // period of the last tick)
        self._agent: Ack | None = None
        self._on_tick, self._on_action, self._busy = on_tick, on_action, busy
        self._color, self._tracks = color, tracks
        self.claims = ActionClaims()
        self.results = 0  # highest result seq published (results are counted by their seq)
        self.cmd_seq = 0
        self.cmd: tuple[float, float] = (0.0, 0.0)

    def sent(self, cmd: tuple[float, float]) -> None:
        """A cmd_vel was published."""
        self.cmd_seq += 1
        self.cmd = (float(cmd[0]), float(cmd[1]))

    def action(self, msg: Any) -> bool:
        """An action message arrived: in lockstep it is claimed for its step (True: the caller returns)."""
        if not self.active or self.replaying:
            return False
        with self.lock:
            self.claims.arrived(msg, time.monotonic())
        self.event()
        return True

    def timer(self) -> bool:
        """The node's control timer fired: True when the node ticks itself (not in lockstep); in
        lockstep, waits bounded by wall time are re-checked."""
        if not self.active:
            return True
        if self.claims.queue or self.inbox.waiting:
            self.event()
        return False

    def _needs(self, t_ns: int, streams: frozenset[str]) -> list[str]:
        """The message kinds step ``t_ns`` waits for (people_node's output for it too)."""
        need = [k for k in ("odom", "imu") if k in streams]
        if "camera" in streams:
            need += ["depth", "info"] + (["color"] if self._color else [])
        if "people" in streams:
            need.append("people")
        people = self.link.peer("people")
        if people is not None:
            if people.t_ns < t_ns:
                need.append("people_node")
            elif people.people_ns == t_ns:
                need += ["people"] + (["tracks"] if self._tracks else [])
        return need

    def _claim(self) -> None:
        self._agent = self.link.peer("agent")
        if self._agent is not None:
            self.claims.agent_at(self._agent.actions, self._agent.t_ns)

    def _tick(self, t_ns: int) -> None:
        if t_ns // self._period > self._ticked:  # the first step at or after each control period
            self._ticked = t_ns // self._period
            self._on_tick()

    def _ack(self) -> None:
        """Start the actions due (an agent's at the step it was sent at), then ack with the command."""
        done = self.inbox.done
        while (due := self.claims.due(done, self._agent is not None, time.monotonic())) is not None:
            self.at(due[1], self._on_action, due[0])
        self.link.ack(t_ns=done, wants=self._busy(), actions=self.claims.started, results=self.results, cmd_seq=self.cmd_seq, cmd=self.cmd)


class LockstepAgent:
    """The agent participant of a driver that looks at nothing: a replay of an action file.

    It sends the next action only once the previous one's result came, and acks every step it heard
    of (it needs none of their messages): wanting time while an action runs or a pause lasts, not
    between actions, so the clock stands still while the driver decides, as in batch. The result
    counters in its acks hold the clock while an action or a result is in flight (protocol:
    :mod:`havln_robot.sim.lockstep`). Driven from one thread that spins the node (``spin``).

    Args:
        node: the driver's rclpy node.
        motion: its :class:`~havln_robot.ros.motion_client.MotionClient` (on ``node``).
        spin: spins ``node``'s executor once (``spin(timeout_s)``).
    """

    def __init__(self, node: Any, motion: Any, spin: Callable[[float], None]) -> None:
        self.link = LockstepLink(node, "agent")
        self.motion = motion
        self.spin = spin
        self.hold = -1  # the step the clock stands at for the driver, ns
        self.seen = 0  # highest result seq the driver looked at

    @property
    def active(self) -> bool:
        return self.link.active

    def newest(self) -> int:
        """The newest step announced, ns (-1: none yet)."""
        with self.link.lock:
            return next(reversed(self.link.steps), -1) if self.link.steps else -1

    def ack(self, wants: bool) -> None:
        """Ack every step heard of (``wants``: the driver needs sim time to pass)."""
        self.seen = max(self.seen, self.motion.result_since(1 << 62, "")[0])
        self.link.ack(t_ns=self.newest(), wants=wants, actions=self.motion.published, results=self.seen)

    def ready(self) -> bool:
        """The clock has started and motion_node acked its first step."""
        m = self.link.peer("motion")
        t = self.newest()
        if t >= 0:
            self.ack(False)
        return t >= 0 and m is not None and m.t_ns >= t

    def send(self, action: str, timeout_s: float, retries: int, retry_wait_s: float, cancelled: Callable[[], bool]) -> Any:
        """:meth:`MotionClient.send` in lockstep: ``timeout_s`` counts sim time (and as much wall time
        plus a minute: the simulator gone); a resend after ``retry_wait_s`` of sim time.

        Raises:
            MotionTimeout, MotionCancelled: as :meth:`MotionClient.send`.
        """
        from havln_robot.ros.motion_client import MotionCancelled, MotionTimeout

        for attempt in range(max(0, retries) + 1):
            after = self.motion.received
            self.motion.publish(action)
            start = max(self.hold, 0)
            wall_end = time.monotonic() + timeout_s + 60.0
            while True:
                _, r = self.motion.result_since(after, action)
                if r is not None:
                    self._held(r.seq)
                    break
                if cancelled():
                    raise MotionCancelled("cancelled")
                if (self.newest() - start) * 1e-9 > timeout_s or time.monotonic() > wall_end:
                    raise MotionTimeout(f"no {self.motion.result_topic} for {action} within {timeout_s:g} s (is motion_node running?)")
                self.ack(True)
                self.spin(0.02)
            if r.outcome.value != "rejected" or attempt == retries:
                return r
            self.pause(retry_wait_s, cancelled)
        raise AssertionError("unreachable")

    def _held(self, result_seq: int) -> None:
        """A result came: the clock stands at the step motion_node published it at (its ack counting
        it); ack that step without wanting time."""
        end = time.monotonic() + INCOMPLETE_STEP_WAIT_S
        while time.monotonic() < end:
            m = self.link.peer("motion")
            if m is None or m.results >= result_seq:
                break
            self.spin(0.02)
        self.hold = max(self.hold, self.newest())
        self.ack(False)

    def pause(self, seconds: float, cancelled: Callable[[], bool]) -> None:
        """Let ``seconds`` of sim time pass (people walk on). Raises MotionCancelled."""
        from havln_robot.ros.motion_client import MotionCancelled

        end = max(self.hold, 0) + int(round(seconds * 1e9))
        wall_end = time.monotonic() + seconds + 60.0
        while self.newest() < end and time.monotonic() < wall_end:
            if cancelled():
                raise MotionCancelled("cancelled")
            self.ack(True)
            self.spin(0.02)
        self.hold = max(self.hold, self.newest())
        self.ack(False)

    def close(self) -> None:
        self.link.close()
