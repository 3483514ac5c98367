"""A checkpoint's config and state_dict are checked field by field before any model is built or any
episode runs: one line naming the file, the field and the allowed range (not a torch error, an
allocation of terabytes, or a failure after an episode)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from havln_robot.policy.api import PolicyError
from havln_robot.policy.checkpoint import CONFIG_LIMITS, build_model, check_config, read_checkpoint

SMALL = Path(__file__).resolve().parents[1] / "models" / "small_panoramic.pt"


@pytest.fixture(scope="module")
def small_doc():
    return read_checkpoint(SMALL)


CASES = {
    "hidden str": ({"hidden": "abc"}, "config.hidden is 'abc'; expected a whole number in [1, 8192]"),
    "hidden negative": ({"hidden": -5}, "config.hidden is -5; allowed range [1, 8192]"),
    "views 0": ({"views": 0}, "config.views is 0; allowed range [1, 72]"),
    "vocab_rows 1e9": ({"vocab_rows": 10**9, "embedding_size": 1000}, "config.vocab_rows is 1000000000; allowed range"),
    "embedding product": ({"vocab_rows": 100_000, "embedding_size": 1000}, "vocab_rows x config.embedding_size = 100000 x 1000"),
    "float views": ({"views": 12.5}, "config.views is 12.5; expected a whole number"),
    "bool hidden": ({"hidden": True}, "config.hidden is True; expected a whole number"),
    "nan fov": ({"camera_hfov_deg": float("nan")}, "config.camera_hfov_deg is nan; allowed range [0.0, 90.0]"),
    "use_rgb int": ({"use_rgb": 1}, "config.use_rgb is 1; expected true or false"),
    "unknown": ({"layers": 3}, "config has unknown field 'layers'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_small_config_fields_are_checked_on_load(small_doc, tmp_path, case, monkeypatch):
    change, words = CASES[case]
    doc = copy.deepcopy(small_doc)
    doc["config"].update(change)
    path = tmp_path / "bad.pt"
    torch.save(doc, path)
    from havln_robot.policy import small

    built = []
    monkeypatch.setattr(small.SmallNet, "__init__", lambda *a, **k: built.append(1) or (_ for _ in ()).throw(AssertionError("built")))
    with pytest.raises(PolicyError) as exc:
        build_model(read_checkpoint(path), str(path))
    msg = str(exc.value)
    assert str(path) in msg and words in msg and "\n" not in msg and len(msg) < 300, msg
    assert not built


def test_state_dict_values_must_be_tensors(small_doc, tmp_path):
    doc = copy.deepcopy(small_doc)
    key = next(iter(doc["state_dict"]))
    doc["state_dict"][key] = 3
    path = tmp_path / "int.pt"
    torch.save(doc, path)
    with pytest.raises(PolicyError, match=rf"checkpoint {path}: state_dict\['{key}'\] is int, not a tensor"):
        build_model(read_checkpoint(path), str(path))


def test_the_shipped_checkpoint_passes(small_doc):
    assert check_config("small", small_doc["config"], "x") == small_doc["config"]
    build_model(copy.deepcopy(small_doc), "x")


@pytest.mark.parametrize("kind", sorted(CONFIG_LIMITS))
def test_every_field_of_every_config_class_has_a_limit(kind):
    from dataclasses import fields

    from havln_robot.policy.cma import CMAConfig
    from havln_robot.policy.small import SmallConfig

    cls = {"small": SmallConfig, "cma": CMAConfig}[kind]
    assert {f.name for f in fields(cls)} == set(CONFIG_LIMITS[kind])
    defaults = cls().to_dict()
    assert check_config(kind, defaults, "x") == defaults  # the defaults are in range
    for name, (typ, lo, hi) in CONFIG_LIMITS[kind].items():
        if typ is bool:
            continue
        for bad in (typ(lo) - 1, typ(hi) + 1):
            with pytest.raises(PolicyError, match=rf"config\.{name} is .*allowed range"):
                check_config(kind, {name: bad}, "x")


@pytest.mark.parametrize(
    ("change", "words"),
    [({"hidden_size": 0}, "config.hidden_size is 0; allowed range"), ({"bidirectional": "yes"}, "config.bidirectional is 'yes'")],
)
def test_cma_config_is_checked_before_the_model_is_built(tmp_path, change, words):
    from havln_robot.policy.checkpoint import FORMAT

    path = tmp_path / "cma.pt"
    torch.save({"format": FORMAT, "kind": "cma", "config": change, "state_dict": {}, "meta": {}}, path)
    with pytest.raises(PolicyError, match=words):
        build_model(read_checkpoint(path), str(path))


def test_eval_refuses_before_any_episode(small_doc, tmp_path, havln_data):
    doc = copy.deepcopy(small_doc)
    doc["config"]["views"] = 0
    path = tmp_path / "views0.pt"
    torch.save(doc, path)
    r = subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "eval", "--policy", str(path), "--limit", "1", "--out", str(tmp_path / "o"), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "config.views is 0" in lines[0] and str(path) in lines[0], r.stderr[-2000:]
