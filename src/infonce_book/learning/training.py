"""Training by empirical risk minimisation of InfoNCE (small, seeded, on the chosen device).

* :func:`fit_temperature`: learn ``tau`` alone (``log tau`` by Adam) with the embedding fixed to
  the identity on vMF data, from fresh tuples at every step (so the iterates follow the gradient
  of the population risk ``L_k(tau)``).
* :func:`fit_linear_embedding`: learn ``phi(x) = normalize(A x)`` on a fixed training set of n
  tuples (empirical risk), for a given tau; returns the embedding and a history table.
* :func:`fit_linear_embeddings`: the same for several temperatures and independent training
  sets at once (one batched run).
* :func:`fit`: ERM of InfoNCE for any embedding class of :mod:`infonce_book.learning.embeddings` (or any
  module into the unit ball), on a fixed training set or on fresh tuples from a sampler; with a
  :class:`PlateauStop`, it trains until a monitored risk has levelled off.
* :func:`fit_ensemble`: the same for the members of a
  :class:`~infonce_book.learning.embeddings.SphereMLPEnsemble`, each at its own temperature and on
  its own data, trained together (one batched step for all), each stopped by the rule on its own.

All five run the one Adam loop :func:`~infonce_book.learning.loop.adam_loop`; what differs is
given to it as hooks (the objective, a projection, the freezing of stopped members, the
learning-rate schedule, the history, the stopping rule). Progress bars show in a terminal only
(see :mod:`infonce_book.utils.progress`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..losses import VARIANTS, info_nce, info_nce_from_similarities
from ..utils.device import resolve_device
from ..utils.validation import check_choice, check_float_tensor, check_k, check_scalar, check_seed, check_tau
from .embeddings import loss_per_tuple
from .loop import adam_loop, cosine_schedule

if TYPE_CHECKING:
    import pandas as pd  # annotations only: a core install has no pandas


def _frame(rows, columns: list[str] | None = None) -> pd.DataFrame:
    """A training history as a pandas DataFrame. pandas is imported here, not with the package: a
    core install imports :mod:`infonce_book.learning` without it (the ``[book]`` extra has it).

    Raises:
        ModuleNotFoundError: pandas is not installed (the message names the extra).
    """
    try:
        import pandas as pd  # [book] extra: imported when a history is made, not with the package
    except ModuleNotFoundError as err:
        raise ModuleNotFoundError("training histories are pandas DataFrames; install the book's extra: "
                                  "pip install -e '.[book]' in the repository's folder", name="pandas") from err
    return pd.DataFrame(rows, columns=columns)


def _check_sphere_model(model) -> None:
    if not getattr(model, "identity_embedding", False):
        raise TypeError(f"model must be a reference model whose data lie on the sphere with phi = identity (the "
                        f"vMF model), so that its tuples can be embedded directly; got {model!r}")


def fit_temperature(model, k: int, *, tau_init: float = 1.0, batch_size: int = 512, steps: int = 400,
                    lr: float = 0.05, tail: int = 200, seed: int = 0, device="auto",
                    variant: str = "standard") -> dict:
    """Learn the temperature of InfoNCE on the vMF model with phi = identity.

    Adam on ``log tau`` with fresh tuples each step; the estimate is the average of ``tau`` over
    the last ``tail`` steps. Returns ``{"tau": estimate, "history": DataFrame(step, tau, loss)}``.
    """
    _check_sphere_model(model)
    k = check_k(k)
    tau_init = check_scalar(tau_init, "tau_init", gt=0)
    batch_size, steps, tail = check_k(batch_size, "batch_size"), check_k(steps, "steps"), check_k(tail, "tail")
    if tail > steps:
        raise ValueError(f"tail must be <= steps (the estimate averages the last tail steps), got tail={tail}, "
                         f"steps={steps}")
    lr = check_scalar(lr, "lr", gt=0)
    check_choice(variant, "variant", VARIANTS)
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(check_seed(seed))
    log_tau = torch.tensor(math.log(tau_init), dtype=torch.float64, device=dev, requires_grad=True)

    def objective(step):  # fresh tuples every step: the gradient of the population risk L_k(tau)
        x, xp, neg = model.sample_tuples(batch_size, k, generator=gen, device=dev)
        return info_nce(x, xp, neg, log_tau.exp(), variant=variant)

    hist = []
    adam_loop([log_tau], objective, steps, lr, desc="fit_temperature",
              log=lambda step, loss: hist.append({"step": step, "tau": float(log_tau.detach().exp()),
                                                  "loss": float(loss)}))
    history = _frame(hist)
    return {"tau": float(history["tau"].iloc[-tail:].mean()), "history": history}


def fit_linear_embedding(model, tau: float, *, n_train: int, k: int, steps: int = 300, lr: float = 0.05,
                         seed: int = 0, device="auto", n_test: int = 20000) -> dict:
    """ERM of InfoNCE over ``phi(x) = A x / |A x|`` (A a dim x dim matrix, initialised at random)
    on one fixed training set of ``n_train`` vMF tuples with k negatives each.

    Returns ``{"A", "train_risk", "test_risk", "test_se", "history"}``: the empirical risk on the
    training tuples and the risk on ``n_test`` fresh tuples (with its standard error), in nats.
    """
    _check_sphere_model(model)
    tau = check_tau(tau)
    k, n_train, steps = check_k(k), check_k(n_train, "n_train"), check_k(steps, "steps")
    if isinstance(n_test, bool) or not isinstance(n_test, int) or n_test < 2:
        raise ValueError(f"n_test must be an integer >= 2 (a standard error needs two tuples), got n_test={n_test!r}")
    lr = check_scalar(lr, "lr", gt=0)
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(check_seed(seed))
    x, xp, neg = model.sample_tuples(n_train, k, generator=gen, device=dev)
    A = (torch.eye(model.dim, dtype=torch.float64, device=dev)
         + 0.5 * torch.randn(model.dim, model.dim, generator=gen, dtype=torch.float64, device=dev)).requires_grad_()
    phi = lambda v: torch.nn.functional.normalize(v @ A.T, dim=-1)  # noqa: E731
    hist = []
    adam_loop([A], lambda step: info_nce(phi(x), phi(xp), phi(neg), tau), steps, lr,
              desc=f"fit_linear_embedding tau={tau:g}",
              log=lambda step, loss: hist.append({"step": step, "train_risk": float(loss)}))
    with torch.no_grad():
        train = float(info_nce(phi(x), phi(xp), phi(neg), tau))
        tx, txp, tneg = model.sample_tuples(n_test, k, generator=gen, device=dev)
        test = info_nce(phi(tx), phi(txp), phi(tneg), tau, reduction="none")
    return {"A": A.detach(), "train_risk": train, "test_risk": float(test.mean()),
            "test_se": float(test.std() / math.sqrt(n_test)), "history": _frame(hist)}


def fit_linear_embeddings(model, taus, *, n_sets: int, n_train: int, k: int, steps: int = 300, lr: float = 0.05,
                          seed: int = 0, device="auto", n_test: int = 20000) -> list:
    """:func:`fit_linear_embedding` for every tau on each of ``n_sets`` independent training sets,
    all fits in one batched Adam run.

    Set ``j`` is the training set (and initial matrix, and test set) that
    ``fit_linear_embedding(model, tau, ..., seed=seed + j)`` draws, the same for every tau; since
    Adam is coordinate-wise and the fits share no parameter, each fit follows the steps it would
    follow alone (up to floating-point summation order).

    Returns:
        a list over sets of lists over ``taus`` of dicts ``{"A", "train_risk", "test_risk",
        "test_se"}`` (risks in nats, as :func:`fit_linear_embedding`; no history).
    """
    _check_sphere_model(model)
    taus = [check_tau(t) for t in np.atleast_1d(taus)]
    n_sets, k = check_k(n_sets, "n_sets"), check_k(k)
    n_train, steps = check_k(n_train, "n_train"), check_k(steps, "steps")
    n_test = check_scalar(n_test, "n_test", ge=2, integer=True, why="a standard error needs two tuples")
    lr = check_scalar(lr, "lr", gt=0)
    seed = check_seed(seed)
    dev = resolve_device(device)
    T, p = len(taus), model.dim
    data, A0, gens = [], [], []
    for j in range(n_sets):
        gen = torch.Generator(device=dev).manual_seed(seed + j)
        data.append(model.sample_tuples(n_train, k, generator=gen, device=dev))
        A0.append(torch.eye(p, dtype=torch.float64, device=dev)
                  + 0.5 * torch.randn(p, p, generator=gen, dtype=torch.float64, device=dev))
        gens.append(gen)
    x, xp, neg = (torch.stack([getattr(d, f) for d in data]) for f in ("anchor", "positive", "negatives"))
    A = torch.stack([a.expand(T, p, p) for a in A0]).clone().requires_grad_()  # (J, T, p, p)
    beta = torch.tensor([1.0 / t for t in taus], dtype=torch.float64, device=dev)

    def embed(v, A_):  # v (J', ..., p), A_ (J', T, p, p) -> (J', T, ..., p)
        flat = v.reshape(v.shape[0], 1, -1, p)
        return torch.nn.functional.normalize(flat @ A_.transpose(-1, -2), dim=-1).reshape(
            v.shape[0], T, *v.shape[1:])

    def losses(x_, xp_, neg_, A_):  # (J, T, n) losses at each fit's own tau
        a, pos, ng = embed(x_, A_), embed(xp_, A_), embed(neg_, A_)
        s_pos = (a * pos).sum(-1) * beta[:, None]
        s_neg = torch.einsum("jtnd,jtnkd->jtnk", a, ng) * beta[:, None, None]
        return torch.logsumexp(torch.cat([s_pos[..., None], s_neg], -1), -1) - s_pos

    # the sum over fits of their mean losses: each fit's parameters get that fit's gradient alone
    adam_loop([A], lambda step: losses(x, xp, neg, A).mean(-1), steps, lr, desc="fit_linear_embeddings")
    out = []
    with torch.no_grad():
        train = losses(x, xp, neg, A).mean(-1)
        for j in range(n_sets):
            t = model.sample_tuples(n_test, k, generator=gens[j], device=dev)
            test = losses(t.anchor[None], t.positive[None], t.negatives[None], A[j:j + 1])[0]  # (T, n_test)
            out.append([{"A": A[j, i].detach().clone(), "train_risk": float(train[j, i]),
                         "test_risk": float(test[i].mean()), "test_se": float(test[i].std() / math.sqrt(n_test))}
                        for i in range(T)])
    return out


@dataclass(frozen=True)
class PlateauStop:
    """A stopping rule: stop once a monitored risk has levelled off.

    Every ``every`` steps (counted from 1) the trainer evaluates ``monitor`` -- typically the
    training risk on a fixed, large set of tuples, so that successive values differ only because
    the parameters changed. Training stops after a check at which the relative change over the
    last ``window`` checks is at most ``rtol``:
    ``|R_now - R_then| <= rtol |R_then|`` with ``R_then`` the value ``window`` checks earlier
    (and at ``min_steps`` steps or more).

    Attributes:
        monitor: ``monitor(embedding) -> float`` for :func:`fit`; for :func:`fit_ensemble`
            ``monitor(ensemble) -> array of shape (S,)``, one value per member (nats).
        every: steps between checks (>= 1). window: checks between the compared values (>= 1).
        rtol: relative tolerance (> 0). min_steps: no stop before this many steps (>= 0).
    """

    monitor: Callable
    every: int = 100
    window: int = 3
    rtol: float = 5e-3
    min_steps: int = 0

    def __post_init__(self):
        if not callable(self.monitor):
            raise TypeError(f"monitor must be callable, got {type(self.monitor).__name__}")
        check_k(self.every, "every")
        check_k(self.window, "window")
        check_scalar(self.rtol, "rtol", gt=0)
        if isinstance(self.min_steps, bool) or not isinstance(self.min_steps, int) or self.min_steps < 0:
            raise ValueError(f"min_steps must be an integer >= 0, got min_steps={self.min_steps!r}")

    def met(self, values, step: int) -> bool:
        """Whether the rule stops after a check at ``step``, given the monitored values so far."""
        if step < self.min_steps or len(values) <= self.window:
            return False
        now, then = float(values[-1]), float(values[-1 - self.window])
        return abs(now - then) <= self.rtol * abs(then)


class _PlateauRun:
    """A :class:`PlateauStop` applied to a run of ``S`` members trained together (``S = 1`` for
    :func:`fit`): the ``stop`` hook of :func:`~infonce_book.learning.loop.adam_loop`.

    Every ``rule.every`` steps it evaluates ``read(rule.monitor(model))`` (without gradients; an
    ``(S,)`` array), and a member for which the rule is met stops training; the hook is true
    once no member trains.

    Attributes:
        active: (S,) bool, the members still training (updated in place).
        steps_run: (S,) int, the steps each member was trained for (``steps`` if it never stopped).
        checks: ``[(steps so far, values (S,))]``, one pair per check.
    """

    def __init__(self, rule: PlateauStop, model, n_members: int, steps: int, read: Callable):
        self.rule, self.model, self.read = rule, model, read
        self.active = np.ones(n_members, dtype=bool)
        self.steps_run = np.full(n_members, steps, dtype=int)
        self.checks = []

    def __call__(self, step: int) -> bool:
        if (step + 1) % self.rule.every != 0:
            return False
        with torch.no_grad():
            values = self.read(self.rule.monitor(self.model))
        self.checks.append((step + 1, values))
        for s in np.flatnonzero(self.active):
            if self.rule.met([v[s] for _, v in self.checks], step + 1):
                self.active[s] = False
                self.steps_run[s] = step + 1
        return not self.active.any()


def _check_stop(stop) -> None:
    if stop is not None and not isinstance(stop, PlateauStop):
        raise TypeError(f"stop must be a PlateauStop or None, got {type(stop).__name__}")


class FitResult:
    """What :func:`fit` returns: the trained ``embedding`` (the module, trained in place) and its
    ``history`` (a DataFrame with columns ``step, loss``; ``loss`` in nats; with a stopping rule
    also ``monitor``, the monitored value at the checks and NaN elsewhere). ``converged`` is
    ``None`` without a stopping rule, else whether the rule stopped training before ``steps``."""

    def __init__(self, embedding, history: pd.DataFrame, converged: bool | None = None):
        self.embedding, self.history, self.converged = embedding, history, converged

    def __repr__(self) -> str:
        last = float(self.history["loss"].iloc[-1]) if len(self.history) else float("nan")
        return f"FitResult({self.embedding!r}, steps={len(self.history)}, final loss={last:.4f})"


def fit(embedding, data, tau, *, steps: int = 300, lr: float = 0.01, batch_size: int | None = None,
        seed: int = 0, variant: str = "standard", desc: str | None = None,
        stop: PlateauStop | None = None) -> FitResult:
    """Empirical risk minimisation of InfoNCE over an embedding class (book, chapters C6 and C7).

    Args:
        embedding: a ``torch.nn.Module`` mapping ``(..., p)`` inputs to ``(..., d)`` vectors of
            norm <= 1 (e.g. a class of :mod:`infonce_book.learning.embeddings`); trained in place on the
            device of its parameters. If it has ``project_()``, the parameters are projected back
            onto its parameter set after every step (projected gradient descent).
        data: either a tuple ``(x, x_pos, x_neg)`` of tensors with shapes (n, p), (n, p),
            (n, k, p) -- a fixed training set, whose empirical risk ``L_hat_{n,k}`` is minimised
            (full batch if ``batch_size`` is None, else minibatches drawn with replacement) -- or
            a callable ``sampler(batch_size, generator) -> (x, x_pos, x_neg)`` that draws fresh
            tuples every step (then ``batch_size`` is required).
        tau: temperature > 0. steps: Adam steps >= 1. lr: learning rate > 0. seed: seeds the
            minibatches and the sampler. variant: "standard" or "decoupled".
        desc: label of the progress bar (shown in a terminal only).
        stop: a :class:`PlateauStop`; then ``steps`` is the largest number of steps, and training
            ends earlier once the rule is met (``None``, the default: exactly ``steps`` steps).
    Returns:
        :class:`FitResult`.
    Raises:
        ValueError: bad shapes, tau, steps, lr, batch_size, variant. TypeError: ``stop`` that is
            not a :class:`PlateauStop`.
    """
    tau = check_tau(tau)
    steps = check_k(steps, "steps")
    lr = check_scalar(lr, "lr", gt=0)
    check_choice(variant, "variant", VARIANTS)
    _check_stop(stop)
    params = [p for p in embedding.parameters() if p.requires_grad]
    if not params:
        raise ValueError("embedding has no trainable parameters")
    dev = params[0].device
    gen = torch.Generator(device=dev).manual_seed(check_seed(seed))
    batch_size = _check_data(data, batch_size)

    def objective(step):  # the mean loss on this step's tuples
        if callable(data):
            batch = data(batch_size, gen)
        elif batch_size is None:
            batch = data
        else:
            idx = torch.randint(0, data[0].shape[0], (batch_size,), generator=gen, device=dev)
            batch = [t[idx] for t in data]
        return loss_per_tuple(embedding, *batch, tau, variant=variant).mean()

    project = getattr(embedding, "project_", None)  # projected gradient descent onto the parameter set
    plateau = None if stop is None else _PlateauRun(stop, embedding, 1, steps, lambda v: np.array([float(v)]))
    hist = []
    adam_loop(params, objective, steps, lr, after_step=None if project is None else lambda step: project(),
              log=lambda step, loss: hist.append({"step": step, "loss": float(loss)}), stop=plateau,
              desc=desc or "fit")
    history = _frame(hist)
    if plateau is None:
        return FitResult(embedding, history)
    history["monitor"] = history["step"].map({t - 1: float(v[0]) for t, v in plateau.checks}).astype(float)
    return FitResult(embedding, history, bool(not plateau.active[0]))


def _check_data(data, batch_size):
    """Check :func:`fit`'s ``data`` (a tuple of tensors or a sampler); return ``batch_size``, checked."""
    if callable(data):
        if batch_size is None:
            raise ValueError("batch_size is required when data is a sampler")
        return check_k(batch_size, "batch_size")
    if not isinstance(data, (tuple, list)) or len(data) != 3:
        raise TypeError(f"data must be a tuple (x, x_pos, x_neg) of tensors or a sampler, got {type(data).__name__}")
    x, xp, xn = data
    for name, t in (("x", x), ("x_pos", xp), ("x_neg", xn)):
        check_float_tensor(t, name)
    if x.dim() != 2 or xp.shape != x.shape or xn.dim() != 3 or xn.shape[0] != x.shape[0]:
        raise ValueError(f"data must be (x (n, p), x_pos (n, p), x_neg (n, k, p)); got {tuple(x.shape)}, "
                         f"{tuple(xp.shape)}, {tuple(xn.shape)}")
    return None if batch_size is None else check_k(batch_size, "batch_size")


class EnsembleFitResult:
    """What :func:`fit_ensemble` returns.

    Attributes:
        ensemble: the trained ensemble (trained in place).
        history: DataFrame ``step, member, loss`` (the minibatch loss of each member still
            training at that step, nats).
        monitor: DataFrame ``step, member, monitor`` (the rule's checks; empty without a rule).
        steps_run: (S,) int array, the steps each member was trained for.
        converged: (S,) bool array, whether the rule stopped the member before the last step
            (all False without a rule).
    """

    def __init__(self, ensemble, history, monitor, steps_run, converged):
        self.ensemble, self.history, self.monitor = ensemble, history, monitor
        self.steps_run, self.converged = steps_run, converged

    def __repr__(self) -> str:
        return (f"EnsembleFitResult({self.ensemble!r}, steps_run={self.steps_run.tolist()}, "
                f"converged={self.converged.tolist()})")


class _KeepStopped:
    """The ``before_step`` and ``after_step`` hooks that keep the parameters of the members no
    longer training: a snapshot of all parameters before the step (if a member has stopped),
    whose stopped members' rows are written back after it. ``active``: (S,) bool, shared with
    the stopping rule; every parameter has the member as its first dimension."""

    def __init__(self, params, active):
        self.params, self.active, self.saved = params, active, None

    def snapshot(self, step: int) -> None:
        self.saved = None if self.active.all() else [p.detach().clone() for p in self.params]

    def restore(self, step: int) -> None:
        if self.saved is not None:
            with torch.no_grad():
                keep = torch.as_tensor(~self.active, device=self.params[0].device)
                for p_, old in zip(self.params, self.saved):
                    p_[keep] = old[keep]


def _member_losses(ensemble, batch, beta, S: int):
    """(S,) mean InfoNCE of each member on its tuples ``batch = (x, x_pos, x_neg)`` (shapes as in
    :func:`fit_ensemble`'s sampler), member ``s`` at temperature ``1 / beta[s]``; beta (S, 1)."""
    x, xp, xn = batch
    if x.dim() != 3 or x.shape[0] != S or xp.shape != x.shape or xn.dim() not in (3, 4) or xn.shape[0] != S:
        raise ValueError(f"sampler must return x, x_pos of shape ({S}, B, p) and x_neg of shape ({S}, k, p) "
                         f"or ({S}, B, k, p); got {tuple(x.shape)}, {tuple(xp.shape)}, {tuple(xn.shape)}")
    B = x.shape[1]
    a, p = ensemble(x), ensemble(xp)
    if xn.dim() == 3:
        s_neg = torch.bmm(a, ensemble(xn).transpose(1, 2))  # (S, B, k)
    else:
        k = xn.shape[2]
        s_neg = torch.einsum("sbd,sbkd->sbk", a, ensemble(xn.reshape(S, B * k, -1)).reshape(S, B, k, -1))
    s_pos = (a * p).sum(-1)
    # InfoNCE at temperature tau_s is InfoNCE at temperature 1 of the similarities times beta_s.
    per_tuple = info_nce_from_similarities((beta * s_pos).reshape(-1), (beta[:, :, None] * s_neg).reshape(S * B, -1),
                                           1.0, reduction="none").reshape(S, B)
    return per_tuple.mean(1)


def _member_values(values, S: int) -> np.ndarray:
    values = np.asarray(values, dtype=float).reshape(-1)
    if values.shape != (S,):
        raise ValueError(f"the monitor must return {S} values (one per member), got {values.shape}")
    return values


def fit_ensemble(ensemble, sampler, taus, *, steps: int, lr: float = 0.01, batch_size: int, seed: int = 0,
                 stop: PlateauStop | None = None, schedule: str = "constant",
                 desc: str | None = None) -> EnsembleFitResult:
    """Minimise each member's InfoNCE risk, all members in one batched step (Adam).

    Member ``s`` of ``ensemble`` (a :class:`~infonce_book.learning.embeddings.SphereMLPEnsemble`,
    ``S`` members) is trained at temperature ``taus[s]`` on the tuples ``sampler`` draws for it;
    the objective is the sum of the members' mean losses, whose gradient in member ``s``'s
    parameters is that of member ``s``'s loss alone, so each member follows the steps it would
    follow alone. A member for which the stopping rule is met keeps its parameters from then on.

    Args:
        ensemble: a module mapping ``(S, n, p)`` inputs to ``(S, n, d)`` unit vectors, with
            ``n_members == S``.
        sampler: ``sampler(batch_size, generator) -> (x, x_pos, x_neg)`` with ``x, x_pos`` of
            shape (S, B, p) and ``x_neg`` (S, k, p) -- k negatives shared by the B anchors of a
            member's batch -- or (S, B, k, p) -- k negatives per tuple.
        taus: S temperatures > 0. steps: largest number of steps (>= 1). lr: Adam's learning rate
            > 0. batch_size: anchors per member and step. seed: seeds the sampler's generator.
        stop: a :class:`PlateauStop` whose monitor returns one value per member, or None.
        schedule: ``"constant"`` or ``"cosine"`` (``lr (1 + cos(pi t/steps))/2`` at step t).
        desc: label of the progress bar (terminal only).
    Returns:
        :class:`EnsembleFitResult`.
    Raises:
        ValueError: bad taus, steps, lr, batch_size, schedule, or sampler shapes.
    Source: book, digits chapter ("Training to a plateau"); Adam: Kingma and Ba (2015).
    """
    S = int(getattr(ensemble, "n_members", 0))
    taus = [check_tau(t) for t in np.atleast_1d(taus)]
    if S < 1 or len(taus) != S:
        raise ValueError(f"taus must hold one temperature per member ({S} members), got {len(taus)}")
    steps, batch_size = check_k(steps, "steps"), check_k(batch_size, "batch_size")
    lr = check_scalar(lr, "lr", gt=0)
    check_choice(schedule, "schedule", ("constant", "cosine"))
    _check_stop(stop)
    params = [p for p in ensemble.parameters() if p.requires_grad]
    dev = params[0].device
    gen = torch.Generator(device=dev).manual_seed(check_seed(seed))
    beta = torch.tensor([1.0 / t for t in taus], dtype=params[0].dtype, device=dev)[:, None]
    plateau = None if stop is None else _PlateauRun(stop, ensemble, S, steps, lambda v: _member_values(v, S))
    active = np.ones(S, dtype=bool) if plateau is None else plateau.active

    def objective(step):  # the members' mean losses; a stopped member's times 0 (no gradient)
        per_member = _member_losses(ensemble, sampler(batch_size, gen), beta, S)
        return per_member * torch.as_tensor(active, device=dev, dtype=per_member.dtype)

    def log(step, losses):
        losses = losses.cpu().numpy()
        hist.extend({"step": step, "member": s, "loss": float(losses[s])} for s in np.flatnonzero(active))

    hist, keep = [], _KeepStopped(params, active)
    adam_loop(params, objective, steps, lr, schedule=cosine_schedule(lr, steps) if schedule == "cosine" else None,
              before_step=keep.snapshot, after_step=keep.restore, log=log, stop=plateau, desc=desc or "fit_ensemble")
    if plateau is None:
        mon, steps_run, converged = [], np.full(S, steps, dtype=int), np.zeros(S, dtype=bool)
    else:
        mon = [{"step": t, "member": s, "monitor": float(v[s])} for t, v in plateau.checks for s in range(S)]
        steps_run, converged = plateau.steps_run, ~active
    return EnsembleFitResult(ensemble, _frame(hist, columns=["step", "member", "loss"]),
                             _frame(mon, columns=["step", "member", "monitor"]), steps_run,
                             np.asarray(converged, dtype=bool))
