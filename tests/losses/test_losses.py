"""InfoNCE loss: known values, float64 references, gradients, low precision, bad input."""

import math

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax

from infonce_book.losses import info_nce, info_nce_from_similarities, info_nce_streaming


def reference_loss(s_pos, s_neg, tau, variant):
    """Reference in 40-digit arithmetic (mpmath) from the given float64 similarities:
    standard ``log(1 + sum_j e^{z_j})``, decoupled ``log sum_j e^{z_j}``, ``z_j = (s_j - s+)/tau``
    formed exactly, so tiny losses (positive far ahead) keep every digit."""
    mpmath.mp.dps = 40
    s_pos, s_neg = np.asarray(s_pos, np.float64), np.asarray(s_neg, np.float64)
    out, zmax = [], []
    for sp_, sn in zip(s_pos, s_neg):
        z = [(mpmath.mpf(float(v)) - mpmath.mpf(float(sp_))) / mpmath.mpf(tau) for v in sn]
        total = mpmath.fsum(mpmath.exp(zj) for zj in z)
        out.append(float(mpmath.log1p(total) if variant == "standard" else mpmath.log(total)))
        zmax.append(float(max(abs(zj) for zj in z)))
    return np.array(out), np.array(zmax)


def float32_tolerance(want, zmax, variant):
    """Accuracy of the float32 path: the logits are rounded once to float32, so the error grows
    with their size; the decoupled loss can cross zero, so its error is absolute near 0; and a
    loss below float32's normal range (2^-126) may underflow (to a subnormal or to 0)."""
    scale = np.abs(want) if variant == "standard" else np.maximum(np.abs(want), 1.0)
    return 2.0**-22 * (1.0 + zmax) * scale + 2.0**-126


def reference_grad(s_pos, s_neg, tau, variant):
    """d loss / d s: beta * softmax weights for negatives; -beta (1 - p+) for the positive."""
    s_pos, s_neg = np.asarray(s_pos, np.float64), np.asarray(s_neg, np.float64)
    if variant == "standard":
        p = softmax(np.concatenate([s_pos[:, None], s_neg], axis=1) / tau, axis=1)
        return -(1 - p[:, 0]) / tau, p[:, 1:] / tau
    p = softmax(s_neg / tau, axis=1)
    return -np.ones_like(s_pos) / tau, p / tau


taus = st.floats(min_value=math.log(1e-4), max_value=math.log(1e2)).map(math.exp)
variants = st.sampled_from(["standard", "decoupled"])


def sims(B, k, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(B, generator=g, dtype=torch.float64) * 2 - 1, torch.rand(B, k, generator=g, dtype=torch.float64) * 2 - 1


@settings(max_examples=60, deadline=None)
@given(B=st.integers(1, 6), k=st.integers(1, 40), tau=taus, variant=variants, seed=st.integers(0, 10**6))
def test_loss_matches_float64_reference_for_any_tau(B, k, tau, variant, seed):
    s_pos, s_neg = sims(B, k, seed)
    s_pos32, s_neg32 = s_pos.float(), s_neg.float()
    got = info_nce_from_similarities(s_pos32, s_neg32, tau, variant=variant, reduction="none")
    want, zmax = reference_loss(s_pos32.double().numpy(), s_neg32.double().numpy(), tau, variant)
    assert got.dtype == torch.float32
    assert np.all(np.abs(got.double().numpy() - want) <= float32_tolerance(want, zmax, variant))
    # float64 inputs: the same computation in float64 is exact to about 1e-15 relative.
    got64 = info_nce_from_similarities(s_pos, s_neg, tau, variant=variant, reduction="none").numpy()
    want64, zmax64 = reference_loss(s_pos.numpy(), s_neg.numpy(), tau, variant)
    assert np.all(np.abs(got64 - want64) <= 2.0**-50 * (1.0 + zmax64) * np.maximum(np.abs(want64), 1e-300 if variant == "standard" else 1.0))


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 5), k=st.integers(1, 30), tau=taus, variant=variants, seed=st.integers(0, 10**6))
def test_gradient_matches_float64_reference_for_any_tau(B, k, tau, variant, seed):
    s_pos, s_neg = sims(B, k, seed)
    sp32 = s_pos.float().requires_grad_()
    sn32 = s_neg.float().requires_grad_()
    info_nce_from_similarities(sp32, sn32, tau, variant=variant, reduction="sum").backward()
    sp64, sn64 = sp32.detach().double().numpy(), sn32.detach().double().numpy()
    gp, gn = reference_grad(sp64, sn64, tau, variant)
    # Softmax weights inherit the float32 rounding of the logits z: relative error about
    # eps32 * max|z| (so 1e-4 at tau = 1e-4 for O(1) similarity gaps); absolute floor eps32 / tau.
    zmax = np.abs(sn64 - sp64[:, None]).max() / tau
    rtol, atol = 2.0**-22 * (2.0 + 2.0 * zmax), 2.0**-23 / tau
    np.testing.assert_allclose(sp32.grad.double().numpy(), gp, rtol=rtol, atol=atol)
    np.testing.assert_allclose(sn32.grad.double().numpy(), gn, rtol=rtol, atol=atol)


@settings(max_examples=30, deadline=None)
@given(B=st.integers(1, 5), k=st.integers(1, 100), s=st.floats(-1, 1), tau=taus)
def test_identical_similarities_give_chance_level(B, k, s, tau):
    s_pos = torch.full((B,), s, dtype=torch.float64)
    s_neg = torch.full((B, k), s, dtype=torch.float64)
    std = info_nce_from_similarities(s_pos, s_neg, tau, reduction="none")
    dec = info_nce_from_similarities(s_pos, s_neg, tau, variant="decoupled", reduction="none")
    torch.testing.assert_close(std, torch.full_like(std, math.log(k + 1)), rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(dec, torch.full_like(dec, math.log(k)), rtol=1e-14, atol=1e-14)


@settings(max_examples=30, deadline=None)
@given(k=st.integers(1, 300), chunk=st.integers(1, 64), tau=taus, variant=variants, seed=st.integers(0, 10**6))
def test_chunked_loss_equals_materialised_loss(k, chunk, tau, variant, seed):
    s_pos, s_neg = sims(3, k, seed)
    full = info_nce_from_similarities(s_pos, s_neg, tau, variant=variant, reduction="none")
    chunked = info_nce_from_similarities(s_pos, s_neg, tau, variant=variant, reduction="none", chunk_size=chunk)
    streamed = info_nce_streaming(s_pos, torch.split(s_neg, chunk, dim=1), tau, variant=variant, reduction="none")
    torch.testing.assert_close(chunked, full, rtol=1e-12, atol=1e-300)
    torch.testing.assert_close(streamed, full, rtol=1e-12, atol=1e-300)


def unit(*shape, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=dtype)
    return x / x.norm(dim=-1, keepdim=True)


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_embedding_path_equals_similarity_path(shared, variant):
    a, p = unit(4, 8, seed=1), unit(4, 8, seed=2)
    neg = unit(5, 8, seed=3) if shared else unit(4, 5, 8, seed=3)
    got = info_nce(a, p, neg, 0.3, variant=variant, reduction="none")
    s_neg = a @ neg.T if shared else torch.einsum("bd,bkd->bk", a, neg)
    want, _ = reference_loss((a * p).sum(-1).numpy(), s_neg.numpy(), 0.3, variant)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-14)
    chunked = info_nce(a, p, neg, 0.3, variant=variant, reduction="none", chunk_size=2)
    torch.testing.assert_close(chunked, got, rtol=1e-12, atol=0)


def test_reductions():
    s_pos, s_neg = sims(5, 7, 0)
    none = info_nce_from_similarities(s_pos, s_neg, 0.5, reduction="none")
    assert none.shape == (5,)
    torch.testing.assert_close(info_nce_from_similarities(s_pos, s_neg, 0.5), none.mean())
    torch.testing.assert_close(info_nce_from_similarities(s_pos, s_neg, 0.5, reduction="sum"), none.sum())


@pytest.mark.parametrize("variant", ["standard", "decoupled"])
@pytest.mark.parametrize("chunk_size", [None, 2])  # the fused path, the chunked one
def test_per_row_losses_can_be_changed_in_place(variant, chunk_size):
    # reduction="none" returns a tensor of its own (not a view of one the backward pass keeps),
    # so a caller may scale it in place and still get the right gradients.
    g = torch.Generator().manual_seed(3)
    a, p = (torch.nn.functional.normalize(torch.randn(4, 6, generator=g, dtype=torch.float64), dim=-1)
            .requires_grad_() for _ in range(2))
    n = torch.nn.functional.normalize(torch.randn(5, 6, generator=g, dtype=torch.float64), dim=-1)
    weights = torch.tensor([1.0, 2.0, 0.5, 3.0], dtype=torch.float64)
    grads = []
    for in_place in (True, False):
        rows = info_nce(a, p, n, 0.5, variant=variant, reduction="none", chunk_size=chunk_size)
        rows = rows.mul_(weights) if in_place else rows * weights
        grads.append(torch.autograd.grad(rows.sum(), (a, p)))
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("tau", [1e-4, 0.01, 0.07, 1.0, 100.0])
def test_low_precision_inputs_give_finite_results_within_their_precision(dtype, tau):
    a, p, neg = unit(16, 32, seed=4), unit(16, 32, seed=5), unit(16, 64, 32, seed=6)
    lo = info_nce(a.to(dtype), p.to(dtype), neg.to(dtype), tau, reduction="none")
    assert lo.dtype == torch.float32 and torch.isfinite(lo).all()
    # Reference: the same rounded inputs in float64. The similarities are formed in float32,
    # so the error is about float32 eps times beta.
    ref = info_nce(a.to(dtype).double(), p.to(dtype).double(), neg.to(dtype).double(), tau,
                   reduction="none", require_unit_norm=False)
    tol = 1e-6 * (1 + 1 / tau) * (1 + ref.abs())
    assert ((lo.double() - ref).abs() <= tol).all()


def test_extreme_case_positive_opposite_negatives_aligned_is_exact_with_exact_gradient():
    # s+ = -1, every s_j = +1, tau = 0.01: loss = log(1 + k e^{200}) = 200 + log(k + e^{-200}).
    k, tau = 10, 0.01
    s_pos = torch.full((1,), -1.0, requires_grad=True)
    s_neg = torch.full((1, k), 1.0, requires_grad=True)
    loss = info_nce_from_similarities(s_pos, s_neg, tau, reduction="sum")
    assert loss.item() == pytest.approx(200.0 + math.log(k), rel=1e-7)
    loss.backward()
    # d/ds+ = -beta (1 - p+) with p+ = 1/(1 + k e^200) ~ 0: exactly -100 to float32 precision.
    assert s_pos.grad.item() == pytest.approx(-100.0, rel=1e-6)
    torch.testing.assert_close(s_neg.grad, torch.full((1, k), 100.0 / k), rtol=1e-6, atol=0)


def test_tiny_loss_keeps_relative_precision():
    # Positive far ahead: loss = log1p(k e^{-2/tau}) ~ k e^{-2/tau}, far below float32 eps.
    tau, k = 0.1, 5
    loss = info_nce_from_similarities(torch.ones(1), -torch.ones(1, k), tau, reduction="sum")
    assert loss.item() == pytest.approx(math.log1p(k * math.exp(-20.0)), rel=1e-6)


def test_learnable_temperature_receives_a_gradient():
    tau = torch.tensor(0.5, requires_grad=True)
    s_pos, s_neg = sims(4, 6, 1)
    info_nce_from_similarities(s_pos, s_neg, tau).backward()
    assert tau.grad is not None and torch.isfinite(tau.grad) and tau.grad != 0


@pytest.mark.parametrize("tau, match", [(0.0, "tau"), (-1.0, "tau"), (float("nan"), "tau"), (float("inf"), "tau")])
def test_bad_tau_raises_naming_tau(tau, match):
    s_pos, s_neg = sims(2, 3, 0)
    with pytest.raises(ValueError, match=match):
        info_nce_from_similarities(s_pos, s_neg, tau)


def test_bad_inputs_raise_clear_errors():
    s_pos, s_neg = sims(2, 3, 0)
    with pytest.raises(TypeError, match="tau"):
        info_nce_from_similarities(s_pos, s_neg, "0.5")
    with pytest.raises(ValueError, match=r"k \(number of negatives\)"):
        info_nce_from_similarities(s_pos, s_neg[:, :0], 0.5, variant="decoupled")  # standard: 0
    with pytest.raises(ValueError, match=r"s_pos \(2,\), s_neg \(3, 3\)"):
        info_nce_from_similarities(s_pos, torch.zeros(3, 3, dtype=torch.float64), 0.5)
    with pytest.raises(ValueError, match="NaN or infinite"):
        info_nce_from_similarities(torch.tensor([float("nan"), 0.0]), s_neg, 0.5)
    with pytest.raises(TypeError, match="floating-point"):
        info_nce_from_similarities(torch.tensor([1, 0]), s_neg, 0.5)
    with pytest.raises(ValueError, match="variant"):
        info_nce_from_similarities(s_pos, s_neg, 0.5, variant="symmetric")
    with pytest.raises(ValueError, match="reduction"):
        info_nce_from_similarities(s_pos, s_neg, 0.5, reduction="max")
    with pytest.raises(ValueError, match="empty batch"):
        info_nce_from_similarities(torch.zeros(0), torch.zeros(0, 3), 0.5)
    with pytest.raises(ValueError, match="chunk_size"):
        info_nce_from_similarities(s_pos, s_neg, 0.5, chunk_size=0)


def test_bad_embeddings_raise_clear_errors():
    a, p, neg = unit(2, 4), unit(2, 4, seed=1), unit(2, 3, 4, seed=2)
    with pytest.raises(ValueError, match="unit-norm"):
        info_nce(2 * a, p, neg, 0.5)
    with pytest.raises(ValueError, match=r"anchor \(2, 4\), positive \(2, 5\)"):
        info_nce(a, unit(2, 5), neg, 0.5)
    with pytest.raises(ValueError, match=r"\(B, k, d\) = \(2, k, 4\)"):
        info_nce(a, p, unit(3, 3, 4), 0.5)
    with pytest.raises(ValueError, match=r"\(k, d\) with d = 4"):
        info_nce(a, p, unit(3, 5), 0.5)
    with pytest.raises(ValueError, match="anchor must have shape"):
        info_nce(a[0], p, neg, 0.5)
    with pytest.raises(TypeError, match="torch.Tensor"):
        info_nce(a.numpy(), p, neg, 0.5)


# --- Streaming from embeddings: custom autograd function against the materialised computation ---

def materialised_loss(a, p, neg, tau, variant):
    """Plain autograd over the whole (B, k) logit matrix: the computation streaming replaces."""
    s_pos = (a * p).sum(-1)
    s_neg = a @ neg.T if neg.dim() == 2 else torch.einsum("bd,bkd->bk", a, neg)
    z = (s_neg - s_pos[:, None]) / tau
    if variant == "standard":
        z = torch.cat([torch.zeros_like(s_pos)[:, None], z], dim=1)
    return torch.logsumexp(z, dim=1)


def normwise_error(got, want):
    """max |got - want| / max |want|: relative error of a whole gradient (its tiny entries are
    not held to relative precision, as for any backward pass)."""
    return float((got.double() - want.double()).abs().max() / want.double().abs().max().clamp_min(1e-300))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
@pytest.mark.parametrize("k, chunk_size", [(1, None), (1, 1), (37, 1), (37, 5), (37, 16), (37, 37), (37, 100), (37, None)])
@pytest.mark.parametrize("tau", [0.1, 1.0])
def test_streaming_loss_and_gradients_equal_materialised_autograd(dtype, shared, variant, k, chunk_size, tau):
    a, p = unit(5, 8, seed=10), unit(5, 8, seed=11)
    neg = unit(k, 8, seed=12) if shared else unit(5, k, 8, seed=12)
    tau64 = torch.tensor(tau, dtype=torch.float64)
    # Reference: the same (rounded) inputs, materialised, float64 autograd.
    ref_in = [x.to(dtype).double().requires_grad_() for x in (a, p, neg)] + [tau64.clone().requires_grad_()]
    want = materialised_loss(*ref_in, variant)
    (want * torch.arange(1.0, 6.0, dtype=torch.float64)).sum().backward()  # unequal row weights
    got_in = [x.detach().to(dtype).requires_grad_() for x in ref_in[:3]] + [tau64.clone().to(dtype).requires_grad_()]
    got = info_nce(*got_in, variant=variant, reduction="none", chunk_size=chunk_size)
    assert got.dtype == dtype
    (got * torch.arange(1.0, 6.0, dtype=dtype)).sum().backward()
    # float64: exact to rounding; float32: the numerics rule, about eps32 (1 + beta) (1e-6 here).
    tol = 1e-12 if dtype == torch.float64 else 4 * 2.0**-23 * (1 + 1 / tau)
    assert normwise_error(got.detach(), want.detach()) <= tol
    for name, g, r in zip(("anchor", "positive", "negatives", "tau"), got_in, ref_in):
        assert g.grad.dtype == dtype and g.grad.shape == r.shape, name
        assert normwise_error(g.grad, r.grad) <= tol, name


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_streaming_gradients_pass_gradcheck_in_float64(shared, variant):
    a, p = unit(3, 4, seed=20), unit(3, 4, seed=21)
    neg = unit(5, 4, seed=22) if shared else unit(3, 5, 4, seed=22)
    tau = torch.tensor(0.7, dtype=torch.float64)
    inputs = tuple(x.clone().requires_grad_() for x in (a, p, neg, tau))
    # gradcheck perturbs the inputs off the sphere: the unit-norm check is switched off.
    fn = lambda a_, p_, n_, t_: info_nce(a_, p_, n_, t_, variant=variant, reduction="none",  # noqa: E731
                                         chunk_size=2, require_unit_norm=False)
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-8, rtol=1e-6)


def saved_tensor_sizes(fn, inputs):
    """Run ``fn`` and return the number of elements of every tensor autograd saved, except the
    ``inputs`` themselves (recorded with a saved-tensors hook)."""
    sizes = []
    own = {(x.data_ptr(), x.shape) for x in inputs}

    def pack(t):
        if (t.data_ptr(), t.shape) not in own:
            sizes.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sizes


@pytest.mark.parametrize("shared", [True, False])
def test_streaming_autograd_saves_no_batch_by_k_tensor(shared):
    B, k, d = 4, 3000, 8
    a, p = unit(B, d, seed=30).requires_grad_(), unit(B, d, seed=31).requires_grad_()
    neg = (unit(k, d, seed=32) if shared else unit(B, k, d, seed=32)).requires_grad_()
    tau = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    streamed = saved_tensor_sizes(lambda: info_nce(a, p, neg, tau, chunk_size=100), (a, p, neg, tau))
    # Besides the inputs only per-row tensors are saved: beta s+ and the log-sum-exp in two
    # parts, (B,) each, beta times the anchor and the weighted sum of negatives, (B, d) each.
    assert sorted(streamed) == [B, B, B, B * d, B * d]
    # The same hook sees the B x k logits of the materialised computation (the check can fail).
    materialised = saved_tensor_sizes(lambda: materialised_loss(a, p, neg, tau, "standard"), (a, p, neg, tau))
    assert max(materialised) >= B * k


def test_float64_accumulation_of_float32_embeddings_is_exact():
    a, p, neg = unit(6, 16, seed=40), unit(6, 16, seed=41), unit(200, 16, seed=42)
    a32, p32, n32 = a.float(), p.float(), neg.float()
    # Reference: the same float32-rounded embeddings, computed entirely in float64.
    want = info_nce(a32.double(), p32.double(), n32.double(), 0.01, reduction="none", require_unit_norm=False)
    got = info_nce(a32, p32, n32, 0.01, reduction="none", chunk_size=64, accumulate=torch.float64)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, want, rtol=1e-13, atol=0)
    with pytest.raises(ValueError, match=r"accumulate must be None, torch.float32 or torch.float64, got accumulate=torch.float16"):
        info_nce(a32, p32, n32, 0.5, accumulate=torch.float16)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_gradients_are_finite_and_in_the_input_dtype(dtype):
    a, p, neg = (x.to(dtype).requires_grad_() for x in (unit(4, 16, seed=50), unit(4, 16, seed=51), unit(300, 16, seed=52)))
    info_nce(a, p, neg, 0.07, chunk_size=64).backward()
    ref_in = [x.detach().double().requires_grad_() for x in (a, p, neg)]
    materialised_loss(*ref_in, 0.07, "standard").mean().backward()
    for g, r in zip((a, p, neg), ref_in):
        assert g.grad.dtype == dtype and torch.isfinite(g.grad).all()
        # Computed in float32 from the rounded inputs; the result is rounded once to the dtype.
        assert normwise_error(g.grad, r.grad) <= 2 * torch.finfo(dtype).eps


def test_non_finite_embeddings_are_reported_as_such_with_or_without_the_norm_check():
    a, p, neg = unit(2, 4), unit(2, 4, seed=1), unit(3, 4, seed=2)
    for bad in (float("nan"), float("inf"), -float("inf")):
        worse = neg.clone()
        worse[1, 2] = bad
        for require_unit_norm in (True, False):
            with pytest.raises(ValueError, match="negatives contains NaN or infinite entries"):
                info_nce(a, p, worse, 0.5, require_unit_norm=require_unit_norm)


def test_finiteness_check_is_exact_when_the_sum_overflows():
    from infonce_book.utils.validation import check_float_tensor

    big = torch.tensor([3e38, 3e38, 1.0])  # finite entries whose float32 sum overflows
    check_float_tensor(big, "x")
    with pytest.raises(ValueError, match="x contains NaN or infinite entries"):
        check_float_tensor(torch.tensor([3e38, float("inf"), -float("inf")]), "x")


@pytest.mark.parametrize("variant", ["standard", "decoupled"])
@pytest.mark.parametrize("chunk_size", [1, 4, 13, None])
def test_chunked_similarity_gradients_equal_materialised_autograd(variant, chunk_size):
    s_pos, s_neg = sims(4, 13, 7)
    tau = torch.tensor(0.3, dtype=torch.float64)
    ref_in = [x.clone().requires_grad_() for x in (s_pos, s_neg, tau)]
    z = (ref_in[1] - ref_in[0][:, None]) / ref_in[2]
    if variant == "standard":
        z = torch.cat([torch.zeros(4, 1, dtype=torch.float64), z], dim=1)
    (torch.logsumexp(z, dim=1) * torch.arange(1.0, 5.0, dtype=torch.float64)).sum().backward()
    got_in = [x.clone().requires_grad_() for x in (s_pos, s_neg, tau)]
    loss = info_nce_from_similarities(*got_in, variant=variant, reduction="none", chunk_size=chunk_size)
    (loss * torch.arange(1.0, 5.0, dtype=torch.float64)).sum().backward()
    saved = saved_tensor_sizes(lambda: info_nce_from_similarities(*got_in, variant=variant, chunk_size=chunk_size),
                               got_in)
    if chunk_size is not None and chunk_size < 13:  # chunked custom function: the two (B,) halves of lse
        assert saved == [4, 4]
    else:  # one chunk of a small problem: the fused path, plain autograd over the (B, k) logits
        assert max(saved) <= 4 * 13
    for name, g, r in zip(("s_pos", "s_neg", "tau"), got_in, ref_in):
        assert normwise_error(g.grad, r.grad) <= 1e-13, name


@pytest.mark.parametrize("trainable", ["anchor", "positive", "negatives", "tau", "anchor+negatives"])
@pytest.mark.parametrize("shared", [True, False])
def test_streaming_gradients_for_any_subset_of_trainable_inputs(trainable, shared):
    # The forward pass accumulates what the anchor's and tau's gradients need only when one of
    # them requires grad; the negatives' gradient comes from a recomputation: each subset is checked.
    a, p = unit(3, 6, seed=60), unit(3, 6, seed=61)
    neg = unit(11, 6, seed=62) if shared else unit(3, 11, 6, seed=62)
    names = ("anchor", "positive", "negatives", "tau")
    base = (a, p, neg, torch.tensor(0.4, dtype=torch.float64))
    ref_in = [x.clone().requires_grad_(nm in trainable) for nm, x in zip(names, base)]
    materialised_loss(*ref_in, "standard").sum().backward()
    got_in = [x.clone().requires_grad_(nm in trainable) for nm, x in zip(names, base)]
    info_nce(*got_in, reduction="sum", chunk_size=4).backward()
    for nm, g, r in zip(names, got_in, ref_in):
        if nm in trainable:
            assert normwise_error(g.grad, r.grad) <= 1e-13, nm
        else:
            assert g.grad is None, nm


@pytest.mark.parametrize("shared", [True, False])
def test_negatives_off_the_sphere_are_refused_in_any_chunk(shared):
    # The negatives' norms are checked chunk by chunk as they are scored: a bad row in the last
    # chunk is found as well as one in the first.
    a, p = unit(2, 4), unit(2, 4, seed=1)
    for row in (0, 9):
        neg = unit(10, 4, seed=2) if shared else unit(2, 10, 4, seed=2)
        neg[..., row, :] *= 1.05  # beyond the tolerance 1e-2 (rows normalised in bfloat16 pass)
        with pytest.raises(ValueError, match=r"negatives must have unit-norm rows.*deviation \|norm - 1\| is 0.05"):
            info_nce(a, p, neg, 0.5, chunk_size=3)
        info_nce(a, p, neg, 0.5, chunk_size=3, require_unit_norm=False)  # accepted when asked
