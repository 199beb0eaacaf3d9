"""Second derivatives of the loss (create_graph=True: gradient penalties, Hessian-vector products)
are right: checked against the materialised float64 loss of plain torch operations and with
torch.autograd.gradgradcheck, on the fused path, the chunked custom functions and the streaming
form."""

import math

import mpmath
import pytest
import torch

from infonce_book.losses import info_nce, info_nce_from_similarities, info_nce_in_batch, info_nce_streaming, nt_xent

F64 = torch.float64


def unit(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=F64)
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)


def closed_form_penalised_gradient(s_pos, s_neg, tau):
    """d/ds+ [L + (dL/ds+)^2] for L = -beta s+ + log(e^{beta s+} + sum_j e^{beta s_j}), by mpmath
    (30 digits, numerical differentiation of the closed form)."""
    mpmath.mp.dps = 30
    beta = 1 / mpmath.mpf(tau)
    neg = [mpmath.mpf(v) for v in s_neg]

    def loss(s):
        return -beta * s + mpmath.log(mpmath.exp(beta * s) + mpmath.fsum(mpmath.exp(beta * v) for v in neg))

    return float(mpmath.diff(lambda s: loss(s) + mpmath.diff(loss, s) ** 2, mpmath.mpf(s_pos)))


def test_closed_form_reference_of_the_issue_example():
    # The issue's value, -3.76060, and the closed form L' = -beta (1 - p+), L'' = beta^2 p+ (1 - p+):
    # d/ds+ (L + L'^2) = L' + 2 L' L''.
    want = closed_form_penalised_gradient("0.3", ["0.2", "-0.1", "0.4"], "0.5")
    beta = 2.0
    p_pos = 1 / (1 + sum(math.exp(beta * (v - 0.3)) for v in (0.2, -0.1, 0.4)))
    d1, d2 = -beta * (1 - p_pos), beta**2 * p_pos * (1 - p_pos)
    assert want == pytest.approx(d1 + 2 * d1 * d2, rel=1e-12)
    assert round(want, 5) == -3.76060


@pytest.mark.parametrize("form", ["fused", "chunked", "streaming"])
def test_gradient_penalty_of_the_issue_example_is_right(form):
    # Issue: s_pos = [0.3], s_neg = [[0.2, -0.1, 0.4]], tau = 0.5, g = grad(L, s_pos,
    # create_graph=True), (L + g^2).backward() gave -1.42685 (the custom backward was not
    # differentiable); right: -3.76060 (closed form above).
    s_pos = torch.tensor([0.3], dtype=F64, requires_grad=True)
    s_neg = torch.tensor([[0.2, -0.1, 0.4]], dtype=F64)
    if form == "streaming":
        loss = info_nce_streaming(s_pos, [s_neg[:, :1], s_neg[:, 1:]], 0.5)
    else:
        loss = info_nce_from_similarities(s_pos, s_neg, 0.5, chunk_size=None if form == "fused" else 1)
    (g,) = torch.autograd.grad(loss, s_pos, create_graph=True)
    (loss + g.pow(2).sum()).backward()
    want = closed_form_penalised_gradient("0.3", ["0.2", "-0.1", "0.4"], "0.5")
    assert s_pos.grad.item() == pytest.approx(want, rel=1e-12)


def materialised(a, p, n, tau, variant):
    """Plain autograd over the whole logit matrix (shared or per-anchor negatives)."""
    s_pos = (a * p).sum(-1)
    s_neg = a @ n.T if n.dim() == 2 else torch.einsum("bd,bkd->bk", a, n)
    z = (s_neg - s_pos[:, None]) / tau
    if variant == "standard":
        z = torch.cat([torch.zeros_like(s_pos)[:, None], z], dim=1)
    return torch.logsumexp(z, dim=1)


def penalised_gradients(fn, inputs):
    """Gradients of ``sum_i w_i l_i + |grad (sum_i w_i l_i)|^2`` (unequal row weights ``w``):
    a function of the first and second derivatives of the loss."""
    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    loss = fn(*leaves)
    total = (loss * torch.arange(1.0, loss.numel() + 1.0, dtype=F64)).sum()
    grads = torch.autograd.grad(total, leaves, create_graph=True)
    penalty = sum(g.pow(2).sum() for g in grads)
    return torch.autograd.grad(total + penalty, leaves)


@pytest.mark.parametrize("chunk_size", [None, 2])
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_embedding_second_derivatives_equal_the_materialised_float64_loss(chunk_size, shared, variant):
    a, p = unit(3, 4, seed=1), unit(3, 4, seed=2)
    n = unit(5, 4, seed=3) if shared else unit(3, 5, 4, seed=3)
    tau = torch.tensor(0.4, dtype=F64)
    got = penalised_gradients(lambda *x: info_nce(*x, variant=variant, reduction="none", chunk_size=chunk_size),
                              (a, p, n, tau))
    want = penalised_gradients(lambda *x: materialised(*x, variant), (a, p, n, tau))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("chunk_size", [None, 2])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_similarity_second_derivatives_equal_the_materialised_float64_loss(chunk_size, variant):
    g = torch.Generator().manual_seed(4)
    s_pos, s_neg = torch.rand(3, generator=g, dtype=F64) * 2 - 1, torch.rand(3, 5, generator=g, dtype=F64) * 2 - 1
    tau = torch.tensor(0.3, dtype=F64)

    def reference(sp, sn, t):
        z = (sn - sp[:, None]) / t
        if variant == "standard":
            z = torch.cat([torch.zeros_like(sp)[:, None], z], dim=1)
        return torch.logsumexp(z, dim=1)

    got = penalised_gradients(
        lambda *x: info_nce_from_similarities(*x, variant=variant, reduction="none", chunk_size=chunk_size),
        (s_pos, s_neg, tau))
    streamed = penalised_gradients(
        lambda sp, sn, t: info_nce_streaming(sp, torch.split(sn, 2, dim=1), t, variant=variant, reduction="none"),
        (s_pos, s_neg, tau))
    want = penalised_gradients(reference, (s_pos, s_neg, tau))
    for g_, s_, w in zip(got, streamed, want):
        torch.testing.assert_close(g_, w, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(s_, w, rtol=1e-10, atol=1e-12)


# gradgradcheck perturbs the inputs off the sphere: the unit-norm check is switched off.
GRADGRAD = [
    ("info_nce-fused-shared", lambda a, p, n, t: info_nce(a, p, n, t, reduction="none", require_unit_norm=False),
     lambda: (unit(3, 4, seed=5), unit(3, 4, seed=6), unit(5, 4, seed=7))),
    ("info_nce-chunked-paired",
     lambda a, p, n, t: info_nce(a, p, n, t, variant="decoupled", reduction="none", chunk_size=2,
                                 require_unit_norm=False),
     lambda: (unit(3, 4, seed=8), unit(3, 4, seed=9), unit(3, 5, 4, seed=10))),
    ("info_nce_from_similarities-chunked",
     lambda sp, sn, t: info_nce_from_similarities(sp, sn, t, reduction="none", chunk_size=2),
     lambda: (torch.linspace(-0.5, 0.5, 3, dtype=F64), unit(3, 5, seed=11))),
    ("info_nce_streaming",
     lambda sp, sn, t: info_nce_streaming(sp, torch.split(sn, 2, dim=1), t, variant="decoupled", reduction="none"),
     lambda: (torch.linspace(-0.5, 0.5, 3, dtype=F64), unit(3, 5, seed=12))),
    ("info_nce_in_batch-symmetric-chunked",
     lambda z1, z2, t: info_nce_in_batch(z1, z2, t, symmetric=True, reduction="none", chunk_size=2,
                                         require_unit_norm=False),
     lambda: (unit(4, 3, seed=13), unit(4, 3, seed=14))),
    ("nt_xent-fused",
     lambda z1, z2, t: nt_xent(z1, z2, t, reduction="none", require_unit_norm=False),
     lambda: (unit(3, 3, seed=15), unit(3, 3, seed=16))),
    ("nt_xent-chunked-decoupled",
     lambda z1, z2, t: nt_xent(z1, z2, t, variant="decoupled", reduction="none", chunk_size=4,
                               require_unit_norm=False),
     lambda: (unit(3, 3, seed=17), unit(3, 3, seed=18))),
]


@pytest.mark.parametrize("name, fn, make", GRADGRAD, ids=[c[0] for c in GRADGRAD])
def test_second_derivatives_pass_gradgradcheck_in_float64(name, fn, make):
    inputs = tuple(x.requires_grad_() for x in make()) + (torch.tensor(0.6, dtype=F64, requires_grad=True),)
    assert torch.autograd.gradgradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_in_batch_second_derivatives_equal_the_materialised_float64_loss():
    # CLIP's symmetric loss as plain cross-entropy in both directions, the reference.
    z1, z2, tau = unit(4, 3, seed=20), unit(4, 3, seed=21), torch.tensor(0.5, dtype=F64)

    def reference(a, b, t):
        s = a @ b.T / t
        labels = torch.arange(4)
        ce = torch.nn.functional.cross_entropy
        return (ce(s, labels, reduction="none") + ce(s.T, labels, reduction="none")) / 2

    for chunk_size in (None, 2):
        got = penalised_gradients(
            lambda a, b, t: info_nce_in_batch(a, b, t, symmetric=True, reduction="none", chunk_size=chunk_size),
            (z1, z2, tau))
        want = penalised_gradients(reference, (z1, z2, tau))
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-12)


def test_nt_xent_second_derivatives_equal_the_materialised_float64_loss():
    # NT-Xent as plain autograd: the 2B x 2B logits with the diagonal set to -inf, cross-entropy
    # against each view's pair (the anchors are also the candidates: two slots, one tensor).
    z1, z2, tau = unit(3, 4, seed=22), unit(3, 4, seed=23), torch.tensor(0.7, dtype=F64)

    def reference(a, b, t):
        views = torch.cat([a, b])
        s = (views @ views.T / t).masked_fill(torch.eye(6, dtype=torch.bool), float("-inf"))
        return torch.nn.functional.cross_entropy(s, torch.tensor([3, 4, 5, 0, 1, 2]), reduction="none")

    for chunk_size in (None, 2):
        got = penalised_gradients(lambda a, b, t: nt_xent(a, b, t, reduction="none", chunk_size=chunk_size),
                                  (z1, z2, tau))
        want = penalised_gradients(reference, (z1, z2, tau))
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-12)
