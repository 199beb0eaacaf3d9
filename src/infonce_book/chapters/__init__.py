"""One package per chapter page: ``chapters/<stem>/`` serves ``book/<stem>.md`` with its set-up
(``STEM``, ``SIZES``, ``setup()`` and the chapter's frozen configuration), its runners (a
configuration in, a tidy table out, cached), its ledger records, its figures and, where the page
has generated sentences, its prose. A page imports its package as ``chapter``:
``from infonce_book.chapters import c1_rate as chapter``; ``ctx = chapter.setup(profile, device, seed)``.

Which pages are chapters is read from ``_toc.yml`` (the numbered parts), by
:func:`infonce_book.experiment.toc.chapter_stems`; nothing here lists them.
"""
