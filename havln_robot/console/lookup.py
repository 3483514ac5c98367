"""Start a trial by HA-R2R episode id: the episode's instruction from the loaded episodes file."""

from __future__ import annotations

import threading
from pathlib import Path

from havln_robot.episodes import EpisodeError, load_episodes

_cache: dict[tuple[str, float], dict[str, str]] = {}
_lock = threading.Lock()


def instruction_for(episodes_file: str | Path, episode_id: str) -> str:
    """The instruction of ``episode_id`` in ``episodes_file`` (read once per file version).

    Raises:
        ValueError: no file configured / not found, unreadable, or no such id (one line).
    """
    if not str(episodes_file or ""):
        raise ValueError(f"episode {episode_id}: no HA-R2R data loaded (console_node.episodes_file is empty); type the instruction")
    from havln_robot.paths import input_file_problem

    p = Path(episodes_file).expanduser()
    why = input_file_problem(p)
    if why is not None:  # a folder is named as a folder, not "not found"
        fix = (
            "set console_node.episodes_file to the episodes file (*.json / *.json.gz)"
            if p.exists()
            else "get the data with `havln-robot data fetch`"
        )
        raise ValueError(f"episode {episode_id}: episodes_file {p}: {why}; {fix}, or type the instruction")
    key = (str(p), p.stat().st_mtime)
    with _lock:
        if key not in _cache:
            try:
                _cache[key] = {e.episode_id: e.instruction for e in load_episodes(p, instruction_index=0)}
            except EpisodeError as exc:
                raise ValueError(f"episodes_file: {exc}") from None
        table = _cache[key]
    if episode_id not in table:
        raise ValueError(f"episode {episode_id!r} is not in {p.name} ({len(table)} episodes)")
    return table[episode_id]
