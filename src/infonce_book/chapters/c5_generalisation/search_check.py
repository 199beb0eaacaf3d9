"""Chapter 5's Monte Carlo check of the exact search correction (claim C6): for several similarity
profiles ``s(x, y) = f(<x, y>)`` of the vMF model, the measured ``E H(M_hat_k, Q_hat_k) -
L_k^dec`` against ``beta E_pi[f (m - w_k(m))]`` (Proposition ``c5-prop-search-exact``), and for the
extremal profile ``sign(<x, y> - t*)`` against ``b*_k`` (Corollary ``c5-cor-sharp-bias``).

Per query the two sides differ only in their first terms: ``H - l^dec = beta (s(x, x+) - I_hat_k)``
with ``I_hat_k`` the idealised search's average similarity over the database (``log sum_j W_j``
cancels), so the measurement is that average over queries.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from ...experiment.cache import cached
from ...theory.stats import Estimate
from ...utils.device import one_thread, resolve_device

__all__ = ["PROFILES", "search_correction_check", "ledger_search_correction"]

#: The similarity profiles ``f`` of the check (functions of the cosine, values in [-1, 1]), with
#: their labels in mathematics; ``"extremal"`` is ``sign(t - t*)`` at the model's ``t*``.
PROFILES = {"identity": r"$t$", "negated": r"$-t$", "square": r"$t^2$", "tanh": r"$\tanh 3t$",
            "step": r"$\mathrm{sign}(t - 1/2)$", "extremal": r"$\mathrm{sign}(t - t^\star)$"}


def _profile(name: str, t, threshold: float):
    lib = torch if isinstance(t, torch.Tensor) else np
    return {"identity": lambda: t, "negated": lambda: -t, "square": lambda: t * t, "tanh": lambda: lib.tanh(3 * t),
            "step": lambda: lib.sign(t - 0.5), "extremal": lambda: lib.sign(t - threshold)}[name]()


@cached
def search_correction_check(model, k: int, tau: float, n_queries: int, seed: int, device: str) -> pd.DataFrame:
    """One row per profile: ``predicted`` (exact, quadrature), ``measured`` and ``se`` (Monte
    Carlo over ``n_queries`` queries with fresh databases of size k), and ``b_star``; in nats."""
    beta = 1.0 / tau
    dev = resolve_device(device)
    threshold = model.sharp_bias_threshold(k)
    rows = []
    with one_thread(device), torch.no_grad():
        gen = torch.Generator(device=dev).manual_seed(int(seed) * 1_000_003 + 5)
        x = model.sample_data(n_queries, generator=gen, device=dev)
        t_pos = (x * model.sample_positive(x, generator=gen)).sum(-1)
        t_db = torch.einsum("bd,bkd->bk", x, model.sample_negatives(n_queries, k, generator=gen, device=dev))
        ideal = torch.softmax(model.kappa * t_db, dim=-1)  # M_hat_k(x, x_j)
        for name in PROFILES:
            values = beta * (_profile(name, t_pos, threshold) - (ideal * _profile(name, t_db, threshold)).sum(-1))
            predicted = float(model.search_correction(lambda t, nm=name: _profile(nm, t, threshold), [k], tau)[0])
            rows.append({"profile": name, "k": k, "tau": tau, "predicted": predicted, "measured": float(values.mean()),
                         "se": float(values.std() / math.sqrt(n_queries)), "n_queries": n_queries,
                         "threshold": threshold})
    table = pd.DataFrame(rows)
    table["b_star"] = float(model.sharp_search_bias([k], tau)[0])
    return table


def ledger_search_correction(ledger, table: pd.DataFrame) -> dict:
    """``C6-search-exact-<profile>-k<k>`` (two-sided, 95%): the measured ``E H - L_k^dec`` of each
    profile against the exact correction; for ``extremal`` the prediction is ``b*_k`` itself (the
    sharp bias is attained). Returns the page's numbers."""
    out = {}
    for _, r in table.iterrows():
        est = Estimate(r.measured, r.se, int(r.n_queries), 0.95, method="monte carlo")
        ledger.record(claim="C6", id=f"C6-search-exact-{r.profile}-k{int(r.k)}",
                      quantity=f"E H - L_k^dec for s = f(<x, y>), f = {r.profile} (vMF, tau = {r.tau:g})",
                      predicted=float(r.b_star if r.profile == "extremal" else r.predicted), measured=est,
                      params={"profile": r.profile, "k": int(r.k), "tau": float(r.tau), "threshold": float(r.threshold)})
        out[f"check_{r.profile}"] = float(r.measured)
    out.update(check_b_star=float(table.b_star.iloc[0]), check_threshold=float(table.threshold.iloc[0]),
               check_k=int(table.k.iloc[0]), check_queries=int(table.n_queries.iloc[0]),
               check_identity_predicted=float(table.set_index("profile").predicted["identity"]))
    return out
