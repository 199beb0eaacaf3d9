"""Small helpers for the sentences that chapters generate from their results (lists of values,
counts in words), so that every page words them the same way."""

from __future__ import annotations

__all__ = ["join_words", "count_word"]

_COUNT_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight",
                9: "nine", 10: "ten"}


def join_words(items) -> str:
    """Join phrases as a sentence lists them: ``"a"``, ``"a and b"``, ``"a, b and c"``.

    Raises:
        ValueError: no items.

    Examples:
        >>> join_words(["k = 4", "k = 16", "k = 64"])
        'k = 4, k = 16 and k = 64'
        >>> join_words(["τ = 0.5"])
        'τ = 0.5'
    """
    items = [str(item) for item in items]
    if not items:
        raise ValueError("join_words: nothing to join (items is empty)")
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def count_word(n: int) -> str:
    """A small count in words (``"one"`` to ``"ten"``), larger ones as digits.

    Examples:
        >>> count_word(2), count_word(12)
        ('two', '12')
    """
    return _COUNT_WORDS.get(int(n), str(int(n)))
