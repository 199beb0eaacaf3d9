"""The training loop: Adam steps on an objective, with hooks (one loop for every trainer of
:mod:`infonce_book.learning.training`).

* :func:`adam_loop`: at most ``steps`` Adam steps on the sum of the losses an objective returns;
  hooks set the learning rate, act before and after each step (a snapshot and its restoration, a
  projection onto the parameter set), log the losses and stop the run.
* :func:`cosine_schedule`: the cosine learning-rate schedule, as a ``schedule`` hook.

Source: Adam: Kingma and Ba (2015); cosine schedule: Loshchilov and Hutter (2017), without restarts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch

from ..utils.progress import progress
from ..utils.validation import check_k, check_scalar


def adam_loop(params: Iterable[torch.Tensor], objective: Callable[[int], torch.Tensor], steps: int, lr: float, *,
              schedule: Callable[[int], float] | None = None, before_step: Callable[[int], None] | None = None,
              after_step: Callable[[int], None] | None = None,
              log: Callable[[int, torch.Tensor], None] | None = None,
              stop: Callable[[int], bool] | None = None, desc: str = "adam_loop") -> int:
    """Minimise ``objective`` by Adam over ``params``, at most ``steps`` steps.

    Step ``t = 0, 1, ...`` does, in this order:

    1. ``schedule(t)``: the learning rate of this step, set on every parameter group (without a
       schedule the rate stays ``lr``);
    2. ``losses = objective(t)``: a tensor of losses (a scalar, or one loss per fit when several
       independent fits run at once); the step minimises their sum (a scalar is its own sum);
    3. ``before_step(t)`` (e.g. a snapshot of parameters that must not move);
    4. ``zero_grad``, ``backward`` of the sum, Adam's ``step``;
    5. ``after_step(t)`` (e.g. a projection back onto the parameter set, or restoring the snapshot);
    6. ``log(t, losses.detach())``;
    7. ``stop(t)``: ``True`` ends the run after this step.

    The objective draws its own data (fresh tuples, a minibatch), so random draws happen in
    the order the objective makes them. A progress bar labelled ``desc`` shows in a terminal only.

    Args:
        params: the tensors Adam updates (requiring gradients; not empty).
        objective: ``objective(t) -> losses`` with a graph to ``params``.
        steps: the largest number of steps (>= 1). lr: Adam's learning rate (> 0).
        schedule, before_step, after_step, log, stop: the hooks above, each optional.
    Returns:
        the number of steps taken (``steps``, or ``t + 1`` if ``stop(t)`` was true).
    Raises:
        ValueError: ``steps < 1``, ``lr <= 0``, or no parameter.
    """
    steps, lr = check_k(steps, "steps"), check_scalar(lr, "lr", gt=0)
    params = list(params)
    if not params:
        raise ValueError("adam_loop needs at least one parameter")
    opt = torch.optim.Adam(params, lr=lr)
    for step in progress(range(steps), desc=desc):
        if schedule is not None:
            for group in opt.param_groups:
                group["lr"] = schedule(step)
        losses = objective(step)
        if before_step is not None:
            before_step(step)
        opt.zero_grad()
        (losses if losses.dim() == 0 else losses.sum()).backward()
        opt.step()
        if after_step is not None:
            after_step(step)
        if log is not None:
            log(step, losses.detach())
        if stop is not None and stop(step):
            return step + 1
    return steps


def cosine_schedule(lr: float, steps: int) -> Callable[[int], float]:
    """The ``schedule`` hook ``t -> lr (1 + cos(pi t / steps)) / 2``: ``lr`` at step 0, decaying to
    ``lr (1 + cos(pi (steps - 1)/steps))/2`` at the last step ``steps - 1``.

    Raises:
        ValueError: ``lr <= 0`` or ``steps < 1``.
    """
    lr, steps = check_scalar(lr, "lr", gt=0), check_k(steps, "steps")
    return lambda step: lr * 0.5 * (1.0 + math.cos(math.pi * step / steps))
