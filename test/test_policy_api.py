"""Policy contract: Observation validation, spec resolution and one-line load errors."""

from __future__ import annotations

import numpy as np
import pytest

from havln_robot.policy.api import Observation, PolicyError, check_action, check_instruction
from havln_robot.policy.registry import load_policy
from havln_robot.policy.registry import resolve_checkpoint as resolve_spec


def _obs(n=1, **kw):
    d = dict(
        rgb=np.zeros((n, 224, 224, 3), np.uint8),
        depth=np.zeros((n, 256, 256, 1), np.float32),
        headings=np.zeros(n, np.float32),
        step=0,
    )
    d.update(kw)
    return Observation(**d)


def test_observation_check_accepts_model_format():
    assert _obs(12).check(12).n_views == 12
    assert _obs(1).check().n_views == 1


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(rgb=np.zeros((1, 240, 320, 3), np.uint8)), "rgb must be an"),
        (dict(rgb=np.zeros((1, 224, 224, 3), np.float32)), "rgb must be uint8"),
        (dict(depth=np.zeros((1, 256, 256), np.float32)), "depth must be"),
        (dict(depth=np.zeros((1, 256, 256, 1), np.float64)), "float32"),
        (dict(depth=np.full((1, 256, 256, 1), 5.0, np.float32)), r"\[0, 1\]"),
        (dict(headings=np.zeros(2, np.float32)), "headings"),
        (dict(step=-1), "step"),
    ],
)
def test_observation_check_rejects_bad_fields(kw, match):
    with pytest.raises(PolicyError, match=match) as ei:
        _obs(1, **kw).check()
    assert "\n" not in str(ei.value)


def test_view_count_mismatch_names_fix():
    with pytest.raises(PolicyError, match="expects 12 view"):
        _obs(1).check(12)


def test_instruction_and_action_guards():
    assert check_instruction("go") == "go"
    for bad in ("", "   ", None, 3, "\u200b", "\u2060\u200b"):
        with pytest.raises(PolicyError):
            check_instruction(bad)
    assert check_action("STOP") == "STOP"
    with pytest.raises(PolicyError):
        check_action("JUMP")


def test_resolve_spec(tmp_path, monkeypatch):
    monkeypatch.setenv("HAVLN_SHARE", str(tmp_path))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "a.pt").write_bytes(b"x")
    assert resolve_spec("a") == tmp_path / "models" / "a.pt"
    assert resolve_spec("a.pt") == tmp_path / "models" / "a.pt"
    assert resolve_spec(str(tmp_path / "models" / "a.pt")) == tmp_path / "models" / "a.pt"
    with pytest.raises(PolicyError, match="a.pt"):
        resolve_spec("b")
    with pytest.raises(PolicyError, match="corrupt"):
        load_policy("a")
