"""Fan-out to WebSocket clients with bounded, per-client, latest-wins slots.

Publishers (ROS callbacks on their own threads) never wait for a browser: :meth:`Hub.publish`
stores the newest payload of a channel in each client's slot and wakes its sender task; a client
whose socket is slow simply misses intermediate payloads of that channel (counted in
:attr:`Client.dropped`). Memory per client is one payload per channel.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Client:
    """One WebSocket client's pending payloads (channel → newest payload)."""

    loop: asyncio.AbstractEventLoop
    event: asyncio.Event
    slots: dict[str, Any] = field(default_factory=dict)
    dropped: int = 0
    sent: int = 0


class Hub:
    """Thread-safe registry of clients; see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: set[Client] = set()
        self._latest: dict[str, Any] = {}

    def add(self, loop: asyncio.AbstractEventLoop) -> Client:
        """Register a client (call on its event loop); it starts with every channel's latest payload."""
        c = Client(loop, asyncio.Event())
        with self._lock:
            c.slots.update(self._latest)
            self._clients.add(c)
        if c.slots:
            c.event.set()
        return c

    def remove(self, c: Client) -> None:
        """Forget a client."""
        with self._lock:
            self._clients.discard(c)

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)

    def publish(self, channel: str, payload: Any) -> None:
        """Offer ``payload`` on ``channel`` to every client (any thread; never blocks on a client)."""
        with self._lock:
            self._latest[channel] = payload
            clients = list(self._clients)
            for c in clients:
                if channel in c.slots:
                    c.dropped += 1
                c.slots[channel] = payload
        for c in clients:
            try:
                c.loop.call_soon_threadsafe(c.event.set)
            except RuntimeError:  # its loop is closed: the client is going away
                pass

    async def next(self, c: Client) -> dict[str, Any]:
        """Wait for and take a client's pending payloads (channel → payload)."""
        await c.event.wait()
        with self._lock:
            got, c.slots = c.slots, {}
            c.event.clear()
            c.sent += len(got)
        return got
