"""Lock files in a shared temp folder: a planted symbolic link, FIFO, folder or hard link is refused,
its target never truncated (locks.acquire opens with O_NOFOLLOW and checks what it opened)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from havln_robot import locks


def _victim(tmp_path):
    v = tmp_path / "victim"
    v.write_text("DATA\n")
    return v


def test_a_symlink_in_place_of_the_lock_is_refused_and_its_target_kept(tmp_path):
    v = _victim(tmp_path)
    lock = tmp_path / "L" / "havln_robot-ros-domain-40.lock"
    lock.parent.mkdir()
    lock.symlink_to(v)
    with pytest.raises(locks.LockUnsafe) as e:
        locks.acquire(lock)
    assert "symbolic link" in str(e.value) and str(lock) in str(e.value) and "HAVLN_LOCK_DIR" in str(e.value)
    assert v.read_text() == "DATA\n"
    assert locks.holder(lock) is None and v.read_text() == "DATA\n"


def test_a_dangling_symlink_is_refused_and_nothing_created(tmp_path):
    lock = tmp_path / "x.lock"
    lock.symlink_to(tmp_path / "made")
    with pytest.raises(locks.LockUnsafe):
        locks.acquire(lock)
    assert not (tmp_path / "made").exists()


def test_a_hard_link_is_refused_and_its_target_kept(tmp_path):
    v = _victim(tmp_path)
    lock = tmp_path / "x.lock"
    os.link(v, lock)
    with pytest.raises(locks.LockUnsafe) as e:
        locks.acquire(lock)
    assert "hard link" in str(e.value)
    assert v.read_text() == "DATA\n"


def test_a_fifo_or_a_folder_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "f.lock"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(pytest.raises(locks.LockUnsafe, locks.acquire, fifo)), daemon=True)
    t.start()
    t.join(20)
    assert done, "acquire blocked on a FIFO"
    assert locks.holder(fifo) is None
    (tmp_path / "d.lock").mkdir()
    with pytest.raises(locks.LockUnsafe):
        locks.acquire(tmp_path / "d.lock")


def test_a_plain_lock_file_still_works(tmp_path):
    lock = tmp_path / "ok.lock"
    with locks.acquire(lock, what="test"):
        assert "what=test" in locks.holder(lock)
    assert locks.holder(lock) is None


def test_bringup_refuses_a_planted_domain_lock_before_starting_anything(tmp_path, monkeypatch):
    from havln_robot import bringup, config
    from havln_robot.params import ConfigError

    monkeypatch.setenv("HAVLN_LOCK_DIR", str(tmp_path))
    monkeypatch.setenv("ROS_DOMAIN_ID", "77")
    v = _victim(tmp_path)
    bringup.domain_lock_path("77").symlink_to(v)
    b = bringup.Bringup(config.load_profile("config/sim.yaml"), log=lambda s: None)
    with pytest.raises(ConfigError) as e:
        b.start()
    assert "symbolic link" in str(e.value) and "ROS domain 77" in str(e.value)
    assert v.read_text() == "DATA\n" and not b.nodes


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder of another user")
def test_stale_staging_of_another_user_in_a_shared_folder_is_never_touched(tmp_path):
    import subprocess
    import sys
    import tempfile

    from havln_robot import paths

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    prefix = f"{paths.STAGING_PREFIX}{paths.staging_owner(p.pid)}.trial-bench."
    theirs = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=tmp_path))
    mine = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=tmp_path))
    os.chown(theirs, 65534, 65534)
    kept = paths.clean_stale_staging(tmp_path / "trial-bench", note=False)
    assert theirs.exists() and [k for k, _ in kept] == [theirs]
    assert not mine.exists()
