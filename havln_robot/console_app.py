"""``havln-robot console [PROFILE]``: the operator console in a browser.

With a profile (``config/sim.yaml``, ``config/go2.yaml``): starts that profile's nodes and a
console_node in one process (as ``havln-robot launch``; the profile's own ``console_node:``
section, if any, gives its parameters). Without one: only console_node, beside a stack started
elsewhere on the same ROS domain.

The console binds 127.0.0.1 unless ``--host`` says otherwise; off loopback it needs TLS
(``--tls-cert/--tls-key``) or ``--allow-plain-remote`` behind an SSH tunnel. The operator token
is printed once at start (or set with ``console_node.token`` in the profile / ``$HAVLN_CONSOLE_TOKEN``);
the page asks for it and keeps a session cookie -- the token is never part of a URL.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

from havln_robot.bringup import Bringup, fill_provenance, no_data_overrides
from havln_robot.config import ConfigError, Profile, load_profile, load_spec
from havln_robot.console.control import check_bind
from havln_robot.console.params import CONSOLE_PARAMS
from havln_robot.text import nonempty, number_in, path_arg


def console_params(profile: Profile | None, overrides: dict[str, Any]) -> dict[str, Any]:
    """console_node's parameters: the profile's section, then what it can learn from the profile
    (trial store, platform, episodes file, use_sim_time), then ``overrides``; validated."""
    base: dict[str, Any] = {}
    if profile is not None:
        base = dict(profile.nodes.get("console_node", {}))
        tl = profile.nodes.get("trial_logger_node", {})
        if tl:
            base.setdefault("db_path", tl.get("db_path", ""))
            base.setdefault("platform", tl.get("platform", "sim"))
        sim = profile.nodes.get("sim_node", {})
        if sim.get("scene_source") != "builtin" and sim.get("episodes_file"):
            from havln_robot.sim.session import missing_episode_data

            if missing_episode_data(sim) is None:
                base.setdefault("episodes_file", str(sim["episodes_file"]).replace("$DATA", str(_data_dir())))
    token = os.environ.get("HAVLN_CONSOLE_TOKEN", "")
    if token and "token" not in overrides:
        overrides = {**overrides, "token": token}
    return load_spec("console_node").validate({**base, **overrides}, where="console_node")


def _data_dir() -> Path:
    from havln_robot.paths import data_dir

    return data_dir()


def build_profile(
    profile_path: str | None, overrides: dict[str, Any], log: Any = None, node_overrides: dict[str, dict[str, Any]] | None = None
) -> Profile:
    """The profile to run (with the no-data fallback of ``havln-robot launch``) plus console_node;
    ``node_overrides`` (node → {param: value}) go over the profile's other nodes."""
    if profile_path is None:
        prof = Profile(path=Path("console"), nodes={})
    else:
        node_overrides = dict(node_overrides or {})
        prof = load_profile(profile_path, node_overrides)
        fallback, warning = no_data_overrides(prof)
        if fallback:
            for node, params in fallback.items():
                node_overrides[node] = {**params, **node_overrides.get(node, {})}
            prof = load_profile(profile_path, node_overrides)
        if warning and log is not None:
            log(f"[console] WARN: {warning}")
        fill_provenance(prof)
    params = console_params(prof if profile_path else None, overrides)
    why = check_bind(params["host"], params["token"] or "generated at start", bool(params["tls_certfile"]), params["allow_plain_remote"])
    if why:
        raise ConfigError(f"console_node: {why}")
    prof.nodes["console_node"] = params
    return prof


def start(
    profile_path: str | None,
    overrides: dict[str, Any] | None = None,
    log: Any = None,
    node_overrides: dict[str, dict[str, Any]] | None = None,
) -> Bringup:
    """Build and start the stack with a console; ``bringup.nodes['console_node'].url`` is the page.
    ``overrides``: console_node's parameters; ``node_overrides``: the other nodes' (tests, bench).

    Raises:
        ConfigError: bad profile / parameters, port taken, unsafe bind (one line).
    """
    prof = build_profile(profile_path, dict(overrides or {}), log, node_overrides)
    return Bringup(prof, log=log, check_graph=profile_path is not None).start()


def main(argv: list[str] | None = None) -> int:
    """``havln-robot console [PROFILE] [--host H] [--port P] [--duration S]``."""
    ap = argparse.ArgumentParser(
        prog="havln-robot console", description="Serve the operator console (one page) for a running or started stack."
    )
    ap.add_argument(
        "profile",
        type=path_arg,
        nargs="?",
        help="start this profile's nodes too (config/sim.yaml, config/go2.yaml); omit to join a running stack",
    )
    ap.add_argument(
        "--host",
        type=nonempty("a bind address such as 127.0.0.1"),
        default=None,
        help="bind address (default 127.0.0.1; anything else needs TLS or --allow-plain-remote)",
    )
    ap.add_argument("--port", type=CONSOLE_PARAMS.arg_type("port"), default=None, help="TCP port (default 8765; 0 = any free port)")
    ap.add_argument("--tls-cert", type=path_arg, default=None, help="PEM certificate: serve HTTPS")
    ap.add_argument("--tls-key", type=path_arg, default=None, help="PEM key of --tls-cert")
    ap.add_argument("--allow-plain-remote", action="store_true", help="bind off loopback without TLS (only behind an SSH tunnel or VPN)")
    ap.add_argument(
        "--absent-pause",
        type=CONSOLE_PARAMS.arg_type("absent_pause_s", unit="s"),
        default=None,
        metavar="S",
        help="pause the agent when the operator in control is gone S s (default 0 = off)",
    )
    ap.add_argument("--duration", type=number_in(0, unit="s", above=True), default=None, help="stop after this many seconds")
    a = ap.parse_args(argv)
    over: dict[str, Any] = {}
    for key, val in (
        ("host", a.host),
        ("port", a.port),
        ("tls_certfile", a.tls_cert),
        ("tls_keyfile", a.tls_key),
        ("absent_pause_s", a.absent_pause),
    ):
        if val is not None:
            over[key] = val
    if a.allow_plain_remote:
        over["allow_plain_remote"] = True
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    try:
        bringup = start(a.profile, over, log)
    except ConfigError as exc:
        print(f"havln-robot console: {exc}", file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: bringup.stop())
    try:
        log(f"[console] open {bringup.nodes['console_node'].url} (Esc = E-stop, space = Stop); Ctrl-C to stop")
        bringup.spin_until(timeout=a.duration)
    finally:
        bringup.shutdown()
    return 1 if bringup.failed else 0


if __name__ == "__main__":
    sys.exit(main())
