"""``havln-robot data fetch|check`` against a loopback HTTP mirror of the reference data (no other network).

The reference data folder is served by Python's http.server on 127.0.0.1 (a test fixture only; the
command itself downloads through pooch). Every test writes into tmp folders via ``--dest``.
"""

from __future__ import annotations

import filecmp
import functools
import http.server
import shutil
import threading
from pathlib import Path

import pytest

from havln_robot import cli, paths
from havln_robot.data import registry
from havln_robot.data.registry import FILES, GROUPS


class _Server:
    """A loopback HTTP server for one folder, counting the GET requests it answers."""

    def __init__(self, root: Path):
        self.requests: list[str] = []
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                outer.requests.append(self.path)
                super().do_GET()

            def log_message(self, *args):  # keep pytest output clean
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def mirror(havln_data):
    srv = _Server(havln_data)
    yield srv
    srv.close()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(["data", *argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _entries(*groups: str) -> list[registry.DataFile]:
    return registry.select(groups)


def test_registry_matches_reference_data(havln_data):
    assert len(FILES) == 97
    assert len({f.local for f in FILES}) == len(FILES)
    counts = {g: sum(f.group == g for f in FILES) for g in GROUPS}
    assert counts == {"ha_r2r": 1, "r2r": 2, "connectivity": 90, "challenge": 2, "embeddings": 1, "vocab": 1}
    for f in FILES:
        assert f.url.startswith("https://raw.githubusercontent.com/UWMILab/HA-VLN/") and f.commit in f.url
        p = havln_data / f.local
        assert p.stat().st_size == f.size, f.local
        assert registry.file_sha256(p) == f.sha256, f.local
    vocab = havln_data / "challenge" / "ha_r2r_instruction_vocab.json"
    assert registry.vocab_problem(vocab) is None


def test_vocab_problem_names_the_fault(tmp_path):
    import json

    words = list(registry.VOCAB_SPECIAL) + [f"w{i:04d}" for i in range(registry.VOCAB_WORDS - 2)]
    p = tmp_path / "v.json"
    p.write_text(json.dumps({"word_list": words, "sha256": registry.vocab_fingerprint(words)}))
    assert registry.vocab_problem(p) is None
    p.write_text(json.dumps({"word_list": words, "sha256": "0" * 64}))
    assert "sha256 field" in registry.vocab_problem(p)
    p.write_text(json.dumps({"word_list": words[1:], "sha256": registry.vocab_fingerprint(words[1:])}))
    assert "5078 words" in registry.vocab_problem(p)
    p.write_text("{")
    assert "JSON" in registry.vocab_problem(p)


def test_fetch_from_loopback_url_then_resume_then_check(mirror, havln_data, tmp_path, capsys):
    dest = tmp_path / "data"
    only = "ha_r2r,challenge,embeddings,vocab"
    rc, out, err = run(capsys, "fetch", "--dest", str(dest), "--mirror", mirror.url, "--only", only)
    assert rc == 0, err
    wanted = _entries(*only.split(","))
    assert len(mirror.requests) == len(wanted) == 5
    for f in wanted:
        assert filecmp.cmp(dest / f.local, havln_data / f.local, shallow=False), f.local
    assert "done: 5 of 5 files" in out
    # resume: everything verified, nothing downloaded
    mirror.requests.clear()
    rc, out, _ = run(capsys, "fetch", "--dest", str(dest), "--mirror", mirror.url, "--only", only)
    assert rc == 0 and mirror.requests == []
    assert "0 fetched, 1 already verified" in out
    # check: the fetched groups are complete, the whole set is not
    rc, out, _ = run(capsys, "check", "--dest", str(dest), "--only", only)
    assert rc == 0 and "complete: 5 of 5" in out
    rc, out, _ = run(capsys, "check", "--dest", str(dest))
    assert rc == 1
    assert "connectivity  0/90 present, 90 missing" in out and "... and 85 more missing" in out
    assert f"run: havln-robot data fetch --dest {dest}" in out


def test_full_fetch_over_http(mirror, tmp_path, capsys):
    dest = tmp_path / "all"
    rc, out, err = run(capsys, "fetch", "--dest", str(dest), "--mirror", mirror.url.rstrip("/"))
    assert rc == 0, err
    assert len(mirror.requests) == 97
    rc, out, _ = run(capsys, "check", "--dest", str(dest))
    assert rc == 0 and "complete: 97 of 97" in out
    assert "not derivable" in out  # the vocabulary's origin is said


def test_corrupt_file_is_reported_then_fetched_again(mirror, havln_data, tmp_path, capsys):
    dest = tmp_path / "data"
    assert run(capsys, "fetch", "--dest", str(dest), "--mirror", mirror.url, "--only", "challenge,vocab")[0] == 0
    bad = dest / "challenge" / "collision_num_val_seen.json"
    bad.write_text('{"1": 0}')
    (dest / "challenge" / "ha_r2r_instruction_vocab.json").write_text('{"word_list": []}')
    rc, out, _ = run(capsys, "check", "--dest", str(dest), "--only", "challenge,vocab")
    assert rc == 1
    assert "corrupt: challenge/collision_num_val_seen.json" in out
    assert "corrupt: challenge/ha_r2r_instruction_vocab.json (0 words, expected 5079)" in out
    mirror.requests.clear()
    rc, out, err = run(capsys, "fetch", "--dest", str(dest), "--mirror", mirror.url, "--only", "challenge,vocab")
    assert rc == 0
    assert "collision_num_val_seen.json: present but its sha256 does not match; fetching it again" in err
    assert sorted(mirror.requests) == ["/challenge/collision_num_val_seen.json", "/challenge/ha_r2r_instruction_vocab.json"]
    assert filecmp.cmp(bad, havln_data / "challenge" / "collision_num_val_seen.json", shallow=False)


def test_corrupt_mirror_file_is_not_kept(havln_data, tmp_path, capsys):
    src = tmp_path / "mirror"
    (src / "r2r").mkdir(parents=True)
    shutil.copy(havln_data / "r2r" / "R2R_val_seen.json", src / "r2r")
    (src / "r2r" / "R2R_train.json").write_text("[]")
    srv = _Server(src)
    try:
        for m in (srv.url, str(src)):
            dest = tmp_path / ("http" if m.startswith("http") else "dir")
            rc, out, err = run(capsys, "fetch", "--dest", str(dest), "--mirror", m, "--only", "r2r")
            assert rc == 1
            assert "r2r/R2R_train.json: not fetched: sha256" in err and "1 of 2 files not fetched" in err
            assert not (dest / "r2r" / "R2R_train.json").exists()
            assert (dest / "r2r" / "R2R_val_seen.json").is_file()
            assert [p.name for p in (dest / "r2r").iterdir()] == ["R2R_val_seen.json"]  # no temporary left
    finally:
        srv.close()


def test_mirror_dir_and_resume(havln_data, tmp_path, capsys):
    dest = tmp_path / "data"
    rc, out, _ = run(capsys, "fetch", "--dest", str(dest), "--mirror", str(havln_data), "--only", "r2r", "--only", "vocab")
    assert rc == 0 and "done: 3 of 3" in out
    assert filecmp.cmp(dest / "r2r" / "R2R_train.json", havln_data / "r2r" / "R2R_train.json", shallow=False)
    assert (dest / "r2r" / "R2R_train.json").stat().st_mode & 0o044  # not left 0600 like a temporary file
    rc, out, _ = run(capsys, "fetch", "--dest", str(dest), "--mirror", f"file://{havln_data}", "--only", "r2r,vocab")
    assert rc == 0 and "0 fetched, 2 already verified" in out


def test_missing_file_on_mirror_and_unreachable_server(tmp_path, capsys, free_port):
    empty = tmp_path / "empty"
    empty.mkdir()
    srv = _Server(empty)
    try:
        rc, _, err = run(capsys, "fetch", "--dest", str(tmp_path / "a"), "--mirror", srv.url, "--only", "challenge")
    finally:
        srv.close()
    assert rc == 1 and "HTTP 404" in err and "2 of 2 files not fetched" in err
    # a 404 is not fixed by running again: the message must not promise a resume
    assert "resume" not in err and "running again will not help" in err and "--mirror" in err
    rc, _, err = run(capsys, "fetch", "--dest", str(tmp_path / "c"), "--mirror", str(empty), "--only", "challenge")
    assert rc == 1 and "not in the mirror folder" in err and "2 of 2 files not fetched" in err
    assert "resume" not in err
    rc, _, err = run(capsys, "fetch", "--dest", str(tmp_path / "b"), "--mirror", f"http://127.0.0.1:{free_port}/", "--only", "r2r")
    assert rc == 1
    assert "cannot reach" in err and "run again to resume" in err and "2 of 2 files not fetched" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["fetch", "--dest", "{file}"], "--dest {file}: is a file, not a folder"),
        (["fetch", "--dest", "/proc/nope/data", "--mirror", "{tmp}"], "--dest /proc/nope/data: cannot write there"),
        (["fetch", "--dest", "{tmp}/d", "--mirror", "{tmp}/nowhere"], "--mirror {tmp}/nowhere: no such folder"),
        (["fetch", "--dest", "{tmp}/d", "--mirror", "ftp://example.org/"], "--mirror ftp://example.org/: only http://"),
        (["fetch", "--dest", "{tmp}/d", "--only", "foo"], "--only: unknown data group 'foo'; choose from ha_r2r"),
        (["fetch", "--dest", "{tmp}", "--mirror", "{tmp}"], "is the --dest folder itself"),
        (["check", "--dest", "{file}"], "--dest {file}: is a file, not a folder"),
    ],
)
def test_bad_input_is_one_line(tmp_path, capsys, argv, needle):
    f = tmp_path / "a_file"
    f.write_text("x")
    fill = {"file": str(f), "tmp": str(tmp_path)}
    rc, _, err = run(capsys, *[a.format(**fill) for a in argv])
    assert rc == 2
    assert needle.format(**fill) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_check_missing_folder_says_how_to_fetch(tmp_path, capsys):
    rc, out, _ = run(capsys, "check", "--dest", str(tmp_path / "none"))
    assert rc == 1 and "folder does not exist" in out and "97 of 97 files missing or corrupt" in out


def test_data_dir_order(tmp_path, monkeypatch):
    """$HAVLN_DATA, then the user data folder when it holds data, then the checkout's copy, else the user folder."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path / "repo")
    user = tmp_path / "xdg" / "havln_robot" / "ha-vln"
    dev = tmp_path / "shared" / "data" / "ha-vln"
    monkeypatch.delenv("HAVLN_DATA", raising=False)
    assert paths.user_data_dir() == user
    assert paths.data_dir_and_origin() == (user, "user")  # nothing anywhere: name the fetch target
    (dev / "r2r").mkdir(parents=True)
    (dev / "r2r" / "R2R_val_seen.json").write_text("[]")
    assert paths.data_dir_and_origin() == (dev, "checkout")
    (user / "connectivity").mkdir(parents=True)
    assert paths.data_dir() == dev  # an empty subfolder is not data
    (user / "connectivity" / "x_connectivity.json").write_text("[]")
    assert paths.data_dir_and_origin() == (user, "user")
    monkeypatch.setenv("HAVLN_DATA", str(tmp_path / "env"))
    assert paths.data_dir_and_origin() == (tmp_path / "env", "$HAVLN_DATA")
    assert paths.fetch_dest_default() == tmp_path / "env"
    monkeypatch.delenv("HAVLN_DATA")
    assert paths.fetch_dest_default() == user


def test_fetch_default_dest_is_the_user_folder(mirror, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("HAVLN_DATA", raising=False)
    rc, out, _ = run(capsys, "fetch", "--mirror", mirror.url, "--only", "challenge")
    user = tmp_path / "xdg" / "havln_robot" / "ha-vln"
    assert rc == 0 and f"into {user}" in out
    assert paths.data_dir() == user
    rc, out, _ = run(capsys, "check", "--only", "challenge")
    assert rc == 0 and f"HA-VLN data in {user} (user data folder)" in out


def test_sigterm_mid_download_leaves_no_temporary_file(tmp_path, capsys):
    """SIGTERM (a CI timeout, systemd) while a file downloads: before, the process died at once and pooch's
    temporary file (``tmpXXXXXXXX``) stayed in the data folder for good; now the download's cleanup runs
    and the command exits 128 + 15."""
    import os
    import signal
    import time

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            self.wfile.write(b"x" * 65536)
            self.wfile.flush()
            os.kill(os.getpid(), signal.SIGTERM)  # the test process: the signal lands in the main thread, mid-read
            time.sleep(2)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    def ignore(*_):  # if the command installed no handler, the signal must not kill the test run
        pass

    before = signal.signal(signal.SIGTERM, ignore)
    try:
        dest = tmp_path / "data"
        rc, _out, err = run(
            capsys, "fetch", "--dest", str(dest), "--mirror", f"http://127.0.0.1:{httpd.server_address[1]}/", "--only", "r2r"
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
        restored = signal.signal(signal.SIGTERM, before)
    assert rc == 128 + signal.SIGTERM and "terminated" in err, (rc, err)
    assert [p for p in dest.rglob("*") if p.is_file()] == []
    assert restored is ignore
