"""An earlier result is never destroyed, nor left half-written, by a later run that fails or is refused.

pack (a rejected new zip), trial recover-bag (nothing recoverable), demo (a second run into the same
--out), report / sweep (a write that fails midway), data fetch (a failed replacement of a damaged file;
a mirror that sends too much or too slowly).
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from havln_robot.cli import main as cli_main

# --- pack ----------------------------------------------------------------------------------------


def _manifests(tmp_path: Path) -> list[str]:
    a = tmp_path / "seen_ids.json"
    b = tmp_path / "unseen_ids.json"
    a.write_text(json.dumps(["1", "2"]))
    b.write_text(json.dumps(["1"]))
    return ["--manifest", f"val_seen={a}", "--manifest", f"val_unseen={b}"]


def test_rejected_pack_with_overwrite_keeps_the_earlier_zip(tmp_path: Path, capsys) -> None:
    man = _manifests(tmp_path)
    good = tmp_path / "good"
    assert cli_main(["export", "--stop-only", "--out-dir", str(good), *man]) == 0
    sub = tmp_path / "submission.zip"
    assert cli_main(["pack", str(good), "-o", str(sub), *man]) == 0
    before = sub.read_bytes()
    half = tmp_path / "half"
    half.mkdir()
    (half / "val_seen.json").write_bytes((good / "val_seen.json").read_bytes())
    capsys.readouterr()
    assert cli_main(["pack", str(half), "-o", str(sub), "--overwrite", *man]) == 1
    err = capsys.readouterr().err
    assert "fails validation" in err and "kept" in err
    assert sub.read_bytes() == before  # the good submission is still there, byte for byte
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left
    with zipfile.ZipFile(sub) as zf:
        assert sorted(zf.namelist()) == ["val_seen.json", "val_unseen.json"]
    # no earlier zip: a rejected pack writes nothing
    fresh = tmp_path / "fresh.zip"
    assert cli_main(["pack", str(half), "-o", str(fresh), *man]) == 1
    assert not fresh.exists()


# --- export --overwrite: a complete split file is not replaced by a partial one --------------------


def _split_bytes(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_export_overwrite_refuses_to_lose_episodes_of_the_earlier_file(tmp_path: Path, capsys) -> None:
    """export --overwrite replaced a complete val_seen.json by a run of one episode, after only a warning
    (pack refuses such a zip; the file it packs was already gone). Now the replacement is refused, naming
    the file, the counts and --allow-partial, before any file is written; the same ids or more replace it."""
    from havln_robot.challenge.export import ExportError, Record, export
    from havln_robot.challenge.format import read_split_file

    man = _manifests(tmp_path)  # val_seen: ids 1, 2; val_unseen: id 1
    out = tmp_path / "out"
    assert cli_main(["export", "--stop-only", "--out-dir", str(out), *man]) == 0
    before = _split_bytes(out)
    one = tmp_path / "one.json"
    one.write_text(json.dumps([{"episode_id": "1", "actions": ["MOVE_FORWARD", "STOP"], "split": "val_seen"}]))
    capsys.readouterr()
    assert cli_main(["export", "--runs", str(one), "--out-dir", str(out), "--overwrite", *man]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{out / 'val_seen.json'}: holds 2 episodes, the new file would have 1" in err
    assert "1 of them ('2') would be lost" in err and "--allow-partial" in err and "--fill-missing" in err
    assert _split_bytes(out) == before
    # two splits: val_seen complete, val_unseen losing its episode -- refused before either file is written
    both = tmp_path / "both.json"
    recs = [{"episode_id": i, "actions": ["TURN_LEFT", "STOP"], "split": "val_seen"} for i in ("1", "2")]
    recs.append({"episode_id": "9", "actions": ["STOP"], "split": "val_unseen"})
    both.write_text(json.dumps(recs))
    assert cli_main(["export", "--runs", str(both), "--out-dir", str(out), "--overwrite", *man]) == 2
    assert "val_unseen.json: holds 1 episode, the new file would have 1" in capsys.readouterr().err
    assert _split_bytes(out) == before
    # no episode lost: replaced (with --overwrite, as before)
    assert cli_main(["export", "--runs", str(both), "--out-dir", str(out), "--overwrite", "--fill-missing", *man]) == 0
    assert read_split_file(out / "val_seen.json").episodes["2"] == ["TURN_LEFT", "STOP"]
    assert set(read_split_file(out / "val_unseen.json").episodes) == {"1", "9"}
    # asked for: --allow-partial replaces it, and the summary says what was lost
    capsys.readouterr()
    assert cli_main(["export", "--runs", str(one), "--out-dir", str(out), "--overwrite", "--allow-partial", *man]) == 0
    assert "1 episode of the earlier file left out (--allow-partial)" in capsys.readouterr().out
    assert read_split_file(out / "val_seen.json").episodes == {"1": ["MOVE_FORWARD", "STOP"]}
    # the library call refuses the same way
    with pytest.raises(ExportError, match=r"val_seen\.json: holds 1 episode, the new file would have 1 -- 1 of them \('1'\)"):
        export([Record("2", ("STOP",), "val_seen", "test")], out)
    assert export([Record("2", ("STOP",), "val_seen", "test")], out, allow_partial=True).episodes == {"val_seen": 1}


# --- trial recover-bag ---------------------------------------------------------------------------


def _bag(folder: Path, n: int = 2000) -> None:
    from mcap.writer import Writer

    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{folder.name}_0.mcap", "wb") as f:
        w = Writer(f, chunk_size=1024)
        w.start("ros2", "x")
        s = w.register_schema(name="std_msgs/msg/String", encoding="ros2msg", data=b"string data")
        c = w.register_channel(topic="/c", message_encoding="cdr", schema_id=s)
        for i in range(n):
            w.add_message(channel_id=c, log_time=i, publish_time=i, data=b"\0\1\0\0\2\0\0\0a\0")
        w.finish()


def test_failed_recover_bag_with_overwrite_keeps_the_earlier_bag(tmp_path: Path, capsys) -> None:
    from havln_robot.trials.cli import main as trial_main

    good, empty, keep = tmp_path / "b", tmp_path / "e", tmp_path / "keep"
    _bag(good)
    empty.mkdir()
    (empty / "e_0.mcap").write_bytes((good / "b_0.mcap").read_bytes()[:8])  # the magic, then nothing
    assert trial_main(["recover-bag", str(good), "--out", str(keep)]) == 0
    before = {p.name: p.read_bytes() for p in keep.iterdir()}
    assert "keep_0.mcap" in before and "metadata.yaml" in before
    assert trial_main(["recover-bag", str(empty), "--out", str(keep), "--overwrite"]) == 2
    assert "no complete message" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in keep.iterdir()} == before  # nothing lost, no staging folder left
    # a new folder is not left behind either
    assert trial_main(["recover-bag", str(empty), "--out", str(tmp_path / "new")]) == 2
    assert not (tmp_path / "new").exists()
    # a successful --overwrite replaces the bag and leaves no earlier roll-over file
    (keep / "keep_1.mcap").write_bytes(before["keep_0.mcap"])
    assert trial_main(["recover-bag", str(good), "--out", str(keep), "--overwrite"]) == 0
    assert sorted(p.name for p in keep.iterdir()) == ["keep_0.mcap", "metadata.yaml"]


# --- a run killed with SIGKILL: its staging folder is removed by the next run, a live one never ---


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _staging(parent: Path, pid: int, label: str = "", host: str | None = None) -> Path:
    """A staging folder as paths.new_staging_dir names it, owned by ``pid`` (on this host unless ``host``)."""
    from havln_robot.paths import STAGING_PREFIX, staging_owner

    owner = staging_owner(pid) if host is None else f"{pid}-{host}"
    d = parent / f"{STAGING_PREFIX}{owner}.{label + '.' if label else ''}abcd_123.tmp"
    d.mkdir(parents=True)
    (d / "half.mcap").write_bytes(b"\x89MCAP0\r\n")
    return d


def test_recover_bag_killed_midway_leaves_nothing_for_the_next_run(tmp_path: Path, capsys) -> None:
    """SIGKILL cannot be caught: recover-bag killed mid-run left its hidden .havln_staging.* folder in --out,
    and the next recover-bag into it refused ('holds more than a bag'). The staging folder names its owner
    (pid, host); the next run removes it when that pid is gone, saying so, and never touches the staging
    folder of a run still going (it names that run's pid instead)."""
    import os

    from havln_robot.trials.cli import main as trial_main

    good, keep = tmp_path / "b", tmp_path / "keep"
    _bag(good)
    assert trial_main(["recover-bag", str(good), "--out", str(keep)]) == 0
    stale = _staging(keep, _dead_pid())
    capsys.readouterr()
    assert trial_main(["recover-bag", str(good), "--out", str(keep), "--overwrite"]) == 0
    err = capsys.readouterr().err
    assert f"removed {stale}" in err and "killed" in err and err.count("\n") == 1
    assert not stale.exists() and sorted(p.name for p in keep.iterdir()) == ["keep_0.mcap", "metadata.yaml"]
    # a fresh --out holding only the stale folder of a killed first run
    fresh = tmp_path / "fresh"
    stale = _staging(fresh, _dead_pid())
    assert trial_main(["recover-bag", str(good), "--out", str(fresh)]) == 0
    assert not stale.exists() and (fresh / "fresh_0.mcap").is_file()
    # a run still going (this process), or one of another host / container: kept, and named
    for make in (lambda: _staging(keep, os.getpid()), lambda: _staging(keep, _dead_pid(), host="0badc0de")):
        live = make()
        capsys.readouterr()
        assert trial_main(["recover-bag", str(good), "--out", str(keep), "--overwrite"]) == 2
        err = capsys.readouterr().err
        assert live.is_dir() and str(live) in err and "another run" in err and err.count("\n") == 1, err
        shutil.rmtree(live)


def test_staged_outputs_swaps_and_atomic_files_clean_up_after_a_killed_run(tmp_path: Path, monkeypatch, capsys) -> None:
    """The same for every writer: staged_output_dir (report, eval, sweep), swap_in_folder (bench agreement's
    --live-out), the temporary file of atomic_output, bench agreement's stage and trial bench's scratch
    folder -- a stale one of a dead pid is removed, a live one kept; an earlier folder that a killed
    swap had moved aside is put back."""
    import os

    from havln_robot.bench import agreement
    from havln_robot.paths import atomic_output, staged_output_dir, staging_owner, swap_in_folder

    out = tmp_path / "report"
    stale, live = _staging(out, _dead_pid()), _staging(out, os.getpid())
    with staged_output_dir(out) as stage:
        (stage / "report.md").write_text("new")
    assert not stale.exists() and live.is_dir() and (out / "report.md").read_text() == "new"
    assert f"removed {stale}" in capsys.readouterr().err
    # atomic_output: .<name>.<owner>.<random>.tmp
    target = tmp_path / "summary.json"
    dead_tmp = tmp_path / f".summary.json.{staging_owner(_dead_pid())}.abcd_123.tmp"
    live_tmp = tmp_path / f".summary.json.{staging_owner(os.getpid())}.abcd_123.tmp"
    other = tmp_path / f".other.json.{staging_owner(_dead_pid())}.abcd_123.tmp"
    for f in (dead_tmp, live_tmp, other):
        f.write_text("half")
    with atomic_output(target) as tmp:
        assert staging_owner(os.getpid()) in tmp.name
        tmp.write_text("{}")
    assert not dead_tmp.exists() and live_tmp.exists() and other.exists()  # another output's temporary: its own writer's
    # swap_in_folder: killed between its two renames -> the earlier folder is put back, then swapped as usual
    dest = tmp_path / "demo_1"
    aside = _staging(tmp_path, _dead_pid(), label="demo_1.earlier")
    (aside / "earlier").mkdir()
    (aside / "earlier" / "trials.db").write_text("earlier")
    new = tmp_path / "stage" / "demo_1"
    new.mkdir(parents=True)
    (new / "trials.db").write_text("new")
    capsys.readouterr()
    assert swap_in_folder(new, dest) == dest and (dest / "trials.db").read_text() == "new" and not aside.exists()
    err = capsys.readouterr().err
    assert f"put {dest} back" in err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == sorted([live_tmp.name, other.name])
    # bench agreement's stage beside --live-out
    stale = _staging(tmp_path, _dead_pid(), label="demo_1")
    monkeypatch.setattr(agreement, "_live_model", lambda eid, ep, pol, seed, o: (o.mkdir(), "ran")[1])
    assert agreement._live_model_fresh("1", Path("e.json"), "p", 0, dest) == "ran"
    assert not stale.exists() and dest.is_dir()
    # trial bench --dir: its scratch folder
    from havln_robot.trials.cli import main as trial_main

    bench = tmp_path / "bench"
    stale = _staging(bench, _dead_pid(), label="trial-bench")
    assert trial_main(["bench", "--steps", "2", "--dir", str(bench)]) == 0
    assert not stale.exists() and list(bench.iterdir()) == []


# --- demo: the action file of a folder that accumulates trials -----------------------------------


def _demo_run(db: Path, out: Path, episode: str, actions: list[str], monkeypatch) -> int:
    import argparse

    from havln_robot import demo
    from havln_robot.trials.store import TrialStore

    with TrialStore(db) as st:
        t = st.start_trial("sim", episode_id=episode, instruction="walk")
        for a in actions:
            st.add_step(t.id, {"stamp": 0.0, "action": a, "outcome": "ok"})
        st.finish_trial(t.id, "stop")
    monkeypatch.setattr(demo, "plot_episode", lambda run, params, png: png)  # no simulator scene here
    run = demo.EpisodeRun(episode_id=episode, scan="s", instruction="walk")
    return demo._finish([run], db, out, argparse.Namespace(scenes=None), False, Path("unused.json"))


def test_second_demo_into_the_same_out_keeps_the_first_runs_actions(tmp_path: Path, monkeypatch, capsys) -> None:
    from havln_robot.challenge.format import read_split_file

    out = tmp_path / "demo"
    out.mkdir()
    db = out / "trials.db"
    assert _demo_run(db, out, "7", ["MOVE_FORWARD", "STOP"], monkeypatch) == 0
    assert _demo_run(db, out, "3", ["TURN_LEFT", "STOP"], monkeypatch) == 0
    eps = read_split_file(out / "val_seen.json").episodes
    assert eps == {"3": ["TURN_LEFT", "STOP"], "7": ["MOVE_FORWARD", "STOP"]}  # both runs, like trials.db and the report
    capsys.readouterr()
    assert _demo_run(db, out, "7", ["TURN_RIGHT", "STOP"], monkeypatch) == 0
    assert "episode(s) 7 were in it from an earlier run" in capsys.readouterr().out
    assert read_split_file(out / "val_seen.json").episodes["7"] == ["TURN_RIGHT", "STOP"]  # the newest trial wins
    # a damaged earlier file is refused and kept as it is, never replaced by this run's episodes alone
    (out / "val_seen.json").write_text('{"format_version": 1, "split": "val_seen", "episodes": [{"episode_id": "7"}]}')
    before = (out / "val_seen.json").read_bytes()
    assert _demo_run(db, out, "5", ["STOP"], monkeypatch) == 1
    err = capsys.readouterr().err
    assert "val_seen.json" in err and "left as it is" in err and "Traceback" not in err
    assert (out / "val_seen.json").read_bytes() == before


# --- report / sweep / bench outputs: the old complete set or the new one, never a mix ----------


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _store(db: Path, n: int) -> None:
    from havln_robot.trials.store import TrialStore

    with TrialStore(db) as st:
        for i in range(n):
            t = st.start_trial("sim", episode_id=str(i + 1), instruction="walk")
            st.add_step(t.id, {"stamp": 0.0, "action": "STOP", "outcome": "ok"})
            st.finish_trial(t.id, "stop")


def _full_disk(*_a, **_k):
    import errno
    import os

    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_report_that_fails_midway_leaves_the_earlier_report_whole(tmp_path: Path, monkeypatch, capsys) -> None:
    from havln_robot.trials import report

    db, out = tmp_path / "t.db", tmp_path / "rep"
    _store(db, 2)
    (tmp_path / "rep").mkdir()
    (out / "notes.txt").write_text("mine")  # not a report file: always kept
    assert report.main(["--db", str(db), "--out", str(out)]) == 0
    before = _snapshot(out)
    assert "report.md" in before and "trajectories.png" in before
    _store(db, 1)  # a third trial: every file of the new report differs
    for step in ("plot_ne", "plot_trajectories"):  # a full disk after some files are written, before others
        with monkeypatch.context() as m:
            m.setattr(report, step, _full_disk)
            assert report.main(["--db", str(db), "--out", str(out), "--overwrite"]) == 1
        err = capsys.readouterr().err
        assert "No space left" in err and "left as it was" in err and "Traceback" not in err
        assert _snapshot(out) == before  # neither half-new files nor a staging folder
        assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    assert report.main(["--db", str(db), "--out", str(out), "--overwrite"]) == 0
    after = _snapshot(out)
    assert after["notes.txt"] == b"mine" and after["trials.csv"] != before["trials.csv"]


def test_figure_and_csv_writers_never_leave_a_truncated_file(tmp_path: Path, monkeypatch) -> None:
    """plot / write_csv of report and sweep write a temporary file and rename it: a failure midway
    keeps the earlier file byte for byte."""
    import matplotlib.figure

    from havln_robot import sweep
    from havln_robot.paths import save_figure

    png = tmp_path / "a.png"
    png.write_bytes(b"earlier figure")

    def half_then_full(self, fname, **kw):
        Path(fname).write_bytes(b"\x89PNG half")
        _full_disk()

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", half_then_full)
    fig = matplotlib.figure.Figure()
    with pytest.raises(OSError):
        save_figure(fig, png, dpi=50)
    assert png.read_bytes() == b"earlier figure" and sorted(p.name for p in tmp_path.iterdir()) == ["a.png"]
    monkeypatch.undo()
    save_figure(fig, png, dpi=50)
    assert png.read_bytes().startswith(b"\x89PNG")

    csv_path = tmp_path / "sweep.csv"
    csv_path.write_text("earlier")
    monkeypatch.setattr(sweep.csv, "writer", lambda fh: (fh.write("half,"), _full_disk()))
    with pytest.raises(OSError):
        sweep.write_csv(csv_path, None, [])
    assert csv_path.read_text() == "earlier" and sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "sweep.csv"]


def test_staged_output_dir_swaps_the_whole_set_or_nothing(tmp_path: Path) -> None:
    from havln_robot.paths import staged_output_dir

    out = tmp_path / "o"
    out.mkdir()
    for name, body in (("sweep.md", "old md"), ("sweep.csv", "old csv"), ("plot_2.png", "old 2"), ("mine.txt", "mine")):
        (out / name).write_text(body)
    with pytest.raises(OSError), staged_output_dir(out, stale=("sweep.*", "plot_*.png")) as stage:
        (stage / "sweep.md").write_text("new md")
        _full_disk()
    assert _snapshot(out) == {"mine.txt": b"mine", "plot_2.png": b"old 2", "sweep.csv": b"old csv", "sweep.md": b"old md"}
    with staged_output_dir(out, stale=("sweep.*", "plot_*.png")) as stage:
        (stage / "sweep.md").write_text("new md")
        (stage / "sweep.csv").write_text("new csv")
    assert _snapshot(out) == {"mine.txt": b"mine", "sweep.csv": b"new csv", "sweep.md": b"new md"}  # plot_2.png was stale
    with pytest.raises(OSError), staged_output_dir(tmp_path / "fresh") as stage:
        _full_disk()
    assert not (tmp_path / "fresh").exists()


@pytest.mark.parametrize(
    ("argv", "flag", "earlier"),
    [
        (["bench", "sim", "--save-frames", "{d}"], "--save-frames", "17DRP5sb8fy_1_160x120_000.png"),
        (["bench", "agreement", "--live-out", "{d}"], "--live-out", "demo_1/trials.db"),
    ],
)
def test_bench_frame_and_episode_folders_need_overwrite(tmp_path: Path, capsys, argv, flag, earlier) -> None:
    d = tmp_path / "d"
    (d / earlier).parent.mkdir(parents=True, exist_ok=True)
    (d / earlier).write_bytes(b"earlier run")
    assert cli_main([a.format(d=d) for a in argv]) == 2
    err = capsys.readouterr().err
    assert flag in err and "--overwrite" in err and earlier.split("/")[0] in err and "Traceback" not in err
    assert (d / earlier).read_bytes() == b"earlier run"


def test_swap_in_folder_replaces_an_earlier_folder_only_at_the_end(tmp_path: Path) -> None:
    from havln_robot.paths import swap_in_folder

    dest, new = tmp_path / "demo_1", tmp_path / "stage" / "demo_1"
    dest.mkdir()
    (dest / "trials.db").write_text("earlier")
    new.mkdir(parents=True)
    (new / "trials.db").write_text("new")
    assert swap_in_folder(new, dest) == dest
    assert _snapshot(dest) == {"trials.db": b"new"} and sorted(p.name for p in (tmp_path / "stage").iterdir()) == []


# --- data fetch: a damaged local file is replaced only by a verified copy; bounded sources -------


def _challenge_mirror(tmp_path: Path, havln_data: Path) -> Path:
    """A mirror folder holding the real challenge files (their sha256 are the registry's)."""
    import shutil

    m = tmp_path / "m"
    shutil.copytree(havln_data / "challenge", m / "challenge")
    return m


def test_failed_fetch_keeps_the_damaged_local_file(tmp_path: Path, capsys, havln_data) -> None:
    m, d = _challenge_mirror(tmp_path, havln_data), tmp_path / "d"
    assert cli_main(["data", "fetch", "--dest", str(d), "--mirror", str(m), "--only", "challenge"]) == 0
    local = d / "challenge" / "collision_num_val_seen.json"
    local.write_text("x\n")
    (m / "challenge" / "collision_num_val_seen.json").unlink()
    capsys.readouterr()
    assert cli_main(["data", "fetch", "--dest", str(d), "--mirror", str(m), "--only", "challenge"]) == 1
    err = capsys.readouterr().err
    assert "not in the mirror folder" in err and "kept" in err and "damaged" in err
    assert local.read_text() == "x\n"  # still there: the user decides, nothing vanished
    assert sorted(p.name for p in local.parent.iterdir()) == ["collision_num_val_seen.json", "collision_num_val_unseen.json"]


def test_fetch_reads_no_more_than_the_registry_size(tmp_path: Path, capsys, havln_data) -> None:
    """A mirror file far larger than the registry says: refused at once, never copied whole into --dest."""
    import os

    from havln_robot.data.registry import select

    m, d = _challenge_mirror(tmp_path, havln_data), tmp_path / "d"
    big = m / "challenge" / "collision_num_val_seen.json"
    os.truncate(big, 3 << 30)  # sparse: 3 GB that take no disk
    entry = next(e for e in select(["challenge"]) if e.local == "challenge/collision_num_val_seen.json")
    assert cli_main(["data", "fetch", "--dest", str(d), "--mirror", str(m), "--only", "challenge"]) == 1
    err = capsys.readouterr().err
    assert "collision_num_val_seen.json" in err and f"{entry.size} bytes the registry records" in err
    assert [p.name for p in (d / "challenge").iterdir()] == ["collision_num_val_unseen.json"]  # no temporary left


class _Trickle:
    """A loopback HTTP server (127.0.0.1 only) that sends ``body`` in ``step``-byte pieces, ``pause`` s apart."""

    def __init__(self, body: bytes, step: int, pause: float, length: int | None = None) -> None:
        import http.server
        import threading
        import time

        outer = self
        self.sent = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                self.send_response(200)
                if length is not None:
                    self.send_header("Content-Length", str(length))
                self.end_headers()
                try:
                    for i in range(0, len(body), step):
                        self.wfile.write(body[i : i + step])
                        self.wfile.flush()
                        outer.sent += step
                        time.sleep(pause)
                except OSError:  # the client stopped reading
                    pass

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _entry(local: str):
    from havln_robot.data.registry import select

    return next(e for e in select(["challenge"]) if e.local == local)


def test_trickling_http_mirror_hits_the_overall_deadline(tmp_path: Path) -> None:
    import time

    from havln_robot.data.fetch import fetch

    entry = _entry("challenge/collision_num_val_seen.json")
    srv = _Trickle(b"x" * entry.size, step=1, pause=0.05, length=entry.size)  # every read returns in time
    d = tmp_path / "d"
    (d / "challenge").mkdir(parents=True)
    (d / entry.local).write_text("earlier, damaged")
    lines: list[str] = []
    try:
        t0 = time.monotonic()
        out = fetch(d, [entry], ("url", srv.url), log=lines.append, deadline_s=1.0)
        took = time.monotonic() - t0
    finally:
        srv.close()
    assert took < 5, took
    assert entry.local in out.failed and "did not arrive within 1 s" in out.failed[entry.local]
    assert entry.local not in out.permanent  # a re-run may succeed
    assert (d / entry.local).read_text() == "earlier, damaged"
    assert sorted(p.name for p in (d / "challenge").iterdir()) == ["collision_num_val_seen.json"]


@pytest.mark.parametrize("announce", [True, False])
def test_http_mirror_sending_too_much_is_cut_at_the_registry_size(tmp_path: Path, announce: bool) -> None:
    from havln_robot.data.fetch import fetch

    entry = _entry("challenge/collision_num_val_seen.json")
    body = b"y" * (entry.size + (8 << 20))
    srv = _Trickle(body, step=1 << 16, pause=0.0, length=len(body) if announce else None)
    d = tmp_path / "d"
    try:
        out = fetch(d, [entry], ("url", srv.url), log=lambda s: None, deadline_s=30.0)
    finally:
        srv.close()
    why = out.failed[entry.local]
    assert f"more than the {entry.size} bytes" in why or f"larger than the {entry.size} bytes" in why
    assert srv.sent < entry.size + (4 << 20)  # stopped reading long before the end
    assert entry.local in out.permanent and not (d / entry.local).exists()


# --- the kind: every writer of an output goes through atomic_output --------------------------------

#: Writes that are not outputs a later run replaces: the write probe, save_figure's own savefig, jsonio's
#: writer (its callers are checked), the live bag a recorder streams into a fresh file, a temporary file.
_NOT_OUTPUTS = {
    ("paths.py", "write_bytes"),
    ("paths.py", "savefig"),
    ("jsonio.py", "write_text"),
    ("trials/recorder.py", "open"),
    ("bench/sim.py", "jsonio.write"),  # poses.json in a TemporaryDirectory
    ("doctor.py", "open"),  # the store check's probe file, in its paths.scratch_dir (writability test, not an output)
    ("data/fetch.py", "open"),  # the pooch downloader writes pooch's own temporary file, which pooch moves into place after the sha256
}


def _direct_writes(tree) -> list[tuple[int, str]]:
    """(line, kind) of every file write in ``tree`` whose target is not a name bound by ``with atomic_output(...) as name``."""
    import ast

    def is_atomic(call) -> bool:
        f = call.func if isinstance(call, ast.Call) else None
        return f is not None and (getattr(f, "id", None) == "atomic_output" or getattr(f, "attr", None) == "atomic_output")

    safe: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if is_atomic(item.context_expr) and isinstance(item.optional_vars, ast.Name):
                    safe.add(item.optional_vars.id)
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        mode = next((a.value for a in node.args[1:2] if isinstance(a, ast.Constant)), None)
        mode = mode or next((k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)), "r")
        target, kind = None, None
        if isinstance(f, ast.Attribute) and f.attr in ("write_text", "write_bytes"):
            target, kind = f.value, f.attr
        elif isinstance(f, ast.Attribute) and f.attr == "savefig":
            target, kind = (node.args[0] if node.args else None), "savefig"
        elif isinstance(f, ast.Attribute) and f.attr == "write" and getattr(f.value, "id", None) == "jsonio":
            target, kind = node.args[0], "jsonio.write"
        elif isinstance(f, ast.Attribute) and f.attr == "open" and node.args and isinstance(node.args[0], ast.Constant):
            if str(node.args[0].value).startswith("w"):
                target, kind = f.value, "open"
        elif getattr(f, "id", None) == "open" and isinstance(mode, str) and mode.startswith("w"):
            target, kind = node.args[0], "open"
        if kind and not (isinstance(target, ast.Name) and target.id in safe):
            bad.append((node.lineno, kind))
    return bad


def test_every_output_is_written_through_atomic_output() -> None:
    """No module writes an output file in place (open('w'), write_text, savefig, jsonio.write straight to
    the final name): a failure midway would leave the earlier result truncated or gone. Each write goes
    to the temporary file of paths.atomic_output (or paths.save_figure for figures)."""
    import ast

    import havln_robot

    root = Path(havln_robot.__file__).parent
    bad = []
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        for line, kind in _direct_writes(ast.parse(f.read_text(encoding="utf-8"))):
            if (rel, kind) not in _NOT_OUTPUTS:
                bad.append(f"{rel}:{line} ({kind})")
    assert not bad, "write outputs through havln_robot.paths.atomic_output / save_figure: " + ", ".join(bad)


def test_eval_outputs_are_replaced_as_a_set(tmp_path: Path, monkeypatch) -> None:
    from havln_robot import eval as ev

    out = tmp_path / "run"
    out.mkdir()
    for name in ("results.jsonl", "results.csv", "actions.json", "summary.json"):
        (out / name).write_text(f"earlier {name}")
    before = _snapshot(out)
    monkeypatch.setattr(ev.jsonio, "write", _full_disk)  # results.jsonl written, then the disk is full
    with pytest.raises(OSError):
        ev.write_outputs(out, [], {"n": 0})
    assert _snapshot(out) == before
    monkeypatch.undo()
    ev.write_outputs(out, [], {"n": 0})
    assert sorted(_snapshot(out)) == ["actions.json", "results.jsonl", "summary.json"]  # no stale CSV of the earlier run


def test_no_writer_makes_its_own_temporary_beside_an_output() -> None:
    """A temporary folder or file made with ``dir=`` (beside an output, in a user's folder) outlives a
    SIGKILL; only havln_robot/paths.py makes them, named after their owner so the next run removes a
    killed one's (new_staging_dir, scratch_dir, atomic_output). bench agreement's stage and trial bench's
    scratch folder were made by hand."""
    import ast

    import havln_robot

    root = Path(havln_robot.__file__).parent
    bad = []
    for f in sorted(root.rglob("*.py")):
        if f.name == "paths.py" and f.parent == root:
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("mkdtemp", "mkstemp", "TemporaryDirectory", "NamedTemporaryFile")
                and any(k.arg == "dir" for k in node.keywords)
            ):
                bad.append(f"{f.relative_to(root.parent)}:{node.lineno}")
    assert not bad, "make staging folders / scratch files through havln_robot.paths (new_staging_dir, scratch_dir): " + ", ".join(bad)
