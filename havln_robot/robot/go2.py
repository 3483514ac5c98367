"""Thin wrapper over unitree_sdk2py for the Go2: ``SportClient`` calls and the ``rt/sportmodestate`` stream.

No rclpy. Everything the driver needs from the SDK goes through :class:`Go2Link`, so the node and
the core never touch DDS directly. The SDK's ``ChannelFactory`` is a per-process singleton (one
CycloneDDS domain participant): :func:`init_channel` initialises it once per process and refuses a
second, different (domain, interface) pair instead of silently ignoring it as the SDK would.
"""

from __future__ import annotations

import socket
import threading
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
        raise Go2Error(f"network_interface={interface!r}: no such network interface here; list them with `ip -br link`") from None
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
        except Exception as exc:  # the SDK raises a bare Exception
            raise Go2Error(
                f"network_interface={interface!r} dds_domain_id={domain_id}: Unitree SDK init failed ({exc}); "
                "check the interface name (ip link) and that it is up"
            ) from None
        _channel = (int(domain_id), interface)


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

    SDK calls are serialised by one lock, so an e-stop ``Damp`` issued from another thread never
    interleaves with a ``Move`` in flight; it follows it (a no-reply Move takes well under 1 ms).
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
        self._sub = ChannelSubscriber(state_topic, SportModeState_)
        self._sub.Init(self._handle_state, 10)

    def _handle_state(self, msg: Any) -> None:
        if not self._closed:
            self._on_state(msg)

    def call(self, call: SdkCall) -> int:
        """Issue one SportClient call; returns its code (0 = success; never raises).

        ``Move`` is a no-reply call: 0 means "sent", not "executed".
        """
        fn = {
            MOVE: self.client.Move,
            STOP: self.client.StopMove,
            BALANCE: self.client.BalanceStand,
            DAMP: self.client.Damp,
            STAND_UP: self.client.StandUp,
        }[call.name]
        with self._lock:
            try:
                code = fn(*call.args)
            except Exception:  # SDK/DDS failure: report as a failed call, the core retries
                return ERR_EXCEPTION
        return int(code) if code is not None else ERR_EXCEPTION

    def close(self) -> None:
        """Stop delivering state; the SportClient stays usable for a final StopMove until process exit."""
        self._closed = True
        try:
            self._sub.Close()
        except Exception:  # closing is best effort
            pass
