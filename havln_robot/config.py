"""Deployment profiles: ROS-params YAML files validated before any node starts.

Pure Python. A profile (``config/go2.yaml``, ``config/sim.yaml``, ``config/gazebo.yaml``) is a
standard ROS 2 parameters file::

    motion_node:
      ros__parameters:
        max_linear_speed: 0.3

Its top-level keys are the nodes the profile runs (``havln-robot launch`` starts exactly these);
each node's parameters are checked against that node's :class:`~havln_robot.params.ParamSpec`.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from havln_robot.node_table import NODES  # noqa: F401  (re-exported)
from havln_robot.params import ConfigError, ParamSpec


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
    """

    path: Path
    nodes: dict[str, dict[str, Any]]


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


def load_profile(path: str | Path, overrides: dict[str, dict[str, Any]] | None = None) -> Profile:
    """Read and validate a profile.

    Args:
        path: the ROS-params YAML file.
        overrides: node → {param: value} applied over the file (e.g. from the CLI), validated too.

    Returns:
        The validated :class:`Profile`.

    Raises:
        ConfigError: unreadable file, bad YAML, wrong structure, unknown node or parameter,
            wrong type or out-of-range value -- one line naming the file, node and key.
    """
    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: expected a mapping of node names to {{ros__parameters: ...}}")
    overrides = overrides or {}
    nodes: dict[str, dict[str, Any]] = {}
    for node, body in data.items():
        where = f"{path}: {node}"
        if not isinstance(node, str) or node not in NODES:
            close = difflib.get_close_matches(str(node), list(NODES), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known nodes: {', '.join(NODES)}"
            raise ConfigError(f"{path}: {node}: unknown node{hint}")
        if body is None:
            body = {"ros__parameters": {}}
        if not isinstance(body, dict) or set(body) != {"ros__parameters"}:
            raise ConfigError(f"{where}: expected exactly one key 'ros__parameters' under the node name")
        params = body["ros__parameters"] or {}
        if not isinstance(params, dict):
            raise ConfigError(f"{where}.ros__parameters: expected a mapping of parameter names to values")
        params = {**params, **overrides.get(node, {})}
        nodes[node] = load_spec(node).validate(params, where=where)
    for node in overrides:
        if node not in data:
            raise ConfigError(f"override for {node}: that node is not in {path}")
    return Profile(path=path, nodes=nodes)
