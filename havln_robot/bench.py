"""``havln-robot bench sim|motion|policy|robot|perception``: dispatch to each subsystem's benchmark."""

from __future__ import annotations

import sys

BENCHES = {
    "sim": "havln_robot.sim.bench:main",
    "motion": "havln_robot.motion.bench:main",
    "policy": "havln_robot.policy.bench:main",
    "robot": "havln_robot.robot.bench:main",
    "perception": "havln_robot.perception.bench:main",
}


def main(argv: list[str]) -> int:
    """Run ``havln-robot bench NAME [ARGS...]``; returns the exit code."""
    if not argv or argv[0] not in BENCHES:
        print(f"usage: havln-robot bench {{{'|'.join(BENCHES)}}} [ARGS...]", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    from havln_robot.cli import run_handler

    return run_handler(BENCHES[argv[0]], argv[1:], f"havln-robot bench {argv[0]}")
