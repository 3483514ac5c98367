"""Shared pytest fixtures: DDS on loopback for every test, the HA-VLN data folder, a ROS context.

Tests never touch the real home folder: before any test runs, ``HOME`` and the XDG / ROS /
matplotlib folders point into a temporary directory (inherited by every node and CLI the tests
start), so default trial stores, caches and ROS logs land there. The data folder is resolved
first, so data a user fetched into their own data folder is still found (as ``$HAVLN_DATA``).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from havln_robot.dds import configure_dds
from havln_robot.paths import data_dir

REAL_HOME = Path(os.path.expanduser("~"))
if "HAVLN_DATA" not in os.environ and (data_dir() / "ha_r2r_de").is_dir():
    os.environ["HAVLN_DATA"] = str(data_dir())
TEST_HOME = Path(tempfile.mkdtemp(prefix="havln-test-home-"))
_HOME_VARS = {
    "HOME": "",
    "XDG_DATA_HOME": ".local/share",
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
    "XDG_STATE_HOME": ".local/state",
    "ROS_HOME": ".ros",
    "ROS_LOG_DIR": ".ros/log",
    "MPLCONFIGDIR": ".config/matplotlib",
}
for _var, _sub in _HOME_VARS.items():
    os.environ[_var] = str(TEST_HOME / _sub)
for _var in ("HAVLN_TRIALS_DB", "HAVLN_CACHE"):
    os.environ.pop(_var, None)

#: What the suite could leave in the real home folder if a default path escaped the redirect.
_GUARDED = [REAL_HOME / p for p in ("havln_trials", ".local/share/havln_robot", ".cache/havln_robot")]


def _stamp(p: Path) -> float | None:
    try:
        return max([p.stat().st_mtime] + [q.stat().st_mtime for q in p.rglob("*")])
    except OSError:
        return None


_BEFORE = {p: _stamp(p) for p in _GUARDED}


def pytest_sessionfinish(session, exitstatus):
    """Fail the run if the suite wrote into the real home folder's havln_robot paths."""
    touched = [str(p) for p in _GUARDED if _stamp(p) != _BEFORE[p]]
    shutil.rmtree(TEST_HOME, ignore_errors=True)
    if touched:
        print(f"\nERROR: the test suite wrote into the real home folder: {', '.join(touched)}")
        session.exitstatus = 1


# Every test process keeps DDS on loopback, whatever the calling shell had set.
os.environ.pop("HAVLN_DDS", None)
configure_dds()
os.environ.setdefault("MUJOCO_GL", "egl")

#: DDS domain ids of one test process: a block of this many from its ROS_DOMAIN_ID (:func:`domain`).
DOMAIN_BLOCK = 6
#: Most pytest-xdist workers one run spreads over its domains (make test: -n auto, --maxprocesses 4).
MAX_WORKERS = 4
#: Highest domain id Fast DDS and Cyclone DDS take with their default port mapping (7400 + 250 x id).
MAX_DOMAIN_ID = 232


def _first_domain() -> int:
    """This process's ROS_DOMAIN_ID (inherited by the nodes and CLIs it starts).

    The run's first id is the caller's ROS_DOMAIN_ID, else one drawn from the pid so that parallel
    runs on one machine do not cross-talk; the controller sets it before the pytest-xdist workers
    start, and worker ``gwN`` takes the N-th block of :data:`DOMAIN_BLOCK` ids after it."""
    if "ROS_DOMAIN_ID" not in os.environ:
        slots = (MAX_DOMAIN_ID - DOMAIN_BLOCK * MAX_WORKERS) // DOMAIN_BLOCK
        os.environ["ROS_DOMAIN_ID"] = str(1 + os.getpid() % slots * DOMAIN_BLOCK)
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    first = int(os.environ["ROS_DOMAIN_ID"]) + worker * DOMAIN_BLOCK
    if first + DOMAIN_BLOCK - 1 > MAX_DOMAIN_ID:
        raise pytest.UsageError(
            f"ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']} leaves worker {worker} no room for {DOMAIN_BLOCK} domain ids "
            f"(the highest is {MAX_DOMAIN_ID}); unset it or use one <= {MAX_DOMAIN_ID - DOMAIN_BLOCK * MAX_WORKERS}"
        )
    return first


ROS_DOMAIN_ID = _first_domain()
os.environ["ROS_DOMAIN_ID"] = str(ROS_DOMAIN_ID)


def domain(k: int) -> int:
    """The ``k``-th DDS domain id of this test process (0: its ROS domain; 1: the fake Go2's Unitree
    SDK domain; 2: a second stack's ROS domain; 3: a test's own ROS domain; 4: the domain-guard
    stacks; 5: a domain never joined). No other test process of the run uses it."""
    if not 0 <= k < DOMAIN_BLOCK:
        raise ValueError(f"domain index {k} outside 0..{DOMAIN_BLOCK - 1} (conftest.DOMAIN_BLOCK)")
    return ROS_DOMAIN_ID + k


@pytest.fixture(scope="session")
def havln_data():
    """Path of the HA-VLN data folder (:func:`havln_robot.paths.data_dir`); skips the test with a reason when it is absent."""
    d = data_dir()
    if not (d / "ha_r2r_de" / "HA_val_seen.json").is_file():
        pytest.skip(f"HA-VLN reference data not found at {d} (run `havln-robot data fetch`, or set HAVLN_DATA)")
    return d


def _ros_context():
    import rclpy

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=ROS_DOMAIN_ID, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    yield ctx
    rclpy.try_shutdown(context=ctx)


@pytest.fixture
def ros_context():
    """A fresh rclpy context on this run's ROS domain id (loopback DDS); shut down afterwards."""
    yield from _ros_context()


@pytest.fixture
def other_ros_context():
    """A second DDS participant on the same domain: another robot's stack on the same network."""
    yield from _ros_context()


@pytest.fixture
def free_port():
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def released_cma(tmp_path_factory):
    """A checkpoint in the released HA-VLN-CMA layout (test/released_cma.py): random weights whose head
    always says STOP, the pickled trainer config and the instruction vocabulary.

    The vocabulary is the data folder's when present (so ``havln-robot eval`` accepts it), else a
    synthetic 5,079-word list; ``vocab_path`` is a JSON file holding the same words.
    Returns a namespace: ``path``, ``vocab_path``, ``words``.
    """
    import json
    import types

    from released_cma import write_released_checkpoint

    from havln_robot.policy.tokenizer import default_vocab_path, fingerprint

    d = tmp_path_factory.mktemp("released_cma")
    try:
        words = json.loads(default_vocab_path().read_text(encoding="utf-8"))["word_list"]
    except (OSError, ValueError, KeyError):
        words = ["<pad>", "<unk>"] + [f"w{i}" for i in range(2, 5079)]
    vocab_path = d / "vocab.json"
    vocab_path.write_text(json.dumps({"word_list": words, "sha256": fingerprint(words)}))
    path = d / "CMA_PM_DA_Aug.pth"
    write_released_checkpoint(path, words)
    return types.SimpleNamespace(path=path, vocab_path=vocab_path, words=words)


@pytest.fixture(scope="session")
def trial_bag(tmp_path_factory):
    """A short trial bag recorded through trial_logger_node (test/bagreaders.py), shared by the bag
    reader tests: ``(bag folder, {topic: [published messages]}, {topic: publisher QoS})``."""
    import rclpy
    from bagreaders import record_trial_bag

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=ROS_DOMAIN_ID, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    try:
        return record_trial_bag(ctx, tmp_path_factory.mktemp("trial_bag"))
    finally:
        rclpy.try_shutdown(context=ctx)
