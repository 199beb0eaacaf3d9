"""The loss variants resolved in one place (:mod:`infonce_book.losses._variant`): each member's
methods against the formula ``log(c + sum_j e^{z_j})`` they stand for (``c = 1`` standard,
``c = 0`` decoupled), computed directly in float64."""

from __future__ import annotations

import pytest
import torch

from infonce_book.losses import VARIANTS
from infonce_book.losses._common import resolve_variant
from infonce_book.losses._logsumexp import LogSumExpState, RunningLogSumExp, lse_plain
from infonce_book.losses._variant import Variant

C = {"standard": 1.0, "decoupled": 0.0}


def _logits() -> torch.Tensor:
    z = torch.randn(5, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 3
    z[1, :3] = float("-inf")  # some negatives left out
    return z


def _direct(z: torch.Tensor, c: float) -> torch.Tensor:
    return torch.log(c + torch.exp(z).sum(dim=-1))


def test_every_public_variant_resolves_to_a_member():
    assert set(VARIANTS) == {v.value for v in Variant}
    for name in VARIANTS:
        assert resolve_variant(name) is Variant(name)
    with pytest.raises(ValueError, match="variant must be one of"):
        resolve_variant("other")


@pytest.mark.parametrize("name", VARIANTS)
def test_row_loss_and_its_derivative(name):
    v, c = Variant(name), C[name]
    z = _logits()
    r = torch.logsumexp(z, dim=-1).requires_grad_()
    loss = v.row_loss(r)
    assert torch.allclose(loss, _direct(z, c))
    (g,) = torch.autograd.grad(loss.sum(), r)
    assert torch.allclose(v.row_factor(r.detach(), torch.tensor(2.0, dtype=r.dtype)), 2 * g)
    fused = v.row_factor_fused(r.detach().unsqueeze(-1) if v.weighted_rows else None, torch.ones(5, 1, dtype=r.dtype),
                               2.0, torch.zeros((), dtype=r.dtype), 5)
    assert torch.allclose(fused.squeeze(-1), 2 * g)
    # the negatives' total weight: 1 minus the positive's e^{-lse} (standard), 1 (decoupled)
    assert torch.allclose(v.sum_of_weights(loss.detach()), torch.exp(z - loss.detach().unsqueeze(-1)).sum(-1))


@pytest.mark.parametrize("name", VARIANTS)
def test_log_sum_exps_built_from_the_variant(name):
    v, c = Variant(name), C[name]
    z = _logits()
    want = _direct(z, c)
    assert torch.allclose(lse_plain(z, None, v), want)
    running = RunningLogSumExp(v)
    state = LogSumExpState(v)
    for lo in range(0, 7, 3):
        running.update(z[:, lo:lo + 3])
        state.add(z[:, lo:lo + 3].clone())
    m, r = state.finish()
    assert torch.allclose(running.value(), want)
    assert torch.allclose(m + r, want)
