"""Small helpers for user-facing text (counts with the right plural, command-line numbers)."""

from __future__ import annotations

from havln_robot.records import refused_before_start

#: Irregular plurals of the nouns this project counts.
_IRREGULAR = {"person": "people"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 trial"``, ``"3 trials"``, ``"1 person"``, ``"0 people"``: ``n`` followed by the right form of ``word``.

    Args:
        n: the count.
        word: the singular noun.
        many: the plural when it is neither irregular nor ``word + "s"``.
    """
    form = word if n == 1 else (many or _IRREGULAR.get(word) or word + "s")
    return f"{n} {form}"


def outcome_label(outcome: str, detail: str = "") -> str:
    """How to show a motion outcome to a person.

    motion_node's result record says ``collision`` with detail ``blocked before start: ...`` when
    it refused to start a move (nothing was touched); that is shown as ``refused``
    (:func:`havln_robot.records.refused_before_start`, the one rule).
    """
    return "refused" if refused_before_start(outcome, detail) else str(outcome)


def finite_float(text: str) -> float:
    """argparse ``type=`` for a real number: ``float()`` also accepts ``nan`` and ``inf``, which slip
    through range checks such as ``x <= 0`` (``nan`` compares false) and then run forever or print
    nonsense figures.

    Raises:
        argparse.ArgumentTypeError: not a number, or not finite (argparse names the flag).
    """
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value
