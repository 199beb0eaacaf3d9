"""The headers of the tables on the page (mathematics and words, never column names),
one dictionary ``{column: header}`` per table, for
:func:`~infonce_book.experiment.tables.show_table`."""

__all__ = ["HEADERS"]

HEADERS = {
    "gap_table": {
        "model": "model",
        "tau": "$\\tau$",
        "k": "$k$",
        "n": "$n$",
        "seeds": "seeds",
        "gap": "gap",
        "gap_se": "its s.e.",
        "gap_cv": "gap, control variate",
        "gap_cv_se": "its s.e.",
        "n_gap_cv": "$n \\times$ gap",
        "n_gap_cv_se": "its s.e.",
    }
}
