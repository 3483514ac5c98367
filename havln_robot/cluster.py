"""The Ray engine of ``havln-robot eval`` and ``havln-robot sweep``: map one function over many jobs on Ray.

Ray (https://docs.ray.io) schedules the jobs; this module only connects to it, submits one Ray task
per job, collects the results as they finish and reports them. No scheduler of our own.

* ``local``: start a Ray runtime in this process's session with ``num_cpus`` CPUs (default: all
  logical cores), no dashboard, usage statistics off, and nothing leaves the machine: the node's
  address is 127.0.0.1 (Ray's single-machine mode, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``), and
  the Ray processes get ``http_proxy`` = a closed loopback port with ``no_proxy`` = the loopback
  names, because Ray 2.60's dashboard process probes the cloud metadata address 169.254.169.254
  (and resolves metadata.google.internal) at start even with usage statistics off (measured with
  strace; ``ray/_common/usage/usage_lib.py`` ``get_cloud_from_metadata_requests``). The runtime is
  shut down when the run ends.
* ``auto``: connect to the cluster ``ray start`` started on this machine (``RAY_ADDRESS`` or the
  latest session). ``ADDRESS`` (``host:port`` of the head's GCS): connect to that cluster.
  docs/scale.md says how to start one and what every node needs.
* A Ray runtime already connected in this process (a test session's) is used as it is.

Each task asks for one CPU, so a node runs as many jobs at once as it has CPUs. A task whose worker
process dies (killed, out of memory, node lost) is run again by Ray, up to ``max_retries`` times
(Ray's system-failure retry); results already collected are kept either way. An exception raised
by the job itself is not retried: it is deterministic, so the job is reported as failed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

LOOPBACK: str = "127.0.0.1"
_CLOSED_PROXY: str = "http://127.0.0.1:9"
"""A loopback port nothing listens on (discard): HTTP requests of the local Ray processes fail at once, locally."""
_LOCAL_ENV: dict[str, str] = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # node address = 127.0.0.1 (ray/_private/services.py get_node_ip_address)
    "http_proxy": _CLOSED_PROXY,
    "https_proxy": _CLOSED_PROXY,
    "HTTP_PROXY": _CLOSED_PROXY,
    "HTTPS_PROXY": _CLOSED_PROXY,
    "no_proxy": "127.0.0.1,localhost,::1",
    "NO_PROXY": "127.0.0.1,localhost,::1",
}
MAX_RETRIES: int = 3
"""Runs of a job after its worker process died (Ray ``max_retries``), before it is reported as failed."""


class ClusterError(RuntimeError):
    """Ray is missing, or the cluster cannot be reached; the one-line message says what to do."""


@dataclass
class Outcome:
    """What :func:`run_jobs` did.

    Attributes:
        finished: jobs whose result was delivered to ``on_result``.
        failed: job position → one-line reason (the job raised, or its worker died more than ``max_retries`` times).
        cpus: CPUs of the Ray cluster used (0 for the serial engine).
        nodes: alive Ray nodes.
    """

    finished: int = 0
    failed: dict[int, str] = field(default_factory=dict)
    cpus: float = 0.0
    nodes: int = 0


def parse_target(ray: str | None, workers: int | None) -> tuple[str, int | None] | None:
    """The engine asked for by ``--ray`` / ``--workers``: None = serial, else (``local`` | ``auto`` | address, CPUs).

    Raises:
        ValueError: ``--workers`` < 1, or given with a cluster address (a cluster has its own CPUs).
    """
    if workers is not None and workers < 1:
        raise ValueError(f"--workers {workers}: give at least 1 (local Ray worker processes)")
    if ray is None:
        return None if workers is None else ("local", workers)
    ray = ray.strip()
    if not ray:
        raise ValueError("--ray: give auto, local or a cluster address host:port")
    if workers is not None and ray != "local":
        raise ValueError(f"--workers {workers} with --ray {ray}: a cluster has its own CPUs; drop --workers or use --ray local")
    return ray, workers


def _import_ray(local: bool = False):
    """Import ray with usage statistics off; ``local``: in single-machine mode (read by ray at import time)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report leaves the machine
    if local and "ray" not in sys.modules:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    try:
        import ray
    except ImportError:
        raise ClusterError("Ray is not installed in this environment; run 'make setup' (requirements.lock pins ray)") from None
    return ray


def connect(target: str, num_cpus: int | None = None) -> bool:
    """Connect this process to Ray (see the module docstring); returns True when it started the runtime.

    Args:
        target: ``local``, ``auto`` or a cluster address ``host:port``.
        num_cpus: CPUs of a ``local`` runtime (default: the machine's logical cores).

    Raises:
        ClusterError: Ray missing, or the cluster cannot be reached (names the address and the fix).
    """
    ray = _import_ray(local=target == "local")
    if ray.is_initialized():
        return False
    if target == "local" and getattr(getattr(ray._private, "ray_constants", None), "ENABLE_RAY_CLUSTER", False):
        raise ClusterError(
            "ray was imported before havln_robot.cluster.connect('local') and would listen on every address; "
            "import it after connect, or set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 before importing it"
        )
    import logging

    saved = {k: os.environ.get(k) for k in _LOCAL_ENV}
    try:
        if target == "local":
            os.environ.update(_LOCAL_ENV)  # inherited by the Ray processes started now; restored below
            ray.init(
                address="local",
                num_cpus=num_cpus or os.cpu_count() or 1,
                include_dashboard=False,
                _node_ip_address=LOOPBACK,
                logging_level=logging.WARNING,
            )
        else:
            ray.init(address=target, logging_level=logging.WARNING)
    except ConnectionError as exc:
        raise ClusterError(
            f"--ray {target}: cannot reach the Ray cluster ({exc}); start it with 'ray start --head' (docs/scale.md)"
        ) from None
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return True


def disconnect() -> None:
    """Shut this process's Ray runtime down (only call it after :func:`connect` returned True)."""
    ray = _import_ray()
    if ray.is_initialized():
        ray.shutdown()


def cluster_size() -> tuple[float, int]:
    """(CPUs, alive nodes) of the connected Ray cluster."""
    ray = _import_ray()
    cpus = float(ray.cluster_resources().get("CPU", 0.0))
    nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
    return cpus, nodes


def run_jobs(
    fn: Callable[[Any], Any],
    jobs: Sequence[Any],
    on_result: Callable[[Any], None],
    max_retries: int = MAX_RETRIES,
) -> Outcome:
    """Run ``fn(job)`` for every job as Ray tasks on the connected cluster; ``on_result(result)`` as each finishes.

    Args:
        fn: a module-level function (workers import it by name: the same havln_robot must be
            installed on every node).
        jobs: picklable job objects; submitted in this order.
        on_result: called in this process, in completion order, with each result.
        max_retries: re-runs of a task whose worker process died.

    Returns:
        :class:`Outcome`; ``failed`` holds the jobs that raised or whose worker kept dying.

    Raises:
        ClusterError: no Ray runtime is connected (call :func:`connect` first).
    """
    ray = _import_ray()
    if not ray.is_initialized():
        raise ClusterError("no Ray runtime connected; call havln_robot.cluster.connect first")
    cpus, nodes = cluster_size()
    out = Outcome(cpus=cpus, nodes=nodes)
    task = ray.remote(num_cpus=1, max_retries=max_retries, retry_exceptions=False)(fn)
    pending = {task.remote(job): k for k, job in enumerate(jobs)}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            k = pending.pop(ref)
            try:
                res = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:  # the job raised: deterministic, not retried
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                out.failed[k] = f"{type(cause).__name__}: {str(cause).strip().splitlines()[-1] if str(cause).strip() else ''}"
                continue
            except ray.exceptions.RayError as exc:  # worker died more than max_retries times, node lost, ...
                text = str(exc).strip().splitlines()
                out.failed[k] = f"{type(exc).__name__}: {text[0] if text else ''}"
                continue
            on_result(res)
            out.finished += 1
    return out


def describe(target: str, started: bool, cpus: float, nodes: int) -> str:
    """One line naming the engine, e.g. ``Ray local (2 CPUs on 1 node, 127.0.0.1)``."""
    where = f", {LOOPBACK}" if target == "local" and started else ""
    return f"Ray {target} ({cpus:g} CPUs on {nodes} node{'s' if nodes != 1 else ''}{where})"


def progress_bar(total: int, initial: int, quiet: bool, unit: str = "episode"):
    """The one progress bar of a run (tqdm on stderr; disabled with ``quiet``)."""
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit=unit, file=sys.stderr, disable=quiet, mininterval=1.0, dynamic_ncols=True)
