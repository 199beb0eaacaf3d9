"""Chapter 5's summary tables: per-cell means over seeds of the bounds (claim C6) and of the
generalisation gap (claim C7), the smallest non-vacuous n of each bound, and the tables the page
displays. Each takes the tidy table of :func:`~.runners.grid` (or a summary of it)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["BOUNDS", "bound_summary", "nonvacuous_n", "gap_summary", "gap_table", "headline_table"]

#: The bounds of the page: display name -> column of the grid (a new certificate adds a line).
BOUNDS = {"old": "old_bound", "sharp": "sharp_bound", "PAC-Bayes": "pb_bound"}


def bound_summary(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (model, tau, k, n): seed means of the measured values, every term of the old and the
    sharp bound, the PAC-Bayes certificate and the slacks (bound minus the measured value of the
    same predictor), with standard errors over seeds where there are two or more."""
    cols = ["search_ce", "test_risk", "train_risk", "old_empirical_risk", "old_complexity", "old_confidence",
            "old_search_bias", "old_bound", "sharp_empirical_risk", "sharp_complexity", "sharp_cover",
            "sharp_vector", "sharp_confidence", "sharp_search_bias", "sharp_bound", "pb_bound", "pb_measured",
            "pb_kl", "trivial"]
    g = grid.assign(sharp_slack=grid.sharp_bound - grid.search_ce,
                    pb_slack=grid.get("pb_bound", np.nan) - grid.get("pb_measured", np.nan))
    cols = [c for c in cols if c in g] + ["sharp_slack", "pb_slack"]
    keys = ["model", "tau", "k", "n"]
    out = g.groupby(keys)[cols].mean()
    out["seeds"] = g.groupby(keys).size()
    for c in ("sharp_bound", "pb_bound", "sharp_slack", "pb_slack", "search_ce"):
        if c in g:
            out[f"{c}_se"] = g.groupby(keys)[c].std() / np.sqrt(out.seeds)
    return out.reset_index()


def nonvacuous_n(summary: pd.DataFrame, model: str = "vmf") -> pd.DataFrame:
    """Smallest n of the grid at which the seed mean of each bound lies below the trivial bound
    ``2 beta`` on ``E H(M_k, Q_k) - log k``, per (tau, k); ``None`` where no n does."""
    rows = []
    for (tau, k), sub in summary[summary.model == model].groupby(["tau", "k"]):
        row = {"tau": tau, "k": int(k), "ns": ", ".join(str(int(v)) for v in sorted(sub.n))}
        for name, col in BOUNDS.items():
            ok = sub[sub[col] < sub.trivial].n if col in sub else []
            row[name] = int(min(ok)) if len(ok) else None
        rows.append(row)
    return pd.DataFrame(rows)



def gap_summary(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (model, n, k, tau) of the gap cells (exact full-batch ERM): the mean over seeds of
    ``gap`` and ``gap_cv`` with standard errors, and ``n * gap_cv`` (the constant of the 1/n law)
    with its standard error."""
    g = grid[grid.gap_cell].groupby(["model", "n", "k", "tau"])
    out = g.agg(seeds=("seed", "count"), gap=("gap", "mean"), gap_sd=("gap", "std"), gap_cv=("gap_cv", "mean"),
                gap_cv_sd=("gap_cv", "std"), train_risk=("train_risk", "mean"), test_risk=("test_risk", "mean"),
                bound=("sharp_bound", "mean")).reset_index()
    out["gap_se"] = out.gap_sd / np.sqrt(out.seeds)
    out["gap_cv_se"] = out.gap_cv_sd / np.sqrt(out.seeds)
    out["n_gap_cv"] = out.n * out.gap_cv
    out["n_gap_cv_se"] = out.n * out.gap_cv_se
    return out.drop(columns=["gap_sd", "gap_cv_sd"])



def gap_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The gap summary as displayed (n/a where a standard error needs two seeds)."""
    shown = summary[["model", "tau", "k", "n", "seeds", "gap", "gap_se", "gap_cv", "gap_cv_se", "n_gap_cv",
                     "n_gap_cv_se"]]
    return shown.round(4).astype(object).where(shown.notna(), "n/a")



def headline_table(summary: pd.DataFrame, headline: dict, sphere: str = "vmf") -> pd.DataFrame:
    """The terms of the old and the sharp bound side by side at the headline cell (seed means) of
    the model named ``sphere``."""
    n, k, tau = headline["n"], headline["k"], headline["tau"]
    r = summary[(summary.model == sphere) & (summary.n == n) & (summary.k == k) & np.isclose(summary.tau, tau)]
    if not len(r):
        return pd.DataFrame()
    r = r.iloc[0]
    rows = [("empirical risk - log k", r.old_empirical_risk, r.sharp_empirical_risk),
            ("complexity 2 R_n", r.old_complexity, r.sharp_complexity),
            ("  covering, Lambda_avg / Lambda_star", r.old_complexity, r.sharp_cover),
            ("  vector contraction", float("nan"), r.sharp_vector),
            ("confidence B_k sqrt(log(1/delta)/2n)", r.old_confidence, r.sharp_confidence),
            ("search bias", r.old_search_bias, r.sharp_search_bias),
            ("bound on E H - log k", r.old_bound, r.sharp_bound),
            ("measured E H - log k", r.search_ce, r.search_ce)]
    return pd.DataFrame(rows, columns=["term (nats)", "old constants", "sharp constants"]).set_index("term (nats)")
