"""Shared ROS shell for havln_robot nodes: typed parameters, safe stop, a ``main()`` runner.

Every node subclasses :class:`HavlnNode`, sets ``SPEC`` (its :class:`ParamSpec`) and
overrides :meth:`HavlnNode.safe_stop` if it can move the robot. The same class runs
* under ``ros2 launch`` / ``ros2 run`` (parameters from ``--ros-args --params-file``), via
  :func:`run_node`, and
* in one process under :mod:`havln_robot.bringup` (parameters passed as ``params=``).
"""

from __future__ import annotations

import inspect
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import rclpy
import rclpy.logging
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.exceptions import InvalidParameterTypeException, ParameterException, ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from havln_robot.dds import configure_dds
from havln_robot.geometry import first_non_finite
from havln_robot.motion.obstacles import message_time
from havln_robot.motion.sources import UNKNOWN, Publisher, SourcePins
from havln_robot.params import COMMON_KEYS, QOS_OVERRIDES, ConfigError, ParamSpec, rclpy_param, suggest
from havln_robot.text import terminal_safe

_DROP_LOCK = threading.Lock()

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
        **kwargs: passed to :class:`rclpy.node.Node` (e.g. ``context``, ``namespace``), except
            ``params_files``: the ``--params-file`` names of the command line (:func:`start_node`
            passes them); with ``params=None`` the node refuses to start when none of them has a
            section for its fully qualified name, and refuses unknown parameters.

    Attributes:
        params: the complete, validated parameter dict.

    Raises:
        ConfigError: a parameter has the wrong type or is out of range.
    """

    SPEC: ClassVar[ParamSpec]

    #: Why this node is being stopped, for whoever records it (trial_logger_node closes a running
    #: trial with it): ``"shutdown"``, or ``"node X crashed: ..."`` when a callback of X raised
    #: (set by :class:`havln_robot.bringup.Bringup` on every node, by :func:`run_node` on its own).
    shutdown_reason: str = "shutdown"

    #: Parameters this node reads while it runs (``get_parameter`` after start): ``ros2 param set`` may
    #: change them, checked against ``SPEC`` (type, range, finite). Every other parameter is read once
    #: at start: a change is refused (``successful=False``, saying so), never stored unapplied.
    LIVE_PARAMS: ClassVar[frozenset[str]] = frozenset()

    #: Seconds between two warnings about messages dropped on one topic for one kind of error.
    DROP_WARN_PERIOD_S: ClassVar[float] = 10.0

    def __init__(self, params: dict[str, Any] | None = None, node_name: str | None = None, **kwargs: Any) -> None:
        params_files = list(kwargs.pop("params_files", None) or [])
        overrides = list(kwargs.pop("parameter_overrides", None) or [])
        spec = self.SPEC.by_name()
        if params is not None:
            for k, v in params.items():
                if k == "use_sim_time":
                    overrides.append(Parameter(k, Parameter.Type.BOOL, v))
                elif k in spec and not (isinstance(v, list) and not v):  # [] has no ROS type; default applies
                    overrides.append(Parameter(k, _ROS_TYPES[spec[k].type], v))
                elif k.startswith(QOS_OVERRIDES):
                    overrides.append(Parameter(k, value=v))
        # before Node.__init__: rclpy's TimeSource creates its /clock subscription through ours
        self._pins = SourcePins()
        self._pin_handlers: dict[str, Callable[[str, str, str], None] | None] = {}
        self._pin_timer: Any = None
        try:
            super().__init__(node_name or self.SPEC.node, parameter_overrides=overrides, **kwargs)
        except ParameterException as exc:  # rclpy refused an override of a parameter it declares itself (use_sim_time)
            self._abandon()
            raise ConfigError(self._refused_override(str(exc))) from None
        try:
            if params is None:
                self._check_overrides(params_files)
            self.params: dict[str, Any] = self._declare(params)
        except ConfigError:
            self.destroy_node()
            raise
        # after the declarations (which run the callbacks too): from now on a set_parameters request
        # is refused unless this node applies the new value
        self.add_on_set_parameters_callback(self._check_set_parameters)

    def _abandon(self) -> None:
        """Free what a constructor that rclpy aborted created (its rcl node, the parameter-events publisher)."""
        try:
            while self.publishers:
                self.destroy_publisher(next(iter(self.publishers)))
            self.handle.destroy_when_not_in_use()
        except Exception:  # noqa: BLE001 - best effort: the node is refused either way
            pass

    def _refused_override(self, fallback: str) -> str:
        """One line for the override of a parameter rclpy declares (:data:`~havln_robot.params.COMMON_KEYS`,
        all bool) that it refused: its value, its ROS type and what to write."""
        bad = [(k, p) for k, p in self._parameter_overrides.items() if k in COMMON_KEYS and p.type_ != Parameter.Type.BOOL]
        if not bad:
            return f"{self.get_fully_qualified_name()}: {fallback}"
        name, got = bad[0]
        unquote = " without quotes" if got.type_ == Parameter.Type.STRING else ""  # both rclpy-declared ones are bool
        return f"{self.get_fully_qualified_name()}: {name}: got {got.value!r} of ROS type {got.type_.name}, declared BOOL: write true or false{unquote}"

    def _check_set_parameters(self, changes: list[Parameter]) -> SetParametersResult:
        """The ``set_parameters`` rule of every node: refuse a change it would not apply.

        * ``use_sim_time``: applied by rclpy's time source;
        * a parameter in :attr:`LIVE_PARAMS`: checked as the params file is (``Param.check``: type,
          range, finite, choices, ROS name rules);
        * any other: refused, the reason naming it and saying that it is read at start.
        """
        spec = self.SPEC.by_name()
        fqn = self.get_fully_qualified_name()
        for par in changes:
            name = par.name
            if name == "use_sim_time":
                continue
            if name not in spec:
                return SetParametersResult(
                    successful=False, reason=f"{fqn}: {name}: unknown parameter{suggest(name, spec, list_known=False)}"
                )
            if name not in self.LIVE_PARAMS:
                return SetParametersResult(
                    successful=False,
                    reason=(
                        f"{fqn}: {name} is read once at start, a new value would not be applied: restart the node "
                        "with the new value (edit the params file or pass it with -p / NODE.PARAM=VALUE)"
                    ),
                )
            if par.type_ == Parameter.Type.NOT_SET:
                return SetParametersResult(successful=False, reason=f"{fqn}: {name}: cannot be unset; allowed: {spec[name].allowed()}")
            value = par.value
            if spec[name].type.endswith("_list"):
                value = list(value)
            try:
                spec[name].check(value, fqn, node=self.get_name(), namespace=self.get_namespace())
            except ConfigError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _declare(self, params: dict[str, Any] | None) -> dict[str, Any]:
        """Declare every SPEC parameter (value: ``params``, else the override, else the default); validated dict."""
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
                got = self._parameter_overrides.get(p.name)
                if got is not None:
                    why = f"got {got.value!r} of ROS type {got.type_.name}, declared {_ROS_TYPES[p.type].name}"
                    if p.type == "float" and got.type_ == Parameter.Type.INTEGER:
                        why += f" (write {got.value}.0)"
                else:
                    why = str(exc)
                raise ConfigError(f"{self.get_fully_qualified_name()}: {p.name}: {why}; allowed: {p.allowed()}") from None
            if p.type.endswith("_list"):
                values[p.name] = [] if p.name in getattr(self, "_empty_lists", ()) else list(values[p.name])
        values["use_sim_time"] = bool(self.get_parameter("use_sim_time").value)
        # topic / service names checked as rclpy will check them in this node's namespace: a ConfigError
        # naming the parameter, not an InvalidTopicNameException from the publisher that uses it
        return self.SPEC.validate(values, where=self.get_fully_qualified_name(), namespace=self.get_namespace())

    def _check_overrides(self, params_files: list[str]) -> None:
        """Refuse what the parameter files give this node that it would otherwise ignore silently.

        * a params file with no section for this node's full name (a profile written for the root
          namespace, started under a namespace): the node would run on defaults;
        * a parameter this node does not have (a typo, another node's key under ``/**``);
        * ``[]``/``{}`` (no value) for a scalar parameter; for a list parameter it means the empty list.

        Raises:
            ConfigError: one line naming the file(s) and this node's fully qualified name.
        """
        from havln_robot import rosparams

        self._empty_lists: set[str] = set()
        fqn = self.get_fully_qualified_name()
        if params_files:
            found = False
            for f in params_files:  # read as havln-robot config reads it: the node refuses what the validator refuses
                found = bool(rosparams.matching(rosparams.parse_file(f), fqn)) or found
            if not found:
                raise ConfigError(
                    f"{', '.join(params_files)}: no section for {fqn}: refusing to start on built-in defaults; "
                    f"key it '/**/{self.get_name()}:' (any namespace) or '{fqn}:'"
                )
        spec = self.SPEC.by_name()
        for name, par in list(self._parameter_overrides.items()):
            if rclpy_param(name):
                continue
            if name not in spec:
                raise ConfigError(f"{fqn}: {name}: unknown parameter{suggest(name, spec, list_known=False)}")
            if par.type_ == Parameter.Type.NOT_SET:
                if not spec[name].type.endswith("_list"):
                    raise ConfigError(f"{fqn}: {name}: no value ([] or {{}}); allowed: {spec[name].allowed()}")
                # [] has no ROS type: the list is empty, as written
                del self._parameter_overrides[name]
                self._empty_lists.add(name)

    # --- one bad message never kills a callback -----------------------------------------------------
    def create_subscription(self, msg_type: Any, topic: str, callback: Callable[..., None], *args: Any, **kwargs: Any) -> Any:
        """:meth:`rclpy.node.Node.create_subscription` with ``callback`` guarded (:meth:`_guard`): a
        message it cannot take (a malformed image, cloud, pose array, record...) is dropped with a
        throttled warning naming the topic and the error, instead of killing the node's executor."""
        try:
            resolved = self.resolve_topic_name(topic)
        except Exception:  # noqa: BLE001 - an invalid name is reported by rclpy itself below
            resolved = topic
        # /clock: rclpy's TimeSource subscribes before the node can pin it
        if (resolved in self._pins.watched or resolved == "/clock") and "event_callbacks" not in kwargs:
            from rclpy.event_handler import SubscriptionEventCallbacks

            # a new publisher matching this subscription is looked at now, not at the next poll
            kwargs["event_callbacks"] = SubscriptionEventCallbacks(matched=lambda _info: self._check_sources())
        gated = self._gate(callback, resolved)
        return super().create_subscription(msg_type, topic, self._guard(gated, topic, "message"), *args, **kwargs)

    # --- sources pinned at start ----------------------------------------------------------------------
    #: Seconds between two looks at the publishers of the pinned topics (steady clock: /clock may stall).
    PIN_POLL_S: ClassVar[float] = 0.2

    def pin_source(self, topic: str, on_second: Callable[[str, str, str], None] | None = None) -> str:
        """Bind ``topic`` to its first publisher (:mod:`havln_robot.motion.sources`): while another
        publisher is on it, its messages are refused (one WARN line naming both) and
        ``on_second(topic, first, second)`` is called once per conflict (stop the robot). Call it
        before the topic's ``create_subscription`` so that a new publisher is noticed at once (matched
        event); the publishers are also polled every :attr:`PIN_POLL_S`. Returns the resolved name."""
        name = self.resolve_topic_name(topic)
        self._pins.watch(name)
        self._pin_handlers[name] = on_second
        if self._pin_timer is None:
            from rclpy.clock import Clock, ClockType

            self._pin_timer = self.create_timer(self.PIN_POLL_S, self._check_sources, clock=Clock(clock_type=ClockType.STEADY_TIME))
        return name

    def source_conflicts(self) -> dict[str, str]:
        """Pinned topics refused now -> the line saying why."""
        return dict(self._pins.conflict)

    def _check_sources(self) -> None:
        for name in list(self._pins.watched):
            try:
                infos = self.get_publishers_info_by_topic(name)
            except Exception:  # noqa: BLE001 - the graph is being torn down
                return
            pubs = [
                Publisher(bytes(i.endpoint_gid).hex(), f"{i.node_namespace.rstrip('/')}/{i.node_name}")
                for i in infos
                if not (i.node_name == self.get_name() and i.node_namespace == self.get_namespace())
            ]
            new = name not in self._pins.conflict
            line = self._pins.update(name, pubs)
            before = self._pins.bound.get(name)
            if line is None:
                continue
            if UNKNOWN not in line:  # reported once it names both (discovery names a node a moment later)
                self.get_logger().error(line)
            handler = self._pin_handlers.get(name)
            if handler is not None and new:  # stop at once, named or not
                first = before.label if before is not None else "none"
                others = [p.label for p in pubs if before is None or p.key != before.key]
                handler(name, first, others[0] if others else "?")

    def _gate(self, callback: Callable[..., Any], resolved: str) -> Callable[..., Any]:
        """``callback`` that drops the message while ``resolved`` is a refused pinned topic."""

        def gated(*args: Any) -> Any:
            why = self._pins.refused(resolved)
            if why is not None:
                self.get_logger().warning(f"message refused: {why}", throttle_duration_sec=5.0)
                return None
            return callback(*args)

        try:
            gated.__signature__ = inspect.signature(callback)  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            pass
        return gated

    def create_service(self, srv_type: Any, srv_name: str, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """:meth:`rclpy.node.Node.create_service` with ``callback`` guarded: a request it cannot take is
        answered with the type's default response (``success`` false, ``message`` saying why)."""

        def refused(exc: BaseException, request: Any, response: Any) -> Any:
            if hasattr(response, "message"):
                response.message = f"request refused: {type(exc).__name__}: {terminal_safe(exc)}"[:300]
            return response

        return super().create_service(srv_type, srv_name, self._guard(callback, srv_name, "request", refused), *args, **kwargs)

    def _guard(self, callback: Callable[..., Any], where: str, what: str, fallback: Callable[..., Any] | None = None) -> Callable[..., Any]:
        """``callback`` wrapped so that an exception is a dropped message, never a dead executor.

        The exception is logged as one WARN line without a traceback (class and message, escaped:
        the message may quote the input), at most once per :attr:`DROP_WARN_PERIOD_S` per topic and
        exception class, with the number dropped since. ``fallback(exc, *args)`` gives the return
        value (a service's response); without it the callback returns None. The callback's own
        signature is kept (rclpy binds ``(msg)`` or ``(msg, info)`` by inspecting it).
        """

        def call(*args: Any) -> Any:
            try:
                return callback(*args)
            except Exception as exc:
                self._dropped(where, what, exc)
                return fallback(exc, *args) if fallback is not None else None

        try:
            call.__signature__ = inspect.signature(callback)  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            pass
        return call

    def _dropped(self, where: str, what: str, exc: BaseException) -> None:
        """Count one dropped message / request and warn (throttled per topic and exception class)."""
        key = (where, type(exc).__name__)
        with _DROP_LOCK:
            drops = self.__dict__.setdefault("_drops", {})
            last, n = drops.get(key, (-1e18, 0))
            n += 1
            counts = self.__dict__.setdefault("_drop_counts", {})
            counts[key] = counts.get(key, 0) + 1
            now = time.monotonic()
            if now - last < self.DROP_WARN_PERIOD_S:
                drops[key] = (last, n)
                return
            drops[key] = (now, 0)
        more = f" ({n} dropped since the last warning)" if n > 1 else ""
        text = f"{where}: {what} dropped: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else '(no message)'}"
        self.get_logger().warning(terminal_safe(text[:500]) + more)

    @property
    def dropped_messages(self) -> dict[tuple[str, str], int]:
        """``(topic, exception class) -> count`` of messages dropped since this node started (tests)."""
        return dict(self.__dict__.get("_drop_counts", {}))

    def _now(self) -> float:
        """This node's clock now, s (sim time under ``use_sim_time``)."""
        return self.get_clock().now().nanoseconds * 1e-9

    def _stamp_time(self, stamp: Any, now: float, name: str) -> float:
        """The time (our clock) a message refers to (:func:`havln_robot.motion.obstacles.message_time`):
        its header stamp when on our clock -- also when ahead of it, as under load when /clock
        lags the publisher -- else ``now`` (receipt time; warns once about the clock mismatch).
        A late message keeps its stamp, so the executor sees it as stale."""
        t, on_clock = message_time(stamp.sec + stamp.nanosec * 1e-9, now)
        if not on_clock:
            self._warn_once(
                f"clock-{name}",
                f"{name} stamps are {now - (stamp.sec + stamp.nanosec * 1e-9):+.2f} s off this node's clock; using receipt times "
                "(check use_sim_time / clock sync)",
            )
        return t

    def _non_finite_field(self, topic: str, fields: Iterable[tuple[str, float]], consequence: str = "message dropped") -> str | None:
        """``"field = value"`` of the first non-finite value of a message (:func:`geometry.first_non_finite`),
        warned once per topic and field (``"<topic>: <field> = nan is not finite; <consequence>"``;
        digits are left out of the key, so person 7's x warns as person 3's did); None when all are finite."""
        bad = first_non_finite(fields)
        if bad is not None:
            name = bad.split(" = ", 1)[0]
            self._warn_once(
                f"non-finite-{topic}-{''.join(c for c in name if not c.isdigit())}", f"{topic}: {bad} is not finite; {consequence}"
            )
        return bad

    def _warn_once(self, key: str, text: str) -> None:
        """Log ``text`` as a warning the first time ``key`` is seen (a lasting condition warns once)."""
        warned = self.__dict__.setdefault("_warned", set())
        if key not in warned:
            warned.add(key)
            self.get_logger().warning(text)

    def on_clock_jump_back(self, reset: Callable[[float, float], None]) -> None:
        """Call ``reset(new_t, jump_s)`` when this node's clock jumps backwards.

        With ``use_sim_time`` the ROS clock follows ``/clock``; a Gazebo reset or a bag played in a
        loop sends it back (e.g. from 100 s to 1 s). Every node that keeps time-stamped state
        registers its reset here: abort what is running, forget the stamps, log once (this helper
        logs one WARN line per jump). Uses rclpy's ``Clock.create_jump_callback`` with a
        ``JumpThreshold`` whose ``min_backward`` is negative; it runs in the thread that received
        ``/clock``, this node's executor.

        Args:
            reset: called with the new time (s) and the jump (s, negative).
        """

        def post(jump: Any) -> None:
            dt = jump.delta.nanoseconds * 1e-9
            now = self.get_clock().now().nanoseconds * 1e-9
            self.get_logger().warning(f"clock jumped back {-dt:.3f} s to {now:.3f} s (sim time reset): stopping, time-based state reset")
            reset(now, dt)

        threshold = JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1), on_clock_change=False)
        self._jump_handles = [*getattr(self, "_jump_handles", []), self.get_clock().create_jump_callback(threshold, post_callback=post)]

    def safe_stop(self) -> None:
        """Bring whatever this node commands to a safe stop. Called before shutdown; must not raise.

        Nodes that command motion (motion_node, go2_driver_node, sim_node) publish zero velocity
        or call StopMove here. The default does nothing.
        """


def start_node(node_cls: type[HavlnNode], args: list[str], context: Any = None) -> HavlnNode:
    """Initialise rclpy with a node's command line and create the node, as ``ros2 run``/``ros2 launch`` do.

    ``args`` is the process command line (``[exe, '--ros-args', '-r', '__node:=x', '-r', '__ns:=/go2',
    '--params-file', F, ...]``); the ``--params-file`` names are passed to the node so that it
    refuses a file with no section for it.

    Raises:
        ConfigError: the node refused its parameters (rclpy is left initialised: shut ``context`` down).
    """
    from havln_robot.rosparams import params_files

    try:
        rclpy.init(args=args, context=context, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    except Exception as exc:  # rcl refused the command line (a params file it cannot parse)
        text = str(exc).replace("\n", " ")
        if "param" not in text.lower():
            raise
        raise ConfigError(re.sub(r", at /\S+:\d+", "", text).strip()) from None
    return node_cls(context=context, params_files=params_files(args)) if context is not None else node_cls(params_files=params_files(args))


def run_node(node_cls: type[HavlnNode], args: list[str] | None = None) -> int:
    """Console-script entry: run one node until SIGINT/SIGTERM, then stop it safely.

    A configuration error is one ERROR log line (naming the file, the node's full name and the key)
    and exit code 2.

    Returns:
        Process exit code (0 clean, 2 configuration error).
    """
    configure_dds()
    stop = threading.Event()
    from havln_robot.bringup import install_shutdown_signals

    install_shutdown_signals(stop.set, label=node_cls.SPEC.node)
    try:
        node = start_node(node_cls, list(args if args is not None else sys.argv))
    except ConfigError as exc:
        rclpy.logging.get_logger(node_cls.SPEC.node).error(f"configuration error: {exc}")
        rclpy.try_shutdown()
        return 2
    # One node, callbacks serialised: SingleThreadedExecutor. rclpy 7's MultiThreadedExecutor
    # busy-loops on 100 Hz topics in a mutually exclusive group (see havln_robot.bringup).
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while not stop.is_set() and rclpy.ok():
            try:
                executor.spin_once(timeout_sec=0.1)
            except Exception as exc:  # a timer or other callback raised: the node stops, saying why
                from havln_robot.bringup import crash_reason

                node.shutdown_reason = crash_reason(node.get_name(), exc)
                raise
    finally:
        node.safe_stop()
        for _ in range(3):
            executor.spin_once(timeout_sec=0.02)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
