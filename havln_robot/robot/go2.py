"""Thin wrapper over unitree_sdk2py for the Go2: ``SportClient`` calls and the ``rt/sportmodestate`` stream.

No rclpy. Everything the driver needs from the SDK goes through :class:`Go2Link`, so the node and
the core never touch DDS directly. The SDK's ``ChannelFactory`` is a per-process singleton (one
CycloneDDS domain participant): :func:`init_channel` initialises it once per process and refuses a
second, different (domain, interface) pair instead of silently ignoring it as the SDK would.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from havln_robot.robot.adapter import BALANCE, DAMP, MOVE, STAND_UP, STOP, SdkCall

#: unitree_sdk2py RPC code for "client could not send" (rpc/internal.py RPC_ERR_CLIENT_SEND).
RPC_ERR_CLIENT_SEND = 3102
#: Code returned by :meth:`Go2Link.call` when the SDK raised (not an SDK code; SDK codes are 3xxx/4xxx).
ERR_EXCEPTION = -1

_channel_lock = threading.Lock()
_channel: tuple[int, str] | None = None


class Go2Error(RuntimeError):
    """The Unitree SDK could not be set up (one-line message naming the parameter to fix)."""


class Go2InterfaceNotReady(Go2Error):
    """The network interface is missing or not up yet (cable, switch or USB adapter late at boot):
    worth retrying (:func:`connect_with_retry`)."""


#: cyclonedds return code of ``Domain(id, config)`` when the domain already exists in this process.
DDS_RETCODE_PRECONDITION_NOT_MET = -4


def _diagnose_domain(domain_id: int, interface: str) -> int | None:
    """Why the SDK could not create its DDS domain: the cyclonedds return code of creating it here
    (``-4`` already exists in this process, ``-1`` e.g. the interface has no usable address), or
    None when it can be created now (then it is released again at once)."""
    try:
        from cyclonedds.core import DDSException
        from cyclonedds.domain import Domain
        from unitree_sdk2py.core.channel_config import ChannelConfigHasInterface
    except ImportError:
        return None
    try:
        d = Domain(int(domain_id), ChannelConfigHasInterface.replace("$__IF_NAME__$", interface))
    except DDSException as exc:
        return int(getattr(exc, "code", -1))
    del d
    return None


def init_error_message(code: int | None, domain_id: int, interface: str, sdk_error: str) -> Go2Error:
    """The one-line error for a failed SDK init, by the cyclonedds code of :func:`_diagnose_domain`."""
    if code == DDS_RETCODE_PRECONDITION_NOT_MET:
        return Go2Error(
            f"dds_domain_id={domain_id}: a DDS domain {domain_id} already exists in this process with another "
            "configuration (rmw_cyclonedds_cpp shares libddsc with the Unitree SDK and ROS uses that domain id); "
            "give dds_domain_id a value other than ROS_DOMAIN_ID, or run ROS with RMW_IMPLEMENTATION=rmw_fastrtps_cpp"
        )
    return Go2InterfaceNotReady(
        f"network_interface={interface!r} dds_domain_id={domain_id}: Unitree SDK init failed ({sdk_error}); "
        "the interface exists but is not usable yet (down, or no address): check the cable / switch and `ip -br addr`"
    )


def init_channel(domain_id: int, interface: str) -> None:
    """``ChannelFactoryInitialize(domain_id, interface)`` once per process.

    Args:
        domain_id: DDS domain of the robot (Go2: 0).
        interface: network interface name (``"lo"`` for the fake Go2, the Jetson's wired port on the robot).

    Raises:
        Go2Error: the SDK is missing, the interface does not exist, or this process already
            initialised the SDK with a different (domain, interface).
    """
    global _channel
    try:
        socket.if_nametoindex(interface)
    except OSError:
        raise Go2InterfaceNotReady(
            f"network_interface={interface!r}: no such network interface here (yet); list them with `ip -br link`"
        ) from None
    with _channel_lock:
        if _channel is not None:
            if _channel != (int(domain_id), interface):
                raise Go2Error(
                    f"unitree_sdk2py already initialised on domain {_channel[0]} interface {_channel[1]!r} in this process; "
                    f"dds_domain_id={domain_id} network_interface={interface!r} cannot be used too (one per process)"
                )
            return
        try:
            from unitree_sdk2py.core.channel import ChannelFactoryInitialize
        except ImportError as exc:
            raise Go2Error(f"unitree_sdk2py is not installed ({exc}); pip install unitree_sdk2py") from None
        try:
            ChannelFactoryInitialize(int(domain_id), interface)
        except Exception as exc:  # the SDK raises a bare Exception (it printed the DDS error)
            raise init_error_message(_diagnose_domain(domain_id, interface), domain_id, interface, str(exc)) from None
        _channel = (int(domain_id), interface)


def connect_with_retry(
    connect: Callable[[], Any],
    attempts: int,
    backoff_initial_s: float,
    backoff_max_s: float,
    log: Callable[[str], None],
    sleep: Callable[[float], Any] = time.sleep,
) -> Any:
    """``connect()`` until it stops raising :class:`Go2InterfaceNotReady`, at most ``attempts`` times,
    waiting ``backoff_initial_s`` doubling up to ``backoff_max_s`` (s) in between; one ``log`` line
    per failed attempt. Other errors (and the last attempt's) propagate.
    """
    wait = backoff_initial_s
    for k in range(1, attempts + 1):
        try:
            return connect()
        except Go2InterfaceNotReady as exc:
            if k >= attempts:
                raise Go2Error(f"{exc} -- gave up after {attempts} attempts") from None
            log(f"Go2 connect attempt {k}/{attempts} failed: {exc}; retrying in {wait:.1f} s")
            sleep(wait)
            wait = min(wait * 2.0, backoff_max_s)
    raise Go2Error("connect_attempts must be >= 1")  # pragma: no cover


def _future_dict(client: Any) -> dict[int, Any]:
    """The SDK's pending-reply dict of a ``SportClient`` (name-mangled private attributes of
    unitree_sdk2py 1.0: ``ClientBase.__stub`` -> ``ClientStub.__futureQueue`` -> ``__data``); empty
    dict when the layout differs."""
    stub = getattr(client, "_ClientBase__stub", None)
    queue = getattr(stub, "_ClientStub__futureQueue", None)
    data = getattr(queue, "_RequestFutureQueue__data", None)
    return data if isinstance(data, dict) else {}


def purge_stale_futures(client: Any) -> int:
    """Drop every pending future of ``client`` (call only when none of its calls is in flight).

    Works around the SDK's ``RequestFutureQueue.Remove`` (compares the builtin ``id``, so a timed-out
    or failed call leaves its future in the queue forever). Returns the number removed.
    """
    stub = getattr(client, "_ClientBase__stub", None)
    queue = getattr(stub, "_ClientStub__futureQueue", None)
    lock = getattr(queue, "_RequestFutureQueue__lock", None)
    data = _future_dict(client)
    if lock is None:
        return 0
    with lock:
        n = len(data)
        data.clear()
    return n


class Go2Link:
    """SportClient + sportmodestate subscriber on an initialised SDK channel.

    Args:
        domain_id, interface: passed to :func:`init_channel`.
        on_state: called with each ``unitree_go.msg.dds_.SportModeState_`` sample, on an SDK reader
            thread (never the caller's); exceptions it raises are swallowed by the SDK.
        state_topic: DDS topic of SportModeState_ (``rt/sportmodestate``).
        rpc_timeout_s: timeout of each SportClient call (s).

    Raises:
        Go2Error: see :func:`init_channel`.

    Motion calls (Move, StopMove, BalanceStand, StandUp) are serialised by one lock on one
    ``SportClient``. ``Damp`` goes out on a second ``SportClient`` of its own and takes no lock, so
    an e-stop never waits behind a motion call blocked for up to ``rpc_timeout_s`` on an
    unreachable robot. The driver core re-sends Damp after any motion call that was in
    flight while the e-stop latched, so Damp is always the last word.

    The SDK leaks a future per failed reply call (``RequestFutureQueue.Remove`` tests the builtin
    ``id`` instead of the request id); :meth:`call` removes the stale futures of its client after
    each call returns (no call of that client is in flight then), without patching the SDK.

    :meth:`damp_written_t` tells the calling thread when its last Damp was handed to the SDK.
    """

    def __init__(
        self,
        domain_id: int,
        interface: str,
        on_state: Callable[[Any], None],
        state_topic: str = "rt/sportmodestate",
        rpc_timeout_s: float = 1.0,
    ) -> None:
        init_channel(domain_id, interface)
        from unitree_sdk2py.core.channel import ChannelSubscriber
        from unitree_sdk2py.go2.sport.sport_client import SportClient
        from unitree_sdk2py.idl.unitree_go.msg.dds_ import SportModeState_

        self._lock = threading.Lock()
        self._closed = False
        self._on_state = on_state
        self.client = SportClient()
        self.client.SetTimeout(float(rpc_timeout_s))
        self.client.Init()
        self.estop_client = SportClient()  # Damp only: never behind a blocked motion call
        self.estop_client.SetTimeout(float(rpc_timeout_s))
        self.estop_client.Init()
        self._tls = threading.local()
        self._damp_count_lock = threading.Lock()
        self._damps_in_flight = 0
        self._sub = ChannelSubscriber(state_topic, SportModeState_)
        self._sub.Init(self._handle_state, 10)

    def _handle_state(self, msg: Any) -> None:
        if not self._closed:
            self._on_state(msg)

    def call(self, call: SdkCall) -> int:
        """Issue one SportClient call; returns its code (0 = success; never raises).

        ``Move`` is a no-reply call: 0 means "sent", not "executed". ``Damp`` takes no lock (see the
        class docstring); several Damps may be in flight at once.
        """
        if call.name == DAMP:
            with self._damp_count_lock:
                self._damps_in_flight += 1
            self._tls.damp_written_t = time.monotonic()
            try:
                code = self.estop_client.Damp()
            except Exception:  # SDK/DDS failure: report as a failed call, the core retries
                code = ERR_EXCEPTION
            finally:
                with self._damp_count_lock:
                    self._damps_in_flight -= 1
                    if code != 0 and self._damps_in_flight == 0:
                        purge_stale_futures(self.estop_client)
            return int(code) if code is not None else ERR_EXCEPTION
        fn = {
            MOVE: self.client.Move,
            STOP: self.client.StopMove,
            BALANCE: self.client.BalanceStand,
            STAND_UP: self.client.StandUp,
        }[call.name]
        with self._lock:
            try:
                code = fn(*call.args)
            except Exception:  # SDK/DDS failure: report as a failed call, the core retries
                code = ERR_EXCEPTION
            finally:
                if code != 0:
                    purge_stale_futures(self.client)
        return int(code) if code is not None else ERR_EXCEPTION

    def damp_written_t(self) -> float | None:
        """Monotonic time (s) at which this thread's last Damp was handed to the SDK (which writes the
        request at once, then waits for the reply); None before the first."""
        return getattr(self._tls, "damp_written_t", None)

    def pending_futures(self) -> int:
        """Futures waiting in the SDK's reply queues of both clients (0 when nothing is in flight)."""
        return sum(len(_future_dict(c)) for c in (self.client, self.estop_client))

    def close(self) -> None:
        """Stop delivering state; the SportClient stays usable for a final StopMove until process exit."""
        self._closed = True
        try:
            self._sub.Close()
        except Exception:  # closing is best effort
            pass
