"""Folding text for the index, and the index terms of a query.

The index must find every event the query layer's text match finds (``TextNeedle``:
literal, case-insensitive by Python's ``re.IGNORECASE``, whitespace-flexible). It does so
with trigrams of *folded* text: ``fold_text`` maps each character to one representative of
its ``re.IGNORECASE`` class (the simple lowercase, then the smallest of the extra
equivalents ``re`` knows, so ``ſ``, ``s`` and ``S`` all become ``s``), one character for
one. When a needle's word matches a stretch of text, the two are equal character by
character after folding, so the folded word is a substring of the folded text and every
trigram of it is a trigram of the text. The index therefore returns a superset of the
hits; each candidate is then checked with the ``TextNeedle`` itself, so the final answer
is exactly the query layer's.

Characters no index can hold (NUL, lone surrogates) fold to U+FFFD: that only widens the
candidates, never loses one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final


def _lower(code: int) -> int:
    low = chr(code).lower()
    return ord(low) if len(low) == 1 else code


try:  # CPython's own tables for re.IGNORECASE (3.11+); elsewhere str.lower, one character for one
    import _sre  # type: ignore[import-not-found]

    _tolower: Callable[[int], int] = _sre.unicode_tolower
except (ImportError, AttributeError):  # pragma: no cover - another interpreter
    _tolower = _lower


try:
    from re._casefix import _EXTRA_CASES as _EXTRA  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - another interpreter
    _EXTRA = {}

__all__ = ["MAX_TERMS", "fold_char", "fold_text", "query_terms", "text_trigrams"]

MAX_TERMS: Final = 48
"""The most trigrams one query hands the index (a long query is narrowed by a sample of
its trigrams, spread over every word; the check against the needle does the rest)."""

_REPLACEMENT: Final = 0xFFFD


def fold_char(code: int) -> int:
    """The representative of ``chr(code)``'s ``re.IGNORECASE`` class (see the module doc)."""
    if code == 0 or 0xD800 <= code <= 0xDFFF:
        return _REPLACEMENT
    low = _tolower(code)
    extra: tuple[int, ...] | None = _EXTRA.get(low)
    return min(low, *extra) if extra else low


class _Table(dict[int, int]):
    """``str.translate`` table computed on first use of each character."""

    def __missing__(self, code: int) -> int:
        folded = self[code] = fold_char(code)
        return folded


_TABLE: Final = _Table()


def fold_text(text: str) -> str:
    """``text`` with every character folded (same length; see the module doc)."""
    if text.isascii():
        folded = text.lower()
        return folded.replace("\x00", "\ufffd") if "\x00" in folded else folded
    return text.translate(_TABLE)


def query_terms(text: str) -> list[str]:
    """The trigrams the index narrows a search for ``text`` with: those of each folded word
    of three characters or more (a word is what ``TextNeedle`` splits at whitespace),
    without repeats, at most ``MAX_TERMS`` spread over the words. ``[]`` when no word is
    that long: the search then checks every event (the index cannot narrow it)."""
    per_word: list[list[str]] = []
    seen: set[str] = set()
    for word in text.split():
        folded = fold_text(word)
        grams = []
        for start in range(len(folded) - 2):
            gram = folded[start : start + 3]
            if gram not in seen:
                seen.add(gram)
                grams.append(gram)
        if grams:
            per_word.append(grams)
    terms: list[str] = []
    # Round-robin over the words (each word's first, last and middle trigrams first), so a
    # capped sample still narrows by every word.
    ordered = [_spread(grams) for grams in per_word]
    depth = 0
    while len(terms) < MAX_TERMS and any(depth < len(grams) for grams in ordered):
        for grams in ordered:
            if depth < len(grams) and len(terms) < MAX_TERMS:
                terms.append(grams[depth])
        depth += 1
    return terms


def _spread(grams: list[str]) -> list[str]:
    """``grams`` reordered so that any prefix samples the whole word: ends, then halves."""
    out: list[str] = []
    chosen: set[int] = set()
    step = len(grams)
    while step >= 1:
        for position in range(0, len(grams), step):
            if position not in chosen:
                chosen.add(position)
                out.append(grams[position])
        step //= 2
    if len(grams) - 1 not in chosen:  # pragma: no cover - the loop above always reaches step 1
        out.append(grams[-1])
    return out



def text_trigrams(folded: str) -> set[str]:
    """Every distinct trigram of already folded text (what a PostgreSQL row is indexed by)."""
    return {folded[i : i + 3] for i in range(len(folded) - 2)}
