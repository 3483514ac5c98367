"""Start a profile's nodes in one process -- ``havln-robot launch config/sim.yaml``.

For machines without ``ros2 launch`` (ROS 2 from pip wheels). The nodes are the same classes
the launch files start; they share one rclpy context and a MultiThreadedExecutor, and talk
over DDS on loopback exactly as separate processes would.

Shutdown (SIGINT, SIGTERM, ``--duration`` elapsed, or :meth:`Bringup.stop`): every node's
``safe_stop()`` runs first (zero ``cmd_vel``, StopMove), the executor spins briefly so those
messages leave, then nodes are destroyed and the context shut down.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import yaml

from havln_robot.config import NODES, ConfigError, Profile, load_profile
from havln_robot.dds import configure_dds


class Bringup:
    """The running nodes of one profile.

    Args:
        profile: a validated :class:`~havln_robot.config.Profile`.
        log: where status lines go (default: stderr).

    Attributes:
        nodes: node name → node instance, for the nodes that started.
        skipped: node name → reason, for nodes not built in this checkout.
    """

    def __init__(self, profile: Profile, log: Callable[[str], None] | None = None) -> None:
        self.profile = profile
        self.log = log or (lambda s: print(s, file=sys.stderr, flush=True))
        self.nodes: dict[str, Any] = {}
        self.skipped: dict[str, str] = dict(profile.not_built)
        self._stop = threading.Event()
        self._executor = None
        self._context = None

    def start(self) -> Bringup:
        """Initialise rclpy (own context, no rclpy signal handlers) and create every node.

        Raises:
            ConfigError: a node rejected its parameters (nothing is left running).
        """
        import rclpy
        from rclpy.executors import MultiThreadedExecutor

        configure_dds()
        self._context = rclpy.Context()
        rclpy.init(context=self._context, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
        self._executor = MultiThreadedExecutor(context=self._context)
        for name, reason in self.skipped.items():
            self.log(f"[bringup] {name}: {reason}; skipping it")
        try:
            for name, params in self.profile.nodes.items():
                mod_name = NODES[name][0]
                try:
                    mod = importlib.import_module(mod_name)
                except ModuleNotFoundError as exc:
                    if exc.name and mod_name.startswith(exc.name):
                        self.skipped[name] = f"not built yet ({mod_name} is missing)"
                        self.log(f"[bringup] {name}: {self.skipped[name]}; skipping it")
                        continue
                    raise
                node = mod.NODE_CLASS(params=params, context=self._context)
                self.nodes[name] = node
                self._executor.add_node(node)
                self.log(f"[bringup] started {name}")
        except Exception:
            self.shutdown()
            raise
        return self

    @property
    def context(self):
        """The rclpy Context the nodes run in (``None`` before :meth:`start` / after :meth:`shutdown`)."""
        return self._context

    def add_node(self, node: Any, name: str | None = None) -> None:
        """Spin an extra node (created with ``context=self.context``) with the profile's nodes.

        It is safe-stopped (if it has ``safe_stop``) and destroyed by :meth:`shutdown` like the others.
        """
        self.nodes[name or node.get_name()] = node
        self._executor.add_node(node)

    def spin_until(self, done: Callable[[], bool] | None = None, timeout: float | None = None) -> str:
        """Spin until ``done()`` is true, ``timeout`` s pass, or :meth:`stop` is called.

        Returns:
            ``"done"``, ``"timeout"`` or ``"stopped"``.
        """
        import rclpy

        t_end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._stop.is_set() or not rclpy.ok(context=self._context):
                return "stopped"
            if done is not None and done():
                return "done"
            if t_end is not None and time.monotonic() >= t_end:
                return "timeout"
            self._executor.spin_once(timeout_sec=0.05)

    def stop(self) -> None:
        """Ask :meth:`spin_until` to return (safe to call from a signal handler)."""
        self._stop.set()

    def shutdown(self) -> None:
        """Safe-stop every node, flush, destroy nodes, shut the context down. Idempotent."""
        import rclpy

        if self._context is None:
            return
        for name, node in self.nodes.items():
            try:
                if hasattr(node, "safe_stop"):
                    node.safe_stop()
            except Exception as exc:  # a failing safe_stop must not prevent the others
                self.log(f"[bringup] {name}: safe_stop failed: {exc}")
        if self._executor is not None:
            t_end = time.monotonic() + 0.2
            while time.monotonic() < t_end:
                self._executor.spin_once(timeout_sec=0.02)
            # Let callbacks already handed to the thread pool finish and be collected before the
            # executor destroys its guard conditions (rclpy 7 would otherwise run a queued guard
            # task on a destroyed handle and print "exception was never retrieved").
            t_end = time.monotonic() + 1.0
            while getattr(self._executor, "_futures", None) and time.monotonic() < t_end:
                self._executor.spin_once(timeout_sec=0.0)
                time.sleep(0.005)
            self._executor.shutdown()
        for node in self.nodes.values():
            node.destroy_node()
        self.nodes.clear()
        rclpy.try_shutdown(context=self._context)
        self._context = None
        self.log("[bringup] all nodes stopped")


def parse_set(items: list[str]) -> dict[str, dict[str, Any]]:
    """Parse ``--set node.param=value`` items (value parsed as YAML).

    Raises:
        ConfigError: an item is not of the form node.param=value.
    """
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        node, dot, param = key.partition(".")
        if not sep or not dot or not node or not param:
            raise ConfigError(f"--set {item!r}: expected NODE.PARAM=VALUE, e.g. motion_node.max_linear_speed=0.3")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        out.setdefault(node, {})[param] = value
    return out


def main(argv: list[str] | None = None) -> int:
    """``havln-robot launch PROFILE [--set node.param=value ...] [--duration S]``."""
    ap = argparse.ArgumentParser(prog="havln-robot launch", description="Start a profile's nodes in one process.")
    ap.add_argument("profile", help="ROS-params YAML, e.g. config/sim.yaml")
    ap.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE", help="override a parameter")
    ap.add_argument("--duration", type=float, default=None, help="stop after this many seconds (default: run until Ctrl-C)")
    args = ap.parse_args(argv)
    try:
        profile = load_profile(args.profile, parse_set(args.set))
    except ConfigError as exc:
        print(f"havln-robot launch: {exc}", file=sys.stderr)
        return 2
    bringup = Bringup(profile)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: bringup.stop())
    try:
        bringup.start()
    except ConfigError as exc:
        print(f"havln-robot launch: {exc}", file=sys.stderr)
        return 2
    try:
        if not bringup.nodes:
            bringup.log("[bringup] no node of this profile is built; nothing to run")
            return 1
        bringup.log(f"[bringup] running {len(bringup.nodes)} node(s) from {args.profile}; Ctrl-C to stop")
        bringup.spin_until(timeout=args.duration)
    finally:
        bringup.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
