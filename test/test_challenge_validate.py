"""havln-robot validate: one malformed bundle per organiser rule, each rejected with that rule.

Most tests use small custom manifests (ids "1".."5" / "1".."3") so they are fast; the official
manifests from ../shared are used where the real coverage matters (STOP-only bundle, CLI).
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import pytest

from havln_robot.challenge.cli import validate_main
from havln_robot.challenge.manifest import load_manifest
from havln_robot.challenge.validate import Limits, validate_zip

SEEN_IDS = [str(i) for i in range(1, 6)]
UNSEEN_IDS = [str(i) for i in range(1, 4)]
GOOD = ["MOVE_FORWARD", "TURN_LEFT", "MOVE_FORWARD", "STOP"]


def split_obj(split: str, ids: list[str], actions=None, **over) -> dict:
    obj = {"format_version": 1, "split": split, "episodes": [{"episode_id": i, "actions": list(actions or GOOD)} for i in ids]}
    obj.update(over)
    return obj


def dumps(obj) -> bytes:
    return json.dumps(obj).encode()


def make_zip(path: Path, members: list, **zkw) -> Path:
    """members: (name, bytes) or (ZipInfo, bytes)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, **zkw) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return path


@pytest.fixture
def manifests(tmp_path):
    (tmp_path / "m").mkdir()
    a = tmp_path / "m" / "seen.json"
    b = tmp_path / "m" / "unseen.json"
    a.write_text(json.dumps(dict.fromkeys(SEEN_IDS, 0)))
    b.write_text(json.dumps(UNSEEN_IDS))
    return {"val_seen": load_manifest(a, "val_seen"), "val_unseen": load_manifest(b, "val_unseen")}


def good_members(seen=None, unseen=None):
    return [
        ("val_seen.json", dumps(seen or split_obj("val_seen", SEEN_IDS))),
        ("val_unseen.json", dumps(unseen or split_obj("val_unseen", UNSEEN_IDS))),
    ]


def run(tmp_path, manifests, members, limits=None, **zkw):
    z = make_zip(tmp_path / "sub.zip", members, **zkw)
    return validate_zip(z, manifests, limits=limits)


def rules(rep) -> set[str]:
    return {p.rule for p in rep.problems}


def only_rule(rep, rule: str, also: set[str] = frozenset()) -> None:
    """Rejected, and ``rule`` is the only rule broken (besides ``also``, e.g. the split-missing that
    follows when the broken file was the only one for its split)."""
    text = rep.render(0)
    assert not rep.ok, text
    assert text.startswith("SUBMISSION REJECTED:"), text
    assert rule in rules(rep) and rules(rep) <= {rule, *also}, text


# --- passing bundles -------------------------------------------------------------------------------


def test_good_bundle_passes_with_renamed_files_and_extras(tmp_path, manifests):
    members = [
        ("my predictions A.json", dumps(split_obj("val_seen", SEEN_IDS, ["LOOK_UP", "LOOK_DOWN", "TURN_RIGHT", "STOP"]))),
        ("b.txt", dumps(split_obj("val_unseen", UNSEEN_IDS))),
        ("README.md", b"# notes\n"),
        ("meta.json", dumps({"agent": "x"})),
    ]
    rep = run(tmp_path, manifests, members)
    out = rep.render()
    assert rep.ok and out.startswith("PASS:"), out
    assert rep.files["val_seen"].member == "my predictions A.json"
    assert "README.md: not a JSON prediction file; ignored" in out and "meta.json" in out


def test_500_actions_without_stop_passes_and_501_fails(tmp_path, manifests):
    seen = split_obj("val_seen", SEEN_IDS)
    seen["episodes"][0]["actions"] = ["TURN_LEFT"] * 500
    seen["episodes"][1]["actions"] = ["TURN_LEFT"] * 499 + ["STOP"]
    assert run(tmp_path, manifests, good_members(seen=seen)).ok
    seen["episodes"][2]["actions"] = ["TURN_LEFT"] * 500 + ["STOP"]
    rep = run(tmp_path, manifests, good_members(seen=seen))
    only_rule(rep, "length")
    assert rep.problems[0].episode_id == "3" and rep.problems[0].index == 500


def test_stop_only_bundle_covering_official_manifests_passes(tmp_path, havln_data, capsys):
    from havln_robot.challenge.cli import export_main, pack_main

    assert export_main(["--stop-only", "--out-dir", str(tmp_path)]) == 0
    assert pack_main([str(tmp_path / "val_seen.json"), str(tmp_path / "val_unseen.json"), "-o", str(tmp_path / "s.zip")]) == 0
    capsys.readouterr()
    assert validate_main([str(tmp_path / "s.zip")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PASS:") and "val_seen: 778 episodes" in out and "val_unseen: 1839 episodes" in out
    with zipfile.ZipFile(tmp_path / "s.zip") as zf:
        assert sorted(zf.namelist()) == ["val_seen.json", "val_unseen.json"]
        seen = json.loads(zf.read("val_seen.json"))
    assert [e["episode_id"] for e in seen["episodes"]] == [str(i) for i in range(1, 779)]
    assert all(e["actions"] == ["STOP"] for e in seen["episodes"])


def test_cli_rejects_partial_bundle_against_official_manifests(tmp_path, havln_data, capsys):
    z = make_zip(
        tmp_path / "p.zip",
        [("val_seen.json", dumps(split_obj("val_seen", ["1", "2"]))), ("val_unseen.json", dumps(split_obj("val_unseen", ["1"])))],
    )
    assert validate_main([str(z)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("SUBMISSION REJECTED:")
    assert "episode 3..778: episode-missing" in out and "episode 2..1839: episode-missing" in out


# --- one test per rule -----------------------------------------------------------------------------


def test_rule_input(tmp_path, manifests):
    only_rule(validate_zip(tmp_path / "absent.zip", manifests), "input")
    only_rule(validate_zip(tmp_path, manifests), "input")


def test_rule_zip_not_an_archive(tmp_path, manifests):
    p = tmp_path / "x.zip"
    p.write_bytes(dumps(split_obj("val_seen", SEEN_IDS)))
    only_rule(validate_zip(p, manifests), "zip")
    p.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    only_rule(validate_zip(p, manifests), "zip")
    p.write_bytes(b"")
    only_rule(validate_zip(p, manifests), "zip")


def test_rule_zip_corrupt_member(tmp_path, manifests):
    z = make_zip(tmp_path / "sub.zip", good_members())
    raw = bytearray(z.read_bytes())
    # flip a byte inside the first member's compressed data (after its 30-byte header + name)
    name_len = struct.unpack("<H", raw[26:28])[0]
    raw[30 + name_len + 5] ^= 0xFF
    z.write_bytes(bytes(raw))
    rep = validate_zip(z, manifests)
    assert not rep.ok and "zip" in rules(rep), rep.render()


def test_rule_zip_size_declared_and_bomb(tmp_path, manifests):
    big = b"[" + b'"STOP",' * 200_000 + b'"STOP"]'  # 1.4 MB that deflates to a few KB
    rep = run(tmp_path, manifests, [*good_members(), ("bomb.json", big)], limits=Limits(max_member_bytes=1_000_000))
    only_rule(rep, "zip-size")
    rep = run(tmp_path, manifests, good_members(), limits=Limits(max_total_bytes=100))
    only_rule(rep, "zip-size")
    rep = run(tmp_path, manifests, good_members(), limits=Limits(max_zip_bytes=100))
    only_rule(rep, "zip-size")


def test_lying_size_header_is_bounded(tmp_path, manifests):
    """A central directory that under-states a member's size cannot make the reader read past the limit."""
    payload = dumps(split_obj("val_seen", SEEN_IDS)) + b" " * 50_000
    z = make_zip(tmp_path / "sub.zip", [("val_seen.json", payload), ("val_unseen.json", dumps(split_obj("val_unseen", UNSEEN_IDS)))])
    raw = bytearray(z.read_bytes())
    cd = raw.find(b"PK\x01\x02")
    raw[cd + 24 : cd + 28] = struct.pack("<I", 100)  # uncompressed size claimed: 100 bytes
    z.write_bytes(bytes(raw))
    rep = validate_zip(z, manifests, limits=Limits(max_member_bytes=1000))
    assert not rep.ok and rules(rep) & {"zip", "zip-size"}, rep.render()


def test_rule_zip_members(tmp_path, manifests):
    rep = run(tmp_path, manifests, good_members() + [(f"x{i}.txt", b"x") for i in range(70)])
    only_rule(rep, "zip-members")


def test_many_member_archive_is_refused_from_the_eocd_record(tmp_path, manifests, monkeypatch):
    """70,000 entries (a ZIP64 end record) are refused before zipfile builds its member list."""
    z = tmp_path / "many.zip"
    with zipfile.ZipFile(z, "w", compression=zipfile.ZIP_STORED) as zf:
        for i in range(70_000):
            zf.writestr(f"{i}", b"")
    assert b"PK\x06\x06" in z.read_bytes()[-200:]  # ZIP64 end of central directory
    monkeypatch.setattr(zipfile, "ZipFile", None)  # must not be reached
    rep = validate_zip(z, manifests)
    only_rule(rep, "zip-members")
    assert "declares 70000 members" in rep.render()


def test_rule_encrypted(tmp_path, manifests):
    z = make_zip(tmp_path / "sub.zip", good_members())
    raw = bytearray(z.read_bytes())
    raw[6] |= 0x1  # general-purpose flag bit 0 (encrypted), local header of the first member
    cd = raw.find(b"PK\x01\x02")
    raw[cd + 8] |= 0x1  # same bit in its central-directory record
    z.write_bytes(bytes(raw))
    rep = validate_zip(z, manifests)
    assert "encrypted" in rules(rep) and rules(rep) <= {"encrypted", "split-missing"}, rep.render()


@pytest.mark.parametrize(
    "name", ["/abs/val_seen.json", "../val_seen.json", "a\\val_seen.json", "C:val_seen.json", "c:\\x.json", "bad\x01name.json"]
)
def test_rule_member_name(tmp_path, manifests, name):
    rep = run(tmp_path, manifests, [(zipfile.ZipInfo(name), b"{}"), *good_members()])
    only_rule(rep, "member-name")
    assert repr(name) in rep.render()


def test_rule_folder(tmp_path, manifests):
    only_rule(run(tmp_path, manifests, [("sub/", b""), *good_members()]), "folder")
    rep = run(
        tmp_path, manifests, [("submission/val_seen.json", dumps(split_obj("val_seen", SEEN_IDS))), ("submission/val_unseen.json", b"{}")]
    )
    assert rules(rep) == {"folder", "split-missing"}, rep.render()
    assert "inside a folder" in rep.render()


def test_rule_symlink(tmp_path, manifests):
    info = zipfile.ZipInfo("link.json")
    info.create_system = 3
    info.external_attr = (0o120777) << 16
    only_rule(run(tmp_path, manifests, [(info, b"/etc/passwd"), *good_members()]), "symlink")


def test_rule_member_duplicate(tmp_path, manifests):
    with pytest.warns(UserWarning):
        rep = run(tmp_path, manifests, [*good_members(), ("val_unseen.json", dumps(split_obj("val_unseen", UNSEEN_IDS)))])
    assert "member-duplicate" in rules(rep), rep.render()


def test_rule_encoding(tmp_path, manifests):
    seen = dumps(split_obj("val_seen", SEEN_IDS)).replace(b'"val_seen"', b'"val_s\xe9en"')
    only_rule(run(tmp_path, manifests, [("val_seen.json", seen), good_members()[1]]), "encoding", {"split-missing"})
    bom = b"\xef\xbb\xbf" + dumps(split_obj("val_seen", SEEN_IDS))
    rep = run(tmp_path, manifests, [("val_seen.json", bom), good_members()[1]])
    only_rule(rep, "encoding", {"split-missing"})
    assert "byte-order mark" in rep.render()


def test_rule_json(tmp_path, manifests):
    only_rule(
        run(tmp_path, manifests, [("val_seen.json", b'{"format_version": 1, "split": '), good_members()[1]]), "json", {"split-missing"}
    )
    nan = dumps(split_obj("val_seen", SEEN_IDS)).replace(b'"format_version": 1', b'"format_version": NaN')
    only_rule(run(tmp_path, manifests, [("val_seen.json", nan), good_members()[1]]), "json", {"split-missing"})
    only_rule(run(tmp_path, manifests, [("val_seen.json", b"[" * 100_000), good_members()[1]]), "json", {"split-missing"})


def test_rule_duplicate_key(tmp_path, manifests):
    text = json.dumps(split_obj("val_seen", SEEN_IDS))
    dup = text.replace('"actions":', '"actions": ["STOP"], "actions":', 1).encode()
    rep = run(tmp_path, manifests, [("val_seen.json", dup), good_members()[1]])
    only_rule(rep, "duplicate-key")
    assert "'actions'" in rep.render()
    root_dup = text.replace('"split": "val_seen"', '"split": "val_seen", "split": "val_seen"').encode()
    only_rule(run(tmp_path, manifests, [("val_seen.json", root_dup), good_members()[1]]), "duplicate-key")


def test_rule_schema(tmp_path, manifests):
    mapping = {"format_version": 1, "split": "val_seen", "episodes": {i: GOOD for i in SEEN_IDS}}
    rep = run(tmp_path, manifests, [("val_seen.json", dumps(mapping)), good_members()[1]])
    assert rules(rep) == {"schema", "split-missing"}, rep.render()
    assert "list of" in rep.render()
    bad_entry = split_obj("val_seen", SEEN_IDS)
    bad_entry["episodes"].append(["STOP"])
    only_rule(run(tmp_path, manifests, good_members(seen=bad_entry)), "schema")
    no_actions = split_obj("val_seen", SEEN_IDS)
    del no_actions["episodes"][0]["actions"]
    only_rule(run(tmp_path, manifests, good_members(seen=no_actions)), "schema")
    rep = run(tmp_path, manifests, [("val_seen.json", b"[1, 2]"), good_members()[1]])
    assert "schema" in rules(rep)


@pytest.mark.parametrize("value", [2, "1", 1.0, True, None])
def test_rule_format_version(tmp_path, manifests, value):
    only_rule(run(tmp_path, manifests, good_members(seen=split_obj("val_seen", SEEN_IDS, format_version=value))), "format-version")
    obj = split_obj("val_seen", SEEN_IDS)
    del obj["format_version"]
    only_rule(run(tmp_path, manifests, good_members(seen=obj)), "format-version")


def test_rule_split_missing(tmp_path, manifests):
    rep = run(tmp_path, manifests, good_members()[:1])
    only_rule(rep, "split-missing")
    rep = run(tmp_path, manifests, [good_members()[0], ("val_unseen.json", dumps(split_obj("val-unseen", UNSEEN_IDS)))])
    only_rule(rep, "split-missing")
    assert "split 'val-unseen' is not required" in rep.render()


def test_rule_split_duplicate(tmp_path, manifests):
    rep = run(tmp_path, manifests, [*good_members(), ("copy.json", dumps(split_obj("val_seen", SEEN_IDS)))])
    only_rule(rep, "split-duplicate")
    assert "copy.json" in rep.render()


def test_rule_episode_id(tmp_path, manifests):
    obj = split_obj("val_seen", SEEN_IDS)
    obj["episodes"][0]["episode_id"] = 1
    rep = run(tmp_path, manifests, good_members(seen=obj))
    assert rules(rep) == {"episode-id", "episode-missing"}, rep.render()
    assert 'write it as the string "1"' in rep.render()
    obj["episodes"][0]["episode_id"] = ""
    assert "episode-id" in rules(run(tmp_path, manifests, good_members(seen=obj)))


def test_rule_episode_duplicate(tmp_path, manifests):
    obj = split_obj("val_seen", [*SEEN_IDS, "2"])
    rep = run(tmp_path, manifests, good_members(seen=obj))
    only_rule(rep, "episode-duplicate")
    assert rep.problems[0].episode_id == "2" and rep.problems[0].entry == 5 and "episodes[5], episode 2" in rep.render()


def test_rule_episode_missing(tmp_path, manifests):
    rep = run(tmp_path, manifests, good_members(seen=split_obj("val_seen", ["1", "3"])))
    only_rule(rep, "episode-missing")
    assert [p.episode_id for p in rep.problems] == ["2", "4..5"]


def test_rule_episode_unknown(tmp_path, manifests):
    rep = run(tmp_path, manifests, good_members(seen=split_obj("val_seen", [*SEEN_IDS, "06", "0"])))
    only_rule(rep, "episode-unknown")
    assert [p.episode_id for p in rep.problems] == ["06", "0"]


def test_rule_type(tmp_path, manifests):
    obj = split_obj("val_seen", SEEN_IDS)
    obj["episodes"][1]["actions"] = "STOP"
    only_rule(run(tmp_path, manifests, good_members(seen=obj)), "type")


def test_rule_literal(tmp_path, manifests):
    obj = split_obj("val_seen", SEEN_IDS)
    obj["episodes"][1]["actions"] = ["MOVE_FORWARD", "move_forward", 1, "STOP"]
    rep = run(tmp_path, manifests, good_members(seen=obj))
    only_rule(rep, "literal")
    assert [(p.episode_id, p.index) for p in rep.problems] == [("2", 1), ("2", 2)]


def test_rule_length(tmp_path, manifests):
    obj = split_obj("val_seen", SEEN_IDS)
    obj["episodes"][4]["actions"] = []
    only_rule(run(tmp_path, manifests, good_members(seen=obj)), "length")


def test_rule_stop_once(tmp_path, manifests):
    obj = split_obj("val_seen", SEEN_IDS)
    obj["episodes"][0]["actions"] = ["STOP", "MOVE_FORWARD", "STOP"]
    rep = run(tmp_path, manifests, good_members(seen=obj))
    only_rule(rep, "stop-once")
    assert (rep.problems[0].episode_id, rep.problems[0].index) == ("1", 0)


def test_rule_stop_last(tmp_path, manifests):
    obj = split_obj("val_seen", SEEN_IDS)
    obj["episodes"][0]["actions"] = ["MOVE_FORWARD", "STOP", "TURN_LEFT"]
    obj["episodes"][1]["actions"] = ["MOVE_FORWARD"]
    rep = run(tmp_path, manifests, good_members(seen=obj))
    only_rule(rep, "stop-last")
    assert [(p.episode_id, p.index) for p in rep.problems] == [("1", 1), ("2", None)]


def test_listing_is_capped_with_a_count(tmp_path, manifests):
    obj = split_obj("val_seen", SEEN_IDS, ["JUMP"] * 40 + ["STOP"])
    rep = run(tmp_path, manifests, good_members(seen=obj))
    text = rep.render(10)
    assert len(rep.problems) == 200
    assert text.splitlines()[0].startswith("SUBMISSION REJECTED:") and "literal x200" in text.splitlines()[0]
    assert "... and 190 more problem(s)" in text
    assert len([ln for ln in rep.render(0).splitlines() if "note:" not in ln]) == 201


def test_manifest_sha_prefix_is_checked(tmp_path, havln_data):
    from havln_robot.challenge.manifest import ManifestError

    real = havln_data / "challenge" / "collision_num_val_seen.json"
    m = load_manifest(real, require_official=True)
    assert m.split == "val_seen" and m.official and len(m) == 778 and m.ids[0] == "1" and m.ids[-1] == "778"
    assert m.baseline["1"] == 1
    tampered = tmp_path / "collision_num_val_seen.json"
    tampered.write_text(real.read_text().replace('"1": 1', '"1": 0', 1))
    with pytest.raises(ManifestError, match="not the official val_seen manifest"):
        load_manifest(tampered, require_official=True)
    assert not load_manifest(tampered).official


def test_huge_problem_counts_are_folded_not_stored(tmp_path, manifests, monkeypatch):
    import havln_robot.challenge.format as fmt

    monkeypatch.setattr(fmt, "MAX_LISTED_PER_FILE", 50)
    obj = split_obj("val_seen", SEEN_IDS, ["JUMP"] * 499 + ["STOP"])
    obj["episodes"][0]["actions"] = ["FLY"] * 100_000  # far over the budget: checked only up to 500
    rep = run(tmp_path, manifests, good_members(seen=obj))
    assert rep.problem_count == 4 * 499 + 500 + 1  # 4 x 499 JUMP + 500 FLY (first 500 only) + 1 length
    assert len(rep.problems) <= 52
    text = rep.render(0)
    assert "literal x2496" in text.splitlines()[0] and "length x1" in text.splitlines()[0]
    assert "more literal problem(s) in this file, not listed" in text
    assert "100000 actions exceed the 500-action budget" in text
