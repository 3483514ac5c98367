"""A full disk names the file being written and its file system, in one line (not a bare
'[Errno 28] No space left on device')."""

from __future__ import annotations

import errno
import json
import zipfile
from pathlib import Path

import pytest

from havln_robot.paths import atomic_output, mount_point, os_error_text


def _enospc(*_a, **_k):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_atomic_output_names_the_destination_of_a_failed_write(tmp_path):
    out = tmp_path / "sub.zip"
    with pytest.raises(OSError) as exc, atomic_output(out) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(b"x")
        _enospc()
    assert exc.value.filename == str(out)
    text = os_error_text(exc.value)
    assert text.startswith(f"No space left on device: writing {out} on the file system {mount_point(tmp_path)}"), text
    assert not list(tmp_path.iterdir())  # the temporary is gone, nothing half-written


def test_errors_that_name_a_file_keep_it(tmp_path):
    other = tmp_path / "elsewhere.bin"
    with pytest.raises(OSError) as exc, atomic_output(tmp_path / "a.json"):
        raise OSError(errno.EACCES, "Permission denied", str(other))
    assert exc.value.filename == str(other)


def _split(tmp_path: Path) -> Path:
    f = tmp_path / "val_seen.json"
    f.write_text(json.dumps({"format_version": 1, "split": "val_seen", "episodes": [{"episode_id": "1", "actions": ["STOP"]}]}))
    return f


def test_pack_on_a_full_disk_names_the_file_and_the_disk(tmp_path, monkeypatch, capsys):
    from havln_robot.challenge.cli import pack_main

    monkeypatch.setattr(zipfile.ZipFile, "writestr", _enospc)
    out = tmp_path / "out" / "sub.zip"
    assert pack_main([str(_split(tmp_path)), "-o", str(out), "--no-validate"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(out) in line and "No space left on device" in line and "file system" in line, line
    assert not out.exists()


def test_cli_boundary_names_file_and_disk(tmp_path):
    from havln_robot.cli import _one_line

    exc = OSError(errno.ENOSPC, "No space left on device")
    exc.filename = str(tmp_path / "results.jsonl")
    line = _one_line(exc)
    assert str(tmp_path / "results.jsonl") in line and f"file system {mount_point(tmp_path)}" in line, line
    bare = _one_line(OSError(errno.ENOSPC, "No space left on device"))
    assert "free some space" in bare and "\n" not in bare


def test_partial_results_and_json_writes_name_their_file(tmp_path, monkeypatch):
    from havln_robot import jsonio
    from havln_robot.eval import PartialResults

    part = PartialResults(tmp_path / "results.partial.jsonl", {"policy": "x"}, resume=False)
    real_open = Path.open

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.fh.close()

        def write(self, _data):
            _enospc()

    monkeypatch.setattr(Path, "open", lambda self, *a, **k: Full(real_open(self, *a, **k)))
    with pytest.raises(OSError) as exc:
        part.add("1", "skipped")
    assert exc.value.filename == str(tmp_path / "results.partial.jsonl")
    monkeypatch.setattr(Path, "write_text", lambda *a, **k: _enospc())
    with pytest.raises(OSError) as exc:
        jsonio.write(tmp_path / "s.json", {"a": 1})
    assert exc.value.filename == str(tmp_path / "s.json")
