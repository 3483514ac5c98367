"""ROS 2 names (topics, services, namespaces, node names) and tf2 frame ids, checked as rcl checks
them -- pure Python, no rclpy import, so a profile is refused by ``havln-robot config`` before
``launch`` creates a node and rclpy raises ``InvalidTopicNameException`` from deep inside it.

Rules (https://design.ros2.org/articles/topic_and_service_names.html, as rcl 9 / rmw 7 implement
them; test/test_params_config.py compares every function here with rclpy's own validators):

* a topic or service name as written (``rcl_validate_topic_name``): not empty; ASCII letters,
  digits, ``_``, ``/``, a leading ``~`` (the node's private namespace, then ``/``) and ``{substitutions}`` (letters, digits, ``_``, not starting with a digit); not
  starting with a digit, no token (after a ``/``) starting with a digit; not ending in ``/``;
* it is then expanded (``rcl_expand_topic_name``: ``~`` -> the node's fully qualified name,
  ``{node}`` / ``{ns}`` / ``{namespace}`` substituted, a relative name put in the node's
  namespace) and the result must be a valid fully qualified name (``rmw_validate_full_topic_name``:
  starts with ``/``, letters, digits, ``_`` and ``/`` only, no ``//``, no trailing ``/``, no token
  starting with a digit, at most :data:`TOPIC_MAX_LENGTH` characters);
* a namespace (``rmw_validate_namespace``, after rcl's normalisation: ``""`` is ``/``, a relative
  ``go2`` is ``/go2``): the full-name rules, ``/`` alone allowed, at most :data:`NAMESPACE_MAX_LENGTH`;
* a node name (``rmw_validate_node_name``): letters, digits and ``_``, not starting with a digit,
  at most :data:`NODE_NAME_MAX_LENGTH` characters;
* a tf2 frame id (tf2's ``validateFrameId``, REP 105): not empty, no leading ``/``, and here also
  no whitespace or control character (rviz2 and Foxglove cannot address such a frame).

Every ``*_error`` function returns None for a valid name, else one line saying what is wrong.
"""

from __future__ import annotations

#: rmw's RMW_TOPIC_MAX_NAME_LENGTH (255 - 8: room for a DDS prefix such as ``rt``).
TOPIC_MAX_LENGTH = 247
#: rmw's RMW_NAMESPACE_MAX_LENGTH (the topic limit less 2: room for ``/`` and a one-letter name).
NAMESPACE_MAX_LENGTH = 245
#: rmw's RMW_NODE_NAME_MAX_NAME_LENGTH.
NODE_NAME_MAX_LENGTH = 255
#: The substitutions rcl expands in a topic or service name.
SUBSTITUTIONS = ("node", "ns", "namespace")
#: Where the rules are written down, for messages.
RULES_URL = "https://design.ros2.org/articles/topic_and_service_names.html"

_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_DIGITS = frozenset("0123456789")


def topic_name_error(name: str) -> str | None:
    """What ``rcl_validate_topic_name`` refuses in a topic or service name as written (relative,
    private ``~/...`` or absolute; substitutions allowed), or None."""
    if not name:
        return "empty; give a name such as cmd_vel"
    if name[0] in _DIGITS:
        return "starts with a digit"
    if name[-1] == "/":
        return "ends with '/'"
    open_at = -1
    for i, c in enumerate(name):
        if c in _ALNUM:
            if c in _DIGITS and open_at >= 0 and i == open_at + 1:
                return f"the substitution at position {open_at} starts with a digit"
        elif c == "_":
            continue
        elif c == "{":
            if open_at >= 0:
                return f"{c!r} at position {i} inside a substitution (only letters, digits and '_' there)"
            open_at = i
        elif c == "}":
            if open_at < 0:
                return f"unmatched '}}' at position {i}"
            open_at = -1
        elif c in "/~":
            if open_at >= 0:
                return f"{c!r} at position {i} inside a substitution (only letters, digits and '_' there)"
        else:
            return f"{c!r} at position {i} is not allowed (only ASCII letters, digits, '_', '/', a leading '~' and {{substitutions}})"
    if open_at >= 0:
        return f"unmatched '{{' at position {open_at}"
    if name[0] == "~" and len(name) > 2 and name[1] != "/":  # rcl checks this only past 2 characters ("~a" passes)
        return "'~' must be followed by '/' (the node's private namespace: ~/name)"
    for i, c in enumerate(name):
        if c == "~" and i != 0:
            return f"'~' at position {i}: only the first character may be '~' (the node's private namespace)"
        if c == "/" and i + 1 < len(name) and name[i + 1] in _DIGITS:
            return f"the token at position {i + 1} starts with a digit"
    return None


def _full_name_error(name: str, what: str, max_length: int, root_ok: bool) -> str | None:
    if not name:
        return "empty"
    if name[0] != "/":
        return f"a fully qualified {what} must start with '/'"
    if name == "/":
        return None if root_ok else "'/' alone is not a name"
    if name[-1] == "/":
        return "ends with '/'"
    for i, c in enumerate(name):
        if c not in _ALNUM and c not in "_/":
            return f"{c!r} at position {i} is not allowed (only ASCII letters, digits, '_' and '/')"
        if c == "/" and i + 1 < len(name):
            if name[i + 1] == "/":
                return f"repeated '/' at position {i}"
            if name[i + 1] in _DIGITS:
                return f"the token at position {i + 1} starts with a digit"
    if len(name) > max_length:
        return f"{len(name)} characters, more than the {max_length} ROS allows"
    return None


def full_topic_name_error(name: str) -> str | None:
    """What ``rmw_validate_full_topic_name`` refuses in an expanded (fully qualified) topic or service name, or None."""
    return _full_name_error(name, "name", TOPIC_MAX_LENGTH, root_ok=False)


def namespace_error(namespace: str) -> str | None:
    """What ``rmw_validate_namespace`` refuses in an absolute namespace (``/`` is the root), or None."""
    return _full_name_error(namespace, "namespace", NAMESPACE_MAX_LENGTH, root_ok=True)


def node_name_error(name: str) -> str | None:
    """What ``rmw_validate_node_name`` refuses in a node name (no namespace), or None."""
    if not name:
        return "empty"
    if name[0] in _DIGITS:
        return "starts with a digit"
    for i, c in enumerate(name):
        if c not in _ALNUM and c != "_":
            return f"{c!r} at position {i} is not allowed (only ASCII letters, digits and '_')"
    if len(name) > NODE_NAME_MAX_LENGTH:
        return f"{len(name)} characters, more than the {NODE_NAME_MAX_LENGTH} ROS allows"
    return None


def node_namespace(namespace: str | None) -> str:
    """A namespace as rcl's node initialisation takes it: None or ``""`` -> ``/``, ``go2`` -> ``/go2``
    (not checked: see :func:`namespace_error`)."""
    if not namespace:
        return "/"
    return namespace if namespace.startswith("/") else "/" + namespace


def expand_topic_name(name: str, node: str, namespace: str) -> str:
    """The fully qualified name of ``name`` for node ``node`` in ``namespace`` (absolute), as
    ``rcl_expand_topic_name`` computes it. Check ``name`` with :func:`topic_name_error` first.

    Raises:
        ValueError: an unknown substitution (only ``{node}``, ``{ns}``, ``{namespace}`` exist).
    """
    fqn = ("/" if namespace == "/" else namespace + "/") + node
    out = fqn + name[1:] if name.startswith("~") else name
    while "{" in out:
        i = out.index("{")
        j = out.index("}", i)
        key = out[i + 1 : j]
        if key not in SUBSTITUTIONS:
            raise ValueError(f"unknown substitution {{{key}}}; only {', '.join('{' + s + '}' for s in SUBSTITUTIONS)} exist")
        out = out[:i] + (node if key == "node" else namespace) + out[j + 1 :]
    if not out.startswith("/"):
        out = ("/" if namespace == "/" else namespace + "/") + out
    return out


def topic_error(name: str, node: str = "node", namespace: str = "/") -> str | None:
    """Everything rclpy checks when node ``node`` in ``namespace`` creates a publisher, subscription,
    service or client on ``name``: the name as written, then its expansion (:func:`expand_topic_name`),
    then the fully qualified result. None when rclpy accepts it."""
    why = topic_name_error(name)
    if why is not None:
        return why
    try:
        full = expand_topic_name(name, node, namespace)
    except ValueError as exc:
        return str(exc)
    why = full_topic_name_error(full)
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
