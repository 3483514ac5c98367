"""Typed, range-checked node parameters (pure Python, no ROS import).

Every node declares its tunables once as a :class:`ParamSpec`; the same spec
* fills the ROS parameter declarations (defaults, descriptions),
* validates a deployment profile (``config/*.yaml``) before any node starts, and
* validates the values a node actually received under ``ros2 launch``.

A wrong key, wrong type or out-of-range value raises :class:`ConfigError` whose message
names the file, node, key, what was given and what is allowed -- one line, no traceback.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from havln_robot import rosnames

#: Parameters every ROS 2 node accepts (rclpy declares both itself), bool.
COMMON_KEYS = frozenset({"use_sim_time", "start_type_description_service"})
#: Names under this prefix are QoS overrides (``qos_overrides./parameter_events.publisher.depth``, as
#: ``ros2 param dump`` on Humble writes them): handed to rclpy unchecked, which applies them to a
#: publisher or subscription created with QoS overriding options and ignores the others.
QOS_OVERRIDES = "qos_overrides."


def rclpy_param(name: str) -> bool:
    """Whether rclpy itself, not the node's ParamSpec, owns parameter ``name`` (:data:`COMMON_KEYS`,
    :data:`QOS_OVERRIDES`)."""
    return name in COMMON_KEYS or name.startswith(QOS_OVERRIDES)


_TYPES = {"bool": bool, "int": int, "float": float, "str": str, "float_list": list, "str_list": list, "int_list": list}


# --- ROS parameter typing as rcl's YAML parser does it (havln_robot.rosparams reads whole files) ---

_TRUE = frozenset("Y y yes Yes YES true True TRUE on On ON".split())
_FALSE = frozenset("N n no No NO false False FALSE off Off OFF".split())
_INT_RE = re.compile(r"[ \t\n\v\f\r]*[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_DEC_FLOAT_RE = re.compile(r"[ \t\n\v\f\r]*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_HEX_FLOAT_RE = re.compile(r"[ \t\n\v\f\r]*([+-]?)0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?\d+)?")
_SPECIAL_FLOAT_RE = re.compile(r"[ \t\n\v\f\r]*([+-]?)(inf|infinity|nan(\([0-9A-Za-z_]*\))?)", re.IGNORECASE)
_YAML_SPECIAL = {".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan}
_YAML_SPECIAL.update({f"{s}{i}": (-math.inf if s == "-" else math.inf) for s in ("", "-") for i in (".inf", ".Inf", ".INF")})
_INT64 = (-(2**63), 2**63 - 1)


def _strtod(text: str) -> float | None:
    """The value of ``text`` when C ``strtod`` consumes all of it without a range error, else None."""
    m = _SPECIAL_FLOAT_RE.fullmatch(text)
    if m:
        v = math.nan if m.group(2).lower().startswith("nan") else math.inf
        return -v if m.group(1) == "-" else v
    m = _HEX_FLOAT_RE.fullmatch(text)
    if m:
        mant, exp = m.group(2), m.group(3)
        try:
            v = float.fromhex(("-" if m.group(1) == "-" else "") + "0x" + (mant if mant[0] != "." else "0" + mant) + (exp or "p0"))
        except OverflowError:
            return None
        return v
    if _DEC_FLOAT_RE.fullmatch(text):
        v = float(text)
        if math.isinf(v):
            return None  # ERANGE (overflow)
        if abs(v) < 2.2250738585072014e-308 and re.search(r"[1-9]", text.split("e")[0].split("E")[0]):
            return None  # ERANGE (underflow to a subnormal or zero)
        return v
    return None


def rcl_scalar(text: str, quoted: bool = False) -> bool | int | float | str:
    """Type one YAML scalar as rcl does (see the module docstring).

    Args:
        text: the scalar as written (without quotes).
        quoted: it was single- or double-quoted, a block scalar or tagged ``!!str``.
    """
    if quoted:
        return text
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT_RE.fullmatch(text):
        v = int(text.strip(), 0) if not re.fullmatch(r"\s*[+-]?0[0-7]+", text) else int(text.strip().replace("0", "0o", 1), 0)
        if _INT64[0] <= v <= _INT64[1]:
            return v
    if text in _YAML_SPECIAL:
        return _YAML_SPECIAL[text]
    v = _strtod(text)
    if v is not None:
        return v
    return text


class RclLoader(yaml.SafeLoader):
    """Composes nodes without resolving plain scalars (rcl types them itself)."""

    def resolve(self, kind, value, implicit):  # noqa: ANN001 - PyYAML signature
        if kind is yaml.ScalarNode and implicit[0]:
            return "?plain"
        return super().resolve(kind, value, implicit)


def raw_list(text: str) -> list[tuple[str, bool]]:
    """The items of a flow list written on a command line (``[a, 'b c', 3]``) as ``(text, quoted)``.

    Raises:
        ValueError: ``text`` is not a YAML list of scalars.
    """
    try:
        node = yaml.compose(text, Loader=RclLoader)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(node, yaml.SequenceNode) or not all(isinstance(i, yaml.ScalarNode) for i in node.value):
        raise ValueError(f"{text!r} is not a list")
    return [(i.value, i.style in ("'", '"', "|", ">") or i.tag == "tag:yaml.org,2002:str") for i in node.value]


#: What a ``str`` parameter can name (:attr:`Param.ros_name`), each checked with ROS's own rules
#: (:mod:`havln_robot.rosnames`): a topic, a service (or a prefix of services), a tf2 frame id, a
#: node (a node name, optionally with its namespace: ``/go2/trial_logger_node``).
ROS_NAME_KINDS = ("topic", "service", "frame", "node")


def ros_name_kind(param_name: str) -> str | None:
    """The kind of ROS name a ``str`` parameter holds, by the end of its name: ``*_topic`` a topic,
    ``*_service`` a service, ``*_frame`` / ``*_frame_id`` a frame id; None for other parameters."""
    if param_name.endswith("_topic"):
        return "topic"
    if param_name.endswith("_service"):
        return "service"
    if param_name.endswith(("_frame", "_frame_id")):
        return "frame"
    return None


def ros_name_error(kind: str, value: str, node: str = "node", namespace: str = "/") -> str | None:
    """What ROS refuses in ``value`` used as a name of ``kind`` (:data:`ROS_NAME_KINDS`) by node
    ``node`` in ``namespace`` (topics and services are expanded there, as rclpy does), or None."""
    if kind in ("topic", "service"):
        return rosnames.topic_error(value, node, namespace)
    if kind == "frame":
        return rosnames.frame_id_error(value)
    if kind == "node":  # a node, maybe with its namespace: its services are /<value>/<service>
        path = "/" + value.strip("/")
        ns, _, name = path.rpartition("/")
        why = rosnames.node_name_error(name) or rosnames.namespace_error(ns or "/")
        return None if why is None else f"not a node name (optionally with its namespace, e.g. /go2/{name or 'node'}): {why}"
    raise ValueError(f"unknown ROS name kind {kind!r}; one of {', '.join(ROS_NAME_KINDS)}")


class ConfigError(ValueError):
    """A configuration value is missing, unknown, of the wrong type or out of range."""


class Raw(str):
    """A value typed as text (``--set node.param=value``): coerced to the parameter's declared type.

    ``--set sim_node.episode_id=6047`` gives the string ``"6047"``; ``--set motion_node.max_linear_speed=1``
    the float ``1.0``; lists are written ``[a, b]``.
    """


@dataclass(frozen=True)
class Param:
    """One node parameter.

    Attributes:
        name: ROS parameter name (``snake_case``; dots allowed for namespaces).
        default: default value; its type must match ``type``.
        type: one of ``bool``, ``int``, ``float``, ``str``, ``float_list``, ``int_list``, ``str_list``.
        description: what it does, with its unit (SI: m, rad, s, Hz unless stated).
        min, max: inclusive numeric bounds (for lists: bounds of each element).
        choices: allowed values for ``str`` parameters (or each element of ``str_list``).
        min_len, max_len: bounds on list length.
        ros_name: what a ``str`` parameter names, checked with ROS's rules (one of
            :data:`ROS_NAME_KINDS`): ``"auto"`` (default) takes it from the end of the parameter's
            name (:func:`ros_name_kind`; not for one with ``choices``), ``""`` says it is no ROS
            name (free text, a path, a vendor's DDS topic).
        optional: a ROS name may be ``""`` (the feature is off: no LiDAR cloud, no tracks topic).
    """

    name: str
    default: Any
    type: str
    description: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    min_len: int | None = None
    max_len: int | None = None
    ros_name: str = "auto"
    optional: bool = False

    def __post_init__(self) -> None:
        if self.type not in _TYPES:
            raise TypeError(f"Param {self.name}: unknown type {self.type!r}")
        if self.ros_name not in ("auto", "", *ROS_NAME_KINDS):
            raise TypeError(f"Param {self.name}: ros_name {self.ros_name!r} is not 'auto', '' or one of {ROS_NAME_KINDS}")
        # Defaults must satisfy their own spec; a bad default is a programming error.
        self.check(self.default, where="default")

    @property
    def name_kind(self) -> str | None:
        """The kind of ROS name this parameter holds (:data:`ROS_NAME_KINDS`), or None."""
        if self.type != "str" or self.choices:
            return None
        return ros_name_kind(self.name) if self.ros_name == "auto" else (self.ros_name or None)

    def allowed(self) -> str:
        """Human-readable description of the allowed values."""
        if self.name_kind == "frame":
            return "a tf2 frame id (not empty, no leading '/', no spaces), e.g. base_link"
        if self.name_kind:
            return (
                f"a ROS {self.name_kind} name{' or empty (none)' if self.optional else ''}: ASCII letters, digits, '_', "
                f"'/' between tokens, no token starting with a digit, e.g. {self.default or 'havln/people'} ({rosnames.RULES_URL})"
            )
        parts = [self.type.replace("_", " ")]
        if self.choices:
            parts.append("one of " + ", ".join(repr(c) for c in self.choices))
        if self.min is not None or self.max is not None:
            lo = "-inf" if self.min is None else f"{self.min:g}"
            hi = "inf" if self.max is None else f"{self.max:g}"
            parts.append(f"in [{lo}, {hi}]")
        if self.min_len is not None or self.max_len is not None:
            parts.append(f"length {self.min_len or 0}..{self.max_len if self.max_len is not None else 'any'}")
        return " ".join(parts)

    def coerce(self, raw: str, where: str = "") -> Any:
        """Convert command-line text to this parameter's type (str parameters take the text as is).

        Raises:
            ConfigError: the text is not a value of the declared type (one line naming the key).
        """
        prefix = f"{where + ': ' if where else ''}{self.name}"
        text = str(raw).strip()
        quoted = len(text) >= 2 and text[0] == text[-1] and text[0] in "'\""

        def one(t: str, q: bool, kind: str) -> Any:
            if kind == "str":
                return t
            v = rcl_scalar(t, q)
            if kind == "float" and isinstance(v, int) and not isinstance(v, bool):
                return float(v)
            if kind == "bool" and not isinstance(v, bool):
                raise ConfigError(f"{prefix}: {t!r} is not true/false; allowed: {self.allowed()}")
            return v

        if self.type.endswith("_list"):
            try:
                items = raw_list(text)
            except ValueError:
                raise ConfigError(f"{prefix}: {text!r} is not a list; write [a, b]; allowed: {self.allowed()}") from None
            return [one(t, q, self.type[:-5]) for t, q in items]
        if quoted:
            text, quoted = text[1:-1], True
        return one(text, quoted, self.type)

    def check(self, value: Any, where: str = "", strict: bool = False, node: str = "node", namespace: str = "/") -> Any:
        """Return ``value`` converted to the parameter type.

        Args:
            value: the value; a :class:`Raw` is first coerced to the declared type.
            where: context for messages (file, node).
            strict: types as ROS checks them for ``--params-file`` values: an integer for a float
                parameter is refused (rclpy refuses an INTEGER override of a DOUBLE parameter).
                Not strict, an int is promoted to float.
            node: the node that uses the value: a topic or service name (:attr:`name_kind`) is
                checked as rclpy checks it for that node, expanded.
            namespace: the node's (absolute) namespace, for the same expansion.

        Raises:
            ConfigError: wrong type or out of range; the message names the key and the allowed values.
        """
        prefix = f"{where + ': ' if where else ''}{self.name}"
        if isinstance(value, Raw):
            value = self.coerce(value, where)
            strict = False

        def bad(why: str) -> ConfigError:
            return ConfigError(f"{prefix}: {why}; allowed: {self.allowed()}")

        def scalar(v: Any, t: str) -> Any:
            if t == "bool":
                if not isinstance(v, bool):
                    raise bad(f"expected true/false, got {v!r}")
                return v
            if t == "int":
                if isinstance(v, float) and math.isfinite(v) and v == int(v) and abs(v) >= 2**63:
                    # rcl reads a whole number past int64 as a double: it is out of range, not "not an integer"
                    raise bad(f"{v:.6g} is out of range: ROS integers are 64-bit, from {_INT64[0]} to {_INT64[1]}")
                if isinstance(v, bool) or not isinstance(v, int):
                    raise bad(f"expected an integer, got {v!r}")
            elif t == "float":
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise bad(f"expected a number, got {v!r}")
                if strict and isinstance(v, int):
                    raise bad(f"expected a float, got the integer {v!r} (ROS refuses an integer for a double parameter: write {v}.0)")
                v = float(v)
                if not math.isfinite(v):
                    raise bad(f"expected a finite number, got {v!r}")
            elif t == "str":
                if not isinstance(v, str):
                    raise bad(f"expected a string, got {v!r}")
                if self.choices is not None and v not in self.choices:
                    raise bad(f"{v!r} is not allowed")
                kind = self.name_kind
                if kind and not (self.optional and v == ""):
                    why = ros_name_error(kind, v, node, namespace)
                    if why is not None:
                        raise bad(f"{v!r} is not a valid {'tf2 frame id' if kind == 'frame' else f'ROS {kind} name'}: {why}")
                return v
            if (self.min is not None and v < self.min) or (self.max is not None and v > self.max):
                raise bad(f"{v!r} is out of range")
            return v

        if self.type.endswith("_list"):
            if not isinstance(value, (list, tuple)):
                raise bad(f"expected a list, got {value!r}")
            n = len(value)
            if (self.min_len is not None and n < self.min_len) or (self.max_len is not None and n > self.max_len):
                raise bad(f"list of length {n}")
            return [scalar(v, self.type[:-5]) for v in value]
        return scalar(value, self.type)


@dataclass(frozen=True)
class ParamSpec:
    """All parameters of one node.

    Attributes:
        node: default ROS node name (also the top-level key in the profile YAML).
        params: the parameters, names unique.
    """

    node: str
    params: tuple[Param, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        names = [p.name for p in self.params]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise TypeError(f"ParamSpec {self.node}: duplicate parameters {sorted(dup)}")

    def by_name(self) -> dict[str, Param]:
        return {p.name: p for p in self.params}

    def range(self, name: str) -> tuple[float, float]:
        """The (min, max) of numeric parameter ``name``, for options that must take what the node takes.

        Raises:
            KeyError: no such parameter; ValueError: it has no min or max.
        """
        p = self.by_name()[name]
        if p.min is None or p.max is None:
            raise ValueError(f"{self.node}.{name} has no range")
        return float(p.min), float(p.max)

    def arg_type(self, name: str, unit: str = "") -> Callable[[str], Any]:
        """argparse ``type=`` for a command-line option that sets numeric parameter ``name``: the
        parameter's type and range (:func:`havln_robot.text.number_in`), so the option takes what
        the node takes.

        Raises:
            KeyError: no such parameter; ValueError: it is not an int or float.
        """
        from havln_robot.text import number_in

        p = self.by_name()[name]
        if p.type not in ("int", "float"):
            raise ValueError(f"{self.node}.{name} is a {p.type}, not a number")
        return number_in(p.min, p.max, integer=p.type == "int", unit=unit)

    def defaults(self) -> dict[str, Any]:
        """Mapping of every parameter to its default value."""
        return {p.name: p.default for p in self.params}

    def validate(self, values: Mapping[str, Any], where: str = "", strict: bool = False, namespace: str = "/") -> dict[str, Any]:
        """Merge ``values`` over the defaults and check each one.

        Args:
            values: parameter name → value (e.g. a node's ``ros__parameters`` mapping).
            where: context for messages, e.g. ``"config/sim.yaml: motion_node"``.
            strict: ROS's type rules (see :meth:`Param.check`).
            namespace: the absolute namespace the node runs in: topic and service names are
                checked expanded there (``/`` by default).

        Returns:
            A complete, type-converted parameter dict (``use_sim_time`` passed through).

        Raises:
            ConfigError: unknown key (with a close-match suggestion), wrong type, out of range.
        """
        spec = self.by_name()
        out = self.defaults()
        for key, value in values.items():
            if key.startswith(QOS_OVERRIDES):
                out[key] = value
                continue
            if key in COMMON_KEYS:
                if isinstance(value, Raw) and value.strip() in ("true", "false"):
                    value = value.strip() == "true"
                if not isinstance(value, bool):
                    quoted = " (quoted, it is a string: write true or false without quotes)" if type(value) is str else ""
                    raise ConfigError(f"{where + ': ' if where else ''}{key}: expected true/false, got {value!r}{quoted}")
                out[key] = value
                continue
            if key not in spec:
                raise ConfigError(f"{where + ': ' if where else ''}{key}: unknown parameter{suggest(key, spec)}")
            out[key] = spec[key].check(value, where, strict=strict, node=self.node, namespace=namespace)
        return out


#: Parameters renamed since a release: old name -> new name (a profile still holding the old one is
#: told the new one; changelog).
RENAMED = {"cloud_topic": "lidar_topic", "mcap_camera_x_m": "camera_x_m", "camera_forward_m": "camera_x_m", "camera_height_m": "camera_z_m"}


def suggest(key: str, names: Iterable[str], list_known: bool = True) -> str:
    """``"; did you mean 'x'?"`` for an unknown parameter ``key`` (``"; renamed 'x'"`` for a
    :data:`RENAMED` one); without a close match the known names (``list_known``) or nothing."""
    names = sorted(names)
    if RENAMED.get(key) in names:
        return f"; it is now called '{RENAMED[key]}' (same meaning)"
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    if close:
        return f"; did you mean '{close[0]}'?"
    if not list_known:
        return ""
    return f"; known parameters: {', '.join(names)}" if names else "; this node takes no parameters"
