"""Lockstep sim time for the embedded simulator (pure Python; the ROS side is :mod:`havln_robot.ros.lockstep`).

Why: with sim_node stepping on the wall clock, a loaded machine changed what the robot did (which
odometry, IMU sample or frame a control tick or a policy step saw depended on delivery timing).
In lockstep, sim time is a step counter that advances only when every participant is done with
the current step, so a loaded machine slows the simulation, never the robot's control.

Protocol (all on ``havln/sim_sync``, one writer per node, so each sender's messages stay in order):

* sim_node publishes every output of step ``t`` (odom, imu, ground truth, camera frame; stamps ``t``),
  then ``/clock`` = ``t``, then a **step** message ``(t, streams)`` naming the streams it published.
* a participant (motion_node, people_node, agent_node) handles exactly the messages stamped ``t``
  once all announced streams of ``t`` are in (waiting at most :data:`INCOMPLETE_STEP_WAIT_S` of
  wall time for a lost one), then sends an **ack** ``(t, wants, counters, cmd)``:
  ``wants`` = it needs sim time to pass (an action runs, the agent waits for frames or a pause);
  counters = actions sent / received and action results published / seen, so that an action or a
  result in flight between two nodes holds the clock until it is handled.
* sim_node advances to the next step only when every live participant acked the current step,
  the counters balance, and some participant wants time. Nobody wanting time = the clock stands
  still (an idle robot, the agent thinking): as in the batch simulator, the world waits.
* liveness: participants repeat their last ack every :data:`HEARTBEAT_S`; one silent for
  ``lockstep_timeout_s`` (a dead node) no longer holds the clock.

The velocity command motion_node published at its tick travels in its ack (``cmd``, numbered), so
sim_node applies it at the step it was computed for, whatever the topic delivery order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Participants repeat their last ack this often (wall clock, s): their liveness signal.
HEARTBEAT_S = 0.2
#: A step whose announced messages did not all arrive is handled anyway after this long (wall, s; a lost message).
#: Long: on a loaded machine a message can sit unread in a starved node for seconds, and handling its step
#: without it would change what the robot does.
INCOMPLETE_STEP_WAIT_S = 30.0
#: A participant counts as present for the others (a node waits for its output) while heard within this long (wall, s).
PEER_TIMEOUT_S = 30.0
#: An action with no agent ack that claims it (sent by another tool, e.g. the console) is started
#: after this long (wall, s) at the step motion_node is at.
FOREIGN_ACTION_WAIT_S = 0.5
#: Roles of the participants (the ``role`` of an ack).
ROLES = ("motion", "people", "agent")
#: Stream names of a step message.
STREAMS = ("odom", "imu", "camera", "ground_truth")


def stamp_ns(sec: int, nanosec: int) -> int:
    """A header stamp as integer nanoseconds (steps are compared exactly, never as floats)."""
    return int(sec) * 1_000_000_000 + int(nanosec)


@dataclass
class Ack:
    """One participant's state (its last ack).

    Attributes:
        sender: node name (fully qualified).
        role: one of :data:`ROLES`.
        t_ns: the last step it is done with, ns of sim time (-1: none yet).
        wants: it needs sim time to pass.
        actions: motion: agent actions started; agent: actions published.
        results: motion: highest ``seq`` of the action results published; agent: of those it has looked at.
        cmd_seq: motion: number of velocity commands published (0: none).
        cmd: motion: the last command (linear m/s, angular rad/s).
        people_ns: people: stamp of its last output (-1: none).
        wall: receipt time at the simulator (monotonic wall clock, s).
    """

    sender: str
    role: str
    t_ns: int = -1
    wants: bool = False
    actions: int = 0
    results: int = 0
    cmd_seq: int = 0
    cmd: tuple[float, float] = (0.0, 0.0)
    people_ns: int = -1
    wall: float = 0.0


@dataclass
class Gate:
    """sim_node's side: may the clock advance from the current step?

    Args:
        timeout_s: a participant silent this long (wall clock) no longer counts.
    """

    timeout_s: float
    acks: dict[str, Ack] = field(default_factory=dict)
    results_seen: int = 0  # highest seq of the action results sim_node itself received (camera pitch)
    dropped: list[str] = field(default_factory=list)

    def heard(self, ack: Ack) -> None:
        """Record an ack (a later one of the same sender replaces it)."""
        self.acks[ack.sender] = ack

    def bye(self, sender: str) -> None:
        """A participant left (shut down): it no longer holds the clock."""
        self.acks.pop(sender, None)

    def live(self, now_wall: float) -> list[Ack]:
        """The participants heard within ``timeout_s``; the others are dropped (named in :attr:`dropped`)."""
        for name, a in list(self.acks.items()):
            if now_wall - a.wall > self.timeout_s:
                del self.acks[name]
                self.dropped.append(name)
        return list(self.acks.values())

    def role(self, live: list[Ack], role: str) -> list[Ack]:
        return [a for a in live if a.role == role]

    def why_not(self, t_ns: int, now_wall: float) -> str | None:
        """None when the clock may advance past step ``t_ns`` (-1: nothing published yet), else why not."""
        live = self.live(now_wall)
        if not live:
            return "no participant"
        behind = [a.sender for a in live if a.t_ns < t_ns]
        if behind:
            return f"waiting for {', '.join(behind)}"
        motion, agent = self.role(live, "motion"), self.role(live, "agent")
        published = max((a.results for a in motion), default=0)
        if motion and self.results_seen < published:
            return "action result in flight to sim_node"
        for a in agent:
            if a.results < published:
                return f"action result in flight to {a.sender}"
            if motion and max(m.actions for m in motion) < a.actions:
                return f"action of {a.sender} in flight to motion_node"
        if not any(a.wants for a in live):
            return "idle"
        return None

    def command(self, now_wall: float) -> tuple[int, tuple[float, float]] | None:
        """motion_node's latest velocity command ``(seq, (v, w))``, None without a live motion_node."""
        motion = self.role(self.live(now_wall), "motion")
        if not motion:
            return None
        a = max(motion, key=lambda m: m.cmd_seq)
        return a.cmd_seq, a.cmd


class StepInbox:
    """A participant's inbox of the simulator's steps (one per node; the caller holds its lock).

    Messages stamped with a step are kept (:meth:`hold`) until every message the step needs is in;
    :meth:`ready` then yields the steps that may be handled, in order, each once: complete, or
    incomplete after :data:`INCOMPLETE_STEP_WAIT_S` of wall time (a lost message; the kinds still
    missing are yielded with it). The step counts as done once the caller has handled it and asks
    for the next. motion_node, people_node and agent_node each run their steps through one of
    these, so the three wait for a step by the same rule.

    Attributes:
        done: the last step handled, ns (-1: none yet).
    """

    def __init__(self, wait_s: float = INCOMPLETE_STEP_WAIT_S) -> None:
        self.wait_s = wait_s
        self.done = -1
        self._held: dict[str, dict[int, object]] = {}
        self._since: float | None = None  # wall time the next step began to wait for its messages

    @property
    def waiting(self) -> bool:
        """A step is waiting for a message (the caller re-checks :meth:`ready` on a timer)."""
        return self._since is not None

    def hold(self, kind: str, t_ns: int, msg: object = None) -> bool:
        """Keep ``msg`` (a message of ``kind``) for the step ``t_ns``; False (not kept) when that step
        was handled already: a repeat (sim_node repeats its last frame while the clock stands still)
        or a message too late for its step."""
        if t_ns <= self.done:
            return False
        self._held.setdefault(kind, {})[t_ns] = msg
        return True

    def has(self, kind: str, t_ns: int) -> bool:
        return t_ns in self._held.get(kind, {})

    def ready(self, next_step, needs, wall) -> object:
        """Yield ``(t_ns, missing)`` for each step that may be handled now, in order.

        Args:
            next_step: ``next_step(after_ns)`` -> the first announced step after it ``(t_ns, streams)``, or None.
            needs: ``needs(t_ns, streams)`` -> the message kinds step ``t_ns`` waits for.
            wall: the wall clock (monotonic, s).
        """
        while True:
            nxt = next_step(self.done)
            if nxt is None:
                return
            t_ns, streams = nxt
            missing = list(dict.fromkeys(k for k in needs(t_ns, streams) if not self.has(k, t_ns)))
            if missing:
                now = wall()
                if self._since is None:
                    self._since = now
                if now - self._since < self.wait_s:
                    return
            self._since = None
            yield t_ns, missing
            self.done = t_ns
            for kept in self._held.values():
                for t in [t for t in kept if t <= t_ns]:  # anything older was handled with this step
                    del kept[t]

    def take(self, t_ns: int, kinds: tuple[str, ...]) -> list[tuple[str, object]]:
        """The held messages stamped at or before ``t_ns``, kind by kind in the order of ``kinds``,
        each kind by stamp (removed from the inbox)."""
        out: list[tuple[str, object]] = []
        for kind in kinds:
            kept = self._held.get(kind, {})
            for st in sorted(t for t in kept if t <= t_ns):
                out.append((kind, kept.pop(st)))
        return out


class ActionClaims:
    """motion_node's side of an agent's actions in lockstep: each starts at the step it was sent at.

    The agent's ack counts the actions it published (``actions``) and names its step (``t_ns``): the
    n-th action is claimed by the first ack that counts it, and starts when motion_node has reached
    that step. An action no ack claims (another tool, e.g. the console) starts after
    :data:`FOREIGN_ACTION_WAIT_S` of wall time at the step motion_node is at, at once without an agent.

    Attributes:
        started: agent actions started so far (motion_node's ack counts them).
    """

    def __init__(self) -> None:
        self.queue: list[tuple[object, float]] = []  # (message, wall arrival)
        self.claims: dict[int, int] = {}  # n-th agent action -> the step it was sent at, ns
        self.claimed = 0
        self.started = 0

    def arrived(self, msg: object, wall: float) -> None:
        self.queue.append((msg, wall))

    def agent_at(self, actions: int, t_ns: int) -> None:
        """An agent ack: ``actions`` published so far, at step ``t_ns``."""
        while self.claimed < actions:
            self.claimed += 1
            self.claims[self.claimed] = t_ns

    def due(self, done_ns: int, agent_live: bool, wall: float) -> tuple[object, int] | None:
        """The next action to start now and the step to start it at (ns), or None (none due yet)."""
        if not self.queue:
            return None
        msg, arrived = self.queue[0]
        n = self.started + 1
        if n in self.claims:
            if self.claims[n] > done_ns:
                return None  # motion_node has not reached the agent's step yet
            self.started = n
            t_ns = max(self.claims.pop(n), done_ns)
        elif not agent_live or wall - arrived >= FOREIGN_ACTION_WAIT_S:
            t_ns = done_ns  # no agent claims it: started where motion_node is
        else:
            return None
        self.queue.pop(0)
        return msg, t_ns
