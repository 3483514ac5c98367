"""HA-R2R instruction tokenizer and the CMA instruction-embedding table (pure Python + numpy).

The HA-VLN-CMA policy reads ``instruction_tokens``: word ids from the ordered 5,079-word HA-R2R
vocabulary (``<pad>`` = 0, ``<unk>`` = 1), padded with 0 to 200 tokens (VLN-CE
``INSTRUCTION_ENCODER.max_length``). The vocabulary file carries a fingerprint (its ``sha256``
field = sha256 of the compact JSON ``separators=(',', ':')`` of ``word_list``) that is checked on load.

Tokenisation (matches the vocabulary: it contains ``'``, ``,``, ``-``, ``.`` and hyphenated words such
as ``180-degree``): :func:`havln_robot.text.normalize_instruction` (NFKC, typographic quotes and dashes
to ASCII, format characters removed), lower-case; split on runs of characters that are neither word characters nor ``-``
(the VLN-CE / habitat ``SENTENCE_SPLIT_REGEX`` ``([^\\w-]+)``); a punctuation run becomes one token per
non-space character; unknown words map to ``<unk>``.

Embedding table: ``cma_instruction_embeddings_5401x50.json.gz`` is the 5401x50 lookup of the released
checkpoint (row 0 zeros). It has 322 more rows than the vocabulary has words; see
``docs/policy.md`` ("Vocabulary vs embedding rows") -- token ids index it directly, as the
released checkpoint did, so rows 5079..5400 are never used.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from havln_robot import jsonio
from havln_robot.jsonio import load_json_file
from havln_robot.policy.api import PolicyError
from havln_robot.text import normalize_instruction

PAD_INDEX = 0
UNK_INDEX = 1
MAX_LENGTH = 200
"""Token budget per instruction (VLN-CE ``INSTRUCTION_ENCODER.max_length``)."""
VOCAB_SIZE = 5079
"""Words in the HA-R2R vocabulary (``ha_r2r_instruction_vocab.json``)."""
EMBEDDING_ROWS = 5401
"""Rows of the HA-VLN-CMA instruction embedding (HA-VLN ``INSTRUCTION_ENCODER.vocab_size``)."""
EMBEDDING_DIM = 50
"""Embedding width (VLN-CE ``INSTRUCTION_ENCODER.embedding_size``, GloVe-50)."""
VOCAB_FILE = "challenge/ha_r2r_instruction_vocab.json"
EMBEDDINGS_FILE = "challenge/cma_instruction_embeddings_5401x50.json.gz"

_SPLIT = re.compile(r"([^\w-]+)")
_WORD = re.compile(r"[\w-]+")


def tokenize(sentence: str) -> list[str]:
    """Split an instruction into lower-case tokens (see module docstring for the rules)."""
    out: list[str] = []
    for piece in _SPLIT.split(normalize_instruction(sentence).lower()):
        piece = piece.strip()
        if not piece:
            continue
        if _WORD.fullmatch(piece):
            out.append(piece)
        else:
            out.extend(c for c in piece if not c.isspace())
    return out


def fingerprint(word_list: Sequence[str]) -> str:
    """sha256 hex digest of the compact JSON of ``word_list`` (the vocabulary file's ``sha256`` field)."""
    return hashlib.sha256(jsonio.dumps(list(word_list), separators=(",", ":")).encode("utf-8")).hexdigest()


class Vocabulary:
    """An ordered word list with ``<pad>`` = 0 and ``<unk>`` = 1.

    Args:
        word_list: the ordered words; ``word_list[0]`` must be ``<pad>`` and ``word_list[1]`` ``<unk>``.

    Raises:
        PolicyError: the list does not start with ``<pad>``, ``<unk>`` or repeats a word.
    """

    def __init__(self, word_list: Iterable[str]):
        words = list(word_list)
        if len(words) < 2 or words[0] != "<pad>" or words[1] != "<unk>":
            raise PolicyError("vocabulary word_list must start with '<pad>', '<unk>' (VLN-CE VocabDict order)")
        self.words: list[str] = words
        self.index: dict[str, int] = {w: i for i, w in enumerate(words)}
        if len(self.index) != len(words):
            raise PolicyError("vocabulary word_list repeats a word; regenerate it")

    def __len__(self) -> int:
        return len(self.words)

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None, verify: bool = True) -> Vocabulary:
        """Load the HA-R2R vocabulary JSON (``{"word_list": [...], "sha256": "..."}``).

        Args:
            path: the JSON file; default ``data_dir()/challenge/ha_r2r_instruction_vocab.json``.
            verify: check the ``sha256`` fingerprint.

        Raises:
            PolicyError: file missing/unreadable, wrong schema, or fingerprint mismatch.
        """
        p = Path(path) if path is not None else default_vocab_path()
        try:
            doc = load_json_file(p)
        except FileNotFoundError:
            raise PolicyError(f"vocabulary {p} not found; set HAVLN_DATA to the HA-VLN data folder") from None
        except (OSError, ValueError) as exc:
            raise PolicyError(f"vocabulary {p} is not readable JSON ({exc}); restore the file") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("word_list"), list):
            raise PolicyError(f"vocabulary {p}: expected an object with a 'word_list' list")
        words = doc["word_list"]
        if verify:
            want = doc.get("sha256")
            got = fingerprint(words)
            if want != got:
                raise PolicyError(
                    f"vocabulary {p}: fingerprint mismatch (sha256 field {want!r}, word_list hashes to {got}); restore the original file"
                )
        return cls(words)

    def encode(self, instruction: str, max_length: int = MAX_LENGTH, pad: bool = True) -> np.ndarray:
        """Token ids of ``instruction``: int64 (max_length,) zero-padded (or unpadded if ``pad=False``).

        Longer instructions are truncated to ``max_length`` tokens (as VLN-CE does).
        """
        ids = [self.index.get(t, UNK_INDEX) for t in tokenize(instruction)][:max_length]
        if pad:
            ids = ids + [PAD_INDEX] * (max_length - len(ids))
        return np.asarray(ids, dtype=np.int64)

    def unknown_words(self, instruction: str) -> tuple[list[str], int]:
        """The words of ``instruction`` outside this vocabulary (they become ``<unk>``), in order, and
        how many words it has; punctuation tokens are not words."""
        words = [t for t in tokenize(instruction) if _WORD.fullmatch(t)]
        return [w for w in words if w not in self.index], len(words)

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Words for ``ids``, stopping at the first ``<pad>``."""
        out = []
        for i in ids:
            if int(i) == PAD_INDEX:
                break
            out.append(self.words[int(i)])
        return out


def default_vocab_path() -> Path:
    """``data_dir()/challenge/ha_r2r_instruction_vocab.json``."""
    from havln_robot.paths import data_dir

    return data_dir() / VOCAB_FILE


def default_embeddings_path() -> Path:
    """``data_dir()/challenge/cma_instruction_embeddings_5401x50.json.gz``."""
    from havln_robot.paths import data_dir

    return data_dir() / EMBEDDINGS_FILE


def load_embeddings(path: str | os.PathLike[str] | None = None) -> np.ndarray:
    """Load the instruction embedding table: float32 (rows, 50), row 0 (``<pad>``) zeros.

    Raises:
        PolicyError: missing/unreadable file, not a rectangular list of 50-float rows, or row 0 not zero.
    """
    p = Path(path) if path is not None else default_embeddings_path()
    try:
        rows = load_json_file(p)
    except FileNotFoundError:
        raise PolicyError(f"embedding table {p} not found; set HAVLN_DATA to the HA-VLN data folder") from None
    except (OSError, ValueError, EOFError) as exc:
        raise PolicyError(f"embedding table {p} is not readable gzip JSON ({exc}); restore the file") from None
    try:
        table = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise PolicyError(f"embedding table {p}: rows are not all lists of numbers") from None
    if table.ndim != 2 or table.shape[1] != EMBEDDING_DIM:
        raise PolicyError(f"embedding table {p}: expected (rows, {EMBEDDING_DIM}), got {table.shape}")
    if np.any(table[0] != 0):
        raise PolicyError(f"embedding table {p}: row 0 (<pad>) must be zeros")
    return table


@dataclass(frozen=True)
class VocabularyCheck:
    """How much of an instruction a policy's vocabulary covers (:func:`check_instruction`).

    Attributes:
        words: words in the instruction (punctuation excluded). unknown: the words outside the
            vocabulary, in order, each once. rate: unknown word occurrences / words (0.0 for no words).
        max_rate: the threshold it was judged against. refused: ``rate > max_rate``.
    """

    words: int
    unknown: tuple[str, ...]
    rate: float
    max_rate: float

    @property
    def refused(self) -> bool:
        return self.words > 0 and self.rate > self.max_rate

    def message(self) -> str:
        """One line naming the unknown words (for a refusal or a log)."""
        shown = ", ".join(repr(w) for w in self.unknown[:12]) + (", ..." if len(self.unknown) > 12 else "")
        return (
            f"instruction refused: {self.rate:.0%} of its {self.words} words are outside the policy's vocabulary "
            f"(> max_unknown_word_rate {self.max_rate:g}): {shown}; give it in English with the words of the HA-R2R "
            "instructions"
        )


def check_instruction(vocab: Vocabulary, instruction: str, max_rate: float) -> VocabularyCheck:
    """Judge ``instruction`` against ``vocab``: a policy reading mostly ``<unk>`` does not understand it.

    Args:
        vocab: the policy's vocabulary.
        instruction: the text (normalised here as by :func:`tokenize`).
        max_rate: the largest share of unknown words accepted (agent_node ``max_unknown_word_rate``).
    """
    unknown, n = vocab.unknown_words(instruction)
    return VocabularyCheck(n, tuple(dict.fromkeys(unknown)), (len(unknown) / n) if n else 0.0, float(max_rate))
