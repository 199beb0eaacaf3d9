"""The headers of the tables on the page (mathematics and words, never column names),
one dictionary ``{column: header}`` per table, for
:func:`~infonce_book.experiment.tables.show_table`."""

__all__ = ["HEADERS"]

HEADERS = {
    "training_summary": {
        "tau": "$\\tau$",
        "k": "$k$",
        "train risk": "training risk",
        "held-out risk": "held-out risk",
        "gap": "gap",
        "gap 95% low": "95% low",
        "gap 95% high": "95% high",
        "steps": "steps",
        "stopped by rule": "stopped by the rule",
        "top-1": "top-1",
        "chance log(k+1)": "chance, $\\log(k+1)$",
    },
    "needed_negatives": {
        "tau": "$\\tau$",
        "c1 (plug-in)": "$c_1$ (plug-in)",
        "c2 (plug-in)": "$c_2$ (plug-in)",
        "k for 0.1 nats (measured)": "$k$ for 0.1 nats (measured)",
        "|c1|/0.1": "$\\lvert c_1\\rvert/0.1$",
        "k for 0.01 nats (measured)": "$k$ for 0.01 nats (measured)",
        "|c1|/0.01": "$\\lvert c_1\\rvert/0.01$",
    },
    "certificates": {
        "k": "$k$",
        "tau": "$\\tau$",
        "groups": "groups $g$",
        "heldout": "held-out risk $- \\log(k+1)$",
        "cert": "certificate $- \\log(k+1)$",
        "cert_low": "95% low",
        "cert_high": "95% high",
        "needed": "held-out images needed",
    },
}
