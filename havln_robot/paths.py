"""Where the project's files live, in a source checkout and in an installed package.

Pure Python. ``share_dir()`` is the ament share folder (``share/havln_robot``) when the
package is installed by colcon, else the repository root; ``data_dir()`` is the HA-VLN
reference data folder (``$HAVLN_DATA`` or ``../shared/data/ha-vln`` next to the checkout).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def share_dir() -> Path:
    """Folder holding ``config/``, ``launch/`` and ``models/``.

    Order: ``$HAVLN_SHARE``; the source checkout (if ``config/`` sits next to the package);
    ``<prefix>/share/havln_robot`` of the running interpreter or an ament install.
    """
    env = os.environ.get("HAVLN_SHARE")
    if env:
        return Path(env)
    if (REPO_ROOT / "config").is_dir():
        return REPO_ROOT
    for prefix in [sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)]:
        cand = Path(prefix) / "share" / "havln_robot"
        if (cand / "config").is_dir():
            return cand
    return REPO_ROOT


def config_dir() -> Path:
    return share_dir() / "config"


def models_dir() -> Path:
    return share_dir() / "models"


def data_dir() -> Path:
    """HA-VLN reference data (``$HAVLN_DATA`` or ``<repo>/../shared/data/ha-vln``); may not exist."""
    env = os.environ.get("HAVLN_DATA")
    if env:
        return Path(env)
    return REPO_ROOT.parent / "shared" / "data" / "ha-vln"


def resolve(path: str | os.PathLike[str]) -> Path:
    """Resolve a path from a config file: absolute, or relative to the cwd, else to the share folder.

    ``$DATA/...`` expands to :func:`data_dir`.
    """
    s = os.fspath(path)
    if s.startswith("$DATA"):
        return data_dir() / s[len("$DATA") :].lstrip("/")
    p = Path(s).expanduser()
    if p.is_absolute() or p.exists():
        return p
    return share_dir() / p
