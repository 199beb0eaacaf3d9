"""One module per chapter page: ``chapters/<stem>.py`` serves ``book/<stem>.md`` with its runners
(a configuration in, a tidy table out, cached), its ledger rules (``ledger*``), its profile sizes
(``SIZES``) and its figures (``fig_*``). A page imports its module as ``chapter``:
``from infonce_book.chapters import c1_rate as chapter``; ``ctx = chapter.setup(profile, device, seed)``.
"""

CHAPTERS = ("c1_rate", "c2_search", "c3_temperature", "c4_continuity", "c5_generalisation", "c6_digits")

__all__ = ["CHAPTERS"]
