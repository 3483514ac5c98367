"""Each name has one meaning: these fail if a second copy of a definition comes back."""

from __future__ import annotations

import ast
from pathlib import Path

from havln_robot import actions, camera, episodes
from havln_robot.motion import executor, safety
from havln_robot.perception import preprocess
from havln_robot.sim import metrics, render

PKG = Path(__file__).resolve().parent.parent / "havln_robot"


def _defined(name: str) -> list[str]:
    """Modules of the package that define a class or assign a module-level constant ``name``."""
    out = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                out.append(str(path.relative_to(PKG)))
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                out.append(str(path.relative_to(PKG)))
    return out


def test_one_intrinsics_class():
    assert render.Intrinsics is preprocess.Intrinsics is safety.Intrinsics is camera.Intrinsics
    assert _defined("Intrinsics") == ["camera.py"]


def test_one_success_radius_and_rule():
    assert _defined("SUCCESS_RADIUS_M") == ["episodes.py"]
    assert episodes.SUCCESS_RADIUS_M == 3.0
    m = metrics.episode_metrics(ne=2.99, stopped=True, path_length=5.0, geodesic=5.0, collisions_human=0)
    assert m.success and episodes.is_success(True, 2.99) and not episodes.is_success(False, 0.0)
    assert not metrics.episode_metrics(ne=3.0, stopped=True, path_length=5.0, geodesic=5.0, collisions_human=0).success


def test_one_episode_result_and_one_outcomes():
    assert len(_defined("EpisodeResult")) == 1, _defined("EpisodeResult")
    # OUTCOMES means a motion action's outcome; trial verdicts are VERDICTS
    assert _defined("OUTCOMES") == ["motion/executor.py"]
    assert "ok" in executor.OUTCOMES and _defined("VERDICTS") == ["trials/model.py"]


def test_one_action_table():
    assert [r.literal for r in actions.ACTION_TABLE] == list(actions.ACTIONS)
    assert [r.index for r in actions.ACTION_TABLE] == list(range(len(actions.ACTIONS)))
    for name in ("FORWARD_STEP_M", "TURN_ANGLE_RAD", "TILT_ANGLE_RAD"):
        assert _defined(name) == ["actions.py"], name
