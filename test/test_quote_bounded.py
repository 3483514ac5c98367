"""Problem lines quote user values through one bounded helper (text.quote / quoting.quote): a
megabyte action literal, a 401-digit format_version or a 5000-digit id never comes back verbatim,
and never as Python's 'use sys.set_int_max_str_digits()'."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from havln_robot.text import quote

HUGE = "X" * 1_000_000


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("abc", "'abc'"),
        (HUGE, "'" + "X" * 40 + "'… (1000000 chars)"),
        (10**400, "an integer of about 401 digits"),
        (-(10**5000), "an integer of about 5001 digits"),
        (12, "12"),
        (None, "None"),
        (1.5, "1.5"),
        ([1, "a"], "[1, 'a']"),
        ({"k": 1}, "{'k': 1}"),
        ((1,), "(1)"),
    ],
    ids=["str", "huge str", "401 digits", "5001 digits", "int", "None", "float", "list", "dict", "tuple"],
)
def test_quote(value, expected):
    assert quote(value) == expected


@pytest.mark.parametrize(
    "value", [list(range(10_000)), {str(i): HUGE for i in range(100)}, [HUGE] * 50, [[[HUGE]]]], ids=["ints", "dict", "strs", "nested"]
)
def test_quote_containers_are_bounded(value):
    assert len(quote(value)) < 120


def _zip(tmp_path, text):
    z = tmp_path / "sub.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("val_seen.json", text)
    return z


def _doc(episodes="[]", version="1", extra=""):
    return '{"format_version": ' + version + ', "split": "val_seen", "episodes": ' + episodes + extra + "}"


CASES = {
    "huge literal": _doc('[{"episode_id": "1", "actions": ["' + HUGE + '"]}]'),
    "huge format_version": _doc(version="1" + "0" * 400),
    "5000-digit id": _doc('[{"episode_id": 1' + "0" * 5000 + ', "actions": ["STOP"]}]'),
    "huge id": _doc('[{"episode_id": "' + HUGE + '", "actions": ["STOP"]}]'),
    "huge duplicate key": _doc(extra=', "' + HUGE + '": 1, "' + HUGE + '": 2'),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_validate_never_echoes_huge_values(tmp_path, case):
    z = _zip(tmp_path, CASES[case])
    manifest = tmp_path / "m.json"
    manifest.write_text('{"1": 0}')
    r = subprocess.run(
        [sys.executable, "-m", "havln_robot.cli", "validate", "--splits", "val_seen", "--manifest", f"val_seen={manifest}", str(z)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert "Traceback" not in out and "set_int_max_str_digits" not in out, out[-2000:]
    assert "REJECTED" in out, out[-2000:]
    assert max(len(line) for line in out.splitlines()) < 400, max(out.splitlines(), key=len)[:300]


def test_manifest_and_run_file_problems_are_bounded(tmp_path):
    from havln_robot.challenge.export import ExportError, read_run_file
    from havln_robot.challenge.manifest import ManifestError, load_manifest

    m = tmp_path / "m.json"
    m.write_text('{"' + HUGE + '": "' + HUGE + '"}')
    with pytest.raises(ManifestError) as exc:
        load_manifest(m, "val_seen")
    assert len(str(exc.value)) < 400
    run = tmp_path / "run.json"
    run.write_text('[{"episode_id": ["' + HUGE + '"], "actions": ["STOP"]}]')
    with pytest.raises(ExportError) as exc:
        read_run_file(run)
    assert len(str(exc.value)) < 400
