"""A full disk -- one line, the trial closed ``aborted (disk full)`` as far as the
disk allows, nothing already committed lost.

Two ways to fill the disk: a real tiny tmpfs (root only; skipped with the reason otherwise) and the
``HAVLN_INJECT_ENOSPC`` injection point (:mod:`havln_robot.trials.faults`), which runs anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import rosspin

from havln_robot.trials import faults
from havln_robot.trials.store import DiskFull, Step, TrialError, TrialStore


@pytest.fixture
def inject(monkeypatch):
    """Set HAVLN_INJECT_ENOSPC for this test, write counts starting now."""

    def set_(spec: str) -> None:
        faults.reset()
        monkeypatch.setenv(faults.ENV, spec)

    yield set_
    faults.reset()


def _step(i: int) -> Step:
    return Step(seq=0, stamp=float(i), action="MOVE_FORWARD", outcome="ok", x=0.25 * i, y=0.0, yaw=0.0)


def test_injected_disk_full_is_one_line_and_loses_nothing_committed(tmp_path, inject):
    db = tmp_path / "trials.db"
    with TrialStore(db, writer=True) as st:
        t = st.start_trial("sim", "office")
        for i in range(5):
            st.add_step(t.id, _step(i))
        inject("store:0:2")  # the next two writes fail as SQLITE_FULL
        with pytest.raises(DiskFull) as ei:
            st.add_step(t.id, _step(5))
        msg = str(ei.value)
        assert "disk full" in msg and "everything committed before is kept" in msg and "\n" not in msg
        assert isinstance(ei.value, TrialError)
        with pytest.raises(DiskFull):
            st.set_outcome(t.id, "aborted", reason="disk full", end_reason="disk full")
        # space again: closing works, the 5 committed steps are all there
        st.set_outcome(t.id, "aborted", reason="disk full", end_reason="disk full")
        assert st.step_count(t.id) == 5
    with TrialStore(db, readonly=True) as ro:
        t = ro.trial(t.id)
        assert (t.outcome, t.reason, t.end_reason) == ("aborted", "disk full", "disk full")
        assert ro.integrity_ok()


def _mount_tmpfs(path: Path, size: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("a real full disk needs root to mount a tiny tmpfs; the injection tests cover the rest")
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"root, but mounting a tmpfs failed: {r.stderr.strip()}")


def test_real_full_tmpfs_store_keeps_every_committed_step(tmp_path):
    mnt = tmp_path / "small"
    _mount_tmpfs(mnt, "512k")
    try:
        db = mnt / "trials.db"
        st = TrialStore(db, writer=True)
        t = st.start_trial("sim", "office")
        for i in range(3):
            st.add_step(t.id, _step(i))
        # fill what is left of the disk
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        committed, err = 3, None
        for i in range(3, 2000):
            try:
                st.add_step(t.id, Step(**{**_step(i).__dict__, "result": {"pad": "p" * 3000}}))
                committed += 1
            except TrialError as exc:
                err = exc
                break
        assert isinstance(err, DiskFull), err
        assert "\n" not in str(err)
        try:  # as far as the disk allows
            st.set_outcome(t.id, "aborted", reason="disk full", end_reason="disk full")
        except DiskFull:
            pass
        st.close()
        os.unlink(mnt / "filler")
        with TrialStore(db, readonly=True) as ro:
            assert ro.step_count(t.id) == committed and ro.integrity_ok()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_node_closes_the_trial_on_disk_full_in_one_line(ros_context, tmp_path, inject, capfd):
    """trial_logger_node: the MCAP bag's disk fills (injected ENOSPC) → one error line, the bag
    finished, the trial goes on in the store marked with its recording fault; then the store's disk
    fills on a step write of the next trial → the trial closed aborted (disk full), steps committed
    before kept. No traceback."""
    pytest.importorskip("rclpy")
    from diagnostic_msgs.msg import DiagnosticStatus
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from std_msgs.msg import String

    from havln_robot import topics
    from havln_robot.nodes.trial_logger_node import TrialLoggerNode
    from havln_robot.ros.codec import status_msg
    from havln_robot.trials.params import TRIAL_LOGGER_PARAMS

    params = TRIAL_LOGGER_PARAMS.validate(
        {
            "platform": "sim",
            "db_path": str(tmp_path / "trials.db"),
            "auto_end": True,
            "record_mcap": True,
            "mcap_dir": str(tmp_path / "mcap"),
            "poll_period": 0.2,
        }
    )
    node = TrialLoggerNode(params=params, context=ros_context)
    io = Node("fault_test_io", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    ex.add_node(io)

    def spin_until(cond, timeout=10.0):
        return rosspin.spin_until(ex, cond, timeout)

    def result(i):
        return status_msg("MOVE_FORWARD", "ok", {"action": "MOVE_FORWARD", "outcome": "ok", "x": 0.25 * i, "y": 0.0, "yaw_deg": 0.0})

    reader = TrialStore(tmp_path / "trials.db", readonly=True)
    try:
        instr = io.create_publisher(String, topics.INSTRUCTION, 10)
        res = io.create_publisher(DiagnosticStatus, topics.ACTION_RESULT, 50)
        assert spin_until(lambda: instr.get_subscription_count() > 0 and res.get_subscription_count() > 0)
        # 1) the bag's disk is full
        inject("mcap:2")
        instr.publish(String(data="go to the window"))
        assert spin_until(lambda: reader.running_trial() is not None)
        t1 = reader.running_trial()
        for i in range(4):
            res.publish(result(i))
            spin_until(lambda: False, 0.1)
        assert spin_until(lambda: reader.trial(t1.id).recording_fault != "" and reader.step_count(t1.id) == 4)
        t1 = reader.trial(t1.id)
        assert t1.state == "running" and "disk full" in t1.recording_fault  # recorded on in the store
        # 2) the store's disk is full on the third step of the next trial
        inject("")
        instr.publish(String(data="go to the door"))
        assert spin_until(lambda: (reader.running_trial() or t1).id != t1.id)
        t2 = reader.running_trial()
        for i in range(2):
            res.publish(result(i))
            assert spin_until(lambda n=i + 1: reader.step_count(t2.id) == n)
        inject("store:0:1")  # only the step write fails; the close that follows finds space
        res.publish(result(2))
        assert spin_until(lambda: reader.trial(t2.id).outcome == "aborted")
        t2 = reader.trial(t2.id)
        assert (t2.reason, reader.step_count(t2.id)) == ("disk full", 2)
    finally:
        reader.close()
        node.destroy_node()
        io.destroy_node()
        ex.shutdown()
    err = capfd.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if "disk full" in ln]
    assert len(lines) == 2, err
    assert f"trial {t1.id}: recording fault" in lines[0] and "goes on" in lines[0]
    assert f"trial {t2.id} closed as aborted (disk full)" in lines[1]
    assert json.loads(json.dumps(lines))  # plain text lines


def test_node_pauses_the_agent_on_a_recording_fault_when_the_profile_says_so(ros_context, tmp_path, inject):
    """mcap_on_fault: pause -- the bag's disk fills: the logger publishes true on pause_topic (agent_node
    holds its next action, the robot stands), and the trial stays open, marked with its fault."""
    pytest.importorskip("rclpy")
    from diagnostic_msgs.msg import DiagnosticStatus
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from std_msgs.msg import Bool, String

    from havln_robot import topics
    from havln_robot.nodes.trial_logger_node import TrialLoggerNode
    from havln_robot.ros.codec import status_msg
    from havln_robot.trials.params import TRIAL_LOGGER_PARAMS

    params = TRIAL_LOGGER_PARAMS.validate(
        {
            "platform": "sim",
            "db_path": str(tmp_path / "trials.db"),
            "record_mcap": True,
            "mcap_dir": str(tmp_path / "mcap"),
            "mcap_on_fault": "pause",
            "poll_period": 0.2,
        }
    )
    node = TrialLoggerNode(params=params, context=ros_context)
    io = Node("pause_test_io", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    ex.add_node(io)
    paused: list[bool] = []
    io.create_subscription(Bool, topics.AGENT_PAUSE, lambda m: paused.append(m.data), 10)
    reader = TrialStore(tmp_path / "trials.db", readonly=True)
    try:
        instr = io.create_publisher(String, topics.INSTRUCTION, 10)
        res = io.create_publisher(DiagnosticStatus, topics.ACTION_RESULT, 50)
        assert rosspin.spin_until(ex, lambda: instr.get_subscription_count() > 0 and res.get_subscription_count() > 0, 10.0)
        inject("mcap:1")
        instr.publish(String(data="go to the window"))
        assert rosspin.spin_until(ex, lambda: reader.running_trial() is not None, 10.0)
        t = reader.running_trial()
        res.publish(status_msg("MOVE_FORWARD", "ok", {"action": "MOVE_FORWARD", "outcome": "ok", "x": 0.25, "y": 0.0, "yaw_deg": 0.0}))
        assert rosspin.spin_until(ex, lambda: paused == [True] and reader.trial(t.id).recording_fault != "", 10.0)
        assert reader.trial(t.id).state == "running"
    finally:
        reader.close()
        node.destroy_node()
        io.destroy_node()
        ex.shutdown()
