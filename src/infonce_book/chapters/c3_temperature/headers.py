"""The headers of the tables on the page (mathematics and words, never column names),
one dictionary ``{column: header}`` per table, for
:func:`~infonce_book.experiment.tables.show_table`."""

__all__ = ["HEADERS"]

HEADERS = {
    "gap_summary": {
        "tau": "$\\tau$",
        "train_risk": "training risk",
        "gap": "gap",
        "gap_low": "95% low",
        "gap_high": "95% high",
        "range_bk": "$B_k$",
        "gap_over_range": "gap / $B_k$",
        "ratio_low": "95% low",
        "ratio_high": "95% high",
        "n_sets": "training sets",
    },
    "sharp": {
        "beta": "$\\beta$",
        "psi": "$\\Psi(\\beta)$",
        "two_point_max": "best law on $\\{-1, 1\\}$",
        "random_max": "best of random starts",
        "bound": "bound",
        "asym": "$2\\beta - 1 - \\log 2\\beta$",
        "asym_law": "two-point law, asymptotic mass",
    },
    "approx": {
        "tau": "$\\tau$",
        "identity": "identity",
        "infimum": "infimum",
        "certificate": "certificate",
        "embedding": "best embedding",
        "b1": "$b_1/\\beta$",
        "b2": "$b_2/\\beta$",
        "floor": "$\\mathrm{KL}(M \\,\\|\\, \\pi) - 2/\\tau$",
    },
    "learned": {"seed": "seed", "k": "$k$", "tau": "learned $\\tau$"},
    "dec": {"k": "$k$", "tau_k": "$\\tau_k$", "beta_k": "$\\beta_k$", "k_shift": "$k(\\beta_k - \\kappa)$", "C": "$C$"},
}
