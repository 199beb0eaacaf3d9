"""Chapter 5's summary tables: per-cell means over seeds of the bounds (claim C6) and of the
generalisation gap (claim C7), the smallest non-vacuous n of each bound, and the tables the page
displays. Each takes the tidy table of :func:`~.runners.grid` (or a summary of it)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory.bounds import search_bias_bounds
from ...theory.stats import normal_quantile, t_quantile
from .constants import vmf_ratio_moments
from .search_check import PROFILES

__all__ = ["BOUNDS", "MEASURED", "bound_summary", "informative_n", "below_cap_n", "gap_summary", "gap_table",
           "headline_table", "certificate_table", "slack_table", "k_sweep_table", "informative_table",
           "search_check_table", "search_bias_table", "direct_table", "direct_slack_table", "theorem1_n_table"]

#: The bounds and certificates of the page: display name -> column of the grid (a new certificate
#: adds a line). Each bounds E H(M_k, Q_k) - log k of an embedding (see MEASURED).
BOUNDS = {"old": "old_bound", "sharp": "sharp_bound", "PAC-Bayes-kl": "pb_bound", "Bernstein": "bern_bound",
          "derandomised": "det_bound", "hold-out": "ho_bound"}
#: The measured value each bound is compared with (the embedding it certifies): the trained
#: embedding, a randomised one, or the one trained on half of the tuples.
MEASURED = {"old_bound": "search_ce", "sharp_bound": "search_ce", "pb_bound": "pb_measured",
            "bern_bound": "bern_measured", "det_bound": "search_ce", "ho_bound": "ho_measured"}


def bound_summary(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (model, tau, k, n): seed means of the measured values, every term of the old and the
    sharp bound, the PAC-Bayes certificate and the slacks (bound minus the measured value of the
    same predictor), with standard errors over seeds where there are two or more."""
    cols = ["search_ce", "test_risk", "train_risk", "old_empirical_risk", "old_complexity", "old_confidence",
            "old_search_bias", "old_bound", "sharp_empirical_risk", "sharp_complexity", "sharp_cover",
            "sharp_vector", "sharp_confidence", "sharp_search_bias", "sharp_bound", "pb_bound", "pb_measured",
            "pb_kl", "trivial", "uniform_risk", "uniform_measured", "oracle_measured", "dec_train", "dec_test",
            "var_std", "var_dec", "bias_sharp", "bias_moments", "bern_bound", "bern_measured", "det_bound",
            "det_derand", "det_kl", "bern_kl", "ho_bound", "ho_measured"]
    slacks = {f"{col.split('_')[0]}_slack": grid[col] - grid[MEASURED[col]] for col in MEASURED if col in grid}
    g = grid.assign(**slacks)
    cols = [c for c in cols if c in g] + list(slacks)
    keys = ["model", "tau", "k", "n"]
    out = g.groupby(keys)[cols].mean()
    out["seeds"] = g.groupby(keys).size()
    for c in [*BOUNDS.values(), *slacks, "search_ce"]:
        if c in g:
            out[f"{c}_se"] = g.groupby(keys)[c].std() / np.sqrt(out.seeds)
    return out.reset_index()


def informative_n(summary: pd.DataFrame, model: str = "vmf") -> pd.DataFrame:
    """Per (tau, k): the smallest n of the grid at which the upper end of the 95% t-interval over
    seeds of each bound lies below the uniform search's ``E H - log k = 0`` (*informative*; a cell
    with one seed has no interval and does not count), ``None`` where no n of the grid is; and
    ``ns``, the n the grid has."""
    rows = []
    for (tau, k), sub in summary[summary.model == model].groupby(["tau", "k"]):
        row = {"tau": tau, "k": int(k), "ns": ", ".join(f"{int(v):,}" for v in sorted(sub.n))}
        q = np.array([t_quantile(0.95, max(int(m) - 1, 1)) for m in sub.seeds])
        for name, col in BOUNDS.items():
            if col not in sub:
                row[name] = None
                continue
            se = sub[f"{col}_se"] if f"{col}_se" in sub else pd.Series(np.nan, index=sub.index)
            upper = sub[col] + q * se
            ok = sub[(sub.seeds >= 2) & (upper < 0.0)].n
            row[name] = int(min(ok)) if len(ok) else None
        rows.append(row)
    return pd.DataFrame(rows)


def below_cap_n(summary: pd.DataFrame, model: str = "vmf") -> pd.DataFrame:
    """As :func:`informative_n`, for the range cap ``2 beta`` instead of 0 (*below the range cap*)."""
    rows = []
    for (tau, k), sub in summary[summary.model == model].groupby(["tau", "k"]):
        row = {"tau": tau, "k": int(k)}
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



def _cell(summary: pd.DataFrame, n: int, k: int, tau: float, sphere: str = "vmf"):
    r = summary[(summary.model == sphere) & (summary.n == n) & (summary.k == k) & np.isclose(summary.tau, tau)]
    return None if not len(r) else r.iloc[0]


def headline_table(summary: pd.DataFrame, headline: dict, sphere: str = "vmf") -> pd.DataFrame:
    """The terms of the old and the sharp bound side by side at the headline cell (seed means) of
    the model named ``sphere``, in nats."""
    r = _cell(summary, headline["n"], headline["k"], headline["tau"], sphere)
    if r is None:
        return pd.DataFrame()
    rows = [(r"empirical risk $- \log k$", r.old_empirical_risk, r.sharp_empirical_risk),
            (r"complexity $2R_n$", r.old_complexity, r.sharp_complexity),
            (r"of which: covering ($\Lambda_{\mathrm{avg}}$, $\Lambda_\star$)", r.old_complexity, r.sharp_cover),
            ("of which: vector contraction", float("nan"), r.sharp_vector),
            (r"confidence $B_k\sqrt{\log(1/\delta)/2n}$", r.old_confidence, r.sharp_confidence),
            (r"search bias ($C_H/k$, $b^\star_k$)", r.old_search_bias, r.sharp_search_bias),
            (r"bound on $\mathbb{E}H - \log k$", r.old_bound, r.sharp_bound),
            (r"measured $\mathbb{E}H - \log k$", r.search_ce, r.search_ce)]
    out = pd.DataFrame(rows, columns=["term (nats)", "old constants", "sharp constants"]).set_index("term (nats)")
    return out.round(3).astype(object).where(out.notna(), "–")


#: Rows of :func:`certificate_table`: (label, column of the bound or value, column of what it is
#: compared with, or None).
CERTIFICATE_ROWS = (
    ("uniform search (a constant embedding)", "uniform_measured", None),
    ("oracle (the identity)", "oracle_measured", None),
    ("trained embedding, measured", "search_ce", None),
    ("sharp uniform bound", "sharp_bound", "search_ce"),
    ("PAC-Bayes-kl, randomised", "pb_bound", "pb_measured"),
    ("PAC-Bayes-Bernstein, randomised", "bern_bound", "bern_measured"),
    ("PAC-Bayes-Bernstein, derandomised (the trained embedding)", "det_bound", "search_ce"),
    ("hold-out (trained on half the tuples)", "ho_bound", "ho_measured"),
    ("Bernstein, prior from half the tuples, randomised", "ddp_bern_bound", "ddp_bern_measured"),
    ("Bernstein, prior from half the tuples, derandomised", "ddp_det_bound", "search_ce"),
    ("Bernstein, prior away from the truth, randomised", "away_bern_bound", "away_bern_measured"),
    ("Bernstein, prior away from the truth, derandomised", "away_det_bound", "search_ce"),
)


def certificate_table(grid: pd.DataFrame, headlines: list, sphere: str = "vmf") -> pd.DataFrame:
    """Every bound and certificate against the baselines at the headline cells (seed means, nats
    of ``E H - log k``): one column per headline cell, a row per quantity, and for each bound the
    measured value of the embedding it certifies (``—`` where the profile does not compute it)."""
    cols = {}
    for h in headlines:
        head = grid[(grid.model == sphere) & (grid.n == h["n"]) & (grid.k == h["k"]) & np.isclose(grid.tau, h["tau"])]
        if not len(head):
            continue
        values = {}
        for label, col, measured in CERTIFICATE_ROWS:
            if col in head and head[col].notna().any():
                values[label] = f"{head[col].mean():.3f}" + (
                    f" (measured {head[measured].mean():.3f})" if measured and measured != "search_ce" else "")
            else:
                values[label] = "—"
        n_text = f"{h['n']:,}".replace(",", "{,}")
        cols[rf"$n = {n_text}$, $k = {h['k']}$, $\tau = {h['tau']:g}$"] = values
    return pd.DataFrame(cols)


def slack_table(grid: pd.DataFrame, headline: dict, sphere: str = "vmf") -> pd.DataFrame:
    """Where the slack of the derandomised certificate goes at the headline cell (seed means,
    nats): the search bias's worst case over its measured value, the derandomisation, the
    PAC-Bayes price (complexity and variance), the Monte Carlo estimate of the posterior's risk
    against the trained embedding's, and the generalisation of the decoupled risk; they add up
    to the certificate minus the measured ``E H - log k``."""
    h = grid[(grid.model == sphere) & (grid.n == headline["n"]) & (grid.k == headline["k"])
             & np.isclose(grid.tau, headline["tau"])]
    if not len(h) or "det_bound" not in h:
        return pd.DataFrame()
    bias = (h.bias_sharp - (h.search_ce - h.dec_test)).mean()
    derand = h.det_derand.mean()
    price = (h.det_dec_bound - h.det_derand - h.det_emp).mean()
    randomise = (h.det_emp - h.dec_train).mean()
    generalise = (h.dec_train - h.dec_test).mean()
    rows = [(r"search bias: $b^\star_k$ minus the measured $\mathbb{E}H - L_k^{\mathrm{dec}}$", bias),
            ("derandomisation (curvature)", derand),
            ("PAC-Bayes price (complexity, variance, Monte Carlo)", price),
            ("randomisation (posterior's training risk − trained embedding's)", randomise),
            ("training − test decoupled risk", generalise),
            (r"total: certificate $-$ measured $\mathbb{E}H - \log k$", (h.det_bound - h.search_ce).mean())]
    return pd.DataFrame(rows, columns=["part of the slack", "nats"]).set_index("part of the slack").round(4)


def k_sweep_table(summary: pd.DataFrame, n: int, tau: float, sphere: str = "vmf") -> pd.DataFrame:
    """At one (n, tau): per k, the measured ``E H - log k``, the certificates' slacks and the
    variances of ``l_k - log k`` and ``l^dec - log k`` (seed means)."""
    sub = summary[(summary.model == sphere) & (summary.n == n) & np.isclose(summary.tau, tau)].sort_values("k")
    cols = {"k": sub.k.astype(int), r"measured $\mathbb{E}H - \log k$": sub.search_ce,
            r"$b^\star_k$": sub.bias_sharp, "slack, Bernstein (randomised)": sub.get("bern_slack"),
            "slack, derandomised": sub.get("det_slack"), "slack, hold-out": sub.get("ho_slack"),
            "slack, PAC-Bayes-kl": sub.get("pb_slack"), r"$\mathrm{Var}(\ell_k - \log k)$": sub.var_std,
            r"$\mathrm{Var}(\ell^{\mathrm{dec}}_k - \log k)$": sub.var_dec}
    return pd.DataFrame({k: v for k, v in cols.items() if v is not None}).set_index("k").round(3)


def informative_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`informative_n` as displayed: one row per (tau, k), the smallest informative n of each
    bound, "—" where no n of the grid is informative."""
    shown = table.rename(columns={"tau": "τ", "k": "k", "ns": "$n$ on the grid"}).set_index(["τ", "k"])
    cells = [c for c in shown.columns if c != "$n$ on the grid"]
    shown[cells] = shown[cells].astype(object).map(lambda v: "—" if v is None or pd.isna(v) else f"{int(v):,}")
    return shown


def search_check_table(check: pd.DataFrame) -> pd.DataFrame:
    """The Monte Carlo check of the exact search correction as displayed: per profile ``s = f(t)``
    (``t`` the cosine), the exact correction, the measured ``E H - L_k^dec`` and its 95% interval
    (nats); for the extremal profile the prediction is ``b*_k``."""
    q = normal_quantile(0.95)
    rows = []
    for _, r in check.iterrows():
        predicted = r.b_star if r.profile == "extremal" else r.predicted
        rows.append({"similarity f(t)": PROFILES[r.profile], "exact correction": predicted,
                     "measured": r.measured, "95% interval": f"[{r.measured - q * r.se:.4f}, {r.measured + q * r.se:.4f}]"})
    return pd.DataFrame(rows).set_index("similarity f(t)").round(4)


def search_bias_table(model, tau: float, ks=(4, 16, 64, 256)) -> pd.DataFrame:
    """The search-bias bounds of the vMF ``model`` at ``tau`` for each k: the moment bound ``b_k``,
    the sharp ``b*_k`` and the identity embedding's exact correction (nats)."""
    moments = vmf_ratio_moments(model)
    rows = []
    for k in ks:
        rows.append({"k": int(k), "$b_k$ (moments)": search_bias_bounds(int(k), tau, **moments)["best"],
                     r"$b^\star_k$ (sharp)": float(model.sharp_search_bias([int(k)], tau)[0]),
                     "identity's correction": float(model.search_correction(lambda t: t, [int(k)], tau)[0])})
    return pd.DataFrame(rows).set_index("k").round(4)


#: Rows of :func:`direct_table`: (certificate, what it assumes known, the prior's centre, the data
#: of the bound, column of the bound, column of the measured value it covers).
DIRECT_ROWS = (
    ("direct, derandomised (the trained embedding)", "$m$", "half-trained embedding", "second half",
     "dir_det_bound", "dir_det_measured"),
    ("direct, randomised", "$m$", "half-trained embedding", "second half", "dir_bern_bound", "dir_bern_measured"),
    ("direct, hold-out (trained on the first half)", "$m$", "none (no prior)", "second half", "dir_ho_bound",
     "dir_ho_measured"),
    ("via $b^\\star_k$, derandomised", "law of $m$", "half-trained embedding", "second half", "ddp_det_bound",
     "search_ce"),
    ("via $b^\\star_k$, randomised", "law of $m$", "half-trained embedding", "second half", "ddp_bern_bound",
     "ddp_bern_measured"),
    ("via $b^\\star_k$, hold-out", "law of $m$", "none (no prior)", "second half", "ho_bound", "ho_measured"),
    ("ablation: direct, derandomised, prior at the truth", "$m$", "the truth $A = I$", "all tuples",
     "dir_truth_bound", "dir_truth_measured"),
    ("ablation: via $b^\\star_k$, derandomised, prior at the truth", "law of $m$", "the truth $A = I$",
     "all tuples", "det_bound", "search_ce"),
    ("ablation: via $b^\\star_k$, derandomised, prior 0.25 from the truth", "law of $m$", "a point near the truth",
     "all tuples", "away_det_bound", "search_ce"),
)


def _seed_interval(values) -> tuple[float, float, float]:
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return float(v.mean()), float("nan"), float("nan")
    half = t_quantile(0.95, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def _minus(text: str) -> str:
    return text.replace("-", "\u2212")


def direct_table(grid: pd.DataFrame, headline: dict, oracle: float, sphere: str = "vmf") -> pd.DataFrame:
    """Every certificate of ``E H - log k`` at the headline cell with what it assumes known, the
    priors' centre, the tuples the bound uses, its seed mean and 95% t-interval, the measured value
    of the embedding it covers and its distance to the oracle (nats); the posterior of every
    randomised or derandomised certificate is centred at the embedding trained on all tuples."""
    h = grid[(grid.model == sphere) & (grid.n == headline["n"]) & (grid.k == headline["k"])
             & np.isclose(grid.tau, headline["tau"])]
    rows = []
    for label, known, prior, data, col, measured in DIRECT_ROWS:
        if col not in h or not h[col].notna().all() or measured not in h:
            continue
        mean, lo, hi = _seed_interval(h[col])
        rows.append({"certificate": label, "assumes known": known, "prior centred at": prior, "bound uses": data,
                     "certificate (nats)": _minus(f"{mean:.3f}"), "95% interval": _minus(f"{lo:.3f} to {hi:.3f}"),
                     "measured": _minus(f"{h[measured].mean():.3f}"),
                     "minus oracle": _minus(f"{mean - oracle:.3f}")})
    return pd.DataFrame(rows).set_index("certificate") if rows else pd.DataFrame()


#: The parts of a direct certificate's slack: (label, column suffix).
DIRECT_PARTS = (("empirical $h$ of the posterior on the bound's tuples, minus the measured value", None),
                ("variance term $\\eta\\tilde\\psi(\\eta b)\\bar V_n$", "variance_term"),
                ("relative entropy $\\mathrm{KL}/(\\eta n)$", "kl_term"),
                ("confidence and grids $\\log(G|\\mathcal E|/\\delta)/(\\eta n)$", "confidence_term"),
                ("Monte Carlo step", "mc_cost"),
                ("derandomisation (curvature)", "derandomisation"))


def direct_slack_table(grid: pd.DataFrame, headline: dict, sphere: str = "vmf") -> pd.DataFrame:
    """Where the slack of each direct certificate goes at the headline cell (seed means, nats):
    the rows of :data:`DIRECT_PARTS`, which add up to the certificate minus the measured value of
    the embedding it covers; one column per certificate (derandomised and randomised with the
    half-data prior, derandomised with the truth-centred prior)."""
    h = grid[(grid.model == sphere) & (grid.n == headline["n"]) & (grid.k == headline["k"])
             & np.isclose(grid.tau, headline["tau"])]
    cols = {}
    for name, prefix in (("derandomised, half-data prior", "dir_det"), ("randomised, half-data prior", "dir_bern"),
                         ("derandomised, prior at the truth", "dir_truth")):
        if f"{prefix}_bound" not in h or not h[f"{prefix}_bound"].notna().all():
            continue
        parts = {}
        for label, suffix in DIRECT_PARTS:
            if suffix is None:
                parts[label] = float((h[f"{prefix}_emp"] - h[f"{prefix}_measured"]).mean())
            else:
                parts[label] = float(h[f"{prefix}_{suffix}"].mean())
        parts["total: certificate minus measured"] = float((h[f"{prefix}_bound"] - h[f"{prefix}_measured"]).mean())
        cols[name] = parts
    return pd.DataFrame(cols).round(4)


def theorem1_n_table(table: pd.DataFrame) -> pd.DataFrame:
    """The sharp bound's terms against n (one trained embedding per n), as displayed."""
    shown = table.sort_values("n").set_index("n")[["empirical_risk", "complexity", "confidence", "search_bias",
                                                   "bound"]]
    shown.index = [f"{int(v):,}" for v in shown.index]
    shown.index.name = "$n$"
    return shown.rename(columns={"empirical_risk": r"empirical risk $- \log k$", "complexity": r"complexity $2R_n$",
                                 "confidence": "confidence", "search_bias": r"search bias $b^\star_k$",
                                 "bound": r"bound on $\mathbb{E}H - \log k$"}).round(4)
