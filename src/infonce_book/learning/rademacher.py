"""Monte Carlo estimates of the empirical Rademacher complexity of an InfoNCE loss class.

For an embedding class ``{phi_theta : theta in Theta}`` (see :mod:`infonce_book.embeddings`) and
a fixed sample of tuples ``z_1..z_n``, the empirical Rademacher complexity of the loss class is

``R_n = E_sigma sup_{theta in Theta} (1/n) sum_i sigma_i l_k(theta; z_i)``

with i.i.d. signs ``sigma_i = +-1``. Subtracting ``l_k(theta0; z_i)`` (``theta0`` the centre of
``Theta``) changes every supremum by ``(1/n) sum_i sigma_i l_k(theta0; z_i)``, which has mean zero,
so it leaves ``R_n`` unchanged and makes each supremum non-negative with a much smaller
variance; we estimate that centred form.

The supremum is taken by projected gradient ascent (Adam) from several starts, keeping the best
value seen at any iterate. **Every iterate is a point of Theta, so the optimiser's value is a
lower estimate of the supremum**, and the returned interval is an interval for the mean of that
lower estimate (a t-interval over the sign draws), not a guaranteed interval for ``R_n``.
"""

from __future__ import annotations

import numpy as np
import torch

from ..losses import VARIANTS
from ..theory.stats import Estimate
from ..utils.progress import progress
from ..utils.validation import CONFIDENCE_LEVEL, check_choice, check_k, check_scalar, check_seed, check_tau
from .embeddings import loss_per_tuple


def empirical_rademacher(loss_class, data, n_sigma: int = 16, *, tau: float, n_starts: int = 2,
                         steps: int = 100, lr: float | None = None, seed: int = 0,
                         variant: str = "standard", level: float = 0.95) -> Estimate:
    """Estimate the empirical Rademacher complexity of ``{z -> l_k(theta; z) : theta in Theta}``.

    Args:
        loss_class: an embedding class from :mod:`infonce_book.embeddings` (a module with
            ``center``, ``radius``, ``project_()``, ``random_parameters``); its parameters are
            restored afterwards.
        data: ``(x, x_pos, x_neg)`` with shapes (n, p), (n, p), (n, k, p), on the class's device.
        n_sigma: number of sign draws (>= 2). tau: temperature. n_starts: optimiser starts per
            draw (the first at the centre, the others uniform in Theta). steps: Adam steps per
            start. lr: step size (default ``radius / 10``). seed: for signs and starts.
    Returns:
        an :class:`~infonce_book.theory.stats.Estimate` in nats: the mean over sign draws of the
        best supremum found (a lower estimate of R_n), its standard error and a Student-t interval
        over the ``n_sigma`` draws; ``samples`` holds the value of each draw.
    Raises:
        ValueError: bad shapes, n_sigma < 2, bad tau, unknown variant.
    Source: book, section "Estimating the Rademacher complexity" of chapter C4/C5.
    """
    tau = check_tau(tau)
    n_sigma = check_k(n_sigma, "n_sigma")
    if n_sigma < 2:
        raise ValueError(f"n_sigma must be >= 2 (an interval needs two draws), got n_sigma={n_sigma}")
    n_starts, steps = check_k(n_starts, "n_starts"), check_k(steps, "steps")
    check_choice(variant, "variant", VARIANTS)
    level, seed = check_scalar(level, "level", **CONFIDENCE_LEVEL), check_seed(seed)
    if not isinstance(data, (tuple, list)) or len(data) != 3:
        raise TypeError(f"data must be a tuple (x, x_pos, x_neg) of tensors, got {type(data).__name__}")
    x, xp, xn = data
    n = x.shape[0]
    lr = loss_class.radius / 10.0 if lr is None else check_scalar(lr, "lr", gt=0)
    dev = loss_class.center.device
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    saved = loss_class.theta.detach().clone()
    with torch.no_grad():
        loss_class.set_theta_(loss_class.center)
        base = loss_per_tuple(loss_class, x, xp, xn, tau, variant=variant).detach()
    values = []
    try:
        for _ in progress(range(n_sigma), desc="empirical_rademacher"):
            sigma = torch.randint(0, 2, (n,), generator=gen, device=dev).to(base.dtype) * 2 - 1
            best = 0.0  # theta0 itself gives 0
            for start in range(n_starts):
                init = loss_class.center if start == 0 else loss_class.random_parameters(gen)
                with torch.no_grad():
                    loss_class.set_theta_(init)
                opt = torch.optim.Adam([loss_class.theta_param], lr=lr)
                for _step in range(steps + 1):
                    obj = (sigma * (loss_per_tuple(loss_class, x, xp, xn, tau, variant=variant) - base)).mean()
                    best = max(best, float(obj.detach()))
                    if _step == steps:
                        break
                    opt.zero_grad()
                    (-obj).backward()
                    opt.step()
                    loss_class.project_()
            values.append(best)
    finally:
        with torch.no_grad():
            loss_class.theta_param.copy_(saved)
    return Estimate.from_samples(np.asarray(values), level, t=True, method="projected Adam, best of starts",
                                 keep=True)
