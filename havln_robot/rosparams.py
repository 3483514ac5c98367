"""ROS 2 parameter files read the way rcl reads them (pure Python, no rclpy import).

``ros2 run``/``ros2 launch`` hand ``--params-file F`` to rcl's ``rcl_yaml_param_parser``; this module
mirrors what that parser accepts and how it types values, so ``havln-robot config`` refuses exactly
what a node started with ``--params-file`` refuses (test/test_rosgraph_params.py loads every shipped
profile and mutated copies through rclpy and through this module and compares).

What rcl does (measured with ros-rcl-yaml-param-parser 9.2.8, Jazzy):

* Top-level keys are node names; nested keys are joined with ``/`` until ``ros__parameters``
  (``go2: {motion_node: {ros__parameters: ...}}`` is the section ``go2/motion_node``). A key that
  does not start with ``/`` is relative to the root namespace: ``motion_node`` matches only
  ``/motion_node``. Wildcards: ``*`` is one namespace token, ``**`` any number of tokens; ``/**``
  is every node, ``/**/motion_node`` a motion_node in any namespace. Name tokens are alphanumerics
  and ``_``, not starting with a digit.
* Every section that matches a node applies, in file order (a later key overrides an earlier one);
  several YAML documents in one file are read in order as one.
* Under ``ros__parameters`` a nested mapping makes a dotted name (``a: {b: 1}`` is ``a.b``).
* Scalars: quoted or ``!!str`` -> string; else ``y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON`` (and the
  ``n/no/false/off`` forms) -> bool; a whole C ``strtol(…, 0)`` (decimal, ``0x`` hex, ``0`` octal) ->
  int64; a whole C ``strtod`` (``1e3``, ``.5``, ``inf``, ``nan``, hex floats, ``.inf``/``.nan``) ->
  double; anything else (``null``, ``~``, ``1_000``, ``2020-01-01``, out-of-range numbers) -> string.
* A key repeated in one mapping: rcl keeps the last; here it is refused naming both lines (the one
  deliberate difference: profiles are read strictly, a repeated key is a mistake).
* A sequence holds one type (``[1, 2.5]`` is refused: write ``[1.0, 2.5]``); ``[]`` and ``{}`` give a
  parameter with no value. An empty value (``a:``), an alias (``*x``) or a sequence used as a key is
  refused.

A node then declares its parameters with typed defaults: rclpy refuses an override whose type
differs from the declared one (``1`` for a float parameter: write ``1.0``).

Why not rclpy's own reader: rcl's parser is reachable from rclpy only by creating a node (the
overrides it is given), and ``rclpy.parameter.parameter_dict_from_yaml_file`` is not that parser
(PyYAML's typing, no section matching). Measured on rclpy 7.1.6 against what a node ``/go2/motion_node``
gets through rcl, 6 of 10 small files differ: ``1_0`` -> 10 (rcl: the string), ``1e3`` -> the string
(rcl: 1000.0), ``null`` -> ``'None'``, a date refused, ``go2: {motion_node: ...}`` refused, and a
``/go2/sim_node`` section applied to motion_node. test/test_rosgraph_params.py starts real nodes
on every case this module is compared with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from havln_robot.params import ConfigError, raw_list, rcl_scalar  # noqa: F401  (re-exported)
from havln_robot.params import RclLoader as _Loader

PARAMS_KEY = "ros__parameters"

_TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\*|\*\*")


class NotSet:
    """A parameter given as ``[]`` or ``{}``: rcl passes it on with no value and no type."""

    def __repr__(self) -> str:
        return "[]"


NOT_SET = NotSet()


def ros_type(value: Any) -> str:
    """ROS parameter type name of a value typed by :func:`rcl_scalar` (or a list of them)."""
    if value is NOT_SET:
        return "not set"
    if isinstance(value, list):
        return ros_type(value[0]) + " array" if value else "not set"
    return {bool: "bool", int: "integer", float: "double", str: "string"}[type(value)]


@dataclass
class Section:
    """One node section of a parameters file.

    Attributes:
        key: the node key as written, nested keys joined by ``/`` (``/**/motion_node``).
        line: 1-based line of the key.
        params: dotted parameter name -> value (bool, int, float, str, a list of one of them, or NOT_SET).
        lines: parameter name -> 1-based line.
    """

    key: str
    line: int
    params: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    @property
    def pattern(self) -> str:
        """The key as an absolute name pattern (a relative key is relative to ``/``)."""
        return self.key if self.key.startswith("/") else "/" + self.key

    @property
    def node_name(self) -> str | None:
        """The node name the key ends in, or None when it ends in a wildcard (``/**``, ``/go2/*``)."""
        last = self.pattern.rsplit("/", 1)[-1]
        return None if last in ("*", "**") else last

    def matches(self, fqn: str) -> bool:
        """Whether this section applies to the node with fully qualified name ``fqn`` (``/go2/motion_node``)."""
        return name_matches(self.pattern, fqn)


def name_matches(pattern: str, fqn: str) -> bool:
    """Match a node key (``/**/motion_node``, ``/*/x``, ``/go2/x``) against a fully qualified node name."""
    parts = [p for p in pattern.split("/") if p]
    rx = "".join("(?:/[^/]+)*" if p == "**" else "/[^/]+" if p == "*" else "/" + re.escape(p) for p in parts)
    return re.fullmatch(rx or "/", fqn) is not None


def node_fqn(name: str, namespace: str = "/") -> str:
    """Fully qualified node name from a name and a namespace (``go2`` or ``/go2``)."""
    ns = "/" + namespace.strip("/") if namespace.strip("/") else ""
    return f"{ns}/{name}"


def _fail(source: str, line: int, what: str) -> ConfigError:
    return ConfigError(f"{source}: line {line}: {what}")


def _scalar(node: yaml.ScalarNode, source: str) -> Any:
    quoted = node.style in ("'", '"', "|", ">") or node.tag == "tag:yaml.org,2002:str"
    if not quoted and node.value == "":
        raise _fail(source, node.start_mark.line + 1, "a key without a value; give one (rcl refuses an empty value)")
    return rcl_scalar(node.value, quoted)


def _flatten_seq(node: yaml.SequenceNode, source: str, name: str) -> list[Any]:
    out: list[Any] = []
    for item in node.value:
        if isinstance(item, yaml.SequenceNode):
            out += _flatten_seq(item, source, name)  # rcl appends a nested sequence's items
        elif isinstance(item, yaml.MappingNode):
            raise _fail(source, item.start_mark.line + 1, f"{name}: a mapping inside a list is not a ROS parameter value")
        else:
            out.append(_scalar(item, source))
    return out


def _params(node: yaml.MappingNode, prefix: str, section: Section, source: str) -> None:
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            raise _fail(source, k.start_mark.line + 1, "a list or mapping cannot be a parameter name")
        name = prefix + k.value
        line = k.start_mark.line + 1
        if isinstance(v, yaml.MappingNode):
            if not v.value:
                section.params[name], section.lines[name] = NOT_SET, line
            _params(v, name + ".", section, source)
        elif isinstance(v, yaml.SequenceNode):
            items = _flatten_seq(v, source, name)
            kinds = {ros_type(x) for x in items}
            if len(kinds) > 1:
                raise _fail(
                    source,
                    line,
                    f"{name}: a list must hold one type, got {' and '.join(sorted(kinds))} ({items!r}; write floats as 1.0, quote strings)",
                )
            section.params[name], section.lines[name] = (items or NOT_SET), line
        else:
            section.params[name], section.lines[name] = _scalar(v, source), line


def _check_key(key: str, source: str, line: int) -> None:
    parts = key.split("/")
    for i, tok in enumerate(parts):
        if tok == "" and i in (0,):
            continue
        if tok == "":
            raise _fail(source, line, f"{key}: empty name token (repeated or trailing '/')")
        if not _TOKEN_RE.fullmatch(tok):
            raise _fail(
                source,
                line,
                f"{key}: '{tok}' is not a ROS name token (letters, digits and '_', not starting with a digit; or the wildcards * and **)",
            )


def _sections(node: yaml.Node, prefix: str, out: list[Section], source: str) -> None:
    if not isinstance(node, yaml.MappingNode):
        raise _fail(source, node.start_mark.line + 1, f"{prefix or 'top level'}: expected a mapping of node names to ros__parameters")
    has_params = any(isinstance(k, yaml.ScalarNode) and k.value == PARAMS_KEY for k, _ in node.value)
    for k, v in node.value:
        line = k.start_mark.line + 1
        if not isinstance(k, yaml.ScalarNode):
            raise _fail(source, line, "a list or mapping cannot be a node name")
        if k.value == PARAMS_KEY:
            if not prefix:
                raise _fail(source, line, "ros__parameters must be under a node name (e.g. '/**/motion_node:')")
            if not isinstance(v, yaml.MappingNode):
                raise _fail(source, line, f"{prefix}: ros__parameters must be a mapping of parameter names to values ({{}} for none)")
            sec = Section(prefix, line)
            _params(v, "", sec, source)
            out.append(sec)
        else:
            if has_params:
                raise _fail(source, line, f"{prefix}: '{k.value}' next to ros__parameters; a node key holds only ros__parameters")
            key = f"{prefix}/{k.value}" if prefix else k.value
            _check_key(key, source, line)
            if not isinstance(v, yaml.MappingNode) or not v.value:
                raise _fail(source, line, f"{key}: expected exactly one key 'ros__parameters' under the node name")
            _sections(v, key, out, source)


def _check_duplicates(node: yaml.Node, source: str) -> None:
    """Refuse a mapping with the same key twice (rcl keeps the last one silently; havln_robot reads
    profiles strictly: a repeated key is a mistake), naming both lines."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                line = k.start_mark.line + 1
                if k.value in seen:
                    raise _fail(source, line, f"duplicate key {k.value!r}, first at line {seen[k.value]}; keep one of them")
                seen[k.value] = line
            _check_duplicates(v, source)
    elif isinstance(node, yaml.SequenceNode):
        for v in node.value:
            _check_duplicates(v, source)


def parse_text(text: str, source: str = "<params>") -> list[Section]:
    """Parse a ROS 2 parameters file's text as rcl does; sections in file order.

    One deliberate difference: a key repeated in one mapping is refused (rcl keeps the last one).

    Raises:
        ConfigError: what rcl refuses, one line naming ``source``, the line and the key.
    """
    try:
        for ev in yaml.parse(text, Loader=_Loader):
            if isinstance(ev, yaml.AliasEvent):
                raise _fail(source, ev.start_mark.line + 1, "YAML aliases (*name) are not supported by ROS parameter files")
        docs = list(yaml.compose_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1} column {mark.column + 1}:" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{source}:{where} invalid YAML ({problem})") from None
    out: list[Section] = []
    for doc in docs:
        if doc is None or (isinstance(doc, yaml.ScalarNode) and doc.value == ""):
            continue
        _check_duplicates(doc, source)
        _sections(doc, "", out, source)
    return out


def parse_file(path: str | Path) -> list[Section]:
    """Read and parse a parameters file (:func:`parse_text`); unreadable files are one-line ConfigErrors."""
    from havln_robot.yamlio import YamlFileError, read_text_capped

    path = Path(path)
    try:
        text = read_text_capped(path)  # at most 1 MiB + 1 byte is read (a symlink to /dev/zero cannot eat memory)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; profiles live in config/ (go2.yaml, sim.yaml, gazebo.yaml)") from None
    except YamlFileError as exc:
        raise ConfigError(str(exc)) from None
    return parse_text(text, str(path))


def matching(sections: Iterable[Section], fqn: str) -> list[Section]:
    """The sections that apply to node ``fqn``, in the order they are applied."""
    return [s for s in sections if s.matches(fqn)]


def merged(sections: Iterable[Section]) -> dict[str, Any]:
    """Parameters of several sections merged in order (a later section overrides a key)."""
    out: dict[str, Any] = {}
    for s in sections:
        out.update(s.params)
    return out


def node_params(node: str, path: str | Path | None = None) -> dict[str, Any]:
    """A node's parameters in a profile (``path``, default config/sim.yaml), its matching sections
    merged in order (what ``--params-file`` gives ``/node``; the node's own defaults are not added).

    Raises:
        ConfigError: the file cannot be read (one line naming it).
    """
    from havln_robot.paths import config_dir

    return merged(matching(parse_file(path if path is not None else config_dir() / "sim.yaml"), node_fqn(node)))


def params_files(args: Sequence[str]) -> list[str]:
    """The ``--params-file F`` arguments inside ``--ros-args`` … ``--`` blocks of a command line."""
    out: list[str] = []
    in_ros = False
    it = iter(range(len(args)))
    for i in it:
        a = args[i]
        if a == "--ros-args":
            in_ros = True
        elif a == "--":
            in_ros = False
        elif in_ros and a == "--params-file" and i + 1 < len(args):
            out.append(args[i + 1])
            next(it, None)
    return out
