"""Loading a checkpoint never runs code from it: only torch's safe loader, with exactly
the released trainer's config class allow-listed; a crafted file is refused with one line."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest
import torch

from havln_robot.policy.api import PolicyError
from havln_robot.policy.checkpoint import SAFE_GLOBALS, read_checkpoint


class _Payload:
    """Pickles as ``func(*args)``: what a crafted checkpoint would run on an unrestricted load."""

    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


def _variants(marker: str) -> dict:
    import posix

    return {
        "os.system": (os.system, (f"touch {marker}",)),
        "posix.system": (posix.system, (f"touch {marker}",)),
        "builtins.eval": (eval, (f"open({marker!r}, 'w').close()",)),
        "builtins.exec": (exec, (f"open({marker!r}, 'w').close()",)),
        "subprocess.Popen": (subprocess.Popen, (["touch", marker],)),
        "subprocess.check_call": (subprocess.check_call, (["touch", marker],)),
    }


@pytest.mark.parametrize(
    "name", ["os.system", "posix.system", "builtins.eval", "builtins.exec", "subprocess.Popen", "subprocess.check_call"]
)
@pytest.mark.parametrize("where", ["top", "in_state_dict", "in_config", "raw_pickle"])
def test_crafted_checkpoint_runs_nothing_and_fails_in_one_line(tmp_path, name, where):
    marker = tmp_path / "PWNED"
    func, args = _variants(str(marker))[name]
    evil = _Payload(func, args)
    path = tmp_path / "evil.pt"
    sd = {"action_distribution.linear.weight": torch.zeros(4, 512)}
    if where == "top":
        torch.save({"state_dict": sd, "x": evil}, path)
    elif where == "in_state_dict":
        torch.save({"state_dict": {**sd, "net.evil": evil}}, path)
    elif where == "in_config":
        torch.save({"state_dict": sd, "config": {"MODEL": {"policy_name": evil}}}, path)
    else:
        with path.open("wb") as fh:
            pickle.dump({"state_dict": {"w": [0.0, 1.0]}, "x": evil}, fh, protocol=2)  # no tensor: its GLOBAL would come first
    with pytest.raises(PolicyError) as ei:
        read_checkpoint(path)
    msg = str(ei.value)
    assert not marker.exists(), "the payload ran"
    assert "\n" not in msg and str(path) in msg
    assert "nothing in it was run" in msg
    assert any(part in msg for part in (name, name.replace("os.", "posix."), name.split(".")[-1])), msg


def test_only_the_trainer_config_class_is_allow_listed():
    assert [n for _, n in SAFE_GLOBALS] == ["habitat.config.default.Config"]
    # the allow-list is scoped to the load, never added globally
    assert not any(isinstance(g, tuple) and g[1] == "habitat.config.default.Config" for g in torch.serialization.get_safe_globals())


def _save_with_trainer_global(path, name: str, marker) -> None:
    """torch.save a checkpoint whose config is ``habitat.config.default.<name>("touch MARKER")`` (REDUCE)."""
    import types

    mods = ["habitat", "habitat.config", "habitat.config.default"]
    try:
        for m in mods:
            sys.modules[m] = types.ModuleType(m)

        def fn(*args):
            os.system(f"touch {marker}")

        fn.__module__, fn.__qualname__, fn.__name__ = "habitat.config.default", name, name
        setattr(sys.modules["habitat.config.default"], name, fn)
        torch.save({"state_dict": {}, "config": _Payload(fn, (f"touch {marker}",))}, path)
    finally:
        for m in mods:
            sys.modules.pop(m, None)


def test_a_lookalike_of_the_config_class_runs_nothing(tmp_path):
    """A payload named after the allow-listed class gets the inert stand-in (an empty dict); one under
    a neighbouring name is refused."""
    marker = tmp_path / "PWNED"
    p = tmp_path / "lookalike.pt"
    _save_with_trainer_global(p, "Config", marker)
    doc = read_checkpoint(p)
    assert dict(doc["config"]) == {} and not marker.exists()
    q = tmp_path / "neighbour.pt"
    _save_with_trainer_global(q, "run_it", marker)
    with pytest.raises(PolicyError, match=r"habitat\.config\.default\.run_it"):
        read_checkpoint(q)
    assert not marker.exists()


def test_eval_refuses_a_crafted_checkpoint_in_one_line(tmp_path, havln_data):
    marker = tmp_path / "PWNED"
    path = tmp_path / "evil.pt"
    torch.save({"state_dict": {}, "x": _Payload(os.system, (f"touch {marker}",))}, path)
    out = subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "eval", "--policy", str(path), "--limit", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert out.returncode != 0 and not marker.exists()
    lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "posix.system" in lines[0], out.stderr
