"""``havln-robot`` command: one entry point, subcommands owned by the modules that implement them.

Each subcommand is ``"module:function"`` taking ``argv: list[str]`` and returning an exit code;
modules are imported lazily so ``havln-robot --help`` is instant and a subcommand whose module is
not in this build says so instead of crashing.
"""

from __future__ import annotations

import importlib
import os
import sys

#: subcommand → (handler "module:function", one-line help).
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("havln_robot.demo:main", "run the whole stack on a real HA-R2R episode in the embedded simulator"),
    "launch": ("havln_robot.bringup:main", "start a profile's nodes in one process (config/sim.yaml, ...)"),
    "eval": ("havln_robot.eval:main", "evaluate a policy on HA-R2R/R2R episodes in the batch simulator"),
    "sweep": (
        "havln_robot.sweep:main",
        "evaluate a grid of settings (policy, split, seed, people, camera FOV, motion limits): table + SR plot; --ray for a cluster",
    ),
    "bench": ("havln_robot.bench:main", "benchmarks (bench NAME --help); bench all --update-readme README.md writes the README figures"),
    "train": ("havln_robot.policy.train:main", "train the policy by imitation (teacher forcing + DAgger)"),
    "policy-server": (
        "havln_robot.policy.serve:main",
        "serve a policy over HTTP for agent_node / eval on another machine (policy http://HOST:PORT; no ROS needed)",
    ),
    "replay": ("havln_robot.ros.replay:main", "replay a format-v1 action file in sim (batch) or over ROS"),
    "gazebo-world": (
        "havln_robot.sim.gazebo_world:main",
        "write a Gazebo world of a scan for gazebo_replay: procedural scene, or its mesh with --scenes DIR",
    ),
    "export": ("havln_robot.challenge.cli:export_main", "export trials / sim runs to challenge format v1"),
    "pack": ("havln_robot.challenge.cli:pack_main", "pack val_seen.json + val_unseen.json into a submission zip"),
    "validate": ("havln_robot.challenge.cli:validate_main", "validate a submission zip against every organiser rule"),
    "trial": ("havln_robot.ros.mcap:trial_main", "trial campaign records: plan, start, end, list, show, backup, ... (trial --help)"),
    "report": ("havln_robot.trials.report:main", "success-rate report (Markdown + CSV + PNG) from the trial store"),
    "data": ("havln_robot.data.fetch:main", "get the HA-VLN data: data fetch [--dest DIR] [--mirror DIR|URL] | data check"),
    "instruct": ("havln_robot.instruct:main", 'send one instruction to agent_node: instruct "walk to the sofa" (no ros2 needed)'),
    "config": ("havln_robot.cli:config_main", "validate a deployment profile without starting anything"),
    "doctor": ("havln_robot.doctor:main", "check a robot machine before a trial day: doctor [--profile config/go2.yaml] [--json]"),
    "console": (
        "havln_robot.console_app:main",
        "operator console in a browser: console [PROFILE] [--host H --port P] (token printed at start)",
    ),
}


def config_main(argv: list[str]) -> int:
    """``havln-robot config PROFILE``: validate a profile and print the nodes it would start."""
    import argparse

    from havln_robot.config import load_profile
    from havln_robot.params import QOS_OVERRIDES, ConfigError
    from havln_robot.rosnames import namespace_arg
    from havln_robot.text import nonempty, path_arg

    ap = argparse.ArgumentParser(prog="havln-robot config", description="Validate a deployment profile and print the nodes it would start.")
    ap.add_argument("profile", type=path_arg, help="deployment profile YAML (config/sim.yaml, config/go2.yaml, ...)")
    ap.add_argument(
        "--namespace", type=namespace_arg, default=None, help="check for nodes started in this namespace (go2.launch.py namespace:=NS)"
    )
    ap.add_argument(
        "--node",
        action="append",
        type=nonempty("a node name such as motion_node"),
        default=None,
        help="check this node as it reads the file given with --ros-args --params-file PROFILE "
        "(repeatable; default: the nodes its sections name; needed for a file of /**: sections only)",
    )
    args = ap.parse_args(argv)
    try:
        prof = load_profile(args.profile, namespace=args.namespace, nodes=args.node)
    except ConfigError as exc:
        print(f"havln-robot config: {exc}", file=sys.stderr)
        return 2
    for name, params in prof.nodes.items():
        qos = sum(k.startswith(QOS_OVERRIDES) for k in params)
        note = f"; {qos} qos_overrides handed to rclpy, which applies none (no publisher here takes QoS overrides)" if qos else ""
        print(f"{prof.fqns.get(name, name)}: {len(params) - qos} parameters OK (names, types, ranges){note}")
    print("files, episodes and policies named by the profile are checked when the nodes start (havln-robot launch)")
    return 0


#: benchmark → handler "module:function" (``havln-robot bench NAME``; listed by --help and the README).
BENCHES = {
    "sim": "havln_robot.bench.sim:main",
    "motion": "havln_robot.bench.motion:main",
    "policy": "havln_robot.bench.policy:main",
    "robot": "havln_robot.bench.robot:main",
    "console": "havln_robot.bench.console:main",
    "people": "havln_robot.bench.people:main",
    "perception": "havln_robot.bench.perception:main",
    "panorama": "havln_robot.bench.panorama:main",
    "scale": "havln_robot.bench.scale:main",
    "stairs": "havln_robot.bench.stairs:main",
    "safety": "havln_robot.bench.safety:main",
    "agreement": "havln_robot.bench.agreement:main",
    "link": "havln_robot.bench.link:main",
    "trials": "havln_robot.bench.trials:main",
    "all": "havln_robot.figures:main",
}

#: The README's command list is written from :data:`COMMANDS` between these markers (``havln-robot
#: help --markdown`` prints it; ``bench all --update-readme`` rewrites it; a test compares them).
COMMANDS_BEGIN, COMMANDS_END = "<!-- commands:begin -->", "<!-- commands:end -->"


def _bench_names() -> str:
    return " | ".join(BENCHES)


def _usage() -> str:
    width = max(len(c) for c in COMMANDS)
    lines = ["usage: havln-robot COMMAND [ARGS...]", "", "HA-VLN 2.0 policy on a Unitree Go2 with ROS 2.", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", f"benchmarks: havln-robot bench {_bench_names()}", "Run 'havln-robot COMMAND --help' for a command's options."]
    return "\n".join(lines)


def commands_markdown() -> str:
    """The README's command table: one row per :data:`COMMANDS` entry, then the benchmark names."""
    rows = ["| command | what it does |", "| --- | --- |"]
    bar = "\\|"  # a | inside a Markdown table cell
    rows += [f"| `havln-robot {name}` | {help_.replace('|', bar)} |" for name, (_, help_) in COMMANDS.items()]
    rows += ["", f"Benchmarks: `havln-robot bench {_bench_names()}`."]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``havln-robot COMMAND ...``; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["help", "--markdown"]:
        print(commands_markdown())
        return 0
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if argv[0] == "--version":
        from havln_robot import __version__

        print(__version__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        print(f"havln-robot: unknown command {cmd!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    return run_handler(COMMANDS[cmd][0], rest, f"havln-robot {cmd}")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that ``finally`` blocks
    (temporary files, open stores) run before the command exits 143 instead of dying mid-write."""


def _raise_terminated(signum: int, _frame: object) -> None:
    raise Terminated(signum)


def run_handler(target: str, argv: list[str], label: str) -> int:
    """Import ``"module:function"`` lazily and call it with ``argv``; returns its exit code.

    Ctrl-C returns 130, SIGTERM 143 (128 + the signal number), after the command's cleanup ran.
    Commands that stop in their own way on a signal (launch, demo) install their own handlers.
    """
    import signal

    mod_name, func = target.split(":")
    handler = getattr(importlib.import_module(mod_name), func)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return int(handler(argv) or 0)
    except Terminated:
        print(f"{label}: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print(f"{label}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`, which closed early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # the boundary: a user never gets a traceback for bad input
        if os.environ.get("HAVLN_DEBUG"):
            raise
        msg = _one_line(exc)
        if msg is None:
            raise
        print(f"{label}: {msg}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)


def _one_line(exc: BaseException) -> str | None:
    """A one-line message for errors caused by the user's input or environment; None for bugs."""
    import errno
    import sqlite3

    if isinstance(exc, OSError):
        from havln_robot.paths import os_error_text

        hint = ""
        if exc.errno in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EISDIR, errno.ENOTDIR, errno.EEXIST):
            hint = "; check the path and its permissions"
        elif exc.errno == errno.ENOSPC and not getattr(exc, "filename", None):
            hint = "; free some space or write elsewhere"
        return f"{os_error_text(exc)}{hint} (set HAVLN_DEBUG=1 for the traceback)"
    if isinstance(exc, sqlite3.DatabaseError):
        text = str(exc)
        if "not a database" in text or "malformed" in text:
            return f"the database is damaged or not a trial store ({text}); point --db at another file or restore a backup"
        if "locked" in text or "busy" in text:
            return f"the database is busy ({text}): another process is writing it; retry in a moment"
        return None  # a query bug, not the user's file
    if isinstance(exc, ValueError):  # every input error class of this project derives from ValueError
        ours = type(exc).__module__.startswith("havln_robot")
        return str(exc) if ours else f"{exc} (set HAVLN_DEBUG=1 for the traceback)"
    return None


if __name__ == "__main__":
    sys.exit(main())
