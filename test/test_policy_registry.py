"""One policy registry: ``forward`` and ``random`` mean the same policy in eval, agent_node and demo."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from havln_robot import eval as evaluate
from havln_robot.actions import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from havln_robot.nodes import agent_node
from havln_robot.policy import baselines, registry
from havln_robot.policy.api import PolicyError


def _run(policy, n: int) -> list[str]:
    policy.reset("go to the kitchen")
    return [policy.act(None) for _ in range(n)]


def test_eval_and_agent_node_share_the_registry():
    # agent_node and the evaluator build policies through the one registry, not copies of it
    assert agent_node.make_policy is registry.make_policy
    assert evaluate.make_policy is registry.make_policy
    assert set(registry.BUILTINS) == {"forward", "random"}


def test_random_is_vlnce_and_identical_for_a_seed():
    # the evaluator builds 'random' with the per-episode seed; agent_node with 'random:seed=S'
    eval_pol = registry.make_policy("random", seed=7)
    node_pol = registry.make_policy("random:seed=7")
    assert _run(eval_pol, 400) == _run(node_pol, 400)
    # VLN-CE action distribution p = (0.02, 0.68, 0.15, 0.15) over STOP/FORWARD/LEFT/RIGHT
    counts = Counter(_run(registry.make_policy("random:seed=1"), 20_000))
    freq = np.array([counts[a] for a in (STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT)]) / 20_000
    assert np.allclose(freq, baselines.RANDOM_PROBS, atol=0.015)
    assert baselines.RANDOM_PROBS == (0.02, 0.68, 0.15, 0.15)


def test_forward_is_vlnce_37_steps_everywhere():
    seq = _run(registry.make_policy("forward"), 40)
    assert seq[:37] == [MOVE_FORWARD] * 37 and seq[37] == STOP
    # the no-data policy of launch, demo and agent_node is the same class with options
    pol = registry.make_policy(registry.NO_DATA_POLICY)
    assert isinstance(pol, baselines.ForwardPolicy) and pol.views == 12 and pol.steps == 8


def test_options_checked():
    with pytest.raises(PolicyError, match="unknown option"):
        registry.make_policy("random:stop_prob=0.1")
    with pytest.raises(PolicyError, match="out of range"):
        registry.make_policy("forward:steps=-1")
    with pytest.raises(PolicyError, match="not a checkpoint"):
        registry.load_policy("forward")


def test_no_second_list_of_builtin_names():
    """Who needs to know 'is this a builtin?' asks the registry (is_builtin), never its own tuple."""
    import re
    from pathlib import Path

    pkg = Path(registry.__file__).resolve().parent.parent
    pattern = re.compile(r"""\(\s*["']forward["']\s*,\s*["']random["']\s*\)""")
    hits = [str(p.relative_to(pkg)) for p in pkg.rglob("*.py") if pattern.search(p.read_text(encoding="utf-8"))]
    assert hits == [], hits


def test_option_of_the_wrong_type_says_what_to_give():
    with pytest.raises(PolicyError, match=r"seed must be a whole number, got 'x'"):
        registry.make_policy("random:seed=x")


@pytest.mark.parametrize("device", ["bogus", "cuda:99", "", "tpu"])
def test_a_device_this_machine_lacks_is_one_line_naming_the_device(device):
    """Before: torch's own text ('Torch not compiled with CUDA enabled', a list of 20 device types),
    naming neither the --device flag / device parameter nor the fix."""
    import torch

    if device == "cuda:99" and torch.cuda.device_count() > 99:
        pytest.skip("a machine with 100 GPUs")
    with pytest.raises(PolicyError) as info:
        registry.make_policy("small_panoramic", device=device)
    msg = str(info.value)
    assert msg.startswith(f"device {device!r}:") and "\n" not in msg and ("cpu" in msg or "numbered from 0" in msg), msg


def test_cuda_without_cuda_says_use_cpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(PolicyError, match=r"device 'cuda': .*use device cpu"):
        registry.make_policy("small_panoramic", device="cuda")
