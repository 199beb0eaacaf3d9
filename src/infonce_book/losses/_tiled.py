"""The tile loops of the in-batch kernel (:mod:`._pairwise`): the logits ``Y = (beta A) C^T`` formed
``tile`` rows at a time into reused buffers, their row and column log-sum-exps in the forward pass
and the weighted sums of the gradient in the backward pass.

A tile holds at most ``tile x m`` logits (two such buffers), so peak memory is
``O((n + m) d + tile m)`` forward and backward: the streaming form of the CLIP loss of Inf-CL
(Cheng et al. 2024, "Breaking the memory barrier: near infinite batch size scaling for contrastive
loss"), here by row tiles; the backward pass recomputes each tile's logits (one more matrix
multiply in all than the materialised form, :func:`._pairwise.materialised_forward`). Reused buffers
also spare the allocation of fresh ``n x m`` matrices, whose page faults cost about as much as a
pass over them on a CPU.

The log-sum-exps are over each row's (column's) negatives: ``exclude`` sets the left-out logits
to ``-inf`` before any sum. Column sums run over tiles with a running shift (the largest logit
so far; 0 while a column has no finite logit yet, so no ``inf - inf`` arises).
"""

from __future__ import annotations

import torch

__all__ = ["tiled_backward", "tiled_forward"]

_NEG_INF = float("-inf")


def _bounds(n: int, tile: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + tile, n)) for lo in range(0, n, tile)]


def _logits(a_beta: torch.Tensor, c: torch.Tensor, exclude: torch.Tensor, lo: int, hi: int, buf: torch.Tensor | None,
            s_pos: torch.Tensor | None = None) -> torch.Tensor:
    """The (hi - lo, m) logits of rows ``lo:hi`` with the left-out ones at ``-inf``, in ``buf`` (or
    a new tensor); with ``s_pos`` ((n,)), first writes each row's positive logit into it (the
    positive is ``exclude``'s last column), so that it is rounded as the other logits are."""
    h, m = hi - lo, c.shape[0]
    if buf is None:
        y = torch.mm(a_beta[lo:hi], c.T)
    elif buf.dtype != a_beta.dtype:  # low-precision scoring: the product cast up into the buffer
        y = buf[: h * m].view(h, m).copy_(torch.mm(a_beta[lo:hi], c.T))
    else:
        y = torch.mm(a_beta[lo:hi], c.T, out=buf[: h * m].view(h, m))
    if s_pos is not None:
        s_pos[lo:hi] = y.gather(1, exclude[lo:hi, -1:]).squeeze(-1)
    y.scatter_(1, exclude[lo:hi], _NEG_INF)
    return y


def _finite_shift(mx: torch.Tensor) -> torch.Tensor:
    return torch.where(mx == _NEG_INF, 0.0, mx)


def _log_sum(y: torch.Tensor, shift: torch.Tensor, dim: int, out: torch.Tensor) -> torch.Tensor:
    """``log sum e^{y - shift}`` over ``dim`` (``shift`` broadcast against ``y``), via ``out``."""
    return torch.sub(y, shift, out=out).exp_().sum(dim=dim).log_()


def tiled_forward(a_beta: torch.Tensor, c: torch.Tensor, exclude: torch.Tensor, columns: bool, tile: int,
                  dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor | None,
                                                             tuple[torch.Tensor, torch.Tensor | None],
                                                             torch.Tensor, torch.Tensor | None]:
    """``(R_rows (n,), R_columns (m,) or None, (lse_rows, lse_columns or None), M_rows, M_columns or
    None)``, ``tile`` rows at
    a time: ``lse`` is ``log sum_j e^{y_j}`` over each row's (column's) negatives and
    ``R = (max - s_pos) + log sum_j e^{y_j - max}``, the difference of two logits taken first (so
    that equal logits give exactly ``log(count)``); ``s_pos`` is the positive's logit
    (``exclude``'s last column; for the columns, the same diagonal); ``M = max - s_pos``."""
    n, m = a_beta.shape[0], c.shape[0]
    dtype = a_beta.dtype if dtype is None else dtype  # (lower for a_beta and c: low-precision scoring)
    s_pos = torch.empty(n, dtype=dtype, device=a_beta.device)
    buf = torch.empty(tile * m, dtype=dtype, device=a_beta.device)
    tmp = torch.empty_like(buf)
    max_r, log_sum_r = torch.empty_like(s_pos), torch.empty_like(s_pos)
    col_m: torch.Tensor | None = None
    col_acc: torch.Tensor | None = None
    for lo, hi in _bounds(n, tile):
        y = _logits(a_beta, c, exclude, lo, hi, buf, s_pos)
        t = tmp[: y.numel()].view_as(y)
        mx = y.amax(dim=1)  # finite: every row has a negative (else the loss is not finite and raises)
        max_r[lo:hi] = mx
        log_sum_r[lo:hi] = _log_sum(y, mx.unsqueeze(-1), 1, t)
        if columns:
            tile_max = y.amax(dim=0)
            new_m = tile_max if col_m is None else torch.maximum(col_m, tile_max)
            shift = _finite_shift(new_m)  # a column may have no finite logit in the first tiles
            term = torch.sub(y, shift, out=t).exp_().sum(dim=0)
            if col_acc is None:
                col_acc = term
            else:
                assert col_m is not None  # (set with col_acc)
                col_acc.mul_(torch.exp(_finite_shift(col_m) - shift)).add_(term)
            col_m = new_m
    m_rows = max_r - s_pos
    r_rows = m_rows + log_sum_r
    lse_r = max_r.add_(log_sum_r)
    if not columns:
        return r_rows, None, (lse_r, None), m_rows, None
    assert col_acc is not None and col_m is not None  # (columns: set by the first tile)
    log_c = col_acc.log_()
    m_cols = col_m - s_pos
    r_cols = m_cols + log_c
    return r_rows, r_cols, (lse_r, col_m.add_(log_c)), m_rows, m_cols


def tiled_backward(a_beta: torch.Tensor, a: torch.Tensor, c: torch.Tensor, exclude: torch.Tensor,
                   f_rows: torch.Tensor, f_cols: torch.Tensor | None, neg_w: torch.Tensor, lse_r: torch.Tensor,
                   lse_c: torch.Tensor | None, tile: int, need_c: bool,
                   score_dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(G C (n, d), G^T A (m, d) or None)`` for ``G = f_rows q + q' f_cols`` (the weights ``q`` of
    the rows, ``q'`` of the columns; ``f_cols`` None: rows only) with each row's positive entry
    set to ``neg_w``, the logits recomputed tile by tile (the products in ``score_dtype`` when one is
    given, as in the forward pass)."""
    n, m = a.shape[0], c.shape[0]
    ga = torch.empty_like(a)
    gc = torch.zeros_like(c) if need_c else None
    buf = torch.empty(min(tile, n) * m, dtype=a.dtype, device=a.device)
    tmp = torch.empty_like(buf) if f_cols is not None else None
    sd = score_dtype
    a_s, c_s, a_low = (a_beta, c, a) if sd is None else (a_beta.to(sd), c.to(sd), a.to(sd))
    for lo, hi in _bounds(n, tile):
        y = _logits(a_s, c_s, exclude, lo, hi, buf)
        if f_cols is not None:
            assert tmp is not None and lse_c is not None  # (set, and saved, with the columns)
            qc = torch.sub(y, lse_c, out=tmp[: y.numel()].view_as(y)).exp_().mul_(f_cols)
        g = y.sub_(lse_r[lo:hi].unsqueeze(-1)).exp_().mul_(f_rows[lo:hi].unsqueeze(-1))
        if f_cols is not None:
            g.add_(qc)
        g.scatter_(1, exclude[lo:hi, -1:], neg_w[lo:hi].unsqueeze(-1))
        if sd is None:
            torch.mm(g, c, out=ga[lo:hi])
            if gc is not None:  # (need_c)
                gc.addmm_(g.T, a[lo:hi])
        else:
            g_low = g.to(sd)
            ga[lo:hi] = torch.mm(g_low, c_s)
            if gc is not None:  # (need_c)
                gc.add_(torch.mm(g_low.T, a_low[lo:hi]))
    return ga, gc
