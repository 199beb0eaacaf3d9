"""The headers of the tables on the page (mathematics and words, never column names),
one dictionary ``{column: header}`` per table, for
:func:`~infonce_book.experiment.tables.show_table`."""

__all__ = ["HEADERS"]

HEADERS = {
    "third": {
        "k": "$k$",
        "k_bias": "$k(L_k - \\log k - L_\\infty)$",
        "r3": "$k^2(K_k - c_1 - c_2/k)$",
        "r3_err": "its numerical error",
        "c3": "$c_3$",
        "c4": "$c_4$",
        "c3_plus_c4_over_k": "$c_3 + c_4/k$",
    },
    "mc": {
        "k": "$k$",
        "exact": "exact",
        "plain_mean": "plain mean",
        "plain_low": "plain, 95% low",
        "plain_high": "plain, 95% high",
        "cv_mean": "control variates",
        "cv_low": "c. v., 95% low",
        "cv_high": "c. v., 95% high",
    },
    "exact": {"c1": "$c_1$", "c2": "$c_2$"},
}
