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

import torch

from ..utils.validation import check_float_tensor

__all__ = ["gather_with_grad"]

_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_MAX_DIM = 8


def _dist():
    import torch.distributed as dist  # optional: some torch builds lack it; checked below

    if not dist.is_available():
        raise RuntimeError("gather_with_grad needs torch.distributed, which this build of torch does not have")
    if not dist.is_initialized():
        raise RuntimeError("gather_with_grad needs an initialised process group: call "
                           "torch.distributed.init_process_group first (torchrun sets up its environment)")
    return dist


class _AllGather(torch.autograd.Function):
    """``cat(x_0, ..., x_{W-1})`` on every process; backward: :class:`_SumOwnSlice`."""

    @staticmethod
    def forward(ctx, x, group):
        dist = _dist()
        world = dist.get_world_size(group)
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x, group=group)
        ctx.group = group
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        return _SumOwnSlice.apply(grad.contiguous(), ctx.group), None


class _SumOwnSlice(torch.autograd.Function):
    """``sum_p g_p[slice r]`` on process ``r`` (a reduce-scatter with the sum, written as an
    all-reduce and a slice, which every backend has); backward: :class:`_AllGather`. Each is the
    other's adjoint, so second derivatives through the gather are right too."""

    @staticmethod
    def forward(ctx, g, group):
        dist = _dist()
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        total = g.clone()
        dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)
        n = total.shape[0] // world
        ctx.group = group
        return total[rank * n:(rank + 1) * n].clone()

    @staticmethod
    def backward(ctx, grad):
        return _AllGather.apply(grad.contiguous(), ctx.group), None


def gather_with_grad(x, group=None):
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
    dist = _dist()
    check_float_tensor(x, "x", finite=False)
    if not 1 <= x.dim() <= _MAX_DIM:
        raise ValueError(f"x must have between 1 and {_MAX_DIM} dimensions (the first is gathered), "
                         f"got shape {tuple(x.shape)}")
    world = dist.get_world_size(group)
    # Shapes and dtypes first, in a fixed-size message, so that a mismatch is an error on every
    # process rather than a hang or garbage in the gather itself.
    code = [_DTYPES.index(x.dtype) if x.dtype in _DTYPES else -1, x.dim(), *x.shape]
    code += [0] * (2 + _MAX_DIM - len(code))
    mine = torch.tensor(code, dtype=torch.int64, device=x.device)
    codes = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(codes, mine, group=group)
    codes = [c.tolist() for c in codes]
    if any(c != codes[0] for c in codes) or codes[0][0] < 0:
        described = ", ".join(
            f"process {r}: shape {tuple(c[2:2 + c[1]])}, dtype {_DTYPES[c[0]] if c[0] >= 0 else 'other'}"
            for r, c in enumerate(codes))
        raise ValueError(f"gather_with_grad needs x of the same shape and a float dtype on every process; got "
                         f"{described}")
    return _AllGather.apply(x.contiguous(), group)


def local_offset(n: int, group=None) -> int:
    """The first row of this process's slice in a gathered tensor of slices of ``n`` rows."""
    return _dist().get_rank(group) * n
