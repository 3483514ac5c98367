"""Instructions as people type them: one normalisation before tokenising, and instructions the policy's
vocabulary does not cover refused with the unknown words named (real HA-R2R vocabulary where present)."""

from __future__ import annotations

import json

import pytest

from havln_robot.actions import MOVE_FORWARD, STOP
from havln_robot.agent.core import AgentConfig, EpisodeRunner
from havln_robot.agent.params import AGENT_PARAMS
from havln_robot.policy.tokenizer import UNK_INDEX, Vocabulary, check_instruction, tokenize
from havln_robot.text import normalize_instruction

GERMAN = "Gehen Sie geradeaus durch den Flur und biegen Sie links ab, dann halten Sie an der Tür"
CHINESE = "向前走 然后 左转 停下"


def test_normalize_folds_typographic_and_invisible_characters():
    assert normalize_instruction("you\u2019ll see \u201cthe sofa\u201d \u2014 stop") == 'you\'ll see "the sofa" - stop'
    assert normalize_instruction("wa\u200blk to the\u00ad door\ufeff") == "walk to the door"
    assert normalize_instruction("turn left\uff0c then stop\uff0e") == "turn left, then stop."
    assert normalize_instruction("  two\u3000spaces \n ") == "two spaces"
    # the tokenizer reads the normalised text: no token is a typographic or invisible character
    assert tokenize("you\u2019ll wa\u200blk\uff0c") == tokenize("you'll walk,") == ["you", "'", "ll", "walk", ","]


@pytest.fixture(scope="module")
def vocab(havln_data):
    return Vocabulary.load(havln_data / "challenge" / "ha_r2r_instruction_vocab.json")


def test_typed_instructions_encode_as_their_ascii_form(vocab):
    for typed, plain in (
        ("Walk past the sofa and you\u2019ll see the door.", "Walk past the sofa and you'll see the door."),
        ("Walk down the hall\u200bway to the left\uff0c then stop\uff0e", "Walk down the hallway to the left, then stop."),
        ("Turn around \u2013 walk to the kitchen", "Turn around - walk to the kitchen"),
    ):
        ids = vocab.encode(typed, pad=False)
        assert ids.tolist() == vocab.encode(plain, pad=False).tolist(), typed
        assert UNK_INDEX not in ids.tolist(), typed


def test_foreign_instructions_refused_naming_the_unknown_words(vocab, havln_data):
    rate = AGENT_PARAMS.defaults()["max_unknown_word_rate"]
    de = check_instruction(vocab, GERMAN, rate)
    assert de.refused and de.rate > 0.6 and "gehen" in de.unknown and "flur" in de.unknown
    assert "'gehen'" in de.message() and "max_unknown_word_rate" in de.message()
    zh = check_instruction(vocab, CHINESE, rate)
    assert zh.refused and zh.rate == 1.0 and zh.words == 4
    # every real HA-R2R val_seen instruction passes
    eps = json.loads((havln_data / "ha_r2r_de" / "HA_val_seen.json").read_text())
    texts = [t for e in eps for t in e["instructions"] if t.strip()]
    worst = max(check_instruction(vocab, t, rate).rate for t in texts)
    assert len(texts) > 1000 and worst <= rate


class _VocabPolicy:
    """A policy with the real vocabulary that walks one step and stops."""

    views = 1
    name = "vocab-scripted"

    def __init__(self, vocab):
        self.vocab = vocab
        self.resets = []
        self.i = 0

    def reset(self, instruction):
        self.resets.append(instruction)

    def act(self, obs):
        self.i += 1
        return MOVE_FORWARD if self.i == 1 else STOP


def test_agent_refuses_a_foreign_instruction_before_moving(vocab):
    from test_agent_core import FakeRobot

    robot = FakeRobot()
    pol = _VocabPolicy(vocab)
    runner = EpisodeRunner(pol, robot, AgentConfig(), cancelled=robot.cancel.is_set)
    try:
        res = runner.run(GERMAN)
        assert res.reason == "aborted" and res.error and robot.actions == [] and pol.resets == []
        assert "gehen" in res.detail and res.unknown_word_rate > 0.6
        body = json.loads(res.to_json())
        assert body["unknown_word_rate"] > 0.6 and "flur" in body["unknown_words"]
        ok = runner.run("Walk down the hallway and stop at the door.")
        assert ok.reason == "stop" and ok.unknown_word_rate == 0.0 and json.loads(ok.to_json())["unknown_word_rate"] == 0.0
        # the threshold is a parameter: 1.0 never refuses
        lax = EpisodeRunner(_VocabPolicy(vocab), FakeRobot(), AgentConfig(max_unknown_word_rate=1.0))
        assert lax.run(CHINESE).reason == "stop"
        lax.close()
    finally:
        runner.close()
