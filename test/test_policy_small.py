"""Small panoramic policy: views contract, macro actions, learning on synthetic data, checkpoint IO."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from havln_robot.actions import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from havln_robot.policy.api import Observation, PolicyError
from havln_robot.policy.checkpoint import build_policy, save_checkpoint
from havln_robot.policy.dataset import EpisodeSample, WaypointExpert, pano_headings
from havln_robot.policy.registry import load_policy
from havln_robot.policy.small import SmallConfig, SmallNet, SmallPolicy, macro_actions
from havln_robot.policy.tokenizer import Vocabulary, fingerprint
from havln_robot.policy.train import batch_loss, train_epochs

WORDS = ["<pad>", "<unk>", "go", "left", "right", "stop"]


def _vocab_file(tmp_path):
    p = tmp_path / "vocab.json"
    p.write_text(json.dumps({"word_list": WORDS, "sha256": fingerprint(WORDS)}))
    return p


def _obs(n, rng, step=0):
    return Observation(
        rng.integers(0, 255, (n, 224, 224, 3), dtype=np.uint8),
        rng.random((n, 256, 256, 1), dtype=np.float32),
        pano_headings(n),
        step,
    )


def test_macro_actions():
    assert macro_actions(0.0, 3) == [MOVE_FORWARD] * 3
    assert macro_actions(math.radians(30), 1) == [TURN_LEFT, TURN_LEFT, MOVE_FORWARD]
    assert macro_actions(math.radians(-90), 2) == [TURN_RIGHT] * 6 + [MOVE_FORWARD] * 2
    assert macro_actions(math.radians(330), 1) == [TURN_RIGHT, TURN_RIGHT, MOVE_FORWARD]


def test_expert_follows_path_and_stops():
    ex = WaypointExpert([(0, 0, 0), (2, 0, 0), (2, 2, 0)])
    h = pano_headings(12)
    choice, steps = ex.decide((0, 0, 0, 0.0), h, 8)
    assert choice == 0 and steps == 8  # 2 m straight ahead
    choice, steps = ex.decide((2, 0, 0, 0.0), h, 8)
    assert abs(h[choice] - math.pi / 2) < 1e-6 and steps == 8  # next node to the left
    choice, steps = ex.decide((2, 0, 0, math.pi / 2), h, 8)
    assert choice == 0
    assert ex.decide((2, 1.8, 0, math.pi / 2), h, 8) == (12, 0)  # at the goal: STOP


def test_small_policy_views_and_actions(tmp_path):
    torch.manual_seed(0)
    cfg = SmallConfig(views=12, res=24)
    pol = SmallPolicy(SmallNet(cfg), vocab=Vocabulary(WORDS))
    rng = np.random.default_rng(0)
    with pytest.raises(PolicyError, match="reset"):
        pol.act(_obs(12, rng))
    pol.reset("go left then stop")
    assert pol.views == 12
    with pytest.raises(PolicyError, match="12 view"):
        pol.act(_obs(1, rng))
    a = pol.act(_obs(12, rng))
    assert a in (STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT)
    if a != STOP:
        heading, steps = pol.last_choice
        expect = macro_actions(heading, steps)
        got = [a]
        while pol.views == 1:
            got.append(pol.act(_obs(1, rng)))
        assert got == expect and pol.views == 12
    with pytest.raises(PolicyError):
        pol.reset("")


def _synthetic(n_eps, cfg, rng):
    """Episodes where the right view is the one with the largest mean depth, and STOP comes when all are near."""
    data = []
    for _ in range(n_eps):
        t = int(rng.integers(2, 5))
        views = rng.integers(0, 60, (t, cfg.views, 4, cfg.res, cfg.res), dtype=np.uint8)
        choices = rng.integers(0, cfg.views, t)
        choices[-1] = cfg.views
        for k in range(t - 1):
            views[k, choices[k], 0] = 250
        data.append(
            EpisodeSample(
                tokens=np.array([2, 3, 5] + [0] * 197, dtype=np.int64),
                views=views,
                prevs=np.zeros((t, 6), np.float32),
                choices=choices.astype(np.int64),
                steps=np.where(choices == cfg.views, 0, 4).astype(np.int64),
            )
        )
    return data


def test_training_learns_synthetic_rule():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    cfg = SmallConfig(views=6, res=16)
    model = SmallNet(cfg)
    data = _synthetic(48, cfg, rng)
    headings = torch.as_tensor(pano_headings(cfg.views))
    with torch.no_grad():
        before, _ = batch_loss(model, data, headings)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    train_epochs(model, data, 12, opt, 8, rng, deadline=float("inf"), log=lambda m: None)
    with torch.no_grad():
        after, st = batch_loss(model, data, headings)
    assert float(after) < 0.5 * float(before)
    assert st["acc"] > 0.8


def test_small_checkpoint_round_trip_and_size(tmp_path, monkeypatch):
    cfg = SmallConfig()
    model = SmallNet(cfg)
    path = save_checkpoint(tmp_path / "m.pt", model, "small", cfg.to_dict(), {"note": "test"})
    assert path.stat().st_size < 20e6
    pol = build_policy(path, vocab_path=_vocab_file(tmp_path))
    assert isinstance(pol, SmallPolicy) and pol.views == cfg.views and pol.name == "m"
    for k, v in model.state_dict().items():
        assert torch.equal(pol.model.state_dict()[k], v)
    # load_policy finds a file name in models/
    monkeypatch.setenv("HAVLN_SHARE", str(tmp_path))
    (tmp_path / "models").mkdir()
    path.rename(tmp_path / "models" / "m.pt")
    assert isinstance(load_policy("m", vocab_path=_vocab_file(tmp_path)), SmallPolicy)
    with pytest.raises(PolicyError, match=r"not found \(available in .*m\.pt"):
        load_policy("other")
    with pytest.raises(PolicyError, match="not a checkpoint"):
        load_policy("forward")
    # a checkpoint whose config does not match its weights is refused in one line
    bad = SmallConfig(view_dim=32)
    torch.save(
        {"format": "havln_robot.policy/1", "kind": "small", "config": bad.to_dict(), "state_dict": model.state_dict()}, tmp_path / "bad.pt"
    )
    with pytest.raises(PolicyError, match="does not match") as ei:
        build_policy(tmp_path / "bad.pt", vocab_path=_vocab_file(tmp_path))
    assert "\n" not in str(ei.value)
    torch.save({"format": "havln_robot.policy/1", "kind": "small", "config": {"bogus": 1}, "state_dict": {}}, tmp_path / "cfg.pt")
    with pytest.raises(PolicyError, match="config has unknown field .bogus."):
        build_policy(tmp_path / "cfg.pt", vocab_path=_vocab_file(tmp_path))


def test_camera_mask_is_the_footprint_of_the_padded_robot_view():
    """A model trained with the D435i mask sees exactly what preprocessing makes of the robot's camera."""
    import math

    from havln_robot.perception.preprocess import to_model_depth, to_model_rgb
    from havln_robot.policy.small import apply_camera_mask, camera_mask

    hfov = 69.4
    for w, h in ((848, 480), (640, 480)):
        vfov = math.degrees(2 * math.atan(math.tan(math.radians(hfov / 2)) * h / w))
        rgb = to_model_rgb(np.full((h, w, 3), 200, np.uint8), hfov)
        depth = to_model_depth(np.full((h, w), 3000, np.uint16), hfov)
        seen_rgb, seen_depth = rgb[..., 0] > 0, depth[..., 0] > 0
        m_rgb, m_depth = camera_mask(224, hfov, vfov), camera_mask(256, hfov, vfov)
        for seen, m in ((seen_rgb, m_rgb), (seen_depth, m_depth)):
            iou = (seen & m).sum() / (seen | m).sum()
            assert iou > 0.97, (w, h, iou)
        # the mask leaves the padded robot view unchanged and blanks a full 90 deg render outside it
        r2, d2 = apply_camera_mask(rgb[None], depth[None], hfov, vfov)
        assert (r2[0][m_rgb] == rgb[m_rgb]).all() and (r2[0][~m_rgb] == 0).all() and (d2[0][~m_depth] == 0).all()
    assert camera_mask(64, 0.0, 0.0) is None


def test_small_policy_drops_its_macro_when_an_action_is_blocked():
    """A macro is replayed only while its actions complete; a blocked one forces a new decision."""
    torch.manual_seed(0)
    pol = SmallPolicy(SmallNet(SmallConfig(views=12, res=24)), vocab=Vocabulary(WORDS))
    pol.reset("walk down the hall")
    pol._queue.extend([MOVE_FORWARD] * 3)  # the rest of a decision's macro
    pol.on_action_result(MOVE_FORWARD, "ok")
    assert pol.views == 1 and len(pol._queue) == 3
    pol.on_action_result(MOVE_FORWARD, "collision")
    assert pol.views == 12 and not pol._queue
