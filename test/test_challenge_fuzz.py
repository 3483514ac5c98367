"""Fuzzing the validator: garbage in, a clean verdict out -- never an exception.

Hypothesis drives (1) arbitrary bytes as the archive, (2) arbitrary bytes and arbitrary JSON values
as a member, (3) byte-level mutations of a valid bundle, (4) random action sequences checked
against an independent statement of the sequence rules, (5) structural mutations of a valid
bundle, each of which must be rejected with the rule it breaks.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from havln_robot.actions import ACTIONS
from havln_robot.challenge.format import decode_json, parse_split_object
from havln_robot.challenge.manifest import load_manifest
from havln_robot.challenge.validate import validate_zip

IDS = ["1", "2", "3"]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    for split in ("val_seen", "val_unseen"):
        (d / f"{split}.ids.json").write_text(json.dumps(IDS))
    manifests = {s: load_manifest(d / f"{s}.ids.json", s) for s in ("val_seen", "val_unseen")}
    return d, manifests


def bundle(seen=None, unseen=None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for split, obj in (("val_seen", seen), ("val_unseen", unseen)):
            obj = (
                obj
                if obj is not None
                else {
                    "format_version": 1,
                    "split": split,
                    "episodes": [{"episode_id": i, "actions": ["MOVE_FORWARD", "STOP"]} for i in IDS],
                }
            )
            zf.writestr(f"{split}.json", json.dumps(obj) if not isinstance(obj, bytes) else obj)
    return buf.getvalue()


def verdict(env, data: bytes):
    d, manifests = env
    p = d / "case.zip"
    p.write_bytes(data)
    rep = validate_zip(p, manifests)
    text = rep.render()
    first = text.splitlines()[0]
    assert first.startswith("PASS:") or first.startswith("SUBMISSION REJECTED:")
    assert rep.ok == first.startswith("PASS:")
    return rep


def test_valid_bundle_passes(env):
    assert verdict(env, bundle()).ok


@SETTINGS
@given(st.binary(max_size=4096))
def test_arbitrary_bytes_as_archive(env, data):
    rep = verdict(env, data)
    assert not rep.ok


@SETTINGS
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_as_member(env, data):
    rep = verdict(env, bundle(seen=data))
    assert not rep.ok


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=30,
)


@SETTINGS
@given(json_values)
def test_arbitrary_json_as_member(env, value):
    rep = verdict(env, bundle(seen=json.dumps(value).encode()))
    assert not rep.ok


@SETTINGS
@given(st.dictionaries(st.sampled_from(["format_version", "split", "episodes", "x"]), json_values, max_size=4))
def test_arbitrary_root_objects(env, obj):
    sf, problems = parse_split_object(obj, "m.json")
    assert sf is not None or problems
    verdict(env, bundle(seen=json.dumps(obj).encode()))


@SETTINGS
@given(st.data())
def test_byte_mutations_of_valid_bundle(env, data):
    raw = bytearray(bundle())
    n = data.draw(st.integers(1, 8))
    for _ in range(n):
        op = data.draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        pos = data.draw(st.integers(0, max(0, len(raw) - 1)))
        if op == "flip" and raw:
            raw[pos] ^= data.draw(st.integers(1, 255))
        elif op == "truncate":
            del raw[pos:]
        elif op == "insert":
            raw[pos:pos] = data.draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del raw[pos : pos + data.draw(st.integers(1, 16))]
    verdict(env, bytes(raw))


def rules_oracle(actions: list) -> bool:
    """The organisers' sequence rules, stated independently of havln_robot.actions."""
    n = len(actions)
    if not 1 <= n <= 500 or any(a not in ACTIONS for a in actions):
        return False
    stops = [i for i, a in enumerate(actions) if a == "STOP"]
    return stops == [n - 1] or (n == 500 and stops in ([], [499]))


action_lists = st.one_of(
    st.lists(st.sampled_from([*ACTIONS, "STOP", "STOP", "stop", "JUMP", ""]), max_size=12),
    st.builds(
        lambda k, tail: ["TURN_LEFT"] * k + tail, st.integers(495, 502), st.lists(st.sampled_from(["STOP", "MOVE_FORWARD"]), max_size=3)
    ),
)


@SETTINGS
@given(action_lists)
def test_sequence_rules_match_oracle(env, actions):
    seen = {
        "format_version": 1,
        "split": "val_seen",
        "episodes": [{"episode_id": i, "actions": actions if i == "2" else ["STOP"]} for i in IDS],
    }
    rep = verdict(env, bundle(seen=seen))
    assert rep.ok == rules_oracle(actions), (actions, rep.render())
    for p in rep.problems:
        assert p.episode_id == "2" and p.rule in {"literal", "length", "stop-once", "stop-last"}


MUTATIONS = {
    "drop episode": ("episode-missing", lambda o: o["episodes"].pop(0)),
    "extra episode": ("episode-unknown", lambda o: o["episodes"].append({"episode_id": "999", "actions": ["STOP"]})),
    "repeat episode": ("episode-duplicate", lambda o: o["episodes"].append(dict(o["episodes"][1]))),
    "int id": ("episode-id", lambda o: o["episodes"][0].__setitem__("episode_id", 1)),
    "bad literal": ("literal", lambda o: o["episodes"][0]["actions"].insert(0, "FORWARD")),
    "empty actions": ("length", lambda o: o["episodes"][0].__setitem__("actions", [])),
    "no stop": ("stop-last", lambda o: o["episodes"][0]["actions"].pop()),
    "two stops": ("stop-once", lambda o: o["episodes"][0]["actions"].insert(0, "STOP")),
    "version 2": ("format-version", lambda o: o.__setitem__("format_version", 2)),
    "actions string": ("type", lambda o: o["episodes"][0].__setitem__("actions", "STOP")),
    "episodes dict": ("schema", lambda o: o.__setitem__("episodes", {})),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_structural_mutations_rejected_with_their_rule(env, name):
    rule, mutate = MUTATIONS[name]
    obj = {"format_version": 1, "split": "val_unseen", "episodes": [{"episode_id": i, "actions": ["TURN_RIGHT", "STOP"]} for i in IDS]}
    mutate(obj)
    rep = verdict(env, bundle(unseen=obj))
    assert not rep.ok and rule in {p.rule for p in rep.problems}, rep.render()


@SETTINGS
@given(st.binary(max_size=512))
def test_decode_json_never_raises(data):
    value, problems = decode_json(data)
    assert value is not None or problems


def test_a_json_null_file_is_named_by_every_reader(env, tmp_path, capsys):
    """A file holding only JSON ``null`` is valid JSON that decode_json used to return as
    ``(None, [])`` -- "unusable, no reason" -- so export crashed (IndexError), replay and pack printed
    an empty reason and validate skipped the member. Every reader now names it."""
    from havln_robot.cli import main

    value, problems = decode_json(b"null", "val_seen.json")
    assert value is None and [p.rule for p in problems] == ["schema"] and "JSON null" in problems[0].message
    rep = verdict(env, bundle(seen=b"null"))
    assert any(p.member == "val_seen.json" and p.rule == "schema" and "JSON null" in p.message for p in rep.problems)
    f = tmp_path / "null.json"
    f.write_text("null")
    jl = tmp_path / "runs.jsonl"
    jl.write_text('{"episode_id": "1", "actions": ["STOP"]}\nnull\n')
    pk = tmp_path / "pk"
    pk.mkdir()
    (pk / "val_seen.json").write_text("null")
    for argv in (
        ["export", "--runs", str(f), "--split", "val_seen", "--out-dir", str(tmp_path / "o")],
        ["export", "--runs", str(jl), "--split", "val_seen", "--out-dir", str(tmp_path / "o")],
        ["replay", "--quiet", str(f)],
        ["pack", str(pk), "-o", str(tmp_path / "p.zip")],
    ):
        assert main(argv) == 2, argv
        assert "JSON null" in capsys.readouterr().err, argv
