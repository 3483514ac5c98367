"""Writers that replace their output through a temporary file keep a symbolic link at the
destination a link (``pack -o link.zip`` replaced the user's link by a file).

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
    args = ["pack", str(tmp_path / "val_seen.json"), str(tmp_path / "val_unseen.json"), "-o", str(link), "--overwrite"]
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


def test_bench_agreement_json_writes_through_a_link(tmp_path: Path, havln_data: Path) -> None:
    """``bench agreement --json link.json`` replaced the link by a file (its own os.replace)."""
    link, real = _linked(tmp_path, "agreement.json")
    args = ["bench", "agreement", "--batch-only", "--episodes", "1", "--kinds", "reference", "--json", str(link), "--overwrite"]
    assert main(args) == 0
    assert link.is_symlink() and json.loads(real.read_text())["rows"][0]["kind"] == "reference"


def test_atomic_output_fits_the_temporary_name_of_a_long_output_name(tmp_path: Path) -> None:
    """A 250-byte output name is a legal file name; its temporary ``.<name>.<owner>.<random>.tmp`` must be one too."""
    for name in ("a" * 250 + ".json", "é" * 125 + ".json"):
        out = tmp_path / name
        with atomic_output(out) as tmp:
            assert len(tmp.name.encode()) <= 255
            tmp.write_text("{}")
        assert out.read_text() == "{}"
    assert sorted(p.name.startswith(".") for p in tmp_path.iterdir()) == [False, False]


def test_check_out_file_refuses_a_name_past_255_bytes_before_any_work(tmp_path: Path) -> None:
    from havln_robot.paths import OutputPathError, check_out_file

    with pytest.raises(OutputPathError, match="--json .*longer than 255 bytes"):
        check_out_file(tmp_path / ("a" * 256 + ".json"), "--json", atomic=True)


def _replaces_or_renames(tree) -> list[int]:
    """Lines of ``os.replace/os.rename(...)`` and ``<path>.replace(x)`` / ``<path>.rename(x)`` calls
    (``str.replace`` takes two arguments, ``Path.replace`` one)."""
    import ast

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("replace", "rename"):
            is_os = isinstance(node.func.value, ast.Name) and node.func.value.id == "os"
            if is_os or (len(node.args) == 1 and not node.keywords):
                out.append(node.lineno)
    return out


def test_every_writer_renames_through_atomic_output() -> None:
    """One atomic-write rule: no module but havln_robot/paths.py renames a temporary file over an
    output itself (bench agreement's --json, the recorder's metadata.yaml and the scene cache did:
    a link replaced by a file, a fixed ``.tmp`` name shared by two writers or past 255 bytes)."""
    import ast

    import havln_robot

    root = Path(havln_robot.__file__).parent
    bad = []
    for f in sorted(root.rglob("*.py")):
        if f.name == "paths.py" and f.parent == root:
            continue
        for line in _replaces_or_renames(ast.parse(f.read_text(encoding="utf-8"))):
            bad.append(f"{f.relative_to(root.parent)}:{line}")
    assert not bad, "use havln_robot.paths.atomic_output instead of renaming by hand: " + ", ".join(bad)
