"""``bench policy --device cuda``: CPU against CUDA decision latency and action agreement where CUDA
exists; elsewhere one line refusing, as check_device words it."""

from __future__ import annotations

from pathlib import Path

import pytest

from havln_robot.bench import policy as bench

MODEL = Path(__file__).resolve().parents[1] / "models" / "small_panoramic.pt"
torch = pytest.importorskip("torch")
HAS_CUDA = torch.cuda.is_available()


@pytest.mark.skipif(HAS_CUDA, reason="this machine has CUDA: the comparison runs instead (test below)")
def test_refuses_in_one_line_without_cuda(capsys):
    assert bench.main(["--device", "cuda", "--skip-eval", "--model", str(MODEL)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1
    assert out.err.startswith("havln-robot bench policy: device 'cuda': ") and "use device cpu" in out.err


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU here (the refusal is tested instead)")
def test_cpu_against_cuda_prints_latency_and_agreement(capsys):
    assert bench.main(["--device", "cuda", "--skip-eval", "--steps", "4", "--model", str(MODEL)]) == 0
    out = capsys.readouterr().out
    assert "cuda" in out and "ms median" in out and "actions agree on" in out


def test_comparison_on_real_views_agrees_with_itself():
    """The comparison's own path, CPU against CPU: same model, same views -> every action agrees."""
    c = bench.compare_devices(str(MODEL), "cpu", steps=3)
    assert c["decisions"] == 3 and c["agree"] == 3 and c["disagreements"] == []
    assert c["cpu_ms"]["median"] > 0 and c["device_ms"]["median"] > 0
