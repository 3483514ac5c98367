"""`havln-robot train` end to end on a few real episodes in the batch simulator, and the shipped model."""

from __future__ import annotations

import json

import numpy as np

from havln_robot.actions import ACTIONS
from havln_robot.policy.api import Observation
from havln_robot.policy.registry import load_policy
from havln_robot.policy.small import SmallPolicy


def test_train_pipeline_end_to_end(havln_data, tmp_path):
    from havln_robot.policy.train import main

    out = tmp_path / "tiny.pt"
    argv = [
        "--episodes",
        "3",
        "--rounds",
        "2",
        "--dagger-episodes",
        "2",
        "--epochs",
        "1",
        "--val-episodes",
        "2",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    assert [h["round"] for h in report["history"]] == [0, 1]
    assert report["history"][1]["train_episodes"] == 5  # 3 teacher-forced + 2 DAgger episodes aggregated
    assert report["history"][0]["val"]["episodes"] == 2
    assert report["command"].startswith("havln-robot train --episodes 3")
    pol = load_policy(out)
    assert isinstance(pol, SmallPolicy) and pol.views == 12


def test_train_rejects_bad_arguments(capsys):
    from havln_robot.policy.train import main

    assert main(["--res", "20"]) == 2
    assert "--res must be a positive multiple of 8" in capsys.readouterr().err


def test_expert_reaches_ha_val_seen_goals(havln_data):
    from havln_robot.episodes import load_episodes
    from havln_robot.policy.dataset import run_episodes
    from havln_robot.policy.small import SmallConfig
    from havln_robot.policy.tokenizer import Vocabulary

    eps = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", limit=6)
    res = run_episodes(eps, Vocabulary.load(), SmallConfig(), None, 1.0)
    # in the closed-loop world (motion_node's executor, stairs as climbable terrain) 4 of these 6
    # succeed with the rollouts' own people and seeds (3 before the climbable-terrain rule)
    assert sum(bool(r.metrics.success) for r in res) >= 4
    s = next(r.sample for r in res if r.metrics.success)  # an episode the expert ended with its own STOP
    n = SmallConfig().views
    assert s.views.shape[1:] == (n, 4, 24, 24) and s.views.dtype == np.uint8
    assert s.choices[-1] == n and (s.choices[:-1] < n).all() and (s.steps[:-1] >= 1).all()


def test_shipped_model_loads_and_acts(havln_data):
    from havln_robot.paths import models_dir

    path = models_dir() / "small_panoramic.pt"
    assert path.stat().st_size < 20e6
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["kind"] == "small" and meta["command"].startswith("havln-robot train")
    pol = load_policy("small_panoramic")
    pol.reset("Walk down the hallway and stop next to the person reading.")
    rng = np.random.default_rng(0)
    obs = Observation(
        rng.integers(0, 255, (12, 224, 224, 3), dtype=np.uint8),
        rng.random((12, 256, 256, 1), dtype=np.float32),
        np.array([np.remainder(2 * np.pi * i / 12 + np.pi, 2 * np.pi) - np.pi for i in range(12)], np.float32),
    )
    assert pol.act(obs) in ACTIONS


def test_bench_latency_runs(capsys):
    from havln_robot.bench.policy import main

    assert main(["--skip-eval", "--steps", "1"]) == 0
    out = capsys.readouterr().out
    assert "CMA (HA-VLN-CMA layout, 1 view)" in out and "small panoramic" in out and "peak RSS" in out


class _BoxedInWorld:
    """A robot motion_node refuses every motion for (a person pressed against it on every side):
    records what the rollout asks and answers as :class:`~havln_robot.sim.closed_loop.ClosedLoop` does."""

    def __init__(self) -> None:
        self.pose, self.camera_pose, self.camera_pitch, self.t = (0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.3, 0.0), 0.0, 0.0
        self.asked: list[str] = []
        self.reason = ""

    def human_positions(self):
        return []

    def step(self, action):
        from types import SimpleNamespace

        from havln_robot.actions import STOP

        self.asked.append(action)
        if action == STOP:
            self.reason = "stop"
            return SimpleNamespace(contact=None, result=SimpleNamespace(outcome="ok", detail="STOP"))
        return SimpleNamespace(contact=None, result=SimpleNamespace(outcome="collision", detail="blocked before start: person 0.40 m away"))

    def metrics(self):
        return None


def test_training_rollout_ends_a_refused_macro_and_a_blocked_episode():
    """The DAgger rollout runs macros as agent_node runs the shipped policy's: an action
    motion_node refuses ends the macro (a new decision on a new panorama), and 10 blocked actions in
    a row end the episode with a STOP, reason ``blocked`` -- not the whole macro pushed into the refusal."""
    from havln_robot.actions import STOP
    from havln_robot.policy.dataset import WaypointExpert, pano_headings, rollout
    from havln_robot.policy.small import SmallConfig

    cfg = SmallConfig()

    class Renderer:
        headings = pano_headings(cfg.views)
        calls = 0

        def panorama(self, pose, pitch, t):
            Renderer.calls += 1
            return np.zeros((cfg.views, 4, cfg.res, cfg.res), dtype=np.uint8)

    world = _BoxedInWorld()
    expert = WaypointExpert([(0.0, 0.0, 0.0), (2.0, 0.0, 0.0), (4.0, 0.0, 0.0)])
    res = rollout(world, Renderer(), np.zeros(200, dtype=np.int64), cfg, None, 1.0, np.random.default_rng(0), record=False, expert=expert)
    assert res.actions == world.asked
    assert res.actions[-1] == STOP and STOP not in res.actions[:-1]
    assert len(res.actions) == 11  # 10 refused actions, one per decision, then the STOP
    assert Renderer.calls == 10  # every refused action ended its macro: a new panorama each time
    assert world.reason == "blocked"
