"""In-batch forms (CLIP's loss, SimCLR's NT-Xent) against plain float64 references: log-sum-exp
over the masked (B x B or 2B x 2B) logit matrix, and cross-entropy as CLIP and SimCLR write it."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from infonce_book.losses import info_nce, info_nce_in_batch, nt_xent

F64 = torch.float64


def unit(*shape, seed, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=F64)
    return (x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)).to(dtype)


def clip_reference(z1, z2, tau, variant="standard", symmetric=False):
    """Per-pair loss from the B x B logits, log-sum-exp over each row with the diagonal (the
    positive) masked with -inf for the decoupled variant; columns likewise."""
    s = z1 @ z2.T / tau
    B = s.shape[0]
    eye = torch.eye(B, dtype=torch.bool)

    def rows(m):
        denominator = m.masked_fill(eye, float("-inf")) if variant == "decoupled" else m
        return torch.logsumexp(denominator, dim=1) - m.diagonal()

    out = rows(s)
    return (out + rows(s.T)) / 2 if symmetric else out


def nt_xent_reference(z1, z2, tau, variant="standard"):
    """Per-view loss from the 2B x 2B logits: each row's own entry masked with -inf (and its
    positive, the pair, too for the decoupled variant)."""
    views = torch.cat([z1, z2])
    s = views @ views.T / tau
    n, B = s.shape[0], z1.shape[0]
    positive = torch.cat([torch.arange(B, n), torch.arange(B)])
    mask = torch.eye(n, dtype=torch.bool)
    if variant == "decoupled":
        mask[torch.arange(n), positive] = True
    return torch.logsumexp(s.masked_fill(mask, float("-inf")), dim=1) - s[torch.arange(n), positive]


def leaves(*xs):
    return [x.detach().clone().requires_grad_() for x in xs]


def loss_and_grads(fn, inputs):
    xs = leaves(*inputs)
    loss = fn(*xs)
    (loss * torch.arange(1.0, loss.numel() + 1.0, dtype=loss.dtype)).sum().backward()  # unequal weights
    return loss.detach(), [x.grad for x in xs]


@pytest.mark.parametrize("chunk_size", [None, 1, 3, 100])
@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_in_batch_loss_and_gradients_equal_the_masked_float64_reference(variant, symmetric, chunk_size):
    z1, z2, tau = unit(6, 5, seed=1), unit(6, 5, seed=2), torch.tensor(0.3, dtype=F64)
    got, got_grads = loss_and_grads(lambda a, b, t: info_nce_in_batch(
        a, b, t, symmetric=symmetric, variant=variant, reduction="none", chunk_size=chunk_size), (z1, z2, tau))
    want, want_grads = loss_and_grads(lambda a, b, t: clip_reference(a, b, t, variant, symmetric), (z1, z2, tau))
    assert got.shape == (6,)
    torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)
    for g, w in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("chunk_size", [None, 1, 5, 100])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_nt_xent_loss_and_gradients_equal_the_masked_float64_reference(variant, chunk_size):
    z1, z2, tau = unit(5, 4, seed=3), unit(5, 4, seed=4), torch.tensor(0.2, dtype=F64)
    got, got_grads = loss_and_grads(
        lambda a, b, t: nt_xent(a, b, t, variant=variant, reduction="none", chunk_size=chunk_size), (z1, z2, tau))
    want, want_grads = loss_and_grads(lambda a, b, t: nt_xent_reference(a, b, t, variant), (z1, z2, tau))
    assert got.shape == (10,)
    torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)
    for g, w in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)


def test_clip_loss_equals_clip_pseudocode():
    # Radford et al. (2021), Figure 3: logits = I_e T_e^T * exp(t); labels = arange(n);
    # loss = (CE(logits, labels, axis=0) + CE(logits, labels, axis=1)) / 2.
    z1, z2 = unit(8, 6, seed=5), unit(8, 6, seed=6)
    logit_scale = torch.tensor(math.log(1 / 0.07), dtype=F64)
    logits = z1 @ z2.T * logit_scale.exp()
    labels = torch.arange(8)
    ce = torch.nn.functional.cross_entropy
    want = (ce(logits, labels) + ce(logits.T, labels)) / 2
    got = info_nce_in_batch(z1, z2, 1 / logit_scale.exp(), symmetric=True)
    torch.testing.assert_close(got, want, rtol=1e-13, atol=0)


def test_nt_xent_equals_simclr_formula():
    # Chen et al. (2020), Algorithm 1: L = 1/(2N) sum_k [l(2k-1, 2k) + l(2k, 2k-1)] with
    # l(i, j) = -log( exp(s_ij / tau) / sum_{k != i} exp(s_ik / tau) ), views interleaved there.
    z1, z2, tau = unit(4, 3, seed=7), unit(4, 3, seed=8), 0.5
    views = torch.stack([z1, z2], dim=1).reshape(8, 3)  # SimCLR's order: 2k-1, 2k the pair k
    s = views @ views.T / tau

    def ell(i, j):
        others = [k for k in range(8) if k != i]
        return -(s[i, j] - torch.logsumexp(s[i, others], dim=0))

    want = sum(ell(2 * k, 2 * k + 1) + ell(2 * k + 1, 2 * k) for k in range(4)) / 8
    torch.testing.assert_close(nt_xent(z1, z2, tau), want, rtol=1e-13, atol=0)


@pytest.mark.parametrize("B", [2, 3, 7])
def test_identical_features_give_chance_level(B):
    # All similarities 1: CLIP's row has B equal logits: log B (standard), log(B - 1) (decoupled);
    # NT-Xent's view has 2B - 1 equal logits: log(2B - 1) and log(2B - 2).
    z = torch.nn.functional.normalize(torch.ones(B, 5, dtype=F64), dim=-1)
    for chunk_size in (None, 2):
        kw = dict(reduction="none", chunk_size=chunk_size)
        cases = [(info_nce_in_batch(z, z, 0.1, **kw, symmetric=False), math.log(B)),
                 (info_nce_in_batch(z, z, 0.1, variant="decoupled", symmetric=True, **kw), math.log(B - 1)),
                 (nt_xent(z, z, 0.1, **kw), math.log(2 * B - 1)),
                 (nt_xent(z, z, 0.1, variant="decoupled", **kw), math.log(2 * B - 2))]
        for got, want in cases:
            torch.testing.assert_close(got, torch.full_like(got, want), rtol=1e-14, atol=1e-14)


def equal_similarity_views(n, c, seed):
    """n unit vectors with every pairwise inner product c (>= 0): sqrt(c) e_0 + sqrt(1 - c) e_i
    in a random orthonormal frame."""
    q, _ = torch.linalg.qr(torch.randn(n + 1, n + 1, generator=torch.Generator().manual_seed(seed), dtype=F64))
    return math.sqrt(c) * q[:, 0] + math.sqrt(1 - c) * q[:, 1:].T


@settings(max_examples=20, deadline=None)
@given(B=st.integers(2, 6), c=st.floats(0.0, 0.99), tau=st.floats(0.05, 5.0), seed=st.integers(0, 1000))
def test_equal_similarities_of_distinct_features_give_chance_level_for_any_tau(B, c, tau, seed):
    v = equal_similarity_views(2 * B, c, seed)  # 2B distinct views, all pairwise similarities c
    z1, z2 = v[:B], v[B:]
    got = nt_xent(z1, z2, tau, reduction="none")
    torch.testing.assert_close(got, torch.full_like(got, math.log(2 * B - 1)), rtol=1e-12, atol=1e-12)
    got = info_nce_in_batch(z1, z2, tau, symmetric=True, variant="decoupled", reduction="none")
    torch.testing.assert_close(got, torch.full_like(got, math.log(B - 1)), rtol=1e-12, atol=1e-12)


def test_in_batch_form_is_info_nce_with_the_other_columns_as_negatives():
    # Row i of info_nce_in_batch is info_nce with anchor z1_i, positive z2_i and negatives
    # z2_j, j != i (an explicit, independent computation per row).
    z1, z2 = unit(5, 4, seed=9), unit(5, 4, seed=10)
    got = info_nce_in_batch(z1, z2, 0.4, reduction="none", symmetric=False)
    for i in range(5):
        others = torch.cat([z2[:i], z2[i + 1:]])
        want = info_nce(z1[i:i + 1], z2[i:i + 1], others, 0.4, reduction="none")
        torch.testing.assert_close(got[i:i + 1], want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("tau", [1e-3, 0.07, 1.0])
def test_float32_in_batch_is_within_float32_accuracy_of_float64(tau):
    # Float32 accumulation: about eps32 (1 + 2/tau) relative, normwise (the explicit form's rule).
    z1, z2 = unit(16, 8, seed=11, dtype=torch.float32), unit(16, 8, seed=12, dtype=torch.float32)
    tol = 4 * torch.finfo(torch.float32).eps * (1 + 2 / tau)
    for chunk_size in (None, 5):
        for fn, ref in ((lambda a, b: info_nce_in_batch(a, b, tau, symmetric=True, reduction="none",
                                                       chunk_size=chunk_size),
                         lambda a, b: clip_reference(a, b, tau, symmetric=True)),
                        (lambda a, b: nt_xent(a, b, tau, reduction="none", chunk_size=chunk_size),
                         lambda a, b: nt_xent_reference(a, b, tau))):
            got, want = fn(z1, z2), ref(z1.double(), z2.double())
            assert got.dtype == torch.float32
            assert float((got.double() - want).abs().max() / want.abs().max()) <= tol


def test_reductions_of_the_in_batch_forms():
    z1, z2 = unit(4, 3, seed=13), unit(4, 3, seed=14)
    for fn in (lambda **kw: info_nce_in_batch(z1, z2, 0.5, symmetric=True, **kw),
               lambda **kw: nt_xent(z1, z2, 0.5, **kw)):
        none = fn(reduction="none")
        torch.testing.assert_close(fn(), none.mean(), rtol=1e-15, atol=0)
        torch.testing.assert_close(fn(reduction="sum"), none.sum(), rtol=1e-15, atol=0)


def test_one_pair_has_no_negative_decoupled_is_a_clear_error():
    z = unit(1, 3, seed=15)
    with pytest.raises(ValueError, match=r"at least 2 pairs.*got B = 1"):
        info_nce_in_batch(z, z, 0.5, variant="decoupled", symmetric=False)
    with pytest.raises(ValueError, match=r"at least 2 pairs.*got B = 1"):
        nt_xent(z, z, 0.5, variant="decoupled")


def test_bad_in_batch_inputs_raise_clear_errors():
    z1, z2 = unit(3, 4, seed=16), unit(3, 4, seed=17)
    for fn in (info_nce_in_batch, nt_xent):
        with pytest.raises(ValueError, match=r"z2 must have the shape of z1.*z1 \(3, 4\), z2 \(3, 5\)"):
            fn(z1, unit(3, 5, seed=18), 0.5)
        with pytest.raises(ValueError, match=r"z1 must have shape \(B, d\)"):
            fn(z1[0], z2[0], 0.5)
        with pytest.raises(ValueError, match="empty batch"):
            fn(z1[:0], z2[:0], 0.5)
        with pytest.raises(ValueError, match=r"z2 must have unit-norm rows"):
            fn(z1, 2 * z2, 0.5)
        with pytest.raises(ValueError, match=r"tau must be in \(0, inf\)"):
            fn(z1, z2, 0.0)
        with pytest.raises(ValueError, match="variant"):
            fn(z1, z2, 0.5, variant="symmetric")
        with pytest.raises(TypeError, match="gather must be True or False"):
            fn(z1, z2, 0.5, gather="yes")
        with pytest.raises(TypeError, match="floating-point"):
            fn(z1.long(), z2, 0.5)
        with pytest.raises(RuntimeError, match="init_process_group"):
            fn(z1, z2, 0.5, gather=True)
    with pytest.raises(TypeError, match="symmetric must be True or False"):
        info_nce_in_batch(z1, z2, 0.5, symmetric=1)
    bad = z1.clone()
    bad[1, 2] = float("nan")
    with pytest.raises(ValueError, match="z1 contains NaN or infinite entries"):
        info_nce_in_batch(bad, z2, 0.5, symmetric=False)


def test_learnable_temperature_gets_the_reference_gradient():
    z1, z2 = unit(5, 3, seed=19), unit(5, 3, seed=20)
    for fn, ref in ((lambda t: info_nce_in_batch(z1, z2, t, symmetric=True),
                     lambda t: clip_reference(z1, z2, t, symmetric=True).mean()),
                    (lambda t: nt_xent(z1, z2, t, chunk_size=3), lambda t: nt_xent_reference(z1, z2, t).mean())):
        t1, t2 = (torch.tensor(0.25, dtype=F64, requires_grad=True) for _ in range(2))
        fn(t1).backward()
        ref(t2).backward()
        assert t1.grad.item() == pytest.approx(t2.grad.item(), rel=1e-12)
        assert np.isfinite(t1.grad.item()) and t1.grad.item() != 0.0
