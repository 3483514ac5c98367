"""Writers that replace their output through a temporary file keep a symbolic link at the
destination a link (QA of issue 15: ``pack -o link.zip`` replaced the user's link by a file).

One rule, ``paths.atomic_output``, used by every such writer: the challenge zip, split files,
checkpoints and the trial store's backup; each is checked here through its public entry point.
"""

from __future__ import annotations

import json
import os
import sqlite3
import zipfile
from pathlib import Path

import pytest

from havln_robot.cli import main
from havln_robot.paths import atomic_output


def _linked(tmp_path: Path, name: str) -> tuple[Path, Path]:
    real_dir = tmp_path / "real"
    real_dir.mkdir(exist_ok=True)
    real = real_dir / name
    real.write_bytes(b"old")
    link = tmp_path / ("link-" + name)
    link.symlink_to(real)
    return link, real


def test_atomic_output_writes_through_a_link_and_cleans_up_on_error(tmp_path: Path) -> None:
    link, real = _linked(tmp_path, "a.txt")
    with atomic_output(link) as tmp:
        assert tmp.parent == real.parent and tmp != real
        tmp.write_text("new")
    assert link.is_symlink() and real.read_text() == "new"
    with pytest.raises(RuntimeError), atomic_output(link) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert real.read_text() == "new" and sorted(p.name for p in real.parent.iterdir()) == ["a.txt"]


def test_atomic_output_keeps_the_permissions_of_an_existing_file(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text("{}")
    os.chmod(f, 0o640)
    with atomic_output(f) as tmp:
        tmp.write_text("[]")
    assert f.stat().st_mode & 0o777 == 0o640 and f.read_text() == "[]"


def test_pack_writes_through_a_symlinked_output(tmp_path: Path) -> None:
    for split in ("val_seen", "val_unseen"):
        (tmp_path / f"{split}.json").write_text(
            json.dumps({"format_version": 1, "split": split, "episodes": [{"episode_id": "1", "actions": ["STOP"]}]})
        )
        (tmp_path / f"collision_num_{split}.json").write_text(json.dumps({"1": 0}))
    link, real = _linked(tmp_path, "submission.zip")
    args = ["pack", str(tmp_path / "val_seen.json"), str(tmp_path / "val_unseen.json"), "-o", str(link)]
    for split in ("val_seen", "val_unseen"):
        args += ["--manifest", f"{split}={tmp_path / f'collision_num_{split}.json'}"]
    assert main(args) == 0
    assert link.is_symlink() and zipfile.is_zipfile(real)


def test_split_file_and_checkpoint_write_through_links(tmp_path: Path) -> None:
    import torch

    from havln_robot.challenge.format import read_split_file, write_split_file
    from havln_robot.policy.checkpoint import save_checkpoint

    link, real = _linked(tmp_path, "val_seen.json")
    write_split_file(link, "val_seen", {"1": ["STOP"]})
    assert link.is_symlink() and read_split_file(real).split == "val_seen"

    from havln_robot.policy.checkpoint import KINDS

    link, real = _linked(tmp_path, "model.pt")
    save_checkpoint(link, torch.nn.Linear(2, 2), sorted(KINDS)[0], {})
    assert link.is_symlink() and real.stat().st_size > 100


def test_trial_backup_writes_through_a_link(tmp_path: Path) -> None:
    db = tmp_path / "trials.db"
    assert main(["trial", "--db", str(db), "start", "--platform", "sim", "--region", "office"]) == 0
    link, real = _linked(tmp_path, "backup.db")
    assert main(["trial", "--db", str(db), "backup", str(link), "--overwrite"]) == 0
    assert link.is_symlink()
    with sqlite3.connect(real) as c:
        assert c.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 1
