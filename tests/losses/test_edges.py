"""Edges a training loop meets: a row without negatives (``B = 1`` in the in-batch forms, ``k = 0``
with explicit negatives) gives the exact value 0 with zero gradient in the standard variant and a
clear error in the decoupled one; ``meta`` tensors give the right shapes and dtypes; and
``torch.compile`` (``backend="aot_eager"``, which needs no compiler) gives the eager values and
gradients, with the graph breaks the docstring names."""

import pytest
import torch
from torch.nn import functional as F

from infonce_book.losses import (
    InBatchInfoNCELoss,
    info_nce,
    info_nce_from_similarities,
    info_nce_in_batch,
    info_nce_streaming,
    nt_xent,
)

F64 = torch.float64


def unit(*shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(*shape, generator=g, dtype=F64), dim=-1).to(dtype)


def _zero_with_zero_grads(fn, inputs, rows):
    xs = [x.clone().requires_grad_() for x in inputs]
    for reduction in ("mean", "sum", "none"):
        out = fn(*xs, reduction=reduction)
        assert out.shape == (() if reduction != "none" else (rows,))
        assert torch.equal(out, torch.zeros_like(out))
        grads = torch.autograd.grad(out.sum(), xs)
        for g, x in zip(grads, xs):
            assert g.shape == x.shape and torch.equal(g, torch.zeros_like(x))


@pytest.mark.parametrize("check_values", [True, False])
def test_one_pair_in_batch_is_exactly_zero_with_zero_gradient(check_values):
    z1, z2, tau = unit(1, 5, seed=0), unit(1, 5, seed=1), torch.tensor(0.1)
    kw = dict(check_values=check_values)
    _zero_with_zero_grads(lambda a, b, t, **r: info_nce_in_batch(a, b, t, symmetric=True, **kw, **r), (z1, z2, tau), 1)
    _zero_with_zero_grads(lambda a, b, t, **r: info_nce_in_batch(a, b, t, chunk_size=1, **kw, **r, symmetric=False),
                          (z1, z2, tau), 1)
    _zero_with_zero_grads(lambda a, b, t, **r: nt_xent(a, b, t, **kw, **r), (z1, z2, tau), 2)
    assert InBatchInfoNCELoss(learn_temperature=True)(z1, z2).item() == 0.0
    assert info_nce_in_batch(z1.double(), z2.double(), 0.1, symmetric=False).dtype == F64


def test_no_negative_with_explicit_negatives_is_exactly_zero_with_zero_gradient():
    a, p, tau = unit(3, 4, seed=2), unit(3, 4, seed=3), torch.tensor(0.2)
    _zero_with_zero_grads(lambda x, y, n, t, **r: info_nce(x, y, n, t, **r), (a, p, unit(0, 4, seed=4), tau), 3)
    _zero_with_zero_grads(lambda x, y, n, t, **r: info_nce(x, y, n, t, **r), (a, p, torch.zeros(3, 0, 4), tau), 3)
    s_pos = torch.tensor([0.3, -0.2, 0.9])
    _zero_with_zero_grads(lambda s, n, t, **r: info_nce_from_similarities(s, n, t, **r),
                          (s_pos, torch.zeros(3, 0), tau), 3)
    _zero_with_zero_grads(lambda s, t, **r: info_nce_streaming(s, [torch.zeros(3, 0)], t, **r), (s_pos, tau), 3)


def test_no_negative_still_checks_the_inputs_and_the_decoupled_variant_raises():
    a = unit(3, 4, seed=5)
    with pytest.raises(ValueError, match="unit-norm"):
        info_nce(2 * a, a, a[:0], 0.5)
    with pytest.raises(ValueError, match="unit-norm"):
        info_nce_in_batch(2 * a[:1], a[:1], 0.5, symmetric=False)
    with pytest.raises(ValueError, match=r"tau must be in \(0, inf\)"):
        nt_xent(a[:1], a[:1], -1.0)
    with pytest.raises(ValueError, match=r"k \(number of negatives\) must be >= 1"):
        info_nce(a, a, a[:0], 0.5, variant="decoupled")
    with pytest.raises(ValueError, match="decoupled.*at least 2 pairs"):
        info_nce_in_batch(a[:1], a[:1], 0.5, variant="decoupled", symmetric=False)
    with pytest.raises(ValueError, match="decoupled.*at least 2 pairs"):
        nt_xent(a[:1], a[:1], 0.5, variant="decoupled")
    with pytest.raises(ValueError, match="empty batch"):
        info_nce_in_batch(a[:0], a[:0], 0.5, symmetric=False)


META_CASES = [
    ("in_batch", lambda z1, z2, n, t, **kw: info_nce_in_batch(z1, z2, t, **kw, symmetric=False), 6),
    ("in_batch_symmetric", lambda z1, z2, n, t, **kw: info_nce_in_batch(z1, z2, t, symmetric=True, **kw), 6),
    ("nt_xent", lambda z1, z2, n, t, **kw: nt_xent(z1, z2, t, **kw), 12),
    ("explicit", lambda z1, z2, n, t, **kw: info_nce(z1, z2, n, t, **kw), 6),
    ("similarities", lambda z1, z2, n, t, **kw: info_nce_from_similarities(
        (z1 * z2).sum(-1), z1 @ n.T, t, **kw), 6),
]


@pytest.mark.parametrize("chunk_size", [None, 3])
@pytest.mark.parametrize("name, fn, rows", META_CASES, ids=[c[0] for c in META_CASES])
def test_meta_tensors_give_shapes_and_dtypes_without_value_checks(name, fn, rows, chunk_size):
    for dtype, out_dtype in ((torch.float32, torch.float32), (torch.bfloat16, torch.float32), (F64, F64)):
        z1, z2 = (torch.empty(6, 8, dtype=dtype, device="meta", requires_grad=True) for _ in range(2))
        n = torch.empty(10, 8, dtype=dtype, device="meta")
        for tau in (0.1, torch.empty((), device="meta", requires_grad=True)):
            out = fn(z1, z2, n, tau, reduction="none", chunk_size=chunk_size)
            assert out.device.type == "meta" and out.shape == (rows,) and out.dtype == out_dtype
            (g1,) = torch.autograd.grad(out.sum(), [z1])
            assert g1.device.type == "meta" and g1.shape == z1.shape and g1.dtype == dtype
            assert fn(z1, z2, n, tau).shape == ()
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the "unknown device type for autocast"
        assert info_nce_in_batch(z1, z2, 0.1, symmetric=False).device.type == "meta"


@pytest.mark.slow
@pytest.mark.parametrize("check_values, chunk_size", [(False, None), (False, 3), (True, 2)])
def test_torch_compile_gives_the_eager_values_and_gradients(check_values, chunk_size):
    torch._dynamo.reset()
    z1, z2, n = unit(8, 6, seed=6), unit(8, 6, seed=7), unit(11, 6, seed=8)

    def step(a, b, neg, t):
        kw = dict(chunk_size=chunk_size, check_values=check_values)
        if check_values:  # every host read breaks the graph: one form only (compiling the pieces is slow)
            return info_nce_in_batch(a, b, t, symmetric=True, **kw) + info_nce(a, b, neg, t, **kw)
        return (info_nce_in_batch(a, b, t, symmetric=True, **kw) + nt_xent(a, b, t, **kw)
                + info_nce(a, b, neg, t, **kw))

    compiled = torch.compile(step, backend="aot_eager")
    for tau in (0.2,) if check_values else (0.2, torch.tensor(0.2)):
        results = []
        for fn in (step, compiled):
            xs = [x.clone().requires_grad_() for x in (z1, z2, n)]
            t = tau.clone().requires_grad_() if isinstance(tau, torch.Tensor) else tau
            loss = fn(*xs, t)
            grads = torch.autograd.grad(loss, xs + ([t] if isinstance(t, torch.Tensor) else []))
            results.append((loss, grads))
        (want, want_grads), (got, got_grads) = results
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
        for g, w in zip(got_grads, want_grads):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


def _graph_breaks(fn, *args):
    torch._dynamo.reset()
    return torch._dynamo.explain(fn)(*args).graph_break_count


@pytest.mark.slow
def test_graph_breaks_are_where_the_docstring_says():
    z1, z2, n = (unit(8, 6, seed=9).requires_grad_(), unit(8, 6, seed=10).requires_grad_(),
                 unit(20, 6, seed=11))
    tau = torch.tensor(0.2, requires_grad=True)
    info_nce_in_batch(z1, z2, 0.2, symmetric=False).backward()  # the first call per dtype and device (docstring)
    off = dict(check_values=False)
    for fn in (lambda a, b: info_nce_in_batch(a, b, 0.2, **off, symmetric=False),
               lambda a, b: info_nce_in_batch(a, b, tau, symmetric=True, **off),
               lambda a, b: info_nce_in_batch(a, b, tau, symmetric=True, chunk_size=3, **off),
               lambda a, b: nt_xent(a, b, 0.3, **off),
               lambda a, b: nt_xent(a, b, tau, chunk_size=5, **off),
               lambda a, b: info_nce(a, b, n, tau, **off),
               lambda a, b: info_nce(a, b, n, 0.2, chunk_size=4, **off),
               lambda a, b: info_nce_from_similarities((a * b).sum(-1), a @ n.T, tau, **off)):
        assert _graph_breaks(fn, z1, z2) == 0
    # the default (check_values=None) reads nothing on the host while compiling: no break
    assert _graph_breaks(lambda a, b: info_nce_in_batch(a, b, 0.2, symmetric=True), z1, z2) == 0
    # with value checks forced on, every read on the host is a break
    assert _graph_breaks(lambda a, b: info_nce_in_batch(a, b, 0.2, symmetric=True, check_values=True), z1, z2) >= 1
    assert _graph_breaks(lambda a, b: info_nce_in_batch(a, b, tau, symmetric=False, check_values=True), z1, z2) >= 1
