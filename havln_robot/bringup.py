"""Start a profile's nodes in one process -- ``havln-robot launch config/sim.yaml``.

For machines without ``ros2 launch`` (ROS 2 from pip wheels). The nodes are the same classes
the launch files start; they share one rclpy context and talk over DDS on loopback exactly as
separate processes would. Each node is spun by its own SingleThreadedExecutor on its own thread
(:class:`NodeThreads`), as if it were its own process: a slow callback in one node (policy
inference) cannot delay another (motion control), and no node's callbacks run concurrently.

Why not one MultiThreadedExecutor: with rclpy 7 (Jazzy), a node whose callbacks share a
MutuallyExclusiveCallbackGroup and receive 100 Hz topics makes that executor busy-loop (a
ready entity whose group is busy is handed out, refused and re-announced over and over).
Measured with sim_node + motion_node on 2 cores: 100 % of a core, and the simulator's
wall-clock stepping thread starved to 0.18x real time (regression test:
test/test_bringup.py::test_bringup_keeps_sim_real_time_with_motion_node). Per-node
single-threaded executors: 0.2 core, 1.0x real time.

Shutdown (SIGINT, SIGTERM, ``--duration`` elapsed, :meth:`Bringup.stop`, or a node callback
that raised): every node's ``safe_stop()`` runs first, in reverse profile order (the agent stops
sending actions, motion_node zeroes ``cmd_vel``, then the driver / simulator stops the base), the
nodes keep spinning 0.2 s so those messages are delivered, the spin threads stop, ``safe_stop()``
runs once more, then nodes are destroyed and the context shut down.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from havln_robot import locks
from havln_robot.config import NODES, ConfigError, Profile, load_profile
from havln_robot.dds import configure_dds
from havln_robot.params import Raw
from havln_robot.paths import data_dir
from havln_robot.policy.registry import no_data_fallback
from havln_robot.rosnames import namespace_arg
from havln_robot.sim.session import episode_data_problem
from havln_robot.text import number_in, path_arg


def crash_reason(name: str, exc: BaseException) -> str:
    """``node NAME crashed: Class: first line of the message`` (escaped, bounded): why the stack stopped."""
    from havln_robot.text import terminal_safe

    first = str(exc).splitlines()[0] if str(exc) else "(no message)"
    return terminal_safe(f"node {name} crashed: {type(exc).__name__}: {first}")[:300]


class NodeThreads:
    """Spin each node on its own thread with its own ``SingleThreadedExecutor``.

    A callback that raises is logged with its node name, and ``on_error(name, exc)`` is called
    (Bringup uses it to stop everything: a node in an unknown state must not keep driving).

    Args:
        context: the rclpy Context of the nodes.
        log: where error lines go.
        on_error: called once per failing node, from that node's thread.
    """

    def __init__(self, context: Any, log: Callable[[str], None], on_error: Callable[[str, BaseException], None] | None = None) -> None:
        self._context = context
        self._log = log
        self._on_error = on_error
        self._halt = threading.Event()
        self._spinners: dict[str, tuple[Any, threading.Thread]] = {}

    def add(self, name: str, node: Any) -> None:
        """Start spinning ``node`` (created with this context) on a new daemon thread."""
        from rclpy.executors import SingleThreadedExecutor

        ex = SingleThreadedExecutor(context=self._context)
        ex.add_node(node)
        th = threading.Thread(target=self._spin, args=(name, ex), name=f"spin-{name}", daemon=True)
        self._spinners[name] = (ex, th)
        th.start()

    def _spin(self, name: str, ex: Any) -> None:
        from rclpy.executors import ExternalShutdownException

        while not self._halt.is_set() and self._context.ok():
            try:
                ex.spin_once(timeout_sec=0.05)
            except ExternalShutdownException:
                return
            except Exception as exc:  # a node callback raised
                if self._halt.is_set() or not self._context.ok():
                    return  # teardown races (destroyed handles) are not node failures
                self._log(f"[bringup] {name}: callback failed: {type(exc).__name__}: {exc}\n{traceback.format_exc().rstrip()}")
                if self._on_error is not None:
                    self._on_error(name, exc)
                return

    def stop(self, timeout: float = 2.0) -> None:
        """Stop every spinning thread (waits up to ``timeout`` s per thread) and shut the executors down."""
        self._halt.set()
        for name, (ex, th) in self._spinners.items():
            if th is not threading.current_thread():
                th.join(timeout)
                if th.is_alive():
                    self._log(f"[bringup] {name}: a callback is still running after {timeout:.1f} s; leaving it")
            try:
                ex.shutdown(timeout_sec=0.5)
            except Exception:
                pass
        self._spinners.clear()


#: Topics that must have exactly one source in a graph, by the node of a profile that publishes
#: them (parameter names). A second simulator or driver on the same ROS domain would mix its
#: odometry and clock with ours, and a second motion_node (or a teleop) would fight over cmd_vel.
SOLE_SOURCES = {
    "sim_node": ("clock_topic", "odom_topic"),
    "go2_driver_node": ("odom_topic",),
    "motion_node": ("cmd_vel_topic",),
}


#: How long the discovery confirmation watches for another graph's publishers on the sole-source
#: topics before the stack counts as up, s. It runs while the nodes start, so bringup is not slower
#: by it (a stack seen by discovery 1.7-1.8 s after start escaped the former 1.5 s probe).
DOMAIN_CONFIRM_S = 3.0

#: After that window the watch goes on for the whole run, looking this often, s: DDS discovery has
#: no upper bound (a loaded machine, a Wi-Fi link between the Jetson and a laptop), so a stack that
#: comes up after ours and escapes its own window is still found, and the newer of the two stops.
DOMAIN_WATCH_PERIOD_S = 0.5

#: How long a foreign publisher may stay without a visible bringup probe (node names arrive a little
#: after the endpoints) before it counts as a node that is not a havln-robot stack, s.
DOMAIN_NAMES_GRACE_S = 2.0

#: Every bringup's discovery probe is named ``<PROBE_PREFIX><start ms>_<pid>``: the start time it
#: carries says which of two stacks on one domain came up later (that one stops).
PROBE_PREFIX = "havln_bringup_probe_"


def domain_lock_path(domain: str | int) -> Path:
    """The same-machine guard of a ROS domain: ``<tmp>/havln_robot-ros-domain-<id>.lock``.

    ``$HAVLN_LOCK_DIR`` replaces ``<tmp>`` (tests use it to play two machines on one).
    """
    base = os.environ.get("HAVLN_LOCK_DIR") or tempfile.gettempdir()
    return Path(base) / f"havln_robot-ros-domain-{domain}.lock"


def probe_key(name: str) -> tuple[int, int] | None:
    """(start time ms since the epoch, pid) of a bringup probe node name, None for other names."""
    if not name.startswith(PROBE_PREFIX):
        return None
    parts = name[len(PROBE_PREFIX) :].split("_")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def late_conflict(own: tuple[int, int], probes: list[str]) -> str:
    """What a running stack does about another graph's publisher on its sole-source topics, given
    the node names the domain shows (``probes``: every node name discovery reports).

    Returns:
        ``"stop"``: a bringup that started before ours is there -- ours is the newcomer and stops;
        ``"other_stops"``: only newer bringups -- the newcomer stops itself, we keep running;
        ``"unknown"``: no other bringup (a teleop, a driver started by ``ros2 launch``, or names not
        discovered yet).
    """
    keys = [k for k in (probe_key(n) for n in probes) if k is not None and k != own]
    if any(k < own for k in keys):
        return "stop"
    return "other_stops" if keys else "unknown"


class DomainProbe:
    """Watches, on a thread, for publishers of another graph on ``topic_names``.

    First for ``window_s`` while our nodes start (:meth:`result` returns what it found; the caller
    refuses to run). With ``watch`` it then goes on looking every :data:`DOMAIN_WATCH_PERIOD_S`
    until :meth:`cancel`: a publisher seen later means a second stack escaped both windows (slow
    discovery); when it is a bringup that started before ours (:func:`late_conflict`, the start
    time in the probes' names), ``on_conflict`` gets the finding -- ours is the newcomer and stops;
    a publisher that is no bringup is logged (``log``) once, not stopped for.

    Publishers of this process's own context (our nodes, started meanwhile) are told apart by the
    DDS participant: the first 12 bytes of an endpoint GID are its participant's GUID prefix,
    the same for every node of one context. Where the RMW gives no usable GID, only what is seen
    before :meth:`nodes_starting` counts, and there is no watch.

    Args:
        context: the rclpy Context our nodes will use.
        topic_names: topics this profile must be the only source of.
        window_s: how long to watch before the stack counts as up, s.
        watch: keep watching after the window (see above).
        on_conflict: called once, from the probe's thread, with topic -> foreign node names.
        log: where the watch's warnings go.
    """

    def __init__(
        self,
        context: Any,
        topic_names: list[str],
        window_s: float = DOMAIN_CONFIRM_S,
        watch: bool = False,
        on_conflict: Callable[[dict[str, list[str]]], None] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        import rclpy

        self.key = (time.time_ns() // 1_000_000, os.getpid())
        self.node = rclpy.create_node(f"{PROBE_PREFIX}{self.key[0]}_{self.key[1]}", context=context, start_parameter_services=False)
        self._names = [t if t.startswith("/") else "/" + t for t in topic_names]
        self._t_end = time.monotonic() + window_s
        self._watch = watch
        self._on_conflict = on_conflict
        self._log = log or (lambda s: None)
        self._window_done = threading.Event()
        self._done = threading.Event()
        self._halt = threading.Event()
        self._own_nodes_from: float | None = None
        self._prefix: bytes | None = None
        self._destroyed = False
        self.found: dict[str, list[str]] = {}
        self._thread = threading.Thread(target=self._run, name="bringup-domain-probe", daemon=True)

    def start(self) -> DomainProbe:
        self._thread.start()
        return self

    def nodes_starting(self) -> None:
        """Our own nodes start now (their publishers must not be taken for another graph's)."""
        if self._own_nodes_from is None:
            self._own_nodes_from = time.monotonic()

    def _own_prefix(self) -> bytes | None:
        if self._prefix is None:
            for i in self.node.get_publishers_info_by_topic("/rosout"):
                gid = bytes(i.endpoint_gid)
                if i.node_name == self.node.get_name() and len(gid) >= 12 and any(gid[:12]):
                    self._prefix = gid[:12]
        return self._prefix

    def _scan(self) -> tuple[dict[str, list[str]], bool]:
        prefix = self._own_prefix()
        found: dict[str, list[str]] = {}
        named = True
        for t in self._names:
            infos = [i for i in self.node.get_publishers_info_by_topic(t) if prefix is None or bytes(i.endpoint_gid)[:12] != prefix]
            if infos:
                known = {f"{i.node_namespace.rstrip('/')}/{i.node_name}" for i in infos if "_UNKNOWN_" not in i.node_name}
                named = named and len(known) == len(infos)
                found[t] = sorted(known) or ["a node not yet named by discovery"]
        return found, named

    def _run(self) -> None:
        try:
            self._window()
            self._window_done.set()
            if self._watch and not self.found:
                self._watch_run()
        except Exception:  # context shut down under us: nothing more to learn
            pass
        finally:
            self._window_done.set()
            self._done.set()

    def _window(self) -> None:
        seen_at = None
        while not self._halt.is_set():
            now = time.monotonic()
            if self._prefix is None and self._own_nodes_from is not None and self._own_prefix() is None:
                # our probe's own /rosout publisher is not in the graph yet (a loaded machine):
                # without its GID our nodes cannot be told apart, so wait for it rather than give
                # up watching (before, both stacks then ran: test_bringup_domain [other-None]); an
                # RMW that gives no usable GID never shows it: only the look before our nodes counts
                if now < self._t_end:
                    time.sleep(0.05)
                    continue
                return
            found, named = self._scan()
            if found:
                self.found = found
                seen_at = now if seen_at is None else seen_at
                # node names arrive a little after the endpoints (seconds on a loaded machine): wait
                # for them, past the window's end too, so that the refusal names who holds the topic
                if named or now - seen_at > DOMAIN_NAMES_GRACE_S:
                    return
            elif now >= self._t_end:
                return
            time.sleep(0.05)

    def _watch_run(self) -> None:
        first_seen: float | None = None
        told: set[tuple[str, str]] = set()
        while not self._halt.wait(DOMAIN_WATCH_PERIOD_S):
            if self._own_prefix() is None:
                continue  # our nodes cannot be told apart yet (an RMW without GIDs: never)
            found, _ = self._scan()
            if not found:
                first_seen = None
                continue
            now = time.monotonic()
            first_seen = now if first_seen is None else first_seen
            names = [n for n, _ns in self.node.get_node_names_and_namespaces()]
            what = late_conflict(self.key, names)
            if what == "stop":
                if self._on_conflict is not None:
                    self._on_conflict(found)
                return
            if what == "unknown" and now - first_seen < DOMAIN_NAMES_GRACE_S:
                continue  # the other side's probe may not be named by discovery yet
            for t, who in found.items():
                for n in who:
                    if (what, t + n) not in told:
                        told.add((what, t + n))
                        if what == "other_stops":
                            self._log(
                                f"[bringup] WARN: {t} is also published by {n}, of a havln-robot stack started after this one; it stops itself"
                            )
                        else:
                            self._log(
                                f"[bringup] ERROR: {t} is also published by {n}, which is not a havln-robot stack: it competes with this "
                                "stack's node; stop it"
                            )

    def result(self) -> dict[str, list[str]]:
        """Wait for the end of the window (or the first finding); topic → foreign node names.

        Without ``watch`` (or when something was found) the probe is done and its node destroyed;
        a watching probe goes on until :meth:`cancel`."""
        self._window_done.wait()
        if not self._watch or self.found or self._done.is_set():
            self._done.wait()
            self._destroy()
        return self.found

    def _destroy(self) -> None:
        if not self._destroyed:
            self._destroyed = True
            try:
                self.node.destroy_node()
            except Exception:
                pass

    def cancel(self) -> None:
        """Stop looking (window or watch) and destroy the probe's node."""
        self._halt.set()
        self._done.wait()
        self._destroy()


class Bringup:
    """The running nodes of one profile.

    Args:
        profile: a validated :class:`~havln_robot.config.Profile`.
        log: where status lines go (default: stderr).
        namespace: ROS namespace of every node ("" = root), as ``go2.launch.py namespace:=``.
        check_graph: refuse to start (ConfigError, every node stopped) when the ROS domain has
            another publisher on a topic this profile must be the sole source of
            (:data:`SOLE_SOURCES`: clock and odom of sim_node, odom of go2_driver_node, cmd_vel of
            motion_node). Two guards: the per-domain OS lock (:func:`domain_lock_path`; another
            havln-robot stack on this machine, instantly, whatever the discovery timing; taken
            whenever the profile has such topics) and a DDS discovery watch
            (:class:`DomainProbe`: ``domain_confirm_s`` while the nodes start, refusing to run; then
            for the whole run, where a bringup that started before this one and was discovered late
            makes this one stop, as :attr:`failed` with a ConfigError).
        domain_confirm_s: the discovery window while the nodes start, s (:data:`DOMAIN_CONFIRM_S`).

    Attributes:
        nodes: node name → node instance, for the nodes that started.
    """

    def __init__(
        self,
        profile: Profile,
        log: Callable[[str], None] | None = None,
        check_graph: bool = True,
        namespace: str = "",
        domain_confirm_s: float = DOMAIN_CONFIRM_S,
    ) -> None:
        self.profile = profile
        self.domain_confirm_s = float(domain_confirm_s)
        self._probe: DomainProbe | None = None
        self._domain = ""
        self.namespace = namespace
        self.check_graph = check_graph
        self.log = log or (lambda s: print(s, file=sys.stderr, flush=True))
        self.nodes: dict[str, Any] = {}
        self._stop = threading.Event()
        self._threads: NodeThreads | None = None
        self._context = None
        self._domain_lock: locks.HeldLock | None = None
        self.failed: tuple[str, BaseException] | None = None

    def _domain_conflict(self, found: dict[str, list[str]]) -> None:
        """The discovery watch found, after start, an older stack's publishers (probe thread)."""
        who = "; ".join(f"{t} by {', '.join(n)}" for t, n in found.items())
        exc = ConfigError(
            f"ROS domain {self._domain} already has {who} -- another simulator, driver or demo that started before this stack "
            f"and that DDS discovery showed only now. Stop it, or run this one on a free domain, e.g. "
            f"ROS_DOMAIN_ID={_free_domain_hint(self._domain)}"
        )
        if self.failed is None:
            self.failed = ("the ROS domain watch", exc)
            print(f"[bringup] stopping every node: {exc}", file=sys.stderr, flush=True)
        self._stop.set()

    def _node_failed(self, name: str, exc: BaseException) -> None:
        if self.failed is None:
            self.failed = (name, exc)
            print(f"[bringup] stopping every node because {name} failed", file=sys.stderr, flush=True)
            # every node learns why it is stopped: trial_logger_node closes a running trial with it
            # ("aborted (node motion_node crashed: ...)"), not as a plain shutdown
            reason = crash_reason(name, exc)
            for node in list(self.nodes.values()):
                try:
                    node.shutdown_reason = reason
                except Exception:
                    pass
        self._stop.set()

    def start(self) -> Bringup:
        """Initialise rclpy (own context, no rclpy signal handlers) and create every node.

        Raises:
            ConfigError: a node rejected its parameters, another havln-robot stack on this machine
                holds this ROS domain's lock (refused at once, nothing started), or another graph
                on this ROS domain publishes a topic this profile must be the sole source of (seen
                within :data:`DOMAIN_CONFIRM_S` while the nodes start; they are stopped again).
        """
        import rclpy

        sole = sorted({str(params[k]) for name, params in self.profile.nodes.items() for k in SOLE_SOURCES.get(name, ()) if k in params})
        domain = os.environ.get("ROS_DOMAIN_ID", "") or "0"
        self._domain = domain
        if sole:
            try:
                self._domain_lock = locks.acquire(domain_lock_path(domain), what=f"havln-robot stack {self.profile.path}")
            except locks.LockBusy as exc:
                raise ConfigError(
                    f"ROS domain {domain} is already used by another havln-robot stack on this machine ({exc.info}). "
                    f"Stop it, or run this one on a free domain, e.g. ROS_DOMAIN_ID={_free_domain_hint(domain)}"
                ) from None
            except locks.LockUnsafe as exc:  # a link / folder / FIFO planted where the lock goes: never written
                raise ConfigError(f"ROS domain {domain} lock: {exc}") from None
            except OSError as exc:  # no lock without a writable temp folder; discovery still guards
                self.log(f"[bringup] WARN: no same-machine ROS domain lock ({exc.strerror}); relying on DDS discovery")
        try:
            configure_dds()
            self._context = rclpy.Context()
            rclpy.init(context=self._context, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
        except BaseException:
            self._context = None
            if self._domain_lock is not None:
                self._domain_lock.release()
                self._domain_lock = None
            raise
        # node failures and stuck callbacks always reach stderr, whatever self.log does with status lines
        self._threads = NodeThreads(self._context, lambda s: print(s, file=sys.stderr, flush=True), self._node_failed)
        probe = None
        if sole and self.check_graph:
            probe = DomainProbe(
                self._context, sole, self.domain_confirm_s, watch=True, on_conflict=self._domain_conflict, log=self.log
            ).start()
        fill_provenance(self.profile)
        try:
            gt_people = self.profile.nodes.get("sim_node", {}).get("people_source") == "ground_truth"
            for name, params in self.profile.nodes.items():
                if name == "people_node" and gt_people:  # sim_node publishes the true people on havln/people
                    self.log("[bringup] people_node not started: sim_node people_source is 'ground_truth'")
                    continue
                if probe is not None:
                    if probe.found:  # seen before this node starts: refuse now
                        break
                    probe.nodes_starting()
                if name == "sim_node" and params.get("lockstep"):
                    # the first lockstep step waits for the participants this process starts, no others
                    present = {"motion": "motion_node", "agent": "agent_node", "people": "" if gt_people else "people_node"}
                    wait_for = [r for r in params.get("lockstep_wait_for", []) if present.get(r) in self.profile.nodes]
                    params = {**params, "lockstep_wait_for": wait_for}
                mod = importlib.import_module(NODES[name][0])
                extra = {"namespace": self.namespace} if self.namespace else {}
                node = mod.NODE_CLASS(params=params, context=self._context, **extra)
                self.nodes[name] = node
                self._threads.add(name, node)
                self.log(f"[bringup] started {name}")
        except Exception:
            if probe is not None:
                probe.cancel()
            self.shutdown()
            raise
        busy = probe.result() if probe is not None else {}
        self._probe = probe if probe is not None and not busy else None
        if busy:
            self.shutdown()
            who = "; ".join(f"{t} by {', '.join(n)}" for t, n in busy.items())
            raise ConfigError(
                f"ROS domain {domain} already has {who} -- another simulator, driver or demo is running there. "
                f"Stop it, or run this one on a free domain, e.g. ROS_DOMAIN_ID={_free_domain_hint(domain)}"
            )
        return self

    @property
    def context(self):
        """The rclpy Context the nodes run in (``None`` before :meth:`start` / after :meth:`shutdown`)."""
        return self._context

    def add_node(self, node: Any, name: str | None = None) -> None:
        """Spin an extra node (created with ``context=self.context``) with the profile's nodes.

        It is safe-stopped (if it has ``safe_stop``) and destroyed by :meth:`shutdown` like the others.
        """
        name = name or node.get_name()
        self.nodes[name] = node
        self._threads.add(name, node)

    def spin_until(self, done: Callable[[], bool] | None = None, timeout: float | None = None) -> str:
        """Wait until ``done()`` is true, ``timeout`` s pass, or :meth:`stop` is called.

        The nodes spin on their own threads; ``done`` is polled every 20 ms from this thread.

        Returns:
            ``"done"``, ``"timeout"`` or ``"stopped"`` (also when a node failed: see :attr:`failed`).
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
            self._stop.wait(0.02)

    def stop(self) -> None:
        """Ask :meth:`spin_until` to return (safe to call from a signal handler)."""
        self._stop.set()

    def shutdown(self) -> None:
        """Safe-stop every node, stop the spinning threads, destroy nodes, shut the context down. Idempotent.

        Order: ``safe_stop()`` on every node first, in reverse profile order (the robot stops at
        once, whatever else is slow); 0.2 s for the stop messages to be delivered while the nodes still spin; stop the
        spin threads; ``safe_stop()`` once more, so that the last word on cmd_vel is zero even if
        a callback was mid-flight during the first round; destroy the nodes.
        """
        import rclpy

        if self._context is None:
            return
        self._safe_stop_all()
        if self._probe is not None:
            self._probe.cancel()
            self._probe = None
        if self._threads is not None:
            time.sleep(0.2)
            self._threads.stop()
            self._threads = None
            self._safe_stop_all()
        for node in self.nodes.values():
            node.destroy_node()
        self.nodes.clear()
        rclpy.try_shutdown(context=self._context)
        self._context = None
        if self._domain_lock is not None:
            self._domain_lock.release()
            self._domain_lock = None
        self.log("[bringup] all nodes stopped")

    def _safe_stop_all(self) -> None:
        # reverse profile order: producers of commands stop before the nodes that execute them
        for name, node in reversed(list(self.nodes.items())):
            try:
                if hasattr(node, "safe_stop"):
                    node.safe_stop()
            except Exception as exc:  # a failing safe_stop must not prevent the others
                self.log(f"[bringup] {name}: safe_stop failed: {exc}")


def fill_provenance(profile: Profile) -> None:
    """Give trial_logger_node the profile file and agent_node's policy (when its own params are empty),
    so every trial records which profile and policy/checkpoint produced it."""
    tl = profile.nodes.get("trial_logger_node")
    if tl is None:
        return
    if not tl.get("profile"):
        tl["profile"] = str(Path(profile.path).resolve())
    if not tl.get("policy") and "agent_node" in profile.nodes:
        tl["policy"] = str(profile.nodes["agent_node"].get("policy", ""))


def _free_domain_hint(domain: str) -> int:
    """A domain id to suggest instead of ``domain`` (0-101 are valid for Fast DDS on Linux)."""
    try:
        d = int(domain)
    except ValueError:
        d = 0
    return (d + 17) % 100 + 1


def parse_set(items: list[str]) -> dict[str, dict[str, Any]]:
    """Parse ``--set node.param=value`` items.

    Values stay text (:class:`~havln_robot.params.Raw`) until :func:`load_profile` coerces them to
    the parameter's declared type: ``sim_node.episode_id=6047`` is the string ``"6047"``,
    ``motion_node.max_linear_speed=1`` the float ``1.0``, a list is ``[a, b]``.

    Raises:
        ConfigError: an item is not of the form node.param=value.
    """
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        node, dot, param = key.partition(".")
        if not sep or not dot or not node or not param:
            raise ConfigError(f"--set {item!r}: expected NODE.PARAM=VALUE, e.g. motion_node.max_linear_speed=0.3")
        out.setdefault(node, {})[param] = Raw(raw)
    return out


def no_data_overrides(profile: Profile) -> tuple[dict[str, dict[str, Any]], str | None]:
    """What to change in ``profile`` when the HA-VLN data folder is absent, and one line saying why.

    ``havln-robot launch`` and ``havln-robot demo`` behave the same without data: sim_node runs the
    builtin scene and episode (when its ``scene_source`` is ``auto``) and agent_node runs the
    baseline :data:`havln_robot.policy.registry.NO_DATA_POLICY` instead of a trained model (which
    needs the HA-R2R vocabulary). Nodes started by ``ros2 launch`` make the same choice each on
    their own (sim_node and agent_node log it).

    Returns:
        ``(overrides, warning)``: node -> {param: value} to apply with :func:`load_profile`, and
        the WARN line to print (None when the data is present and nothing changes).
    """
    over: dict[str, dict[str, Any]] = {}
    why: list[str] = []
    sim = profile.nodes.get("sim_node")
    if sim is not None and sim.get("scene_source", "auto") == "auto":
        problem = episode_data_problem(sim)
        if problem is not None:
            over["sim_node"] = {"scene_source": "builtin"}
            key, path, what = problem  # a folder given as the file is named as such, not "not found"
            why.append("sim_node runs the builtin scene and episode" + ("" if what == "not found" else f" (sim_node.{key} {path}: {what})"))
    agent = profile.nodes.get("agent_node")
    if agent is not None:
        spec, reason = no_data_fallback(agent.get("policy", ""))
        if reason:
            over["agent_node"] = {"policy": spec}
            why.append(
                f"agent_node runs the baseline policy '{spec}' instead of '{agent.get('policy')}' (a trained model needs the HA-R2R vocabulary)"
            )
    if not why:
        return over, None
    return over, f"HA-VLN data not found at {data_dir()}: {'; '.join(why)}; get the data with `havln-robot data fetch` or set HAVLN_DATA"


def instruction_hint(topic: str, namespace: str = "") -> str:
    """How to send agent_node an instruction from another terminal: ``havln-robot instruct`` works
    everywhere (ROS 2 from pip wheels too); the ``ros2 topic pub`` form is added where ``ros2`` exists."""
    import shlex
    import shutil

    ns = ["--namespace", namespace] if namespace else []
    default = topic in ("havln/instruction", "/havln/instruction")
    cmd = shlex.join(["havln-robot", "instruct", *ns, *([] if default else ["--topic", topic]), "walk to the sofa"])
    text = f"agent_node waits for an instruction on {topic} (std_msgs/String); send one with: {cmd}"
    if shutil.which("ros2"):
        full = f"/{namespace.strip('/')}/{topic.lstrip('/')}" if namespace and not topic.startswith("/") else "/" + topic.lstrip("/")
        text += f"  or: ros2 topic pub --once {full} std_msgs/msg/String \"{{data: 'walk to the sofa'}}\""
    return text + " (havln-robot demo runs whole episodes for you)"


#: Seconds a process may take to shut down after SIGINT/SIGTERM before it is ended (exit 128 + signal).
SHUTDOWN_GRACE_S = 5.0


def install_shutdown_signals(
    on_signal: Callable[[], None], grace_s: float = SHUTDOWN_GRACE_S, label: str = "havln-robot"
) -> dict[str, int]:
    """SIGINT/SIGTERM handlers for a bounded shutdown.

    The first signal calls ``on_signal()`` (ask the main loop to stop; nodes then stop the robot and
    write what they recorded) and arms a daemon timer: if the process is still alive ``grace_s``
    seconds later (a hung inference, a blocked SDK call), it prints one line and exits with
    ``128 + signal``. A second signal exits at once, with the same code.

    Args:
        on_signal: called from the signal handler (must be async-signal tolerant: set an Event).
        grace_s: bound on the shutdown, s.
        label: program name for the messages.

    Returns:
        A dict whose ``"signum"`` is 0 until a signal arrived, then its number (for the exit code);
        ``"timer"`` is the armed force-exit timer once a signal arrived (a caller whose nodes have
        all stopped may ``cancel()`` it to finish writing its outputs; a second signal still exits).
    """
    state: dict[str, Any] = {"signum": 0, "timer": None}

    def force(signum: int, why: str) -> None:
        print(f"{label}: {why}; exiting now (code {128 + signum})", file=sys.stderr, flush=True)
        os._exit(128 + signum)

    def handler(signum: int, _frame: Any) -> None:
        if state["signum"]:
            force(signum, f"second signal {signal.Signals(signum).name}")
        state["signum"] = signum
        on_signal()
        timer = threading.Timer(grace_s, force, (signum, f"shutdown took longer than {grace_s:g} s"))
        timer.daemon = True
        timer.start()
        state["timer"] = timer

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)
    return state


def main(argv: list[str] | None = None) -> int:
    """``havln-robot launch PROFILE [--set node.param=value ...] [--duration S]``."""
    ap = argparse.ArgumentParser(prog="havln-robot launch", description="Start a profile's nodes in one process.")
    ap.add_argument("profile", type=path_arg, help="ROS-params YAML, e.g. config/sim.yaml")
    ap.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE", help="override a parameter")
    ap.add_argument(
        "--duration", type=number_in(0, unit="s", above=True), default=None, help="stop after this many seconds (default: run until Ctrl-C)"
    )
    ap.add_argument(
        "--namespace",
        type=namespace_arg,
        default=None,
        help="start every node in this namespace (as go2.launch.py namespace:=NS)",
    )
    args = ap.parse_args(argv)
    try:
        overrides = parse_set(args.set)
        profile = load_profile(args.profile, overrides, namespace=args.namespace, overrides_from="--set")
        fallback, warning = no_data_overrides(profile)
        if fallback:
            for node, params in fallback.items():
                overrides.setdefault(node, {}).update(params)
            profile = load_profile(args.profile, overrides, namespace=args.namespace, overrides_from="--set")
    except ConfigError as exc:
        print(f"havln-robot launch: {exc}", file=sys.stderr)
        return 2
    if warning:
        print(f"[bringup] WARN: {warning}", file=sys.stderr)
    bringup = Bringup(profile, namespace=args.namespace or "")
    stopped_by = install_shutdown_signals(bringup.stop, label="havln-robot launch")
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
        if "agent_node" in bringup.nodes:
            topic = bringup.nodes["agent_node"].params.get("instruction_topic", "havln/instruction")
            bringup.log(f"[bringup] {instruction_hint(topic, args.namespace or '')}")
        if bringup.spin_until(timeout=args.duration) == "timeout":
            bringup.log(f"[bringup] --duration {args.duration:g} s elapsed; stopping")
    finally:
        bringup.shutdown()
    if bringup.failed is not None and isinstance(bringup.failed[1], ConfigError):
        print(f"havln-robot launch: {bringup.failed[1]}", file=sys.stderr)
        return 2
    if stopped_by["signum"]:
        return 128 + stopped_by["signum"]  # stopped by a signal: not a success (shell convention)
    return 1 if bringup.failed else 0


if __name__ == "__main__":
    sys.exit(main())
