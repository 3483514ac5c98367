"""Provenance of a trial: which policy / checkpoint (and its sha256), software and profile ran it.

Pure Python (hashlib, subprocess for ``git``; no torch, no ROS). trial_logger_node computes this
once at start and stores it with every trial it opens (store columns ``policy``, ``checkpoint``,
``checkpoint_sha256``, ``software``, ``profile``); the report shows it per trial and in its header.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from functools import lru_cache
from pathlib import Path

import havln_robot
from havln_robot.policy.registry import is_builtin


def sha256_file(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, hex; read in 1 MiB blocks (a 100 MB checkpoint takes ~0.3 s).

    Raises:
        OSError: the file cannot be read.
    """
    p = Path(path)
    st = p.stat()
    return _sha256_cached(str(p.resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=32)
def _sha256_cached(path: str, _size: int, _mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=1)
def software_version() -> str:
    """``havln_robot <version>`` plus ``git <commit>[+dirty]`` when the package runs from a git checkout."""
    out = f"havln_robot {havln_robot.__version__}"
    pkg = Path(havln_robot.__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(pkg), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
        if commit.returncode == 0 and commit.stdout.strip():
            dirty = subprocess.run(
                ["git", "-C", str(pkg), "status", "--porcelain", "--untracked-files=no", "--", "."],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            out += f", git {commit.stdout.strip()}" + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass  # no git, or not a checkout (installed package): the version alone
    return out


def resolve_checkpoint(spec: str) -> Path | None:
    """The checkpoint file a policy spec names (the agent's order: path as given, ``models/<spec>``,
    ``models/<spec>.pt``), or None for a builtin baseline / nothing found."""
    if not spec or is_builtin(spec):
        return None
    from havln_robot.paths import models_dir

    for c in (Path(spec).expanduser(), models_dir() / spec, models_dir() / f"{spec}.pt"):
        if c.is_file():
            return c.resolve()
    return None


def collect(policy: str = "", profile: str = "") -> dict[str, str]:
    """Provenance fields for the trials of one logger run.

    Args:
        policy: the agent's ``policy`` parameter (checkpoint path, name in models/, or builtin spec).
        profile: the deployment profile file the stack runs with.

    Returns:
        ``{"policy", "checkpoint", "checkpoint_sha256", "software", "profile"}``; unknown parts are
        ``""`` (e.g. an unreadable checkpoint has no hash; the trial is still recorded).
    """
    ckpt = resolve_checkpoint(policy)
    digest = ""
    if ckpt is not None:
        try:
            digest = sha256_file(ckpt)
        except OSError:
            digest = ""
    name = ckpt.stem if ckpt is not None else policy
    return {
        "policy": name,
        "checkpoint": str(ckpt) if ckpt is not None else "",
        "checkpoint_sha256": digest,
        "software": software_version(),
        "profile": str(profile),
    }
