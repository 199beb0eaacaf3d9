"""Negative glued numbers print with the minus sign (U+2212), book-wide: a Sphinx extension
(listed in ``_config.yml`` ``extra_extensions``).

myst-nb formats a ``{glue:text}`name:.3f``` value with Python's :func:`format`, which writes a
negative number with the hyphen-minus ("-0.228"), beside the text's minus sign ("−0.228"). This
extension wraps myst-nb's formatter (``myst_nb.core.variables.format_plain_text``, used by the glue
role of the same page and by the cross-page glue references) so that its result goes through
:func:`~infonce_book.experiment.prose.minus_sign`: every glued number of every chapter, in the HTML
and in the PDF printed from it, has one minus sign.
"""

from __future__ import annotations

import functools

from .prose import minus_sign

__all__ = ["with_minus_sign", "setup"]


def with_minus_sign(format_plain_text):
    """``format_plain_text`` whose result has its minus signs as U+2212 (idempotent)."""
    if getattr(format_plain_text, "_infonce_minus", False):
        return format_plain_text

    @functools.wraps(format_plain_text)
    def formatted(text: str, fmt_spec: str) -> str:
        return minus_sign(format_plain_text(text, fmt_spec))

    formatted._infonce_minus = True
    return formatted


def setup(app) -> dict:
    """Wrap myst-nb's glue formatter where its glue role and glue references call it."""
    from myst_nb.core import variables  # optional: myst-nb is loaded only by the book's Sphinx build
    from myst_nb.ext.glue import crossref, roles  # optional: as above

    for module in (variables, roles, crossref):
        module.format_plain_text = with_minus_sign(module.format_plain_text)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
