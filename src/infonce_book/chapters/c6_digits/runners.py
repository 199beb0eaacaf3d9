"""Chapter 6, the runners: a :class:`~.config.DigitsSetup` and sizes in, a tidy table out, cached
by configuration (:func:`~infonce_book.experiment.cache.cached`).

* :func:`train_embeddings` -- one embedding per (k, tau, split), trained to a plateau (claim C7);
  its table keeps the weights, which :func:`member_state` picks for the runners below.
* :func:`evaluate_embeddings` -- the generalisation gap and the search of every embedding (C7).
* :func:`heldout_certificates` -- a hold-out certificate on every embedding's risk (C6).
* :func:`learned_rate`, :func:`learned_kl` -- C1/C2 and C3 measured on one learned embedding.
* :func:`false_negative_bias` -- what negatives drawn from the anchor's own image cost.
* :func:`view` -- a 2-D PCA view of one embedding's held-out digits.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from ...datasets import digits
from ...experiment.cache import cached
from ...learning.certificates import holdout_certificate, holdout_size_needed
from ...learning.embeddings import SphereMLP, SphereMLPEnsemble
from ...learning.training import PlateauStop, fit_ensemble
from ...losses import info_nce_from_similarities
from ...theory.bounds import kl_softmax_bound
from ...theory.estimators import finite_law_monte_carlo, plugin_bias_coefficients, plugin_weight_moments
from ...theory.stats import bootstrap_mean
from ...utils.device import one_thread, resolve_device
from .config import DigitsSetup

__all__ = ["train_embeddings", "evaluate_embeddings", "heldout_certificates", "member_state", "embedding_from_state",
           "learned_rate", "learned_kl", "false_negative_bias", "view"]


def _member_seed(seed: int, s: int) -> int:
    """The seed of split (or stream) ``s`` of a run at ``seed``: distinct for ``s < 1000``."""
    return 1000 * int(seed) + int(s)


def _split(setup: DigitsSetup, seed: int, s: int, dev):
    """Split ``s``: ``(train images, train labels, held-out images, held-out labels)``, the
    held-out pool cut to ``min(n_train, n_held_out)`` images by a seeded permutation."""
    images, labels = digits.load_digits(device=dev)
    tr, trl, te, tel = digits.split(images, labels, setup.n_train, seed=_member_seed(seed, s))
    n_eval = min(tr.shape[0], te.shape[0])
    keep = torch.randperm(te.shape[0], generator=torch.Generator().manual_seed(_member_seed(seed, s) + 7))[:n_eval]
    keep = keep.to(dev)
    return tr, trl, te[keep], tel[keep]


def _eval_pool(images, labels, n_eval: int, seed: int):
    """A seeded subset of ``n_eval`` images of a pool (all of them when it has ``n_eval``)."""
    if images.shape[0] == n_eval:
        return images, labels
    keep = torch.randperm(images.shape[0], generator=torch.Generator().manual_seed(seed))[:n_eval]
    keep = keep.to(images.device)
    return images[keep], labels[keep]


class _Monitor:
    """The stopping rule's monitor: each member's InfoNCE risk on fixed tuples (common random
    numbers) drawn from a fixed bank of its training pool; it also logs the risk on a bank of
    the held-out pool (not used by the rule) for the training figure."""

    def __init__(self, train_pools, heldout_pools, setup: DigitsSetup, k: int, taus, seed: int):
        self.k, self.taus, self.seed = k, list(taus), seed
        gen = torch.Generator(device=train_pools.device).manual_seed(seed)
        self.banks = [[digits.AugmentationBank(p, setup.monitor_aug, gen, **setup.augment) for p in pools]
                      for pools in (train_pools, heldout_pools)]
        self.log = []

    def _risks(self, ensemble, banks):
        views = torch.stack([b.views for b in banks])
        emb = ensemble(views)
        out = []
        for s, bank in enumerate(banks):
            s_pos, s_neg, _ = digits.bank_similarity_laws(emb[s], bank.n_images, bank.n_aug)
            gen = torch.Generator(device=emb.device).manual_seed(self.seed + 1)  # the same tuples every time
            r = finite_law_monte_carlo(s_pos, s_neg, self.taus[s], [self.k], generator=gen, outputs=("risk",))["risk"]
            out.append(float(r.mean()))
        return np.array(out)

    def __call__(self, ensemble) -> np.ndarray:
        train, heldout = self._risks(ensemble, self.banks[0]), self._risks(ensemble, self.banks[1])
        self.log.append((train, heldout))
        return train


@cached
def train_embeddings(setup: DigitsSetup, ks: list, taus: list, n_seeds: int, max_steps: int, batch_size: int,
                     device: str, seed: int):
    """Train one ``SphereMLP(64 -> hidden -> dim_out)`` per (k, tau, split) until the stopping
    rule is met (or ``max_steps``): for each k, all (tau, split) members together
    (:func:`~infonce_book.learning.training.fit_ensemble`, negatives shared by a member's batch and
    never from an anchor's image).

    Columns: ``k, tau, seed`` (split index), ``steps_run, converged``, ``train_monitor`` (the
    training risk of the rule's last check, nats), ``curve_step, curve_train, curve_heldout``
    (the monitor's checks, lists), ``state`` (the member's weights, nested lists: the cache keeps
    the trained embeddings).
    """
    dev = resolve_device(device)
    rows = []
    with one_thread():
        splits = [_split(setup, seed, s, dev) for s in range(n_seeds)]
        for k in ks:
            members = [(tau, s) for tau in taus for s in range(n_seeds)]
            train_pools = torch.stack([splits[s][0] for _, s in members])
            heldout_pools = torch.stack([splits[s][2] for _, s in members])
            ens = SphereMLPEnsemble([_member_seed(seed, s) for _, s in members], 64, setup.hidden,
                                    setup.dim_out).to(dev)
            member_taus = [tau for tau, _ in members]
            monitor = _Monitor(train_pools, heldout_pools, setup, k, member_taus, _member_seed(seed, 500 + k))
            rule = PlateauStop(monitor, every=setup.check_every, window=setup.window, rtol=setup.rtol)
            res = fit_ensemble(ens, digits.EnsembleTuples(train_pools, k, **setup.augment), member_taus,
                               steps=max_steps, lr=setup.lr, batch_size=batch_size,
                               seed=_member_seed(seed, 900 + k), stop=rule, schedule=setup.schedule,
                               desc=f"digits k={k}")
            checks = (np.arange(len(monitor.log)) + 1) * setup.check_every
            for m, (tau, s) in enumerate(members):
                upto = checks <= res.steps_run[m]
                state = {name: t.cpu().numpy().tolist() for name, t in ens.member_state(m).items()}
                rows.append({"k": k, "tau": tau, "seed": s, "steps_run": int(res.steps_run[m]),
                             "converged": bool(res.converged[m]),
                             "train_monitor": float(monitor.log[int(upto.sum()) - 1][0][m]) if upto.any()
                             else float("nan"),
                             "curve_step": checks[upto].tolist(),
                             "curve_train": [float(monitor.log[i][0][m]) for i in np.flatnonzero(upto)],
                             "curve_heldout": [float(monitor.log[i][1][m]) for i in np.flatnonzero(upto)],
                             "state": state})
    return pd.DataFrame(rows)


def embedding_from_state(setup: DigitsSetup, state: dict, dev) -> SphereMLP:
    """The ``SphereMLP(64 -> setup.hidden -> setup.dim_out)`` with the weights ``state`` (nested
    lists, as in :func:`train_embeddings`'s table), on the device ``dev``."""
    phi = SphereMLP(64, setup.hidden, setup.dim_out)
    phi.load_state_dict({name: torch.tensor(v) for name, v in state.items()})
    return phi.to(dev)


def _laws(phi, images, setup: DigitsSetup, n_aug: int, seed: int):
    """The held-out laws of a bank of ``images``: ``(s_pos, s_neg, anchor image)``."""
    gen = torch.Generator(device=images.device).manual_seed(seed)
    bank = digits.AugmentationBank(images, n_aug, gen, **setup.augment)
    with torch.no_grad():
        emb = phi(bank.views)
    return digits.bank_similarity_laws(emb, bank.n_images, bank.n_aug)


def _nn_class(phi, images, labels) -> float:
    with torch.no_grad():
        e = phi(images.flatten(1))
        sim = e @ e.T
        sim.fill_diagonal_(-float("inf"))
        return float((labels[sim.argmax(dim=1)] == labels).double().mean())


def _each_embedding(setup: DigitsSetup, ks: list, taus: list, n_seeds: int, max_steps: int, batch_size: int,
                    device: str, seed: int):
    """``(row, split, phi)`` for every embedding of :func:`train_embeddings` (same arguments): its
    table row, its split ``(train images, train labels, held-out images, held-out labels)`` and the
    embedding itself, on the device ``device`` resolves to."""
    trained = train_embeddings(setup=setup, ks=ks, taus=taus, n_seeds=n_seeds, max_steps=max_steps,
                               batch_size=batch_size, device=device, seed=seed)
    dev = resolve_device(device)
    splits = [_split(setup, seed, s, dev) for s in range(n_seeds)]
    for _, r in trained.iterrows():
        yield r, splits[int(r.seed)], embedding_from_state(setup, r.state, dev)


@cached
def evaluate_embeddings(setup: DigitsSetup, ks: list, taus: list, n_seeds: int, max_steps: int, batch_size: int,
                        k_eval: int, eval_aug: int, eval_tuples: int, device: str, seed: int):
    """Evaluate every embedding of :func:`train_embeddings` (same arguments) on two pools of equal
    size, the training images and the held-out images, each through a fresh bank of ``eval_aug``
    augmentations per image (anchors: one per image; ``eval_tuples`` tuples per anchor, negatives
    never from the anchor's image).

    Columns: ``k, tau, seed, steps_run, converged, train_monitor``, ``train_risk, test_risk, gap``
    (held-out minus training, nats, at the training k), ``top1`` (retrieval of another view of
    the anchor's image among ``k_eval`` views of other held-out images), ``nn_class``
    (nearest-neighbour class agreement of the clean held-out images), ``chance`` (1/(k_eval+1)),
    ``n_eval`` (images per pool).
    """
    rows = []
    with one_thread():
        for r, (tr, trl, te, tel), phi in _each_embedding(setup, ks, taus, n_seeds, max_steps, batch_size, device,
                                                          seed):
            n_eval = min(tr.shape[0], te.shape[0])
            tr, trl = _eval_pool(tr, trl, n_eval, _member_seed(seed, int(r.seed)) + 11)
            base = _member_seed(seed, 100 * int(r.k) + int(r.seed))
            risks = {}
            for name, (imgs, lbls) in {"train": (tr, trl), "test": (te, tel)}.items():
                s_pos, s_neg, _ = _laws(phi, imgs, setup, eval_aug, base + (1 if name == "train" else 2))
                gen = torch.Generator(device=imgs.device).manual_seed(base + 3)
                out = finite_law_monte_carlo(s_pos, s_neg, float(r.tau), [int(r.k), k_eval], n_per_anchor=eval_tuples,
                                             generator=gen, outputs=("risk", "top1"))
                risks[name] = float(out["risk"][:, 0].mean())
                if name == "test":
                    top1, nn = float(out["top1"][:, 1].mean()), _nn_class(phi, imgs, lbls)
            rows.append({"k": int(r.k), "tau": float(r.tau), "seed": int(r.seed), "steps_run": int(r.steps_run),
                         "converged": bool(r.converged), "train_monitor": float(r.train_monitor),
                         "train_risk": risks["train"], "test_risk": risks["test"],
                         "gap": risks["test"] - risks["train"], "top1": top1, "nn_class": nn,
                         "chance": 1.0 / (k_eval + 1), "n_eval": n_eval})
    return pd.DataFrame(rows)


def _group_losses(phi, images, k: int, tau: float, seed: int, setup: DigitsSetup) -> np.ndarray:
    """The mean InfoNCE loss of each of ``len(images) // (k + 1)`` disjoint groups of ``k + 1``
    images (a seeded random partition; the remainder is left out): in a group every image is an
    anchor once (its first view), with its second view as the positive and the third views of the
    group's other ``k`` images as its negatives. Groups of distinct images are independent tuples
    of images, so their means are i.i.d. given the embedding."""
    gen = torch.Generator(device=images.device).manual_seed(seed)
    groups = images.shape[0] // (k + 1)
    order = torch.randperm(images.shape[0], generator=torch.Generator().manual_seed(seed))[: groups * (k + 1)]
    bank = digits.AugmentationBank(images[order.to(images.device)], 3, gen, **setup.augment)
    with torch.no_grad():
        emb = phi(bank.views).double().reshape(groups, k + 1, 3, -1)
    anchor, positive, negative = emb[:, :, 0], emb[:, :, 1], emb[:, :, 2]
    s_pos = (anchor * positive).sum(-1).reshape(-1)
    s_all = anchor @ negative.transpose(1, 2)  # (groups, k + 1, k + 1); the diagonal is the anchor's own image
    off = ~torch.eye(k + 1, dtype=torch.bool, device=emb.device)
    s_neg = s_all[:, off].reshape(groups * (k + 1), k)
    losses = info_nce_from_similarities(s_pos, s_neg, tau, reduction="none")
    return losses.reshape(groups, k + 1).mean(1).cpu().numpy()


@cached
def heldout_certificates(setup: DigitsSetup, ks: list, taus: list, n_seeds: int, max_steps: int, batch_size: int,
                         delta: float, device: str, seed: int):
    """A hold-out certificate (book, Corollary ``c5-cor-holdout``) on the InfoNCE risk ``L_k`` of
    every embedding of :func:`train_embeddings` (same arguments), at its training ``k`` and
    ``tau``: the held-out images are cut into disjoint groups of ``k + 1`` (:func:`_group_losses`),
    whose mean losses are i.i.d. and at most ``log(1 + k e^{2 beta})``; the shift and ``eta`` are
    chosen on the same statistic of the training images, so nothing is paid for them. The uniform
    search (all scores equal) has risk ``log(k + 1)``: the certificate is informative below it.

    Columns: ``k, tau, seed, groups`` (held-out groups), ``heldout_mean`` (nats), ``bound`` (the
    certificate at level ``1 - delta``), ``uniform`` (``log(k + 1)``), ``upper`` (the range cap),
    ``images_needed`` (held-out images at which the certificate would fall below the uniform
    search if the held-out moments stayed as measured; :func:`holdout_size_needed`), ``delta``.
    """
    rows = []
    with one_thread():
        for r, (tr, _, te, _), phi in _each_embedding(setup, ks, taus, n_seeds, max_steps, batch_size, device, seed):
            k, tau, split = int(r.k), float(r.tau), int(r.seed)
            base = _member_seed(seed, 100 * k + split) + 41
            reference, heldout = (_group_losses(phi, pool, k, tau, base + i, setup) for i, pool in enumerate((tr, te)))
            upper = math.log1p(k * math.exp(2.0 / tau))
            cert = holdout_certificate(reference, heldout, upper=upper, delta=delta)
            uniform = math.log(k + 1)
            groups = holdout_size_needed(reference, heldout, upper=upper, delta=delta, target=uniform)
            rows.append({"k": k, "tau": tau, "seed": split, "groups": len(heldout),
                         "heldout_mean": float(heldout.mean()), "bound": cert["bound"], "uniform": uniform,
                         "upper": upper, "images_needed": groups * (k + 1), "delta": delta})
    return pd.DataFrame(rows)


def member_state(trained: pd.DataFrame, k: int, tau: float, s: int = 0) -> dict:
    """The weights of the embedding trained at ``(k, tau)`` on split ``s`` (a row of
    :func:`train_embeddings`'s table), for the runners that analyse one embedding."""
    row = trained[(trained.k == k) & np.isclose(trained.tau, tau) & (trained.seed == s)]
    if len(row) != 1:
        raise ValueError(f"no trained embedding with k={k}, tau={tau}, seed={s}")
    return row.iloc[0].state


@cached
def learned_rate(setup: DigitsSetup, state: dict, tau: float, ks_log2: int, eval_aug: int, n_per_anchor: int,
                 n_boot: int, device: str, seed: int):
    """C1 and C2 on one learned embedding (weights ``state``), on the held-out pool of split 0.

    The held-out law is that of a bank of ``eval_aug`` augmentations per held-out image (anchors:
    the first view of each image; positive: one of its other views; negative: a view of another
    image). For it the weight moments, ``c1(x), c2(x)`` and ``L_inf`` are exact sums
    (:func:`~infonce_book.theory.estimators.plugin_weight_moments`), and tuples at k = 1, 2, ...,
    2^ks_log2 measure the bias (:func:`~infonce_book.theory.estimators.finite_law_monte_carlo`).
    Intervals: percentile bootstrap over held-out images (95%), the same replicates for every
    column, so that differences are paired.

    Columns per k: ``bias`` (``L_k - log k - L_inf``; the control-variate or the plain estimate,
    whichever has the smaller bootstrap standard deviation) with ``bias_se, bias_low, bias_high``
    and ``estimator``; ``kbias`` (k times it, with ``kbias_low/high``); ``c1, c1_low, c1_high``,
    ``c2`` (plug-in, means over anchors); ``diff, diff_low, diff_high`` (``kbias - c1``, paired);
    ``pos_k`` (``k (L_k - L_k^dec)``) with its interval and ``u1`` (``E u1``, its plug-in limit)
    and ``pos_diff_*`` (paired ``pos_k - u1``); ``pos_c2`` (``E[u1 v2 - u2/2]``, the next term);
    ``top1`` (retrieval among k unseen items) and ``xent`` (``L_k - log k``, the retrieval
    cross-entropy minus log k), with intervals; ``linf`` (plug-in ``L_inf``); ``tau``.
    """
    dev = resolve_device(device)
    with one_thread():
        _, _, te, _ = _split(setup, seed, 0, dev)
        phi = embedding_from_state(setup, state, dev)
        s_pos, s_neg, image = _laws(phi, te, setup, eval_aug, _member_seed(seed, 31))
        mom = plugin_weight_moments(s_pos, s_neg, tau)
        c1, c2 = plugin_bias_coefficients(mom)
        ks = [2 ** j for j in range(ks_log2 + 1)]
        mc = finite_law_monte_carlo(s_pos, s_neg, tau, ks, n_per_anchor=n_per_anchor,
                                    generator=torch.Generator(device=dev).manual_seed(_member_seed(seed, 37)))
    groups = image.cpu().numpy()

    def boot(x):
        return bootstrap_mean(x, groups, n_boot=n_boot, seed=seed, method="bootstrap over images")

    c1_est, pos_c2 = boot(c1), float(np.mean(mom["u1"] * mom["v2"] - mom["u2"] / 2))
    u1_est = boot(mom["u1"])
    rows = []
    for j, k in enumerate(ks):
        cands = {name: boot(mc[name][:, j]) for name in ("bias_cv", "bias_plain")}
        name = min(cands, key=lambda n: cands[n].se)
        b = cands[name]
        kb = boot(k * mc[name][:, j])
        diff = boot(k * mc[name][:, j] - c1)
        pos = boot(k * mc["positive_term"][:, j])
        pos_diff = boot(k * mc["positive_term"][:, j] - mom["u1"])
        top1, xent = boot(mc["top1"][:, j]), boot(mc["risk"][:, j] - math.log(k))
        rows.append({"tau": tau, "k": k, "bias": b.mean, "bias_se": b.se, "bias_low": b.ci_low,
                     "bias_high": b.ci_high, "estimator": name.replace("bias_", ""), "kbias": kb.mean,
                     "kbias_low": kb.ci_low, "kbias_high": kb.ci_high, "c1": c1_est.mean, "c1_low": c1_est.ci_low,
                     "c1_high": c1_est.ci_high, "c2": float(np.mean(c2)), "diff": diff.mean,
                     "diff_low": diff.ci_low, "diff_high": diff.ci_high, "pos_k": pos.mean, "pos_low": pos.ci_low,
                     "pos_high": pos.ci_high, "u1": u1_est.mean, "u1_low": u1_est.ci_low, "u1_high": u1_est.ci_high,
                     "pos_diff": pos_diff.mean, "pos_diff_low": pos_diff.ci_low, "pos_diff_high": pos_diff.ci_high,
                     "pos_c2": pos_c2, "top1": top1.mean, "top1_low": top1.ci_low, "top1_high": top1.ci_high,
                     "xent": xent.mean, "xent_low": xent.ci_low, "xent_high": xent.ci_high,
                     "linf": float(np.mean(mom["limit_risk"])), "n_images": int(len(np.unique(groups)))})
    return pd.DataFrame(rows)


@cached
def learned_kl(setup: DigitsSetup, state: dict, taus: list, eval_aug: int, n_boot: int, device: str, seed: int):
    """C3 on one learned embedding: ``KL(Q_tau(x, .) || pi)`` of its softmax search over the
    held-out law (the views of the other held-out images; ``KL = sum_j q_j log(M q_j)`` with
    ``q`` the softmax of ``s/tau`` over the M views), for each tau, averaged over anchors (one per
    image; 95% bootstrap interval over images), with the bound ``min(1/(2 tau^2), 2/tau)``.

    Columns: ``tau, kl, kl_low, kl_high, bound, ratio_high`` (upper end over bound).
    """
    dev = resolve_device(device)
    with one_thread():
        _, _, te, _ = _split(setup, seed, 0, dev)
        phi = embedding_from_state(setup, state, dev)
        _, s_neg, image = _laws(phi, te, setup, eval_aug, _member_seed(seed, 31))
        s = s_neg.double()
        rows = []
        for tau in taus:
            log_q = torch.log_softmax(s / tau, dim=1)
            kl = (log_q.exp() * (log_q + math.log(s.shape[1]))).sum(1).cpu().numpy()
            est = bootstrap_mean(kl, image.cpu().numpy(), n_boot=n_boot, seed=seed, method="bootstrap over images")
            bound = kl_softmax_bound(tau)
            rows.append({"tau": float(tau), "kl": est.mean, "kl_low": est.ci_low, "kl_high": est.ci_high,
                         "bound": bound, "ratio_high": est.ci_high / bound})
    return pd.DataFrame(rows)


@cached
def false_negative_bias(setup: DigitsSetup, state: dict, tau: float, ks: list, eval_aug: int, n_per_anchor: int,
                        n_boot: int, device: str, seed: int):
    """What the sampler of earlier versions did: the held-out risk when a negative may be a view
    of the anchor's own image (uniform over all other views of the bank, siblings included),
    minus the risk without false negatives, for one embedding. Both with 95% bootstrap intervals
    over images; ``per_fn`` divides the increase by the expected number of false negatives per
    tuple, ``k (A - 1) / (N A - 1)``.

    Columns: ``k, with_fn, without_fn, increase, increase_low, increase_high, expected_fn, per_fn,
    per_fn_low, per_fn_high, n_images``.
    """
    dev = resolve_device(device)
    with one_thread():
        _, _, te, _ = _split(setup, seed, 0, dev)
        phi = embedding_from_state(setup, state, dev)
        s_pos, s_neg, image = _laws(phi, te, setup, eval_aug, _member_seed(seed, 31))
        s_all = torch.cat([s_neg, s_pos], 1)  # negatives from every other view, siblings included
        gen = torch.Generator(device=dev)
        with_fn = finite_law_monte_carlo(s_pos, s_all, tau, ks, n_per_anchor=n_per_anchor,
                                         generator=gen.manual_seed(_member_seed(seed, 41)), outputs=("risk",))["risk"]
        without = finite_law_monte_carlo(s_pos, s_neg, tau, ks, n_per_anchor=n_per_anchor,
                                         generator=gen.manual_seed(_member_seed(seed, 43)), outputs=("risk",))["risk"]
    groups = image.cpu().numpy()
    N, A = int(len(np.unique(groups))), int(s_pos.shape[1]) + 1
    rows = []
    for j, k in enumerate(ks):
        inc = bootstrap_mean(with_fn[:, j] - without[:, j], groups, n_boot=n_boot, seed=seed)
        expected = k * (A - 1) / (N * A - 1)
        rows.append({"k": int(k), "with_fn": float(with_fn[:, j].mean()), "without_fn": float(without[:, j].mean()),
                     "increase": inc.mean, "increase_low": inc.ci_low, "increase_high": inc.ci_high,
                     "expected_fn": expected, "per_fn": inc.mean / expected, "per_fn_low": inc.ci_low / expected,
                     "per_fn_high": inc.ci_high / expected, "n_images": N})
    return pd.DataFrame(rows)


@cached
def view(setup: DigitsSetup, state: dict, device: str, seed: int):
    """2-D PCA view of the held-out digits' embeddings (``pc1, pc2, label``) for one trained
    embedding (weights ``state``), held-out pool of split 0."""
    dev = resolve_device(device)
    _, _, te, tel = _split(setup, seed, 0, dev)
    xy = digits.embedding_2d(embedding_from_state(setup, state, dev), te)
    return pd.DataFrame({"pc1": xy[:, 0], "pc2": xy[:, 1], "label": tel.cpu().numpy()})
