"""Literal text matching: what the user typed, found case-insensitively, whitespace-flexibly.

The needle is data, never a pattern: ``a.b*`` finds the five characters ``a.b*``. It is cut
at whitespace into words; each word is matched literally (``re.escape``) and case-insensitively
(Unicode simple case folding), and the run of whitespace between two words matches any
non-empty run of whitespace in the text (spaces, tabs, newlines, other Unicode spaces).
Leading and trailing whitespace of the needle does not count. A needle with no word at all
is refused with ``InvalidQuery``: it would match everything, which no one means.

``word_start=True`` also asks that a match start at a word: a needle beginning with a letter
or digit does not match right after another letter or digit (``TTL`` is not found inside
``settle``, ``deploy`` is still found in ``deployment``). CJK characters, kana and hangul do
not count as such neighbours (those scripts do not separate words with spaces).
"""

from __future__ import annotations

import re

from harness.errors import InvalidQuery

__all__ = ["TextNeedle"]

_WORDISH = re.compile(r"[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
"""A letter, digit or underscore of a script that separates its words with spaces."""


class TextNeedle:
    """A compiled literal needle: ``needle.search(text)`` finds it, ``needle.matches(text)``
    tells whether it is there."""

    __slots__ = ("_pattern", "text")

    text: str

    def __init__(self, text: str, *, word_start: bool = False) -> None:
        if not isinstance(text, str):
            raise InvalidQuery(f"text must be a string, got {type(text).__name__}")
        words = text.split()
        if not words:
            raise InvalidQuery(f"text {text!r} holds no word to look for (it is empty or only whitespace)")
        self.text = text
        # ``\s++`` is possessive: the next word starts with a non-space, so giving whitespace back
        # can never help, and a long run of spaces costs one pass instead of a backtracking search.
        body = r"\s++".join(re.escape(word) for word in words)
        if word_start and _WORDISH.match(words[0]):
            body = rf"(?<!{_WORDISH.pattern}){body}"
        self._pattern = re.compile(body, re.IGNORECASE)

    def search(self, text: str) -> re.Match[str] | None:
        """The first place ``text`` holds the needle, or ``None``."""
        return self._pattern.search(text)

    def matches(self, text: str) -> bool:
        """Whether ``text`` holds the needle."""
        return self._pattern.search(text) is not None

    def __repr__(self) -> str:
        return f"TextNeedle({self.text!r})"
