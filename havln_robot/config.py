"""Deployment profiles: ROS-params YAML files validated before any node starts.

Pure Python. A profile (``config/go2.yaml``, ``config/sim.yaml``, ``config/gazebo.yaml``) is a
standard ROS 2 parameters file, read as rcl reads it (:mod:`havln_robot.rosparams`)::

    /**:                      # every node
      ros__parameters:
        use_sim_time: true
    /**/motion_node:          # motion_node in any namespace (go2.launch.py namespace:=go2)
      ros__parameters:
        max_linear_speed: 0.3

The node names its keys end in are the nodes the profile runs (``havln-robot launch`` starts
exactly these); each node's parameters are checked against that node's
:class:`~havln_robot.params.ParamSpec` with ROS's type rules (``1`` is refused for a float: ``1.0``).
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from havln_robot import rosnames, rosparams
from havln_robot.node_table import NODES  # noqa: F401  (re-exported)
from havln_robot.params import ConfigError, ParamSpec, rclpy_param, suggest


def load_spec(node: str) -> ParamSpec:
    """Return the ParamSpec of a registered node.

    Raises:
        ConfigError: ``node`` is not a known node name.
    """
    if node not in NODES:
        raise ConfigError(f"{node}: unknown node; known nodes: {', '.join(NODES)}")
    mod_name, attr = NODES[node][1].split(":")
    spec = getattr(importlib.import_module(mod_name), attr)
    if not isinstance(spec, ParamSpec):
        raise TypeError(f"node table: {mod_name}.{attr} is a {type(spec).__name__}, not a ParamSpec")
    return spec


@dataclass
class Profile:
    """A validated deployment profile.

    Attributes:
        path: the YAML file.
        nodes: node name → complete, validated parameter dict (defaults filled in), in file order.
        fqns: node name → the fully qualified name it was validated for (``/go2/motion_node``).
    """

    path: Path
    nodes: dict[str, dict[str, Any]]
    fqns: dict[str, str] = field(default_factory=dict)


def read_yaml(path: Path) -> Any:
    """Parse a YAML file strictly (duplicate keys refused, 1 MiB cap; :mod:`havln_robot.yamlio`),
    turning every problem into a one-line ConfigError naming the file and line."""
    from havln_robot.yamlio import YamlFileError, load_yaml_file

    try:
        return load_yaml_file(path)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; profiles live in config/ (go2.yaml, sim.yaml, gazebo.yaml)") from None
    except YamlFileError as exc:
        raise ConfigError(str(exc)) from None


def profile_nodes(sections: list[rosparams.Section]) -> list[str]:
    """Node names a profile runs: those its sections end in (``/**/motion_node`` → motion_node), in file order."""
    out: list[str] = []
    for s in sections:
        if s.node_name is not None and s.node_name not in out:
            out.append(s.node_name)
    return out


def _default_fqn(node: str, sections: list[rosparams.Section]) -> str:
    """Where a node of the profile runs when no namespace is given: the first section naming it,
    with ``**`` dropped and ``*`` read as some namespace token (``/**/motion_node`` → ``/motion_node``)."""
    sec = next((s for s in sections if s.node_name == node), None)
    if sec is None:  # started with a file of wildcard sections only (``/**:``): as ros2 run starts it
        return "/" + node
    parts = [("ns" if p == "*" else p) for p in sec.pattern.split("/") if p and p != "**"]
    return "/" + "/".join(parts)


def check_section(spec: ParamSpec, node: str, section: rosparams.Section, where: str, namespace: str = "/") -> dict[str, Any]:
    """Check one section's values for ``node``: names, exact ROS types, ranges, ROS names (topics,
    services and frames, expanded in ``namespace`` as rclpy expands them). Returns the typed values.

    Raises:
        ConfigError: unknown parameter (a wildcard section that holds another node's key is named
            with where it belongs), wrong type or out of range, one line with the file line.
    """
    by_name = spec.by_name()
    out: dict[str, Any] = {}
    for key, value in section.params.items():
        at = f"{where}: line {section.lines.get(key, section.line)}"
        if key not in by_name and not rclpy_param(key):
            if section.node_name is None:
                owners = [n for n in NODES if n != node and _has_param(n, key)]
                home = f"; it belongs under '/**/{owners[0]}:'" if owners else ""
                raise ConfigError(
                    f"{at}: {key}: not a parameter of {node} (a '{section.key}' section applies to every node it matches){home}"
                )
            raise ConfigError(f"{at}: {key}: unknown parameter{suggest(key, by_name)}")
        if value is rosparams.NOT_SET:
            p = by_name.get(key)
            if p is None or not p.type.endswith("_list"):
                raise ConfigError(f"{at}: {key}: no value ([] or {{}}); give a value{'; allowed: ' + p.allowed() if p else ''}")
            value = []
        out[key] = value
    # exact ROS types and ranges, messages naming the line
    for key, value in out.items():
        at = f"{where}: line {section.lines.get(key, section.line)}"
        spec.validate({key: value}, where=at, strict=True, namespace=namespace)
    return out


def _has_param(node: str, key: str) -> bool:
    try:
        return key in load_spec(node).by_name()
    except (ConfigError, ImportError):
        return False


def load_profile(
    path: str | Path,
    overrides: dict[str, dict[str, Any]] | None = None,
    namespace: str | None = None,
    overrides_from: str = "override",
    nodes: list[str] | None = None,
) -> Profile:
    """Read and validate a profile the way ``--params-file`` reads it (:mod:`havln_robot.rosparams`).

    Keys may be bare node names (root namespace only), ``/**/node`` (any namespace, what the shipped
    profiles use), ``/**`` (every node: e.g. ``use_sim_time``), or fully qualified ``/ns/node``.

    Args:
        path: the ROS-params YAML file.
        overrides: node → {param: value} applied over the file (e.g. from the CLI), validated too;
            a :class:`~havln_robot.params.Raw` value is coerced to the declared type.
        namespace: validate for nodes started in this namespace (``go2``, ``/robots/go2``, as rclpy
            takes it: ``""`` is the root, a relative one is made absolute); None: each node where
            its first section puts it.
        overrides_from: where ``overrides`` came from, for messages (``"--set"``: a bad value is
            named ``--set motion_node: cmd_vel_topic: ...``).
        nodes: check these nodes, as each would read the file given with ``--params-file``
            (a file of ``/**:`` sections names none); None: the nodes its sections name.

    Returns:
        The validated :class:`Profile`.

    Raises:
        ConfigError: unreadable file, what rcl refuses, unknown node or parameter, wrong type or
            out-of-range value, a topic, service or frame name ROS refuses, a namespace rclpy
            refuses, a node no section applies to -- one line naming the file, node and key.
    """
    _check_namespace(namespace)
    path = Path(path)
    sections = rosparams.parse_file(path)
    if not sections:
        raise ConfigError(f"{path}: expected a mapping of node names to {{ros__parameters: ...}}, e.g. '/**/motion_node:'")
    names = list(nodes) if nodes else profile_nodes(sections)
    for where, name in [*((f"--node {n}", n) for n in nodes or ()), *((f"{path}: line {s.line}: {s.key}", s.node_name) for s in sections)]:
        if name is not None and name not in NODES:
            close = difflib.get_close_matches(name, list(NODES), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known nodes: {', '.join(NODES)}"
            raise ConfigError(f"{where}: unknown node{hint}")
    if not names:
        raise ConfigError(
            f"{path}: no section names a node ({', '.join(s.key for s in sections)}); list the profile's nodes as '/**/motion_node:' "
            "or name the nodes you start with this file (havln-robot config FILE --node motion_node)"
        )
    overrides = overrides or {}
    checked: dict[str, dict[str, Any]] = {}
    fqns: dict[str, str] = {}
    where_set: dict[tuple[str, str], str] = {}
    for node in names:
        fqn = rosparams.node_fqn(node, namespace) if namespace is not None else _default_fqn(node, sections)
        fqns[node] = fqn
        secs = rosparams.matching(sections, fqn)
        if not secs:
            raise ConfigError(
                f"{path}: no section applies to {fqn} (keys: {', '.join(s.key for s in sections)}); "
                f"use '/**/{node}:' to configure {node} in any namespace"
            )
        spec = load_spec(node)
        ns = fqn.rsplit("/", 1)[0] or "/"
        params: dict[str, Any] = {}
        for sec in secs:
            params.update(check_section(spec, node, sec, f"{path}: {sec.key}", ns))
            where_set.update({(node, k): f"{sec.key} line {sec.lines.get(k, sec.line)}" for k in sec.params})
        over = overrides.get(node, {})
        spec.validate(over, where=f"{overrides_from} {node}", namespace=ns)  # named where the value came from
        params.update(over)
        where_set.update({(node, k): overrides_from for k in over})
        checked[node] = spec.validate(params, where=f"{path}: {node}", namespace=ns)
    for node in overrides:
        if node not in names:
            raise ConfigError(f"override for {node}: that node is not in {path}")
    check_shared(path, checked, where_set)
    return Profile(path=path, nodes=checked, fqns=fqns)


def _check_namespace(namespace: str | None) -> None:
    """Refuse a namespace rclpy would refuse (None: each node where its section puts it).

    Raises:
        ConfigError: naming the rule broken and an example.
    """
    if namespace is None:
        return
    why = rosnames.namespace_error(rosnames.node_namespace(namespace))
    if why is not None:
        raise ConfigError(
            f"namespace {namespace!r}: not a ROS namespace: {why}; give e.g. --namespace go2 or /robots/go2 ({rosnames.RULES_URL})"
        )


def check_shared(path: Path, nodes: dict[str, dict[str, Any]], where_set: dict[tuple[str, str], str]) -> None:
    """A :class:`~havln_robot.params.Param` row that several nodes' specs declare (the camera and
    LiDAR mounts, :data:`havln_robot.motion.params.SENSOR_MOUNT_KEYS`) is one setting of the one
    robot: every node of the profile must hold the same value, or one of them places the sensor's
    data where the sensor is not (a LiDAR 0.3 m off in people_node moves every person it sees).

    Args:
        path: the profile, for the message.
        nodes: node -> validated parameters (defaults filled in).
        where_set: (node, key) -> where the value was given (``/**/motion_node line 158``); absent = default.

    Raises:
        ConfigError: two nodes hold different values of one shared row, naming both and the fix.
    """
    holders: dict[int, list[tuple[str, str]]] = {}
    for node in nodes:
        for p in load_spec(node).params:
            holders.setdefault(id(p), []).append((node, p.name))
    for group in holders.values():
        (a, key), *rest = group
        for b, _ in rest:
            if nodes[a][key] != nodes[b][key]:
                wa, wb = (where_set.get((n, key), "default") for n in (a, b))
                raise ConfigError(
                    f"{path}: {key}: {a} has {nodes[a][key]!r} ({wa}), {b} has {nodes[b][key]!r} ({wb}); one robot has one "
                    f"{key.rsplit('_', 1)[0].replace('_', ' ')}: give every node that declares {key} the same value"
                )
