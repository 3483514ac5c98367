"""Every JSON / JSON.gz input is read through one bounded reader (jsonio.read_bytes_capped).

A gzip bomb (a small .json.gz that decompresses to a gigabyte of spaces) and an endless stream
(/dev/zero) are refused in one line naming the file, after reading at most the cap, instead of a
MemoryError traceback.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from havln_robot import jsonio

CAP = 4096


def _bomb(path: Path, size: int = 1 << 20) -> Path:
    """A gzip file of valid JSON (a list in ``size`` spaces) of a few KiB."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    path.write_bytes(c.compress(b"[" + b" " * size + b"]") + c.flush())
    return path


def test_reader_bounds_plain_and_gzip(tmp_path):
    ok = tmp_path / "ok.json.gz"
    ok.write_bytes(gzip.compress(b"[1, 2]") + gzip.compress(b""))  # two gzip members
    assert jsonio.load_json_file(ok, CAP) == [1, 2]
    with pytest.raises(jsonio.JsonFileError, match="decompresses to more than 4096 bytes"):
        jsonio.read_bytes_capped(_bomb(tmp_path / "b.json.gz"), CAP)
    with pytest.raises(jsonio.JsonFileError, match="/dev/zero: larger than 4096 bytes"):
        jsonio.read_bytes_capped("/dev/zero", CAP)
    (tmp_path / "t.gz").write_bytes(gzip.compress(b"[1, 2, 3]")[:-12])
    with pytest.raises(jsonio.JsonFileError, match="truncated gzip"):
        jsonio.read_bytes_capped(tmp_path / "t.gz", CAP)


def _readers():
    from havln_robot.bench import agreement
    from havln_robot.challenge import export, format, manifest
    from havln_robot.data import registry
    from havln_robot.episodes import EpisodeError, load_episodes, viewpoint_positions
    from havln_robot.policy.tokenizer import PolicyError, Vocabulary, load_embeddings
    from havln_robot.sim.metrics import load_collision_baseline
    from havln_robot.sim.scene import Scene, SceneError

    def conn(f):
        link = f.parent / "s_connectivity.json"
        os.replace(f, link)
        return lambda: viewpoint_positions("s", f.parent)

    def scene(f):
        link = f.parent / "s_connectivity.json"
        os.replace(f, link)
        return lambda: Scene.from_connectivity(link)

    return {
        "episodes": (lambda f: lambda: load_episodes(f), EpisodeError),
        "connectivity": (conn, EpisodeError),
        "scene connectivity": (scene, SceneError),
        "collision baseline": (lambda f: lambda: load_collision_baseline(f), ValueError),
        "manifest": (lambda f: lambda: manifest.load_manifest(f, "val_seen"), manifest.ManifestError),
        "predictions": (lambda f: lambda: format.read_split_file(f), format.FormatError),
        "run file": (lambda f: lambda: export.read_run_file(f), export.ExportError),
        "vocabulary": (lambda f: lambda: Vocabulary.load(f), PolicyError),
        "embeddings": (lambda f: lambda: load_embeddings(f), PolicyError),
        "vocab check": (lambda f: lambda: _raise(registry.vocab_problem(f)), ValueError),
        "agreement live log": (lambda f: lambda: agreement.read_live_log(f), ValueError),
    }


def _raise(problem):
    if problem:
        raise ValueError(problem)


@pytest.mark.parametrize("kind", ["bomb", "large"])
@pytest.mark.parametrize("reader", sorted(_readers()))
def test_every_json_reader_is_bounded(reader, kind, tmp_path, monkeypatch):
    from havln_robot.bench import agreement
    from havln_robot.challenge import export, format, manifest

    monkeypatch.setattr(jsonio, "MAX_JSON_BYTES", CAP)
    monkeypatch.setattr(agreement, "LIVE_LOG_MAX_BYTES", CAP)
    monkeypatch.setattr(manifest, "MAX_MANIFEST_BYTES", CAP)
    monkeypatch.setattr(format, "MAX_FILE_BYTES", CAP)
    monkeypatch.setattr(export, "MAX_FILE_BYTES", CAP // 4)
    make, error = _readers()[reader]
    f = tmp_path / "in.json"
    if kind == "bomb":
        _bomb(f)
    else:  # past the cap on disk (the same code path stops /dev/zero after the cap)
        f.write_bytes(b"[" + b" " * (4 * CAP) + b"]")
    with pytest.raises(error) as exc:
        make(f)()
    msg = str(exc.value)
    assert "\n" not in msg and len(msg) < 400, msg
    if reader in ("manifest", "predictions", "run file"):  # challenge formats: plain UTF-8 JSON only
        assert ("not UTF-8" if kind == "bomb" else "too large") in msg or "exceed" in msg, msg
    else:
        assert "than 4096 bytes" in msg, msg


def test_cli_manifest_dev_zero_is_one_line(tmp_path):
    z = tmp_path / "s.zip"
    import zipfile

    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("val_seen.json", "{}")
    r = subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "validate", "--manifest", "val_seen=/dev/zero", str(z)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr[-2000:]
    last = r.stderr.strip().splitlines()[-1]
    assert "/dev/zero" in last and "larger than 16 MiB" in last, last


def test_bench_all_readme_and_benchmark_outputs_are_bounded(tmp_path, monkeypatch, capsys):
    """bench all read --update-readme with read_text (a huge file whole, a binary one a UnicodeDecodeError
    traceback, /dev/zero 'no such file') and every benchmark's JSON output with json.loads(read_text())."""
    from havln_robot import figures

    for readme, words in (
        ("/dev/zero", "/dev/zero: not a regular file"),
        (tmp_path / "dir", "dir: is a folder, not a file"),
        (tmp_path / "big.md", "big.md: larger than 4096 bytes"),
        (tmp_path / "bin.md", "bin.md: not UTF-8 text"),
    ):
        monkeypatch.setattr(figures, "MAX_README_BYTES", CAP)
        (tmp_path / "dir").mkdir(exist_ok=True)
        (tmp_path / "big.md").write_text(f"{figures.BEGIN}\n{figures.END}\n" + "x" * (2 * CAP))
        (tmp_path / "bin.md").write_bytes(f"{figures.BEGIN}\n{figures.END}\n".encode() + b"\xff\xfe")
        with pytest.raises(SystemExit) as ei:
            figures.main(["--only", "trial", "--update-readme", str(readme)])
        err = capsys.readouterr().err
        assert ei.value.code == 2 and words in err and "Traceback" not in err, err
    # a benchmark's --json output past the cap (or a gzip bomb): one line naming it, no MemoryError
    monkeypatch.setattr(jsonio, "MAX_JSON_BYTES", CAP)

    def fake(args, timeout, log):
        out = Path(args[args.index("--json") + 1]) if "--json" in args else Path(args[args.index("--out") + 1])
        _bomb(out) if "people" in args else out.write_bytes(b"{" + b" " * (4 * CAP) + b"}")
        return ""

    monkeypatch.setattr(figures, "_havln", fake)
    plan = figures.Plan.make(True, 1)
    for run, words in ((figures.run_people, "decompresses to more than 4096 bytes"), (figures.run_scale, "larger than 4096 bytes")):
        with pytest.raises(jsonio.JsonFileError, match=words):
            run(plan, tmp_path, print)


def test_pack_without_check_reads_a_bounded_input(tmp_path, monkeypatch):
    """pack(check=False) read each input with read_bytes(): a huge file whole."""
    from havln_robot.challenge import format, pack

    monkeypatch.setattr(format, "MAX_FILE_BYTES", CAP)
    monkeypatch.setattr(pack, "MAX_FILE_BYTES", CAP, raising=False)
    big = tmp_path / "val_seen.json"
    big.write_bytes(b"{" + b" " * (4 * CAP) + b"}")
    with pytest.raises(pack.PackError, match="val_seen.json: larger than 4096 bytes"):
        pack.pack([big], tmp_path / "s.zip", check=False)
    assert not (tmp_path / "s.zip").exists()


def test_no_module_parses_json_read_by_hand():
    """One bounded reader: json.load(fh) and json.loads(<path>.read_text() / read_bytes()) read a file whole
    (figures, bench policy / renderers did); parse files through jsonio.load_json_file / read_bytes_capped."""
    import ast

    import havln_robot

    root = Path(havln_robot.__file__).parent
    bad = []
    for f in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("load", "loads")):
                continue
            if getattr(node.func.value, "id", None) != "json":
                continue
            arg = node.args[0] if node.args else None
            whole = (
                isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr in ("read_text", "read_bytes", "read")
            )
            if node.func.attr == "load" or whole:
                bad.append(f"{f.relative_to(root.parent)}:{node.lineno}")
    assert not bad, "parse JSON files through havln_robot.jsonio (load_json_file / read_bytes_capped): " + ", ".join(bad)
