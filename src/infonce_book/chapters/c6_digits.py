"""Chapter 6, ``book/c6_digits.md``: real data, handwritten digits (claims C7, and C1-C3 measured
on a learned embedding).

The page constructs one :class:`DigitsSetup` (the experiment's fixed choices) in its parameter
cell and passes it to the runners. Runners return tidy tables, cached by configuration (the
trained embeddings' weights are part of :func:`train_embeddings`'s table); ``ledger_*`` functions
turn tables into claims-ledger records and document their verdict rules; ``fig_*`` draw the
page's figures; the page glues a runner's summary with :func:`infonce_book.experiment.style.glue_all`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch

from ..datasets import digits
from ..experiment.cache import cached
from ..experiment.ledger import Rule
from ..experiment.prose import count_word, join_words
from ..experiment.setup import ChapterContext, setup_chapter
from ..learning.embeddings import SphereMLP, SphereMLPEnsemble
from ..learning.training import PlateauStop, fit_ensemble
from ..theory.bounds import kl_softmax_bound
from ..theory.estimators import finite_law_monte_carlo, plugin_bias_coefficients, plugin_weight_moments
from ..theory.stats import Estimate, bootstrap_mean, equivalence_test, fit_loglog_slope, linear_slope
from ..utils.device import one_thread, resolve_device

STEM = "c6_digits"

# Sizes per profile. ``ks``: training negatives (the equivalence test compares the two largest);
# ``seeds``: independent splits and initialisations per (k, tau); ``max_steps``: the largest
# number of steps (the stopping rule usually ends training earlier); ``eval_aug``: augmentations
# per image in the evaluation banks; ``eval_tuples``: tuples per anchor in an evaluation;
# ``rate_ks_log2``: the C1/C2 checks use k = 1, 2, 4, ..., 2^rate_ks_log2; ``rate_tuples``: tuples
# per anchor and k there; ``n_boot``: bootstrap replicates.
SIZES = {
    "smoke": {"ks": [16, 64], "taus": [0.5], "seeds": 3, "max_steps": 400, "batch_size": 32, "k_eval": 64,
              "eval_aug": 4, "eval_tuples": 4, "rate_ks_log2": 10, "rate_tuples": 4, "n_boot": 500},
    "standard": {"ks": [16, 64, 256], "taus": [0.1, 0.5], "seeds": 5, "max_steps": 1500, "batch_size": 64,
                 "k_eval": 64, "eval_aug": 8, "eval_tuples": 8, "rate_ks_log2": 12, "rate_tuples": 8,
                 "n_boot": 2000},
    "full": {"ks": [16, 64, 256], "taus": [0.1, 0.5], "seeds": 12, "max_steps": 4000, "batch_size": 128,
             "k_eval": 64, "eval_aug": 16, "eval_tuples": 16, "rate_ks_log2": 14, "rate_tuples": 16,
             "n_boot": 4000},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


@dataclass(frozen=True)
class DigitsSetup:
    """The fixed choices of the digits experiment (the page constructs one and passes it on).

    Attributes:
        n_train: training images per split (the rest are held out; both pools are evaluated on
            ``min(n_train, 1797 - n_train)`` images, so that the gap compares pools of equal size).
        hidden, dim_out: the MLP ``64 -> hidden -> dim_out``, normalised onto ``S^{dim_out - 1}``.
        max_rotation (degrees), max_shift (pixels), noise (pixel sd): the augmentation ``M``.
        lr, schedule: Adam's learning rate and its schedule (``"cosine"`` or ``"constant"``).
        check_every, window, rtol: the stopping rule (:class:`~infonce_book.learning.training.PlateauStop`)
            on the training risk of fixed tuples (``monitor_aug`` augmentations per image).
        margin: the equivalence margin (the book's epsilon_eq; ``delta`` in the ledger's params),
            in nats, declared before the experiment.
        alpha: level of each one-sided test (the interval of the equivalence test is ``1 - 2 alpha``).
    """

    n_train: int = 898
    hidden: int = 128
    dim_out: int = 16
    max_rotation: float = 10.0
    max_shift: float = 1.0
    noise: float = 0.05
    lr: float = 1e-2
    schedule: str = "cosine"
    check_every: int = 100
    window: int = 3
    rtol: float = 5e-3
    monitor_aug: int = 2
    margin: float = 0.02
    alpha: float = 0.05

    @property
    def params(self) -> dict:
        """The fields as a dict (the cache key of the runners)."""
        return asdict(self)

    @property
    def augment(self) -> dict:
        """Keyword arguments of :func:`infonce_book.datasets.digits.augment`."""
        return {"max_rotation": self.max_rotation, "max_shift": self.max_shift, "noise": self.noise}


def _member_seed(seed: int, s: int) -> int:
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


def _embedding_from_state(setup: DigitsSetup, state: dict, dev) -> SphereMLP:
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
    trained = train_embeddings(setup=setup, ks=ks, taus=taus, n_seeds=n_seeds, max_steps=max_steps,
                               batch_size=batch_size, device=device, seed=seed)
    dev = resolve_device(device)
    rows = []
    with one_thread():
        splits = [_split(setup, seed, s, dev) for s in range(n_seeds)]
        for _, r in trained.iterrows():
            tr, trl, te, tel = splits[int(r.seed)]
            n_eval = min(tr.shape[0], te.shape[0])
            tr, trl = _eval_pool(tr, trl, n_eval, _member_seed(seed, int(r.seed)) + 11)
            phi = _embedding_from_state(setup, r.state, dev)
            base = _member_seed(seed, 100 * int(r.k) + int(r.seed))
            risks = {}
            for name, (imgs, lbls) in {"train": (tr, trl), "test": (te, tel)}.items():
                s_pos, s_neg, _ = _laws(phi, imgs, setup, eval_aug, base + (1 if name == "train" else 2))
                gen = torch.Generator(device=dev).manual_seed(base + 3)
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
        phi = _embedding_from_state(setup, state, dev)
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
        phi = _embedding_from_state(setup, state, dev)
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
        phi = _embedding_from_state(setup, state, dev)
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


# ----------------------------------------------------------------------------------------------
# Ledger rules and summaries


def _roles(values) -> dict:
    """``{"lo": smallest, "hi": largest}`` of the distinct values (the same value twice when there
    is only one): the page quotes the lowest and the highest temperature, whatever the profile."""
    v = sorted({float(x) for x in values})
    return {"lo": v[0], "hi": v[-1]}


def _k_roles(ks) -> dict:
    """``{"k1": second largest, "k2": largest}`` of the distinct ks (the pair the equivalence test
    compares)."""
    v = sorted({int(x) for x in ks})
    return {"k1": v[-2] if len(v) > 1 else v[-1], "k2": v[-1]}


def _by_role(per_tau: dict) -> dict:
    """Flatten ``{tau: {name: value}}`` into ``{f"{name}_{role}": value}`` for the roles of
    :func:`_roles` (tau ``lo`` and ``hi``)."""
    out = {}
    for role, tau in _roles(per_tau).items():
        out.update({f"{name}_{role}": value for name, value in per_tau[tau].items()})
    return out


def one_temperature_note(taus) -> str:
    """A sentence (with a leading space) for a run at one temperature only, whose paragraphs
    then quote the same runs as "the lowest" and "the highest" temperature; ``""`` otherwise."""
    values = sorted({float(x) for x in taus})
    if len(values) > 1:
        return ""
    return (f" This run trained at one temperature only (τ = {values[0]:g}), so where the page compares "
            f"the lowest and the highest temperature below, both are that one (the standard profile "
            f"trains at two).")


def learned_embeddings_phrase(taus) -> str:
    """``"the learned embedding"`` for one training temperature, ``"the two learned embeddings
    (one per training temperature)"`` for two, and so on: the page's name for the embeddings it
    analyses, one per distinct tau."""
    n = len({float(x) for x in taus})
    if n == 1:
        return "the learned embedding"
    return f"the {count_word(n)} learned embeddings (one per training temperature)"


def verdict_summary(verdicts: dict) -> str:
    """``{tau: verdict}`` -> ``"equivalent at τ = 0.5"`` or ``"equivalent at τ = 0.5 and not
    shown at τ = 0.1"``: each temperature present once, the highest first."""
    return join_words([f"{verdicts[tau]} at τ = {tau:g}" for tau in sorted(verdicts, reverse=True)])


def kl_ratio_text(ratios: dict) -> str:
    """``{tau_train: largest KL/bound ratio}`` -> ``"0.203 for the embedding trained at τ = 0.5"``,
    or with more temperatures ``"0.203 for the embedding trained at τ = 0.5 and 0.150 for the one
    trained at τ = 0.1"`` (highest temperature first; ratios to three decimals)."""
    taus = sorted(ratios, reverse=True)
    parts = [f"{ratios[tau]:.3f} for the {'embedding' if i == 0 else 'one'} trained at τ = {tau:g}"
             for i, tau in enumerate(taus)]
    return join_words(parts)


def ledger_gap(ledger, table: pd.DataFrame, setup: DigitsSetup) -> dict:
    """Ledger records of the gap and the search (real data; one split and initialisation per seed).

    * ``C7-digits-gap-levels-tau<tau>``: "the gap levels off in k" as an *equivalence test*:
      ``gap(k2) - gap(k1)`` for the two largest training k, paired by seed (same split, same
      initialisation), predicted 0; passed only when its ``1 - 2 alpha`` (90%) Student-t interval
      lies inside ``[-delta, delta]`` (two one-sided tests), with ``delta = setup.margin``
      declared before the run. The record's params carry ``n_seeds``, ``delta`` and the training
      risk reached (means over seeds, per k).
    * ``C7-digits-top1-slope-tau<tau>``: the slope of the top-1 retrieval accuracy against log k,
      one-sided (passes when its 95% interval lies above 0: the search improves with k).

    Returns the page's numbers, keyed by the roles of :func:`_roles` and :func:`_k_roles`
    (e.g. ``gap_hi_k2``: the gap at the largest tau and the largest k).
    """
    per_tau = {}
    for tau, sub in table.groupby("tau"):
        ks = sorted(int(v) for v in sub.k.unique())
        k1, k2 = _k_roles(ks).values()
        a, b = (sub[sub.k == kk].set_index("seed").gap for kk in (k1, k2))
        diffs = (b - a).dropna().to_numpy()
        est = Estimate.from_samples(diffs, 1 - 2 * setup.alpha, t=True, method="seeds, paired")
        verdict = equivalence_test(est, setup.margin, alpha=setup.alpha)
        reached = {str(kk): float(sub[sub.k == kk].train_risk.mean()) for kk in ks}
        steps = {str(kk): float(sub[sub.k == kk].steps_run.mean()) for kk in ks}
        ledger.record(claim="C7", id=f"C7-digits-gap-levels-tau{tau:g}",
                      quantity=f"gap(k={k2}) - gap(k={k1}) (digits, paired by seed)", predicted=0.0, measured=est,
                      rule=Rule.equivalence(setup.margin, note=f"two one-sided tests at alpha = {setup.alpha:g}"),
                      params={"model": "digits, SphereMLP", "tau": tau, "k_pair": [k1, k2], "n_seeds": int(est.n),
                              "delta": setup.margin, "alpha": setup.alpha, "p_value": verdict.p_value,
                              "training_risk_reached": reached, "steps_run": steps,
                              "converged_fraction": float(sub.converged.mean())})
        logk = np.log(sub.k.to_numpy(float))
        t = linear_slope(logk, sub.top1)
        ledger.record(claim="C7", id=f"C7-digits-top1-slope-tau{tau:g}",
                      quantity="slope of top-1 retrieval accuracy against log k (digits)", predicted=0.0,
                      measured=t, rule=Rule.one_sided("ci_low", ">", note="the search improves with k"),
                      params={"model": "digits, SphereMLP", "tau": tau, "ks": ks, "n_seeds": int(sub.seed.nunique())})
        vals = {}
        for role, kk in (("k1", k1), ("k2", k2)):
            g = Estimate.from_samples(sub[sub.k == kk].gap.to_numpy(), t=True, method="seeds")
            vals.update({f"gap_{{}}_{role}": g.mean, f"gap_low_{{}}_{role}": g.ci_low,
                         f"gap_high_{{}}_{role}": g.ci_high})
        change = (" — the gap grew between the two values of k, since the interval lies above 0"
                  if verdict.low > 0 else " — the gap shrank, since the interval lies below 0"
                  if verdict.high < 0 else "")
        vals.update({"diff_{}": est.mean, "diff_low_{}": verdict.low, "diff_high_{}": verdict.high,
                     "verdict_{}": verdict.verdict, "change_{}": change, "top1_slope_{}": t.mean, "top1_slope_low_{}": t.ci_low,
                     "top1_slope_high_{}": t.ci_high})
        per_tau[tau] = vals
    out = {}
    for role, tau in _roles(per_tau).items():
        out.update({name.format(role): value for name, value in per_tau[tau].items()})
    out["verdict_summary"] = verdict_summary({tau: vals["verdict_{}"] for tau, vals in per_tau.items()})
    out.update({"n_seeds": int(table.seed.nunique()), "nn_min": float(table.nn_class.min()),
                "nn_max": float(table.nn_class.max())})
    return out


def _k_needed(rate: pd.DataFrame, threshold: float) -> float:
    """Smallest k of the grid from which on the bias's interval stays inside +-threshold (nan if
    none)."""
    inside = ((rate.bias_low > -threshold) & (rate.bias_high < threshold)).to_numpy()
    for i in range(len(inside)):
        if inside[i:].all():
            return float(rate.k.iloc[i])
    return float("nan")


def _member_params(trained: pd.DataFrame | None, k: int, tau: float) -> dict:
    """What the records of one analysed embedding carry about its training (split 0)."""
    if trained is None:
        return {}
    row = trained[(trained.k == k) & np.isclose(trained.tau, tau) & (trained.seed == 0)].iloc[0]
    return {"training_k": int(k), "training_risk_reached": float(row.train_monitor), "steps_run": int(row.steps_run),
            "stopped_by_rule": bool(row.converged), "n_seeds": 1}


def ledger_rate(ledger, rate: pd.DataFrame, second_order: float = 0.1, *, training: dict | None = None) -> dict:
    """Ledger records of C1 and C2 on a learned embedding (one tau; table from :func:`learned_rate`).

    * ``C1-digits-kbias-tau<tau>``: ``k (L_k - log k - L_inf)`` at the largest k against the
      plug-in ``c1``. Interval: ``c1`` plus the paired bootstrap interval of ``k bias - c1``,
      widened on each side by the declared truncation ``|c2|/k`` (the next term of the
      expansion); passed when it contains ``c1``.
    * ``C1-digits-slope-tau<tau>``: weighted least-squares slope of ``log |bias|`` on ``log k``
      (bootstrap standard errors, Student-t interval) over the ks where the plug-in second term
      is at most ``second_order`` times the first (``|c2|/(|c1| k) <= second_order``), against -1;
      the interval is widened by the declared truncation ``|s2 + 1|``, ``s2`` the log-log slope of
      the two-term prediction ``c1/k + c2/k^2`` over the same ks. Needs three such ks and a bias
      of the sign of ``c1`` there (else no record).
    * ``C2-digits-positive-term-tau<tau>``: ``k (L_k - L_k^dec)`` at the largest k -- the part of
      the constant ``d1`` of Chapter 2 that this data allow to check -- against its limit
      ``E u1`` (plug-in), interval as for the first record with the truncation
      ``|E[u1 v2 - u2/2]|/k`` (the next term).

    Returns the page's numbers for this tau (plain names; see :func:`ledger_rates`).
    """
    tau = float(rate.tau.iloc[0])
    last = rate.iloc[-1]
    k = int(last.k)
    c1, c2 = float(last.c1), float(last.c2)
    base = {"model": "digits, SphereMLP (learned)", "tau": tau, "k": k, "n_images": int(last.n_images),
            "law": "held-out bank", **(training or {})}
    trunc = abs(c2) / k
    ledger.record(claim="C1", id=f"C1-digits-kbias-tau{tau:g}", quantity="k_bias_learned", predicted=c1,
                  measured=float(last.kbias), ci_low=float(c1 + last.diff_low - trunc),
                  ci_high=float(c1 + last.diff_high + trunc),
                  params={**base, "c2": c2, "truncation": trunc, "estimator": str(last.estimator)},
                  rule=Rule.two_sided(note="c1 inside c1 + paired bootstrap interval of (k bias - c1) -+ |c2|/k"))
    out = {"slope": float("nan"), "slope_low": float("nan"), "slope_high": float("nan"),
           "slope_k_min": float("nan")}
    sign = np.sign(c1)
    sub = rate[abs(c2) / (abs(c1) * rate.k) <= second_order] if c1 != 0 else rate.iloc[:0]
    if len(sub) >= 3 and (np.sign(sub.bias) == sign).all():
        slope = fit_loglog_slope(sub.k, sign * sub.bias, sub.bias_se)
        kk = sub.k.to_numpy(float)
        pred = sign * (c1 / kk + c2 / kk**2)  # weighted as the measurement (same relative errors)
        s2 = fit_loglog_slope(kk, pred, pred * (sub.bias_se / (sign * sub.bias)).to_numpy()).mean
        t_trunc = abs(s2 + 1.0)
        ledger.record(claim="C1", id=f"C1-digits-slope-tau{tau:g}", quantity="loglog_slope_learned", predicted=-1.0,
                      measured=slope, ci_low=slope.ci_low - t_trunc, ci_high=slope.ci_high + t_trunc,
                      params={**base, "k_min": int(sub.k.min()), "two_term_slope": s2, "truncation": t_trunc},
                      rule=Rule.two_sided(note="-1 inside the t-interval of the slope -+ |two-term slope + 1|"))
        out.update({"slope": slope.mean, "slope_low": slope.ci_low, "slope_high": slope.ci_high,
                    "slope_k_min": float(sub.k.min())})
    trunc_pos = abs(float(last.pos_c2)) / k
    ledger.record(claim="C2", id=f"C2-digits-positive-term-tau{tau:g}", quantity="k_positive_term_learned",
                  predicted=float(last.u1), measured=float(last.pos_k),
                  ci_low=float(last.u1 + last.pos_diff_low - trunc_pos),
                  ci_high=float(last.u1 + last.pos_diff_high + trunc_pos),
                  params={**base, "truncation": trunc_pos},
                  rule=Rule.two_sided(note="E u1 inside E u1 + paired bootstrap interval of (k pos - u1) -+ next term"))
    out.update({"c1": c1, "c1_low": float(last.c1_low), "c1_high": float(last.c1_high), "c2": c2,
                "kbias": float(last.kbias), "kbias_low": float(c1 + last.diff_low),
                "kbias_high": float(c1 + last.diff_high), "u1": float(last.u1), "pos_k": float(last.pos_k),
                "pos_low": float(last.u1 + last.pos_diff_low), "pos_high": float(last.u1 + last.pos_diff_high),
                "linf": float(last.linf), "k_01": _k_needed(rate, 0.1), "k_001": _k_needed(rate, 0.01),
                "k_01_pred": abs(c1) / 0.1, "k_001_pred": abs(c1) / 0.01,
                "top1_k1": float(rate.top1.iloc[0]), "top1_kmax": float(last.top1)})
    return out


def ledger_rates(ledger, rates: dict, trained: pd.DataFrame | None = None) -> dict:
    """:func:`ledger_rate` for each training tau of ``rates`` (``{tau: table}``); the page's
    numbers keyed by tau role (``c1_lo``, ``c1_hi``, ...). With ``trained`` (the table of
    :func:`train_embeddings`), the records carry the analysed embedding's training risk reached."""
    k_max = None if trained is None else int(trained.k.max())
    out = _by_role({tau: ledger_rate(ledger, rate, training=_member_params(trained, k_max, tau))
                    for tau, rate in rates.items()})
    lo, hi = _roles(rates).values()
    out["temperature_note"] = (
        "The lower temperature needs more negatives for the same bias: its weights are more spread "
        "out, and c1 grows with their spread." if lo != hi and out["c1_lo"] > out["c1_hi"] else "")
    out["c2_over_c1_lo"] = abs(out["c2_lo"] / out["c1_lo"]) if out["c1_lo"] else float("nan")
    return out


def ledger_kl(ledger, kl: pd.DataFrame, tau_train: float, *, training: dict | None = None) -> dict:
    """``C3-digits-bound-tau<tau_train>``: one-sided, ``max_tau`` (upper end of the 95% interval
    of the KL) / bound ``<= 1`` for the embedding trained at ``tau_train``, its softmax search
    evaluated at every tau of the table. Returns the page's numbers for this embedding."""
    worst = kl.loc[kl.ratio_high.idxmax()]
    ledger.record(claim="C3", id=f"C3-digits-bound-tau{tau_train:g}", quantity="max_kl_over_bound_learned",
                  predicted=1.0, measured=float((kl.kl / kl.bound).max()),
                  ci_low=float((kl.kl_low / kl.bound).max()), ci_high=float(kl.ratio_high.max()),
                  rule=Rule.bound("ci_high", "<="),
                  params={"model": "digits, SphereMLP (learned)", "tau_train": tau_train, **(training or {}),
                          "taus": [float(t) for t in kl.tau], "worst_tau": float(worst.tau)})
    own = kl.loc[(kl.tau - tau_train).abs().idxmin()]
    return {"kl_ratio_max": float(kl.ratio_high.max()), "kl_worst_tau": float(worst.tau), "kl_own": float(own.kl),
            "kl_own_bound": float(own.bound)}


def ledger_kls(ledger, kls: dict, trained: pd.DataFrame | None = None) -> dict:
    """:func:`ledger_kl` for each training tau of ``kls`` (``{tau: table}``), keyed by tau role
    (with ``trained``, the records carry the embedding's training risk reached)."""
    k_max = None if trained is None else int(trained.k.max())
    per_tau = {tau: ledger_kl(ledger, kl, tau, training=_member_params(trained, k_max, tau))
               for tau, kl in kls.items()}
    out = _by_role(per_tau)
    out["kl_ratio_text"] = kl_ratio_text({tau: v["kl_ratio_max"] for tau, v in per_tau.items()})
    worst = max(out["kl_ratio_max_lo"], out["kl_ratio_max_hi"])
    out["kl_verdict"] = ("holds with room to spare" if worst <= 0.5 else "holds" if worst <= 1.0
                         else "is exceeded (see the records)")
    return out


def ledger_counts(ledger_table: pd.DataFrame) -> dict:
    """How many of the chapter's records passed, in all and per claim (``C1``, ``C2``, ``C3``,
    ``C7``): ``n_records``, ``n_passed``, ``pass_<claim>`` as "passed of total"."""
    out = {"n_records": int(len(ledger_table)), "n_passed": int(ledger_table.passed.sum())}
    out["failed_note"] = ("" if out["n_passed"] == out["n_records"] else
                          " The records that failed are shown in the table above, not tuned away.")
    for claim in ("C1", "C2", "C3", "C7"):
        sub = ledger_table[ledger_table.claim == claim]
        out[f"pass_{claim.lower()}"] = f"{int(sub.passed.sum())} of {len(sub)}"
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



def describe(setup: DigitsSetup, size: dict, kl_taus) -> dict:
    """The parameters the page's prose quotes (glued by :func:`infonce_book.experiment.style.glue_all`)."""
    n_eval = min(setup.n_train, 1797 - setup.n_train)
    roles = _roles(size["taus"])
    return {"n_train": setup.n_train, "n_heldout": 1797 - setup.n_train, "n_eval": n_eval,
            "hidden": setup.hidden, "dim_out": setup.dim_out, "sphere_dim": setup.dim_out - 1,
            "rotation": setup.max_rotation, "shift": setup.max_shift, "noise": setup.noise, "lr": setup.lr,
            "schedule": setup.schedule, "check_every": setup.check_every, "window": setup.window,
            "window_steps": setup.window * setup.check_every, "rtol": setup.rtol, "rtol_pct": 100 * setup.rtol,
            "monitor_aug": setup.monitor_aug, "margin": setup.margin, "alpha": setup.alpha,
            "level_pct": round(100 * (1 - 2 * setup.alpha)), "margin_ratio": math.exp(setup.margin),
            "ks": ", ".join(str(k) for k in size["ks"]), "taus": ", ".join(f"{t:g}" for t in size["taus"]),
            "seeds": size["seeds"], "max_steps": size["max_steps"], "batch_size": size["batch_size"],
            "k_eval": size["k_eval"], "eval_aug": size["eval_aug"], "eval_tuples": size["eval_tuples"],
            "eval_siblings": size["eval_aug"] - 1, "n_eval_others": n_eval - 1,
            **_k_roles(size["ks"]), "k_pair": ", ".join(str(k) for k in _k_roles(size["ks"]).values()),
            "tau_lo": roles["lo"], "tau_hi": roles["hi"], "one_tau_note": one_temperature_note(size["taus"]),
            "rate_k_max": 2 ** size["rate_ks_log2"], "n_boot": size["n_boot"],
            "p_no_sibling": (1 - (size["eval_aug"] - 1) / (n_eval * size["eval_aug"] - 1)) ** size["k_eval"],
            "kl_taus": ", ".join(f"{t:g}" for t in kl_taus), "log2": math.log(2.0),
            "learned_embeddings": learned_embeddings_phrase(size["taus"])}


def training_numbers(trained: pd.DataFrame, setup: DigitsSetup) -> dict:
    """Glue values of :func:`train_embeddings` for the largest k, per tau role: the runs the rule
    stopped, the mean steps, the training risk at the last check and its relative decrease over
    the rule's last window (in %, mean over seeds: how fast the risk was still falling)."""
    out = {"runs_stopped": int(trained.converged.sum()), "runs": int(len(trained))}
    k2 = _k_roles(trained.k)["k2"]
    per_tau = {}
    for tau, sub in trained[trained.k == k2].groupby("tau"):
        drops = [100 * (c[-1 - setup.window] - c[-1]) / c[-1 - setup.window] for c in sub.curve_train
                 if len(c) > setup.window]
        stopped, n = int(sub.converged.sum()), len(sub)
        text = (f"all {n} runs met the rule" if stopped == n else "no run met the rule" if stopped == 0
                else f"{stopped} of {n} runs met the rule")
        per_tau[tau] = {"stopped": stopped, "stopped_text": text, "steps": float(sub.steps_run.mean()),
                        "monitor": float(sub.train_monitor.mean()),
                        "drop": float(np.mean(drops)) if drops else float("nan")}
    out.update(_by_role(per_tau))
    return out


def needed_negatives(rates: dict) -> pd.DataFrame:
    """"How many negatives do I need?": per training tau, the plug-in ``c1``, ``c2`` and, for a
    bias below 0.1 and 0.01 nats, the smallest k of the grid from which the measured bias's 95%
    interval stays inside the tolerance (NaN: not within the grid), next to the first-order
    prediction ``|c1|/tolerance``."""
    rows = []
    for tau, rate in rates.items():
        c1, c2 = float(rate.c1.iloc[0]), float(rate.c2.iloc[0])
        rows.append({"tau": tau, "c1 (plug-in)": c1, "c2 (plug-in)": c2,
                     "k for 0.1 nats (measured)": _k_needed(rate, 0.1), "|c1|/0.1": abs(c1) / 0.1,
                     "k for 0.01 nats (measured)": _k_needed(rate, 0.01), "|c1|/0.01": abs(c1) / 0.01})
    return pd.DataFrame(rows)


def seeds_needed(diffs, margin: float, alpha: float = 0.05, n_max: int = 10_000) -> float:
    """Smallest number of seeds n for which a future experiment with the mean and standard
    deviation of ``diffs`` would have its ``1 - 2 alpha`` Student-t interval inside
    ``(-margin, margin)``: ``|mean| + t_{1-alpha, n-1} sd/sqrt(n) < margin`` (inf when
    ``|mean| >= margin``). A planning figure, not a test."""
    d = np.asarray(diffs, dtype=float)
    mean, sd = abs(float(d.mean())), float(d.std(ddof=1))
    if mean >= margin:
        return float("inf")
    for n in range(2, n_max + 1):
        half = Estimate(0.0, sd / math.sqrt(n), n, 1 - 2 * alpha, dof=n - 1).half_width
        if mean + half < margin:
            return float(n)
    return float("inf")


def exercise_numbers(table: pd.DataFrame, rates: dict, fn: dict, setup: DigitsSetup) -> dict:
    """The numbers the solutions of the page's exercises quote (computed, then glued), keyed by
    tau role."""
    per_tau = {}
    for tau, sub in table.groupby("tau"):
        k1, k2 = _k_roles(sub.k).values()
        a, b = (sub[sub.k == kk].set_index("seed").gap for kk in (k1, k2))
        d = (b - a).dropna().to_numpy()
        est = Estimate.from_samples(d, 1 - 2 * setup.alpha, t=True)
        n = seeds_needed(d, setup.margin, setup.alpha)
        rate, f = rates[tau], fn[tau].iloc[-1]
        per_tau[tau] = {"ex_sd": float(d.std(ddof=1)), "ex_mean": float(d.mean()),
                        "ex_seeds": str(int(n)) if math.isfinite(n) else "none: the mean change itself exceeds the margin",
                        "ex_margin_min": max(abs(est.ci_low), abs(est.ci_high)),
                        "ex_k10pct": 10 * abs(float(rate.c2.iloc[0])) / abs(float(rate.c1.iloc[0])),
                        "ex_per_fn": float(f.per_fn), "ex_per_fn_low": float(f.per_fn_low),
                        "ex_per_fn_high": float(f.per_fn_high), "ex_fn_k": int(f.k)}
    return _by_role(per_tau)


def false_negative_summary(fn: dict) -> dict:
    """Glue values of :func:`false_negative_bias` per tau role, at the largest k of each table:
    the increase with its interval, its cost per expected false negative, and what that cost
    implies for two pools of 797 and 1000 images (the design of earlier versions of the page):
    ``per_fn k (1/797 - 1/1000)``, next to the heuristic ``log 2 k (1/797 - 1/1000)``."""
    per_tau, k = {}, None
    for tau, f in fn.items():
        r = f.iloc[-1]
        k = int(r.k)
        scale = k * (1 / 797 - 1 / 1000)
        per_tau[tau] = {"fn_inc": float(r.increase), "fn_inc_low": float(r.increase_low),
                        "fn_inc_high": float(r.increase_high), "fn_per": float(r.per_fn),
                        "fn_old_bias": float(r.per_fn) * scale, "fn_old_bias_low": float(r.per_fn_low) * scale,
                        "fn_old_bias_high": float(r.per_fn_high) * scale}
    return {**_by_role(per_tau), "fn_k": k, "fn_heuristic": math.log(2.0) * k * (1 / 797 - 1 / 1000)}


# ----------------------------------------------------------------------------------------------
# Figures


def fig_training(trained: pd.DataFrame, *, title: str = ""):
    """The stopping rule's monitor: training risk (solid) and held-out risk (dashed) of every run
    against the steps, one panel per (tau, k)."""
    groups = list(trained.groupby(["tau", "k"]))
    fig, axes = plt.subplots(1, len(groups), figsize=(3.0 * len(groups), 3.0), squeeze=False)
    for ax, ((tau, k), sub) in zip(axes[0], groups):
        for i, (_, r) in enumerate(sub.iterrows()):
            ax.plot(r.curve_step, r.curve_train, "-", color=f"C{i}", lw=1)
            ax.plot(r.curve_step, r.curve_heldout, "--", color=f"C{i}", lw=1)
        ax.set_title(rf"$\tau$ = {tau:g}, $k$ = {k}")
        ax.set_xlabel("step")
    axes[0][0].set_ylabel("InfoNCE (nats)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def fig_trends(table: pd.DataFrame, margin: float, *, title: str = ""):
    """Gap (95% t-intervals over seeds) and top-1 retrieval against the training k, per tau; and the
    paired change of the gap between the two largest k with its 90% interval inside the margin."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    ks = sorted(table.k.unique())
    for i, (tau, sub) in enumerate(table.groupby("tau")):
        for ax, col in zip(axes[:2], ["gap", "top1"]):
            est = [Estimate.from_samples(sub[sub.k == k][col].to_numpy(), t=True) for k in ks]
            m = np.array([e.mean for e in est])
            ax.errorbar(ks, m, yerr=[m - [e.ci_low for e in est], [e.ci_high for e in est] - m], fmt="o-",
                        color=f"C{i}", ms=4, capsize=3, label=rf"$\tau$ = {tau:g}")
        a, b = (sub[sub.k == k].set_index("seed").gap for k in ks[-2:])
        d = Estimate.from_samples((b - a).dropna().to_numpy(), 0.9, t=True)
        axes[2].errorbar([i], [d.mean], yerr=[[d.mean - d.ci_low], [d.ci_high - d.mean]], fmt="o", color=f"C{i}",
                         capsize=4)
    axes[0].axhline(0.0, color="k", lw=0.8)
    axes[1].axhline(float(table.chance.iloc[0]), color="k", ls=":", label="chance")
    for ax, lab in zip(axes[:2], ["gap: held-out - training (nats)", "top-1 retrieval (held-out)"]):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("training negatives $k$")
        ax.set_ylabel(lab)
    axes[1].legend(fontsize="small")
    axes[2].axhspan(-margin, margin, color="0.85", label=rf"margin $\pm\varepsilon_{{\mathrm{{eq}}}}$ = $\pm${margin:g}")
    axes[2].axhline(0.0, color="k", lw=0.8)
    taus = sorted(table.tau.unique())
    axes[2].set_xticks(range(len(taus)), [rf"$\tau$ = {t:g}" for t in taus])
    axes[2].set_xlim(-0.7, len(taus) - 0.3)
    axes[2].set_ylabel(f"gap(k={ks[-1]}) - gap(k={ks[-2]}) (nats)")
    axes[2].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def fig_rate(rates: list, *, title: str = ""):
    """``|L_k - log k - L_inf|`` on the learned embedding against k (95% bootstrap intervals), with
    the plug-in prediction ``|c1/k + c2/k^2|`` (line) and ``|c1|/k`` (dotted); one colour per tau."""
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for i, rate in enumerate(rates):
        tau, k = float(rate.tau.iloc[0]), rate.k.to_numpy(float)
        sign = np.sign(rate.c1.iloc[0]) or 1.0
        y, lo, hi = sign * rate.bias, sign * rate.bias_low, sign * rate.bias_high
        lo_c, hi_c = np.minimum(lo, hi), np.maximum(lo, hi)
        ax.errorbar(k, y, yerr=[np.clip(y - lo_c, 0, None), np.clip(hi_c - y, 0, None)], fmt="o", ms=4, capsize=2,
                    color=f"C{i}", label=rf"measured, $\tau$ = {tau:g}")
        c1, c2 = rate.c1.iloc[0], rate.c2.iloc[0]
        kk = np.geomspace(k.min(), k.max(), 200)
        ax.plot(kk, sign * (c1 / kk + c2 / kk**2), "-", color=f"C{i}", lw=1, label=r"$c_1/k + c_2/k^2$ (plug-in)")
        ax.plot(kk, abs(c1) / kk, ":", color=f"C{i}", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("symlog", linthresh=1e-4)
    ax.set_xlabel("negatives $k$")
    ax.set_ylabel(r"$\pm(L_k - \log k - L_\infty)$ (nats, sign of $c_1$)")
    ax.legend(fontsize="x-small")
    if title:
        ax.set_title(title)
    return fig


def fig_search(rates: dict, *, title: str = ""):
    """The learned softmax search over k unseen held-out items: top-1 retrieval of the positive
    (left) and the retrieval cross-entropy ``L_k - log k`` with its limit ``L_inf`` (right, dashed),
    95% bootstrap intervals over images; one colour per training tau."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for i, (tau, rate) in enumerate(rates.items()):
        for ax, col in zip(axes, ["top1", "xent"]):
            ax.errorbar(rate.k, rate[col], yerr=[rate[col] - rate[f"{col}_low"], rate[f"{col}_high"] - rate[col]],
                        fmt="o-", ms=3, capsize=2, color=f"C{i}", label=rf"$\tau$ = {tau:g}")
        axes[1].axhline(float(rate.linf.iloc[0]), color=f"C{i}", ls="--", lw=1)
    for ax, lab in zip(axes, ["top-1 retrieval among $k$ unseen items", r"$L_k - \log k$ (nats)"]):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("database size $k$")
        ax.set_ylabel(lab)
    axes[0].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def fig_kl(kls: dict, *, title: str = ""):
    """``KL(Q_tau(x, .) || pi)`` of learned embeddings' softmax searches against tau (95% bootstrap
    intervals), with the bound ``min(1/(2 tau^2), 2/tau)``. ``kls``: {training tau: table}."""
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for i, (tau_train, kl) in enumerate(kls.items()):
        ax.errorbar(kl.tau, kl.kl, yerr=[kl.kl - kl.kl_low, kl.kl_high - kl.kl], fmt="o-", ms=4, capsize=2,
                    color=f"C{i}", label=rf"embedding trained at $\tau$ = {tau_train:g}")
    b = next(iter(kls.values()))
    ax.plot(b.tau, b.bound, "k-", lw=2, label=r"bound $\min(1/(2\tau^2), 2/\tau)$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"temperature $\tau$ of the search")
    ax.set_ylabel(r"$\mathrm{KL}(Q_\tau \,\|\, \pi)$ (nats)")
    ax.legend(fontsize="small")
    if title:
        ax.set_title(title)
    return fig


@cached
def view(setup: DigitsSetup, state: dict, device: str, seed: int):
    """2-D PCA view of the held-out digits' embeddings (``pc1, pc2, label``) for one trained
    embedding (weights ``state``), held-out pool of split 0."""
    dev = resolve_device(device)
    _, _, te, tel = _split(setup, seed, 0, dev)
    xy = digits.embedding_2d(_embedding_from_state(setup, state, dev), te)
    return pd.DataFrame({"pc1": xy[:, 0], "pc2": xy[:, 1], "label": tel.cpu().numpy()})


def fig_view(view, *, title: str = ""):
    """Scatter of the 2-D PCA view of held-out digits' embeddings, coloured by class."""
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    sns.scatterplot(data=view, x="pc1", y="pc2", hue="label", palette="tab10", s=12, ax=ax, legend="full")
    ax.legend(title="digit", fontsize="x-small", ncol=2, loc="best")
    ax.set_xlabel("first principal component")
    ax.set_ylabel("second principal component")
    if title:
        ax.set_title(title)
    return fig
