"""Chapter 5's certificates of one trained cell of the vMF model (claim C6), each a few columns of
the cell's row, in nats of ``E H(M_hat_k, Q_hat_k) - log k``:

* ``bern_*``: the PAC-Bayes un-expected Bernstein certificate of the randomised embedding (Theorem
  ``c5-thm-pac-bernstein``) plus the sharp search bias ``b*_k`` (Corollary ``c5-cor-sharp-bias``),
  with the measured value of the same randomised embedding;
* ``det_*``: the same, derandomised (Proposition ``c5-prop-derandomise``): a certificate for the
  trained embedding itself, whose measured value is the cell's ``search_ce``;
* ``ho_*``: the hold-out certificate (Corollary ``c5-cor-holdout``) of an embedding trained on the
  first half of the tuples and evaluated on the second, with its own measured value;
* ``ddp_*`` and ``away_*`` (at the variant cells only): the certificates with a prior built from
  the first half of the tuples (the bound then uses the second half only), and with a prior
  centred away from the truth.

Every function takes the cell's trained embedding, tuples and generator; the draws happen in the
order the functions are called from :func:`~.runners.train_cell`.
"""

from __future__ import annotations

import math

import torch

from ...learning.certificates import bernstein_posterior_certificate, holdout_certificate
from ...learning.embeddings import loss_per_tuple, reference_embedding
from ...learning.pacbayes import canonical_mean, randomised_search_cross_entropy
from ...learning.training import fit
from ...theory.search import search_cross_entropy
from .config import GeneralisationSetup
from .direct import direct_certificate, direct_holdout, normalised_linear_tuple_search

__all__ = ["sharp_bias", "bernstein_columns", "holdout_columns", "variant_columns", "away_centre", "direct_columns"]


#: The grid of ``eta`` of the decoupled route's Bernstein certificates: 0.02 * 1.25^j, j = 0..10
#: (0.02 to 0.19), fixed before the data and inside ``(0, 1/b)`` for every shift of the grid at both
#: temperatures (``b = 2 beta - c <= 2 beta + 1 <= 5``), as Lemma ``c5-lem-unexpected-bernstein``
#: requires; the union bound pays log 11.
DECOUPLED_ETAS = tuple(0.02 * 1.25**j for j in range(11))


def sharp_bias(model, k: int, tau: float) -> float:
    """``b*_k`` of the model (nats): the largest ``E H - L_k^dec`` over similarity functions."""
    return float(model.sharp_search_bias([k], tau)[0])


def away_centre(centre: torch.Tensor, radius: float, seed: int) -> torch.Tensor:
    """A prior centre at Frobenius distance ``radius`` from ``centre`` in a direction drawn from
    ``seed`` alone (fixed before any data): ``centre + radius U / |U|``, ``U`` standard normal."""
    g = torch.Generator().manual_seed(int(seed))
    u = torch.randn(centre.numel(), generator=g, dtype=torch.float64).to(centre)
    return centre + radius * u / torch.linalg.vector_norm(u)


def _measured(mean, scale, test, model, tau, k, gen) -> dict:
    """``E_rho E H - log k`` of a randomised embedding, one draw per test query, and its error."""
    x, _, db = test
    h = randomised_search_cross_entropy(mean, scale, x, db, model.log_density_ratio(x, db), tau, gen) - math.log(k)
    return {"measured": float(h.mean()), "measured_se": float(h.std() / math.sqrt(len(h)))}


def _certificate(theta, centre, tuples, tau, setup: GeneralisationSetup, k: int, gen, derandomise: bool) -> dict:
    return bernstein_posterior_certificate(theta, centre, tuples, tau, delta=setup.delta_pb, delta_mc=setup.delta_mc,
                                           pilot_draws=setup.pilot_draws(k), final_draws=setup.final_draws(k),
                                           generator=gen, derandomise=derandomise, prior_scales=setup.prior_scales,
                                           etas=DECOUPLED_ETAS)


def bernstein_columns(phi, train, test, model, k: int, tau: float, b_star: float, setup: GeneralisationSetup,
                      gen, *, centre=None, prefix: str = "") -> dict:
    """The randomised (``<prefix>bern_*``) and the derandomised (``<prefix>det_*``) certificates of
    the trained ``phi`` with priors centred at ``centre`` (default: the centre of the class, the
    identity), computed on ``train``; the randomised one with its measured value."""
    centre = phi.center.detach() if centre is None else centre
    theta = phi.theta.detach()
    out = {}
    rand = _certificate(theta, centre, train, tau, setup, k, gen, derandomise=False)
    meas = _measured(rand["mean"], rand["posterior_scale"], test, model, tau, k, gen)
    det = _certificate(theta, centre, train, tau, setup, k, gen, derandomise=True)
    for name, cert in (("bern", rand), ("det", det)):
        out.update({f"{prefix}{name}_bound": cert["bound"] + b_star, f"{prefix}{name}_dec_bound": cert["bound"],
                    f"{prefix}{name}_emp": cert["emp_risk"], f"{prefix}{name}_mc_upper": cert["mc_upper"],
                    f"{prefix}{name}_kl": cert["kl"], f"{prefix}{name}_scale": cert["posterior_scale"],
                    f"{prefix}{name}_prior_scale": cert["prior_scale"], f"{prefix}{name}_eta": cert["eta"],
                    f"{prefix}{name}_shift": cert["shift"], f"{prefix}{name}_derand": cert["derandomisation"]})
    out.update({f"{prefix}bern_measured": meas["measured"], f"{prefix}bern_measured_se": meas["measured_se"],
                f"{prefix}det_distance": det["distance"]})
    return out


def _train_half(model, train, tau: float, setup: GeneralisationSetup, cell: dict, cell_seed: int, gen, dev):
    """The embedding trained (as the cell's own) on the first half of the cell's tuples."""
    half = tuple(t[: t.shape[0] // 2] for t in train)
    phi = reference_embedding(model).to(dev)
    with torch.no_grad():
        phi.set_theta_(phi.random_parameters(gen))
    fit(phi, half, tau, steps=setup.steps, lr=phi.radius / 25, seed=(int(cell_seed) + 1) % 2**31,
        batch_size=cell["batch"])
    return phi, half, tuple(t[t.shape[0] // 2:] for t in train)


def holdout_columns(model, train, test, cell: dict, cell_seed: int, b_star: float, setup: GeneralisationSetup,
                    gen, dev):
    """``ho_*``: the hold-out certificate of the embedding trained on the first half of ``train``,
    evaluated on the second half (``ho_bound``), and that embedding's measured ``E H - log k``
    (``ho_measured``) and decoupled risk; also returns the half-trained embedding and the halves
    (for the data-dependent prior)."""
    k, tau = cell["k"], cell["tau"]
    phi1, first, second = _train_half(model, train, tau, setup, cell, cell_seed, gen, dev)
    with torch.no_grad():
        ref = (loss_per_tuple(phi1, *first, tau, variant="decoupled") - math.log(k)).cpu().numpy()
        held = (loss_per_tuple(phi1, *second, tau, variant="decoupled") - math.log(k)).cpu().numpy()
        x, _, db = test
        h = search_cross_entropy(torch.einsum("bd,bkd->bk", phi1(x), phi1(db)), model.log_density_ratio(x, db),
                                 tau) - math.log(k)
    cert = holdout_certificate(ref, held, upper=2.0 / tau, delta=setup.delta_pb + setup.delta_mc)
    cols = {"ho_bound": cert["bound"] + b_star, "ho_dec_bound": cert["bound"], "ho_heldout": cert["heldout_mean"],
            "ho_measured": float(h.mean()), "ho_measured_se": float(h.std() / math.sqrt(len(h))),
            "ho_eta": cert["eta"]}
    return cols, phi1, second


def variant_columns(phi, phi1, second, train, test, model, k: int, tau: float, b_star: float,
                    setup: GeneralisationSetup, gen) -> dict:
    """The certificates with a data-dependent prior (``ddp_*``: centred at the half-trained
    embedding's parameters, the bound computed on the other half) and with a prior centred away
    from the truth (``away_*``: at distance ``setup.away_radius`` from the identity)."""
    centre = canonical_mean(phi1.theta.detach(), phi.center.detach(), phi.input_dim)
    out = bernstein_columns(phi, second, test, model, k, tau, b_star, setup, gen, centre=centre, prefix="ddp_")
    away = away_centre(phi.center.detach(), setup.away_radius, setup.away_seed)
    out.update(bernstein_columns(phi, train, test, model, k, tau, b_star, setup, gen, centre=away, prefix="away_"))
    return out


def direct_columns(phi, phi1, train, test, model, k: int, tau: float, oracle: float, setup: GeneralisationSetup,
                   gen) -> dict:
    """The direct certificates of ``E H - log k`` from the per-tuple search cross-entropy ``h``
    (Theorem ``c5-thm-tuple-search``; they assume the density ratio ``m`` known), for a variant cell:

    * ``dir_bern_*`` and ``dir_det_*``: the randomised and the derandomised certificate of the
      embedding trained on **all** tuples, with priors centred at the half-trained embedding
      (``phi1``, first half), the shift ``c`` = the mean of ``h(phi1) - log k`` on the first half,
      the bound computed on the second half (a prior that does not know the truth);
    * ``dir_ho_*``: the hold-out certificate of ``phi1`` from ``h`` on the second half (shift and
      ``eta`` from the first half);
    * ``dir_truth_*`` (ablation): the derandomised certificate with priors centred at the truth
      (the identity) and the shift at the oracle's exact value ``oracle`` (both data-free), the
      bound on all tuples.

    Each with its parts (empirical value, variance, complexity, Monte Carlo and derandomisation
    terms) and the measured ``E H - log k`` of the embedding it covers (test databases)."""
    x, _, xn = train
    n = x.shape[0]
    half = n // 2
    lm = model.log_density_ratio(x, xn)
    theta = phi.theta.detach().reshape(-1)
    theta1 = phi1.theta.detach().reshape(-1)
    with torch.no_grad():
        h1 = normalised_linear_tuple_search(theta1.expand(n, -1), x, xn, lm, tau).cpu().numpy()
    first, second = h1[:half], h1[half:]
    centre = canonical_mean(theta1, phi.center.detach(), phi.input_dim)
    shift = float(first.mean())
    out = {}
    kw = dict(delta=setup.delta_pb, delta_mc=setup.delta_mc, pilot_draws=setup.direct_pilot_draws,
              final_draws=setup.direct_final_draws, generator=gen)
    parts = ("emp", "mc_cost", "variance", "variance_term", "kl_term", "confidence_term", "derandomisation",
             "kl", "prior_scale", "posterior_scale", "eta")
    for name, derand in (("dir_bern", False), ("dir_det", True)):
        cert = direct_certificate(theta, centre, x[half:], xn[half:], lm[half:], tau, shift=shift,
                                  derandomise=derand, **kw)
        out[f"{name}_bound"] = cert["bound"]
        out.update({f"{name}_{p}": cert[p] for p in parts})
    truth = direct_certificate(theta, phi.center.detach(), x, xn, lm, tau, shift=oracle, derandomise=True, **kw)
    out["dir_truth_bound"] = truth["bound"]
    out.update({f"dir_truth_{p}": truth[p] for p in parts})
    ho = direct_holdout(first, second, tau, delta=setup.delta_pb + setup.delta_mc)
    out.update(dir_ho_bound=ho["bound"], dir_ho_heldout=ho["heldout_mean"], dir_ho_eta=ho["eta"])
    xt, _, dbt = test
    with torch.no_grad():
        lmt = model.log_density_ratio(xt, dbt)
        scale = out["dir_bern_posterior_scale"]
        mean = canonical_mean(theta, centre, phi.input_dim)
        th = mean[None, :] + scale * torch.randn(xt.shape[0], theta.numel(), generator=gen, dtype=theta.dtype,
                                                 device=theta.device)
        hb = normalised_linear_tuple_search(th, xt, dbt, lmt, tau)
    out.update(dir_bern_measured=float(hb.mean()), dir_bern_measured_se=float(hb.std() / math.sqrt(len(hb))))
    return out
