"""Worker processes for a test's independent, pure-CPU simulator runs (walks, expert episodes).

A test that judges several closed-loop runs which do not depend on each other (one walk per start
heading, one episode per record) runs them side by side in a pool of worker processes -- one per
core, at most two (CI's machine) -- while the test process waits, then judges the results in input
order as a loop would. The runs and the assertions are the same as serially; only the wall time
differs. Workers are spawned, not forked: the test process may hold DDS threads of earlier tests.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

#: Worker processes of a pool: one per core, at most two.
WORKERS = max(1, min(2, os.cpu_count() or 1))


def spawn_pool() -> ProcessPoolExecutor:
    """A pool of :data:`WORKERS` spawned processes; shut it down when done (``with spawn_pool() as pool``)."""
    return ProcessPoolExecutor(max_workers=WORKERS, mp_context=multiprocessing.get_context("spawn"))


def _evaluate(episodes, policy, connectivity_dir, kwargs):
    from havln_robot.eval import evaluate

    return evaluate(episodes, policy, connectivity_dir, **kwargs)


def evaluate_in_pool(pool: ProcessPoolExecutor, episodes, policy, connectivity_dir, **kwargs) -> list:
    """:func:`havln_robot.eval.evaluate` of ``episodes`` split over the pool's workers; records in input order.

    Each episode's result does not depend on the other episodes (per-episode seeds, see
    test_eval_ray.py); episodes of one scan stay on one worker where the split allows it (each worker
    loads its scans once)."""
    episodes = list(episodes)
    by_scan: dict[str, list[int]] = {}
    for i, ep in enumerate(episodes):
        by_scan.setdefault(ep.scan, []).append(i)
    groups = sorted(by_scan.values(), key=len, reverse=True)
    if len(groups) < WORKERS:  # one scan: split its episodes instead
        flat = [i for g in groups for i in g]
        groups = [flat[k::WORKERS] for k in range(WORKERS)]
    chunks: list[list[int]] = [[] for _ in range(WORKERS)]
    for g in groups:  # largest first onto the least loaded worker
        min(chunks, key=len).extend(g)
    chunks = [sorted(c) for c in chunks if c]
    futs = [pool.submit(_evaluate, [episodes[i] for i in c], policy, connectivity_dir, kwargs) for c in chunks]
    out: list = [None] * len(episodes)
    for c, f in zip(chunks, futs, strict=True):
        for i, rec in zip(c, f.result(), strict=True):
            out[i] = rec
    return out
