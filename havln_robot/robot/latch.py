"""The Go2's e-stop latch, kept on disk so that it survives a restart of any node and of the computer.

After ``Damp`` (go2/estop) nothing may stand the robot up or move it until an operator calls
``go2/recover``. The driver records the Damp in a small file, one per robot, before it answers the
e-stop; a driver that starts (a respawn, a reboot of the Jetson) and finds the file stays latched:
it sends neither ``BalanceStand`` nor ``Move``. Only ``go2/recover`` removes it.

Default place: ``<user state folder>/estop/<robot id>.json`` (:func:`havln_robot.paths.user_state_root`;
Linux ``~/.local/state/havln_robot/estop/``). The file holds ``{"robot_id", "reason", "t_wall"}``
(t_wall: UNIX time, s).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from havln_robot import jsonio
from havln_robot.paths import atomic_output


def default_latch_path(robot_id: str) -> Path:
    """The latch file of ``robot_id`` in the user state folder (the id made file-name safe)."""
    from havln_robot.paths import user_state_root

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", robot_id).strip("._") or "go2"
    return user_state_root() / "estop" / f"{safe}.json"


class EstopLatch:
    """The on-disk e-stop latch of one robot.

    Args:
        path: the latch file.
        robot_id: written into the file (the robot it belongs to).

    Writes are atomic (temporary file, fsync, rename, fsync of the folder), so a power cut leaves
    the old state or the new one.
    """

    def __init__(self, path: str | os.PathLike[str], robot_id: str) -> None:
        self.path = Path(path)
        self.robot_id = robot_id

    def is_set(self) -> bool:
        """True when the latch file exists (an unreadable or damaged file counts as set: fail safe)."""
        return self.path.exists()

    def read(self) -> dict[str, Any] | None:
        """The recorded latch (``{"robot_id", "reason", "t_wall"}``), ``{"reason": "unreadable ..."}``
        for a damaged file, None when not set."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            return {"reason": f"unreadable latch file {self.path}: {exc}"}
        try:
            doc = json.loads(text)
        except ValueError:
            return {"reason": f"damaged latch file {self.path}"}
        return doc if isinstance(doc, dict) else {"reason": f"damaged latch file {self.path}"}

    def set(self, reason: str) -> None:
        """Record the latch (atomic, durable).

        Raises:
            OSError: the folder cannot be created or written (the caller keeps its in-memory latch).
        """
        data = jsonio.dumps({"robot_id": self.robot_id, "reason": reason, "t_wall": time.time()})
        with atomic_output(self.path) as tmp, tmp.open("w", encoding="utf-8") as f:
            f.write(data + "\n")
            f.flush()
            os.fsync(f.fileno())  # the latch must survive a power cut right after Damp
        _fsync_dir(self.path.parent)

    def clear(self) -> None:
        """Remove the latch (go2/recover only); no error when it is not set."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return
        _fsync_dir(self.path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
