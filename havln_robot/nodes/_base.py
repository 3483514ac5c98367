"""Shared ROS shell for havln_robot nodes: typed parameters, safe stop, a ``main()`` runner.

Every node subclasses :class:`HavlnNode`, sets ``SPEC`` (its :class:`ParamSpec`) and
overrides :meth:`HavlnNode.safe_stop` if it can move the robot. The same class runs
* under ``ros2 launch`` / ``ros2 run`` (parameters from ``--ros-args --params-file``), via
  :func:`run_node`, and
* in one process under :mod:`havln_robot.bringup` (parameters passed as ``params=``).
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any, ClassVar

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, ParameterException, ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from havln_robot.dds import configure_dds
from havln_robot.params import ConfigError, ParamSpec

_ROS_TYPES = {
    "bool": Parameter.Type.BOOL,
    "int": Parameter.Type.INTEGER,
    "float": Parameter.Type.DOUBLE,
    "str": Parameter.Type.STRING,
    "float_list": Parameter.Type.DOUBLE_ARRAY,
    "int_list": Parameter.Type.INTEGER_ARRAY,
    "str_list": Parameter.Type.STRING_ARRAY,
}


class HavlnNode(Node):
    """Base class: declares and validates the node's parameters from ``SPEC``.

    Args:
        params: validated parameter dict (from :func:`havln_robot.config.load_profile`); when
            ``None`` the values come from the ROS parameter overrides (``--params-file``).
        node_name: ROS node name; defaults to ``SPEC.node``.
        **kwargs: passed to :class:`rclpy.node.Node` (e.g. ``context``).

    Attributes:
        params: the complete, validated parameter dict.

    Raises:
        ConfigError: a parameter has the wrong type or is out of range.
    """

    SPEC: ClassVar[ParamSpec]

    def __init__(self, params: dict[str, Any] | None = None, node_name: str | None = None, **kwargs: Any) -> None:
        overrides = list(kwargs.pop("parameter_overrides", None) or [])
        spec = self.SPEC.by_name()
        if params is not None:
            for k, v in params.items():
                if k == "use_sim_time":
                    overrides.append(Parameter(k, Parameter.Type.BOOL, v))
                elif k in spec and not (isinstance(v, list) and not v):  # [] has no ROS type; default applies
                    overrides.append(Parameter(k, _ROS_TYPES[spec[k].type], v))
        super().__init__(node_name or self.SPEC.node, parameter_overrides=overrides, **kwargs)
        values: dict[str, Any] = {}
        for p in self.SPEC.params:
            desc = ParameterDescriptor(description=f"{p.description} (allowed: {p.allowed()})")
            default = params.get(p.name, p.default) if params is not None else p.default
            try:
                if p.type.endswith("_list") and not default:
                    self.declare_parameter(p.name, _ROS_TYPES[p.type], desc)
                    try:
                        values[p.name] = self.get_parameter(p.name).value
                    except ParameterUninitializedException:
                        values[p.name] = default
                else:
                    values[p.name] = self.declare_parameter(p.name, default, desc).value
            except (InvalidParameterTypeException, ParameterException) as exc:
                raise ConfigError(f"{self.get_name()}: {p.name}: {exc}; allowed: {p.allowed()}") from None
            if p.type.endswith("_list"):
                values[p.name] = list(values[p.name])
        values["use_sim_time"] = bool(self.get_parameter("use_sim_time").value)
        self.params: dict[str, Any] = self.SPEC.validate(values, where=self.get_name())

    def safe_stop(self) -> None:
        """Bring whatever this node commands to a safe stop. Called before shutdown; must not raise.

        Nodes that command motion (motion_node, go2_driver_node, sim_node) publish zero velocity
        or call StopMove here. The default does nothing.
        """


def run_node(node_cls: type[HavlnNode], args: list[str] | None = None) -> int:
    """Console-script entry: run one node until SIGINT/SIGTERM, then stop it safely.

    Returns:
        Process exit code (0 clean, 2 configuration error).
    """
    configure_dds()
    rclpy.init(args=args if args is not None else sys.argv, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        node = node_cls()
    except ConfigError as exc:
        print(f"{node_cls.SPEC.node}: configuration error: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    # One node, callbacks serialised: SingleThreadedExecutor. rclpy 7's MultiThreadedExecutor
    # busy-loops on 100 Hz topics in a mutually exclusive group (see havln_robot.bringup).
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    finally:
        node.safe_stop()
        for _ in range(3):
            executor.spin_once(timeout_sec=0.02)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
