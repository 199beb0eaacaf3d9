"""The InfoNCE loss on each device (the CPU always; CUDA when present, marker ``gpu``) in float64,
float32 and bfloat16 under ``torch.autocast``, against a float64 reference on the CPU.

The reference is independent of the package: explicit logits ``z = [s+, s_1..s_k] / tau`` from
the same (rounded) inputs upcast to float64, ``scipy.special.logsumexp`` for the loss, and plain
autograd through ``torch.logsumexp`` in float64 for the gradients. ``scripts/gpu_check.py`` runs
this file on the GPU machine; on a CPU machine the CUDA cases are skipped and the CPU ones run.
"""

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from infonce_book.losses import info_nce

has_cuda = torch.cuda.is_available()
DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not has_cuda,
                                                                                  reason="no CUDA GPU on this machine")])]
EPS32 = torch.finfo(torch.float32).eps  # 2^-23
EPS64 = torch.finfo(torch.float64).eps  # 2^-52
B, K, D = 48, 1500, 24
CHUNK = 256  # several chunks, so the running log-sum-exp and its rescaling are exercised


def _unit(generator, *shape):
    return torch.nn.functional.normalize(torch.randn(*shape, generator=generator, dtype=torch.float64), dim=-1)


def _inputs(seed, shared, dtype):
    g = torch.Generator().manual_seed(seed)
    a, p = _unit(g, B, D), _unit(g, B, D)
    n = _unit(g, K, D) if shared else _unit(g, B, K, D)
    return tuple(t.to(dtype) for t in (a, p, n))


def _reference_loss(a, p, n, tau, variant):
    """Per-anchor loss in float64 (numpy/scipy) from the given tensors upcast exactly to float64."""
    A, P, N = (t.detach().cpu().double().numpy() for t in (a, p, n))
    s_pos = (A * P).sum(-1)
    s_neg = A @ N.T if N.ndim == 2 else np.einsum("bd,bkd->bk", A, N)
    logits = s_neg if variant == "decoupled" else np.concatenate([s_pos[:, None], s_neg], axis=1)
    return logsumexp(logits / tau, axis=1) - s_pos / tau


def _reference_grads(a, p, n, tau, variant):
    """Mean-loss gradients in float64 on the CPU by autograd through explicit logits."""
    ref = [t.detach().cpu().double().requires_grad_() for t in (a, p, n)]
    ra, rp, rn = ref
    s_pos = (ra * rp).sum(-1)
    s_neg = ra @ rn.T if rn.dim() == 2 else torch.einsum("bd,bkd->bk", ra, rn)
    logits = s_neg if variant == "decoupled" else torch.cat([s_pos[:, None], s_neg], dim=1)
    (torch.logsumexp(logits / tau, dim=1) - s_pos / tau).mean().backward()
    return [r.grad for r in ref]


def _rel_err(got, want):
    got = got.detach().cpu().double()
    return float((got - want).norm() / want.norm())


def _loss_tol(dtype_eps, tau):
    # The documented float32 accuracy: about eps (1 + 2/tau) relative (losses.info_nce docstring;
    # the book's "Input validation and failure modes" page); a factor 4 for the constant.
    return 4 * dtype_eps * (1 + 2 / tau)


def _grad_tol(dtype_eps, tau):
    # Gradients (normwise) lose about eps sqrt(k) more at large k (same docstring).
    return _loss_tol(dtype_eps, tau) + dtype_eps * math.sqrt(K)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
@pytest.mark.parametrize("shared", [True, False], ids=["shared", "per-anchor"])
@pytest.mark.parametrize("tau", [0.07, 0.5])
def test_float64_on_the_device_matches_the_float64_reference(device, variant, shared, tau):
    a, p, n = _inputs(0, shared, torch.float64)
    want = _reference_loss(a, p, n, tau, variant)
    got = [t.to(device).requires_grad_() for t in (a, p, n)]
    loss = info_nce(*got, tau, variant=variant, reduction="none", chunk_size=CHUNK)
    assert loss.dtype == torch.float64 and loss.device.type == device
    # Recursive summation of k + 1 terms: at most about k eps64 relative, times the logit scale.
    tol = K * EPS64 * (1 + 2 / tau)
    np.testing.assert_allclose(loss.detach().cpu().numpy(), want, rtol=tol, atol=0)
    loss.mean().backward()
    for t, r in zip(got, _reference_grads(a, p, n, tau, variant)):
        assert t.grad.device.type == device and t.grad.dtype == torch.float64
        assert _rel_err(t.grad, r) <= tol


def _assert_float32_accurate(loss, got, inputs, want, tau):
    """The float32 loss and gradients of the device tensors ``got`` against the float64
    reference of the (rounded) CPU ``inputs``, within the documented float32 bounds."""
    a, p, n = inputs
    assert loss.dtype == torch.float32
    np.testing.assert_allclose(loss.detach().cpu().double().numpy(), want, rtol=_loss_tol(EPS32, tau), atol=0)
    loss.mean().backward()
    for t, r in zip(got, _reference_grads(a, p, n, tau, "standard")):
        assert t.grad.dtype == torch.float32
        assert _rel_err(t.grad, r) <= _grad_tol(EPS32, tau)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shared", [True, False], ids=["shared", "per-anchor"])
@pytest.mark.parametrize("tau", [0.07, 0.5])
def test_float32_on_the_device_is_within_the_documented_bound(device, shared, tau):
    a, p, n = _inputs(1, shared, torch.float32)  # the reference uses these rounded values
    want = _reference_loss(a, p, n, tau, "standard")
    got = [t.to(device).requires_grad_() for t in (a, p, n)]
    loss = info_nce(*got, tau, reduction="none", chunk_size=CHUNK)
    _assert_float32_accurate(loss, got, (a, p, n), want, tau)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shared", [True, False], ids=["shared", "per-anchor"])
@pytest.mark.parametrize("tau", [0.07, 0.5])
def test_under_bfloat16_autocast_the_loss_keeps_float32_accuracy(device, shared, tau):
    """Under ``torch.autocast(dtype=bfloat16)`` the loss runs in float32 (as autocast runs
    ``cross_entropy``): its matrix multiplies are not turned into bfloat16 ones, and a backward
    pass works (a chunked forward that accumulated bfloat16 products into float32 used to fail)."""
    a, p, n = _inputs(2, shared, torch.float32)
    want = _reference_loss(a, p, n, tau, "standard")
    got = [t.to(device).requires_grad_() for t in (a, p, n)]
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        loss = info_nce(*got, tau, reduction="none", chunk_size=CHUNK)
    _assert_float32_accurate(loss, got, (a, p, n), want, tau)


@pytest.mark.parametrize("device", DEVICES)
def test_bfloat16_embeddings_from_an_autocast_encoder_are_scored_in_float32(device):
    """The usual mixed-precision set-up: a linear encoder under autocast gives bfloat16 embeddings;
    the loss of those (rounded) embeddings matches the float64 reference to float32 accuracy, and
    the encoder's gradient arrives (the encoder's own bfloat16 arithmetic is not under test)."""
    tau = 0.2
    g = torch.Generator().manual_seed(3)
    x = torch.randn(B, 32, generator=g)
    x_pos = x + 0.1 * torch.randn(B, 32, generator=g)
    bank = torch.nn.functional.normalize(torch.randn(K, D, generator=g), dim=-1).to(device)
    enc = torch.nn.Linear(32, D).to(device)
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        a = torch.nn.functional.normalize(enc(x.to(device)), dim=-1)
        p = torch.nn.functional.normalize(enc(x_pos.to(device)), dim=-1)
        a_bf, p_bf = a.to(torch.bfloat16), p.to(torch.bfloat16)  # what a bfloat16 pipeline hands over
        loss = info_nce(a_bf, p_bf, bank, tau, reduction="none", chunk_size=CHUNK, require_unit_norm=False)
    assert loss.dtype == torch.float32
    want = _reference_loss(a_bf, p_bf, bank, tau, "standard")
    np.testing.assert_allclose(loss.detach().cpu().double().numpy(), want, rtol=_loss_tol(EPS32, tau), atol=0)
    loss.mean().backward()
    assert enc.weight.grad is not None and torch.isfinite(enc.weight.grad).all()
    assert float(enc.weight.grad.abs().max()) > 0
