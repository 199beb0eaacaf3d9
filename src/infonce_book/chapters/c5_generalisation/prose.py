"""Chapter 5's generated sentences and glued strings: from which n each certificate of claim C6 is
informative (below the uniform search), and the numbers of the gap section (claim C7). Lists are worded by
:func:`~infonce_book.experiment.prose.join_words`."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ...experiment.prose import join_words
from .ledger import DIRECT_DERANDOMISED_MARGIN, DIRECT_HOLDOUT_MARGIN

__all__ = ["direct_target_sentence", "minus_signs", "signed_texts", "informative_glue", "informative_sentence", "gap_glue", "other_temperature_sentence", "k_sweep_sentence",
           "gap_sweep_sentence", "seeds_needed_sentence", "oracle_sentence", "target_sentence",
           "cv_ratio_sentence"]

#: The certificates the sentence names, in its order: (column of informative_n, label).
_NAMED = (("derandomised", "derandomised certificate"), ("Bernstein", "randomised Bernstein certificate"),
          ("hold-out", "hold-out certificate"), ("PAC-Bayes-kl", "kl certificate"), ("sharp", "sharp uniform bound"))


def informative_glue(table: pd.DataFrame, tau: float) -> dict:
    """``{"<bound>_k<k>": smallest informative n or "none on the grid"}`` at temperature ``tau``
    from :func:`~.tables.informative_n` (bound keys ``sharp``, ``kl``, ``bern``, ``det``, ``ho``),
    for the k the profile trained, and ``"sentence"`` (:func:`informative_sentence`)."""
    out = {}
    keys = {"sharp": "sharp", "PAC-Bayes-kl": "kl", "Bernstein": "bern", "derandomised": "det", "hold-out": "ho"}
    for _, r in table[np.isclose(table.tau, tau)].iterrows():
        for name, key in keys.items():
            v = r.get(name)
            out[f"{key}_k{int(r.k)}"] = "none on the grid" if v is None or pd.isna(v) else f"{int(v):,}"
    out["sentence"] = informative_sentence(table, tau)
    return out


def informative_sentence(table: pd.DataFrame, tau: float, k_first: int = 16) -> str:
    """One sentence: from which n of the grid each certificate is informative (below the uniform
    search) at temperature ``tau``, for the k the profile trained (``k_first`` first), from
    :func:`~.tables.informative_n`; "not informative on the grid" where no n is.

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
        groups = {}  # smallest n (None: never) -> the ks that share it, k_first's group first
        for k in ks:
            v = by_k[k].get(name)
            groups.setdefault(None if v is None or pd.isna(v) else int(v), []).append(k)
        parts = [("not informative on the grid" if v is None else f"informative from n = {v:,}")
                 + f" at k = {join_words([str(k) for k in sorted(group)])}" for v, group in groups.items()]
        head = f"the {label} is {parts[0]}"
        return head if len(parts) == 1 else head + " (" + "; ".join(parts[1:]) + ")"

    text = "; ".join(clause(name, label) for name, label in _NAMED if name in rows)
    return f"At τ = {tau:g}, {text}."


def gap_glue(summary: pd.DataFrame, tau_star: float, sphere: str = "vmf") -> dict:
    """Numbers of the gap section: the mean of ``n * gap_cv`` over the cells at ``tau_star``, and
    at the other temperatures (a sentence when the profile trains none)."""
    vmf = summary[summary.model == sphere]
    star = vmf[np.isclose(vmf.tau, tau_star)]
    other = vmf[~np.isclose(vmf.tau, tau_star)]
    return {"n_gap_mean": float(star.n_gap_cv.mean()),
            "n_gap_tau1": f"{other.n_gap_cv.mean():.2f}" if len(other) else
            "not measured in this run, which trains at τ = 1/κ only"}



def other_temperature_sentence(values: dict, tau_other: float) -> str:
    """The sentence on the second headline cell (``tau_other``), from the numbers of
    :func:`~.ledger.ledger_bound` prefixed ``t1_``; a note when the profile trains no cell there."""
    if "t1_head_derandomised" not in values:
        return (f"(This run trains no cell of the vMF model at τ = {tau_other:g}; the standard run has "
                f"them.)")
    v = {key[3:]: val for key, val in values.items() if key.startswith("t1_")}
    return (f"At τ = {tau_other:g}, where τ is not the 1/κ of the model (so the loss is not a likelihood and "
            f"nothing was tuned to κ), the derandomised certificate is {v['head_derandomised']:.3f}, the "
            f"randomised one {v['head_bernstein']:.3f} and the hold-out one {v['head_holdout']:.3f}, against "
            f"the oracle's {v['head_oracle']:.3f} and the trained embedding's {v['head_measured']:.3f}.")


def k_sweep_sentence(values: dict, n: int, tau: float) -> str:
    """The sentence on the certificates and the loss's spread against k at (n, tau), from the
    numbers of :func:`~.ledger.ledger_bound` (``kslope_*``); a note when the profile trains fewer
    than three k there."""
    if not values.get("k_slope_records"):
        return (f"(This run trains fewer than three values of k at n = {n:,}; the standard run trains k = 4 "
                f"to 256 there.)")
    v = values
    return (f"Per doubling of k the derandomised certificate's slack changes by {v['kslope_derandomised_slack']:.3f} "
            f"nats (95% interval {v['kslope_derandomised_slack_low']:.3f} to "
            f"{v['kslope_derandomised_slack_high']:.3f}) and the randomised one's by "
            f"{v['kslope_bernstein_slack']:.3f} ({v['kslope_bernstein_slack_low']:.3f} to "
            f"{v['kslope_bernstein_slack_high']:.3f}); the variance of the decoupled loss changes by "
            f"{v['kslope_variance_decoupled']:.3f} and that of the standard loss by "
            f"{v['kslope_variance_standard']:.3f} nats² per doubling.")


def gap_sweep_sentence(values: dict) -> str:
    """The sentence on the equivalence test of "the gap does not grow with k" (numbers of
    :func:`~.gap_sweep.ledger_gap_sweep`), or a note when the profile does not run it."""
    if "sweep_slope" not in values:
        return "(This run does not train the sweep over k; the standard run does, with 12 seeds.)"
    v = values
    verdict = ("lies inside the margin: the gap does not grow with k, in the sense declared"
               if v["sweep_passed"] else "does not lie inside the margin: equivalence is not shown")
    return (f"Over k = {v['sweep_ks']} at n = {v['sweep_n']:,} ({v['sweep_seeds']} seeds), the slope of n times the "
            f"gap per doubling of k is {v['sweep_slope']:.3f}, with 90% interval {v['sweep_slope_low']:.3f} to "
            f"{v['sweep_slope_high']:.3f}, which {verdict} (margin ±{v['sweep_margin']:.3f} per doubling, "
            f"±{v['sweep_total_margin']:.1f} over the whole range). The mean of n times the gap over the "
            f"sweep is {v['sweep_pooled']:.2f} (95% interval {v['sweep_pooled_low']:.2f} to "
            f"{v['sweep_pooled_high']:.2f}; predicted 5).")


def seeds_needed_sentence(values: dict) -> str:
    """How many seeds a rerun of the sweep would need for its interval to fit inside the margin, from
    this run's per-seed slopes (:func:`~infonce_book.theory.stats.seeds_needed`); empty when the
    sweep made no record."""
    if "sweep_seeds_needed" not in values:
        return ""
    need = values["sweep_seeds_needed"]
    if not np.isfinite(need):
        return ("With this run's mean slope, no number of seeds would bring the interval inside the margin "
                "(the mean itself is too close to it).")
    return (f"With this run's per-seed slopes (standard deviation {values['sweep_slope_sd']:.2f}), "
            f"{int(need)} seeds would have sufficed; the run used {values['sweep_seeds']}.")


def oracle_sentence(values: dict) -> str:
    """What the page says of the oracle's Monte Carlo value on the test databases (from
    :func:`~.ledger.ledger_bound`): its agreement with the exact value, or, when the two-sided
    record fails, how far off it is and why that is the databases' fluctuation."""
    z = values["head_oracle_z"]
    text = (f"Measured on the same test databases as the trained embedding, the oracle scores "
            f"{values['head_oracle_measured']:.4f} (standard error {values['head_oracle_se']:.4f}), "
            f"{abs(z):.1f} standard errors from its exact value")
    paired = values["head_measured"] - values["head_oracle_measured"]
    compare = (f" On the same databases the trained embedding lies {paired:.4f} above the oracle: that is the "
               f"comparison to read, since both values share the databases' fluctuation.")
    if values["head_oracle_passed"]:
        return minus_signs(text + "." + compare)
    return minus_signs(text + ", so its record fails. We read it as the databases' fluctuation, not an error of the "
                       "exact value: at 95% one two-sided record in twenty fails by chance, and the exact value is "
                       "checked independently (the exact decoupled risk plus the exact correction of the proposition "
                       "above give it to nine digits, in the package's tests)." + compare)


def target_sentence(values: dict) -> str:
    """How far above the oracle the derandomised certificate lands, against the aim of a quarter nat
    (a design aim, reported with its interval over seeds, not a claim of the theory)."""
    d, lo, hi = values["head_det_minus_oracle"], values["head_det_minus_oracle_low"], values["head_det_minus_oracle_high"]
    verdict = ("the whole interval is within the quarter nat we aimed for" if hi <= 0.25 else
               "the mean is within the quarter nat we aimed for, the upper end of the interval is not"
               if d <= 0.25 else "it misses the quarter nat we aimed for")
    return f"It lands {d:.3f} nats above the oracle (95% interval over seeds {lo:.3f} to {hi:.3f}): {verdict}."


def cv_ratio_sentence(summary: pd.DataFrame, tau: float, k: int = 16, sphere: str = "vmf") -> str:
    """The exercise on the control variate: the ratio of the gap's standard error without and with
    the control variate, per n, at temperature ``tau`` and ``k`` negatives, as one sentence that
    comments on any ratio below 1 (a standard error from a few seeds is itself noisy).

    Args: summary from :func:`~.tables.gap_summary` (columns ``model, tau, k, n, seeds, gap_se,
    gap_cv_se``). Returns a sentence; rows whose standard errors need a second seed are skipped.
    """
    rows = summary[(summary.model == sphere) & np.isclose(summary.tau, tau) & (summary.k == k)]
    rows = rows.dropna(subset=["gap_se", "gap_cv_se"]).sort_values("n")
    rows = rows[rows.gap_cv_se > 0]
    if not len(rows):
        return "This run has no cell with two seeds, so no ratio can be computed from it."
    ratios = rows.gap_se / rows.gap_cv_se
    parts = [f"{r:.2g} at n = {int(n):,}" for r, n in zip(ratios, rows.n)]
    seeds = join_words([f"{int(s)}" for s in sorted(set(rows.seeds))])
    text = (f"In this run, at k = {k}, the ratio is {join_words(parts)}, from {seeds} seeds per cell.")
    low = [f"n = {int(n):,}" for r, n in zip(ratios, rows.n) if r < 1]
    if low:
        text += (f" The ratio is below 1 at {join_words(low)}, against a prediction above 1. A standard"
                 " error from S seeds has S - 1 degrees of freedom, so two of them from a handful of seeds"
                 " can differ by a large factor by chance; and the gap with the control variate also"
                 " carries the Monte Carlo error of its test average, which does not fall with n.")
    return text


def direct_target_sentence(values: dict) -> str:
    """The direct certificates against the targets declared before the run (from
    :func:`~.ledger.ledger_bound`; ``DIRECT_DERANDOMISED_MARGIN`` and ``DIRECT_HOLDOUT_MARGIN`` of
    :mod:`.ledger`): how far above the oracle each lands, and whether the target is met."""
    if "v_dir_det" not in values:
        return "This profile computes no direct certificate."
    d, h = values["v_dir_det_minus_oracle"], values.get("v_dir_ho_minus_oracle", float("nan"))
    parts = [f"the derandomised certificate lands {d:.3f} nats above the oracle, "
             f"{'within' if d <= DIRECT_DERANDOMISED_MARGIN else 'outside'} the {DIRECT_DERANDOMISED_MARGIN:.2f} "
             f"nat declared before the run",
             f"the hold-out certificate {h:.3f} above it, {'within' if h <= DIRECT_HOLDOUT_MARGIN else 'outside'} "
             f"the {DIRECT_HOLDOUT_MARGIN:.2f} nat declared for it"]
    return minus_signs("Against the oracle, " + "; ".join(parts) + ".")


def minus_signs(text: str) -> str:
    """``text`` with the hyphen of every negative number replaced by a real minus sign (U+2212),
    so that numbers from code match the text's mathematics; hyphens inside words stay.

    Examples:
        >>> minus_signs("from -0.228 to -0.13, a hold-out")
        'from \u22120.228 to \u22120.13, a hold-out'
    """
    return re.sub(r"(?<![\w.])-(?=\d|\.\d)", "\u2212", text)


def signed_texts(values: dict, digits: int = 3) -> dict:
    """``{key + "_txt": text}`` for every real number of ``values``: the number to ``digits``
    decimals with a real minus sign (:func:`minus_signs`), for prose that quotes negative numbers.

    Examples:
        >>> signed_texts({"a": -0.2281, "b": "x", "n": 3})
        {'a_txt': '\u22120.228', 'n_txt': '3.000'}
    """
    out = {}
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            continue
        out[f"{key}_txt"] = minus_signs(f"{float(value):.{int(digits)}f}")
    return out
