"""The CMA policy has the VLN-CE / HA-VLN-CMA checkpoint layout and loads such checkpoints strictly."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from released_cma import released_key_shapes, write_released_checkpoint

from havln_robot.actions import CMA_ACTIONS
from havln_robot.policy.api import Observation, PolicyError
from havln_robot.policy.checkpoint import (
    build_policy,
    cma_config_from_state,
    detect_kind,
    load_state_strict,
    map_legacy_keys,
    read_checkpoint,
)
from havln_robot.policy.cma import CMAModel, CMAPolicy
from havln_robot.policy.tokenizer import Vocabulary, fingerprint

# Non-backbone parameters of VLN-CE's CMAPolicy with the HA-VLN cma_pm_da_aug_tune config, derived from
# vlnce_baselines/models/cma_policy.py (CMANet), encoders/{instruction_encoder,resnet_encoders}.py,
# habitat-baselines RNNStateEncoder ("rnn") and CategoricalNet ("linear"):
#   instruction: Embedding(5401, 50), LSTM(50, 128, bidirectional) -> 256 per token
#   RGB: ResNet-50 layer4 2048 + 64 spatial = 2112 channels over 4x4; depth: 128 + 64 = 192 over 4x4
#   GRU input 256 + 128 + 32 = 416; second_state_compress input 512 + 256 + 128 + 256 + 32 = 1184
EXPECTED = {
    "net._scale": (),
    "net.instruction_encoder.encoder_rnn.weight_ih_l0": (512, 50),
    "net.instruction_encoder.encoder_rnn.weight_hh_l0": (512, 128),
    "net.instruction_encoder.encoder_rnn.bias_ih_l0": (512,),
    "net.instruction_encoder.encoder_rnn.bias_hh_l0": (512,),
    "net.instruction_encoder.encoder_rnn.weight_ih_l0_reverse": (512, 50),
    "net.instruction_encoder.encoder_rnn.weight_hh_l0_reverse": (512, 128),
    "net.instruction_encoder.encoder_rnn.bias_ih_l0_reverse": (512,),
    "net.instruction_encoder.encoder_rnn.bias_hh_l0_reverse": (512,),
    "net.instruction_encoder.embedding_layer.weight": (5401, 50),
    "net.depth_encoder.visual_encoder.backbone.conv1.0.weight": (32, 1, 7, 7),
    "net.depth_encoder.visual_encoder.backbone.conv1.1.weight": (32,),
    "net.depth_encoder.visual_encoder.backbone.conv1.1.bias": (32,),
    "net.depth_encoder.visual_encoder.backbone.layer1.0.convs.0.weight": (32, 32, 1, 1),
    "net.depth_encoder.visual_encoder.backbone.layer1.0.convs.3.weight": (32, 32, 3, 3),
    "net.depth_encoder.visual_encoder.backbone.layer1.0.convs.6.weight": (128, 32, 1, 1),
    "net.depth_encoder.visual_encoder.backbone.layer1.0.downsample.0.weight": (128, 32, 1, 1),
    "net.depth_encoder.visual_encoder.backbone.layer4.0.downsample.0.weight": (1024, 512, 1, 1),
    "net.depth_encoder.visual_encoder.backbone.layer4.2.convs.7.weight": (1024,),
    "net.depth_encoder.visual_encoder.compression.0.weight": (128, 1024, 3, 3),
    "net.depth_encoder.visual_encoder.compression.1.weight": (128,),
    "net.depth_encoder.visual_encoder.compression.1.bias": (128,),
    "net.depth_encoder.spatial_embeddings.weight": (16, 64),
    "net.rgb_encoder.cnn.0.weight": (64, 3, 7, 7),
    "net.rgb_encoder.cnn.1.running_var": (64,),
    "net.rgb_encoder.cnn.1.num_batches_tracked": (),
    "net.rgb_encoder.cnn.4.0.downsample.0.weight": (256, 64, 1, 1),
    "net.rgb_encoder.cnn.5.0.conv2.weight": (128, 128, 3, 3),
    "net.rgb_encoder.cnn.6.5.bn3.weight": (1024,),
    "net.rgb_encoder.cnn.7.2.conv3.weight": (2048, 512, 1, 1),
    "net.rgb_encoder.spatial_embeddings.weight": (16, 64),
    "net.prev_action_embedding.weight": (5, 32),
    "net.rgb_linear.2.weight": (256, 2112),
    "net.rgb_linear.2.bias": (256,),
    "net.depth_linear.1.weight": (128, 3072),
    "net.depth_linear.1.bias": (128,),
    "net.state_encoder.rnn.weight_ih_l0": (1536, 416),
    "net.state_encoder.rnn.weight_hh_l0": (1536, 512),
    "net.state_encoder.rnn.bias_ih_l0": (1536,),
    "net.state_encoder.rnn.bias_hh_l0": (1536,),
    "net.rgb_kv.weight": (512, 2112, 1),
    "net.rgb_kv.bias": (512,),
    "net.depth_kv.weight": (384, 192, 1),
    "net.depth_kv.bias": (384,),
    "net.state_q.weight": (256, 512),
    "net.state_q.bias": (256,),
    "net.text_k.weight": (256, 256, 1),
    "net.text_k.bias": (256,),
    "net.text_q.weight": (256, 256),
    "net.text_q.bias": (256,),
    "net.second_state_compress.0.weight": (512, 1184),
    "net.second_state_compress.0.bias": (512,),
    "net.second_state_encoder.rnn.weight_ih_l0": (1536, 512),
    "net.second_state_encoder.rnn.weight_hh_l0": (1536, 512),
    "net.second_state_encoder.rnn.bias_ih_l0": (1536,),
    "net.second_state_encoder.rnn.bias_hh_l0": (1536,),
    "net.progress_monitor.weight": (1, 512),
    "net.progress_monitor.bias": (1,),
    "action_distribution.linear.weight": (4, 512),
    "action_distribution.linear.bias": (4,),
}


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return CMAModel().eval()


def _tiny_vocab():
    return Vocabulary(["<pad>", "<unk>", "walk", "forward", "turn", "left", "stop", "."])


def test_state_dict_layout_matches_vlnce(model):
    sd = model.state_dict()
    for k, shape in EXPECTED.items():
        assert k in sd, k
        assert tuple(sd[k].shape) == shape, (k, tuple(sd[k].shape), shape)
    rgb = [k for k in sd if k.startswith("net.rgb_encoder.cnn.")]
    depth = [k for k in sd if k.startswith("net.depth_encoder.visual_encoder.backbone.")]
    # torchvision resnet50 has 320 state entries, 318 without the fc removed by VLN-CE (spatial output);
    # DD-PPO resnet50: stem 3 + 16 bottlenecks x 9 + 4 downsamples x 3 = 159.
    assert len(rgb) == 318
    assert len(depth) == 159
    others = set(sd) - set(rgb) - set(depth) - set(EXPECTED)
    assert others == set(), sorted(others)[:5]
    assert not any(k.startswith("net.rgb_encoder.cnn.fc") or k.startswith("net.rgb_encoder.cnn.8") for k in sd)


def test_model_layout_equals_the_released_key_list(model):
    """Every key and shape of the model equals the list derived from the public trainer code
    (test/released_cma.py), not from this project's modules."""
    want = released_key_shapes()
    got = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert sorted(set(got) - set(want)) == [] and sorted(set(want) - set(got)) == []
    assert {k: got[k] for k in want} == dict(want)
    assert len([k for k in want if k.startswith("net.rgb_encoder.cnn.")]) == 318


def test_official_layout_checkpoint_round_trip_strict(model, tmp_path):
    import json

    from havln_robot.policy.tokenizer import fingerprint

    path = tmp_path / "CMA_PM_DA_Aug.pth"
    torch.save({"state_dict": model.state_dict(), "epoch": 3}, path)
    words = _tiny_vocab().words
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps({"word_list": words, "sha256": fingerprint(words)}))
    pol = build_policy(path, vocab_path=vocab)
    assert isinstance(pol, CMAPolicy) and pol.views == 1 and pol.name == "CMA_PM_DA_Aug"
    for k, v in model.state_dict().items():
        assert torch.equal(pol.model.state_dict()[k], v), k
    # the bare state_dict loads with strict=True into a fresh instance of the inferred layout
    sd = torch.load(path, weights_only=True)["state_dict"]
    res = CMAModel(cma_config_from_state(sd)).load_state_dict(sd, strict=True)
    assert not res.missing_keys and not res.unexpected_keys
    assert detect_kind({"state_dict": sd}) == "cma"


def test_released_checkpoint_loads_strictly_with_its_config_and_vocab(released_cma):
    """The released layout (indexed RGB Sequential, pickled habitat Config, instruction_vocab, 5401x50
    table with a 5,079-word vocabulary) loads with strict=True through the safe loader alone."""
    assert "habitat" not in sys.modules  # the trainer's package is not importable here
    doc = read_checkpoint(released_cma.path)
    cfg = doc["config"]
    assert cfg["MODEL"]["INSTRUCTION_ENCODER"]["bidirectional"] is True  # read as plain data
    assert type(cfg).__module__ == "collections" and doc["instruction_vocab"]["word_list"] == released_cma.words
    assert len(released_cma.words) == 5079 and doc["state_dict"]["net.instruction_encoder.embedding_layer.weight"].shape == (5401, 50)
    assert "net.rgb_encoder.cnn.0.weight" in doc["state_dict"] and "net.rgb_encoder.cnn.7.2.bn3.running_var" in doc["state_dict"]
    sd = doc["state_dict"]
    res = CMAModel(cma_config_from_state(sd)).load_state_dict(sd, strict=True)
    assert not res.missing_keys and not res.unexpected_keys
    pol = build_policy(released_cma.path, vocab_path=released_cma.vocab_path)
    assert isinstance(pol, CMAPolicy) and pol.name == "CMA_PM_DA_Aug"
    for k, v in sd.items():
        assert torch.equal(pol.model.state_dict()[k], v), k
    pol.reset("walk forward and stop .")
    rng = np.random.default_rng(0)
    obs = Observation(
        rng.integers(0, 255, (1, 224, 224, 3), dtype=np.uint8), rng.random((1, 256, 256, 1), dtype=np.float32), np.zeros(1, np.float32)
    )
    assert pol.act(obs) == "STOP"  # the fixture's head always says STOP
    assert torch.isfinite(pol._h).all()


def test_released_checkpoint_with_another_vocabulary_is_refused(released_cma, tmp_path):
    words = ["<pad>", "<unk>", "walk", "stop"]
    vocab = tmp_path / "vocab.json"
    import json

    vocab.write_text(json.dumps({"word_list": words, "sha256": fingerprint(words)}))
    with pytest.raises(PolicyError, match="another instruction vocabulary") as ei:
        build_policy(released_cma.path, vocab_path=vocab)
    assert "\n" not in str(ei.value)


def test_checkpoints_written_before_the_released_layout_still_load(model, tmp_path):
    """A havln_robot checkpoint with torchvision names (conv1, bn1, layer1..4) loads through the key map."""
    import json

    legacy_names = {"0": "conv1", "1": "bn1", "4": "layer1", "5": "layer2", "6": "layer3", "7": "layer4"}
    legacy = {}
    for k, v in model.state_dict().items():
        if k.startswith("net.rgb_encoder.cnn."):
            head, _, rest = k[len("net.rgb_encoder.cnn.") :].partition(".")
            k = f"net.rgb_encoder.cnn.{legacy_names[head]}.{rest}"
        legacy[k] = v
    assert "net.rgb_encoder.cnn.layer4.2.conv3.weight" in legacy and "net.rgb_encoder.cnn.0.weight" not in legacy
    path = tmp_path / "old_cma.pt"
    torch.save({"format": "havln_robot.policy/1", "kind": "cma", "config": model.cfg.to_dict(), "state_dict": legacy, "meta": {}}, path)
    words = _tiny_vocab().words
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps({"word_list": words, "sha256": fingerprint(words)}))
    pol = build_policy(path, vocab_path=vocab)
    for k, v in model.state_dict().items():
        assert torch.equal(pol.model.state_dict()[k], v), k
    mapped, n = map_legacy_keys(legacy)
    assert n == 318 and set(mapped) == set(model.state_dict())


def test_released_layout_mismatch_names_the_keys(tmp_path):
    from released_cma import random_state

    state = random_state()
    del state["net.rgb_encoder.cnn.7.2.conv3.weight"]
    state["net.rgb_encoder.cnn.8.weight"] = torch.zeros(1)
    path = tmp_path / "bad.pth"
    write_released_checkpoint(path, _tiny_vocab().words, state=state)
    with pytest.raises(PolicyError) as ei:
        build_model_from(path)
    msg = str(ei.value)
    assert "\n" not in msg and "net.rgb_encoder.cnn.7.2.conv3.weight" in msg and "net.rgb_encoder.cnn.8.weight" in msg


def build_model_from(path):
    from havln_robot.policy.checkpoint import build_model

    return build_model(read_checkpoint(path), str(path))


def test_mismatched_checkpoints_raise_one_line(model, tmp_path):
    sd = dict(model.state_dict())
    del sd["net.progress_monitor.bias"]
    sd["net.extra.weight"] = torch.zeros(1)
    with pytest.raises(PolicyError) as ei:
        load_state_strict(CMAModel(), sd, "x.pth")
    msg = str(ei.value)
    assert "\n" not in msg and "net.progress_monitor.bias" in msg and "net.extra.weight" in msg
    sd = dict(model.state_dict())
    sd["action_distribution.linear.weight"] = torch.zeros(6, 512)
    with pytest.raises(PolicyError, match="shape"):
        load_state_strict(CMAModel(), sd, "x.pth")
    bad = tmp_path / "corrupt.pth"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(PolicyError, match="corrupt"):
        build_policy(bad)
    with pytest.raises(PolicyError, match="not found"):
        build_policy(tmp_path / "missing.pth")


def test_cma_policy_acts_on_front_view(model):
    pol = CMAPolicy(model, vocab=_tiny_vocab())
    assert pol.views == 1
    with pytest.raises(PolicyError, match="reset"):
        pol.act(Observation(np.zeros((1, 224, 224, 3), np.uint8), np.zeros((1, 256, 256, 1), np.float32), np.zeros(1, np.float32)))
    pol.reset("Walk forward, turn left and stop.")
    rng = np.random.default_rng(0)
    obs = Observation(
        rng.integers(0, 255, (1, 224, 224, 3), dtype=np.uint8), rng.random((1, 256, 256, 1), dtype=np.float32), np.zeros(1, np.float32)
    )
    a1 = pol.act(obs)
    a2 = pol.act(Observation(obs.rgb, obs.depth, obs.headings, 1))
    assert a1 in CMA_ACTIONS and a2 in CMA_ACTIONS
    assert -1.0 <= pol.last_progress <= 1.0
    # the recurrent state advanced: same observation, different hidden state
    h_after_two = pol._h.clone()
    pol.reset("Walk forward, turn left and stop.")
    pol.act(obs)
    assert not torch.equal(pol._h, h_after_two)
    with pytest.raises(PolicyError, match="depth"):
        pol.act(Observation(obs.rgb, obs.depth[:, :128], obs.headings))


def test_cma_matches_batched_forward(model):
    """The per-step policy path equals a direct batched forward of the network (no hidden re-ordering bugs)."""
    torch.manual_seed(1)
    tokens = torch.tensor([[2, 3, 4, 5, 6, 7, 0, 0]])
    rgb = torch.randint(0, 255, (1, 224, 224, 3), dtype=torch.uint8)
    depth = torch.rand(1, 256, 256, 1)
    h = torch.zeros(1, 2, 512)
    with torch.inference_mode():
        logits1, h1 = model(tokens, rgb, depth, h, torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1))
        pol = CMAPolicy(model, vocab=_tiny_vocab())
        pol.reset("walk forward turn left stop .")
        act = pol.act(Observation(rgb.numpy(), depth.numpy(), np.zeros(1, np.float32)))
    assert act == CMA_ACTIONS[int(logits1.argmax())]
    assert torch.allclose(pol._h, h1, atol=1e-5)


def test_embeddings_load_into_cma(havln_data):
    from havln_robot.policy.cma import init_embeddings

    m = CMAModel()
    assert init_embeddings(m)
    w = m.net.instruction_encoder.embedding_layer.weight
    assert torch.all(w[0] == 0) and w.abs().sum() > 0
    assert not w.requires_grad


def _cli(*args, timeout=300):
    import os
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", *args], capture_output=True, text=True, timeout=timeout, env=dict(os.environ)
    )


@pytest.mark.slow
def test_released_checkpoint_runs_through_eval_and_bench(released_cma, havln_data, tmp_path):
    """``havln-robot eval --policy FILE`` and ``bench policy --model FILE`` run the released layout (one episode,
    the fixture's head says STOP at once; latency with the checkpoint's own weights)."""
    import json

    out = _cli("eval", "--policy", str(released_cma.path), "--limit", "1", "--out", str(tmp_path / "ev"), "-q")
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert summary["n"] == 1
    assert (
        json.loads((tmp_path / "ev" / "actions.json").read_text()) and "STOP" in out.stdout + (tmp_path / "ev" / "actions.json").read_text()
    )
    out = _cli("bench", "policy", "--model", str(released_cma.path), "--skip-eval", "--steps", "1")
    assert out.returncode == 0, out.stderr
    assert "37.00 M params" in out.stdout
    out = _cli("bench", "policy", "--model", str(released_cma.path), "--skip-latency", "--limit", "1")
    assert out.returncode == 0, out.stderr
    assert f"{released_cma.path.name}" in out.stdout
