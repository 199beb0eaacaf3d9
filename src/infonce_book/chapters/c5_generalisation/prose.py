"""Chapter 5's generated sentences and glued strings: from which n each bound of claim C6 is
non-vacuous, and the numbers of the gap section (claim C7). Lists are worded by
:func:`~infonce_book.experiment.prose.join_words`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...experiment.prose import join_words

__all__ = ["nonvacuous_glue", "nonvacuous_sentence", "gap_glue"]


def nonvacuous_glue(table: pd.DataFrame, tau: float) -> dict:
    """``{"<bound>_k<k>": smallest n or "none on the grid"}`` at temperature ``tau`` from
    :func:`~.tables.nonvacuous_n` (bound names ``old``, ``sharp``, ``pac``), only for the k the profile
    trained, and ``"sentence"``: the page's sentence (:func:`nonvacuous_sentence`)."""
    out = {}
    for _, r in table[np.isclose(table.tau, tau)].iterrows():
        for name, key in (("old", "old"), ("sharp", "sharp"), ("PAC-Bayes", "pac")):
            v = r[name]
            out[f"{key}_k{int(r.k)}"] = "none on the grid" if v is None or pd.isna(v) else f"{int(v):,}"
    out["sentence"] = nonvacuous_sentence(table, tau)
    return out


def nonvacuous_sentence(table: pd.DataFrame, tau: float, k_first: int = 16) -> str:
    """One sentence for the page: from which n of the grid each bound (``sharp``, ``old``,
    ``PAC-Bayes``) is non-vacuous at temperature ``tau``, for the k the profile actually trained
    (``k_first`` first when present, then the others in increasing order), from
    :func:`~.tables.nonvacuous_n`. Says "vacuous on the whole grid" where no n is non-vacuous.

    Raises:
        ValueError: no row of ``table`` at ``tau``.
    """
    rows = table[np.isclose(table.tau, tau)]
    if rows.empty:
        raise ValueError(f"tau={tau:g} is not in the table (temperatures: {sorted(set(table.tau))})")
    ks = sorted(int(v) for v in rows.k)
    ks = [k for k in ks if k == k_first] + [k for k in ks if k != k_first]
    by_k = {int(r.k): r for _, r in rows.iterrows()}

    def clause(name, label):
        groups = {}  # smallest n (None: vacuous everywhere) -> the ks that share it, k_first's group first
        for k in ks:
            v = by_k[k][name]
            groups.setdefault(None if v is None or pd.isna(v) else int(v), []).append(k)
        parts = [("vacuous on the whole grid" if v is None else f"non-vacuous from n = {v:,}")
                 + f" at k = {join_words([str(k) for k in sorted(group)])}" for v, group in groups.items()]
        head = f"the {label} is {parts[0]}"
        return head if len(parts) == 1 else head + " (" + "; ".join(parts[1:]) + ")"

    text = "; ".join(clause(name, label) for name, label in
                     (("sharp", "sharp bound"), ("old", "old bound"), ("PAC-Bayes", "certificate")))
    return f"At τ = {tau:g}, {text}."



def gap_glue(summary: pd.DataFrame, tau_star: float, sphere: str = "vmf") -> dict:
    """Numbers of the gap section: the mean of ``n * gap_cv`` over the cells at ``tau_star``, and
    at the other temperatures (a sentence when the profile trains none)."""
    vmf = summary[summary.model == sphere]
    star = vmf[np.isclose(vmf.tau, tau_star)]
    other = vmf[~np.isclose(vmf.tau, tau_star)]
    return {"n_gap_mean": float(star.n_gap_cv.mean()),
            "n_gap_tau1": f"{other.n_gap_cv.mean():.2f}" if len(other) else
            "not measured at this profile, which trains at tau = 1/kappa only"}

