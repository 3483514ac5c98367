"""Sources pinned at start: each topic a node depends on is bound to its first publisher (pure Python).

A second robot's stack brought up without a namespace on the same ROS domain, or a second stack on
another machine of the same domain, publishes on the same names (``cmd_vel``, ``odom``, ``imu``,
``/clock``, the camera): a node that takes both interleaves two robots' odometry or clocks (yaw
jumps, sim-time resets) or, for a driver, obeys another robot's commands. Messages carry no sender
in this rclpy (no publisher GID in the message info), so the rule works on the graph: a topic is
bound to the first publisher seen on it (by endpoint GID); while any other publisher is on it,
every message of that topic is refused (they cannot be told apart) and the owner stops the robot.
When the other publisher leaves, the bound one is trusted again. A bound publisher that left and
came back under the same node name (a respawned driver) is bound again; another node in its place
keeps the topic refused.

:class:`SourcePins` holds the bindings; the ROS shell (:meth:`havln_robot.nodes._base.HavlnNode.pin_source`)
feeds it the publishers it sees and asks it before each message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Part of the name rclpy gives an endpoint whose node discovery has not named yet.
UNKNOWN = "_UNKNOWN_"


@dataclass(frozen=True)
class Publisher:
    """One publisher endpoint: ``key`` its endpoint GID (hex), ``label`` its node's full name and a short GID."""

    key: str
    node: str

    @property
    def label(self) -> str:
        """``/ns/node [gid 0a1b2c3d]``: the node name alone cannot tell two same-named stacks apart."""
        return f"{self.node} [gid {self.key[-8:]}]"


@dataclass
class SourcePins:
    """Bindings of topics (fully resolved names) to their first publisher.

    Attributes:
        bound: topic -> the publisher it is bound to.
        conflict: topic -> one line naming both publishers, while the topic is refused.
    """

    bound: dict[str, Publisher] = field(default_factory=dict)
    conflict: dict[str, str] = field(default_factory=dict)
    watched: list[str] = field(default_factory=list)

    def watch(self, topic: str) -> None:
        """Pin ``topic`` (a fully resolved name)."""
        if topic not in self.watched:
            self.watched.append(topic)

    def refused(self, topic: str) -> str | None:
        """The line saying why messages on ``topic`` are refused now, else None (also for unwatched topics)."""
        return self.conflict.get(topic)

    def update(self, topic: str, publishers: list[Publisher]) -> str | None:
        """The publishers now on ``topic``; returns the one line of a conflict that starts now (else None).

        The first publisher seen binds the topic; several at the first look bind none (refused until
        one is left).
        """
        if topic not in self.watched:
            return None
        keys = {p.key: p for p in publishers}
        first = self.bound.get(topic)
        if first is None:
            if len(keys) == 1:
                self.bound[topic] = next(iter(keys.values()))
                self.conflict.pop(topic, None)
                return None
            if len(keys) > 1:
                names = ", ".join(p.label for p in keys.values())
                return self._set(topic, f"{topic}: {len(keys)} publishers at start ({names}); messages refused until one is left")
            return None
        if first.key in keys and UNKNOWN in first.node:  # discovery had not named the node yet
            first = self.bound[topic] = keys[first.key]
        others = [p for k, p in keys.items() if k != first.key]
        if first.key not in keys and len(others) == 1 and others[0].node == first.node and UNKNOWN not in first.node:
            self.bound[topic] = others[0]  # the bound node restarted (a respawned driver): same name, new endpoint
            self.conflict.pop(topic, None)
            return None
        if not others:
            self.conflict.pop(topic, None)
            return None
        if first.key in keys:
            line = f"{topic}: second publisher {others[0].label} besides {first.label} (bound at start); messages refused, robot stopped"
        else:
            line = f"{topic}: publisher {others[0].label} replaced {first.label} (bound at start); messages refused, robot stopped"
        return self._set(topic, line)

    def _set(self, topic: str, line: str) -> str | None:
        """Record the conflict; returns the line when it is new, or when it now names a node that
        discovery had not named before (the shell reports the line once it names both)."""
        prev = self.conflict.get(topic)
        self.conflict[topic] = line
        if prev is None or (UNKNOWN in prev and UNKNOWN not in line):
            return line
        return None
