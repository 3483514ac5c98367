"""``havln-robot bench sim|motion|policy|robot|console|people|perception|panorama|scale|stairs|agreement|link|all``: dispatch to each subsystem's benchmark.

``bench all`` (:mod:`havln_robot.figures`) runs them all and prints the README's figure tables.
"""

from __future__ import annotations

import sys

from havln_robot.cli import BENCHES  # the one table of benchmarks, beside the command table


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
