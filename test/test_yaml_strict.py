"""Profiles and campaign plans are read strictly -- duplicate keys refused with
line numbers, a size cap that reads at most cap+1 bytes (a symlink to /dev/zero cannot eat memory)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from havln_robot.config import load_profile
from havln_robot.params import ConfigError
from havln_robot.trials.plan import load_plan
from havln_robot.trials.store import TrialError
from havln_robot.yamlio import MAX_YAML_BYTES, YamlFileError, load_yaml_file

PROFILE_DUP = """\
motion_node:
  ros__parameters:
    max_linear_speed: 0.3
    max_angular_speed: 0.5
    max_linear_speed: 0.9
"""


def test_duplicate_key_in_profile_is_refused_with_both_lines(tmp_path):
    f = tmp_path / "dup.yaml"
    f.write_text(PROFILE_DUP)
    with pytest.raises(ConfigError) as ei:
        load_profile(f)
    msg = str(ei.value)
    assert "duplicate key 'max_linear_speed'" in msg and "line 5" in msg and "first at line 3" in msg and "\n" not in msg


def test_duplicate_node_and_plan_keys_refused_merge_keys_allowed(tmp_path):
    f = tmp_path / "dup_node.yaml"
    f.write_text("motion_node: {}\nagent_node: {}\nmotion_node: {}\n")
    with pytest.raises(ConfigError, match="duplicate key 'motion_node'.*first at line 1"):
        load_profile(f)
    plan = tmp_path / "plan.yaml"
    plan.write_text("campaign: c\ntrials:\n  - {region: office, people: 0, people: 2}\n")
    with pytest.raises(TrialError, match=r"line 3.*duplicate key 'people'"):
        load_plan(plan)
    ok = tmp_path / "merge.yaml"
    ok.write_text("base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n")
    assert load_yaml_file(ok)["derived"] == {"x": 1, "y": 3}


def test_size_cap_reads_at_most_cap_plus_one_bytes(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_YAML_BYTES + 1))
    with pytest.raises(YamlFileError, match="larger than 1024 KiB"):
        load_yaml_file(big)
    exact = tmp_path / "exact.yaml"
    exact.write_bytes(b"a: 1\n" + b"#" * (MAX_YAML_BYTES - 5))
    assert load_yaml_file(exact) == {"a": 1}


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_symlink_to_dev_zero_is_refused_without_eating_memory(tmp_path):
    """A profile and a plan that are symlinks to /dev/zero: one line each, in a child process
    whose address space is limited to 1 GiB (reading 'until EOF' would be killed)."""
    prof = tmp_path / "endless.yaml"
    prof.symlink_to("/dev/zero")
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from havln_robot.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    r = subprocess.run([sys.executable, "-c", code, "launch", str(prof)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "larger than 1024 KiB" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    with pytest.raises(TrialError, match="larger than 1024 KiB"):
        load_plan(prof)


def _alias_bomb(levels: int = 6) -> str:
    s = "[&a0 [" + ", ".join(["{region: office, people: 0}"] * 10) + "]"
    for i in range(1, levels + 1):
        s += f", &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]"
    return s + "]"


@pytest.mark.parametrize(
    "reader",
    [
        pytest.param(lambda f: load_yaml_file(f), id="load_yaml_file"),
        pytest.param(lambda f: load_profile(f), id="profile"),
        pytest.param(lambda f: load_plan(f), id="plan"),
    ],
)
@pytest.mark.parametrize(
    "text",
    [
        pytest.param("description: " + _alias_bomb() + "\ncampaign: bomb\ntrials: [{region: office, people: 0}]\n", id="bomb"),
        pytest.param("description: &r [*r]\ncampaign: c\ntrials: [{region: office, people: 0}]\n", id="recursive"),
    ],
)
def test_alias_bomb_and_recursive_alias_refused_quickly_by_every_yaml_reader(tmp_path, reader, text):
    import time

    f = tmp_path / "bomb.yaml"
    f.write_text(text)
    t0 = time.monotonic()
    with pytest.raises((YamlFileError, ConfigError, TrialError)) as ei:
        reader(f)
    assert time.monotonic() - t0 < 5
    msg = str(ei.value)
    assert "\n" not in msg and "bomb.yaml" in msg and ("alias" in msg) and "line 1" in msg


def test_small_alias_use_still_loads(tmp_path):
    f = tmp_path / "ok.yaml"
    f.write_text("a: &x [1, 2]\nb: *x\nc: [*x, *x]\n")
    assert load_yaml_file(f) == {"a": [1, 2], "b": [1, 2], "c": [[1, 2], [1, 2]]}


def test_no_yaml_load_outside_the_strict_loader():
    """Every YAML file is read by yamlio (aliases bounded, duplicate keys refused, size cap)."""
    import pathlib
    import re

    import havln_robot

    root = pathlib.Path(havln_robot.__file__).parent
    bad = [
        str(f.relative_to(root))
        for f in root.rglob("*.py")
        if f.name != "yamlio.py" and re.search(r"yaml\.(safe_|full_|unsafe_)?load(_all)?\(", f.read_text())
    ]
    assert bad == []
