"""Strict YAML reading of user files (profiles, campaign plans): PyYAML's safe loader, plus

* duplicate keys refused with both line numbers (plain PyYAML keeps the last one silently);
* aliases (``*name``) bounded: PyYAML expands them without limit, so a 645-byte file of nested
  aliases built a 392 MB value in 32 s (a "billion laughs"); a document whose aliases add more than
  :data:`MAX_ALIAS_EXPANSION` values, or refer to an enclosing node, is refused before it is built
  (a merge key ``<<: *base`` and a few shared values stay fine);
* a size cap: at most ``max_bytes + 1`` bytes are ever read, so a file that is a symlink to an
  endless stream (``/dev/zero``, a FIFO someone writes forever) cannot eat the memory.

Pure Python. Errors are :class:`YamlFileError` with one line naming the file (and line) and the fix.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

#: Largest YAML file read, bytes: profiles and plans are a few KiB.
MAX_YAML_BYTES = 1 << 20


#: Most values that aliases may add to a document when it is expanded (each alias counts the size of
#: what it names). A plain document (no aliases) is never refused by this.
MAX_ALIAS_EXPANSION = 10_000


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a composed document whose aliases expand to more than :data:`MAX_ALIAS_EXPANSION` extra
    values or form a cycle. Sizes are memoised per node, so this is linear in the written document.

    Raises:
        yaml.composer.ComposerError: the first node where the limit is passed, or the recursive one.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()
    distinct: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise yaml.composer.ComposerError(
                None, None, "an alias refers to a node that contains it (a recursive structure); write the value out", node.start_mark
            )
        active.add(key)
        distinct.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        active.discard(key)
        sizes[key] = total
        if total - len(distinct) > MAX_ALIAS_EXPANSION:
            raise yaml.composer.ComposerError(
                None,
                None,
                f"aliases expand this value to more than {MAX_ALIAS_EXPANSION} extra values (an alias bomb?); write it out or drop the aliases",
                node.start_mark,
            )
        return total

    size(root)


class YamlFileError(ValueError):
    """A YAML file cannot be used; one-line message (file, line, problem, fix)."""


class StrictSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping with the same key twice (merge keys ``<<`` excepted)
    and any alias (``*name``): every YAML file the project reads goes through it."""

    def get_single_node(self) -> Any:
        """Compose the document, then refuse it when its aliases expand past :data:`MAX_ALIAS_EXPANSION`
        values or refer to themselves -- before anything is constructed.

        Raises:
            yaml.composer.ComposerError: too large an expansion or a recursive alias (with the mark).
        """
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # unhashable key: SafeConstructor reports it
                continue
            line = key_node.start_mark.line + 1
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r}, first at line {first}; keep one of them",
                    key_node.start_mark,
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_text_capped(path: str | os.PathLike[str], max_bytes: int = MAX_YAML_BYTES) -> str:
    """The text of ``path`` (UTF-8), refusing files over ``max_bytes``; reads at most ``max_bytes + 1`` bytes.

    Raises:
        FileNotFoundError: no such file.
        YamlFileError: larger than the cap, not UTF-8, or unreadable (one line).
    """
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise
    except OSError as exc:
        from havln_robot.paths import input_file_problem

        raise YamlFileError(f"{p}: {input_file_problem(p) or f'cannot read ({exc.strerror})'}; give a file") from None
    if len(data) > max_bytes:
        raise YamlFileError(
            f"{p}: larger than {max_bytes // 1024} KiB -- not a profile/plan (a symlink to a device or a log?); give the YAML file"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlFileError(f"{p}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def load_yaml_file(path: str | os.PathLike[str], max_bytes: int = MAX_YAML_BYTES) -> Any:
    """Parse a YAML file strictly (:class:`StrictSafeLoader`, size cap).

    Raises:
        FileNotFoundError: no such file (callers word their own hint).
        YamlFileError: too large, unreadable, invalid YAML or a duplicate key -- one line with the
            line/column where it applies.
    """
    p = Path(path)
    text = read_text_capped(p, max_bytes)
    try:
        return yaml.load(text, Loader=StrictSafeLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1} column {mark.column + 1}:" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlFileError(f"{p}:{where} invalid YAML ({problem})") from None
