"""Where the project's files live, in a source checkout and in an installed package.

Pure Python. ``share_dir()`` is the ament share folder (``share/havln_robot``) when the
package is installed by colcon, else the repository root; ``data_dir()`` is the HA-VLN
data folder (``$HAVLN_DATA``, else the user data folder that ``havln-robot data fetch`` fills).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import platformdirs

#: Application name of the per-user folders (platformdirs).
APP_NAME = "havln_robot"

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


#: Subfolders of the HA-VLN data layout (docs/data.md).
DATA_LAYOUT = ("ha_r2r_de", "r2r", "connectivity", "challenge")


def user_data_dir() -> Path:
    """The per-user HA-VLN data folder, ``<platformdirs user_data_dir("havln_robot")>/ha-vln``.

    On Linux ``$XDG_DATA_HOME/havln_robot/ha-vln`` (default ``~/.local/share/havln_robot/ha-vln``).
    Not created here.
    """
    return user_data_root() / "ha-vln"


def holds_data(folder: Path) -> bool:
    """True when ``folder`` has at least one non-empty subfolder of :data:`DATA_LAYOUT`."""
    for sub in DATA_LAYOUT:
        d = folder / sub
        try:
            if d.is_dir() and any(d.iterdir()):
                return True
        except OSError:
            continue
    return False


def data_dir_and_origin() -> tuple[Path, str]:
    """The HA-VLN data folder and why it was chosen (``"$HAVLN_DATA"``, ``"user"`` or ``"checkout"``).

    Order: ``$HAVLN_DATA``; the user data folder (:func:`user_data_dir`) when it holds data; the
    development/CI copy ``<repo>/../shared/data/ha-vln`` when it exists; else the user data folder,
    so that messages about missing data name the place ``havln-robot data fetch`` writes to.
    """
    env = os.environ.get("HAVLN_DATA")
    if env:
        return Path(env), "$HAVLN_DATA"
    user = user_data_dir()
    if holds_data(user):
        return user, "user"
    dev = REPO_ROOT.parent / "shared" / "data" / "ha-vln"
    if holds_data(dev):
        return dev, "checkout"
    return user, "user"


def data_dir() -> Path:
    """HA-VLN data folder (see :func:`data_dir_and_origin` for the order); may not exist."""
    return data_dir_and_origin()[0]


def fetch_dest_default() -> Path:
    """Where ``havln-robot data fetch`` writes without ``--dest``: ``$HAVLN_DATA``, else :func:`user_data_dir`."""
    env = os.environ.get("HAVLN_DATA")
    return Path(env) if env else user_data_dir()


def user_data_root() -> Path:
    """The per-user data folder of havln_robot (platformdirs ``user_data_dir``).

    Linux: ``$XDG_DATA_HOME/havln_robot`` (default ``~/.local/share/havln_robot``); macOS:
    ``~/Library/Application Support/havln_robot``; Windows: ``%LOCALAPPDATA%\\havln_robot``.
    Trial stores live under ``trials/<profile>/`` in it (:func:`havln_robot.trials.store.default_db_path`).
    """
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def user_state_root() -> Path:
    """The per-user state folder of havln_robot (platformdirs ``user_state_dir``; Linux
    ``$XDG_STATE_HOME/havln_robot``, default ``~/.local/state/havln_robot``).

    Holds state that must survive a restart of a process or of the computer (the Go2's e-stop latch,
    :mod:`havln_robot.robot.latch`).
    """
    return Path(platformdirs.user_state_dir(APP_NAME, appauthor=False))


def user_cache_root() -> Path:
    """The per-user cache folder of havln_robot (platformdirs ``user_cache_dir``; Linux ``~/.cache/havln_robot``).

    Holds derived files that can be rebuilt at any time (scene meshes built from the navigation graphs).
    """
    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


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


def input_file_problem(path: str | os.PathLike[str], missing: str = "not found") -> str | None:
    """The one check of an option that names an input file: None when ``path`` is a file, else what
    it is instead, worded for a one-line message after the path (the caller adds what to give):
    ``"is a folder, not a file"``, ``missing`` (default ``"not found"``) when nothing is there, or
    ``"not a regular file (a device, pipe or socket)"``.

    Every reader of a file option words its message with this (episodes, checkpoints, trial stores,
    run and prediction files, profiles, plans), so a folder is never reported as "not found".
    """
    p = Path(path)
    try:
        if p.is_file():
            return None
        if p.is_dir():
            return "is a folder, not a file"
        if p.exists():
            return "not a regular file (a device, pipe or socket)"
    except OSError as exc:  # a path too long, a folder without search permission
        return f"cannot be read ({exc.strerror or exc})"
    return missing


def input_folder_problem(path: str | os.PathLike[str], missing: str = "not found") -> str | None:
    """The same for an option that names an input folder: None when ``path`` is a folder, else
    ``"is a file, not a folder"`` or ``missing``."""
    p = Path(path)
    if p.is_dir():
        return None
    if p.exists():
        return "is a file, not a folder"
    return missing


class OutputPathError(ValueError):
    """An output path cannot be written (a file where a folder is wanted, read-only, ...)."""


def prepare_out_dir(path: str | os.PathLike[str], flag: str) -> Path:
    """Create the output folder ``path`` (parents too) and check it can be written, before any work.

    Args:
        path: the folder.
        flag: the command-line flag that named it, for the message (e.g. ``--out``).

    Returns:
        The folder as a Path.

    Raises:
        OutputPathError: one line naming ``flag``, the path and the reason.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"{flag} {p}: is a file, not a folder; give a folder to write into")
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / f".havln_write_test_{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutputPathError(f"{flag} {p}: cannot write there ({exc.strerror or exc}); choose another folder") from None
    return p


def refuse_overwrite(target: str | os.PathLike[str], flag: str, overwrite: bool, names: tuple[str, ...] = (), also: str = "") -> None:
    """Refuse, before any work, to replace the results of an earlier run unless ``--overwrite`` was given.

    The one rule of every command that writes results (eval, sweep, replay, report, pack, train,
    figures, the benches' ``--json``; export checks its split files the same way): an existing
    regular file among its outputs is replaced only with ``--overwrite``. A device or pipe
    (``/dev/stdout``) holds no earlier results and is not refused.

    Args:
        target: the output file, or the output folder when ``names`` is given.
        flag: the option that named it (``--out``, ``--json``, ``-o``).
        overwrite: the command's ``--overwrite``.
        names: the file names (glob patterns allowed, also below subfolders: ``demo_*/*``) the command
            writes into the folder ``target``.
        also: another way out for the message, e.g. ``", --resume to continue it"``.

    Raises:
        OutputPathError: one line naming ``flag``, the files that exist, ``--overwrite`` and the other choices.
    """
    if overwrite:
        return
    base = Path(target)
    if names:
        taken = sorted({p.relative_to(base).as_posix() for pat in names for p in base.glob(pat) if p.is_file()}) if base.is_dir() else []
        if taken:
            shown = ", ".join(taken[:4]) + (", ..." if len(taken) > 4 else "")
            raise OutputPathError(
                f"{flag} {base}: holds the results of an earlier run ({shown}); pass --overwrite to replace them{also}, "
                f"or choose another {flag}"
            )
    elif base.is_file():
        raise OutputPathError(f"{flag} {base}: already exists; pass --overwrite to replace it{also}, or choose another {flag}")


def check_out_file(
    path: str | os.PathLike[str],
    flag: str,
    inputs: tuple[str | os.PathLike[str], ...] = (),
    atomic: bool = False,
    overwrite: bool | None = None,
    example: str = "out.json",
) -> Path:
    """Check that the output file ``path`` can be written and is not one of ``inputs``, before any work.

    An existing writable file (or ``/dev/stdout``, ``/dev/null``) is accepted as it is; otherwise
    the parent folder is created and probed. ``atomic``: the writer replaces the file through a
    temporary file next to it, so the folder must be writable even when the file exists, and an
    existing device, pipe or socket is refused (the rename would replace the node itself).
    ``overwrite``: the file holds results, and an existing one is replaced only when this (the
    command's ``--overwrite``) is True (:func:`refuse_overwrite`); None: no such rule.

    Raises:
        OutputPathError: one line naming ``flag``: a folder, an input file, an unwritable place, or
            earlier results without ``--overwrite``.
    """
    p = Path(path)
    if len(p.name.encode("utf-8", "surrogateescape")) > MAX_COMPONENT_BYTES:
        raise OutputPathError(f"{flag} {str(p)[:60]}...: the file name is longer than {MAX_COMPONENT_BYTES} bytes; choose a shorter name")
    if p.is_dir():
        raise OutputPathError(f"{flag} {p}: is a folder; give a file name, e.g. {p / example}")
    for i in inputs:
        if Path(i).exists() and p.exists() and p.resolve() == Path(i).resolve():
            raise OutputPathError(f"{flag} {p}: is also an input; writing it would destroy the input -- choose another name")
    if atomic and p.exists() and not p.is_file():
        # the writer would os.replace() the device / pipe itself (as root: /dev/null gone for everyone)
        raise OutputPathError(
            f"{flag} {p}: not a regular file (a device, pipe or socket); the output is written to a temporary file "
            "and renamed over it, which would replace it -- give a file name"
        )
    if overwrite is not None:
        refuse_overwrite(p, flag, overwrite)
    if p.exists() and not atomic:
        if not os.access(p, os.W_OK):
            raise OutputPathError(f"{flag} {p}: not writable; choose another file")
        return p
    prepare_out_dir(p.parent, flag)
    return p


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Write a file all at once: yield a fresh temporary path in the destination's folder; on a
    clean exit it is renamed over the destination, on an exception it is removed.

    A destination that is a symbolic link is written THROUGH the link (the link's target is
    replaced, the link stays), as a plain ``open(path, "w")`` would: renaming over the link itself
    would silently turn the user's link into a file. The temporary name is unique (``mkstemp``),
    so two writers never share it and an attacker-planted ``<name>.tmp`` link is never followed;
    it is ``.<name>.<owner>.<random>.tmp`` with ``<name>`` cut so that it fits in
    :data:`MAX_COMPONENT_BYTES` (a 250-byte output name must not fail only when it is written).
    ``<owner>`` (:func:`staging_owner`) lets the next write of the same file remove the temporary
    of a writer killed with SIGKILL (:func:`clean_stale_staging`).

    Args:
        path: the output file (its folder is created).

    Yields:
        The temporary file's path (an empty file, mode 0600 until the rename).

    Raises:
        OSError: the folder cannot be created or written, or the rename failed. An error raised
            while the block writes (a full disk: ``[Errno 28]`` from a file object, which names no
            file) carries the destination as its ``filename`` (:func:`os_error_text` words it).
    """
    target = Path(os.path.realpath(Path(path).expanduser()))
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_staging(target)
    fd, name = tempfile.mkstemp(prefix=_temp_prefix(target.name) + staging_owner() + ".", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        try:
            yield tmp
        except OSError as exc:
            if exc.filename in (str(tmp), name):
                exc.filename = None
            _name_error(exc, path)
            raise
        try:
            mode = target.stat().st_mode & 0o777  # keep an existing file's permissions
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def staged_output_dir(folder: str | os.PathLike[str], stale: tuple[str, ...] = (), leaf: str | None = None) -> Iterator[Path]:
    """Write a folder's set of outputs all at once: yield an empty staging folder (hidden, inside
    ``folder``, so on the same filesystem); on a clean exit each file written there is renamed
    over its name in ``folder`` (one atomic rename per file, which needs no disk space), then the
    earlier outputs matching ``stale`` that this run did not write are removed; on an exception
    the staging folder is removed and ``folder`` is left exactly as it was (a full disk, a failed
    plot or a refused run never leaves a mix of old and new or a truncated file).

    Files already in ``folder`` that neither this run writes nor ``stale`` matches are kept.
    An output that is a symbolic link is written through it (as :func:`atomic_output` does).
    A run killed with SIGKILL cannot remove its staging folder: it names its owner
    (:func:`new_staging_dir`), and the next run into ``folder`` removes it once that process is gone
    (:func:`clean_stale_staging`).

    Args:
        folder: the output folder (created, parents too; removed again on failure when it was
            created here and is empty).
        stale: glob patterns of the earlier outputs that a complete new set replaces (e.g.
            ``trajectories*.png``: an earlier report's ``trajectories_3.png`` must not survive a
            new report that has two figures).
        leaf: write into ``<staging>/<leaf>`` instead (a writer that names its files after its
            folder, like a bag folder); the files of that subfolder are moved.

    Yields:
        The staging folder (Path) to write the files into (only plain files at its top level are moved).

    Raises:
        OSError: the folder cannot be created, or a rename failed.
    """
    dest = Path(folder).expanduser()
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    clean_stale_staging(dest)
    root = new_staging_dir(dest)
    stage = root / leaf if leaf else root
    stage.mkdir(exist_ok=True)
    try:
        try:
            yield stage
        except BaseException:
            if created:
                shutil.rmtree(root, ignore_errors=True)
                with contextlib.suppress(OSError):
                    dest.rmdir()
            raise
        written = sorted(p for p in stage.iterdir() if p.is_file() and not p.is_symlink())
        earlier = {p.name for pat in stale for p in dest.glob(pat) if p.is_file()}
        for p in written:
            os.replace(p, os.path.realpath(dest / p.name))
        for name in sorted(earlier - {p.name for p in written}):
            (dest / name).unlink(missing_ok=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def write_json(path: str | os.PathLike[str], doc: Any, **kwargs: Any) -> None:
    """``doc`` as JSON at ``path`` through :func:`atomic_output`: the old file or the new one, never
    half (``kwargs``: :func:`havln_robot.jsonio.write`'s, e.g. ``nonfinite="null"``, ``indent``)."""
    from havln_robot import jsonio

    with atomic_output(path) as tmp:
        jsonio.write(tmp, doc, **kwargs)


def save_figure(fig: Any, path: str | os.PathLike[str], **kwargs: Any) -> Path:
    """``fig.savefig`` (a matplotlib Figure) through :func:`atomic_output`: the image is rendered into a
    temporary file beside ``path`` and renamed over it, so ``path`` is the old or the new complete image,
    never a truncated one (a full disk, a failed render). The format comes from ``path``'s suffix.

    Args:
        fig: the figure.
        path: the image file (``.png``, ``.pdf``, ``.svg`` ...).
        kwargs: passed to ``savefig`` (``dpi`` ...).

    Returns:
        ``path`` as a Path.

    Raises:
        OSError: the file cannot be written (``path`` untouched).
    """
    p = Path(path)
    with atomic_output(p) as tmp:
        fig.savefig(tmp, format=kwargs.pop("format", None) or p.suffix.lstrip(".").lower() or "png", **kwargs)
    return p


def swap_in_folder(new: str | os.PathLike[str], dest: str | os.PathLike[str]) -> Path:
    """Put the finished folder ``new`` in the place of ``dest`` (an earlier run's folder, same filesystem):
    ``dest`` is renamed aside into a staging folder beside it, ``new`` renamed to ``dest``, then the
    earlier folder is removed. Until this is called the earlier folder is untouched, so a run that
    failed never cost it; a run killed between the two renames left the earlier folder aside, and the
    next swap into ``dest`` puts it back first (:func:`clean_stale_staging`).

    Returns:
        ``dest`` as a Path.

    Raises:
        OSError: a rename failed (``dest`` is put back when the second rename fails).
    """
    src, dst = Path(new), Path(dest)
    clean_stale_staging(dst)
    aside = None
    if dst.exists() or dst.is_symlink():
        aside = new_staging_dir(dst.parent, f"{_cut(dst.name, 100)}.earlier") / "earlier"
        os.replace(dst, aside)
    try:
        os.replace(src, dst)
    except OSError:
        if aside is not None:
            os.replace(aside, dst)
            aside.parent.rmdir()
        raise
    if aside is not None:
        shutil.rmtree(aside.parent, ignore_errors=True)
    return dst


def _temp_prefix(name: str) -> str:
    """``.<name>.`` cut to leave room for the owner (:func:`staging_owner`, at most 20 bytes and a dot),
    mkstemp's 8 random characters and ``.tmp`` within :data:`MAX_COMPONENT_BYTES` bytes (UTF-8, never
    splitting a character)."""
    room = MAX_COMPONENT_BYTES - len(".") - len(".") - 21 - 8 - len(".tmp") - 8  # 8 spare: a future longer random part
    return f".{_cut(name, room)}."


def _cut(name: str, max_bytes: int) -> str:
    """``name`` cut to at most ``max_bytes`` bytes of UTF-8, never splitting a character."""
    raw = name.encode("utf-8", "surrogateescape")
    return raw[:max_bytes].decode("utf-8", "ignore") if len(raw) > max_bytes else name


# --- staging folders and temporary files of a killed run ------------------------------------------
#
# SIGKILL (kill -9, the OOM killer, a power cut) cannot be caught: a writer's ``finally`` never runs and
# its hidden staging folder or temporary file stays beside the output. Each is named after its owner,
# ``<pid>-<host>``; the next writer of the same output removes those whose owner is gone.

#: Name prefix of the hidden staging folders beside (or inside) an output (:func:`new_staging_dir`).
STAGING_PREFIX = ".havln_staging."
#: mkdtemp / mkstemp's random part.
_RANDOM = r"[a-z0-9_]{8}"
_OWNER = re.compile(r"(\d{1,10})-([0-9a-f]{8})")


@functools.cache
def _host_tag() -> str:
    """8 hex digits naming this host and PID namespace: a pid means something only there (a container
    or another machine writing into a shared folder has its own)."""
    import hashlib
    import socket

    try:
        ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        ns = 0
    return hashlib.sha256(f"{socket.gethostname()}\0{ns}".encode()).hexdigest()[:8]


def staging_owner(pid: int | None = None) -> str:
    """``<pid>-<host>``: the owner part of a staging folder's or temporary file's name.

    Args:
        pid: the owning process (default: this one).
    """
    return f"{os.getpid() if pid is None else pid}-{_host_tag()}"


def new_staging_dir(parent: str | os.PathLike[str], label: str = "") -> Path:
    """A new, empty, hidden staging folder in ``parent``: ``.havln_staging.<owner>[.<label>].<random>.tmp``.

    Args:
        parent: the folder (the output itself, or the folder holding it: same filesystem).
        label: the output it stages, when ``parent`` holds other outputs too (its name, cut to fit).

    Returns:
        The folder (mode 0700).
    """
    tag = f".{_cut(label, 120)}" if label else ""
    return Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{staging_owner()}{tag}.", suffix=".tmp", dir=parent))


def _pid_alive(pid: int) -> bool:
    """The process ``pid`` exists (a zombie or another user's process counts: never remove theirs)."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, another user's
        return True
    return True


def _stale_candidates(dest: Path) -> Iterator[tuple[Path, str, str]]:
    """``(path, owner, kind)`` of every staging folder or temporary file of ``dest`` a writer may have
    left: kind ``inside`` (staged_output_dir's, in ``dest``), ``stage`` (beside ``dest``, labelled
    with its name), ``aside`` (swap_in_folder's earlier folder) or ``temp`` (atomic_output's file)."""
    name = dest.name
    own = re.compile(re.escape(STAGING_PREFIX) + _OWNER.pattern + r"\.(.*)\.tmp")
    label = re.escape(_cut(name, 120))
    kinds = ((re.compile(_RANDOM), "stage_inside"), (re.compile(label + r"\." + _RANDOM), "stage"))
    kinds += ((re.compile(re.escape(_cut(f"{_cut(name, 100)}.earlier", 120)) + r"\." + _RANDOM), "aside"),)
    temp = re.compile(re.escape(_temp_prefix(name)) + _OWNER.pattern + r"\." + _RANDOM + r"\.tmp")
    places = [(dest.parent, False)] + ([(dest, True)] if dest.is_dir() and not dest.is_symlink() else [])
    for folder, inside in places:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            m = own.fullmatch(e.name)
            if m is not None:
                for pattern, kind in kinds:
                    if (kind == "stage_inside") == inside and pattern.fullmatch(m.group(3)):
                        yield Path(e.path), f"{m.group(1)}-{m.group(2)}", "inside" if inside else kind
                        break
            elif not inside:
                t = temp.fullmatch(e.name)
                if t is not None:
                    yield Path(e.path), f"{t.group(1)}-{t.group(2)}", "temp"


def clean_stale_staging(dest: str | os.PathLike[str], note: bool = True) -> list[tuple[Path, str]]:
    """Remove what writers of ``dest`` killed with SIGKILL left: staging folders inside or beside it,
    the earlier folder a swap had moved aside (put back first when ``dest`` is missing), temporary
    files of :func:`atomic_output`. Only those of this host whose owning process is gone are removed;
    the others are returned.

    Called by every writer (:func:`staged_output_dir`, :func:`swap_in_folder`, :func:`atomic_output`)
    before it starts; a command whose output must not be shared (``trial recover-bag``) calls it
    first and refuses while another run writes there.

    Args:
        dest: the output file or folder.
        note: print one ``havln-robot: note: ...`` line on stderr per folder or file removed or put back.

    Returns:
        ``(path, owner)`` of the staging folders and files kept: a process still running, or one of
        another host or container (its pid cannot be checked here).
    """
    dest = Path(dest)
    kept: list[tuple[Path, str]] = []
    tag = _host_tag()
    for path, owner, kind in list(_stale_candidates(dest)):
        pid, host = owner.split("-")
        if host != tag or int(pid) == os.getpid() or _pid_alive(int(pid)) or not _own(path):
            kept.append((path, owner))  # another user's (a shared temp folder): never moved or removed
            continue
        what = "temporary file" if kind == "temp" else "staging folder"
        try:
            if kind == "aside" and not (dest.exists() or dest.is_symlink()) and (path / "earlier").exists():
                os.replace(path / "earlier", dest)
                if note:
                    msg = f"put {dest} back from {path}: a run (pid {pid}) was killed while it swapped in a new one"
                    print(f"havln-robot: note: {msg}", file=sys.stderr)
            if kind == "temp" or path.is_symlink():
                path.unlink(missing_ok=True)
            else:
                shutil.rmtree(path)
        except OSError:
            if path.exists() or path.is_symlink():  # else another run removed it first
                kept.append((path, owner))
            continue
        if note:
            print(f"havln-robot: note: removed {path}, the {what} of an earlier run that was killed (pid {pid} is gone)", file=sys.stderr)
    return kept


def _own(path: Path) -> bool:
    """``path`` itself (not what a link points to) belongs to this user."""
    try:
        return path.lstat().st_uid == os.geteuid()
    except OSError:
        return False


def describe_owner(owner: str) -> str:
    """``"pid 123"`` for an owner of this host, ``"pid 123 of another host or container"`` otherwise."""
    pid, _, host = owner.partition("-")
    return f"pid {pid}" if host == _host_tag() else f"pid {pid} of another host or container"


@contextlib.contextmanager
def scratch_dir(parent: str | os.PathLike[str], label: str) -> Iterator[Path]:
    """A run's scratch folder in ``parent`` (a staging folder named after ``label``), removed at the end;
    one left by a run killed with SIGKILL is removed by the next run (:func:`clean_stale_staging`).

    Yields:
        The empty folder.
    """
    parent = Path(parent)
    clean_stale_staging(parent / label)
    d = new_staging_dir(parent, label)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


class UnsafePathError(OutputPathError):
    """A file or folder name taken from input data would leave its folder (``..``, ``/``, ...)."""


#: Longest name component most filesystems accept (ext4, XFS, tmpfs: 255 bytes).
MAX_COMPONENT_BYTES = 255


def safe_component(name: object, what: str) -> str:
    """Check that ``name`` (from input data: a split, a trial id, an episode or scan id) is one plain
    file-name component, so ``folder / name`` stays inside ``folder``.

    Refused: a non-string or empty name, ``.`` / ``..``, a path separator (``/``, ``\\``), a NUL or
    other control character, a leading ``~`` (home expansion by shells / ``expanduser``), more than
    :data:`MAX_COMPONENT_BYTES` bytes in UTF-8.

    Args:
        name: the candidate component.
        what: what it is and where it came from, for the message (e.g. ``"split of run record x.json:3"``).

    Returns:
        ``name`` unchanged.

    Raises:
        UnsafePathError: one line naming ``what``, the value and the rule it breaks.
    """
    if not isinstance(name, str) or not name:
        raise UnsafePathError(f"{what} {name!r} cannot name a file: expected a non-empty string")
    if name in (".", ".."):
        raise UnsafePathError(f"{what} {name!r} cannot name a file: '.' and '..' would leave the output folder")
    bad = [c for c in name if c in "/\\" or ord(c) < 32 or ord(c) == 127]
    if bad:
        raise UnsafePathError(
            f"{what} {name!r} cannot name a file: it holds {bad[0]!r} (path separators and control characters are refused)"
        )
    if name.startswith("~"):
        raise UnsafePathError(f"{what} {name!r} cannot name a file: a leading '~' would be read as a home folder")
    if len(name.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
        raise UnsafePathError(f"{what} {name[:40]!r}... cannot name a file: longer than {MAX_COMPONENT_BYTES} bytes")
    return name


def safe_child(root: str | os.PathLike[str], name: object, what: str) -> Path:
    """``root / name`` for a ``name`` taken from input data, checked by :func:`safe_component`.

    Also refuses a result that resolves outside ``root`` (an existing symlink named ``name`` that
    points elsewhere).

    Raises:
        UnsafePathError: one line naming ``what`` and the value.
    """
    base = Path(root)
    child = base / safe_component(name, what)
    if child.is_symlink():
        target = child.resolve()
        if base.resolve() not in target.parents:
            raise UnsafePathError(f"{what} {name!r}: {child} is a link to {target}, outside {base}; remove the link")
    return child


@contextlib.contextmanager
def scratch_home(prefix: str = "havln-home-") -> Iterator[Path]:
    """Point ``$HOME`` at a fresh temporary folder for the ``with`` block, then restore it and remove the folder.

    For third-party calls that write into ``$HOME`` with no switch to stop them: librealsense
    (pyrealsense2 >= 2.57) writes its usage statistics to ``~/.rum/rum.json`` whenever a context is
    created or a pipeline starts (``RS2_RUM_CLOUD_ENABLED`` only governs the upload, not the file).
    ``$HOME`` is process-wide: use it around short calls made from one thread.

    Yields:
        The temporary folder.
    """
    old = os.environ.get("HOME")
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ["HOME"] = str(tmp)
    try:
        yield tmp
    finally:
        if old is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = old
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


def mount_point(path: str | os.PathLike[str]) -> Path:
    """The mount point (file system) holding ``path``, or its nearest existing folder's."""
    p = Path(os.path.realpath(Path(path).expanduser()))
    while not p.exists() and p != p.parent:
        p = p.parent
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    return p


def os_error_text(exc: OSError) -> str:
    """One line for an :class:`OSError` that names the file and, for a full disk or quota, the file system.

    E.g. ``No space left on device: writing runs/sub.zip (file system /work: free some space or write elsewhere)``.
    """
    import errno

    text = exc.strerror or str(exc)
    where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) and getattr(exc, "filename", None):
        try:
            fs = mount_point(Path(os.fsdecode(exc.filename)).parent)
        except (OSError, ValueError):
            fs = None
        on = f" on the file system {fs}" if fs is not None else ""
        return f"{text}: writing {exc.filename}{on}; free some space there or write elsewhere"
    return f"{text}{where}"


def _name_error(exc: OSError, path: str | os.PathLike[str]) -> None:
    if not getattr(exc, "filename", None):
        exc.filename = os.fspath(path)


@contextlib.contextmanager
def naming_errors(path: str | os.PathLike[str]) -> Iterator[None]:
    """Re-raise an :class:`OSError` of the block that names no file (a write through a file object on
    a full disk) with ``path`` as its ``filename``, so the one-line error says which file (and disk)."""
    try:
        yield
    except OSError as exc:
        _name_error(exc, path)
        raise
