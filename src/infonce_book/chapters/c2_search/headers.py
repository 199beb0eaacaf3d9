"""The headers of the tables on the page (mathematics and words, never column names),
one dictionary ``{column: header}`` per table, for
:func:`~infonce_book.experiment.tables.show_table`."""

__all__ = ["HEADERS"]

HEADERS = {
    "vmf_t": {
        "k": "$k$",
        "search_ce": "$\\mathbb{E}H - \\log k$",
        "risk": "$L_k - \\log k$",
        "gap": "$\\mathbb{E}H - L_k$",
        "k_gap": "$k(\\mathbb{E}H - L_k)$",
        "d1": "$d_1$",
    },
    "constants_table": {
        "constant": "constant",
        "value": "value",
        "max_k |k (E H - L_k)| / constant": "$\\max_k |k(\\mathbb{E}H - L_k)|$ / constant",
    },
    "enum": {
        "k": "$k$",
        "search_ce_enumeration": "$\\mathbb{E}H$, enumeration",
        "search_ce_laplace": "$\\mathbb{E}H$, Laplace",
        "risk_enumeration": "$L_k$, enumeration",
        "risk_laplace": "$L_k$, Laplace",
    },
    "gauss_t": {
        "k": "$k$",
        "gap": "$\\mathbb{E}H - L_k$",
        "error": "its error",
        "k_gap": "$k(\\mathbb{E}H - L_k)$",
        "k_error": "its error",
    },
    "bayes": {
        "k": "$k$",
        "n_lists": "lists",
        "posterior_max_diff": "largest posterior difference",
        "bayes_accuracy": "Bayes accuracy",
        "ideal_accuracy": "ideal search",
        "softmax_accuracy": "softmax search, random embedding",
    },
    "mc": {"k": "$k$", "exact": "exact", "monte_carlo": "Monte Carlo", "ci_low": "95% low", "ci_high": "95% high"},
    "retrieval_summary": {
        "top1 ideal (MC)": "top-1, ideal (Monte Carlo)",
        "top1 ideal (exact)": "top-1, ideal (exact)",
        "top1 softmax": "top-1, softmax",
        "top5 ideal": "top-5, ideal",
        "top5 softmax": "top-5, softmax",
        "top1 ideal - softmax": "top-1, ideal − softmax",
        "diff low": "95% low",
        "diff high": "95% high",
        "H - log k (distorted, MC)": "$H - \\log k$, distorted",
        "H low": "95% low",
        "H high": "95% high",
    },
}
