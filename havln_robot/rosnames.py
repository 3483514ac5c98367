"""ROS 2 names (topics, services, namespaces, node names) checked by rclpy's own validators, and
tf2 frame ids, which rclpy does not check -- so a profile is refused by ``havln-robot config``
before ``launch`` creates a node and rclpy raises ``InvalidTopicNameException`` from deep inside it.

rclpy (rcl and rmw underneath) holds the rules: https://design.ros2.org/articles/topic_and_service_names.html.
What this module adds: each refusal as one line (rclpy's message is three, with a caret), a topic
checked as ``Node.create_publisher`` checks it (as written, expanded for the node, then fully
qualified), a tf2 frame id check, and an argparse type for ``--namespace``.

rclpy is imported at the first check (about 0.2 s), not with this module: the modules below the
ROS layer that validate parameters import it only when they check a name.

Every ``*_error`` function returns None for a valid name, else one line saying what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

#: Where the rules are written down, for messages.
RULES_URL = "https://design.ros2.org/articles/topic_and_service_names.html"


def _refusal(check: Callable[..., Any], *args: str) -> str | None:
    """None when ``check(*args)`` (an rclpy validator) passes, else its complaint as one line:
    ``Invalid topic name: ...:\\n  'name'\\n   ^`` becomes ``... (at position N)``."""
    from rclpy.exceptions import NameValidationException

    try:
        check(*args)
    except (NameValidationException, ValueError) as exc:
        lines = str(exc).splitlines()
        why = re.sub(r"^Invalid [a-z ]+: ", "", lines[0]).rstrip(":")
        why = re.sub(r", at \S+:\d+$", "", why)  # rcl's source location
        why = re.sub(r"'(\d+)U - (\d+)U'", lambda m: f"{int(m[1]) - int(m[2])} characters", why)  # rmw's limit as its C macro
        if "exceed" in why:
            why += f", it has {len(args[-1])}"
        if len(lines) == 3 and "^" in lines[2]:
            why += f" (at position {lines[2].index('^') - 3})"
        return why
    return None


def namespace_error(namespace: str) -> str | None:
    """What rclpy refuses in an absolute namespace (``/`` is the root), or None."""
    from rclpy.validate_namespace import validate_namespace

    return _refusal(validate_namespace, namespace)


def node_name_error(name: str) -> str | None:
    """What rclpy refuses in a node name (no namespace), or None."""
    from rclpy.validate_node_name import validate_node_name

    return _refusal(validate_node_name, name)


def node_namespace(namespace: str | None) -> str:
    """A namespace as rcl's node initialisation takes it: None or ``""`` -> ``/``, ``go2`` -> ``/go2``
    (not checked: see :func:`namespace_error`)."""
    if not namespace:
        return "/"
    return namespace if namespace.startswith("/") else "/" + namespace


def topic_error(name: str, node: str = "node", namespace: str = "/") -> str | None:
    """Everything rclpy checks when node ``node`` in ``namespace`` creates a publisher, subscription,
    service or client on ``name``: the name as written, its expansion (``~``, ``{node}``, a relative
    name), then the fully qualified result. None when rclpy accepts it."""
    from rclpy.expand_topic_name import expand_topic_name
    from rclpy.validate_full_topic_name import validate_full_topic_name
    from rclpy.validate_topic_name import validate_topic_name

    why = _refusal(validate_topic_name, name) or _refusal(expand_topic_name, name, node, namespace)
    if why is not None:
        return why
    full = expand_topic_name(name, node, namespace)
    why = _refusal(validate_full_topic_name, full)
    return None if why is None else f"expands to {full[:60]!r}{'...' if len(full) > 60 else ''}, which is refused: {why}"


def frame_id_error(frame: str) -> str | None:
    """What tf2 refuses in a frame id (empty, a leading ``/``), and whitespace or control characters; or None."""
    if not frame:
        return "empty; give a frame id such as base_link"
    if frame.startswith("/"):
        return f"starts with '/' (tf2 refuses it); write {frame.lstrip('/')!r}"
    bad = [c for c in frame if c.isspace() or ord(c) < 32 or ord(c) == 127]
    if bad:
        return f"holds {bad[0]!r} (whitespace and control characters cannot be addressed by tf2 tools)"
    return None


def namespace_arg(text: str) -> str:
    """argparse ``type=`` for a ``--namespace`` flag: a ROS namespace as a node takes it
    (``go2``, ``/robots/go2``; ``""`` = none), refused as rclpy would refuse it.

    Raises:
        argparse.ArgumentTypeError: not a valid namespace (argparse names the flag).
    """
    import argparse

    why = namespace_error(node_namespace(text))
    if why is not None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a ROS namespace: {why}; give e.g. go2 or /robots/go2 ({RULES_URL})")
    return text
