"""Chapter 6, ``book/c6_digits.md``: generalisation on real data, handwritten digits (claim C7).

Runners take the page's sizes and return tidy tables (cached by configuration); ``ledger`` turns
tables into claims-ledger records (it documents its verdict rules); ``fig_*`` draw the page's
figures.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch

from ..datasets import digits
from ..experiment.cache import cached
from ..experiment.setup import ChapterContext, setup_chapter
from ..learning.embeddings import SphereMLP
from ..learning.training import fit
from ..theory.stats import Estimate, linear_slope, t_quantile
from ..utils.device import resolve_device
from ..utils.progress import progress

STEM = "c6_digits"

SIZES = {
    "smoke": {"ks": [1, 16, 64], "taus": [0.5], "seeds": 2, "steps": 80, "batch_size": 64, "n_queries": 1000,
              "k_eval": 64, "view_steps": 80},
    "standard": {"ks": [1, 4, 16, 64, 256], "taus": [0.1, 0.5], "seeds": 3, "steps": 200, "batch_size": 64,
                 "n_queries": 2000, "k_eval": 64, "view_steps": 200},
    "full": {"ks": [1, 4, 16, 64, 256], "taus": [0.05, 0.1, 0.5], "seeds": 8, "steps": 1000, "batch_size": 256,
             "n_queries": 20000, "k_eval": 64, "view_steps": 1000},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


def _digits_setup(n_train: int, seed: int, dev):
    images, labels = digits.load_digits(device=dev)
    return digits.split(images, labels, n_train, seed=seed)


@cached
def train_and_evaluate(ks: list, taus: list, n_seeds: int, steps: int, batch_size: int, n_queries: int,
                       k_eval: int, n_train: int, device: str, seed: int):
    """Train ``SphereMLP(64 -> 128 -> 16)`` on augmented digits (:mod:`infonce_book.datasets.digits`) for each
    (tau, k, seed) and evaluate on the training and the held-out images: InfoNCE at the training k
    (``train_risk``, ``test_risk``, ``gap``), top-1 retrieval of an augmented copy among ``k_eval``
    unseen items (``top1``), nearest-neighbour class agreement (``nn_class``)."""
    dev = resolve_device(device)
    tr, trl, te, tel = _digits_setup(n_train, seed, dev)
    rows = []
    cells = [(tau, k, s) for tau in taus for k in ks for s in range(n_seeds)]
    for tau, k, s in progress(cells, desc="c7 digits"):
        phi = SphereMLP(64, 128, 16, seed=1000 * int(seed) + s).to(dev)
        fit(phi, digits.AugmentedTuples(tr, k), tau, steps=steps, lr=3e-3, batch_size=batch_size,
            seed=1000 * int(seed) + s)
        gen = torch.Generator(device=dev).manual_seed(10_000 + 1000 * int(seed) + s)
        on_train = digits.evaluate(phi, tr, trl, k=k, tau=tau, k_eval=k_eval, n_queries=n_queries, generator=gen)
        on_test = digits.evaluate(phi, te, tel, k=k, tau=tau, k_eval=k_eval, n_queries=n_queries, generator=gen)
        rows.append({"tau": tau, "k": k, "seed": s, "train_risk": on_train["risk"], "test_risk": on_test["risk"],
                     "test_se": on_test["risk_se"], "gap": on_test["risk"] - on_train["risk"],
                     "top1": on_test["top1"], "top1_train": on_train["top1"], "nn_class": on_test["nn_class"],
                     "chance": 1.0 / (k_eval + 1)})
    return pd.DataFrame(rows)


@cached
def view(k: int, tau: float, steps: int, batch_size: int, n_train: int, device: str, seed: int):
    """2-D PCA view of the held-out digits' embeddings (``pc1, pc2, label``) after training at (k, tau)."""
    dev = resolve_device(device)
    tr, _, te, tel = _digits_setup(n_train, seed, dev)
    phi = SphereMLP(64, 128, 16, seed=1000 * int(seed)).to(dev)
    fit(phi, digits.AugmentedTuples(tr, k), tau, steps=steps, lr=3e-3, batch_size=batch_size, seed=1000 * int(seed))
    xy = digits.embedding_2d(phi, te)
    return pd.DataFrame({"pc1": xy[:, 0], "pc2": xy[:, 1], "label": tel.cpu().numpy()})


def ledger(ledger, table: pd.DataFrame) -> dict:
    """Ledger (real data, intervals over seeds), per temperature:

    * the gap levels off in k: the change of the gap between the two largest k (paired by seed),
      predicted 0, t-interval over seeds (Theorem ``c6-thm-main`` bounds the gap by terms that do
      not grow without bound in k; it does not say that the gap is constant in k);
    * the search improves with k: the slope of the top-1 retrieval accuracy in log k, one-sided
      (passes when the interval lies above 0).
    """
    out = {}
    for tau, sub in table.groupby("tau"):
        ks = sorted(int(v) for v in sub.k.unique())
        k1, k2 = ks[-2], ks[-1]
        a = sub[sub.k == k1].set_index("seed").gap
        b = sub[sub.k == k2].set_index("seed").gap
        diff = Estimate.from_samples((b - a).dropna().to_numpy(), t=True, method="seeds, paired")
        ledger.record(claim="C7", id=f"C7-digits-gap-levels-tau{tau:g}",
                      quantity=f"gap(k={k2}) - gap(k={k1}) (digits, paired by seed)", predicted=0.0,
                      measured=diff, params={"tau": tau, "k_pair": [k1, k2], "seeds": diff.n})
        logk = np.log(sub.k.to_numpy(float))
        g = linear_slope(logk, sub.gap)
        t = linear_slope(logk, sub.top1)
        ledger.record(claim="C7", id=f"C7-digits-top1-slope-tau{tau:g}",
                      quantity="slope of top-1 retrieval accuracy against log k (digits)", predicted=0.0,
                      measured=t, passed=t.ci_low > 0.0,
                      params={"tau": tau, "ks": ks, "seeds": int(sub.seed.nunique()),
                              "rule": "ci_low > predicted (improves)"})
        key = f"{tau:g}".replace(".", "_")
        out.update({f"gap_change_{key}": diff.mean, f"gap_change_low_{key}": diff.ci_low,
                    f"gap_change_high_{key}": diff.ci_high, f"gap_k1_{key}": k1, f"gap_k2_{key}": k2,
                    f"gap_slope_{key}": g.mean, f"gap_slope_low_{key}": g.ci_low,
                    f"gap_slope_high_{key}": g.ci_high, f"top1_slope_{key}": t.mean,
                    f"top1_slope_low_{key}": t.ci_low, f"top1_slope_high_{key}": t.ci_high})
    return out


def fig_trends(table):
    """Test InfoNCE, generalisation gap and top-1 retrieval against the training k, per tau
    (means over seeds with 95% t-intervals). Args: table from :func:`train_and_evaluate`."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for i, (tau, sub) in enumerate(table.groupby("tau")):
        g = sub.groupby("k")
        for ax, col in zip(axes, ["test_risk", "gap", "top1"]):
            m, s, c = g[col].mean(), g[col].std(), g[col].count()
            half = np.array([t_quantile(0.95, max(int(n) - 1, 1)) for n in c]) * s / np.sqrt(c)
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


def fig_view(view):
    """Scatter of the 2-D PCA view of held-out digits' embeddings, coloured by class."""
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    sns.scatterplot(data=view, x="pc1", y="pc2", hue="label", palette="tab10", s=12, ax=ax, legend="full")
    ax.legend(title="digit", fontsize="x-small", ncol=2, loc="best")
    ax.set_xlabel("first principal component")
    ax.set_ylabel("second principal component")
    return fig
