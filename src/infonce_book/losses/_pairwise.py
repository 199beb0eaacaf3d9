"""The in-batch kernel: InfoNCE over the pairwise logits ``Y = beta A C^T`` of two sets of embeddings,
by rows and (CLIP's symmetric loss) by columns, in one custom autograd function.

Row ``i`` has anchor ``A_i``, positive ``C_{pos(i)}`` and negatives the columns that ``exclude``
does not leave out (the positive always is): ``l_i = softplus(R_i)`` (standard) or ``R_i``
(decoupled) with ``R_i = log sum_{j neg} e^{Y_ij} - beta <A_i, C_pos(i)>``. The softplus form keeps
a tiny loss exact in relative terms, which ``F.cross_entropy`` over the whole row loses. Column
``j`` (``columns=True``, square ``A C^T`` with ``pos`` the identity) is the same with ``C_j`` as
anchor and the ``A_i``, ``i != j``, as candidates, read from the same ``Y``.

One matrix multiply forward, two backward, whichever directions are taken: with the row factors
``F_i = g_i s_i beta`` (``s_i = sigmoid(R_i)``, or 1 decoupled) and the softmax weights ``q`` over
each row's (``q'``: column's) negatives, ``G = F q + q' F'`` (columns scaled by ``F'``) and
``grad A = G C - w C_pos``, ``grad C = G^T A - (w A)`` scattered to the positives, where ``w`` is
the sum of the factors a positive similarity gets; ``grad tau = -beta <A, grad A>``. ``F`` is
formed as ``(s beta) g``, so a weight that underflowed to 0 never meets an overflowed factor (as in
:mod:`._fused`).

Memory: materialised (one (n, m) tile) it saves the two weight matrices; tiled
(:mod:`._tiled`, ``tile`` rows at a time) it saves only (n,) and (m,) log-sum-exps and recomputes
each tile's logits in the backward pass, so that at most ``tile x m`` logits are held, forward and
backward (the idea of Inf-CL, Cheng et al. 2024). A backward pass that must itself be
differentiable (``create_graph``) goes through :func:`._logsumexp.embedding_lse_plain`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from ._backward import differentiable_backward
from ._common import autocast_off, check_finite_loss, finite_reduction, reduce, values_checked
from ._logsumexp import combine_stretched, embedding_lse_plain, finite_shift, safe_reduce, stretched
from ._norm_checks import norm_range, raise_unless_checks_pass
from ._tiled import tiled_backward, tiled_forward
from ._variant import Variant

__all__ = ["PAIRWISE_MAX_LOGITS", "PairwiseInfoNCE", "materialised_forward", "pairwise_tile"]

_NEG_INF = float("-inf")

#: Above this many logits (``n m``; 2^22 is 16 MiB in float32, B = 2048 for CLIP's loss, 1024 for
#: NT-Xent's) the kernel goes tile by tile. On a CPU that is also faster: a fresh matrix of 64 MiB
#: or more costs its page faults on every call (about as much as a pass over it), a reused tile
#: does not (B = 4096, d = 128, one thread: 0.8 of the materialised form's time, measured with
#: ``benchmarks/bench_in_batch.py``'s inputs).
PAIRWISE_MAX_LOGITS = 2**22
#: The logits one tile holds when tiling is automatic (``2^21``: 8 MiB in float32).
TILE_LOGITS = 2**21


def pairwise_tile(n: int, m: int, chunk_size: int | None) -> int:
    """Rows per tile: ``n`` (materialised) unless ``n m`` exceeds :data:`PAIRWISE_MAX_LOGITS`
    (then ``2^21 / m`` rows, at least 1) or ``chunk_size`` (at most ``chunk_size`` rows, i.e. at
    most ``chunk_size x m`` logits held) is smaller."""
    tile = n if n * m <= PAIRWISE_MAX_LOGITS else max(1, TILE_LOGITS // m)
    return tile if chunk_size is None else min(tile, chunk_size)


class PairwiseInfoNCE(torch.autograd.Function):
    """The reduced in-batch loss over ``Y = beta A C^T`` (module docstring).

    Args of :meth:`forward`: ``A`` (n, d), ``C`` (m, d); ``tau_tensor`` (0-d, or None);
    ``tau`` (float); ``pos`` (n,) column of each row's positive; ``exclude`` (n, e) columns left
    out of each row (the positive among them); ``columns``: also the column losses (CLIP's
    symmetric form: each pair's loss is the mean of its row's and its column's); ``variant``
    (:class:`._variant.Variant`); ``dtype``; ``reduction``; ``checks``: ``(tensor, name)`` pairs that must have rows
    of unit norm (read with the loss in one synchronisation); ``tile``: rows per tile.
    """

    @staticmethod
    def forward(ctx: Any, A: torch.Tensor, C: torch.Tensor, tau_tensor: torch.Tensor | None, tau: float,
                pos: torch.Tensor | None, exclude: torch.Tensor, columns: bool, variant: Variant, dtype: torch.dtype,
                reduction: str, checks: Sequence[tuple[torch.Tensor, str]], tile: int,
                score_dtype: torch.dtype | None = None, stretch: torch.Tensor | None = None) -> torch.Tensor:
        lohi = norm_range([x for x, _ in checks]) if checks else ()
        a_beta = _as(A, dtype) * (1.0 / tau)
        c = _as(C, dtype)
        keep = any(ctx.needs_input_grad[:3])
        # Opt-in low-precision scoring: the products in score_dtype, everything after in dtype.
        a_s, c_s = (a_beta, c) if score_dtype is None else (a_beta.to(score_dtype), c.to(score_dtype))
        saved: tuple[torch.Tensor | None, ...]
        if tile >= A.shape[0]:
            r_rows, r_cols, saved, m_rows, m_cols = materialised_forward(a_s, c_s, exclude, columns, keep, dtype)
        else:
            r_rows, r_cols, saved, m_rows, m_cols = tiled_forward(a_s, c_s, exclude, columns, tile, dtype)
        top: torch.Tensor | None = None
        base: torch.Tensor | None = None
        if stretch is not None:  # a logit_scale above the cap: the rest applied to the centred rows
            if columns:
                assert r_cols is not None and m_cols is not None  # (columns)
                top = finite_shift(torch.stack([m_rows, m_cols]))
                base = torch.stack([r_rows, r_cols])
                r_rows = stretched(r_rows, top[0], stretch)
                r_cols = stretched(r_cols, top[1], stretch)
            else:
                top = finite_shift(m_rows)
                base = r_rows
                r_rows = stretched(r_rows, top, stretch)
        if columns:  # both directions in one (2, n) tensor: a pair's loss is the mean of its two
            assert r_cols is not None  # (columns)
            r = torch.stack([r_rows, r_cols])
            both = variant.row_loss(r)
            per = None if reduction == "mean" else torch.add(both[0] * 0.5, both[1], alpha=0.5)
            out = both.mean() if per is None else reduce(per, reduction)
        else:
            r = r_rows
            per = variant.row_loss(r)
            out = reduce(per, reduction)
            if out is r:  # reduction "none", decoupled: a copy, which the caller may change in place
                out = out.clone()
        if reduction == "mean" and not values_checked():  # (nothing read: a mean whose sum overflows, on the device)
            rows_of = both if columns else per
            assert rows_of is not None  # (per: rows only)
            out = torch.where(torch.isfinite(out), out, (rows_of / rows_of.numel()).sum())
        if base is not None and variant.linear_rows:  # rows past the cap that may be +inf and -inf
            assert top is not None and stretch is not None  # (set with base)
            out = combine_stretched(out, lambda x: _combine(x, columns, reduction), base, top, stretch)
        if not raise_unless_checks_pass(checks, lohi, out):  # a row beyond the range, or a sum that overflows
            if per is None:  # (each half first: the sum of two finite losses may overflow)
                per = torch.add(both[0] * 0.5, both[1], alpha=0.5)
            check_finite_loss(per, dtype, tau)
            out = finite_reduction(out, per, reduction, dtype, tau, known_finite=False)
        ctx.save_for_backward(A, C, tau_tensor, a_beta, r, stretch, top, *saved)
        ctx.opts = (tau, pos, exclude, columns, variant, dtype, reduction, tile)
        ctx.score_dtype = score_dtype
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        A, C, tau_tensor, a_beta, r, stretch, top, *saved = ctx.saved_tensors
        tau, pos, exclude, columns, variant, dtype, reduction, tile = ctx.opts
        if torch.is_grad_enabled():  # create_graph: a differentiable backward pass
            def recompute(a_: torch.Tensor, c_: torch.Tensor, t_: torch.Tensor | None,
                          st_: torch.Tensor | None) -> torch.Tensor:
                return _plain_loss(a_, c_, tau if t_ is None else t_, pos, exclude, columns, variant,
                                   dtype, reduction, st_)
            needs = ctx.needs_input_grad[:3] + ctx.needs_input_grad[-1:]
            g_a, g_c, g_t, g_st = differentiable_backward(recompute, (A, C, tau_tensor, stretch), needs, grad)
            return (g_a, g_c, g_t) + (None,) * 10 + (g_st,)
        with autocast_off(grad.device.type):
            grads = _backward(ctx, grad, A, C, a_beta, r, saved, stretch, top)
        return grads[:3] + (None,) * 10 + grads[3:]

    if TYPE_CHECKING:  # (torch leaves Function.apply unannotated: its signature here, for the callers)
        @classmethod
        def apply(cls, A: torch.Tensor, C: torch.Tensor, tau_tensor: torch.Tensor | None, tau: float,
                  pos: torch.Tensor | None, exclude: torch.Tensor, columns: bool, variant: Variant,
                  dtype: torch.dtype, reduction: str, checks: Sequence[tuple[torch.Tensor, str]], tile: int,
                  score_dtype: torch.dtype | None = None, stretch: torch.Tensor | None = None) -> torch.Tensor: ...


def materialised_forward(a_beta: torch.Tensor, c: torch.Tensor, exclude: torch.Tensor, columns: bool,
                         keep_weights: bool, dtype: torch.dtype | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, ...], torch.Tensor,
                                    torch.Tensor | None]:
    """``(R_rows, R_columns or None, saved, M_rows, M_columns or None)`` over the whole (n, m) logit
    matrix: ``R`` per row (column) over its negatives, ``R = (max_j y_j - s) - log max_j q_j`` with ``q`` the softmax
    over the negatives and ``s`` the positive's logit (``exclude``'s last column), taken from the
    same product so that it is rounded as the others: the difference of two logits comes first,
    and equal logits give exactly ``log(count)``. ``saved``: the softmax weights of the rows (and
    columns) when ``keep_weights``. ``dtype``: that of the logits, when the product runs in a
    lower one (opt-in low-precision scoring). ``M``: each row's (column's) largest centred
    logit, ``max_j y_j - s``."""
    y = _scores(a_beta, c, dtype)
    s = y.gather(1, exclude[:, -1:]).squeeze(-1)  # (n,)
    y.scatter_(1, exclude, _NEG_INF)
    q = torch.softmax(y, dim=1)  # (the softmax is the same for the centred logits)
    m_rows = y.amax(dim=1) - s
    r_rows = m_rows - q.amax(dim=1).log_()
    saved: tuple[torch.Tensor, ...] = (q,) if keep_weights else ()
    r_cols: torch.Tensor | None = None
    m_cols: torch.Tensor | None = None
    if columns:  # square, the positives on the diagonal: column j centred by s_j
        q = torch.softmax(y, dim=0)
        m_cols = y.amax(dim=0) - s
        r_cols = m_cols - q.amax(dim=0).log_()
        if keep_weights:
            saved += (q,)
    return r_rows, r_cols, saved, m_rows, m_cols


def _backward(ctx: Any, grad: torch.Tensor, A: torch.Tensor, C: torch.Tensor, a_beta: torch.Tensor, r: torch.Tensor,
              saved: Sequence[torch.Tensor | None], stretch: torch.Tensor | None = None, top: torch.Tensor | None = None
              ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """``(grad A, grad C, grad tau)`` (formulas in the module docstring). The positive's own
    entry of ``G`` (0 in ``G``: its logit was left out) is set to ``-w``, so that the two products
    ``G C`` and ``G^T A`` carry the positives' terms too. With a ``stretch`` (a logit_scale past the
    cap, :func:`._logsumexp.stretched`) the gradients are multiplied by it, last (the weights, which
    have saturated, are those of the larger scale), and its own gradient is ``sum F M / beta``; the
    fourth output."""
    tau, pos, exclude, columns, variant, dtype, reduction, tile = ctx.opts
    need_a, need_c, need_tau = ctx.needs_input_grad[:3]
    beta = 1.0 / tau
    n = A.shape[0]
    # F per row: (c s) g with c = beta (/ n for the mean; halved per direction for the symmetric form)
    c = beta / n if reduction == "mean" else beta
    cg = _as(grad, dtype) * (c * 0.5 if columns else c)
    f = variant.row_factor(r, cg)  # F = (c s) g: (n,), or (2, n) for rows and columns
    grad_stretch: torch.Tensor | None = None
    if stretch is not None and ctx.needs_input_grad[-1]:
        assert top is not None  # (saved with stretch)
        grad_stretch = ((f * top).sum() * tau).reshape(())
    f_rows, f_cols = (f[0], f[1]) if columns else (f, None)
    neg_w = f.sum(dim=0).neg_() if columns else torch.neg(f)
    a, cc = _as(A, dtype), _as(C, dtype)
    sd = ctx.score_dtype
    grad_a: torch.Tensor | None
    grad_c: torch.Tensor | None
    if tile >= n:  # saved: the softmax weights of the rows (and columns)
        q_rows = saved[0]
        assert q_rows is not None
        g = q_rows * f_rows.unsqueeze(-1)
        if f_cols is not None:
            q_cols = saved[1]
            assert q_cols is not None
            g.addcmul_(q_cols, f_cols.unsqueeze(0))
        g.scatter_(1, exclude[:, -1:], neg_w.unsqueeze(-1))
        grad_a = _product(g, cc, sd) if need_a or need_tau else None
        grad_c = _product(g.T, a, sd) if need_c else None
    else:  # saved: the log-sum-exps of the rows and (or None) columns
        lse_rows = saved[0]
        assert lse_rows is not None
        grad_a, grad_c = tiled_backward(a_beta, a, cc, exclude, f_rows, f_cols, neg_w, lse_rows, saved[1], tile,
                                        need_c, sd)
    if stretch is not None:  # (last, so that no product meets an overflowed factor)
        grad_a = grad_a * stretch if grad_a is not None else None
        grad_c = grad_c * stretch if grad_c is not None else None
    grad_tau: torch.Tensor | None = None
    if need_tau:
        assert grad_a is not None  # (formed when tau needs a gradient)
        grad_tau = -(torch.linalg.vecdot(a, grad_a).sum() * beta).reshape(())
    return ((grad_a.to(A.dtype) if need_a and grad_a is not None else None),
            (grad_c.to(C.dtype) if need_c and grad_c is not None else None), grad_tau, grad_stretch)


def _plain_loss(a: torch.Tensor, c: torch.Tensor, tau: float | torch.Tensor, pos: torch.Tensor | None,
                exclude: torch.Tensor, columns: bool, variant: Variant, dtype: torch.dtype, reduction: str,
                stretch: torch.Tensor | None = None) -> torch.Tensor:
    """The reduced loss with plain torch operations over the materialised logits (any order of
    derivatives): rows, and columns as rows of the transposed problem."""
    p = c if pos is None else c[pos]
    rows = embedding_lse_plain(a, p, c, tau, variant, dtype, exclude, stretch)
    if columns:
        cols = embedding_lse_plain(c, a, a, tau, variant, dtype, exclude, stretch)
        rows = rows * 0.5 + cols * 0.5
    return reduce(rows, reduction)


def _combine(x: torch.Tensor, columns: bool, reduction: str) -> torch.Tensor:
    """The loss of the decoupled rows ``x`` ((n,), or (2, n) rows and columns), as the forward pass
    forms it."""
    if not columns:
        return safe_reduce(x, reduction)
    if reduction == "mean":
        return safe_reduce(x, "mean")
    return safe_reduce(torch.add(x[0] * 0.5, x[1], alpha=0.5), reduction)


def _scores(a: torch.Tensor, c: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    """``a c^T`` in ``dtype`` (the product in the inputs' dtype, cast up when that is lower)."""
    y = torch.mm(a, c.T)
    return y if dtype is None or y.dtype == dtype else y.to(dtype)


def _product(x: torch.Tensor, y: torch.Tensor, score_dtype: torch.dtype | None) -> torch.Tensor:
    """``x y`` in ``x``'s dtype, the product itself in ``score_dtype`` when one is given."""
    if score_dtype is None:
        return torch.mm(x, y)
    return torch.mm(x.to(score_dtype), y.to(score_dtype)).to(x.dtype)


def _as(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return x if x.dtype == dtype else x.to(dtype)
