"""A learned ``logit_scale`` far beyond CLIP's clamp, without value checks: every loss is a number
or inf (where the true value overflows float32), never NaN, and matches the float64 loss (finite
at these scales) wherever that is representable in float32; so do the gradients, wherever the
float64 gradient is representable.

``exp(95)`` overflows float32 before a logit is formed; the losses fold the scale up to a cap
(``_common.SCALE_CAPS``) and apply the rest to each row's centred log-sum-exp."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from infonce_book import losses as L

BIG = torch.finfo(torch.float32).max
SCALES = (46.0, 88.0, 95.0, 200.0)
B, D = 12, 16


def _labels() -> torch.Tensor:
    return torch.arange(B) % 5


PATHS = {
    "clip": lambda z1, z2, **k: L.info_nce_in_batch(z1, z2, **k),
    "clip-rows": lambda z1, z2, **k: L.info_nce_in_batch(z1, z2, symmetric=False, **k),
    "clip-tiled": lambda z1, z2, **k: L.info_nce_in_batch(z1, z2, chunk_size=5, **k),
    "clip-labels": lambda z1, z2, **k: L.info_nce_in_batch(z1, z2, labels=_labels(), **k),
    "clip-negatives": lambda z1, z2, **k: L.info_nce_in_batch(z1, z2, negatives=z1.roll(1, dims=1), **k),
    "nt_xent": lambda z1, z2, **k: L.nt_xent(z1, z2, **k),
    "nt_xent-tiled": lambda z1, z2, **k: L.nt_xent(z1, z2, chunk_size=5, **k),
    "nt_xent-labels": lambda z1, z2, **k: L.nt_xent(z1, z2, labels=_labels(), **k),
    # (negatives never equal to a positive: the explicit form scores the positive by a separate
    # product, so an exact tie between them is not one after rounding)
    "explicit-shared": lambda z1, z2, **k: L.info_nce(z1, z2, z2.roll(1, dims=1), **k),
    "explicit-per-anchor": lambda z1, z2, **k: L.info_nce(
        z1, z2, torch.stack([z2.roll(1, dims=1), z1.roll(2, dims=1)], 1), **k),
    "explicit-chunked": lambda z1, z2, **k: L.info_nce(
        z1, z2, torch.cat([z2.roll(1, dims=1), z1.roll(2, dims=1)]), chunk_size=5, **k),
    "supcon": lambda z1, z2, variant, **k: L.supcon(z1, z2, _labels(), **k),
}


def _mixed() -> tuple[torch.Tensor, torch.Tensor]:
    """Pairs of which some lead their rows, some do not, and some tie with a duplicate."""
    g = torch.Generator().manual_seed(0)
    a = F.normalize(torch.randn(B, D, generator=g), dim=-1)
    p = F.normalize(a + 0.3 * torch.randn(B, D, generator=g), dim=-1)
    p[3] = p[7]  # a candidate equal to a positive
    a[5], p[5] = a[9], p[9]  # a duplicated pair
    return a, p


def _aligned() -> tuple[torch.Tensor, torch.Tensor]:
    """Pairs whose positives lead every negative by a margin (loss 0 at a large scale), no ties."""
    g = torch.Generator().manual_seed(1)
    a = F.normalize(torch.randn(B, D, generator=g), dim=-1)
    return a, F.normalize(a + 0.01 * torch.randn(B, D, generator=g), dim=-1)


def _run(path, z1, z2, s, dtype, **kw):
    x1 = z1.detach().to(dtype).requires_grad_()
    x2 = z2.detach().to(dtype).requires_grad_()
    scale = torch.tensor(s, dtype=dtype, requires_grad=True)
    out = PATHS[path](x1, x2, logit_scale=scale, check_values=False, **kw)
    out.sum().backward()
    return out.detach(), x1.grad, x2.grad, scale.grad


def _check_value(got: torch.Tensor, ref: torch.Tensor, s: float) -> None:
    """``got`` (float32) against ``ref`` (float64, from the same float32 inputs): the float32 products
    of unit vectors are off by about ``d`` units of 6e-8, which the scale multiplies: that is the
    absolute tolerance."""
    assert not torch.isnan(got).any()
    ref32 = ref.abs() <= BIG * (1 - 1e-3)  # representable in float32 (with a margin for rounding)
    beyond = ref.abs() > BIG
    assert torch.isfinite(got[ref32]).all()
    atol = 1e-6 + min(math.exp(s) * D * 6e-8, 1e300)
    assert torch.allclose(got[ref32].double(), ref[ref32], rtol=1e-4, atol=atol)
    # inf only where the float64 value is beyond float32's range, and with its sign
    inf = torch.isinf(got)
    assert bool((~inf | beyond | ~ref32).all())
    assert torch.equal(torch.sign(got[inf & beyond]).double(), torch.sign(ref[inf & beyond]))


def _check_grad(got: torch.Tensor, ref: torch.Tensor) -> None:
    ok = ref.abs() <= BIG * (1 - 1e-3)
    assert torch.isfinite(got[ok]).all()
    scale = float(ref[ok].abs().max()) if ok.any() else 0.0
    assert torch.allclose(got[ok].double(), ref[ok], rtol=1e-3, atol=1e-5 * scale + 1e-12)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_values_never_nan_and_match_float64(path, variant, reduction):
    if path == "supcon" and variant == "decoupled":
        pytest.skip("SupCon has no variant")
    z1, z2 = _mixed()
    for s in SCALES:
        got = _run(path, z1, z2, s, torch.float32, variant=variant, reduction=reduction)
        ref = _run(path, z1, z2, s, torch.float64, variant=variant, reduction=reduction)
        _check_value(got[0], ref[0], s)
        assert not torch.isnan(got[3]), (path, s)  # the scale's gradient: a number or inf


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_gradients_finite_where_representable(path, variant):
    """At scales whose gradients are representable: 46 and 88 (where the cap is passed) for every
    form; 95 and 200 for the standard variant's rows that lead (loss and gradient exactly 0; the
    decoupled loss and SupCon's, whose positives do not lead, have gradients of order 1/tau,
    beyond float32 there)."""
    if path == "supcon" and variant == "decoupled":
        pytest.skip("SupCon has no variant")
    z1, z2 = _aligned()
    scales = SCALES if variant == "standard" and path != "supcon" else (46.0, 88.0)
    for s in scales:
        got = _run(path, z1, z2, s, torch.float32, variant=variant, reduction="mean")
        ref = _run(path, z1, z2, s, torch.float64, variant=variant, reduction="mean")
        _check_value(got[0], ref[0], s)
        for g, r in zip(got[1:3], ref[1:3]):
            # the premise: most of the gradient is representable (an input scored in two roles may
            # sum to more than float32's largest number at 88)
            assert float((r.abs() <= BIG).double().mean()) > 0.5, (path, s)
            _check_grad(g, r)
        _check_grad(got[3], ref[3])  # (the scale's: where representable)


def test_tied_rows_keep_their_loss_past_the_cap():
    """A row whose largest negative ties with its positive has loss log 2 at any scale."""
    z = F.normalize(torch.randn(4, 8, generator=torch.Generator().manual_seed(2)), dim=-1)
    z1, z2 = torch.cat([z, z[:1]]), torch.cat([z, z[:1]])  # the last pair duplicates the first
    for s in SCALES:
        rows = L.info_nce_in_batch(z1, z2, logit_scale=torch.tensor(s), symmetric=False, reduction="none",
                                   check_values=False)
        # rows 0 and 4: the positive and one equal negative, log(1 + 1); the others lead: 0
        expected = torch.tensor([2.0, 1.0, 1.0, 1.0, 2.0]).log()
        assert torch.allclose(rows, expected, atol=1e-6), (s, rows)


def test_module_learned_scale_past_the_cap():
    criterion = L.InBatchInfoNCELoss(learn_temperature=True, check_values=False)
    z1, z2 = _aligned()
    with torch.no_grad():
        criterion.logit_scale.fill_(200.0)
    loss = criterion(z1, z2)
    loss.backward()
    assert float(loss.detach()) == 0.0
    assert torch.isfinite(criterion.logit_scale.grad)


def test_checked_calls_still_raise_past_float32():
    z1, z2 = _aligned()
    with pytest.raises(OverflowError, match="logit_scale"):
        L.info_nce_in_batch(z1, z2, logit_scale=torch.tensor(95.0))


@pytest.fixture
def one_process_group(tmp_path):
    """A gloo group of this process alone: ``gather=True`` then scores the same candidates as the
    local paths, through the gather's autograd functions."""
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("this torch build has no torch.distributed")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'init'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


GATHERED = ("clip", "clip-rows", "clip-labels", "nt_xent", "nt_xent-labels")


@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_gathered_paths_past_the_cap(one_process_group, variant):
    """``gather=True``: values never NaN and as the float64 loss at every scale; gradients finite and
    right where representable (46 and 88, and the standard variant's leading rows at 95 and 200).
    Where the loss itself is -inf (decoupled, 95 and 200: the true value is beyond float32), an input
    scored in two roles gets gradients of opposite infinite signs, whose sum is not a number: that
    case is left out (the true gradient overflows float32 too). The mean only: the gathered forms
    score each positive by its own product, as the explicit forms do, so a row whose positive is
    duplicated among its candidates (``_mixed``) ties only up to rounding, which past the cap is
    +-inf where the local forms (one product for both) give the row's exact log(count)."""
    for path in GATHERED:
        for data in (_mixed, _aligned):
            z1, z2 = data()
            for s in SCALES:
                got = _run(path, z1, z2, s, torch.float32, variant=variant, gather=True)
                ref = _run(path, z1, z2, s, torch.float64, variant=variant)
                _check_value(got[0], ref[0], s)
                if data is _aligned and (variant == "standard" or s < 90):
                    for g, r in zip(got[1:], ref[1:]):
                        _check_grad(g, r)
