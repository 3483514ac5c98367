"""Fault injection for tests: a full disk without root.

``HAVLN_INJECT_ENOSPC="store:N[:M],mcap:N[:M]"`` makes write number N+1 .. N+M (counted per site
in this process, from 1; M omitted = every later write) fail as if the disk were full:

* ``store``: a write transaction of :class:`havln_robot.trials.store.TrialStore` fails with
  SQLite's ``database or disk is full`` (rolled back like a real SQLITE_FULL);
* ``mcap``: a message write of :class:`havln_robot.trials.recorder.McapRecorder` raises
  ``OSError(ENOSPC)``.

Unset (the normal case) it costs one dict lookup per write. The real thing is tested on a tiny
tmpfs where root is available (``test/test_trials_faults.py``).
"""

from __future__ import annotations

import os
import threading

ENV = "HAVLN_INJECT_ENOSPC"
_counts: dict[str, int] = {}
_lock = threading.Lock()


def _spec(site: str) -> tuple[int, float] | None:
    raw = os.environ.get(ENV, "")
    for part in raw.split(","):
        name, _, rest = part.strip().partition(":")
        if name != site or not rest:
            continue
        n, _, m = rest.partition(":")
        try:
            return int(n), (int(m) if m else float("inf"))
        except ValueError:
            return None
    return None


def disk_full(site: str) -> bool:
    """Count one write at ``site`` (``store`` | ``mcap``); True when it must fail as disk full."""
    spec = _spec(site)
    if spec is None:
        return False
    with _lock:
        k = _counts.get(site, 0) + 1
        _counts[site] = k
    n, m = spec
    return n < k <= n + m


def reset() -> None:
    """Forget the write counts (tests)."""
    with _lock:
        _counts.clear()
