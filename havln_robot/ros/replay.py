"""The ROS backend of ``havln-robot replay``: format-v1 actions through motion_node over DDS.

The file is played by agent_node's episode runner (:class:`ReplayIO`: the same rules as ``--backend
batch``). Each action goes out through the :class:`~havln_robot.ros.motion_client.MotionClient`
(resent while motion_node answers ``rejected``) and the next one waits for its ``havln/action_result``.
With the embedded simulator in lockstep (config/sim.yaml) the replay is the agent participant
(:class:`~havln_robot.ros.lockstep.LockstepAgent`): sim time passes only while an action runs or a
blocked wait lasts, so a replay gives the same result on a loaded machine. Targets:
``embedded`` (sim_node + motion_node of config/sim.yaml started in this process), ``external``
(nodes already running, e.g. Gazebo) and ``robot`` (the Go2; the CLI asks for a typed ``yes``).
The command line itself is :func:`havln_robot.challenge.replay.main`; :func:`main` here injects
this backend into it.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from havln_robot import topics
from havln_robot.challenge import replay as challenge_replay
from havln_robot.challenge.replay import ReplayedEpisode, ReplayError
from havln_robot.records import GroundTruth, RecordError, finite_or_none
from havln_robot.text import plural, terminal_safe

# rclpy and the message packages are imported where they are used, so that ``havln-robot replay
# --backend batch`` (this module's main) also runs where ROS is not installed.

#: Resends of an action motion_node answered ``rejected`` (busy), and the pause before each, s.
REJECTED_RETRIES = 3
REJECTED_WAIT_S = 0.5
#: In lockstep the clock starts once sim_node heard motion_node and the replay (and settled): this
#: much longer to wait for the graph, s.
LOCKSTEP_START_S = 10.0


class RosReplayer:
    """The replay's view of the ROS graph: a motion client plus ground truth and contact counts.

    Args:
        node: an rclpy node (any context) used for the publisher/subscriptions.
        spin: callable that spins the executor once (``spin(timeout_s)``).

    Attributes:
        motion: the :class:`MotionClient` (spins with ``spin`` while it waits).
        ground_truth: the latest ``havln/ground_truth`` (sim only), None before the first.
        collisions: human contacts among the ``havln/collision`` records
            (:attr:`havln_robot.records.CollisionRecord.is_human_contact`; used without ground truth).
    """

    def __init__(self, node: Any, spin: Callable[[float], None]) -> None:
        from diagnostic_msgs.msg import DiagnosticStatus
        from nav_msgs.msg import Odometry
        from sensor_msgs.msg import Image

        from havln_robot.ros.codec import decode_collision, decode_ground_truth
        from havln_robot.ros.motion_client import MotionClient

        self._decode_collision, self._decode_ground_truth = decode_collision, decode_ground_truth
        self.node = node
        self.spin = spin
        self.motion = MotionClient(node, topics.ACTION, topics.ACTION_RESULT, spin=spin)
        self.pub = self.motion.pub
        self.ground_truth: GroundTruth | None = None
        self.gt_count = 0
        self.lockstep: Any = None  # the driver's LockstepAgent when the simulator runs in lockstep
        self.collisions = 0
        self.odom_count = 0
        self.depth_count = 0
        node.create_subscription(DiagnosticStatus, topics.GROUND_TRUTH, self._gt, 10)
        node.create_subscription(DiagnosticStatus, topics.COLLISION, self._coll, 50)
        from havln_robot.ros.qos import sensor_qos

        # sensor data: best effort, which receives from reliable and best-effort publishers
        node.create_subscription(Odometry, topics.ODOM, self._odom, sensor_qos(10))
        node.create_subscription(Image, topics.DEPTH_IMAGE, self._depth, sensor_qos(2))
        self._depth_topic = topics.DEPTH_IMAGE

    def _depth(self, msg: Any) -> None:
        self.depth_count += 1

    def _odom(self, msg: Any) -> None:
        self.odom_count += 1

    def _gt(self, msg: Any) -> None:
        self.gt_count += 1
        try:
            self.ground_truth = self._decode_ground_truth(msg)
        except RecordError:
            pass

    def _coll(self, msg: Any) -> None:
        # human contacts only: refused or stopped-short motions prevented the collision, and static
        # contacts are not in TCR/CR
        try:
            if self._decode_collision(msg).is_human_contact:
                self.collisions += 1
        except RecordError:
            pass

    def wait_ready(self, timeout_s: float) -> str:
        """Wait until motion_node subscribes to ``havln/action``, odometry flows and (when published) depth;
        in lockstep (:attr:`lockstep`: the driver's :class:`~havln_robot.ros.lockstep.LockstepAgent`) until
        the clock has started and motion_node acked its first step (the clock then stands still).

        Returns:
            "" when ready, else what is missing.
        """
        t_end = time.monotonic() + timeout_s
        lockstep = self.lockstep
        while lockstep is not None and time.monotonic() < t_end:
            if self.pub.get_subscription_count() > 0 and lockstep.ready():
                return ""
            self.spin(0.05)
        while lockstep is None and time.monotonic() < t_end:
            depth_ok = self.depth_count >= 1 or self.node.count_publishers(self._depth_topic) == 0
            if self.pub.get_subscription_count() > 0 and self.odom_count >= 3 and depth_ok:
                for _ in range(10):  # let motion_node see the same odometry
                    self.spin(0.02)
                return ""
            self.spin(0.05)
        if self.pub.get_subscription_count() == 0:
            return "nothing subscribes to havln/action; is motion_node running?"
        if lockstep is not None:
            return "the simulator's lockstep clock did not start, or motion_node did not ack its first step"
        if self.odom_count < 3:
            return "no odometry on 'odom'; is the simulator / Gazebo bridge / go2_driver_node running?"
        return f"no image on '{self._depth_topic}' although it has a publisher"

    def settle(self) -> None:
        """After the last action: the ground truth of where the robot ended (a record published after
        now; the simulator repeats it while its lockstep clock stands still), at most 2 s."""
        n = self.gt_count
        end = time.monotonic() + 2.0
        while self.gt_count < n + 2 and time.monotonic() < end:
            self.spin(0.02)

    def stop(self) -> None:
        """Publish STOP (motion_node aborts any running action and holds zero velocity)."""
        self.motion.stop()
        for _ in range(5):
            self.spin(0.02)


class ReplayIO:
    """The episode runner's robot (:class:`~havln_robot.agent.core.AgentIO`) for a replay: an action
    file played by agent_node's :class:`~havln_robot.agent.core.EpisodeRunner` with
    :class:`~havln_robot.agent.sim_io.ActionFilePolicy`, as ``replay --backend batch`` plays it, so
    both backends apply the same rules (a blocked action: ``blocked_wait_s`` standing still; the
    episode ends ``blocked`` after ``max_consecutive_blocked`` in a row, with a STOP).

    Actions go through motion_node (resent while ``rejected``); in lockstep through the driver's
    :class:`~havln_robot.ros.lockstep.LockstepAgent` (sim time passes only while an action runs or a
    blocked wait lasts). The policy does not look: :meth:`grab` gives a blank view.
    """

    def __init__(self, rep: RosReplayer, action_timeout_s: float, cancelled: Callable[[], bool], lockstep: Any = None) -> None:
        self.rep = rep
        self.timeout_s = action_timeout_s
        self.cancelled = cancelled
        self.lockstep = lockstep
        self.refused = 0

    def send_action(self, action: str) -> Any:
        from havln_robot.agent.core import ActionOutcome, AgentAbort
        from havln_robot.ros.motion_client import MotionCancelled, MotionTimeout

        try:
            if self.lockstep is not None:
                r = self.lockstep.send(action, self.timeout_s, REJECTED_RETRIES, REJECTED_WAIT_S, self.cancelled)
            else:
                r = self.rep.motion.send(
                    action, self.timeout_s, retries=REJECTED_RETRIES, retry_wait_s=REJECTED_WAIT_S, cancelled=self.cancelled
                )
        except MotionCancelled:
            raise AgentAbort("interrupted (Ctrl-C): STOP sent", reason="aborted") from None
        except MotionTimeout:
            raise AgentAbort(f"no action_result for {action} within {self.timeout_s:.0f} s") from None
        if r.blocked_before_start:
            self.refused += 1  # not executed: the next action starts from the pose the file did not expect
        return ActionOutcome(action, r.outcome.value, r.to_values())

    def grab(self) -> Any:
        import numpy as np

        from havln_robot.agent.core import RawView

        return RawView(np.zeros((2, 2, 3), np.uint8), np.zeros((2, 2), np.uint16))

    def publish_status(self, values: Any) -> None:
        pass

    def pause(self, seconds: float) -> bool:
        """A blocked wait: in lockstep ``seconds`` of sim time, else of the clock (spinning); True."""
        from havln_robot.agent.core import AgentAbort
        from havln_robot.ros.motion_client import MotionCancelled

        try:
            if self.lockstep is not None:
                self.lockstep.pause(seconds, self.cancelled)
            else:
                self.rep.motion.pause(seconds, self.cancelled)
        except MotionCancelled:
            raise AgentAbort("interrupted (Ctrl-C): STOP sent", reason="aborted") from None
        return True

    def play(self, actions: list[str]) -> tuple[bool, str, int, int]:
        """Play ``actions``: ``(stopped, note, actions sent, refused)``."""
        from havln_robot.agent.core import EpisodeRunner
        from havln_robot.agent.sim_io import ActionFilePolicy, agent_node_params, batch_agent_config

        cfg = batch_agent_config(agent_node_params())
        runner = EpisodeRunner(ActionFilePolicy(actions), self, cfg, clock=time.monotonic, cancelled=self.cancelled)
        try:
            res = runner.run("")
        finally:
            runner.close()
        steps = res.steps + (1 if res.interrupted else 0)
        if res.reason == "blocked":  # as the batch backend: the challenge file of a blocked episode ends in STOP
            self.rep.stop()
            return True, f"blocked: {res.detail}", steps, self.refused
        if res.reason == "aborted":
            if res.interrupted:
                self.rep.stop()
            detail = res.detail if res.detail.startswith(("interrupted", "no action_result")) else f"aborted: {res.detail}"
            return False, detail, steps, self.refused
        return res.reason == "stop", "", steps, self.refused


def replay_ros(
    ids: Sequence[str],
    actions: dict[str, list[str]],
    baselines: dict[str, int],
    *,
    target: str,
    episodes_file: Path | None,
    action_timeout_s: float,
    sets: Sequence[str] = (),
    progress: bool = True,
    stop_event: threading.Event | None = None,
    record: bool = False,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
) -> list[ReplayedEpisode]:
    """Replay over ROS (see the module docstring for the targets).

    ``embedded`` starts sim_node + motion_node from config/sim.yaml per episode (the episode is
    chosen through sim_node's ``episodes_file`` / ``episode_id`` parameters when the sim node has
    them; ``--set`` adds overrides). ``external`` / ``robot`` use the running graph and replay
    the episodes back to back; NE comes from ``havln/ground_truth`` when something publishes it.

    Raises:
        ReplayError: rclpy / nodes unavailable, motion_node not found, or the profile is refused.
    """
    from tqdm import tqdm

    from havln_robot.ros.lockstep import LockstepAgent
    from havln_robot.sim.metrics import episode_metrics

    stop_event = stop_event or threading.Event()
    results: list[ReplayedEpisode] = []
    bar = tqdm(list(ids), desc=f"replay[{target}]", unit="ep", disable=not progress, file=sys.stderr)
    for k, eid in enumerate(bar):
        if stop_event.is_set():
            break
        # the ROS-domain conflict check once; later episodes follow our own nodes
        with _RosSession(target, eid, episodes_file, sets, log, record, check_graph=k == 0) as sess:
            rep = RosReplayer(sess.node, sess.spin)
            sess.lockstep = rep.lockstep = LockstepAgent(sess.node, rep.motion, sess.spin) if sess.lockstep_on else None
            missing = rep.wait_ready(20.0 if sess.lockstep is None else 20.0 + LOCKSTEP_START_S)
            if missing:
                raise ReplayError(f"{target}: not ready after 20 s: {missing}")
            io = ReplayIO(rep, action_timeout_s, stop_event.is_set, lockstep=sess.lockstep)
            stopped, note, steps, refused = io.play(actions[eid])
            if note.startswith("aborted") and target == "robot":  # e-stop / safety stop on the real robot ends the whole replay
                rep.stop()
                stop_event.set()
            rep.settle()
            gt = rep.ground_truth
            if gt is None:  # nothing publishes ground truth (robot): NE unknown, contacts from havln/collision
                gt = GroundTruth(collisions_human=rep.collisions)
            m = episode_metrics(
                gt.distance_to_goal_m,
                stopped,
                gt.path_length_m,
                0.0,
                gt.collisions_human,
                gt.collisions_static,
                steps,
                baselines.get(eid, 0),
                ne_euclid=finite_or_none(gt.distance_to_goal_euclid_m),
                unreachable=gt.goal_unreachable,
            )
            r = ReplayedEpisode(eid, m, 1 if gt.nearest_human_id else 0, note, refused=refused, actions=steps)
            results.append(r)
            log(
                terminal_safe(
                    f"[replay] episode {eid}: {plural(steps, 'action')} ({refused} refused), {note or ('STOP' if stopped else 'budget')}"
                )
            )
    bar.close()
    return results


class _RosSession:
    """An rclpy context + node for one replayed episode (and the embedded nodes when asked)."""

    def __init__(
        self,
        target: str,
        episode_id: str,
        episodes_file: Path | None,
        sets: Sequence[str],
        log: Callable[[str], None],
        record: bool = False,
        check_graph: bool = True,
    ) -> None:
        self.target, self.episode_id, self.episodes_file, self.sets, self.log = target, episode_id, episodes_file, sets, log
        self.record, self.check_graph = record, check_graph
        self.bringup = None
        self.ctx = None
        self.lockstep_on = False  # the embedded simulator runs in lockstep: the replay is its agent participant
        self.lockstep: Any = None

    def __enter__(self) -> _RosSession:
        try:
            import rclpy
            from rclpy.executors import SingleThreadedExecutor
        except ImportError as exc:
            raise ReplayError(f"rclpy is not available ({exc}); use --backend batch") from None
        from havln_robot.dds import configure_dds

        configure_dds()
        if self.target == "embedded":
            # the profile's nodes spin on their own threads; the replay node is spun by the caller
            self.bringup = _embedded_bringup(self.episode_id, self.episodes_file, self.sets, self.log, self.record, self.check_graph)
            self.ctx = self.bringup.context
            self.lockstep_on = bool(self.bringup.profile.nodes["sim_node"].get("lockstep", False))
        else:
            self.ctx = rclpy.Context()
            rclpy.init(context=self.ctx, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
        self.node = rclpy.create_node("havln_replay", context=self.ctx)
        ex = SingleThreadedExecutor(context=self.ctx)
        ex.add_node(self.node)
        self._ex = ex
        bringup = self.bringup

        def spin(t: float) -> None:
            if bringup is not None and bringup.failed is not None:
                name, err = bringup.failed
                raise ReplayError(f"embedded {name} failed ({type(err).__name__}: {err}); every node was stopped")
            ex.spin_once(timeout_sec=t)

        self.spin = spin
        return self

    def __exit__(self, *exc: object) -> None:
        import rclpy

        if self.lockstep is not None:
            self.lockstep.close()
        if self.bringup is not None:
            self._ex.shutdown()
            self.node.destroy_node()
            self.bringup.shutdown()
        else:
            self.node.destroy_node()
            self._ex.shutdown()
            rclpy.try_shutdown(context=self.ctx)


def _embedded_bringup(
    episode_id: str,
    episodes_file: Path | None,
    sets: Sequence[str],
    log: Callable[[str], None],
    record: bool = False,
    check_graph: bool = True,
):
    """Start sim_node + motion_node + people_node (+ trial_logger_node when ``record``) of config/sim.yaml in this process."""
    from havln_robot.bringup import Bringup, parse_set
    from havln_robot.config import ConfigError, Profile, load_profile, load_spec
    from havln_robot.paths import config_dir

    overrides = parse_set(list(sets))
    spec = load_spec("sim_node").by_name()
    sim = overrides.setdefault("sim_node", {})
    for name in ("episodes_file", "episode_file"):
        if name in spec and episodes_file is not None:
            sim.setdefault(name, str(episodes_file))
    if "episode_id" in spec:
        sim.setdefault("episode_id", episode_id)
    if "scene_source" in spec and episodes_file is not None:
        sim.setdefault("scene_source", "episodes")
    try:
        prof = load_profile(config_dir() / "sim.yaml", overrides, overrides_from="--set")
    except ConfigError as exc:
        raise ReplayError(f"config/sim.yaml: {exc}") from None
    # the robot's nodes of the profile as the demo starts them (people_node too: with people_source
    # 'detected' it alone publishes the people motion_node checks), without agent_node: the replay acts as it
    wanted = ("sim_node", "motion_node", "people_node") + (("trial_logger_node",) if record else ())
    keep = {k: v for k, v in prof.nodes.items() if k in wanted}
    for need in ("sim_node", "motion_node"):
        if need not in keep:
            raise ReplayError(f"{need} is not configured in config/sim.yaml")
    bringup = Bringup(Profile(prof.path, keep), log=log, check_graph=check_graph)
    try:
        bringup.start()
    except ConfigError as exc:
        raise ReplayError(str(exc)) from None
    except Exception as exc:  # boundary: a node that fails to start must not leave a traceback
        raise ReplayError(f"embedded nodes failed to start ({type(exc).__name__}: {exc})") from None
    return bringup


def main(argv: list[str] | None = None) -> int:
    """``havln-robot replay``: :func:`havln_robot.challenge.replay.main` with this ROS backend and the
    batch backend's episode runner (:func:`havln_robot.agent.sim_io.replay_actions`)."""
    from havln_robot.agent.sim_io import replay_actions

    return challenge_replay.main(argv, ros_backend=replay_ros, batch_play=replay_actions)


if __name__ == "__main__":
    sys.exit(main())
