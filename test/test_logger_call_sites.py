"""Rclpy keys a logger call by its call site and raises
``ValueError: Logger severity cannot be changed between calls`` when one site logs at two
severities. No module may pick the severity at run time at one call site (a dict of logger
methods, ``(log.warning if c else log.info)(...)``, ``log = logger.info if c else logger.error``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LEVELS = {"debug", "info", "warning", "warn", "error", "fatal"}


def _is_level_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in LEVELS


def dynamic_severity_sites(tree: ast.AST) -> list[int]:
    """Line numbers where a logger method is chosen by an expression (dict, conditional)."""
    lines = []
    for n in ast.walk(tree):
        if isinstance(n, ast.IfExp) and (_is_level_attr(n.body) or _is_level_attr(n.orelse)):
            lines.append(n.lineno)
        elif isinstance(n, ast.Dict) and sum(_is_level_attr(v) for v in n.values) >= 2:
            lines.append(n.lineno)
    return lines


def test_the_check_finds_the_old_camera_node_pattern():
    old = 'def _log(self, level, text):\n    logger = self.get_logger()\n    {"info": logger.info, "warn": logger.warning}.get(level, logger.error)(text)\n'
    assert dynamic_severity_sites(ast.parse(old)) == [3]
    assert dynamic_severity_sites(ast.parse("log = lg.info if ok else lg.error\nlog('x')\n")) == [1]


@pytest.mark.parametrize("path", sorted((REPO / "havln_robot").rglob("*.py")) + sorted((REPO / "launch").glob("*.py")), ids=str)
def test_no_logger_call_site_changes_severity(path):
    sites = dynamic_severity_sites(ast.parse(path.read_text()))
    assert not sites, f"{path.relative_to(REPO)}:{sites}: one logger call per severity (rclpy raises on a severity change)"
