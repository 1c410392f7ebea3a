"""Words to token ids: the course's tokenizer rule and a fixed vocabulary.

The rule (text, line 472): lower case, split on spaces, drop punctuation.
There are no PAD, UNK or EOS tokens, so a word outside the vocabulary is an
error that names the word.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from seqgrad.errors import SeqgradTypeError, SeqgradValueError

_PUNCTUATION = str.maketrans("", "", string.punctuation + "«»—–…“”„’")


def tokenize(text: str) -> list[str]:
    """Lower case, split on whitespace, strip punctuation; empty pieces are dropped."""
    if not isinstance(text, str):
        raise SeqgradTypeError("text", text, "a string of words")
    words = [w.translate(_PUNCTUATION) for w in text.lower().split()]
    return [w for w in words if w]


@dataclass(frozen=True)
class Vocabulary:
    """An ordered list of word types; a word's id is its position."""

    words: tuple[str, ...]

    def __post_init__(self):
        if len(set(self.words)) != len(self.words):
            raise SeqgradValueError("words", self.words, "distinct word types")

    @property
    def K(self) -> int:
        return len(self.words)

    def ids(self, words: list[str]) -> list[int]:
        """Token ids of ``words``; an unknown word is a clear error naming it."""
        index = {w: k for k, w in enumerate(self.words)}
        out = []
        for w in words:
            if w not in index:
                raise SeqgradValueError("word", w, "a word of the vocabulary: " + ", ".join(self.words))
            out.append(index[w])
        return out

    def encode(self, text: str) -> list[int]:
        """``ids(tokenize(text))``; the text must hold at least one word."""
        words = tokenize(text)
        if not words:
            raise SeqgradValueError("text", text, "at least one word")
        return self.ids(words)

    def decode(self, ids) -> list[str]:
        """The words of token ids ``0 .. K-1``; any other id is a clear error naming it."""
        out = []
        for k in ids:
            if isinstance(k, bool) or not float(k).is_integer() or not 0 <= int(k) < self.K:
                raise SeqgradValueError("ids", k, f"token ids from 0 to {self.K - 1} (vocabulary size K={self.K})")
            out.append(self.words[int(k)])
        return out
