"""One rule for an empty instruction (text.is_blank) and terminal_safe's escaping of format characters."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from std_msgs.msg import String

from havln_robot import instruct
from havln_robot.nodes.agent_node import AgentNode
from havln_robot.text import is_blank, terminal_safe

INVISIBLE = ["", "   ", "\u200b", "\u2060\u200b", "\ufeff", "\u200d\u200c", "\u202e", "\x00\x1b", "\u3164", " \u2028 "]


@pytest.mark.parametrize("text", INVISIBLE)
def test_invisible_text_is_blank(text):
    assert is_blank(text)


@pytest.mark.parametrize("text", ["go", "walk to the sofa", "\u200bgo", "\u53bb\u53a8\u623f", "\u00e9"])
def test_visible_text_is_not_blank(text):
    assert not is_blank(text)


def test_terminal_safe_escapes_format_characters():
    shown = terminal_safe("6047\x1b[2J\u202e\u200b\u2066x\u2028\ufeff")
    assert shown == "6047\\x1b[2J\\u202e\\u200b\\u2066x\\u2028\\ufeff"
    assert terminal_safe("caf\u00e9 \u53a8\u623f") == "caf\u00e9 \u53a8\u623f"


class _Log:
    def __init__(self):
        self.lines = []

    def error(self, m):
        self.lines.append(m)

    warning = info = error


@pytest.mark.parametrize("text", ["\u200b", "\u2060\u200b"])
def test_agent_node_ignores_an_invisible_instruction(text):
    import queue

    log = _Log()
    fake = SimpleNamespace(
        params={"instruction_topic": "havln/instruction"},
        get_logger=lambda: log,
        _lock=threading.Lock(),
        _running=False,
        _instructions=queue.Queue(),
        _cancel=threading.Event(),
    )
    AgentNode._on_instruction(fake, String(data=text))
    assert fake._instructions.empty()
    assert any("empty instruction ignored" in m for m in log.lines)


@pytest.mark.parametrize("text", ["\u200b", "\u2060\u200b"])
def test_instruct_refuses_an_invisible_instruction(text, capsys):
    with pytest.raises(SystemExit) as e:
        instruct.main([text])
    assert e.value.code == 2
    assert "give the instruction text" in capsys.readouterr().err


def test_validate_escapes_ids_and_keys_from_the_submission(tmp_path):
    import json
    import zipfile

    from havln_robot.challenge.manifest import load_manifest
    from havln_robot.challenge.validate import validate_zip

    (tmp_path / "m.json").write_text(json.dumps(["1", "2"]))
    manifests = {"val_seen": load_manifest(tmp_path / "m.json", "val_seen")}
    evil = "1\x1b[2J\u202e"
    doc = {"format_version": 1, "split": "val_seen", "k\x1b[31m": 1, "episodes": [{"episode_id": evil, "actions": ["STOP"]}]}
    z = tmp_path / "sub.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("val_seen.json", json.dumps(doc))
    text = validate_zip(z, manifests).render(0)
    assert "\x1b" not in text and "\u202e" not in text, text
    assert "\\x1b[2J\\u202e" in text and "k\\x1b[31m" in text


def test_replay_table_escapes_episode_ids(capsys):
    from havln_robot.challenge.replay import ReplayedEpisode, print_results

    m = SimpleNamespace(ne=1.0, ne_euclid=1.0, steps=3, success=True, collisions_human=0, tcr=0, cr=0, sr=1, unreachable=False)
    r = ReplayedEpisode("6047\x1b[2J\u202e", m, 0, note="n\x1b[31m")
    agg = SimpleNamespace(n=1, sr=1.0, ne=1.0, tcr=0.0, cr=0.0, success_rate=1.0, spl=1.0, cr_denominator=0, score=1.0, ne_euclid=1.0)
    print_results([r], agg)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "6047\\x1b[2J\\u202e" in out
