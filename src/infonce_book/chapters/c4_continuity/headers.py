"""The headers of the tables on the page (mathematics and words, never column names),
one dictionary ``{column: header}`` per table, for
:func:`~infonce_book.experiment.tables.show_table`."""

__all__ = ["HEADERS"]

HEADERS = {
    "pert": {"ratio_average_max": "average form", "ratio_max_max": "max form", "ratio_dv_max": "Donsker–Varadhan form"},
    "comparison": {
        "tau": "$\\tau$",
        "k": "$k$",
        "covering_avg": "covering, average form",
        "covering_star": "covering, $\\Lambda_\\star$",
        "vector": "vector contraction",
        "lambda_avg": "average $\\Lambda$",
        "lambda_star": "$\\Lambda_\\star$",
        "vector_factor": "vector factor",
    },
    "rad": {
        "sweep": "sweep over",
        "class": "class",
        "dim": "$d$",
        "n": "$n$",
        "k": "$k$",
        "value": "$\\hat R_n$",
        "ci_high": "95% high",
        "bound_avg": "covering, average",
        "bound_max": "covering, max",
        "bound_embedding": "covering, embedding",
        "bound_vector": "vector contraction",
    },
}
