"""Small helpers for user-facing text (counts with the right plural, command-line numbers, untrusted
text made safe for a terminal, a Markdown cell or a CSV cell)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from havln_robot.quoting import QUOTE_CHARS, quote  # noqa: F401 - re-exported: text.quote is the helper to use
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


def number_in(
    lo: float | None = None,
    hi: float | None = None,
    *,
    integer: bool = False,
    unit: str = "",
    above: bool = False,
) -> Callable[[str], float]:
    """argparse ``type=`` for a finite number (or an integer) inside a range.

    Every numeric command-line option goes through this or :func:`finite_float` (a test walks
    every parser and refuses a bare ``float``/``int``): a bare ``float`` takes ``nan``/``inf``, and
    neither takes a physically absurd value (a goal 1e308 m away, -5 episodes) until something
    downstream overflows or loops.

    Args:
        lo: lower bound, inclusive unless ``above`` (None: unbounded).
        hi: upper bound, inclusive (None: unbounded).
        integer: parse as an int (``"3.0"`` is refused).
        unit: appended to the bounds in the error ("m", "s", "ms", ...).
        above: ``lo`` itself is excluded (a strictly positive duration).

    Returns:
        A callable ``str -> float | int`` raising ``argparse.ArgumentTypeError`` with the range
        in the message (argparse prefixes it with the flag's name).
    """
    import argparse
    import math

    u = f" {unit}" if unit else ""
    if lo is not None and hi is not None:
        want = f"more than {lo:g} and at most {hi:g}{u}" if above else f"from {lo:g} to {hi:g}{u}"
    elif lo is not None:
        want = f"{'more than' if above else 'at least'} {lo:g}{u}"
    elif hi is not None:
        want = f"at most {hi:g}{u}"
    else:
        want = "finite"

    def parse(text: str) -> float:
        try:
            value: float = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if integer else 'a number'}: {text!r}") from None
        if integer and abs(value) > 2**63 - 1:  # past int64: math.isfinite() would overflow, ROS parameters refuse it
            shown = f"{text[:20]!r}{'...' if len(text) > 20 else ''}"
            raise argparse.ArgumentTypeError(f"{shown} is beyond a 64-bit integer: give a number {want} and at most {2**63 - 1}")
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
        too_low = lo is not None and (value <= lo if above else value < lo)
        if too_low or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"{text!r} is out of range: give a number {want}")
        return value

    parse.__name__ = "integer" if integer else "number"
    return parse


def path_arg(text: str) -> str:
    """argparse ``type=`` for an option that names a file or folder: an empty path is refused.

    ``--json ''`` was silently ignored (``if args.json:``), ``--connectivity ''`` read as the current
    folder, ``--episodes ''`` as the default file: every file and folder option takes this (a test
    walks every parser), so ``""`` is a one-line error naming the flag.

    Raises:
        argparse.ArgumentTypeError: ``text`` is empty (argparse names the flag).
    """
    import argparse

    if not text:
        raise argparse.ArgumentTypeError("an empty path; give a file or folder name (leave the option out for its default)")
    return text


def nonempty(what: str) -> Callable[[str], str]:
    """argparse ``type=`` for a selection, a filter or a name where an empty value would silently mean
    "all" or "none" (``replay --episodes ''`` replayed every episode, ``data check --only ''`` checked
    everything, ``report --campaign ''`` reported every campaign): blank text or commas alone are refused.

    Args:
        what: what to give instead, for the message (``"ids a,b,c or a count N"``).

    Returns:
        A callable ``str -> str`` raising ``argparse.ArgumentTypeError`` (argparse names the flag).
    """
    import argparse

    def parse(text: str) -> str:
        if not text.strip(" \t,"):
            raise argparse.ArgumentTypeError(f"{text!r} is empty; give {what} (leave the option out for its default)")
        return text

    parse.__name__ = "text"
    return parse


#: Escapes of the control characters a person knows by sight.
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Unicode bidirectional controls: they reorder what a terminal shows (a "Trojan Source" line).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def terminal_safe(text: object) -> str:
    """Untrusted text (an instruction from any publisher, a reason or note typed by anyone, a value read
    from a database or a file) made safe to print on a terminal or in a log line: every control
    character -- C0 (ESC, BEL, CR, LF, backspace, ...), DEL, C1 (``\\x80``-``\\x9f``) and the Unicode
    bidirectional overrides -- is shown escaped (``\\x1b``, ``\\n``, ``\\u202e``), so the text cannot
    move the cursor, retitle the window, recolour, erase or fake lines. Backslashes are kept as they are.

    Args:
        text: anything; ``str(text)`` is escaped (``None`` gives ``"None"``).

    Returns:
        One printable line.
    """
    s = str(text)
    if s.isprintable():
        return s
    out = []
    for ch in s:
        o = ord(ch)
        if ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif o < 0x20 or 0x7F <= o <= 0x9F:
            out.append(f"\\x{o:02x}")
        elif ch in _BIDI or unicodedata.category(ch) in _ESCAPED_CATEGORIES:
            out.append(f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
        else:
            out.append(ch)
    return "".join(out)


#: Unicode categories :func:`terminal_safe` escapes besides the C0/C1 controls: format characters (Cf:
#: bidi overrides, zero-width space / joiners, word joiner, BOM, soft hyphen...), line / paragraph
#: separators (U+2028, U+2029: a new line on some terminals) and lone surrogates.
_ESCAPED_CATEGORIES = frozenset({"Cf", "Zl", "Zp", "Cs"})


def is_blank(text: object) -> bool:
    """True when ``text`` shows nothing: only whitespace, control characters (Cc), format characters
    (Cf: zero-width space U+200B, word joiner U+2060, bidi marks, BOM...) or separators.

    The one rule for "an empty instruction" (agent_node, the trial logger, ``havln-robot instruct``,
    the console): ``"\u200b"`` is as empty as ``"  "``; it must neither start an episode nor open a trial.
    """
    return not any(
        not ch.isspace() and ch not in _BLANK_LETTERS and unicodedata.category(ch) not in _INVISIBLE_CATEGORIES for ch in str(text)
    )


#: Categories of characters that show nothing (see :func:`is_blank`).
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Cs", "Cn"})
#: Characters of other categories that render as nothing: combining grapheme joiner, Hangul fillers,
#: the blank Braille pattern.
_BLANK_LETTERS = frozenset("\u034f\u115f\u1160\u3164\uffa0\u2800")


def md_cell(text: object) -> str:
    """Untrusted text made safe for one Markdown table cell: :func:`terminal_safe` (so a newline cannot
    end the row) and ``|`` escaped as ``\\|`` (so it cannot split the cell).

    Returns:
        One line to put between two ``|``.
    """
    return terminal_safe(text).replace("|", "\\|")


#: First characters that make a spreadsheet (Excel, LibreOffice, Google Sheets) read a cell as a formula,
#: the ASCII ones and their fullwidth forms.
_FORMULA_LEAD = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")


def csv_text(text: object) -> str:
    """Untrusted free text (a note, a reason, an instruction, an id or scan from a data file, a value
    from a spec) made safe for one CSV cell, the one rule of every CSV the project writes:

    * every control character is escaped as :func:`terminal_safe` shows it (``\\n``, ``\\x1b``,
      ``\\x00``): a newline or CR inside a cell is legal CSV, but one row per line is what ``grep``,
      ``wc -l`` and line-based tools expect, and ESC/NUL reach the terminal of whoever runs ``cat`` on it;
    * a cell that starts with ``=``, ``+``, ``-`` or ``@`` (or a fullwidth form) gets a ``'`` in front,
      so a spreadsheet opens it as text, not as a formula (CSV injection).

    Only for free text: numbers are written as numbers (a negative goal coordinate stays ``-1.5``).

    Args:
        text: anything; None gives ``""`` (an empty cell, as ``csv.writer`` writes None).

    Returns:
        The cell's text.
    """
    if text is None:
        return ""
    s = terminal_safe(text)
    return "'" + s if s[:1] in _FORMULA_LEAD else s


#: Typographic punctuation people type (or their editors substitute) and its ASCII form, applied after
#: NFKC (which already folds full-width forms such as U+FF0C to ``,``): quotes and apostrophes
#: (U+2018/2019/201A/201B/2032 -> ``'``; U+201C/201D/201E/201F/2033/00AB/00BB -> ``"``) and dashes /
#: minus signs (U+2010..2015, U+2212 -> ``-``).
_TYPOGRAPHIC = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u02bc", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    }
)


def normalize_instruction(text: str) -> str:
    """The one normalisation of an instruction before it is tokenised, shown or stored: Unicode NFKC
    (full-width letters and punctuation to their usual forms, ligatures split), typographic quotes,
    apostrophes and dashes to their ASCII forms (``you’ll`` -> ``you'll``), format characters (Cf:
    zero-width space / joiners, soft hyphen, bidi marks, BOM) removed, runs of white space to one
    space, ends stripped.

    Args:
        text: the instruction as typed or published.

    Returns:
        The normalised text ("" when nothing visible is left; see :func:`is_blank`).
    """
    s = unicodedata.normalize("NFKC", str(text)).translate(_TYPOGRAPHIC)
    s = "".join(ch for ch in s if unicodedata.category(ch) != "Cf")
    return " ".join(s.split())
