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
    "temperature": {
        "data": "inputs",
        "tau": "$\\tau$",
        "lambda_star": "$\\mathbb E\\Lambda_\\star$",
        "lambda_avg": "$\\mathbb E\\Lambda_{\\mathrm{avg}}$",
        "lambda_max": "$\\mathbb E\\Lambda_{\\max}$",
        "neg_star": "negatives' part of $\\mathbb E\\Lambda_\\star/\\beta$",
        "complexity": "complexity term",
        "gap": "mean gap",
    },
    "dimension": {
        "cls": "class",
        "dim": "$d$",
        "value": "$\\hat R_n$ (lower estimate)",
        "ci_high": "upper end",
        "bound": "bound",
        "gap_mean": "mean gap",
        "gap_high": "upper end of gap",
    },
    "dimension_replication": {
        "dim": "$d$",
        "kappa": "$\\kappa_d$",
        "gap_mean": "mean gap",
        "diff": "gap minus gap at $d_0$",
        "diff_low": "lower end",
        "diff_high": "upper end",
    },
    #: The input laws and the classes of the two side-claim tables, as the page names them.
    "laws": {"gaussian": "Gaussian", "student_t": "Student-$t$", "vmf": "sphere (vMF)"},
    "classes": {"frobenius": "$\\lVert W\\rVert_F \\le b$", "normalised": "$\\lVert A - I\\rVert_F \\le r$"},
}
