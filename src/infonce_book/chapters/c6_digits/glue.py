"""Chapter 6, the page's numbers: the parameters its prose quotes (:func:`describe`) and the
summaries of the runners' tables that it glues (with
:func:`infonce_book.experiment.style.glue_all`) or shows as tables, keyed by the roles of
:mod:`.roles` (``_lo``, ``_hi``)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...datasets import digits
from ...theory.stats import Estimate, seeds_needed
from . import prose
from .config import DigitsSetup
from .ledger import k_needed
from .roles import by_tau_role, k_roles, tau_roles

__all__ = ["describe", "training_numbers", "training_summary", "needed_negatives", "exercise_numbers",
           "false_negative_summary"]

# The design of earlier versions of the page, whose false-negative bias the page quantifies: a
# split into OLD_N_TRAIN = 1000 training images and the other OLD_N_HELDOUT = 797 held out.
OLD_N_TRAIN = 1000
OLD_N_HELDOUT = digits.N_IMAGES - OLD_N_TRAIN


def describe(setup: DigitsSetup, size: dict, kl_taus) -> dict:
    """The parameters the page's prose quotes (glued by :func:`infonce_book.experiment.style.glue_all`):
    the setup's fields and what follows from them (``n_images``: :data:`~infonce_book.datasets.digits.N_IMAGES`),
    the profile's sizes ``size`` and the temperatures ``kl_taus`` of the C3 check."""
    n_eval = setup.n_eval
    roles = tau_roles(size["taus"])
    return {"n_images": digits.N_IMAGES, "n_train": setup.n_train, "n_heldout": setup.n_heldout,
            "n_eval": n_eval, "hidden": setup.hidden, "dim_out": setup.dim_out, "sphere_dim": setup.dim_out - 1,
            "rotation": setup.max_rotation, "shift": setup.max_shift, "noise": setup.noise, "lr": setup.lr,
            "schedule": setup.schedule, "check_every": setup.check_every, "window": setup.window,
            "window_steps": setup.window * setup.check_every, "rtol": setup.rtol, "rtol_pct": 100 * setup.rtol,
            "monitor_aug": setup.monitor_aug, "margin": setup.margin, "alpha": setup.alpha,
            "level_pct": round(100 * (1 - 2 * setup.alpha)), "margin_ratio": math.exp(setup.margin),
            "ks": ", ".join(str(k) for k in size["ks"]), "taus": ", ".join(f"{t:g}" for t in size["taus"]),
            "seeds": size["seeds"], "max_steps": size["max_steps"], "batch_size": size["batch_size"],
            "k_eval": size["k_eval"], "eval_aug": size["eval_aug"], "eval_tuples": size["eval_tuples"],
            "eval_siblings": size["eval_aug"] - 1, "n_eval_others": n_eval - 1,
            **k_roles(size["ks"]), "k_pair": ", ".join(str(k) for k in k_roles(size["ks"]).values()),
            "tau_lo": roles["lo"], "tau_hi": roles["hi"], "one_tau_note": prose.one_temperature_note(size["taus"]),
            "rate_k_max": 2 ** size["rate_ks_log2"], "n_boot": size["n_boot"],
            "p_no_sibling": (1 - (size["eval_aug"] - 1) / (n_eval * size["eval_aug"] - 1)) ** size["k_eval"],
            "kl_taus": ", ".join(f"{t:g}" for t in kl_taus), "log2": math.log(2.0),
            "learned_embeddings": prose.learned_embeddings_phrase(size["taus"])}


def training_numbers(trained: pd.DataFrame, setup: DigitsSetup) -> dict:
    """Glue values of :func:`~.runners.train_embeddings` for the largest k, per tau role: the runs
    the rule stopped, the mean steps, the training risk at the last check and its relative
    decrease over the rule's last window (in %, mean over seeds: how fast the risk was still
    falling)."""
    out = {"runs_stopped": int(trained.converged.sum()), "runs": int(len(trained))}
    k2 = k_roles(trained.k)["k2"]
    per_tau = {}
    for tau, sub in trained[trained.k == k2].groupby("tau"):
        drops = [100 * (c[-1 - setup.window] - c[-1]) / c[-1 - setup.window] for c in sub.curve_train
                 if len(c) > setup.window]
        stopped, n = int(sub.converged.sum()), len(sub)
        per_tau[tau] = {"stopped": stopped, "stopped_text": prose.stopped_text(stopped, n),
                        "steps": float(sub.steps_run.mean()), "monitor": float(sub.train_monitor.mean()),
                        "drop": float(np.mean(drops)) if drops else float("nan")}
    out.update(by_tau_role(per_tau))
    return out


def training_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per (tau, k): the training risk reached (mean over seeds), the steps run, how many runs the
    rule stopped, and the gap with its 95% t-interval over seeds (nats)."""
    rows = []
    for (tau, k), sub in table.groupby(["tau", "k"]):
        g = Estimate.from_samples(sub.gap.to_numpy(), t=True, method="seeds")
        rows.append({"tau": tau, "k": k, "train risk": sub.train_risk.mean(), "held-out risk": sub.test_risk.mean(),
                     "gap": g.mean, "gap 95% low": g.ci_low, "gap 95% high": g.ci_high,
                     "steps": sub.steps_run.mean(), "stopped by rule": f"{int(sub.converged.sum())}/{len(sub)}",
                     "top-1": sub.top1.mean(), "chance log(k+1)": math.log(k + 1)})
    return pd.DataFrame(rows)


def needed_negatives(rates: dict) -> pd.DataFrame:
    """"How many negatives do I need?": per training tau, the plug-in ``c1``, ``c2`` and, for a
    bias below 0.1 and 0.01 nats, the smallest k of the grid from which the measured bias's 95%
    interval stays inside the tolerance (NaN: not within the grid), next to the first-order
    prediction ``|c1|/tolerance``."""
    rows = []
    for tau, rate in rates.items():
        c1, c2 = float(rate.c1.iloc[0]), float(rate.c2.iloc[0])
        rows.append({"tau": tau, "c1 (plug-in)": c1, "c2 (plug-in)": c2,
                     "k for 0.1 nats (measured)": k_needed(rate, 0.1), "|c1|/0.1": abs(c1) / 0.1,
                     "k for 0.01 nats (measured)": k_needed(rate, 0.01), "|c1|/0.01": abs(c1) / 0.01})
    return pd.DataFrame(rows)


def exercise_numbers(table: pd.DataFrame, rates: dict, fn: dict, setup: DigitsSetup) -> dict:
    """The numbers the solutions of the page's exercises quote (computed, then glued), keyed by
    tau role."""
    per_tau = {}
    for tau, sub in table.groupby("tau"):
        k1, k2 = k_roles(sub.k).values()
        a, b = (sub[sub.k == kk].set_index("seed").gap for kk in (k1, k2))
        d = (b - a).dropna().to_numpy()
        est = Estimate.from_samples(d, 1 - 2 * setup.alpha, t=True)
        n = seeds_needed(d, setup.margin, setup.alpha)
        rate, f = rates[tau], fn[tau].iloc[-1]
        per_tau[tau] = {"ex_sd": float(d.std(ddof=1)), "ex_mean": float(d.mean()),
                        "ex_seeds": prose.seeds_text(n),
                        "ex_margin_min": max(abs(est.ci_low), abs(est.ci_high)),
                        "ex_k10pct": 10 * abs(float(rate.c2.iloc[0])) / abs(float(rate.c1.iloc[0])),
                        "ex_per_fn": float(f.per_fn), "ex_per_fn_low": float(f.per_fn_low),
                        "ex_per_fn_high": float(f.per_fn_high), "ex_fn_k": int(f.k)}
    return by_tau_role(per_tau)


def false_negative_summary(fn: dict) -> dict:
    """Glue values of :func:`~.runners.false_negative_bias` per tau role, at the largest k of each
    table: the increase with its interval, its cost per expected false negative, and what that cost
    implies for two pools of 797 and 1000 images (:data:`OLD_N_HELDOUT` and :data:`OLD_N_TRAIN`,
    the design of earlier versions of the page): ``per_fn k (1/797 - 1/1000)``, next to the
    heuristic ``log 2 k (1/797 - 1/1000)``."""
    per_tau, k = {}, None
    for tau, f in fn.items():
        r = f.iloc[-1]
        k = int(r.k)
        scale = k * (1 / OLD_N_HELDOUT - 1 / OLD_N_TRAIN)
        per_tau[tau] = {"fn_inc": float(r.increase), "fn_inc_low": float(r.increase_low),
                        "fn_inc_high": float(r.increase_high), "fn_per": float(r.per_fn),
                        "fn_old_bias": float(r.per_fn) * scale, "fn_old_bias_low": float(r.per_fn_low) * scale,
                        "fn_old_bias_high": float(r.per_fn_high) * scale}
    return {**by_tau_role(per_tau), "fn_k": k, "fn_pool_small": OLD_N_HELDOUT, "fn_pool_large": OLD_N_TRAIN,
            "fn_heuristic": math.log(2.0) * k * (1 / OLD_N_HELDOUT - 1 / OLD_N_TRAIN)}
