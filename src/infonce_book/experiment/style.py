"""The book's figures: one seaborn style, labelled axes with units ("nats")."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

PALETTE = "colorblind"


def use_book_style() -> None:
    """Apply the book's plotting style (seaborn ``whitegrid``, colour-blind palette)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    plt.rcParams.update({"figure.figsize": (6.4, 4.0), "figure.dpi": 110, "savefig.bbox": "tight",
                         "axes.titlesize": "medium"})


def glue_figure(name: str, fig) -> None:
    """Glue ``fig`` under ``name`` for a ``{glue:figure}`` directive, and close it so that the
    notebook does not display it a second time at the end of the cell."""
    from IPython import get_ipython
    from myst_nb import glue

    ip = get_ipython()
    if ip is not None:  # make sure the kernel renders figures as PNG (inline backend)
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png")
    glue(name, fig, display=False)
    plt.close(fig)


def bias_vs_k(exact, mc=None, *, title: str = ""):
    """Log-log plot of the exact bias against k with its first- and second-order predictions.

    Args:
        exact: table from :func:`infonce_book.experiments.c1_exact_curve` (one variant).
        mc: optional table from :func:`infonce_book.experiments.c1_monte_carlo` (intervals).
    """
    fig, ax = plt.subplots()
    ax.loglog(exact["k"], exact["bias"], "k-", lw=2, label="exact (quadrature)")
    ax.loglog(exact["k"], exact["first_order"], "--", label=r"$c_1/k$")
    ax.loglog(exact["k"], exact["second_order"], ":", lw=2, label=r"$c_1/k + c_2/k^2$")
    if mc is not None:
        yerr = np.vstack([mc["cv_mean"] - mc["cv_low"], mc["cv_high"] - mc["cv_mean"]])
        ax.errorbar(mc["k"], mc["cv_mean"], yerr=yerr, fmt="o", ms=4, capsize=3,
                    label="Monte Carlo, 95% CI")
    ax.set_xlabel("number of negatives $k$")
    ax.set_ylabel(r"$L_k - \log k - L_\infty$ (nats)")
    if title:
        ax.set_title(title)
    ax.legend()
    return fig


def bounds_vs_k(table, *, title: str = ""):
    """Log-log plot of |bias| and the bounds (long table: k, bound, value)."""
    fig, ax = plt.subplots()
    sns.lineplot(data=table, x="k", y="value", hue="curve", style="curve", ax=ax)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of negatives $k$")
    ax.set_ylabel("nats")
    if title:
        ax.set_title(title)
    ax.legend(title=None, fontsize="small")
    return fig


def k_bias_by_variant(table):
    """``k (L_k - log k - L_inf)`` against k for both variants, with the limits c1."""
    fig, ax = plt.subplots()
    sns.lineplot(data=table, x="k", y="k_bias", hue="variant", ax=ax)
    for _, row in table.drop_duplicates("variant").iterrows():
        ax.axhline(row["c1"], ls="--", lw=1, color="grey")
    ax.set_xscale("log")
    ax.set_xlabel("number of negatives $k$")
    ax.set_ylabel(r"$k\,(L_k - \log k - L_\infty)$ (nats)")
    return fig


def c1_heatmap(table, value: str = "c1", *, title: str = ""):
    """Heatmap of ``c1`` over (tau, kappa)."""
    fig, ax = plt.subplots()
    grid = table.pivot(index="kappa", columns="tau", values=value).sort_index(ascending=False)
    sns.heatmap(grid, annot=True, fmt=".3g", cmap="viridis", ax=ax, cbar_kws={"label": f"{value} (nats)"})
    ax.set_xlabel(r"temperature $\tau$")
    ax.set_ylabel(r"concentration $\kappa$")
    if title:
        ax.set_title(title)
    return fig


def search_vs_risk(tables: dict):
    """Both sides of Theorem c2-thm-search against k, one panel per model (``{name: table}``)."""
    fig, axes = plt.subplots(1, len(tables), figsize=(6.4 * len(tables) / 1.4, 4.0), squeeze=False)
    for ax, (name, t) in zip(axes[0], tables.items()):
        ax.plot(t["k"], t["search_ce"], "o-", ms=3, label=r"$\mathbb{E}[H(\hat M_k, \hat Q_k)] - \log k$")
        ax.plot(t["k"], t["risk"], "s--", ms=3, label=r"$L_k - \log k$")
        ax.axhline(t["limit"].iloc[0], color="grey", lw=1, ls=":", label=r"$L_\infty$")
        ax.set_xscale("log")
        ax.set_xlabel("database size / negatives $k$")
        ax.set_ylabel("nats")
        ax.set_title(name)
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def k_gap(tables: dict):
    """``k (E[H] - L_k)`` against k with the limits ``d1`` (dashed), one line per model."""
    fig, ax = plt.subplots()
    for name, t in tables.items():
        line, = ax.plot(t["k"], t["k_gap"], "o-", ms=3, label=name)
        ax.axhline(t["d1"].iloc[0], color=line.get_color(), ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("database size / negatives $k$")
    ax.set_ylabel(r"$k\,(\mathbb{E}[H(\hat M_k,\hat Q_k)] - L_k)$ (nats)")
    ax.legend()
    return fig


def retrieval_accuracy(table):
    """Top-1 and top-5 retrieval of the positive among k unseen items, ideal vs softmax search."""
    fig, ax = plt.subplots()
    for (search, style) in (("ideal", "-"), ("softmax", "--")):
        t = table[table.search == search]
        ax.errorbar(t["k"], t["top1"], yerr=[t["top1"] - t["top1_low"], t["top1_high"] - t["top1"]],
                    fmt="o" + style, ms=3, capsize=2, label=f"top-1, {search} search")
        ax.plot(t["k"], t["top5"], "s" + style, ms=3, alpha=0.7, label=f"top-5, {search} search")
    ideal = table[table.search == "ideal"]
    ax.plot(ideal["k"], ideal["top1_exact"], "k:", lw=1.5, label="top-1, ideal, exact")
    ax.set_xscale("log")
    ax.set_xlabel("number of unseen items $k$")
    ax.set_ylabel("retrieval accuracy")
    ax.legend(fontsize="small")
    return fig


def gap_vs_tau(table):
    """Empirical and fresh-data risk of embeddings trained at each tau, and their gap."""
    fig, ax = plt.subplots()
    ax.plot(table["tau"], table["train_risk"], "o-", label="empirical risk (training tuples)")
    ax.plot(table["tau"], table["test_risk"], "s-", label="risk on fresh tuples")
    ax.errorbar(table["tau"], table["gap"], yerr=[table["gap"] - table["gap_low"], table["gap_high"] - table["gap"]],
                fmt="^--", capsize=3, label="gap")
    ax.set_xscale("log")
    ax.set_xlabel(r"temperature $\tau$")
    ax.set_ylabel("nats")
    ax.legend(fontsize="small")
    return fig


def kl_vs_tau(table):
    """``E_x KL(Q_tau(x, .) || pi)`` against tau per embedding, with the uniform bound."""
    fig, ax = plt.subplots()
    for name, t in table.groupby("embedding", sort=False):
        eb = ax.errorbar(t["tau"], t["kl"], yerr=[t["kl"] - t["kl_low"], t["kl_high"] - t["kl"]], fmt="o",
                         ms=4, capsize=2, label=name)
        if t["closed_form"].notna().all():
            ax.plot(t["tau"], t["closed_form"], "-", color=eb[0].get_color(), lw=1)
    b = table.drop_duplicates("tau").sort_values("tau")
    ax.plot(b["tau"], b["bound"], "k-", lw=2, label=r"bound $\min(1/(2\tau^2), 2/\tau)$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"temperature $\tau$")
    ax.set_ylabel(r"$\mathrm{KL}(Q_\tau \,\|\, \pi)$ (nats)")
    ax.legend(fontsize="small")
    return fig


_KIND_STYLE = {"average": ("C0", "o", "average (C4)"), "max": ("C1", "s", "max"), "dv": ("C2", "^", "Donsker-Varadhan")}


def continuity_ratios(table):
    """Mean ratio bound/actual change against k (log-log), one panel per (model, perturbation).

    Args: table from :func:`infonce_book.generalisation.c4_perturbations`.
    """
    models = list(dict.fromkeys(table.model))
    perts = list(dict.fromkeys(table.perturbation))
    fig, axes = plt.subplots(len(models), len(perts), figsize=(3.3 * len(perts), 2.9 * len(models)),
                             sharex=True, squeeze=False)
    for i, model in enumerate(models):
        for j, pert in enumerate(perts):
            ax = axes[i, j]
            sub = table[(table.model == model) & (table.perturbation == pert)].sort_values("k")
            for kind, (color, marker, label) in _KIND_STYLE.items():
                ax.loglog(sub.k, sub[f"ratio_{kind}_mean"], marker=marker, color=color, ms=4, label=label)
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_title(f"{model}, {pert}")
            if i == len(models) - 1:
                ax.set_xlabel("negatives $k$")
            if j == 0:
                ax.set_ylabel("bound / actual change")
    axes[0, 0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def lipschitz_vs_k(table):
    """``E Lambda`` (average and max forms) against k, measured (95% CI) and predicted (lines).

    Args: table from :func:`infonce_book.generalisation.c5_lipschitz_constants`.
    """
    data = list(dict.fromkeys(table.data))
    fig, axes = plt.subplots(1, len(data), figsize=(4.6 * len(data), 3.6), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], data):
        for kind in ("average", "max"):
            color, marker, label = _KIND_STYLE[kind]
            sub = table[(table.data == name) & (table.kind == kind)].sort_values("k")
            ax.errorbar(sub.k, sub["mean"], yerr=1.96 * sub.se, fmt=marker, color=color, ms=4, capsize=3,
                        label=f"{label}: measured")
            ax.plot(sub.k, sub.predicted, "-", color=color, lw=1, label=f"{label}: predicted")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("negatives $k$")
        ax.set_title(f"{name} inputs")
    axes[0, 0].set_ylabel(r"$\mathbb{E}\,\Lambda(z)$ (nats per unit of $\theta$)")
    axes[0, 0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def rademacher_sweeps(table, n_fit: dict | None = None):
    """The estimated Rademacher complexity (95% CI) and the covering bounds against n, k and d.

    Args: table from :func:`infonce_book.generalisation.c5_rademacher`; ``n_fit``: optional fitted
    ``{"slope", "intercept"}`` of log R_n on log n, drawn as a line.
    """
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, (sweep, xlabel) in zip(axes, [("n", "tuples $n$"), ("k", "negatives $k$"), ("d", "dimension $d$")]):
        sub = table[table.sweep == sweep].sort_values(sweep if sweep != "d" else "dim")
        x = sub["dim"] if sweep == "d" else sub[sweep]
        ax.errorbar(x, sub.value, yerr=[sub.value - sub.ci_low, sub.ci_high - sub.value], fmt="o", color="k",
                    ms=4, capsize=3, label=r"$\hat R_n$ (lower estimate)")
        ax.plot(x, sub.bound_avg, "--", color="C0", label="bound, average form")
        ax.plot(x, sub.bound_max, ":", color="C1", lw=2, label="bound, max form")
        if sweep == "n" and n_fit is not None:
            xs = np.array([x.min(), x.max()], dtype=float)
            ax.plot(xs, np.exp(n_fit["intercept"]) * xs ** n_fit["slope"], "-", color="C3", lw=1,
                    label=f"fit: slope {n_fit['slope']:.2f}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_title(f"against {sweep}")
    axes[0].set_ylabel("nats")
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def theorem1_terms_plot(grid):
    """Stacked terms of Theorem 1 against n (one panel per model and k) with the observed side.

    Args: table from :func:`infonce_book.generalisation.c6_grid`.
    """
    import pandas as pd

    terms = ["empirical_risk", "complexity", "confidence", "search_bias"]
    keys = grid[["model", "k"]].drop_duplicates().sort_values(["model", "k"]).values.tolist()
    fig, axes = plt.subplots(1, len(keys), figsize=(3.6 * len(keys), 3.4), squeeze=False)
    for ax, (model, k) in zip(axes[0], keys):
        sub = grid[(grid.model == model) & (grid.k == k)]
        tau = sub.tau.min()
        sub = sub[sub.tau == tau].groupby("n").mean(numeric_only=True).reset_index()
        bottom = np.zeros(len(sub))
        for i, term in enumerate(terms):
            vals = sub[term].fillna(0.0).to_numpy()
            ax.bar(np.arange(len(sub)), vals, bottom=bottom, color=f"C{i}", label=term.replace("_", " "))
            bottom = bottom + vals
        observed = sub.search_ce if model == "vmf" else sub.test_risk - np.log(sub.k)
        ax.plot(np.arange(len(sub)), observed, "ko-", ms=4, label="observed")
        ax.set_xticks(np.arange(len(sub)), [str(int(v)) for v in sub.n])
        ax.set_xlabel("training tuples $n$")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_title(f"{model}, k = {k}, tau = {tau:g}")
    axes[0, 0].set_ylabel("nats")
    axes[0, 0].legend(fontsize="x-small")
    fig.tight_layout()
    del pd
    return fig


def gap_vs_n(summary, tau_star: float, p_eff: float = 5.0):
    """The generalisation gap of ERM against n (vMF model), with the p_eff/n prediction.

    Args: table from :func:`infonce_book.generalisation.gap_summary`.
    """
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    vmf = summary[summary.model == "vmf"]
    for i, ((tau, k), sub) in enumerate(vmf.groupby(["tau", "k"])):
        sub = sub.sort_values("n")
        label = f"tau = {tau:g}, k = {k}"
        ax1.errorbar(sub.n, sub.gap_cv, yerr=1.96 * sub.gap_cv_se, fmt="o-", color=f"C{i}", ms=4, capsize=3,
                     label=label)
        ax2.errorbar(sub.n, sub.n_gap_cv, yerr=1.96 * sub.n_gap_cv_se, fmt="o-", color=f"C{i}", ms=4, capsize=3,
                     label=label)
    ns = np.array([vmf.n.min(), vmf.n.max()], dtype=float)
    ax1.plot(ns, p_eff / ns, "k--", label=f"{p_eff:g}/n (prediction at tau = {tau_star:g})")
    ax1.plot(ns, p_eff / ns[0] * np.sqrt(ns[0] / ns), "k:", label=r"slope $-1/2$ (reference)")
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("training tuples $n$")
    ax1.set_ylabel("E[gap] (nats)")
    ax1.legend(fontsize="x-small")
    ax2.axhline(p_eff, color="k", ls="--")
    ax2.set_xscale("log")
    ax2.set_xlabel("training tuples $n$")
    ax2.set_ylabel(r"$n \times$ E[gap]")
    fig.tight_layout()
    return fig


def digits_trends(table):
    """Test InfoNCE, generalisation gap and top-1 retrieval against the training k, per tau
    (means over seeds with 95% t-intervals). Args: table from ``c7_digits``."""
    from scipy import stats as _st

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for i, (tau, sub) in enumerate(table.groupby("tau")):
        g = sub.groupby("k")
        for ax, col in zip(axes, ["test_risk", "gap", "top1"]):
            m, s, c = g[col].mean(), g[col].std(), g[col].count()
            half = _st.t.ppf(0.975, np.maximum(c - 1, 1)) * s / np.sqrt(c)
            ax.errorbar(m.index, m.values, yerr=half.values, fmt="o-", color=f"C{i}", ms=4, capsize=3,
                        label=f"tau = {tau:g}")
    axes[2].axhline(float(table.chance.iloc[0]), color="k", ls=":", label="chance")
    for ax, lab in zip(axes, ["test InfoNCE (nats)", "gap: test - train (nats)", "top-1 retrieval (held-out)"]):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("training negatives $k$")
        ax.set_ylabel(lab)
    axes[1].axhline(0.0, color="k", lw=0.8)
    axes[2].legend(fontsize="small")
    fig.tight_layout()
    return fig


def digits_view(view):
    """Scatter of the 2-D PCA view of held-out digits' embeddings, coloured by class."""
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    sns.scatterplot(data=view, x="pc1", y="pc2", hue="label", palette="tab10", s=12, ax=ax, legend="full")
    ax.legend(title="digit", fontsize="x-small", ncol=2, loc="best")
    ax.set_xlabel("first principal component")
    ax.set_ylabel("second principal component")
    return fig
