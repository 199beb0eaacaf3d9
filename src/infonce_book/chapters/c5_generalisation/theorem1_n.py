"""Chapter 5: Theorem ``c5-thm-main`` (the sharp uniform bound) against n at the headline cell, up
to the n where it becomes informative (claim C6): one trained embedding per n (minibatch ERM, the
bound holds for every embedding of the class, so exact ERM is not needed), each term of the bound
measured, and the smallest n of the grid at which the bound falls below the uniform search's 0.

* :func:`theorem1_against_n`: the table (cached), one row per n;
* :func:`ledger_theorem1_n`: its records.
"""

from __future__ import annotations

import zlib

import pandas as pd
import torch

from ...experiment.cache import cached
from ...experiment.ledger import Rule
from ...learning.embeddings import loss_per_tuple, reference_embedding
from ...learning.training import fit
from ...theory.stats import Estimate
from ...utils.device import one_thread, resolve_device
from .certify import sharp_bias
from .config import GeneralisationSetup
from .runners import _sharp_bound

__all__ = ["theorem1_against_n", "ledger_theorem1_n", "RECORD_FROM_N"]

#: The record is made where the grid reaches this n (the standard and full profiles): the bound's
#: terms at n = 2048 put its crossing near 8 * 10^4 (complexity ~ n^{-1/2}); a grid that stops
#: before (the smoke profile) shows its values without a claim.
RECORD_FROM_N = 2**17


@cached
def theorem1_against_n(model, k: int, tau: float, ns: list, batch: int, setup: GeneralisationSetup, moments: dict,
                       seed: int, device: str) -> pd.DataFrame:
    """The sharp bound of Theorem ``c5-thm-main`` and its terms (``empirical_risk``,
    ``complexity``, ``confidence``, ``search_bias``, ``bound``; nats of ``E H - log k``) for one
    embedding trained by minibatch ERM (``batch`` tuples per step, ``setup.steps`` steps) on each of
    ``ns`` training sets of the vMF ``model``, at ``k`` and ``tau``: one row per n."""
    dev = resolve_device(device)
    rows = []
    b_star = sharp_bias(model, k, tau)
    with one_thread(device):
        for n in ns:
            n = int(n)
            cell_seed = int(seed) * 1_000_003 + zlib.crc32(f"theorem1-n{n}-k{k}-tau{tau:.6g}".encode())
            gen = torch.Generator(device=dev).manual_seed(cell_seed)
            phi = reference_embedding(model).to(dev)
            with torch.no_grad():
                phi.set_theta_(phi.random_parameters(gen))
            train = model.sample_tuples(n, k, generator=gen, device=dev)
            fit(phi, train, tau, steps=setup.steps, lr=phi.radius / 25, seed=cell_seed % 2**31,
                batch_size=min(int(batch), n))
            with torch.no_grad():
                risk = float(loss_per_tuple(phi, *train, tau).mean())
            terms = _sharp_bound(phi, model, n, k, tau, risk, setup.delta, moments, 1.0, b_star)
            rows.append({"n": n, "k": k, "tau": tau, "train_risk": risk,
                         **{key.removeprefix("sharp_"): terms[key] for key in
                            ("sharp_empirical_risk", "sharp_complexity", "sharp_confidence", "sharp_search_bias",
                             "sharp_bound")}})
    return pd.DataFrame(rows)


def ledger_theorem1_n(ledger, table: pd.DataFrame) -> dict:
    """Records of the sharp bound against n (each bound value is a deterministic function of its
    training set, so an exact value):

    * ``C6-sharp-informative-largest-n-k<k>-tau<tau>``: the bound at the largest n of the grid is
      below the uniform search's 0 (only where the grid reaches :data:`RECORD_FROM_N`);
    * the page's numbers: the smallest n of the grid with a negative bound (``crossing_n``, or
      ``None``), the bound and its terms at the largest n, and the n at which the complexity term
      alone (falling as n^{-1/2}) would equal the distance from the empirical risk to 0 plus the
      other terms (``needed_n``, from the largest n's values)."""
    t = table.sort_values("n")
    last = t.iloc[-1]
    k, tau = int(last.k), float(last.tau)
    below = t[t.bound < 0]
    crossing = int(below.n.iloc[0]) if len(below) else None
    if int(last.n) >= RECORD_FROM_N:
        ledger.record(claim="C6", id=f"C6-sharp-informative-largest-n-k{k}-tau{tau:g}",
                      quantity=f"sharp uniform bound on E H - log k at n = {int(last.n):,} (one trained embedding)",
                      predicted=0.0, measured=Estimate.exact(float(last.bound)),
                      rule=Rule.bound("measured", "<", note="below the uniform search (informative)"),
                      params={"ns": [int(v) for v in t.n], "k": k, "tau": tau, "crossing_n": crossing})
    return {"largest_n": int(last.n), "bound_largest": float(last.bound),
            "complexity_largest": float(last.complexity), "confidence_largest": float(last.confidence),
            "risk_largest": float(last.empirical_risk), "bias_largest": float(last.search_bias),
            "crossing": f"{crossing:,}" if crossing else "no n of the grid",
            "crossing_found": crossing is not None, "smallest_n": int(t.n.iloc[0]),
            "bound_smallest": float(t.bound.iloc[0])}
