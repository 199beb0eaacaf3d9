"""The tile loops of the in-batch kernel (:mod:`._pairwise`): the logits ``Y = (beta A) C^T`` formed
``tile`` rows at a time into reused buffers, their row and column log-sum-exps in the forward pass
and the weighted sums of the gradient in the backward pass.

A tile holds at most ``tile x m`` logits (two such buffers), so peak memory is
``O((n + m) d + tile m)`` forward and backward: the streaming form of the CLIP loss of Inf-CL
(Cheng et al. 2024, "Breaking the memory barrier: near infinite batch size scaling for contrastive
loss"), here by row tiles. When one tile holds every row (the materialised form) the forward pass
keeps the softmax weights for the backward pass instead of recomputing the logits; tiled, the
backward pass recomputes each tile's logits (one more matrix multiply in all). Reused buffers
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


def _bounds(n, tile):
    return [(lo, min(lo + tile, n)) for lo in range(0, n, tile)]


def _logits(a_beta, c, exclude, lo, hi, buf, s_pos=None):
    """The (hi - lo, m) logits of rows ``lo:hi`` with the left-out ones at ``-inf``, in ``buf`` (or
    a new tensor); with ``s_pos`` ((n,)), first writes each row's positive logit into it (the
    positive is ``exclude``'s last column), so that it is rounded as the other logits are."""
    h, m = hi - lo, c.shape[0]
    if buf is None:
        y = torch.mm(a_beta[lo:hi], c.T)
    else:
        y = torch.mm(a_beta[lo:hi], c.T, out=buf[: h * m].view(h, m))
    if s_pos is not None:
        s_pos[lo:hi] = y.gather(1, exclude[lo:hi, -1:]).squeeze(-1)
    y.scatter_(1, exclude[lo:hi], _NEG_INF)
    return y


def _finite_shift(mx):
    return torch.where(mx == _NEG_INF, 0.0, mx)


def _log_sum(y, shift, dim, out):
    """``log sum e^{y - shift}`` over ``dim`` (``shift`` broadcast against ``y``), via ``out``."""
    return torch.sub(y, shift, out=out).exp_().sum(dim=dim).log_()


def tiled_forward(a_beta, c, exclude, columns, tile, keep_weights):
    """Row (and, with ``columns``, column) statistics of the logits over each row's (column's)
    negatives: ``(s_pos, (max_r, log_sum_r), (max_c, log_sum_c) or None, saved)`` where
    ``log sum_j e^{y_j} = max + log_sum`` and ``s_pos`` is each row's positive logit (for the
    loss ``(max - s_pos) + log_sum``, exact where the logits are equal). ``saved`` is the softmax
    weights ``(q_rows, q_columns)`` when one tile holds every row and ``keep_weights``, else
    ``()``."""
    n, m = a_beta.shape[0], c.shape[0]
    s_pos = torch.empty(n, dtype=a_beta.dtype, device=a_beta.device)
    if tile >= n:
        y = _logits(a_beta, c, exclude, 0, n, None, s_pos)
        tmp = torch.empty_like(y)
        max_r = _finite_shift(y.amax(dim=1))
        rows = (max_r, _log_sum(y, max_r.unsqueeze(-1), 1, tmp))
        cols = None
        if columns:
            max_c = _finite_shift(y.amax(dim=0))
            cols = (max_c, _log_sum(y, max_c, 0, tmp))
        if not keep_weights:
            return s_pos, rows, cols, ()
        q_r = torch.sub(y, (rows[0] + rows[1]).unsqueeze(-1), out=tmp).exp_()
        saved = (q_r, y.sub_(cols[0] + cols[1]).exp_()) if columns else (q_r,)
        return s_pos, rows, cols, saved
    buf = torch.empty(tile * m, dtype=a_beta.dtype, device=a_beta.device)
    tmp = torch.empty_like(buf)
    max_r, log_sum_r = torch.empty_like(s_pos), torch.empty_like(s_pos)
    col_m = col_acc = None
    for lo, hi in _bounds(n, tile):
        y = _logits(a_beta, c, exclude, lo, hi, buf, s_pos)
        t = tmp[: y.numel()].view_as(y)
        mx = _finite_shift(y.amax(dim=1))
        max_r[lo:hi] = mx
        log_sum_r[lo:hi] = _log_sum(y, mx.unsqueeze(-1), 1, t)
        if columns:
            tile_max = y.amax(dim=0)
            new_m = tile_max if col_m is None else torch.maximum(col_m, tile_max)
            shift = _finite_shift(new_m)
            term = torch.sub(y, shift, out=t).exp_().sum(dim=0)
            if col_acc is None:
                col_acc = term
            else:
                col_acc.mul_(torch.exp(_finite_shift(col_m) - shift)).add_(term)
            col_m = new_m
    cols = (_finite_shift(col_m), col_acc.log_()) if columns else None
    return s_pos, (max_r, log_sum_r), cols, ()


def tiled_backward(a_beta, a, c, exclude, f_rows, f_cols, lse_r, lse_c, saved, tile, need_c):
    """``(G C (n, d), G^T A (m, d) or None)`` for ``G = f_rows q + q' f_cols`` (the weights ``q`` of
    the rows, ``q'`` of the columns; ``f_cols`` None: rows only), from ``saved`` weights or
    recomputed tile by tile."""
    n, m = a.shape[0], c.shape[0]
    if saved:
        g = saved[0] * f_rows.unsqueeze(-1)
        if f_cols is not None:
            g.addcmul_(saved[1], f_cols)
        return g @ c, (g.T @ a if need_c else None)
    ga = torch.empty_like(a)
    gc = torch.zeros_like(c) if need_c else None
    size = min(tile, n) * m
    buf = torch.empty(size, dtype=a.dtype, device=a.device)
    tmp = torch.empty_like(buf) if f_cols is not None else None
    for lo, hi in _bounds(n, tile):
        y = _logits(a_beta, c, exclude, lo, hi, buf)
        if f_cols is not None:
            qc = torch.sub(y, lse_c, out=tmp[: y.numel()].view_as(y)).exp_().mul_(f_cols)
        g = y.sub_(lse_r[lo:hi].unsqueeze(-1)).exp_().mul_(f_rows[lo:hi].unsqueeze(-1))
        if f_cols is not None:
            g.add_(qc)
        torch.mm(g, c, out=ga[lo:hi])
        if need_c:
            gc.addmm_(g.T, a[lo:hi])
    return ga, gc
