"""No finite or infinite true value comes out of the loss as NaN: a value beyond the range of the
accumulation dtype is an OverflowError (naming tau and the dtype), and gradients never form
``0 * inf``."""

import math

import pytest
import torch

from infonce_book.losses import info_nce, info_nce_from_similarities, info_nce_in_batch, info_nce_streaming, nt_xent

F32, F64 = torch.float32, torch.float64


def unit(*shape, seed, dtype=F32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=F64)
    return (x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)).to(dtype)


@pytest.mark.parametrize("chunk_size", [None, 1])
def test_issue_example_overflows_float32_clearly_and_is_exact_in_float64(chunk_size):
    # Issue: info_nce_from_similarities([0.6], [[0.8, 0.0]], 1e-40) gave nan (inf - inf). The true
    # value is log(1 + e^{0.2/1e-40} + e^{-0.6/1e-40}) = 0.2e40 = 2e39 (to 1e-16 relative),
    # beyond float32's largest number 3.4e38.
    s_pos, s_neg = torch.tensor([0.6]), torch.tensor([[0.8, 0.0]])
    with pytest.raises(OverflowError, match=r"tau=1e-40 .*torch\.float32.*accumulate=torch\.float64"):
        info_nce_from_similarities(s_pos, s_neg, 1e-40, chunk_size=chunk_size)
    got = info_nce_from_similarities(s_pos, s_neg, 1e-40, chunk_size=chunk_size, accumulate=F64)
    # (0.8 - 0.6) is formed from the float32 inputs: 0.800000011920929 - 0.600000023841858.
    want = (float(torch.tensor(0.8)) - float(torch.tensor(0.6))) / 1e-40
    assert got.item() == pytest.approx(want, rel=1e-15)
    assert got.item() == pytest.approx(2e39, rel=1e-7)


def test_streaming_form_of_the_issue_example_overflows_clearly():
    with pytest.raises(OverflowError, match="tau=1e-40"):
        info_nce_streaming(torch.tensor([0.6]), [torch.tensor([[0.8]]), torch.tensor([[0.0]])], 1e-40)
    got = info_nce_streaming(torch.tensor([0.6]), [torch.tensor([[0.8]]), torch.tensor([[0.0]])], 1e-40,
                             accumulate=F64)
    assert got.item() == pytest.approx(2e39, rel=1e-7)


@pytest.mark.parametrize("chunk_size", [None, 1])
def test_logits_beyond_the_dtype_are_an_overflow_error_not_nan(chunk_size):
    # 1/tau is representable (tau = 1), but (s_j - s+)/tau = 6e38 is not, in float32.
    with pytest.raises(OverflowError, match=r"overflows torch\.float32"):
        info_nce_from_similarities(torch.tensor([-3e38]), torch.tensor([[3e38, 0.0]]), 1.0, chunk_size=chunk_size)
    # Embeddings far off the sphere (the check switched off): the products overflow.
    big = torch.tensor([[3e19, 3e19]])
    with pytest.raises(OverflowError, match=r"overflows torch\.float32"):
        info_nce(big, -big, torch.tensor([[3e19, 3e19], [1.0, 0.0]]), 1.0, chunk_size=chunk_size,
                 require_unit_norm=False)


def test_decoupled_loss_below_the_dtype_is_an_overflow_error():
    # Decoupled loss log sum_j e^{z_j} with every z_j = -4e38 (beyond float32): the true value
    # is about -4e38, below float32's range.
    for chunk_size in (None, 1):
        with pytest.raises(OverflowError):
            info_nce_from_similarities(torch.tensor([1.0]), torch.tensor([[-1.0, -1.0]]), 5e-39,
                                       variant="decoupled", chunk_size=chunk_size)


@pytest.mark.parametrize("form", ["fused", "chunked", "streaming"])
def test_underflowed_negatives_give_exact_values_and_no_nan_in_any_gradient(form):
    # tau = 5e-39 in float32 (1/tau = 2e38 is representable): z = (s_j - s+)/tau is -4e38
    # (rounds to -inf) for the first negative and 0 for the second. Standard loss:
    # log(1 + e^{-4e38} + 1) = log 2; decoupled: log(e^{-4e38} + 1) = 0, even when the -inf
    # logit comes in a chunk of its own, first. Gradients: d/ds+ = -beta (1 - p+) = -1e38
    # (standard, p+ = 1/2) or -beta = -2e38 (decoupled); d/ds_j = beta p_j = (0, 1e38) or
    # (0, 2e38); d/dtau = -(1/tau) sum_j p_j z_j = 0 (p_1 = 0 meets z_1 = -inf: 0, not NaN).
    tau = 5e-39
    for variant, want, beta_p in (("standard", math.log(2.0), 0.5 / tau), ("decoupled", 0.0, 1.0 / tau)):
        s_pos = torch.tensor([1.0], requires_grad=True)
        s_neg = torch.tensor([[-1.0, 1.0]], requires_grad=True)
        t = torch.tensor(tau, requires_grad=True)
        if form == "streaming":
            loss = info_nce_streaming(s_pos, [s_neg[:, :1], s_neg[:, 1:]], t, variant=variant)
        else:
            loss = info_nce_from_similarities(s_pos, s_neg, t, variant=variant,
                                              chunk_size=None if form == "fused" else 1)
        assert loss.item() == pytest.approx(want, abs=1e-7)
        loss.backward()
        assert s_pos.grad.item() == pytest.approx(-beta_p, rel=1e-6)
        torch.testing.assert_close(s_neg.grad, torch.tensor([[0.0, beta_p]]), rtol=1e-6, atol=0)
        assert t.grad.item() == 0.0


def test_inverse_temperature_beyond_the_dtype_is_an_overflow_error_for_every_entry_point():
    a, p, n = unit(3, 4, seed=1), unit(3, 4, seed=2), unit(5, 4, seed=3)
    calls = [
        lambda t: info_nce(a, p, n, t),
        lambda t: info_nce(a, p, n, t, chunk_size=2),
        lambda t: info_nce_from_similarities((a * p).sum(-1), a @ n.T, t),
        lambda t: info_nce_streaming((a * p).sum(-1), [a @ n.T], t),
        lambda t: info_nce_in_batch(a, p, t, symmetric=True),
        lambda t: nt_xent(a, p, t),
    ]
    for call in calls:
        with pytest.raises(OverflowError, match=r"tau=1e-40 is too small for torch\.float32"):
            call(1e-40)
        assert torch.isfinite(call(1e-30))  # 1/tau = 1e30 is fine; losses of order 1e30


TAUS = [1e-45, 1e-40, 3e-39, 1e-38, 1e-36, 1e-30, 1e-20, 1e-8, 1e-3, 1.0, 1e3, 1e30]


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("tau", TAUS)
def test_loss_and_gradients_are_never_nan_for_any_tau(tau, dtype):
    # Every entry point, fused and chunked, both variants, a learnable tau, at temperatures from
    # far below float32's range to far above: the loss is finite and the gradients hold no NaN
    # (they may be infinite where the true gradient, of order 1/tau, overflows), or the call
    # raises OverflowError.
    a, p, n = unit(3, 4, seed=4, dtype=dtype), unit(3, 4, seed=5, dtype=dtype), unit(6, 4, seed=6, dtype=dtype)
    sp, sn = (a * p).sum(-1), a @ n.T
    for variant in ("standard", "decoupled"):
        calls = [
            lambda x, t: info_nce(x[0], x[1], x[2], t, variant=variant),
            lambda x, t: info_nce(x[0], x[1], x[2], t, variant=variant, chunk_size=4),
            lambda x, t: info_nce_from_similarities(x[3], x[4], t, variant=variant),
            lambda x, t: info_nce_from_similarities(x[3], x[4], t, variant=variant, chunk_size=4),
            lambda x, t: info_nce_streaming(x[3], torch.split(x[4], 4, dim=1), t, variant=variant),
            lambda x, t: info_nce_in_batch(x[0], x[1], t, symmetric=True, variant=variant),
            lambda x, t: nt_xent(x[0], x[1], t, variant=variant, chunk_size=4),
        ]
        for call in calls:
            leaves = [x.detach().clone().requires_grad_() for x in (a, p, n, sp, sn)]
            t = torch.tensor(tau, dtype=dtype, requires_grad=True)
            if t.item() == 0.0 or math.isinf(t.item()):
                continue  # tau itself not representable in this dtype (the tau checks refuse it)
            try:
                loss = call(leaves, t)
            except OverflowError:
                continue
            assert torch.isfinite(loss)
            loss.backward()
            for x in leaves + [t]:
                assert x.grad is None or not torch.isnan(x.grad).any()


@pytest.mark.parametrize("chunk_size", [None, 1])
def test_mean_of_rows_near_the_top_of_the_range_is_finite_and_their_sum_an_overflow_error(chunk_size):
    # Each row: log(1 + e^{z}) with z = (1e38 - (-1e38))/1 = 2e38, so the loss is 2e38 (float32's
    # largest number is 3.4e38). The mean of three such rows is 2e38; their sum, 6e38, overflows.
    s_pos, s_neg = torch.full((3,), -1e38), torch.full((3, 1), 1e38)
    mean = info_nce_from_similarities(s_pos, s_neg, 1.0, chunk_size=chunk_size)
    assert mean.item() == pytest.approx(2e38, rel=1e-6)
    with pytest.raises(OverflowError, match=r"overflows torch\.float32"):
        info_nce_from_similarities(s_pos, s_neg, 1.0, reduction="sum", chunk_size=chunk_size)
    # The same from embeddings: rows of beta (<a, n> - <a, p>) = 2 beta with beta = 1e38.
    a = torch.tensor([[1.0, 0.0]]).repeat(3, 1)
    mean = info_nce(a, -a, a[:1], 1e-38, chunk_size=chunk_size)
    assert mean.item() == pytest.approx(2e38, rel=1e-6)
