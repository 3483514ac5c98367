"""OS file locks: one writer per trial store, one havln-robot stack per ROS domain on a machine.

Pure Python (stdlib ``fcntl``; Linux/macOS). A lock is an exclusive ``flock`` on a small lock
file, held from :func:`acquire` until :meth:`HeldLock.release` or the process ends -- the kernel
drops it when the process dies, also on ``kill -9``, so a stale lock file never blocks anybody.
The holder writes ``pid=... host=... since=... what=...`` into the file so that a refused process
can name it.

Within one process a lock is re-entrant (counted): the demo holds its store's lock for the whole
run and the trial_logger_node it starts takes it again. ``flock`` locks of two open files of the
same path conflict even inside one process, so a per-process registry keeps one open file per path.

Readers test the lock with :func:`holder` (a non-blocking shared ``flock`` taken and dropped at
once); a writer that meets such a probe retries for :data:`PROBE_GRACE_S` before it gives up.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import stat
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

#: How long (s) :func:`acquire` retries a busy lock: long enough for a reader's probe to go away,
#: far too short to wait for a real holder.
PROBE_GRACE_S = 1.0

_registry: dict[str, tuple[int, int]] = {}  # resolved lock path -> (fd, count)
_reg_lock = threading.Lock()


class LockBusy(RuntimeError):
    """Another process holds the lock; ``str()`` is one line naming it (``pid ...``)."""

    def __init__(self, path: Path, info: str) -> None:
        self.path = Path(path)
        self.info = info
        super().__init__(info)


class LockUnsafe(OSError):
    """The lock path is not a plain lock file of this user (a symbolic link, a folder, a FIFO, a hard
    link, ...): refused, never opened for writing. ``strerror`` / ``str()`` is one line naming the
    path and the fix."""

    def __init__(self, path: Path, why: str) -> None:
        self.path = Path(path)
        super().__init__(
            errno.EPERM, f"{why}; refusing to use it as a lock file: remove it (or set HAVLN_LOCK_DIR to a folder of your own)", str(path)
        )

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


#: Flags of every open of a lock file: never follow a symbolic link (a link planted in a shared temp
#: folder would make the lock truncate its target), never leak the descriptor into a child, never
#: block opening a FIFO.
_OPEN_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def _open_checked(path: Path, flags: int) -> int:
    """``os.open(path, flags | _OPEN_FLAGS)``, then the opened file must be a regular file with one link.

    Raises:
        LockUnsafe: a symbolic link, not a regular file, or a hard link to another file.
        OSError: the open failed otherwise.
    """
    try:
        fd = os.open(str(path), flags | _OPEN_FLAGS, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno in (errno.EEXIST, errno.EISDIR) and path.is_symlink()):
            raise LockUnsafe(path, "is a symbolic link") from None
        if exc.errno == errno.EISDIR:
            raise LockUnsafe(path, "is a folder") from None
        raise
    st = os.fstat(fd)
    why = ""
    if not stat.S_ISREG(st.st_mode):
        why = "is not a regular file"
    elif st.st_nlink != 1:
        why = f"has {st.st_nlink} hard links (another file's name)"
    if why:
        os.close(fd)
        raise LockUnsafe(path, why)
    os.set_blocking(fd, True)
    return fd


def _open_lock(path: Path) -> int:
    """A descriptor of the lock file ``path`` (created if missing): read-write when it is this user's,
    read-only when it is another user's (``flock`` works on either; another user's file is never written)."""
    try:
        fd = _open_checked(path, os.O_RDWR | os.O_CREAT)
    except PermissionError:  # another user's lock file (shared temp folder): flock works read-only too
        return _open_checked(path, os.O_RDONLY)
    if os.fstat(fd).st_uid != os.geteuid():  # another user's, writable by all: take it, never write to it
        os.close(fd)
        return _open_checked(path, os.O_RDONLY)
    return fd


@dataclass
class HeldLock:
    """A lock this process holds (see :func:`acquire`)."""

    path: Path

    def release(self) -> None:
        """Drop one hold; the lock is freed when the last hold of this process is released. Idempotent per hold."""
        if getattr(self, "_released", False):
            return
        self._released = True
        key = str(self.path)
        with _reg_lock:
            fd, n = _registry.get(key, (-1, 0))
            if n > 1:
                _registry[key] = (fd, n - 1)
                return
            _registry.pop(key, None)
        if fd >= 0:
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
            os.close(fd)  # closing the only open file of the lock drops the flock

    def __enter__(self) -> HeldLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_info(path: Path) -> str:
    try:
        fd = _open_checked(path, os.O_RDONLY)
    except OSError:
        return "a process that has not written its pid yet"
    try:
        text = os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    finally:
        os.close(fd)
    from havln_robot.text import terminal_safe  # another user's file: shown, never obeyed

    return terminal_safe(text) if text else "a process that has not written its pid yet"


def held_here(path: str | os.PathLike[str]) -> bool:
    """This process holds the lock at ``path``."""
    with _reg_lock:
        return str(Path(path).absolute()) in _registry


def acquire(path: str | os.PathLike[str], what: str = "") -> HeldLock:
    """Take the exclusive lock ``path`` (created with its folder if missing).

    Args:
        path: the lock file.
        what: a few words saying who holds it (written into the file, shown to refused processes).

    Returns:
        The held lock; keep it referenced and :meth:`~HeldLock.release` it when done.

    Raises:
        LockBusy: another process holds it (after :data:`PROBE_GRACE_S`); the message names its pid.
        LockUnsafe: ``path`` is a symbolic link, a folder, a FIFO or a hard link (opened with
            ``O_NOFOLLOW``: a link planted in a shared temp folder is refused, its target untouched).
        OSError: the lock file cannot be created or opened.
    """
    p = Path(path).absolute()
    key = str(p)
    with _reg_lock:
        if key in _registry:
            fd, n = _registry[key]
            _registry[key] = (fd, n + 1)
            return HeldLock(p)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = _open_lock(p)
        t_end = time.monotonic() + PROBE_GRACE_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() >= t_end:
                    os.close(fd)
                    raise LockBusy(p, _read_info(p)) from None
                time.sleep(0.02)
        info = f"pid={os.getpid()} host={socket.gethostname()} since={time.strftime('%Y-%m-%d %H:%M:%S')} what={what or ' '.join(sys.argv)[:200]}"
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (info + "\n").encode(), 0)
        except OSError:
            pass  # the lock is held; the note for others is a courtesy (e.g. a full disk, another user's file)
        _registry[key] = (fd, 1)
        return HeldLock(p)


def holder(path: str | os.PathLike[str]) -> str | None:
    """Who holds the lock at ``path``: its note (``pid=... ...``), or None when nobody does.

    Never creates the file (works on read-only media); this process's own hold counts.
    """
    p = Path(path).absolute()
    if held_here(p):
        return _read_info(p)
    try:
        fd = _open_checked(p, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return _read_info(p)
        return None
    finally:
        os.close(fd)  # also drops the probe's shared lock
    return None
