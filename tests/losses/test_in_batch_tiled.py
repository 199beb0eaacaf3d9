"""The in-batch forms tiled (the logits streamed ``tile`` rows at a time, as Inf-CL does) against
the materialised form: values and first derivatives in the embeddings and a learnable temperature
equal to float64 rounding (declared tolerance: relative 1e-12, absolute 1e-12 times the largest
entry of the tensor compared: an entry that is a difference of larger terms), at every tile size,
with the tiling chosen by ``chunk_size`` or automatically above a logit count."""

import pytest
import torch

from infonce_book.losses import _pairwise, info_nce_in_batch, nt_xent

F64 = torch.float64
RTOL, ATOL = 1e-12, 1e-12


def assert_equal_to_rounding(got, want):
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL * float(want.abs().max()))


def unit(*shape, seed, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=F64)
    return (x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)).to(dtype)


def value_and_grads(fn, z1, z2, tau):
    xs = [x.detach().clone().requires_grad_() for x in (z1, z2, tau)]
    loss = fn(*xs)
    (loss * torch.arange(1.0, loss.numel() + 1.0, dtype=loss.dtype)).sum().backward()  # unequal weights
    return [loss.detach()] + [x.grad for x in xs]


FORMS = {
    "clip-symmetric": lambda z1, z2, t, **kw: info_nce_in_batch(z1, z2, t, symmetric=True, **kw),
    "clip-rows": lambda z1, z2, t, **kw: info_nce_in_batch(z1, z2, t, **kw, symmetric=False),
    "nt_xent": lambda z1, z2, t, **kw: nt_xent(z1, z2, t, **kw),
}


@pytest.mark.parametrize("tile", [1, 2, 3, 7, 11])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
@pytest.mark.parametrize("form", list(FORMS))
def test_tiled_values_and_gradients_equal_the_materialised_ones(form, variant, tile):
    B, d = 11, 6
    z1, z2, tau = unit(B, d, seed=1), unit(B, d, seed=2), torch.tensor(0.05, dtype=F64)
    fn = FORMS[form]
    want = value_and_grads(lambda a, b, t: fn(a, b, t, variant=variant, reduction="none"), z1, z2, tau)
    got = value_and_grads(lambda a, b, t: fn(a, b, t, variant=variant, reduction="none", chunk_size=tile),
                          z1, z2, tau)
    for g, w in zip(got, want):
        assert_equal_to_rounding(g, w)


@pytest.mark.parametrize("form", list(FORMS))
def test_tiling_is_chosen_above_the_logit_count_and_changes_nothing(form, monkeypatch):
    B, d = 16, 4
    z1, z2, tau = unit(B, d, seed=3), unit(B, d, seed=4), torch.tensor(0.1, dtype=F64)
    fn = FORMS[form]
    want = value_and_grads(lambda a, b, t: fn(a, b, t), z1, z2, tau)
    chosen = []
    real = _pairwise.pairwise_tile

    def spy(n, m, chunk_size):
        chosen.append(real(n, m, chunk_size))
        return chosen[-1]

    monkeypatch.setattr(_pairwise, "PAIRWISE_MAX_LOGITS", 100)
    monkeypatch.setattr(_pairwise, "TILE_LOGITS", 5 * 2 * B)  # 5 rows of the widest (NT-Xent's) logits
    monkeypatch.setattr("infonce_book.losses.in_batch.pairwise_tile", spy)
    got = value_and_grads(lambda a, b, t: fn(a, b, t), z1, z2, tau)
    assert chosen and all(1 <= t < (2 * B if form == "nt_xent" else B) for t in chosen)
    for g, w in zip(got, want):
        assert_equal_to_rounding(g, w)


def test_pairwise_tile_rule():
    assert _pairwise.pairwise_tile(1024, 1024, None) == 1024  # 2^20 logits: materialised
    n = 2 * 4096 * 2  # NT-Xent at B = 8192: 2^28 logits
    assert _pairwise.pairwise_tile(n, n, None) == _pairwise.TILE_LOGITS // n
    assert _pairwise.pairwise_tile(1024, 1024, 10) == 10
    assert _pairwise.pairwise_tile(10**7, 10**7, None) == 1  # at least one row


@pytest.mark.parametrize("tau", [0.01, 0.07])
def test_tiled_float32_keeps_the_materialised_accuracy_at_small_tau(tau):
    """float32, tau = 0.01 (logits up to 100: no overflow), against the float64 value."""
    B, d = 64, 16
    z1, z2 = unit(B, d, seed=5), unit(B, d, seed=6)
    exact = info_nce_in_batch(z1, z2, tau, symmetric=True, reduction="none")
    f1, f2 = z1.float(), z2.float()
    for chunk in (None, 5):
        got = info_nce_in_batch(f1, f2, tau, symmetric=True, reduction="none", chunk_size=chunk)
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got.double(), exact, rtol=2e-5, atol=0.0)
