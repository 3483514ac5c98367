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
