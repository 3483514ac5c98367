"""``havln-robot bench sim|motion|policy|robot|console|people|perception|panorama|scale|stairs|agreement|all``: dispatch to each subsystem's benchmark.

``bench all`` (:mod:`havln_robot.figures`) runs them all and prints the README's figure tables.
"""

from __future__ import annotations

import sys

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
    "agreement": "havln_robot.bench.agreement:main",
    "all": "havln_robot.figures:main",
}


def _usage() -> str:
    return f"usage: havln-robot bench {{{'|'.join(BENCHES)}}} [ARGS...]   ('havln-robot bench NAME --help' for a bench's options)"


def main(argv: list[str]) -> int:
    """Run ``havln-robot bench NAME [ARGS...]``; returns the exit code (2 for a missing or unknown NAME)."""
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] not in BENCHES:
        print(f"havln-robot bench: unknown benchmark {argv[0]!r}; choose one of {', '.join(BENCHES)}\n{_usage()}", file=sys.stderr)
        return 2
    from havln_robot.cli import run_handler

    return run_handler(BENCHES[argv[0]], argv[1:], f"havln-robot bench {argv[0]}")
