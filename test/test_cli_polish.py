"""CLI polish: every option of every subcommand has help, names, plurals and wording of user-facing lines."""

from __future__ import annotations

import argparse
import importlib
import json
import zipfile
from pathlib import Path

import pytest

from havln_robot.bench import BENCHES
from havln_robot.cli import COMMANDS, main
from havln_robot.text import outcome_label, plural


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _parser_of(target: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The ArgumentParser a ``module:function`` handler builds (caught at its parse_args call)."""

    def fake(self: argparse.ArgumentParser, *args: object, **kw: object) -> None:
        raise _Captured(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", fake)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", fake)
    mod, fn = target.split(":")
    try:
        getattr(importlib.import_module(mod), fn)(["--help"])
    except _Captured as cap:
        return cap.parser
    finally:
        monkeypatch.undo()
    raise AssertionError(f"{target} never parsed its arguments")


def _walk(parser: argparse.ArgumentParser, label: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{label} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield label, action


_TARGETS = {f"havln-robot {c}": t for c, (t, _) in COMMANDS.items() if c != "bench"} | {
    f"havln-robot bench {b}": t for b, t in BENCHES.items()
}


@pytest.mark.parametrize("label", sorted(_TARGETS))
def test_every_option_has_help_without_backticks(label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    parser = _parser_of(_TARGETS[label], monkeypatch)
    assert parser.prog == label, "--help must show the command a user types, not python -m ..."
    assert "``" not in (parser.description or "") and "once registered" not in (parser.description or "")
    bad = []
    for where, action in _walk(parser, label):
        text = action.help or ""
        if not text.strip() or "``" in text or "once registered" in text:
            bad.append(f"{where} {'/'.join(action.option_strings) or action.dest}: {text!r}")
    assert not bad, "options without help (or with literal ``): " + "; ".join(bad)


_REPO = Path(__file__).resolve().parents[1]
#: Top-level folders of the checkout whose files ship with the package (setup.py data_files and the
#: package itself); what else exists there (runs/, .venv/, ...) was made by earlier commands.
_SHIPPED_DIRS = {"config", "models", "launch", "gazebo", "docker", "scripts", "havln_robot"}


def _shipped(rel: str, kind: str = "exists") -> bool:
    """True when ``rel`` (relative to the checkout) names a shipped file or folder."""
    parts = Path(rel).parts
    return bool(parts) and parts[0] in _SHIPPED_DIRS and getattr(_REPO / rel, kind)()


@pytest.mark.parametrize("label", sorted(_TARGETS))
def test_no_default_is_a_path_relative_to_the_checkout(label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A default such as ``config/sim.yaml`` or ``models/small_panoramic.pt`` only works when the
    command is started in the checkout; from any other folder the shipped file is "not found". Defaults
    that name a shipped file are resolved through havln_robot.paths (config_dir(), models_dir()) or a
    name looked up there (``--policy small_panoramic``)."""
    parser = _parser_of(_TARGETS[label], monkeypatch)
    bad = []
    for where, action in _walk(parser, label):
        d = action.default
        if isinstance(d, str) and d and not Path(d).is_absolute() and "/" in d and _shipped(d):
            bad.append(f"{where} {'/'.join(action.option_strings) or action.dest}: default {d!r}")
    assert not bad, "defaults relative to the checkout (break outside it): " + "; ".join(bad)


def test_no_code_names_a_shipped_file_relative_to_the_checkout() -> None:
    """The same mistake outside argparse: a literal such as ``"config/sim.yaml"`` in the code (bench
    console's profile was one) resolves against the working directory, not the install."""
    import ast

    bad = []
    for src in sorted((_REPO / "havln_robot").rglob("*.py")):
        tree = ast.parse(src.read_text(), str(src))
        docs = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(n) is not None
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                v = node.value
                if "/" in v and not v.startswith(("/", "$", "~")) and " " not in v and _shipped(v, "is_file"):
                    bad.append(f"{src.relative_to(_REPO)}:{node.lineno}: {v!r}")
    assert not bad, "checkout-relative paths (use havln_robot.paths.config_dir()/models_dir()): " + "; ".join(bad)


def test_agreement_finds_the_shipped_model_from_any_folder(havln_data, tmp_path, monkeypatch) -> None:
    """``bench agreement --kinds model`` started outside the checkout loads the shipped model by
    default (it once looked for ./models/small_panoramic.pt and said "not found")."""
    from havln_robot.bench import agreement
    from havln_robot.policy import registry

    seen: list[Path] = []

    class _Loaded(Exception):
        pass

    def fake_make_policy(spec, **kw):
        seen.append(registry.resolve_checkpoint(spec))
        raise _Loaded

    monkeypatch.setattr(registry, "make_policy", fake_make_policy)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(_Loaded):
        agreement.main(["--kinds", "model", "--episodes", "1", "--batch-only"])
    assert seen and seen[0].name == "small_panoramic.pt" and seen[0].is_file()


def test_panorama_bench_finds_the_shipped_profile_from_any_folder(tmp_path, monkeypatch) -> None:
    """``bench panorama`` started outside the checkout reads the shipped config/sim.yaml."""
    pytest.importorskip("rclpy")
    from havln_robot import config
    from havln_robot.bench.panorama import run_panoramas

    seen: list[Path] = []

    class _Read(Exception):
        pass

    def fake_load_profile(path, *a, **kw):
        seen.append(Path(path))
        raise _Read

    monkeypatch.setattr(config, "load_profile", fake_load_profile)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(_Read):
        run_panoramas(("sweep",), 1, context=object())
    assert seen and seen[0].is_file() and seen[0].samefile(_REPO / "config" / "sim.yaml")


@pytest.mark.parametrize(
    ("target", "argv"),
    [
        ("havln_robot.sim.gazebo_world:main", ["gZ6f7yhEvPG", "--episodes", "{f}", "--out", "{f}"]),
        ("havln_robot.bench.sim:main", ["--episodes", "{f}", "--out", "{f}"]),
        ("havln_robot.bench.policy:main", ["--model", "{f}", "--json", "{f}"]),
        ("havln_robot.bench.policy:main", ["--episodes", "{f}", "--json", "{f}"]),
        ("havln_robot.bench.motion:main", ["--config", "{f}", "--json", "{f}"]),
        ("havln_robot.bench.agreement:main", ["--live-log", "{f}", "--json", "{f}"]),
    ],
)
def test_an_output_naming_an_input_is_refused_before_any_work(target: str, argv: list[str], tmp_path) -> None:
    """Every writer whose output could name one of its own input files refuses it before any work,
    naming the flag, and leaves the input as it was (replay and pack always did; these wrote over it)."""
    from havln_robot.paths import OutputPathError

    f = tmp_path / "input.json"
    f.write_text('{"kept": true}\n')
    mod, fn = target.split(":")
    with pytest.raises(OutputPathError, match="is also an input"):
        getattr(importlib.import_module(mod), fn)([a.format(f=f) for a in argv])
    assert f.read_text() == '{"kept": true}\n'


def test_agreement_refuses_bad_kinds_before_it_creates_the_json_folder(tmp_path, capsys) -> None:
    """A run refused for its --kinds leaves no folder behind for --json."""
    from havln_robot.bench.agreement import main as agreement_main

    out = tmp_path / "new" / "dir" / "x.json"
    assert agreement_main(["--kinds", "bogus", "--json", str(out)]) == 2
    assert "--kinds: unknown bogus" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_an_integer_option_past_int64_is_refused_not_a_traceback() -> None:
    """A 400-digit --seed overflowed math.isfinite() (OverflowError traceback) and a seed past int64
    was taken, to fail only at the live side's ROS parameter hours later."""
    from havln_robot.text import number_in

    parse = number_in(0, integer=True)
    for text in ("1" + "0" * 400, str(2**63)):
        with pytest.raises(argparse.ArgumentTypeError, match="64-bit"):
            parse(text)
    assert parse(str(2**63 - 1)) == 2**63 - 1


def test_bench_unknown_name_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "foo"]) == 2
    err = capsys.readouterr().err
    assert "unknown benchmark 'foo'" in err and "all" in err


def test_bench_help_lists_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--help"]) == 0
    assert "perception|panorama|scale|stairs|safety|agreement|link|trials|all" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("n", "word", "text"),
    [(1, "person", "1 person"), (0, "person", "0 people"), (2, "person", "2 people"), (1, "trial", "1 trial"), (3, "trial", "3 trials")],
)
def test_plural(n: int, word: str, text: str) -> None:
    assert plural(n, word) == text


def test_refused_before_start_is_not_shown_as_collision() -> None:
    assert outcome_label("collision", "blocked before start: a person 0.30 m ahead") == "refused"
    assert outcome_label("collision", "contact at 0.1 m/s") == "collision"
    assert outcome_label("ok") == "ok"


def test_replay_names_its_own_flag_for_a_missing_episode_file(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "val_seen.json"
    f.write_text(json.dumps({"format_version": 1, "split": "val_seen", "episodes": [{"episode_id": "1", "actions": ["STOP"]}]}))
    rc = main(["replay", str(f), "--episodes-file", str(tmp_path / "missing.json")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--episodes-file FILE" in err and "--episodes FILE" not in err


def test_pack_removes_a_zip_that_fails_validation(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    seen = tmp_path / "val_seen.json"
    seen.write_text(json.dumps({"format_version": 1, "split": "val_seen", "episodes": [{"episode_id": "1", "actions": ["STOP"]}]}))
    unseen = tmp_path / "val_unseen.json"
    unseen.write_text(json.dumps({"format_version": 1, "split": "val_unseen", "episodes": [{"episode_id": "1", "actions": ["STOP"]}]}))
    # manifests that list ids the files do not cover: the zip is rejected
    for split in ("val_seen", "val_unseen"):
        (tmp_path / f"collision_num_{split}.json").write_text(json.dumps({"1": 0, "2": 0}))
    out = tmp_path / "submission.zip"
    rc = main(
        ["pack", str(seen), str(unseen), "-o", str(out), "--manifest", f"val_seen={tmp_path / 'collision_num_val_seen.json'}",
         "--manifest", f"val_unseen={tmp_path / 'collision_num_val_unseen.json'}"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 1
    assert not out.exists(), "a rejected zip must not be left on disk"
    assert "was not written" in err


def test_pack_keeps_a_valid_zip(tmp_path) -> None:
    for split in ("val_seen", "val_unseen"):
        (tmp_path / f"{split}.json").write_text(
            json.dumps({"format_version": 1, "split": split, "episodes": [{"episode_id": "1", "actions": ["STOP"]}]})
        )
        (tmp_path / f"collision_num_{split}.json").write_text(json.dumps({"1": 0}))
    out = tmp_path / "ok.zip"
    args = ["pack", str(tmp_path / "val_seen.json"), str(tmp_path / "val_unseen.json"), "-o", str(out)]
    for split in ("val_seen", "val_unseen"):
        args += ["--manifest", f"{split}={tmp_path / f'collision_num_{split}.json'}"]
    assert main(args) == 0
    assert zipfile.is_zipfile(out)


def test_demo_line_without_people_says_none() -> None:
    from havln_robot.demo import _fmt_line
    from havln_robot.records import AgentStatus, GroundTruth

    gt = {"x": "1", "y": "2", "yaw_deg": "3", "distance_to_goal_m": "4", "nearest_human_m": "", "collisions_human": "0"}
    st = AgentStatus.from_values({"step": "1", "action": "STOP"})
    line = _fmt_line(st, GroundTruth.from_values(gt))
    assert "nearest person  none" in line and "-1.00" not in line
    assert "-1.00" not in _fmt_line(st, GroundTruth.from_values(gt | {"nearest_human_m": "-1.0"}))  # older simulators
    assert "1.20 m" in _fmt_line(st, GroundTruth.from_values(gt | {"nearest_human_m": "1.2"}))


def test_demo_prints_a_refusal_after_its_step(capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from havln_robot.demo import EpisodeRun, _Monitor
    from havln_robot.records import AgentStatus, CollisionRecord

    mon = object.__new__(_Monitor)  # the callbacks only; no ROS node: records come as key/value dicts
    codec = SimpleNamespace(decode_collision=CollisionRecord.from_values, decode_agent_status=AgentStatus.from_values)
    mon.run, mon.quiet, mon._codec, mon._last_step, mon._pending = EpisodeRun("1", "scan", "go"), False, codec, -1, []
    refusal = {"motion_state": "blocked", "type": "human", "action": "MOVE_FORWARD", "source": "people", "distance_m": "0.30"}
    mon._on_collision(refusal)  # motion_node's record arrives before the agent status of its step
    assert capsys.readouterr().out == ""
    mon._on_status({"step": "5", "action": "MOVE_FORWARD", "state": "acting"})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("  step   5") and "refused before start" in out[1]


def test_ros_replay_reports_refused_actions() -> None:
    import io

    from havln_robot.challenge.replay import ReplayedEpisode, aggregate, print_results
    from havln_robot.sim.metrics import episode_metrics

    m = episode_metrics(1.0, True, 5.0, 5.0, 0, 0, 10, 0)
    ros = [ReplayedEpisode("1", m, 1, "", refused=2, actions=10), ReplayedEpisode("2", m, 0, "", refused=0, actions=5)]
    out = io.StringIO()
    print_results(ros, aggregate(ros), out=out)
    text = out.getvalue()
    assert "motion_node refused 2 of 15 actions (1 of 2 episodes)" in text
    assert "2 refused" in text.splitlines()[1]  # per-episode note column
    batch = [ReplayedEpisode("1", m, 1, "")]
    out = io.StringIO()
    print_results(batch, aggregate(batch), out=out)
    assert "refused" not in out.getvalue()


@pytest.mark.parametrize("label", sorted(_TARGETS))
def test_no_option_takes_a_bare_float_or_int(label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare ``type=float`` takes nan/inf and neither bare type has a range (``bench console --limit-ms nan`` and ``trial start --goal 1e308 1e308`` were accepted); every
    numeric option goes through ``text.number_in`` or ``text.finite_float``."""
    parser = _parser_of(_TARGETS[label], monkeypatch)
    bare = [f"{where} {'/'.join(a.option_strings) or a.dest}" for where, a in _walk(parser, label) if a.type in (float, int)]
    assert not bare, "options parsed with a bare float/int: " + "; ".join(bare)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["bench", "console", "--limit-ms", "nan"], "--limit-ms"),
        (["bench", "console", "--limit-ms", "0"], "--limit-ms"),
        (["trial", "start", "--goal", "1e308", "1e308"], "--goal"),
        (["trial", "start", "--goal-radius", "inf"], "--goal-radius"),
        (["trial", "end", "--ne", "-1"], "--ne"),
        (["eval", "--limit", "-5"], "--limit"),
        (["eval", "--seed", "1.5"], "--seed"),
        (["demo", "--episodes", "0"], "--episodes"),
        (["demo", "--timeout", "nan"], "--timeout"),
        (["train", "--lr", "inf"], "--lr"),
    ],
)
def test_absurd_numbers_are_refused_naming_the_flag(argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "Traceback" not in err, err


#: Options that name where a command writes its results.
_OUTPUT_OPTIONS = {"--out", "--json", "-o", "--out-dir"}
#: Commands with such an option but no --overwrite, and why.
_NO_OVERWRITE = {
    "havln-robot demo": "its --out accumulates: every run adds its trials to the trial store there",
    "havln-robot gazebo-world": "--out is a world file generated from the data (an input of Gazebo), not results",
}


@pytest.mark.parametrize("label", sorted(_TARGETS))
def test_every_results_writer_has_overwrite(label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """export asked for --overwrite, eval --out replaced earlier results silently: one rule for all
    (havln_robot.paths.refuse_overwrite; test_cli_bad_input.py runs each one over earlier results)."""
    parser = _parser_of(_TARGETS[label], monkeypatch)
    options: dict[str, set[str]] = {}
    for where, action in _walk(parser, label):
        if action.nargs != 0:  # a flag such as doctor's --json (print JSON) writes no file
            options.setdefault(where, set()).update(action.option_strings)
        else:
            options.setdefault(where, set()).update(s for s in action.option_strings if s == "--overwrite")
    bad = [w for w, opts in options.items() if opts & _OUTPUT_OPTIONS and "--overwrite" not in opts and w not in _NO_OVERWRITE]
    assert not bad, f"results writers without --overwrite: {bad}"


#: Options whose empty value is meaningful, and why ('' is refused by every other value-taking option).
_EMPTY_IS_MEANINGFUL = {
    "--namespace": "'' is the root namespace, as ROS takes it (go2.launch.py namespace:='')",
    "--topic": "checked as a ROS name after parsing: '' is refused there",
    "--set": "each item is parsed (NODE.PARAM=VALUE); '' is refused there",
    "--reason": "free text of a verdict; empty = no reason",
    "--region": "trial metadata (free text, checked by the store)",
    "--instance": "trial metadata (free text)",
    "--instruction": "trial metadata (free text)",
    "--operator": "trial metadata (free text)",
    "--episode-id@trial start": "trial metadata (free text)",
    "--scan": "trial metadata (free text)",
    "--notes": "trial metadata (free text)",
    "--name": "a campaign's name (free text)",
    "--title": "the report's title (free text)",
}


@pytest.mark.parametrize("label", sorted(_TARGETS))
def test_no_option_silently_takes_an_empty_value(label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--json ''`` was ignored, ``replay --episodes ''`` replayed everything, ``--connectivity ''``
    read the current folder: every value-taking option refuses '' at parse time (text.path_arg,
    text.nonempty, number_in), unless an empty value means something listed above."""
    import argparse

    parser = _parser_of(_TARGETS[label], monkeypatch)
    bad = []
    for where, action in _walk(parser, label):
        if action.nargs == 0 or action.choices:
            continue
        name = "/".join(action.option_strings) or action.dest
        long = next((s for s in action.option_strings if s.startswith("--")), name)
        if long in _EMPTY_IS_MEANINGFUL or f"{long}@{where.removeprefix('havln-robot ')}" in _EMPTY_IS_MEANINGFUL:
            continue
        try:
            (action.type or str)("")
        except argparse.ArgumentTypeError:
            continue
        bad.append(f"{where} {name}")
    assert not bad, f"options that take '' silently (give them type=path_arg / nonempty(...)): {bad}"


def test_readme_command_list_is_the_help_table() -> None:
    """The README's command list and ``havln-robot --help`` come from one table (cli.COMMANDS);
    ``bench all --update-readme`` rewrites the README's block."""
    from havln_robot.cli import COMMANDS_BEGIN, COMMANDS_END, commands_markdown

    text = (_REPO / "README.md").read_text(encoding="utf-8")
    block = text.split(COMMANDS_BEGIN, 1)[1].split(COMMANDS_END, 1)[0].strip()
    assert block == commands_markdown(), (
        "README's command list is stale: run `havln-robot bench all --update-readme README.md` or paste `havln-robot help --markdown`"
    )
