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
