"""Small helpers for the sentences that chapters generate from their results (lists of values,
counts in words, numbers with the minus sign), so that every page words them the same way.

Negative numbers print with the minus sign U+2212 (−), as the text types it, never the hyphen-minus:
:func:`number` for a number a chapter writes into a sentence, and :mod:`.minus_glue` (a Sphinx
extension) for every number the prose glues with ``{glue:text}``."""

from __future__ import annotations

import re

__all__ = ["join_words", "count_word", "minus_sign", "number"]

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


#: A hyphen-minus that is a minus sign: at the start of a number, or after a space, an opening
#: bracket, "=", "(" or a comma, and before a digit or a decimal point (not inside words, ids such
#: as ``tau0.5-n2048``, ranges such as ``2-3`` or exponents such as ``1e-05``).
_MINUS = re.compile(r"(?:(?<=^)|(?<=[\s(\[{=,;:/]))-(?=[\d.]\d*)")


def minus_sign(text: str) -> str:
    """``text`` with each hyphen-minus that stands for a minus sign replaced by U+2212 (−), as
    the book prints negative numbers (the text's minus sign, not a hyphen).

    Examples:
        >>> minus_sign("-0.228")
        '−0.228'
        >>> minus_sign("from -0.05 to 0.18 (k = 4, tau0.5-n2048, 1e-05, pages 2-3)")
        'from −0.05 to 0.18 (k = 4, tau0.5-n2048, 1e-05, pages 2-3)'
        >>> minus_sign("[-1.5, -2]")
        '[−1.5, −2]'
    """
    return _MINUS.sub("\u2212", str(text))


def number(value: float, spec: str = "") -> str:
    """``format(value, spec)`` with a minus sign (U+2212) for a negative number: the one way the
    chapters write a number from code into a sentence.

    Examples:
        >>> number(-0.22803, ".3f"), number(12345, ",d"), number(0.5, ".0%")
        ('−0.228', '12,345', '50%')
    """
    return minus_sign(format(value, spec))
