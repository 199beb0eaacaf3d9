"""Negatives gathered across processes, with gradients back to their owners (``torch.distributed``).

In data-parallel training each process holds a slice of the batch. Using the other processes'
embeddings as extra negatives needs an all-gather whose backward pass returns to every process
the gradient of *all* processes' losses with respect to its own slice: process ``r`` receives
``sum_p d L_p / d x_r``, where ``L_p`` is the loss computed on process ``p``. With
``DistributedDataParallel`` (which averages the parameters' gradients over the ``W`` processes)
each process then trains on the gradient of the loss averaged over the processes, which, for
local losses with ``reduction="mean"`` over equal local batches, is the loss of one process
holding the whole batch.

Two traps, each of which scales or skews the gradients by the world size ``W``: gathering
without gradient (``torch.distributed.all_gather`` alone, with the local slice put back so that
only the process's own loss reaches it: the terms where the slice served as another process's
negative are lost) and counting the gradient twice (summing it over processes in the gather's
backward *and* summing, not averaging, the parameters' gradients afterwards).
"""

from __future__ import annotations

from typing import Any

import torch

from ._gather import all_gather_with_grad

__all__ = ["gather_with_grad"]


def gather_with_grad(x: torch.Tensor, group: Any = None) -> torch.Tensor:
    """Concatenate ``x`` from every process of ``group`` along the first dimension, in rank order,
    differentiably: the backward pass sums, over the processes, the gradients with respect to
    each slice and returns to every process the sum for its own slice.

    Use it to score the other processes' embeddings as extra negatives (every process must call
    it, in the same order, with tensors of the same shape and dtype, and run the backward pass,
    as in data-parallel training). Works with every ``torch.distributed`` backend (gloo on CPUs,
    NCCL on GPUs: ``x`` on the process's GPU). The in-batch losses gather for themselves with
    ``gather=True`` (:func:`infonce_book.losses.info_nce_in_batch`,
    :func:`infonce_book.losses.nt_xent`).

    Args:
        x: (n, ...) floating-point tensor, the local slice (for example (B, d) embeddings).
        group: the process group (``None``: the default group).
    Returns:
        (W n, ...) tensor, the slices of the ``W`` processes in rank order (process ``r``'s own
        slice is rows ``r n`` to ``(r + 1) n``). Its gradient reaches ``x`` summed over the
        processes' losses: with ``DistributedDataParallel`` averaging the parameters' gradients,
        training follows the loss averaged over the processes (module docstring). Second
        derivatives through it are right.
    Raises:
        RuntimeError: torch.distributed missing or no process group initialised. TypeError:
        ``x`` not a floating-point tensor. ValueError: ``x`` 0-d or of more than 8 dimensions,
        or its shape or dtype differs between processes (every process raises, naming all
        shapes: the shapes are gathered first).
    Source: the same all-gather as ``torch.distributed.nn.functional.all_gather`` (its backward
    a reduce-scatter of the sum), used for in-batch negatives across processes as in SimCLR
    (Chen et al. 2020) and CLIP (Radford et al. 2021).
    """
    return all_gather_with_grad(x, group)
