"""The all-gather with gradients behind :func:`infonce_book.losses.gather_with_grad` and the
in-batch losses' ``gather=True``: the shapes and dtypes of every process checked first, then a
custom autograd function whose backward pass returns to every process the sum over the processes
of the gradients with respect to its own slice (module docstring of
:mod:`infonce_book.losses.distributed`).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import torch

from ..utils.validation import check_float_tensor
from ._common import values_checked

__all__ = ["all_gather_with_grad", "local_offset"]

_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_MAX_DIM = 8


def _dist() -> ModuleType:
    """``torch.distributed``, checked to be available and initialised."""
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
    def forward(ctx: Any, x: torch.Tensor, group: Any) -> torch.Tensor:
        dist = _dist()
        world = dist.get_world_size(group)
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x, group=group)
        ctx.group = group
        return torch.cat(parts)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return _SumOwnSlice.apply(grad.contiguous(), ctx.group), None

    if TYPE_CHECKING:  # (torch leaves Function.apply unannotated: its signature here, for the callers)
        @classmethod
        def apply(cls, x: torch.Tensor, group: Any) -> torch.Tensor: ...


class _SumOwnSlice(torch.autograd.Function):
    """``sum_p g_p[slice r]`` on process ``r`` (a reduce-scatter with the sum, written as an
    all-reduce and a slice, which every backend has); backward: :class:`_AllGather`. Each is the
    other's adjoint, so second derivatives through the gather are right too."""

    @staticmethod
    def forward(ctx: Any, g: torch.Tensor, group: Any) -> torch.Tensor:
        dist = _dist()
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        total = g.clone()
        dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)
        n = total.shape[0] // world
        ctx.group = group
        return total[rank * n:(rank + 1) * n].clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return _AllGather.apply(grad.contiguous(), ctx.group), None

    if TYPE_CHECKING:  # (torch leaves Function.apply unannotated: its signature here, for the callers)
        @classmethod
        def apply(cls, g: torch.Tensor, group: Any) -> torch.Tensor: ...


def all_gather_with_grad(x: torch.Tensor, group: Any = None) -> torch.Tensor:
    """``cat(x_0, ..., x_{W-1})`` over the processes of ``group``, differentiably; the checks and
    errors of :func:`infonce_book.losses.gather_with_grad`, which documents it. Inside a loss
    called with ``check_values=False`` (:func:`._common.values_checked`) the processes' shapes
    are not compared first (that comparison reads an all-gather of them on the host)."""
    dist = _dist()
    check_float_tensor(x, "x", finite=False)
    if not 1 <= x.dim() <= _MAX_DIM:
        raise ValueError(f"x must have between 1 and {_MAX_DIM} dimensions (the first is gathered), "
                         f"got shape {tuple(x.shape)}")
    if not values_checked():
        return _AllGather.apply(x.contiguous(), group)
    world: int = dist.get_world_size(group)
    # Shapes and dtypes first, in a fixed-size message, so that a mismatch is an error on every
    # process rather than a hang or garbage in the gather itself.
    code = [_DTYPES.index(x.dtype) if x.dtype in _DTYPES else -1, x.dim(), *x.shape]
    code += [0] * (2 + _MAX_DIM - len(code))
    mine = torch.tensor(code, dtype=torch.int64, device=x.device)
    gathered = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(gathered, mine, group=group)
    codes = [c.tolist() for c in gathered]
    if any(c != codes[0] for c in codes) or codes[0][0] < 0:
        described = ", ".join(
            f"process {r}: shape {tuple(c[2:2 + c[1]])}, dtype {_DTYPES[c[0]] if c[0] >= 0 else 'other'}"
            for r, c in enumerate(codes))
        raise ValueError(f"gather_with_grad needs x of the same shape and a float dtype on every process; got "
                         f"{described}")
    return _AllGather.apply(x.contiguous(), group)


def local_offset(n: int, group: Any = None) -> int:
    """The first row of this process's slice in a gathered tensor of slices of ``n`` rows."""
    rank: int = _dist().get_rank(group)
    return rank * n
