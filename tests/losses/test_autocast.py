"""Every entry point of the loss under torch.autocast gives the float32 result and gradients.

Reference: the same call on the same float32 inputs outside autocast (the loss switches autocast
off for itself, so the two must agree to float32 accuracy: within a few float32 ulps of the
largest entry, normwise)."""

import pytest
import torch

from infonce_book.losses import info_nce, info_nce_from_similarities, info_nce_in_batch, info_nce_streaming, nt_xent

EPS32 = torch.finfo(torch.float32).eps
AUTOCAST_DTYPES = [torch.bfloat16, torch.float16]


def unit(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)


def normwise(got, want):
    return float((got.double() - want.double()).abs().max() / want.double().abs().max().clamp_min(1e-30))


def run(fn, inputs):
    """Loss and gradients of ``fn(*inputs)`` (fresh leaves; the gradient of the sum with unequal
    row weights, so that a per-row error cannot cancel)."""
    leaves = [x.detach().clone().requires_grad_(x.requires_grad) for x in inputs]
    loss = fn(*leaves)
    weights = torch.arange(1.0, loss.numel() + 1.0).reshape(loss.shape)
    grads = torch.autograd.grad((loss * weights).sum(), [x for x in leaves if x.requires_grad])
    return loss.detach(), grads


def tau32(value=0.1):
    return torch.tensor(value, requires_grad=True)


def cases():
    """(name, fn, inputs): every entry point, fused and chunked, embeddings and similarities,
    a tensor tau (with gradient) everywhere."""
    a, p = unit(4, 8, seed=1).requires_grad_(), unit(4, 8, seed=2).requires_grad_()
    n_shared, n_paired = unit(10, 8, seed=3).requires_grad_(), unit(4, 10, 8, seed=4).requires_grad_()
    s_pos = (torch.rand(4, generator=torch.Generator().manual_seed(5)) * 2 - 1).requires_grad_()
    s_neg = (torch.rand(4, 10, generator=torch.Generator().manual_seed(6)) * 2 - 1).requires_grad_()
    out = []
    for chunk in (None, 4):
        for nm, n in (("shared", n_shared), ("paired", n_paired)):
            out.append((f"info_nce-{nm}-chunk{chunk}",
                        lambda a_, p_, n_, t_, c=chunk: info_nce(a_, p_, n_, t_, reduction="none", chunk_size=c),
                        (a, p, n, tau32())))
        out.append((f"info_nce_from_similarities-chunk{chunk}",
                    lambda sp, sn, t_, c=chunk: info_nce_from_similarities(sp, sn, t_, reduction="none", chunk_size=c),
                    (s_pos, s_neg, tau32(0.05))))
        for symmetric in (False, True):
            out.append((f"info_nce_in_batch-symmetric{symmetric}-chunk{chunk}",
                        lambda z1, z2, t_, c=chunk, s=symmetric: info_nce_in_batch(z1, z2, t_, symmetric=s,
                                                                                   reduction="none", chunk_size=c),
                        (a, p, tau32())))
        out.append((f"nt_xent-chunk{chunk}",
                    lambda z1, z2, t_, c=chunk: nt_xent(z1, z2, t_, reduction="none", chunk_size=c),
                    (a, p, tau32())))
    out.append(("info_nce_streaming",
                lambda sp, sn, t_: info_nce_streaming(sp, torch.split(sn, 3, dim=1), t_, reduction="none"),
                (s_pos, s_neg, tau32(0.05))))
    return out


CASES = cases()


@pytest.mark.parametrize("autocast_dtype", AUTOCAST_DTYPES)
@pytest.mark.parametrize("name, fn, inputs", CASES, ids=[c[0] for c in CASES])
def test_every_entry_point_under_autocast_gives_the_float32_loss_and_gradients(name, fn, inputs, autocast_dtype):
    want_loss, want_grads = run(fn, inputs)
    with torch.autocast("cpu", dtype=autocast_dtype):
        got_loss, got_grads = run(fn, inputs)
    assert got_loss.dtype == torch.float32
    assert normwise(got_loss, want_loss) <= 4 * EPS32
    assert len(got_grads) == len(want_grads)
    for g, w in zip(got_grads, want_grads):
        assert g.dtype == torch.float32 and g.shape == w.shape
        assert normwise(g, w) <= 4 * EPS32


@pytest.mark.parametrize("autocast_dtype", AUTOCAST_DTYPES)
def test_issue_example_under_autocast_gives_the_float32_values(autocast_dtype):
    # The issue's case: info_nce(a, p, n, 0.1, chunk_size=4) under autocast raised
    # "self and mat2 must have the same dtype". Reference: the float64 computation of the same
    # float32 inputs (a float32 result must be within float32 accuracy of it: eps32 (1 + 2/tau)).
    a, p, n = unit(4, 8, seed=10).requires_grad_(), unit(4, 8, seed=11), unit(10, 8, seed=12)
    with torch.autocast("cpu", dtype=autocast_dtype):
        loss = info_nce(a, p, n, 0.1, chunk_size=4)
        (grad,) = torch.autograd.grad(loss, a)  # backward inside the autocast region, too
    a64 = a.detach().double().requires_grad_()
    want = info_nce(a64, p.double(), n.double(), 0.1, chunk_size=4)
    (want_grad,) = torch.autograd.grad(want, a64)
    assert loss.dtype == torch.float32 and grad.dtype == torch.float32
    tol = 4 * EPS32 * (1 + 2 / 0.1)
    assert abs(loss.item() - want.item()) <= tol * abs(want.item())
    assert normwise(grad, want_grad) <= tol


def test_low_precision_embeddings_from_an_autocast_model_are_scored_in_float32():
    # Embeddings that come out of a layer run under autocast are bfloat16: the loss is the
    # float32 loss of those (rounded) embeddings, equal to the loss of their float32 copy.
    layer = torch.nn.Linear(6, 8)
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(20))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = torch.nn.functional.normalize(layer(x), dim=-1)
        assert z.dtype == torch.bfloat16
        loss = nt_xent(z, z.flip(0), 0.2)
    # The float32 copy of bfloat16 rows is off the sphere by more than float32's tolerance.
    want = nt_xent(z.detach().float(), z.detach().flip(0).float(), 0.2, require_unit_norm=False)
    assert loss.dtype == torch.float32
    assert abs(loss.item() - want.item()) <= 4 * EPS32 * abs(want.item())
    loss.backward()
    assert layer.weight.grad is not None and torch.isfinite(layer.weight.grad).all()
